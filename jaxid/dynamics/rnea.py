"""Recursive Newton-Euler inverse dynamics, reorganised into wide batched operations.

The classic two-pass RNEA (Luh, Walker and Paul, 1980; Featherstone 2008, ch. 5) is
rewritten so that, after forward kinematics, every step acts on all links at once:
in the base frame the spatial velocity of link i is the sum of its ancestors' joint
twists, ``v = A (S qd)`` (A the ancestor matrix), and the torque of joint j is the
power of its twist against the net forces of the links it carries,
``tau_j = sum_{i carried by j} (X_i S_j) . f_i``, with ``f_i`` the net wrench of link i
in its own frame (where its inertia is constant) and ``X_i S_j`` joint j's twist seen
from link i. That last form is also what makes the regressor cheap: ``f_i`` is
linear in link i's 10 parameters alone, so ``jax.jacfwd`` runs 10 tangents per link
instead of 10 n tangents through the whole robot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.dynamics import spatial

if TYPE_CHECKING:
    from jaxid.model.robot import Robot


def ancestors(parents: Sequence[int]) -> np.ndarray:
    """A (n, n) with A[i, j] = 1 when link j is link i or one of its ancestors."""
    n = len(parents)
    A = np.zeros((n, n))
    for i in range(n):
        j = i
        while j >= 0:
            A[i, j] = 1.0
            j = parents[j]
    return A


@eqx.filter_jit  # one program per model and shape, not one per jnp operation on concrete values
def forward_kinematics_rp(robot, q):
    """World rotations R (n_joints, 3, 3) and origins p (n_joints, 3) of the joint (link)
    frames at coordinates q (n,) rad or m (coupled joints follow their masters).

    The placement is folded into Rodrigues' formula, ``P Rot(axis, q) = P + sin q (P K)
    + (1 - cos q)(P K^2)``, so that per sample a joint costs scalar-times-matrix
    updates rather than a matrix product (K the axis' cross-product matrix).
    """
    q, _, _ = robot.joint_motion(q, q, q)
    return _frames(robot, q)


def _frames(robot, q):
    """``forward_kinematics_rp`` at joint positions q (n_joints,)."""
    PR, Pp = robot.placements[:, :3, :3], robot.placements[:, :3, 3]
    K = jax.vmap(spatial.skew)(robot.axes)
    PK, PK2 = PR @ K, PR @ K @ K
    prismatic_step = jnp.einsum("nij,nj->ni", PR, robot.axes)
    E, r = [], []
    for i, kind in enumerate(robot.joint_types):
        if kind == "R":
            E.append(PR[i] + jnp.sin(q[i]) * PK[i] + (1.0 - jnp.cos(q[i])) * PK2[i])
            r.append(Pp[i])
        else:
            E.append(PR[i])
            r.append(Pp[i] + prismatic_step[i] * q[i])
    R, p = _compose(robot.parents, E, r)
    return jnp.stack(R), jnp.stack(p)


def _compose(parents, E, r):
    """World rotations and origins (lists of (3, 3), (3,)) of the link frames from each joint's
    pose (E[i], r[i]) in its parent's frame, composed outward over the static tree."""
    R, p = [None] * len(parents), [None] * len(parents)
    for i, k in enumerate(parents):
        R[i], p[i] = (E[i], r[i]) if k < 0 else (R[k] @ E[i], p[k] + R[k] @ r[i])
    return R, p


def forward_kinematics(robot: Robot, q: ArrayLike) -> jax.Array:
    """Poses of the joint (link) frames in the base frame, shape (n_joints, 4, 4). q: (n,) rad."""
    R, p = forward_kinematics_rp(robot, q)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0]), (robot.n_joints, 1, 4))
    return jnp.concatenate([jnp.concatenate([R, p[:, :, None]], axis=2), bottom], axis=1)


def joint_twists(robot, R, p):
    """Unit joint twists S (n, 6) in the base frame, ``[omega; v at the base origin]``."""
    z = jnp.einsum("nij,nj->ni", R, robot.axes)
    revolute = np.array([[t == "R"] for t in robot.joint_types])
    return jnp.where(
        revolute, jnp.concatenate([z, jnp.cross(p, z)], axis=-1), jnp.concatenate([jnp.zeros_like(z), z], axis=-1)
    )


def to_link(R, p, m):
    """Motion vectors m (..., 6) at the base origin, seen from frames (R, p): R^T [w; v + w x p]."""
    w, v = m[..., :3], m[..., 3:]
    # R^T x as three broadcast products rather than an einsum: elementwise work that XLA
    # fuses with its neighbours, where a batched 3x3 dot_general is a kernel of its own.
    rt = lambda x: sum(R[..., k, :] * x[..., k, None] for k in range(3))
    return jnp.concatenate([rt(w), rt(v + jnp.cross(w, p))], axis=-1)


