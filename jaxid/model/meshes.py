"""Meshes of a URDF: where ``package://`` names point, reading STL / OBJ / DAE, and the
minimum-volume capsule around a mesh with its error.

Resolution of ``package://pkg/rest`` ([`find_package`][jaxid.model.meshes.find_package]), first match wins: the folders
given by the caller (``--package-dir``), the ``ROS_PACKAGE_PATH`` entries (ROS 1: each
entry is a package or a folder searched for packages, as ``rospack`` crawls it, here to a
depth of 4), the ament index of ``AMENT_PREFIX_PATH`` (ROS 2: ``<prefix>/share/<pkg>``, as
``ament_index_python.get_package_share_directory`` answers), and last the URDF's own
ancestors (a folder named ``pkg`` above or beside the file, the layout of a description
package checked out on its own). ``file://`` names are absolute paths, others are relative
to the URDF's folder.

Meshes are read with trimesh (the optional ``mesh`` extra: ``pip install 'jaxid[mesh]'``,
with pycollada for DAE), every node of a file with its transform, in the file's units: a
COLLADA ``<unit meter=...>`` is applied as the COLLADA 1.4 specification defines it (and as
RViz and Gazebo do); the ``<up_axis>`` is not (ROS descriptions are Z-up whatever a file
says; MoveIt's geometric_shapes and coal ignore it too). Without trimesh, binary and ASCII
STL are still read (a reader here).

The capsule ([`fit_capsule`][jaxid.model.meshes.fit_capsule]) is the smallest-volume one found by a local search over the
axis direction, started from each principal axis of the points (the least-squares line of
Eberly's bounding capsule, Geometric Tools ``ContCapsule3``): for a direction, the axis passes
through the centre of the smallest circle around the points projected on the orthogonal plane
(Welzl, "Smallest enclosing disks (balls and ellipsoids)", LNCS 555, 1991, in the incremental
form of de Berg et al., "Computational Geometry", 3rd ed., section 4.7), the radius is chosen
by a bounded scalar search between that circle's radius and the one at which the segment
shrinks to a point, and the segment ends are the closest that still cover every point. The
direction is refined by Nelder-Mead (Nelder and Mead, Computer Journal 7, 1965). Only the
convex hull's vertices matter: a capsule is convex, so it holds the hull (and every vertex)
when it holds those. The result is a local optimum of a non-convex problem: tight in
practice, not a certified global minimum; [`capsule_error`][jaxid.model.meshes.capsule_error] says how tight.
"""

from __future__ import annotations

import os
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from jaxid import cache

__all__ = [
    "MeshError",
    "MeshFit",
    "capsule_error",
    "find_package",
    "fit_capsule",
    "fit_mesh",
    "read_mesh",
    "read_triangles",
    "resolve_mesh",
]

#: The mesh formats read (lower-case file name endings).
FORMATS = (".stl", ".obj", ".dae")
INSTALL = "pip install 'jaxid[mesh]' (trimesh, and pycollada for DAE)"


