"""The floor rule and the home search of ``jaxid excite`` (issue 33): links that no joint raises or
lowers are not held above the floor, decided from the kinematics; a home that collides is replaced
by the nearest clear pose, or a one-line error names the constraint and the flags to set."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.dynamics.rnea import forward_kinematics_rp
from jaxid.excitation.constraints import Constraints, level_capsules, search_home, sunk_capsules
from jaxid.model import geometry
from jaxid.workflow import WorkflowError
from jaxid.workflow.commands.excite import default_home


@pytest.fixture(scope="module")
def ur5():
    return jaxid.models.ur5()


def _lowest(robot, caps, q):
    """Lowest point of every capsule (N, K), m, by the forward kinematics."""
    R, p = jax.vmap(lambda x: forward_kinematics_rp(robot, x))(jnp.asarray(q))
    A, B = caps.world(R, p)
    return np.minimum(np.asarray(A)[..., 2], np.asarray(B)[..., 2]) - np.asarray(caps.radius)


def test_vertical_axis_links_are_exempt_and_links_that_swing_down_are_not(ur5):
    caps = geometry.ur5()
    level = level_capsules(ur5, caps)
    # The UR5's shoulder turns about the vertical base axis: only its capsule (link 0) is level.
    assert [caps.names[k] for k in level] == ["shoulder_link"]
    q = np.random.default_rng(7).uniform(-np.pi, np.pi, (64, ur5.n))
    low = _lowest(ur5, caps, q)
    moving = np.asarray(caps.link) >= 0
    assert np.all(np.ptp(low[:, list(level)], axis=0) < 1e-12)
    others = [k for k in range(len(caps)) if moving[k] and k not in level]
    assert np.all(np.ptp(low[:, others], axis=0) > 0.05)  # the upper arm and beyond swing up and down
    # A planar arm turning in the horizontal plane (every axis vertical): no link leaves its height.
    planar = jaxid.models.planar(3)
    pcaps = geometry.skeleton(planar, 0.05)
    assert set(level_capsules(planar, pcaps)) == {k for k in range(len(pcaps)) if pcaps.link[k] >= 0}


def test_exempt_capsules_leave_the_floor_margins(ur5):
    caps = geometry.ur5()
    exempt = level_capsules(ur5, caps)
    c = Constraints(caps, floor=0.0, floor_exempt=exempt)
    kinds, labels = c.labels(ur5.parents)
    floored = [lb for kd, lb in zip(kinds, labels) if kd == "floor"]
    assert "shoulder_link" not in floored and "upper_arm_link" in floored
    q = np.array([[0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0]])
    m = np.asarray(c.margins(ur5, q))[0]
    low = _lowest(ur5, caps, q)[0]
    # Each floor margin is its capsule's lowest point less the clearance.
    for k in c.floored():
        assert m[kinds.index("floor") + list(c.floored()).index(k)] == pytest.approx(low[k] - c.clearance, abs=1e-12)
    with pytest.raises(ValueError, match="floor_exempt"):
        Constraints(caps, floor_exempt=(len(caps),))


def test_sunk_capsules_are_those_below_the_floor_in_every_pose(ur5):
    caps = geometry.ur5()
    moving = {k for k in range(len(caps)) if caps.link[k] >= 0}
    assert sunk_capsules(ur5, caps, floor=-2.0, clearance=0.02) == ()
    assert set(sunk_capsules(ur5, caps, floor=2.0, clearance=0.02)) == moving  # above the arm's reach
    # At the base's plane the UR5's capsules can all be lifted clear: none is sunk.
    assert sunk_capsules(ur5, caps, floor=0.0, clearance=0.02) == ()


def test_home_search_finds_a_near_clear_pose(ur5):
    caps = geometry.ur5()
    c = Constraints(caps, clearance=0.02, floor=0.0, floor_exempt=level_capsules(ur5, caps))
    lo, hi = np.full(ur5.n, -2 * np.pi), np.full(ur5.n, 2 * np.pi)  # centre q = 0: the wrist under the floor
    assert float(np.min(c.margins(ur5, np.zeros((1, ur5.n))))) < 0
    home, dist = search_home(c, ur5, lo, hi)
    assert float(np.min(c.margins(ur5, home[None]))) >= 0.0
    assert np.all((home >= lo) & (home <= hi))
    assert dist == pytest.approx(np.linalg.norm(home / (2 * np.pi)), rel=1e-12)
    # Nearer the centre than UR's own upright home, which is clear too.
    upright = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
    assert float(np.min(c.margins(ur5, upright[None]))) >= 0.0
    assert dist < np.linalg.norm(upright / (2 * np.pi))
    # Deterministic.
    again, _ = search_home(c, ur5, lo, hi)
    np.testing.assert_array_equal(home, again)


def test_default_home_keeps_clear_centres_and_names_what_blocks(ur5):
    caps = geometry.ur5()
    lim = {"q_min": geometry.UR5_RANGES[0], "q_max": geometry.UR5_RANGES[1]}
    c = Constraints(caps, clearance=0.02, floor=0.0, floor_exempt=level_capsules(ur5, caps))
    home, note = default_home(ur5, lim, c)
    np.testing.assert_allclose(home, 0.5 * (lim["q_min"] + lim["q_max"]))
    assert note is None
    # A clearance no pose of the arm can give: a one-line error with the pair and the flags.
    blocked = Constraints(caps, clearance=0.5, floor=None)
    with pytest.raises(WorkflowError) as err:
        default_home(ur5, lim, blocked)
    msg = str(err.value)
    assert "\n" not in msg and "_link/" in msg
    for flag in ("--home", "--floor", "--no-floor", "--capsule-radius"):
        assert flag in msg


def test_never_clear_pairs_are_closer_than_the_clearance_in_every_pose(ur5):
    from dataclasses import replace

    from jaxid.excitation.constraints import never_clear

    caps = replace(geometry.ur5(), disabled=frozenset())  # without its SRDF's "Never" pairs
    touching = geometry.always_touching(ur5, caps)
    close = never_clear(ur5, caps, clearance=0.02)
    assert ("forearm_link", "wrist_2_link") in touching and set(touching) <= set(close)
    # On other poses than those sampled: each such pair stays within the clearance, and every
    # other pair clears it somewhere.
    q = np.random.default_rng(11).uniform(-2 * np.pi, 2 * np.pi, (400, ur5.n))
    R, p = jax.vmap(lambda x: forward_kinematics_rp(ur5, x))(jnp.asarray(q))
    A, B = caps.world(R, p)
    for i, j in caps.pairs(ur5.parents):
        gap = (
            np.asarray(geometry.segment_distance(A[:, i], B[:, i], A[:, j], B[:, j])) - caps.radius[i] - caps.radius[j]
        )
        pair = tuple(sorted((caps.names[i], caps.names[j])))
        assert (np.max(gap) < 0.02) == (pair in close), pair


def _planar_spheres(d, radius_sum):
    """A planar 3-link arm (links 1 m, vertical axes) with a sphere at the end of link 0 and one
    on link 2 at (d, 0, 0) of its frame: their gap, m, is |(1, 0) + d (cos q2, sin q2)| less
    ``radius_sum``, which only q2 changes (d = 0: a fixed gap)."""
    robot = jaxid.models.planar(3)
    caps = geometry.Capsules(
        np.array([0, 2]),
        np.array([[1.0, 0.0, 0.0], [d, 0.0, 0.0]]),
        np.array([[1.0, 0.0, 0.0], [d, 0.0, 0.0]]),
        np.array([radius_sum / 2, radius_sum / 2]),
        ("link0", "link2"),
    )
    return robot, caps


def test_never_clear_pairs_keep_a_weaker_clearance_of_their_own():
    """A pair whose capsules are never the clearance apart is not dropped (its meshes could
    still meet): kept from touching when apart in most poses, else from overlapping more than in
    its closest quarter of poses (the lower quartile of the gap); only a gap the joints change by
    less than half the clearance is exempt."""
    from jaxid.excitation.constraints import never_clear, relaxed_pairs

    robot, caps = _planar_spheres(0.1, 1.09)  # gap in [-0.19, 0.01] m: never 0.02 m apart
    gap = lambda q2: np.hypot(1 + 0.1 * np.cos(q2), 0.1 * np.sin(q2)) - 1.09
    assert never_clear(robot, caps, 0.02) == [("link0", "link2")]
    own, exempt = relaxed_pairs(robot, caps, 0.02)
    assert exempt == () and [(i, j) for i, j, _ in own] == [(0, 1)]
    c = own[0][2]
    # The lower quartile over q2 uniform in +-pi is the gap at |q2| = 3 pi / 4 (-0.158 m).
    assert c == pytest.approx(gap(3 * np.pi / 4), abs=5e-3) and c < 0
    con = Constraints(caps, clearance=0.02, floor=None, pair_clearance=own)
    kinds, labels = con.labels(robot.parents)
    assert kinds == ["self-collision"] and "own clearance" in labels[0]
    q = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, np.pi / 2], [0.0, 0.0, np.pi]])
    m = np.asarray(con.margins(robot, q))[:, 0]
    np.testing.assert_allclose(m, gap(q[:, 2]) - c, atol=1e-12)
    assert m[0] > 0 and m[1] > 0 and m[2] < 0  # protective: the deepest overlap is refused
    # The report prints the distance against the pair's own clearance, not the global one.
    from jaxid.excitation.optimize import Feasibility

    (worst, where, kept) = con.report(robot.parents, m[2:])["self-collision"]
    assert kept == c and worst == m[2]
    line = Feasibility({}, {}, con.report(robot.parents, m[2:])).lines()[0]
    assert f"{1e3 * (m[2] + c):.0f} mm  VIOLATED: {-1e3 * m[2]:.0f} mm short of {1e3 * c:.0f} mm" in line, line
    # A shortfall below 1 mm is printed to 0.01 mm, not as "0 mm short" (a pair 0.165 mm short
    # of an own clearance of -55.8 mm, Baxter's shoulder/elbow at excite's defaults).
    tiny = Feasibility({}, {}, {"self-collision": (-1.65e-4, "a/b", -0.0558)}).lines()[0]
    assert tiny == "self-collision a/b: -55.97 mm  VIOLATED: 0.17 mm short of -55.80 mm", tiny
    # Apart in most poses (gap in [0, 0.2] m, clearance 0.25 m never met, lower quartile 0.032 m):
    # kept from touching.
    robot, caps = _planar_spheres(0.1, 0.9)
    own, exempt = relaxed_pairs(robot, caps, 0.25)
    assert exempt == () and len(own) == 1 and own[0][2] == 0.0
    # A gap no joint changes (the sphere on link 2's axis), or by less than half the clearance
    # (+-4 mm): exempt, as no motion makes or breaks it.
    for d in (0.0, 0.004):
        robot, caps = _planar_spheres(d, 1.09)
        own, exempt = relaxed_pairs(robot, caps, 0.02)
        assert own == () and exempt == ((0, 1),)
    con = Constraints(caps, clearance=0.02, floor=None, pair_exempt=exempt)
    assert con.labels(robot.parents) == ([], [])


def test_capsules_never_clear_of_the_floor_are_kept_out_of_it_or_stop(ur5):
    """A capsule never the clearance above the floor is held out of it (0 m) when some pose lifts
    it clear; one under the floor in every pose is returned as cutting the robot (the caller
    stops); a level one (on the UR5's shoulder, turning about the vertical axis) is exempt."""
    from jaxid.excitation.constraints import relaxed_floor

    # A sphere 0.1 m off the shoulder-lift axis on the upper arm (link 1): its centre's height
    # sweeps a range as the shoulder lifts; its radius sets how far it clears the floor.
    q = np.random.default_rng(3).uniform(-2 * np.pi, 2 * np.pi, (2000, ur5.n))
    R, p = jax.vmap(lambda x: forward_kinematics_rp(ur5, x))(jnp.asarray(q))
    top = float(np.max(np.asarray(p)[:, 1, 2] + 0.1 * np.asarray(R)[:, 1, 2, 0]))  # highest centre, m

    def sphere(radius):
        return geometry.Capsules(
            np.array([0, 1]), np.array([[0.0, 0, 0], [0.1, 0, 0]]), np.array([[0.0, 0, 0], [0.1, 0, 0]]),
            np.array([0.05, radius]), ("shoulder_link", "upper_arm_link"),
        )  # fmt: skip

    caps = sphere(top - 0.01)  # at best 0.01 m above the floor: under the 0.02 m clearance
    level = level_capsules(ur5, caps)
    assert level == (0,)
    own, under = relaxed_floor(ur5, caps, 0.0, 0.02, exempt=level)
    assert own == ((1, 0.0),) and under == ()
    con = Constraints(caps, clearance=0.02, floor=0.0, floor_exempt=level, floor_clearance=own)
    m = np.asarray(con.margins(ur5, q[:200]))[:, 0]
    np.testing.assert_allclose(m, _lowest(ur5, caps, q[:200])[:, 1], atol=1e-12)  # the height itself
    caps = sphere(top + 0.05)  # under the floor in every pose
    own, under = relaxed_floor(ur5, caps, 0.0, 0.02, exempt=level)
    assert own == () and [k for k, _ in under] == [1] and under[0][1] == pytest.approx(-0.05, abs=2e-3)


def test_the_home_note_says_how_short_of_an_own_clearance_it_is():
    """A pair on a clearance of its own is judged by that one, not by the global clearance it was
    never asked to keep; other constraints by the global one."""
    from jaxid.workflow.commands.excite import _shortfall

    assert _shortfall(-0.002, 0.007) == "clearance 5 mm, 7 mm required"
    assert _shortfall(-0.005, 0.02) == "clearance 15 mm, 20 mm required"


def test_the_default_floor_under_a_torso_mounted_arm_is_dropped_with_a_warning(tmp_path):
    """A link under z = 0 in every pose (an arm whose base frame is at a torso's shoulder): the
    default floor ("auto") is not checked, with a warning asking for --floor Z; an explicit floor
    at 0 refuses, naming the link and the flags."""
    from jaxid.workflow.commands.excite import excite_constraints
    from jaxid.workflow.requests import ExciteRequest, ModelSpec

    urdf = tmp_path / "hanging.urdf"
    urdf.write_text(
        '<robot name="hanging"><link name="torso"/>'
        '<link name="arm"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
        '</inertial><collision><origin xyz="0 0 -0.5"/><geometry><cylinder radius="0.04" length="0.4"/></geometry>'
        "</collision></link>"
        '<joint name="shoulder" type="revolute"><parent link="torso"/><child link="arm"/><axis xyz="1 0 0"/>'
        '<limit lower="-0.5" upper="0.5" effort="10" velocity="2"/></joint></robot>'
    )
    robot = jaxid.Robot.from_urdf(urdf)
    request = ExciteRequest(output=str(tmp_path / "t.csv"), model=ModelSpec(urdf=str(urdf)))
    with pytest.warns(UserWarning, match=r"default floor z = 0 m .* cuts the capsule of arm in every pose.*--floor Z"):
        con, _ = excite_constraints(request, robot)
    assert con is None or con.floor is None
    with pytest.raises(WorkflowError, match=r"floor z = 0 m \(base frame\) cuts the capsule of arm .*--no-floor"):
        excite_constraints(
            ExciteRequest(output=str(tmp_path / "t.csv"), model=ModelSpec(urdf=str(urdf)), floor=0.0), robot
        )
