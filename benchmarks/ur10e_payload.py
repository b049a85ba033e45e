"""A payload from two real runs of one trajectory on their own clocks: the UR10e's 2.805 kg load of
Mamedov et al. (2020), through ``jaxid payload`` two ways (issue 32's target: the unloaded-run
difference runs without outside alignment, with the mass within the ``--params`` path's figure).

Data: a clone of https://github.com/shamilmamedov/dynamic_calibration (``--data CLONE``; not in
this repository). The runs are ``dataset_ur10e/identification_data/ur-20_02_19_14harm50sec.csv``
(unloaded) and ``...14harm50secLoad.csv`` (loaded, ``m_load = 2.805`` kg in the authors'
``estimate_drive_gains.m``), read as they are (no header, ``t=0,q=1:7,qd=7:13,tau=13:19``, motor
currents times ``UR10E_parameters.txt``'s drive gains, ``--resample``: their stamps jitter by
~9 %); they start at other phases of the trajectory (the authors cut samples 195-4966 and
308-5071 by hand). Two estimates of the mass:

- ``--params``: the robot identified on the unloaded run (``jaxid identify``, fv, fc, offset,
  ia), the payload fitted on the loaded run on top of it;
- ``--unloaded``: the loaded minus the unloaded run, aligned by ``jaxid payload`` itself (the
  trajectory's positions, ``workflow.align_runs``), no robot model subtracted.

The ``--params`` line also gives the payload on the robot as identified, before the loaded run
updates the robot (its estimate and covariance a prior, ``payload._robot_update``): the two
paths differ by what that update moves, not by the alignment (2026-12-06, by hand: the remaining
delay over 5 s windows of the aligned runs stays within +-0.07 ms, shifting the alignment by
+-5 ms moves the mass by < 0.2 %; the update moves wrist parameters by 3-4 std, +1.6 % on this
pair and -6 % on the 15harm50sec pair of the same data, whose loaded file has junk rows).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/ur10e_payload.py --data CLONE``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from real_logs import ur10e_gains

from jaxid.workflow.commands import (
    DataSpec,
    IdentifyRequest,
    ModelSpec,
    PayloadRequest,
    run_identify,
    run_payload,
)

MASS = 2.805  # kg, estimate_drive_gains.m's m_load
UNLOADED, LOADED = "ur-20_02_19_14harm50sec.csv", "ur-20_02_19_14harm50secLoad.csv"
COLUMNS = "t=0,q=1:7,qd=7:13,tau=13:19"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, metavar="CLONE")
    args = ap.parse_args(argv)
    clone = Path(args.data)
    folder = clone / "dataset_ur10e/identification_data"
    if not (folder / LOADED).exists():
        print(f"skip: no UR10e payload runs under {clone}")
        return 0
    gains = ",".join(repr(float(g)) for g in ur10e_gains(clone))
    urdf = str(clone / "URe/urdf/ur10e.urdf")
    spec = DataSpec(columns=COLUMNS, gains=gains, resample=True)
    work = Path(tempfile.mkdtemp(prefix="ur10e_payload_"))
    params = work / "params.json"
    start = time.perf_counter()
    model = ModelSpec(urdf=urdf, joint_terms=("fv", "fc", "offset", "ia"))
    run_identify(IdentifyRequest(data=(str(folder / UNLOADED),), model=model, prepare=spec, output=str(params)))
    rows = []
    for label, request in (
        (
            "--params (robot identified on the unloaded run)",
            PayloadRequest(data=str(folder / LOADED), params=str(params), prepare=spec),
        ),
        (
            "--unloaded (aligned by jaxid)",
            PayloadRequest(
                data=str(folder / LOADED),
                unloaded=str(folder / UNLOADED),
                model=ModelSpec(urdf=urdf, joint_terms=()),
                prepare=spec,
            ),
        ),
    ):
        out = run_payload(request)
        m, s = float(out.fit.theta[0]), float(out.fit.std[0])
        mc = float(out.fit.theta_consistent[0])
        note = "" if out.alignment is None else f"; {out.alignment.describe('unloaded run')}"
        if request.params is not None:  # the payload on the robot as identified, before the loaded run updates it
            note += f"; on the robot as identified (no update) {float(out.fit.fit.theta[0]):.3f} kg"
        rows.append((label, m, s, mc))
        print(
            f"{label}: mass {m:.3f} +- {s:.3f} kg (consistent {mc:.3f}), error {m - MASS:+.3f} kg "
            f"({100 * (m - MASS) / MASS:+.1f} %){note}",
            flush=True,
        )
    (_, m_params, _, _), (_, m_diff, _, _) = rows
    print(
        f"|error| --unloaded {abs(m_diff - MASS):.3f} kg vs --params {abs(m_params - MASS):.3f} kg "
        f"({time.perf_counter() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