class MeshError(ValueError):
    """A mesh that cannot be used. ``kind``: "package" (the package:// package was not found),
    "file" (the file is missing), "format" (not STL, OBJ or DAE), "reader" (trimesh or
    pycollada missing) or "read" (the reader failed on the file)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


# ---- resolution ----------------------------------------------------------------------------
def _package_name(folder: str) -> str | None:
    """The <name> of folder/package.xml, or None without one (or unreadable)."""
    try:
        name = ET.parse(os.path.join(folder, "package.xml")).getroot().findtext("name")
    except (OSError, ET.ParseError):
        return None
    return name.strip() if name else None


_FOUND: dict[tuple[str, str], str] = {}  # (searched folder, package) -> its folder: found ones only


def _crawl_cached(folder: str, pkg: str, depth: int) -> str | None:
    """`_crawl`, remembering what it found (a URDF names one package in many meshes); a
    miss is searched again, so a package created since is found."""
    hit = _FOUND.get((folder, pkg))
    if hit is not None and os.path.isdir(hit):
        return hit
    found = _crawl(folder, pkg, depth)
    if found:
        _FOUND[(folder, pkg)] = found
    return found


def _crawl(folder: str, pkg: str, depth: int) -> str | None:
    """The package ``pkg`` at or under ``folder`` (to ``depth`` levels), as rospack finds it: a
    folder whose package.xml names it, or a folder named ``pkg``; the search does not descend
    into other packages (folders with a package.xml), hidden folders or ones holding CATKIN_IGNORE
    / COLCON_IGNORE."""
    if not os.path.isdir(folder):
        return None
    name = _package_name(folder)
    # The folder's name counts too: installed packages are share/<pkg>, whatever their
    # package.xml says (example-robot-data's names example_robot_descriptions).
    if name == pkg or os.path.basename(os.path.normpath(folder)) == pkg:
        return folder
    if name is not None or depth == 0:
        return None
    if any(os.path.exists(os.path.join(folder, f)) for f in ("CATKIN_IGNORE", "COLCON_IGNORE", "AMENT_IGNORE")):
        return None
    try:
        subs = sorted(e.path for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return None
    # A folder named pkg wins over a deeper match.
    direct = os.path.join(folder, pkg)
    for sub in [direct] * (direct in subs) + [s for s in subs if s != direct]:
        found = _crawl(sub, pkg, depth - 1)
        if found:
            return found
    return None


def find_package(pkg: str, urdf_path=None, package_dirs=()) -> tuple[str | None, str]:
    """(folder of the ROS package ``pkg`` or None, the route that found it or where it was
    searched). Routes in order: ``package_dirs`` (each a package or a folder of packages),
    ``ROS_PACKAGE_PATH``, ``AMENT_PREFIX_PATH`` (``<prefix>/share/<pkg>``), then the folders
    above ``urdf_path`` (a folder named ``pkg``, or holding it)."""
    for route, folders in (
        ("--package-dir", list(package_dirs)),
        ("ROS_PACKAGE_PATH", [d for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if d]),
    ):
        for d in folders:
            found = _crawl_cached(os.path.abspath(os.path.expanduser(str(d))), pkg, 4)
            if found:
                return found, f"{route} {d}"
    for prefix in [d for d in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if d]:
        share = os.path.join(prefix, "share", pkg)
        if os.path.isdir(share):
            return share, f"AMENT_PREFIX_PATH {prefix}"
    if urdf_path is not None:
        d = os.path.dirname(os.path.abspath(str(urdf_path)))
        while True:
            if os.path.basename(d) == pkg or _package_name(d) == pkg:
                return d, "the URDF's folders"
            if os.path.isdir(os.path.join(d, pkg)):
                return os.path.join(d, pkg), "the URDF's folders"
            if os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    searched = ["--package-dir"] * bool(package_dirs) + ["ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"]
    return None, ", ".join(searched) + (", the URDF's folders" if urdf_path is not None else "")


def resolve_mesh(filename: str, urdf_path, package_dirs=()) -> str:
    """The path of a URDF mesh ``filename`` (``package://pkg/rest``, ``file:///abs`` or a path
    relative to the URDF's folder). Raises MeshError (kind "package" or "file") naming what was
    searched."""
    here = os.path.dirname(os.path.abspath(str(urdf_path)))
    if filename.startswith("package://"):
        pkg, _, rest = filename[len("package://") :].partition("/")
        root, route = find_package(pkg, urdf_path, package_dirs)
        if root is None:
            raise MeshError(f"package {pkg!r} not found (searched {route})", "package")
        path = os.path.join(root, urllib.parse.unquote(rest))
        if not os.path.isfile(path):
            raise MeshError(f"package {pkg!r} found at {root} ({route}) has no {rest}", "file")
        return path
    if filename.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlparse(filename).path)
    else:
        path = os.path.join(here, os.path.expanduser(filename))
    if not os.path.isfile(path):
        raise MeshError(f"no file {path}", "file")
    return path


# ---- reading -------------------------------------------------------------------------------
def _stl_vertices(path) -> np.ndarray:
    """Vertices (M, 3) of a binary or ASCII STL file (the reader used without trimesh)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) >= 84:
        count = int(np.frombuffer(data[80:84], "<u4")[0])
        if len(data) == 84 + 50 * count:
            tri = np.frombuffer(data[84:], np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("x", "<u2")]))
            return tri["v"].reshape(-1, 3).astype(float)
    if data.lstrip().startswith(b"solid"):
        words = data.decode("ascii", "replace").split()
        verts = [words[i + 1 : i + 4] for i, w in enumerate(words) if w == "vertex"]
        if verts:
            return np.array(verts, dtype=float)
    raise MeshError("not an STL file", "read")


