"""URDF write-back on example-robot-data files: patched, not rewritten, and loaded by Pinocchio.

For each file (copied into a temporary folder; read with ``check_inertia=False``, mimic joints
independent as Pinocchio reads them, joint terms fv, fc): identified parameters are made up
as a physically consistent change of every body (each body scaled by 1 to 1.3 plus a point
mass of 5 to 50 % of it at a random point within 5 cm, both consistent, so their sum is) and
random friction; ``jaxid.model.urdf.write_back`` writes them into a copy. Measured: the
lines that differ (``difflib``) and whether each lies inside an ``<inertial>`` or
``<dynamics>`` element of its file (want: all); whether the links jaxid did not identify
(fingers, fixed links) kept their ``<inertial>`` bytes; Pinocchio's ``buildModelFromUrdf`` of
the result and its ``rnea`` against jaxid's torque with the made-up parameters (rigid-body
part) at random states, as max |a - b| / max |b| (want <= 1e-9).

    python benchmarks/urdf_writeback.py [--only ur5,panda] [--states 5]

Measured at d12ab9b: 11 of 11 rows (10 files, and the Panda to ``panda_link8``): no differing line
outside ``<inertial>``/``<dynamics>``, other links' ``<inertial>`` kept, Pinocchio within 1.5e-15.

Its row in benchmarks/README.md lists its last figures.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import jaxid
from jaxid.model import inertia
from jaxid.model.urdf import _nodes, _walk, write_back
from jaxid.models import example_robot_urdf

URDFS = [
    "ur_description/urdf/ur5_robot.urdf",
    "ur_description/urdf/ur3_gripper.urdf",
    "panda_description/urdf/panda.urdf",
    ("panda_description/urdf/panda.urdf", "panda_link8"),  # hand and fingers merged into link 7
    "kinova_description/robots/kinova.urdf",
    "z1_description/urdf/z1.urdf",
    "xarm_description/urdf/xarm7.urdf",
    "so_arm_description/urdf/so101.urdf",
    "talos_data/robots/talos_left_arm.urdf",
    "baxter_description/urdf/baxter.urdf",
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
]
TERMS = ("fv", "fc")


def made_up(robot, rng):
    """theta (p,): every body scaled by 1..1.3 plus a consistent point mass, friction > 0."""
    bodies = []
    for pi in np.asarray(robot.inertial):
        m0 = max(pi[0], 0.1) * rng.uniform(0.05, 0.5)
        extra = inertia.from_mass_com_inertia(m0, rng.uniform(-0.05, 0.05, 3), 1e-4 * m0 * np.eye(3))
        bodies.append(rng.uniform(1.0, 1.3) * pi + np.asarray(extra))
    joint = rng.uniform(0.1, 2.0, (robot.n_joints, len(TERMS)))
    return np.concatenate([np.ravel(bodies), joint.ravel()])


def marked_lines(data: bytes, tags=("inertial", "dynamics")):
    """0-based numbers of the lines touched by an element with one of ``tags`` in ``data``."""
    lines = set()
    for node in _walk(_nodes(data, "file")):
        if node.tag in tags:
            lines.update(range(data.count(b"\n", 0, node.start), data.count(b"\n", 0, node.end) + 1))
    return lines


def outside_lines(old: bytes, new: bytes):
    """Lines that differ between the two files and lie outside their <inertial>/<dynamics>
    elements: (old line numbers, new line numbers), and the number of differing lines."""
    a, b = old.decode().split("\n"), new.decode().split("\n")
    ma, mb = marked_lines(old), marked_lines(new)
    bad_a, bad_b, changed = [], [], 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        changed += max(i2 - i1, j2 - j1)
        bad_a += [i for i in range(i1, i2) if i not in ma]
        bad_b += [j for j in range(j1, j2) if j not in mb]
    return bad_a, bad_b, changed


def inertial_bytes(data: bytes):
    """{link name: bytes of its <inertial> element}."""
    root = _nodes(data, "file")
    return {link.attrs.get("name"): data[i.start : i.end] for link in root.find("link") for i in link.find("inertial")}


def pinocchio_error(robot, theta, out, rng, states):
    """max |tau_pin - tau_jaxid| / max |tau_pin| over random states (rigid-body part)."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(out))
    locked = [i for i in range(1, model.njoints) if model.names[i] not in robot.names]
    if locked:  # joints beyond the tip: locked at zero, as jaxid merges their links
        model = pin.buildReducedModel(model, locked, pin.neutral(model))
    data = model.createData()
    if model.nv != robot.n:
        raise AssertionError(f"Pinocchio has {model.nv} velocities, jaxid {robot.n} joints")
    ids = [model.getJointId(name) for name in robot.names]  # Pinocchio may order a tree otherwise
    iv = np.array([model.joints[i].idx_v for i in ids])
    rigid = np.array(theta)
    rigid[10 * robot.n_joints :] = 0.0

    def config(q):
        x = np.zeros(model.nq)
        for value, i in zip(q, ids):
            j = model.joints[i]
            x[j.idx_q : j.idx_q + j.nq] = [np.cos(value), np.sin(value)] if j.nq == 2 else [value]
        return x

    def pin_order(v):
        x = np.zeros(model.nv)
        x[iv] = v
        return x

    q, qd, qdd = rng.uniform(-1, 1, (3, states, robot.n))
    ours = np.asarray(jaxid.rnea(robot.with_parameters(rigid), q, qd, qdd))
    theirs = np.stack(
        [pin.rnea(model, data, config(q[k]), pin_order(qd[k]), pin_order(qdd[k]))[iv] for k in range(states)]
    )
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def run(rel, folder, states=5, seed=0):
    """One row: (name, joints, lines differing, outside inertial/dynamics, untouched links kept,
    Pinocchio relative error, seconds). rel: a file, or (file, tip_link)."""
    t0 = time.perf_counter()
    rel, tip = (rel, None) if isinstance(rel, str) else rel
    source = Path(folder) / Path(rel).name
    shutil.copy(example_robot_urdf(rel), source)
    robot = jaxid.Robot.from_urdf(source, check_inertia=False, mimic="independent", joint_terms=TERMS, tip_link=tip)
    rng = np.random.default_rng(seed)
    theta = made_up(robot, rng)
    out = write_back(robot, theta, source, source.with_name(source.stem + "_identified.urdf"))
    old, new = source.read_bytes(), out.read_bytes()
    bad_a, bad_b, changed = outside_lines(old, new)
    child = {robot_link for robot_link in _child_links(old, robot.names)}
    before, after = inertial_bytes(old), inertial_bytes(new)
    kept = all(after.get(name) == data for name, data in before.items() if name not in child)
    err = pinocchio_error(robot, theta, out, rng, states)
    name = Path(rel).stem + (f" (tip {tip})" if tip else "")
    return name, robot.n, changed, len(bad_a) + len(bad_b), kept, err, time.perf_counter() - t0


