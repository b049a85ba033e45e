"""MJCF (MuJoCo XML) reader and write-back; ``mujoco`` is needed only where MuJoCo computes
a body's inertia itself.

The reader is the XML reader here (xml.parsers.expat into xml.etree, with each element's
byte position kept for write-back): identification needs only the kinematic tree, the
inertials and the joints' friction, which the XML states directly. One thing it does not
state: MuJoCo gives a body without ``<inertial>`` the inertia of its geoms
(``<compiler inertiafromgeom="auto">``, the default; ``"true"``: every body), and rescales
inertias under ``boundmass``, ``boundinertia``, ``balanceinertia`` and ``settotalmass``. For
those bodies (all of them under the compiler options) the inertia is taken from the model
MuJoCo compiles (``mujoco.MjModel.from_xml_path``: ``body_mass``, ``body_ipos``,
``body_iquat``, ``body_inertia``), so it is what MuJoCo simulates; without ``mujoco``
installed (``pip install jaxid[mujoco]``) such a file is refused, naming the body. Kinematics
always come from the XML. The tests hold the result to MuJoCo's ``mj_inverse`` (1e-8
relative) on MuJoCo's own export of a UR5 and on hand-written files with classes and frames.

Supported (MuJoCo XML reference, mujoco.readthedocs.io/en/stable/XMLreference.html):
``<compiler angle eulerseq inertiafromgeom>``; ``<option gravity>``; ``<include file>``
(relative to the main file's folder, as MuJoCo resolves it; nested; each file once);
``<default>`` classes (nested, with ``class`` and ``childclass``) for joints and sites;
bodies with ``pos`` and any orientation (``quat``, ``axisangle``, ``euler``, ``xyaxes``,
``zaxis``); ``<frame>`` elements (empty ones, as ``mj_saveLastXML`` writes, and ones with a
pose and ``childclass`` wrapping bodies, joints, sites and other frames); ``<inertial pos
(orientation) mass diaginertia|fullinertia>``; ``hinge`` and ``slide`` joints (several per
body, each at its ``pos``, measured from ``ref``) with ``axis range damping frictionloss
armature``, read as the nominal ``fv``, ``fc``, ``ia`` when those joint terms are enabled;
bodies without a joint welded to their parent (merged); ``<equality><joint polycoef="c0 c1 0
0 0">`` as a coupled (mimic) joint ``q1 = c1 q2 + c0``; ``<site>`` as the tool flange.

Rejected, naming the element: free and ball joints (floating bases are not supported yet),
tendons, other equality constraints (closed loops). Not read: joint ``stiffness`` (a spring,
jaxid's ``ks`` term up to the offset ``springref``) and ``gravcomp``; keep them zero when
comparing with MuJoCo.

[`write_back`][jaxid.model.mjcf.write_back] patches identified parameters into a copy of the file: only the bodies'
``<inertial>`` and the joints' ``damping frictionloss armature`` attributes (and relative
asset paths) change, every other byte stays; the conventions (MuJoCo's ``frictionloss`` is a
constraint, not jaxid's smooth ``tanh``) are in its docstring.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

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


def _parse(path):
    """(root element, {element: start-tag byte offset}, the file's bytes) of an XML file, comments
    kept: expat reports where each start tag begins, which write_back patches in place."""
    from xml.parsers import expat

    data = Path(path).read_bytes()
    builder = ET.TreeBuilder(insert_comments=True)
    parser = expat.ParserCreate()
    where = {}

    def start(tag, attrib):
        where[builder.start(tag, attrib)] = parser.CurrentByteIndex

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.CommentHandler = builder.comment
    parser.Parse(data, True)
    return builder.close(), where, data


class _Reader:
    def __init__(self, path):
        self.path = str(path)
        self.source = {}  # element -> (file path, start-tag byte offset)
        self.data = {}  # file path -> bytes
        self.includes = []  # the <include> elements, replaced in the tree by what they include
        self.root = self._load(Path(self.path), "MJCF file")
        if self.root.tag != "mujoco":
            raise MJCFError(f"{self.path}: the root element is <{self.root.tag}>, expected <mujoco>")
        self._expand(self.root)
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

    def _load(self, path, what):
        try:
            root, where, data = _parse(path)
        except FileNotFoundError:
            if what == "MJCF file":
                raise FileNotFoundError(f"MJCF file not found: {path}") from None
            raise MJCFError(f"{what} not found: {path}; MuJoCo resolves it from the main file's folder") from None
        except Exception as exc:  # expat.ExpatError
            raise MJCFError(f"{path}: not well-formed XML: {exc}") from None
        self.data[path] = data
        self.source.update({el: (path, at) for el, at in where.items()})
        return root

    def _expand(self, el):
        """Replace each ``<include file>`` below `el` by the children of that file's root
        ``<mujoco>`` (MuJoCo's rule: the path is relative to the main file's folder)."""
        children = []
        for child in el:
            if child.tag != "include":
                if isinstance(child.tag, str):
                    self._expand(child)
                children.append(child)
                continue
            if not child.get("file"):
                raise MJCFError(f"{self.path}: an <include> has no file attribute")
            self.includes.append(child)
            path = Path(self.path).parent / child.get("file")
            if path in self.data:
                raise MJCFError(f"{self.path}: <include file={child.get('file')!r}> includes that file twice")
            root = self._load(path, f"{self.path}: <include file={child.get('file')!r}>:")
            if root.tag != "mujoco":
                raise MJCFError(f"{path}: an included file's root element is <{root.tag}>, expected <mujoco>")
            self._expand(root)
            children.extend(root)
        el[:] = children

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


def _members(r, el, F, cls):
    """(child element, pose (4, 4) of the ``<frame>`` s around it in `el`'s frame, its default
    class) for the children of a body (or the worldbody) `el`, looking through frames (which
    MuJoCo dissolves at compile time: a frame's pose and ``childclass`` pass to what it holds)."""
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "frame":
            what = f"<frame name={child.get('name')!r}>" if child.get("name") else "a <frame>"
            yield from _members(r, child, F @ r.pose(child, what), child.get("childclass", cls))
        else:
            yield child, F, cls


#: <compiler> attributes with which MuJoCo changes the inertias the file states.
RESCALING = ("boundmass", "boundinertia", "balanceinertia", "settotalmass")


def _compiled_inertials(r, world):
    """{body element: inertial (10,) in its body frame} for the moving bodies whose inertia
    MuJoCo computes (from geoms), or all bodies where it changes them (compiler options): read
    from the model MuJoCo compiles; empty when there are none (the XML states every inertia
    that matters; a body welded to the world has no dynamics)."""
    compiler = r.root.find("compiler")
    options = {} if compiler is None else compiler.attrib
    mode = options.get("inertiafromgeom", "auto")
    if mode not in ("auto", "true", "false"):
        raise MJCFError(f"{r.path}: <compiler inertiafromgeom={mode!r}>: expected 'auto', 'true' or 'false'")
    rescaled = [k for k in RESCALING if options.get(k) not in (None, "false", "0", "-1")]
    bodies = list(world.iter("body"))

    def from_geoms(body):
        if mode == "false" or (mode == "auto" and body.find("inertial") is not None):
            return False
        return any(el.tag == "geom" for el, _, _ in _members(r, body, np.eye(4), "main"))

    moving = set()  # bodies with a joint of their own or below one: those that have dynamics

    def walk(el, moves):
        for child, _, _ in _members(r, el, np.eye(4), "main"):
            if child.tag == "body":
                here = moves or any(c.tag == "joint" for c, _, _ in _members(r, child, np.eye(4), "main"))
                if here:
                    moving.add(child)
                walk(child, here)

    walk(world, False)
    needed = bodies if rescaled else [b for b in bodies if b in moving and from_geoms(b)]
    if not needed:
        return {}
    why = (
        f"<compiler {rescaled[0]}> changes the inertias MuJoCo uses"
        if rescaled
        else f"body {needed[0].get('name', '?')!r} has geoms and no <inertial> (inertiafromgeom={mode!r}): "
        "MuJoCo computes its inertia from them"
    )
    try:
        import mujoco
    except ImportError:
        raise MJCFError(
            f"{r.path}: {why}; install mujoco (pip install 'jaxid[mujoco]') to read it as MuJoCo "
            'does, or give the body an <inertial> (or set <compiler inertiafromgeom="false">)'
        ) from None
    try:
        model = mujoco.MjModel.from_xml_path(r.path)
    except Exception as exc:  # mujoco raises ValueError with its XML error
        raise MJCFError(f"{r.path}: {why}, but MuJoCo does not compile the file: {exc}") from None
    if model.nbody != len(bodies) + 1:
        raise MJCFError(
            f"{r.path}: MuJoCo compiles {model.nbody - 1} bodies from the file's {len(bodies)} "
            '(<compiler fusestatic>?); set fusestatic="false" to read it'
        )
    out = {}
    for k, body in enumerate(bodies, start=1):  # MuJoCo numbers bodies depth-first, in document order
        if body.get("name") and model.body(k).name != body.get("name"):
            raise MJCFError(f"{r.path}: MuJoCo's body {k} is {model.body(k).name!r}, not {body.get('name')!r}")
        T = np.eye(4)
        T[:3, :3] = _quat(*model.body_iquat[k])
        T[:3, 3] = model.body_ipos[k]
        pi = _from_mass_com_inertia(model.body_mass[k], np.zeros(3), np.diag(model.body_inertia[k]))
        out[body] = np.asarray(_transform(pi, T))
    return {b: out[b] for b in needed}


def read(path, *, tool_site=None, check_inertia=True, joint_terms=(), joint_params=None, name=None) -> dict:
    """The keyword arguments of [`Robot`][jaxid.model.robot.Robot] for the model in an MJCF file
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

    compiled = _compiled_inertials(r, world)

    def visit(body, parent, pending, cls):
        """Add `body` (pose `pending` in joint `parent`'s frame) and the bodies below it."""
        what = f"body {body.get('name', '?')!r}"
        cls = body.get("childclass", cls)
        pending = pending @ r.pose(body, what)
        first = len(names)
        members = list(_members(r, body, np.eye(4), cls))
        for j, F, jcls in members:
            if j.tag != "joint":
                continue
            jname = j.get("name") or f"joint{len(names) + 1}"
            kind = r.attr(j, "type", JOINT_DEFAULTS["type"], jcls)
            if kind not in JOINT_KINDS:
                raise MJCFError(
                    f"{r.path}: {what} joint {jname!r} has type {kind!r}; supported: hinge, slide "
                    "(floating bases and ball joints are not supported yet)"
                )
            get = lambda key: r.attr(j, key, JOINT_DEFAULTS.get(key), jcls)  # noqa: B023
            axis = r.floats(get("axis"), 3, f"joint {jname!r} axis")
            if np.linalg.norm(axis) < 1e-12:
                raise MJCFError(f"{r.path}: joint {jname!r} axis: zero axis")
            # A joint inside <frame>s: its pos and axis are in the frames' frame.
            axis = F[:3, :3] @ axis / np.linalg.norm(axis)
            pos = F[:3, :3] @ r.floats(get("pos"), 3, f"joint {jname!r} pos") + F[:3, 3]
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
        if any(el.tag == "freejoint" for el, _, _ in members):
            raise MJCFError(
                f"{r.path}: {what} has a <freejoint>: floating bases are not supported yet; fix the "
                "body to the world for a fixed-base arm"
            )
        pi = compiled[body] if body in compiled else r.inertial(body, what, check_inertia)
        if parent >= 0:  # a body welded to the world does not move: it has no dynamics
            inertial[parent] = inertial[parent] + np.asarray(_transform(pi, pending))
        frames[body.get("name")] = (parent, pending)
        records.append((body, parent, pending, pi, range(first, len(names))))
        for s, F, _ in members:
            if s.tag == "site":
                sites[s.get("name")] = (parent, pending @ F @ r.pose(s, f"site {s.get('name')!r}"))
        for child, F, ccls in members:
            if child.tag == "body":
                visit(child, parent, pending @ F, ccls)

    for child, F, ccls in _members(r, world, np.eye(4), "main"):
        if child.tag == "body":
            visit(child, -1, F, ccls)
        elif child.tag in ("joint", "freejoint"):
            raise MJCFError(f"{r.path}: a <{child.tag}> directly in <worldbody>: put it in a <body>")
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


def _matrix_quat(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix R (3, 3), w >= 0 (Shepperd 1978: from
    the largest of the four squared components, so no division by a small one)."""
    t = np.trace(R)
    squares = np.array([1 + t, 1 + 2 * R[0, 0] - t, 1 + 2 * R[1, 1] - t, 1 + 2 * R[2, 2] - t]) / 4
    k = int(np.argmax(squares))
    v = np.sqrt(squares[k])
    pairs = {
        0: (v, (R[2, 1] - R[1, 2]) / (4 * v), (R[0, 2] - R[2, 0]) / (4 * v), (R[1, 0] - R[0, 1]) / (4 * v)),
        1: ((R[2, 1] - R[1, 2]) / (4 * v), v, (R[0, 1] + R[1, 0]) / (4 * v), (R[0, 2] + R[2, 0]) / (4 * v)),
        2: ((R[0, 2] - R[2, 0]) / (4 * v), (R[0, 1] + R[1, 0]) / (4 * v), v, (R[1, 2] + R[2, 1]) / (4 * v)),
        3: ((R[1, 0] - R[0, 1]) / (4 * v), (R[0, 2] + R[2, 0]) / (4 * v), (R[1, 2] + R[2, 1]) / (4 * v), v),
    }
    q = np.array(pairs[k])
    return q if q[0] >= 0 else -q


ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")


class _Patch:
    """Attribute edits and inserted children of elements, applied to the bytes of the file
    they come from: each edited start tag is rewritten, every other byte kept."""

    def __init__(self, reader):
        self.r = reader
        self.edits = {}  # element -> ({attribute: value, or None to remove}, text of a child to insert)

    def set(self, el, key, value):
        self.edits.setdefault(el, ({}, []))[0][key] = value

    def insert(self, el, text):
        self.edits.setdefault(el, ({}, []))[1].append(text)

    def apply(self, path):
        """The bytes of file `path` with the edits of its elements; raises ValueError naming
        an edited element of another (included) file."""
        import re
        from xml.sax.saxutils import quoteattr

        data = self.r.data[path]
        spans = []
        for el, (attrs, children) in self.edits.items():
            where, start = self.r.source[el]
            if where != path:
                raise ValueError(
                    f"<{el.tag} name={el.get('name')!r}> is in the included file {where}, and write-back "
                    f"patches only {path}; move the element into it (or write the included file's "
                    "values by hand)"
                )
            end, quote = start, None
            while True:  # the end of the start tag: the first '>' outside a quoted value
                c = data[end : end + 1]
                end += 1
                if quote:
                    quote = None if c == quote else quote
                elif c in (b'"', b"'"):
                    quote = c
                elif c == b">":
                    break
            tag = data[start:end].decode()
            for key, value in attrs.items():
                # The attributes in order, each value consumed whole (a value may hold '=' or a name).
                pattern = r"""(\s+)([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')"""
                found = next((a for a in re.finditer(pattern, tag) if a.group(2) == key), None)
                if value is None:
                    tag = tag if found is None else tag[: found.start()] + tag[found.end() :]
                elif found is not None:
                    tag = tag[: found.start(3)] + quoteattr(value) + tag[found.end(3) :]
                else:
                    close = len(tag) - (2 if tag.endswith("/>") else 1)
                    close = len(tag[:close].rstrip())
                    tag = f"{tag[:close]} {key}={quoteattr(value)}{tag[close:]}"
            if children:
                # On a line of its own, indented one step (two spaces) below the parent's tag
                # when that tag starts its line; else right after the tag.
                indent = data[data.rfind(b"\n", 0, start) + 1 : start].decode()
                step = "\n" + indent + "  " if not indent.strip() else ""
                inner = "".join(step + child for child in children)
                if tag.endswith("/>"):
                    tag = f"{tag[:-2].rstrip()}>{inner}{chr(10) + indent if step else ''}</{el.tag}>"
                else:
                    tag += inner
            spans.append((start, end, tag.encode()))
        for start, end, text in sorted(spans, reverse=True):
            data = data[:start] + text + data[end:]
        return data


def write_back(robot, theta, source, out):
    """Write the identified parameters theta (p,) of ``robot`` into a copy of its MJCF file
    ``source`` at ``out``; returns the path of ``out`` (the MJCF twin of
    [`jaxid.model.urdf.write_back`][jaxid.model.urdf.write_back]). MuJoCo loads the result, and its ``mj_inverse``
    (constraints off) equals ``robot.torque(theta, ...)`` with the terms fv and ia (the tests
    check 1e-8 relative).

    The file is patched, not rewritten: only these attributes change, every other byte
    (comments, formatting, attribute order, other elements) stays.

    - The ``<inertial>`` of the body each joint moves (one is inserted where the body has
      none): ``pos``, the centre of mass in m in the body frame; ``mass`` kg; the inertia
      about the centre of mass, kg m^2, as MuJoCo accepts it: ``fullinertia`` in the body frame
      where the source used ``fullinertia``; else ``diaginertia`` in the source's orientation
      when it is diagonal there (off-diagonal terms below 1e-12 of the trace), else
      ``diaginertia`` + ``quat`` of its principal axes (other orientation attributes removed).
      Never ``quat`` with ``fullinertia``, which MuJoCo rejects.
    - Each joint's ``damping`` = fv (N m s/rad), ``frictionloss`` = fc (N m) and ``armature``
      = ia (kg m^2) for the enabled joint terms, set on the element (which overrides a
      ``<default>`` class). The conventions differ: ``armature`` adds ia to the diagonal of
      the joint-space mass matrix, which is jaxid's reflected rotor inertia ``ia qdd`` (at
      the joint, without the rotor's gyroscopic terms in either); ``damping`` is the viscous
      joint torque ``fv qd``, the same as jaxid's; but ``frictionloss`` is a dry-friction
      *constraint* whose torque is anywhere in [-fc, fc] (solved with the other constraints,
      softened by ``solreffriction``), so it holds a joint at rest, where jaxid's smooth
      ``fc tanh(qd / eps)`` is zero; they agree (to the constraint's softness) when the joint
      moves faster than a few eps. Other identified terms (fs, fva, offset, ks) have no MJCF
      attribute and are not written.
    - Relative asset paths (``meshdir``, ``texturedir``, ``assetdir``, an asset's ``file``,
      an ``<include file>``) are rewritten to point at the same files from ``out``'s folder.

    Bodies welded to a moving body (no joint of their own) keep their values and its body
    gets the rest; a body with several joints holds the last joint's body (the others are
    massless in MJCF, so their identified bodies must be zero). Elements in an ``<include>``d
    file are not patched (an error names them).

    Raises:
        ValueError: theta has the wrong shape or is not finite; ``source`` has other joints
            than ``robot``; a body (named) would not be physically consistent (Wensing et al.
            2017), or a joint between two of a body's joints has a body; a damping,
            frictionloss or armature would be negative (MuJoCo and [`read`][jaxid.model.mjcf.read] reject it);
            ``<compiler inertiafromgeom="true">`` (MuJoCo would ignore the written inertials);
            an element to patch is in an included file.
    """
    import os

    from jaxid.atomic import atomic_write

    bodies, joint_values = identified_split(robot, theta)
    source, out = Path(source), Path(out)
    arguments, r, records, elements = _read(source, check_inertia=False)
    if arguments["names"] != robot.names:
        raise ValueError(
            f"{source}: its joints {list(arguments['names'])} are not the model's {list(robot.names)}; write "
            "back into the MJCF file the model was read from"
        )
    compiler = r.root.find("compiler")
    dirs = {} if compiler is None else dict(compiler.attrib)
    if dirs.get("inertiafromgeom") == "true":
        raise ValueError(
            f'{source}: <compiler inertiafromgeom="true"> makes MuJoCo ignore every <inertial>, so the '
            'identified ones would not be used; set it to "auto" (inertials where given, geoms elsewhere)'
        )
    patch = _Patch(r)
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
        m, c, I = element_inertia(bodies[i], rest[i], frame, np.eye(3), what)  # I in the body frame
        attrs = {"pos": numbers(c), "mass": numbers(m)}
        off = lambda J: np.array([J[0, 1], J[0, 2], J[1, 2]])
        small = lambda J: np.max(np.abs(off(J))) <= 1e-12 * np.trace(J)
        R = np.eye(3) if el is None else r.rotation(el, what)
        if el is not None and el.get("fullinertia") is not None:
            attrs["fullinertia"] = numbers([*np.diag(I), *off(I)])
        elif small(R.T @ I @ R):
            attrs["diaginertia"] = numbers(np.diag(R.T @ I @ R))
        else:
            # Principal axes: I = V diag(d) V^T, V a rotation (det +1), as MuJoCo compiles it.
            d, V = np.linalg.eigh(I)
            V[:, 2] *= np.linalg.det(V)
            attrs.update({key: None for key in ORIENTATIONS if el is not None and el.get(key) is not None})
            attrs.update(quat=numbers(_matrix_quat(V)), diaginertia=numbers(d))
            attrs.pop("fullinertia", None)
        if el is None:
            fields = " ".join(f'{k}="{v}"' for k, v in attrs.items() if v is not None)
            patch.insert(body, f"<inertial {fields}/>")
            continue
        if "fullinertia" not in attrs:
            attrs["fullinertia"] = None
        else:
            attrs["diaginertia"] = None
        for key, value in attrs.items():
            patch.set(el, key, value)
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
            patch.set(j, attr, numbers(joint_values[i, k]))
    moved = lambda f: relocated(f, source, out)
    relative = lambda f: bool(f) and not os.path.isabs(f)
    if out.resolve().parent != source.resolve().parent:
        for key in ("assetdir", "meshdir", "texturedir"):
            if relative(dirs.get(key)):
                patch.set(compiler, key, moved(dirs[key]))
        for el in r.root.iter():
            folder = dirs.get("texturedir" if el.tag == "texture" else "meshdir", dirs.get("assetdir"))
            if el.tag in ("mesh", "hfield", "skin", "texture") and relative(el.get("file")) and folder is None:
                if r.source[el][0] != source:
                    raise ValueError(
                        f"{r.source[el][0]}: <{el.tag} file={el.get('file')!r}> is in an included file, "
                        "whose relative paths would not resolve from another folder; write the model "
                        f"into {source.parent}"
                    )
                patch.set(el, "file", moved(el.get("file")))
        for el in r.includes:  # relative to the main file's folder, wherever they are
            if r.source[el][0] != source:
                raise ValueError(
                    f"{r.source[el][0]}: <include file={el.get('file')!r}> is in an included file, "
                    f"which write-back does not patch; write the model into {source.parent}"
                )
            patch.set(el, "file", moved(el.get("file")))
    data = patch.apply(source)
    with atomic_write(out, "wb") as fh:
        fh.write(data)
    return out


def mujoco_inverse(path, robot, q, qd, qdd, *, friction=False):
    """MuJoCo's inverse dynamics ``mj_inverse`` of the MJCF file ``path``, as generalised
    forces (N, n) N m (N for slide joints) of ``robot``'s coordinates at the states q, qd, qdd
    (N, n) rad, rad/s, rad/s^2 (``robot`` read from that file, or with the same joint names).

    Coupled joints (``<equality><joint>``): each joint is moved with its master
    (``robot.joint_motion``) and its torque carried to the master (``robot.to_coordinates``),
    as jaxid's coupled model does. Contacts, joint limits and equality constraints are
    switched off, so the torques are the rigid-body ones plus ``armature`` and ``damping``
    (and ``stiffness``); with ``friction`` the ``frictionloss`` constraint stays on, else all
    constraints are off. Needs ``mujoco`` (``pip install 'jaxid[mujoco]'``); the oracle of
    the tests and benchmarks/mjcf_roundtrip.py.
    """
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(path))
    off = mujoco.mjtDisableBit
    model.opt.disableflags |= off.mjDSBL_CONTACT | off.mjDSBL_LIMIT | off.mjDSBL_EQUALITY
    if not friction:
        model.opt.disableflags |= off.mjDSBL_CONSTRAINT
    data = mujoco.MjData(model)
    dofs = [int(model.joint(name).dofadr[0]) for name in robot.names]
    adrs = [int(model.joint(name).qposadr[0]) for name in robot.names]
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    out = np.zeros_like(q)
    for k in range(q.shape[0]):
        motion = (np.asarray(x) for x in robot.joint_motion(q[k], qd[k], qdd[k]))
        data.qpos[adrs], data.qvel[dofs], data.qacc[dofs] = motion
        mujoco.mj_inverse(model, data)
        out[k] = np.asarray(robot.to_coordinates(data.qfrc_inverse[dofs].copy()))
    return out
