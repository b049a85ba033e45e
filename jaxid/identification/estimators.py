"""Linear estimators of the parameters of ``tau = W @ theta + noise``, with uncertainty.

``identify(W, tau, method=...)`` solves the stacked, sample-major system (rows
``k*n .. k*n+n-1`` belong to sample k) by

- ``"ols"``: ordinary least squares;
- ``"wls"``: weighted least squares, either Gautier's two-step scheme (per-joint noise
  variances from an OLS fit of each joint's own equations, then a whitened solve of
  the whole system; Gautier & Poignet 2001,
  "Extended Kalman filtering and weighted least squares dynamic identification of robot",
  Control Eng. Practice 9) or a supplied noise covariance / row weights;
- ``"irls"``: iteratively reweighted least squares with Huber or Tukey weights and a
  per-joint MAD scale (Holland & Welsch 1977; Huber 1981, "Robust Statistics");
- ``"ridge"``: Tikhonov regularisation, lambda given or chosen by generalised
  cross-validation (Golub, Heath & Wahba 1979, Technometrics 21);
- ``"tls"``: total least squares from the SVD of ``[W tau]`` (Golub & Van Loan 1980,
  SIAM J. Numer. Anal. 17).

Every solve goes through the SVD (never the normal equations), of small triangular factors:
the rows are first reduced, in one tall-skinny QR pass, to one R per joint (``_joint_r``,
the reduced form ``jaxid.identification.streaming`` accumulates chunk by chunk), and ols,
two-step wls and ridge, their covariance and the per-joint variances follow from those
R's (``_reduced_fit``, shared with ``streaming.fit``); irls, tls and a general noise
covariance go back to the rows.  By default each column
of ``W`` is divided by its norm first (Gautier 1990 practice: it removes the unit
dependence of the conditioning); theta and its covariance are mapped back.

The numeric core is a pure, jitted function; ``identify`` validates concrete inputs in
Python and compiles the value checks in (host callbacks that raise) when it is traced, so
``jax.jit(identify)`` and ``jax.vmap(lambda W, t: identify(W, t, n_joints=n))`` work over a
leading batch axis and raise on NaN data (``check=False`` skips the checks).

Two-step "wls" floors each joint's noise variance (``_variance_floor``) so that a dead or
stuck torque channel cannot take a near-infinite weight; detecting such channels, gross
outliers and implausible values before fitting is ``jaxid.identification.screening``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid import cache
from jaxid.arrays import host, is_traced, namespace
from jaxid.dynamics.batching import bucket
from jaxid.identification.base import TOL, base_from_regressor, r_factor, r_fold

METHODS = ("ols", "wls", "irls", "ridge", "tls")
#: Tuning constants giving 95 % efficiency under Gaussian noise (Holland & Welsch 1977).
LOSS_C = {"huber": 1.345, "tukey": 4.685}
_MAD = 0.6744897501960817  # median |z| of a standard normal


class Identification(eqx.Module):
    """Result of ``identify``; every array gains a leading axis under ``vmap``.

    Attributes:
        theta: estimated parameters, shape (p,).
        cov: parameter covariance, shape (p, p) (see ``identify`` for each method).
        std: standard deviations sqrt(diag(cov)), shape (p,).
        rel_std: 100 * std / |theta|, shape (p,), % (inf where theta == 0).
        cond: condition number s_max / s_min of the (column-scaled when ``scale``) W.
        singular_values: of the same matrix, shape (p,), descending.
        residual_rms: RMS of tau - W @ theta per joint, shape (n,), units of tau.
        sigma2: per-joint noise variance ||r_j||^2 / (N - b_j) of that residual, with b_j
            the rank of joint j's own rows of W (the number of parameter combinations
            acting on joint j; Gautier's convention), shape (n,).
        dof: degrees of freedom of the pooled variance, M - rank (M - trace of the hat
            matrix for ridge).
        lam: ridge parameter used, on the column-scaled problem when ``scale`` (0 for
            other methods).
        method: the method name.
    """

    theta: jax.Array
    cov: jax.Array
    std: jax.Array
    rel_std: jax.Array
    cond: jax.Array
    singular_values: jax.Array
    residual_rms: jax.Array
    sigma2: jax.Array
    dof: jax.Array
    lam: jax.Array
    method: str = eqx.field(static=True)


# --------------------------------------------------------------------------- core


def _pinv_solve(usv, b, rcond):
    """x = A^+ b, (A^T A)^+ and the numerical rank from the thin SVD of A, truncated at
    rcond * s_max; batched over leading axes of the SVD and b, in their namespace (numpy for
    concrete values)."""
    U, s, Vt = usv
    xp = namespace(s, b, rcond)
    keep = s > rcond * s[..., :1]
    g = xp.where(keep, 1.0 / xp.where(keep, s, 1.0), 0.0)
    V = xp.swapaxes(Vt, -1, -2)
    x = (V @ (g * (xp.swapaxes(U, -1, -2) @ b[..., None])[..., 0])[..., None])[..., 0]
    return x, (V * g[..., None, :] ** 2) @ Vt, xp.sum(keep, axis=-1)


def _svd(A, xp):
    """Thin SVD (U, s, Vt) of A (..., k, k) in the namespace xp."""
    return tuple(xp.linalg.svd(A, full_matrices=False))


def _solve(A, b, rcond):
    """``_pinv_solve`` of the rows A (M, p), b (M,), through the R of [A | b] (``r_factor``):
    A and R share s and Vt, and U_R^T z = U_A^T b."""
    p = A.shape[1]
    Rab = r_factor(jnp.concatenate([A, b[:, None]], axis=1), jnp)
    return _pinv_solve(jnp.linalg.svd(Rab[:p, :p]), Rab[:p, p], rcond)


def _joint_r(W, tau, n):
    """R_j (n, p + 1, p + 1) of each joint's own rows ``[W_j | tau_j]`` of a stacked
    sample-major system W (M, p), tau (M,): one pass over the rows, after which every
    least-squares quantity of the ols, wls and ridge fits follows from these small
    factors (``jaxid.identification.streaming`` builds the same R_j chunk by chunk)."""
    M, p = W.shape
    X = jnp.concatenate([W, tau[:, None]], axis=1).reshape(M // n, n, p + 1).swapaxes(0, 1)
    return r_factor(X, jnp)


def _joint_ols(Rj):
    """Joint j's own least squares from its R_j (..., p + 1, p + 1) (leading axes: joints), the
    columns normalised first: the solution x (..., p) (in the units of R_j's columns), its residual
    sum of squares, the rank b_j (singular values above ``TOL`` of the largest) and the
    condition number of those b_j. Batched in the namespace of R_j: one LAPACK call for all
    joints on the host, a batched SVD under a trace."""
    p = Rj.shape[-1] - 1
    xp = namespace(Rj)
    nj = xp.linalg.norm(Rj[..., :, :p], axis=-2)
    cols = xp.concatenate([1.0 / xp.where(nj > 0, nj, 1.0), xp.ones(nj.shape[:-1] + (1,))], axis=-1)
    Rj = Rj * cols[..., None, :]
    usv = _svd(Rj[..., :p, :p], xp)
    x, _, rank = _pinv_solve(usv, Rj[..., :p, p], TOL)
    rss = xp.sum((Rj[..., :p, p] - (Rj[..., :p, :p] @ x[..., None])[..., 0]) ** 2, axis=-1) + Rj[..., p, p] ** 2
    s = usv[1]
    low = xp.take_along_axis(s, xp.maximum(rank - 1, 0)[..., None], axis=-1)[..., 0]
    return x * cols[..., :p], rss, rank, s[..., 0] / low


def _joint_variance(Rj, N):
    """Joint j's own OLS (Gautier & Poignet 2001) from its R_j (..., p + 1, p + 1) (columns
    normalised): the residual variance ||r_j||^2 / (N - b_j) and the rank b_j, the number of
    parameter combinations identifiable from joint j alone. Fitting each joint separately
    keeps a noisy joint from leaking into the residual of a quiet one, which a pooled OLS
    residual would do."""
    _, rss, rank, _ = _joint_ols(Rj)
    return rss / namespace(rss, N).maximum(N - rank, 1), rank


def _pooled(R):
    """R of the stacked per-joint R's (n, k1, k1) -> (k1, k1): the R of all rows."""
    return r_factor(R.reshape(-1, R.shape[-1]), namespace(R))


