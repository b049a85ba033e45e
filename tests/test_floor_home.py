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
