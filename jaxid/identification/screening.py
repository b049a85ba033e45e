"""Screening of torque data and residuals before (and around) a least-squares fit.

Faulty logs are common: a torque channel that is disconnected (all zero) or stuck at a
constant, a single corrupt sample of 1e8 N m, a 1e300 cell. Least squares takes every
row at face value, so each of these gives a wrong estimate without a word (issue 18).
The checks here run on concrete arrays (numpy), before fitting, and each returns a small
result object that is falsy when nothing was found and has a one-line ``message`` naming
the joints and rows, for a caller to print:

- [`dead_channels`][jaxid.identification.screening.dead_channels] -- a joint whose torque is all zero, constant, or takes fewer
  than ``min_distinct`` (5) distinct values;
- [`implausible_values`][jaxid.identification.screening.implausible_values] -- samples with a non-finite value or ``|value| > bound``
  (1e6: no robot joint delivers a million N m or N);
- [`outliers`][jaxid.identification.screening.outliers] -- samples whose residual has a robust z-score
  ``|r - median_j| / (1.4826 MAD_j) > k`` on some joint j (k = 8 by default);
- [`screen_fit`][jaxid.identification.screening.screen_fit] -- the three in order around ``identify``, with the policy below.

Policy of [`screen_fit`][jaxid.identification.screening.screen_fit]:

1. implausible values are an error naming their rows (``implausible="drop"`` drops
   those samples instead);
2. dead channels are an error naming the joints (``dead="exclude"`` fits without those
   joints' rows, with a warning; ``dead="keep"`` leaves them in, where the two-step wls
   variance floor bounds their weight but they still bias the parameters they act on);
3. a least-squares fit (the requested method when it is "ols" or "wls", else OLS), and
   [`outliers`][jaxid.identification.screening.outliers] on its residual. When it finds none, that fit is the answer (or the
   requested method is fitted). When it finds any, the default ``on_outliers="irls"``
   fits Huber IRLS instead (``identify(method="irls")``, 95 % efficient on Gaussian noise,
   bounded influence) and reports the outliers found on the IRLS residual (where they
   stand out the most); ``"drop"`` refits the requested method without the flagged
   samples; ``"keep"`` fits the requested method and only reports.

Why k = 8: a Gaussian residual exceeds 8 robust standard deviations with probability
1.2e-15, so a million samples of seven joints give no false alarm, while real residuals
(friction and model errors at velocity reversals, a few MADs) stay below it; a gross
corrupt sample is thousands of MADs out. A false alarm only costs the 5 % efficiency of
IRLS. Least-squares residuals can hide a second outlier behind a gross one (the gross one inflates
every residual through the fit); IRLS, which the alarm switches to, does not care.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

__all__ = [
    "DeadChannels",
    "Implausible",
    "Outliers",
    "Screened",
    "dead_channels",
    "implausible_values",
    "outliers",
    "screen_fit",
    "OUTLIER_K",
    "BOUND",
    "MIN_DISTINCT",
]

#: Robust z-score above which a residual is an outlier.
OUTLIER_K = 8.0
#: |value| above which a torque (N m, or N) is not physical.
BOUND = 1e6
#: A channel with fewer distinct values is dead (stuck or coarsely quantised).
MIN_DISTINCT = 5
_MAD_TO_STD = 1.482602218505602  # 1 / Phi^-1(3/4)
_SHOW = 8  # rows named in a message


def _as_samples(x, n_joints, what):
    """x as (N, n): given (N, n), or stacked sample-major (N*n,) with n_joints (default 1)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 2:
        if n_joints is not None and x.shape[1] != n_joints:
            raise ValueError(f"{what} has shape {x.shape} but n_joints={n_joints}")
        return x
    if x.ndim == 1:
        n = 1 if n_joints is None else int(n_joints)
        if n < 1 or x.size % n:
            raise ValueError(f"{what} has {x.size} values, not a multiple of n_joints={n}")
        return x.reshape(-1, n)
    raise ValueError(f"{what} must have shape (N, n) or (N*n,), got {x.shape}")


def _joint(j, names):
    """'joint 5 (lwr_4_joint)': the 1-based joint number the user counts in, beside its name."""
    return f"joint {j + 1} ({names[j]})" if names is not None else f"joint {j + 1}"


def _rows(rows, describe):
    shown = ", ".join(describe(r) for r in rows[:_SHOW])
    return shown + (f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else "")


def _check_names(names, n):
    if names is not None and len(names) != n:
        raise ValueError(f"got {len(names)} joint names for {n} joints")
    return None if names is None else tuple(str(s) for s in names)


