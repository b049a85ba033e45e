"""Streaming least squares (jaxid.identification.streaming): speed, accuracy, memory.

Three tables, each measured side by side in this process (interleaved, medians), or one
fresh process per size for memory:

1. least squares on an in-memory W of 600k x 48 (100k samples x 6 joints, 48 columns):
   streamed TSQR + two-step WLS (``streaming.from_rows`` + ``fit``), the dense estimator
   (``estimators.identify``), column-scaled normal equations with a condition check
   (numpy), and the floor: reading W once (``W.sum(axis=0)``). Printed as ratios to the floor.
2. accuracy on ill-conditioned systems: relative error of theta (exact, noise-free tau)
   for QR-reduced rows and for column-scaled normal equations, against cond(scaled W).
3. ``workflow.identify_experiment`` on a simulated UR5 (logged qd, qdd; 1 % torque noise)
   for N = 1e4 .. 1e6 samples, one child process per N: wall time, s/sample and peak RSS,
   streamed (above ``streaming.STREAM_BYTES``) and, where it fits, dense (threshold raised).

Usage: python benchmarks/streaming.py [--quick] [--sizes 10000 100000 1000000] [--repeat 5]
(--quick: a 120k x 48 least squares and N = 1e4, 3e4).
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
    matrix (cond(W)^2): the fast alternative to QR."""
    G, b = W.T @ W, W.T @ tau
    d = np.sqrt(np.diag(G))
    Gs = G / np.outer(d, d)
    L = np.linalg.cholesky(Gs)
    x = np.linalg.solve(L.T, np.linalg.solve(L, b / d))
    return x / d, np.linalg.cond(Gs)


def least_squares(rows, repeat):
    from jaxid.identification import estimators, streaming

    n, k = 6, 48
    rng = np.random.default_rng(0)
    N = rows // n
    W = rng.normal(size=(N, n, k)) * np.logspace(0, 2, k)
    tau = W @ rng.normal(size=k) + 0.01 * rng.normal(size=(N, n))
    W2, t2 = W.reshape(-1, k), tau.reshape(-1)
    fns = {"read W once": lambda: W2.sum(axis=0),
           "streamed TSQR wls": lambda: streaming.fit(streaming.from_rows(W, tau, n), "wls", check=False).theta,
           "streamed TSQR ols": lambda: streaming.fit(streaming.from_rows(W, tau, n), "ols", check=False).theta,
           "dense identify wls": lambda: estimators.identify(W2, t2, "wls", n_joints=n, check=False).theta,
           "normal equations": lambda: normal_equations(W2, t2)[0]}
    t = interleaved_medians(fns, repeat)
    cpu = interleaved_medians(fns, repeat, clock=time.process_time)  # less disturbed by other processes
    floor, cpu_floor = t["read W once"], cpu["read W once"]
    print(f"\nleast squares on W {W2.shape[0]} x {k} (interleaved medians of {repeat}; load {os.getloadavg()[0]:.1f})")
    print(f"{'':>22} {'wall s':>9} {'x floor':>9} {'CPU s':>9} {'x floor':>9}")
    for name, s in t.items():
        print(f"{name:>22} {s:>9.4f} {s / floor:>9.1f} {cpu[name]:>9.4f} {cpu[name] / cpu_floor:>9.1f}")
    return dict(rows=W2.shape[0], columns=k, seconds=t, cpu_seconds=cpu,
                ratio_to_floor={k_: v / floor for k_, v in t.items()},
                cpu_ratio_to_floor={k_: v / cpu_floor for k_, v in cpu.items()})


def accuracy():
    from jaxid.identification import streaming

    rng = np.random.default_rng(1)
    n, k, N = 6, 20, 2000
    out = []
    print("\naccuracy, noise-free tau = W theta: max relative error of theta")
    print(f"{'cond(scaled W)':>15} {'QR (streamed)':>14} {'normal eq.':>11}")
    for c in (1e2, 1e4, 1e6, 1e8):
        U, _ = np.linalg.qr(rng.normal(size=(N * n, k)))
        V, _ = np.linalg.qr(rng.normal(size=(k, k)))
        W = (U * np.logspace(0, -np.log10(c), k)) @ V.T * np.logspace(0, 3, k)  # badly scaled too
        theta = rng.normal(size=k)
        tau = W @ theta
        qr = streaming.fit(streaming.from_rows(W, tau, n), "ols", rcond=0.0, check=False).theta
        ne, cg = normal_equations(W, tau)
        err = lambda x: float(np.max(np.abs(np.asarray(x) - theta) / np.abs(theta)))
        cs = float(np.sqrt(cg))
        out.append(dict(cond=cs, qr=err(qr), normal_equations=err(ne)))
        print(f"{cs:>15.2e} {err(qr):>14.2e} {err(ne):>11.2e}")
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
        ts = t[s:s + 10_000]
        S, C = np.sin(np.outer(ts, w)), np.cos(np.outer(ts, w))
        q[s:s + len(ts)] = S @ a + C @ b
        qd[s:s + len(ts)] = (C * w) @ a - (S * w) @ b
        qdd[s:s + len(ts)] = -(S * w**2) @ a - (C * w**2) @ b
        tau[s:s + len(ts)] = np.asarray(torque(theta, q[s:s + len(ts)], qd[s:s + len(ts)], qdd[s:s + len(ts)]))
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
    print(json.dumps(dict(N=N, dense=dense, cold_s=times[0], warm_s=times[1], rss_before_mb=before,
                          peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          max_error_in_std=float(err))))


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
    print(f"{'N':>8} {'path':>8} {'cold s':>8} {'warm s':>8} {'warm us/sample':>15} {'RSS before MB':>14} "
          f"{'peak RSS MB':>12} {'max |err|/std':>14}")
    for r in rows:
        print(f"{r['N']:>8} {'dense' if r['dense'] else 'streamed':>8} {r['cold_s']:>8.2f} {r['warm_s']:>8.2f} "
              f"{1e6 * r['warm_s'] / r['N']:>15.2f} {r['rss_before_mb']:>14.0f} {r['peak_rss_mb']:>12.0f} {r['max_error_in_std']:>14.2f}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    if args.one:
        return one(args.one, args.dense)
    sizes = args.sizes or ([10_000, 30_000] if args.quick else [10_000, 100_000, 1_000_000])
    out = dict(benchmark="streaming", devices=[str(d) for d in jax.devices()],
               least_squares=least_squares(120_000 if args.quick else 600_000, args.repeat),
               accuracy=accuracy(), identify=memory_table(sizes))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
