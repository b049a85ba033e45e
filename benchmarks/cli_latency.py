"""First and second run of each `jaxid` subcommand (wall and CPU time), in fresh processes.

Each subcommand of the README's walk-through (excite -> simulate -> identify -> validate ->
payload, and identify/validate on the KUKA example) runs twice in a new process; the first
run starts with an empty compilation cache (a fresh ``JAXID_CACHE_DIR``), the second reuses
it. CPU time is the child's user + system time; programs: how many XLA compiled (JAX's own
log, ``JAX_LOG_COMPILES``) and the seconds it spent on them. Prints a table and the ratios
second/first.

    python benchmarks/cli_latency.py [--quick] [--no-cache] [--repeat R] [--only TEXT ...]

--quick: a short excitation (fewer steps) so the whole study takes a few minutes.
--no-cache: JAXID_CACHE_DIR=off for both runs (the cost without the persistent cache).
--repeat R: R first/second pairs per subcommand, each from its own empty cache; medians are
    printed (one run's CPU time varies by +-15 % on a 2-core machine).
--only TEXT: the subcommands whose label contains TEXT (their inputs are still made first).

Its figures are in its row of benchmarks/README.md. No document cites it;
it checks the cold/warm claims of docs/design.md's "Compiled code".
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KUKA = ROOT / "examples" / "data" / "kuka_lwr4"


COMPILED = re.compile(r"Finished XLA compilation of .* in ([0-9.eE+-]+) sec")


def timed(cmd, env, cwd):
    """(wall s, CPU s, programs compiled, seconds XLA spent compiling them) of one process; the
    compiles are counted from JAX's own log (JAX_LOG_COMPILES)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=dict(env, JAX_LOG_COMPILES="1"), cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    compiles = [float(x) for x in COMPILED.findall(proc.stderr)]
    return wall, cpu, len(compiles), sum(compiles)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    jaxid = [sys.executable, "-m", "jaxid"]
    steps = ["--steps", "30", "--starts", "2"] if args.quick else []
    work = Path(tempfile.mkdtemp(prefix="jaxid_latency_"))
    env = dict(os.environ, JAXID_CACHE_DIR="off" if args.no_cache else str(work / "cache"))
    commands = [
        ("excite", ["excite", "--robot", "ur5", "-o", "traj.csv", "--quiet", *steps]),
        (
            "simulate",
            [
                "simulate",
                "--robot",
                "ur5",
                "--trajectory",
                "traj.csv",
                "--robot-seed",
                "1",
                "--noise-seed",
                "1",
                "-o",
                "data.csv",
            ],
        ),
        (
            "simulate (2nd run)",
            [
                "simulate",
                "--robot",
                "ur5",
                "--trajectory",
                "traj.csv",
                "--robot-seed",
                "1",
                "--noise-seed",
                "2",
                "-o",
                "data2.csv",
            ],
        ),
        ("identify", ["identify", "--robot", "ur5", "data.csv", "-o", "params.json", "--quiet"]),
        ("validate", ["validate", "--params", "params.json", "data2.csv", "--no-figures", "--quiet"]),
        ("payload", ["payload", "--params", "params.json", "data2.csv", "--quiet"]),
    ]
    if KUKA.is_dir():
        commands += [
            (
                "identify KUKA",
                [
                    "identify",
                    "--urdf",
                    str(KUKA / "kuka_lwr4.urdf"),
                    "--joint-terms",
                    "fv,fc,offset",
                    str(KUKA / "measurements_2.npz"),
                    str(KUKA / "measurements_3.npz"),
                    "-o",
                    "kuka.json",
                    "--quiet",
                ],
            ),
            (
                "validate KUKA",
                ["validate", "--params", "kuka.json", str(KUKA / "measurements_1.npz"), "--no-figures", "--quiet"],
            ),
        ]
    rows = []
    for i, (label, cmd) in enumerate(commands):
        # The UR5 walk-through's files feed its later steps; the KUKA steps read the shipped data.
        needed = [
            c for c in commands[i + 1 :] if args.only and any(t in c[0] for t in args.only) and "KUKA" not in c[0]
        ]
        if args.only and not any(t in label for t in args.only):
            if needed:  # an input of a chosen subcommand (traj.csv, data.csv, params.json, ...)
                timed(jaxid + cmd, dict(env, JAXID_CACHE_DIR=str(work / f"cache{i}")), work)
            continue
        pairs = []
        for r in range(args.repeat):
            # Each subcommand starts from its own empty cache: its first run is a cold start.
            run_env = env if args.no_cache else dict(env, JAXID_CACHE_DIR=str(work / f"cache{i}-{r}"))
            pairs.append((*timed(jaxid + cmd, run_env, work), *timed(jaxid + cmd, run_env, work)))
        first, second = np.median(pairs, axis=0).reshape(2, 4)
        rows.append((label, *first, *second))
        print(
            f"  {label:<20} first {first[0]:6.1f} s wall {first[1]:6.1f} s CPU {first[2]:3.0f} programs "
            f"({first[3]:.1f} s compiling)   second {second[0]:6.1f} s wall {second[1]:6.1f} s CPU "
            f"{second[2]:3.0f} programs",
            flush=True,
        )
    print(
        f"\ncache: {'off' if args.no_cache else 'one fresh folder per subcommand'}; {os.cpu_count()} CPUs; "
        f"medians of {args.repeat} first/second pair(s); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        f"| {'subcommand':<20} | first wall s | first CPU s | programs | compiling s "
        "| second wall s | second CPU s | programs | CPU 2nd/1st |"
    )
    print(
        f"|{'-' * 22}|--------------|-------------|----------|-------------|---------------|--------------|----------|-------------|"
    )
    for label, w1, c1, n1, k1, w2, c2, n2, _ in rows:
        print(
            f"| {label:<20} | {w1:12.1f} | {c1:11.1f} | {n1:8.0f} | {k1:11.1f} | {w2:13.1f} | {c2:12.1f} "
            f"| {n2:8.0f} | {c2 / c1:11.2f} |"
        )


if __name__ == "__main__":
    main()
