"""Agreement with Pinocchio, the reference rigid-body implementation (optional dependency)."""

import numpy as np
import pytest

import jaxid
from jaxid.model import inertia
from jaxid.model.library import UR5_COMS, UR5_CYLINDERS, UR5_DH, UR5_MASSES

pin = pytest.importorskip("pinocchio")


def pin_from_standard_dh(table, masses, coms, inertias):
    """Pinocchio model of a standard-DH arm, built from the table independently of jaxid."""
    model = pin.Model()
    parent, prev = 0, pin.SE3.Identity()
    for i, (offset, d, a, alpha) in enumerate(table):
        placement = prev * pin.SE3(np.eye(3), np.array([0, 0, d])) * pin.SE3(pin.utils.rotate("z", offset), np.zeros(3))
        jid = model.addJoint(parent, pin.JointModelRZ(), placement, f"j{i}")
        dh_frame = pin.SE3(np.eye(3), np.array([a, 0, 0])) * pin.SE3(pin.utils.rotate("x", alpha), np.zeros(3))
        model.appendBodyToJoint(jid, pin.Inertia(masses[i], coms[i], inertias[i]), dh_frame)
        parent, prev = jid, dh_frame
    return model


def compare(robot, model, rng, n_states=5, tol=1e-9):
    data = model.createData()
    theta = np.concatenate([model.inertias[j].toDynamicParameters() for j in range(1, model.njoints)])
    np.testing.assert_allclose(robot.parameter_vector(), theta, atol=tol)
    for _ in range(n_states):
        q, qd, qdd = rng.normal(size=(3, robot.n))
        tau = pin.rnea(model, data, q, qd, qdd)
        np.testing.assert_allclose(jaxid.rnea(robot, q, qd, qdd), tau, atol=tol * max(1, np.abs(tau).max()))
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(jaxid.mass_matrix(robot, q), M, atol=tol)
        Y = pin.computeJointTorqueRegressor(model, data, q, qd, qdd)
        np.testing.assert_allclose(jaxid.regressor(robot, q, qd, qdd), Y, atol=tol * max(1, np.abs(Y).max()))


def test_ur5_dh_matches_pinocchio(ur5):
    inertias = [np.asarray(inertia.cylinder_inertia(m, r, L, ax)) for m, (r, L, ax) in zip(UR5_MASSES, UR5_CYLINDERS)]
    model = pin_from_standard_dh(UR5_DH, UR5_MASSES, UR5_COMS, inertias)
    compare(ur5, model, np.random.default_rng(0))


@pytest.mark.parametrize("relative", ["ur_description/urdf/ur5_robot.urdf"])
def test_urdf_matches_pinocchio(relative):
    """The UR5 chain (the Panda's tree: test_panda_coupled_fingers_match_pinocchio)."""
    try:
        path = jaxid.models.example_robot_urdf(relative)
    except FileNotFoundError:
        pytest.skip("example-robot-data not installed")
    robot = jaxid.Robot.from_urdf(path, mimic="independent")
    model = pin.buildModelFromUrdf(path)
    assert model.nq == robot.n and [model.names[i] for i in range(1, model.njoints)] == list(robot.names)
    compare(robot, model, np.random.default_rng(1))
    tool = model.frames[model.getFrameId("tool0")]  # the payload flange: URDF's tool0
    assert robot.tip_joint == tool.parentJoint - 1
    np.testing.assert_allclose(robot.tip, tool.placement.homogeneous, atol=1e-12)


def test_panda_coupled_fingers_match_pinocchio():
    """The Panda's second finger mimics the first (Pinocchio's mimic=True): 8 coordinates for 9
    joints; rnea and M agree with Pinocchio's, and the regressor is G^T of the 9-joint one."""
    try:
        path = jaxid.models.example_robot_urdf("panda_description/urdf/panda.urdf")
    except FileNotFoundError:
        pytest.skip("example-robot-data not installed")
    robot = jaxid.Robot.from_urdf(path)
    model, free = pin.buildModelFromUrdf(path, mimic=True), pin.buildModelFromUrdf(path)
    assert (robot.n, robot.n_joints, model.nv) == (8, 9, 8)
    data, free_data = model.createData(), free.createData()
    G = np.vstack([np.eye(8), np.eye(8)[7]])  # finger 2 = finger 1 (multiplier 1, offset 0)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=(3, 8))
        tau = pin.rnea(model, data, q, qd, qdd)
        np.testing.assert_allclose(jaxid.rnea(robot, q, qd, qdd), tau, atol=1e-10 * np.abs(tau).max())
        M = pin.crba(model, data, q)
        np.testing.assert_allclose(jaxid.mass_matrix(robot, q), np.triu(M) + np.triu(M, 1).T, atol=1e-12)
        Y = G.T @ pin.computeJointTorqueRegressor(free, free_data, G @ q, G @ qd, G @ qdd)
        np.testing.assert_allclose(jaxid.regressor(robot, q, qd, qdd), Y, atol=1e-10 * np.abs(Y).max())
        # Interchange: the same robot read from Pinocchio's model, and written into one.
        exported = robot.to_pinocchio()
        np.testing.assert_allclose(pin.rnea(exported, exported.createData(), q, qd, qdd), tau, atol=1e-12)
    back = jaxid.Robot.from_pinocchio(model)
    assert (back.names, back.mimic, back.parents) == (robot.names, robot.mimic, robot.parents)
    np.testing.assert_allclose(back.parameter_vector(), robot.parameter_vector(), atol=1e-12)
    np.testing.assert_allclose(back.placements, robot.placements, atol=1e-12)
    np.testing.assert_allclose(np.stack([back.q_min, back.q_max]), np.stack([robot.q_min, robot.q_max]))
