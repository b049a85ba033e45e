"""The built-in PUMA 560 (jaxid.models.puma560): dynamics identities and published numbers."""

import numpy as np
import pytest

import jaxid
from jaxid import results
from jaxid.model import library


@pytest.fixture(scope="module")
def puma():
    return jaxid.models.puma560()


def test_regressor_times_parameters_is_inverse_dynamics(puma, states):
    q, qd, qdd = states
    Y = jaxid.regressor(puma, q, qd, qdd)
    np.testing.assert_allclose(Y @ jaxid.parameter_vector(puma), jaxid.rnea(puma, q, qd, qdd), rtol=0, atol=1e-10)


def test_mass_matrix_symmetric_positive_definite(puma, states):
    for q in states[0]:
        M = np.asarray(jaxid.mass_matrix(puma, q))
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(M)[0] > 0


def test_gravity_torques_match_corkes_toolbox(puma):
    # Corke's Robotics Toolbox, p560.gravload(qz) with the same DH table and masses:
    # [0, 37.4837, 0.2489, 0, 0, 0] N m -- tens of N m on the shoulder of a heavy arm.
    tau = np.asarray(jaxid.gravity_torques(puma, np.zeros(6)))
    np.testing.assert_allclose(tau, [0, 37.4837, 0.2489, 0, 0, 0], rtol=0, atol=1e-4)


def test_link1_mass_and_cross_inertia_enter_no_torque(puma, states):
    # The assumed m1, Ixx1, Izz1 (the source gives only Iyy1, about the joint axis): other values give the
    # same torques. In the joint frame the axis is z, so the free moments are Ixx (index 4) and Iyy (6).
    q, qd, qdd = states
    heavier = puma.with_parameters(jaxid.parameter_vector(puma).at[0].mul(3).at[4].add(0.5).at[6].add(0.5))
    np.testing.assert_allclose(jaxid.rnea(heavier, q, qd, qdd), jaxid.rnea(puma, q, qd, qdd), rtol=0, atol=1e-10)


def test_motor_currents_read_as_joint_torques(puma, tmp_path):
    q, qd, qdd = np.random.default_rng(1).normal(size=(3, 12, 6))  # a dataset has at least 10 samples
    tau = np.asarray(jaxid.rnea(puma, q, qd, qdd))
    gains = library.PUMA560_KM * library.PUMA560_GEAR  # N m/A at the joint, signed with the gear
    path = tmp_path / "currents.csv"
    header = ",".join(["t"] + [f"q{i}" for i in range(1, 7)] + [f"tau{i}" for i in range(1, 7)])
    np.savetxt(
        path, np.column_stack([0.01 * np.arange(len(q)), q, tau / gains]), delimiter=",", header=header, comments=""
    )
    ds = jaxid.workflow.read(path, units={"tau": "A"}, gains=gains)
    np.testing.assert_allclose(ds.tau, tau, rtol=1e-12, atol=1e-12)


def test_builtin_by_name():
    assert results.builtin_model("puma560").name == "puma560"
