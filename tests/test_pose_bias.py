"""A pose-dependent bias on any torque model (``jaxid.models.pose_bias``, seed 000 section 6.5)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.models import nonlinear_6dof, planar, pose_bias


def _states(key, N, n, lo=-1.5, hi=1.5):
    k1, k2, k3 = jax.random.split(key, 3)
    q = jax.random.uniform(k1, (N, n), minval=lo, maxval=hi)
    return q, jax.random.normal(k2, (N, n)), jax.random.normal(k3, (N, n))


@pytest.mark.parametrize(
    "base,kw",
    [
        (nonlinear_6dof(), dict(order=2)),
        (nonlinear_6dof(), dict(order=1, coupled=True)),
        (nonlinear_6dof(), dict(order=3, basis="poly")),
        (planar(2), dict(order=1)),
    ],
)
def test_linear_in_its_parameters_and_named_by_the_same_code(base, kw):
    """Y @ theta reproduces the torque at random states; one unique name per column."""
    shape = pose_bias(base, **kw).gamma.shape
    gamma = jax.random.normal(jax.random.PRNGKey(1), shape)
    model = pose_bias(base, gamma=gamma, **kw)
    q, qd, qdd = _states(jax.random.PRNGKey(0), 5, model.n)
    Y = jaxid.regressor(model, q, qd, qdd)
    theta = model.parameter_vector()
    np.testing.assert_allclose(Y @ theta, jaxid.rnea(model, q, qd, qdd), rtol=1e-12, atol=1e-12)
    names = model.parameter_names()
    assert len(names) == len(set(names)) == theta.shape[0] == Y.shape[-1]
    base_torque = jaxid.rnea(base, q, qd, qdd)
    phi = jax.vmap(model.features)(q)  # (N, n, K): the bias is what the basis adds to the base model
    if kw.get("coupled"):
        bias = jnp.einsum("ijk,njk->ni", gamma, phi)
    else:
        bias = jnp.einsum("ik,nik->ni", gamma[:, 0], phi)
    np.testing.assert_allclose(jaxid.rnea(model, q, qd, qdd), base_torque + bias, rtol=1e-12, atol=1e-12)


def test_a_constant_bias_fitted_across_poses_misses_another_pose_range():
    """The article's lesson: a six-DOF system whose bias follows the pose (a gravity-like
    g_i(q) = a_i cos q_i + b_i sin q_i on top of the constant) identified with the constant bias
    alone fits its training poses passably and predicts another pose range badly; with the pose
    basis its parameters are recovered from exact data and the other range is predicted exactly."""
    truth = pose_bias(nonlinear_6dof(), gamma=jnp.stack([0.4 * jnp.ones(6), -0.3 * jnp.ones(6)], -1)[:, None])
    q, qd, qdd = _states(jax.random.PRNGKey(2), 400, 6, -1.2, 0.6)  # training poses
    qv, qdv, qddv = _states(jax.random.PRNGKey(3), 200, 6, 0.6, 1.6)  # another range
    tau, tau_v = jaxid.rnea(truth, q, qd, qdd), jaxid.rnea(truth, qv, qdv, qddv)

    def fit_and_predict(model):
        W, y = jaxid.identification.regressor.stack(jaxid.regressor(model, q, qd, qdd), tau)
        theta = jnp.linalg.lstsq(W, y)[0]
        Wv = jaxid.identification.regressor.stack(jaxid.regressor(model, qv, qdv, qddv))
        fit = float(jnp.linalg.norm(W @ theta - y) / jnp.linalg.norm(y))
        held = float(jnp.linalg.norm(Wv @ theta - tau_v.ravel()) / jnp.linalg.norm(tau_v))
        return theta, fit, held

    _, fit_c, held_c = fit_and_predict(nonlinear_6dof())
    theta, fit_p, held_p = fit_and_predict(pose_bias(nonlinear_6dof()))
    np.testing.assert_allclose(theta, truth.parameter_vector(), rtol=1e-8, atol=1e-9)
    assert held_p < 1e-9
    assert held_c > 5 * fit_c > 0.0  # the constant bias degrades away from where it was fitted


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="basis"):
        pose_bias(nonlinear_6dof(), basis="spline")
    with pytest.raises(ValueError, match="order"):
        pose_bias(nonlinear_6dof(), order=0)
    with pytest.raises(ValueError, match=r"gamma must have shape \(6, 1, 2\)"):
        pose_bias(nonlinear_6dof(), gamma=np.zeros((6, 2)))
    with pytest.raises(ValueError, match="finite"):
        pose_bias(nonlinear_6dof(), gamma=np.full((6, 1, 2), np.nan))
