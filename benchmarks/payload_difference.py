"""Payload from the difference of a loaded and an unloaded run of the same trajectory (the payload
literature's way, ../shared/seeds/004) against the default (robot identified unloaded, payload fitted
to tau minus the robot model), on a short q-only UR5 experiment.

Each seed: a 5-harmonic Fourier excitation (3 periods of 0.2 Hz at 100 Hz, from
``benchmarks/coverage.py``), a perturbed true UR5 with viscous and Coulomb friction and offsets,
q-only files (sigma_q 1e-4 rad, torque noise 0.5 % of range); payload 5 kg, centre of mass (0.02,
-0.01, 0.08) m, a uniform 0.1 x 0.1 x 0.15 m box. Both runs are differentiated with the cutoff
chosen on the unloaded run. "difference": ``identify_payload`` of the model without joint terms at
zero parameters (its torque is zero) on tau_loaded - tau_unloaded at the loaded run's motion: the
robot's own torque, friction included, cancels instead of being predicted. ``jaxid payload`` has no
such mode (it subtracts the model of ``--params``).

Measured (inertia about the flange origin, worst entry in % of trace/3; LS = consistent here):

    seed  cutoff Hz  default: mass %  com mm  inertia %   difference: mass %  com mm  inertia %
    0     4.2               -0.028    0.04      8.4                   -0.030    0.06      3.0
    1     4.4               -0.022    0.04      2.3                   -0.004    0.10      1.8
    2     4.4                0.039    0.07      1.3                    0.014    0.12      1.9

The robot is identified on the same trajectory here, so part of its error cancels in the default
too; the issue's case (43 % inertia error) is not reproduced by this setup.

    python benchmarks/payload_difference.py
"""

from __future__ import annotations

import pathlib
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from coverage import excitation  # noqa: E402

from jaxid import simulation, workflow  # noqa: E402
from jaxid.identification import payload as P  # noqa: E402
from jaxid.identification.base import lift  # noqa: E402

PAYLOAD = np.asarray(simulation.payload_vector(5.0, (0.02, -0.01, 0.08), box=(0.1, 0.1, 0.15)))


def inertia(v):
    """The 3 x 3 inertia about the flange origin of a payload 10-vector."""
    return np.array([[v[4], v[5], v[7]], [v[5], v[6], v[8]], [v[7], v[8], v[9]]])


def errors(theta):
    """mass error %, centre-of-mass error mm, worst inertia entry error % of trace/3."""
    scale = np.trace(inertia(PAYLOAD)) / 3
    return (
        100 * (theta[0] / PAYLOAD[0] - 1),
        1000 * np.linalg.norm(theta[1:4] / theta[0] - PAYLOAD[1:4] / PAYLOAD[0]),
        100 * np.abs(inertia(theta) - inertia(PAYLOAD)).max() / scale,
    )


def main(seeds=(0, 1, 2)):
    warnings.simplefilter("ignore")
    robot, desc = workflow.model(builtin="ur5", joint_terms=("fv", "fc", "offset"))
    rigid = robot.with_joint_terms(())
    print("seed  cutoff Hz  default: mass %  com mm  inertia %   difference: mass %  com mm  inertia %")
    for seed in seeds:
        ref = excitation(robot.n, 5, 0.2, 3, seed, amplitude=0.8)
        unloaded = simulation.simulate(
            rigid, *ref, jax.random.PRNGKey(seed), noise_key=jax.random.PRNGKey(100 + seed), sigma_q=1e-4
        )
        loaded = simulation.measure(
            unloaded.robot, *ref, jax.random.split(jax.random.PRNGKey(200 + seed))[1], sigma_q=1e-4, payload=PAYLOAD
        )
        prepared = workflow.prepare(unloaded.data, robot)
        params = workflow.identify_experiment(robot, prepared, description=desc)
        theta = lift(params.base, params.theta, jnp.zeros(len(robot.parameter_names())))
        policy = workflow.Policy(cutoff=prepared.choices[0]["cutoff_hz"])
        dl, du = (workflow.prepare(m.data, robot, policy).datasets[0] for m in (loaded, unloaded))
        default = P.identify_payload(robot, theta, dl)
        diff = P.identify_payload(
            rigid,
            jnp.zeros(len(rigid.parameter_names())),
            (dl.q, dl.qd, dl.qdd, np.asarray(dl.tau) - np.asarray(du.tau)),
        )
        a, b = errors(np.asarray(default.theta)), errors(np.asarray(diff.theta))
        print(
            f"{seed:<6}{policy.cutoff:<11.2g}"
            + "".join(f"{x:>{w}.{d}f}" for x, w, d in zip(a, (15, 8, 11), (3, 2, 1)))
            + "".join(f"{x:>{w}.{d}f}" for x, w, d in zip(b, (21, 8, 11), (3, 2, 1))),
            flush=True,
        )


if __name__ == "__main__":
    main()