def kinematics(robot, q, qd, qdd):
    """Link velocities vl, accelerations al (n_joints, 6) in the link frames, and the
    transmission U, at coordinates q, qd, qdd (n,).

    U (n_joints, n_joints, 6): U[i, j] is joint j's unit twist seen from link i when joint j
    carries link i, zero otherwise. Gravity enters as a fictitious upward acceleration of the base.
    """
    A = jnp.asarray(ancestors(robot.parents))
    q, qd, qdd = robot.joint_motion(q, qd, qdd)
    R, p = _frames(robot, q)
    S = joint_twists(robot, R, p)
    v = A @ (S * qd[:, None])
    # dS_j/dt = v_j x S_j: the axis is fixed in the link it moves.
    Sdot = jax.vmap(spatial.cross_motion)(v, S)
    a0 = jnp.concatenate([jnp.zeros(3), -robot.gravity])
    a = A @ (S * qdd[:, None] + Sdot * qd[:, None]) + a0
    U = to_link(R[:, None], p[:, None], S[None, :]) * A[:, :, None]
    return to_link(R, p, v), to_link(R, p, a), U


def link_wrench(pi, vl, al):
    """Net wrench f = I a + v x* (I v) (6,) of one link in its frame; linear in pi (10,)."""
    return _wrench(pi[0], pi[1:4], spatial.inertia_matrix(pi), vl, al)


def _wrench(m, h, I, vl, al):
    """``link_wrench`` with pi split into mass m, first moment h = m c (3,), inertia I (3, 3)."""
    w, v = vl[:3], vl[3:]
    dw, dv = al[:3], al[3:]
    Lw = I @ w + jnp.cross(h, v)  # angular momentum about the origin
    Lv = m * v - jnp.cross(h, w)  # linear momentum
    n = I @ dw + jnp.cross(h, dv) + jnp.cross(w, Lw) + jnp.cross(v, Lv)
    f = m * dv - jnp.cross(h, dw) + jnp.cross(w, Lv)
    return jnp.concatenate([n, f])


def _link_regressor(pi, vl, al):
    """d link_wrench / d pi, transposed: shape (10, 6), by ``jax.jacfwd`` per parameter group.

    Differentiating in m, then h = m c, then the six inertias holds the other groups
    constant, so each pass carries tangents only through the terms its group enters
    (1 + 3 + 6 light tangents, not 10 through the whole wrench). Parameters come first
    because the transmission in ``rigid_regressor`` reads them that way.
    """
    m, h, I = pi[0], pi[1:4], spatial.inertia_matrix(pi)
    inertia_of = lambda x: spatial.inertia_matrix(jnp.concatenate([pi[:4], x]))  # x: pi[4:]
    d_m = jax.jacfwd(lambda m: _wrench(m, h, I, vl, al))(m)
    d_h = jax.jacfwd(lambda h: _wrench(m, h, I, vl, al))(h)
    d_I = jax.jacfwd(lambda x: _wrench(m, h, inertia_of(x), vl, al))(pi[4:])
    return jnp.concatenate([d_m[None], d_h.T, d_I.T])


#: Joints from which ``rnea_inertial`` uses the classic O(n) recursion rather than the
#: wide (ancestor-matrix) formulation, which does O(n^2) work per sample in few wide operations.
#: Below it the wide form is chosen for the first run, not the warm one: on a 6-joint UR10 with
#: joint terms, 1024 samples vmapped (2 shared cores, 2026-12-06), the recursion runs 1.8x faster
#: (1.03 vs 1.88 ms) but compiles 3x slower (2.57 vs 0.87 s): the wide form's 0.85 ms per call is
#: paid back only after ~2000 calls of a chunk, while its compile is in every cold command.
RECURSIVE_FROM = 8


def _local(robot, q):
    """Each joint's pose in its parent's frame: rotations E (n, 3, 3), origins r (n, 3)."""
    PR, Pp = robot.placements[:, :3, :3], robot.placements[:, :3, 3]
    K = jax.vmap(spatial.skew)(robot.axes)
    revolute = np.array([t == "R" for t in robot.joint_types])
    s, c = jnp.where(revolute, jnp.sin(q), 0.0), jnp.where(revolute, 1.0 - jnp.cos(q), 0.0)
    E = PR + s[:, None, None] * (PR @ K) + c[:, None, None] * (PR @ K @ K)
    r = Pp + jnp.where(revolute, 0.0, q)[:, None] * jnp.einsum("nij,nj->ni", PR, robot.axes)
    return E, r


