"""Collision geometry and geometric excitation constraints: capsule distances against brute
force, gradients against finite differences, URDF/SRDF geometry, a collision rejected, and
the constrained optimiser's one-line errors (its optimised trajectory: tests/test_optimize.py)."""

import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxid
from jaxid.excitation.constraints import Constraints
from jaxid.excitation.optimize import check_limits, optimize
from jaxid.model import geometry


def _brute(p0, p1, q0, q1, m=801):
    """Least distance from m samples of each segment to the other segment (exact point-segment
    distances), both ways: an upper bound within m^-1 of the segment lengths."""

    def to_segment(x, a, b):  # (m, 3) points to segment [a, b]
        t = np.clip((x - a) @ (b - a) / max(np.dot(b - a, b - a), 1e-300), 0, 1)
        return np.linalg.norm(x - (a + t[:, None] * (b - a)), axis=1).min()

    s = np.linspace(0, 1, m)[:, None]
    return min(to_segment(p0 + s * (p1 - p0), q0, q1), to_segment(q0 + s * (q1 - q0), p0, p1))


def _point_segment(x, a, b):
    t = np.clip(np.dot(x - a, b - a) / max(np.dot(b - a, b - a), 1e-300), 0, 1)
    return np.linalg.norm(x - (a + t * (b - a)))


def test_segment_distance_matches_brute_force():
    rng = np.random.default_rng(0)
    cases = []
    for k in range(60):
        p0, p1, q0, q1 = rng.normal(size=(4, 3))
        kind = k % 6
        if kind == 1:
            q1 = q0 + 0.7 * (p1 - p0)  # parallel
        elif kind == 2:
            p1 = p0.copy()  # a point and a segment
        elif kind == 3:
            q1 = q0.copy()
        elif kind == 4:
            p1, q1 = p0.copy(), q0.copy()  # two points
        elif kind == 5:
            q0, q1 = p0 + 0.3 * (p1 - p0) + 0.01, p1 + 2.0 * (p1 - p0)  # overlapping, nearly collinear
        cases.append((p0, p1, q0, q1))
    d = np.asarray(jax.jit(geometry.segment_distance)(*(np.stack(c) for c in zip(*cases))))
    for (p0, p1, q0, q1), dk in zip(cases, d):
        ref = _brute(p0, p1, q0, q1)
        assert ref + 1e-9 >= dk >= ref - 2e-3 * (np.linalg.norm(p1 - p0) + np.linalg.norm(q1 - q0)) - 1e-9


def test_segment_distance_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    for _ in range(3):
        args = tuple(jnp.asarray(x) for x in rng.normal(size=(4, 3)))
        check_grads(jax.jit(geometry.segment_distance), args, order=1, modes=["fwd", "rev"], atol=1e-6, rtol=1e-5)
    # Parallel segments: the distance is still differentiable in the gap between them.
    p0, p1 = jnp.zeros(3), jnp.array([1.0, 0, 0])
    f = lambda y: geometry.segment_distance(p0, p1, jnp.array([0.2, y, 0]), jnp.array([0.8, y, 0]))
    assert float(jax.grad(f)(0.3)) == pytest.approx(1.0, abs=1e-9)


@pytest.fixture(scope="module")
def ur5():
    return jaxid.models.ur5()


@pytest.fixture(scope="module")
def ur5_constraints():
    return Constraints(
        geometry.ur5(), clearance=0.02, floor=0.0, obstacles=((np.array([0.3, -0.8, 0.0]), np.array([0.8, 0.8, 0.3])),)
    )


HOME = 0.5 * (geometry.UR5_RANGES[0] + geometry.UR5_RANGES[1])


def test_ur5_pairs_exclude_neighbours_and_srdf(ur5, tmp_path):
    caps = geometry.ur5()
    names = {frozenset((caps.names[i], caps.names[j])) for i, j in caps.pairs(ur5.parents)}
    assert frozenset(("forearm_link", "upper_arm_link")) not in names  # adjacent
    assert frozenset(("base_link", "shoulder_link")) not in names
    assert frozenset(("wrist_1_link", "wrist_3_link")) not in names  # the SRDF's "Never"
    assert frozenset(("base_link", "wrist_3_link")) in names
    srdf = tmp_path / "ur5.srdf"
    srdf.write_text(
        '<robot name="ur5"><disable_collisions link1="base_link" link2="wrist_3_link" reason="Never"/></robot>'
    )
    fewer = caps.without(geometry.read_srdf(srdf)).pairs(ur5.parents)
    assert len(fewer) == len(caps.pairs(ur5.parents)) - 1
    # Without the SRDF, sampling finds the pair the wrist-2 housing always touches (MoveIt's "Always").
    bare = geometry.Capsules(caps.link, caps.a, caps.b, caps.radius, caps.names)
    always = geometry.always_touching(ur5, bare, samples=200)
    assert ("forearm_link", "wrist_2_link") in always and ("base_link", "wrist_3_link") not in always


