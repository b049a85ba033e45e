"""Base (identifiable) parameters: a canonical set of independent regressor columns.

Only linear combinations of the standard parameters show in the torques of a robot: a
column of the stacked regressor ``W`` that is a combination of the others cannot be
separated from them (Gautier 1990, "Numerical calculation of the base inertial parameters
of robots", Proc. IEEE ICRA). The columns are visited in their order -- the model's
parameter order: each link's inertial parameters, then the joint terms; columns below
``NEGLIGIBLE`` times the largest norm last -- and a column is kept when its distance to the
span of the columns kept before it, relative to its own norm, exceeds a tolerance (for a robot's
rigid-body inertial columns also ``UNSEEN``, and those below ``UNSEEN`` times the largest of them
count as zero: independent only through a rounded angle, see ``UNSEEN``)
(Gram-Schmidt with re-orthogonalisation; the unpivoted QR rank test of FIGAROH, Nguyen et
al. 2023). Every other column is a combination of earlier kept ones,
``W_dep = W_indep @ K``, so that

    W @ theta = W_indep @ (theta_indep + K @ theta_dep) = W_base @ theta_base.

Ties between equivalent columns are broken by column order, never by rounding, so the set
and the names depend only on the structure: not on the states, their order, noise or BLAS
(a pivoted QR picks among equal columns by rounding noise). Joint-term columns come after
the inertial ones and cannot displace them: the inertial base parameters keep their names
when friction or offsets are switched on.

This is a one-off structural computation, done with numpy at the edge; the resulting
``BaseParameters`` maps (``to_base``, ``reduce``) are pure ``jnp`` and jit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid import cache
from jaxid.arrays import AnyArray, is_traced
from jaxid.identification.regressor import regressor, states_rng

if TYPE_CHECKING:
    from jaxid.dynamics.terms import NamedTorqueModel

#: Relative distance of a column (normalised) to the span of the kept columns before it,
#: below which it counts as dependent. Structural dependencies sit at ~1e-15 in float64;
#: genuinely independent columns of a regressor on random states sit well above 1e-8.
TOL = 1e-8
#: Ratio of the smallest kept distance to the largest dropped one below which the rank is
#: called ambiguous and a warning is raised.
GAP_WARN = 1e3

#: Samples per regressor evaluation across jaxid: the default number of states of
#: ``base_parameters`` and the chunk of ``jaxid.workflow.regressor_rows``. One shape means one
#: compiled regressor per model for excitation, identification and validation alike, which
#: the persistent compilation cache then reuses from one command to the next. One batching
#: chunk (``batching.CHUNK``): a record is padded to whole chunks, so a 1000-sample record
#: evaluates 1024 samples (2048 before: half the regressor's time was padding).
SAMPLES = 1024
#: Columns with a norm below this fraction of the largest are visited after all the others:
#: a column that is small only through a rounded angle (a URDF's rpy="1.5707963" leaves a
#: 3e-8 copy of a column) must not stand for its group, which would scale the base parameter
#: by 1/3e-8 and leave its reduced column at rounding level.
NEGLIGIBLE = 1e-6
#: Among a robot's rigid-body inertial columns, those with a norm below this fraction of the
#: largest of them count as zero (not identifiable): such a column moves the torques only through a
#: rounded angle. A URDF's rpy="1.5708" for pi/2 tilts a vertical axis by 3.7e-6 rad, and the first
#: moments and mass of the links that turn about it then show at 1e-6 to 5e-5 of the largest
#: column (SO-100/101: mx1, my1, m2; cond(Phi^T Phi) 8.8e13, one base parameter at 285 % std),
#: which no measurement resolves. Over 13 example-robot-data URDFs every other kept inertial column
#: is at least 0.06 of the largest. Only the inertial columns are compared: a joint term's column
#: (a motor's inertia through a 1:100 gear) can be 1e4 times a rigid-body one on motor-side logs.
UNSEEN = 1e-3
#: Coefficients of K with a smaller magnitude are rounding noise and are dropped.
COEF_TOL = 1e-10


class BaseParameters(eqx.Module):
    """Base parameters of a regressor: ``theta_base = theta[indices] + K @ theta[dependent]``.

    Attributes:
        indices: independent columns of ``W``, sorted, shape (b,), int.
        dependent: the other columns, sorted, shape (p - b,), int.
        K: shape (b, p - b); ``W[:, dependent] == W[:, indices] @ K``.
        r_diag: each column's distance (``W`` column-normalised) to the span of the kept
            columns visited before it (see the module docstring), shape (p,): the |R_jj|
            of an unpivoted QR in that order; zero for a zero column.
        gap: smallest kept over largest dropped ``r_diag``; ``inf`` when ``W`` has full
            column rank or every dropped column is exactly zero.
        rank: number of base parameters b.
        names: readable base parameter names, e.g. ``"Izz1 + Iyy2 + 0.180625*m2"``.
        standard_names: names of the p standard parameters (the columns of ``W``).
    """

    # numpy from base_from_regressor (found in numpy, used as jit inputs); tracers under jit
    indices: AnyArray
    dependent: AnyArray
    K: AnyArray
    r_diag: AnyArray
    gap: float = eqx.field(static=True)
    rank: int = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    standard_names: tuple[str, ...] = eqx.field(static=True)

    def to_base(self, theta: ArrayLike) -> AnyArray:
        """Base parameters from standard ones: theta (..., p) -> (..., b); with numpy on the host
        for a concrete theta (and base), in jax for a traced one."""
        if is_traced(theta, self.K):
            return _to_base(theta, self.indices, self.dependent, self.K)
        t = np.asarray(theta, dtype=float)
        return t[..., np.asarray(self.indices)] + t[..., np.asarray(self.dependent)] @ np.asarray(self.K).T

    def matrix(self) -> np.ndarray:
        """The map from standard to base parameters as a matrix (b, p), numpy:
        ``to_base(theta) == matrix() @ theta``."""
        B = np.zeros((self.rank, len(self.standard_names)))
        B[np.arange(self.rank), np.asarray(self.indices)] = 1.0
        B[:, np.asarray(self.dependent, dtype=int)] = np.asarray(self.K, dtype=float)
        return B

    def reduce(self, W: ArrayLike) -> AnyArray:
        """Reduced regressor ``W[..., indices]``: (..., p) -> (..., b); numpy for a concrete W (a
        copy of columns on the host), jax traced."""
        if is_traced(W, self.indices):
            return _take(W, self.indices)
        return np.asarray(W)[..., np.asarray(self.indices)]


def _format_combination(name: str, coefs: np.ndarray, dep_names: list[str]) -> str:
    terms = [name]
    for c, dn in zip(coefs, dep_names):
        if abs(c) < COEF_TOL:
            continue
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        terms.append(f"{sign} {dn}" if abs(mag - 1.0) < COEF_TOL else f"{sign} {mag:.10g}*{dn}")
    return " ".join(terms)


#: Row block of the tall-skinny QR (see ``r_factor``).
QR_BLOCK = 1024


def r_factor(X, xp=np):
    """Upper-triangular R (..., k, k) with X^T X = R^T R, for X (..., M, k) (leading axes:
    independent problems, e.g. one per joint), by tall-skinny QR (Demmel, Grigori, Hoemmen
    and Langou 2012): the R factors of row blocks are stacked and factored again; zero rows
    pad M to whole blocks (they leave R unchanged). LAPACK's QR (and SVD) of a tall, narrow
    regressor is BLAS-2 bound; the batched block QRs are several times faster, and a
    least-squares problem on X reduces exactly to one on R.

    xp: ``numpy`` (at the edges) or ``jax.numpy`` (inside jitted estimators): one algorithm
    for both, with static shapes."""
    *lead, M, k = X.shape
    edge = [(0, 0)] * len(lead)
    if M > 2 * QR_BLOCK:
        nb = -(-M // QR_BLOCK)
        X = xp.pad(X, (*edge, (0, nb * QR_BLOCK - M), (0, 0))).reshape(*lead, nb, QR_BLOCK, k)
        X = xp.linalg.qr(X, mode="r").reshape(*lead, nb * k, k)
    if X.shape[-2] < k:
        X = xp.pad(X, (*edge, (0, k - X.shape[-2]), (0, 0)))
    return xp.linalg.qr(X, mode="r")[..., :k, :]


def _joint_blocks(W, tau, keep, size):
    """(first sample, joint j, rows ``[W_j | tau_j]``) of every block of ``size`` samples of W
    (C, n, k), tau (C, n), keeping the samples where keep (C,) bool (None: all); the rows
    (c, k + 1) are copied into one reused, column-major buffer, as LAPACK reads it."""
    C, n, k = W.shape
    B = np.empty((k + 1, min(C, size))).T
    for s in range(0, C, size):
        rows = slice(s, min(s + size, C)) if keep is None else s + np.flatnonzero(keep[s : s + size])
        c = len(tau[rows])
        for j in range(n if c else 0):
            B[:c, :k], B[:c, k] = W[rows, j], tau[rows, j]
            yield s, j, B[:c]


def r_fold(R, W, tau, keep=None):
    """Per-joint R factors with the rows ``[W_j | tau_j]`` folded in, by LAPACK on the host.

    R: (n, k + 1, k + 1) upper-triangular factors of the rows folded before (zeros for
    none); W: (C, n, k) regressor rows of C samples, tau: (C, n), keep: (C,) bool, the
    samples folded in (None: all). Returns a new float64 array R' (n, k + 1, k + 1) with
    ``R'_j^T R'_j = R_j^T R_j + X_j^T X_j`` for ``X_j = [W_j | tau_j]`` (kept rows).

    One ``dtpqrt`` per joint and block of ``QR_BLOCK`` samples: LAPACK's blocked QR of a
    triangle stacked on a rectangle (the incremental QR step of TSQR, Demmel et al. 2012),
    2 C (k + 1)^2 flops, with compact-WY (BLAS-3) updates, about twice the speed of XLA's
    unblocked ``geqrf`` call on the same stack on CPU; a block of 1024 rows of 49 columns
    (400 kB) stays in the L2 cache while it is reduced. numpy at the edges: the caller
    holds the rows on the host (``jaxid.identification.streaming``)."""
    from scipy.linalg import lapack  # scipy is imported lazily across jaxid

    W, tau = np.asarray(W, dtype=np.float64), np.asarray(tau, dtype=np.float64)
    k = W.shape[-1]
    Rs = [np.asfortranarray(r, dtype=np.float64) for r in np.asarray(R)]
    for s, j, X in _joint_blocks(W, tau, keep, QR_BLOCK):
        # inner block nb = 8: measured fastest of 8..49 at k = 48 (a 2-core AVX-512 host)
        Rs[j], _, _, info = lapack.dtpqrt(0, min(8, k + 1), Rs[j], X, overwrite_a=1, overwrite_b=1)
        if info:
            raise ValueError(f"LAPACK dtpqrt failed (info {info}) on joint {j + 1}'s rows from sample {s}")
    return np.stack(Rs)


#: Samples per block of ``gram_fold``: 2048 x 49 rows (800 kB) measured as fast as 1024 or
#: 4096 and faster than one product over all rows (which copies them all first).
GRAM_BLOCK = 2048


def gram_fold(G, W, tau, keep=None):
    """Per-joint Gram matrices with the rows ``[W_j | tau_j]`` added, by BLAS on the host.

    G: (n, k + 1, k + 1) Gram matrices of the rows added before (zeros for none); W, tau,
    keep: as [`r_fold`][jaxid.identification.base.r_fold]. Returns a new float64 array G' with ``G'_j = G_j + X_j^T X_j``
    for ``X_j = [W_j | tau_j]`` (kept rows): one symmetric rank-c update per joint and block
    (``numpy.dot`` of a matrix with its own transpose calls BLAS ``dsyrk``), C (k + 1)^2
    flops per joint, half of [`r_fold`][jaxid.identification.base.r_fold]'s QR, and no Householder bookkeeping. The
    Gram squares the condition number: [`gram_r`][jaxid.identification.base.gram_r] says when that costs accuracy."""
    G = np.array(G, dtype=np.float64)
    W, tau = np.asarray(W, dtype=np.float64), np.asarray(tau, dtype=np.float64)
    for _, j, X in _joint_blocks(W, tau, keep, GRAM_BLOCK):
        G[j] += np.dot(X.T, X)
    return G


#: Relative rounding error of theta accepted from the normal equations (``streaming``'s
#: condition check, eps cond^2 <= GRAM_RTOL, i.e. cond <= 6.7e3); larger estimated errors send
#: the rows to the QR fold instead.
GRAM_RTOL = 1e-8
#: Relative rounding error accepted in a joint's residual sums of squares from the normal
#: equations (``streaming``'s condition check): below the sampling error sqrt(2 / N) of any
#: variance estimated from fewer than 2e12 samples, so the variances, weights and standard
#: deviations they feed are unaffected.
GRAM_RSS_RTOL = 1e-6


def gram_r(G, rss=None):
    """Per-joint R factors (n, k + 1, k + 1) from the Gram matrices G (n, k + 1, k + 1) of
    the rows ``[W_j | tau_j]`` (``gram_fold``), and each joint's own least-squares residual sum
    of squares (n,) that they carry. rss: (n,) those sums computed from the rows
    (``streaming.from_rows``), used instead of the Gram identity's; None: the identity.

    Each joint's W-block, its columns scaled to unit norm, is factored by LAPACK's pivoted
    Cholesky (``dpstrf``, semidefinite: it stops at a pivot below k eps, so columns that are
    zero or structurally dependent within joint j's rows get exactly zero singular values,
    as they get rounding-level ones from QR); the torque column follows by one triangular
    solve, ``U^T z = P^T W_j^T tau_j``, and the residual of joint j's own least squares by the
    Gram identity ``rho_j^2 = tau_j^T tau_j - z^T z`` (clamped at zero). The factor
    ``[U P^T, z; 0, rho_j]`` is brought back to upper-triangular form by a QR of its (k + 1)
    rows, so it is an R of the rows up to rounding (``R_j^T R_j = G_j``) and everything
    downstream takes it unchanged. The identity cancels (an absolute error of about
    (k + 1) eps tau_j^T tau_j): whether that matters is the caller's check
    (``streaming._from_gram``)."""
    from scipy.linalg import lapack, solve_triangular

    G = np.asarray(G, dtype=np.float64)
    n, k1, _ = G.shape
    k = k1 - 1
    R, rho2 = np.zeros_like(G), np.zeros(n)
    for j in range(n):
        Gw, b, t = G[j, :k, :k], G[j, :k, k], G[j, k, k]
        d = np.sqrt(np.diag(Gw))
        d = np.where(d > 0, d, 1.0)
        U, piv, r, info = lapack.dpstrf(Gw / np.outer(d, d), lower=0, tol=-1.0)  # tol: k eps max pivot
        if info < 0:
            raise ValueError(f"LAPACK dpstrf failed (info {info}) on joint {j + 1}'s Gram matrix")
        piv = piv - 1  # position i of the factor holds column piv[i]
        F = np.zeros((k1, k1))
        F[:r, piv] = np.triu(U[:r])  # rows past the rank r hold the unfactored rest
        z = solve_triangular(U[:r, :r], (b / d)[piv[:r]], trans="T") if r else np.zeros(0)
        rho2[j] = max(t - z @ z if rss is None else rss[j], 0.0)
        F[:r, k], F[r, k] = z, np.sqrt(rho2[j])
        R[j] = np.linalg.qr(F, mode="r") * np.append(d, 1.0)
    return R, rho2


def base_from_regressor(
    W: ArrayLike, names: Sequence[str] | None = None, tol: float = TOL, inertial: int = 0
) -> BaseParameters:
    """Base parameters of a stacked regressor: the canonical independent columns.

    Args:
        W: stacked regressor, shape (M, p) (or (N, n, p), stacked to (N*n, p)); it should
            be evaluated on enough generic states that only structural dependencies
            remain (see ``base_parameters``). Its column order is the order of preference
            (columns below ``NEGLIGIBLE`` times the largest norm come last).
        names: p standard parameter names; default ``"theta0" ...``.
        tol: column j is kept when its distance to the span of the kept columns visited before it
            exceeds ``tol`` times its norm (so the decision does not depend on parameter
            units). Columns whose norm is below tol * the largest column norm count as zero
            (unidentifiable). Dimensionless; the default 1e-8 splits float64 rounding
            (~1e-15) from genuine near-dependencies.
        inertial: the number of leading columns that are rigid-body inertial parameters (10
            per link; 0: none). Among them a column below ``UNSEEN`` times their largest norm
            counts as zero too: one that only a rounded angle makes independent.

    Returns:
        ``BaseParameters``. Warns (``UserWarning``) when the gap between kept and dropped
        distances is below 1e3, i.e. when the rank is not clearly defined.
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim == 3:
        W = W.reshape(-1, W.shape[-1])
    if W.ndim != 2:
        raise ValueError(f"W must have shape (M, p) or (N, n, p), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("W contains NaN or inf; check the states it was evaluated on")
    M, p = W.shape
    names = [f"theta{j}" for j in range(p)] if names is None else [str(s) for s in names]
    if len(names) != p:
        raise ValueError(f"got {len(names)} names for {p} columns of W")
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1), got {tol}")

    norms = np.linalg.norm(W, axis=0)
    # A column at rounding level (e.g. from cos(pi/2) = 6e-17 in a DH chain) is zero:
    # normalising it would turn rounding noise into an "independent" column.
    zero = norms <= tol * norms.max()
    # Each column's distance tolerance: UNSEEN among the rigid-body inertial ones (see UNSEEN).
    limit = np.where(np.arange(p) < inertial, max(tol, UNSEEN), tol)
    if inertial:
        zero[:inertial] |= norms[:inertial] < UNSEEN * norms[:inertial].max()
    d = np.where(zero, 1.0, norms)
    # W = Q0 R0 preserves every column inner product: the column distances and the least
    # squares for K below are the same on the small R0 (p, p), without a Q of W's size.
    Wn = r_factor(np.where(zero, 0.0, W / d))
    Q = np.zeros((p, min(M, p)))  # orthonormal basis of the kept columns (in R0's row space)
    r = np.zeros(p)
    kept: list[int] = []
    small = norms < NEGLIGIBLE * norms.max()
    order = [j for j in np.lexsort((np.arange(p), small)) if not zero[j]]
    if len(order) == p <= Wn.shape[0]:
        # Where every column is independent, the Gram-Schmidt below is the QR of the columns in
        # its visiting order: one LAPACK call instead of p Python steps (full rank is the common case).
        diag = np.abs(np.diag(np.linalg.qr(Wn[:, order], mode="r")))
        if np.all(diag > limit[order]):
            r[order], kept = diag, list(order)
            order = []
    for j in order:
        b = len(kept)
        v = Wn[:, j].copy()
        for _ in range(2):  # classical Gram-Schmidt, twice: orthogonal to rounding
            v -= Q[:, :b] @ (Q[:, :b].T @ v)
        r[j] = np.linalg.norm(v)
        if r[j] > limit[j] and b < Q.shape[1]:
            Q[:, b] = v / r[j]
            kept.append(j)
    ind = np.sort(np.array(kept, dtype=int))
    dep = np.setdiff1d(np.arange(p), ind)
    rank = ind.size
    dropped = r[dep].max() if dep.size else 0.0
    gap = float(r[ind].min() / dropped) if rank and dropped > 0 else float("inf")
    if rank < p and gap < GAP_WARN:
        warnings.warn(
            f"ambiguous rank: kept and dependent columns are only {gap:.3g} apart "
            f"(rank {rank} of {p} at tol={tol:g}); use more or more varied samples, or "
            "inspect .r_diag and choose tol",
            stacklevel=2,
        )

    # W_dep = W_ind K: least squares on the kept columns (exact up to rounding).
    if rank:
        Ks = np.linalg.lstsq(Wn[:, ind], Wn[:, dep], rcond=None)[0]
    else:
        Ks = np.zeros((0, dep.size))
    K = Ks / d[ind][:, None] * d[dep][None, :]
    K = np.where(np.abs(K) < COEF_TOL, 0.0, K)

    dep_names = [names[j] for j in dep]
    base_names = tuple(_format_combination(names[i], K[k], dep_names) for k, i in enumerate(ind))
    return BaseParameters(
        indices=np.asarray(ind, dtype=np.int32),  # numpy: found in numpy, used as jit inputs
        dependent=np.asarray(dep, dtype=np.int32),
        K=np.asarray(K, dtype=float),
        r_diag=np.asarray(r, dtype=float),
        gap=gap,
        rank=rank,
        names=base_names,
        standard_names=tuple(names),
    )