def _axes(robot):
    """Joint motion subspaces S (n, 6) in the link frames: [axis; 0] revolute, [0; axis] prismatic."""
    revolute = np.array([[t == "R"] for t in robot.joint_types])
    zero = jnp.zeros_like(robot.axes)
    return jnp.where(revolute, jnp.concatenate([robot.axes, zero], -1), jnp.concatenate([zero, robot.axes], -1))


def _to_child(E, r, m):
    """Motion vector m (6,) of the parent frame seen from the child at pose (E, r): E^T [w; v + w x r]."""
    w = m[:3]
    return jnp.concatenate([E.T @ w, E.T @ (m[3:] + jnp.cross(w, r))])


def _motion_to_parent(E, r, m):
    """Motion vector m (6,) of the child at pose (E, r) in the parent frame: [E w; E v + r x E w]."""
    w = E @ m[:3]
    return jnp.concatenate([w, E @ m[3:] + jnp.cross(r, w)])


def _to_parent(E, r, f):
    """Force f (6,) of the child at pose (E, r) in the parent frame: [E n + r x E f; E f]."""
    ff = E @ f[3:]
    return jnp.concatenate([E @ f[:3] + jnp.cross(r, ff), ff])


def rnea_recursive(robot, inertial, q, qd, qdd):
    """``rnea_inertial`` by the classic recursions, O(n) per sample: velocities and
    accelerations outward from the base, net link wrenches inward (Featherstone, "Rigid
    Body Dynamics Algorithms", 2008, table 5.1), in each link's own frame, unrolled over the
    static tree. Gravity is a fictitious upward acceleration of the base. q, qd, qdd:
    coordinates (n,); returns the generalised forces (n,) (mimic joints folded onto their
    masters)."""
    q, qd, qdd = robot.joint_motion(q, qd, qdd)
    E, r = _local(robot, q)
    S = _axes(robot)
    a0 = jnp.concatenate([jnp.zeros(3), -robot.gravity])
    v, a, f = [], [], []
    for i, parent in enumerate(robot.parents):
        vp, ap = (jnp.zeros(6), a0) if parent < 0 else (v[parent], a[parent])
        vi = _to_child(E[i], r[i], vp) + S[i] * qd[i]
        ai = _to_child(E[i], r[i], ap) + S[i] * qdd[i] + spatial.cross_motion(vi, S[i]) * qd[i]
        v.append(vi)
        a.append(ai)
        f.append(link_wrench(inertial[i], vi, ai))
    tau = [None] * robot.n_joints
    for i in reversed(range(robot.n_joints)):
        tau[i] = S[i] @ f[i]
        if robot.parents[i] >= 0:
            f[robot.parents[i]] = f[robot.parents[i]] + _to_parent(E[i], r[i], f[i])
    return robot.to_coordinates(jnp.stack(tau))


#: Joints from which ``crba`` pairs every joint's axis with every composite-inertia column in
#: one frame and masks by the ancestor matrix (one wide product) rather than carrying each column
#: to its ancestors one 6-vector at a time (O(n^2) small ops): measured by
#: ``benchmarks/dynamics.py`` (batched, 2 CPU cores), the wide form is 2-2.5x faster from n = 10,
#: slower at n <= 8.
CRBA_WIDE_FROM = 9


def crba(robot, inertial, q):
    """Rigid-body mass matrix M (n, n) of one sample by the composite-rigid-body algorithm
    (Featherstone 2008, table 6.2): composite inertias folded inward over the static tree,
    then each joint's column read off its composite inertia and carried to its ancestors.
    q: coordinates (n,); with mimic joints M = G^T M_joints G, G = d(joint motion)/d(coordinates).

    A composite inertia is kept as mass m, first moment h (3,) and rotational inertia I (3, 3)
    about the link origin, and moved to the parent by 3x3 products (the parallel-axis theorem
    written for h = m c: ``I' = E I E^T - [Eh][r] - [r][Eh] - m [r][r]``, ``h' = E h + m r``), not as a
    6x6 spatial inertia X I X^T: a third of the flops, and 2-3x faster batched
    (``benchmarks/dynamics.py``). From [`CRBA_WIDE_FROM`][jaxid.dynamics.rnea.CRBA_WIDE_FROM] joints on, the columns
    ``M[j, i] = S_j . (I^c_i S_i)`` (j an ancestor of i) are not carried from frame to frame:
    every S_j and I^c_i S_i is expressed in the base frame once (a motion-force pairing does not
    depend on the frame) and M is one (n, 6) x (6, n) product masked by the ancestor matrix."""
    E, r = _local(robot, robot.joint_motion(q, q, q)[0])
    S = _axes(robot)
    m = [pi[0] for pi in inertial]
    h = [pi[1:4] for pi in inertial]
    I = [spatial.inertia_matrix(pi) for pi in inertial]
    n = robot.n_joints
    for i in reversed(range(n)):
        k = robot.parents[i]
        if k >= 0:
            Eh, R = E[i] @ h[i], spatial.skew(r[i])
            H = spatial.skew(Eh)
            I[k] = I[k] + E[i] @ I[i] @ E[i].T - H @ R - R @ H - m[i] * (R @ R)
            h[k] = h[k] + Eh + m[i] * r[i]
            m[k] = m[k] + m[i]
    # Ic S: the force of each composite body moving along its own joint axis
    F = [
        jnp.concatenate([I[i] @ S[i][:3] + jnp.cross(h[i], S[i][3:]), m[i] * S[i][3:] - jnp.cross(h[i], S[i][:3])])
        for i in range(n)
    ]
    M = (_columns_wide if n >= CRBA_WIDE_FROM else _columns_carried)(robot, E, r, S, F)
    return robot.to_coordinates(robot.to_coordinates(M).T)  # G^T M G (M symmetric)


