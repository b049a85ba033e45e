"""Cold and warm `jaxid` commands with XLA:CPU's fusion emitters (XLA's default) and with the
classic emitters jaxid selects (``jaxid.hostdevices.COMPILE_FLAG``), interleaved, in fresh processes.

    python benchmarks/xla_flags.py [--repeat R] [--tests]

Each command runs under both settings, alternately: first from an empty persistent cache (a cold
start: compiling), then again from that cache (warm: running). The baseline sets
``XLA_FLAGS=--xla_cpu_use_fusion_emitters=true``, the documented opt-out, so jaxid leaves the flag
as it is. Prints wall and CPU seconds (medians of R pairs), the programs XLA compiled and the
ratio jaxid / baseline; CPU time is the better figure on a shared machine. ``--tests`` also times
two compile-bound test files (tests/test_dynamics.py, tests/test_lugre.py) without the cache.
``--xla_backend_optimization_level=0`` is not offered: it changes results (three tests fail).

Measured 2026-12-06 at 75ab3f6, 2 CPUs, load 1.2-2.3 (one run each; cold = empty cache), wall / CPU s,
XLA's fusion emitters -> jaxid's classic ones (ratio of CPU):

    excite (2 x 60 steps)   cold 17.2 / 25.3 -> 13.5 / 18.7 (0.74)   warm 2.9 / 3.3 -> 2.9 / 3.3
    simulate                cold  5.1 /  6.6 ->  5.0 /  5.9 (0.90)   warm 2.1 -> 2.9 (noise: 6 more runs each, 2.25 both)
    identify UR5            cold  5.8 /  6.5 ->  4.2 /  5.0 (0.77)   warm 1.8 -> 2.0
    identify KUKA           cold  5.7 /  6.9 ->  4.5 /  5.1 (0.75)   warm 2.6 -> 3.1 (6 more runs each: median 2.48 vs 2.48, CPU 2.2 both)
    identify KUKA --consistent  cold 28.1 / 33.9 -> 23.7 / 27.3 (0.80)   warm 16.5 / 17.9 -> 17.2 / 18.4
    validate KUKA           cold  4.2 /  4.9 ->  3.5 /  3.9 (0.79)   warm 2.0 -> 1.9

The same programs compile (59, 40, 56, 36, 196, 46). ``--tests`` (measured by hand, both settings
at once on the 2 cores, no cache): tests/test_dynamics.py + tests/test_lugre.py 173 s -> 125 s of
CPU (0.72x). ``make test`` on 2 idle cores: 618 s -> 461 s of pytest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_latency import KUKA, timed  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "--xla_cpu_use_fusion_emitters=true"


def commands():
    kuka = [str(KUKA / "kuka_lwr4.urdf"), "--joint-terms", "fv,fc,offset"]
    runs = [str(KUKA / f"measurements_{k}.npz") for k in (2, 3)]
    return [
        ("excite (2 x 60 steps)", ["excite", "--robot", "ur5", "--starts", "2", "--steps", "60", "-o", "traj.csv"]),
        ("simulate", ["simulate", "--robot", "ur5", "--trajectory", "traj.csv", "-o", "data.csv"]),
        ("identify UR5", ["identify", "--robot", "ur5", "data.csv", "-o", "params.json"]),
        ("identify KUKA", ["identify", "--urdf", *kuka, *runs, "-o", "kuka.json"]),
        ("identify KUKA --consistent", ["identify", "--urdf", *kuka, *runs, "--consistent", "-o", "kukac.json"]),
        ("validate KUKA", ["validate", "--params", "kuka.json", str(KUKA / "measurements_1.npz"), "--no-figures"]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tests", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jaxid_xla_flags_"))
    base_env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    settings = {"fusion emitters (XLA)": dict(base_env, XLA_FLAGS=BASELINE), "classic (jaxid)": base_env}
    jaxid = [sys.executable, "-m", "jaxid"]
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"| {'command':<27} | setting               | cold wall s | cold CPU s | programs | warm wall s | warm CPU s |"
    )
    print(f"|{'-' * 29}|-----------------------|-------------|------------|----------|-------------|------------|")
    for i, (label, cmd) in enumerate(commands()):
        rows = {name: [] for name in settings}
        for r in range(args.repeat):
            for name, env in settings.items():
                cache = work / f"cache-{i}-{r}-{len(rows[name])}-{name[:6]}"
                run_env = dict(env, JAXID_CACHE_DIR=str(cache))
                cold = timed(jaxid + cmd + ["--quiet"], run_env, work)
                warm = timed(jaxid + cmd + ["--quiet"], run_env, work)
                rows[name].append((cold[0], cold[1], cold[2], warm[0], warm[1]))
        med = {name: np.median(v, axis=0) for name, v in rows.items()}
        for name, m in med.items():
            print(
                f"| {label:<27} | {name:<21} | {m[0]:11.1f} | {m[1]:10.1f} | {m[2]:8.0f} | {m[3]:11.1f} | {m[4]:10.1f} |"
            )
        a, b = med.values()
        print(
            f"| {label:<27} | jaxid / XLA           | {b[0] / a[0]:11.2f} | {b[1] / a[1]:10.2f} |          "
            f"| {b[3] / a[3]:11.2f} | {b[4] / a[4]:10.2f} |",
            flush=True,
        )
    if args.tests:
        files = ["tests/test_dynamics.py", "tests/test_lugre.py"]
        for name, env in settings.items():
            run_env = dict(env, JAXID_CACHE_DIR="off", OPENBLAS_NUM_THREADS="1")
            t0, c0 = time.perf_counter(), os.times()
            subprocess.run(
                [sys.executable, "-m", "pytest", *files, "-q", "-m", "not slow", "-p", "no:cacheprovider"],
                cwd=ROOT,
                env=run_env,
                capture_output=True,
                check=True,
            )
            c1 = os.times()
            cpu = c1.children_user + c1.children_system - c0.children_user - c0.children_system
            print(f"{' '.join(files)}, {name}: {time.perf_counter() - t0:.1f} s wall, {cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
