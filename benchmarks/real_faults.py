"""Torque sign and scale checks (``jaxid.workflow.plausibility.check_torques``) on the real UR10e
runs of ``real_logs.py`` (issue 36): false alarms on the clean runs, and the faults named when
injected into them.

For each of the UR10e's Fourier runs (``dataset_ur10e/identification_data/ur-20_02_*.csv`` of a
clone of https://github.com/shamilmamedov/dynamic_calibration, unloaded; read as
``real_logs.py`` reads them: motor currents times the drive gains, resampled; model
``URe/urdf/ur10e.urdf``):

- clean: the run as it is; any finding is a false alarm;
- flipped: each joint's gain negated in turn (6 per run); the joint must be named ``torque-sign``;
- in N m: the run's torques (N m) read once more with the gains, as a log already in N m given
  ``--gains`` is (``Dataset.gains`` recorded); some joint must be named ``torque-scale``.

Printed: per run the findings of each case, then the counts. Run:
``PYTHONPATH=. .venv/bin/python benchmarks/real_faults.py --data CLONE`` (~2 min).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import real_logs  # noqa: E402

from jaxid import workflow  # noqa: E402
from jaxid.workflow import plausibility  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, metavar="CLONE", help=f"a clone of {real_logs.UR10E_URL}")
    args = ap.parse_args(argv)
    clone = Path(args.data)
    folder = clone / "dataset_ur10e/identification_data"
    files = [f for f in sorted(folder.glob("ur-20_02_*.csv")) if "Load" not in f.name]
    if not files:
        print(f"skip: no UR10e runs under {clone}")
        return 0
    gains = real_logs.ur10e_gains(clone)
    robot, _ = workflow.model(urdf=str(clone / "URe/urdf/ur10e.urdf"), joint_terms=("fv", "fc", "offset", "ia"))
    warnings.simplefilter("ignore")  # the readers' notes; the findings are what is counted
    alarms = flips = named = scaled = 0

    def findings(prepared):
        return plausibility.check_torques(prepared, robot)

    for f in files:
        run = workflow.read(f, n=6, columns=real_logs.UR10E_COLUMNS, gains=gains, resample=True)
        p = workflow.prepare(run, robot)
        clean = findings(p)
        alarms += bool(clean)
        missed = []
        for j in range(robot.n):
            g = gains.copy()
            g[j] = -g[j]
            flipped = workflow.prepare(
                workflow.read(f, n=6, columns=real_logs.UR10E_COLUMNS, gains=g, resample=True), robot
            )
            hit = any(x.fault == "torque-sign" and x.joint == robot.coordinate_names[j] for x in findings(flipped))
            flips += 1
            named += hit
            if not hit:
                missed.append(j + 1)
        ds = p.datasets[0]
        in_nm = dataclasses.replace(ds, tau=ds.tau * gains, gains=tuple(float(x) for x in gains))
        scale = sorted({x.joint for x in findings(workflow.Prepared((in_nm,), p.choices)) if x.fault == "torque-scale"})
        scaled += bool(scale)
        print(
            f"{f.name:32s} clean: {[(x.fault, x.joint) for x in clean] or 'ok'}; flipped missed: {missed or 'none'}; "
            f"in N m with gains: {scale or 'MISSED'}"
        )
    print(
        f"clean runs with a finding: {alarms}/{len(files)}; flipped channels named: {named}/{flips}; "
        f"logs in N m given gains named: {scaled}/{len(files)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
