"""Datasets of robot motion and torque: the ``Dataset`` container, the one reader and writer of
dataset files (CSV, NPZ, optionally HDF5), column mapping, units, input checks.

File formats (see DESIGN.md, "Dataset files"):

- CSV with one header row ``t, q1..qn, [qd1..qdn], [qdd1..qddn], tau1..taun``; ``t`` in s,
  ``q`` in rad, ``qd`` in rad/s, ``qdd`` in rad/s², ``tau`` in N·m. Written with ``%.17g`` so
  that a write/read round trip is exact. The delimiter is detected from the first line: tab,
  ``;``, ``,`` (in that order of preference, checked against the second line) or else runs of
  whitespace. A file whose first line is all numbers has no header; its columns must then be
  given by 0-based index (below). Numbers are parsed by numpy in C; only when that fails is
  the file scanned again in Python to name the bad cell.
- NPZ with arrays ``t`` (N,), ``q``, ``tau`` and optionally ``qd``, ``qdd`` (N, n); or the
  layout of the KUKA LWR4+ recordings (FloBaRoID): ``times`` (Unix time stamps, shifted here
  to start at 0), ``positions``, ``velocities``, ``accelerations``, ``torques``. Other arrays
  in an NPZ file are ignored.
- HDF5 (``.h5``, ``.hdf5``), only when ``h5py`` is installed (``pip install h5py``): datasets
  named as in NPZ at the root of the file, or any datasets (``group/name``) chosen with
  ``columns``.
- ROS 2 bags (rosbag2: a directory with ``metadata.yaml``, or a ``.mcap`` / ``.db3`` file),
  only with the optional ``rosbags`` package (``pip install 'jaxid[ros]'``): the
  ``sensor_msgs/msg/JointState`` messages of one topic (``topic``; default the only JointState
  topic, else ``/joint_states``), read by [`jaxid.rosbag`][jaxid.rosbag]: t from the header stamps (the
  bag's receive time when they are zero), q = position, qd = velocity (when every message
  has it), tau = effort (required). The notes name the joints (``joints: names ...``), in the
  first message's order (messages listing them in another order are reordered by name).

Logs of real robots name their columns otherwise and use other units. ``read`` takes

- ``columns``: signal -> column(s). For a CSV with a header, glob patterns over the header
  names, ``{"t": "time", "q": "pos_*", "qd": "vel_*", "tau": "effort_*"}``; the columns a
  pattern matches are ordered by the numbers in their names (``pos_2`` before ``pos_10``). For
  any CSV, also 0-based column indices or ranges ``[1, 2, 3]``, ``"1:7"`` (stop excluded).
  For NPZ and HDF5, signal -> array (dataset) name. Signals left out keep the default names.
  Columns not mapped are ignored. [`parse_columns`][jaxid.data.parse_columns] reads the command-line form
  ``"q=pos_*,qd=vel_*,tau=effort_*,t=time"`` (``"t=0,q=1:7,tau=7:13"`` without a header).
- ``units``: signal -> unit, converted to SI on reading (known units in [`UNITS`][jaxid.data.UNITS]:
  ``t`` s, ms, us, ns; ``q`` rad, deg; ``qd`` rad/s, deg/s; ``qdd`` rad/s^2, deg/s^2; ``tau``
  Nm, N m, mNm, A). [`parse_units`][jaxid.data.parse_units] reads ``"q=deg,t=ms"``.
- ``gains``: for a ``tau`` column of motor currents (``units tau=A``, implied by ``gains``),
  the n per-joint torque constants in N·m/A, gear ratio included: ``tau = gains * current``.
  [`parse_gains`][jaxid.data.parse_gains] reads ``"10,10.7,..."``.
- ``transmission``: a log of the motors' side (motor angles and motor torques or currents, as
  industrial controllers record them) with the ``jaxid.model.transmission.Transmission`` from
  the motors to the joints (gear ratios, signs, offsets, a coupled wrist): after units and gains
  (then per motor, without the gear), ``q = R q_m + offset``, ``qd = R qd_m``, ``qdd = R qdd_m``,
  ``tau = R^{-T} tau_m``; the dataset holds the joints' side and says so (``motor_side``).
  [`motor_log`][jaxid.data.motor_log] goes the other way (a simulated controller's log).

[`load_mapping`][jaxid.data.load_mapping] reads the three from a small JSON or TOML file, to pass on as
``read(path, **load_mapping(mapping_file))``. Every conversion made is recorded in the
dataset's static ``notes`` (a tuple of strings) so that a caller can print what was done.

Every problem in a file raises [`DatasetError`][jaxid.data.DatasetError] (a ``ValueError``) whose message names
the file, the column and the row. Rows are counted from 1 over the data rows; for CSV the line
of the file is given too (the header is line 1). NPZ and HDF5 rows are 0-based array indices.
A CSV whose last line has fewer cells than the header, or whose last line does not end in a
newline and has a cell that does not parse or looks cut off (``4.95e-0`` below ``1.2e-05``),
is reported as truncated. Every row must have as many cells as the header.

Time stamps as loggers write them. Stamps split into whole seconds and nanoseconds (ROS's
``header.stamp.sec``, ``header.stamp.nanosec``) are mapped as ``t=SEC+NANOSEC`` (names or 0-based
indices; a header with one such ``sec``/``nanosec`` pair is found without a mapping) and
combined in int64 ns; a time column of integers too large for a float64 (Unix time in ns) is
read as int64. Both are shifted to start at 0 in integers, then made float seconds: exact to
the ns. Stamps of a clock in float seconds (PlotJuggler's ``__time``: Unix time, 1.7e9 s) that
start later than the log lasts are shifted to start at 0 (exact in floating point), and when
they deviate from a uniform grid by no more than their resolution (float64's spacing at their
magnitude, 2.4e-7 s at 1.7e9 s; 1 ns for integer stamps; 10^-k for stamps all printed with k
decimals, such as PlotJuggler's 6, when that is under 1 % of a step), they are put on that grid:
the rounding of the stored or printed number is no jitter. A log without a time column is read with its
sampling ``rate`` (t = k / rate); a rate given for a log with stamps must agree with their
mean rate within [`RATE_TOL`][jaxid.data.RATE_TOL]. ``window=(T0, T1)`` (or ``"T0:T1"``, s from the log's
start, either side open) keeps the samples in it before anything else is checked or done;
error messages still count rows from the file's start. Each is recorded in ``notes``.

Time stamps must increase strictly. [`read`][jaxid.data.read] also rejects a mean sampling rate outside
[`RATE_RANGE`][jaxid.data.RATE_RANGE] (a time column in ms, us or ns read as seconds; the message names the
likely unit) and a step larger than [`GAP_FACTOR`][jaxid.data.GAP_FACTOR] median steps (an interrupted
recording: split the file there), unless it is at most ``max_gap`` s (a few dropped samples
of a fast log, which resampling bridges). A time axis is *irregular*
when the relative standard deviation of its steps exceeds [`JITTER_TOL`][jaxid.data.JITTER_TOL]. Filtered
differentiation needs a uniform grid, so when velocities or accelerations have to be computed
from an irregular ``q`` the reader refuses unless ``resample=True``, which interpolates every
signal onto a uniform grid with the same number of samples and the same end points
(not-a-knot cubic spline). When ``q``, ``qd``, ``qdd`` and ``tau`` are all in the file,
identification uses them sample by sample and the recorded time stamps are kept as they are
(the KUKA runs have about 0.9 % jitter in their logging clock).

Excitation metadata: a periodic excitation's base frequency and harmonics (``jaxid excite``
writes them, ``jaxid simulate`` carries them to the data file) live in a JSON sidecar next to
the file, ``<file>.json`` (``traj.csv.json``): ``{"jaxid": "excitation", "base_frequency_hz":
0.05, "harmonics": 5}``, so that the data file itself stays a plain table any tool reads.
[`read`][jaxid.data.read] returns them in ``Dataset.base_frequency`` / ``harmonics``; [`write`][jaxid.data.write] writes
the sidecar when they are set and removes a stale jaxid sidecar when they are not. The sidecar of
a file ``jaxid simulate`` wrote also records the model that was simulated, ``"model": {...}``
(the ``model`` entry of params.json, ``jaxid.model.description``; ``base_frequency_hz`` is then
null when the excitation is unknown): [`read_model`][jaxid.data.read_model] returns it, so that the commands that fit
a log take the model from it when none is named.

[`write`][jaxid.data.write] writes atomically ([`jaxid.atomic.atomic_write`][jaxid.atomic.atomic_write]): a temporary file in the
same directory, fsynced, then renamed onto the target, so that an interrupted or failed write
leaves the previous file intact.
"""

from __future__ import annotations

import csv
import dataclasses
import fnmatch
import json
import math
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid import rosbag
from jaxid.arrays import device, is_traced, plain, slice_tree
from jaxid.atomic import OutputPathError, atomic_write
from jaxid.tables import read_table

MIN_SAMPLES = 10
"""Fewest samples a dataset may have: fewer cannot be filtered or differentiated."""

MOTION_BOUND = 1e6
"""Largest |q|, |qd|, |qdd| (rad, rad/s, rad/s^2) of a sample; beyond it a cell is corrupt (a
value of 1e300 would otherwise be copied into a simulation or fitted)."""

_MOTION_UNITS = {"q": "rad", "qd": "rad/s", "qdd": "rad/s^2"}

JITTER_TOL = 1e-6
"""Largest relative standard deviation of the time steps, std(dt)/mean(dt), of a uniform grid.
Time stamps written with 17 significant digits stay far below it (about 1e-12)."""

RATE_RANGE = (1.0, 1e5)
"""Plausible mean sampling rates, Hz, of a file read by [`read`][jaxid.data.read]; outside them the time
column is taken to be in another unit than seconds."""

DECIMAL_QUANTUM = 0.01
"""Largest resolution of printed time stamps (10^-k s for k decimals), as a fraction of the
median step, that is taken for the stamps' rounding rather than a clock's jitter."""

GAP_FACTOR = 5.0
"""A time step more than this many median steps long is a gap in the recording (an error)."""

GAP_SHARE = 0.02
"""Longest gap, as a share of the run's duration, that ``max_gap`` may accept (bridged by resampling's
spline): dropped samples, not a hole in the motion (a 10 s hole bridged by a spline, issue 36, gave
estimates 72x off)."""

SIGNALS = ("t", "q", "qd", "qdd", "tau")
"""The signals of a dataset, the keys of ``columns`` and ``units``."""

