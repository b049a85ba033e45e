"""Inertial parameters of one rigid body.

The 10-vector ``pi = [m, m*cx, m*cy, m*cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` is
expressed in a body-fixed frame, with the rotational inertia taken about that
frame's origin (Pinocchio's ``Inertia.toDynamicParameters`` order). It is the
parametrisation in which rigid-body torques are linear (Atkeson, An and
Hollerbach, 1986).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.arrays import AnyArray, Numeric, is_traced, namespace
from jaxid.dynamics.spatial import inertia_matrix, motion_transform, skew  # noqa: F401 (inertia_matrix: part of this module's API)

INERTIAL_NAMES = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


def spatial_inertia(pi: AnyArray) -> jax.Array:
    """6x6 spatial inertia ``[[I_O, skew(h)], [skew(h)^T, m 1]]`` from pi (10,), h = m c."""
    h = pi[1:4]
    H = skew(h)
    top = jnp.concatenate([inertia_matrix(pi), H], axis=1)
    bottom = jnp.concatenate([H.T, pi[0] * jnp.eye(3)], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


def from_spatial(I6: AnyArray) -> jax.Array:
    """Inverse of [`spatial_inertia`][jaxid.model.inertia.spatial_inertia]: 6x6 spatial inertia -> pi (10,)."""
    I = I6[:3, :3]
    H = I6[:3, 3:]
    h = jnp.array([H[2, 1], H[0, 2], H[1, 0]])
    return jnp.concatenate([I6[3:4, 3], h, jnp.array([I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])])


def transform(pi: AnyArray, T: ArrayLike) -> AnyArray:
    """Express pi, given in frame B, in frame A, where T (4, 4) is B's pose in A.

    Linear in pi, the spatial ``I_A = X^T I_B X`` (X the motion transform A -> B) written out:
    with R, p the rotation and origin of B in A and h = m c, ``h_A = R h + m p`` and
    ``I_A = R I_B R^T + (2 p.(R h) + m p.p) 1 - (R h) p^T - p (R h)^T - m p p^T`` (the parallel
    axis theorem for a density). numpy for concrete arguments (reading a model file), jax.numpy
    for traced ones.
    """
    xp = namespace(pi, T)
    P: Any = xp.asarray(pi, dtype=float)
    A: Any = xp.asarray(T, dtype=float)
    R, p, m = A[:3, :3], A[:3, 3], P[0]
    Rh = R @ P[1:4]
    I_B = inertia_matrix(P)
    I_A = (
        R @ I_B @ R.T
        + (2.0 * (p @ Rh) + m * (p @ p)) * xp.eye(3)
        - xp.outer(Rh, p)
        - xp.outer(p, Rh)
        - m * xp.outer(p, p)
    )
    return xp.concatenate([P[:1], Rh + m * p, _entries(I_A, xp)])


def _entries(I: Any, xp: Any) -> Any:
    """[Ixx, Ixy, Iyy, Ixz, Iyz, Izz] (6,) of I (3, 3) in the namespace xp."""
    return xp.stack([I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])


def from_mass_com_inertia(m: Numeric, c: ArrayLike, I_c: ArrayLike) -> AnyArray:
    """pi (10,) from mass m (kg), centre of mass c (3,) m and inertia I_c (3, 3) about c; numpy
    for concrete arguments, jax.numpy for traced ones."""
    xp = namespace(m, c, I_c)
    C: Any = xp.asarray(c, dtype=float)
    I_o = xp.asarray(I_c, dtype=float) + m * ((C @ C) * xp.eye(3) - xp.outer(C, C))
    return xp.concatenate([xp.reshape(xp.asarray(m, dtype=float), (1,)), m * C, _entries(I_o, xp)])


#: Tolerance of [`physical_problem`][jaxid.model.inertia.physical_problem]: relative to the largest principal moment, plus an
#: absolute kg m^2 floor. URDF and data-sheet inertias are rounded to a few digits, a thin rod
#: or disc sits exactly on the triangle inequality's boundary, and exporters write "zero"
#: inertias as +-1e-20.
PHYSICAL_RTOL = 1e-6
PHYSICAL_ATOL = 1e-12


def physical_problem(m: float, I_c: ArrayLike, rtol: float = PHYSICAL_RTOL) -> str | None:
    """Why mass m (kg) and inertia I_c (3, 3) kg m^2 about the centre of mass are not a rigid
    body, or None when they are: m finite and >= 0 (m = 0 only with I_c = 0: a massless
    link), I_c finite and symmetric, its principal moments I1 <= I2 <= I3 >= 0 and
    I1 + I2 >= I3 (the triangle inequality of a positive mass density), each up to ``rtol``
    times I3 plus ``PHYSICAL_ATOL``. Plain numpy, for model construction (Traversaro et al. 2016, "Identification
    of fully physical consistent inertial parameters using optimization on manifolds")."""
    m, I_c = float(m), np.asarray(I_c, dtype=float)
    if not np.isfinite(m):
        return f"mass {m} is not finite"
    if m < 0:
        return f"negative mass {m:g} kg"
    if I_c.shape != (3, 3) or not np.all(np.isfinite(I_c)):
        return f"inertia must be a finite 3x3 matrix, got {I_c.tolist()}"
    scale = np.abs(I_c).max()
    if np.abs(I_c - I_c.T).max() > rtol * scale:
        return f"inertia is not symmetric: {I_c.tolist()}"
    if m == 0:
        return None if scale == 0 else f"zero mass with a non-zero inertia (ixx iyy izz = {np.diag(I_c).tolist()})"
    e = np.linalg.eigvalsh(0.5 * (I_c + I_c.T))
    tol = rtol * max(e[-1], 0.0) + PHYSICAL_ATOL
    if e[0] < -tol:
        return f"inertia is not positive semi-definite (principal moments {e.tolist()} kg m^2)"
    if e[0] + e[1] < e[2] - tol:
        return (
            f"principal moments {e.tolist()} kg m^2 violate the triangle inequality "
            "I1 + I2 >= I3 (no mass distribution has them)"
        )
    return None


def to_mass_com_inertia(pi: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(m, c (3,), I_c (3, 3) about the centre of mass) from pi; requires m > 0."""
    m = pi[0]
    c = pi[1:4] / m
    I_c = inertia_matrix(pi) - m * (jnp.dot(c, c) * jnp.eye(3) - jnp.outer(c, c))
    return m, c, I_c


def pseudo_inertia(pi: AnyArray) -> jax.Array:
    """4x4 pseudo-inertia ``J = [[Sigma, h], [h^T, m]]``, Sigma = tr(I)/2 1 - I.

    pi is physically consistent iff J is positive definite (Wensing, Kim and
    Slotine, 2017): it is then the second moment of a positive mass density.
    """
    return _pseudo(jnp.asarray(pi), jnp)


def _pseudo(pi: Any, xp: Any) -> Any:  # xp: numpy or jax.numpy, whose arrays it returns
    """J (..., 4, 4) of pi (..., 10), in the array namespace xp (numpy or jax.numpy)."""
    m, hx, hy, hz, ixx, ixy, iyy, ixz, iyz, izz = (pi[..., k] for k in range(10))
    s = 0.5 * (ixx + iyy + izz)  # tr(I) / 2
    rows = ((s - ixx, -ixy, -ixz, hx), (-ixy, s - iyy, -iyz, hy), (-ixz, -iyz, s - izz, hz), (hx, hy, hz, m))
    return xp.stack([xp.stack(r, axis=-1) for r in rows], axis=-2)


def from_pseudo_inertia(J: AnyArray) -> jax.Array:
    """Inverse of [`pseudo_inertia`][jaxid.model.inertia.pseudo_inertia]."""
    Sigma = J[:3, :3]
    I = jnp.trace(Sigma) * jnp.eye(3) - Sigma
    return jnp.concatenate([J[3:4, 3], J[:3, 3], jnp.array([I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2]])])


def pseudo_inertias(pi: ArrayLike) -> AnyArray:
    """[`pseudo_inertia`][jaxid.model.inertia.pseudo_inertia] of standard parameters (..., 10): (..., 4, 4).
    A concrete pi is computed with numpy on the host (a numpy array: no program to compile for a
    few dozen numbers, the workflow's verdicts), a traced one with jax.numpy."""
    if is_traced(pi):
        return _pseudo(jnp.asarray(pi), jnp)
    return _pseudo(np.asarray(pi, dtype=float), np)


@jax.jit
def from_pseudo_inertias(J: ArrayLike) -> jax.Array:
    """[`from_pseudo_inertia`][jaxid.model.inertia.from_pseudo_inertia] of pseudo-inertias (..., 4, 4): (..., 10)."""
    return jnp.vectorize(from_pseudo_inertia, signature="(a,a)->(k)")(jnp.asarray(J))


def is_consistent(pi: ArrayLike, tol: float = 0.0) -> AnyArray:
    """True where the pseudo-inertia of pi (..., 10) is positive definite (min eigenvalue > tol):
    numpy on the host for a concrete pi (as `pseudo_inertias`), jax.numpy for a traced one."""
    xp = jnp if is_traced(pi, tol) else np
    return xp.linalg.eigvalsh(pseudo_inertias(pi))[..., 0] > tol


def log_cholesky_to_inertial(z: AnyArray) -> jax.Array:
    """Log-Cholesky parametrisation (Rucker and Wensing, 2022): z (10,) -> pi (10,).

    ``J = U U^T`` with U upper triangular, ``U = [[e^a, s12, s13, t1], [0, e^d2, s23, t2],
    [0, 0, e^d3, t3], [0, 0, 0, 1]] * e^alpha``: every z gives a physically
    consistent body and every consistent body has exactly one z.
    z = [alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3].
    """
    U = log_cholesky_factor(z)
    return from_pseudo_inertia(U @ U.T)


def log_cholesky_factor(z: AnyArray) -> jax.Array:
    """The upper-triangular factor U (4, 4), ``J = U U^T``, of log-Cholesky z (10,)."""
    alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3 = (z[i] for i in range(10))
    return jnp.array(
        [
            [jnp.exp(d1), s12, s13, t1],
            [0.0, jnp.exp(d2), s23, t2],
            [0.0, 0.0, jnp.exp(d3), t3],
            [0.0, 0.0, 0.0, 1.0],
        ]
    ) * jnp.exp(alpha)


def inertial_to_log_cholesky(pi: AnyArray) -> jax.Array:
    """Inverse of [`log_cholesky_to_inertial`][jaxid.model.inertia.log_cholesky_to_inertial]; pi must be physically consistent."""
    J = pseudo_inertia(pi)
    # Upper-triangular factor J = U U^T from the Cholesky factor of the index-reversed matrix.
    P = jnp.eye(4)[::-1]
    L = jnp.linalg.cholesky(P @ J @ P)
    U = P @ L @ P
    alpha = jnp.log(U[3, 3])
    U = U / U[3, 3]
    return jnp.array(
        [
            alpha,
            jnp.log(U[0, 0]),
            jnp.log(U[1, 1]),
            jnp.log(U[2, 2]),
            U[0, 1],
            U[1, 2],
            U[0, 2],
            U[0, 3],
            U[1, 3],
            U[2, 3],
        ]
    )


def box_inertia(m: float, size: AnyArray | tuple[float, float, float]) -> AnyArray:
    """Rotational inertia (3, 3) about the centre of a uniform box of mass m, size (3,) m."""
    x, y, z = size
    xp = namespace(m, x, y, z)
    return m / 12.0 * xp.diag(xp.stack([y * y + z * z, x * x + z * z, x * x + y * y]))


def cylinder_inertia(m: float, radius: float, length: float, axis: int = 2) -> AnyArray:
    """Rotational inertia (3, 3) about the centre of a uniform solid cylinder along ``axis``."""
    radial = m * (3.0 * radius**2 + length**2) / 12.0
    d = [radial, radial, radial]
    d[axis] = 0.5 * m * radius**2
    xp = namespace(m, radius, length)
    return xp.diag(xp.stack(d))


batch_transform = jax.vmap(transform)