def _scaled(R, N, scale):
    """The column scaling of ``identify`` on per-joint R's (n, p + 1, p + 1).

    Returns d (p,) (column norms of W, 1 for zero columns, all 1 without ``scale``), the
    zero columns (p,) bool, the scaled pooled R ``Ra`` of [A | tau] (A = W / d, rounding-level columns zeroed as in the
    rank check), its SVD (U, s, Vt), the scaled per-joint R's ``Rs`` and each joint's own
    OLS variance and rank (``_joint_variance``)."""
    p = R.shape[-1] - 1
    xp = namespace(R, N)
    R = R if xp is jnp else np.asarray(R)
    pooled = _pooled(R)
    norms = xp.linalg.norm(pooled[:, :p], axis=0)  # = the column norms of W
    zero = norms <= TOL * xp.max(norms)  # as in base_from_regressor
    d = xp.where(zero, 1.0, norms) if scale else xp.ones(p, R.dtype)
    cols = xp.append(xp.where(zero, 0.0, 1.0 / d), 1.0)
    Ra, Rs = pooled * cols, R * cols
    sub_var, sub_rank = _joint_variance(Rs, N)
    return d, zero, Ra, _svd(Ra[:p, :p], xp), Rs, sub_var, sub_rank


def _reduced_fit(R, N, variances, lam, rcond, *, method, scale, r2=None):
    """ "ols", "wls" (Gautier's two-step, or per-joint noise variances (n,)) and "ridge" on
    the per-joint R's (n, p + 1, p + 1) of N samples: ``identify``'s estimate and statistics
    without the rows. r2: theta -> per-joint residual sums of squares (n,); default from
    R, ``||R_j [theta; -1]||^2``. Returns (Identification, the per-joint ranks b_j).

    In the namespace of its arguments: numpy for concrete values (a few SVDs of (p + 1)-square
    factors, where a compiled program cost a cold run 0.4 s), jax.numpy under a trace
    (``identify`` under jit/vmap, ``jaxid.study``)."""
    xp = namespace(R, N, variances, lam, rcond)
    R = R if xp is jnp else np.asarray(R)
    n, p = R.shape[0], R.shape[-1] - 1
    M = N * n
    d, _, Ra, usv, Rs, sub_var, sub_rank = _scaled(R, N, scale)
    z, rho2 = Ra[:p, p], Ra[p, p] ** 2
    rss = lambda x: xp.sum((z - Ra[:p, :p] @ x) ** 2) + rho2  # ||tau - A x||^2
    lam_used = xp.zeros((), R.dtype)
    if method == "ols":
        x, P, rank = _pinv_solve(usv, z, rcond)
        dof = M - rank
        cov = P * rss(x) / dof
    elif method == "wls":
        if variances is None:  # Gautier's two-step
            variances = _two_step_variances(R, N, sub_var)
        # Whitening joint j's rows by 1 / sigma_j scales its R_j alike.
        Rw = _pooled(Rs / xp.sqrt(variances)[:, None, None])
        x, cov, rank = _pinv_solve(_svd(Rw[:p, :p], xp), Rw[:p, p], rcond)  # Gauss-Markov
        dof = M - rank
    elif method == "ridge":
        U, s, Vt = usv
        beta = U.T @ z
        lam_used = _gcv_lambda(s, beta, z @ z + rho2, M) if lam is None else xp.asarray(lam, R.dtype)
        g = xp.where(s > 0, s / xp.where(s > 0, s**2 + lam_used, 1.0), 0.0)  # lam = 0 on a null space
        x = Vt.T @ (g * beta)
        dof = M - xp.sum(s * g)
        # Sampling covariance of the (biased) ridge estimator.
        cov = (Vt.T * g**2) @ Vt * rss(x) / dof
    else:
        raise ValueError(f"unknown method {method!r}")
    r2 = functools.partial(reduced_rss, R) if r2 is None else r2
    return _result(x, cov, d, usv[1], r2, N, sub_rank, dof, lam_used, method), sub_rank


