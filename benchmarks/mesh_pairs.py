"""The setup of ``jaxid excite``'s mesh-distance constraints on example-robot-data URDFs: the
link pairs whose capsules cannot be apart, each given a lower bound of its meshes' distance
(``jaxid.excitation.mesh_distance.build_pair``: spheres covering one mesh, a distance grid of the
other), as ``excite`` builds them at its defaults (clearance 0.02 m, 500 sampled poses).

For each robot: the wall time of ``excitation.constraints.mesh_pairs`` alone (capsules and meshes
read before the clock starts), the pairs it looked at, and its note for each (the bound it keeps,
or why the pair stays on its capsule rule). The setup has no in-process baseline (the previous
algorithm is not kept); the figures below compare commits, each in its own process.

    PYTHONPATH=. .venv/bin/python benchmarks/mesh_pairs.py [--robots so101 twodofs ...]

Measured 2026-12-07 (2 cores, load ~1), seconds of mesh_pairs, 94bfd80 -> this commit, each in
its own process: so101 (3 pairs, 67k-80k triangles per mesh) 21.8 -> 8.6; TwoDofs (one pair, 63k /
69k triangles, the meshes within a few mm in every pose: left on its capsule rule either way)
73.4 -> 15.9; talos_left_arm (2 pairs) 63.6 -> 10.1; the same decisions and kept bounds within
1 mm (so101 base/upper arm kept >= 20 mm, wrist/jaw >= 7 mm; talos arm 5/3 >= 8 mm). The time
went to exact k-d tree queries of B over the poses (now within 1.2x of the nearest distance, a
sizing only), a k-d tree of all samples and a sort rebuilt for every sphere size tried (now once,
the tree built with midpoint splits), a Python pass over every sample per cover (now a block at a
time) and full covers at sizes that cannot fit the sphere budget (now ruled out on one sample per
3 mm cube first). Baxter's left arm (tip left_wrist) has no pair that needs its meshes.
Needs example-robot-data (the bench extra) and trimesh + pycollada (the mesh extra).
"""

from __future__ import annotations

import argparse
import time

ROBOTS = {
    "so101": ("so_arm_description/urdf/so101.urdf", None),
    "twodofs": ("asr_twodof_description/urdf/TwoDofs.urdf", None),
    "talos_left_arm": ("talos_data/robots/talos_left_arm.urdf", None),
    "baxter_left": ("baxter_description/urdf/baxter.urdf", "left_wrist"),
}


def setup(name, clearance=0.02):
    """(seconds, notes) of mesh_pairs for one robot of ROBOTS, at excite's defaults."""
    import jaxid
    from jaxid.excitation.constraints import mesh_pairs, relaxed_pairs
    from jaxid.model import geometry

    path, tip = ROBOTS[name]
    urdf = jaxid.models.example_robot_urdf(path)
    robot = jaxid.Robot.from_urdf(urdf, tip_link=tip)
    caps = geometry.from_urdf(urdf, robot, tip_link=tip, drop_always=False)
    own, fixed = relaxed_pairs(robot, caps, clearance)
    names = sorted({caps.names[k] for row in (*own, *fixed) for k in row[:2]})
    tris = geometry.link_triangles(urdf, robot, names, base_link=None)
    t = time.perf_counter()
    _, _, _, notes = mesh_pairs(robot, caps, tris, clearance, own, fixed)
    return time.perf_counter() - t, notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=list(ROBOTS))
    args = parser.parse_args(argv)
    for name in args.robots:
        try:
            seconds, notes = setup(name)
        except (ImportError, FileNotFoundError) as e:
            print(f"{name}: skipped ({e}); needs example-robot-data and the mesh extra")
            continue
        print(f"{name}: mesh_pairs {seconds:.1f} s, {len(notes)} pair(s)")
        for line in notes:
            print(f"  {line}")


if __name__ == "__main__":
    main()
