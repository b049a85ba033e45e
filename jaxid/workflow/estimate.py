"""Estimation beyond the screened least squares: the HAC sandwich covariance of filtered runs
([`covariance`][jaxid.workflow.estimate.covariance]) and the instrumental estimators IDIM-IV and DIDIM
([`instrumental_fit`][jaxid.workflow.estimate.instrumental_fit],
with the instruments' motion of [`instruments`][jaxid.workflow.estimate.instruments]); the conditioning of the unscaled regressor
([`gram_condition`][jaxid.workflow.estimate.gram_condition], [`condition_rating`][jaxid.workflow.estimate.condition_rating])."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from jaxid.identification import jackknife
from jaxid.workflow import regress
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import Instrumental, WorkflowError


def covariance(robot, prepared: Prepared, base, rows, scr, *, method: str, progress=None):
    """The covariance (b, b) of a "wls" or "ols" fit that the screening kept (``scr``; not when it
    switched to IRLS), and its kind: the HAC sandwich of `_sandwich` ("hac") when some run was
    filtered (a ``memory`` > 0 in its choices), else the delete-a-block jackknife of `_jackknife`
    ("jackknife": a model error no parameter represents follows the motion, and the white covariance,
    which counts every sample as independent, understates what it leaves in the estimate); (None,
    None) for other methods, where the estimator's own white-noise covariance stands. rows: the fit's
    ``jaxid.workflow.screen.Rows``."""
    if method not in ("wls", "ols") or scr.method != method:
        return None, None
    kept = rows.moving.copy()
    kept[np.flatnonzero(rows.moving)[np.setdiff1d(np.arange(rows.n_fitted), np.asarray(scr.samples))]] = False
    held = None if rows.stream else (rows.Wb, rows.tau)
    if any(int(c.get("memory", 0)) for c in prepared.choices):
        cov = _sandwich(
            robot, prepared, base, scr.fit, rows.moving, kept, dense=held, reduced=scr.reduced, progress=progress
        )
        return cov, "hac"
    if int(np.sum(kept)) < 2 * jackknife.BLOCKS:
        return None, None
    return _jackknife(robot, prepared, base, scr.fit, rows.moving, kept, dense=held, progress=progress), "jackknife"


def instrumental_fit(robot, prepared: Prepared, base, rows, kept, fit, *, method, reference, gains, progress=None):
    """IDIM-IV ("iv") or DIDIM ("didim") of the base parameters from the screened WLS ``fit``, on the
    held ``rows`` (``jaxid.workflow.screen.Rows``) the screening kept (``kept``: their indices, or
    None for all). Returns (the fit, its [`Instrumental`][jaxid.workflow.records.Instrumental] record)."""
    at = np.repeat(rows.moving, robot.n).nonzero()[0]  # the rows of W among all samples' rows
    held = rows.take(kept)
    fit, doc = _instrumental(
        robot,
        prepared,
        base,
        held.Wb,
        held.tau,
        fit,
        method,
        reference,
        gains,
        at if kept is None else at[kept],
        progress,
    )
    return fit, Instrumental(**doc)


def _runs(robot, prepared: Prepared, base, moving, dense):
    """The runs for a second pass over a fit's rows, their base columns and sample edges: the held rows
    ``dense`` ``(W, tau)`` of the moving samples (outside reversals,
    [`outside_reversals`][jaxid.workflow.regress.outside_reversals]) as one callable per run (zero rows
    where not held), or, with dense None, the runs to evaluate again chunk by chunk."""
    n, cols = robot.n, np.asarray(base.indices)
    runs, lengths = regress._streamed_runs(robot, prepared, cols)
    edges = np.cumsum([0, *lengths])
    if dense is not None:
        W, tau = (np.asarray(x) for x in dense)
        W, tau = W.reshape(-1, n, W.shape[-1]), tau.reshape(-1, n)
        at = np.flatnonzero(moving)  # the sample (over all runs) of each held row

        def rows(a, b):  # run [a, b) of the grid, zero rows where not held (masked out)
            lo, hi = np.searchsorted(at, [a, b])  # at is sorted: the held rows of the run are lo:hi
            if hi - lo == b - a:  # every sample held: views of the rows, no copy
                return W[lo:hi], tau[lo:hi]
            Wr, tr = np.zeros((b - a, *W.shape[1:])), np.zeros((b - a, n))
            Wr[at[lo:hi] - a], tr[at[lo:hi] - a] = W[lo:hi], tau[lo:hi]
            return Wr, tr

        runs = [lambda a=a, b=b: rows(a, b) for a, b in zip(edges[:-1], edges[1:])]
    return runs, cols, edges


def _weights(robot, fit, moving, kept, dense, reduced):
    """The per-joint row weights (n,) a "wls" or "ols" ``fit`` took, and its bread: the white covariance
    over the noise scale, ``(W^T Omega W)^-1``. moving, kept: (samples of all runs,) bool, the samples
    outside reversals and, of those, the ones fitted; dense: their held rows, or None: ``reduced``
    (``streaming.Reduced`` of the fit) gives the two-step weights."""
    from jaxid.identification.estimators import reduced_variances, wls_variances

    n = robot.n
    if dense is not None:
        W, tau = (np.asarray(x) for x in dense)
        W, tau = W.reshape(-1, n, W.shape[-1]), tau.reshape(-1, n)
        fitted = kept[moving]
        var = wls_variances(W[fitted].reshape(-1, W.shape[-1]), tau[fitted].reshape(-1), n)
    else:
        var = reduced_variances(reduced.R, reduced.N)
    if fit.method == "wls":
        return 1.0 / np.asarray(var), np.asarray(fit.cov)  # fit.cov = (W^T Omega W)^-1
    return np.ones(n), np.asarray(fit.cov) / _pooled_variance(fit, kept)  # ols: cov = s^2 (W^T W)^-1


def _pooled_variance(fit, kept) -> float:
    """OLS's pooled noise variance s^2 = ||r||^2 / dof of ``fit`` on the ``kept`` samples, N^2 m^2."""
    return float(np.sum(np.asarray(fit.residual_rms, dtype=float) ** 2) * np.sum(kept) / float(fit.dof))


