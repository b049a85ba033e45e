"""Base (identifiable) parameters by QR decomposition with column pivoting.

Only linear combinations of the standard parameters show in the torques of a robot: a
column of the stacked regressor ``W`` that is a combination of the others cannot be
separated from them.  Following Gautier (1990), "Numerical calculation of the base
inertial parameters of robots", Proc. IEEE ICRA, the rank of ``W`` (stacked on random
states) is read from the diagonal of ``R`` in ``W P = Q R``; the first ``rank`` pivoted
columns are independent and every other column is a combination of them,
``W_dep = W_indep @ K``, so that

    W @ theta = W_indep @ (theta_indep + K @ theta_dep) = W_base @ theta_base.

This is a one-off structural computation, done with numpy/scipy at the edge; the
resulting ``BaseParameters`` maps (``to_base``, ``reduce``) are pure ``jnp`` and jit.
"""
from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

#: Relative tolerance on |R_ii| / max|R_ii| (columns normalised first) below which a
#: column counts as dependent.  Structural dependencies sit at ~1e-15 in float64;
#: genuinely independent columns of a regressor on random states sit well above 1e-8.
TOL = 1e-8
#: Ratio of the last kept |R_ii| to the first dropped one below which the rank is
#: called ambiguous and a warning is raised.
GAP_WARN = 1e3
#: Coefficients of K with a smaller magnitude are rounding noise and are dropped.
COEF_TOL = 1e-10


class BaseParameters(eqx.Module):
    """Base parameters of a regressor: ``theta_base = theta[indices] + K @ theta[dependent]``.

    Attributes:
        indices: independent columns of ``W``, sorted, shape (b,), int.
        dependent: the other columns, sorted, shape (p - b,), int.
        K: shape (b, p - b); ``W[:, dependent] == W[:, indices] @ K``.
        r_diag: |R_ii| of the pivoted QR of the column-normalised ``W``, divided by the
            largest, in pivot order, shape (p,).
        gap: ``r_diag[rank - 1] / r_diag[rank]`` (last kept over first dropped);
            ``inf`` when ``W`` has full column rank.
        rank: number of base parameters b.
        names: readable base parameter names, e.g. ``"Izz1 + Iyy2 + 0.180625*m2"``.
        standard_names: names of the p standard parameters (the columns of ``W``).
    """

    indices: jax.Array
    dependent: jax.Array
    K: jax.Array
    r_diag: jax.Array
    gap: float = eqx.field(static=True)
    rank: int = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    standard_names: tuple[str, ...] = eqx.field(static=True)

    def to_base(self, theta: jax.Array) -> jax.Array:
        """Base parameters from standard ones: theta (..., p) -> (..., b)."""
        theta = jnp.asarray(theta)
        return theta[..., self.indices] + theta[..., self.dependent] @ self.K.T

    def reduce(self, W: jax.Array) -> jax.Array:
        """Reduced regressor ``W[..., indices]``: (..., p) -> (..., b)."""
        return jnp.asarray(W)[..., self.indices]


def _format_combination(name: str, coefs: np.ndarray, dep_names: list[str]) -> str:
    terms = [name]
    for c, dn in zip(coefs, dep_names):
        if abs(c) < COEF_TOL:
            continue
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        terms.append(f"{sign} {dn}" if abs(mag - 1.0) < COEF_TOL else f"{sign} {mag:.6g}*{dn}")
    return " ".join(terms)


#: Row block of the tall-skinny QR (see ``r_factor``).
QR_BLOCK = 1024


