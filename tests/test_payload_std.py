"""The payload's std under a wrong model: the block jackknife (``identify_payload``'s ``cov``) against the
white-noise covariance (``cov_white``). A few fixed seeds: the coverage study is
``benchmarks/payload_coverage.py``."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.excitation import fourier
from jaxid.identification import payload as P
from jaxid.identification.jackknife import block_jackknife
from jaxid.model import inertia

THETA_L = np.asarray(
    inertia.from_mass_com_inertia(2.0, jnp.array([0.01, -0.02, 0.04]), inertia.box_inertia(2.0, (0.08, 0.1, 0.12)))
)
SIGMA = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.1])  # N m


@pytest.fixture(scope="module")
def motion(ur5):
    """One 20 s period of a 5-harmonic excitation at 50 Hz (1000 samples), and the loaded robot's torques."""
    rng = np.random.default_rng(0)
    a, b = 0.6 * rng.uniform(-1, 1, (2, 6, 5))
    q, qd, qdd = (np.asarray(x) for x in fourier(a, b, rng.uniform(-1, 1, 6), 2 * np.pi * 0.05, np.arange(1000) / 50.0))
    return q, qd, qdd, np.asarray(jaxid.rnea(P.attach_payload(ur5, THETA_L), q, qd, qdd))


def fit(ur5, motion, error, seed, **kw):
    """The fit of the loaded torques plus ``error`` and noise; without a torque-gain uncertainty unless asked
    (``gain_std``): the tests of the jackknife are about the data's part of the std."""
    q, qd, qdd, tau = motion
    noise = SIGMA * np.random.default_rng(seed).standard_normal(tau.shape)
    return P.identify_payload(ur5, None, (q, qd, qdd, tau + error + noise), **{"gain_std": 0.0, **kw})


def test_right_model_std_is_the_white_std_within_sampling(ur5, motion):
    # White residuals: the jackknife estimates the white covariance; with 100 blocks (99 degrees of freedom,
    # each variance within about +-30 % at 2 sigma) its std is the white one within 25 %, never below it.
    f = fit(ur5, motion, 0.0, 1, blocks=100)
    assert f.covariance == "jackknife" and f.blocks == 100
    ratio = np.asarray(f.std) / np.asarray(f.std_white)
    assert np.all(ratio >= 1.0 - 1e-12) and np.all(ratio < 1.25), ratio


def test_wrong_model_std_grows_to_cover_the_error(ur5, motion):
    # An unmodelled torque that follows the motion (a position ripple, a cogging torque or a cable,
    # 0.5 N m on each of joints 4-6 and 1.5 on 1-3, beside 0.1-0.5 N m of noise): the white std understates
    # the error many times; the jackknife's covers it.
    q = motion[0]
    error = np.array([1.5, 1.5, 1.5, 0.5, 0.5, 0.5]) * np.sin(3 * q + np.arange(6))
    f = fit(ur5, motion, error, 2)
    z_white = np.abs(np.asarray(f.theta) - THETA_L) / np.asarray(f.std_white)
    z = np.abs(np.asarray(f.theta) - THETA_L) / np.asarray(f.std)
    assert np.max(z_white) > 10, z_white
    assert np.max(z) < 3.5, z
    assert np.all(np.asarray(f.std) >= np.asarray(f.std_white))


def test_blocks_are_checked_and_other_methods_keep_the_white_covariance(ur5, motion):
    with pytest.raises(ValueError, match="blocks must be an integer"):
        fit(ur5, motion, 0.0, 3, blocks=1)
    f = fit(ur5, motion, 0.0, 3, method="irls")
    assert f.covariance == "white" and f.blocks is None
    np.testing.assert_array_equal(f.cov, f.cov_white)


def test_jackknife_equals_the_refits_without_each_block(ur5, motion):
    # The closed form (one solve per block on the information matrix) is the spread of the least squares
    # refitted without each block, the robot prior kept in every refit.
    q, qd, qdd, tau = motion
    tau = tau + SIGMA * np.random.default_rng(0).standard_normal(tau.shape) + 0.5 * np.sin(3 * q)
    p = len(ur5.parameter_names())
    robot_cov = np.diag(np.r_[np.full(p - 10, 1e-4), np.full(10, 1e-3)])
    Wr, Yr = np.asarray(P.payload_regressor(ur5, q, qd, qdd)), np.asarray(jaxid.regressor(ur5, q, qd, qdd))
    y, S = tau - np.asarray(jaxid.rnea(ur5, q, qd, qdd)), jnp.diag(jnp.asarray(SIGMA**2))
    _, _, _, A, res, prior, x = P._robot_update(Wr, Yr, y, robot_cov, S)
    G = 10
    ests = []
    for g in range(G):
        keep = np.ones(len(q), bool)
        keep[g * 100 : (g + 1) * 100] = False
        ests.append(np.asarray(P._robot_update(Wr[keep], Yr[keep], y[keep], robot_cov, S)[0]))
    d = np.array(ests) - np.mean(ests, axis=0)
    np.testing.assert_allclose(block_jackknife(A, res, prior, x, G)[:10, :10], (G - 1) / G * d.T @ d, rtol=1e-8)


