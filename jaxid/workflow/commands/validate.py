"""``jaxid validate`` as a library function: [`run_validate`][jaxid.workflow.commands.validate.run_validate]."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxid import workflow
from jaxid.workflow import WorkflowError
from jaxid.workflow import params as _params
from jaxid.workflow.commands.common import Log, check_paths, log_data, model_for_params, policy, read_runs
from jaxid.workflow.requests import ValidateRequest


@dataclass(frozen=True)
class ValidateOutcome:
    """model, params (``_params.Params``), prepared runs and the
    [`jaxid.workflow.Validation`][jaxid.workflow.validation.Validation] of [`run_validate`][jaxid.workflow.commands.validate.run_validate]."""

    request: ValidateRequest
    model: Any
    params: Any
    prepared: Any
    validation: Any


def run_validate(
    request: ValidateRequest, *, log: Log = None, warn: Callable[[str], None] | None = None
) -> ValidateOutcome:
    """``jaxid validate``: predict the held-out runs from params.json; see [`ValidateRequest`][jaxid.workflow.requests.ValidateRequest].

    The held-out runs are prepared as the identification runs were (`reused_policy`):
    their derivative method, order, cutoff per joint and trim policy from params.json, unless
    ``--cutoff`` or ``--trim`` is given (each flag replaces its own setting)."""

    r = request
    check_paths(r)
    params = _params.load_params(r.params)
    c = params.consistency
    if c is not None and c.converged is False and not r.accept_unconverged:
        raise WorkflowError(
            f"{r.params}: its consistent fit did not converge in {c.steps} steps, so its bodies are not the "
            "optimum of their problem; identify again with a higher --max-steps (or a positive --prior-weight), "
            "or validate it anyway with --accept-unconverged"
        )
    model = model_for_params(r.model, params, r.params, warn=warn)
    chosen, how = reused_policy(r.prepare, params)
    if log is not None:
        log(f"  preprocessing: {how}")
    prepared = read_runs(r.data, model, r.prepare, r.model, chosen=chosen)
    log_data(prepared, log)
    return ValidateOutcome(r, model, params, prepared, workflow.validate(model, params, prepared))


def reused_policy(spec, params) -> tuple[Any, str]:
    """(the [`jaxid.workflow.Policy`][jaxid.workflow.preprocess.Policy] for the held-out runs, one line saying where its cutoff
    came from): the identification's preprocessing recorded in ``params`` (``params.preprocessing``,
    [`jaxid.workflow.policy_from_preprocessing`][jaxid.workflow.preprocess.policy_from_preprocessing]) with ``spec``'s (the ``DataSpec``'s) cutoff or
    trim in its place where the flag was given; the spec's own policy when params.json records no
    filtered run (logged or periodic identification runs, or a file without preprocessing)."""
    import dataclasses

    own = policy(spec)
    stored = workflow.policy_from_preprocessing(params.preprocessing or (), own)
    if stored is None:
        return own, "cutoff given" if spec.cutoff is not None else "params.json records no filtered run: chosen per run"
    if spec.cutoff is not None:
        stored = dataclasses.replace(stored, cutoff=spec.cutoff, settings_from=None)
    if spec.trim is not None:
        stored = dataclasses.replace(stored, trim=spec.trim)
    cut: list[float] = np.ravel(np.asarray(stored.cutoff, dtype=float)).tolist()
    at = f"{cut[0]:.3g} Hz" if len(set(cut)) == 1 else f"{min(cut):.3g}-{max(cut):.3g} Hz per joint"
    source = "given" if spec.cutoff is not None else "from params.json"
    trim = (
        "trim given"
        if spec.trim is not None
        else ("trim from params.json" if stored.trim is not None else "trim by settling time")
    )
    return stored, f"cutoff {at} {source} ({stored.derivatives}, order {stored.order}, {trim})"
