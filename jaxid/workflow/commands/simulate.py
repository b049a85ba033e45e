"""``jaxid simulate`` as a library function: [`run_simulate`][jaxid.workflow.commands.simulate.run_simulate]."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxid.arrays import seed_key
from jaxid.workflow import WorkflowError
from jaxid.workflow.commands.common import build_model, check_paths, payload_vector, read_trajectory
from jaxid.workflow.requests import SimulateRequest


@dataclass(frozen=True)
class SimulateOutcome:
    """robot: the nominal model; true_robot: the perturbed one measured; t (N,) s; payload
    10-vector or None; sigma_tau (n,) N m, the torque noise std; tau_rms (n,) N m."""

    request: SimulateRequest
    robot: Any
    true_robot: Any
    t: np.ndarray
    payload: np.ndarray | None
    sigma_tau: np.ndarray
    tau_rms: np.ndarray


def run_simulate(request: SimulateRequest) -> SimulateOutcome:
    """``jaxid simulate``: measure a perturbed robot along a trajectory; writes ``output``,
    ``truth`` and ``true_params``; see [`SimulateRequest`][jaxid.workflow.requests.SimulateRequest]."""
    from jaxid import data, simulation

    r = request
    check_paths(r)
    robot, desc = build_model(r.model, joint_terms=())
    if r.stribeck_vs is not None:
        robot = dataclasses.replace(robot, stribeck_vs=float(r.stribeck_vs))
        desc = {**desc, "stribeck_vs": float(r.stribeck_vs)}
    payload = payload_vector(r.payload)
    noise = _noise(r, robot.n)
    t, q, qd, qdd = read_trajectory(r.trajectory, robot.n, r.rate)
    robot_seed, noise_seed = r.seeds
    m = simulation.simulate(
        robot,
        t,
        q,
        qd,
        qdd,
        seed_key(robot_seed),
        scale=r.scale,
        friction=r.friction,
        payload=payload,
        noise_key=seed_key(noise_seed),
        **noise,
    )
    f0, harmonics = data.read_excitation(r.trajectory)  # the excitation's period carries over
    # The sidecar records the model simulated: 'jaxid identify data.csv' fits it without a flag,
    # and never a model nobody named. With a transmission the files are what the controller logs:
    # the motors' side (noise added on the joints').
    log = (lambda ds: ds) if robot.transmission is None else (lambda ds: data.motor_log(ds, robot.transmission))
    data.write(log(dataclasses.replace(m.data, base_frequency=f0, harmonics=harmonics)), r.output, model=desc)
    if r.truth:
        data.write(log(data.Dataset(m.data.t, m.q, m.tau, m.qd, m.qdd, source="truth")), r.truth, model=desc)
    if r.true_params:
        _write_true_params(r.true_params, desc, m.robot)
    tau_rms = np.sqrt(np.mean(np.asarray(m.tau) ** 2, axis=0))
    return SimulateOutcome(
        r,
        robot,
        m.robot,
        np.asarray(t),
        None if payload is None else np.asarray(payload),
        np.asarray(m.sigma_tau),
        tau_rms,
    )


def _noise(r: SimulateRequest, n: int) -> dict[str, float | np.ndarray | None]:
    """The noise keywords of ``jaxid.simulation.simulate`` for an n-joint robot."""
    noise: dict[str, float | np.ndarray | None] = dict(sigma_q=r.sigma_q, quantization=r.quantization)
    if r.tau_sigma is not None:
        if len(r.tau_sigma) not in (1, n):
            raise WorkflowError(f"--tau-sigma takes one value or {n} (one per joint), got {len(r.tau_sigma)}")
        noise["tau_sigma"] = np.asarray(r.tau_sigma)
    else:
        noise["tau_rel"] = (0.5 if r.tau_noise is None else r.tau_noise) / 100.0
    return noise


def _write_true_params(path, desc: dict, true) -> None:
    """The true robot's model entry, parameter names and values (p,) as JSON to ``path``."""
    from jaxid.atomic import atomic_write

    with atomic_write(path) as f:
        json.dump(
            {
                "model": {**desc, "joint_terms": list(true.joint_terms)},
                "names": list(true.parameter_names()),
                "theta": [float(v) for v in np.asarray(true.parameter_vector())],
            },
            f,
            indent=1,
        )
        f.write("\n")
