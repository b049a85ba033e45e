"""The commands of ``jaxid``, as library functions: each runs one request
(:mod:`jaxid.workflow.requests`) through the workflow and returns a frozen outcome record
that the command line formats.

``run_identify(IdentifyRequest) -> IdentifyOutcome`` and its kin build the model, read and
prepare the data, run the workflow's stages, decide and write the output files (params.json, a
model file, datasets, JSON) and return what was computed. Bad input is a
:class:`jaxid.workflow.WorkflowError` (a ``ValueError``) naming the flag and the fix. Progress
is reported through the optional callables ``log(line)`` (a line of progress on the data) and
``progress(iterable, total=, desc=)`` (a progress bar); ``warn(line)`` receives warnings
(default: ``warnings.warn``). Figures and reports (``jaxid.report``) are the caller's.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jaxid import workflow
from jaxid.model import description as _description
from jaxid.workflow import WorkflowError
from jaxid.workflow import export as _export
from jaxid.workflow import params as _params
from jaxid.workflow import validation as _validation
from jaxid.workflow.requests import (
    BoundsSpec,
    CrossvalRequest,
    DataSpec,
    ExciteRequest,
    IdentifyRequest,
    LugreRequest,
    ModelSpec,
    PayloadRequest,
    PayloadSpec,
    SimulateRequest,
    ValidateRequest,
)

Log = Callable[[str], None] | None


def _warn(line: str) -> None:
    warnings.warn(line, stacklevel=3)


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


# ----------------------------------------------------------------------- shared steps
def check_outputs(inputs, outputs) -> None:
    """Before the work: WorkflowError when an output path is one of the input files (it would
    destroy the data), ``jaxid.atomic.OutputPathError`` when an output cannot be written (a
    directory, a missing or read-only directory), so that no run fails only at its end. None
    and '-' (stdout) are skipped."""
    from jaxid.atomic import check_output_path

    given = {Path(i).resolve(): i for i in inputs if i is not None}
    for o in outputs:
        if o is not None and o != "-" and Path(o).resolve() in given:
            raise WorkflowError(
                f"output {o!r} is the input file {given[Path(o).resolve()]!r}; writing it would destroy "
                "the data: choose another output path"
            )
    for o in outputs:
        if o is not None and o != "-":
            check_output_path(o)


def build_model(spec: ModelSpec, *, joint_terms: Sequence[str] | None = None):
    """(robot, description) of ``spec`` (:func:`jaxid.workflow.model`); joint_terms overrides
    the spec's. (None, None) when the spec names no model and has no default robot."""
    flag, path = spec.file
    builtin = spec.builtin
    if builtin is None and not path:
        return None, None
    try:
        return workflow.model(
            builtin=builtin,
            tip_link=spec.tip_link,
            urdf=spec.urdf,
            dh=spec.dh,
            mjcf=spec.mjcf,
            joint_terms=spec.joint_terms if joint_terms is None else tuple(joint_terms),
            coulomb_eps=spec.coulomb_eps,
            stribeck_vs=None if spec.stribeck_vs == "fit" else spec.stribeck_vs,  # "fit": the command fits it
            check_inertia=spec.check_inertia,
        )
    except FileNotFoundError:
        raise WorkflowError(f"{flag}: no such file {path!r}") from None
    except ValueError as e:
        raise WorkflowError(f"{flag or '--robot'}: {e}") from None


def model_for_params(spec: ModelSpec, params, params_path=None, *, warn: Callable[[str], None] | None = None):
    """The model of a params.json (``_params.Params`` or None): built from the spec when it names
    a model (with the file's joint terms, Coulomb scale and Stribeck velocity), else from the
    description the file carries (or the spec's default robot when there is no file); checked
    against the file's parameter names, and its kinematics against the file's fingerprint (a
    warning through ``warn`` when they differ)."""

    flag, path = spec.file
    desc = params.model if params is not None else {}
    builtin = None if path else (spec.robot or (spec.default_robot if params is None else None))
    try:
        model = _description.model_from_description(
            desc,
            builtin=builtin,
            tip_link=spec.tip_link,
            urdf=spec.urdf,
            dh=spec.dh,
            mjcf=spec.mjcf,
            check_inertia=spec.check_inertia,
        )
        if params is not None:
            _validation.check_model(model, params)
    except FileNotFoundError as e:
        raise WorkflowError(f"{e}; give the model with --robot or --urdf") from None
    except ValueError as e:
        raise WorkflowError(f"{params_path or spec.robot or path}: {e}") from None
    if params is not None:
        for w in _description.model_mismatches(model, params):
            (warn or _warn)(f"{params_path}: {w}")
    return model


def policy(spec: DataSpec) -> workflow.Policy:
    """The :class:`jaxid.workflow.Policy` of the data spec."""
    return workflow.Policy(
        cutoff=spec.cutoff,
        trim=spec.trim,
        step=spec.step,
        base_frequency=spec.base_frequency,
        periodic=spec.periodic,
        parallel=spec.parallel,
        reversal_band=spec.reversal_band,
    )


