"""Helpers shared by the subcommands: model selection, dataset loading, progress, JSON output."""

from __future__ import annotations

import json
import sys

from jaxid.cli import UserError


def _velocity_or_fit(text):
    import argparse

    if text == "fit":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a velocity in rad/s or 'fit', got {text!r}") from None


def add_model_arguments(
    p, *, robot_default: str | None = "ur5", joint_terms: str | None = "fv,fc,offset", fit_vs: bool = False
):
    """--robot / --urdf [--tip-link] / --dh / --mjcf, and unless joint_terms is None --joint-terms, --coulomb-eps and
    --stribeck-vs (which also takes 'fit' where fit_vs: the subcommand then identifies it)."""
    src = p.add_mutually_exclusive_group()
    default = f" (default {robot_default})" if robot_default else ""
    src.add_argument(
        "--robot", default=None, metavar="NAME", help=f"built-in model: ur5, puma560 or planarN, e.g. planar2{default}"
    )
    src.add_argument("--urdf", metavar="PATH", help="read the robot from a URDF file instead")
    src.add_argument(
        "--dh",
        metavar="FILE",
        help="read the robot from a DH-table description file (TOML or JSON; format in docs/your-robot.md)",
    )
    src.add_argument(
        "--mjcf",
        metavar="FILE",
        help="read the robot from a MuJoCo MJCF file (.xml; read without MuJoCo, see docs/your-robot.md)",
    )
    p.add_argument(
        "--tip-link",
        metavar="LINK",
        help="keep only the chain from the root to this URDF link (default: every movable joint of the tree)",
    )
    p.add_argument(
        "--no-inertia-check",
        dest="check_inertia",
        action="store_false",
        help="accept URDF or MJCF inertials that are not physical (placeholders; plain least squares "
        "does not use them)",
    )
    if joint_terms is not None:
        p.add_argument(
            "--joint-terms",
            default=joint_terms,
            metavar="TERMS",
            help="per-joint terms of the model, comma-separated subset of ia,fv,fc,fs,fva,offset,ks "
            "(rotor inertia, viscous, Coulomb, Stribeck excess, asymmetric viscous friction, "
            f"torque offset, joint stiffness; default {joint_terms}; '' for none)",
        )
        p.add_argument(
            "--coulomb-eps",
            type=float,
            default=None,
            metavar="RAD_S",
            help="velocity scale of the smooth Coulomb sign tanh(qd/eps), rad/s (default 1e-3)",
        )
        p.add_argument(
            "--stribeck-vs",
            type=_velocity_or_fit,
            default=None,
            metavar="RAD_S",
            help="Stribeck velocity vs of the fs term tanh(qd/eps) exp(-(qd/vs)^2), rad/s "
            "(default 0.05; only with fs in --joint-terms)"
            + ("; 'fit': identify it from the data (separable least squares)" if fit_vs else ""),
        )
    p.set_defaults(robot_default=robot_default, stribeck_vs_fit=fit_vs)


def parse_terms(text: str) -> tuple[str, ...]:
    """'fv,fc,offset' -> ('fv', 'fc', 'offset'); '' or 'none' -> ()."""
    from jaxid.model.robot import JOINT_TERMS

    terms = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    bad = [t for t in terms if t not in JOINT_TERMS]
    if bad:
        raise UserError(f"--joint-terms: unknown term(s) {bad}; choose from {','.join(JOINT_TERMS)}")
    return terms


def model_file(args):
    """(flag, path, {"urdf": .., "dh": .., "mjcf": ..}) of the model file given on the command
    line (flag and path None when there is none); --tip-link checked to come with --urdf."""
    files = {key: getattr(args, key, None) for key in ("urdf", "dh", "mjcf")}
    if args.tip_link and not files["urdf"]:
        raise UserError("--tip-link selects the chain of a URDF file; it needs --urdf PATH")
    flag, path = next(((f"--{k}", v) for k, v in files.items() if v), (None, None))
    return flag, path, files