def _child_links(data: bytes, names):
    root = _nodes(data, "file")
    return [c.attrs["link"] for j in root.find("joint") if j.attrs.get("name") in names for c in j.find("child")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated substrings of the file names")
    parser.add_argument("--states", type=int, default=5)
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for rel in URDFS:
            if only and not any(s in str(rel) for s in only):
                continue
            try:
                rows.append(run(rel, folder, args.states))
            except Exception as e:  # noqa: BLE001 -- a row says why
                rows.append((str(rel), "-", "-", "-", "-", f"{type(e).__name__}: {e}"[:120], 0.0))
            print(*rows[-1], flush=True)
    head = (
        "urdf",
        "joints",
        "lines differing",
        "outside inertial/dynamics",
        "other inertials kept",
        "pinocchio rnea rel. err",
        "s",
    )
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(f"{x:.2g}" if isinstance(x, float) else str(x) for x in r) + " |")
    good = [r for r in rows if r[3] == 0 and r[4] is True and isinstance(r[5], float) and r[5] <= 1e-9]
    print(f"\n{len(good)} of {len(rows)} files: only <inertial>/<dynamics> lines differ, others kept, Pinocchio agrees")
    return int(len(good) < len(rows))


if __name__ == "__main__":
    raise SystemExit(main())
