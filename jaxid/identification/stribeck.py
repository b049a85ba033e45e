"""The Stribeck velocity of ``Robot``'s ``fs`` joint term, identified by separable least squares.

The friction model and its regressor column are ``jaxid.friction.models`` (``stribeck_column``);
this is the identification of its one nonlinear parameter, the velocity scale vs.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.arrays import Numeric
from jaxid.friction.models import stribeck_column
from jaxid.identification.base import TOL
from jaxid.identification.lugre import golden_section
from jaxid.identification.regressor import regressor

if TYPE_CHECKING:
    from jaxid.model.robot import Robot


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
