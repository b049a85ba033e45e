"""Timing helper shared by the benchmark scripts (imported from the scripts' own folder).

A helper row in benchmarks/README.md; imported by dynamics.py, lugre.py, regressor.py and
streaming.py.
"""

from __future__ import annotations

import time

import jax


def best_of(fn, repeat=5):
    """Least wall time, s, of ``repeat`` calls of ``fn()`` (results blocked until ready):
    the minimum is the least disturbed run on a shared, noisy machine."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return min(times)


def interleaved_medians(fns, repeat=5, clock=time.perf_counter):
    """Median time, s, of each of ``fns`` (name -> zero-argument callable), after one
    warm-up call each, the calls interleaved round by round: on a shared machine every
    function then sees the same load, so their ratios are fair. clock: wall time by
    default; ``time.process_time`` gives this process's CPU time, which other processes on a
    loaded machine disturb less (for single-threaded work)."""
    for f in fns.values():
        jax.block_until_ready(f())
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = clock()
            jax.block_until_ready(f())
            times[k].append(clock() - t0)
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}
