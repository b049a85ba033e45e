"""Datasets: exact file round trips, the KUKA recordings, rejection of bad files, resampling
of irregular time stamps, and derivatives computed from positions."""

import re
from pathlib import Path

import numpy as np
import pytest

from jaxid import data

KUKA = Path(__file__).resolve().parents[1] / "examples/data/kuka_lwr4"
N, NJ, DT = 40, 3, 0.01


def _arrays(seed=0, n=NJ, N=N):
    rng = np.random.default_rng(seed)
    t = 0.3 + DT * np.arange(N)
    return dict(
        t=t,
        q=rng.normal(size=(N, n)),
        tau=rng.normal(size=(N, n)) * 1e3,
        qd=rng.normal(size=(N, n)) / 3,
        qdd=rng.normal(size=(N, n)) * 1e-7,
    )


def _assert_same(a, b):
    for s in ("t", "q", "qd", "qdd", "tau"):
        x, y = getattr(a, s), getattr(b, s)
        assert (x is None) == (y is None), s
        if x is not None:
            assert np.array_equal(np.asarray(x), np.asarray(y)), s


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
@pytest.mark.parametrize("derived", [True, False])
def test_round_trip_is_exact(tmp_path, suffix, derived):
    arrays = _arrays()
    if not derived:
        del arrays["qd"], arrays["qdd"]
    ds = data.from_arrays(**arrays)
    path = tmp_path / f"run{suffix}"
    data.write(ds, path)
    back = data.read(path, derivatives=None)
    _assert_same(ds, back)
    assert back.source == str(path) and back.n == NJ and len(back) == N
    assert back.dt == pytest.approx(DT, rel=1e-12)


def test_csv_header_layout(tmp_path):
    data.write(data.from_arrays(**_arrays(n=2)), tmp_path / "a.csv")
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert header == "t,q1,q2,qd1,qd2,qdd1,qdd2,tau1,tau2"


@pytest.mark.skipif(not KUKA.is_dir(), reason="KUKA LWR4 data not present")
@pytest.mark.parametrize("run", [1, 2, 3])
def test_kuka_recordings(run):
    path = KUKA / f"measurements_{run}.npz"
    ds = data.read(path)
    raw = np.load(path)
    for s in ("q", "qd", "qdd", "tau"):
        assert getattr(ds, s).shape == (5027, 7)
    assert ds.t[0] == 0.0 and np.all(np.diff(ds.t) > 0)
    assert 1 / ds.dt == pytest.approx(200.0, rel=1e-3)
    assert np.array_equal(ds.tau, raw["torques"]) and np.array_equal(ds.qdd, raw["accelerations"])
    assert ds.derivatives is None


def test_concatenate_and_slice():
    a = data.from_arrays(**_arrays(0))
    b = data.from_arrays(**_arrays(1, N=25))
    c = data.concatenate([a, b])
    assert len(c) == N + 25 and np.all(np.diff(c.t) > 0)
    assert np.array_equal(c.q, np.concatenate([a.q, b.q]))
    assert np.array_equal(c.qdd[N:], b.qdd)
    assert c.dt == pytest.approx(DT)
    s = c.slice(5, 30, 2)
    assert np.array_equal(s.tau, np.asarray(c.tau)[5:30:2]) and len(s) == 13
    with pytest.raises(ValueError, match="differ in joint count"):
        data.concatenate([a, data.from_arrays(**_arrays(n=2))])


# ----------------------------------------------------------------------------- bad files
def _csv(tmp_path, header="t,q1,q2,tau1,tau2", rows=N, edit=None, name="bad.csv"):
    """A good CSV (t = k*DT) with cells replaced by edit {(data row from 1, column): text}."""
    ncol = len(header.split(","))
    table = [[repr(k * DT)] + [repr(float(np.sin(k + c))) for c in range(1, ncol)] for k in range(rows)]
    for (r, c), text in (edit or {}).items():
        table[r - 1][c] = text
    path = tmp_path / name
    path.write_text("\n".join([header] + [",".join(row) for row in table]) + "\n")
    return path


