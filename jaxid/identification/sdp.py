"""Physically consistent least squares as a semidefinite program: a certified reference.

The constrained least-squares problem of [`jaxid.identification.consistent`][jaxid.identification.consistent] is convex
in the standard parameters theta: the data misfit is a convex quadratic, each link's
4x4 pseudo-inertia ``J_i`` (linear in its 10 inertial parameters) must be positive
semidefinite (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
consistent inertial parameter identification", IEEE RA-L 3(1), 2018), the dissipative
joint terms, the rotor inertia and a spring's stiffness are non-negative (``ia, fv, fc, ks >= 0``;
``fs >= 0``, the Stribeck excess, i.e. static friction at least the Coulomb level), and mass bounds and a
centre-of-mass box (``m lo <= h <= m hi``, h = m c) and a box holding the whole body
(``S_aa <= (lo + hi) h_a - lo hi m``, [`Bounds`][jaxid.identification.consistent_problem.Bounds]) and a
bounding ellipsoid (``tr(Q J) >= 0``, the density realisability of the same paper) are linear. The entropic prior
``tr(J0^-1 J) - log det(J0^-1 J) - 4`` (Lee, Wensing and Park 2020) and the barrier
``x/x0 - 1 - log(x/x0)`` on the positive joint terms are convex too, so the same objective
as [`jaxid.identification.consistent.identify_consistent`][jaxid.identification.consistent.identify_consistent] (with any prior weight) is
solved here by an interior-point conic solver (Clarabel, Goulart and Chen 2024, through
cvxpy; Diamond and Boyd 2016), which reports the optimum with a primal-dual gap.

The misfit is written in the b-vector form of [`DataTerm`][jaxid.identification.consistent_problem.DataTerm]
(the WLS base estimate, its Cholesky-factored covariance and the whitened WLS residual), so
the program does not grow with the number of samples: ``b`` residuals, ``n`` 4x4 matrix
variables and ``n k`` joint terms.

Needs the optional extra: ``pip install jaxid[consistent-sdp]`` (cvxpy, clarabel).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxid.identification.base import BaseParameters, base_parameters
from jaxid.identification.consistent_problem import (
    PRIORS,
    Bounds,
    DataTerm,
    check_inputs,
    check_nominal,
    data_term,
    prior_reference,
)
from jaxid.model import inertia

__all__ = ["SDPFit", "identify_sdp", "solve_sdp", "require_cvxpy"]

INSTALL_HINT = "pip install jaxid[consistent-sdp]  (or: pip install cvxpy clarabel)"


@functools.cache
def _j_to_pi():
    """Linear map from the flattened 4x4 pseudo-inertia (16,) back to the inertial 10-vector."""
    pi_to_j = np.asarray(jax.jit(jax.vmap(inertia.pseudo_inertia))(jnp.eye(10))).reshape(10, 16).T
    return np.linalg.pinv(pi_to_j)


def require_cvxpy():
    """Import and return cvxpy, or raise ImportError naming the extra to install."""
    try:
        import cvxpy
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"the SDP reference needs cvxpy and a conic solver: {INSTALL_HINT}") from e
    return cvxpy


@dataclasses.dataclass(frozen=True)
class SDPFit:
    """Result of [`identify_sdp`][jaxid.identification.sdp.identify_sdp] / [`solve_sdp`][jaxid.identification.sdp.solve_sdp] (numpy arrays).

    Attributes:
        theta: optimal standard parameters (p,).
        base: their base parameters (b,).
        cost: optimal objective ``||Sigma^-1/2 (W theta - tau)||^2 + weight * prior``
            (the whitened misfit including the WLS residual ``rss``; the same quantity as
            ``ConsistentFit.cost``).
        data_cost: the misfit part, ``excess + rss``.
        excess: ``data_cost - rss``, the misfit above the unconstrained optimum (>= 0).
        rss: the whitened WLS residual (the unconstrained optimum of the misfit).
        status: the solver's status ("optimal", "optimal_inaccurate", ...).
        duality_gap: |primal - dual objective| reported by the solver (absolute, in cost units);
            NaN when the solver does not report its dual objective.
        solver: the solver used; iterations, seconds: its iterations and solve time.
        min_eig: smallest eigenvalue of each link's pseudo-inertia (n,).
    """

    theta: np.ndarray
    base: np.ndarray
    cost: float
    data_cost: float
    excess: float
    rss: float
    status: str
    duality_gap: float
    solver: str
    iterations: int
    seconds: float
    min_eig: np.ndarray


def solve_sdp(
    robot,
    base: BaseParameters,
    data: DataTerm,
    nominal,
    *,
    prior: str | None = None,
    weight: float = 0.0,
    bounds: Bounds | None = None,
    eps: float = 0.0,
    solver: str = "CLARABEL",
    solver_options: dict | None = None,
    passes: int = 2,
) -> SDPFit:
    """Solve the constrained problem from its sample-free data term ([`identify_sdp`][jaxid.identification.sdp.identify_sdp]
    documents the arguments; ``data`` is [`jaxid.identification.consistent_problem.data_term`][jaxid.identification.consistent_problem.data_term])."""
    cp = require_cvxpy()
    n, k = robot.n_joints, len(robot.joint_terms)
    nominal = jnp.asarray(nominal, dtype=float)
    if bounds is not None:
        bounds.check()
    if not (math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; choose one of {PRIORS}")
    weight = float(weight)
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight}")
    check_nominal(robot, nominal)
    pis0, x0, positive = (np.asarray(a) for a in prior_reference(robot, base, data.theta_ls, nominal))
    J0 = np.stack([np.asarray(inertia.pseudo_inertia(jnp.asarray(p))) for p in pis0])

    # Each link's variable is its pseudo-inertia divided by the nominal one's largest
    # eigenvalue, J_i = c_i^2 Y_i, so that the solver sees O(1) numbers whatever the link's
    # size. (A congruence J = C Y C^T with J0 = C C^T, the nominal metric, was measured to
    # give less accurate optima on the KUKA LWR4 data.)
    # With the entropic prior (log det in exponential cones) the congruence J = C Y C^T,
    # J0 = C C^T, is the one that solves on the KUKA LWR4 data.
    if weight > 0 and prior == "entropic":
        C_ = np.linalg.cholesky(J0)
    else:
        C_ = np.sqrt(np.maximum(np.abs(np.linalg.eigvalsh(J0)).max(axis=1), 1e-12))[:, None, None] * np.eye(4)
    jscale = np.where(positive, np.maximum(x0, 1e-6), 1.0) if k else np.ones((n, 0))
    B = base.matrix()
    A = np.linalg.solve(np.asarray(data.L), np.diag(1.0 / np.asarray(data.std)))  # L^-1 diag(1/std)
    R, rhs = A @ B, A @ np.asarray(data.theta_ls)
    rss = float(data.rss)
    c_scale = 1.0 / max(rss, 1.0)  # O(1) objective for the solver's tolerances
    opts = dict(solver_options or {})
    if solver.upper() == "CLARABEL":
        # Chordal decomposition of the 4x4 cones (Clarabel's default) splits each link into
        # overlapping cliques whose dual completion stalls at a primal residual of ~1e-8 on
        # the KUKA LWR4 data ("AlmostSolved": optimal_inaccurate); whole 4x4 cones solve to
        # "optimal". Feasibility and relative gap 1e-8 (Clarabel's defaults) of the O(1) scaled
        # objective are within reach in float64 (1e-9/1e-10 were not; runs 1+2 at weight 1e-3
        # stall at a relative gap of 3e-9); the gap reached is reported (duality_gap).
        opts = {
            "tol_gap_abs": 1e-10,
            "tol_gap_rel": 1e-8,
            "tol_feas": 1e-8,
            "max_iter": 500,
            "chordal_decomposition_enable": False,
            **opts,
        }

    J_TO_PI = _j_to_pi()

    def theta_of(Yl, xv):  # standard parameters from the scaled variables (numpy or cvxpy)
        if isinstance(xv, np.ndarray):
            parts = [J_TO_PI @ (C_[i] @ Yl[i] @ C_[i].T).ravel() for i in range(n)]
            return np.concatenate(parts + [(jscale * xv).ravel()])
        parts = [J_TO_PI @ cp.vec(C_[i] @ Yl[i] @ C_[i].T, order="C") for i in range(n)]
        if k:
            parts.append(cp.vec(cp.multiply(jscale, xv), order="C"))
        return cp.hstack(parts)

    def one_pass(Yref, xref):
        """Solve for the step (dY, dx) from a reference point: the objective's constant is
        then the reference misfit, not ||A theta_ls||^2, which would cancel digits."""
        dY = [cp.Variable((4, 4), symmetric=True, name=f"dY{i + 1}") for i in range(n)]
        dx = cp.Variable((n, k), name="dx") if k else np.zeros((n, 0))
        Ys = [Yref[i] + dY[i] for i in range(n)]
        xs = xref + dx
        Js = [C_[i] @ Ys[i] @ C_[i].T for i in range(n)]
        r_ref = R @ theta_of(Yref, xref) - rhs
        objective = cp.sum_squares(r_ref + R @ theta_of(dY, dx if k else np.zeros((n, 0))))
        cons = []
        for i in range(n):
            Cinv = np.linalg.inv(C_[i])
            cons.append(Ys[i] >> eps * (Cinv @ Cinv.T))
        if k and positive.any():
            cons.append(xs[positive] >= 0)
        if bounds is not None:
            body_axes, ellipsoids, Q = bounds.body_axes(), bounds.ellipsoid_links(), bounds.ellipsoid_Q()
            for i in range(n):
                m, h = Js[i][3, 3], Js[i][:3, 3]
                if bounds.mass_min[i] > 0:
                    cons.append(m >= bounds.mass_min[i])
                if np.isfinite(bounds.mass_max[i]):
                    cons.append(m <= bounds.mass_max[i])
                for a in range(3):
                    if np.isfinite(bounds.com_min[i, a]):
                        cons.append(h[a] >= bounds.com_min[i, a] * m)
                    if np.isfinite(bounds.com_max[i, a]):
                        cons.append(h[a] <= bounds.com_max[i, a] * m)
                    if body_axes[i, a]:  # the body in its box (Bounds.body_min)
                        lo, hi = bounds.body_min[i, a], bounds.body_max[i, a]
                        cons.append(Js[i][a, a] <= (lo + hi) * h[a] - lo * hi * m)
                if ellipsoids[i]:  # the body in its ellipsoid (Bounds.ellipsoid_axes)
                    cons.append(cp.trace(Q[i] @ Js[i]) >= 0)
            if bounds.total_mass is not None:
                total = cp.sum(cp.hstack([Js[i][3, 3] for i in range(n)]))
                lo, hi = bounds.total_mass
                if lo > 0:
                    cons.append(total >= lo)
                if math.isfinite(hi):
                    cons.append(total <= hi)
        prior_expr = 0.0
        if weight > 0:
            terms = []
            for i in range(n):
                if prior == "entropic":
                    Ci = np.linalg.inv(np.linalg.cholesky(J0[i])) @ C_[i]
                    terms.append(
                        cp.trace(Ci.T @ Ci @ Ys[i]) - cp.log_det(Ys[i]) - 2 * np.log(abs(np.linalg.det(Ci))) - 4.0
                    )
                elif prior == "euclidean":  # ||J0^-1/2 (J - J0) J0^-1/2||_F^2 / 2 = ||Y - 1||_F^2 / 2
                    Ci = np.linalg.inv(np.linalg.cholesky(J0[i])) @ C_[i]
                    terms.append(0.5 * cp.sum_squares(Ci @ Ys[i] @ Ci.T - np.eye(4)))
            if k and positive.any():
                # x/x0 - 1 - log(x/x0) with x = jscale * xs
                r0 = (x0 / jscale)[positive]
                xv = xs[positive]
                terms.append(cp.sum(cp.multiply(1.0 / r0, xv) - 1.0 - cp.log(xv) + np.log(r0)))
            if terms:
                prior_expr = weight * cp.sum(cp.hstack(terms))
        problem = cp.Problem(cp.Minimize(c_scale * (objective + prior_expr)), cons)
        from cvxpy.reductions.solvers.solver_inverse_data import SolverInverseData

        data_, chain, inverse = problem.get_problem_data(solver.upper())
        inverse[-1] = SolverInverseData(inverse[-1], chain.solver, opts)  # as Problem.solve does
        try:
            raw = chain.solve_via_data(
                problem, data_, warm_start=False, verbose=bool(opts.get("verbose")), solver_opts=opts
            )
            problem.unpack_results(raw, chain, inverse)
        except cp.error.SolverError as e:
            raise RuntimeError(f"SDP solver {solver} failed: {e}") from None
        status = problem.status
        if status in ("infeasible", "infeasible_inaccurate") and bounds is None:
            # Without bounds every link can be a body and every positive term zero: the problem is
            # feasible, so this status is the solver's numerical failure, not the user's bounds.
            raise RuntimeError(
                f"SDP solver {solver} reported {status!r} for a problem that is feasible without bounds "
                "(a numerical failure, e.g. on noise-free or badly scaled torques): no reference "
                "optimum; try solver='SCS', or check the data"
            )
        if status in ("infeasible", "infeasible_inaccurate"):
            raise ValueError(
                f"the constrained problem is infeasible (solver status {status!r}): the bounds contradict "
                "each other or physical consistency; check mass_min/mass_max, com_min/com_max and "
                "total_mass"
            )
        if status not in ("optimal", "optimal_inaccurate"):
            raise RuntimeError(f"SDP solver {solver} failed with status {status!r}")
        gap = float("nan")
        obj_p, obj_d = getattr(raw, "obj_val", None), getattr(raw, "obj_val_dual", None)
        if obj_p is not None and obj_d is not None:
            gap = abs(float(obj_p) - float(obj_d)) / c_scale
        Yv = [np.asarray(Yref[i] + dY[i].value) for i in range(n)]
        Yv = [(Y + Y.T) / 2 for Y in Yv]
        xv = np.asarray(xref + dx.value) if k else np.zeros((n, 0))
        it = getattr(raw, "iterations", None) or int(problem.solver_stats.num_iters or 0)
        value = float(problem.value)
        if not math.isfinite(value) and problem.solution is not None:
            # cvxpy's problem.value is the objective evaluated at the returned point, where the
            # prior's log det / log of a body or joint term the data push onto the cone's
            # boundary (singular to round-off; the Panda log at a 245 Hz cutoff) is -inf; the
            # solver's own optimum, through the cones' epigraph variables, is finite.
            value = float(problem.solution.opt_val)
        return Yv, xv, value / c_scale, status, gap, int(it)

    t0 = time.perf_counter()
    Yref, xref = (
        [np.linalg.solve(C_[i], np.linalg.solve(C_[i], J0[i]).T) for i in range(n)],
        np.where(positive, 1.0, 0.0) if k else np.zeros((n, 0)),
    )
    iterations, cost_prev = 0, math.inf
    best = None
    for _ in range(max(int(passes), 1)):
        try:
            out = one_pass(Yref, xref)
        except (RuntimeError, ValueError):
            if best is None:
                raise
            break  # a refinement pass that fails keeps the previous pass's solution
        iterations += out[-1]
        if not math.isfinite(out[2]) or (best is not None and out[2] > best[2]):
            break
        best = out
        Yref, xref, value, status, gap, it = out
        if abs(cost_prev - value) <= 1e-12 * (value + rss):
            break
        cost_prev = value
    if best is None:
        raise RuntimeError(f"SDP solver {solver} returned no finite optimum (try solver='SCS' or other tolerances)")
    seconds = time.perf_counter() - t0
    th = theta_of(Yref, xref)
    excess = float(np.sum((R @ th - rhs) ** 2))
    cost = value + rss
    Jv = np.stack([np.asarray(inertia.pseudo_inertia(jnp.asarray(th[10 * i : 10 * i + 10]))) for i in range(n)])
    return SDPFit(
        theta=th,
        base=B @ th,
        cost=cost,
        data_cost=excess + rss,
        excess=excess,
        rss=rss,
        status=status,
        duality_gap=gap,
        solver=solver.upper(),
        iterations=iterations,
        seconds=seconds,
        min_eig=np.linalg.eigvalsh(Jv)[:, 0],
    )


def identify_sdp(
    robot,
    W,
    tau,
    *,
    nominal=None,
    base: BaseParameters | None = None,
    prior: str | None = None,
    weight: float = 0.0,
    method: str = "wls",
    bounds: Bounds | None = None,
    eps: float = 0.0,
    solver: str = "CLARABEL",
    solver_options: dict | None = None,
) -> SDPFit:
    """Globally optimal physically consistent standard parameters by semidefinite programming.

    Minimises ``||Sigma^-1/2 (W theta - tau)||^2 + weight * prior(theta)`` (the objective of
    [`identify_consistent`][jaxid.identification.consistent.identify_consistent], same whitening and prior)
    subject to every link's pseudo-inertia ``J_i >= eps I``, the positive joint terms
    (ia, fv, fc, fs, ks) >= 0 and the optional ``bounds``.

    Args:
        robot, W, tau, nominal, base, method: as ``identify_consistent``.
        prior: None (no prior), "entropic" or "euclidean"; used only when weight > 0.
        weight: prior weight >= 0 (0: pure constrained least squares).
        bounds: [`Bounds`][jaxid.identification.consistent_problem.Bounds] (mass, centre-of-mass box, body box,
            total mass), or None.
        eps: margin on the pseudo-inertia eigenvalues (kg m^2), default 0.
        solver: a cvxpy conic solver name with SDP support, "CLARABEL" (default) or "SCS".
        solver_options: passed to the solver (Clarabel defaults here: relative gap and
            feasibility 1e-8, absolute gap 1e-10, no chordal decomposition).

    Returns:
        [`SDPFit`][jaxid.identification.sdp.SDPFit].

    Raises:
        ImportError: cvxpy/clarabel missing (the message names ``jaxid[consistent-sdp]``).
        ValueError: bad input as ``identify_consistent``; contradicting bounds (naming the
            link and bound); a problem the solver finds infeasible.
        RuntimeError: the solver fails for another reason.
    """
    require_cvxpy()
    W, tau = check_inputs(robot, W, tau, method)
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    p = len(robot.parameter_names())
    if len(base.standard_names) != p:
        raise ValueError(f"base has {len(base.standard_names)} standard parameters but the robot has {p}")
    if nominal.shape != (p,) or not np.all(np.isfinite(np.asarray(nominal))):
        raise ValueError(f"nominal must be a finite parameter vector of shape ({p},), got shape {nominal.shape}")
    data = data_term(robot, base, W, tau, method)
    return solve_sdp(
        robot,
        base,
        data,
        nominal,
        prior=prior,
        weight=weight,
        bounds=bounds,
        eps=eps,
        solver=solver,
        solver_options=solver_options,
    )
