"""A conservative distance between two links' meshes, for link pairs that capsules cannot separate.

Capsules (``jaxid.model.geometry``) enclose their meshes but are fatter: two housings can
overlap as capsules in every pose while their meshes stay millimetres apart (a jaw that closes
onto its wrist). ``jaxid.excitation.constraints.relaxed_pairs`` then leaves such a pair on a
weaker clearance of its own, or exempt, and nothing keeps the real meshes apart. A
[`MeshPair`][jaxid.excitation.mesh_distance.MeshPair] bounds the distance between the two meshes from below, in closed form and
differentiably, so that a constraint on the bound keeps the real meshes apart:

- link A is covered by spheres: every point of its surface (its triangles, ``geometry.link_triangles``)
  lies in one of the spheres (centres c_i, radii r_i in A's frame). The surface is sampled on a
  lattice of every triangle (spacing <= ``step`` along two edges, so each surface point lies within
  ``2 step`` of a sample, the ``eps`` added to every radius) and the samples are grouped greedily
  into spheres whose radius grows with the least distance from the sample to link B over the
  sampled poses (small where B comes close, large where it never does);
- link B is a distance field: on a grid of spacing g over its bounding box plus a pad, each
  node v holds a lower bound of its distance to B's surface: the exact Euclidean distance
  transform (``scipy.ndimage.distance_transform_edt``) on a grid twice as fine from the nodes
  nearest to B's lattice samples, less half that grid's cell diagonal and less eps_B. Between the nodes, d(x) >= sum_v w_v (d(v) - |x - v|)
  for the trilinear weights w_v (the distance to a set is 1-Lipschitz), and outside the grid the
  distance to B's bounding box and the grid's bound at the nearest grid point less |x - x'|;
- the bound is min_i (lower bound of d(c_i in B's frame, B) - r_i) <= the distance between the two
  meshes: the closest point of A lies in some sphere i, within r_i of c_i (triangle inequality).

A constraint bound >= c therefore keeps the two meshes at least c apart in every pose where it
holds (no sampling of the surface is trusted: the spheres cover it and the grid bounds from
below; only the sizes of the spheres and the grid's extent come from the sampled poses, and they
change how tight the bound is, not whether it is a bound). It is exact up to the radii, the grid
spacing and ``eps``: a few millimetres loose where the links come close. Unsigned: two meshes
one inside the other are not seen as colliding (links of a chain are not nested).

Cost: per pose, one trilinear lookup (8 nodes) per sphere of A (at most ``SPHERES``), against
K_a x K_b segment distances for capsules; the optimiser's loss looks up fewer (a two-level bound,
``pair_bound(expand=EXPAND)``: A's spheres in groups inside parent spheres, only the closest groups
opened), and differentiates one sphere per pose, the closest. Setup (numpy/scipy, once per pair
that needs it): a few seconds per pair (so101's base/upper arm, 67,000 and 45,000 triangles: 2.0 s for
the coarse look, 1 mm sampling, that settles pairs which stay apart, and 3.4 s for the full pair, on
2 cores; ``benchmarks/mesh_pairs.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["MeshPair", "build_pair", "groups", "pair_bound", "surface_samples"]

#: At most this many spheres cover link A of a pair (the greedy cover is coarsened until it fits).
SPHERES = 768
#: At most this many nodes in link B's distance grid (its spacing grows until it fits).
NODES = 600_000
#: The optimiser's two-level bound (``pair_bound(..., expand=EXPAND)``): A's spheres in groups of at
#: most GROUP (each inside one parent sphere), the children of the EXPAND parents of least bound
#: looked at in each pose, the other parents standing for their groups. Measured on the SO arms'
#: pairs (2000 sampled poses): equal to the full bound in 92-94 % of them at (8, 16), in 15-30 % at
#: (16, 4), lower in the rest (by at most 6 mm on so101's base/upper arm, 1 mm on its wrist/jaw).
GROUP = 8
EXPAND = 16
_EPS2 = 1e-12  # m^2 under square roots: finite gradients where a distance is 0


@dataclass(frozen=True, eq=False)
class MeshPair:
    """A lower bound of the distance between the meshes of two links (the module docstring).

    names: (link A, link B) names; links: their robot body indices (-1: the fixed base); centres
    (S, 3), radii (S,): spheres covering A's surface in A's body frame, m; lo (3,), spacing g
    (m) and grid (nx, ny, nz): the lower bounds of the distance to B's surface on the nodes
    lo + g * (i, j, k), B's body frame, m; box (2, 3): a box holding B's surface, m; clearance: m,
    the bound this pair keeps (``clearance`` of the constraints, or less: ``mesh_pairs``).
    parents (P, 3), parent_radii (P,): spheres each holding a group of A's spheres (``groups``),
    m; children (P, GROUP): the indices of each group's spheres in ``centres`` (a short group
    repeats its first: the min over a group is unchanged)."""

    names: tuple
    links: tuple
    centres: np.ndarray
    radii: np.ndarray
    lo: np.ndarray
    spacing: float
    grid: np.ndarray
    box: np.ndarray
    clearance: float
    parents: np.ndarray | None = None
    parent_radii: np.ndarray | None = None
    children: np.ndarray | None = None


def surface_samples(triangles, step):
    """(points (M, 3), eps m): points on triangles (T, 3, 3) such that every point of every
    triangle lies within eps of one. Each triangle is sampled on the lattice v0 + (i/n1) e1 +
    (j/n2) e2, i/n1 + j/n2 <= 1, from v0, an end of its shortest edge, along its two edges e1, e2
    (n = ceil(|e| / step)): a point of the triangle lies in a lattice cell whose corner at the
    lattice's origin side is a sample, within |e1|/n1 + |e2|/n2 <= 2 step of it."""
    T = np.asarray(triangles, dtype=float).reshape(-1, 3, 3)
    edge = np.linalg.norm(T - np.roll(T, -1, axis=1), axis=2)  # edge k: vertex k -> k + 1
    k = np.argmin(edge, axis=1)  # v0 = vertex k: its edges are the shortest and the one before it
    idx = np.arange(len(T))
    v0, v1, v2 = T[idx, k], T[idx, (k + 1) % 3], T[idx, (k + 2) % 3]
    e1, e2 = v1 - v0, v2 - v0
    n1 = np.maximum(np.ceil(np.linalg.norm(e1, axis=1) / step), 1).astype(int)
    n2 = np.maximum(np.ceil(np.linalg.norm(e2, axis=1) / step), 1).astype(int)
    eps = float(np.max(np.linalg.norm(e1, axis=1) / n1 + np.linalg.norm(e2, axis=1) / n2, initial=0.0))
    out = []
    for a, b in set(zip(n1.tolist(), n2.tolist())):
        i, j = np.meshgrid(np.arange(a + 1) / a, np.arange(b + 1) / b, indexing="ij")
        keep = i + j <= 1 + 1e-12
        s, t = i[keep], j[keep]
        m = (n1 == a) & (n2 == b)
        out.append((v0[m, None] + s[:, None] * e1[m, None] + t[:, None] * e2[m, None]).reshape(-1, 3))
    P = np.concatenate(out)
    return P, eps