def _mapping(spec: DataSpec):
    """(columns, units, gains) of the spec's mapping file or flags."""
    from jaxid import data

    try:
        if spec.mapping:
            m = data.load_mapping(spec.mapping)
            return m.get("columns"), m.get("units"), m.get("gains")
        return (
            data.parse_columns(spec.columns) if spec.columns else None,
            data.parse_units(spec.units) if spec.units else None,
            data.parse_gains(spec.gains) if spec.gains else None,
        )
    except ValueError as e:
        flag = "--mapping" if spec.mapping else "--columns/--units/--gains"
        raise WorkflowError(f"{flag}: {e}") from None


def read_runs(paths, robot, spec: DataSpec, model: ModelSpec | None = None, *, prepare: bool = True):
    """Read dataset files for ``robot`` (:func:`jaxid.workflow.read`) and, unless ``prepare`` is
    False, prepare them (:func:`jaxid.workflow.prepare` with :func:`policy`); returns the
    ``Prepared`` runs (or the list of raw datasets). ``model``: the spec the robot came from (its
    name in the error of a joint count that differs)."""
    columns, units, gains = _mapping(spec)
    raw = []
    for path in paths:
        ds = workflow.read(
            path, columns=columns, units=units, gains=gains, resample=spec.resample, max_gap=spec.max_gap
        )
        if ds.n != robot.n:
            default = (
                " (the default --robot; choose the model with --robot NAME or --urdf PATH)"
                if model is not None and model.robot is None and not model.urdf
                else "; choose the model of this robot (--robot NAME or --urdf PATH)"
            )
            raise WorkflowError(
                f"{path}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}{default}"
            )
        raw.append(ds)
    return workflow.prepare(raw, robot, policy(spec)) if prepare else raw


def _describe(prepared, log: Log) -> None:
    if log is not None:
        for line in prepared.describe():
            log(f"  data: {line}")


def bounds(spec: BoundsSpec, robot, model: ModelSpec | None = None):
    """``jaxid.identification.consistent.Bounds`` of the spec for ``robot``, or None when the spec
    bounds nothing. ``model``: the spec the robot came from (its URDF's collision geometry)."""
    if not spec.given:
        return None
    from jaxid.identification.consistent import Bounds

    try:
        b = Bounds.from_nominal(robot, mass_tol=spec.mass_tol, com_margin=spec.com_margin, total_mass=spec.total_mass)
        if spec.com_in_geometry or spec.body_in_geometry:
            b = b.intersect(Bounds.from_geometry(robot, _capsules(model, robot), body=spec.body_in_geometry))
        b.check()
    except ValueError as e:
        raise WorkflowError(f"bounds: {e}") from None
    return b


def _capsules(model: ModelSpec | None, robot):
    """The collision capsules of the model for the geometry bounds."""
    from jaxid.model import geometry

    if model is not None and model.urdf:
        try:
            return geometry.from_urdf(model.urdf, robot, tip_link=model.tip_link)
        except (OSError, ValueError) as e:
            raise WorkflowError(f"--com-in-geometry: {e}") from None
    if robot.name == "ur5":
        return geometry.ur5()
    raise WorkflowError(
        f"--com-in-geometry: {robot.name} has no collision geometry; use --urdf with <collision> elements"
    )


def payload_vector(spec: PayloadSpec):
    """The payload 10-vector of the spec, or None without a mass."""
    from jaxid import simulation

    if spec.mass is None:
        return None
    com = spec.com if spec.com is not None else (0.0, 0.0, 0.0)
    try:
        return simulation.payload_vector(spec.mass, com, box=spec.box)
    except ValueError as e:
        raise WorkflowError(f"--payload-*: {e}") from None


# --------------------------------------------------------------------------- identify
@dataclass(frozen=True)
class IdentifyOutcome:
    """What :func:`run_identify` computed and wrote.

    robot: the model of the fit (with the fitted Stribeck velocity and gravity where asked);
    params: the ``_params.Params`` written to ``output``; prepared: the prepared runs;
    choice: the prior-weight table of ``validate_on`` (JSON-ready) or None; unconverged: a
    consistent fit that did not converge and was not accepted (no model file written);
    model_out: the model file written, or None; validation: the fit validated on its own data
    (``request.validation``), or None."""

    request: IdentifyRequest
    robot: Any
    params: Any
    prepared: Any
    choice: dict | None
    unconverged: bool
    model_out: str | None
    validation: Any


