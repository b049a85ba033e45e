"""KUKA LWR4+ held-out rotations of the consistent fit, with the model's gravity and with the
direction of gravity identified on the training runs (issue 20).

For each rotation (identify on two of the three measured runs of ``examples/data/kuka_lwr4``,
validate on the third) and each gravity choice, this prints the held-out torque-limit NRMS
(mean over joints of 100 RMSE_j / (2 tau_max_j), %) of two-step WLS and of the physically
consistent fit (``identify_consistent``: entropic prior weight 1e-3, every link's mass within
+-30 % of the URDF's), their ratio, whether the fit converged, whether every mass is within
its bounds, the fit's cost relative to the SDP optimum (``reference=True``: cvxpy + Clarabel,
the ``consistent-sdp`` extra) and the per-joint NRMS of both models. With ``--fit-gravity``
semantics the gravity direction is :func:`jaxid.identification.gravity.fit_gravity` on the
two training runs only (the held-out run is never seen). The model: the URDF's kinematics
with viscous, Coulomb (tanh(qd / 1e-3)) and offset terms per joint (``--joint-terms``).

Measured (2 cores shared; fv,fc,offset: load average 10-13, 356 s; with the joint stiffness
ks, ``--joint-terms fv,fc,offset,ks``: load 5-8, 246 s), held-out NRMS %:

    terms  gravity  test  WLS     cons    ratio  converged  masses in bounds  cost/SDP - 1  tilt
    -      model    1     0.1588  0.1668  1.050  yes (154)  yes               -3.1e-09
    -      model    2     0.1488  0.1582  1.063  yes (144)  yes               -7.8e-10
    -      model    3     0.7091  0.2216  0.312  yes (142)  yes               -3.4e-10
    -      fitted   1     0.1458  0.1548  1.061  yes (140)  yes               -3.4e-10      1.42 deg
    -      fitted   2     0.1352  0.1419  1.050  yes (141)  yes               -1.2e-11      1.43 deg
    -      fitted   3     0.5997  0.2193  0.366  yes (161)  yes               -2.1e-09      2.00 deg
    +ks    model    1     0.1360  0.1398  1.028  yes (135)  yes               -5.9e-11
    +ks    model    2     0.1219  0.1237  1.015  yes (135)  yes               -4.4e-10
    +ks    model    3     0.5286  0.3184  0.602  yes (145)  yes               -2.7e-10
    +ks    fitted   1     0.1272  0.1294  1.018  yes (127)  yes               -3.8e-11      1.16 deg
    +ks    fitted   2     0.1174  0.1157  0.986  yes (148)  yes               -1.9e-10      1.52 deg
    +ks    fitted   3     0.5296  0.2723  0.514  yes (171)  yes               -2.2e-09      1.90 deg

ks (``benchmarks/kuka_stiffness.py``) is a spring of 0.21-0.25 N m/rad on joint 7, which
least squares otherwise reads as a negative inertia. Runs 1 and 2 held out improve by 16-18 % and meet the 1.05 ratio; run 3 held out gets worse
(0.2193 -> 0.2723): trained on runs 1 and 2 alone, one speed, a spring on every joint is
confounded with its inertia (q = -qdd / w^2) and extrapolates badly to twice the speed.
``--choose ks`` picks the term set per rotation by leave-one-run-out inside the training
runs: it picks the wrong set in every rotation (without ks for tests 1, 2, inner NRMS
0.1754 vs 0.1877 and 0.2461 vs 0.2662; with ks for test 3, 0.1269 vs 0.1538), because a
fit on one run has one speed and cannot separate the spring from the inertia.

Joints 6 and 7 (tau_max 38 N m) dominate; on runs 1 and 2 joint 7 makes most of the
consistent/WLS gap (0.256 vs 0.302 %): least squares puts link 7's Izz at -0.086 kg m^2,
107 standard deviations from any consistent body.

Usage: ``python benchmarks/kuka_rotations.py [--json PATH] [--joint-terms TERMS] [--gravity
model|fitted|both] [--choose TERMS]``.

Its row in benchmarks/README.md lists its last figures; cited by docs/your-robot.md (gravity
direction) and the CHANGELOG.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

import jaxid
from jaxid import data
from jaxid.identification.base import lift
from jaxid.identification.consistent import Bounds, identify_consistent
from jaxid.identification.gravity import fit_gravity

DATA = Path(__file__).resolve().parents[1] / "examples/data/kuka_lwr4"
TERMS = ("fv", "fc", "offset")
WEIGHT, MASS_TOL = 1e-3, 0.3


def nrms(real, pred, tau_max):
    """Per-joint 100 RMSE / (2 tau_max), %."""
    return 100 * np.sqrt(np.mean((real - pred) ** 2, axis=0)) / (2 * tau_max)


def rotation(robot, runs, held, fit, reference=True):
    """One rotation: the fits on the other runs scored on run ``held`` (reference: also solve
    the SDP, for the cost/SDP column)."""
    train = [k for k in range(len(runs)) if k != held]
    doc = {"test": held + 1, "train": [k + 1 for k in train], "joint_terms": list(robot.joint_terms)}
    if fit:
        stacked = [np.concatenate([np.asarray(getattr(runs[k], f)) for k in train]) for f in ("q", "qd", "qdd", "tau")]
        g = fit_gravity(robot, *stacked)
        robot = dataclasses.replace(robot, gravity=g.gravity)
        doc["gravity"] = {"vector": g.gravity.tolist(), "tilt_deg": g.tilt_deg}
    base = jaxid.base_parameters(robot)
    W = [np.asarray(jaxid.regressor(robot, r.q, r.qd, r.qdd)) for r in runs]
    tau = [np.asarray(r.tau) for r in runs]
    bounds = Bounds.from_nominal(robot, mass_tol=MASS_TOL)
    Wt = np.concatenate([W[k] for k in train]).reshape(-1, W[0].shape[-1])
    c = identify_consistent(
        robot,
        Wt,
        np.concatenate([tau[k] for k in train]).reshape(-1),
        base=base,
        weight=WEIGHT,
        bounds=bounds,
        reference=reference,
    )
    tau_max = np.asarray(robot.tau_max)
    wls = nrms(tau[held], W[held] @ np.asarray(lift(base, c.base_ls, robot.parameter_vector())), tau_max)
    con = nrms(tau[held], W[held] @ np.asarray(c.theta), tau_max)
    m = np.asarray(c.theta)[: 10 * robot.n : 10]
    doc.update(
        wls=float(wls.mean()),
        consistent=float(con.mean()),
        ratio=float(con.mean() / wls.mean()),
        converged=bool(c.converged),
        steps=int(c.num_steps),
        masses_in_bounds=bool(np.all((m >= bounds.mass_min * (1 - 1e-9)) & (m <= bounds.mass_max * (1 + 1e-9)))),
        cost_vs_sdp=float(c.cost / c.sdp_cost - 1) if reference else None,
        sdp_gap_rel=float(c.sdp_gap / c.sdp_cost) if reference else None,
        wls_joints=wls.tolist(),
        consistent_joints=con.tolist(),
    )
    return doc


def chosen_rotation(robot, runs, held, fit, candidates):
    """The rotation holding out run ``held`` with the joint terms chosen on its training runs
    alone: for each candidate set, the consistent fit on one training run scored on the other,
    both ways (gravity fitted on that one run when ``fit``); the set with the least mean
    held-out NRMS is used for the rotation. The held-out run is never seen by the choice."""
    train = [runs[k] for k in range(len(runs)) if k != held]
    inner = {}
    for terms in candidates:
        model = robot.with_joint_terms(terms)
        inner[",".join(terms)] = float(
            np.mean([rotation(model, train, h, fit, reference=False)["consistent"] for h in range(len(train))])
        )
    best = min(inner, key=inner.get)
    doc = rotation(robot.with_joint_terms(tuple(best.split(","))), runs, held, fit)
    doc["inner_nrms"] = inner
    return doc


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument(
        "--joint-terms",
        default=",".join(TERMS),
        metavar="TERMS",
        help=f"per-joint terms of the model (default {','.join(TERMS)})",
    )
    p.add_argument(
        "--gravity",
        choices=("both", "model", "fitted"),
        default="both",
        help="which gravity to run: the model's, fitted on the training runs, or both (default)",
    )
    p.add_argument(
        "--choose",
        metavar="TERMS",
        default=None,
        help="also try the model with these joint terms added (e.g. ks) and, per rotation, use the set "
        "with the least leave-one-run-out NRMS of the consistent fit within the training runs",
    )
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    runs = [data.read(DATA / f"measurements_{k}.npz") for k in (1, 2, 3)]
    robot = jaxid.Robot.from_urdf(DATA / "kuka_lwr4.urdf", joint_terms=tuple(args.joint_terms.split(",")))
    fits = {"both": (False, True), "model": (False,), "fitted": (True,)}[args.gravity]
    if args.choose:
        more = tuple(t for t in robot.joint_terms) + tuple(args.choose.split(","))
        out = [chosen_rotation(robot, runs, held, fit, (robot.joint_terms, more)) for fit in fits for held in range(3)]
    else:
        out = [rotation(robot, runs, held, fit) for fit in fits for held in range(3)]
    print(
        f"{'gravity':<10}{'test':>5}{'WLS %':>8}{'cons %':>8}{'ratio':>7}{'conv':>6}{'steps':>6}{'mass ok':>8}"
        f"{'cost/SDP-1':>12}{'tilt deg':>9}  joint terms"
    )
    for r in out:
        tilt = r.get("gravity", {}).get("tilt_deg")
        print(
            f"{'fitted' if tilt is not None else 'model':<10}{r['test']:>5}{r['wls']:>8.4f}{r['consistent']:>8.4f}"
            f"{r['ratio']:>7.3f}{str(r['converged']):>6}{r['steps']:>6}{str(r['masses_in_bounds']):>8}"
            f"{r['cost_vs_sdp']:>12.2e}{'' if tilt is None else f'{tilt:.3f}':>9}  {','.join(r['joint_terms'])}"
            + (
                ""
                if "inner_nrms" not in r
                else "  (inner: " + ", ".join(f"{k} {v:.4f}" for k, v in r["inner_nrms"].items()) + ")"
            )
        )
    print("per-joint held-out NRMS %, WLS / consistent:")
    for r in out:
        print(
            f"  {'fitted' if 'gravity' in r else 'model':<8} test {r['test']}: "
            + " ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(r["wls_joints"], r["consistent_joints"]))
        )
    print(f"took {time.perf_counter() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"rotations": out}, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
