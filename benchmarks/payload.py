"""Payload identification on the simulated UR5 (issue 7, item 6) and, as the payload literature
does it, on a heavy arm with the wrist held still (issue 13, item 7).

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
5. The PUMA 560 (``jaxid.models.puma560``), no friction, a 2.5 kg tool (PUMA_PAYLOAD: centre
   of mass (0.01, -0.02, 0.10) m from the flange, which is the wrist centre, a uniform 0.08 x 0.08
   x 0.12 m box). Logs as a current-controlled arm records them, at 200 Hz: t, q (noise SIGMA_Q)
   and motor currents i = tau / (Km G) (noise SIGMA_I = 0.02 A, assumed), read back through
   ``jaxid.workflow.read`` with the gains Km G (the CLI's ``--columns t=t,q=q*,tau=i* --units
   tau=A --gains ...``) and ``workflow.prepare`` with the base frequency (periods averaged,
   derivatives in the frequency domain). The arm is identified first by ``identify_experiment``
   from an unloaded run of all six joints; then, loaded, joints 1-3 follow a 10-period Fourier
   excitation about (0, 0.3, -1.2) rad with the wrist held at PUMA_WRIST, and the payload is
   fitted as ``jaxid payload --params robot.json --joints 1,2,3`` does (``identify_payload``
   with the robot's covariance); the same data on joints 1-6 for comparison.

   Measured (seed 0, ``--scenario puma560``, 40 s on 2 CPU cores; inertia errors and std in %
   of trace/3 = 0.0213 kg m^2 of the true inertia about the flange origin; cond: of the
   column-scaled payload regressor):

     joints, estimate   rank   cond  mass %  com mm     Ixx     Ixy     Iyy     Ixz     Iyz     Izz
     1-3, LS              10   68.1    0.01    7.40    -2.8    25.4    65.8     0.2    48.6     2.8
       (std)                                           15.5    24.4    34.3    16.5    23.5    18.6
     1-3, consistent      10   68.1    0.01    1.01     7.5    -5.9    14.2    15.5    10.2     2.0
     1-6, LS              10   3.09   -0.00    0.03     2.8     1.3     0.2     7.5    -0.4    -4.5
       (std)                                            6.2     4.1     5.9     2.9     4.4     5.4
     1-6, consistent      10   3.09   -0.00    0.03     2.6     1.1     0.7     7.3    -0.4    -4.3

   With the wrist fixed the payload is one rigid body with link 3, and joints 1-3 of this arm
   determine all 10 of its parameters (rank 10: the lower links are known, so nothing folds
   into them) -- but not equally: the singular values of the column-normalised regressor fall
   to 0.015 of the largest (weakest direction mostly myL, mzL, mxL, hence the 7 mm centre of
   mass error), and the inertia is determined only to 15-34 % of trace/3 (one sigma), so its
   LS estimate is not a physical body; the constrained estimate is. The mass is exact to 0.01 %.
   Adding the (static) wrist torques brings the inertia to a few % and the centre of mass to 0.03 mm.
   The robot model is identified, not the truth, but from data of the same frictionless
   rigid-body model (no modelling error): friction and model error of a real arm are left out.

Prints a table and, last, one JSON line. Usage:
  python benchmarks/payload.py [--periods 50] [--smooth 5] [--seed 0] [--no-optimise]
                               [--scenario all|ur5|puma560] [--puma-periods 10]

Its row in benchmarks/README.md lists its last figures; cited by docs/payload.md (the PUMA 560
scenario) and notebook 04.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import warnings

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


def trajectory(rng, robot, fill=0.8, q0=None, moving=None):
    """Random 5-harmonic Fourier coefficients scaled to use at most `fill` of the room from the mean q0
    (random in [-1, 1] rad unless given) to the nearer position limit, and of the velocity and
    acceleration limits. moving: (n,) bool, the joints that move (default all); the others stay at q0."""
    wf = 2 * np.pi * F0
    a, b = rng.uniform(-1, 1, (2, robot.n, HARMONICS))
    q0 = rng.uniform(-1, 1, robot.n) if q0 is None else np.asarray(q0, dtype=float)
    moving = np.ones(robot.n, bool) if moving is None else np.asarray(moving, bool)
    a, b = a * moving[:, None], b * moving[:, None]
    t = np.arange(int(FS / F0)) / FS
    q, qd, qdd = (np.abs(np.asarray(x)).max(0) for x in fourier(a, b, np.zeros(robot.n), wf, t, zero_start=True))
    room = fill * np.minimum(np.asarray(robot.q_max) - q0, q0 - np.asarray(robot.q_min))
    with np.errstate(divide="ignore"):  # a joint held still has zero peaks: no scale needed
        s = np.min([room / q, fill * np.asarray(robot.qd_max) / qd, fill * np.asarray(robot.qdd_max) / qdd], axis=0)
    s = np.where(moving, s, 0.0)
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
    _, q, qd, qdd, tau = P.preprocess(
        t, q, tau, period=period, average=True, smooth=smooth, cutoff=CUTOFF, step=period // PER_PERIOD
    )
    base = base_parameters(model)
    Y = jaxid.regressor(model, q, qd, qdd)
    fit = identify(base.reduce(Y), tau, "wls")
    theta = jnp.zeros(len(model.parameter_names())).at[base.indices].set(fit.theta)
    return theta, base.rank, float(fit.cond)


# ------------------------------------------------------------------ the PUMA 560, wrist held still
PUMA_FS = 200.0  # Hz: current loops log slower than the UR5 runs above; 4000 samples per period
PUMA_WRIST = (0.4, 0.9, -0.6)  # rad: the wrist pose held during the loaded run (generic: no axis aligned)
PUMA_Q0 = (0.0, 0.3, -1.2)  # rad: mean pose of joints 1-3, upper arm near horizontal (large gravity torques)
SIGMA_I = 0.02  # A: motor current noise (assumed); 0.25, 0.43, 0.21 N m at joints 1-3 through Km * G
PUMA_PAYLOAD = dict(m=2.5, com=(0.01, -0.02, 0.10), box=(0.08, 0.08, 0.12))  # a 2.5 kg tool 0.1 m out


def current_log(path, robot, traj, periods, rng):
    """Write a log of one robot run, as a current-controlled arm records it: t, q1..qn (encoder
    noise SIGMA_Q) and motor currents i1..in = tau / (Km G) (noise SIGMA_I, A) at PUMA_FS."""
    from jaxid.model.library import PUMA560_GEAR, PUMA560_KM

    t1 = np.arange(int(PUMA_FS / F0)) / PUMA_FS
    q, qd, qdd = traj(jnp.asarray(t1))
    current = np.tile(np.asarray(jaxid.rnea(robot, q, qd, qdd)) / (PUMA560_KM * PUMA560_GEAR), (periods, 1))
    q = np.tile(np.asarray(q), (periods, 1))
    n = robot.n
    header = ",".join(["t"] + [f"q{j + 1}" for j in range(n)] + [f"i{j + 1}" for j in range(n)])
    table = np.column_stack(
        [
            np.arange(len(q)) / PUMA_FS,
            q + SIGMA_Q * rng.normal(size=q.shape),
            current + SIGMA_I * rng.normal(size=q.shape),
        ]
    )
    np.savetxt(path, table, delimiter=",", header=header, comments="", fmt="%.10g")


def puma_wrist_fixed(periods, seed):
    """The payload literature's scenario: a heavy arm, wrist held still, joints 1-3 excited,
    torques from motor currents. Returns (rows, summary): one row per set of joints used."""
    import os
    import tempfile

    from jaxid import workflow
    from jaxid.model.library import PUMA560_GEAR, PUMA560_KM

    rng = np.random.default_rng(seed)
    robot = jaxid.models.puma560()
    m, c = PUMA_PAYLOAD["m"], jnp.array(PUMA_PAYLOAD["com"])
    theta_L = np.asarray(inertia.from_mass_com_inertia(m, c, inertia.box_inertia(m, PUMA_PAYLOAD["box"])))
    read = dict(columns="t=t,q=q*,tau=i*", units="tau=A", gains=PUMA560_KM * PUMA560_GEAR)
    policy = workflow.Policy(base_frequency=F0)  # what the CLI does with --base-frequency
    with tempfile.TemporaryDirectory() as tmp:
        unloaded, loaded = os.path.join(tmp, "unloaded.csv"), os.path.join(tmp, "loaded.csv")
        # 1. The arm identified first from an unloaded run of all six joints (jaxid identify's path).
        current_log(unloaded, robot, trajectory(rng, robot, q0=(0.0, 0.5, -1.0, 0.0, 0.0, 0.0)), periods, rng)
        prepared = workflow.prepare([workflow.read(unloaded, **read)], robot, policy)
        params = workflow.identify_experiment(robot, prepared)
        # 2. The loaded run: joints 1-3 on a Fourier excitation, the wrist held at PUMA_WRIST.
        moving = np.array([True, True, True, False, False, False])
        traj = trajectory(rng, robot, q0=PUMA_Q0 + PUMA_WRIST, moving=moving)
        current_log(loaded, P.attach_payload(robot, theta_L), traj, periods, rng)
        ds = workflow.prepare([workflow.read(loaded, **read)], robot, policy).datasets[0]  # jaxid payload's path
    rows = []
    for joints in ((0, 1, 2), None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = P.identify_payload(
                robot, params.full(), (ds.q, ds.qd, ds.qdd, ds.tau), joints=joints, robot_cov=params.full_cov()
            )
        # What the data determine: the singular values of the column-normalised payload regressor and the
        # parameters that make up its weakest direction.
        W = np.asarray(P.payload_regressor(robot, ds.q, ds.qd, ds.qdd))[:, list(fit.joints)].reshape(-1, 10)
        sv, vt = np.linalg.svd(W / np.linalg.norm(W, axis=0), full_matrices=False)[1:]
        weakest = [f"{P.PAYLOAD_NAMES[k]} {vt[-1, k]:+.2f}" for k in np.argsort(-np.abs(vt[-1]))[:3]]
        scale = np.r_[np.full(4, np.nan), np.full(6, np.trace(inertia.inertia_matrix(theta_L)) / 3)]
        label = "1-3" if joints is not None else "1-6"
        # The LS estimate, and the constrained one where LS is not a physical body (the fit's theta_consistent).
        for kind, est in (("LS", np.asarray(fit.theta)), ("consistent", np.asarray(fit.theta_consistent))):
            if kind == "consistent" and not fit.failures:
                continue
            rows.append(
                dict(
                    joints=label,
                    estimate=kind,
                    rank=fit.rank,
                    cond=float(fit.fit.cond),
                    identifiable=[n for n, ok in zip(P.PAYLOAD_NAMES, np.asarray(fit.identifiable)) if ok],
                    base_names=list(fit.base.names),
                    base_estimate=np.asarray(fit.theta_base).tolist(),
                    base_truth=np.asarray(fit.base.to_base(theta_L)).tolist(),
                    base_std=np.asarray(fit.std_base).tolist(),
                    theta=est.tolist(),
                    mass_error_pct=float(100 * (est[0] - m) / m),
                    com_error_mm=float(1e3 * np.linalg.norm(est[1:4] / est[0] - theta_L[1:4] / m)),
                    inertia_error_pct_of_trace3=(100 * (est[4:] - theta_L[4:]) / scale[4:]).tolist(),
                    inertia_std_pct_of_trace3=(100 * np.asarray(fit.std)[4:] / scale[4:]).tolist(),
                    singular_values=(sv / sv[0]).tolist(),
                    weakest=weakest,
                    verdict=fit.verdict(),
                    warnings=[str(w.message) for w in caught],
                )
            )
    summary = dict(
        truth=theta_L.tolist(),
        periods=periods,
        fs=PUMA_FS,
        samples=len(ds),
        sigma_i=SIGMA_I,
        robot_base_rank=int(params.base.rank),
        robot_choices=prepared.describe(),
        trace3=float(scale[4]),
    )
    return rows, summary


def print_puma(rows, summary):
    print(
        f"PUMA 560 + {PUMA_PAYLOAD['m']} kg payload, wrist held at {PUMA_WRIST} rad, joints 1-3 excited; "
        f"{summary['periods']} periods of {1 / F0:.0f} s at {PUMA_FS:.0f} Hz, currents (noise {SIGMA_I} A) "
        f"times Km G; robot: {summary['robot_base_rank']} base parameters by WLS from an unloaded run"
    )
    print(
        f"  data: {summary['samples']} samples after the periodic path; inertia errors in % of trace/3 = "
        f"{summary['trace3']:.3g} kg m^2"
    )
    names = [n[:-1] for n in P.PAYLOAD_NAMES[4:]]
    print(
        f"  {'joints, estimate':<18}{'rank':>5}{'cond':>7}{'mass %':>8}{'com mm':>8}"
        + "".join(f"{n:>8}" for n in names)
    )
    fmt = lambda v, w, d=2: f"{v:{w}.{d}f}" if np.isfinite(v) else f"{'-':>{w}}"
    for r in rows:
        print(
            f"  {r['joints'] + ', ' + r['estimate']:<18}{r['rank']:>5}{r['cond']:7.3g}{fmt(r['mass_error_pct'], 8)}"
            f"{fmt(r['com_error_mm'], 8)}" + "".join(fmt(e, 8, 1) for e in r["inertia_error_pct_of_trace3"])
        )
        if r["estimate"] == "LS":
            print(f"  {'  (std)':<18}{'':>20}{'':>8}" + "".join(fmt(e, 8, 1) for e in r["inertia_std_pct_of_trace3"]))
    for r in rows:
        if r["estimate"] != "LS":
            continue
        print(f"  joints {r['joints']}: identified alone: {', '.join(r['identifiable']) or 'none'}; {r['verdict']}")
        print(
            "    singular values of the column-normalised regressor / largest: "
            + " ".join(f"{v:.2g}" for v in r["singular_values"])
            + "; weakest direction: "
            + ", ".join(r["weakest"])
        )
        if r["rank"] < 10:
            print("    base combinations (estimate / truth / std):")
            for n, e, t, sd in zip(r["base_names"], r["base_estimate"], r["base_truth"], r["base_std"]):
                print(f"      {n:<40}{e:12.5g}{t:12.5g}{sd:11.2g}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--periods", type=int, default=50, help="excitation periods per run (default 50)")
    parser.add_argument("--smooth", type=int, default=5, help="five-point cubic passes (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-optimise", dest="optimise", action="store_false", help="skip the payload excitation optimisation (item 4)"
    )
    parser.add_argument(
        "--scenario",
        choices=("all", "ur5", "puma560"),
        default="all",
        help="ur5: items 1-4 above; puma560: item 5, the wrist held still (default all)",
    )
    parser.add_argument("--puma-periods", type=int, default=10, help="excitation periods of the PUMA runs (default 10)")
    args = parser.parse_args(argv)
    t_start = time.perf_counter()
    puma = None
    if args.scenario in ("all", "puma560"):
        puma = puma_wrist_fixed(args.puma_periods, args.seed)
        print_puma(*puma)
        if args.scenario == "puma560":
            print(
                json.dumps(
                    dict(puma560=dict(rows=puma[0], **puma[1]), seed=args.seed, seconds=time.perf_counter() - t_start)
                )
            )
            return
    rng = np.random.default_rng(args.seed)
    truth = jaxid.models.ur5(joint_terms=("fv", "fc"), joint_params=FRICTION)
    theta_L = payload_truth()
    loaded = P.attach_payload(truth, theta_L)
    period, step = int(FS / F0), int(FS / F0) // PER_PERIOD

    theta_robot, rank, cond = identify_robot(
        truth, *measure(truth, trajectory(rng, truth), args.periods, rng)[:3], args.smooth
    )
    tv = np.arange(period)[::step] / FS
    qv, qdv, qddv = trajectory(rng, truth)(jnp.asarray(tv))
    tau_v = np.asarray(jaxid.rnea(loaded, qv, qdv, qddv)) + SIGMA_TAU * rng.normal(size=(len(tv), 6))
    tau_v_robot = np.asarray(jaxid.rnea(truth.with_parameters(theta_robot), qv, qdv, qddv))

    traj = trajectory(rng, truth)
    runs = {
        "": (
            traj,
            {
                "raw": dict(period=period),
                "avg+smooth": dict(period=period, average=True, smooth=args.smooth),
                "avg+smooth+analytic": dict(period=period, average=True, smooth=args.smooth, commanded=traj),
            },
        )
    }
    excitation = None
    if args.optimise:
        # Item 4: the excitation optimiser with the payload regressor in place of the robot's.
        excitation = optimize(
            truth,
            harmonics=HARMONICS,
            base_frequency=F0,
            n_starts=4,
            steps=200,
            progress=False,
            regressor_fn=functools.partial(P.payload_regressor, truth),
            seed=args.seed,
        )
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
                    theta=est.tolist(),
                    std=np.asarray(fit.std).tolist(),
                    rank=fit.rank,
                    identifiable=np.asarray(fit.identifiable).tolist(),
                    cond=float(fit.fit.cond),
                    rel_error_pct=(100 * (est - theta_L) / np.abs(theta_L)).tolist(),
                    mass_error_pct=float(100 * (est[0] - theta_L[0]) / theta_L[0]),
                    com_error_mm=float(1e3 * np.linalg.norm(est[1:4] / est[0] - theta_L[1:4] / theta_L[0])),
                    validation_rms_over_noise=(rms / SIGMA_TAU).tolist(),
                    consistent=not fit.failures,
                    samples=int(data[0].shape[0]),
                )
                rows.append((key, results[key]))

    names = [n[:-1] for n in P.PAYLOAD_NAMES]
    print(
        f"UR5 + {PAYLOAD['m']} kg payload; {args.periods} periods of {1 / F0:.0f} s at {FS:.0f} Hz, "
        f"{PER_PERIOD} samples/period kept; robot model: {rank} base parameters by WLS from an unloaded "
        f"run (cond {cond:.3g}); smoothing k = {args.smooth}"
    )
    if excitation is not None:
        ex = excitation.summary()
        print(
            f"payload excitation: cond of the column-normalised payload regressor {ex['cond']:.3g} optimised vs "
            f"{ex['random_cond_median']:.3g} median of the random starts ({ex['time_s']:.0f} s)"
        )
    print("relative error of each payload parameter, %:")
    print(f"{'variant':<32}" + "".join(f"{n:>8}" for n in names) + f"{'com mm':>8}{'cond':>7}")
    for key, r in rows:
        print(
            f"{key:<32}" + "".join(f"{e:8.2f}" for e in r["rel_error_pct"]) + f"{r['com_error_mm']:8.2f}"
            f"{r['cond']:7.1f}"
        )
    print("inertia error and (std), 1e-4 kg m^2 (true " + ", ".join(f"{v * 1e4:.3g}" for v in theta_L[4:]) + "):")
    for key, r in rows:
        err = 1e4 * (np.asarray(r["theta"][4:]) - theta_L[4:])
        print(f"{key:<32}" + "".join(f"{e:7.2f}({s:5.2f})" for e, s in zip(err, 1e4 * np.asarray(r["std"][4:]))))
    print("validation torque RMS / noise floor, per joint:")
    for key, r in rows:
        print(
            f"{key:<32}"
            + "".join(f"{v:8.3f}" for v in r["validation_rms_over_noise"])
            + ("" if r["consistent"] else "   (LS estimate not physically consistent)")
        )
    print(
        json.dumps(
            dict(
                truth=theta_L.tolist(),
                names=list(P.PAYLOAD_NAMES),
                periods=args.periods,
                smooth=args.smooth,
                seed=args.seed,
                robot_base_rank=rank,
                robot_cond=cond,
                sigma_tau=SIGMA_TAU.tolist(),
                sigma_q=SIGMA_Q,
                results=results,
                excitation=None if excitation is None else excitation.summary(),
                puma560=None if puma is None else dict(rows=puma[0], **puma[1]),
                seconds=time.perf_counter() - t_start,
            )
        )
    )


if __name__ == "__main__":
    main()
