"""Base parameter sets over PRNG keys, joint terms and placeholder limits, on example-robot-data URDFs.

For each file (read with ``check_inertia=False``; mimic joints coupled): the base set of
``jaxid.identification.base.base_parameters`` for keys 0..K-1 (``--keys``, default 10), without
joint terms and with ``fv, fc, ia``; the number of distinct sets (want 1), whether the
inertial part of the set is the same with the joint terms (want yes), the rank, and the
smallest gap (kept over dropped column distance). Then the same file with every revolute and
prismatic ``<limit lower upper>`` set to the placeholder ``0 0``: its rank (want the same as with
the real limits; a warning names the joints).

    python benchmarks/base_sets.py [--keys 10] [--only ur5,panda]

Measured at d12ab9b (10 keys): 13 of 13 files one set, also with joint terms, whose inertial
part they leave unchanged; full rank with placeholder limits. Smallest margin of the decisions
from the tolerance: Kinova 11 (m2 at 9e-10, from rounded angles in the file, 3 % spread over keys).

At a0c50a9 (3 keys, 2026-12-07), with ``UNSEEN`` for the rigid-body inertial columns: 13 of 13 one
set, invariant, full with placeholder limits; every rank as before but SO-100 and SO-101, 38 -> 36
(two columns only their rpy="1.5708" rounding makes independent, dropped). Their margins, kept
distance or dropped one against ``UNSEEN``: a near-copy 5.7e-4 (SO-101) and 2.1e-4 (SO-100) from
the span, 1.75x and 4.8x under it; every kept inertial column at least 0.22.

Its row in benchmarks/README.md lists its last figures.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import jaxid
from jaxid.identification.base import TOL, UNSEEN, base_parameters
from jaxid.models import example_robot_urdf

URDFS = [
    "ur_description/urdf/ur3_robot.urdf",
    "ur_description/urdf/ur5_robot.urdf",
    "ur_description/urdf/ur10_robot.urdf",
    "panda_description/urdf/panda.urdf",
    "kinova_description/robots/kinova.urdf",
    "z1_description/urdf/z1.urdf",
    "xarm_description/urdf/xarm7.urdf",
    "so_arm_description/urdf/so100.urdf",
    "so_arm_description/urdf/so101.urdf",
    "talos_data/robots/talos_left_arm.urdf",
    "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "finger_edu_description/robots/finger_edu.urdf",
    "baxter_description/urdf/baxter.urdf",
]
TERMS = ("fv", "fc", "ia")


def sets_over_keys(robot, keys):
    """(distinct index sets, ranks, smallest gap, margin) of the base set over ``keys``. The
    margin is how far every decision sits from its tolerance: the least over keys of
    min(smallest kept distance / tol, tol / largest nonzero dropped distance), tol = ``UNSEEN``
    for the rigid-body inertial columns and TOL for the others (a set can change with the key
    only where a column's distance, which varies by a few % over keys, crosses its tol)."""
    found, gaps, ranks, margin = set(), [], set(), np.inf
    tol = np.full(len(robot.parameter_names()), TOL)
    tol[: np.size(robot.inertial)] = max(TOL, UNSEEN)
    for key in keys:
        b = base_parameters(robot, key=key)
        found.add(tuple(int(i) for i in b.indices))
        gaps.append(b.gap)
        ranks.add(b.rank)
        r = np.asarray(b.r_diag) / tol
        dropped = r[np.asarray(b.dependent)]
        dropped = dropped[dropped > 0]
        margin = min(margin, r[np.asarray(b.indices)].min(), 1 / dropped.max() if dropped.size else np.inf)
    return found, ranks, min(gaps), margin


def placeholder_copy(path, folder):
    """A copy of the URDF with every ``<limit lower= upper=>`` set to 0 0 (a placeholder)."""
    text = Path(path).read_text()
    text = re.sub(r'lower\s*=\s*"[^"]*"', 'lower="0"', text)
    text = re.sub(r'upper\s*=\s*"[^"]*"', 'upper="0"', text)
    out = Path(folder) / Path(path).name
    out.write_text(text)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--only", default="", help="comma-separated substrings of the file names")
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s]
    keys = range(args.keys)
    rows = []
    folder = tempfile.mkdtemp()
    for rel in URDFS:
        if only and not any(s in rel for s in only):
            continue
        path = example_robot_urdf(rel)
        t0 = time.perf_counter()
        plain = jaxid.Robot.from_urdf(path, check_inertia=False)
        terms = jaxid.Robot.from_urdf(path, check_inertia=False, joint_terms=TERMS)
        s0, r0, g0, m0 = sets_over_keys(plain, keys)
        s1, r1, g1, m1 = sets_over_keys(terms, keys)
        p0 = len(plain.parameter_names())
        # the inertial columns come first in both models: the same indices below p0
        invariant = {tuple(i for i in s if i < p0) for s in s1} == s0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            flat = jaxid.Robot.from_urdf(placeholder_copy(path, folder), check_inertia=False)
            rp = base_parameters(flat, key=0).rank
        # want a warning wherever the copy has a joint held at one value
        warned = any("placeholder" in str(w.message) for w in caught) == bool(np.any(flat.q_max <= flat.q_min))
        rows.append(
            (
                Path(rel).stem,
                plain.n,
                p0,
                len(s0),
                len(s1),
                invariant,
                min(r0),
                min(r1),
                min(g0, g1),
                min(m0, m1),
                rp,
                warned,
                time.perf_counter() - t0,
            )
        )
        print(*rows[-1], flush=True)
    head = (
        "urdf",
        "n",
        "p",
        "sets",
        "sets+terms",
        "inertial same",
        "rank",
        "rank+terms",
        "min gap",
        "margin",
        "rank 0-limits",
        "warned if flat",
        "s",
    )
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in rows:
        cells = [f"{x:.3g}" if isinstance(x, float) else str(x) for x in r]
        print("| " + " | ".join(cells) + " |")
    bad = [r[0] for r in rows if r[3] != 1 or r[4] != 1 or not r[5] or r[10] != r[6] or not r[11]]
    print(
        f"\n{len(rows) - len(bad)} of {len(rows)} files: one set over {args.keys} keys, invariant, full with 0-limits"
        + (f"; not: {bad}" if bad else "")
    )
    return int(len(bad) > 0)


if __name__ == "__main__":
    raise SystemExit(main())
