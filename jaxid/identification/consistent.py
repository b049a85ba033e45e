"""Physically consistent identification: log-Cholesky inertias, positive friction, and a
prior toward nominal (CAD) parameters.

Least squares on the base parameters fits the torques but says nothing about the
non-identifiable directions, and noise or unmodelled effects can push the identified
bodies out of the physical set (negative mass, an inertia that breaks the triangle
inequalities). Here every link is parametrised by the log-Cholesky factor of its 4x4
pseudo-inertia ``J = U U^T`` (Rucker and Wensing, "Smooth parameterization of rigid-body
inertia", IEEE RA-L 7(2), 2022), so each parameter value is a physical body, and the
positive joint terms (armature ``ia``, viscous ``fv``, Coulomb ``fc``) are ``exp`` of a
free variable; offsets stay free. A trust-region Gauss-Newton method (optimistix
``Dogleg``, Powell 1970) minimises

    ||r_data||^2 + weight * (sum_links D(J_i, J0_i) + sum_positive_terms d(x_j, x0_j)),

where ``r_data`` is the whitened torque residual of the base parameters. For a model
linear in its parameters, ``||Sigma^-1/2 (W_b theta_b - tau)||^2`` equals, up to a
constant, ``(theta_b - theta_wls)^T cov^-1 (theta_b - theta_wls)`` with the WLS estimate
and its covariance ``cov = (W_b^T Sigma^-1 W_b)^-1``: the fit uses that b-vector form, so
its cost does not grow with the number of samples. The prior ``D`` pulls what the data
leave free toward the nominal bodies ``J0``:

- ``"entropic"``: the Bregman divergence of ``-log det``,
  ``D = tr(J0^-1 J) - log det(J0^-1 J) - 4`` (Lee, Wensing and Park, "Geometric robot
  dynamic identification: a convex programming approach", IEEE T-RO 36(2), 2020). With
  ``A = U0^-1 U`` upper triangular it is the sum of squares
  ``sum_{i<j} A_ij^2 + sum_i (A_ii^2 - 1 - 2 log A_ii)``, written here as a residual; it
  grows without bound at the boundary of the physical set, so any positive weight keeps
  the estimate strictly inside it.
- ``"euclidean"``: ``||J0^-1/2 (J - J0) J0^-1/2||_F^2 / 2``, the quadratic (Euclidean in
  theta) expansion of the entropic divergence at ``J0``: unit-free, unlike a plain
  ``||theta - theta0||^2``.

The positive joint terms x get the scalar version ``d = x/x0 - 1 - log(x/x0)``, a barrier
at 0 that only matters where the data push a term below zero. The weight is lowered
geometrically from the initial misfit to its final value over ``stages`` warm-started
solves (continuation, as along the central path of interior-point methods; Nocedal and
Wright, "Numerical Optimization", 2nd ed., 2006, ch. 19): near the final weight the
log-Cholesky map bends the data's flat directions into curved valleys, in which a
trust region started far away crawls. With ``weight = 0`` and a consistent WLS estimate
the result reproduces the WLS base parameters.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

from jaxid.identification.base import BaseParameters, base_parameters
from jaxid.identification.estimators import identify
from jaxid.model import inertia

__all__ = ["ConsistentFit", "PRIORS", "POSITIVE_TERMS", "identify_consistent", "consistent_estimator",
           "project_consistent", "lift", "to_urdf", "entropic_divergence"]

PRIORS = (None, "euclidean", "entropic")
#: Joint terms constrained to be >= 0 (``exp`` parametrisation): inertia, dissipative friction and
#: the Stribeck excess (static friction at least the Coulomb level); offset and the asymmetric
#: viscous term fva are free in sign.
POSITIVE_TERMS = ("ia", "fv", "fc", "fs")
_TRIU = np.triu_indices(4)
_OFF = np.triu_indices(4, 1)


class ConsistentFit(eqx.Module):
    """Result of :func:`identify_consistent`.

    Attributes:
        theta: standard parameters (p,): n inertial 10-vectors then the joint terms.
        base: their base parameters ``base.to_base(theta)``, shape (b,).
        base_ls: the unconstrained (WLS) base estimate, shape (b,).
        std_ls: its standard deviations, shape (b,).
        residual_rms: RMS of ``tau - W @ theta`` per joint, shape (n,), N m.
        link_consistent: pseudo-inertia of each link positive definite, shape (n,), bool.
        joint_valid: every positive joint term (ia, fv, fc) >= 0, shape (n,), bool.
        valid: all links consistent and all joints valid, bool.
        cost: final value of ``||r_data||^2 + weight * sum D``.
        converged: the last continuation stage met its tolerance within max_steps.
        num_steps: Gauss-Newton steps taken over all stages.
    """

    theta: jax.Array
    base: jax.Array
    base_ls: jax.Array
    std_ls: jax.Array
    residual_rms: jax.Array
    link_consistent: jax.Array
    joint_valid: jax.Array
    valid: jax.Array
    cost: jax.Array
    converged: jax.Array
    num_steps: jax.Array


# ------------------------------------------------------------------------ parametrisation
def _factor(z):
    """Upper-triangular U (4, 4) with ``J = U U^T`` and log|diag U| from log-Cholesky z (10,),
    in the layout of :func:`jaxid.model.inertia.log_cholesky_to_inertial`."""
    return inertia.log_cholesky_factor(z), z[0] + jnp.array([z[1], z[2], z[3], 0.0])


def project_consistent(pi, rel_floor: float = 1e-6):
    """Nearest-in-eigenvalues consistent bodies: the pseudo-inertia of each pi (..., 10) with
    its eigenvalues raised to ``rel_floor`` times the largest eigenvalue over all bodies
    (so a massless link becomes a small, well-posed one). Consistent input is unchanged
    when its eigenvalues are above the floor."""
    J = jnp.vectorize(inertia.pseudo_inertia, signature="(k)->(a,a)")(jnp.asarray(pi, dtype=float))
    lam, V = jnp.linalg.eigh(J)
    floor = rel_floor * jnp.maximum(jnp.max(jnp.abs(lam)), 1e-300)
    Jp = (V * jnp.maximum(lam, floor)[..., None, :]) @ jnp.swapaxes(V, -1, -2)
    return jnp.vectorize(inertia.from_pseudo_inertia, signature="(a,a)->(k)")(Jp)


def _phi(l):
    """Signed square root of ``e^{2l} - 1 - 2l`` (>= 0, double zero at l = 0), smooth:
    ``l * sqrt(q(l))`` with ``q = (e^{2l} - 1 - 2l) / l^2`` from its series near 0, where
    the closed form cancels."""
    small = jnp.abs(l) < 1e-2
    ls = jnp.where(small, 1.0, l)
    exact = (jnp.expm1(2 * ls) - 2 * ls) / ls**2
    series = 2 + l * (4 / 3 + l * (2 / 3 + l * (4 / 15 + l * 4 / 45)))
    return l * jnp.sqrt(jnp.where(small, series, exact))


def _prior_residual(z, U0inv, logdiag0, prior):
    """Residual (10,) of one link with ``||r||^2 = D(J(z), J0)``."""
    U, logdiag = _factor(z)
    A = U0inv @ U
    if prior == "entropic":
        return jnp.concatenate([A[_OFF], _phi(logdiag - logdiag0)])
    E = A @ A.T - jnp.eye(4)
    return E[_TRIU] * jnp.where(_TRIU[0] == _TRIU[1], math.sqrt(0.5), 1.0)


def entropic_divergence(pi, pi0):
    """Entropic (log-det Bregman) divergence ``tr(J0^-1 J) - log det(J0^-1 J) - 4`` between the
    pseudo-inertias of consistent bodies pi, pi0 (10,) (Lee, Wensing and Park 2020); >= 0,
    zero iff pi == pi0, dimensionless."""
    J, J0 = inertia.pseudo_inertia(pi), inertia.pseudo_inertia(pi0)
    M = jnp.linalg.solve(J0, J)
    return jnp.trace(M) - jnp.linalg.slogdet(M)[1] - 4.0


# ---------------------------------------------------------------------------- numeric core
class _Problem(eqx.Module):
    """Everything the solve needs except the data; static fields fix the compile."""

    base: BaseParameters
    z0: jax.Array          # (n, 10) log-Cholesky start (projected nominal)
    U0inv: jax.Array       # (n, 4, 4) inverse nominal factors
    logdiag0: jax.Array    # (n, 4)
    positive: jax.Array    # (n, k) bool
    n: int = eqx.field(static=True)
    k: int = eqx.field(static=True)
    prior: str | None = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)
    rtol: float = eqx.field(static=True)
    stages: int = eqx.field(static=True)

    def theta(self, y):
        zl, u = y
        pis = jax.vmap(inertia.log_cholesky_to_inertial)(zl)
        joint = jnp.where(self.positive, jnp.exp(u), u)
        return jnp.concatenate([pis.ravel(), joint.ravel()])


def _solve(problem: _Problem, theta_ls, cov, nominal, weight):
    """Consistent standard theta (p,), cost, converged, steps from a base estimate and its
    covariance. Pure; vmappable over theta_ls / cov / weight."""
    std = jnp.sqrt(jnp.diag(cov))
    std = jnp.where(std > 0, std, 1.0)
    L = jnp.linalg.cholesky(cov / jnp.outer(std, std))
    # Joint terms start from the data (they are identifiable; a CAD model rarely has
    # them): the WLS estimate, dependent columns at nominal, made positive where needed.
    joint0 = lift(problem.base, theta_ls, nominal)[10 * problem.n:].reshape(problem.n, problem.k)
    joint_nom = nominal[10 * problem.n:].reshape(problem.n, problem.k)
    u0 = jnp.where(problem.positive, jnp.log(jnp.maximum(jnp.abs(joint0), 1e-12)), joint0)
    logx0 = jnp.where(joint_nom > 0, jnp.log(jnp.where(joint_nom > 0, joint_nom, 1.0)), u0)

    def residual(y, w):
        d = (problem.base.to_base(problem.theta(y)) - theta_ls) / std
        r = jax.scipy.linalg.solve_triangular(L, d, lower=True)
        sw = jnp.sqrt(w)
        # Barrier D(x || x0) = x/x0 - 1 - log(x/x0) of the positive joint terms: keeps
        # an estimate that the data push below zero at a small positive value.
        rj = _phi(jnp.where(problem.positive, 0.5 * (y[1] - logx0), 0.0))
        if problem.prior is None:
            return r, sw * rj
        rp = jax.vmap(_prior_residual, in_axes=(0, 0, 0, None))(y[0], problem.U0inv, problem.logdiag0,
                                                                  problem.prior)
        return r, sw * rj, sw * rp

    # Continuation in the weight (the central path of interior-point methods): the
    # first stage, prior as heavy as the data misfit at the start, is solved near the
    # nominal bodies; each later stage starts at the previous optimum. Straight from
    # the nominal start at a small weight, the trust region stays small along the curved
    # valleys that the log-Cholesky map makes of the data's flat directions (measured on
    # the KUKA LWR4 data at weight 1e-3: after 1,000 steps the cost is still 3.5 times
    # the constrained least-squares optimum of a conic solver; 8 stages come within 5 %
    # of it in 660 steps).
    y0 = (problem.z0, u0)
    c0 = jnp.sum(residual(y0, 0.0)[0] ** 2)
    hi, lo = jnp.maximum(c0, weight), jnp.maximum(weight, 1e-10 * c0)
    frac = jnp.arange(problem.stages - 1) / max(problem.stages - 2, 1)
    ws = jnp.concatenate([hi * (lo / hi) ** frac, weight[None]])
    solver = optx.Dogleg(rtol=problem.rtol, atol=problem.rtol, linear_solver=lx.SVD())

    def stage(carry, w):
        y, steps = carry
        sol = optx.least_squares(residual, solver, y, args=w, max_steps=problem.max_steps, throw=False)
        return (sol.value, steps + sol.stats["num_steps"]), sol.result == optx.RESULTS.successful

    (y, steps), ok = jax.lax.scan(stage, (y0, jnp.zeros((), int)), ws)
    conv = ok[-1]
    r = residual(y, weight)
    cost = sum(jnp.sum(x**2) for x in jax.tree.leaves(r))
    return problem.theta(y), cost, conv, steps


_solve_jit = eqx.filter_jit(_solve)


def _validity(robot, theta):
    inertial, joint = robot.split(theta)
    links = inertia.is_consistent(inertial)
    positive = jnp.array([t in POSITIVE_TERMS for t in robot.joint_terms], dtype=bool)
    joints = jnp.all(jnp.where(positive, joint >= 0, True), axis=1)
    return links, joints


# ------------------------------------------------------------------------------ public API
def _problem(robot, base, nominal, prior, stages, max_steps, rtol) -> _Problem:
    if prior not in PRIORS:
        raise ValueError(f"unknown prior {prior!r}; choose one of {PRIORS}")
    n, k = robot.n, len(robot.joint_terms)
    p = 10 * n + n * k
    if len(base.standard_names) != p:
        raise ValueError(f"base has {len(base.standard_names)} standard parameters but the robot has {p}; "
                         "build it with jaxid.base_parameters(robot) for this robot and joint terms")
    if nominal.shape != (p,) or not np.all(np.isfinite(np.asarray(nominal))):
        raise ValueError(f"nominal must be a finite parameter vector of shape ({p},), got shape {nominal.shape}")
    if int(stages) < 1 or int(max_steps) < 1:
        raise ValueError(f"stages and max_steps must be >= 1, got {stages} and {max_steps}")
    if not 0 < rtol < 1:
        raise ValueError(f"rtol must be in (0, 1), got {rtol}")
    pis = project_consistent(nominal[: 10 * n].reshape(n, 10))
    z0 = jax.vmap(inertia.inertial_to_log_cholesky)(pis)
    U0, logdiag0 = jax.vmap(_factor)(z0)
    U0inv = jax.vmap(lambda U: jax.scipy.linalg.solve_triangular(U, jnp.eye(4), lower=False))(U0)
    positive = jnp.broadcast_to(jnp.array([t in POSITIVE_TERMS for t in robot.joint_terms], dtype=bool), (n, k))
    return _Problem(base, z0, U0inv, logdiag0, positive, n, k, prior, int(max_steps), float(rtol), int(stages))


def _check_weight(weight):
    w = float(weight)
    if not (math.isfinite(w) and w >= 0):
        raise ValueError(f"weight must be a finite number >= 0, got {weight}")
    return jnp.asarray(w)


def consistent_estimator(robot, base: BaseParameters | None = None, nominal=None, *, prior="entropic",
                         weight: float = 1e-3, stages: int = 8, max_steps: int = 100, rtol: float = 1e-8):
    """A pure estimator ``f(W_b, tau, key) -> theta_b (b,)`` for :func:`jaxid.study.run_study`:
    two-step WLS on the reduced regressor W_b (M, b) = ``base.reduce(W)``, then the
    consistent fit, returning its base parameters; arguments as :func:`identify_consistent`
    (key is unused). Jittable and vmappable over tau."""
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    problem = _problem(robot, base, nominal, prior, stages, max_steps, rtol)
    weight = _check_weight(weight)

    def consistent(W_b, tau, key=None):
        ls = identify(W_b, tau, method="wls", n_joints=robot.n)
        return base.to_base(_solve(problem, ls.theta, ls.cov, nominal, weight)[0])

    return consistent


def identify_consistent(robot, W, tau, *, nominal=None, base: BaseParameters | None = None,
                        prior: str | None = "entropic", weight: float = 1e-3, method: str = "wls",
                        stages: int = 8, max_steps: int = 100, rtol: float = 1e-8) -> ConsistentFit:
    """Physically consistent standard parameters of ``robot`` from torque data.

    Args:
        robot: the ``Robot`` whose parameters are identified (links, joint terms).
        W: stacked sample-major regressor of the robot's standard parameters, (N*n, p) or
            (N, n, p) (``jaxid.regressor`` then ``jaxid.stack``).
        tau: measured torques, (N*n,) or (N, n), N m.
        nominal: prior (CAD) parameters (p,), default ``robot.parameter_vector()``; its
            links, projected to consistent bodies (:func:`project_consistent`), are the
            starting point and the ``J0`` of the prior. Positive joint terms start from
            the WLS estimate (its absolute value).
        base: base parameters to fit, default ``jaxid.base_parameters(robot)`` (structural).
        prior: ``"entropic"``, ``"euclidean"`` or None (module docstring).
        weight: prior weight >= 0 in units of the whitened squared residual (each sample
            of each joint adds about 1 to ``||r_data||^2``), so 1e-3 (default) is a
            thousandth of one sample: it fixes the directions the data cannot see and
            leaves the others to the data. It also weighs a barrier
            ``x/x0 - 1 - log(x/x0)`` on the positive joint terms (x0: nominal value if
            positive, else |WLS estimate|). With weight > 0 and the entropic prior every
            body and positive term stays strictly inside the physical set.
        method: unconstrained estimator giving theta_ls and its covariance: "wls"
            (two-step, Gautier and Poignet 2001) or "ols".
        stages: continuation stages: the weight goes geometrically from the initial data
            misfit down to ``weight`` (last stage exactly ``weight``), each stage warm
            started from the last.
        max_steps: trust-region Gauss-Newton steps per stage (optimistix ``Dogleg``,
            SVD linear solves, so that the rank-deficient Jacobian of a zero weight is
            handled).
        rtol: relative (and absolute) tolerance on the step and the residual.

    Returns:
        :class:`ConsistentFit`. Every returned body is consistent up to rounding (its
        pseudo-inertia is ``U U^T``); with ``weight = 0`` or the Euclidean prior an
        optimum on the boundary of the physical set (a degenerate body, a zero friction)
        is approached but not reached, so ``converged`` may be False and
        ``link_consistent`` False for a body at rounding distance from the boundary.

    Raises:
        ValueError: bad shapes, NaN/inf, unknown prior or method, negative weight, a base
        that does not belong to the robot, or a rank-deficient reduced regressor.
    """
    if method not in ("wls", "ols"):
        raise ValueError(f"method must be 'wls' or 'ols', got {method!r}")
    W, tau = jnp.asarray(W, dtype=float), jnp.asarray(tau, dtype=float)
    n = robot.n
    if W.ndim == 3:
        W, tau = W.reshape(-1, W.shape[-1]), tau.reshape(-1)
    p = len(robot.parameter_names())
    if W.ndim != 2 or W.shape[1] != p:
        raise ValueError(f"W must have shape (N*n, {p}) (the robot's standard regressor), got {W.shape}")
    if tau.shape != (W.shape[0],) or W.shape[0] % n:
        raise ValueError(f"tau must have shape ({W.shape[0]},) and W {W.shape} must have a multiple of n={n} rows; "
                         f"got tau {tau.shape}")
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    problem = _problem(robot, base, nominal, prior, stages, max_steps, rtol)
    weight = _check_weight(weight)
    ls = identify(base.reduce(W), tau, method=method, n_joints=n, names=list(base.names))
    theta, cost, converged, steps = _solve_jit(problem, ls.theta, ls.cov, nominal, weight)
    links, joints = _validity(robot, theta)
    r = (tau - W @ theta).reshape(-1, n)
    return ConsistentFit(
        theta=theta, base=base.to_base(theta), base_ls=ls.theta, std_ls=ls.std,
        residual_rms=jnp.sqrt(jnp.mean(r**2, axis=0)), link_consistent=links, joint_valid=joints,
        valid=jnp.all(links) & jnp.all(joints), cost=cost, converged=converged, num_steps=steps,
    )


def lift(base: BaseParameters, theta_b, nominal):
    """Standard parameters (p,) whose base parameters are theta_b (b,), with the
    non-identifiable (dependent) ones at their nominal values: how an unconstrained base
    estimate is turned into bodies, e.g. to count its physically invalid links."""
    theta_b, nominal = jnp.asarray(theta_b, dtype=float), jnp.asarray(nominal, dtype=float)
    return nominal.at[base.indices].set(theta_b - base.K @ nominal[base.dependent])


# ----------------------------------------------------------------------------------- URDF
def _rpy(R):
    """URDF roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.cos(pitch) > 1e-9:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0  # gimbal lock: put the rotation in roll


