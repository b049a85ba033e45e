"""Optimised excitation vs random feasible starts: conditioning of the base regressor.

For the UR5 (DH model, viscous + Coulomb friction per joint) and the 7-DOF Franka Panda
(example-robot-data URDF, same friction terms): 16 random starts of a zero-start Fourier
excitation (5 harmonics, 0.05 Hz, T = 20 s), each scaled down until it meets every joint
limit, are optimised together by ``jaxid.excitation.optimize``. Reported, on the dense
check grid: the condition number of the column-normalised base regressor for the median
and best random start and for the optimised trajectory, limit usage and violations, and
the wall time of the optimisation (compilation included).

Targets (issue 4): optimised cond <= 100 with all limits met, >= 10x below the median
random start.

The Panda URDF has no acceleration limits; the Franka datasheet's are used (Franka
Control Interface documentation, "Robot and interface specifications":
15, 7.5, 10, 12.5, 15, 20, 20 rad/s^2).

Usage: python benchmarks/excitation.py [--robots ur5 panda] [--starts 16] [--steps 300]
       [--objective cond] [--seed 0]
"""
from __future__ import annotations

import argparse
import json

import jax
import numpy as np

import jaxid
from jaxid.excitation.optimize import LIMITS, optimize

PANDA_QDD_MAX = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])


def robots(names):
    for name in names:
        if name == "ur5":
            yield name, jaxid.models.ur5(joint_terms=("fv", "fc")), None
        elif name == "panda":
            path = jaxid.models.example_robot_urdf("panda_description/urdf/panda.urdf")
            robot = jaxid.Robot.from_urdf(path, tip_link="panda_link7").with_joint_terms(("fv", "fc"))
            yield name, robot, {"qdd_max": PANDA_QDD_MAX}
        else:
            raise SystemExit(f"unknown robot {name!r}; use ur5 or panda")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="+", default=["ur5", "panda"])
    parser.add_argument("--starts", type=int, default=16)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--objective", default="cond", choices=("cond", "logdet"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rows = []
    for name, robot, limits in robots(args.robots):
        res = optimize(robot, n_starts=args.starts, steps=args.steps, objective=args.objective,
                       seed=args.seed, limits=limits)
        init = res.initial_cond
        median = float(np.median(init))
        rows.append(dict(
            robot=name, joints=robot.n, base_parameters=int(res.columns.size),
            random_feasible=int(res.initial_feasible.sum()), starts=args.starts, steps=args.steps,
            random_cond_median=median, random_cond_best=float(init.min()), cond=res.cond,
            logdet=res.logdet, improvement=median / res.cond, feasible=res.feasible,
            usage=res.feasibility.usage, violation=res.feasibility.violation,
            final_feasible=int(res.final_feasible.sum()), time_s=res.time_s,
            target_met=bool(res.cond <= 100 and res.feasible and median / res.cond >= 10),
        ))

    print(f"devices: {jax.devices()}; objective {args.objective}, {args.starts} starts x {args.steps} steps")
    print(f"{'robot':>6} {'base':>5} {'random median':>14} {'random best':>12} {'optimised':>10} "
          f"{'median/opt':>11} {'feasible':>9} {'time s':>7}  max usage " + " ".join(f"{k[:5]:>6}" for k in LIMITS))
    for r in rows:
        print(f"{r['robot']:>6} {r['base_parameters']:>5} {r['random_cond_median']:>14.2f} "
              f"{r['random_cond_best']:>12.2f} {r['cond']:>10.2f} {r['improvement']:>11.2f} "
              f"{str(r['feasible']):>9} {r['time_s']:>7.1f}  {'':>9} "
              + " ".join(f"{r['usage'][k]:>6.3f}" for k in LIMITS))
    print(json.dumps(dict(benchmark="excitation", objective=args.objective, seed=args.seed,
                          devices=[str(d) for d in jax.devices()], rows=rows)))


if __name__ == "__main__":
    main()
