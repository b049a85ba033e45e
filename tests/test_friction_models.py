"""Static joint friction: closed-form models vs the Robot's joint basis, identification of the
Stribeck and asymmetric terms, the Stribeck velocity by separable least squares, persistence."""

import argparse
import dataclasses

import equinox as eqx
import jax
import numpy as np
import pytest
from hypothesis import given
from strategies import bounded, states

import jaxid
from jaxid import results, simulation
from jaxid.cli import UserError
from jaxid.cli.common import add_model_arguments, model_from_args
from jaxid.friction import models as fm
from jaxid.identification.stribeck import fit_stribeck_velocity

EPS = 1e-3
VS = 0.03  # true Stribeck velocity, rad/s
TERMS = ("fv", "fc", "fs", "fva", "offset")
VALUES = np.array([[0.3, 0.8, 0.4, 0.05, 0.1], [0.2, 0.5, 0.3, -0.04, -0.05]])


@pytest.fixture(scope="module")
def true_robot():
    return dataclasses.replace(jaxid.models.planar(2).with_joint_terms(TERMS, VALUES), stribeck_vs=VS)


@pytest.fixture(scope="module")
def slow(true_robot):
    """A 10 s, 200 Hz two-sine trajectory crossing zero velocity at 0.3-1.5 rad/s^2, so that
    about 10 % of the samples have |qd| < 0.1 rad/s; exact torques of the true robot."""
    t = np.linspace(0.0, 10.0, 2001)[:, None]
    w = 2 * np.pi * 0.2 * np.array([1.0, 2.0])
    a, b, phase = np.array([0.4, 0.3]), np.array([0.1, 0.1]), np.array([1.0, 0.5])
    # q_j = a_j sin(w_j t + phase_j) + b_j sin(3 w_j t)
    q = a * np.sin(w * t + phase) + b * np.sin(3 * w * t)
    qd = a * w * np.cos(w * t + phase) + 3 * b * w * np.cos(3 * w * t)
    qdd = -a * w**2 * np.sin(w * t + phase) - 9 * b * w**2 * np.sin(3 * w * t)
    return q, qd, qdd, np.asarray(jaxid.rnea(true_robot, q, qd, qdd))


def test_basis_columns_are_the_closed_form_models():
    qd = np.concatenate([np.linspace(-1, 1, 201), np.linspace(-5 * EPS, 5 * EPS, 21)])
    qdd = np.sin(qd)
    cols = dict(
        zip(fm.JOINT_TERMS, np.moveaxis(np.asarray(fm.joint_basis(fm.JOINT_TERMS, qd - 0.5, qd, qdd, EPS, VS)), -1, 0))
    )
    np.testing.assert_allclose(cols["ia"], qdd)
    np.testing.assert_allclose(cols["fv"], fm.viscous(qd, 1.0))
    np.testing.assert_allclose(cols["fc"], fm.coulomb(qd, 1.0, EPS))
    np.testing.assert_allclose(cols["offset"], 1.0)
    np.testing.assert_allclose(cols["ks"], qd - 0.5)
    # Stribeck (delta = 2) = fc [fc column] + (fs - fc) [fs column], everywhere.
    fc, fs = 0.8, 1.3
    np.testing.assert_allclose(
        fm.stribeck(qd, fc, fs, VS, eps=EPS), fc * cols["fc"] + (fs - fc) * cols["fs"], rtol=1e-12, atol=1e-15
    )
    # ... which is +-fs just off zero velocity (eps << |qd| << vs) and tends to fc well above vs.
    vs = 0.5
    np.testing.assert_allclose(
        fm.stribeck(np.array([20 * EPS, -20 * EPS, 10 * vs]), fc, fs, vs, eps=EPS),
        [fs, -fs, fc],
        rtol=0,
        atol=0.01 * (fs - fc),
    )
    # Tustin's delta = 1 is another curve with the same end points.
    assert abs(float(fm.stribeck(VS, fc, fs, VS, delta=1.0, eps=EPS)) - (fc + (fs - fc) / np.e)) < 1e-9


