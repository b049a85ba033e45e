"""Bounding ellipsoids of links (jaxid.model.geometry.bounding_ellipsoid) and the ellipsoid
bounds of a consistent fit (Bounds.ellipsoid_*, workflow.consistency.geometry_bounds): they hold
the geometry and the nominal body, and bad ellipsoids are named."""

import numpy as np
import pytest

import jaxid
from jaxid.identification.consistent import Bounds
from jaxid.identification.consistent import _interior_start as interior_start
from jaxid.model import geometry, inertia
from jaxid.workflow import commands, requests
from jaxid.workflow.consistency import geometry_bounds


def _radius(c, A, x):
    return np.linalg.norm(np.linalg.solve(A, (np.atleast_2d(x) - c).T), axis=0)


def test_ellipsoid_holds_random_capsules_and_is_tight_for_a_sphere():
    rng = np.random.default_rng(1)
    for _ in range(5):
        caps = [(rng.normal(size=3) * 0.2, rng.normal(size=3) * 0.2, rng.uniform(0.01, 0.08)) for _ in range(3)]
        c, A = geometry.bounding_ellipsoid(caps)
        for a, b, r in caps:  # points of each capsule: on its axis plus up to r in any direction
            d = rng.normal(size=(400, 3))
            d *= (r * rng.uniform(0, 1, size=400) ** (1 / 3) / np.linalg.norm(d, axis=1))[:, None]
            x = a + rng.uniform(size=(400, 1)) * (b - a) + d
            assert np.all(_radius(c, A, x) <= 1 + 1e-9)
    # a sphere's (a point capsule's) ellipsoid is that sphere, plus the margin on every axis
    c, A = geometry.bounding_ellipsoid([(np.ones(3), np.ones(3), 0.1)], margin=0.02)
    np.testing.assert_allclose(c, 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.svd(A, compute_uv=False), 0.12, rtol=5e-3)


def test_geometry_bounds_hold_the_nominal_bodies_and_the_cli_default_uses_them():
    robot = jaxid.models.ur5()
    b = geometry_bounds(robot)
    assert np.all(b.ellipsoid_links())
    pis = np.asarray(robot.parameter_vector()[: 10 * robot.n]).reshape(robot.n, 10)
    # the nominal centres of mass are strictly inside
    c = pis[:, 1:4] / pis[:, :1]
    assert all(_radius(b.ellipsoid_center[i], b.ellipsoid_axes[i], c[i])[0] < 1 for i in range(robot.n))
    # each ellipsoid holds its link's capsules (the built-in UR5's)
    caps = geometry.ur5()
    for k, i in enumerate(np.asarray(caps.link)):
        if i >= 0:
            assert np.all(_radius(b.ellipsoid_center[i], b.ellipsoid_axes[i], [caps.a[k], caps.b[k]]) < 1)
    # the command line's default bounds of --consistent are these; --no-ellipsoid drops them
    cli = commands.bounds(requests.BoundsSpec(), robot)
    np.testing.assert_allclose(cli.ellipsoid_axes, b.ellipsoid_axes)
    assert commands.bounds(requests.BoundsSpec(ellipsoid=False), robot) is None
    both = commands.bounds(requests.BoundsSpec(mass_tol=0.3), robot)
    assert np.all(both.ellipsoid_links()) and np.all(np.isfinite(both.mass_max))


def test_the_start_of_the_fit_is_strictly_inside_the_ellipsoids():
    """A nominal body that fills its ellipsoid is moved inside (its spread shrunk) for the start."""
    robot = jaxid.models.planar(2)
    pis = np.asarray(robot.parameter_vector()[:20]).reshape(2, 10)
    c = pis[:, 1:4] / pis[:, :1]
    # a sphere about each centre of mass just wider than the body's own spread
    b = Bounds.make(robot, ellipsoid_center=c, ellipsoid_axes=np.stack([0.3 * np.eye(3)] * 2))
    start = interior_start(robot, pis, b)
    J = np.stack([np.asarray(inertia.pseudo_inertia(p)) for p in start])
    assert np.all(np.einsum("nij,nji->n", b.ellipsoid_Q(), J) > 0)
    np.testing.assert_allclose(start[:, 0], pis[:, 0])


def test_bad_ellipsoids_are_named():
    robot = jaxid.models.planar(2)
    eye = np.stack([0.2 * np.eye(3)] * 2)
    flat = eye.copy()
    flat[1, 2, 2] = 0.0
    with pytest.raises(ValueError, match=r"link joint2: the bounding ellipsoid is flat"):
        Bounds.make(robot, ellipsoid_axes=flat)
    with pytest.raises(ValueError, match=r"link joint1: the bounding ellipsoid is not finite"):
        Bounds.make(robot, ellipsoid_center=[[np.nan, 0, 0], [0, 0, 0]], ellipsoid_axes=eye)
    with pytest.raises(ValueError, match=r"link joint1: the centre-of-mass box does not meet the bounding ellipsoid"):
        Bounds.make(robot, com_min=[[1.0, -1, -1], [-1, -1, -1]], ellipsoid_axes=eye)
    with pytest.raises(ValueError, match=r"link joint1: two bounding ellipsoids"):
        Bounds.make(robot, ellipsoid_axes=eye).intersect(Bounds.make(robot, ellipsoid_axes=eye))
    # an ellipsoid (about the origin) that cannot hold the nominal centre of mass (0.5 m out)
    pis = np.asarray(robot.parameter_vector()[:20]).reshape(2, 10)
    with pytest.raises(ValueError, match=r"link joint1: the nominal centre of mass .* outside its bounding ellipsoid"):
        interior_start(robot, pis, Bounds.make(robot, ellipsoid_axes=eye))
