"""jaxid.identification.streaming: least squares on rows reduced chunk by chunk equals the
dense estimators, and the workflow holds no dense W above the threshold."""

import dataclasses

import jax
import numpy as np
import pytest

from jaxid import simulation, workflow
from jaxid.identification import estimators, screening, streaming
from jaxid.identification.base import SAMPLES

FIELDS = ("theta", "std", "cov", "sigma2", "residual_rms", "cond", "singular_values", "dof", "lam")


def _close(a, b, rtol=1e-10, cov_rtol=None, rss_rtol=None):
    for f in FIELDS:
        tol = cov_rtol if cov_rtol is not None and f in ("std", "cov") else rtol
        tol = rss_rtol if rss_rtol is not None and f in ("sigma2", "residual_rms", "std", "cov") else tol
        x, y = np.asarray(getattr(a, f)), np.asarray(getattr(b, f))
        assert np.allclose(x, y, rtol=tol, atol=tol * np.max(np.abs(x))), (f, x, y)


@pytest.fixture(scope="module")
def rows():
    """A 3-joint system: columns over three decades of scale, one parameter joint 3 does not
    see, noise levels a decade apart per joint."""
    rng = np.random.default_rng(0)
    N, n, p = 1100, 3, 8
    W = rng.normal(size=(N, n, p)) * np.logspace(0, 3, p)
    W[:, 2, 5] = 0.0
    tau = W @ rng.normal(size=p) + rng.normal(size=(N, n)) * np.array([0.01, 0.1, 1.0])
    return W, tau, streaming.from_rows(W, tau, n, chunk=256)


@pytest.mark.parametrize("method", ["ols", "wls", "ridge"])
def test_reduced_fit_equals_dense(rows, method):
    W, tau, red = rows
    assert int(red.N) == len(W)
    _close(estimators.identify(W, tau, method, n_joints=3), streaming.fit(red, method))


def test_known_variances_and_mask_equal_dense(rows):
    W, tau, _ = rows
    keep = np.random.default_rng(1).random(len(W)) > 0.3
    red = streaming.from_rows(W, tau, 3, mask=keep, chunk=256)
    var = np.array([1e-4, 1e-2, 1.0])
    _close(estimators.identify(W[keep], tau[keep], "wls", cov=var), streaming.fit(red, "wls", variances=var))


def test_rank_deficiency_is_named_from_the_reduced_form(rows):
    W, tau, _ = rows
    W = np.concatenate([W, W[..., :1] + W[..., 1:2]], axis=-1)
    with pytest.raises(ValueError, match="rank deficient.*theta8"):
        streaming.fit(streaming.from_rows(W, tau, 3), "ols")


def _trajectory(duration, n=2, fs=100.0):
    t = np.arange(0.0, duration, 1.0 / fs)
    w = 2 * np.pi * np.array([0.25, 0.5, 0.75])
    a = np.random.default_rng(1).normal(size=(3, n)) * 0.6
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return t, s @ a, (c * w) @ a, (-s * w**2) @ a


