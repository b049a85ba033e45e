"""Identified parameters on disk (``params.json``): [`Params`][jaxid.workflow.params.Params], their serialisation (schema version 2) and reading back
(versions 1 and 2).

A ``params.json`` file holds everything needed to predict torques again, or to check an
identification later:

``format``, ``version``
    ``"jaxid.params"``, 2 (version 1, with the records as one ``fit`` object, is still read).
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
    consistent estimate (``consistency`` not null) — its standard deviations,
    100 std / |estimate| (null where the estimate is 0) and its covariance (b, b): for a
    consistent estimate its mean squared error matrix: its spread first order under its
    constraints and prior plus ``d d^T``, d its shift from the least-squares estimate
    (``workflow.consistency.fit_consistent``; the least-squares estimate and covariance are
    ``fit.estimate_ls``, ``fit.cov_ls``; files written before hold the least-squares covariance
    here and no ``cov_ls``).
``parameters``
    ``{base name: estimate}``, for readers that take a name -> value map (``jaxid payload``):
    a base value set on its leading parameter, the dependent ones 0, predicts the same torques.
``estimation``, ``preprocessing``, ``screening``, ``instrumental``, ``gravity_fit``, ``consistency``, ``lugre_fit``, ``physics``
    the records of the stages (``jaxid.workflow.records``; null where a stage did not run): the
    estimator with the condition number and singular values (b,) of the column-scaled base
    regressor, residual RMS per joint (N m), noise variances, degrees of freedom, samples and data
    files; what was done to each run; the screening; the consistent fit; the physics check (its
    problems, and since issue 31 the named checks ``checks`` (consistent, converged, plausible, each
    with its numbers: ``jaxid.workflow.verdicts``) and ``plausible``, absent in older files).
``extra``
    entries a caller added (``jaxid identify``: ``validate_on``, ``prior_weight_choice``).
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

[`load_params`][jaxid.workflow.params.load_params] rejects a malformed file with a [`ParamsError`][jaxid.workflow.params.ParamsError] (a ``ValueError``)
that names the file and the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np

from jaxid import arrays
from jaxid.friction.lugre import JOINT_UNITS as LUGRE_UNITS
from jaxid.friction.lugre import NAMES as LUGRE_NAMES
from jaxid.friction.lugre import LuGre, check_parameters
from jaxid.identification.base import BaseParameters
from jaxid.workflow.records import (
    Consistency,
    Estimate,
    GravityFit,
    Instrumental,
    LugreFit,
    PhysicsCheck,
    Preprocessing,
    Screening,
    _Record,
    least_squares_cov,
)

FORMAT = "jaxid.params"
VERSION = 2
#: The versions [`load_params`][jaxid.workflow.params.load_params] reads: 1 (the records as one ``fit`` object) and 2.
VERSIONS = (1, 2)

#: The records of [`Params`][jaxid.workflow.params.Params], by their params.json (version 2) key.
RECORDS: dict[str, type[_Record]] = dict(
    estimation=Estimate,
    screening=Screening,
    instrumental=Instrumental,
    gravity_fit=GravityFit,
    consistency=Consistency,
    lugre_fit=LugreFit,
    physics=PhysicsCheck,
)
_NOMINAL_SOURCE = "base estimate with the non-identifiable parameters at their nominal values"


class ParamsError(ValueError):
    """A params.json file is missing, unreadable or malformed; the message names the field."""


class Params(eqx.Module):
    """Identified base parameters of a model (the content of a ``params.json`` file).

    Attributes:
        model: description of the model (see the module docstring), static.
        parameter_names: names of the p standard parameters, static.
        base: ``BaseParameters`` (indices, dependent, K, names).
        theta: base estimate (b,). cov: its covariance (b, b).
        standard: physically consistent standard parameters (p,) (for a URDF), or None;
            ``standard_source`` says how they were found.
        lugre: per-joint LuGre friction (``jaxid.friction.LuGre``, fields (n,)) added to the
            predicted torques, or None; its std (n, 8) is in ``lugre_fit.std``.
        estimation, preprocessing, screening, instrumental, gravity_fit, consistency, lugre_fit, physics: the
            records of the stages (``jaxid.workflow.records``; preprocessing holds one
            [`Preprocessing`][jaxid.workflow.records.Preprocessing] per run), None where a stage did not run; static.
        extra: entries a caller added (a dict of plain values), static.

    ``fit`` (read-only) is the version-1 dict of all of them; ``Params(..., fit=d)`` and
    ``dataclasses.replace(params, fit=d)`` read one back into the records.
    """

    model: dict = eqx.field(static=True)
    parameter_names: tuple = eqx.field(static=True)
    base: BaseParameters
    theta: jax.Array
    cov: jax.Array
    standard: jax.Array | None
    lugre: LuGre | None
    estimation: Estimate | None = eqx.field(static=True)
    preprocessing: tuple | None = eqx.field(static=True)
    screening: Screening | None = eqx.field(static=True)
    instrumental: Instrumental | None = eqx.field(static=True)
    gravity_fit: GravityFit | None = eqx.field(static=True)
    consistency: Consistency | None = eqx.field(static=True)
    lugre_fit: LugreFit | None = eqx.field(static=True)
    physics: PhysicsCheck | None = eqx.field(static=True)
    standard_source: str | None = eqx.field(static=True)
    extra: dict = eqx.field(static=True)

    def __init__(
        self,
        model,
        parameter_names,
        base,
        theta,
        cov,
        standard=None,
        lugre=None,
        estimation=None,
        preprocessing=None,
        screening=None,
        instrumental=None,
        gravity_fit=None,
        consistency=None,
        lugre_fit=None,
        physics=None,
        standard_source=None,
        extra=None,
        *,
        fit: dict | None = None,
    ):
        records = dict(
            estimation=estimation,
            preprocessing=None if preprocessing is None else tuple(preprocessing),
            screening=screening,
            instrumental=instrumental,
            gravity_fit=gravity_fit,
            consistency=consistency,
            lugre_fit=lugre_fit,
            physics=physics,
            standard_source=standard_source,
            extra=dict(extra or {}),
        )
        if fit is not None:  # a version-1 fit dict replaces the records
            records = records_from_fit(fit)
        self.model = model
        self.parameter_names = tuple(parameter_names)
        self.base = base
        self.theta = theta
        self.cov = cov
        self.standard = standard
        self.lugre = lugre
        for k, v in records.items():
            setattr(self, k, v)

    @property
    def fit(self) -> dict:
        """The version-1 ``fit`` dict of the records (read-only; for readers of the old format)."""
        e, out = self.estimation, {}
        late = ("rank_gap", "covariance", "std_white", "cond_gram")  # added after version 1: only when set
        if e is not None:
            out.update({k: v for k, v in e.to_dict().items() if k not in late})
        if self.preprocessing is not None:
            out["preprocessing"] = [p.to_dict() for p in self.preprocessing]
        if e is not None:
            out.update({k: getattr(e, k) for k in late if getattr(e, k) is not None})
        if self.screening is not None:
            s = self.screening
            out["reversals"] = {"band_rad_s": s.reversal_bands, "samples_dropped": s.reversals_dropped}
            out["screening"] = {"message": s.message, "method": s.method, "outlier_samples": s.outlier_samples}
        if self.instrumental is not None:
            out["instrumental"] = self.instrumental.to_dict()
        if self.gravity_fit is not None:
            out["gravity"] = self.gravity_fit.to_dict()
        if self.consistency is not None:
            out.update(self.consistency.to_dict(), method=self.method)
        if self.lugre_fit is not None:
            out["lugre"] = self.lugre_fit.to_dict()
        if self.standard_source is not None:
            out["standard_source"] = self.standard_source
        if self.physics is not None:
            if self.lugre_fit is None:  # the LuGre fit does not check the scale
                out["scale_vs_model"] = self.physics.scale_vs_model
            out["physics"] = {"consistent": self.physics.consistent, "problems": self.physics.problems}
            if self.physics.checks is not None:  # added after version 1: only when set
                out["physics"].update(checks=self.physics.checks, plausible=self.physics.plausible)
        return {**out, **self.extra}

    @property
    def method(self) -> str | None:
        """The estimator as recorded: ``estimation.method``, with "+consistent" after a consistent fit."""
        if self.estimation is None:
            return "consistent" if self.consistency is not None else None
        return self.estimation.method + ("+consistent" if self.consistency is not None else "")

    @property
    def std(self):
        """Standard deviations of the base estimate (b,)."""
        xp = arrays.namespace(self.cov)
        return arrays.device(xp.sqrt(xp.maximum(xp.diag(self.cov), 0.0)))

    @property
    def rel_std(self):
        """100 * std / |theta| (b,), % (inf where theta is 0)."""
        xp = arrays.namespace(self.cov, self.theta)
        with np.errstate(divide="ignore", invalid="ignore"):  # inf where theta is 0, by definition
            return arrays.device(100.0 * xp.asarray(self.std) / xp.abs(self.theta))

    def full(self):
        """A standard parameter vector (p,) predicting the torques of the base estimate: the
        base values on their leading (independent) parameters, the dependent ones 0."""
        out = np.zeros(len(self.parameter_names))
        out[np.asarray(self.base.indices)] = np.asarray(self.theta)
        return arrays.device(out)  # built in numpy: eager jnp would compile programs per shape

    def full_cov(self, error: bool = False):
        """The covariance (p, p) of [`full`][jaxid.workflow.params.Params.full]: the base covariance on the leading parameters,
        0 elsewhere. error: for a consistent estimate, the least-squares covariance (``fit.cov_ls``,
        where recorded) instead of its own: what the data alone say, a bound on its error where
        they see and wide where they do not (the payload's robot prior); its own holds the prior's
        pull only as far as this fit shows it (``d d^T``, ``workflow.consistency.fit_consistent``)."""
        i = np.asarray(self.base.indices)
        cov = least_squares_cov(self) if error else self.cov
        out = np.zeros((len(self.parameter_names),) * 2)
        out[np.ix_(i, i)] = np.asarray(cov)
        return arrays.device(out)


#: The keys of a version-1 ``fit`` dict that the records hold (the others go to ``Params.extra``).
_FIT_KEYS = (
    {f.name for f in dataclasses.fields(Estimate)}
    | {f.name for f in dataclasses.fields(Consistency)}
    | {"preprocessing", "screening", "reversals", "instrumental", "gravity", "lugre", "standard_source"}
    | {"scale_vs_model", "physics"}
)


def records_from_fit(fit: dict) -> dict:
    """The records (keyword arguments of [`Params`][jaxid.workflow.params.Params]) of a version-1 ``fit`` dict; a field it
    lacks (an older file, or a dict built by hand) is None."""
    screening, reversals = fit.get("screening"), fit.get("reversals") or {}
    physics = fit.get("physics")
    part = lambda record, key: None if fit.get(key) is None else record.from_partial(fit[key])
    estimation = None
    if "method" in fit:
        estimation = Estimate.from_partial({**fit, "method": str(fit["method"]).removesuffix("+consistent")})
    return dict(
        estimation=estimation,
        preprocessing=None
        if "preprocessing" not in fit
        else tuple(map(Preprocessing.from_partial, fit["preprocessing"])),
        screening=None
        if screening is None
        else Screening(
            message=screening.get("message"),
            method=screening.get("method"),
            outlier_samples=screening.get("outlier_samples", []),
            reversal_bands=reversals.get("band_rad_s", []),
            reversals_dropped=reversals.get("samples_dropped", 0),
        ),
        instrumental=part(Instrumental, "instrumental"),
        gravity_fit=part(GravityFit, "gravity"),
        consistency=Consistency.from_partial(fit) if "converged" in fit else None,
        lugre_fit=part(LugreFit, "lugre"),
        physics=None
        if physics is None
        else PhysicsCheck(
            physics.get("consistent"),
            physics.get("problems", []),
            fit.get("scale_vs_model"),
            physics.get("checks"),
            physics.get("plausible"),
        ),
        standard_source=fit.get("standard_source"),
        extra={k: v for k, v in fit.items() if k not in _FIT_KEYS},
    )


# ------------------------------------------------------------------------------ writing
def from_fit(
    model: dict, parameter_names, base: BaseParameters, fit, *, n_samples: int, sources=(), standard=None
) -> Params:
    """Params from an ``Identification`` of the base parameters (``fit``, from
    ``jaxid.identify(base.reduce(W), tau, ...)``). n_samples: samples used; sources: data
    files; standard: physically consistent standard parameters (p,), or None."""
    return Params(
        model=dict(model),
        parameter_names=tuple(parameter_names),
        base=base,
        theta=arrays.device(fit.theta),
        cov=arrays.device(fit.cov),
        estimation=estimate_of(fit, n_samples=n_samples, sources=sources),
        standard=None if standard is None else arrays.device(np.asarray(standard, dtype=float)),
    )


def estimate_of(fit, *, n_samples: int, sources=(), **more) -> Estimate:
    """The [`Estimate`][jaxid.workflow.records.Estimate] of an ``Identification``; ``more``: its other fields."""
    return Estimate(
        method=fit.method,
        cond=float(fit.cond),
        singular_values=[json_number(v) for v in np.asarray(fit.singular_values)],
        residual_rms=np.asarray(fit.residual_rms).tolist(),
        sigma2=np.asarray(fit.sigma2).tolist(),
        dof=float(fit.dof),
        n_samples=int(n_samples),
        sources=[str(s) for s in sources],
        **more,
    )


def json_number(x):
    """A JSON number, or null for NaN/inf (JSON has neither)."""
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(x):
    """Arrays -> lists, numpy scalars -> Python numbers, recursively through dicts, lists, tuples."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "shape"):
        a = np.asarray(x)
        return a.tolist() if a.ndim else a.item()
    return x


def to_json(params: Params) -> dict:
    """The params.json document of ``params`` (a dict of plain Python values; version [`VERSION`][jaxid.workflow.params.VERSION])."""
    arr = lambda a: [json_number(v) for v in np.ravel(np.asarray(a))]
    b = params.base
    theta = np.asarray(params.theta)
    records = {k: None if getattr(params, k) is None else getattr(params, k).to_dict() for k in RECORDS}
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
        **records,
        "preprocessing": None if params.preprocessing is None else [p.to_dict() for p in params.preprocessing],
        "extra": params.extra,
        "standard": None
        if params.standard is None
        else {"theta": arr(params.standard), "consistent": True, "source": params.standard_source or _NOMINAL_SOURCE},
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
                            params.lugre_fit.std
                            if params.lugre_fit is not None
                            else np.full(np.shape(params.lugre.vector()), np.nan)
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


def _records(doc, path) -> dict[str, Any]:
    """The records of a version-2 document (keyword arguments of [`Params`][jaxid.workflow.params.Params])."""
    out: dict[str, Any] = {}
    for key, record in RECORDS.items():
        value = doc.get(key)
        if value is not None and not isinstance(value, dict):
            raise ParamsError(f"{path}: field '{key}' must be an object or null")
        try:
            out[key] = None if value is None else record.from_dict(value)
        except TypeError as e:
            raise ParamsError(f"{path}: field '{key}': {e}") from None
    runs = doc.get("preprocessing")
    if runs is not None and not (isinstance(runs, list) and all(isinstance(r, dict) for r in runs)):
        raise ParamsError(f"{path}: field 'preprocessing' must be a list of objects or null")
    extra = doc.get("extra") or {}
    if not isinstance(extra, dict):
        raise ParamsError(f"{path}: field 'extra' must be an object")
    try:
        out["preprocessing"] = None if runs is None else tuple(map(Preprocessing.from_dict, runs))
    except TypeError as e:
        raise ParamsError(f"{path}: field 'preprocessing': {e}") from None
    standard = doc.get("standard")
    out["standard_source"] = standard.get("source") if isinstance(standard, dict) else None
    return {**out, "extra": dict(extra)}


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
    """Read a params.json file written by [`save_params`][jaxid.workflow.params.save_params].

    Raises ParamsError (a ValueError) naming the file and the field of any problem: missing
    file, invalid JSON, wrong format, missing fields, arrays of the wrong shape or with
    non-numbers, indices out of range, a covariance that is not symmetric.
    """
    path = Path(path)
    doc = _document(path)
    model, terms = _model(doc, path)
    names = _names(_field(doc, "parameter_names", path), path, "parameter_names")
    base = _base(_field(doc, "base", path), path, names)
    b = base.rank
    theta = _array(_field(doc, "estimate", path), (b,), path, "estimate")
    cov = _array(_field(doc, "covariance", path), (b, b), path, "covariance")
    # Measured on the scale of each pair's variances: the sandwich and streamed products leave
    # round-off of about 1e-16 of the largest entry, more than 1e-10 of the smallest on a small
    # robot's parameters (an SO-100's own params.json was refused).
    scale = np.sqrt(np.abs(np.outer(np.diag(cov), np.diag(cov))))
    if not np.all(np.abs(cov - cov.T) <= 1e-10 * scale):
        raise ParamsError(f"{path}: field 'covariance' is not symmetric")
    records = _fit_records(doc, path)
    standard_doc = doc.get("standard")
    standard = (
        None
        if standard_doc is None
        else _array(_field(standard_doc, "theta", path, "standard."), (len(names),), path, "standard.theta")
    )
    bad = [t for t in terms if not any(re.fullmatch(rf"{t}(_m)?\d+", s) for s in names)]  # _m: on a motor
    if bad:
        raise ParamsError(f"{path}: field 'model.joint_terms' lists {bad}, which are not in 'parameter_names'")
    lugre = _lugre(doc.get("lugre"), model, path)
    return Params(
        model=dict(model),
        parameter_names=names,
        base=base,
        theta=arrays.device(theta),  # device_put: a jnp conversion compiles a program per shape
        cov=arrays.device(cov),
        standard=None if standard is None else arrays.device(standard),
        lugre=lugre,
        **records,
    )


def _document(path: Path) -> dict:
    """The JSON object of a params.json file of a version this jaxid reads."""
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
    if doc.get("version") not in VERSIONS:
        raise ParamsError(
            f"{path}: field 'version' is {doc.get('version')!r}; this jaxid reads versions "
            + " and ".join(map(str, VERSIONS))
        )
    return doc


def _model(doc: dict, path: Path) -> tuple[dict, tuple[str, ...]]:
    """The document's model description (a relative URDF path made absolute against the file's
    folder) and its joint terms."""
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
    return model, terms


def _base(base_doc, path: Path, names: tuple[str, ...]) -> BaseParameters:
    """The base parameters of the document's ``base`` object, over the standard parameters ``names``."""
    p = len(names)
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
    gap = base_doc.get("gap")
    return BaseParameters(
        indices=arrays.device(np.asarray(indices, dtype=np.int32)),
        dependent=arrays.device(np.asarray(dependent, dtype=np.int32)),
        K=arrays.device(K),
        r_diag=arrays.device(
            np.full(p, np.nan) if r_diag is None else _array(r_diag, (p,), path, "base.r_diag", nullable=True)
        ),
        gap=math.inf if gap is None else float(gap),
        rank=b,
        names=bnames,
        standard_names=names,
    )


def _fit_records(doc: dict, path: Path) -> dict[str, Any]:
    """The records (keyword arguments of [`Params`][jaxid.workflow.params.Params]): a version-1 ``fit`` object's, or a version-2 document's."""
    if doc["version"] != 1:
        return _records(doc, path)
    fit = doc.get("fit") or {}
    if not isinstance(fit, dict):
        raise ParamsError(f"{path}: field 'fit' must be an object")
    try:
        return records_from_fit(fit)
    except (TypeError, KeyError, AttributeError) as e:
        raise ParamsError(f"{path}: field 'fit': {e}") from None


def _lugre(lugre_doc, model: dict, path: Path) -> LuGre | None:
    """The LuGre parameters of the document's ``lugre`` object (n joints, from ``model.n``), or None."""
    if lugre_doc is None:
        return None
    n = model.get("n")
    if not isinstance(n, int) or list(_field(lugre_doc, "names", path, "lugre.")) != list(LUGRE_NAMES):
        raise ParamsError(f"{path}: field 'lugre' needs 'model.n' and names {list(LUGRE_NAMES)}")
    lugre = LuGre.from_vector(
        arrays.device(_array(_field(lugre_doc, "values", path, "lugre."), (n, 8), path, "lugre.values"))
    )
    try:
        check_parameters(lugre)
    except ValueError as e:
        raise ParamsError(f"{path}: field 'lugre.values': {e}") from None
    return lugre
