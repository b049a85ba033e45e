"""What several commands of [`jaxid.workflow.commands`][jaxid.workflow.commands] use: the model of a
[`ModelSpec`][jaxid.workflow.requests.ModelSpec] (or of a params.json), the runs of a
[`DataSpec`][jaxid.workflow.requests.DataSpec], body bounds, the payload vector, trajectory files,
the checks of output paths and the JSON helpers. No command module imports another: what two
share lives here.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from jaxid import workflow
from jaxid.model import description as _description
from jaxid.model.transmission import TransmissionError
from jaxid.workflow import WorkflowError, plausibility
from jaxid.workflow import validation as _validation
from jaxid.workflow.params import jsonable  # noqa: F401  (re-exported: jaxid.workflow.commands.jsonable)
from jaxid.workflow.requests import BoundsSpec, DataSpec, ModelSpec, PayloadSpec

Log = Callable[[str], None] | None


def _warn(line: str) -> None:
    warnings.warn(line, stacklevel=3)


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


def check_paths(request) -> None:
    """Before the work: the output guard on every path of ``request`` (its ``paths()``,
    [`jaxid.workflow.paths.check`][jaxid.workflow.paths.check]): no output over another or over an input, no run given
    twice, every input readable, every output writable and not read-only. WorkflowError naming
    the flags and the path."""
    from jaxid.workflow import paths

    paths.check(*request.paths())


def named_model(spec: ModelSpec, paths, *, log: Log = None) -> ModelSpec:
    """The spec of the model a command fits the data files ``paths`` to: ``spec`` when it names
    one, else the model their sidecars record (``jaxid simulate`` writes it;
    ``jaxid.data.read_model``, [`ModelSpec.with_recorded`][jaxid.workflow.requests.ModelSpec.with_recorded]), said through ``log``. Raises
    WorkflowError (``requests.NO_MODEL``) when neither names one, when the files record different
    models, or when the recorded model's file no longer builds the recorded kinematics."""
    from jaxid import data

    if spec.named:
        return spec
    try:
        recorded = {str(p): data.read_model(p) for p in paths}
    except data.DatasetError as e:
        raise WorkflowError(str(e)) from None
    named = spec.with_recorded(recorded)
    path, desc = next(iter(recorded.items()))
    try:
        robot, _ = build_model(named, joint_terms=())
    except WorkflowError as e:
        raise WorkflowError(
            f"{path}.json records model {named.robot or named.file[1]!r}, which cannot be built ({e}): name the "
            "model (--urdf PATH or --robot NAME)"
        ) from None
    if desc and desc.get("fingerprint") not in (None, _description.fingerprint(robot)):
        raise WorkflowError(
            f"{path}.json records model {desc.get('name')!r}, whose file now builds other kinematics "
            f"(fingerprint {_description.fingerprint(robot)}, recorded {desc['fingerprint']}): name the model "
            "(--urdf PATH or --robot NAME)"
        )
    if log is not None:
        what = named.robot or named.file[1]
        log(f"  model: {what} (recorded in {path}.json by jaxid simulate)")
    return named


