"""MJCF reading (xml.etree, no mujoco): dynamics agree with Pinocchio's MJCF parser; bad input named."""
import numpy as np
import pytest

import jaxid

ARM = """
<mujoco model="arm">
  <compiler angle="degree"/>
  <option gravity="0 0 -9.81"/>
  <default>
    <joint damping="0.5" axis="0 1 0"/>
    <default class="wrist"><joint damping="0.1" frictionloss="0.2" range="-90 90"/></default>
  </default>
  <worldbody>
    <body name="base" pos="0 0 0.1">
      <body name="l1" pos="0 0 0.2" euler="0 0 30">
        <joint name="j1" axis="0 0 1" range="-170 170"/>
        <inertial pos="0.01 0.02 0.1" quat="0.9 0.1 0.2 0.3" mass="3" diaginertia="0.05 0.04 0.03"/>
        <body name="l2" pos="0.1 0 0.3" axisangle="1 0 0 20">
          <joint name="j2" pos="0 0 0.05" ref="10"/>
          <inertial pos="0.2 0 0" mass="2" fullinertia="0.02 0.03 0.025 0.001 -0.002 0.0015"/>
          <body name="l3" pos="0.4 0 0" xyaxes="0 1 0 -1 0 0" childclass="wrist">
            <joint name="j3" type="slide" axis="1 0 0" range="0 0.2"/>
            <inertial pos="0 0.05 0" euler="10 20 30" mass="1" diaginertia="0.01 0.012 0.008"/>
            <body name="fixed" pos="0 0 0.1" zaxis="0 1 1">
              <inertial pos="0 0 0.02" mass="0.3" diaginertia="0.001 0.001 0.001"/>
              <site name="tool0" pos="0 0 0.05"/>
            </body>
            <body name="l4" pos="0 0.1 0">
              <joint name="j4" class="wrist"/>
              <inertial pos="0 0 0.03" mass="0.5" diaginertia="0.002 0.003 0.002"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def write(tmp_path, text):
    path = tmp_path / "arm.xml"
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("mjcf"), ARM)
    return path, jaxid.Robot.from_mjcf(path, joint_terms=("fv", "fc"))


def test_reads_tree_defaults_units_and_tool_site(arm):
    path, robot = arm
    assert robot.names == ("j1", "j2", "j3", "j4") and robot.joint_types == ("R", "R", "P", "R")
    assert robot.parents == (-1, 0, 1, 2)
    np.testing.assert_allclose(robot.q_max, [np.radians(170), np.inf, 0.2, np.pi / 2])  # degrees; slide in m
    np.testing.assert_allclose(robot.joint_params, [[0.5, 0], [0.5, 0], [0.1, 0.2], [0.1, 0.2]])  # class defaults
    np.testing.assert_allclose(robot.inertial[2, 0], 1.3)  # the jointless body welded onto l3
    assert robot.tip_joint == 2  # site tool0 sits on the welded body, carried by j3
    np.testing.assert_allclose(robot.tip[:3, 3], [0, 0.05 / np.sqrt(2), 0.1 + 0.05 / np.sqrt(2)], atol=1e-12)


def test_dynamics_match_pinocchio_mjcf(arm):
    pin = pytest.importorskip("pinocchio")
    path, robot = arm
    robot = robot.with_joint_terms(())
    model = pin.buildModelFromMJCF(path)
    data = model.createData()
    assert [model.names[i] for i in range(1, model.njoints)] == list(robot.names)
    q, qd, qdd = np.random.default_rng(0).normal(size=(3, 3, 4))
    tau, M = jaxid.rnea(robot, q, qd, qdd), jaxid.mass_matrix(robot, q)
    for k in range(3):
        np.testing.assert_allclose(tau[k], pin.rnea(model, data, q[k], qd[k], qdd[k]), atol=1e-12)
        Mp = pin.crba(model, data, q[k])
        np.testing.assert_allclose(M[k], np.triu(Mp) + np.triu(Mp, 1).T, atol=1e-12)


def test_equality_joint_is_a_coupled_joint(tmp_path):
    text = ARM.replace("</worldbody>", '</worldbody><equality><joint joint1="j4" joint2="j2" polycoef="0.1 -0.5 0 0 0"/>'
                       "</equality>")
    robot = jaxid.Robot.from_mjcf(write(tmp_path, text))
    assert (robot.n, robot.n_joints, robot.coordinate_names) == (3, 4, ("j1", "j2", "j3"))
    np.testing.assert_allclose([robot.mimic_ratio[3], robot.mimic_offset[3]], [-0.5, 0.1])


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('<joint name="j3" type="slide"', '<joint name="j3" type="ball"'),
     r"joint 'j3' has type 'ball'.*floating bases and ball joints are not supported"),
    (lambda s: s.replace('<body name="base" pos="0 0 0.1">', '<body name="base" pos="0 0 0.1"><freejoint/>'),
     r"body 'base' has a <freejoint>: floating bases are not supported yet"),
    (lambda s: s.replace("</worldbody>", '</worldbody><tendon><fixed name="t"><joint joint="j1" coef="1"/></fixed>'
                         "</tendon>"), r"<tendon><fixed name='t'>: tendons couple joints"),
    (lambda s: s.replace("</worldbody>", '</worldbody><equality><connect name="loop" body1="l1" body2="l4" '
                         'anchor="0 0 0"/></equality>'), r"<equality><connect name='loop'>: .* closes a kinematic loop"),
    (lambda s: s.replace("</worldbody>", '</worldbody><equality><joint joint1="j4" joint2="jx"/></equality>'),
     r"no hinge or slide joint named 'jx'"),
    (lambda s: s.replace('<option gravity="0 0 -9.81"/>', '<include file="more.xml"/>'), r"<include> is not supported"),
    (lambda s: s.replace('mass="2"', 'mass="-2"'), r"body 'l2' <inertial>: negative mass"),
    (lambda s: s.replace('axisangle="1 0 0 20"', 'axisangle="1 0 0 20" quat="1 0 0 0"'), r"orientation given twice"),
    (lambda s: s.replace("<mujoco", "<robot").replace("</mujoco>", "</robot>"), r"expected <mujoco>"),
])
def test_bad_mjcf_is_named(tmp_path, edit, message):
    with pytest.raises(ValueError, match=message):
        jaxid.Robot.from_mjcf(write(tmp_path, edit(ARM)))