BAD_CSV = {
    "missing": (
        dict(header="t,q1,q2,tau1"),
        ["line 1", "missing column(s) tau2", "t, q1..q2, [qd1..qd2, qdd1..qdd2,] tau1..tau2"],
    ),
    "unknown": (dict(header="time,q1,tau1"), ["missing column(s) t", "unrecognised column(s) 'time'"]),
    "joints": (
        dict(header="t,q1,q2,q3,tau1,tau2"),
        ["inconsistent joint counts q1..q3, tau1..tau2", "missing column(s) tau3"],
    ),
    "gap": (dict(header="t,q1,q3,tau1,tau2,tau3"), ["missing column(s) q2"]),
    "text": (dict(edit={(5, 2): "abc"}), ["column 'q2'", "row 5 (line 6)", "'abc' is not a number"]),
    "nan": (dict(edit={(7, 4): "nan"}), ["column 'tau2'", "row 7 (line 8)", "not finite"]),
    "inf": (dict(edit={(3, 1): "-inf"}), ["column 'q1'", "row 3 (line 4)", "not finite"]),
    "backwards": (
        dict(edit={(9, 0): "0.05"}),
        ["column 't'", "row 9 (line 10)", "time goes backwards", "increase strictly"],
    ),
    "duplicate": (dict(edit={(12, 0): repr(10 * DT)}), ["column 't'", "row 12 (line 13)", "duplicate time stamp"]),
    "ragged": (dict(edit={(4, 3): "1,2"}), ["row 4 (line 5)", "6 cells", "5 columns"]),
    "short": (dict(rows=5), ["5 samples", f"at least {data.MIN_SAMPLES}"]),
    "empty": (dict(rows=0, header=""), ["empty", "t, q1..qn"]),
}


@pytest.mark.parametrize("case", BAD_CSV)
def test_bad_csv_rejected(tmp_path, case):
    kwargs, phrases = BAD_CSV[case]
    path = _csv(tmp_path, **kwargs)
    with pytest.raises(data.DatasetError) as err:
        data.read(path, derivatives=None)
    assert isinstance(err.value, ValueError)
    message = str(err.value)
    for phrase in [str(path)] + phrases:
        assert phrase in message, (phrase, message)


def test_wrong_joint_count_and_suffix(tmp_path):
    with pytest.raises(ValueError, match=r"have 2 joint\(s\) but n=3"):
        data.read(_csv(tmp_path), n=3, derivatives=None)
    with pytest.raises(ValueError, match=r"unknown file type '\.txt'.*\.csv or \.npz"):
        data.read(tmp_path / "run.txt")
    with pytest.raises(ValueError, match=r"unknown file type '\.mat'"):
        data.write(data.from_arrays(**_arrays()), tmp_path / "run.mat")


def test_bad_npz_rejected(tmp_path):
    a = _arrays()
    cases = {
        "length": (dict(a, tau=a["tau"][:-1]), ["array 'tau' has 39 rows", "array 't' has 40"]),
        "nan": (
            dict(a, q=np.where(np.arange(N)[:, None] * [0, 1, 0] == 4, np.nan, a["q"])),
            ["array 'q'[:, 1]", "row 4", "not finite"],
        ),
        "missing": ({k: a[k] for k in ("t", "q")}, ["missing array(s) 'tau'"]),
        "shape": (dict(a, qd=a["qd"][:, 0]), ["array 'qd' must have shape (N, n)"]),
        "joints": (dict(a, qdd=a["qdd"][:, :2]), ["inconsistent joint counts", "array 'qdd' has 2"]),
    }
    for case, (arrays, phrases) in cases.items():
        path = tmp_path / f"{case}.npz"
        np.savez(path, **arrays)
        with pytest.raises(data.DatasetError) as err:
            data.read(path)
        for phrase in [str(path)] + phrases:
            assert phrase in str(err.value), (case, phrase, str(err.value))


def test_kuka_layout_names_its_arrays(tmp_path):
    a = _arrays()
    tau = a["tau"].copy()
    tau[6, 2] = np.inf
    path = tmp_path / "kuka.npz"
    np.savez(path, times=1.46e9 + a["t"], positions=a["q"], torques=tau)
    with pytest.raises(data.DatasetError, match=r"array 'torques'\[:, 2\], row 6"):
        data.read(path)


# ----------------------------------------------------------------------------- time axis
W = 2 * np.pi * 1.3  # rad/s, a slow sinusoid well inside the default filter band


def _sine(t):
    return (
        np.sin(W * t)[:, None] * [1.0, 0.5],
        W * np.cos(W * t)[:, None] * [1.0, 0.5],
        -(W**2) * np.sin(W * t)[:, None] * [1.0, 0.5],
    )