def model_from_args(args, *, joint_terms=None):
    """(robot, description) of --robot / --urdf / --dh / --mjcf / --tip-link / --joint-terms /
    --coulomb-eps / --stribeck-vs.

    joint_terms overrides --joint-terms (for subcommands without it). Returns None for both
    when no model is given and the subcommand has no default robot.
    """
    from jaxid import workflow

    flag, path, files = model_file(args)
    builtin = None if path else (args.robot or args.robot_default)
    if builtin is None and not path:
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
            raise UserError(
                "--stribeck-vs fit identifies the Stribeck velocity of the fs term; add fs to --joint-terms"
            )
    elif vs is not None and not 0 < vs < float("inf"):
        raise UserError(f"--stribeck-vs must be a finite velocity > 0 rad/s, got {vs}")
    if vs is not None and "fs" not in joint_terms:
        raise UserError("--stribeck-vs sets the Stribeck velocity of the fs term; add fs to --joint-terms")
    try:
        return workflow.model(
            builtin=builtin,
            tip_link=args.tip_link,
            **files,
            joint_terms=joint_terms,
            coulomb_eps=eps,
            stribeck_vs=vs,
            check_inertia=getattr(args, "check_inertia", True),
        )
    except FileNotFoundError:
        raise UserError(f"{flag}: no such file {path!r}") from None
    except ValueError as e:
        raise UserError(f"{flag or '--robot'}: {e}") from None


def model_for_params(args, params):
    """The model of a params.json (``results.Params`` or None): built from --robot / --urdf /
    --dh / --mjcf when given (with the file's joint terms, Coulomb scale and Stribeck velocity), else from the
    description the file carries (or the subcommand's default robot when there is no file);
    checked against the file's parameter names, and its kinematics against the file's
    fingerprint (a warning on stderr when they differ)."""
    from jaxid import results

    flag, path, files = model_file(args)
    desc = params.model if params is not None else {}
    builtin = None if path else (args.robot or (args.robot_default if params is None else None))
    try:
        model = results.model_from_description(
            desc, builtin=builtin, tip_link=args.tip_link, **files, check_inertia=getattr(args, "check_inertia", True)
        )
        if params is not None:
            results.check_model(model, params)
    except FileNotFoundError as e:
        raise UserError(f"{e}; give the model with --robot or --urdf") from None
    except ValueError as e:
        raise UserError(f"{args.params or args.robot or path}: {e}") from None
    if params is not None:
        for w in results.model_mismatches(model, params):
            warn(args, f"{args.params}: {w}")
    return model


def warn(args, message: str) -> None:
    """One warning line on stderr (also under --quiet: a warning is never progress)."""
    print(f"jaxid {args.command}: warning: {message}", file=sys.stderr)


def add_data_arguments(p):
    """How dataset files are read and prepared: column mapping, units, gains, resampling,
    the derivative filter's cutoff, the edge trim, decimation and the periodic path."""
    g = p.add_argument_group("reading and preparing the data")
    g.add_argument(
        "--columns",
        metavar="MAP",
        help="column names of logs with other names, e.g. 't=time,q=pos_*,qd=vel_*,tau=effort_*' "
        "(glob patterns, joints in natural order), or 0-based indices for a header-less CSV, "
        "e.g. 't=0,q=1:7,tau=7:13'",
    )
    g.add_argument(
        "--units",
        metavar="MAP",
        help="units of the logged signals, e.g. 'q=deg,qd=deg/s,t=ms' (tau=A: motor currents, needs --gains)",
    )
    g.add_argument(
        "--gains",
        metavar="LIST",
        help="per-joint torque constants, N m/A including the gear ratio, e.g. 10,10.7,...: "
        "tau = gain * logged current",
    )
    g.add_argument(
        "--mapping",
        metavar="PATH",
        help="a JSON or TOML file with 'columns', 'units' and 'gains' (instead of the three flags)",
    )
    g.add_argument(
        "--resample",
        action="store_true",
        help="interpolate jittered time stamps onto a uniform grid before differentiating",
    )
    g.add_argument(
        "--max-gap",
        type=float,
        metavar="S",
        help="accept gaps in the time stamps up to S seconds (dropped samples of a fast log; "
        "--resample bridges them); default: a step over 5 median steps is an error",
    )
    g.add_argument(
        "--cutoff",
        type=float,
        metavar="HZ",
        help="low-pass cutoff for computing missing qd, qdd from q (default: chosen from each run's "
        "position spectrum, where the signal meets the noise floor; printed)",
    )
    g.add_argument(
        "--trim",
        type=int,
        metavar="K",
        help="samples dropped at each end of a differentiated run (default: the filter's settling time; printed)",
    )
    g.add_argument("--step", type=int, default=1, metavar="K", help="keep every K-th sample (default 1: all)")
    g.add_argument(
        "--base-frequency",
        type=float,
        metavar="HZ",
        help="base frequency of the periodic excitation (default: the data file's, from the sidecar "
        "FILE.json that 'jaxid excite' and 'jaxid simulate' write); a run holding whole periods of "
        "it is averaged into one period and differentiated in the frequency domain (printed)",
    )
    g.add_argument(
        "--no-periodic", action="store_true", help="filter and differentiate q even when the base frequency is known"
    )
    g.add_argument(
        "--reversal-band",
        type=float,
        metavar="RAD_S",
        help="leave samples where some joint's |qd| is below RAD_S (velocity reversals, rest: the "
        "Coulomb sign of an estimated qd is unreliable there) out of the fit (default: keep all)",
    )
    g.add_argument(
        "--parallel-filter",
        action="store_true",
        help="parallel filtering (Gautier 1997): low-pass the regressor columns and tau with the same "
        "zero-phase filter, then decimate by --step (cutoff: the derivative filter's, at most 0.4 fs "
        "/ step; printed)",
    )


