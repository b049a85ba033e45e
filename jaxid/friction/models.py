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
  identified by separable least squares (``jaxid.identification.stribeck.fit_stribeck_velocity``: for each vs the
  linear parameters are eliminated, Golub & Pereyra 1973).
- ``fva``, the asymmetric viscous term, multiplies ``qd tanh(qd/eps)`` (~ |qd|): with
  ``fv`` the viscous coefficients are fv_pos = fv + fva and fv_neg = fv - fva.
- asymmetric Coulomb friction needs no column of its own: with the smooth sign s,
  ``fc_pos (1 + s)/2 - fc_neg (1 - s)/2 = (fc_pos + fc_neg)/2 s + (fc_pos - fc_neg)/2``, the
  ``fc`` column plus a constant, i.e. the ``offset`` term. So ``fc`` is the mean Coulomb level
  and ``offset`` the Coulomb asymmetry, indistinguishable from a torque-sensor bias (both
  are constants). [`asymmetric_terms`][jaxid.friction.models.asymmetric_terms] and
  [`asymmetric_from_terms`][jaxid.friction.models.asymmetric_from_terms] convert.
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
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxid.arrays import Numeric


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
    Add [`viscous`][jaxid.friction.models.viscous] for the full static curve.
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
    """Joint-term values ``{"fv", "fva", "fc", "offset"}`` that reproduce [`asymmetric`][jaxid.friction.models.asymmetric]
    exactly: fv = (fv_pos + fv_neg)/2, fva = (fv_pos - fv_neg)/2, fc = (fc_pos + fc_neg)/2,
    offset = (fc_pos - fc_neg)/2 (units as the arguments)."""
    return {
        "fv": (fv_pos + fv_neg) / 2,
        "fva": (fv_pos - fv_neg) / 2,
        "fc": (fc_pos + fc_neg) / 2,
        "offset": (fc_pos - fc_neg) / 2,
    }


def asymmetric_from_terms(fv: Numeric, fva: Numeric, fc: Numeric, offset: Numeric) -> dict[str, Numeric]:
    """Inverse of [`asymmetric_terms`][jaxid.friction.models.asymmetric_terms]: ``{"fc_pos", "fc_neg", "fv_pos", "fv_neg"}``.

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
