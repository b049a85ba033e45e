"""Timing helper shared by the benchmark scripts (imported from the scripts' own folder)."""
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
