"""Plausible bodies: the consistent fit's link masses and centres of mass against a simulated truth,
and whether the "plausible" verdict tells true-like results from implausible ones (issue 31).

For every robot (the built-in UR5 and example-robot-data URDFs, :data:`ROBOTS`) two excitations
(``jaxid excite``, as ``log_zoo.py --quick`` makes them: seeds 0 and 1, one 10 s period at
0.1 Hz), and per seed a true robot (``jaxid simulate --scale 0.3 --robot-seed SEED``: every link's
mass x U(0.7, 1.3), its principal second moments x U(0.7, 1.3) with the mass and axes turned by up
to 0.3 pi/2, its centre of mass moved by up to 0.3 x its radius of gyration per axis, physical by
construction; viscous and Coulomb friction and an offset per joint) measured along both at
:data:`RATE` Hz (a few thousand samples), torque noise 1 % of each joint's torque RMS along the
run (``--tau-sigma``), position noise 1e-4 rad. Identified on the first run with the nominal
(unperturbed) model and the CLI's default joint terms (fv, fc, offset):

- **consistent**: ``jaxid identify --consistent`` at its defaults (each body in its link's
  bounding ellipsoid; the prior weight chosen by cross-validation, the one-standard-error rule);
- **wls**: ``jaxid identify`` (two-step WLS), the held-out baseline;
- **control** (seed 1 only): ``--consistent --prior-weight 1e-3 --no-ellipsoid``, the old defaults.

Per fit: each link's mass relative error against the truth (median and max over the links with
mass), the largest centre-of-mass error (m), the verdict (``physics.plausible``) and the failing
checks (``link:mass``, ``link:com``, ``link:body``, ``total``), and the held-out relative error on
the second run (``jaxid validate``) over WLS's. A result is *true-like* when every link's mass is
within [0.5, 2] x the truth's and every centre of mass lies inside the link's geometry (its
capsules, ``verdicts.link_geometry``, grown by as far as the true centre of mass lies outside
them; no other margin). A verdict is *wrong* when "plausible" is given to a result that is not
true-like or refused to one that is (column ``agree``).

Run: ``PYTHONPATH=. OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/plausible_bodies.py
[--robots ur5,panda] [--seeds 1,2] [--work DIR]`` (several minutes per robot and seed on 2
shared cores: the cross-validation fits 7 weights x 3 time blocks). Rows are appended to
``WORK/plausible_bodies.jsonl`` as they finish.

Measured 2026-12-06 at 1e9d0af (branch ellipsoid), 7 robots x seeds 1, 2, 2000 samples per run,
load 5-11 on 2 shared cores, 11 min wall (row ``plausible_bodies.py`` in ``benchmarks/README.md``).
mass %: median / max over links of |m - m_true| / m_true; com: largest centre-of-mass error; held
/wls: held-out relative error over WLS's; true?: true-like; plaus: the verdict::

    robot  seed fit        mass % / max %  com cm  /wls  weight  true? plaus  not true-like
    ur5    1    consistent   8.5 /  40.7    4.3    0.99    2.8   yes   yes
    ur5    1    control     50.9 / 124.5   14.5    0.99  1e-3    no    yes    3:m0.46x 4:m2.25x 5:m0.46x
    ur5    2    consistent  12.5 /  26.3    2.6    1.05   40     yes   yes
    panda  1    consistent  37.6 /  65.5   14.4    1.00    0.21  no    yes    6:m0.43x (1, 2: 1.65x)
    panda  1    control     27.3 /1624.3   14.2    1.00  1e-3    no    no     2:m17.2x (mass, body)
    panda  2    consistent  38.2 / 118.2   17.9    1.00    0.21  no    yes    2:m2.18x (1: 1.85x)
    ur10   1    consistent   3.7 /  26.1    4.1    1.00    2.8   no    yes    4:com+2.1cm
    ur10   1    control     14.2 /  52.4    4.6    1.00  1e-3    no    yes    6:m0.48x 4:com+1.6cm
    ur10   2    consistent   7.0 /  22.9    7.2    1.00   40     no    yes    4:com+1.4cm 6:com+0.7cm
    z1     1    consistent  11.1 /  20.0    3.5    1.00    3.1   yes   yes
    z1     1    control     28.5 /  70.6    4.8    1.00  1e-3    no    no     4:com+2.5cm (1, 7: body)
    z1     2    consistent  15.0 /  31.4    7.1    1.04   44     yes   yes
    xarm7  1    consistent   4.9 /   7.9    1.6    1.00   44     yes   yes
    xarm7  1    control     25.4 /  47.0    5.7    1.00  1e-3    yes   yes
    xarm7  2    consistent   4.5 /  15.7    2.9    0.99   44     yes   yes
    kinova 1    consistent  12.4 /  29.1    1.6    1.00    2.8   yes   yes
    kinova 1    control     21.4 / 165.5   13.0    1.00  1e-3    no    no     5:m2.66x 6:m0.08x 4:com+6.0cm
    kinova 2    consistent   4.5 /  17.4    4.1    1.01   40     yes   yes
    ur3    1    consistent   4.5 /   7.3    2.2    0.92   40     no    yes    4:com+1.3cm
    ur3    1    control     19.9 /  50.3    6.9    0.91  1e-3    no    no     6:m0.50x 4:com+6.9cm (4: com)
    ur3    2    consistent   7.1 /  30.5    2.8    0.97   40     no    yes    4:com+1.2cm 5:com+0.6cm

Mass median <= 15 % in 11 of 14 consistent fits (panda 37.6 and 38.2 %, z1 seed 2 15.03 %); held
out within 0.91-1.05 x WLS. Every true-like result is plausible. Wrong verdicts (plausible, not
true-like): by mass 4 (ur5 and ur10 controls, both panda fits): the mass check accepts 1/3-3 x
the nominal, so 0.26-4.3 x a truth within +-30 % of it (ur5 control link 4: 2.90 x nominal, 2.25 x
truth); by centre of mass only 4 (ur10, ur3 consistent: 0.6-2.1 cm outside the capsules, inside
the check's 5 cm margin and the ellipsoid's +2 cm). Panda: its URDF's links 1 and 2 need their
ellipsoids 2.29 x and 2.12 x larger (capped at 1.5 x, warned): the cap raises their masses
1.65-2.18 x the truth; with ``--no-ellipsoid`` (same cross-validation) the masses are 0.73-1.48 x
the truth, median 20.2 / 19.4 %.

After that finding the ellipsoids are no longer capped: each is grown until the nominal body fills
at most half of it (``workflow.consistency.NOMINAL_SHARE``). Re-run at 81b7398 (panda, ur10; load
15-18): panda mass median 18.8 / 19.7 % (max 45.3 / 28.8 %; was 37.6 / 38.2 %), held out 1.00 x
WLS, seed 2 true-like; ur10 4.6 / 7.0 % (was 3.7 / 7.0 %); the verdicts as above (panda seed 1
and both ur10 fits plausible with a centre of mass 0.1-2.1 cm outside the capsules).

With the boundary sub-check (a body on its pseudo-inertia, ellipsoid or mass-bound boundary
fails unless the least-squares estimate lies >= 2 std beyond it; 86eac3c), re-run at 275ffb7 /
57d25ce on ur5, ur10, z1 (seeds 1, 2; load 1-2): the consistent results unchanged and every
true-like one still plausible; three controls that every other check passes now refused by it
alone: ur5 seed 1 (links 3 and 6 on their pseudo-inertia boundary, scores 0.16 and 0.04; plausible
before), ur5 seed 2 (links 2, 3, 5), z1 seed 2 (link 7). Still plausible and not true-like: the
ur10 seed 1 control (link 6 at 0.48 x the truth, no body on a boundary) and consistent fits with
a centre of mass 0.8-1.5 cm outside the capsules.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from log_zoo import _model, _trajectories

from jaxid import data
from jaxid.workflow import verdicts
from jaxid.workflow.commands import (
    IdentifyRequest,
    SimulateRequest,
    ValidateRequest,
    run_identify,
    run_simulate,
    run_validate,
)
from jaxid.workflow.requests import BoundsSpec

#: Robots studied (names of ``log_zoo.ROBOTS``): the UR5 built-in and URDFs with real inertials.
ROBOTS = ("ur5", "panda", "ur10", "z1", "xarm7", "kinova", "ur3")
#: Sample rate of the simulated runs, Hz (10 s runs: 2000 samples).
RATE = 200.0
#: Relative size of the true robot's perturbation (``jaxid simulate --scale``).
SCALE = 0.3
#: Torque noise std, fraction of each joint's torque RMS along the run.
TAU_NOISE = 0.01
#: Mass ratio (identified / true) range of a true-like result.
TRUE_LIKE_MASS = (0.5, 2.0)


def _standard(params, n):
    """(n, 10) identified standard inertial parameters of a params object."""
    return np.asarray(params.standard, dtype=float)[: 10 * n].reshape(n, 10)


def _short(line: str) -> str:
    """A failure line of the plausible check as ``link:what``."""
    head = line.split(":")[0]
    what = "mass" if "mass " in line.split(":", 1)[-1][:8] else "com" if "centre of mass" in line else "body"
    if line.startswith("total"):
        return "total"
    if "degenerate" in line:
        what = "body"
    return f"{head.split()[1]}:{what}" if head.startswith("link") else line[:30]


def score(fit, truth, geometry, heldout, wls_heldout) -> dict:
    """Figures of one identification outcome ``fit`` against the true robot ``truth``."""
    robot = fit.robot
    n = robot.n_joints
    params = fit.params
    true_pi = np.asarray(truth.parameter_vector(), dtype=float)[: 10 * n].reshape(n, 10)
    m_t, c_t, _, _ = verdicts._bodies(true_pi)
    row: dict = dict(heldout=heldout, ratio=heldout / wls_heldout if wls_heldout else None)
    checks = params.physics.checks if params.physics is not None else None
    row["plausible"] = None if params.physics is None else params.physics.plausible
    row["failing"] = []
    if checks:
        for c in checks:
            if c["passed"] is False:
                row["failing"] += [_short(f) for f in c.get("failures", [])] or [c["name"]]
    if params.standard is None:
        return row
    m, c, _, _ = verdicts._bodies(_standard(params, n))
    caps = geometry[0]
    massive = m_t > 0
    rel = np.abs(m - m_t)[massive] / m_t[massive]
    com_err = np.linalg.norm(c - c_t, axis=1)[massive]
    outside = [
        verdicts._point_distance(c[j], caps[j]) - verdicts._point_distance(c_t[j], caps[j])
        for j in range(n)
        if m_t[j] > 0
    ]
    ratio = m[massive] / m_t[massive]
    true_like = bool(np.all((ratio >= TRUE_LIKE_MASS[0]) & (ratio <= TRUE_LIKE_MASS[1])) and max(outside) <= 1e-9)
    links = np.flatnonzero(massive) + 1
    why = [f"{j}:m{r:.2f}x" for j, r in zip(links, ratio) if not TRUE_LIKE_MASS[0] <= r <= TRUE_LIKE_MASS[1]]
    why += [f"{j}:com+{100 * d:.1f}cm" for j, d in zip(links, outside) if d > 1e-9]
    m0 = np.asarray(robot.parameter_vector(), dtype=float)[: 10 * n].reshape(n, 10)[:, 0]
    row.update(
        mass_err_median=float(np.median(rel)),
        mass_err_max=float(np.max(rel)),
        mass_ratio_min=float(ratio.min()),
        mass_ratio_max=float(ratio.max()),
        com_err_max=float(np.max(com_err)),
        com_outside_max=float(max(0.0, max(outside))),
        true_like=true_like,
        not_true_like=why,
        mass_vs_truth=[round(float(x), 4) for x in ratio],
        mass_vs_nominal=[round(float(x), 4) for x in (m / np.where(m0 > 0, m0, 1.0))[massive]],
        com_outside_vs_truth_m=[round(float(x), 4) for x in outside],
        prior_weight=(params.extra.get("prior_weight_choice") or {}).get("chosen"),
    )
    row["agree"] = row["plausible"] == true_like
    return row


def case(robot: str, seed: int, work: Path, control: bool) -> list[dict]:
    """Rows (consistent, wls, control) of one robot and seed."""
    spec = _model(robot)
    traj = _trajectories(robot, 0.1, work, quick=True)
    runs, truth = [], None
    for k, path in enumerate(traj):
        stem = work / f"{robot}_s{seed}_{k}"
        request = dict(
            trajectory=str(path),
            model=spec,
            robot_seed=seed,
            noise_seed=100 * seed + k,
            rate=RATE,
            scale=SCALE,
        )
        run_simulate(SimulateRequest(output=f"{stem}_pre.csv", truth=f"{stem}_truth.csv", **request))
        tau = np.asarray(data.read(f"{stem}_truth.csv", derivatives=None).tau)
        sigma = tuple(float(s) for s in TAU_NOISE * np.sqrt(np.mean(tau**2, axis=0)))
        out = run_simulate(SimulateRequest(output=f"{stem}.csv", tau_sigma=sigma, **request))
        truth = out.true_robot
        runs.append(f"{stem}.csv")

    def fit(label, **kw):
        t0 = time.perf_counter()
        params = work / f"{robot}_s{seed}_{label}_params.json"
        outcome = run_identify(
            IdentifyRequest(data=(runs[0],), model=spec, output=str(params), accept_unconverged=True, **kw)
        )
        val = run_validate(ValidateRequest(data=(runs[1],), params=str(params), model=spec, accept_unconverged=True))
        return outcome, float(val.validation.runs[0]["relative_error"]), time.perf_counter() - t0

    wls, wls_err, wls_s = fit("wls")
    geometry = verdicts.link_geometry(wls.robot, wls.params.model)
    rows = []
    fits = [("consistent", dict(consistent=True))]
    if control:
        fits.append(("control", dict(consistent=True, prior_weight=1e-3, bounds=BoundsSpec(ellipsoid=False))))
    for label, kw in fits:
        outcome, err, seconds = fit(label, **kw)
        rows.append(
            dict(
                robot=robot,
                seed=seed,
                fit=label,
                seconds=seconds,
                samples=int(outcome.prepared.choices[0]["samples"]),
                converged=None if outcome.params.consistency is None else outcome.params.consistency.converged,
                **score(outcome, truth, geometry, err, wls_err),
            )
        )
    rows.append(dict(robot=robot, seed=seed, fit="wls", seconds=wls_s, heldout=wls_err, ratio=1.0))
    return rows


def _fmt(r: dict) -> str:
    if r["fit"] == "wls":
        return f"{r['robot']:7s} {r['seed']:4d} {'wls':10s} {'':>23s} {r['heldout']:8.3f}"
    pl = {True: "yes", False: "no", None: "-"}[r.get("plausible")]
    tl = {True: "yes", False: "no", None: "-"}[r.get("true_like")]
    agree = "" if r.get("agree", True) else "  WRONG"
    failing = ",".join(r["failing"]) or "-"
    return (
        f"{r['robot']:7s} {r['seed']:4d} {r['fit']:10s} {100 * r['mass_err_median']:6.1f} {100 * r['mass_err_max']:7.1f} "
        f"{100 * r['com_err_max']:7.1f}  {r['heldout']:8.3f} {r['ratio']:6.2f} {str(r.get('prior_weight') or '-')[:8]:>8s} "
        f"{tl:>5s} {pl:>5s}{agree}  {failing}  {' '.join(r.get('not_true_like', []))}"
    )


HEADER = (
    f"{'robot':7s} {'seed':>4s} {'fit':10s} {'mass %':>6s} {'max %':>7s} {'com cm':>7s}  {'held %':>8s} "
    f"{'/wls':>6s} {'weight':>8s} {'true?':>5s} {'plaus':>5s}  failing checks  not true-like (link: mass/truth, com outside)"
)


def summary(rows: list[dict]) -> list[str]:
    """Lines: the issue's mass target per consistent fit, and the wrong verdicts by cause (a mass
    outside [0.5, 2] x the truth, or only a centre of mass outside the geometry)."""
    lines = []
    cons = [r for r in rows if r["fit"] == "consistent" and "mass_err_median" in r]
    met = [r for r in cons if r["mass_err_median"] <= 0.15]
    lines.append(
        f"consistent: mass error median <= 15 % in {len(met)} of {len(cons)} fits"
        + "".join(f"; {r['robot']} {r['seed']}: {100 * r['mass_err_median']:.1f} %" for r in cons if r not in met)
    )
    for fit in ("consistent", "control"):
        some = [r for r in rows if r["fit"] == fit and "true_like" in r]
        wrong = [r for r in some if not r["agree"]]
        by_mass = [r for r in wrong if any(":m" in w for w in r["not_true_like"])]
        com_only = [r for r in wrong if r not in by_mass and r["plausible"]]
        lines.append(
            f"{fit}: {len(some)} fits, {sum(r['true_like'] for r in some)} true-like, "
            f"{sum(bool(r['plausible']) for r in some)} plausible; wrong verdicts {len(wrong)}: "
            f"{len(by_mass)} plausible with a mass outside [0.5, 2] x the truth, {len(com_only)} plausible with only "
            f"a centre of mass outside the geometry (<= {max([r['com_outside_max'] for r in com_only] or [0]) * 100:.1f} cm), "
            f"{len(wrong) - len(by_mass) - len(com_only)} not plausible though true-like"
        )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default=",".join(ROBOTS))
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--work", default=str(Path(__file__).parent / "out" / "plausible_bodies"))
    ap.add_argument("--from-log", action="store_true", help="print the table of WORK/plausible_bodies.jsonl, no fits")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    log = work / "plausible_bodies.jsonl"
    seeds = [int(s) for s in args.seeds.split(",")]
    print(HEADER, flush=True)
    rows = []
    if args.from_log:
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        for r in rows:
            print(_fmt(r) if r["fit"] != "error" else f"{r['robot']:7s} {r['seed']:4d} error: {r['error']}")
    for robot in [] if args.from_log else args.robots.split(","):
        for seed in seeds:
            try:
                new = case(robot, seed, work, control=seed == seeds[0])
            except Exception as e:  # a robot that cannot be run is a row, not the end of the study
                new = [dict(robot=robot, seed=seed, fit="error", error=f"{type(e).__name__}: {str(e)[:200]}")]
                print(f"{robot:7s} {seed:4d} error: {new[0]['error']}", flush=True)
            else:
                for r in new:
                    print(_fmt(r), flush=True)
            with log.open("a") as f:
                for r in new:
                    f.write(json.dumps(r) + "\n")
            rows += new
    for line in summary(rows):
        print(line)
    return int(any(r.get("agree") is False for r in rows))


if __name__ == "__main__":
    sys.exit(main())
