"""``jaxid crossval`` as a library function: [`run_crossval`][jaxid.workflow.commands.crossval.run_crossval]."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jaxid import workflow
from jaxid.workflow.commands.common import (
    Log,
    bounds,
    build_model,
    check_paths,
    jsonable,
    log_data,
    named_model,
    read_runs,
)
from jaxid.workflow.requests import CrossvalRequest


@dataclass(frozen=True)
class CrossvalOutcome:
    """robot, prepared runs and the JSON-ready result of [`jaxid.workflow.crossval`][jaxid.workflow.consistency.crossval]."""

    request: CrossvalRequest
    robot: Any
    prepared: Any
    result: dict


def run_crossval(request: CrossvalRequest, *, log: Log = None, progress: Callable | None = None) -> CrossvalOutcome:
    """``jaxid crossval``: leave-one-run-out cross-validation; see [`CrossvalRequest`][jaxid.workflow.requests.CrossvalRequest]."""
    check_paths(request)
    r = dataclasses.replace(request, model=named_model(request.model, request.data, log=log))
    robot, desc = build_model(r.model)
    prepared = read_runs(r.data, robot, r.prepare, r.model)
    log_data(prepared, log)
    cv = workflow.crossval(
        robot,
        prepared,
        weights=r.prior_weights,
        method=r.method,
        bounds=bounds(r.bounds, robot, r.model, desc),
        gravity="fit" if r.fit_gravity else None,
        progress=progress,
    )
    return CrossvalOutcome(r, robot, prepared, jsonable(cv))
