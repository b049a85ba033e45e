"""Identified parameters on disk (``params.json``), torque prediction from them, URDF export.

A ``params.json`` file holds everything needed to predict torques again, or to check an
identification later:

``format``, ``version``
    ``"jaxid.params"``, 1.
``model``
    how to rebuild the model: ``builtin`` name (``"ur5"``, ``"planar2"``) or ``urdf`` path
    and ``tip_link``; ``joint_terms`` (e.g. ``["fv", "fc", "offset"]``), ``coulomb_eps``
    and ``stribeck_vs`` (rad/s), ``gravity`` (m/s^2, base frame; identified by ``jaxid identify
    --fit-gravity``, absent in older files: the model's own), ``name``, ``n``.
``parameter_names``
    the p standard parameters (``m1, mx1, ..., fv1, fc1, offset1, ...``).
``base``
    the base parameters: readable ``names`` (``"Izz1 + Iyy2 + 0.18*m2"``), ``indices`` and
    ``dependent`` (0-based columns of the standard regressor), ``K`` (b, p - b) with
    ``theta_base = theta[indices] + K @ theta[dependent]`` (Gautier 1990), ``r_diag``, ``gap``.
``estimate``, ``std``, ``rel_std_percent``, ``covariance``
    the base estimate (b,) — least squares, or the base parameters of a physically
    consistent estimate (``fit.method`` ``"...+consistent"``) — its standard deviations,
    100 std / |estimate| (null where the estimate is 0) and the covariance (b, b) of the
    least-squares estimate.
``parameters``
    ``{base name: estimate}``, for readers that take a name -> value map (``jaxid payload``):
    a base value set on its leading parameter, the dependent ones 0, predicts the same torques.
``fit``
    method, condition number and singular values (b,) of the column-scaled base regressor
    (``singular_values``), residual RMS per joint (N m), noise variances, degrees of
    freedom, number of samples, the data files.
``standard``
    null, or ``{"theta": [p values], "consistent": true, "source": ...}``: physically
    consistent standard parameters, from which a URDF can be written (base parameters alone
    do not determine them): either the base estimate with the non-identifiable parameters at
    their nominal values, when that is consistent, or the constrained consistent estimate.
    Torques are predicted from ``estimate``.
``lugre``
    absent, or per-joint LuGre friction identified with the base parameters (``jaxid
    identify --friction lugre``): ``names`` (the eight of ``jaxid.friction.lugre.NAMES``),
    ``units``, ``values`` and ``std`` (n, 8); predictions then add each joint's LuGre torque,
    its bristle state integrated along the run from rest.

:func:`load_params` rejects a malformed file with a :class:`ParamsError` (a ``ValueError``)
that names the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid import arrays, cache
from jaxid.dynamics.batching import batched, bucketed_jit
from jaxid.friction.lugre import JOINT_UNITS as LUGRE_UNITS
from jaxid.friction.lugre import NAMES as LUGRE_NAMES
from jaxid.friction.lugre import LuGre, check_parameters
from jaxid.identification.base import BaseParameters

FORMAT = "jaxid.params"
VERSION = 1


class ParamsError(ValueError):
    """A params.json file is missing, unreadable or malformed; the message names the field."""


class Params(eqx.Module):
    """Identified base parameters of a model (the content of a ``params.json`` file).

    Attributes:
        model: description of the model (see the module docstring), static.
        parameter_names: names of the p standard parameters, static.
        base: ``BaseParameters`` (indices, dependent, K, names).
        theta: base estimate (b,). cov: its covariance (b, b).
        fit: fit statistics (dict of plain numbers and lists), static.
        standard: physically consistent standard parameters (p,) (for a URDF), or None.
        lugre: per-joint LuGre friction (``jaxid.friction.LuGre``, fields (n,)) added to the
            predicted torques, or None; its std (n, 8) is in ``fit["lugre"]["std"]``.
    """

    model: dict = eqx.field(static=True)
    parameter_names: tuple = eqx.field(static=True)
    base: BaseParameters
    theta: jax.Array
    cov: jax.Array
    fit: dict = eqx.field(static=True)
    standard: jax.Array | None = None
    lugre: LuGre | None = None

    @property
    def std(self):
        """Standard deviations of the base estimate (b,)."""
        xp = arrays.namespace(self.cov)
        return jnp.asarray(xp.sqrt(xp.maximum(xp.diag(self.cov), 0.0)))

    @property
    def rel_std(self):
        """100 * std / |theta| (b,), % (inf where theta is 0)."""
        xp = arrays.namespace(self.cov, self.theta)
        return jnp.asarray(100.0 * xp.asarray(self.std) / xp.abs(self.theta))

    def full(self):
        """A standard parameter vector (p,) predicting the torques of the base estimate: the
        base values on their leading (independent) parameters, the dependent ones 0."""
        return jnp.zeros(len(self.parameter_names)).at[self.base.indices].set(self.theta)

    def full_cov(self):
        """The covariance (p, p) of :meth:`full`: the base covariance on the leading parameters,
        0 elsewhere."""
        i = np.asarray(self.base.indices)
        return jnp.zeros((len(self.parameter_names),) * 2).at[np.ix_(i, i)].set(self.cov)


# --------------------------------------------------------------------------- the model
def model_description(
    robot, *, builtin: str | None = None, urdf=None, tip_link: str | None = None, dh=None, mjcf=None
) -> dict:
    """The ``model`` entry of params.json for ``robot``: how to rebuild it (a built-in name,
    a URDF path, a DH description file (``jaxid.model.dh``), an MJCF path, or none for a model
    built in code: then a reader must give the robot), its joint terms, the :func:`fingerprint`
    of its kinematics and, for a file, its SHA-256 (``urdf_sha256``, ``dh_sha256``,
    ``mjcf_sha256``)."""
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


def model_mismatches(robot, params: Params) -> list[str]:
    """Differences between the model ``params`` was identified for (``params.model``) and
    ``robot``: joint count, :func:`fingerprint` (kinematics), name. Empty when they agree."""
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
    return []


def builtin_model(name: str):
    """A built-in robot by name: ``ur5``, ``puma560`` or ``planarN`` (N = 1..99 links)."""
    from jaxid import models

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
):
    """A ``Robot`` from a built-in name, a URDF file, a DH description file
    (``jaxid.model.dh``) or an MJCF file, with ``joint_terms`` enabled (values 0, or a URDF's
    ``<dynamics>``, an MJCF joint's ``damping frictionloss armature``)
    and, when given, the Coulomb smooth-sign scale ``coulomb_eps`` and the Stribeck velocity
    ``stribeck_vs`` (rad/s), and the gravity vector ``gravity`` (3,) m/s^2 in the base frame (e.g.
    ``jaxid.identification.gravity.fit_gravity``'s). check_inertia=False accepts a URDF whose inertials are not
    physical (placeholders: plain least squares does not use them), and an MJCF's likewise."""
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
        robot = dataclasses.replace(robot, gravity=jnp.asarray(g))
    return robot


def model_from_description(
    model: dict,
    *,
    builtin: str | None = None,
    urdf=None,
    tip_link: str | None = None,
    dh=None,
    mjcf=None,
    check_inertia: bool = True,
):
    """Rebuild the model a params.json file describes; ``builtin``/``urdf``/``dh``/``mjcf`` (and ``tip_link``)
    replace the file's robot while keeping its joint terms, Coulomb scale, Stribeck velocity and gravity.
    FileNotFoundError when the file names a URDF that is not there, ValueError when it names
    no robot (a model built in code) and none is given."""
    kw = dict(
        joint_terms=model.get("joint_terms", ()),
        coulomb_eps=model.get("coulomb_eps"),
        stribeck_vs=model.get("stribeck_vs"),
        gravity=model.get("gravity"),
        check_inertia=check_inertia,
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


# ------------------------------------------------------------------------------ writing
def from_fit(
    model: dict, parameter_names, base: BaseParameters, fit, *, n_samples: int, sources=(), standard=None
) -> Params:
    """Params from an ``Identification`` of the base parameters (``fit``, from
    ``jaxid.identify(base.reduce(W), tau, ...)``). n_samples: samples used; sources: data
    files; standard: physically consistent standard parameters (p,), or None."""
    stats = {
        "method": fit.method,
        "cond": float(fit.cond),
        "singular_values": [json_number(v) for v in np.asarray(fit.singular_values)],
        "residual_rms": np.asarray(fit.residual_rms).tolist(),
        "sigma2": np.asarray(fit.sigma2).tolist(),
        "dof": float(fit.dof),
        "n_samples": int(n_samples),
        "sources": [str(s) for s in sources],
    }
    return Params(
        model=dict(model),
        parameter_names=tuple(parameter_names),
        base=base,
        theta=jnp.asarray(fit.theta),
        cov=jnp.asarray(fit.cov),
        fit=stats,
        standard=None if standard is None else jnp.asarray(standard, dtype=float),
    )


def json_number(x):
    """A JSON number, or null for NaN/inf (JSON has neither)."""
    x = float(x)
    return x if math.isfinite(x) else None


def to_json(params: Params) -> dict:
    """The params.json document of ``params`` (a dict of plain Python values)."""
    arr = lambda a: [json_number(v) for v in np.ravel(np.asarray(a))]
    b = params.base
    theta = np.asarray(params.theta)
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": params.model,
        "parameter_names": list(params.parameter_names),
        "base": {
            "names": list(b.names),
            "indices": np.asarray(b.indices).tolist(),
            "dependent": np.asarray(b.dependent).tolist(),
            "K": [arr(row) for row in np.asarray(b.K)],
            "r_diag": arr(b.r_diag),
            "gap": json_number(b.gap),
        },
        "estimate": arr(theta),
        "std": arr(params.std),
        "rel_std_percent": arr(params.rel_std),
        "covariance": [arr(row) for row in np.asarray(params.cov)],
        "parameters": dict(zip(b.names, arr(theta))),
        "fit": params.fit,
        "standard": None
        if params.standard is None
        else {
            "theta": arr(params.standard),
            "consistent": True,
            "source": params.fit.get(
                "standard_source", "base estimate with the non-identifiable parameters at their nominal values"
            ),
        },
        **(
            {}
            if params.lugre is None
            else {
                "lugre": {
                    "names": list(LUGRE_NAMES),
                    "units": list(LUGRE_UNITS),
                    "values": [arr(row) for row in np.asarray(params.lugre.vector())],
                    "std": [
                        arr(row)
                        for row in np.asarray(
                            params.fit.get("lugre", {}).get("std", np.full(np.shape(params.lugre.vector()), np.nan))
                        )
                    ],
                }
            }
        ),
    }


def save_params(path, params: Params) -> Path:
    """Write ``params`` as JSON to ``path`` (parents created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = to_json(params)
    urdf = doc["model"].get("urdf")
    if urdf is not None:
        # Relative to the params file when it can be (a folder moved or cloned elsewhere keeps working).
        try:
            doc["model"] = {**doc["model"], "urdf": os.path.relpath(Path(urdf).resolve(), path.resolve().parent)}
        except ValueError:  # another drive (Windows)
            pass
    from jaxid.atomic import atomic_write

    with atomic_write(path) as f:  # a crash mid-write leaves the old file, never half a new one
        f.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return path


# ------------------------------------------------------------------------------ reading
def _field(doc, key, path, where=""):
    if not isinstance(doc, dict) or key not in doc:
        raise ParamsError(f"{path}: missing field '{where}{key}'")
    return doc[key]


def _array(value, shape, path, name, *, integer=False, nullable=False):
    """A float (or int) array of ``shape`` from JSON lists; None entries allowed if nullable (NaN)."""
    what = "integers" if integer else "numbers"
    try:
        a = np.array(value, dtype=object)
        if a.shape != shape:
            raise ValueError
        flat = [math.nan if (v is None and nullable) else v for v in a.ravel()]
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in flat):
            raise ValueError
        if integer and any(not float(v).is_integer() for v in flat):
            raise ValueError
        out = np.array(flat, dtype=np.int64 if integer else np.float64).reshape(shape)
    except (ValueError, TypeError):
        got = np.shape(value) if isinstance(value, list) else type(value).__name__
        raise ParamsError(f"{path}: field '{name}' must be an array of {what} with shape {shape}, got {got}") from None
    if not nullable and not integer and not np.all(np.isfinite(out)):
        raise ParamsError(f"{path}: field '{name}' contains non-finite values")
    return out


def _names(value, path, name, count=None):
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ParamsError(f"{path}: field '{name}' must be a list of strings")
    if count is not None and len(value) != count:
        raise ParamsError(f"{path}: field '{name}' has {len(value)} entries, expected {count}")
    return tuple(value)


def load_params(path) -> Params:
    """Read a params.json file written by :func:`save_params`.

    Raises ParamsError (a ValueError) naming the file and the field of any problem: missing
    file, invalid JSON, wrong format, missing fields, arrays of the wrong shape or with
    non-numbers, indices out of range, a covariance that is not symmetric.
    """
    path = Path(path)
    if path.is_dir():
        raise ParamsError(f"{path}: is a directory, not a params.json file")
    if not path.is_file():
        raise ParamsError(f"{path}: no such file")
    try:
        doc = json.loads(path.read_text())
    except PermissionError:
        raise ParamsError(f"{path}: cannot read the file (permission denied)") from None
    except UnicodeDecodeError:
        raise ParamsError(f"{path}: not a text file; expected a params.json written by 'jaxid identify'") from None
    except json.JSONDecodeError as e:
        raise ParamsError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ParamsError(
            f'{path}: not a jaxid params file (expected "format": "{FORMAT}"); write one with '
            "'jaxid identify ... -o params.json'"
        )
    if doc.get("version") != VERSION:
        raise ParamsError(f"{path}: field 'version' is {doc.get('version')!r}; this jaxid reads version {VERSION}")

    model = _field(doc, "model", path)
    if not isinstance(model, dict):
        raise ParamsError(f"{path}: field 'model' must be an object")
    if model.get("builtin") is not None and model.get("urdf") is not None:
        raise ParamsError(f"{path}: field 'model' must name at most one of 'builtin' and 'urdf'")
    if isinstance(model.get("urdf"), str) and not Path(model["urdf"]).is_absolute():
        model = {**model, "urdf": str((path.resolve().parent / model["urdf"]).resolve())}
    terms = _names(_field(model, "joint_terms", path, "model."), path, "model.joint_terms")
    for key in ("coulomb_eps", "stribeck_vs"):
        value = model.get(key)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value is not None and not (number and 0 < value < math.inf):
            raise ParamsError(f"{path}: field 'model.{key}' must be a number > 0 and finite, got {value!r}")
    if model.get("gravity") is not None:
        _array(model["gravity"], (3,), path, "model.gravity")

    names = _names(_field(doc, "parameter_names", path), path, "parameter_names")
    p = len(names)
    base_doc = _field(doc, "base", path)
    bnames = _names(_field(base_doc, "names", path, "base."), path, "base.names")
    b = len(bnames)
    if not 0 < b <= p:
        raise ParamsError(f"{path}: field 'base.names' has {b} entries for {p} parameters")
    indices = _array(_field(base_doc, "indices", path, "base."), (b,), path, "base.indices", integer=True)
    dependent = _array(_field(base_doc, "dependent", path, "base."), (p - b,), path, "base.dependent", integer=True)
    if sorted(np.concatenate([indices, dependent]).tolist()) != list(range(p)):
        raise ParamsError(
            f"{path}: fields 'base.indices' and 'base.dependent' must together list each of the "
            f"{p} parameter indices 0..{p - 1} once"
        )
    K = _array(_field(base_doc, "K", path, "base."), (b, p - b), path, "base.K")
    r_diag = base_doc.get("r_diag")
    r_diag = np.full(p, np.nan) if r_diag is None else _array(r_diag, (p,), path, "base.r_diag", nullable=True)
    gap = base_doc.get("gap")
    base = BaseParameters(
        indices=jnp.asarray(indices, dtype=jnp.int32),
        dependent=jnp.asarray(dependent, dtype=jnp.int32),
        K=jnp.asarray(K),
        r_diag=jnp.asarray(r_diag),
        gap=math.inf if gap is None else float(gap),
        rank=b,
        names=bnames,
        standard_names=names,
    )

    theta = _array(_field(doc, "estimate", path), (b,), path, "estimate")
    cov = _array(_field(doc, "covariance", path), (b, b), path, "covariance")
    if not np.allclose(cov, cov.T, rtol=1e-10, atol=0.0):
        raise ParamsError(f"{path}: field 'covariance' is not symmetric")
    fit = doc.get("fit") or {}
    if not isinstance(fit, dict):
        raise ParamsError(f"{path}: field 'fit' must be an object")
    standard = doc.get("standard")
    if standard is not None:
        standard = _array(_field(standard, "theta", path, "standard."), (p,), path, "standard.theta")
    bad = [t for t in terms if not any(re.fullmatch(rf"{t}\d+", s) for s in names)]
    if bad:
        raise ParamsError(f"{path}: field 'model.joint_terms' lists {bad}, which are not in 'parameter_names'")
    lugre = doc.get("lugre")
    if lugre is not None:
        n = model.get("n")
        if not isinstance(n, int) or list(_field(lugre, "names", path, "lugre.")) != list(LUGRE_NAMES):
            raise ParamsError(f"{path}: field 'lugre' needs 'model.n' and names {list(LUGRE_NAMES)}")
        lugre = LuGre.from_vector(
            jnp.asarray(_array(_field(lugre, "values", path, "lugre."), (n, 8), path, "lugre.values"))
        )
        try:
            check_parameters(lugre)
        except ValueError as e:
            raise ParamsError(f"{path}: field 'lugre.values': {e}") from None
    return Params(
        model=dict(model),
        parameter_names=names,
        base=base,
        theta=jnp.asarray(theta),
        cov=jnp.asarray(cov),
        fit=dict(fit),
        standard=None if standard is None else jnp.asarray(standard),
        lugre=lugre,
    )


# --------------------------------------------------------------------------- prediction
def check_model(model, params: Params) -> None:
    """ValueError unless ``model`` has exactly the standard parameters ``params`` was identified for."""
    names = tuple(model.parameter_names())
    if names != params.parameter_names:
        ours, theirs = set(names), set(params.parameter_names)
        diff = sorted(ours ^ theirs)[:6]
        raise ValueError(
            f"the parameters were identified for a model with {len(params.parameter_names)} parameters "
            f"(joint terms {params.model.get('joint_terms')}), but this model has {len(names)} "
            f"(joint terms {list(getattr(model, 'joint_terms', []))})"
            + (f"; they differ in {diff}" if diff else "; their order differs")
            + ". Use the model of the params file (same robot, --joint-terms)"
        )
    eps = params.model.get("coulomb_eps")
    if eps is not None and hasattr(model, "coulomb_eps") and not math.isclose(model.coulomb_eps, eps):
        raise ValueError(
            f"the parameters were identified with coulomb_eps = {eps:g} rad/s but the model has "
            f"{model.coulomb_eps:g}; use the same Coulomb smooth-sign scale"
        )
    vs = params.model.get("stribeck_vs")
    if (
        vs is not None
        and "fs" in getattr(model, "joint_terms", ())
        and hasattr(model, "stribeck_vs")
        and not math.isclose(model.stribeck_vs, vs)
    ):
        raise ValueError(
            f"the parameters were identified with stribeck_vs = {vs:g} rad/s but the model has "
            f"{model.stribeck_vs:g}; use the same Stribeck velocity (--stribeck-vs)"
        )


@bucketed_jit  # padded to the bucket of N: a record of another length reuses the program
def _torques(model_theta, q, qd, qdd):
    model, theta = model_theta
    return batched(lambda m, *x: m.torque(theta, *x), model, q, qd, qdd)


def predict(model, params: Params, dataset) -> jax.Array:
    """Torques (N, n), N m, that the identified parameters predict along ``dataset``.

    model: the model ``params`` was identified for (same parameter names; e.g.
    :func:`model_from_description` of ``params.model``). dataset: a ``jaxid.data.Dataset``
    with ``qd`` and ``qdd``. Base parameters determine the torques: the prediction is
    ``W_base @ theta_base``, computed as the model's torque at :meth:`Params.full`, plus, for
    parameters with LuGre friction (``params.lugre``), each joint's LuGre torque with its
    bristle state integrated along the run from rest (``jaxid.friction.lugre_joint_torque``;
    the run must be uniformly sampled).
    """
    check_model(model, params)
    if dataset.qd is None or dataset.qdd is None:
        raise ValueError(
            f"{dataset.source}: the dataset has no velocities/accelerations; read it with "
            "derivatives='butterworth' (the default of jaxid.data.read)"
        )
    if dataset.n != model.n:
        raise ValueError(f"{dataset.source}: {dataset.n} joints in the data but the model has {model.n}")
    tau = _torques((model, params.full()), dataset.q, dataset.qd, dataset.qdd)
    if params.lugre is None:
        return tau
    from jaxid.friction.lugre import joint_torque

    try:
        return tau + joint_torque(params.lugre, dataset.t, dataset.qd)
    except ValueError as e:
        raise ValueError(f"{dataset.source}: LuGre friction: {e}") from None


def validation_metrics(real, pred, tau_max=None) -> dict:
    """Metrics of predicted against measured torques, both (N, n) N m, as plain numbers.

    ``{name: {"per_joint": [n values], "overall": value}}`` for rmse (N m), nrmse (%), r2,
    wape (%), max_pe (%) (``jaxid.metrics``); ``relative_error`` = 100 ||e|| / ||tau|| over
    all joints and samples (%); and, when every torque limit tau_max (n,) N m is finite,
    ``nrms_limits`` (``jaxid.metrics.nrms_limits``: 100 RMSE_j / (2 tau_max_j), %, the RMS error
    over the torque range [-tau_max, tau_max]), overall its mean over joints. Non-finite values
    become None.
    """
    from jaxid import metrics

    out = {
        k: {"per_joint": [json_number(v) for v in np.asarray(d["per_joint"])], "overall": json_number(d["overall"])}
        for k, d in metrics.summary(real, pred).items()
    }
    out["relative_error"] = json_number(metrics.nrmse(real, pred, axis=None))
    if tau_max is not None and np.all(np.isfinite(tau_max)):
        per = np.asarray(metrics.nrms_limits(real, pred, tau_max))
        out["nrms_limits"] = {"per_joint": [json_number(v) for v in per], "overall": json_number(per.mean())}
    return out


# -------------------------------------------------------------------------------- URDF
def consistent_standard(robot, params: Params, nominal=None):
    """Standard parameters (p,) reproducing the base estimate, with the non-identifiable ones
    at their nominal values (``robot.parameter_vector()`` unless given), and whether every
    link of them is physically consistent (bool). Only then can a URDF be written."""
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    theta, ok = _lift_and_check(robot, params.base, jnp.asarray(params.theta, dtype=float), nominal)
    return theta, bool(ok)


@cache.jit  # one compiled program instead of dozens of eager ops (cold-start cost)
def _lift_and_check(robot, base, theta_b, nominal):
    from jaxid.identification.base import lift
    from jaxid.model import inertia

    theta = lift(base, theta_b, nominal)
    return theta, jnp.all(inertia.is_consistent(robot.split(theta)[0]))


def write_model(robot, theta, path, source=None) -> Path:
    """Write ``robot`` with standard parameters ``theta`` (p,) — or the ``standard``
    parameters of a :class:`Params` — as a model file; returns its path.

    With ``source`` (the URDF, or the MJCF ``.xml``, the robot was read from) the values go
    into a copy of that file, which otherwise keeps its visuals, collisions, frames and names:
    a URDF's ``<inertial>`` and ``<dynamics damping friction>`` (fv, fc;
    ``jaxid.model.urdf.write_back``), an MJCF's ``<inertial>`` and joint ``damping
    frictionloss armature`` (fv, fc, ia; ``jaxid.model.mjcf.write_back``). Without it, a new
    URDF of the model alone (``jaxid.identification.consistent.to_urdf``; no friction).
    Either way every body must be physically consistent."""
    from jaxid.identification.consistent import to_urdf
    from jaxid.model import mjcf, urdf

    if isinstance(theta, Params):
        if theta.standard is None:
            raise ValueError(
                "these parameters hold base parameters only, which do not determine the links' "
                "inertial parameters; identify with consistent standard parameters "
                "('jaxid identify --consistent') to write a model file"
            )
        theta = theta.standard
    if source is None:
        return to_urdf(robot, theta, path)
    reader = mjcf if Path(source).suffix.lower() == ".xml" else urdf
    return reader.write_back(robot, theta, source, path)
