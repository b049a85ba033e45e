"""Least squares on regressors too long to hold: rows reduced on the fly into R factors.

A least-squares problem on rows ``X = [W | tau]`` depends on the rows only through an
upper-triangular R with ``X^T X = R^T R``, and the R of a stack of row blocks is the R of
their stacked R's (tall-skinny / incremental QR; Demmel, Grigori, Hoemmen and Langou
2012, "Communication-optimal parallel and sequential QR and LU factorizations", SIAM J.
Sci. Comput. 34). So the regressor is generated chunk by chunk (``SAMPLES`` samples, the
regressor shape shared across jaxid), each chunk is folded into the running R by one
Householder QR, and the chunk is dropped: memory is O(chunk), whatever the number of
samples. One R is kept per joint, ``R_j`` of ``[W_j | tau_j]`` (joint j's own rows),
because everything the estimators need follows from them without another pass:

- the pooled R of all rows is the R of the stacked ``R_j``; column norms (for scaling and
  the zero-column test) are the column norms of R;
- Gautier's two-step WLS: each joint's OLS residual variance from its own ``R_j``
  (Gautier & Poignet 2001), then the R of the whitened system is the R of the stacked
  ``R_j / sigma_j``;
- residuals: ``||tau_j - W_j theta||^2 = ||R_j [theta; -1]||^2`` per joint, so
  ``residual_rms``, ``sigma2`` and the OLS covariance come from the reduced form too.

[`fit`][jaxid.identification.streaming.fit] returns the same ``Identification`` as ``estimators.identify`` ("ols", "wls"
two-step or with per-joint variances, "ridge") to rounding. [`irls`][jaxid.identification.streaming.irls] reweighs by passes
over rows generated again (the dense iteration, its weights and covariance).

On CPU the rows are first accumulated as per-joint Gram matrices, the normal equations
([`Gram`][jaxid.identification.streaming.Gram], ``base.gram_fold``: BLAS ``dsyrk``, half the flops of QR), and turned into the
R_j by a pivoted Cholesky (``base.gram_r``). The normal equations square the condition number
(their error in theta is ~eps cond^2 against ~eps cond for QR) and get residual sums by a
cancelling identity, so a condition check (`_from_gram`) accepts them only when both
errors are below stated tolerances; otherwise the rows are reduced again by LAPACK's
incremental QR on the host (``base.r_fold``: ``dtpqrt``, blocked, about twice the speed of
XLA's per-joint ``geqrf``): held rows directly, streamed runs by a second pass that generates
the chunks again. ``benchmarks/streaming.py`` measures time and accuracy of both against the
condition number. The regressor rows come from the program that ``jaxid.regressor`` compiles
and stores; elsewhere [`update`][jaxid.identification.streaming.update] (pure ``jnp``, QR, static shapes: jit, vmap, GPU) is one
compiled step per chunk. Only [`reduce_runs`][jaxid.identification.streaming.reduce_runs], [`irls`][jaxid.identification.streaming.irls] and
[`screen`][jaxid.identification.streaming.screen] loop over
chunks in Python.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid.arrays import device, is_traced
from jaxid.identification import sandwich
from jaxid.identification.base import GRAM_RSS_RTOL, GRAM_RTOL, SAMPLES, gram_fold, gram_r, r_fold
from jaxid.identification.estimators import (
    _MAD,
    LOSS_C,
    ZERO_TAU,
    Identification,
    _irls_weight,
    _joint_ols,
    _pinv_solve,
    _pooled,
    _psi,
    _rank_error,
    _reduced_fit,
    _result,
    _scaled,
    _two_step_variances,
    refusal,
)
from jaxid.identification.jackknife import sums_by_block

#: Bytes of the stacked float64 regressor (samples x joints x columns) above which
#: ``jaxid.workflow.identify_experiment`` streams it instead of holding it. Below it a cold
#: identification is dominated by compiling, and the dense path compiles less (no streaming
#: step, no residual pass; UR5, 30k samples, first call 44 s dense vs 61 s streamed on a loaded
#: 2-core machine) while its peak (about ``jaxid.memory.COPIES`` = 9 copies of W, ~600 MB at
#: the threshold) fits any machine that runs jaxid. Above it memory stays at a few chunks
#: (``benchmarks/streaming.py``). (The warm figures measured for this choice, 30k samples 1.3 s
#: streamed vs 4.9 s dense, predate the dense path's reduction to the same per-joint R's.)
STREAM_BYTES = 64 * 2**20

METHODS = ("ols", "wls", "ridge")


class Reduced(eqx.Module):
    """Rows ``[W | tau]`` of a least-squares problem, reduced per joint.

    Attributes:
        R: shape (n, k + 1, k + 1), upper triangular: ``R[j]^T R[j] = X_j^T X_j`` for joint
            j's rows ``X_j = [W_j | tau_j]`` (k regressor columns, then the torque).
        N: samples reduced (rows per joint), int scalar.
    """

    R: jax.Array
    N: jax.Array

    @staticmethod
    def empty(n: int, k: int) -> Reduced:
        """No rows yet: n joints, k regressor columns."""
        return Reduced(jnp.zeros((n, k + 1, k + 1)), jnp.zeros((), jnp.int32))


def update(red: Reduced, Y, tau, mask=None, weights=None) -> Reduced:
    """Fold a chunk of samples into ``red``.

    Y: regressor rows of the chunk, (C, n, k); tau: torques (C, n); mask: (C,) bool or
    0/1, the samples that enter the fit (None: all). A masked-out sample is a zero row,
    which leaves R unchanged. weights: (C, n) factors of each row (the square roots of
    row weights; None: ones), as IRLS reweighs. Pure ``jnp``, fixed shapes: jit and vmap it
    (on a GPU, say; on CPU [`from_rows`][jaxid.identification.streaming.from_rows] and [`reduce_runs`][jaxid.identification.streaming.reduce_runs]
    reduce rows on the host:
    Gram matrices with a condition check, else LAPACK's incremental QR)."""
    Y, tau = jnp.asarray(Y, dtype=float), jnp.asarray(tau, dtype=float)
    count = Y.shape[0]
    if weights is not None:
        weights = jnp.asarray(weights, dtype=float)
        Y, tau = Y * weights[..., None], tau * weights
    X = jnp.concatenate([Y, tau[..., None]], axis=-1)
    if mask is not None:
        mask = jnp.asarray(mask).astype(bool)
        X = jnp.where(mask[:, None, None], X, 0.0)
        count = jnp.sum(mask.astype(jnp.int32))
    # One QR per joint, unrolled: XLA's batched QR on CPU is slower than n single ones.
    R = jnp.stack([jnp.linalg.qr(jnp.concatenate([red.R[j], X[:, j]]), mode="r") for j in range(X.shape[1])])
    return Reduced(R, red.N + count)


_update = jax.jit(update)


class Gram(eqx.Module):
    """Rows ``[W | tau]`` accumulated as per-joint Gram matrices (the normal equations), on the
    host: the first, cheaper reduction on CPU (``base.gram_fold``), turned into a
    [`Reduced`][jaxid.identification.streaming.Reduced] by `_from_gram` when that is accurate.

    Attributes:
        G: shape (n, k + 1, k + 1), ``G[j] = X_j^T X_j`` for joint j's rows ``X_j = [W_j | tau_j]``.
        N: samples accumulated, int.
    """

    G: np.ndarray
    N: int

    @staticmethod
    def of(red: Reduced) -> Gram:
        """The Gram matrices of reduced rows: ``R_j^T R_j``."""
        R = np.asarray(red.R)
        return Gram(R.swapaxes(1, 2) @ R, int(red.N))


def _weighted(W, tau, weights):
    """Rows W (C, n, k), tau (C, n) times their factors weights (C, n) (None: as they are)."""
    return (W, tau) if weights is None else (W * weights[..., None], tau * weights)


def _fold(acc, W, tau, keep=None):
    """Rows W (C, n, k), tau (C, n) of the samples where keep (C,) bool (None: all) added on the
    host to ``acc``: a [`Gram`][jaxid.identification.streaming.Gram] (``base.gram_fold``) or a [`Reduced`][jaxid.identification.streaming.Reduced] (LAPACK's
    incremental QR, ``base.r_fold``); returns the same kind."""
    N = len(W) if keep is None else int(np.sum(keep))
    if isinstance(acc, Gram):
        return Gram(gram_fold(acc.G, W, tau, keep), acc.N + N)
    return Reduced(device(r_fold(np.asarray(acc.R), W, tau, keep)), acc.N + N)


def _kappa2(R, N):
    """The squared condition numbers that the normal equations' error scales with: the larger
    of the column-scaled pooled W's (ols, ridge) and the two-step whitened one's (wls); R
    (n, k + 1, k + 1) concrete, on the host."""
    p = R.shape[-1] - 1
    _, _, _, (_, s, _), Rs, sub_var, _ = _scaled(R, N, True)
    Rw = _pooled(Rs / np.sqrt(_two_step_variances(R, N, sub_var))[:, None, None])
    sw = np.linalg.svd(Rw[:p, :p], compute_uv=False)
    return max((s[0] / s[-1]) ** 2, (sw[0] / sw[-1]) ** 2)


def _from_gram(acc: Gram, rows=None) -> Reduced | None:
    """[`Reduced`][jaxid.identification.streaming.Reduced] from the Gram matrices when the normal equations are accurate, else None.

    The condition check. The estimate from the normal equations has a relative error of about
    eps kappa^2 (kappa: the column-scaled W's condition number; Higham 2002, "Accuracy and
    Stability of Numerical Algorithms", 20.4; Bjorck 1996, "Numerical Methods for Least
    Squares Problems", 2.2), measured 0.1-0.4 eps kappa^2 by ``benchmarks/streaming.py``,
    against ~eps kappa for QR. It must be below ``base.GRAM_RTOL`` (1e-8: kappa <= 6.7e3) for
    the larger of the ols and the two-step wls kappa; zero or dependent columns make kappa
    infinite. A joint's residual sums of squares (its own fit's, and the pooled fit's per
    joint) carry a relative error of about 2 eps kappa / nu_j from the solutions' errors (the
    error of W theta, not of theta: ~eps kappa ||W|| ||theta||), nu_j^2 = rho_j^2 / tau_j^T
    tau_j its relative residual (kappa the largest of the pooled and the joint's own), plus
    (k + 1) eps / nu_j^2 from the cancelling Gram identity (``base.gram_r``; measured 1-3 eps /
    nu_j^2); their sum must be below ``base.GRAM_RSS_RTOL`` (1e-6). Otherwise None: the caller
    reduces the rows by QR. Noise-free torques (nu_j ~ 0) never pass.

    rows: ``(W, tau, keep, start)`` of held rows (``from_rows``; start: the [`Reduced`][jaxid.identification.streaming.Reduced]
    they were added to): when the check fails, each joint's rho_j^2 is computed again from the
    rows at the joint's own solution x_j (one more read of W), which removes the cancellation
    term (it exceeds the minimum by ||W_j dx_j||^2, second order in the error), and checked
    again.

    With the rank cut of ``dpstrf`` (k eps of the scaled Gram), a joint's own rank counts the
    directions above ~1e-7 of its largest scaled singular value, QR's those above 1e-8: they
    differ only for a W with singular values in between, where the rank is ill-defined anyway."""
    eps = np.finfo(np.float64).eps
    Gp = acc.G[:, :-1, :-1].sum(axis=0)  # the pooled W's Gram: fail fast on the ols kappa
    d = np.sqrt(np.diag(Gp))
    if not np.all(d > 0):  # a zero column
        return None
    lam = np.linalg.eigvalsh(Gp / np.outer(d, d))
    if not eps * lam[-1] <= GRAM_RTOL * lam[0]:  # also a negative rounded eigenvalue, NaN
        return None
    t, N = acc.G[:, -1, -1], device(np.asarray(acc.N, np.int32))
    R, rss = gram_r(acc.G)
    x, _, _, kappa_j = _joint_ols(np.asarray(R))

    def accurate(R, rss, cancel):
        if not np.all(cancel <= GRAM_RSS_RTOL * rss):  # before the kappa's SVDs
            return False
        kappa2 = float(_kappa2(np.asarray(R), int(N)))
        solve = 2 * eps * np.maximum(np.sqrt(kappa2), kappa_j) * np.sqrt(rss * t)
        return eps * kappa2 <= GRAM_RTOL and bool(np.all(cancel + solve <= GRAM_RSS_RTOL * rss))

    if not accurate(R, rss, acc.G.shape[-1] * eps * t):
        if rows is None:
            return None
        W, tau, keep, start = rows
        x1 = np.append(x, -np.ones((len(x), 1)), axis=1)
        rss = np.sum(np.einsum("jab,jb->ja", np.asarray(start.R), x1) ** 2, axis=1)
        r = tau - np.einsum("Njk,jk->Nj", W, x)  # one read of W (a loop of strided gemv's: 3)
        rss += np.einsum("Nj,Nj->j", r, r) if keep is None else np.einsum("Nj,Nj->j", r[keep], r[keep])
        R, rss = gram_r(acc.G, rss)
        if not accurate(R, rss, 0.0):
            return None
    return Reduced(device(R), N)


def from_rows(
    W, tau, n_joints: int, mask=None, chunk: int = SAMPLES, start: Reduced | None = None, weights=None
) -> Reduced:
    """``Reduced`` of a stacked sample-major regressor W (N*n, k) (or (N, n, k)) and tau
    (N*n,) (or (N, n)) held in memory. mask: (N,) samples kept. start: rows reduced before,
    to add these to (default none). weights: (N, n) row factors, as [`update`][jaxid.identification.streaming.update].

    On CPU one pass of per-joint Gram matrices (``base.gram_fold``, half the flops of QR) and,
    when the condition check of `_from_gram` fails (an ill-conditioned W, a joint whose
    residual the Gram identity cannot resolve), a second pass by LAPACK's incremental QR
    (``base.r_fold``). On other backends ``chunk`` samples at a time through [`update`][jaxid.identification.streaming.update]
    (the last chunk padded with masked-out samples, so every chunk has one shape)."""
    n = int(n_joints)
    W, tau = np.asarray(W, dtype=float), np.asarray(tau, dtype=float)
    W, tau = W.reshape(-1, n, W.shape[-1]), tau.reshape(-1, n)
    # Non-finite rows and rows of absurd scale (estimators.refusal) named here, where the rows are; a
    # mask may drop them.
    # (Masked-out samples are zeroed for the check: zeros do not count in it.)
    kept = None if mask is None else np.asarray(mask, bool)
    if kept is None or kept.all():  # every row checked as it is (no copy of W)
        Wk, tk = W, tau
    else:
        Wk, tk = np.where(kept[:, None, None], W, 0.0), np.where(kept[:, None], tau, 0.0)
    finite = bool(np.all(np.isfinite(Wk)) and np.all(np.isfinite(tk)))
    if not finite or np.any(tk):  # an all-zero tau is fit's to refuse (start= may hold rows)
        msg = refusal(Wk.reshape(-1, W.shape[-1]), tk.reshape(-1), n)
        if msg:
            raise ValueError(msg)
    W, tau = _weighted(W, tau, None if weights is None else np.asarray(weights, dtype=float).reshape(-1, n))
    red = Reduced.empty(n, W.shape[-1]) if start is None else start
    keep = None if mask is None else np.asarray(mask, bool)
    if jax.default_backend() == "cpu":
        out = _from_gram(_fold(Gram.of(red), W, tau, keep), (W, tau, keep, red))
        return _fold(red, W, tau, keep) if out is None else out
    keep = np.ones(len(W), bool) if keep is None else keep
    for s in range(0, len(W), chunk):
        red = _update(red, *_padded(chunk, W[s : s + chunk], tau[s : s + chunk], keep[s : s + chunk]))
    return red


def _padded(chunk, *xs):
    """Arrays of one chunk padded to ``chunk`` rows by repeating the last (the last array, the
    mask, padded with False)."""
    k = len(xs[0])
    if k == chunk:
        return xs
    pad = [np.concatenate([x, np.repeat(x[-1:], chunk - k, axis=0)]) for x in xs[:-1]]
    return (*pad, np.concatenate([xs[-1], np.zeros(chunk - k, bool)]))


# ------------------------------------------------------------------------------ the fit


def _rank_matrix(red: Reduced):
    """R (k + 1, k) of the pooled regressor columns (on the host): same column inner products as W."""
    return _pooled(np.asarray(red.R))[:, :-1]


def fit(
    red: Reduced,
    method: str = "wls",
    *,
    variances=None,
    lam=None,
    rcond=None,
    scale: bool = True,
    names=None,
    check: bool = True,
) -> Identification:
    """``estimators.identify`` on reduced rows: the same estimate, covariance and statistics.

    red: [`Reduced`][jaxid.identification.streaming.Reduced] (n joints, k columns, N samples). method: "wls" (default, as
    ``estimators.identify``), "ols" or "ridge".
    variances: "wls" only: per-joint noise variances (n,) (units of tau squared); None:
        Gautier's two-step estimate from each joint's own OLS (``estimators.identify``).
    lam, rcond, scale: as ``identify``. names: k column names for the rank message.
    check: (concrete inputs) raise on non-finite rows, too few rows, a rank-deficient W
        (unless ridge or rcond), too few samples per joint for two-step wls.
    Returns ``estimators.Identification``; under jit (``check=False``) the same numbers.
    """
    if method not in METHODS:
        raise ValueError(
            f"method must be one of {METHODS} on reduced rows (irls reweighs the rows: "
            f"streaming.irls; tls augments them: hold W and use estimators.identify), got {method!r}"
        )
    if variances is not None and method != "wls":
        raise ValueError(f"variances are used by method='wls' only, not {method!r}")
    if lam is not None and method != "ridge":
        raise ValueError(f"lam is used by method='ridge' only, not {method!r}")
    n, k1 = red.R.shape[0], red.R.shape[-1]
    p = k1 - 1
    if variances is not None:
        variances = variances if is_traced(variances) else np.asarray(variances, dtype=float)
        if variances.shape != (n,):
            raise ValueError(f"variances must have shape ({n},) (one per joint), got {variances.shape}")
    if check:
        Rn = np.asarray(red.R)  # the checks on the host: no program per shape
        if not np.all(np.isfinite(Rn)):
            raise ValueError(
                "the reduced rows contain NaN or inf: some regressor row or torque is not finite; "
                "screen the data (jaxid.identification.screening.implausible_values)"
            )
        if int(red.N) * n <= p:
            raise ValueError(
                f"{int(red.N) * n} rows for {p} parameters: least squares needs more rows than "
                "parameters (add samples or identify base parameters)"
            )
        if not np.any(Rn[:, :, :p] != 0):
            raise ValueError("W is all zeros: the data does not excite any parameter")
        if not np.any(Rn[:, :, p] != 0):  # R_j's last column holds tau_j's projections and norm
            raise ValueError(ZERO_TAU)
        if method != "ridge" and rcond is None:
            msg = _rank_error(np.asarray(_rank_matrix(red)), names)
            if msg:
                raise ValueError(msg)
        if variances is not None and not (np.all(np.asarray(variances) > 0) and np.all(np.isfinite(variances))):
            raise ValueError("variances (per-joint noise variances) must be finite and positive")
        if lam is not None and not lam >= 0:
            raise ValueError(f"lam must be >= 0, got {lam}")
    if rcond is None:  # numpy's pinv cut, as identify
        rcond = float(np.finfo(np.float64).eps * max(int(red.N) * n, p))
    # The dense estimators reduce their rows to the same per-joint R's: one implementation (on the
    # host for concrete R's, traced under a jit).
    out, sub_rank = _reduced_fit(red.R, red.N, variances, lam, rcond, method=method, scale=scale)
    if check and method == "wls" and variances is None and np.any(int(red.N) <= np.asarray(sub_rank)):
        raise ValueError(
            f"two-step wls needs more samples than parameters per joint: N={int(red.N)}, "
            f"identifiable parameters per joint {np.asarray(sub_rank).tolist()}; add samples"
        )
    return out


def _weighted_solve(R, cols, rcond):
    """x = A^+ b, (A^T A)^+ and the rank, for the rows reduced to per-joint R's (n, p + 1,
    p + 1), their columns scaled by ``cols`` (p + 1,) (``estimators._scaled``); on the host."""
    p = R.shape[-1] - 1
    Ra = _pooled(np.asarray(R)) * cols
    return _pinv_solve(np.linalg.svd(Ra[:p, :p]), Ra[:p, p], rcond)


def irls(
    model,
    runs,
    columns,
    red: Reduced,
    masks=None,
    *,
    loss: str = "huber",
    c: float | None = None,
    max_iter: int = 20,
    rcond: float | None = None,
    scale: bool = True,
    progress=None,
) -> Identification:
    """``estimators.identify(..., "irls")`` on rows generated again for every reweighting.

    The same iteration as the dense estimator (Holland & Welsch 1977): from the OLS solution,
    ``max_iter`` times the residuals at the current estimate, a per-joint MAD scale s_j and
    Huber or Tukey weights w(r / s_j), then least squares on the rows scaled by
    sqrt(w) / s_j; Huber's (1981, 7.6) asymptotic covariance at the end. Each reweighting
    is one pass of [`residuals`][jaxid.identification.streaming.residuals] (inverse dynamics) and one of
    [`reduce_runs`][jaxid.identification.streaming.reduce_runs] with
    those row factors, so memory stays at a chunk of rows plus the residuals (N, n). Stops
    early once an iteration no longer moves the estimate (1e-13 of its largest entry).

    model, runs, columns, masks, progress: as [`reduce_runs`][jaxid.identification.streaming.reduce_runs]; red: their unweighted
    [`Reduced`][jaxid.identification.streaming.Reduced] (the column scaling, the start and the covariance's bread come from
    it). loss, c, max_iter, rcond, scale: as ``identify``. Returns ``Identification``."""
    if loss not in LOSS_C:
        raise ValueError(f"unknown loss {loss!r}; choose 'huber' or 'tukey'")
    c = LOSS_C[loss] if c is None else c
    n, p, N = int(model.n), red.R.shape[-1] - 1, int(red.N)
    if not np.any(np.asarray(red.R)[:, :, p] != 0):  # as fit: nothing to estimate from
        raise ValueError(ZERO_TAU)
    masks = [np.ones(len(_tau(run)), bool) for run in runs] if masks is None else [np.asarray(m, bool) for m in masks]
    tau = np.concatenate([_tau(run)[m] for run, m in zip(runs, masks)])
    rcond = float(np.finfo(np.float64).eps * max(N * n, p)) if rcond is None else rcond
    d, zero, Ra, usv, _, _, sub_rank = _scaled(np.asarray(red.R), int(red.N), scale)
    cols = np.append(np.where(zero, 0.0, 1.0 / d), 1.0)
    floor = 1e-12 * np.sqrt(np.mean(tau**2, axis=0)) + 1e-150  # an exact joint keeps a finite scale

    def resid_scale(x):
        r = np.concatenate([e[m] for e, m in zip(residuals(model, runs, columns, np.asarray(x / d)), masks)])
        return r, np.maximum(np.median(np.abs(r), axis=0) / _MAD, floor)

    x = _pinv_solve(usv, Ra[:p, p], rcond)[0]
    for _ in range(max_iter):
        r, s = resid_scale(x)
        sw = np.sqrt(np.asarray(_irls_weight(jnp.asarray(r / s), c, loss))) / s
        factors = [np.zeros((len(m), n)) for m in masks]
        for f, m, part in zip(factors, masks, np.split(sw, np.cumsum([m.sum() for m in masks])[:-1])):
            f[m] = part
        x_new = _weighted_solve(reduce_runs(model, runs, columns, masks, progress, factors).R, cols, rcond)[0]
        moved = float(np.max(np.abs(x_new - x)))
        x = x_new
        if moved <= 1e-13 * float(np.max(np.abs(x))):
            break
    r, s = resid_scale(x)
    t = jnp.asarray(r / s)
    _, P, rank = _weighted_solve(np.asarray(red.R) / s[:, None, None], cols, rcond)
    dpsi = jax.jvp(lambda t: _psi(t, c, loss), (t,), (jnp.ones_like(t),))[1]
    dof = N * n - rank
    cov = P * (jnp.sum(_psi(t, c, loss) ** 2) / dof) / jnp.mean(dpsi) ** 2  # Huber (1981, 7.6)
    return _result(x, cov, d, usv[1], lambda _: np.sum(r**2, axis=0), N, sub_rank, dof, np.zeros(()), "irls")


def _tau(run):
    return np.asarray(run()[1] if callable(run) else run[3])


# ------------------------------------------------------------------- runs, chunk by chunk


@eqx.filter_jit
def _regressor_update(model, red, columns, q, qd, qdd, tau, mask, weights=None):
    from jaxid.identification.regressor import regressor  # the regressor module imports models

    return update(red, regressor(model, q, qd, qdd)[..., columns], tau, mask, weights)


def _fold_chunk(model, acc, columns, q, qd, qdd, tau, mask, weights=None):
    """One chunk of states folded into ``acc``: on CPU the regressor program that
    ``jaxid.regressor`` compiles (stored in the persistent cache; a host callback inside a
    program would keep it out) and `_fold` on the host (``acc`` a [`Gram`][jaxid.identification.streaming.Gram] or a
    [`Reduced`][jaxid.identification.streaming.Reduced]); elsewhere one compiled step, so on a GPU the rows never leave it."""
    if jax.default_backend() != "cpu":
        return _regressor_update(model, acc, columns, q, qd, qdd, tau, mask, weights)
    from jaxid.identification.regressor import regressor

    Y = np.asarray(regressor(model, q, qd, qdd))[..., np.asarray(columns)]
    return _fold(acc, *_weighted(Y, tau, weights), np.asarray(mask, bool))


@eqx.filter_jit
def _torque_residual(model, theta, q, qd, qdd, tau):
    return tau - jax.vmap(model.torque, in_axes=(None, 0, 0, 0))(theta, q, qd, qdd)


def _chunks(runs, progress, desc):
    """(run index, start) of every chunk of SAMPLES samples, through ``progress``."""
    todo = [(i, s) for i, run in enumerate(runs) if not callable(run) for s in range(0, len(run[0]), SAMPLES)]
    todo += [(i, None) for i, run in enumerate(runs) if callable(run)]
    return todo if progress is None else progress(todo, total=len(todo), desc=desc)


def reduce_runs(model, runs, columns, masks=None, progress=None, weights=None) -> Reduced:
    """[`Reduced`][jaxid.identification.streaming.Reduced] of the regressor rows of several runs, never holding more than a chunk of
    them (``SAMPLES`` samples; the regressor is evaluated inside the compiled step, so on a GPU
    the rows never leave it).

    model: a jaxid model (``n``, ``torque``, ``parameter_vector``; its regressor by
        ``jaxid.regressor``). runs: per run either states ``(q, qd, qdd, tau)``, each (N_i, n)
        (rad, rad/s, rad/s^2, N m), or a callable returning that run's rows ``(W, tau)``,
        (N_i, n, k) and (N_i, n), for rows that cannot be generated chunk by chunk (e.g.
        parallel filtering along the whole run). columns: the k regressor columns kept (int
        array), e.g. the base indices. masks: per run (N_i,) bool, the samples that enter the fit
        (None: all). progress: optional ``progress(iterable, total=..., desc=...)``. weights:
        per run (N_i, n) factors of each row ([`update`][jaxid.identification.streaming.update]), or None.
    """
    masks = [None] * len(runs) if masks is None else list(masks)
    columns = jnp.asarray(np.asarray(columns), dtype=jnp.int32)
    red = Reduced.empty(int(model.n), int(columns.size))
    cpu = jax.default_backend() == "cpu"

    def fold_all(acc):
        for i, s in _chunks(runs, progress, "regressor"):
            run = runs[i]
            w = None if weights is None else np.asarray(weights[i], dtype=float)
            if callable(run):
                W, tau = _weighted(*(np.asarray(x, dtype=float) for x in run()), w)
                keep = None if masks[i] is None else np.asarray(masks[i], bool)
                acc = _fold(acc, W, tau, keep) if cpu else from_rows(W, tau, model.n, keep, start=acc)
                continue
            keep = np.ones(len(run[0]), bool) if masks[i] is None else np.asarray(masks[i], bool)
            rows = [np.asarray(x, dtype=float)[s : s + SAMPLES] for x in run] + (
                [] if w is None else [w[s : s + SAMPLES]]
            )
            *chunk, keep = _padded(SAMPLES, *rows, keep[s : s + SAMPLES])
            acc = _fold_chunk(model, acc, columns, *chunk[:4], keep, *chunk[4:])
        return acc

    if not cpu:
        return fold_all(red)
    # The normal equations first; rows generated again for the QR fold when they are not accurate.
    out = _from_gram(fold_all(Gram.of(red)))
    return fold_all(red) if out is None else out


def _score_update(meat, Y, tau, mask, theta, weights, bread):
    Y = Y * mask[:, None, None]  # a sample left out has zero rows but keeps its place in time
    return sandwich.update(meat, *sandwich.scores(Y, tau * mask[:, None] - Y @ theta, weights), bread)


_rows_meat = jax.jit(_score_update)


def meat(model, runs, columns, theta, weights, bread, lags, masks=None, progress=None):
    """``sandwich.Meat`` of the fit theta (k,) of the ``columns`` (bread (k, k), the white
    covariance (W^T Omega W)^-1), chunk by chunk: the Bartlett-weighted products of the scores
    ``W_t^T diag(weights) (tau_t - W_t theta)`` over lags up to ``lags[i]`` samples within run
    i, summed over runs, and the white-noise variance the residuals lose to the fit. weights:
    per-joint row weights (n,) of the fit (1 / noise variance for WLS, ones for OLS). model,
    runs, columns, masks, progress: as [`reduce_runs`][jaxid.identification.streaming.reduce_runs] (a masked-out sample scores zero).
    Regressor rows are evaluated again, one chunk at a time; pass the result to
    ``sandwich.covariance``."""
    from jaxid.identification.regressor import regressor  # the regressor module imports models

    columns = jnp.asarray(np.asarray(columns), dtype=jnp.int32)
    theta, weights, bread = (jnp.asarray(x, dtype=float) for x in (theta, weights, bread))
    m = sandwich.Meat.empty(int(columns.size), 0)
    masks = [None] * len(runs) if masks is None else list(masks)
    current = None
    for i, s in _chunks(runs, progress, "covariance"):
        if i != current:  # a new run: no lag products across the join
            m, current = m.next_run(int(lags[i])), i
        run = runs[i]
        if callable(run):
            W, tau = run()
            keep = np.ones(len(tau), bool) if masks[i] is None else np.asarray(masks[i], bool)
            for c in range(0, len(tau), SAMPLES):
                m = _rows_meat(
                    m,
                    *_padded(SAMPLES, W[c : c + SAMPLES], tau[c : c + SAMPLES], keep[c : c + SAMPLES]),
                    theta,
                    weights,
                    bread,
                )
        else:
            keep = np.ones(len(run[0]), bool) if masks[i] is None else np.asarray(masks[i], bool)
            q, qd, qdd, tau, keep = _padded(
                SAMPLES, *(np.asarray(x, dtype=float)[s : s + SAMPLES] for x in run), keep[s : s + SAMPLES]
            )
            # the regressor program that jaxid.regressor has compiled already (on the device)
            m = _rows_meat(m, regressor(model, q, qd, qdd)[..., columns], tau, keep, theta, weights, bread)
    return m


def _block_update(Fg, sg, Y, columns, tau, mask, block, theta, w):
    Y = Y[..., columns]
    A = Y * (mask[:, None] * w)[:, :, None]  # whitened rows; a sample left out has zero rows
    r = (tau - Y @ theta) * mask[:, None] * w
    G = Fg.shape[0]
    Fg = Fg + jax.ops.segment_sum(jnp.einsum("tki,tkj->tij", A, A), block, num_segments=G)
    return Fg, sg + jax.ops.segment_sum(jnp.einsum("tkc,tk->tc", A, r), block, num_segments=G)


_rows_blocks = jax.jit(_block_update)


def block_sums(model, runs, columns, theta, weights, blocks: int, masks=None, progress=None):
    """Per block of the samples fitted, the information and summed scores (G, k, k) and (G, k) of the
    rows whitened by ``sqrt(weights)`` at the fit theta (k,) of the ``columns``, chunk by chunk: what
    ``jaxid.identification.jackknife.from_sums`` needs. The fitted samples of all runs, in order, are cut
    into ``blocks`` contiguous blocks of equal count (the last shorter), as
    ``jackknife.block_sums`` cuts held rows. weights: per-joint row weights (n,) (1 / noise variance).
    model, runs, columns, masks, progress: as [`reduce_runs`][jaxid.identification.streaming.reduce_runs]."""
    from jaxid.identification.regressor import regressor  # the regressor module imports models

    columns = np.asarray(columns, dtype=np.int32)
    theta, w = np.asarray(theta, dtype=float), np.sqrt(np.asarray(weights, dtype=float))
    k = int(columns.size)
    # Held rows are summed on the host, states on the device: no eager operation compiles a program
    # for a run that has none of the other kind.
    Fg, sg = np.zeros((blocks, k, k)), np.zeros((blocks, k))
    on_device = None
    if masks is None:
        masks = [np.ones(len(run()[1]) if callable(run) else len(run[0]), bool) for run in runs]
    keeps = [np.asarray(mask, bool) for mask in masks]
    lengths = [len(kp) for kp in keeps]
    size = -(-sum(int(kp.sum()) for kp in keeps) // blocks)
    # each fitted sample's block, by its count among the fitted samples of all runs
    order = np.cumsum(np.concatenate(keeps)) - 1
    block = np.split(np.clip(order // size, 0, blocks - 1).astype(np.int32), np.cumsum(lengths)[:-1])
    for i, s in _chunks(runs, progress, "covariance"):
        run, keep = runs[i], keeps[i]
        if callable(run):
            F, r = _held_block_sums(run, keep, block[i], theta, w, blocks)
            Fg, sg = Fg + F, sg + r
            continue
        q, qd, qdd, tau, g, kp = _padded(
            SAMPLES,
            *(np.asarray(x, dtype=float)[s : s + SAMPLES] for x in run),
            block[i][s : s + SAMPLES],
            keep[s : s + SAMPLES],
        )
        if on_device is None:
            on_device = tuple(map(device, (np.zeros((blocks, k, k)), np.zeros((blocks, k)))))
        Y = regressor(model, q, qd, qdd)
        on_device = _rows_blocks(*on_device, Y, device(columns), tau, kp, g, device(theta), device(w))
    if on_device is not None:
        Fg, sg = Fg + np.asarray(on_device[0]), sg + np.asarray(on_device[1])
    return Fg, sg


def _held_block_sums(run, keep, block, theta, w, blocks: int):
    """``block_sums``'s terms of one run of held rows (a callable of host arrays), on the host
    ([`sums_by_block`][jaxid.identification.jackknife.sums_by_block])."""
    W, tau = (np.asarray(x, dtype=float) for x in run())
    if not keep.all():  # else the rows as they are (a copy of W saved)
        W, tau, block = W[keep], tau[keep], block[keep]
    return sums_by_block(W * w[None, :, None], (tau - W @ theta) * w, block, blocks)


def residuals(model, runs, columns, theta) -> list:
    """Residuals tau - W theta (N_i, n) of every run (all samples), chunk by chunk.

    theta: estimate of the k ``columns`` (e.g. base parameters on the base columns). For
    states, ``W theta`` is the model's torque at the standard parameter vector with theta on
    ``columns`` and zero elsewhere: one inverse-dynamics evaluation per sample instead of a
    regressor, equal for models linear in their parameters (``Robot``). Row runs
    (callables) are evaluated again."""
    theta = np.asarray(theta, dtype=float)
    full = None
    out = []
    for run in runs:
        if callable(run):
            W, tau = run()
            out.append(np.asarray(tau) - np.asarray(W) @ theta)
            continue
        if full is None:
            full = jnp.zeros(len(model.parameter_names())).at[np.asarray(columns)].set(theta)
        N = len(run[0])
        r = np.empty((N, model.n))
        for s in range(0, N, SAMPLES):
            k = min(SAMPLES, N - s)
            chunk = _padded(SAMPLES, *(np.asarray(x, dtype=float)[s : s + SAMPLES] for x in run), np.ones(k, bool))
            r[s : s + k] = np.asarray(_torque_residual(model, full, *chunk[:4]))[:k]
        out.append(r)
    return out


def screen(
    model,
    runs,
    columns,
    *,
    method: str = "wls",
    masks=None,
    names=None,
    joint_names=None,
    k: float | None = None,
    on_outliers: str = "drop",
    progress=None,
):
    """``screening.screen_fit`` on streamed rows: fit, screen the residual for outliers
    (robust z > k), and drop them and refit (``on_outliers="drop"``), fit by Huber IRLS
    instead (``"irls"``, [`irls`][jaxid.identification.streaming.irls]) or report them (``"keep"``). Implausible torques and
    dead channels are an error, as there.

    model, runs, columns, masks, progress: as [`reduce_runs`][jaxid.identification.streaming.reduce_runs]. method: "ols", "wls",
    "ridge" or "irls". names: the k column names; joint_names: n joint names (messages).
    Outlier rows are numbered over the samples that enter the fit (the masks' True samples,
    run after run), as ``screen_fit`` numbers the rows it is given.

    Returns ``screening.Screened`` (its ``reduced``: the unweighted rows of the final fit);
    raises ValueError with the report's message."""
    from jaxid.identification import screening

    if on_outliers not in ("drop", "keep", "irls"):
        raise ValueError(f"on_outliers must be 'drop', 'keep' or 'irls', got {on_outliers!r}")
    if method not in (*METHODS, "irls"):
        raise ValueError(f"method must be one of {(*METHODS, 'irls')} on streamed rows, got {method!r}")
    k = screening.OUTLIER_K if k is None else k
    n = int(model.n)
    taus = [_tau(run) for run in runs]
    masks = [np.ones(len(t), bool) for t in taus] if masks is None else [np.asarray(m, bool) for m in masks]
    tau = np.concatenate([t[m] for t, m in zip(taus, masks)])
    bad = screening.implausible_values(tau, names=joint_names)
    if bad:
        raise ValueError(bad.message + " (remove those samples)")
    dead = screening.dead_channels(tau, joint_names)
    if dead:
        raise ValueError(dead.message + "; fix the sensor or mapping")
    red = reduce_runs(model, runs, columns, masks, progress)
    first: Identification | None = fit(red, method if method in ("ols", "wls") else "ols", names=names)

    def resid(out):
        return np.concatenate([x[m] for x, m in zip(residuals(model, runs, columns, out.theta), masks)])

    def fit_by(how):
        if how == "irls":
            return irls(model, runs, columns, red, masks, progress=progress)
        return first if first is not None and first.method == how else fit(red, how, names=names)

    samples = np.arange(len(tau))
    found = screening.outliers(resid(first), k=k, names=joint_names, index=samples)
    notes, used = [], method
    if found and on_outliers == "drop":
        keep = np.concatenate(masks)
        keep[np.flatnonzero(keep)[found.rows]] = False
        masks = np.split(keep, np.cumsum([len(m) for m in masks])[:-1])
        red, first = reduce_runs(model, runs, columns, masks, progress), None
        samples = np.setdiff1d(samples, found.rows)
        notes.append(f"{found.message}: dropped, refitted by {method}")
    elif found and on_outliers == "irls":
        used = "irls"
    elif found:
        notes.append(f"{found.message}: kept (IRLS recommended)")
    out = fit_by(used)
    if found and on_outliers == "irls":
        found = screening.outliers(resid(out), k=k, names=joint_names, index=samples) or found
        notes.append(f"{found.message}: fitted by IRLS (Huber) instead of {method}")
    return screening.Screened(
        out, used, "irls" if found else None, tuple(range(n)), samples, dead, bad, found, tuple(notes), red
    )
