"""URDF reader (xml.etree) for kinematic chains and trees.

Supported: revolute, continuous and prismatic joints; fixed joints, whose child links
are merged into the parent link's inertia (and whose placements are folded into the
next joint's placement); links off the kept joints (beyond a tip, unkept branches) merged
with their joints locked at zero; ``<origin xyz rpy>``, ``<axis>``, ``<inertial>`` with its own
origin and rpy, and ``<limit lower upper velocity effort>``. The model holds every movable
joint below ``base_link`` (default: the root link), or, given ``tip_link`` (one link or a
list), those on the paths from ``base_link`` to the tips. Joints are numbered depth-first
in document order, so that every joint's parent comes before it (``Robot.parents``).

A kept ``<mimic joint multiplier offset>`` joint is coupled to its master by default
(``mimic="coupled"``: ``q = multiplier * q_master + offset``, no variable of its own; the
model's coordinates are the independent joints, see [`Robot`][jaxid.model.robot.Robot]), as
Pinocchio reads it with ``buildModelFromUrdf(path, mimic=True)``; ``mimic="independent"``
gives it its own variable (Pinocchio's default). A mimic of a mimic is resolved to the
independent joint. ``<dynamics damping friction>`` is read as the nominal viscous and
Coulomb friction (``fv``, ``fc``) when those joint terms are enabled. The flange
(``Robot.tip``, where a payload is mounted) is the single ``tip_link``, else ``tool_link``,
else a link named like a tool flange (``tool0``, ``flange``, ``..._flange``, ``..._tool0``)
fixed to a kept link, else the last joint's link.

Transmissions (``<transmission>``, ROS ``transmission_interface``) are not part of the model
read by [`read`][jaxid.model.urdf.read]: a ROS ``/joint_states`` log is already on the joints' side. For a log of
the motors, [`read_transmission`][jaxid.model.urdf.read_transmission] reads them (``SimpleTransmission``: ``<actuator>
<mechanicalReduction>`` and the joint's ``<offset>``; ``DifferentialTransmission``: two actuators
and two joints with their ``<role>``, ``<mechanicalReduction>`` and ``<offset>``) into a
``jaxid.model.transmission.Transmission``.

Checks at reading: unique link and joint names; each link's inertia physically valid
(``jaxid.model.inertia.physical_problem``; ``check_inertia=False`` skips it, e.g. for plain
least squares on a file whose inertias are placeholders); mimic joints that name a missing
or left-out master, or form a cycle; inverted ``<limit>`` (lower > upper; lower = upper, a
placeholder, is read, and named where an excitation needs a range); links not connected to the
root (a loop of joints apart from the tree was dropped before, loading a robot with fewer joints). Errors name the element, the joint or link, and the file.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from jaxid.dynamics import spatial
from jaxid.friction.models import JOINT_TERMS
from jaxid.model import inertia

MOVABLE = {"revolute": "R", "continuous": "R", "prismatic": "P"}
TOOL_NAMES = ("tool0", "flange", "tool_flange")  # exact names, then "<prefix>_" + one of them


# numpy on the host (spatial's and inertia's functions of concrete arguments): reading a model
# compiles nothing (the stored programs each cost a cold process 20-60 ms of compile).
def _placement(rpy, xyz):
    return spatial.homogeneous(spatial.rpy(rpy[0], rpy[1], rpy[2]), xyz)


_transform = inertia.transform
_from_mass_com_inertia = inertia.from_mass_com_inertia


class URDFError(ValueError):
    """A missing or malformed URDF element."""


def _floats(text, count, what, path):
    try:
        values = [float(x) for x in text.split()]
    except (ValueError, AttributeError):
        raise URDFError(f"{path}: {what}: expected {count} numbers, got {text!r}") from None
    if len(values) != count or not np.all(np.isfinite(values)):
        raise URDFError(f"{path}: {what}: expected {count} finite numbers, got {text!r}")
    return np.array(values)


def _origin(elem, what, path):
    """4x4 transform of an optional <origin xyz rpy> child (identity when absent)."""
    o = elem.find("origin") if elem is not None else None
    if o is None:
        return np.eye(4)
    xyz = _floats(o.get("xyz", "0 0 0"), 3, f"{what} <origin xyz>", path)
    r = _floats(o.get("rpy", "0 0 0"), 3, f"{what} <origin rpy>", path)
    return np.asarray(_placement(r, xyz))


def _inertial(link, path, check=True):
    """pi (10,) of a <link> in its own frame (zeros when it has no <inertial>)."""
    name = link.get("name")
    el = link.find("inertial")
    if el is None:
        return np.zeros(10)
    what = f"link {name!r} <inertial>"
    mass = el.find("mass")
    if mass is None or mass.get("value") is None:
        raise URDFError(f"{path}: {what}: missing <mass value=...>")
    m = _floats(mass.get("value"), 1, f"{what} <mass value>", path)[0]
    if m < 0:
        raise URDFError(f"{path}: {what}: negative mass {m}")
    I = el.find("inertia")
    if I is None:
        raise URDFError(f"{path}: {what}: missing <inertia ixx ixy ixz iyy iyz izz>")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    missing = [k for k in keys if I.get(k) is None]
    if missing:
        raise URDFError(f"{path}: {what} <inertia>: missing attribute(s) {missing}")
    xx, xy, xz, yy, yz, zz = (_floats(I.get(k), 1, f"{what} <inertia {k}>", path)[0] for k in keys)
    I_c = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    problem = inertia.physical_problem(m, I_c) if check else None
    if problem:
        raise URDFError(
            f"{path}: {what}: {problem}; correct the link's inertia, or skip the check "
            "(check_inertia=False; on the command line --no-inertia-check) when the values are placeholders (plain least squares does not use them)"
        )
    pi_c = _from_mass_com_inertia(m, np.zeros(3), I_c)
    return np.asarray(_transform(pi_c, _origin(el, what, path)))


def _merged(link, links, joints, children, movable, path, check=True):
    """Inertia (10,) of `link` plus every link hanging from it but not behind a joint in
    `movable`, in `link`'s frame. Links behind fixed joints are rigidly attached; links
    behind movable joints that are not kept (a gripper beyond the tip, an unkept branch) are
    carried as if those joints were locked at zero, as Pinocchio's reduced models do."""
    pi = _inertial(links[link], path, check)
    for jname in children.get(link, []):
        if jname not in movable:
            j = joints[jname]
            T = _origin(j, f"joint {jname!r}", path)
            pi = pi + np.asarray(
                _transform(_merged(j.find("child").get("link"), links, joints, children, movable, path, check), T)
            )
    return pi


