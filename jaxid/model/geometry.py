"""Collision geometry of a robot as capsules, and the closed-form distances between them.

A capsule is a segment (end points ``a``, ``b`` in one link frame, m) swept by a sphere of
radius r (m). Capsule k sits on ``link[k]``: a joint (link) frame index of the
[`Robot`][jaxid.model.robot.Robot] (0..n-1, the frames of ``forward_kinematics``), or -1 for
the fixed base. Names are link names (URDF / SRDF ones), so that an SRDF's
``disable_collisions`` pairs apply and reports can say which links come close.

A URDF's meshes become capsules through [`jaxid.model.meshes`][jaxid.model.meshes] (package:// lookup, STL /
OBJ / DAE, the minimum-volume capsule and how well it fits, ``Capsules.fits``).

Sources: the segment-segment closest points of Ericson, "Real-Time Collision Detection"
(Morgan Kaufmann 2005), section 5.1.9 (after Lumelsky, "On fast computation of distance
between line segments", Information Processing Letters 21, 1985); capsules as link
bounding volumes as in MoveIt's and cuRobo's self-collision models.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace

import jax.numpy as jnp
import numpy as np

__all__ = [
    "Capsules",
    "bounding_ellipsoid",
    "always_touching",
    "sample_poses",
    "segment_distance",
    "skeleton",
    "ur5",
    "from_urdf",
    "link_triangles",
    "read_srdf",
    "UR5_RANGES",
]


# ---- distance ----------------------------------------------------------------------------
def _safe_div(num, den, ok):
    """num / den where ok, 0 elsewhere, without NaN gradients from the other branch."""
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def segment_distance(p0, p1, q0, q1, eps=1e-12):
    """Distance between segments [p0, p1] and [q0, q1] (..., 3) -> (...,), m.

    Closed-form closest points (Ericson 2005, 5.1.9): the parameters of the closest points
    of the two lines, clamped to [0, 1] and re-projected, written without Python branches
    so that it vectorises and differentiates. The distance is continuous everywhere and
    differentiable away from ties (parallel segments, closest points switching ends); the
    square root is smoothed as sqrt(d^2 + eps^2) (eps in m^2 before the root: 1e-6 m) so
    that touching segments keep a finite gradient. Degenerate segments (points) are allowed.
    """
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    dot = lambda x, y: jnp.sum(x * y, axis=-1)
    a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
    c, b = dot(d1, r), dot(d1, d2)
    tiny = 1e-18
    pa, pe = a > tiny, e > tiny
    denom = a * e - b * b
    # Line-line parameter of the first segment (0 for parallel lines: any point is closest).
    s = jnp.clip(_safe_div(b * f - c * e, denom, pa & pe & (denom > 1e-12 * a * e)), 0.0, 1.0)
    t = _safe_div(b * s + f, e, pe)
    # t outside [0, 1]: clamp it and recompute s for that end of the second segment.
    t_c = jnp.clip(t, 0.0, 1.0)
    s = jnp.where((t_c != t) | ~pe, jnp.clip(_safe_div(t_c * b - c, a, pa), 0.0, 1.0), s)
    s = jnp.where(pa, s, 0.0)
    t = jnp.where(pa, t_c, jnp.clip(_safe_div(f, e, pe), 0.0, 1.0))
    gap = (p0 + s[..., None] * d1) - (q0 + t[..., None] * d2)
    return jnp.sqrt(dot(gap, gap) + eps)


# ---- capsules ----------------------------------------------------------------------------
def capsule_world(link, a, b, R, p):
    """``Capsules.world`` of the capsules' links ``link`` (K,) (static ints, -1: the base) and end
    points a, b (K, 3), m, in their link frames (arrays, traced or not)."""
    eye = jnp.broadcast_to(jnp.eye(3), R.shape[:-3] + (1, 3, 3))
    R = jnp.concatenate([eye, R], axis=-3)
    p = jnp.concatenate([jnp.zeros(p.shape[:-2] + (1, 3)), p], axis=-2)
    idx = np.asarray(link) + 1
    Rk, pk = R[..., idx, :, :], p[..., idx, :]
    move = lambda x: pk + jnp.einsum("...kij,kj->...ki", Rk, jnp.asarray(x, dtype=float))
    return move(a), move(b)


@dataclass(frozen=True)
class Capsules:
    """K capsules on the links of a robot.

    link: (K,) int, the joint (link) frame carrying each capsule, -1 for the fixed base.
    a, b: (K, 3) end points in that frame, m. radius: (K,) m. names: K link names (a link
    may carry several capsules). disabled: link-name pairs never checked against each
    other (an SRDF's ``disable_collisions``), as frozensets of two names. fits: how the
    capsules fitted to meshes fit them (``jaxid.model.meshes.MeshFit``, one per mesh capsule,
    with its link name; empty for capsules from primitives or the skeleton).
    """

    link: np.ndarray
    a: np.ndarray
    b: np.ndarray
    radius: np.ndarray
    names: tuple
    disabled: frozenset = field(default_factory=frozenset)
    fits: tuple = ()

    def __post_init__(self):
        K = len(self.names)
        for name, x, shape in (
            ("link", self.link, (K,)),
            ("a", self.a, (K, 3)),
            ("b", self.b, (K, 3)),
            ("radius", self.radius, (K,)),
        ):
            if np.shape(x) != shape:
                raise ValueError(f"capsule {name} must have shape {shape} for {K} names, got {np.shape(x)}")
        if np.any(~np.isfinite(self.a)) or np.any(~np.isfinite(self.b)) or np.any(~(np.asarray(self.radius) >= 0)):
            raise ValueError("capsule end points must be finite and radii >= 0 (m)")

    def __len__(self):
        return len(self.names)

    def without(self, pairs):
        """The same capsules with the link-name pairs ``pairs`` (iterable of 2-tuples) disabled."""
        return replace(self, disabled=self.disabled | {frozenset(p) for p in pairs})

    def world(self, R, p):
        """End points (K, 3), (K, 3) in the base frame, m, from the link frames' rotations R
        (..., n, 3, 3) and origins p (..., n, 3) (``forward_kinematics_rp``); leading batch
        dimensions pass through."""
        return capsule_world(self.link, self.a, self.b, R, p)

    def pairs(self, parents):
        """(P, 2) capsule indices checked for self-collision: on different links, the links
        not parent and child (``parents``: the robot's parent indices; the base is the
        parent of the root links) and not a disabled pair."""
        parents = tuple(parents)
        parent = lambda i: -2 if i < 0 else parents[i]
        out = []
        for i in range(len(self)):
            for j in range(i + 1, len(self)):
                li, lj = int(self.link[i]), int(self.link[j])
                if li == lj or parent(li) == lj or parent(lj) == li:
                    continue
                if frozenset((self.names[i], self.names[j])) in self.disabled:
                    continue
                out.append((i, j))
        return np.array(out, dtype=int).reshape(-1, 2)


def _concat(parts, disabled=frozenset(), fits=()):
    link, a, b, r, names = zip(*parts)
    return Capsules(
        np.array(link, dtype=int),
        np.array(a, dtype=float).reshape(-1, 3),
        np.array(b, dtype=float).reshape(-1, 3),
        np.array(r, dtype=float),
        tuple(names),
        frozenset(disabled),
        tuple(fits),
    )


def _children(robot):
    return {i: [j for j, p in enumerate(robot.parents) if p == i] for i in range(-1, robot.n_joints)}


def _skeleton_segments(robot, i):
    """Segments (a, b) in link i's frame from its origin to each child joint's origin (to
    the flange for the last link; a point for other leaves)."""
    kids = _children(robot)[i]
    if kids:
        origins = np.asarray(robot.placements)[:, :3, 3]  # one transfer, numpy indexing (no programs)
        return [origins[j] for j in kids]
    return [np.asarray(robot.tip)[:3, 3] if i == robot.tip_joint else np.zeros(3)]


def skeleton(robot, radius, names=None) -> Capsules:
    """Capsules along a robot's kinematic skeleton: on each link i, one from its joint
    origin to each child joint's origin (the flange for the last link), radius[i] m
    (scalar or (n,)); a base capsule from the base origin to the first joint's origin with
    radius[0]. names: link names (n + 1, base first), default "base", then the joint names.
    """
    n = robot.n_joints
    radius = np.broadcast_to(np.asarray(radius, dtype=float), (n,))
    names = ("base", *robot.names) if names is None else tuple(names)
    if len(names) != n + 1:
        raise ValueError(f"names must list the base and the {n} links ({n + 1} names), got {len(names)}")
    origins = np.asarray(robot.placements)[:, :3, 3]
    parts = [(-1, np.zeros(3), origins[j], radius[0], names[0]) for j in _children(robot)[-1]]
    for i in range(n):
        for end in _skeleton_segments(robot, i):
            parts.append((i, np.zeros(3), end, radius[i], names[i + 1]))
    return _concat(parts)


# ---- the built-in UR5 --------------------------------------------------------------------
#: Conservative excitation ranges of the built-in UR5 (rad), used by ``jaxid excite`` instead
#: of its +-2 pi software limits: the pan within +-90 deg of the zero direction (the arm stays
#: in front of its base), the upper arm at least 20 deg above the horizontal, the elbow bent
#: one way only (elbow up: the forearm cannot fold through the upper arm), the wrists
#: +-2.5 rad about the upright tool pose. Centres: (0, -pi/2, pi/2, -pi/2, -pi/2, 0), UR's
#: "elbow up" home: upper arm vertical, forearm horizontal, tool pointing down.
UR5_RANGES = (
    np.array([-np.pi / 2, -np.pi + 0.35, 0.3, -np.pi / 2 - 2.5, -np.pi / 2 - 2.5, -np.pi]),
    np.array([np.pi / 2, -0.35, np.pi - 0.3, -np.pi / 2 + 2.5, -np.pi / 2 + 2.5, np.pi]),
)


def ur5() -> Capsules:
    """Capsules of the built-in UR5 (``jaxid.models.ur5``), in its joint frames.

    Lateral offsets from Universal Robots' ur_description URDF (shoulder 0.13585 m, elbow
    -0.1197 m, wrist 1 0.093 m along the parallel joint axes; the DH model sums them into
    d4 = 0.10915 m); radii: the base footprint of UR's datasheet (diameter 149 mm), the
    others the radii of the cylinders of the model's inertia approximation (0.06 m shoulder
    and upper arm, 0.05 m forearm, 0.045 m wrists, a 0.04 m flange), which cover the joint
    housings (MoveIt's UR5 collision boxes are 0.12 m wide at the shoulder and elbow,
    0.079 m at the wrists). Disabled pairs: those of ur5_moveit_config's ur5.srdf
    (adjacent links, and shoulder/wrist_1, shoulder/wrist_2, wrist_1/wrist_3 "Never"), and
    forearm/wrist_2, "Never" in the SRDF the MoveIt Setup Assistant writes for the UR
    ROS 2 description (the wrist-2 housing passes 0.093 m, the wrist-1 link, beside the
    forearm: on capsules they would always touch).
    """
    so, fo = 0.13585, 0.13585 - 0.1197  # upper arm and forearm planes along the joint-2 axis
    parts = [
        (-1, (0, 0, 0), (0, 0, 0), 0.075, "base_link"),
        (0, (0, 0, 0), (0, -so, 0), 0.06, "shoulder_link"),  # joint-2 housing
        (1, (0, 0, so), (-0.425, 0, so), 0.06, "upper_arm_link"),
        (1, (-0.425, 0, so), (-0.425, 0, fo), 0.06, "upper_arm_link"),  # elbow housing
        (2, (0, 0, fo), (-0.39225, 0, fo), 0.05, "forearm_link"),
        (3, (0, 0, -0.093), (0, 0, 0), 0.045, "wrist_1_link"),
        (4, (0, 0, -0.09465), (0, 0, 0), 0.045, "wrist_2_link"),
        (5, (0, 0, -0.04), (0, 0, -0.01), 0.04, "wrist_3_link"),
    ]
    never = [
        ("shoulder_link", "wrist_1_link"),
        ("shoulder_link", "wrist_2_link"),
        ("wrist_1_link", "wrist_3_link"),
        ("forearm_link", "wrist_2_link"),
    ]
    return _concat(parts, {frozenset(p) for p in never})


# ---- URDF and SRDF -----------------------------------------------------------------------
def read_srdf(path):
    """The ``disable_collisions`` link pairs [(link1, link2), ...] of an SRDF file."""
    try:
        root = ET.parse(str(path)).getroot()
    except FileNotFoundError:
        raise FileNotFoundError(f"SRDF file not found: {path}") from None
    except ET.ParseError as exc:
        raise ValueError(f"{path}: not well-formed XML: {exc}") from None
    pairs = []
    for el in root.iter("disable_collisions"):
        if not el.get("link1") or not el.get("link2"):
            raise ValueError(f"{path}: a <disable_collisions> lacks link1= or link2=")
        pairs.append((el.get("link1"), el.get("link2")))
    return pairs


def _primitive(geom, what, path, package_dirs, cache):
    """((a, b, r) in the frame of a <geometry> element, None) or (None, the MeshError of a mesh
    that cannot be used); a mesh's capsule comes with its ``meshes.MeshFit`` (link name left
    empty): ((a, b, r, fit), None). cache: {(path, scale): ((a, b, r), fit)}, shared by a URDF's
    links (one mesh file is often used by several)."""
    from jaxid.model import meshes
    from jaxid.model.urdf import URDFError, _floats

    if geom.find("sphere") is not None:
        r = _floats(geom.find("sphere").get("radius"), 1, f"{what} <sphere radius>", path)[0]
        return (np.zeros(3), np.zeros(3), r), None
    if geom.find("cylinder") is not None:
        el = geom.find("cylinder")
        r = _floats(el.get("radius"), 1, f"{what} <cylinder radius>", path)[0]
        L = _floats(el.get("length"), 1, f"{what} <cylinder length>", path)[0]
        return (np.array([0, 0, -L / 2]), np.array([0, 0, L / 2]), r), None
    if geom.find("box") is not None:
        size = _floats(geom.find("box").get("size"), 3, f"{what} <box size>", path)
        k = int(np.argmax(size))
        half = np.zeros(3)
        half[k] = size[k] / 2
        return (-half, half, 0.5 * np.linalg.norm(np.delete(size, k))), None
    mesh = geom.find("mesh")
    if mesh is None:
        raise URDFError(f"{path}: {what} <geometry>: expected box, cylinder, sphere or mesh")
    fname = mesh.get("filename", "")
    scale = _floats(mesh.get("scale", "1 1 1"), 3, f"{what} <mesh scale>", path)
    try:
        found = meshes.resolve_mesh(fname, path, package_dirs)
        key = (found, tuple(scale))
        if key not in cache:
            v = meshes.read_mesh(found) * scale
            a, b, r, ratio, excess = meshes.fit_mesh(v)
            cache[key] = ((a, b, r), meshes.MeshFit("", fname, r, float(np.linalg.norm(b - a)), ratio, excess))
    except meshes.MeshError as exc:
        # the reason, with the mesh's name where it is about that file
        return None, exc if exc.kind in ("package", "reader") else meshes.MeshError(f"mesh {fname!r}: {exc}", exc.kind)
    (a, b, r), fit = cache[key]
    return (a, b, r, fit), None


def from_urdf(
    path, robot, *, base_link=None, tip_link=None, mesh_radius=0.05, srdf=None, package_dirs=(), drop_always=True
) -> Capsules:
    """Capsules from a URDF's ``<collision>`` elements (a link's ``<visual>`` ones where it has
    no collision geometry or its collision meshes cannot be read), on the links of ``robot``
    (``Robot.from_urdf(path, base_link=, tip_link=)``, the same chain).

    Spheres map to a point capsule; a cylinder (radius r, length L along z) to the capsule
    of radius r on its axis; a box to the capsule on its longest axis with the half-diagonal
    of the other two sides as radius; an STL, OBJ or DAE mesh (``package://`` names resolved
    through ``package_dirs``, ``ROS_PACKAGE_PATH``, ``AMENT_PREFIX_PATH`` and the URDF's
    folders: ``jaxid.model.meshes``), scaled by its ``scale``, to its tight capsule
    (``meshes.fit_capsule``: the smallest volume found, every vertex inside), whose fit is
    recorded in ``Capsules.fits``; the element's ``<origin>`` places each in the link frame. A
    link whose meshes cannot be read (package or file not found, trimesh not installed, another
    format) falls back to its skeleton capsule (``skeleton``) of radius ``mesh_radius`` m,
    with one warning naming the links and why; so does every link when the URDF has no
    geometry at all. Links fixed to a chain link (or behind joints off the chain, locked at
    zero) carry their capsules on it. srdf: optional SRDF path whose ``disable_collisions``
    pairs are disabled; without one, pairs that touch in every sampled pose are
    (``always_touching``, warned) unless ``drop_always`` is False (``jaxid excite`` keeps them on
    a clearance of their own: ``jaxid.excitation.constraints.relaxed_pairs``).
    """
    from jaxid.model.urdf import _origin

    path = str(path)
    base_link, links, joints, frames = _link_frames(path, robot, base_link)
    parts, fits, kinds = [], [], set()
    fallback: dict = {}  # reason -> {link: None} of the links on skeleton capsules
    cache: dict = {}  # (mesh path, scale) -> (capsule, fit): a mesh used by several links is fitted once
    for link, (idx, F) in frames.items():
        errors = []
        for tag in ("collision", "visual"):  # collision geometry first; visual where it fails
            els = [el for el in links[link].findall(tag) if el.find("geometry") is not None]
            caps, link_fits, failed = [], [], False
            for el in els:
                cap, err = _primitive(el.find("geometry"), f"link {link!r} <{tag}>", path, package_dirs, cache)
                if cap is None:
                    errors.append(err)
                    failed = True
                    continue
                T = F @ _origin(el, f"link {link!r} <{tag}>", path)
                caps.append((T[:3, :3] @ cap[0] + T[:3, 3], T[:3, :3] @ cap[1] + T[:3, 3], cap[2]))
                if len(cap) == 4:
                    link_fits.append(replace(cap[3], link=link))
            if els and not failed:
                parts += [(idx, a, b, r, link) for a, b, r in caps]
                fits += link_fits
                break
        else:
            if errors:  # neither collision nor visual geometry readable: the skeleton
                for e in errors:
                    fallback.setdefault(str(e), {})[link] = None
                kinds |= {e.kind for e in errors}
                ends = _skeleton_segments(robot, idx) if idx >= 0 else [np.asarray(robot.placements)[0, :3, 3]]
                parts += [(idx, np.zeros(3), e, mesh_radius, link) for e in ends]
    if not parts:  # no geometry at all: the skeleton, under the URDF's link names
        fallback["no <collision> or <visual> geometry"] = {"every link": None}
        names = [base_link] + [joints[j].find("child").get("link") for j in robot.names]
        capsules = skeleton(robot, mesh_radius, names)
    else:
        capsules = _concat(parts, fits=fits)
    if fallback:
        warnings.warn(_fallback_message(path, mesh_radius, fallback, kinds), stacklevel=2)
    if srdf is not None:
        return capsules.without(read_srdf(srdf))
    if not drop_always:
        return capsules
    always = always_touching(robot, capsules)
    if always:
        warnings.warn(
            f"{path}: no SRDF; not checking link pairs whose capsules touch in every sampled pose: "
            f"{', '.join('/'.join(p) for p in always)}",
            stacklevel=2,
        )
    return capsules.without(always)


def _link_frames(path, robot, base_link=None):
    """(base link name, URDF links, URDF joints, frames) of the URDF at ``path`` read for ``robot``:
    frames maps every link name reached from the base to (robot body index, -1 for the base;
    transform (4, 4) from the link to that body's joint frame). Links fixed to a body, or behind
    joints the robot does not keep (locked at zero), ride on it."""
    from jaxid.model.urdf import URDFError, _children, _origin, parse

    root, links, joints = parse(path)
    children = _children(joints)
    if base_link is None:
        has_parent = {j.find("child").get("link") for j in joints.values()}
        roots = [link for link in links if link not in has_parent]
        if len(roots) != 1:
            raise URDFError(f"{path}: expected one root link, found {roots}; pass base_link=")
        base_link = roots[0]
    missing = [j for j in robot.names if j not in joints]
    if missing:
        raise ValueError(
            f"{path}: the robot's joints {missing} are not in this URDF; pass the robot read from "
            "the same file (same base_link and tip_link)"
        )
    body = {name: i for i, name in enumerate(robot.names)}
    frames, todo = {base_link: (-1, np.eye(4))}, [base_link]
    while todo:
        link = todo.pop()
        idx, F = frames[link]
        for jname in children.get(link, []):
            child = joints[jname].find("child").get("link")
            frames[child] = (
                (body[jname], np.eye(4))
                if jname in body
                else (idx, F @ _origin(joints[jname], f"joint {jname!r}", path))
            )
            todo.append(child)
    return base_link, links, joints, frames


def link_triangles(path, robot, names, *, base_link=None, package_dirs=()):
    """{link name: (body index, triangles (T, 3, 3) m in that body's joint frame)} of the links
    ``names`` of a URDF whose geometry is all meshes that can be read: the geometry that
    ``from_urdf`` fits its capsules to (the ``<collision>`` elements, the ``<visual>`` ones where
    those cannot be read), scaled and placed by each element's ``<origin>``, on the robot body
    that carries the link (-1: the fixed base). Links with a primitive (box, cylinder, sphere) or
    an unreadable mesh are left out: the mesh-point constraints
    (``jaxid.excitation.constraints.mesh_pairs``) are for meshes only."""
    from jaxid.model import meshes
    from jaxid.model.urdf import _floats, _origin

    path = str(path)
    _, links, _, frames = _link_frames(path, robot, base_link)
    out = {}
    for link in dict.fromkeys(names):
        if link not in frames:
            continue
        idx, F = frames[link]
        for tag in ("collision", "visual"):  # the first whose geometry from_urdf can read is its
            els = [el for el in links[link].findall(tag) if el.find("geometry") is not None]
            tris, failed, primitive = [], False, False
            for el in els:
                mesh = el.find("geometry").find("mesh")
                if mesh is None:
                    primitive = True
                    continue
                scale = _floats(mesh.get("scale", "1 1 1"), 3, f"link {link!r} <{tag}> <mesh scale>", path)
                try:
                    t = meshes.read_triangles(meshes.resolve_mesh(mesh.get("filename", ""), path, package_dirs))
                except meshes.MeshError:
                    failed = True
                    continue
                T = F @ _origin(el, f"link {link!r} <{tag}>", path)
                tris.append((t * scale) @ T[:3, :3].T + T[:3, 3])
            if els and not failed:
                if tris and not primitive:
                    out[link] = (idx, np.concatenate(tris))
                break
    return out


def _fallback_message(path, mesh_radius, links, kinds) -> str:
    """The warning for links on skeleton capsules: why (each reason with its links: ``links``
    maps a reason to the link names), and what to set."""
    from jaxid.model.meshes import INSTALL

    fixes = [f"set their radius with --capsule-radius M (mesh_radius=; now {mesh_radius:g} m)"]
    if kinds & {"package", "file"}:
        fixes.append(
            "point package:// names at their package with --package-dir DIR (package_dirs=; or "
            "ROS_PACKAGE_PATH / AMENT_PREFIX_PATH)"
        )
    if "reader" in kinds:
        fixes.append(f"read meshes with {INSTALL}")
    why = "; ".join(f"{reason}: {', '.join(names)}" for reason, names in links.items())
    return (
        f"{path}: links on skeleton capsules of radius {mesh_radius:g} m (joint to joint), no mesh read: {why}. "
        + "To fix: "
        + "; ".join(fixes)
    )


# ---- bounding ellipsoids -------------------------------------------------------------------
def _sphere_directions(k: int = 32) -> np.ndarray:
    """k unit vectors spread over the sphere (a Fibonacci lattice), (k, 3)."""
    i = np.arange(k) + 0.5
    z, phi = 1 - 2 * i / k, np.pi * (1 + 5**0.5) * i
    rho = np.sqrt(1 - z**2)
    return np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=1)


def bounding_ellipsoid(capsules, points=(), *, margin: float = 0.0, tol: float = 1e-7, max_iter: int = 5000):
    """The ellipsoid ``{c + A u : |u| <= 1}`` that holds capsules and points, near the smallest
    such: the minimum-volume ellipsoid of their sample points (Khachiyan's algorithm; Todd and
    Yildirim, "On Khachiyan's algorithm for the computation of minimum-volume enclosing
    ellipsoids", Discrete Applied Mathematics 155, 2007), scaled about its centre until it holds
    each capsule's two end spheres (densely sampled; their hull, the capsule, follows by
    convexity), then each semi-axis grown by ``margin`` m.

    capsules: sequence of (a (3,), b (3,), r) in one frame, m. points: (k, 3) more points, m.
    Returns (c (3,), A (3, 3)): centre and semi-axes (A's columns), m."""
    caps = [(np.asarray(a, float), np.asarray(b, float), float(r)) for a, b, r in capsules]
    pts = [np.asarray(points, float).reshape(-1, 3)]
    dirs = _sphere_directions()
    for a, b, r in caps:
        pts += [a + max(r, 1e-4) * dirs, b + max(r, 1e-4) * dirs]
    X = np.concatenate(pts)
    if X.shape[0] == 0 or not np.all(np.isfinite(X)):
        raise ValueError("bounding_ellipsoid needs finite capsules or points")
    d = 3
    Qm = np.vstack([X.T, np.ones(len(X))])  # (4, N) lifted points
    u = np.full(len(X), 1.0 / len(X))
    for _ in range(max_iter):
        M = np.einsum("in,ij,jn->n", Qm, np.linalg.inv((Qm * u) @ Qm.T), Qm)
        j = int(np.argmax(M))
        step = (M[j] - d - 1) / ((d + 1) * (M[j] - 1))
        new = (1 - step) * u
        new[j] += step
        done = np.linalg.norm(new - u) < tol
        u = new
        if done:
            break
    c = X.T @ u
    S = d * ((X.T * u) @ X - np.outer(c, c))  # (x - c)^T S^-1 (x - c) <= 1 near every point
    lam, V = np.linalg.eigh(S)
    A = V * np.sqrt(np.maximum(lam, 1e-12))
    # scaled to hold each capsule's end spheres sampled 16x more densely (2 x 512 points: a
    # sphere point is then within 0.0015 r of its nearest, well inside any margin) and the points
    fine = [np.asarray(points, float).reshape(-1, 3)]
    fine += [p + r * _sphere_directions(512) for a, b, r in caps for p in (a, b)]
    Y = np.concatenate(fine)
    A = A * float(np.max(np.linalg.norm(np.linalg.solve(A, (Y - c).T), axis=0)))
    lam, V = np.linalg.eigh(A @ A.T)
    return c, V * (np.sqrt(np.maximum(lam, 0.0)) + margin)


def sample_poses(robot, samples=500, seed=0):
    """(samples, n) joint positions, rad, uniform within the robot's position limits (+-pi
    where a joint has none), drawn with numpy from ``seed``: the poses on which
    ``always_touching`` and the floor rule (``jaxid.excitation.constraints.level_capsules``)
    decide what is true "in every pose"."""
    q_min, q_max = np.asarray(robot.q_min, dtype=float), np.asarray(robot.q_max, dtype=float)
    q_min, q_max = np.broadcast_to(q_min, (robot.n,)), np.broadcast_to(q_max, (robot.n,))
    lo, hi = np.where(np.isfinite(q_min), q_min, -np.pi), np.where(np.isfinite(q_max), q_max, np.pi)
    return lo + (hi - lo) * np.random.default_rng(seed).uniform(size=(samples, robot.n))


def always_touching(robot, capsules, samples=500, seed=0):
    """Link-name pairs of ``capsules.pairs`` whose capsules touch (distance <= 0) in every one
    of ``samples`` uniformly random poses within the joint limits (+-pi where absent): what the
    MoveIt Setup Assistant disables as "Always" when it writes an SRDF. One compiled call."""
    import jax

    from jaxid.dynamics.rnea import forward_kinematics_rp

    P = capsules.pairs(robot.parents)
    if not len(P):
        return []
    q = sample_poses(robot, samples, seed)

    @jax.jit
    def distances(q):
        A, B = capsules.world(*jax.vmap(lambda x: forward_kinematics_rp(robot, x))(q))
        r = jnp.asarray(capsules.radius)
        i, j = P[:, 0], P[:, 1]
        return segment_distance(A[:, i], B[:, i], A[:, j], B[:, j]) - r[i] - r[j]

    touching = np.all(np.asarray(distances(jnp.asarray(q))) <= 0.0, axis=0)
    pairs = {tuple(sorted((capsules.names[i], capsules.names[j]))) for (i, j), t in zip(P, touching) if t}
    return sorted(pairs)
