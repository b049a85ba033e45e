"""Inverse dynamics and mass matrix: jaxid's two formulations vs Pinocchio, n = 2 .. 20.

Planar n-R chains (``jaxid.models.planar(n)``), N random states, batched (jitted, vmapped)
in jaxid; Pinocchio (``pin.rnea``, ``pin.crba``) in a Python loop, one sample at a time, as
identification scripts call it. Both jaxid formulations are timed: the wide one (ancestor
matrix, O(n^2) per sample, few wide ops; mass matrix by ``jax.jacfwd`` of it in qdd) and
the recursive one (Featherstone's RNEA and CRBA, O(n)); ``jaxid.dynamics.rnea.RECURSIVE_FROM``
chooses the RNEA by n ("auto"); the mass matrix is the CRBA at every n. All timings interleaved in one process, medians of --repeat.
Pinocchio's C++ loop (``benchmarks/pinocchio_cpp.py``; needs g++ and Eigen) on the same model
and states where it builds. Printed: us/sample and ratios (> 1: the first named is slower).
Usage: python benchmarks/dynamics.py [--n 2 4 6 8 12 16 20] [--samples 2000] [--repeat 5]

Measured (2000 samples, --repeat 7, idle 2-core machine; us/sample; ratios > 1: jaxid faster;
the CRBA with 3x3 composite inertias, Robot.mass_matrix at every n):

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
    try:
        import pinocchio as pin
        from regressor import pinocchio_model  # benchmarks/regressor.py (this folder is on sys.path)
    except ImportError:
        pin = None
        print("pinocchio not installed: jaxid's two formulations only")
    no_cpp = pinocchio_cpp.available() if pin is not None else "no pinocchio"
    if no_cpp:
        print(f"Pinocchio's C++ loop skipped: {no_cpp}")
    rows = []
    for n in args.n:
        robot = jaxid.models.planar(n)
        q, qd, qdd = (jnp.asarray(np.random.default_rng(k).normal(size=(args.samples, n))) for k in range(3))
        zero = jnp.zeros(n)
        batch = lambda f: jax.jit(jax.vmap(f))
        wide = batch(lambda q, qd, qdd: rnea.rnea_wide(robot, robot.inertial, q, qd, qdd))
        rec = batch(lambda q, qd, qdd: rnea.rnea_recursive(robot, robot.inertial, q, qd, qdd))
        M_wide = batch(lambda q: jax.jacfwd(lambda x: rnea.rnea_wide(robot, robot.inertial, q, zero, x))(zero))
        M_rec = batch(lambda q: rnea.crba(robot, robot.inertial, q))
        fns = {
            "rnea wide": lambda: wide(q, qd, qdd),
            "rnea recursive": lambda: rec(q, qd, qdd),
            "M jacfwd(wide)": lambda: M_wide(q),
            "M crba": lambda: M_rec(q),
        }
        if pin is not None:
            model = pinocchio_model(robot)
            data = model.createData()
            qn, qdn, qddn = (np.asarray(x) for x in (q, qd, qdd))
            fns["pin rnea loop"] = lambda: [pin.rnea(model, data, qn[k], qdn[k], qddn[k]) for k in range(args.samples)]
            fns["pin crba loop"] = lambda: [pin.crba(model, data, qn[k]) for k in range(args.samples)]
            err = np.abs(np.asarray(rec(q, qd, qdd))[0] - pin.rnea(model, data, qn[0], qdn[0], qddn[0])).max()
        t = interleaved_medians(fns, args.repeat)
        auto = "recursive" if n >= rnea.RECURSIVE_FROM else "wide"
        row = dict(
            n=n,
            us_per_sample={k: 1e6 * v / args.samples for k, v in t.items()},
            auto=auto,
            wide_over_recursive=t["rnea wide"] / t["rnea recursive"],
            M_jacfwd_over_crba=t["M jacfwd(wide)"] / t["M crba"],
        )
        if pin is not None:
            row.update(
                pin_rnea_over_jaxid=t["pin rnea loop"] / t[f"rnea {auto}"],
                pin_crba_over_jaxid=t["pin crba loop"] / t["M crba"],  # Robot.mass_matrix: CRBA at every n
                max_abs_diff=float(err),
            )
        if not no_cpp:  # timed in C++ after the Python loops, on the same model and states
            cpp = pinocchio_cpp.run(model, qn, qdn, qddn, repeat=args.repeat)
            row["us_per_sample"].update({f"pin C++ {k}": v for k, v in cpp["us_per_sample"].items()})
            row.update(
                cpp_rnea_over_jaxid=cpp["us_per_sample"]["rnea"] / row["us_per_sample"][f"rnea {auto}"],
                cpp_crba_over_jaxid=cpp["us_per_sample"]["crba"] / row["us_per_sample"]["M crba"],
                cpp_max_abs_diff=float(np.abs(cpp["tau"] - np.asarray(rec(q, qd, qdd))[0]).max()),
            )
        rows.append(row)
    print(
        f"{'n':>3} {'wide us':>8} {'rec us':>8} {'wide/rec':>9} {'M jac us':>9} {'crba us':>8} {'jac/crba':>9} "
        f"{'auto':>10} {'pin/jaxid rnea':>15} {'pin/jaxid M':>12} {'C++/jaxid rnea':>15} {'C++/jaxid M':>12}"
    )
    for r in rows:
        u = r["us_per_sample"]
        print(
            f"{r['n']:>3} {u['rnea wide']:>8.2f} {u['rnea recursive']:>8.2f} {r['wide_over_recursive']:>9.2f} "
            f"{u['M jacfwd(wide)']:>9.2f} {u['M crba']:>8.2f} {r['M_jacfwd_over_crba']:>9.2f} {r['auto']:>10} "
            f"{r.get('pin_rnea_over_jaxid', float('nan')):>15.2f} {r.get('pin_crba_over_jaxid', float('nan')):>12.2f} "
            f"{r.get('cpp_rnea_over_jaxid', float('nan')):>15.2f} {r.get('cpp_crba_over_jaxid', float('nan')):>12.2f}"
        )
    print(
        json.dumps(
            dict(
                benchmark="dynamics",
                devices=[str(d) for d in jax.devices()],
                samples=args.samples,
                recursive_from=rnea.RECURSIVE_FROM,
                rows=rows,
            )
        )
    )


if __name__ == "__main__":
    main()