def test_jitter_resampled(tmp_path):
    rng = np.random.default_rng(3)
    t = 0.005 * np.arange(400) + rng.uniform(-5e-4, 5e-4, 400)
    q, qd, qdd = _sine(t)
    path = tmp_path / "jitter.npz"
    np.savez(path, t=t, q=q, tau=3 * q)
    with pytest.raises(ValueError, match=r"irregular time stamps.*resample=True \(CLI: --resam"):
        data.read(path)
    ds = data.read(path, resample=True, derivatives=None)
    step = np.diff(np.asarray(ds.t))
    assert len(ds) == 400 and np.std(step) / np.mean(step) < 1e-12
    assert ds.t[0] == t[0] and ds.t[-1] == t[-1]
    # Not-a-knot cubic spline: error ~ (W h)^4 / 384 relative to the amplitude.
    np.testing.assert_allclose(ds.q, _sine(np.asarray(ds.t))[0], atol=1e-6)
    np.testing.assert_allclose(ds.tau, 3 * np.asarray(ds.q), rtol=1e-12, atol=1e-13)
    # With every derivative measured the recorded stamps are kept (see the module docstring).
    np.savez(path, t=t, q=q, qd=qd, qdd=qdd, tau=3 * q)
    assert np.array_equal(data.read(path).t, t)


def test_derivatives_computed_when_missing(tmp_path):
    t = np.arange(1000) / 200.0
    q, qd, qdd = _sine(t)
    path = tmp_path / "sine.csv"
    data.write(data.from_arrays(t, q, 2 * q), path)
    ds = data.read(path, cutoff=10.0)
    assert ds.derivatives == "butterworth"
    # Past the filter's edge transients (0.5 s for a 10 Hz 4th-order filtfilt) the error is
    # that of the central differences: (W h)^2 / 6 for qd, (W h)^2 / 12 for qdd (relative).
    inner, wh2 = slice(100, -100), (W * 0.005) ** 2
    np.testing.assert_allclose(ds.q[inner], q[inner], atol=1e-6)
    np.testing.assert_allclose(ds.qd[inner], qd[inner], atol=1.2 * wh2 / 6 * W)
    np.testing.assert_allclose(ds.qdd[inner], qdd[inner], atol=1.2 * wh2 / 12 * W**2)
    # A measured velocity is kept; only the acceleration is computed (cubic Savitzky-Golay
    # over 17 samples: its curvature bias on this sinusoid is below 1 %).
    data.write(data.from_arrays(t, q, 2 * q, qd=qd), path)
    ds = data.read(path, derivatives="savgol")
    assert np.array_equal(ds.qd, qd) and ds.derivatives == "savgol"
    np.testing.assert_allclose(ds.qdd[inner], qdd[inner], atol=1e-2 * W**2)


# ----------------------------------------------------------------------------- real logs
def _log(tmp_path, header, table, delimiter=",", name="log.csv", end="\n", fmt=repr):
    """A CSV with the given header (list of names, or None) and rows of numbers or text."""
    lines = [] if header is None else [delimiter.join(header)]
    lines += [delimiter.join(x if isinstance(x, str) else fmt(float(x)) for x in row) for row in table]
    path = tmp_path / name
    path.write_text("\n".join(lines) + end)
    return path


def test_mapping_globs_in_natural_order(tmp_path):
    rng = np.random.default_rng(5)
    nj, rows = 11, 20
    t = 0.002 * np.arange(rows)
    pos, vel, eff = (rng.normal(size=(rows, nj)) for _ in range(3))
    # Columns in a scrambled order, plus a text column nobody maps.
    order = (
        [f"effort_{j}" for j in range(1, nj + 1)]
        + ["time", "status"]
        + [f"pos_{j}" for j in (10, 2, 11, 1, 3, 4, 5, 6, 7, 8, 9)]
        + [f"vel_{j}" for j in range(nj, 0, -1)]
    )
    source = {"time": t, "status": None}
    for name, a in (("pos", pos), ("vel", vel), ("effort", eff)):
        source.update({f"{name}_{j + 1}": a[:, j] for j in range(nj)})
    table = [["OK" if h == "status" else source[h][k] for h in order] for k in range(rows)]
    path = _log(tmp_path, order, table)
    for columns in (
        {"t": "time", "q": "pos_*", "qd": "vel_*", "tau": "effort_*"},
        "q=pos_*, qd=vel_*, tau=effort_*, t=time",
    ):
        ds = data.read(path, columns=columns, derivatives=None)
        assert np.array_equal(ds.q, pos) and np.array_equal(ds.qd, vel)
        assert np.array_equal(ds.tau, eff) and np.array_equal(ds.t, t) and ds.qdd is None
        assert ds.notes[0].startswith("columns: t <- time; q <- pos_1, pos_2, ..., pos_11")
    assert data.parse_columns("q=pos_*,qd=vel_*,tau=effort_*,t=time") == {
        "q": "pos_*",
        "qd": "vel_*",
        "tau": "effort_*",
        "t": "time",
    }
    # A mapped column that is not a number is still named exactly.
    table[6][order.index("pos_3")] = "n/a"
    bad = _log(tmp_path, order, table, name="bad.csv")
    with pytest.raises(data.DatasetError, match=r"column 'pos_3', row 7 \(line 8\): 'n/a' is no"):
        data.read(bad, columns="t=time,q=pos_*,tau=effort_*")


