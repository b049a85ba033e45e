"""Simulated experiments: consistent perturbation, friction ranges, noise statistics, payload physics."""

import jax
import numpy as np
import pytest

import jaxid
from jaxid import simulation as S
from jaxid.model import inertia

# One length for every trajectory: each new shape would compile the dynamics again.
T = np.linspace(0.0, 4.0, 400)


def trajectory(n, seed=0):
    """Sum of three sines per joint: (t, q, qd, qdd) with exact derivatives."""
    t = T
    w = 2 * np.pi * np.array([0.25, 0.5, 0.75])
    a = np.random.default_rng(seed).normal(size=(3, n)) * 0.4
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return t, s @ a, (c * w) @ a, (-s * w**2) @ a


@pytest.mark.parametrize("name", ["ur5", "planar2"])
def test_perturb_keeps_every_link_physically_consistent(name):
    robot = jaxid.models.ur5() if name == "ur5" else jaxid.models.planar(2)
    scale = 0.5
    for seed in range(4):
        true = S.perturb(robot, jax.random.PRNGKey(seed), scale)
        assert np.all(np.asarray(inertia.is_consistent(true.inertial)))
        # Pseudo-inertia strictly positive definite, not just at the boundary.
        lam = np.linalg.eigvalsh(np.asarray(jax.vmap(inertia.pseudo_inertia)(true.inertial)))
        assert np.all(lam[:, 0] > 0)
        ratio = np.asarray(true.inertial[:, 0] / robot.inertial[:, 0])
        assert np.all((ratio >= 1 - scale) & (ratio <= 1 + scale))
        # A different link body, not a copy.
        assert not np.allclose(np.asarray(true.inertial), np.asarray(robot.inertial))


def test_perturb_is_seeded_and_scale_zero_keeps_the_bodies(ur5):
    a = S.perturb(ur5, jax.random.PRNGKey(3))
    b = S.perturb(ur5, jax.random.PRNGKey(3))
    c = S.perturb(ur5, jax.random.PRNGKey(4))
    np.testing.assert_array_equal(np.asarray(a.parameter_vector()), np.asarray(b.parameter_vector()))
    assert not np.allclose(np.asarray(a.parameter_vector()), np.asarray(c.parameter_vector()))
    # The UR5's cylinders are well inside the physical set: scale 0 changes no body.
    same = S.perturb(ur5, jax.random.PRNGKey(3), scale=0.0)
    np.testing.assert_allclose(np.asarray(same.inertial), np.asarray(ur5.inertial), rtol=1e-12, atol=1e-14)
    # Traced in the key (a batch of true robots under vmap, or inside jit): the same draws as the
    # concrete call, which computes the friction on the host.
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    batch = jax.vmap(lambda k: S.perturb(ur5, k).parameter_vector())(keys)
    for k, theta in zip(keys, np.asarray(batch)):
        np.testing.assert_allclose(theta, np.asarray(S.perturb(ur5, k).parameter_vector()), rtol=1e-12, atol=1e-15)


