"""Datasets of robot motion and torque: the ``Dataset`` container, CSV/NPZ I/O, input checks.

File formats (see DESIGN.md, "Dataset files"):

- CSV with one header row ``t, q1..qn, [qd1..qdn], [qdd1..qddn], tau1..taun``; ``t`` in s,
  ``q`` in rad, ``qd`` in rad/s, ``qdd`` in rad/s², ``tau`` in N·m. Written with ``%.17g`` so
  that a write/read round trip is exact.
- NPZ with arrays ``t`` (N,), ``q``, ``tau`` and optionally ``qd``, ``qdd`` (N, n); or the
  layout of the KUKA LWR4+ recordings (FloBaRoID): ``times`` (Unix time stamps, shifted here
  to start at 0), ``positions``, ``velocities``, ``accelerations``, ``torques``. Other arrays
  in an NPZ file are ignored.

Every problem in a file raises :class:`DatasetError` (a ``ValueError``) whose message names
the file, the column and the row. Rows are counted from 1 over the data rows; for CSV the line
of the file is given too (the header is line 1). NPZ rows are 0-based array indices.

Time stamps must increase strictly. A time axis is *irregular* when the relative standard
deviation of its steps exceeds :data:`JITTER_TOL`. Filtered differentiation needs a uniform
grid, so when velocities or accelerations have to be computed from an irregular ``q`` the
reader refuses unless ``resample=True``, which interpolates every signal onto a uniform grid
with the same number of samples and the same end points (not-a-knot cubic spline). When ``q``,
``qd``, ``qdd`` and ``tau`` are all in the file, identification uses them sample by sample and
the recorded time stamps are kept as they are (the KUKA runs have about 0.9 % jitter in their
logging clock).
"""
from __future__ import annotations

import csv
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

MIN_SAMPLES = 10
"""Fewest samples a dataset may have: fewer cannot be filtered or differentiated."""

JITTER_TOL = 1e-6
"""Largest relative standard deviation of the time steps, std(dt)/mean(dt), of a uniform grid.
Time stamps written with 17 significant digits stay far below it (about 1e-12)."""

_SIGNALS = ("q", "qd", "qdd", "tau")
_KUKA_KEYS = {"t": "times", "q": "positions", "qd": "velocities", "qdd": "accelerations",
              "tau": "torques"}


class DatasetError(ValueError):
    """A dataset file or array is malformed; the message names the file, column and row."""


class Dataset(eqx.Module):
    """Samples of joint motion and torque, a pytree of arrays.

    t: time, shape (N,), s, strictly increasing.
    q: joint positions, shape (N, n), rad.
    tau: joint torques, shape (N, n), N·m.
    qd: joint velocities, shape (N, n), rad/s, or None.
    qdd: joint accelerations, shape (N, n), rad/s², or None.
    source: where the samples came from (file path), static metadata.
    derivatives: the method that computed ``qd``/``qdd`` from ``q`` (``q`` then holds the
        filtered positions that were differentiated), or None when they were given.

    Build one with :func:`read` or :func:`from_arrays`, which check their input; the bare
    constructor does not.
    """

    t: jax.Array
    q: jax.Array
    tau: jax.Array
    qd: jax.Array | None = None
    qdd: jax.Array | None = None
    source: str | None = eqx.field(static=True, default=None)
    derivatives: str | None = eqx.field(static=True, default=None)

    @property
    def n(self) -> int:
        """Number of joints."""
        return self.q.shape[1]

    def __len__(self) -> int:
        return self.t.shape[0]

    @property
    def dt(self) -> float:
        """Mean sampling period, s: (t[-1] - t[0]) / (N - 1)."""
        return float((self.t[-1] - self.t[0]) / (len(self) - 1))

    def slice(self, start: int | None = None, stop: int | None = None,
              step: int | None = None) -> Dataset:
        """Samples ``start:stop:step`` (Python slice semantics) of every signal."""
        index = slice(start, stop, step)
        return jax.tree.map(lambda a: a[index], self)


