"""Named verdicts on an identification's bodies ([`verdict_checks`][jaxid.workflow.verdicts.verdict_checks]), instead of one word.

Three checks, each with its numbers, stored in params.json (``physics.checks``) and printed
([`verdict_lines`][jaxid.workflow.verdicts.verdict_lines]):

- ``consistent``: every body's pseudo-inertia is positive semi-definite (Wensing, Kim and
  Slotine 2017) and every friction coefficient (viscous, Coulomb, Stribeck) is >= 0.
- ``converged``: the consistent fit converged (not judged where none was run).
- ``plausible``: per link, the mass within a factor of the nominal's ([`MASS_FACTOR`][jaxid.workflow.verdicts.MASS_FACTOR]), or,
  for a placeholder nominal ([`is_placeholder`][jaxid.workflow.verdicts.is_placeholder]), below the link's geometry-based bound
  ([`MAX_DENSITY`][jaxid.workflow.verdicts.MAX_DENSITY] times the volume of its capsules); the centre of mass inside the link's
  geometry (its capsules, grown by [`COM_MARGIN`][jaxid.workflow.verdicts.COM_MARGIN], and by as much as the nominal centre of
  mass lies outside them); no degenerate body (the smallest
  principal moment about the centre of mass at least [`DEGENERATE_FRACTION`][jaxid.workflow.verdicts.DEGENERATE_FRACTION] of m size^2,
  size the largest extent of the link's geometry); no body on the boundary of one of its
  constraints (pseudo-inertia, bounding ellipsoid, mass bounds; [`BOUNDARY_SLACK`][jaxid.workflow.verdicts.BOUNDARY_SLACK])
  unless the data put it there (the least-squares estimate beyond that boundary by
  [`BOUNDARY_Z`][jaxid.workflow.verdicts.BOUNDARY_Z] std, the other parameters free); and the total mass within
  [`TOTAL_MASS_FACTOR`][jaxid.workflow.verdicts.TOTAL_MASS_FACTOR] of the nominal total (a placeholder's: below the sum of the bounds).

The verdict is "plausible" only when every check passes ([`overall`][jaxid.workflow.verdicts.overall]). The link's geometry
is its collision (else visual) capsules from the URDF the model was read from
(``jaxid.model.geometry.from_urdf``), the built-in UR5's capsules, or else the kinematic skeleton
(``jaxid.model.geometry.skeleton``, radius [`SKELETON_RADIUS`][jaxid.workflow.verdicts.SKELETON_RADIUS] or
[`SKELETON_RADIUS_FRACTION`][jaxid.workflow.verdicts.SKELETON_RADIUS_FRACTION]
of the link's length), and every check says which.
"""

from __future__ import annotations

import math
import os
import re
import warnings

import numpy as np

from jaxid.identification.consistent_problem import ellipsoid_matrix
from jaxid.model import inertia
from jaxid.workflow.records import least_squares_cov

