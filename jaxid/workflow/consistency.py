"""Physically consistent identification: the consistent fit of the standard parameters
([`fit_consistent`][jaxid.workflow.consistency.fit_consistent]), the held-out choice of its prior weight
([`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight]) and
leave-one-run-out cross-validation ([`crossval`][jaxid.workflow.consistency.crossval])."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from jaxid.workflow.gravity import fit_gravity
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import Consistency, WorkflowError
from jaxid.workflow.regress import _holdout_rows, regressor_rows


def fit_consistent(
    robot, params, rows, scr, *, method: str, prior_weight: float, bounds=None, sdp_check=False, max_steps=None
):
    """``params`` with physically consistent standard parameters
    (``jaxid.identification.consistent.identify_consistent``, prior weight ``prior_weight``, body
    ``bounds``; with ``sdp_check`` also solved as an SDP; ``max_steps`` its Newton steps, None:
    its default) fitted to the held ``rows`` the screening
    kept (``jaxid.workflow.screen.Rows``; streamed: the screening's reduced rows ``scr.reduced``).
    The consistent bodies are the identified model: the estimate becomes their base parameters
    (the covariance stays that of the least-squares estimate); the record is ``params.consistency``."""
    from jaxid.identification.consistent import identify_consistent

    if bounds is not None:
        bounds.check()
    data = dict(reduced=scr.reduced) if rows.stream else dict(W=rows.W, tau=rows.tau)
    c = identify_consistent(
        robot,
        **data,
        base=params.base,
        method=method,
        weight=prior_weight,
        bounds=bounds,
        reference=sdp_check,
        max_steps=max_steps,
    )
    num = lambda x: None if not np.isfinite(float(x)) else float(x)
    steps, converged, valid = int(c.num_steps), bool(c.converged), bool(c.valid)
    record = Consistency(
        prior_weight=prior_weight,
        converged=converged,
        steps=steps,
        grad_norm=num(c.grad_norm),
        gap_bound=num(c.gap_bound),
        cost=num(c.cost),
        rss=num(c.rss),
        sdp_cost=num(c.sdp_cost),
        sdp_gap=num(c.sdp_gap),
        bounds=None if bounds is None else bounds_record(bounds),
        residual_rms=np.asarray(c.residual_rms).tolist(),
        estimate_ls=np.asarray(params.theta).tolist(),
        history=None
        if c.history is None
        else {key: [num(v) for v in np.asarray(c.history)[:steps, k]] for k, key in enumerate(("cost", "gap_bound"))},
    )
    source = (
        f"physically consistent estimate (identify_consistent, prior weight {prior_weight:g}, "
        f"{'converged' if converged else 'NOT converged'} in {steps} steps)"
    )
    return dataclasses.replace(
        params,
        theta=c.base,
        consistency=record,
        standard=jnp.asarray(np.asarray(c.theta)) if valid else None,
        standard_source=source if valid else None,
    )


def bounds_record(bounds) -> dict:
    """``jaxid.identification.consistent.Bounds`` as JSON: kg and m, None for an unbounded side."""
    return {
        "mass_kg": [[_finite(lo), _finite(hi)] for lo, hi in zip(bounds.mass_min, bounds.mass_max)],
        "com_min_m": [[_finite(v) for v in r] for r in bounds.com_min],
        "com_max_m": [[_finite(v) for v in r] for r in bounds.com_max],
        "body_min_m": [[_finite(v) for v in r] for r in bounds.body_min],
        "body_max_m": [[_finite(v) for v in r] for r in bounds.body_max],
        "total_mass_kg": None if bounds.total_mass is None else list(bounds.total_mass),
    }


def choose_prior_weight(
    robot,
    train: Prepared,
    test: Prepared,
    *,
    weights=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    method: str = "wls",
    bounds=None,
    progress: Callable | None = None,
) -> dict:
    """The held-out protocol for consistent identification: fit on the runs of ``train``,
    score on those of ``test``, for the unconstrained WLS model and a consistent model per
    prior weight (``jaxid.identification.consistent.holdout``).

    Returns ``{"rows": [...], "best": row}``: each row ``model`` ("wls" or "consistent"),
    ``weight``, ``rmse`` per joint (N m), ``nrms_limits`` (mean over joints of
    100 RMSE / (2 tau_max), %), ``converged``, ``steps``, ``valid``; ``best`` is the consistent row with the least
    held-out error.
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    memory.check_identify(train.n_samples + test.n_samples, robot.n, len(robot.parameter_names()))
    runs = _holdout_rows(robot, train, progress)
    test_rows = regressor_rows(robot, list(test.datasets), None, progress, [c.get("parallel") for c in test.choices])
    if bounds is not None:
        bounds.check()
    return holdout(robot, runs, test_rows, weights=tuple(weights), bounds=bounds, method=method)


def crossval(
    robot,
    prepared: Prepared,
    *,
    weights=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    method: str = "wls",
    bounds=None,
    gravity: str | None = None,
    progress: Callable | None = None,
) -> dict:
    """Leave-one-run-out cross-validation of consistent identification: for every run, fit
    on all the others and score on it (``jaxid.identification.consistent.holdout``), for
    the unconstrained WLS model and a consistent model per prior weight.

    prepared: at least two runs ([`prepare`][jaxid.workflow.preprocess.prepare]). weights, method, bounds: as
    [`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight]. gravity: "fit": in each rotation the direction of gravity is
    identified on the training runs ([`fit_gravity`][jaxid.workflow.gravity.fit_gravity]) and both models use it; the
    rotation's ``gravity`` entry records it.

    Returns ``{"rotations": [{"test": source, "train": [sources], "rows": [...], "best": row}],
    "weights": [...], "mean_nrms_limits": {weight: mean over rotations}, "chosen": the weight with
    the least mean held-out NRMS (%, 100 RMSE / (2 tau_max))}``; rows as [`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight].
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    if len(prepared.datasets) < 2:
        raise WorkflowError(
            f"cross-validation needs at least two runs (fit on the others, score on one); got {len(prepared.datasets)}"
        )
    if bounds is not None:
        bounds.check()
    memory.check_identify(prepared.n_samples, robot.n, len(robot.parameter_names()))
    if gravity not in (None, "fit"):
        raise WorkflowError(f"gravity must be None or 'fit', got {gravity!r}")
    rows = [] if gravity == "fit" else _holdout_rows(robot, prepared, progress)  # with a fit: per rotation
    sources = [c["source"] for c in prepared.choices]
    rotations = []
    for i in range(len(sources)):
        model, fitted = robot, None
        if gravity == "fit":  # on the training runs only: the held-out run is not seen
            train = Prepared(
                prepared.datasets[:i] + prepared.datasets[i + 1 :], prepared.choices[:i] + prepared.choices[i + 1 :]
            )
            model, fitted = fit_gravity(robot, train)
            rows = _holdout_rows(model, prepared, progress)
        res = holdout(model, rows[:i] + rows[i + 1 :], rows[i], weights=tuple(weights), bounds=bounds, method=method)
        for r in res["rows"]:
            r.pop("theta", None)
        rotations.append(dict(test=sources[i], train=sources[:i] + sources[i + 1 :], gravity=fitted, **res))
    mean = {
        float(w): float(np.mean([r["rows"][1 + k]["nrms_limits"] for r in rotations])) for k, w in enumerate(weights)
    }
    return dict(
        rotations=rotations,
        weights=[float(w) for w in weights],
        mean_nrms_limits=mean,
        chosen=min(mean, key=mean.__getitem__),
    )


def _finite(x):
    """A JSON number for a finite bound, None for an unbounded side."""
    return float(x) if np.isfinite(x) else None
