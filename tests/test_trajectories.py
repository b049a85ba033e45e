"""jaxid.excitation.trajectories: analytic derivatives, boundary conditions, periodicity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.trajectories import fourier, fourier_period, multisine, random_multisine

N_JOINTS, H = 3, 5
OMEGA = 2 * np.pi * 0.1


@pytest.fixture(scope="module")
def coeffs():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, N_JOINTS, H))
    return a, b, rng.normal(size=N_JOINTS)


def _finite_difference_check(traj, t, h=1e-5):
    """qd and qdd equal the central differences of q and qd."""
    q, qd, qdd = traj(t)
    qp, qdp, _ = traj(t + h)
    qm, qdm, _ = traj(t - h)
    np.testing.assert_allclose((qp - qm) / (2 * h), qd, atol=1e-7 * np.abs(qd).max())
    np.testing.assert_allclose((qdp - qdm) / (2 * h), qdd, atol=1e-7 * np.abs(qdd).max())


@pytest.mark.parametrize("zero_start", [False, True])
def test_fourier_derivatives_match_finite_differences(coeffs, zero_start):
    a, b, q0 = coeffs
    t = np.linspace(0, 13, 57)
    _finite_difference_check(lambda s: fourier(a, b, q0, OMEGA, s, zero_start), t)


def test_fourier_closed_form_and_mean(coeffs):
    a, b, q0 = coeffs
    period = float(fourier_period(OMEGA))
    t = np.arange(200) * period / 200  # one whole period, uniformly sampled
    q, _, _ = fourier(a, b, q0, OMEGA, t)
    k = np.arange(1, H + 1)
    # q0 is the mean over a period; the start is q0 - sum_k b_k / (k w)
    np.testing.assert_allclose(q.mean(0), q0, atol=1e-12)
    np.testing.assert_allclose(q[0], q0 - (b / (k * OMEGA)).sum(1), atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_zero_start_boundary_conditions(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, 4, 6))
    q0 = rng.normal(size=4)
    period = float(fourier_period(OMEGA))
    t = np.array([0.0, period, 3 * period])
    q, qd, qdd = fourier(a, b, q0, OMEGA, t, zero_start=True)
    np.testing.assert_allclose(qd, 0, atol=1e-12)
    np.testing.assert_allclose(qdd, 0, atol=1e-12)
    np.testing.assert_allclose(q[1:], q[:1].repeat(2, 0), atol=1e-12)
    # without the option the same coefficients do not start at rest
    _, qd_free, qdd_free = fourier(a, b, q0, OMEGA, t)
    assert np.abs(qd_free[0]).min() > 1e-6 or np.abs(qdd_free[0]).min() > 1e-6


def test_zero_start_keeps_compliant_coefficients_and_passes_gradients(coeffs):
    a, b, q0 = coeffs
    t = np.linspace(0, 20, 41)
    k = np.arange(1, H + 1)
    a_ok = a - a.mean(1, keepdims=True)
    b_ok = b - (b @ k)[:, None] * k / (k @ k)
    for x, y in zip(fourier(a_ok, b_ok, q0, OMEGA, t, True), fourier(a_ok, b_ok, q0, OMEGA, t)):
        np.testing.assert_allclose(x, y, atol=1e-12)

    def objective(a, b):
        q, qd, qdd = fourier(a, b, q0, OMEGA, t, zero_start=True)
        return jnp.sum(q**2) + jnp.sum(jnp.sin(qd)) + jnp.sum(qdd**3)

    check_grads(objective, (jnp.asarray(a), jnp.asarray(b)), order=1, modes=("rev",))
    jax.jit(objective)(a, b)  # traceable: no Python branching on values


def test_fourier_periodic(coeffs):
    a, b, q0 = coeffs
    t = np.linspace(0, 7, 31)
    period = float(fourier_period(OMEGA))
    for x, y in zip(fourier(a, b, q0, OMEGA, t), fourier(a, b, q0, OMEGA, t + 2 * period)):
        np.testing.assert_allclose(x, y, atol=1e-10)


def test_multisine_closed_form_and_derivatives():
    amp = np.array([[0.2, 0.1], [0.3, 0.05]])
    freq = np.array([[0.5, 1.2], [0.7, 1.5]])
    phase = np.array([[0.0, 1.0], [2.0, 3.0]])
    offset = np.array([0.1, -0.2])
    t = np.linspace(0, 3, 25)
    q, _, _ = multisine(amp, freq, phase, t, offset)
    ref = offset + (amp * np.sin(2 * np.pi * freq * t[:, None, None] + phase)).sum(-1)
    np.testing.assert_allclose(q, ref, atol=1e-14)
    _finite_difference_check(lambda s: multisine(amp, freq, phase, s, offset), t)


def test_random_multisine_is_seeded_and_in_range():
    t = np.arange(3000) * 0.01  # the six-DOF benchmark: T = 30 s, N = 3000
    q, qd, qdd, p = random_multisine(7, 6, t)
    q2, _, _, p2 = random_multisine(jax.random.key(7), 6, t)
    assert q.shape == qd.shape == qdd.shape == (3000, 6)
    np.testing.assert_array_equal(q, q2)
    assert all(v.shape == (6, 3) for v in p.values())
    assert np.all((p["frequencies_hz"] >= 0.4) & (p["frequencies_hz"] <= 1.6))
    assert np.all((p["amplitudes"] >= 0.15) & (p["amplitudes"] <= 0.45))
    np.testing.assert_allclose(q, multisine(p["amplitudes"], p["frequencies_hz"], p["phases"], t)[0])
    assert not np.allclose(q, random_multisine(8, 6, t)[0])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda a, b, q0: fourier(a, b[:, :2], q0, OMEGA, np.zeros(3)), "shape"),
        (lambda a, b, q0: fourier(a, b, q0[:2], OMEGA, np.zeros(3)), "shape"),
        (lambda a, b, q0: fourier(a, b, q0, -1.0, np.zeros(3)), "omega_f"),
        (lambda a, b, q0: fourier(a[:, :1], b[:, :1], q0, OMEGA, np.zeros(3), True), "2 harmonics"),
        (lambda a, b, q0: fourier(a, b, q0, OMEGA, np.zeros((3, 1))), "t must"),
        (lambda a, b, q0: fourier(a * np.nan, b, q0, OMEGA, np.zeros(3)), "NaN"),
        (lambda a, b, q0: multisine(a, b[:, :2], a, np.zeros(3)), "share shape"),
        (lambda a, b, q0: multisine(a, b, a, np.zeros(3), offset=np.zeros(5)), "offset"),
        (lambda a, b, q0: random_multisine(0, 0, np.zeros(3)), "n must"),
        (lambda a, b, q0: random_multisine(0, 2, np.zeros(3), amp_range=(1.0, 0.5)), "amp_range"),
    ],
)
def test_bad_input_raises(coeffs, call, match):
    with pytest.raises(ValueError, match=match):
        call(*coeffs)


def test_approach_is_rest_to_rest_within_its_limits():
    from jaxid.excitation.trajectories import approach, approach_duration

    q_from, q_to = np.array([0.5, -1.0, 0.0]), np.array([-0.3, 0.2, 0.0])
    qd_max, qdd_max, qddd_max = np.array([1.0, 0.5, 1.0]), np.array([2.0, 2.0, 2.0]), np.array([40.0, 40.0, 40.0])
    T = approach_duration(q_from, q_to, qd_max, qdd_max, qddd_max)
    t = np.linspace(0, T, 20001)
    q, qd, qdd = (np.asarray(x) for x in approach(q_from, q_to, T, t))
    np.testing.assert_allclose(q[[0, -1]], [q_from, q_to], atol=1e-14)
    np.testing.assert_allclose(np.r_[qd[[0, -1]], qdd[[0, -1]]], 0.0, atol=1e-14)
    use = [
        np.max(np.abs(x) / lim, axis=0)
        for x, lim in ((qd, qd_max), (qdd, qdd_max), (np.gradient(qdd, t, axis=0), qddd_max))
    ]
    assert max(u.max() for u in use) == pytest.approx(1.0, abs=1e-3)  # the binding limit is reached
    assert all(u.max() <= 1.0 + 1e-3 for u in use)
    np.testing.assert_allclose(np.gradient(q, t, axis=0), qd, atol=1e-6)