def test_friction_is_drawn_within_the_documented_ranges(ur5):
    true = S.perturb(ur5, jax.random.PRNGKey(0), friction=("fv", "fc", "offset"))
    assert true.joint_terms == ("fv", "fc", "offset")
    T_j = S.torque_scale(ur5)
    np.testing.assert_array_equal(T_j, np.asarray(ur5.tau_max))
    for k, term in enumerate(true.joint_terms):
        lo, hi = S.FRICTION_RANGES[term]
        v = np.asarray(true.joint_params[:, k]) / T_j
        assert np.all((v >= lo) & (v <= hi)), term
    # Without torque limits the scale comes from gravity: planar2 holds 2 kg at up to 1.5 m.
    np.testing.assert_allclose(S.torque_scale(jaxid.models.planar(2))[0], 9.81 * (0.5 + 1.5), rtol=0.1)
    # A coupled joint (a gripper's mimic finger) takes its master's torque scale: the joint terms
    # are per joint (3), the scales per coordinate (2).
    p = ur5
    coupled = jaxid.Robot(
        p.placements[:3], p.axes[:3], p.inertial[:3], mimic=[None, None, (1, 0.5, 0.0)], tau_max=p.tau_max[:2]
    )
    true = S.perturb(coupled, jax.random.PRNGKey(0), friction=("fv", "fc", "offset"))
    scale = np.asarray(p.tau_max)[[0, 1, 1]]
    for k, term in enumerate(true.joint_terms):
        lo, hi = S.FRICTION_RANGES[term]
        v = np.asarray(true.joint_params[:, k]) / scale
        assert true.joint_params.shape == (3, 3) and np.all((v >= lo) & (v <= hi)), term
    # Placeholder limits are no torque scale: a light arm (0.1 kg links, gravity torque < 0.1 N m)
    # with effort 1000 N m (example-robot-data's finger_edu) gets friction on its gravity torques,
    # with a warning, not 10-50 N m of Coulomb friction that would bury its dynamics.
    light = jaxid.models.planar(2)
    light = jaxid.Robot(
        light.placements, light.axes, light.inertial * 0.05, gravity=light.gravity, tau_max=np.array([1000.0, 1000.0])
    )
    with pytest.warns(UserWarning, match=r"torque limits up to 1000 N m are \d+x .* placeholders"):
        T_light = S.torque_scale(light)
    assert np.all(T_light < 2.0) and np.all(T_light > 0)
    np.testing.assert_allclose(T_light[0], 0.05 * 9.81 * (0.5 + 1.5), rtol=0.1)
    # Terms already enabled and not drawn keep their values.
    with_ia = jaxid.models.planar(2).with_joint_terms(("ia",), np.array([[0.3], [0.2]]))
    true = S.perturb(with_ia, jax.random.PRNGKey(0), friction=("fc",))
    assert true.joint_terms == ("ia", "fc")
    np.testing.assert_array_equal(np.asarray(true.joint_params[:, 0]), [0.3, 0.2])


def test_measure_truth_and_noise_statistics():
    robot = S.perturb(jaxid.models.planar(2), jax.random.PRNGKey(1))
    t, q, qd, qdd = trajectory(2)
    sigma = np.array([0.05, 0.02])
    m = S.measure(robot, t, q, qd, qdd, jax.random.PRNGKey(2), sigma_q=1e-3, tau_sigma=sigma)
    np.testing.assert_allclose(np.asarray(m.tau), np.asarray(jaxid.rnea(robot, q, qd, qdd)), atol=1e-12)
    assert m.data.qd is None and m.data.qdd is None and len(m.data) == len(t)
    eq, et = np.asarray(m.data.q) - q, np.asarray(m.data.tau) - np.asarray(m.tau)
    # 400 samples: the sample std is within ~4 standard errors (4 x 3.5 %) of the true one.
    np.testing.assert_allclose(eq.std(axis=0), 1e-3, rtol=0.15)
    np.testing.assert_allclose(et.std(axis=0), sigma, rtol=0.15)
    assert np.all(np.abs(eq.mean(axis=0)) < 4 * 1e-3 / np.sqrt(len(t)))
    # Relative torque noise: a fraction of each joint's torque range.
    m = S.measure(robot, t, q, qd, qdd, jax.random.PRNGKey(2), tau_rel=0.01)
    tau = np.asarray(m.tau)
    np.testing.assert_allclose(np.asarray(m.sigma_tau), 0.01 * (tau.max(0) - tau.min(0)))


def test_encoder_quantisation():
    robot = jaxid.models.planar(2)
    t, q, qd, qdd = trajectory(2)
    step = 2 * np.pi / 2**12
    m = S.measure(robot, t, q, qd, qdd, jax.random.PRNGKey(0), sigma_q=0.0, quantization=step, tau_sigma=0.0)
    qm = np.asarray(m.data.q)
    np.testing.assert_allclose(qm / step, np.round(qm / step), atol=1e-9)
    assert np.max(np.abs(qm - q)) <= step / 2 + 1e-12
    np.testing.assert_array_equal(np.asarray(m.data.tau), np.asarray(m.tau))