def test_mapping_errors(tmp_path):
    path = _log(
        tmp_path,
        ["time", "pos_1", "pos_2", "cur_1", "cur_2"],
        np.column_stack([0.01 * np.arange(12), np.ones((12, 4))]),
    )
    cases = {
        "t=time,q=joint_*,tau=cur_*": [
            "pattern 'joint_*' for q matches no column",
            "the header has: time, pos_1, pos_2, cur_1, cur_2",
        ],
        "t=clock,q=pos_*,tau=cur_*": ["column 'clock' for t matches no column"],
        "t=time,q=pos_*": ["no column for tau", "tau=effort_*", "the header has: time"],
        "t=time,q=pos_*,tau=pos_2,cur_1": ["column 'pos_2' is mapped to both q and tau"],
        "t=time,q=pos_*,tau=9:11": ["tau index 9 is out of range"],
        "t=pos_*,q=pos_*,tau=cur_*": ["t must be one column", "'pos_1', 'pos_2'"],
    }
    for columns, phrases in cases.items():
        with pytest.raises(data.DatasetError) as err:
            data.read(path, columns=columns, derivatives=None)
        for phrase in [str(path)] + phrases:
            assert phrase in str(err.value), (columns, phrase, str(err.value))
    for text, phrase in [
        ("x=pos_*", "unknown signal 'x'"),
        ("q=a,q=b", "q is given twice"),
        ("pos_*", "'pos_*' has no signal"),
        ("q=", "no column given for q"),
        ("q=5:3", "empty range"),
    ]:
        with pytest.raises(data.DatasetError, match=re.escape(phrase)):
            data.parse_columns(text)


def test_headerless_columns_by_index(tmp_path):
    a = _arrays()
    table = np.column_stack([a["t"], a["tau"], a["q"]])  # t, tau1..3, q1..3
    path = _log(tmp_path, None, table, delimiter="\t", name="raw.csv")
    for columns in ("t=0,tau=1:4,q=4:7", {"t": 0, "tau": [1, 2, 3], "q": "4:7"}, "t=0,tau=1,2,3,q=4,5,6"):
        ds = data.read(path, columns=columns, derivatives=None)
        assert np.array_equal(ds.q, a["q"]) and np.array_equal(ds.tau, a["tau"])
        assert np.array_equal(ds.t, a["t"])
    assert "delimiter tab, no header row" in ds.notes
    with pytest.raises(data.DatasetError, match="line 1 holds numbers, not the header row"):
        data.read(path, derivatives=None)
    with pytest.raises(
        data.DatasetError,
        match=r"q='pos_\*' names a column, but the file has "
        r"no header row",
    ):
        data.read(path, columns="t=0,tau=1:4,q=pos_*", derivatives=None)
    with pytest.raises(
        data.DatasetError,
        match=r"tau index 7 is out of range; the file has no "
        r"header and 7 columns \(0..6\)",
    ):
        data.read(path, columns="t=0,tau=7,q=4:7", derivatives=None)
    table = table.astype(object)
    table[2, 5] = "x"
    with pytest.raises(data.DatasetError, match=r"column 5 \(0-based\), row 3 \(line 3\): 'x'"):
        data.read(_log(tmp_path, None, table, name="bad.csv"), columns="t=0,tau=1:4,q=4:7")


