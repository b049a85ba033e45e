"""`jaxid identify`: base parameters (and joint friction) from measured motion and torque."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from jaxid import report
from jaxid.cli.common import (
    METHODS,
    HelpFormatter,
    add_bounds_arguments,
    add_data_arguments,
    add_gravity_argument,
    add_json_argument,
    add_model_arguments,
    add_report_argument,
    add_weights_argument,
    bar,
    bounds_spec,
    data_spec,
    emit_json,
    logger,
    model_spec,
    write_report,
)
from jaxid.identification import jackknife
from jaxid.results import json_number
from jaxid.workflow import at_bound, commands, condition_rating, requests, verdicts

EXAMPLE = """examples:
  jaxid identify --robot ur5 data.csv more.csv -o params.json
  jaxid identify --urdf kuka_lwr4.urdf --joint-terms fv,fc,offset --method ols run2.npz run3.npz -o kuka.json
  jaxid identify --robot planar2 --consistent --urdf-out arm.urdf data.csv -o params.json
  jaxid identify --mjcf arm.xml --joint-terms fv,fc,ia --consistent --mjcf-out arm_id.xml data.csv -o params.json
  jaxid identify --robot ur5 --joint-terms fv,fc,fs,offset --stribeck-vs fit data.csv -o params.json
  jaxid identify --robot ur5 data.csv -o params.json --report fit_report
  jaxid identify --robot planar2 --friction lugre --joint-terms '' scurve.csv fourier.csv -o params.json
