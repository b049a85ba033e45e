"""jaxid.signals: filters against scipy, exactness identities, noise statistics, delays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.signal
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from jax.test_util import check_grads
from strategies import bounded

import jaxid  # noqa: F401  (float64)
from jaxid import signals as S

FS = 100.0
DT = 1 / FS


def _close(y, ref, tol=1e-10):
    """|y - ref| <= tol relative to the reference's scale (absolute for O(1) signals)."""
    ref = np.asarray(ref)
    err = np.abs(np.asarray(y) - ref).max()
    assert err <= tol * max(1.0, np.abs(ref).max()), err


@pytest.fixture(scope="module")
def noisy():
    """Three smooth sinusoids with noise, shape (400, 3), O(1)."""
    rng = np.random.default_rng(0)
    t = np.arange(400) * DT
    clean = np.stack([np.sin(2 * np.pi * f * t + p) for f, p in [(0.7, 0), (1.3, 1), (2.1, 2)]], 1)
    return clean + 0.1 * rng.standard_normal(clean.shape)


#: Spikes and steps to add to ``noisy``: a constant fill with a few entries drawn, in [-10, 10].
SPIKES = arrays(np.float64, (400, 3), elements=st.floats(-10.0, 10.0, allow_subnormal=False))


@pytest.mark.parametrize("order,cutoff", [(1, 20.0), (2, 12.0), (4, 5.0), (5, 8.0)])
@given(spikes=SPIKES)
def test_butterworth_matches_filtfilt(noisy, spikes, order, cutoff):
    noisy = noisy + spikes
    b, a = scipy.signal.butter(order, cutoff / (FS / 2))
    _close(S.butterworth(noisy, FS, cutoff, order), scipy.signal.filtfilt(b, a, noisy, axis=0))
    # 1-D input and time along another axis
    _close(S.butterworth(noisy[:, 0], FS, cutoff, order), scipy.signal.filtfilt(b, a, noisy[:, 0]))
    _close(S.butterworth(noisy.T, FS, cutoff, order, axis=1), scipy.signal.filtfilt(b, a, noisy.T))


def test_butterworth_jit_and_grad(noisy):
    f = jax.jit(lambda x: S.butterworth(x, FS, 5.0))
    _close(f(noisy), S.butterworth(noisy, FS, 5.0))
    check_grads(lambda x: S.butterworth(x, FS, 10.0, order=2), (jnp.asarray(noisy[:40, 0]),), 1)


@pytest.mark.parametrize("window,order,deriv", [(5, 3, 0), (11, 2, 1), (21, 4, 2), (15, 3, 3), (9, 5, 1)])
@given(spikes=SPIKES)
def test_savgol_matches_scipy(noisy, spikes, window, order, deriv):
    noisy = noisy + spikes
    ref = scipy.signal.savgol_filter(noisy, window, order, deriv, delta=DT, axis=0, mode="interp")
    _close(S.savgol(noisy, window, order, deriv, dt=DT), ref)


@given(spikes=SPIKES, c=bounded((4, 2)))
def test_five_point_cubic_is_the_cubic_least_squares_fit(noisy, spikes, c):
    noisy = noisy + spikes
    _close(S.five_point_cubic(noisy), S.savgol(noisy, 5, 3))
    t = np.linspace(-1, 2, 30)
    cubic = c[0] + c[1] * t[:, None] + c[2] * t[:, None] ** 2 + c[3] * t[:, None] ** 3
    # a cubic passes unchanged at every sample, ends included, however many passes
    _close(S.five_point_cubic(cubic, k=1), cubic, 1e-13)
    _close(S.five_point_cubic(cubic, k=4), cubic, 1e-13)


@pytest.mark.parametrize("axis", [0, 1])
def test_window_smoothers_on_the_host_equal_the_traced_ones(noisy, axis):
    """savgol and five_point_cubic compute concrete signals with numpy (no program per record
    length) and traced ones with jax.numpy (inside a jit, a traced dt too): the same numbers, and
    jax arrays either way; along either axis."""
    x = noisy if axis == 0 else noisy.T
    dt = jnp.asarray(DT)
    host = [S.savgol(x, 11, 2, 1, dt=DT, axis=axis), S.five_point_cubic(x, k=3, axis=axis)]
    traced = jax.jit(lambda x, dt: [S.savgol(x, 11, 2, 1, dt=dt, axis=axis), S.five_point_cubic(x, k=3, axis=axis)])(
        x, dt
    )
    for h, t in zip(host, traced):
        assert isinstance(h, jax.Array) and h.shape == x.shape
        _close(h, t, 1e-12)
    # a concrete signal with a traced dt (differentiating with respect to the sample time)
    _close(jax.jit(lambda dt: S.savgol(x, 11, 2, 1, dt=dt, axis=axis))(dt), host[0], 1e-12)


