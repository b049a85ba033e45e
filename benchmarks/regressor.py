"""Throughput of the jitted, batched regressor vs Pinocchio's computeJointTorqueRegressor.

UR5 (10 inertial parameters per link), N = 1,000 / 10,000 / 100,000 random states.
``jaxid.regressor(robot, q, qd, qdd)`` as users call it (numpy (N, n) in: jitted, vmapped in
chunks, padded to its bucket); Pinocchio called in a Python loop, one sample at a time, as
identification scripts built on it do, and in its C++ loop (``benchmarks/pinocchio_cpp.py``;
where that cannot be built the line says why). Per size, in this process: the first call
(compile) and then jaxid, the Python loop and the output-write floor interleaved round by round,
medians of --repeat (``timing.interleaved_medians``; small sizes more rounds). Prints the BLAS
threads (``blas_threads.py``), load average, a table and JSON:
  compile_s: first call (trace + XLA compile + run) minus one steady run; the program comes
    from jaxid's persistent compile cache when it holds it (JAXID_CACHE_DIR=off: a real compile)
  jax_s, pin_s: wall medians; ratio = pin_s / jax_s (> 1: jaxid is faster); CPU ratio: the
    same with this process's CPU time (a second interleaved pass; XLA runs on every usable core,
    Pinocchio on one), CPU us: jaxid's CPU time per sample
  write_us_per_sample: one jitted call that only writes an array of Y's shape (allocation
    and first-touch page faults included): the floor under any batched regressor here
  C++ us: Pinocchio's C++ loop, best of --repeat runs inside the program (after the Python
    timings, on the same model and states); C++/jaxid = C++ us / jaxid us (< 1: C++ faster).
    That loop keeps each sample's regressor in Pinocchio's data (in cache) and reads one entry;
  C++ W us: the same loop writing every sample's block into a new stacked W (N n, 10 n) per run,
    the output jaxid.regressor returns (and an identification needs): the like-for-like row
  peak_rss_mb: the process's peak resident memory after each size.
Usage: python benchmarks/regressor.py [--sizes 1000 10000 100000] [--repeat 5]

Last figures (2026-12-06, ``--sizes 1000 10000 100000 --repeat 7``, 2 shared cores,
OPENBLAS_NUM_THREADS=2, C++ loop built with the cmeel-eigen headers; us/sample, interleaved
medians; run A at 084ba75, load 4.2; run B at 5adf47a, load 4.9-5.2):

         N  jaxid wall  jaxid CPU  pin Py loop  pin/jaxid wall   CPU        C++   C++/jaxid
           (A / B)     (A / B)     (A / B)      (A / B)          (A / B)          (A / B)
      1000  3.79 / 6.82  3.66 / 4.09  2.8 / 2.9   0.73 / 0.42  0.76 / 0.68  1.36  0.36 / 0.20
     10000  5.97 / 7.03  4.01 / 4.19  5.1 / 5.1   0.86 / 0.73  0.68 / 0.66  1.77  0.30 / 0.22
    100000  5.63 / 4.73  3.97 / 3.86  4.2 / 2.8   0.75 / 0.59  0.68 / 0.73  1.41  0.25 / 0.29

i.e. jaxid's regressor is 0.42-0.86x Pinocchio's Python loop in wall time (0.66-0.76x in CPU
time: slower) and 0.20-0.36x its C++ loop here; write floor 0.4-2.0 us/sample; peak RSS about
1.0-1.1 GB at 1e5. The compile (``JAXID_CACHE_DIR=off``, N = 1000, load 5.9): 1.40 s. The
CHANGELOG 0.1.0's "1.4-2.5x Pinocchio's Python loop" (best-of, 2026-11-29) is not reproduced.

On an idle machine (2026-12-07 at f5c5d25, ``--sizes 1000 10000 --repeat 5``, load 1.1, the C++ loop
built with cmeel-eigen's headers, which the ``pin`` wheel does not install: ``pip install
cmeel-eigen``): jaxid 1.86 / 1.75 us per sample (CPU 2.62 / 2.39), Pinocchio's Python loop 2.50 /
2.47 (1.34x / 1.41x jaxid's wall time, 0.95x / 1.04x its CPU), its C++ loop 1.32 us (C++/jaxid 0.71 /
0.76: the C++ loop on one core is faster); results equal to 5.3e-15.

At 408e391 (per-sample functions above a chunk: host calls of the one-chunk program into one
DLPack-shared buffer; 2026-12-07, ``--sizes 1000 10000 100000 --repeat 5``, load 2.3-2.6 after a test
run, one after the other with b516a78 by PYTHONPATH): jaxid 1.90 / 1.66 / 1.50 us per sample at N =
1e3 / 1e4 / 1e5, was 2.67 / 1.90 / 2.01; Pinocchio's Python loop 1.31x / 1.49x / 1.66x jaxid's wall
time (was 0.97x / 1.34x / 1.29x); C++/jaxid 0.70 / 0.79 / 0.88 (was 0.50 / 0.72 / 0.66: the C++ loop on
one core is still faster than jaxid on two); N = 1e5 compiles nothing new (its bucket's program
took 0.62 s), peak RSS 917 MB (1023 MB).

With the like-for-like C++ row (2026-12-07 at d46186c, same flags, load 0.5-0.8): jaxid 1.95 / 1.66 /
1.57 us per sample at 1e3 / 1e4 / 1e5; Pinocchio's C++ loop 1.36 / 1.32 / 1.33 us keeping each
sample in its data (C++/jaxid 0.70 / 0.80 / 0.85) and 1.57 / 1.54 / 2.37 us writing the stacked W
(C++ W/jaxid 0.81 / 0.93 / 1.51: the first touch of a 288 MB W costs the C++ loop 1 us per sample
at 1e5, as it costs jaxid its write floor); Python loop 1.31x / 1.53x / 1.61x jaxid's wall.

Its row in benchmarks/README.md lists its last figures; cited by the CHANGELOG; dynamics.py and
pinocchio_cpp.py import its ``pinocchio_model``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time

import blas_threads  # benchmarks/blas_threads.py: sets the BLAS threads before numpy loads
import jax
import jax.numpy as jnp
import numpy as np
import pinocchio_cpp  # benchmarks/pinocchio_cpp.py: Pinocchio's C++ loop, where it builds
from timing import interleaved_medians  # benchmarks/timing.py (the script's folder is on sys.path)

import jaxid


def pinocchio_model(robot):
    import pinocchio as pin

    model = pin.Model()
    parent = 0
    for i in range(robot.n):
        T = np.asarray(robot.placements[i])
        jid = model.addJoint(
            parent,
            pin.JointModelRevoluteUnaligned(np.asarray(robot.axes[i])),
            pin.SE3(T[:3, :3], T[:3, 3]),
            robot.names[i],
        )
        model.appendBodyToJoint(
            jid, pin.Inertia.FromDynamicParameters(np.asarray(robot.inertial[i])), pin.SE3.Identity()
        )
        parent = jid
    model.gravity.linear = np.asarray(robot.gravity)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} at {commit or '?'}; {blas_threads.describe()}")
    robot = jaxid.models.ur5()
    try:
        import pinocchio as pin

        model = pinocchio_model(robot)
        data = model.createData()
        no_cpp = pinocchio_cpp.why_not()
    except ImportError:
        pin, no_cpp = None, "pinocchio not installed"
        print("pinocchio not installed: jaxid only")
    if no_cpp:
        print(f"Pinocchio's C++ loop not run: {no_cpp}")
    rng = np.random.default_rng(0)
    rows = []
    for N in args.sizes:
        q, qd, qdd = (rng.normal(size=(N, robot.n)) for _ in range(3))
        jax.clear_caches()
        t0 = time.perf_counter()
        Y = jax.block_until_ready(jaxid.regressor(robot, q, qd, qdd))
        first = time.perf_counter() - t0
        repeat = max(args.repeat, min(4 * args.repeat, 100_000 // N))  # small sizes: more rounds against timer noise
        write = jax.jit(lambda x: jnp.broadcast_to(x[:, :, None], Y.shape[:2] + (1,)) * jnp.ones(Y.shape[2]))
        fns = {"jaxid": lambda: jaxid.regressor(robot, q, qd, qdd), "write": lambda: write(q)}
        if pin is not None:

            def loop():
                for k in range(N):
                    pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])

            fns["pin"] = loop
        load0 = os.getloadavg()[0]
        t = interleaved_medians(fns, repeat)
        cpu = interleaved_medians({k: fns[k] for k in fns if k != "write"}, repeat, clock=time.process_time)
        row = dict(
            N=N,
            rounds=repeat,
            load=f"{load0:.2f}-{os.getloadavg()[0]:.2f}",
            compile_s=max(first - t["jaxid"], 0.0),
            jax_s=t["jaxid"],
            jax_us_per_sample=1e6 * t["jaxid"] / N,
            jax_cpu_us_per_sample=1e6 * cpu["jaxid"] / N,
            write_us_per_sample=1e6 * t["write"] / N,
        )
        if pin is not None:
            k = N // 2
            err = np.abs(np.asarray(Y[k]) - pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])).max()
            row.update(
                pin_s=t["pin"],
                pin_us_per_sample=1e6 * t["pin"] / N,
                ratio=t["pin"] / t["jaxid"],
                ratio_cpu=cpu["pin"] / cpu["jaxid"],
                max_abs_diff=float(err),
            )
            if not no_cpp:
                cpp = pinocchio_cpp.run(model, q, qd, qdd, repeat=args.repeat)
                row.update(
                    cpp_us_per_sample=cpp["us_per_sample"]["regressor"],
                    cpp_ratio=cpp["us_per_sample"]["regressor"] / row["jax_us_per_sample"],
                    cpp_stacked_us_per_sample=cpp["us_per_sample"]["regressor_stacked"],
                    cpp_stacked_ratio=cpp["us_per_sample"]["regressor_stacked"] / row["jax_us_per_sample"],
                    cpp_max_abs_diff=float(np.abs(cpp["Y"] - np.asarray(Y[0])).max()),
                )
        row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append(row)
    print(f"devices: {jax.devices()}; medians of interleaved rounds (jaxid, write floor, Pinocchio's Python loop)")
    print(
        f"{'N':>8} {'rounds':>6} {'load':>10} {'compile s':>10} {'jaxid s':>9} {'pin s':>9} {'pin/jaxid':>10} "
        f"{'CPU ratio':>10} {'us/sample':>10} {'CPU us':>7} {'write us':>9} {'peak MB':>8} {'C++ us':>8} {'C++/jaxid':>10}"
        f" {'C++ W us':>9} {'C++ W/jaxid':>12}"
    )
    for r in rows:
        print(
            f"{r['N']:>8} {r['rounds']:>6} {r['load']:>10} {r['compile_s']:>10.2f} {r['jax_s']:>9.4f} "
            f"{r.get('pin_s', float('nan')):>9.4f} {r.get('ratio', float('nan')):>10.2f} "
            f"{r.get('ratio_cpu', float('nan')):>10.2f} {r['jax_us_per_sample']:>10.2f} "
            f"{r['jax_cpu_us_per_sample']:>7.2f} {r['write_us_per_sample']:>9.2f} {r['peak_rss_mb']:>8.0f} "
            f"{r.get('cpp_us_per_sample', float('nan')):>8.2f} {r.get('cpp_ratio', float('nan')):>10.2f}"
            f" {r.get('cpp_stacked_us_per_sample', float('nan')):>9.2f} {r.get('cpp_stacked_ratio', float('nan')):>12.2f}"
        )
    if no_cpp:
        print(f"C++ columns empty: {no_cpp}")
    print(
        json.dumps(
            dict(
                benchmark="regressor",
                robot="ur5",
                commit=commit,
                threads=blas_threads.describe(),
                cpp=no_cpp or "built",
                devices=[str(d) for d in jax.devices()],
                rows=rows,
            )
        )
    )


if __name__ == "__main__":
    main()
