"""Physically consistent identification: the consistent fit of the standard parameters
([`fit_consistent`][jaxid.workflow.consistency.fit_consistent]), the held-out choice of its prior weight
([`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight]), and cross-validation over runs or time blocks
([`crossval`][jaxid.workflow.consistency.crossval]), which chooses it by the one-standard-error rule
([`one_se_choice`][jaxid.workflow.consistency.one_se_choice])."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxid.workflow.gravity import fit_gravity
from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import Consistency, WorkflowError
from jaxid.workflow.regress import _holdout_rows, regressor_rows

#: The prior weight the command line used before it was chosen from the data, and the smallest
#: weight of the cross-validation grid: a thousandth of one whitened sample, which only fixes the
#: directions the data cannot see.
DEFAULT_PRIOR_WEIGHT = 1e-3
#: The weights [`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight] tries by default.
HELD_OUT_WEIGHTS = (0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: Points of the cross-validation grid of prior weights ([`prior_grid`][jaxid.workflow.consistency.prior_grid]).
GRID_POINTS = 7
#: Folds of a single motion (one run, or runs that repeat one trajectory): blocks of its phase (K-fold
#: over time). 5 (Hastie, Tibshirani and Friedman 2009, sec. 7.10.1) was tried on simulated arms: it chose
#: a weight whose held-out error on another trajectory was 1.24x WLS's on one of six (UR5, seed 1; 0.99x
#: with 3), and changed no other much (``benchmarks/plausible_bodies.py``, 2026-12-07).
BLOCKS = 3
#: How far each semi-axis of a link's bounding ellipsoid reaches beyond its geometry, m (cables,
#: bolts and covers a CAD or collision model leaves out).
ELLIPSOID_MARGIN = 0.02
#: The default ``bounds`` of the consistent fits: each body in its link's bounding ellipsoid
#: ([`geometry_bounds`][jaxid.workflow.consistency.geometry_bounds]).
GEOMETRY = "geometry"


def geometry_bounds(robot, description: dict | None = None, nominal=None, *, margin: float = ELLIPSOID_MARGIN):
    """Each link's body inside a bounding ellipsoid of its link
    (``jaxid.identification.consistent.Bounds`` with ``ellipsoid_center``, ``ellipsoid_axes``;
    the density-realisability LMI of Wensing, Kim and Slotine 2018): the near-minimum-volume
    ellipsoid (``jaxid.model.geometry.bounding_ellipsoid``) of the link's geometry
    (``jaxid.workflow.verdicts.link_geometry``: the collision, else visual, capsules of the URDF
    ``description`` names, the built-in UR5's capsules, else the kinematic skeleton: the segment
    to each child joint, radius at least ``verdicts.SKELETON_RADIUS``) and of the nominal centre
    of mass (a CAD centre of mass off the geometry is kept feasible rather than refused), each
    semi-axis grown by ``margin`` m; then scaled about its centre until the nominal body fills at
    most [`NOMINAL_SHARE`][jaxid.workflow.consistency.NOMINAL_SHARE] of it, so that the prior's
    reference, and bodies spread somewhat wider, are feasible. A link whose nominal
    inertia is spread wider than its geometry allows gets a warning beyond
    [`ELLIPSOID_GROWTH`][jaxid.workflow.consistency.ELLIPSOID_GROWTH] (a placeholder, such as the
    KUKA LWR4+ file's 0.3 kg link 7 with 0.05 kg m^2 per axis, 7.4x; or an estimate, such as the
    Panda file's links 1 and 2, 2.1-2.3x), but is not held tighter than the nominal: an ellipsoid
    smaller than the body's true spread biases the fit, which then makes the body heavier to fit
    the inertia the data see into less room (on simulated Panda arms, links 1 and 2 at 1.65-2.18x
    their true mass with the ellipsoids capped at 1.5x; 1.03-1.14x without them,
    ``benchmarks/plausible_bodies.py``).

    robot: the model. description: its ``params.json`` model entry (None: the skeleton, or the
    UR5's capsules for the built-in UR5). nominal: standard parameters (p,) (None: the robot's).
    Returns the ``Bounds`` (no mass or box bounds)."""
    from jaxid.identification.consistent import Bounds
    from jaxid.model import geometry
    from jaxid.workflow import verdicts

    if description is None and robot.name == "ur5":
        description = {"builtin": "ur5"}
    links, _, names, skeletal = verdicts.link_geometry(robot, description)
    theta = np.asarray(robot.parameter_vector() if nominal is None else nominal, dtype=float)
    pis = theta[: 10 * robot.n].reshape(robot.n, 10)
    centers, axes = np.zeros((robot.n, 3)), np.zeros((robot.n, 3, 3))
    for i in range(robot.n):
        # a massless link's fit starts from a small body at its frame's origin (project_consistent)
        points = [pis[i, 1:4] / pis[i, 0] if pis[i, 0] > 0 else np.zeros(3)]
        centers[i], axes[i] = geometry.bounding_ellipsoid(links[i], points, margin=margin)
        if pis[i, 0] > 0:
            axes[i] *= _nominal_growth(names[i], pis[i], centers[i], axes[i], i in skeletal)
    return Bounds.make(robot, ellipsoid_center=centers, ellipsoid_axes=axes)


#: Factor beyond which [`geometry_bounds`][jaxid.workflow.consistency.geometry_bounds] warns that a link's
#: ellipsoid had to grow to hold its nominal body.
ELLIPSOID_GROWTH = 1.5
#: Share of a link's ellipsoid the nominal body may fill (``r^2 + tr(P S)``, 1 for a body that just
#: fits): the ellipsoid grows until the nominal fills at most half of it, so that a body spread up
#: to twice the nominal's still fits (a CAD or URDF inertia leaves out cables and motors, a
#: simulated truth of +-30 % spreads 1.3x): a body whose true spread the ellipsoid cannot hold is
#: made heavier by the fit instead.
NOMINAL_SHARE = 0.5


def _nominal_growth(name, pi, c, A, skeletal: bool) -> float:
    """The factor s >= 1 that scales the ellipsoid (c, A) about c until the nominal body pi (10,)
    fits it with room to spare: ``r^2 + tr(P S) <= NOMINAL_SHARE s^2`` (``r`` the centre of mass's ellipsoid
    radius, ``S`` the spread about it; ``Bounds`` class docstring). A warning beyond
    ELLIPSOID_GROWTH where the ellipsoid is the link's own geometry (a skeleton is only a guess of
    the link's girth, which the nominal inertia knows better)."""
    from jaxid.model import inertia

    m, com, I_c = (np.asarray(v) for v in inertia.to_mass_com_inertia(jnp.asarray(pi)))
    Ainv = np.linalg.inv(A)
    spread = float(np.trace(Ainv @ (np.trace(I_c) / 2 * np.eye(3) - I_c) @ Ainv.T)) / m
    fill = float(np.sum((Ainv @ (com - c)) ** 2)) + spread  # 1: the nominal just fits
    if np.sqrt(fill) > ELLIPSOID_GROWTH and not skeletal:
        warnings.warn(
            f"link {name}: the nominal body's inertia is spread wider than its link's geometry allows (it fits "
            f"an ellipsoid {np.sqrt(fill):.3g}x the geometry's): a placeholder or an estimate, not a body of this "
            f"shape; the consistent fit's ellipsoid is grown {np.sqrt(fill / NOMINAL_SHARE):.3g}x to hold it "
            "(--no-ellipsoid: none)",
            stacklevel=3,
        )
    return max(float(np.sqrt(fill / NOMINAL_SHARE)), 1.0)


def resolve_bounds(robot, bounds, description: dict | None = None):
    """``bounds`` as the consistent fits take them: [`GEOMETRY`][jaxid.workflow.consistency.GEOMETRY] becomes
    [`geometry_bounds`][jaxid.workflow.consistency.geometry_bounds] of ``robot`` (its ``description``);
    a ``Bounds`` is checked; None stays None (consistency only)."""
    if isinstance(bounds, str):
        if bounds != GEOMETRY:
            raise ValueError(f"bounds must be a Bounds, {GEOMETRY!r} or None, got {bounds!r}")
        return geometry_bounds(robot, description)
    if bounds is not None:
        bounds.check()
    return bounds


def fit_consistent(
    robot, params, rows, scr, *, method: str, prior_weight: float, bounds=None, sdp_check=False, max_steps=None
):
    """``params`` with physically consistent standard parameters
    (``jaxid.identification.consistent.identify_consistent``, prior weight ``prior_weight``, body
    ``bounds``; with ``sdp_check`` also solved as an SDP; ``max_steps`` its Newton steps, None:
    its default) fitted to the held ``rows`` the screening
    kept (``jaxid.workflow.screen.Rows``; streamed: the screening's reduced rows ``scr.reduced``).
    The consistent bodies are the identified model: the estimate becomes their base parameters
    and the covariance their mean squared error matrix ``V + d d^T``: V the spread under the noise,
    first order under the constraints and the prior
    (``jaxid.identification.consistent.constrained_covariance`` of the fit's sensitivity and the
    least-squares covariance, HAC where that one is; the least-squares one where the sensitivity
    is not finite), and d the consistent estimate less the least-squares one, an estimate of the
    bias that the prior and the constraints bring (the least-squares estimate has none): V alone
    is the spread about a prior that may be wrong, and on simulated arms whose bodies are 30 %
    off their URDF's it left the truth up to 16,600 std away (Hoerl and Kennard 1970 judge a
    regularised estimate by this MSE, not its variance). The least-squares estimate and
    covariance are in the record, ``params.consistency``."""
    from jaxid.identification.consistent import constrained_covariance, identify_consistent

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
        cov_ls=np.asarray(params.cov).tolist(),
        history=None
        if c.history is None
        else {key: [num(v) for v in np.asarray(c.history)[:steps, k]] for k, key in enumerate(("cost", "gap_bound"))},
    )
    source = (
        f"physically consistent estimate (identify_consistent, prior weight {prior_weight:g}, "
        f"{'converged' if converged else 'NOT converged'} in {steps} steps)"
    )
    S, cov = np.asarray(c.sensitivity), params.cov
    if np.all(np.isfinite(S)):
        constrained = constrained_covariance(jnp.asarray(S), jnp.asarray(params.cov))
        if bool(jnp.all(jnp.isfinite(constrained))):
            cov = constrained
        else:
            warnings.warn(
                "the consistent estimate's covariance under its constraints is not finite (a singular "
                "least-squares covariance): its std is the least-squares one",
                stacklevel=2,
            )
    shift = np.asarray(c.base) - np.asarray(params.theta)
    return dataclasses.replace(
        params,
        theta=c.base,
        cov=jnp.asarray(np.asarray(cov) + np.outer(shift, shift)),
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
        "ellipsoid_center_m": [
            c.tolist() if on else None for c, on in zip(bounds.ellipsoid_center, bounds.ellipsoid_links())
        ],
        "ellipsoid_axes_m": [
            A.tolist() if on else None for A, on in zip(bounds.ellipsoid_axes, bounds.ellipsoid_links())
        ],
        "total_mass_kg": None if bounds.total_mass is None else list(bounds.total_mass),
    }


