"""The HAC sandwich covariance (jaxid.identification.sandwich): the textbook formula, its
white limit, the Bartlett window on a known autocovariance, chunked = whole."""

import numpy as np
import pytest

from jaxid.identification import sandwich


def meat(s, lags, chunk=None, runs=None, X=None, bread=None):
    """sandwich.Meat of scores s (T, p) (and whitened rows X (T, n, p), default zeros) through
    update, in chunks of ``chunk`` samples, runs split at ``runs``."""
    p = s.shape[1]
    X = np.zeros((len(s), 1, p)) if X is None else X
    bread = np.eye(p) if bread is None else bread
    m = sandwich.Meat.empty(p, lags)
    for i, (run, Xrun) in enumerate(zip(np.split(s, runs or []), np.split(X, runs or []))):
        m = m.next_run() if i else m
        for c in range(0, len(run), chunk or len(run)):
            m = sandwich._update(m, run[c : c + (chunk or len(run))], Xrun[c : c + (chunk or len(run))], bread)
    return m


def textbook(s, lags):
    """sum_t sum_u k(|t - u|) s_t s_u^T with the Bartlett kernel, as a double loop."""
    T, p = s.shape
    M = np.zeros((p, p))
    for t in range(T):
        for u in range(max(0, t - lags), min(T, t + lags + 1)):
            M += (1 - abs(t - u) / (lags + 1)) * np.outer(s[t], s[u])
    return M


@pytest.fixture(scope="module")
def problem():
    """A small WLS problem: T samples of n joints, p parameters, AR(1)-coloured errors."""
    rng = np.random.default_rng(3)
    T, n, p = 120, 2, 3
    W = rng.normal(size=(T, n, p))
    e = np.zeros((T, n))
    for t in range(1, T):
        e[t] = 0.7 * e[t - 1] + rng.normal(size=n) * [1.0, 3.0]
    weights = 1 / np.array([1.0, 9.0])
    return W, e, weights


def test_sandwich_is_the_textbook_formula(problem):
    W, e, weights = problem
    A = np.einsum("tjp,j,tjq->pq", W, weights, W)  # W^T Omega W
    s, X = (np.asarray(x) for x in sandwich.scores(W, e, weights))
    np.testing.assert_allclose(s, np.einsum("tjp,tj,j->tp", W, e, weights), rtol=1e-13)
    np.testing.assert_allclose(np.einsum("tjp,tjq->pq", X, X), A, rtol=1e-12)
    for lags in (0, 1, 7, 30):
        M = textbook(s, lags)
        np.testing.assert_allclose(meat(s, lags).M, M, rtol=1e-12, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(meat(s, lags).M).min() > -1e-10 * np.abs(M).max()  # Bartlett: PSD


def test_no_lags_is_white_and_white_errors_give_the_wls_covariance(problem):
    W, _, weights = problem
    # Lag window 0 is White's sum_t s_t s_t^T. Each sample twice, with errors (sigma_1, +-sigma_2):
    # the cross-joint products cancel pairwise and M is W^T Omega W exactly, so the sandwich is
    # the white-noise WLS covariance (W^T Omega W)^-1.
    W = np.repeat(W, 2, axis=0)
    e = np.where(np.arange(len(W))[:, None] % 2, [1.0, -1.0], [1.0, 1.0]) / np.sqrt(weights)
    A = np.einsum("tjp,j,tjq->pq", W, weights, W)
    s = np.asarray(sandwich.scores(W, e, weights)[0])
    np.testing.assert_allclose(meat(s, 0).M, A, rtol=1e-12)


def test_bartlett_window_on_ar1_scores():
    """E[M] / T for scores of known autocovariance (AR(1), rho = 0.5, unit innovations) without
    Monte Carlo: M is quadratic in s, so with s = C z (Gamma = C C^T) the trace of M over the
    columns of C is tr(K Gamma). It equals sum_{|l| <= L} w_l (1 - |l| / T) gamma_l exactly and
    approaches the long-run variance gamma_0 (1 + rho) / (1 - rho) as L and T / L grow; the
    white covariance would take gamma_0 alone (a third of it)."""
    T, L, rho = 400, 40, 0.5
    lag = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
    gamma = rho**lag / (1 - rho**2)  # Toeplitz autocovariance
    C = np.linalg.cholesky(gamma)
    expected = sum((1 - abs(l) / (L + 1)) * (1 - abs(l) / T) * rho ** abs(l) / (1 - rho**2) for l in range(-L, L + 1))
    got = sum(np.trace(meat(c, L, chunk=80).M) for c in np.split(C, 10, axis=1)) / T  # 40 columns at a time
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    long_run = (1 + rho) / (1 - rho) / (1 - rho**2)
    assert abs(got / long_run - 1) < 0.06  # Bartlett's bias ~ 2 rho / ((1 - rho)^2 (L + 1)) + finite T
    assert np.sum(C**2) / T == pytest.approx(1 / (1 - rho**2), rel=1e-10)  # lag window 0: gamma_0


def test_chunked_equals_whole_and_runs_are_independent(problem):
    W, e, weights = problem
    s = np.asarray(sandwich.scores(W, e, weights)[0])
    for lags in (5, 50):
        whole = meat(s, lags).M
        for chunk in (24, 40):  # chunks shorter and longer than the lag window
            np.testing.assert_allclose(meat(s, lags, chunk).M, whole, rtol=1e-12, atol=1e-12 * np.abs(whole).max())
    # Two runs: no products across the join.
    split = meat(s, 5, chunk=24, runs=[48]).M
    np.testing.assert_allclose(split, textbook(s[:48], 5) + textbook(s[48:], 5), rtol=1e-12)


def test_corrected_sandwich_is_unbiased_for_white_errors(problem):
    """White errors of the weights' variances: the residuals at the estimate are (I - H) e, so
    E[M] = sum_tu k_tu X_t^T (I - H)_tu X_u (X = Omega^1/2 W, H = X B X^T), computed by hand;
    the corrected sandwich's expected variances are then exactly the white ones, diag(B)."""
    W, _, weights = problem
    T, n, p = W.shape
    X = (W * np.sqrt(weights)[:, None]).reshape(T * n, p)
    bread = np.linalg.inv(X.T @ X)
    Q = np.eye(T * n) - X @ bread @ X.T
    _, Xt = (np.asarray(x) for x in sandwich.scores(W, np.zeros((T, n)), weights))
    for lags in (0, 10):
        k = np.clip(1 - np.abs(np.subtract.outer(np.arange(T), np.arange(T))) / (lags + 1), 0, None)
        EM = X.T @ (np.kron(k, np.ones((n, n))) * Q) @ X
        m = meat(np.zeros((T, p)), lags, chunk=48, X=Xt, bread=bread)
        np.testing.assert_allclose(np.diag(bread @ EM @ bread), np.diag(bread) - np.asarray(m.lost), rtol=1e-10)
        expected = sandwich.covariance(bread, sandwich.Meat(EM, m.lost, m.lags, m.tail, m.tail_P))
        np.testing.assert_allclose(np.diag(expected), np.diag(bread), rtol=1e-10)
        assert np.all(np.asarray(m.lost) > 0)
