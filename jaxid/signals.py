"""Signal processing for measured joint data: filtering, differentiation, averaging, alignment.

Every function is a pure JAX function of the signal, so it can be called inside ``jax.jit``
and differentiated. Arguments that define a filter (sampling rate, cutoff, window, order)
are static: they must be Python numbers, because the filter coefficients are computed once
with numpy/scipy at the edge. Signals run along ``axis`` (time, default 0); any other
axes are independent channels (e.g. shape (N, n) for n joints).

Validation happens here, at the Python edge: shapes and static parameters are always
checked, NaN/inf only for concrete (non-traced) arrays.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxid import arrays, cache
from jaxid.arrays import plain

__all__ = [
    "butter_coefficients",
    "butterworth",
    "savgol",
    "five_point_cubic",
    "period_average",
    "PeriodicDerivatives",
    "periodic_derivatives",
    "samples_per_period",
    "central_diff",
    "derivatives",
    "estimate_delay",
    "estimate_offset",
    "spline_resample",
]


# ----------------------------------------------------------------------------- validation
def _signal(x: ArrayLike, name: str, axis: int, min_len: int) -> jax.Array:
    """x as a float JAX array with a valid time axis of at least min_len samples."""
    x = arrays.device(x)
    if x.ndim == 0:
        raise ValueError(f"{name} must be an array of samples, got a scalar.")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis={axis} is out of range for {name} with shape {x.shape}.")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    if x.shape[axis] < min_len:
        raise ValueError(
            f"{name} has {x.shape[axis]} samples along axis {axis}; at least {min_len} are "
            f"needed. Use a longer record or a smaller window/order."
        )
    _check_finite(x, name)
    return x


def _check_finite(x, name):
    """Raise if a concrete array holds NaN or inf (traced arrays cannot be inspected)."""
    # numpy on a concrete array: jnp would compile a program for every new shape checked.
    if not isinstance(x, jax.core.Tracer) and not np.isfinite(np.asarray(x)).all():
        raise ValueError(f"{name} contains NaN or inf; remove or interpolate those samples.")


def _static_positive(v, name):
    """A static, finite, positive Python float (it sets shapes or filter coefficients)."""
    try:
        v = float(v)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        raise ValueError(f"{name} must be a Python number, not {type(v).__name__} {plain(v)!r}.") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {v}.")
    return v


def _check_dt(dt):
    """dt may be traced; check it when it is concrete."""
    if not isinstance(dt, jax.core.Tracer):
        _static_positive(dt, "dt")


def _static_int(v, name, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {plain(v)!r}.")
    return int(v)


def _along_axis(fn, x, axis, xp=jnp):
    """Apply fn: (N, c) -> (M, c) along `axis` of x, all other axes flattened into c (in the array
    namespace xp: numpy for a host computation of concrete x)."""
    x = xp.moveaxis(xp.asarray(x), axis, 0)
    rest = x.shape[1:]
    y = fn(x.reshape(x.shape[0], -1))
    return xp.moveaxis(y.reshape((y.shape[0],) + rest), 0, axis)


# ----------------------------------------------------------------------------- Butterworth
def butter_coefficients(order: int, cutoff: float, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """Digital Butterworth low-pass coefficients (numpy, computed with ``scipy.signal.butter``).

    order: filter order (int >= 1); cutoff: -3 dB frequency, Hz; fs: sampling rate, Hz.
    Returns (b, a), each shape (order + 1,), normalised so that a[0] = 1.
    """
    order = _static_int(order, "order", 1)
    fs = _static_positive(fs, "fs")
    cutoff = _static_positive(cutoff, "cutoff")
    if cutoff >= fs / 2:
        raise ValueError(f"cutoff={cutoff} Hz must be below the Nyquist frequency fs/2 = {fs / 2} Hz.")
    import scipy.signal  # lazily: importing it costs about a second, and only filtering needs it

    b, a = scipy.signal.butter(order, cutoff / (fs / 2), btype="low")
    return np.asarray(b, float), np.asarray(a, float)


def _lfilter(b, a, x, zi):
    """Direct form II transposed IIR filter (as ``scipy.signal.lfilter``), a[0] == 1; x (N,)."""

    def step(z, xn):
        y = b[0] * xn + z[0]
        z = jnp.concatenate([z[1:], jnp.zeros(1, z.dtype)]) + b[1:] * xn - a[1:] * y
        return z, y

    return lax.scan(step, zi, x)[1]


def _filtfilt_1d(b, a, zi, x, padlen):
    # Odd extension about the end points, as scipy's odd_ext.
    ext = jnp.concatenate([2 * x[0] - x[padlen:0:-1], x, 2 * x[-1] - x[-2 : -padlen - 2 : -1]])
    y = _lfilter(b, a, ext, zi * ext[0])
    y = _lfilter(b, a, y[::-1], zi * y[-1])[::-1]
    return y[padlen:-padlen]


@partial(jax.jit, static_argnames=("padlen",))
def _filtfilt(b, a, zi, x, padlen):
    return jax.vmap(_filtfilt_1d, in_axes=(None, None, None, 1, None), out_axes=1)(b, a, zi, x, padlen)


@partial(jax.jit, static_argnames=("padlen",))
def _filtfilt_each(b, a, zi, x, padlen):
    return jax.vmap(_filtfilt_1d, in_axes=(0, 0, 0, 1, None), out_axes=1)(b, a, zi, x, padlen)


def butterworth(x: ArrayLike, fs: float, cutoff: float | ArrayLike, order: int = 4, axis: int = 0) -> jax.Array:
    """Zero-phase Butterworth low-pass filter with ``scipy.signal.filtfilt`` semantics.

    The signal is filtered forward and backward (so the magnitude response is squared
    and the phase is zero; the -3 dB point of one pass, ``cutoff``, becomes -6 dB).
    Edge padding, exactly as filtfilt's default (``padtype='odd'``, ``method='pad'``):
    each end is extended by padlen = 3 * (order + 1) samples reflected about the end
    sample (odd extension, 2*x[0] - x[padlen:0:-1]), and each pass starts from the
    steady state of a step of the first sample (``lfilter_zi``). The recursion is a
    ``lax.scan``, vmapped over channels.

    x: signal, shape (N,) or (N, n) (time along ``axis``), any unit; N > padlen.
    fs: sampling rate, Hz; cutoff: -3 dB frequency of one pass, Hz, below fs/2, or one per
    channel, shape (n,), for x of shape (N, n) (each column filtered at its own cutoff);
    order: Butterworth order. fs, cutoff and order are static Python numbers.
    Returns the filtered signal, same shape as x.

    Like filtfilt, this uses the transfer-function (b, a) form, which loses digits when
    the order is high and cutoff/fs small (order 6 at cutoff = fs/100 already differs
    from scipy at 1e-8 relative, both being equally affected by the ill-conditioning).

    Source: Gustafsson, "Determining the initial states in forward-backward filtering",
    IEEE Trans. Signal Processing 44(4), 1996 (the initial conditions scipy uses).
    """
    import scipy.signal

    cutoffs = np.asarray(cutoff, dtype=float)
    if cutoffs.ndim == 0:
        b, a = butter_coefficients(order, float(cutoffs), fs)
        padlen = 3 * max(len(a), len(b))
        x = _signal(x, "x", axis, padlen + 1)
        zi = scipy.signal.lfilter_zi(b, a)
        return _along_axis(lambda v: _filtfilt(b, a, zi, v, padlen), x, axis)
    x = _signal(x, "x", axis, 3 * (_static_int(order, "order", 1) + 1) + 1)
    if x.ndim != 2 or cutoffs.shape != (x.shape[1 - axis % 2],):
        raise ValueError(
            f"a cutoff per channel needs x of shape (N, n) and cutoff of shape (n,); got x {x.shape}, "
            f"cutoff {cutoffs.shape}"
        )
    coefficients = [butter_coefficients(order, float(c), fs) for c in cutoffs]
    b = np.stack([c[0] for c in coefficients])
    a = np.stack([c[1] for c in coefficients])
    zi = np.stack([scipy.signal.lfilter_zi(bj, aj) for bj, aj in coefficients])
    padlen = 3 * b.shape[1]
    return jnp.moveaxis(_filtfilt_each(b, a, zi, jnp.moveaxis(x, axis, 0), padlen), 0, axis)


# ----------------------------------------------------------------------------- window smoothers
def _window_operator(P, x):
    """Apply a (w, w) local linear operator to x (N, c), w odd, in the namespace of P and x (numpy
    when both are concrete: a compiled program per record length bought nothing for a w-tap filter).

    Row w//2 of P is applied as a sliding window in the interior; rows above it give the
    first w//2 outputs from the first w samples, rows below it the last w//2 outputs
    from the last w samples.
    """
    xp = arrays.namespace(P, x)
    w = P.shape[0]
    h = w // 2
    n_mid = x.shape[0] - w + 1
    mid = sum(P[h, j] * x[j : j + n_mid] for j in range(w))
    dot = partial(jnp.dot, precision=lax.Precision.HIGHEST) if xp is jnp else np.dot
    return xp.concatenate([dot(P[:h], x[:w]), mid, dot(P[h + 1 :], x[-w:])])


def _windowed(x, axis, operator, *also):
    """``operator`` (N, c) -> (N, c) along ``axis`` of x (``_signal``'s output): where x or any of
    ``also`` (what the operator holds, e.g. a traced dt) is traced, in jax; all concrete, on the host
    with numpy and put on the device (``jax.Array`` in, out)."""
    if arrays.is_traced(x, *also):
        return _along_axis(operator, x, axis)
    return arrays.device(_along_axis(operator, np.asarray(x), axis, np))


def _savgol_operator(window, polyorder, deriv):
    """(w, w) matrix: row i = weights giving the deriv-th derivative (per sample^deriv)
    at window position i of the least-squares polynomial fit over the window."""
    h = window // 2
    # Positions scaled to [-1, 1] keep the Vandermonde matrix well conditioned.
    u = (np.arange(window) - h) / max(h, 1)
    powers = np.arange(polyorder + 1)
    V = u[:, None] ** powers
    D = np.zeros_like(V)
    for j in range(deriv, polyorder + 1):
        D[:, j] = math.perm(j, deriv) * u ** (j - deriv)
    return D @ np.linalg.pinv(V) / max(h, 1) ** deriv


def savgol(
    x: ArrayLike, window: int, order: int, deriv: int = 0, dt: float | jax.Array = 1.0, axis: int = 0
) -> jax.Array:
    """Savitzky-Golay smoothing or differentiation, as ``scipy.signal.savgol_filter(...,
    mode='interp')``.

    Each interior sample is the value (or deriv-th derivative) at the window centre of
    the least-squares polynomial of degree ``order`` over ``window`` samples; the first
    and last window//2 samples are taken from the polynomial fitted to the first/last
    ``window`` samples, evaluated at their own positions.

    x: signal, shape (N,) or (N, n) (time along ``axis``), unit u; N >= window.
    window: odd window length (samples); order: polynomial degree < window;
    deriv: derivative order (0 = smoothing); dt: sample spacing, s (may be traced).
    Returns shape of x, unit u / s**deriv.

    Source: Savitzky & Golay, "Smoothing and differentiation of data by simplified least
    squares procedures", Anal. Chem. 36(8):1627, 1964.
    """
    window = _static_int(window, "window", 1)
    if window % 2 == 0:
        raise ValueError(f"window must be odd, got {window}; use {window + 1}.")
    order = _static_int(order, "order", 0)
    if order >= window:
        raise ValueError(f"order={order} must be smaller than window={window}.")
    deriv = _static_int(deriv, "deriv", 0)
    _check_dt(dt)
    x = _signal(x, "x", axis, window)
    P = _savgol_operator(window, order, deriv) / (dt**deriv if arrays.is_traced(dt) else float(dt) ** deriv)
    return _windowed(x, axis, lambda v: _window_operator(P, v), dt)


# Five-point cubic smoothing: interior (-3, 12, 17, 12, -3)/35 and the classic end-point
# formulas for the two first and two last samples. They are the least-squares cubic over
# five points evaluated at each point (Savitzky & Golay 1964; the end rows are the same
# fit evaluated off-centre), tabulated as the "five-point cubic smoothing" formulas.
_FIVE_POINT_CUBIC = np.array(
    [
        [69 / 70, 4 / 70, -6 / 70, 4 / 70, -1 / 70],
        [2 / 35, 27 / 35, 12 / 35, -8 / 35, 2 / 35],
        [-3 / 35, 12 / 35, 17 / 35, 12 / 35, -3 / 35],
        [2 / 35, -8 / 35, 12 / 35, 27 / 35, 2 / 35],
        [-1 / 70, 4 / 70, -6 / 70, 4 / 70, 69 / 70],
    ]
)


def _repeat_five_point_cubic(x, k):
    if arrays.is_traced(x):
        return lax.fori_loop(0, k, lambda _, v: _window_operator(_FIVE_POINT_CUBIC, v), x)
    for _ in range(k):
        x = _window_operator(_FIVE_POINT_CUBIC, x)
    return x


def five_point_cubic(x: ArrayLike, k: int = 1, axis: int = 0) -> jax.Array:
    """Five-point cubic smoothing, repeated k times.

    y_0 = (69 x_0 + 4 x_1 - 6 x_2 + 4 x_3 - x_4)/70,
    y_1 = (2 x_0 + 27 x_1 + 12 x_2 - 8 x_3 + 2 x_4)/35,
    y_i = (-3 x_{i-2} + 12 x_{i-1} + 17 x_i + 12 x_{i+1} - 3 x_{i+2})/35,
    and the mirror images for the last two samples: the least-squares cubic through five
    neighbours evaluated at each point (Savitzky & Golay, Anal. Chem. 36(8), 1964), so a
    cubic polynomial passes unchanged. Equal to ``savgol(x, 5, 3)``.

    x: signal, shape (N,) or (N, n) (time along ``axis``), N >= 5; k: passes (int >= 1).
    Returns shape of x, same unit.
    """
    k = _static_int(k, "k", 1)
    x = _signal(x, "x", axis, 5)
    return _windowed(x, axis, lambda v: _repeat_five_point_cubic(v, k))


# ----------------------------------------------------------------------------- averaging
def period_average(x: ArrayLike, samples_per_period: int, axis: int = 0) -> arrays.AnyArray:
    """Average M whole periods of a periodic record into one period.

    For a periodic excitation, the deterministic part is identical in every period and
    independent noise averages out: its standard deviation falls by sqrt(M).

    x: signal, shape (M * samples_per_period,) or (M * samples_per_period, n) along
    ``axis``, M >= 1; samples_per_period: int >= 1.
    Returns shape of x with samples_per_period samples along ``axis``, same unit.
    """
    p = _static_int(samples_per_period, "samples_per_period", 1)
    x = _signal(x, "x", axis, p)
    n = x.shape[axis]
    if n % p:
        m = n // p
        raise ValueError(
            f"x has {n} samples, not a whole number of periods of {p} samples; trim it to "
            f"{m * p} samples (drop the last {n - m * p}, e.g. x[:{m * p}]) or record whole periods."
        )
    # numpy for concrete x (a mean: nothing worth compiling), jax.numpy traced
    return _along_axis(lambda v: v.reshape(n // p, p, -1).mean(axis=0), x, axis, arrays.namespace(x))


class PeriodicDerivatives(NamedTuple):
    """Result of [`periodic_derivatives`][jaxid.signals.periodic_derivatives] (a pytree).

    q, qd, qdd: one averaged, band-limited period, shape (P, n), rad, rad/s, rad/s^2, at
        times t0 + arange(P) / fs (t0 the first sample of the record).
    var: variance of the noise left in q, qd, qdd (averaged over the period), shape (3, n),
        rad^2, (rad/s)^2, (rad/s^2)^2.
    noise: variance of the measurement noise on one sample of q, shape (n,), rad^2.
    harmonics: harmonics kept per joint, shape (n,) (int).
    periods: M, the whole periods averaged; samples_per_period: P (Python ints).
    """

    q: jax.Array
    qd: jax.Array
    qdd: jax.Array
    var: jax.Array
    noise: jax.Array
    harmonics: jax.Array
    periods: int
    samples_per_period: int


def samples_per_period(fs: float, f0: float) -> int:
    """P = fs / f0 as an int, or a ValueError saying how far it is from a whole number."""
    fs = _static_positive(fs, "fs")
    f0 = _static_positive(f0, "f0")
    p = fs / f0
    if abs(p - round(p)) > 1e-6 * p or round(p) < 2:
        raise ValueError(
            f"fs / f0 = {fs:g} / {f0:g} = {p:.6g} samples per period is not a whole number >= 2 "
            f"({abs(p - round(p)):.3g} samples off); resample the record at a multiple of f0 or give "
            f"the exact base frequency."
        )
    return int(round(p))


def periodic_derivatives(
    q: ArrayLike, fs: float, f0: float, harmonics: int | None = None, false_alarm: float = 1e-3
) -> PeriodicDerivatives:
    """Positions, velocities and accelerations of a periodic record, differentiated in the
    frequency domain over whole periods, with period averaging and noise estimates.

    The first M = N // P whole periods of P = fs / f0 samples (trailing samples, e.g. the
    closing sample that ``jaxid excite`` writes, are ignored) are averaged into one period
    and transformed (DFT over exactly one period: a harmonic of f0 falls on one bin, no
    leakage); the d-th derivative multiplies bin k by (i k w0)^d, w0 = 2 pi f0, and bins
    above the bandwidth are zeroed. Exact, to rounding, for a band-limited periodic signal.

    Bandwidth: ``harmonics`` (the excitation's, if known: bins 0..harmonics kept), else per
    joint the highest bin (below Nyquist) whose averaged power |X_k|^2 exceeds the noise
    floor times ln(n_bins / false_alarm) (noise alone, an exponential variable, crosses that
    anywhere in the band with probability ``false_alarm``). The floor is the variance of the
    averaged spectrum from the period-to-period spread, v_k = sum_m |X_mk - X_k|^2 /
    (M (M - 1)), averaged over the bins (white noise; at least the rounding level, 1e-12 of
    the largest bin); the periodic signal does not enter it.
    Noise estimates: var of each output = (v_0 [d = 0] + 2 sum_{0 < k <= K} (k w0)^2d v_k) / P^2
    (Parseval), noise = the spread of single samples, sum (q_m - q_mean)^2 / (M P - P).

    One period (M = 1, ``harmonics`` given): the noise floor is the mean power of the bins
    above the harmonics (below Nyquist), which a band-limited periodic motion leaves to the
    noise alone (white noise: E|X_k|^2 = P sigma^2); on a real robot tracking errors beyond the
    band count as noise there, so the estimate errs high. NaN when no bin is left above.

    q: positions, shape (N,) or (N, n), rad, time along axis 0, N >= 2 P (>= P with
    ``harmonics`` given). fs: sample rate, Hz; f0: base
    frequency, Hz, with fs / f0 a whole number; harmonics: int < P / 2 or None (all static).
    Returns [`PeriodicDerivatives`][jaxid.signals.PeriodicDerivatives] (1-D q gives (P,) signals and scalars per joint).

    Source: Pintelon & Schoukens, System Identification: A Frequency Domain Approach, 2nd
    ed., Wiley-IEEE 2012, sections 2.4 (nonparametric noise model from periods) and 5.2.
    """
    p = samples_per_period(fs, f0)
    squeeze = jnp.ndim(q) == 1
    x: Any = _signal(q, "q", 0, 1)
    x = x if arrays.is_traced(x) else np.asarray(x)  # concrete: the reshapes on the host, not as programs
    x = x[:, None] if squeeze else x.reshape(x.shape[0], -1)
    n_samples = x.shape[0]
    if n_samples < p:
        raise ValueError(
            f"q has {n_samples} samples, shorter than one period of {p} samples (1 / f0 = "
            f"{1 / float(f0):g} s at {float(fs):g} Hz); record at least one whole period."
        )
    m = n_samples // p
    nyquist = (p - 1) // 2  # highest bin strictly below Nyquist
    if harmonics is None:
        if m < 2:
            raise ValueError(
                f"q holds {m} whole period of {p} samples; the noise floor needs the spread of at "
                f"least 2 periods: record {2 * p} samples or more, or give harmonics."
            )
    else:
        harmonics = _static_int(harmonics, "harmonics", 0)
        if harmonics > nyquist:
            raise ValueError(
                f"harmonics={harmonics} reaches the Nyquist frequency of {p} samples per period; "
                f"keep at most {nyquist} or sample faster."
            )
    _check_finite(false_alarm, "false_alarm")
    out = _periodic(x[: m * p].reshape(m, p, -1), float(f0), harmonics, float(false_alarm))
    if squeeze:
        out = jax.tree.map(lambda v: v[..., 0], out)
    pos, vel, acc, var, noise, kept = out
    return PeriodicDerivatives(pos, vel, acc, var, noise, kept, periods=m, samples_per_period=p)


@partial(cache.jit, static_argnames=("harmonics",))
def _periodic(x, f0, harmonics, false_alarm):
    """x (M, P, c) -> (q, qd, qdd, var, noise, harmonics) of [`periodic_derivatives`][jaxid.signals.periodic_derivatives]."""
    m, p, _ = x.shape
    X = jnp.fft.rfft(x, axis=1)  # (M, B, c)
    mean = X.mean(axis=0)
    k = jnp.arange(mean.shape[0])
    # Variance of the averaged spectrum and of one sample from the spread (NaN for M = 1).
    inband = (k >= 1) & (k <= (p - 1) // 2)
    if m > 1:
        spread = jnp.sum(jnp.abs(X - mean) ** 2, axis=0) / (m * (m - 1))
        noise = jnp.sum((x - x.mean(axis=0)) ** 2, axis=(0, 1)) / (p * (m - 1))
    elif harmonics is not None and harmonics < (p - 1) // 2:
        # One period of a known band: the bins above it hold white noise only, E|X_k|^2 = P sigma^2.
        out = inband & (k > harmonics)
        level = jnp.sum(jnp.where(out[:, None], jnp.abs(mean) ** 2, 0.0), axis=0) / jnp.sum(out)
        spread, noise = jnp.broadcast_to(level, mean.shape), level / p
    else:
        spread = jnp.full(mean.shape, jnp.nan)
        noise = spread[0]
    if harmonics is None:
        floor = jnp.sum(jnp.where(inband[:, None], spread, 0.0), axis=0) / jnp.sum(inband)
        floor = jnp.maximum(floor, (1e-12 * jnp.max(jnp.abs(mean), axis=0)) ** 2)  # rounding level
        threshold = jnp.log(jnp.sum(inband) / false_alarm) * floor
        K = jnp.max(jnp.where(inband[:, None] & (jnp.abs(mean) ** 2 > threshold), k[:, None], 0), axis=0)
    else:
        K = jnp.full(mean.shape[1], harmonics)
    keep = k[:, None] <= K
    w = 2 * jnp.pi * f0 * k[:, None]
    signals, var = [], []
    for d in range(3):
        D = jnp.where(keep, (1j * w) ** d, 0.0)
        signals.append(jnp.fft.irfft(mean * D, n=p, axis=0))
        gain = jnp.where(k[:, None] == 0, 1.0, 2.0) * jnp.abs(D) ** 2
        var.append(jnp.sum(gain * spread, axis=0) / p**2)
    return (*signals, jnp.stack(var), noise, K)


# ----------------------------------------------------------------------------- differences
@jax.jit
def _diff1(x, dt):
    mid = (x[2:] - x[:-2]) / 2
    first = (-3 * x[0] + 4 * x[1] - x[2]) / 2
    last = (3 * x[-1] - 4 * x[-2] + x[-3]) / 2
    return jnp.concatenate([first[None], mid, last[None]]) / dt


@jax.jit
def _diff2(x, dt):
    mid = x[2:] - 2 * x[1:-1] + x[:-2]
    first = 2 * x[0] - 5 * x[1] + 4 * x[2] - x[3]
    last = 2 * x[-1] - 5 * x[-2] + 4 * x[-3] - x[-4]
    return jnp.concatenate([first[None], mid, last[None]]) / dt**2


def central_diff(x: ArrayLike, dt: float | jax.Array, axis: int = 0) -> jax.Array:
    """First derivative by second-order central differences, second-order one-sided at the
    ends (as ``numpy.gradient(x, dt, edge_order=2)``).

    x: signal, shape (N,) or (N, n) along ``axis``, N >= 3, unit u; dt: sample spacing, s
    (may be traced). Returns shape of x, unit u/s. Exact for quadratics.
    """
    _check_dt(dt)
    x = _signal(x, "x", axis, 3)
    return _along_axis(lambda v: _diff1(v, dt), x, axis)


def velocity_derivatives(
    qd: ArrayLike,
    dt: float | jax.Array,
    window: int,
    polyorder: int = 3,
    axis: int = 0,
    *,
    velocity: str = "smoothed",
) -> tuple[jax.Array, jax.Array]:
    """Velocity and acceleration for the regressor from a logged (noisy) velocity: Savitzky-Golay
    ([`savgol`][jaxid.signals.savgol], ``window`` samples, degree ``polyorder``) on qd, then the central
    difference ([`central_diff`][jaxid.signals.central_diff]) of the smoothed velocity: what a drive logging
    velocity but no acceleration gives, the "naive" pipeline of ``benchmarks/six_dof.py``.

    qd: velocity, shape (N,) or (N, n) along ``axis``, rad/s; dt: sample spacing, s.
    velocity: "smoothed" (the smoothed velocity goes into the regressor) or "raw" (the logged
    velocity as it is, the acceleration still from the smoothed one: the six-DOF article's
    regressor, seed 000, ``build_regressor(q_m, v_m, gradient(savgol(v_m)))``).
    Returns (qd for the regressor, qdd), each shape of qd, rad/s and rad/s^2.
    """
    if velocity not in ("smoothed", "raw"):
        raise ValueError(f"velocity must be 'smoothed' or 'raw', got {velocity!r}")
    qd_s = savgol(qd, window, polyorder, axis=axis)
    return (qd_s if velocity == "smoothed" else jnp.asarray(qd)), central_diff(qd_s, dt, axis=axis)


def _savgol_window(cutoff, fs, polyorder):
    """Odd window whose Savitzky-Golay -3 dB frequency is about ``cutoff``.

    Schafer, "What is a Savitzky-Golay filter?", IEEE Signal Proc. Mag. 28(4), 2011:
    f_3dB / (fs/2) ~= (polyorder + 1) / (3.2 M - 4.6) for window 2M + 1.
    """
    m = ((polyorder + 1) / (cutoff / (fs / 2)) + 4.6) / 3.2
    return 2 * max(math.ceil(m), polyorder // 2 + 1) + 1


def derivatives(
    q: ArrayLike,
    dt: float | jax.Array,
    method: str = "butterworth",
    cutoff: float | ArrayLike | None = None,
    order: int = 4,
    window: int | None = None,
    polyorder: int = 3,
) -> tuple[jax.Array, ...]:
    """Filtered positions, velocities and accelerations from sampled positions.

    method="butterworth" (default): q is low-passed with ``butterworth(q, 1/dt, cutoff,
    order)`` (zero phase); qd is its central difference (``central_diff``) and qdd its
    second-order central second difference (x[i+1] - 2 x[i] + x[i-1]) / dt**2, one-sided
    second order at the ends.
    method="savgol": the three come from one Savitzky-Golay fit (``savgol`` with deriv
    0, 1, 2), degree ``polyorder`` (>= 2) over ``window`` samples.

    Defaults: cutoff = fs/10 (a fifth of Nyquist; set it to a few times the highest
    excitation frequency for noisy data); window (savgol) = the odd window whose -3 dB
    frequency is about ``cutoff`` (Schafer 2011), e.g. 17 samples for polyorder 3.
    A cutoff per joint, shape (n,) for q (N, n), filters (or sizes the window of) each
    joint at its own cutoff.

    Edges: the odd extension keeps q and qd continuous but flips the sign of qdd, and a
    Savitzky-Golay end fit is off-centre, so qdd (and less so qd) is biased over the
    first and last few padlen = 3 * (order + 1) (resp. window // 2) samples; trim them
    before identification.

    q: positions, shape (N,) or (N, n), rad; dt: sample spacing, s (static Python number).
    Returns (q_filtered, qd, qdd), each shape of q, in rad, rad/s, rad/s^2.
    """
    fs = 1.0 / _static_positive(dt, "dt")
    cutoff = fs / 10 if cutoff is None else cutoff
    if method == "butterworth":
        qf = butterworth(q, fs, cutoff, order)
        return qf, central_diff(qf, dt), _along_axis(lambda v: _diff2(v, dt), qf, 0)
    if method == "savgol":
        polyorder = _static_int(polyorder, "polyorder", 2)
        if window is None and np.ndim(cutoff) == 1:  # a window per joint: the joints one by one
            q = _signal(q, "q", 0, 1)
            if q.ndim != 2 or np.shape(cutoff) != (q.shape[1],):
                raise ValueError(
                    f"a cutoff per joint needs q (N, n) and cutoff (n,); got {q.shape}, {np.shape(cutoff)}"
                )
            cols = [
                derivatives(q[:, j], dt, method, float(c), order, None, polyorder)
                for j, c in enumerate(np.ravel(cutoff))
            ]
            return tuple(jnp.stack([c[k] for c in cols], axis=1) for k in range(3))
        if window is None:
            window = _savgol_window(_static_positive(cutoff, "cutoff"), fs, polyorder)
        return tuple(savgol(q, window, polyorder, d, dt) for d in range(3))
    raise ValueError(f"method must be 'butterworth' or 'savgol', got {method!r}.")


# ----------------------------------------------------------------------------- alignment
# Time delays and offsets between two records of one motion. The estimate is the least-squares
# shift between the two signals (Viola & Walker, "A spline-based algorithm for continuous time-delay
# estimation using sampled data", IEEE Trans. UFFC 52(1), 2005): minimise
#     sum_k w_k sum_c (y_c[k] - a_c - b_c x_c(k - d))**2
# over the delay d (samples), per-channel offsets a_c and (for signals of other scale) gains b_c, with
# x between samples its natural cubic spline, on the samples where both are measured. A peak of the
# cross-correlation is not this minimum: over a window holding a few periods of a low-frequency
# signal, the overlap of x and y shrinking with the lag and the trends removed pull the peak towards
# zero by a sizeable fraction of a sample (a 3 ms delay at 500 Hz read as 0.02-1.1 ms); the least-
# squares shift has no such bias. The correlation peak only starts Gauss-Newton steps on d (a, b
# eliminated by linear least squares at each d: variable projection, Golub & Pereyra, SIAM J. Numer.
# Anal. 10(2), 1973), which converge from anywhere within about a quarter period of the highest
# frequency the signals carry.
#
# Both signals first pass the same zero-phase low-pass, whose edge is set above the band the signals
# occupy (read from their spectrum): it leaves the delay unchanged, while the broadband noise it
# removes would otherwise make the cost rough at the scale of a sample (each noise sample
# interpolated at the shift's fraction), with local minima that trap the steps near the correlation's
# biased start. The filter is applied to the even extension of each record (continuous at the ends);
# the samples within DELAY_EDGE filter widths of an end, where the extension differs between x and
# y, are left out of the fit.

#: Samples of each end left out of a delay fit, in widths (standard deviations) of the Gaussian
#: impulse response of the pre-filter: exp(-4**2 / 2) ~ 3e-4 of an end's artefact remains.
DELAY_EDGE = 4.0
#: A block of the spectrum (16 bins averaged) belongs to the signals' band when its power exceeds
#: this many times the median block of the upper half of the band (the noise floor): averaged
#: white noise exceeds 3x its median with a probability below 1e-6 per block.
BAND_FLOOR = 10.0
#: The pre-filter's Gaussian edge (one standard deviation of its gain), as a multiple of the band edge.
BAND_MARGIN = 2.0


def _spline_curvature(t, y):
    """Second derivatives at the knots of the natural cubic spline through (t, y): t (N,) strictly
    increasing, N >= 3, y (N, c) -> (N, c) (de Boor, "A practical guide to splines", 1978, ch. IV)."""
    h = jnp.diff(t)
    slope = jnp.diff(y, axis=0) / h[:, None]
    rhs = 6.0 * (slope[1:] - slope[:-1])
    diag = 2.0 * (h[:-1] + h[1:])
    lower = h[:-1].at[0].set(0.0)
    upper = h[1:].at[-1].set(0.0)
    inner = lax.linalg.tridiagonal_solve(lower, diag, upper, rhs)
    zero = jnp.zeros((1, y.shape[1]), y.dtype)
    return jnp.concatenate([zero, inner, zero])


def _spline_at(t, y, m, s, i):
    """Value and slope at s (K,) of the cubic spline (t, y, curvatures m), s in interval i (K,)."""
    h = (t[i + 1] - t[i])[:, None]
    a = (t[i + 1][:, None] - s[:, None]) / h
    b = 1.0 - a
    value = a * y[i] + b * y[i + 1] + ((a**3 - a) * m[i] + (b**3 - b) * m[i + 1]) * h**2 / 6.0
    slope = (y[i + 1] - y[i]) / h + ((3.0 * b**2 - 1.0) * m[i + 1] - (3.0 * a**2 - 1.0) * m[i]) * h / 6.0
    return value, slope


@cache.jit
def _resample(t, y, s):
    i = jnp.clip(jnp.searchsorted(t, s, side="right") - 1, 0, t.shape[0] - 2)
    return _spline_at(t, y, _spline_curvature(t, y), s, i)[0]


def _increasing(t: ArrayLike, name: str, min_len: int) -> jax.Array:
    t = _signal(t, name, 0, min_len)
    if t.ndim != 1:
        raise ValueError(f"{name} must be 1-D time stamps, got shape {t.shape}.")
    if not isinstance(t, jax.core.Tracer) and not np.all(np.diff(np.asarray(t)) > 0):
        raise ValueError(f"{name} must be strictly increasing; sort the samples and drop repeated stamps.")
    return t


def spline_resample(t: ArrayLike, y: ArrayLike, t_new: ArrayLike) -> jax.Array:
    """The natural cubic spline through the samples (t, y), evaluated at t_new.

    Resamples a record onto other time stamps (a jittered or other-rate log onto a reference's),
    exactly at the knots. Points outside [t[0], t[-1]] continue the end cubics: keep t_new within.
    t: time stamps, shape (N,), s, strictly increasing, N >= 3; y: samples, shape (N,) or (N, ...), any
    unit; t_new: shape (K,), s. Returns shape (K,) + y.shape[1:], the unit of y.
    """
    t = _increasing(t, "t", 3)
    y = _signal(y, "y", 0, 3)
    t_new = _signal(t_new, "t_new", 0, 1)
    if y.shape[0] != t.shape[0] or t_new.ndim != 1:
        raise ValueError(f"y needs one sample per time stamp and t_new must be 1-D, got {y.shape}, {t_new.shape}.")
    out = _resample(t, y.reshape(y.shape[0], -1), t_new)
    return out.reshape(t_new.shape + y.shape[1:])


def _band_edge(z):
    """Upper edge, cycles/sample, of the band of z (N, c): the highest 16-bin block of the channels'
    summed Hann-windowed periodogram (means and linear trends removed) above BAND_FLOOR x the median
    block of the upper half; inf (no filter) for records too short to tell signal from noise."""
    n = z.shape[0]
    bins = n // 2 + 1
    width = 16
    if bins < 8 * width:
        return jnp.inf
    k = jnp.arange(n, dtype=float) - (n - 1) / 2
    z = z - z.mean(0)
    z = z - k[:, None] * (k @ z) / (k @ k)  # a trend is not a band: it leaks into every bin
    power = jnp.sum(jnp.abs(jnp.fft.rfft(z * jnp.hanning(n)[:, None], axis=0)) ** 2, axis=1)
    blocks = bins // width
    power = power[: blocks * width].reshape(blocks, width).mean(1)
    top = (jnp.arange(blocks) + 1.0) * width / n
    floor = jnp.median(power[blocks // 2 :])
    return jnp.max(jnp.where(power > BAND_FLOOR * floor, top, 0.0))


def _band_filter(x, y):
    """x (M, c), y (N, c) through the same zero-phase Gaussian low-pass above their joint band
    (applied to each record's even extension); and the filter's width in samples."""
    edge = jnp.maximum(_band_edge(x), _band_edge(y))
    sigma_f = BAND_MARGIN * edge  # cycles/sample; inf: no filter

    def apply(z):
        mean = z.mean(0)
        ext = jnp.concatenate([z - mean, (z - mean)[::-1]], axis=0)
        f = jnp.arange(ext.shape[0] // 2 + 1) / ext.shape[0]
        gain = jnp.exp(-0.5 * (f / sigma_f) ** 2)
        return jnp.fft.irfft(jnp.fft.rfft(ext, axis=0) * gain[:, None], ext.shape[0], axis=0)[: z.shape[0]] + mean

    width = jnp.where(jnp.isfinite(sigma_f), 1.0 / (2 * jnp.pi * sigma_f), 0.0)
    return apply(x), apply(y), width


def _correlation_lag(x, y):
    """The integer lag k maximising sum_c sum_m y[m] x[m - k] (means removed, zero padded: linear,
    not circular), x (M, c), y (N, c); a float."""
    length = x.shape[0] + y.shape[0]
    spectrum = jnp.fft.rfft(y - y.mean(0), length, axis=0) * jnp.conj(jnp.fft.rfft(x - x.mean(0), length, axis=0))
    r = jnp.fft.irfft(spectrum.sum(1), length)  # lag k at index k modulo `length`
    k = jnp.argmax(r)
    return jnp.where(k >= y.shape[0], k - length, k).astype(float)


#: Gauss-Newton steps of a shift fit stop when a step moves d by less than this, in samples.
SHIFT_TOL = 1e-7
SHIFT_STEPS = 60
_STEP_SCALES = (1.0, 0.5, 0.25, 0.125, 1 / 16, 1 / 32, 0.0)


def _shift_fit(x, y, d0, x_len, margin, gain):
    """d (samples) minimising sum_k w_k sum_c (y[k] - a_c - b_c x(k - d))**2 (b_c = 1 unless gain),
    x (M, c) on samples 0..M-1 of which the first x_len (traced) are measured, y (N, c); the samples
    within ``margin`` of an end of either record are left out. Gauss-Newton on d with the best of a few
    step lengths (never a larger cost), a and b by linear least squares at each d."""
    t = jnp.arange(x.shape[0], dtype=float)
    curv = _spline_curvature(t, x)
    k = jnp.arange(y.shape[0], dtype=float)
    in_y = (k >= margin) & (k <= y.shape[0] - 1 - margin)

    def project(d):
        s = k - d
        w = (in_y & (s >= margin) & (s <= x_len - 1 - margin)).astype(float)[:, None]
        v, dv = _spline_at(t, x, curv, s, jnp.clip(jnp.floor(s).astype(int), 0, x.shape[0] - 2))
        n = jnp.maximum(w.sum(), 1.0)
        mv, my = (w * v).sum(0) / n, (w * y).sum(0) / n
        if gain:
            b = (w * (v - mv) * (y - my)).sum(0) / jnp.maximum((w * (v - mv) ** 2).sum(0), jnp.finfo(float).tiny)
        else:
            b = jnp.ones(v.shape[1])
        r = (y - my) - b * (v - mv)
        return (w * r**2).sum() / n, r, b * dv, w  # dr/dd = b x'(k - d)

    cost = jax.vmap(lambda d: project(d)[0])
    scales = jnp.asarray(_STEP_SCALES)

    def step(state):
        d, _, i = state
        _, r, J, w = project(d)
        move = -(w * r * J).sum() / jnp.maximum((w * J * J).sum(), jnp.finfo(float).tiny)
        move = jnp.clip(move, -x.shape[0] / 4, x.shape[0] / 4)
        candidates = d + scales * move
        new = candidates[jnp.argmin(cost(candidates))]
        return new, jnp.abs(new - d), i + 1

    def more(state):
        _, moved, i = state
        return (moved > SHIFT_TOL) & (i < SHIFT_STEPS)

    return lax.while_loop(more, step, (d0, jnp.inf, 0))[0]


@partial(cache.jit, static_argnames=("gain",))
def _delay_samples(x, y, x_len, gain):
    """Delay of y (N, c) relative to x (M, c) in samples, y[k] ~= x(k - d): band filter, correlation
    peak, least-squares shift (the comment above)."""
    xf, yf, width = _band_filter(x, y)
    return _shift_fit(xf, yf, _correlation_lag(xf, yf), x_len, DELAY_EDGE * width, gain)


def estimate_delay(x: ArrayLike, y: ArrayLike, dt: float | jax.Array) -> jax.Array:
    """Time delay of y relative to x: y(t) ~= a + b x(t - delay).

    A positive delay means y lags x (shift y earlier by ``delay`` to align it with x). The
    estimate is the least-squares shift (offsets a and gains b per channel fitted with it) between
    the two records, x interpolated by its cubic spline, after the same zero-phase low-pass above
    their band on both; Gauss-Newton steps from the cross-correlation peak (Knapp & Carter, "The
    generalized correlation method for estimation of time delay", IEEE Trans. ASSP 24(4), 1976),
    whose bias on low-frequency records it removes (the comment above ``DELAY_EDGE``; Viola & Walker,
    IEEE Trans. UFFC 52(1), 2005). Sub-sample: e.g. within 2 % of a 1-10 ms delay between position
    records of a 0.05 Hz, 5-harmonic excitation at 500 Hz with 1e-4 rad noise; with noise, its
    spread is that of the signals' slope against their noise, sigma_d^2 ~ 2 sigma^2 / sum x'^2.
    The samples within about DELAY_EDGE pre-filter widths of the ends, and those without a
    partner at the delay, do not enter the fit.

    x, y: signals, shape (N,) or (N, c) (c channels sharing one delay), N >= 3, each channel in
    one unit; dt: sample spacing, s (may be traced). Returns the delay, a scalar, s.
    """
    _check_dt(dt)
    x = _signal(x, "x", 0, 3)
    y = _signal(y, "y", 0, 3)
    if x.shape != y.shape or x.ndim > 2:
        raise ValueError(f"x and y must be signals of equal length and channels, got shapes {x.shape} and {y.shape}.")
    x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    return _delay_samples(x2, y2, float(x.shape[0]), gain=True) * dt


@cache.jit
def _offset(t_ref, ref, t_other, other):
    dt = (t_ref[-1] - t_ref[0]) / (t_ref.shape[0] - 1)
    grid = jnp.arange(t_ref.shape[0]) * dt
    on_ref = _resample(t_ref, ref, t_ref[0] + grid)
    # The other run on the reference's step from its first stamp; past its last stamp (a slower
    # clock or fewer samples) held at its last value and left out of the fit (x_len).
    span = t_other[-1] - t_other[0]
    on_other = _resample(t_other, other, t_other[0] + jnp.minimum(jnp.arange(t_other.shape[0]) * dt, span))
    d = _delay_samples(on_other, on_ref, span / dt + 1.0, gain=False)
    return t_other[0] - t_ref[0] - d * dt


def estimate_offset(t_reference: ArrayLike, reference: ArrayLike, t_other: ArrayLike, other: ArrayLike) -> jax.Array:
    """The time offset of a second record of one motion: other(t + offset) ~= reference(t) + a.

    For two runs of one trajectory (e.g. with and without a payload) logged with their own clocks:
    both are resampled (cubic spline) onto the reference's mean sample step, and the offset is the
    least-squares shift of [`estimate_delay`][jaxid.signals.estimate_delay] with all channels jointly (the sum of their
    squared differences; per-channel constant offsets a fitted, no gains), sub-sample, started at
    the peak of the cross-correlation, which on periodic motion picks the shift with the most
    overlap. Jittered stamps and records of different lengths are fine; the two clocks must run at
    the same rate (no drift is fitted).

    t_reference: stamps, shape (N,), s, strictly increasing; reference: shape (N,) or (N, c);
    t_other: shape (M,), s; other: shape (M,) or (M, c), the same c and units (e.g. rad).
    Returns the offset, a scalar, s, on the stamps as given (subtract each record's first stamp
    to get the offset between starts).
    """
    t_reference = _increasing(t_reference, "t_reference", 3)
    t_other = _increasing(t_other, "t_other", 3)
    reference = _signal(reference, "reference", 0, 3)
    other = _signal(other, "other", 0, 3)
    if reference.shape[0] != t_reference.shape[0] or other.shape[0] != t_other.shape[0]:
        raise ValueError(
            f"each record needs one sample per time stamp: reference {reference.shape} on {t_reference.shape[0]} "
            f"stamps, other {other.shape} on {t_other.shape[0]}."
        )
    if reference.shape[1:] != other.shape[1:] or reference.ndim > 2:
        raise ValueError(
            f"reference and other must have the same channels, got shapes {reference.shape} and {other.shape}."
        )
    ref2, other2 = reference.reshape(reference.shape[0], -1), other.reshape(other.shape[0], -1)
    return _offset(t_reference, ref2, t_other, other2)
