"""A real robot: KUKA LWR4+ base parameters with friction, validated on a held-out run.

Data: three measured runs of the FloBaRoID project (``examples/data/kuka_lwr4``, read by
path; see its README): 200 Hz, q, qd, qdd, tau of 7 joints, already filtered. For each
rotation (identify on two runs, validate on the third) the model is the CAD URDF
``kuka_lwr4.urdf`` for kinematics, with 43 rigid-body base parameters (Gautier's QR basis)
plus viscous, Coulomb and offset terms per joint (21), 64 in all, fitted by OLS, by
two-step WLS (Gautier and Poignet 2001), and as physically consistent standard parameters
(``identify_consistent``: log-Cholesky bodies, non-negative friction, an entropic prior
toward the CAD links; Lee, Wensing and Park 2020). The Coulomb smooth-sign scale
``coulomb_eps`` of ``tanh(qd / eps)`` (per rotation and method) and the prior weight are
chosen on the two *training* runs only: fit on one, score on the other, both ways (the
held-out run is never seen).

Reported on the held-out run, next to the prior URDFs without identification
(``kuka_lwr4.urdf``, ``kuka_lwr4_gaz.urdf``; no friction): per-joint RMSE (N m), the
relative error ||e|| / ||tau|| (%), and the RMS error normalised by the torque range of the
limits, mean_j RMSE_j / (2 tau_max_j) (%) — FloBaRoID's "NRMS" (``getNRMSE`` with the URDF
limits), for which its authors report 0.18-0.21 % on held-out data.

Usage: ``python benchmarks/real_kuka.py [--json PATH]``; JAXID_NOTEBOOK_SMALL=1 uses every
10th sample and fixed eps and weight (a quick check, not the reported figures).
JAXID_KUKA_DATA overrides the data folder.

Its row in benchmarks/README.md lists its last figures; cited by notebook 02; consistent.py and
consistent_sdp.py import its data folder.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxid
from jaxid import data, results
from jaxid.identification.consistent import identify_consistent

DATA = Path(os.environ.get("JAXID_KUKA_DATA", Path(__file__).resolve().parents[1] / "examples/data/kuka_lwr4"))
SMALL = os.environ.get("JAXID_NOTEBOOK_SMALL") == "1"
TERMS = ("fv", "fc", "offset")
EPS_GRID = (1e-2,) if SMALL else (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
#: Prior weights of the physically consistent estimate (``identify_consistent``).
WEIGHTS = (10.0,) if SMALL else (0.1, 10.0, 1000.0)
METHODS = ("ols", "wls")
#: FloBaRoID's held-out NRMS on this data, %.
REFERENCE = (0.18, 0.21)


def load(step: int | None = None):
    """(runs, robot, priors): the three runs (every ``step``-th sample), the URDF robot with
    fv, fc, offset, and the two prior models {name: Robot} without joint terms."""
    if not DATA.is_dir():
        raise FileNotFoundError(f"KUKA data folder not found: {DATA} (set JAXID_KUKA_DATA)")
    step = (10 if SMALL else 1) if step is None else step
    runs = [data.read(DATA / f"measurements_{k}.npz").slice(step=step) for k in (1, 2, 3)]
    robot = jaxid.Robot.from_urdf(DATA / "kuka_lwr4.urdf", joint_terms=TERMS)
    # Gaz et al.'s published values are not physically consistent (link 1 is not positive
    # semi-definite): the prior is only evaluated, so the construction check is skipped.
    priors = {u: jaxid.Robot.from_urdf(DATA / f"{u}.urdf", check_inertia=False) for u in ("kuka_lwr4", "kuka_lwr4_gaz")}
    return runs, robot, priors


@eqx.filter_jit
def _joint_columns(robot, q, qd, qdd):
    # The joint terms are linear in their values: their regressor block is this Jacobian
    # (the same block Robot.regressor appends to the rigid-body one).
    J = jax.vmap(jax.jacfwd(robot.joint_torque), in_axes=(None, 0, 0, 0))(robot.joint_params, q, qd, qdd)
    return J.reshape(qd.shape[0], robot.n, -1)


class Regressors:
    """Standard regressor of each run, (N, n, p): the rigid-body block is computed once, the
    joint-term block (which alone depends on coulomb_eps) per eps."""

    def __init__(self, robot, runs):
        self.base = jaxid.base_parameters(robot)
        rigid = robot.with_joint_terms(())
        self.rigid = [np.asarray(jaxid.regressor(rigid, d.q, d.qd, d.qdd)) for d in runs]
        self.robot, self.runs = robot, runs
        self._cache = {}

    def model(self, eps):
        return dataclasses.replace(self.robot, coulomb_eps=eps)

    def __call__(self, k: int, eps: float):
        if (k, eps) not in self._cache:
            J = np.asarray(_joint_columns(self.model(eps), self.runs[k].q, self.runs[k].qd, self.runs[k].qdd))
            self._cache[k, eps] = np.concatenate([self.rigid[k], J], axis=2)
        return self._cache[k, eps]

    def stacked(self, runs, eps):
        W = np.concatenate([self(k, eps) for k in runs])
        tau = np.concatenate([np.asarray(self.runs[k].tau) for k in runs])
        return W.reshape(-1, W.shape[-1]), tau.reshape(-1)


def fit(reg, train, eps, method, weight=None):
    """Standard parameters (p,) predicting the torques, from runs ``train`` at Coulomb scale eps.

    "ols", "wls": the base estimate on its independent parameters (the others 0);
    "consistent": ``identify_consistent`` (log-Cholesky bodies, positive friction, entropic
    prior toward the CAD links with the given weight) on its OLS base estimate.
    """
    W, tau = reg.stacked(train, eps)
    base = reg.base
    if method == "consistent":
        return np.asarray(identify_consistent(reg.model(eps), W, tau, base=base, method="ols", weight=weight).theta)
    b = jaxid.identify(base.reduce(W), tau, method=method, n_joints=reg.robot.n, names=list(base.names))
    return np.asarray(jnp.zeros(W.shape[1]).at[base.indices].set(b.theta))


def nrms_limits(real, pred, tau_max):
    return results.validation_metrics(real, pred, tau_max)["nrms_limits"]["overall"]


def choose(reg, train, grid, score_fit):
    """The grid value with the least NRMS when fitting on one training run and predicting the
    other (``score_fit(value, a, b)`` -> torques of run b), averaged over both directions:
    (value, {value: score}). A grid of one value is taken without fits."""
    if len(grid) == 1:
        return grid[0], {}
    tau_max = np.asarray(reg.robot.tau_max)
    scores = {}
    for v in grid:
        s = [nrms_limits(np.asarray(reg.runs[b].tau), score_fit(v, a, b), tau_max) for a, b in (train, train[::-1])]
        scores[v] = float(np.mean(s))
    return min(scores, key=scores.get), scores


def study(runs, robot, priors, reg=None):
    """Every rotation: priors and the identified models on the held-out run (metrics, and for
    the identified models the chosen eps / weight and the standard parameters ``theta``)."""
    reg = Regressors(robot, runs) if reg is None else reg
    tau_max = np.asarray(robot.tau_max)
    out = []
    for held in range(3):
        train = [k for k in range(3) if k != held]
        ds = runs[held]
        real = np.asarray(ds.tau)
        rows = {}
        for name, prior in priors.items():
            pred = np.asarray(jaxid.rnea(prior, ds.q, ds.qd, ds.qdd))
            rows[f"prior {name}.urdf"] = results.validation_metrics(real, pred, tau_max)
        chosen = {}
        for method in METHODS:
            eps, cv = choose(reg, train, EPS_GRID, lambda e, a, b: reg(b, e) @ fit(reg, [a], e, method))
            chosen[method] = eps
            theta = fit(reg, train, eps, method)
            rows[f"{method.upper()} eps={eps:g}"] = {
                **results.validation_metrics(real, reg(held, eps) @ theta, tau_max),
                "coulomb_eps": eps,
                "cv_nrms_limits": cv,
                "theta": theta.tolist(),
            }
        eps = chosen["ols"]
        w, cv = choose(reg, train, WEIGHTS, lambda w, a, b: reg(b, eps) @ fit(reg, [a], eps, "consistent", w))
        theta = fit(reg, train, eps, "consistent", w)
        rows[f"consistent w={w:g}"] = {
            **results.validation_metrics(real, reg(held, eps) @ theta, tau_max),
            "coulomb_eps": eps,
            "weight": w,
            "cv_nrms_limits": cv,
            "theta": theta.tolist(),
        }
        out.append(
            {"identified_on": [k + 1 for k in train], "validated_on": held + 1, "samples": len(ds), "models": rows}
        )
    return out


def table(rotations) -> str:
    lines = []
    for r in rotations:
        lines.append(
            f"identify on runs {r['identified_on']}, validate on run {r['validated_on']} ({r['samples']} samples)"
        )
        lines.append(
            f"  {'model':<26}"
            + "".join(f"{'RMSE' + str(j + 1):>8}" for j in range(7))
            + f"{'rel err %':>11}{'NRMS lim %':>12}"
        )
        for name, m in r["models"].items():
            lines.append(
                f"  {name:<26}"
                + "".join(f"{v:>8.3f}" for v in m["rmse"]["per_joint"])
                + f"{m['relative_error']:>11.2f}{m['nrms_limits']['overall']:>12.3f}"
            )
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", metavar="PATH", help="write the results as JSON here (default: stdout)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    runs, robot, priors = load()
    rotations = study(runs, robot, priors)
    doc = {
        "data": str(DATA),
        "small": SMALL,
        "eps_grid": list(EPS_GRID),
        "reference_nrms_limits": REFERENCE,
        "rotations": rotations,
        "time_s": time.perf_counter() - t0,
    }
    text = json.dumps(doc, indent=1, allow_nan=False)
    if args.json:
        Path(args.json).write_text(text + "\n")
    else:
        print(text)
    print(table(rotations))
    print(f"FloBaRoID's held-out NRMS: {REFERENCE[0]}-{REFERENCE[1]} %; took {doc['time_s']:.0f} s")
    return doc


if __name__ == "__main__":
    main()
