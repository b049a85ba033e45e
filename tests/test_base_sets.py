"""Base parameter sets that depend on the model alone: not on the PRNG key of the sampled
states, not on the joint terms switched on, and full with placeholder position limits."""

import re

import numpy as np
import pytest

import jaxid
from jaxid.identification.base import base_parameters
from jaxid.models import example_robot_urdf


def urdf(relative):
    try:
        return example_robot_urdf(relative)
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


def test_kinova_one_set_over_keys_and_joint_terms():
    """example-robot-data's Kinova (three continuous joints, rounded angles in the file): the same
    set for every key, and its inertial part unchanged by friction and armature columns."""
    path = urdf("kinova_description/robots/kinova.urdf")
    plain = jaxid.Robot.from_urdf(path, check_inertia=False)
    terms = jaxid.Robot.from_urdf(path, check_inertia=False, joint_terms=("fv", "fc", "ia"))
    p = len(plain.parameter_names())
    sets = {tuple(base_parameters(plain, key=k).indices) for k in range(3)}
    with_terms = {tuple(base_parameters(terms, key=k).indices) for k in (0, 3)}
    assert len(sets) == 1 and len(with_terms) == 1
    (inertial,), (both,) = sets, with_terms
    assert tuple(i for i in both if i < p) == inertial
    assert len(inertial) == 36


def test_placeholder_limits_give_the_full_base_count(tmp_path):
    """A URDF whose limits are placeholders (lower = upper = 0) has the base count of the same file
    with real limits, and the joints are named in a warning."""
    text = open(urdf("ur_description/urdf/ur5_robot.urdf")).read()
    real = jaxid.Robot.from_urdf(example_robot_urdf("ur_description/urdf/ur5_robot.urdf"), check_inertia=False)
    flat = tmp_path / "ur5_placeholder.urdf"
    flat.write_text(re.sub(r'(lower|upper)\s*=\s*"[^"]*"', r'\1="0"', text))
    robot = jaxid.Robot.from_urdf(flat, check_inertia=False)
    np.testing.assert_array_equal(robot.q_min, 0.0)
    with pytest.warns(UserWarning, match=r"position limits without a range .*joint 1 \(shoulder_pan_joint\) \[0, 0\]"):
        base = base_parameters(robot, key=1)
    assert base.rank == base_parameters(real).rank == 36
    np.testing.assert_array_equal(base.indices, base_parameters(real).indices)
