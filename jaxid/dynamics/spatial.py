"""Rotations, homogeneous transforms and spatial (6-D) vector algebra.

Spatial vectors follow Featherstone, *Rigid Body Dynamics Algorithms* (2008):
motion vectors are ``[omega; v]`` (angular first), force vectors ``[n; f]``.
All functions act on one item; batch them with ``jax.vmap``. The rotations and transforms
(``skew``, ``axis_angle``, ``rpy``, ``homogeneous``) compute concrete arguments with numpy
(a model read from a file: no program compiled per element) and traced ones with jax.numpy.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxid.arrays import namespace


def skew(v):
    """Cross-product matrix: ``skew(a) @ b == cross(a, b)``. v: shape (3,)."""
    xp = namespace(v)
    x, y, z = v[0], v[1], v[2]
    zero = xp.zeros_like(x)
    return xp.stack(
        [
            xp.stack([zero, -z, y]),
            xp.stack([z, zero, -x]),
            xp.stack([-y, x, zero]),
        ]
    )


def axis_angle(axis, angle):
    """Rotation matrix (3, 3) about a unit ``axis`` (3,) by ``angle`` rad (Rodrigues)."""
    xp = namespace(axis, angle)
    K = skew(xp.asarray(axis, dtype=float))
    return xp.eye(3) + xp.sin(angle) * K + (1.0 - xp.cos(angle)) * (K @ K)


def rot_x(a):
    return axis_angle(np.array([1.0, 0.0, 0.0]), a)


def rot_z(a):
    return axis_angle(np.array([0.0, 0.0, 1.0]), a)


def rpy(roll, pitch, yaw):
    """URDF fixed-axis roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    return (
        axis_angle(np.array([0.0, 0.0, 1.0]), yaw)
        @ axis_angle(np.array([0.0, 1.0, 0.0]), pitch)
        @ axis_angle(np.array([1.0, 0.0, 0.0]), roll)
    )


def homogeneous(R, p):
    """4x4 homogeneous transform from rotation R (3, 3) and translation p (3,)."""
    xp = namespace(R, p)
    top = xp.concatenate([xp.asarray(R, dtype=float), xp.reshape(xp.asarray(p, dtype=float), (3, 1))], axis=1)
    return xp.concatenate([top, xp.asarray([[0.0, 0.0, 0.0, 1.0]])], axis=0)


def translation(p):
    return homogeneous(np.eye(3), p)


def motion_transform(T):
    """6x6 motion transform from frame A to frame B, where T (4, 4) is B's pose in A.

    Maps a motion vector expressed in A (at A's origin) to B (at B's origin):
    ``omega_B = R^T omega_A``, ``v_B = R^T (v_A - p x omega_A)``.
    The force transform from B back to A is its transpose.
    """
    R, p = T[:3, :3], T[:3, 3]
    Rt = R.T
    top = jnp.concatenate([Rt, jnp.zeros((3, 3))], axis=1)
    bottom = jnp.concatenate([-Rt @ skew(p), Rt], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


def cross_motion(v, m):
    """Spatial cross product for motion vectors, ``v x m`` (Featherstone's crm)."""
    w, u = v[:3], v[3:]
    return jnp.concatenate([jnp.cross(w, m[:3]), jnp.cross(w, m[3:]) + jnp.cross(u, m[:3])])


def cross_force(v, f):
    """Spatial cross product for force vectors, ``v x* f`` (Featherstone's crf)."""
    w, u = v[:3], v[3:]
    return jnp.concatenate([jnp.cross(w, f[:3]) + jnp.cross(u, f[3:]), jnp.cross(w, f[3:])])


def inertia_matrix(pi):
    """Symmetric 3x3 rotational inertia about the frame origin from a link's inertial
    parameters pi (..., 10) ``[m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` (kg m^2):
    (..., 3, 3), numpy for a concrete pi, jax.numpy for a traced one."""
    xp = namespace(pi)
    pi = xp.asarray(pi)
    xx, xy, yy, xz, yz, zz = (pi[..., k] for k in range(4, 10))
    row = lambda *v: xp.stack(v, axis=-1)
    return xp.stack([row(xx, xy, xz), row(xy, yy, yz), row(xz, yz, zz)], axis=-2)