def run_identify(request: IdentifyRequest, *, log: Log = None, progress: Callable | None = None) -> IdentifyOutcome:
    """``jaxid identify``: read, prepare, :func:`jaxid.workflow.identify_experiment` (or
    ``identify_lugre``), write params.json and the model file; see :class:`IdentifyRequest`."""

    r = request
    model_out, kind = r.model_out
    check_outputs([*r.data, r.model.urdf, r.model.dh, r.model.mjcf], [r.output, model_out, r.json])
    lugre = r.friction == "lugre"
    terms = tuple(t for t in r.model.joint_terms if t not in workflow.LUGRE_REPLACES) if lugre else None
    robot, desc = build_model(r.model, joint_terms=terms)
    prepared = read_runs(r.data, robot, r.prepare, r.model)
    _describe(prepared, log)
    body_bounds = bounds(r.bounds, robot, r.model)
    choice, prior_weight = None, r.prior_weight
    if r.validate_on:
        check_outputs(r.validate_on, [r.output, model_out, r.json])
        held_out = read_runs(r.validate_on, robot, r.prepare, r.model)
        choice = jsonable(
            workflow.choose_prior_weight(
                robot,
                prepared,
                held_out,
                weights=r.prior_weights,
                method=r.method,
                bounds=body_bounds,
                progress=progress,
            )
        )
        prior_weight = float(choice["best"]["weight"])
    reference = None if r.reference is None else [read_trajectory(path, robot.n) for path in r.reference]
    if lugre:
        params = workflow.identify_lugre(robot, prepared, description=desc, progress=progress)
    else:
        params = workflow.identify_experiment(
            robot,
            prepared,
            method=r.method,
            description=desc,
            consistent=r.consistent,
            reference=reference,
            prior_weight=prior_weight,
            stribeck_vs=r.model.stribeck_vs,
            bounds=body_bounds,
            sdp_check=r.sdp_check,
            gravity="fit" if r.fit_gravity else None,
            progress=progress,
        )  # sdp_check without its extra: an ImportError naming it
    if r.validate_on:  # choice was made
        params = dataclasses.replace(
            params, fit={**params.fit, "validate_on": list(r.validate_on), "prior_weight_choice": choice}
        )
    robot = dataclasses.replace(
        robot,
        stribeck_vs=params.model["stribeck_vs"],  # fitted where asked
        gravity=np.asarray(params.model.get("gravity", robot.gravity), dtype=float),
    )
    _params.save_params(r.output, params)
    # An unconverged consistent fit is an error by default: it is never written as a model.
    unconverged = params.fit.get("converged") is False and not r.accept_unconverged
    written = None
    if model_out and not unconverged:
        if params.standard is None:
            raise WorkflowError(
                f"the identified links are not physically consistent, so no {kind} can be written"
                + ("" if r.consistent else "; rerun with --consistent")
            )
        _export.write_model(robot, params, model_out, source=r.model.mjcf if r.mjcf_out else r.model.urdf)
        written = model_out
    validation = workflow.validate(robot, params, prepared) if r.validation else None
    return IdentifyOutcome(r, robot, params, prepared, choice, unconverged, written, validation)


# --------------------------------------------------------------------------- crossval
@dataclass(frozen=True)
class CrossvalOutcome:
    """robot, prepared runs and the JSON-ready result of :func:`jaxid.workflow.crossval`."""

    request: CrossvalRequest
    robot: Any
    prepared: Any
    result: dict


def run_crossval(request: CrossvalRequest, *, log: Log = None, progress: Callable | None = None) -> CrossvalOutcome:
    """``jaxid crossval``: leave-one-run-out cross-validation; see :class:`CrossvalRequest`."""
    r = request
    robot, _ = build_model(r.model)
    prepared = read_runs(r.data, robot, r.prepare, r.model)
    _describe(prepared, log)
    cv = workflow.crossval(
        robot,
        prepared,
        weights=r.prior_weights,
        method=r.method,
        bounds=bounds(r.bounds, robot, r.model),
        gravity="fit" if r.fit_gravity else None,
        progress=progress,
    )
    return CrossvalOutcome(r, robot, prepared, jsonable(cv))


# --------------------------------------------------------------------------- validate
@dataclass(frozen=True)
class ValidateOutcome:
    """model, params (``_params.Params``), prepared runs and the
    :class:`jaxid.workflow.Validation` of :func:`run_validate`."""

    request: ValidateRequest
    model: Any
    params: Any
    prepared: Any
    validation: Any


def run_validate(
    request: ValidateRequest, *, log: Log = None, warn: Callable[[str], None] | None = None
) -> ValidateOutcome:
    """``jaxid validate``: predict the held-out runs from params.json; see :class:`ValidateRequest`."""

    r = request
    check_outputs([*r.data, r.params], [r.json])
    params = _params.load_params(r.params)
    model = model_for_params(r.model, params, r.params, warn=warn)
    prepared = read_runs(r.data, model, r.prepare, r.model)
    _describe(prepared, log)
    return ValidateOutcome(r, model, params, prepared, workflow.validate(model, params, prepared))


