"""Physically consistent identification: the log-Cholesky map, the priors as sums of
squares, validity for arbitrary data, agreement with WLS, and the URDF writer."""

import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest

import jaxid
from jaxid import results
from jaxid.identification import consistent as C
from jaxid.model import inertia

N = 120  # samples of the 3-joint arm


def random_runs(robot, runs: int, samples: int, noise: float, seed: int):
    """``workflow.Prepared`` of ``runs`` runs ("run1", ...) of ``samples`` random states each (q, qd,
    qdd standard normal, 100 Hz stamps), torques from ``rnea`` plus Gaussian noise of std ``noise``."""
    from jaxid import workflow
    from jaxid.data import Dataset

    rng = np.random.default_rng(seed)
    out = []
    for i in range(runs):
        q, qd, qdd = (rng.normal(size=(samples, robot.n)) for _ in range(3))
        tau = np.asarray(jaxid.rnea(robot, q, qd, qdd)) + noise * rng.normal(size=(samples, robot.n))
        t = np.arange(samples) * 0.01
        out.append(Dataset(t=t, q=q, tau=tau, qd=qd, qdd=qdd, source=f"run{i + 1}"))
    return workflow.Prepared(tuple(out), tuple(dict(source=r.source, parallel=None) for r in out))


def arm3():
    """A spatial 3R arm (shoulder yaw, two pitch joints) with box links, viscous and
    Coulomb friction, offsets and joint springs (ks): every body strictly consistent."""
    dh = np.array([[0, 0.3, 0, np.pi / 2], [0, 0, 0.4, 0], [0, 0, 0.3, 0]])
    masses = np.array([2.0, 1.5, 1.0])
    coms = np.array([[0, -0.05, 0.0], [-0.2, 0, 0.02], [-0.15, 0, 0.0]])
    sizes = [(0.1, 0.3, 0.1), (0.4, 0.08, 0.08), (0.3, 0.06, 0.06)]
    I = np.stack([np.asarray(inertia.box_inertia(m, s)) for m, s in zip(masses, sizes)])
    friction = np.array([[0.3, 0.5, 0.1, 0.4], [0.2, 0.4, -0.1, 0.8], [0.1, 0.2, 0.05, 0.2]])
    return jaxid.Robot.from_dh(
        dh,
        masses=masses,
        coms=coms,
        inertias=I,
        joint_terms=("fv", "fc", "offset", "ks"),
        joint_params=friction,
        q_min=-np.pi,
        q_max=np.pi,
        tau_max=[50.0, 50.0, 20.0],
        name="arm3",
    )


@pytest.fixture(scope="module")
def setup():
    robot = arm3()
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=(N, 3)) for _ in range(3))
    W = jaxid.stack(jaxid.regressor(robot, q, qd, qdd))
    base = jaxid.base_from_regressor(W, robot.parameter_names())  # random states: structural
    theta = robot.parameter_vector()
    # CAD prior: the first link 30 % heavier than the truth.
    nominal = theta.at[:10].multiply(1.3)
    return robot, W, base, theta, nominal, rng


@pytest.fixture(scope="module")
def fit_valid(setup):
    """Weight 0 on data simulated from the (consistent) truth with small noise."""
    robot, W, base, theta, nominal, rng = setup
    tau = W @ theta + 1e-4 * rng.normal(size=W.shape[0])
    return C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=0.0)


@pytest.fixture(scope="module")
def fit_random(setup):
    """Default settings on torques that no robot produced."""
    robot, W, base, _, nominal, rng = setup
    tau = 5.0 * rng.normal(size=W.shape[0])
    return C.identify_consistent(robot, W, tau, nominal=nominal, base=base)