def test_five_point_cubic_reduces_white_noise():
    e = np.random.default_rng(1).standard_normal((20000, 2))
    var = [float(np.var(S.five_point_cubic(e, k=k)[10:-10])) for k in (1, 2, 4)]
    # one pass: variance factor sum(c^2) = 595/35^2 = 0.486 in the interior
    assert var[0] == pytest.approx(595 / 35**2, rel=0.05)
    assert var[2] < var[1] < var[0]


def test_period_average_divides_noise_std_by_sqrt_m():
    m, p = 64, 250
    rng = np.random.default_rng(2)
    periodic = np.sin(2 * np.pi * np.arange(p) / p)[:, None] * np.array([1.0, 2.0, 0.5])
    x = np.tile(periodic, (m, 1)) + rng.standard_normal((m * p, 3))
    avg = np.asarray(S.period_average(x, p))
    assert avg.shape == (p, 3)
    # 750 residual samples: the std estimate is good to ~2.6 % (1 sigma)
    assert np.std(avg - periodic) * np.sqrt(m) == pytest.approx(1.0, rel=0.1)
    _close(S.period_average(x[:, 0], p), avg[:, 0])


@given(c=bounded((3, 2), -5.0, 5.0))
def test_central_diff_exact_on_quadratics(c):
    t = np.linspace(0, 1, 11)[:, None]
    x = c[0] + c[1] * t + c[2] * t**2
    dt = t[1, 0] - t[0, 0]
    _close(S.central_diff(x, dt), c[1] + 2 * c[2] * t, 1e-12)
    # dt may be traced
    _close(jax.jit(S.central_diff)(x, dt), np.gradient(x, dt, axis=0, edge_order=2), 1e-12)


@pytest.mark.parametrize("method", ["butterworth", "savgol"])
def test_derivatives_of_a_sinusoid(method):
    t = np.arange(2000) * DT
    w = 2 * np.pi * np.array([0.3, 0.5])
    q = np.sin(w * t[:, None])
    noise = 1e-5 * np.random.default_rng(3).standard_normal(q.shape)
    qf, qd, qdd = S.derivatives(q + noise, DT, method=method)
    inner = slice(50, -50)  # end effects are documented; trim them

    def rel(a, b):
        return np.abs(np.asarray(a)[inner] - b[inner]).max() / np.abs(b).max()

    assert rel(qf, q) < 1e-4
    assert rel(qd, w * np.cos(w * t[:, None])) < 1e-3
    assert rel(qdd, -(w**2) * np.sin(w * t[:, None])) < 1e-2


@pytest.mark.parametrize("delay", [3.37, -7.81])
def test_estimate_delay_recovers_fractional_delay(delay):
    n = 3000
    k = np.arange(n)
    freqs = np.array([0.0031, 0.0127, 0.0213, 0.047, 0.083])  # cycles / sample
    phases = np.array([0.3, 1.1, 2.0, 4.4, 5.5])

    def signal(s):
        return np.sin(2 * np.pi * freqs * s[:, None] + phases).sum(1)

    x, y = signal(k), signal(k - delay)  # y(t) = x(t - delay)
    assert float(S.estimate_delay(x, y, 1.0)) == pytest.approx(delay, abs=0.05)
    assert float(S.estimate_delay(x, y, DT)) == pytest.approx(delay * DT, abs=0.05 * DT)
    assert float(S.estimate_delay(y, x, 1.0)) == pytest.approx(-delay, abs=0.05)


