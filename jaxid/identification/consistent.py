"""Physically consistent identification: consistent bodies, positive friction, body bounds
and a prior toward nominal (CAD) parameters.

Solvers. The problem below is convex in the standard parameters (a quadratic misfit,
one linear matrix inequality per link, linear bounds, convex priors), and the default
``solver="barrier"`` solves it as such: a path-following logarithmic-barrier Newton
method in JAX (barrier ``tr(J0^-1 J) - log det J`` per link, ``x/x0 - log x`` per
positive joint term, ``-log s`` per bound slack; each Newton step computed in a local frame
per link, ``J = L (1 + V) L^T`` with L the Cholesky factor of the current J, where the
barrier's Hessian is constant, and solved through the SVD of the misfit's factor, so that
the ill-conditioning near the boundary stays out of the factorisations; a step goes at most
half way to the boundary of any constraint), which reports a bound on its suboptimality
(``gap_bound``).
[`jaxid.identification.sdp`][jaxid.identification.sdp] solves the same problem with a conic solver as a
reference. The log-Cholesky Gauss-Newton fit described next is kept as
``solver="log-cholesky"``; measured against the SDP optimum it stops short of it (UR5
simulation, weight 0: cost 1.6e-4 above; KUKA LWR4: 7.8e-3 above; "not converged" in
every case of benchmarks/consistent_sdp.py).

Least squares on the base parameters fits the torques but says nothing about the
non-identifiable directions, and noise or unmodelled effects can push the identified
bodies out of the physical set (negative mass, an inertia that breaks the triangle
inequalities). Here every link is parametrised by the log-Cholesky factor of its 4x4
pseudo-inertia ``J = U U^T`` (Rucker and Wensing, "Smooth parameterization of rigid-body
inertia", IEEE RA-L 7(2), 2022), so each parameter value is a physical body, and the
positive joint terms ([`POSITIVE_TERMS`][jaxid.identification.consistent_problem.POSITIVE_TERMS]: armature, friction, spring stiffness) are ``exp`` of a
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
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

from jaxid import arrays, cache, metrics
from jaxid.identification.base import BaseParameters, base_parameters, lift
from jaxid.identification.consistent_problem import (
    POSITIVE_TERMS,
    PRIORS,
    Bounds,
    DataTerm,
    check_inputs,
    check_nominal,
    data_term,
    project_consistent,
    reduced_data_term,
)
from jaxid.identification.estimators import identify
from jaxid.model import inertia

__all__ = [
    "ConsistentFit",
    "PRIORS",
    "POSITIVE_TERMS",
    "identify_consistent",
    "constrained_covariance",
    "consistent_estimator",
    "Bounds",
    "DataTerm",
    "data_term",
    "holdout",
    "project_consistent",
    "lift",
    "to_urdf",
    "entropic_divergence",
    "check_nominal",
]

_TRIU = np.triu_indices(4)
_OFF = np.triu_indices(4, 1)


class ConsistentFit(eqx.Module):
    """Result of [`identify_consistent`][jaxid.identification.consistent.identify_consistent].

    Attributes:
        theta: standard parameters (p,): n inertial 10-vectors then the joint terms.
        base: their base parameters ``base.to_base(theta)``, shape (b,).
        base_ls: the unconstrained (WLS) base estimate, shape (b,).
        std_ls: its standard deviations, shape (b,).
        cov: first-order covariance of ``base`` under the constraints and the prior:
            [`constrained_covariance`][jaxid.identification.consistent.constrained_covariance]
            of ``sensitivity`` and ``cov_ls``, shape (b, b); NaN for "log-cholesky" or
            ``covariance=False``.
        cov_ls: the unconstrained estimate's covariance, shape (b, b).
        sensitivity: ``d base / d base_ls`` at the solution (``_sensitivity``: implicit
            differentiation of the barrier fit's optimality condition), shape (b, b), NaN as ``cov``.
        residual_rms: RMS of ``tau - W @ theta`` per joint, shape (n,), N m.
        link_consistent: pseudo-inertia of each link positive definite, shape (n,), bool.
        joint_valid: every positive joint term ([`POSITIVE_TERMS`][jaxid.identification.consistent_problem.POSITIVE_TERMS]) >= 0, shape (n,), bool.
        valid: all links consistent and all joints valid, bool.
        cost: final objective ``||Sigma^-1/2 (W theta - tau)||^2 + weight * prior`` (whitened
            misfit including ``rss``; comparable with ``SDPFit.cost``).
        converged: the solver met its criterion within max_steps ("barrier": the bound
            ``gap_bound`` on ``cost - optimum`` is below ``rtol * cost`` at a centred
            iterate; "log-cholesky": the last continuation stage met its tolerance).
        num_steps: Newton ("barrier") or Gauss-Newton ("log-cholesky") steps taken.
        grad_norm: Jacobi-scaled norm of the gradient of the last barrier subproblem, in
            the local frame of the Newton step ("barrier"; NaN for "log-cholesky").
        gap_bound: ``nu * mu``, the interior-point bound on ``cost - optimum`` of a centred
            iterate ("barrier"; NaN for "log-cholesky").
        rss: the whitened residual of the unconstrained (WLS) fit, the least possible misfit.
        sdp_cost: the SDP optimum of the same objective when ``reference=True``, else NaN.
        sdp_gap: the SDP solver's duality gap (cost units), else NaN.
        history: per Newton step, the cost and the gap bound after it, shape (slots, 2) with
            at least max_steps rows (``_history_slots``),
            NaN beyond ``num_steps`` ("barrier"; None for "log-cholesky").
    """

    theta: jax.Array
    base: jax.Array
    base_ls: jax.Array
    std_ls: jax.Array
    cov: jax.Array
    cov_ls: jax.Array
    sensitivity: jax.Array
    residual_rms: jax.Array
    link_consistent: jax.Array
    joint_valid: jax.Array
    valid: jax.Array
    cost: jax.Array
    converged: jax.Array
    num_steps: jax.Array
    grad_norm: jax.Array | float = jnp.nan
    gap_bound: jax.Array | float = jnp.nan
    rss: jax.Array | float = jnp.nan
    sdp_cost: jax.Array | float = jnp.nan
    sdp_gap: jax.Array | float = jnp.nan
    history: jax.Array | None = None

    @property
    def sdp_rel(self):
        """``cost / sdp_cost - 1`` (NaN without the SDP reference)."""
        return self.cost / self.sdp_cost - 1.0


# ------------------------------------------------------------------------ parametrisation
def _factor(z):
    """Upper-triangular U (4, 4) with ``J = U U^T`` and log|diag U| from log-Cholesky z (10,),
    in the layout of [`jaxid.model.inertia.log_cholesky_to_inertial`][jaxid.model.inertia.log_cholesky_to_inertial]."""
    return inertia.log_cholesky_factor(z), z[0] + jnp.array([z[1], z[2], z[3], 0.0])


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
    z0: jax.Array  # (n, 10) log-Cholesky start (projected nominal)
    U0inv: jax.Array  # (n, 4, 4) inverse nominal factors
    logdiag0: jax.Array  # (n, 4)
    positive: jax.Array  # (n, k) bool
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
    joint0 = lift(problem.base, theta_ls, nominal)[10 * problem.n :].reshape(problem.n, problem.k)
    joint_nom = nominal[10 * problem.n :].reshape(problem.n, problem.k)
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
        rp = jax.vmap(_prior_residual, in_axes=(0, 0, 0, None))(y[0], problem.U0inv, problem.logdiag0, problem.prior)
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
    solver: optx.Dogleg = optx.Dogleg(rtol=problem.rtol, atol=problem.rtol, linear_solver=lx.SVD())

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


# --------------------------------------------------------------- interior point (default)
def _chol4_logdet(J):
    """log det and positive-definiteness of a 4x4 symmetric J by an unrolled Cholesky
    factorisation (plain XLA arithmetic: no LAPACK call, safe under vmap)."""
    L = [[None] * 4 for _ in range(4)]
    logdet, ok = 0.0, True
    for j in range(4):
        d = J[j, j] - sum(L[j][m] ** 2 for m in range(j))
        ok = ok & (d > 0)
        dj = jnp.sqrt(jnp.where(d > 0, d, 1.0))
        logdet = logdet + jnp.log(jnp.where(d > 0, d, 1.0))
        L[j][j] = dj
        for i in range(j + 1, 4):
            L[i][j] = (J[i, j] - sum(L[i][m] * L[j][m] for m in range(j))) / dj
    return logdet, ok


class _Barrier(eqx.Module):
    """The convex problem ``min ||R theta - rhs||^2 + w prior(theta)`` over consistent bodies,
    positive joint terms and bounds, with its logarithmic barrier (standard parameters theta)."""

    R: jax.Array  # (b, p) whitened base map L^-1 diag(1/std) B
    rhs: jax.Array  # (b,)
    J0inv: jax.Array  # (n, 4, 4)
    logdetJ0: jax.Array  # (n,)
    S0: jax.Array  # (n, 4, 4) J0^-1/2
    x0: jax.Array  # (n, k) reference of the positive joint terms
    positive: jax.Array  # (n, k) float 0/1
    mass_lo: jax.Array  # (n,) with -inf where absent
    mass_hi: jax.Array
    com_lo: jax.Array  # (n, 3)
    com_hi: jax.Array
    body_lo: jax.Array  # (n, 3), 0 where the body box does not bound the axis
    body_hi: jax.Array
    body_axes: jax.Array  # (n, 3) float 0/1
    ell_Q: jax.Array  # (n, 4, 4) bounding-ellipsoid matrices (Bounds.ellipsoid_Q), tr(Q J) >= 0
    ell_on: jax.Array  # (n,) float 0/1: the links that have one
    total: jax.Array  # (2,)
    nu: jax.Array  # barrier parameter: number of (scalar-equivalent) constraints
    n: int = eqx.field(static=True)
    k: int = eqx.field(static=True)
    prior: str | None = eqx.field(static=True)

    def split(self, theta):
        return theta[: 10 * self.n].reshape(self.n, 10), theta[10 * self.n :].reshape(self.n, self.k)

    def free_terms(self):
        """(p,) 1.0 on the joint terms without a barrier (offsets), 0.0 elsewhere."""
        return jnp.concatenate([jnp.zeros(10 * self.n), 1.0 - self.positive.ravel()])

    def data(self, theta):
        r = self.R @ theta - self.rhs
        return r @ r

    def _slacks(self, theta):
        """The bound slacks (linear in theta; 1 for an absent side, whose log is then 0)."""
        pis, _ = self.split(theta)
        m, h = pis[:, 0], pis[:, 1:4]
        fin = lambda b: jnp.where(jnp.isfinite(b), b, 0.0)
        s = [
            jnp.where(jnp.isfinite(self.mass_lo), m - fin(self.mass_lo), 1.0),
            jnp.where(jnp.isfinite(self.mass_hi), fin(self.mass_hi) - m, 1.0),
            jnp.where(jnp.isfinite(self.com_lo), h - fin(self.com_lo) * m[:, None], 1.0).ravel(),
            jnp.where(jnp.isfinite(self.com_hi), fin(self.com_hi) * m[:, None] - h, 1.0).ravel(),
            jnp.where(jnp.isfinite(self.total), jnp.array([1.0, -1.0]) * (jnp.sum(m) - fin(self.total)), 1.0),
        ]
        S = jnp.diagonal(jax.vmap(inertia.pseudo_inertia)(pis), axis1=1, axis2=2)[:, :3]
        lo, hi = self.body_lo, self.body_hi
        s.append(jnp.where(self.body_axes > 0, (lo + hi) * h - lo * hi * m[:, None] - S, 1.0).ravel())
        J = jax.vmap(inertia.pseudo_inertia)(pis)
        s.append(jnp.where(self.ell_on > 0, jnp.einsum("nij,nji->n", self.ell_Q, J), 1.0))
        return jnp.concatenate(s)

    def frame(self, theta):
        """The local frame at a strictly feasible theta: each link's Cholesky factor L (n, 4, 4)
        of J = L L^T and the scale (n, k) of the joint terms (the value of a positive term, 1
        for a free one). A step ``delta`` (p,) in the frame is the standard-parameter step
        ``J += L V(delta_i) L^T`` (V: the pseudo-inertia map of delta's link block),
        ``x += scale * delta_x``: there ``-log det J`` and ``-log x`` have the constant
        Hessians ``tr(V V)`` and 1, whatever the bodies' eigenvalues (in theta they reach
        condition numbers of 1e24 on the KUKA LWR4 data: rounding then makes the barrier's
        Hessian indefinite and the Newton step NaN)."""
        pis, x = self.split(theta)
        L = jnp.linalg.cholesky(jax.vmap(inertia.pseudo_inertia)(pis))
        return L, jnp.where(self.positive > 0, x, 1.0)

    def step(self, frame, delta):
        """The standard-parameter step (p,) of a step ``delta`` (p,) in ``frame`` (linear)."""
        L, scale = frame
        V = jax.vmap(inertia.pseudo_inertia)(delta[: 10 * self.n].reshape(self.n, 10))
        dpis = jax.vmap(inertia.from_pseudo_inertia)(L @ V @ jnp.swapaxes(L, 1, 2))
        return jnp.concatenate([dpis.ravel(), (scale * delta[10 * self.n :].reshape(self.n, self.k)).ravel()])

    def rest(self, theta, frame, delta, weight, mu):
        """``weight * prior + mu * barrier`` at ``theta + step(frame, delta)`` (None: ``theta``
        itself) and whether that point is strictly feasible. In the frame, ``log det J`` and
        ``log x`` are those at theta plus ``log det(1 + V)`` and ``log1p(delta_x)``, so that
        they and their derivatives keep their relative accuracy next to the boundary."""
        pis, x = self.split(theta)
        pos = self.positive > 0
        if frame is None:
            J = jax.vmap(inertia.pseudo_inertia)(pis)
            ld, ok = jax.vmap(_chol4_logdet)(J)
            logx = jnp.log(jnp.where(pos & (x > 0), x, 1.0))
            ok_x = jnp.all(jnp.where(pos, x > 0, True))
        else:
            L, scale = frame
            d_links, d_x = delta[: 10 * self.n].reshape(self.n, 10), delta[10 * self.n :].reshape(self.n, self.k)
            V = jax.vmap(inertia.pseudo_inertia)(d_links)
            ld1, ok = jax.vmap(_chol4_logdet)(jnp.eye(4) + V)
            ld = 2 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=1, axis2=2)), axis=1) + ld1
            ok_x = jnp.all(jnp.where(pos, d_x > -1, True))
            logx = jnp.where(pos, jnp.log(scale) + jnp.log1p(jnp.where(pos & (d_x > -1), d_x, 0.0)), 0.0)
            theta = theta + self.step(frame, delta)
            pis, x = self.split(theta)
            J = jax.vmap(inertia.pseudo_inertia)(pis)
        s = self._slacks(theta)
        tr = jnp.einsum("nij,nji->n", self.J0inv, J)
        xr = jnp.where(pos, x / self.x0, 0.0)
        log_s = jnp.log(jnp.where(s > 0, s, 1.0))
        # barrier: tr(J0^-1 J) - log det J + x/x0 - log x - log s; the linear part keeps it
        # bounded below along the directions the data cannot see
        barrier = jnp.sum(tr - ld) + jnp.sum(jnp.where(pos, xr - logx, 0.0)) - jnp.sum(log_s)
        if self.prior == "entropic":
            links = tr - ld + self.logdetJ0 - 4.0
        elif self.prior == "euclidean":
            links = 0.5 * jnp.sum((self.S0 @ J @ self.S0 - jnp.eye(4)) ** 2, axis=(1, 2))
        else:
            links = jnp.zeros(self.n)
        joints = jnp.where(pos, xr - 1.0 - (logx - jnp.log(self.x0)), 0.0)
        value = weight * (jnp.sum(links) + jnp.sum(joints)) + mu * barrier
        return value, jnp.all(ok) & ok_x & jnp.all(s > 0)

    def feasible(self, theta):
        return self.rest(theta, None, None, 0.0, 0.0)[1]

    def linear_part(self, theta):
        """``sum tr(J0^-1 J) + sum x / x0``, the linear term of the barrier."""
        pis, x = self.split(theta)
        J = jax.vmap(inertia.pseudo_inertia)(pis)
        return jnp.sum(jnp.einsum("nij,nji->n", self.J0inv, J)) + jnp.sum(
            jnp.where(self.positive > 0, x / self.x0, 0.0)
        )

    def prior_value(self, theta):
        return self.rest(theta, None, None, 1.0, 0.0)[0]

    def objective(self, theta, weight):
        return self.data(theta) + weight * self.prior_value(theta)


#: Centring test (Newton decrement^2 of f/mu + barrier) and the factor mu is lowered by.
#: A 10x cut was measured to stall on the KUKA LWR4 data (runs 1+3, 1+2 at weight 1e-3: not
#: converged in 1000 steps, cost 7e-5 above the SDP optimum): right after each cut the first
#: Newton steps push a nearly degenerate body (link 3, smallest pseudo-inertia eigenvalue
#: 1e-7) a hundred times closer to the boundary than its new central point, and from there
#: the capped steps can only turn its near-null direction slowly (a few hundred steps at
#: ~1 % growth of that eigenvalue per step, at every cut). Halving mu keeps the iterate
#: near the central path: runs 1+3 converge in 778 steps.
_CENTRED = 1e-2
_SIGMA = 0.5
#: Largest fraction of the distance to the boundary of any constraint that one Newton step may go.
_FRACTION = 0.5


def _gap_bound(problem, theta, mu):
    """``mu * (nu + linear_part)``: at a central point of ``f + mu * barrier`` the suboptimality
    ``f - min f`` is at most ``mu * (nu + c^T (theta* - theta))`` (Boyd and Vandenberghe 2004,
    11.2.2, with the barrier's linear term c); c^T theta* is replaced by its current value
    (c^T >= 0 on the feasible set), so this is an estimate, cross-checked by the SDP. It
    is not a bound where the optimum is not attained (weight 0, identify_consistent): along
    a minimising sequence c^T theta* grows without bound."""
    return mu * (problem.nu + problem.linear_part(theta))


def _newton_solve_split(G, R, g, free):
    """d = -(G + 2 R^T R)^-1 g, G (p, p) the positive definite barrier/prior Hessian and
    2 R^T R the misfit's: with G = C C^T, (G + 2 R^T R)^-1 = C^-T (1 + M^T M)^-1 C^-1 for
    M = sqrt(2) R C^-T, and (1 + M^T M)^-1 = 1 - V s^2/(1 + s^2) V^T from the SVD of M,
    so that no ill-conditioned matrix is factorised (near the end of the path the barrier
    part is tiny along the data's directions and the misfit's nil along the others: the
    plain Hessian reaches condition numbers of 1e12 there)."""
    # Free joint terms (offsets) have no barrier: borrow a 1e-10 sliver of the misfit's
    # curvature for them, so that G is positive definite. Only for them: on a column with
    # a barrier the sliver would outweigh the barrier's curvature mu once mu < 1e-10 of the
    # misfit's, and the Newton step along the directions the data cannot see would shrink
    # by that ratio (measured on the UR5 at weight 0: full steps, but lam^2/mu falling only
    # 3 % per step and ~100 steps per centring as mu went below 1e-5).
    G = G + jnp.diag(1e-10 * 2 * jnp.sum(R**2, axis=0) * free)
    dsc = jnp.sqrt(jnp.maximum(jnp.diag(G), 1e-300))
    Cs = jnp.linalg.cholesky(G / jnp.outer(dsc, dsc) + 1e-15 * jnp.eye(G.shape[0]))
    solve_C = lambda x: jax.scipy.linalg.solve_triangular(Cs, x, lower=True)
    M = jnp.sqrt(2.0) * solve_C((R / dsc).T).T  # (b, p): sqrt(2) R D^-1 Cs^-T
    _, sv, Vt = jnp.linalg.svd(M, full_matrices=False)
    y = solve_C(g / dsc)
    y = y - Vt.T @ ((sv**2 / (1 + sv**2)) * (Vt @ y))
    return -jax.scipy.linalg.solve_triangular(Cs.T, y, lower=False) / dsc


def _history_slots(max_steps: int) -> int:
    """Rows of the barrier fit's step history for ``max_steps``: 1024, or the power of two above a
    larger budget. The budget itself is a traced value, so that a fit with fewer steps (``--max-steps
    2``, a cross-validation's folds) runs the program the default 1000 compiled."""
    return max(1024, 1 << (int(max_steps) - 1).bit_length())


def _ipm(problem: _Barrier, theta0, weight, rss, rtol, max_steps, slots: int):
    """Path-following barrier method (Nocedal and Wright 2006, ch. 19; Boyd and
    Vandenberghe 2004, ch. 11): Newton steps on ``f + mu * barrier`` with a feasible
    backtracking line search, mu halved (_SIGMA) each time the Newton decrement says the
    iterate is centred, until ``nu * mu`` (a bound on the suboptimality of a central
    point) is below ``rtol * (f + rss)``. Returns theta, f, converged, steps, mu,
    decrement^2, scaled gradient norm, and the history (slots, 2) of the cost ``f + rss``
    and of the gap bound after each step (NaN beyond the last). max_steps: traced (an array);
    slots: static, >= max_steps."""
    f = lambda th: problem.objective(th, weight)
    p = theta0.shape[0]
    zero = jnp.zeros(p)
    rest = lambda delta, th, frame, mu: problem.rest(th, frame, delta, weight, mu)[0]

    def derivatives(th, frame, mu):
        # value, gradient and Hessian of rest at 0 from one forward-over-reverse pass: traced
        # once, where grad, hessian and a call trace (and compile) it three times
        vg = lambda dl: (lambda v, g: (g, (v, g)))(*jax.value_and_grad(rest)(dl, th, frame, mu))
        G, (v, g) = jax.jacfwd(vg, has_aux=True)(zero)
        return v, g, G

    free = problem.free_terms()
    mu0 = jnp.maximum(f(theta0), 1e-12 * (rss + 1.0)) / problem.nu

    def cond(c):
        th, mu, it, done, _, _, _ = c
        return (~done) & (it < max_steps)

    def body(c):
        th, mu, it, _, _, _, hist = c
        # The Newton step of f + mu * barrier, computed in the local frame (_Barrier.frame).
        frame = problem.frame(th)
        T = jax.jacfwd(lambda dl: problem.step(frame, dl))(zero)  # (p, p), linear
        RT = problem.R @ T
        r0 = problem.R @ th - problem.rhs
        rest0, g, G = derivatives(th, frame, mu)
        g = g + 2 * RT.T @ r0
        d = _newton_solve_split(G, RT, g, free)
        lam2 = -g @ d
        Rd = RT @ d
        # At most FRACTION of the way to the boundary of any constraint per step: a longer
        # step that the line search accepts can leave a body or a slack orders of magnitude
        # closer to the boundary than the central path, from where Newton climbs back by
        # doubling it, one step at a time (measured: 100-step plateaus on the KUKA data).
        V = jax.vmap(inertia.pseudo_inertia)(d[: 10 * problem.n].reshape(problem.n, 10))
        dx = jnp.where(problem.positive.ravel() > 0, d[10 * problem.n :], 0.0)
        s0, s1 = problem._slacks(th), problem._slacks(th + T @ d)
        worst = jnp.max(jnp.concatenate([-jnp.linalg.eigvalsh(V)[:, 0], -dx, (s0 - s1) / s0]))
        a0 = jnp.where(worst > _FRACTION, _FRACTION / worst, 1.0)

        def dF(a):  # F(th + a d) - F(th), the misfit's change without cancellation
            return a * Rd @ (2 * r0 + a * Rd) + (rest(a * d, th, frame, mu) - rest0)

        def ls_cond(a):
            ok = problem.rest(th, frame, a * d, weight, mu)[1] & problem.feasible(th + a * (T @ d))
            ok = ok & (jnp.where(ok, dF(a), jnp.inf) <= -0.25 * a * lam2)
            return (~ok) & (a > 1e-12)

        a = jax.lax.while_loop(ls_cond, lambda a: 0.5 * a, a0)
        th_new = jnp.where(a > 1e-12, th + a * (T @ d), th)
        centred = lam2 <= _CENTRED * mu  # decrement^2 of (f/mu + barrier) small: near the central path
        mu_new = jnp.where(centred, _SIGMA * mu, mu)
        done = centred & (_gap_bound(problem, th, mu) <= rtol * (f(th) + rss))
        hist = hist.at[it].set(jnp.stack([f(th_new) + rss, _gap_bound(problem, th_new, mu_new)]))
        H = jnp.diag(G) + 2 * jnp.sum(RT**2, axis=0)
        return (th_new, mu_new, it + 1, done, lam2, jnp.linalg.norm(g / jnp.sqrt(jnp.maximum(H, 1e-300))), hist)

    init = (
        theta0,
        mu0,
        jnp.zeros((), int),
        jnp.asarray(False),
        jnp.asarray(jnp.inf),
        jnp.asarray(jnp.inf),
        jnp.full((slots, 2), jnp.nan),
    )
    th, mu, it, done, lam2, gnorm, hist = jax.lax.while_loop(cond, body, init)
    return th, f(th), done, it, _gap_bound(problem, th, mu), lam2, gnorm, hist, mu


_ipm_jit = eqx.filter_jit(_ipm)


@jax.jit
def constrained_covariance(S, C):
    """The first-order covariance (b, b) of a consistent fit's base estimate for a least-squares
    estimate of covariance C (b, b) (Gaussian, HAC or other), S (b, b) its ``sensitivity``:
    ``S C S^T``, capped at C in the Loewner order. The fit's base estimate is a proximal map
    of the least-squares one in the metric C^-1 (the prior and the constraints, minimised over
    the standard parameters with those base parameters, are one convex function of them), which
    is non-expansive there: its covariance is at most C. A linearisation that says more is
    rounding at a solution that is not attained (weight 0, bodies growing along what the data do
    not see: up to 270x on a UR5 at weight 0)."""
    L = jnp.linalg.cholesky(0.5 * (C + C.T))
    Li = jax.scipy.linalg.solve_triangular(L, jnp.eye(L.shape[0]), lower=True)
    M = Li @ S @ L
    lam, V = jnp.linalg.eigh(M @ M.T)
    LV = L @ V
    out = (LV * jnp.clip(lam, 0.0, 1.0)) @ LV.T
    return 0.5 * (out + out.T)


@cache.jit
def _sensitivity(setup, robot, base, theta_ls, std, L, nominal, prior, th, weight, mu):
    """``d theta_b / d theta_ls`` (b, b): how the barrier fit's base estimate moves with the
    least-squares estimate it is fitted to, at its solution ``th`` (final barrier parameter mu),
    by implicit differentiation of its optimality condition (Fiacco, "Sensitivity analysis for
    nonlinear programming using penalty methods", Math. Programming 10, 1976):
    ``H d theta = -(d grad / d theta_ls) d theta_ls``, H the Hessian of ``||R theta - rhs||^2 +
    weight prior + mu barrier``, in the Newton step's local frame and by its split solve
    (``_newton_solve_split``). theta_ls enters through ``rhs`` and through the prior's reference
    of a positive joint term without a nominal value (|its least-squares estimate|). An active
    constraint's barrier curvature (~ multiplier^2 / mu) pins the estimate's motion along it;
    the prior's curvature damps the directions the data see little. Arguments as
    ``_barrier_problem``'s."""
    bp, _ = _barrier_problem(setup, robot, base, theta_ls, std, L, nominal, prior)
    zero = jnp.zeros(th.shape[0])
    frame = bp.frame(th)
    T = jax.jacfwd(lambda dl: bp.step(frame, dl))(zero)

    def grad(tl):  # the gradient in the frame at th, as a function of the least-squares estimate
        b2, _ = _barrier_problem(setup, robot, base, tl, std, L, nominal, prior)
        return jax.grad(lambda d: b2.data(th + T @ d) + b2.rest(th, frame, d, weight, mu)[0])(zero)

    mixed = jax.jacfwd(grad)(theta_ls)  # (p, b)
    G = jax.hessian(lambda d: bp.rest(th, frame, d, weight, mu)[0])(zero)
    free = bp.free_terms()
    X = jax.vmap(lambda col: _newton_solve_split(G, bp.R @ T, col, free), in_axes=1, out_axes=1)(mixed)
    return jnp.asarray(setup.B) @ (T @ X)


def _interior_start(robot, pis, bounds: Bounds | None):
    """Nominal bodies pis (n, 10) (consistent) moved strictly inside the bounds: mass and
    centre of mass clipped into the interior of their intervals (inertia about the centre
    of mass scaled with the mass). Raises ValueError naming the link when a bound leaves
    no interior."""
    pis = np.array(pis, dtype=float)
    if bounds is None:
        return pis
    bounds.check()
    n = robot.n_joints

    def inside(v, lo, hi):
        if np.isfinite(lo) and np.isfinite(hi):
            return float(np.clip(v, lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo)))
        if np.isfinite(lo):
            return max(v, lo + 0.05 * max(abs(lo), 1e-6))
        if np.isfinite(hi):
            return min(v, hi - 0.05 * max(abs(hi), 1e-6))
        return v

    m_new = np.empty(n)
    for i in range(n):
        lo, hi = bounds.mass_min[i], bounds.mass_max[i]
        if lo >= hi:
            raise ValueError(
                f"link {robot.names[i]}: mass_min = mass_max = {lo:g} kg leaves no interior for the "
                "interior-point fit; give an interval (or use jaxid.identification.sdp.identify_sdp)"
            )
        for a in range(3):
            if bounds.com_min[i, a] >= bounds.com_max[i, a]:
                raise ValueError(
                    f"link {robot.names[i]}: com_min[{'xyz'[a]}] = com_max[{'xyz'[a]}] leaves no "
                    "interior for the interior-point fit; give an interval"
                )
        m_new[i] = inside(pis[i, 0], max(lo, 0.0), hi)
    if bounds.total_mass is not None:
        lo, hi = bounds.total_mass
        tot = m_new.sum()
        target = inside(tot, lo, hi)
        if target != tot:
            m_new = np.array(
                [
                    inside(m * target / tot, max(bounds.mass_min[i], 0.0), bounds.mass_max[i])
                    for i, m in enumerate(m_new)
                ]
            )
            if not (lo < m_new.sum() < hi):
                raise ValueError(
                    f"total mass: no start inside ({lo:g}, {hi:g}) kg within the links' mass bounds "
                    f"(it reached {m_new.sum():g} kg); widen total_mass or the per-link bounds"
                )
    axes = bounds.body_axes()
    body_min, body_max = bounds.body_box()
    ellipsoid = bounds.ellipsoid_links()
    for i in range(n):
        m, c, I_c = (np.asarray(v) for v in inertia.to_mass_com_inertia(jnp.asarray(pis[i])))
        lo, hi = np.maximum(bounds.com_min[i], body_min[i]), np.minimum(bounds.com_max[i], body_max[i])
        box = [inside(c[a], lo[a], hi[a]) for a in range(3)]
        c_box = np.array(box)
        cov = (np.trace(I_c) / 2 * np.eye(3) - I_c) / m  # spread about c, m^2 (second moment / m)
        # a body in its box spreads at most (hi - c)(c - lo) along an axis (the second-moment
        # bound about c): shrink the spread (the inertia about c) to 0.9 of that
        shrink = 1.0
        if ellipsoid[i]:
            c_box, shrink = _into_ellipsoid(robot.names[i], bounds, i, c, c_box, lo, hi, cov)
        var = np.diag(cov)
        room = (body_max[i] - c_box) * (c_box - body_min[i])
        shrink = min([shrink] + [0.9 * room[a] / var[a] for a in range(3) if axes[i, a] and var[a] > 0.9 * room[a]])
        pis[i] = np.asarray(inertia.from_mass_com_inertia(m_new[i], c_box, I_c * (shrink * m_new[i] / m)))
    return pis


def _into_ellipsoid(name, bounds: Bounds, i, c_nominal, c_box, lo, hi, cov):
    """(centre of mass, spread factor) of link i's start strictly inside its bounding ellipsoid:
    the centre ``c_box`` (the nominal one, moved into its boxes) moved toward the box point nearest
    the ellipsoid's centre until its ellipsoid radius is at most 0.9, and the spread ``cov`` (3, 3)
    scaled so that ``tr(Q J) >= 0.1 (1 - r^2) m`` (``Bounds`` class docstring). ValueError when the
    nominal centre of mass ``c_nominal`` itself lies outside the ellipsoid."""
    from scipy.optimize import lsq_linear

    assert bounds.ellipsoid_axes is not None and bounds.ellipsoid_center is not None  # __post_init__
    A, ce = bounds.ellipsoid_axes[i], bounds.ellipsoid_center[i]
    Ainv = np.linalg.inv(A)
    radius2 = lambda x: float(np.sum((Ainv @ (x - ce)) ** 2))
    if radius2(c_nominal) >= 1.0:
        raise ValueError(
            f"link {name}: the nominal centre of mass {np.round(c_nominal, 4).tolist()} m lies outside its bounding "
            f"ellipsoid ({np.sqrt(radius2(c_nominal)):.3g} radii from its centre {np.round(ce, 4).tolist()} m); "
            "enlarge the ellipsoid (Bounds.ellipsoid_axes) or correct the nominal body"
        )
    if radius2(c_box) > 0.81:
        span = np.where(np.isfinite(hi - lo), 0.05 * (hi - lo), 0.0)
        nearest = lsq_linear(Ainv, Ainv @ ce, bounds=(lo + span, hi - span)).x if np.any(np.isfinite(lo + hi)) else ce
        a, b = 0.0, 1.0  # the largest step from `nearest` toward c_box that stays within radius 0.9
        for _ in range(50):
            t = 0.5 * (a + b)
            a, b = (t, b) if radius2(nearest + t * (c_box - nearest)) <= 0.81 else (a, t)
        c_box = nearest + a * (c_box - nearest)
    r2 = radius2(c_box)
    spread = float(np.trace(Ainv.T @ Ainv @ cov))  # tr(P cov)
    return c_box, min(1.0, 0.9 * (1.0 - r2) / spread) if spread > 0 else 1.0


class _BarrierSetup(NamedTuple):
    """Data-independent pieces of the interior-point problem."""

    pis_start: np.ndarray
    J0inv: np.ndarray
    logdetJ0: np.ndarray
    S0: np.ndarray
    positive: np.ndarray
    B: np.ndarray
    # mass_lo, mass_hi, com_lo, com_hi, total (numpy, -inf/inf where absent), body_lo, body_hi, axes,
    # ellipsoid Q, ellipsoid on
    bounds: tuple
    nu: float


def _barrier_setup(robot, base, nominal, bounds: Bounds | None) -> _BarrierSetup:
    n, k = robot.n_joints, len(robot.joint_terms)
    pis0 = np.asarray(project_consistent(jnp.asarray(nominal[: 10 * n]).reshape(n, 10)))
    J0 = np.stack([np.asarray(inertia.pseudo_inertia(jnp.asarray(p))) for p in pis0])
    w, V = np.linalg.eigh(J0)
    S0 = np.einsum("nij,nj,nkj->nik", V, w**-0.5, V)
    positive = np.broadcast_to(np.array([t in POSITIVE_TERMS for t in robot.joint_terms], dtype=float), (n, k))
    B = base.matrix()
    if bounds is None:
        b = (
            np.full(n, -np.inf),
            np.full(n, np.inf),
            np.full((n, 3), -np.inf),
            np.full((n, 3), np.inf),
            np.array([-np.inf, np.inf]),
        )
        body = (np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)))
        ell = (np.zeros((n, 4, 4)), np.zeros(n))
    else:
        bounds.check()
        lo = np.where(bounds.mass_min > 0, bounds.mass_min, -np.inf)
        tot = np.array(bounds.total_mass if bounds.total_mass is not None else (-np.inf, np.inf), dtype=float)
        tot[0] = tot[0] if tot[0] > 0 else -np.inf
        b = (lo, bounds.mass_max.copy(), bounds.com_min.copy(), bounds.com_max.copy(), tot)
        axes = bounds.body_axes()
        body_min, body_max = bounds.body_box()
        body = (np.where(axes, body_min, 0.0), np.where(axes, body_max, 0.0), axes.astype(float))
        ell = (bounds.ellipsoid_Q(), bounds.ellipsoid_links().astype(float))
    nu = 4.0 * n + positive.sum() + sum(float(np.isfinite(x).sum()) for x in b) + float(body[2].sum() + ell[1].sum())
    pis_start = _interior_start(robot, project_consistent(jnp.asarray(pis0), rel_floor=1e-3), bounds)
    return _BarrierSetup(pis_start, np.linalg.inv(J0), np.linalg.slogdet(J0)[1], S0, positive, B, b + body + ell, nu)