@pytest.mark.parametrize("delimiter", [";", "\t", " ", "  "])
def test_delimiters(tmp_path, delimiter):
    a = _arrays()
    ds = data.from_arrays(**a)
    names = ["t"] + [f"{s}{j}" for s in ("q", "qd", "qdd", "tau") for j in (1, 2, 3)]
    table = np.column_stack([a[s] for s in ("t", "q", "qd", "qdd", "tau")])
    back = data.read(_log(tmp_path, names, table, delimiter=delimiter))
    _assert_same(ds, back)
    assert back.notes == ({";": ("delimiter ';'",), "\t": ("delimiter tab",)}.get(delimiter, ("delimiter whitespace",)))


def test_trailing_delimiter_and_crlf(tmp_path):
    a = _arrays()
    ds = data.from_arrays(**a)
    path = tmp_path / "run.csv"
    data.write(ds, path)
    lines = path.read_text().splitlines()
    path.write_bytes("".join(line + ",\r\n" for line in lines).encode())
    _assert_same(ds, data.read(path))


def test_decimal_comma_is_named(tmp_path):
    path = _log(tmp_path, ["t", "q1", "tau1"], [[k / 100, "0,5", 1] for k in range(12)], delimiter=";")
    with pytest.raises(
        data.DatasetError,
        match=r"column 'q1', row 1 \(line 2\): '0,5' is not "
        r"a number \(a decimal comma\?",
    ):
        data.read(path, derivatives=None)


def test_units_converted_exactly(tmp_path):
    a = _arrays()
    t_ms = 2.0 * np.arange(N) + 17.0
    q_deg = np.degrees(a["q"]) * 10
    names = ["t"] + [f"{s}{j}" for s in ("q", "qd", "tau") for j in (1, 2, 3)]
    table = np.column_stack([t_ms, q_deg, a["qd"] * 57, a["tau"] * 1e3])
    path = _log(tmp_path, names, table)
    ds = data.read(path, units="q=deg,t=ms,qd=deg/s,tau=mNm", derivatives=None)
    assert np.array_equal(ds.t, t_ms / 1e3) and np.array_equal(ds.q, np.deg2rad(q_deg))
    assert np.array_equal(ds.qd, np.deg2rad(a["qd"] * 57))
    assert np.array_equal(ds.tau, a["tau"] * 1e3 / 1e3)
    assert ds.notes == (
        "t: converted from ms to s",
        "q: converted from deg to rad",
        "qd: converted from deg/s to rad/s",
        "tau: converted from mNm to N m",
    )
    assert data.parse_units("q=deg, t=ms") == {"q": "deg", "t": "ms"}
    # Without the unit the time axis is implausible, and the message names the likely unit.
    with pytest.raises(data.DatasetError, match=r"t looks like milliseconds: mean step 2\.0; pass units t=ms"):
        data.read(path, derivatives=None)
    with pytest.raises(data.DatasetError, match=r"t looks like microseconds, not milliseconds: mean step 2000\.0"):
        data.read(
            _log(tmp_path, names, np.column_stack([table[:, 0] * 1e3, table[:, 1:]])), units="t=ms", derivatives=None
        )
    with pytest.raises(data.DatasetError, match=r"mean step 1e-07 s is a sampling rate of 1e\+07"):
        data.read(_log(tmp_path, names, np.column_stack([table[:, 0] * 5e-8, table[:, 1:]])), derivatives=None)


def test_unit_errors():
    with pytest.raises(data.DatasetError) as err:
        data.parse_units("q=degree")
    assert str(err.value) == "units: unknown unit 'degree' for q; known: rad, deg"
    with pytest.raises(data.DatasetError, match=r"unknown unit 'sec' for t; known: s, ms, us"):
        data.read("whatever.csv", units={"t": "sec"})
    with pytest.raises(data.DatasetError, match="units: unknown signal 'x'"):
        data.parse_units("x=rad")
    with pytest.raises(data.DatasetError, match="'deg' is not signal=unit"):
        data.parse_units("deg")