def choose_prior_weight(
    robot,
    train: Prepared,
    test: Prepared,
    *,
    weights=None,
    method: str = "wls",
    bounds=GEOMETRY,
    description: dict | None = None,
    progress: Callable | None = None,
) -> dict:
    """The held-out protocol for consistent identification: fit on the runs of ``train``,
    score on those of ``test``, for the unconstrained WLS model and a consistent model per
    prior weight (``jaxid.identification.consistent.holdout``) of ``weights`` (default
    [`HELD_OUT_WEIGHTS`][jaxid.workflow.consistency.HELD_OUT_WEIGHTS]). bounds, description: the
    bodies' bounds as [`resolve_bounds`][jaxid.workflow.consistency.resolve_bounds] takes them (default: each
    body in its link's ellipsoid; None: consistency only).

    Returns ``{"rows": [...], "best": row}``: each row ``model`` ("wls" or "consistent"),
    ``weight``, ``rmse`` per joint (N m), ``nrms_limits`` (mean over joints of
    100 RMSE / (2 tau_max), %), ``converged``, ``steps``, ``valid``; ``best`` is the consistent row with the least
    held-out error.
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    weights = HELD_OUT_WEIGHTS if weights is None else weights
    memory.check_identify(train.n_samples + test.n_samples, robot.n, len(robot.parameter_names()))
    runs = _holdout_rows(robot, train, progress)
    test_rows = regressor_rows(robot, list(test.datasets), None, progress, [c.get("parallel") for c in test.choices])
    bounds = resolve_bounds(robot, bounds, description)
    return holdout(robot, runs, test_rows, weights=tuple(weights), bounds=bounds, method=method)


#: The default ``prior_weight`` of [`jaxid.workflow.identify`][jaxid.workflow.pipeline.identify]: chosen by
#: [`cross_validated_weight`][jaxid.workflow.consistency.cross_validated_weight].
CV = "cv"


def cross_validated_weight(
    robot,
    prepared: Prepared,
    *,
    method: str = "wls",
    bounds=GEOMETRY,
    description: dict | None = None,
    weights=None,
    gravity: str | None = None,
    max_steps: int | None = None,
    progress: Callable | None = None,
) -> tuple[float, dict | None]:
    """(prior weight, its table): the weight [`crossval`][jaxid.workflow.consistency.crossval] chooses over
    the runs of ``prepared`` (or time blocks of one run) by the one-standard-error rule, and its
    JSON-ready table (``params.extra["prior_weight_choice"]``). When the folds' regressors would
    not fit in memory (``jaxid.memory``: the fit itself may still stream) it warns and returns
    ([`DEFAULT_PRIOR_WEIGHT`][jaxid.workflow.consistency.DEFAULT_PRIOR_WEIGHT], None). Arguments as
    ``crossval``'s."""
    from jaxid import memory
    from jaxid.workflow.params import jsonable

    try:
        table = crossval(
            robot,
            prepared,
            weights=weights,
            method=method,
            bounds=bounds,
            description=description,
            gravity=gravity,
            max_steps=max_steps,
            progress=progress,
        )
    except memory.MemoryLimitError as e:
        warnings.warn(
            f"the prior weight is not cross-validated ({e}); fitting at {DEFAULT_PRIOR_WEIGHT:g}: "
            "give a prior weight (--prior-weight W) to choose it",
            stacklevel=3,
        )
        return DEFAULT_PRIOR_WEIGHT, None
    return float(table["chosen"]), jsonable(table)


