"""`jaxid demo`: the main job on built-in defaults (see ``jaxid.pipeline``)."""
from __future__ import annotations

import json


def register(sub):
    p = sub.add_parser(
        "demo", help="identify a simulated UR5 end to end on built-in defaults",
        description="Design an optimised excitation, simulate noisy measurements of a perturbed UR5, "
                    "identify its 48 base parameters by WLS and validate on another trajectory.\n\n"
                    "example: jaxid demo --out jaxid_demo",
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--out", default="jaxid_demo", help="report folder (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--steps", type=int, default=None, help="excitation optimiser steps")
    p.add_argument("--json", action="store_true", help="print the JSON result instead of the tables")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)


def run(args) -> int:
    from jaxid import pipeline, report

    cfg = pipeline.Config(out_dir=args.out, seed=args.seed, progress=not args.quiet)
    if args.steps is not None:
        if args.steps < 0:
            raise ValueError(f"--steps must be >= 0, got {args.steps}")
        cfg.steps = args.steps
    result = pipeline.run(cfg, log=(lambda *a: None) if (args.quiet or args.json) else print)
    if args.json:
        print(json.dumps(report.to_jsonable(result.summary)))
        return 0
    for heading, text in pipeline.sections(result).items():
        print(f"\n== {heading}\n{text}")
    worst = max(float(v) for v in result.validation_true["nrmse"]["per_joint"])
    print(f"\nvalidation NRMSE against the true torque: worst joint {worst:.3f} % (target <= 1 %)")
    if result.files:
        print(f"report: {result.files['markdown']}  result: {result.files['json']}")
    return 0
