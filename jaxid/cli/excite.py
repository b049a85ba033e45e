"""`jaxid excite`: optimise an excitation trajectory and write it as a dataset file."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import (
    add_json_argument,
    add_model_arguments,
    add_payload_arguments,
    emit_json,
    model_from_args,
    payload_from_args,
    refuse_overwrite,
)

EXAMPLE = """examples:
  jaxid excite --robot ur5 -o traj.csv --preview traj.png
  jaxid excite --robot ur5 --home 0,-1.57,1.57,-1.57,-1.57,0 --obstacle 0.3,-0.8,0,0.8,0.8,0.4 -o traj.csv
  jaxid excite --urdf arm.urdf --srdf arm.srdf --tip-link link7 --harmonics 4 --starts 16 -o traj.csv --json -

The trajectory starts and ends at rest at the home pose (default: the centres of the
position ranges). Collision geometry: the built-in UR5's capsules (jaxid.model.geometry.ur5,
with its conservative ranges UR5_RANGES instead of the +-2 pi limits); a URDF's <collision>
elements (meshes: their bounding capsule; unreadable ones: skeleton capsules of
--capsule-radius); other built-in robots have none. Every limit and constraint is checked
on a dense grid (10x the optimiser's); an infeasible trajectory is not written (exit 1)
unless --allow-infeasible.
"""


def _floats(text, count, what):
    from jaxid.cli import UserError

    try:
        v = np.array([float(x) for x in text.split(",")])
    except ValueError:
        v = np.array([])
    if v.size != count or not np.all(np.isfinite(v)):
        raise UserError(f"{what} must be {count} comma-separated finite numbers, got {text!r}")
    return v


def register(sub):
    p = sub.add_parser(
        "excite",
        help="optimise an excitation trajectory (Fourier series) for identification",
        description="Optimise a Fourier excitation that starts and ends at rest at a home pose "
        "for the condition number (or D-optimality) of the column-normalised base "
        "regressor, within the joint position, velocity, acceleration, jerk and torque "
        "limits and clear of self-collision, the floor, a workspace box and obstacles "
        "(link capsules), and write it sampled as CSV or NPZ (t, q, qd, qdd and the "
        "nominal model's tau; the base frequency and harmonics in the sidecar PATH.json). Exit "
        "status 1, and nothing written, when no start meets "
        "every limit and constraint on the dense check.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_arguments(p)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="PATH",
        help="trajectory file: .csv or .npz (t, q, qd, qdd, tau), or .json, a ROS 2 "
        "trajectory_msgs/JointTrajectory (joint_names, points with positions, velocities, "
        "accelerations, time_from_start)",
    )
    p.add_argument("--harmonics", type=int, default=5, help="Fourier harmonics, >= 2 (default 5)")
    p.add_argument(
        "--base-frequency",
        type=float,
        default=0.05,
        metavar="HZ",
        help="base frequency in Hz; the period is its inverse (default 0.05, T = 20 s)",
    )
    p.add_argument(
        "--objective",
        choices=("cond", "logdet", "information"),
        default=None,
        help="condition number, D-optimality of the column-normalised regressor (-log det G), or "
        "of the regressor itself (-log det W^T W, which also rewards larger torques) (default "
        "cond; information with --payload)",
    )
    p.add_argument(
        "--payload",
        action="store_true",
        help="design the excitation for a payload on the flange ('jaxid payload'): its 10 inertial "
        "parameters instead of the robot's base parameters, each joint's torque weighted by "
        "the inverse of its torque limit (a noise proportional to it); needs --payload-mass",
    )
    add_payload_arguments(
        p,
        "the load carried along the trajectory (its largest expected mass; a point mass at "
        "--payload-com unless --payload-box): the torque limits are checked, and the file's "
        "tau computed, with it attached",
    )
    p.add_argument("--starts", type=int, default=8, help="random starts optimised together (default 8)")
    p.add_argument("--steps", type=int, default=300, help="optimiser steps (default 300)")
    p.add_argument(
        "--learning-rate",
        type=float,
        default=0.02,
        help="Adam's rate, in units of each harmonic's admissible amplitude (default 0.02)",
    )
    p.add_argument(
        "--margin", type=float, default=0.05, help="fraction of each limit kept free while optimising (default 0.05)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    p.add_argument(
        "--fs",
        "--rate",
        dest="fs",
        type=float,
        default=100.0,
        metavar="HZ",
        help="sample rate of the written trajectory, e.g. 125 or 500 for a UR servoj loop (default 100 Hz)",
    )
    p.add_argument("--home", metavar="Q1,...", help="rest pose at both ends, rad (default: the range centres)")
    p.add_argument(
        "--start-from",
        metavar="Q1,...",
        help="the robot's current pose, rad: the written trajectory begins with a rest-to-rest "
        "quintic move from it to home within the limits (checked like the excitation)",
    )
    p.add_argument(
        "--clearance",
        type=float,
        default=0.02,
        metavar="M",
        help="least distance between link capsules, to the floor, workspace and obstacles (default 0.02 m)",
    )
    p.add_argument("--floor", default="0", metavar="Z|none", help="floor plane height in m, or none (default 0)")
    p.add_argument("--workspace", metavar="X0,Y0,Z0,X1,Y1,Z1", help="box the links stay in, m")
    p.add_argument(
        "--obstacle", action="append", default=[], metavar="X0,Y0,Z0,X1,Y1,Z1", help="a box obstacle, m (repeatable)"
    )
    p.add_argument("--srdf", metavar="PATH", help="SRDF whose disable_collisions pairs are not checked (with --urdf)")
    p.add_argument(
        "--capsule-radius",
        type=float,
        default=0.05,
        metavar="M",
        help="radius of skeleton capsules for URDF links whose mesh cannot be read (default 0.05 m)",
    )
    p.add_argument("--jerk-max", type=float, metavar="RAD/S^3", help="jerk limit of every joint (default none)")
    p.add_argument(
        "--allow-infeasible",
        action="store_true",
        help="write the trajectory even when it fails the dense check (exit status 0)",
    )
    p.add_argument("--preview", metavar="PNG", help="write a preview figure (needs matplotlib: jaxid[report])")
    p.add_argument("--periods", type=int, default=1, help="periods written (default 1)")
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import jaxid
    from jaxid import data
    from jaxid.excitation.optimize import LIMITS, _limits, optimize

    if not args.output.lower().endswith((".csv", ".npz", ".json")):
        raise UserError(f"output {args.output!r} must end in .csv, .npz or .json")
    # Checked before the optimisation, which takes minutes, rather than after it.
    if not (np.isfinite(args.fs) and args.fs > 0):
        raise UserError(f"--fs must be a finite sample rate > 0 Hz, got {args.fs}")
    if args.periods < 1:
        raise UserError(f"--periods must be >= 1, got {args.periods}")
    if args.preview is not None:
        try:
            from jaxid.report import pyplot

            pyplot()
        except ImportError as e:
            raise UserError(f"--preview: {e}") from None
    refuse_overwrite([], [args.output, args.json, args.preview])
    robot, description = model_from_args(args)
    constraints, limits = _constraints(args, robot)
    lim = _limits(robot, limits)
    finite = lambda x: np.where(np.isfinite(x), x, 0.0)
    home = (
        0.5 * (finite(lim["q_min"]) + finite(lim["q_max"]))
        if args.home is None
        else _floats(args.home, robot.n, "--home")
    )
    start = None if args.start_from is None else _floats(args.start_from, robot.n, "--start-from")
    objective = args.objective or ("information" if args.payload else "cond")
    regressor_fn = None
    payload = payload_from_args(args)
    if (args.payload or payload is not None) and not hasattr(robot, "tip"):
        raise UserError("--payload and --payload-mass need a rigid-body robot with a flange (built-in or URDF)")
    if args.payload:
        if payload is None:
            # The load's own torque adds to the robot's: limits checked without it are not the run's.
            raise UserError(
                "--payload: give the load's --payload-mass KG (and --payload-com X Y Z, m, in the "
                "flange frame), so that the torque limits are checked with it attached"
            )
        from jaxid.identification.payload import PayloadRows

        regressor_fn = PayloadRows(robot, np.where(np.isfinite(lim["tau_max"]), 1.0 / lim["tau_max"], 1.0))
    if payload is not None:
        from jaxid.identification.payload import attach_payload

        robot = attach_payload(robot, payload)  # the torques of the limits and of the file
    try:
        res = optimize(
            robot,
            harmonics=args.harmonics,
            base_frequency=args.base_frequency,
            objective=objective,
            regressor_fn=regressor_fn,
            n_starts=args.starts,
            steps=args.steps,
            learning_rate=args.learning_rate,
            margin=args.margin,
            seed=args.seed,
            progress=not args.quiet,
            limits=limits,
            constraints=constraints,
            home=home,
        )
    except ValueError as e:
        raise UserError(str(e)) from None
    if args.preview is not None:
        from jaxid.excitation.preview import preview

        preview(robot, res, args.preview, limits=limits, constraints=constraints, start_from=start)
    if not res.feasible and not args.allow_infeasible:
        lines = [f"{k} {v:.3g} {LIMITS[k]}" for k, v in res.feasibility.violation.items() if v > 0]
        lines += [ln for ln in res.feasibility.lines(constraints.clearance if constraints else 0.0) if "VIOLATED" in ln]
        print(
            f"jaxid excite: error: no start meets every limit and constraint on the dense check "
            f"({'; '.join(lines)}); not writing {args.output} (more --steps or --starts, a smaller "
            f"--clearance, or --allow-infeasible)",
            file=sys.stderr,
        )
        return 1
    t_approach, (t, q, qd, qdd) = (
        _with_approach(res, robot, start, args.fs, args.periods, limits, constraints)
        if start is not None
        else (0.0, res.trajectory(args.fs, args.periods))
    )
    if args.output.lower().endswith(".json"):
        import json

        from jaxid.atomic import atomic_write

        with atomic_write(args.output) as fh:
            json.dump(joint_trajectory(robot.coordinate_names, t, q, qd, qdd), fh)
    else:
        ds = data.from_arrays(t, q, jaxid.rnea(robot, q, qd, qdd), qd, qdd, source="excitation")
        if not t_approach:  # whole periods of the series: the base frequency travels with the file
            ds = dataclasses.replace(ds, base_frequency=res.omega_f / (2 * np.pi), harmonics=int(res.a.shape[1]))
        data.write(ds, args.output)

    figures = dict(
        model=description,
        joints=robot.n,
        base_parameters=int(res.columns.size),
        payload=None if payload is None else np.asarray(payload).tolist(),
        output=args.output,
        samples=len(t),
        fs_hz=args.fs,
        **res.summary(),
        coefficients=dict(a=res.a.tolist(), b=res.b.tolist(), q0=res.q0.tolist(), omega_f=res.omega_f),
    )
    if args.json is not None and emit_json(figures, args.json):
        return 0
    s = figures
    what = "payload" if args.payload else "base"
    print(
        f"{robot.name}: {robot.n} joints, {s['base_parameters']} {what} parameters; "
        f"{s['harmonics']} harmonics at {s['base_frequency_hz']:g} Hz (T = {s['period_s']:g} s); "
        f"{s['n_starts']} starts x {s['steps']} steps, seed {args.seed}"
    )
    print(
        f"  cond (column-normalised {what} regressor): {'optimised ' if objective == 'cond' else ''}{s['cond']:.4g}   "
        f"random starts: median {s['random_cond_median']:.4g}, best {s['random_cond_best']:.4g}"
    )
    print(f"  -log det (D-optimality): {s['logdet']:.4g}")
    if objective == "information":
        print(f"  -log det W^T W (information, optimised): {s['value']:.4g}")
    print(
        f"  {'limit':<13}{'max usage':>10}{'violation':>12}"
        + (f"   (torques with the {args.payload_mass:g} kg payload attached)" if payload is not None else "")
    )
    fields = dict(position="q_max", velocity="qd_max", acceleration="qdd_max", jerk="qddd_max", torque="tau_max")
    for k in LIMITS:
        if not np.any(np.isfinite(lim[fields[k]])):
            print(f"  {k:<13}{'no limit':>10}")
            continue
        print(f"  {k:<13}{100 * s['usage'][k]:>9.1f}%{s['violation'][k]:>12.3g} {LIMITS[k]}")
    if constraints is not None:
        print(f"  least clearance on the capsule model (>= {1e3 * constraints.clearance:.0f} mm required):")
        for line in res.feasibility.lines(constraints.clearance):
            print(f"    {line}")
    verdict = (
        "all limits and constraints met"
        if s["feasible"]
        else "WARNING: LIMITS OR CONSTRAINTS VIOLATED (--allow-infeasible)"
    )
    print(
        f"  {verdict}; starts and ends at rest at home {np.round(home, 3).tolist()}; optimised in {s['time_s']:.1f} s"
    )
    if t_approach:
        print(f"  preceded by a {t_approach:g} s move from --start-from to home")
    sidecar = not t_approach and not args.output.lower().endswith(".json")
    print(
        f"wrote {args.output}: {len(t)} samples at {args.fs:g} Hz"
        + (f" (base frequency and harmonics in {args.output}.json)" if sidecar else "")
        + (f"; preview {args.preview}" if args.preview else "")
    )
    return 0


def _with_approach(res, robot, start, fs, periods, limits, constraints):
    """(duration s, ``periods`` of ``res`` at fs Hz preceded by the approach from the pose
    ``start`` to home), the approach checked with its jerk on a grid 10x denser than fs
    against the limits and constraints (a UserError if it fails)."""
    from jaxid.excitation.optimize import LIMITS, check_limits
    from jaxid.excitation.trajectories import approach, approach_jerk

    T = res.approach_time(start, fs)
    if T == 0:
        return 0.0, res.trajectory(fs, periods)
    dense = np.linspace(0.0, T, int(round(10 * T * fs)) + 1)
    home = np.asarray(res.sample(np.zeros(1))[0][0])
    rep = check_limits(
        robot,
        *approach(start, home, T, dense),
        limits=limits,
        qddd=approach_jerk(start, home, T, dense),
        constraints=constraints,
    )
    if not rep.feasible:
        bad = [f"{k} {v:.3g} {LIMITS[k]}" for k, v in rep.violation.items() if v > 0]
        bad += [ln for ln in rep.lines(constraints.clearance if constraints else 0.0) if "VIOLATED" in ln]
        raise UserError(
            f"--start-from: the {T:g} s move to home violates {'; '.join(bad)}; start from "
            "another pose or move the robot to home first"
        )
    return T, res.trajectory(fs, periods, start_from=start)


def joint_trajectory(names, t, q, qd, qdd) -> dict:
    """A ROS 2 ``trajectory_msgs/JointTrajectory`` as a dict: ``joint_names`` and ``points``
    with positions (rad), velocities (rad/s), accelerations (rad/s^2) and
    ``time_from_start`` {sec, nanosec}, from t (N,) s and q, qd, qdd (N, n)."""
    ns = np.round(np.asarray(t, dtype=float) * 1e9).astype(np.int64)
    rows = (np.asarray(x, dtype=float).tolist() for x in (q, qd, qdd))
    return {
        "joint_names": list(names),
        "points": [
            {
                "positions": p,
                "velocities": v,
                "accelerations": a,
                "time_from_start": {"sec": int(k // 1_000_000_000), "nanosec": int(k % 1_000_000_000)},
            }
            for p, v, a, k in zip(*rows, ns)
        ],
    }


def _constraints(args, robot):
    """(Constraints or None, limit overrides or None) of the excite arguments for ``robot``."""
    from jaxid.excitation.constraints import Constraints
    from jaxid.model import geometry

    limits = {} if args.jerk_max is None else {"qddd_max": args.jerk_max}
    if args.srdf and not args.urdf:
        raise UserError("--srdf names link pairs of a URDF; it needs --urdf PATH")
    if args.urdf:
        try:
            caps = geometry.from_urdf(
                args.urdf, robot, tip_link=args.tip_link, mesh_radius=args.capsule_radius, srdf=args.srdf
            )
        except (OSError, ValueError) as e:
            raise UserError(f"--urdf/--srdf: {e}") from None
    elif robot.name == "ur5":
        caps = geometry.ur5()
        limits.update(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1])
    else:
        caps = None
    floor = None if args.floor.strip().lower() == "none" else _floats(args.floor, 1, "--floor")[0]
    workspace = None if args.workspace is None else np.split(_floats(args.workspace, 6, "--workspace"), 2)
    obstacles = tuple(np.split(_floats(o, 6, "--obstacle"), 2) for o in args.obstacle)
    if caps is None:
        if args.workspace or args.obstacle:
            raise UserError(
                f"{robot.name} has no collision geometry: --workspace and --obstacle need the built-in ur5 or a --urdf"
            )
        return None, limits or None
    try:
        return Constraints(
            caps, clearance=args.clearance, floor=floor, workspace=workspace, obstacles=obstacles
        ), limits
    except ValueError as e:
        raise UserError(str(e)) from None
