"""The commands of ``jaxid``, as library functions: each runs one request
([`jaxid.workflow.requests`][jaxid.workflow.requests]) through the workflow and returns a frozen outcome record
that the command line formats.

``run_identify(IdentifyRequest) -> IdentifyOutcome`` and its kin build the model, read and
prepare the data, run the workflow's stages, decide and write the output files (params.json, a
model file, datasets, JSON) and return what was computed. Bad input is a
[`jaxid.workflow.WorkflowError`][jaxid.workflow.records.WorkflowError] (a ``ValueError``) naming the flag and the fix. Progress
is reported through the optional callables ``log(line)`` (a line of progress on the data) and
``progress(iterable, total=, desc=)`` (a progress bar); ``warn(line)`` receives warnings
(default: ``warnings.warn``). Figures and reports (``jaxid.report``) are the caller's.

One module per command (``identify``, ``crossval``, ``validate``, ``simulate``, ``payload``,
``lugre``, ``excite``, ``export``), none importing another; what several use is in ``common``. Every name is
importable from this package.
"""

from __future__ import annotations

from jaxid.workflow import WorkflowError
from jaxid.workflow.commands.common import (
    Log,
    bounds,
    build_model,
    check_outputs,
    check_paths,
    jsonable,
    log_data,
    model_for_params,
    named_model,
    payload_vector,
    policy,
    read_runs,
    read_trajectory,
    write_json,
)
from jaxid.workflow.commands.crossval import CrossvalOutcome, run_crossval
from jaxid.workflow.commands.excite import (
    ExciteOutcome,
    excite_constraints,
    joint_trajectory,
    run_excite,
    with_approach,
)
from jaxid.workflow.commands.export import ExportOutcome, run_export
from jaxid.workflow.commands.identify import IdentifyOutcome, run_identify
from jaxid.workflow.commands.lugre import LugreOutcome, read_friction_csv, run_lugre
from jaxid.workflow.commands.payload import NoiseFigures, PayloadOutcome, design_from_trajectory, run_payload
from jaxid.workflow.commands.simulate import SimulateOutcome, run_simulate
from jaxid.workflow.commands.validate import ValidateOutcome, run_validate
from jaxid.workflow.requests import (
    BoundsSpec,
    CrossvalRequest,
    DataSpec,
    ExciteRequest,
    ExportRequest,
    IdentifyRequest,
    LugreRequest,
    ModelSpec,
    PayloadRequest,
    PayloadSpec,
    SimulateRequest,
    ValidateRequest,
)

__all__ = [
    "BoundsSpec",
    "CrossvalOutcome",
    "CrossvalRequest",
    "DataSpec",
    "ExciteOutcome",
    "ExciteRequest",
    "ExportOutcome",
    "ExportRequest",
    "IdentifyOutcome",
    "IdentifyRequest",
    "Log",
    "LugreOutcome",
    "LugreRequest",
    "ModelSpec",
    "NoiseFigures",
    "PayloadOutcome",
    "PayloadRequest",
    "PayloadSpec",
    "SimulateOutcome",
    "SimulateRequest",
    "ValidateOutcome",
    "ValidateRequest",
    "WorkflowError",
    "bounds",
    "build_model",
    "check_outputs",
    "check_paths",
    "design_from_trajectory",
    "excite_constraints",
    "joint_trajectory",
    "jsonable",
    "log_data",
    "model_for_params",
    "named_model",
    "payload_vector",
    "policy",
    "read_friction_csv",
    "read_runs",
    "read_trajectory",
    "run_crossval",
    "run_excite",
    "run_export",
    "run_identify",
    "run_lugre",
    "run_payload",
    "design_from_trajectory",
    "NoiseFigures",
    "run_simulate",
    "run_validate",
    "with_approach",
    "write_json",
]
