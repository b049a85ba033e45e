"""Estimators against closed forms, covariance calibration, robustness and input checks."""

import functools

import jax
import numpy as np
import pytest

import jaxid  # noqa: F401  (float64)
from jaxid.identification.estimators import METHODS, identify

N, n, p = 60, 2, 4
SIGMA = np.array([0.02, 0.2])  # per-joint noise, deliberately unequal


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    # Columns of very different size, as with inertial vs friction parameters.
    W = rng.normal(size=(N * n, p)) * np.array([1.0, 30.0, 0.05, 2.0])
    theta = np.array([1.5, -0.2, 4.0, 0.7])
    tau = W @ theta + (rng.normal(size=(N, n)) * SIGMA).ravel()
    return W, tau, theta


def _rows(W, tau):
    return W.reshape(N, n, p), tau.reshape(N, n)


def test_ols_matches_lstsq_and_closed_form_covariance(problem):
    W, tau, _ = problem
    fit = identify(W, tau, "ols", n_joints=n)
    ref, *_ = np.linalg.lstsq(W, tau, rcond=None)
    np.testing.assert_allclose(fit.theta, ref, rtol=1e-10)
    r = tau - W @ ref
    cov = (r @ r) / (N * n - p) * np.linalg.inv(W.T @ W)
    np.testing.assert_allclose(fit.cov, cov, rtol=1e-8)
    np.testing.assert_allclose(fit.rel_std, 100 * np.sqrt(np.diag(cov)) / np.abs(ref), rtol=1e-8)
    np.testing.assert_allclose(fit.residual_rms, np.sqrt(np.mean(r.reshape(N, n) ** 2, 0)), rtol=1e-10)
    np.testing.assert_allclose(fit.sigma2, np.sum(r.reshape(N, n) ** 2, 0) / (N - p), rtol=1e-10)
    assert fit.dof == N * n - p
    Ws = W / np.linalg.norm(W, axis=0)
    np.testing.assert_allclose(fit.cond, np.linalg.cond(Ws), rtol=1e-10)
    # Unstacked input gives the same estimate.
    np.testing.assert_allclose(identify(*_rows(W, tau), "ols").theta, ref, rtol=1e-10)


def test_wls_two_step_matches_weighted_normal_equations(problem):
    W, tau, _ = problem
    fit = identify(W, tau, "wls", n_joints=n)
    # Step 1: each joint's own equations by OLS; every column acts on every joint here.
    var = np.array([np.linalg.lstsq(W[j::n], tau[j::n], rcond=None)[1][0] / (N - p) for j in range(n)])
    w = np.tile(1 / var, N)
    info = W.T @ (w[:, None] * W)
    np.testing.assert_allclose(fit.theta, np.linalg.solve(info, W.T @ (w * tau)), rtol=1e-9)
    np.testing.assert_allclose(fit.cov, np.linalg.inv(info), rtol=1e-8)


def test_wls_supplied_covariance_matches_gls(problem):
    W, tau, _ = problem
    C = np.array([[0.04, 0.01], [0.01, 0.09]])
    Si = np.kron(np.eye(N), np.linalg.inv(C))
    info = W.T @ Si @ W
    fit = identify(W, tau, "wls", cov=C, n_joints=n)
    np.testing.assert_allclose(fit.theta, np.linalg.solve(info, W.T @ Si @ tau), rtol=1e-9)
    np.testing.assert_allclose(fit.cov, np.linalg.inv(info), rtol=1e-8)
    # Per-sample blocks, per-joint variances and row weights are the same system.
    same = identify(W, tau, "wls", cov=np.broadcast_to(C, (N, n, n)))
    np.testing.assert_allclose(same.theta, fit.theta, rtol=1e-10)
    diag = identify(W, tau, "wls", cov=SIGMA**2)
    weighted = identify(W, tau, "wls", weights=np.tile(1 / SIGMA**2, N), n_joints=n)
    np.testing.assert_allclose(diag.theta, weighted.theta, rtol=1e-10)
    np.testing.assert_allclose(diag.cov, weighted.cov, rtol=1e-10)