UNITS: dict[str, dict[str, float | str]] = {
    "t": {"s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9},
    "q": {"rad": 1.0, "deg": "deg"},
    "qd": {"rad/s": 1.0, "deg/s": "deg"},
    "qdd": {"rad/s^2": 1.0, "rad/s²": 1.0, "deg/s^2": "deg", "deg/s²": "deg"},
    "tau": {"Nm": 1.0, "N m": 1.0, "N·m": 1.0, "mNm": 1e3, "A": "A"},
}
"""Known units per signal: unit -> divisor to SI, "deg" (degrees to radians) or "A" (motor
current, times ``gains``)."""

_SI = {"t": "s", "q": "rad", "qd": "rad/s", "qdd": "rad/s^2", "tau": "N m"}
_SIGNALS = ("q", "qd", "qdd", "tau")
_KUKA_KEYS = {"t": "times", "q": "positions", "qd": "velocities", "qdd": "accelerations", "tau": "torques"}
_TIME_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
_DELIMITERS = ("\t", ";", ",")
_DELIMITER_NAMES = {"\t": "tab", ";": "';'", ",": "','", None: "whitespace"}


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
    notes: what the reader did to the samples, one sentence each (column mapping, unit
        conversions, currents times gains, resampling), static metadata, for the caller to
        print; () when nothing.
    base_frequency: base frequency of the periodic excitation that produced the run, Hz, or
        None when unknown; harmonics: its number of harmonics, or None (static metadata, from
        the file's sidecar).
    motor_side: the log was recorded on the motors' side and converted to the joints through a
        transmission on reading (``read(..., transmission=)``; the samples are joint-side); its
        residuals are reported on the motors' side (``jaxid.workflow.validate``). Static.
    file_rows: where sample 0 sits in the file it was read from, for messages ([`row`][jaxid.data.Dataset.row]):
        (rows of the file's data before it (a time window), the line of the file's first data row
        for CSV (2 after a header, 1 without) or 0 for array files (NPZ, HDF5, bags: 0-based
        indices)); None when unknown (arrays, or a slice with a step). Static.
    gains: the torque constants, N m/A, the file's tau channels (motor currents) were multiplied by
        on reading (``read(..., gains=)``, CLI ``--gains``), one per channel, or None (tau read as
        torques). Kept so that a log already in N m given gains can be told (``jaxid.workflow.
        plausibility``). Static.

    Build one with [`read`][jaxid.data.read] or [`from_arrays`][jaxid.data.from_arrays], which check their input; the bare
    constructor does not.
    """

    t: jax.Array
    q: jax.Array
    tau: jax.Array
    qd: jax.Array | None = None
    qdd: jax.Array | None = None
    source: str | None = eqx.field(static=True, default=None)
    derivatives: str | None = eqx.field(static=True, default=None)
    notes: tuple[str, ...] = eqx.field(static=True, default=())
    base_frequency: float | None = eqx.field(static=True, default=None)
    harmonics: int | None = eqx.field(static=True, default=None)
    motor_side: bool = eqx.field(static=True, default=False)
    file_rows: tuple[int, int] | None = eqx.field(static=True, default=None)
    gains: tuple[float, ...] | None = eqx.field(static=True, default=None)

    def row(self, k: int) -> str:
        """Sample k (0-based, of this dataset) as the user finds it in the file: "row R (line L)"
        for CSV (R 1-based over the data rows, L the file's line), "row K" (0-based index) for array
        files, "sample k+1" when the file is unknown ([`file_rows`][jaxid.data.Dataset.file_rows])."""
        if self.file_rows is None:
            return f"sample {k + 1}"
        offset, first_line = self.file_rows
        k += offset
        return f"row {k}" if first_line == 0 else f"row {k + 1} (line {k + first_line})"

    @property
    def n(self) -> int:
        """Number of joints."""
        return self.q.shape[1]

    def __len__(self) -> int:
        return self.t.shape[0]

    @property
    def dt(self) -> float:
        """Mean sampling period, s: (t[-1] - t[0]) / (N - 1)."""
        t = np.asarray(self.t)  # numpy: a jnp difference would compile a program per length
        return float((t[-1] - t[0]) / (len(self) - 1))

    def slice(self, start: int | None = None, stop: int | None = None, step: int | None = None) -> Dataset:
        """Samples ``start:stop:step`` (Python slice semantics) of every signal."""
        start, stop, step = (None if x is None else int(x) for x in (start, stop, step))
        index = slice(start, stop, step)
        if any(is_traced(x) for x in jax.tree.leaves(self)):
            out = slice_tree(self, start, stop, step)
        else:  # concrete: cut on the host and put back (device_put: no program per record length)
            out = jax.tree.map(lambda a: device(np.asarray(a)[index]), self)
        first, _, stride = index.indices(len(self))
        rows = None if self.file_rows is None or stride != 1 else (self.file_rows[0] + first, self.file_rows[1])
        return dataclasses.replace(out, file_rows=rows) if rows != self.file_rows else out


@dataclass(frozen=True)
class _Where:
    """Names columns and rows in messages the way the user sees them in the file."""

    path: str
    keys: dict | None = None  # NPZ/HDF5: signal name -> array name; None for CSV
    names: dict | None = None  # CSV: signal -> column names (header) or 0-based indices
    first_line: int = 2  # CSV: line of the first data row (1 without a header)
    kind: str = "array"  # NPZ: "array", HDF5: "dataset"
    offset: int = 0  # rows before the first one kept (a time window)
    row_name: str = "row"  # a bag's rows are its messages
    t_quantum: float | None = None  # t's resolution, file's unit, for integer stamps; None: float64's spacing
    t_seconds: bool = False  # t was built in s from integer stamps (sec + nanosec, a bag): no unit applies

    @staticmethod
    def cell(c) -> str:
        """A CSV column by header name or, without a header, by 0-based index."""
        return f"'{c}'" if isinstance(c, str) else f"{c} (0-based)"

    def col(self, name: str, j: int | None = None) -> str:
        if self.keys is not None:
            return f"{self.kind} '{self.keys[name]}'" + ("" if j is None else f"[:, {j}]")
        if self.names is None or name not in self.names:
            return f"column '{name}'" if j is None else f"column '{name}{j + 1}'"
        cols = self.names[name]
        if j is not None:
            return f"column {self.cell(cols[j])}"
        if len(cols) == 1:
            return f"column {self.cell(cols[0])}"
        return f"columns {self.cell(cols[0])}..{self.cell(cols[-1])}"

    def row(self, k: int) -> str:
        k += self.offset
        if self.keys is not None:
            return f"{self.row_name} {k}"
        return f"row {k + 1} (line {k + self.first_line})"

    def error(self, message: str) -> DatasetError:
        return DatasetError(f"{self.path}: {message}")


def _expected_header(n) -> str:
    return f"t, q1..q{n}, [qd1..qd{n}, qdd1..qdd{n},] tau1..tau{n}"


def _listing(names, limit: int = 40) -> str:
    names = [str(x) for x in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _span(names) -> str:
    """Names of the columns a signal was read from, shortened to first, second, ..., last."""
    names = [str(x) for x in names]
    if len(names) <= 8:
        return ", ".join(names)
    return f"{names[0]}, {names[1]}, ..., {names[-1]} ({len(names)} columns)"


def _natural_key(name: str) -> list:
    """Sort key comparing the digit runs of a name as numbers: pos_2 < pos_10."""
    return [int(p) if i % 2 else p for i, p in enumerate(re.split(r"(\d+)", name))]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- joint names
_NAME_SEPARATORS = re.compile(r"[/._\-\s:\[\]()]+")


def _name_tokens(text: str) -> tuple[str, ...]:
    """The lower-case tokens of a name, split at ``/ . _ -``, blanks, ``:`` and brackets."""
    return tuple(x for x in _NAME_SEPARATORS.split(str(text).lower()) if x)


def order_by_joint_names(headers, joint_names) -> list[int] | None:
    """The columns of one signal put in the model's joint order by the joint names they carry.

    headers: the names of the columns a mapping matched for one signal (e.g. the matches of
    ``/joint_states/*/position``), in any order, length k. joint_names: the model's coordinate
    names (``Robot.coordinate_names``), length n. A header carries a joint's name when the name's
    tokens (split at ``/ . _ -``, blanks, ``:`` and brackets; case ignored) occur in the header's
    tokens as a contiguous run: ``elbow_joint`` is in ``/joint_states/elbow_joint/position`` and
    the built-in ``elbow`` is too, ``joint1`` is not in ``joint10``. Where several names occur in
    one header, a name whose run lies inside a longer name's run is dropped (``elbow_joint``
    inside ``wrist_elbow_joint`` when the model has both): the longest whole name wins.

    Returns the permutation p, a list of n header indices, such that ``headers[p[j]]`` is the
    column of joint j; or None when no header carries any of the names (the caller keeps its
    own order and says so). Raises DatasetError, naming both lists and the fix, when a header
    carries two names, a header carries none while others do, or a name is carried by no header
    or by two. Used by every reader whose columns or fields name joints (CSV headers here; the
    ``name`` arrays of ROS JointState messages).
    """
    headers = [str(h) for h in headers]
    names = [str(x) for x in joint_names]
    tokens = [_name_tokens(x) for x in names]
    both = f"the model's joints are {_listing(names)}; the columns are {_listing(headers)}"
    same = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if _name_tokens(a) == _name_tokens(b)]
    if same:
        raise DatasetError(f"the model's joint names {same[0][0]!r} and {same[0][1]!r} read the same; {both}")
    carried: list[list[int]] = []
    for h in headers:
        ht = _name_tokens(h)
        runs = [
            (j, i, i + len(nt))
            for j, nt in enumerate(tokens)
            if nt
            for i in range(len(ht) - len(nt) + 1)
            if ht[i : i + len(nt)] == nt
        ]
        # A run inside a longer name's run is that longer name's part, not a name of its own.
        kept = {j for j, a, b in runs if not any(k != j and c <= a and b <= d and d - c > b - a for k, c, d in runs)}
        carried.append(sorted(kept))
    if not any(carried):
        return None
    fix = (
        "map the columns of exactly one joint each (--columns with a narrower pattern), or give the "
        "model whose joint names the log uses (--urdf/--robot)"
    )
    for h, js in zip(headers, carried):
        if len(js) > 1:
            raise DatasetError(
                f"column {h!r} names joints {', '.join(repr(names[j]) for j in js)} of the model: ambiguous; "
                f"{both}; {fix}"
            )
    owner: dict[int, list[int]] = {}
    for c, js in enumerate(carried):
        if js:
            owner.setdefault(js[0], []).append(c)
    for j, x in enumerate(names):
        if j not in owner:
            raise DatasetError(f"joint {j + 1} ({x}) of the model is named by no column; {both}; {fix}")
        if len(owner[j]) > 1:
            cols = ", ".join(repr(headers[c]) for c in owner[j])
            raise DatasetError(
                f"joint {j + 1} ({x}) of the model is named by {len(owner[j])} columns ({cols}); {both}; {fix}"
            )
    for h, js in zip(headers, carried):
        if not js:
            raise DatasetError(f"column {h!r} names none of the model's joints while other columns do; {both}; {fix}")
    return [owner[j][0] for j in range(len(names))]


# ----------------------------------------------------------------------------- arguments
def _normalise_columns(columns) -> dict:
    """signal -> list of items, each an int (0-based column index) or a str (glob/name)."""
    if isinstance(columns, str):
        columns = parse_columns(columns)
    if not isinstance(columns, dict):
        raise DatasetError(
            "columns: expected a dict signal -> column pattern(s) or 0-based "
            f"indices, or text like 'q=pos_*,tau=effort_*'; got {columns!r}"
        )
    out = {}
    for s, value in columns.items():
        if s not in SIGNALS:
            raise DatasetError(f"columns: unknown signal '{s}'; the signals are {', '.join(SIGNALS)}")
        values = list(value) if isinstance(value, (list, tuple, range)) else [value]
        items: list[int | str] = []
        for x in values:
            if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
                if x < 0:
                    raise DatasetError(f"columns: {s} index {x}: indices are 0-based, >= 0")
                items.append(int(x))
                continue
            if not isinstance(x, str) or not x.strip():
                raise DatasetError(
                    f"columns: {s}: expected a column name, glob pattern, 0-based index or range 'a:b'; got {x!r}"
                )
            x = x.strip()
            m = re.fullmatch(r"(\d+)\s*:\s*(\d+)|(\d+)", x)
            if m and m[3] is not None:
                items.append(int(m[3]))
            elif m:
                a, b = int(m[1]), int(m[2])
                if b <= a:
                    raise DatasetError(f"columns: {s}={x} is an empty range (the stop {b} is excluded, as in Python)")
                items.extend(range(a, b))
            else:
                items.append(x)
        if not items:
            raise DatasetError(f"columns: no column given for {s}")
        out[s] = items
    return out


def parse_columns(text: str) -> dict:
    """Column mapping from its command-line form, e.g. ``"q=pos_*,qd=vel_*,tau=effort_*,t=time"``.

    Each ``signal=value`` item maps one of t, q, qd, qdd, tau to a header name or glob pattern,
    a 0-based column index or a range ``a:b`` (stop excluded); items without ``=`` continue the
    previous signal (``"q=1,2,3,tau=4:7"``). Returns {signal: str or list of str}, as
    [`read`][jaxid.data.read] takes it. Raises DatasetError for an unknown signal, a signal given twice, an
    empty value or an item without a signal.
    """
    out: dict[str, str | list[str]] = {}
    current: str | None = None
    for token in (x.strip() for x in str(text).split(",")):
        if not token:
            continue
        if "=" in token:
            s, _, value = (x.strip() for x in token.partition("="))
            if s not in SIGNALS:
                raise DatasetError(f"columns: unknown signal '{s}' in '{text}'; the signals are {', '.join(SIGNALS)}")
            if s in out:
                raise DatasetError(f"columns: {s} is given twice in '{text}'")
            if not value:
                raise DatasetError(f"columns: no column given for {s} in '{text}'")
            out[s], current = value, s
        elif current is None:
            raise DatasetError(f"columns: '{token}' has no signal; write e.g. 'q=pos_*,qd=vel_*,tau=effort_*,t=time'")
        else:
            previous = out[current]
            out[current] = (previous if isinstance(previous, list) else [previous]) + [token]
    if not out:
        raise DatasetError(f"columns: nothing given in '{text}'; write e.g. 'q=pos_*,qd=vel_*,tau=effort_*,t=time'")
    _normalise_columns(out)
    return out


def _normalise_units(units) -> dict:
    if units is None:
        return {}
    if isinstance(units, str):
        units = parse_units(units)
    if not isinstance(units, dict):
        raise DatasetError(f"units: expected a dict signal -> unit or text like 'q=deg,t=ms'; got {units!r}")
    out = {}
    for s, u in units.items():
        if s not in SIGNALS:
            raise DatasetError(f"units: unknown signal '{s}'; the signals are {', '.join(SIGNALS)}")
        u = u.strip() if isinstance(u, str) else u
        if u not in UNITS[s]:
            raise DatasetError(f"units: unknown unit {u!r} for {s}; known: {', '.join(UNITS[s])}")
        out[s] = u
    return out


def parse_units(text: str) -> dict:
    """Units from their command-line form, e.g. ``"q=deg,qd=deg/s,t=ms"`` -> {signal: unit}.

    Known units are the keys of [`UNITS`][jaxid.data.UNITS]. Raises DatasetError naming an unknown signal or
    an unknown unit (listing the known ones), or an item that is not ``signal=unit``.
    """
    out = {}
    for token in (x.strip() for x in str(text).split(",")):
        if not token:
            continue
        s, eq, u = (x.strip() for x in token.partition("="))
        if not eq or not u:
            raise DatasetError(f"units: '{token}' is not signal=unit; write e.g. 'q=deg,t=ms'")
        if s in out:
            raise DatasetError(f"units: {s} is given twice in '{text}'")
        out[s] = u
    return _normalise_units(out)


def _normalise_gains(gains) -> tuple[float, ...] | None:
    if gains is None:
        return None
    if isinstance(gains, str):
        return parse_gains(gains)
    return _checked_gains(gains)


def _checked_gains(gains) -> tuple[float, ...]:
    try:
        g = np.asarray(gains, dtype=np.float64)
    except (TypeError, ValueError):
        raise DatasetError(f"gains: expected a sequence of torque constants, N m/A; got {plain(gains)!r}") from None
    if g.ndim != 1 or g.size == 0:
        raise DatasetError(f"gains: expected one torque constant per joint, N m/A; got shape {g.shape}")
    bad = np.flatnonzero(~np.isfinite(g) | (g == 0))
    if bad.size:
        raise DatasetError(
            f"gains: value {g[bad[0]]} for joint {bad[0] + 1} is not a finite nonzero torque constant (N m/A)"
        )
    return tuple(float(x) for x in g)


def parse_gains(text: str) -> tuple[float, ...]:
    """Torque constants from their command-line form ``"10,10.7,..."`` (commas or spaces).

    Returns one float per joint, N·m/A with the gear ratio included. Raises DatasetError naming
    an item that is not a number, or a value that is zero or not finite.
    """
    values = []
    for token in (x for x in re.split(r"[,\s]+", str(text).strip()) if x):
        try:
            values.append(float(token))
        except ValueError:
            raise DatasetError(f"gains: '{token}' is not a number (in '{text}')") from None
    if not values:
        raise DatasetError(f"gains: no value in '{text}'; write e.g. '10,10,10.7'")
    return _checked_gains(values)


def load_mapping(path) -> dict:
    """Read ``columns``, ``units`` and ``gains`` from a small ``.json`` or ``.toml`` file.

    The file holds a table with any of the keys ``columns`` (table signal -> pattern, list of
    names or indices, or the text form of [`parse_columns`][jaxid.data.parse_columns]), ``units`` (table signal ->
    unit, or text) and ``gains`` (list of numbers, or text). Returns a dict of those present,
    ready for ``read(data_file, **load_mapping(path))``. Raises DatasetError naming the file
    for an unreadable file, a syntax error, an unknown key or a bad value.
    """
    path = Path(path)
    content = read_table(path, "a column mapping", DatasetError)
    unknown = sorted(set(content) - {"columns", "units", "gains"})
    if unknown:
        raise DatasetError(f"{path}: unknown key(s) {', '.join(unknown)}; a mapping has columns, units, gains")
    out = {}
    try:
        if "columns" in content:
            columns = content["columns"]
            out["columns"] = parse_columns(columns) if isinstance(columns, str) else columns
            _normalise_columns(out["columns"])
        if "units" in content:
            out["units"] = _normalise_units(content["units"])
        if "gains" in content:
            out["gains"] = _normalise_gains(content["gains"])
    except DatasetError as e:
        raise DatasetError(f"{path}: {e}") from None
    return out


# ----------------------------------------------------------------------------- CSV
def _read_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory, not a file")
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except PermissionError:
        raise DatasetError(f"{path}: cannot read the file (permission denied)") from None
    except OSError as e:
        raise DatasetError(f"{path}: cannot read the file ({e.strerror or e})") from None


def _split(line: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return line.split()
    return next(csv.reader([line], delimiter=delimiter), [])


def _detect_delimiter(first: str, second: str) -> str | None:
    """Tab, ';' or ',' (the first present in ``first`` that splits ``second`` into as many
    cells), else None for whitespace."""
    candidates = [d for d in _DELIMITERS if d in first]
    for d in candidates:
        if not second or len(_split(second, d)) == len(_split(first, d)):
            return d
    return candidates[0] if candidates else None


def _default_columns(header: list[str], n: int | None, where: _Where, need_t: bool = True) -> dict:
    """The columns of the default header t, q1.., [qd1.., qdd1..,] tau1.. (all required; t not
    when ``need_t`` is False: a sampling rate gives the time)."""
    column: dict[str, int] = {}
    groups: dict[str, list[int]] = {g: [] for g in _SIGNALS}
    unknown: list[str] = []
    for c, name in enumerate(header):
        if not name:  # an unnamed column, e.g. after a trailing delimiter: not data
            continue
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
        problems.append(
            "inconsistent joint counts " + ", ".join(f"{g}1..{g}{c}" if c > 1 else f"{g}1" for g, c in counts.items())
        )
    needed = [g for g in _SIGNALS if g in ("q", "tau") or g in counts]
    missing = ["t"] if "t" not in column and need_t else []
    missing += (
        [f"{g}{j}" for g in needed for j in range(1, k + 1) if f"{g}{j}" not in column]
        if k
        else [f"{g}1..{g}n" for g in needed]
    )
    if missing:
        problems.append("missing column(s) " + ", ".join(missing))
    if unknown:
        problems.append("unrecognised column(s) " + ", ".join(f"'{u}'" for u in unknown))
    if problems:
        hint = " (or map the file's own names with columns, e.g. 't=time,q=pos_*,tau=effort_*')" if unknown else ""
        hint += _NO_TIME_HINT if "t" in missing else ""
        raise where.error(
            f"line 1 (header): {'; '.join(problems)}. The header should be: {_expected_header(k or 'n')}{hint}"
        )
    select = {"t": [column["t"]]} if "t" in column else {}
    for g, c in counts.items():
        select[g] = [column[f"{g}{j}"] for j in range(1, c + 1)]
    return select


_NO_TIME_HINT = " (a log without time stamps: give its sampling rate, rate=HZ, CLI --rate HZ)"


def _split_time_columns(item: str, header: list[str] | None, ncells: int, where: _Where, available: str) -> list[int]:
    """[sec, nanosec] column indices of ``t=SEC+NANOSEC`` (names, or 0-based indices)."""
    parts = [p.strip() for p in item.split("+")]
    if len(parts) != 2 or not all(parts):
        raise where.error(
            f"columns: t={item}: split time stamps are two columns, whole seconds + nanoseconds, "
            "e.g. t=header.stamp.sec+header.stamp.nanosec"
        )
    out = []
    for part in parts:
        if part.isdigit():
            if int(part) >= ncells:
                raise where.error(f"columns: t index {part} is out of range; {available}")
            out.append(int(part))
            continue
        hits = [] if header is None else [c for c, h in enumerate(header) if fnmatch.fnmatchcase(h, part)]
        if len(hits) != 1:
            raise where.error(
                f"columns: '{part}' of t={item} matches {len(hits)} columns, not one; {available}"
                if header is not None
                else f"columns: t={item} names columns, but the file has no header row; give 0-based indices, e.g. t=0+1"
            )
        out.append(hits[0])
    return out


def _stamp_pair(header: list[str]) -> list[int]:
    """[sec, nanosec] columns of the one pair ``P sec`` / ``P nanosec`` in the header (``sec``,
    ``nanosec``; ``header.stamp.sec``, ``header.stamp.nanosec``: ROS 2 time stamps exported by
    field), or [] when there is none or more than one."""
    column = {h: c for c, h in enumerate(header)}
    pairs = [
        [column[h], column[h[: -len("sec")] + "nanosec"]]
        for h in header
        if h.endswith("sec")
        and not h.endswith("nanosec")
        and (h == "sec" or h[-4] in "._/")
        and h[: -len("sec")] + "nanosec" in column
    ]
    return pairs[0] if len(pairs) == 1 else []


def _combine_stamps(sec: np.ndarray, nanosec: np.ndarray, where: _Where) -> tuple[np.ndarray, int]:
    """t (N,) s from split stamps, shifted to start at 0, and the first stamp, int ns.

    The sum sec * 10**9 + nanosec is formed in int64 (exact; a float64 holds a Unix time in
    ns to only 256 ns) and shifted by its first value before it becomes a float (exact for
    runs up to 2**53 ns, 104 days)."""
    bad = ~np.isfinite(sec) | ~np.isfinite(nanosec) | (nanosec < 0) | (nanosec >= 1e9)
    bad |= (np.abs(sec) > 2**62 / 1e9) | (sec != np.round(sec)) | (nanosec != np.round(nanosec))
    if bad.any():
        k = int(np.argmax(bad))
        raise where.error(
            f"{where.col('t')}, {where.row(k)}: sec {sec[k]:.17g}, nanosec {nanosec[k]:.17g} is no time stamp "
            "(whole seconds and whole nanoseconds 0 <= nanosec < 10^9 expected)"
        )
    ns = sec.astype(np.int64) * 1_000_000_000 + nanosec.astype(np.int64)
    if not ns.size:
        return ns.astype(np.float64), 0
    return (ns - ns[0]).astype(np.float64) / 1e9, int(ns[0])


def _stamp_text(ns: int) -> str:
    """An int ns time stamp as seconds with all nine decimals."""
    sign = "-" if ns < 0 else ""
    return f"{sign}{abs(ns) // 1_000_000_000}.{abs(ns) % 1_000_000_000:09d} s"


def _mapped_columns(
    columns,
    header: list[str] | None,
    ncells: int,
    where: _Where,
    joint_names=None,
    notes: list | None = None,
    need_t: bool = True,
) -> dict:
    """signal -> 0-based column indices from a ``columns`` mapping (defaults for the rest).
    joint_names: the model's coordinate names; the columns a glob pattern matched for a signal
    are then put in the model's joint order by the names in their headers
    ([`order_by_joint_names`][jaxid.data.order_by_joint_names]), or kept in name order with a line in ``notes`` saying so.
    Time stamps split into whole seconds and nanoseconds (``t=SEC+NANOSEC``, or found as a
    ``sec``/``nanosec`` pair of the header) give t two columns, [sec, nanosec]. need_t: False
    when a sampling rate gives the time, so that a log without a time column is read."""
    spec = _normalise_columns(columns)
    available = (
        f"the header has: {_listing(header)}"
        if header is not None
        else f"the file has no header and {ncells} columns (0..{ncells - 1})"
    )
    chosen, origin = {}, {}
    split = False  # t from two columns, whole seconds + nanoseconds
    for s, items in spec.items():
        if s == "t" and len(items) == 1 and isinstance(items[0], str) and "+" in items[0]:
            chosen[s], origin[s] = _split_time_columns(items[0], header, ncells, where, available), items
            split = True
            continue
        idx = []
        for item in items:
            if isinstance(item, int):
                if item >= ncells:
                    raise where.error(f"columns: {s} index {item} is out of range; {available}")
                idx.append(item)
                continue
            if header is None:
                raise where.error(
                    f"columns: {s}='{item}' names a column, but the file has no "
                    "header row (line 1 is all numbers); give 0-based column "
                    f"indices instead, e.g. {s}=1:7"
                )
            hits = [c for c, h in enumerate(header) if fnmatch.fnmatchcase(h, item)]
            if not hits:
                kind = "pattern" if any(ch in item for ch in "*?[") else "column"
                raise where.error(f"columns: {kind} '{item}' for {s} matches no column; {available}")
            idx += sorted(hits, key=lambda c: _natural_key(header[c]))
        globbed = any(isinstance(x, str) and any(ch in x for ch in "*?[") for x in items)
        if globbed and header is not None and joint_names is not None and s != "t":
            idx = _by_joint_names(s, idx, header, joint_names, where, notes)
        chosen[s], origin[s] = idx, items
    if header is not None:  # signals not mapped keep their default names
        for s in SIGNALS:
            if s in chosen:
                continue
            if s == "t":
                hits = [c for c, h in enumerate(header) if h == "t"]
                if not hits and (hits := _stamp_pair(header)):
                    split = True
            else:
                found = {
                    int(m[1]): c
                    for c, h in enumerate(header)
                    if (m := re.fullmatch(re.escape(s) + r"([1-9][0-9]*)", h))
                }
                hits = [found[j] for j in sorted(found)]
            if hits:
                chosen[s] = hits
    missing = [s for s in ("t", "q", "tau") if s not in chosen and (s != "t" or need_t)]
    if missing:
        example = {"t": "t=time", "q": "q=pos_*", "tau": "tau=effort_*"}
        raise where.error(
            f"columns: no column for {', '.join(missing)}; map "
            f"{'it' if len(missing) == 1 else 'them'}, e.g. "
            f"'{','.join(example[s] for s in missing)}'"
            f"{_NO_TIME_HINT if 't' in missing else ''}; {available}"
        )
    label = (lambda c: where.cell(header[c])) if header is not None else where.cell
    if "t" in chosen and len(chosen["t"]) != 1 and not split:
        raise where.error(
            f"columns: t must be one column, but {origin.get('t', ['t'])} "
            f"gives {len(chosen['t'])}: {', '.join(map(label, chosen['t']))}"
        )
    used: dict[int, str] = {}
    for s, idx in chosen.items():
        for c in idx:
            if c in used:
                raise where.error(f"columns: column {label(c)} is mapped to both {used[c]} and {s}")
            used[c] = s
    return chosen


def _by_joint_names(s: str, idx: list[int], header: list[str], joint_names, where: _Where, notes) -> list[int]:
    """The columns ``idx`` of signal ``s`` in the model's joint order ([`order_by_joint_names`][jaxid.data.order_by_joint_names]),
    or in name order when their headers name none of the joints (said in ``notes``)."""
    try:
        perm = order_by_joint_names([header[c] for c in idx], joint_names)
    except DatasetError as e:
        raise where.error(f"columns: {s}: {e}") from None
    if notes is not None:
        shown = _span([header[c] for c in idx])
        if perm is None:
            notes.append(f"{s} <- columns in name order (their names hold none of the model's joint names): {shown}")
        else:
            notes.append(f"{s} <- columns in the model's joint order, matched by joint name")
    return idx if perm is None else [idx[k] for k in perm]


def _count_ok(text: str, delimiter: str, ncells: int, nlines: int) -> bool:
    """Whether every line of ``text`` holds ncells - 1 delimiters (vectorised count)."""
    b = np.frombuffer(text.encode(), np.uint8)
    ends = np.append(np.flatnonzero(b == 10), b.size)
    if ends.size != nlines:
        return False
    cum = np.searchsorted(np.flatnonzero(b == ord(delimiter)), ends)
    return bool(np.all(np.diff(cum, prepend=0) == ncells - 1))


def _fast_parse(text: str, lines: list[str], delimiter: str | None, ncells: int, usecols: list[int]):
    """The numbers of ``usecols`` parsed by numpy in C, or None when any line is not plain
    (a bad cell, a wrong cell count, a blank line): then the Python scan finds out.
    text: the data rows; lines: text split at its newlines."""
    nlines = len(lines)
    try:
        if delimiter is None:
            data = np.loadtxt(lines, ndmin=2, comments=None, dtype=np.float64)
            return data[:, usecols] if data.shape == (nlines, ncells) else None
        every = usecols == list(range(ncells))  # then numpy checks the cell counts itself
        data = np.loadtxt(
            lines,
            delimiter=delimiter,
            usecols=None if every else usecols,
            quotechar='"',
            ndmin=2,
            comments=None,
            dtype=np.float64,
        )
    except (ValueError, IndexError):
        return None
    if data.shape != (nlines, len(usecols)):  # blank lines are skipped by numpy
        return None
    if not every and not _count_ok(text, delimiter, ncells, nlines):
        return None
    return data


def _slow_parse(
    lines: list[str],
    delimiter: str | None,
    ncells: int,
    usecols: list[int],
    labels: list[str],
    where: _Where,
    ends_newline: bool,
    header: bool,
):
    """Python scan of every row: the reference parser, naming the first bad cell or row."""
    rows = csv.reader(lines, delimiter=delimiter) if delimiter is not None else (line.split() for line in lines)
    data = np.empty((len(lines), len(usecols)))
    last = len(lines) - 1
    width = f"the header has {ncells} columns" if header else f"line 1 has {ncells} cells"
    for r, row in enumerate(rows):
        if len(row) != ncells:
            if r == last and len(row) < ncells:
                raise where.error(
                    f"last line {r + where.first_line} has {len(row)} of "
                    f"{ncells} cells: the file looks truncated (cut off while "
                    "it was written?); delete that line or export the log again"
                )
            raise where.error(f"{where.row(r)}: {len(row)} cells but {width}")
        for i, c in enumerate(usecols):
            try:
                data[r, i] = float(row[c])
            except ValueError:
                message = f"{labels[c]}, {where.row(r)}: '{row[c]}' is not a number"
                if r == last and not ends_newline:
                    message += "; it is on the last line, which does not end in a newline: the file looks truncated"
                elif delimiter in (";", "\t") and "," in row[c]:
                    message += " (a decimal comma? write numbers with a decimal point)"
                raise where.error(message) from None
    return data


def _looks_cut(cell: str, before: str) -> bool:
    """Whether the last cell of a file looks like a cut-off version of the one above it."""
    exp = re.compile(r"[eE][+-]?(\d*)$")
    a, b = exp.search(cell), exp.search(before)
    if a and b and len(a[1]) < len(b[1]):
        return True
    return cell.endswith(".") and not before.endswith(".")


def _check_last_line(text: str, delimiter: str | None, usecols: list[int], labels: list[str], where: _Where) -> None:
    """For a file not ending in a newline: its last cells must not look cut off."""
    k = text.rfind("\n")
    if k < 0:
        return
    last, before = text[k + 1 :], text[text.rfind("\n", 0, k) + 1 : k]
    a, b = _split(last, delimiter), _split(before, delimiter)
    for c in usecols:
        if c < len(a) and c < len(b) and _looks_cut(a[c].strip(), b[c].strip()):
            line = text.count("\n") + where.first_line
            raise where.error(
                f"last line {line} does not end in a newline and its cell "
                f"'{a[c].strip()}' in {labels[c]} looks cut off (the line "
                f"before has '{b[c].strip()}'): the file looks truncated; "
                "delete that line or export the log again"
            )


def _read_csv(path: Path, n: int | None, columns=None, *, fast: bool = True, joint_names=None, need_t: bool = True):
    """(arrays, where, notes) of a CSV file. fast=False skips numpy's parser and scans every
    cell in Python (the reader before numpy's, kept as the fallback; benchmarks/read_csv.py).
    joint_names: the model's coordinate names, to order globbed columns by (`_mapped_columns`).
    need_t: False when a sampling rate gives the time (a log without a time column)."""
    where = _Where(str(path))
    raw = _read_bytes(path)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with a byte-order mark (spreadsheets' "Unicode text")
        try:
            raw = raw.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError as e:
            raise where.error(f"not a readable UTF-16 text file ({e}); save it as UTF-8") from None
    if b"\0" in raw[:65536]:
        raise where.error("not a readable CSV text file (it holds NUL bytes: a binary file?)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise where.error(f"not a readable CSV text file ({e}); save it as UTF-8") from None
    del raw
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    end = len(text)  # drop blank lines at the end
    while end:
        k = text.rfind("\n", 0, end)
        if text[k + 1 : end].strip():
            break
        end = max(k, 0)
    ends_newline, body = end < len(text), text[:end]
    del text
    if not body.strip():
        raise where.error(f"the file is empty; the header row should be {_expected_header('n')}")
    k = body.find("\n")
    first, rest = (body, "") if k < 0 else (body[:k], body[k + 1 :])
    delimiter = _detect_delimiter(first, rest[: rest.find("\n")] if "\n" in rest else rest)
    cells = [c.strip() for c in _split(first, delimiter)]
    has_header = not cells or not all(_is_number(c) for c in cells if c)
    if has_header:
        header, rows, first_line = cells, rest, 2
    else:
        header, rows, first_line = None, body, 1
    del body
    ncells = len(cells)
    where = _Where(str(path), first_line=first_line)
    order_notes: list[str] = []
    if columns is None:
        if header is None:
            raise where.error(
                f"line 1 holds numbers, not the header row "
                f"{_expected_header('n')}; for a file without a header pass "
                "columns with 0-based indices, e.g. 't=0,q=1:7,tau=7:13'"
            )
        select = _default_columns(header, n, where, need_t)
    else:
        select = _mapped_columns(columns, header, ncells, where, joint_names, order_notes, need_t)
    labels = [f"column {where.cell(h)}" for h in (header or range(ncells))]
    usecols = sorted({c for idx in select.values() for c in idx})
    data: np.ndarray | None
    stamps = None
    if not rows:
        data = np.empty((0, len(usecols)))
    else:
        lines = rows.split("\n")
        data = _fast_parse(rows, lines, delimiter, ncells, usecols) if fast else None
        if data is None:
            data = _slow_parse(lines, delimiter, ncells, usecols, labels, where, ends_newline, has_header)
        if "t" in select:
            stamps = _exact_stamps(data[:, usecols.index(select["t"][0])], lines, delimiter, select)
        del lines
        if not ends_newline:
            _check_last_line(rows, delimiter, usecols, labels, where)
    position = {c: i for i, c in enumerate(usecols)}
    arrays = {s: data[:, [position[c] for c in idx]] for s, idx in select.items()}
    names = {s: [header[c] if header else c for c in idx] for s, idx in select.items()}
    notes = []
    quantum, in_seconds = None, False
    if "t" in arrays and arrays["t"].shape[1] == 2:  # t=SEC+NANOSEC: integer stamps, combined exactly
        where = _Where(str(path), names=names, first_line=first_line)
        arrays["t"], start_ns = _combine_stamps(arrays["t"][:, 0], arrays["t"][:, 1], where)
        quantum, in_seconds = 1e-9, True
        notes.append(f"t: sec + nanosec stamps combined in integer ns, 0 at {_stamp_text(start_ns)}")
    elif stamps is not None:  # integers, with a resolution of 1 unit; exact when beyond float64's
        arrays["t"], quantum = _integer_stamps(stamps, notes), 1.0
    elif "t" in arrays:
        arrays["t"] = arrays["t"][:, 0]
    if columns is not None:
        notes.append(
            "columns: "
            + "; ".join(
                f"{s} <- {_span([header[c] if header else c for c in select[s]])}" for s in SIGNALS if s in select
            )
        )
        notes += order_notes
    if delimiter != ",":
        notes.append(f"delimiter {_DELIMITER_NAMES[delimiter]}" + ("" if has_header else ", no header row"))
    elif not has_header:
        notes.append("no header row")
    where = _Where(str(path), names=names, first_line=first_line, t_quantum=quantum, t_seconds=in_seconds)
    return arrays, where, notes


def _integer_stamps(stamps: np.ndarray, notes: list) -> np.ndarray:
    """Integer time stamps (N,) as float64: shifted to start at 0 in integer arithmetic first
    when they are beyond float64's exact integers (2**53), which the Sterbenz shift of
    `_shift_clock` could not recover."""
    stamps = stamps.astype(np.int64)
    if np.abs(stamps).max() <= 2**53:
        return stamps.astype(np.float64)
    notes.append(f"t: integer stamps read exactly and shifted to start at 0 (first stamp {stamps[0]})")
    return (stamps - stamps[0]).astype(np.float64)


def _exact_stamps(t: np.ndarray, lines: list[str], delimiter: str | None, select: dict) -> np.ndarray | None:
    """The time column as int64 when it is written as integers (a counter of ns, us or ms:
    its resolution is one unit, and a float64 holds Unix time in ns only to 256 ns), parsed
    again from the text, else None. t: the column as parsed into float64, (N,)."""
    if "t" not in select or len(select["t"]) != 1 or not t.size or not np.isfinite(t).all():
        return None
    if not (t == np.round(t)).all():
        return None
    try:
        return np.loadtxt(
            lines,
            delimiter=delimiter,
            usecols=select["t"],
            dtype=np.int64,
            quotechar=None if delimiter is None else '"',
            ndmin=1,
            comments=None,
        )
    except (ValueError, OverflowError):  # written as 1.7e18, or beyond int64: the floats are all there is
        return None


# ----------------------------------------------------------------------------- NPZ, HDF5
def _pick_arrays(path: Path, names: list[str], get, columns, kind: str, need_t: bool = True):
    """Arrays of the signals from a store of named arrays (NPZ file or HDF5 file). need_t:
    False when a sampling rate gives the time (no time array needed)."""
    keys = {s: s for s in SIGNALS}
    if "t" not in names and "times" in names and not (columns and "t" in columns):
        keys = dict(_KUKA_KEYS)
    kuka = keys["t"] == "times"
    available = f"the file has: {_listing(names)}"
    if columns is not None:
        if isinstance(columns, str):
            columns = parse_columns(columns)
        _normalise_columns(columns)
        for s, name in columns.items():
            if not isinstance(name, str):
                raise DatasetError(f"{path}: columns: {s} must name one {kind} of the file, got {name!r}; {available}")
            if name not in names:
                raise DatasetError(f"{path}: columns: no {kind} '{name}' for {s}; {available}")
            keys[s] = name
    where = _Where(str(path), keys, kind=kind)
    missing = [keys[s] for s in ("t", "q", "tau") if keys[s] not in names and (s != "t" or need_t)]
    if missing:
        raise where.error(
            f"missing {kind}(s) {', '.join(repr(m) for m in missing)}; expected 't' (N,), 'q', "
            "'tau' and optionally 'qd', 'qdd' (N, n), or the KUKA layout 'times', 'positions', "
            f"'torques', ['velocities', 'accelerations'], or a columns mapping"
            f"{_NO_TIME_HINT if keys['t'] in missing else ''}; {available}"
        )
    arrays = {}
    notes: list[str] = []
    for s, key in keys.items():
        if key in names:
            a = np.asarray(get(key))
            if not np.issubdtype(a.dtype, np.number):
                raise where.error(f"{where.col(s)} has dtype {a.dtype}, not numbers")
            if s == "t" and np.issubdtype(a.dtype, np.integer) and a.ndim == 1 and a.size:
                a = _integer_stamps(a, notes)  # e.g. ns: exact, resolution one unit
                where = dataclasses.replace(where, t_quantum=1.0)
            arrays[s] = np.asarray(a, dtype=np.float64)
    if kuka and arrays["t"].ndim == 1 and arrays["t"].size:
        arrays["t"] = arrays["t"] - arrays["t"][0]
    if columns is not None:
        notes.append(f"columns: {'; '.join(f'{s} <- {k}' for s, k in keys.items() if k in names)}")
    return arrays, where, notes


#: What an NPZ dataset holds, for the messages of `_read_npz`.
NPZ_FORMAT = "an NPZ dataset is np.savez(PATH, t=(N,), q=(N, n), tau=(N, n)[, qd=, qdd=]) of numeric arrays"


def _read_npz(path: Path, columns=None, need_t: bool = True):
    """The arrays of an NPZ file; DatasetError in jaxid's words (numpy's pickle advice never
    reaches the user: jaxid does not load pickled objects from a data file)."""

    def get(f, key):
        try:
            return f[key]
        except ValueError as e:
            if "allow_pickle" not in str(e):
                raise
            raise DatasetError(f"{path}: array {key!r} holds Python objects, not numbers; {NPZ_FORMAT}") from None

    try:
        f = np.load(path, allow_pickle=False)
    except ValueError as e:
        if "pickle" not in str(e):
            raise DatasetError(f"{path}: not a readable NPZ file ({e}); {NPZ_FORMAT}") from None
        # numpy's guess for a file that is neither a zip archive nor a .npy array
        raise DatasetError(f"{path}: not an NPZ file (not a zip archive of arrays); {NPZ_FORMAT}") from None
    except (OSError, zipfile.BadZipFile) as e:
        raise DatasetError(
            f"{path}: not a readable NPZ file, a damaged or truncated zip archive ({e}); {NPZ_FORMAT}"
        ) from None
    if not isinstance(f, np.lib.npyio.NpzFile):
        raise DatasetError(f"{path}: holds one array (a .npy file), not named arrays; {NPZ_FORMAT}")
    try:
        with f:
            return _pick_arrays(path, list(f.files), lambda key: get(f, key), columns, "array", need_t)
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        if isinstance(e, DatasetError):
            raise
        raise DatasetError(f"{path}: not a readable NPZ file, a damaged zip archive ({e}); {NPZ_FORMAT}") from None


def _read_hdf5(path: Path, columns=None, need_t: bool = True):
    try:
        import h5py
    except ImportError:
        raise DatasetError(
            f"{path}: reading HDF5 files needs the h5py package: pip install "
            "h5py (or pip install 'jaxid[hdf5]'); or export the data to CSV or "
            "NPZ"
        ) from None
    try:
        with h5py.File(path, "r") as f:
            names = []
            f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
            return _pick_arrays(path, names, lambda k: f[k][()], columns, "dataset", need_t)
    except OSError as e:
        raise DatasetError(f"{path}: not a readable HDF5 file ({e})") from None


def _read_bag(path: Path, topic: str | None, columns, joint_names=None):
    """(arrays, where, notes) of the JointState messages of a ROS 2 bag ([`jaxid.rosbag`][jaxid.rosbag]);
    joint_names: the model's coordinate names, to put the joints in the model's order by the
    messages' ``name`` arrays ([`order_by_joint_names`][jaxid.data.order_by_joint_names])."""
    if columns is not None:
        raise DatasetError(
            f"{path}: columns are for CSV, NPZ and HDF5 files; a bag's JointState fields are fixed "
            "(position, velocity, effort): choose its topic with topic=NAME (CLI --topic)"
        )
    try:
        js = rosbag.read_joint_states(path, topic)
    except rosbag.BagError as e:
        raise DatasetError(str(e)) from None
    # The one place where a bag's joint names become columns: q, qd, tau hold the joints in the
    # order of js.names (the messages' name lists, reordered to the first message's order), then
    # in the model's order when it is given.
    names = list(js.names)
    order = None if joint_names is None else order_by_joint_names(names, joint_names)
    if order is None and joint_names is not None:
        raise DatasetError(
            f"{path}: the JointState names of {js.topic} ({_listing(names)}) name none of the model's "
            f"joints ({_listing(list(joint_names))}): record the bag of this robot, or choose its model"
        )
    pick = (lambda a: a) if order is None else (lambda a: np.asarray(a)[:, order])
    arrays = {"t": js.stamps_ns, "q": pick(js.q), "tau": pick(js.tau)}
    if js.qd is not None:
        arrays["qd"] = pick(js.qd)
    if order is not None:
        names = [names[k] for k in order]
    stamp = "header.stamp" if js.stamps == "header" else "receive time"
    keys = {"t": stamp, "q": "position", "qd": "velocity", "tau": "effort"}
    where = _Where(str(path), keys, kind=f"{js.topic} field", row_name="message", t_quantum=1e-9, t_seconds=True)
    first = int(js.stamps_ns[0])
    arrays["t"] = (js.stamps_ns - first).astype(np.float64) / 1e9  # shifted in integers: exact to the ns
    notes = list(js.notes) + [
        f"joints: names {', '.join(names)}" + ("" if order is None or order == sorted(order) else " (model order)"),
        f"t: {stamp} in integer ns, 0 at {_stamp_text(first)}",
    ]
    return arrays, where, notes


_READERS = {".csv": "csv", ".tsv": "csv", ".npz": "npz", ".h5": "hdf5", ".hdf5": "hdf5"}


# ----------------------------------------------------------------------------- checks
def _convert(arrays: dict, where: _Where, units: dict, gains, notes: list) -> dict:
    """Convert the signals named in ``units`` to SI; currents times gains to torques."""
    arrays = dict(arrays)
    for s, u in sorted(units.items(), key=lambda item: SIGNALS.index(item[0])):
        if s not in arrays:
            raise where.error(f"units: {s} is given in '{u}' but the data have no {s}")
        how = UNITS[s][u]
        if how == "deg":
            arrays[s] = np.deg2rad(arrays[s])
        elif how != "A" and how != 1.0:
            arrays[s] = arrays[s] / how
        if how != "A" and how != 1.0:
            notes.append(f"{s}: converted from {u} to {_SI[s]}")
    tau_unit = units.get("tau")
    if tau_unit == "A" and gains is None:
        raise where.error(
            "units: tau in 'A' (motor currents) needs gains, the torque constants "
            "of the joints in N m/A with the gear ratio included (CLI: --gains)"
        )
    if gains is not None:
        if tau_unit not in (None, "A"):
            raise where.error(
                f"gains convert motor currents to torques, but tau is given in "
                f"'{tau_unit}'; pass units tau=A or leave the gains out"
            )
        joints = arrays["tau"].shape[1]
        if len(gains) != joints:
            raise where.error(f"gains: {len(gains)} values for {joints} joints")
        arrays["tau"] = arrays["tau"] * np.asarray(gains)
        notes.append(f"tau: motor currents (A) times gains {', '.join(f'{g:g}' for g in gains)} N m/A")
    return arrays


def _check_rate(t: np.ndarray, where: _Where, given: str | None) -> None:
    """Refuse a mean sampling rate outside RATE_RANGE, naming the likely unit of t."""
    lo, hi = RATE_RANGE
    step = (t[-1] - t[0]) / (len(t) - 1)
    if lo <= 1 / step <= hi:
        return
    given = given or "s"
    raw = step * UNITS["t"][given]  # the mean step in the file's numbers
    shown = repr(float(f"{raw:.4g}"))
    plausible = [
        (abs(math.log10(raw / div / 1e-3)), u)
        for u, div in UNITS["t"].items()
        if u in _TIME_WORDS and u != given and lo <= div / raw <= hi
    ]
    if plausible:
        u = min(plausible)[1]
        but = "" if given == "s" else f", not {_TIME_WORDS[given]}"
        raise where.error(
            f"{where.col('t')}: t looks like {_TIME_WORDS[u]}{but}: mean step "
            f"{shown}; pass units t={u} (CLI: --units t={u})"
        )
    raise where.error(
        f"{where.col('t')}: mean step {shown} {given} is a sampling rate of "
        f"{1 / step:.3g} Hz, outside the plausible {lo:g} Hz to {hi:g} Hz; "
        "check the time column and its unit (units t=s, ms, us or ns)"
    )


def _check_gaps(t: np.ndarray, step: np.ndarray, where: _Where, max_gap: float | None = None) -> str | None:
    """Refuse steps longer than GAP_FACTOR median steps (the recording was interrupted) unless
    they are at most ``max_gap`` s; a note on the gaps so accepted, or None."""
    median = float(np.median(step))
    big = np.flatnonzero(step > GAP_FACTOR * median)
    bad = big if max_gap is None else big[step[big] > max_gap]
    if bad.size:
        k = int(bad[0]) + 1
        more = f"; {bad.size - 1} more gap(s) follow" if bad.size > 1 else ""
        allowed = "" if max_gap is None else f", longer than max_gap {max_gap:g} s"
        raise where.error(
            f"{where.col('t')}, {where.row(k)}: gap of {step[k - 1]:.4g} s after t = {t[k - 1]:.6g}"
            f" s, {step[k - 1] / median:.3g} times the median step {median:.3g} s{allowed}{more}: the "
            "recording was interrupted there. Split the file before this row and read the parts "
            "separately, or, when the gap is short against the motion (a few dropped samples of a "
            "fast log), let resampling bridge it with max_gap (CLI --max-gap S)"
        )
    span = float(t[-1] - t[0])
    hole = big[step[big] > GAP_SHARE * span]
    if hole.size:  # accepted by max_gap, but a spline across it would invent the motion of a hole
        k = int(hole[0]) + 1
        raise where.error(
            f"{where.col('t')}, {where.row(k - 1)} to {where.row(k)}: gap of {step[k - 1]:.4g} s after t = "
            f"{t[k - 1]:.6g} s, {100 * step[k - 1] / span:.2g} % of the run's {span:.4g} s: too long to bridge "
            f"(max_gap bridges a few dropped samples, at most {100 * GAP_SHARE:g} % of a run, not a hole in the "
            "motion). Split the file before this row and read the parts separately"
        )
    if big.size:
        return (
            f"{big.size} gap(s) of up to {step[big].max():.3g} s ({step[big].max() / median:.3g} median "
            f"steps) accepted (max_gap {max_gap:g} s)"
        )
    return None


RATE_TOL = 0.01
"""Largest relative difference between a sampling rate given to [`read`][jaxid.data.read] and the mean rate
of the log's own time stamps."""


def _shift_clock(arrays: dict, where: _Where, units: dict, notes: list) -> tuple[dict, float | None]:
    """Stamps of a clock (Unix time, a controller's uptime) shifted to start at 0, and the
    stamps' resolution in s (None when t is not finite: the checks name it).

    A time axis is shifted when it starts later than it lasts (all t within [t0/2, 2 t0]): the
    difference t - t0 is then exact in floating point (Sterbenz's lemma), and the time
    stamps start at 0 as everywhere else. The resolution is the stamps' quantum: 1 ns for
    integer stamps, else the spacing of float64 at the largest |t| (2.4e-7 s at Unix time
    1.7e9 s, 6e-8 of a 250 Hz step), which the time stamps carry however they are shifted."""
    t = arrays["t"]
    if t.ndim != 1 or not t.size or not np.isfinite(t).all():
        return arrays, None
    unit = units.get("t", "s")
    divisor = float(UNITS["t"][unit])
    quantum = where.t_quantum if where.t_quantum is not None else _decimal_quantum(t)
    t0 = t[0]
    if t0 > 0 and t.min() >= t0 / 2 and t.max() <= 2 * t0:
        arrays = dict(arrays)
        arrays["t"] = t - t0
        notes.append(f"t: shifted by its first stamp {float(t0)!r} {unit} to start at 0 (a clock's time; exact)")
    return arrays, quantum / divisor


def _decimal_quantum(t: np.ndarray) -> float:
    """The resolution of float stamps, in t's unit: 10^-k for the fewest decimals k <= 9 that
    every stamp is written with (PlotJuggler writes Unix time with 6: 1 us), when that is at
    most [`DECIMAL_QUANTUM`][jaxid.data.DECIMAL_QUANTUM] of the median step; else float64's spacing at the largest |t|.

    Stamps printed to k decimals are off their true values by up to 10^-k / 2, a "jitter" that
    is only the print's; a resolution near the step itself would hide a real clock's jitter, so
    it is not taken."""
    spacing = float(np.spacing(np.abs(t).max()))
    step = float(np.median(np.diff(t))) if t.size > 1 else 0.0
    for k in range(10):
        scaled = t * 10.0**k
        if 10.0**-k > DECIMAL_QUANTUM * step:
            continue
        if 10.0**-k <= spacing:
            break
        if np.all(np.abs(scaled - np.round(scaled)) <= 4 * spacing * 10.0**k):
            return 10.0**-k
    return spacing


def _on_grid(t: np.ndarray, quantum: float) -> tuple[np.ndarray | None, float]:
    """(the uniform grid from t[0] to t[-1], the largest |t - grid|) when no stamp is further
    from it than the resolution ``quantum`` (s), else (None, largest distance).

    A uniform grid rounded to a resolution q is within q/2 of the true grid, and so are its
    end points: no stamp is further than q from the grid through the rounded ends."""
    grid = np.linspace(t[0], t[-1], t.size)
    off = float(np.abs(t - grid).max())
    slack = 4 * float(np.spacing(max(abs(t[0]), abs(t[-1]))))  # the grid's own round-off
    return (grid if off <= quantum + slack else None), off


def parse_window(window) -> tuple[float | None, float | None]:
    """A time window from ``"T0:T1"`` (s from the log's start; either side may be left out:
    ``"5:"``, ``":30"``) or a pair (T0, T1) with None for an open side. Raises DatasetError
    for a bound that is not a time >= 0 s, T0 >= T1, or no bound at all."""
    if isinstance(window, str):
        parts = window.split(":")
        if len(parts) != 2:
            raise DatasetError(f"window: '{window}' is not T0:T1 (s from the log's start), e.g. '5:30', '5:' or ':30'")
        try:
            bounds = [float(p) if p.strip() else None for p in parts]
        except ValueError:
            raise DatasetError(f"window: '{window}' is not T0:T1 with times in s, e.g. '5:30'") from None
    else:
        try:
            bounds = [None if b is None else float(b) for b in window]
        except (TypeError, ValueError):
            raise DatasetError(f"window: expected (T0, T1) in s or text 'T0:T1'; got {plain(window)!r}") from None
        if len(bounds) != 2:
            raise DatasetError(f"window: expected two bounds (T0, T1) in s; got {plain(window)!r}")
    lo, hi = bounds
    for b in (lo, hi):
        if b is not None and not (math.isfinite(b) and b >= 0):
            raise DatasetError(f"window: bound {b} is not a time >= 0 s from the log's start")
    if lo is None and hi is None:
        raise DatasetError("window: no bound given; write T0:T1 in s from the log's start, e.g. '5:30'")
    if lo is not None and hi is not None and not lo < hi:
        raise DatasetError(f"window: T0 = {lo:g} s is not before T1 = {hi:g} s")
    return lo, hi


def _window_text(window) -> str:
    lo, hi = window
    return f"{'' if lo is None else f'{lo:g}'}:{'' if hi is None else f'{hi:g}'}"


def _rate_and_window(arrays: dict, where: _Where, rate, window, notes: list) -> tuple[dict, _Where]:
    """Check a given sampling rate (Hz) against the mean rate of the stamps, and keep the
    samples within the window (s from the log's start). Time stamps that are not finite or do
    not increase are left to the checks that name them."""
    t = arrays["t"]
    if t.ndim != 1 or t.size < 2 or not np.isfinite(t).all() or (np.diff(t) <= 0).any():
        return arrays, where
    N, span = t.size, float(t[-1] - t[0])
    if rate is not None:
        fs = (N - 1) / span
        if abs(fs / rate - 1) > RATE_TOL:
            raise where.error(
                f"rate {rate:g} Hz disagrees with the mean rate {fs:.6g} Hz of the time stamps in "
                f"{where.col('t')} (by more than {100 * RATE_TOL:g} %); leave the rate out (CLI --rate) to "
                "use the stamps, or check the time column and its unit"
            )
        notes.append(f"rate {rate:g} Hz agrees with the stamps' mean rate {fs:.6g} Hz; the stamps are used")
    if window is None:
        return arrays, where
    lo, hi = window
    text = _window_text(window)
    half = 0.5 * span / (N - 1)
    if any(b is not None and b > span + half for b in (lo, hi)):
        raise where.error(
            f"window {text} s reaches outside the log, which spans 0 to {span:.6g} s from its start; "
            "choose bounds within it (leave a side out for the log's start or end)"
        )
    rel = t - t[0]
    keep = np.ones(N, dtype=bool)
    if lo is not None:
        keep &= rel >= lo - 1e-6 * half  # a bound on a sample's time keeps that sample
    if hi is not None:
        keep &= rel <= hi + 1e-6 * half
    index = np.flatnonzero(keep)
    if index.size < MIN_SAMPLES:
        raise where.error(
            f"window {text} s holds {index.size} samples of the log (0 to {span:.6g} s); a dataset "
            f"needs at least {MIN_SAMPLES}: widen it"
        )
    a, b = int(index[0]), int(index[-1]) + 1
    notes.append(f"window {text} s: samples {a}..{b - 1} of {N}, t = {t[a]:.6g}..{t[b - 1]:.6g} s")
    return {s: v[a:b] for s, v in arrays.items()}, dataclasses.replace(where, offset=where.offset + a)


def _build(
    arrays: dict,
    where: _Where,
    n: int | None,
    resample: bool,
    derivatives: str | None,
    cutoff: float | None,
    *,
    units: dict | None = None,
    gains=None,
    check_time: bool = False,
    max_gap: float | None = None,
    notes=(),
    rate: float | None = None,
    window: tuple[float | None, float | None] | None = None,
    transmission=None,
) -> Dataset:
    """Check the signals, convert units, resample an irregular grid if asked, and fill
    missing derivatives. check_time: also shift a clock's stamps to start at 0, put stamps
    regular to their resolution on the uniform grid, and refuse implausible rates and gaps
    (files). max_gap: s, the longest gap (over GAP_FACTOR median steps) accepted when
    check_time. rate: Hz, checked against the stamps' mean rate. window: (T0, T1) s from the
    log's start (either None), the samples kept, chosen before any other check.
    transmission: a motor-side log's (``jaxid.model.transmission.Transmission``), or None."""
    notes = list(notes)
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
            raise where.error(
                f"{where.col(s)} has {a.shape[0]} rows but {where.col('t')} has "
                f"{N}: every signal needs one row per time stamp"
            )
    joints = {s: arrays[s].shape[1] for s in _SIGNALS if s in arrays}
    if len(set(joints.values())) > 1:
        raise where.error(
            "inconsistent joint counts: " + ", ".join(f"{where.col(s)} has {k}" for s, k in joints.items())
        )
    quantum = None
    if check_time:
        arrays, quantum = _shift_clock(arrays, where, units or {}, notes)
    arrays = _convert(arrays, where, units or {}, gains, notes)
    t = arrays["t"]
    if n is not None and joints["q"] != n:
        raise where.error(f"the data have {joints['q']} joint(s) but n={n} was asked for")
    if rate is not None or window is not None:
        arrays, where = _rate_and_window(arrays, where, rate, window, notes)
        t = arrays["t"]
        N = t.shape[0]
    if N < MIN_SAMPLES:
        raise where.error(f"{N} samples; a dataset needs at least {MIN_SAMPLES}")
    for s, a in arrays.items():
        bad = ~np.isfinite(a.reshape(N, -1))
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise where.error(
                f"{where.col(s, None if s == 't' else j)}, {where.row(k)}: value "
                f"{a.reshape(N, -1)[k, j]} is not finite; repair or remove it"
            )
        if s in _MOTION_UNITS and (big := np.abs(a) > MOTION_BOUND).any():
            k, j = np.argwhere(big)[0]
            raise where.error(
                f"{where.col(s, j)}, {where.row(k)}: value {a[k, j]:.3g} is beyond "
                f"{MOTION_BOUND:g} {_MOTION_UNITS[s]}: not a joint's motion (a corrupt cell?); "
                "repair or remove it"
            )
    step = np.diff(t)
    if (step <= 0).any():
        k = int(np.argmax(step <= 0)) + 1
        what = "duplicate time stamp (same as the row before)" if step[k - 1] == 0 else "time goes backwards"
        raise where.error(
            f"{where.col('t')}, {where.row(k)}: {what}, t = {float(t[k])!r} after "
            f"{float(t[k - 1])!r}; time stamps must increase strictly"
        )
    if check_time:
        _check_rate(t, where, (units or {}).get("t"))
        gaps = _check_gaps(t, step, where, max_gap)
        if gaps:
            notes.append(gaps)

    if transmission is not None:
        arrays = _to_joints(arrays, transmission, where, notes)
    missing = [s for s in ("qd", "qdd") if s not in arrays]
    jitter = np.std(step) / np.mean(step)
    if jitter > JITTER_TOL and quantum is not None:
        grid, off = _on_grid(t, quantum)
        if grid is not None:
            arrays["t"] = t = grid
            notes.append(
                f"t: stamps regular to their resolution ({off:.2g} s off a uniform grid, resolution "
                f"{quantum:.2g} s): put on that grid"
            )
            jitter = np.std(np.diff(t)) / np.mean(np.diff(t))
    if jitter > JITTER_TOL and resample:
        from scipy.interpolate import CubicSpline

        uniform = np.linspace(t[0], t[-1], N)
        arrays = {s: CubicSpline(t, a, axis=0)(uniform) for s, a in arrays.items() if s != "t"}
        arrays["t"] = t = uniform
        notes.append(f"resampled onto a uniform grid, jitter {100 * jitter:.2g}%")
    elif jitter > JITTER_TOL and missing and derivatives is not None:
        raise where.error(
            f"{where.col('t')}: irregular time stamps (std/mean of the step = {jitter:.2g} > "
            f"{JITTER_TOL:g}) and {', '.join(missing)} must be computed by filtered "
            "differentiation, which needs a uniform grid; pass resample=True (CLI: --resample) "
            "to interpolate the signals onto one"
        )
    elif jitter > JITTER_TOL:
        notes.append(f"irregular time stamps kept as recorded, jitter {100 * jitter:.2g}%")

    notes = tuple(notes)
    # device_put, not jnp.asarray: a copy compiles nothing (jnp.asarray, a program per shape)
    qd, qdd = (None if arrays.get(s) is None else device(arrays[s]) for s in ("qd", "qdd"))
    ds = Dataset(
        device(arrays["t"]),
        device(arrays["q"]),
        device(arrays["tau"]),
        qd,
        qdd,
        source=where.path,
        notes=notes,
        motor_side=transmission is not None,
        file_rows=(where.offset, 0 if where.keys is not None else where.first_line),
        gains=None if gains is None else tuple(float(g) for g in np.ravel(gains)),
    )
    if missing and derivatives is not None:
        from jaxid.signals import derivatives as differentiate

        try:
            q, qd, qdd = differentiate(ds.q, ds.dt, method=derivatives, cutoff=cutoff)
        except ValueError as e:
            raise where.error(f"computing {', '.join(missing)} from the positions: {e}") from None
        ds = Dataset(
            ds.t,
            q,
            ds.tau,
            qd if ds.qd is None else ds.qd,
            qdd if ds.qdd is None else ds.qdd,
            source=where.path,
            derivatives=derivatives,
            notes=notes,
            motor_side=ds.motor_side,
            file_rows=ds.file_rows,
            gains=ds.gains,
        )
    return ds


def _to_joints(arrays: dict, transmission, where: _Where, notes: list) -> dict:
    """A motor-side log's signals (SI, currents already times gains) on the joints' side:
    ``q = R q_m + offset``, ``qd, qdd = R (qd_m, qdd_m)``, ``tau = R^{-T} tau_m``
    (``jaxid.model.transmission``); recorded in ``notes``."""
    from jaxid.model.transmission import Transmission

    if not isinstance(transmission, Transmission):
        raise DatasetError(
            f"transmission: expected a jaxid.model.transmission.Transmission (e.g. transmission.load(path, "
            f"robot.coordinate_names)), got {type(transmission).__name__}"
        )
    joints = arrays["q"].shape[1]
    if transmission.n != joints:
        raise where.error(
            f"the transmission maps {transmission.n} motors but the log has {joints} joint columns; "
            "give one ratio (and matrix row) per logged motor"
        )
    out = dict(arrays)
    out["q"] = np.asarray(transmission.joint_positions(arrays["q"]))
    for s in ("qd", "qdd"):
        if s in arrays:
            out[s] = np.asarray(transmission.joint_velocities(arrays[s]))
    out["tau"] = np.asarray(transmission.joint_torques(arrays["tau"]))
    notes.append(transmission.describe())
    return out


def read(
    path,
    *,
    n: int | None = None,
    resample: bool = False,
    derivatives: str | None = "butterworth",
    cutoff: float | None = None,
    columns: dict | str | None = None,
    units: dict | str | None = None,
    gains=None,
    max_gap: float | None = None,
    joint_names=None,
    topic: str | None = None,
    rate: float | None = None,
    window=None,
    transmission=None,
) -> Dataset:
    """Read a dataset from a ``.csv`` (``.tsv``), ``.npz`` or ``.h5``/``.hdf5`` file or a ROS 2
    bag (formats, mapping, units and time stamps in the module docstring).

    path: the file, or a rosbag2 bag (directory with metadata.yaml, or a ``.mcap``/``.db3``
        file; needs ``pip install 'jaxid[ros]'``). n: expected number of joints (checked), or
        None to take the file's.
    topic: a bag's ``sensor_msgs/msg/JointState`` topic, or None for the only one (or
        ``/joint_states`` among several); for bags only.
    rate: sampling rate, Hz, of a log without a time column (t = k / rate); for a log with
        time stamps it is checked against their mean rate (within [`RATE_TOL`][jaxid.data.RATE_TOL]).
    window: (T0, T1) s from the log's start, or text ``"T0:T1"`` ([`parse_window`][jaxid.data.parse_window];
        either side may be left out): only the samples in it are kept, chosen before any
        other check, resampling or filtering.
    resample: interpolate irregular time stamps onto a uniform grid (cubic spline, same N);
        recorded in ``notes``. A gap (a step over GAP_FACTOR median steps) is an error unless
        it is at most ``max_gap`` s.
    max_gap: s, or None: accept gaps up to this long (recorded in ``notes``): a few dropped
        samples of a fast log (the Panda's 1 kHz log of Gaz et al. 2019 has 8.5 ms gaps) are
        short against any motion a robot makes, and resampling bridges them by the cubic
        spline. Choose it well below the period of the fastest motion (e.g. 1/(10 x cutoff)).
    derivatives: method of ``jaxid.signals.derivatives`` ("butterworth", ...) used to compute
        missing ``qd``/``qdd`` from ``q`` (``q`` is then replaced by its filtered version), or
        None to leave them missing.
    cutoff: filter cutoff frequency, Hz, passed to ``jaxid.signals.derivatives``.
    columns: signal -> header glob(s) / 0-based column indices (CSV) or array name (NPZ,
        HDF5), or the text form of [`parse_columns`][jaxid.data.parse_columns]; None for the default names.
    units: signal -> unit (keys of [`UNITS`][jaxid.data.UNITS]), or the text form of [`parse_units`][jaxid.data.parse_units];
        the signals are converted to SI (t s, q rad, qd rad/s, qdd rad/s², tau N·m).
    gains: n torque constants, N·m/A (gear ratio included), for a tau column of motor
        currents: tau = gains * current, shape (n,); or the text of [`parse_gains`][jaxid.data.parse_gains].
        With a ``transmission``, per motor and without the gear: tau_m = gains * current.
    joint_names: the model's coordinate names (``Robot.coordinate_names``), n strings, or None.
        When given, the columns a glob pattern of ``columns`` matched for a signal are put in
        the model's joint order by the joint names in their headers
        ([`order_by_joint_names`][jaxid.data.order_by_joint_names]; a name matching no column or two, or a column naming two
        joints, is an error); headers that name none of the joints keep their name order, noted
        in ``notes``. NPZ and HDF5 arrays keep their layout (they carry no names).
    transmission: None (the log is on the joints' side), or the
        ``jaxid.model.transmission.Transmission`` of a motor-side log: its q, qd, qdd, tau
        (after units and gains) are motor positions, velocities, accelerations and torques,
        converted to the joints (``q = R q_m + offset``, ``tau = R^{-T} tau_m``) before any
        derivative is computed; recorded in ``notes`` and ``Dataset.motor_side``.

    Returns a Dataset with t (N,) s, q, tau, [qd, qdd] (N, n) in SI units; what was converted
    or resampled is listed in its ``notes``.

    Raises DatasetError (a ValueError) naming the file, column and row of any problem, or the
    argument (columns, units, gains) that is wrong.
    """
    path = Path(path)
    units, gains = _normalise_units(units), _normalise_gains(gains)
    if max_gap is not None and not (math.isfinite(max_gap) and max_gap > 0):
        raise DatasetError(f"max_gap must be a finite time > 0 s, got {max_gap}")
    if rate is not None and not (math.isfinite(rate) and RATE_RANGE[0] <= rate <= RATE_RANGE[1]):
        raise DatasetError(f"rate must be a sampling rate of {RATE_RANGE[0]:g} to {RATE_RANGE[1]:g} Hz, got {rate}")
    window = None if window is None else parse_window(window)
    if columns is not None:
        _normalise_columns(columns)
    if rosbag.is_bag(path):
        arrays, where, notes = _read_bag(path, topic, columns, joint_names)
    else:
        arrays, where, notes = _read_file(path, n, columns, joint_names, topic, rate)
    return _finish(
        path, arrays, where, notes, n, resample, derivatives, cutoff, units, gains, max_gap, rate, window, transmission
    )


def _read_file(path: Path, n, columns, joint_names, topic, rate):
    """(arrays, where, notes) of a CSV, NPZ or HDF5 file ([`read`][jaxid.data.read]), after checking that it
    is one and can be read."""
    suffix = path.suffix.lower()
    if topic is not None:
        raise DatasetError(f"{path}: topic {topic!r} is for ROS 2 bags (a directory with metadata.yaml, or .mcap)")
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory, not a dataset file (nor a ROS 2 bag: it has no metadata.yaml)")
    if suffix not in _READERS:
        raise DatasetError(
            f"{path}: unknown file type '{path.suffix}'; a dataset is a .csv "
            "or .npz file (or .h5/.hdf5 with h5py installed), or a ROS 2 bag (.mcap, .db3, or its directory)"
        )
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        raise DatasetError(f"{path}: cannot read the file (permission denied)") from None
    except OSError as e:
        raise DatasetError(f"{path}: cannot read the file ({e.strerror or e})") from None
    kind = _READERS[suffix]
    need_t = rate is None
    if kind == "csv":
        return _read_csv(path, n, columns, joint_names=joint_names, need_t=need_t)
    if kind == "npz":
        return _read_npz(path, columns, need_t)
    return _read_hdf5(path, columns, need_t)


def _finish(
    path: Path,
    arrays,
    where,
    notes,
    n,
    resample,
    derivatives,
    cutoff,
    units,
    gains,
    max_gap,
    rate,
    window,
    transmission,
):
    """The Dataset of a reader's arrays ([`read`][jaxid.data.read]): the time of a log without stamps from
    its rate, then `_build`, then the excitation sidecar."""
    notes = list(notes)
    if "t" not in arrays:  # no time column: the readers allow that only with a rate
        if "t" in units:
            raise where.error(f"units: t is given in '{units['t']}' but the log has no time column (t = k / rate)")
        arrays = dict(arrays)
        arrays["t"] = np.arange(np.shape(arrays["q"])[0]) / rate
        notes.append(f"t: no time column; t = k / rate, rate {rate:g} Hz")
        rate = None  # nothing to check it against
    elif where.t_seconds and "t" in units:
        raise where.error(f"units: t is built in s from whole seconds and nanoseconds; leave out units t={units['t']}")
    ds = _build(
        arrays,
        where,
        n,
        resample,
        derivatives,
        cutoff,
        units=units,
        gains=gains,
        check_time=True,
        max_gap=max_gap,
        notes=notes,
        rate=rate,
        window=window,
        transmission=transmission,
    )
    f0, harmonics = read_excitation(path)
    return ds if f0 is None else dataclasses.replace(ds, base_frequency=f0, harmonics=harmonics)


def _sidecar(path) -> Path:
    return Path(str(path) + ".json")


def read_excitation(path) -> tuple[float | None, int | None]:
    """(base frequency, Hz; harmonics) of the excitation recorded in the sidecar
    ``<path>.json`` of a dataset file (module docstring), or (None, None) without one.
    Raises DatasetError naming the sidecar when it is unreadable or its values are not a
    frequency > 0 and an integer >= 1 (or null)."""
    side = _sidecar(path)
    if not side.is_file():
        return None, None
    try:
        doc = json.loads(side.read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(f"{side}: not a readable JSON sidecar ({e}); repair or delete it") from None
    if not isinstance(doc, dict) or doc.get("jaxid") != "excitation":
        return None, None  # somebody else's file
    f0, h = doc.get("base_frequency_hz"), doc.get("harmonics")
    if f0 is None and h is None and "model" in doc:
        return None, None  # a sidecar that records only the model (module docstring)
    if isinstance(f0, bool) or not isinstance(f0, (int, float)) or not (math.isfinite(f0) and f0 > 0):
        raise DatasetError(f"{side}: base_frequency_hz must be a frequency > 0 Hz, got {f0!r}; repair or delete it")
    if h is not None and (isinstance(h, bool) or not isinstance(h, int) or h < 1):
        raise DatasetError(f"{side}: harmonics must be an integer >= 1 or null, got {h!r}; repair or delete it")
    return float(f0), h


def read_model(path) -> dict | None:
    """The model recorded in the sidecar ``<path>.json`` of a dataset file (``jaxid simulate``
    writes it: the ``model`` entry of params.json, see ``jaxid.model.description``), or None when
    there is no jaxid sidecar or it records no model. Raises DatasetError naming the sidecar when
    it is unreadable or its ``model`` is not a table."""
    side = _sidecar(path)
    if not side.is_file():
        return None
    try:
        doc = json.loads(side.read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(f"{side}: not a readable JSON sidecar ({e}); repair or delete it") from None
    if not isinstance(doc, dict) or doc.get("jaxid") != "excitation" or doc.get("model") is None:
        return None
    if not isinstance(doc["model"], dict):
        raise DatasetError(f"{side}: model must be a table (a params.json model entry), got {doc['model']!r}")
    return doc["model"]


def from_arrays(
    t,
    q,
    tau,
    qd=None,
    qdd=None,
    *,
    resample: bool = False,
    derivatives: str | None = None,
    cutoff: float | None = None,
    source: str = "<arrays>",
    transmission=None,
) -> Dataset:
    """A checked Dataset from arrays: t (N,) s, q (N, n) rad, tau (N, n) N·m, optional
    qd (N, n) rad/s and qdd (N, n) rad/s². The other arguments are those of [`read`][jaxid.data.read],
    except that missing derivatives are left missing unless ``derivatives`` names a method,
    and that the sampling rate and gaps are not checked (arrays are not log files). transmission:
    the arrays are the motors' (as in [`read`][jaxid.data.read]).
    """
    arrays = {
        s: np.asarray(a, dtype=np.float64) for s, a in dict(t=t, q=q, tau=tau, qd=qd, qdd=qdd).items() if a is not None
    }
    if q is None or tau is None:
        raise DatasetError(f"{source}: q and tau are required")
    where = _Where(source, {s: s for s in arrays})
    return _build(arrays, where, None, resample, derivatives, cutoff, transmission=transmission)


def motor_log(dataset: Dataset, transmission) -> Dataset:
    """The log a controller would record of a joint-side ``dataset`` behind ``transmission``
    (``jaxid.model.transmission.Transmission``): motor positions ``R^{-1} (q - offset)`` (N, n) rad,
    velocities and accelerations ``R^{-1} (qd, qdd)``, motor torques ``R^T tau`` (N, n) N m; the
    same t. The inverse of ``read(..., transmission=)`` (e.g. to write a simulated motor-side log).
    DatasetError when the sizes differ."""
    if transmission.n != dataset.n:
        raise DatasetError(
            f"{dataset.source}: the transmission maps {transmission.n} motors but the dataset has {dataset.n} joints"
        )
    move = lambda x: None if x is None else jnp.asarray(transmission.motor_velocities(np.asarray(x)))
    return dataclasses.replace(
        dataset,
        q=jnp.asarray(transmission.motor_positions(np.asarray(dataset.q))),
        qd=move(dataset.qd),
        qdd=move(dataset.qdd),
        tau=jnp.asarray(transmission.motor_torques(np.asarray(dataset.tau))),
        motor_side=False,
    )


def _columns(ds: Dataset) -> dict:
    return {s: np.asarray(getattr(ds, s)) for s in ("t",) + _SIGNALS if getattr(ds, s) is not None}


def write(dataset: Dataset, path, *, model: dict | None = None) -> None:
    """Write ``dataset`` to a ``.csv`` (``%.17g``, exact round trip) or ``.npz`` file, in SI
    units with the default names (t (N,), q, [qd, qdd,] tau (N, n)).

    Optional signals that are None are left out; the excitation's base frequency and
    harmonics, when set, and ``model`` (a JSON-able table: the params.json ``model`` entry of
    the robot the data are of), when given, go to the sidecar ``<path>.json`` (module docstring). The write is atomic (see
    [`jaxid.atomic.atomic_write`][jaxid.atomic.atomic_write]): on any failure the previous file is left as it was and
    no temporary file remains. Raises DatasetError naming the path for an unknown suffix, a
    directory as output, a missing or non-writable directory, or a failed write.
    """
    path = Path(path)
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory; give a file name ending in .csv or .npz")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".npz"):
        raise DatasetError(f"{path}: unknown file type '{path.suffix}'; write a .csv or .npz file")
    columns = _columns(dataset)
    try:
        if suffix == ".npz":
            with atomic_write(path, "wb") as f:
                np.savez(f, **columns)
        else:
            names = ["t"] + [f"{s}{j + 1}" for s in columns if s != "t" for j in range(dataset.n)]
            data = np.column_stack([columns["t"]] + [columns[s] for s in columns if s != "t"])
            with atomic_write(path, "w", newline="\n") as f:
                np.savetxt(f, data, fmt="%.17g", delimiter=",", header=",".join(names), comments="")
        side = _sidecar(path)
        if dataset.base_frequency is not None or model is not None:
            f0 = dataset.base_frequency
            doc = {
                "jaxid": "excitation",
                "base_frequency_hz": None if f0 is None else float(f0),
                "harmonics": None if f0 is None or dataset.harmonics is None else int(dataset.harmonics),
            }
            with atomic_write(side, "w") as f:
                json.dump(doc if model is None else {**doc, "model": model}, f)
                f.write("\n")
        elif side.is_file():  # a stale sidecar would describe an excitation these samples do not have
            try:
                ours = json.loads(side.read_text()).get("jaxid") == "excitation"
            except (OSError, ValueError, AttributeError):
                ours = False
            if ours:
                side.unlink()
    except OutputPathError as e:
        raise DatasetError(str(e)) from None


def concatenate(datasets) -> Dataset:
    """Stack datasets sample after sample (e.g. several runs identified together).

    All need the same number of joints and the same signals present. Each time axis is
    shifted to continue one mean step after the previous one, so ``t`` stays increasing; the
    join between two runs is not a continuous motion, so filter and differentiate each run
    before concatenating, never after. The notes of all are kept (each once).
    """
    datasets = list(datasets)
    if not datasets:
        raise DatasetError("concatenate: no datasets given")

    def layout(d):
        return (d.n,) + tuple(s for s in ("qd", "qdd") if getattr(d, s) is not None)

    if len({layout(d) for d in datasets}) > 1:
        raise DatasetError(
            "concatenate: the datasets differ in joint count or signals: "
            + "; ".join(f"{d.source}: n, signals = {layout(d)}" for d in datasets)
        )
    times, start = [], 0.0
    for d in datasets:
        times.append(d.t - d.t[0] + start)
        start = float(times[-1][-1]) + d.dt

    def stack(s):
        return None if getattr(datasets[0], s) is None else jnp.concatenate([getattr(d, s) for d in datasets])

    methods = {d.derivatives for d in datasets}
    if len({d.motor_side for d in datasets}) > 1:
        raise DatasetError(
            "concatenate: some runs were logged on the motors' side and some on the joints': read them all the same way"
        )
    notes = tuple(dict.fromkeys(x for d in datasets for x in d.notes))
    gains = {d.gains for d in datasets}
    return Dataset(
        jnp.concatenate(times),
        stack("q"),
        stack("tau"),
        stack("qd"),
        stack("qdd"),
        source=" + ".join(str(d.source) for d in datasets),
        derivatives=methods.pop() if len(methods) == 1 else None,
        notes=notes,
        motor_side=datasets[0].motor_side,
        gains=gains.pop() if len(gains) == 1 else None,
    )
