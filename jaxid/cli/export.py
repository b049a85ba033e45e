"""`jaxid export`: the identified torque model as a standalone artefact for a controller."""

from __future__ import annotations

from jaxid.cli.common import HelpFormatter, add_model_arguments, model_spec, warn
from jaxid.workflow import commands, requests

EXAMPLE = """examples:
  jaxid export params.json -o ur5_tau.py                      (numpy module: tau(q, qd, qdd))
  jaxid export params.json -o ur5_tau.c                       (C99: void tau(q, qd, qdd, out))
  jaxid export params.json --format stablehlo --batched -o ur5_tau.jaxexport

Load the JAX export without jaxid (float64; needs the flatbuffers package):
  import jax; jax.config.update("jax_enable_x64", True)
  f = jax.export.deserialize(open("ur5_tau.jaxexport", "rb").read())
  tau = f.call(q, qd, qdd)                # (n,) each, or (N, n) with --batched
"""


def register(sub):
    p = sub.add_parser(
        "export",
        help="write the identified torque model as a numpy module, a C file or a JAX export for a controller",
        description="Write the torque model of a params.json (rigid bodies by recursive Newton-Euler plus the "
        "identified joint terms: friction, offset, rotor inertia, stiffness) with its numbers baked in, as a "
        "standalone artefact a controller calls for feed-forward or computed torque: a Python module needing "
        "only numpy, a C99 file needing only libm, or a serialised JAX export (StableHLO). Each computes the "
        "torques 'jaxid validate' predicts (N m from q rad, qd rad/s, qdd rad/s^2). Parameters with LuGre "
        "friction are refused (its state is not a function of q, qd, qdd).",
        epilog=EXAMPLE,
        formatter_class=HelpFormatter,
    )
    p.add_argument("params", metavar="PARAMS", help="params.json written by 'jaxid identify'")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the artefact to write")
    p.add_argument(
        "--format",
        choices=requests.EXPORT_FORMATS,
        default=None,
        help="stablehlo (a serialised jax.export program), numpy (a .py module) or c (a C99 file); "
        "default: from the output's suffix (.py, .c, .stablehlo, .jaxexport)",
    )
    p.add_argument(
        "--batched",
        action="store_true",
        help="stablehlo: a program of (N, n) arrays for any N (default: one sample, (n,))",
    )
    p.add_argument("--name", default="tau", metavar="IDENT", help="the C function's name (default tau)")
    add_model_arguments(p, robot_default=None, joint_terms=None)
    p.set_defaults(func=run)


def run(args) -> int:
    req = requests.ExportRequest(
        params=args.params,
        output=args.output,
        format=args.format,
        model=model_spec(args),
        batched=args.batched,
        name=args.name,
    )
    res = commands.run_export(req, warn=lambda line: warn(args, line))
    shape = "(N, n)" if req.batched else "(n,)"
    what = {
        "numpy": f"numpy module, tau(q, qd, qdd) of {shape} or (..., n) arrays",
        "c": f"C99 file, void {req.name}(const double q[{res.model.n}], qd, qdd, double out[{res.model.n}])",
        "stablehlo": f"serialised JAX export, f.call(q, qd, qdd) of {shape} arrays",
    }[req.kind]
    print(f"{res.path}: {what}; model {res.model.name} ({res.model.n} coordinates), {res.size} bytes")
    return 0
