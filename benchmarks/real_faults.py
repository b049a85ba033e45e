"""Torque sign and scale checks (``jaxid.workflow.plausibility.check_torques``) on the real logs of
``real_logs.py`` (issue 36): false alarms on the clean runs, and the faults named when injected
into them.

- ``ur10e``: the UR10e's Fourier runs (``dataset_ur10e/identification_data/ur-20_02_*.csv`` of a
  clone of https://github.com/shamilmamedov/dynamic_calibration, unloaded), read as
  ``real_logs.py`` reads them (motor currents times the drive gains, resampled; model
  ``URe/urdf/ur10e.urdf``);
- ``kuka``: the KUKA LWR4+ runs shipped in ``examples/data/kuka_lwr4`` (``--data`` not needed);
- ``panda``: the Panda's exciting trajectory (a clone of
  https://github.com/marcocognetti/FrankaEmikaPandaDynModel; link-side torque sensors; model
  example-robot-data's ``panda.urdf`` to ``panda_hand``), as ``real_logs.py`` reads it.

Cases, per run: clean (the run as it is: any finding is a false alarm); flipped (each joint's
torque negated in turn, as a negative gain or a reversed channel does: the joint must be named
``torque-sign``); and, for a log read with gains (UR10e), in N m (the run's torques read once more
with the gains, as a log already in N m given ``--gains`` is: some joint must be named
``torque-scale``).

Printed: per run the findings of each case, then the counts. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/real_faults.py {ur10e,panda,kuka} [--data CLONE]`` (~2 min each).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import real_logs  # noqa: E402

from jaxid import workflow  # noqa: E402
from jaxid.workflow import plausibility  # noqa: E402


def ur10e_runs(clone: Path):
    """(robot, [(name, raw run)], gains) of the UR10e runs."""
    folder = clone / "dataset_ur10e/identification_data"
    files = [f for f in sorted(folder.glob("ur-20_02_*.csv")) if "Load" not in f.name]
    gains = real_logs.ur10e_gains(clone)
    robot, _ = workflow.model(urdf=str(clone / "URe/urdf/ur10e.urdf"), joint_terms=("fv", "fc", "offset", "ia"))
    runs = [(f.name, workflow.read(f, n=6, columns=real_logs.UR10E_COLUMNS, gains=gains, resample=True)) for f in files]
    return robot, runs, gains


def panda_runs(clone: Path):
    """(robot, [(name, raw run)], None) of the Panda log, its first 70 % and the rest."""
    robot, _ = workflow.model(
        urdf=str(real_logs.panda_urdf()), tip_link="panda_hand", joint_terms=("fv", "fc", "offset")
    )
    with tempfile.TemporaryDirectory() as tmp:
        raw = workflow.read(real_logs.panda_csv(clone, Path(tmp)), n=7, resample=True, max_gap=real_logs.MAX_GAP)
    k = int(real_logs.TRAIN * len(raw))
    return robot, [("first 70 %", raw.slice(0, k)), ("rest", raw.slice(k, len(raw)))], None


def kuka_runs(_clone):
    """(robot, [(name, raw run)], None) of the KUKA LWR4+ runs of this repository."""
    folder = Path(__file__).parents[1] / "examples/data/kuka_lwr4"
    robot, _ = workflow.model(urdf=str(folder / "kuka_lwr4.urdf"), joint_terms=("fv", "fc", "offset"))
    return robot, [(f.name, workflow.read(f)) for f in sorted(folder.glob("measurements_*.npz"))], None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("robot", choices=("ur10e", "panda", "kuka"))
    ap.add_argument("--data", default=".", metavar="CLONE", help="a clone of the robot's log repository")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # the readers' notes; the findings are what is counted
    try:
        reader = {"ur10e": ur10e_runs, "panda": panda_runs, "kuka": kuka_runs}[args.robot]
        robot, runs, gains = reader(Path(args.data))
    except (OSError, ValueError) as e:
        print(f"skip: {e}")
        return 0
    if not runs:
        print(f"skip: no {args.robot} runs under {args.data}")
        return 0
    alarms = flips = named = scaled = 0
    for name, raw in runs:
        p = workflow.prepare(raw, robot)
        clean = plausibility.check_torques(p, robot)
        alarms += bool(clean)
        missed = []
        for j in range(robot.n):
            sign = np.ones(robot.n)
            sign[j] = -1.0
            flipped = workflow.prepare(dataclasses.replace(raw, tau=raw.tau * sign), robot)
            found = plausibility.check_torques(flipped, robot)
            hit = any(x.fault == "torque-sign" and x.joint == robot.coordinate_names[j] for x in found)
            flips += 1
            named += hit
            if not hit:
                missed.append(j + 1)
        line = f"{name:32s} clean: {[(x.fault, x.joint) for x in clean] or 'ok'}; flipped missed: {missed or 'none'}"
        if gains is not None:
            ds = p.datasets[0]
            in_nm = dataclasses.replace(ds, tau=ds.tau * gains, gains=tuple(float(x) for x in gains))
            found = plausibility.check_torques(workflow.Prepared((in_nm,), p.choices), robot)
            scale = sorted({x.joint for x in found if x.fault == "torque-scale"})
            scaled += bool(scale)
            line += f"; in N m with gains: {scale or 'MISSED'}"
        print(line)
    tail = f"; logs in N m given gains named: {scaled}/{len(runs)}" if gains is not None else ""
    print(f"clean runs with a finding: {alarms}/{len(runs)}; flipped channels named: {named}/{flips}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
