"""Issue 18: one test per class of bad input of the campaign, each asserting the message and the
exit status (the CLI in-process, ``jaxid.cli.main``). Most cases fail before any compile; the
few that reach the fit share one planar2 model and data length, so they compile once.

Classes (in file order): encoding and separator variants, directories and permissions, output
paths, huge values and outliers, dead channels, truncated files, concurrency, interruption,
memory, sharding, time and units, models (LuGre excitation, simulate trajectories). Model
files (URDF, DH) are tested in tests/test_urdf.py and friends.
"""

import json
import os
import threading

import numpy as np
import pytest

import jaxid  # noqa: F401  (float64)
from jaxid import data, hostdevices, memory
from jaxid.atomic import atomic_write
from jaxid.cli import main

FS = 100.0
N = 400


def _table(n=2, rows=N, fs=FS):
    """t, q, qd, qdd, tau of a planar arm: exact sines, every channel alive."""
    t = np.arange(rows) / fs
    w = 2 * np.pi * np.array([0.4, 0.9, 1.7])
    a = np.random.default_rng(0).normal(size=(3, n))
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q, qd, qdd = s @ a, (c * w) @ a, (-s * w**2) @ a
    tau = 5 * q + 0.3 * qd + 0.01 * qdd + np.random.default_rng(1).normal(size=q.shape) * 0.01
    return t, q, qd, qdd, tau


def _header(n=2):
    return ["t"] + [f"{k}{j + 1}" for k in ("q", "qd", "qdd", "tau") for j in range(n)]


def write_csv(path, table=None, header=None, delimiter=",", fmt="%.17g", encoding="utf-8"):
    cols = np.column_stack(table if table is not None else _table())
    header = header or _header()
    text = delimiter.join(header) + "\n" + "\n".join(delimiter.join(fmt % v for v in r) for r in cols) + "\n"
    path.write_bytes(text.encode(encoding))
    return str(path)


def fails(capsys, argv, message, code=2):
    """main(argv) exits with ``code`` and one stderr line 'jaxid CMD: error: ...message...'."""
    assert main(argv) == code, argv
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "\n" not in err, err
    assert err.startswith(f"jaxid {argv[0]}: "), err
    assert message in err, (message, err)
    return err


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    write_csv(d / "good.csv")
    return d


def ident(d, *files, out="p.json"):
    return ["identify", "--robot", "planar2", "-o", str(d / out), "--quiet", *map(str, files)]


# --------------------------------------------------------------- encoding and separator variants
def test_encoding_and_separator_variants(d, capsys):
    good = data.read(d / "good.csv", derivatives=None)
    # Read as the same data: UTF-8 with a BOM, UTF-16 (spreadsheets' "Unicode text", tabs), ';' and CRLF.
    for name, kw in (
        ("bom.csv", dict(encoding="utf-8-sig")),
        ("utf16.csv", dict(encoding="utf-16", delimiter="\t")),
        ("semi.csv", dict(delimiter=";")),
    ):
        ds = data.read(write_csv(d / name, **kw), derivatives=None)
        np.testing.assert_array_equal(np.asarray(ds.tau), np.asarray(good.tau))
    # Refused with one line, exit 2, before any work.
    latin = d / "latin.csv"
    latin.write_bytes((d / "good.csv").read_bytes().replace(b"tau1", b"\xe9tau1"))
    fails(capsys, ident(d, latin), "not a readable CSV text file")
    fails(capsys, ident(d, latin), "save it as UTF-8")
    comma = d / "comma.csv"
    comma.write_text((d / "semi.csv").read_text().replace(".", ",", 50))
    fails(capsys, ident(d, comma), "a decimal comma?")
    gz = d / "gz.csv"
    import gzip

    gz.write_bytes(gzip.compress((d / "good.csv").read_bytes()))
    fails(capsys, ident(d, gz), "not a readable CSV text file")


# --------------------------------------------------------------- directories and permissions
def test_directories_and_permissions(d, capsys, monkeypatch):
    (d / "folder.csv").mkdir(exist_ok=True)
    fails(capsys, ident(d, d / "folder.csv"), "folder.csv: is a directory, not a dataset file")
    fails(capsys, ident(d, d / "absent.csv"), "absent.csv: no such file")
    fails(
        capsys,
        ["validate", "--params", str(d), str(d / "good.csv"), "--no-figures"],
        f"{d}: is a directory, not a params.json file",
    )

    def denied(file, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(file))

    monkeypatch.setattr(data, "open", denied, raising=False)  # simulated: tests may run as root
    fails(capsys, ident(d, d / "good.csv"), "good.csv: cannot read the file (permission denied)")


# --------------------------------------------------------------------------------- output paths
def test_output_paths_checked_before_the_work(d, capsys, monkeypatch):
    good = str(d / "good.csv")
    (d / "outdir").mkdir(exist_ok=True)
    fails(capsys, ["identify", "--robot", "planar2", good, "-o", good, "--quiet"], "would destroy the data")
    fails(
        capsys,
        ["identify", "--robot", "planar2", good, "-o", str(d / "outdir"), "--quiet"],
        "outdir: is a directory; give the name of a file to write",
    )
    fails(
        capsys,
        ["identify", "--robot", "planar2", good, "-o", str(d / "no" / "p.json"), "--quiet"],
        "directory '" + str(d / "no") + "' does not exist",
    )
    fails(capsys, ["lugre", good, "-o", str(d / "outdir")], "is a directory")
    fails(capsys, ["excite", "--robot", "planar2", "-o", str(d / "no" / "e.csv")], "does not exist")
    fails(capsys, ["validate", "--params", str(d / "p.json"), good, "--out", good], "is a file, not a folder")
    fails(capsys, ["demo", "--out", good], "is a file, not a folder")
    from jaxid import atomic

    monkeypatch.setattr(atomic.os, "access", lambda *a: False)  # a read-only directory (simulated)
    fails(
        capsys,
        ["identify", "--robot", "planar2", good, "-o", str(d / "p.json"), "--quiet"],
        "is not writable (permission denied)",
    )
    assert not (d / "p.json").exists()