def _barrier_problem(setup: _BarrierSetup, robot, base, data_theta_ls, std, L, nominal, prior):
    """(_Barrier, theta0) from the data term; pure jnp (traceable)."""
    n, k = robot.n_joints, len(robot.joint_terms)
    A = jax.scipy.linalg.solve_triangular(L, jnp.diag(1.0 / std), lower=True)
    R, rhs = A @ setup.B, A @ data_theta_ls
    joint_nom = nominal[10 * n :].reshape(n, k)
    joint_ls = lift(base, data_theta_ls, nominal)[10 * n :].reshape(n, k)
    x0 = jnp.where(joint_nom > 0, joint_nom, jnp.maximum(jnp.abs(joint_ls), 1e-12))
    pos = setup.positive > 0
    xs = jnp.where(pos, jnp.maximum(jnp.abs(joint_ls), 1e-3 * x0), joint_ls)
    theta0 = jnp.concatenate([jnp.asarray(setup.pis_start).ravel(), xs.ravel()])
    mlo, mhi, clo, chi, tot, blo, bhi, axes, ell_Q, ell_on = (jnp.asarray(x) for x in setup.bounds)
    problem = _Barrier(
        R,
        rhs,
        jnp.asarray(setup.J0inv),
        jnp.asarray(setup.logdetJ0),
        jnp.asarray(setup.S0),
        x0,
        jnp.asarray(setup.positive),
        mlo,
        mhi,
        clo,
        chi,
        blo,
        bhi,
        axes,
        ell_Q,
        ell_on,
        tot,
        jnp.asarray(setup.nu),
        n,
        k,
        prior,
    )
    return problem, theta0


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
    n, k = robot.n_joints, len(robot.joint_terms)
    p = 10 * n + n * k
    if len(base.standard_names) != p:
        raise ValueError(
            f"base has {len(base.standard_names)} standard parameters but the robot has {p}; "
            "build it with jaxid.base_parameters(robot) for this robot and joint terms"
        )
    if nominal.shape != (p,) or not np.all(np.isfinite(np.asarray(nominal))):
        raise ValueError(f"nominal must be a finite parameter vector of shape ({p},), got shape {nominal.shape}")
    check_nominal(robot, nominal)
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


