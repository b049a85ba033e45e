"""Streaming least squares (jaxid.identification.streaming): speed, accuracy, memory.

Three tables, each measured side by side in this process (interleaved, medians), or one
fresh process per size for memory:

1. least squares on an in-memory W of 600k x 48 (100k samples x 6 joints, 48 columns):
   streamed two-step WLS and OLS (``streaming.from_rows`` + ``fit``: per-joint Gram matrices
   with the condition check, QR where it fails), the same WLS with the QR fold only and on
   torques with 1 % noise (the Gram identity then suffices, no residual pass), each
   reduction alone, the dense estimator (``estimators.identify``), textbook normal equations
   (numpy), and the floor: reading W once (``W.sum(axis=0)``). Printed as ratios to the floor.
2. accuracy and time against cond(W) = 1e2 .. 1e8 on rows with a known exact solution: the
   default (the path the condition check picks), the Gram reduction forced, the QR fold,
   numpy's normal equations.
3. ``workflow.identify_experiment`` on a simulated UR5 (logged qd, qdd; 1 % torque noise)
   for N = 1e4 .. 1e6 samples, one child process per N: wall time, s/sample and peak RSS,
   streamed (above ``streaming.STREAM_BYTES``) and, where it fits, dense (threshold raised).

Usage: python benchmarks/streaming.py [--quick] [--no-memory] [--sizes 10000 100000 1000000] [--repeat 5]
(--quick: a 120k x 48 least squares and N = 1e4, 3e4).

Its row in benchmarks/README.md lists its last figures; cited by
``jaxid/identification/streaming.py`` and the CHANGELOG.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from timing import interleaved_medians  # benchmarks/timing.py (this folder is on sys.path)


def normal_equations(W, tau):
    """Column-scaled normal equations, Cholesky, with the condition number of the scaled Gram
    matrix (cond(W)^2): the textbook form, on the stacked W, for reference."""
    G, b = W.T @ W, W.T @ tau
    d = np.sqrt(np.diag(G))
    Gs = G / np.outer(d, d)
    L = np.linalg.cholesky(Gs)
    x = np.linalg.solve(L.T, np.linalg.solve(L, b / d))
    return x / d, np.linalg.cond(Gs)


def _forced(W, tau, how):
    """``streaming.Reduced`` of rows (N, n, k) by one reduction, without the condition check:
    "gram" (``base.gram_fold`` + ``gram_r``) or "qr" (``base.r_fold``)."""
    import jax.numpy as jnp

    from jaxid.identification import base, streaming

    n, k = W.shape[1:]
    zero = np.zeros((n, k + 1, k + 1))
    R = base.gram_r(base.gram_fold(zero, W, tau))[0] if how == "gram" else base.r_fold(zero, W, tau)
    return streaming.Reduced(jnp.asarray(R), jnp.asarray(len(W), jnp.int32))


def _gram_accepted(W, tau):
    """Whether ``streaming.from_rows`` keeps the Gram reduction of rows (N, n, k) (its condition check)."""
    from jaxid.identification import streaming

    empty = streaming.Reduced.empty(*W.shape[1:])
    return streaming._from_gram(streaming._fold(streaming.Gram.of(empty), W, tau), (W, tau, None, empty)) is not None


def least_squares(rows, repeat):
    from jaxid.identification import base, estimators, streaming

    n, k = 6, 48
    rng = np.random.default_rng(0)
    N = rows // n
    W = rng.normal(size=(N, n, k)) * np.logspace(0, 2, k)
    tau = W @ rng.normal(size=k) + 0.01 * rng.normal(size=(N, n))
    W2, t2 = W.reshape(-1, k), tau.reshape(-1)
    zero = np.zeros((n, k + 1, k + 1))
    # The same rows with noise 1 % of each joint's torque (the noise above is 3e-5 of it, so the
    # condition check needs the held rows' residual pass; here the Gram identity suffices).
    tau1 = W @ rng.normal(size=k)
    tau1 += 0.01 * np.std(tau1, axis=0) * rng.normal(size=(N, n))
    fns = {
        "read W once": lambda: W2.sum(axis=0),
        "streamed wls": lambda: streaming.fit(streaming.from_rows(W, tau, n), "wls", check=False).theta,
        "streamed ols": lambda: streaming.fit(streaming.from_rows(W, tau, n), "ols", check=False).theta,
        "streamed wls, QR only": lambda: streaming.fit(_forced(W, tau, "qr"), "wls", check=False).theta,
        "streamed wls, 1 % noise": lambda: streaming.fit(streaming.from_rows(W, tau1, n), "wls", check=False).theta,
        "reduction: Gram": lambda: base.gram_fold(zero, W, tau),
        "reduction: QR": lambda: base.r_fold(zero, W, tau),
        "dense identify wls": lambda: estimators.identify(W2, t2, "wls", n_joints=n, check=False).theta,
        "normal equations": lambda: normal_equations(W2, t2)[0],
    }
    gram = _gram_accepted(W, tau) and _gram_accepted(W, tau1)
    t = interleaved_medians(fns, repeat)
    cpu = interleaved_medians(fns, repeat, clock=time.process_time)  # less disturbed by other processes
    floor, cpu_floor = t["read W once"], cpu["read W once"]
    print(
        f"\nleast squares on W {W2.shape[0]} x {k} (interleaved medians of {repeat}; load {os.getloadavg()[0]:.1f}); "
        f"streamed path: {'Gram (condition check passed)' if gram else 'QR (condition check failed)'}"
    )
    print(f"{'':>24} {'wall s':>9} {'x floor':>9} {'CPU s':>9} {'x floor':>9}")
    for name, s in t.items():
        print(f"{name:>24} {s:>9.4f} {s / floor:>9.1f} {cpu[name]:>9.4f} {cpu[name] / cpu_floor:>9.1f}")
    return dict(
        rows=W2.shape[0],
        columns=k,
        gram=gram,
        seconds=t,
        cpu_seconds=cpu,
        ratio_to_floor={k_: v / floor for k_, v in t.items()},
        cpu_ratio_to_floor={k_: v / cpu_floor for k_, v in cpu.items()},
    )


def accuracy(repeat):
    """theta's error on systems with a known least-squares solution: W = U diag(s) V^T D (U
    orthonormal, s over ``cond`` decades, columns scaled over 3 decades by D), tau = W theta + r
    with r orthogonal to range(W) (1 % of tau), so theta is the exact solution whatever the
    noise. Times on the same rows, side by side."""
    from jaxid.identification import streaming

    rng = np.random.default_rng(1)
    n, k, N = 6, 48, 20_000
    out = []
    print(
        f"\naccuracy and time, {N * n} x {k} rows, exact solution known; relative error max|dtheta| / max|theta| "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    print(
        f"{'cond':>8} {'eps cond^2':>10} {'default path':>12} {'default':>9} {'Gram':>9} {'QR':>9} {'numpy NE':>9} "
        f"{'default s':>9} {'QR s':>9}"
    )
    for c in (1e2, 1e3, 1e4, 1e5, 1e6, 1e8):
        U, _ = np.linalg.qr(rng.normal(size=(N * n, k)))
        V, _ = np.linalg.qr(rng.normal(size=(k, k)))
        D = np.logspace(0, 3, k)
        W = (U * np.logspace(0, -np.log10(c), k)) @ V.T * D
        theta = rng.normal(size=k) / D
        e = rng.normal(size=N * n)
        e -= U @ (U.T @ e)
        tau = W @ theta
        tau += 0.01 * np.linalg.norm(tau) / np.linalg.norm(e) * e
        W3, t3 = W.reshape(N, n, k), tau.reshape(N, n)
        err = lambda x: float(np.max(np.abs(np.asarray(x) - theta)) / np.max(np.abs(theta)))
        fit = lambda red: streaming.fit(red, "ols", rcond=0.0, check=False).theta
        path = "Gram" if _gram_accepted(W3, t3) else "QR"
        fns = {"default": lambda: fit(streaming.from_rows(W3, t3, n)), "qr": lambda: fit(_forced(W3, t3, "qr"))}
        t = interleaved_medians(fns, repeat)
        row = dict(
            cond=c,
            eps_cond2=float(np.finfo(float).eps * c**2),
            path=path,
            default=err(fns["default"]()),
            gram=err(fit(_forced(W3, t3, "gram"))),
            qr=err(fns["qr"]()),
            normal_equations=err(normal_equations(W, tau)[0]),
            default_s=t["default"],
            qr_s=t["qr"],
        )
        out.append(row)
        print(
            f"{c:>8.0e} {row['eps_cond2']:>10.1e} {path:>12} {row['default']:>9.1e} {row['gram']:>9.1e} {row['qr']:>9.1e} "
            f"{row['normal_equations']:>9.1e} {row['default_s']:>9.4f} {row['qr_s']:>9.4f}"
        )
    return out


def one(N, dense):
    """Child process: identify a simulated UR5 from N samples; print JSON."""
    import jax

    from jaxid import data, workflow
    from jaxid.identification import streaming

    robot, desc = workflow.model(builtin="ur5", joint_terms=("fv", "fc"))
    fs = 100.0
    t = np.arange(N) / fs
    rng = np.random.default_rng(0)
    w = 2 * np.pi * 0.1 * np.arange(1, 6)
    a, b = (rng.normal(size=(5, robot.n)) * 0.4 / np.arange(1, 6)[:, None] for _ in range(2))
    q = np.empty((N, robot.n))
    qd, qdd, tau = np.empty_like(q), np.empty_like(q), np.empty_like(q)
    theta = robot.parameter_vector()
    torque = jax.jit(jax.vmap(robot.torque, in_axes=(None, 0, 0, 0)))
    for s in range(0, N, 10_000):  # the data in pieces: only the identification's memory counts
        ts = t[s : s + 10_000]
        S, C = np.sin(np.outer(ts, w)), np.cos(np.outer(ts, w))
        q[s : s + len(ts)] = S @ a + C @ b
        qd[s : s + len(ts)] = (C * w) @ a - (S * w) @ b
        qdd[s : s + len(ts)] = -(S * w**2) @ a - (C * w**2) @ b
        tau[s : s + len(ts)] = np.asarray(torque(theta, q[s : s + len(ts)], qd[s : s + len(ts)], qdd[s : s + len(ts)]))
    tau += 0.01 * np.std(tau, axis=0) * rng.normal(size=tau.shape)
    prepared = workflow.prepare([data.Dataset(t=t, q=q, tau=tau, qd=qd, qdd=qdd, source="ur5")], robot)
    if dense:
        streaming.STREAM_BYTES = 1 << 62
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times = []
    for _ in range(2):  # the second call is warm (compiled)
        t0 = time.perf_counter()
        params = workflow.identify_experiment(robot, prepared, description=desc, method="wls")
        times.append(time.perf_counter() - t0)
    err = np.max(np.abs(np.asarray(params.theta) - np.asarray(params.base.to_base(theta))) / np.asarray(params.std))
    print(
        json.dumps(
            dict(
                N=N,
                dense=dense,
                cold_s=times[0],
                warm_s=times[1],
                rss_before_mb=before,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                max_error_in_std=float(err),
            )
        )
    )


def memory_table(sizes):
    rows = []
    for N in sizes:
        for dense in (False, True):
            if dense and N > 200_000:
                continue  # the dense path needs ~9 copies of W (1e6 UR5 samples: ~12 GB)
            cmd = [sys.executable, __file__, "--one", str(N)] + (["--dense"] if dense else [])
            res = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
            if res.returncode:
                print(res.stderr[-2000:])
                continue
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    print("\nworkflow.identify_experiment, UR5 (fv, fc), two-step WLS, one process per row")
    print(
        f"{'N':>8} {'path':>8} {'cold s':>8} {'warm s':>8} {'warm us/sample':>15} {'RSS before MB':>14} "
        f"{'peak RSS MB':>12} {'max |err|/std':>14}"
    )
    for r in rows:
        print(
            f"{r['N']:>8} {'dense' if r['dense'] else 'streamed':>8} {r['cold_s']:>8.2f} {r['warm_s']:>8.2f} "
            f"{1e6 * r['warm_s'] / r['N']:>15.2f} {r['rss_before_mb']:>14.0f} {r['peak_rss_mb']:>12.0f} {r['max_error_in_std']:>14.2f}"
        )
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-memory", action="store_true", help="skip table 3 (the child processes)")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.one:
        return one(args.one, args.dense)
    sizes = args.sizes or ([10_000, 30_000] if args.quick else [10_000, 100_000, 1_000_000])
    out = dict(
        benchmark="streaming",
        devices=[str(d) for d in jax.devices()],
        least_squares=least_squares(120_000 if args.quick else 600_000, args.repeat),
        accuracy=accuracy(3 if args.quick else args.repeat),
        identify=[] if args.no_memory else memory_table(sizes),
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