#: Factor within which an identified link's mass must lie of its nominal (CAD) mass: [1/3, 3]
#: times it. A CAD mass is seldom 3x off the real link's; a fit that is has taken mass from the
#: data's blind directions (the KUKA LWR4+ link 2 of 314 kg against 2.7 kg).
MASS_FACTOR = 3.0
#: Factor within which the identified total mass must lie of the nominal total: [1/2, 2] times it.
TOTAL_MASS_FACTOR = 2.0
#: Largest mean density of a link, kg/m^3 (solid steel, 7850 kg/m^3, rounded up): a link's mass
#: is at most this times the volume of its capsules (which hold the whole link). Used for a
#: placeholder nominal, whose masses say nothing.
MAX_DENSITY = 8000.0
#: How far the centre of mass may lie outside the link's capsules, m (the capsules are fitted to
#: the link's meshes or primitives; a tool or cable carried by the link may sit a little beyond).
COM_MARGIN = 0.05
#: Smallest principal moment of inertia about the centre of mass, as a fraction of m size^2
#: (size: the largest extent of the link's geometry), below which a body is degenerate (a point
#: mass or a rod of no thickness). A solid cylinder 0.12 m across and 0.5 m long has 0.007; a
#: body collapsed onto a bound has ~1e-8. Where the nominal body is itself thinner (a thin-rod
#: model), the bound is [`NOMINAL_SHARE`][jaxid.workflow.verdicts.NOMINAL_SHARE] of the nominal's fraction instead.
DEGENERATE_FRACTION = 1e-3
#: Share of the nominal body's own fraction (smallest principal moment / m size^2) that the
#: identified body must keep where the nominal is below [`DEGENERATE_FRACTION`][jaxid.workflow.verdicts.DEGENERATE_FRACTION].
NOMINAL_SHARE = 0.1
#: Radius of the skeleton capsules of a link with no geometry of its own, m: the largest of this
#: and [`SKELETON_RADIUS_FRACTION`][jaxid.workflow.verdicts.SKELETON_RADIUS_FRACTION] of the link's length (joint to child joint).
SKELETON_RADIUS = 0.05
#: See [`SKELETON_RADIUS`][jaxid.workflow.verdicts.SKELETON_RADIUS].
SKELETON_RADIUS_FRACTION = 0.25

#: Relative slack below which a body is on the boundary of one of its constraints: the smallest
#: eigenvalue of its second moment about the centre of mass over m size^2 (the pseudo-inertia's
#: semi-definite boundary: all mass on a plane, line or point), ``tr(Q J) / m`` of its bounding
#: ellipsoid (all mass on the ellipsoid's shell; a uniform solid ellipsoid has 0.4), or the mass's
#: distance to a mass bound over the mass. An interior-point fit leaves an active constraint's
#: slack at ~1e-8; a body inside has 1e-3 or more.
BOUNDARY_SLACK = 1e-4
#: Score (in standard deviations of the least-squares estimate) above which the data put a body on
#: its boundary: the least-squares estimate lies beyond the boundary, along the direction from the
#: body into its feasible set, by more than this many standard deviations, with every other
#: parameter free to compensate (a profile score test).
BOUNDARY_Z = 2.0

#: The check names, in the order printed.
CHECKS = ("consistent", "converged", "plausible")


# ------------------------------------------------------------------------------ geometry
def link_geometry(robot, model: dict | None = None, capsules=None) -> tuple[list, str, list, tuple]:
    """(per link a list of capsules (a (3,), b (3,), r) in the link frame, m; where they came from;
    per link its name: the capsules' (a URDF's link names) where it has some, else the joint's;
    the indices of the links on their skeleton capsules, which have no geometry of their own).

    capsules: ``jaxid.model.geometry.Capsules`` to use; else those of ``model``'s URDF (a
    params.json ``model`` dict with ``urdf`` and ``tip_link``) or the built-in UR5's; a link
    with none gets its skeleton capsule."""
    from jaxid.model import geometry

    source = None
    if capsules is None and model is not None:
        if model.get("urdf"):
            capsules, source = _urdf_capsules(model["urdf"], model.get("tip_link"), robot)
        elif model.get("builtin") == "ur5":
            capsules, source = geometry.ur5(), "the built-in UR5 capsules"
    if capsules is not None and source is None:
        source = "the given capsules"
    links: list[list] = [[] for _ in range(robot.n_joints)]
    names = list(robot.names)
    if capsules is not None:
        for k, i in enumerate(np.asarray(capsules.link)):
            if 0 <= i < robot.n_joints:
                if not links[i]:
                    names[i] = capsules.names[k]
                links[i].append(
                    (np.asarray(capsules.a[k], float), np.asarray(capsules.b[k], float), float(capsules.radius[k]))
                )
    skeletal = [i for i in range(robot.n_joints) if not links[i]]
    for i in skeletal:
        ends = geometry._skeleton_segments(robot, i)
        length = max(float(np.linalg.norm(e)) for e in ends)
        r = max(SKELETON_RADIUS, SKELETON_RADIUS_FRACTION * length)
        links[i] = [(np.zeros(3), np.asarray(e, float), r) for e in ends]
    if source is None:
        source = f"the kinematic skeleton (capsules of radius >= {SKELETON_RADIUS:g} m)"
    elif skeletal:
        source += f"; skeleton for links {', '.join(str(i + 1) for i in skeletal)}"
    return links, source, names, tuple(skeletal)


