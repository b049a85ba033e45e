"""Base parameters and per-joint LuGre friction identified together ([`identify_lugre`][jaxid.workflow.lugre.identify_lugre])."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from jaxid.model.description import model_description
from jaxid.workflow.check import check_physics
from jaxid.workflow.export import with_nominal_standard
from jaxid.workflow.params import Params, json_number
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import Estimate, LugreFit, WorkflowError
from jaxid.workflow.regress import base_of, regressor_rows

#: Joint terms that LuGre friction replaces: its alpha0 is the Coulomb level, alpha2 the viscous
#: coefficient, alpha1 and v0 the Stribeck term (``identify_lugre`` refuses a model with them).
LUGRE_REPLACES = ("fv", "fc", "fs", "fva")


def identify_lugre(
    robot,
    prepared: Prepared,
    *,
    description: dict | None = None,
    key=None,
    method: str = "full",
    progress: Callable | None = None,
):
    """Base parameters and per-joint LuGre friction identified together from prepared runs.

    ``jaxid.identification.lugre_robot.identify``: least squares with static friction, each
    joint's LuGre fit on the residual of the run that dwells longest at low speed, then
    Levenberg-Marquardt on all of them with the base parameters eliminated (variable
    projection), reweighted per joint; the Gauss-Newton covariance of both together.

    robot: the model without the friction terms LuGre replaces ([`LUGRE_REPLACES`][jaxid.workflow.lugre.LUGRE_REPLACES];
    ``ia``, ``offset`` may stay). prepared: runs with qd (logged, or filtered by
    [`prepare`][jaxid.workflow.preprocess.prepare]), uniformly sampled, one of them through zero velocity on every joint with
    low-speed dwells (the S-curve friction experiment), fast enough for the bristle dynamics.
    key: PRNG key of the per-joint swarms; method: their staged method
    (``jaxid.identification.lugre.METHODS``).

    Returns [`Params`][jaxid.workflow.params.Params] with ``lugre`` (fields (n,)) and ``lugre_fit``
    ([`LugreFit`][jaxid.workflow.records.LugreFit]: ``method``, ``converged``, ``steps``, ``std`` and
    ``rel_std`` (n, 8), ``warnings``, ``friction_run``, the run of the per-joint starting fits);
    ``physics`` names a
    refinement that did not converge. Raises WorkflowError for data that cannot identify it.
    """
    from jaxid.identification import lugre_robot

    _check_lugre_inputs(robot, prepared)
    datasets = prepared.datasets
    base = base_of(robot)
    idx = np.asarray(base.indices)
    W = [regressor_rows(robot, [ds], idx, progress)[0].reshape(len(ds), robot.n, -1) for ds in datasets]
    with warnings.catch_warnings(record=True):  # the same lines are returned in params.lugre_fit.warnings
        warnings.simplefilter("always", RuntimeWarning)
        try:
            fit = lugre_robot.identify(W, datasets, key=key, method=method)
        except ValueError as e:
            raise WorkflowError(f"the data do not identify LuGre friction: {e}") from None
    names = list(robot.coordinate_names)
    A = np.concatenate([w.reshape(-1, w.shape[-1]) for w in W])
    sv = np.linalg.svd(A / np.where((nrm := np.linalg.norm(A, axis=0)) > 0, nrm, 1.0), compute_uv=False)
    N = prepared.n_samples
    dof = N * robot.n - base.rank - 8 * robot.n
    params = Params(
        model=dict(description if description is not None else model_description(robot)),
        parameter_names=tuple(robot.parameter_names()),
        base=base,
        theta=fit.theta,
        cov=jnp.nan_to_num(fit.cov_theta, nan=0.0),
        lugre=fit.lugre,
        estimation=Estimate(
            method="lugre",
            cond=float(sv[0] / sv[-1]),
            singular_values=[json_number(v) for v in sv],
            residual_rms=np.asarray(fit.residual_rms).tolist(),
            sigma2=(np.asarray(fit.sigma) ** 2).tolist(),
            dof=float(dof),
            n_samples=int(N),
            sources=[c["source"] for c in prepared.choices],
            rank_gap=float(base.gap),
        ),
        preprocessing=prepared.preprocessing,
        lugre_fit=LugreFit(
            method=method,
            converged=bool(fit.converged),
            steps=int(fit.steps),
            friction_run=prepared.choices[fit.friction_run]["source"],
            std=np.asarray(fit.std_lugre).tolist(),
            rel_std=np.asarray(fit.rel_std_lugre()).tolist(),
            warnings=fit.warnings(names),
            determinability=_determinability(fit, datasets[fit.friction_run]),
        ),
    )
    return check_physics(robot, with_nominal_standard(robot, params), scale=False)


def _determinability(fit, ds) -> list:
    """Per joint, {parameter: {status, rel_std, reason, experiment}} of the joint fit on the
    friction run ``ds`` (``lugre_determinability.determinability`` from the joint fit's std and
    the per-joint torque noise; no null-space statement: the joint Jacobian is not kept)."""
    from jaxid.friction.lugre import LuGre
    from jaxid.identification import lugre as single
    from jaxid.identification import lugre_determinability as det

    out = []
    q = np.asarray(ds.q)
    qd = np.asarray(ds.qd)
    vec = np.asarray(fit.lugre.vector())
    for j in range(vec.shape[0]):
        dets = det.determinability(
            LuGre.from_vector(vec[j]),
            np.asarray(fit.std_lugre)[j],
            q[:, j],
            qd[:, j],
            single.THRESHOLD,
            float(np.asarray(fit.sigma)[j]),
        )
        out.append(
            {
                d.name: {
                    "status": d.status,
                    "rel_std": json_number(d.rel_std),
                    "reason": d.reason,
                    "experiment": d.experiment,
                }
                for d in dets
            }
        )
    return out


def _check_lugre_inputs(robot, prepared: Prepared) -> None:
    """WorkflowError for a model with the friction terms LuGre replaces, or a run with another
    joint count, parallel filtering or period averaging (LuGre needs the run as recorded)."""
    overlap = [t for t in robot.joint_terms if t in LUGRE_REPLACES]
    if overlap:
        raise WorkflowError(
            f"LuGre friction replaces the joint terms {', '.join(overlap)}; build the model without "
            "them (--joint-terms without fv, fc, fs, fva)"
        )
    datasets = prepared.datasets
    for ds, c in zip(datasets, prepared.choices):
        if ds.n != robot.n:
            raise WorkflowError(f"{ds.source}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}")
        if c.get("parallel") or c.get("derivatives") == "periodic":
            raise WorkflowError(
                f"{ds.source}: LuGre integrates each joint's bristle state sample by sample along "
                "the run; use the run as recorded (no parallel filtering, no period averaging)"
            )
