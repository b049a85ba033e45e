"""Transmissions: motor-side logs (gear ratios, signs, offsets, a coupled wrist) read onto the joints,
joint terms on the motors, identification from a motor-side log, URDF <transmission>, bad input."""

import json
import re

import jax
import numpy as np
import pytest

import jaxid
from jaxid import data, workflow
from jaxid.cli import main
from jaxid.excitation.trajectories import fourier
from jaxid.identification.base import base_parameters
from jaxid.identification.regressor import regressor
from jaxid.model import urdf
from jaxid.model.transmission import Transmission, TransmissionError, joint_side_terms, load

TERMS = ("ia", "fv", "fc", "offset")
RATIO = np.array([120.0, -80.0, 50.0])  # motor turns per joint turn; joint 2 turns against its motor
COUPLING = 0.4  # the wrist: q3 = q_m3 / 50 + 0.4 q_m2 / (-80)


def wrist() -> Transmission:
    """Planar 3R with a coupled wrist: motor 2 also turns joint 3."""
    C = np.eye(3)
    C[2, 1] = COUPLING
    return Transmission.from_ratios(np.abs(RATIO), sign=np.sign(RATIO), offset=[0.0, 0.3, -0.2], coupling=C)


#: Motor-side rotor inertia kg m^2, viscous N m s/rad, Coulomb N m and offset N m, per motor (3, 4):
#: motor magnitudes (a joint-side fv of 1 N m s/rad behind a 1:100 gear is 1e-4 on the motor).
TRUE_MOTOR = np.array(
    [
        [3e-4, 2e-4, 0.020, 0.004],
        [2e-4, 1.5e-4, 0.015, -0.003],
        [1e-4, 1e-4, 0.010, 0.002],
    ]
)


@pytest.fixture(scope="module")
def truth():
    """The true planar 3R, its joint terms on the motors of the coupled wrist."""
    return jaxid.models.planar(3).with_transmission(wrist()).with_joint_terms(TERMS, TRUE_MOTOR)


def test_round_trip_and_power_balance():
    t = wrist()
    rng = np.random.default_rng(0)
    q, v, tau = rng.normal(size=(3, 50, 3))
    np.testing.assert_allclose(t.joint_positions(t.motor_positions(q)), q, atol=1e-12)
    np.testing.assert_allclose(t.joint_velocities(t.motor_velocities(v)), v, atol=1e-12)
    np.testing.assert_allclose(t.joint_torques(t.motor_torques(tau)), tau, atol=1e-12)
    # an ideal gear passes the power through: tau_m . qd_m == tau . qd at every sample
    np.testing.assert_allclose(
        np.sum(t.motor_torques(tau) * t.motor_velocities(v), axis=1), np.sum(tau * v, axis=1), atol=1e-12
    )
    # the coupled row: q3 = q_m3 / 50 + 0.4 q_m2 / (-80) + offset
    qm = t.motor_positions(q)
    np.testing.assert_allclose(q[:, 2], qm[:, 2] / 50 + COUPLING * qm[:, 1] / -80 - 0.2, atol=1e-12)
    # a dataset through a motor log and back
    ts = np.arange(50) * 1e-3
    ds = data.from_arrays(ts, q, tau, v, v)
    back = data.from_arrays(
        ts, *(np.asarray(getattr(data.motor_log(ds, t), s)) for s in ("q", "tau", "qd", "qdd")), transmission=t
    )
    for s in ("q", "qd", "qdd", "tau"):
        np.testing.assert_allclose(np.asarray(getattr(back, s)), np.asarray(getattr(ds, s)), atol=1e-12)
    assert back.motor_side and "motor-side log" in back.notes[-1]


def test_motor_currents_times_gains_then_through_the_gears(tmp_path):
    """--units tau=A --gains: one torque constant per motor (no gear), then tau = R^-T (k_t i)."""
    t = wrist()
    rng = np.random.default_rng(6)
    ts, qm, current = np.arange(40) * 1e-3, rng.normal(size=(40, 3)), rng.normal(size=(40, 3))
    path = tmp_path / "amps.csv"
    np.savetxt(path, np.column_stack([ts, qm, current]), delimiter=",", header="t,q1,q2,q3,tau1,tau2,tau3", comments="")
    gains = [0.5, 0.4, 0.3]
    ds = data.read(path, units={"tau": "A"}, gains=gains, transmission=t, derivatives=None)
    np.testing.assert_allclose(np.asarray(ds.tau), t.joint_torques(current * gains), atol=1e-12)
    np.testing.assert_allclose(np.asarray(ds.q), t.joint_positions(qm), atol=1e-12)
    assert any("gains" in n for n in ds.notes) and "ratio -80" in ds.notes[-1]
    with pytest.raises(data.DatasetError, match="expected a jaxid.model.transmission.Transmission"):
        data.read(path, transmission="gears.json")