def test_ridge_matches_closed_form_and_gcv(problem):
    W, tau, _ = problem
    d = np.linalg.norm(W, axis=0)
    A = W / d
    lam = 0.3
    x = np.linalg.solve(A.T @ A + lam * np.eye(p), A.T @ tau)
    np.testing.assert_allclose(identify(W, tau, "ridge", lam=lam, n_joints=n).theta, x / d, rtol=1e-10)
    # GCV over the documented grid, with the hat matrix built explicitly.
    s1 = np.linalg.svd(A, compute_uv=False)[0]
    grid = s1**2 * np.logspace(-14, 1, 61)
    M = N * n

    def gcv(lam):
        H = A @ np.linalg.solve(A.T @ A + lam * np.eye(p), A.T)
        r = tau - H @ tau
        return M * (r @ r) / (M - np.trace(H)) ** 2

    fit = identify(W, tau, "ridge", n_joints=n)
    np.testing.assert_allclose(fit.lam, grid[np.argmin([gcv(g) for g in grid])], rtol=1e-12)
    np.testing.assert_allclose(
        fit.dof, M - np.trace(A @ np.linalg.solve(A.T @ A + fit.lam * np.eye(p), A.T)), rtol=1e-9
    )


def test_tls_matches_svd_formula(problem):
    W, tau, _ = problem
    d, nb = np.linalg.norm(W, axis=0), np.linalg.norm(tau)
    v = np.linalg.svd(np.column_stack([W / d, tau / nb]))[2][-1]
    np.testing.assert_allclose(identify(W, tau, "tls", n_joints=n).theta, -v[:p] / v[p] * nb / d, rtol=1e-9)


def test_noiseless_data_is_recovered_by_every_method(problem):
    W, _, theta = problem
    for method in METHODS:
        kw = {"lam": 0.0} if method == "ridge" else {}
        fit = identify(W, W @ theta, method, n_joints=n, **kw)
        np.testing.assert_allclose(fit.theta, theta, rtol=1e-9, err_msg=method)


# One jitted, vmapped function per method, shared by the tests below.
BATCHED = {m: jax.jit(jax.vmap(functools.partial(identify, method=m, n_joints=n))) for m in METHODS}


def _noise_draws(sigma):
    keys = jax.random.split(jax.random.PRNGKey(42), 200)
    return jax.vmap(lambda k: (jax.random.normal(k, (N, n)) * sigma).ravel())(keys)


@pytest.mark.parametrize("method", METHODS)
def test_jit_vmap_over_noise_seeds_and_covariance_calibration(problem, method):
    """200 noise draws in one jitted vmap; where the method's covariance model holds, the
    predicted std must match the spread of the estimates over the draws."""
    W, _, theta = problem
    # sigma^2 (W^T W)^-1 assumes one noise level; wls and irls model one per joint.
    sigma = SIGMA if method in ("wls", "irls") else np.full(n, 0.1)
    noise = _noise_draws(sigma)
    Wb = np.broadcast_to(W, (200, *W.shape))
    fits = BATCHED[method](Wb, W @ theta + noise)
    for k in range(2):
        single = identify(W, W @ theta + noise[k], method, n_joints=n)
        np.testing.assert_allclose(fits.theta[k], single.theta, rtol=1e-9)
        np.testing.assert_allclose(fits.std[k], single.std, rtol=1e-7)
    if method not in ("ols", "wls"):  # irls: asymptotic formula; ridge, tls: other noise models
        return
    spread = np.std(np.asarray(fits.theta), axis=0, ddof=1)
    predicted = np.sqrt(np.mean(np.asarray(fits.std) ** 2, axis=0))
    np.testing.assert_allclose(predicted, spread, rtol=0.15)
    if method == "wls":  # with unequal joint noise, weighting must pay off
        ols = BATCHED["ols"](Wb, W @ theta + noise)
        assert np.all(spread < np.std(np.asarray(ols.theta), axis=0, ddof=1))


@pytest.mark.parametrize("loss", ["huber", "tukey"])
def test_irls_ignores_outliers(problem, loss):
    W, tau, theta = problem
    clean = identify(W, tau, "ols", n_joints=n)
    rng = np.random.default_rng(3)
    bad = rng.choice(N * n, size=12, replace=False)  # 10 % of the rows
    dirty = tau.copy()
    dirty[bad] += rng.choice([-1, 1], size=bad.size) * 50.0 * SIGMA.max()
    ols = identify(W, dirty, "ols", n_joints=n)
    rob = identify(W, dirty, "irls", n_joints=n, loss=loss)
    err_ols = np.abs(ols.theta - theta) / clean.std
    err_rob = np.abs(rob.theta - theta) / clean.std
    assert err_ols.max() > 5 and err_rob.max() < 3, (err_ols, err_rob)
    assert np.all(rob.std < 2 * clean.std)  # its error bars stay honest, not inflated


