"""Samples-last RNEA: a study of the batch layout on XLA:CPU (issue 17, items 3 and 4).

Under ``jax.vmap`` (what ``jaxid.rnea`` runs) the sample axis is outermost, so a link's 3-vectors
fill 3 of a vector register's 8 float64 lanes. This script runs the same RNEA (Featherstone 2008,
table 5.1) with the samples on the lanes: a Python-unrolled recursion in which every scalar is a
(B,) array, written so that XLA:CPU neither recomputes shared values in every consumer (each
link's values divided by a one it cannot see is one: a division is never duplicated) nor copies
rows apart (groups written through concatenations of at most 8 operands, which it fuses). It
checks the numbers against ``rnea.rnea_recursive`` and prints wall and CPU time per sample,
single call and chunked as ``batching`` chunks, against the vmapped recursion.

What it showed (2-core machine, load 3-4, UR5, us/sample wall / CPU): vmapped recursion 1.27 /
1.27 at 8192 samples and 1.20 / 1.20 at 65536; samples last in one call 0.92 / 1.07 and 1.18 /
1.18; in the chunks of 1024 that ``batching`` uses, 1.50 / 1.29 and 1.41 / 1.41. (Another run,
65536 samples: one call 0.90 / 1.60, vmapped 1.28 / 1.41.) Where the samples-last call is faster
in wall time, XLA's thunk executor is running independent kernels on the second core: per sample
of CPU the two layouts cost about the same, because XLA:CPU writes every fused loop's output to
memory and starts a kernel for each, where Pinocchio's C++ loop keeps a sample's recursion in
registers. The regressor built the same way (link blocks of 10 columns) came out 2x faster per
chunk in wall time, but writing its 60 n values per sample back in the sample-major layout of W
took that back. Neither was merged into the library.
Usage: python benchmarks/samples_last.py [--n 2 6 12] [--samples 8192 65536] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxid
from jaxid.dynamics import batching, spatial
from jaxid.dynamics import rnea as recursions


# ---- scalar algebra that drops constants known at trace time -----------------------------
def _zero(x):
    return isinstance(x, float) and x == 0.0


def _mul(a, b):
    if _zero(a) or _zero(b):
        return 0.0
    if isinstance(a, float) and a == 1.0:
        return b
    if isinstance(b, float) and b == 1.0:
        return a
    return a * b


def _sum(*xs):
    xs = [x for x in xs if not _zero(x)]
    if not xs:
        return 0.0
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def _neg(a):
    return 0.0 if _zero(a) else -a


def _add(a, b):
    return tuple(_sum(x, y) for x, y in zip(a, b))


def _scale(a, s):
    return tuple(_mul(x, s) for x in a)


def _mv(M, x):
    """M x for a 3x3 M (rows of scalars) and a 3-vector x."""
    return tuple(_sum(*(_mul(M[i][k], x[k]) for k in range(3))) for i in range(3))


def _mtv(M, x):
    """M^T x."""
    return tuple(_sum(*(_mul(M[k][i], x[k]) for k in range(3))) for i in range(3))


def _cross(a, b):
    return (
        _sum(_mul(a[1], b[2]), _neg(_mul(a[2], b[1]))),
        _sum(_mul(a[2], b[0]), _neg(_mul(a[0], b[2]))),
        _sum(_mul(a[0], b[1]), _neg(_mul(a[1], b[0]))),
    )


def _to_child(E, r, m):
    """Motion vector m (6-tuple) of the parent frame seen from the child at pose (E, r):
    E^T [w; v + w x r] (``rnea._to_child``)."""
    w, v = m[:3], m[3:]
    return _mtv(E, w) + _mtv(E, _add(v, _cross(w, r)))


def _cross_motion(v, m):
    """Featherstone's crm: v x m for motion vectors (6-tuples)."""
    w, u = v[:3], v[3:]
    return _cross(w, m[:3]) + _add(_cross(w, m[3:]), _cross(u, m[:3]))