def test_asymmetric_friction_is_fv_fva_fc_offset():
    qd = np.linspace(-1, 1, 401)
    fc_pos, fc_neg, fv_pos, fv_neg = 0.9, 0.6, 0.35, 0.25
    terms = fm.asymmetric_terms(fc_pos, fc_neg, fv_pos, fv_neg)
    np.testing.assert_allclose([terms["fv"] + terms["fva"], terms["fv"] - terms["fva"]], [fv_pos, fv_neg])
    back = fm.asymmetric_from_terms(**terms)
    np.testing.assert_allclose(
        [back[k] for k in ("fc_pos", "fc_neg", "fv_pos", "fv_neg")], [fc_pos, fc_neg, fv_pos, fv_neg]
    )
    # The model is exactly the basis with these values (asymmetric Coulomb = fc + offset) ...
    names = ("fv", "fva", "fc", "offset")
    basis = np.asarray(fm.joint_basis(names, None, qd, None, EPS, VS)) @ np.array([terms[k] for k in names])
    tau = np.asarray(fm.asymmetric(qd, fc_pos, fc_neg, fv_pos, fv_neg, EPS))
    np.testing.assert_allclose(tau, basis, rtol=1e-12, atol=1e-14)
    # ... and the piecewise closed form away from zero velocity.
    away = np.abs(qd) > 20 * EPS
    piecewise = np.where(qd > 0, fc_pos + fv_pos * qd, -fc_neg + fv_neg * qd)
    np.testing.assert_allclose(tau[away], piecewise[away], rtol=1e-12)


@eqx.filter_jit
def _jacobian_and_joint_torque(robot, q, qd, qdd):
    """jax.jacfwd of the torque in theta, and the joint torque, at a batch of states."""
    J = jax.vmap(jax.jacfwd(robot.torque), (None, 0, 0, 0))(robot.parameter_vector(), q, qd, qdd)
    return J, jax.vmap(robot.joint_torque, (None, 0, 0, 0))(robot.joint_params, q, qd, qdd)


def test_robot_joint_terms_order(true_robot):
    from jaxid.model.robot import JOINT_TERMS

    assert JOINT_TERMS == fm.JOINT_TERMS == ("ia", "fv", "fc", "fs", "fva", "offset", "ks")
    assert true_robot.parameter_names()[20:25] == ("fv1", "fc1", "fs1", "fva1", "offset1")
    with pytest.raises(ValueError, match="stribeck_vs"):
        dataclasses.replace(true_robot, stribeck_vs=0.0)


@given(state=states((6, 2)), stribeck=bounded((2,), -0.1, 0.1))
def test_robot_joint_terms_regressor(true_robot, state, stribeck):
    q, qd, qdd = state
    qd = np.concatenate([stribeck[None], qd[1:]])  # one sample in the Stribeck region
    theta = true_robot.parameter_vector()
    Y = np.asarray(jaxid.regressor(true_robot, q, qd, qdd))
    tau = np.asarray(jaxid.rnea(true_robot, q, qd, qdd))
    np.testing.assert_allclose(Y @ np.asarray(theta), tau, rtol=1e-12, atol=1e-12)
    J, joint = _jacobian_and_joint_torque(true_robot, q, qd, qdd)
    np.testing.assert_allclose(Y, J, rtol=1e-12, atol=1e-12)
    # The joint torque is the closed-form friction: viscous + asymmetric + Stribeck + offset.
    fv, fc, fs, fva, off = VALUES.T
    expect = fm.asymmetric(qd, fc, fc, fv + fva, fv - fva, EPS) + off + fm.stribeck(qd, 0.0, fs, VS, eps=EPS)
    np.testing.assert_allclose(np.asarray(joint), expect, rtol=1e-12, atol=1e-14)