# --------------------------------------------------------------------------- simulate
def read_trajectory(path, n: int, rate: float | None = None):
    """(t, q, qd, qdd) from a trajectory file (.csv or .npz: t, q1..qn and optionally qd, qdd,
    as ``jaxid excite`` writes it) for an n-joint robot: t (N,) s, the others (N, n) in rad,
    rad/s, rad/s^2; missing qd, qdd from a cubic spline of q; ``rate`` Hz resamples it."""
    from scipy.interpolate import CubicSpline

    from jaxid import data

    path = Path(path)
    if not path.is_file():
        raise WorkflowError(f"{path}: no such file")
    if path.suffix.lower() == ".npz":
        try:
            with np.load(path) as f:
                arrays = {k: np.asarray(f[k], dtype=float) for k in ("t", "q", "qd", "qdd") if k in f.files}
        except (OSError, ValueError) as e:
            raise WorkflowError(f"{path}: not a readable NPZ file ({e})") from None
    elif path.suffix.lower() == ".csv":
        try:
            with open(path) as f:
                header = [h.strip() for h in f.readline().split(",")]
            table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            raise WorkflowError(f"{path}: not a readable CSV file of numbers with one header row ({e})") from None
        if table.shape[1] != len(header):
            raise WorkflowError(f"{path}: {table.shape[1]} columns of data but {len(header)} header names")
        col = {h: i for i, h in enumerate(header)}
        more = sorted(
            {int(m[2]) for m in (re.fullmatch(r"(q|qd|qdd)([0-9]+)", h) for h in header) if m} - set(range(1, n + 1))
        )
        if more:  # never drop a joint's columns without a word
            raise WorkflowError(
                f"{path}: columns of joint(s) {', '.join(map(str, more))} but the robot has {n} joints "
                f"(q1..q{n}); choose the model of this trajectory (--robot NAME or --urdf PATH)"
            )
        arrays = {"t": table[:, col["t"]]} if "t" in col else {}
        for s in ("q", "qd", "qdd"):
            if all(f"{s}{j}" in col for j in range(1, n + 1)):
                arrays[s] = table[:, [col[f"{s}{j}"] for j in range(1, n + 1)]]
            elif any(re.fullmatch(rf"{s}[0-9]+", h) for h in header):
                raise WorkflowError(f"{path}: columns {s}1..{s}{n} expected for this {n}-joint robot")
    else:
        raise WorkflowError(f"{path}: unknown file type '{path.suffix}'; a trajectory is a .csv or .npz file")
    missing = [k for k in ("t", "q") if k not in arrays]
    if missing:
        raise WorkflowError(f"{path}: missing {' and '.join(missing)}; a trajectory needs t and q1..q{n}")
    t, q = arrays["t"], arrays["q"]
    # from_arrays checks shapes, finiteness, |q| etc. within data.MOTION_BOUND and increasing
    # time, naming the row.
    ds = data.from_arrays(t, q, np.zeros_like(q), arrays.get("qd"), arrays.get("qdd"), source=str(path))
    if ds.n != n:
        raise WorkflowError(f"{path}: {ds.n} joints in the trajectory but the robot has {n}")
    t, q = np.asarray(ds.t), np.asarray(ds.q)
    spline = CubicSpline(t, q, axis=0)
    qd = spline(t, 1) if ds.qd is None else np.asarray(ds.qd)
    qdd = spline(t, 2) if ds.qdd is None else np.asarray(ds.qdd)
    if rate is not None:
        if not (np.isfinite(rate) and rate > 0):
            raise WorkflowError(f"--rate must be a finite rate > 0 Hz, got {rate}")
        grid = np.arange(t[0], t[-1] + 0.5 / rate, 1.0 / rate)
        grid = grid[grid <= t[-1]]
        q, qd, qdd = (CubicSpline(t, x, axis=0)(grid) for x in (q, qd, qdd))
        t = grid
    return t, q, qd, qdd


@dataclass(frozen=True)
class SimulateOutcome:
    """robot: the nominal model; true_robot: the perturbed one measured; t (N,) s; payload
    10-vector or None; sigma_tau (n,) N m, the torque noise std; tau_rms (n,) N m."""

    request: SimulateRequest
    robot: Any
    true_robot: Any
    t: np.ndarray
    payload: np.ndarray | None
    sigma_tau: np.ndarray
    tau_rms: np.ndarray


