"""Helpers shared by the subcommands: model selection, dataset loading, progress, JSON output."""
from __future__ import annotations

import json
import sys

from jaxid.cli import UserError

#: Samples dropped at each end of a run whose velocities and accelerations were computed by
#: filtered differentiation: the edge transient of the zero-phase Butterworth filter,
#: padlen = 3 (order + 1) for the default order 4 (see ``jaxid.signals.derivatives``).
EDGE_TRIM = 15


def _velocity_or_fit(text):
    import argparse

    if text == "fit":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a velocity in rad/s or 'fit', got {text!r}") from None


def add_model_arguments(p, *, robot_default: str | None = "ur5", joint_terms: str | None = "fv,fc,offset",
                        fit_vs: bool = False):
    """--robot / --urdf [--tip-link], and unless joint_terms is None --joint-terms, --coulomb-eps and
    --stribeck-vs (which also takes 'fit' where fit_vs: the subcommand then identifies it)."""
    src = p.add_mutually_exclusive_group()
    default = f" (default {robot_default})" if robot_default else ""
    src.add_argument("--robot", default=None, metavar="NAME",
                     help=f"built-in model: ur5 or planarN, e.g. planar2{default}")
    src.add_argument("--urdf", metavar="PATH", help="read the robot from a URDF file instead")
    p.add_argument("--tip-link", metavar="LINK", help="last link of the chain in the URDF (default: its only leaf)")
    if joint_terms is not None:
        p.add_argument("--joint-terms", default=joint_terms, metavar="TERMS",
                       help="per-joint terms of the model, comma-separated subset of ia,fv,fc,fs,fva,offset "
                            "(rotor inertia, viscous, Coulomb, Stribeck excess, asymmetric viscous friction, "
                            f"torque offset; default {joint_terms}; '' for none)")
        p.add_argument("--coulomb-eps", type=float, default=None, metavar="RAD_S",
                       help="velocity scale of the smooth Coulomb sign tanh(qd/eps), rad/s (default 1e-3)")
        p.add_argument("--stribeck-vs", type=_velocity_or_fit, default=None, metavar="RAD_S",
                       help="Stribeck velocity vs of the fs term tanh(qd/eps) exp(-(qd/vs)^2), rad/s "
                            "(default 0.05; only with fs in --joint-terms)"
                            + ("; 'fit': identify it from the data (separable least squares)" if fit_vs else ""))
    p.set_defaults(robot_default=robot_default, stribeck_vs_fit=fit_vs)


def parse_terms(text: str) -> tuple[str, ...]:
    """'fv,fc,offset' -> ('fv', 'fc', 'offset'); '' or 'none' -> ()."""
    from jaxid.model.robot import JOINT_TERMS

    terms = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    bad = [t for t in terms if t not in JOINT_TERMS]
    if bad:
        raise UserError(f"--joint-terms: unknown term(s) {bad}; choose from {','.join(JOINT_TERMS)}")
    return terms


def model_from_args(args, *, joint_terms=None):
    """(robot, description) of --robot / --urdf / --tip-link / --joint-terms / --coulomb-eps /
    --stribeck-vs.

    joint_terms overrides --joint-terms (for subcommands without it). Returns None for both
    when neither --robot nor --urdf is given and the subcommand has no default robot.
    """
    from jaxid.results import build_model, model_description

    if args.tip_link and not args.urdf:
        raise UserError("--tip-link selects the chain of a URDF file; it needs --urdf PATH")
    builtin = None if args.urdf else (args.robot or args.robot_default)
    if builtin is None and not args.urdf:
        return None, None
    if joint_terms is None:
        joint_terms = parse_terms(getattr(args, "joint_terms", "") or "")
    eps = getattr(args, "coulomb_eps", None)
    if eps is not None and not eps > 0:
        raise UserError(f"--coulomb-eps must be > 0 rad/s, got {eps}")
    vs = getattr(args, "stribeck_vs", None)
    if vs == "fit":
        if not getattr(args, "stribeck_vs_fit", False):
            raise UserError("--stribeck-vs fit is for 'jaxid identify'; here give the velocity in rad/s")
        vs = None  # the model is built with the default; the subcommand fits it (stribeck_vs_arg)
        if "fs" not in joint_terms:
            raise UserError("--stribeck-vs fit identifies the Stribeck velocity of the fs term; add fs to "
                            "--joint-terms")
    elif vs is not None and not 0 < vs < float("inf"):
        raise UserError(f"--stribeck-vs must be a finite velocity > 0 rad/s, got {vs}")
    if vs is not None and "fs" not in joint_terms:
        raise UserError("--stribeck-vs sets the Stribeck velocity of the fs term; add fs to --joint-terms")
    try:
        robot = build_model(builtin=builtin, urdf=args.urdf, tip_link=args.tip_link, joint_terms=joint_terms,
                            coulomb_eps=eps, stribeck_vs=vs)
    except FileNotFoundError:
        raise UserError(f"--urdf: no such file {args.urdf!r}") from None
    except ValueError as e:
        raise UserError(f"{'--urdf' if args.urdf else '--robot'}: {e}") from None
    return robot, model_description(robot, builtin=builtin, urdf=args.urdf, tip_link=args.tip_link)