def test_noiseless_recovery_of_fs_and_fva(true_robot, slow):
    q, qd, qdd, tau = slow
    base = jaxid.base_parameters(true_robot)
    W = np.asarray(jaxid.regressor(true_robot, q, qd, qdd)).reshape(-1, 30)
    fit = jaxid.identify(base.reduce(W), tau.reshape(-1), method="ols", n_joints=2, names=list(base.names))
    est = dict(zip(base.names, np.asarray(fit.theta)))
    for j in range(2):
        for k, term in enumerate(TERMS):
            assert abs(est[f"{term}{j + 1}"] - VALUES[j, k]) < 1e-8, (term, j)


def test_fit_stribeck_velocity_recovers_vs(true_robot, slow):
    nominal = dataclasses.replace(true_robot, stribeck_vs=0.05)
    vs = fit_stribeck_velocity(nominal, *slow, lo=1e-3, hi=1.0)
    assert abs(vs / VS - 1) < 1e-6
    with pytest.raises(ValueError, match="Stribeck term"):
        fit_stribeck_velocity(jaxid.models.planar(2).with_joint_terms(("fc",)), *slow)
    with pytest.raises(ValueError, match="tau must have shape"):
        fit_stribeck_velocity(nominal, *slow[:3], slow[3][:, :1])
    fast = np.abs(slow[1]).min(axis=1) > 0.5
    with pytest.raises(ValueError, match="passes slowly through zero velocity"):
        fit_stribeck_velocity(nominal, *(x[fast] for x in slow), lo=1e-3, hi=0.1)


def test_fs_is_unidentifiable_without_slow_samples(true_robot, slow):
    # Keep only samples where every joint moves faster than 5 vs: exp(-25) ~ 1e-11 leaves the
    # Stribeck columns at rounding level, while the structural base parameters still list fs.
    keep = np.abs(slow[1]).min(axis=1) >= 5 * VS
    q, qd, qdd, tau = (x[keep] for x in slow)
    base = jaxid.base_parameters(true_robot)
    assert {"fs1", "fs2"} <= set(base.names)
    W = np.asarray(jaxid.regressor(true_robot, q, qd, qdd)).reshape(-1, 30)
    data_base = jaxid.base_from_regressor(W, true_robot.parameter_names())
    assert not {"fs1", "fs2"} & set(data_base.names)
    with pytest.raises(ValueError, match=r"fs1 \(zero column\); fs2 \(zero column\)"):
        jaxid.identify(base.reduce(W), tau.reshape(-1), method="ols", n_joints=2, names=list(base.names))


def test_params_file_keeps_stribeck_vs(true_robot, slow, tmp_path):
    q, qd, qdd, tau = slow
    robot = dataclasses.replace(true_robot.with_joint_terms(TERMS), stribeck_vs=VS)
    base = jaxid.base_parameters(robot)
    W = np.asarray(jaxid.regressor(robot, q[:200], qd[:200], qdd[:200])).reshape(-1, 30)
    fit = jaxid.identify(base.reduce(W), tau[:200].reshape(-1), method="ols", n_joints=2, names=list(base.names))
    desc = results.model_description(robot, builtin="planar2")
    params = results.from_fit(desc, robot.parameter_names(), base, fit, n_samples=200)
    back = results.load_params(results.save_params(tmp_path / "p.json", params))
    assert back.model["stribeck_vs"] == VS
    model = results.model_from_description(back.model)
    assert model.stribeck_vs == VS and model.joint_terms == TERMS
    results.check_model(model, back)
    with pytest.raises(ValueError, match="stribeck_vs = 0.03 rad/s but the model has 0.05"):
        results.check_model(dataclasses.replace(model, stribeck_vs=0.05), back)
    bad = tmp_path / "bad.json"
    bad.write_text((tmp_path / "p.json").read_text().replace('"stribeck_vs": 0.03', '"stribeck_vs": 0'))
    with pytest.raises(results.ParamsError, match="model.stribeck_vs' must be a number > 0"):
        results.load_params(bad)