def run_simulate(request: SimulateRequest) -> SimulateOutcome:
    """``jaxid simulate``: measure a perturbed robot along a trajectory; writes ``output``,
    ``truth`` and ``true_params``; see :class:`SimulateRequest`."""
    import jax

    from jaxid import data, simulation
    from jaxid.atomic import atomic_write

    r = request
    robot, desc = build_model(r.model, joint_terms=())
    check_outputs([r.trajectory], [r.output, r.truth, r.true_params, r.json])
    if r.stribeck_vs is not None:
        robot = dataclasses.replace(robot, stribeck_vs=float(r.stribeck_vs))
        desc = {**desc, "stribeck_vs": float(r.stribeck_vs)}
    payload = payload_vector(r.payload)
    noise: dict[str, float | np.ndarray | None] = dict(sigma_q=r.sigma_q, quantization=r.quantization)
    if r.tau_sigma is not None:
        if len(r.tau_sigma) not in (1, robot.n):
            raise WorkflowError(f"--tau-sigma takes one value or {robot.n} (one per joint), got {len(r.tau_sigma)}")
        noise["tau_sigma"] = np.asarray(r.tau_sigma)
    else:
        noise["tau_rel"] = (0.5 if r.tau_noise is None else r.tau_noise) / 100.0
    t, q, qd, qdd = read_trajectory(r.trajectory, robot.n, r.rate)
    robot_seed, noise_seed = r.seeds
    m = simulation.simulate(
        robot,
        t,
        q,
        qd,
        qdd,
        jax.random.PRNGKey(robot_seed),
        scale=r.scale,
        friction=r.friction,
        payload=payload,
        noise_key=jax.random.PRNGKey(noise_seed),
        **noise,
    )
    f0, harmonics = data.read_excitation(r.trajectory)  # the excitation's period carries over
    data.write(dataclasses.replace(m.data, base_frequency=f0, harmonics=harmonics), r.output)
    if r.truth:
        data.write(data.Dataset(m.data.t, m.q, m.tau, m.qd, m.qdd, source="truth"), r.truth)
    true = m.robot
    if r.true_params:
        with atomic_write(r.true_params) as f:
            json.dump(
                {
                    "model": {**desc, "joint_terms": list(true.joint_terms)},
                    "names": list(true.parameter_names()),
                    "theta": [float(v) for v in np.asarray(true.parameter_vector())],
                },
                f,
                indent=1,
            )
            f.write("\n")
    tau_rms = np.sqrt(np.mean(np.asarray(m.tau) ** 2, axis=0))
    return SimulateOutcome(
        r,
        robot,
        true,
        np.asarray(t),
        None if payload is None else np.asarray(payload),
        np.asarray(m.sigma_tau),
        tau_rms,
    )


# ---------------------------------------------------------------------------- payload
@dataclass(frozen=True)
class PayloadOutcome:
    """robot: the model; samples: the (q, qd, qdd, tau) the payload was fitted on;
    fit: the ``jaxid.identification.payload.PayloadFit``; warnings: the messages of the
    warnings the fit raised."""

    request: PayloadRequest
    robot: Any
    samples: tuple
    fit: Any
    warnings: tuple[str, ...]


def run_payload(request: PayloadRequest, *, log: Log = None, warn: Callable[[str], None] | None = None):
    """``jaxid payload``: a payload's 10 inertial parameters on top of an identified robot (or
    against an unloaded run); writes ``output`` (JSON, by the caller's formatter: see
    :func:`payload_document`); see :class:`PayloadRequest`."""
    from jaxid.identification import payload as P

    r = request
    check_outputs([r.data, r.params, r.unloaded], [r.output, r.json])
    params = _params.load_params(r.params) if r.params else None
    robot = model_for_params(r.model, params, r.params, warn=warn)
    if not hasattr(robot, "tip"):
        raise WorkflowError("payload identification needs a rigid-body robot (built-in or URDF)")
    # Base values on their leading parameters, the dependent ones 0: the base model's torques.
    theta_robot = None if params is None else params.full()
    robot_cov = None if params is None else params.full_cov()
    joints = None
    if r.joints is not None:
        if any(not 1 <= j <= robot.n for j in r.joints) or len(set(r.joints)) != len(r.joints):
            raise WorkflowError(
                f"--joints must list distinct joints between 1 and {robot.n}, got {','.join(map(str, r.joints))!r}"
            )
        joints = [j - 1 for j in r.joints]
    ds = read_runs([r.data] + ([r.unloaded] if r.unloaded else []), robot, r.prepare, r.model, prepare=False)
    if r.unloaded:
        ds = [workflow.torque_difference(*ds)]
        # The robot's torque cancelled in the difference: nothing of the model is subtracted.
        theta_robot, robot_cov = np.zeros(robot.parameter_vector().shape), None
    if r.period is not None or r.average or r.smooth:
        ds = ds[0]
        samples = P.preprocess(
            ds.t,
            ds.q,
            ds.tau,
            period=r.period,
            average=r.average,
            smooth=r.smooth,
            cutoff=r.prepare.cutoff,
            step=r.prepare.step,
        )[1:]
    else:
        prepared = workflow.prepare(ds[:1], robot, policy(r.prepare))
        if log is not None:
            log(f"  data: {prepared.describe()[0]}")
        d = prepared.datasets[0]
        samples = (d.q, d.qd, d.qdd, d.tau)
    cov = None if r.cov is None else np.asarray(r.cov, dtype=float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = P.identify_payload(robot, theta_robot, samples, joints=joints, cov=cov, robot_cov=robot_cov)
    return PayloadOutcome(r, robot, tuple(samples), fit, tuple(str(w.message) for w in caught))


# ----------------------------------------------------------------------------- excite
def _floats(value, count: int, what: str) -> np.ndarray:
    """``count`` finite numbers from 'a,b,...' text or a sequence, or a WorkflowError naming ``what``."""
    try:
        v = np.array([float(x) for x in (value.split(",") if isinstance(value, str) else value)])
    except ValueError:
        v = np.array([])
    if v.size != count or not np.all(np.isfinite(v)):
        raise WorkflowError(f"{what} must be {count} comma-separated finite numbers, got {value!r}")
    return v


def excite_constraints(request: ExciteRequest, robot):
    """(Constraints or None, limit overrides or None) of the request for ``robot``: the collision
    capsules of its URDF (or the built-in UR5's, with its conservative ranges) and the floor,
    workspace and obstacles."""
    from jaxid.excitation.constraints import Constraints
    from jaxid.model import geometry

    r = request
    limits: dict[str, float | np.ndarray] = {} if r.jerk_max is None else {"qddd_max": r.jerk_max}
    if r.model.urdf:
        try:
            caps = geometry.from_urdf(
                r.model.urdf, robot, tip_link=r.model.tip_link, mesh_radius=r.capsule_radius, srdf=r.srdf
            )
        except (OSError, ValueError) as e:
            raise WorkflowError(f"--urdf/--srdf: {e}") from None
    elif robot.name == "ur5":
        caps = geometry.ur5()
        limits.update(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1])
    else:
        caps = None
    floor = r.floor
    if isinstance(floor, str):
        floor = None if floor.strip().lower() == "none" else _floats(floor, 1, "--floor")[0]
    workspace = None if r.workspace is None else tuple(np.split(_floats(r.workspace, 6, "--workspace"), 2))
    obstacles = tuple(np.split(_floats(o, 6, "--obstacle"), 2) for o in r.obstacles)
    if caps is None:
        if r.workspace or r.obstacles:
            raise WorkflowError(
                f"{robot.name} has no collision geometry: --workspace and --obstacle need the built-in ur5 or a --urdf"
            )
        return None, limits or None
    try:
        return Constraints(caps, clearance=r.clearance, floor=floor, workspace=workspace, obstacles=obstacles), limits
    except ValueError as e:
        raise WorkflowError(str(e)) from None


