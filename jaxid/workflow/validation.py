"""Held-out torque prediction from identified parameters ([`validate`][jaxid.workflow.validation.validate],
[`predict`][jaxid.workflow.validation.predict]) and its
metrics ([`validation_metrics`][jaxid.workflow.validation.validation_metrics])."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jaxid.dynamics.batching import batched, bucketed_jit
from jaxid.identification import screening
from jaxid.model.description import model_mismatches
from jaxid.workflow.params import Params
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import WorkflowError


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


#: Up to this many samples [`model_torques`][jaxid.workflow.validation.model_torques] goes
#: through the regressor's program (chunks of ``jaxid.identification.base.SAMPLES``), which
#: identify, base_parameters and excite compile anyway, instead of compiling the model's torque
#: as a program of its own. Measured on a UR10 with
#: joint terms (2 shared cores, 2026-12-06): that program compiles in ~1.1 s, while the regressor
#: costs ~2.2 us per sample more than the torque: even from about 500 000 samples on.
REGRESSOR_TORQUES_MAX = 200_000


def model_torques(model, theta, q, qd, qdd) -> np.ndarray:
    """The model's torques (N, n), N m, at the parameters theta (p,) (``model.parameter_vector``
    order) and the samples q, qd, qdd (N, n), rad, rad/s, rad/s^2: ``Y(q, qd, qdd) @ theta`` by
    the regressor's chunked program for up to
    [`REGRESSOR_TORQUES_MAX`][jaxid.workflow.validation.REGRESSOR_TORQUES_MAX] samples (no
    program of its own to compile on a first run), else the model's torque directly (``rnea`` with the joint
    terms), which is cheaper per sample. The same numbers either way (``Y @ theta == torque``)."""
    from jaxid.workflow.regress import CHUNK, chunk_regressor

    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    N = q.shape[0]
    if N > REGRESSOR_TORQUES_MAX:
        return np.asarray(_torques((model, theta), q, qd, qdd))
    theta = np.asarray(theta, dtype=float)
    out = np.empty(q.shape)
    for s in range(0, N, CHUNK):
        out[s : s + CHUNK] = chunk_regressor(model, q[s : s + CHUNK], qd[s : s + CHUNK], qdd[s : s + CHUNK]) @ theta
    return out


def predict(model, params: Params, dataset) -> np.ndarray:
    """Torques (N, n), N m, that the identified parameters predict along ``dataset``.

    model: the model ``params`` was identified for (same parameter names; e.g.
    `model_from_description` of ``params.model``). dataset: a ``jaxid.data.Dataset``
    with ``qd`` and ``qdd``. Base parameters determine the torques: the prediction is
    ``W_base @ theta_base``, computed as the model's torque at [`Params.full`][jaxid.workflow.params.Params.full], plus, for
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
    tau = model_torques(model, params.full(), dataset.q, dataset.qd, dataset.qdd)
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
    from jaxid.workflow.params import json_number

    out = {
        k: {"per_joint": [json_number(v) for v in np.asarray(d["per_joint"])], "overall": json_number(d["overall"])}
        for k, d in metrics.summary(real, pred).items()
    }
    out["relative_error"] = json_number(metrics.nrmse(real, pred, axis=None))
    if tau_max is not None and np.all(np.isfinite(tau_max)):
        per = np.asarray(metrics.nrms_limits(real, pred, tau_max))
        out["nrms_limits"] = {"per_joint": [json_number(v) for v in per], "overall": json_number(per.mean())}
    return out


#: A joint whose NRMSE is more than this many times the median NRMSE of the run's other joints is
#: flagged ([`joint_flags`][jaxid.workflow.validation.joint_flags]): one overall figure hides a joint the model does not fit.
NRMSE_FACTOR = 3.0
#: A joint whose R^2 is below this is flagged ([`joint_flags`][jaxid.workflow.validation.joint_flags]).
R2_MIN = 0.8


def joint_flags(run: dict, names: Sequence[str] | None = None) -> list[dict]:
    """The joints of one run's metrics ([`validation_metrics`][jaxid.workflow.validation.validation_metrics]) that are far from the others:
    NRMSE above [`NRMSE_FACTOR`][jaxid.workflow.validation.NRMSE_FACTOR] times the median NRMSE of the run's other joints, or R^2 below
    [`R2_MIN`][jaxid.workflow.validation.R2_MIN]. One dict per flagged joint: ``joint`` (1-based), ``name``, ``nrmse`` (%),
    ``r2``, ``median_nrmse`` (% of the other joints), ``why`` (the reasons in words) and ``line``
    (all of it in one line)."""
    nrmse = [math.nan if v is None else float(v) for v in run.get("nrmse", {}).get("per_joint", [])]
    r2 = [math.nan if v is None else float(v) for v in run.get("r2", {}).get("per_joint", [])]
    n = max(len(nrmse), len(r2))
    names = list(names) if names is not None else [f"joint{j + 1}" for j in range(n)]
    out = []
    for j in range(n):
        others = [v for k, v in enumerate(nrmse) if k != j and math.isfinite(v)]
        median = float(np.median(others)) if others else math.nan
        why = []
        e = nrmse[j] if j < len(nrmse) else math.nan
        if math.isfinite(e) and math.isfinite(median) and e > NRMSE_FACTOR * median:
            ratio = f"{e / median:.3g}x" if median > 0 else "above"
            why.append(
                f"NRMSE {e:.3g} % is {ratio} the median of the other joints ({median:.3g} %; flagged above "
                f"{NRMSE_FACTOR:g}x)"
            )
        r = r2[j] if j < len(r2) else math.nan
        if math.isfinite(r) and r < R2_MIN:
            why.append(f"R^2 {r:.3g} < {R2_MIN:g}")
        if why:
            label = f"joint {j + 1} ({names[j]})"
            out.append(
                {
                    "joint": j + 1,
                    "name": names[j],
                    "nrmse": None if not math.isfinite(e) else e,
                    "r2": None if not math.isfinite(r) else r,
                    "median_nrmse": None if not math.isfinite(median) else median,
                    "why": why,
                    "line": f"{label}: " + "; ".join(why),
                }
            )
    return out


