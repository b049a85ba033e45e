"""Joint friction models on the real KUKA LWR4+ data: does Stribeck or asymmetric friction help?

For each set of joint terms (fv, fc, offset as in ``real_kuka.py``, plus the asymmetric
viscous term fva, the Stribeck excess fs, or both), identify WLS base parameters on two
runs and validate on the third, for the three rotations. With fs, the Stribeck velocity
is first identified on the training runs by separable least squares
(``jaxid.friction.models.fit_stribeck_velocity``). Coulomb smooth-sign scale: the default
1e-3 rad/s (what ``jaxid identify`` uses). Prints a table of the held-out RMS normalised by
the torque limits (FloBaRoID's convention, as in ``real_kuka.py``) and JSON.
Usage: python benchmarks/kuka_friction.py [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
from real_kuka import DATA, _joint_columns, load  # the script's folder is on sys.path

import jaxid
from jaxid import results
from jaxid.friction.models import fit_stribeck_velocity

TERM_SETS = (
    ("fv", "fc", "offset"),
    ("fv", "fc", "fva", "offset"),
    ("fv", "fc", "fs", "offset"),
    ("fv", "fc", "fs", "fva", "offset"),
)


def regressor(rigid_Y, robot, ds):
    """Full regressor (N, n, p) of a run: its rigid-body block (computed once per run) and the
    joint-term block at the robot's eps and vs (``real_kuka._joint_columns``)."""
    return np.concatenate([rigid_Y, np.asarray(_joint_columns(robot, ds.q, ds.qd, ds.qdd))], axis=2)


def study(runs, nominal):
    """Rows {terms, identified_on, validated_on, stribeck_vs, base_parameters, nrms_limits,
    relative_error, rmse}: every term set of ``TERM_SETS`` x every rotation of the three runs."""
    rigid = nominal.with_joint_terms(())
    rigid_Y = [np.asarray(jaxid.regressor(rigid, d.q, d.qd, d.qdd)) for d in runs]
    tau_max = np.asarray(nominal.tau_max)
    rows = []
    for terms in TERM_SETS:
        robot = nominal.with_joint_terms(terms)
        base = jaxid.base_parameters(robot)
        for held in range(3):
            train = [k for k in range(3) if k != held]
            vs, model = None, robot
            if "fs" in terms:
                stacked = [
                    np.concatenate([np.asarray(getattr(runs[k], a)) for k in train]) for a in ("q", "qd", "qdd", "tau")
                ]
                vs = fit_stribeck_velocity(robot, *stacked)
                model = dataclasses.replace(robot, stribeck_vs=vs)
            Y = np.concatenate([regressor(rigid_Y[k], model, runs[k]) for k in train])
            W = Y.reshape(-1, Y.shape[-1])
            tau = np.concatenate([np.asarray(runs[k].tau) for k in train]).reshape(-1)
            fit = jaxid.identify(base.reduce(W), tau, method="wls", n_joints=robot.n, names=list(base.names))
            Yh = regressor(rigid_Y[held], model, runs[held])
            pred = (np.asarray(base.reduce(Yh.reshape(-1, Yh.shape[-1]))) @ np.asarray(fit.theta)).reshape(-1, robot.n)
            m = results.validation_metrics(np.asarray(runs[held].tau), pred, tau_max)
            rows.append(
                dict(
                    terms=list(terms),
                    identified_on=[k + 1 for k in train],
                    validated_on=held + 1,
                    stribeck_vs=vs,
                    base_parameters=int(base.rank),
                    nrms_limits=m["nrms_limits"]["overall"],
                    relative_error=m["relative_error"],
                    rmse=list(m["rmse"]["per_joint"]),
                )
            )
    return rows


def table(rows) -> str:
    lines = [f"{'joint terms':<22}{'base':>5}" + "".join(f"{f'-> run {h + 1}':>16}" for h in range(3)) + f"{'mean':>8}"]
    for terms in TERM_SETS:
        sel = [r for r in rows if r["terms"] == list(terms)]
        cells = "".join(
            f"{r['nrms_limits']:>8.3f} %" + (f" {r['stribeck_vs']:.3f}" if r["stribeck_vs"] else " " * 6) for r in sel
        )
        mean = np.mean([r["nrms_limits"] for r in sel])
        lines.append(f"{','.join(terms):<22}{sel[0]['base_parameters']:>5}{cells}{mean:>7.3f} %")
    lines.append(
        "cells: held-out RMS / (2 tau_max) averaged over joints, % (and the fitted vs, rad/s); "
        "FloBaRoID reports 0.18-0.21 %"
    )
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    runs, nominal, _ = load()
    rows = study(runs, nominal)
    doc = dict(benchmark="kuka_friction", data=str(DATA), rows=rows, time_s=time.perf_counter() - t0)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc))
    print(table(rows))
    print(f"took {doc['time_s']:.0f} s")
    return doc


if __name__ == "__main__":
    main()