# ------------------------------------------------------------------ dead channels


@dataclasses.dataclass(frozen=True)
class DeadChannels:
    """Result of [`dead_channels`][jaxid.identification.screening.dead_channels]; iterates over (joint index, reason), falsy when none."""

    channels: tuple[tuple[int, str], ...]
    names: tuple[str, ...] | None = None

    @property
    def joints(self) -> list[int]:
        return [j for j, _ in self.channels]

    @property
    def message(self) -> str:
        if not self.channels:
            return "no dead torque channels"
        parts = "; ".join(f"{_joint(j, self.names)} {why}" for j, why in self.channels)
        return f"dead torque channel{'s' if len(self.channels) > 1 else ''}: {parts}"

    def __iter__(self):
        return iter(self.channels)

    def __len__(self):
        return len(self.channels)

    def __bool__(self):
        return bool(self.channels)


def dead_channels(tau, names=None, *, n_joints=None, min_distinct: int = MIN_DISTINCT) -> DeadChannels:
    """Torque channels that carry no signal.

    tau: (N, n), or stacked (N*n,) with ``n_joints``. names: n joint names for the message.
    A channel is dead when it is all zero, constant ("stuck at" its value; a spread below
    1e-12 of its size counts as constant), or takes fewer than ``min(min_distinct, N)``
    distinct values (a relay-like or stuck-and-jumping signal; a moving joint's torque
    takes as many values as there are samples). Non-finite values are ignored here
    ([`implausible_values`][jaxid.identification.screening.implausible_values] reports them).
    """
    t = _as_samples(tau, n_joints, "tau")
    names = _check_names(names, t.shape[1])
    found = []
    for j in range(t.shape[1]):
        x = t[:, j][np.isfinite(t[:, j])]
        if x.size == 0:
            found.append((j, "has no finite value"))
            continue
        top = np.max(np.abs(x))
        if top == 0:
            found.append((j, "is all zero"))
        elif np.ptp(x) <= 1e-12 * top:
            found.append((j, f"is constant at {x[0]:.6g} (stuck)"))
        else:
            k = np.unique(x).size
            if k < min(min_distinct, x.size):
                found.append((j, f"takes only {k} distinct values in {x.size} samples (stuck or quantised)"))
    return DeadChannels(tuple(found), names)


# ------------------------------------------------------------ implausible values


@dataclasses.dataclass(frozen=True)
class Implausible:
    """Result of [`implausible_values`][jaxid.identification.screening.implausible_values]: samples (rows of (N, n)) with a bad value."""

    rows: np.ndarray  # sample indices, ascending
    joints: tuple[tuple[int, ...], ...]  # the offending joints of each row
    values: tuple[float, ...]  # the largest |value| (or NaN) of each row
    bound: float
    label: str = "tau"
    names: tuple[str, ...] | None = None

    @property
    def count(self) -> int:
        return int(self.rows.size)

    @property
    def message(self) -> str:
        if not self.count:
            return f"{self.label}: no value beyond |{self.bound:g}|"

        def one(i):
            js = ", ".join(_joint(j, self.names) for j in self.joints[i])
            return f"sample {self.rows[i]} ({js}: {self.values[i]:.3g})"

        return (
            f"{self.label}: {self.count} sample{'s' if self.count > 1 else ''} with a non-finite value or "
            f"|value| > {self.bound:g}: {_rows(list(range(self.count)), one)}"
        )

    def __bool__(self):
        return bool(self.count)


def implausible_values(tau, bound: float = BOUND, *, n_joints=None, names=None, label: str = "tau") -> Implausible:
    """Samples with a value that is NaN, inf or beyond ``bound`` in magnitude.

    tau: (N, n), or stacked (N*n,) with ``n_joints`` (any per-joint signal: torques by
    default, also q, qd with a bound of their own). bound: the physical limit, default
    1e6 (N m or N: beyond any robot joint). Rows are sample indices (0-based).
    """
    t = _as_samples(tau, n_joints, label)
    names = _check_names(names, t.shape[1])
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound}")
    bad = ~np.isfinite(t) | (np.abs(np.nan_to_num(t, nan=0.0)) > bound)
    rows = np.flatnonzero(bad.any(axis=1))
    joints = tuple(tuple(int(j) for j in np.flatnonzero(bad[r])) for r in rows)
    with np.errstate(invalid="ignore"):
        values = tuple(float(np.nan if np.isnan(t[r]).any() else np.max(np.abs(t[r]))) for r in rows)
    return Implausible(rows, joints, values, float(bound), label, names)


# ------------------------------------------------------------------------ outliers


