"""The capsules jaxid fits to the meshes of example-robot-data arms, and an independent check.

For each link with a mesh: the capsule (radius, segment length), its volume over the mesh's
convex hull, the excess (Hausdorff distance from capsule to hull: how far the capsule reaches
past the mesh), the volume ratio of the principal-axis capsule the search starts from, and the
fit time. The independent check loads the same URDF with Pinocchio (its own package://
resolution, meshes read by coal through assimp), poses it at random joint angles, and measures
the largest distance by which any of its mesh vertices leaves the link's capsules in jaxid's
forward kinematics ("outside", m; <= 0 means every vertex is inside).

Robots: ur5 (collision .stl), ur5-dae (the same URDF with its collision elements removed, so the
visual .dae meshes are used, found through package_dirs), kinova (collision .dae). Needs pin and
example-robot-data (the bench extra) and trimesh + pycollada (the mesh extra).

    PYTHONPATH=. .venv/bin/python benchmarks/mesh_capsules.py [--robots ur5 kinova] [--poses 20] [--dense 600] [--json out.json]

Last figures (mesh branch, 2026-12-04, --poses 20 --dense 600, load 12-13, 4.5 min wall): capsule/hull
volume UR5 1.55-1.92 (the base plate 5.70; .dae 1.51-1.90), Kinova 1.29-2.20 (the principal-axis start
up to 2.03); excess 12-38 mm (UR5 base 66 mm); no one of 600 evenly spread axis directions gives a
smaller capsule than the search (dense/found 1.0000-1.69); Pinocchio + coal vertices outside the
capsules <= 4.4e-8 mm (all inside); from_urdf 3.6 s (UR5), 8.2 s (Kinova) without the cache. Row mesh_capsules.py of benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np

import jaxid
from jaxid.model import geometry, meshes


def share_folder() -> str:
    """The folder holding example-robot-data's package (cmeel's share/, next to Pinocchio)."""
    try:
        import example_robot_data

        return os.path.dirname(example_robot_data.getModelPath("ur_description/urdf/ur5_robot.urdf").rstrip("/"))
    except ImportError:
        pass
    import pinocchio

    p = os.path.dirname(pinocchio.__file__)
    while os.path.basename(p) != "cmeel.prefix":
        if os.path.dirname(p) == p:
            sys.exit("example-robot-data not found (pip install example-robot-data)")
        p = os.path.dirname(p)
    return os.path.join(p, "share")


ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "ur_description/srdf/ur5.srdf", "collision"),
    "ur5-dae": ("ur_description/urdf/ur5_robot.urdf", "ur_description/srdf/ur5.srdf", "visual"),
    "kinova": ("kinova_description/robots/kinova.urdf", "kinova_description/srdf/kinova.srdf", "collision"),
}


def study(name, share, poses, seed=0, dense=0):
    """Rows (one per mesh capsule) of one robot, and its worst 'outside' over ``poses`` poses."""
    import pinocchio as pin

    rel, srdf, kind = ROBOTS[name]
    robots = os.path.join(share, "example-robot-data", "robots")
    urdf = os.path.join(robots, rel)
    tmp = None
    if kind == "visual":  # the visual meshes: a copy without <collision>, outside the package
        tmp = tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False)
        tmp.write(re.sub(r"<collision>.*?</collision>", "", open(urdf).read(), flags=re.S))
        tmp.close()
        urdf = tmp.name
    robot = jaxid.Robot.from_urdf(urdf)
    meshes._FOUND.clear()
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every mesh must be read: no skeleton fallback
        caps = geometry.from_urdf(urdf, robot, srdf=os.path.join(robots, srdf), package_dirs=[share])
    wall = time.perf_counter() - t
    rows = []
    for f in caps.fits:
        path = meshes.resolve_mesh(f.mesh, urdf, [share])
        V = meshes.read_mesh(path)
        start = meshes._capsule_along(V - V.mean(axis=0), np.linalg.svd(V - V.mean(axis=0))[2][0])[0]
        hull = meshes._hull(V)[1]
        # the smallest capsule over `dense` evenly spread axis directions, over the one found
        found = np.pi * f.radius**2 * f.length + 4 / 3 * np.pi * f.radius**3
        U = meshes._fibonacci_sphere(2 * dense)
        grid = min(meshes._capsule_along(V - V.mean(axis=0), u, [])[0] for u in U[U[:, 2] >= 0]) if dense else np.nan
        rows.append(
            dict(
                robot=name,
                link=f.link,
                mesh=os.path.basename(f.mesh),
                radius_mm=1e3 * f.radius,
                length_mm=1e3 * f.length,
                volume_ratio=f.volume_ratio,
                principal_axis_ratio=start / hull if hull > 0 else float("inf"),
                dense_over_found=grid / found,
                excess_mm=1e3 * f.excess,
            )
        )
    # Pinocchio + coal: the same meshes, posed by Pinocchio, against jaxid's capsules.
    model, geom = pin.buildModelsFromUrdf(
        urdf, [share], geometry_types=pin.GeometryType.VISUAL if kind == "visual" else pin.GeometryType.COLLISION
    )
    data, gdata = model.createData(), pin.GeometryData(geom)
    rng = np.random.default_rng(seed)
    from jaxid.dynamics.rnea import forward_kinematics_rp

    worst = -np.inf
    for _ in range(poses):
        q = rng.uniform(-np.pi, np.pi, robot.n)
        qp = pin.neutral(model)
        for k, jn in enumerate(robot.names):
            j = model.joints[model.getJointId(jn)]
            if j.nq == 2:  # continuous: (cos, sin)
                qp[j.idx_q : j.idx_q + 2] = np.cos(q[k]), np.sin(q[k])
            else:
                qp[j.idx_q] = q[k]
        pin.forwardKinematics(model, data, qp)
        pin.updateGeometryPlacements(model, data, geom, gdata)
        A, B = (np.asarray(x) for x in caps.world(*forward_kinematics_rp(robot, q)))
        for g, go in enumerate(geom.geometryObjects):
            link = model.frames[go.parentFrame].name
            mine = [i for i, n in enumerate(caps.names) if n == link]
            if not mine or not hasattr(go.geometry, "vertices"):
                continue
            M = gdata.oMg[g]
            X = np.asarray(go.geometry.vertices()) @ M.rotation.T + M.translation
            d = np.min([meshes._segment_distance(X, A[i], B[i]) - caps.radius[i] for i in mine], axis=0)
            worst = max(worst, float(d.max()))
    if tmp is not None:
        os.unlink(tmp.name)
    return rows, worst, wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    p.add_argument("--poses", type=int, default=20, help="random poses of the Pinocchio check")
    p.add_argument("--json", help="write the rows as JSON")
    p.add_argument(
        "--dense", type=int, default=0, metavar="N", help="also the best capsule over N evenly spread axis directions"
    )
    args = p.parse_args(argv)
    share = share_folder()
    out = []
    print(
        f"{'robot':<8} {'link':<28} {'mesh':<24} {'r mm':>6} {'len mm':>7} {'cap/hull':>8} "
        f"{'PCA start':>9} {'excess mm':>9} {'dense/found':>11}"
    )
    for name in args.robots:
        rows, worst, wall = study(name, share, args.poses, dense=args.dense)
        for r in rows:
            print(
                f"{r['robot']:<8} {r['link']:<28} {r['mesh']:<24} {r['radius_mm']:6.1f} {r['length_mm']:7.1f} "
                f"{r['volume_ratio']:8.2f} {r['principal_axis_ratio']:9.2f} {r['excess_mm']:9.1f} {r['dense_over_found']:11.4f}"
            )
        print(
            f"{name}: {len(rows)} mesh capsules in {wall:.1f} s (from_urdf, no cache); Pinocchio+coal vertices "
            f"over {args.poses} poses: largest distance outside the capsules {1e3 * worst:.2g} mm"
        )
        out.append(dict(robot=name, rows=rows, outside_m=worst, wall_s=wall))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
