"""Optimal excitation: Fourier coefficients that make the base parameters identifiable.

The excitation is a zero-start finite Fourier series (``trajectories.fourier``, Swevers
et al. 1997), so it starts and ends at rest. Its coefficients and mean position are
optimised with optax (Adam) for the conditioning of the column-normalised base
regressor ``W_b D^-1`` (D: the column norms), sampled on a coarse time grid:

- ``"cond"``: log of its condition number, 0.5 log(lambda_max / lambda_min) of the
  normalised information matrix ``G = D^-1 W_b^T W_b D^-1`` (Gautier and Khalil,
  "Exciting trajectories for the identification of base inertial parameters of robots",
  IJRR 11(4), 1992; Swevers et al. 1997);
- ``"logdet"``: D-optimal design, -log det G (Swevers et al. 1997). G has a unit
  diagonal, so det G <= 1 (Hadamard) and the value is >= 0, 0 for orthogonal columns.
- ``"information"``: D-optimal design on the regressor as it is, -log det(W_b^T W_b): not
  normalised, so it also rewards larger columns (more torque per unit of a parameter against
  a fixed noise), which G cannot see; invariant to the parameters' units (they add a
  constant). For a payload (``regressor_fn``), whose inertia moves the torque least, the
  excitation then uses the limits for the flange's accelerations instead of only
  decorrelating the columns.

Joint position, velocity, acceleration, jerk and torque limits (torque from the model's
nominal parameters) and, optionally, geometric constraints on the link capsules
(self-collision, floor, workspace box, obstacle boxes: ``jaxid.excitation.constraints``)
enter as quadratic penalties on the coarse grid, tightened by a margin; every start is
then checked against the full limits and constraints on a dense grid (10x the coarse
one by default). Several random starts are optimised at once (``jax.vmap``), in one
jitted step that includes every constraint; the best start that meets every limit and
constraint on the dense grid is returned.

With a ``home`` pose the mean position is not free: it is set so that the zero-start
series starts (and, being periodic, ends) at home, at rest (qd = qdd = 0), the boundary
conditions of Swevers et al. (1997).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxid import cache
from jaxid.arrays import namespace
from jaxid.dynamics.terms import rnea
from jaxid.excitation.trajectories import (
    _fourier_jerk,
    _zero_start,
    approach,
    approach_duration,
    approach_jerk,
    fourier,
    fourier_period,
)
from jaxid.identification.base import base_from_regressor, base_parameters
from jaxid.identification.regressor import regressor
from jaxid.model.robot import Robot
from jaxid.progress import bar as progress_bar
from jaxid.signals import _static_int, _static_positive

__all__ = ["LIMITS", "Excitation", "Feasibility", "check_limits", "excitation_objective", "model_limits", "optimize"]

#: The limits checked, in report order, with their units.
LIMITS = {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s^2", "jerk": "rad/s^3", "torque": "N m"}
_LIMIT_FIELDS = ("q_min", "q_max", "qd_max", "qdd_max", "qddd_max", "tau_max")
#: Geometric constraints on the coarse grid keep this much more than their clearance, m, and
#: their penalty counts excesses in units of GEOMETRY_SCALE, m.
GEOMETRY_EXTRA, GEOMETRY_SCALE = 0.01, 0.05
OBJECTIVES = ("cond", "logdet", "information")

#: Steps per progress-bar update (one jitted call runs this many optimiser steps).
CHUNK = 10


# ---- limits ------------------------------------------------------------------------------
def model_limits(model, overrides=None) -> dict:
    """The model's limits as float arrays (n,), with ``overrides`` (same names) applied."""
    n = int(model.n)
    overrides = dict(overrides or {})
    unknown = set(overrides) - set(_LIMIT_FIELDS)
    if unknown:
        raise ValueError(f"unknown limit(s) {sorted(unknown)}; use any of {list(_LIMIT_FIELDS)}")
    inf = {"q_min": -np.inf}
    out = {}
    for name in _LIMIT_FIELDS:
        v = overrides.get(name, getattr(model, name, inf.get(name, np.inf)))
        v = np.asarray(v, dtype=float)
        if v.shape not in ((), (n,)):
            raise ValueError(f"limit {name} must be a scalar or shape ({n},), got shape {v.shape}")
        if np.any(np.isnan(v)):
            raise ValueError(f"limit {name} contains NaN; use inf for 'no limit'")
        out[name] = np.broadcast_to(v, (n,)).copy()
    if np.any(np.isfinite(out["q_min"]) != np.isfinite(out["q_max"])):
        raise ValueError("a joint has a position limit on one side only; give both q_min and q_max (rad) or neither")
    names = getattr(model, "coordinate_names", None)
    label = lambda j: f"joint {j + 1}" + (f" ({names[j]})" if names else "")
    # Every unusable limit at once (a model file's placeholders are rarely alone: the double
    # pendulum of example-robot-data has lower = upper = velocity = effort = 0).
    problems = []
    for j in np.flatnonzero(out["q_min"] >= out["q_max"]):
        lo, hi = out["q_min"][j], out["q_max"][j]
        why = 'a placeholder range (a model file\'s <limit lower="0" upper="0">?)' if lo == hi else "inverted limits"
        problems.append(f"{label(j)}: q_min = {lo:g} >= q_max = {hi:g}, {why}")
    attr = {"qd_max": "velocity", "qdd_max": None, "qddd_max": None, "tau_max": "effort"}
    for name in _LIMIT_FIELDS[2:]:
        for j in np.flatnonzero(out[name] <= 0):
            where = f' (a model file\'s <limit {attr[name]}="0">?)' if attr[name] and out[name][j] == 0 else ""
            problems.append(f"{label(j)}: {name} = {out[name][j]:g}, not positive{where}")
    if problems:
        raise ValueError(
            "; ".join(problems)
            + ": an excitation moves every joint within its range and below its velocity, acceleration and "
            "torque limits; give the joints' real limits (position range lower below upper, velocity and effort "
            "above 0, in the model file's <limit>, or limits= in Python)"
        )
    return out


