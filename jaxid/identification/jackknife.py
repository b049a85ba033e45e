"""The delete-a-block jackknife covariance of a least-squares estimate: what its std is when the
model is wrong in a way no parameter represents.

A robot model's error that no parameter represents (load-dependent friction, cogging, an elastic
joint, a cable) is smooth in time and follows the motion, not white noise, and the fit absorbs part
of it: the white-noise covariance, which counts every sample as independent, then understates the
estimate's error several times (``benchmarks/payload_coverage.py``: +-2 std held 17-62 % of 200
payloads), and so does a HAC sandwich of the residuals, which no longer hold the absorbed part. Left
out of the fit, a block's error is no longer fitted, so the spread of the estimates without each
block holds it (Kunsch, "The jackknife and the bootstrap for general stationary observations", Ann.
Statist. 17(3), 1989). With white residuals it estimates the white covariance with G - 1 degrees of
freedom, so it is raised to at least the white one ([`at_least`][jaxid.identification.jackknife.at_least]).

Used by ``identify_payload`` (``PayloadFit.cov``) and by ``jaxid.workflow``'s identification of
logged runs (``params.estimation.covariance == "jackknife"``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

#: Contiguous blocks of samples of the jackknife: few enough that a block outlasts the model error's
#: correlation in time (a 20 s period in blocks of 2 s), enough for its G - 1 degrees of freedom
#: (Student's t with 9: +-2 std holds 92.4 %).
BLOCKS = 10


def sums_by_block(A, r, block, G):
    """Each block's information and summed scores, (G, c, c) and (G, c), of the whitened rows A (N, k, c)
    and residuals r (N, k) whose sample t lies in block ``block[t]`` (N,), non-decreasing (contiguous
    blocks): one matrix product per block, on the host (numpy). Formed in a compiled program, every
    sample's outer product (an (N, c, c) array) came before the sum: 13 ms of a 43 ms warm identification
    of 1000 UR10 samples, and a program to compile on a command's first run."""
    A, r, block = np.asarray(A, dtype=np.float64), np.asarray(r, dtype=np.float64), np.asarray(block)
    c = A.shape[-1]
    Fg, sg = np.zeros((G, c, c)), np.zeros((G, c))
    cuts = np.flatnonzero(np.diff(block)) + 1
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(block)]):
        if hi > lo:
            a = A[lo:hi].reshape(-1, c)
            Fg[block[lo]] += a.T @ a
            sg[block[lo]] += a.T @ r[lo:hi].reshape(-1)
    return Fg, sg


def block_sums(A, r, G):
    """[`sums_by_block`][jaxid.identification.jackknife.sums_by_block] of the whitened rows A (N, k, c) and
    residuals r (N, k) cut into G contiguous blocks of ``ceil(N / G)`` samples (the last shorter)."""
    N = np.shape(A)[0]
    return sums_by_block(A, r, np.arange(N) // -(-N // G), G)


def from_sums(Fg, sg, prior, x):
    """Delete-a-block jackknife covariance (c, c) of the least squares whose G blocks of whitened rows have
    the information Fg (G, c, c) and summed scores sg (G, c) (``A_t^T r_t`` at the estimate x (c,)), with a
    prior's information ``prior`` (c, c) never deleted (Kunsch, "The jackknife and the bootstrap for
    general stationary observations", Ann. Statist. 17(3), 1989): ``(G - 1) / G sum_g (d_g - mean d)(d_g
    - mean d)^T`` with the estimate without block g, exactly ``x + d_g``, ``d_g = (F - F_g)^-1 (s - s_g)``
    (F the information, s the summed scores less the prior's pull ``prior x``: zero when x is the least
    squares on these rows, not quite when its weights were the first step's).

    On the host (numpy): G solves of c x c after the pass over the data, where a compiled program cost
    0.2 s on a command's first run for a millisecond of work."""
    Fg, sg, prior, x = (np.asarray(a, dtype=np.float64) for a in (Fg, sg, prior, x))
    G = Fg.shape[0]
    d = np.sqrt(np.diag(Fg.sum(axis=0)) + np.diag(prior))
    d = np.where(d > 0, d, 1.0)  # column scaling: a payload's columns differ by 1e3
    dd = np.outer(d, d)
    Fs, ss, Ps = Fg / dd, sg / d, prior / dd
    grad = ss.sum(axis=0) - Ps @ (x * d)
    dg = np.linalg.solve(Fs.sum(axis=0) + Ps - Fs, (grad - ss)[..., None])[..., 0]
    dg = dg - dg.mean(axis=0)
    cov = (G - 1) / G * dg.T @ dg
    return 0.5 * (cov + cov.T) / dd


def block_jackknife(A, r, prior, x, G):
    """[`from_sums`][jaxid.identification.jackknife.from_sums] of the whitened rows A (N, k, c) and
    residuals r (N, k) in G contiguous blocks of samples ([`block_sums`][jaxid.identification.jackknife.block_sums])."""
    return from_sums(*block_sums(A, r, G), prior, x)


def at_least(C, floor):
    """The smallest-change covariance >= both C and floor (p, p) in the Loewner order: with floor = L L^T,
    ``L V max(Lambda, 1) V^T L^T`` for ``L^-1 C L^-T = V Lambda V^T`` (C's eigenvalues relative to floor's
    raised to 1). For the jackknife over the white covariance: its G - 1 degrees of freedom can fall below
    what the noise alone leaves, in any direction; with noise-free residuals (C = 0) it is the floor. On
    the host (numpy), as [`from_sums`][jaxid.identification.jackknife.from_sums]."""
    C, floor = np.asarray(C, dtype=np.float64), np.asarray(floor, dtype=np.float64)
    L = np.linalg.cholesky(0.5 * (floor + floor.T))
    Li = np.linalg.solve(L, np.eye(L.shape[0]))
    lam, V = np.linalg.eigh(Li @ C @ Li.T)
    LV = L @ V
    out = (LV * np.maximum(lam, 1.0)) @ LV.T
    return 0.5 * (out + out.T)


def of_fit(W, tau, theta, sigma2, cov_white, blocks: int = BLOCKS):
    """The jackknife covariance (b, b) of a weighted least-squares fit, at least its white covariance.

    W (N, n, b): the base regressor of the N samples fitted, per joint; tau (N, n): their torques, N m;
    theta (b,): the estimate; sigma2 (n,): the per-joint noise variances its rows are whitened by (pooled
    for OLS), N^2 m^2; cov_white (b, b): its white-noise covariance. blocks: G, the contiguous blocks of
    samples (``2 <= G <= N``)."""
    A, r = _whiten(jnp.asarray(W), jnp.asarray(tau), jnp.asarray(theta), jnp.asarray(sigma2))
    return at_least(block_jackknife(A, r, np.zeros((A.shape[2],) * 2), theta, blocks), cov_white)


@jax.jit
def _whiten(W, tau, theta, sigma2):
    w = 1.0 / jnp.sqrt(sigma2)
    return W * w[None, :, None], (tau - jnp.einsum("nkb,b->nk", W, theta)) * w