def test_margins_gradient_matches_finite_differences(ur5, ur5_constraints):
    f = jax.jit(lambda q: jnp.sum(jnp.sin(3.0 * ur5_constraints.margins(ur5, q))))
    check_grads(f, (jnp.asarray(HOME) + 0.1,), order=1, modes=["rev"], atol=1e-6, rtol=1e-5)


def test_a_pose_in_collision_is_rejected_by_name(ur5, ur5_constraints):
    # Forearm folded down onto the table in front of the base: the wrist goes through the floor.
    q = np.tile(HOME, (50, 1))
    q[:, 1] = np.linspace(HOME[1], -0.35, 50)  # shoulder_lift down to 20 degrees above horizontal
    q[:, 2] = np.linspace(HOME[2], np.pi - 0.3, 50)  # elbow fully bent
    zeros = np.zeros_like(q)
    rep = check_limits(
        ur5,
        q,
        zeros,
        zeros,
        constraints=ur5_constraints,
        limits=dict(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1]),
    )
    assert not rep.feasible
    bad = {k: w for k, (m, w, _) in rep.margin.items() if m < 0}
    assert "floor" in bad and bad["floor"].endswith("_link")
    ok = check_limits(
        ur5,
        np.tile(HOME, (50, 1)),
        zeros,
        zeros,
        constraints=ur5_constraints,
        limits=dict(q_min=geometry.UR5_RANGES[0], q_max=geometry.UR5_RANGES[1]),
    )
    assert ok.feasible and ok.margin["self-collision"][0] >= 0


def test_home_in_collision_is_a_one_line_error(ur5, ur5_constraints):
    home = HOME.copy()
    home[1], home[2] = -0.35, np.pi - 0.3
    with pytest.raises(ValueError, match=r"home pose violates the (floor|obstacle|self-collision) constraint at \S+"):
        optimize(ur5, constraints=ur5_constraints, home=home, steps=0, n_starts=1, progress=False)
    with pytest.raises(ValueError, match="outside the position limits at shoulder_pan"):
        optimize(
            ur5,
            home=HOME,
            steps=0,
            n_starts=1,
            progress=False,
            limits=dict(q_min=geometry.UR5_RANGES[0], q_max=HOME - 0.1),
        )


def _write_stl(path, points):
    """A binary STL of triangles through consecutive triples of points."""
    tri = points[: len(points) // 3 * 3].reshape(-1, 3, 3)
    with open(path, "wb") as fh:
        fh.write(b"\0" * 80 + struct.pack("<I", len(tri)))
        for t in tri:
            fh.write(struct.pack("<12fH", 0, 0, 0, *t.ravel(), 0))


def test_urdf_collision_geometry_bounds_its_shapes(tmp_path):
    rng = np.random.default_rng(2)
    cloud = rng.normal(size=(300, 3)) * [0.2, 0.03, 0.05] + [0.1, 0, 0]
    _write_stl(tmp_path / "link2.stl", cloud)
    inertial = (
        '<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
    )
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(f"""<robot name="arm">
      <link name="base"><collision><geometry><cylinder radius="0.1" length="0.2"/></geometry></collision></link>
      <link name="l1">{inertial}<collision><origin xyz="0 0 0.25" rpy="0 0 0"/>
        <geometry><box size="0.1 0.08 0.5"/></geometry></collision></link>
      <link name="l2">{inertial}<collision><geometry><mesh filename="link2.stl"/></geometry></collision>
        <collision><origin xyz="0.4 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
      <link name="l3">{inertial}<collision><geometry><mesh filename="package://nowhere/l3.dae"/></geometry></collision></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.5"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
      <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.5 0 0"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
    </robot>""")
    robot = jaxid.Robot.from_urdf(urdf)
    with pytest.warns(UserWarning, match=r"package 'nowhere' not found \(searched [^)]*\): l3\b"):
        caps = geometry.from_urdf(urdf, robot, mesh_radius=0.04)
    assert caps.names == ("base", "l1", "l2", "l2", "l3")
    assert list(caps.link) == [-1, 0, 1, 1, 2]

    def inside(k, pts):
        return max(_point_segment(x, caps.a[k], caps.b[k]) for x in pts) <= caps.radius[k] + 1e-6  # float32 STL

    corners = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.04, 0.04) for z in (0.0, 0.5)])
    rim = np.array([[0.1 * np.cos(a), 0.1 * np.sin(a), z] for a in np.linspace(0, 6.28, 24) for z in (-0.1, 0.1)])
    assert inside(0, rim) and inside(1, corners) and inside(2, cloud)
    # The mesh capsule is tight: its radius is the cloud's largest distance from the axis.
    assert caps.radius[2] < 0.2
    assert caps.radius[3] == 0.05 and np.allclose(caps.a[3], [0.4, 0, 0])
    # The unreadable mesh falls back to the skeleton: l3 from its joint to the flange (a point).
    assert caps.radius[4] == 0.04