def prior_grid(rows: int, points: int = GRID_POINTS) -> tuple[float, ...]:
    """The prior weights that cross-validation tries: ``points`` log-spaced from
    [`DEFAULT_PRIOR_WEIGHT`][jaxid.workflow.consistency.DEFAULT_PRIOR_WEIGHT] to ``rows``, the number of whitened residuals (samples x joints)
    the smallest training fold holds. The weight is counted in whitened samples, so the grid runs
    from a negligible fraction of one sample to the prior weighing as much as all the training
    data together, beyond which the fit is the nominal model whatever the data say."""
    top = max(float(rows), 10 * DEFAULT_PRIOR_WEIGHT)
    return tuple(float(w) for w in np.geomspace(DEFAULT_PRIOR_WEIGHT, top, points))


def one_se_choice(weights, errors, eligible=None) -> dict:
    """The one-standard-error rule (Hastie, Tibshirani and Friedman, "The Elements of Statistical
    Learning", 2nd ed., 2009, sec. 7.10): of the weights whose mean held-out error over the folds is
    within one standard error of the least mean (the standard error of that least mean, from the
    spread of its errors over the folds), the largest, i.e. the most regularised model the data
    cannot tell apart from the best one.

    weights: (G,) increasing; errors: (G, K) held-out error per weight and fold, K >= 2;
    eligible: (G,) bool, the weights that may be chosen (e.g. converged in every fold; default
    all; none eligible: all are). Returns ``{"mean", "se" (per weight), "least": the weight of
    the least mean, "tolerance": the error allowed, "chosen"}``."""
    w = np.asarray(weights, dtype=float)
    e = np.asarray(errors, dtype=float)
    if e.ndim != 2 or e.shape[0] != w.size or e.shape[1] < 2:
        raise ValueError(f"errors must be (weights, folds) with at least two folds, got {e.shape}")
    ok = np.ones(w.size, bool) if eligible is None else np.asarray(eligible, bool)
    ok = ok if ok.any() else np.ones(w.size, bool)
    mean, se = e.mean(axis=1), e.std(axis=1, ddof=1) / np.sqrt(e.shape[1])
    least = int(np.argmin(np.where(ok, mean, np.inf)))
    tol = mean[least] + se[least]
    chosen = int(np.flatnonzero(ok & (mean <= tol)).max())  # the least is among them
    return dict(
        mean=mean.tolist(), se=se.tolist(), least=float(w[least]), tolerance=float(tol), chosen=float(w[chosen])
    )