@dataclasses.dataclass(frozen=True)
class Outliers:
    """Result of [`outliers`][jaxid.identification.screening.outliers]: samples whose residual is more than k robust std out."""

    rows: np.ndarray  # sample indices, ascending
    z: np.ndarray  # (count, n) robust z-scores |r - median_j| / scale_j of those rows
    scale: np.ndarray  # (n,) robust std per joint, 1.4826 MAD (floored)
    k: float
    n_samples: int
    names: tuple[str, ...] | None = None

    @property
    def count(self) -> int:
        return int(self.rows.size)

    @property
    def per_joint(self) -> np.ndarray:
        """Number of flagged residuals on each joint, (n,)."""
        return np.sum(self.z > self.k, axis=0)

    @property
    def message(self) -> str:
        if not self.count:
            return f"no outliers (robust |z| > {self.k:g}) among {self.n_samples} samples"

        def one(i):
            j = int(np.argmax(self.z[i]))
            return f"sample {self.rows[i]} ({_joint(j, self.names)}, z = {self.z[i, j]:.3g})"

        return (
            f"{self.count} outlier sample{'s' if self.count > 1 else ''} of {self.n_samples} (robust |z| > "
            f"{self.k:g} on the residual): {_rows(list(range(self.count)), one)}"
        )

    def __bool__(self):
        return bool(self.count)


def outliers(residual, n_joints: int | None = None, k: float = OUTLIER_K, *, names=None, index=None) -> Outliers:
    """MAD screening of the per-joint residuals.

    residual: tau - W @ theta, stacked sample-major (N*n,) with ``n_joints``, or (N, n).
    Per joint j, z = |r - median(r_j)| / (1.4826 MAD_j) (a robust standard score: 1.4826
    MAD is the standard deviation for Gaussian data, unaffected by up to half the samples
    being bad). A sample is an outlier when z > k on any joint; k = 8 by default (module
    docstring). The scale is floored at 1e-9 of the largest joint's, and at the smallest
    normal number, so that a joint fitted exactly does not flag its rounding errors.
    index: (N,) sample numbers to report instead of 0..N-1 (when rows were dropped before).
    """
    r = _as_samples(residual, n_joints, "residual")
    names = _check_names(names, r.shape[1])
    if not k > 0:
        raise ValueError(f"k must be > 0, got {k}")
    if not np.all(np.isfinite(r)):
        raise ValueError("residual contains NaN or inf (screen the data with implausible_values first)")
    index = np.arange(r.shape[0]) if index is None else np.asarray(index)
    dev = np.abs(r - np.median(r, axis=0))
    scale = _MAD_TO_STD * np.median(dev, axis=0)
    scale = np.maximum(scale, max(1e-9 * float(np.max(scale)), np.finfo(float).tiny))
    z = dev / scale
    pos = np.flatnonzero((z > k).any(axis=1))
    return Outliers(index[pos], z[pos], scale, float(k), r.shape[0], names)


# ---------------------------------------------------------------------- screen_fit


@dataclasses.dataclass(frozen=True)
class Screened:
    """Result of [`screen_fit`][jaxid.identification.screening.screen_fit].

    fit: the ``Identification`` (its per-joint arrays cover ``joints`` only).
    method: the method actually fitted ("irls" when the outlier alarm fired).
    recommended: "irls" when outliers were found (whatever ``on_outliers`` did), else None.
    joints: the joints fitted (all but excluded dead ones). samples: the sample indices fitted.
    dead, implausible, outliers: the three reports (outliers: on the residual of the
    least-squares screening fit, or of the IRLS fit when that was used).
    reduced: the reduced rows of the final fit (``streaming.Reduced``) when they were streamed
    (``streaming.screen``), else None.
    """

    fit: object
    method: str
    recommended: str | None
    joints: tuple[int, ...]
    samples: np.ndarray
    dead: DeadChannels
    implausible: Implausible
    outliers: Outliers
    notes: tuple[str, ...] = ()
    reduced: object = None

    @property
    def message(self) -> str:
        """One line: what was found and done, or that the data passed."""
        if not self.notes:
            return f"screening: data passed (no dead channel, implausible value or outlier); method {self.method}"
        return "screening: " + "; ".join(self.notes)


