"""The CLI's persistent compilation cache: the first run compiles and says so, the second reuses
the compiled code; an unwritable cache folder warns once and the run goes on without it."""

import os
import pathlib
import subprocess
import sys
import warnings

import jax.numpy as jnp
import numpy as np
import pytest


def _traj(path):
    t = np.arange(0.0, 6.0, 0.01)  # as tests/test_cli.py: programs shared
    q = np.stack([np.sin(t), np.cos(t)], 1)
    np.savetxt(path, np.column_stack([t, q]), delimiter=",", header="t,q1,q2", comments="", fmt="%.17g")


def _simulate(tmp_path, cache):
    env = dict(os.environ, JAXID_CACHE_DIR=str(cache))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxid",
            "simulate",
            "--robot",
            "planar2",
            "--trajectory",
            str(tmp_path / "traj.csv"),
            "-o",
            str(tmp_path / "data.csv"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )


def test_second_run_reuses_the_cache(tmp_path):
    _traj(tmp_path / "traj.csv")
    cache = tmp_path / "cache"
    first = _simulate(tmp_path, cache)
    assert first.returncode == 0, first.stderr
    entries = {p.name for p in cache.iterdir() if not p.name.startswith(".")}
    assert entries, "the first run wrote no compiled code"
    second = _simulate(tmp_path, cache)
    assert second.returncode == 0
    assert {p.name for p in cache.iterdir() if not p.name.startswith(".")} == entries  # nothing compiled anew


