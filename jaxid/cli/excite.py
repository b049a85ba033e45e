"""`jaxid excite`: optimise an excitation trajectory and write it as a dataset file."""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import add_json_argument, add_model_arguments, emit_json, model_from_args, refuse_overwrite

EXAMPLE = """examples:
  jaxid excite --robot ur5 -o traj.csv
  jaxid excite --urdf arm.urdf --tip-link link7 --harmonics 4 --starts 16 -o traj.csv --json -
"""


def register(sub):
    p = sub.add_parser(
        "excite", help="optimise an excitation trajectory (Fourier series) for identification",
        description="Optimise a zero-start Fourier excitation for the condition number (or "
                    "D-optimality) of the column-normalised base regressor, within the joint "
                    "position, velocity, acceleration and torque limits, and write it sampled "
                    "as CSV or NPZ (t, q, qd, qdd and the nominal model's tau; the base frequency and "
                    "harmonics in the sidecar PATH.json). Exit status 1 "
                    "when no start meets the limits.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_arguments(p)
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="trajectory file (.csv or .npz)")
    p.add_argument("--harmonics", type=int, default=5, help="Fourier harmonics, >= 2 (default 5)")
    p.add_argument("--base-frequency", type=float, default=0.05, metavar="HZ",
                   help="base frequency in Hz; the period is its inverse (default 0.05, T = 20 s)")
    p.add_argument("--objective", choices=("cond", "logdet"), default="cond",
                   help="condition number or D-optimality (-log det) (default cond)")
    p.add_argument("--starts", type=int, default=8, help="random starts optimised together (default 8)")
    p.add_argument("--steps", type=int, default=300, help="optimiser steps (default 300)")
    p.add_argument("--learning-rate", type=float, default=0.02, help="Adam's rate (default 0.02)")
    p.add_argument("--margin", type=float, default=0.05,
                   help="fraction of each limit kept free while optimising (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    p.add_argument("--fs", type=float, default=100.0, metavar="HZ",
                   help="sample rate of the written trajectory (default 100 Hz)")
    p.add_argument("--periods", type=int, default=1, help="periods written (default 1)")
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import jaxid
    from jaxid import data
    from jaxid.excitation.optimize import LIMITS, optimize

    if not args.output.lower().endswith((".csv", ".npz")):
        raise UserError(f"output {args.output!r} must end in .csv or .npz")
    # Checked before the optimisation, which takes minutes, rather than after it.
    if not (np.isfinite(args.fs) and args.fs > 0):
        raise UserError(f"--fs must be a finite sample rate > 0 Hz, got {args.fs}")
    if args.periods < 1:
        raise UserError(f"--periods must be >= 1, got {args.periods}")
    refuse_overwrite([], [args.output, args.json])
    robot, description = model_from_args(args)
    res = optimize(robot, harmonics=args.harmonics, base_frequency=args.base_frequency,
                   objective=args.objective, n_starts=args.starts, steps=args.steps,
                   learning_rate=args.learning_rate, margin=args.margin, seed=args.seed,
                   progress=not args.quiet)
    t, q, qd, qdd = res.trajectory(args.fs, args.periods)
    ds = data.from_arrays(t, q, jaxid.rnea(robot, q, qd, qdd), qd, qdd, source="excitation")
    ds = dataclasses.replace(ds, base_frequency=res.omega_f / (2 * np.pi), harmonics=int(res.a.shape[1]))
    data.write(ds, args.output)

    figures = dict(model=description, joints=robot.n, base_parameters=int(res.columns.size),
                   output=args.output, samples=len(t), fs_hz=args.fs, **res.summary(),
                   coefficients=dict(a=res.a.tolist(), b=res.b.tolist(), q0=res.q0.tolist(),
                                     omega_f=res.omega_f))
    if args.json is not None and emit_json(figures, args.json):
        return 0 if res.feasible else 1
    s = figures
    print(f"{robot.name}: {robot.n} joints, {s['base_parameters']} base parameters; "
          f"{s['harmonics']} harmonics at {s['base_frequency_hz']:g} Hz (T = {s['period_s']:g} s); "
          f"{s['n_starts']} starts x {s['steps']} steps, seed {args.seed}")
    print(f"  cond (column-normalised base regressor): optimised {s['cond']:.4g}   "
          f"random starts: median {s['random_cond_median']:.4g}, best {s['random_cond_best']:.4g}")
    print(f"  -log det (D-optimality): {s['logdet']:.4g}")
    print(f"  {'limit':<13}{'max usage':>10}{'violation':>12}")
    fields = dict(position="q_max", velocity="qd_max", acceleration="qdd_max", torque="tau_max")
    for k in LIMITS:
        if not np.any(np.isfinite(np.asarray(getattr(robot, fields[k])))):
            print(f"  {k:<13}{'no limit':>10}")
            continue
        print(f"  {k:<13}{100 * s['usage'][k]:>9.1f}%{s['violation'][k]:>12.3g} {LIMITS[k]}")
    verdict = "all limits met" if s["feasible"] else "LIMITS VIOLATED (no start met them)"
    print(f"  {verdict}; optimised in {s['time_s']:.1f} s")
    print(f"wrote {args.output}: {len(t)} samples at {args.fs:g} Hz (base frequency and harmonics in "
          f"{args.output}.json)")
    return 0 if s["feasible"] else 1