def _origin(parent, T):
    T = np.asarray(T, dtype=float)
    ET.SubElement(parent, "origin", xyz=" ".join(f"{x:.17g}" for x in T[:3, 3]),
                  rpy=" ".join(f"{x + 0.0:.17g}" for x in _rpy(T[:3, :3])))


def to_urdf(robot, theta, path, *, name: str | None = None) -> Path:
    """Write ``robot`` with parameters theta (p,) as a URDF file and return its path.

    Links ``<joint name>_link`` hang from ``base_link``; each joint keeps the robot's
    placement, axis and limits (infinite limits are left out; a revolute joint without
    position limits is written ``continuous``), and the flange is a massless link behind a
    fixed joint. Each link's ``<inertial>`` holds its mass (kg), centre of mass (m) and
    inertia about the centre of mass (kg m^2) in the joint frame. Joint terms (friction)
    have no URDF element and are not written. Reading the file back with
    ``Robot.from_urdf`` gives the same dynamics.

    Raises:
        ValueError: theta has the wrong shape or is not finite, or a link is not
        physically consistent (a URDF body needs m > 0 and a valid inertia).
    """
    theta = np.asarray(theta, dtype=float)
    p = len(robot.parameter_names())
    if theta.shape != (p,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be a finite vector of shape ({p},), got shape {theta.shape}")
    inertial, _ = robot.split(jnp.asarray(theta))
    bad = np.flatnonzero(~np.asarray(inertia.is_consistent(inertial)))
    if bad.size:
        raise ValueError(f"links {[robot.names[i] for i in bad]} are not physically consistent "
                         "(pseudo-inertia not positive definite): identify with identify_consistent first")
    root = ET.Element("robot", name=name or robot.name)
    ET.SubElement(root, "link", name="base_link")
    parent_links = ["base_link"]
    for i in range(robot.n):
        link = f"{robot.names[i]}_link"
        m, c, I_c = (np.asarray(x) for x in inertia.to_mass_com_inertia(inertial[i]))
        el = ET.SubElement(ET.SubElement(root, "link", name=link), "inertial")
        ET.SubElement(el, "origin", xyz=" ".join(f"{x:.17g}" for x in c), rpy="0 0 0")
        ET.SubElement(el, "mass", value=f"{float(m):.17g}")
        ET.SubElement(el, "inertia", **{k: f"{I_c[a, b]:.17g}" for k, (a, b) in dict(
            ixx=(0, 0), ixy=(0, 1), ixz=(0, 2), iyy=(1, 1), iyz=(1, 2), izz=(2, 2)).items()})
        lo, hi = float(robot.q_min[i]), float(robot.q_max[i])
        kind = {"R": "revolute", "P": "prismatic"}[robot.joint_types[i]]
        if kind == "revolute" and not (math.isfinite(lo) or math.isfinite(hi)):
            kind = "continuous"
        j = ET.SubElement(root, "joint", name=robot.names[i], type=kind)
        ET.SubElement(j, "parent", link=parent_links[robot.parents[i] + 1])
        ET.SubElement(j, "child", link=link)
        _origin(j, robot.placements[i])
        ET.SubElement(j, "axis", xyz=" ".join(f"{x:.17g}" for x in np.asarray(robot.axes[i])))
        limits = dict(lower=lo, upper=hi, effort=float(robot.tau_max[i]), velocity=float(robot.qd_max[i]))
        if kind == "continuous":
            limits = {k: v for k, v in limits.items() if k in ("effort", "velocity")}
        ET.SubElement(j, "limit", **{k: f"{v:.17g}" for k, v in limits.items() if math.isfinite(v)})
        parent_links.append(link)
    ET.SubElement(root, "link", name="flange")
    j = ET.SubElement(root, "joint", name="flange_joint", type="fixed")
    ET.SubElement(j, "parent", link=parent_links[-1])
    ET.SubElement(j, "child", link="flange")
    _origin(j, robot.tip)
    ET.indent(root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="unicode", xml_declaration=True)
    return path
