"""Periodic vs filtered derivatives: base-parameter error of a simulated arm on a Fourier
excitation (noisy q, tau only), with the default Butterworth path, the periodic path
(``jaxid.signals.periodic_derivatives``, chosen automatically by ``workflow.prepare`` when the
base frequency is known) and the true derivatives on the same record.

    python benchmarks/periodic.py [--robot planar2] [--periods 4] [--sigma-q 1e-3] [--seeds 3]

Prints, per noise seed and path, the median and the largest error of the base parameters
relative to the truth, |theta - theta_true| / max(|theta_true|, scale) (scale: the parameter
norm / sqrt(p)), and z, the largest |theta - theta_true| / std (how honest the printed std is).
Paths: the default (Butterworth at the cutoff from the spectrum), the same with parallel
filtering of W and tau, Butterworth at 3 x the known excitation band (``--no-periodic`` on a
file with the sidecar), the periodic path (base frequency known), and the true qd, qdd on the
averaged period (the floor set by the torque noise).
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import numpy as np

from jaxid import workflow
from jaxid.excitation import fourier
from jaxid.simulation import simulate


def excitation(n, harmonics=5, f0=0.2, fs=100.0, periods=4, seed=0, amplitude=1.5):
    """A zero-start Fourier excitation sampled over whole periods and the closing sample."""
    rng = np.random.default_rng(seed)
    a, b = amplitude * rng.standard_normal((2, n, harmonics)) / np.sqrt(harmonics)
    P = int(round(fs / f0))
    t = np.arange(periods * P + 1) / fs
    q, qd, qdd = fourier(a, b, np.zeros(n), 2 * np.pi * f0, t, zero_start=True)
    return t, np.asarray(q), np.asarray(qd), np.asarray(qdd)


def errors(robot, desc, prepared, theta_true):
    """(median, max) relative error and max z of the base parameters identified from prepared."""
    params = workflow.identify_experiment(robot, prepared, description=desc)
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    base_true = np.asarray(params.base.to_base(theta_true))
    scale = np.linalg.norm(base_true) / np.sqrt(base_true.size)
    rel = np.abs(theta - base_true) / np.maximum(np.abs(base_true), scale)
    return np.median(rel), rel.max(), np.max(np.abs(theta - base_true) / std)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", default="planar2")
    p.add_argument("--periods", type=int, default=4)
    p.add_argument("--f0", type=float, default=0.2)
    p.add_argument("--harmonics", type=int, default=5)
    p.add_argument("--sigma-q", type=float, default=1e-3)
    p.add_argument("--seeds", type=int, default=3)
    a = p.parse_args()
    robot, desc = workflow.model(builtin=a.robot, joint_terms=("fv", "fc", "offset"))
    t, q, qd, qdd = excitation(robot.n, a.harmonics, a.f0, periods=a.periods)
    print(
        f"{a.robot}: {a.periods} periods of {a.f0:g} Hz, {a.harmonics} harmonics, {len(t)} samples at 100 Hz, "
        f"sigma_q {a.sigma_q:g} rad; relative base-parameter errors, z = max |error| / std"
    )
    paths = ("butterworth", "+ parallel filter", "butterworth, band known", "periodic", "true qd, qdd")
    print(f"{'seed':>4}  " + "  ".join(f"{p:>27}" for p in paths) + "   (median / max %, z)")
    for seed in range(a.seeds):
        m = simulate(
            robot.with_joint_terms(()),
            t,
            q,
            qd,
            qdd,
            jax.random.PRNGKey(seed),
            noise_key=jax.random.PRNGKey(100 + seed),
            sigma_q=a.sigma_q,
        )
        theta_true = np.asarray(m.robot.parameter_vector())
        known = dataclasses.replace(m.data, base_frequency=a.f0, harmonics=a.harmonics)
        periodic = workflow.prepare(known, robot)
        P = len(periodic.datasets[0])
        true = workflow.Prepared(
            (dataclasses.replace(periodic.datasets[0], q=m.q[:P], qd=m.qd[:P], qdd=m.qdd[:P]),), periodic.choices
        )
        row = []
        for prepared in (
            workflow.prepare(m.data, robot),
            workflow.prepare(m.data, robot, workflow.Policy(parallel=True)),
            workflow.prepare(known, robot, workflow.Policy(periodic=False)),
            periodic,
            true,
        ):
            med, mx, z = errors(robot, desc, prepared, theta_true)
            row.append(f"{100 * med:6.2f} /{100 * mx:7.2f} % z {z:5.1f}")
        print(f"{seed:>4}  " + "  ".join(f"{r:>27}" for r in row))
        if seed == 0:
            print("      " + workflow.prepare(known, robot).describe()[0])


if __name__ == "__main__":
    main()
