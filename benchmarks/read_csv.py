"""Speed of the CSV reader: numpy's C parser against the Python scan that it falls back to.

A 100 000-row x 19-column file (t, q1..q6, qd1..qd6, tau1..tau6) is parsed both ways in this
process, best of 3 each, and the two results must be identical. Two number formats: %.17g
(what jaxid.data.write produces: exact round trips, 17 significant digits) and %.6f (a typical
export of a robot controller's log, shorter numbers).

    .venv/bin/python benchmarks/read_csv.py [rows]

Measured (2026-12-03, commit cf3f8c0, 2 shared cores at load 3-6; 53 s in all): %.17g (37.8 MB)
Python scan 3.91 s, numpy 2.41 s, 1.6x; %.6f (18.1 MB) 2.37 s against 1.22 s, 1.9x. (Recorded
when numpy's parser came in, 2026-12-01: 1.7x and 2.0x.)

Its row in benchmarks/README.md lists its last figures; cited by ``jaxid/data.py``
(``_read_csv``).
"""

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from jaxid import data


def best_of(f, repeat=3):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(rows=100_000):
    rng = np.random.default_rng(0)
    table = np.column_stack([np.arange(rows) / 500.0, rng.normal(size=(rows, 18))])
    header = "t," + ",".join(f"{s}{j}" for s in ("q", "qd", "tau") for j in range(1, 7))
    print(
        f"{rows} rows x 19 columns; old = the Python scan, new = numpy's C parser (read()"
        " additionally runs all the dataset checks)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("%.17g", "%.6f"):
            path = Path(tmp) / "log.csv"
            np.savetxt(path, table, fmt=fmt, delimiter=",", header=header, comments="")
            size = path.stat().st_size / 1e6
            old, (a, _, _) = best_of(lambda: data._read_csv(path, None, fast=False))
            new, (b, _, _) = best_of(lambda: data._read_csv(path, None))
            full, _ = best_of(lambda: data.read(path, derivatives=None))
            assert all(np.array_equal(a[s], b[s]) for s in a), "the two parsers disagree"
            print(
                f"{fmt:>6} ({size:4.1f} MB): old {old:6.3f} s, new {new:6.3f} s, "
                f"speed-up {old / new:4.1f}x; read() {full:6.3f} s"
            )


if __name__ == "__main__":
    main(*(int(x) for x in sys.argv[1:]))