def _wrench(pi, vl, al):
    """``rnea.link_wrench`` on 6-tuples: f = I a + v x* (I v) for pi (10 scalars)."""
    m, h, Irot = pi[0], tuple(pi[1:4]), _symmetric(pi[4:])
    w, v = vl[:3], vl[3:]
    dw, dv = al[:3], al[3:]
    Lw = _add(_mv(Irot, w), _cross(h, v))  # angular momentum about the origin
    Lv = _add(_scale(v, m), _neg3(_cross(h, w)))  # linear momentum
    n = _add(_add(_mv(Irot, dw), _cross(h, dv)), _add(_cross(w, Lw), _cross(v, Lv)))
    f = _add(_add(_scale(dv, m), _neg3(_cross(h, dw))), _cross(w, Lv))
    return n + f


def _stack(xs, one):
    """``jnp.stack`` of (B,) arrays as a tree of concatenations of at most 8 operands: XLA:CPU
    fuses those into the loop that computes the operands (``kMaxConcatenateArguments``), where a
    wider one becomes a copy of separately written rows. Each level is multiplied by ``one``, or
    XLA's simplifier would merge the tree back into one wide concatenation."""
    if len(xs) <= 8:
        return jnp.stack(xs)
    size = -(-len(xs) // 8)
    return jnp.concatenate([_stack(xs[k : k + size], one) * one for k in range(0, len(xs), size)])


class _Keep:
    """Values computed once into one (k, B) array and read from there (this script's docstring):
    divided by a one computed from the data, which XLA cannot see is one. ``x / one`` is x."""

    def __init__(self, q):
        # exactly 1 for every input, NaN and inf included (a NaN elsewhere stays in its own sample)
        x = q[0, 0]
        self.one = jnp.where(jnp.isfinite(x), 1.0 + 0.0 * x, 1.0)
        self.B = q.shape[-1]

    def __call__(self, t):
        live = [k for k, x in enumerate(t) if not isinstance(x, float)]
        if not live:
            return t
        kept = _stack([jnp.broadcast_to(t[k], (self.B,)) for k in live], self.one) / self.one
        out = list(t)
        for row, k in enumerate(live):
            out[k] = kept[row]
        return tuple(out)


# ---- the recursion -------------------------------------------------------------------------
def _scalars(x):
    """A traced (k,) or (k, k) array as nested tuples of its scalars."""
    return tuple(_scalars(x[i]) for i in range(x.shape[0])) if x.ndim > 1 else tuple(x[i] for i in range(x.shape[0]))


def _poses(robot, q, keep):
    """Per link: its pose in the parent frame (E 3x3, r 3) and its motion subspace S (6), as
    scalars or (B,) arrays, at joint positions q (n_joints, B) rad (m for prismatic joints)."""
    P = robot.placements
    K = jax.vmap(spatial.skew)(robot.axes)
    PR, Pp = P[:, :3, :3], P[:, :3, 3]
    PK, PK2 = PR @ K, PR @ K @ K
    step = jnp.einsum("nij,nj->ni", PR, robot.axes)
    E, r, S = [], [], []
    for i, kind in enumerate(robot.joint_types):
        axis = _scalars(robot.axes[i])
        if kind == "R":
            # placement folded into Rodrigues' formula as in rnea._local; sin and cos kept,
            # or each of E's 9 entries would evaluate them again
            s, c = keep((jnp.sin(q[i]), 1.0 - jnp.cos(q[i])))
            E.append(
                _kept_rows(
                    tuple(tuple(PR[i, x, y] + s * PK[i, x, y] + c * PK2[i, x, y] for y in range(3)) for x in range(3)),
                    keep,
                )
            )
            r.append(_scalars(Pp[i]))
            S.append(axis + (0.0, 0.0, 0.0))
        else:
            E.append(_scalars(PR[i]))
            r.append(keep(tuple(Pp[i, x] + step[i, x] * q[i] for x in range(3))))
            S.append((0.0, 0.0, 0.0) + axis)
    return E, r, S


def _to_parent(E, r, f):
    """Force f (6-tuple) of the child at pose (E, r) in the parent frame: [E n + r x E f; E f]."""
    ff = _mv(E, f[3:])
    return _add(_mv(E, f[:3]), _cross(r, ff)) + ff


def _dot(a, b):
    return _sum(*(_mul(x, y) for x, y in zip(a, b)))


def rnea(robot, inertial, q, qd, qdd):
    """``rnea.rnea_recursive`` of B samples, samples last: joint torques (n_joints, B), N m.

    Velocities and accelerations outward, net link wrenches inward (Featherstone 2008,
    table 5.1), each link's quantities computed once per chunk. inertial: (n_joints, 10);
    q, qd, qdd: joint positions, velocities, accelerations (n_joints, B), rad, rad/s, rad/s^2
    (m for prismatic joints). Gravity is a fictitious upward acceleration of the base.
    """
    keep = _Keep(q)
    E, r, S = _poses(robot, q, keep)
    base = ((0.0,) * 6, (0.0, 0.0, 0.0) + tuple(_neg(x) for x in _scalars(robot.gravity)))
    v, a, f = [], [], []
    for i, parent in enumerate(robot.parents):
        vp, ap = base if parent < 0 else (v[parent], a[parent])
        vi = _add(_to_child(E[i], r[i], vp), _scale(S[i], qd[i]))
        ai = _add(_add(_to_child(E[i], r[i], ap), _scale(S[i], qdd[i])), _scale(_cross_motion(vi, S[i]), qd[i]))
        kept = keep(vi + ai)  # one loop writes both
        vi, ai = kept[:6], kept[6:]
        v.append(vi)
        a.append(ai)
        f.append(keep(_wrench(_scalars(inertial[i]), vi, ai)))
    tau = [None] * robot.n_joints
    for i in reversed(range(robot.n_joints)):
        tau[i] = jnp.broadcast_to(_dot(S[i], f[i]), (keep.B,))
        k = robot.parents[i]
        if k >= 0:
            f[k] = keep(_add(f[k], _to_parent(E[i], r[i], f[i])))
    return jnp.stack(tau)


def _kept_rows(M, keep):
    """A 3x3 matrix's rows, computed once."""
    flat = keep(tuple(x for row in M for x in row))
    return tuple(flat[3 * x : 3 * x + 3] for x in range(3))


def _symmetric(six):
    """3x3 rows of a symmetric matrix from its entries (xx, xy, yy, xz, yz, zz)."""
    xx, xy, yy, xz, yz, zz = six
    return ((xx, xy, xz), (xy, yy, yz), (xz, yz, zz))


def _neg3(a):
    return tuple(_neg(x) for x in a)


def _timed(fn, args, repeat):
    """(wall, CPU) seconds per call, medians of repeat."""
    jax.block_until_ready(fn(*args))
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn(*args))
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)), float(np.median(cpu))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[2, 6, 12], help="planar chains; 6 is the UR5")
    parser.add_argument("--samples", type=int, nargs="+", default=[8192, 65536])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    chunk = batching.CHUNK
    per_sample = lambda m, q, qd, qdd: recursions.rnea_recursive(m, m.inertial, q, qd, qdd)
    last = lambda m, q, qd, qdd: rnea(m, m.inertial, q.T, qd.T, qdd.T).T
    fns = {
        "vmapped recursion": jax.jit(lambda m, *xs: batching.batched(per_sample, m, *xs)),
        "samples last, one call": jax.jit(last),
        f"samples last, chunks of {chunk}": jax.jit(
            lambda m, *xs: batching._chunked(lambda *ys: last(m, *ys), list(xs), xs[0].shape[0])
        ),
    }
    print(f"{'robot':>9} {'N':>7}  " + "  ".join(f"{k:>32}" for k in fns) + "   (wall / CPU us per sample)")
    for n in args.n:
        robot = jaxid.models.ur5() if n == 6 else jaxid.models.planar(n)
        for N in args.samples:
            q, qd, qdd = (jnp.asarray(np.random.default_rng(k).normal(size=(N, n))) for k in range(3))
            ref = fns["vmapped recursion"](robot, q, qd, qdd)
            for f in list(fns.values())[1:]:
                err = float(jnp.abs(f(robot, q, qd, qdd) - ref).max() / jnp.abs(ref).max())
                assert err < 1e-12, f"samples-last RNEA differs from rnea_recursive by {err:.2g}"
            cells = [_timed(f, (robot, q, qd, qdd), args.repeat) for f in fns.values()]
            print(
                f"{robot.name:>9} {N:>7}  "
                + "  ".join(f"{1e6 * w / N:>15.3f} / {1e6 * c / N:<14.3f}" for w, c in cells)
            )


if __name__ == "__main__":
    main()