def _position_range(model: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (n,) of the sampled positions: the model's limits; [-pi, pi] where it has none
    (infinite) and, with a warning naming the joints, where they give no range (``lower >=
    upper``: placeholder limits such as a URDF's ``lower = upper = 0``). The dependencies
    between columns are structural: any generic spread of states reveals them, while a
    coordinate held at one value makes dependent columns that are not (a base count short)."""
    lo = np.array(np.broadcast_to(np.asarray(getattr(model, "q_min", -np.pi), dtype=float), (n,)))
    hi = np.array(np.broadcast_to(np.asarray(getattr(model, "q_max", np.pi), dtype=float), (n,)))
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    flat = hi <= lo
    if flat.any():
        names = getattr(model, "coordinate_names", None)
        bad = [
            f"joint {k + 1}" + (f" ({names[k]})" if names else "") + f" [{lo[k]:g}, {hi[k]:g}]"
            for k in np.flatnonzero(flat)
        ]
        warnings.warn(
            f"position limits without a range (placeholders?) for {', '.join(bad)}: the base parameters "
            "are found on [-pi, pi] there (rad or m); give the real limits in the model (excitation and "
            "the range checks use them)",
            stacklevel=3,
        )
        lo, hi = np.where(flat, -np.pi, lo), np.where(flat, np.pi, hi)
    return lo, hi


@cache.memo  # a QR of SAMPLES n x p regressor rows per model: kept on disk by the model's value
def base_parameters(
    model: NamedTorqueModel, n_samples: int | None = None, tol: float = TOL, key: jax.Array | int | None = None
) -> BaseParameters:
    """Base parameters of a model (Gautier 1990) from its regressor on a fixed set of states.

    Args:
        model: any model of the jaxid interface (``torque``, ``parameter_vector``,
            ``parameter_names``; ``n`` joints); the regressor is its Jacobian in theta.
        n_samples: number of random states N; default ``max(SAMPLES, 4 * ceil(p / n))``
            (SAMPLES = 1024, the regressor shape shared with the workflow), so that W (N*n
            rows) has many more rows than parameters.
        tol: relative rank tolerance on the R diagonal, see ``base_from_regressor``.
        key: seed of the states: a ``jax.random`` key (its key data seeds numpy's
            generator) or an int; default 0. The set and names do not depend on it (nor on
            n_samples, once enough): see the module docstring.

    States: q uniform in ``[model.q_min, model.q_max]`` where the model defines finite
    limits with a range, else in [-pi, pi] rad (with a warning naming the joints whose limits
    give no range, e.g. placeholders ``lower = upper = 0``: held at one value, a joint would
    make columns look dependent that are not); qd, qdd standard normal (rad/s, rad/s^2).

    Returns:
        ``BaseParameters`` with names built from ``model.parameter_names()``.
    """
    names = list(model.parameter_names())
    n, p = int(model.n), len(names)
    if n_samples is None:
        n_samples = max(SAMPLES, 4 * -(-p // n))
    if n_samples * n < p:
        raise ValueError(
            f"n_samples={n_samples} gives {n_samples * n} regressor rows for {p} parameters; "
            f"use n_samples >= {-(-p // n)} (several times more is safer)"
        )
    rng = states_rng(key)
    lo, hi = _position_range(model, n)
    q = rng.uniform(lo, hi, (n_samples, n))
    qd, qdd = rng.normal(size=(2, n_samples, n))
    Y = regressor(model, q, qd, qdd)
    inertial = getattr(model, "inertial", None)
    return base_from_regressor(
        np.asarray(Y).reshape(-1, p), names, tol=tol, inertial=0 if inertial is None else int(np.size(inertial))
    )


def lift(base: BaseParameters, theta_b: ArrayLike, nominal: ArrayLike) -> AnyArray:
    """Standard parameters (p,) whose base parameters are theta_b (b,), with the
    non-identifiable (dependent) ones at their nominal values: how an unconstrained base
    estimate is turned into bodies, e.g. to count its physically invalid links. numpy on the
    host for concrete arguments, jax for traced ones."""
    if is_traced(theta_b, nominal, base.K):
        return _lift(theta_b, nominal, base.indices, base.dependent, base.K)
    theta = np.array(nominal, dtype=float)
    dep = np.asarray(base.dependent)
    theta[np.asarray(base.indices)] = np.asarray(theta_b, dtype=float) - np.asarray(base.K) @ theta[dep]
    return theta


# The traced paths of to_base, reduce and lift (concrete arguments are computed with numpy), jitted
# with the column indices as array arguments.
@jax.jit
def _to_base(theta, indices, dependent, K):
    return theta[..., indices] + theta[..., dependent] @ K.T


@jax.jit
def _take(W, indices):
    return W[..., indices]


@jax.jit
def _lift(theta_b, nominal, indices, dependent, K):
    theta_b, nominal = jnp.asarray(theta_b, dtype=float), jnp.asarray(nominal, dtype=float)
    return nominal.at[indices].set(theta_b - K @ nominal[dependent])