def reduced_rss(R, theta):
    """Per-joint residual sums of squares (n,) ``||tau_j - W_j theta||^2 = ||R_j [theta; -1]||^2``
    from the per-joint R's (n, p + 1, p + 1) of the rows [W_j | tau_j] and theta (p,)."""
    xp = namespace(R, theta)
    return xp.sum((R @ xp.append(theta, -1.0)) ** 2, axis=1)


def _result(x, cov, d, sv, r2, N, sub_rank, dof, lam, method):
    """``Identification`` from the solution x and covariance of the scaled problem; concrete
    results are put on the device together (one transfer), as ``identify`` returns jax arrays."""
    xp = namespace(x, cov, d, N, dof)
    theta = x / d
    cov = cov / xp.outer(d, d)
    std = xp.sqrt(xp.diag(cov))
    r2 = r2(theta)  # (n,) per-joint residual sums of squares
    with np.errstate(divide="ignore", invalid="ignore"):  # rel_std of a zero theta is inf, as in jax
        fields = dict(
            theta=theta,
            cov=cov,
            std=std,
            rel_std=100.0 * std / xp.abs(theta),
            cond=sv[0] / sv[-1],
            singular_values=sv,
            residual_rms=xp.sqrt(r2 / N),
            sigma2=r2 / xp.maximum(N - sub_rank, 1),
            dof=xp.asarray(dof, x.dtype),
            lam=lam,
        )
    if xp is np:
        fields = jax.device_put({k: np.asarray(v) for k, v in fields.items()})
    return Identification(**fields, method=method)


_joint_r_jit = cache.jit(_joint_r, static_argnames="n")


def _two_step_variances(R, N, sub_var=None):
    """Gautier's two-step per-joint noise variances (n,) from the per-joint R's (n, p + 1,
    p + 1) of N samples: each joint's own OLS residual variance (``sub_var`` when the caller
    has it), floored by ``_variance_floor`` (which needs only each joint's rms torque)."""
    p = R.shape[-1] - 1
    xp = namespace(R, N, sub_var)
    if sub_var is None:
        sub_var = _joint_variance(R, N)[0]
    rms = xp.linalg.norm(R[:, :, p], axis=1) / xp.sqrt(xp.maximum(N, 1))
    return _variance_floor(sub_var, rms[None])