def _excitation(t, seed, joints=1, f0=0.05, harmonics=5):
    """A Fourier excitation of base frequency f0 Hz: positions (N, joints), rad, a torque-like mix
    10 q + 30 qdd + 5 (N m) and that torque's time derivative (N m/s)."""
    rng = np.random.default_rng(seed)
    a, b = 0.5 * rng.normal(size=(2, joints, harmonics))
    k = np.arange(1, harmonics + 1)
    w = 2 * np.pi * f0 * k
    s, c = np.sin(t[:, None] * w), np.cos(t[:, None] * w)
    q = s @ (a / k).T + c @ (b / k).T + 0.3
    qd = c @ (a * w / k).T - s @ (b * w / k).T
    qdd, qddd = -(s @ (a * w**2 / k).T + c @ (b * w**2 / k).T), -(c @ (a * w**3 / k).T - s @ (b * w**3 / k).T)
    return q, 10 * q + 30 * qdd + 5, 10 * qd + 30 * qddd


DELAYS_MS = (1.0, -1.0, 3.0, -3.0, 10.0, -10.0)


@pytest.mark.parametrize("fs,periods", [(500.0, 1), (500.0, 3), (1000.0, 2)])
def test_estimate_delay_is_unbiased_on_identification_band_positions(fs, periods):
    # 0.05 Hz base, 5 harmonics, 1-3 periods, encoders with 1e-4 rad noise: the cross-correlation peak
    # read a 3 ms delay at 500 Hz as 0.02-1.1 ms (its window bias); the least-squares shift is within 5 %.
    t = np.arange(round(periods / 0.05 * fs)) / fs
    rng = np.random.default_rng(int(fs) + periods)
    for i, delay in enumerate(np.asarray(DELAYS_MS) * 1e-3):
        x = _excitation(t, i)[0][:, 0] + 1e-4 * rng.standard_normal(t.size)
        y = _excitation(t - delay, i)[0][:, 0] + 1e-4 * rng.standard_normal(t.size)
        assert float(S.estimate_delay(x, y, 1 / fs)) == pytest.approx(delay, rel=0.05)


def test_estimate_delay_on_torques_is_unbiased_and_as_precise_as_the_noise_allows():
    # Torque records (1 % noise) carry a delay to the precision their slope against the noise allows
    # (Cramer-Rao: var ~= 2 sigma^2 / sum tau'^2, ~0.1 ms here): the estimates scatter around the true
    # delay within 4 of that, without the correlation peak's pull towards zero, and without noise the
    # delay is exact.
    fs = 500.0
    t = np.arange(round(2 / 0.05 * fs)) / fs
    rng = np.random.default_rng(11)
    for i, delay in enumerate((3e-3, -3e-3, 10e-3)):
        _, x, dx = _excitation(t, 20 + i)
        _, y, _ = _excitation(t - delay, 20 + i)
        assert float(S.estimate_delay(x[:, 0], y[:, 0], 1 / fs)) == pytest.approx(delay, rel=1e-3)
        sigma = 0.01 * x.std()
        bound = np.sqrt(2 * sigma**2 / np.sum(dx**2))
        noisy = [v[:, 0] + sigma * rng.standard_normal(t.size) for v in (x, y)]
        assert abs(float(S.estimate_delay(*noisy, 1 / fs)) - delay) < 4 * bound
    assert bound < 2e-4  # the bound is what limits, not the method


def test_estimate_delay_channels_share_one_delay_and_it_jits():
    fs = 200.0
    t = np.arange(4000) / fs
    x, y = _excitation(t, 3, joints=3)[0], _excitation(t - 7e-3, 3, joints=3)[0]
    y = 2.0 * y - 1.0  # a gain and an offset per channel are fitted with the delay
    assert float(S.estimate_delay(x, y, 1 / fs)) == pytest.approx(7e-3, rel=1e-4)
    jitted = jax.jit(S.estimate_delay)(jnp.asarray(x), jnp.asarray(y), jnp.asarray(1 / fs))
    assert float(jitted) == pytest.approx(7e-3, rel=1e-4)


@pytest.mark.parametrize("fs", [100.0, 500.0])
def test_estimate_offset_aligns_jittered_runs_started_at_another_phase(fs):
    # Two runs of one periodic trajectory (20 s period, 2 periods, 6 joints): stamps jittered by 3 % of
    # the step, the second run started 0.3 period + a fraction of a sample later, on another clock,
    # and shorter. The offset is found to a hundredth of a sample.
    dt, period = 1 / fs, 20.0
    rng = np.random.default_rng(int(fs))

    def stamps(n):
        return np.sort(np.arange(n) * dt + 0.03 * dt * rng.standard_normal(n))

    n = round(2 * period * fs)
    t_ref, t_other = stamps(n), stamps(n - 137)
    for start in (0.37 * dt, 0.3 * period + 0.37 * dt, -0.2 * period - 0.61 * dt):
        ref = _excitation(t_ref, 5, joints=6)[0] + 1e-4 * rng.standard_normal((n, 6))
        other = _excitation(t_other + start, 5, joints=6)[0] + 1e-4 * rng.standard_normal((n - 137, 6))
        offset = float(S.estimate_offset(t_ref, ref, t_other + 1e3, other))
        # other(t + offset) = ref(t): a sample of ``other`` at stamp s is at trajectory time s - 1e3 + start
        assert offset == pytest.approx(1e3 - start, abs=0.01 * dt)


