"""Physics identities of the rigid-body dynamics at random states."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from jax.test_util import check_grads
from strategies import bounded, states

import jaxid
from jaxid.dynamics.terms import kinetic_energy, potential_energy


@given(state=states((8, 6)))
def test_regressor_times_theta_is_rnea(ur5_friction, state):
    Y = jaxid.regressor(ur5_friction, *state)
    assert Y.shape == (8, 6, 60 + 6 * 4)
    tau = jaxid.rnea(ur5_friction, *state)
    np.testing.assert_allclose(Y @ ur5_friction.parameter_vector(), tau, rtol=1e-10, atol=1e-10 * np.abs(tau).max())


@given(state=states((8, 6)))
def test_bias_and_gravity_are_rnea_special_cases(ur5_friction, state):
    q, qd, _ = state
    z = np.zeros_like(q)
    np.testing.assert_allclose(jaxid.bias_torques(ur5_friction, q, qd), jaxid.rnea(ur5_friction, q, qd, z), atol=1e-10)
    np.testing.assert_allclose(jaxid.gravity_torques(ur5_friction, q), jaxid.rnea(ur5_friction, q, z, z), atol=1e-10)


@given(q=bounded((8, 6)))
def test_mass_matrix_symmetric_positive_definite(ur5_friction, q):
    M = np.asarray(jaxid.mass_matrix(ur5_friction, q))
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), atol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)


@given(state=states((8, 6)))
def test_equation_of_motion_and_forward_inverse_round_trip(ur5_friction, state):
    q, qd, qdd = state
    tau = jaxid.rnea(ur5_friction, q, qd, qdd)
    M, b = jaxid.mass_matrix(ur5_friction, q), jaxid.bias_torques(ur5_friction, q, qd)
    np.testing.assert_allclose(np.einsum("kij,kj->ki", M, qdd) + b, tau, atol=1e-10)
    np.testing.assert_allclose(jaxid.forward_dynamics(ur5_friction, q, qd, tau), qdd, atol=1e-8)


@given(state=states((8, 6)))
def test_coriolis_reproduces_velocity_terms(ur5, state):
    # Without friction, C qd + g = b; g and b as rnea at rest and at zero acceleration (one
    # program; bias_torques and gravity_torques equal those above).
    q, qd, _ = state
    z = np.zeros_like(q)
    C = jaxid.coriolis_matrix(ur5, q, qd)
    lhs = np.einsum("kij,kj->ki", C, qd) + jaxid.rnea(ur5, q, z, z)
    np.testing.assert_allclose(lhs, jaxid.rnea(ur5, q, qd, z), atol=1e-10)


@eqx.filter_jit
def _mdot(robot, q, qd):
    """dM/dt = dM/dq qd at every state of a batch."""
    return jax.jvp(lambda x: jaxid.mass_matrix(robot, x), (q,), (qd,))[1]


@given(state=states((8, 6)))
def test_mdot_minus_2c_is_skew_symmetric(ur5, state):
    q, qd, _ = state
    # The batch's coriolis_matrix program is the one test_coriolis_reproduces_velocity_terms compiled.
    N = np.asarray(_mdot(ur5, q, qd) - 2 * jaxid.coriolis_matrix(ur5, q, qd))
    np.testing.assert_allclose(N, -np.swapaxes(N, 1, 2), atol=1e-10)


def _energy(robot, q, qd):
    return kinetic_energy(robot, q, qd) + potential_energy(robot, q)


def test_energy_conserved_and_drift_shrinks_with_step():
    # A 3-link arm keeps the RK4 compile small; the identities above cover the UR5.
    robot = jaxid.models.planar(3, [0.5, 0.4, 0.3], [2.0, 1.0, 0.5])
    q0 = jnp.array([0.3, -1.0, 0.8])
    qd0 = jnp.array([1.5, -2.0, 3.0])
    energy = jax.jit(jax.vmap(lambda a, b: _energy(robot, a, b)))
    free = lambda t, q, qd: jnp.zeros(3)  # noqa: E731  (one object: simulate compiles once)
    drifts = []
    # The same 401-sample grid (one compile) over 1 s and over its first 0.5 s: the drift
    # over [0, 0.5] s at step h and at step h/2.
    for T in (1.0, 0.5):
        t = jnp.linspace(0.0, T, 401)
        q, qd, _, _ = jaxid.simulate(robot, free, q0, qd0, t)
        E = energy(q, qd)[: 201 if T == 1.0 else None]  # E[0]: the energy of (q0, qd0)
        drifts.append(float(jnp.max(jnp.abs(E - E[0]))))
    assert drifts[0] < 1e-4 * max(1.0, abs(float(E[0])))
    assert drifts[1] < drifts[0] / 8  # RK4: error ~ h^4


@jax.jit  # one program per chain length instead of every primitive of the derivatives compiled eagerly
def planar_lagrange_torque(lengths, masses, g, q, qd, qdd):
    """Euler-Lagrange equations of a planar rod chain from its closed-form Lagrangian."""
    l, m = jnp.asarray(lengths), jnp.asarray(masses)

    def lagrangian(q, qd):
        phi, phid = jnp.cumsum(q), jnp.cumsum(qd)
        e = jnp.stack([jnp.cos(phi), jnp.sin(phi)], 1)
        ed = jnp.stack([-jnp.sin(phi), jnp.cos(phi)], 1) * phid[:, None]
        joints = jnp.concatenate([jnp.zeros((1, 2)), jnp.cumsum(l[:, None] * e, 0)[:-1]])
        jointsd = jnp.concatenate([jnp.zeros((1, 2)), jnp.cumsum(l[:, None] * ed, 0)[:-1]])
        c, cd = joints + 0.5 * l[:, None] * e, jointsd + 0.5 * l[:, None] * ed
        T = 0.5 * jnp.sum(m * jnp.sum(cd**2, 1)) + 0.5 * jnp.sum(m * l**2 / 12 * phid**2)
        return T - g * jnp.sum(m * c[:, 1])

    H = jax.hessian(lagrangian, argnums=1)(q, qd)
    mixed = jax.jacfwd(jax.grad(lagrangian, argnums=1), argnums=0)(q, qd)
    return H @ qdd + mixed @ qd - jax.grad(lagrangian, argnums=0)(q, qd)


L1, L2, M1, M2, G = 0.7, 0.5, 2.0, 1.5, 9.81


@pytest.fixture(scope="module")
def planar2():
    return jaxid.models.planar(2, [L1, L2], [M1, M2])


@given(state=states((2,)))
def test_planar2_closed_form(planar2, state):
    q, qd, qdd = state
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    I1, I2 = M1 * L1**2 / 12, M2 * L2**2 / 12
    M11 = I1 + I2 + M1 * L1**2 / 4 + M2 * (L1**2 + L2**2 / 4 + L1 * L2 * c2)
    M12 = I2 + M2 * (L2**2 / 4 + L1 * L2 * c2 / 2)
    M22 = I2 + M2 * L2**2 / 4
    h = M2 * L1 * L2 * s2 / 2
    G1 = (M1 * L1 / 2 + M2 * L1) * G * np.cos(q[0]) + M2 * L2 / 2 * G * np.cos(q[0] + q[1])
    G2 = M2 * L2 / 2 * G * np.cos(q[0] + q[1])
    tau = np.array(
        [
            M11 * qdd[0] + M12 * qdd[1] - h * (2 * qd[0] * qd[1] + qd[1] ** 2) + G1,
            M12 * qdd[0] + M22 * qdd[1] + h * qd[0] ** 2 + G2,
        ]
    )
    np.testing.assert_allclose(jaxid.rnea(planar2, q, qd, qdd), tau, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3])
@given(lengths=bounded((3,), 0.3, 1.0), masses=bounded((3,), 0.5, 3.0), state=states((3,)))
def test_planar_matches_lagrangian(n, lengths, masses, state):
    lengths, masses = lengths[:n], masses[:n]
    q, qd, qdd = (x[:n] for x in state)
    robot = jaxid.models.planar(n, lengths, masses)
    np.testing.assert_allclose(
        jaxid.rnea(robot, q, qd, qdd), planar_lagrange_torque(lengths, masses, 9.81, q, qd, qdd), atol=1e-11
    )


@pytest.fixture(scope="module")
def planar3_both_dh():
    """The standard-DH planar arm and its modified-DH twin."""
    l, m = np.array([0.6, 0.4, 0.3]), np.array([2.0, 1.0, 0.5])
    std = jaxid.models.planar(3, l, m)
    table = np.array([[0, 0, 0, 0], [0, 0, l[0], 0], [0, 0, l[1], 0]], dtype=float)
    coms = np.stack([l / 2, np.zeros(3), np.zeros(3)], 1)
    inertias = np.stack([np.diag([0, mi * li**2 / 12, mi * li**2 / 12]) for mi, li in zip(m, l)])
    mod = jaxid.Robot.from_dh(table, "modified", masses=m, coms=coms, inertias=inertias, gravity=(0, -9.81, 0))
    return std, mod


@given(state=states((3,)))
def test_modified_dh_equals_standard_dh(planar3_both_dh, state):
    std, mod = planar3_both_dh
    np.testing.assert_allclose(jaxid.rnea(mod, *state), jaxid.rnea(std, *state), atol=1e-12)


def test_gradients_against_finite_differences(ur5_friction, states):
    q, qd, qdd = (jnp.asarray(x[0]) for x in states)
    theta = ur5_friction.parameter_vector()
    # One jitted function of (theta, q, qd): a jvp and a vjp program, instead of every
    # primitive compiled on its own in eager mode.
    f = jax.jit(lambda th, a, b: ur5_friction.torque(th, a, b, qdd))
    check_grads(f, (theta, q, qd), order=1, modes=("fwd", "rev"), eps=1e-6)


def test_batched_shapes_and_errors(ur5):
    q = np.zeros((2, 3, 6))
    assert jaxid.rnea(ur5, q, q, q).shape == (2, 3, 6)
    with pytest.raises(ValueError, match="n=6 joints"):
        jaxid.rnea(ur5, np.zeros(5), np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError, match="batch shapes"):
        jaxid.rnea(ur5, np.zeros((3, 6)), np.zeros((4, 6)), np.zeros((3, 6)))
    # A padded batch is cut back to its samples on the host, and inside an outer jit (concrete
    # inputs, traced outputs) by the compiled cut: the same torques either way.
    q = np.random.default_rng(0).normal(size=(700, 6))
    host = jaxid.rnea(ur5, q, q, q)
    assert host.shape == (700, 6)
    np.testing.assert_array_equal(jax.jit(lambda s: s * jaxid.rnea(ur5, q, q, q))(1.0), host)


def _random_tree(n=6, seed=0):
    """A spatial tree (a branch at link 2) with revolute and prismatic joints,
    random placements, axes and physical bodies."""
    rng = np.random.default_rng(seed)
    T = np.zeros((n, 4, 4))
    for i in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        T[i, :3, :3], T[i, :3, 3], T[i, 3, 3] = Q * np.sign(np.linalg.det(Q)), rng.normal(size=3) * 0.3, 1.0
    m, c = rng.uniform(0.5, 3.0, n), rng.normal(size=(n, 3)) * 0.1
    inertial = np.stack(
        [
            np.asarray(jaxid.model.inertia.from_mass_com_inertia(m[i], c[i], np.diag(rng.uniform(0.01, 0.1, 3)) * m[i]))
            for i in range(n)
        ]
    )
    parents = [-1, 0, 1, 2, 1, 4][:n]
    types = ["R", "R", "P", "R", "R", "P"][:n]
    return jaxid.Robot(
        T,
        rng.normal(size=(n, 3)),
        inertial,
        joint_types=types,
        parents=parents,
        joint_terms=("fv", "ia"),
        joint_params=rng.uniform(0.1, 1.0, (n, 2)),
    )


@eqx.filter_jit
def _both_ways(robot, q, qd, qdd):
    """(recursive, wide) rnea, (crba, jacfwd of the wide rnea), (mass_matrix, jacfwd of torque)
    at a batch of states."""
    from jaxid.dynamics import rnea

    def one(q, qd, qdd):
        zero = jnp.zeros_like(q)
        M = jax.jacfwd(lambda x: rnea.rnea_wide(robot, robot.inertial, q, zero, x))(zero)
        full = jax.jacfwd(lambda x: robot.torque(robot.parameter_vector(), q, zero, x))(zero)
        return (
            (rnea.rnea_recursive(robot, robot.inertial, q, qd, qdd), rnea.rnea_wide(robot, robot.inertial, q, qd, qdd)),
            (rnea.crba(robot, robot.inertial, q), M),
            (robot.mass_matrix(robot.parameter_vector(), q), full),
        )

    return jax.vmap(one)(q, qd, qdd)


@pytest.fixture(scope="module", params=[jaxid.models.ur5, _random_tree], ids=["ur5", "tree"])
def six_joints(request):
    return request.param()


@given(state=states((4, 6)))
def test_recursive_rnea_and_crba_equal_the_wide_formulation(six_joints, state):
    for fast, reference in _both_ways(six_joints, *state):  # the public mass_matrix includes the rotor inertia
        assert np.allclose(fast, reference, rtol=0, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(reference)))))


@pytest.mark.parametrize("make", [lambda: _random_tree(), lambda: _coupled_tree()])
def test_crba_column_forms_agree(make, monkeypatch):
    """The CRBA's two column stages (carried to the ancestors; paired in the base frame and masked
    by the ancestor matrix, from CRBA_WIDE_FROM joints) give one mass matrix on a branched tree
    with prismatic and coupled joints."""
    from jaxid.dynamics import rnea

    robot = make()
    q = np.random.default_rng(4).normal(size=(3, robot.n))
    M = {}
    for wide_from in (0, robot.n + 1):
        monkeypatch.setattr(rnea, "CRBA_WIDE_FROM", wide_from)
        M[wide_from] = np.asarray(jax.jit(jax.vmap(lambda q: rnea.crba(robot, robot.inertial, q)))(q))
    np.testing.assert_allclose(M[0], M[robot.n + 1], rtol=0, atol=1e-13 * np.abs(M[0]).max())


def _coupled_tree():
    """``_random_tree`` with its last (prismatic) joint coupled to joint 4 and every joint term on."""
    r = _random_tree()
    mimic = [None] * 5 + [(4, 0.7, 0.2)]
    terms = jaxid.model.robot.JOINT_TERMS
    return jaxid.Robot(
        r.placements,
        r.axes,
        r.inertial,
        joint_types=r.joint_types,
        parents=r.parents,
        mimic=mimic,
        joint_terms=terms,
        joint_params=np.random.default_rng(3).uniform(0.1, 1.0, (6, len(terms))),
    )


@eqx.filter_jit
def _joint_columns_both_ways(robot, q, qd, qdd):
    """(written-out joint columns of the regressor, jacfwd of the joint torque), (Y theta, torque)."""
    theta = robot.parameter_vector()
    _, joint_params = robot.split(theta)
    Y = jax.vmap(lambda a, b, c: robot.regressor(theta, a, b, c))(q, qd, qdd)
    joint = jax.vmap(lambda a, b, c: jax.jacfwd(robot.joint_torque)(joint_params, a, b, c).reshape(robot.n, -1))(
        q, qd, qdd
    )
    tau = jax.vmap(lambda a, b, c: robot.torque(theta, a, b, c))(q, qd, qdd)
    return (Y[:, :, 10 * robot.n_joints :], joint), (Y @ theta, tau)


@pytest.fixture(scope="module")
def coupled_tree():
    return _coupled_tree()


@given(state=states((5, 6)))
def test_written_out_joint_columns_equal_jacfwd_of_the_joint_torque(coupled_tree, state):
    """Robot.regressor's joint-term columns (written out, ``robot.joint_columns``) == jax.jacfwd
    of Robot.joint_torque, and Y theta == the torque, on a tree with prismatic, coupled joints
    and every joint term."""
    for fast, reference in _joint_columns_both_ways(coupled_tree, *state):
        assert np.allclose(
            fast, reference, rtol=0, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(reference), initial=0.0)))
        )