"""

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
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "data", nargs="+", metavar="DATA", help="dataset files (.csv, .npz) or ROS 2 bags (directory or .mcap), stacked"
    )
    add_model_arguments(p, fit_vs=True, fits_data=True)
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
        "--max-steps",
        type=int,
        default=None,
        metavar="N",
        help="--consistent: Newton steps the fit may take (default 1000); raise it when a fit stops "
        "unconverged at the limit",
    )
    p.add_argument(
        "--accept-unconverged",
        action="store_true",
        help="--consistent: accept a fit that did not converge (exit 0, URDF written; it is still "
        "reported as not converged and never called consistent)",
    )
    p.add_argument(
        "--accept-implausible",
        action="store_true",
        help="--urdf-out/--mjcf-out: write the model of a fit whose checks fail (verdict 'not "
        "plausible'; by default an error: exit 1, params.json written, no model file)",
    )
    p.add_argument(
        "--prior-weight",
        type=float,
        default=None,
        metavar="W",
        help="--consistent: weight of the prior toward the nominal links, in units of one whitened "
        "sample (larger trusts the nominal model more). Default: chosen by cross-validation over the "
        "runs given (leave one run out; runs that repeat one trajectory, or one run: 3 blocks of its phase) on a log "
        "grid from 1e-3 to the "
        "training samples x joints, the largest weight within one standard error of the least "
        "held-out error (table printed); W fixes it (no cross-validation)",
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
    p.add_argument(
        "--urdf-lump",
        action="store_true",
        help="with --urdf and --urdf-out: when a link's identified body less the links fixed to it "
        "(a hand, a flange; kept untouched) would not be physically consistent, write the whole body "
        "into the link and remove their <inertial> instead of refusing",
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


def lugre_table(joints, values, fit) -> str:
    """The per-joint LuGre parameters (n, 8) with the std and relative std of ``fit`` (the
    ``LugreFit`` record), one row per parameter."""
    from jaxid.friction.lugre import JOINT_UNITS, NAMES

    values, std, rel = (np.asarray(x, dtype=float) for x in (values, fit.std, fit.rel_std))
    lines = [
        f"  LuGre friction ({'converged' if fit.converged else 'NOT converged'} in {fit.steps} "
        f"Levenberg-Marquardt steps; per-joint start on {fit.friction_run}):",
        f"  {'param':8s} {'unit':14s}" + "".join(f"{j:>13s} {'rel std':>8s}" for j in joints),
    ]
    for i, (name, unit) in enumerate(zip(NAMES, JOINT_UNITS)):
        lines.append(
            f"  {name:8s} {unit:14s}"
            + "".join(_lugre_cell(values[j, i], rel[j, i], fit, j, name) for j in range(len(joints)))
        )
    for j, joint in enumerate(joints):  # what the friction run does not determine, and why
        for name, d in ((fit.determinability or [{}] * len(joints))[j]).items():
            if d["status"] != "determined":
                lines.append(f"  {joint}: {name}: {d['status']}: {d['reason']}; to determine it: {d['experiment']}")
    return "\n".join(lines)


def _lugre_cell(value, rel, fit, j, name) -> str:
    """A LuGre value with its rel std; "not determined" in place of a value the friction run does
    not determine, a poorly determined one flagged '?'."""
    status = (fit.determinability or [{}] * (j + 1))[j].get(name, {}).get("status", "determined")
    if status == "not determined":
        return f"{'not determined':>13s} {100 * rel:7.3g}%"
    return f"{value:13.5g} {100 * rel:7.3g}%" + ("?" if status == "poorly determined" else "")


def crossval_table(cv: dict) -> str:
    """The cross-validation curve that chose the prior weight (``jaxid.workflow.crossval``): per
    weight the held-out NRMS of each fold, their mean and standard error, the chosen one marked."""
    rot = cv["rotations"]
    lines = [
        f"prior weight chosen by cross-validation ({len(rot)} folds; held-out NRMS over the torque limits, %): "
        "the largest within one standard error of the least mean (Hastie et al., ESL 7.10)",
        f"  {'weight':>10}" + "".join(f"{f'fold {k + 1}':>10}" for k in range(len(rot))) + f"{'mean':>10}{'se':>9}",
        f"  {'wls':>10}" + "".join(f"{r['rows'][0]['nrms_limits']:>10.4g}" for r in rot),
    ]
    for k, w in enumerate(cv["weights"]):
        cells = "".join(
            f"{r['rows'][1 + k]['nrms_limits']:>9.4g}{' ' if r['rows'][1 + k]['converged'] else '*'}" for r in rot
        )
        mean, se = cv["mean_nrms_limits"][str(w)], cv["se_nrms_limits"][str(w)]
        mark = "  <- chosen" if w == cv["chosen"] else ("  (least mean)" if w == cv["least"] else "")
        lines.append(f"  {w:>10.3g}{cells}{mean:>10.4g}{se:>9.2g}{mark}")
    lines.append("  folds (held out): " + "; ".join(f"{k + 1} {r['test']}" for k, r in enumerate(rot)))
    if any(not x["converged"] for r in rot for x in r["rows"][1:]):
        lines.append("  (* not converged; a weight is chosen only where every fold converged)")
    return "\n".join(lines)


def request(args) -> requests.IdentifyRequest:
    """The request of the identify flags."""
    return requests.IdentifyRequest(
        data=tuple(args.data),
        model=model_spec(args),
        prepare=data_spec(args),
        output=args.output,
        method=args.method,
        reference=args.reference,
        consistent=args.consistent,
        accept_unconverged=args.accept_unconverged,
        accept_implausible=args.accept_implausible,
        max_steps=args.max_steps,
        prior_weight=args.prior_weight,
        bounds=bounds_spec(args),
        fit_gravity=args.fit_gravity,
        sdp_check=args.sdp_check,
        validate_on=args.validate_on,
        prior_weights=args.prior_weights,
        urdf_out=args.urdf_out,
        mjcf_out=args.mjcf_out,
        urdf_lump=args.urdf_lump,
        friction=args.friction,
        validation=bool(args.report),
        json=args.json,
        report=args.report,
    )


def run(args) -> int:
    req = request(args)
    if args.report:
        report.pyplot()  # a missing matplotlib fails before the fit, in one line
    out = commands.run_identify(req, log=logger(args), progress=bar(args))
    robot, params, prepared, choice, unconverged = out.robot, out.params, out.prepared, out.choice, out.unconverged
    lugre = req.friction == "lugre"
    model_out, kind = req.model_out
    html = write_report(args, robot, params, out.validation, held_out=False)

    base, est, physics, consistency = params.base, params.estimation, params.physics, params.consistency
    converged = None if consistency is None else consistency.converged
    theta, std, rel = (np.asarray(x) for x in (params.theta, params.std, params.rel_std))
    doc = {
        "params": args.output,
        "robot": robot.name,
        "method": params.method,
        "samples": prepared.n_samples,
        "files": list(args.data),
        "base_parameters": base.rank,
        "parameters": len(params.parameter_names),
        "cond": json_number(est.cond),
        "cond_gram": est.cond_gram,
        "cond_gram_rating": None if est.cond_gram is None else condition_rating(est.cond_gram),
        "residual_rms_nm": [json_number(v) for v in (consistency or est).residual_rms],  # the consistent fit's, if any
        "preprocessing": [p.to_dict() for p in params.preprocessing],
        "physics": {
            "consistent": physics.consistent,
            "problems": physics.problems,
            "checks": physics.checks,
            "plausible": physics.plausible,
        },
        "standard_consistent": params.standard is not None,
        "converged": converged,
        "report": html,
        "stribeck_vs": robot.stribeck_vs if "fs" in robot.joint_terms else None,
        "stribeck_vs_fitted": args.stribeck_vs == "fit",
        "gravity": None if params.gravity_fit is None else params.gravity_fit.to_dict(),
        "base": [
            {
                "name": s,
                "estimate": json_number(v),
                "std": None if b else json_number(d),
                "rel_std_percent": None if b else json_number(r),
                "at_bound": bool(b),
            }
            for s, v, d, r, b in zip(base.names, theta, std, rel, at_bound(params))
        ],
    }
    if choice is not None:
        doc["prior_weight_choice"] = choice
    if lugre:
        doc["lugre"] = {
            **params.lugre_fit.to_dict(),
            "joints": list(robot.coordinate_names),
            "values": np.asarray(params.lugre.vector()).tolist(),
        }
        for line in params.lugre_fit.warnings:  # named, never silent, also under --json
            warnings.warn(line, UserWarning, stacklevel=1)
    code = 1 if unconverged or out.implausible else 0
    if out.implausible and not unconverged:
        failed = [c["name"] for c in physics.checks if c["passed"] is False]
        print(
            f"jaxid identify: error: the fit is not plausible (failed: {', '.join(failed)}; each failing "
            f"link is named under 'checks'); {args.output} holds it, and no {kind} was written; write it "
            "anyway with --accept-implausible, or see docs/your-robot.md for more data, bounds or a prior weight",
            file=sys.stderr,
        )
    if unconverged:  # an error by default: nothing unconverged passes silently or is written as a model
        print(
            f"jaxid identify: error: the consistent fit did not converge in {consistency.steps} steps; "
            f"{args.output} holds it, marked not converged"
            + (f", and no {kind} was written" if model_out else "")
            + f"; raise --max-steps (now {consistency.steps}) or use the result only with --accept-unconverged",
            file=sys.stderr,
        )
    for key, path in (("urdf", args.urdf_out), ("mjcf", args.mjcf_out)):
        doc[key] = path if path and path == out.model_out else None
    if args.json is not None and emit_json(doc, args.json):
        return code
    if choice is not None and "rotations" in choice:
        print(crossval_table(choice))
    elif choice is not None:
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
        f"{len(args.data)} file(s); cond = {float(est.cond):.4g} (column-scaled)"
    )
    if est.cond_gram is not None:
        print(
            f"  cond(Phi^T Phi) = {est.cond_gram:.4g} (unscaled base regressor): "
            f"{condition_rating(est.cond_gram)} [rule of thumb: < 1e3 good, > 1e6 poor]"
        )
    width = min(NAME_WIDTH, max(len(name) for name in base.names))
    bound = at_bound(params)
    print(
        report.parameter_table(
            base.names, theta, std, width=max(width, len("base parameter")), indent="  ", at_bound=bound
        )
    )
    if bound.any():
        print(
            f"  at bound: {', '.join(base.names[k] for k in np.flatnonzero(bound))} held at 0 by the consistent fit "
            "(the data put them below 0): no std; the unconstrained fit's is in params.json"
        )
    if any(len(name) > NAME_WIDTH for name in base.names):
        print(f"  (combinations cut at {NAME_WIDTH} characters; in full in {args.output}, base.names)")
    if (
        params.consistency is not None
        and params.consistency.cov_ls is not None
        and not np.array_equal(np.asarray(params.cov), np.asarray(params.consistency.cov_ls))
    ):  # else the constrained covariance was not finite and the least-squares one stands
        print(
            "  std: of the consistent estimate, its spread under the noise (first order under its constraints and "
            "prior: the fit's sensitivity to the least-squares estimate, whose covariance is params.json's "
            "fit.cov_ls) and its shift from the least-squares estimate (the prior's and the constraints' pull), "
            "added in squares"
        )
    if est.covariance == "hac":
        print(
            "  std: HAC sandwich over each filtered run's memory (residuals coloured by the derivative filter); "
            "the white-noise std is in params.json fit.std_white"
        )
    elif est.covariance == "jackknife":
        print(
            f"  std: block jackknife over {jackknife.BLOCKS} blocks of samples (a model error that follows the motion "
            "included), at least the white-noise std, which is in params.json fit.std_white"
        )
    if "fs" in robot.joint_terms:
        print(
            f"  Stribeck velocity vs = {robot.stribeck_vs:.4g} rad/s"
            + (" (fitted: separable least squares)" if args.stribeck_vs == "fit" else "")
        )
    if params.gravity_fit is not None:
        g = params.gravity_fit
        print(
            f"  gravity (fitted) = [{', '.join(f'{v:.4g}' for v in g.vector)}] m/s^2, {g.tilt_deg:.3g} deg from "
            f"the model's (log-likelihood gain {g.nll_drop:.4g})"
        )
    if lugre:
        print(lugre_table(robot.coordinate_names, params.lugre.vector(), params.lugre_fit))
    print("  residual RMS per joint (N m): " + " ".join(f"{v:.4g}" for v in doc["residual_rms_nm"]))
    scr = params.screening
    if scr is not None and (scr.outlier_samples or scr.method != args.method):
        print(f"  {scr.message}")
    for problem in physics.problems:
        print(f"  PHYSICS: {problem}")
    if physics.checks is not None:
        print("  checks:")
        print("\n".join(verdicts.verdict_lines(physics.checks, indent="    ")))
    print(f"wrote {args.output}" + "".join(f" and {p}" for p in (doc["urdf"], doc["mjcf"], html) if p))
    return code
