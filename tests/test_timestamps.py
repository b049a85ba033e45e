"""Time stamps as robots and ROS tools write them (jaxid.data.read): clock (Unix) stamps in float
seconds (PlotJuggler's __time), split sec + nanosec columns and integer nanoseconds read
exactly, a rate for logs without a time column, and a time window; bad input one line each."""

import numpy as np
import pytest

from jaxid import data

N = 400
NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]


def _signals(t):
    """q, tau (N, 3) of a smooth motion at the times t (s from the start)."""
    phase = np.arange(3)
    q = 0.8 * np.sin(2 * np.pi * 0.7 * t[:, None] + phase)
    tau = 5.0 * np.cos(2 * np.pi * 0.7 * t[:, None] + 2 * phase)
    return q, tau


def _plotjuggler(path, stamps):
    """A PlotJuggler-style CSV: __time (the stamps as written, %.17g) and
    /joint_states/<joint>/position, .../effort columns."""
    q, tau = _signals(stamps - stamps[0])
    header = ["__time"] + [f"/joint_states/{j}/position" for j in NAMES] + [f"/joint_states/{j}/effort" for j in NAMES]
    np.savetxt(
        path, np.column_stack([stamps, q, tau]), fmt="%.17g", delimiter=",", header=",".join(header), comments=""
    )
    return path


PJ_COLUMNS = "t=__time,q=/joint_states/*/position,tau=/joint_states/*/effort"


