"""Inverse dynamics, mass matrix and regressor written out in scalar (structure-of-arrays) form.

Every quantity is a Python tuple of scalar arrays (a 3-vector is three arrays, a rotation
nine), and the link loop is unrolled over the static tree. Under ``jax.vmap`` each scalar
becomes one array of samples, so the whole algorithm is long chains of elementwise work on
sample vectors that XLA fuses into a few loops with full SIMD lanes, instead of many small
(3,)- and (6,)-vector ops with the samples outermost (issue 17). The same functions also
take arrays of samples directly (any common shape, samples last).

Structural zeros are Python floats (``0.0``): the helpers below skip them, so a term known
to vanish from the topology (a parentless link's velocity, the body regressor's zero
blocks) costs nothing, while every differentiable quantity stays an array.

The algorithms are the classic ones, in each link's own frame (Featherstone, "Rigid Body
Dynamics Algorithms", 2008): the recursive Newton-Euler algorithm (table 5.1), the
composite-rigid-body algorithm (table 6.2), and the regressor of the link wrenches, linear in
each link's 10 inertial parameters (Atkeson, An and Hollerbach, "Estimation of inertial
parameters of manipulator loads and links", IJRR 5(3), 1986), transmitted to the joints as
``Y[i, link j] = (S_i seen from link j) . A_j`` with A_j the link's 6x10 body regressor and
joint i's unit twist carried forward link by link (Khalil and Dombre, "Modeling,
Identification and Control of Robots", 2002, sec. 12.3; the same as Pinocchio's
``computeJointTorqueRegressor``, which moves A_j backwards instead).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxid.dynamics import spatial
from jaxid.friction import models as friction_models


# ---- scalar algebra that skips structural zeros ------------------------------------------
def _zero(x):
    return isinstance(x, float) and x == 0.0


def _mul(a, b):
    if _zero(a) or _zero(b):
        return 0.0
    return a * b


def _add(*xs):
    xs = [x for x in xs if not _zero(x)]
    if not xs:
        return 0.0
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _neg(a):
    return 0.0 if _zero(a) else -a


def _dot(a, b):
    return _add(*(_mul(x, y) for x, y in zip(a, b)))


def _cross(a, b):
    return (_add(_mul(a[1], b[2]), _neg(_mul(a[2], b[1]))),
            _add(_mul(a[2], b[0]), _neg(_mul(a[0], b[2]))),
            _add(_mul(a[0], b[1]), _neg(_mul(a[1], b[0]))))


def _vadd(*vs):
    return tuple(_add(*xs) for xs in zip(*vs))


def _scale(s, v):
    return tuple(_mul(s, x) for x in v)


def _matvec(E, v):
    """E v, E a 3x3 as a tuple of rows."""
    return tuple(_dot(row, v) for row in E)


def _matTvec(E, v):
    """E^T v."""
    return tuple(_add(*(_mul(E[k][c], v[k]) for k in range(3))) for c in range(3))


def _sym(I, v):
    """I v for a symmetric 3x3 I = (xx, xy, yy, xz, yz, zz) (the order of the 10-vector)."""
    xx, xy, yy, xz, yz, zz = I
    return (_add(_mul(xx, v[0]), _mul(xy, v[1]), _mul(xz, v[2])),
            _add(_mul(xy, v[0]), _mul(yy, v[1]), _mul(yz, v[2])),
            _add(_mul(xz, v[0]), _mul(yz, v[1]), _mul(zz, v[2])))


# ---- spatial operations on (angular, linear) pairs of 3-tuples ----------------------------
def _to_child(E, r, w, u):
    """Motion (w, u) of the parent frame seen from the child at pose (E, r): E^T w, E^T (u + w x r)."""
    return _matTvec(E, w), _matTvec(E, _vadd(u, _cross(w, r)))


def _to_parent(E, r, n, f):
    """Force (n, f) of the child at pose (E, r) in the parent frame: E n + r x E f, E f."""
    Ef = _matvec(E, f)
    return _vadd(_matvec(E, n), _cross(r, Ef)), Ef


def _wrench(m, h, I, w, u, dw, du):
    """Net wrench (n, f) = I a + v x* (I v) of a link in its frame (``rnea._wrench``), from its
    mass m, first moment h (3-tuple), inertia I (6-tuple), velocity (w, u), acceleration (dw, du)."""
    Lw = _vadd(_sym(I, w), _cross(h, u))  # angular momentum about the origin
    Lv = _vadd(_scale(m, u), _cross(w, h))  # linear momentum, m u - h x w
    n = _vadd(_sym(I, dw), _cross(h, du), _cross(w, Lw), _cross(u, Lv))
    f = _vadd(_scale(m, du), _cross(dw, h), _cross(w, Lv))
    return n, f


def _body_regressor(w, u, dw, du):
    """The 10 columns of d wrench / d pi (each an (n, f) pair), in the 10-vector's order.

    The mass column is written out (its moment ``u x u`` vanishes); the others are the wrench
    at a unit first moment or inertia, whose zeros the scalar algebra drops."""
    z3, z6 = (0.0,) * 3, (0.0,) * 6
    unit = lambda k, size: tuple(1.0 if c == k else 0.0 for c in range(size))
    cols = [(z3, _vadd(du, _cross(w, u)))]
    cols += [_wrench(0.0, unit(k, 3), z6, w, u, dw, du) for k in range(3)]
    cols += [_wrench(0.0, z3, unit(k, 6), w, u, dw, du) for k in range(6)]
    return cols


# ---- kinematics --------------------------------------------------------------------------
def _joint_constants(robot):
    """Per joint, the static parts of its motion: placement rotation PR, its Rodrigues factors
    PR K and PR K^2 (K the axis' cross-product matrix), origin, axis; as nested tuples of
    unbatched arrays."""
    PR, Pp = robot.placements[:, :3, :3], robot.placements[:, :3, 3]
    K = jax.vmap(spatial.skew)(robot.axes)
    PK, PK2 = PR @ K, PR @ K @ K
    PRa = jnp.einsum("nij,nj->ni", PR, robot.axes)
    rows = lambda A: tuple(tuple(tuple(A[i, r, c] for c in range(3)) for r in range(3)) for i in range(A.shape[0]))
    vecs = lambda A: tuple(tuple(A[i, k] for k in range(3)) for i in range(A.shape[0]))
    return rows(PR), rows(PK), rows(PK2), vecs(Pp), vecs(PRa), vecs(robot.axes)


def _poses(robot, q):
    """Each joint's pose in its parent frame, (E, r) per joint: E = P_R Rot(axis, q) by
    Rodrigues' formula with the placement folded in (P_R + sin q P_R K + (1 - cos q) P_R K^2)."""
    PR, PK, PK2, Pp, PRa, _ = _joint_constants(robot)
    poses = []
    for i, kind in enumerate(robot.joint_types):
        if kind == "R":
            s, c = jnp.sin(q[i]), 1.0 - jnp.cos(q[i])
            E = tuple(tuple(PR[i][r][k] + s * PK[i][r][k] + c * PK2[i][r][k] for k in range(3)) for r in range(3))
            poses.append((E, Pp[i]))
        else:
            poses.append((PR[i], tuple(Pp[i][k] + q[i] * PRa[i][k] for k in range(3))))
    return poses


def _subspace(robot, i):
    """Joint i's unit twist S_i (angular, linear) in its own frame."""
    axis = tuple(robot.axes[i, k] for k in range(3))
    return (axis, (0.0,) * 3) if robot.joint_types[i] == "R" else ((0.0,) * 3, axis)


def _kinematics(robot, q, qd, qdd):
    """Poses, subspaces, link velocities (w, u) and accelerations (dw, du) in the link frames
    at joint positions, velocities, accelerations q, qd, qdd (n_joints, ...). Gravity is a
    fictitious upward acceleration of the base."""
    poses = _poses(robot, q)
    S = [_subspace(robot, i) for i in range(robot.n_joints)]
    g = tuple(-robot.gravity[k] for k in range(3))
    vel, acc = [], []
    for i, parent in enumerate(robot.parents):
        E, r = poses[i]
        Sw, Su = S[i]
        if parent < 0:
            w, u, dw, du = (0.0,) * 3, (0.0,) * 3, (0.0,) * 3, _matTvec(E, g)
        else:
            w, u = _to_child(E, r, *vel[parent])
            dw, du = _to_child(E, r, *acc[parent])
        w, u = _vadd(w, _scale(qd[i], Sw)), _vadd(u, _scale(qd[i], Su))
        # v x S qd: the joint's axis moves with the link it drives.
        dw = _vadd(dw, _scale(qdd[i], Sw), _scale(qd[i], _cross(w, Sw)))
        du = _vadd(du, _scale(qdd[i], Su), _scale(qd[i], _vadd(_cross(w, Su), _cross(u, Sw))))
        vel.append((w, u))
        acc.append((dw, du))
    return poses, S, vel, acc


def _split(x, n):
    """(n, ...) array -> tuple of n arrays (...)."""
    return tuple(x[i] for i in range(n))


def _joints(robot, q, qd, qdd):
    """Joint motion as tuples of per-joint arrays, from coordinates (n, ...)."""
    idx = robot.coordinates
    q, qd, qdd = (_split(x, robot.n) for x in (q, qd, qdd))
    if robot.n == robot.n_joints:
        return q, qd, qdd
    ratio = lambda j: robot.mimic_ratio[j]
    return (tuple(q[c] * ratio(j) + robot.mimic_offset[j] if m >= 0 else q[c] for j, (c, m) in enumerate(zip(idx, robot.mimic))),
            tuple(qd[c] * ratio(j) if m >= 0 else qd[c] for j, (c, m) in enumerate(zip(idx, robot.mimic))),
            tuple(qdd[c] * ratio(j) if m >= 0 else qdd[c] for j, (c, m) in enumerate(zip(idx, robot.mimic))))


def _to_coordinates(robot, rows):
    """Per-joint rows (lists of scalars) -> per-coordinate rows: a coupled joint's row, times its
    ratio, is added to its master's (the virtual work of the coupling)."""
    if robot.n == robot.n_joints:
        return rows
    out = [None] * robot.n
    for j, (c, m) in enumerate(zip(robot.coordinates, robot.mimic)):
        row = rows[j] if m < 0 else [_mul(robot.mimic_ratio[j], x) for x in rows[j]]
        out[c] = row if out[c] is None else [_add(a, b) for a, b in zip(out[c], row)]
    return out


def _array(rows, like):
    """Nested lists of scalars (structural zeros as floats) -> array (rows, cols, *like.shape)."""
    zero = jnp.zeros_like(like)
    return jnp.stack([jnp.stack([zero if _zero(x) else jnp.broadcast_to(x, like.shape) for x in row]) for row in rows])


# ---- the algorithms ----------------------------------------------------------------------
def rnea(robot, inertial, q, qd, qdd):
    """Rigid-body generalised forces (n, ...) by the recursive Newton-Euler algorithm in scalar
    form. inertial: (n_joints, 10); q, qd, qdd: coordinates (n, ...) rad, rad/s, rad/s^2
    (m for prismatic joints), any trailing sample shape. Returns N m (N)."""
    qj, qdj, qddj = _joints(robot, q, qd, qdd)
    poses, S, vel, acc = _kinematics(robot, qj, qdj, qddj)
    f = []
    for i in range(robot.n_joints):
        pi = inertial[i]
        f.append(_wrench(pi[0], (pi[1], pi[2], pi[3]), tuple(pi[4 + k] for k in range(6)), *vel[i], *acc[i]))
    tau = [None] * robot.n_joints
    for i in reversed(range(robot.n_joints)):
        tau[i] = _add(_dot(S[i][0], f[i][0]), _dot(S[i][1], f[i][1]))
        k = robot.parents[i]
        if k >= 0:
            n_, f_ = _to_parent(*poses[i], *f[i])
            f[k] = (_vadd(f[k][0], n_), _vadd(f[k][1], f_))
    return _array(_to_coordinates(robot, [[t] for t in tau]), q[0])[:, 0]


def mass_matrix(robot, inertial, q):
    """Rigid-body mass matrix (n, n, ...) by the composite-rigid-body algorithm in scalar form
    (``rnea.crba``: composites as mass m, first moment h, inertia I about the link origin, moved
    inward by the parallel-axis theorem). q: coordinates (n, ...) rad (m); kg m^2 (kg)."""
    qj, _, _ = _joints(robot, q, q, q)
    poses = _poses(robot, qj)
    n = robot.n_joints
    S = [_subspace(robot, i) for i in range(n)]
    m = [inertial[i, 0] for i in range(n)]
    h = [tuple(inertial[i, 1 + k] for k in range(3)) for i in range(n)]
    I = [tuple(inertial[i, 4 + k] for k in range(6)) for i in range(n)]
    for i in reversed(range(n)):
        k = robot.parents[i]
        if k < 0:
            continue
        E, r = poses[i]
        g = _matvec(E, h[i])
        # E I E^T - ([g][r] + [r][g]) - m [r][r], with [a][b] = b a^T - (a.b) 1.
        EI = [_sym(I[i], tuple(E[row][c] for c in range(3))) for row in range(3)]  # rows of E I
        EIE = [[_dot(EI[a], E[b]) for b in range(3)] for a in range(3)]
        diag = _add(_mul(2.0, _dot(g, r)), _mul(m[i], _dot(r, r)))
        pairs = [(0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2)]
        I[k] = tuple(_add(I[k][e], EIE[a][b], _neg(_add(_mul(r[a], g[b]), _mul(g[a], r[b]))),
                          _neg(_mul(m[i], _mul(r[a], r[b]))), diag if a == b else 0.0)
                     for e, (a, b) in enumerate(pairs))
        h[k] = _vadd(h[k], g, _scale(m[i], r))
        m[k] = _add(m[k], m[i])
    M = [[0.0] * n for _ in range(n)]
    for i in range(n):
        sw, sv = S[i]
        F = (_vadd(_sym(I[i], sw), _cross(h[i], sv)), _vadd(_scale(m[i], sv), _cross(sw, h[i])))  # Ic S
        M[i][i] = _add(_dot(sw, F[0]), _dot(sv, F[1]))
        j = i
        while robot.parents[j] >= 0:
            F = _to_parent(*poses[j], *F)
            j = robot.parents[j]
            M[i][j] = M[j][i] = _add(_dot(S[j][0], F[0]), _dot(S[j][1], F[1]))
    M = _to_coordinates(robot, M)
    return _array(_to_coordinates(robot, [list(col) for col in zip(*M)]), q[0])


def regressor(robot, q, qd, qdd):
    """Regressor (n, p, ...) of the rigid bodies and the enabled joint terms, in
    ``Robot.parameter_names`` order, in scalar form. q, qd, qdd: coordinates (n, ...)."""
    qj, qdj, qddj = _joints(robot, q, qd, qdd)
    poses, S, vel, acc = _kinematics(robot, qj, qdj, qddj)
    n = robot.n_joints
    rows = [[0.0] * (10 * n) for _ in range(n)]
    seen = []  # seen[j]: {joint i carrying link j: joint i's unit twist in link j's frame}
    for j, parent in enumerate(robot.parents):
        carried = {} if parent < 0 else {i: _to_child(*poses[j], *s) for i, s in seen[parent].items()}
        carried[j] = S[j]
        seen.append(carried)
        A = _body_regressor(*vel[j], *acc[j])
        for i, (sw, sv) in carried.items():
            rows[i][10 * j:10 * j + 10] = [_add(_dot(sw, cn), _dot(sv, cf)) for cn, cf in A]
    terms = robot.joint_terms
    if terms:
        eps, vs = robot.coulomb_eps, robot.stribeck_vs
        for j in range(n):
            cols = [0.0] * (n * len(terms))
            for t, name in enumerate(terms):
                cols[j * len(terms) + t] = friction_models.JOINT_BASIS[name].column(qdj[j], qddj[j], eps, vs)
            rows[j] = rows[j] + cols
    return _array(_to_coordinates(robot, rows), q[0])