@dataclass(frozen=True)
class Validation:
    """Held-out prediction of [`validate`][jaxid.workflow.validation.validate].

    runs: one dict per run: ``source``, ``samples``, ``space`` ("joint", or "motor" for a run
        logged on the motors' side: its torques compared as the motors' ``tau_m = R^T tau``), the
        metrics of [`validation_metrics`][jaxid.workflow.validation.validation_metrics] (rmse N m, nrmse %, r2, wape %, max_pe %,
        relative_error %, nrms_limits % where the model has torque limits, on the joints' side)
        and ``flagged``: the joints far from the others ([`joint_flags`][jaxid.workflow.validation.joint_flags]).
    t, measured, predicted: per run, (N,) s and (N, n) N m, in the run's ``space``.
    q, qd: per run, the prepared joint positions and velocities (N, n) (rad, rad/s), for the
        report's residual and friction figures; empty when not recorded.
    warnings: model mismatches found between the parameters and the given robot.
    """

    runs: list
    t: list
    measured: list
    predicted: list
    warnings: list = field(default_factory=list)
    q: list = field(default_factory=list)
    qd: list = field(default_factory=list)

    def worst(self, metric: str = "nrmse") -> float:
        """The largest per-joint value of ``metric`` over all runs."""
        return max(max(v for v in r[metric]["per_joint"] if v is not None) for r in self.runs)

    def flagged(self) -> list[tuple[str, dict]]:
        """(run source, flag) of every joint [`joint_flags`][jaxid.workflow.validation.joint_flags] flags, over all runs (each run's
        ``flagged`` entry)."""
        return [(r["source"], f) for r in self.runs for f in r.get("flagged", [])]


def validate(robot, params, prepared: Prepared, *, truth: Sequence | None = None) -> Validation:
    """Predict the torques of prepared held-out runs from identified parameters.

    robot: the model the parameters were identified for
        (``jaxid.model.description.model_from_description(params.model)`` rebuilds it).
    params: [`Params`][jaxid.workflow.params.Params]. prepared: [`prepare`][jaxid.workflow.preprocess.prepare]'s result.
    truth: optional torques per run (N_read, n) N m to compare with instead of the measured
        ones (e.g. the noise-free torques of a simulation), aligned with ``Prepared.align``; on
        the joints' side.
    A run logged on the motors' side (``Dataset.motor_side``: read through the robot's
    ``transmission``) is compared in the log's space: measured and predicted torques as the
    motors' ``tau_m = R^T tau`` (WorkflowError when the robot has no transmission).
    Returns [`Validation`][jaxid.workflow.validation.Validation].
    """
    mismatches = model_mismatches(robot, params)
    if params.model.get("n") not in (None, robot.n):  # predictions would not even have the data's shape
        raise WorkflowError(mismatches[0])
    tau_max = np.asarray(getattr(robot, "tau_max", np.full(robot.n, np.inf)))
    val = Validation(runs=[], t=[], measured=[], predicted=[], warnings=mismatches)  # filled run by run
    transmission = getattr(robot, "transmission", None)
    for i, ds in enumerate(prepared.datasets):
        motor = bool(getattr(ds, "motor_side", False))
        if motor and transmission is None:
            raise WorkflowError(
                f"{prepared.choices[i]['source']}: the run was logged on the motors' side but the model has no "
                "transmission; give the model the transmission it was read through (Robot.with_transmission)"
            )
        real = np.asarray(ds.tau) if truth is None else prepared.align(i, truth[i])
        pred = np.asarray(predict(robot, params, ds))
        bad = screening.implausible_values(
            pred, label=f"{prepared.choices[i]['source']}: the predicted torque", names=list(robot.coordinate_names)
        )
        if bad:  # an overflowing model: its metrics would be inf or NaN
            raise WorkflowError(
                f"{bad.message}; these parameters are not a usable model of this robot "
                "(check the params file, and that it was identified for this robot)"
            )
        if motor and transmission is not None:  # in the log's space: the motors' torques (limits are the joints')
            real, pred = (np.asarray(transmission.motor_torques(x)) for x in (real, pred))
        metrics = validation_metrics(real, pred, None if motor else tau_max)
        val.runs.append(
            {
                "source": prepared.choices[i]["source"],
                "samples": len(ds),
                "space": "motor" if motor else "joint",
                **metrics,
                "flagged": joint_flags(metrics, list(robot.coordinate_names)),
            }
        )
        val.t.append(np.asarray(ds.t))
        val.measured.append(real)
        val.predicted.append(pred)
        val.q.append(np.asarray(ds.q))
        val.qd.append(np.asarray(ds.qd))
    return val