@dataclass(frozen=True)
class _Where:
    """Names columns and rows in messages the way the user sees them in the file."""

    path: str
    keys: dict | None = None  # NPZ: signal name -> array name; None for CSV

    def col(self, name: str, j: int | None = None) -> str:
        if self.keys is None:
            return f"column '{name}'" if j is None else f"column '{name}{j + 1}'"
        return f"array '{self.keys[name]}'" + ("" if j is None else f"[:, {j}]")

    def row(self, k: int) -> str:
        return f"row {k}" if self.keys is not None else f"row {k + 1} (line {k + 2})"

    def error(self, message: str) -> DatasetError:
        return DatasetError(f"{self.path}: {message}")


def _expected_header(n) -> str:
    return f"t, q1..q{n}, [qd1..qd{n}, qdd1..qdd{n},] tau1..tau{n}"


def _read_csv(path: Path, n: int | None) -> tuple[dict, _Where]:
    where = _Where(str(path))
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise where.error(f"not a readable CSV text file ({e})") from None
    while rows and not rows[-1]:
        rows.pop()
    if not rows:
        raise where.error(f"the file is empty; the header row should be {_expected_header('n')}")
    header = [h.strip() for h in rows[0]]

    column, groups, unknown = {}, {g: [] for g in _SIGNALS}, []
    for c, name in enumerate(header):
        m = re.fullmatch(r"(qdd|qd|q|tau)([1-9][0-9]*)", name)
        if name in column:
            raise where.error(f"line 1 (header): column '{name}' appears twice")
        if m:
            groups[m[1]].append(int(m[2]))
        elif name != "t":
            unknown.append(name)
        column[name] = c
    counts = {g: max(idx) for g, idx in groups.items() if idx}
    k = max(counts.values(), default=0) or n
    problems = []
    if len(set(counts.values())) > 1:
        problems.append("inconsistent joint counts " + ", ".join(
            f"{g}1..{g}{c}" if c > 1 else f"{g}1" for g, c in counts.items()))
    needed = [g for g in _SIGNALS if g in ("q", "tau") or g in counts]
    missing = ["t"] if "t" not in column else []
    missing += ([f"{g}{j}" for g in needed for j in range(1, k + 1) if f"{g}{j}" not in column]
                if k else [f"{g}1..{g}n" for g in needed])
    if missing:
        problems.append("missing column(s) " + ", ".join(missing))
    if unknown:
        problems.append("unrecognised column(s) " + ", ".join(f"'{u}'" for u in unknown))
    if problems:
        raise where.error(f"line 1 (header): {'; '.join(problems)}. "
                          f"The header should be: {_expected_header(k or 'n')}")

    data = np.empty((len(rows) - 1, len(header)))
    for r, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise where.error(f"{where.row(r)}: {len(row)} cells but the header has "
                              f"{len(header)} columns")
        for c, cell in enumerate(row):
            try:
                data[r, c] = float(cell)
            except ValueError:
                raise where.error(f"column '{header[c]}', {where.row(r)}: '{cell}' is not a "
                                  "number") from None
    arrays = {"t": data[:, column["t"]]}
    for g, c in counts.items():
        arrays[g] = data[:, [column[f"{g}{j}"] for j in range(1, c + 1)]]
    return arrays, where


def _read_npz(path: Path) -> tuple[dict, _Where]:
    try:
        with np.load(path) as f:
            files = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise DatasetError(f"{path}: not a readable NPZ file ({e})") from None
    keys = {s: s for s in ("t",) + _SIGNALS}
    if "t" not in files and "times" in files:
        keys = _KUKA_KEYS
    where = _Where(str(path), keys)
    missing = [keys[s] for s in ("t", "q", "tau") if keys[s] not in files]
    if missing:
        raise where.error(
            f"missing array(s) {', '.join(repr(m) for m in missing)}; expected 't' (N,), 'q', "
            "'tau' and optionally 'qd', 'qdd' (N, n), or the KUKA layout 'times', 'positions', "
            "'torques', ['velocities', 'accelerations']")
    arrays = {}
    for s, key in keys.items():
        if key in files:
            if not np.issubdtype(files[key].dtype, np.number):
                raise where.error(f"{where.col(s)} has dtype {files[key].dtype}, not numbers")
            arrays[s] = np.asarray(files[key], dtype=np.float64)
    if keys is _KUKA_KEYS:
        arrays["t"] = arrays["t"] - arrays["t"][0]
    return arrays, where