def _mapping(args):
    """(columns, units, gains) from --mapping or --columns/--units/--gains."""
    from jaxid import data

    if args.mapping and (args.columns or args.units or args.gains):
        raise UserError("give either --mapping PATH or --columns/--units/--gains, not both")
    try:
        if args.mapping:
            m = data.load_mapping(args.mapping)
            return m.get("columns"), m.get("units"), m.get("gains")
        return (
            data.parse_columns(args.columns) if args.columns else None,
            data.parse_units(args.units) if args.units else None,
            data.parse_gains(args.gains) if args.gains else None,
        )
    except ValueError as e:
        flag = "--mapping" if args.mapping else "--columns/--units/--gains"
        raise UserError(f"{flag}: {e}") from None


def read_datasets(paths, robot, args, *, prepare: bool = True):
    """Read dataset files for ``robot`` (:func:`jaxid.workflow.read`) and, unless
    ``prepare`` is False, prepare them (:func:`jaxid.workflow.prepare` with the policy of
    --cutoff / --trim / --step / --base-frequency / --no-periodic / --parallel-filter / --reversal-band);
    returns the ``Prepared`` runs (or the raw datasets)."""
    from jaxid import workflow

    if args.step < 1:
        raise UserError(f"--step must be an integer >= 1, got {args.step}")
    if args.cutoff is not None and not args.cutoff > 0:
        raise UserError(f"--cutoff must be > 0 Hz, got {args.cutoff}")
    if args.trim is not None and args.trim < 0:
        raise UserError(f"--trim must be an integer >= 0 samples, got {args.trim}")
    if args.reversal_band is not None and not 0 < args.reversal_band < float("inf"):
        raise UserError(f"--reversal-band must be a finite velocity > 0 rad/s, got {args.reversal_band}")
    if args.max_gap is not None and not 0 < args.max_gap < float("inf"):
        raise UserError(f"--max-gap must be a finite time > 0 s, got {args.max_gap}")
    if args.base_frequency is not None and not 0 < args.base_frequency < float("inf"):
        raise UserError(f"--base-frequency must be a finite frequency > 0 Hz, got {args.base_frequency}")
    columns, units, gains = _mapping(args)
    raw = []
    for path in paths:
        ds = workflow.read(
            path, columns=columns, units=units, gains=gains, resample=args.resample, max_gap=args.max_gap
        )
        if ds.n != robot.n:
            default = (
                " (the default --robot; choose the model with --robot NAME or --urdf PATH)"
                if getattr(args, "robot", None) is None and not getattr(args, "urdf", None)
                else "; choose the model of this robot (--robot NAME or --urdf PATH)"
            )
            raise UserError(f"{path}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}{default}")
        raw.append(ds)
    return prepare_datasets(raw, robot, args) if prepare else raw


def prepare_datasets(raw, robot, args):
    """:func:`jaxid.workflow.prepare` of raw datasets with the policy of --cutoff / --trim / --step /
    --base-frequency / --no-periodic / --parallel-filter / --reversal-band (checked by
    :func:`read_datasets`)."""
    from jaxid import workflow

    return workflow.prepare(
        raw,
        robot,
        workflow.Policy(
            cutoff=args.cutoff,
            trim=args.trim,
            step=args.step,
            base_frequency=args.base_frequency,
            periodic=not args.no_periodic,
            parallel=args.parallel_filter,
            reversal_band=args.reversal_band,
        ),
    )


