"""Excitation trajectories with analytic velocities and accelerations.

Each trajectory is a pure JAX function of its parameters (so an optimiser can
differentiate through it) and returns (q, qd, qdd), each shape (N, n): N time samples,
n joints; rad, rad/s, rad/s^2.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid import cache
from jaxid.arrays import AnyArray, Numeric, namespace
from jaxid.signals import _check_finite

__all__ = [
    "approach",
    "approach_duration",
    "approach_jerk",
    "fourier",
    "fourier_period",
    "multisine",
    "random_multisine",
]

#: (q, qd, qdd), each (N, n): rad, rad/s, rad/s^2.
Trajectory = tuple[jax.Array, jax.Array, jax.Array]


def _array(x: ArrayLike, name: str, ndim: int) -> jax.Array:
    x = jnp.asarray(x, dtype=jnp.result_type(float))
    if x.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {x.shape}.")
    _check_finite(x, name)
    return x


def _time(t: ArrayLike) -> jax.Array:
    t = _array(t, "t", 1)
    if t.shape[0] < 1:
        raise ValueError("t is empty; give at least one time sample (s).")
    return t


def fourier_period(omega_f: Numeric) -> Numeric:
    """Period of a finite Fourier series of base pulsation omega_f (rad/s): 2 pi / omega_f, s."""
    return 2 * jnp.pi / omega_f


def _zero_start(a: AnyArray, b: AnyArray) -> tuple[AnyArray, AnyArray]:
    """Orthogonal projection of (a, b) onto sum_k a_ik = 0 and sum_k k b_ik = 0.

    Those are exactly qd_i(0) = 0 and qdd_i(0) = 0. The projection is linear and
    differentiable, leaves coefficients that already satisfy the constraints unchanged,
    and keeps every harmonic free (rather than sacrificing one to the constraint). numpy for
    concrete a, b (a result on the host), jax.numpy for traced ones.
    """
    k = namespace(a, b).arange(1, a.shape[1] + 1, dtype=a.dtype)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - (b @ k)[:, None] * k / (k @ k)
    return a, b


def fourier(
    a: ArrayLike, b: ArrayLike, q0: ArrayLike, omega_f: float | jax.Array, t: ArrayLike, zero_start: bool = False
) -> Trajectory:
    """Finite Fourier series excitation (Swevers et al.).

    q_i(t) = q0_i + sum_{k=1..H} a_ik/(k w) sin(k w t) - b_ik/(k w) cos(k w t),
    qd_i(t) = sum_k a_ik cos(k w t) + b_ik sin(k w t),
    qdd_i(t) = sum_k k w (b_ik cos(k w t) - a_ik sin(k w t)),
    periodic with period 2 pi / w (``fourier_period``). q0 is the mean position over a
    period, not the start: q_i(0) = q0_i - sum_k b_ik / (k w).

    zero_start=True makes qd and qdd zero at t = 0, hence at every period boundary, by
    construction: qd_i(0) = sum_k a_ik and qdd_i(0) = w sum_k k b_ik, so (a, b) are first
    replaced by their orthogonal projection onto sum_k a_ik = 0 and sum_k k b_ik = 0
    (a_i minus its mean; b_i minus its component along k = (1..H)). The free parameters
    stay a and b, and gradients flow through the projection. Needs H >= 2. The start
    position is then q0_i - sum_k b'_ik / (k w) with the projected b'.

    a, b: coefficients, shape (n, H), rad/s; q0: shape (n,), rad; omega_f: base
    pulsation, rad/s (> 0); t: times, shape (N,), s.
    Returns (q, qd, qdd), each shape (N, n).

    Source: Swevers, Ganseman, Tukel, De Schutter, Van Brussel, "Optimal robot excitation
    and identification", IEEE Trans. Robotics and Automation 13(5), 1997.
    """
    a = _array(a, "a", 2)
    b = _array(b, "b", 2)
    q0 = _array(q0, "q0", 1)
    t = _time(t)
    if a.shape != b.shape or q0.shape != a.shape[:1]:
        raise ValueError(
            f"a and b must both have shape (n, H) and q0 shape (n,); got a {a.shape}, b {b.shape}, q0 {q0.shape}."
        )
    if a.shape[1] < 1:
        raise ValueError("a and b have no harmonics; give at least one column (H >= 1).")
    if zero_start and a.shape[1] < 2:
        raise ValueError("zero_start needs at least 2 harmonics: with H = 1 the constraints force a = b = 0.")
    if not isinstance(omega_f, jax.core.Tracer) and not float(omega_f) > 0:
        raise ValueError(f"omega_f must be a positive pulsation (rad/s), got {omega_f}.")
    return _fourier(a, b, q0, omega_f, t, zero_start)


@partial(cache.jit, static_argnames=("zero_start",))  # stored: a warm process loads it
def _fourier(
    a: jax.Array, b: jax.Array, q0: jax.Array, omega_f: float | jax.Array, t: jax.Array, zero_start: bool
) -> Trajectory:
    if zero_start:
        a, b = (jnp.asarray(x) for x in _zero_start(a, b))  # traced here: jax arrays already
    wk = omega_f * jnp.arange(1, a.shape[1] + 1)  # (H,)
    s, c = jnp.sin(t[:, None] * wk), jnp.cos(t[:, None] * wk)  # (N, H)
    q = q0 + s @ (a / wk).T - c @ (b / wk).T
    qd = c @ a.T + s @ b.T
    qdd = c @ (b * wk).T - s @ (a * wk).T
    return q, qd, qdd


def _fourier_jerk(a: jax.Array, b: jax.Array, omega_f: float | jax.Array, t: jax.Array) -> jax.Array:
    """Jerk (N, n), rad/s^3, of ``fourier(a, b, ., omega_f, t)`` for coefficients a, b (n, H)
    as used (already projected when zero_start): sum_k -(k w)^2 (a_ik cos + b_ik sin)(k w t)."""
    wk = omega_f * jnp.arange(1, a.shape[1] + 1)
    s, c = jnp.sin(t[:, None] * wk), jnp.cos(t[:, None] * wk)
    return -(c @ (a * wk**2).T + s @ (b * wk**2).T)


@jax.jit  # one program per shape, not one per jnp operation on concrete values
def approach(q_from: ArrayLike, q_to: ArrayLike, duration: float | jax.Array, t: ArrayLike) -> Trajectory:
    """A rest-to-rest move from q_from to q_to (n,), rad, in ``duration`` s: the quintic
    (minimum-jerk) blend q = q_from + (q_to - q_from) (10 s^3 - 15 s^4 + 6 s^5), s = t / duration
    clipped to [0, 1], with zero velocity and acceleration at both ends (Biagiotti &
    Melchiorri 2008, section 2.1.5). t: (N,) s. Returns (q, qd, qdd), each (N, n)."""
    q_from, q_to = jnp.asarray(q_from, dtype=float), jnp.asarray(q_to, dtype=float)
    s = jnp.clip(jnp.asarray(t, dtype=float) / duration, 0.0, 1.0)[:, None]
    dq = q_to - q_from
    q = q_from + dq * s**3 * (10 - 15 * s + 6 * s**2)
    qd = dq * 30 * s**2 * (1 - s) ** 2 / duration
    qdd = dq * 60 * s * (1 - s) * (1 - 2 * s) / duration**2
    return q, qd, qdd


@jax.jit  # one program per shape, not one per jnp operation on concrete values
def approach_jerk(q_from: ArrayLike, q_to: ArrayLike, duration: float | jax.Array, t: ArrayLike) -> jax.Array:
    """Jerk (N, n), rad/s^3, of ``approach(q_from, q_to, duration, t)``: the derivative of its
    qdd, (q_to - q_from) 60 (1 - 6 s + 6 s^2) / duration^3, zero outside the move."""
    q_from, q_to = jnp.asarray(q_from, dtype=float), jnp.asarray(q_to, dtype=float)
    t = jnp.asarray(t, dtype=float)[:, None]
    s = jnp.clip(t / duration, 0.0, 1.0)
    inside = (t >= 0) & (t <= duration)
    return jnp.where(inside, (q_to - q_from) * 60 * (1 - 6 * s + 6 * s**2) / duration**3, 0.0)


def approach_duration(
    q_from: ArrayLike, q_to: ArrayLike, qd_max: Numeric, qdd_max: Numeric, qddd_max: Numeric = np.inf
) -> float:
    """The shortest duration, s, of ``approach`` within the velocity, acceleration and jerk
    limits (n,): its peaks are 15/8, 10/sqrt(3) and 60 times |dq| / T, / T^2, / T^3."""
    dq = np.abs(np.asarray(q_to, dtype=float) - np.asarray(q_from, dtype=float))
    return float(
        np.max(
            np.concatenate(
                [1.875 * dq / qd_max, np.sqrt(10 / np.sqrt(3) * dq / qdd_max), np.cbrt(60 * dq / qddd_max), [0.0]]
            )
        )
    )


def multisine(
    amplitudes: ArrayLike, frequencies_hz: ArrayLike, phases: ArrayLike, t: ArrayLike, offset: ArrayLike = 0.0
) -> Trajectory:
    """Sum-of-sines excitation: q_i(t) = offset_i + sum_s A_is sin(2 pi f_is t + phi_is).

    amplitudes: shape (n, S), rad; frequencies_hz: shape (n, S), Hz; phases: shape (n, S),
    rad; t: times, shape (N,), s; offset: scalar or shape (n,), rad.
    Returns (q, qd, qdd), each shape (N, n), with analytic derivatives.
    """
    amp = _array(amplitudes, "amplitudes", 2)
    freq = _array(frequencies_hz, "frequencies_hz", 2)
    phase = _array(phases, "phases", 2)
    t = _time(t)
    offset = jnp.asarray(offset, dtype=amp.dtype)
    if freq.shape != amp.shape or phase.shape != amp.shape:
        raise ValueError(
            f"amplitudes, frequencies_hz and phases must share shape (n, S); got "
            f"{amp.shape}, {freq.shape}, {phase.shape}."
        )
    if offset.shape not in ((), amp.shape[:1]):
        raise ValueError(f"offset must be a scalar or shape ({amp.shape[0]},), got {offset.shape}.")
    _check_finite(offset, "offset")
    return _multisine(amp, freq, phase, t, offset)


@jax.jit
def _multisine(amp: jax.Array, freq: jax.Array, phase: jax.Array, t: jax.Array, offset: jax.Array) -> Trajectory:
    w = 2 * jnp.pi * freq  # (n, S)
    arg = t[:, None, None] * w + phase  # (N, n, S)
    s, c = jnp.sin(arg), jnp.cos(arg)
    q = offset + jnp.sum(amp * s, axis=-1)
    qd = jnp.sum(amp * w * c, axis=-1)
    qdd = -jnp.sum(amp * w**2 * s, axis=-1)
    return q, qd, qdd


def random_multisine(
    key: jax.Array | int,
    n: int,
    t: ArrayLike,
    n_sines: int = 3,
    freq_range: tuple[float, float] = (0.4, 1.6),
    amp_range: tuple[float, float] = (0.15, 0.45),
) -> tuple[jax.Array, jax.Array, jax.Array, dict[str, jax.Array]]:
    """Random multi-sine excitation, the six-DOF benchmark's (T = 30 s, N = 3000 samples).

    Each of the n joints gets n_sines sines with amplitude ~ U(amp_range) rad, frequency
    ~ U(freq_range) Hz and phase ~ U(0, 2 pi), drawn independently.

    key: a jax.random key or an int seed; n: joints; t: times, shape (N,), s.
    Returns (q, qd, qdd, params): the trajectory as ``multisine`` and the drawn
    parameters {"amplitudes", "frequencies_hz", "phases"}, each shape (n, n_sines).
    """
    for name, v in (("n", n), ("n_sines", n_sines)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}.")
    for name, (lo, hi) in (("freq_range", freq_range), ("amp_range", amp_range)):
        if not 0 <= lo <= hi:
            raise ValueError(f"{name} must be (low, high) with 0 <= low <= high, got {(lo, hi)}.")
    if isinstance(key, int):
        key = jax.random.key(key)
    k_amp, k_freq, k_phase = jax.random.split(key, 3)
    shape = (n, n_sines)
    params = {
        "amplitudes": jax.random.uniform(k_amp, shape, minval=amp_range[0], maxval=amp_range[1]),
        "frequencies_hz": jax.random.uniform(k_freq, shape, minval=freq_range[0], maxval=freq_range[1]),
        "phases": jax.random.uniform(k_phase, shape, maxval=2 * jnp.pi),
    }
    return (*multisine(params["amplitudes"], params["frequencies_hz"], params["phases"], t), params)