def _load(path, what: str, from_mesh, from_stl) -> np.ndarray:
    """``from_mesh(trimesh mesh)`` (or, without trimesh, ``from_stl(STL triangle vertices)`` of an
    STL file) as an array in metres, with the errors of [`read_mesh`][jaxid.model.meshes.read_mesh]; ``what`` names the
    array in the error of an empty or non-finite one."""
    path = str(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise MeshError(f"format {ext or path!r} not read (STL, OBJ, DAE are)", "format")
    try:
        import trimesh
    except ImportError:
        if ext == ".stl":
            try:
                return from_stl(_stl_vertices(path))
            except OSError as exc:
                raise MeshError(f"unreadable ({exc.strerror or exc})", "read") from None
        raise MeshError(f"no reader for {ext} without trimesh: {INSTALL}", "reader") from None
    if ext == ".dae":
        try:
            import collada  # noqa: F401  (trimesh's DAE reader)
        except ImportError:
            raise MeshError(f"no reader for .dae without pycollada: {INSTALL}", "reader") from None
    try:
        # force="mesh": a scene's geometries concatenated, each moved by its node's transform.
        mesh = trimesh.load(path, force="mesh", process=False)
        x = from_mesh(mesh)
        units = getattr(mesh, "units", None)
        if units and ext == ".dae":
            x = x * trimesh.units.unit_conversion(units, "meters")
    except Exception as exc:  # a reader's own error types vary by format and version
        raise MeshError(f"unreadable ({type(exc).__name__}: {exc})", "read") from None
    if not len(x) or not np.all(np.isfinite(x)):
        raise MeshError(f"no finite {what}", "read")
    return x


def read_mesh(path) -> np.ndarray:
    """Vertices (M, 3) of an STL, OBJ or DAE file, m (the file's units; every node with its
    transform). Raises MeshError: kind "format" for another ending, "reader" when trimesh (or,
    for DAE, pycollada) is not installed, "read" when the file cannot be parsed or is empty."""
    return _load(path, "vertices", lambda mesh: np.asarray(mesh.vertices, dtype=float).reshape(-1, 3), lambda v: v)


def read_triangles(path) -> np.ndarray:
    """Triangles (T, 3, 3), m, of an STL, OBJ or DAE file (as ``read_mesh``: the file's units,
    every node with its transform): the surface itself, for the mesh-point constraints
    (``jaxid.excitation.constraints.mesh_pairs``). Raises MeshError as ``read_mesh`` does."""
    return _load(
        path,
        "triangles",
        lambda mesh: np.asarray(mesh.triangles, dtype=float).reshape(-1, 3, 3),
        lambda v: v.reshape(-1, 3, 3),
    )


# ---- the capsule ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MeshFit:
    """How a capsule fits the mesh it replaces: ``link`` name, ``mesh`` (the URDF's file name),
    ``radius`` and ``length`` (segment, without the caps) m, ``volume_ratio`` = capsule volume /
    convex-hull volume (>= 1; inf for a flat mesh), ``excess`` m = the largest distance from a
    capsule point to the hull (their Hausdorff distance, the hull lying inside the capsule)."""

    link: str
    mesh: str
    radius: float
    length: float
    volume_ratio: float
    excess: float


def _hull(points):
    """(hull vertices (H, 3), hull volume m^3) of points (M, 3); all points and volume 0 for a
    flat or degenerate set."""
    from scipy.spatial import ConvexHull, QhullError

    pts = np.unique(np.asarray(points, dtype=float), axis=0)
    if len(pts) < 4:
        return pts, 0.0, None
    try:
        h = ConvexHull(pts)
    except (QhullError, ValueError):
        return pts, 0.0, None
    return pts[h.vertices], float(h.volume), h


def _min_circle(p, hint=()):
    """(centre (2,), radius, support) of the smallest circle around the 2-D points p (M, 2):
    Welzl's randomised incremental algorithm (de Berg et al. 4.7), numpy scanning for the next
    point outside the current circle. support: the indices into p of the 2 or 3 points that
    fix the circle; ``hint``, the support of a nearby problem, is tried first (Welzl's
    move-to-front: the answer is the same, the search shorter). Deterministic (a fixed shuffle)."""
    idx = np.arange(len(p))
    if len(p) > 8:  # the circle is the hull's: keep its vertices (scipy's qhull, fast)
        from scipy.spatial import ConvexHull, QhullError

        try:
            idx = ConvexHull(p).vertices
        except (QhullError, ValueError):
            pass
    idx = idx[np.random.default_rng(0).permutation(len(idx))]
    front = [h for h in hint if h in set(idx.tolist())]
    idx = np.concatenate([np.asarray(front, dtype=int), idx[~np.isin(idx, front)]])
    q = p[idx]
    slack = 1e-12 * (1.0 + np.max(np.abs(q)))

    def first_out(c, r, stop, start=0):
        d = np.hypot(*(q[start:stop] - c).T) > r + slack
        k = int(np.argmax(d)) if d.size else 0
        return start + k if d.size and d[k] else None

    def circle2(i, j):
        return 0.5 * (q[i] + q[j]), 0.5 * float(np.hypot(*(q[i] - q[j]))), (i, j)

    def circle3(i, j, k):
        x = q[i]
        (bx, by), (cx, cy) = q[j] - x, q[k] - x
        den = 2.0 * (bx * cy - by * cx)
        if abs(den) <= 1e-18 * (1 + (bx * bx + by * by) * (cx * cx + cy * cy)):  # collinear: the widest pair
            return max((circle2(i, j), circle2(i, k), circle2(j, k)), key=lambda cr: cr[1])
        b2, c2 = bx * bx + by * by, cx * cx + cy * cy
        u = np.array([cy * b2 - by * c2, bx * c2 - cx * b2]) / den
        return x + u, float(np.hypot(*u)), (i, j, k)

    c, r, sup = q[0].copy(), 0.0, (0,)
    i = first_out(c, r, len(q), 1)
    while i is not None:
        # The smallest circle of q[:i+1] with q[i] on its boundary.
        c, r, sup = q[i].copy(), 0.0, (i,)
        j = first_out(c, r, i)
        while j is not None:
            c, r, sup = circle2(i, j)
            k = first_out(c, r, j)
            while k is not None:
                c, r, sup = circle3(i, j, k)
                k = first_out(c, r, j, k + 1)
            j = first_out(c, r, i, j + 1)
        i = first_out(c, r, len(q), i + 1)
    return c, r, tuple(int(idx[s]) for s in sup)


def _basis(u):
    """Two unit vectors (3,), (3,) completing the unit u to an orthonormal frame."""
    e1 = np.cross(u, np.eye(3)[int(np.argmin(np.abs(u)))])
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(u, e1)


def _capsule_along(V, u, hint=None):
    """(volume, a, b, r) of the smallest capsule around the points V (H, 3) with axis
    direction u (unit): axis through the smallest circle of the projection, radius by a
    bounded scalar search, the segment the shortest whose caps cover every point. hint: a
    list holding the previous call's circle support, updated (a speed-up only)."""
    from scipy.optimize import minimize_scalar

    e1, e2 = _basis(u)
    c2, r0, support = _min_circle(V @ np.stack([e1, e2], axis=1), hint[0] if hint else ())
    if hint is not None:
        hint[:] = [support]
    t = V @ u
    rad2 = np.sum((V @ np.stack([e1, e2], axis=1) - c2) ** 2, axis=1)

    def ends(r):
        reach = np.sqrt(np.maximum(r * r - rad2, 0.0))
        return np.max(t - reach), np.min(t + reach)  # hi must reach every t - reach, lo every t + reach

    def volume(r):
        hi, lo = ends(r)
        return np.pi * r * r * max(hi - lo, 0.0) + 4.0 / 3.0 * np.pi * r**3

    mid = 0.5 * (t.min() + t.max())
    r1 = float(np.sqrt(np.max(rad2 + (t - mid) ** 2)))  # a sphere: the segment is a point
    best = min((r0, r1), key=volume)
    if r1 > r0 * (1 + 1e-9):
        res = minimize_scalar(volume, bounds=(r0, r1), method="bounded", options={"xatol": 1e-6 * r1})
        best = min((best, float(res.x)), key=volume)
    hi, lo = ends(best)
    if lo > hi:  # the caps overlap: any point between works, take the middle
        lo = hi = 0.5 * (lo + hi)
    centre = c2[0] * e1 + c2[1] * e2
    return volume(best), centre + lo * u, centre + hi * u, best


def fit_capsule(points) -> tuple[np.ndarray, np.ndarray, float]:
    """(a (3,), b (3,), r) of a tight capsule (segment [a, b], radius r, m) holding every point
    of ``points`` (M, 3), m: the smallest volume found from each principal axis by Nelder-Mead
    over the axis direction (module docstring). Every point lies within r of the segment (to
    1e-12 of the points' extent)."""
    from scipy.optimize import minimize

    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    if not len(pts) or not np.all(np.isfinite(pts)):
        raise ValueError("fit_capsule needs finite points (M, 3), M >= 1")
    V, _, _ = _hull(pts)
    centre = V.mean(axis=0)
    V = V - centre
    axes = np.linalg.svd(V, full_matrices=False)[2] if len(V) > 1 else np.eye(3)
    best = None
    scale = float(np.max(np.linalg.norm(V, axis=1))) or 1.0
    hint: list = []
    for u0 in axes:
        f1, f2 = _basis(u0)
        direction = lambda x: (u0 + x[0] * f1 + x[1] * f2) / np.sqrt(1.0 + x[0] ** 2 + x[1] ** 2)
        res = minimize(
            lambda x: _capsule_along(V, direction(x), hint)[0],
            np.zeros(2),
            method="Nelder-Mead",
            # stop at 1e-4 rad and a volume change of 1e-7 of the bounding sphere's
            options={"initial_simplex": [[0, 0], [0.15, 0], [0, 0.15]], "xatol": 1e-4, "fatol": 4e-7 * scale**3},
        )
        for x in (res.x, np.zeros(2)):  # the refined direction, or the principal axis if it was better
            cand = _capsule_along(V, direction(x))
            if best is None or cand[0] < best[0]:
                best = cand
    assert best is not None
    _, a, b, r = best
    # Rounding in the projections: grow r to hold every point exactly.
    r = max(r, float(np.max(_segment_distance(V, a, b))))
    return a + centre, b + centre, r


def _segment_distance(x, a, b):
    """Distances (M,) of the points x (M, 3) to the segment [a, b]."""
    d = b - a
    L2 = float(d @ d)
    s = np.clip((x - a) @ d / L2, 0.0, 1.0) if L2 > 0 else np.zeros(len(x))
    return np.linalg.norm(x - a - s[:, None] * d, axis=1)


def _fibonacci_sphere(n):
    """n unit vectors (n, 3) spread evenly over the sphere (the Fibonacci lattice)."""
    k = np.arange(n) + 0.5
    z = 1.0 - 2.0 * k / n
    phi = np.pi * (1.0 + 5**0.5) * k
    s = np.sqrt(1.0 - z * z)
    return np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1)


