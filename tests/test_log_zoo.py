"""The log zoo's slim version (``benchmarks/log_zoo.py``): logs as robots write them, read and
identified at the defaults through the commands' library functions."""

import importlib.util
import sys
from pathlib import Path

import pytest

ZOO = Path(__file__).resolve().parents[1] / "benchmarks" / "log_zoo.py"


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("log_zoo", ZOO)
    module = importlib.util.module_from_spec(spec)
    sys.modules["log_zoo"] = module
    spec.loader.exec_module(module)
    module.QUICK = dict(starts=1, steps=5)  # any exciting trajectory will do here
    return module, tmp_path_factory.mktemp("zoo")


@pytest.mark.parametrize("style", ["plotjuggler500", "rosbag_mcap250", "motor_coupled1k"])
def test_a_log_as_a_robot_writes_it_identifies_at_the_defaults(zoo, style):
    """Shuffled named joints and Unix stamps (PlotJuggler), a JointState MCAP bag, a motor-side log
    with a coupled wrist: each is read at the defaults and fitted within 1.2 x the held-out error
    of the best cutoff of a grid, on a 3-joint arm."""
    module, work = zoo
    row = module.case("planar3", style, work, quick=True, grid=(2.0, 10.0))
    assert row["verdict"] == "ok", row
    assert row["default"] < 5.0, row  # % of the held-out torque: the noise's level, not a permuted fit