def r_factor(X, xp=np):
    """Upper-triangular R (k, k) with X^T X = R^T R, for X (M, k), by tall-skinny QR
    (Demmel, Grigori, Hoemmen and Langou 2012): the R factors of row blocks are stacked and
    factored again; zero rows pad M to whole blocks (they leave R unchanged). LAPACK's QR
    (and SVD) of a tall, narrow regressor is BLAS-2 bound; the batched block QRs are several
    times faster, and a least-squares problem on X reduces exactly to one on R.

    xp: ``numpy`` (at the edges) or ``jax.numpy`` (inside jitted estimators): one algorithm
    for both, with static shapes."""
    M, k = X.shape
    if M > 2 * QR_BLOCK:
        nb = -(-M // QR_BLOCK)
        X = xp.pad(X, ((0, nb * QR_BLOCK - M), (0, 0))).reshape(nb, QR_BLOCK, k)
        X = xp.linalg.qr(X, mode="r").reshape(nb * k, k)
    if X.shape[0] < k:
        X = xp.pad(X, ((0, k - X.shape[0]), (0, 0)))
    return xp.linalg.qr(X, mode="r")[:k]


def base_from_regressor(W, names=None, tol: float = TOL) -> BaseParameters:
    """Base parameters of a stacked regressor by pivoted QR (Gautier 1990).

    Args:
        W: stacked regressor, shape (M, p) (or (N, n, p), stacked to (N*n, p)); it should
            be evaluated on enough generic states that only structural dependencies
            remain (see ``base_parameters``).
        names: p standard parameter names; default ``"theta0" ...``.
        tol: column j is independent when ``|R_jj| > tol * max|R_ii|``, where ``R`` is the
            pivoted QR factor of ``W`` with every column divided by its norm (so the
            decision does not depend on parameter units). Columns whose norm is below
            tol * the largest column norm count as zero (unidentifiable). Dimensionless;
            the default 1e-8 splits float64 rounding (~1e-15) from genuine
            near-dependencies.

    Returns:
        ``BaseParameters``. Warns (``UserWarning``) when the R-diagonal gap at the rank
        cut is below 1e3, i.e. when the rank is not clearly defined.
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
    d = np.where(zero, 1.0, norms)
    # W = Q0 R0 preserves every column inner product, so the pivoted QR of the small R0
    # makes the same pivot choices and R as that of W itself, without forming Q.
    R, perm = scipy.linalg.qr(r_factor(np.where(zero, 0.0, W / d)), mode="r", pivoting=True)
    r = np.abs(np.diag(R))
    r = np.concatenate([r, np.zeros(p - r.size)])  # M < p: the missing pivots are zero
    r = r / r[0] if r[0] > 0 else r
    rank = int(np.sum(r > tol))
    # An exactly zero first dropped pivot means a clean cut: the gap is infinite.
    gap = float(r[rank - 1] / r[rank]) if 0 < rank < p and r[rank] > 0 else float("inf")
    if rank < p and gap < GAP_WARN:
        warnings.warn(
            f"ambiguous rank: the R diagonal drops only by {gap:.3g} at the cut "
            f"(rank {rank} of {p} at tol={tol:g}); use more or more varied samples, or "
            "inspect .r_diag and choose tol",
            stacklevel=2,
        )

    # Scaled K solves R1 K = R2; unscale so it maps the physical parameters.
    R1, R2 = R[:rank, :rank], R[:rank, rank:p]
    Ks = scipy.linalg.solve_triangular(R1, R2) if rank else np.zeros((0, p - rank))
    ind, dep = perm[:rank], perm[rank:]
    K = Ks / d[ind][:, None] * d[dep][None, :]
    oi, od = np.argsort(ind), np.argsort(dep)
    ind, dep, K = ind[oi], dep[od], K[oi][:, od]
    K = np.where(np.abs(K) < COEF_TOL, 0.0, K)

    dep_names = [names[j] for j in dep]
    base_names = tuple(_format_combination(names[i], K[k], dep_names) for k, i in enumerate(ind))
    return BaseParameters(
        indices=jnp.asarray(ind, dtype=jnp.int32),
        dependent=jnp.asarray(dep, dtype=jnp.int32),
        K=jnp.asarray(K),
        r_diag=jnp.asarray(r),
        gap=gap,
        rank=rank,
        names=base_names,
        standard_names=tuple(names),
    )


def _position_range(model, n: int):
    # Models without (finite) position limits are sampled on [-pi, pi]: any generic
    # state reveals the structural dependencies.
    lo = np.broadcast_to(np.asarray(getattr(model, "q_min", -np.pi), dtype=float), (n,))
    hi = np.broadcast_to(np.asarray(getattr(model, "q_max", np.pi), dtype=float), (n,))
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    return lo, hi


def base_parameters(model, n_samples: int | None = None, tol: float = TOL, key=None) -> BaseParameters:
    """Numeric base parameters of a model (Gautier 1990) from its regressor on random states.

    Args:
        model: any model of the jaxid interface (``torque``, ``parameter_vector``,
            ``parameter_names``; ``n`` joints); the regressor is its Jacobian in theta.
        n_samples: number of random states N; default ``max(200, 4 * ceil(p / n))`` so
            that W (N*n rows) has several times more rows than parameters.
        tol: relative rank tolerance on the R diagonal, see ``base_from_regressor``.
        key: ``jax.random`` key; default ``PRNGKey(0)`` (reproducible).

    States: q uniform in ``[model.q_min, model.q_max]`` where the model defines finite
    limits, else in [-pi, pi] rad; qd, qdd standard normal (rad/s, rad/s^2).

    Returns:
        ``BaseParameters`` with names built from ``model.parameter_names()``.
    """
    from jaxid.identification.regressor import regressor  # the regressor module imports models

    names = list(model.parameter_names())
    n, p = int(model.n), len(names)
    if n_samples is None:
        n_samples = max(200, 4 * -(-p // n))
    if n_samples * n < p:
        raise ValueError(
            f"n_samples={n_samples} gives {n_samples * n} regressor rows for {p} parameters; "
            f"use n_samples >= {-(-p // n)} (several times more is safer)"
        )
    key = jax.random.PRNGKey(0) if key is None else key
    kq, kd, ka = jax.random.split(key, 3)
    lo, hi = _position_range(model, n)
    q = jax.random.uniform(kq, (n_samples, n), minval=lo, maxval=hi)
    qd = jax.random.normal(kd, (n_samples, n))
    qdd = jax.random.normal(ka, (n_samples, n))
    Y = regressor(model, q, qd, qdd)
    return base_from_regressor(np.asarray(Y).reshape(-1, p), names, tol=tol)


def lift(base: BaseParameters, theta_b, nominal):
    """Standard parameters (p,) whose base parameters are theta_b (b,), with the
    non-identifiable (dependent) ones at their nominal values: how an unconstrained base
    estimate is turned into bodies, e.g. to count its physically invalid links."""
    theta_b, nominal = jnp.asarray(theta_b, dtype=float), jnp.asarray(nominal, dtype=float)
    return nominal.at[base.indices].set(theta_b - base.K @ nominal[base.dependent])
