"""`jaxid lugre`: identify LuGre friction parameters from a friction experiment."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import add_json_argument, emit_json, refuse_overwrite

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
        "a search bound and iterations that did not converge, and the WAPE / max PE of the "
        "simulated force (on the validation file, if given), next to a Coulomb + viscous model.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", metavar="CSV", help="friction experiment: t, x, F or t, q1..qn, F1..Fn")
    p.add_argument("--validation", metavar="CSV", help="held-out experiment of the same axes for WAPE / max PE")
    p.add_argument(
        "--method",
        choices=("full", "shape", "shape-log", "shape-article", "pso"),
        default="full",
        help="full (default): swarm 50x50, shape-factor iteration, vd, Levenberg-Marquardt; "
        "shape: the iteration, then sigma1 and vd by Levenberg-Marquardt, the other six held "
        "(= shape-log, the better iteration); shape-article: "
        "the article's additive update law; pso: swarm 100x200 over all eight",
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
    p.add_argument("-o", "--output", metavar="PATH", help="write the result as JSON to PATH")
    add_json_argument(p)
    p.set_defaults(func=run)


def read_friction_csv(path):
    """(names, dt, x (N, n), v (N, n), F (N, n)) from a friction CSV; UserError if malformed."""
    try:
        with open(path) as f:
            header = [h.strip() for h in f.readline().strip().split(",")]
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except ValueError as e:
        raise UserError(f"{path}: not a numeric CSV with a header row ({e})") from None
    if data.shape[1] != len(header):
        raise UserError(f"{path}: {len(header)} header names but {data.shape[1]} columns")
    col = {h: data[:, i] for i, h in enumerate(header)}
    if "t" not in col:
        raise UserError(f"{path}: no 't' column; expected t, x, F or t, q1..qn, F1..Fn")
    if "x" in col and "F" in col:
        names, pos, vel, frc = ["x"], ["x"], ["v"], ["F"]
    else:
        n = sum(1 for h in header if h.startswith("q") and h[1:].isdigit())
        names = [f"q{j}" for j in range(1, n + 1)]
        pos, vel, frc = names, [f"qd{j}" for j in range(1, n + 1)], [f"F{j}" for j in range(1, n + 1)]
        missing = [c for c in pos + frc if c not in col]
        if n == 0 or missing:
            raise UserError(f"{path}: expected columns t, x, F or t, q1..qn, F1..Fn; missing {missing or ['x', 'F']}")
    for name in ["t"] + pos + frc + [c for c in vel if c in col]:
        bad = np.flatnonzero(~np.isfinite(col[name]))
        if bad.size:
            raise UserError(f"{path}: column {name} has NaN/inf at data row {bad[0] + 1}; remove or repair it")
    t = col["t"]
    if len(t) < 100:
        raise UserError(f"{path}: {len(t)} samples; an identification needs at least 100")
    steps = np.diff(t)
    dt = float(np.median(steps))
    if not dt > 0 or np.any(np.abs(steps - dt) > 1e-6 * dt + 1e-12):
        row = int(np.argmax(np.abs(steps - dt))) + 2
        raise UserError(f"{path}: time stamps must increase uniformly (irregular at data row {row}); resample")
    x = np.stack([col[c] for c in pos], 1)
    F = np.stack([col[c] for c in frc], 1)
    v = np.stack([col[c] if c in col else np.gradient(col[p], dt) for c, p in zip(vel, pos)], 1)
    return names, dt, x, v, F


def _metrics(real, pred):
    from jaxid.metrics import max_pe, wape

    return {
        "wape_pct": float(wape(real, pred)),
        "max_pe_pct": float(max_pe(real, pred)),
        "rms": float(np.sqrt(np.mean((np.asarray(pred) - real) ** 2))),
    }


def _nan(v):
    return float("nan") if v is None else v


def run(args) -> int:
    import jax
    import jax.numpy as jnp

    from jaxid.friction import lugre as model
    from jaxid.identification import lugre as ident

    refuse_overwrite([args.data, args.validation], [args.output, args.json])
    names, dt, x, v, F = read_friction_csv(args.data)
    threshold = ident.THRESHOLD if args.threshold is None else args.threshold
    if not (np.isfinite(threshold) and threshold > 0):
        raise UserError(f"--threshold must be a finite velocity > 0 units/s, got {threshold}")
    val = read_friction_csv(args.validation) if args.validation else None
    if val is not None and (val[0] != names or abs(val[1] - dt) > 1e-9 * dt):
        raise UserError(f"--validation: axes {val[0]} at dt {val[1]} s differ from the data's {names} at {dt} s")
    try:  # data that cannot identify LuGre, named by axis
        ident.check_excitation(v, threshold)
    except ValueError as e:
        msg = re.sub(r"^axis (\d+):", lambda m: f"axis {names[int(m[1])]}:", str(e)).replace(
            ": threshold ", ": --threshold "
        )
        raise UserError(f"{args.data}: {msg}") from None
    if not args.quiet:
        print(
            f"identifying {len(names)} axis(es) from {len(x)} samples at {1 / dt:.0f} Hz, method {args.method}",
            file=sys.stderr,
            flush=True,
        )
    rel_limit = ident.REL_STD if args.rel_std is None else args.rel_std
    if not (np.isfinite(rel_limit) and rel_limit > 0):
        raise UserError(f"--rel-std must be a finite ratio > 0 (0.05 = 5 %), got {rel_limit}")
    with warnings.catch_warnings():  # printed below, with the axis names and --rel-std
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = ident.identify_joints(x, v, F, dt, jax.random.key(args.seed), method=args.method, threshold=threshold)
    result = {
        "data": args.data,
        "validation": args.validation,
        "method": args.method,
        "seed": args.seed,
        "dt_s": dt,
        "threshold": threshold,
        "rel_std_limit": rel_limit,
        "axes": [],
    }
    for j, name in enumerate(names):
        fj = jax.tree_util.tree_map(lambda a: a[j], fit)
        p = fj.params
        entry = {
            "axis": name,
            "params": {n: float(getattr(p, n)) for n in model.NAMES},
            "std": dict(zip(model.NAMES, np.asarray(fj.std).tolist())),
            "rel_std": dict(zip(model.NAMES, np.asarray(fj.rel_std()).tolist())),
            "correlation": np.asarray(fj.corr).tolist(),
            "residual_std": float(fj.residual_std),
            "to_optimum_std": dict(zip(model.NAMES, np.asarray(fj.to_optimum).tolist())),
            "iterations": int(fj.iterations),
            "converged": bool(fj.converged),
            "physically_consistent": not fj.physical_problems(),
            "physics_problems": fj.physical_problems(),
            "at_bound": [n for n, b in zip(model.NAMES, np.asarray(fj.at_bound)) if b],
            "warnings": fj.warnings(rel_limit, axis=name),
        }
        vs, Fs = (v, F) if val is None else val[3:]
        pred = model.simulate(p, jnp.asarray(vs[:, j]), dt)
        cv = ident.coulomb_viscous(jnp.asarray(v[:, j]), jnp.asarray(F[:, j]), threshold)
        entry["lugre"] = _metrics(Fs[:, j], pred)
        entry["coulomb_viscous"] = {
            "Fc": float(cv[0]),
            "fv": float(cv[1]),
            **_metrics(Fs[:, j], cv[0] * np.sign(vs[:, j]) + cv[1] * vs[:, j]),
        }
        result["axes"].append(entry)
    for r in result["axes"]:  # named, never silent, also under --json
        for w in r["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    # NaN/inf (a diverged fit, an unexcited parameter's std) become null: JSON has neither.
    result = json.loads(json.dumps(result), parse_constant=lambda _: None)
    if args.output:
        emit_json(result, args.output)
    if args.json is not None and emit_json(result, args.json):
        return 0
    rows = result["axes"]
    where = f"validation file {args.validation}" if val is not None else "the identification data (no --validation)"
    print(f"{'param':8s} {'unit':10s}" + "".join(f"{r['axis']:>13s} {'std':>10s} {'rel std':>8s}" for r in rows))
    for n, u in zip(model.NAMES, model.UNITS):
        print(
            f"{n:8s} {u:10s}"
            + "".join(
                f"{_nan(r['params'][n]):13.5g} {_nan(r['std'][n]):10.3g} {100 * _nan(r['rel_std'][n]):7.3g}%"
                for r in rows
            )
        )
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
    if args.output:
        print(f"wrote {args.output}")
    return 0