#: Velocity limits above this, rad/s (m/s for a prismatic joint), are read as a model file's
#: placeholders (URDFs for simulators carry 10000), not a drive's: no arm joint turns that fast.
PLACEHOLDER_QD = 100.0


def _warn_placeholder_limits(model, lim):
    """Warn that an excitation kept within placeholder velocity limits is not known to be safe."""
    fake = np.flatnonzero(np.isfinite(lim["qd_max"]) & (lim["qd_max"] > PLACEHOLDER_QD))
    if len(fake):
        names = getattr(model, "coordinate_names", None) or [f"joint {j + 1}" for j in range(int(model.n))]
        which = ", ".join(f"{names[j]} {lim['qd_max'][j]:g}" for j in fake)
        warnings.warn(
            f"velocity limits that look like placeholders ({which}; above {PLACEHOLDER_QD:g}): the "
            "excitation keeps within them, so it is only as safe as they are; set the drives' real "
            "limits in the model file (or limits=) before running it on the robot",
            stacklevel=3,
        )


def _scales(lim):
    """Centre and half-width of the position range, and the limits as divisors (inf -> 0)."""
    finite = np.isfinite(lim["q_min"]) & np.isfinite(lim["q_max"])
    lo, hi = np.where(finite, lim["q_min"], 0.0), np.where(finite, lim["q_max"], 0.0)
    centre, half = 0.5 * (lo + hi), np.where(finite, 0.5 * (hi - lo), np.inf)
    return centre, np.stack([half, lim["qd_max"], lim["qdd_max"], lim["qddd_max"], lim["tau_max"]])


def _usage(q, qd, qdd, qddd, tau, centre, bound):
    """Fraction of each limit used, (5, ..., n): position (of the half range about its
    centre), velocity, acceleration, jerk, torque; <= 1 means within the limit."""
    x = jnp.stack([q - centre, qd, qdd, qddd, tau])
    return jnp.abs(x) / bound.reshape((5,) + (1,) * (x.ndim - 2) + (-1,))


@cache.jit
def _report(q, qd, qdd, qddd, tau, centre, bound):
    """(usage (5,), excess (5,)): the largest fraction of each limit used along (N, n)
    signals, and the largest excess over it in its units (0 when met)."""
    u = jnp.max(_usage(q, qd, qdd, qddd, tau, centre, bound), axis=1)  # (5, n)
    # (u - 1) * bound is the distance beyond the limit; absent limits give -inf there.
    excess = jnp.max(jnp.where(jnp.isfinite(bound), (u - 1) * bound, 0.0), axis=1)
    return jnp.max(u, axis=1), jnp.maximum(excess, 0.0)


@dataclass(frozen=True)
class Feasibility:
    """How a trajectory meets the limits (keys in the order of ``LIMITS``) and constraints.

    violation: largest excess over each limit, in its units (rad, rad/s, rad/s^2, rad/s^3,
        N m); 0 when met. usage: largest fraction of each limit used (<= 1 when met; the
        position fraction is of the half range about its centre); 0 for absent limits.
    margin: per geometric constraint kind (``constraints.KINDS``) present, (worst margin
        in m, where, required clearance in m): the least distance beyond the required clearance
        along the trajectory (>= 0 when met), the pair or link it is at and the clearance it
        keeps (its own where it has one), e.g. ``{"self-collision": (0.012,
        "wrist_3_link/forearm_link", 0.02), "floor": (0.04, "wrist_1_link", 0.02)}``.
    """

    violation: dict
    usage: dict
    margin: dict = field(default_factory=dict)

    @classmethod
    def from_arrays(cls, usage, excess, margin=None):
        return cls(dict(zip(LIMITS, map(float, excess))), dict(zip(LIMITS, map(float, usage))), dict(margin or {}))

    @property
    def feasible(self) -> bool:
        return all(v == 0.0 for v in self.violation.values()) and all(m[0] >= 0 for m in self.margin.values())

    def lines(self):
        """The worst margins as text, e.g. "self-collision wrist_3_link/forearm_link: 32 mm", or
        "...: 17 mm  VIOLATED: 3 mm short of 20 mm" (the distance against the clearance that
        margin keeps: a pair on its own clearance is judged by that one). Millimetres, with two
        decimals where a shortfall is below 1 mm (else it would read "0 mm short")."""

        def line(kind, m, where, c):
            d = 2 if -1e-3 < m < 0 else 0
            short = "" if m >= 0 else f"  VIOLATED: {-1e3 * m:.{d}f} mm short of {1e3 * c:.{d}f} mm"
            return f"{kind} {where}: {1e3 * (m + c):.{d}f} mm{short}"

        return [line(kind, m, where, c) for kind, (m, where, c) in self.margin.items()]


def check_limits(model, q, qd, qdd, tau=None, limits=None, qddd=None, constraints=None) -> Feasibility:
    """Check joint limits and geometric constraints along a trajectory.

    q, qd, qdd: (N, n), rad, rad/s, rad/s^2; tau: (N, n) N m, default the model's torque
    with its nominal parameters (``rnea``). limits: overrides of the model's limits
    (``q_min``, ``q_max``, ``qd_max``, ``qdd_max``, ``qddd_max``, ``tau_max``, (n,) or
    scalar). qddd: jerk (N, n), rad/s^3 (default: the jerk limit is not checked).
    constraints: ``jaxid.excitation.constraints.Constraints`` to check at the samples q.
    """
    n = int(model.n)
    qddd = jnp.zeros_like(jnp.asarray(q, dtype=float)) if qddd is None else qddd
    q, qd, qdd, qddd = (jnp.asarray(x, dtype=float) for x in (q, qd, qdd, qddd))
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd), ("qddd", qddd)):
        if x.ndim != 2 or x.shape[1] != n or x.shape != q.shape:
            raise ValueError(f"{name} must have shape (N, {n}) like q, got {x.shape}")
    tau = rnea(model, q, qd, qdd) if tau is None else jnp.asarray(tau, dtype=float)
    if tau.shape != q.shape:
        raise ValueError(f"tau must have shape {q.shape} like q, got {tau.shape}")
    centre, bound = _scales(model_limits(model, limits))
    margin = None
    if constraints is not None:
        worst = _worst_margins(constraints, model, q)
        margin = constraints.report(model.parents, worst)
    usage, excess = _report(q, qd, qdd, qddd, tau, centre, bound)
    return Feasibility.from_arrays(usage, excess, margin)