def progress(iterable, *, total=None, desc=None, quiet=False):
    """A tqdm progress bar on stderr; shown only on a terminal and without --quiet."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=True if quiet else None, leave=False)


def refuse_overwrite(inputs, outputs) -> None:
    """Before the work: UserError when an output path is one of the input files (it would
    destroy the data), ``jaxid.atomic.OutputPathError`` when an output cannot be written (a
    directory, a missing or read-only directory), so that no run fails only at its end."""
    from pathlib import Path

    from jaxid.atomic import check_output_path

    given = {Path(i).resolve(): i for i in inputs if i is not None}
    for o in outputs:
        if o is not None and o != "-" and Path(o).resolve() in given:
            raise UserError(
                f"output {o!r} is the input file {given[Path(o).resolve()]!r}; writing it would destroy "
                "the data: choose another output path"
            )
    for o in outputs:
        if o is not None and o != "-":
            check_output_path(o)


def output_dir(path, flag: str = "--out"):
    """Create the output folder ``path`` (and its parents) before the work; UserError naming
    it when that fails (an existing file, a read-only parent)."""
    import os
    from pathlib import Path

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {str(path)!r} is a file, not a folder; give a folder for the outputs")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"{flag} {str(path)!r}: cannot create the folder ({e.strerror or e})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {str(path)!r}: the folder is not writable (permission denied)")
    return path


def add_report_argument(p, what: str):
    """--report DIR: report.html (self-contained) and report.md of ``what`` (jaxid.report)."""
    p.add_argument(
        "--report",
        metavar="DIR",
        help=f"write a report of {what} to DIR: report.html (one self-contained page, figures "
        "embedded), report.md (Markdown tables) and figures/*.png; needs matplotlib "
        "(pip install 'jaxid[report]')",
    )


def write_report(args, robot, params, validation, held_out: bool):
    """The --report of identify/validate: jaxid.report.write_report into args.report; returns
    the HTML path, or None without --report."""
    if not args.report:
        return None
    from jaxid import report

    return report.write_report(
        args.report,
        params,
        validation,
        joint_types=robot.joint_types,
        joint_names=robot.coordinate_names,
        held_out=held_out,
    )["html"]


def add_payload_arguments(p, what: str):
    """--payload-mass, --payload-com, --payload-box: a load on the flange; ``what`` ends the mass's help."""
    p.add_argument("--payload-mass", type=float, metavar="KG", help=f"payload on the flange, kg: {what}")
    p.add_argument(
        "--payload-com",
        type=float,
        nargs=3,
        metavar=("X", "Y", "Z"),
        help="payload centre of mass in the flange frame, m (default 0 0 0)",
    )
    p.add_argument(
        "--payload-box",
        type=float,
        nargs=3,
        metavar=("A", "B", "C"),
        help="payload as a uniform box of this size, m, centred on its centre of mass (default: a point mass)",
    )


def payload_from_args(args):
    """The payload 10-vector of --payload-mass/--payload-com/--payload-box, or None without a mass."""
    from jaxid import simulation

    if args.payload_mass is None:
        if args.payload_com is not None or args.payload_box is not None:
            raise UserError("--payload-com and --payload-box describe a payload: give its --payload-mass too")
        return None
    com = args.payload_com if args.payload_com is not None else (0.0, 0.0, 0.0)
    try:
        return simulation.payload_vector(args.payload_mass, com, box=args.payload_box)
    except ValueError as e:
        raise UserError(f"--payload-*: {e}") from None


def add_json_argument(p):
    """--json [PATH] and --quiet, which every subcommand has."""
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the results as JSON to PATH ('-' or no PATH: to stdout, instead of the table)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output (warnings and errors still shown)")


def emit_json(doc, dest) -> bool:
    """Write doc as JSON to dest ('-': stdout). True when it went to stdout (skip the table)."""
    text = json.dumps(doc, indent=1, allow_nan=False, default=float)
    if dest == "-":
        print(text)
        return True
    from jaxid.atomic import atomic_write

    with atomic_write(dest) as f:
        f.write(text + "\n")
    return False