def _voxel(P, cell):
    """Indices (sorted) of one point of P (M, 3) per occupied cube of side ``cell``: the first of
    each. One int64 key per cube: np.unique over rows (axis=0) sorts them lexicographically, ~10x
    slower on the 10^5-10^6 samples of a mesh."""
    k = np.floor(P / cell).astype(np.int64)
    k -= k.min(axis=0, initial=0)
    n = k.max(axis=0, initial=0) + 1
    return np.sort(np.unique((k[:, 0] * n[1] + k[:, 1]) * n[2] + k[:, 2], return_index=True)[1])


def _cover(P, rho, eps, cap, tree, order):
    """Spheres (centres (S, 3), radii (S,)) holding every point of P (M, 3) plus eps, greedily from
    the points of least wanted radius rho (M,), taken in ``order`` (M,) (``argsort(rho)``); None
    when more than ``cap`` are needed. tree: ``scipy.spatial.cKDTree(P)`` (built once for every
    rho tried)."""
    covered = np.zeros(len(P), bool)
    centres, radii = [], []
    at = 0
    while True:
        # The next uncovered point in order, looked for a block at a time: a mesh has 10^6 samples
        # and a cover a few hundred spheres, so nearly every point is passed over covered.
        while at < len(order):
            free = np.flatnonzero(~covered[order[at : at + 4096]])
            if len(free):
                t, at = order[at + free[0]], at + free[0] + 1
                break
            at += 4096
        else:
            break
        if len(centres) >= cap:
            return None
        if np.isinf(rho[t]):  # one sphere for everything left: no ball query over all points
            near = np.flatnonzero(~covered)
        else:
            near = np.asarray(tree.query_ball_point(P[t], rho[t]), dtype=int)
            near = near[~covered[near]]
        covered[near] = True
        centres.append(P[t])
        radii.append(np.max(np.linalg.norm(P[near] - P[t], axis=1), initial=0.0) + eps)
    return np.array(centres).reshape(-1, 3), np.array(radii)


