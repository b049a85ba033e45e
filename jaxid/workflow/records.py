"""The typed records the identification stages return and [`jaxid.workflow.params.Params`][jaxid.workflow.params.Params] holds.

Frozen dataclasses of plain Python values (numbers, strings, lists), so that each is its own
JSON serialisation (``to_dict``, ``from_dict``: the version-2 params.json) and renders the part of
the version-1 ``fit`` dict it replaces (``Params.fit``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Self


class WorkflowError(ValueError):
    """Data or settings that the workflow cannot use; the message names the problem and the fix."""


# A dataclass itself (no fields) so that the type checker takes ``dataclasses.fields`` of it.
@dataclass(frozen=True)
class _Record:
    """``to_dict``/``from_dict`` over the dataclass fields; a field with a default may be missing
    (files written before it), one without is a TypeError naming it."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Self:
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in doc and f.default is dataclasses.MISSING]
        if missing:
            raise TypeError(f"missing field '{missing[0]}'")
        return cls(**{f.name: doc[f.name] for f in dataclasses.fields(cls) if f.name in doc})

    @classmethod
    def from_partial(cls, doc: dict[str, Any]) -> Self:
        """Like `from_dict`, a missing field None (its default where it has one): the parts of
        a version-1 ``fit`` dict, which readers also built by hand."""
        fields = [f for f in dataclasses.fields(cls) if f.name in doc or f.default is dataclasses.MISSING]
        return cls(**{f.name: doc.get(f.name) for f in fields})


#: Preprocessing fields added after params.json version 1 (issue 32: cutoff per joint, logged signals).
_ADDED_AFTER_V1 = frozenset({"cutoffs_hz", "order", "trim_from", "logged"})


@dataclass(frozen=True)
class Periodic(_Record):
    """A run averaged into one period (``derivatives`` "periodic"; ``jaxid.workflow.prepare``):
    base frequency (Hz) and where it came from ("data", "policy"), whole periods, samples per
    period, harmonics per joint and where from ("excitation", "noise floor"), the noise std per
    joint of q rad, qd rad/s, qdd rad/s^2 (``{"q", "qd", "qdd"}``, or None) and where from."""

    base_frequency_hz: float
    base_frequency_from: str
    periods: int
    samples_per_period: int
    harmonics: list
    harmonics_from: str
    noise_std: dict | None
    noise_from: str


@dataclass(frozen=True)
class Preprocessing(_Record):
    """What [`jaxid.workflow.prepare`][jaxid.workflow.preprocess.prepare] did to one run (``Prepared.choices[i]``, documented there)."""

    source: str
    samples_read: int
    fs_hz: float
    step: int
    notes: list
    derivatives: str
    cutoff_hz: float | None
    cutoff_from: str | None
    trim: int
    samples: int
    index: list
    reversal_band: float | None = None
    parallel: dict | None = None
    memory: int = 0
    periodic: Periodic | None = None
    cutoffs_hz: list | None = None
    order: int | None = None
    trim_from: str | None = None
    logged: list | None = None

    def to_dict(self) -> dict:
        """The run's choices dict (``Prepared.choices[i]``): the periodic fields inline."""
        # The fields added after version 1 are left out where unset, so that a version-1 run's
        # choices read and written again are the dict it was.
        out = {
            k: v for k, v in super().to_dict().items() if k != "periodic" and not (k in _ADDED_AFTER_V1 and v is None)
        }
        return out if self.periodic is None else {**out, **self.periodic.to_dict()}

    @classmethod
    def from_dict(cls, doc: dict) -> Preprocessing:
        return cls._read(doc, super().from_dict)

    @classmethod
    def from_partial(cls, doc: dict) -> Preprocessing:
        return cls._read(doc, super().from_partial)

    @classmethod
    def _read(cls, doc, read):
        own = {f.name for f in dataclasses.fields(cls)} - {"periodic"}
        periodic = Periodic.from_partial(doc) if doc.get("derivatives") == "periodic" else None
        return dataclasses.replace(read({k: v for k, v in doc.items() if k in own}), periodic=periodic)


@dataclass(frozen=True)
class Estimate(_Record):
    """The least-squares (or instrumental) estimate of the base parameters and its statistics.

    method: the estimator ("wls", "ols", "irls", "ridge", "iv", "didim", "lugre"). cond and
    singular_values (b,): of the column-scaled base regressor. residual_rms (n,) N m, sigma2 (n,)
    N^2 m^2: per joint. dof: degrees of freedom. n_samples: samples fitted. sources: the runs.
    rank_gap: R-diagonal gap of the base parameters. covariance: "hac" (the sandwich of filtered
    runs), "jackknife" (the block jackknife of logged ones) or "white"; std_white (b,): the
    white-noise std in each case (None where not computed).
    cond_gram: cond(Phi^T Phi) of the unscaled, unweighted base regressor Phi
    (``jaxid.workflow.estimate.gram_condition``; None where not computed).
    """

    method: str
    cond: float
    singular_values: list
    residual_rms: list
    sigma2: list
    dof: float
    n_samples: int
    sources: list
    rank_gap: float | None = None
    covariance: str | None = None
    std_white: list | None = None
    cond_gram: float | None = None