def _split(path, ns, names=("header.stamp.sec", "header.stamp.nanosec")):
    """A `ros2 bag`-style CSV: split stamps, then position_i, effort_i."""
    q, tau = _signals((ns - ns[0]) / 1e9)
    with open(path, "w") as f:
        f.write(",".join(list(names) + [f"position_{j}" for j in range(3)] + [f"effort_{j}" for j in range(3)]) + "\n")
        for k in range(len(ns)):
            cells = [str(ns[k] // 10**9), str(ns[k] % 10**9)] + [f"{x:.17g}" for x in np.r_[q[k], tau[k]]]
            f.write(",".join(cells) + "\n")
    return path


def _one_line(err):
    message = str(err.value)
    assert "\n" not in message, message
    return message


def _jitter(t):
    step = np.diff(np.asarray(t))
    return np.std(step) / np.mean(step)


@pytest.mark.parametrize("rate", [100.0, 1000.0, 5000.0])
@pytest.mark.parametrize("start", [1.7e9, 1_712_345_678.123457])
def test_unix_stamps_in_float_seconds_are_regular_at_their_resolution(tmp_path, rate, start):
    stamps = start + np.arange(N) / rate  # rounded to float64 at 1.7e9: 2.4e-7 s apart
    assert _jitter(stamps) > data.JITTER_TOL  # what used to fail as "irregular time stamps"
    ds = data.read(_plotjuggler(tmp_path / "pj.csv", stamps), columns=PJ_COLUMNS)  # differentiated: uniform grid
    t = np.asarray(ds.t)
    assert t[0] == 0.0 and _jitter(t) <= data.JITTER_TOL
    assert abs(ds.dt * rate - 1) < 4 * np.spacing(2e9) * rate / (N - 1)  # the end stamps' rounding, nothing more
    assert ds.derivatives == "butterworth"
    assert any(x.startswith("t: shifted by its first stamp") for x in ds.notes), ds.notes
    assert any(x.startswith("t: stamps regular to their resolution") for x in ds.notes), ds.notes


def test_unix_stamps_that_really_jitter_still_need_resampling(tmp_path):
    rng = np.random.default_rng(1)
    stamps = 1.7e9 + (np.arange(N) + rng.uniform(-0.01, 0.01, N)) / 1000.0  # 10 us of clock jitter at 1 kHz
    path = _plotjuggler(tmp_path / "pj.csv", stamps)
    with pytest.raises(data.DatasetError) as err:
        data.read(path, columns=PJ_COLUMNS)
    assert "irregular time stamps" in _one_line(err)
    ds = data.read(path, columns=PJ_COLUMNS, resample=True)
    assert np.asarray(ds.t)[0] == 0.0 and _jitter(ds.t) <= data.JITTER_TOL


@pytest.mark.parametrize("rate", [500.0, 3000.0])  # 3 kHz: steps of 333333.33 ns, rounded to the ns
def test_split_sec_nanosec_columns_combine_exactly(tmp_path, rate):
    ns = 1_712_345_678_999_000_000 + np.round(np.arange(N) * 1e9 / rate).astype(np.int64)
    path = _split(tmp_path / "ros.csv", ns)
    for columns in ("q=position_*,tau=effort_*", "t=header.stamp.sec+header.stamp.nanosec,q=position_*,tau=effort_*"):
        ds = data.read(path, columns=columns, derivatives=None)
        t = np.asarray(ds.t)
        np.testing.assert_array_equal(np.round(t * 1e9).astype(np.int64), ns - ns[0])
        assert any("sec + nanosec stamps combined in integer ns, 0 at 1712345678.999000000 s" in x for x in ds.notes)
    ds = data.read(path, columns="q=position_*,tau=effort_*")  # differentiated: on the ns grid, uniform
    assert _jitter(ds.t) <= data.JITTER_TOL and abs(ds.dt * rate - 1) < 1e-9
    plain = _split(tmp_path / "plain.csv", ns, names=("sec", "nanosec"))
    assert len(data.read(plain, columns="q=position_*,tau=effort_*", derivatives=None)) == N


def test_integer_nanosecond_stamps_are_read_exactly(tmp_path):
    rng = np.random.default_rng(2)
    ns = 1_712_345_678_901_234_567 + np.arange(N, dtype=np.int64) * 1_000_000 + rng.integers(-300, 300, N)
    q, tau = _signals((ns - ns[0]) / 1e9)
    path = tmp_path / "ns.csv"
    with open(path, "w") as f:
        f.write("stamp,q1,q2,q3,tau1,tau2,tau3\n")
        for k in range(N):
            f.write(f"{ns[k]}," + ",".join(f"{x:.17g}" for x in np.r_[q[k], tau[k]]) + "\n")
    ds = data.read(path, columns="t=stamp", units="t=ns", derivatives=None)
    np.testing.assert_array_equal(np.round(np.asarray(ds.t) * 1e9).astype(np.int64), ns - ns[0])
    np.savez(tmp_path / "ns.npz", t=ns, q=q, tau=tau)
    ds = data.read(tmp_path / "ns.npz", units="t=ns", derivatives=None)
    np.testing.assert_array_equal(np.round(np.asarray(ds.t) * 1e9).astype(np.int64), ns - ns[0])


def test_integer_stamps_rounded_to_their_unit_are_regular(tmp_path):
    us = 1_712_345_678_000_000 + np.round(np.arange(N) * 1e6 / 3000.0).astype(np.int64)  # 3 kHz in whole us
    q, tau = _signals((us - us[0]) / 1e6)
    path = tmp_path / "us.csv"
    with open(path, "w") as f:
        f.write("t,q1,q2,q3,tau1,tau2,tau3\n")
        for k in range(N):
            f.write(f"{us[k]}," + ",".join(f"{x:.17g}" for x in np.r_[q[k], tau[k]]) + "\n")
    assert _jitter(us) > data.JITTER_TOL
    ds = data.read(path, units="t=us")  # differentiated: on the grid, no --resample
    assert _jitter(ds.t) <= data.JITTER_TOL and abs(ds.dt * 3000.0 - 1) < 1e-6
    assert any(x.startswith("t: stamps regular to their resolution") for x in ds.notes), ds.notes


def test_bad_split_stamps_are_one_line_errors(tmp_path):
    ns = 1_700_000_000_000_000_000 + np.arange(N, dtype=np.int64) * 1_000_000
    path = _split(tmp_path / "ros.csv", ns)
    lines = path.read_text().splitlines()
    cells = lines[5].split(",")
    cells[1] = "1000000000"  # nanosec out of range, data row 5
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(data.DatasetError) as err:
        data.read(path, columns="q=position_*,tau=effort_*")
    assert "row 5 (line 6)" in _one_line(err) and "0 <= nanosec < 10^9" in str(err.value)
    with pytest.raises(data.DatasetError) as err:
        data.read(_split(tmp_path / "ok.csv", ns), columns="q=position_*,tau=effort_*", units="t=ms")
    assert "leave out units t=ms" in _one_line(err)
    with pytest.raises(data.DatasetError) as err:
        data.read(tmp_path / "ok.csv", columns="t=header.stamp.sec+,q=position_*,tau=effort_*")
    assert "t=header.stamp.sec+header.stamp.nanosec" in _one_line(err)


def test_rate_gives_the_time_of_a_log_without_one_and_checks_one_with(tmp_path):
    t = np.arange(N) / 250.0
    q, tau = _signals(t)
    bare = tmp_path / "bare.csv"
    np.savetxt(
        bare, np.column_stack([q, tau]), fmt="%.17g", delimiter=",", header="q1,q2,q3,tau1,tau2,tau3", comments=""
    )
    with pytest.raises(data.DatasetError) as err:
        data.read(bare)
    assert "--rate HZ" in _one_line(err)
    ds = data.read(bare, rate=250.0)
    np.testing.assert_array_equal(np.asarray(ds.t), t)
    np.savez(tmp_path / "bare.npz", q=q, tau=tau)
    assert data.read(tmp_path / "bare.npz", rate=250.0, derivatives=None).dt == pytest.approx(1 / 250.0, rel=1e-12)

    stamped = _plotjuggler(tmp_path / "pj.csv", 1.7e9 + t)
    ds = data.read(stamped, columns=PJ_COLUMNS, rate=251.0)  # within 1 %: the stamps are used
    assert ds.dt == pytest.approx(1 / 250.0, rel=1e-6)
    with pytest.raises(data.DatasetError) as err:
        data.read(stamped, columns=PJ_COLUMNS, rate=500.0)
    message = _one_line(err)
    assert "rate 500 Hz disagrees with the mean rate 250 Hz" in message
    with pytest.raises(data.DatasetError, match="rate must be a sampling rate"):
        data.read(bare, rate=0.0)


def test_window_selects_samples_before_any_check(tmp_path):
    t = np.arange(N) / 100.0  # 0 to 3.99 s
    q, tau = _signals(t)
    q[:50, 1] = np.nan  # a bad stretch at the start (t < 0.5 s), outside the window
    q[300, 2] = np.nan  # inside the window [1, 3.5]: row 301 of the file
    path = tmp_path / "log.csv"
    header = "t,q1,q2,q3,tau1,tau2,tau3"
    np.savetxt(path, np.column_stack([t + 7.0, q, tau]), fmt="%.17g", delimiter=",", header=header, comments="")
    with pytest.raises(data.DatasetError) as err:
        data.read(path, window="1:3.5")
    assert "row 301 (line 302)" in _one_line(err)
    q[300, 2] = 0.0
    np.savetxt(path, np.column_stack([t + 7.0, q, tau]), fmt="%.17g", delimiter=",", header=header, comments="")
    ds = data.read(path, window="1:3.5", derivatives=None)
    np.testing.assert_array_equal(np.asarray(ds.q), q[100:351])
    assert len(data.read(path, window="2:", derivatives=None)) == N - 200
    with pytest.raises(data.DatasetError, match=r"row 1 \(line 2\): value nan"):
        data.read(path, window=(None, 1.0))
    for window, phrase in [("3:5", "reaches outside the log, which spans 0 to 3.99 s"), ("3.95:", "holds 5 samples")]:
        with pytest.raises(data.DatasetError) as err:
            data.read(path, window=window)
        assert phrase in _one_line(err), str(err.value)
    for window, phrase in [("5", "is not T0:T1"), (":", "no bound"), ("4:2", "is not before"), ("-1:2", ">= 0 s")]:
        with pytest.raises(data.DatasetError, match=phrase):
            data.parse_window(window)


def test_the_cli_flags_become_the_data_spec():
    from jaxid.cli import build_parser
    from jaxid.cli.common import data_spec
    from jaxid.workflow import WorkflowError
    from jaxid.workflow.requests import DataSpec

    for command in ("identify", "validate", "crossval", "payload"):
        extra = ["--params", "p.json"] if command in ("validate", "payload") else []
        files = ["a.csv"] if command == "payload" else ["a.csv", "b.csv"]
        flags = ["--topic", "/arm/joint_states", "--rate", "250", "--window", "1.5:"]
        args = build_parser().parse_args([command, *extra, *files, *flags])
        spec = data_spec(args)
        assert (spec.topic, spec.rate, spec.window) == ("/arm/joint_states", 250.0, "1.5:"), command
    for bad, phrase in [
        (dict(window="3"), "is not T0:T1"),
        (dict(window="4:2"), "is not before"),
        (dict(window=":"), "is not T0:T1"),
        (dict(rate=-5.0), "--rate must be"),
    ]:
        with pytest.raises(WorkflowError, match=phrase):
            DataSpec(**bad)


@pytest.mark.parametrize("fs", [500.0, 5000.0])
def test_stamps_printed_with_six_decimals_are_regular_but_a_clocks_jitter_is_not(tmp_path, fs):
    """PlotJuggler prints Unix time with 6 decimals: up to 0.5 us off the grid, more than float64's
    2.4e-7 s there; that rounding is no jitter, while 10 us of real jitter still is."""
    k = np.arange(3000)
    t = 1.7e9 + 0.3333337 + k / fs
    q = np.sin(np.outer(k / fs, [1.0, 2.0]))
    for name, stamps, regular in (
        ("printed", t, True),
        ("jittered", t + np.random.default_rng(0).normal(0, 1e-5, k.size), False),
    ):
        path = tmp_path / f"{name}.csv"
        np.savetxt(
            path,
            np.column_stack([stamps, q, q]),
            fmt=["%.6f"] + ["%.17g"] * 4,
            header="t,q1,q2,tau1,tau2",
            comments="",
            delimiter=",",
        )
        if regular:
            ds = data.read(path)
            assert any("resolution 1e-06 s): put on that grid" in n for n in ds.notes), ds.notes
            step = np.diff(np.asarray(ds.t))  # uniform, through the rounded end stamps
            np.testing.assert_allclose(step, step.mean(), rtol=1e-9)
            np.testing.assert_allclose(step.mean(), 1 / fs, rtol=1e-6)
        else:
            with pytest.raises(data.DatasetError, match="irregular time stamps"):
                data.read(path)
