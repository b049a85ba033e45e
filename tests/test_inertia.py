"""Conversions of one body's inertial parameters (jaxid.model.inertia) as properties of
physically consistent bodies: 10-vector <-> (m, c, I_c), spatial and pseudo-inertia, frame
changes, the log-Cholesky parametrisation."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation
from strategies import bounded

import jaxid  # noqa: F401  (float64)
from jaxid.model import inertia


@st.composite
def bodies(draw):
    """(m kg, c (3,) m, I_c (3, 3) kg m^2 about c) of a rigid body: the inertia of second
    moments s (m^2) along principal axes rotated by a drawn rotation vector, so that it meets
    the triangle inequality."""
    m = draw(st.floats(0.1, 10.0))
    c = draw(bounded((3,), -0.5, 0.5))
    s = draw(bounded((3,), 1e-3, 0.1))
    R = Rotation.from_rotvec(draw(bounded((3,), -np.pi, np.pi))).as_matrix()
    return m, c, m * R @ np.diag(s.sum() - s) @ R.T


def poses():
    """4x4 rigid transforms: a drawn rotation vector and a translation in [-1, 1] m."""
    return st.builds(
        lambda r, p: np.block([[Rotation.from_rotvec(r).as_matrix(), p[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]),
        bounded((3,), -np.pi, np.pi),
        bounded((3,), -1.0, 1.0),
    )


@jax.jit
def _round_trips(pi):
    """pi through (m, c, I_c), the spatial inertia, the pseudo-inertia and log-Cholesky, back."""
    return (
        inertia.from_mass_com_inertia(*inertia.to_mass_com_inertia(pi)),
        inertia.from_spatial(inertia.spatial_inertia(pi)),
        inertia.from_pseudo_inertia(inertia.pseudo_inertia(pi)),
        inertia.log_cholesky_to_inertial(inertia.inertial_to_log_cholesky(pi)),
    )


@given(bodies())
def test_round_trips_of_a_physical_body(body):
    m, c, I_c = body
    pi = inertia.from_mass_com_inertia(m, c, I_c)
    back = inertia.to_mass_com_inertia(pi)
    np.testing.assert_allclose(back[0], m, rtol=1e-15)
    np.testing.assert_allclose(back[1], c, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(back[2], I_c, rtol=1e-9, atol=1e-12 * np.abs(I_c).max())
    for other in _round_trips(pi):
        np.testing.assert_allclose(other, pi, rtol=1e-12, atol=1e-14)
    assert inertia.physical_problem(m, I_c) is None
    assert bool(inertia.is_consistent(pi))


@jax.jit
def _log_cholesky_round_trip(z):
    pi = inertia.log_cholesky_to_inertial(z)
    return pi, inertia.inertial_to_log_cholesky(pi), inertia.is_consistent(pi)


@given(bounded((10,), -2.0, 2.0))
def test_every_log_cholesky_vector_is_a_body_with_that_vector(z):
    _, back, consistent = _log_cholesky_round_trip(z)
    assert bool(consistent)
    np.testing.assert_allclose(back, z, rtol=1e-9, atol=1e-9)


@jax.jit
def _there_and_back(pi, T):
    return inertia.transform(inertia.transform(pi, T), jnp.linalg.inv(T))


@given(bodies(), poses())
def test_transform_moves_the_body(body, T):
    """transform(pi, T) is the body at pose T: mass kept, centre of mass R c + p, inertia about
    it R I_c R^T; the inverse pose brings it back."""
    m, c, I_c = body
    R, p = T[:3, :3], T[:3, 3]
    pi = inertia.from_mass_com_inertia(m, c, I_c)
    moved = inertia.from_mass_com_inertia(m, R @ c + p, R @ I_c @ R.T)
    np.testing.assert_allclose(inertia.transform(pi, T), moved, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_there_and_back(pi, T), pi, rtol=1e-12, atol=1e-12)


def test_concrete_pseudo_inertias_are_numpy_and_agree_with_the_traced_ones():
    """A concrete argument is computed on the host (no program compiled), a traced one in jax:
    one formula, the same numbers, and the same consistency verdicts (with bodies on both sides)."""
    rng = np.random.default_rng(3)
    pi = rng.normal(size=(2, 4, 10))
    host = inertia.pseudo_inertias(pi)
    assert isinstance(host, np.ndarray) and host.shape == (2, 4, 4, 4)
    np.testing.assert_allclose(host, jax.jit(inertia.pseudo_inertias)(pi), rtol=0, atol=1e-15)
    np.testing.assert_allclose(host[1, 2], inertia.pseudo_inertia(jnp.asarray(pi[1, 2])), rtol=0, atol=1e-15)
    ok = inertia.is_consistent(pi)
    assert isinstance(ok, np.ndarray)
    np.testing.assert_array_equal(ok, jax.jit(inertia.is_consistent)(pi))
    body = np.asarray(inertia.from_mass_com_inertia(2.0, np.array([0.1, 0.0, 0.2]), 0.01 * np.eye(3)))
    assert inertia.is_consistent(body) and not inertia.is_consistent(body * np.r_[-1.0, np.ones(9)])


@given(bodies(), poses())
def test_transform_is_the_spatial_congruence(body, T):
    """The written-out transform (numpy on concrete values, jax traced) equals the spatial
    ``X^T I X`` of Featherstone's motion transform; a massless body with a moment is moved too."""
    from jaxid.dynamics import spatial

    m, c, I_c = body
    X = np.asarray(spatial.motion_transform(jnp.asarray(T)))
    for pi in (
        np.asarray(inertia.from_mass_com_inertia(m, c, I_c)),
        np.r_[0.0, 0.0, 0.0, 0.0, I_c[0, 0], 0, 1, 0, 0, 2],
    ):
        spatial_form = inertia.from_spatial(X.T @ np.asarray(inertia.spatial_inertia(jnp.asarray(pi))) @ X)
        host = inertia.transform(pi, T)
        assert isinstance(host, np.ndarray)
        np.testing.assert_allclose(host, spatial_form, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jax.jit(inertia.transform)(pi, T), host, rtol=1e-12, atol=1e-12)
