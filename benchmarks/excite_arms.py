"""``jaxid excite --urdf X.urdf`` at its defaults on the arms of example-robot-data, each written
trajectory checked by an independent collision check on the real meshes (issue 33).

For every arm: ``jaxid excite --urdf URDF [--srdf SRDF] [--tip-link L]`` (the SRDF where the
package has one; nothing else set) run as a user runs it, in a fresh process with an empty jaxid
cache (cold) and, with ``--warm``, again on the cache it filled (warm). The written trajectory
(CSV) is then checked with Pinocchio + coal on the URDF's own collision meshes
(``pinocchio.buildGeomFromUrdf`` with the example-robot-data package folder), not jaxid's
capsules:

- self-collision: every pair of collision objects on different joints, less parent/child
  joints, less the SRDF's ``disable_collisions`` pairs (``pinocchio.removeCollisionPairs``)
  or, without an SRDF, less the pairs in contact in every one of 200 random poses (what the
  MoveIt Setup Assistant disables as "Always");
- a table plane z = 0 of the base frame (a coal ``Halfspace``) against every object whose
  distance to it changes with the joints (objects on the base, or turning only about a
  vertical axis through it, stand on the table as the base does).

The least distance over all the trajectory's samples must be >= 1 cm ("ok"); a run that
writes nothing must end on a one-line reason naming what to set ("stopped"). Printed (and
written with ``--out``): robot, the home used (centres or searched), cond, least mesh
clearance self/floor, wall s cold/warm.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/excite_arms.py [--robots ur5,panda] [--quick]
[--warm] [--out benchmarks/excite_arms.txt]``; ``--quick`` passes ``--starts 2 --steps 20``
(for development: the defaults take minutes per arm). Needs pinocchio (with coal) and
example-robot-data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jaxid.models import example_robot_urdf

#: name -> (URDF, SRDF or None, tip link or None), paths relative to example-robot-data's robots/.
ARMS = {
    "ur3": ("ur_description/urdf/ur3_robot.urdf", None, None),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "ur_description/srdf/ur5.srdf", None),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", None, None),
    "ur5_limited": (
        "ur_description/urdf/ur5_joint_limited_robot.urdf",
        "ur_description/srdf/ur5_joint_limited_robot.srdf",
        None,
    ),
    "panda": ("panda_description/urdf/panda.urdf", "panda_description/srdf/panda.srdf", "panda_link8"),
    "kinova": ("kinova_description/robots/kinova.urdf", "kinova_description/srdf/kinova.srdf", None),
    "z1": ("z1_description/urdf/z1.urdf", "z1_description/srdf/z1.srdf", None),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", "xarm_description/srdf/xarm7.srdf", None),
    "so100": ("so_arm_description/urdf/so100.urdf", None, None),
    "so101": ("so_arm_description/urdf/so101.urdf", None, None),
    "talos_left_arm": ("talos_data/robots/talos_left_arm.urdf", "talos_data/srdf/talos.srdf", None),
}

QUICK = ["--starts", "2", "--steps", "20"]
CLEARANCE = 0.01  # m, required of the mesh check


def _robots_dir() -> str:
    u = example_robot_urdf("ur_description/urdf/ur5_robot.urdf")
    return str(Path(u).parents[2])


def excite(name: str, work: Path, cache: Path, extra: list[str]) -> dict:
    """Run ``jaxid excite`` on arm ``name`` in a fresh process; its figures, wall time and the
    last stderr line when it wrote nothing."""
    urdf, srdf, tip = ARMS[name]
    root = _robots_dir()
    out = work / f"{name}.csv"
    cmd = [sys.executable, "-m", "jaxid", "excite", "--urdf", os.path.join(root, urdf), "-o", str(out)]
    cmd += ["--srdf", os.path.join(root, srdf)] if srdf else []
    cmd += ["--tip-link", tip] if tip else []
    cmd += extra + ["--json", str(work / f"{name}.json"), "--quiet"]
    env = dict(os.environ, JAXID_CACHE_DIR=str(cache))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    res = dict(wall=wall, rc=p.returncode, output=str(out))
    if p.returncode == 0:
        res.update(json.loads((work / f"{name}.json").read_text()))
    else:
        lines = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
        res["reason"] = lines[-1] if lines else f"exit status {p.returncode}"
    return res


class MeshCheck:
    """Pinocchio + coal distances of an arm's collision meshes (see the module docstring)."""

    def __init__(self, name: str, floor: float = 0.0, seed: int = 0):
        import coal
        import pinocchio as pin

        self.pin = pin
        urdf, srdf, _ = ARMS[name]
        root = _robots_dir()
        path = os.path.join(root, urdf)
        self.model = pin.buildModelFromUrdf(path)
        geom = pin.buildGeomFromUrdf(
            self.model, path, pin.GeometryType.COLLISION, package_dirs=[root, str(Path(root).parents[1])]
        )
        n_obj = len(geom.geometryObjects)
        plane = pin.GeometryObject("table", 0, pin.SE3.Identity(), coal.Halfspace(np.array([0.0, 0.0, 1.0]), floor))
        k_plane = geom.addGeometryObject(plane)
        parents = self.model.parents
        joint = [g.parentJoint for g in geom.geometryObjects]
        for i in range(n_obj):
            for j in range(i + 1, n_obj):
                a, b = joint[i], joint[j]
                if a != b and parents[a] != b and parents[b] != a:
                    geom.addCollisionPair(pin.CollisionPair(i, j))
        if srdf:
            pin.removeCollisionPairs(self.model, geom, os.path.join(root, srdf))
        for i in range(n_obj):
            if joint[i] != 0:
                geom.addCollisionPair(pin.CollisionPair(i, k_plane))
        self.geom, self.k_plane = geom, k_plane
        self.data, self.gdata = self.model.createData(), pin.GeometryData(geom)
        rng = np.random.default_rng(seed)
        lo = np.where(np.isfinite(self.model.lowerPositionLimit), self.model.lowerPositionLimit, -np.pi)
        hi = np.where(np.isfinite(self.model.upperPositionLimit), self.model.upperPositionLimit, np.pi)
        samples = [self._config_from_angles(lo + (hi - lo) * rng.uniform(size=lo.shape)) for _ in range(200)]
        d = np.array([self.distances(q) for q in samples])  # (200, pairs)
        pairs = self.geom.collisionPairs
        plane_pair = np.array([k_plane in (p.first, p.second) for p in pairs])
        # Objects whose distance to the table no joint changes stand on it as the base does; pairs
        # in contact in every pose (without an SRDF) are what the Setup Assistant disables.
        drop = plane_pair & (np.ptp(d, axis=0) < 1e-6)
        if not srdf:
            drop |= ~plane_pair & np.all(d <= 0.0, axis=0)
        keep = [p for p, x in zip(list(pairs), drop) if not x]
        self.dropped = [self._label(p) for p, x in zip(list(pairs), drop) if x]
        self.geom.removeAllCollisionPairs()
        for p in keep:
            self.geom.addCollisionPair(p)
        self.gdata = pin.GeometryData(self.geom)
        self.is_plane = np.array([k_plane in (p.first, p.second) for p in self.geom.collisionPairs])

    def _label(self, p):
        g = self.geom.geometryObjects
        return f"{g[p.first].name}/{g[p.second].name}"

    def _config_from_angles(self, x):
        """A Pinocchio configuration from one value per position coordinate slot (continuous
        joints: the first of their two slots read as the angle)."""
        q = self.pin.neutral(self.model)
        for jid in range(1, self.model.njoints):
            j = self.model.joints[jid]
            if j.nq == 1:
                q[j.idx_q] = x[j.idx_q]
            elif j.nq == 2 and j.nv == 1:  # continuous: cos, sin
                q[j.idx_q : j.idx_q + 2] = np.cos(x[j.idx_q]), np.sin(x[j.idx_q])
        return q

    def config(self, names, values):
        """A Pinocchio configuration with the named joints at values (rad); others neutral."""
        q = self.pin.neutral(self.model)
        for name, v in zip(names, values):
            j = self.model.joints[self.model.getJointId(name)]
            if j.nq == 1:
                q[j.idx_q] = v
            else:
                q[j.idx_q : j.idx_q + 2] = np.cos(v), np.sin(v)
        return q

    def distances(self, q):
        self.pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        return np.array([r.min_distance for r in self.gdata.distanceResults])

    def check(self, names, Q):
        """(least self distance, its pair, least table distance, its object) over poses Q (N, n), m."""
        d = np.array([self.distances(self.config(names, q)) for q in Q])
        worst = d.min(axis=0)
        out = []
        for mask in (~self.is_plane, self.is_plane):
            idx = np.flatnonzero(mask)
            if not idx.size:
                out += [np.inf, "-"]
                continue
            k = idx[np.argmin(worst[idx])]
            out += [float(worst[k]), self._label(self.geom.collisionPairs[int(k)])]
        return tuple(out)