def _sandwich(robot, prepared: Prepared, base, fit, moving, kept, *, dense=None, reduced=None, progress=None):
    """The HAC sandwich covariance (b, b) of a "wls" or "ols" ``fit`` of the base parameters
    (``jaxid.identification.sandwich``), with each run's lag window its ``memory``. Arguments as
    `_runs`'s and `_weights`'s."""
    import jax.numpy as jnp

    from jaxid.identification import sandwich, streaming

    lags = [int(c.get("memory", 0)) for c in prepared.choices]
    runs, cols, edges = _runs(robot, prepared, base, moving, dense)
    weights, bread = _weights(robot, fit, moving, kept, dense, reduced)
    meat = streaming.meat(robot, runs, cols, fit.theta, weights, bread, lags, np.split(kept, edges[1:-1]), progress)
    return np.asarray(sandwich.covariance(jnp.asarray(bread), meat))


def _jackknife(robot, prepared: Prepared, base, fit, moving, kept, *, dense=None, progress=None):
    """The delete-a-block jackknife covariance (b, b) of a "wls" or "ols" ``fit`` of the base
    parameters over [`BLOCKS`][jaxid.identification.jackknife.BLOCKS] contiguous blocks of the fitted
    samples (the runs in order), at least its white covariance (``jaxid.identification.jackknife``).
    Arguments as `_runs`'s; the same rows and weights whether held or streamed."""
    from jaxid.identification import streaming

    runs, cols, edges = _runs(robot, prepared, base, moving, dense)
    # Rows whitened by the fit's per-joint residual variances (WLS; pooled for OLS), the variances its
    # white covariance is at (the weights it took were the first step's, a little different: the
    # jackknife's scores allow for that).
    sigma2 = (
        np.asarray(fit.sigma2, dtype=float) if fit.method == "wls" else np.full(robot.n, _pooled_variance(fit, kept))
    )
    Fg, sg = streaming.block_sums(
        robot,
        runs,
        cols,
        fit.theta,
        1.0 / np.maximum(sigma2, 1e-300),
        jackknife.BLOCKS,
        np.split(kept, edges[1:-1]),
        progress,
    )
    C = jackknife.from_sums(Fg, sg, np.zeros((len(cols),) * 2), np.asarray(fit.theta))
    return jackknife.at_least(C, np.asarray(fit.cov))


