"""``jaxid validate`` as a library function: :func:`run_validate`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxid import workflow
from jaxid.workflow import params as _params
from jaxid.workflow.commands.common import Log, check_outputs, log_data, model_for_params, read_runs
from jaxid.workflow.requests import ValidateRequest


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
    log_data(prepared, log)
    return ValidateOutcome(r, model, params, prepared, workflow.validate(model, params, prepared))
