"""What makes link 7 of the KUKA LWR4+ look like a negative inertia (issue 20): a joint spring.

The three runs of ``examples/data/kuka_lwr4`` move every joint along one sine, runs 1 and 2 at
about 0.5 rad/s, run 3 at about twice that. On one frequency w, ``q = q_mean - qdd / w^2``: a
torque proportional to the position (a spring, cables twisting) is indistinguishable from an
inertia ``-ks / w^2`` and predicts the wrong torque at another speed. This script prints the
evidence, from least squares alone (two-step WLS, base parameters, the model's gravity):

1. Per run, the joint-7 parameters without and with the joint stiffness term ``ks``
   (``jaxid.friction.models.JOINT_BASIS``), and each run's joint-7 frequency w. Without ks,
   Izz7 and fv7 are strongly negative (no body or friction is) and change with the speed;
   with ks, Izz7 is near zero, fv7 is positive, and ks7 is nearly the same at both speeds.
2. Hypotheses, by the held-out NRMS of WLS (identify on two runs, validate on the third,
   gravity direction fitted on the training runs) and by Schwarz's criterion (BIC) of the
   training fit: a per-joint column added to fv, fc, offset for each of: a joint spring
   (``ks``: q), load-dependent friction (|tau_rigid| sign(qd), tau_rigid from the CAD
   model), velocity-squared friction (qd |qd|).
3. A delay of the torque signal: joint 7's training residual when its measured torque is
   shifted by d (cubic interpolation; a lag d of a viscous torque reads as -fv d qdd).

Measured (2 cores shared, load average 5-6; 66 s):

    run  w rad/s   no ks: Izz7      fv7      fc7  | ks: Izz7      fv7      fc7      ks7 N m/rad
    1    0.500         -0.2064  -0.2716   0.1736  |   0.0167   0.0477   0.0836  0.2495 +- 0.0013
    2    0.500         -0.1891  -0.2661   0.1710  |   0.0040   0.1095   0.0725  0.2386 +- 0.0012
    3    1.000         -0.0609  -0.1790   0.1343  |  -0.0204   0.0543   0.0679  0.2109 +- 0.0015

    WLS held-out NRMS %   test 1  test 2  test 3   joint 7 (test 1/2/3)   BIC change (training runs)
    fv,fc,offset          0.1458  0.1352  0.5997   0.256 0.259 0.760      0 0 0
    + spring q (ks)       0.1264  0.1170  0.5308   0.117 0.116 0.335      -16265 -17810 -21350
    + load friction       0.1456  0.1372  0.6258   0.255 0.258 0.723      -700 -2539 -1983
    + qd |qd|             0.1443  0.1385  0.8103   0.260 0.263 1.932      -2145 -5043 -6978

    joint-7 residual RMS (N m, trained on runs 1, 2) vs the delay of its torque:
    -20 ms 0.1305, -10 ms 0.1303, 0 ms 0.1302, +10 ms 0.1301, +20 ms 0.1300

The delay changes joint 7's residual by 0.4 % over +-20 ms: not the cause. Load-dependent and
velocity-squared friction lower the training BIC too, but not the held-out error; the spring
halves joint 7's held-out error and lowers the BIC 8-30x more. (Joint elasticity is not
fitted, only estimated: with a joint stiffness of order 10^3-10^4 N m/rad, joint 7's
torques (< 0.6 N m) deflect it by < 6e-4 rad, and at w <= 1 rad/s the deflection's
acceleration w^2 tau / K < 6e-4 rad/s^2 changes the inertial torque by ~1e-5 N m.)

4. Why run 3 held out does not gain (``benchmarks/kuka_rotations.py``): after the first 2 s
   (a start transient), q_j and qdd_j of runs 1 and 2 are almost collinear, so trained on
   them alone a spring and an inertia are told apart only by the transient:

    corr(q_j, qdd_j), joints 1-7, runs 1+2: -0.9989 -0.9881 -0.9990 -0.9992 -0.9873 -0.9991 -0.9992
                                  runs 2+3: -0.8584 -0.8062 -0.8584 -0.8264 -0.8912 -0.8584 -0.8585

Usage: ``python benchmarks/kuka_stiffness.py``.

Its row in benchmarks/README.md lists its last figures; cited by docs/friction.md,
``jaxid/friction/models.py`` and kuka_rotations.py.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline

import jaxid
from jaxid import data
from jaxid.identification.gravity import fit_gravity

DATA = Path(__file__).resolve().parents[1] / "examples/data/kuka_lwr4"
TERMS = ("fv", "fc", "offset")


def wls(W, tau, names=None):
    """Two-step WLS of (N, n, c) regressor blocks W and torques tau (N, n): the fit."""
    n = tau.shape[1]
    return jaxid.identify(W.reshape(-1, W.shape[-1]), tau.reshape(-1), method="wls", n_joints=n, names=names)


def frequency(q, dt):
    """The dominant angular frequency (rad/s) of q (N,), from its spectrum."""
    spec = np.abs(np.fft.rfft(q - q.mean()))
    return 2 * np.pi * np.fft.rfftfreq(len(q), dt)[np.argmax(spec)]


def per_run(runs):
    print(
        f"{'run':<5}{'w rad/s':<9}{'no ks: Izz7':>12}{'fv7':>9}{'fc7':>9}  |{'ks: Izz7':>9}{'fv7':>9}{'fc7':>9}"
        f"{'ks7 N m/rad':>22}"
    )
    for k, r in enumerate(runs):
        cells = []
        for terms in (TERMS, TERMS + ("ks",)):
            robot = jaxid.Robot.from_urdf(DATA / "kuka_lwr4.urdf", joint_terms=terms)
            base = jaxid.base_parameters(robot)
            W = np.asarray(base.reduce(np.asarray(jaxid.regressor(robot, r.q, r.qd, r.qdd))))
            fit = wls(W, np.asarray(r.tau), list(base.names))
            est = dict(zip(base.names, zip(np.asarray(fit.theta), np.asarray(fit.std))))
            cells.append(est)
        a, b = cells
        print(
            f"{k + 1:<5}{frequency(np.asarray(r.q)[:, 6], r.dt):<9.3f}{a['Izz7'][0]:>12.4f}{a['fv7'][0]:>9.4f}"
            f"{a['fc7'][0]:>9.4f}  |{b['Izz7'][0]:>9.4f}{b['fv7'][0]:>9.4f}{b['fc7'][0]:>9.4f}"
            f"{b['ks7'][0]:>13.4f} +- {b['ks7'][1]:.4f}"
        )


def block(F, n):
    """Per-joint columns F (N, n * m), m per joint, as regressor blocks (N, n, n * m): joint j's
    columns in row j."""
    m = F.shape[1] // n
    out = np.zeros((F.shape[0], n, n * m))
    for c in range(n * m):
        out[:, c % n, c] = F[:, c]
    return out


def hypotheses(runs, robot):
    cad = jaxid.Robot.from_urdf(DATA / "kuka_lwr4.urdf")
    eps = robot.coulomb_eps
    extra = {
        "fv,fc,offset": lambda r: None,
        "+ spring q (ks)": lambda r: np.asarray(r.q),
        "+ load friction": lambda r: (
            np.abs(np.asarray(jaxid.rnea(cad, r.q, r.qd, r.qdd))) * np.tanh(np.asarray(r.qd) / eps)
        ),
        "+ qd |qd|": lambda r: np.asarray(r.qd) * np.abs(np.asarray(r.qd)),
    }
    tau = [np.asarray(r.tau) for r in runs]
    tau_max = np.asarray(robot.tau_max)
    blocks = {}
    for held in range(3):
        train = [k for k in range(3) if k != held]
        stacked = [np.concatenate([np.asarray(getattr(runs[k], f)) for k in train]) for f in ("q", "qd", "qdd", "tau")]
        model = dataclasses.replace(robot, gravity=fit_gravity(robot, *stacked).gravity)
        base = jaxid.base_parameters(model)
        blocks[held] = [np.asarray(base.reduce(np.asarray(jaxid.regressor(model, r.q, r.qd, r.qdd)))) for r in runs]
    print(
        f"{'WLS held-out NRMS %':<22}{'test 1':>8}{'test 2':>8}{'test 3':>8}   joint 7 (test 1/2/3)"
        "   BIC change on the training runs (1/2/3)"
    )
    bic0 = {}
    for name, column in extra.items():
        cols = [column(r) for r in runs]
        total, j7, bic = [], [], []
        for held in range(3):
            W = [
                blocks[held][k] if cols[k] is None else np.concatenate([blocks[held][k], block(cols[k], 7)], axis=2)
                for k in range(3)
            ]
            train = [k for k in range(3) if k != held]
            fit = wls(np.concatenate([W[k] for k in train]), np.concatenate([tau[k] for k in train]))
            e = 100 * np.sqrt(np.mean((tau[held] - W[held] @ np.asarray(fit.theta)) ** 2, axis=0)) / (2 * tau_max)
            total.append(e.mean())
            j7.append(e[6])
            # Schwarz's criterion of the training fit, Gaussian with one variance per joint: a term
            # is worth its columns when it lowers this (no held-out data needed).
            r = np.concatenate([tau[k] for k in train]) - np.concatenate([W[k] for k in train]) @ np.asarray(fit.theta)
            rank = np.linalg.matrix_rank(np.concatenate([W[k] for k in train]).reshape(-1, W[0].shape[-1]))
            value = r.shape[0] * np.sum(np.log(np.mean(r**2, axis=0))) + rank * np.log(r.size)
            bic.append(value - bic0.setdefault(held, value))
        print(
            f"{name:<22}"
            + "".join(f"{x:>8.4f}" for x in total)
            + "   "
            + " ".join(f"{x:.3f}" for x in j7)
            + "      "
            + " ".join(f"{x:+.0f}" for x in bic)
        )


def delay(runs, robot, train=(0, 1), delays_ms=(-20, -10, -5, 0, 5, 10, 20)):
    base = jaxid.base_parameters(robot)
    W = [np.asarray(base.reduce(np.asarray(jaxid.regressor(robot, r.q, r.qd, r.qdd)))) for r in runs]
    trim = slice(20, -20)  # the shifted edges
    rms = []
    for d in delays_ms:
        taus = []
        for k in train:
            t = np.arange(len(runs[k])) * runs[k].dt
            tau = np.asarray(runs[k].tau).copy()
            tau[:, 6] = CubicSpline(t, tau[:, 6])(np.clip(t + d * 1e-3, 0, t[-1]))
            taus.append(tau[trim])
        Wt = np.concatenate([W[k][trim] for k in train])
        fit = wls(Wt, np.concatenate(taus))
        e = np.concatenate(taus) - Wt @ np.asarray(fit.theta)
        rms.append(np.sqrt(np.mean(e[:, 6] ** 2)))
    print(
        f"joint-7 residual RMS (N m, trained on runs {[k + 1 for k in train]}) vs the delay of its torque: "
        + ", ".join(f"{d:+d} ms {x:.4f}" for d, x in zip(delays_ms, rms))
    )


def confounding(runs, skip_s=2.0):
    """Per training pair, the correlation of q_j and qdd_j after the start transient (the first
    skip_s seconds): -1 means a spring and an inertia on joint j cannot be told apart."""
    for train in ((0, 1), (1, 2), (0, 2)):
        q, qdd = (
            np.concatenate([np.asarray(getattr(runs[k], f))[int(skip_s / runs[k].dt) :] for k in train])
            for f in ("q", "qdd")
        )
        q, qdd = q - q.mean(0), qdd - qdd.mean(0)
        corr = np.sum(q * qdd, 0) / np.sqrt(np.sum(q * q, 0) * np.sum(qdd * qdd, 0))
        print(
            f"corr(q_j, qdd_j) after {skip_s:g} s, runs {[k + 1 for k in train]}: " + " ".join(f"{c:.4f}" for c in corr)
        )


def main():
    t0 = time.perf_counter()
    runs = [data.read(DATA / f"measurements_{k}.npz") for k in (1, 2, 3)]
    robot = jaxid.Robot.from_urdf(DATA / "kuka_lwr4.urdf", joint_terms=TERMS)
    per_run(runs)
    hypotheses(runs, robot)
    delay(runs, robot)
    confounding(runs)
    print(f"took {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
