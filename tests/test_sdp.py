"""The SDP reference (cvxpy + Clarabel) and the JAX barrier fit: same optimum, bounds
respected, contradicting bounds reported."""

import numpy as np
import pytest

pytest.importorskip("cvxpy")
pytest.importorskip("clarabel")

from test_consistent import arm3, random_runs  # noqa: E402

import jaxid  # noqa: E402
from jaxid.identification import consistent as C  # noqa: E402
from jaxid.identification import sdp as S  # noqa: E402

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


# weight 0 (no finite optimum: the barrier runs 1000 steps unconverged) is slow; weight 0 against the SDP
# with a finite optimum stays in make test: test_weight_zero_converges_with_bodies_in_boxes.
@pytest.mark.parametrize("weight", [pytest.param(0.0, marks=pytest.mark.slow), 1e-3])
def test_sdp_and_barrier_agree(problem, weight):
    robot, W, tau, base, nominal = problem
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, prior="entropic", weight=weight)
    assert ref.status == "optimal"
    # weight 0: the infimum is approached only as bodies grow without bound along directions
    # the data cannot see (the SDP's own solution has pseudo-inertia eigenvalues ~1e4 against
    # ~3-7 nominal), so the barrier's gap estimate does not certify it; its cost still comes
    # within 1e-6.
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=weight)
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


def test_weight_zero_converges_with_bodies_in_boxes(problem):
    """With each link's whole body in a box (and its mass in an interval) the pure constrained
    least squares has a finite optimum: the barrier certifies it by its own criterion and
    meets the SDP; both bodies stay in their boxes (second moment S_aa <= (lo+hi) h_a - lo hi m)."""
    robot, W, tau, base, nominal = problem
    pis = np.asarray(robot.parameter_vector()[:30]).reshape(3, 10)
    c = pis[:, 1:4] / pis[:, :1]
    bounds = C.Bounds.make(robot, mass_min=0.5 * pis[:, 0], mass_max=2 * pis[:, 0], body_min=c - 0.5, body_max=c + 0.5)
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, weight=0.0, bounds=bounds)
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=0.0, bounds=bounds)
    assert ref.status == "optimal" and bool(fit.converged) and int(fit.num_steps) < 300
    assert abs(float(fit.cost) / ref.cost - 1) < 1e-6
    assert float(fit.gap_bound) <= 1e-9 * float(fit.cost)
    lo, hi = bounds.body_min, bounds.body_max
    for theta, tol in ((ref.theta, 1e-6), (np.asarray(fit.theta), 0.0)):
        b = np.asarray(theta[:30]).reshape(3, 10)
        second = np.stack([np.diag(np.asarray(jaxid.model.inertia.pseudo_inertia(x)))[:3] for x in b])
        assert np.all(second <= (lo + hi) * b[:, 1:4] - lo * hi * b[:, :1] + tol)
    # the boxes bind: without them the (unattained) optimum is lower
    assert S.identify_sdp(robot, W, tau, nominal=nominal, base=base, weight=0.0).cost < ref.cost


def test_body_in_geometry_flag_boxes_each_whole_link():
    """--body-in-geometry: each link's whole body (and so its centre of mass) in its capsules' box."""
    from jaxid.workflow import commands, requests

    robot = jaxid.models.ur5()
    b = commands.bounds(requests.BoundsSpec(mass_tol=0.3, body_in_geometry=True), robot)
    assert np.all(np.isfinite(b.body_min)) and np.all(b.body_max > b.body_min)
    np.testing.assert_array_equal(b.com_min, b.body_min)
    np.testing.assert_array_equal(b.com_max, b.body_max)


