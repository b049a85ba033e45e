"""Will a request fit in memory? One estimate, checked before the work starts.

A least-squares identification holds its stacked regressor W, N samples x n joints x k
columns of float64, several times over: the chunks and their concatenation, the OLS fit
of the residual screening (QR workspace), the weighted copy of two-step WLS, the refit.
Measured on a UR5 (54 base columns, 40 000 samples): 20.8 KB per sample, 8.2 times the
2.6 KB of W itself; [`COPIES`][jaxid.memory.COPIES] is that factor. A request that would not fit fails at
once with one line ([`MemoryLimitError`][jaxid.memory.MemoryLimitError]) instead of swapping for minutes and dying in
an out-of-memory traceback.

The memory available is the least of the system's ``MemAvailable`` (``/proc/meminfo``),
the room left under the process's cgroup limit (``memory.max`` - ``memory.current``, or
cgroup v1 ``memory.limit_in_bytes``) and under its address-space limit (``ulimit -v``).
The environment variable ``JAXID_MEMORY_LIMIT`` overrides it: a size in bytes with an
optional unit (``512M``, ``8G``, ``1.5T``), or ``off`` to skip the check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "MemoryLimitError",
    "available",
    "regressor_bytes",
    "check",
    "check_identify",
    "check_study",
    "describe",
    "ENV",
]

ENV = "JAXID_MEMORY_LIMIT"

#: Copies of the stacked regressor that an identification holds at its peak (measured: 8.2).
COPIES = 9

#: Extra full-width (all standard columns) copies held by a consistent identification: the
#: regressor of every column, its base-column copy and the barrier solver's normal equations.
CONSISTENT_COPIES = 4

_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class MemoryLimitError(ValueError):
    """A request that would not fit in the memory available; the message is one line."""


def _size(text: str) -> int | None:
    """Bytes of '8G', '512M', '1.5T', '1000000' (None: 'off')."""
    s = text.strip().upper().removesuffix("IB").removesuffix("B")
    if s in ("OFF", "NONE"):
        return None
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:E[0-9]+)?)\s*([KMGT]?)", s)
    if not m:
        raise MemoryLimitError(f"{ENV}={text!r}: expected a size such as 8G, 512M or 1000000 (bytes), or 'off'")
    return int(float(m[1]) * _UNITS[m[2]])


def _read(path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except (OSError, ValueError):
        return None


def _meminfo() -> int | None:
    text = _read("/proc/meminfo")
    m = re.search(r"^MemAvailable:\s+(\d+)\s*kB", text or "", re.M)
    return int(m[1]) * 1024 if m else None


def _cgroup() -> int | None:
    """Room left under the cgroup's memory limit (v2, else v1), or None when unlimited."""
    dirs = []
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0":
            dirs.append(Path("/sys/fs/cgroup") / parts[2].lstrip("/"))
    dirs.append(Path("/sys/fs/cgroup"))
    for d in dirs:
        limit = _read(d / "memory.max")
        if limit is not None:
            if limit == "max":
                return None
            used = _read(d / "memory.current")
            return max(0, int(limit) - int(used or 0))
    limit = _read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if limit is not None and int(limit) < 2**60:
        used = _read("/sys/fs/cgroup/memory/memory.usage_in_bytes")
        return max(0, int(limit) - int(used or 0))
    return None


def _address_space() -> int | None:
    """Room left under ``ulimit -v`` (RLIMIT_AS), or None when unlimited."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    m = re.search(r"^VmSize:\s+(\d+)\s*kB", _read("/proc/self/status") or "", re.M)
    return max(0, soft - (int(m[1]) * 1024 if m else 0))


def available() -> tuple[int | None, str]:
    """(bytes available, where the figure comes from); (None, why) when not known or the
    check is off."""
    env = os.environ.get(ENV)
    if env is not None and env.strip():
        size = _size(env)
        return size, f"{ENV}" if size is not None else f"{ENV}=off"
    found = [
        (v, src)
        for v, src in (
            (_meminfo(), "MemAvailable"),
            (_cgroup(), "the cgroup memory limit"),
            (_address_space(), "the address-space limit, ulimit -v"),
        )
        if v is not None
    ]
    if not found:
        return None, "unknown"
    return min(found)


def describe(nbytes: float) -> str:
    """'21 GB', '512 MB', '3.2 KB' (powers of 1024)."""
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{int(nbytes)} B"


def regressor_bytes(n_samples: int, n_joints: int, columns: int) -> int:
    """Bytes of one stacked float64 regressor, (n_samples * n_joints, columns)."""
    return 8 * int(n_samples) * int(n_joints) * int(columns)


def check(required: float, what: str, fix: str) -> None:
    """MemoryLimitError (one line: what, how much, how much is available, the fix) when
    ``required`` bytes exceed the memory available."""
    avail, source = available()
    if avail is None or required <= avail:
        return
    raise MemoryLimitError(
        f"{what} needs about {describe(required)} of memory but {describe(avail)} is available "
        f"({source}); {fix} ({ENV}=off skips this check)"
    )


def identify_bytes(n_samples: int, n_joints: int, columns: int, *, all_columns: int | None = None) -> int:
    """Estimated peak bytes of identifying ``columns`` regressor columns from ``n_samples``
    samples of ``n_joints`` joints; ``all_columns``: the standard parameter count when the
    fit is also physically consistent (it keeps every column)."""
    total = COPIES * regressor_bytes(n_samples, n_joints, columns)
    if all_columns is not None:
        total += CONSISTENT_COPIES * regressor_bytes(n_samples, n_joints, all_columns)
    return total


def check_identify(n_samples: int, n_joints: int, columns: int, *, all_columns: int | None = None) -> None:
    """[`check`][jaxid.memory.check] for an identification (``jaxid.workflow.identify_experiment``)."""
    need = identify_bytes(n_samples, n_joints, columns, all_columns=all_columns)
    check(
        need,
        f"identifying {columns} parameters from {n_samples} samples x {n_joints} joints "
        f"(regressor {describe(regressor_bytes(n_samples, n_joints, all_columns or columns))} in float64, "
        "held several times by the solver)",
        "use fewer samples (decimate: jaxid identify --step K, workflow.Policy(step=K)) or a machine with more memory",
    )


def study_bytes(rows: int, columns: int, n_runs: int, batch: int, n_estimators: int, local_devices: int) -> int:
    """Estimated peak bytes of ``jaxid.study.run_study``: W (rows, columns) on the host and
    each local device, ``batch`` vmapped runs per device with about 8 float64 copies of
    an (rows, columns + 1) system each, and the estimates gathered on the host."""
    w = 8 * rows * columns
    work = 8 * 8 * rows * (columns + 1) * batch
    return 3 * w + local_devices * (w + work) + 3 * 8 * n_runs * columns * n_estimators


def check_study(rows: int, columns: int, n_runs: int, batch: int, n_estimators: int, local_devices: int) -> None:
    """[`check`][jaxid.memory.check] for a Monte-Carlo study (``jaxid.study.run_study``)."""
    check(
        study_bytes(rows, columns, n_runs, batch, n_estimators, local_devices),
        f"a study of {n_runs} runs on a {rows} x {columns} regressor ({batch} runs at once per device, "
        f"{local_devices} device(s))",
        "give a smaller batch_size or fewer rows",
    )
