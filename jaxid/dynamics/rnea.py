"""Recursive Newton-Euler inverse dynamics, written in the base frame.

The classic two-pass RNEA (Luh, Walker and Paul, 1980; Featherstone 2008, ch. 5)
is reorganised so that, after forward kinematics, every step acts on all links at
once: in the base frame the spatial velocity of link i is the sum of the joint
twists of its ancestors, ``v = A (S qd)``, and the transmitted forces are the
subtree sums ``F = A^T f`` (A the ancestor matrix). A few wide batched operations
instead of many 3-vector ones is what makes ``jax.jacfwd`` of this function fast.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxid.dynamics import spatial
from jaxid.model import inertia


def ancestors(parents) -> np.ndarray:
    """A (n, n) with A[i, j] = 1 when link j is link i or one of its ancestors."""
    n = len(parents)
    A = np.zeros((n, n))
    for i in range(n):
        j = i
        while j >= 0:
            A[i, j] = 1.0
            j = parents[j]
    return A


def forward_kinematics(robot, q):
    """Poses of the n joint (link) frames in the base frame, shape (n, 4, 4). q: (n,)."""
    revolute = jnp.array([t == "R" for t in robot.joint_types])

    def motion(axis, qi, is_rev):
        R = jnp.where(is_rev, spatial.axis_angle(axis, qi), jnp.eye(3))
        p = jnp.where(is_rev, 0.0, qi) * axis
        return spatial.homogeneous(R, p)

    local = robot.placements @ jax.vmap(motion)(robot.axes, q, revolute)
    poses = []
    for i, parent in enumerate(robot.parents):
        poses.append(local[i] if parent < 0 else poses[parent] @ local[i])
    return jnp.stack(poses)


def joint_twists(robot, poses):
    """Unit joint twists S (n, 6) in the base frame, ``[omega; v at the base origin]``."""
    z = jnp.einsum("nij,nj->ni", poses[:, :3, :3], robot.axes)
    p = poses[:, :3, 3]
    revolute = jnp.array([[t == "R"] for t in robot.joint_types])
    return jnp.where(revolute, jnp.concatenate([z, jnp.cross(p, z)], axis=1),
                     jnp.concatenate([jnp.zeros_like(z), z], axis=1))


def kinematics(robot, q, qd, qdd):
    """Poses (n, 4, 4), twists S (n, 6), link velocities v (n, 6) and accelerations a (n, 6).

    Velocities and accelerations are spatial vectors in the base frame; gravity enters
    as a fictitious upward acceleration of the base.
    """
    A = jnp.asarray(ancestors(robot.parents))
    poses = forward_kinematics(robot, q)
    S = joint_twists(robot, poses)
    v = A @ (S * qd[:, None])
    # dS_i/dt = v_i x S_i: the axis is fixed in the moving link.
    Sdot = jax.vmap(spatial.cross_motion)(v, S)
    a0 = jnp.concatenate([jnp.zeros(3), -robot.gravity])
    a = A @ (S * qdd[:, None] + Sdot * qd[:, None]) + a0
    return poses, S, v, a


def link_wrenches(inertial, poses, v, a):
    """Net spatial force of each link in the base frame, f = I a + v x* I v, shape (n, 6).

    Velocities are moved to the link frames, where the inertias are constant, and the
    forces back (force transform = transpose of the motion transform).
    """
    X = jax.vmap(spatial.motion_transform)(poses)
    I = jax.vmap(inertia.spatial_inertia)(inertial)
    vl = jnp.einsum("nij,nj->ni", X, v)
    al = jnp.einsum("nij,nj->ni", X, a)
    f = jnp.einsum("nij,nj->ni", I, al) + jax.vmap(spatial.cross_force)(vl, jnp.einsum("nij,nj->ni", I, vl))
    return jnp.einsum("nji,nj->ni", X, f)


def rnea_inertial(robot, inertial, q, qd, qdd):
    """Rigid-body joint torques (n,) of one sample for inertial parameters (n, 10).

    q, qd, qdd: shape (n,), rad, rad/s, rad/s^2 (m, m/s, m/s^2 for prismatic joints).
    Returns N m (N for prismatic joints).
    """
    poses, S, v, a = kinematics(robot, q, qd, qdd)
    f = link_wrenches(inertial, poses, v, a)
    F = jnp.asarray(ancestors(robot.parents)).T @ f
    return jnp.sum(S * F, axis=1)
