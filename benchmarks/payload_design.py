"""How many periods, which joints: the payload design's predicted std against the measured error,
on the payload literature's scenario (issue 35, deliver 3).

    python benchmarks/payload_design.py [--periods 10 50] [--runs 20] [--seed 0] [--no-full]

The scenario of ``benchmarks/payload.py --scenario puma560`` (the payload article, seeds/004: a
heavy arm, the wrist held still, joints 1-3 excited): the built-in PUMA 560, a 2.5 kg tool
(centre of mass (0.01, -0.02, 0.10) m from the flange, a uniform 0.08 x 0.08 x 0.12 m box), the
wrist held at (0.4, 0.9, -0.6) rad while joints 1-3 follow a 5-harmonic 0.05 Hz Fourier excitation
about (0, 0.3, -1.2) rad; motor currents logged at 200 Hz with 0.02 A noise, i.e. torque noise
SIGMA_I x Km G per joint. For joints 1-3 and 1-6 and each number of periods:

- predicted: ``payload_design.design_payload`` on one period of the commanded motion, the torque
  noise per joint and the number of periods (no data: what ``jaxid excite --payload`` prints);
- Monte Carlo: the RMS error over ``--runs`` noise draws of ``identify_payload`` with the true robot
  subtracted (the noise alone: what the prediction claims), on the period average of P periods
  (the average of P periods of white noise is one period of noise std sigma / sqrt(P));
- full path (one seed, ``--no-full`` skips it): ``benchmarks/payload.py``'s ``puma_wrist_fixed``,
  the arm identified from an unloaded run, the currents read back, ``identify_payload`` with the
  robot's covariance as ``jaxid payload --params`` calls it: its least-squares error and the std
  the fit reports (which holds the robot model's share).

Figures: mass std / error in % of 2.5 kg; centre of mass in mm (the norm: sqrt of the summed
variances, the Euclidean error); inertia in % of trace/3 = 0.0213 kg m^2 (about the flange origin),
the worst diagonal and the worst off-diagonal entry. Measured (seed 0, 20 runs, 35 s on 2 CPU
cores shared; each row its own loaded trajectory, as ``puma_wrist_fixed`` draws it after the
unloaded run's noise, whose length depends on the periods):

    joints periods  predicted std           |  Monte Carlo RMS error    |  full path |error|
                    mass % com mm diag% off% | mass % com mm diag% off% | mass % com mm diag% off% (fit's std diag/off)
       1-3      10  0.024   3.8   20.7 14.9  |  0.026   3.1   14.6 14.1  |  0.018   6.7   64.2 46.0 (33.8 / 24.0)
       1-6      10  0.011   0.054  4.2  3.3  |  0.010   0.051  3.7  3.4  |  0.002   0.038  2.0  7.0 (5.9 / 4.1)
       1-3      50  0.011   3.2   16.7 12.1  |  0.014   3.5   19.8 13.5  |  0.028   1.8   23.7 10.6 (21.1 / 14.9)
       1-6      50  0.0056  0.026  2.4  1.9  |  0.0048  0.019  2.3  2.0  |  0.006   0.078  3.1  1.5 (3.0 / 2.2)
    periods needed for mass 1 %, com 2 mm, every inertia entry 10 % of trace/3 (noise alone):
       1-3: 1, 29, 43 (the 10-period trajectory); 1, 102, 140 (the 50-period one); 1-6: 1, 1, 2-3

- The prediction is the Monte-Carlo spread of ``identify_payload`` within the sampling error of 20
  runs (about 16 %; more for a maximum over entries): 0.70-1.27 x over the 16 figures.
- Joints 1-3 of the wrist-fixed arm see all ten parameters (rank 10), but on these trajectories
  every inertia entry to 10 % of trace/3 takes 43-140 periods of noise alone, against 2-3 with the
  wrist torques; the centre of mass to 2 mm 29-102 periods, against 1.
- The full path (the robot identified from an unloaded run, its covariance a prior) reports a larger
  std than the noise alone (34 vs 21 % on joints 1-3 at 10 periods): the robot's estimate of the
  links the payload adds to (with the wrist held still, link 3 and the wrist together) is the rest,
  which ``jaxid payload`` prints as ``std`` beside the design's ``expected``; its errors are within
  2 x its std (the worst entry against the worst std).

Cited by docs/payload.md and ``jaxid/identification/payload_design.py``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
import warnings

import jax.numpy as jnp
import numpy as np

import jaxid
from jaxid.identification import payload as P
from jaxid.identification import payload_design as D
from jaxid.model import inertia
from jaxid.model.library import PUMA560_GEAR, PUMA560_KM

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import payload as bp  # noqa: E402  (the scenario's constants and its full path)

DIAG, OFF = [4, 6, 9], [5, 7, 8]


def scenario(seed: int, periods: int):
    """(robot, theta_L, one period of the loaded run's commanded (q, qd, qdd), torque noise (6,))
    exactly as ``bp.puma_wrist_fixed(periods, seed)`` draws them (its random stream replayed)."""
    rng = np.random.default_rng(seed)
    robot = jaxid.models.puma560()
    m, c = bp.PUMA_PAYLOAD["m"], jnp.array(bp.PUMA_PAYLOAD["com"])
    theta_L = np.asarray(inertia.from_mass_com_inertia(m, c, inertia.box_inertia(m, bp.PUMA_PAYLOAD["box"])))
    bp.trajectory(rng, robot, q0=(0.0, 0.5, -1.0, 0.0, 0.0, 0.0))  # the unloaded run's trajectory ...
    per = int(bp.PUMA_FS / bp.F0)
    for _ in range(2):  # ... and its log's noise (positions, currents)
        rng.normal(size=(periods * per, robot.n))
    moving = np.array([True, True, True, False, False, False])
    traj = bp.trajectory(rng, robot, q0=bp.PUMA_Q0 + bp.PUMA_WRIST, moving=moving)
    q, qd, qdd = (np.asarray(x) for x in traj(jnp.asarray(np.arange(per) / bp.PUMA_FS)))
    return robot, theta_L, (q, qd, qdd), bp.SIGMA_I * np.abs(PUMA560_KM * PUMA560_GEAR)


def figures(theta_L, cov=None, err=None):
    """(mass %, com mm, worst diagonal %, worst off-diagonal %) of a covariance (10, 10) (stds) or
    of errors (R, 10) (RMS over runs) or one error (10,)."""
    m = theta_L[0]
    tr3 = float(np.sum(theta_L[DIAG])) / 3
    J = np.concatenate([-theta_L[1:4, None] / m**2, np.eye(3) / m], axis=1)  # c = s / m, first order
    if cov is not None:
        std = np.sqrt(np.diag(cov))
        com = 1e3 * np.sqrt(np.trace(J @ cov[:4, :4] @ J.T))
    else:
        err = np.atleast_2d(err)
        std = np.sqrt(np.mean(err**2, axis=0))
        com = 1e3 * np.sqrt(np.mean(np.sum((err[:, :4] @ J.T) ** 2, axis=1)))
    return 100 * std[0] / m, com, 100 * np.max(std[DIAG]) / tr3, 100 * np.max(std[OFF]) / tr3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--periods", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--runs", type=int, default=20, help="Monte-Carlo noise draws (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-full", dest="full", action="store_false", help="skip the full path (slow)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for periods in args.periods:
        robot, theta_L, (q, qd, qdd), noise = scenario(args.seed, periods)
        clean = np.asarray(jaxid.rnea(P.attach_payload(robot, theta_L), q, qd, qdd))
        full = bp.puma_wrist_fixed(periods, args.seed)[0] if args.full else []
        for joints, label in (((0, 1, 2), "1-3"), (None, "1-6")):
            d = D.design_payload(
                robot, q, qd, qdd, noise, joints=joints, periods=periods, nominal=theta_L, bound=np.inf
            )
            cov = d.cov_one / periods
            rng = np.random.default_rng(1000 + args.seed)
            err = []
            sigma = noise / np.sqrt(periods)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # noisy fits that are not bodies: least squares is compared
                for _ in range(args.runs):
                    tau = clean + sigma * rng.normal(size=clean.shape)
                    sel = list(range(6)) if joints is None else list(joints)
                    fit = P.identify_payload(robot, None, (q, qd, qdd, tau), joints=joints, cov=sigma[sel] ** 2)
                    err.append(np.asarray(fit.theta) - theta_L)
            row = dict(
                joints=label,
                periods=periods,
                rank=d.rank,
                predicted=figures(theta_L, cov=cov),
                monte_carlo=figures(theta_L, err=np.array(err)),
                periods_needed=d.periods_needed(),
            )
            for r in full:
                if r["joints"] == label and r["estimate"] == "LS":
                    e = np.r_[r["theta"]] - theta_L
                    row["full_error"] = figures(theta_L, err=e)
                    s = np.r_[np.nan, np.nan, np.nan, np.nan, r["inertia_std_pct_of_trace3"]]
                    row["full_std_inertia"] = (float(np.nanmax(s[DIAG])), float(np.nanmax(s[OFF])))
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(
        "joints periods  predicted std: mass %  com mm  diag %  off %  |  Monte Carlo RMS error (same)"
        "  |  full path |error| (fit's std diag/off %)"
    )
    f = lambda v: " ".join(f"{x:7.3g}" for x in v)
    for r in rows:
        line = f"{r['joints']:>6} {r['periods']:>7}  {f(r['predicted'])}  |  {f(r['monte_carlo'])}"
        if "full_error" in r:
            line += f"  |  {f(r['full_error'])} ({r['full_std_inertia'][0]:.3g} / {r['full_std_inertia'][1]:.3g})"
        print(line)
        print(f"{'':>16}periods needed (mass 1 %, com 2 mm, inertia 10 %): {r['periods_needed']}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