def groups(centres, radii, size=GROUP):
    """(parents (P, 3), parent radii (P,), children (P, size)): A's spheres (centres (S, 3), radii
    (S,), m) split in halves along their widest axis until each group has at most ``size``
    (balanced and compact: P < 2 S / size); each parent sphere, centred on its group's box,
    holds every sphere of its group (radius max |c_i - c| + r_i), hence every surface point
    they cover: a parent's bound is a bound of its group's part of the surface."""
    out = []
    todo = [np.arange(len(centres))]
    while todo:
        idx = todo.pop()
        if len(idx) <= size:
            out.append(idx)
            continue
        c = centres[idx]
        order = idx[np.argsort(c[:, np.argmax(np.ptp(c, axis=0))], kind="stable")]
        todo += [order[: len(order) // 2], order[len(order) // 2 :]]
    parents, parent_radii, children = [], [], []
    for idx in out:
        c = centres[idx]
        mid = 0.5 * (c.min(axis=0) + c.max(axis=0))
        parents.append(mid)
        parent_radii.append(np.max(np.linalg.norm(c - mid, axis=1) + radii[idx]))
        children.append(np.concatenate([idx, np.full(size - len(idx), idx[0])]))
    return (
        np.array(parents).reshape(-1, 3),
        np.array(parent_radii),
        np.array(children, dtype=np.int64).reshape(-1, size),
    )


def _relative(Ra, pa, Rb, pb):
    """Rotation (..., 3, 3) and offset (..., 3) mapping A's body frame to B's: x_B = M x_A + o."""
    M = np.einsum("...ji,...jk->...ik", Rb, Ra)
    o = np.einsum("...ji,...j->...i", Rb, pa - pb)
    return M, o


def build_pair(names, links, tri_a, tri_b, frames, clearance, *, step=4e-4, spheres=SPHERES, nodes=NODES):
    """A [`MeshPair`][jaxid.excitation.mesh_distance.MeshPair] (its ``clearance`` set to ``clearance``) of links A, B (``names``, body
    indices ``links``) with triangles tri_a, tri_b (T, 3, 3) in their body frames, m.

    frames: (R (N, 2, 3, 3), p (N, 2, 3)) the two bodies' rotations and origins in N sampled poses
    (``geometry.sample_poses``). They size A's spheres only: each wanted radius is s times the
    least distance from the sample to B over the poses (at least ``clearance`` / 20 and twice the
    sampling's eps), s = 0.15 or, where that needs more than ``spheres`` spheres, larger. B's grid
    spans B's bounding box padded by ``clearance`` + 5 mm, its spacing >= 1 mm and such that it has at
    most ``nodes`` nodes (a grid twice as fine gives its values). step: m, the surface sampling's
    spacing (``surface_samples``)."""
    from scipy.ndimage import distance_transform_edt
    from scipy.spatial import cKDTree

    R, p = (np.asarray(x, dtype=float) for x in frames)
    Pa, eps_a = surface_samples(tri_a, step)
    Pb, eps_b = surface_samples(tri_b, step)
    M, o = _relative(R[:, 0], p[:, 0], R[:, 1], p[:, 1])  # (N, 3, 3), (N, 3)
    # Least distance of A's samples to B over the poses, on one sample per 3 mm cube (a sizing only).
    far = clearance + 0.1
    reps = _voxel(Pa, 3e-3)
    tree_b = cKDTree(Pb[_voxel(Pb, 1e-3)], balanced_tree=False, compact_nodes=False)
    dmin = np.full(len(reps), far)
    for k in range(len(M)):
        # eps: a neighbour within 1.2x the nearest one's distance, 3-4x faster than the exact search
        # on meshes that come close (a radius at most 1.2x its exact sizing; the radii that make
        # the cover a cover are measured from the points below, whatever the sizing).
        d, _ = tree_b.query(Pa[reps] @ M[k].T + o[k], eps=0.2, distance_upper_bound=far)
        dmin = np.minimum(dmin, d)
    tree_r = cKDTree(Pa[reps])  # the cube samples: the sizing's spread here, the covers' first look below
    dist, j = tree_r.query(Pa, workers=-1)
    dmin = np.maximum(dmin[j] - dist, 0.0)
    floor_r = max(clearance / 20, 2 * eps_a)
    # Built for speed (midpoint splits, 2-3x faster to build on 10^6 samples; queries as fast).
    tree_a, cover = cKDTree(Pa, balanced_tree=False, compact_nodes=False), None
    by_d = np.argsort(dmin, kind="stable")  # one sort for every s: rho's order is dmin's ...
    for s in (0.15, 0.2, 0.3, 0.45, 0.7, 1.0, 1.5, 2.5, 4.0):
        rho = np.maximum(s * dmin, floor_r * (1 + s))
        # A look first at one sample per 3 mm cube: where even they need more than ``spheres``, a
        # cover of all the samples (which holds these) is taken not to fit either, and this s is
        # passed over unbuilt (wrong only in taking a larger s: a looser bound, still a bound).
        if _cover(Pa[reps], rho[reps], eps_a, spheres, tree_r, np.argsort(rho[reps], kind="stable")) is None:
            continue
        tied = int(np.count_nonzero(s * dmin <= floor_r * (1 + s)))  # ... but for the points on
        order = np.concatenate([np.sort(by_d[:tied]), by_d[tied:]])  # the floor, in index order
        cover = _cover(Pa, rho, eps_a, spheres, tree_a, order)
        if cover is not None:
            break
    if cover is None:
        cover = _cover(Pa, np.full(len(Pa), np.inf), eps_a, spheres, tree_a, np.arange(len(Pa)))
    centres, radii = cover
    # B's grid: its samples' box padded by the clearance + 2 cm (farther off, the box bounds it).
    lo_b, hi_b = Pb.min(axis=0) - eps_b, Pb.max(axis=0) + eps_b
    pad = clearance + 0.005
    lo, hi = lo_b - pad, hi_b + pad
    g = max(1e-3, float(np.cbrt(np.prod(hi - lo) / nodes)))
    shape = np.ceil((hi - lo) / g).astype(int) + 1
    # Distances on a grid twice as fine (every other node is the grid's): the exact Euclidean
    # distance transform from the nodes nearest to B's samples. A sample y lies within h = gf
    # sqrt(3) / 2 of its node u, so for a node v: |v - y| >= |v - u| - h >= edt(v) - h, and B's
    # surface is within eps_b of the samples.
    gf = g / 2
    fine = 2 * (shape - 1) + 1
    occupied = np.ones(tuple(fine), bool)
    u = np.clip(np.rint((Pb - lo) / gf).astype(int), 0, fine - 1)
    occupied[u[:, 0], u[:, 1], u[:, 2]] = False
    edt = distance_transform_edt(occupied, sampling=gf)[::2, ::2, ::2]
    grid = np.minimum(edt, pad) - gf * np.sqrt(3) / 2 - eps_b
    parents, parent_radii, children = groups(centres, radii)
    return MeshPair(
        names=tuple(names),
        links=tuple(int(x) for x in links),
        centres=centres,
        radii=radii,
        lo=lo,
        spacing=g,
        grid=grid,
        box=np.stack([lo_b, hi_b]),
        clearance=float(clearance),
        parents=parents,
        parent_radii=parent_radii,
        children=children,
    )


def _bound_b(xp, pair: MeshPair, x):
    """Lower bounds (...,) of the distance from points x = (x, y, z), three arrays (...,) of
    coordinates in B's frame, m, to B's surface, m; xp: numpy or jax.numpy.

    Written on the three coordinate arrays, corner by corner, with no reduction over an axis of
    3 or 8: XLA's CPU backend turns such small reductions into slow loops (the (..., 3) form
    of this function took 50x longer for the same values), whereas these elementwise
    expressions fuse into one pass over the points."""
    lo, g, n = pair.lo, pair.spacing, pair.grid.shape
    flat = xp.asarray(pair.grid.reshape(-1))  # one linear index: a fast gather
    stride = (n[1] * n[2], n[2], 1)
    hi = lo + g * (np.array(n) - 1)
    # Smoothed lengths of v = (vx, vy, vz) for finite gradients at 0, from below (a bound's own
    # term) and from above (a length subtracted from a bound): the bound stays a bound.
    below = lambda v: xp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + _EPS2) - np.sqrt(_EPS2)
    above = lambda v: xp.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + _EPS2)
    # Outside the grid: the box that holds B's surface (a bound everywhere).
    out = below([xp.maximum(xp.maximum(pair.box[0][k] - x[k], x[k] - pair.box[1][k]), 0.0) for k in range(3)])
    xc = [xp.clip(x[k], lo[k], hi[k]) for k in range(3)]
    u = [(xc[k] - lo[k]) / g for k in range(3)]
    i0 = [xp.clip(xp.floor(u[k]), 0, n[k] - 2) for k in range(3)]
    f = [u[k] - i0[k] for k in range(3)]  # in [0, 1]: the point within its cell, in cells
    base = (i0[0] * stride[0] + i0[1] * stride[1] + i0[2]).astype(np.int32 if xp is not np else np.int64)
    inner = 0.0
    for c in np.ndindex(2, 2, 2):
        # d(x) >= d(v) - |x - v| at each corner v, weighted by its trilinear weight (sum 1).
        w = (f[0] if c[0] else 1.0 - f[0]) * (f[1] if c[1] else 1.0 - f[1]) * (f[2] if c[2] else 1.0 - f[2])
        val = xp.take(flat, base + (c[0] * stride[0] + c[1] * stride[1] + c[2]))
        inner = inner + w * (val - above([g * (f[k] - c[k]) for k in range(3)]))
    inner = inner - above([x[k] - xc[k] for k in range(3)])
    return xp.maximum(inner, out)


