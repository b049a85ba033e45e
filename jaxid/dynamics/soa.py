"""Opt-in: the regressor and RNEA with the samples last, arrays (n, N), written in scalar form.

Not used by ``jaxid.regressor``, ``jaxid.rnea`` or ``Robot``: measured slower on CPU (below).
Issue 17 asked for a batch-minor (structure-of-arrays) layout so that XLA's elementwise loops
run over samples with full SIMD lanes. Here every 3-vector is a tuple of three (N,) arrays, a
rotation nine, and the spatial algebra is written out on them; structural zeros are Python
floats (``0.0``) that the helpers below skip (a base link's velocity, the body regressor's zero
blocks), while every differentiable quantity stays an array.

The algorithms are the classic ones, in each link's own frame (Featherstone, "Rigid Body
Dynamics Algorithms", 2008): the recursive Newton-Euler algorithm (table 5.1), and the
regressor of the link wrenches, linear in each link's 10 inertial parameters (Atkeson, An and
Hollerbach, "Estimation of inertial parameters of manipulator loads and links", IJRR 5(3),
1986), transmitted to the joints by power, ``Y[i, link j] = (S_i seen from link j) . A_j``,
with A_j the link's 6x10 body regressor and joint i's unit twist carried outward link by link
(the identity ``rnea.py``'s wide form uses; Pinocchio's ``computeJointTorqueRegressor`` moves
A_j inward instead).

Why it is not faster, as measured (2-core machine shared with other jobs, interleaved medians
in one process, so ratios only; load average in brackets): XLA's CPU fusion recomputes a shared
elementwise producer in every consumer, and optimisation barriers are removed before fusion.
With the link loop unrolled, a UR5 regressor recomputed each joint's sine ~130 times: 45
us/sample against 13 for the vmapped ``Robot.regressor`` at N = 10,000 (load 5), and a minute
to compile. As a scan over the links (one small body, compiled in ~2-5 s; a parent's state
materialised in the carry) with the poses from one batched dot (which materialises the
sines): 5.36 against 3.88 us/sample for ``Robot.regressor`` (load 1.8, chunks of 1024), of
which the scan is ~60 %, the blocks ~25 %, the transpose to (N, n, p) ~15 %. ``rnea`` here
on planar chains (N = 2000, load 1.7): 0.46, 1.03, 2.9, 5.5 us/sample at n = 2, 6, 12, 20,
on a par with ``rnea.rnea_recursive`` (0.47, 1.06, 3.34, 5.57) and so not wired in. A kernel
that keeps a sample's state in registers (not expressible in XLA's CPU fusion), or a GPU,
where this layout is the coalesced one, may change the verdict: ``benchmarks/dynamics.py``
keeps a column for it.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxid.dynamics import spatial
from jaxid.model.robot import joint_columns


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


# ---- the link recursion as a scan over the static tree ------------------------------------
# Why a scan and not the link loop unrolled: XLA's CPU fusion duplicates shared elementwise
# work into every consumer (an unrolled UR5 regressor recomputed each sine ~130 times, 12x
# slower than the vmapped code, and compiled for a minute; optimisation barriers are removed
# before fusion). A scan's carry is materialised between links, so one small body is compiled
# once for any number of links, and a parent's state is read from the carry by its index.

def _tables(robot):
    """Per-joint scan inputs (leading axis n_joints): placement rotation PR and its Rodrigues
    factors PR K, PR K^2 (K the axis' cross-product matrix), origin Pp, PR axis, axis, revolute
    flag and the parent's slot in the carry (0 is the base)."""
    PR, Pp = robot.placements[:, :3, :3], robot.placements[:, :3, 3]
    K = jax.vmap(spatial.skew)(robot.axes)
    return dict(PR=PR, PK=PR @ K, PK2=PR @ K @ K, Pp=Pp, PRa=jnp.einsum("nij,nj->ni", PR, robot.axes),
                axis=robot.axes, rev=jnp.asarray([t == "R" for t in robot.joint_types], dtype=robot.axes.dtype),
                slot=jnp.asarray(np.asarray(robot.parents) + 1), joint=jnp.arange(robot.n_joints))


def _S(x):
    """The joint's unit twist (angular, linear) in its frame: [axis; 0] revolute, [0; axis] prismatic."""
    return (tuple(x["axis"][k] * x["rev"] for k in range(3)), tuple(x["axis"][k] * (1.0 - x["rev"]) for k in range(3)))


def _rows(a):
    """(k, ...) array -> tuple of k arrays."""
    return tuple(a[k] for k in range(a.shape[0]))


def _stack(xs, like):
    return jnp.stack([jnp.zeros_like(like) if _zero(x) else jnp.broadcast_to(x, like.shape) for x in xs])


def _link_motion(x, E, r, parent, qd, qdd):
    """Link velocity (w, u) and acceleration (dw, du) in its frame from its parent's (12, N) state."""
    Sw, Su = _S(x)
    w, u = _to_child(E, r, _rows(parent[0:3]), _rows(parent[3:6]))
    dw, du = _to_child(E, r, _rows(parent[6:9]), _rows(parent[9:12]))
    w, u = _vadd(w, _scale(qd, Sw)), _vadd(u, _scale(qd, Su))
    # v x S qd: the joint's axis moves with the link it drives.
    dw = _vadd(dw, _scale(qdd, Sw), _scale(qd, _cross(w, Sw)))
    du = _vadd(du, _scale(qdd, Su), _scale(qd, _vadd(_cross(w, Su), _cross(u, Sw))))
    return w, u, dw, du


def _base(robot, N, dtype):
    """The carry of link states (n_joints + 1, 12, N): slot 0 the base, at rest with the fictitious
    upward acceleration -gravity that stands for gravity (Featherstone 2008, sec. 5.3)."""
    state = jnp.zeros((robot.n_joints + 1, 12, N), dtype)
    return state.at[0, 9:12].set(-robot.gravity[:, None])


def _joint_motion_minor(robot, q, qd, qdd):
    """Coordinates (n, N) -> joint positions, velocities, accelerations (n_joints, N)."""
    if robot.n == robot.n_joints:
        return q, qd, qdd
    idx, ratio = np.asarray(robot.coordinates), robot.mimic_ratio[:, None]
    return q[idx] * ratio + robot.mimic_offset[:, None], qd[idx] * ratio, qdd[idx] * ratio


def _poses_minor(robot, q):
    """Every joint's pose in its parent frame at positions q (n_joints, N): E (3, 3, n_joints, N),
    r (3, n_joints, N), for all joints at once, outside the link recursion.

    The pose is linear in (1, sin q, 1 - cos q, q): E = PR + sin q PR K + (1 - cos q) PR K^2 and
    r = Pp + q PR axis (prismatic), so it is one batched dot of a per-joint (12, 4) table with those
    four rows. The dot also materialises the sines: an elementwise formula would have each of the
    twelve entries' fusions recompute them (XLA's CPU fusion duplicates them into every consumer)."""
    t = _tables(robot)
    rev = t["rev"][:, None]
    basis = jnp.stack([jnp.ones_like(q), jnp.sin(q) * rev, (1.0 - jnp.cos(q)) * rev, q * (1.0 - rev)], axis=1)
    zero = jnp.zeros_like(t["Pp"])[:, :, None]
    table = jnp.concatenate([jnp.stack([t["PR"], t["PK"], t["PK2"], jnp.zeros_like(t["PR"])], -1).reshape(-1, 9, 4),
                             jnp.concatenate([t["Pp"][:, :, None], zero, zero, t["PRa"][:, :, None]], -1)], axis=1)
    pose = jnp.einsum("jkc,jcn->kjn", table, basis)  # (12, n_joints, N)
    return pose[:9].reshape((3, 3) + q.shape), pose[9:]


def _motion_scan(robot, qj, qdj, qddj, carry_twists):
    """Link velocities and accelerations (n_joints, 12, N) and, with carry_twists, every joint's
    unit twist seen from each link (n_joints, n_joints, 6, N), by a scan outward over the links."""
    nj, N = qj.shape
    E, r = _poses_minor(robot, qj)
    t = _tables(robot)
    xs = dict(E=jnp.moveaxis(E, 2, 0), r=jnp.moveaxis(r, 1, 0), axis=t["axis"], rev=t["rev"], slot=t["slot"],
              joint=t["joint"], qd=qdj, qdd=qddj)
    serial = robot.parents == tuple(range(-1, nj - 1))

    def step(carry, x):
        state, T = carry
        E = tuple(tuple(x["E"][a, b] for b in range(3)) for a in range(3))
        r = _rows(x["r"])
        # A chain's parent is the previous link: the carry is that link alone, replaced rather than
        # updated in place (XLA copied the whole indexed carry every step).
        parent, Tp = (state, T) if serial else (state[x["slot"]], T[x["slot"]])
        new = _stack(sum(_link_motion(x, E, r, parent, x["qd"], x["qdd"]), ()), x["qd"])
        if carry_twists:  # Tp (n_joints, 6, N): the parent's twists
            tw, tu = _to_child(E, r, _rows(Tp[:, 0:3].swapaxes(0, 1)), _rows(Tp[:, 3:6].swapaxes(0, 1)))
            own = (jnp.arange(nj) == x["joint"])[:, None]
            Sw, Su = _S(x)
            Tnew = jnp.stack([jnp.where(own, a, b) for a, b in zip(Sw + Su, tw + tu)], axis=1)
        else:
            Tnew = Tp
        ys = (new, Tnew)
        if not serial:
            new, Tnew = state.at[x["joint"] + 1].set(new), T.at[x["joint"] + 1].set(Tnew)
        return (new, Tnew), ys

    base = _base(robot, N, qj.dtype)
    shape = (nj, 6, N) if carry_twists else (0,)
    init = (base[0], jnp.zeros(shape, qj.dtype)) if serial else (base, jnp.zeros((nj + 1,) + shape, qj.dtype))
    return jax.lax.scan(step, init, xs)[1]


def regressor(robot, q, qd, qdd):
    """Regressor (n, p, N) of N samples, samples last: the rigid bodies' 10 n_joints columns and
    the enabled joint terms, in ``Robot.parameter_names`` order. q, qd, qdd: coordinates (n, N),
    rad, rad/s, rad/s^2 (m for prismatic joints).

    One scan over the links carries each link's velocity and acceleration and every joint's unit
    twist seen from it (zero for joints that do not carry it); link j's block is those twists
    dotted with its 6x10 body regressor, ``Y[i, link j] = S_i^(j) . A_j``, for all links at once."""
    qj, qdj, qddj = _joint_motion_minor(robot, q, qd, qdd)
    nj, N = qj.shape
    state, T = _motion_scan(robot, qj, qdj, qddj, True)  # (link, 12, N), (link, joint, 6, N)
    A = _body_regressor(*(_rows(state[:, 3 * k:3 * k + 3].swapaxes(0, 1)) for k in range(4)))  # each (link, N)
    tw, tu = _rows(T[:, :, 0:3].swapaxes(0, 2)), _rows(T[:, :, 3:6].swapaxes(0, 2))  # each (joint, link, N)
    # Y[i, link j, c] = sum_k twist_k A[k, c]: the 6-long sums written out, one elementwise pass.
    Y = jnp.stack([_add(_dot(tw, cn), _dot(tu, cf)) for cn, cf in A], axis=2).reshape(nj, 10 * nj, N)
    Y = robot.to_coordinates(Y)
    return jnp.concatenate([Y, joint_columns(robot, qdj, qddj)], axis=1) if robot.joint_terms else Y


def rnea(robot, inertial, q, qd, qdd):
    """Rigid-body generalised forces (n, N) of N samples, samples last, by the recursive
    Newton-Euler algorithm (Featherstone 2008, table 5.1): link motion outward in a scan, net
    wrenches inward in a reverse scan. inertial: (n_joints, 10); q, qd, qdd: coordinates (n, N),
    rad, rad/s, rad/s^2 (m for prismatic joints). Returns N m (N)."""
    qj, qdj, qddj = _joint_motion_minor(robot, q, qd, qdd)
    nj, N = qj.shape
    state, _ = _motion_scan(robot, qj, qdj, qddj, False)  # (link, 12, N)
    # Every link's wrench at once, outside the scan: elementwise over (link, N).
    pi = [inertial[:, k, None] for k in range(10)]
    n, f = _wrench(pi[0], tuple(pi[1:4]), tuple(pi[4:10]), *(_rows(state[:, 3 * k:3 * k + 3].swapaxes(0, 1)) for k in range(4)))
    wrenches = jnp.stack(n + f, axis=1)  # (link, 6, N)
    E, r = _poses_minor(robot, qj)
    tables = _tables(robot)

    def step(F, x):
        f = x["f"] + F[x["joint"] + 1]  # its own wrench plus those its children pass on
        Sw, Su = _S(x)
        tau = _add(_dot(Sw, _rows(f[:3])), _dot(Su, _rows(f[3:])))
        E = tuple(tuple(x["E"][a, b] for b in range(3)) for a in range(3))
        n, ff = _to_parent(E, _rows(x["r"]), _rows(f[:3]), _rows(f[3:]))
        return F.at[x["slot"]].add(jnp.stack(n + ff)), tau

    xs = dict(axis=tables["axis"], rev=tables["rev"], slot=tables["slot"], joint=tables["joint"], f=wrenches,
              E=jnp.moveaxis(E, 2, 0), r=jnp.moveaxis(r, 1, 0))
    _, tau = jax.lax.scan(step, jnp.zeros((nj + 1, 6, N), qj.dtype), xs, reverse=True)
    return robot.to_coordinates(tau)
