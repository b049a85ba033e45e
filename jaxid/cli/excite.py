"""`jaxid excite`: optimise an excitation trajectory and write it as a dataset file."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import (
    HelpFormatter,
    add_json_argument,
    add_model_arguments,
    add_package_dir_argument,
    add_payload_arguments,
    comma_list,
    emit_json,
    model_spec,
    payload_design_lines,
    payload_spec,
)
from jaxid.workflow import commands, requests

EXAMPLE = """examples:
  jaxid excite --robot ur5 -o traj.csv --preview traj.png
  jaxid excite --robot ur5 --home 0,-1.57,1.57,-1.57,-1.57,0 --obstacle 0.3,-0.8,0,0.8,0.8,0.4 -o traj.csv
  jaxid excite --urdf arm.urdf --srdf arm.srdf --tip-link link7 --harmonics 4 --starts 16 -o traj.csv --json -

The trajectory starts and ends at rest at the home pose (default: the centres of the
position ranges, or the nearest pose clear of collisions and the floor, printed). The floor
is the plane z = --floor (default 0) of the base frame: lower it for a base on a pedestal
(--floor -0.9) or drop it (--no-floor). Collision geometry: the built-in UR5's capsules (jaxid.model.geometry.ur5,
with its conservative ranges UR5_RANGES instead of the +-2 pi limits); a URDF's <collision>
elements (meshes: their bounding capsule; unreadable ones: skeleton capsules of
--capsule-radius); other built-in robots have none. Every limit and constraint is checked
on a dense grid (10x the optimiser's); an infeasible trajectory is not written (exit 1)
unless --allow-infeasible.
"""


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
        formatter_class=HelpFormatter,
    )
    add_model_arguments(p, robot_default="ur5", transmission=False)  # the excitation moves the joints
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
    p.add_argument(
        "--torque-noise",
        metavar="LIST",
        help="with --payload: torque noise std per sample, N m, one value or one per joint, for the expected "
        "payload stds printed (default 0.5 %% of each joint's torque range along the trajectory, jaxid "
        "simulate's default)",
    )
    p.add_argument(
        "--payload-joints",
        metavar="LIST",
        help="with --payload: 1-based joints whose torques the payload fit will use, e.g. 1,2,3 (default all), "
        "for the expected payload stds printed",
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
    p.add_argument(
        "--home",
        metavar="Q1,...",
        help="rest pose at both ends, rad (default: the range centres or, where they collide or are "
        "under the floor, the nearest clear pose found, printed)",
    )
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
    p.add_argument(
        "--floor",
        default="auto",
        metavar="Z|none",
        help="height of the floor (table) plane in m in the robot's base frame, or none (default 0: the "
        "plane the base frame stands on, or none with a warning where that plane cuts a link in every pose: "
        "an arm on a torso; a base on a pedestal has its floor below it, e.g. --floor -0.9). "
        "Links that no joint raises or lowers (fixed to the base, or turning only about a vertical axis "
        "through it) are not held above it",
    )
    p.add_argument(
        "--no-floor", dest="floor", action="store_const", const="none", help="no floor constraint (= --floor none)"
    )
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
    add_package_dir_argument(p)
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
    from jaxid.excitation.optimize import LIMITS

    req = requests.ExciteRequest(
        output=args.output,
        model=model_spec(args),
        harmonics=args.harmonics,
        base_frequency=args.base_frequency,
        objective=args.objective,
        payload_design=args.payload,
        payload=payload_spec(args),
        starts=args.starts,
        steps=args.steps,
        learning_rate=args.learning_rate,
        margin=args.margin,
        seed=args.seed,
        fs=args.fs,
        home=args.home,
        start_from=args.start_from,
        clearance=args.clearance,
        floor=args.floor,
        workspace=args.workspace,
        obstacles=tuple(args.obstacle),
        srdf=args.srdf,
        capsule_radius=args.capsule_radius,
        jerk_max=args.jerk_max,
        allow_infeasible=args.allow_infeasible,
        periods=args.periods,
        preview=args.preview,
        json=args.json,
        torque_noise=comma_list(args.torque_noise, float, "--torque-noise"),
        payload_joints=comma_list(args.payload_joints, int, "--payload-joints"),
    )
    if args.preview is not None:
        try:
            from jaxid.report import pyplot

            pyplot()
        except ImportError as e:
            raise UserError(f"--preview: {e}") from None
    out = commands.run_excite(req, progress=not args.quiet)
    robot, res, lim, constraints, home, payload = (
        out.robot,
        out.result,
        out.limits,
        out.constraints,
        out.home,
        out.payload,
    )
    objective, t, t_approach, description = req.chosen_objective, out.t, out.t_approach, out.description
    if not out.written:
        lines = [f"{k} {v:.3g} {LIMITS[k]}" for k, v in res.feasibility.violation.items() if v > 0]
        lines += [ln for ln in res.feasibility.lines() if "VIOLATED" in ln]
        print(
            f"jaxid excite: error: no start meets every limit and constraint on the dense check "
            f"({'; '.join(lines)}); not writing {args.output} (more --steps or --starts, a smaller "
            f"--clearance, or --allow-infeasible)",
            file=sys.stderr,
        )
        return 1
    assert t is not None  # written

    figures = dict(
        model=description,
        joints=robot.n,
        base_parameters=int(res.columns.size),
        payload=None if payload is None else np.asarray(payload).tolist(),
        output=args.output,
        samples=len(t),
        fs_hz=args.fs,
        home=np.asarray(home).tolist(),
        home_note=out.home_note,
        **res.summary(),
        coefficients=dict(a=res.a.tolist(), b=res.b.tolist(), q0=res.q0.tolist(), omega_f=res.omega_f),
        # volume_ratio null for a flat mesh (no hull volume): JSON has no inf
        mesh_capsules=[
            {**dataclasses.asdict(f), "volume_ratio": f.volume_ratio if np.isfinite(f.volume_ratio) else None}
            for f in (constraints.capsules.fits if constraints is not None else ())
        ],
        payload_design=None if out.design is None else dict(out.design.to_json(), noise_source=out.design_noise),
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
    if constraints is not None and constraints.capsules.fits:
        print("  capsules fitted to meshes (capsule/hull volume; excess = farthest capsule point from the hull):")
        for f in constraints.capsules.fits:
            print(
                f"    {f.link:<24} r {1e3 * f.radius:6.1f} mm  length {1e3 * f.length:6.1f} mm  "
                f"volume x{f.volume_ratio:.2f}  excess {1e3 * f.excess:5.1f} mm  ({f.mesh.rsplit('/', 1)[-1]})"
            )
    if constraints is not None:
        print(f"  least clearance on the capsule model (>= {1e3 * constraints.clearance:.0f} mm required):")
        for line in res.feasibility.lines():
            print(f"    {line}")
    verdict = (
        "all limits and constraints met"
        if s["feasible"]
        else "WARNING: LIMITS OR CONSTRAINTS VIOLATED (--allow-infeasible)"
    )
    print(
        f"  {verdict}; starts and ends at rest at home {np.round(home, 3).tolist()}; optimised in {s['time_s']:.1f} s"
    )
    if out.home_note:
        print(f"  home: {out.home_note}")
    if t_approach:
        print(f"  preceded by a {t_approach:g} s move from --start-from to home")
    if out.design is not None:
        print(f"  torque noise: {out.design_noise}")
        for line in payload_design_lines(out.design):
            print(line)
    sidecar = not t_approach and not args.output.lower().endswith(".json")
    print(
        f"wrote {args.output}: {len(t)} samples at {args.fs:g} Hz"
        + (f" (base frequency and harmonics in {args.output}.json)" if sidecar else "")
        + (f"; preview {args.preview}" if args.preview else "")
    )
    return 0
