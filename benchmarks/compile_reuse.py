"""Compiled-program reuse across record lengths and models, in one process (issue 17 item 1).

(a) The UR5 regressor and inverse dynamics on records of several lengths, first call each:
    bucketed (``jaxid.regressor``/``jaxid.rnea``: the batch padded to ``batching.bucket(N)``)
    against the same functions compiled per length (``eqx.filter_jit`` of the unpadded call,
    the behaviour before buckets). Lengths inside one bucket reuse its program.
(b) ``Robot.from_dh`` for DH tables of 2 to 9 rows: one DH-row program for every table.

Prints wall seconds per call and the totals' ratio (per-length / bucketed). Fresh
in-memory caches, no persistent cache (``JAXID_CACHE_DIR`` is not enabled here).

    python benchmarks/compile_reuse.py [--lengths 1500,1700,1900,2500,2900]

Measured (2026-12-01, idle 2-core machine): (a) bucketed 4.59, 0.18, 0.30, 4.68, 0.33 s against
4.13, 4.43, 4.38, 4.99, 4.73 s compiled per length: 10.1 vs 22.7 s, 2.25x; (b) 0.40-0.53 s per new
table size (the DH-row program is shared; what remains is the Robot's own eager ops of shape n),
0.035 s for a size already seen.
"""

from __future__ import annotations

import argparse
import time

import equinox as eqx
import jax
import numpy as np

import jaxid
from jaxid.dynamics.batching import batched, bucket
from jaxid.dynamics.terms import _torque
from jaxid.identification.regressor import _regressor


def timed(fn):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="1500,1700,1900,2500,2900")
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    robot = jaxid.models.ur5(joint_terms=("fv", "fc"))
    theta = robot.parameter_vector()
    # The same per-sample functions, compiled for each length (no padding).
    plain_Y = eqx.filter_jit(
        lambda m, q, qd, qdd: batched(lambda r, a, b, c: _regressor(r, theta, a, b, c), m, q, qd, qdd)
    )
    plain_tau = eqx.filter_jit(lambda m, q, qd, qdd: batched(_torque, m, q, qd, qdd))
    rng = np.random.default_rng(0)
    rows, totals = [], {"bucketed": 0.0, "per length": 0.0}
    for N in lengths:
        q, qd, qdd = rng.normal(size=(3, N, 6))
        tb = timed(lambda: (jaxid.regressor(robot, q, qd, qdd), jaxid.rnea(robot, q, qd, qdd)))
        tp = timed(lambda: (plain_Y(robot, q, qd, qdd), plain_tau(robot, q, qd, qdd)))
        totals["bucketed"] += tb
        totals["per length"] += tp
        rows.append((N, bucket(N), tb, tp))
    print("(a) UR5 regressor + rnea, first call per record length, wall s")
    print(f"{'N':>7} {'bucket':>7} {'bucketed':>9} {'per length':>11}")
    for N, B, tb, tp in rows:
        print(f"{N:>7} {B:>7} {tb:>9.2f} {tp:>11.2f}")
    print(
        f"total: bucketed {totals['bucketed']:.1f} s, per length {totals['per length']:.1f} s, "
        f"ratio {totals['per length'] / totals['bucketed']:.2f}x"
    )

    print("\n(b) Robot.from_dh, first call per table size, wall s")
    for n in range(2, 10):
        table = np.column_stack(
            [np.zeros(n), rng.uniform(0, 0.3, n), rng.uniform(0, 0.5, n), rng.uniform(-1.6, 1.6, n)]
        )
        masses, coms = rng.uniform(1, 5, n), rng.normal(size=(n, 3)) * 0.05
        # Solid boxes: principal moments that meet the triangle inequality.
        inertias = np.stack([np.diag(m / 12 * (lambda e: e.sum() - e)(rng.uniform(0.01, 0.04, 3))) for m in masses])
        t = timed(lambda: jaxid.Robot.from_dh(table, masses=masses, coms=coms, inertias=inertias).placements)
        print(f"  {n} rows: {t:.3f}")


if __name__ == "__main__":
    main()
