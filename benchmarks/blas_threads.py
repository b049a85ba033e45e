"""BLAS threads for the benchmarks: set before numpy loads, and stated.

Imported first by ``dynamics.py``, ``regressor.py`` and ``vs_figaroh.py`` (before numpy: OpenBLAS
reads its thread count when it loads). ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and
``MKL_NUM_THREADS`` default to the cores this process may use (``os.sched_getaffinity``), the
count XLA's own CPU thread pool takes; a value already in the environment is kept, so
``OPENBLAS_NUM_THREADS=1 python benchmarks/X.py`` runs numpy (and FIGAROH) single-threaded.
Pinocchio's algorithms are single-threaded whatever these say. :func:`describe` gives the line
the scripts print.

A helper row in benchmarks/README.md.
"""

from __future__ import annotations

import os

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _v in VARS:
    os.environ.setdefault(_v, str(CORES))


def describe() -> str:
    """One line: usable cores, the thread variables, numpy's BLAS and its threads (threadpoolctl
    where installed), and the load average."""
    import numpy as np

    env = " ".join(f"{v}={os.environ.get(v)}" for v in VARS)
    try:
        from threadpoolctl import threadpool_info

        pools = "; ".join(f"{p['internal_api']} {p['num_threads']} threads" for p in threadpool_info())
    except ImportError:
        try:
            blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
            pools = f"numpy BLAS {blas.get('name')} {blas.get('version', '')} (threadpoolctl not installed)"
        except Exception:  # numpy < 1.26: no dict form
            pools = "threadpoolctl not installed"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"threads: {CORES} usable cores; {env}; {pools}; XLA CPU uses its own pool; load average {load}"
