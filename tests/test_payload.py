"""Payload regressor identity, recovery of a known payload, consistency and input checks."""

import functools

import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.data import Dataset
from jaxid.dynamics.rnea import forward_kinematics
from jaxid.excitation import fourier
from jaxid.identification import payload as P
from jaxid.identification.base import base_from_regressor
from jaxid.model import inertia

N = 40
# The benchmark payload: 5 kg box 0.1 x 0.1 x 0.15 m, centre of mass (0.02, -0.01, 0.08) m.
THETA_L = np.asarray(
    inertia.from_mass_com_inertia(5.0, jnp.array([0.02, -0.01, 0.08]), inertia.box_inertia(5.0, (0.1, 0.1, 0.15)))
)

# The logs of these tests are random states (q, qd, qdd) written 10 ms apart, not a motion:
# the plausibility check of the time stamps rightly finds them far too fast for the UR5.
RANDOM_STATES = ["--accept-fault", "time"]


@pytest.fixture(scope="module")
def ur5_data(ur5):
    rng = np.random.default_rng(1)
    q, qd, qdd = (rng.normal(size=(N, 6)) for _ in range(3))
    # within +-1 rad: a normal draw may step by ~2 pi between samples, which reads as an encoder wrap
    q = np.tanh(q)
    tau = np.asarray(jaxid.rnea(P.attach_payload(ur5, THETA_L), q, qd, qdd))
    return q, qd, qdd, tau


@pytest.fixture(scope="module")
def exact_fit(ur5, ur5_data):
    """The fit of noise-free data, its covariance the data's (gain_std=0): the metric the constrained
    estimate is defined in (``cov_white``; a stated gain std would make it nearly singular here)."""
    return P.identify_payload(ur5, None, ur5_data, gain_std=0)


def test_regressor_equals_torque_difference_of_merged_robot(ur5, ur5_data):
    q, qd, qdd, _ = ur5_data
    Phi = P.payload_regressor(ur5, q, qd, qdd)
    assert Phi.shape == (N, 6, 10)
    diff = jaxid.rnea(P.attach_payload(ur5, THETA_L), q, qd, qdd) - jaxid.rnea(ur5, q, qd, qdd)
    np.testing.assert_allclose(Phi @ THETA_L, diff, rtol=0, atol=1e-10)
    np.testing.assert_allclose(P.payload_torque(ur5, THETA_L, q, qd, qdd), diff, rtol=0, atol=1e-10)


def test_static_payload_torque_is_gravity_through_jacobian(ur5, ur5_data):
    # At rest the wrench is the payload's weight m g acting at its centre of mass.
    q = jnp.asarray(ur5_data[0])
    R = (forward_kinematics(ur5, q[0])[-1] @ ur5.tip)[:3, :3]
    c = THETA_L[1:4] / THETA_L[0]
    f = R.T @ (-THETA_L[0] * ur5.gravity)  # force the flange applies to hold the load, flange frame
    w = jnp.concatenate([jnp.cross(c, f), f])
    zero = jnp.zeros_like(q)
    np.testing.assert_allclose(P.payload_wrench(ur5, THETA_L, q, zero, zero)[0], w, atol=1e-12)
    np.testing.assert_allclose(
        P.payload_torque(ur5, THETA_L, q, zero, zero)[0], P.flange_jacobian(ur5, q[0]).T @ w, atol=1e-12
    )


def test_exact_recovery_from_noiseless_data(exact_fit):
    np.testing.assert_allclose(exact_fit.theta, THETA_L, rtol=1e-9, atol=1e-12)
    assert exact_fit.rank == 10 and bool(jnp.all(exact_fit.identifiable))
    assert exact_fit.failures == ()
    np.testing.assert_allclose(exact_fit.mass, 5.0, rtol=1e-10)
    np.testing.assert_allclose(exact_fit.com, [0.02, -0.01, 0.08], atol=1e-10)