def test_rank_deficient_names_columns_unless_regularised(problem):
    W, tau, _ = problem
    dead = 1e-17 * np.random.default_rng(4).normal(size=N * n)  # rounding noise, e.g. cos(pi/2)
    Wd = np.column_stack([W[:, :2], W[:, 0] - 2 * W[:, 1], dead])
    names = ["m1", "mx1", "combo", "dead"]
    with pytest.raises(ValueError, match="rank deficient") as err:
        identify(Wd, tau, n_joints=n, names=names)
    msg = str(err.value)
    assert "dead (zero column)" in msg and "base_parameters" in msg
    assert sum(k in msg.split("unidentifiable")[1].split(".")[0] for k in ("m1 (", "mx1 (", "combo (")) == 1
    with pytest.raises(ValueError, match=r"theta3 \(zero column\)"):
        identify(Wd, tau, "ols")
    # Truncated pseudo-inverse = the minimum-norm solution in the scaled variables.
    d = np.r_[np.linalg.norm(Wd[:, :3], axis=0), 1.0]
    ref = np.linalg.lstsq(np.column_stack([Wd[:, :3], 0 * dead]) / d, tau, rcond=1e-10)[0] / d
    np.testing.assert_allclose(identify(Wd, tau, "ols", rcond=1e-10, n_joints=n).theta, ref, rtol=1e-8, atol=1e-12)
    assert np.all(np.isfinite(identify(Wd, tau, "ridge", lam=1e-6, n_joints=n).theta))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(W=np.full((120, 4), np.nan)), "W contains NaN"),
        (dict(tau=np.r_[np.inf, np.ones(119)]), "tau contains NaN or inf"),
        (dict(tau=np.ones(119)), "tau must have shape"),
        (dict(W=np.ones((3, 5)), tau=np.ones(3)), "more rows than parameters"),
        (dict(W=np.ones((2, 2, 5)), tau=np.ones((2, 2))), "more rows than parameters"),
        (dict(method="wls"), "pass n_joints"),
        (dict(method="lasso"), "unknown method"),
        (dict(n_joints=7), "not a multiple"),
        (dict(lam=1.0), "lam is used by method='ridge'"),
        (dict(method="wls", cov=np.array([[1.0, 2.0], [2.0, 1.0]])), "positive definite"),
        (dict(method="wls", cov=np.ones(3), n_joints=2), "cov must have shape"),
        (dict(method="wls", weights=-np.ones(120)), "non-negative"),
        (dict(method="irls", loss="cauchy"), "unknown loss"),
        (dict(W=np.zeros((120, 4)), method="ridge"), "all zeros"),
    ],
)
def test_bad_inputs_raise(problem, kwargs, match):
    W, tau, _ = problem
    args = dict(W=W, tau=tau, method="ols") | kwargs  # pooled rows, unless a case names its method
    with pytest.raises(ValueError, match=match):
        identify(args.pop("W"), args.pop("tau"), **args)


def test_wls_two_step_needs_samples_per_joint():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(8, 4))  # 4 samples of 2 joints, 4 parameters on each joint
    with pytest.raises(ValueError, match="more samples than parameters per joint"):
        identify(W, rng.normal(size=8), "wls", n_joints=2)


# ------------------------------------------------------------ dead channels, jit checks


def _two_blocks(rng, N=200):
    """Joint 0 acts on parameters 0, 1; joint 1 on 2 and an offset 3 (which reproduces a
    torque stuck at a constant exactly)."""
    W = np.zeros((N, 2, 4))
    W[:, 0, 0], W[:, 0, 1] = rng.normal(size=N), 3 * rng.normal(size=N)
    W[:, 1, 2], W[:, 1, 3] = rng.normal(size=N), 1.0
    theta = np.array([1.5, -0.2, 4.0, 0.7])
    tau = np.einsum("knp,p->kn", W, theta) + rng.normal(size=(N, 2)) * [0.1, 0.05]
    return W, tau


@pytest.mark.parametrize("stuck", [0.0, 3.7])
def test_wls_dead_or_stuck_channel_does_not_wreck_the_other_joint(stuck):
    """A joint fitted exactly by its own equations used to get weight ~1e300 and push the
    other joint below the pseudo-inverse cut: every estimate ~1e-164 (issue 18, item 1)."""
    W, tau = _two_blocks(np.random.default_rng(5))
    tau[:, 1] = stuck
    fit = identify(W, tau, "wls")
    alone = identify(W[:, :1, :2], tau[:, :1], "ols")  # OLS on joint 0's own rows
    np.testing.assert_allclose(fit.theta[:2], alone.theta, rtol=1e-6)
    np.testing.assert_allclose(fit.std[:2], alone.std, rtol=1e-6)
    np.testing.assert_allclose(fit.theta[2:], [0.0, stuck], atol=1e-5)  # what joint 1's data say