def with_approach(res, robot, start, fs, periods, limits, constraints):
    """(duration s, ``periods`` of the excitation ``res`` at fs Hz preceded by the approach from
    the pose ``start`` to home), the approach checked with its jerk on a grid 10x denser than fs
    against the limits and constraints (a WorkflowError if it fails)."""
    from jaxid.excitation.optimize import LIMITS, check_limits
    from jaxid.excitation.trajectories import approach, approach_jerk

    T = res.approach_time(start, fs)
    if T == 0:
        return 0.0, res.trajectory(fs, periods)
    dense = np.linspace(0.0, T, int(round(10 * T * fs)) + 1)
    home = np.asarray(res.sample(np.zeros(1))[0][0])
    rep = check_limits(
        robot,
        *approach(start, home, T, dense),
        limits=limits,
        qddd=approach_jerk(start, home, T, dense),
        constraints=constraints,
    )
    if not rep.feasible:
        bad = [f"{k} {v:.3g} {LIMITS[k]}" for k, v in rep.violation.items() if v > 0]
        bad += [ln for ln in rep.lines(constraints.clearance if constraints else 0.0) if "VIOLATED" in ln]
        raise WorkflowError(
            f"--start-from: the {T:g} s move to home violates {'; '.join(bad)}; start from "
            "another pose or move the robot to home first"
        )
    return T, res.trajectory(fs, periods, start_from=start)