@dataclass(frozen=True)
class Screening(_Record):
    """The data screening before the fit (``jaxid.identification.screening``): its message, the
    method fitted after it (the requested one, or "irls"), the outlier samples (indices over the
    fitted samples), and the samples left out at velocity reversals (``Policy.reversal_band``
    per run, rad/s or None; how many were dropped)."""

    message: str | None
    method: str
    outlier_samples: list
    reversal_bands: list
    reversals_dropped: int


@dataclass(frozen=True)
class Instrumental(_Record):
    """IDIM-IV / DIDIM: iterations, converged, last relative change, the instruments' reference
    ("given" or "prepared motion") and controller ("exact tracking" or "PD"), the WLS start (b,)."""

    iterations: int
    converged: bool
    change: float
    reference: str
    controller: str
    estimate_wls: list


@dataclass(frozen=True)
class GravityFit(_Record):
    """The identified direction of gravity (``jaxid.workflow.fit_gravity``): vector (3,) m/s^2 in
    the base frame, tilt from the model's (deg), log-likelihood gained, converged."""

    vector: list
    tilt_deg: float
    nll_drop: float
    converged: bool


@dataclass(frozen=True)
class Consistency(_Record):
    """The physically consistent fit (``identify_consistent``): prior weight, converged, Newton
    steps, gradient norm, the bound on cost - optimum, cost and rss (whitened), the SDP's cost and
    gap (None unless checked), the body bounds (JSON of ``Bounds``, or None), residual RMS per joint
    (n,) N m, the least-squares estimate it started from (b,), the per-step history of cost and
    gap bound (or None), and the least-squares estimate's covariance (b, b) (None in files written
    before it, whose ``cov`` is that one; since, ``cov`` is the consistent estimate's own:
    ``jaxid.workflow.consistency.fit_consistent``). None entries: not finite."""

    prior_weight: float
    converged: bool
    steps: int
    grad_norm: float | None
    gap_bound: float | None
    cost: float | None
    rss: float | None
    sdp_cost: float | None
    sdp_gap: float | None
    bounds: dict | None
    residual_rms: list
    estimate_ls: list
    history: dict | None
    cov_ls: list | None = None

    def to_dict(self) -> dict[str, Any]:
        # left out where unset (files written before it), so that such a file read and written
        # again is the dict it was
        out = super().to_dict()
        return out if self.cov_ls is not None else {k: v for k, v in out.items() if k != "cov_ls"}


def least_squares_cov(params):
    """The covariance (b, b) of the least-squares estimate behind ``params`` (a ``Params``):
    ``consistency.cov_ls`` where a consistent fit recorded it, else ``params.cov`` (which is that
    one without a consistent fit, and in files written before ``cov_ls``). What the data alone
    determine; a consistent estimate's own covariance is also held by its prior and constraints."""
    c = getattr(params, "consistency", None)
    return c.cov_ls if c is not None and getattr(c, "cov_ls", None) else params.cov


@dataclass(frozen=True)
class LugreFit(_Record):
    """The joint rigid-body + LuGre fit (``jaxid.workflow.identify_lugre``): its method, converged,
    steps, the run of the per-joint starting fits, std and rel_std (n, 8), warnings in words;
    determinability: per joint, {parameter: {status, rel_std, reason, experiment}}
    (``jaxid.identification.lugre_determinability``: "determined", "poorly determined" or "not
    determined" by the friction run, why, and what experiment would determine it)."""

    method: str
    converged: bool
    steps: int
    friction_run: str
    std: list
    rel_std: list
    warnings: list
    determinability: list | None = None


@dataclass(frozen=True)
class PhysicsCheck(_Record):
    """What is physically wrong with the result (``jaxid.workflow.physics_report``): whether the
    standard parameters written are a consistent model with nothing named, the problems in words,
    the estimate's scale against the model's nominal inertials (``scale_vs_model``, or None), the
    named checks with their numbers (``jaxid.workflow.verdicts.verdict_checks``: consistent,
    converged, plausible; None in files written before them) and whether every one passed
    (``plausible``, None where not checked)."""

    consistent: bool
    problems: list
    scale_vs_model: float | None = None
    checks: list | None = None
    plausible: bool | None = None
