"""`jaxid simulate`: measurements of a perturbed ("true") robot along a trajectory."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import (
    add_json_argument,
    add_model_arguments,
    add_payload_arguments,
    emit_json,
    model_from_args,
    parse_terms,
    payload_from_args,
    refuse_overwrite,
)
from jaxid.results import json_number

EXAMPLE = """examples:
  jaxid simulate --robot ur5 --trajectory traj.csv --robot-seed 1 --noise-seed 1 -o data.csv
  jaxid simulate --robot ur5 --trajectory traj2.csv --robot-seed 1 --noise-seed 2 -o data2.csv   (same robot)
  jaxid simulate --robot ur5 --trajectory traj.csv --seed 2 --tau-noise 1 --quantization 1e-5 \\
      --payload-mass 2 --payload-com 0 0 0.05 --payload-box 0.1 0.1 0.1 -o loaded.csv --truth true.csv
"""


def register(sub):
    p = sub.add_parser(
        "simulate",
        help="simulate noisy measurements of a perturbed robot along a trajectory",
        description="Perturb the nominal model into a 'true' robot (masses, centres of mass and inertias "
        "changed at random, staying physically consistent; viscous and Coulomb friction and "
        "torque offsets added), compute its torques along the trajectory and write noisy "
        "positions and torques (t, q, tau) as a dataset file.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_arguments(p, joint_terms=None)
    p.add_argument(
        "--trajectory",
        required=True,
        metavar="PATH",
        help="trajectory file, .csv or .npz: t, q1..qn and optionally qd, qdd (as written by "
        "'jaxid excite'; tau columns are ignored); missing qd, qdd come from a cubic spline; "
        "its base frequency and harmonics (sidecar PATH.json) are carried to the output",
    )
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="measured dataset (.csv or .npz)")
    p.add_argument(
        "--robot-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of the true robot's perturbation (default 0): keep it to measure the same simulated robot again",
    )
    p.add_argument(
        "--noise-seed",
        type=int,
        default=None,
        metavar="N",
        help="seed of the measurement noise (default 0): change it for a second experiment",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="N",
        help="both seeds at once (default 0); --robot-seed / --noise-seed override it",
    )
    p.add_argument(
        "--rate",
        type=float,
        metavar="HZ",
        help="resample the trajectory at this rate, Hz (cubic spline; default: its own samples)",
    )
    p.add_argument(
        "--scale", type=float, default=0.2, help="relative size of the parameter perturbation, in [0, 1) (default 0.2)"
    )
    p.add_argument(
        "--friction",
        default="fv,fc,offset",
        metavar="TERMS",
        help="joint terms added to the true robot, subset of fv,fc,fs,fva,offset (viscous, Coulomb, "
        "Stribeck excess, asymmetric viscous, offset; default fv,fc,offset; '' none)",
    )
    p.add_argument(
        "--stribeck-vs",
        dest="true_stribeck_vs",
        type=float,
        metavar="RAD_S",
        help="Stribeck velocity of the true robot's fs term, rad/s (default 0.05; needs fs in --friction)",
    )
    p.add_argument(
        "--sigma-q", type=float, default=1e-4, metavar="RAD", help="std of Gaussian position noise, rad (default 1e-4)"
    )
    p.add_argument("--quantization", type=float, metavar="RAD", help="encoder resolution, rad (default: none)")
    noise = p.add_mutually_exclusive_group()
    noise.add_argument(
        "--tau-noise",
        type=float,
        metavar="PERCENT",
        help="torque noise std in %% of each joint's torque range along the trajectory (default 0.5)",
    )
    noise.add_argument(
        "--tau-sigma", type=float, nargs="+", metavar="NM", help="torque noise std, N m: one value, or one per joint"
    )
    add_payload_arguments(p, "simulated with it attached")
    p.add_argument("--truth", metavar="PATH", help="also write the noise-free t, q, qd, qdd, tau here")
    p.add_argument(
        "--true-params", metavar="PATH", help="also write the true robot's parameters as JSON {names, theta} here"
    )
    add_json_argument(p)
    p.set_defaults(func=run)


def read_trajectory(path, n: int, rate: float | None = None):
    """(t, q, qd, qdd) from a trajectory file for an n-joint robot: t (N,) s, the others (N, n)."""
    from scipy.interpolate import CubicSpline

    from jaxid import data

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.suffix.lower() == ".npz":
        try:
            with np.load(path) as f:
                arrays = {k: np.asarray(f[k], dtype=float) for k in ("t", "q", "qd", "qdd") if k in f.files}
        except (OSError, ValueError) as e:
            raise UserError(f"{path}: not a readable NPZ file ({e})") from None
    elif path.suffix.lower() == ".csv":
        try:
            with open(path) as f:
                header = [h.strip() for h in f.readline().split(",")]
            table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: not a readable CSV file of numbers with one header row ({e})") from None
        if table.shape[1] != len(header):
            raise UserError(f"{path}: {table.shape[1]} columns of data but {len(header)} header names")
        col = {h: i for i, h in enumerate(header)}
        more = sorted(
            {int(m[2]) for m in (re.fullmatch(r"(q|qd|qdd)([0-9]+)", h) for h in header) if m} - set(range(1, n + 1))
        )
        if more:  # never drop a joint's columns without a word
            raise UserError(
                f"{path}: columns of joint(s) {', '.join(map(str, more))} but the robot has {n} joints "
                f"(q1..q{n}); choose the model of this trajectory (--robot NAME or --urdf PATH)"
            )
        arrays = {"t": table[:, col["t"]]} if "t" in col else {}
        for s in ("q", "qd", "qdd"):
            if all(f"{s}{j}" in col for j in range(1, n + 1)):
                arrays[s] = table[:, [col[f"{s}{j}"] for j in range(1, n + 1)]]
            elif any(re.fullmatch(rf"{s}[0-9]+", h) for h in header):
                raise UserError(f"{path}: columns {s}1..{s}{n} expected for this {n}-joint robot")
    else:
        raise UserError(f"{path}: unknown file type '{path.suffix}'; a trajectory is a .csv or .npz file")
    missing = [k for k in ("t", "q") if k not in arrays]
    if missing:
        raise UserError(f"{path}: missing {' and '.join(missing)}; a trajectory needs t and q1..q{n}")
    t, q = arrays["t"], arrays["q"]
    # from_arrays checks shapes, finiteness, |q| etc. within data.MOTION_BOUND and increasing
    # time, naming the row.
    ds = data.from_arrays(t, q, np.zeros_like(q), arrays.get("qd"), arrays.get("qdd"), source=str(path))
    if ds.n != n:
        raise UserError(f"{path}: {ds.n} joints in the trajectory but the robot has {n}")
    t, q = np.asarray(ds.t), np.asarray(ds.q)
    spline = CubicSpline(t, q, axis=0)
    qd = spline(t, 1) if ds.qd is None else np.asarray(ds.qd)
    qdd = spline(t, 2) if ds.qdd is None else np.asarray(ds.qdd)
    if rate is not None:
        if not (np.isfinite(rate) and rate > 0):
            raise UserError(f"--rate must be a finite rate > 0 Hz, got {rate}")
        grid = np.arange(t[0], t[-1] + 0.5 / rate, 1.0 / rate)
        grid = grid[grid <= t[-1]]
        q, qd, qdd = (CubicSpline(t, x, axis=0)(grid) for x in (q, qd, qdd))
        t = grid
    return t, q, qd, qdd


def run(args) -> int:
    import dataclasses
    import json

    import jax

    from jaxid import data, simulation
    from jaxid.atomic import atomic_write

    robot, desc = model_from_args(args, joint_terms=())
    refuse_overwrite([args.trajectory], [args.output, args.truth, args.true_params])
    for out in (args.output, args.truth):
        if out is not None and not out.lower().endswith((".csv", ".npz")):
            raise UserError(f"output {out!r} must end in .csv or .npz")
    friction = parse_terms(args.friction)
    if any(f not in simulation.FRICTION_RANGES for f in friction):
        raise UserError(f"--friction: choose from {','.join(simulation.FRICTION_RANGES)}, got {args.friction!r}")
    if not 0 <= args.scale < 1:
        raise UserError(f"--scale must be in [0, 1), got {args.scale}")
    vs = args.true_stribeck_vs  # not args.stribeck_vs: that one is the model's, checked against --joint-terms
    if vs is not None:
        if "fs" not in friction:
            raise UserError("--stribeck-vs sets the Stribeck velocity of the fs term; add fs to --friction")
        if not 0 < vs < float("inf"):
            raise UserError(f"--stribeck-vs must be a finite velocity > 0 rad/s, got {vs}")
        robot = dataclasses.replace(robot, stribeck_vs=float(vs))
        desc = {**desc, "stribeck_vs": float(vs)}
    payload = payload_from_args(args)
    noise = dict(sigma_q=args.sigma_q, quantization=args.quantization)
    if args.tau_sigma is not None:
        if len(args.tau_sigma) not in (1, robot.n):
            raise UserError(f"--tau-sigma takes one value or {robot.n} (one per joint), got {len(args.tau_sigma)}")
        noise["tau_sigma"] = np.asarray(args.tau_sigma)
    else:
        noise["tau_rel"] = (0.5 if args.tau_noise is None else args.tau_noise) / 100.0

    t, q, qd, qdd = read_trajectory(args.trajectory, robot.n, args.rate)
    seed = 0 if args.seed is None else args.seed
    robot_seed = seed if args.robot_seed is None else args.robot_seed
    noise_seed = seed if args.noise_seed is None else args.noise_seed
    m = simulation.simulate(
        robot,
        t,
        q,
        qd,
        qdd,
        jax.random.PRNGKey(robot_seed),
        scale=args.scale,
        friction=friction,
        payload=payload,
        noise_key=jax.random.PRNGKey(noise_seed),
        **noise,
    )
    f0, harmonics = data.read_excitation(args.trajectory)  # the excitation's period carries over
    data.write(dataclasses.replace(m.data, base_frequency=f0, harmonics=harmonics), args.output)
    if args.truth:
        data.write(data.Dataset(m.data.t, m.q, m.tau, m.qd, m.qdd, source="truth"), args.truth)
    true = m.robot
    if args.true_params:
        with atomic_write(args.true_params) as f:
            json.dump(
                {
                    "model": {**desc, "joint_terms": list(true.joint_terms)},
                    "names": list(true.parameter_names()),
                    "theta": [float(v) for v in np.asarray(true.parameter_vector())],
                },
                f,
                indent=1,
            )
            f.write("\n")

    doc = {
        "robot": robot.name,
        "trajectory": args.trajectory,
        "output": args.output,
        "robot_seed": robot_seed,
        "noise_seed": noise_seed,
        "samples": len(t),
        "duration_s": float(t[-1] - t[0]),
        "scale": args.scale,
        "friction": list(friction),
        "sigma_q_rad": args.sigma_q,
        "quantization_rad": args.quantization,
        "sigma_tau_nm": [json_number(s) for s in np.asarray(m.sigma_tau)],
        "payload": None if payload is None else [float(v) for v in np.asarray(payload)],
        "tau_rms_nm": [json_number(s) for s in np.sqrt(np.mean(np.asarray(m.tau) ** 2, axis=0))],
    }
    if args.json is not None and emit_json(doc, args.json):
        return 0
    print(
        f"{robot.name}: simulated {len(t)} samples over {doc['duration_s']:.3g} s (robot seed {robot_seed}, "
        f"noise seed {noise_seed}, "
        f"perturbation {100 * args.scale:g} %, friction {','.join(friction) or 'none'}"
        + (f", payload {args.payload_mass:g} kg" if payload is not None else "")
        + ")"
    )
    print(f"  {'joint':<14}{'tau rms (N m)':>14}{'noise std (N m)':>17}")
    for name, r, s in zip(true.names, doc["tau_rms_nm"], doc["sigma_tau_nm"]):
        print(f"  {name:<14}{r:>14.4g}{s:>17.3g}")
    print(
        f"  position noise: {args.sigma_q:g} rad"
        + (f", encoder resolution {args.quantization:g} rad" if args.quantization else "")
    )
    print(
        f"wrote {args.output}"
        + (f", {args.truth}" if args.truth else "")
        + (f", {args.true_params}" if args.true_params else "")
    )
    return 0
