"""A robot description file with a Denavit-Hartenberg table (TOML or JSON): ``jaxid ... --dh FILE``.

The format (docs/your-robot.md), TOML shown; JSON has the same keys::

    name = "panda"
    convention = "modified"      # "standard" (Denavit-Hartenberg) or "modified" (Craig)
    angle_unit = "deg"           # of theta_offset, alpha, and revolute limits; default "rad"
    gravity = [0, 0, -9.81]      # m/s^2, base frame; the default
    joint_terms = ["fv", "fc"]   # optional; the command line's --joint-terms replaces them

    [[joint]]                    # one table per joint, base to tip
    name = "joint1"              # optional, default joint<i>
    type = "R"                   # "R" (theta is the variable) or "P" (d is); default "R"
    dh = [0, 0.333, 0, 0]        # theta_offset, d, a, alpha
    q_min = -166                 # optional limits: q_min, q_max, qd_max, qdd_max, tau_max
    q_max = 166                  # (angle_unit for revolute q, qd, qdd; m for prismatic; N m)
    mass = 4.97                  # optional inertials, kg; omit them for least squares
    com = [0.0039, 0.0021, -0.0476]               # m, in the DH link frame
    inertia = [0.70, -0.0001, 0.0068, 0.70, 0.019, 0.0092]  # ixx ixy ixz iyy iyz izz, kg m^2, about com

    [tool]                       # optional: the flange (payload) frame in the last DH frame
    xyz = [0, 0, 0.107]          # m
    rpy = [0, 0, -45]            # roll, pitch, yaw (angle_unit)

Inertials are all given or all omitted: without them the links are massless placeholders,
which plain least squares does not use (``Robot.from_dh``).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from jaxid.dynamics import spatial
from jaxid.model.robot import Robot

LIMITS = ("q_min", "q_max", "qd_max", "qdd_max", "tau_max")
JOINT_KEYS = {"name", "type", "dh", "mass", "com", "inertia", *LIMITS}
TOP_KEYS = {"name", "convention", "angle_unit", "gravity", "joint_terms", "joint", "tool"}


class DHFileError(ValueError):
    """A missing or malformed entry of a DH description file."""


def _read(path):
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"DH description file not found: {path}") from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return tomllib.loads(text.decode())
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise DHFileError(f"{path}: not valid {kind}: {exc}") from None


def _numbers(value, count, what, path):
    try:
        x = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise DHFileError(f"{path}: {what}: expected {count} numbers, got {value!r}") from None
    if x.size != count or not np.all(np.isfinite(x)):
        raise DHFileError(f"{path}: {what}: expected {count} finite numbers, got {value!r}")
    return x


def load(path, *, joint_terms=None) -> Robot:
    """A [`Robot`][jaxid.model.robot.Robot] from a DH description file (the format: the module docstring).

    joint_terms: enabled joint terms, replacing the file's ``joint_terms`` (None keeps them).
    """
    doc = _read(path)
    if not isinstance(doc, dict):
        raise DHFileError(f"{path}: expected a table of keys at the top level")
    unknown = sorted(set(doc) - TOP_KEYS)
    if unknown:
        raise DHFileError(f"{path}: unknown key(s) {unknown}; expected some of {sorted(TOP_KEYS)}")
    joints = doc.get("joint")
    if not isinstance(joints, list) or not joints or not all(isinstance(j, dict) for j in joints):
        raise DHFileError(f"{path}: no joints: give one [[joint]] table (TOML) or a 'joint' list (JSON) per joint")
    unit = doc.get("angle_unit", "rad")
    if unit not in ("rad", "deg"):
        raise DHFileError(f"{path}: angle_unit must be 'rad' or 'deg', got {unit!r}")
    scale = np.pi / 180 if unit == "deg" else 1.0
    rows, types, names = [], [], []
    limits: dict[str, list[float]] = {k: [] for k in LIMITS}
    inertials: dict[str, list] = {k: [] for k in ("mass", "com", "inertia")}
    for i, j in enumerate(joints):
        what = f"joint {i + 1}"
        unknown = sorted(set(j) - JOINT_KEYS)
        if unknown:
            raise DHFileError(f"{path}: {what}: unknown key(s) {unknown}; expected some of {sorted(JOINT_KEYS)}")
        if "dh" not in j:
            raise DHFileError(f"{path}: {what}: missing dh = [theta_offset, d, a, alpha]")
        kind = j.get("type", "R")
        if kind not in ("R", "P"):
            raise DHFileError(f"{path}: {what}: type must be 'R' or 'P', got {kind!r}")
        offset, d, a, alpha = _numbers(j["dh"], 4, f"{what} dh", path)
        rows.append([offset * scale, d, a, alpha * scale])
        types.append(kind)
        names.append(str(j.get("name", f"joint{i + 1}")))
        angular = scale if kind == "R" else 1.0
        for k in LIMITS:
            default = {"q_min": -np.inf}.get(k, np.inf)
            v = _numbers(j[k], 1, f"{what} {k}", path)[0] if k in j else default
            limits[k].append(v * (angular if k != "tau_max" else 1.0))
        for k, count in (("mass", 1), ("com", 3), ("inertia", 6)):
            inertials[k].append(_numbers(j[k], count, f"{what} {k}", path) if k in j else None)
    given = {k: [v is not None for v in vs] for k, vs in inertials.items()}
    if any(any(g) for g in given.values()) and not all(all(g) for g in given.values()):
        missing = [f"joint {i + 1} {k}" for k, g in given.items() for i, x in enumerate(g) if not x]
        raise DHFileError(
            f"{path}: inertials are given for some joints but not all (missing: {', '.join(missing[:4])}"
            f"{' ...' if len(missing) > 4 else ''}); give mass, com and inertia for every joint, or none"
        )
    kw = {}
    if all(given["mass"]):
        sym = lambda v: np.array([[v[0], v[1], v[2]], [v[1], v[3], v[4]], [v[2], v[4], v[5]]])
        kw = dict(
            masses=np.concatenate(inertials["mass"]),
            coms=np.stack(inertials["com"]),
            inertias=np.stack([sym(v) for v in inertials["inertia"]]),
        )
    terms = doc.get("joint_terms", ()) if joint_terms is None else joint_terms
    gravity = _numbers(doc.get("gravity", [0.0, 0.0, -9.81]), 3, "gravity", path)
    try:
        robot = Robot.from_dh(
            np.array(rows),
            doc.get("convention", "standard"),
            joint_types=tuple(types),
            limits={k: np.array(v) for k, v in limits.items()},
            names=tuple(names),
            joint_terms=tuple(terms),
            gravity=gravity,
            name=str(doc.get("name", Path(path).stem)),
            **kw,
        )
    except ValueError as exc:
        raise DHFileError(f"{path}: {exc}") from None
    tool = doc.get("tool")
    if tool is not None:
        if not isinstance(tool, dict) or set(tool) - {"xyz", "rpy"}:
            raise DHFileError(f"{path}: [tool] takes xyz (m) and rpy ({unit}), got {tool!r}")
        xyz = _numbers(tool.get("xyz", [0, 0, 0]), 3, "tool xyz", path)
        rpy = _numbers(tool.get("rpy", [0, 0, 0]), 3, "tool rpy", path) * scale
        T = spatial.homogeneous(spatial.rpy(*jnp.asarray(rpy)), jnp.asarray(xyz))
        robot = eqx.tree_at(lambda r: r.tip, robot, robot.tip @ T)
    return robot
