"""The SDP reference (cvxpy + Clarabel) and the JAX barrier fit: same optimum, bounds
respected, contradicting bounds reported."""
import numpy as np
import pytest

pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")

import jaxid  # noqa: E402
from jaxid.identification import consistent as C  # noqa: E402
from jaxid.identification import sdp as S  # noqa: E402

from test_consistent import arm3  # noqa: E402

N = 120


@pytest.fixture(scope="module")
def problem():
    robot = arm3()
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=(N, 3)) for _ in range(3))
    W = jaxid.stack(jaxid.regressor(robot, q, qd, qdd))
    base = jaxid.base_from_regressor(W, robot.parameter_names())
    theta = robot.parameter_vector()
    nominal = theta.at[:10].multiply(1.3)
    # torques of the truth plus a disturbance that makes WLS non-physical
    tau = W @ theta + 0.5 * rng.normal(size=W.shape[0])
    return robot, W, tau, base, nominal


@pytest.mark.parametrize("weight", [0.0, 1e-3])
def test_sdp_and_barrier_agree(problem, weight):
    robot, W, tau, base, nominal = problem
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, prior="entropic", weight=weight)
    assert ref.status == "optimal"
    # weight 0: the optimum has degenerate bodies (on the boundary), which the barrier
    # approaches slowly; it reaches 1e-6 but not its own (tighter) criterion in 2000 steps.
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=weight, max_steps=2000)
    assert bool(fit.valid)
    if weight > 0:
        assert bool(fit.converged) and int(fit.num_steps) < 200
    assert abs(float(fit.cost) / ref.cost - 1) < 1e-6
    assert float(fit.cost) >= ref.cost - 1e-6 * ref.cost  # the SDP is the optimum
    # the unconstrained fit is below both: the constraints are active
    assert float(fit.rss) < ref.cost


def test_bounds_respected_by_both(problem):
    robot, W, tau, base, nominal = problem
    bounds = C.Bounds.from_nominal(robot, robot.parameter_vector(), mass_tol=0.05, com_margin=0.02)
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, bounds=bounds)
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=0.0, bounds=bounds)
    for theta, tol in ((ref.theta, 1e-6), (np.asarray(fit.theta), 0.0)):
        pis = np.asarray(theta[:30]).reshape(3, 10)
        m, c = pis[:, 0], pis[:, 1:4] / pis[:, :1]
        assert np.all(m >= bounds.mass_min - tol) and np.all(m <= bounds.mass_max + tol)
        assert np.all(c >= bounds.com_min - tol) and np.all(c <= bounds.com_max + tol)
    assert abs(float(fit.cost) / ref.cost - 1) < 1e-6
    # bounds cost something here: the unbounded optimum is lower
    free = S.identify_sdp(robot, W, tau, nominal=nominal, base=base)
    assert free.cost < ref.cost


def test_contradicting_bounds_are_named(problem):
    robot, W, tau, base, nominal = problem
    with pytest.raises(ValueError, match=r"link joint2: mass_min = 3 kg > mass_max = 1 kg"):
        C.Bounds.make(robot, mass_min=[0.5, 3.0, 0.5], mass_max=[5.0, 1.0, 5.0])
    with pytest.raises(ValueError, match=r"link joint1: com_min\[y\]"):
        C.Bounds.make(robot, com_min=[[0, 0.1, 0]] * 3, com_max=[[0.1, 0.0, 0.1]] * 3)
    with pytest.raises(ValueError, match="total mass"):
        C.Bounds.make(robot, mass_min=2.0, total_mass=(0.0, 5.0))
    with pytest.raises(ValueError, match="nominal mass"):
        C.Bounds.from_nominal(robot, robot.parameter_vector().at[0].set(-1.0))
    # consistent on paper, infeasible for the solver: J >= eps I needs m >= eps
    bounds = C.Bounds.make(robot, mass_max=1.0)
    with pytest.raises(ValueError, match="infeasible"):
        S.identify_sdp(robot, W, tau, nominal=nominal, base=base, bounds=bounds, eps=10.0)


def test_rejects_bad_input(problem):
    robot, W, tau, base, nominal = problem
    with pytest.raises(ValueError, match="prior"):
        S.identify_sdp(robot, W, tau, base=base, prior="l2", weight=1.0)
    with pytest.raises(ValueError, match="W must have shape"):
        S.identify_sdp(robot, W[:, :-1], tau, base=base)
    with pytest.raises(ValueError, match="solver"):
        C.identify_consistent(robot, W, tau, base=base, solver="newton")