@jax.jit  # one program for the torques, their Jacobian and the mass matrix (eager, each op compiles)
def _torque_jacobian_mass(robot, q, qd, qdd):
    theta = robot.parameter_vector()
    tau = jax.vmap(robot.torque, in_axes=(None, 0, 0, 0))(theta, q, qd, qdd)
    return tau, jax.jacfwd(robot.torque)(theta, q[0], qd[0], qdd[0]), robot.mass_matrix(theta, q[0])


def test_regressor_is_the_torque_with_motor_terms(truth):
    rng = np.random.default_rng(1)
    q, qd, qdd = rng.normal(size=(3, 6, 3))
    assert truth.parameter_names()[-4:] == ("ia_m3", "fv_m3", "fc_m3", "offset_m3")
    Y = np.asarray(regressor(truth, q, qd, qdd))
    tau, jac, M = (np.asarray(x) for x in _torque_jacobian_mass(truth, q, qd, qdd))
    np.testing.assert_allclose(Y @ np.asarray(truth.parameter_vector()), tau, atol=1e-12)
    np.testing.assert_allclose(Y[0], jac, atol=1e-12)  # the written-out columns are the Jacobian
    # the joint terms written out: R^-T (ia qdd_m + fv qd_m + fc sgn(qd_m) + offset) at the motors' motion
    t = truth.transmission
    qdm, qddm = t.motor_velocities(qd), t.motor_velocities(qdd)
    a, v, c, o = TRUE_MOTOR.T
    motor = a * qddm + v * qdm + c * np.tanh(qdm / truth.coulomb_eps) + o
    rigid = truth.with_transmission(None).with_joint_terms(())
    tau_rigid, _, M_rigid = (np.asarray(x) for x in _torque_jacobian_mass(rigid, q, qd, qdd))
    np.testing.assert_allclose(tau, tau_rigid + t.joint_torques(motor), atol=1e-12)
    # the rotor inertia R^-T Ia R^-1 is part of the mass matrix, symmetric
    Rinv = np.linalg.inv(np.asarray(t.matrix))
    np.testing.assert_allclose(M - M_rigid, Rinv.T @ np.diag(a) @ Rinv, atol=1e-12)


def test_diagonal_transmission_is_joint_side_scaled():
    """Without coupling, motor-side terms are the joint-side ones scaled (joint_side_terms)."""
    t = Transmission.from_ratios(RATIO)
    motor = jaxid.models.planar(3).with_transmission(t).with_joint_terms(TERMS, TRUE_MOTOR)
    joint_values = joint_side_terms(t, TERMS, TRUE_MOTOR)
    joint = jaxid.models.planar(3).with_joint_terms(TERMS, np.stack([joint_values[k] for k in TERMS], axis=1))
    # fc's smooth sign acts at eps on the motor, eps |d| on the joint: compare away from rest
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.normal(size=(3, 5, 3))
    qd = qd + np.sign(qd)
    np.testing.assert_allclose(
        np.asarray(_torque_jacobian_mass(motor, q, qd, qdd)[0]),
        np.asarray(_torque_jacobian_mass(joint, q, qd, qdd)[0]),
        atol=1e-9,
    )


def test_base_parameters_keep_their_count(truth):
    """R is invertible, so the motor-side columns span what the joint-side ones do: the same number
    of base parameters (the coupling adds no parameter and loses none)."""
    on_motors = base_parameters(truth)
    on_joints = base_parameters(truth.with_transmission(None))
    assert len(on_motors.names) == len(on_joints.names)
    assert {f"{k}_m{j}" for k in ("ia", "fv", "fc") for j in (1, 2, 3)} <= set(on_motors.standard_names)


F0, HARMONICS = 0.2, 5


