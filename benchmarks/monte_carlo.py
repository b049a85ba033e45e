"""Monte-Carlo identification of the UR5 (BIRDy protocol): R noisy experiments of the same
robot on one excitation, identified in one jitted call (split over the devices, one CPU device per process).

Robot: jaxid.models.ur5() with viscous and Coulomb friction (fixed values). Excitation:
a 5-harmonic Fourier trajectory, period 10 s, sampled at --rate Hz. Torque noise per
joint: --sigma (N m). Each run draws its own noise and identifies the base parameters;
the table compares, per base parameter, the spread of the R estimates with the
Cramér-Rao bound (spread / bound ~ 1 for an efficient estimator; its sampling error is
1 / sqrt(2 (R - 1))) and gives the bias in units of its standard error.
Timing: first_s is the first call (trace, compile, run), compile_s that minus a steady
call; s_per_id is a steady call / R (a second study with other noise).

Usage: python benchmarks/monte_carlo.py [--runs 1000] [--estimators wls ols consistent]
                                        [--batch-size B] [--json out.json] [--compare]

--compare (``compare()``): R = 1000 WLS and OLS re-fits of the same 6000 x 48 regressor:
run_study (compiled; ols and wls factorise W once for all runs) against numpy solving all runs
against one factorisation (OLS: one solve of W^T W with all right-hand sides; WLS: each joint's
residual variance from its own range, then a batched b x b solve of sum_j w_j W_j^T W_j) and
against numpy's lstsq run by run (20 runs, per identification). Every contender draws its own
noise and runs in its own process (``time_alone``; 3 rounds, medians): interleaved in one
process, the thread pools' spinning threads (OpenBLAS's after numpy, scipy's OpenBLAS after
XLA's LAPACK calls, XLA's own) slowed whichever contender came next, numpy's batched WLS up to 7x.
Measured (2026-12-07, 2 idle cores, load 1.3-1.8, BLAS threads default, .pyc compiled), per 1000
runs: run_study WLS 128 ms, numpy batched 168 ms (1.31x), numpy loop 20 runs 252 ms; OLS 87 ms
vs 102 ms (1.17x), loop 122 ms. At b6b0a31 (same script, same machine): WLS 630 ms (0.29x), OLS
343 ms (0.30x) against numpy's 185 and 103 ms. Earlier in-process interleaved figures (2026-12-06
and -07: 1.49x under load, 0.42-0.67x idle) carried that spinning-thread bias both ways.

Measured (2026-12-03, commit cf3f8c0, defaults: 1000 runs, wls, 1000 samples, 48 base
parameters; one CPU device, 2 shared cores at load 6-9): spread / CRB median 0.997, range
0.928-1.050 (sampling error 0.022); 98 % of the biases within 3 standard errors; first call
47.4 s (compile 25.3 s), then 22 ms per identification (45 per s); 107 s wall in all.

Its row in benchmarks/README.md lists these figures. No document cites it (docs/batches.md
describes ``run_study``); consistent.py and consistent_sdp.py import its trajectory and noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import jax
import numpy as np

import jaxid
from jaxid.excitation import fourier
from jaxid.identification.consistent import consistent_estimator
from jaxid.study import run_study

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import interleaved_medians  # noqa: E402

FRICTION = np.array([[2.0, 4.0], [2.5, 5.0], [1.5, 3.5], [0.4, 1.2], [0.3, 1.0], [0.3, 0.8]])  # fv, fc
SIGMA = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.05])  # torque noise per joint, N m


def trajectory(n, rate=100.0, period=10.0, seed=0, harmonics=5):
    """(q, qd, qdd), each (N, n): one period of a random Fourier excitation (coefficients
    N(0, 0.25^2) rad/s, zero start), sampled at rate Hz."""
    rng = np.random.default_rng(seed)
    a, b = (0.25 * rng.normal(size=(n, harmonics)) for _ in range(2))
    t = np.arange(int(period * rate)) / rate
    return fourier(a, b, np.zeros(n), 2 * np.pi / period, t, zero_start=True)


def experiment(rate=100.0):
    """UR5 with friction, its base parameters and the reduced regressor on one Fourier
    excitation: (robot, base, W_b (N*6, b), theta_b (b,))."""
    robot = jaxid.models.ur5(joint_terms=("fv", "fc"), joint_params=FRICTION)
    q, qd, qdd = trajectory(robot.n, rate)
    base = jaxid.base_parameters(robot)
    W = base.reduce(jaxid.stack(jaxid.regressor(robot, q, qd, qdd)))
    return robot, base, W, base.to_base(robot.parameter_vector())


def blas_threads():
    """BLAS threads numpy uses, as its environment sets them (None: the library's default)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var):
            return f"{var}={os.environ[var]}"
    return f"default ({os.cpu_count()} cores)"


def contenders(runs=1000, loop_runs=20):
    """{name: (zero-argument callable, identifications per call, W's shape)}: R = ``runs`` OLS and WLS
    re-fits of the UR5 regressor (6000 x 48) by run_study (compiled), by numpy solving all runs
    against one factorisation, and by numpy's lstsq run by run (``loop_runs`` of them). Every
    callable draws its own noise."""
    robot, _, W, theta = experiment()
    W, theta = np.asarray(W), np.asarray(theta)
    n, (M, b) = robot.n, W.shape
    N, sig = M // n, np.asarray(SIGMA)
    tau0 = (W @ theta).reshape(N, n)
    Wj = W.reshape(N, n, b).transpose(1, 0, 2)  # (n, N, b)
    G = np.einsum("jkb,jkc->jbc", Wj, Wj)

    def joint_bases():  # each joint's own range (its rows may be rank deficient)
        out = []
        for j in range(n):
            U, s, _ = np.linalg.svd(Wj[j], full_matrices=False)
            out.append(U[:, s > 1e-8 * s[0]])
        return out

    def noisy(seed, r):
        return tau0 + sig * np.random.default_rng(seed).standard_normal((r, N, n))  # (r, N, n)

    def np_ols(T):  # one factorisation of W^T W, all right-hand sides
        return np.linalg.solve(W.T @ W, W.T @ T.reshape(len(T), M).T).T

    def np_wls(T):
        Q = joint_bases()
        Tj = [np.ascontiguousarray(T[:, :, j]) for j in range(n)]  # (R, N) each
        var = np.stack([(np.sum(t**2, 1) - np.sum((t @ q) ** 2, 1)) / (N - q.shape[1]) for t, q in zip(Tj, Q)], 1)
        w = 1 / var  # (R, n)
        h = sum(w[:, j, None] * (Tj[j] @ Wj[j]) for j in range(n))
        return np.linalg.solve(np.einsum("rj,jbc->rbc", w, G), h[..., None])[..., 0]

    def loop_wls(T):
        out = []
        for t in T:
            var = [np.sum((t[:, j] - Wj[j] @ np.linalg.lstsq(Wj[j], t[:, j], rcond=None)[0]) ** 2) for j in range(n)]
            sw = np.tile(1 / np.sqrt(np.maximum(var, 1e-300) / N), N)
            out.append(np.linalg.lstsq(W * sw[:, None], t.reshape(M) * sw, rcond=None)[0])
        return np.array(out)

    def study(est):
        return lambda: run_study(W, theta, sig, runs, estimators=est, key=jax.random.PRNGKey(1), n_joints=n).estimates

    return {
        "run_study wls": (study("wls"), runs, W.shape),
        "numpy batched wls": (lambda: np_wls(noisy(1, runs)), runs, W.shape),
        "numpy loop wls": (lambda: loop_wls(noisy(1, loop_runs)), loop_runs, W.shape),
        "run_study ols": (study("ols"), runs, W.shape),
        "numpy batched ols": (lambda: np_ols(noisy(1, runs)), runs, W.shape),
        "numpy loop ols": (
            lambda: np.array([np.linalg.lstsq(W, t.reshape(M), rcond=None)[0] for t in noisy(1, loop_runs)]),
            loop_runs,
            W.shape,
        ),
    }


def time_alone(name, runs=1000, repeat=5):
    """(median wall time, s, of ``repeat`` calls of one contender after a warm-up call, in this
    process with no other contender run in it; identifications per call)."""
    fn, ids, shape = contenders(runs)[name]
    return interleaved_medians({name: fn}, repeat=repeat)[name], ids, shape


def compare(runs=1000, rounds=3, repeat=5):
    """R = ``runs`` OLS and WLS re-fits of the UR5 regressor (6000 x 48), every contender
    (``contenders``) timed in its own process (``time_alone``), the processes alternated for
    ``rounds`` rounds; each figure is the median over the rounds of a process's median.

    Not interleaved in one process: a BLAS or XLA thread pool keeps its threads spinning for a
    while after a call (OpenBLAS's, numpy's copy and the scipy copy that XLA:CPU's LAPACK calls
    run on, and XLA's own), and on two cores those spinning threads slowed whichever contender
    came next by up to 7x (numpy batched WLS: 171 ms alone, 1241 ms interleaved with run_study).
    Returns {name: identifications per second}."""
    per_call = {}
    load0 = os.getloadavg()
    medians = {}
    t0 = time.perf_counter()
    for _ in range(rounds):
        for name in CONTENDERS:
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--time-alone", name, "--runs", str(runs)],
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(out.stdout.strip().splitlines()[-1])
            medians.setdefault(name, []).append(res["s"])
            per_call[name], shape = res["ids"], res["shape"]
    load1 = os.getloadavg()
    med = {k: float(np.median(v)) for k, v in medians.items()}
    rate = {k: per_call[k] / t for k, t in med.items()}
    print(
        f"{runs} re-fits of a {shape[0]} x {shape[1]} W, each contender in its own process, median of {rounds} rounds "
        f"({time.perf_counter() - t0:.0f} s); load average {load0[0]:.1f} -> {load1[0]:.1f}; "
        f"BLAS threads {blas_threads()}"
    )
    for k, t in med.items():
        print(
            f"{k:<20} {1e3 * t:9.1f} ms  {rate[k]:9.0f} identifications/s  (rounds: {', '.join(f'{1e3 * x:.0f}' for x in medians[k])} ms)"
        )
    for est in ("wls", "ols"):
        r = rate[f"run_study {est}"]
        print(
            f"{est}: run_study / numpy batched {r / rate[f'numpy batched {est}']:.2f}x, "
            f"/ numpy loop {r / rate[f'numpy loop {est}']:.1f}x"
        )
    return rate


#: The contenders of ``compare``, in the order each round runs them.
CONTENDERS = (
    "run_study wls",
    "numpy batched wls",
    "numpy loop wls",
    "run_study ols",
    "numpy batched ols",
    "numpy loop ols",
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0, help="sampling rate, Hz (10 s trajectory)")
    parser.add_argument("--sigma", type=float, nargs=6, default=SIGMA.tolist())
    parser.add_argument("--estimators", nargs="+", default=["wls"], help="identify methods and/or 'consistent'")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--json", default=None, help="also write the JSON here")
    parser.add_argument("--compare", action="store_true", help="only time run_study against numpy (compare())")
    parser.add_argument("--time-alone", choices=CONTENDERS, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.time_alone:
        t, ids, shape = time_alone(args.time_alone, args.runs)
        print(json.dumps(dict(s=t, ids=ids, shape=list(shape))))
        return None
    if args.compare:
        return compare(args.runs)

    robot, base, W, theta = experiment(args.rate)
    sigma = np.asarray(args.sigma)
    ests = {e: (consistent_estimator(robot, base) if e == "consistent" else e) for e in args.estimators}
    devices = jax.devices()
    print(f"devices: {[str(d) for d in devices]}  ({devices[0].platform})")
    print(f"UR5 + friction: {W.shape[0] // robot.n} samples, {W.shape[1]} base parameters, {args.runs} runs")

    def study(seed):
        out = run_study(
            W,
            theta,
            sigma,
            args.runs,
            estimators=ests,
            key=jax.random.PRNGKey(seed),
            n_joints=robot.n,
            names=base.names,
            batch_size=args.batch_size,
        )
        jax.block_until_ready(jax.tree.leaves(out))
        return out

    t0 = time.perf_counter()
    study(0)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = study(1)
    steady = time.perf_counter() - t0

    summary = dict(
        devices=[str(d) for d in devices],
        runs=args.runs,
        samples=W.shape[0] // robot.n,
        base_parameters=W.shape[1],
        first_s=first,
        compile_s=max(first - steady, 0.0),
        steady_s=steady,
        s_per_id=steady / (args.runs * len(ests)),
        ids_per_s=args.runs * len(ests) / steady,
        estimators={},
    )
    se = 1 / np.sqrt(2 * (args.runs - 1))
    for name, s in res.items():
        ratio, bz = np.asarray(s.ratio), np.asarray(s.bias_z)
        print(f"\n{name}: spread / Cramér-Rao bound per base parameter (sampling error {se:.3f})")
        print(f"{'base parameter':<44} {'truth':>11} {'CRB':>10} {'spread':>10} {'ratio':>6} {'bias_z':>7}")
        for k in range(len(ratio)):
            label = s.names[k] if len(s.names[k]) <= 44 else s.names[k][:41] + "..."
            print(
                f"{label:<44} {float(s.truth[k]):>11.4g} {float(s.crb[k]):>10.3g} {float(s.spread[k]):>10.3g} "
                f"{ratio[k]:>6.3f} {bz[k]:>7.2f}"
            )
        summary["estimators"][name] = dict(
            ratio_min=float(ratio.min()),
            ratio_median=float(np.median(ratio)),
            ratio_max=float(ratio.max()),
            within_3se=float(np.mean(np.abs(ratio - 1) < 3 * se)),
            mean_abs_bias_z=float(np.mean(np.abs(bz))),
            ratio=ratio.round(4).tolist(),
        )
    print(
        f"\nfirst call {first:.1f} s (compile {summary['compile_s']:.1f} s); {steady:.2f} s for {args.runs * len(ests)} identifications = "
        f"{1e3 * summary['s_per_id']:.2f} ms each ({summary['ids_per_s']:.0f}/s)"
    )
    for name, e in summary["estimators"].items():
        print(
            f"{name}: ratio min {e['ratio_min']:.3f} median {e['ratio_median']:.3f} max {e['ratio_max']:.3f}; "
            f"{100 * e['within_3se']:.0f} % within 1 +- 3 SE; mean |bias_z| {e['mean_abs_bias_z']:.2f}"
        )
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return summary


if __name__ == "__main__":
    main()