def _trajectory(path: str, names_count: int) -> np.ndarray:
    """q (N, n) of a written CSV trajectory."""
    table = np.genfromtxt(path, delimiter=",", names=True)
    return np.stack([table[f"q{i + 1}"] for i in range(names_count)], axis=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default=",".join(ARMS))
    ap.add_argument("--quick", action="store_true", help="--starts 2 --steps 20 (development)")
    ap.add_argument("--warm", action="store_true", help="also time a second run on the filled cache")
    ap.add_argument("--out", help="also append the table's rows to this file")
    ap.add_argument("--flags", default="", help="further jaxid excite flags, e.g. '--capsule-radius 0.08'")
    args = ap.parse_args(argv)
    extra = (QUICK if args.quick else []) + args.flags.split()
    header = (
        f"{'robot':<15}{'home':<44}{'cond':>8}{'self mm':>9}  {'closest pair':<34}"
        f"{'table mm':>9}  {'lowest object':<24}{'cold s':>7}{'warm s':>7}  verdict"
    )
    rows, walls = [header], []
    print(header, flush=True)
    if args.out:
        Path(args.out).write_text(f"# jaxid excite {' '.join(extra) or 'at defaults'}\n{header}\n")
    for name in args.robots.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            work, cache = Path(tmp), Path(tmp) / "cache"
            cold = excite(name, work, cache, extra)
            walls.append(cold["wall"])
            warm = excite(name, work, cache, extra) if args.warm and cold["rc"] == 0 else None
            wt = f"{warm['wall']:>7.0f}" if warm else f"{'-':>7}"
            if cold["rc"] != 0:
                row = (
                    f"{name:<15}{'-':<44}{'-':>8}{'-':>9}  {'-':<34}{'-':>9}  {'-':<24}{cold['wall']:>7.0f}{wt}  "
                    f"stopped: {cold['reason']}"
                )
            else:
                check = MeshCheck(name)
                Q = _trajectory(cold["output"], cold["joints"])
                from jaxid.workflow.commands import ModelSpec
                from jaxid.workflow.commands.common import build_model

                urdf, _, tip = ARMS[name]
                robot, _ = build_model(ModelSpec(urdf=os.path.join(_robots_dir(), urdf), tip_link=tip))
                names = list(robot.names)
                d_self, pair, d_table, obj = check.check(names, Q)
                home = ("searched " if cold.get("home_note") else "centres ") + str(np.round(cold["home"], 2).tolist())
                ok = cold["feasible"] and min(d_self, d_table) >= CLEARANCE
                verdict = "ok" if ok else ("INFEASIBLE" if not cold["feasible"] else "CLEARANCE < 1 cm")
                row = (
                    f"{name:<15}{home[:43]:<44}{cold['cond']:>8.3g}{1e3 * d_self:>9.0f}  {pair[:33]:<34}"
                    f"{1e3 * d_table:>9.0f}  {obj.split('/')[0][:23]:<24}{cold['wall']:>7.0f}{wt}  {verdict}"
                )
        rows.append(row)
        print(row, flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(row + "\n")
    if walls:
        line = f"median cold wall time {np.median(walls):.0f} s over {len(walls)} arms"
        print(line)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