def test_robot_model_is_subtracted_with_given_parameters(ur5, ur5_data, exact_fit):
    # Predicting the robot with another parameter vector moves the residual by exactly the
    # torque difference, which the payload fit then absorbs as far as it can: here we shift
    # by a payload-shaped change of the last link, so the estimate moves by that payload.
    delta = 0.1 * THETA_L
    shifted = P.attach_payload(ur5, -delta)
    fit = P.identify_payload(ur5, shifted.parameter_vector(), ur5_data)
    np.testing.assert_allclose(fit.theta, THETA_L + delta, rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def noisy(ur5, ur5_data):
    """ur5_data with torque noise of known std 1e-3 N m, and its WLS payload fit on the true robot, the torques'
    gains taken as exact (gain_std=0: the std is the data's)."""
    q, qd, qdd, tau = ur5_data
    data = (q, qd, qdd, tau + 1e-3 * np.random.default_rng(3).standard_normal(tau.shape))
    return data, P.identify_payload(ur5, None, data, cov=np.full(6, 1e-6), gain_std=0)


def test_robot_prior_keeps_the_uncertainty_of_what_the_payload_mimics(ur5, noisy):
    # An error d on the last link is a payload (a linear map of its 10 parameters): the data cannot
    # tell them apart, so with the prior robot_cov = d d^T the payload's covariance grows by exactly
    # the shift d would cause, (G d)(G d)^T, as the stacked least squares of both experiments gives.
    data, fit0 = noisy
    rng = np.random.default_rng(2)
    d = np.zeros(len(ur5.parameter_names()))
    d[-10:] = 0.05 * rng.standard_normal(10) * np.abs(THETA_L)
    moved = P.identify_payload(ur5, np.asarray(ur5.parameter_vector()) + d, data, cov=np.full(6, 1e-6)).theta
    fit = P.identify_payload(ur5, None, data, cov=np.full(6, 1e-6), robot_cov=np.outer(d, d), gain_std=0)
    np.testing.assert_allclose(fit.theta, fit0.theta, rtol=1e-8, atol=1e-12)
    g = np.asarray(moved - fit0.theta)
    # (The white covariances: the identity is the stacked least squares'; cov is the jackknife's.)
    np.testing.assert_allclose(
        fit.cov_white - fit0.cov_white, np.outer(g, g), rtol=1e-6, atol=1e-10 * np.abs(g).max() ** 2
    )
    # What is left as the data's noise vanishes (scaled by _FLOOR_SCALE) is that shift: the floor.
    np.testing.assert_allclose(
        fit.std_floor, np.sqrt(g**2 + P._FLOOR_SCALE * np.asarray(fit0.std_white) ** 2), rtol=1e-6
    )
    assert np.all(np.isnan(np.asarray(fit0.std_floor)))  # no prior, no floor
    with pytest.raises(ValueError, match="robot_cov must be a finite"):
        P.identify_payload(ur5, None, data, robot_cov=np.eye(3))


def test_robot_prior_corrects_what_the_loaded_data_determine(ur5, noisy):
    # An error on the upper arm (link 2) is not payload-shaped: with a loose prior on it the loaded
    # data re-estimate it and the payload comes out as on the true robot; taken as exact it biases
    # the payload by many std.
    data, fit0 = noisy
    names = ur5.parameter_names()
    d = np.zeros(len(names))
    link2 = [i for i, n in enumerate(names) if n.endswith("2")][:10]
    d[link2] = 0.1 * np.abs(np.asarray(ur5.parameter_vector())[link2]) + 1e-3
    theta = np.asarray(ur5.parameter_vector()) + d
    # The data's part of the std (gain_std=0: no torque-gain uncertainty stated), which is what these claims are about.
    biased = P.identify_payload(ur5, theta, data, cov=np.full(6, 1e-6), gain_std=0)
    fit = P.identify_payload(
        ur5, theta, data, cov=np.full(6, 1e-6), robot_cov=np.diag((10 * d) ** 2 + 1e-12), gain_std=0
    )
    assert np.max(np.abs(biased.theta - THETA_L) / biased.std_white) > 100
    # The jackknife's std sees part of that model error (the residuals follow it), not all: a bias common to
    # every block of samples is no spread between them.
    assert 5 < np.max(np.abs(biased.theta - THETA_L) / biased.std) < 100
    # Not a body: what is reported (estimate, mass, com) is the constrained estimate.
    assert biased.failures and P.consistency_failures(biased.estimate) == ()
    np.testing.assert_array_equal(biased.estimate, biased.theta_consistent)
    np.testing.assert_allclose(biased.com, biased.theta_consistent[1:4] / biased.theta_consistent[0], rtol=1e-12)
    assert np.max(np.abs(fit.theta - THETA_L) / fit.std) < 4
    np.testing.assert_allclose(fit.theta, fit0.theta, atol=5 * float(np.max(fit.std)))


def test_inertia_not_determined_at_the_noise_level_warns(ur5, noisy):
    data, fit0 = noisy
    assert np.max(np.asarray(fit0.std[4:])) < P.INERTIA_STD * np.trace(np.asarray(inertia.inertia_matrix(THETA_L))) / 3
    with pytest.warns(UserWarning, match="inertia is not determined at this noise level.*jaxid excite --payload"):
        P.identify_payload(ur5, None, data, cov=np.full(6, 1.0), gain_std=0)  # 1 N m noise: 1000 times the data's
    # A prior loose on the flange link's parameters (the payload adds to them): the warning says that the
    # robot model is the limit, which no payload experiment lowers, and names the unloaded twin run.
    d = np.zeros(len(ur5.parameter_names()))
    d[-10:] = np.abs(THETA_L)
    with pytest.warns(UserWarning, match="not determined by the robot model.*no payload experiment.*--unloaded"):
        P.identify_payload(ur5, None, data, cov=np.full(6, 1e-6), robot_cov=np.outer(d, d), gain_std=0)
    # The default's 2 % std of each joint's torque gain on this short, slow run: one joint's gain error moves
    # the inertia by more than the noise does (the payload's gravity torque dwarfs its inertial one), and the
    # warning says so and names the calibration.
    with pytest.warns(UserWarning, match="torque-gain uncertainty.*calibrate the torques.*--gain-std"):
        f = P.identify_payload(ur5, None, data, cov=np.full(6, 1e-6))
    assert np.max(np.diag(np.asarray(f.cov_gain))[4:]) > 0.5 * np.max(np.asarray(f.std[4:]) ** 2)


def test_consistent_estimate_equals_ls_when_valid(exact_fit):
    theta, ok = P.consistent_estimate(exact_fit.theta, exact_fit.cov)
    assert ok
    np.testing.assert_allclose(theta, exact_fit.theta, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(exact_fit.theta_consistent, exact_fit.theta, rtol=1e-8, atol=1e-12)


def test_inconsistent_estimate_warns_and_is_projected(exact_fit):
    cov = np.asarray(exact_fit.cov)
    bad = THETA_L.copy()
    bad[4] = -0.01  # Ixx < 0: the pseudo-inertia cannot be positive definite
    assert P.consistency_failures(bad) and "pseudo-inertia" in P.consistency_failures(bad)[0]
    theta, ok = P.consistent_estimate(bad, cov)
    assert ok and P.consistency_failures(theta) == ()
    # It is the closest consistent body in the metric of the LS covariance: closer than the truth.
    dist = lambda x: (x - bad) @ np.linalg.solve(cov, x - bad)
    assert dist(np.asarray(theta)) < dist(THETA_L)
    neg = THETA_L * np.r_[-1.0, np.ones(9)]
    assert any("mass" in f for f in P.consistency_failures(neg))


def test_constrained_estimate_is_never_farther_from_a_body_than_least_squares(noisy):
    # Why `jaxid payload` reports the constrained estimate: it is the projection, in the metric of cov,
    # onto the bodies (a convex set), which is non-expansive and leaves any body in place, so it is no
    # farther from the true payload than least squares is. Checked for a point mass (a degenerate body on
    # the boundary, the hardest case) with LS estimates drawn about it from their own covariance.
    cov = np.asarray(noisy[1].cov)
    truth = np.asarray(inertia.from_mass_com_inertia(2.0, jnp.array([0.0, 0.0, 0.05]), jnp.zeros((3, 3))))
    draws = truth + np.random.default_rng(5).multivariate_normal(np.zeros(10), cov, size=4)
    dist = lambda x: (x - truth) @ np.linalg.solve(cov, x - truth)
    projected = 0
    for ls in draws:
        theta, ok = P.consistent_estimate(ls, cov)
        assert ok and P.consistency_failures(theta, rtol=1e-8) == ()
        assert dist(np.asarray(theta)) <= dist(ls) * (1 + 1e-9)
        projected += bool(P.consistency_failures(ls))
    assert projected  # the draws included estimates that are not bodies


def test_warning_names_the_failed_condition(ur5, ur5_data):
    q, qd, qdd, tau = ur5_data
    bad = THETA_L.copy()
    bad[9] = -0.02  # Izz < 0
    loaded = np.asarray(jaxid.rnea(P.attach_payload(ur5, bad), q, qd, qdd))
    with pytest.warns(UserWarning, match="pseudo-inertia is not positive definite"):
        fit = P.identify_payload(ur5, None, (q, qd, qdd, loaded))
    np.testing.assert_allclose(fit.theta, bad, rtol=1e-9, atol=1e-12)
    assert P.consistency_failures(fit.theta_consistent) == ()
    assert not fit.consistent and fit.converged  # loud: the verdict names both
    assert fit.verdict().startswith(
        "converged; consistent: FAIL for the least-squares column: pseudo-inertia is not positive definite"
    )
    assert fit.verdict().endswith("the estimate reported is the constrained body closest to it (consistent: pass)")


def test_wrist_free_joints_1_to_3_identify_everything(ur5, ur5_data):
    # The wrist turns the flange, so the first three joints see every payload parameter.
    Phi = P.payload_regressor(ur5, *ur5_data[:3])
    assert base_from_regressor(Phi[:, :3].reshape(-1, 10)).rank == 10


def test_flange_turning_about_its_z_axis_hides_ixx_ixy_iyy(ur5):
    # Joints 1, 5, 6 locked with q5 = 0: the flange z axis is parallel to joints 2-4, so the
    # angular velocity is omega z_F and only I z_F = (Ixz, Iyz, Izz) enters n = I dw + w x I w:
    # Ixx, Ixy, Iyy are unidentifiable. Joints 2-3 alone see a planar motion with gravity in
    # the plane: m, m sx, m sy and Izz only (rank 4).
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.normal(size=(N, 6)) for _ in range(3))
    locked = np.array([True, False, False, False, True, True])
    q[:, locked], qd[:, locked], qdd[:, locked] = [0.4, 0.0, 0.7], 0.0, 0.0
    tau = jaxid.rnea(P.attach_payload(ur5, THETA_L), q, qd, qdd)
    seen = ["mL", "mxL", "myL", "mzL", "IxzL", "IyzL", "IzzL"]
    fit = P.identify_payload(ur5, None, (q, qd, qdd, tau), joints=(0, 1, 2))
    expected = np.isin(P.PAYLOAD_NAMES, seen)
    assert fit.rank == len(seen) and fit.base.names == tuple(seen) and fit.joints == (0, 1, 2)
    np.testing.assert_array_equal(fit.identifiable, expected)
    np.testing.assert_allclose(np.asarray(fit.theta)[expected], THETA_L[expected], rtol=1e-8, atol=1e-11)
    assert np.all(np.isnan(np.asarray(fit.theta)[~expected])) and np.all(np.isnan(fit.theta_consistent))
    Phi = P.payload_regressor(ur5, q, qd, qdd)[:, 1:3].reshape(-1, 10)
    with np.errstate(divide="ignore"):
        assert base_from_regressor(Phi, P.PAYLOAD_NAMES).names == ("mL", "mxL", "myL", "IzzL")


def test_dataset_input_and_supplied_covariance(ur5, ur5_data):
    q, qd, qdd, tau = ur5_data
    ds = Dataset(jnp.arange(N) * 1e-3, jnp.asarray(q), jnp.asarray(tau), jnp.asarray(qd), jnp.asarray(qdd))
    fit = P.identify_payload(ur5, None, ds, cov=np.full(6, 0.01), gain_std=0)
    np.testing.assert_allclose(fit.theta, THETA_L, rtol=1e-9, atol=1e-12)
    # Gauss-Markov covariance with the supplied variance: (W^T W)^-1 sigma^2 (no torque-gain uncertainty stated).
    W = np.asarray(P.payload_regressor(ur5, q, qd, qdd)).reshape(-1, 10)
    np.testing.assert_allclose(fit.cov, 0.01 * np.linalg.inv(W.T @ W), rtol=1e-6)


def test_bad_inputs_are_rejected(ur5, ur5_data):
    q, qd, qdd, tau = ur5_data
    with pytest.raises(ValueError, match=r"theta_L .*shape \(10,\)"):
        P.payload_torque(ur5, THETA_L[:9], q, qd, qdd)
    with pytest.raises(ValueError, match="theta_L contains NaN"):
        P.attach_payload(ur5, np.full(10, np.nan))
    nan_tau = tau.copy()
    nan_tau[3, 2] = np.nan
    with pytest.raises(ValueError, match="tau contains NaN or inf .*sample 3, joint 3"):
        P.identify_payload(ur5, None, (q, qd, qdd, nan_tau))
    with pytest.raises(ValueError, match=r"qd must have shape \(N, 6\)"):
        P.identify_payload(ur5, None, (q, qd[:, :5], qdd, tau))
    with pytest.raises(ValueError, match="different numbers of samples"):
        P.identify_payload(ur5, None, (q, qd, qdd, tau[:-1]))
    with pytest.raises(ValueError, match="tuple"):
        P.identify_payload(ur5, None, (q, qd, tau))
    for joints in ((0, 6), (1, 1), ()):
        with pytest.raises(ValueError, match="joint"):
            P.identify_payload(ur5, None, ur5_data, joints=joints)
    with pytest.raises(ValueError, match="theta_robot"):
        P.identify_payload(ur5, np.ones(5), ur5_data)
    with pytest.raises(ValueError, match="record more samples"):
        P.identify_payload(ur5, None, tuple(x[:3] for x in ur5_data), joints=(0, 1, 2))
    with pytest.raises(ValueError, match="cov"):
        P.identify_payload(ur5, None, ur5_data, cov=np.ones(5))
    ds = Dataset(jnp.arange(N) * 1e-3, jnp.asarray(q), jnp.asarray(tau))
    with pytest.raises(ValueError, match="no velocities"):
        P.identify_payload(ur5, None, ds)
    with pytest.raises(ValueError, match=r"cov must be a finite \(10, 10\)"):
        P.consistent_estimate(THETA_L, np.eye(9))
    with pytest.raises(ValueError, match="symmetric positive definite"):
        P.consistent_estimate(THETA_L, -1e-4 * np.eye(10))


@pytest.fixture(scope="module")
def periodic():
    """Two joints on a 1 Hz zero-start Fourier trajectory, 4 periods at 200 Hz."""
    rng = np.random.default_rng(3)
    traj = functools.partial(fourier, *rng.normal(size=(2, 2, 3)), np.zeros(2), 2 * np.pi, zero_start=True)
    t = np.arange(800) / 200.0
    q, qd, qdd = (np.asarray(x) for x in traj(jnp.asarray(t)))
    return traj, t, q, qd, qdd, np.stack([np.sin(2 * np.pi * t), np.cos(4 * np.pi * t)], axis=1)


def test_preprocess_periodic_record_has_no_edge_transients(periodic):
    traj, t, q, qd, qdd, tau = periodic
    rel = lambda x, ref: np.max(np.abs(np.asarray(x) - ref)) / np.max(np.abs(ref))
    # Wrapping the ends: every sample, the first and last included, is as accurate as the
    # central differences (O(h^2) ~ 1e-3 here); without it the ends are ~10x worse.
    _, _, qd_p, qdd_p, _ = P.preprocess(t, q, tau, period=200, cutoff=20.0)
    _, _, qd_n, qdd_n, _ = P.preprocess(t, q, tau, cutoff=20.0)
    assert rel(qd_p, qd) < 2e-3 and rel(qdd_p, qdd) < 2e-3
    assert rel(qdd_n, qdd) > 5 * rel(qdd_p, qdd)
    # The commanded trajectory's analytic derivatives replace the measured ones exactly.
    out = P.preprocess(t, q + 0.01, tau, period=200, commanded=traj)
    for x, ref in zip(out[1:4], (q, qd, qdd)):
        np.testing.assert_array_equal(x, ref)


def test_preprocess_averaging_divides_noise_by_sqrt_periods(periodic):
    _, t, q, _, _, tau = periodic
    noise = 0.1 * np.random.default_rng(4).normal(size=tau.shape)
    t1, q1, _, _, tau1 = P.preprocess(t, q, tau + noise, period=200, average=True, cutoff=20.0, step=2)
    assert t1.shape == (100,) and q1.shape == (100, 2)
    np.testing.assert_allclose(q1, q[:200:2], atol=1e-6)  # the low-passed positions
    np.testing.assert_allclose(np.std(tau1 - tau[:200:2]), 0.1 / 2, rtol=0.15)  # 4 periods
    # Five-point cubic smoothing passes cubics unchanged and shrinks white noise further.
    _, _, _, _, tau_s = P.preprocess(t, q, tau + noise, period=200, average=True, smooth=3, cutoff=20.0, step=2)
    assert np.std(tau_s - tau[:200:2]) < 0.8 * np.std(tau1 - tau[:200:2])


def test_preprocess_rejects_bad_input(periodic):
    _, t, q, _, _, tau = periodic
    with pytest.raises(ValueError, match="whole periods"):
        P.preprocess(t, q, tau, period=300)
    with pytest.raises(ValueError, match="needs period"):
        P.preprocess(t, q, tau, average=True)
    with pytest.raises(ValueError, match="uniformly spaced"):
        P.preprocess(t**2, q, tau)
    with pytest.raises(ValueError, match="smooth must be an integer"):
        P.preprocess(t, q, tau, smooth=-1)
    with pytest.raises(ValueError, match="same N"):
        P.preprocess(t, q, tau[:-1])


def test_cli_payload(ur5, ur5_data, tmp_path, capsys):
    import json

    from jaxid import data as jdata
    from jaxid import results
    from jaxid.cli import main

    q, qd, qdd, tau = ur5_data
    csv = tmp_path / "loaded.csv"
    jdata.write(Dataset(jnp.arange(N) * 1e-2, jnp.asarray(q), jnp.asarray(tau), jnp.asarray(qd), jnp.asarray(qdd)), csv)
    # A params.json whose base parameters are the standard ones (identity base), at their true values.
    names = ur5.parameter_names()
    base = base_from_regressor(np.eye(len(names)), names)
    params = results.Params(
        model=results.model_description(ur5, builtin="ur5"),
        parameter_names=names,
        base=base,
        theta=ur5.parameter_vector(),
        cov=jnp.eye(len(names)),
        fit={},
    )
    results.save_params(tmp_path / "robot.json", params)
    out = tmp_path / "payload.json"
    assert main(["payload", "--params", str(tmp_path / "robot.json"), str(csv), "-o", str(out), *RANDOM_STATES]) == 0
    result = json.loads(out.read_text())
    np.testing.assert_allclose(result["estimate"], THETA_L, rtol=1e-8, atol=1e-11)
    assert result["estimate_kind"] == "least squares" and result["least_squares"] == result["estimate"]
    assert result["consistent"] and result["rank"] == 10 and result["converged"]
    # The std printed is the jackknife's (the model's error included); the white-noise one is kept beside it.
    assert result["covariance"] == "jackknife" and result["blocks"] == P.BLOCKS and len(result["std_white"]) == 10
    printed = capsys.readouterr().out
    assert "fit: converged; consistent: pass" in printed
    assert f"block jackknife over {P.BLOCKS} blocks" in printed and "std_white in the JSON" in printed
    # The std includes the torque gains' stated std, by how the torques were logged: 2 % for N m (this log), 10 %
    # for motor currents times --gains; said, and kept in the JSON.
    assert result["gain_std"] == P.GAIN_STD and "logged in N m" in result["gain_source"]
    assert f"plus a {100 * P.GAIN_STD:g} % std of each joint's torque gain" in printed
    gains = np.array([8.0, 8.0, 5.0, 2.0, 2.0, 2.0])
    amps = tmp_path / "currents.csv"
    jdata.write(
        Dataset(jnp.arange(N) * 1e-2, jnp.asarray(q), jnp.asarray(tau / gains), jnp.asarray(qd), jnp.asarray(qdd)), amps
    )
    amps, robot_json, amps_out = str(amps), str(tmp_path / "robot.json"), str(tmp_path / "amps.json")
    g = ",".join(map(str, gains))
    assert main(["payload", "--params", robot_json, amps, "--gains", g, "-o", amps_out, *RANDOM_STATES]) == 0
    from_amps = json.loads(open(amps_out).read())
    assert from_amps["gain_std"] == P.CURRENT_GAIN_STD and "currents" in from_amps["gain_source"]
    np.testing.assert_allclose(from_amps["estimate"], THETA_L, rtol=1e-8, atol=1e-11)
    assert np.all(np.array(from_amps["std"]) > np.array(result["std"]))
    assert (
        main(["payload", "--params", robot_json, amps, "--gains", g, "--gain-std", "0", "-o", amps_out, *RANDOM_STATES])
        == 0
    )
    assert json.loads(open(amps_out).read())["gain_std"] == 0
    # The CLI's help states the library's defaults (written out there, not imported).
    import argparse

    from jaxid.cli import payload as cli_payload

    sub = argparse.ArgumentParser().add_subparsers()
    cli_payload.register(sub)
    (action,) = [a for a in sub.choices["payload"]._actions if "--gain-std" in a.option_strings]
    assert f"default {P.GAIN_STD:g} for torques logged in N m, {P.CURRENT_GAIN_STD:g} for motor currents" in action.help
    capsys.readouterr()
    assert main(["payload", "--robot", "ur5", "--joints", "0,1", str(csv)]) == 2
    assert "--joints must list distinct joints" in capsys.readouterr().err
    assert main(["payload", "--average", str(csv)]) == 2
    assert "--period" in capsys.readouterr().err


def test_unloaded_run_cancels_the_robot_model(ur5, ur5_data, tmp_path, capsys):
    # The same trajectory without the payload: the payload is fitted to the torque difference,
    # so a robot model that is wrong (here 20 % heavier links and no friction model, while the
    # true robot has viscous friction) does not pass into it.
    import json

    from jaxid import data as jdata
    from jaxid import workflow
    from jaxid.cli import main

    q, qd, qdd, tau = ur5_data
    friction = 0.3 * qd  # the same on both runs, cancels too
    robot_tau = np.asarray(jaxid.rnea(ur5, q, qd, qdd)) + friction
    t = jnp.arange(N) * 1e-2
    loaded, unloaded = tmp_path / "loaded.csv", tmp_path / "unloaded.csv"
    jdata.write(Dataset(t, jnp.asarray(q), jnp.asarray(tau + friction), jnp.asarray(qd), jnp.asarray(qdd)), loaded)
    jdata.write(Dataset(t, jnp.asarray(q), jnp.asarray(robot_tau), jnp.asarray(qd), jnp.asarray(qdd)), unloaded)
    diff = workflow.torque_difference(workflow.read(loaded), workflow.read(unloaded))
    np.testing.assert_allclose(diff.tau, P.payload_torque(ur5, THETA_L, q, qd, qdd), rtol=0, atol=1e-9)
    out = tmp_path / "payload.json"
    assert (
        main(
            [
                "payload",
                "--robot",
                "ur5",
                str(loaded),
                "--unloaded",
                str(unloaded),
                "-o",
                str(out),
                "--quiet",
                *RANDOM_STATES,
            ]
        )
        == 0
    )
    np.testing.assert_allclose(json.loads(out.read_text())["estimate"], THETA_L, rtol=1e-8, atol=1e-11)
    # Without the unloaded run, the nominal model misses the friction and the payload is off: refused
    # unless asked for (--nominal).
    assert main(["payload", "--robot", "ur5", str(loaded), "-o", str(out), "--quiet", *RANDOM_STATES]) == 2
    argv = ["payload", "--robot", "ur5", "--nominal", str(loaded), "-o", str(out), "--quiet", *RANDOM_STATES]
    assert main(argv) == 0
    assert not np.allclose(json.loads(out.read_text())["estimate"], THETA_L, rtol=1e-2)
    # Runs that are not the same trajectory, or not the same length: one line each, exit 2.
    other = tmp_path / "other.csv"
    jdata.write(Dataset(t, jnp.asarray(q[::-1]), jnp.asarray(robot_tau), jnp.asarray(qd), jnp.asarray(qdd)), other)
    assert main(["payload", "--robot", "ur5", str(loaded), "--unloaded", str(other), *RANDOM_STATES]) == 2
    assert "are not the same trajectory: joint 1" in capsys.readouterr().err
    jdata.write(
        Dataset(t[:-1], jnp.asarray(q[:-1]), jnp.asarray(robot_tau[:-1]), jnp.asarray(qd[:-1]), jnp.asarray(qdd[:-1])),
        other,
    )
    assert main(["payload", "--robot", "ur5", str(loaded), "--unloaded", str(other), "--no-align", *RANDOM_STATES]) == 2
    assert f"the loaded run has {N} samples and the unloaded run {N - 1}" in capsys.readouterr().err
    # Aligned (the default), the shorter run is a run of the same trajectory: the overlap is fitted.
    assert (
        main(["payload", "--robot", "ur5", str(loaded), "--unloaded", str(other), "-o", str(out), *RANDOM_STATES]) == 0
    )
    assert f"unloaded run aligned: shifted by 0 ms, {N - 1} samples of overlap (1 dropped)" in capsys.readouterr().out
    np.testing.assert_allclose(json.loads(out.read_text())["estimate"], THETA_L, rtol=1e-8, atol=1e-11)


# ----------------------------------------------------------------------------- two runs, own clocks
F0, FS = 0.2, 100.0  # a 5 s Fourier excitation, 2 periods at 100 Hz


@pytest.fixture(scope="module")
def excitation():
    rng = np.random.default_rng(5)
    return functools.partial(fourier, *(0.6 * rng.normal(size=(2, 6, 5))), np.zeros(6), 2 * np.pi * F0)


def _run(robot, traj, stamps, start, seed):
    """A run of ``traj`` logged at ``stamps`` (s) that started at trajectory time ``start`` (s) at its
    first stamp: positions with 1e-4 rad noise, torques (viscous friction included) with 0.02 N m."""
    q, qd, qdd = (np.asarray(x) for x in traj(jnp.asarray(stamps - stamps[0] + start)))
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd)) + 0.3 * qd
    rng = np.random.default_rng(seed)
    q, tau = q + 1e-4 * rng.normal(size=q.shape), tau + 0.02 * rng.normal(size=tau.shape)
    return Dataset(jnp.asarray(stamps), jnp.asarray(q), jnp.asarray(tau))