def test_wls_variance_floor_bounds_every_weight():
    from jaxid.identification.estimators import _variance_floor

    tau2 = np.column_stack([np.full(50, 1e3), np.zeros(50), np.linspace(-1, 1, 50)])
    v = np.asarray(_variance_floor(np.array([1e-40, 0.0, 4e-2]), tau2))
    assert v[0] == pytest.approx((1e-6 * 1e3) ** 2)  # relative to the joint's torque scale
    assert v[1] == pytest.approx(1e-6 * 4e-2)  # at most 1e6 x the noisiest joint's weight
    assert v[2] == 4e-2  # real noise untouched
    assert np.all(np.asarray(_variance_floor(np.zeros(2), np.zeros((5, 2)))) > 0)


JIT_THETA = {m: jax.jit(lambda W, t, m=m: identify(W, t, m, n_joints=n).theta) for m in ("ols", "wls")}


@pytest.mark.parametrize("method", ["ols", "wls"])
def test_jit_raises_on_nan_instead_of_returning_nan(problem, method):
    W, tau, _ = problem
    assert np.all(np.isfinite(JIT_THETA[method](W, tau)))
    bad = tau.copy()
    bad[7] = np.nan
    with pytest.raises(Exception, match="tau contains NaN or inf"):
        JIT_THETA[method](W, bad).block_until_ready()
    Wb = W.copy()
    Wb[3, 1] = np.inf
    with pytest.raises(Exception, match="W contains NaN or inf"):
        JIT_THETA[method](Wb, tau).block_until_ready()
    # check=False: the documented fast path, no check compiled in.
    fast = jax.jit(lambda W, t: identify(W, t, method, n_joints=n, check=False).theta)
    assert np.all(np.isnan(fast(W, bad)))


def test_vmap_and_traced_cov_checks(problem):
    W, tau, _ = problem
    taus = np.stack([tau, tau])
    taus[1, 0] = np.nan
    with pytest.raises(Exception, match="tau contains NaN"):
        BATCHED["ols"](np.stack([W, W]), taus).block_until_ready()
    gls = jax.jit(lambda W, t, c: identify(W, t, "wls", cov=c).theta)
    assert np.all(np.isfinite(gls(W, tau, SIGMA**2)))
    with pytest.raises(Exception, match="cov must be finite and positive definite"):
        gls(W, tau, np.array([0.01, -1.0])).block_until_ready()
    with pytest.raises(Exception, match="W is all zeros"):
        JIT_THETA["ols"](np.zeros_like(W), tau).block_until_ready()


def test_traced_checks_work_inside_shard_map(problem):
    """As run_study uses identify (eqx.error_if's lax.cond does not type-check there)."""
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    W, tau, _ = problem
    mesh = Mesh(np.array(jax.devices()[:1]), ("runs",))
    f = jax.jit(
        jax.shard_map(
            jax.vmap(lambda t: identify(W, t, "wls", n_joints=n).theta),
            mesh=mesh,
            in_specs=P("runs"),
            out_specs=P("runs"),
        )
    )
    taus = np.stack([tau, tau])
    np.testing.assert_allclose(f(taus)[1], identify(W, tau, "wls", n_joints=n).theta, rtol=1e-10)
    taus[1, 3] = np.nan
    with pytest.raises(Exception, match="tau contains NaN or inf"):
        f(taus).block_until_ready()


def test_wls_variances_are_the_two_step_weights(problem):
    from jaxid.identification.estimators import wls_variances

    W, tau, _ = problem
    v = np.asarray(wls_variances(W, tau, n))
    w = np.tile(1 / v, N)
    ref = np.linalg.solve(W.T @ (w[:, None] * W), W.T @ (w * tau))
    np.testing.assert_allclose(identify(W, tau, "wls", n_joints=n).theta, ref, rtol=1e-9)


