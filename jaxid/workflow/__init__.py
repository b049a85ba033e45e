"""The path from a robot's log to an identified model: read -> prepare -> identify -> validate.

One package for the library, the command line and the demo: ``jaxid identify`` is
``read`` + ``prepare`` + ``identify_experiment`` + ``save_params``, ``jaxid validate`` is
``read`` + ``prepare`` + ``validate``, and ``jaxid demo`` runs the subcommands
``excite -> simulate -> identify -> validate`` with the defaults a user gets. Each stage is a
module of one job, and returns a typed record (``records``) that [`Params`][jaxid.workflow.params.Params] holds:

- ``inputs``: [`model`][jaxid.workflow.inputs.model] (a robot and its params.json description), [`read`][jaxid.workflow.inputs.read] (one raw log),
  [`align_runs`][jaxid.workflow.inputs.align_runs] (two runs of one trajectory on one clock),
  [`torque_difference`][jaxid.workflow.inputs.torque_difference] (a payload's
  own torque);
- ``preprocess``: [`prepare`][jaxid.workflow.preprocess.prepare] under a [`Policy`][jaxid.workflow.preprocess.Policy] (cutoff from the position spectrum,
  edge trim, periodic averaging) -> [`Prepared`][jaxid.workflow.preprocess.Prepared], its choices per run (``Preprocessing``);
- ``regress``: regressor rows, the base parameters of a model; ``screen``: the rows a fit uses,
  implausible and dead channels, outliers (``Screening``); ``estimate``: the HAC covariance and the
  instrumental estimators (``Estimate``, ``Instrumental``); ``consistency``: physically consistent
  parameters and their prior weight (``Consistency``); ``gravity``: the direction of gravity;
  ``check``: what is physically wrong (``PhysicsCheck``); ``pipeline``: [`identify`][jaxid.workflow.pipeline.identify] (also
  [`identify_experiment`][jaxid.workflow.pipeline.identify_experiment]), the stages composed; ``lugre``: LuGre friction;
- ``params``: the params.json file ([`Params`][jaxid.workflow.params.Params], [`save_params`][jaxid.workflow.params.save_params],
[`load_params`][jaxid.workflow.params.load_params]);
  ``export``: consistent standard parameters as a model file; ``validation``: [`validate`][jaxid.workflow.validation.validate],
  [`predict`][jaxid.workflow.validation.predict] and the metrics.

Every public name is importable from ``jaxid.workflow``.
"""

from jaxid.identification.base import SAMPLES as CHUNK  # noqa: F401
from jaxid.workflow.check import (  # noqa: F401
    FLAG_FRICTION,
    FLAG_INERTIA,
    FLAG_MASS,
    FLAG_STIFFNESS,
    FLAG_UNIDENTIFIED,
    SCALE_WARN,
    SIGN_Z,
    at_bound,
    check_physics,
    parameter_flags,
    physics_report,
    scale_vs_model,
)
from jaxid.workflow.consistency import (  # noqa: F401
    CV,
    DEFAULT_PRIOR_WEIGHT,
    choose_prior_weight,
    cross_validated_weight,
    crossval,
    fit_consistent,
    geometry_bounds,
    one_se_choice,
    prior_grid,
)
from jaxid.workflow.estimate import (  # noqa: F401
    GRAM_COND_BAD,
    GRAM_COND_GOOD,
    condition_rating,
    covariance,
    gram_condition,
    instrumental_fit,
    instruments,
)
from jaxid.workflow.export import consistent_standard, with_nominal_standard, write_model  # noqa: F401
from jaxid.workflow.gravity import fit_gravity  # noqa: F401
from jaxid.workflow.inputs import (  # noqa: F401
    MIN_OVERLAP,
    SAME_TRAJECTORY,
    Alignment,
    align_runs,
    model,
    read,
    torque_difference,
)
from jaxid.workflow.lugre import LUGRE_REPLACES, identify_lugre  # noqa: F401
from jaxid.workflow.params import FORMAT, VERSION, Params, ParamsError, load_params, save_params  # noqa: F401
from jaxid.workflow.pipeline import METHODS, identify, identify_experiment  # noqa: F401
from jaxid.workflow.preprocess import (  # noqa: F401
    EXCITATION_CUTOFF,
    POWER_TAIL,
    RANGE_SLACK,
    SETTLING_TOL,
    SNR_CUTOFF,
    CutoffChoice,
    Policy,
    Prepared,
    band_edges,
    choose_cutoff,
    choose_cutoffs,
    describe_run,
    edge_trim,
    parallel_cutoff,
    policy_from_preprocessing,
    prepare,
    raise_for_trim,
)
from jaxid.workflow.records import (  # noqa: F401
    Consistency,
    Estimate,
    GravityFit,
    Instrumental,
    LugreFit,
    Periodic,
    PhysicsCheck,
    Preprocessing,
    Screening,
    WorkflowError,
)
from jaxid.workflow.regress import base_of, outside_reversals, regressor_rows  # noqa: F401
from jaxid.workflow.validation import (  # noqa: F401
    NRMSE_FACTOR,
    R2_MIN,
    Validation,
    check_model,
    joint_flags,
    predict,
    validate,
    validation_metrics,
)
from jaxid.workflow.verdicts import (  # noqa: F401
    COM_MARGIN,
    DEGENERATE_FRACTION,
    MASS_FACTOR,
    MAX_DENSITY,
    TOTAL_MASS_FACTOR,
    is_placeholder,
    plausible_check,
    verdict_checks,
    verdict_lines,
)
