"""`jaxid demo`: the main job on built-in defaults, as a user runs it.

The demo is literally the walk-through of the README, run in one process (so compiled code is
shared) and printed command by command:

    jaxid excite   --robot ur5 --starts 2 --steps 60 -o traj.csv           optimised excitation
    jaxid excite   --robot ur5 --starts 2 --steps 0 --seed 1 -o traj2.csv  a held-out trajectory
    jaxid simulate --robot ur5 --trajectory traj.csv  --robot-seed 0 --noise-seed 1 -o data.csv
    jaxid simulate --robot ur5 --trajectory traj2.csv --robot-seed 0 --noise-seed 2 -o data2.csv
    jaxid identify --robot ur5 data.csv -o params.json
    jaxid validate --params params.json data2.csv        against the measured torque
    jaxid validate --params params.json truth2.csv       against the noise-free true torque

Every option not shown is the subcommand's default, so the demo's result is what a user gets
from these commands. Then it writes a report (``report.md``, ``result.json``, figures) that
compares the estimate with the simulated robot's true base parameters.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import sys
import time
from pathlib import Path

from jaxid.cli import UserError
from jaxid.cli.common import HelpFormatter, add_json_argument, output_dir


def register(sub):
    p = sub.add_parser(
        "demo",
        help="identify a simulated UR5 end to end on built-in defaults",
        description="Run the README's walk-through on a simulated robot: design an optimised excitation, simulate "
        "noisy measurements of a perturbed robot on it and on a second trajectory, identify the base "
        "parameters with the defaults of 'jaxid identify', and validate on the second trajectory. "
        "Each command is printed before it runs.\n\nexample: jaxid demo --out jaxid_demo",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--out", default="jaxid_demo", help="folder for the files and the report (default: %(default)s)")
    p.add_argument("--robot", default="ur5", metavar="NAME", help="built-in robot: ur5 or planarN (default ur5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulated robot and the excitation (default 0)")
    p.add_argument("--steps", type=int, default=60, help="excitation optimiser steps (default 60)")
    p.add_argument("--starts", type=int, default=2, help="excitation optimiser starts (default 2)")
    p.add_argument("--harmonics", type=int, default=5, help="Fourier harmonics of the excitation (default 5)")
    p.add_argument(
        "--base-frequency",
        type=float,
        default=0.05,
        metavar="HZ",
        help="excitation base frequency (default 0.05 Hz, a 20 s period)",
    )
    add_json_argument(p)
    p.set_defaults(func=run)


def commands(args, out: Path) -> list[tuple[str, list[str]]]:
    """The demo's steps: (what, jaxid arguments)."""
    f = lambda name: str(out / name)
    robot = ["--robot", args.robot]
    exc = ["--harmonics", str(args.harmonics), "--base-frequency", f"{args.base_frequency:g}"]
    return [
        (
            "design an optimised excitation",
            [
                "excite",
                *robot,
                *exc,
                "--starts",
                str(args.starts),
                "--steps",
                str(args.steps),
                "--seed",
                str(args.seed),
                "-o",
                f("traj.csv"),
            ],
        ),
        # As many starts as the first: the same shapes, so its compiled programs are reused.
        (
            "a second, held-out trajectory (the best of random feasible starts)",
            [
                "excite",
                *robot,
                *exc,
                "--starts",
                str(args.starts),
                "--steps",
                "0",
                "--seed",
                str(args.seed + 1),
                "-o",
                f("traj2.csv"),
            ],
        ),
        (
            "measure the simulated robot on the excitation",
            [
                "simulate",
                *robot,
                "--trajectory",
                f("traj.csv"),
                "--robot-seed",
                str(args.seed),
                "--noise-seed",
                str(2 * args.seed + 1),
                "-o",
                f("data.csv"),
                "--true-params",
                f("true.json"),
            ],
        ),
        (
            "measure the same robot on the held-out trajectory",
            [
                "simulate",
                *robot,
                "--trajectory",
                f("traj2.csv"),
                "--robot-seed",
                str(args.seed),
                "--noise-seed",
                str(2 * args.seed + 2),
                "-o",
                f("data2.csv"),
                "--truth",
                f("truth2.csv"),
            ],
        ),
        ("identify", ["identify", *robot, f("data.csv"), "-o", f("params.json")]),
        (
            "validate against the measured torque",
            [
                "validate",
                "--params",
                f("params.json"),
                f("data2.csv"),
                "--out",
                f("validation"),
                "--json",
                f("validation.json"),
            ],
        ),
        (
            "validate against the noise-free true torque",
            [
                "validate",
                "--params",
                f("params.json"),
                f("truth2.csv"),
                "--out",
                f("validation_true"),
                "--json",
                f("validation_true.json"),
            ],
        ),
    ]