def joint_trajectory(names, t, q, qd, qdd) -> dict:
    """A ROS 2 ``trajectory_msgs/JointTrajectory`` as a dict: ``joint_names`` and ``points``
    with positions (rad), velocities (rad/s), accelerations (rad/s^2) and
    ``time_from_start`` {sec, nanosec}, from t (N,) s and q, qd, qdd (N, n)."""
    ns = np.round(np.asarray(t, dtype=float) * 1e9).astype(np.int64)
    rows = (np.asarray(x, dtype=float).tolist() for x in (q, qd, qdd))
    return {
        "joint_names": list(names),
        "points": [
            {
                "positions": p,
                "velocities": v,
                "accelerations": a,
                "time_from_start": {"sec": int(k // 1_000_000_000), "nanosec": int(k % 1_000_000_000)},
            }
            for p, v, a, k in zip(*rows, ns)
        ],
    }


@dataclass(frozen=True)
class ExciteOutcome:
    """robot (with the payload attached, if any); description: its params.json model entry;
    result: the ``jaxid.excitation.optimize.Excitation``; limits: the model's limits (n,) each,
    with the overrides; constraints; home (n,) rad; payload 10-vector or None; written: the
    trajectory was written (False: infeasible, not allowed); t (N,) s of the written samples;
    t_approach: s of the move from ``start_from`` (0 without)."""

    request: ExciteRequest
    robot: Any
    description: dict
    result: Any
    limits: dict
    constraints: Any
    home: np.ndarray
    payload: np.ndarray | None
    written: bool
    t: np.ndarray | None
    t_approach: float


def run_excite(request: ExciteRequest, *, progress: bool = False) -> ExciteOutcome:
    """``jaxid excite``: optimise the excitation, draw the preview, write the trajectory when it
    meets every limit and constraint (or ``allow_infeasible``); see :class:`ExciteRequest`."""
    from jaxid import data
    from jaxid.dynamics.terms import rnea
    from jaxid.excitation.optimize import model_limits, optimize

    r = request
    check_outputs([], [r.output, r.json, r.preview])
    robot, description = build_model(r.model)
    constraints, limits = excite_constraints(r, robot)
    lim = model_limits(robot, limits)
    finite = lambda x: np.where(np.isfinite(x), x, 0.0)
    home = 0.5 * (finite(lim["q_min"]) + finite(lim["q_max"])) if r.home is None else _floats(r.home, robot.n, "--home")
    start = None if r.start_from is None else _floats(r.start_from, robot.n, "--start-from")
    regressor_fn = None
    payload = payload_vector(r.payload)
    if (r.payload_design or payload is not None) and not hasattr(robot, "tip"):
        raise WorkflowError("--payload and --payload-mass need a rigid-body robot with a flange (built-in or URDF)")
    if r.payload_design:
        from jaxid.identification.payload import PayloadRows

        regressor_fn = PayloadRows(robot, np.where(np.isfinite(lim["tau_max"]), 1.0 / lim["tau_max"], 1.0))
    if payload is not None:
        from jaxid.identification.payload import attach_payload

        robot = attach_payload(robot, payload)  # the torques of the limits and of the file
    try:
        res = optimize(
            robot,
            harmonics=r.harmonics,
            base_frequency=r.base_frequency,
            objective=r.chosen_objective,
            regressor_fn=regressor_fn,
            n_starts=r.starts,
            steps=r.steps,
            learning_rate=r.learning_rate,
            margin=r.margin,
            seed=r.seed,
            progress=progress,
            limits=limits,
            constraints=constraints,
            home=home,
        )
    except ValueError as e:
        raise WorkflowError(str(e)) from None
    if r.preview is not None:
        from jaxid.excitation.preview import preview

        preview(robot, res, r.preview, limits=limits, constraints=constraints, start_from=start)
    payload = None if payload is None else np.asarray(payload)
    if not res.feasible and not r.allow_infeasible:
        return ExciteOutcome(r, robot, description, res, lim, constraints, home, payload, False, None, 0.0)
    t_approach, (t, q, qd, qdd) = (
        with_approach(res, robot, start, r.fs, r.periods, limits, constraints)
        if start is not None
        else (0.0, res.trajectory(r.fs, r.periods))
    )
    if r.output.lower().endswith(".json"):
        from jaxid.atomic import atomic_write

        with atomic_write(r.output) as fh:
            json.dump(joint_trajectory(robot.coordinate_names, t, q, qd, qdd), fh)
    else:
        ds = data.from_arrays(t, q, rnea(robot, q, qd, qdd), qd, qdd, source="excitation")
        if not t_approach:  # whole periods of the series: the base frequency travels with the file
            ds = dataclasses.replace(ds, base_frequency=res.omega_f / (2 * np.pi), harmonics=int(res.a.shape[1]))
        data.write(ds, r.output)
    return ExciteOutcome(r, robot, description, res, lim, constraints, home, payload, True, np.asarray(t), t_approach)


# ------------------------------------------------------------------------------ lugre
def read_friction_csv(path):
    """(names, dt, x (N, n), v (N, n), F (N, n)) from a friction CSV; WorkflowError if malformed."""
    try:
        with open(path) as f:
            header = [h.strip() for h in f.readline().strip().split(",")]
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except FileNotFoundError:
        raise WorkflowError(f"{path}: no such file") from None
    except ValueError as e:
        raise WorkflowError(f"{path}: not a numeric CSV with a header row ({e})") from None
    if data.shape[1] != len(header):
        raise WorkflowError(f"{path}: {len(header)} header names but {data.shape[1]} columns")
    col = {h: data[:, i] for i, h in enumerate(header)}
    if "t" not in col:
        raise WorkflowError(f"{path}: no 't' column; expected t, x, F or t, q1..qn, F1..Fn")
    if "x" in col and "F" in col:
        names, pos, vel, frc = ["x"], ["x"], ["v"], ["F"]
    else:
        n = sum(1 for h in header if h.startswith("q") and h[1:].isdigit())
        names = [f"q{j}" for j in range(1, n + 1)]
        pos, vel, frc = names, [f"qd{j}" for j in range(1, n + 1)], [f"F{j}" for j in range(1, n + 1)]
        missing = [c for c in pos + frc if c not in col]
        if n == 0 or missing:
            raise WorkflowError(
                f"{path}: expected columns t, x, F or t, q1..qn, F1..Fn; missing {missing or ['x', 'F']}"
            )
    for name in ["t"] + pos + frc + [c for c in vel if c in col]:
        bad = np.flatnonzero(~np.isfinite(col[name]))
        if bad.size:
            raise WorkflowError(f"{path}: column {name} has NaN/inf at data row {bad[0] + 1}; remove or repair it")
    t = col["t"]
    if len(t) < 100:
        raise WorkflowError(f"{path}: {len(t)} samples; an identification needs at least 100")
    steps = np.diff(t)
    dt = float(np.median(steps))
    if not dt > 0 or np.any(np.abs(steps - dt) > 1e-6 * dt + 1e-12):
        row = int(np.argmax(np.abs(steps - dt))) + 2
        raise WorkflowError(f"{path}: time stamps must increase uniformly (irregular at data row {row}); resample")
    x = np.stack([col[c] for c in pos], 1)
    F = np.stack([col[c] for c in frc], 1)
    v = np.stack([col[c] if c in col else np.gradient(col[p], dt) for c, p in zip(vel, pos)], 1)
    return names, dt, x, v, F


def _force_metrics(real, pred):
    from jaxid.metrics import max_pe, wape

    return {
        "wape_pct": float(wape(real, pred)),
        "max_pe_pct": float(max_pe(real, pred)),
        "rms": float(np.sqrt(np.mean((np.asarray(pred) - real) ** 2))),
    }


def write_json(doc, path) -> None:
    """``doc`` as JSON (indented, NaN refused) to ``path``, atomically."""
    from jaxid.atomic import atomic_write

    with atomic_write(path) as f:
        f.write(json.dumps(doc, indent=1, allow_nan=False, default=float) + "\n")


@dataclass(frozen=True)
class LugreOutcome:
    """result: the JSON-ready document of :func:`run_lugre` (per axis: parameters, std, warnings,
    WAPE / max PE of the simulated force and of a Coulomb + viscous model); NaN and inf are None."""

    request: LugreRequest
    result: dict


def run_lugre(request: LugreRequest, *, log: Log = None) -> LugreOutcome:
    """``jaxid lugre``: LuGre friction per axis of a friction experiment; writes ``output``; see
    :class:`LugreRequest`."""
    import jax
    import jax.numpy as jnp

    from jaxid.friction import lugre as model
    from jaxid.identification import lugre as ident

    r = request
    check_outputs([r.data, r.validation], [r.output, r.json])
    names, dt, x, v, F = read_friction_csv(r.data)
    threshold = ident.THRESHOLD if r.threshold is None else r.threshold
    val = read_friction_csv(r.validation) if r.validation else None
    if val is not None and (val[0] != names or abs(val[1] - dt) > 1e-9 * dt):
        raise WorkflowError(f"--validation: axes {val[0]} at dt {val[1]} s differ from the data's {names} at {dt} s")
    try:  # data that cannot identify LuGre, named by axis
        ident.check_excitation(v, threshold)
    except ValueError as e:
        msg = re.sub(r"^axis (\d+):", lambda m: f"axis {names[int(m[1])]}:", str(e)).replace(
            ": threshold ", ": --threshold "
        )
        raise WorkflowError(f"{r.data}: {msg}") from None
    if log is not None:
        log(f"identifying {len(names)} axis(es) from {len(x)} samples at {1 / dt:.0f} Hz, method {r.method}")
    rel_limit = ident.REL_STD if r.rel_std is None else r.rel_std
    with warnings.catch_warnings():  # in the result, with the axis names and rel_std
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = ident.identify_joints(x, v, F, dt, jax.random.key(r.seed), method=r.method, threshold=threshold)
    result = {
        "data": r.data,
        "validation": r.validation,
        "method": r.method,
        "seed": r.seed,
        "dt_s": dt,
        "threshold": threshold,
        "rel_std_limit": rel_limit,
        "axes": [],
    }
    for j, name in enumerate(names):
        fj = jax.tree_util.tree_map(lambda a: a[j], fit)
        p = fj.params
        entry = {
            "axis": name,
            "params": {n: float(getattr(p, n)) for n in model.NAMES},
            "std": dict(zip(model.NAMES, np.asarray(fj.std).tolist())),
            "rel_std": dict(zip(model.NAMES, np.asarray(fj.rel_std()).tolist())),
            "correlation": np.asarray(fj.corr).tolist(),
            "residual_std": float(fj.residual_std),
            "to_optimum_std": dict(zip(model.NAMES, np.asarray(fj.to_optimum).tolist())),
            "iterations": int(fj.iterations),
            "converged": bool(fj.converged),
            "physically_consistent": not fj.physical_problems(),
            "physics_problems": fj.physical_problems(),
            "at_bound": [n for n, b in zip(model.NAMES, np.asarray(fj.at_bound)) if b],
            "warnings": fj.warnings(rel_limit, axis=name),
        }
        vs, Fs = (v, F) if val is None else val[3:]
        pred = model.simulate(p, jnp.asarray(vs[:, j]), dt)
        cv = ident.coulomb_viscous(jnp.asarray(v[:, j]), jnp.asarray(F[:, j]), threshold)
        entry["lugre"] = _force_metrics(Fs[:, j], pred)
        entry["coulomb_viscous"] = {
            "Fc": float(cv[0]),
            "fv": float(cv[1]),
            **_force_metrics(Fs[:, j], cv[0] * np.sign(vs[:, j]) + cv[1] * vs[:, j]),
        }
        result["axes"].append(entry)
    # NaN/inf (a diverged fit, an unexcited parameter's std) become null: JSON has neither.
    result = json.loads(json.dumps(result), parse_constant=lambda _: None)
    if r.output:
        write_json(result, r.output)
    return LugreOutcome(r, result)
