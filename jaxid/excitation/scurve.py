"""Jerk-limited (S-curve) velocity profiles, as used to identify friction.

A move from rest to a cruise velocity and back to rest is the classical seven-segment
profile (jerk up, constant acceleration, jerk down, cruise, and the mirror image to
stop); see Biagiotti & Melchiorri, *Trajectory Planning for Automatic Machines and
Robots*, Springer 2008, section 3.4. Here the profile is generalised to a sequence of
velocity plateaus, each reached by a three-segment jerk-limited ramp, so one call
builds a friction experiment that reverses through zero velocity many times.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def _ramp(dv, a_max, j_max):
    """Segments (duration s, jerk) taking the velocity from v to v + dv, at rest in a."""
    if dv == 0.0:
        return []
    s = np.sign(dv)
    dv = abs(dv)
    if dv * j_max <= a_max**2:  # triangular acceleration: a_max is never reached
        tj = np.sqrt(dv / j_max)
        return [(tj, s * j_max), (tj, -s * j_max)]
    tj = a_max / j_max
    return [(tj, s * j_max), (dv / a_max - tj, 0.0), (tj, -s * j_max)]


def s_curve(levels, holds, a_max, j_max, dt=1e-3, x0=0.0):
    """Jerk-limited velocity profile through a sequence of plateaus, sampled uniformly.

    Starting at rest at ``t = 0``, for each k the velocity ramps to ``levels[k]`` with
    |jerk| = ``j_max`` and |acceleration| <= ``a_max``, then holds for ``holds[k]``
    seconds. Position, velocity and acceleration are the exact integrals of the
    piecewise-constant jerk (piecewise cubic position).

    Args:
      levels: plateau velocities, shape (K,), units/s (m/s or rad/s).
      holds: time spent on each plateau, shape (K,), s (>= 0).
      a_max: acceleration limit, units/s^2 (> 0).
      j_max: jerk limit, units/s^3 (> 0).
      dt: sample period, s (1e-3 for 1 kHz).
      x0: initial position, units.

    Returns:
      (t, x, v, a), each shape (N,): time (s), position, velocity, acceleration.
    """
    levels = np.asarray(levels, dtype=float).ravel()
    holds = np.asarray(holds, dtype=float).ravel()
    if levels.shape != holds.shape or levels.size == 0:
        raise ValueError(
            f"levels and holds must be non-empty and of equal length, got {levels.size} and "
            f"{holds.size}; pass one hold time per velocity level"
        )
    if not (np.all(np.isfinite(levels)) and np.all(np.isfinite(holds)) and np.all(holds >= 0)):
        raise ValueError("levels must be finite and holds finite and >= 0")
    if not (a_max > 0 and j_max > 0 and dt > 0):
        raise ValueError(f"a_max, j_max and dt must be > 0, got {a_max}, {j_max}, {dt}")

    segments, v = [], 0.0
    for level, hold in zip(levels, holds):
        segments += _ramp(level - v, a_max, j_max)
        segments.append((hold, 0.0))
        v = level
    durations, jerks = (np.array(c, dtype=float) for c in zip(*segments))

    # State (x, v, a) at every knot, by exact integration of each constant-jerk segment.
    knots = np.concatenate([[0.0], np.cumsum(durations)])
    state = np.zeros((len(knots), 3))
    state[0] = (x0, 0.0, 0.0)
    for k, (h, j) in enumerate(zip(durations, jerks)):
        x, v, a = state[k]
        state[k + 1] = (x + v * h + a * h**2 / 2 + j * h**3 / 6, v + a * h + j * h**2 / 2, a + j * h)

    # Sampling a designed profile is input preparation at the edge: numpy, then jnp.
    t = np.arange(int(np.floor(knots[-1] / dt + 1e-9)) + 1) * dt
    k = np.clip(np.searchsorted(knots, t, side="right") - 1, 0, len(durations) - 1)
    tau = t - knots[k]
    xk, vk, ak = state[k].T
    jk = jerks[k]
    x = xk + vk * tau + ak * tau**2 / 2 + jk * tau**3 / 6
    v = vk + ak * tau + jk * tau**2 / 2
    a = ak + jk * tau
    t, x, v, a = (jnp.asarray(u) for u in (t, x, v, a))
    return t, x, v, a


# Friction experiments (SI units: m/s, m/s^2, m/s^3), designed for the LuGre parameters
# of Canudas de Wit et al. (1995): creep at 1e-5 m/s well inside the presliding range
# (z_ss ~ 1.5e-5 m); plateaus across the Stribeck range (v0 = 1e-3 m/s) entered from
# above without reversal, so they are quasi-steady; reversals at 1-10 m/s^2 (the
# bristle transients then span 1e-3-2e-2 m/s, which exposes the damping cut-off vd);
# sliding up to 1.5 m/s for the viscous terms.
_FRICTION_PROFILES = {
    "identification": (
        (
            1e-5,
            -1e-5,
            1e-5,  # presliding loops
            5e-3,
            2e-3,
            1e-3,
            5e-4,
            2e-4,
            -5e-3,
            -2e-3,
            -1e-3,
            -5e-4,
            -2e-4,  # Stribeck stairs
            0.05,
            -0.2,
            0.5,
            -1.0,
            1.5,
            -1e-5,
        ),  # sliding, reversals at 1-10 m/s^2
        (0.25, 0.25, 0.25, 0.05, 0.06, 0.1, 0.15, 0.3, 0.05, 0.06, 0.1, 0.15, 0.3, 0.05, 0.1, 0.1, 0.1, 0.1, 0.25),
    ),
    "validation": (
        (-2e-5, 2e-5, 3e-3, 7e-4, 3e-4, -2.5e-3, -8e-4, 0.1, -0.7, 1.2, -0.01, 3e-5),
        (0.2, 0.3, 0.08, 0.12, 0.25, 0.08, 0.12, 0.1, 0.1, 0.1, 0.05, 0.3),
    ),
}


def friction_s_curve(kind="identification", dt=1e-3, stretch=1.0):
    """The S-curve friction experiment used by ``jaxid.identification.lugre``.

    ``kind="identification"`` (3.75 s at 1 kHz): creep dwells at +-1e-5 m/s (presliding
    loops), a staircase of quasi-steady plateaus from 5e-3 down to 2e-4 m/s in each
    direction, reversals through zero at up to 10 m/s^2 and sliding up to 1.5 m/s.
    ``kind="validation"`` (2.4 s): other levels and hold times in the same ranges, for a
    held-out check. a_max = 10 m/s^2, j_max = 200 m/s^3.
    ``stretch`` multiplies every hold time (a longer experiment of the same shape).

    Returns (t, x, v, a), each shape (N,), as ``s_curve``.
    """
    if kind not in _FRICTION_PROFILES:
        raise ValueError(f"kind must be one of {sorted(_FRICTION_PROFILES)}, got {kind!r}")
    levels, holds = _FRICTION_PROFILES[kind]
    return s_curve(levels, np.asarray(holds) * stretch, a_max=10.0, j_max=200.0, dt=dt)


# Plain S-curves: ordinary point-to-point moves at one jerk and acceleration limit (what a
# position-controlled axis runs without a designed friction program), SI units.
_PLAIN_PROFILES = {
    # A slow jog at 1e-3 m/s each way (the cruise sits in the Stribeck range of the reference
    # parameters, v0 = 1e-3), rest between moves, then a fast move to 1.5 m/s reversed to
    # -1.5 m/s without a stop (the zero crossing at ~5 m/s^2), twice: 5.9 s.
    "jog-reversal": (
        [1e-3, 0.0, -1e-3, 0.0, 1.5, -1.5, 0.0] * 2,
        [0.3, 0.1, 0.3, 0.1, 0.05, 0.05, 0.1] * 2,
        10.0,
        20.0,
    ),
    # One rest-to-rest move each way at 0.1 m/s, jerk 2 m/s^3: slow starts and stops, no
    # reversal without a stop, no speed above 0.1 m/s: 2.8 s.
    "rest-to-rest": ([0.1, 0.0, -0.1, 0.0], [0.3, 0.2, 0.3, 0.2], 1.0, 2.0),
}


def plain_s_curve(kind="jog-reversal", dt=1e-3):
    """A plain S-curve friction record: ordinary jerk-limited moves, no creep dwells, no staircase.

    ``kind="jog-reversal"`` (5.9 s): a slow jog at +-1e-3 m/s with rests, then +1.5 m/s reversed to
    -1.5 m/s without a stop, twice; a_max 10 m/s^2, j_max 20 m/s^3. For the reference LuGre
    parameters it determines all eight (Cramer-Rao std <= 0.2 % at sigma_F = 2e-3 N): the jog
    passes the Stribeck range quasi-steadily, the non-stop reversal drives the bristle transient
    up to |v| ~ 0.01 m/s ~ vd, the fast move spans the viscous and quadratic terms.
    ``kind="rest-to-rest"`` (2.8 s): one move each way at 0.1 m/s, a_max 1 m/s^2, j_max 2 m/s^3;
    it does not determine vd (the transients end at ~1e-3 m/s << vd) nor alpha3 (v <= 0.1 m/s).

    Returns (t, x, v, a), each shape (N,), as ``s_curve``.
    """
    if kind not in _PLAIN_PROFILES:
        raise ValueError(f"kind must be one of {sorted(_PLAIN_PROFILES)}, got {kind!r}")
    levels, holds, a_max, j_max = _PLAIN_PROFILES[kind]
    return s_curve(levels, holds, a_max=a_max, j_max=j_max, dt=dt)
