"""The end-to-end experiment of ``jaxid demo`` on a tiny problem (planar 2-link arm)."""
import json
import os

import numpy as np
import pytest

from jaxid import pipeline


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline")
    cfg = pipeline.Config(robot="planar2", harmonics=3, base_frequency=0.1, n_starts=1, steps=5, fs=100.0,
                          out_dir=str(out), progress=False)
    return pipeline.run(cfg, log=lambda *a: None), out


def test_identifies_the_simulated_robot(result):
    res, _ = result
    assert len(res.names) == 10  # 6 rigid-body base parameters + fv, fc on both joints
    # WLS std is honest: every estimate lies within 4 standard deviations of the truth.
    z = np.abs(res.estimate - res.truth) / res.std
    assert z.max() < 4, dict(zip(res.names, z))
    # Prediction on the held-out trajectory against the noise-free torque: the demo's target.
    assert np.all(np.asarray(res.validation_true["nrmse"]["per_joint"]) < 1.0)
    # Against the measured torque the noise floor dominates, so the error is larger.
    assert np.all(np.asarray(res.validation["nrmse"]["per_joint"])
                  > np.asarray(res.validation_true["nrmse"]["per_joint"]))


def test_writes_report_json_and_figures(result):
    res, out = result
    for f in ("report.md", "result.json", "torque.png", "parameters.png", "singular_values.png"):
        assert os.path.getsize(out / f) > 0, f
    md = (out / "report.md").read_text()
    assert "## Base parameters" in md and "![torque.png](torque.png)" in md and "mx1 + m2" in md
    doc = json.loads((out / "result.json").read_text())
    np.testing.assert_allclose(doc["base_parameters"]["estimate"], res.estimate)
    assert doc["base_parameters"]["names"] == list(res.names)


def test_unknown_robot_is_rejected():
    with pytest.raises(ValueError, match="unknown built-in robot"):
        pipeline.run(pipeline.Config(robot="ur6", out_dir=None, progress=False), log=lambda *a: None)