def test_spline_resample_is_exact_at_the_knots_and_cubic_between():
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 10, 200))
    y = np.stack([np.sin(t), np.cos(0.5 * t)], 1)
    _close(S.spline_resample(t, y, t), y, 1e-12)
    mid = 0.5 * (t[20:-21] + t[21:-20])  # the natural end conditions err near the ends
    # de Boor's bound for the complete cubic spline, 5/384 h^4 max|4th derivative|, room for uneven steps
    bound = 4 * 5 / 384 * np.diff(t).max() ** 4
    _close(S.spline_resample(t, y, mid), np.stack([np.sin(mid), np.cos(0.5 * mid)], 1), bound)
    assert S.spline_resample(t, y[:, 0], mid).shape == mid.shape


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda x: S.butterworth(x, FS, 60.0), "Nyquist"),
        (lambda x: S.butterworth(x[:10], FS, 5.0), "at least"),
        (lambda x: S.butterworth(x, FS, 5.0, order=0), "order"),
        (lambda x: S.butterworth(x, -1.0, 5.0), "fs"),
        (lambda x: S.butterworth(np.where(np.arange(400)[:, None] == 7, np.nan, x), FS, 5.0), "NaN"),
        (lambda x: S.savgol(x, 10, 3), "odd"),
        (lambda x: S.savgol(x, 5, 5), "smaller"),
        (lambda x: S.savgol(x[:4], 5, 3), "at least"),
        (lambda x: S.five_point_cubic(x, k=0), "k must"),
        (lambda x: S.period_average(x, 300), "trim"),
        (lambda x: S.central_diff(x, 0.0), "dt"),
        (lambda x: S.central_diff(x, DT, axis=2), "axis"),
        (lambda x: S.central_diff(1.0, DT), "scalar"),
        (lambda x: S.derivatives(x, DT, method="spline"), "method"),
        (lambda x: S.estimate_delay(x[:, 0], x[:-1, 0], DT), "equal length"),
        (lambda x: S.estimate_offset(np.arange(400.0)[::-1], x, np.arange(400.0), x), "strictly increasing"),
        (lambda x: S.estimate_offset(np.arange(400.0), x, np.arange(400.0), x[:, :2]), "same channels"),
        (lambda x: S.estimate_offset(np.arange(399.0), x, np.arange(400.0), x), "one sample per time stamp"),
        (lambda x: S.spline_resample(np.arange(399.0), x, np.arange(3.0)), "one sample per time stamp"),
        (lambda x: S.periodic_derivatives(x, FS, 0.2), "shorter than one period"),
        (lambda x: S.periodic_derivatives(x, FS, 0.3), "0.333 samples off"),
        (lambda x: S.periodic_derivatives(x, FS, 0.4), "at least 2 periods"),
        (lambda x: S.periodic_derivatives(x, FS, 0.4, harmonics=200), "Nyquist"),
    ],
)
def test_bad_input_raises(noisy, call, match):
    with pytest.raises(ValueError, match=match):
        call(noisy)


# ----------------------------------------------------------------------------- periodic
F0, P_PER = 0.5, 200  # 2 s periods at FS: 200 samples each


