"""`jaxid payload`: identify a payload on top of an identified robot model."""

from __future__ import annotations

import numpy as np

from jaxid.cli.common import (
    HelpFormatter,
    add_data_arguments,
    add_json_argument,
    add_model_arguments,
    comma_list,
    data_spec,
    emit_json,
    logger,
    model_spec,
    payload_design_lines,
    warn,
)
from jaxid.results import json_number
from jaxid.workflow import commands, requests

EXAMPLE = """examples:
  jaxid payload --robot ur5 --params robot.json loaded.csv -o payload.json
  jaxid payload --params robot.json --joints 1,2,3 loaded.csv          (wrist torques left out)
  jaxid payload --params robot.json --period 20000 --average --smooth 5 --step 10 loaded.csv
  jaxid payload --robot ur5 loaded.csv --unloaded unloaded.csv   (same trajectory without the payload)
  jaxid payload --robot ur5 loaded.csv --unloaded unloaded.csv --no-align   (runs already on the same stamps)
"""


def register(sub):
    p = sub.add_parser(
        "payload",
        help="identify a payload's 10 inertial parameters on top of an identified robot",
        description="Identify the mass, first moments and inertia (about the flange origin, in the flange "
        "frame) of a load on the flange from data measured with it attached: the torques the "
        "identified robot model predicts are subtracted and the rest is fitted by weighted least "
        "squares, the robot's estimate and covariance from --params updated by the loaded data "
        "as a prior (so its error leaves the payload). Prints the 10 parameters with standard deviations, which of them the joints "
        "and trajectory identify, and the physical-consistency check.",
        epilog=EXAMPLE,
        formatter_class=HelpFormatter,
    )
    p.add_argument("data", metavar="DATA", help="loaded-robot dataset (.csv, .npz: t, q, [qd, qdd,] tau) or ROS 2 bag")
    p.add_argument(
        "--params",
        metavar="PATH",
        help="params.json of the robot written by 'jaxid identify' (or --unloaded, or --nominal)",
    )
    p.add_argument(
        "--nominal",
        action="store_true",
        help="subtract the model's NOMINAL inertial parameters (its file's or built-in ones) when neither "
        "--params nor --unloaded is given: their errors go into the payload's estimate",
    )
    add_model_arguments(p, joint_terms=None, fits_data=True)
    p.add_argument(
        "--unloaded",
        metavar="DATA",
        help="the same trajectory run without the payload: the payload "
        "is fitted to the torque difference, so the robot model's own error (and friction) cancels "
        "instead of passing into the payload; --params is then not needed. The unloaded run is first put on "
        "the loaded run's stamps (sub-sample time offset from the positions, cubic-spline resampling, the "
        "overlap kept)",
    )
    p.add_argument(
        "--no-align",
        dest="align",
        action="store_false",
        help="with --unloaded: difference the runs sample by sample as logged (their stamps must agree)",
    )
    p.add_argument("--joints", metavar="LIST", help="1-based joints whose torques are used, e.g. 1,2,3 (default: all)")
    p.add_argument(
        "--cov",
        metavar="LIST",
        help="noise variance of each used joint, N^2 m^2, comma separated "
        "(default: estimated per joint from the residuals)",
    )
    p.add_argument(
        "--period",
        type=int,
        metavar="K",
        help="samples per excitation period; the data must hold "
        "whole periods, which are then filtered as periodic (needed by --average)",
    )
    p.add_argument("--average", action="store_true", help="average the periods into one")
    p.add_argument(
        "--gain-std",
        type=float,
        metavar="FRACTION",
        help="relative std of each joint's torque gain (torque constant, drive gain, sensor calibration) that the "
        "printed std includes: a wrong torque scale is a payload of another size to the data, which no residual "
        # payload.GAIN_STD and CURRENT_GAIN_STD written out (importing them would load optimistix for every command;
        # tests/test_payload.py checks them)
        "shows (default 0.02 for torques logged in N m, 0.1 for motor currents times --gains; 0 for exact torques)",
    )
    p.add_argument(
        "--smooth", type=int, default=0, metavar="K", help="five-point cubic smoothing passes on q and tau (default 0)"
    )
    add_data_arguments(p)
    p.add_argument("-o", "--output", metavar="PATH", help="write the result as JSON to PATH")
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from jaxid.identification import payload as P

    req = requests.PayloadRequest(
        data=args.data,
        model=model_spec(args),
        params=args.params,
        unloaded=args.unloaded,
        nominal=args.nominal,
        joints=comma_list(args.joints, int, "--joints", "comma-separated joint numbers"),
        cov=comma_list(args.cov, float, "--cov", "comma-separated numbers"),
        period=args.period,
        average=args.average,
        smooth=args.smooth,
        prepare=data_spec(args),
        output=args.output,
        json=args.json,
        align=args.align,
        gain_std=args.gain_std,
    )
    out = commands.run_payload(req, log=logger(args), warn=lambda line: warn(args, line))
    from jaxid.identification.payload_design import SMOOTHING_LOSS_LIMIT

    robot, samples, fit, nf = out.robot, out.samples, out.fit, out.noise
    theta, std, est = (np.asarray(x) for x in (fit.theta, fit.std, fit.estimate))
    # A payload is a rigid body: the estimate reported is the physically consistent one (the least-squares
    # one when that is a body), least squares beside it; see PayloadFit.estimate.
    kind = fit.estimate_kind
    doc = dict(
        robot=robot.name,
        params=args.params,
        data=args.data,
        unloaded=args.unloaded,
        alignment=None
        if out.alignment is None
        else dict(shift_s=out.alignment.shift, overlap=out.alignment.overlap, dropped=out.alignment.dropped),
        samples=len(samples[0]),
        joints=[j + 1 for j in fit.joints],
        names=list(P.PAYLOAD_NAMES),
        estimate=[json_number(v) for v in est],
        estimate_kind=kind,
        least_squares=[json_number(v) for v in theta],
        std=[json_number(v) for v in std],
        std_floor=[json_number(v) for v in np.asarray(fit.std_floor)],
        std_white=[json_number(v) for v in np.asarray(fit.std_white)],
        covariance=fit.covariance,
        blocks=fit.blocks,
        gain_std=fit.gain_std,
        gain_source=out.gain_source,
        std_gain=[json_number(v) for v in np.sqrt(np.diag(np.asarray(fit.cov_gain)))],
        rank=fit.rank,
        identifiable=np.asarray(fit.identifiable).tolist(),
        base_names=list(fit.base.names),
        base_estimate=[json_number(v) for v in np.asarray(fit.theta_base)],
        consistent=fit.consistent,
        converged=fit.converged,
        verdict=fit.verdict(),
        failures=list(fit.failures),
        residual_rms=[json_number(v) for v in np.asarray(fit.fit.residual_rms)],
        # The payload article's RMS2 beside RMS1 (the residual): the torque noise, model-free.
        noise_rms=[json_number(v) for v in nf.rms],
        noise_rms_fitted=[json_number(v) for v in nf.rms_fitted],
        noise_method=nf.method,
        smoothing_loss=None
        if nf.smoothing_loss is None
        else dict(
            {k: [json_number(x) for x in v] for k, v in nf.smoothing_loss.items()},
            limit=SMOOTHING_LOSS_LIMIT,
            passes=args.smooth,
        ),
        design=None if nf.design is None else nf.design.to_json(),
        design_note=nf.design_note,
        warnings=list(out.warnings),
    )
    if args.output:
        emit_json(doc, args.output)
    if args.json is not None and emit_json(doc, args.json):
        return 0
    units = ("kg", "kg m", "kg m", "kg m") + ("kg m^2",) * 6
    print(
        f"payload on {robot.name} from {len(samples[0])} samples, joints "
        f"{','.join(str(j + 1) for j in fit.joints)}: rank {fit.rank} of 10 (cond {float(fit.fit.cond):.3g})"
    )
    if out.alignment is not None:
        print(f"  {out.alignment.describe('unloaded run')}")
    print(f"  fit: {fit.verdict()}")
    constrained = kind == "constrained"
    design = nf.design
    expected = np.full(10, np.nan) if design is None else design.std
    print(
        f"  {'parameter':<10}{'estimate':>14}{'std':>12}{'expected':>12}"
        + (f"{'least squares':>15}" if constrained else "")
        + "  unit"
    )
    for name, v, s, e, ls, u in zip(P.PAYLOAD_NAMES, est, std, expected, theta, units):
        print(
            f"  {name:<10}{v:>14.6g}{s:>12.3g}{e:>12.3g}" + (f"{ls:>15.6g}" if constrained else "") + f"  {u}"
            if np.isfinite(v)
            else f"  {name:<10}{'unidentified':>14}"
        )
    what = (
        f"block jackknife over {fit.blocks} blocks of samples: the model's error the residuals show and the robot "
        "model's uncertainty included, at least the white-noise std"
        if fit.covariance == "jackknife"
        else "white noise (the model taken as right), the robot model's uncertainty included"
    )
    if fit.gain_std > 0:
        what += (
            f"; plus a {100 * fit.gain_std:g} % std of each joint's torque gain ({out.gain_source}; --gain-std), "
            "which no residual shows"
        )
    print(
        f"  std: achieved ({what}; the white-noise std is std_white in the JSON); expected: the design figure, "
        "the Fisher information of these samples at the record's torque noise alone"
        + ("" if design is not None else f" ({nf.design_note})")
    )
    print(f"  {'joint':<8}{'residual RMS':>14}{'noise RMS':>12}{'as fitted':>12}  N m (noise: {nf.method})")
    for j, r1, r2, r3 in zip(fit.joints, np.asarray(fit.fit.residual_rms), nf.rms, nf.rms_fitted):
        print(f"  {j + 1:<8}{r1:>14.3g}{r2:>12.3g}{r3:>12.3g}")
    if nf.smoothing_loss is not None:
        lt, lq = (100 * np.max(nf.smoothing_loss[k]) for k in ("tau", "q"))
        over = max(lt, lq) > 100 * SMOOTHING_LOSS_LIMIT
        print(
            f"  smoothing ({args.smooth} five-point cubic passes): information loss (share of the signal's energy "
            f"removed, worst joint) torque {lt:.2g} %, position {lq:.2g} % "
            + (
                f"-- OVER the {100 * SMOOTHING_LOSS_LIMIT:g} % limit: fewer --smooth passes"
                if over
                else f"(limit {100 * SMOOTHING_LOSS_LIMIT:g} %)"
            )
        )
    if design is not None:
        for line in payload_design_lines(design)[1:]:
            if "periods needed" not in line:  # the record is what it is: its design figures, not a plan
                print(line)
    if fit.rank < 10:
        print("  identified combinations: " + "; ".join(fit.base.names))
    else:
        c = est[1:4] / est[0]
        print(f"  m = {est[0]:.4g} kg, centre of mass {np.round(1e3 * c, 2)} mm in the flange frame")
    if constrained:
        print(
            "  estimate: the physical body (log-Cholesky) closest to least squares in the metric of its covariance; "
            "std: that of least squares, whose error the constrained estimate's never exceeds in that metric"
        )
    for w in out.warnings:
        if "physically consistent" not in w:  # already reported above
            print(f"  warning: {w}")
    if args.output:
        print(f"wrote {args.output}")
    return 0
