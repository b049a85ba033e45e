"""Optimised excitation vs random feasible starts, with and without the geometric constraints.

For the UR5 (DH model, viscous + Coulomb friction per joint) and the 7-DOF Franka Panda
(example-robot-data URDF, same friction terms): 16 random starts of a zero-start Fourier
excitation (5 harmonics, 0.05 Hz, T = 20 s), each scaled down until it meets every joint
limit, are optimised together by ``jaxid.excitation.optimize``. Reported, on the dense
check grid: the condition number of the column-normalised base regressor for the median
and best random start and for the optimised trajectory, limit usage and violations, and
the wall time of the optimisation (compilation included).

Each robot runs twice: "free" (joint limits only, q0 free) and "constrained" as
``jaxid excite`` runs it: starting and ending at rest at the range centres, self-collision
clearance >= 2 cm on the link capsules, every link 2 cm above the floor z = 0 (UR5: its
capsule table and conservative ranges ``jaxid.model.geometry.UR5_RANGES``; Panda: the
bounding capsules of its collision meshes and its SRDF's disable_collisions). The worst
margin of the free trajectory under the same constraints shows what they prevent.

Targets (issue 4): optimised cond <= 100 with all limits met, >= 10x below the median
random start. Issue 14: constrained, no collision on the capsule model and cond within 2x
of the free optimum.

Measured (8 starts x 300 steps, seed 0, 2 CPU cores shared with other work, so the times are
wall clock under load; margins beyond the 2 cm clearance):

    robot  variant      random median  optimised  collision-free  time s  worst margins
    ur5    free                 21.06       4.69  no               166   upper_arm/wrist_3 -0.074, floor shoulder +0.009
    ur5    constrained         263.32       7.10  yes              243   base/upper_arm +0.007, floor shoulder +0.009
    panda  free                 12.08       4.55  no               192   link0/link6 -0.124, floor link6 -0.203
    panda  constrained          22.82       5.69  yes              252   link1/link5 +0.026, floor link1 +0.097

The constrained optimum is 1.51x (UR5) and 1.25x (Panda) the free one's condition number
(2.10x and 1.56x while the coefficients were in units of qd_max alone: 9.44 against 4.49, 6.85
against 4.39; see CHANGELOG).

The Panda URDF has no acceleration limits; the Franka datasheet's are used (Franka
Control Interface documentation, "Robot and interface specifications":
15, 7.5, 10, 12.5, 15, 20, 20 rad/s^2).

Usage: python benchmarks/excitation.py [--robots ur5 panda] [--starts 16] [--steps 300]
       [--objective cond] [--seed 0]

Its row in benchmarks/README.md lists its last figures; cited by the CHANGELOG (issues 4 and 14
targets).
"""

from __future__ import annotations

import argparse
import json

import jax
import numpy as np

import jaxid
from jaxid.excitation.constraints import Constraints
from jaxid.excitation.optimize import check_limits, model_limits, optimize
from jaxid.model import geometry

PANDA_QDD_MAX = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])


def robots(names):
    """(name, robot, limit overrides, constraints) of each robot."""
    for name in names:
        if name == "ur5":
            lo, hi = geometry.UR5_RANGES
            robot = jaxid.models.ur5(joint_terms=("fv", "fc"))
            yield name, robot, {"q_min": lo, "q_max": hi}, Constraints(geometry.ur5())
        elif name == "panda":
            path = jaxid.models.example_robot_urdf("panda_description/urdf/panda.urdf")
            robot = jaxid.Robot.from_urdf(path, tip_link="panda_link7").with_joint_terms(("fv", "fc"))
            caps = geometry.from_urdf(
                path,
                robot,
                tip_link="panda_link7",
                srdf=jaxid.models.example_robot_urdf("panda_description/srdf/panda.srdf"),
            )
            yield name, robot, {"qdd_max": PANDA_QDD_MAX}, Constraints(caps)
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
    for name, robot, limits, cons in robots(args.robots):
        lim = model_limits(robot, limits)
        finite = lambda x: np.where(np.isfinite(x), x, 0.0)
        home = 0.5 * (finite(lim["q_min"]) + finite(lim["q_max"]))
        for variant, kwargs in (("free", {}), ("constrained", dict(constraints=cons, home=home))):
            res = optimize(
                robot,
                n_starts=args.starts,
                steps=args.steps,
                objective=args.objective,
                seed=args.seed,
                limits=limits,
                **kwargs,
            )
            _, q, qd, qdd = res.trajectory(fs=200 * res.a.shape[1] * res.omega_f / (2 * np.pi))
            check = check_limits(robot, q, qd, qdd, limits=limits, constraints=cons)
            init = res.initial_cond
            median = float(np.median(init))
            rows.append(
                dict(
                    robot=name,
                    variant=variant,
                    joints=robot.n,
                    base_parameters=int(res.columns.size),
                    random_feasible=int(res.initial_feasible.sum()),
                    starts=args.starts,
                    steps=args.steps,
                    random_cond_median=median,
                    random_cond_best=float(init.min()),
                    cond=res.cond,
                    logdet=res.logdet,
                    improvement=median / res.cond,
                    feasible=res.feasible,
                    usage=res.feasibility.usage,
                    violation=res.feasibility.violation,
                    margin_m={k: dict(margin=m, where=w, clearance=c) for k, (m, w, c) in check.margin.items()},
                    collision_free=check.feasible,
                    final_feasible=int(res.final_feasible.sum()),
                    time_s=res.time_s,
                    target_met=bool(res.cond <= 100 and res.feasible and median / res.cond >= 10),
                )
            )

    print(f"devices: {jax.devices()}; objective {args.objective}, {args.starts} starts x {args.steps} steps")
    print(
        f"{'robot':>6} {'variant':>12} {'base':>5} {'random median':>14} {'optimised':>10} "
        f"{'feasible':>9} {'time s':>7}  worst margins (m, beyond the 2 cm clearance)"
    )
    for r in rows:
        margins = ", ".join(f"{k} {v['where']} {v['margin']:+.3f}" for k, v in r["margin_m"].items())
        print(
            f"{r['robot']:>6} {r['variant']:>12} {r['base_parameters']:>5} {r['random_cond_median']:>14.2f} "
            f"{r['cond']:>10.2f} {str(r['feasible'] and r['collision_free']):>9} {r['time_s']:>7.1f}  {margins}"
        )
    print(
        json.dumps(
            dict(
                benchmark="excitation",
                objective=args.objective,
                seed=args.seed,
                devices=[str(d) for d in jax.devices()],
                rows=rows,
            )
        )
    )


if __name__ == "__main__":
    main()