def consistent_estimator(
    robot,
    base: BaseParameters | None = None,
    nominal=None,
    *,
    prior="entropic",
    weight: float = 1e-3,
    stages: int = 8,
    max_steps: int = 100,
    rtol: float = 1e-8,
):
    """A pure estimator ``f(W_b, tau, key) -> theta_b (b,)`` for [`jaxid.study.run_study`][jaxid.study.run_study]:
    two-step WLS on the reduced regressor W_b (M, b) = ``base.reduce(W)``, then the
    consistent fit, returning its base parameters; arguments as [`identify_consistent`][jaxid.identification.consistent.identify_consistent]
    (key is unused). Jittable and vmappable over tau."""
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    problem = _problem(robot, base, nominal, prior, stages, max_steps, rtol)
    weight = _check_weight(weight)

    def consistent(W_b, tau, key=None):
        ls = identify(W_b, tau, method="wls", n_joints=robot.n)
        return base.to_base(_solve(problem, ls.theta, ls.cov, nominal, weight)[0])

    return consistent


def identify_consistent(
    robot,
    W=None,
    tau=None,
    *,
    nominal=None,
    base: BaseParameters | None = None,
    prior: str | None = "entropic",
    weight: float = 1e-3,
    method: str = "wls",
    bounds: Bounds | None = None,
    solver: str = "barrier",
    reference: bool = False,
    stages: int = 8,
    max_steps: int | None = None,
    rtol: float = 1e-9,
    reduced=None,
    covariance: bool = True,
) -> ConsistentFit:
    """Physically consistent standard parameters of ``robot`` from torque data.

    Minimises ``||Sigma^-1/2 (W theta - tau)||^2 + weight * prior(theta)`` (whitened by the
    two-step WLS noise variances, written in the sample-free form of [`DataTerm`][jaxid.identification.consistent_problem.DataTerm])
    over standard parameters whose links have positive semidefinite pseudo-inertias, whose
    positive joint terms (ia, fv, fc, fs, ks) are >= 0 and whose bodies satisfy ``bounds``: a
    convex problem. The default solver is a path-following barrier (interior-point)
    Newton method in JAX on the standard parameters, which converges to the constrained
    optimum and bounds its own suboptimality (``gap_bound``); ``reference=True`` also
    solves the semidefinite program of [`jaxid.identification.sdp`][jaxid.identification.sdp] (needs the
    ``consistent-sdp`` extra) and reports its optimum in ``sdp_cost``.

    Args:
        robot: the ``Robot`` whose parameters are identified (links, joint terms).
        W: stacked sample-major regressor of the robot's standard parameters, (N*n, p) or
            (N, n, p) (``jaxid.regressor`` then ``jaxid.stack``).
        tau: measured torques, (N*n,) or (N, n), N m.
        reduced: instead of W and tau, their rows in reduced form
            (``jaxid.identification.streaming.Reduced`` of the base columns ``[W_b | tau]``,
            e.g. from ``streaming.reduce_runs``; [`reduced_data_term`][jaxid.identification.consistent_problem.reduced_data_term]): the same fit
            without holding W.
        nominal: prior (CAD) parameters (p,), default ``robot.parameter_vector()``; its
            links, projected to consistent bodies ([`project_consistent`][jaxid.identification.consistent_problem.project_consistent]), are the
            ``J0`` of the prior and (moved inside ``bounds``) the starting bodies.
        base: base parameters to fit, default ``jaxid.base_parameters(robot)`` (structural).
        prior: ``"entropic"``, ``"euclidean"`` or None (module docstring).
        weight: prior weight >= 0 in units of the whitened squared residual (each sample
            of each joint adds about 1 to the misfit), so 1e-3 (default) is a thousandth of
            one sample: it fixes the directions the data cannot see and leaves the others
            to the data. It also weighs ``x/x0 - 1 - log(x/x0)`` on the positive joint terms
            (x0: nominal value if positive, else |WLS estimate|). 0: pure constrained
            least squares. Its base parameters have a unique optimum, but in standard
            parameters it is in general approached only as some bodies grow without
            bound along directions the data cannot see while others degenerate (the
            projection of the consistent set onto the base parameters is not closed): the
            SDP's own weight-0 solutions have pseudo-inertia eigenvalues 10^2-10^4 times
            the nominal ones on a 3-link arm, the UR5 and the KUKA LWR4. The cost then
            falls (to 5e-7-2e-5 above the SDP's in 1000 steps on the KUKA data, where
            the SDP solver itself ends inaccurate on two of three pairs) but the gap
            estimate, which assumes a finite optimum, grows with those bodies, so the fit
            may end "not converged" with implausible bodies; a positive weight (the
            command line's 1e-3), or bounds on the bodies' extent (``Bounds.body_min``,
            ``body_max``, with mass bounds), give a finite optimum.
        method: unconstrained estimator giving the whitening and the data term: "wls"
            (two-step, Gautier and Poignet 2001) or "ols".
        bounds: [`Bounds`][jaxid.identification.consistent_problem.Bounds] (per-link mass interval, centre-of-mass box, body box, total mass),
            e.g. ``Bounds.from_nominal(robot, mass_tol=0.2)``; None: only consistency.
        solver: "barrier" (default) or "log-cholesky" (the earlier trust-region
            Gauss-Newton fit on log-Cholesky bodies with a continuation in the weight;
            kept for comparison, it does not support bounds and stops short of the
            optimum when the weight is small).
        reference: also solve the SDP and fill ``sdp_cost``, ``sdp_gap``.
        stages: "log-cholesky" only: continuation stages.
        max_steps: Newton steps in all ("barrier", default 1000) or Gauss-Newton steps per
            stage ("log-cholesky", default 100).
        rtol: "barrier": stop when ``gap_bound <= rtol * cost``; "log-cholesky": step and
            residual tolerance.
        covariance: "barrier": also the estimate's covariance under the constraints
            (``ConsistentFit.cov``; one more compiled program, a Hessian and b solves).

    Returns:
        [`ConsistentFit`][jaxid.identification.consistent.ConsistentFit].

    Raises:
        ValueError: bad shapes, NaN/inf, unknown prior, method or solver, negative weight,
            a base that does not belong to the robot, a rank-deficient reduced regressor, or
            bounds that contradict each other (naming the link and bound).
    """
    if reduced is None:
        W, tau = check_inputs(robot, W, tau, method)
    elif W is not None or tau is not None:
        raise ValueError("pass the rows (W, tau) or their reduced form (reduced=), not both")
    elif method not in ("wls", "ols"):
        raise ValueError(f"method must be 'wls' or 'ols', got {method!r}")
    n = robot.n
    if solver not in ("barrier", "log-cholesky"):
        raise ValueError(f"solver must be 'barrier' or 'log-cholesky', got {solver!r}")
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    if solver == "log-cholesky" and bounds is not None:
        raise ValueError("solver='log-cholesky' does not support bounds; use solver='barrier'")
    steps_default = 1000 if solver == "barrier" else 100
    problem = _problem(robot, base, nominal, prior, stages, max_steps or steps_default, rtol)
    weight = _check_weight(weight)
    data = data_term(robot, base, W, tau, method) if reduced is None else reduced_data_term(base, reduced, method)
    ls = data.ls
    nan = jnp.asarray(jnp.nan)
    if solver == "barrier":
        setup = _barrier_setup(robot, base, nominal, bounds)
        bp, theta0 = _barrier_problem(setup, robot, base, data.theta_ls, data.std, data.L, nominal, prior)
        budget = int(max_steps or steps_default)
        theta, f, converged, steps, gap_bound, lam2, gnorm, history, mu = _ipm_jit(
            bp, theta0, weight, data.rss, float(rtol), jnp.asarray(budget), _history_slots(budget)
        )
        cost = f + data.rss
        if covariance:
            S = _sensitivity(setup, robot, base, data.theta_ls, data.std, data.L, nominal, prior, theta, weight, mu)
            cov = constrained_covariance(S, ls.cov)
    else:
        theta, cost, converged, steps = _solve_jit(problem, ls.theta, ls.cov, nominal, weight)
        cost, gap_bound, gnorm, history = cost + data.rss, nan, nan, None
    if not covariance or solver != "barrier":
        S = cov = jnp.full_like(ls.cov, jnp.nan)
    sdp_cost = sdp_gap = nan
    if reference:
        from jaxid.identification.sdp import solve_sdp

        ref = solve_sdp(robot, base, data, nominal, prior=prior, weight=float(weight), bounds=bounds)
        sdp_cost, sdp_gap = jnp.asarray(ref.cost), jnp.asarray(ref.duality_gap)
    links, joints = _validity(robot, theta)
    if reduced is None:
        rms = jnp.sqrt(jnp.mean((tau - W @ theta).reshape(-1, n) ** 2, axis=0))
    else:
        from jaxid.identification.estimators import reduced_rss

        rms = jnp.sqrt(reduced_rss(reduced.R, base.to_base(theta)) / reduced.N)
    return ConsistentFit(
        theta=theta,
        base=arrays.device(base.to_base(theta)),
        base_ls=ls.theta,
        std_ls=ls.std,
        cov=cov,
        cov_ls=ls.cov,
        sensitivity=S,
        residual_rms=rms,
        link_consistent=links,
        joint_valid=joints,
        valid=jnp.all(links) & jnp.all(joints),
        cost=cost,
        converged=converged,
        num_steps=steps,
        grad_norm=gnorm,
        gap_bound=gap_bound,
        rss=data.rss,
        sdp_cost=sdp_cost,
        sdp_gap=sdp_gap,
        history=history,
    )