def test_log_cholesky_round_trip_and_factor():
    rng = np.random.default_rng(1)
    for _ in range(5):
        z = rng.normal(size=10)
        pi = inertia.log_cholesky_to_inertial(jnp.asarray(z))
        assert bool(inertia.is_consistent(pi))  # every z is a physical body
        np.testing.assert_allclose(inertia.inertial_to_log_cholesky(pi), z, rtol=1e-9, atol=1e-9)
        U, logdiag = C._factor(jnp.asarray(z))
        np.testing.assert_allclose(U @ U.T, inertia.pseudo_inertia(pi), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(logdiag, np.log(np.diag(np.asarray(U))), rtol=1e-12)
    # and every consistent body has its z
    body = inertia.from_mass_com_inertia(1.7, jnp.array([0.1, -0.2, 0.05]), inertia.box_inertia(1.7, (0.2, 0.1, 0.3)))
    np.testing.assert_allclose(
        inertia.log_cholesky_to_inertial(inertia.inertial_to_log_cholesky(body)), body, rtol=1e-12, atol=1e-15
    )


def test_priors_are_sums_of_squares():
    rng = np.random.default_rng(2)
    z, z0 = (jnp.asarray(rng.normal(scale=0.5, size=10)) for _ in range(2))
    pi, pi0 = inertia.log_cholesky_to_inertial(z), inertia.log_cholesky_to_inertial(z0)
    U0, ld0 = C._factor(z0)
    U0inv = jnp.linalg.inv(U0)
    r = C._prior_residual(z, U0inv, ld0, "entropic")
    np.testing.assert_allclose(r @ r, C.entropic_divergence(pi, pi0), rtol=1e-9)
    assert float(C.entropic_divergence(pi0, pi0)) == pytest.approx(0.0, abs=1e-12)
    J, J0 = (np.asarray(inertia.pseudo_inertia(x)) for x in (pi, pi0))
    w, V = np.linalg.eigh(J0)
    S = V @ np.diag(w**-0.5) @ V.T
    r = C._prior_residual(z, U0inv, ld0, "euclidean")
    np.testing.assert_allclose(r @ r, 0.5 * np.linalg.norm(S @ (J - J0) @ S) ** 2, rtol=1e-9)
    # phi: signed root of e^{2l} - 1 - 2l, smooth through 0 (series branch)
    ls = jnp.array([-3.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 3.0])
    np.testing.assert_allclose(C._phi(ls) ** 2, jnp.expm1(2 * ls) - 2 * ls, rtol=1e-9, atol=1e-20)
    jax.test_util.check_grads(C._phi, (jnp.array([0.0, 5e-3, -5e-3, 0.3]),), order=1, modes=["rev"])


def test_newton_step_on_the_unseen_directions_is_the_barriers():
    """The barrier's Newton step d = -(G + 2 R^T R)^-1 g keeps, on the null space of the misfit
    R, the barrier's own step however small its curvature mu is next to the misfit's: there
    mu N^T d = -N^T g. Only the free column (no barrier) borrows a sliver of the misfit."""
    rng = np.random.default_rng(0)
    p, b, mu = 6, 3, 1e-12
    R = rng.normal(size=(b, p))
    R[:, -1], R[-1] = 0.0, np.eye(p)[-1]  # the free term (an offset) is identified, as on a robot
    free = np.zeros(p)
    free[-1] = 1.0
    G = np.diag(mu * (1 - free))
    g = rng.normal(size=p)
    d = np.asarray(C._newton_solve_split(jnp.asarray(G), jnp.asarray(R), jnp.asarray(g), jnp.asarray(free)))
    N = np.linalg.svd(R)[2][b:].T  # (p, p - b), orthonormal basis of null(R)
    np.testing.assert_allclose(mu * N.T @ d, -N.T @ g, rtol=1e-6, atol=1e-6 * np.linalg.norm(N.T @ g))


def test_consistent_estimate_is_valid_for_random_torques(setup, fit_random):
    robot = setup[0]
    fit = fit_random
    assert bool(fit.valid)
    inertial, joint = robot.split(fit.theta)
    lam = np.linalg.eigvalsh(np.asarray(jax.vmap(inertia.pseudo_inertia)(inertial)))
    assert np.all(lam[:, 0] > 1e-9 * lam[:, -1])  # strictly inside, not at rounding distance
    assert np.all(np.asarray(joint[:, :2]) > 0) and np.all(np.asarray(joint[:, 3]) > 0)  # fv, fc, ks
    # the unconstrained estimate of the same data is not physical
    ls_bodies = C.lift(setup[2], fit.base_ls, setup[4])[:30].reshape(3, 10)
    assert not bool(jnp.all(inertia.is_consistent(ls_bodies)))


def test_equals_wls_when_that_is_valid_and_weight_is_zero(setup, fit_valid):
    robot, _, base, theta, _, _ = setup
    fit = fit_valid
    # premise: the WLS base estimate is reached by consistent bodies (the truth's
    # non-identifiable parameters) with positive friction
    lifted = C.lift(base, fit.base_ls, theta)
    inertial, joint = robot.split(lifted)
    assert (
        bool(jnp.all(inertia.is_consistent(inertial)))
        and bool(jnp.all(joint[:, :2] > 0))
        and bool(jnp.all(joint[:, 3] > 0))
    )
    assert bool(fit.valid) and bool(fit.converged)
    np.testing.assert_allclose(fit.base, fit.base_ls, rtol=0, atol=1e-6 * float(jnp.min(fit.std_ls)))
    assert float(fit.cost - fit.rss) < 1e-6  # cost includes the WLS residual rss


def test_to_urdf_round_trip(setup, fit_valid, tmp_path):
    robot = setup[0]
    path = C.to_urdf(robot, fit_valid.theta, tmp_path / "arm3.urdf")
    loaded = jaxid.Robot.from_urdf(path, tip_link="flange")
    inertial, _ = robot.split(fit_valid.theta)
    np.testing.assert_allclose(loaded.inertial, inertial, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(loaded.placements, robot.placements, atol=1e-15)
    np.testing.assert_allclose(loaded.tip, robot.tip, atol=1e-15)
    np.testing.assert_allclose(loaded.q_max, robot.q_max)
    bad = fit_valid.theta.at[0].set(-1.0)  # negative mass
    with pytest.raises(ValueError, match="not physically consistent"):
        C.to_urdf(robot, bad, tmp_path / "bad.urdf")


def test_rejects_bad_input(setup):
    robot, W, base, _, _, _ = setup
    tau = jnp.zeros(W.shape[0])
    with pytest.raises(ValueError, match="weight"):
        C.identify_consistent(robot, W, tau, base=base, weight=-1.0)
    with pytest.raises(ValueError, match="prior"):
        C.identify_consistent(robot, W, tau, base=base, prior="l2")
    with pytest.raises(ValueError, match="W must have shape"):
        C.identify_consistent(robot, W[:, :-1], tau, base=base)
    with pytest.raises(ValueError, match="nominal"):
        C.identify_consistent(robot, W, tau, base=base, nominal=jnp.zeros(3))
    with pytest.raises(ValueError, match="standard parameters"):
        C.identify_consistent(robot, W, tau, base=jaxid.base_from_regressor(W[:, :30]))


def test_holdout_table(setup):
    robot, W, base, theta, nominal, rng = setup
    tau = W @ theta + 0.05 * rng.normal(size=W.shape[0])
    half = W.shape[0] // 2
    res = C.holdout(
        robot, [(W[:half], tau[:half])], (W[half:], tau[half:]), weights=(1e-3, 1.0), nominal=nominal, base=base
    )
    rows = res["rows"]
    assert [r["model"] for r in rows] == ["wls", "consistent", "consistent"]
    assert all(r["valid"] and r["converged"] for r in rows[1:])
    assert res["best"]["nrms_limits"] == min(r["nrms_limits"] for r in rows[1:])
    assert all(np.isfinite(r["nrms_limits"]) and r["rmse"].shape == (3,) for r in rows)
    # The held-out score is the validation metric (one normalisation: RMSE / (2 tau_max), as FloBaRoID).
    real = np.asarray(tau[half:]).reshape(-1, 3)
    pred = np.asarray(W[half:] @ rows[2]["theta"]).reshape(-1, 3)
    expected = results.validation_metrics(real, pred, np.asarray(robot.tau_max))["nrms_limits"]["overall"]
    assert rows[2]["nrms_limits"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("weight", [0.0, 3.0])
def test_covariance_under_the_constraints_matches_the_spread_of_refits(setup, weight):
    """The consistent estimate's first-order covariance (implicit differentiation of the barrier
    fit, capped at the least-squares one) against the spread of the estimate over noise draws, on
    data whose least-squares bodies are not all physical at this noise (constraints active in some
    draws), with the prior pulling toward a nominal 30 % off on link 1: the median ratio of the
    empirical std to the predicted one near 1, and never a covariance above the least-squares one."""
    robot, W, base, theta, nominal, _ = setup
    rng = np.random.default_rng(7)
    tau0, noise = W @ theta, 0.05
    fit = C.identify_consistent(
        robot, W, tau0 + noise * rng.normal(size=W.shape[0]), nominal=nominal, base=base, weight=weight
    )
    Li = np.linalg.inv(np.linalg.cholesky(np.asarray(fit.cov_ls)))
    assert np.linalg.eigvalsh(Li @ np.asarray(fit.cov) @ Li.T).max() <= 1 + 1e-9
    draws = [
        np.asarray(
            C.identify_consistent(
                robot,
                W,
                tau0 + noise * rng.normal(size=W.shape[0]),
                nominal=nominal,
                base=base,
                weight=weight,
                covariance=False,
            ).base
        )
        for _ in range(40)
    ]
    ratio = np.std(draws, axis=0, ddof=1) / np.sqrt(np.diag(np.asarray(fit.cov)))
    # 40 draws: a std's sampling error is ~11 %; the median over the base parameters is tighter
    assert 0.8 < np.median(ratio) < 1.25, np.sort(ratio)
    if weight == 0.0:  # no prior: the least-squares covariance where no constraint holds the estimate
        assert np.median(np.sqrt(np.diag(np.asarray(fit.cov))) / np.asarray(fit.std_ls)) > 0.9