def _fourier(t, seed=0, harmonics=5):
    """A band-limited periodic signal of base frequency F0 and its exact derivatives, (N, 2)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, harmonics, 2))
    w = 2 * np.pi * F0 * np.arange(1, harmonics + 1)
    c, s = np.cos(np.outer(t, w)), np.sin(np.outer(t, w))
    return 0.3 + c @ a + s @ b, (c * w) @ b - (s * w) @ a, -(c * w**2) @ a - (s * w**2) @ b


@pytest.mark.parametrize("harmonics", [None, 5, 40])
@given(seed=st.integers(0, 2**32 - 1))
def test_periodic_derivatives_exact_on_band_limited_signal(harmonics, seed):
    # 4 periods and the closing sample (as `jaxid excite` writes them), which is ignored
    q, qd, qdd = _fourier(np.arange(4 * P_PER + 1) * DT, seed)
    r = S.periodic_derivatives(q, FS, F0, harmonics=harmonics)
    assert (r.periods, r.samples_per_period) == (4, P_PER)
    for est, ref in zip(r[:3], (q, qd, qdd)):
        _close(est, ref[:P_PER], 1e-10)
    if harmonics is None:  # noise-free: the bandwidth is where the signal ends
        assert np.all(np.asarray(r.harmonics) == 5)
    _close(S.periodic_derivatives(q[:, 1], FS, F0, 5).qdd, qdd[:P_PER, 1], 1e-10)


def test_periodic_derivatives_noise_estimates():
    q, qd, qdd = _fourier(np.arange(8 * P_PER) * DT)
    sigma = 1e-2
    errors, estimates, noise = [], [], []
    for seed in range(4):
        noisy = q + sigma * np.random.default_rng(seed).standard_normal(q.shape)
        # the bandwidth from the noise floor is the signal's
        assert np.all(np.asarray(S.periodic_derivatives(noisy, FS, F0).harmonics) == 5)
        # 40 harmonics kept: 81 noisy degrees of freedom per joint to compare the estimates on
        r = S.periodic_derivatives(noisy, FS, F0, harmonics=40)
        errors.append([np.mean((np.asarray(e) - x[:P_PER]) ** 2, axis=0) for e, x in zip(r[:3], (q, qd, qdd))])
        estimates.append(np.asarray(r.var))
        noise.append(np.asarray(r.noise))
    # the per-sample noise variance from 7 x 200 degrees of freedom per joint: within a few %
    assert np.mean(noise) / sigma**2 == pytest.approx(1.0, rel=0.05)
    # the variance left in q, qd, qdd against the actual squared error (both noisy: a factor 1.5)
    ratio = np.mean(estimates, axis=0) / np.mean(errors, axis=0)
    assert np.all((ratio > 1 / 1.5) & (ratio < 1.5)), ratio
    # averaging 8 periods and keeping 81 of 200 bins leaves about 81 / 200 / 8 of a sample's variance
    assert np.mean(estimates, axis=0)[0] == pytest.approx(np.full(2, sigma**2 * 81 / 200 / 8), rel=0.2)


def test_periodic_derivatives_noise_from_one_period():
    # One period of a known band: the bins above the 5 harmonics hold the noise alone.
    q, qd, qdd = _fourier(np.arange(P_PER) * DT)
    sigma = 1e-2
    noise, ratio = [], []
    for seed in range(4):
        noisy = q + sigma * np.random.default_rng(seed).standard_normal(q.shape)
        r = S.periodic_derivatives(noisy, FS, F0, harmonics=5)
        noise.append(np.asarray(r.noise))
        ratio.append(
            np.asarray(r.var)
            / np.array([np.mean((np.asarray(e) - x) ** 2, axis=0) for e, x in zip(r[:3], (q, qd, qdd))])
        )
    # 94 noise bins per joint and seed: the per-sample variance within a few %
    assert np.mean(noise) / sigma**2 == pytest.approx(1.0, rel=0.1)
    # the variance left on q, qd, qdd against the squared error (11 noisy degrees of freedom each)
    assert np.all((np.mean(ratio, axis=0) > 0.5) & (np.mean(ratio, axis=0) < 2.0))
    # no bin above the band: no estimate
    assert np.all(np.isnan(np.asarray(S.periodic_derivatives(q, FS, F0, harmonics=99).noise)))


def test_velocity_derivatives_exact_on_a_quadratic_velocity():
    """A cubic Savitzky-Golay fit reproduces a quadratic, and the central difference of a
    quadratic is exact: qd = 1 + 2 t - 3 t^2 gives itself and qdd = 2 - 6 t."""
    t = np.arange(200) * DT
    qd = np.stack([1 + 2 * t - 3 * t**2, -(t**2)], axis=1)
    qd_s, qdd = S.velocity_derivatives(qd, DT, 31, 3)
    _close(qd_s, qd)
    _close(qdd, np.stack([2 - 6 * t, -2 * t], axis=1), 1e-8)
