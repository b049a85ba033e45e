"""Agreement with Pinocchio on URDFs of example-robot-data: chains, trees, coupled joints.

For each file: ``Robot.from_urdf`` (mimic joints independent, as Pinocchio's default
reading) against ``pinocchio.buildModelFromUrdf``, at random states: relative errors
max|a - b| / max|b| of rnea, the mass matrix and the regressor; for files with mimic joints
also the coupled reading (``mimic=True``) for rnea and M. Pinocchio's continuous joints
(configuration (cos q, sin q)) are fed the same angle. Prints JSON, then a table.

    python benchmarks/pinocchio_agreement.py [--states 3] [--only panda,tiago]

Measured (3 states each): ur5, ur10, ur3_gripper, panda (9 joints, tree; coupled: 8),
xarm7, z1, so101, double_pendulum_continuous, talos_left_arm (and coupled), baxter (19
joints, tree; coupled: 17), allegro_right_hand (16, tree), tiago (48, tree): every relative
error of rnea, M and the regressor below 3e-15.

Its row in benchmarks/README.md lists its last figures; cited by the CHANGELOG.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import jaxid

URDFS = [
    "ur_description/urdf/ur5_robot.urdf",
    "ur_description/urdf/ur10_robot.urdf",
    "ur_description/urdf/ur3_gripper.urdf",
    "panda_description/urdf/panda.urdf",
    "xarm_description/urdf/xarm7.urdf",
    "z1_description/urdf/z1.urdf",
    "so_arm_description/urdf/so101.urdf",
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "talos_data/robots/talos_left_arm.urdf",
    "allegro_hand_description/urdf/allegro_right_hand.urdf",
    "baxter_description/urdf/baxter.urdf",
    "tiago_description/robots/tiago.urdf",
]


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / max(np.max(np.abs(b)), 1e-300))


def config(model, q):
    """Pinocchio's configuration of joint angles q (continuous joints: cos, sin; mimic: none)."""
    moving = [j for j in model.joints[1:] if j.nq > 0]
    return np.concatenate([[np.cos(x), np.sin(x)] if j.nq == 2 else [x] for x, j in zip(q, moving)])


def compare(path, states, coupled, rng):
    import pinocchio as pin

    robot = jaxid.Robot.from_urdf(path, mimic="coupled" if coupled else "independent", check_inertia=False)
    model = pin.buildModelFromUrdf(path, mimic=coupled) if coupled else pin.buildModelFromUrdf(path)
    data = model.createData()
    # Pinocchio numbers the joints in its own depth-first order; jaxid in document order.
    pin_joints = [model.names[i] for i in range(1, model.njoints)]
    order = [robot.coordinate_names.index(model.names[i]) for i in range(1, model.njoints) if model.joints[i].nq > 0]
    columns = np.concatenate([10 * robot.names.index(name) + np.arange(10) for name in pin_joints])
    err = {"rnea": 0.0, "M": 0.0, "Y": None if coupled else 0.0}
    for _ in range(states):
        q, qd, qdd = rng.normal(size=(3, robot.n))
        c = config(model, q[order])
        tau = pin.rnea(model, data, c, qd[order], qdd[order])
        err["rnea"] = max(err["rnea"], relative(np.asarray(jaxid.rnea(robot, q, qd, qdd))[order], tau))
        M = pin.crba(model, data, c)
        err["M"] = max(
            err["M"],
            relative(np.asarray(jaxid.mass_matrix(robot, q))[np.ix_(order, order)], np.triu(M) + np.triu(M, 1).T),
        )
        if not coupled:
            Y = pin.computeJointTorqueRegressor(model, data, c, qd[order], qdd[order])
            err["Y"] = max(err["Y"], relative(np.asarray(jaxid.regressor(robot, q, qd, qdd))[order][:, columns], Y))
    return robot, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--states", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated substrings: check only the URDFs that contain one")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for rel in URDFS:
        if args.only and not any(k in rel for k in args.only.split(",")):
            continue
        try:
            path = jaxid.models.example_robot_urdf(rel)
        except FileNotFoundError:
            continue
        has_mimic = "<mimic" in open(path).read()
        for coupled in (False, True) if has_mimic else (False,):
            t0 = time.perf_counter()
            try:
                robot, err = compare(path, args.states, coupled, rng)
            except Exception as e:  # a file the reader refuses, or a disagreement in shape: a row, not a stop
                rows.append({"urdf": rel, "coupled": coupled, "error": str(e).splitlines()[0]})
                continue
            rows.append(
                {
                    "urdf": rel,
                    "coupled": coupled,
                    "joints": robot.n_joints,
                    "coordinates": robot.n,
                    "tree": any(robot.parents.count(i) > 1 for i in range(-1, robot.n_joints)),
                    **err,
                    "seconds": time.perf_counter() - t0,
                }
            )
    print(json.dumps(rows, indent=1))
    print(f"\n{'URDF':<62} {'coupled':>7} {'n':>3} {'tree':>5} {'rnea':>9} {'M':>9} {'Y':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['urdf']:<62} {str(r['coupled']):>7}  error: {r['error']}")
            continue
        y = "-" if r["Y"] is None else f"{r['Y']:.1e}"
        print(
            f"{r['urdf']:<62} {str(r['coupled']):>7} {r['coordinates']:>3} {str(r['tree']):>5} "
            f"{r['rnea']:9.1e} {r['M']:9.1e} {y:>9}"
        )


if __name__ == "__main__":
    main()
