"""Payload identification on the simulated UR5 (issue 7, item 6).

Truth: the UR5 with viscous and Coulomb joint friction; payload 5 kg, centre of mass
(0.02, -0.01, 0.08) m in the flange frame, inertia of a uniform 0.1 x 0.1 x 0.15 m box.
Measurements: 5-harmonic Fourier trajectories at 0.05 Hz sampled at 1 kHz; torques
from inverse dynamics of the commanded motion plus white noise (std SIGMA_TAU), positions
with encoder noise (std SIGMA_Q). Each record is sub-sampled to 2000 samples per period.

1. The robot model is identified first, from an unloaded run (its own random
   trajectory): base parameters (``jaxid.identification.base``) by two-step WLS, after
   period averaging and smoothing (Butterworth cutoff 2.5 Hz, 10x the top harmonic). The payload fits subtract its prediction, never the
   true parameters.
2. The loaded run is identified with three preprocessings -- "raw" (every period,
   Butterworth-differentiated positions, no smoothing), "avg+smooth" (periods averaged,
   five-point cubic k times) and "avg+smooth+analytic" (derivatives from the commanded
   Fourier series) -- on all joints and on joints 1-3 only.
3. Item 4: a Fourier trajectory optimised for the conditioning of the payload regressor
   (``jaxid.excitation.optimize`` with ``regressor_fn=payload_regressor``), identified
   with averaging and smoothing (skip with --no-optimise).
4. Validation: one period of another trajectory with the payload; the torque RMS of
   measured minus predicted (identified robot + identified payload), relative to the
   noise floor SIGMA_TAU (1.0 = perfect model).

Prints a table and, last, one JSON line. Usage:
  python benchmarks/payload.py [--periods 50] [--smooth 5] [--seed 0] [--no-optimise]
"""
from __future__ import annotations

import argparse
import functools
import json
import time

import jax.numpy as jnp
import numpy as np

import jaxid
from jaxid.excitation import fourier
from jaxid.excitation.optimize import optimize
from jaxid.identification import payload as P
from jaxid.identification.base import base_parameters
from jaxid.identification.estimators import identify
from jaxid.model import inertia

F0, HARMONICS, FS, PER_PERIOD = 0.05, 5, 1000.0, 2000
SIGMA_TAU = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.1])  # N m
SIGMA_Q = 1e-5  # rad, about 19-bit encoders
CUTOFF = 10 * HARMONICS * F0  # Hz: Butterworth cutoff for differentiation, 10x the top harmonic
FRICTION = np.array([[2.0, 3.0], [2.0, 3.0], [1.5, 2.0], [0.5, 1.0], [0.5, 1.0], [0.5, 1.0]])  # fv, fc
PAYLOAD = dict(m=5.0, com=(0.02, -0.01, 0.08), box=(0.1, 0.1, 0.15))


def payload_truth():
    m, c = PAYLOAD["m"], jnp.array(PAYLOAD["com"])
    return np.asarray(inertia.from_mass_com_inertia(m, c, inertia.box_inertia(m, PAYLOAD["box"])))


def trajectory(rng, robot, fill=0.8):
    """Random 5-harmonic Fourier coefficients scaled to use at most `fill` of the position range
    (about the mean q0), velocity and acceleration limits."""
    wf = 2 * np.pi * F0
    a, b = rng.uniform(-1, 1, (2, robot.n, HARMONICS))
    q0 = rng.uniform(-1, 1, robot.n)
    t = np.arange(int(FS / F0)) / FS
    q, qd, qdd = (np.abs(np.asarray(x)).max(0) for x in fourier(a, b, np.zeros(robot.n), wf, t, zero_start=True))
    room = fill * 0.5 * (np.asarray(robot.q_max) - np.asarray(robot.q_min)) - np.abs(q0)
    s = np.min([room / q, fill * np.asarray(robot.qd_max) / qd, fill * np.asarray(robot.qdd_max) / qdd], axis=0)
    return functools.partial(fourier, a * s[:, None], b * s[:, None], q0, wf, zero_start=True)


def measure(robot, traj, periods, rng):
    """t (N,), noisy q (N, n), noisy tau (N, n) over whole periods at FS."""
    t1 = np.arange(int(FS / F0)) / FS
    q, qd, qdd = traj(jnp.asarray(t1))
    tau = np.tile(np.asarray(jaxid.rnea(robot, q, qd, qdd)), (periods, 1))  # exactly periodic
    q = np.tile(np.asarray(q), (periods, 1))
    t = np.arange(len(q)) / FS
    return t, q + SIGMA_Q * rng.normal(size=q.shape), tau + SIGMA_TAU * rng.normal(size=tau.shape)