def test_gains_turn_currents_into_torques(tmp_path):
    a = _arrays(n=2)
    names = ["t", "q1", "q2", "tau1", "tau2"]
    path = _log(tmp_path, names, np.column_stack([a["t"], a["q"], a["tau"] / 1e3]))
    gains = (10.0, 10.7)
    for kwargs in (dict(gains=gains), dict(gains="10, 10.7", units="tau=A")):
        ds = data.read(path, derivatives=None, **kwargs)
        assert np.array_equal(ds.tau, a["tau"] / 1e3 * np.array(gains))
        assert ds.notes == ("tau: motor currents (A) times gains 10, 10.7 N m/A",)
    assert data.parse_gains("10 10.7,3") == (10.0, 10.7, 3.0)
    with pytest.raises(data.DatasetError, match=r"^.*log\.csv: gains: 3 values for 2 joints$"):
        data.read(path, gains=[1, 2, 3], derivatives=None)
    with pytest.raises(data.DatasetError, match="tau in 'A' .* needs gains"):
        data.read(path, units="tau=A", derivatives=None)
    with pytest.raises(data.DatasetError, match="but tau is given in 'Nm'"):
        data.read(path, units="tau=Nm", gains=gains, derivatives=None)
    with pytest.raises(data.DatasetError, match=r"gains: 'x' is not a number \(in '10,x'\)"):
        data.parse_gains("10,x")
    with pytest.raises(data.DatasetError, match="value 0.0 for joint 2 is not a finite nonzero"):
        data.parse_gains("1,0")


def test_truncated_last_line(tmp_path):
    names = ["t", "q1", "q2", "tau1", "tau2"]
    table = [[k * DT, 1.5, -2.25, 1.25e-05, 3.0e-06] for k in range(40)]
    fmt = "{:.6g}".format
    for end in ("", "\n"):
        cut = _log(tmp_path, names, table[:-1] + [table[-1][:3]], end=end, fmt=fmt)
        with pytest.raises(data.DatasetError) as err:
            data.read(cut, derivatives=None)
        assert "last line 41 has 3 of 5 cells: the file looks truncated" in str(err.value)
    text = _log(tmp_path, names, table, fmt=fmt).read_text()
    assert text.endswith(",3e-06\n")
    cut = tmp_path / "cut.csv"
    cut.write_text(text[:-2])  # ...,3e-0 : parses, but not like the line before
    with pytest.raises(
        data.DatasetError,
        match=r"last line 41 does not end in a newline and "
        r"its cell '3e-0' in column 'tau2' looks cut",
    ):
        data.read(cut, derivatives=None)
    cut.write_text(text[:-3])  # ...,3e- : not a number
    with pytest.raises(
        data.DatasetError,
        match=r"column 'tau2', row 40 \(line 41\): '3e-' is "
        r"not a number; .*looks truncated",
    ):
        data.read(cut, derivatives=None)
    cut.write_text(text[:-1])  # complete, only the final newline missing: fine
    assert len(data.read(cut, derivatives=None)) == 40


def test_gap_is_an_error(tmp_path):
    t = DT * np.arange(N)
    t[20:] += 0.5
    a = _arrays()
    names = ["t", "q1", "q2", "q3", "tau1", "tau2", "tau3"]
    path = _log(tmp_path, names, np.column_stack([t, a["q"], a["tau"]]))
    for resample in (False, True):
        with pytest.raises(data.DatasetError) as err:
            data.read(path, resample=resample, derivatives=None)
        for phrase in [
            "column 't', row 21 (line 22): gap of 0.51 s after t = 0.19 s",
            "51 times the median step 0.01 s",
            "Split the file before this row",
        ]:
            assert phrase in str(err.value), (phrase, str(err.value))


def test_short_gaps_are_bridged_with_max_gap(tmp_path):
    # A 1 kHz log with jittered stamps and dropped samples (gaps of 8 steps, as in the Panda
    # log of Gaz et al. 2019): with max_gap the gaps are accepted and resampling bridges them;
    # the spline's error over 8 ms of a 1.3 Hz motion is ~ h^4 w^4 / 384, far below 1e-6 rad.
    rng = np.random.default_rng(0)
    t = 1e-3 * np.arange(3000) + rng.uniform(-2e-4, 2e-4, 3000)
    keep = np.ones(3000, bool)
    for k in (700, 1900):
        keep[k : k + 7] = False  # 7 samples dropped: one step of ~8 ms
    t = t[keep]
    w = 2 * np.pi * 1.3
    path = tmp_path / "dropped.csv"
    path.write_text("t,q1,tau1\n" + "".join(f"{a:.17g},{np.sin(w * a):.17g},{np.cos(w * a):.17g}\n" for a in t))
    with pytest.raises(data.DatasetError, match=r"gap of 0.00\d+ s .* 1 more gap\(s\) follow.*--max-gap"):
        data.read(path, resample=True, derivatives=None)
    with pytest.raises(data.DatasetError, match=r"longer than max_gap 0.005 s"):
        data.read(path, resample=True, derivatives=None, max_gap=0.005)
    ds = data.read(path, resample=True, derivatives=None, max_gap=0.01)
    assert ds.notes[0].startswith("2 gap(s) of up to 0.00") and "accepted (max_gap 0.01 s)" in ds.notes[0]
    grid = np.asarray(ds.t)
    assert np.allclose(np.diff(grid), np.diff(grid).mean(), rtol=1e-9, atol=0)
    assert np.max(np.abs(np.asarray(ds.q)[:, 0] - np.sin(w * grid))) < 1e-6
    with pytest.raises(data.DatasetError, match="max_gap must be a finite time > 0 s"):
        data.read(path, resample=True, derivatives=None, max_gap=-1.0)


