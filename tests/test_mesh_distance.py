"""The mesh-distance constraint of ``jaxid excite`` (issue 33): link pairs whose capsules cannot be
apart (two flat plates whose fat capsules always overlap) are checked on a lower bound of their
meshes' distance, which is never above the exact distance and differentiates."""

import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.dynamics.rnea import forward_kinematics_rp
from jaxid.excitation import mesh_distance
from jaxid.excitation.constraints import Constraints, mesh_pairs, relaxed_pairs
from jaxid.model import geometry

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'


def _box_triangles(size):
    """The 12 triangles (12, 3, 3) of a box of ``size`` (3,) m centred at 0."""
    h = np.asarray(size, dtype=float) / 2
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1)]
    faces += [(2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    return v[np.array(faces)]


def _write_stl(path, tri):
    with open(path, "wb") as fh:
        fh.write(b"\0" * 80 + struct.pack("<I", len(tri)))
        for t in tri:
            fh.write(struct.pack("<12fH", 0, 0, 0, *t.ravel(), 0))


def _exact(ta, tb):
    """Exact distance between two triangle sets (no intersection): the least of the vertex-triangle
    and edge-edge distances over all triangle pairs."""
    trimesh = pytest.importorskip("trimesh")
    best = np.inf
    for x, tris in ((ta.reshape(-1, 3), tb), (tb.reshape(-1, 3), ta)):
        for t in tris:
            c = trimesh.triangles.closest_point(np.repeat(t[None], len(x), 0), x)
            best = min(best, float(np.min(np.linalg.norm(c - x, axis=1))))
    ea = np.concatenate([ta, np.roll(ta, -1, axis=1)], axis=-1).reshape(-1, 2, 3)
    eb = np.concatenate([tb, np.roll(tb, -1, axis=1)], axis=-1).reshape(-1, 2, 3)
    i, j = np.meshgrid(np.arange(len(ea)), np.arange(len(eb)), indexing="ij")
    d = geometry.segment_distance(ea[i, 0], ea[i, 1], eb[j, 0], eb[j, 1], eps=0.0)
    return min(best, float(jnp.min(d)))


@pytest.fixture(scope="module")
def plates(tmp_path_factory):
    """A base plate and, two revolute joints out, a plate 12 mm above it that tilts by +-0.2 rad:
    their capsules (radius about half the plate) overlap in every pose, the meshes are 4-12 mm apart."""
    tmp = tmp_path_factory.mktemp("plates")
    _write_stl(tmp / "base.stl", _box_triangles([0.04, 0.04, 0.01]))
    _write_stl(tmp / "top.stl", _box_triangles([0.03, 0.03, 0.01]))
    urdf = tmp / "plates.urdf"
    urdf.write_text(f"""<robot name="plates">
      <link name="base"><collision><geometry><mesh filename="base.stl"/></geometry></collision></link>
      <link name="l1">{INERTIAL}</link>
      <link name="l2">{INERTIAL}<collision><origin xyz="0 0 0"/><geometry><mesh filename="top.stl"/></geometry></collision></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.022"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0"/>
        <axis xyz="1 0 0"/><limit lower="-0.2" upper="0.2" effort="10" velocity="2"/></joint>
    </robot>""")
    robot = jaxid.Robot.from_urdf(urdf)
    caps = geometry.from_urdf(urdf, robot, drop_always=False)
    return urdf, robot, caps


def test_a_pair_capsules_cannot_separate_gets_a_mesh_bound_below_the_exact_distance(plates):
    urdf, robot, caps = plates
    own, exempt = relaxed_pairs(robot, caps, 0.01)
    assert len(own) + len(exempt) == 1  # base/l2: capsules never 1 cm apart
    tris = geometry.link_triangles(urdf, robot, ["base", "l2"])
    assert set(tris) == {"base", "l2"} and tris["l2"][0] == 1 and tris["base"][0] == -1
    pairs, own2, exempt2, notes = mesh_pairs(robot, caps, tris, 0.01, own, exempt, samples=100)
    assert len(pairs) == 1 and own2 == () and len(exempt2) == 1 and "mesh bound" in notes[0]
    mp = pairs[0]
    assert 0.0 <= mp.clearance <= 0.01
    q = geometry.sample_poses(robot, 12, seed=3)
    R, p = jax.vmap(lambda x: forward_kinematics_rp(robot, x))(jnp.asarray(q))
    Rf, pf = mesh_distance.frames_of(np.asarray(R), np.asarray(p), mp.links)
    # jitted, as the library calls it: eagerly each of its few hundred operations compiles on its own
    bound = np.asarray(jax.jit(lambda R, p: mesh_distance.pair_bound(mp, R, p))(jnp.asarray(Rf), jnp.asarray(pf)))
    for k in range(len(q)):
        ta = tris[mp.names[0]][1] @ Rf[k, 0].T + pf[k, 0]
        tb = tris[mp.names[1]][1] @ Rf[k, 1].T + pf[k, 1]
        exact = _exact(ta, tb)
        # A lower bound, and a tight one: a few mm of slack (sphere radii, grid, sampling).
        assert bound[k] <= exact + 1e-9 and bound[k] >= exact - 0.006, (k, bound[k], exact)
    # The constraint in Constraints: labelled, its capsule pair gone, its gradient finite.
    con = Constraints(caps, clearance=0.01, floor=None, pair_clearance=own2, pair_exempt=exempt2, mesh_pairs=pairs)
    kinds, labels = con.labels(robot.parents)
    assert kinds == ["self-collision"] and "(mesh points" in labels[0]
    m = np.asarray(jax.jit(lambda x: con.margins(robot, x))(jnp.asarray(q)))[:, 0]
    np.testing.assert_allclose(m, bound - mp.clearance, atol=1e-12)
    g = jax.jit(jax.grad(lambda x: jnp.sum(con.margins(robot, x))))(jnp.asarray(q))
    assert np.all(np.isfinite(np.asarray(g))) and np.any(np.asarray(g)[:, 1] != 0)


def test_a_link_pair_on_its_mesh_bound_leaves_every_capsule_pair_of_its_links(plates, tmp_path):
    """The top link carries a second mesh 5 cm higher, whose capsule clears the base by more than
    the clearance (not relaxed): once the two links are checked on their meshes' bound, that
    capsule pair leaves the capsule rule too (the bound covers both of the link's meshes), else it
    would hold the links apart by more than the bound asks."""
    urdf, _, _ = plates
    text = urdf.read_text().replace(
        '<origin xyz="0 0 0"/><geometry><mesh filename="top.stl"/></geometry></collision>',
        '<origin xyz="0 0 0"/><geometry><mesh filename="top.stl"/></geometry></collision>'
        '<collision><origin xyz="0 0 0.05"/><geometry><mesh filename="top.stl"/></geometry></collision>',
    )
    two = urdf.parent / "plates_two.urdf"
    two.write_text(text)
    robot = jaxid.Robot.from_urdf(two)
    caps = geometry.from_urdf(two, robot, drop_always=False)
    on_l2 = [k for k, name in enumerate(caps.names) if name == "l2"]
    assert len(on_l2) == 2
    own, exempt = relaxed_pairs(robot, caps, 0.01)
    relaxed = {frozenset(row[:2]) for row in (*own, *exempt)}
    assert len(relaxed) == 1  # the lower plate's capsule pair only
    tris = geometry.link_triangles(two, robot, ["base", "l2"])
    pairs, own2, exempt2, _ = mesh_pairs(robot, caps, tris, 0.01, own, exempt, samples=100)
    assert len(pairs) == 1 and own2 == ()
    every = {frozenset(map(int, row)) for row in caps.pairs(robot.parents)}
    assert {frozenset(row) for row in exempt2} == every and len(every) == 2


def test_surface_samples_cover_the_triangles():
    tri = _box_triangles([0.02, 0.005, 0.01])
    P, eps = mesh_distance.surface_samples(tri, 1e-3)
    assert eps <= 2e-3
    rng = np.random.default_rng(0)
    w = rng.dirichlet([1, 1, 1], size=(len(tri), 50))
    x = np.einsum("tsk,tkd->tsd", w, tri).reshape(-1, 3)
    d = np.min(np.linalg.norm(x[:, None] - P[None], axis=-1), axis=1)
    assert np.max(d) <= eps


def _plate_poses(N, seed):
    """(R (N, 2, 3, 3), p (N, 2, 3)): plate A at the origin, plate B over it with yaw anywhere,
    tilt <= 0.2 rad, height 16-40 mm (the plates never cut each other)."""
    rng = np.random.default_rng(seed)
    yaw, tilt, z = rng.uniform(-np.pi, np.pi, N), rng.uniform(-0.2, 0.2, N), rng.uniform(0.016, 0.04, N)
    cz, sz, cx, sx = np.cos(yaw), np.sin(yaw), np.cos(tilt), np.sin(tilt)
    Rz = np.stack([np.stack([cz, -sz, 0 * cz], -1), np.stack([sz, cz, 0 * cz], -1), np.tile([0.0, 0, 1], (N, 1))], -2)
    Rx = np.stack([np.tile([1.0, 0, 0], (N, 1)), np.stack([0 * cx, cx, -sx], -1), np.stack([0 * cx, sx, cx], -1)], -2)
    R = np.stack([np.broadcast_to(np.eye(3), (N, 3, 3)), Rz @ Rx], axis=1)
    p = np.stack([np.zeros((N, 3)), np.stack([0 * z, 0 * z, z], -1)], axis=1)
    return R, p


@pytest.mark.parametrize("cap", [96, 12, 1])
def test_the_spheres_hold_every_surface_sample_at_any_cap(cap):
    """Whatever the sphere budget (the greedy cover at its first sizing, a coarser one, or one
    sphere for all), every surface sample of A lies in a sphere with the sampling's eps to spare:
    what makes the bound a bound."""
    ta, tb = _box_triangles([0.04, 0.04, 0.01]), _box_triangles([0.03, 0.03, 0.01])
    mp = mesh_distance.build_pair(("a", "b"), (0, 1), ta, tb, _plate_poses(16, 7), 0.01, step=1e-3, spheres=cap)
    assert 1 <= len(mp.radii) <= cap
    P, eps = mesh_distance.surface_samples(ta, 1e-3)
    gap = np.min(np.linalg.norm(P[:, None] - mp.centres[None], axis=-1) - mp.radii[None], axis=1)
    assert np.max(gap) <= -eps + 1e-12
    if cap == 96:  # room for the first sizing: spheres by the distance to B, the closest smallest
        assert np.min(mp.radii) < 0.5 * np.max(mp.radii)


def test_the_optimisers_two_level_bound_is_a_bound_below_the_full_one():
    """The loss's cheaper bound (parents of sphere groups, the closest few expanded): never above
    the exact distance, at or below the full bound, and the full bound once every group is expanded."""
    ta, tb = _box_triangles([0.04, 0.04, 0.01]), _box_triangles([0.03, 0.03, 0.01])
    N = 16
    R, p = _plate_poses(N, 7)
    mp = mesh_distance.build_pair(("a", "b"), (0, 1), ta, tb, (R, p), 0.01, spheres=96)
    P, size = mp.children.shape
    assert P < len(mp.radii) and size == mesh_distance.GROUP
    # Each parent holds its group's spheres, hence the surface they cover.
    for k in range(P):
        c = mp.children[k]
        assert np.all(np.linalg.norm(mp.centres[c] - mp.parents[k], axis=1) + mp.radii[c] <= mp.parent_radii[k] + 1e-12)
    assert sorted(set(mp.children.ravel().tolist())) == list(range(len(mp.radii)))
    Rj, pj = jnp.asarray(R), jnp.asarray(p)
    # jitted, as the library calls it: eagerly each of its few hundred operations compiles on its own
    bound_of = lambda expand=None: jax.jit(lambda R, p: mesh_distance.pair_bound(mp, R, p, expand))
    full = np.asarray(bound_of()(Rj, pj))
    exact = np.array([_exact(ta @ R[k, 0].T + p[k, 0], tb @ R[k, 1].T + p[k, 1]) for k in range(N)])
    assert np.all(full <= exact + 1e-9)
    for expand in (0, mesh_distance.EXPAND):  # parents only; the loss's own (each is a compile)
        fast = np.asarray(bound_of(expand)(Rj, pj))
        assert np.all(fast <= exact + 1e-9), (expand, fast - exact)
        assert np.all(fast <= full + 1e-12), (expand, fast - full)
    np.testing.assert_array_equal(np.asarray(bound_of(P)(Rj, pj)), full)
    # Differentiable: the gradient is the closest candidate's, finite.
    g = jax.jit(jax.grad(lambda p: jnp.sum(mesh_distance.pair_bound(mp, Rj, p, 2))))(pj)
    assert np.all(np.isfinite(np.asarray(g))) and np.any(np.asarray(g) != 0)
