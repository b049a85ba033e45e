"""`jaxid crossval`: leave-one-run-out cross-validation of WLS and consistent identification."""

from __future__ import annotations

from jaxid.cli.common import (
    METHODS,
    HelpFormatter,
    add_bounds_arguments,
    add_data_arguments,
    add_gravity_argument,
    add_json_argument,
    add_model_arguments,
    add_weights_argument,
    bar,
    bounds_spec,
    data_spec,
    emit_json,
    logger,
    model_spec,
)
from jaxid.workflow import commands, requests

EXAMPLE = """examples:
  jaxid crossval --urdf kuka_lwr4.urdf --joint-terms fv,fc,offset run1.npz run2.npz run3.npz
  jaxid crossval --robot ur5 --mass-tol 0.3 --prior-weights 1e-4,1e-3,1e-2 a.csv b.csv --json cv.json
"""


def register(sub):
    p = sub.add_parser(
        "crossval",
        help="fit on all runs but one, score on it, every rotation (WLS vs consistent)",
        description="Leave-one-run-out cross-validation: for every run, identify on the others (two-step WLS, and "
        "the physically consistent fit for each prior weight) and predict the held-out run; prints the "
        "held-out RMS normalised by the torque limits (mean over joints of RMSE / (2 tau_max), %, as "
        "'jaxid validate' prints it) per rotation and the prior weight chosen: the largest whose mean is "
        "within one standard error of the least (default weights: 7 log-spaced from 1e-3 to the training "
        "samples x joints). Runs jaxid.workflow.crossval.",
        epilog=EXAMPLE,
        formatter_class=HelpFormatter,
    )
    p.add_argument("data", nargs="+", metavar="DATA", help="dataset files (.csv, .npz) or ROS 2 bags, at least two")
    add_model_arguments(p, fits_data=True)
    p.add_argument("--method", choices=METHODS[:2], default="wls", help="estimator (default wls)")
    add_bounds_arguments(p)
    add_gravity_argument(p)
    add_weights_argument(p)
    add_data_arguments(p)
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    req = requests.CrossvalRequest(
        data=tuple(args.data),
        model=model_spec(args),
        prepare=data_spec(args),
        method=args.method,
        bounds=bounds_spec(args),
        fit_gravity=args.fit_gravity,
        prior_weights=args.prior_weights,
        json=args.json,
    )
    out = commands.run_crossval(req, log=logger(args), progress=bar(args))
    robot, cv = out.robot, out.result
    if args.json is not None and emit_json(cv, args.json):
        return 0
    weights = cv["weights"]
    print(f"{robot.name}: held-out NRMS over the torque limits (%), fit on the other runs")
    print(f"  {'held out':<28}{'wls':>9}" + "".join(f"{f'w={w:.3g}':>10}" for w in weights) + f"{'best/wls':>10}")
    for r in cv["rotations"]:
        cells = "".join(f"{x['nrms_limits']:>9.4g}{'*' if not x['converged'] else ' '}" for x in r["rows"][1:])
        print(
            f"  {r['test'][-28:]:<28}{r['rows'][0]['nrms_limits']:>9.4g}{cells}"
            f"{r['best']['nrms_limits'] / r['rows'][0]['nrms_limits']:>10.3f}"
            + (f"   gravity {r['gravity']['tilt_deg']:.3g} deg off" if r.get("gravity") else "")
        )
    mean = cv["mean_nrms_limits"]
    print(
        f"  {'mean':<28}{sum(r['rows'][0]['nrms_limits'] for r in cv['rotations']) / len(cv['rotations']):>9.4g}"
        + "".join(f"{mean[str(w)]:>9.4g} " for w in weights)
    )
    se = cv["se_nrms_limits"]
    print(f"  {'std error':<28}{'':>9}" + "".join(f"{se[str(w)]:>9.2g} " for w in weights))
    print(
        f"  chosen prior weight: {cv['chosen']:.3g} (the largest within one standard error of the least mean, "
        f"{cv['least']:.3g}; Hastie et al., ESL 7.10)"
        + ("   (* not converged)" if any(not x["converged"] for r in cv["rotations"] for x in r["rows"][1:]) else "")
    )
    return 0