def _trajectory(seed):
    """A periodic joint motion (5 harmonics of 0.2 Hz, two periods at 200 Hz): t (N,), q, qd, qdd (N, 3)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(2 * 200.0 / F0)) / 200.0
    a, b = rng.normal(size=(2, 3, HARMONICS)) * 0.5
    return (t, *(np.asarray(x) for x in fourier(a, b, rng.normal(size=3) * 0.3, 2 * np.pi * F0, t)))


def _motor_log(tmp_path, truth, name, seed, noise=0.0):
    """A periodic run of the true robot (:func:`_trajectory`), written as the controller logs it:
    motor angles and motor torques, the excitation in the sidecar."""
    rng = np.random.default_rng(seed + 100)
    t, q, qd, qdd = _trajectory(seed)
    tau = np.asarray(jax.vmap(truth.torque, in_axes=(None, 0, 0, 0))(truth.parameter_vector(), q, qd, qdd))
    ds = data.from_arrays(t, q, tau)
    log = data.motor_log(ds, truth.transmission)
    scale = noise * np.std(np.asarray(log.tau), axis=0)
    log = data.Dataset(
        log.t, log.q, log.tau + scale * rng.normal(size=tau.shape), base_frequency=F0, harmonics=HARMONICS
    )
    path = tmp_path / name
    data.write(log, path)
    return path, tau


def test_coupled_wrist_identified_from_a_motor_side_log(tmp_path, truth):
    """The main check: a motor-side log of a coupled wrist, read through the transmission, identifies
    the simulated motor-side rotor inertia and friction; validation compares motor torques."""
    path, _ = _motor_log(tmp_path, truth, "motor.csv", seed=3, noise=0.002)
    model = jaxid.models.planar(3).with_transmission(truth.transmission).with_joint_terms(TERMS)
    raw = workflow.read(path, transmission=truth.transmission)
    assert raw.motor_side
    prepared = workflow.prepare([raw], model)
    params = workflow.identify_experiment(model, prepared)
    # every base parameter with a motor-side term (ia_m1 is grouped with Izz1, as the first joint's
    # rotor inertia is in any serial arm: 14400 = 120^2), against the truth's base parameters
    estimate, true = np.asarray(params.theta), np.asarray(params.base.to_base(truth.parameter_vector()))
    motor = [k for k, name in enumerate(params.base.names) if "_m" in name]
    assert {f"{k}_m{j}" for k in ("ia", "fv", "fc") for j in (2, 3)} | {"fv_m1", "fc_m1"} <= set(params.base.names)
    assert len(motor) == 12
    for k in motor:
        name = params.base.names[k]
        assert abs(estimate[k] - true[k]) < 0.03 * abs(true[k]), (name, estimate[k], true[k])
    # held out, in the log's space: the motor torques as logged
    held, _ = _motor_log(tmp_path, truth, "held.csv", seed=4)
    val = workflow.validate(
        model, params, workflow.prepare([workflow.read(held, transmission=truth.transmission)], model)
    )
    logged = np.loadtxt(held, delimiter=",", skiprows=1)[:, 4:7]
    assert val.runs[0]["space"] == "motor"
    np.testing.assert_allclose(val.measured[0], logged[: len(val.measured[0])], atol=1e-9)
    assert val.runs[0]["relative_error"] < 1.0
    # the model's description records the transmission; rebuilt from it, the same names
    assert params.model["transmission"]["matrix"] == np.asarray(truth.transmission.matrix).tolist()


def test_cli_identifies_and_validates_a_motor_side_log(tmp_path, truth):
    """--transmission FILE: simulate writes a motor-side log, identify and validate read it (params.json
    carries the transmission to validate)."""
    tfile = tmp_path / "wrist.json"
    C = np.eye(3)
    C[2, 1] = COUPLING
    tfile.write_text(
        json.dumps(
            {
                "ratio": np.abs(RATIO).tolist(),
                "sign": np.sign(RATIO).tolist(),
                "offset": [0, 0.3, -0.2],
                "coupling": C.tolist(),
            }
        )
    )
    assert np.allclose(load(tfile, ("joint1", "joint2", "joint3")).matrix, truth.transmission.matrix)
    t, q, qd, qdd = _trajectory(5)  # the commanded joint motion, as 'jaxid excite' writes it
    header = "t," + ",".join(f"{k}{j}" for k in ("q", "qd", "qdd") for j in (1, 2, 3))
    np.savetxt(tmp_path / "q.csv", np.column_stack([t, q, qd, qdd]), delimiter=",", header=header, comments="")
    side = {"jaxid": "excitation", "base_frequency_hz": F0, "harmonics": HARMONICS}
    (tmp_path / "q.csv.json").write_text(json.dumps(side))
    out = lambda name: str(tmp_path / name)
    common = ["--robot", "planar3", "--transmission", str(tfile), "--quiet"]
    assert (
        main(
            ["simulate", *common, "--trajectory", out("q.csv"), "-o", out("log.csv"), "--true-params", out("true.json")]
        )
        == 0
    )
    assert main(["identify", *common, "--joint-terms", "fv,fc,offset", out("log.csv"), "-o", out("p.json")]) == 0
    p = json.loads((tmp_path / "p.json").read_text())
    assert "fv_m3" in p["parameter_names"] and "transmission" in p["model"]
    assert (
        main(
            ["validate", "--params", out("p.json"), out("log.csv"), "--no-figures", "--json", out("v.json"), "--quiet"]
        )
        == 0
    )
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["files"][0]["space"] == "motor"
    # motor-side friction drawn at motor scale (a joint's friction through the gear), recovered
    true = json.loads((tmp_path / "true.json").read_text())
    truth_fv = dict(zip(true["names"], true["theta"]))
    est = dict(zip(p["base"]["names"], p["estimate"]))
    for j in (1, 2, 3):
        assert abs(est[f"fv_m{j}"] - truth_fv[f"fv_m{j}"]) < 0.1 * truth_fv[f"fv_m{j}"]


URDF = """<robot name="r">
  <link name="base"/><link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="continuous"><parent link="a"/><child link="b"/><origin xyz="1 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="j3" type="continuous"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/><axis xyz="1 0 0"/></joint>
  <transmission name="t1"><type>transmission_interface/SimpleTransmission</type>
    <joint name="j1"><offset>0.25</offset></joint>
    <actuator name="m1"><mechanicalReduction>160</mechanicalReduction></actuator></transmission>
  <transmission name="wrist"><type>transmission_interface/DifferentialTransmission</type>
    <actuator name="m3"><role>actuator2</role><mechanicalReduction>40</mechanicalReduction></actuator>
    <actuator name="m2"><role>actuator1</role><mechanicalReduction>-50</mechanicalReduction></actuator>
    <joint name="j2"><role>joint1</role><offset>0.1</offset><mechanicalReduction>2</mechanicalReduction></joint>
    <joint name="j3"><role>joint2</role><mechanicalReduction>-1</mechanicalReduction></joint>
  </transmission>