def test_contradicting_bounds_are_named(problem):
    robot, W, tau, base, nominal = problem
    with pytest.raises(ValueError, match=r"link joint2: mass_min = 3 kg > mass_max = 1 kg"):
        C.Bounds.make(robot, mass_min=[0.5, 3.0, 0.5], mass_max=[5.0, 1.0, 5.0])
    with pytest.raises(ValueError, match=r"link joint1: com_min\[y\]"):
        C.Bounds.make(robot, com_min=[[0, 0.1, 0]] * 3, com_max=[[0.1, 0.0, 0.1]] * 3)
    with pytest.raises(ValueError, match=r"link joint3: the centre-of-mass box and body box do not overlap along x"):
        C.Bounds.make(robot, com_min=[[-1, -1, -1]] * 2 + [[0.5, -1, -1]], body_max=0.2)
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


def test_static_friction_at_least_coulomb_in_both(problem):
    """Data whose Stribeck excess fs - fc is negative (static below Coulomb friction): WLS
    follows them, both constrained fits keep fs >= fc (the excess at 0 or above)."""
    robot = arm3().with_joint_terms(("fv", "fc", "fs"), np.tile([0.3, 0.5, -0.4], (3, 1)))
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.normal(size=(N, 3)) for _ in range(3))
    qd = 0.3 * qd  # inside the Stribeck region, where the fs column is large
    W = jaxid.stack(jaxid.regressor(robot, q, qd, qdd))
    tau = W @ robot.parameter_vector() + 0.01 * rng.normal(size=W.shape[0])
    base = jaxid.base_from_regressor(W, robot.parameter_names())
    fs = [robot.parameter_names().index(f"fs{j + 1}") for j in range(3)]
    fit = C.identify_consistent(robot, W, tau, base=base, weight=1e-3)
    ref = S.identify_sdp(robot, W, tau, base=base, prior="entropic", weight=1e-3)
    assert np.all(np.asarray(fit.base_ls)[[list(base.names).index(f"fs{j + 1}") for j in range(3)]] < 0)
    assert bool(fit.converged) and np.all(np.asarray(fit.theta)[fs] >= 0) and np.all(ref.theta[fs] >= -1e-9)
    assert abs(float(fit.cost) / ref.cost - 1) < 1e-6


def test_inconsistent_cad_link_is_named(problem):
    robot, W, tau, base, nominal = problem
    bad = np.asarray(nominal).copy()
    bad[10 + 4] = -1.0  # link 2's Ixx far below zero: the triangle inequality fails
    for solve in (C.identify_consistent, S.identify_sdp):
        with pytest.raises(ValueError, match=r"link joint2: the nominal \(CAD\) body is not physically consistent"):
            solve(robot, W, tau, nominal=bad, base=base)


def test_com_box_from_collision_capsules():
    from jaxid.model.geometry import Capsules

    robot = arm3()
    c2 = np.asarray(robot.inertial)[1, 1:4] / np.asarray(robot.inertial)[1, 0]  # in the joint frame
    ends = np.array([c2 - [0.2, 0, 0], c2 + [0.2, 0, 0], c2 + [0.2, 0, 0.1]])
    caps = Capsules(
        link=np.array([1, 1, -1]),
        a=np.stack([ends[0], ends[1], np.zeros(3)]),
        b=np.stack([ends[1], ends[2], [0, 0, 1.0]]),
        radius=np.array([0.05, 0.02, 0.1]),
        names=("l2", "l2", "base"),
    )
    geo = C.Bounds.from_geometry(robot, caps)
    assert np.allclose(geo.com_min[1], c2 + [-0.25, -0.05, -0.05]) and np.allclose(
        geo.com_max[1], c2 + [0.25, 0.05, 0.12]
    )
    assert np.all(np.isinf(geo.com_min[[0, 2]]))  # links without capsules: unbounded
    both = C.Bounds.from_nominal(robot, mass_tol=0.2, com_margin=0.1).intersect(geo)
    assert np.allclose(both.com_max[1], c2 + [0.1, 0.05, 0.1]) and np.isfinite(both.mass_max).all()
    far = Capsules(
        link=np.array([1]), a=np.array([[5.0, 5, 5]]), b=np.array([[5.0, 5, 6]]), radius=np.array([0.1]), names=("l2",)
    )
    with pytest.raises(ValueError, match=r"link joint2: com_min\[x\]"):
        C.Bounds.from_nominal(robot, com_margin=0.1).intersect(C.Bounds.from_geometry(robot, far))