def build_model(spec: ModelSpec, *, joint_terms: Sequence[str] | None = None):
    """(robot, description) of ``spec`` ([`jaxid.workflow.model`][jaxid.workflow.inputs.model]); joint_terms overrides
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
            transmission=spec.transmission,
        )
    except FileNotFoundError:
        raise WorkflowError(f"{flag}: no such file {path!r}") from None
    except TransmissionError as e:
        raise WorkflowError(f"--transmission: {e}") from None
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
            transmission=spec.transmission,
        )
        if params is not None:
            _validation.check_model(model, params)
    except FileNotFoundError as e:
        raise WorkflowError(f"{e}; give the model with --robot or --urdf") from None
    except TransmissionError as e:
        raise WorkflowError(f"--transmission: {e}") from None
    except ValueError as e:
        raise WorkflowError(f"{params_path or spec.robot or path}: {e}") from None
    if params is not None:
        for w in _description.model_mismatches(model, params):
            (warn or _warn)(f"{params_path}: {w}")
    return model


def policy(spec: DataSpec) -> workflow.Policy:
    """The [`jaxid.workflow.Policy`][jaxid.workflow.preprocess.Policy] of the data spec."""
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


def read_runs(paths, robot, spec: DataSpec, model: ModelSpec | None = None, *, prepare: bool = True, chosen=None):
    """Read dataset files for ``robot`` ([`jaxid.workflow.read`][jaxid.workflow.inputs.read], columns a glob maps ordered
    by the robot's joint names) and, unless ``prepare`` is False, prepare them
    ([`jaxid.workflow.prepare`][jaxid.workflow.preprocess.prepare] with the ``chosen`` Policy, default the spec's
    [`policy`][jaxid.workflow.commands.common.policy]);
    returns the ``Prepared`` runs (or the list of raw datasets). ``model``: the spec the robot came
    from (accepted for the callers' sake; the messages name the robot). A robot with a
    transmission (``--transmission``, or params.json's) has motor-side logs: they are read through it."""
    columns, units, gains = _mapping(spec)
    transmission = getattr(robot, "transmission", None)
    raw = []
    for path in paths:
        ds = workflow.read(
            path,
            columns=columns,
            units=units,
            gains=gains,
            resample=spec.resample,
            max_gap=spec.max_gap,
            joint_names=robot.coordinate_names,
            topic=spec.topic,
            rate=spec.rate,
            window=spec.window,
            transmission=transmission,
        )
        if ds.n != robot.n:
            raise WorkflowError(
                f"{path}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}; "
                "choose the model of this robot (--robot NAME or --urdf PATH)"
            )
        raw.append(ds)
    raw, record = plausibility.screen_logs(raw, robot, spec.accept_faults)
    if not prepare:
        return raw
    prepared = workflow.prepare(raw, robot, chosen or policy(spec))
    record = record + plausibility.screen_torques(prepared, robot, spec.accept_faults)
    return dataclasses.replace(prepared, plausibility=record)


def log_data(prepared, log: Log) -> None:
    """Each line of ``prepared.describe()`` to ``log`` (when given), as "  data: ..."."""
    if log is not None:
        for line in prepared.describe():
            log(f"  data: {line}")


def bounds(spec: BoundsSpec, robot, model: ModelSpec | None = None, description: dict | None = None):
    """``jaxid.identification.consistent.Bounds`` of the spec for ``robot``, or None when the spec
    bounds nothing. ``model``: the spec the robot came from (its URDF's collision geometry);
    ``description``: its ``params.json`` model entry, for the bounding ellipsoids
    (``jaxid.workflow.consistency.geometry_bounds``; None: those of ``model``'s URDF or the skeleton)."""
    from jaxid.identification.consistent import Bounds
    from jaxid.workflow.consistency import geometry_bounds

    if description is None and model is not None and model.urdf:
        description = {"urdf": str(model.urdf), "tip_link": model.tip_link}
    b = None
    try:
        if spec.given:
            b = Bounds.from_nominal(
                robot, mass_tol=spec.mass_tol, com_margin=spec.com_margin, total_mass=spec.total_mass
            )
            if spec.com_in_geometry or spec.body_in_geometry:
                b = b.intersect(Bounds.from_geometry(robot, _capsules(model, robot), body=spec.body_in_geometry))
        if spec.ellipsoid:
            e = geometry_bounds(robot, description)
            b = e if b is None else b.intersect(e)
        if b is not None:
            b.check()
    except ValueError as e:
        raise WorkflowError(f"bounds: {e}") from None
    return b


def _capsules(model: ModelSpec | None, robot):
    """The collision capsules of the model for the geometry bounds."""
    from jaxid.model import geometry

    if model is not None and model.urdf:
        try:
            return geometry.from_urdf(model.urdf, robot, tip_link=model.tip_link, package_dirs=model.package_dirs)
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


def write_json(doc, path) -> None:
    """``doc`` as JSON (indented, NaN refused) to ``path``, atomically."""
    from jaxid.atomic import atomic_write

    with atomic_write(path) as f:
        f.write(json.dumps(doc, indent=1, allow_nan=False, default=float) + "\n")


# ------------------------------------------------------------------------ trajectories
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
        arrays = _trajectory_npz(path)
    elif path.suffix.lower() == ".csv":
        arrays = _trajectory_csv(path, n)
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
    return (t, q, qd, qdd) if rate is None else _resample(t, (q, qd, qdd), rate)


def _trajectory_npz(path: Path) -> dict:
    """The arrays t, q, qd, qdd (those present) of a trajectory .npz file."""
    try:
        with np.load(path) as f:
            return {k: np.asarray(f[k], dtype=float) for k in ("t", "q", "qd", "qdd") if k in f.files}
    except (OSError, ValueError) as e:
        raise WorkflowError(f"{path}: not a readable NPZ file ({e})") from None


def _trajectory_csv(path: Path, n: int) -> dict:
    """The arrays t, q, qd, qdd (those present; the joint ones (N, n)) of a trajectory .csv file
    with the columns t, q1..qn, qd1..qdn, qdd1..qddn."""
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
    return arrays


def _resample(t, series, rate: float):
    """(grid, *series) on a grid of ``rate`` Hz over t (N,) s, each series (N, n) by a cubic spline."""
    from scipy.interpolate import CubicSpline

    if not (np.isfinite(rate) and rate > 0):
        raise WorkflowError(f"--rate must be a finite rate > 0 Hz, got {rate}")
    grid = np.arange(t[0], t[-1] + 0.5 / rate, 1.0 / rate)
    grid = grid[grid <= t[-1]]
    return (grid, *(CubicSpline(t, x, axis=0)(grid) for x in series))
