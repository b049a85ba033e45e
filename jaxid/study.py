"""Batched Monte-Carlo identification studies, optionally sharded over devices.

The protocol is BIRDy's (Leboutet, Roux, Janot, Guadarrama-Olvera and Cheng, "Inertial
parameter identification in robotics: a survey", Applied Sciences 11(9), 2021): one
robot, one excitation, many noisy experiments. Each run draws torque noise
``tau = W @ theta + sigma_j * e``, ``e ~ N(0, 1)`` independently per sample and joint,
identifies the parameters, and the study compares the spread of the estimates with the
Cramér-Rao bound ``sqrt(diag((W^T Sigma^-1 W)^-1))`` (Kay, "Fundamentals of Statistical
Signal Processing: Estimation Theory", 1993, ch. 3): an efficient unbiased estimator has
spread / bound = 1 (weighted least squares with the true weights is efficient here;
OLS is not when the joints' noise levels differ).

"ols" and Gautier's two-step "wls" (``identify``'s; Gautier and Poignet 2001) factorise W
once for all runs (``_factored_program``): the R runs' noise is projected in one matmul on a
few fixed vectors per joint, and each run's estimate is then a b x b solve (OLS: none), equal
to ``identify``'s run by run to rounding (~1e-12 relative); they run on one device of this
process (every process of a ``jax.distributed`` run computes them all), the runs' order and
noise as below. Each chunk draws its runs' noise joint-major (``noise``), about 4 MB of it, so
that jax's threefry (a loop of rounds over the whole block on XLA:CPU) works in cache and the
projection reads the draws without a transpose. On the UR5 (6000 x 48, 1000 runs, 2 idle cores,
every contender in its own process: ``benchmarks/monte_carlo.py --compare``) this is 1.31x (wls)
and 1.17x (ols) numpy solving all runs against one factorisation, where it was 0.29-0.30x.

``run_study`` runs on one BLAS thread (``hostdevices.one_blas_thread``): XLA:CPU's LAPACK calls
(the factorisation of W) run on scipy's OpenBLAS, whose other threads then spin for a while
and took a core from XLA's pool: the factored program after one QR ran at half speed (1000 OLS
runs 130 -> 83 ms), and ``_check``'s three numpy QRs took 83 ms each, not 2.5 ms.

Other estimators run one jitted call: the per-run keys are mapped (``jax.lax.map`` in chunks of
``batch_size`` vmapped runs, which bounds memory) and, with several devices, split over a
1-D mesh by ``jax.shard_map`` so that each device works on its own block of runs. A run's
noise depends only on its key, so sharded and unsharded studies give the same numbers.
The mesh may span several processes (``jax.distributed.initialize()`` first, the same
call in every process): inputs are built shard by shard from each process's identical
host values and the estimates are gathered back to every process.

jaxlib 0.10's batched LAPACK kernels (QR, SVD, Cholesky of a batch of matrices) split the
batch over XLA:CPU's thread pool and block a pool thread until the parts finish: as many such
calls at once as the pool has threads (one per core) deadlock the process. Several host devices
running the vmapped runs at once did (two devices, 1000 runs, 2 cores: ``run_study`` never
returned; IRLS on a 6000 x 24 W, even 20 runs). The factored programs make one chain of such
calls, each waiting for the last, and finish before the next program starts; the other
estimators run on one CPU device per process (``_one_cpu_device_per_process``): a process's
host devices share its cores, which XLA:CPU uses for one device's program already.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxid import hostdevices, memory
from jaxid.arrays import plain
from jaxid.identification.base import TOL, r_factor
from jaxid.identification.estimators import METHODS, _rank_error, _variance_floor, identify

__all__ = ["Study", "run_study", "cramer_rao", "noise"]


class Study(eqx.Module):
    """Result of [`run_study`][jaxid.study.run_study] for one estimator; R runs, b parameters.

    Attributes:
        estimates: the R estimates, shape (R, b).
        truth: the true parameters, shape (b,).
        crb: Cramér-Rao standard deviations, shape (b,).
        bias: mean(estimates) - truth, shape (b,).
        spread: sample standard deviation of the estimates (ddof=1), shape (b,).
        ratio: spread / crb, shape (b,); about 1 for an efficient estimator, with a
            sampling error of about 1 / sqrt(2 (R - 1)).
        bias_z: bias / (crb / sqrt(R)), shape (b,): the bias in units of its standard
            error; about N(0, 1) for an unbiased estimator.
        names: parameter names; estimator: its name; devices: where it ran.
    """

    estimates: jax.Array
    truth: jax.Array
    crb: jax.Array
    bias: jax.Array
    spread: jax.Array
    ratio: jax.Array
    bias_z: jax.Array
    names: tuple = eqx.field(static=True)
    estimator: str = eqx.field(static=True)
    devices: tuple = eqx.field(static=True)


def cramer_rao(W, sigma):
    """Cramér-Rao standard deviations (b,) of theta in ``tau = W theta + noise`` with
    independent Gaussian noise of standard deviation sigma (n,) per joint; W: (N*n, b)
    sample-major. Same units as theta."""
    # WLS with the noise covariance known has exactly this covariance (Gauss-Markov):
    # sqrt(diag((W^T Sigma^-1 W)^-1)), from the SVD of the R of the whitened rows, columns scaled
    # (identify's "wls" with cov = sigma**2, without its checks and row passes).
    return _crb(jnp.asarray(W, dtype=float), jnp.asarray(sigma, dtype=float))


@jax.jit
def _crb(W, sigma):
    """[`cramer_rao`][jaxid.study.cramer_rao] of W (N*n, b) and sigma (n,), arrays."""
    A = (W.reshape(-1, sigma.shape[0], W.shape[1]) / sigma[:, None]).reshape(W.shape)
    d = jnp.linalg.norm(A, axis=0)
    _, s, Vt = jnp.linalg.svd(r_factor(A / d, jnp))
    return jnp.sqrt(jnp.sum((Vt / s[:, None]) ** 2, axis=0)) / d


def _estimator(est, n):
    if isinstance(est, str):
        if est not in METHODS:
            raise ValueError(f"unknown estimator {est!r}: give an identify method {METHODS} or a callable")
        return _method(est, n)
    if not callable(est):
        raise ValueError(f"an estimator is an identify method name or a callable f(W, tau, key) -> theta, got {est!r}")
    return est


def _runs(n_runs) -> int:
    """n_runs as an int: a whole number >= 2 (an integral float such as 1e3 is taken; 2.7 is not
    rounded down, nor True taken for 1)."""
    ok = isinstance(n_runs, (int, np.integer)) and not isinstance(n_runs, bool)
    if not ok and isinstance(n_runs, (float, np.floating)) and np.isfinite(n_runs) and float(n_runs).is_integer():
        ok = True
    if not ok:
        raise ValueError(f"n_runs must be a whole number of runs (>= 2), got {plain(n_runs)!r}")
    if int(n_runs) < 2:
        raise ValueError(f"n_runs must be >= 2 to estimate a spread, got {n_runs}")
    return int(n_runs)


def _check(W, theta, sigma, n_runs, names, n_joints=None):
    W = np.asarray(W, dtype=float)
    if W.ndim == 3:  # (N, n, b): the joint count is W's
        if n_joints is not None and int(n_joints) != W.shape[1]:
            raise ValueError(f"n_joints={n_joints} but W has shape {W.shape} ({W.shape[1]} joints)")
        n_joints, W = W.shape[1], W.reshape(-1, W.shape[-1])
    theta, sigma = np.asarray(theta, dtype=float), np.asarray(sigma, dtype=float)
    if W.ndim != 2:
        raise ValueError(f"W must be the stacked regressor (N*n, b) or (N, n, b), got shape {W.shape}")
    M, b = W.shape
    if theta.shape != (b,):
        raise ValueError(f"theta must have shape ({b},) to match W {W.shape}, got {theta.shape}")
    if sigma.ndim != 1 or sigma.size < 1 or M % sigma.size:
        raise ValueError(
            f"sigma must hold one noise std per joint (n,), with W rows a multiple of n; "
            f"got sigma {sigma.shape} for W {W.shape}"
        )
    if n_joints is not None and sigma.size != int(n_joints):
        raise ValueError(
            f"sigma holds {sigma.size} noise std for a {int(n_joints)}-joint robot: give one per "
            f"joint, shape ({int(n_joints)},)"
        )
    for label, x in (("W", W), ("theta", theta), ("sigma", sigma)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{label} contains NaN or inf")
    if np.any(sigma <= 0):
        raise ValueError("sigma must be > 0 for every joint (the Cramér-Rao bound needs noise)")
    if M <= b:
        raise ValueError(f"W has {M} rows for {b} parameters: use more samples")
    if len(names) != b:
        raise ValueError(f"got {len(names)} names for {b} parameters")
    rank_error = _rank_error(W, list(names))
    if rank_error:
        raise ValueError(rank_error)
    _runs(n_runs)


@hostdevices.one_blas_thread()
def run_study(
    W,
    theta,
    sigma,
    n_runs: int,
    *,
    estimators="wls",
    key=None,
    names=None,
    devices=None,
    batch_size: int | None = None,
    n_joints: int | None = None,
):
    """Monte-Carlo study of estimators on ``tau = W @ theta + noise`` (module docstring).

    Args:
        W: stacked regressor of the (base) parameters, (N*n, b), full column rank; or (N, n, b),
            which states the joint count n (as ``n_joints`` does).
        theta: true parameters (b,); the noise-free torques are ``W @ theta``.
        sigma: torque noise standard deviation per joint (n,), N m.
        n_runs: number of noisy experiments R, a whole number >= 2 (2.7 is refused, not rounded).
        estimators: an ``identify`` method name ("wls", "ols", ...), a callable
            ``f(W, tau, key) -> theta_hat (b,)`` (pure JAX; key is the run's own key, e.g.
            for a random initial point), or a dict name -> either, all run on the same
            noise draws.
        key: ``jax.random`` key (default ``PRNGKey(0)``); run r's noise is
            ``noise(split(key, R)[r], N, sigma)`` (and a callable estimator gets that key).
        names: b parameter names for the tables (default ``theta0 ...``).
        devices: devices to split the runs over (default ``jax.devices()``, all devices
            of all processes), of which at most one CPU device per process (the first given;
            module docstring); a 1-D mesh of them shards the runs, padded to equal chunks
            per device with repeated keys whose runs are dropped. "ols" and "wls" run on the
            first of them in this process (module docstring). ``Study.devices`` names those used.
        batch_size: runs vmapped together on one device (default: as many as fit in
            about 256 MB of working arrays); for "ols" and "wls", runs solved at once.
        n_joints: the robot's joint count n, checked against ``sigma``; required with a stacked
            (N*n, b) W and more than one joint (such a W does not say n, so a sigma of the wrong
            length, 5 std for 6 joints, could not be caught), not needed with a 3-D W.

    Returns:
        A [`Study`][jaxid.study.Study], or a dict name -> Study when ``estimators`` is a dict.
    """
    b = np.shape(W)[-1] if np.ndim(W) else 0  # a wrong W is reported by _check
    names = tuple(names) if names is not None else tuple(f"theta{j}" for j in range(b))
    _check(W, theta, sigma, n_runs, names, n_joints)
    if n_joints is None and np.ndim(W) == 2 and np.size(sigma) > 1:
        # A stacked W does not say n: a sigma of the wrong length (5 std for 6 joints) whose length
        # divides W's rows would silently put each std on the wrong joint.
        raise ValueError(
            f"run_study: a stacked W {np.shape(W)} does not state the joint count, and sigma's length "
            f"({np.size(sigma)}) cannot be checked against it: pass n_joints=n (or W as (N, n, b))"
        )
    if np.ndim(W) == 3:
        W = np.reshape(W, (-1, np.shape(W)[-1]))
    W, theta, sigma = (jnp.asarray(x, dtype=float) for x in (W, theta, sigma))
    M, b = W.shape
    n = sigma.shape[0]
    single = not isinstance(estimators, dict)
    if single:
        estimators = {
            estimators if isinstance(estimators, str) else getattr(estimators, "__name__", "estimator"): estimators
        }
    fns = {k: _estimator(v, n) for k, v in estimators.items()}
    hostdevices.configure()  # a CPU device count set through jax.config after import jaxid
    devices = tuple(jax.devices() if devices is None else devices)
    if not devices:
        raise ValueError("devices is empty")
    devices = _one_cpu_device_per_process(devices)
    n_runs = _runs(n_runs)
    chunk = batch_size  # of the factored runs (_factored)
    if batch_size is None:  # ~8 float64 copies of an (M, b + 1) system per vmapped run
        batch_size = max(1, int(2**28 // (8 * 8 * M * (b + 1))))
    batch_size = max(1, int(batch_size))
    n_local = sum(d.process_index == jax.process_index() for d in devices)
    memory.check_study(M, b, n_runs, min(batch_size, -(-n_runs // len(devices))), len(fns), max(n_local, 1))

    keys = jax.random.split(jax.random.PRNGKey(0) if key is None else key, n_runs)
    # ols and two-step wls: one factorisation of W for all runs, on one local device (the runs
    # are then a few matmuls; nothing to shard). Other estimators: vmapped runs, sharded.
    local = [d for d in devices if d.process_index == jax.process_index()]
    factored = {k: v for k, v in estimators.items() if isinstance(v, str) and v in _FACTORED and local}
    estimates, ran_on = {}, {}
    if factored:
        est = _factored(tuple(factored.values()), W, theta, sigma, keys, local[0], chunk)
        estimates.update({k: est[v] for k, v in factored.items()})
        ran_on.update(dict.fromkeys(factored, (str(local[0]),)))
    rest = {k: f for k, f in fns.items() if k not in factored}
    if rest:
        estimates.update(_batched(rest, W, theta, sigma, keys, devices, batch_size))
        ran_on.update(dict.fromkeys(rest, tuple(str(d) for d in devices)))
    crb = cramer_rao(W, sigma)
    out = {}
    for k in fns:
        est = estimates[k]
        mean = jnp.mean(est, axis=0)
        spread = jnp.std(est, axis=0, ddof=1)
        out[k] = Study(
            estimates=est,
            truth=theta,
            crb=crb,
            bias=mean - theta,
            spread=spread,
            ratio=spread / crb,
            bias_z=(mean - theta) / (crb / np.sqrt(n_runs)),
            names=names,
            estimator=k,
            devices=ran_on[k],
        )
    return out[next(iter(out))] if single else out


def noise(key, N: int, sigma):
    """One run's torque noise, shape (N*n,) sample-major, N m: ``sigma_j * e`` with
    ``e ~ N(0, 1)`` independent per sample and joint, drawn joint by joint (``normal(key, (n,
    N))``, transposed), so that a study's block of runs comes out joint-major, as its projections
    read it. key: the run's ``jax.random`` key (``split(key, R)[r]`` in ``run_study``); N: samples;
    sigma: noise std per joint (n,), N m."""
    sigma = jnp.asarray(sigma, dtype=float)
    return (sigma[:, None] * jax.random.normal(key, (sigma.shape[0], N))).T.reshape(-1)


def _one_cpu_device_per_process(devices: tuple) -> tuple:
    """``devices`` with at most one CPU device per process (the first given); other devices kept.

    Several host CPU devices of one process share its cores (XLA:CPU already runs one device's
    program on all of them), and jaxlib 0.10's batched LAPACK kernels deadlock when as many run at
    once as the pool has threads: the vmapped IRLS of a 6000 x 24 W on two host devices never
    returned, even for 20 runs, where one device ran 1000 runs in 34 s (2 cores). Processes of a
    ``jax.distributed`` run still split the runs, one CPU device each."""
    seen, out = set(), []
    for d in devices:
        if d.platform == "cpu":
            if d.process_index in seen:
                continue
            seen.add(d.process_index)
        out.append(d)
    return tuple(out)


@functools.lru_cache(maxsize=32)
def _method(method: str, n: int):
    """The estimator of an ``identify`` method, one object per (method, n) so that the
    jitted study is reused across calls."""
    return lambda W, tau, key: identify(W, tau, method=method, n_joints=n).theta


@functools.lru_cache(maxsize=32)
def _program(fns: tuple, n: int, devices: tuple):
    """Jitted ``(W, theta, sigma, keys (C, B, 2)) -> {name: (C, B, b)}``: C chunks of B
    vmapped runs each, the chunks split over ``devices``."""

    def block(W, theta, sigma, ks):
        tau0 = W @ theta

        def one(key):
            tau = tau0 + noise(key, W.shape[0] // n, sigma)
            return {k: f(W, tau, key) for k, f in fns}

        return jax.lax.map(jax.vmap(one), ks)

    if len(devices) == 1:
        return jax.jit(block)
    mesh = Mesh(np.array(devices), ("runs",))
    return jax.jit(jax.shard_map(block, mesh=mesh, in_specs=(P(), P(), P(), P("runs")), out_specs=P("runs")))


def _batched(fns: dict, W, theta, sigma, keys, devices, batch_size):
    """Estimates of every estimator for every key, {name: (R, b)}."""
    program = _program(tuple(fns.items()), sigma.shape[0], devices)
    R, D = keys.shape[0], len(devices)
    # Equal chunks on every device (one compiled loop body): R is padded to D * C * B
    # with repeats of the first keys, whose runs are computed and dropped.
    per_device = -(-R // D)
    chunks = -(-per_device // batch_size)
    B = -(-per_device // chunks)
    total = D * chunks * B
    keys = jnp.concatenate([keys, keys[: total - R]]) if total > R else keys
    keys = keys.reshape(D * chunks, B, *keys.shape[1:])
    if D == 1:
        out = program(*jax.device_put((W, theta, sigma, keys), devices[0]))
    else:
        mesh = Mesh(np.array(devices), ("runs",))

        # Built shard by shard from the same host values, so that a mesh spanning several
        # processes (jax.distributed) gets its inputs without a transfer between hosts.
        def put(x, spec):
            x = np.asarray(x)
            return jax.make_array_from_callback(x.shape, NamedSharding(mesh, spec), lambda idx: x[idx])

        out = program(put(W, P()), put(theta, P()), put(sigma, P()), put(keys, P("runs")))

    # Gathered to the host: the statistics are cheap, and reductions over a sharded
    # array would need cross-device collectives.
    def gather(x):
        x = np.asarray(x) if x.is_fully_addressable else multihost_utils.process_allgather(x, tiled=True)
        return jnp.asarray(x.reshape(total, *x.shape[2:])[:R])

    return jax.tree.map(gather, out)


#: ``identify`` methods that ``run_study`` solves for all runs against one factorisation of W.
_FACTORED = ("ols", "wls")


@functools.lru_cache(maxsize=32)
def _factored_program(methods: tuple, n: int):
    """Jitted ``(W, theta, sigma, keys (C, B, 2)) -> {method: (C, B, b)}`` for "ols" and
    two-step "wls": ``identify``'s estimates of every run (same noise draws as the vmapped
    path), from one factorisation of W.

    With A = W / d (d: W's column norms, ``identify``'s scaling) = U S V^T once, a run's
    OLS estimate is x = V S^-1 U^T tau (S^-1 cut at ``identify``'s rcond under vmap,
    eps * max(M, b)). Two-step WLS (Gautier and Poignet 2001; ``identify``): each joint's
    own OLS residual variance is the squared norm of its noise e_j = tau_j - W_j theta
    projected off the range of its own column-normalised rows W_j (Q_j: their left singular
    vectors above ``TOL``, once), floored as ``identify`` floors it
    (``_variance_floor``); with the weights w_j = 1 / variance_j, the whitened normal
    equations A^T D A x = A^T D tau become, in the basis of U,
    (sum_j w_j U_j^T U_j) y = sum_j w_j U_j^T tau_j, x = V S^-1 y (U_j: joint j's rows of U).
    That b x b matrix has condition number at most max w / min w, not cond(A)^2, so the
    solve is as accurate as ``identify``'s. Per run this leaves one projection of the noise
    on the (2b + 2) fixed vectors [U_j | Q_j | residual of W_j theta | W_j theta] of each
    joint (one matmul over all the runs of a chunk) and a b x b Cholesky solve."""
    wls = "wls" in methods

    def program(W, theta, sigma, keys):
        M, b = W.shape
        N = M // n
        d = jnp.linalg.norm(W, axis=0)
        A = W / d
        Aj = A.reshape(N, n, b).swapaxes(0, 1)  # (n, N, b): each joint's own rows
        nj = jnp.linalg.norm(Aj, axis=1)  # (n, b); joint j's columns normalised as identify's
        nj = jnp.where(nj > 0, nj, 1.0)
        # One chain of LAPACK calls, each waiting for the last (module docstring: jaxlib 0.10's
        # batched LAPACK kernels deadlock XLA:CPU's thread pool when several run at once): the
        # R of each joint's rows, the R of all rows from those, one batched SVD of both.
        Rj = r_factor(Aj, jnp)
        R = r_factor(Rj.reshape(n * b, b), jnp)
        _, sv, Vt = jnp.linalg.svd(jnp.concatenate([R[None], Rj / nj[:, None, :]]))
        V = jnp.swapaxes(Vt, -1, -2)  # (n + 1, b, b)
        # Singular values above the cut (identify's pinv cut under vmap, eps * max(M, b); TOL for
        # a joint's own rank); U = A V / s, zero beyond the cut.
        cut = jnp.append(jnp.finfo(W.dtype).eps * max(M, b), jnp.full(n, TOL))[:, None]
        keep = sv > cut * sv[:, :1]
        inv = jnp.where(keep, 1.0 / jnp.where(keep, sv, 1.0), 0.0)
        g, V = inv[0], V[0]
        Uj = jnp.einsum("jkb,bc->jkc", Aj, V * g)  # (n, N, b): joint j's rows of U
        tau0 = (W @ theta).reshape(N, n).T  # (n, N) noise-free torques per joint
        basis = Uj
        if wls:
            Q = jnp.einsum("jkb,jbc->jkc", Aj / nj[:, None, :], Vt[1:].swapaxes(1, 2) * inv[1:, None, :])
            c = tau0 - jnp.einsum("jkb,jb->jk", Q, jnp.einsum("jkb,jk->jb", Q, tau0))  # (n, N)
            basis = jnp.concatenate([Uj, Q, c[..., None], tau0[..., None]], axis=-1)  # (n, N, 2b + 2)
            dof = jnp.maximum(N - jnp.sum(keep[1:], axis=1), 1)
            G = jnp.einsum("jkb,jkc->jbc", Uj, Uj)
        Utau0 = jnp.einsum("jkb,jk->jb", Uj, tau0)
        solve = lambda y: (V @ (g * y)) / d

        def chunk(ks):
            # The runs' noise joint-major (n, B, N), as ``noise`` draws it: the projection and the
            # squared norms are then batched dots with no transpose of the draws.
            Ej = sigma[:, None, None] * jax.vmap(lambda k: jax.random.normal(k, (n, N)), out_axes=1)(ks)
            proj = jnp.einsum("jrk,jkc->rjc", Ej, basis)  # (B, n, c): the one matmul
            Utau = Utau0 + proj[..., :b]  # U_j^T tau_j
            out = {}
            if "ols" in methods:
                out["ols"] = jax.vmap(solve)(jnp.sum(Utau, axis=1))
            if wls:
                e2 = jnp.einsum("jrk,jrk->rj", Ej, Ej)  # (B, n)
                cE, t0E = proj[..., 2 * b], proj[..., 2 * b + 1]
                rss = jnp.sum(c**2, axis=1) + 2 * cE + e2 - jnp.sum(proj[..., b : 2 * b] ** 2, axis=-1)
                rms = jnp.sqrt((jnp.sum(tau0**2, axis=1) + 2 * t0E + e2) / N)
                w = 1.0 / jax.vmap(_variance_floor)(rss / dof, rms[:, None, :])
                H = jnp.einsum("rj,jbc->rbc", w, G)
                h = jnp.einsum("rj,rjb->rb", w, Utau)[..., None]
                y = jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(H), True), h)[..., 0]
                out["wls"] = jax.vmap(solve)(y)
            return out

        return jax.lax.map(chunk, keys)

    return jax.jit(program)


def _factored(methods: tuple, W, theta, sigma, keys, device, batch_size):
    """{method: (R, b)} of "ols"/"wls" (``_factored_program``), chunks of at most
    ``batch_size`` runs (default below)."""
    R, M = keys.shape[0], W.shape[0]
    # Default: about 4 MB of noise per chunk (jax's threefry runs on XLA:CPU as a loop of rounds over
    # the whole block of draws, so a block that stays in cache draws several times faster), but at
    # least 16 runs, so that a tall W's basis is read once per 16 runs rather than per run, and at
    # most about 256 MB of noise and its copies.
    per = max(1, min(max(16, 2**19 // M), 2**28 // (4 * 8 * M))) if batch_size is None else max(1, int(batch_size))
    chunks = -(-R // per)
    B = -(-R // chunks)
    total = chunks * B
    keys = jnp.concatenate([keys, keys[: total - R]]) if total > R else keys
    program = _factored_program(tuple(sorted(set(methods))), sigma.shape[0])
    out = program(*jax.device_put((W, theta, sigma, keys.reshape(chunks, B, *keys.shape[1:])), device))
    # Finished before the next program starts (the Cramér-Rao bound's): see the module docstring.
    return jax.block_until_ready({k: v.reshape(total, -1)[:R] for k, v in out.items()})
