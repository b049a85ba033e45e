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
    _traj(tmp_path / "traj.csv")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    run = _simulate(tmp_path, blocker / "cache")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("warning: the compilation cache folder") == 1 and "without the cache" in run.stderr


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