</robot>"""


def test_urdf_transmissions(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(URDF)
    robot = jaxid.Robot.from_urdf(path)
    t = urdf.read_transmission(path, robot.coordinate_names)
    R = np.asarray(t.matrix)
    # SimpleTransmission: q = q_m / reduction + offset
    assert R[0, 0] == pytest.approx(1 / 160) and not R[0, 1:].any() and float(t.offset[0]) == 0.25
    # DifferentialTransmission (ROS transmission_interface): q_j1 = (q_a1/na1 + q_a2/na2) / (2 nj1) + off1,
    # q_j2 = (q_a1/na1 - q_a2/na2) / (2 nj2); actuator k (by role) drives joint k's motor coordinate
    qm = np.array([0.0, 3.0, -5.0])
    q = t.joint_positions(qm)
    assert q[1] == pytest.approx((3.0 / -50 + -5.0 / 40) / (2 * 2) + 0.1)
    assert q[2] == pytest.approx((3.0 / -50 - -5.0 / 40) / (2 * -1))
    # ROS's effort map is R^-T: tau_j1 = nj1 (na1 tau_a1 + na2 tau_a2)
    tau_m = np.array([0.0, 0.7, 0.2])
    assert t.joint_torques(tau_m)[1] == pytest.approx(2 * (-50 * 0.7 + 40 * 0.2))
    # through the model description, as --transmission urdf builds it
    built = jaxid.model.description.build_model(urdf=str(path), joint_terms=("fv",), transmission="urdf")
    assert built.parameter_names()[-3:] == ("fv_m1", "fv_m2", "fv_m3")
    for text, message in (
        (URDF.replace("<mechanicalReduction>160", "<mechanicalReduction>0"), "0 is no gear ratio"),
        (URDF.replace("transmission_interface/SimpleTransmission", "acme/Harmonic"), "has type 'acme/Harmonic'"),
        (
            URDF.replace('<joint name="j1"><offset>0.25</offset></joint>', '<joint name="jx"/>'),
            "no <transmission> for joint(s) j1",
        ),
    ):
        bad = tmp_path / "bad.urdf"
        bad.write_text(text)
        with pytest.raises(urdf.URDFError, match=re.escape(message)):
            urdf.read_transmission(bad, robot.coordinate_names)


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"matrix": [[1, 0, 0], [0, 1, 0], [0, 2, 0]]}, "singular"),
        ({"ratio": [100, 100]}, "2 joints, but the model has 3"),
        ({"matrix": [[1, 0], [0, 1], [0, 0]]}, "square"),
        ({"ratio": [100, float("nan"), 50]}, "not finite"),
        ({"ratio": [100, 0, 50]}, "ratio 0"),
        ({"ratio": [1, 1, 1], "matrix": np.eye(3).tolist()}, "either 'matrix'"),
        ({"ratios": [1, 1, 1]}, "unknown key"),
        ({"ratio": [1, 1, 1], "sign": [1, 2, 1]}, r"\+1 or -1"),
        ({"ratio": [1, 1, 1], "coupling": [[1, 0, 0], [0, 1, 0], [0, 1, 0]]}, "singular"),
        ({"ratio": [1, 1, 1], "joints": ["joint1", "joint2", "wrist"]}, "not the model's joints"),
    ],
)
def test_bad_transmissions_are_one_line_errors(tmp_path, doc, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TransmissionError, match=message) as e:
        load(path, ("joint1", "joint2", "joint3"))
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_joints_reorder_and_other_bad_input(tmp_path, capsys):
    t = Transmission.from_dict(
        {"ratio": [10, 20, 30], "joints": ["joint3", "joint1", "joint2"]}, ("joint1", "joint2", "joint3")
    )
    np.testing.assert_allclose(np.diag(np.asarray(t.matrix)), [1 / 20, 1 / 30, 1 / 10])
    with pytest.raises(TransmissionError, match="no such file"):
        load(tmp_path / "missing.json")
    with pytest.raises(data.DatasetError, match="maps 2 motors but the log has 3"):
        data.from_arrays(
            np.arange(20) * 0.01, np.zeros((20, 3)), np.zeros((20, 3)), transmission=Transmission.identity(2)
        )
    with pytest.raises(ValueError, match="mimic joints"):
        jaxid.models.planar(3).__class__(
            **{**_planar_kwargs(), "mimic": [None, None, (1, 1.0, 0.0)]}, transmission=Transmission.identity(2)
        )
    with pytest.raises(workflow.WorkflowError, match="needs --urdf"):
        workflow.requests.ModelSpec(robot="planar3", transmission="urdf")
    assert main(["identify", "--robot", "planar3", "--transmission", str(tmp_path / "t.yaml"), "x.csv"]) == 2
    assert "give a .json or .toml transmission file" in capsys.readouterr().err


def _planar_kwargs():
    r = jaxid.models.planar(3)
    return dict(placements=r.placements, axes=r.axes, inertial=r.inertial)


def test_model_file_gets_joint_side_friction(tmp_path):
    """Writing a URDF back: motor-side fv, fc become the joints' <dynamics> (fv r^2, fc |r|); a coupled
    transmission's are left out, with a warning."""
    path = tmp_path / "r.urdf"
    path.write_text(URDF)
    robot = jaxid.Robot.from_urdf(path, joint_terms=("fv", "fc"))
    motor = np.array([[1e-4, 0.01], [2e-4, 0.02], [3e-4, 0.03]])
    diag = robot.with_transmission(Transmission.from_ratios(RATIO)).with_joint_terms(("fv", "fc"), motor)
    out = urdf.write_back(diag, diag.parameter_vector(), path, tmp_path / "out.urdf")
    back = jaxid.Robot.from_urdf(out, joint_terms=("fv", "fc"))
    np.testing.assert_allclose(np.asarray(back.joint_params), motor * np.stack([RATIO**2, np.abs(RATIO)], axis=1))
    coupled = diag.with_transmission(wrist())
    with pytest.warns(UserWarning, match="coupled joints"):
        out = urdf.write_back(coupled, coupled.parameter_vector(), path, tmp_path / "out2.urdf")
    assert not np.asarray(jaxid.Robot.from_urdf(out, joint_terms=("fv", "fc")).joint_params).any()
