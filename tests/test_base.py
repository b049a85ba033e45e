"""Base parameters: rank, K, names, the invariance W theta = W_b theta_b, and a set that
depends on the structure only."""

import re
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxid  # noqa: F401  (float64)
from jaxid.identification.base import base_from_regressor, base_parameters

NAMES = ["m1", "mx1", "Izz1", "Iyy2", "m2", "fv1", "dead"]


@pytest.fixture(scope="module")
def synthetic():
    """Columns with known dependencies: Iyy2 = m1 + 2 mx1, m2 = -0.180625 Izz1, and dead
    at rounding level (what cos(pi/2) = 6e-17 leaves in a DH chain): zero, not independent."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(90, 7)) * np.array([1.0, 5.0, 0.3, 1, 1, 2.0, 1])
    W[:, 3] = W[:, 0] + 2 * W[:, 1]
    W[:, 4] = -0.180625 * W[:, 2]
    W[:, 6] = 1e-17 * rng.normal(size=90)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clear gap must not warn
        return W, base_from_regressor(W, NAMES)


def _parse(name):
    """'a + 2*b - c' -> {'a': 1, 'b': 2, 'c': -1}."""
    out = {}
    for sign, coef, var in re.findall(r"([+-]?)\s*(?:([0-9.e+-]+)\*)?([A-Za-z]\w*)", name):
        out[var] = (-1 if sign == "-" else 1) * (float(coef) if coef else 1.0)
    return out


def test_rank_mapping_and_invariance(synthetic):
    W, bp = synthetic
    assert bp.rank == 4 and bp.K.shape == (4, 3)
    ind, dep = np.asarray(bp.indices), np.asarray(bp.dependent)
    assert list(ind) == sorted(ind) and sorted([*ind, *dep]) == list(range(7))
    assert 6 in dep  # the zero column
    assert list(dep) == [3, 4, 6]  # ties go to the earlier column
    np.testing.assert_allclose(W[:, dep], W[:, ind] @ np.asarray(bp.K), atol=1e-12)
    assert not np.asarray(bp.K)[:, list(dep).index(6)].any()
    theta = np.random.default_rng(1).normal(size=(5, 7))
    np.testing.assert_allclose(
        np.einsum("mb,kb->km", bp.reduce(W), bp.to_base(theta)), theta @ W.T, rtol=1e-12, atol=1e-12
    )
    # The distances show the cut: the kept part is O(1), the dropped part rounding.
    r = np.asarray(bp.r_diag)
    assert np.isclose(r[0], 1) and r[ind].min() > 1e-3 and r[dep].max() < 1e-13 and r[6] == 0 and bp.gap > 1e10


def test_names_are_the_combinations_of_K(synthetic):
    _, bp = synthetic
    K, std = np.asarray(bp.K), bp.standard_names
    for k, (i, name) in enumerate(zip(np.asarray(bp.indices), bp.names)):
        expected = {std[i]: 1.0} | {std[j]: K[k, c] for c, j in enumerate(np.asarray(bp.dependent)) if K[k, c]}
        got = _parse(name)
        assert got.keys() == expected.keys(), name
        np.testing.assert_allclose([got[v] for v in expected], list(expected.values()), rtol=1e-5)
        assert re.search(r"(^|\s)1\*", name) is None and "dead" not in name
    # The closed-form groups, whichever column the pivoting kept.
    assert any(set(_parse(nm)) == {"Izz1", "m2"} for nm in bp.names)
    coefs = [_parse(nm) for nm in bp.names if set(_parse(nm)) == {"Izz1", "m2"}][0]
    assert np.isclose(coefs["m2"] / coefs["Izz1"], -0.180625) or np.isclose(coefs["Izz1"] / coefs["m2"], -1 / 0.180625)


def test_to_base_jits_and_batches(synthetic):
    _, bp = synthetic
    theta = jnp.arange(7.0)
    np.testing.assert_allclose(jax.jit(type(bp).to_base)(bp, theta), bp.to_base(theta))
    assert jax.vmap(bp.to_base)(jnp.stack([theta, theta])).shape == (2, 4)
    # lift: concrete arguments on the host, traced ones in jax; the same numbers, and its base
    # parameters are the ones lifted
    from jaxid.identification.base import lift

    b, nominal = np.asarray(bp.to_base(theta)) + 0.5, np.asarray(theta) + 1.0
    np.testing.assert_allclose(lift(bp, b, nominal), jax.jit(lift)(bp, b, nominal), rtol=1e-14)
    np.testing.assert_allclose(bp.to_base(lift(bp, b, nominal)), b, rtol=1e-14)


def test_ambiguous_gap_warns():
    rng = np.random.default_rng(2)
    W = rng.normal(size=(60, 5))
    W[:, 3] = W[:, 0] + 1e-7 * rng.normal(size=60)  # near-dependent: kept, tiny R_ii
    W[:, 4] = W[:, 1] - W[:, 2] + 1e-9 * rng.normal(size=60)  # dropped at tol 1e-8
    with pytest.warns(UserWarning, match="ambiguous rank"):
        bp = base_from_regressor(W)
    assert bp.rank == 4 and bp.gap < 1e3


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="NaN"):
        base_from_regressor(np.full((4, 2), np.nan))
    with pytest.raises(ValueError, match="3 names for 2 columns"):
        base_from_regressor(np.ones((4, 2)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="shape"):
        base_from_regressor(np.ones(4))


class _TwoJoint(eqx.Module):
    """tau1 = (a + b) qdd1 + c qd1,  tau2 = d q2 + 0 * e: base (a + b, c, d), e unidentifiable."""

    n: int = eqx.field(static=True, default=2)

    def torque(self, theta, q, qd, qdd):
        a, b, c, d, e = theta
        return jnp.stack([(a + b) * qdd[0] + c * qd[0], d * jnp.sin(q[1]) + 0.0 * e])

    def parameter_vector(self):
        return jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])

    def parameter_names(self):
        return ("a", "b", "c", "d", "e")


def test_base_parameters_of_a_model():
    pytest.importorskip("jaxid.identification.regressor")
    bp = base_parameters(_TwoJoint(), n_samples=50)
    assert bp.rank == 3
    assert sorted(bp.names) == sorted(["a + b", "c", "d"]) or sorted(bp.names) == sorted(["b + a", "c", "d"])
    np.testing.assert_allclose(sorted(np.asarray(bp.to_base(jnp.arange(1.0, 6.0)))), [3.0, 3.0, 4.0])


def test_ur5_base_parameters_counts_and_noiseless_recovery():
    """UR5 with fv, fc per joint: 48 base parameters (36 inertial), recovered exactly from
    noiseless torques; Pinocchio's regressor of the UR5 URDF gives the same 36."""
    pin = pytest.importorskip("pinocchio")
    from jaxid.identification.estimators import identify

    robot = jaxid.models.ur5(joint_terms=("fv", "fc"))
    bp = base_parameters(robot)
    assert bp.rank == 48 and bp.gap > 1e8
    # Khalil and Bennis' grouping: ZZ1 + YY2 + a2^2 (m3 + ...), a2 = 0.425 m.
    assert bp.names[0].startswith("Izz1 + Iyy2 + 0.180625*m3")
    rng = np.random.default_rng(5)
    q, (qd, qdd) = rng.uniform(-np.pi, np.pi, (200, 6)), rng.normal(size=(2, 200, 6))
    Y = jaxid.regressor(robot, q, qd, qdd)
    assert base_from_regressor(np.asarray(Y)[..., :60]).rank == 36
    fit = identify(bp.reduce(Y), Y @ robot.parameter_vector(), "ols")  # Y @ theta == rnea: test_dynamics
    truth = bp.to_base(robot.parameter_vector())
    big = np.abs(truth) > 1e-9 * np.abs(truth).max()  # some combinations are exactly 0
    np.testing.assert_allclose(fit.theta[big], truth[big], rtol=1e-8)
    np.testing.assert_allclose(fit.theta[~big], 0.0, atol=1e-9 * np.abs(truth).max())

    try:
        urdf = jaxid.models.example_robot_urdf("ur_description/urdf/ur5_robot.urdf")
    except FileNotFoundError:
        pytest.skip("example-robot-data not installed")
    model = pin.buildModelFromUrdf(str(urdf))
    data, rng = model.createData(), np.random.default_rng(0)
    W = np.vstack(
        [
            pin.computeJointTorqueRegressor(
                model, data, rng.uniform(-np.pi, np.pi, 6), rng.normal(size=6), rng.normal(size=6)
            )
            for _ in range(150)
        ]
    )
    assert base_from_regressor(W).rank == 36


