"""``jaxid identify`` as a library function: [`run_identify`][jaxid.workflow.commands.identify.run_identify]."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxid import workflow
from jaxid.workflow import WorkflowError, plausibility
from jaxid.workflow import export as _export
from jaxid.workflow import params as _params
from jaxid.workflow.commands.common import (
    Log,
    bounds,
    build_model,
    check_outputs,
    check_paths,
    jsonable,
    log_data,
    named_model,
    read_runs,
    read_trajectory,
)
from jaxid.workflow.requests import IdentifyRequest


@dataclass(frozen=True)
class IdentifyOutcome:
    """What [`run_identify`][jaxid.workflow.commands.identify.run_identify] computed and wrote.

    robot: the model of the fit (with the fitted Stribeck velocity and gravity where asked);
    params: the ``_params.Params`` written to ``output``; prepared: the prepared runs;
    choice: the prior-weight table (JSON-ready; its ``chosen`` weight was fitted) of ``validate_on``, or
    of the cross-validation over the runs of a ``consistent`` fit without ``prior_weight``, or None; unconverged: a
    consistent fit that did not converge and was not accepted (no model file written); implausible: a model file
    was asked for, the checks' verdict is "not plausible" and it was not accepted (not written);
    model_out: the model file written, or None; validation: the fit validated on its own data
    (``request.validation``), or None."""

    request: IdentifyRequest
    robot: Any
    params: Any
    prepared: Any
    choice: dict | None
    unconverged: bool
    implausible: bool
    model_out: str | None
    validation: Any


def run_identify(request: IdentifyRequest, *, log: Log = None, progress: Callable | None = None) -> IdentifyOutcome:
    """``jaxid identify``: read, prepare, [`jaxid.workflow.identify_experiment`][jaxid.workflow.pipeline.identify_experiment] (or
    ``identify_lugre``), write params.json and the model file; see [`IdentifyRequest`][jaxid.workflow.requests.IdentifyRequest]."""

    r = request
    check_paths(r)
    named = named_model(r.model, r.data, log=log)  # no model named: the data's, or an error
    if named is not r.model:
        r = dataclasses.replace(r, model=named)  # the recorded model file, checked as if given
        check_paths(r)
    model_out, kind = r.model_out
    lugre = r.friction == "lugre"
    terms = tuple(t for t in r.model.joint_terms if t not in workflow.LUGRE_REPLACES) if lugre else None
    robot, desc = build_model(r.model, joint_terms=terms)
    prepared = read_runs(r.data, robot, r.prepare, r.model)
    log_data(prepared, log)
    body_bounds = bounds(r.bounds, robot, r.model, desc) if r.consistent else None
    choice = None
    if r.validate_on:
        choice = _choose_prior_weight(r, robot, prepared, body_bounds, progress)
    # without a weight, the fit cross-validates it (workflow.cross_validated_weight) and records the table
    prior_weight = workflow.CV if r.prior_weight is None else r.prior_weight
    prior_weight = prior_weight if choice is None else float(choice["chosen"])
    params = _fit(r, robot, desc, prepared, body_bounds, prior_weight, progress)
    if choice is not None:
        params = dataclasses.replace(
            params, extra={**params.extra, "validate_on": list(r.validate_on or ()), "prior_weight_choice": choice}
        )
    choice = params.extra.get("prior_weight_choice")
    robot = dataclasses.replace(
        robot,
        stribeck_vs=params.model["stribeck_vs"],  # fitted where asked
        gravity=np.asarray(params.model.get("gravity", robot.gravity), dtype=float),
    )
    params = _plausibility(robot, params, prepared)
    _params.save_params(r.output, params)
    # An unconverged consistent fit is an error by default: it is never written as a model.
    unconverged = params.consistency is not None and params.consistency.converged is False
    unconverged = unconverged and not r.accept_unconverged
    # Nor is a consistent fit whose named checks fail: a URDF is what a simulator or controller will
    # trust (a least-squares estimate that is not consistent is refused by _write_model, exit 2).
    implausible = r.consistent and model_out is not None and params.physics.plausible is False
    implausible = implausible and not r.accept_implausible
    written = None if unconverged or implausible else _write_model(r, robot, params)
    validation = workflow.validate(robot, params, prepared) if r.validation else None
    return IdentifyOutcome(r, robot, params, prepared, choice, unconverged, implausible, written, validation)


def _plausibility(robot, params, prepared):
    """``params`` with the logs' plausibility record and the fit's residual check
    (``plausibility.check_residuals``, warned) in ``extra["plausibility"]``."""
    record = prepared.plausibility or plausibility.Plausibility()
    if params.lugre is None:
        residual = plausibility.Plausibility(plausibility.check_residuals(robot, params, prepared))
        for f in residual.findings:
            warnings.warn(f.line, stacklevel=3)
        record = record + residual
    return dataclasses.replace(params, extra={**params.extra, "plausibility": record.to_dict()})


def _choose_prior_weight(r: IdentifyRequest, robot, prepared, body_bounds, progress) -> dict:
    """The JSON-ready prior-weight table of [`jaxid.workflow.choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight] on the
    held-out runs ``r.validate_on``."""
    model_out, _ = r.model_out
    check_outputs(r.validate_on, [r.output, model_out, r.json])
    held_out = read_runs(r.validate_on, robot, r.prepare, r.model)
    choice = workflow.choose_prior_weight(
        robot, prepared, held_out, weights=r.prior_weights, method=r.method, bounds=body_bounds, progress=progress
    )
    return jsonable({**choice, "chosen": choice["best"]["weight"]})


def _fit(r: IdentifyRequest, robot, desc, prepared, body_bounds, prior_weight, progress):
    """The ``_params.Params`` of the fit the request asks for (LuGre, or the rigid-body one)."""
    reference = None if r.reference is None else [read_trajectory(path, robot.n) for path in r.reference]
    if r.friction == "lugre":
        return workflow.identify_lugre(robot, prepared, description=desc, progress=progress)
    return workflow.identify_experiment(
        robot,
        prepared,
        method=r.method,
        description=desc,
        consistent=r.consistent,
        reference=reference,
        prior_weight=prior_weight,
        prior_weights=r.prior_weights,
        max_steps=r.max_steps,
        stribeck_vs=r.model.stribeck_vs,
        bounds=body_bounds,
        sdp_check=r.sdp_check,
        gravity="fit" if r.fit_gravity else None,
        progress=progress,
    )  # sdp_check without its extra: an ImportError naming it


def _write_model(r: IdentifyRequest, robot, params) -> str | None:
    """Write the model file the request asks for (``model_out``); returns its path, or None."""
    model_out, kind = r.model_out
    if not model_out:
        return None
    if params.standard is None:
        raise WorkflowError(
            f"the identified links are not physically consistent, so no {kind} can be written"
            + ("" if r.consistent else "; rerun with --consistent")
        )
    _export.write_model(robot, params, model_out, source=r.model.mjcf if r.mjcf_out else r.model.urdf, lump=r.urdf_lump)
    return model_out