def test_crossval_every_rotation():
    from jaxid import workflow

    robot = arm3()
    prepared = random_runs(robot, runs=3, samples=60, noise=0.05, seed=3)
    cv = workflow.crossval(robot, prepared, weights=(1e-3, 1e-1))
    assert [r["test"] for r in cv["rotations"]] == ["run1", "run2", "run3"]
    assert all(r["train"] == [s for s in ("run1", "run2", "run3") if s != r["test"]] for r in cv["rotations"])
    for r in cv["rotations"]:
        assert [x["model"] for x in r["rows"]] == ["wls", "consistent", "consistent"]
        assert all(x["converged"] and x["valid"] for x in r["rows"][1:])
    assert cv["least"] in (1e-3, 1e-1) and cv["mean_nrms_limits"][cv["least"]] == min(cv["mean_nrms_limits"].values())
    assert cv["chosen"] >= cv["least"] and cv["mean_nrms_limits"][cv["chosen"]] <= cv["tolerance"]


def test_a_body_on_the_boundary_keeps_a_finite_optimum(problem):
    # Link 3 a point mass (pseudo-inertia of rank 1) and nearly noise-free torques: the optimum
    # puts that body at the cone's boundary to round-off, where cvxpy's problem.value (the
    # objective evaluated at the returned point, log det of a singular body) is inf although the
    # solver's optimum is finite (the Panda log at a 245 Hz cutoff did this). The SDP must
    # still give its optimum, and the barrier fit reach it. (The module's W: compiled programs shared.)
    robot, W, _, base, nominal = problem
    rng = np.random.default_rng(1)
    theta = np.asarray(robot.parameter_vector()).copy()
    m, c = theta[20], theta[21:24] / theta[20]
    theta[24:30] = m * np.array(
        [c[1] ** 2 + c[2] ** 2, -c[0] * c[1], -c[0] * c[2], c[0] ** 2 + c[2] ** 2, -c[1] * c[2], c[0] ** 2 + c[1] ** 2]
    )  # the point mass's inertia at the joint frame
    tau = W @ theta + 1e-3 * rng.normal(size=W.shape[0])
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, prior="entropic", weight=1e-3)
    assert ref.status == "optimal" and np.isfinite(ref.cost)
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=1e-3)
    assert bool(fit.converged) and abs(float(fit.cost) / ref.cost - 1) < 1e-6


def test_bodies_in_their_ellipsoids_jax_equals_sdp(problem):
    """The default bounds of a consistent fit (each body in its link's bounding ellipsoid,
    tr(Q J) >= 0): the barrier fit meets the SDP, every returned body satisfies the LMI, and the
    ellipsoids bind (the fit without them is cheaper)."""
    from jaxid.model import inertia
    from jaxid.workflow.consistency import geometry_bounds

    robot, W, tau, base, nominal = problem
    bounds = geometry_bounds(robot)
    assert np.all(bounds.ellipsoid_links())
    ref = S.identify_sdp(robot, W, tau, nominal=nominal, base=base, prior="entropic", weight=1e-3, bounds=bounds)
    fit = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=1e-3, bounds=bounds)
    assert ref.status == "optimal" and bool(fit.converged)
    assert abs(float(fit.cost) / ref.cost - 1) < 1e-6
    Q = bounds.ellipsoid_Q()
    for theta, tol in ((ref.theta, 1e-7), (np.asarray(fit.theta), 0.0)):
        J = np.stack([np.asarray(inertia.pseudo_inertia(p)) for p in np.asarray(theta[:30]).reshape(3, 10)])
        assert np.all(np.einsum("nij,nji->n", Q, J) >= -tol * np.abs(J).max())
    free = C.identify_consistent(robot, W, tau, nominal=nominal, base=base, weight=1e-3)
    assert float(free.cost) < float(fit.cost) * (1 - 1e-6)