def test_resampling_is_noted(tmp_path):
    rng = np.random.default_rng(3)
    t = 0.005 * np.arange(100) + rng.uniform(-5e-5, 5e-5, 100)
    path = tmp_path / "jitter.npz"
    np.savez(path, t=t, q=np.sin(t)[:, None], tau=np.cos(t)[:, None])
    ds = data.read(path, resample=True, derivatives=None)
    assert len(ds.notes) == 1 and ds.notes[0].startswith("resampled onto a uniform grid, jitter 0.")
    assert data.read(path, derivatives=None).notes[0].startswith("irregular time stamps kept as recorded, jitter")
    assert data.concatenate([ds, ds]).notes == ds.notes


def test_npz_columns(tmp_path):
    a = _arrays()
    path = tmp_path / "log.npz"
    np.savez(path, stamp=a["t"] * 1e3, joint_pos=a["q"], joint_cur=a["tau"], other=1)
    ds = data.read(
        path,
        columns={"t": "stamp", "q": "joint_pos", "tau": "joint_cur"},
        units="t=ms,tau=A",
        gains=[2, 3, 4],
        derivatives=None,
    )
    assert np.array_equal(ds.tau, a["tau"] * [2, 3, 4]) and np.array_equal(ds.q, a["q"])
    assert ds.notes[0] == "columns: t <- stamp; q <- joint_pos; tau <- joint_cur"
    with pytest.raises(
        data.DatasetError,
        match=r"no array 'joint_vel' for qd; the file has: "
        r"stamp, joint_pos, joint_cur, other",
    ):
        data.read(path, columns="t=stamp,q=joint_pos,tau=joint_cur,qd=joint_vel")
    with pytest.raises(data.DatasetError, match=r"missing array\(s\) 't'.*the file has: stamp"):
        data.read(path, columns="q=joint_pos,tau=joint_cur")


def test_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    a = _arrays()
    path = tmp_path / "log.h5"
    with h5py.File(path, "w") as f:
        for s in ("t", "q", "qd", "qdd", "tau"):
            f[s] = a[s]
        f["robot/effort"] = a["tau"] * 2
    _assert_same(data.read(path), data.from_arrays(**a))
    ds = data.read(path, columns={"tau": "robot/effort"})
    assert np.array_equal(ds.tau, a["tau"] * 2) and np.array_equal(ds.q, a["q"])
    with pytest.raises(data.DatasetError, match=r"no dataset 'effort' for tau; the file has: "):
        data.read(path, columns={"tau": "effort"})


