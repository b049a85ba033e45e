"""The README runs as written, from a clone, in the order shown: its Python examples and every
command of its command-line blocks (at small sizes: fewer optimiser steps), so that the first
thing a user tries cannot drift from the code."""

import json
import os
import pathlib
import shlex
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: Appended to commands so the walk-through runs in CI time; argparse keeps the last value. The
#: demo runs the commands of the walk-through that follows it, with the same sizes, so the
#: commands after it reuse its compiled code (the session's persistent cache, tests/conftest.py).
SMALL = {
    "excite": ["--starts", "1", "--steps", "3", "--harmonics", "3"],
    "demo": ["--starts", "1", "--steps", "3", "--harmonics", "3"],
}
#: ``excite --payload`` at 0 steps (its best random start): its optimiser, a program of its own
#: that compiles for ~20 s, is covered by tests/test_optimize.py; the walk-through still runs the
#: command, its limits check with the load and the files the payload steps read.
PAYLOAD_EXCITE = ["--steps", "0"]


def _blocks(kind):
    """The README's fenced code blocks of info string ``kind`` ('' for plain blocks), in order."""
    blocks, current, info = [], None, None
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            if current is None:
                current, info = [], line[3:].strip()
            else:
                if info == kind:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _commands():
    """Every command line of the README's plain code blocks, with continuation lines joined."""
    out = []
    for block in _blocks(""):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(("jaxid ", "python ")):
                out.append(shlex.split(line))
    return out


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A working folder that sees the repository's examples/ as a clone would."""
    d = tmp_path_factory.mktemp("readme")
    (d / "examples").symlink_to(ROOT / "examples")
    return d


def test_readme_starts_with_the_two_commands():
    first = _blocks("")[0].split()
    assert first[:2] == ["make", "demo"] and "make" in first[2:] and "test" in first[2:]
    assert "../shared" not in README.read_text(), "the README must only point inside the repository"
    assert (ROOT / "docs" / "design.md").is_file()


def test_readme_example_runs():
    code = _blocks("python")[0]
    ns = {}
    exec(compile(code, str(README), "exec"), ns)
    assert ns["Y"].shape == (500, 6, 72) and ns["base"].rank == 48
    # 1 % torque noise, 48 parameters from 3000 equations: the fitted part of the noise leaves a
    # prediction error of about 1 % * sqrt(48 / 3000) = 0.13 % per joint; allow 3x that.
    pred = (ns["base"].reduce(ns["W"]) @ ns["fit"].theta).reshape(-1, 6)
    assert np.all(np.asarray(ns["jaxid"].metrics.nrmse(ns["tau"], pred)) < 0.4)


def test_readme_workflow_example_runs(clone, monkeypatch):
    monkeypatch.chdir(clone)
    ns = {}
    exec(compile(_blocks("python")[1], str(README), "exec"), ns)
    # The held-out KUKA run, normalised by the torque limits: the FloBaRoID authors report 0.18-0.21 %.
    assert ns["val"].runs[0]["nrms_limits"]["overall"] < 0.3
    assert ns["prepared"].choices[0]["derivatives"] == "logged"
    assert (clone / "kuka.json").is_file()


def test_readme_commands_run_in_order(clone, monkeypatch, capsys):
    from jaxid.cli import main

    monkeypatch.chdir(clone)
    commands = _commands()
    ran = []
    for argv in commands:
        if argv[0] == "python":
            subprocess.run([sys.executable, *argv[1:]], check=True, cwd=clone, capture_output=True)
        else:
            payload_excite = PAYLOAD_EXCITE if argv[1] == "excite" and "--payload" in argv else []
            args = argv[1:] + SMALL.get(argv[1], []) + payload_excite + ["--quiet"]
            code = main(args)
            assert code == 0, (argv, capsys.readouterr().err)
        ran.append(argv[1])
    out = capsys.readouterr()
    assert {"demo", "excite", "simulate", "identify", "validate", "payload", "lugre"} <= set(ran)
    demo = json.loads((clone / "jaxid_demo" / "result.json").read_text())
    # Even at 3 optimiser steps the demo identifies the simulated UR5 to well within its target.
    assert demo["worst_nrmse_true_percent"] < 1.0 and len(demo["names"]) == 54
    # The second simulated experiment is on the same robot: validation is at the noise floor.
    # The one warning allowed is the post-fit residual note on the real KUKA runs (a joint the model
    # explains poorly there is a fact of those data, stated by the plausibility check), never one on
    # the simulated runs.
    assert [line for line in out.err.splitlines() if "warning" in line and "kuka_lwr4/measurements_" not in line] == []
    params = json.loads((clone / "params.json").read_text())
    assert params["model"]["builtin"] == "ur5"
    kuka = json.loads((clone / "kuka.json").read_text())
    # The URDF path is stored relative to the params file, and read back from there.
    assert not os.path.isabs(kuka["model"]["urdf"]) and kuka["model"]["urdf_sha256"]
