"""Jerk-limited S-curve profiles: kinematic consistency, limits, and the friction experiment."""

import numpy as np
import pytest

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve, s_curve


def test_s_curve_is_consistent_and_within_limits():
    a_max, j_max, dt = 2.0, 50.0, 1e-3
    levels, holds = [0.5, -0.02, 0.0], [0.2, 0.1, 0.05]
    t, x, v, a = (np.asarray(u) for u in s_curve(levels, holds, a_max, j_max, dt=dt, x0=0.3))
    assert x[0] == 0.3 and v[0] == 0.0 and a[0] == 0.0
    assert np.allclose(np.diff(t), dt)
    # v and a are the exact derivatives: trapezoidal integrals reproduce x and v to O(dt^3 j).
    assert np.allclose(np.diff(x), (v[1:] + v[:-1]) / 2 * dt, atol=j_max * dt**3)
    assert np.allclose(np.diff(v), (a[1:] + a[:-1]) / 2 * dt, atol=j_max * dt**3)
    assert np.max(np.abs(a)) <= a_max + 1e-12
    assert np.max(np.abs(np.diff(a))) <= j_max * dt + 1e-12  # jerk limit
    for level in levels:  # every plateau is reached
        assert np.min(np.abs(v - level)) < 1e-12
    assert abs(v[-1]) < 1e-12  # ends at rest


def test_point_to_point_move_has_seven_segments():
    # Rest -> 1 -> rest with a_max reached: jerk +, 0, -, cruise, -, 0, + (7 segments).
    t, x, v, a = (np.asarray(u) for u in s_curve([1.0, 0.0], [0.3, 0.0], 4.0, 40.0, dt=1e-4))
    jerk = np.sign(np.round(np.diff(a) / 1e-4 / 40.0, 6))
    changes = np.flatnonzero(np.diff(jerk) != 0)
    assert len(changes) + 1 == 7
    assert x[-1] == pytest.approx(0.3 + 1.0 * (1.0 / 4.0 + 4.0 / 40.0), rel=1e-9)  # cruise + ramps


def test_friction_experiment_covers_the_friction_regimes():
    t, x, v, a = (np.asarray(u) for u in friction_s_curve())
    assert np.allclose(np.diff(t), 1e-3)
    speed = np.abs(v[v != 0])
    assert speed.min() < 2e-5 and speed.max() >= 1.5 - 1e-12
    crossings = np.sum(np.sign(v[1:]) * np.sign(v[:-1]) < 0)
    assert crossings >= 5
    creep = np.sum(np.abs(np.abs(v) - 1e-5) < 1e-12) * 1e-3
    assert creep > 0.5  # seconds of dwell near zero velocity
    tv = friction_s_curve("validation")[2]
    assert tv.shape != v.shape


@pytest.mark.parametrize(
    "args, message",
    [
        (([1.0], [0.1, 0.2], 1.0, 1.0), "equal length"),
        (([1.0], [-0.1], 1.0, 1.0), "holds finite and >= 0"),
        (([np.nan], [0.1], 1.0, 1.0), "levels must be finite"),
        (([1.0], [0.1], 0.0, 1.0), "must be > 0"),
    ],
)
def test_bad_profiles_raise(args, message):
    with pytest.raises(ValueError, match=message):
        s_curve(*args)


def test_unknown_friction_profile_raises():
    with pytest.raises(ValueError, match="kind must be one of"):
        friction_s_curve("nope")