def identify_robot(model, t, q, tau, smooth):
    """Base parameters of the unloaded robot by two-step WLS; returned as a full vector (dependent = 0)."""
    period = int(FS / F0)
    _, q, qd, qdd, tau = P.preprocess(t, q, tau, period=period, average=True, smooth=smooth, cutoff=CUTOFF,
                                      step=period // PER_PERIOD)
    base = base_parameters(model)
    Y = jaxid.regressor(model, q, qd, qdd)
    fit = identify(base.reduce(Y), tau, "wls")
    theta = jnp.zeros(len(model.parameter_names())).at[base.indices].set(fit.theta)
    return theta, base.rank, float(fit.cond)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--periods", type=int, default=50, help="excitation periods per run (default 50)")
    parser.add_argument("--smooth", type=int, default=5, help="five-point cubic passes (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-optimise", dest="optimise", action="store_false",
                        help="skip the payload excitation optimisation (item 4)")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    truth = jaxid.models.ur5(joint_terms=("fv", "fc"), joint_params=FRICTION)
    theta_L = payload_truth()
    loaded = P.attach_payload(truth, theta_L)
    period, step = int(FS / F0), int(FS / F0) // PER_PERIOD

    theta_robot, rank, cond = identify_robot(truth, *measure(truth, trajectory(rng, truth), args.periods, rng)[:3],
                                             args.smooth)
    tv = np.arange(period)[::step] / FS
    qv, qdv, qddv = trajectory(rng, truth)(jnp.asarray(tv))
    tau_v = np.asarray(jaxid.rnea(loaded, qv, qdv, qddv)) + SIGMA_TAU * rng.normal(size=(len(tv), 6))
    tau_v_robot = np.asarray(jaxid.rnea(truth.with_parameters(theta_robot), qv, qdv, qddv))

    traj = trajectory(rng, truth)
    runs = {"": (traj, {
        "raw": dict(period=period),
        "avg+smooth": dict(period=period, average=True, smooth=args.smooth),
        "avg+smooth+analytic": dict(period=period, average=True, smooth=args.smooth, commanded=traj),
    })}
    excitation = None
    if args.optimise:
        # Item 4: the excitation optimiser with the payload regressor in place of the robot's.
        excitation = optimize(truth, harmonics=HARMONICS, base_frequency=F0, n_starts=4, steps=200, progress=False,
                              regressor_fn=functools.partial(P.payload_regressor, truth), seed=args.seed)
        runs["optimised "] = (excitation.sample, {"avg+smooth": dict(period=period, average=True, smooth=args.smooth)})
    rows, results = [], {}
    for prefix, (traj, variants) in runs.items():
        t, q, tau = measure(loaded, traj, args.periods, rng)
        for label, opts in variants.items():
            data = P.preprocess(t, q, tau, step=step, cutoff=CUTOFF, **opts)[1:]
            for joints in (None, (0, 1, 2)):
                fit = P.identify_payload(truth, theta_robot, data, joints=joints)
                est = np.asarray(fit.theta)
                pred = tau_v_robot + np.asarray(P.payload_torque(truth, np.nan_to_num(est), qv, qdv, qddv))
                rms = np.sqrt(np.mean((tau_v - pred) ** 2, axis=0))
                key = f"{prefix}{label} joints {'1-6' if joints is None else '1-3'}"
                results[key] = dict(
                    theta=est.tolist(), std=np.asarray(fit.std).tolist(), rank=fit.rank,
                    identifiable=np.asarray(fit.identifiable).tolist(), cond=float(fit.fit.cond),
                    rel_error_pct=(100 * (est - theta_L) / np.abs(theta_L)).tolist(),
                    mass_error_pct=float(100 * (est[0] - theta_L[0]) / theta_L[0]),
                    com_error_mm=float(1e3 * np.linalg.norm(est[1:4] / est[0] - theta_L[1:4] / theta_L[0])),
                    validation_rms_over_noise=(rms / SIGMA_TAU).tolist(), consistent=not fit.failures,
                    samples=int(data[0].shape[0]))
                rows.append((key, results[key]))

    names = [n[:-1] for n in P.PAYLOAD_NAMES]
    print(f"UR5 + {PAYLOAD['m']} kg payload; {args.periods} periods of {1 / F0:.0f} s at {FS:.0f} Hz, "
          f"{PER_PERIOD} samples/period kept; robot model: {rank} base parameters by WLS from an unloaded "
          f"run (cond {cond:.3g}); smoothing k = {args.smooth}")
    if excitation is not None:
        ex = excitation.summary()
        print(f"payload excitation: cond of the column-normalised payload regressor {ex['cond']:.3g} optimised vs "
              f"{ex['random_cond_median']:.3g} median of the random starts ({ex['time_s']:.0f} s)")
    print("relative error of each payload parameter, %:")
    print(f"{'variant':<32}" + "".join(f"{n:>8}" for n in names) + f"{'com mm':>8}{'cond':>7}")
    for key, r in rows:
        print(f"{key:<32}" + "".join(f"{e:8.2f}" for e in r["rel_error_pct"]) + f"{r['com_error_mm']:8.2f}"
              f"{r['cond']:7.1f}")
    print("inertia error and (std), 1e-4 kg m^2 (true " + ", ".join(f"{v * 1e4:.3g}" for v in theta_L[4:]) + "):")
    for key, r in rows:
        err = 1e4 * (np.asarray(r["theta"][4:]) - theta_L[4:])
        print(f"{key:<32}" + "".join(f"{e:7.2f}({s:5.2f})" for e, s in zip(err, 1e4 * np.asarray(r["std"][4:]))))
    print("validation torque RMS / noise floor, per joint:")
    for key, r in rows:
        print(f"{key:<32}" + "".join(f"{v:8.3f}" for v in r["validation_rms_over_noise"])
              + ("" if r["consistent"] else "   (LS estimate not physically consistent)"))
    print(json.dumps(dict(truth=theta_L.tolist(), names=list(P.PAYLOAD_NAMES), periods=args.periods,
                          smooth=args.smooth, seed=args.seed, robot_base_rank=rank, robot_cond=cond,
                          sigma_tau=SIGMA_TAU.tolist(), sigma_q=SIGMA_Q, results=results,
                          excitation=None if excitation is None else excitation.summary(),
                          seconds=time.perf_counter() - t_start)))


if __name__ == "__main__":
    main()
