"""The compatibility module: the names ``jaxid.results`` held before they moved to their stages.

- the params file ([`Params`][jaxid.workflow.params.Params], [`save_params`][jaxid.workflow.params.save_params],
[`load_params`][jaxid.workflow.params.load_params], [`to_json`][jaxid.workflow.params.to_json]; the
  format is documented in ``jaxid.workflow.params``): ``jaxid.workflow.params``;
- the model's description, rebuilding and fingerprint: ``jaxid.model.description``;
- prediction and validation metrics: ``jaxid.workflow.validation``;
- consistent standard parameters and model files: ``jaxid.workflow.export``.

New code imports from those modules.
"""

from jaxid.model.description import (  # noqa: F401
    build_model,
    builtin_model,
    fingerprint,
    model_description,
    model_from_description,
    model_mismatches,
)
from jaxid.workflow.export import consistent_standard, write_model  # noqa: F401
from jaxid.workflow.params import (  # noqa: F401
    FORMAT,
    VERSION,
    VERSIONS,
    Params,
    ParamsError,
    estimate_of,
    from_fit,
    json_number,
    load_params,
    records_from_fit,
    save_params,
    to_json,
)
from jaxid.workflow.validation import _torques, check_model, predict, validation_metrics  # noqa: F401
