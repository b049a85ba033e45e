"""Throughput of the jitted, batched regressor vs Pinocchio's computeJointTorqueRegressor.

UR5 (10 inertial parameters per link), N = 1,000 / 10,000 / 100,000 random states.
Both run in this process; Pinocchio is called in a Python loop, one sample at a time,
as identification scripts built on it do, and (where g++ and Eigen are present) in its C++
loop (``benchmarks/pinocchio_cpp.py``). Prints a table and JSON:
  compile_s: first call (trace + XLA compile + run) minus one steady run
  jax_s, pin_s: best of repeated runs; ratio = pin_s / jax_s (> 1: jaxid is faster)
  write_us_per_sample: one jitted call that only writes an array of Y's shape (allocation
    and first-touch page faults included): the floor under any batched regressor here
  peak_rss_mb: the process's peak resident memory after each size.
Usage: python benchmarks/regressor.py [--sizes 1000 10000 100000] [--repeat 3]

Its row in benchmarks/README.md lists its last figures; cited by the CHANGELOG; dynamics.py and
pinocchio_cpp.py import its ``pinocchio_model``.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import jax
import jax.numpy as jnp
import numpy as np
import pinocchio_cpp  # benchmarks/pinocchio_cpp.py: Pinocchio's C++ loop, where it builds
from timing import best_of  # benchmarks/timing.py (the script's folder is on sys.path)

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
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    robot = jaxid.models.ur5()
    try:
        import pinocchio as pin

        model = pinocchio_model(robot)
        data = model.createData()
    except ImportError:
        pin = None
    rng = np.random.default_rng(0)
    rows = []
    for N in args.sizes:
        q, qd, qdd = (rng.normal(size=(N, robot.n)) for _ in range(3))
        jax.clear_caches()
        t0 = time.perf_counter()
        Y = jax.block_until_ready(jaxid.regressor(robot, q, qd, qdd))
        first = time.perf_counter() - t0
        repeat = max(args.repeat, 100_000 // N)  # small sizes: more runs against timer noise
        jax_s = best_of(lambda: jaxid.regressor(robot, q, qd, qdd), repeat)
        write = jax.jit(lambda x: jnp.broadcast_to(x[:, :, None], Y.shape[:2] + (1,)) * jnp.ones(Y.shape[2]))
        write_s = best_of(lambda: write(q), repeat)
        row = dict(
            N=N,
            compile_s=max(first - jax_s, 0.0),
            jax_s=jax_s,
            jax_us_per_sample=1e6 * jax_s / N,
            write_us_per_sample=1e6 * write_s / N,
        )
        if pin is not None:

            def loop():
                for k in range(N):
                    pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])

            pin_s = best_of(loop, repeat)
            k = N // 2
            err = np.abs(np.asarray(Y[k]) - pin.computeJointTorqueRegressor(model, data, q[k], qd[k], qdd[k])).max()
            row.update(pin_s=pin_s, pin_us_per_sample=1e6 * pin_s / N, ratio=pin_s / jax_s, max_abs_diff=float(err))
            if not pinocchio_cpp.available():
                cpp = pinocchio_cpp.run(model, q, qd, qdd, repeat=args.repeat)
                row.update(
                    cpp_us_per_sample=cpp["us_per_sample"]["regressor"],
                    cpp_ratio=cpp["us_per_sample"]["regressor"] / row["jax_us_per_sample"],
                    cpp_max_abs_diff=float(np.abs(cpp["Y"] - np.asarray(Y[0])).max()),
                )
        row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append(row)
    print(f"devices: {jax.devices()}")
    print(
        f"{'N':>8} {'compile s':>10} {'jaxid s':>9} {'pin s':>9} {'pin/jaxid':>10} {'us/sample':>10} "
        f"{'write us':>9} {'peak MB':>8} {'C++ us':>8} {'C++/jaxid':>10}"
    )
    for r in rows:
        print(
            f"{r['N']:>8} {r['compile_s']:>10.2f} {r['jax_s']:>9.4f} {r.get('pin_s', float('nan')):>9.4f} "
            f"{r.get('ratio', float('nan')):>10.2f} {r['jax_us_per_sample']:>10.2f} "
            f"{r['write_us_per_sample']:>9.2f} {r['peak_rss_mb']:>8.0f} {r.get('cpp_us_per_sample', float('nan')):>8.2f} "
            f"{r.get('cpp_ratio', float('nan')):>10.2f}"
        )
    print(json.dumps(dict(benchmark="regressor", robot="ur5", devices=[str(d) for d in jax.devices()], rows=rows)))


if __name__ == "__main__":
    main()