def _in_b(xp, M, o, centres):
    """The sphere centres (S, 3) of A's frame in B's frame: three arrays (..., S), m, from the
    rotation M (..., 3, 3) and offset o (..., 3) of ``_relative``."""
    return [xp.einsum("...j,sj->...s", M[..., k, :], centres) + o[..., k, None] for k in range(3)]


def _candidates(pair: MeshPair, M, o, expand):
    """(bounds (..., C), sphere ids (..., C)): the spheres whose bounds ``pair_bound`` takes the
    min of, in the pose of M (..., 3, 3), o (..., 3) (``_relative``); ids index A's spheres
    followed by the parents (``_table``). expand None: all of A's spheres. Else the parents,
    with the children of the ``expand`` parents of least bound in place of those parents (their
    bounds set to +inf): every surface point stays in a candidate sphere, so the min is a bound."""
    centres, radii = jnp.asarray(pair.centres), jnp.asarray(pair.radii)
    S = len(pair.radii)
    if expand is None:
        ids = jnp.broadcast_to(jnp.arange(S), M.shape[:-2] + (S,))
        return _bound_b(jnp, pair, _in_b(jnp, M, o, centres)) - radii, ids
    if pair.children is None or pair.parents is None or pair.parent_radii is None:
        raise ValueError("a two-level bound (expand) needs the pair's sphere groups (mesh_distance.groups)")
    P, size = pair.children.shape
    k = min(int(expand), P)
    bp = _bound_b(jnp, pair, _in_b(jnp, M, o, jnp.asarray(pair.parents))) - jnp.asarray(pair.parent_radii)
    ids = jnp.broadcast_to(S + jnp.arange(P), bp.shape)
    if k == 0:
        return bp, ids
    top = jax.lax.top_k(-bp, k)[1]  # (..., k) the parents of least bound
    child = jnp.asarray(pair.children)[top].reshape(top.shape[:-1] + (k * size,))  # (..., k size)
    # The children's centres in B's frame, per coordinate (see _bound_b): no (..., k size, 3) einsum.
    cx = [jnp.asarray(pair.centres[:, j])[child] for j in range(3)]
    x = [
        M[..., i, 0, None] * cx[0] + M[..., i, 1, None] * cx[1] + M[..., i, 2, None] * cx[2] + o[..., i, None]
        for i in range(3)
    ]
    bc = _bound_b(jnp, pair, x) - radii[child]
    expanded = jnp.any(jnp.arange(P) == top[..., :, None], axis=-2)  # (..., P)
    return jnp.concatenate([jnp.where(expanded, jnp.inf, bp), bc], axis=-1), jnp.concatenate([ids, child], axis=-1)


