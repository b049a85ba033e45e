"""MJCF round trip against MuJoCo: read, identify, write back, load in MuJoCo, mj_inverse.

For each model (tests/data/mjcf: MuJoCo's own ``mj_saveLastXML`` export of example-robot-data's
UR5, with its empty ``<frame/>`` elements; arm7 and scara, hand-written in the style of
MuJoCo Menagerie: classes in an ``<include>``, ``childclass``, frames wrapping bodies and
joints, inertia from geoms, every orientation attribute):

1. read: ``Robot.from_mjcf`` with ia, fv, fc; error of jaxid's rnea against MuJoCo's
   ``mj_inverse`` (constraints off: rigid bodies, armature, damping) at random states,
   max|a - b| / max|b|;
2. identify: torques simulated by MuJoCo itself (``mj_inverse`` with its frictionloss
   constraint on) along a sum-of-sines trajectory, then ``jaxid identify --mjcf SRC
   --joint-terms ia,fv,fc --consistent --mjcf-out OUT`` (the CLI, as a user runs it);
3. write / load: OUT written, ``mujoco.MjModel.from_xml_path(OUT)`` loads it;
4. after write: ``mj_inverse`` of OUT (constraints off) against jaxid's prediction with the
   identified standard parameters (fc left out: MuJoCo's frictionloss is a constraint, not
   jaxid's tanh; its written value is checked equal to the identified fc instead), and the
   fit of the identified model to MuJoCo's torques of step 2 (relative RMS, for information:
   near qd = 0 the two friction models differ).

    python benchmarks/mjcf_roundtrip.py

Measured (2-core machine, mujoco 4.0.1; identify wall time includes jaxid's compiles):

    model                     read ok  read err write ok  loads after write  fc ok  fit rms identify s
    ur5_mujoco_export.xml         yes   8.5e-16      yes    yes     1.7e-14    yes  5.5e-13       27.8
    arm7.xml                      yes   9.8e-16      yes    yes     1.6e-15    yes  1.9e-03        9.3
    scara.xml                     yes   5.8e-16      yes    yes     5.6e-16    yes  2.5e-03        7.1

MuJoCo's export of example-robot-data URDFs (meshes stripped), rnea vs mj_inverse: ur10 7.8e-16,
ur3_gripper 9.8e-16, panda (coupled fingers) 6.0e-16, z1 2.4e-16, xarm7 6.1e-16, so101 1.3e-15,
talos_left_arm 4.4e-16.

Its row in benchmarks/README.md lists these figures.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import jaxid
import jaxid.data
from jaxid import results
from jaxid.cli import main
from jaxid.model import mjcf

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "mjcf"
MODELS = ["ur5_mujoco_export.xml", "arm7.xml", "scara.xml"]
TERMS = ("ia", "fv", "fc")


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - b)) / max(np.max(np.abs(b)), 1e-300))


def trajectory(robot, rng, seconds=20.0, rate=100.0):
    """t (N,), q, qd, qdd (N, n): five sines per joint at 0.1 .. 0.5 Hz, within 80 % of each
    joint's range about its centre (+-1 rad where unlimited)."""
    t = np.arange(0.0, seconds, 1 / rate)
    w = 2 * np.pi * 0.1 * np.arange(1, 6)
    a = rng.normal(size=(5, robot.n))
    lo, hi = np.asarray(robot.q_min), np.asarray(robot.q_max)
    finite = np.isfinite(lo) & np.isfinite(hi)
    half = np.where(finite, 0.8 * (hi - lo) / 2, 1.0) / np.sum(np.abs(a), axis=0)
    mid = np.where(finite, (lo + hi) / 2, 0.0)
    phase = np.outer(t, w)
    return t, mid + (np.sin(phase) @ a) * half, (np.cos(phase) * w) @ a * half, (-np.sin(phase) * w**2) @ a * half