def _stamps(n, seed, clock=0.0):
    """n stamps at FS jittered by 3 % of the step (the first stamp is the run's start)."""
    jitter = 0.03 / FS * np.random.default_rng(seed).normal(size=n)
    return clock + np.sort(np.arange(n) / FS + jitter - jitter[0])


def test_align_runs_puts_a_jittered_late_run_on_the_reference_stamps(excitation):
    from jaxid import workflow

    n = int(2 * FS / F0)
    ref = _run(P.attach_payload(jaxid.models.ur5(), THETA_L), excitation, _stamps(n, 1), 0.0, 1)
    start = 0.3 / F0 + 0.37 / FS  # a period fraction and a fraction of a sample late, on another clock, shorter
    other = _run(jaxid.models.ur5(), excitation, _stamps(n - 40, 2, clock=1.7e9), start, 2)
    ref_k, moved, al = workflow.align_runs(ref, other)
    assert al.shift == pytest.approx(start, abs=0.01 / FS)
    assert al.overlap == len(ref_k) == len(moved) and al.overlap + al.dropped == n
    np.testing.assert_array_equal(moved.t, ref_k.t)
    # The other run's positions on the reference stamps: the same trajectory points, to the noise.
    assert np.sqrt(np.mean((np.asarray(moved.q) - np.asarray(ref_k.q)) ** 2)) < 3e-4
    # Far too little overlap, or a different trajectory: one line that says so.
    with pytest.raises(
        ValueError, match=r"other run overlaps only 8\d\d of the 1000 samples.*at least 99%.*same trajectory"
    ):
        workflow.align_runs(ref, other, min_overlap=0.99)
    far = Dataset(other.t, other.q[::-1], other.tau)
    with pytest.raises(ValueError, match="are not the same trajectory"):
        workflow.torque_difference(*workflow.align_runs(ref, far)[:2])


