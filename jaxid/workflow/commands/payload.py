"""``jaxid payload`` as a library function: [`run_payload`][jaxid.workflow.commands.payload.run_payload]."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxid import workflow
from jaxid.workflow import WorkflowError
from jaxid.workflow import params as _params
from jaxid.workflow.commands.common import Log, check_paths, model_for_params, named_model, policy, read_runs
from jaxid.workflow.requests import PayloadRequest


@dataclass(frozen=True)
class PayloadOutcome:
    """robot: the model; samples: the (q, qd, qdd, tau) the payload was fitted on;
    fit: the ``jaxid.identification.payload.PayloadFit``; warnings: the messages of the
    warnings the fit raised; alignment: the ``workflow.Alignment`` of the unloaded run on the
    loaded run's stamps, or None (no unloaded run, or not aligned); noise: the
    [`NoiseFigures`][jaxid.workflow.commands.payload.NoiseFigures] of the record (the torque-noise RMS beside the residual RMS, the
    smoothing's information loss, the design's expected stds); gain_source: where the fit's ``gain_std``
    (the torque gains' std its covariance includes) came from."""

    request: PayloadRequest
    robot: Any
    samples: tuple
    fit: Any
    warnings: tuple[str, ...]
    alignment: Any = None
    noise: Any = None
    gain_source: str = ""


@dataclass(frozen=True)
class NoiseFigures:
    """What the record's noise says, per used joint (``jaxid.identification.payload_design``):

    rms: model-free torque-noise RMS of the record as logged, N m (the payload article's RMS2;
        ``torque_noise_rms``: across periods with --period, else the five-point residual);
    rms_fitted: the noise of the samples fitted, N m, to set beside the fit's residual RMS (a
        residual well above it is model error, not noise): estimated on them (five-point residual),
        or with --smooth (coloured noise) ``rms`` times the smoothing's white-noise gain
        (``smoothing_noise_gain``) over sqrt(M) when M periods are averaged;
    method: how ``rms`` was estimated;
    smoothing_loss: with --smooth, dict ``tau`` and ``q``: (k,) the share of each signal's energy
        the smoothing removed (``smoothing_loss``; the article's limit 10 %), else None;
    design: the ``PayloadDesign`` of the fitted samples with ``rms`` per logged sample (each fitted
        sample standing for N_logged / N_fitted logged ones): the std the record's information and
        noise alone promise, against the fit's estimate as nominal; None where the noise is zero;
    design_note: why there is no design, else None."""

    rms: np.ndarray
    rms_fitted: np.ndarray
    method: str
    smoothing_loss: dict | None
    design: Any
    design_note: str | None = None


def run_payload(request: PayloadRequest, *, log: Log = None, warn: Callable[[str], None] | None = None):
    """``jaxid payload``: a payload's 10 inertial parameters on top of an identified robot (or
    against an unloaded run); writes ``output`` (JSON, by the caller's formatter: see
    `payload_document`); see [`PayloadRequest`][jaxid.workflow.requests.PayloadRequest]."""
    from jaxid.identification import payload as P

    r = request
    check_paths(r)
    params = _params.load_params(r.params) if r.params else None
    if params is None:  # the model named, or the one the runs' sidecars record, or an error
        r = dataclasses.replace(r, model=named_model(r.model, [r.data] + ([r.unloaded] if r.unloaded else []), log=log))
    robot = model_for_params(r.model, params, r.params, warn=warn)
    if not hasattr(robot, "tip"):
        raise WorkflowError("payload identification needs a rigid-body robot (built-in or URDF)")
    # Base values on their leading parameters, the dependent ones 0: the base model's torques.
    theta_robot = None if params is None else params.full()
    robot_cov = None if params is None else params.full_cov(error=True)
    joints = _joints(r, robot.n)
    nominal = () if params is not None or r.unloaded else (NOMINAL_SUBTRACTED.format(robot=robot.name),)
    if nominal and not r.nominal:
        raise WorkflowError(NOMINAL_REFUSED.format(robot=robot.name))
    read = read_runs([r.data] + ([r.unloaded] if r.unloaded else []), robot, r.prepare, r.model, prepare=False)
    ds = list(read)  # the runs fitted: the loaded one, or its difference to the unloaded one
    alignment = None
    if r.unloaded:
        loaded, unloaded = ds
        if r.align:
            loaded, unloaded, alignment = workflow.align_runs(loaded, unloaded)
        diff = workflow.torque_difference(loaded, unloaded)
        if alignment is not None:
            diff = dataclasses.replace(diff, notes=diff.notes + (alignment.describe("unloaded run"),))
        ds = [diff]
        # The robot's torque cancelled in the difference: nothing of the model is subtracted.
        theta_robot, robot_cov = np.zeros(robot.parameter_vector().shape), None
    for line in nominal:  # said before the work, on stderr, and kept in the outcome's warnings (the JSON's)
        (warn or warnings.warn)(line)
    samples = _samples(r, robot, ds, log)
    cov = None if r.cov is None else np.asarray(r.cov, dtype=float)
    gain_std, gain_source = _gain_std(r, read)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = P.identify_payload(
            robot, theta_robot, samples, joints=joints, cov=cov, robot_cov=robot_cov, gain_std=gain_std
        )
    noise = _noise_figures(r, robot, ds[0], samples, fit)
    return PayloadOutcome(
        r, robot, tuple(samples), fit, nominal + tuple(str(w.message) for w in caught), alignment, noise, gain_source
    )


def _gain_std(r: PayloadRequest, runs) -> tuple[float, str]:
    """The torque-gain std of the payload's covariance and where it comes from: the request's, else by how
    the runs' torques were logged (currents times torque constants, or torques)."""
    from jaxid.identification import payload as P

    if r.gain_std is not None:
        return r.gain_std, "--gain-std"
    if any(d.gains is not None for d in runs):
        return P.CURRENT_GAIN_STD, "the default for torques read as motor currents times --gains"
    return P.GAIN_STD, "the default for torques logged in N m"


def _noise_figures(r: PayloadRequest, robot, record, samples, fit) -> NoiseFigures:
    """The [`NoiseFigures`][jaxid.workflow.commands.payload.NoiseFigures] of the logged ``record`` (a Dataset: t, q, tau) and the fitted
    ``samples`` (q, qd, qdd, tau) of ``fit``."""
    from jaxid import signals
    from jaxid.identification import payload_design as D

    sel = list(fit.joints)
    tau = np.asarray(record.tau, dtype=float)
    period = r.period if r.period is not None and len(tau) // r.period >= 2 and len(tau) % r.period == 0 else None
    # The five-point estimate needs 5 samples; fewer give no figure (NaN), not an error: the fit stands.
    nan = np.full(len(sel), np.nan)
    rms = D.torque_noise_rms(tau, period)[sel] if len(tau) >= 5 else nan
    method = f"spread across the {len(tau) // period} periods" if period else "residual of five-point cubic smoothing"
    if r.smooth:  # smoothed noise is coloured, which the five-point estimate would miss: propagate it
        gain = D.smoothing_noise_gain(r.smooth) / (np.sqrt(len(tau) // r.period) if r.average and r.period else 1.0)
        rms_fitted = rms * gain
    else:  # measured on the samples fitted (averaged by --average or by the base frequency's path)
        fitted = np.asarray(samples[3], dtype=float)
        rms_fitted = D.torque_noise_rms(fitted)[sel] if len(fitted) >= 5 else nan
    loss = None
    if r.smooth:
        q = np.asarray(record.q, dtype=float)
        if r.average and r.period:
            tau, q = (np.asarray(signals.period_average(x, r.period)) for x in (tau, q))
        loss = {
            name: D.smoothing_loss(x, r.smooth, period=r.period)[sel if name == "tau" else slice(None)]
            for name, x in (("tau", tau), ("q", q))
        }
    design, note = None, None
    if not np.all(rms > 0):
        note = "the record's torque noise is zero (a noise-free simulation) or unknown: no finite design figure"
    else:
        # Each fitted sample stands for N_logged / N_fitted logged ones (periods averaged, samples decimated):
        # the record's information is that of the fitted samples with the logged noise divided by its root.
        per = np.sqrt(len(samples[0]) / len(record.tau))
        est = np.asarray(fit.estimate)
        nominal = est if fit.rank == 10 and np.all(np.isfinite(est)) and est[0] > 0 else None
        q, qd, qdd = (np.asarray(x) for x in samples[:3])
        try:
            design = D.design_payload(robot, q, qd, qdd, rms * per, joints=sel, nominal=nominal)
        except ValueError as e:
            note = f"no design figure: {e}"
    return NoiseFigures(rms, rms_fitted, method, loss, design, note)


#: The warning of ``jaxid payload`` without --params or --unloaded: what is subtracted, and the fixes.
NOMINAL_SUBTRACTED = (
    "neither --params nor --unloaded: the NOMINAL model of {robot} (its file's or built-in inertial "
    "parameters, not identified ones) is subtracted from the loaded run's torque, and its errors go into the "
    "payload's estimate; identify the robot first (jaxid identify, then --params params.json) or log the same "
    "trajectory without the payload (--unloaded FILE)"
)


#: The refusal of ``jaxid payload`` with neither --params nor --unloaded nor --nominal.
NOMINAL_REFUSED = (
    "neither --params nor --unloaded: the payload would be fitted on top of the NOMINAL model of {robot}, whose "
    "inertial errors (CAD masses are often 20-50 % off) go into the payload's estimate; identify the robot first "
    "(jaxid identify, then --params params.json), or log the same trajectory without the payload (--unloaded "
    "FILE), or pass --nominal to subtract the nominal model knowingly"
)


def _joints(r: PayloadRequest, n: int) -> list[int] | None:
    """The 0-based joints of ``r.joints`` (1-based) of an n-joint robot, or None (all)."""
    if r.joints is None:
        return None
    if any(not 1 <= j <= n for j in r.joints) or len(set(r.joints)) != len(r.joints):
        raise WorkflowError(
            f"--joints must list distinct joints between 1 and {n}, got {','.join(map(str, r.joints))!r}"
        )
    return [j - 1 for j in r.joints]


def _samples(r: PayloadRequest, robot, ds, log: Log):
    """(q, qd, qdd, tau) of the first run of ``ds``: averaged over periods and smoothed
    (``jaxid.identification.payload.preprocess``) when the request asks, else prepared."""
    from jaxid.identification import payload as P

    if r.period is not None or r.average or r.smooth:
        d = ds[0]
        return P.preprocess(
            d.t,
            d.q,
            d.tau,
            period=r.period,
            average=r.average,
            smooth=r.smooth,
            cutoff=r.prepare.cutoff,
            step=r.prepare.step,
        )[1:]
    prepared = workflow.prepare(ds[:1], robot, policy(r.prepare))
    if log is not None:
        log(f"  data: {prepared.describe()[0]}")
    d = prepared.datasets[0]
    return (d.q, d.qd, d.qdd, d.tau)


def design_from_trajectory(robot, path, noise, *, joints=None, repeats: int = 1, nominal=None, rate=None):
    """The ``jaxid.identification.payload_design.PayloadDesign`` of a trajectory file as ``jaxid
    excite`` writes it (.csv/.npz: t, q1..qn[, qd, qdd]; qd, qdd from a cubic spline of q when
    absent), logged at its own rate or at ``rate`` Hz: the whole file is one run (a file of P
    periods is P periods), ``repeats`` runs of it recorded. noise: torque noise std per logged
    sample, N m (scalar, (n,) or per used joint); joints 0-based (default all); nominal: the
    payload 10-vector the relative figures are against. A bad file or input is a WorkflowError."""
    from jaxid.identification.payload_design import design_payload
    from jaxid.workflow.commands.common import read_trajectory

    try:
        _, q, qd, qdd = read_trajectory(path, robot.n, rate)
        return design_payload(robot, q, qd, qdd, noise, joints=joints, periods=repeats, nominal=nominal)
    except (OSError, ValueError) as e:
        raise WorkflowError(f"payload design of {path}: {e}") from None
