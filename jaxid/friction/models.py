"""Static joint friction models and the linear-in-parameter joint basis of ``Robot``.

Static (memoryless) friction maps the joint velocity qd to a torque. The models follow
Olsson, Astrom, Canudas de Wit, Gafvert & Lischinsky, "Friction models and friction
compensation", Eur. J. Control 4(3), 1998 (Sec. 2) and Armstrong-Helouvry, Dupont &
Canudas de Wit, "A survey of models, analysis tools and compensation methods for the
control of machines with friction", Automatica 30(7), 1994:

    viscous     tau = fv qd
    Coulomb     tau = fc sgn(qd)
    Stribeck    tau = (fc + (fs - fc) exp(-|qd / vs|^delta)) sgn(qd)
    asymmetric  tau = fc_pos + fv_pos qd   (qd > 0),   -fc_neg + fv_neg qd   (qd < 0)

sgn is replaced by the smooth sign ``tanh(qd / eps)`` (eps a small velocity, rad/s) so that
torques, regressors and their derivatives are continuous at qd = 0. Units are those of a
revolute joint (N m, rad/s); for a prismatic joint read N and m/s.

``JOINT_BASIS`` is the one table of per-joint terms that ``Robot`` uses: its regressor columns
(``Robot.joint_torque`` is ``sum_k theta_k column_k``), the order of those columns and the
parameter names (``fv1``, ``fs2``, ...) all come from it. The table holds terms linear in
their parameter only:

- ``fs``, the Stribeck excess fs - fc, multiplies ``tanh(qd/eps) exp(-(qd/vs)^2)``: the
  Stribeck model with delta = 2 is ``fc * [fc column] + (fs - fc) * [fs column]``. The model
  is nonlinear in the Stribeck velocity vs, but linear in fc and fs - fc once vs is fixed;
  so vs is a static scale of the model (``Robot.stribeck_vs``, like ``coulomb_eps``), and is
  identified by separable least squares (:func:`fit_stribeck_velocity`: for each vs the
  linear parameters are eliminated, Golub & Pereyra 1973).
- ``fva``, the asymmetric viscous term, multiplies ``qd tanh(qd/eps)`` (~ |qd|): with
  ``fv`` the viscous coefficients are fv_pos = fv + fva and fv_neg = fv - fva.
- asymmetric Coulomb friction needs no column of its own: with the smooth sign s,
  ``fc_pos (1 + s)/2 - fc_neg (1 - s)/2 = (fc_pos + fc_neg)/2 s + (fc_pos - fc_neg)/2``, the
  ``fc`` column plus a constant, i.e. the ``offset`` term. So ``fc`` is the mean Coulomb level
  and ``offset`` the Coulomb asymmetry, indistinguishable from a torque-sensor bias (both
  are constants). :func:`asymmetric_terms` and :func:`asymmetric_from_terms` convert.
- ``ks``, a joint stiffness, multiplies q: the elastic torque ``ks (q - q_rest)`` of cables,
  hoses or a balancing spring acting across the joint, whose constant part ``-ks q_rest``
  goes into ``offset``. On a trajectory with one frequency per joint, ``q = -qdd / w^2`` and
  a stiffness looks like a negative inertia ``-ks / w^2``, which predicts the wrong torque at
  any other speed: on the KUKA LWR4+ runs (``examples/data/kuka_lwr4``, ``benchmarks/
  kuka_stiffness.py``) joint 7 has ks = 0.21-0.25 N m/rad at both speeds, and without it
  two-step WLS on one run gives Izz7 = -0.19 to -0.21 kg m^2 and a negative viscous fv7.
  Not friction, but a joint term of the same kind (linear in its value, local to the joint).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.arrays import Numeric

if TYPE_CHECKING:
    from jaxid.model.robot import Robot


def smooth_sign(qd: Numeric, eps: Numeric) -> jax.Array:
    """Smooth sign ``tanh(qd / eps)`` of qd (...,) rad/s; eps > 0, rad/s. Dimensionless."""
    return jnp.tanh(qd / eps)


def stribeck_column(qd: Numeric, vs: Numeric, eps: Numeric) -> jax.Array:
    """Shape of the Stribeck excess, ``tanh(qd/eps) exp(-(qd/vs)^2)`` (...,), dimensionless.

    qd: joint velocity (...,) rad/s. vs: Stribeck velocity, rad/s (> 0, may be traced).
    eps: smooth-sign scale, rad/s. The Gaussian decay is the delta = 2 shape of
    Armstrong-Helouvry (1994) and Olsson et al. (1998), eq. (5).
    """
    return smooth_sign(qd, eps) * jnp.exp(-((qd / vs) ** 2))


def viscous(qd: Numeric, fv: Numeric) -> Numeric:
    """Viscous friction ``fv qd`` (...,) N m. qd: rad/s; fv: N m s/rad (Olsson et al. 1998)."""
    return fv * qd


def coulomb(qd: Numeric, fc: Numeric, eps: Numeric = 1e-3) -> jax.Array:
    """Coulomb friction ``fc tanh(qd / eps)`` (...,) N m, a smooth ``fc sgn(qd)``.

    qd: rad/s; fc: Coulomb level, N m; eps: smooth-sign scale, rad/s (Olsson et al. 1998).
    """
    return smooth_sign(qd, eps) * fc


def stribeck(
    qd: Numeric, fc: Numeric, fs: Numeric, vs: Numeric, delta: Numeric = 2.0, eps: Numeric = 1e-3
) -> jax.Array:
    """Stribeck friction ``(fc + (fs - fc) exp(-|qd/vs|^delta)) tanh(qd/eps)`` (...,) N m.

    qd: rad/s. fc: Coulomb (sliding) level, N m. fs: static (breakaway) level, N m.
    vs: Stribeck velocity, rad/s. delta: shape exponent (2: Gaussian, 1: Tustin).
    eps: smooth-sign scale, rad/s. Olsson et al. (1998), eq. (5); Armstrong-Helouvry (1994).
    Add :func:`viscous` for the full static curve.
    """
    level = jnp.exp(-(jnp.abs(qd / vs) ** delta)) * (fs - fc) + fc
    return smooth_sign(qd, eps) * level


def asymmetric(
    qd: Numeric, fc_pos: Numeric, fc_neg: Numeric, fv_pos: Numeric, fv_neg: Numeric, eps: Numeric = 1e-3
) -> jax.Array:
    """Direction-dependent Coulomb + viscous friction (...,) N m.

    ``fc_pos + fv_pos qd`` for qd > 0 and ``-fc_neg + fv_neg qd`` for qd < 0, blended by
    the smooth sign s = tanh(qd/eps) with weights (1 + s)/2, (1 - s)/2 (Olsson et al. 1998,
    Sec. 2: friction "may also depend on the direction of motion").
    qd: rad/s. fc_pos, fc_neg: Coulomb levels (magnitudes) for positive and negative motion,
    N m. fv_pos, fv_neg: viscous coefficients, N m s/rad. eps: smooth-sign scale, rad/s.
    """
    s = smooth_sign(qd, eps)
    return (1 + s) / 2 * (fc_pos + fv_pos * qd) + (1 - s) / 2 * (fv_neg * qd - fc_neg)


def asymmetric_terms(fc_pos: Numeric, fc_neg: Numeric, fv_pos: Numeric, fv_neg: Numeric) -> dict[str, Numeric]:
    """Joint-term values ``{"fv", "fva", "fc", "offset"}`` that reproduce :func:`asymmetric`
    exactly: fv = (fv_pos + fv_neg)/2, fva = (fv_pos - fv_neg)/2, fc = (fc_pos + fc_neg)/2,
    offset = (fc_pos - fc_neg)/2 (units as the arguments)."""
    return {
        "fv": (fv_pos + fv_neg) / 2,
        "fva": (fv_pos - fv_neg) / 2,
        "fc": (fc_pos + fc_neg) / 2,
        "offset": (fc_pos - fc_neg) / 2,
    }


def asymmetric_from_terms(fv: Numeric, fva: Numeric, fc: Numeric, offset: Numeric) -> dict[str, Numeric]:
    """Inverse of :func:`asymmetric_terms`: ``{"fc_pos", "fc_neg", "fv_pos", "fv_neg"}``.

    An identified ``offset`` also holds any torque-sensor bias; only with the bias known
    (e.g. measured at rest) is the Coulomb asymmetry ``offset - bias``.
    """
    return {"fc_pos": fc + offset, "fc_neg": fc - offset, "fv_pos": fv + fva, "fv_neg": fv - fva}


class JointTerm(NamedTuple):
    """A per-joint term: torque = value * column(q, qd, qdd, eps, vs)."""

    unit: str
    meaning: str
    column: Callable[..., jax.Array]


#: The per-joint terms of ``Robot``, in the order of their regressor columns.
#: column(q, qd, qdd, eps, vs): torque per unit of the term's value, from the joint position q
#: (rad), velocity qd (rad/s), acceleration qdd (rad/s^2), smooth-sign scale eps and Stribeck
#: velocity vs (rad/s).
JOINT_BASIS = {
    "ia": JointTerm("kg m^2", "rotor (armature) inertia", lambda q, qd, qdd, eps, vs: qdd),
    "fv": JointTerm("N m s/rad", "viscous friction", lambda q, qd, qdd, eps, vs: qd),
    "fc": JointTerm(
        "N m", "Coulomb friction (mean of both directions)", lambda q, qd, qdd, eps, vs: smooth_sign(qd, eps)
    ),
    "fs": JointTerm(
        "N m", "Stribeck excess static friction fs - fc", lambda q, qd, qdd, eps, vs: stribeck_column(qd, vs, eps)
    ),
    "fva": JointTerm(
        "N m s/rad",
        "asymmetric viscous friction (fv_pos - fv_neg)/2",
        lambda q, qd, qdd, eps, vs: qd * smooth_sign(qd, eps),
    ),
    "offset": JointTerm(
        "N m",
        "torque offset: sensor bias + Coulomb asymmetry (fc_pos - fc_neg)/2",
        lambda q, qd, qdd, eps, vs: jnp.ones_like(qd),
    ),
    "ks": JointTerm(
        "N m/rad",
        "joint stiffness: elastic torque of cables, hoses or springs, ks (q - q_rest)",
        lambda q, qd, qdd, eps, vs: q,
    ),
}
JOINT_TERMS = tuple(JOINT_BASIS)


def joint_basis(
    terms: Sequence[str], q: ArrayLike | None, qd: ArrayLike, qdd: ArrayLike | None, eps: Numeric, vs: Numeric
) -> jax.Array:
    """Columns of the per-joint terms ``terms`` (a sequence of ``JOINT_TERMS`` names).

    q, qd, qdd: (..., n) rad, rad/s, rad/s^2 (q and qdd may be None when no term uses them).
    eps, vs: smooth-sign scale and Stribeck velocity, rad/s. Returns shape (..., n, len(terms));
    a joint's torque is ``columns @ values``.
    """
    qd = jnp.asarray(qd)
    if not terms:
        return jnp.zeros(qd.shape + (0,), qd.dtype)
    return jnp.stack([JOINT_BASIS[t].column(q, qd, qdd, eps, vs) for t in terms], axis=-1)


# ------------------------------------------------------------------ Stribeck velocity
def _stribeck_cost(U: jax.Array, qd: jax.Array, tau: jax.Array, eps: Numeric, log_vs: jax.Array) -> jax.Array:
    """Least-squares residual ||tau - W(vs) theta||^2 with the linear theta eliminated:
    U (M, r) spans the vs-independent columns, qd (N, n), tau (M,) = (N*n,)."""
    project = lambda X: X - U @ (U.T @ X)
    N, n = qd.shape
    col = stribeck_column(qd, jnp.exp(log_vs), eps)
    # Joint j's fs column acts on joint j's rows of the sample-major stack only.
    F = project((col[:, :, None] * jnp.eye(n)).reshape(N * n, n))
    t = project(tau)
    r = t - F @ jnp.linalg.lstsq(F, t)[0]
    return r @ r


@partial(jax.jit, static_argnames=("n_iter",))
def _fit_log_vs(
    A0: jax.Array, qd: jax.Array, tau: jax.Array, eps: Numeric, log_lo: float, log_hi: float, n_iter: int
) -> jax.Array:
    from jaxid.identification.base import TOL
    from jaxid.identification.lugre import golden_section

    # Orthonormal basis of the range of A0 (columns normalised), zero beyond its numerical
    # rank: the rigid-body columns have structural dependencies.
    norms = jnp.linalg.norm(A0, axis=0)
    U, s, _ = jnp.linalg.svd(A0 / jnp.where(norms > 0, norms, 1.0), full_matrices=False)
    U = U * (s > TOL * s[0])
    return golden_section(lambda lv: _stribeck_cost(U, qd, tau, eps, lv), log_lo, log_hi, n_iter)


def fit_stribeck_velocity(
    robot: Robot,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    tau: ArrayLike,
    lo: float = 1e-3,
    hi: float = 1.0,
    n_iter: int = 40,
) -> float:
    """Stribeck velocity vs (rad/s) of a robot with the ``fs`` term, by separable least squares.

    For a fixed vs the torque is linear in all other parameters (Robot's regressor), so the
    residual of the linear least-squares fit is a function of vs alone (variable projection,
    Golub & Pereyra, SIAM J. Numer. Anal. 10(2), 1973). It is minimised over log vs in
    [lo, hi] by golden-section search (``jaxid.identification.lugre.golden_section``). The
    vs-independent columns (rigid body and the other joint terms) are factored once; each
    evaluation only projects the n Stribeck columns.

    robot: ``Robot`` with "fs" among its ``joint_terms`` (one vs shared by all joints, as
        ``Robot.stribeck_vs``). q, qd, qdd: (N, n) rad, rad/s, rad/s^2. tau: (N, n) N m.
    lo, hi: search bracket, rad/s, 0 < lo < hi. n_iter: golden-section iterations (the
        bracket in log vs shrinks by 0.618 each).
    Returns vs, rad/s (use ``dataclasses.replace(robot, stribeck_vs=vs)``). The data must
    pass slowly through zero velocity: samples with |qd| of the order of vs carry all the
    information on vs.
    """
    from jaxid.identification.regressor import regressor

    if "fs" not in getattr(robot, "joint_terms", ()):
        raise ValueError(
            "fit_stribeck_velocity needs a Robot with the Stribeck term: robot.with_joint_terms((..., 'fs', ...))"
        )
    n = robot.n
    arrays = {}
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd), ("tau", tau)):
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != n or x.shape[0] != np.shape(q)[0]:
            raise ValueError(f"{name} must have shape (N, {n}) like q, got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf; remove or repair those samples")
        arrays[name] = x
    if not (0 < lo < hi and np.isfinite(hi)):
        raise ValueError(f"need 0 < lo < hi (rad/s), got lo={lo}, hi={hi}")
    if not np.any(np.abs(arrays["qd"]) < 3 * hi):
        raise ValueError(
            f"no sample has |qd| below 3 hi = {3 * hi:g} rad/s, where the Stribeck effect "
            "shows; record motion that passes slowly through zero velocity"
        )
    names = robot.parameter_names()
    fs = [names.index(f"fs{j + 1}") for j in range(n)]
    Y = regressor(robot, arrays["q"], arrays["qd"], arrays["qdd"])
    A0 = Y.reshape(-1, Y.shape[-1])[:, np.setdiff1d(np.arange(len(names)), fs)]
    log_vs = _fit_log_vs(
        A0, arrays["qd"], arrays["tau"].reshape(-1), robot.coulomb_eps, np.log(lo), np.log(hi), int(n_iter)
    )
    return float(np.exp(log_vs))