def test_payload_from_jittered_runs_of_one_trajectory(excitation, tmp_path, capsys):
    # Two real-looking runs of one trajectory: jittered stamps (3 % of the step), the unloaded run
    # started 0.37 samples (and in the second case 0.1 period) later on its own clock. Aligned by
    # default, they give the payload as well as two runs on the same stamps; --no-align refuses them.
    import json

    from jaxid import data as jdata
    from jaxid.cli import main

    n = int(2 * FS / F0)
    loaded = P.attach_payload(jaxid.models.ur5(), THETA_L)
    paths = {k: str(tmp_path / f"{k}.csv") for k in ("loaded", "same", "late")}
    t = _stamps(n, 1)
    jdata.write(_run(loaded, excitation, t, 0.0, 1), paths["loaded"])
    jdata.write(_run(jaxid.models.ur5(), excitation, t, 0.0, 2), paths["same"])
    start = 0.1 / F0 + 0.37 / FS
    jdata.write(_run(jaxid.models.ur5(), excitation, _stamps(n, 4, clock=1234.5), start, 2), paths["late"])
    estimates = {}
    for k in ("same", "late"):
        out = tmp_path / f"{k}.json"
        args = ["payload", "--robot", "ur5", paths["loaded"], "--unloaded", paths[k], "--resample", "-o", str(out)]
        assert main(args) == 0
        estimates[k] = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert estimates["late"]["alignment"]["shift_s"] == pytest.approx(start, abs=0.01 / FS)
    assert f"unloaded run aligned: shifted by {1e3 * estimates['late']['alignment']['shift_s']:.4g} ms" in printed
    for e in estimates.values():  # the mass within 0.1 % (the derivative filter's error, not the alignment's)
        assert e["estimate"][0] == pytest.approx(THETA_L[0], rel=1e-3)
    same, late = (np.asarray(estimates[k]["estimate"]) for k in ("same", "late"))
    assert np.all(np.abs(late - same) < 3 * np.asarray(estimates["same"]["std"]))
    assert main(["payload", "--robot", "ur5", paths["loaded"], "--unloaded", paths["late"], "--no-align"]) == 2
    assert "differ by up to" in capsys.readouterr().err