def model_for_params(args, params):
    """The model of a params.json (``results.Params`` or None): built from --robot / --urdf
    when given (with the file's joint terms, Coulomb scale and Stribeck velocity), else from the description
    the file carries (or the subcommand's default robot when there is no file); checked
    against the file's parameter names."""
    from jaxid import results

    if args.tip_link and not args.urdf:
        raise UserError("--tip-link selects the chain of a URDF file; it needs --urdf PATH")
    desc = params.model if params is not None else {}
    builtin = None if args.urdf else (args.robot or (args.robot_default if params is None else None))
    try:
        if builtin or args.urdf:
            model = results.build_model(builtin=builtin, urdf=args.urdf, tip_link=args.tip_link,
                                        joint_terms=desc.get("joint_terms", ()), coulomb_eps=desc.get("coulomb_eps"),
                                        stribeck_vs=desc.get("stribeck_vs"))
        else:
            model = results.model_from_description(desc)
        if params is not None:
            results.check_model(model, params)
    except FileNotFoundError as e:
        raise UserError(f"{e}; give the model with --robot or --urdf") from None
    except ValueError as e:
        raise UserError(f"{args.params or args.robot or args.urdf}: {e}") from None
    return model


def add_data_arguments(p):
    """--resample, --cutoff, --step: how dataset files are read."""
    p.add_argument("--resample", action="store_true",
                   help="interpolate irregular time stamps onto a uniform grid before differentiating")
    p.add_argument("--cutoff", type=float, metavar="HZ",
                   help="Butterworth cutoff for computing missing qd, qdd from q (default fs/10)")
    p.add_argument("--step", type=int, default=1, metavar="K", help="keep every K-th sample (default 1: all)")


def read_datasets(paths, n: int, args):
    """Read dataset files for an n-joint model; when qd/qdd were computed from q, the filter's
    edge transient (``EDGE_TRIM`` samples each end) is dropped; then every --step-th sample."""
    from jaxid import data

    if args.step < 1:
        raise UserError(f"--step must be an integer >= 1, got {args.step}")
    if args.cutoff is not None and not args.cutoff > 0:
        raise UserError(f"--cutoff must be > 0 Hz, got {args.cutoff}")
    out = []
    for path in paths:
        ds = data.read(path, n=n, resample=args.resample, cutoff=args.cutoff)
        if ds.derivatives is not None:
            if len(ds) <= 2 * EDGE_TRIM + data.MIN_SAMPLES:
                raise UserError(f"{path}: {len(ds)} samples; differentiating q needs more than "
                                f"{2 * EDGE_TRIM + data.MIN_SAMPLES} (or give qd, qdd columns)")
            ds = ds.slice(EDGE_TRIM, len(ds) - EDGE_TRIM)
        out.append(ds.slice(step=args.step))
    return out


def progress(iterable, *, total=None, desc=None, quiet=False):
    """A tqdm progress bar on stderr; shown only on a terminal and without --quiet."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=True if quiet else None,
                leave=False)


def add_json_argument(p):
    p.add_argument("--json", nargs="?", const="-", metavar="PATH",
                   help="write the results as JSON to PATH ('-' or no PATH: to stdout, instead of the table)")


def emit_json(doc, dest) -> bool:
    """Write doc as JSON to dest ('-': stdout). True when it went to stdout (skip the table)."""
    text = json.dumps(doc, indent=1, allow_nan=False, default=float)
    if dest == "-":
        print(text)
        return True
    with open(dest, "w") as f:
        f.write(text + "\n")
    return False
