"""The direction of gravity in the robot's base frame, identified from torque data.

A robot mounted on a base that is not level (a floor, a cart or a table a degree or two off)
feels gravity along a direction other than the model's ``Robot.gravity``. The rigid-body
torques are then not those of any physical body under the model's gravity: least squares
absorbs part of the error into the inertial parameters and a physically consistent fit
cannot (on the KUKA LWR4+ runs of ``examples/data/kuka_lwr4``, a tilt of 1.4 degrees
fitted on two runs lowers the held-out error of the third by 8-10 %). Estimating the base
orientation with the dynamic parameters is part of the calibration of a robot's model
(Hollerbach, Khalil and Gautier, "Model identification", Springer Handbook of Robotics,
2nd ed., 2016, ch. 6).

The regressor is linear in the gravity vector g at given (q, qd, qdd): the RNEA is linear
in the base acceleration, which carries gravity, so ``Y(g) = Y(0) + sum_a g_a G_a`` with
``G_a = Y(q, 0, 0; e_a) - Y(q, 0, 0; 0)``. For each g the base parameters are eliminated
(variable projection, Golub and Pereyra, SIAM J. Numer. Anal. 10(2), 1973) by Gautier's
two-step weighted least squares, and the direction is chosen to minimise the Gaussian
negative log-likelihood with one noise variance per joint, ``sum_j log ||e_j||^2``. Each
evaluation works on per-joint Gram matrices of ``[Y(0), G_x, G_y, G_z, tau]`` formed once,
so its cost does not grow with the samples. The magnitude |g| stays the model's: only the
direction (two angles) is identified.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

__all__ = ["GravityFit", "fit_gravity", "gravity_regressors"]


@dataclasses.dataclass(frozen=True)
class GravityFit:
    """Result of [`fit_gravity`][jaxid.identification.gravity.fit_gravity].

    Attributes:
        gravity: the identified gravity vector in the base frame (3,), m/s^2, of the model's
            magnitude.
        tilt_deg: the angle between it and the model's gravity, degrees.
        cost: the negative log-likelihood ``sum_j N log(||e_j||^2 / N)`` at the optimum.
        cost_nominal: the same at the model's gravity (the improvement is
            ``cost_nominal - cost``, a log-likelihood ratio with 2 degrees of freedom).
        converged: the optimiser met its tolerance.
    """

    gravity: np.ndarray
    tilt_deg: float
    cost: float
    cost_nominal: float
    converged: bool


def gravity_regressors(robot, q, qd, qdd, columns=None):
    """(Y0, G): the regressor at zero gravity (N, n, c) and its derivative with respect to
    each gravity component (3, N, n, c), so that the regressor of the robot under gravity g
    (3,) m/s^2 is ``Y0 + einsum('a,a...->...', g, G)``.

    q, qd, qdd: (N, n) rad, rad/s, rad/s^2. columns: indices of the regressor columns to keep
    (e.g. ``base.indices``), default all p.
    """
    from jaxid.identification.regressor import regressor

    keep = (lambda Y: Y) if columns is None else (lambda Y: Y[..., np.asarray(columns)])
    at = lambda g, *x: keep(np.asarray(regressor(dataclasses.replace(robot, gravity=jnp.asarray(g, dtype=float)), *x)))
    zero = np.zeros_like(np.asarray(q, dtype=float))
    static = at(np.zeros(3), q, zero, zero)  # the joint terms that do not vanish at rest (offsets)
    G = np.stack([at(e, q, zero, zero) - static for e in np.eye(3)])
    return at(np.zeros(3), q, qd, qdd), G


def _directions(g0):
    """Unit gravity direction of the model and an orthonormal pair (u, v) across it."""
    d = g0 / np.linalg.norm(g0)
    u = np.cross(d, np.eye(3)[np.argmin(np.abs(d))])
    u /= np.linalg.norm(u)
    return d, u, np.cross(d, u)


@jax.jit
def _nll(a, S, P, d, u, v, scale, N):
    """Two-step-WLS negative log-likelihood at the tilt a (2,) (gravity along d + a1 u + a2 v),
    from the per-joint Grams S (n, c+3k+1, c+3k+1) of [Y0, G_x, G_y, G_z, tau], G restricted to
    its k columns that gravity reaches (P (k, c) selects them)."""
    g = scale * (d + a[0] * u + a[1] * v) / jnp.sqrt(1.0 + a @ a)
    c = P.shape[1]
    E = jnp.concatenate([jnp.eye(c), g[0] * P, g[1] * P, g[2] * P, jnp.zeros((1, c))])
    t = jnp.zeros(S.shape[-1]).at[-1].set(1.0)
    AtA = jnp.einsum("xi,nxy,yk->nik", E, S, E)
    Atb = jnp.einsum("xi,nxy,y->ni", E, S, t)
    tt = S[:, -1, -1]

    def rss(theta):
        return jnp.einsum("i,nik,k->n", theta, AtA, theta) - 2 * Atb @ theta + tt

    def solve(w):  # column-scaled normal equations: the regressor's columns span decades
        M, b = jnp.einsum("n,nik->ik", w, AtA), w @ Atb
        s = jnp.sqrt(jnp.maximum(jnp.diag(M), 1e-300))
        return jnp.linalg.solve(M / jnp.outer(s, s), b / s) / s

    var = jnp.maximum(rss(solve(jnp.ones_like(tt))), 1e-300)
    return jnp.sum(N * jnp.log(jnp.maximum(rss(solve(1.0 / var)), 1e-300) / N))


@functools.partial(jax.jit, static_argnames=("rtol",))
def _minimise(S, P, d, u, v, scale, N, rtol):
    """The tilt (2,) minimising `_nll` by BFGS from level, and whether it converged (one
    compiled program per Gram size)."""
    sol = optx.minimise(
        lambda a, _: _nll(a, S, P, d, u, v, scale, N),
        optx.BFGS(rtol=rtol, atol=1e-12),
        jnp.zeros(2),
        max_steps=200,
        throw=False,
    )
    return sol.value, sol.result == optx.RESULTS.successful


def fit_gravity(robot, q, qd, qdd, tau, *, base=None, rtol: float = 1e-10) -> GravityFit:
    """The direction of gravity in the base frame that best explains the torques, with the
    base parameters (and joint terms) eliminated by two-step WLS (module docstring).

    robot: the model (its ``gravity`` gives the magnitude and the starting direction).
    q, qd, qdd: (N, n) rad, rad/s, rad/s^2; tau: (N, n) N m (runs stacked: the fit is per
    sample). base: ``jaxid.base_parameters(robot)`` (default): the columns fitted. rtol: the
    optimiser's tolerance on the tilt.

    Returns [`GravityFit`][jaxid.identification.gravity.GravityFit] (use ``dataclasses.replace(robot, gravity=fit.gravity)``).
    Needs motion that moves the links' weight around (gravity torques that change with q);
    the data must identify the base parameters. Raises ValueError on bad shapes or values.
    """
    from jaxid.identification.base import base_parameters

    n = robot.n
    arrays = [np.asarray(x, dtype=float) for x in (q, qd, qdd, tau)]
    for name, x in zip(("q", "qd", "qdd", "tau"), arrays):
        if x.ndim != 2 or x.shape != (arrays[0].shape[0], n):
            raise ValueError(f"{name} must have shape (N, {n}) like q, got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf; remove or repair those samples")
    g0 = np.asarray(robot.gravity, dtype=float)
    if not np.linalg.norm(g0) > 0:
        raise ValueError("the model has no gravity (Robot.gravity = 0): there is no direction to identify")
    base = base_parameters(robot) if base is None else base
    Y0, G = gravity_regressors(robot, arrays[0], arrays[1], arrays[2], columns=base.indices)
    N = arrays[0].shape[0]
    # Gravity reaches only the mass and first-moment columns: the Grams need no others.
    reached = np.flatnonzero(np.any(G != 0, axis=(0, 1, 2)))
    Z = np.concatenate([Y0, *G[..., reached], arrays[3][..., None]], axis=-1)  # (N, n, c + 3k + 1)
    S = jnp.asarray(np.stack([Z[:, j].T @ Z[:, j] for j in range(n)]))
    P = np.eye(Y0.shape[-1])[reached]
    d, u, v = _directions(g0)
    args = (S, P, d, u, v, float(np.linalg.norm(g0)), float(N))
    a, ok = _minimise(*args, rtol=float(rtol))
    a = np.asarray(a)
    g = np.linalg.norm(g0) * (d + a[0] * u + a[1] * v) / np.sqrt(1.0 + a @ a)
    return GravityFit(
        gravity=g,
        tilt_deg=float(np.degrees(np.arctan(np.linalg.norm(a)))),
        cost=float(_nll(jnp.asarray(a), *args)),
        cost_nominal=float(_nll(jnp.zeros(2), *args)),
        converged=bool(ok),
    )