def capsule_error(points, a, b, r) -> tuple[float, float]:
    """(volume ratio, excess m) of the capsule (a, b, r) around ``points`` (M, 3), m: the
    capsule's volume over the points' convex-hull volume (inf for flat points), and the
    Hausdorff distance from the capsule to the hull, which for convex bodies is the largest
    difference of their support functions over unit directions (Schneider, "Convex Bodies:
    the Brunn-Minkowski Theory", 2nd ed. 2014, lemma 1.8.14): maximised over 4000 evenly
    spread directions and the hull's face normals, then by Nelder-Mead from the best one."""
    from scipy.optimize import minimize

    V, vol, h = _hull(points)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    cap = np.pi * r * r * float(np.linalg.norm(b - a)) + 4.0 / 3.0 * np.pi * r**3
    ratio = cap / vol if vol > 0 else float("inf")
    gap = lambda U: np.maximum(U @ a, U @ b) + r - np.max(V @ U.T, axis=0)
    U = _fibonacci_sphere(4000)
    if h is not None:
        U = np.concatenate([U, h.equations[:, :3]])
    u0 = U[int(np.argmax(gap(U)))]
    f1, f2 = _basis(u0)
    unit = lambda x: (u0 + x[0] * f1 + x[1] * f2) / np.sqrt(1.0 + x[0] ** 2 + x[1] ** 2)
    res = minimize(lambda x: -gap(unit(x)[None])[0], np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-6})
    return ratio, float(max(gap(u0[None])[0], -res.fun, 0.0))


@cache.memo  # about a second a mesh: kept on disk (the CLI's cache) by the vertices' value
def fit_mesh(points) -> tuple[np.ndarray, np.ndarray, float, float, float]:
    """(a (3,), b (3,), r m, volume ratio, excess m): [`fit_capsule`][jaxid.model.meshes.fit_capsule] of ``points`` (M, 3), m,
    and its [`capsule_error`][jaxid.model.meshes.capsule_error]."""
    a, b, r = fit_capsule(points)
    ratio, excess = capsule_error(points, a, b, r)
    return a, b, r, ratio, excess
