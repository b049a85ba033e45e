"""`jaxid simulate`: measurements of a perturbed ("true") robot along a trajectory."""

from __future__ import annotations

from jaxid.cli.common import (
    HelpFormatter,
    add_json_argument,
    add_model_arguments,
    add_payload_arguments,
    emit_json,
    model_spec,
    payload_spec,
)
from jaxid.results import json_number
from jaxid.workflow import commands, requests

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
        formatter_class=HelpFormatter,
    )
    add_model_arguments(p, robot_default="ur5", joint_terms=None)
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


def run(args) -> int:
    req = requests.SimulateRequest(
        trajectory=args.trajectory,
        output=args.output,
        model=model_spec(args),
        robot_seed=args.robot_seed,
        noise_seed=args.noise_seed,
        seed=args.seed,
        rate=args.rate,
        scale=args.scale,
        friction=args.friction,
        stribeck_vs=args.true_stribeck_vs,  # not args.stribeck_vs: that one is the model's
        sigma_q=args.sigma_q,
        quantization=args.quantization,
        tau_noise=args.tau_noise,
        tau_sigma=None if args.tau_sigma is None else tuple(args.tau_sigma),
        payload=payload_spec(args),
        truth=args.truth,
        true_params=args.true_params,
        json=args.json,
    )
    out = commands.run_simulate(req)
    robot, true, t, payload, friction = out.robot, out.true_robot, out.t, out.payload, req.friction
    robot_seed, noise_seed = req.seeds
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
        "sigma_tau_nm": [json_number(s) for s in out.sigma_tau],
        "payload": None if payload is None else [float(v) for v in payload],
        "tau_rms_nm": [json_number(s) for s in out.tau_rms],
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
