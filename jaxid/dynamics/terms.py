"""Inverse and forward dynamics of any model that provides ``torque(theta, q, qd, qdd)``.

Every quantity is derived from the model's torque function: the mass matrix is its
Jacobian in qdd, the bias its value at qdd = 0, the Coriolis matrix the Christoffel
combination of the mass-matrix derivatives. For a ``Robot`` the torque includes the
enabled joint terms (friction, offset, rotor inertia); with none enabled these are the
textbook rigid-body quantities (Siciliano et al., *Robotics*, 2009, ch. 7).

Inputs are (n,) for one sample or (..., n) for a batch; outputs follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.arrays import is_traced
from jaxid.dynamics.batching import batched, bucketed_jit

if TYPE_CHECKING:
    from jaxid.model.robot import Robot


class TorqueModel(Protocol):
    """What the dynamics need of a model (``Robot``, ``models.Nonlinear6DOF``, a payload model):
    its parameter vector theta (p,) and its torque tau (n,), N m, at theta for one sample
    q, qd, qdd (n,); n its number of coordinates."""

    @property
    def n(self) -> int: ...

    def parameter_vector(self) -> jax.Array: ...

    def torque(self, theta: jax.Array, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array: ...


class NamedTorqueModel(TorqueModel, Protocol):
    """A ``TorqueModel`` that also names its parameters: ``parameter_names()``, p names in the
    order of theta (``Robot``, ``models.Nonlinear6DOF``)."""

    def parameter_names(self) -> tuple[str, ...]: ...


def _torque(model, q, qd, qdd):
    return model.torque(model.parameter_vector(), q, qd, qdd)


@bucketed_jit
def rnea(model: TorqueModel, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> jax.Array:
    """Inverse dynamics tau (..., n), N m, by recursive Newton-Euler (plus joint terms).

    q: joint positions (..., n) rad; qd: velocities rad/s; qdd: accelerations rad/s^2.
    """
    return batched(_torque, model, q, qd, qdd)


def _mass(model, q):
    # A model may assemble d tau / d qdd from its structure (Robot: the composite-rigid-body
    # algorithm); it must equal the plain Jacobian.
    structured = getattr(model, "mass_matrix", None)
    if structured is not None:
        return structured(model.parameter_vector(), q)
    zero = jnp.zeros_like(q)
    return jax.jacfwd(lambda qdd: _torque(model, q, zero, qdd))(zero)


@bucketed_jit
def mass_matrix(model: TorqueModel, q: ArrayLike) -> jax.Array:
    """Joint-space mass matrix M (..., n, n), kg m^2, as d tau / d qdd. q: (..., n) rad."""
    return batched(_mass, model, q)


def _gravity(model, q):
    zero = jnp.zeros_like(q)
    return _torque(model, q, zero, zero)


@bucketed_jit
def gravity_torques(model: TorqueModel, q: ArrayLike) -> jax.Array:
    """Torques at rest, g(q) (..., n), N m (including a constant offset if enabled)."""
    return batched(_gravity, model, q)


def _bias(model, q, qd):
    return _torque(model, q, qd, jnp.zeros_like(q))


@bucketed_jit
def bias_torques(model: TorqueModel, q: ArrayLike, qd: ArrayLike) -> jax.Array:
    """Torques at zero acceleration, C(q, qd) qd + g(q) + friction(qd), shape (..., n)."""
    return batched(_bias, model, q, qd)


def _coriolis(model, q, qd):
    # Christoffel symbols of the first kind: C_ij = sum_k 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i) qd_k
    dM = jax.jacfwd(lambda x: _mass(model, x))(q)  # dM[i, j, k] = dM_ij / dq_k
    return 0.5 * (jnp.einsum("ijk,k->ij", dM, qd) + jnp.einsum("ikj,k->ij", dM, qd) - jnp.einsum("jki,k->ij", dM, qd))


@bucketed_jit
def coriolis_matrix(model: TorqueModel, q: ArrayLike, qd: ArrayLike) -> jax.Array:
    """Coriolis matrix C (..., n, n) in Christoffel form, so that dM/dt - 2C is skew-symmetric."""
    return batched(_coriolis, model, q, qd)


def _spd_solve(M, b):
    """x = M^-1 b for a symmetric positive definite M (n, n), by Cholesky factorisation
    and two triangular solves written as short ``fori_loop``s: plain XLA arithmetic, no
    LAPACK call. jaxlib 0.10's batched CPU LAPACK kernels split their batch over the
    intra-op thread pool and block on it, which deadlocks when several run concurrently,
    as vmapped and forward-mode simulations make them do (fixed in jaxlib 0.11).
    A mass matrix that is not positive definite gives NaN."""
    n = M.shape[0]
    i = jnp.arange(n)

    def factor(j, c):  # outer-product Cholesky: column j of L, then the Schur update
        A, L = c
        col = jnp.where(i >= j, A[:, j] / jnp.sqrt(A[j, j]), 0.0)
        return A - jnp.outer(col, col), L.at[:, j].set(col)

    _, L = jax.lax.fori_loop(0, n, factor, (M, jnp.zeros_like(M)))
    y = jax.lax.fori_loop(0, n, lambda j, y: y.at[j].set((b[j] - L[j] @ y) / L[j, j]), jnp.zeros_like(b))
    return jax.lax.fori_loop(
        0,
        n,
        lambda k, x: x.at[n - 1 - k].set((y[n - 1 - k] - L[:, n - 1 - k] @ x) / L[n - 1 - k, n - 1 - k]),
        jnp.zeros_like(b),
    )


def _forward(model, q, qd, tau):
    return _spd_solve(_mass(model, q), tau - _bias(model, q, qd))


@bucketed_jit
def _forward_dynamics(model, q, qd, tau):
    return batched(_forward, model, q, qd, tau)


def forward_dynamics(model: TorqueModel, q: ArrayLike, qd: ArrayLike, tau: ArrayLike) -> jax.Array:
    """Joint accelerations qdd (..., n), rad/s^2, solving ``M qdd = tau - bias`` by Cholesky
    (LAPACK-free, see ``_spd_solve``).

    Raises:
        ValueError: (concrete inputs) finite q, qd, tau give a non-finite qdd: the mass matrix M
            is not positive definite there (a massless or singular model, e.g. a link with no mass
            and no inertia, or a model with placeholder zero inertials); the message names the
            sample and the joints with no inertia of their own. Under jit/vmap/grad no check is
            made (no Python on traced values): such a model then gives NaN, which the caller can
            test with ``jnp.isfinite``.
    """
    qdd = _forward_dynamics(model, q, qd, tau)
    if not is_traced(qdd, q, qd, tau) and not np.all(np.isfinite(np.asarray(qdd))):
        _raise_singular(model, q, qd, tau, np.asarray(qdd))
    return qdd


def _raise_singular(model, q, qd, tau, qdd):
    """The ValueError of ``forward_dynamics`` for a non-finite qdd (..., n) from finite inputs."""
    q, qd, tau = (np.broadcast_to(np.asarray(x, dtype=float), qdd.shape) for x in (q, qd, tau))
    inputs_ok = np.isfinite(q) & np.isfinite(qd) & np.isfinite(tau)
    bad = np.argwhere(~np.isfinite(qdd) & inputs_ok.all(axis=-1, keepdims=True))
    if not bad.size:
        return  # NaN in, NaN out: the inputs' problem, not the model's
    k = tuple(int(i) for i in bad[0][:-1])
    M = np.asarray(_mass_jit(model, jnp.asarray(q[k])))
    names = getattr(model, "coordinate_names", None) or [f"joint {j + 1}" for j in range(M.shape[0])]
    zero = [str(names[j]) for j in np.flatnonzero(np.diag(M) <= 0)]
    where = f" at sample {k}" if k else ""
    raise ValueError(
        f"forward_dynamics: the mass matrix is not positive definite{where} (a massless or singular model"
        + (f": no inertia moves with {zero}" if zero else "")
        + "), so the accelerations are undefined; give every link a mass and inertia (or the motor's rotor "
        "inertia, joint term 'ia')"
    )


_mass_jit = eqx.filter_jit(_mass)


@eqx.filter_jit
def simulate(
    model: TorqueModel,
    torque_fn: Callable[[jax.Array, jax.Array, jax.Array], jax.Array],
    q0: ArrayLike,
    qd0: ArrayLike,
    t: ArrayLike,
    substeps: int = 1,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Integrate the model under a torque law with fixed-step RK4 (``lax.scan``).

    torque_fn: ``tau = torque_fn(t, q, qd)``, N m, shape (n,); t: sample times (N,), s;
    q0, qd0: initial state (n,). Each interval is split into ``substeps`` RK4 steps.
    Returns q, qd, qdd, tau, each (N, n), at the sample times.
    """
    t = jnp.asarray(t, dtype=float)

    def accel(ti, q, qd):
        return _forward(model, q, qd, torque_fn(ti, q, qd))

    def rk4(state, ti, h):
        q, qd = state
        k1q, k1v = qd, accel(ti, q, qd)
        k2q, k2v = qd + 0.5 * h * k1v, accel(ti + 0.5 * h, q + 0.5 * h * k1q, qd + 0.5 * h * k1v)
        k3q, k3v = qd + 0.5 * h * k2v, accel(ti + 0.5 * h, q + 0.5 * h * k2q, qd + 0.5 * h * k2v)
        k4q, k4v = qd + h * k3v, accel(ti + h, q + h * k3q, qd + h * k3v)
        return (q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q), qd + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))

    def step(state, interval):
        t0, t1 = interval
        h = (t1 - t0) / substeps
        state = jax.lax.fori_loop(0, substeps, lambda k, s: rk4(s, t0 + k * h, h), state)
        return state, state

    q0, qd0 = jnp.asarray(q0, dtype=float), jnp.asarray(qd0, dtype=float)
    _, (q, qd) = jax.lax.scan(step, (q0, qd0), (t[:-1], t[1:]))
    q, qd = jnp.concatenate([q0[None], q]), jnp.concatenate([qd0[None], qd])
    tau = jax.vmap(torque_fn)(t, q, qd)
    qdd = jax.vmap(lambda a, b, c: _forward(model, a, b, c))(q, qd, tau)
    return q, qd, qdd, tau


@eqx.filter_jit  # eagerly, the jacfwd mass matrix is hundreds of separately compiled ops
def kinetic_energy(model: TorqueModel, q: jax.Array, qd: jax.Array) -> jax.Array:
    """Kinetic energy 1/2 qd^T M(q) qd, J. q, qd: (n,)."""
    return 0.5 * qd @ _mass(model, q) @ qd


@eqx.filter_jit
def potential_energy(robot: Robot, q: ArrayLike) -> jax.Array:
    """Gravitational potential energy of a ``Robot``, -sum_i m_i g . c_i, J. q: (n,)."""
    from jaxid.dynamics.rnea import forward_kinematics

    poses = forward_kinematics(robot, q)
    h = jnp.einsum("nij,nj->ni", poses[:, :3, :3], robot.inertial[:, 1:4])
    mc = h + robot.inertial[:, :1] * poses[:, :3, 3]
    return -jnp.sum(mc @ robot.gravity)
