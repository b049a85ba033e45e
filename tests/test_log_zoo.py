"""The log zoo's slim version (``benchmarks/log_zoo.py``): logs as robots write them, read and
identified at the defaults through the commands' library functions."""

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxid import data

ZOO = Path(__file__).resolve().parents[1] / "benchmarks" / "log_zoo.py"


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("log_zoo", ZOO)
    module = importlib.util.module_from_spec(spec)
    sys.modules["log_zoo"] = module
    spec.loader.exec_module(module)
    work = tmp_path_factory.mktemp("zoo")
    for seed in (0, 1):  # any exciting periodic trajectory will do here: no excitation search
        _trajectory(work / f"planar3_0.1Hz_traj{seed}.csv", seed)
    return module, work


def _trajectory(path, seed, n=3, f0=0.1, harmonics=5, fs=100.0):
    """A finite Fourier series from rest, q_j = sum_k c_jk (1 - cos(2 pi k f0 t)), one period,
    written as ``jaxid excite`` writes its trajectories (t, q, qd, qdd, tau; the sidecar's band)."""
    c = np.random.default_rng(seed).uniform(-0.15, 0.15, (harmonics, n))
    t = np.arange(int(fs / f0) + 1) / fs
    w = 2 * np.pi * f0 * np.arange(1, harmonics + 1)
    q = (1 - np.cos(np.outer(t, w))) @ c
    qd = (np.sin(np.outer(t, w)) * w) @ c
    qdd = (np.cos(np.outer(t, w)) * w**2) @ c
    ds = data.from_arrays(t, q, np.zeros_like(q), qd, qdd)
    data.write(dataclasses.replace(ds, base_frequency=f0, harmonics=harmonics), path)


@pytest.mark.parametrize("style", ["plotjuggler500", "rosbag_mcap250", "motor_coupled1k"])
def test_a_log_as_a_robot_writes_it_identifies_at_the_defaults(zoo, style):
    """Shuffled named joints and Unix stamps (PlotJuggler), a JointState MCAP bag, a motor-side log
    with a coupled wrist: each is read at the defaults and fitted within 1.2 x the held-out error
    of the best cutoff of a grid, on a 3-joint arm."""
    module, work = zoo
    row = module.case("planar3", style, work, quick=True, grid=(2.0, 10.0))
    assert row["verdict"] == "ok", row
    assert row["default"] < 5.0, row  # % of the held-out torque: the noise's level, not a permuted fit
