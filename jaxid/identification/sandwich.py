"""Covariance of a least-squares estimate whose equation errors are autocorrelated and
heteroskedastic: the HAC sandwich with a Bartlett lag window.

A weighted least-squares estimate ``theta = B W^T Omega tau``, ``B = (W^T Omega W)^-1``,
has the error ``B sum_t s_t`` with the per-sample scores ``s_t = W_t^T Omega e_t`` (W_t the
sample's (n, p) regressor rows, e_t its (n,) equation errors, Omega = diag(1 / sigma_j^2)
the per-joint weights). Its covariance is ``B M B`` with ``M = sum_{t, u} E[s_t s_u^T]``.
The white-noise covariance B assumes ``M = W^T Omega W``: errors independent over time with
variance sigma_j^2. Positions that were low-pass filtered and differentiated put the filtered
noise into the regressor (errors in variables), and it reaches the equation error coloured
over the filter's memory and scaled by the motion (heteroskedastic), so that assumption
fails. The Newey-West estimate replaces M by

    M = sum_t s_t s_t^T + sum_{l=1}^{L} w_l sum_t (s_t s_{t-l}^T + s_{t-l} s_t^T),
    w_l = 1 - l / (L + 1)   (Bartlett: M is positive semi-definite for any data),

from the residuals at the estimate (Newey & West, "A simple, positive semi-definite,
heteroskedasticity and autocorrelation consistent covariance matrix", Econometrica 55(3),
1987; White 1980 for L = 0). Lags are counted within one run: two runs are independent.
The lag window L is the caller's: for filtered data ``jaxid.workflow`` takes the filter's
own memory (its settling length, ``workflow.edge_trim``), beyond which the filter correlates
nothing. Shorter windows miss the negative lobe of the residual's autocorrelation (the
derivative filter's noise is band-pass) and overstate the variance: Andrews' (1991) AR(1)
bandwidth, about 14 samples on a planar arm filtered at fs / 25, overstated the std by about
half where the filter's memory (86 samples) got it right.

Residuals at the estimate are not the errors: their scores sum to zero, and within a long
window the fit has taken part of their variance. [`covariance`][jaxid.identification.sandwich.covariance] divides each variance by
the fraction that white errors would keep (exact for them; MacKinnon & White's HC2 idea over
the lag window), which matters when L is not small against the run (93 % instead of 90 %
coverage of +-2 std on planar3 at low noise, ``benchmarks/coverage.py``).

M is accumulated chunk by chunk ([`update`][jaxid.identification.sandwich.update], carrying the last scores), so a run that is
never held whole (``jaxid.identification.streaming``) gets the same M as one held whole.
Everything is pure ``jnp`` with static shapes (jit, vmap).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class Meat(eqx.Module):
    """The sandwich's middle, being accumulated over the samples of a run.

    Attributes:
        M: (p, p), the Bartlett-weighted sum of score products so far (units of theta^-2).
        lost: (p,), the part of each white-noise variance diag(B) that the residuals at the
            estimate lose to the fit within the lag window ([`update`][jaxid.identification.sandwich.update]; theta units^2).
        lags: the lag window L of the current run, samples (int scalar).
        tail, tail_P: (K, p) and (K, p, p), K >= L (L rounded up to a power of two, so that
            one compiled program serves many windows): the last K scores and B A_t of the run so
            far (zeros before its start).
    """

    M: jax.Array
    lost: jax.Array
    lags: jax.Array
    tail: jax.Array
    tail_P: jax.Array

    @staticmethod
    def empty(p: int, lags: int) -> Meat:
        """Nothing accumulated: p parameters, a lag window of ``lags`` samples."""
        K = 1 << max(int(lags) - 1, 0).bit_length()
        # numpy placed on the device: jnp.zeros would compile a program per shape
        S, s, tail, tail_P = jax.device_put((np.zeros((p, p)), np.zeros(p), np.zeros((K, p)), np.zeros((K, p, p))))
        return Meat(S, s, jnp.asarray(int(lags)), tail, tail_P)

    def next_run(self, lags: int | None = None) -> Meat:
        """The same sums, the lag memory cleared: the next samples start an independent run
        (with a lag window of ``lags`` samples; default the same)."""
        fresh = Meat.empty(self.M.shape[0], int(self.lags) if lags is None else lags)
        return Meat(self.M, self.lost, fresh.lags, fresh.tail, fresh.tail_P)


def scores(W, e, weights):
    """Per-sample scores s_t = W_t^T diag(weights) e_t, shape (C, p), and whitened rows X_t =
    diag(weights)^(1/2) W_t, shape (C, n, p), of regressor rows W (C, n, p), equation errors e
    (C, n) (tau units) and per-joint weights (n,) (1 / tau units^2: the inverse noise variances
    of WLS, ones for OLS). A sample left out of the fit has zero rows and errors (it keeps its
    place in time)."""
    return jnp.einsum("cjp,cj->cp", W, e * weights), W * jnp.sqrt(weights)[:, None]


def _lagged(tail, x, L):
    """u_i = sum_{l=1}^{L} w_l x_{i-l} (Bartlett weights w_l = 1 - l / (L + 1)) over the C
    samples of x (C, ...) preceded by ``tail`` (K, ...), K >= L, and the new tail (the last K
    of them). O(C) whatever L, by the recursion (L + 1) u_{i+1} = (L + 1) u_i + L x_i - b_i with
    the box sum b_i = sum_{l=1}^{L} x_{i-l}, b_{i+1} = b_i + x_i - x_{i-L}."""
    K, C = tail.shape[0], x.shape[0]
    past = jnp.concatenate([tail, x])  # past[K + i] is x[i]
    lag = K - jnp.arange(K)  # of tail[k] from x[0]
    inside = lag <= L
    start = (
        jnp.tensordot(jnp.where(inside, 1.0 - lag / (L + 1), 0.0), tail, axes=1),
        jnp.tensordot(inside.astype(tail.dtype), tail, axes=1),
    )

    def step(ub, xs):
        (u, b), (now, old) = ub, xs
        return (u + (L * now - b) / (L + 1), b + now - old), u

    _, u = jax.lax.scan(step, start, (x, jax.lax.dynamic_slice_in_dim(past, K - L, C)))
    return u, past[C:]


def update(meat: Meat, s, X, bread) -> Meat:
    """Add the next C samples of the current run to ``meat``: their scores s (C, p) and
    whitened rows X (C, n, p) ([`scores`][jaxid.identification.sandwich.scores]), with the bread B (p, p).

    ``lost`` gathers diag(sum_{t,u} k_{tu} B A_t B A_u B), k the Bartlett kernel and A_t =
    X_t^T X_t: for errors that are white with the weights' variances, the residuals at the
    estimate are (I - H) e (H the weighted hat matrix), and E[diag(B M B)] = diag(B) - lost
    exactly."""
    u, tail = _lagged(meat.tail, s, meat.lags)
    Z = X @ bread  # Z_t^T Z_t = B A_t B
    P = jnp.sum(Z[:, :, :, None] * X[:, :, None, :], axis=1)  # B A_t (n terms: faster than einsum on CPU)
    uP, tail_P = _lagged(meat.tail_P, P, meat.lags)
    su = s.T @ u
    lost = jnp.einsum("cja,cjb,cab->a", Z, Z, P + 2.0 * uP)  # diag(B A_t B (P_t + 2 uP_t)^T)
    return Meat(meat.M + s.T @ s + su + su.T, meat.lost + lost, meat.lags, tail, tail_P)


def covariance(bread, meat: Meat):
    """The sandwich ``D bread M bread D`` (p, p), symmetrised, with D = diag(diag(B) / (diag(B)
    - lost))^(1/2): each variance divided by the fraction of it that the residuals keep under
    white errors, so that for white errors its expectation is the white covariance B (as HC2
    divides each squared residual by 1 - h_tt: MacKinnon & White, "Some heteroskedasticity-
    consistent covariance matrix estimators with improved finite sample properties", J.
    Econometrics 29, 1985; here per parameter, over the lag window). bread B = (W^T Omega
    W)^-1 (p, p), the white-noise WLS covariance (theta units^2)."""
    b = jnp.diag(bread)
    d = jnp.sqrt(b / (b - meat.lost))
    cov = bread @ meat.M @ bread * jnp.outer(d, d)
    return 0.5 * (cov + cov.T)


_update = jax.jit(update)