def _build(arrays: dict, where: _Where, n: int | None, resample: bool,
           derivatives: str | None, cutoff: float | None) -> Dataset:
    """Check the signals, resample an irregular grid if asked, and fill missing derivatives."""
    t = arrays["t"]
    if t.ndim != 1:
        raise where.error(f"{where.col('t')} must have shape (N,), got {t.shape}")
    N = t.shape[0]
    for s in _SIGNALS:
        a = arrays.get(s)
        if a is None:
            continue
        if a.ndim != 2:
            raise where.error(f"{where.col(s)} must have shape (N, n), got {a.shape}")
        if a.shape[0] != N:
            raise where.error(f"{where.col(s)} has {a.shape[0]} rows but {where.col('t')} has "
                              f"{N}: every signal needs one row per time stamp")
    joints = {s: arrays[s].shape[1] for s in _SIGNALS if s in arrays}
    if len(set(joints.values())) > 1:
        raise where.error("inconsistent joint counts: " + ", ".join(
            f"{where.col(s)} has {k}" for s, k in joints.items()))
    if n is not None and joints["q"] != n:
        raise where.error(f"the data have {joints['q']} joint(s) but n={n} was asked for")
    if N < MIN_SAMPLES:
        raise where.error(f"{N} samples; a dataset needs at least {MIN_SAMPLES}")
    for s, a in arrays.items():
        bad = ~np.isfinite(a.reshape(N, -1))
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise where.error(f"{where.col(s, None if s == 't' else j)}, {where.row(k)}: value "
                              f"{a.reshape(N, -1)[k, j]} is not finite; repair or remove it")
    step = np.diff(t)
    if (step <= 0).any():
        k = int(np.argmax(step <= 0)) + 1
        what = ("duplicate time stamp (same as the row before)" if step[k - 1] == 0
                else "time goes backwards")
        raise where.error(f"{where.col('t')}, {where.row(k)}: {what}, t = {t[k]!r} after "
                          f"{t[k - 1]!r}; time stamps must increase strictly")

    missing = [s for s in ("qd", "qdd") if s not in arrays]
    jitter = np.std(step) / np.mean(step)
    if jitter > JITTER_TOL and resample:
        from scipy.interpolate import CubicSpline

        uniform = np.linspace(t[0], t[-1], N)
        arrays = {s: CubicSpline(t, a, axis=0)(uniform) for s, a in arrays.items() if s != "t"}
        arrays["t"] = t = uniform
    elif jitter > JITTER_TOL and missing and derivatives is not None:
        raise where.error(
            f"{where.col('t')}: irregular time stamps (std/mean of the step = {jitter:.2g} > "
            f"{JITTER_TOL:g}) and {', '.join(missing)} must be computed by filtered "
            "differentiation, which needs a uniform grid; pass resample=True (CLI: --resample) "
            "to interpolate the signals onto one")

    ds = Dataset(*(None if arrays.get(s) is None else jnp.asarray(arrays[s])
                   for s in ("t", "q", "tau", "qd", "qdd")), source=where.path)
    if missing and derivatives is not None:
        from jaxid.signals import derivatives as differentiate

        try:
            q, qd, qdd = differentiate(ds.q, ds.dt, method=derivatives, cutoff=cutoff)
        except ValueError as e:
            raise where.error(f"computing {', '.join(missing)} from the positions: {e}") \
                from None
        ds = Dataset(ds.t, q, ds.tau, qd if ds.qd is None else ds.qd,
                     qdd if ds.qdd is None else ds.qdd, source=where.path,
                     derivatives=derivatives)
    return ds


