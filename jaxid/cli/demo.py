"""`jaxid demo`: the main job on built-in defaults."""
from __future__ import annotations

import numpy as np


def register(sub):
    p = sub.add_parser("demo", help="run the main job on built-in defaults (UR5, simulated)",
                       description="Run the main job on built-in defaults.\n\nexample: jaxid demo")
    p.set_defaults(func=run)


def run(args) -> int:
    import jaxid

    robot = jaxid.models.ur5()
    print(robot)
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.normal(size=(3, 6))
    tau = jaxid.rnea(robot, q, qd, qdd)
    Y = jaxid.regressor(robot, q, qd, qdd)
    print("q   =", np.round(q, 3))
    print("tau =", np.round(np.asarray(tau), 4), "N m")
    err = float(np.max(np.abs(np.asarray(Y @ robot.parameter_vector() - tau))))
    print(f"regressor check: max |Y theta - rnea| = {err:.2e}")
    return 0