def instruments(robot, prepared: Prepared, reference=None, gains=None):
    """The motion of the model that instrumental estimators use, per prepared run: a function
    ``motion(theta) -> [(q, qd, qdd), ...]`` ((N_i, n) each, at the run's prepared sample times)
    and whether it depends on theta.

    reference: per run ``(t, q, qd, qdd)`` of the commanded trajectory (the run's samples must lie
    inside it; values between its samples by cubic splines), or None: the prepared q, qd, qdd.
    gains: ``(kp, kd)``: the model at theta simulated under that PD law tracking the reference
    (``jaxid.identification.instrumental.closed_loop``) from the reference's first state;
    None: the reference itself (exact tracking; no dependence on theta).
    """
    from scipy.interpolate import CubicSpline

    from jaxid.identification.instrumental import closed_loop

    # per run: its sample times, and the reference (t, q, qd, qdd) from its start to the run's end
    refs: list[tuple[np.ndarray, tuple[np.ndarray, ...]]] = []
    for i, (ds, c) in enumerate(zip(prepared.datasets, prepared.choices)):
        t = np.asarray(ds.t)
        if reference is None:
            refs.append((t, (t, np.asarray(ds.q), np.asarray(ds.qd), np.asarray(ds.qdd))))
            continue
        if len(reference) != len(prepared.datasets):
            raise WorkflowError(
                f"{len(reference)} reference trajectories for {len(prepared.datasets)} runs: give "
                "one per run, in the same order"
            )
        tr, *x = (np.asarray(v, dtype=float) for v in reference[i])
        if any(v.shape != (tr.size, robot.n) for v in x):
            raise WorkflowError(f"{c['source']}: the reference must be t (N,) and q, qd, qdd (N, {robot.n})")
        if t[0] < tr[0] - 1e-9 or t[-1] > tr[-1] + 1e-9:
            raise WorkflowError(
                f"{c['source']}: its samples ({t[0]:g} to {t[-1]:g} s) are not all inside the "
                f"reference trajectory ({tr[0]:g} to {tr[-1]:g} s); give the run's own reference"
            )
        upto = min(tr.size, int(np.searchsorted(tr, t[-1] + 1e-9)) + 3)  # a few past the end for the spline
        refs.append((t, (tr[:upto], *(v[:upto] for v in x))))

    def at(t, grid, *x):
        return tuple(CubicSpline(grid, v, axis=0)(t) if grid.shape != t.shape or np.any(grid != t) else v for v in x)

    if gains is None:
        return (lambda theta: [at(t, *r) for t, r in refs]), False
    kp, kd = (np.broadcast_to(np.asarray(g, dtype=float), (robot.n,)) for g in gains)
    if not (np.all(np.isfinite(kp)) and np.all(np.isfinite(kd)) and np.all(kp > 0) and np.all(kd >= 0)):
        raise WorkflowError(f"gains must be kp > 0 and kd >= 0 per joint, got kp {kp}, kd {kd}")
    # The closed loop is simulated from the reference's start, where the robot started on it, not from
    # the run's first kept sample (after an edge trim the robot is off the reference by its tracking error).
    return (
        lambda theta: [
            at(t, r[0], *(np.asarray(v) for v in closed_loop(robot, theta, r[0], r[1], r[2], kp, kd))) for t, r in refs
        ]
    ), True