#: Two runs (or two periods of one run) repeat one motion when, shifted in time to agree best, every
#: joint's RMS position difference over their overlap is within this fraction of its range (as
#: ``workflow.inputs.SAME_TRAJECTORY`` for a payload's loaded and unloaded runs).
REPEAT_TOLERANCE = 0.02
#: The overlap, as a fraction of the shorter record, that two records of one motion must share.
REPEAT_OVERLAP = 0.5


def repeat_lag(t_a, q_a, t_b, q_b) -> float | None:
    """The time shift s (s) with ``q_b(s + tau) ~= q_a(tau)``, tau counted from each record's first stamp,
    when record b repeats record a's motion (every joint within
    [`REPEAT_TOLERANCE`][jaxid.workflow.consistency.REPEAT_TOLERANCE] of its range, RMS over an overlap of
    at least [`REPEAT_OVERLAP`][jaxid.workflow.consistency.REPEAT_OVERLAP] of the shorter); else None.

    t_a (N,), t_b (M,): stamps, s, increasing; q_a (N, n), q_b (M, n): positions, rad. Both are put on a's
    mean sample step (linear interpolation) and the shift is the whole step of least mean squared
    difference over the overlap (sums by FFT: O((N + M) log(N + M)) for all shifts)."""
    t_a, t_b = np.asarray(t_a, float) - float(t_a[0]), np.asarray(t_b, float) - float(t_b[0])
    q_a, q_b = np.asarray(q_a, float), np.asarray(q_b, float)
    if q_a.shape[1:] != q_b.shape[1:] or len(t_a) < 4 or len(t_b) < 4:
        return None
    dt = t_a[-1] / (len(t_a) - 1)
    grid = lambda t: np.arange(int(t[-1] / dt) + 1) * dt
    a = np.stack([np.interp(grid(t_a), t_a, x) for x in q_a.T], axis=1)
    b = np.stack([np.interp(grid(t_b), t_b, x) for x in q_b.T], axis=1)
    span = np.maximum(np.ptp(a, axis=0), 1e-12)
    a, b = a / span, b / span  # each joint in units of its range
    N, M = len(a), len(b)
    L = 1 << int(np.ceil(np.log2(N + M)))
    corr = lambda x, y: np.fft.irfft(np.fft.rfft(x, L) * np.conj(np.fft.rfft(y, L)), L)
    # For the lag k (b's sample i + k against a's sample i), over the overlap: sum a^2 + sum b^2 - 2 sum a b.
    k = np.arange(-(N - 1), M)
    cross = np.sum([corr(b[:, j], a[:, j]) for j in range(a.shape[1])], axis=0)[k % L]
    ca, cb = np.r_[0.0, np.cumsum(np.sum(a**2, 1))], np.r_[0.0, np.cumsum(np.sum(b**2, 1))]
    lo_a, hi_a = np.maximum(0, -k), np.minimum(N, M - k)
    count = np.maximum(hi_a - lo_a, 0)
    ssd = (ca[hi_a] - ca[lo_a]) + (cb[hi_a + k] - cb[lo_a + k]) - 2 * cross
    ok = count >= max(4, REPEAT_OVERLAP * min(N, M))
    if not ok.any():
        return None
    best = int(np.argmin(np.where(ok, ssd / np.maximum(count, 1), np.inf)))
    lag, lo, hi = int(k[best]), int(lo_a[best]), int(hi_a[best])
    rms = np.sqrt(np.mean((a[lo:hi] - b[lo + lag : hi + lag]) ** 2, axis=0))
    return float(lag * dt) if np.all(rms <= REPEAT_TOLERANCE) else None


