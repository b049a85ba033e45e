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
nothing; Andrews' (1991) automatic bandwidths from an AR(1) fit undercount the
negative lobe of a band-pass-coloured residual and overstate the variance.

M is accumulated chunk by chunk (:func:`update`, carrying the last L scores), so a run that
is never held whole (``jaxid.identification.streaming``) gets the same M as one held whole.
Everything is pure ``jnp`` with static shapes (jit, vmap).
"""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


class Meat(eqx.Module):
    """The sandwich's middle, being accumulated over the samples of a run.

    Attributes:
        M: (p, p), the Bartlett-weighted sum of score products so far (units of theta^-2).
        tail: (L, p), the last L scores of the run so far (zeros before its start); L is the
            lag window, in samples.
    """

    M: jax.Array
    tail: jax.Array

    @staticmethod
    def empty(p: int, lags: int) -> "Meat":
        """Nothing accumulated: p parameters, a lag window of ``lags`` samples."""
        return Meat(jnp.zeros((p, p)), jnp.zeros((int(lags), p)))

    def next_run(self) -> "Meat":
        """The same M, the lag memory cleared: the next samples start an independent run."""
        return Meat(self.M, jnp.zeros_like(self.tail))


def scores(W, e, weights):
    """Per-sample scores s_t = sum_j W_tj ``weights``_j e_tj, shape (C, p), of regressor rows
    W (C, n, p), equation errors e (C, n) (tau units) and per-joint weights (n,) (1 / tau
    units^2: the inverse noise variances of WLS, ones for OLS). A sample left out of the fit
    has e = 0 (a zero score keeps its place in time)."""
    return jnp.einsum("cjp,cj->cp", W, e * weights)


def update(meat: Meat, s) -> Meat:
    """Add the scores s (C, p) of the next C samples of the current run to ``meat``."""
    L, C = meat.tail.shape[0], s.shape[0]
    past = jnp.concatenate([meat.tail, s])  # past[L + i] is s[i]

    def lag(l, u):  # u_i += w_l s_{i - l}, Bartlett weight w_l
        return u + (1.0 - l / (L + 1)) * jax.lax.dynamic_slice_in_dim(past, L - l, C)

    u = jax.lax.fori_loop(1, L + 1, lag, jnp.zeros_like(s))
    su = s.T @ u
    return Meat(meat.M + s.T @ s + su + su.T, past[C:])


def covariance(bread, M):
    """The sandwich ``bread M bread`` (p, p), symmetrised; bread = (W^T Omega W)^-1 (p, p),
    the white-noise WLS covariance (theta units^2)."""
    cov = bread @ M @ bread
    return 0.5 * (cov + cov.T)


_update = jax.jit(update)