# --------------------------------------------------------------------------- huge values, outliers
def test_payload_gain_std_checked_before_the_data(d, capsys):
    """A --gain-std that is no fraction is refused by its flag before any file is read (an absent
    data file would be the error otherwise)."""
    for bad in ("2", "-0.1", "nan"):
        fails(capsys, ["payload", "--robot", "ur5", str(d / "absent.csv"), "--gain-std", bad], f"--gain-std {bad}")


def test_huge_values_and_outliers(d, capsys):
    t, q, qd, qdd, tau = _table()
    q2 = q.copy()
    q2[7, 1] = 1e300
    fails(
        capsys,
        ident(d, write_csv(d / "hugeq.csv", (t, q2, qd, qdd, tau))),
        "column 'q2', row 8 (line 9): value 1e+300 is beyond 1e+06 rad",
    )
    big = tau.copy()
    big[37, 0] = 1e300
    fails(
        capsys,
        ident(d, write_csv(d / "hugetau.csv", (t, q, qd, qdd, big))),
        "1 sample with a non-finite value or |value| > 1e+06: sample 37 (joint 1 (joint1): 1e+300)",
    )
    traj = d / "traj_huge.csv"
    write_csv(traj, (t, q2, qd, qdd), header=_header()[:7])
    fails(
        capsys,
        ["simulate", "--robot", "planar2", "--trajectory", str(traj), "-o", str(d / "s.csv")],
        "value 1e+300 is beyond 1e+06 rad",
    )
    assert not (d / "s.csv").exists()


# ------------------------------------------------------------------------------------ dead channels
def test_dead_channel_named(d, capsys):
    t, q, qd, qdd, tau = _table()
    tau = tau.copy()
    tau[:, 1] = 0.0
    err = fails(capsys, ident(d, write_csv(d / "dead.csv", (t, q, qd, qdd, tau))), "joint2")
    assert "dead torque channel cannot be identified" in err


# ---------------------------------------------------------------------------------- truncated files
def test_truncated_file(d, capsys):
    text = (d / "good.csv").read_text()
    cut = d / "cut.csv"
    cut.write_text(text[: text.rstrip("\n").rfind(",") - 3])
    fails(capsys, ident(d, cut), "the file looks truncated")
    npz = d / "cut.npz"
    t, q, qd, qdd, tau = _table()
    np.savez(npz, t=t, q=q, tau=tau[:-1])
    fails(capsys, ident(d, npz), "array 'tau' has 399 rows")


# ------------------------------------------------------------------------------------- concurrency
def test_concurrent_writers_leave_one_complete_file(tmp_path):
    """Eight writers of the same output at once: the file is one writer's complete text, no
    temporary file is left (atomic rename)."""
    path = tmp_path / "params.json"
    texts = [json.dumps({"writer": i, "payload": "x" * 20000 * (i + 1)}) for i in range(8)]
    barrier = threading.Barrier(len(texts))

    def write(text):
        barrier.wait()
        with atomic_write(path) as f:
            for k in range(0, len(text), 4096):
                f.write(text[k : k + 4096])

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert path.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["params.json"]


# ------------------------------------------------------------------------------------ interruption
@pytest.mark.parametrize(
    "exc, code, word", [(KeyboardInterrupt, 130, "interrupted"), ("terminated", 143, "terminated")]
)
def test_interruption_one_line_no_partial_output(d, capsys, monkeypatch, exc, code, word):
    """In-process (the signal itself: tests/test_cache.py): an interruption inside a write
    ends with one line and leaves no output file."""
    import jaxid.cli as cli
    from jaxid.cli import excite

    exc = cli.Terminated if exc == "terminated" else exc
    out = d / f"int{code}.csv"

    def run(args):
        with atomic_write(args.output) as f:
            f.write("t,q1\n0,")
            raise exc()

    monkeypatch.setattr(excite, "run", run)
    assert main(["excite", "--robot", "planar2", "-o", str(out)]) == code
    assert capsys.readouterr().err.strip() == f"jaxid excite: {word}"
    assert not out.exists() and not [p for p in d.iterdir() if p.name.startswith(f".int{code}")]


# ------------------------------------------------------------------------------------------ memory
def test_memory_refused_before_the_work(d, capsys, monkeypatch):
    monkeypatch.setenv(memory.ENV, "100K")
    err = fails(capsys, ident(d, d / "good.csv"), "needs about ")
    assert "of memory but 100 KB is available (JAXID_MEMORY_LIMIT)" in err and "--step K" in err
    monkeypatch.setenv(memory.ENV, "lots")
    fails(capsys, ident(d, d / "good.csv"), "JAXID_MEMORY_LIMIT='lots': expected a size such as 8G")
    assert not (d / "p.json").exists()
    # A UR5 identification of 1e6 samples (54 base columns): about 20 GB, as measured per sample.
    assert 18 * 2**30 < memory.identify_bytes(10**6, 6, 54) < 24 * 2**30
    from jaxid.study import run_study

    monkeypatch.setenv(memory.ENV, "64M")
    W = np.random.default_rng(0).normal(size=(600, 4))
    with pytest.raises(
        memory.MemoryLimitError,
        match=r"a study of 1000 runs .* needs about .* give a smaller "
        r"batch_size",
    ):
        run_study(W, np.ones(4), np.array([0.1, 0.2]), 1000, batch_size=1000, n_joints=2)
    monkeypatch.setenv(memory.ENV, "off")
    assert memory.available() == (None, "JAXID_MEMORY_LIMIT=off")


@pytest.mark.parametrize("kind", ["xla", "numpy"])
def test_out_of_memory_during_a_run_is_one_line(d, capsys, monkeypatch, kind):
    """A real allocation failure inside a subcommand: one line, exit 2, no traceback."""
    from jaxid.cli import excite

    def run(args):
        if kind == "xla":
            import jax.numpy as jnp

            jnp.zeros((2**42,)).block_until_ready()  # XLA: RESOURCE_EXHAUSTED: Out of memory allocating ...
        np.empty(2**50)  # numpy: MemoryError: Unable to allocate ...

    monkeypatch.setattr(excite, "run", run)
    err = fails(capsys, ["excite", "--robot", "planar2", "-o", str(d / "oom.csv")], "error: out of memory: ")
    assert ("Out of memory allocating" if kind == "xla" else "Unable to allocate") in err