def motions(prepared: Prepared) -> list[list[tuple[int, Any, float]]]:
    """The runs of ``prepared`` grouped by the motion they record: each group a list of (run index, run,
    shift s onto the group's first run's clock); two runs are one motion when
    [`repeat_lag`][jaxid.workflow.consistency.repeat_lag] finds them repeats (a trajectory run twice)."""
    groups: list[list[tuple[int, Any, float]]] = []
    for i, run in enumerate(prepared.datasets):
        for group in groups:
            lag = repeat_lag(group[0][1].t, group[0][1].q, run.t, run.q)
            if lag is not None:
                group.append((i, run, lag))
                break
        else:
            groups.append([(i, run, 0.0)])
    return groups


def folds(prepared: Prepared, blocks: int = BLOCKS) -> Prepared:
    """The folds of cross-validation, each a run of its own, that share no motion: a fold held out must
    not be in the training folds again, or the cross-validation cannot see the fit follow its noise and
    leans to too weak a prior (two repeats of one trajectory left out in turn differ by their noise only).
    On the KUKA LWR4+'s runs 1 and 2, which repeat one trajectory, the weight went 107 -> 130 (held out on
    run 3: 0.209 -> 0.2087 %): the phases of one excitation differ little there.

    The runs are grouped by the motion they record ([`motions`][jaxid.workflow.consistency.motions]). With
    two motions or more, each is a fold (its runs together: leave one motion out). With one, ``blocks``
    folds by phase: every record is put on the first one's clock (its shift), and block k holds the k-th
    of ``blocks`` equal spans of the time they cover together, or of the period where the runs' excitation
    has a known one (``Dataset.base_frequency``: the periods of one run are then folded by phase too); a
    single run of no known period is thus cut into
    ``blocks`` contiguous time blocks. Blocks left empty (a record shorter than ``blocks`` samples) are
    dropped."""
    from jaxid.data import concatenate

    groups = motions(prepared)
    choice = lambda i: prepared.choices[i]
    if len(groups) >= 2:
        if all(len(g) == 1 for g in groups):
            return prepared  # every run its own motion: leave one run out
        datasets = tuple(concatenate([r for _, r, _ in g]) for g in groups)
        sources = [" + ".join(dict.fromkeys(choice(i)["source"] for i, _, _ in g)) for g in groups]
    else:
        (group,) = groups
        clocks = [np.asarray(r.t, float) - float(r.t[0]) - shift for _, r, shift in group]  # on the first's clock
        f0 = {r.base_frequency for _, r, _ in group}
        if len(f0) == 1 and (period := f0.pop()):  # a known period: the phase within it
            k = [np.mod(c, 1 / period) * period * blocks // 1 for c in clocks]
        else:  # the span all records cover on the first's clock
            lo, hi = min(c[0] for c in clocks), max(c[-1] for c in clocks)
            k = [(c - lo) / max(hi - lo, 1e-300) * blocks // 1 for c in clocks]
        parts: list[list] = [[] for _ in range(blocks)]
        for (_, record, _), kr in zip(group, k):
            kr = np.clip(kr.astype(int), 0, blocks - 1)
            edges = np.r_[0, np.flatnonzero(np.diff(kr)) + 1, len(kr)]
            for a, b in zip(edges[:-1], edges[1:]):  # each stretch of one block (a period may wrap)
                parts[kr[a]].append(record.slice(int(a), int(b)))
        kept = [b for b in range(blocks) if parts[b]]
        datasets = tuple(concatenate(parts[b]) if len(parts[b]) > 1 else parts[b][0] for b in kept)
        names = " + ".join(dict.fromkeys(c["source"] for c in prepared.choices))
        sources = [f"{names} [block {b + 1}/{blocks}]" for b in kept]
    first = prepared.choices[0]
    return dataclasses.replace(
        prepared,
        datasets=datasets,
        choices=tuple({**first, "source": src, "samples": len(d)} for src, d in zip(sources, datasets)),
    )


def crossval(
    robot,
    prepared: Prepared,
    *,
    weights=None,
    method: str = "wls",
    bounds=GEOMETRY,
    description: dict | None = None,
    gravity: str | None = None,
    max_steps: int | None = None,
    progress: Callable | None = None,
) -> dict:
    """Cross-validation of consistent identification: leave one motion out (a run, or runs that repeat
    one trajectory), or, of one motion, [`BLOCKS`][jaxid.workflow.consistency.BLOCKS] blocks of its phase
    ([`folds`][jaxid.workflow.consistency.folds]): for every fold, fit on the others and
    score on it (``jaxid.identification.consistent.holdout``), for the unconstrained WLS model
    and a consistent model per prior weight.

    prepared: the runs ([`prepare`][jaxid.workflow.preprocess.prepare]). weights: the prior
    weights (default [`prior_grid`][jaxid.workflow.consistency.prior_grid] of the smallest training fold); method, bounds, description: as
    [`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight]. gravity: "fit": in each rotation the direction of gravity is
    identified on the training runs ([`fit_gravity`][jaxid.workflow.gravity.fit_gravity]) and both models
    use it; the rotation's ``gravity`` entry records it. A joint without a torque limit is scored
    over the largest torque measured on it in any run. max_steps: the consistent fits' Newton steps
    (None: their default).

    Returns ``{"rotations": [{"test": source, "train": [sources], "rows": [...], "best": row}],
    "weights": [...], "mean_nrms_limits": {weight: mean over rotations}, "se_nrms_limits":
    {weight: its standard error over rotations}, "least": the weight with the least mean held-out
    NRMS (%, 100 RMSE / (2 tau_max)), "tolerance", "chosen": the largest weight within one
    standard error of it ([`one_se_choice`][jaxid.workflow.consistency.one_se_choice]; only weights whose fits converged in every fold
    are chosen), "rule"}``; rows as [`choose_prior_weight`][jaxid.workflow.consistency.choose_prior_weight].
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    prepared = folds(prepared)
    tau_max = np.asarray(robot.tau_max, dtype=float)
    if not np.all(np.isfinite(tau_max)):  # no torque limits: the largest torque measured scores instead
        measured = np.max([np.max(np.abs(np.asarray(d.tau)), axis=0) for d in prepared.datasets], axis=0)
        robot = dataclasses.replace(robot, tau_max=np.where(np.isfinite(tau_max), tau_max, measured))
    bounds = resolve_bounds(robot, bounds, description)
    memory.check_identify(prepared.n_samples, robot.n, len(robot.parameter_names()))
    if gravity not in (None, "fit"):
        raise WorkflowError(f"gravity must be None or 'fit', got {gravity!r}")
    if weights is None:
        step = [max(1, int((c.get("parallel") or {}).get("step", 1))) for c in prepared.choices]
        n_rows = [len(d) // s * robot.n for d, s in zip(prepared.datasets, step)]
        weights = prior_grid(sum(n_rows) - max(n_rows))
    weights = tuple(sorted(float(w) for w in weights))
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
        res = holdout(
            model, rows[:i] + rows[i + 1 :], rows[i], weights=weights, bounds=bounds, method=method, max_steps=max_steps
        )
        for r in res["rows"]:
            r.pop("theta", None)
        rotations.append(dict(test=sources[i], train=sources[:i] + sources[i + 1 :], gravity=fitted, **res))
    errors = [[r["rows"][1 + k]["nrms_limits"] for r in rotations] for k in range(len(weights))]
    converged = [all(r["rows"][1 + k]["converged"] for r in rotations) for k in range(len(weights))]
    rule = one_se_choice(weights, errors, converged)
    return dict(
        rotations=rotations,
        weights=list(weights),
        mean_nrms_limits=dict(zip(weights, rule["mean"])),
        se_nrms_limits=dict(zip(weights, rule["se"])),
        least=rule["least"],
        tolerance=rule["tolerance"],
        chosen=rule["chosen"],
        rule="the largest prior weight whose mean held-out NRMS is within one standard error (over the folds) "
        "of the least (Hastie et al., The Elements of Statistical Learning, 2009, sec. 7.10)",
    )


def _finite(x):
    """A JSON number for a finite bound, None for an unbounded side."""
    return float(x) if np.isfinite(x) else None
