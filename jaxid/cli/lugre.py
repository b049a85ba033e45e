"""`jaxid lugre`: identify LuGre friction parameters from a friction experiment."""

from __future__ import annotations

import warnings

from jaxid.cli.common import HelpFormatter, add_json_argument, emit_json, logger
from jaxid.workflow import commands, requests

EXAMPLE = """examples:
  jaxid lugre friction.csv -o lugre.json
  jaxid lugre friction.csv --validation friction_val.csv --method shape --seed 3

CSV columns (header row): t (s), then either x (m), F (N) for one axis, or q1..qn (rad),
F1..Fn (N*m) for n joints; optional velocity columns v or qd1..qdn (else central
differences of the position). Uniform sampling (1 kHz in the S-curve experiments).
"""


def register(sub):
    p = sub.add_parser(
        "lugre",
        help="identify LuGre dynamic friction (8 parameters per axis) from friction data",
        description="Identify sigma0, sigma1, alpha0..alpha3, v0, vd of the LuGre friction model for each "
        "axis of a friction experiment (an S-curve through zero velocity with creep dwells): "
        "steady-state least squares, Stribeck and presliding shape factors, a particle swarm, "
        "the shape-factor iteration, a golden-section search for vd and Levenberg-Marquardt. "
        "Prints the parameters with their standard deviations (Gauss-Newton covariance of the "
        "simulated-force residual), warnings naming poorly determined parameters, parameters at "
        "a search bound and iterations that did not converge, per parameter whether the record "
        "determines it (a value not determined is printed as such, a poorly determined one's std "
        "flagged '?', each with its reason and the experiment that would determine it), and the WAPE / max PE of the "
        "simulated force (on the validation file, if given), next to a Coulomb + viscous model.",
        epilog=EXAMPLE,
        formatter_class=HelpFormatter,
    )
    p.add_argument("data", metavar="CSV", help="friction experiment: t, x, F or t, q1..qn, F1..Fn")
    p.add_argument("--validation", metavar="CSV", help="held-out experiment of the same axes for WAPE / max PE")
    p.add_argument(
        "--method",
        choices=("full", "shape", "shape-log", "shape-article", "shape-article-once", "pso"),
        default="full",
        metavar="METHOD",  # the six choices, described below, would make a usage line no terminal wraps
        help="full (default): swarm 50x50, shape-factor iteration, vd, Levenberg-Marquardt; "
        "shape: the iteration, then sigma1 and vd by Levenberg-Marquardt, the other six held "
        "(= shape-log, the better iteration); shape-article: "
        "the article's additive update law, alternated three times with the golden section for vd; "
        "shape-article-once: as published, vd once after the law; pso: swarm 100x200 over all eight",
    )
    p.add_argument(
        "--rel-std",
        type=float,
        default=None,
        metavar="R",
        help="relative std above which a parameter is reported poorly determined (default 0.05)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the particle swarm (default 0)")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="V",
        help="|v| above which friction is steady state, units/s (default 3 deg/s = 0.0524)",
    )
    p.add_argument(
        "--hold",
        choices=("linear", "zero"),
        default="linear",
        help="velocity between samples in the model: linear (first-order hold, default) or zero (zero-order "
        "hold: the bristle state updated once per sample with the sampled velocity, as many simulators do)",
    )
    p.add_argument("-o", "--output", metavar="PATH", help="write the result as JSON to PATH")
    add_json_argument(p)
    p.set_defaults(func=run)


def _nan(v):
    return float("nan") if v is None else v


def _cell(r, n) -> str:
    """One parameter of one axis: value, std, rel std; "not determined" in place of a value the
    record does not determine, and the std of a poorly determined one flagged with '?'."""
    status = r.get("determinability", {}).get(n, {}).get("status", "determined")
    rel = f"{100 * _nan(r['rel_std'][n]):7.3g}%"
    if status == "not determined":
        return f"{'not determined':>13s} {'-':>10s} {rel}"
    flag = "?" if status == "poorly determined" else " "
    return f"{_nan(r['params'][n]):13.5g} {_nan(r['std'][n]):9.3g}{flag} {rel}"


def run(args) -> int:
    from jaxid.friction import lugre as model

    req = requests.LugreRequest(
        data=args.data,
        validation=args.validation,
        method=args.method,
        rel_std=args.rel_std,
        seed=args.seed,
        threshold=args.threshold,
        hold=args.hold,
        output=args.output,
        json=args.json,
    )
    result = commands.run_lugre(req, log=logger(args)).result
    for r in result["axes"]:  # named, never silent, also under --json
        for w in r["warnings"]:
            warnings.warn(w, UserWarning, stacklevel=1)
    if args.json is not None and emit_json(result, args.json):
        return 0
    rows = result["axes"]
    where = f"validation file {args.validation}" if args.validation else "the identification data (no --validation)"
    print(f"{'param':8s} {'unit':10s}" + "".join(f"{r['axis']:>13s} {'std':>10s} {'rel std':>8s}" for r in rows))
    for n, u in zip(model.NAMES, model.UNITS):
        print(f"{n:8s} {u:10s}" + "".join(_cell(r, n) for r in rows))
    for r in rows:
        print(
            f"  {r['axis']}: residual std {_nan(r['residual_std']):.3g}, {r['iterations']} shape-factor sweeps, "
            + ("converged" if r["converged"] else "NOT converged")
            + ", "
            + (
                "physically consistent"
                if r["physically_consistent"]
                else "NOT physically consistent: " + "; ".join(r["physics_problems"])
            )
        )
    print(f"simulated force on {where}:")
    for r in rows:
        a, b = r["lugre"], r["coulomb_viscous"]
        print(
            f"  {r['axis']}: LuGre WAPE {_nan(a['wape_pct']):.2f} %, max PE {_nan(a['max_pe_pct']):.2f} %; "
            f"Coulomb+viscous WAPE {_nan(b['wape_pct']):.2f} %, max PE {_nan(b['max_pe_pct']):.2f} %"
        )
    for r in rows:  # what the record does not determine, why, and the experiment that would
        for line in r.get("not_determined", []):
            print(f"  {line}")
    if args.output:
        print(f"wrote {args.output}")
    return 0