# ---------------------------------------------------------------------------------------- sharding
def test_host_devices_get_the_scheduler_flag():
    """Several host CPU devices: jaxid adds the flag that avoids XLA:CPU's scheduler hang; one
    device, or a flag the user set, is left alone (multi-process: tests/test_study.py). The
    compile-time flag is added where jaxlib knows it, unless the user set it either way."""
    compile_flag = [hostdevices.COMPILE_FLAG] if hostdevices._jaxlib_knows_compile_flag() else []
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    assert hostdevices.configure(env) and env["XLA_FLAGS"].split()[1:] == [*compile_flag, hostdevices.SCHEDULER_FLAG]
    env = {"JAX_NUM_CPU_DEVICES": "2"}
    assert hostdevices.configure(env) and env["XLA_FLAGS"].split() == [*compile_flag, hostdevices.SCHEDULER_FLAG]
    for env in (
        {},
        {"XLA_FLAGS": "--xla_force_host_platform_device_count=1"},
        {"XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_cpu_enable_concurrency_optimized_scheduler=true"},
    ):
        before = env.get("XLA_FLAGS", "").split()
        assert not hostdevices.configure(env) and env.get("XLA_FLAGS", "").split() == before + compile_flag
    env = {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"}
    assert not hostdevices.configure(env) and env["XLA_FLAGS"] == "--xla_cpu_use_fusion_emitters=true"
    # this process: jaxid set it at import (the test environment does not set it)
    assert not compile_flag or hostdevices.COMPILE_FLAG in os.environ["XLA_FLAGS"]
    from jaxid.study import run_study

    with pytest.raises(ValueError, match="devices is empty"):
        run_study(
            np.random.default_rng(0).normal(size=(60, 4)), np.ones(4), np.array([0.1, 0.2]), 4, devices=[], n_joints=2
        )


# ---------------------------------------------------------------------------------- time and units
def test_time_units_and_gaps(d, capsys):
    t, q, qd, qdd, tau = _table()
    fails(
        capsys,
        ident(d, write_csv(d / "ms.csv", (t * 1e3, q, qd, qdd, tau))),
        "column 't': t looks like milliseconds: mean step 10.0; pass units t=ms (CLI: --units t=ms)",
    )
    gap = t.copy()
    gap[200:] += 10.0  # a 10 s dropout
    for extra in ([], ["--resample"]):
        fails(
            capsys,
            ident(d, write_csv(d / "gap.csv", (gap, q, qd, qdd, tau))) + extra,
            "column 't', row 201 (line 202): gap of 10.01 s after t = 1.99 s",
        )
    fails(
        capsys,
        ident(d, d / "gap.csv") + ["--resample", "--max-gap", "0.5"],
        "gap of 10.01 s after t = 1.99 s, 1e+03 times the median step 0.01 s, longer than max_gap 0.5 s",
    )
    fails(capsys, ident(d, d / "gap.csv") + ["--max-gap", "-1"], "--max-gap must be a finite time > 0 s, got -1.0")


# ------------------------------------------------------------------------------------------- models
def _friction(v, dt=1e-3):
    x = np.cumsum(v) * dt
    F = 1.0 * np.tanh(v / 1e-3) + 0.4 * v
    return x, F


def test_lugre_rejects_data_that_cannot_identify_it(d, capsys):
    from jaxid.identification import lugre

    dt = 1e-3
    t = np.arange(2000) * dt
    cases = {
        "one-sided": (0.05 + 0.1 * (1 + np.sin(2 * np.pi * t)), "the velocity never crosses zero"),
        "constant": (np.full(t.size, 0.2), "the velocity is constant (0.2 units/s)"),
    }
    for name, (v, message) in cases.items():
        x, F = _friction(v)
        with pytest.raises(ValueError, match=r"the axis: " + message.replace("(", r"\(").replace(")", r"\)")):
            lugre.identify(x, v, F, dt)
        with pytest.raises(ValueError, match="axis 2: "):
            lugre.identify_joints(
                np.stack([x, x], 1), np.stack([0.2 * np.sin(2 * np.pi * t), v], 1), np.stack([F, F], 1), dt
            )
        path = d / f"lugre_{name}.csv"
        np.savetxt(path, np.column_stack([t, x, F]), delimiter=",", header="t,x,F", comments="", fmt="%.17g")
        fails(capsys, ["lugre", str(path)], f"lugre_{name}.csv: axis x: {message}")
    v = 0.01 * np.sin(2 * np.pi * t)  # crosses zero, but never above the 0.052 threshold
    x, F = _friction(v)
    with pytest.raises(
        ValueError, match=r"the axis: threshold 0.0523599 is above every \|v\| \(at most 0.01 units/s\)"
    ):
        lugre.identify(x, v, F, dt)


def test_simulate_trajectory_must_match_the_robot(d, capsys):
    t, q, qd, qdd, _ = _table(n=3)
    traj = d / "traj3.csv"
    write_csv(traj, (t, q, qd, qdd), header=_header(3)[:10])
    fails(
        capsys,
        ["simulate", "--robot", "planar2", "--trajectory", str(traj), "-o", str(d / "s.csv")],
        "columns of joint(s) 3 but the robot has 2 joints",
    )
    np.savez(d / "traj3.npz", t=t, q=q)
    fails(
        capsys,
        ["simulate", "--robot", "planar2", "--trajectory", str(d / "traj3.npz"), "-o", str(d / "s.csv")],
        "3 joints in the trajectory but the robot has 2",
    )
    assert not (d / "s.csv").exists()


def test_placeholder_inertia_named_and_accepted_by_flag(d, capsys):
    """A URDF whose inertial violates the triangle inequality is refused with the link named and
    the flag that accepts it; with the flag, plain least squares runs (it never uses them)."""
    link = (
        '<link name="{0}"><inertial><origin xyz="0.2 0 0"/><mass value="1"/><inertia ixx="{1}" ixy="0" '
        'ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
    )
    joint = (
        '<joint name="j{0}" type="revolute"><parent link="{1}"/><child link="{2}"/><origin xyz="{3} 0 0"/>'
        '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="2"/></joint>'
    )
    urdf = d / "placeholder.urdf"
    urdf.write_text(
        '<robot name="p"><link name="base"/>'
        + link.format("l1", 0.01)
        + link.format("l2", 0.5)
        + joint.format(1, "base", "l1", 0)
        + joint.format(2, "l1", "l2", 0.4)
        + "</robot>"
    )
    argv = ["identify", "--urdf", str(urdf), "-o", str(d / "pu.json"), "--quiet", str(d / "good.csv")]
    err = fails(capsys, argv, "--no-inertia-check")
    assert "l2" in err and "triangle" in err, err
    assert main([*argv, "--no-inertia-check"]) == 0
    assert (d / "pu.json").is_file()


def test_overflowing_predictions_named(d, capsys):
    """Parameters whose predictions overflow (a corrupted params file) are an error naming the
    run and the rows, not a TypeError while formatting inf metrics."""
    assert main(ident(d, d / "good.csv", out="ok.json")) == 0
    params = json.loads((d / "ok.json").read_text())
    params["estimate"] = [v * 1e306 for v in params["estimate"]]
    (d / "huge.json").write_text(json.dumps(params))
    err = fails(
        capsys,
        ["validate", "--params", str(d / "huge.json"), "--quiet", str(d / "good.csv")],
        "the predicted torque: 400 samples with a non-finite value",
    )
    assert "not a usable model" in err, err


# --- guard: messages ---
def _still(d, name="still.csv"):
    """The planar arm's log with joint 2 at rest: its friction columns are zero (rank deficient)."""
    t, q, qd, qdd, tau = _table()
    q[:, 1], qd[:, 1], qdd[:, 1] = 0.3, 0.0, 0.0
    return write_csv(d / name, (t, q, qd, qdd, tau))


def test_guard_ridge_users_are_not_told_to_use_ridge(d, capsys):
    still = _still(d)
    for method, told in (("ridge", False), ("ols", True)):
        assert main(ident(d, still) + ["--method", method]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "fv2 (zero column)" in err, err
        assert ("method='ridge'" in err) is told, (method, err)


def test_guard_bad_npz_in_jaxids_words(d, capsys):
    q = np.array([[0, "a"], [1, 2], [3, 4]], dtype=object)
    np.savez(d / "obj.npz", t=np.arange(3.0), q=q, tau=np.zeros((3, 2)))
    (d / "junk.npz").write_bytes(b"not a zip at all")
    np.save(d / "one.npy", np.zeros(3))
    (d / "one.npy").rename(d / "one.npz")
    for name, words in (
        ("obj.npz", "array 'q' holds Python objects"),
        ("junk.npz", "not an NPZ file"),
        ("one.npz", "holds one array (a .npy file)"),
    ):
        err = fails(capsys, ident(d, d / name), words)
        assert "pickle" not in err and "np.savez(PATH, t=(N,), q=(N, n), tau=(N, n)" in err, err


def test_guard_no_numpy_scalar_reprs(d, capsys):
    t, q, qd, qdd, tau = _table()
    t[10] = t[9]
    err = fails(capsys, ident(d, write_csv(d / "dup.csv", (t, q, qd, qdd, tau))), "duplicate time stamp")
    assert "np." not in err and f"t = {float(t[10])!r} after" in err, err


def test_guard_warnings_printed_by_the_cli_and_strict(d, capsys):
    """A warning reaches the terminal whatever the interpreter's filters (PYTHONWARNINGS=ignore),
    once; --strict (before or after the subcommand) makes it an error with status 3."""
    import warnings

    t, q, qd, qdd, tau = _table()
    q[:, 1], qd[:, 1], qdd[:, 1] = 0.3, 0.0, 0.0
    still = write_csv(d / "still2.csv", (t, q, qd, qdd, tau))
    argv = ident(d, still) + ["--method", "ridge"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # as PYTHONWARNINGS=ignore
        assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    moves = [line for line in lines if "joint2 does not move" in line]
    assert len(moves) == 1 and moves[0].startswith("jaxid identify: warning: "), lines
    for strict in (["--strict", *argv], [*argv, "--strict"]):
        assert main(strict) == 3
        err = capsys.readouterr().err.strip()
        assert err.startswith("jaxid identify: error: ") and "\n" not in err, err
        assert "joint2 does not move" in err and "--strict" in err, err


# --- refuse: library refusals ---
# Issue 36: the library refuses what it cannot estimate, one clear exception per class. Shared: a
# random regressor (600 samples, 2 joints, 4 columns) and its torques; every estimator sees it.
REFUSE_METHODS = ("ols", "wls", "irls", "ridge", "tls", "streamed")


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(7)
    W = rng.normal(size=(1200, 4)) * np.array([1.0, 5.0, 0.2, 2.0])
    tau = W @ np.array([1.5, -0.4, 3.0, 0.8]) + 0.01 * rng.normal(size=1200)
    return W, tau


def _estimate(W, tau, method):
    from jaxid.identification import estimators, streaming

    if method == "streamed":
        return streaming.fit(streaming.from_rows(W, tau, 2), "ols")
    return estimators.identify(W, tau, method, n_joints=2)


@pytest.mark.parametrize("method", REFUSE_METHODS)
def test_refuse_zero_and_non_finite_torque(rows, method):
    """All-zero torques are refused (not theta = 0 with std 0), as NaN and inf are."""
    W, tau = rows
    assert np.all(np.isfinite(np.asarray(_estimate(W, tau, method).theta)))
    with pytest.raises(ValueError, match="tau is all zeros: there is nothing to estimate"):
        _estimate(W, np.zeros_like(tau), method)
    for value in (np.nan, np.inf):
        bad = tau.copy()
        bad[11] = value
        with pytest.raises(ValueError, match="NaN or inf"):
            _estimate(W, bad, method)


@pytest.mark.parametrize("method", REFUSE_METHODS)
def test_refuse_a_row_of_absurd_scale_naming_it(rows, method):
    """One torque of 1e200 (theta ~ 5e197 or NaN before): refused, naming the row, sample and joint;
    a gross but representable spike (1e8 N m) is left to the screening, as before."""
    W, tau = rows
    bad = tau.copy()
    bad[77] = 1e200
    with pytest.raises(ValueError, match=r"tau row 77 \(sample 38, joint 2\) has \|tau\| = 1e\+200"):
        _estimate(W, bad, method)
    spike = tau.copy()
    spike[77] = 1e8
    assert np.all(np.isfinite(np.asarray(_estimate(W, spike, "ols").theta)))
    huge_row = W.copy()
    huge_row[300] *= 1e190  # a regressor row (e.g. from a corrupted position) alike
    with pytest.raises(ValueError, match=r"W row 300 \(sample 150, joint 1\)"):
        _estimate(huge_row, tau, method)


def test_refuse_masked_absurd_row_is_dropped_not_refused(rows):
    """streaming.from_rows checks only the samples its mask keeps."""
    from jaxid.identification import streaming

    W, tau = rows
    bad = tau.copy()
    bad[77] = 1e200
    keep = np.ones(600, bool)
    keep[38] = False
    fit = streaming.fit(streaming.from_rows(W, bad, 2, mask=keep), "ols")
    np.testing.assert_allclose(np.asarray(fit.theta), [1.5, -0.4, 3.0, 0.8], rtol=1e-3)


@pytest.fixture(scope="module")
def planar():
    from jaxid import models

    return models.planar(2)


def test_refuse_consistent_fit_of_zero_torque(planar):
    """identify_consistent on zero torque: an error, not valid=True bodies (rows or reduced form)."""
    from jaxid.identification import streaming
    from jaxid.identification.consistent import identify_consistent

    q = np.random.default_rng(0).normal(size=(60, 2))
    W = np.asarray(jaxid.stack(jaxid.regressor(planar, q, q, q)))
    with pytest.raises(ValueError, match="tau is all zeros"):
        identify_consistent(planar, W, np.zeros(len(W)), max_steps=5)
    base = jaxid.base_parameters(planar)
    with pytest.raises(ValueError, match="tau is all zeros"):
        identify_consistent(planar, reduced=streaming.from_rows(np.asarray(base.reduce(W)), np.zeros(len(W)), 2))


def test_refuse_forward_dynamics_of_a_massless_model(planar):
    """A link with no mass and no inertia: a singular mass matrix is an error naming the joint (not
    NaN accelerations); under jit the documented NaN, which the caller can test."""
    import dataclasses

    import jax

    massless = dataclasses.replace(planar, inertial=planar.inertial.at[1].set(0.0))
    z = np.zeros(2)
    assert np.all(np.isfinite(np.asarray(jaxid.forward_dynamics(planar, z, z, np.ones(2)))))
    with pytest.raises(ValueError, match=r"mass matrix is not positive definite .*no inertia moves with \['joint2'\]"):
        jaxid.forward_dynamics(massless, z, z, np.ones(2))
    with pytest.raises(ValueError, match=r"at sample \(0,\)"):
        jaxid.forward_dynamics(massless, np.zeros((3, 2)), np.zeros((3, 2)), np.ones((3, 2)))
    traced = jax.jit(lambda q: jaxid.forward_dynamics(massless, q, q, q + 1.0))(z)
    assert not np.all(np.isfinite(np.asarray(traced)))


def _urdf(tmp_path, lower=-1.0, upper=1.0, extra=""):
    link = (
        '<link name="{}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" '
        'izz="0.1"/></inertial></link>'
    )
    joint = (
        '<joint name="{}" type="revolute"><parent link="{}"/><child link="{}"/><axis xyz="0 1 0"/>'
        '<limit lower="{}" upper="{}" effort="10" velocity="2"/></joint>'
    )
    body = "".join(link.format(n) for n in ("base", "a", "b"))
    body += joint.format("j1", "base", "a", -1, 1) + joint.format("j2", "a", "b", lower, upper)
    path = tmp_path / "r.urdf"
    path.write_text(f'<robot name="r">{body}{extra}</robot>')
    return str(path)


def test_refuse_inverted_joint_limits(planar, tmp_path):
    """q_min > q_max: refused building a Robot and reading a URDF, naming the joint."""
    import dataclasses

    with pytest.raises(ValueError, match=r"joint 2 \(joint2\): position limits inverted, q_min = 1 > q_max = -1"):
        dataclasses.replace(planar, q_min=np.array([-1.0, 1.0]), q_max=np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"joint 'j2' <limit lower=2 upper=-2>: the limits are inverted"):
        jaxid.Robot.from_urdf(_urdf(tmp_path, 2.0, -2.0))
    assert jaxid.Robot.from_urdf(_urdf(tmp_path, 0.0, 0.0)).n == 2  # equal limits are read (a placeholder) ...


def test_refuse_placeholder_range_where_excite_needs_limits(tmp_path):
    """... and named, with the fix, where an excitation needs a range (the double pendulum's
    lower = upper = 0)."""
    from jaxid.excitation.optimize import model_limits

    robot = jaxid.Robot.from_urdf(_urdf(tmp_path, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"joint 2 \(j2\): q_min = 0 >= q_max = 0, a placeholder range") as e:
        model_limits(robot)
    assert "\n" not in str(e.value) and "give the joints' real limits (position range" in str(e.value)
    # Every unusable limit in one message, each joint named (not one per run).
    with pytest.raises(ValueError) as e:
        model_limits(robot, {"qd_max": [2.0, 0.0], "tau_max": [0.0, 0.0]})
    msg = str(e.value)
    assert "joint 2 (j2): q_min = 0 >= q_max = 0" in msg and "joint 2 (j2): qd_max = 0, not positive" in msg
    assert "joint 1 (j1): tau_max = 0, not positive" in msg and "joint 2 (j2): tau_max = 0" in msg
    assert "joint 1 (j1): qd_max" not in msg and '<limit effort="0">' in msg


def test_refuse_detached_links_in_a_urdf(tmp_path):
    """A cycle of joints apart from the tree was dropped (a 1-joint robot loaded): refused, naming
    the links and the joints."""

    loop = (
        '<link name="g1"/><link name="g2"/>'
        '<joint name="gj1" type="fixed"><parent link="g1"/><child link="g2"/></joint>'
        '<joint name="gj2" type="fixed"><parent link="g2"/><child link="g1"/></joint>'
    )
    with pytest.raises(ValueError, match=r"links \['g1', 'g2'\] are not connected to the root link 'base'") as e:
        jaxid.Robot.from_urdf(_urdf(tmp_path, extra=loop))
    assert "['gj1', 'gj2']" in str(e.value)
    with pytest.raises(ValueError, match=r"expected one root link, found \['base', 'loose'\]"):
        jaxid.Robot.from_urdf(_urdf(tmp_path, extra='<link name="loose"/>'))


def test_refuse_run_study_arguments():
    """Sigmas of the wrong length and a non-integer number of runs: ValueError naming the argument;
    a stacked W of several joints without their count."""
    from jaxid.study import run_study

    W = np.random.default_rng(0).normal(size=(120 * 6, 4))
    theta = np.ones(4)
    with pytest.raises(ValueError, match=r"sigma holds 5 noise std for a 6-joint robot"):
        run_study(W, theta, np.full(5, 0.1), 4, n_joints=6)
    with pytest.raises(ValueError, match=r"sigma holds 5 noise std for a 6-joint robot"):
        run_study(W.reshape(120, 6, 4), theta, np.full(5, 0.1), 4)
    for runs in (2.7, True, "3"):
        with pytest.raises(ValueError, match=r"n_runs must be a whole number of runs"):
            run_study(W, theta, np.full(6, 0.1), runs, n_joints=6)
    with pytest.raises(ValueError, match=r"does not state the joint count.*pass n_joints=n"):
        run_study(W, theta, np.full(5, 0.1), 4)
    run_study(W[:120], theta, np.full(1, 0.1), 2)  # one joint: nothing to mistake


# --- plaus: log plausibility ---
# Faults injected into simulated logs of the UR5 URDF (example-robot-data; the built-in UR5
# otherwise) and the built-in planar3: each found before the fit with the joint, the file row and
# the flag that fixes it; the clean logs pass without a finding.
import dataclasses  # noqa: E402
import warnings  # noqa: E402

from jaxid.workflow import WorkflowError, plausibility  # noqa: E402
from jaxid.workflow.commands.common import read_runs  # noqa: E402
from jaxid.workflow.requests import DataSpec  # noqa: E402


def _plaus_log(robot, path, fs=100.0, seconds=10.0, shift=None):
    """A simulated log (t, q, tau) of ``robot`` on a 5-harmonic 0.2 Hz trajectory, written to path: the
    torque of the robot with its inertial parameters 10 % off nominal, viscous and Coulomb friction
    and noise (computed by the same compiled program as the check's nominal torque: a fast test)."""
    t = np.arange(int(seconds * fs)) / fs
    w = 2 * np.pi * 0.2 * np.arange(1, 6)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 5, robot.n)) * 0.12
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q = s @ a + c @ b + (0.0 if shift is None else shift)
    qd, qdd = (c * w) @ a - (s * w) @ b, -(s * w**2) @ a - (c * w**2) @ b
    theta = np.asarray(robot.parameter_vector())
    true = robot.with_parameters(theta * (1 + 0.1 * rng.standard_normal(theta.shape)))
    tau = plausibility._nominal_torques(true, q, qd, qdd) + 0.5 * qd + 0.8 * np.tanh(qd / 0.01)
    tau = tau + 0.005 * tau.std(axis=0) * rng.standard_normal(tau.shape)
    ds = data.from_arrays(t, q + 1e-5 * rng.standard_normal(q.shape), tau, source=str(path))
    data.write(ds, path)
    return str(path)


@pytest.fixture(scope="module")
def plaus(tmp_path_factory):
    from jaxid import Robot
    from jaxid.models import example_robot_urdf, planar, ur5

    d = tmp_path_factory.mktemp("plaus")
    try:
        urdf = example_robot_urdf("ur_description/urdf/ur5_robot.urdf")
        arm, ur5_flags = Robot.from_urdf(urdf), ["--urdf", urdf]
    except FileNotFoundError:
        arm, ur5_flags = ur5(), ["--robot", "ur5"]
    p3 = planar(3)
    return dict(
        d=d,
        ur5=arm,
        ur5_flags=ur5_flags,
        planar3=p3,
        ur5_log=_plaus_log(arm, d / "ur5.csv"),
        planar3_log=_plaus_log(p3, d / "planar3.csv"),
    )


def _load(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1)


def _faulty(path, out, change):
    header, a = _load(path)
    a = a.copy()
    change(a)
    return write_csv(out, a.T, header)


def _read(path, robot, **spec):
    """read_runs with warnings recorded: (prepared, the plausibility warnings)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        prepared = read_runs([path], robot, DataSpec(**spec))
    faults = [str(w.message) for w in seen if any(k in str(w.message) for k in ("wraps", "jumps", "x the nominal"))]
    return prepared, faults


def test_plaus_clean_logs_pass(plaus):
    for name in ("ur5", "planar3"):
        prepared, faults = _read(plaus[f"{name}_log"], plaus[name])
        assert prepared.plausibility.findings == () and not faults, (name, faults)


def test_plaus_position_units_named(plaus):
    arm, d = plaus["ur5"], plaus["d"]
    n = arm.n
    deg = _faulty(
        plaus["ur5_log"], d / "deg.csv", lambda a: a.__setitem__(np.s_[:, 1 : 1 + n], np.degrees(a[:, 1 : 1 + n]))
    )
    with pytest.raises(WorkflowError, match=r"degrees read as rad.*--units q=deg") as e:
        _read(deg, arm)
    assert arm.coordinate_names[0] in str(e.value) and "--accept-fault units" in str(e.value)
    prepared, _ = _read(deg, arm, units="q=deg")  # the fix named: the log passes
    assert prepared.plausibility.findings == ()
    with pytest.raises(WorkflowError, match=r"57.3x too small.*drop q=deg"):  # a log in rad given as degrees
        _read(plaus["ur5_log"], arm, units="q=deg")


def test_plaus_time_unit_named(plaus):
    arm = plaus["ur5"]
    header, a = _load(plaus["ur5_log"])
    slow = write_csv(plaus["d"] / "ten_hz.csv", a[::10].T, header)  # 10 Hz: 10 kHz with t in ms passes the rate check
    with pytest.raises(WorkflowError, match=r"too short.*drop t=ms from --units") as e:
        _read(slow, arm, units="t=ms")
    assert "--accept-fault time" in str(e.value)


def test_plaus_encoder_spike_named_by_file_row_and_bridged_on_request(plaus):
    p3, d = plaus["planar3"], plaus["d"]
    header, clean = _load(plaus["planar3_log"])
    spiky = _faulty(plaus["planar3_log"], d / "spike.csv", lambda a: a.__setitem__((40, 2), a[40, 2] + 10.0))
    with pytest.raises(
        WorkflowError, match=r"joint 2 \(joint2\) jumps by up to 10 rad for one sample at row 41 \(line 42\)"
    ) as e:
        _read(spiky, p3)
    assert "--accept-fault jump" in str(e.value)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        (ds,) = read_runs([spiky], p3, DataSpec(accept_faults=("jump",)), prepare=False)
    assert any("bridged" in n and "row 41" in n for n in ds.notes)
    assert abs(float(ds.q[40, 1]) - clean[40, 2]) < 1e-3  # the neighbours' midpoint, not the spike


def test_plaus_wrap_unwrapped_and_said(plaus):
    p3, d = plaus["planar3"], plaus["d"]
    log = _plaus_log(p3, d / "turned.csv", shift=np.array([3.0, 0.0, 0.0]))  # joint1 crosses +pi
    header, a = _load(log)
    wrapped = _faulty(log, d / "wrapped.csv", lambda x: x.__setitem__(np.s_[:, 1], np.angle(np.exp(1j * x[:, 1]))))
    assert np.abs(np.diff(_load(wrapped)[1][:, 1])).max() > 6  # the fault is there
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        (ds,) = read_runs([wrapped], p3, DataSpec(), prepare=False)
    turns = (np.asarray(ds.q[:, 0]) - a[:, 1]) / (2 * np.pi)  # unwrapped: the logged motion, whole turns apart
    np.testing.assert_allclose(turns, np.round(turns[0]), atol=1e-9)
    _, faults = _read(wrapped, p3)
    assert any("joint 1 (joint1) wraps at +-pi" in f and "unwrapped" in f and "row " in f for f in faults), faults
    # A 0..2 pi encoder on a joint that crosses 0: the same repair.
    header, a = _load(plaus["planar3_log"])
    assert a[:, 2].min() < 0 < a[:, 2].max()
    mod = _faulty(plaus["planar3_log"], d / "mod.csv", lambda x: x.__setitem__(np.s_[:, 2], np.mod(x[:, 2], 2 * np.pi)))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        (ds,) = read_runs([mod], p3, DataSpec(), prepare=False)
    turns = (np.asarray(ds.q[:, 1]) - a[:, 2]) / (2 * np.pi)
    np.testing.assert_allclose(turns, np.round(turns[0]), atol=1e-9)
    _, faults = _read(mod, p3)
    assert any("joint 2 (joint2) wraps at 0 and 2 pi" in f and "unwrapped" in f for f in faults), faults


def test_plaus_torque_sign_and_scale_against_the_model(plaus):
    arm, d = plaus["ur5"], plaus["d"]
    n, name = arm.n, arm.coordinate_names[1]
    flipped = _faulty(plaus["ur5_log"], d / "flip.csv", lambda a: a.__setitem__(np.s_[:, 1 + n + 1], -a[:, 1 + n + 1]))
    with pytest.raises(WorkflowError, match=rf"\({name}\)'s torque is -0\.\d+ x the nominal.*sign is inverted") as e:
        _read(flipped, arm)
    assert "--accept-fault torque-sign" in str(e.value)
    gains = ",".join(["32"] * n)  # a log already in N m given as currents
    with pytest.raises(WorkflowError, match=r"torque is \d\d\.?\d* x the nominal.*drop --gains"):
        _read(plaus["ur5_log"], arm, units="tau=A", gains=gains)
    # Every joint of the planar arm, gravity-loaded or friction-dominated: a flipped channel is named
    # (by the model alone, or by the model plus dissipating friction), the clean log is not.
    p3 = plaus["planar3"]
    prepared, _ = _read(plaus["planar3_log"], p3)
    assert not [f for f in prepared.plausibility.findings if f.fault.startswith("torque")]
    for j in range(p3.n):
        flip = _faulty(
            plaus["planar3_log"], d / f"flip3_{j}.csv", lambda a: a.__setitem__(np.s_[:, 4 + j], -a[:, 4 + j])
        )
        with pytest.raises(WorkflowError, match=rf"joint {j + 1} \(joint{j + 1}\)'s torque .*sign is inverted"):
            _read(flip, p3)
    prepared, faults = _read(flipped, arm, accept_faults=("torque-sign",))  # accepted: warned, recorded
    assert [f.fault for f in prepared.plausibility.findings] == ["torque-sign"] and faults
    # One joint's gain on a channel already in N m, within 10x of the model: the channel matches the
    # model before its gain far better than after it; gains of one (currents = torques) pass.
    one = ["1"] * n
    one[2] = "8"
    with pytest.raises(
        WorkflowError, match=rf"joint 3 \({arm.coordinate_names[2]}\)'s torque is .* before its gain 8 N m/A"
    ):
        _read(plaus["ur5_log"], arm, units="tau=A", gains=",".join(one))
    prepared, _ = _read(plaus["ur5_log"], arm, units="tau=A", gains=",".join(["1"] * n))
    assert not [f for f in prepared.plausibility.findings if f.fault.startswith("torque")]


def test_plaus_residual_of_the_order_of_the_torque_named(plaus):
    from jaxid.identification.base import base_from_regressor
    from jaxid.model.description import model_description
    from jaxid.workflow.params import Params

    p3, d = plaus["planar3"], plaus["d"]
    names = p3.parameter_names()  # the nominal parameters as a fit's (the log's robot is 10 % off them)
    params = Params(
        model=model_description(p3, builtin="planar3"),
        parameter_names=names,
        base=base_from_regressor(np.eye(len(names)), names),
        theta=p3.parameter_vector(),
        cov=np.eye(len(names)),
        fit={},
    )
    rng = np.random.default_rng(0)
    noisy = _faulty(
        plaus["planar3_log"], d / "noise3.csv", lambda a: a.__setitem__(np.s_[:, 6], rng.normal(size=len(a)))
    )
    for path, expected in ((plaus["planar3_log"], []), (noisy, ["joint3"])):
        prepared, _ = _read(path, p3)
        found = plausibility.check_residuals(p3, params, prepared)
        assert [f.joint for f in found] == expected and all(f.fault == "residual" and not f.error for f in found)
    assert "joint 3 (joint3): the fit's residual RMS is" in found[0].message
    assert plausibility.Plausibility(found).to_dict()["findings"][0]["joint"] == "joint3"  # params.json's record


def test_plaus_stale_sidecar_refused(plaus):
    p3, d = plaus["planar3"], plaus["d"]
    header, a = _load(plaus["planar3_log"])
    for f0, name in ((0.2, "fresh.csv"), (0.25, "stale.csv")):  # the log's motion repeats at 0.2 Hz
        ds = data.from_arrays(a[:, 0], a[:, 1:4], a[:, 4:7], source=name)
        data.write(dataclasses.replace(ds, base_frequency=f0, harmonics=5), d / name)
    prepared, _ = _read(str(d / "fresh.csv"), p3)
    assert prepared.choices[0]["derivatives"] == "periodic" and prepared.choices[0]["periods"] == 2
    with pytest.raises(
        WorkflowError, match=r"stale.csv.json \(base frequency 0.25 Hz\) makes 2 periods.*not one motion"
    ):
        _read(str(d / "stale.csv"), p3)


def test_plaus_max_gap_does_not_bridge_a_hole(plaus, capsys):
    header, a = _load(plaus["planar3_log"])
    holed = np.delete(a, np.s_[300:500], axis=0)  # a 2 s hole in a 10 s run
    path = write_csv(plaus["d"] / "hole.csv", holed.T, header)
    argv = ["identify", "--robot", "planar3", "-o", str(plaus["d"] / "h.json"), "--resample", "--max-gap", "5", path]
    fails(capsys, argv, "row 300 (line 301) to row 301 (line 302): gap of 2.01 s after t = 2.99 s, 20 % of the run's")


def test_plaus_payload_says_the_nominal_model_is_subtracted(plaus, capsys, monkeypatch):
    from jaxid.identification import payload

    def fit(*args, **kwargs):  # the fit itself is test_payload's: stop there
        raise WorkflowError("stopped before the fit")

    monkeypatch.setattr(payload, "identify_payload", fit)
    assert main(["payload", "--robot", "planar3", plaus["planar3_log"]]) == 2  # refused: the nominal model unasked
    err = capsys.readouterr().err
    assert "neither --params nor --unloaded" in err and "pass --nominal" in err and "stopped" not in err
    assert main(["payload", "--robot", "planar3", "--nominal", plaus["planar3_log"]]) == 2
    err = capsys.readouterr().err
    assert "neither --params nor --unloaded: the NOMINAL model of planar3" in err and "stopped before the fit" in err


def test_plaus_robot_at_rest_is_not_a_sensor_fault(plaus, capsys):
    header, a = _load(plaus["planar3_log"])
    rest = a.copy()
    rest[:, 1:4] = rest[0, 1:4]  # positions constant, torques the static load (rounded: "stuck" to the screening)
    rest[:, 4:7] = np.round(rest[0, 4:7], 2)
    path = write_csv(plaus["d"] / "rest.csv", rest.T, header)
    err = fails(
        capsys,
        ["identify", "--robot", "planar3", "-o", str(plaus["d"] / "r.json"), path],
        "the robot did not move (positions constant",
    )
    assert "stuck" not in err.split("look stuck")[0]


def test_plaus_lugre_epoch_stamps_are_not_irregular():
    from jaxid.workflow.commands.lugre import _uniform_step

    epoch = 1.7e9 + 0.123457 + np.arange(500) * 1e-3  # a clock's stamps: float64's spacing is 2.4e-7 s there
    assert abs(_uniform_step("f.csv", epoch) - 1e-3) < 1e-9
    jump = np.arange(500) * 1e-3
    jump[300:] += 5e-4
    with pytest.raises(WorkflowError, match=r"irregular at row 301 \(line 302\), a step of 0.0015 s"):
        _uniform_step("f.csv", jump)


def test_plaus_screening_rows_point_at_the_file(plaus, capsys):
    header, a = _load(plaus["planar3_log"])
    a = a.copy()
    a[500, 4] = 1e300  # data row 501, line 502; the prepared run starts after the filter's edge trim
    path = write_csv(plaus["d"] / "huge.csv", a.T, header)
    fails(
        capsys,
        ["identify", "--robot", "planar3", "-o", str(plaus["d"] / "hg.json"), "--quiet", path],
        "in the file: row 501 (line 502)",
    )


def test_bounded_least_squares_equals_scipy():
    """The screening's small bounded least squares (``plausibility.bounded_lstsq``, which spares
    every identify the import of scipy.optimize) reaches scipy's ``lsq_linear`` optimum, also with
    an all-zero column (a joint that does not move) and with the unbounded optimum outside."""
    from scipy.optimize import lsq_linear

    from jaxid.workflow.plausibility import bounded_lstsq

    rng = np.random.default_rng(0)
    for trial in range(60):
        N = int(rng.integers(20, 300))
        A = rng.normal(size=(N, 4)) * rng.uniform(0.01, 100, 4)
        if trial % 5 == 0:
            A[:, 1] = 0.0
        b = A @ rng.normal(size=4) * 3 + rng.normal(size=N)
        lo = np.array([rng.uniform(-1, 1), 0.0, 0.0, -np.inf])
        hi = np.array([lo[0] + rng.uniform(0.01, 2), np.inf, np.inf, np.inf])
        x, res = bounded_lstsq(A, b, lo, hi)
        ref = float(np.sum(lsq_linear(A, b, bounds=(lo, hi), tol=1e-12).fun ** 2))
        assert np.all((lo <= x) & (x <= hi)) and res == pytest.approx(float(np.sum((A @ x - b) ** 2)), rel=1e-9)
        assert res <= ref * (1 + 1e-9) + 1e-12
