"""jaxid.excitation.optimize: limits and geometric constraints (obstacle, workspace) met densely, at rest at home,
conditioning improved, true figures, bad input. One constrained optimisation (one compile) is
shared by the tests."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import jaxid
from jaxid.excitation.constraints import Constraints
from jaxid.excitation.optimize import check_limits, excitation_objective, optimize
from jaxid.model import geometry

# A planar 2-link arm (1 m, 1 kg rods) with friction, and limits that bind: holding the
# arm out takes 19.6 and 4.9 N m of the 30 and 10 available.
LIMITS = dict(
    q_min=[-2.0, -2.0],
    q_max=[2.0, 2.0],
    qd_max=[2.0, 2.0],
    qdd_max=[6.0, 6.0],
    qddd_max=[30.0, 30.0],
    tau_max=[30.0, 10.0],
)
H, F0 = 3, 0.1
HOME = np.array([0.3, 0.4])
# The planar arm moves in the x-y plane (gravity along -y); a box below its reach on one side,
# and a workspace box whose top face (y = 1.2 m) cuts off the highest 0.8 m of its 2 m reach.
OBSTACLE = (np.array([0.6, -2.5, -1.0]), np.array([2.5, -1.0, 1.0]))
WORKSPACE = (np.array([-2.5, -2.5, -1.0]), np.array([2.5, 1.2, 1.0]))
RADIUS, CLEARANCE = 0.05, 0.02


@pytest.fixture(scope="module")
def robot():
    return jaxid.models.planar(2).with_joint_terms(("fv", "fc"))


@pytest.fixture(scope="module")
def constraints(robot):
    return Constraints(
        geometry.skeleton(robot, RADIUS), clearance=CLEARANCE, floor=None, workspace=WORKSPACE, obstacles=(OBSTACLE,)
    )


@pytest.fixture(scope="module")
def result(robot, constraints):
    return optimize(
        robot,
        harmonics=H,
        base_frequency=F0,
        n_starts=3,
        steps=40,
        limits=LIMITS,
        learning_rate=0.05,
        progress=False,
        constraints=constraints,
        home=HOME,
    )


def _dense(res):
    return res.trajectory(fs=200 * H * F0)  # 200 samples per period of the highest harmonic


def test_limits_met_on_a_dense_grid(robot, result):
    t, q, qd, qdd = (np.asarray(x) for x in _dense(result))
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))
    assert result.feasible and all(v == 0.0 for v in result.feasibility.violation.values())
    assert np.all(q >= LIMITS["q_min"]) and np.all(q <= LIMITS["q_max"])
    for x, k in ((qd, "qd_max"), (qdd, "qdd_max"), (tau, "tau_max")):
        assert np.all(np.abs(x) <= LIMITS[k]), k
    # The reported usage is the largest fraction of each limit along the trajectory.
    np.testing.assert_allclose(result.feasibility.usage["velocity"], np.max(np.abs(qd) / 2.0), rtol=1e-3)
    # At rest at home at both ends of the period.
    for k in (0, -1):
        np.testing.assert_allclose(q[k], HOME, atol=1e-12)
        np.testing.assert_allclose(qd[k], 0.0, atol=1e-12)
        np.testing.assert_allclose(qdd[k], 0.0, atol=1e-12)
    assert t[-1] == pytest.approx(1 / F0)


def test_geometric_constraints_and_jerk_met_densely(robot, constraints, result):
    assert result.feasible and np.all(result.final_feasible)
    # 20x denser than the check inside optimize: every limit and the obstacle clearance hold.
    t, q, qd, qdd = (np.asarray(x) for x in result.trajectory(fs=2000 * H * F0))
    rep = check_limits(robot, q, qd, qdd, limits=LIMITS, qddd=result.jerk(t), constraints=constraints)
    assert rep.feasible, rep
    assert rep.margin["obstacle"][0] >= 0 and rep.margin["obstacle"][1].startswith("0/")
    np.testing.assert_allclose(rep.margin["obstacle"][0], result.feasibility.margin["obstacle"][0], atol=2e-3)
    # The workspace by hand: the capsules' end points (base, elbow, tip of the 1 m links) stay
    # radius + clearance inside every face of the box.
    elbow = np.stack([np.cos(q[:, 0]), np.sin(q[:, 0]), 0 * q[:, 0]], axis=1)
    tip = elbow + np.stack([np.cos(q.sum(1)), np.sin(q.sum(1)), 0 * q[:, 0]], axis=1)
    pts = np.stack([np.zeros_like(elbow), elbow, tip], axis=1)  # (N, 3 points, 3)
    inside = np.minimum(pts - WORKSPACE[0], WORKSPACE[1] - pts).min(axis=(1, 2)) - RADIUS - CLEARANCE
    np.testing.assert_allclose(rep.margin["workspace"][0], inside.min(), atol=1e-9)
    assert inside.min() >= 0 and rep.margin["workspace"][1] == "joint2"  # the tip link is the closest
    # The jerk is the derivative of qdd.
    dt = t[1] - t[0]
    np.testing.assert_allclose(
        np.gradient(qdd, dt, axis=0)[1:-1], np.asarray(result.jerk(t))[1:-1], atol=1e-3 * np.abs(result.jerk(t)).max()
    )


def test_objective_improved_and_reported_truthfully(robot, result):
    assert np.all(result.initial_feasible)
    # Every start keeps its best iterate; the constrained steps really optimise (a NaN step,
    # as an -O0 build of the step gave with the obstacle, would leave every start where it was).
    assert np.all(result.final_cond <= result.initial_cond)
    assert np.sum(result.final_cond < 0.9 * result.initial_cond) >= 2
    assert result.cond < np.median(result.initial_cond)
    assert result.value == result.cond == result.final_cond[result.best_start]
    # The reported value is the condition number of the column-normalised base regressor
    # on the dense check grid (200 H samples per period).
    T, N = 1 / F0, 200 * H
    q, qd, qdd = result.sample(np.arange(N) * T / N)
    base = jaxid.base_parameters(robot)
    W = np.asarray(jaxid.stack(jaxid.regressor(robot, q, qd, qdd)))[:, np.asarray(base.indices)]
    Wn = W / np.linalg.norm(W, axis=0)
    np.testing.assert_allclose(result.cond, np.linalg.cond(Wn), rtol=1e-8)
    np.testing.assert_allclose(result.logdet, -np.linalg.slogdet(Wn.T @ Wn)[1], rtol=1e-8)


def test_objectives_match_closed_forms():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(40, 5)) * np.array([1e-3, 1.0, 10.0, 1e2, 1.0])
    Wn = W / np.linalg.norm(W, axis=0)
    np.testing.assert_allclose(np.exp(excitation_objective(W, "cond")), np.linalg.cond(Wn), rtol=1e-10)
    np.testing.assert_allclose(excitation_objective(W, "logdet"), -np.linalg.slogdet(Wn.T @ Wn)[1], rtol=1e-10)
    np.testing.assert_allclose(excitation_objective(W, "information"), -np.linalg.slogdet(W.T @ W)[1], rtol=1e-10)


def test_payload_excitation_determines_the_payload_better_than_its_random_start(robot, caplog):
    # `jaxid excite --payload` on the planar arm (the payload parameters its plane motion
    # identifies): the information (rows weighted by 1 / tau_max) grows over the random start,
    # and with it the predicted precision of the identified payload parameters (std at a noise
    # proportional to the torque limits).
    import logging

    from jaxid.identification.payload import PayloadRows

    fn = PayloadRows(robot, 1.0 / np.asarray(LIMITS["tau_max"]))
    kw = dict(
        harmonics=H,
        base_frequency=F0,
        objective="information",
        n_starts=2,
        progress=False,
        regressor_fn=fn,
        limits=LIMITS,
        learning_rate=0.05,
    )
    with caplog.at_level(logging.DEBUG, logger="jaxid.cache"):
        start, res = optimize(robot, steps=0, **kw), optimize(robot, steps=20, **kw)
    assert res.feasible and res.value < start.value - 0.5
    # The optimiser's programs are keyed and stored (a partial could not be: compiled again per call).
    assert "without a stored program" not in caplog.text

    def std(r):
        q, qd, qdd = r.sample(np.arange(200 * H) / (200 * H * F0))
        W = np.asarray(fn(q, qd, qdd)).reshape(-1, 10)[:, np.asarray(r.columns)]
        np.testing.assert_allclose(r.value, -np.linalg.slogdet(W.T @ W)[1], rtol=1e-8)
        return np.sqrt(np.diag(np.linalg.inv(W.T @ W)))

    # D-optimality shrinks the volume of the confidence ellipsoid, not each axis: the std's geometric
    # mean and the worst std fall.
    s1, s0 = std(res), std(start)
    assert np.sum(np.log(s1)) < np.sum(np.log(s0)) and s1.max() < s0.max()


def test_feasibility_detects_tightened_limits(robot, result):
    _, q, qd, qdd = (np.asarray(x) for x in _dense(result))
    tau = np.asarray(jaxid.rnea(robot, q, qd, qdd))
    ok = check_limits(robot, q, qd, qdd, limits=LIMITS)
    assert ok.feasible
    vmax, tmax, qtop = np.abs(qd).max(), np.abs(tau).max(), q.max()
    tight = dict(LIMITS, qd_max=0.8 * vmax, tau_max=0.5 * tmax, q_max=qtop - 0.1)
    rep = check_limits(robot, q, qd, qdd, limits=tight)
    assert not rep.feasible
    np.testing.assert_allclose(rep.violation["velocity"], 0.2 * vmax, rtol=1e-12)
    np.testing.assert_allclose(rep.violation["torque"], 0.5 * tmax, rtol=1e-10)
    np.testing.assert_allclose(rep.violation["position"], 0.1, rtol=1e-10)
    assert rep.violation["acceleration"] == 0.0
    assert rep.usage["velocity"] == pytest.approx(1.25) and rep.usage["torque"] == pytest.approx(2.0)


def test_logdet_with_a_custom_regressor(robot):
    # A regressor_fn (as the payload design passes) with a dependent column (2 qd next to
    # qd): the optimiser finds the independent columns itself.
    def features(q, qd, qdd):
        return jnp.stack([qdd, qd, 2 * qd, jnp.sin(q), jnp.cos(q)], axis=-1)

    res = optimize(
        robot,
        harmonics=H,
        base_frequency=F0,
        objective="logdet",
        n_starts=2,
        steps=20,
        limits=LIMITS,
        learning_rate=0.05,
        progress=False,
        regressor_fn=features,
    )
    assert res.objective == "logdet" and res.value == res.logdet
    assert np.all(res.final_logdet < res.initial_logdet) and res.feasible
    cols = sorted(np.asarray(res.columns).tolist())
    assert cols in ([0, 1, 3, 4], [0, 2, 3, 4])
    q, qd, qdd = res.sample(np.arange(200 * H) / (200 * H * F0))
    Wn = np.asarray(features(q, qd, qdd)).reshape(-1, 5)[:, cols]
    Wn = Wn / np.linalg.norm(Wn, axis=0)
    np.testing.assert_allclose(res.logdet, -np.linalg.slogdet(Wn.T @ Wn)[1], rtol=1e-8)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(harmonics=1), "harmonics"),
        (dict(base_frequency=0.0), "base_frequency"),
        (dict(base_frequency=-0.05), "base_frequency"),
        (dict(base_frequency=float("nan")), "base_frequency"),
        (dict(objective="aopt"), "objective"),
        (dict(n_starts=0), "n_starts"),
        (dict(q0=[1.99, 0.0]), "q0"),
        (dict(limits=dict(q_max=[1.0, 1.0], q_min=[-np.inf, -1.0])), "one side"),
        (dict(limits=dict(speed=1.0)), "unknown limit"),
    ],
)
def test_bad_input(robot, kwargs, match):
    kwargs = dict(dict(limits=LIMITS), **kwargs)
    with pytest.raises(ValueError, match=match):
        optimize(robot, progress=False, **kwargs)


def test_placeholder_velocity_limits_are_named():
    """A velocity limit no drive has (a simulator URDF's 10000 rad/s) is named when an excitation
    is designed within it: the trajectory is only as safe as its limits."""
    from jaxid.excitation.optimize import _warn_placeholder_limits, model_limits

    robot = jaxid.models.planar(2)
    with pytest.warns(UserWarning, match=r"placeholders \(joint2 10000; above 100\)"):
        _warn_placeholder_limits(robot, model_limits(robot, {"qd_max": [3.0, 1e4]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_placeholder_limits(robot, model_limits(robot, {"qd_max": [3.0, 4.0]}))


def test_a_start_short_on_the_dense_check_is_scaled_toward_rest_until_it_meets_it(monkeypatch):
    """The optimiser keeps its margins on a coarse grid; a start that misses the dense check by a
    hair between grid points (Baxter's shoulder/elbow, 0.17 mm at excite's defaults) is scaled
    toward its rest pose, the largest rung of the ladder that meets every limit and constraint
    taken, with a warning saying by how much; where none does, nothing changes."""
    import sys

    O = sys.modules["jaxid.excitation.optimize"]  # the module (the package exports its function)
    S, n, Hh = 8, 2, 3
    rng = np.random.default_rng(0)
    z = {"a": rng.normal(size=(S, n, Hh)), "b": rng.normal(size=(S, n, Hh)), "q0": np.zeros((S, n))}
    amp = np.abs(z["a"]).max(axis=(1, 2))

    def fake(limit):
        def evaluate(problem, trial):  # feasible where the amplitude is at most `limit` x start 2's
            a = np.abs(np.asarray(trial["a"])).max(axis=(1, 2))
            margin = (limit * amp[2] - a)[:, None]  # (S, 1) geometric margins
            cond = 10.0 + a
            return cond, cond, cond, np.full((S, 5), 0.5), np.zeros((S, 5)), margin

        return evaluate

    # Start 2 is the nearest to meeting them (the least excess): the others are far off.
    final = list(fake(0.0)(None, z))
    final[5] = final[5] - np.where(np.arange(S) == 2, 0.0, 10.0)[:, None]
    monkeypatch.setattr(O, "_evaluate", fake(0.91))
    with pytest.warns(UserWarning, match=r"scaled by 0.9 toward its rest pose"):
        z2, final2, ok = O._shrink_to_dense(None, z, tuple(final), "cond")
    assert ok.tolist() == [i == 2 for i in range(S)] and final2[5][2, 0] >= 0
    np.testing.assert_allclose(z2["a"][2], 0.9 * z["a"][2])
    np.testing.assert_array_equal(z2["a"][0], z["a"][0])
    # A rest pose near a constraint's edge: the coarse ladder's rung 0.5 meets it.
    monkeypatch.setattr(O, "_evaluate", fake(0.55))
    with pytest.warns(UserWarning, match=r"scaled by 0.5 toward its rest pose"):
        z4, _, ok4 = O._shrink_to_dense(None, z, tuple(final), "cond")
    np.testing.assert_allclose(z4["a"][2], 0.5 * z["a"][2])
    # No rung meets them: unchanged, no warning.
    monkeypatch.setattr(O, "_evaluate", fake(0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z3, final3, ok3 = O._shrink_to_dense(None, z, tuple(final), "cond")
    assert not ok3.any() and z3 is z
