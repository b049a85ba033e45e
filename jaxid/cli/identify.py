"""`jaxid identify`: base parameters (and joint friction) from measured motion and torque."""
from __future__ import annotations

import argparse

import numpy as np

from jaxid.cli import UserError
from jaxid.cli.common import (add_data_arguments, add_json_argument, add_model_arguments, emit_json,
                              model_from_args, progress, read_datasets)
from jaxid.results import json_number

EXAMPLE = """examples:
  jaxid identify --robot ur5 data.csv more.csv -o params.json
  jaxid identify --urdf kuka_lwr4.urdf --joint-terms fv,fc,offset --method ols run2.npz run3.npz -o kuka.json
  jaxid identify --robot planar2 --consistent --urdf-out arm.urdf data.csv -o params.json
  jaxid identify --robot ur5 --joint-terms fv,fc,fs,offset --stribeck-vs fit data.csv -o params.json
"""

METHODS = ("wls", "ols", "irls", "ridge")
#: Samples per regressor evaluation: a fixed chunk (the last one padded) compiles once.
CHUNK = 2048


def register(sub):
    p = sub.add_parser(
        "identify", help="identify base parameters (and joint friction) from dataset files",
        description="Identify the base parameters of the model (Gautier's QR basis), with the enabled joint "
                    "terms (friction, offset), by least squares on the stacked regressor of all the given "
                    "dataset files, and write them with their covariance to a params.json file. Missing "
                    "velocities and accelerations are computed by zero-phase Butterworth filtering.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", nargs="+", metavar="DATA", help="dataset files (.csv, .npz), stacked")
    add_model_arguments(p, fit_vs=True)
    p.add_argument("-o", "--output", default="params.json", metavar="PATH",
                   help="where to write the parameters (default params.json)")
    p.add_argument("--method", choices=METHODS, default="wls",
                   help="estimator: two-step weighted LS (Gautier), ordinary LS, robust IRLS (Huber), "
                        "ridge with GCV (default wls)")
    p.add_argument("--consistent", action="store_true",
                   help="estimate physically consistent standard parameters (log-Cholesky bodies, non-negative "
                        "friction, entropic prior toward the nominal links) and predict with them; needed for "
                        "--urdf-out when the least-squares estimate is not consistent")
    p.add_argument("--prior-weight", type=float, default=1e-3, metavar="W",
                   help="--consistent: weight of the prior toward the nominal links, in units of one whitened "
                        "sample (default 1e-3; larger trusts the nominal model more)")
    p.add_argument("--urdf-out", metavar="PATH",
                   help="write the identified inertial parameters as a URDF (requires physically consistent "
                        "links)")
    add_data_arguments(p)
    add_json_argument(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def regressor_rows(model, datasets, columns=None, quiet=False):
    """Stacked regressor (M, k) and torques (M,) of datasets, M = samples * n, sample-major.

    columns: regressor columns kept (e.g. the base indices), default all. The regressor is
    evaluated in chunks of ``CHUNK`` samples (the last padded) so that it compiles once.
    """
    import jaxid

    n = model.n
    chunks = [(ds, s) for ds in datasets for s in range(0, len(ds), CHUNK)]
    W, tau = [], []
    for ds, s in progress(chunks, desc="regressor", quiet=quiet):
        q, qd, qdd = (np.asarray(x[s:s + CHUNK]) for x in (ds.q, ds.qd, ds.qdd))
        k = q.shape[0]
        pad = lambda x: np.concatenate([x, np.repeat(x[-1:], CHUNK - k, axis=0)]) if k < CHUNK else x
        Y = np.asarray(jaxid.regressor(model, pad(q), pad(qd), pad(qdd)))[:k]
        W.append((Y if columns is None else Y[..., columns]).reshape(k * n, -1))
        tau.append(np.asarray(ds.tau[s:s + CHUNK]).reshape(-1))
    return np.concatenate(W), np.concatenate(tau)


def _fit_stribeck_velocity(robot, desc, datasets):
    """(robot, desc) with the Stribeck velocity identified from all datasets."""
    import dataclasses

    from jaxid.friction.models import fit_stribeck_velocity

    stacked = [np.concatenate([np.asarray(getattr(d, k)) for d in datasets]) for k in ("q", "qd", "qdd", "tau")]
    try:
        vs = fit_stribeck_velocity(robot, *stacked)
    except ValueError as e:
        raise UserError(f"--stribeck-vs fit: {e}") from None
    return dataclasses.replace(robot, stribeck_vs=vs), {**desc, "stribeck_vs": vs}


def run(args) -> int:
    import dataclasses
    import warnings

    import jax.numpy as jnp

    import jaxid
    from jaxid import results
    from jaxid.identification.base import GAP_WARN

    if args.urdf_out is not None and not args.urdf_out.lower().endswith(".urdf"):
        raise UserError(f"--urdf-out {args.urdf_out!r} must end in .urdf")
    if not (np.isfinite(args.prior_weight) and args.prior_weight >= 0):
        raise UserError(f"--prior-weight must be a finite number >= 0, got {args.prior_weight}")
    if args.consistent and args.method not in ("wls", "ols"):
        raise UserError(f"--consistent works with --method wls or ols, not {args.method}")
    robot, desc = model_from_args(args)
    datasets = read_datasets(args.data, robot.n, args)
    if args.stribeck_vs == "fit":
        robot, desc = _fit_stribeck_velocity(robot, desc, datasets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an ambiguous rank is reported below, from base.gap
        # Random states in chunks of the same shape as the data's: the regressor compiles once.
        base = jaxid.base_parameters(robot, n_samples=CHUNK)
    names = robot.parameter_names()
    N = sum(len(d) for d in datasets)
    if N * robot.n <= base.rank:
        raise UserError(f"{N} samples x {robot.n} joints give {N * robot.n} equations for {base.rank} base "
                        "parameters; record more samples")
    W, tau = regressor_rows(robot, datasets, None if args.consistent else np.asarray(base.indices), args.quiet)
    Wb = W[:, np.asarray(base.indices)] if args.consistent else W
    try:
        fit = jaxid.identify(Wb, tau, method=args.method, n_joints=robot.n, names=list(base.names))
    except ValueError as e:
        raise UserError(f"the data do not identify the base parameters: {e}") from None
    params = results.from_fit(desc, names, base, fit, n_samples=N, sources=args.data)

    standard, source, consistent = None, None, False
    if args.consistent:
        from jaxid.identification.consistent import identify_consistent

        c = identify_consistent(robot, W, tau, base=base, method=args.method, weight=args.prior_weight)
        consistent = bool(c.valid)
        standard = np.asarray(c.theta)
        source = (f"physically consistent estimate (identify_consistent, prior weight {args.prior_weight:g}, "
                  f"{'converged' if bool(c.converged) else 'not converged'} in {int(c.num_steps)} steps)")
        # The consistent bodies are the identified model: predict with their base parameters
        # (the covariance stays that of the unconstrained least-squares estimate).
        params = dataclasses.replace(params, theta=c.base, fit={
            **params.fit, "method": f"{args.method}+consistent", "prior_weight": args.prior_weight,
            "residual_rms": np.asarray(c.residual_rms).tolist(), "estimate_ls": np.asarray(fit.theta).tolist()})
    else:
        theta, consistent = results.consistent_standard(robot, params)
        if consistent:
            standard, source = np.asarray(theta), ("base estimate with the non-identifiable parameters at "
                                                   "their nominal values")
    if consistent:
        params = dataclasses.replace(params, fit={**params.fit, "standard_source": source},
                                     standard=jnp.asarray(standard))
    results.save_params(args.output, params)
    if args.urdf_out:
        if params.standard is None:
            raise UserError("the identified links are not physically consistent, so no URDF can be written"
                            + ("" if args.consistent else "; rerun with --consistent"))
        results.write_urdf(robot, params, args.urdf_out)

    theta, std, rel = (np.asarray(x) for x in (params.theta, params.std, params.rel_std))
    doc = {"params": args.output, "robot": robot.name, "method": params.fit["method"], "samples": N,
           "files": list(args.data), "base_parameters": base.rank, "parameters": len(names),
           "cond": json_number(fit.cond), "residual_rms_nm": [json_number(v) for v in params.fit["residual_rms"]],
           "standard_consistent": params.standard is not None, "urdf": args.urdf_out,
           "stribeck_vs": robot.stribeck_vs if "fs" in robot.joint_terms else None,
           "stribeck_vs_fitted": args.stribeck_vs == "fit",
           "base": [{"name": s, "estimate": json_number(v), "std": json_number(d), "rel_std_percent": json_number(r)}
                    for s, v, d, r in zip(base.names, theta, std, rel)]}
    if args.json is not None and emit_json(doc, args.json):
        return 0
    print(f"{robot.name}: {base.rank} base parameters of {len(names)} (joint terms "
          f"{','.join(robot.joint_terms) or 'none'}), {doc['method'].upper()} on {N} samples from "
          f"{len(args.data)} file(s); cond = {float(fit.cond):.4g}")
    width = min(max(len(s) for s in base.names), 48)
    print(f"  {'#':>3}  {'base parameter':<{width}}{'estimate':>14}{'std':>12}{'rel std':>10}")
    for i, (s, v, d, r) in enumerate(zip(base.names, theta, std, rel)):
        s = s if len(s) <= width else s[:width - 3] + "..."
        print(f"  {i + 1:>3}  {s:<{width}}{v:>14.6g}{d:>12.3g}{r:>9.3g}%")
    if "fs" in robot.joint_terms:
        print(f"  Stribeck velocity vs = {robot.stribeck_vs:.4g} rad/s"
              + (" (fitted: separable least squares)" if args.stribeck_vs == "fit" else ""))
    print("  residual RMS per joint (N m): " + " ".join(f"{v:.4g}" for v in doc["residual_rms_nm"]))
    if base.gap < GAP_WARN:
        print(f"  warning: the rank of the regressor is not clear-cut (R-diagonal gap {base.gap:.3g})")
    print("  standard parameters: " + ("physically consistent" if params.standard is not None else
                                         "not physically consistent (base parameters only; --consistent for "
                                         "a consistent estimate)"))
    print(f"wrote {args.output}" + (f" and {args.urdf_out}" if args.urdf_out else ""))
    return 0
