"""Physically consistent identification vs unconstrained WLS, on the simulated UR5 and on
the real KUKA LWR4+ recordings.

(a) UR5 (simulated): the truth is jaxid.models.ur5() with viscous and Coulomb friction;
    the CAD prior is the truth with each link's mass, centre of mass and inertia
    perturbed (mass x (1 + 0.2 e), com + 0.02 e m, inertia about the com x (1 + 0.3 e),
    e ~ N(0, 1), seed 0). Identify on one noisy 10-s Fourier trajectory, validate on
    another (noise as in benchmarks/monte_carlo.py).
(b) KUKA LWR4+ (real, ../shared/data/kuka_lwr4 or $JAXID_KUKA_DATA): identify on runs 2 + 3 with viscous,
    Coulomb friction and an offset per joint, prior kuka_lwr4.urdf; validate on run 1.

Both estimators identify the base parameters (two-step WLS); the consistent one then fits
log-Cholesky bodies, positive friction and the entropic prior (weight --weight).
Reported: validation torque RMSE per joint (N m), and normalised by the joint torque
limits (%, mean over joints) -- also for the CAD prior itself ("cad") -- and the number of physically invalid links (pseudo-inertia
not positive definite; the WLS base estimate becomes bodies with its non-identifiable
parameters at the CAD values) and of negative friction coefficients.
Writes the consistent models as URDF, and the figures as JSON, to --out
(default benchmarks/out/).

Usage: python benchmarks/consistent.py [--only ur5|kuka] [--weight 1e-3] [--out DIR]

Its row in benchmarks/README.md has no figures yet (record them there). No document cites it;
consistent_sdp.py imports its ``perturbed``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from monte_carlo import FRICTION, SIGMA, trajectory
from real_kuka import DATA as KUKA  # one place resolves the data folder (JAXID_KUKA_DATA)

import jaxid
import jaxid.data
from jaxid.identification.consistent import identify_consistent, lift, to_urdf
from jaxid.model import inertia


def perturbed(robot, seed=0):
    """The robot's parameters with every link's mass, com and inertia perturbed (docstring)."""
    rng = np.random.default_rng(seed)
    links = []
    for pi in np.asarray(robot.inertial):
        m, c, I_c = inertia.to_mass_com_inertia(jnp.asarray(pi))
        e = rng.normal(size=3)
        links.append(
            inertia.from_mass_com_inertia(
                m * (1 + 0.2 * e[0]), c + 0.02 * rng.normal(size=3), I_c * abs(1 + 0.3 * e[2])
            )
        )
    return jnp.concatenate([jnp.stack(links).ravel(), robot.joint_params.ravel()])


def compare(robot, W, tau, Wv, tauv, nominal, weight, name, out):
    """Identify with WLS and the consistent estimator; validation figures of both."""
    base = jaxid.base_parameters(robot)
    t0 = time.perf_counter()
    fit = identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=weight)
    jax.block_until_ready(fit.theta)
    seconds = time.perf_counter() - t0
    wls = lift(base, fit.base_ls, nominal)
    n, tmax = robot.n, np.asarray(robot.tau_max)
    positive = [k for k, t in enumerate(robot.joint_terms) if t in ("fv", "fc")]
    rows = {}
    for label, theta in (("cad", nominal), ("wls", wls), ("consistent", fit.theta)):
        err = np.asarray(Wv @ theta).reshape(-1, n) - np.asarray(tauv).reshape(-1, n)
        rmse = np.sqrt(np.mean(err**2, axis=0))
        inertial, joint = robot.split(theta)
        rows[label] = dict(
            rmse=rmse.round(4).tolist(),
            nrmse_pct=float(100 * np.mean(rmse / tmax)),
            invalid_links=int(np.sum(~np.asarray(inertia.is_consistent(inertial)))),
            negative_friction=int(np.sum(np.asarray(joint)[:, positive] < 0)),
        )
    path = to_urdf(robot, fit.theta, Path(out) / f"{name}_consistent.urdf", name=f"{robot.name}_consistent")
    return dict(
        rows,
        seconds=seconds,
        converged=bool(fit.converged),
        steps=int(fit.num_steps),
        cost=float(fit.cost),
        base_parameters=base.rank,
        urdf=str(path),
        train_residual_rms=np.asarray(fit.residual_rms).round(4).tolist(),
    )


def ur5(weight, out):
    robot = jaxid.models.ur5(joint_terms=("fv", "fc"), joint_params=FRICTION)
    theta = robot.parameter_vector()
    rng = np.random.default_rng(1)
    data = []
    for seed in (0, 1):
        q, qd, qdd = trajectory(robot.n, seed=seed)
        W = jaxid.stack(jaxid.regressor(robot, q, qd, qdd))
        data += [W, W @ theta + (rng.normal(size=(q.shape[0], robot.n)) * SIGMA).ravel()]
    return compare(robot, *data, perturbed(robot), weight, "ur5", out)


def kuka(weight, out):
    robot = jaxid.Robot.from_urdf(KUKA / "kuka_lwr4.urdf", joint_terms=("fv", "fc", "offset"))
    runs = [jaxid.data.read(KUKA / f"measurements_{i}.npz") for i in (1, 2, 3)]
    train = jaxid.data.concatenate(runs[1:])

    def system(d):
        return jaxid.stack(jaxid.regressor(robot, d.q, d.qd, d.qdd), d.tau)

    W, tau = system(train)
    Wv, tauv = system(runs[0])
    return compare(robot, W, tau, Wv, tauv, robot.parameter_vector(), weight, "kuka_lwr4", out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("ur5", "kuka"), default=None)
    parser.add_argument("--weight", type=float, default=1e-3, help="entropic prior weight")
    parser.add_argument("--out", default=str(Path(__file__).parent / "out"))
    args = parser.parse_args(argv)
    print(f"devices: {[str(d) for d in jax.devices()]}")
    results = {}
    for name, run in (("ur5", ur5), ("kuka", kuka)):
        if args.only in (None, name):
            results[name] = run(args.weight, args.out)
    for name, r in results.items():
        print(
            f"\n{name}: {r['base_parameters']} base parameters; consistent fit {r['seconds']:.1f} s, "
            f"{r['steps']} steps, converged {r['converged']}; URDF {r['urdf']}"
        )
        print(
            f"{'':<11} {'validation RMSE per joint (N m)':<52} {'% of limit':>10} {'invalid links':>13} "
            f"{'fv,fc < 0':>9}"
        )
        for label in ("cad", "wls", "consistent"):
            e = r[label]
            print(
                f"{label:<11} {' '.join(f'{x:6.3f}' for x in e['rmse']):<52} {e['nrmse_pct']:>10.3f} "
                f"{e['invalid_links']:>13d} {e['negative_friction']:>9d}"
            )
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "consistent.json").write_text(json.dumps(results, indent=1))
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
