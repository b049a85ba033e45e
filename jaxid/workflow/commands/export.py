"""``jaxid export`` as a library function: [`run_export`][jaxid.workflow.commands.export.run_export]."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxid.workflow import WorkflowError
from jaxid.workflow import params as _params
from jaxid.workflow.commands.common import check_outputs, model_for_params
from jaxid.workflow.requests import ExportRequest


@dataclass(frozen=True)
class ExportOutcome:
    """The model, the params (``_params.Params``), the file written and its size in bytes."""

    request: ExportRequest
    model: Any
    params: Any
    path: Path
    size: int


def run_export(request: ExportRequest, *, warn: Callable[[str], None] | None = None) -> ExportOutcome:
    """``jaxid export``: write the identified torque model of ``request.params`` as a standalone
    artefact (``jaxid.workflow.export_control.write_control``); see [`ExportRequest`][jaxid.workflow.requests.ExportRequest]."""
    from jaxid.workflow.export_control import write_control

    r = request
    check_outputs([r.params], [r.output])
    params = _params.load_params(r.params)
    model = model_for_params(r.model, params, r.params, warn=warn)
    kw: dict[str, Any] = {"about": f"{r.params} ({model.name})"}
    if r.kind == "stablehlo":
        kw["batched"] = r.batched
    if r.kind == "c":
        kw["name"] = r.name
    try:
        path = write_control(model, params, r.kind, r.output, **kw)
    except ImportError as e:
        raise WorkflowError(str(e)) from None
    except ValueError as e:
        raise WorkflowError(f"{r.params}: {e}") from None
    return ExportOutcome(r, model, params, path, path.stat().st_size)
