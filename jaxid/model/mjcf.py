"""MJCF (MuJoCo XML) reader, with xml.etree: no ``mujoco`` install is needed to read a model.

Read without MuJoCo because identification needs only the kinematic tree, the inertials and
the joints' friction, which the XML states directly; compiling it through ``mujoco`` would
add a large binary dependency for that, and MuJoCo replaces missing inertials by ones
computed from geoms, which jaxid does not (a body with no ``<inertial>`` is massless here,
as a URDF link without one: fine for least squares, whose regressor does not use them).

Supported (MuJoCo XML reference, mujoco.readthedocs.io/en/stable/XMLreference.html):
``<compiler angle eulerseq>``; ``<option gravity>``; ``<default>`` classes (nested, with
``class`` and ``childclass``) for joints and sites; bodies with ``pos`` and any orientation
(``quat``, ``axisangle``, ``euler``, ``xyaxes``, ``zaxis``); ``<inertial pos (orientation)
mass diaginertia|fullinertia>``; ``hinge`` and ``slide`` joints (several per body, each at
its ``pos``, measured from ``ref``) with ``axis range damping frictionloss armature``, read
as the nominal ``fv``, ``fc``, ``ia`` when those joint terms are enabled; bodies without a
joint welded to their parent (merged); ``<equality><joint polycoef="c0 c1 0 0 0">`` as a
coupled (mimic) joint ``q1 = c1 q2 + c0``; ``<site>`` as the tool flange.

Rejected, naming the element: free and ball joints (floating bases are not supported yet),
tendons, other equality constraints (closed loops), ``<include>`` and ``<frame>``.

:func:`write_back` puts identified parameters into a copy of the file (body ``<inertial>``,
joint ``damping frictionloss armature``; everything else kept), as
:func:`jaxid.model.urdf.write_back` does for a URDF.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from jaxid.friction.models import JOINT_TERMS
from jaxid.model import inertia
from jaxid.model.urdf import (
    _from_mass_com_inertia,
    _transform,
    element_inertia,
    flange,
    identified_split,
    numbers,
    relocated,
)

JOINT_KINDS = {"hinge": "R", "slide": "P"}
JOINT_DEFAULTS = {"type": "hinge", "axis": "0 0 1", "pos": "0 0 0", "ref": "0"}
#: Joint terms with an MJCF joint attribute, read as the nominal values.
TERM_ATTRIBUTES = {"fv": "damping", "fc": "frictionloss", "ia": "armature"}


class MJCFError(ValueError):
    """A missing, malformed or unsupported MJCF element."""


def _quat(w, x, y, z):
    q = np.array([w, x, y, z]) / np.linalg.norm([w, x, y, z])
    w, x, y, z = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _axis_angle(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return _quat(np.cos(angle / 2), *(np.sin(angle / 2) * axis))


class _Reader:
    def __init__(self, path):
        self.path = str(path)
        try:
            # Comments kept: write_back copies the tree with them.
            self.root = ET.parse(self.path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
        except FileNotFoundError:
            raise FileNotFoundError(f"MJCF file not found: {self.path}") from None
        except ET.ParseError as exc:
            raise MJCFError(f"{self.path}: not well-formed XML: {exc}") from None
        if self.root.tag != "mujoco":
            raise MJCFError(f"{self.path}: the root element is <{self.root.tag}>, expected <mujoco>")
        for tag in ("include", "frame"):
            el = self.root.find(f".//{tag}")
            if el is not None:
                raise MJCFError(
                    f"{self.path}: <{tag}> is not supported; expand it into the file (MuJoCo's "
                    "mj_saveLastXML writes the compiled model as one file)"
                )
        compiler = self.root.find("compiler")
        compiler = {} if compiler is None else compiler.attrib
        if compiler.get("angle", "degree") not in ("degree", "radian"):
            raise MJCFError(f"{self.path}: <compiler angle={compiler['angle']!r}>: expected 'degree' or 'radian'")
        self.scale = np.pi / 180 if compiler.get("angle", "degree") == "degree" else 1.0
        self.eulerseq = compiler.get("eulerseq", "xyz")
        if len(self.eulerseq) != 3 or any(c not in "xyzXYZ" for c in self.eulerseq):
            raise MJCFError(f"{self.path}: <compiler eulerseq={self.eulerseq!r}>: expected three of x, y, z")
        self.defaults = {}
        top = self.root.find("default")
        if top is not None:
            self._read_defaults(top, "main", {})

    def _read_defaults(self, el, name, inherited):
        own = {tag: dict(inherited.get(tag, {})) for tag in inherited}
        for child in el:
            if isinstance(child.tag, str) and child.tag != "default":
                own.setdefault(child.tag, {}).update(child.attrib)
        self.defaults[name] = own
        for child in el.findall("default"):
            if not child.get("class"):
                raise MJCFError(f"{self.path}: a nested <default> has no class attribute")
            self._read_defaults(child, child.get("class"), own)

    def attr(self, el, key, default=None, cls="main"):
        """An attribute of `el`, else of its default class (`class`, else the inherited childclass)."""
        if key in el.attrib:
            return el.get(key)
        name = el.get("class", cls)
        if name not in self.defaults and name != "main":
            raise MJCFError(f"{self.path}: <{el.tag} class={name!r}>: no <default class={name!r}>")
        return self.defaults.get(name, {}).get(el.tag, {}).get(key, default)

    def floats(self, text, count, what):
        try:
            values = np.array([float(x) for x in text.split()])
        except (ValueError, AttributeError):
            raise MJCFError(f"{self.path}: {what}: expected {count} numbers, got {text!r}") from None
        if values.size != count or not np.all(np.isfinite(values)):
            raise MJCFError(f"{self.path}: {what}: expected {count} finite numbers, got {text!r}")
        return values

    def rotation(self, el, what):
        """Orientation of `el` from quat, axisangle, euler, xyaxes or zaxis (identity if none)."""
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if el.get(k) is not None]
        if len(given) > 1:
            raise MJCFError(f"{self.path}: {what}: orientation given twice ({', '.join(given)}); keep one")
        if not given:
            return np.eye(3)
        key = given[0]
        if key == "quat":
            return _quat(*self.floats(el.get(key), 4, f"{what} quat"))
        if key == "axisangle":
            v = self.floats(el.get(key), 4, f"{what} axisangle")
            return _axis_angle(v[:3], v[3] * self.scale)
        if key == "euler":
            angles = self.floats(el.get(key), 3, f"{what} euler") * self.scale
            unit = {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}
            R = np.eye(3)
            for axis, a in zip(self.eulerseq, angles):
                step = _axis_angle(unit[axis.lower()], a)
                # lower case: about the moving (intrinsic) axes; upper case: the fixed ones.
                R = R @ step if axis.islower() else step @ R
            return R
        if key == "xyaxes":
            v = self.floats(el.get(key), 6, f"{what} xyaxes")
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - (v[3:] @ x) * x
            y = y / np.linalg.norm(y)
            return np.column_stack([x, y, np.cross(x, y)])
        z = self.floats(el.get(key), 3, f"{what} zaxis")
        z = z / np.linalg.norm(z)
        axis = np.cross([0.0, 0.0, 1.0], z)
        if np.linalg.norm(axis) < 1e-12:
            return np.eye(3) if z[2] > 0 else np.diag([1.0, -1.0, -1.0])
        return _axis_angle(axis, np.arccos(np.clip(z[2], -1, 1)))

    def pose(self, el, what, pos="0 0 0"):
        T = np.eye(4)
        T[:3, :3] = self.rotation(el, what)
        T[:3, 3] = self.floats(el.get("pos", pos), 3, f"{what} pos")
        return T

    def inertial(self, body, what, check):
        el = body.find("inertial")
        if el is None:
            return np.zeros(10)
        what = f"{what} <inertial>"
        if el.get("mass") is None:
            raise MJCFError(f"{self.path}: {what}: missing mass")
        m = self.floats(el.get("mass"), 1, f"{what} mass")[0]
        if el.get("fullinertia") is not None:
            xx, yy, zz, xy, xz, yz = self.floats(el.get("fullinertia"), 6, f"{what} fullinertia")
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        elif el.get("diaginertia") is not None:
            I = np.diag(self.floats(el.get("diaginertia"), 3, f"{what} diaginertia"))
        else:
            raise MJCFError(f"{self.path}: {what}: missing diaginertia or fullinertia")
        problem = inertia.physical_problem(m, I) if check else None
        if problem:
            raise MJCFError(
                f"{self.path}: {what}: {problem}; correct the body's inertia, or pass check_inertia=False "
                "when the values are placeholders (plain least squares does not use them)"
            )
        return np.asarray(_transform(_from_mass_com_inertia(m, np.zeros(3), I), self.pose(el, what)))


def read(path, *, tool_site=None, check_inertia=True, joint_terms=(), joint_params=None, name=None) -> dict:
    """The keyword arguments of :class:`~jaxid.model.robot.Robot` for the model in an MJCF file
    (what is read: the module docstring); ``Robot.from_mjcf(path, ...)`` is ``Robot(**read(path, ...))``.

    tool_site: name of the ``<site>`` a payload is mounted on (``Robot.tip``); default a site
    named like a tool flange (``tool0``, ``flange``, ``..._flange``), else the last joint's
    frame. check_inertia: reject bodies whose inertia is not physical. joint_terms: enabled
    joint terms; their nominal values (n_joints, k) default to the joints' ``damping`` (fv),
    ``frictionloss`` (fc) and ``armature`` (ia), zero for the others.
    """
    return _read(path, tool_site, check_inertia, joint_terms, joint_params, name)[0]


def _read(path, tool_site=None, check_inertia=True, joint_terms=(), joint_params=None, name=None):
    """(Robot's keyword arguments, reader, bodies, joint elements): bodies is one (body element,
    joint index it moves with (-1: welded to the world), its frame (4, 4) in that joint's frame,
    its own inertial (10,) in its frame, indices of its own joints) per body, in document order."""
    r = _Reader(path)
    world = r.root.find("worldbody")
    if world is None:
        raise MJCFError(f"{r.path}: no <worldbody>")
    for tag in ("tendon",):
        el = r.root.find(tag)
        if el is not None and len(el):
            raise MJCFError(
                f"{r.path}: <{tag}><{el[0].tag} name={el[0].get('name')!r}>: tendons couple joints in a "
                "way a rigid-body tree cannot express; remove them for identification"
            )
    placements, axes, inertial, types, names, limits, parents, terms = [], [], [], [], [], [], [], []
    frames = {}  # joint index of each body's last joint, and the body frame in that joint frame
    sites = {}
    records, elements = [], []
    enabled = tuple(t for t in JOINT_TERMS if t in joint_terms)

    def visit(body, parent, pending, cls):
        """Add `body` (pose `pending` in joint `parent`'s frame) and the bodies below it."""
        what = f"body {body.get('name', '?')!r}"
        cls = body.get("childclass", cls)
        pending = pending @ r.pose(body, what)
        first = len(names)
        for j in body.findall("joint"):
            jname = j.get("name") or f"joint{len(names) + 1}"
            kind = r.attr(j, "type", JOINT_DEFAULTS["type"], cls)
            if kind not in JOINT_KINDS:
                raise MJCFError(
                    f"{r.path}: {what} joint {jname!r} has type {kind!r}; supported: hinge, slide "
                    "(floating bases and ball joints are not supported yet)"
                )
            get = lambda key: r.attr(j, key, JOINT_DEFAULTS.get(key), cls)
            axis = r.floats(get("axis"), 3, f"joint {jname!r} axis")
            if np.linalg.norm(axis) < 1e-12:
                raise MJCFError(f"{r.path}: joint {jname!r} axis: zero axis")
            axis = axis / np.linalg.norm(axis)
            pos = r.floats(get("pos"), 3, f"joint {jname!r} pos")
            ref = r.floats(get("ref"), 1, f"joint {jname!r} ref")[0] * (r.scale if kind == "hinge" else 1.0)
            # MuJoCo moves the body by Trans(pos) Rot(axis, q - ref) Trans(-pos) (Slide: Trans(axis (q - ref))).
            at = np.eye(4)
            at[:3, 3] = pos
            undo = np.eye(4)
            if kind == "hinge":
                undo[:3, :3] = _axis_angle(axis, -ref)
            else:
                undo[:3, 3] = -ref * axis
            placements.append(pending @ at @ undo)
            axes.append(axis)
            types.append(JOINT_KINDS[kind])
            names.append(jname)
            elements.append(j)
            parents.append(parent)
            inertial.append(np.zeros(10))
            lo, hi = -np.inf, np.inf
            if get("range") is not None and get("limited") != "false":
                lo, hi = r.floats(get("range"), 2, f"joint {jname!r} range") * (r.scale if kind == "hinge" else 1.0)
            limits.append((lo, hi))
            row = []
            for term in enabled:
                attr = TERM_ATTRIBUTES.get(term)
                value = r.floats(get(attr), 1, f"joint {jname!r} {attr}")[0] if attr and get(attr) else 0.0
                if value < 0:
                    raise MJCFError(f"{r.path}: joint {jname!r} {attr}={value:g} is negative; correct it")
                row.append(value)
            terms.append(row)
            parent = len(names) - 1
            back = np.eye(4)
            back[:3, 3] = -pos
            pending = back
        if body.find("freejoint") is not None:
            raise MJCFError(
                f"{r.path}: {what} has a <freejoint>: floating bases are not supported yet; fix the "
                "body to the world for a fixed-base arm"
            )
        pi = r.inertial(body, what, check_inertia)
        if parent >= 0:  # a body welded to the world does not move: it has no dynamics
            inertial[parent] = inertial[parent] + np.asarray(_transform(pi, pending))
        frames[body.get("name")] = (parent, pending)
        records.append((body, parent, pending, pi, range(first, len(names))))
        for s in body.findall("site"):
            sites[s.get("name")] = (parent, pending @ r.pose(s, f"site {s.get('name')!r}"))
        for child in body.findall("body"):
            visit(child, parent, pending, cls)

    for child in world.findall("body"):
        visit(child, -1, np.eye(4), "main")
    if not names:
        raise MJCFError(f"{r.path}: no hinge or slide joint under <worldbody>")
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise MJCFError(f"{r.path}: two joints are named {dup[0]!r}; joint names must be unique")
    mimic = _equality(r, names)
    free = [m is None for m in mimic]
    lim = np.array(limits)[free]
    tip_joint, tip = flange(
        sites, tool_site, len(names), f"{r.path}: tool_site", "is not a <site> of this model", MJCFError
    )
    option = r.root.find("option")
    gravity = (
        r.floats(option.get("gravity", "0 0 -9.81"), 3, "<option gravity>")
        if option is not None
        else np.array([0.0, 0.0, -9.81])
    )
    model = r.root.get("model", "robot")
    arguments = dict(
        placements=np.stack(placements),
        axes=np.stack(axes),
        inertial=np.stack(inertial),
        joint_types=tuple(types),
        parents=tuple(parents),
        names=tuple(names),
        joint_terms=enabled,
        joint_params=np.array(terms) if joint_params is None else joint_params,
        tip=tip,
        tip_joint=tip_joint,
        gravity=gravity,
        q_min=lim[:, 0],
        q_max=lim[:, 1],
        mimic=mimic,
        name=name or model,
    )
    return arguments, r, records, elements


def _equality(r, names):
    """Per joint None or (master index, ratio, offset) from ``<equality><joint>``."""
    mimic = [None] * len(names)
    eq = r.root.find("equality")
    for el in [] if eq is None else [e for e in eq if isinstance(e.tag, str)]:
        label = f"<equality><{el.tag} name={el.get('name')!r}>"
        if el.tag != "joint":
            raise MJCFError(
                f"{r.path}: {label}: a {el.tag} constraint closes a kinematic loop, which a tree model "
                "cannot express; remove it for identification"
            )
        j1, j2 = el.get("joint1"), el.get("joint2")
        for j in (j1, j2):
            if j is not None and j not in names:
                raise MJCFError(f"{r.path}: {label}: no hinge or slide joint named {j!r}")
        c = r.floats(el.get("polycoef", "0 1 0 0 0"), 5, f"{label} polycoef")
        if j2 is None or np.any(c[2:] != 0):
            raise MJCFError(
                f"{r.path}: {label}: only linear couplings joint1 = c0 + c1 joint2 are supported "
                "(polycoef='c0 c1 0 0 0' with joint2)"
            )
        i, k = names.index(j1), names.index(j2)
        if mimic[k] is not None or mimic[i] is not None:
            raise MJCFError(
                f"{r.path}: {label}: {j1!r} or {j2!r} is already coupled; couple each joint to an independent one"
            )
        mimic[i] = (k, c[1], c[0])
    return mimic


def write_back(robot, theta, source, out):
    """Write the identified parameters theta (p,) of ``robot`` into a copy of its MJCF file
    ``source`` at ``out``; returns the path of ``out`` (the MJCF twin of
    :func:`jaxid.model.urdf.write_back`).

    Only these change: the ``<inertial>`` of the body each joint moves (``pos``, the centre of
    mass in m in the body frame; ``mass`` kg; the inertia about the centre of mass, kg m^2, in
    the inertial's own orientation, which is kept, as ``diaginertia`` when its off-diagonal
    terms vanish (below 1e-12 of the trace) and ``fullinertia`` otherwise) and, for the joint
    terms fv, fc, ia, each joint's ``damping`` (N m s/rad), ``frictionloss`` (N m) and
    ``armature`` (kg m^2). These are set on the element, which overrides a ``<default>``
    class. Bodies welded to a moving body (no joint of their own) keep their values and its
    body gets the rest; a body with several joints holds the last joint's body (the others
    are massless in MJCF, so their identified bodies must be zero). Everything else stays,
    comments included; relative asset paths (``meshdir``, ``texturedir``, ``assetdir``, an
    asset's ``file``) are rewritten to point at the same files from ``out``'s directory.

    Raises:
        ValueError: theta has the wrong shape or is not finite; ``source`` has other joints
            than ``robot``; a body (named) would not be physically consistent (Wensing et al.
            2017), or a joint between two of a body's joints has a body; a damping,
            frictionloss or armature would be negative (MuJoCo and :func:`read` reject it).
    """
    import os
    from pathlib import Path

    from jaxid.atomic import atomic_write

    bodies, joint_values = identified_split(robot, theta)
    source, out = Path(source), Path(out)
    arguments, r, records, elements = _read(source, check_inertia=False)
    if arguments["names"] != robot.names:
        raise ValueError(
            f"{source}: its joints {list(arguments['names'])} are not the model's {list(robot.names)}; write "
            "back into the MJCF file the model was read from"
        )
    rest = np.zeros_like(bodies)
    owner = {}  # joint index -> the body whose inertial holds its identified body
    for body, parent, frame, pi, own in records:
        if len(own):
            owner[own[-1]] = (body, frame)
        elif parent >= 0:  # welded: part of the joint's identified body, kept as it is
            rest[parent] += np.asarray(_transform(pi, frame))
    for i, jname in enumerate(robot.names):
        if i not in owner:
            if np.max(np.abs(bodies[i])) > 1e-12:
                raise ValueError(
                    f"joint {jname!r}: is followed by another joint of the same body, so MJCF gives it "
                    f"no body, but its identified body is not zero (mass {bodies[i, 0]:.3g} kg); give "
                    "it a body of its own in the MJCF file"
                )
            continue
        body, frame = owner[i]
        what = f"body {body.get('name', '?')!r} (joint {jname!r})"
        el = body.find("inertial")
        if el is None:
            el = ET.Element("inertial")
            body.insert(0, el)
        m, c, I = element_inertia(bodies[i], rest[i], frame, r.rotation(el, what), what)
        el.set("pos", numbers(c))
        el.set("mass", numbers(m))
        off = np.array([I[0, 1], I[0, 2], I[1, 2]])
        diagonal = np.max(np.abs(off)) <= 1e-12 * np.trace(I)
        el.attrib.pop("fullinertia" if diagonal else "diaginertia", None)
        el.set(*(("diaginertia", numbers(np.diag(I))) if diagonal else ("fullinertia", numbers([*np.diag(I), *off]))))
    for k, term in enumerate(robot.joint_terms):
        attr = TERM_ATTRIBUTES.get(term)
        for i, j in enumerate(elements if attr else ()):
            if not np.isfinite(joint_values[i, k]):  # a motor-side term without a joint-side equivalent
                continue
            if joint_values[i, k] < 0:
                raise ValueError(
                    f"joint {robot.names[i]!r}: identified {attr} {joint_values[i, k]:g} is negative, "
                    "which MuJoCo rejects; identify with --consistent (friction bounds) or drop "
                    f"{term} from the joint terms"
                )
            j.set(attr, numbers(joint_values[i, k]))
    moved = lambda f: relocated(f, source, out)
    relative = lambda f: bool(f) and not os.path.isabs(f)
    compiler = r.root.find("compiler")
    dirs = {} if compiler is None else dict(compiler.attrib)
    for key in ("assetdir", "meshdir", "texturedir"):
        if relative(dirs.get(key)):
            compiler.set(key, moved(dirs[key]))
    for el in r.root.iter():
        folder = dirs.get("texturedir" if el.tag == "texture" else "meshdir", dirs.get("assetdir"))
        if el.tag in ("mesh", "hfield", "skin", "texture") and relative(el.get("file")) and folder is None:
            el.set("file", moved(el.get("file")))
    with atomic_write(out) as fh:
        ET.ElementTree(r.root).write(fh, encoding="unicode")
        fh.write("\n")
    return out
