"""How a model is described in params.json (``model``), rebuilt from it, and recognised again:
[`model_description`][jaxid.model.description.model_description], [`build_model`][jaxid.model.description.build_model],
[`model_from_description`][jaxid.model.description.model_from_description], [`fingerprint`][jaxid.model.description.fingerprint]."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np

from jaxid import arrays


def model_description(
    robot, *, builtin: str | None = None, urdf=None, tip_link: str | None = None, dh=None, mjcf=None
) -> dict:
    """The ``model`` entry of params.json for ``robot``: how to rebuild it (a built-in name,
    a URDF path, a DH description file (``jaxid.model.dh``), an MJCF path, or none for a model
    built in code: then a reader must give the robot), its joint terms, the [`fingerprint`][jaxid.model.description.fingerprint]
    of its kinematics and, for a file, its SHA-256 (``urdf_sha256``, ``dh_sha256``,
    ``mjcf_sha256``); with a transmission (``Robot.transmission``), its matrix and offset
    (``transmission``: the model's joint terms act on the motors, and its logs are motor-side)."""
    if sum(x is not None for x in (builtin, urdf, dh, mjcf)) > 1:
        raise ValueError("describe the model by at most one of builtin= (e.g. 'ur5'), urdf=, dh= and mjcf=")
    desc = {
        "name": robot.name,
        "builtin": builtin,
        "urdf": None if urdf is None else str(Path(urdf).resolve()),
        "tip_link": tip_link,
        "joint_terms": list(robot.joint_terms),
        "coulomb_eps": float(robot.coulomb_eps),
        "stribeck_vs": float(robot.stribeck_vs),
        "gravity": np.asarray(robot.gravity, dtype=float).tolist(),
        "n": int(robot.n),
        "fingerprint": fingerprint(robot),
    }
    for key, path in (("urdf", urdf), ("dh", dh), ("mjcf", mjcf)):
        if path is not None:
            desc[key] = str(Path(path).resolve())
            desc[f"{key}_sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if getattr(robot, "transmission", None) is not None:
        desc["transmission"] = robot.transmission.to_dict()
    return desc


def fingerprint(robot) -> str:
    """A short hash (16 hex digits) of a robot's structure and geometry: joint names and
    types, parents, placements, axes, tip and gravity, rounded to 1e-9 (not the model's name,
    inertial parameters or joint terms: those are what is identified). Parameters identified
    on one model transfer to another with the same fingerprint."""
    h = hashlib.sha256()
    for part in (tuple(robot.names), tuple(robot.joint_types), tuple(robot.parents)):
        h.update(repr(part).encode())
    for a in (robot.placements, robot.axes, robot.tip, robot.gravity):
        h.update(np.round(np.asarray(a, dtype=float), 9).tobytes())
    if robot.n != robot.n_joints or robot.tip_joint != robot.n_joints - 1:  # older models' hashes unchanged
        h.update(repr((robot.mimic, robot.tip_joint)).encode())
        h.update(np.round(np.asarray([robot.mimic_ratio, robot.mimic_offset]), 9).tobytes())
    return h.hexdigest()[:16]


def model_mismatches(robot, params) -> list[str]:
    """Differences between the model ``params`` was identified for (``params.model``) and
    ``robot``: joint count, [`fingerprint`][jaxid.model.description.fingerprint] (kinematics), name. Empty when they agree."""
    desc = params.model
    if desc.get("n") is not None and desc["n"] != robot.n:
        return [f"the parameters are for a {desc['n']}-joint model but this robot has {robot.n} joints"]
    if desc.get("fingerprint") is not None and desc["fingerprint"] != fingerprint(robot):
        return [
            f"the parameters were identified for a robot with other kinematics (model {desc.get('name')!r}, "
            f"fingerprint {desc['fingerprint']}) than {robot.name!r} (fingerprint {fingerprint(robot)})"
        ]
    if desc.get("name") is not None and desc["name"] != robot.name:
        return [f"the parameters were identified for model {desc['name']!r}, this is {robot.name!r}"]
    ours = getattr(robot, "transmission", None)
    theirs = desc.get("transmission")
    if theirs is not None and ours is not None:
        same = all(
            np.allclose(np.asarray(theirs[k], dtype=float), np.asarray(getattr(ours, v)), rtol=1e-9, atol=1e-12)
            for k, v in (("matrix", "matrix"), ("offset", "offset"))
        )
        if not same:
            return [
                "the parameters were identified through another transmission (params.json model.transmission) "
                "than this model's"
            ]
    return []


def builtin_model(name: str):
    """A built-in robot by name: ``ur5``, ``puma560`` or ``planarN`` (N = 1..99 links)."""
    from jaxid.model import library as models

    if name in ("ur5", "puma560"):
        return getattr(models, name)()
    m = re.fullmatch(r"planar([1-9][0-9]?)", name)
    if m:
        return models.planar(int(m[1]))
    raise ValueError(f"unknown built-in robot {name!r}; use ur5, puma560 or planarN (e.g. planar2), or a URDF file")


def build_model(
    *,
    builtin: str | None = None,
    urdf=None,
    tip_link: str | None = None,
    dh=None,
    mjcf=None,
    joint_terms=(),
    coulomb_eps: float | None = None,
    stribeck_vs: float | None = None,
    gravity=None,
    check_inertia: bool = True,
    transmission=None,
):
    """A ``Robot`` from a built-in name, a URDF file, a DH description file
    (``jaxid.model.dh``) or an MJCF file, with ``joint_terms`` enabled (values 0, or a URDF's
    ``<dynamics>``, an MJCF joint's ``damping frictionloss armature``)
    and, when given, the Coulomb smooth-sign scale ``coulomb_eps`` and the Stribeck velocity
    ``stribeck_vs`` (rad/s), and the gravity vector ``gravity`` (3,) m/s^2 in the base frame (e.g.
    ``jaxid.identification.gravity.fit_gravity``'s). check_inertia=False accepts a URDF whose inertials are not
    physical (placeholders: plain least squares does not use them), and an MJCF's likewise.
    transmission: None, a ``jaxid.model.transmission.Transmission``, its table (params.json's
    ``model.transmission``, a transmission file's keys), a transmission file (.json, .toml) or
    ``"urdf"`` (the URDF's ``<transmission>`` elements, ``jaxid.model.urdf.read_transmission``):
    the joint terms then act on the motors (``Robot.transmission``), with the model file's nominal
    joint-side values converted where there is a motor-side equivalent
    (``jaxid.model.transmission.motor_side_terms``)."""
    import dataclasses

    from jaxid.model import dh as dh_file
    from jaxid.model.robot import Robot

    if sum(x is not None for x in (builtin, urdf, dh, mjcf)) != 1:
        raise ValueError(
            "give exactly one of a built-in robot name, a URDF path, a DH description file and an MJCF path"
        )
    if tip_link is not None and urdf is None:
        raise ValueError("a tip link selects the chain of a URDF file; it needs a URDF path")
    if urdf is not None:
        robot = Robot.from_urdf(urdf, tip_link=tip_link, joint_terms=tuple(joint_terms), check_inertia=check_inertia)
    elif dh is not None:
        robot = dh_file.load(dh, joint_terms=tuple(joint_terms))
    elif mjcf is not None:
        robot = Robot.from_mjcf(mjcf, joint_terms=tuple(joint_terms), check_inertia=check_inertia)
    else:
        assert builtin is not None  # the one given, as checked above
        robot = builtin_model(builtin).with_joint_terms(tuple(joint_terms))
    if coulomb_eps is not None:
        if not (math.isfinite(coulomb_eps) and coulomb_eps > 0):
            raise ValueError(f"coulomb_eps must be > 0 rad/s, got {coulomb_eps}")
        robot = dataclasses.replace(robot, coulomb_eps=float(coulomb_eps))
    if stribeck_vs is not None:
        if not (math.isfinite(stribeck_vs) and stribeck_vs > 0):
            raise ValueError(f"stribeck_vs must be > 0 rad/s, got {stribeck_vs}")
        robot = dataclasses.replace(robot, stribeck_vs=float(stribeck_vs))
    if gravity is not None:
        g = np.asarray(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"gravity must be 3 finite numbers (m/s^2, base frame), got {gravity!r}")
        robot = dataclasses.replace(robot, gravity=arrays.device(g))
    if transmission is not None:
        robot = _with_transmission(robot, transmission, urdf)
    return robot


def _with_transmission(robot, spec, urdf):
    """``robot`` with the transmission of ``spec`` (see [`build_model`][jaxid.model.description.build_model]), its nominal joint terms
    carried to the motors."""
    from jaxid.model import transmission as tr
    from jaxid.model import urdf as urdf_reader

    names = robot.coordinate_names
    if isinstance(spec, tr.Transmission):
        t = spec.for_joints(None, names)
    elif isinstance(spec, dict):
        t = tr.Transmission.from_dict(spec, names, where="model.transmission")
    elif str(spec) == "urdf":
        if urdf is None:
            raise ValueError("the transmission 'urdf' is read from a URDF's <transmission> elements; give the URDF")
        try:
            t = urdf_reader.read_transmission(urdf, names)
        except urdf_reader.URDFError as e:  # a transmission problem, named as such
            raise tr.TransmissionError(str(e)) from None
    else:
        t = tr.load(spec, names)
    values = tr.motor_side_terms(t, robot.joint_terms, np.asarray(robot.joint_params))
    return robot.with_transmission(t).with_joint_terms(robot.joint_terms, values)


def model_from_description(
    model: dict,
    *,
    builtin: str | None = None,
    urdf=None,
    tip_link: str | None = None,
    dh=None,
    mjcf=None,
    check_inertia: bool = True,
    transmission=None,
):
    """Rebuild the model a params.json file describes; ``builtin``/``urdf``/``dh``/``mjcf`` (and ``tip_link``)
    replace the file's robot while keeping its joint terms, Coulomb scale, Stribeck velocity, gravity and
    transmission (``transmission``, as [`build_model`][jaxid.model.description.build_model] takes it, replaces the file's).
    FileNotFoundError when the file names a URDF that is not there, ValueError when it names
    no robot (a model built in code) and none is given."""
    kw = dict(
        joint_terms=model.get("joint_terms", ()),
        coulomb_eps=model.get("coulomb_eps"),
        stribeck_vs=model.get("stribeck_vs"),
        gravity=model.get("gravity"),
        check_inertia=check_inertia,
        transmission=model.get("transmission") if transmission is None else transmission,
    )
    if any(x is not None for x in (builtin, urdf, dh, mjcf)):
        return build_model(builtin=builtin, urdf=urdf, tip_link=tip_link, dh=dh, mjcf=mjcf, **kw)
    if all(model.get(k) is None for k in ("builtin", "urdf", "dh", "mjcf")):
        raise ValueError(
            "the parameters name no built-in robot, URDF, DH or MJCF file (a model built in code): give the robot"
        )
    for key, what in (("urdf", "URDF"), ("dh", "DH description file"), ("mjcf", "MJCF file")):
        if model.get(key) is not None and not Path(model[key]).is_file():
            raise FileNotFoundError(f"the model's {what} {model[key]!r} is not there")
    return build_model(
        builtin=model.get("builtin"),
        urdf=model.get("urdf"),
        tip_link=model.get("tip_link"),
        dh=model.get("dh"),
        mjcf=model.get("mjcf"),
        **kw,
    )