def test_hdf5_without_h5py(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_h5py(name, *args, **kwargs):
        if name == "h5py":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    path = tmp_path / "log.hdf5"
    path.write_bytes(b"\x89HDF\r\n")
    monkeypatch.setattr(builtins, "__import__", no_h5py)
    with pytest.raises(data.DatasetError, match="needs the h5py package: pip install h5py"):
        data.read(path)


def test_load_mapping(tmp_path):
    toml = tmp_path / "map.toml"
    toml.write_text(
        'gains = [10, 10.7]\n[columns]\nt = "time"\nq = "pos_*"\ntau = "cur_*"\n[units]\nt = "ms"\nq = "deg"\n'
    )
    js = tmp_path / "map.json"
    js.write_text('{"columns": "t=time,q=pos_*,tau=cur_*", "units": "t=ms,q=deg", "gains": "10,10.7"}')
    expected = dict(
        columns={"t": "time", "q": "pos_*", "tau": "cur_*"}, units={"t": "ms", "q": "deg"}, gains=(10.0, 10.7)
    )
    assert data.load_mapping(toml) == data.load_mapping(js) == expected
    a = _arrays(n=2)
    path = _log(
        tmp_path, ["time", "pos_1", "pos_2", "cur_1", "cur_2"], np.column_stack([a["t"] * 1e3, a["q"], a["tau"]])
    )
    ds = data.read(path, derivatives=None, **data.load_mapping(toml))
    assert np.array_equal(ds.tau, a["tau"] * [10, 10.7]) and len(ds.notes) == 4
    js.write_text('{"columns": {"q": "pos_*"}, "unit": {}}')
    with pytest.raises(data.DatasetError, match=r"map\.json: unknown key\(s\) unit"):
        data.load_mapping(js)
    js.write_text('{"units": {"q": "grad"}}')
    with pytest.raises(data.DatasetError, match=r"map\.json: units: unknown unit 'grad' for q"):
        data.load_mapping(js)
    js.write_text('{"units": ')
    with pytest.raises(data.DatasetError, match=r"map\.json: not valid JSON"):
        data.load_mapping(js)


# ----------------------------------------------------------------------------- writing
def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    from jaxid import atomic

    ds = data.from_arrays(**_arrays())
    path = tmp_path / "run.csv"
    data.write(ds, path)
    before = path.read_bytes()

    def boom(f, *args, **kwargs):
        f.write("t,q1\n0.0,")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(data.np, "savetxt", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        data.write(data.from_arrays(**_arrays(1)), path)
    monkeypatch.undo()
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "No space left")))
    for suffix in (".csv", ".npz"):
        target = path.with_suffix(suffix)
        if suffix == ".npz":
            target.write_bytes(before)
        with pytest.raises(
            data.DatasetError,
            match=r"run\.\w+: writing failed \(No space left"
            r"\); the previous file.*is unchanged",
        ):
            data.write(ds, target)
    assert path.read_bytes() == before and path.with_suffix(".npz").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.csv", "run.npz"]


def test_atomic_write_helper(tmp_path):
    from jaxid.atomic import OutputPathError, atomic_write

    path = tmp_path / "params.json"
    path.write_text("old")
    path.chmod(0o640)
    with atomic_write(path) as f:
        f.write('{"a": 1}')
    assert path.read_text() == '{"a": 1}' and (path.stat().st_mode & 0o777) == 0o640
    with atomic_write(tmp_path / "new.bin", "wb") as f:
        f.write(b"\0")
    assert (tmp_path / "new.bin").read_bytes() == b"\0"
    with pytest.raises(OutputPathError, match="is a directory"):
        with atomic_write(tmp_path):
            pass
    with pytest.raises(OutputPathError, match="directory '.*nowhere' does not exist"):
        with atomic_write(tmp_path / "nowhere" / "x.json"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.bin", "params.json"]


def test_output_and_input_path_errors(tmp_path):
    ds = data.from_arrays(**_arrays())
    (tmp_path / "out.csv").mkdir()
    for bad, phrase in [
        (tmp_path / "out.csv", "out.csv: is a directory; give a file name"),
        (tmp_path, "is a directory"),
        (tmp_path / "no" / "run.npz", "directory '" + str(tmp_path / "no") + "' does not exist"),
    ]:
        with pytest.raises(data.DatasetError) as err:
            data.write(ds, bad)
        assert phrase in str(err.value), (phrase, str(err.value))
    with pytest.raises(data.DatasetError, match=r"out\.csv: is a directory, not a dataset file"):
        data.read(tmp_path / "out.csv")
    with pytest.raises(data.DatasetError, match=r"gone\.csv: no such file"):
        data.read(tmp_path / "gone.csv")


def test_permission_errors(tmp_path, monkeypatch):
    # Simulated: the tests may run as root, who reads and writes whatever the permissions.
    from jaxid import atomic

    ds = data.from_arrays(**_arrays())
    path = tmp_path / "run.csv"
    data.write(ds, path)

    def denied(file, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(file))

    monkeypatch.setattr(data, "open", denied, raising=False)
    with pytest.raises(
        data.DatasetError,
        match=r"run\.csv: cannot read the file \(permission "
        r"denied\)",
    ):
        data.read(path)
    monkeypatch.setattr(atomic.os, "access", lambda *args: False)
    with pytest.raises(
        data.DatasetError,
        match=r"cannot write: directory '.*' is not writable "
        r"\(permission denied\)",
    ):
        data.write(ds, path)