def read(path, *, n: int | None = None, resample: bool = False,
         derivatives: str | None = "butterworth", cutoff: float | None = None) -> Dataset:
    """Read a dataset from a ``.csv`` or ``.npz`` file (formats in the module docstring).

    path: the file. n: expected number of joints (checked), or None to take the file's.
    resample: interpolate irregular time stamps onto a uniform grid (cubic spline, same N).
    derivatives: method of ``jaxid.signals.derivatives`` ("butterworth", ...) used to compute
        missing ``qd``/``qdd`` from ``q`` (``q`` is then replaced by its filtered version), or
        None to leave them missing.
    cutoff: filter cutoff frequency, Hz, passed to ``jaxid.signals.derivatives``.

    Raises DatasetError (a ValueError) naming the file, column and row of any problem.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".npz"):
        raise DatasetError(f"{path}: unknown file type '{path.suffix}'; a dataset is a .csv "
                           "or .npz file")
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    arrays, where = _read_csv(path, n) if suffix == ".csv" else _read_npz(path)
    return _build(arrays, where, n, resample, derivatives, cutoff)


def from_arrays(t, q, tau, qd=None, qdd=None, *, resample: bool = False,
                derivatives: str | None = None, cutoff: float | None = None,
                source: str = "<arrays>") -> Dataset:
    """A checked Dataset from arrays: t (N,) s, q (N, n) rad, tau (N, n) N·m, optional
    qd (N, n) rad/s and qdd (N, n) rad/s². The other arguments are those of :func:`read`,
    except that missing derivatives are left missing unless ``derivatives`` names a method.
    """
    arrays = {s: np.asarray(a, dtype=np.float64)
              for s, a in dict(t=t, q=q, tau=tau, qd=qd, qdd=qdd).items() if a is not None}
    where = _Where(source, {s: s for s in arrays})
    return _build(arrays, where, None, resample, derivatives, cutoff)


def _columns(ds: Dataset) -> dict:
    return {s: np.asarray(getattr(ds, s)) for s in ("t",) + _SIGNALS
            if getattr(ds, s) is not None}


def write(dataset: Dataset, path) -> None:
    """Write ``dataset`` to a ``.csv`` (``%.17g``, exact round trip) or ``.npz`` file.

    Optional signals that are None are left out.
    """
    path = Path(path)
    columns = _columns(dataset)
    if path.suffix.lower() == ".npz":
        np.savez(path, **columns)
    elif path.suffix.lower() == ".csv":
        names = ["t"] + [f"{s}{j + 1}" for s in columns if s != "t" for j in range(dataset.n)]
        data = np.column_stack([columns["t"]] + [columns[s] for s in columns if s != "t"])
        np.savetxt(path, data, fmt="%.17g", delimiter=",", header=",".join(names), comments="")
    else:
        raise DatasetError(f"{path}: unknown file type '{path.suffix}'; write a .csv or .npz "
                           "file")


def concatenate(datasets) -> Dataset:
    """Stack datasets sample after sample (e.g. several runs identified together).

    All need the same number of joints and the same signals present. Each time axis is
    shifted to continue one mean step after the previous one, so ``t`` stays increasing; the
    join between two runs is not a continuous motion, so filter and differentiate each run
    before concatenating, never after.
    """
    datasets = list(datasets)
    if not datasets:
        raise DatasetError("concatenate: no datasets given")

    def layout(d):
        return (d.n,) + tuple(s for s in ("qd", "qdd") if getattr(d, s) is not None)

    if len({layout(d) for d in datasets}) > 1:
        raise DatasetError("concatenate: the datasets differ in joint count or signals: " +
                           "; ".join(f"{d.source}: n, signals = {layout(d)}" for d in datasets))
    times, start = [], 0.0
    for d in datasets:
        times.append(d.t - d.t[0] + start)
        start = float(times[-1][-1]) + d.dt

    def stack(s):
        return None if getattr(datasets[0], s) is None else jnp.concatenate(
            [getattr(d, s) for d in datasets])

    methods = {d.derivatives for d in datasets}
    return Dataset(jnp.concatenate(times), stack("q"), stack("tau"), stack("qd"), stack("qdd"),
                   source=" + ".join(str(d.source) for d in datasets),
                   derivatives=methods.pop() if len(methods) == 1 else None)


def simulate(robot, t, q, qd, qdd, key, **kwargs):
    """Simulated measurements of a perturbed robot; see :func:`jaxid.simulation.simulate`."""
    from jaxid.simulation import simulate as _simulate

    return _simulate(robot, t, q, qd, qdd, key, **kwargs)
