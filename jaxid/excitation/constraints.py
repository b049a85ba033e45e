"""Geometric constraints of an excitation: self-collision, a floor, a workspace, obstacles.

Every constraint is a signed margin in metres, >= 0 when met, computed from the link
capsules (``jaxid.model.geometry``) at joint positions q by closed-form distances, so
that it is smooth almost everywhere, vmaps over time samples and differentiates:

- self-collision: segment-segment distance minus both radii minus ``clearance``, for
  each pair of ``Capsules.pairs`` (neighbours and disabled pairs excluded); a pair whose
  capsules are never ``clearance`` apart keeps its own, smaller clearance
  (``pair_clearance``, from ``relaxed_pairs``) rather than leaving the check; where both of
  its links have meshes, such a pair is checked instead on a lower bound of the distance
  between the meshes themselves (``mesh_pairs``, ``jaxid.excitation.mesh_distance``: spheres
  covering one mesh against a distance grid of the other, never above the true distance, so
  the bound kept >= c keeps the real meshes c apart), labelled "(mesh points)";
- floor: the lowest point of each capsule off the base, min(z_a, z_b) - r, above
  ``floor`` + ``clearance``; the floor is a plane z = ``floor`` of the base frame (a robot on
  a pedestal has its floor below 0). Capsules whose lowest point no joint moves (on links
  that only turn about a vertical axis through the base: ``level_capsules``) stand on the
  base like it and are exempt (``floor_exempt``); a capsule never ``clearance`` above the
  floor keeps its own, smaller clearance (``floor_clearance``, from ``relaxed_floor``);
- workspace (optional box lo, hi): both end points of each capsule off the base at least
  r + ``clearance`` inside every face (exact: a capsule lies in a box iff its end points
  lie in the box shrunk by r);
- obstacles (optional boxes): the box's signed distance (Quilez's closed form) at S = 9
  points along each capsule off the base, minus an inflated radius sqrt(r^2 + (h/2)^2)
  (h the spacing of the points: the spheres then cover the capsule), minus ``clearance``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from jaxid import cache
from jaxid.dynamics.rnea import forward_kinematics_rp
from jaxid.excitation.mesh_distance import EXPAND, build_pair, frames_of, pair_bound, pair_bound_np
from jaxid.model.geometry import Capsules, capsule_world, segment_distance

__all__ = [
    "Constraints",
    "KINDS",
    "level_capsules",
    "mesh_pairs",
    "search_home",
    "sunk_capsules",
    "blocking_constraint",
    "never_clear",
    "relaxed_floor",
    "relaxed_pairs",
]

#: Constraint kinds, in report order.
KINDS = ("self-collision", "floor", "workspace", "obstacle")
_POINTS = 9  # points along a capsule for the obstacle distance
# m: a distance that varies less than this over the sampled poses is one no joint changes. URDFs
# round angles (rpy 3.14159 tilts an axis by 2.7e-6 rad: 1.6e-7 m at 6 cm), so not 1e-9.
_FIXED = 1e-6
_COARSE = dict(step=1e-3, spheres=128, nodes=60_000)  # mesh_pairs' first, cheap look at a pair


def _box(box, what):
    lo, hi = (np.asarray(x, dtype=float) for x in box)
    if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(lo) & np.isfinite(hi)) or np.any(lo >= hi):
        raise ValueError(f"{what} must be a box (lo (3,), hi (3,)) in m with lo < hi, got {box}")
    return lo, hi


@dataclass(frozen=True, eq=False)  # hashed by identity: a static argument of jitted programs
class Constraints:
    """Geometric constraints on a robot's link capsules (see the module docstring).

    capsules: ``Capsules`` of the robot; clearance: m, the least distance kept between
    capsules, to the floor, the workspace faces and obstacles; floor: z of the floor plane
    in the base frame, m (None: no floor); workspace: (lo, hi) box, m, or None; obstacles:
    boxes (lo, hi), m. Capsules on the fixed base (link -1) are exempt from the floor,
    workspace and obstacle constraints (the base stands on the floor); floor_exempt: indices
    of further capsules exempt from the floor only (``level_capsules``: those no joint raises
    or lowers). pair_clearance: ((i, j, c), ...) capsule index pairs of ``Capsules.pairs`` that
    keep their own clearance c, m (< ``clearance``, may be < 0: an overlap of the capsules
    allowed), instead of ``clearance``; pair_exempt: ((i, j), ...) capsule pairs not checked
    (``relaxed_pairs``). floor_clearance: ((k, c), ...) capsules held c m (< ``clearance``)
    above the floor instead (``relaxed_floor``). mesh_pairs: ``mesh_distance.MeshPair`` s of link
    pairs that capsules cannot separate, each keeping its lower bound of the distance between
    the two links' meshes >= its own ``clearance`` (``mesh_pairs``); their capsule pairs are
    then in ``pair_exempt``.
    """

    capsules: Capsules
    clearance: float = 0.02
    floor: float | None = 0.0
    workspace: tuple | None = None
    obstacles: tuple = ()
    floor_exempt: tuple = ()
    pair_clearance: tuple = ()
    pair_exempt: tuple = ()
    floor_clearance: tuple = ()
    mesh_pairs: tuple = ()

    def __post_init__(self):
        if not (np.isfinite(self.clearance) and self.clearance >= 0):
            raise ValueError(f"clearance must be >= 0 m, got {self.clearance}")
        if self.floor is not None and not np.isfinite(self.floor):
            raise ValueError(f"floor must be a finite height in m or None, got {self.floor}")
        if self.workspace is not None:
            _box(self.workspace, "workspace")
        for i, ob in enumerate(self.obstacles):
            _box(ob, f"obstacle {i}")
        bad = [k for k in self.floor_exempt if not 0 <= int(k) < len(self.capsules)]
        if bad:
            raise ValueError(f"floor_exempt must index the {len(self.capsules)} capsules, got {bad}")
        K = len(self.capsules)
        for what, rows, width in (
            ("pair_clearance", self.pair_clearance, 3),
            ("pair_exempt", self.pair_exempt, 2),
            ("floor_clearance", self.floor_clearance, 2),
        ):
            for row in rows:
                idx = row[: 1 if what == "floor_clearance" else 2]
                ok = len(row) == width and np.all(np.isfinite(np.asarray(row, dtype=float)))
                if not ok or not all(0 <= int(k) < K for k in idx):
                    raise ValueError(f"{what} rows must be {width} finite numbers indexing the {K} capsules, got {row}")

    def pairs(self, parents):
        """(P, 2) capsule indices of the self-collision margins: ``Capsules.pairs`` less ``pair_exempt``."""
        P = self.capsules.pairs(parents)
        skip = {frozenset(map(int, p)) for p in self.pair_exempt}
        return P[[frozenset(map(int, p)) not in skip for p in P]].reshape(-1, 2)

    def pair_clearances(self, parents):
        """(P,) m: the clearance each pair of ``pairs`` keeps (``clearance`` or its ``pair_clearance``)."""
        own = {frozenset((int(i), int(j))): float(c) for i, j, c in self.pair_clearance}
        return np.array([own.get(frozenset(map(int, p)), self.clearance) for p in self.pairs(parents)], dtype=float)

    def floor_clearances(self):
        """(K',) m: the clearance above the floor of each capsule of ``floored``."""
        own = {int(k): float(c) for k, c in self.floor_clearance}
        return np.array([own.get(int(k), self.clearance) for k in self.floored()], dtype=float)

    def floored(self):
        """Indices (K',) of the capsules held above the floor: off the base, not floor_exempt."""
        exempt = {int(k) for k in self.floor_exempt}
        return np.array([k for k in range(len(self.capsules)) if self.capsules.link[k] >= 0 and k not in exempt], int)

    def labels(self, parents):
        """(kinds, labels): the kind and a name of each margin of ``margins``, e.g.
        ("self-collision", "wrist_3_link/forearm_link"), ("floor", "wrist_1_link")."""
        c = self.capsules
        moving = [k for k in range(len(c)) if c.link[k] >= 0]
        kinds, labels = [], []
        # A pair or capsule on its own clearance says so: the reports print margin + ``clearance``.
        for (i, j), cl in zip(self.pairs(parents), self.pair_clearances(parents)):
            kinds.append("self-collision")
            own = "" if cl == self.clearance else f" (own clearance {1e3 * cl:.0f} mm)"
            labels.append(f"{c.names[i]}/{c.names[j]}{own}")
        for mp in self.mesh_pairs:
            kinds.append("self-collision")
            own = "" if mp.clearance == self.clearance else f", own clearance {1e3 * mp.clearance:.0f} mm"
            labels.append(f"{mp.names[0]}/{mp.names[1]} (mesh points{own})")
        if self.floor is not None:
            kinds += ["floor"] * len(self.floored())
            labels += [
                c.names[k] + ("" if cl == self.clearance else f" (own clearance {1e3 * cl:.0f} mm)")
                for k, cl in zip(self.floored(), self.floor_clearances())
            ]
        if self.workspace is not None:
            kinds += ["workspace"] * len(moving)
            labels += [c.names[k] for k in moving]
        for o in range(len(self.obstacles)):
            kinds += ["obstacle"] * len(moving)
            labels += [f"{o}/{c.names[k]}" for k in moving]
        return kinds, labels

    def required(self, parents):
        """(M,) m: the clearance each margin of ``margins`` keeps (its own where it has one), in
        the order of ``labels``: the distance itself is the margin + this."""
        c = self.capsules
        moving = int(np.sum(np.asarray(c.link) >= 0))
        parts = [self.pair_clearances(parents), [mp.clearance for mp in self.mesh_pairs]]
        if self.floor is not None:
            parts.append(self.floor_clearances())
        parts.append([self.clearance] * moving * ((self.workspace is not None) + len(self.obstacles)))
        return np.concatenate([np.asarray(x, dtype=float) for x in parts])

    def margins(self, robot, q, fast=False):
        """Signed margins (..., M), m, >= 0 when met, at joint positions q (..., n), rad;
        in the order of ``labels``. Pure JAX: jit-, vmap- and grad-able. fast: the mesh pairs'
        cheaper two-level bound (``mesh_distance.pair_bound``; also a bound, a few mm looser in
        some poses), for the optimiser's loss; the final check and the home search use the full one."""
        c = self.capsules
        R, p = jax.vmap(lambda x: forward_kinematics_rp(robot, x))(q.reshape(-1, q.shape[-1]))
        A, B = c.world(R, p)  # (N, K, 3)
        r = jnp.asarray(c.radius)
        out = []
        P = self.pairs(robot.parents)
        if len(P):
            i, j = P[:, 0], P[:, 1]
            cl = jnp.asarray(self.pair_clearances(robot.parents))
            out.append(segment_distance(A[:, i], B[:, i], A[:, j], B[:, j]) - r[i] - r[j] - cl)
        if self.mesh_pairs:
            out.append(
                jnp.stack(
                    [
                        pair_bound(mp, *frames_of(R, p, mp.links), EXPAND if fast else None) - mp.clearance
                        for mp in self.mesh_pairs
                    ],
                    axis=-1,
                )
            )
        moving = np.flatnonzero(np.asarray(c.link) >= 0)
        Am, Bm, rm = A[:, moving], B[:, moving], r[moving]
        if self.floor is not None:
            f = self.floored()
            cl = jnp.asarray(self.floor_clearances())
            out.append(jnp.minimum(A[:, f, 2], B[:, f, 2]) - r[f] - self.floor - cl)
        if self.workspace is not None:
            lo, hi = _box(self.workspace, "workspace")
            gap = jnp.concatenate([Am - lo, hi - Am, Bm - lo, hi - Bm], axis=-1)  # (N, K', 12)
            out.append(jnp.min(gap, axis=-1) - rm - self.clearance)
        if self.obstacles:
            s = jnp.linspace(0.0, 1.0, _POINTS)[:, None]
            pts = Am[..., None, :] + s * (Bm - Am)[..., None, :]  # (N, K', S, 3)
            h = jnp.linalg.norm(Bm - Am, axis=-1) / (_POINTS - 1)
            r_cover = jnp.sqrt(rm**2 + (h / 2) ** 2)
            for ob in self.obstacles:
                lo, hi = _box(ob, "obstacle")
                d = jnp.abs(pts - (lo + hi) / 2) - (hi - lo) / 2
                outside = jnp.sqrt(jnp.sum(jnp.maximum(d, 0.0) ** 2, axis=-1) + 1e-12)
                sdf = outside + jnp.minimum(jnp.max(d, axis=-1), 0.0)
                out.append(jnp.min(sdf, axis=-1) - r_cover - self.clearance)
        m = jnp.concatenate(out, axis=-1) if out else jnp.zeros((A.shape[0], 0))
        return m.reshape(q.shape[:-1] + (m.shape[-1],))

    def report(self, parents, worst):
        """{kind: (worst margin m, label, required clearance c)} from the per-margin minima
        ``worst`` (M,) over a trajectory; the distance itself is m + c (c is the pair's or
        capsule's own clearance where it has one, else ``clearance``)."""
        kinds, labels = self.labels(parents)
        required = self.required(parents)
        worst = np.asarray(worst)
        out = {}
        for kind in KINDS:
            idx = [k for k, kd in enumerate(kinds) if kd == kind]
            if idx:
                k = idx[int(np.argmin(worst[idx]))]
                out[kind] = (float(worst[k]), labels[k], float(required[k]))
        return out


def level_capsules(robot, capsules, samples=500, seed=0, tol=_FIXED):
    """Indices of the capsules off the base whose lowest point, min(z_a, z_b) - r, m in the base
    frame, is the same (within ``tol`` m) in every one of ``samples`` poses
    (``geometry.sample_poses``, the poses of ``geometry.always_touching``): capsules on links
    fixed to the base or turning only about a vertical axis through it (a UR's or a Panda's
    shoulder), which sit on the base as it does and need no floor constraint (a floor margin
    no motion changes is either always met or never). Decided from the kinematics, not from
    names. One compiled call."""
    level = np.ptp(_lowest(robot, capsules, samples, seed), axis=0) <= tol
    return tuple(int(k) for k in np.flatnonzero(level & (np.asarray(capsules.link) >= 0)))


def sunk_capsules(robot, capsules, floor, clearance, samples=500, seed=0):
    """Indices of the capsules off the base whose lowest point is less than ``clearance`` m above
    the plane z = ``floor`` (m, base frame) in every one of ``samples`` poses
    (``geometry.sample_poses``): the floor constraint can never be met for them, as a pair
    touching in every pose can never be apart (``geometry.always_touching``, which the MoveIt
    Setup Assistant disables). Typically a bounding capsule of a shoulder housing that wraps
    its joint axis at the height of the base. Callers exclude them with a warning, like such
    pairs; the links they carry further out remain constrained by their own capsules."""
    low = _lowest(robot, capsules, samples, seed) - np.asarray(capsules.radius)
    sunk = np.all(low < floor + clearance, axis=0)
    return tuple(int(k) for k in np.flatnonzero(sunk & (np.asarray(capsules.link) >= 0)))


def never_clear(robot, capsules, clearance, samples=500, seed=0):
    """Link-name pairs of ``capsules.pairs`` whose capsules are less than ``clearance`` m apart
    in every one of ``samples`` poses (``geometry.sample_poses``): the self-collision
    constraint can never be met for them. ``geometry.always_touching`` (distance <= 0 in every
    pose, the MoveIt Setup Assistant's "Always") with the clearance the excitation keeps:
    bounding capsules of neighbouring housings (a UR's forearm and wrist 2, which pass each
    other at a fixed offset) rather than links that can meet. One compiled call.
    ``relaxed_pairs`` says what to check of them instead of dropping them."""
    P = capsules.pairs(robot.parents)
    if not len(P):
        return []
    close = np.all(_gaps(robot, capsules, P, samples, seed) < clearance, axis=0)
    return sorted({tuple(sorted((capsules.names[a], capsules.names[b]))) for (a, b), c in zip(P, close) if c})


def relaxed_pairs(robot, capsules, clearance, samples=500, seed=0):
    """(pair_clearance, pair_exempt) for ``Constraints``: what to check of the capsule pairs of
    ``capsules.pairs`` that are less than ``clearance`` m apart in every one of ``samples`` poses
    (``geometry.sample_poses``) instead of ``clearance``, which they can never meet.

    Capsules enclose their meshes but are fatter (``meshes.fit_capsule``), so such a pair may be
    two housings that always overlap as capsules and yet, as meshes, pass within millimetres of
    each other or collide (a jaw that closes onto its wrist; an elbow that folds): dropping it
    would leave the real links unchecked. Each such pair keeps a weaker but still protective
    clearance of its own, from the lower quartile g25 of its capsule gap (distance less both
    radii, m) over the poses: min(0, g25). Apart in most poses (g25 >= 0), the capsules are kept
    from touching, so their meshes never touch; else they may overlap no more than in the closest
    quarter of the poses, which are refused (the quartile, not the median, leaves the range
    centres, typically near the median, room to move). Pairs whose gap the joints change by less
    than ``clearance`` / 2 over the poses are exempt: a design offset (a UR's forearm and wrist 2
    passing each other) that no trajectory makes or breaks, where a constraint would pin the
    joints for less than that. Returns ((i, j, c m), ...) and ((i, j), ...), capsule
    indices. One compiled call."""
    P = capsules.pairs(robot.parents)
    if not len(P):
        return (), ()
    g = _gaps(robot, capsules, P, samples, seed)  # (samples, P)
    close = np.all(g < clearance, axis=0)
    fixed = np.ptp(g, axis=0) < clearance / 2
    m = np.minimum(np.quantile(g, 0.25, axis=0), 0.0)
    own = tuple((int(i), int(j), float(m[k])) for k, (i, j) in enumerate(P) if close[k] and not fixed[k])
    exempt = tuple((int(i), int(j)) for k, (i, j) in enumerate(P) if close[k] and fixed[k])
    return own, exempt


def mesh_pairs(robot, capsules, triangles, clearance, pair_clearance=(), pair_exempt=(), samples=500, seed=0):
    """(mesh pairs, pair_clearance, pair_exempt, notes): the link pairs that capsules cannot separate
    (``relaxed_pairs``: those on a clearance of their own < ``clearance`` or exempt) whose two links
    both have meshes (``triangles``: ``geometry.link_triangles``) checked instead on a lower bound of
    their meshes' distance (``mesh_distance.MeshPair``: spheres covering one mesh against a distance
    grid of the other; the real meshes are at least as far apart as the bound, see that module).

    Each such pair keeps its bound >= c = min(``clearance``, max(0, g25)), g25 the lower quartile
    of the bound over the ``samples`` poses (``geometry.sample_poses``), as ``relaxed_pairs`` does
    for capsules: the meshes never touch, and a pair whose meshes are closer than the clearance in
    most poses (a jaw beside its wrist) keeps the distance it has in all but the closest quarter of
    them, not a clearance it cannot have. A bound that the joints change by less than
    ``clearance`` / 2 (a design offset) keeps its least value over the poses instead (>= 0). Every
    capsule pair of its two links leaves the capsule rule (``pair_clearance``, or the clearance for
    pairs in neither) for ``pair_exempt``. A pair
    whose bound is < 0 in every pose (meshes too close for the bound's few millimetres of
    slack) stays on its capsule rule, and so does one whose bound is >= ``clearance`` in every
    pose (its meshes never come that close: the mesh margins, the costly part of the optimiser's
    step, are kept for the pairs that need them). notes: one line per link pair, what it got and why. Returns
    (pairs, pair_clearance, pair_exempt, notes); only these pairs read meshes (about a second each)."""
    from jaxid.model.geometry import sample_poses

    names = capsules.names
    rows = [(int(i), int(j)) for i, j, _ in pair_clearance] + [(int(i), int(j)) for i, j in pair_exempt]
    links = {}
    for i, j in rows:
        key = tuple(sorted((names[i], names[j])))
        links.setdefault(key, []).append(frozenset((i, j)))
    todo = [k for k in links if k[0] in triangles and k[1] in triangles]
    if not todo:
        return (), tuple(pair_clearance), tuple(pair_exempt), []
    q = jnp.asarray(sample_poses(robot, samples, seed))
    R, p = (np.asarray(x) for x in jax.jit(jax.vmap(lambda x: forward_kinematics_rp(robot, x)))(q))
    out, moved, notes = [], set(), []
    for a, b in todo:
        # Spheres on the larger mesh, the grid on the smaller one (fewer nodes).
        size = lambda k: np.prod(np.ptp(triangles[k][1].reshape(-1, 3), axis=0))
        if size(a) < size(b):
            a, b = b, a
        body = (triangles[a][0], triangles[b][0])
        Rf, pf = frames_of(R, p, body)
        # First a coarse pair (1 mm sampling, few spheres, a coarse grid: ~10x cheaper to build), a
        # bound as well: at or above the clearance in every pose, it settles the pair (below).
        mp = build_pair((a, b), body, triangles[a][1], triangles[b][1], (Rf[:100], pf[:100]), clearance, **_COARSE)
        bound = pair_bound_np(mp, Rf, pf)
        if np.min(bound) < clearance:
            mp = build_pair((a, b), body, triangles[a][1], triangles[b][1], (Rf[:100], pf[:100]), clearance)
            bound = pair_bound_np(mp, Rf, pf)
        # The lower quartile, as relaxed_pairs; a bound the joints change by less than half the
        # clearance (a design offset) keeps its least value instead: no motion makes or breaks it.
        low = np.min(bound) if np.ptp(bound) < clearance / 2 else np.quantile(bound, 0.25)
        c = float(min(clearance, max(0.0, low)))
        if np.min(bound) >= clearance:
            # The meshes are the clearance apart in every sampled pose: the capsule rule stays,
            # and the optimiser is spared the mesh margins (the costly part of its step).
            notes.append(
                f"{a}/{b}: mesh bound >= {1e3 * clearance:.0f} mm in every sampled pose (at least "
                f"{1e3 * np.min(bound):.0f} mm): left on its capsule rule"
            )
            continue
        if np.max(bound) < c:
            notes.append(
                f"{a}/{b}: mesh bound below 0 in every sampled pose (at best {1e3 * np.max(bound):.0f} mm): "
                "left on its capsule rule"
            )
            continue
        out.append(replace(mp, clearance=c))
        moved |= set(links[(a, b) if (a, b) in links else (b, a)])
        notes.append(
            f"{a}/{b}: mesh bound {1e3 * np.min(bound):.0f} to {1e3 * np.max(bound):.0f} mm over the sampled "
            f"poses, kept >= {1e3 * c:.0f} mm"
        )
    # A link pair on its mesh bound leaves the capsule rule with every capsule pair of its two links,
    # not only those that were relaxed: the bound covers both links' whole geometry (the meshes the
    # capsules enclose), and a capsule pair still held at the clearance would keep the links apart
    # by more than the bound asks (TIAGo's torso/arm 2: kept >= 0 mm on the meshes, refused on the
    # dense check at 16 of 20 mm by a capsule pair of the same two links).
    on_mesh = {frozenset(mp.names) for mp in out}
    moved |= {
        frozenset((int(i), int(j)))
        for i, j in capsules.pairs(robot.parents)
        if frozenset((names[i], names[j])) in on_mesh
    }
    own = tuple(row for row in pair_clearance if frozenset((int(row[0]), int(row[1]))) not in moved)
    kept = {frozenset((int(i), int(j))) for i, j in pair_exempt}
    exempt = tuple(pair_exempt) + tuple(sorted(tuple(sorted(pair)) for pair in moved if pair not in kept))
    return tuple(out), own, exempt, notes


def relaxed_floor(robot, capsules, floor, clearance, exempt=(), samples=500, seed=0):
    """(floor_clearance, under): what to check of the capsules off the base, not in ``exempt``,
    whose lowest point is less than ``clearance`` m above the plane z = ``floor`` (m, base frame)
    in every one of ``samples`` poses (``geometry.sample_poses``).

    Those that clear the floor in some pose keep a clearance of 0 m above it (weaker but still
    protective, as in ``relaxed_pairs``): the capsule, hence its mesh, never goes through the
    floor.
    ``under``: indices of those below the floor in every pose, which no motion lifts clear: the
    floor cuts the robot (an arm on a torso, whose base frame is at its shoulder), and the
    caller must say where the floor is. Returns ((k, c m), ...) and ((k, best height m), ...)."""
    low = _lowest(robot, capsules, samples, seed) - np.asarray(capsules.radius) - floor  # (samples, K)
    skip = {int(k) for k in exempt}
    sunk = [k for k in np.flatnonzero(np.all(low < clearance, axis=0)) if capsules.link[k] >= 0 and int(k) not in skip]
    best = np.max(low, axis=0)
    own = tuple((int(k), 0.0) for k in sunk if best[k] >= 0)
    under = tuple((int(k), float(best[k])) for k in sunk if best[k] < 0)
    return own, under


def _gaps(robot, capsules, P, samples, seed):
    """Capsule gaps (samples, P), m (segment distance less both radii), of the capsule index
    pairs P (P, 2) on ``geometry.sample_poses``."""
    from jaxid.model.geometry import sample_poses

    q = np.asarray(sample_poses(robot, samples, seed))  # numpy into the jit: no transfer program
    c = capsules
    return np.asarray(_pair_gaps(robot, tuple(int(k) for k in c.link), c.a, c.b, c.radius, P[:, 0], P[:, 1], q))


def _lowest(robot, capsules, samples, seed):
    """min(z_a, z_b) (samples, K), m, of every capsule's segment on ``geometry.sample_poses``."""
    from jaxid.model.geometry import sample_poses

    q = np.asarray(sample_poses(robot, samples, seed))
    A, B = _capsule_ends(robot, tuple(int(k) for k in capsules.link), capsules.a, capsules.b, q)
    return np.minimum(np.asarray(A)[..., 2], np.asarray(B)[..., 2])


# Stored programs (the capsules' links static, their geometry and the poses as arrays): a warm
# process loads them instead of tracing and lowering a closure over the capsules again.
def _ends(robot, link, a, b, q):
    """Capsule end points (samples, K, 3), (samples, K, 3) in the base frame, m, at the poses q (samples, n)."""
    return capsule_world(link, a, b, *jax.vmap(lambda x: forward_kinematics_rp(robot, x))(q))


_capsule_ends = cache.jit(_ends)


@cache.jit
def _pair_gaps(robot, link, a, b, radius, i, j, q):
    """Gaps (samples, P), m, of the capsule pairs (i, j) (P,) each at the poses q (samples, n)."""
    A, B = _ends(robot, link, a, b, q)
    return segment_distance(A[:, i], B[:, i], A[:, j], B[:, j]) - radius[i] - radius[j]


def search_home(constraints, robot, q_min, q_max, *, room=0.01, reach=0.9, radii=18, per_radius=128, seed=0):
    """The nearest pose to the centre of the position ranges that meets every constraint with
    ``room`` m to spare (with none such, with 0 m to spare), or None.

    q_min, q_max (n,) rad: the ranges (infinite: the centre 0, half range pi). Deterministic
    sampled search (``seed``): candidates c + u * half, u on the L-infinity spheres of radii
    reach * k / radii (k = 1..radii) in units of each half range, ``per_radius`` random u on
    each and every single-joint move; the clear candidate nearest the centre (Euclidean norm
    of u) is then pulled back along its ray from the centre to the first clear point of a
    20-step grid, for the 8 nearest. Returns (home (n,) rad, distance ||u||) or None. A clear
    home with room to spare lets the optimiser move off it in every direction; the margins
    come from ``constraints.margins`` (two compiled calls)."""
    n = int(robot.n)
    q_min, q_max = (np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in (q_min, q_max))
    finite = np.isfinite(q_min) & np.isfinite(q_max)
    centre = np.where(finite, 0.5 * (q_min + q_max), 0.0)
    half = np.where(finite, 0.5 * (q_max - q_min), np.pi)
    rho = reach * np.arange(1, radii + 1) / radii
    axis = (
        np.eye(n)[None, :, None, :] * np.array([-1.0, 1.0])[None, None, :, None] * rho[:, None, None, None]
    ).reshape(-1, n)
    u = np.random.default_rng(seed).uniform(-1.0, 1.0, (radii, per_radius, n))
    u = (u / np.max(np.abs(u), axis=-1, keepdims=True) * rho[:, None, None]).reshape(-1, n)
    U = np.concatenate([axis, u])
    least = jax.jit(lambda q: jnp.min(constraints.margins(robot, q), axis=-1, initial=jnp.inf))
    m = np.asarray(least(jnp.asarray(centre + U * half)))
    for need in (room, 0.0):
        ok = np.flatnonzero(m >= need)
        if ok.size:
            break
    else:
        return None
    return _pull_back(least, centre, half, U, ok, need)


def blocking_constraint(constraints, robot, q_min, q_max, samples=2000, seed=0):
    """(kind, label, best margin m, required clearance m) of the constraint least met over ``samples`` poses uniform in
    the ranges q_min, q_max (n,), rad (+-pi about 0 where infinite): the one that blocks every
    home when its best margin is < 0 (e.g. two skeleton capsules that can never be apart by
    the clearance)."""
    n = int(robot.n)
    q_min, q_max = (np.broadcast_to(np.asarray(x, dtype=float), (n,)) for x in (q_min, q_max))
    lo, hi = np.where(np.isfinite(q_min), q_min, -np.pi), np.where(np.isfinite(q_max), q_max, np.pi)
    q = lo + (hi - lo) * np.random.default_rng(seed).uniform(size=(samples, n))
    best = np.max(np.asarray(jax.jit(lambda q: constraints.margins(robot, q))(jnp.asarray(q))), axis=0)
    kinds, labels = constraints.labels(robot.parents)
    k = int(np.argmin(best))
    return kinds[k], labels[k], float(best[k]), float(constraints.required(robot.parents)[k])


def _pull_back(least, centre, half, U, ok, need):
    """The clear candidate of U[ok] (unit half ranges) nearest the centre, pulled back along its
    ray to the first clear point of a 20-step grid (among the 8 nearest): (pose rad, distance)."""
    n = centre.size
    dist = np.linalg.norm(U, axis=1)
    best = ok[np.argsort(dist[ok], kind="stable")[:8]]
    t = np.arange(1, 21) / 20
    rays = (t[None, :, None] * U[best][:, None, :]).reshape(-1, n)
    m_ray = np.asarray(least(jnp.asarray(centre + rays * half)))
    clear = np.flatnonzero(m_ray >= need)  # includes t = 1: every ray ends clear
    k = clear[np.argmin(np.linalg.norm(rays[clear], axis=1))]
    return centre + rays[k] * half, float(np.linalg.norm(rays[k]))
