"""URDF reader (xml.etree) for serial chains.

Supported: revolute, continuous and prismatic joints; fixed joints, whose child links
are merged into the parent link's inertia (and whose placements are folded into the
next joint's placement); links off the chain (beyond the tip, side branches) merged
with their joints locked at zero; ``<origin xyz rpy>``, ``<axis>``, ``<inertial>`` with its own
origin and rpy, and ``<limit lower upper velocity effort>``. The chain runs from
``base_link`` (default: the root link) to ``tip_link`` (default: the only leaf reached
through movable joints). Errors name the element, the joint or link, and the file.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import numpy as np

from jaxid.dynamics import spatial
from jaxid.model import inertia
from jaxid.model.robot import Robot

MOVABLE = {"revolute": "R", "continuous": "R", "prismatic": "P"}

# One compiled function per operation instead of dozens of eager jnp ops per element: a URDF
# of n links then costs a few dispatches per element rather than a compile of each primitive.
_placement = jax.jit(lambda rpy, xyz: spatial.homogeneous(spatial.rpy(rpy[0], rpy[1], rpy[2]), xyz))
_transform = jax.jit(inertia.transform)
_from_mass_com_inertia = jax.jit(inertia.from_mass_com_inertia)


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


def _inertial(link, path):
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
    pi_c = _from_mass_com_inertia(m, np.zeros(3), I_c)
    return np.asarray(_transform(pi_c, _origin(el, what, path)))


def _chain(path, base_link=None, tip_link=None):
    """(root, links, joints, children, chain, base_link, tip_link) of a URDF file: its
    elements by name, the joints below each link, and the joints from base to tip."""
    path = str(path)
    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise FileNotFoundError(f"URDF file not found: {path}") from None
    except ET.ParseError as exc:
        raise URDFError(f"{path}: not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{path}: the root element is <{root.tag}>, expected <robot>")
    links = {}
    for link in root.findall("link"):
        if not link.get("name"):
            raise URDFError(f"{path}: a <link> has no name attribute")
        links[link.get("name")] = link
    joints = {}
    for j in root.findall("joint"):
        jname = j.get("name")
        if not jname:
            raise URDFError(f"{path}: a <joint> has no name attribute")
        jtype = j.get("type")
        if jtype not in (*MOVABLE, "fixed"):
            raise URDFError(f"{path}: joint {jname!r} has type {jtype!r}; supported: revolute, continuous, prismatic, fixed")
        for tag in ("parent", "child"):
            el = j.find(tag)
            if el is None or not el.get("link"):
                raise URDFError(f"{path}: joint {jname!r}: missing <{tag} link=...>")
            if el.get("link") not in links:
                raise URDFError(f"{path}: joint {jname!r}: <{tag}> names unknown link {el.get('link')!r}")
        joints[jname] = j
    if not joints:
        raise URDFError(f"{path}: no <joint> elements")
    children = {}
    child_joint = {}
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
    for what, link in (("base_link", base_link), ("tip_link", tip_link)):
        if link is not None and link not in links:
            raise URDFError(f"{path}: {what} {link!r} is not a link of this URDF")

    def movable_leaves(link):
        out = []
        for jname in children.get(link, []):
            child = joints[jname].find("child").get("link")
            below = movable_leaves(child)
            out += below if below else ([child] if joints[jname].get("type") in MOVABLE else [])
        return out

    if tip_link is None:
        leaves = movable_leaves(base_link)
        if len(leaves) != 1:
            raise URDFError(f"{path}: the tree below {base_link!r} ends in links {leaves}; pass tip_link= to choose a chain")
        tip_link = leaves[0]
    chain = []  # joints from base to tip
    link = tip_link
    while link != base_link:
        if link not in child_joint:
            raise URDFError(f"{path}: tip_link {tip_link!r} is not below base_link {base_link!r}")
        chain.append(child_joint[link])
        link = joints[child_joint[link]].find("parent").get("link")
    chain.reverse()
    return root, links, joints, children, chain, base_link, tip_link


def load(path, *, base_link=None, tip_link=None, joint_terms=(), joint_params=None, name=None,
         gravity=(0.0, 0.0, -9.81)) -> Robot:
    """Read a URDF file into a :class:`Robot` (see the module docstring)."""
    path = str(path)
    root, links, joints, children, chain, base_link, tip_link = _chain(path, base_link, tip_link)
    movable_chain = {j for j in chain if joints[j].get("type") in MOVABLE}

    def merged_inertial(link):
        """Inertia of `link` plus every link hanging from it off the movable chain.

        Links behind fixed joints are rigidly attached; links behind movable joints that
        are not part of the chain (a gripper beyond the tip, a side branch) are carried
        as if those joints were locked at zero, as Pinocchio's reduced models do.
        """
        pi = _inertial(links[link], path)
        for jname in children.get(link, []):
            j = joints[jname]
            if jname in movable_chain:
                continue
            T = _origin(j, f"joint {jname!r}", path)
            pi = pi + np.asarray(_transform(merged_inertial(j.find("child").get("link")), T))
        return pi

    placements, axes, inertial, types, names, limits = [], [], [], [], [], []
    pending = np.eye(4)  # fixed transforms since the last movable joint
    for jname in chain:
        j = joints[jname]
        T = _origin(j, f"joint {jname!r}", path)
        if j.get("type") == "fixed":
            pending = pending @ T
            continue
        what = f"joint {jname!r}"
        ax = j.find("axis")
        axis = _floats(ax.get("xyz"), 3, f"{what} <axis xyz>", path) if ax is not None else np.array([1.0, 0, 0])
        if np.linalg.norm(axis) < 1e-12:
            raise URDFError(f"{path}: {what} <axis xyz>: zero axis")
        lim = j.find("limit")
        if lim is None and j.get("type") != "continuous":
            raise URDFError(f"{path}: {what}: a {j.get('type')} joint needs <limit lower upper effort velocity>")
        get = lambda key, default: (_floats(lim.get(key), 1, f"{what} <limit {key}>", path)[0]
                                    if lim is not None and lim.get(key) is not None else default)
        lo, hi = (-np.inf, np.inf) if j.get("type") == "continuous" else (get("lower", -np.inf), get("upper", np.inf))
        limits.append((lo, hi, get("velocity", np.inf), get("effort", np.inf)))
        placements.append(pending @ T)
        pending = np.eye(4)
        axes.append(axis / np.linalg.norm(axis))
        types.append(MOVABLE[j.get("type")])
        names.append(jname)
        child = j.find("child").get("link")
        inertial.append(merged_inertial(child))
    if not placements:
        raise URDFError(f"{path}: no movable joint between {base_link!r} and {tip_link!r}")
    lim = np.array(limits)
    return Robot(np.stack(placements), np.stack(axes), np.stack(inertial), joint_types=tuple(types),
                 names=tuple(names), joint_terms=joint_terms, joint_params=joint_params, tip=pending,
                 gravity=gravity, q_min=lim[:, 0], q_max=lim[:, 1], qd_max=lim[:, 2], tau_max=lim[:, 3],
                 name=name or root.get("name", "robot"))