def test_gain_covariance_is_the_estimates_change_per_joint_gain(ur5, motion):
    # cov_gain = gain_std^2 sum_j D_j D_j^T with D_j the estimate's change per unit error of joint j's torque
    # gain: checked against refits with joint j's payload torque scaled by 1 + h (fixed weights: linear).
    q, qd, qdd, tau = motion
    tau_payload = tau - np.asarray(jaxid.rnea(ur5, q, qd, qdd))
    cov = SIGMA**2
    f = P.identify_payload(ur5, None, motion, cov=cov, gain_std=0.05)
    h, D = 1e-3, []
    for j in range(6):
        scaled = tau.copy()
        scaled[:, j] += h * tau_payload[:, j]
        D.append((np.asarray(P.identify_payload(ur5, None, (q, qd, qdd, scaled), cov=cov).theta) - f.theta) / h)
    D = np.array(D)
    np.testing.assert_allclose(f.cov_gain, 0.05**2 * D.T @ D, rtol=1e-6, atol=1e-9 * np.abs(f.cov_gain).max())
    # cov is the data's part plus it; the data's part does not depend on gain_std.
    g0 = P.identify_payload(ur5, None, motion, cov=cov, gain_std=0.0)
    np.testing.assert_allclose(f.cov - f.cov_gain, g0.cov, rtol=1e-9, atol=1e-12 * np.abs(g0.cov).max())
    assert f.gain_std == 0.05 and np.all(np.asarray(g0.cov_gain) == 0)
    for bad in (-0.1, 1.0, float("nan"), True, "2%"):
        with pytest.raises(ValueError, match="gain_std must be a number in"):
            P.identify_payload(ur5, None, motion, gain_std=bad)


def test_gain_std_covers_a_torque_scale_error(ur5, motion):
    # Each joint's torque gain off by the default's std, 2 % (a torque constant, a gear's losses), alternately up
    # and down: a bias no residual shows, so the data's std (the jackknife, at least the white one) leaves the
    # error far outside it; the default std holds it within 3 std (a 1-std error of each of six independent gains
    # is sqrt(6) = 2.4 std in the worst direction). Noise 10x below SIGMA, so that the gains' bias dominates.
    q, qd, qdd, tau = motion
    tau_payload = tau - np.asarray(jaxid.rnea(ur5, q, qd, qdd))
    scale = 1 + P.GAIN_STD * np.array([1, -1, 1, -1, 1, -1])
    noisy = tau + tau_payload * (scale - 1) + 0.1 * SIGMA * np.random.default_rng(4).standard_normal(tau.shape)
    data = P.identify_payload(ur5, None, (q, qd, qdd, noisy), gain_std=0.0)
    default = P.identify_payload(ur5, None, (q, qd, qdd, noisy))
    assert default.gain_std == P.GAIN_STD
    z_data = np.abs(np.asarray(data.theta) - THETA_L) / np.asarray(data.std)
    z = np.abs(np.asarray(default.theta) - THETA_L) / np.asarray(default.std)
    assert np.max(z_data) > 5 and np.max(z) < 3, (z_data, z)


def test_logged_runs_get_the_jackknife_in_identify(ur5, motion):
    # jaxid identify on a logged run (qd, qdd as recorded: no filter, so no HAC): the base parameters' std is
    # the block jackknife, at least the white one; with an unmodelled ripple that follows the motion the white
    # std understates the error many times, the jackknife's holds it (the payload's case, for the robot).
    from jaxid import workflow
    from jaxid.data import Dataset
    from jaxid.identification.base import base_parameters

    q, qd, qdd, _ = motion
    tau = np.asarray(jaxid.rnea(ur5, q, qd, qdd))
    ripple = np.array([1.5, 1.5, 1.5, 0.5, 0.5, 0.5]) * np.sin(3 * q + np.arange(6))
    noisy = tau + ripple + SIGMA * np.random.default_rng(5).standard_normal(tau.shape)
    run = Dataset(t=np.arange(len(q)) / 50.0, q=q, tau=noisy, qd=qd, qdd=qdd, source="logged")
    params = workflow.identify_experiment(ur5, workflow.Prepared((run,), (dict(source="logged", parallel=None),)))
    assert params.estimation.covariance == "jackknife"
    std, white = np.asarray(params.std), np.asarray(params.estimation.std_white)
    assert np.all(std >= white * (1 - 1e-9))
    truth = np.asarray(base_parameters(ur5).to_base(ur5.parameter_vector()))
    z_white, z = np.abs(np.asarray(params.theta) - truth) / white, np.abs(np.asarray(params.theta) - truth) / std
    assert np.max(z_white) > 10 and np.max(z) < 4, (np.max(z_white), np.max(z))
    # The workflow's pass over the rows (held or streamed, chunk by chunk) is the jackknife of the held rows.
    from jaxid.identification import jackknife
    from jaxid.identification.estimators import wls_variances

    Wb = np.asarray(base_parameters(ur5).reduce(jaxid.regressor(ur5, q, qd, qdd)))
    var = np.asarray(wls_variances(Wb.reshape(-1, Wb.shape[-1]), noisy.reshape(-1), 6))  # the fit's weights
    white = np.linalg.inv(np.einsum("nki,k,nkj->ij", Wb, 1 / var, Wb))  # its white covariance
    held = jackknife.of_fit(Wb, noisy, np.asarray(params.theta), np.asarray(params.estimation.sigma2), white)
    np.testing.assert_allclose(params.cov, held, rtol=1e-8, atol=1e-12 * np.abs(held).max())