def test_payload_adds_the_static_torque_of_a_point_mass():
    # planar2, arm stretched along x at q = 0, gravity -y: a point mass m at the flange
    # (x = 2 m from joint 1, 1 m from joint 2) needs m g x more holding torque.
    robot = jaxid.models.planar(2)
    t = T
    zero = np.zeros((len(T), 2))
    mass = 1.5
    payload = S.payload_vector(mass, [0.0, 0.0, 0.0])
    bare = S.measure(robot, t, zero, zero, zero, jax.random.PRNGKey(0), tau_sigma=0.0, sigma_q=0.0)
    loaded = S.measure(robot, t, zero, zero, zero, jax.random.PRNGKey(0), tau_sigma=0.0, sigma_q=0.0, payload=payload)
    np.testing.assert_allclose(
        np.asarray(loaded.tau - bare.tau), np.tile([2 * mass * 9.81, mass * 9.81], (len(T), 1)), rtol=1e-12
    )
    # A box payload: mass, centre and inertia as given.
    box = S.payload_vector(2.0, [0.1, 0.0, 0.05], box=(0.1, 0.2, 0.3))
    m, c, I_c = inertia.to_mass_com_inertia(box)
    np.testing.assert_allclose(np.asarray(c), [0.1, 0.0, 0.05])
    np.testing.assert_allclose(np.asarray(I_c), np.asarray(inertia.box_inertia(2.0, (0.1, 0.2, 0.3))), atol=1e-15)


def test_simulate_combines_perturb_and_measure():
    robot = jaxid.models.planar(2)
    t, q, qd, qdd = trajectory(2)
    m = S.simulate(robot, t, q, qd, qdd, jax.random.PRNGKey(5), scale=0.3)
    k_true, _ = jax.random.split(jax.random.PRNGKey(5))
    true = S.perturb(robot, k_true, 0.3)
    np.testing.assert_array_equal(np.asarray(m.robot.parameter_vector()), np.asarray(true.parameter_vector()))


def test_bad_input_is_rejected():
    robot = jaxid.models.planar(2)
    t, q, qd, qdd = trajectory(2)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="scale must be in"):
        S.perturb(robot, key, scale=1.0)
    with pytest.raises(ValueError, match="unknown friction"):
        S.perturb(robot, key, friction=("stribeck",))
    with pytest.raises(ValueError, match="either tau_sigma"):
        S.measure(robot, t, q, qd, qdd, key, tau_sigma=0.1, tau_rel=0.01)
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        S.measure(robot, t, q[:, :1], qd, qdd, key)
    with pytest.raises(ValueError, match="NaN"):
        S.measure(robot, t, np.where(t[:, None] > 0.1, np.nan, q), qd, qdd, key)
    with pytest.raises(ValueError, match="quantization"):
        S.measure(robot, t, q, qd, qdd, key, quantization=-1.0)
    with pytest.raises(ValueError, match="mass must be > 0"):
        S.payload_vector(0.0, [0, 0, 0])
    with pytest.raises(ValueError, match="box must be three finite sizes > 0"):
        S.payload_vector(1.0, [0, 0, 0], box=(-0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="coulomb_eps must be a finite velocity > 0"):
        jaxid.Robot(np.tile(np.eye(4), (2, 1, 1)), np.tile([0.0, 0.0, 1.0], (2, 1)), np.zeros((2, 10)), coulomb_eps=0.0)
    with pytest.raises(ValueError, match="increase strictly"):
        S.measure(robot, t[::-1], q, qd, qdd, key)


def test_gaussian_noise_levels_and_independence():
    """Noise of each array has its own standard deviation, zero mean, and is independent of
    the other arrays' (a different subkey each); sigma 0 returns the array unchanged."""
    x = np.zeros((20000, 2))
    a, b, c = S.gaussian_noise(jax.random.key(0), (x, x, x + 1.0), (0.5, 2.0, 0.0))
    np.testing.assert_allclose([np.std(a), np.std(b)], [0.5, 2.0], rtol=0.03)
    assert abs(np.mean(a)) < 0.02 and abs(np.corrcoef(np.ravel(a), np.ravel(b))[0, 1]) < 0.03
    np.testing.assert_array_equal(c, 1.0)


def test_seed_key_is_jax_prngkey():
    """``arrays.seed_key`` (the simulate command's keys, made on the host) is jax.random.PRNGKey's key,
    word for word, for small, large and negative seeds; other generators go to jax."""
    import jax

    from jaxid.arrays import seed_key

    for seed in (0, 1, 42, 2**31 + 3, 2**32 + 5, 2**62 + 7, -1, -(2**40) - 9, np.int64(7), np.uint32(9)):
        key = seed_key(seed)
        assert isinstance(key, jax.Array)
        np.testing.assert_array_equal(key, jax.random.PRNGKey(seed), err_msg=str(seed))
        assert key.dtype == jax.random.PRNGKey(seed).dtype
    np.testing.assert_array_equal(jax.random.normal(seed_key(5), (3,)), jax.random.normal(jax.random.PRNGKey(5), (3,)))
