"""The direction of gravity identified from torques: the regressor's linearity in g, recovery
of a known tilt, the model carrying it through params.json and cross-validation."""

import dataclasses

import numpy as np
import pytest
from test_consistent import arm3

import jaxid
from jaxid import results, workflow
from jaxid.data import Dataset
from jaxid.identification.gravity import fit_gravity, gravity_regressors

N = 100
TILT = np.radians(2.0)


def tilted(g, angle, axis):
    """g rotated by angle (rad) about the unit axis (Rodrigues)."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return g * np.cos(angle) + np.cross(k, g) * np.sin(angle) + k * (k @ g) * (1 - np.cos(angle))


@pytest.fixture(scope="module")
def runs():
    """Three runs of arm3 on a base tilted by 2 degrees, torques with 1e-3 N m noise."""
    robot = arm3()
    truth = dataclasses.replace(robot, gravity=tilted(np.asarray(robot.gravity), TILT, [1.0, 0.5, 0.0]))
    rng = np.random.default_rng(5)
    out = []
    for i in range(3):
        q, qd, qdd = (rng.normal(size=(N, 3)) for _ in range(3))
        tau = np.asarray(jaxid.rnea(truth, q, qd, qdd)) + 1e-3 * rng.normal(size=(N, 3))
        out.append(Dataset(t=np.arange(N) * 0.01, q=q, tau=tau, qd=qd, qdd=qdd, source=f"run{i + 1}"))
    return robot, truth, out


def test_regressor_is_linear_in_gravity(runs):
    robot, truth, data = runs
    d = data[0]
    Y0, G = gravity_regressors(robot, d.q, d.qd, d.qdd)
    Y = np.asarray(jaxid.regressor(truth, d.q, d.qd, d.qdd))
    assert np.allclose(Y0 + np.einsum("a,a...->...", np.asarray(truth.gravity), G), Y, atol=1e-12)


def test_recovers_a_tilted_base(runs):
    robot, truth, data = runs
    stacked = [np.concatenate([np.asarray(getattr(d, k)) for d in data]) for k in ("q", "qd", "qdd", "tau")]
    fit = fit_gravity(robot, *stacked)
    g, g_true = fit.gravity, np.asarray(truth.gravity)
    angle = np.arccos(np.clip(g @ g_true / (np.linalg.norm(g) * np.linalg.norm(g_true)), -1, 1))
    assert fit.converged and angle < 1e-4  # 1e-3 N m of noise on ~10 N m gravity torques
    assert abs(np.linalg.norm(g) - 9.81) < 1e-12 and abs(fit.tilt_deg - 2.0) < 1e-2
    assert fit.cost < fit.cost_nominal
    # On data of a level base it finds no tilt beyond the noise.
    level = np.asarray(jaxid.rnea(robot, *stacked[:3])) + stacked[3] - np.asarray(jaxid.rnea(truth, *stacked[:3]))
    assert fit_gravity(robot, *stacked[:3], level).tilt_deg < 1e-2
    with pytest.raises(ValueError, match="tau must have shape"):
        fit_gravity(robot, *stacked[:3], stacked[3][:, :2])
    with pytest.raises(ValueError, match="no gravity"):
        fit_gravity(dataclasses.replace(robot, gravity=np.zeros(3)), *stacked)


def test_identify_and_crossval_fit_gravity(runs, tmp_path):
    robot, truth, data = runs
    prepared = workflow.Prepared(tuple(data), tuple(dict(source=d.source, parallel=None) for d in data))
    params = workflow.identify_experiment(robot, prepared, method="ols", gravity="fit")
    assert params.gravity_fit.tilt_deg == pytest.approx(2.0, abs=1e-2)
    back = results.load_params(results.save_params(tmp_path / "p.json", params))
    # The file rebuilds the model under the identified gravity (arm3 is built in code, so its
    # builder takes the place of the file's robot).
    rebuilt = results.build_model(builtin="planar2", gravity=back.model["gravity"])
    assert np.allclose(rebuilt.gravity, params.model["gravity"])
    rebuilt = dataclasses.replace(robot, gravity=np.asarray(back.model["gravity"]))
    assert results.model_mismatches(rebuilt, back) == []
    assert results.model_mismatches(robot, back)  # the level model is another model
    cv = workflow.crossval(robot, prepared, weights=(1e-3,), gravity="fit")
    for r in cv["rotations"]:
        assert r["gravity"]["tilt_deg"] == pytest.approx(2.0, abs=1e-2)  # from the training runs alone
        assert r["rows"][1]["converged"]
    with pytest.raises(workflow.WorkflowError, match="gravity must be None or 'fit'"):
        workflow.crossval(robot, prepared, gravity="level")
