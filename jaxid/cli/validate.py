"""`jaxid validate`: predict the torques of held-out data from identified parameters."""

from __future__ import annotations

from pathlib import Path

from jaxid.cli.common import (
    HelpFormatter,
    add_data_arguments,
    add_json_argument,
    add_model_arguments,
    add_report_argument,
    data_spec,
    emit_json,
    logger,
    model_spec,
    output_dir,
    warn,
    write_report,
)
from jaxid.workflow import NRMSE_FACTOR, R2_MIN, commands, requests, verdicts

EXAMPLE = """examples:
  jaxid validate --robot ur5 --params params.json data2.csv
  jaxid validate --urdf kuka_lwr4.urdf --params kuka.json run1.npz --out figures --json metrics.json
  jaxid validate --params params.json data2.csv     (the model named in params.json)
  jaxid validate --params params.json data2.csv --report validation_report
"""


def register(sub):
    p = sub.add_parser(
        "validate",
        help="compare measured torques with those the identified parameters predict",
        description="Predict the torques of each dataset file from identified base parameters and print "
        "per-joint metrics: RMSE (N m), NRMSE (RMSE / RMS of the measured torque, %%), R^2, "
        "WAPE (%%), max PE (max |error| / mean |tau|, %%) and, where the model has torque "
        "limits, NRMS lim (RMSE / (2 tau_max), %%: the error over the torque range "
        "[-tau_max, tau_max]); writes figures of measured vs predicted torque.",
        epilog=EXAMPLE,
        formatter_class=HelpFormatter,
    )
    p.add_argument("data", nargs="+", metavar="DATA", help="held-out dataset files (.csv, .npz) or ROS 2 bags")
    p.add_argument("--params", required=True, metavar="PATH", help="params.json written by 'jaxid identify'")
    add_model_arguments(p, robot_default=None, joint_terms=None)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write the torque figures and metrics.json into DIR (nothing is written without it)",
    )
    p.add_argument("--no-figures", action="store_true", help="with --out: skip the figures and metrics.json")
    p.add_argument(
        "--accept-unconverged",
        action="store_true",
        help="validate a params.json whose consistent fit did not converge (refused otherwise)",
    )
    add_report_argument(p, "the held-out prediction (parameter table with flags, metrics, torque fit, residuals)")
    add_data_arguments(p)
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from jaxid import report

    writes = args.out is not None and not args.no_figures
    req = requests.ValidateRequest(
        data=tuple(args.data),
        params=args.params,
        model=model_spec(args),
        prepare=data_spec(args),
        accept_unconverged=args.accept_unconverged,
        json=args.json,
        out=args.out if writes else None,
        report=args.report,
    )
    commands.check_paths(req)  # before the folders are made
    if writes:
        output_dir(args.out)
    if args.report:
        output_dir(args.report)
    if args.report or writes:
        report.pyplot()  # a missing matplotlib fails before the work, in one line
    res = commands.run_validate(req, log=logger(args), warn=lambda line: warn(args, line))
    model, params, prepared, val = res.model, res.params, res.prepared, res.validation
    out = Path(args.out) if writes else None
    names = model.names
    doc = {
        "params": args.params,
        "robot": model.name,
        "files": [],
        "warnings": val.warnings,
        "preprocessing": list(prepared.choices),
    }
    checks = None if params.physics is None else params.physics.checks
    if checks is not None:  # the identification's own verdict, named with the file it came from
        doc["checks"] = {"checks": checks, "plausible": params.physics.plausible}
    for path, entry, t, real, pred in zip(args.data, val.runs, val.t, val.measured, val.predicted):
        entry = {"file": path, **{k: v for k, v in entry.items() if k != "source"}}
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            fig = out / f"{Path(path).stem}_torques.png"
            report.torque_figure(fig, t, real, pred, names, title=f"{Path(path).name}: measured vs predicted torque")
            entry["figure"] = str(fig)
        doc["files"].append(entry)
    doc["report"] = write_report(args, model, params, val, held_out=True)
    if out is not None:
        emit_json(doc, str(out / "metrics.json"))
    if args.json is not None and emit_json(doc, args.json):
        return 0

    cols = [
        ("rmse", "RMSE N m", ".4g"),
        ("nrmse", "NRMSE %", ".3g"),
        ("r2", "R2", ".4f"),
        ("wape", "WAPE %", ".3g"),
        ("max_pe", "max PE %", ".3g"),
        ("nrms_limits", "NRMS lim %", ".3g"),
    ]
    if checks is not None:
        print(f"{args.params}: {verdicts.summary_line(checks)} (the identification's checks)")
    for e in doc["files"]:
        motor = e.get("space") == "motor"  # a motor-side log: the motors' torques
        where = " (motor torques, as logged)" if motor else ""
        print(f"{e['file']}: {e['samples']} samples{where}, relative error ||e||/||tau|| = {e['relative_error']:.3g} %")
        shown = [c for c in cols if c[0] in e]
        labels = [f"{'m' if motor else ''}{j + 1} ({names[j]})" for j in range(model.n)]
        w = max(14, *(len(x) + 1 for x in labels))
        print(f"  {'motor' if motor else 'joint':<{w}}" + "".join(f"{h:>12}" for _, h, _ in shown))
        fmt = lambda v, f: f"{v:>12{f}}" if v is not None else f"{'-':>12}"
        for j in range(model.n):
            print(f"  {labels[j]:<{w}}" + "".join(fmt(e[k]["per_joint"][j], f) for k, _, f in shown))
        print(f"  {'overall':<{w}}" + "".join(fmt(e[k]["overall"], f) for k, _, f in shown))
        for flag in e.get("flagged", []):
            print(f"  FLAGGED: {flag['line']}")
        if not e.get("flagged"):
            print(f"  no joint flagged (NRMSE within {NRMSE_FACTOR:g}x the other joints' median, R^2 >= {R2_MIN:g})")
    if out is not None:
        print(f"wrote figures and metrics.json to {out}/")
    if doc["report"]:
        print(f"wrote {doc['report']}")
    return 0