#: The capsules of URDFs already read, by (path, modification time, tip link, the chain's joints):
#: an identification checked again (cross-validation, the prior-weight choice) reads its meshes once.
_URDF_CAPSULES: dict = {}


def _urdf_capsules(path, tip_link, robot):
    """(capsules of the URDF at ``path`` on ``robot``'s chain, where they came from), or (None, None)
    when the file cannot be read; cached in `_URDF_CAPSULES`."""
    from jaxid.model import geometry

    try:
        key = (str(path), os.stat(path).st_mtime_ns, tip_link, tuple(robot.names))
    except OSError:
        return None, None
    if key not in _URDF_CAPSULES:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                capsules = geometry.from_urdf(path, robot, tip_link=tip_link, drop_always=False)
            fell_back = any("skeleton capsules" in str(w.message) for w in caught)
            source = "the URDF's collision/visual geometry" + (" (skeleton where unreadable)" if fell_back else "")
            _URDF_CAPSULES[key] = (capsules, source)
        except (OSError, ValueError):
            _URDF_CAPSULES[key] = (None, None)
    return _URDF_CAPSULES[key]


def _point_distance(c, caps) -> float:
    """Distance from point c to the union of capsules (0 inside), m."""
    best = math.inf
    for a, b, r in caps:
        d = b - a
        t = 0.0 if not d @ d > 0 else float(np.clip((c - a) @ d / (d @ d), 0.0, 1.0))
        best = min(best, max(0.0, float(np.linalg.norm(c - (a + t * d))) - r))
    return best


def _volume(caps) -> float:
    return sum(math.pi * r * r * float(np.linalg.norm(b - a)) + 4 / 3 * math.pi * r**3 for a, b, r in caps)


def _size(caps) -> float:
    """Largest extent of the capsules' bounding box, m."""
    lo = np.min([np.minimum(a, b) - r for a, b, r in caps], axis=0)
    hi = np.max([np.maximum(a, b) + r for a, b, r in caps], axis=0)
    return float(np.max(hi - lo))


