"""params.json round trips, torque prediction from base parameters, URDF export, rejected files."""

import json
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxid
from jaxid import data, results, simulation
from jaxid.results import ParamsError


@pytest.fixture(scope="module")
def problem():
    """A perturbed planar 2R arm with friction, exact torques on random states, and its fit."""
    robot = jaxid.models.planar(2).with_joint_terms(("fv", "fc", "offset"))
    true = simulation.perturb(robot, jax.random.PRNGKey(0), 0.3)
    rng = np.random.default_rng(0)
    # 200 samples, the size of base_parameters' random states: the regressor compiles once.
    q, qd, qdd = (rng.normal(size=(200, 2)) for _ in range(3))
    tau = np.asarray(jaxid.rnea(true, q, qd, qdd))
    base = jaxid.base_parameters(robot)
    W = np.asarray(jaxid.regressor(robot, q, qd, qdd)).reshape(-1, len(robot.parameter_names()))
    fit = jaxid.identify(base.reduce(W), tau.reshape(-1), method="ols", n_joints=2, names=list(base.names))
    desc = results.model_description(robot, builtin="planar2")
    params = results.from_fit(desc, robot.parameter_names(), base, fit, n_samples=200, sources=["x.csv"])
    ds = data.from_arrays(np.arange(200) * 0.01, q, tau, qd, qdd)
    return robot, true, base, params, ds