def pair_bound(pair: MeshPair, R, p, expand=None):
    """Lower bound (...,) of the distance between the pair's meshes, m, from its two bodies'
    rotations R (..., 2, 3, 3) and origins p (..., 2, 3) in the base frame. Pure JAX (jit-,
    vmap- and grad-able; the min over the spheres is a hard min, its gradient the closest sphere's).

    expand None: the min over all of A's spheres (the final check, the home search). An int k
    (``EXPAND`` in the optimiser's loss): a two-level bound, A's sphere groups (``groups``) by
    their parent spheres but for the k parents of least bound, replaced by their children
    (``_candidates``): P + k GROUP sphere lookups instead of S (so101: 190-200 for 440-520).
    A bound as well (every surface point lies in a candidate), and the full one wherever the
    closest sphere is in an expanded group: over the sampled poses of the SO arms' pairs that
    held in 92-94 % of them, and in the rest it was lower by at most a parent's slack (a few mm;
    the optimiser then keeps a little more room, the dense check decides). k = 0: the parents
    alone, a coarse cover.

    The min over the candidates is taken without derivatives, and only the closest one's bound
    (...,) is computed again, to be differentiated: the same value, while reverse mode carries
    one sphere per pose instead of all of them (a hard min's gradient is that sphere's anyway)."""
    Ra, Rb, pa, pb = R[..., 0, :, :], R[..., 1, :, :], p[..., 0, :], p[..., 1, :]
    M = jnp.einsum("...ji,...jk->...ik", Rb, Ra)
    o = jnp.einsum("...ji,...j->...i", Rb, pa - pb)
    bounds, ids = _candidates(pair, jax.lax.stop_gradient(M), jax.lax.stop_gradient(o), expand)
    best = jnp.take_along_axis(ids, jnp.argmin(bounds, axis=-1)[..., None], axis=-1)[..., 0]  # (...,)
    centres, radii = _table(pair, expand)
    x = jnp.einsum("...ij,...j->...i", M, jnp.asarray(centres)[best]) + o
    return _bound_b(jnp, pair, [x[..., k] for k in range(3)]) - jnp.asarray(radii)[best]


