"""Helpers shared by the subcommands: argparse groups, the request parts built from them (model, data,
bounds, payload), progress, JSON output."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from jaxid.cli import UserError
from jaxid.workflow import METHODS as METHODS  # the estimators of --method
from jaxid.workflow import WorkflowError, requests


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs keep their line breaks (examples, lists), and a prose line longer
    than the terminal is wrapped at its width; an indented line (an example command) is kept."""

    def _fill_text(self, text, width, indent):
        lines = []
        for line in text.splitlines():
            if len(line) > width and not line[:1].isspace():
                lines += textwrap.wrap(line, width, break_on_hyphens=False) or [""]
            else:
                lines.append(line)
        return "\n".join(indent + line for line in lines)


def _velocity_or_fit(text):
    if text == "fit":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a velocity in rad/s or 'fit', got {text!r}") from None


def add_model_arguments(
    p,
    *,
    robot_default: str | None = None,
    joint_terms: str | None = "fv,fc,offset",
    fit_vs: bool = False,
    fits_data: bool = False,
    transmission: bool = True,
):
    """--robot / --urdf [--tip-link] / --dh / --mjcf, and unless joint_terms is None --joint-terms, --coulomb-eps and
    --stribeck-vs (which also takes 'fit' where fit_vs: the subcommand then identifies it). robot_default: the
    model when none is given (None: the subcommand has none); fits_data: the subcommand fits a log, so a model
    is required unless the log's sidecar records one (its help says so); with transmission, --transmission
    (motor-side logs)."""
    src = p.add_mutually_exclusive_group()
    default = f" (default {robot_default})" if robot_default else ""
    if fits_data:
        default = (
            " (a model is required: one of --robot, --urdf, --dh, --mjcf, unless the data file's sidecar "
            "FILE.json records the model, as 'jaxid simulate' writes it)"
        )
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
        help="read the robot from a MuJoCo MJCF file (.xml; MuJoCo needed only for inertias it computes from geoms, see docs/your-robot.md)",
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
    if transmission:
        p.add_argument(
            "--transmission",
            metavar="FILE",
            help="the logs are motor-side (motor angles, motor torques or currents): a JSON/TOML file of gear "
            "ratios, signs, offsets and coupling (format in docs/your-robot.md), or 'urdf' for the URDF's "
            "<transmission> elements; rotor inertia and friction then act on the motors (ia_m1, fv_m1, ...)",
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
    """'fv,fc,offset' -> ('fv', 'fc', 'offset'); '' or 'none' -> () (``jaxid.workflow.requests.parse_terms``)."""
    return requests.parse_terms(text)


def comma_list(text, kind, flag: str, what: str = "comma-separated numbers"):
    """``text`` ("1,2,3") as a tuple of ``kind``, or None when not given; UserError naming ``flag``."""
    if text is None:
        return None
    try:
        return tuple(kind(v) for v in text.split(","))
    except ValueError:
        raise UserError(f"{flag} must be {what}, got {text!r}") from None


def model_spec(args) -> requests.ModelSpec:
    """The ``ModelSpec`` of --robot / --urdf / --dh / --mjcf / --tip-link / --joint-terms /
    --coulomb-eps / --stribeck-vs (and the subcommand's default robot)."""
    spec = requests.ModelSpec(
        robot=args.robot,
        urdf=getattr(args, "urdf", None),
        dh=getattr(args, "dh", None),
        mjcf=getattr(args, "mjcf", None),
        tip_link=args.tip_link,
        joint_terms=getattr(args, "joint_terms", "") or "",
        coulomb_eps=getattr(args, "coulomb_eps", None),
        stribeck_vs=getattr(args, "stribeck_vs", None),
        check_inertia=getattr(args, "check_inertia", True),
        default_robot=args.robot_default,
        transmission=getattr(args, "transmission", None),
        package_dirs=tuple(getattr(args, "package_dir", None) or ()),
    )
    if not getattr(args, "stribeck_vs_fit", False):
        spec.no_fitted_vs()
    return spec


def model_from_args(args, *, joint_terms=None):
    """(robot, description) of the model flags (`model_spec`, ``jaxid.workflow.commands.build_model``);
    joint_terms overrides --joint-terms. (None, None) when no model is given and the subcommand has
    no default robot."""
    from jaxid.workflow import commands

    try:
        return commands.build_model(model_spec(args), joint_terms=joint_terms)
    except WorkflowError as e:
        raise UserError(str(e)) from None


def warn(args, message: str) -> None:
    """One warning line on stderr (also under --quiet: a warning is never progress), printed by
    ``jaxid.cli.terminal_warnings``: an error under --strict."""
    import warnings

    warnings.warn(message, UserWarning, stacklevel=2)


def add_data_arguments(p):
    """How dataset files are read and prepared: column mapping, units, gains, resampling,
    the derivative filter's cutoff, the edge trim, decimation and the periodic path."""
    g = p.add_argument_group("reading and preparing the data")
    g.add_argument(
        "--columns",
        metavar="MAP",
        help="column names of logs with other names, e.g. 't=time,q=pos_*,qd=vel_*,tau=effort_*' "
        "(glob patterns; the columns a pattern matches are put in the model's joint order by the joint "
        "names in their headers, e.g. '/joint_states/*/position', else taken in natural order), or "
        "0-based indices for a header-less CSV, e.g. 't=0,q=1:7,tau=7:13'",
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
        "--topic",
        metavar="NAME",
        help="the sensor_msgs/JointState topic of a ROS 2 bag given as data (default: its only "
        "JointState topic, else /joint_states)",
    )
    g.add_argument(
        "--rate",
        type=float,
        metavar="HZ",
        help="sampling rate of logs without a time column (t = k / HZ); with time stamps, checked "
        "against their mean rate (1 %%)",
    )
    g.add_argument(
        "--window",
        metavar="T0:T1",
        help="keep only the samples from T0 to T1 s after each log's start (either side may be left "
        "out: '5:', ':30'), before any other check or filtering",
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
        help="low-pass cutoff for computing missing qd, qdd from q, all joints (default: per joint, 3x the "
        "band edge of each run's position spectrum; validate: the cutoffs stored in params.json; printed)",
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

    g.add_argument(
        "--accept-fault",
        action="append",
        default=[],
        metavar="NAME",
        help="proceed despite a fault the logs' plausibility checks found (repeatable): still, units, time, "
        "jump (the spike samples bridged by their neighbours), torque-sign, torque-scale",
    )


def data_spec(args) -> requests.DataSpec:
    """The ``DataSpec`` of the flags of `add_data_arguments`."""
    return requests.DataSpec(
        columns=args.columns,
        units=args.units,
        gains=args.gains,
        mapping=args.mapping,
        resample=args.resample,
        max_gap=args.max_gap,
        cutoff=args.cutoff,
        trim=args.trim,
        step=args.step,
        base_frequency=args.base_frequency,
        periodic=not args.no_periodic,
        parallel=args.parallel_filter,
        reversal_band=args.reversal_band,
        topic=args.topic,
        rate=args.rate,
        window=args.window,
        accept_faults=tuple(args.accept_fault),
    )


def progress(iterable, *, total=None, desc=None, quiet=False):
    """Progress on stderr, without --quiet: a tqdm bar on a terminal, else a plain line every few
    seconds (``jaxid.progress``: a log file or CI job sees the run advance)."""
    from jaxid.progress import bar

    return bar(iterable, total=total, desc=desc, enabled=not quiet, file=sys.stderr)


def refuse_overwrite(inputs, outputs) -> None:
    """Before the work: no output is an input file, every output can be written
    (``jaxid.workflow.commands.check_outputs``)."""
    from jaxid.workflow import commands

    commands.check_outputs(inputs, outputs)


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
        "embedded), report.md (Markdown tables), figures for print figures/*.svg and *.pdf, and "
        "figures/*.png; needs matplotlib (pip install 'jaxid[report]')",
    )


def write_report(args, robot, params, validation, held_out: bool):
    """The --report of identify/validate: jaxid.report.write_report into args.report; returns
    the HTML path, or None without --report."""
    if not args.report:
        return None
    import numpy as np

    from jaxid import report

    names, values = robot.parameter_names(), np.asarray(robot.parameter_vector())
    return report.write_report(
        args.report,
        params,
        validation,
        joint_types=robot.joint_types,
        joint_names=robot.coordinate_names,
        held_out=held_out,
        nominal=dict(zip(names, values.tolist())),
        command=getattr(args, "command_line", None),
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


def payload_spec(args) -> requests.PayloadSpec:
    """The ``PayloadSpec`` of --payload-mass/--payload-com/--payload-box."""
    return requests.PayloadSpec(
        mass=args.payload_mass,
        com=None if args.payload_com is None else tuple(args.payload_com),
        box=None if args.payload_box is None else tuple(args.payload_box),
    )


def add_gravity_argument(p):
    """--fit-gravity: identify the direction of gravity in the base frame."""
    p.add_argument(
        "--fit-gravity",
        action="store_true",
        help="identify the direction of gravity in the base frame (a base that is not level) with the "
        "parameters, from the torques (jaxid.identification.gravity); it is stored with the model "
        "and used by validate",
    )


def add_bounds_arguments(p):
    """--mass-tol, --com-margin, --total-mass, --com-in-geometry, --body-in-geometry, --no-ellipsoid:
    bounds on the consistent bodies."""
    p.add_argument(
        "--mass-tol",
        type=float,
        metavar="X",
        help="--consistent: each link's mass within +-X (relative) of its nominal mass, e.g. 0.3",
    )
    p.add_argument(
        "--com-margin",
        type=float,
        metavar="M",
        help="--consistent: each link's centre of mass within +-M m of its nominal one, per axis",
    )
    p.add_argument("--total-mass", metavar="LO,HI", help="--consistent: the robot's total mass within [LO, HI] kg")
    p.add_argument(
        "--com-in-geometry",
        action="store_true",
        help="--consistent: each link's centre of mass inside the bounding box of its collision "
        "capsules (the URDF's <collision> elements, or the built-in UR5's capsules)",
    )
    p.add_argument(
        "--body-in-geometry",
        action="store_true",
        help="--consistent: as --com-in-geometry for each link's whole body, which also bounds its "
        "second moments (with --mass-tol, --prior-weight 0 then has a finite optimum)",
    )
    p.add_argument(
        "--no-ellipsoid",
        dest="ellipsoid",
        action="store_false",
        help="--consistent: do not hold each link's body inside the bounding ellipsoid of its geometry "
        "(the URDF's collision/visual shapes, else the kinematic skeleton, and the nominal body; default: held)",
    )
    add_package_dir_argument(p)


def add_package_dir_argument(p):
    """--package-dir (repeatable): where a URDF's package:// mesh names are looked up first."""
    p.add_argument(
        "--package-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="with --urdf: a ROS package, or a folder of packages, where package://NAME/... mesh names are "
        "looked up, before ROS_PACKAGE_PATH, AMENT_PREFIX_PATH/share/NAME and the URDF's own folders (repeatable)",
    )


def add_weights_argument(p):
    """--prior-weights: the prior weights the held-out protocol tries."""
    p.add_argument(
        "--prior-weights",
        default=None,
        metavar="LIST",
        help="the prior weights tried: by --validate-on (default 0,1e-4,1e-3,1e-2,1e-1,1) and by the "
        "cross-validation (default 7 log-spaced from 1e-3 to the training samples x joints)",
    )


def bounds_spec(args) -> requests.BoundsSpec:
    """The ``BoundsSpec`` of the flags of `add_bounds_arguments`."""
    return requests.BoundsSpec(
        mass_tol=args.mass_tol,
        com_margin=args.com_margin,
        total_mass=args.total_mass,
        com_in_geometry=args.com_in_geometry,
        body_in_geometry=args.body_in_geometry,
        ellipsoid=args.ellipsoid,
    )


def logger(args):
    """The ``log`` of a workflow command: a line on stderr, None (nothing) under --quiet."""
    return None if args.quiet else (lambda line: print(line, file=sys.stderr))


def bar(args):
    """The ``progress`` of a workflow command: `progress` under the --quiet of args."""
    return lambda it, **kw: progress(it, quiet=args.quiet, **kw)


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


def payload_design_lines(design, indent: str = "  ") -> list[str]:
    """The lines that print a ``jaxid.identification.payload_design.PayloadDesign``: the expected
    stds (mass %, centre of mass mm, inertia % of trace/3, or absolute without a nominal payload),
    what is not promised and why, and the periods the targets need."""
    import numpy as np

    from jaxid.identification.payload import PAYLOAD_NAMES
    from jaxid.identification.payload_design import TARGETS

    d = design
    joints = ",".join(str(j + 1) for j in d.joints)
    noise = ", ".join(f"{v:.3g}" for v in d.noise)
    out = [
        f"{indent}expected payload std after {d.periods} period(s), joints {joints} (torque noise {noise} N m; "
        f"Fisher information of the payload regressor, rank {d.rank} of 10):"
    ]
    fmt = lambda v, unit: f"{v:.3g}{unit}" if np.isfinite(v) else "not determined"
    if d.nominal is not None:
        out.append(
            f"{indent}  mass {fmt(d.mass_pct, ' %')} of {d.nominal[0]:g} kg; centre of mass "
            + (", ".join(f"{v:.2g}" for v in d.com_mm) + " mm" if np.all(np.isfinite(d.com_mm)) else "not determined")
        )
        if np.isfinite(d.scale[4]):
            out.append(
                f"{indent}  inertia, % of trace/3 = {d.scale[4]:.3g} kg m^2: "
                + "  ".join(f"{PAYLOAD_NAMES[4 + i]} {fmt(v, '')}" for i, v in enumerate(d.inertia_pct))
            )
        else:  # a point mass at the flange origin: no inertia to compare to, so absolute figures
            out.append(
                f"{indent}  inertia, kg m^2 (the nominal payload has none about the flange origin: give its "
                "--payload-com or --payload-box for % of trace/3): "
                + "  ".join(f"{PAYLOAD_NAMES[i]} {fmt(d.std[i], '')}" for i in range(4, 10))
            )
    else:
        out.append(f"{indent}  std: " + "  ".join(f"{n} {fmt(v, '')}" for n, v in zip(PAYLOAD_NAMES, d.std)))
    for name, why in zip(PAYLOAD_NAMES, d.reasons):
        if why:
            out.append(f"{indent}  {name}: {why}")
    if d.nominal is not None:
        need = d.periods_needed()
        no_scale = dict(mass=False, com=False, inertia=not np.isfinite(d.scale[4]))
        say = lambda k: (
            f"{need[k]}"
            if need[k] is not None
            else ("no nominal inertia to compare to" if no_scale[k] else "never (not seen by these joints)")
        )
        out.append(
            f"{indent}  periods needed: mass {100 * TARGETS['mass']:g} %: {say('mass')}; centre of mass "
            f"{1e3 * TARGETS['com']:g} mm: {say('com')}; every inertia entry {100 * TARGETS['inertia']:g} % of "
            f"trace/3: {say('inertia')}"
        )
    return out