def test_base_set_depends_on_the_structure_only():
    """FIGAROH's determinism test ported (Nguyen et al. 2023): 10 trials with other states,
    re-ordered samples and 1e-12 relative noise give the same columns and names, from data
    (base_from_regressor) and from the model with another key (base_parameters); offset
    columns appended after the friction ones keep the inertial names. UR5 with fv, fc, at the
    shapes of the test above (no new compile)."""
    robot = jaxid.models.ur5(joint_terms=("fv", "fc"))
    reference = base_parameters(robot)
    for t in range(10):
        rng = np.random.default_rng(100 + t)
        q = rng.uniform(-np.pi, np.pi, (200, 6))
        qd, qdd = rng.normal(size=(2, 200, 6))
        W = np.asarray(jaxid.regressor(robot, q, qd, qdd)).reshape(-1, 72)
        if t == 0:  # theta order of fv, fc, offset: per joint (fv_i, fc_i, offset_i); offset columns are ones
            friction = W[:, 60:].reshape(-1, 6, 2)
            W_offset = np.concatenate(
                [
                    W[:, :60],
                    np.concatenate([friction, np.tile(np.eye(6), (200, 1))[:, :, None]], axis=2).reshape(-1, 18),
                ],
                axis=1,
            )
            with_offset = base_from_regressor(
                W_offset, robot.with_joint_terms(("fv", "fc", "offset")).parameter_names()
            )
            assert with_offset.rank == 54 and with_offset.names[:36] == reference.names[:36]
        W = W[rng.permutation(len(W))] * (1 + 1e-12 * rng.normal(size=W.shape))
        bp = base_from_regressor(W, robot.parameter_names())
        assert bp.names == reference.names
        np.testing.assert_array_equal(bp.indices, reference.indices)
        if t < 3:
            assert base_parameters(robot, key=jax.random.PRNGKey(t + 1)).names == reference.names