def _columns_carried(robot, E, r, S, F):
    """M (n, n) from each F_i carried to the ancestors j of i, M[i, j] = M[j, i] = S_j . F_i."""
    n = robot.n_joints
    M = [[None] * n for _ in range(n)]
    zero = jnp.zeros(())
    for i in range(n):
        M[i][i], f, j = S[i] @ F[i], F[i], i
        while robot.parents[j] >= 0:
            f = _to_parent(E[j], r[j], f)
            j = robot.parents[j]
            M[i][j] = M[j][i] = S[j] @ f
    return jnp.stack([jnp.stack([zero if x is None else x for x in row]) for row in M])


def _columns_wide(robot, E, r, S, F):
    """M (n, n) from every S_j and F_i in the base frame (O(n) pose compositions), paired in one
    product and kept where j is i or an ancestor of i (and symmetrically)."""
    Rw, pw = _compose(robot.parents, E, r)
    Sw = jnp.stack([_motion_to_parent(R, p, s) for R, p, s in zip(Rw, pw, S)])
    Fw = jnp.stack([_to_parent(R, p, f) for R, p, f in zip(Rw, pw, F)])
    A = ancestors(robot.parents) > 0  # A[i, j]: j is i or an ancestor of i
    P = Sw @ Fw.T  # P[j, i] = S_j . F_i
    return jnp.where(A.T, P, jnp.where(A, P.T, 0.0))


def rnea_wide(robot, inertial, q, qd, qdd):
    """``rnea_inertial`` in the wide formulation (module docstring): O(n^2) per sample in a
    few batched operations, faster than the recursion for small n."""
    vl, al, U = kinematics(robot, q, qd, qdd)
    f = jax.vmap(link_wrench)(inertial, vl, al)
    return robot.to_coordinates(jnp.einsum("ijk,ik->j", U, f))


def rnea_inertial(robot, inertial, q, qd, qdd):
    """Rigid-body generalised forces (n,) of one sample for inertial parameters (n_joints, 10).

    q, qd, qdd: coordinates, shape (n,), rad, rad/s, rad/s^2 (m, m/s, m/s^2 for prismatic joints).
    Returns N m (N for prismatic joints). By [`rnea_recursive`][jaxid.dynamics.rnea.rnea_recursive] from
    [`RECURSIVE_FROM`][jaxid.dynamics.rnea.RECURSIVE_FROM] joints on, else [`rnea_wide`][jaxid.dynamics.rnea.rnea_wide] (the same numbers).
    """
    return (rnea_recursive if robot.n_joints >= RECURSIVE_FROM else rnea_wide)(robot, inertial, q, qd, qdd)


def rigid_regressor(robot, q, qd, qdd):
    """Rigid-body regressor (n, 10 n_joints) of one sample: per link, ``jax.jacfwd`` of its
    wrench with respect to its 10 parameters, transmitted to the joints that carry it (and
    from coupled joints to their masters' coordinates)."""
    vl, al, U = kinematics(robot, q, qd, qdd)
    B = jax.vmap(_link_regressor)(robot.inertial, vl, al)  # (n, 10, 6)
    # Y[j, i] = B[i] U[i, j] with the 6-long sum unrolled: one elementwise pass that XLA
    # fuses and writes in Y's layout; an einsum becomes a batched dot on 6x6 blocks.
    Ut = jnp.swapaxes(U, 0, 1)
    Y = sum(Ut[:, :, None, k] * B[None, :, :, k] for k in range(6)).reshape(robot.n_joints, -1)
    return robot.to_coordinates(Y)