def screen_fit(
    W,
    tau,
    n_joints: int,
    *,
    method: str = "wls",
    names=None,
    joint_names=None,
    k: float = OUTLIER_K,
    bound: float = BOUND,
    dead: str = "error",
    implausible: str = "error",
    on_outliers: str = "irls",
    **identify_kw,
) -> Screened:
    """Screen the data, fit, screen the residual, and refit robustly when it is needed.

    W: stacked sample-major regressor (N*n, p) or (N, n, p); tau: (N*n,) or (N, n).
    n_joints: n. method: the estimator wanted on clean data (``identify``'s methods).
    names: p parameter names (for ``identify``'s messages); joint_names: n joint names.
    k: outlier threshold (robust z). bound: physical bound of |tau|.
    dead: "error" (default), "exclude" (warn and drop those joints' rows) or "keep".
    implausible: "error" (default) or "drop" (drop those samples).
    on_outliers: "irls" (default), "drop" or "keep"; the policy is in the module docstring.
    identify_kw: passed to every ``identify`` call (e.g. ``scale``, ``rcond``).

    Returns [`Screened`][jaxid.identification.screening.Screened]. Raises ValueError with the report's message for
    implausible values or dead channels (unless told to drop/exclude them), for an
    unknown option, and whatever ``identify`` raises (e.g. a parameter that only an
    excluded joint excites is then unidentifiable, and named).
    """
    from jaxid.identification.estimators import identify

    for opt, val, ok in (
        ("dead", dead, ("error", "exclude", "keep")),
        ("implausible", implausible, ("error", "drop")),
        ("on_outliers", on_outliers, ("irls", "drop", "keep")),
    ):
        if val not in ok:
            raise ValueError(f"{opt} must be one of {ok}, got {val!r}")
    n = int(n_joints)
    Wn = np.asarray(W, dtype=float)
    t = _as_samples(tau, n, "tau")
    N = t.shape[0]
    if Wn.ndim == 2:
        if Wn.shape[0] != N * n:
            raise ValueError(f"W has {Wn.shape[0]} rows for {N} samples of {n} joints")
        Wn = Wn.reshape(N, n, -1)
    if Wn.shape[:2] != (N, n):
        raise ValueError(f"W has shape {Wn.shape}, expected ({N}, {n}, p)")
    joint_names = _check_names(joint_names, n)
    notes = []

    bad = implausible_values(t, bound, names=joint_names)
    samples = np.arange(N)
    if bad:
        if implausible == "error":
            raise ValueError(bad.message + " (remove those samples, or pass implausible='drop')")
        notes.append(f"{bad.message}: dropped")
        samples = np.setdiff1d(samples, bad.rows)

    dch = dead_channels(t[samples], joint_names)
    joints = list(range(n))
    if dch:
        if dead == "error":
            raise ValueError(dch.message + "; fix the sensor or mapping, or pass dead='exclude' to fit without it")
        if dead == "exclude":
            if len(dch) == n:
                raise ValueError(dch.message + ": no torque channel is left to fit")
            warnings.warn(f"{dch.message}: excluded from the fit", stacklevel=2)
            notes.append(f"{dch.message}: excluded")
            joints = [j for j in joints if j not in dch.joints]
        else:
            notes.append(f"{dch.message}: kept (biases the parameters that joint acts on)")
    fit_names = None if joint_names is None else [joint_names[j] for j in joints]

    all_joints = joints == list(range(n))

    def select(x, rows):  # no copy of W for the common case: every sample, every joint
        x = x if len(rows) == N else x[rows]
        return x if all_joints else x[:, joints]

    def resid(fit, rows):
        return select(t, rows) - select(Wn, rows) @ np.asarray(fit.theta)

    def fit_on(rows, how):
        return identify(select(Wn, rows), select(t, rows), how, names=names, **identify_kw)

    # The first fit is already the wanted one where it is a plain least-squares fit (ols, wls):
    # on clean data it is the answer, with no second fit (and no second compile).
    first = fit_on(samples, method if method in ("ols", "wls") else "ols")
    found = outliers(resid(first, samples), k=k, names=fit_names, index=samples)
    recommended = None
    if not found:
        used, fit = method, (first if first.method == method else fit_on(samples, method))
    else:
        recommended = "irls"
        if on_outliers == "irls":
            used, fit = "irls", fit_on(samples, "irls")
            again = outliers(resid(fit, samples), k=k, names=fit_names, index=samples)
            found = again if again else found
            notes.append(f"{found.message}: fitted by IRLS (Huber) instead of {method}")
        elif on_outliers == "drop":
            samples = np.setdiff1d(samples, found.rows)
            used, fit = method, fit_on(samples, method)
            notes.append(f"{found.message}: dropped, refitted by {method}")
        else:
            used, fit = method, fit_on(samples, method)
            notes.append(f"{found.message}: kept (IRLS recommended)")
    return Screened(fit, used, recommended, tuple(joints), samples, dch, bad, found, tuple(notes))