def test_a_tiny_copy_does_not_stand_for_its_group():
    """A column that is a 3e-8 copy of a later one (a URDF's rpy="1.5707963") is visited last:
    the base parameter is 'b - 3e-08*a', not 'a - 3.3e7*b' with a reduced column at rounding level."""
    rng = np.random.default_rng(2)
    W = rng.normal(size=(40, 3))
    W[:, 0] = -3e-8 * W[:, 1]
    bp = base_from_regressor(W, ["a", "b", "c"])
    assert bp.names == ("b - 3e-08*a", "c")


def test_inertial_columns_that_only_a_rounded_angle_makes_independent_are_not_identifiable():
    """A URDF's rpy="1.5708" tilts a vertical axis by 3.7e-6 rad: the links turning about it get
    gravity columns at ~1e-6 of the others (SO-101's mx1, my1) and near-copies off by as little.
    Among the rigid-body inertial columns both count as not identifiable; a joint term's column is
    judged by the rounding tolerance alone (a motor's inertia through a gear can dwarf the rest)."""
    rng = np.random.default_rng(4)
    W = rng.normal(size=(200, 5))
    W[:, 0] *= 2e-6  # only the tilt makes it move the torques
    W[:, 2] = W[:, 1] + 1e-5 * rng.normal(size=200)  # a near-copy, apart by the tilt alone
    names = ["mx1", "m2", "mz2", "Izz2", "fv1"]
    base = base_from_regressor(W, names, inertial=4)
    assert base.rank == 3 and [names[i] for i in base.indices] == ["m2", "Izz2", "fv1"]
    assert base.names[0].startswith("m2 + ") and "mz2" in base.names[0] and "mx1" not in base.names[0]
    assert base_from_regressor(W, names).rank == 5  # the structural rank, for a model without inertials
    # Full rank otherwise (the one-QR fast path): the near-copy is judged by the same tolerance.
    fast = base_from_regressor(W[:, 1:], names[1:], inertial=3)
    assert [names[1:][i] for i in fast.indices] == ["m2", "Izz2", "fv1"]
    small_term = W.copy()
    small_term[:, 4] *= 1e-6  # a joint term's small column stays
    assert 4 in base_from_regressor(small_term, names, inertial=4).indices