# ----------------------------------------------------------------------------------- URDF
def _rpy(R):
    """URDF roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.cos(pitch) > 1e-9:
        return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])
    return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0  # gimbal lock: put the rotation in roll


def _origin(parent, T):
    T = np.asarray(T, dtype=float)
    ET.SubElement(
        parent,
        "origin",
        xyz=" ".join(f"{x:.17g}" for x in T[:3, 3]),
        rpy=" ".join(f"{x + 0.0:.17g}" for x in _rpy(T[:3, :3])),
    )


#: Travel (rad or m) of a position limit the model does not have, as written by [`to_urdf`][jaxid.identification.consistent.to_urdf].
PLACEHOLDER_TRAVEL = 1e3
#: Effort (N m or N) and velocity (rad/s or m/s) limit written by [`to_urdf`][jaxid.identification.consistent.to_urdf] when the model
#: has none: urdfdom refuses a <limit> without them.
PLACEHOLDER_RATE = 1e6


def _urdf_limits(kind, lo, hi, effort, velocity):
    """(attributes of the <limit> element, the names of those that are placeholders)."""
    placeholder = []
    if kind != "continuous":
        if not math.isfinite(lo):
            lo, placeholder = min(hi if math.isfinite(hi) else 0.0, 0.0) - PLACEHOLDER_TRAVEL, [*placeholder, "lower"]
        if not math.isfinite(hi):
            hi, placeholder = max(lo, 0.0) + PLACEHOLDER_TRAVEL, [*placeholder, "upper"]
    if not math.isfinite(effort):
        effort, placeholder = PLACEHOLDER_RATE, [*placeholder, "effort"]
    if not math.isfinite(velocity):
        velocity, placeholder = PLACEHOLDER_RATE, [*placeholder, "velocity"]
    limits = dict(lower=lo, upper=hi, effort=effort, velocity=velocity)
    if kind == "continuous":
        limits = {k: v for k, v in limits.items() if k in ("effort", "velocity")}
    return {k: f"{v:.17g}" for k, v in limits.items()}, placeholder


def to_urdf(robot, theta, path, *, name: str | None = None) -> Path:
    """Write ``robot`` with parameters theta (p,) as a URDF file and return its path.

    Links ``<joint name>_link`` hang from ``base_link``; each joint keeps the robot's
    placement, axis and limits, and the flange is a massless link behind a fixed joint. Each
    link's ``<inertial>`` holds its mass (kg), centre of mass (m) and inertia about the centre
    of mass (kg m^2) in the joint frame. Identified ``fv``, ``fc`` go into each joint's
    ``<dynamics damping friction>`` (N m s/rad, N m; motor-side terms as the joint's, see
    ``jaxid.model.urdf.identified_split``); other joint terms have no URDF element.

    Limits, as urdfdom and Pinocchio require them (every ``<limit>`` of a revolute or prismatic
    joint has ``lower upper effort velocity``, that of a continuous joint ``effort velocity``): a
    revolute joint without position limits is written ``continuous`` (without ``<limit>`` when
    it has no effort and velocity limits either); a limit the model does not have (infinite) is written as a
    placeholder that binds nothing, with a warning naming the joints: a position bound
    ``PLACEHOLDER_TRAVEL`` (1e3 rad or m) beyond the other one or 0, whichever is further out,
    an effort of
    ``PLACEHOLDER_RATE`` (1e6 N m or N) and a velocity of the same (rad/s or m/s).
    Reading the file back with ``Robot.from_urdf`` gives the same dynamics.

    Raises:
        ValueError: theta has the wrong shape or is not finite, or a link is not
            physically consistent (a URDF body needs m > 0 and a valid inertia).
    """
    theta = np.asarray(theta, dtype=float)
    p = len(robot.parameter_names())
    if theta.shape != (p,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be a finite vector of shape ({p},), got shape {theta.shape}")
    from jaxid.model.urdf import identified_split

    inertial, _ = robot.split(jnp.asarray(theta))
    _, joint_values = identified_split(robot, theta)  # joint-side values (NaN: none)
    placeholders: list[str] = []
    bad = np.flatnonzero(~np.asarray(inertia.is_consistent(inertial)))
    if bad.size:
        raise ValueError(
            f"links {[robot.names[i] for i in bad]} are not physically consistent "
            "(pseudo-inertia not positive definite): identify with identify_consistent first"
        )
    root = ET.Element("robot", name=name or robot.name)
    ET.SubElement(root, "link", name="base_link")
    parent_links = ["base_link"]
    for i in range(robot.n_joints):
        link = f"{robot.names[i]}_link"
        m, c, I_c = (np.asarray(x) for x in inertia.to_mass_com_inertia(inertial[i]))
        el = ET.SubElement(ET.SubElement(root, "link", name=link), "inertial")
        ET.SubElement(el, "origin", xyz=" ".join(f"{x:.17g}" for x in c), rpy="0 0 0")
        ET.SubElement(el, "mass", value=f"{float(m):.17g}")
        ET.SubElement(
            el,
            "inertia",
            {
                k: f"{I_c[a, b]:.17g}"
                for k, (a, b) in dict(ixx=(0, 0), ixy=(0, 1), ixz=(0, 2), iyy=(1, 1), iyz=(1, 2), izz=(2, 2)).items()
            },
        )
        c = robot.coordinates[i]  # limits are the coordinates' (a mimic joint's: its master's)
        lo, hi = float(robot.q_min[c]), float(robot.q_max[c])
        kind = {"R": "revolute", "P": "prismatic"}[robot.joint_types[i]]
        if kind == "revolute" and not (math.isfinite(lo) or math.isfinite(hi)):
            kind = "continuous"
        j = ET.SubElement(root, "joint", name=robot.names[i], type=kind)
        ET.SubElement(j, "parent", link=parent_links[robot.parents[i] + 1])
        ET.SubElement(j, "child", link=link)
        _origin(j, robot.placements[i])
        ET.SubElement(j, "axis", xyz=" ".join(f"{x:.17g}" for x in np.asarray(robot.axes[i])))
        effort, velocity = float(robot.tau_max[c]), float(robot.qd_max[c])
        if kind != "continuous" or math.isfinite(effort) or math.isfinite(velocity):  # else none needed
            limits, placeholder = _urdf_limits(kind, lo, hi, effort, velocity)
            if placeholder:
                j.append(ET.Comment(f" jaxid: placeholder limit(s) {', '.join(placeholder)}: the model has none "))
                placeholders.append(f"{robot.names[i]} ({', '.join(placeholder)})")
            ET.SubElement(j, "limit", limits)
        friction = {
            attr: f"{float(joint_values[i, k]) + 0.0:.17g}"
            for term, attr in (("fv", "damping"), ("fc", "friction"))
            for k, t in enumerate(robot.joint_terms)
            if t == term and np.isfinite(joint_values[i, k])
        }
        if friction:
            ET.SubElement(j, "dynamics", friction)
        if robot.mimic[i] >= 0:
            ET.SubElement(
                j,
                "mimic",
                joint=robot.names[robot.mimic[i]],
                multiplier=f"{float(robot.mimic_ratio[i]):.17g}",
                offset=f"{float(robot.mimic_offset[i]):.17g}",
            )
        parent_links.append(link)
    ET.SubElement(root, "link", name="flange")
    j = ET.SubElement(root, "joint", name="flange_joint", type="fixed")
    ET.SubElement(j, "parent", link=parent_links[robot.tip_joint + 1])
    ET.SubElement(j, "child", link="flange")
    _origin(j, robot.tip)
    if placeholders:
        warnings.warn(
            f"{'; '.join(placeholders)}: the model has no such limit; written as a placeholder that binds "
            f"nothing (position +-{PLACEHOLDER_TRAVEL:g}, effort and velocity {PLACEHOLDER_RATE:g}), as urdfdom "
            "requires one; put the real limits in the file",
            stacklevel=2,
        )
    ET.indent(root)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="unicode", xml_declaration=True)
    return path


# ------------------------------------------------------------------------ held-out protocol
def holdout(
    robot,
    train,
    test,
    *,
    weights=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    nominal=None,
    base: BaseParameters | None = None,
    prior: str | None = "entropic",
    bounds: Bounds | None = None,
    method: str = "wls",
    max_steps: int | None = None,
):
    """Fit on some runs, score on another, for each prior weight: the held-out protocol.

    Args:
        robot: the ``Robot`` (its ``tau_max`` normalises the error).
        train: list of (W, tau) of the identification runs (standard regressor and torques,
            shapes as [`identify_consistent`][jaxid.identification.consistent.identify_consistent]); they are stacked.
        test: (W, tau) of the validation run.
        weights: prior weights to try (each a consistent fit).
        nominal, base, prior, bounds, method, max_steps: as [`identify_consistent`][jaxid.identification.consistent.identify_consistent].

    Returns:
        dict with ``rows``: one dict per model -- ``{"model": "wls" | "consistent",
        "weight", "rmse" (n,), "nrms_limits" (mean over joints of
        ``jaxid.metrics.nrms_limits``, 100 RMSE / (2 tau_max), %),
        "converged", "steps", "cost", "valid"}`` -- the unconstrained WLS model first (its
        bodies lifted with the dependent parameters at nominal); ``best``: the row of the
        consistent model with the least held-out ``nrms_limits``.
    """
    if not train:
        raise ValueError("train must hold at least one (W, tau) run")
    Ws, taus = zip(*[check_inputs(robot, W, t, method) for W, t in train])
    W, tau = jnp.concatenate(Ws), jnp.concatenate(taus)
    W_test, tau_test = test
    Wv, tauv = check_inputs(robot, W_test, tau_test, method)
    base = base_parameters(robot) if base is None else base
    nominal = robot.parameter_vector() if nominal is None else jnp.asarray(nominal, dtype=float)
    real = np.asarray(tauv).reshape(-1, robot.n)

    def score(theta):
        pred = np.asarray(Wv @ theta).reshape(-1, robot.n)
        return np.asarray(metrics.rmse(real, pred)), float(np.mean(metrics.nrms_limits(real, pred, robot.tau_max)))

    rows: list[dict] = []
    for w in weights:
        fit = identify_consistent(
            robot,
            W,
            tau,
            nominal=nominal,
            base=base,
            prior=prior,
            weight=w,
            method=method,
            bounds=bounds,
            max_steps=max_steps,
            covariance=False,
        )
        if not rows:
            rmse, pct = score(lift(base, fit.base_ls, nominal))
            rows.append(
                dict(
                    model="wls",
                    weight=None,
                    rmse=rmse,
                    nrms_limits=pct,
                    converged=None,
                    steps=None,
                    cost=float(fit.rss),
                    valid=None,
                )
            )
        rmse, pct = score(fit.theta)
        rows.append(
            dict(
                model="consistent",
                weight=float(w),
                rmse=rmse,
                nrms_limits=pct,
                converged=bool(fit.converged),
                steps=int(fit.num_steps),
                cost=float(fit.cost),
                valid=bool(fit.valid),
                theta=np.asarray(fit.theta),
            )
        )
    best = min((r for r in rows if r["model"] == "consistent"), key=lambda r: r["nrms_limits"])
    return dict(rows=rows, best=best)