def test_a_new_sample_count_in_the_same_bucket_reuses_the_program(monkeypatch):
    """identify pads the rows with zero samples to ``batching.bucket(N)``: a second N of the same
    bucket does not trace again, and the padded fit equals the unpadded one (identify traced
    under jit, where nothing is padded) for every method, IRLS's masked median included.
    Two-step wls (like ols and ridge) is solved on the host from the per-joint R's: it traces
    nothing, and equals the traced fit all the same."""
    from jaxid import cache
    from jaxid.dynamics.batching import bucket
    from jaxid.identification import estimators

    monkeypatch.delitem(cache._state, "dir", raising=False)  # plain jit: count traces, not stored programs
    traces = []
    scaled = estimators._scaled  # every method's trace calls it once
    monkeypatch.setattr(
        estimators,
        "_scaled",
        lambda *a, **k: (traces.append(1) if jaxid.arrays.is_traced(*a) else None) or scaled(*a, **k),
    )
    rng = np.random.default_rng(7)
    m, k = 3, 5  # shapes no other test compiles
    theta = rng.normal(size=k)
    assert bucket(300) == bucket(333) > 333
    for method in ("wls", "irls", "tls"):  # ols and ridge share wls's program structure
        counts = []
        for N_ in (300, 333):
            W = rng.normal(size=(N_, m, k)) * np.logspace(0, 2, k)
            tau = W @ theta + rng.normal(size=(N_, m)) * np.array([0.01, 0.1, 1.0])
            tau[::37, 1] += 5.0  # outliers for IRLS
            before = len(traces)
            fit = identify(W, tau, method)
            counts.append(len(traces) - before)
            if N_ == 300:
                continue
            ref = jax.jit(functools.partial(identify, method=method, check=False))(W, tau)
            for f in ("theta", "std", "residual_rms", "sigma2", "dof"):
                np.testing.assert_allclose(getattr(fit, f), getattr(ref, f), rtol=1e-9, err_msg=f"{method} {f}")
        want = [0, 0] if method == "wls" else [1, 0]
        assert counts == want, f"{method}: traces per call {counts}, expected {want}"


def test_python_and_cli_default_to_the_same_method(problem):
    """One default (issue 34): `jaxid.identify` and `jaxid identify` both fit two-step WLS, and
    the Python default needs the joint count (it says how to give it, or to ask for OLS)."""
    import inspect

    from jaxid.cli import build_parser
    from jaxid.identification import streaming
    from jaxid.workflow.requests import IdentifyRequest

    cli = build_parser().parse_args(["identify", "data.csv"]).method
    assert inspect.signature(jaxid.identify).parameters["method"].default == cli == "wls"
    assert inspect.signature(streaming.fit).parameters["method"].default == cli
    assert IdentifyRequest.__dataclass_fields__["method"].default == cli
    W, tau, _ = problem
    np.testing.assert_array_equal(jaxid.identify(W, tau, n_joints=n).theta, identify(W, tau, "wls", n_joints=n).theta)
    assert jaxid.identify(*_rows(W, tau)).method == "wls"
    with pytest.raises(ValueError, match="pass n_joints .*or method='ols'"):
        jaxid.identify(W, tau)


@pytest.mark.parametrize("method", ["ols", "wls", "ridge"])
def test_reduced_fit_on_the_host_equals_the_traced_one(method):
    """``_reduced_fit`` follows its arguments' namespace: numpy on concrete per-joint R's (what
    ``identify`` runs), jax.numpy under jit (studies, ``jax.jit(identify)``). Every field agrees,
    on rows where each joint sees only some parameters (per-joint ranks below p, as a serial
    arm's wrist), with GCV's lambda for ridge."""
    from jaxid.identification import estimators

    rng = np.random.default_rng(3)
    N_, m, k = 80, 3, 6
    W = rng.normal(size=(N_, m, k)) * np.logspace(0, 2, k)
    W[:, 1, :2] = 0.0  # joint 2 does not see parameters 1-2, joint 3 sees only 4-6
    W[:, 2, :3] = 0.0
    tau = W @ rng.normal(size=k) + rng.normal(size=(N_, m)) * np.array([0.01, 0.1, 1.0])
    R = np.asarray(estimators._joint_r(W.reshape(-1, k), tau.reshape(-1), m))
    rcond = 1e-13
    host, ranks = estimators._reduced_fit(R, N_, None, None, rcond, method=method, scale=True)
    fit = jax.jit(functools.partial(estimators._reduced_fit, method=method, scale=True), static_argnums=(2, 3))
    traced, traced_ranks = fit(R, N_, None, None, rcond)
    assert isinstance(host.theta, jax.Array)  # identify's results stay jax arrays
    np.testing.assert_array_equal(ranks, traced_ranks)
    assert list(ranks) == [6, 4, 3]
    for f in ("theta", "cov", "std", "cond", "singular_values", "residual_rms", "sigma2", "dof", "lam"):
        np.testing.assert_allclose(getattr(host, f), getattr(traced, f), rtol=1e-9, atol=1e-300, err_msg=f)