def test_cli_stribeck_vs_option():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    robot, desc = model_from_args(
        p.parse_args(["--robot", "planar2", "--joint-terms", "fc,fs", "--stribeck-vs", "0.02"])
    )
    assert robot.stribeck_vs == desc["stribeck_vs"] == 0.02
    with pytest.raises(UserError, match="must be a finite velocity > 0"):
        model_from_args(p.parse_args(["--robot", "planar2", "--joint-terms", "fc,fs", "--stribeck-vs", "0"]))
    with pytest.raises(UserError, match="add fs to --joint-terms"):
        model_from_args(p.parse_args(["--robot", "planar2", "--stribeck-vs", "0.02"]))


def test_perturb_draws_the_new_terms_and_keeps_the_old_draws():
    robot = jaxid.models.planar(2)
    key = jax.random.PRNGKey(3)
    old = simulation.perturb(robot, key, friction=("fv", "fc", "offset"))
    new = simulation.perturb(robot, key, friction=("fv", "fc", "offset", "fs", "fva"))
    assert new.joint_terms == ("fv", "fc", "fs", "fva", "offset")
    values = dict(zip(new.joint_terms, np.asarray(new.joint_params).T))
    np.testing.assert_array_equal(np.asarray(old.joint_params), np.stack([values[t] for t in old.joint_terms], 1))
    T = simulation.torque_scale(robot)
    for term in ("fs", "fva"):
        lo, hi = simulation.FRICTION_RANGES[term]
        assert np.all((values[term] >= lo * T) & (values[term] <= hi * T))
    assert np.all(values["fv"] - np.abs(values["fva"]) > 0)  # dissipative in both directions


def _fit_base(robot, q, qd, qdd, tau):
    """OLS base parameters {name: value} of ``robot``'s model from exact torques tau (N, 1)."""
    base = jaxid.base_parameters(robot)
    W = np.asarray(jaxid.regressor(robot, q, qd, qdd)).reshape(-1, len(robot.parameter_names()))
    fit = jaxid.identify(base.reduce(W), tau.reshape(-1), method="ols", n_joints=robot.n, names=list(base.names))
    return dict(zip(base.names, np.asarray(fit.theta)))


def test_joint_stiffness_is_a_negative_inertia_at_one_frequency():
    """A joint spring ks q on a trajectory q = q0 + a sin(w t) is exactly the inertia term
    -ks/w^2 qdd plus the offset ks q0 (qdd = -w^2 (q - q0)): a model without ks fits it exactly
    with Izz lowered by ks/w^2, and with a second frequency ks and Izz are recovered."""
    ks, w, q0 = 2.0, 1.3, 0.2
    true = jaxid.models.planar(1).with_joint_terms(("fv", "fc", "offset", "ks"), [[0.3, 0.5, 0.1, ks]])
    t = np.linspace(0.0, 10.0, 401)[:, None]
    for second in (0.0, 0.3):  # amplitude of a sine at 2.7 w
        q = q0 + 0.8 * np.sin(w * t) + second * np.sin(2.7 * w * t)
        qd = 0.8 * w * np.cos(w * t) + second * 2.7 * w * np.cos(2.7 * w * t)
        qdd = -0.8 * w**2 * np.sin(w * t) - second * (2.7 * w) ** 2 * np.sin(2.7 * w * t)
        tau = np.asarray(jaxid.rnea(true, q, qd, qdd))
        izz = float(true.inertial[0, 9])
        if second == 0.0:
            est = _fit_base(true.with_joint_terms(("fv", "fc", "offset")), q, qd, qdd, tau)
            np.testing.assert_allclose(
                [est["Izz1"], est["offset1"], est["fv1"]], [izz - ks / w**2, 0.1 + ks * q0, 0.3], rtol=1e-8
            )
        else:
            est = _fit_base(true, q, qd, qdd, tau)
            np.testing.assert_allclose([est["ks1"], est["Izz1"], est["offset1"]], [ks, izz, 0.1], rtol=1e-8)