def run(args) -> int:
    from jaxid.cli import main

    if args.steps < 0 or args.starts < 1:
        raise UserError(f"--steps must be >= 0 and --starts >= 1, got {args.steps} and {args.starts}")
    out = output_dir(args.out)
    log = (lambda *a, **k: None) if (args.quiet or args.json == "-") else print
    timings = {}
    for i, (what, argv) in enumerate(commands(args, out)):
        log(f"\n[{i + 1}/7] {what}\n$ jaxid {shlex.join(argv)}", flush=True)
        t0 = time.perf_counter()
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink if log is not print else sys.stdout):
            code = main(argv + (["--quiet"] if args.quiet or args.json == "-" else []))
        timings[f"{i + 1} {argv[0]}"] = time.perf_counter() - t0
        if code not in (0, 1) or (code == 1 and argv[0] != "excite"):
            raise UserError(f"step {i + 1} ('jaxid {shlex.join(argv)}') failed with status {code}")
    summary = report_files(out, args.robot, timings, commands(args, out))
    if args.json is not None:
        from jaxid.cli.common import emit_json

        if emit_json(summary, args.json):
            return 0
    worst = summary["worst_nrmse_true_percent"]
    log(f"\nvalidation NRMSE against the true torque: worst joint {worst:.3f} % (target <= 1 %)")
    log(f"estimates within 3 std of the truth: {summary['within_3_std']} of {len(summary['names'])} base parameters")
    log(f"report: {summary['files']['markdown']}  result: {summary['files']['json']}")
    log("timings: " + "  ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    return 0


def commands_text(steps) -> str:
    """The Markdown of the demo's Commands section: each step (what, jaxid arguments) in words
    and as the command line a user types (an indented code block)."""
    lines = ["Every step is a command a user runs (every option not shown is its default):", ""]
    for i, (what, argv) in enumerate(steps):
        lines += [f"{i + 1}. {what}:", "", f"        jaxid {shlex.join(argv)}", ""]
    return "\n".join(lines).rstrip()


def report_files(out: Path, robot_name: str, timings: dict, steps=()) -> dict:
    """Write the demo's report from the files its commands wrote (``steps``: the commands run,
    (what, jaxid arguments), for its Commands section); returns the JSON summary."""
    import numpy as np

    from jaxid import report, results, workflow

    params = results.load_params(out / "params.json")
    physics, runs = params.physics, params.preprocessing
    assert physics is not None and runs is not None  # jaxid identify records both
    true = json.loads((out / "true.json").read_text())
    names = tuple(params.parameter_names)
    theta_true = np.zeros(len(names))
    for name, value in zip(true["names"], true["theta"]):
        theta_true[names.index(name)] = value  # the true robot may carry joint terms the model lacks: none here
    truth = np.asarray(params.base.to_base(theta_true))
    estimate, std = np.asarray(params.theta), np.asarray(params.std)
    val = json.loads((out / "validation.json").read_text())["files"][0]
    val_true = json.loads((out / "validation_true.json").read_text())["files"][0]
    robot = results.model_from_description(params.model)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(estimate - truth) / std
    summary = {
        "robot": robot_name,
        "names": list(params.base.names),
        "estimate": estimate.tolist(),
        "std": std.tolist(),
        "truth": truth.tolist(),
        "within_3_std": int(np.sum(z <= 3)),
        "preprocessing": [c.to_dict() for c in runs],
        "physics": {
            "consistent": physics.consistent,
            "problems": physics.problems,
            "checks": physics.checks,
            "plausible": physics.plausible,
        },
        "validation_measured": val,
        "validation_true": val_true,
        "worst_nrmse_true_percent": max(v for v in val_true["nrmse"]["per_joint"] if v is not None),
        "timings_s": timings,
    }
    figs = report.parameter_figure(out, estimate, std, truth)
    table = lambda rows: report.markdown_table(*rows)
    sections = {
        "Commands": commands_text(steps) if steps else "Every step is a command a user runs; see `jaxid demo --help`.",
        "Data preparation": "\n".join(f"- {workflow.describe_run(c)}" for c in runs),
        "Base parameters": report.FLAG_LEGEND
        + "\n\n"
        + table(report.parameter_rows(params, joint_types=robot.joint_types, truth=truth)),
        "Validation against the measured torque": table(report.metrics_rows(val, robot.coordinate_names)),
        "Validation against the noise-free true torque": table(report.metrics_rows(val_true, robot.coordinate_names)),
        "Physics": "\n".join(
            [f"- {p}" for p in physics.problems]
            + [f"- {line.strip()}" for line in workflow.verdict_lines(physics.checks or [], indent="")]
        )
        or "no problems found",
        "Timings": "  ".join(f"{k} {v:.1f} s" for k, v in timings.items()),
    }
    figures = figs + [str(Path(p).relative_to(out)) for p in (val.get("figure"), val_true.get("figure")) if p]
    summary["files"] = report.write(out, f"jaxid identification: {robot_name}", sections, summary, figures)
    return summary