def round_trip(name, folder, rng):
    import mujoco

    row = {"model": name}
    source = folder / name
    robot = jaxid.Robot.from_mjcf(source, joint_terms=TERMS)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 20, robot.n))
    row["read"] = relative(
        jaxid.rnea(robot.with_joint_terms(("ia", "fv"), robot.joint_params[:, :2]), q, qd, qdd),
        mjcf.mujoco_inverse(source, robot, q, qd, qdd),
    )
    t, q, qd, qdd = motion = trajectory(robot, rng)
    tau = mjcf.mujoco_inverse(source, robot, q, qd, qdd, friction=True)
    jaxid.data.write(jaxid.data.Dataset(t=t, q=q, qd=qd, qdd=qdd, tau=tau), folder / "run.csv")
    out, params = folder / "out" / f"id_{name}", folder / "params.json"
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                "identify",
                "--mjcf",
                str(source),
                "--joint-terms",
                ",".join(TERMS),
                "--consistent",
                "--mjcf-out",
                str(out),
                str(folder / "run.csv"),
                "-o",
                str(params),
                "--quiet",
            ]
        )
    row["identify_s"] = time.perf_counter() - start
    row["write"] = code == 0 and out.exists()
    try:
        model = mujoco.MjModel.from_xml_path(str(out))
        row["loads"] = True
    except Exception as exc:  # the row says it failed, with MuJoCo's reason
        row["loads"], row["error"] = False, str(exc)
        return row
    theta = np.asarray(results.load_params(params).standard)
    fc = robot.joint_terms.index("fc")
    no_fc = theta.copy()
    no_fc[10 * robot.n_joints + fc :: len(TERMS)] = 0.0
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 20, robot.n))
    predicted = np.stack([np.asarray(robot.torque(no_fc, *x)) for x in zip(q, qd, qdd)])
    row["after_write"] = relative(predicted, mjcf.mujoco_inverse(out, robot, q, qd, qdd))
    written_fc = [model.dof_frictionloss[model.joint(n).dofadr[0]] for n in robot.names]
    row["frictionloss_ok"] = bool(np.allclose(written_fc, robot.split(theta)[1][:, fc], rtol=1e-15))
    fit = np.stack([np.asarray(robot.torque(theta, *x)) for x in zip(*motion[1:])])
    row["fit_rms"] = float(np.sqrt(np.mean((fit - tau) ** 2) / np.mean(tau**2)))
    return row


#: example-robot-data URDFs whose MuJoCo export (meshes stripped) is read too, where installed.
EXPORTS = [
    "ur_description/urdf/ur10_robot.urdf",
    "ur_description/urdf/ur3_gripper.urdf",
    "panda_description/urdf/panda.urdf",
    "z1_description/urdf/z1.urdf",
    "xarm_description/urdf/xarm7.urdf",
    "so_arm_description/urdf/so101.urdf",
    "talos_data/robots/talos_left_arm.urdf",
]


def exports(folder, rng):
    """(urdf, joints, rel. error of rnea vs mj_inverse or the error) for MuJoCo's
    mj_saveLastXML of each EXPORTS URDF, its <visual>/<collision> removed (no meshes needed)."""
    import re

    import mujoco

    rows = []
    for rel in EXPORTS:
        try:
            text = Path(jaxid.models.example_robot_urdf(rel)).read_text()
        except FileNotFoundError:
            continue
        urdf, xml = folder / Path(rel).name, folder / (Path(rel).stem + "_export.xml")
        urdf.write_text(re.sub(r"<(visual|collision)\b.*?</\1>", "", text, flags=re.S))
        try:
            mujoco.mj_saveLastXML(str(xml), mujoco.MjModel.from_xml_path(str(urdf)))
            robot = jaxid.Robot.from_mjcf(xml, joint_terms=("ia", "fv"), check_inertia=False)
            q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 20, robot.n))
            err = relative(jaxid.rnea(robot, q, qd, qdd), mjcf.mujoco_inverse(xml, robot, q, qd, qdd))
            rows.append((Path(rel).stem, robot.n, f"{err:.1e}"))
        except Exception as exc:  # the row names the failure
            rows.append((Path(rel).stem, 0, f"{type(exc).__name__}: {exc}"[:90]))
    return rows


def run():
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for f in DATA.iterdir():
            shutil.copy(f, folder)
        (folder / "out").mkdir()
        for name in MODELS:
            rows.append(round_trip(name, folder, rng))
        exported = exports(folder, rng)
    print(
        f"{'model':24s} {'read ok':>8s} {'read err':>9s} {'write ok':>8s} {'loads':>6s} {'after write':>11s} "
        f"{'fc ok':>6s} {'fit rms':>8s} {'identify s':>10s}"
    )
    for r in rows:
        print(
            f"{r['model']:24s} {'yes':>8s} {r['read']:9.1e} {'yes' if r['write'] else 'NO':>8s} "
            f"{'yes' if r['loads'] else 'NO':>6s} {r.get('after_write', float('nan')):11.1e} "
            f"{'yes' if r.get('frictionloss_ok') else 'NO':>6s} {r.get('fit_rms', float('nan')):8.1e} {r['identify_s']:10.1f}"
        )
    print("\nMuJoCo's export (mj_saveLastXML) of example-robot-data URDFs, read by jaxid: rnea vs mj_inverse")
    for name, n, err in exported:
        print(f"{name:24s} {n:3d} joints  {err}")
    return rows


if __name__ == "__main__":
    run()
