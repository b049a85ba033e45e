"""The CLI's persistent compilation cache: the first run compiles and says so, the second reuses
the compiled code; an unwritable cache folder warns once and the run goes on without it."""
import os
import subprocess
import sys

import numpy as np


def _traj(path):
    t = np.arange(0.0, 2.0, 0.01)
    q = np.stack([np.sin(t), np.cos(t)], 1)
    np.savetxt(path, np.column_stack([t, q]), delimiter=",", header="t,q1,q2", comments="", fmt="%.17g")


def _simulate(tmp_path, cache):
    env = dict(os.environ, JAXID_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "jaxid", "simulate", "--robot", "planar2", "--trajectory",
                           str(tmp_path / "traj.csv"), "-o", str(tmp_path / "data.csv")],
                          env=env, capture_output=True, text=True)


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
    run = subprocess.run([sys.executable, "-m", "jaxid", "simulate", "--robot", "planar2", "--trajectory",
                          str(tmp_path / "absent.csv"), "-o", str(tmp_path / "d.csv")],
                         env=env, capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 2, run.stderr
    assert "warning: the compilation cache folder" in lines[0] and "without the cache" in lines[0]
    assert "absent.csv: no such file" in lines[1]


def test_version():
    from jaxid import __version__

    out = subprocess.run([sys.executable, "-m", "jaxid", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"jaxid {__version__}"


def test_first_run_says_it_compiles(tmp_path, monkeypatch, capsys):
    """On a terminal the first run of a subcommand with this cache says it compiles; the next does not."""
    import jaxid.cache
    from jaxid.cli import main

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
    np.savetxt(tmp_path / "long.csv", np.column_stack([t, np.sin(t), np.cos(t)]), delimiter=",",
               header="t,q1,q2", comments="", fmt="%.17g")
    env = dict(os.environ, JAXID_CACHE_DIR="off")
    for sig, code, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
        out = tmp_path / f"out{code}.csv"
        # As from a terminal: SIGINT at its default (a pytest-xdist worker ignores it, and a child
        # inherits an ignored SIGINT, which Python then leaves ignored).
        p = subprocess.Popen([sys.executable, "-m", "jaxid", "excite", "--robot", "planar2", "--steps", "100000",
                              "-o", str(out)], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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