@cache.jit
def _worst_margins(constraints, model, q, fast=False):
    """The least margin of each geometric constraint (M,), m, over the samples q (N, n), rad
    (fast: the loss's mesh bound, ``Constraints.margins``)."""
    return jnp.min(constraints.margins(model, q, fast=fast), axis=0)


# ---- objective ---------------------------------------------------------------------------
def _singular_measures(W):
    """(log cond, -log det G) of the column-normalised W (M, b), through eigvalsh of G, and
    -log det(W^T W) of W itself."""
    d = jnp.sqrt(jnp.sum(W**2, axis=0) + jnp.finfo(W.dtype).tiny)
    Wn = W / d
    lam = jnp.linalg.eigvalsh(Wn.T @ Wn)
    # A rank-deficient W has lambda_min at rounding level (or below zero): clamp so the
    # objective stays finite (a start that is rank deficient on the coarse grid then
    # gets no gradient from its clamped eigenvalues; rich random starts are not).
    lam = jnp.maximum(lam, 1e-16 * lam[-1])
    log_lam = jnp.log(lam)
    return 0.5 * (log_lam[-1] - log_lam[0]), -jnp.sum(log_lam), -jnp.sum(log_lam) - 2 * jnp.sum(jnp.log(d))


def excitation_objective(W, objective="cond"):
    """The optimised measure of a stacked base regressor W (M, b), column-normalised.

    "cond": log of the condition number, the function the optimiser descends (its
    gradient, through ``eigvalsh``, exists wherever the extreme eigenvalues are simple);
    its exponential is the condition number. "logdet": -log det(D^-1 W^T W D^-1), D the
    column norms (D-optimality). "information": -log det(W^T W). Lower is better.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    W = jnp.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] < W.shape[1]:
        raise ValueError(f"W must be a stacked regressor (M, b) with M >= b rows, got shape {W.shape}")
    return _singular_measures(W)[OBJECTIVES.index(objective)]


def _true_measures(W):
    """(cond, -log det G) of the column-normalised W (M, b) from its singular values, and
    -log det(W^T W)."""
    d = jnp.linalg.norm(W, axis=0)
    s = jnp.linalg.svd(W / d, compute_uv=False)
    return s[0] / s[-1], -2.0 * jnp.sum(jnp.log(s)), -2.0 * jnp.sum(jnp.log(s)) - 2.0 * jnp.sum(jnp.log(d))


# ---- result ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Excitation:
    """An optimised zero-start Fourier excitation and how good it is.

    a, b: coefficients (n, H), rad/s, already projected onto the zero-start constraints;
    q0: mean position (n,), rad; omega_f: base pulsation, rad/s (period 2 pi / omega_f).
    objective: "cond", "logdet" or "information"; value: its true value on the dense check grid
    (the condition number for "cond", -log det G for "logdet", -log det W^T W for
    "information"); cond, logdet: the first two measures.
    feasibility: limit check on the dense grid. columns: the regressor columns kept.
    initial_cond / initial_logdet / initial_feasible and final_cond / final_logdet /
    final_feasible: per start (n_starts,), before and after optimisation, dense grid.
    best_start: index of the returned start. time_s: wall time of ``optimize``, s
    (compilation included). steps: optimiser steps per start. initial_margin /
    final_margin: per start, the worst geometric margin (m, dense grid; NaN without
    constraints). home: the rest pose (n,) rad it starts and ends at, or None (then it
    starts at rest at q0 - sum_k b_k / (k w)). limits: the limits it was optimised within
    ({``q_min``, ...}: (n,) arrays, inf where absent); margin: the fraction of each kept free.
    """

    a: np.ndarray
    b: np.ndarray
    q0: np.ndarray
    omega_f: float
    objective: str
    value: float
    cond: float
    logdet: float
    feasibility: Feasibility
    columns: np.ndarray
    initial_cond: np.ndarray
    initial_logdet: np.ndarray
    initial_feasible: np.ndarray
    final_cond: np.ndarray
    final_logdet: np.ndarray
    final_feasible: np.ndarray
    best_start: int
    time_s: float
    steps: int
    initial_margin: np.ndarray | None = None
    final_margin: np.ndarray | None = None
    home: np.ndarray | None = None
    limits: dict | None = None
    margin: float = 0.05

    @property
    def period(self) -> float:
        """Period of the excitation, s."""
        return float(fourier_period(self.omega_f))

    @property
    def feasible(self) -> bool:
        return self.feasibility.feasible

    def sample(self, t):
        """(q, qd, qdd), each (N, n), rad, rad/s, rad/s^2, at times t (N,), s."""
        return fourier(self.a, self.b, self.q0, self.omega_f, t, zero_start=True)

    def jerk(self, t):
        """Jerk (N, n), rad/s^3, at times t (N,), s."""
        return _fourier_jerk(jnp.asarray(self.a), jnp.asarray(self.b), self.omega_f, jnp.asarray(t, dtype=float))

    def approach_time(self, start_from, fs):
        """Duration, s, of the rest-to-rest quintic move (``trajectories.approach``) from the
        pose ``start_from`` (n,), rad, to the excitation's start: the shortest within (1 -
        margin) of the velocity, acceleration and jerk limits, rounded up to whole samples at
        fs Hz; 0 when already there."""
        if self.limits is None:
            raise ValueError("this Excitation carries no limits; make it with optimize() to time an approach")
        start_from = np.asarray(start_from, dtype=float)
        if start_from.shape != self.q0.shape or not np.all(np.isfinite(start_from)):
            raise ValueError(f"start_from must be a finite pose of shape {self.q0.shape}, rad; got {start_from}")
        lim, frac = self.limits, 1.0 - self.margin
        T = approach_duration(
            start_from, self._start(), frac * lim["qd_max"], frac * lim["qdd_max"], frac * lim["qddd_max"]
        )
        return float(np.ceil(T * fs) / fs)

    def _start(self):
        return np.asarray(self.sample(np.zeros(1))[0][0])

    def trajectory(self, fs, periods=1, start_from=None, jerk=False):
        """Sample ``periods`` periods at fs Hz, both ends included (at rest there).

        start_from: the robot's current pose (n,), rad: the samples then begin with the
        approach move from it (``approach_time``), and the excitation follows shifted by its
        duration. jerk: also return the jerk.
        Returns (t, q, qd, qdd), or (t, q, qd, qdd, qddd) with jerk: t (N,), s, with N =
        periods * round(period * fs) + 1 (+ the approach's samples); the others (N, n), rad,
        rad/s, rad/s^2, rad/s^3.
        """
        if not (np.isfinite(fs) and fs > 0):
            raise ValueError(f"fs must be a positive sample rate in Hz, got {fs}")
        if isinstance(periods, bool) or not isinstance(periods, int) or periods < 1:
            raise ValueError(f"periods must be a positive integer, got {periods!r}")
        per = int(round(self.period * fs))
        if per < 2:
            raise ValueError(f"fs = {fs} Hz gives {per} sample(s) per period; raise fs")
        t = np.arange(periods * per + 1) * (self.period / per)
        out = [np.asarray(x) for x in self.sample(t)] + ([np.asarray(self.jerk(t))] if jerk else [])
        if start_from is None:
            return (t, *out)
        start = np.asarray(start_from, dtype=float)
        T = self.approach_time(start, fs)
        t_a = np.arange(int(round(T * fs))) / fs
        home = self._start()
        ramp = list(approach(start, home, T, t_a)) + ([approach_jerk(start, home, T, t_a)] if jerk else [])
        return (np.concatenate([t_a, t + T]), *(np.concatenate([np.asarray(a), b]) for a, b in zip(ramp, out)))

    def summary(self) -> dict:
        """Figures as plain Python numbers (JSON-ready)."""
        init = np.asarray(self.initial_cond)
        return {
            "objective": self.objective,
            "value": self.value,
            "cond": self.cond,
            "logdet": self.logdet,
            "feasible": self.feasible,
            "violation": self.feasibility.violation,
            "usage": self.feasibility.usage,
            "margin_m": {
                k: {"margin": m, "where": w, "clearance": c} for k, (m, w, c) in self.feasibility.margin.items()
            },
            "random_cond_median": float(np.median(init)),
            "random_cond_best": float(init.min()),
            "harmonics": int(self.a.shape[1]),
            "base_frequency_hz": self.omega_f / (2 * np.pi),
            "period_s": self.period,
            "n_starts": int(init.size),
            "steps": self.steps,
            "best_start": self.best_start,
            "time_s": self.time_s,
        }


# ---- optimisation ------------------------------------------------------------------------
def _base_columns(fn, n, centre, bound, rng):
    """Independent columns of a regressor function on random states (Gautier 1990)."""
    half = np.where(np.isfinite(bound[0]), bound[0], np.pi)
    q = centre + half * rng.uniform(-1.0, 1.0, (200, n))
    Y = fn(q, *rng.normal(size=(2, 200, n)))
    return np.asarray(base_from_regressor(np.asarray(Y).reshape(-1, Y.shape[-1])).indices)


def optimize(
    model,
    *,
    harmonics=5,
    base_frequency=0.05,
    objective="cond",
    n_starts=8,
    steps=300,
    learning_rate=0.02,
    n_samples=None,
    check_samples=None,
    seed=0,
    q0=None,
    limits=None,
    margin=0.05,
    penalty=100.0,
    progress=True,
    regressor_fn=None,
    columns=None,
    constraints=None,
    home=None,
) -> Excitation:
    """Optimise a zero-start Fourier excitation for the identifiability of a model.

    Args:
        model: a model of the jaxid interface with ``n`` joints and limits ``q_min``,
            ``q_max`` (rad), ``qd_max``, ``qdd_max``, ``tau_max`` (n,) where it has them
            (a ``Robot`` does; missing ones are absent, i.e. infinite).
        harmonics: H >= 2 (zero start needs two); base_frequency: Hz (period 1 / f).
        objective: "cond" (condition number of the column-normalised base regressor,
            optimised as its logarithm), "logdet" (D-optimal, -log det G) or "information"
            (D-optimal on W_b itself, -log det W_b^T W_b: also rewards signal size).
        n_starts: random starts optimised together (vmap); steps: Adam steps per start;
            learning_rate: Adam's initial rate (cosine-decayed to 1 % of it), in units of
            the limits (harmonic k's coefficients by the largest amplitude the velocity,
            position, acceleration and jerk limits allow it alone: min(qd_max, k w half range,
            qdd_max / (k w), qddd_max / (k w)^2); q0 by the half position range).
        n_samples: coarse time grid of the objective and penalties over one period,
            default 20 H (20 samples per period of the highest harmonic).
        check_samples: dense grid of the final check and of the reported values, default
            200 H; must be >= n_samples.
        seed: seeds the random starts; q0: initial mean position (n,), rad, default the
            centres of the position ranges (the starts then spread about them); optimised.
        limits: overrides of the model's limits (dict of ``q_min``, ``q_max``, ``qd_max``,
            ``qdd_max``, ``qddd_max`` (jerk, rad/s^3), ``tau_max``). margin: the optimiser keeps every limit within
            (1 - margin) of its value (position: of the half range) on the coarse grid, so
            that the dense check passes between samples. penalty: weight of the squared
            limit excesses (fractions of the limits, summed over samples and joints).
        progress: report progress over the steps on stderr: a tqdm bar on a terminal, else a
            plain line every few seconds (``jaxid.progress``).
        regressor_fn: function (q, qd, qdd) -> Y, (N, n) each -> (N, n, p), default
            ``regressor(model, ...)``; e.g. ``payload.PayloadRows(robot, weights)`` designs an
            excitation for a payload. An equinox module is traced (its programs are stored and
            reused); a closure or partial is compiled again at every call. Torques for the limits
            always come from ``model`` (``payload.attach_payload`` it for a loaded run).
        columns: indices of the regressor columns to condition, default the base
            parameters (``base_parameters(model).indices``, or, with regressor_fn, the
            independent columns of regressor_fn on random states).
        constraints: ``jaxid.excitation.constraints.Constraints`` (link capsules,
            self-collision clearance, floor, workspace, obstacles); on the coarse grid each
            margin is kept >= GEOMETRY_EXTRA m (or half its value at the rest pose, if
            less), penalised as ``penalty`` times the squared
            shortfall in units of GEOMETRY_SCALE m; checked exactly on the dense grid.
        home: rest pose (n,), rad: the trajectory starts and ends there at rest (q0 is then
            not free; give one or the other). It must lie within the position limits and
            meet the constraints, else a ValueError names the joint or the pair.

    Random starts draw a, b ~ N(0, qd_max^2) and shift q0 by up to a quarter of each
    position range (not with a home), then scale (a, b) down until the start meets every
    limit and constraint (within the margins) on the coarse grid. Returns an
    ``Excitation``; if no start meets the limits and constraints on the dense grid, the
    least violating one is returned with ``feasible`` False.
    """
    t_start = time.perf_counter()
    H = _static_int(harmonics, "harmonics", 2)
    f0 = _static_positive(base_frequency, "base_frequency")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    S = _static_int(n_starts, "n_starts", 1)
    steps = _static_int(steps, "steps", 0)
    lr = _static_positive(learning_rate, "learning_rate")
    penalty = _static_positive(penalty, "penalty")
    n_samples = 20 * H if n_samples is None else _static_int(n_samples, "n_samples", 2 * H + 1)
    check_samples = (
        max(200 * H, n_samples) if check_samples is None else _static_int(check_samples, "check_samples", n_samples)
    )
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    n = int(model.n)
    lim = model_limits(model, limits)
    _warn_placeholder_limits(model, lim)
    centre, bound = _scales(lim)
    omega = 2 * np.pi * f0
    period = 1.0 / f0

    # Optimise in units of the limits so one learning rate suits every robot and base frequency:
    # harmonic k of joint i in units of the largest amplitude the linear limits allow it alone
    # (velocity a <= qd_max, position a / (k w) <= half range, acceleration a k w <= qdd_max, jerk
    # a (k w)^2 <= qddd_max), so that a step moves every harmonic by the same fraction of its
    # range. In units of qd_max alone, at 0.05 Hz the first harmonic's admissible amplitude is a
    # tenth of one unit on the UR5: each early Adam step (~ the learning rate on every
    # coefficient) then moved it by a fifth of its range, into the constraints and out again.
    wk = omega * np.arange(1, H + 1)
    amp = np.min(
        np.stack(
            np.broadcast_arrays(
                lim["qd_max"][:, None],
                bound[0][:, None] * wk,
                lim["qdd_max"][:, None] / wk,
                lim["qddd_max"][:, None] / wk**2,
            )
        ),
        axis=0,
    )
    v_scale = np.where(np.isfinite(amp), amp, 1.0)
    # The random starts stay N(0, qd_max^2) in physical units (as drawn before the harmonics had
    # units of their own).
    draw_scale = np.where(np.isfinite(lim["qd_max"]), lim["qd_max"], 1.0)[:, None] / v_scale
    q_scale = np.where(np.isfinite(bound[0]), bound[0], 1.0)
    if home is not None:
        if q0 is not None:
            raise ValueError("give home (the rest pose at both ends) or q0 (the mean position), not both")
        home = np.asarray(home, dtype=float)
        if home.shape != (n,) or not np.all(np.isfinite(home)):
            raise ValueError(f"home must be a finite array of shape ({n},), rad; got {home}")
        out = np.flatnonzero((home < lim["q_min"]) | (home > lim["q_max"]))
        if out.size:
            j = int(out[0])
            name = model.names[j] if hasattr(model, "names") else f"joint {j + 1}"
            raise ValueError(
                f"home pose outside the position limits at {name}: {home[j]:.4g} rad not in "
                f"[{lim['q_min'][j]:.4g}, {lim['q_max'][j]:.4g}]"
            )
    if q0 is None:
        q0_hat = np.zeros(n)
    else:
        q0 = np.asarray(q0, dtype=float)
        if q0.shape != (n,) or not np.all(np.isfinite(q0)):
            raise ValueError(f"q0 must be a finite array of shape ({n},), rad; got {q0}")
        q0_hat = (q0 - centre) / q_scale
        if np.any(np.abs(q0 - centre) >= (1 - margin) * bound[0]):
            raise ValueError(
                f"q0 = {q0} rad is not inside the position limits less the margin "
                f"({margin:g} of each half range); move it towards the centre"
            )

    # Margins at the rest pose (home, or the initial mean position): a margin that no motion
    # can raise above GEOMETRY_EXTRA there (a link that never moves the part that is close)
    # is kept at half its value on the coarse grid instead.
    rest = home if home is not None else centre + q0_hat * q_scale
    target = np.zeros(0)
    if constraints is not None:
        worst = np.asarray(_worst_margins(constraints, model, np.asarray(rest)[None]))
        # The targets are for the loss's margins, whose mesh bound is the fast one (a few mm under
        # the full one in some poses): from the fast margins at the rest pose, or a margin met at
        # rest would be a penalty there that no trajectory (all start at rest) could remove. (Without
        # mesh pairs the two are the same: no second program to compile.)
        fast = (
            np.asarray(_worst_margins(constraints, model, np.asarray(rest)[None], True))
            if constraints.mesh_pairs
            else worst
        )
        target = np.clip(0.5 * fast, 0.0, GEOMETRY_EXTRA)
        bad = {k: v for k, v in constraints.report(model.parents, worst).items() if v[0] < 0}
        if bad and home is not None:
            kind, (m, where, _) = next(iter(bad.items()))
            fix = {
                "self-collision": "or, if the two links cannot touch, exclude the pair (an SRDF's "
                "disable_collisions, --srdf)",
                "floor": "or place the floor where it is (--floor Z, m in the base frame, or --floor none)",
                "workspace": "or enlarge the workspace box (--workspace)",
            }.get(kind, "or move the obstacle")
            raise ValueError(
                f"home pose violates the {kind} constraint at {where}: clearance "
                f"{1e3 * (m + constraints.clearance):.0f} mm where {1e3 * constraints.clearance:.0f} mm "
                f"are required at {np.round(np.asarray(home), 3).tolist()} rad; choose another home pose "
                f"(--home), a smaller clearance (--clearance) {fix}"
            )
    # Drawn with numpy at the edge: a threefry draw compiles anew for every shape (1-3 s).
    rng_cols, rng_start = np.random.default_rng(seed).spawn(2)
    if columns is None:
        columns = (
            np.asarray(base_parameters(model).indices)
            if regressor_fn is None
            else _base_columns(regressor_fn, n, centre, bound, rng_cols)
        )
    columns = np.asarray(columns, dtype=int)
    if columns.ndim != 1 or columns.size == 0:
        raise ValueError(f"columns must be a non-empty 1-D index array, got shape {columns.shape}")
    if n_samples * n < columns.size:
        raise ValueError(
            f"n_samples = {n_samples} gives {n_samples * n} rows for {columns.size} "
            f"columns; use n_samples >= {-(-columns.size // n)}"
        )

    problem = _Problem(
        model=model,
        centre=centre,
        bound=bound,
        v_scale=v_scale,
        q_scale=q_scale,
        wk=wk,
        omega=np.float64(omega),
        home=home,
        target=target,
        columns=columns,
        t_coarse=np.arange(n_samples) * (period / n_samples),
        t_dense=np.arange(check_samples) * (period / check_samples),
        # The nominal torques of the torque limit. A Robot is linear in its parameters (Atkeson et
        # al. 1986), so with its own regressor they are Y theta, from the Y the objective computes
        # anyway: the optimiser's step then holds no second, Newton-Euler pass to differentiate (the
        # UR5's step compiles in 22 s CPU instead of 26). A regressor_fn (a payload) or another model: rnea.
        theta=(np.asarray(model.parameter_vector()) if regressor_fn is None and isinstance(model, Robot) else None),
        margin=np.float64(margin),
        penalty=np.float64(penalty),
        objective=objective,
        constraints=constraints,
        regressor_fn=regressor_fn,
    )

    model_p = (
        problem.theta.size
        if problem.theta is not None  # Y theta = tau: no trace needed
        else jax.eval_shape(problem.regressor, *(jax.ShapeDtypeStruct((1, n), float),) * 3).shape[-1]
    )
    if columns.max() >= model_p or columns.min() < 0:
        raise ValueError(f"columns must index the regressor's {model_p} columns, got {columns}")

    z0 = _random_starts(rng_start, problem, S, n, H, q0_hat, q0 is None and home is None, draw_scale)
    carry = _initial_carry(z0, steps)
    with progress_bar(total=steps, desc="excitation", unit="step", enabled=bool(progress)) as bar:
        done = 0
        while done < steps:
            k = min(CHUNK, steps - done)
            carry = _run(problem, carry, np.int64(k), np.float64(lr), steps)
            done += k
            best = float(np.min(np.asarray(carry[3])))
            # The loss of the best start: its objective with the limit penalties added (so "cond x
            # penalty", the cond itself once every limit is met): 1e94 is a start far outside them.
            key = "cond x penalty" if objective == "cond" else f"{objective} + penalty"
            bar.set_postfix({key: f"{np.exp(best) if objective == 'cond' else best:.4g}"})
            bar.update(k)
    z_best = carry[2] if steps else z0

    initial, final = (jax.tree.map(np.asarray, _evaluate(problem, z)) for z in (z0, z_best))
    feasible = [_meets(r) for r in (initial, final)]
    if not feasible[1].any():
        z_best, final, feasible[1] = _shrink_to_dense(problem, z_best, final, objective)
    values = final[OBJECTIVES.index(objective)]
    # The best start that meets every limit; with none, the smallest total relative excess.
    rank = np.where(feasible[1], values, np.inf) if feasible[1].any() else _excess(final)
    i = int(np.argmin(rank))
    worst_margin = [
        np.min(r[5], axis=1, initial=np.inf) if constraints is not None else np.full(S, np.nan)
        for r in (initial, final)
    ]
    margin_report = constraints.report(model.parents, final[5][i]) if constraints is not None else None
    # The chosen start's coefficients on the host (numpy: a few numbers, no program to compile).
    a, b, q0_best = problem.physical(jax.tree.map(lambda x: np.asarray(x)[i], z_best))
    a, b = (np.asarray(x) for x in _zero_start(a, b))
    return Excitation(
        a=a,
        b=b,
        q0=q0_best,
        omega_f=float(omega),
        objective=objective,
        value=float(values[i]),
        cond=float(final[0][i]),
        logdet=float(final[1][i]),
        feasibility=Feasibility.from_arrays(final[3][i], final[4][i], margin_report),
        columns=columns,
        initial_cond=initial[0],
        initial_logdet=initial[1],
        initial_feasible=feasible[0],
        final_cond=final[0],
        final_logdet=final[1],
        final_feasible=feasible[1],
        best_start=i,
        time_s=time.perf_counter() - t_start,
        steps=steps,
        initial_margin=worst_margin[0],
        final_margin=worst_margin[1],
        home=home,
        limits=lim,
        margin=margin,
    )


def _stacked(Y):
    return Y.reshape(-1, Y.shape[-1])


class _Problem(eqx.Module):
    """Everything the optimiser's programs compute with, as one argument: the model, the limits
    and the coefficients' units (see ``optimize``), the coarse and dense time grids (N,), s, the
    regressor columns kept and the geometric targets. A module rather than a closure so that
    the programs are module-level functions whose every input is an argument, which
    ``jaxid.cache.jit`` can key and keep on disk."""

    model: object
    centre: object  # (n,) rad
    bound: object  # (5, n) limits as divisors
    v_scale: object  # (n, H) coefficient units, rad/s
    q_scale: object  # (n,) mean-position units, rad
    wk: object  # (H,) harmonic pulsations, rad/s
    omega: object  # base pulsation, rad/s
    home: object  # (n,) rad or None
    target: object  # (M,) m, the geometric margins kept on the coarse grid
    columns: object  # (b,) int
    t_coarse: object
    t_dense: object
    theta: np.ndarray | jax.Array | None  # (p,) nominal parameters for the torque as Y theta, or None (rnea)
    margin: object
    penalty: object
    objective: str = eqx.field(static=True)
    constraints: object = eqx.field(static=True)
    # Not static: an equinox module (e.g. payload.PayloadRows) is then traced and keyed by its arrays'
    # shapes, so its programs are stored; a plain function is still a static leaf.
    regressor_fn: object

    def regressor(self, q, qd, qdd):
        if self.regressor_fn is not None:
            return self.regressor_fn(q, qd, qdd)
        return regressor(self.model, q, qd, qdd)

    def physical(self, z):
        """(a, b (n, H) rad/s, q0 (n,) rad) of the coefficients z: numpy where z is (one start on
        the host), jax.numpy traced."""
        xp = namespace(*jax.tree.leaves(z))
        v_scale = xp.asarray(self.v_scale)
        a, b = z["a"] * v_scale, z["b"] * v_scale
        if self.home is None:
            return a, b, xp.asarray(self.centre) + z["q0"] * xp.asarray(self.q_scale)
        # The mean position that puts q(0) = q0 - sum_k b'_k / (k w) (b' projected) at home.
        return a, b, xp.asarray(self.home) + xp.sum(_zero_start(a, b)[1] / xp.asarray(self.wk), axis=1)

    def trajectory(self, z, t):
        a, b, q0_ = self.physical(z)
        q, qd, qdd = fourier(a, b, q0_, self.omega, t, zero_start=True)
        return q, qd, qdd, _fourier_jerk(*_zero_start(a, b), self.omega, t)

    def geometry(self, q, fast=False):
        """(N, M) margins, m, or (N, 0); fast: the mesh pairs' cheaper bound (``Constraints.margins``),
        on the coarse grid of the loss and the starts' scaling, where the step's cost is."""
        c = self.constraints
        return c.margins(self.model, q, fast=fast) if c is not None else jnp.zeros((q.shape[0], 0))

    def usage(self, z, t, fast=False):
        """(fractions of the limits (5, N, n), geometric margins (N, M))."""
        q, qd, qdd, qddd = self.trajectory(z, t)
        return _usage(q, qd, qdd, qddd, rnea(self.model, q, qd, qdd), self.centre, self.bound), self.geometry(q, fast)

    def torques(self, q, qd, qdd, Y):
        return Y @ self.theta if self.theta is not None else rnea(self.model, q, qd, qdd)

    def loss(self, z):
        q, qd, qdd, qddd = self.trajectory(z, self.t_coarse)
        Y = self.regressor(q, qd, qdd)
        value = _singular_measures(_stacked(Y)[:, self.columns])[OBJECTIVES.index(self.objective)]
        u = _usage(q, qd, qdd, qddd, self.torques(q, qd, qdd, Y), self.centre, self.bound)
        excess = jnp.sum(jax.nn.relu(u - (1 - self.margin)) ** 2)
        excess += jnp.sum(jax.nn.relu((self.target - self.geometry(q, fast=True)) / GEOMETRY_SCALE) ** 2)
        return value + self.penalty * excess, value


def _adam(lr, steps):
    return optax.adam(optax.cosine_decay_schedule(lr, max(steps, 1), alpha=0.01))


@cache.jit
def _initial_carry(z, steps):
    """The optimiser's carry at the starts z: (z, Adam's state, best z, best loss = inf (S,))."""
    # float64, not weakly typed as jnp.inf alone would make it: _run returns a strong float64 best
    # loss, and a carry whose types change between chunks compiles _run twice (a weak and a strong key).
    return z, jax.vmap(_adam(1.0, steps).init)(z), z, jnp.full(z["a"].shape[0], jnp.inf, dtype=jnp.float64)


# Not at LLVM -O0 (xla_backend_optimization_level=0): that build of the step returned NaN
# with an obstacle constraint, and the optimiser then silently kept its random start.
@cache.jit
def _run(problem, carry, n_steps, lr, steps):
    """n_steps Adam steps (learning rate lr, cosine decay over steps) of every start at once;
    carry: (z, optimiser state, best z, best loss (S,))."""
    grad = jax.vmap(jax.value_and_grad(problem.loss, has_aux=True))
    opt = _adam(lr, steps)

    def step(_, c):
        z, state, best_z, best_loss = c
        (total, _), g = grad(z)
        better = total < best_loss
        best_z = jax.tree.map(
            lambda new, old: jnp.where(better.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), z, best_z
        )
        updates, state = jax.vmap(opt.update)(g, state, z)
        return optax.apply_updates(z, updates), state, best_z, jnp.minimum(total, best_loss)

    return jax.lax.fori_loop(0, n_steps, step, carry)


@cache.jit
def _evaluate(problem, z):
    """Per start, on the dense grid: (cond, -log det G, -log det W^T W, limit usage (5,),
    excess (5,), worst geometric margin per constraint (M,))."""

    def one(zi):
        q, qd, qdd, qddd = problem.trajectory(zi, problem.t_dense)
        Y = problem.regressor(q, qd, qdd)
        measures = _true_measures(_stacked(Y)[:, problem.columns])
        usage, excess = _report(q, qd, qdd, qddd, problem.torques(q, qd, qdd, Y), problem.centre, problem.bound)
        return *measures, usage, excess, jnp.min(problem.geometry(q), axis=0, initial=np.inf)

    return jax.lax.map(one, z)


def _meets(r):
    """(S,) bool: the starts of an ``_evaluate`` result r that meet every limit and constraint."""
    return np.all(r[4] == 0.0, axis=1) & np.all(r[5] >= 0.0, axis=1)


def _excess(r):
    """(S,) the total relative excess of each start of an ``_evaluate`` result r: limit usage above 1
    plus geometric shortfall in units of GEOMETRY_SCALE (0 for a start that meets them all)."""
    return np.sum(np.maximum(r[3] - 1.0, 0.0), axis=1) + np.sum(np.maximum(-r[5], 0.0), axis=1) / GEOMETRY_SCALE


#: The scales ``_shrink_to_dense`` tries, fine then coarse: a hair's miss costs little amplitude; a
#: rest pose that sits near a constraint's edge (Baxter's shoulder/elbow capsules at excite's
#: defaults: 0.16 mm short at 0.995, 0.08 at 0.7) needs the second ladder.
SHRINK_LADDERS = ((0.995, 0.98, 0.96, 0.93, 0.9, 0.85, 0.8, 0.7), (0.6, 0.5, 0.42, 0.35, 0.3, 0.25, 0.2, 0.15))


def _shrink_to_dense(problem, z, final, objective):
    """(z, final, feasible) with, where no start meets every limit and constraint on the dense
    grid, the one nearest to it (least total relative excess) replaced by the largest scaling of
    its (a, b) in [`SHRINK_LADDERS`][jaxid.excitation.optimize.SHRINK_LADDERS] (0.995 down to
    0.15) that does: the optimiser holds its margins on the coarse grid, and a start that misses
    the dense check between grid points is pulled toward its rest pose, where the limits and
    constraints hold. A ``UserWarning`` says by how much and what it cost; nothing changes where
    no rung meets them. A ladder has one rung per start, so the dense check's program is the one
    just run."""
    S = final[0].shape[0]
    i = int(np.argmin(_excess(final)))
    zi = jax.tree.map(lambda x: np.asarray(x)[i], z)
    for rungs in SHRINK_LADDERS:
        ladder = np.interp(np.linspace(0, len(rungs) - 1, S), np.arange(len(rungs)), rungs)
        trial = {
            "a": np.stack([zi["a"] * s for s in ladder]),
            "b": np.stack([zi["b"] * s for s in ladder]),
            "q0": np.broadcast_to(zi["q0"], (S, *np.shape(zi["q0"]))).copy(),
        }
        got = jax.tree.map(np.asarray, _evaluate(problem, trial))
        ok = _meets(got)
        if ok.any():
            break
    else:
        return z, final, np.zeros(S, bool)
    k = int(np.argmax(ok))  # the largest scale that meets them
    k_obj = OBJECTIVES.index(objective)
    warnings.warn(
        f"the optimised excitation missed a limit or constraint on the dense check between the optimiser's grid "
        f"points; its amplitude was scaled by {ladder[k]:.3g} toward its rest pose to meet every one ({objective} "
        f"{final[k_obj][i]:.4g} -> {got[k_obj][k]:.4g})",
        stacklevel=3,
    )
    z = {key: np.asarray(v).copy() for key, v in z.items()}
    for key in ("a", "b", "q0"):
        z[key][i] = trial[key][k]
    final = tuple(np.asarray(f).copy() for f in final)
    for f, g in zip(final, got):
        f[i] = g[k]
    feasible = np.zeros(S, bool)
    feasible[i] = True
    return z, final, feasible


def _random_starts(rng, problem, S, n, H, q0_hat, spread_q0, draw_scale):
    """S random starts, each scaled to use at most 1 - margin of every limit on the coarse grid.

    The coefficients are drawn N(0, 1) times ``draw_scale`` (n, H), in the optimiser's units, from
    ``rng`` (a numpy Generator).
    """
    a, b = rng.normal(size=(2, S, n, H)) * draw_scale
    q0 = np.broadcast_to(np.asarray(q0_hat), (S, n))
    if spread_q0:
        q0 = q0 + rng.uniform(-0.5, 0.5, (S, n))
    return _scale_starts(problem, {"a": a, "b": b, "q0": q0})


@cache.jit
def _scale_starts(problem, z):
    """Each start (a, b) scaled down to meet every limit and constraint on the coarse grid.

    Each joint's position excursion, velocity, acceleration and jerk are linear in the
    scale of its (a, b), which gives its largest admissible scale; the torque and the geometric
    constraints are not (gravity does not scale), so the largest of a geometric ladder
    below it that meets every limit and constraint is taken (the smallest if none does:
    the penalties then take over).
    """
    t, frac, bound, n = problem.t_coarse, 1 - problem.margin, problem.bound, problem.centre.shape[0]
    ladder = 0.8 ** jnp.arange(16)

    def scaled(zi, s):
        return {"a": zi["a"] * s, "b": zi["b"] * s, "q0": zi["q0"]}

    def meets(zi):
        u, m = problem.usage(zi, t, fast=True)
        # s_lin puts each joint's binding linear limit at frac exactly: at rounding level above
        # or below it, by the coefficients' units, so the first rung is accepted within 1e-9.
        return jnp.all(u <= frac * (1 + 1e-9)) & jnp.all(m >= problem.target)

    def scale(zi):
        q, qd, qdd, qddd = problem.trajectory(zi, t)
        # The position at zero scale: q0 (the mean) or, with a home, the home pose.
        q_mean = problem.trajectory(scaled(zi, 0.0), t[:1])[0][0]
        rate = jnp.max(jnp.stack([jnp.abs(q - q_mean), jnp.abs(qd), jnp.abs(qdd), jnp.abs(qddd)]), axis=1) / bound[:4]
        off = jnp.abs(q_mean - problem.centre) / bound[0]
        # Per joint: each joint's position, velocity, acceleration and jerk scale with its own
        # coefficients, so every joint uses its own range rather than the tightest joint's.
        s_lin = jnp.min(jnp.stack([frac - off] + [jnp.full(n, frac)] * 3) / rate, axis=0)
        s_lin = jnp.where(jnp.isfinite(s_lin), s_lin, 1.0)[:, None]  # no finite limit: keep the draw
        ok = jax.vmap(lambda s: meets(scaled(zi, s_lin * s)))(ladder)
        first = jnp.where(jnp.any(ok), jnp.argmax(ok), ladder.size - 1)
        return scaled(zi, s_lin * ladder[first])

    return jax.vmap(scale)(z)