def wls_variances(W, tau, n_joints):
    """The per-joint noise variances (n,) that two-step ``identify(..., "wls")`` weights
    by: each joint's own OLS residual variance, floored by ``_variance_floor``. For
    callers that need the same weights (e.g. a weighted residual sum of squares, the
    sandwich covariance). W (N*n, p) stacked sample-major, tau (N*n,); no validation.
    Concrete rows go through their reduced form, on the host."""
    if is_traced(W, tau):
        return _two_step_variances(_joint_r(W, tau, n_joints), W.shape[0] // n_joints)
    return reduced_variances(_rows_r(W, tau, n_joints), W.shape[0] // n_joints)


#: ``_two_step_variances`` of reduced rows (``jaxid.identification.streaming.Reduced``'s R, N): on
#: the host for concrete ones, traced inside a jit.
reduced_variances = _two_step_variances


def _gcv_lambda(s, beta, bb, M):
    """Minimiser of GCV(l) = M ||r(l)||^2 / (M - tr H(l))^2 over a log grid, from the SVD."""
    xp = namespace(s, beta, bb, M)
    lams = s[0] ** 2 * xp.logspace(-14, 1, 61)
    rest = xp.maximum(bb - beta @ beta, 0.0)  # part of b outside range(A)
    f = s**2 / (s**2 + lams[:, None])  # (61, p): the grid along the first axis
    gcv = (rest + xp.sum(((1 - f) * beta) ** 2, axis=1)) / (M - xp.sum(f, axis=1)) ** 2
    return lams[xp.argmin(gcv)]


def _median(x, N):
    """``jnp.median(x[:N], axis=0)`` of x (Np, n) for a traced N <= Np: the rows after N are
    padding."""
    x = jnp.sort(jnp.where((jnp.arange(x.shape[0]) < N)[:, None], x, jnp.inf), axis=0)
    return 0.5 * (x[(N - 1) // 2] + x[N // 2])


def _psi(t, c, loss):
    """Influence function of the standardised residual t."""
    if loss == "huber":
        return jnp.clip(t, -c, c)
    u = t / c
    return jnp.where(jnp.abs(u) < 1, t * (1 - u**2) ** 2, 0.0)


def _irls_weight(t, c, loss):
    """psi(t) / t, written out so that t = 0 gives weight 1 without a 0/0."""
    if loss == "huber":
        return jnp.minimum(1.0, c / jnp.maximum(jnp.abs(t), 1e-300))
    u = t / c
    return jnp.where(jnp.abs(u) < 1, (1 - u**2) ** 2, 0.0)


#: Two-step wls variance floors (see ``_variance_floor``).
WLS_REL_TAU = 1e-6
WLS_REL_VAR = 1e-6


def _variance_floor(var, tau2):
    """Per-joint noise variances for Gautier's two-step wls, floored so that no joint can
    take a near-infinite weight.

    ``var`` (n,) are the variances from each joint's own OLS fit, ``tau2`` (N, n) the
    torques. A joint whose own equations fit (almost) exactly -- a dead channel (all zero),
    one stuck at a constant that an offset or friction column reproduces, noise-free
    simulated data -- has ``var`` at rounding level; its weight 1/var would then swamp every
    other joint and push their singular values below the pseudo-inverse cut, i.e. every
    estimate collapses to ~0 (issue 18). The floor is

        max(var_j, (WLS_REL_TAU * rms(tau_j))^2, WLS_REL_VAR * max_k var_k, tiny)

    - ``(1e-6 rms(tau_j))^2``: a torque channel cannot be known better than a millionth of
      its own size (a 16-bit converter resolves 1.5e-5 of full scale, float32 6e-8), so a
      smaller variance is rounding, not sensor noise;
    - ``1e-6 max_k var_k``: no joint weighs more than a million times the noisiest joint
      (its noise std is at least 1/1000 of the noisiest joint's); real arms differ by a
      factor of ~10-100 in noise std between base and wrist, so on real, clean data neither
      floor binds and the estimator is Gautier's unchanged;
    - ``tiny`` (the dtype's smallest normal number) keeps 1/var finite when everything is
      zero (then all weights are equal, i.e. OLS).

    The weight of a dead joint is thus bounded, not zero: parameters that only other
    joints act on are estimated as from those joints alone, but parameters the dead joint
    also acts on are still pulled towards its (wrong) zero torque. Detect and exclude such
    channels before fitting (``jaxid.identification.screening.dead_channels``).
    Branch-free, so that it jits and vmaps.
    """
    xp = namespace(var, tau2)
    # rms without overflow for huge values: max|tau| * rms(tau / max|tau|).
    top = xp.max(xp.abs(tau2), axis=0)
    safe = xp.where(top > 0, top, 1.0)
    rms = top * xp.sqrt(xp.mean((tau2 / safe) ** 2, axis=0))
    floor = xp.maximum((WLS_REL_TAU * rms) ** 2, WLS_REL_VAR * xp.max(var))
    return xp.maximum(var, xp.maximum(floor, xp.finfo(var.dtype).tiny))


@functools.partial(cache.jit, static_argnames=("n", "method", "scale", "loss", "max_iter", "check"))
def _fit(W, tau, white, variances, lam, rcond, c, R=None, count=None, *, n, method, scale, loss, max_iter, check=False):
    """Numeric core of ``identify``: W (M, p), tau (M,), M = N * n. No validation, except
    ``check``: the value checks of ``identify`` compiled in (for traced inputs).

    count: the samples N (int scalar) when W and tau were padded with zero samples after
    them (``identify`` pads to ``batching.bucket(N)``, so that one program serves every N of
    a bucket); None: all M // n. A zero sample changes no R and no residual; the sample
    counts, IRLS's MAD scale and mean psi' are taken over the N samples only.

    Every method starts from one pass over the rows, the per-joint R's (``_joint_r``; R when
    the caller has them already); ols, wls without a general whitening and ridge need
    nothing else from the rows but the residual (``_reduced_fit``), which is taken on the
    rows themselves. irls, tls and whitened wls go back to the rows."""
    Mp, p = W.shape
    Np = Mp // n  # rows held, padding included
    N = Np if count is None else count
    M = N * n
    valid = jnp.arange(Np) < N  # (Np,) the samples that are not padding
    if check:
        W, tau, white = _traced_checks(W, tau, white)
    R = _joint_r(W, tau, n) if R is None else R

    def r2(theta):  # per-joint residual sums of squares on the rows
        return jnp.sum((tau - W @ theta).reshape(Np, n) ** 2, axis=0)

    if method in ("ols", "ridge") or (method == "wls" and white is None):
        out, sub_rank = _reduced_fit(R, N, variances, lam, rcond, method=method, scale=scale, r2=r2)
        if check and method == "wls" and variances is None:
            out = eqx.tree_at(
                lambda o: o.theta,
                out,
                _raise_if(
                    out.theta,
                    jnp.any(N <= sub_rank),
                    "two-step wls needs more samples than parameters per joint (found under jit; call "
                    "identify outside jit to see the counts); add samples",
                ),
            )
        return out
    d, zero, Ra, usv, _, _, sub_rank = _scaled(R, N, scale)
    A = jnp.where(zero, 0.0, W / d)
    z, sv = Ra[:p, p], usv[1]
    lam_used = jnp.zeros((), W.dtype)

    def whiten(X, Wh):  # X (Mp, k); Wh (Np, n, n) or (n, n) per-sample whitening matrix
        Wh = jnp.broadcast_to(Wh, (Np, n, n))
        return jnp.einsum("kij,kjl->kil", Wh, X.reshape(Np, n, -1)).reshape(Mp, -1)

    if method == "wls":  # a supplied noise covariance or row weights: whitened rows
        Aw, bw = whiten(A, white), whiten(tau[:, None], white)[:, 0]
        x, cov, rank = _solve(Aw, bw, rcond)  # Gauss-Markov: (W^T Sigma^-1 W)^-1
        dof = M - rank
    elif method == "irls":
        tau2 = tau.reshape(Np, n)
        # A joint that fits exactly would get a zero scale; keep it finite.
        floor = 1e-12 * jnp.sqrt(jnp.sum(tau2**2, axis=0) / N) + 1e-150

        def resid_scale(x):
            r = tau2 - (A @ x).reshape(Np, n)
            return r, jnp.maximum(_median(jnp.abs(r), N) / _MAD, floor)

        def step(_, x):
            r, s = resid_scale(x)
            sw = (jnp.sqrt(_irls_weight(r / s, c, loss)) / s).reshape(Mp)
            return _solve(A * sw[:, None], tau * sw, rcond)[0]

        x = jax.lax.fori_loop(0, max_iter, step, _pinv_solve(usv, z, rcond)[0])
        r, s = resid_scale(x)
        t = r / s  # 0 on padding, where psi is 0 too
        _, P, rank = _solve(A / jnp.tile(s, Np)[:, None], tau, rcond)
        dpsi = jax.jvp(lambda t: _psi(t, c, loss), (t,), (jnp.ones_like(t),))[1]
        dof = M - rank
        # Huber's (1981, 7.6) asymptotic covariance, small-sample factor K omitted.
        cov = P * (jnp.sum(_psi(t, c, loss) ** 2) / dof) / (jnp.sum(dpsi * valid[:, None]) / M) ** 2
    elif method == "tls":
        nb = jnp.sqrt(z @ z + Ra[p, p] ** 2) if scale else jnp.ones((), W.dtype)  # ||tau||
        nb = jnp.where(nb > 0, nb, 1.0)
        # The R of [A | tau / nb] is Ra with its last column scaled alike.
        _, sc, Vt = jnp.linalg.svd(Ra * jnp.append(jnp.ones(p, W.dtype), 1.0 / nb))
        v = Vt[-1]
        x = -v[:p] / v[p] * nb
        r = tau - A @ x
        dof = jnp.asarray(M - p)
        # First-order covariance (A^T A - s_{p+1}^2 I)^-1 sigma^2 (Van Huffel & Vandewalle
        # 1991, "The Total Least Squares Problem", ch. 8).
        cov = (usv[2].T / (sv**2 - sc[-1] ** 2)) @ usv[2] * (r @ r) / dof
    else:
        raise ValueError(f"unknown method {method!r}")
    return _result(x, cov, d, sv, r2, N, sub_rank, dof, lam_used, method)


# ------------------------------------------------------------------- validation


_UNDER_JIT = " (found under jit/vmap; call identify outside jit for the location)"

#: A value more than this many times the typical magnitude of its kind (the 90th percentile of the
#: nonzero |tau|, or of the rows' largest nonzero |W|) is refused as unusable: 1 / eps of float64
#: (2^52), the ratio beyond which the typical values vanish below its rounding (x + typical == x),
#: so that no sum of squares or product the solve forms can still see the rest of the data. Such a
#: value (1e200 from a logger's overflow, a corrupted line) gives theta ~ 1e196 or NaN. Gross but
#: representable outliers (a 1e8 N m spike among 10 N m torques) are left to the screening
#: (``jaxid.identification.screening``: physical bound, residual outliers, IRLS).
ABSURD = 1 / float(np.finfo(np.float64).eps)

ZERO_TAU = (
    "tau is all zeros: there is nothing to estimate from (the fit would give theta = 0 with std 0); "
    "check that the torque columns were read (the mapping, --columns) and hold the measured torques"
)


def _absurd(x):
    """Index of the first entry of x (K,) (non-negative magnitudes) above ``ABSURD`` times the
    90th percentile of its nonzero entries, that entry's ratio to it, and how many are above; None
    when there is none. The percentile ignores up to 10 % of gross values, so it is the scale of
    the rest."""
    nz = x[x > 0]
    if nz.size < 2:
        return None
    typical = np.quantile(nz, 0.9, method="lower")
    above = np.flatnonzero(x > ABSURD * typical)
    if not above.size:
        return None
    return int(above[0]), float(x[above[0]] / typical), int(above.size), float(typical)


def refusal(W: np.ndarray, tau: np.ndarray, n: int) -> str | None:
    """The message refusing concrete rows W (N*n, p), tau (N*n,) (sample-major, n joints) that
    no estimator can use, or None: NaN or inf, an all-zero tau, or a torque or a regressor row of
    absurd scale (``ABSURD`` times the rest), named by its row and sample (0-based, as
    numpy indexes them) and its joint (1-based). Shared
    by ``identify`` and ``streaming.from_rows``."""
    for label, x in (("W", W), ("tau", tau)):
        if np.isfinite(x).all():  # the common case, without a per-row pass
            continue
        bad = np.flatnonzero(~np.all(np.isfinite(x.reshape(len(x), -1)), axis=1))
        if bad.size:
            i = int(bad[0])
            return (
                f"{label} contains NaN or inf (first at row {i}: sample {i // n}, joint {i % n + 1}; {bad.size} such "
                "row(s)); remove or repair those samples"
            )
    if not np.any(tau):
        return ZERO_TAU
    # each row's largest |W| by its max and min (no |W| copy of the rows); max, not a norm: no overflow
    for label, mags in (("tau", np.abs(tau)), ("W", np.maximum(np.max(W, axis=-1), -np.min(W, axis=-1)))):
        hit = _absurd(mags)
        if hit is not None:
            i, ratio, count, typical = hit
            what = f"|{label}| = {mags[i]:.3g}" if label == "tau" else f"regressor entries up to {mags[i]:.3g}"
            return (
                f"{label} row {i} (sample {i // n}, joint {i % n + 1}) has {what}, {ratio:.3g} times the "
                f"typical {typical:.3g} (90th percentile), {count} such row(s): beyond float64's reach of the "
                "rest (a corrupted sample, a logger's overflow); remove or repair those samples "
                "(jaxid.identification.screening.implausible_values finds them)"
            )
    return None


def _raise_if(x, pred, msg):
    """x, with a run-time check: executing the compiled function raises ``msg`` (as a
    ``JaxRuntimeError`` whose text contains it) when ``pred`` is true. Under ``vmap``,
    one host call for the whole batch (raising when any member is bad).

    A ``jax.pure_callback`` rather than ``eqx.error_if``: the latter's ``lax.cond`` does
    not type-check inside ``jax.shard_map`` (``jaxid.study.run_study``), and
    ``jax.debug.callback`` unrolls over a vmapped axis. The callback returns False, and x
    is passed through ``where`` on it, so the check cannot be dropped as dead code.
    """

    def on_host(p):
        if np.any(p):
            raise ValueError(msg)
        return np.zeros(np.shape(p), dtype=bool)

    flag = jax.pure_callback(on_host, jax.ShapeDtypeStruct(pred.shape, jnp.bool_), pred, vmap_method="expand_dims")
    return jnp.where(flag, jnp.nan, x)


def _traced_checks(W, tau, white):
    """The value checks of ``identify`` for traced inputs, compiled in (``_raise_if``):
    running the compiled function on bad values raises instead of returning NaN."""
    W = _raise_if(W, ~jnp.all(jnp.isfinite(W)), "W contains NaN or inf" + _UNDER_JIT)
    tau = _raise_if(tau, ~jnp.all(jnp.isfinite(tau)), "tau contains NaN or inf" + _UNDER_JIT)
    W = _raise_if(W, ~jnp.any(W != 0), "W is all zeros: the data does not excite any parameter")
    tau = _raise_if(tau, ~jnp.any(tau != 0), ZERO_TAU)
    if white is not None:  # non-positive variances, negative weights or a non-PD cov give inf/NaN here
        white = _raise_if(
            white,
            ~jnp.all(jnp.isfinite(white)),
            "cov must be finite and positive definite, weights finite and non-negative" + _UNDER_JIT,
        )
    return W, tau, white


def _whitener(cov, weights, N, n):
    """Whitening matrix per sample, shape (n, n) or (N, n, n): Wh @ noise_k has unit covariance."""
    if weights is not None:
        return jax.vmap(jnp.diag)(jnp.sqrt(weights.reshape(N, n)))
    if cov.ndim == 1:
        return jnp.diag(1.0 / jnp.sqrt(cov))
    L = jnp.linalg.cholesky(cov)
    eye = jnp.broadcast_to(jnp.eye(n, dtype=L.dtype), L.shape)
    return jax.scipy.linalg.solve_triangular(L, eye, lower=True)


#: The part of the rank-deficiency message that names the ridge estimator: left out where the fit
#: is a ridge fit already (``jaxid.workflow``, whose outlier screening starts with OLS).
RIDGE_ADVICE = ", or use method='ridge'"


def _rank_error(W: jax.Array | np.ndarray, names: Sequence[str] | None) -> str | None:
    """Message naming the dependent columns of W, or None when W has full column rank."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bp = base_from_regressor(W, names, tol=TOL)
    if bp.rank == W.shape[1]:
        return None
    K = np.asarray(bp.K)
    std, ind = bp.standard_names, np.asarray(bp.indices)
    parts, zero = [], False
    for col, j in enumerate(np.asarray(bp.dependent)):
        on = [std[ind[i]] for i in np.flatnonzero(K[:, col])]
        zero |= not on
        parts.append(f"{std[j]} (= combination of {', '.join(on)})" if on else f"{std[j]} (zero column)")
    hint = (
        " A zero column is a parameter the data do not excite: record a trajectory that does "
        "(e.g. slow motion through zero velocity for Stribeck friction) or drop that term from the model."
        if zero
        else ""
    )
    return (
        f"W is rank deficient (rank {bp.rank} of {W.shape[1]} at tol {TOL:g}): unidentifiable "
        f"columns {'; '.join(parts)}.{hint} For combinations, identify base parameters instead "
        "(jaxid.base_parameters(model), or jaxid.identification.base.base_from_regressor(W, names), "
        f"then .reduce(W)){RIDGE_ADVICE} or pass rcond= for a truncated pseudo-inverse."
    )


def identify(
    W: ArrayLike,
    tau: ArrayLike,
    method: str = "wls",
    *,
    scale: bool = True,
    weights: ArrayLike | None = None,
    cov: ArrayLike | None = None,
    n_joints: int | None = None,
    names: Sequence[str] | None = None,
    loss: str = "huber",
    c: float | None = None,
    lam: float | None = None,
    rcond: float | None = None,
    max_iter: int = 20,
    check: bool = True,
) -> Identification:
    """Estimate theta in ``tau = W @ theta + noise`` with its covariance.

    Args:
        W: stacked sample-major regressor, shape (N*n, p) (rows k*n .. k*n+n-1 are sample
            k), or unstacked (N, n, p). Units: tau units per parameter unit.
        tau: measured torques, shape (N*n,) or (N, n), N·m (or N for prismatic joints).
        method: "wls" (default), "ols", "irls", "ridge" or "tls" (module docstring gives
            sources). The default is the command line's (``jaxid identify --method``): two-step
            weighted least squares (Gautier), because joint torques are rarely measured with
            one noise level (a shoulder's torque noise can be ten times a wrist's), and OLS then
            lets the noisiest joint dominate the fit and reports one pooled standard deviation
            for every parameter. With equal noise on every joint it gives the OLS estimate.
            It needs the joint count: a 3-D W, ``n_joints``, ``cov`` or ``weights``;
            ``method="ols"`` pools all rows without it.
        scale: divide each column of W by its norm before solving (default); theta and
            cov are mapped back. ``cond``/``singular_values`` refer to the scaled W.
        weights: "wls" only: per-row weights (inverse noise variances), (N*n,) or (N, n).
        cov: "wls" only: noise covariance per joint (n,), or the block of one sample
            (n, n) (shared by all samples) or one block per sample (N, n, n) — as for
            force/torque sensor wrenches; the system is whitened by its Cholesky factor.
            Without weights or cov, "wls" is Gautier's two-step scheme and needs n.
        n_joints: n, to split the rows per joint (inferred from a 3-D W or from cov/weights;
            otherwise 1, i.e. one pooled output, except for two-step "wls").
        names: p parameter names for error messages.
        loss, c: "irls" weight function, "huber" (c = 1.345) or "tukey" (c = 4.685), on
            residuals standardised by a per-joint MAD scale.
        lam: "ridge" parameter on the (scaled) problem, >= 0; None chooses it by GCV over
            61 log-spaced values in s_max^2 * [1e-14, 10].
        rcond: keep singular values above rcond * s_max (truncated pseudo-inverse) and
            allow a rank-deficient W ("ols", "wls", "irls"). Default: W must pass the
            rank check, and eps * max(M, p) (numpy's pinv cut) is used under jit/vmap.
        max_iter: "irls" iterations (fixed, so that it jits), from the OLS solution.
        check: validate the values (default). On concrete inputs this is done in Python
            with messages that locate the problem; on traced inputs (``jax.jit``,
            ``jax.vmap``, ``jax.shard_map``) the NaN/inf, all-zero-W, samples-per-joint
            (two-step "wls") and cov/weights checks are compiled in (one host callback per
            call), so running the compiled function on bad data raises a
            ``JaxRuntimeError`` whose text has the message (under vmap: when any member is
            bad) instead of returning NaN. The rank check is Python-only:
            under jit a rank-deficient W gets the truncated pseudo-inverse. ``check=False``
            is the fast path that skips all value checks (shape checks remain): the caller
            vouches for finite, exciting data.

    Returns:
        ``Identification``. Covariance: "ols" sigma^2 (W^T W)^-1 with sigma^2 =
        ||r||^2 / (M - rank); "wls" (W^T Sigma^-1 W)^-1 with the estimated or supplied
        noise covariance Sigma (Gauss-Markov, no rescaling); "irls" Huber's asymptotic
        covariance; "ridge" the sampling covariance sigma^2 V diag(g^2) V^T of the
        regularised estimator (biased); "tls" the first-order sigma^2 (W^T W -
        s_{p+1}^2 I)^-1.

    Raises:
        ValueError: unknown method or loss; mismatched shapes; NaN/inf; an all-zero tau (nothing to
            estimate: not theta = 0 with std 0); a torque or regressor row of absurd scale
            (``ABSURD`` times the rest, named by row, sample and joint); no more rows than
            parameters; a rank-deficient W (naming the unidentifiable columns) unless
            method="ridge" or rcond is given. Under jit/vmap the value checks raise at run time
            (see ``check``).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if loss not in LOSS_C:
        raise ValueError(f"unknown loss {loss!r}; choose 'huber' or 'tukey'")
    W, tau = host(W), host(tau)  # numpy stays numpy: no transfer programs to compile
    if W.ndim == 3:
        N, n, p = W.shape
        if tau.shape != (N, n):
            raise ValueError(f"W has shape {W.shape}, so tau must have shape {(N, n)}, got {tau.shape}")
        if n_joints is not None and n_joints != n:
            raise ValueError(f"n_joints={n_joints} but W has shape {W.shape} (n = {n})")
        W, tau = W.reshape(N * n, p), tau.reshape(N * n)
    elif W.ndim == 2:
        if tau.shape != (W.shape[0],):
            raise ValueError(f"W has {W.shape[0]} rows, so tau must have shape ({W.shape[0]},), got {tau.shape}")
        n = n_joints
    else:
        raise ValueError(f"W must have shape (N*n, p) or (N, n, p), got {W.shape}")
    M, p = W.shape

    if cov is not None and weights is not None:
        raise ValueError("pass either cov or weights, not both")
    if (cov is not None or weights is not None) and method != "wls":
        raise ValueError(f"cov and weights are used by method='wls' only, not {method!r}")
    if lam is not None and method != "ridge":
        raise ValueError(f"lam is used by method='ridge' only, not {method!r}")
    if rcond is not None and method not in ("ols", "wls", "irls"):
        raise ValueError(f"rcond is not supported by method={method!r}")
    if cov is not None:
        cov = jnp.asarray(cov, W.dtype)
        n = cov.shape[-1] if n is None and cov.ndim else n
    if weights is not None:
        weights = jnp.asarray(weights, W.dtype)
        n = weights.shape[-1] if n is None and weights.ndim == 2 else n
    if n is None:
        if method == "wls" and weights is None:
            raise ValueError(
                "two-step wls (the default method) estimates one noise variance per joint: pass "
                "n_joints (the rows of W are sample-major, n per sample) or W of shape (N, n, p), "
                "or method='ols' for one pooled noise level"
            )
        n = 1
    if n < 1 or M % n:
        raise ValueError(f"W has {M} rows, which is not a multiple of n_joints={n}")
    N = M // n
    if M <= p:
        raise ValueError(
            f"W has {M} rows for {p} parameters: least squares needs more rows than parameters "
            "(add samples or identify base parameters)"
        )
    if cov is not None and cov.shape not in ((n,), (n, n), (N, n, n)):
        raise ValueError(f"cov must have shape ({n},), ({n}, {n}) or ({N}, {n}, {n}), got {cov.shape}")
    if weights is not None and weights.shape not in ((M,), (N, n)):
        raise ValueError(f"weights must have shape ({M},) or ({N}, {n}), got {weights.shape}")
    if names is not None and len(names) != p:
        raise ValueError(f"got {len(names)} names for {p} columns of W")
    if c is None:
        c = LOSS_C[loss]

    traced = is_traced(W, tau)
    R = None if traced or check else _rows_r(W, tau, n)
    if check and not traced:
        Wn, tn = np.asarray(W), np.asarray(tau)
        for label, x in (("W", Wn), ("tau", tn)):
            bad = np.zeros((0,)) if np.isfinite(x).all() else np.argwhere(~np.isfinite(x))
            if bad.size:
                raise ValueError(
                    f"{label} contains NaN or inf (first at index {tuple(int(i) for i in bad[0])}); remove or repair those samples"
                )
        if not Wn.any():
            raise ValueError("W is all zeros: the data does not excite any parameter")
        msg = refusal(Wn, tn, n)
        if msg:
            raise ValueError(msg)
        R = _rows_r(W, tau, n)
        if method == "wls" and cov is None and weights is None and N <= p:  # b_j <= p < N otherwise
            b_j = _joint_variance(np.asarray(R), N)[1]
            if np.any(N <= b_j):
                raise ValueError(
                    f"two-step wls needs more samples than parameters per joint: N={N}, "
                    f"identifiable parameters per joint {b_j.tolist()}; add samples"
                )
        if method != "ridge" and rcond is None:
            # The R of all rows has the column inner products of W: the same rank decision. On the
            # host (a QR of n (p + 1) rows), where a compiled program cost a cold run 0.1 s.
            msg = _rank_error(_pooled(np.asarray(R))[:, :p], names)
            if msg:
                raise ValueError(msg)
    if check and cov is not None and not is_traced(cov):
        cn = np.asarray(cov)
        if not np.all(np.isfinite(cn)):
            raise ValueError("cov contains NaN or inf")
        if cn.ndim == 1 and np.any(cn <= 0):
            raise ValueError("cov (per-joint variances) must be positive")
        if cn.ndim > 1:
            try:
                np.linalg.cholesky(cn)
            except np.linalg.LinAlgError:
                raise ValueError("cov must be symmetric positive definite") from None
    if check and weights is not None and not is_traced(weights):
        wn = np.asarray(weights)
        if not np.all(np.isfinite(wn)) or np.any(wn < 0):
            raise ValueError("weights must be finite and non-negative")
    if lam is not None and not is_traced(lam) and not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    if rcond is not None and not is_traced(rcond) and not 0 <= rcond < 1:
        raise ValueError(f"rcond must be in [0, 1), got {rcond}")

    # Per-joint variances whiten each joint's rows alike: the reduced form takes them directly.
    variances = cov if cov is not None and cov.ndim == 1 else None
    white = None if variances is not None or (cov is None and weights is None) else _whitener(cov, weights, N, n)
    if rcond is None:  # numpy's pinv default; passed as a value so that it shares the compile
        rcond = float(np.finfo(np.float64).eps * max(M, p))
    traced = traced or is_traced(white) or is_traced(variances)
    if variances is not None and check and traced:
        variances = _raise_if(
            variances,
            ~jnp.all(jnp.isfinite(1.0 / jnp.sqrt(variances))),
            "cov must be finite and positive definite, weights finite and non-negative" + _UNDER_JIT,
        )
    if not traced and R is not None and (method in ("ols", "ridge") or (method == "wls" and white is None)):
        # The estimate needs only the per-joint R's, a few small factorisations done on the host;
        # the residual is taken on the rows themselves.
        Wn, tn = np.asarray(W), np.asarray(tau)
        r2 = lambda theta: np.sum((tn - Wn @ theta).reshape(N, n) ** 2, axis=0)
        return _reduced_fit(np.asarray(R), N, variances, lam, rcond, method=method, scale=scale, r2=r2)[0]
    count = None
    if not traced:  # zero samples up to the bucket: one program for every N of a bucket
        count, B = np.asarray(N), bucket(N)
        pad = lambda x, *shape: (
            x if B == N else np.concatenate([np.asarray(x), np.zeros(((B - N) * shape[0], *shape[1:]))])
        )
        W, tau = pad(W, n, p), pad(tau, n)
        white = pad(white, 1, n, n) if white is not None and white.ndim == 3 else white
    return _fit(
        W,
        tau,
        white,
        variances,
        lam,
        rcond,
        c,
        R,
        count,
        n=n,
        method=method,
        scale=scale,
        loss=loss,
        max_iter=max_iter,
        check=bool(check and traced),
    )


def _rows_r(W, tau, n):
    """The per-joint R's (n, p + 1, p + 1) of concrete stacked rows W (N*n, p), tau (N*n,): the
    one pass over the rows, by LAPACK's blocked incremental QR on CPU (``r_fold``), else the
    jitted tall-skinny QR."""
    if jax.default_backend() != "cpu":
        return _joint_r_jit(W, tau, n)
    W, tau = np.asarray(W), np.asarray(tau)
    return r_fold(np.zeros((n, W.shape[1] + 1, W.shape[1] + 1)), W.reshape(-1, n, W.shape[1]), tau.reshape(-1, n))