def test_unwritable_cache_warns_and_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = dict(os.environ, JAXID_CACHE_DIR=str(blocker / "cache"))
    # The cache is set up before the subcommand runs: a run that then fails fast shows both lines.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxid",
            "simulate",
            "--robot",
            "planar2",
            "--trajectory",
            str(tmp_path / "absent.csv"),
            "-o",
            str(tmp_path / "d.csv"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 2, run.stderr
    assert "warning: the compilation cache folder" in lines[0] and "without the cache" in lines[0]
    assert "absent.csv: no such file" in lines[1]


def test_version(tmp_path):
    """``jaxid --version`` answers without importing JAX: a ``jax`` that cannot be imported is
    first on the path."""
    from jaxid import __version__

    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text("raise ImportError('jax must not be imported')\n")
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), root]))
    out = subprocess.run([sys.executable, "-m", "jaxid", "--version"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == f"jaxid {__version__}", out.stderr


def test_first_run_says_it_compiles(tmp_path, monkeypatch, capsys):
    """On a terminal the first run of a subcommand with this cache says it compiles; the next does not."""
    import jaxid.cache
    from jaxid.cli import main

    # A new cache folder (no command has completed with it) that links the session's stored
    # programs: the message depends on the folder's own markers, and the run need not compile again.
    session = jaxid.cache._state.get("dir")
    for sub in ("compiled", "values") if session is not None else ():
        (session / sub).mkdir(parents=True, exist_ok=True)
        (tmp_path / sub).symlink_to(session / sub)
    monkeypatch.setattr(jaxid.cache, "_state", {"dir": tmp_path})
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    _traj(tmp_path / "traj.csv")
    argv = ["simulate", "--robot", "planar2", "--trajectory", str(tmp_path / "traj.csv"), "-o", str(tmp_path / "d.csv")]
    assert main(argv) == 0
    assert "compiling (first run only" in capsys.readouterr().err
    assert main(argv) == 0
    assert "compiling" not in capsys.readouterr().err


def _wait_cpu(pid, seconds, timeout=120.0):
    """Wait until process ``pid`` has used ``seconds`` of CPU time (Linux /proc), so that a signal
    reaches it after its imports however loaded the machine is."""
    import time

    clock = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / clock >= seconds:
            return
        time.sleep(0.2)
    raise AssertionError(f"process {pid} did not use {seconds} s of CPU in {timeout} s")


def test_interrupt_and_terminate_end_with_one_line(tmp_path):
    """SIGINT -> exit 130, SIGTERM -> exit 143, one line each, no traceback and no output file."""
    import signal

    t = np.arange(0.0, 600.0, 0.01)
    np.savetxt(
        tmp_path / "long.csv",
        np.column_stack([t, np.sin(t), np.cos(t)]),
        delimiter=",",
        header="t,q1,q2",
        comments="",
        fmt="%.17g",
    )
    env = dict(os.environ, JAXID_CACHE_DIR="off")
    for sig, code, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
        out = tmp_path / f"out{code}.csv"
        # As from a terminal: SIGINT at its default (a pytest-xdist worker ignores it, and a child
        # inherits an ignored SIGINT, which Python then leaves ignored).
        p = subprocess.Popen(
            [sys.executable, "-m", "jaxid", "excite", "--robot", "planar2", "--steps", "100000", "-o", str(out)],
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            _wait_cpu(p.pid, 6.0)  # past the imports (about 3 s of CPU), inside the excitation's compile
            p.send_signal(sig)
            _, err = p.communicate(timeout=600)  # a compile on a loaded machine can hold the interpreter for minutes
        finally:
            p.kill()  # never leave a 100000-step optimisation running after a failure
            p.wait()
        assert p.returncode == code, err
        assert err.strip().splitlines()[-1] == f"jaxid excite: {word}" and "Traceback" not in err
        assert not out.exists()


# ---- compiled programs kept on disk (jaxid.cache.jit) and values (jaxid.cache.memo) -----------
_TRACES = []


def _scaled_sum(x, scale, how="sum"):
    _TRACES.append(how)  # runs once per trace, never when a stored program runs
    return {"sum": jnp.sum(jnp.sin(x["a"]) * x["b"]) * scale, "how": how}


@pytest.fixture
def on(tmp_path, monkeypatch):
    """The cache on in tmp_path for this test; the programs' folder."""
    import jaxid.cache

    monkeypatch.setattr(jaxid.cache, "_state", {"dir": tmp_path})
    _TRACES.clear()
    return tmp_path / "compiled"


def test_stored_program_equals_jit_and_is_read_back(on):
    """rnea through a stored (compiled, serialised, then loaded) program equals the plain jit to 1e-12,
    and a new wrapper (as in a new process) reads the program instead of tracing."""
    import equinox as eqx

    import jaxid
    import jaxid.cache
    from jaxid.dynamics.terms import rnea

    model, states = jaxid.models.planar(3), np.random.default_rng(0).normal(size=(3, 8, 3))
    raw = rnea.__wrapped__
    ref = eqx.filter_jit(raw)(model, *states)
    before = set(on.glob("*"))  # Robot.from_dh's row program may be stored too
    first = jaxid.cache.jit(raw)(model, *states)
    assert len(set(on.glob("*")) - before) == 1
    again = jaxid.cache.jit(raw)(model, *states)  # read back from the stored executable
    np.testing.assert_allclose(first, ref, rtol=0, atol=1e-12 * float(np.max(np.abs(ref))))
    np.testing.assert_array_equal(again, first)


def test_key_covers_statics_shapes_and_structure(on):
    """A changed static argument, shape or pytree structure is a different program; the same
    call again is not traced again."""
    import jaxid.cache

    f = jaxid.cache.jit(_scaled_sum)
    x = {"a": np.ones(3), "b": np.arange(3.0)}
    assert float(f(x, np.float64(2.0))["sum"]) == pytest.approx(2 * np.sum(np.sin(1.0) * np.arange(3.0)))
    f(x, np.float64(3.0))  # a new value of an array argument: same program
    assert len(_TRACES) == 1
    assert f(x, 2.0, how="other")["how"] == "other"  # a Python float and a keyword are static
    f(x, 3.0, how="other")
    f({"a": np.ones(4), "b": np.arange(4.0)}, np.float64(2.0))  # shape
    f({"a": np.ones(3), "b": np.arange(3.0), "c": None}, np.float64(2.0))  # treedef
    f({"a": np.ones(3, np.float32), "b": np.arange(3.0)}, np.float64(2.0))  # dtype
    assert len(_TRACES) == 6 and len(list(on.iterdir())) == 6


def test_corrupt_or_unkeyable_falls_back_to_jit(on, tmp_path):
    import jaxid.cache

    x = {"a": np.ones(3), "b": np.arange(3.0)}
    want = float(jaxid.cache.jit(_scaled_sum)(x, np.float64(2.0))["sum"])
    (stored,) = on.iterdir()
    stored.write_bytes(stored.read_bytes()[:-40] + b"\0" * 40)
    assert float(jaxid.cache.jit(_scaled_sum)(x, np.float64(2.0))["sum"]) == want  # traced again, rewritten
    assert len(_TRACES) == 2
    local = jaxid.cache.jit(lambda y, g: _scaled_sum(y, 2.0, how=g()))  # a local lambda has no key
    assert float(local(x, lambda: "sum")["sum"]) == want
    assert len(list(on.iterdir())) == 1


def test_off_means_plain_jit(monkeypatch, tmp_path):
    import jaxid.cache

    monkeypatch.setattr(jaxid.cache, "_state", {"dir": None})
    monkeypatch.setenv("JAXID_CACHE_DIR", "off")
    assert jaxid.cache.directory() is None
    x = {"a": np.ones(3), "b": np.arange(3.0)}
    jaxid.cache.jit(_scaled_sum)(x, np.float64(2.0))
    assert not any(tmp_path.iterdir())


_SCRIPT = """
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import jaxid.cache

class Out(eqx.Module):  # an equinox module out: its treedef is stored with the program
    y: jax.Array
    tag: str = eqx.field(static=True)

def f(x, n):
    print("traced", flush=True)
    return Out(jnp.cumsum(jnp.sin(x)) * n, "t")

def r(a):  # LAPACK (geqrf): a stored executable must find jaxlib's kernels without any lowering
    print("traced", flush=True)
    return jnp.abs(jnp.linalg.qr(a, mode="r")[-1, -1])

jaxid.cache.enable()
a = np.vander(np.linspace(0.0, 1.0, 6), 4)
print(repr(float(jaxid.cache.jit(r)(a))), repr(float(abs(np.linalg.qr(a, mode="r")[-1, -1]))))
out = jaxid.cache.jit(f)(np.linspace(0.0, 1.0, 5), 3)
print(out.tag, " ".join(map(repr, np.asarray(out.y).tolist())))
"""


def test_fresh_process_loads_the_program_without_tracing(tmp_path):
    (tmp_path / "tiny.py").write_text(_SCRIPT)
    env = dict(os.environ, JAXID_CACHE_DIR=str(tmp_path / "cache"))
    runs = [
        subprocess.run([sys.executable, str(tmp_path / "tiny.py")], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    first, second = (r.stdout.splitlines() for r in runs)
    assert first[0] == "traced" and "traced" not in second
    assert (tmp_path / "cache" / "compiled").is_dir()  # the second process ran the executables
    np.testing.assert_allclose(*map(float, second[0].split()), rtol=1e-12)
    want = np.cumsum(np.sin(np.linspace(0.0, 1.0, 5))) * 3
    assert second[-1].split()[0] == "t"
    np.testing.assert_allclose([float(v) for v in second[-1].split()[1:]], want, rtol=1e-15)
    assert second[-1] == first[-1]


_CALLS = []


def _analysis(model, tol=1e-8):
    _CALLS.append(tol)
    warnings.warn("an ambiguous rank", UserWarning, stacklevel=1)
    return {"norm": float(np.linalg.norm(np.asarray(model["a"]))), "tol": tol}


def test_memo_keeps_values_and_warnings(on):
    import jaxid.cache

    _CALLS.clear()
    f = jaxid.cache.memo(_analysis)
    model = {"a": np.arange(4.0)}
    with pytest.warns(UserWarning, match="ambiguous rank"):
        first = f(model)
    with pytest.warns(UserWarning, match="ambiguous rank"):
        assert jaxid.cache.memo(_analysis)({"a": np.arange(4.0)}) == first  # read back: not called
    assert len(_CALLS) == 1
    with pytest.warns(UserWarning):
        f({"a": np.arange(4.0) + 1e-12})  # another value
        f(model, tol=1e-6)
    assert len(_CALLS) == 3


def _weighted(x, w, n):
    _TRACES.append(n)
    return jnp.sum(x * w) / n


def test_static_argnames_trace_python_numbers(on):
    """With static_argnames it is jax.jit: a Python number in another argument is traced
    (weakly typed), so a new value reuses the program; a new static value does not."""
    import jax

    import jaxid.cache

    f = jaxid.cache.jit(_weighted, static_argnames="n")
    x = np.arange(3.0)
    assert float(f(x, 2.0, 3)) == 2.0 and float(f(x, 4.0, n=3)) == 4.0
    assert len(_TRACES) == 1
    assert float(f(x, 2.0, 2)) == 3.0
    assert len(_TRACES) == 2 and len(list(on.iterdir())) == 2
    np.testing.assert_array_equal(f(x, 2.0, 3), jax.jit(_weighted, static_argnames="n")(x, 2.0, 3))


def _ordered(a, b_static, c):
    _TRACES.append(b_static)
    return a * len(b_static) + c


def test_static_argnames_by_name_whatever_the_order(on):
    """The static argument is found by its name, not by the order of the names."""
    import jaxid.cache

    f = jaxid.cache.jit(_ordered, static_argnames="b_static")
    assert float(f(np.float64(2.0), "xyz", 1.0)) == 7.0
    assert float(f(np.float64(3.0), b_static="xyz", c=2.0)) == 11.0
    assert _TRACES == ["xyz"] and len(list(on.iterdir())) == 1


_LIBRARY = """
import sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import jax
    import jaxid
print("dir", jaxid.cache._state.get("dir"))
print("jax", jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None)
print("warned", any("not writable" in str(w.message) for w in caught))
if sys.argv[1:] == ["disable"]:
    jaxid.cache.disable()
    print("disabled", jaxid.cache._state.get("dir"), jax.config.jax_enable_compilation_cache)
"""


def _library_process(tmp_path, *args, **env):
    (tmp_path / "library.py").write_text(_LIBRARY)
    env = {k: v for k, v in dict(os.environ, **env).items() if v is not None}
    r = subprocess.run([sys.executable, str(tmp_path / "library.py"), *args], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def test_import_turns_the_cache_on_for_library_use(tmp_path):
    """`import jaxid` uses the persistent cache as the CLI does: the user's cache folder (XDG),
    JAXID_CACHE_DIR=off opts out, jaxid.cache.disable() turns it off in the program, and an
    unwritable folder gives a warning and no cache."""
    out = _library_process(tmp_path, "disable", JAXID_CACHE_DIR=None, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    folder = str(tmp_path / "xdg" / "jaxid" / "xla")
    assert out["dir"] == folder and out["jax"] == folder and out["warned"] == "False"
    assert out["disabled"] == "None False"
    out = _library_process(tmp_path, JAXID_CACHE_DIR="off")
    assert out["dir"] == "None" and out["jax"] != folder
    (tmp_path / "file").write_text("")
    out = _library_process(tmp_path, JAXID_CACHE_DIR=str(tmp_path / "file" / "cache"))
    assert out["dir"] == "None" and out["warned"] == "True"


def test_robot_leaves_are_strong_typed_whatever_limits_were_given():
    """A limit left unset (a URDF has no acceleration limit) is a strong-typed array like a
    given one: a weak-typed leaf keyed a second stored program of every function the robot
    goes through (the nominal torques compiled twice in one cold identify)."""
    import jax

    import jaxid

    urdf = jaxid.Robot.from_urdf("examples/data/kuka_lwr4/kuka_lwr4.urdf")
    built = jaxid.models.planar(2)
    for robot in (urdf, built, urdf.with_joint_terms(("fv", "fc"))):
        weak = [
            jax.tree_util.keystr(path)
            for path, x in jax.tree_util.tree_flatten_with_path(robot)[0]
            if isinstance(x, jax.Array) and x.weak_type
        ]
        assert weak == [], weak


def test_robots_of_one_topology_share_the_stored_programs(on):
    """The per-sample dynamics compiled for one robot serve another of the same topology whatever
    its robot and joints are called (names are static fields, so they keyed a program each); the
    numbers are each robot's own."""
    import jaxid

    base = jaxid.models.planar(3)
    renamed = jaxid.Robot(
        base.placements,
        base.axes,
        base.inertial * 1.5,
        joint_types=base.joint_types,
        parents=base.parents,
        names=("hip", "knee", "ankle"),
        name="leg",
    )
    q, qd, qdd = np.random.default_rng(0).normal(size=(3, 40, 3))
    jaxid.rnea(base, q, qd, qdd)
    stored = set(on.iterdir())
    tau = jaxid.rnea(renamed, q, qd, qdd)
    assert set(on.iterdir()) == stored  # nothing new compiled
    Y = jaxid.regressor(renamed, q, qd, qdd)
    np.testing.assert_allclose(tau, Y @ renamed.parameter_vector(), rtol=1e-10, atol=1e-10)
    assert renamed.anonymous().names == ("joint1", "joint2", "joint3") and renamed.names == ("hip", "knee", "ankle")


def test_least_squares_compiles_once_for_every_record_length(on):
    """ols, ridge and two-step wls of concrete rows are programs of the per-joint R's alone (n, p):
    a record of another length (another padding bucket) compiles nothing new, and the residual
    statistics are those of its own rows."""
    import jaxid

    rng = np.random.default_rng(0)
    theta = rng.normal(size=8)
    for k, N in enumerate((500, 3000)):
        W = rng.normal(size=(N * 3, 8))
        tau = W @ theta + rng.normal(size=N * 3) * np.tile([0.1, 1.0, 0.5], N)
        fits = {m: jaxid.identify(W, tau, method=m, n_joints=3) for m in ("wls", "ols", "ridge")}
        if k == 0:
            # (no folder: this process already holds these programs from an earlier test; nothing new either)
            stored = set(on.iterdir()) if on.exists() else set()
        assert (set(on.iterdir()) if on.exists() else set()) == stored
        for fit in fits.values():
            r2 = np.sum((tau - W @ np.asarray(fit.theta)).reshape(N, 3) ** 2, axis=0)
            np.testing.assert_allclose(fit.residual_rms, np.sqrt(r2 / N), rtol=1e-12)