@pytest.fixture(scope="module")
def experiment():
    """A simulated planar2 with friction and offsets, qd and qdd logged, and one corrupt torque
    sample (the outlier screening drops it and refits)."""
    robot, desc = workflow.model(builtin="planar2", joint_terms=("fv", "fc", "offset"))
    t, q, qd, qdd = _trajectory(25.0)
    m = simulation.simulate(
        robot.with_joint_terms(()), t, q, qd, qdd, jax.random.PRNGKey(3), noise_key=jax.random.PRNGKey(11), sigma_q=0.0
    )
    tau = np.asarray(m.data.tau).copy()
    tau[700, 1] += 50.0
    data = dataclasses.replace(m.data, tau=tau, qd=qd, qdd=qdd)
    prepared = workflow.prepare([data, data.slice(0, 2 * SAMPLES // 3)], robot, workflow.Policy(reversal_band=0.02))
    return robot, desc, prepared


def test_workflow_streams_above_the_threshold_and_agrees(experiment, monkeypatch):
    robot, desc, prepared = experiment
    dense = workflow.identify_experiment(robot, prepared, description=desc)
    assert dense.screening.outlier_samples and dense.screening.reversals_dropped > 0
    chunks = []

    def recorded(model, red, columns, q, *rest):
        chunks.append(q.shape[0])
        return step(model, red, columns, q, *rest)

    def dense_path(*args, **kw):
        raise AssertionError("a dense W was built above the threshold")

    step = streaming._fold_chunk
    monkeypatch.setattr(streaming, "_fold_chunk", recorded)
    monkeypatch.setattr(streaming, "STREAM_BYTES", 0)
    for name in ("regressor_rows",):
        monkeypatch.setattr(workflow.regress, name, dense_path)  # where the stages call it
    monkeypatch.setattr(screening, "screen_fit", dense_path)
    monkeypatch.setattr(estimators, "identify", dense_path)
    streamed = workflow.identify_experiment(robot, prepared, description=desc)
    # Every regressor evaluation is one chunk; the outlier refit is a second pass.
    assert chunks and max(chunks) == SAMPLES and len(chunks) == 2 * (-(-len(prepared.datasets[0]) // SAMPLES) + 1)
    assert streamed.screening == dense.screening
    assert np.allclose(streamed.theta, dense.theta, rtol=1e-10, atol=0)
    assert np.allclose(streamed.std, dense.std, rtol=1e-10, atol=0)
    assert np.allclose(streamed.estimation.sigma2, dense.estimation.sigma2, rtol=1e-10)


def test_sandwich_covariance_streamed_equals_dense(experiment, monkeypatch):
    """q-only runs (filtered, so the HAC sandwich): the covariance accumulated chunk by chunk from
    the regressor evaluated again (streamed) equals the one from the held rows (dense)."""
    robot, desc, prepared = experiment
    q_only = workflow.prepare(
        [dataclasses.replace(d, qd=None, qdd=None) for d in prepared.datasets],
        robot,
        workflow.Policy(reversal_band=0.02),
    )
    assert all(c["memory"] > 0 for c in q_only.choices)
    dense = workflow.identify_experiment(robot, q_only, description=desc)
    monkeypatch.setattr(streaming, "STREAM_BYTES", 0)
    streamed = workflow.identify_experiment(robot, q_only, description=desc)
    assert dense.estimation.covariance == streamed.estimation.covariance == "hac"
    np.testing.assert_allclose(streamed.cov, dense.cov, rtol=1e-8, atol=1e-10 * np.abs(dense.cov).max())
    assert not np.allclose(dense.std, dense.estimation.std_white, rtol=1e-3)


@pytest.mark.parametrize("loss", ["huber", "tukey"])
def test_irls_on_regenerated_rows_equals_dense(rows, loss):
    """Streaming IRLS (every reweighting a new pass over the rows) equals the dense estimator,
    on rows with gross outliers (a callable run: rows produced again on every pass)."""
    W, tau, _ = rows
    tau = tau.copy()
    tau[::97, 1] += 40.0
    model = type("Rows", (), {"n": 3})()  # residuals of a callable run need no model
    red = streaming.from_rows(W, tau, 3)
    streamed = streaming.irls(model, [lambda: (W, tau)], np.arange(W.shape[-1]), red, loss=loss)
    # Huber's covariance depends on the residuals through the MAD scale and psi; the residuals
    # are 1e5 times smaller than the torques here, so their rounding is ~1e-11 of them: the dense
    # estimator's own std moves by 6e-11 between 20 and 40 iterations.
    _close(estimators.identify(W, tau, "irls", n_joints=3, loss=loss), streamed, cov_rtol=1e-9)


def test_workflow_streams_irls_and_the_consistent_fit(experiment, monkeypatch):
    """IRLS and the consistent fit above the threshold: no dense W, the dense path's numbers."""
    robot, desc, prepared = experiment
    dense = {
        kw: workflow.identify_experiment(robot, prepared, description=desc, **dict(kw))
        # the consistent fit at a given weight: cross-validating it (the default) holds each fold's rows,
        # as the command line's does, within jaxid.memory's limit
        for kw in ((("method", "irls"),), (("consistent", True), ("prior_weight", 1e-3)))
    }

    def dense_path(*args, **kw):
        raise AssertionError("a dense W was built above the threshold")

    monkeypatch.setattr(streaming, "STREAM_BYTES", 0)
    monkeypatch.setattr(workflow.regress, "regressor_rows", dense_path)  # where the stages call it
    monkeypatch.setattr(screening, "screen_fit", dense_path)
    monkeypatch.setattr(estimators, "identify", dense_path)
    for kw, d in dense.items():
        s = workflow.identify_experiment(robot, prepared, description=desc, **dict(kw))
        converged = [None if p.consistency is None else p.consistency.converged for p in (s, d)]
        assert s.screening == d.screening and converged[0] == converged[1]
        np.testing.assert_allclose(s.theta, d.theta, rtol=1e-10, atol=1e-10 * np.max(np.abs(d.theta)))
        # the least-squares std to rounding; the consistent estimate's (first order at the barrier's last
        # iterate, where an active constraint's curvature is ~1/mu) to its conditioning
        np.testing.assert_allclose(s.std, d.std, rtol=1e-10 if s.consistency is None else 1e-4)
        if s.consistency is not None:
            np.testing.assert_allclose(s.consistency.cov_ls, d.consistency.cov_ls, rtol=1e-10, atol=1e-20)
        if d.standard is not None:
            np.testing.assert_allclose(s.standard, d.standard, rtol=1e-8, atol=1e-8 * np.max(np.abs(d.standard)))


def _conditioned(cond, noise, N=400, n=3, p=6, seed=2):
    """Rows (N, n, p) with singular values over ``cond`` (columns scaled over 2 decades) and
    torques with noise of relative size ``noise``."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(N * n, p)))
    V, _ = np.linalg.qr(rng.normal(size=(p, p)))
    W = ((U * np.logspace(0, -np.log10(cond), p)) @ V.T * np.logspace(0, 2, p)).reshape(N, n, p)
    tau = W @ rng.normal(size=p)
    return W, tau + noise * np.std(tau) * rng.normal(size=tau.shape)


@pytest.mark.parametrize(
    "cond, noise, gram", [(10.0, 0.01, True), (1e5, 0.01, False), (10.0, 1e-6, True), (10.0, 0.0, False)]
)
def test_condition_check_picks_the_reduction(cond, noise, gram, monkeypatch):
    """Well-conditioned rows stay on the Gram path; an ill-conditioned W (eps cond^2 above
    GRAM_RTOL) and noise-free torques (a zero residual cannot be certified) are reduced by QR;
    all equal the dense QR estimator to 1e-10 (QR's own error is ~eps cond = 2e-11 at cond 1e5).
    A residual 1e-6 of the torque: held rows get it from a pass over the rows (Gram path), rows
    generated again (a callable run) only from the cancelling Gram identity, so they take a
    second, QR pass. The residual sums from the normal equations are good to ~2 eps cond /
    noise (``streaming._from_gram``), 6e-10 for the 1e-6 noise."""
    W, tau = _conditioned(cond, noise)
    calls = []
    qr = streaming.r_fold
    monkeypatch.setattr(streaming, "r_fold", lambda *a: calls.append(1) or qr(*a))
    red = streaming.from_rows(W, tau, 3)
    assert (not calls) == gram
    out, dense = streaming.fit(red, "wls"), estimators.identify(W, tau, "wls", n_joints=3)
    if noise == 0:  # the residuals are rounding noise, on either path
        np.testing.assert_allclose(out.theta, dense.theta, rtol=1e-10)
    else:
        _close(dense, out, rss_rtol=max(1e-10, 4 * np.finfo(float).eps * float(out.cond) / noise) if gram else None)
    if noise == 1e-6:
        runs = []
        model = type("Rows", (), {"n": 3})()
        red = streaming.reduce_runs(model, [lambda: runs.append(1) or (W, tau)], np.arange(W.shape[-1]))
        assert len(runs) == 2 and len(calls) == 1
        _close(estimators.identify(W, tau, "ols", n_joints=3), streaming.fit(red, "ols"))


def test_gram_r_is_an_r_factor_with_exact_rank():
    """base.gram_r: R_j^T R_j == G_j, and a column zero or dependent within one joint's rows gives an
    exactly zero singular value (QR: rounding level), so the per-joint ranks agree."""
    from jaxid.identification.base import gram_fold, gram_r, r_fold

    rng = np.random.default_rng(3)
    W = rng.normal(size=(500, 2, 5)) * np.logspace(0, 3, 5)
    W[:, 0, 4] = 0.0
    W[:, 1, 3] = 2.0 * W[:, 1, 1]
    tau = W @ rng.normal(size=5) + 0.1 * rng.normal(size=(500, 2))
    zero = np.zeros((2, 6, 6))
    G = gram_fold(zero, W, tau)
    R, resolved = gram_r(G)
    assert resolved.all()
    np.testing.assert_allclose(R.swapaxes(1, 2) @ R, G, rtol=0, atol=1e-13 * np.abs(G).max())
    Rq = r_fold(zero, W, tau)
    for j in range(2):
        s = np.linalg.svd(R[j, :5, :5] / np.maximum(np.linalg.norm(R[j, :, :5], axis=0), 1e-300), compute_uv=False)
        sq = np.linalg.svd(Rq[j, :5, :5] / np.maximum(np.linalg.norm(Rq[j, :, :5], axis=0), 1e-300), compute_uv=False)
        assert s[-1] == 0.0 and sq[-1] < 1e-14
        np.testing.assert_allclose(s[:-1], sq[:-1], rtol=1e-12)