def test_round_trip(problem, tmp_path):
    robot, _, base, params, _ = problem
    path = results.save_params(tmp_path / "p.json", params)
    back = results.load_params(path)
    assert back.parameter_names == params.parameter_names == robot.parameter_names()
    assert back.base.names == base.names and back.base.rank == base.rank
    for a, b in (
        (back.theta, params.theta),
        (back.cov, params.cov),
        (back.base.K, base.K),
        (back.base.indices, base.indices),
        (back.base.dependent, base.dependent),
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert back.model == params.model and back.fit == params.fit and back.standard is None
    doc = json.loads(path.read_text())
    # The name -> value map that 'jaxid payload' reads, and rel std as printed.
    assert doc["parameters"] == dict(zip(base.names, np.asarray(params.theta).tolist()))
    np.testing.assert_allclose(doc["rel_std_percent"], np.asarray(params.rel_std), rtol=1e-12)
    # The model rebuilds from its description.
    model = results.model_from_description(back.model)
    assert model.parameter_names() == robot.parameter_names() and model.coulomb_eps == robot.coulomb_eps


def test_predict_recovers_the_true_torques(problem):
    robot, true, base, params, ds = problem
    # Exact data: the base estimate is the true robot's base parameters, and predicts its torques.
    np.testing.assert_allclose(
        np.asarray(params.theta), np.asarray(base.to_base(true.parameter_vector())), rtol=1e-8, atol=1e-10
    )
    pred = np.asarray(results.predict(robot, params, ds))
    np.testing.assert_allclose(pred, np.asarray(ds.tau), atol=1e-9)
    W = np.asarray(jaxid.regressor(robot, ds.q, ds.qd, ds.qdd))[..., np.asarray(base.indices)]
    np.testing.assert_allclose(pred, W @ np.asarray(params.theta), atol=1e-10)


def test_predict_rejects_another_model(problem):
    _, _, _, params, ds = problem
    with pytest.raises(ValueError, match=r"identified for a model with 26 parameters.*differ in"):
        results.predict(jaxid.models.planar(2), params, ds)
    import dataclasses

    other = dataclasses.replace(jaxid.models.planar(2).with_joint_terms(("fv", "fc", "offset")), coulomb_eps=0.1)
    with pytest.raises(ValueError, match="coulomb_eps"):
        results.predict(other, params, ds)
    with pytest.raises(ValueError, match="no velocities"):
        results.predict(problem[0], params, data.Dataset(ds.t, ds.q, ds.tau, source="d.csv"))


def test_urdf_of_consistent_parameters_reproduces_the_torques(problem, tmp_path):
    robot, true, base, params, ds = problem
    # Lift with the true robot as the prior: consistent, so a URDF can be written.
    theta, ok = results.consistent_standard(robot, params, nominal=true.parameter_vector())
    assert ok
    np.testing.assert_allclose(np.asarray(base.to_base(theta)), np.asarray(params.theta), atol=1e-10)
    with pytest.raises(ValueError, match="base parameters only"):
        results.write_model(robot, params, tmp_path / "a.urdf")
    path = results.write_model(robot, theta, tmp_path / "a.urdf")
    # URDF has no gravity element; the planar arm moves in a vertical x-y plane.
    back = jaxid.Robot.from_urdf(path, gravity=robot.gravity).with_joint_terms(robot.joint_terms, true.joint_params)
    rigid = np.asarray(jaxid.rnea(back, ds.q, ds.qd, ds.qdd))
    np.testing.assert_allclose(rigid, np.asarray(ds.tau), atol=1e-9)
    # The planar arm's nominal rods are not strictly consistent: no URDF from that lift.
    assert not results.consistent_standard(robot, params)[1]


def _write(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def _mutations(doc):
    b = len(doc["estimate"])
    yield "missing", None, "no such file"
    yield "text", "{not json", r"not valid JSON \(line 1"
    yield "format", {**doc, "format": "other"}, "not a jaxid params file"
    yield "version", {**doc, "version": 9}, "this jaxid reads versions 1 and 2"
    yield "record", {**doc, "screening": [1]}, "field 'screening' must be an object or null"
    yield "record fields", {**doc, "physics": {"consistent": True}}, "field 'physics': "
    yield "no estimate", {k: v for k, v in doc.items() if k != "estimate"}, "missing field 'estimate'"
    yield "no K", {**doc, "base": {k: v for k, v in doc["base"].items() if k != "K"}}, "missing field 'base.K'"
    yield "short estimate", {**doc, "estimate": doc["estimate"][:-1]}, rf"'estimate' .*shape \({b},\)"
    yield "text in cov", {**doc, "covariance": [["x"] * b] * b}, "'covariance' must be an array of numbers"
    yield "asymmetric", {**doc, "covariance": (np.eye(b) + np.triu(np.ones((b, b)), 1)).tolist()}, "not symmetric"
    yield "indices", {**doc, "base": {**doc["base"], "indices": [0] * b}}, "each of the 26 parameter indices"
    yield "model", {**doc, "model": {**doc["model"], "urdf": "a.urdf"}}, "at most one of 'builtin' and 'urdf'"
    yield "terms", {**doc, "model": {**doc["model"], "joint_terms": ["ia"]}}, "not in 'parameter_names'"
    yield "eps", {**doc, "model": {**doc["model"], "coulomb_eps": -1}}, "coulomb_eps' must be a number > 0"
    yield "nan", {**doc, "estimate": [None] * b}, "'estimate' must be an array of numbers"


def test_each_kind_of_bad_file_is_rejected(problem, tmp_path):
    doc = results.to_json(problem[3])
    for label, bad, message in _mutations(doc):
        path = tmp_path / "absent.json" if bad is None else _write(tmp_path, bad, f"{label}.json")
        with pytest.raises(ParamsError, match=message):
            results.load_params(path)
        try:
            results.load_params(path)
        except ParamsError as e:
            assert str(e).startswith(str(path)) and "\n" not in str(e), label


#: Torques (10, 2) N m that today's (version 1) code predicted from tests/data/params_v1.json at the
#: states of _v1_states (written by a consistent planar2 identification before the typed records).
V1_TORQUES = [
    [15.624709360018041, 3.3290848035676284],
    [12.216286566481804, 0.5186805457395618],
    [10.585118737860238, 0.8000575911449764],
    [13.964242851639778, 3.6536448251670612],
    [15.72625725689967, 4.270662854322073],
    [11.473084272778868, 0.17691890765716772],
    [7.428321818202792, -1.4233528961028536],
    [11.30332348089454, 1.680912915838125],
    [18.292039725982942, 5.76957361527889],
    [15.757211463538981, 3.4113964042694143],
]
V1_FILE = Path(__file__).parent / "data" / "params_v1.json"


def _v1_states():
    k = np.arange(10.0)[:, None]
    q, qd, qdd = np.sin(0.7 * k + [0.0, 1.0]), np.cos(0.3 * k + [0.5, 0.2]), np.sin(1.1 * k - [0.4, 0.9])
    return data.from_arrays(np.arange(10) * 0.01, q, np.zeros((10, 2)), qd, qdd)


def test_version_1_files_load_and_predict_as_before(tmp_path):
    params = results.load_params(V1_FILE)
    model = results.model_from_description(params.model)
    np.testing.assert_allclose(np.asarray(results.predict(model, params, _v1_states())), V1_TORQUES, rtol=1e-12)
    # Today's readers of the fit dict see exactly the file's fit.
    assert params.fit == json.loads(V1_FILE.read_text())["fit"]
    # Written again (the current version), it reads back to the same parameters and records.
    back = results.load_params(results.save_params(tmp_path / "p.json", params))
    assert back.fit == params.fit and back.standard is not None
    np.testing.assert_array_equal(np.asarray(back.theta), np.asarray(params.theta))