def _table(pair: MeshPair, expand):
    """(centres (S [+ P], 3), radii (S [+ P],)): A's spheres, then (expand not None) the parents."""
    if expand is None:
        return pair.centres, pair.radii
    return np.concatenate([pair.centres, pair.parents]), np.concatenate([pair.radii, pair.parent_radii])


def pair_bound_np(pair: MeshPair, R, p):
    """``pair_bound`` in numpy (setup: the bound over the sampled poses)."""
    M, o = _relative(R[..., 0, :, :], p[..., 0, :], R[..., 1, :, :], p[..., 1, :])
    return np.min(_bound_b(np, pair, _in_b(np, M, o, pair.centres)) - pair.radii, axis=-1)


def frames_of(R, p, links):
    """(R (..., 2, 3, 3), p (..., 2, 3)) of the bodies ``links`` (-1: the base) from the link
    frames R (..., n, 3, 3), p (..., n, 3) of ``forward_kinematics_rp``; numpy or jax arrays."""
    xp = jnp if isinstance(R, jax.Array) else np
    eye = xp.broadcast_to(xp.eye(3), R.shape[:-3] + (1, 3, 3))
    R = xp.concatenate([eye, R], axis=-3)
    p = xp.concatenate([xp.zeros(p.shape[:-2] + (1, 3)), p], axis=-2)
    idx = np.asarray(links) + 1
    return R[..., idx, :, :], p[..., idx, :]