# ------------------------------------------------------------------------------ bodies
def _bodies(pi):
    """(m (n,), c (n, 3), I_c (n, 3, 3), smallest eigenvalue of the pseudo-inertia (n,)) of
    standard inertial parameters (n, 10) (m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    pi = np.asarray(pi, dtype=float)
    m = pi[:, 0]
    h = pi[:, 1:4]
    I = inertia.inertia_matrix(pi)  # numpy in, numpy out
    c = h / np.where(m > 0, m, 1.0)[:, None]
    eye = np.eye(3)
    I_c = I - m[:, None, None] * (np.einsum("ni,ni->n", c, c)[:, None, None] * eye - np.einsum("ni,nj->nij", c, c))
    J = np.asarray(inertia.pseudo_inertias(pi))  # the one definition of consistency
    return m, c, I_c, np.linalg.eigvalsh(J)[:, 0]


def _record_bounds(record, j):
    """(mass (lo, hi) or None per side, ellipsoid (centre, axes) or None) of link j in a
    ``Consistency.bounds`` record (``jaxid.workflow.consistency.bounds_record``)."""
    if not record:
        return (None, None), None
    lo, hi = (record.get("mass_kg") or [[None, None]] * (j + 1))[j]
    centres, axes = record.get("ellipsoid_center_m") or [], record.get("ellipsoid_axes_m") or []
    ell = (np.asarray(centres[j], float), np.asarray(axes[j], float)) if j < len(centres) and centres[j] else None
    return (lo, hi), ell


def _slacks(pi, size, record, j) -> dict:
    """Relative slack of each constraint of body j ([`BOUNDARY_SLACK`][jaxid.workflow.verdicts.BOUNDARY_SLACK])."""
    J, m = np.asarray(inertia.pseudo_inertias(pi)), pi[0]
    c = pi[1:4] / m
    out = {"pseudo-inertia": float(np.linalg.eigvalsh(J[:3, :3] - m * np.outer(c, c))[0] / (m * size**2))}
    (lo, hi), ell = _record_bounds(record, j)
    if ell is not None:
        out["bounding ellipsoid"] = float(np.trace(ellipsoid_matrix(*ell) @ J) / m)
    if lo is not None and lo > 0:
        out["mass lower bound"] = float((m - lo) / m)
    if hi is not None:
        out["mass upper bound"] = float((hi - m) / m)
    return out


def _inside(pi, size, record, j) -> np.ndarray:
    """A body strictly inside body j's constraints (10,): its mass (moved off a mass bound) as a
    uniform solid filling its bounding ellipsoid, else as a ball of radius size / 10 at its centre
    of mass. The direction from the estimate to it points into the feasible set."""
    m = pi[0]
    (lo, hi), ell = _record_bounds(record, j)
    if lo is not None and hi is not None:
        m = float(np.clip(m, lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo)))
    elif lo is not None:
        m = max(m, 1.1 * lo)
    elif hi is not None:
        m = min(m, hi / 1.1)
    if ell is not None:
        c, Sigma_c = ell[0], ell[1] @ ell[1].T / 5  # second moment of a uniform solid ellipsoid
    else:
        c, Sigma_c = pi[1:4] / pi[0], (size / 10) ** 2 / 5 * np.eye(3)
    J = np.zeros((4, 4))
    J[:3, :3], J[:3, 3], J[3, :3], J[3, 3] = m * (Sigma_c + np.outer(c, c)), m * c, m * c, m
    return np.asarray(inertia.from_pseudo_inertias(J))


def _ls_data(params):
    """(B (b, p) standard -> base, whitening L^-1 (b, b) of the least-squares covariance, the
    least-squares base estimate (b,)) of a consistent fit, or None where not recorded."""
    c, base, cov = getattr(params, "consistency", None), getattr(params, "base", None), getattr(params, "cov", None)
    if c is None or base is None or cov is None or not getattr(c, "estimate_ls", None):
        return None
    C = np.asarray(least_squares_cov(params), dtype=float)
    ls = np.asarray(c.estimate_ls, dtype=float)
    B = base.matrix()
    w, V = np.linalg.eigh((C + C.T) / 2)
    if not (np.all(np.isfinite(w)) and w[-1] > 0):
        return None
    keep = w > w[-1] * 1e-14
    return B, (V[:, keep] / np.sqrt(w[keep])).T, ls


def _boundary_score(data, standard, j, target) -> float:
    """The profile score of body j on its boundary: the least-squares estimate's distance beyond
    it along ``target - body`` (into the feasible set), in standard deviations, every other
    parameter free ([`BOUNDARY_Z`][jaxid.workflow.verdicts.BOUNDARY_Z]); 0 where the data do not see that direction."""
    B, Wt, ls = data
    d = np.zeros(B.shape[1])
    d[10 * j : 10 * j + 10] = target - standard[10 * j : 10 * j + 10]
    r, v = Wt @ (B @ standard - ls), Wt @ (B @ d)
    others = np.ones(B.shape[1], bool)
    others[10 * j : 10 * j + 10] = False
    U = Wt @ B[:, others]
    v_perp = v - U @ np.linalg.lstsq(U, v, rcond=None)[0]
    norm = float(np.linalg.norm(v_perp))
    return float(r @ v_perp / norm) if norm > 1e-9 * max(float(np.linalg.norm(v)), 1e-300) else 0.0


def is_placeholder(robot) -> bool:
    """Whether the model's inertials are placeholders: every link the same mass, and the inertias
    all zero or all identical (a description written without CAD data, e.g. 2 kg per link)."""
    n = robot.n_joints
    pi = np.asarray(robot.parameter_vector(), dtype=float)[: 10 * n].reshape(n, 10)
    m, inertias = pi[:, 0], pi[:, 4:]
    same_mass = np.allclose(m, m[0], rtol=1e-9, atol=0.0)
    zero = np.allclose(inertias, 0.0, atol=1e-12)
    same = np.allclose(inertias, inertias[0], rtol=1e-9, atol=1e-15)
    return bool(n > 1 and same_mass and (zero or same))


def _label(names, j: int) -> str:
    return f"link {j + 1} ({names[j]})"


def _factor(x: float) -> str:
    return f"{x:.3g}x" if x >= 1 else f"1/{1 / x:.3g}x" if x > 0 else f"{x:.3g}x"


def plausible_check(
    robot,
    standard,
    *,
    model: dict | None = None,
    capsules=None,
    geometry=None,
    body_bounds: dict | None = None,
    data=None,
) -> dict:
    """The ``plausible`` check of standard parameters (p,) of ``robot`` (see the module docstring):
    ``{"name", "passed", "detail", "failures" (one line per failing link or total), "nominal"
    ("CAD" or "placeholder"), "geometry" (where the link geometry came from), "links" (per link
    its numbers and which sub-checks pass), "total_mass"}``. geometry: [`link_geometry`][jaxid.workflow.verdicts.link_geometry]'s
    result, where already computed (else from ``model`` or ``capsules``). body_bounds: the consistent
    fit's body bounds (``Consistency.bounds``), for the boundary sub-check; data: the least-squares
    fit it started from (``_ls_data``), which says whether the data put a body on its boundary
    (None: a body on its boundary fails, nothing tells it was the data)."""
    n = robot.n_joints
    theta = np.asarray(standard, dtype=float)
    m, c, I_c, _ = _bodies(np.asarray(standard, dtype=float)[: 10 * n].reshape(n, 10))
    nominal = np.asarray(robot.parameter_vector(), dtype=float)
    m0, c0, I0, _ = _bodies(nominal[: 10 * n].reshape(n, 10))
    placeholder = is_placeholder(robot)
    caps, source, names, _ = link_geometry(robot, model, capsules) if geometry is None else geometry
    links, failures = [], []
    bounds = []
    for j in range(n):
        size, volume = _size(caps[j]), _volume(caps[j])
        bound = MAX_DENSITY * volume
        bounds.append(bound)
        row: dict = {"link": j + 1, "name": names[j], "mass": float(m[j]), "size_m": size}
        if m0[j] <= 0 and abs(m[j]) <= 1e-12 and not placeholder:  # massless, as the nominal: no body to judge
            links.append({**row, "massless": True, "mass_ok": True, "com_ok": True, "body_ok": True})
            continue
        # mass
        if not placeholder and m0[j] > 0:
            ratio = m[j] / m0[j]
            ok = 1 / MASS_FACTOR <= ratio <= MASS_FACTOR
            row.update(nominal_mass=float(m0[j]), mass_ratio=float(ratio), mass_ok=bool(ok))
            if not ok:
                failures.append(
                    f"{_label(names, j)}: mass {m[j]:.3g} kg is {_factor(ratio)} the nominal {m0[j]:.3g} kg "
                    f"(allowed 1/{MASS_FACTOR:g}x to {MASS_FACTOR:g}x)"
                )
        else:
            ok = 0 < m[j] <= bound
            row.update(mass_bound=float(bound), mass_ok=bool(ok))
            if not ok:
                failures.append(
                    f"{_label(names, j)}: mass {m[j]:.3g} kg is above its geometry bound {bound:.3g} kg "
                    f"({MAX_DENSITY:g} kg/m^3 x {volume:.3g} m^3 of capsules; "
                    + ("the nominal is a placeholder)" if placeholder else "its nominal mass is 0)")
                    if m[j] > 0
                    else f"{_label(names, j)}: mass {m[j]:.3g} kg is not positive"
                )
        # centre of mass
        if m[j] > 0:
            dist = _point_distance(c[j], caps[j])
            # a nominal (CAD) centre of mass outside the geometry (a skeleton too thin) widens the margin by as much
            own = _point_distance(c0[j], caps[j]) if not placeholder and m0[j] > 0 else 0.0
            allowed = COM_MARGIN + own
            ok = dist <= allowed
            row.update(com=c[j].tolist(), com_outside_m=float(dist), com_allowed_m=float(allowed), com_ok=bool(ok))
            if not ok:
                failures.append(
                    f"{_label(names, j)}: centre of mass {dist:.3g} m outside the link's geometry "
                    f"(at {np.linalg.norm(c[j]):.3g} m from the joint; allowed margin {COM_MARGIN:g} m"
                    + (f" + the nominal's own {own:.3g} m outside)" if own > 0 else ")")
                )
            # degenerate body
            smallest = float(np.linalg.eigvalsh(I_c[j])[0])
            frac = float(smallest / (m[j] * size**2))
            need = DEGENERATE_FRACTION
            if m0[j] > 0 and np.abs(I0[j]).max() > 1e-12:  # not a point-mass placeholder
                nominal_frac = float(np.linalg.eigvalsh(I0[j])[0]) / (m0[j] * size**2)
                need = min(need, NOMINAL_SHARE * max(nominal_frac, 0.0))
            ok = frac >= need
            row.update(smallest_moment=smallest, moment_fraction=frac, moment_fraction_min=need, body_ok=bool(ok))
            if not ok:
                failures.append(
                    f"{_label(names, j)}: degenerate body: smallest principal moment {smallest:.3g} kg m^2 is "
                    f"{frac:.2g} of m size^2 (size {size:.3g} m; at least {need:.2g})"
                )
            # on a constraint's boundary, and not because the data put it there
            slacks = _slacks(theta[10 * j : 10 * j + 10], size, body_bounds, j)
            active = [k for k, v in slacks.items() if v < BOUNDARY_SLACK]
            if m0[j] > 0 and np.abs(I0[j]).max() > 1e-12:  # a thin-rod (or plate) model: on that boundary itself
                if _slacks(nominal[10 * j : 10 * j + 10], size, None, j)["pseudo-inertia"] < BOUNDARY_SLACK:
                    active = [k for k in active if k != "pseudo-inertia"]
            row.update(boundary_slack=slacks, boundary=active, boundary_ok=True)
            if active:
                target = _inside(theta[10 * j : 10 * j + 10], size, body_bounds, j)
                z = None if data is None else _boundary_score(data, theta, j, target)
                row.update(boundary_z=z, boundary_ok=z is not None and z >= BOUNDARY_Z)
                if not row["boundary_ok"]:
                    where = ", ".join(f"{k} (slack {slacks[k]:.2g})" for k in active)
                    why = (
                        "no least-squares estimate is recorded to tell whether the data put it there"
                        if z is None
                        else "the data do not put it there: the least-squares estimate lies "
                        + (f"{z:.2g} std beyond it" if z > 0 else f"{-z:.2g} std inside it" if z < 0 else "on it")
                        + f" (at least {BOUNDARY_Z:g} std beyond needed)"
                    )
                    failures.append(f"{_label(names, j)}: on the boundary of its {where}; {why}")
        else:
            row.update(com_ok=False, body_ok=False)
        links.append(row)
    total = float(np.sum(m))
    if placeholder or not np.sum(m0) > 0:
        hi = float(np.sum(bounds))
        ok = 0 < total <= hi
        total_doc = {"mass": total, "bound": hi, "ok": bool(ok)}
        if not ok:
            failures.append(f"total mass {total:.3g} kg is above the sum of the links' geometry bounds {hi:.3g} kg")
    else:
        ratio = total / float(np.sum(m0))
        ok = 1 / TOTAL_MASS_FACTOR <= ratio <= TOTAL_MASS_FACTOR
        total_doc = {"mass": total, "nominal": float(np.sum(m0)), "ratio": float(ratio), "ok": bool(ok)}
        if not ok:
            failures.append(
                f"total mass {total:.3g} kg is {_factor(ratio)} the nominal {np.sum(m0):.3g} kg "
                f"(allowed 1/{TOTAL_MASS_FACTOR:g}x to {TOTAL_MASS_FACTOR:g}x)"
            )
    nominal_kind = "placeholder" if placeholder else "CAD"
    if placeholder:
        mass_rule = f"masses at most {MAX_DENSITY:g} kg/m^3 x the link's capsule volume (placeholder nominal)"
    else:
        ratios = [r["mass_ratio"] for r in links if "mass_ratio" in r]
        span = f"{_factor(min(ratios))} to {_factor(max(ratios))} the nominal, " if ratios else ""
        mass_rule = f"masses {span}allowed 1/{MASS_FACTOR:g}x to {MASS_FACTOR:g}x"
    detail = (
        f"{mass_rule}; centre of mass within {COM_MARGIN:g} m of the link's geometry; smallest principal "
        f"moment >= {DEGENERATE_FRACTION:g} m size^2; no body on a constraint's boundary unless the data put "
        f"it there ({BOUNDARY_Z:g} std); total mass {total:.3g} kg; geometry: {source}"
    )
    return {
        "name": "plausible",
        "passed": not failures,
        "detail": detail,
        "failures": failures,
        "nominal": nominal_kind,
        "geometry": source,
        "links": links,
        "total_mass": total_doc,
    }


def consistent_check(robot, params, names=None) -> dict:
    """The ``consistent`` check: every body's pseudo-inertia >= 0 and friction >= 0 in the standard
    parameters written (not judged, ``passed`` None, where there are none). names: the links'
    (default the joints')."""
    if params.standard is None:
        return {
            "name": "consistent",
            "passed": None,
            "detail": "not judged: base parameters only, no bodies (identify with --consistent for them)",
            "failures": [],
        }
    n, names = robot.n_joints, robot.names if names is None else names
    theta = np.asarray(params.standard, dtype=float)
    m, _, _, low = _bodies(theta[: 10 * n].reshape(n, 10))
    failures = [
        f"{_label(names, j)}: pseudo-inertia's smallest eigenvalue {low[j]:.3g} < 0 (mass {m[j]:.3g} kg)"
        for j in range(n)
        if not (low[j] >= -1e-12 * max(1.0, abs(m[j])) and m[j] >= 0)
    ]
    friction = []
    for name, v in zip(params.parameter_names[10 * n :], theta[10 * n :]):
        kind = re.fullmatch(r"([A-Za-z_]+?)(?:_m)?(\d+)", name)
        if kind and kind[1] in ("fv", "fc", "fs"):
            friction.append((name, float(v)))
            if v < 0:
                failures.append(f"{name} = {v:.4g} < 0: negative friction")
    j = int(np.argmin(low))
    detail = f"every body's pseudo-inertia >= 0 (smallest eigenvalue {low[j]:.3g}, {_label(names, j)})"
    if friction:
        name, v = min(friction, key=lambda x: x[1])
        detail += f"; friction >= 0 (smallest {name} = {v:.4g})"
    return {"name": "consistent", "passed": not failures, "detail": detail, "failures": failures}


def converged_check(params) -> dict:
    """The ``converged`` check of the consistent fit (not judged, ``passed`` None, where none ran)."""
    c = params.consistency
    if c is None:
        return {"name": "converged", "passed": None, "detail": "not judged: no consistent fit was run", "failures": []}
    detail = f"the consistent fit, {c.steps} Newton steps" + (
        f", gradient norm {c.grad_norm:.3g}" if c.grad_norm is not None else ""
    )
    failures = [] if c.converged else [f"the consistent fit did not converge in {c.steps} steps"]
    return {"name": "converged", "passed": bool(c.converged), "detail": detail, "failures": failures}


def verdict_checks(robot, params, *, capsules=None) -> list[dict]:
    """The named checks ([`CHECKS`][jaxid.workflow.verdicts.CHECKS]) of ``params`` (a ``jaxid.workflow.Params``) for ``robot``:
    plain JSON values, each ``{"name", "passed" (True, False, or None: not judged), "detail",
    "failures"}``; ``plausible`` has its per-link numbers ([`plausible_check`][jaxid.workflow.verdicts.plausible_check]). capsules:
    the link geometry (default: from ``params.model``'s URDF, else the skeleton)."""
    geometry = None if params.standard is None else link_geometry(robot, params.model, capsules)
    checks = [consistent_check(robot, params, None if geometry is None else geometry[2]), converged_check(params)]
    if geometry is None:
        checks.append(
            {
                "name": "plausible",
                "passed": None,
                "detail": "not judged: base parameters only, no bodies (identify with --consistent for them)",
                "failures": [],
            }
        )
    else:
        record = getattr(params.consistency, "bounds", None) if params.consistency is not None else None
        checks.append(
            plausible_check(robot, params.standard, geometry=geometry, body_bounds=record, data=_ls_data(params))
        )
    return checks


def overall(checks) -> bool | None:
    """Whether the result is plausible: True when ``consistent`` and ``plausible`` pass and
    ``converged`` passes or was not judged (no consistent fit); False when a check failed; None
    when nothing failed but a check that decides was not judged (least squares: no bodies), so that
    params.json says ``null`` where the printed verdict says "not judged", not ``false``."""
    by = {c["name"]: c["passed"] for c in checks}
    if by.get("consistent") is True and by.get("plausible") is True and by.get("converged") is not False:
        return True
    return False if False in by.values() else None


def verdict_lines(checks, indent: str = "  ") -> list[str]:
    """The checks in words: one line per check (its name, pass / FAIL / not judged, its numbers),
    each failing link or total on a line of its own below, and the verdict last: "plausible" only
    when every check passes ([`overall`][jaxid.workflow.verdicts.overall]), else "not plausible" with the failing checks named."""
    if not checks:
        return []
    word = {True: "pass", False: "FAIL", None: "not judged"}
    lines = []
    for c in checks:
        detail = c["detail"].removeprefix("not judged: ") if c["passed"] is None else c["detail"]
        lines.append(f"{indent}{c['name']}: {word[c['passed']]} ({detail})")
        lines += [f"{indent}  {f}" for f in c.get("failures", [])]
    failing = [c["name"] for c in checks if c["passed"] is False]
    unjudged = [c["name"] for c in checks if c["passed"] is None and c["name"] != "converged"]
    if overall(checks):
        lines.append(f"{indent}verdict: plausible (every check passed)")
    elif failing:
        lines.append(f"{indent}verdict: not plausible (failed: {', '.join(failing)})")
    else:
        lines.append(f"{indent}verdict: not judged ({', '.join(unjudged)} not judged)")
    return lines


def summary_line(checks) -> str:
    """The checks in one line, without their numbers: ``consistent: pass, converged: pass,
    plausible: FAIL; verdict: not plausible`` (``jaxid validate`` on the params.json it reads)."""
    word = {True: "pass", False: "FAIL", None: "not judged"}
    verdict = verdict_lines(checks, indent="")[-1].removeprefix("verdict: ").split(" (")[0]
    return ", ".join(f"{c['name']}: {word[c['passed']]}" for c in checks) + f"; verdict: {verdict}"
