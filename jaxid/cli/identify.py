"""`jaxid identify`: base parameters (and joint friction) from measured motion and torque."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from jaxid import report
from jaxid.cli import UserError
from jaxid.cli.common import (
    add_data_arguments,
    add_json_argument,
    add_model_arguments,
    add_report_argument,
    emit_json,
    model_from_args,
    progress,
    read_datasets,
    refuse_overwrite,
    write_report,
)
from jaxid.results import json_number

EXAMPLE = """examples:
  jaxid identify --robot ur5 data.csv more.csv -o params.json
  jaxid identify --urdf kuka_lwr4.urdf --joint-terms fv,fc,offset --method ols run2.npz run3.npz -o kuka.json
  jaxid identify --robot planar2 --consistent --urdf-out arm.urdf data.csv -o params.json
  jaxid identify --mjcf arm.xml --joint-terms fv,fc,ia --consistent --mjcf-out arm_id.xml data.csv -o params.json
  jaxid identify --robot ur5 --joint-terms fv,fc,fs,offset --stribeck-vs fit data.csv -o params.json
  jaxid identify --robot ur5 data.csv -o params.json --report fit_report
  jaxid identify --robot planar2 --friction lugre --joint-terms '' scurve.csv fourier.csv -o params.json
"""

METHODS = ("wls", "ols", "irls", "ridge", "iv", "didim")  # jaxid.workflow.METHODS (imported lazily there)


#: Characters of a base-parameter combination shown in the table (a URDF's long combinations
#: would push the numbers off the screen); the whole name is in the parameter file.
NAME_WIDTH = 64


def register(sub):
    p = sub.add_parser(
        "identify",
        help="identify base parameters (and joint friction) from dataset files",
        description="Identify the base parameters of the model (Gautier's QR basis), with the enabled joint "
        "terms (friction, offset), by least squares on the stacked regressor of all the given "
        "dataset files, and write them with their covariance to a params.json file. Missing "
        "velocities and accelerations are computed by zero-phase Butterworth filtering at a cutoff "
        "chosen from the data (printed). Runs jaxid.workflow: read, prepare, identify_experiment.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", nargs="+", metavar="DATA", help="dataset files (.csv, .npz), stacked")
    add_model_arguments(p, fit_vs=True)
    p.add_argument(
        "-o",
        "--output",
        default="params.json",
        metavar="PATH",
        help="where to write the parameters (default params.json)",
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default="wls",
        help="estimator: two-step weighted LS (Gautier), ordinary LS, robust IRLS (Huber), "
        "ridge with GCV, instrumental variables (IDIM-IV) or DIDIM with instruments along "
        "--reference (default wls)",
    )
    p.add_argument(
        "--reference",
        nargs="+",
        metavar="TRAJ",
        help="--method iv/didim: the commanded trajectory of each data file, in the same order "
        "(t, q and optionally qd, qdd, as written by 'jaxid excite'), tracked exactly by the "
        "controller",
    )
    p.add_argument(
        "--consistent",
        action="store_true",
        help="estimate physically consistent standard parameters (log-Cholesky bodies, non-negative "
        "friction, entropic prior toward the nominal links) and predict with them; needed for "
        "--urdf-out when the least-squares estimate is not consistent. A fit that does not "
        "converge is an error (exit 1; params.json is written, marked not converged, no URDF)",
    )
    p.add_argument(
        "--accept-unconverged",
        action="store_true",
        help="--consistent: accept a fit that did not converge (exit 0, URDF written; it is still "
        "reported as not converged and never called consistent)",
    )
    p.add_argument(
        "--prior-weight",
        type=float,
        default=1e-3,
        metavar="W",
        help="--consistent: weight of the prior toward the nominal links, in units of one whitened "
        "sample (default 1e-3; larger trusts the nominal model more)",
    )
    add_bounds_arguments(p)
    add_gravity_argument(p)
    p.add_argument(
        "--sdp-check",
        action="store_true",
        help="--consistent: also solve the problem as an SDP (pip install jaxid[consistent-sdp]) and "
        "report how far the fit's cost is from its optimum",
    )
    p.add_argument(
        "--validate-on",
        metavar="DATA",
        nargs="+",
        help="--consistent: choose the prior weight by the error on these held-out runs (fit on DATA, "
        "score here; table printed), then identify with it",
    )
    add_weights_argument(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--urdf-out",
        metavar="PATH",
        help="write the identified inertial parameters as a URDF (requires physically consistent "
        "links): with --urdf, into a copy of that file (only <inertial> and, for fv/fc, "
        "<dynamics damping friction> change); with --robot, a new file of the model",
    )
    out.add_argument(
        "--mjcf-out",
        metavar="PATH",
        help="with --mjcf: write the identified parameters into a copy of that file (.xml; only "
        "body <inertial> and, for fv/fc/ia, joint damping/frictionloss/armature change; "
        "requires physically consistent bodies)",
    )
    p.add_argument(
        "--friction",
        choices=("terms", "lugre"),
        default="terms",
        help="terms (default): joint friction as the --joint-terms, linear in their coefficients; "
        "lugre: per-joint LuGre dynamic friction (8 parameters each, bristle state integrated along "
        "each run) identified together with the base parameters (fv, fc, fs, fva are then left "
        "out of the joint terms); one run must take every joint through zero velocity with "
        "low-speed dwells (the S-curve friction experiment), sampled at ~1 kHz",
    )
    add_report_argument(p, "the fit (parameter table with flags, conditioning, torque fit, residuals)")
    add_data_arguments(p)
    add_json_argument(p)
    p.set_defaults(func=run)


def add_gravity_argument(p):
    """--fit-gravity: identify the direction of gravity in the base frame."""
    p.add_argument(
        "--fit-gravity",
        action="store_true",
        help="identify the direction of gravity in the base frame (a base that is not level) with the "
        "parameters, from the torques (jaxid.identification.gravity); it is stored with the model "
        "and used by validate",
    )


def add_bounds_arguments(p):
    """--mass-tol, --com-margin, --total-mass, --com-in-geometry, --body-in-geometry: bounds on the
    consistent bodies."""
    p.add_argument(
        "--mass-tol",
        type=float,
        metavar="X",
        help="--consistent: each link's mass within +-X (relative) of its nominal mass, e.g. 0.3",
    )
    p.add_argument(
        "--com-margin",
        type=float,
        metavar="M",
        help="--consistent: each link's centre of mass within +-M m of its nominal one, per axis",
    )
    p.add_argument("--total-mass", metavar="LO,HI", help="--consistent: the robot's total mass within [LO, HI] kg")
    p.add_argument(
        "--com-in-geometry",
        action="store_true",
        help="--consistent: each link's centre of mass inside the bounding box of its collision "
        "capsules (the URDF's <collision> elements, or the built-in UR5's capsules)",
    )
    p.add_argument(
        "--body-in-geometry",
        action="store_true",
        help="--consistent: as --com-in-geometry for each link's whole body, which also bounds its "
        "second moments (with --mass-tol, --prior-weight 0 then has a finite optimum)",
    )


def add_weights_argument(p):
    """--prior-weights: the prior weights the held-out protocol tries."""
    p.add_argument(
        "--prior-weights",
        default="0,1e-4,1e-3,1e-2,1e-1,1",
        metavar="LIST",
        help="--validate-on: the prior weights tried (default 0,1e-4,1e-3,1e-2,1e-1,1)",
    )


def weights_from_args(args):
    """The --prior-weights list, checked."""
    try:
        weights = [float(w) for w in args.prior_weights.split(",")]
    except ValueError:
        raise UserError(f"--prior-weights must be comma-separated numbers, got {args.prior_weights!r}") from None
    if not weights or any(not (np.isfinite(w) and w >= 0) for w in weights):
        raise UserError(f"--prior-weights must be finite numbers >= 0, got {args.prior_weights!r}")
    return weights


def bounds_from_args(args, robot):
    """Bounds on the consistent bodies from --mass-tol / --com-margin / --total-mass, or None."""
    geometry = args.com_in_geometry or args.body_in_geometry
    if args.mass_tol is None and args.com_margin is None and args.total_mass is None and not geometry:
        return None
    if not args.consistent:
        raise UserError(
            "--mass-tol, --com-margin, --total-mass, --com-in-geometry and --body-in-geometry bound "
            "the bodies of --consistent; add --consistent"
        )
    from jaxid.identification.consistent import Bounds

    total = None
    if args.total_mass is not None:
        try:
            total = tuple(float(v) for v in args.total_mass.split(","))
        except ValueError:
            total = ()
        if len(total) != 2:
            raise UserError(f"--total-mass must be LO,HI in kg, got {args.total_mass!r}")
    try:
        bounds = Bounds.from_nominal(robot, mass_tol=args.mass_tol, com_margin=args.com_margin, total_mass=total)
        if geometry:
            bounds = bounds.intersect(Bounds.from_geometry(robot, _capsules(args, robot), body=args.body_in_geometry))
        bounds.check()
    except ValueError as e:
        raise UserError(f"bounds: {e}") from None
    return bounds


def lugre_table(joints, values, doc) -> str:
    """The per-joint LuGre parameters with their std and relative std, one row per parameter."""
    from jaxid.friction.lugre import JOINT_UNITS, NAMES

    values, std, rel = (np.asarray(x, dtype=float) for x in (values, doc["std"], doc["rel_std"]))
    lines = [
        f"  LuGre friction ({'converged' if doc['converged'] else 'NOT converged'} in {doc['steps']} "
        f"Levenberg-Marquardt steps; per-joint start on {doc['friction_run']}):",
        f"  {'param':8s} {'unit':14s}" + "".join(f"{j:>13s} {'rel std':>8s}" for j in joints),
    ]
    for i, (name, unit) in enumerate(zip(NAMES, JOINT_UNITS)):
        lines.append(
            f"  {name:8s} {unit:14s}"
            + "".join(f"{values[j, i]:13.5g} {100 * rel[j, i]:7.3g}%" for j in range(len(joints)))
        )
    return "\n".join(lines)


def _capsules(args, robot):
    """The collision capsules of the model for --com-in-geometry / --body-in-geometry."""
    from jaxid.model import geometry

    if args.urdf:
        try:
            return geometry.from_urdf(args.urdf, robot, tip_link=args.tip_link)
        except (OSError, ValueError) as e:
            raise UserError(f"--com-in-geometry: {e}") from None
    if robot.name == "ur5":
        return geometry.ur5()
    raise UserError(f"--com-in-geometry: {robot.name} has no collision geometry; use --urdf with <collision> elements")


def run(args) -> int:
    from jaxid import results, workflow

    if args.urdf_out is not None and not args.urdf_out.lower().endswith(".urdf"):
        raise UserError(f"--urdf-out {args.urdf_out!r} must end in .urdf")
    if args.mjcf_out is not None and not (args.mjcf and args.mjcf_out.lower().endswith(".xml")):
        raise UserError(
            f"--mjcf-out {args.mjcf_out!r}: writes into a copy of the --mjcf FILE, as a .xml file; give "
            "both (or --urdf-out for a new URDF)"
        )
    model_out, kind = (args.mjcf_out, "MJCF") if args.mjcf_out else (args.urdf_out, "URDF")
    refuse_overwrite([*args.data, args.urdf, args.dh, args.mjcf], [args.output, model_out, args.json])
    if args.report:
        report.pyplot()  # a missing matplotlib fails before the fit, in one line
    lugre = args.friction == "lugre"
    if lugre:
        from jaxid.cli.common import parse_terms

        bad = [
            f
            for f, on in (
                ("--consistent", args.consistent),
                ("--validate-on", args.validate_on),
                ("--stribeck-vs", args.stribeck_vs is not None),
                ("--fit-gravity", args.fit_gravity),
                ("--reference", args.reference is not None),
            )
            if on
        ]
        if bad:
            raise UserError(f"{', '.join(bad)} cannot be combined with --friction lugre")
        terms = parse_terms(args.joint_terms or "")
        robot, desc = model_from_args(args, joint_terms=tuple(t for t in terms if t not in workflow.LUGRE_REPLACES))
    else:
        robot, desc = model_from_args(args)
    prepared = read_datasets(args.data, robot, args)
    if not args.quiet:
        for line in prepared.describe():
            print(f"  data: {line}", file=sys.stderr)
    bounds = bounds_from_args(args, robot)
    bar = lambda it, **kw: progress(it, quiet=args.quiet, **kw)
    choice = None
    if args.validate_on:
        if not args.consistent:
            raise UserError("--validate-on chooses the prior weight of --consistent; add --consistent")
        weights = weights_from_args(args)
        refuse_overwrite(args.validate_on, [args.output, model_out, args.json])
        held_out = read_datasets(args.validate_on, robot, args)
        choice = report.to_jsonable(
            workflow.choose_prior_weight(
                robot, prepared, held_out, weights=weights, method=args.method, bounds=bounds, progress=bar
            )
        )
        args.prior_weight = float(choice["best"]["weight"])
    reference = None
    if args.reference is not None:
        if args.method not in ("iv", "didim"):
            raise UserError("--reference gives the instruments of --method iv or didim; add one of them")
        from jaxid.cli.simulate import read_trajectory

        reference = [read_trajectory(path, robot.n) for path in args.reference]
    if lugre:
        try:
            params = workflow.identify_lugre(robot, prepared, description=desc, progress=bar)
        except workflow.WorkflowError as e:
            raise UserError(str(e)) from None
    else:
        params = workflow.identify_experiment(
            robot,
            prepared,
            method=args.method,
            description=desc,
            consistent=args.consistent,
            reference=reference,
            prior_weight=args.prior_weight,
            stribeck_vs=args.stribeck_vs,
            bounds=bounds,
            sdp_check=args.sdp_check,
            gravity="fit" if args.fit_gravity else None,
            progress=bar,
        )  # --sdp-check without its extra: an ImportError, one line (jaxid.cli.main)
    if choice is not None:
        params = dataclasses.replace(
            params, fit={**params.fit, "validate_on": list(args.validate_on), "prior_weight_choice": choice}
        )
    robot = dataclasses.replace(
        robot,
        stribeck_vs=params.model["stribeck_vs"],  # fitted where asked
        gravity=np.asarray(params.model.get("gravity", robot.gravity), dtype=float),
    )
    results.save_params(args.output, params)
    unconverged = params.fit.get("converged") is False and not args.accept_unconverged
    if model_out and not unconverged:
        if params.standard is None:
            raise UserError(
                f"the identified links are not physically consistent, so no {kind} can be written"
                + ("" if args.consistent else "; rerun with --consistent")
            )
        results.write_model(robot, params, model_out, source=args.mjcf if args.mjcf_out else args.urdf)
    html = write_report(
        args, robot, params, workflow.validate(robot, params, prepared) if args.report else None, held_out=False
    )

    base, fit, physics = params.base, params.fit, params.fit["physics"]
    theta, std, rel = (np.asarray(x) for x in (params.theta, params.std, params.rel_std))
    doc = {
        "params": args.output,
        "robot": robot.name,
        "method": fit["method"],
        "samples": prepared.n_samples,
        "files": list(args.data),
        "base_parameters": base.rank,
        "parameters": len(params.parameter_names),
        "cond": json_number(fit["cond"]),
        "residual_rms_nm": [json_number(v) for v in fit["residual_rms"]],
        "preprocessing": fit["preprocessing"],
        "physics": physics,
        "standard_consistent": params.standard is not None,
        "converged": fit.get("converged"),
        "report": html,
        "stribeck_vs": robot.stribeck_vs if "fs" in robot.joint_terms else None,
        "stribeck_vs_fitted": args.stribeck_vs == "fit",
        "gravity": fit.get("gravity"),
        "base": [
            {"name": s, "estimate": json_number(v), "std": json_number(d), "rel_std_percent": json_number(r)}
            for s, v, d, r in zip(base.names, theta, std, rel)
        ],
    }
    if choice is not None:
        doc["prior_weight_choice"] = choice
    if lugre:
        doc["lugre"] = {
            **fit["lugre"],
            "joints": list(robot.coordinate_names),
            "values": np.asarray(params.lugre.vector()).tolist(),
        }
        for line in fit["lugre"]["warnings"]:  # named, never silent, also under --json
            print(f"warning: {line}", file=sys.stderr)
    code = 1 if unconverged else 0
    if unconverged:  # an error by default: nothing unconverged passes silently or is written as a model
        print(
            f"jaxid identify: error: the consistent fit did not converge in {fit.get('steps')} steps; "
            f"{args.output} holds it, marked not converged"
            + (f", and no {kind} was written" if model_out else "")
            + "; use the result only with --accept-unconverged",
            file=sys.stderr,
        )
    for key, path in (("urdf", args.urdf_out), ("mjcf", args.mjcf_out)):
        doc[key] = path if path and not unconverged else None
    if args.json is not None and emit_json(doc, args.json):
        return code
    if choice is not None:
        print(f"prior weight chosen on {', '.join(args.validate_on)} (held-out NRMS over the torque limits):")
        print(f"  {'model':<12}{'weight':>10}{'NRMS lim %':>12}{'converged':>11}{'steps':>7}")
        for r in choice["rows"]:
            w = "-" if r["model"] == "wls" else f"{r['weight']:g}"
            mark = "  <- chosen" if r == choice["best"] else ""
            conv, steps = ("-", "-") if r["model"] == "wls" else (str(r["converged"]), str(r["steps"]))
            print(f"  {r['model']:<12}{w:>10}{r['nrms_limits']:>12.4g}{conv:>11}{steps:>7}{mark}")
    print(
        f"{robot.name}: {base.rank} base parameters of {len(params.parameter_names)} (joint terms "
        f"{','.join(robot.joint_terms) or 'none'}), {doc['method'].upper()} on {prepared.n_samples} samples from "
        f"{len(args.data)} file(s); cond = {float(fit['cond']):.4g}"
    )
    width = min(NAME_WIDTH, max(len(name) for name in base.names))
    print(report.parameter_table(base.names, theta, std, width=max(width, len("base parameter")), indent="  "))
    if any(len(name) > NAME_WIDTH for name in base.names):
        print(f"  (combinations cut at {NAME_WIDTH} characters; in full in {args.output}, base.names)")
    if fit.get("covariance") == "hac":
        print(
            "  std: HAC sandwich over each filtered run's memory (residuals coloured by the derivative filter); "
            "the white-noise std is in params.json fit.std_white"
        )
    if "fs" in robot.joint_terms:
        print(
            f"  Stribeck velocity vs = {robot.stribeck_vs:.4g} rad/s"
            + (" (fitted: separable least squares)" if args.stribeck_vs == "fit" else "")
        )
    if fit.get("gravity"):
        g = fit["gravity"]
        print(
            f"  gravity (fitted) = [{', '.join(f'{v:.4g}' for v in g['vector'])}] m/s^2, {g['tilt_deg']:.3g} deg from "
            f"the model's (log-likelihood gain {g['nll_drop']:.4g})"
        )
    if lugre:
        print(lugre_table(robot.coordinate_names, params.lugre.vector(), fit["lugre"]))
    print("  residual RMS per joint (N m): " + " ".join(f"{v:.4g}" for v in doc["residual_rms_nm"]))
    scr = fit.get("screening") or {}
    if scr.get("outlier_samples") or scr.get("method", args.method) != args.method:
        print(f"  {scr['message']}")
    for problem in physics["problems"]:
        print(f"  PHYSICS: {problem}")
    if physics["consistent"] and fit.get("converged") is not False:
        verdict = "physically consistent"
    elif params.standard is not None:
        verdict = "consistent bodies, but see the problems above (not called consistent)"
    else:
        verdict = (
            "not physically consistent (base parameters only"
            + ("" if args.consistent else "; --consistent for a consistent estimate")
            + ")"
        )
    print(f"  standard parameters: {verdict}")
    print(f"wrote {args.output}" + "".join(f" and {p}" for p in (doc["urdf"], doc["mjcf"], html) if p))
    return code
