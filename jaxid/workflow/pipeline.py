"""Identification of prepared runs, composed of the stages top to bottom ([`identify`][jaxid.workflow.pipeline.identify]):
the model's Stribeck velocity and gravity, the rows and their screening (``screen``), the estimate and
its covariance (``estimate``), the consistent fit (``consistency``), the physics check (``check``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from jaxid import arrays, hostdevices
from jaxid.model.description import fingerprint, model_description
from jaxid.workflow.check import check_physics
from jaxid.workflow.consistency import CV, GEOMETRY, cross_validated_weight, fit_consistent, resolve_bounds
from jaxid.workflow.estimate import covariance, gram_condition, instrumental_fit
from jaxid.workflow.export import with_nominal_standard
from jaxid.workflow.gravity import fit_gravity
from jaxid.workflow.params import Params, estimate_of, json_number
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import GravityFit, WorkflowError
from jaxid.workflow.regress import base_of
from jaxid.workflow.screen import fit_rows, outlier_free, screen, screening_record

#: Estimators of [`identify`][jaxid.workflow.pipeline.identify].
METHODS = ("wls", "ols", "irls", "ridge", "iv", "didim")


@hostdevices.one_blas_thread()
def identify(
    robot,
    prepared: Prepared,
    *,
    method: str = "wls",
    description: dict | None = None,
    consistent: bool = False,
    prior_weight: float | str = CV,
    prior_weights=None,
    max_steps: int | None = None,
    stribeck_vs: float | str | None = None,
    bounds=GEOMETRY,
    sdp_check: bool = False,
    outliers: str = "drop",
    reference=None,
    gains=None,
    gravity: str | None = None,
    progress: Callable | None = None,
) -> Params:
    """Identify the base parameters (and enabled joint terms) from all prepared runs stacked.

    robot: the model (``jaxid.Robot``). prepared: [`prepare`][jaxid.workflow.preprocess.prepare]'s result.
    method: "wls" (Gautier's two-step weighted LS, default), "ols", "irls" (Huber), "ridge", or
        "iv" (IDIM-IV) / "didim" (``jaxid.identification.instrumental``: the regressor noise of
        differentiated positions does not bias them), started from the WLS estimate, with
        instruments from the model's motion under the runs' control law (``jaxid.workflow.instruments``).
    reference: "iv", "didim": per run the commanded trajectory ``(t, q, qd, qdd)`` (s, rad, rad/s,
        rad/s^2; e.g. ``jaxid excite``'s file), or None: the prepared motion (with ``gains`` only).
    gains: "iv", "didim": the PD gains ``(kp, kd)`` (n,) each, N m/rad and N m s/rad, of the
        controller that tracked the reference, or None: a controller that tracked it exactly
        (computed torque; ``jaxid simulate``'s data), so that the model moves along the reference.
    description: the model's ``params.json`` entry (``jaxid.workflow.model``); default that of a model
        built in code (``jaxid.model.description.model_description``: validating then needs the robot).
    consistent: also estimate physically consistent standard parameters
        (``jaxid.identification.consistent.identify_consistent``, prior weight
        ``prior_weight``) and predict with them. max_steps: its Newton steps (None: its
        default, 1000 for the barrier method).
    prior_weight: the consistent fit's prior weight (>= 0), or "cv" (default, as ``jaxid identify
        --consistent``): chosen by cross-validation over the runs, or time blocks of one run
        ([`cross_validated_weight`][jaxid.workflow.consistency.cross_validated_weight]; its table in
        ``params.extra["prior_weight_choice"]``). prior_weights: the weights it tries (None:
        [`prior_grid`][jaxid.workflow.consistency.prior_grid]).
    bounds: ``jaxid.identification.consistent.Bounds`` on the consistent bodies (masses,
        centres of mass, total mass, bounding ellipsoids), "geometry" (default: each body inside
        its link's bounding ellipsoid, [`geometry_bounds`][jaxid.workflow.consistency.geometry_bounds] of
        ``description``), or None (consistency only).
    sdp_check: with ``consistent``, also solve the same problem as an SDP (cvxpy + Clarabel,
        the ``consistent-sdp`` extra) and record how far the fit's cost is from its optimum.
    stribeck_vs: the Stribeck velocity of the ``fs`` term, rad/s, or "fit" to identify it
        (``jaxid.identification.stribeck.fit_stribeck_velocity``); None keeps the robot's.
    gravity: "fit" to identify the direction of gravity in the base frame (a base that is not
        level) before the parameters (``jaxid.workflow.fit_gravity``); the model then carries it
        (``params.model["gravity"]``, ``params.gravity_fit``); None keeps the robot's.

    Screening (``jaxid.identification.screening``): a torque beyond 1e6 N m or a dead (all
    zero, stuck) torque channel is an error naming the run and joint; samples that are
    outliers on the residual of an OLS fit (robust z > 8) are dropped before the fit
    (``outliers="drop"``, default), or the fit switches to Huber IRLS (``"irls"``), or they
    are kept (``"keep"``); reported in ``params.screening``.

    Covariance (``params.cov``, ``params.std``): for "wls" and "ols" on runs that were filtered
    (a ``memory`` > 0 in their choices), the HAC sandwich (``jaxid.workflow.estimate.covariance``)
    (``jaxid.identification.sandwich``: residuals correlated over the filter's memory); else, with
    the rows held, the delete-a-block jackknife (``jaxid.identification.jackknife``: it holds a model
    error that follows the motion, at least the white covariance); else the estimator's own
    (white-noise) covariance. ``params.estimation.covariance`` is "hac", "jackknife" or "white",
    ``params.estimation.std_white`` the white-noise std (b,) in each case.

    Returns [`Params`][jaxid.workflow.params.Params] with the records of the stages
    (``jaxid.workflow.records``): ``preprocessing`` (per run), ``estimation``, ``screening``,
    ``instrumental``, ``gravity_fit``, ``consistency`` (with ``consistent``: ``converged``,
    ``steps``, ...) and ``physics`` (``consistent``, ``problems``, ``scale_vs_model``).
    The robot actually identified (with the fitted Stribeck velocity) is rebuilt from
    ``params.model`` by ``validate``. Raises WorkflowError when the data do not identify
    the base parameters.
    """
    check_arguments(robot, prepared, method, consistent, outliers, prior_weight, reference, gains, gravity)
    description = dict(description) if description is not None else model_description(robot)
    robot = with_stribeck_velocity(robot, prepared, stribeck_vs)
    level = robot  # the model's gravity: a cross-validation fits gravity on each fold's training runs
    robot, gravity_fit = with_gravity(robot, prepared) if gravity == "fit" else (robot, None)
    description.update(stribeck_vs=float(robot.stribeck_vs))
    if gravity_fit is not None:
        description.update(gravity=gravity_fit.vector, fingerprint=fingerprint(robot))
    base = base_of(robot)
    rows = fit_rows(robot, prepared, base, method=method, consistent=consistent, progress=progress)
    scr = screen(robot, prepared, base, rows, method=method, outliers=outliers, progress=progress)
    kept = outlier_free(robot, scr, outliers)
    fit, iv = scr.fit, None
    if method in ("iv", "didim"):
        fit, iv = instrumental_fit(
            robot, prepared, base, rows, kept, fit, method=method, reference=reference, gains=gains, progress=progress
        )
    cov, kind = covariance(robot, prepared, base, rows, scr, method=method, progress=progress)
    sources = [c["source"] for c in prepared.choices]
    params = Params(
        model=description,
        parameter_names=robot.parameter_names(),
        base=base,
        theta=arrays.device(fit.theta),
        cov=arrays.device(fit.cov if cov is None else cov),
        estimation=estimate_of(
            fit,
            n_samples=rows.n_fitted,
            sources=sources,
            rank_gap=float(base.gap),
            covariance="white" if cov is None else kind,
            std_white=np.asarray(fit.std).tolist(),
            cond_gram=json_number(gram_condition(rows.take(kept), scr)),  # None where not finite (JSON)
        ),
        preprocessing=prepared.preprocessing,
        screening=screening_record(prepared, rows, scr),
        instrumental=iv,
        gravity_fit=gravity_fit,
    )
    if consistent:
        bounds = resolve_bounds(level, bounds, description)
        choice = None
        if prior_weight == CV:
            prior_weight, choice = cross_validated_weight(
                level,
                prepared,
                method=method,
                bounds=bounds,
                weights=prior_weights,
                gravity=gravity,
                max_steps=max_steps,
                progress=progress,
            )
        params = fit_consistent(
            robot,
            params,
            rows.take(kept),
            scr,
            method=method,
            prior_weight=float(prior_weight),
            bounds=bounds,
            sdp_check=sdp_check,
            max_steps=max_steps,
        )
        if choice is not None:
            params = dataclasses.replace(params, extra={**params.extra, "prior_weight_choice": choice})
    else:
        params = with_nominal_standard(robot, params)
    return check_physics(robot, params)


#: The library's name for [`identify`][jaxid.workflow.pipeline.identify] (the command line, notebooks and benchmarks call it).
identify_experiment = identify


def check_arguments(robot, prepared: Prepared, method, consistent, outliers, prior_weight, reference, gains, gravity):
    """WorkflowError naming a setting of [`identify`][jaxid.workflow.pipeline.identify] it cannot use, or runs of another robot."""
    if method not in METHODS:
        raise WorkflowError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method in ("iv", "didim") and reference is None and gains is None:
        raise WorkflowError(
            f"method {method} needs the instruments' motion: the commanded trajectory of each run "
            "(reference=, CLI --reference traj.csv) or the controller's PD gains (gains=)"
        )
    if consistent and method not in ("wls", "ols"):
        raise WorkflowError(f"consistent identification works with method wls or ols, not {method}")
    if outliers not in ("drop", "irls", "keep") or (consistent and outliers == "irls"):
        raise WorkflowError(f"outliers must be 'drop', 'irls' or 'keep' ('irls' not with consistent), got {outliers!r}")
    if prior_weight != CV and not (
        isinstance(prior_weight, (int, float)) and math.isfinite(prior_weight) and prior_weight >= 0
    ):
        raise WorkflowError(f"prior_weight must be a finite number >= 0 or {CV!r}, got {prior_weight!r}")
    if gravity not in (None, "fit"):
        raise WorkflowError(f"gravity must be None or 'fit', got {gravity!r}")
    for ds in prepared.datasets:
        if ds.n != robot.n:
            raise WorkflowError(f"{ds.source}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}")


def with_stribeck_velocity(robot, prepared: Prepared, stribeck_vs):
    """The robot with the Stribeck velocity ``stribeck_vs`` (rad/s), or the one identified from all
    samples (``"fit"``: ``jaxid.identification.stribeck.fit_stribeck_velocity``), or as it is (None)."""
    if stribeck_vs is None:
        return robot
    if stribeck_vs != "fit":
        return dataclasses.replace(robot, stribeck_vs=float(stribeck_vs))
    from jaxid.identification.stribeck import fit_stribeck_velocity

    q, qd, qdd, tau = (
        np.concatenate([np.asarray(getattr(d, k)) for d in prepared.datasets]) for k in ("q", "qd", "qdd", "tau")
    )
    try:
        vs = fit_stribeck_velocity(robot, q, qd, qdd, tau)
    except ValueError as e:
        raise WorkflowError(f"fitting the Stribeck velocity: {e}") from None
    return dataclasses.replace(robot, stribeck_vs=float(vs))


def with_gravity(robot, prepared: Prepared):
    """(the robot under the direction of gravity identified from the runs, its
    [`GravityFit`][jaxid.workflow.records.GravityFit]): [`fit_gravity`][jaxid.workflow.gravity.fit_gravity]."""
    robot, doc = fit_gravity(robot, prepared)
    return robot, GravityFit.from_dict(doc)