def _attached(link, joints, children, movable):
    """Names of the links merged into ``link`` (`_merged`): hanging from it behind joints
    not in ``movable``, recursively."""
    out = []
    for jname in children.get(link, []):
        if jname not in movable:
            child = joints[jname].find("child").get("link")
            out += [child] + _attached(child, joints, children, movable)
    return out


def parse(path):
    """(root, links, joints) of a URDF file: the <robot> element and its <link> and <joint>
    elements by name, in document order, checked for names, types and references."""
    path = str(path)
    try:
        root = ET.parse(path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    except FileNotFoundError:
        raise FileNotFoundError(f"URDF file not found: {path}") from None
    except ET.ParseError as exc:
        raise URDFError(f"{path}: not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    links, joints = {}, {}
    for kind, table in (("link", links), ("joint", joints)):
        for el in root.findall(kind):
            name = el.get("name")
            if not name:
                raise URDFError(f"{path}: a <{kind}> has no name attribute")
            if name in table:
                raise URDFError(f"{path}: two <{kind}> elements are named {name!r}; {kind} names must be unique")
            table[name] = el
            # urdfdom reads the first and ignores the rest: one of them is stale, which one is
            # meant cannot be told (and a write-back would patch one and leave the other)
            sub = {"link": "inertial", "joint": "dynamics"}[kind]
            if len(el.findall(sub)) > 1:
                raise URDFError(
                    f"{path}: {kind} {name!r} has {len(el.findall(sub))} <{sub}> elements; keep one (the others are ignored by urdfdom)"
                )
    for jname, j in joints.items():
        jtype = j.get("type")
        if jtype not in (*MOVABLE, "fixed"):
            child = j.find("child").get("link") if j.find("child") is not None else "?"
            why = (
                " (floating and planar joints, e.g. a mobile or floating base, are not supported yet: read the "
                "arm with base_link= below it)"
                if jtype in ("floating", "planar")
                else ""
            )
            raise URDFError(
                f"{path}: joint {jname!r} has type {jtype!r} (child link {child!r}); supported: revolute, "
                f"continuous, prismatic, fixed{why}"
            )
        for tag in ("parent", "child"):
            el = j.find(tag)
            if el is None or not el.get("link"):
                raise URDFError(f"{path}: joint {jname!r}: missing <{tag} link=...>")
            if el.get("link") not in links:
                raise URDFError(f"{path}: joint {jname!r}: <{tag}> names unknown link {el.get('link')!r}")
    if not joints:
        raise URDFError(f"{path}: no <joint> elements")
    return root, links, joints


def read(
    path,
    *,
    base_link=None,
    tip_link=None,
    tool_link=None,
    mimic="coupled",
    check_inertia=True,
    joint_terms=(),
    joint_params=None,
    name=None,
    gravity=(0.0, 0.0, -9.81),
) -> dict:
    """The keyword arguments of [`Robot`][jaxid.model.robot.Robot] for the model in a URDF file
    (what is read: the module docstring); ``Robot.from_urdf(path, ...)`` is ``Robot(**read(path, ...))``.

    tip_link: None (every movable joint below ``base_link``), a link name, or a list of them.
    tool_link: the link the payload is mounted on (``Robot.tip``, ``Robot.tip_joint``);
    default the single tip link, else a tool flange found by name (module docstring).
    mimic: ``"coupled"`` or ``"independent"``. check_inertia: check each link's inertia (see
    the module docstring). joint_params: (n_joints, len(joint_terms)) nominal joint terms;
    default zeros, with ``fv``/``fc`` from each joint's ``<dynamics damping friction>``.
    """
    path = str(path)
    if mimic not in ("coupled", "independent"):
        raise ValueError(f"mimic must be 'coupled' or 'independent', got {mimic!r}")
    root, links, joints = parse(path)
    children: dict[str, list[str]] = {}
    child_joint: dict[str, str] = {}
    for jname, j in joints.items():
        parent, child = j.find("parent").get("link"), j.find("child").get("link")
        children.setdefault(parent, []).append(jname)
        if child in child_joint:
            raise URDFError(f"{path}: link {child!r} is the child of two joints")
        child_joint[child] = jname
    if base_link is None:
        roots = [l for l in links if l not in child_joint]
        if len(roots) != 1:
            raise URDFError(f"{path}: expected one root link, found {roots}; pass base_link=")
        base_link = roots[0]
        _check_connected(path, base_link, links, joints, children)
    tips = None if tip_link is None else [tip_link] if isinstance(tip_link, str) else list(tip_link)
    if tool_link is None and tips is not None and len(tips) == 1:
        tool_link = tips[0]
    for what, link in (
        [("base_link", base_link)]
        + [("tip_link", t) for t in tips or []]
        + [("tool_link", tool_link)] * (tool_link is not None)
    ):
        if link not in links:
            raise URDFError(f"{path}: {what} {link!r} is not a link of this URDF")

    def subtree(link):
        for jname in children.get(link, []):
            yield jname
            yield from subtree(joints[jname].find("child").get("link"))

    if tips is None:
        kept = set(subtree(base_link))
    else:
        kept = set()
        for tip in tips:
            link = tip
            while link != base_link:
                if link not in child_joint:
                    raise URDFError(f"{path}: tip_link {tip!r} is not below base_link {base_link!r}")
                kept.add(child_joint[link])
                link = joints[child_joint[link]].find("parent").get("link")
    movable = {j for j in kept if joints[j].get("type") in MOVABLE}

    merged_inertial = lambda link: _merged(link, links, joints, children, movable, path, check_inertia)

    placements, axes, inertial, types, names, limits, parents = [], [], [], [], [], [], []
    frames = {}  # link -> (joint index, its frame in that joint's frame), for the tool flange

    def rigid(link, parent, pending):
        """Record the frames of `link` and of the links fixed to it (behind fixed joints)."""
        frames[link] = (parent, pending)
        for jname in children.get(link, []):
            j = joints[jname]
            if j.get("type") == "fixed" and jname not in kept:
                rigid(j.find("child").get("link"), parent, pending @ _origin(j, f"joint {jname!r}", path))

    def visit(link, parent, pending):
        """Add the kept movable joints below `link` (body `parent`, `pending` = the link's
        frame in the body frame), depth-first in document order."""
        rigid(link, parent, pending)
        for jname in children.get(link, []):
            if jname not in kept:
                continue
            j = joints[jname]
            T = pending @ _origin(j, f"joint {jname!r}", path)
            child = j.find("child").get("link")
            if jname not in movable:
                visit(child, parent, T)
                continue
            what = f"joint {jname!r}"
            ax = j.find("axis")
            axis = _floats(ax.get("xyz"), 3, f"{what} <axis xyz>", path) if ax is not None else np.array([1.0, 0, 0])
            if np.linalg.norm(axis) < 1e-12:
                raise URDFError(f"{path}: {what} <axis xyz>: zero axis")
            lim = j.find("limit")
            if lim is None and j.get("type") != "continuous":
                raise URDFError(f"{path}: {what}: a {j.get('type')} joint needs <limit lower upper effort velocity>")
            get = lambda key, default: (
                _floats(lim.get(key), 1, f"{what} <limit {key}>", path)[0]
                if lim is not None and lim.get(key) is not None
                else default
            )
            lo, hi = (
                (-np.inf, np.inf) if j.get("type") == "continuous" else (get("lower", -np.inf), get("upper", np.inf))
            )
            if lo > hi:
                raise URDFError(
                    f"{path}: {what} <limit lower={lo:g} upper={hi:g}>: the limits are inverted; swap them "
                    "(lower below upper)"
                )
            limits.append((lo, hi, get("velocity", np.inf), get("effort", np.inf)))
            placements.append(T)
            axes.append(axis / np.linalg.norm(axis))
            types.append(MOVABLE[j.get("type")])
            names.append(jname)
            parents.append(parent)
            inertial.append(merged_inertial(child))
            visit(child, len(names) - 1, np.eye(4))

    visit(base_link, -1, np.eye(4))
    if not placements:
        raise URDFError(f"{path}: no movable joint between {base_link!r} and {tips or 'the leaves'}")
    couplings = _mimic(path, joints, names) if mimic == "coupled" else [None] * len(names)
    free = [c is None for c in couplings]
    lim = np.array(limits)[free]
    if joint_params is None:
        joint_params = _dynamics(path, joints, names, joint_terms)
    tip_joint, tip = flange(frames, tool_link, len(names), f"{path}: tool_link", "is not fixed to a link of the model")
    return dict(
        placements=np.stack(placements),
        axes=np.stack(axes),
        inertial=np.stack(inertial),
        joint_types=tuple(types),
        parents=tuple(parents),
        names=tuple(names),
        joint_terms=joint_terms,
        joint_params=joint_params,
        tip=tip,
        tip_joint=tip_joint,
        gravity=gravity,
        q_min=lim[:, 0],
        q_max=lim[:, 1],
        qd_max=lim[:, 2],
        tau_max=lim[:, 3],
        mimic=couplings,
        name=name or root.get("name", "robot"),
    )


def flange(frames, name, n_joints, what, missing, error=URDFError):
    """(tip_joint, tip) of the payload flange: the frame ``name`` of ``frames`` (name -> (joint
    index, 4x4 frame in that joint's frame)), by default the first named like a tool flange
    (``TOOL_NAMES``), else the last joint's frame. Errors start with ``what``."""
    if name is None:
        name = next(
            (f for f in frames if f and (f in TOOL_NAMES or any(f.endswith("_" + t) for t in TOOL_NAMES))), None
        )
        if name is None:
            return n_joints - 1, np.eye(4)
    if name not in frames:
        raise error(f"{what} {name!r} {missing}")
    tip_joint, tip = frames[name]
    if tip_joint < 0:
        raise error(f"{what} {name!r} is fixed to the base, not to a moving link")
    return tip_joint, tip


def _mimic(path, joints, names):
    """Per kept joint None or (master index, multiplier, offset), chains of mimics resolved
    to the independent joint (q = m1 (m2 q + o2) + o1)."""
    index = {jname: i for i, jname in enumerate(names)}

    def resolve(jname, seen):
        el = joints[jname].find("mimic")
        if el is None:
            return index[jname], 1.0, 0.0
        master = el.get("joint")
        what = f"joint {jname!r} <mimic joint={master!r}>"
        if master not in joints:
            raise URDFError(f"{path}: {what}: no joint of that name; name an existing joint")
        if master not in index:
            raise URDFError(
                f"{path}: {what}: that joint is not in the model (fixed, or outside base_link/tip_link); "
                "keep it, or pass mimic='independent'"
            )
        if master in seen:
            raise URDFError(f"{path}: {what}: the mimic joints {sorted(seen)} form a cycle; one of them must be free")
        get = lambda key, default: _floats(el.get(key, default), 1, f"{what} {key}", path)[0]
        r, o = get("multiplier", "1"), get("offset", "0")
        i, r2, o2 = resolve(master, seen | {jname})
        return i, r * r2, r * o2 + o

    return [None if joints[j].find("mimic") is None else resolve(j, {j}) for j in names]


def _dynamics(path, joints, names, joint_terms):
    """Nominal joint terms (n_joints, k): fv, fc from ``<dynamics damping friction>``, else 0."""
    terms = tuple(t for t in JOINT_TERMS if t in joint_terms)  # the order Robot keeps them in
    values = np.zeros((len(names), len(terms)))
    for term, attr in (("fv", "damping"), ("fc", "friction")):
        for i, jname in enumerate(names):
            el = joints[jname].find("dynamics")
            if term not in terms or el is None or el.get(attr) is None:
                continue
            what = f"joint {jname!r} <dynamics {attr}>"
            value = _floats(el.get(attr), 1, what, path)[0]
            if value < 0:
                raise URDFError(f"{path}: {what}: negative friction {value:g}; friction dissipates, correct it")
            values[i, terms.index(term)] = value
    return values


def _connected(root, joints, children) -> set:
    """The links reachable from ``root`` through the joints (parent to child)."""
    seen, todo = {root}, [root]
    while todo:
        for jname in children.get(todo.pop(), []):
            child = joints[jname].find("child").get("link")
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _check_connected(path, root, links, joints, children):
    """Every link hangs below the one root link: a link off the tree (every link is some joint's
    child, so the rest form a cycle of joints, a loop the tree reader would drop silently and
    load a robot with fewer joints) is refused, naming the links and the joints of the loop."""
    loose = [l for l in links if l not in _connected(root, joints, children)]
    if loose:
        loop = [j for j, el in joints.items() if el.find("child").get("link") in loose]
        raise URDFError(
            f"{path}: links {loose} are not connected to the root link {root!r} (the joints {loop} form a closed "
            "loop among them, apart from the tree): connect them to the tree or remove them (closed "
            "kinematic loops are not supported)"
        )


def _children(joints):
    children = {}
    for jname, j in joints.items():
        children.setdefault(j.find("parent").get("link"), []).append(jname)
    return children


def identified_split(robot, theta):
    """(bodies (n_joints, 10), joint values (n_joints, k)) of theta (p,) as numpy, after checking
    its shape and that it is finite: the first step of writing a model file back."""
    import jax.numpy as jnp

    theta = np.asarray(theta, dtype=float)
    p = len(robot.parameter_names())
    if theta.shape != (p,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be a finite vector of shape ({p},), got shape {theta.shape}")
    from jaxid.model.transmission import file_values

    bodies, joint_values = robot.split(jnp.asarray(theta))
    # motor-side joint terms (Robot.transmission) as the joints' (NaN: none; left out of the file)
    return np.asarray(bodies), file_values(robot, joint_values)


def element_inertia(pi, rest, frame, R, what):
    """(mass kg, centre of mass (3,) m, inertia (3, 3) kg m^2 about it) to write for a body
    element whose identified joint body is ``pi`` (10,), less ``rest`` (10,): the bodies
    merged into it, which keep their own values. ``frame`` (4, 4) is the element's frame
    (URDF link, MJCF body) in the joint frame; the centre of mass is returned in that frame
    and the inertia in the rotated inertial frame ``R`` (3, 3) the element keeps.

    Raises ValueError naming ``what`` when the body is not physically consistent (its
    pseudo-inertia is not positive definite; Wensing, Kim and Slotine 2017)."""
    import jax.numpy as jnp

    whole, pi = pi, pi - rest
    if not bool(inertia.is_consistent(pi)):
        if np.any(rest) and bool(inertia.is_consistent(whole)):
            raise ValueError(
                f"{what}: the identified body is physically consistent, but less the bodies merged into "
                "it (kept from the source) it is not (pseudo-inertia not positive definite): the data "
                "see only their sum; give those bodies their real values in the source, or lump them "
                "into this one"
            )
        attached = "" if not np.any(rest) else " less the bodies merged into it (kept from the source)"
        raise ValueError(
            f"{what}: the identified body{attached} is not physically consistent (pseudo-inertia "
            "not positive definite); identify with consistent parameters (jaxid identify --consistent)"
        )
    pi = np.asarray(_transform(pi, np.linalg.inv(frame)))
    m, c, I_c = (np.asarray(x) for x in inertia.to_mass_com_inertia(jnp.asarray(pi)))
    return float(m), c + 0.0, R.T @ I_c @ R


def relocated(path, source, out) -> str:
    """A relative file reference of ``source`` (a mesh, an asset folder) rewritten to point
    at the same file from the folder of ``out``, the written copy."""
    import os

    return os.path.relpath(source.parent / path, out.parent if str(out.parent) else ".")


def numbers(values):
    """Space-separated shortest round-tripping decimals (17 significant digits), no '-0'."""
    return " ".join(f"{float(x) + 0.0:.17g}" for x in np.ravel(values))


def write_back(robot, theta, source, out, *, lump=False):
    """Write the identified parameters theta (p,) of ``robot`` into a copy of its URDF
    ``source`` at ``out``; returns the path of ``out``.

    The file is patched, not rewritten: only the bytes of these elements change, every
    other byte (the XML declaration, comments, a xacro header, attribute order, indentation)
    is copied. The ``<inertial>`` of each joint's child link: its ``<origin xyz>`` (centre of
    mass, m; the inertial frame's ``rpy`` is kept), ``<mass value>`` (kg) and ``<inertia>``
    (kg m^2 about the centre of mass, in that frame); a link without one gets one, indented
    as the file is. When ``fv``/``fc`` are joint terms, each joint's ``<dynamics damping=
    friction=>`` (N m s/rad, N m), added as the joint's last child when absent. A link's
    identified body includes the links merged into it (fixed or locked joints, [`read`][jaxid.model.urdf.read]):
    those (a gripper's fingers, a flange) keep their ``<inertial>`` untouched and the child link
    gets the rest. When the rest would not be physically consistent (the data see only the
    sum; e.g. a hand heavier in the file than the identified last link with it), the link is
    refused by name, unless ``lump``: then the whole body goes into the child link and those
    links' ``<inertial>`` elements are removed (their dynamics are the same), with a warning.
    Relative mesh paths are rewritten to point at the same files when ``out``
    is in another folder. ia, fs, fva and offset have no URDF element and are not written.

    Raises:
        ValueError: theta has the wrong shape or is not finite, a joint of ``robot`` is not
            in ``source``, or a link (named) would not be physically consistent (pseudo-inertia
            not positive definite; Wensing et al. 2017): identify with consistent parameters;
            or, less the bodies merged into it, it would not be (the data see only the sum).
        URDFError: the file is malformed, or a link has two ``<inertial>`` (a joint two
            ``<dynamics>``) elements: which one is meant cannot be told.
    """
    import os
    from pathlib import Path

    from jaxid.atomic import atomic_write

    bodies, joint_values = identified_split(robot, theta)
    source, out = Path(source), Path(out)
    _, links, joints = parse(source)  # checked; element values read from these
    data = source.read_bytes()
    tree = _nodes(data, source)
    link_nodes = {n.attrs.get("name"): n for n in tree.find("link")}
    joint_nodes = {n.attrs.get("name"): n for n in tree.find("joint")}
    children = _children(joints)
    missing = [n for n in robot.names if n not in joints]
    if missing:
        raise ValueError(f"{source}: has no joint(s) {missing} of the model; write back into the URDF it was read from")
    movable = set(robot.names)
    edits: list[tuple[int, int, bytes]] = []
    unit = _unit(data, tree)
    tag = lambda node, values: edits.append(
        (node.start, node.open_end, _set_attributes(data[node.start : node.open_end], values))
    )
    for i, jname in enumerate(robot.names):
        link = joints[jname].find("child").get("link")
        own = _inertial(links[link], source, check=False)
        rest = _merged(link, links, joints, children, movable, source, check=False) - own
        el = links[link].find("inertial")
        origin = el.find("origin") if el is not None else None
        rpy = (
            _floats(origin.get("rpy", "0 0 0"), 3, "<inertial><origin rpy>", source)
            if origin is not None
            else np.zeros(3)
        )
        R = np.asarray(_placement(rpy, np.zeros(3)))[:3, :3]
        what = f"link {link!r} (joint {jname!r})"
        if np.any(rest) and not inertia.is_consistent(bodies[i] - rest) and inertia.is_consistent(bodies[i]):
            attached = _attached(link, joints, children, movable)
            if not lump:
                raise ValueError(
                    f"{what}: the identified body is physically consistent, but less {attached} as in "
                    f"{source.name} (merged into it, kept untouched) it is not: the data see only their sum; "
                    f"give {attached} their real <inertial> in {source.name}, identify with their joints in "
                    f"the model, or lump them into {link!r} (write_back(..., lump=True); on the command line "
                    "--urdf-lump), which removes their <inertial>"
                )
            for name in attached:  # the whole body into this link: the rigid tree's dynamics are the same
                for gone in link_nodes[name].find("inertial"):
                    edits.append(_removal(data, gone))
            warnings.warn(
                f"{what}: the identified body less {attached} as in {source.name} is not physically "
                f"consistent; the whole body is written into {link!r} and {attached} are written "
                "without <inertial> (lump)",
                stacklevel=2,
            )
            rest = np.zeros_like(rest)
        m, c, I_f = element_inertia(bodies[i], rest, np.eye(4), R, what)
        inertia_attrs = dict(
            ixx=numbers(I_f[0, 0]),
            ixy=numbers(I_f[0, 1]),
            ixz=numbers(I_f[0, 2]),
            iyy=numbers(I_f[1, 1]),
            iyz=numbers(I_f[1, 2]),
            izz=numbers(I_f[2, 2]),
        )
        node = link_nodes[link]
        if el is None:
            attrs = " ".join(f'{k}="{v}"' for k, v in inertia_attrs.items())
            lines = [
                "<inertial>",
                f'\t<origin xyz="{numbers(c)}" rpy="0 0 0"/>',
                f'\t<mass value="{numbers(m)}"/>',
                f"\t<inertia {attrs}/>",
                "</inertial>",
            ]
            edits.append(_insert_child(data, node, lines, unit))
        else:
            (inode,) = node.find("inertial")
            if inode.find("origin"):
                tag(inode.find("origin")[0], dict(xyz=numbers(c)))
            else:
                edits.append(_insert_child(data, inode, [f'<origin xyz="{numbers(c)}" rpy="0 0 0"/>'], unit))
            tag(inode.find("mass")[0], dict(value=numbers(m)))
            tag(inode.find("inertia")[0], inertia_attrs)
        terms = {
            attr: numbers(joint_values[i, k])
            for k, t in enumerate(robot.joint_terms)
            for term, attr in (("fv", "damping"), ("fc", "friction"))
            if t == term and np.isfinite(joint_values[i, k])
        }
        if terms:
            jnode = joint_nodes[jname]
            if jnode.find("dynamics"):
                tag(jnode.find("dynamics")[0], terms)
            else:
                edits.append(
                    _append_child(data, jnode, "<dynamics " + " ".join(f'{k}="{v}"' for k, v in terms.items()) + "/>")
                )
    if source.resolve().parent != out.resolve().parent:
        for node in _walk(tree):
            f = node.attrs.get("filename", "") if node.tag == "mesh" else ""
            if f and "://" not in f and not os.path.isabs(f):
                tag(node, dict(filename=relocated(f, source, out)))
    patched, at = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        patched += [data[at:start], text]
        at = end
    with atomic_write(out, "wb") as fh:
        fh.write(b"".join(patched) + data[at:])
    return out


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def read_transmission(path, names):
    """The ``jaxid.model.transmission.Transmission`` of the ``<transmission>`` elements of a URDF
    for the joints ``names`` (the model's coordinates, in its order), as ROS
    ``transmission_interface`` reads them: a ``SimpleTransmission`` gives ``q = q_m / reduction +
    offset`` (the actuator's ``<mechanicalReduction>``, the joint's ``<offset>``, default 0); a
    ``DifferentialTransmission`` of actuators a1, a2 (reductions n_a) and joints j1, j2 (reductions
    n_j, offsets) gives ``q_j1 = (q_a1 / n_a1 + q_a2 / n_a2) / (2 n_j1) + off1`` and ``q_j2 = (q_a1 /
    n_a1 - q_a2 / n_a2) / (2 n_j2) + off2``; actuator k of a transmission drives the motor
    coordinate of its joint k (by ``<role>`` actuator1/joint1, else document order). Elements for
    joints outside ``names`` are skipped. URDFError naming the file and element for a joint of
    the model without a transmission, one in two, another type, or a missing or zero reduction."""
    from jaxid.model.transmission import Transmission, TransmissionError

    path = str(path)
    root, _, _ = parse(path)
    names = [str(x) for x in names]
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    R, offset, seen = np.zeros((n, n)), np.zeros(n), {}
    for el in root.iter("transmission"):
        tname = el.get("name", "?")
        what = f"<transmission name={tname!r}>"
        joints = _by_role(el.findall("joint"), "joint")
        ours = [j.get("name") for j in joints if j.get("name") in index]
        if not ours:
            continue
        kind = (el.findtext("type") or el.get("type") or "").strip()
        for jname in ours:
            if jname in seen:
                raise URDFError(f"{path}: joint {jname!r} is in {what} and in {seen[jname]}; give it one transmission")
            seen[jname] = what
        actuators = _by_role(el.findall("actuator"), "actuator")
        reduction = lambda e, label, default=None: _reduction(e, label, path, default)
        off = [
            _floats(j.findtext("offset", "0"), 1, f"{what} joint {j.get('name')!r} <offset>", path)[0] for j in joints
        ]
        if kind.endswith("SimpleTransmission"):
            if len(joints) != 1 or len(actuators) > 1:
                raise URDFError(f"{path}: {what}: a SimpleTransmission has one joint and one actuator")
            # old-style (pr2_mechanism_model) files put <mechanicalReduction> under <transmission>
            source = actuators[0] if actuators and actuators[0].find("mechanicalReduction") is not None else el
            i = index[ours[0]]
            R[i, i], offset[i] = 1.0 / reduction(source, f"{what} <mechanicalReduction>"), off[0]
        elif kind.endswith("DifferentialTransmission"):
            if len(joints) != 2 or len(actuators) != 2:
                raise URDFError(f"{path}: {what}: a DifferentialTransmission has two joints and two actuators")
            missing = [j.get("name") for j in joints if j.get("name") not in index]
            if missing:
                raise URDFError(
                    f"{path}: {what}: joint(s) {missing} of this differential are not in the model; keep both joints"
                )
            na = [reduction(a, f"{what} actuator {a.get('name')!r} <mechanicalReduction>") for a in actuators]
            nj = [reduction(j, f"{what} joint {j.get('name')!r} <mechanicalReduction>", 1.0) for j in joints]
            i1, i2 = (index[j.get("name")] for j in joints)
            # transmission_interface/differential_transmission.h, actuatorToJointPosition; actuator
            # k drives the motor coordinate of joint k
            R[i1, i1], R[i1, i2] = 1 / (2 * nj[0] * na[0]), 1 / (2 * nj[0] * na[1])
            R[i2, i1], R[i2, i2] = 1 / (2 * nj[1] * na[0]), -1 / (2 * nj[1] * na[1])
            offset[[i1, i2]] = off
        else:
            raise URDFError(
                f"{path}: {what} of joint(s) {ours} has type {kind!r}; supported: SimpleTransmission, "
                "DifferentialTransmission (give the transmission in a file instead: --transmission FILE)"
            )
    missing = [name for name in names if name not in seen]
    if missing:
        raise URDFError(
            f"{path}: no <transmission> for joint(s) {', '.join(missing)}; add them to the URDF, or give the "
            "whole transmission in a file (--transmission FILE)"
        )
    try:
        return Transmission(R, offset)
    except TransmissionError as e:
        raise URDFError(f"{path}: <transmission> elements: {e}") from None


def _by_role(elements, kind):
    """Elements in the order of their ``<role>`` (``actuator1``, ``actuator2``), else as written."""
    roles = [e.findtext("role", "").strip() for e in elements]
    if all(r.startswith(kind) and r[len(kind) :].isdigit() for r in roles) and roles:
        return [e for _, e in sorted(zip(roles, elements), key=lambda x: int(x[0][len(kind) :]))]
    return list(elements)


def _reduction(el, what, path, default=None):
    """The ``<mechanicalReduction>`` of an element: a finite nonzero number (``default`` when absent)."""
    text = el.findtext("mechanicalReduction")
    if text is None:
        if default is None:
            raise URDFError(f"{path}: {what}: missing; give the gear ratio (motor turns per joint turn)")
        return default
    value = _floats(text, 1, what, path)[0]
    if value == 0:
        raise URDFError(f"{path}: {what}: 0 is no gear ratio; give motor turns per joint turn (nonzero)")
    return value


# ------------------------------------------------------------------------- write-back by text spans
class _Node:
    """An element of the file as bytes: ``start`` (its ``<``), ``open_end`` (after its start tag's
    ``>``), ``close`` (the ``<`` of its end tag; None when self-closing), ``end`` (after it)."""

    __slots__ = ("tag", "attrs", "start", "open_end", "close", "end", "children")

    def __init__(self, tag, attrs, start, open_end):
        self.tag, self.attrs, self.start, self.open_end = tag, attrs, start, open_end
        self.close, self.end, self.children = None, open_end, []

    def find(self, tag):
        return [c for c in self.children if c.tag == tag]


def _tag_end(data: bytes, i: int) -> int:
    """Index after the ``>`` closing the tag that starts at ``data[i]`` (``>`` in quoted
    attribute values skipped)."""
    quote = None
    for k in range(i, len(data)):
        c = data[k : k + 1]
        if quote:
            quote = None if c == quote else quote
        elif c in (b'"', b"'"):
            quote = c
        elif c == b">":
            return k + 1
    raise URDFError("unterminated tag")  # expat has accepted the file: not reached


def _nodes(data: bytes, path) -> _Node:
    """The element tree of the file's bytes with each element's byte span (expat's
    ``CurrentByteIndex``: the start of the event's markup; an empty-element tag's end event
    comes after it). Comments, processing instructions and text are not nodes: they are the
    bytes between, which the write-back copies."""
    import xml.parsers.expat

    parser = xml.parsers.expat.ParserCreate()
    stack: list[_Node] = [_Node("", {}, 0, 0)]

    def start(tag, attrs):
        i = parser.CurrentByteIndex
        node = _Node(tag, attrs, i, _tag_end(data, i))
        stack[-1].children.append(node)
        stack.append(node)

    def end(tag):
        node, i = stack.pop(), parser.CurrentByteIndex
        if i != node.open_end:  # <tag ...>...</tag>, not <tag .../>
            node.close, node.end = i, _tag_end(data, i)

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        raise URDFError(f"{path}: not well-formed XML: {exc}") from None
    return stack[0].children[0]


def _set_attributes(tag: bytes, values: dict) -> bytes:
    """The start tag ``tag`` with each attribute of ``values`` set (the value replaced in
    place, quotes and spacing kept; a missing one appended before ``/>`` or ``>``)."""
    import re
    from xml.sax.saxutils import escape

    text = tag.decode("utf-8", "surrogateescape")  # bytes of another encoding kept as they are
    for name, value in values.items():
        value = escape(value, {'"': "&quot;", "'": "&apos;"})
        m = re.search(rf"(?<=\s){re.escape(name)}\s*=\s*(\"|')(.*?)\1", text, re.S)
        if m:
            text = text[: m.start(2)] + value + text[m.end(2) :]
        else:
            at = re.search(r"\s*/?>$", text).start()  # type: ignore[union-attr]  # a tag ends with >
            text = f'{text[:at]} {name}="{value}"{text[at:]}'
    return text.encode("utf-8", "surrogateescape")


def _indent(data: bytes, i: int) -> bytes:
    """The white space between the start of the line holding ``data[i]`` and ``i`` (empty when
    something else precedes it on that line)."""
    line = data.rfind(b"\n", 0, i) + 1
    lead = data[line:i]
    return lead if not lead.strip() else b""


def _unit(data: bytes, root: _Node) -> bytes:
    """One indentation step of the file: the first indentation of an element deeper than its
    parent's, less the parent's (two spaces when none is)."""
    for node in _walk(root):
        outer = _indent(data, node.start)
        for child in node.children:
            inner = _indent(data, child.start)
            if inner.startswith(outer) and len(inner) > len(outer):
                return inner[len(outer) :]
    return b"  "


def _insert_child(data: bytes, node: _Node, lines: list[str], unit: bytes):
    """(start, end, bytes) of an edit adding an element (``lines``: its lines, nested ones
    starting with one ``\\t`` per level) as the first child of ``node``, indented as the file
    is (``unit``: one indentation step, `_unit`)."""
    outer = _indent(data, node.start)
    inner = outer + unit

    def text(prefix):  # the element's lines, each indented by prefix and its level
        return b"\n".join(prefix + unit * ln.count("\t") + ln.lstrip("\t").encode() for ln in lines)

    if node.close is None:  # <link name="x"/>: opened, the element, closed
        tag = data[node.start : node.open_end]
        head = tag[: tag.rstrip().rfind(b"/")].rstrip() + b">"
        return node.start, node.end, head + b"\n" + text(inner) + b"\n" + outer + b"</" + node.tag.encode() + b">"
    if node.children:
        first = node.children[0]
        indent = _indent(data, first.start)
        if indent:  # on a line of its own before the first child, which keeps its indentation
            return first.start, first.start, text(indent)[len(indent) :] + b"\n" + indent
        return first.start, first.start, text(b"").replace(b"\n", b"") + b" "
    # no child elements (only text or comments): before the end tag
    if _indent(data, node.close) or data[node.open_end : node.close].strip() == b"":
        return node.close, node.close, b"\n" + text(inner) + b"\n" + outer
    return node.close, node.close, text(b"").replace(b"\n", b"")


def _removal(data: bytes, node: _Node):
    """(start, end, b"") of an edit removing ``node``, with its line when it stands alone on it."""
    start, end = node.start, node.end
    line = data.rfind(b"\n", 0, start) + 1
    tail = data.find(b"\n", end)
    tail = len(data) if tail < 0 else tail
    if not data[line:start].strip() and not data[end:tail].strip():
        start, end = line, min(tail + 1, len(data))
    return start, end, b""


def _append_child(data: bytes, node: _Node, line: str):
    """(start, end, bytes) of an edit adding the one-line element ``line`` as the last child of
    ``node`` (which has child elements), on a line of its own as its last child is."""
    last = node.children[-1]
    indent = _indent(data, last.start)
    return last.end, last.end, (b"\n" + indent if indent else b" ") + line.encode()