def _instrumental(robot, prepared, base, W, tau, fit, method, reference, gains, rows, progress):
    """IDIM-IV / DIDIM fit of the base parameters ([`instrumental_fit`][jaxid.workflow.estimate.instrumental_fit]), and its record."""
    from jaxid.identification import instrumental
    from jaxid.identification.base import lift

    motion, iterate = instruments(robot, prepared, reference, gains)
    nominal, cols = robot.parameter_vector(), np.asarray(base.indices)

    def Z(theta_b):
        moved = [
            dataclasses.replace(ds, q=m[0], qd=m[1], qdd=m[2])
            for ds, m in zip(prepared.datasets, motion(lift(base, theta_b, nominal)))
        ]
        return regress.regressor_rows(robot, moved, cols, progress, [c.get("parallel") for c in prepared.choices])[0][
            rows
        ]

    try:
        out = (
            instrumental.idim_iv(W, tau, Z, fit.theta, robot.n, iterate=iterate)
            if method == "iv"
            else instrumental.didim(tau, Z, fit.theta, robot.n, iterate=iterate)
        )
    except ValueError as e:
        raise WorkflowError(f"{method}: {e}") from None
    if not out.converged:
        warnings.warn(
            f"{method} did not converge in {out.iterations} iterations (last relative change "
            f"{out.change:.2g}); the estimate is the last one",
            RuntimeWarning,
            stacklevel=4,
        )
    return out.fit, {
        "iterations": out.iterations,
        "converged": out.converged,
        "change": out.change,
        "reference": "given" if reference is not None else "prepared motion",
        "controller": "exact tracking" if gains is None else "PD",
        "estimate_wls": np.asarray(fit.theta).tolist(),
    }


#: The rule of thumb for cond(Phi^T Phi) of the unscaled regressor Phi (the six-DOF article, seed
#: 000: below 1e3 healthy, above 1e6 some column combinations are practically not identifiable).
GRAM_COND_GOOD, GRAM_COND_BAD = 1e3, 1e6
#: Below this cond(Phi^T Phi), `gram_condition` takes it from the formed Gram matrix's eigenvalues.
GRAM_EXACT = 1e8


def gram_condition(rows, scr) -> float:
    """cond(Phi^T Phi) of the unscaled, unweighted base regressor Phi of the fitted samples: the
    square of s_max / s_min of Phi, inf where Phi is rank-deficient: from the eigenvalues of the
    formed Gram matrix where it is below ``GRAM_EXACT`` (their relative error is about eps times the
    condition, 1e-8 there; a seventh of the cost of an SVD of held rows), else from Phi's singular
    values (the Gram matrix would lose the digits). rows: the fit's ``Rows`` (held:
    their base columns ``Wb``); scr: the screening result, whose ``reduced`` R factors stand for
    streamed rows (``R_j^T R_j = X_j^T X_j``, so the stacked R's have Phi's singular values). Unlike
    the column-scaled ``cond`` the estimators report, it depends on the units of the parameters:
    the figure the rule of thumb of `GRAM_COND_GOOD` / `GRAM_COND_BAD` speaks of."""
    if getattr(scr, "reduced", None) is not None:
        R = np.asarray(scr.reduced.R)
        b = R.shape[-1] - 1
        X = R[:, :, :b].reshape(-1, b)
    elif rows.Wb is not None:
        X = np.asarray(rows.Wb)
    else:
        return float("nan")
    if X.size and np.all(np.isfinite(X)):
        e = np.linalg.eigvalsh(X.T @ X)
        if e[-1] > 0 and e[0] > e[-1] / GRAM_EXACT:
            return float(e[-1] / e[0])
    s = np.linalg.svd(X, compute_uv=False)
    if s.size == 0 or s[0] == 0:
        return float("nan")
    return float((s[0] / s[-1]) ** 2) if s[-1] > 0 else float("inf")


def condition_rating(cond_gram: float) -> str:
    """The rating of cond(Phi^T Phi) by the article's thresholds: "good (< 1e3)", "marginal (1e3 to
    1e6)", "poor (> 1e6: some parameter combinations are practically not identifiable)", or
    "unknown" (NaN)."""
    if not np.isfinite(cond_gram) and not np.isinf(cond_gram):
        return "unknown"
    if cond_gram < GRAM_COND_GOOD:
        return "good (< 1e3)"
    if cond_gram <= GRAM_COND_BAD:
        return "marginal (1e3 to 1e6)"
    return "poor (> 1e6: some parameter combinations are practically not identifiable)"
