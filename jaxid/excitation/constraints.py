"""Geometric constraints of an excitation: self-collision, a floor, a workspace, obstacles.

Every constraint is a signed margin in metres, >= 0 when met, computed from the link
capsules (``jaxid.model.geometry``) at joint positions q by closed-form distances, so
that it is smooth almost everywhere, vmaps over time samples and differentiates:

- self-collision: segment-segment distance minus both radii minus ``clearance``, for
  each pair of ``Capsules.pairs`` (neighbours and disabled pairs excluded);
- floor: the lowest point of each capsule off the base, min(z_a, z_b) - r, above
  ``floor`` + ``clearance``;
- workspace (optional box lo, hi): both end points of each capsule off the base at least
  r + ``clearance`` inside every face (exact: a capsule lies in a box iff its end points
  lie in the box shrunk by r);
- obstacles (optional boxes): the box's signed distance (Quilez's closed form) at S = 9
  points along each capsule off the base, minus an inflated radius sqrt(r^2 + (h/2)^2)
  (h the spacing of the points: the spheres then cover the capsule), minus ``clearance``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxid.dynamics.rnea import forward_kinematics_rp
from jaxid.model.geometry import Capsules, segment_distance

__all__ = ["Constraints", "KINDS"]

#: Constraint kinds, in report order.
KINDS = ("self-collision", "floor", "workspace", "obstacle")
_POINTS = 9  # points along a capsule for the obstacle distance


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
    workspace and obstacle constraints (the base stands on the floor).
    """

    capsules: Capsules
    clearance: float = 0.02
    floor: float | None = 0.0
    workspace: tuple | None = None
    obstacles: tuple = ()

    def __post_init__(self):
        if not (np.isfinite(self.clearance) and self.clearance >= 0):
            raise ValueError(f"clearance must be >= 0 m, got {self.clearance}")
        if self.floor is not None and not np.isfinite(self.floor):
            raise ValueError(f"floor must be a finite height in m or None, got {self.floor}")
        if self.workspace is not None:
            _box(self.workspace, "workspace")
        for i, ob in enumerate(self.obstacles):
            _box(ob, f"obstacle {i}")

    def labels(self, parents):
        """(kinds, labels): the kind and a name of each margin of ``margins``, e.g.
        ("self-collision", "wrist_3_link/forearm_link"), ("floor", "wrist_1_link")."""
        c = self.capsules
        moving = [k for k in range(len(c)) if c.link[k] >= 0]
        kinds, labels = [], []
        for i, j in c.pairs(parents):
            kinds.append("self-collision")
            labels.append(f"{c.names[i]}/{c.names[j]}")
        if self.floor is not None:
            kinds += ["floor"] * len(moving)
            labels += [c.names[k] for k in moving]
        if self.workspace is not None:
            kinds += ["workspace"] * len(moving)
            labels += [c.names[k] for k in moving]
        for o in range(len(self.obstacles)):
            kinds += ["obstacle"] * len(moving)
            labels += [f"{o}/{c.names[k]}" for k in moving]
        return kinds, labels

    def margins(self, robot, q):
        """Signed margins (..., M), m, >= 0 when met, at joint positions q (..., n), rad;
        in the order of ``labels``. Pure JAX: jit-, vmap- and grad-able."""
        c = self.capsules
        R, p = jax.vmap(lambda x: forward_kinematics_rp(robot, x))(q.reshape(-1, q.shape[-1]))
        A, B = c.world(R, p)  # (N, K, 3)
        r = jnp.asarray(c.radius)
        out = []
        P = c.pairs(robot.parents)
        if len(P):
            i, j = P[:, 0], P[:, 1]
            out.append(segment_distance(A[:, i], B[:, i], A[:, j], B[:, j]) - r[i] - r[j] - self.clearance)
        moving = np.flatnonzero(np.asarray(c.link) >= 0)
        Am, Bm, rm = A[:, moving], B[:, moving], r[moving]
        if self.floor is not None:
            out.append(jnp.minimum(Am[..., 2], Bm[..., 2]) - rm - self.floor - self.clearance)
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
        """{kind: (worst margin m, label)} from the per-margin minima ``worst`` (M,) over a
        trajectory; the clearance itself is the margin + ``clearance``."""
        kinds, labels = self.labels(parents)
        worst = np.asarray(worst)
        out = {}
        for kind in KINDS:
            idx = [k for k, kd in enumerate(kinds) if kd == kind]
            if idx:
                k = idx[int(np.argmin(worst[idx]))]
                out[kind] = (float(worst[k]), labels[k])
        return out
