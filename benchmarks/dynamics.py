"""Inverse dynamics, mass matrix and regressor: jaxid's public functions vs Pinocchio, n = 2 .. 20.

Planar n-R chains (``jaxid.models.planar(n)``), N random states. jaxid as users call it:
``jaxid.rnea(robot, q, qd, qdd)``, ``jaxid.mass_matrix(robot, q)``, ``jaxid.regressor(robot,
q, qd, qdd)`` on numpy (N, n) arrays (the exported functions are jitted and take a batch by a
leading axis, vmapped in chunks and padded to a bucket: docs/batches.md, docs/design.md);
then, for ``rnea.RECURSIVE_FROM`` and ``CRBA_WIDE_FROM``, the library's two inner formulations
jitted and vmapped directly on device arrays: the wide one (ancestor matrix, O(n^2) per sample,
few wide ops; mass matrix by ``jax.jacfwd`` of it in qdd) and the recursive one (Featherstone's
RNEA and CRBA, O(n)). Pinocchio (``pin.rnea``, ``pin.crba``, ``pin.computeJointTorqueRegressor``)
in a Python loop, one sample at a time, as identification scripts call it. All of these
interleaved round by round in one process, medians of --repeat (``timing.interleaved_medians``),
wall time; then the public functions and Pinocchio's loops once more with this process's CPU time
(XLA runs on every usable core, Pinocchio on one).
Then Pinocchio's C++ loop (``benchmarks/pinocchio_cpp.py``, best of --repeat inside the program)
on the same model and states, where it builds; where not, the output says why. Printed: the
BLAS threads (``blas_threads.py``), load average, us/sample and ratios (Pinocchio / jaxid: > 1,
jaxid faster).
Usage: python benchmarks/dynamics.py [--n 2 4 6 8 12 16 20] [--samples 2000] [--repeat 5]

Last figures (2026-12-06 13:47, at 084ba75, ``--n 2 6 12 20 --samples 2000 --repeat 9``, load
3.6-4.2, 2 shared cores, OPENBLAS_NUM_THREADS=2; us/sample of the public functions, then
Pinocchio / jaxid: Python loop wall, C++ loop, Python loop CPU; > 1: jaxid faster):

      n  rnea     M      Y   pin Py rnea  M    Y   C++ rnea  M    Y   CPU rnea  M    Y
      2  0.73  0.40   0.92       1.84  2.59 1.55      0.34 0.27 0.29      1.77 2.23 1.23
      6  2.06  1.56   3.47       0.97  0.95 1.17      0.36 0.24 0.39      0.72 0.76 0.83
     12  3.00  3.73  11.11       1.01  0.73 1.01      0.53 0.27 0.40      0.86 0.61 0.78
     20  5.58  7.97  62.49       0.87  0.71 0.47      0.48 0.23 0.17      1.10 0.73 0.46

Inner formulations, same run (us/sample, wide / recursive RNEA; jacfwd / CRBA mass matrix):
n = 2 0.50 / 0.35, 0.42 / 0.22; n = 6 1.65 / 0.96, 2.44 / 0.99; n = 12 4.54 / 2.14, 15.48 /
4.04; n = 20 30.0 / 4.96, 71.4 / 9.42. The recursive RNEA is the faster at every n here,
also below ``RECURSIVE_FROM`` = 8, where the public ``jaxid.rnea`` takes the wide one (n = 6:
2.06 us public vs 0.96 recursive): that threshold wants re-measuring (not changed here).

Earlier (f837483, 2026-12-02; internal formulations only, not the public functions):
2000 samples, --repeat 7, idle 2-core machine; us/sample; ratios > 1: jaxid faster; the CRBA
with 3x3 composite inertias, Robot.mass_matrix at every n:

      n  rnea auto  M crba  pin Py / rnea  pin Py / M  pin C++ / rnea  pin C++ / M
      2       0.76    0.30           2.47        4.61            0.50         0.68
      6       2.48    1.20           1.53        2.46            0.46         0.53
      8       2.60    2.39           1.68        1.58            0.55         0.36
     12       3.75    5.23           1.47        1.00            0.65         0.30
     16       5.43    6.95           1.14        0.94            0.56         0.29
     20       5.07   10.76           1.19        0.68            0.77         0.29

Since then the CRBA pairs its columns in the base frame from ``rnea.CRBA_WIDE_FROM`` = 9 joints
(one masked product instead of O(n^2) carried 6-vectors). Side by side in one process (2000
samples, interleaved medians of 15, load 3.6-4.3, us/sample, carried / wide / Pinocchio's Python
loop): n = 12: 4.48 / 3.07 / 5.18; n = 16: 7.14 / 4.24 / 6.53; n = 20: 9.41 / 6.23 / 7.68, i.e.
the mass matrix at n = 20 went from 0.82x to 1.23x the Python loop (CPU time: 0.65x to 1.27x).

Its row in benchmarks/README.md lists its last figures; cited by ``jaxid/dynamics/rnea.py``
(``RECURSIVE_FROM``, ``CRBA_WIDE_FROM``) and the CHANGELOG.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time

import blas_threads  # benchmarks/blas_threads.py: sets the BLAS threads before numpy loads
import jax
import jax.numpy as jnp
import numpy as np
import pinocchio_cpp  # benchmarks/pinocchio_cpp.py: Pinocchio's C++ loop, where it builds
from timing import interleaved_medians  # benchmarks/timing.py (this folder is on sys.path)

import jaxid
from jaxid.dynamics import rnea


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[2, 4, 6, 8, 12, 16, 20])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} at {commit or '?'}; {blas_threads.describe()}")
    try:
        import pinocchio as pin
        from regressor import pinocchio_model  # benchmarks/regressor.py (this folder is on sys.path)
    except ImportError:
        pin = None
        print("pinocchio not installed: jaxid only")
    no_cpp = pinocchio_cpp.why_not() if pin is not None else "no pinocchio"
    if no_cpp:
        print(f"Pinocchio's C++ loop not run: {no_cpp}")
    rows = []
    S = args.samples
    for n in args.n:
        robot = jaxid.models.planar(n)
        qn, qdn, qddn = (np.random.default_rng(k).normal(size=(S, n)) for k in range(3))
        q, qd, qdd = (jnp.asarray(x) for x in (qn, qdn, qddn))
        zero = jnp.zeros(n)
        batch = lambda f: jax.jit(jax.vmap(f))
        wide = batch(lambda q, qd, qdd: rnea.rnea_wide(robot, robot.inertial, q, qd, qdd))
        rec = batch(lambda q, qd, qdd: rnea.rnea_recursive(robot, robot.inertial, q, qd, qdd))
        M_wide = batch(lambda q: jax.jacfwd(lambda x: rnea.rnea_wide(robot, robot.inertial, q, zero, x))(zero))
        M_rec = batch(lambda q: rnea.crba(robot, robot.inertial, q))
        fns = {
            "jaxid.rnea": lambda: jaxid.rnea(robot, qn, qdn, qddn),
            "jaxid.mass_matrix": lambda: jaxid.mass_matrix(robot, qn),
            "jaxid.regressor": lambda: jaxid.regressor(robot, qn, qdn, qddn),
            "rnea wide": lambda: wide(q, qd, qdd),
            "rnea recursive": lambda: rec(q, qd, qdd),
            "M jacfwd(wide)": lambda: M_wide(q),
            "M crba": lambda: M_rec(q),
        }
        if pin is not None:
            model = pinocchio_model(robot)
            data = model.createData()
            fns["pin rnea loop"] = lambda: [pin.rnea(model, data, qn[k], qdn[k], qddn[k]) for k in range(S)]
            fns["pin crba loop"] = lambda: [pin.crba(model, data, qn[k]) for k in range(S)]
            fns["pin regressor loop"] = lambda: [
                pin.computeJointTorqueRegressor(model, data, qn[k], qdn[k], qddn[k]) for k in range(S)
            ]
            tau = np.asarray(jaxid.rnea(robot, qn, qdn, qddn))
            err = np.abs(tau[0] - pin.rnea(model, data, qn[0], qdn[0], qddn[0])).max()
        load0 = os.getloadavg()[0]
        t = interleaved_medians(fns, args.repeat)
        public = [k for k in fns if k.startswith(("jaxid.", "pin "))]
        cpu = interleaved_medians({k: fns[k] for k in public}, args.repeat, clock=time.process_time)
        us = {k: 1e6 * v / S for k, v in t.items()}
        row = dict(
            n=n,
            load=f"{load0:.2f}-{os.getloadavg()[0]:.2f}",
            us_per_sample=us,
            auto="recursive" if n >= rnea.RECURSIVE_FROM else "wide",
            wide_over_recursive=t["rnea wide"] / t["rnea recursive"],
            M_jacfwd_over_crba=t["M jacfwd(wide)"] / t["M crba"],
        )
        if pin is not None:
            row.update(
                pin_rnea_over_jaxid=t["pin rnea loop"] / t["jaxid.rnea"],
                pin_crba_over_jaxid=t["pin crba loop"] / t["jaxid.mass_matrix"],
                pin_regressor_over_jaxid=t["pin regressor loop"] / t["jaxid.regressor"],
                cpu_pin_over_jaxid=[
                    cpu[f"pin {a} loop"] / cpu[f"jaxid.{b}"]
                    for a, b in (("rnea", "rnea"), ("crba", "mass_matrix"), ("regressor", "regressor"))
                ],
                max_abs_diff=float(err),
            )
        if not no_cpp:  # timed in C++ after the Python loops, on the same model and states
            cpp = pinocchio_cpp.run(model, qn, qdn, qddn, repeat=args.repeat)
            us.update({f"pin C++ {k}": v for k, v in cpp["us_per_sample"].items()})
            row.update(
                cpp_rnea_over_jaxid=us["pin C++ rnea"] / us["jaxid.rnea"],
                cpp_crba_over_jaxid=us["pin C++ crba"] / us["jaxid.mass_matrix"],
                cpp_regressor_over_jaxid=us["pin C++ regressor"] / us["jaxid.regressor"],
                cpp_max_abs_diff=float(np.abs(cpp["tau"] - tau[0]).max()),
            )
        rows.append(row)
    nan = float("nan")
    print(f"us/sample, {S} samples, interleaved medians of {args.repeat}; Pinocchio / jaxid (> 1: jaxid faster)")
    print(
        f"{'n':>3} {'load':>10} {'rnea':>7} {'M':>7} {'Y':>7} {'pin rnea':>9} {'pin M':>7} {'pin Y':>7} "
        f"{'C++ rnea':>9} {'C++ M':>7} {'C++ Y':>7}  CPU: pin rnea, M, Y"
    )
    for r in rows:
        u = r["us_per_sample"]
        print(
            f"{r['n']:>3} {r['load']:>10} {u['jaxid.rnea']:>7.2f} {u['jaxid.mass_matrix']:>7.2f} "
            f"{u['jaxid.regressor']:>7.2f} {r.get('pin_rnea_over_jaxid', nan):>9.2f} "
            f"{r.get('pin_crba_over_jaxid', nan):>7.2f} {r.get('pin_regressor_over_jaxid', nan):>7.2f} "
            f"{r.get('cpp_rnea_over_jaxid', nan):>9.2f} {r.get('cpp_crba_over_jaxid', nan):>7.2f} "
            f"{r.get('cpp_regressor_over_jaxid', nan):>7.2f}  "
            + " ".join(f"{x:.2f}" for x in r.get("cpu_pin_over_jaxid", []))
        )
    if no_cpp:
        print(f"C++ columns empty: {no_cpp}")
    print("inner formulations (jitted + vmapped on device arrays), us/sample")
    print(f"{'n':>3} {'wide':>7} {'rec':>7} {'wide/rec':>9} {'M jac':>7} {'M crba':>7} {'jac/crba':>9} {'auto':>10}")
    for r in rows:
        u = r["us_per_sample"]
        print(
            f"{r['n']:>3} {u['rnea wide']:>7.2f} {u['rnea recursive']:>7.2f} {r['wide_over_recursive']:>9.2f} "
            f"{u['M jacfwd(wide)']:>7.2f} {u['M crba']:>7.2f} {r['M_jacfwd_over_crba']:>9.2f} {r['auto']:>10}"
        )
    print(
        json.dumps(
            dict(
                benchmark="dynamics",
                commit=commit,
                threads=blas_threads.describe(),
                cpp=no_cpp or "built",
                devices=[str(d) for d in jax.devices()],
                samples=S,
                recursive_from=rnea.RECURSIVE_FROM,
                rows=rows,
            )
        )
    )


if __name__ == "__main__":
    main()
