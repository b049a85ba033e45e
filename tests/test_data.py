"""Datasets: exact file round trips, the KUKA recordings, rejection of bad files, resampling
of irregular time stamps, and derivatives computed from positions."""
from pathlib import Path

import numpy as np
import pytest

from jaxid import data

KUKA = Path("/work/shared/data/kuka_lwr4")
N, NJ, DT = 40, 3, 0.01


def _arrays(seed=0, n=NJ, N=N):
    rng = np.random.default_rng(seed)
    t = 0.3 + DT * np.arange(N)
    return dict(t=t, q=rng.normal(size=(N, n)), tau=rng.normal(size=(N, n)) * 1e3,
                qd=rng.normal(size=(N, n)) / 3, qdd=rng.normal(size=(N, n)) * 1e-7)


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
    table = [[repr(k * DT)] + [repr(float(np.sin(k + c))) for c in range(1, ncol)]
             for k in range(rows)]
    for (r, c), text in (edit or {}).items():
        table[r - 1][c] = text
    path = tmp_path / name
    path.write_text("\n".join([header] + [",".join(row) for row in table]) + "\n")
    return path


BAD_CSV = {
    "missing": (dict(header="t,q1,q2,tau1"),
                ["line 1", "missing column(s) tau2",
                 "t, q1..q2, [qd1..qd2, qdd1..qdd2,] tau1..tau2"]),
    "unknown": (dict(header="time,q1,tau1"),
                ["missing column(s) t", "unrecognised column(s) 'time'"]),
    "joints": (dict(header="t,q1,q2,q3,tau1,tau2"),
               ["inconsistent joint counts q1..q3, tau1..tau2", "missing column(s) tau3"]),
    "gap": (dict(header="t,q1,q3,tau1,tau2,tau3"), ["missing column(s) q2"]),
    "text": (dict(edit={(5, 2): "abc"}),
             ["column 'q2'", "row 5 (line 6)", "'abc' is not a number"]),
    "nan": (dict(edit={(7, 4): "nan"}), ["column 'tau2'", "row 7 (line 8)", "not finite"]),
    "inf": (dict(edit={(3, 1): "-inf"}), ["column 'q1'", "row 3 (line 4)", "not finite"]),
    "backwards": (dict(edit={(9, 0): "0.05"}),
                  ["column 't'", "row 9 (line 10)", "time goes backwards", "increase strictly"]),
    "duplicate": (dict(edit={(12, 0): repr(10 * DT)}),
                  ["column 't'", "row 12 (line 13)", "duplicate time stamp"]),
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
        "nan": (dict(a, q=np.where(np.arange(N)[:, None] * [0, 1, 0] == 4, np.nan, a["q"])),
                ["array 'q'[:, 1]", "row 4", "not finite"]),
        "missing": ({k: a[k] for k in ("t", "q")}, ["missing array(s) 'tau'"]),
        "shape": (dict(a, qd=a["qd"][:, 0]), ["array 'qd' must have shape (N, n)"]),
        "joints": (dict(a, qdd=a["qdd"][:, :2]),
                   ["inconsistent joint counts", "array 'qdd' has 2"]),
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
    return (np.sin(W * t)[:, None] * [1.0, 0.5],
            W * np.cos(W * t)[:, None] * [1.0, 0.5],
            -W**2 * np.sin(W * t)[:, None] * [1.0, 0.5])


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
