"""Output-error identification: simulate the model under the measured torque and fit its
parameters to the measured positions and velocities.

Inverse-dynamics least squares (``identify`` on ``W = Y(q, qd, qdd)``) needs the
acceleration, which has to be differentiated from noisy measurements: the noise ends
up *inside* the regressor (errors in variables), amplified by the differentiation, and
the low-pass filter that tames it also distorts the signals the regressor is built
from. The output-error (simulation-error) estimator never differentiates: the model's
own forward dynamics, driven by the measured torque, turn parameters into positions and
velocities, and Levenberg-Marquardt minimises

    sum_k || (q_sim,k(theta) - q_k) / sigma_q ||^2 + || (qd_sim,k(theta) - qd_k) / sigma_qd ||^2,

which, with white measurement noise on q and qd, is the maximum-likelihood criterion:
the noise stays an output error, never a regressor error. The record is cut into
``segments`` equal pieces simulated in parallel (``vmap``), each from its own estimated
initial state (multiple shooting without continuity constraints): the open-loop
simulation never runs long enough to drift far from the data, and the cost is much less
non-convex than one 30-s simulation. The simulation is fixed-step RK4 (one step per
sample interval) with the torque interpolated by local cubics; the Levenberg-Marquardt
Jacobian is built segment by segment in forward mode.

``output_error`` is jit-able. Batching many fits: prefer ``jax.lax.map`` to ``vmap`` on
CPU with jaxlib 0.10, whose batched LAPACK kernels (the solver's Cholesky, the
covariance's SVD) can deadlock when several run concurrently.

Sources: Ljung, *System Identification: Theory for the User*, 2nd ed., 1999, sec. 4.2
and 7.3 (output-error models, prediction-error criterion); Bock, "Recent advances in
parameter identification techniques for ODE", in *Numerical Treatment of Inverse
Problems in Differential and Integral Equations*, Birkhauser, 1983 (multiple shooting);
Gautier, Janot & Vandanjon, "A new closed-loop output error method for parameter
identification of robot dynamics", IEEE Trans. Control Systems Technology 21(2), 2013
(output error for robot dynamics). Noise levels, when not given, are estimated by the
difference-based estimator of Hall, Kay & Titterington, "Asymptotically optimal
difference-based estimation of variance in nonparametric regression", Biometrika
77(3), 1990 (here the fourth-order binomial difference, normalised by sqrt(70)).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

from jaxid.arrays import is_traced
from jaxid.dynamics.terms import simulate

__all__ = ["OutputErrorFit", "noise_std", "output_error"]

_D4 = np.array([1.0, -4.0, 6.0, -4.0, 1.0]) / np.sqrt(70.0)  # unit noise gain


class _AtTheta(eqx.Module):
    """The model with its parameters replaced by theta (a traced leaf), for ``jaxid.simulate``."""

    model: eqx.Module
    theta: jax.Array

    @property
    def n(self):
        return self.model.n

    def parameter_vector(self):
        return self.theta

    def torque(self, theta, q, qd, qdd):
        return self.model.torque(theta, q, qd, qdd)


def _simulate(model, theta, u, q0, qd0, t):
    """q, qd (L, n) at the times t (L,) of the model at theta under the torque u(t), from
    (q0, qd0): ``jaxid.simulate`` (RK4, one step per interval; its qdd, tau outputs are
    unused and compiled away)."""
    q, qd, _, _ = simulate(_AtTheta(model, theta), lambda ti, q, qd: u(ti), q0, qd0, t)
    return q, qd


class _Interp(eqx.Module):
    """Measured torque between samples: tau(t), shape (n,), by the cubic through the four
    nearest samples (Lagrange). Linear interpolation would put an O(dt^2) error on the
    simulation's input, which shows up as a parameter bias; the cubic's is O(dt^4)."""

    t: jax.Array  # (L,), L >= 4
    tau: jax.Array  # (L, n)

    def __call__(self, ti):
        k = jnp.clip(jnp.searchsorted(self.t, ti, side="right") - 2, 0, self.t.shape[0] - 4)
        tk = jax.lax.dynamic_slice_in_dim(self.t, k, 4)
        w = jnp.stack(
            [jnp.prod(jnp.stack([(ti - tk[j]) / (tk[i] - tk[j]) for j in range(4) if j != i])) for i in range(4)]
        )
        return w @ jax.lax.dynamic_slice_in_dim(self.tau, k, 4)


class OutputErrorFit(eqx.Module):
    """Result of ``output_error``; every array gains a leading axis under ``vmap``.

    Attributes:
        theta: estimated parameters, shape (p,).
        cov: their covariance (J^T J)^-1 s^2 from the Jacobian of the whitened residual
            at the solution (initial states marginalised), s^2 the residual variance per
            degree of freedom (about 1 when sigma_q, sigma_qd are right), shape (p, p).
        std: sqrt(diag(cov)), shape (p,); rel_std: 100 std / |theta|, %.
        q0, qd0: estimated initial state of each segment, shape (segments, n), rad, rad/s.
        residual_rms: RMS of q_sim - q and qd_sim - qd per joint, shape (2, n), rad, rad/s.
        sigma: the noise levels used, (sigma_q, sigma_qd), each shape (n,).
        num_steps: Levenberg-Marquardt steps taken.
        converged: whether the solver met its tolerances within ``max_steps``.
    """

    theta: jax.Array
    cov: jax.Array
    std: jax.Array
    rel_std: jax.Array
    q0: jax.Array
    qd0: jax.Array
    residual_rms: jax.Array
    sigma: tuple
    num_steps: jax.Array
    converged: jax.Array


def noise_std(x, axis=0):
    """Standard deviation of white noise on a smooth sampled signal, per channel.

    sigma = RMS of the fourth-order difference (1, -4, 6, -4, 1) / sqrt(70): the
    difference cancels the signal up to its fourth derivative times dt^4 and leaves the
    noise with unit gain (Hall, Kay & Titterington 1990). Valid when the signal's
    fourth difference is well below the noise, i.e. for signals sampled far above
    their bandwidth.

    x: shape (N, ...) along ``axis``, N >= 5, any unit. Returns the other axes' shape,
    same unit.
    """
    x = jnp.moveaxis(jnp.asarray(x, dtype=float), axis, 0)
    if x.shape[0] < 5:
        raise ValueError(f"noise_std needs at least 5 samples along axis {axis}, got {x.shape[0]}.")
    d = sum(c * x[k : x.shape[0] - 4 + k] for k, c in enumerate(_D4))
    return jnp.sqrt(jnp.mean(d**2, axis=0))


def _split(x, segments):
    L = x.shape[0] // segments
    return x[: segments * L].reshape(segments, L, *x.shape[1:])


@eqx.filter_jit
def _fit(model, t, q, qd, tau, theta0, sigma_q, sigma_qd, segments, max_steps, rtol, atol):
    data = tuple(_split(x, segments) for x in (t, q, qd, tau))
    scale = jnp.where(jnp.abs(theta0) > 0, jnp.abs(theta0), 1.0)  # LM's damping is isotropic
    p, n = theta0.shape[0], q.shape[1]

    def segment(z, ti, qi, qdi, taui):
        """Whitened residual of one segment, shape (L, 2n); z = (theta / scale, q0, qd0)."""
        qsim, qdsim = _simulate(model, z[:p] * scale, _Interp(ti, taui), z[p : p + n], z[p + n :], ti)
        return jnp.concatenate([(qsim - qi) / sigma_q, (qdsim - qdi) / sigma_qd], axis=1)

    def jacobians(u, x0):
        """Residual (S, L, 2n) and each segment's Jacobian in (u, own initial state),
        (S, L, 2n, p + 2n). A segment's residual does not depend on the other segments'
        initial states, so p + 2n tangents per segment suffice instead of p + 2n S."""
        f = lambda z, *d: (segment(z, *d),) * 2
        one = lambda x, *d: jax.jacfwd(f, has_aux=True)(jnp.concatenate([u, x]), *d)[::-1]
        return jax.vmap(one)(x0, *data)

    @jax.custom_jvp
    def residual(u, x0):
        return jax.vmap(lambda x, *d: segment(jnp.concatenate([u, x]), *d))(x0, *data)

    @residual.defjvp
    def _(primals, tangents):
        (u, x0), (du, dx0) = primals, tangents
        r, J = jacobians(u, x0)
        return r, J[..., :p] @ du + jnp.einsum("slrk,sk->slr", J[..., p:], dx0)

    y0 = (theta0 / scale, jnp.concatenate([data[1][:, 0], data[2][:, 0]], axis=1))
    solver = optx.LevenbergMarquardt(rtol=rtol, atol=atol, linear_solver=lx.Normal(lx.Cholesky()))
    sol = optx.least_squares(lambda y, _: residual(*y), solver, y0, max_steps=max_steps, throw=False)
    u, x0 = sol.value
    r, J = jacobians(u, x0)

    # Covariance from the Gauss-Newton normal matrix of all unknowns (parameters and every
    # segment's initial state: a block-arrow matrix), inverted once, parameter block kept.
    A = jnp.einsum("slri,slrj->sij", J, J)  # per segment, (S, p + 2n, p + 2n)
    m = p + 2 * n * segments
    F = jnp.zeros((m, m), J.dtype).at[:p, :p].set(A[:, :p, :p].sum(0))
    for s in range(segments):
        blk = slice(p + 2 * n * s, p + 2 * n * (s + 1))
        F = F.at[:p, blk].set(A[s, :p, p:]).at[blk, :p].set(A[s, p:, :p]).at[blk, blk].set(A[s, p:, p:])
    dof = r.size - m
    cov = jnp.linalg.pinv(F, hermitian=True)[:p, :p] * jnp.sum(r**2) / dof * jnp.outer(scale, scale)
    std = jnp.sqrt(jnp.diag(cov))
    theta = u * scale
    rms = jnp.sqrt(jnp.mean(r**2, axis=(0, 1))).reshape(2, n) * jnp.stack([sigma_q, sigma_qd])
    return OutputErrorFit(
        theta=theta,
        cov=cov,
        std=std,
        rel_std=100.0 * std / jnp.abs(theta),
        q0=x0[:, :n],
        qd0=x0[:, n:],
        residual_rms=rms,
        sigma=(sigma_q, sigma_qd),
        num_steps=sol.stats["num_steps"],
        converged=sol.result == optx.RESULTS.successful,
    )


def output_error(
    model, t, q, qd, tau, theta0, *, sigma_q=None, sigma_qd=None, segments=10, max_steps=100, rtol=1e-8, atol=1e-8
) -> OutputErrorFit:
    """Output-error (simulation-error) estimate of a model's parameters, by
    Levenberg-Marquardt (``optimistix``) over the parameters and each segment's initial
    state (module docstring: criterion, why it removes the errors-in-variables bias,
    sources).

    Args:
        model: provides ``torque(theta, q, qd, qdd)`` (affine in qdd with a positive
            definite mass matrix, as every mechanical model), ``n`` and
            ``parameter_vector()`` (a ``Robot``, ``models.nonlinear_6dof()``, ...).
        t: sample times, shape (N,), s, strictly increasing.
        q, qd: measured positions and velocities, shape (N, n), rad, rad/s.
        tau: measured torques, shape (N, n), N m; the simulation input, interpolated
            between samples by the local cubic (so sample fast compared with its bandwidth).
        theta0: starting parameters, shape (p,), e.g. the least-squares estimate; the
            solver works on theta / |theta0| (entries equal to 0 are not scaled).
        sigma_q, sigma_qd: noise standard deviations of q and qd, scalar or shape (n,),
            rad and rad/s; default ``noise_std`` of the data. Only their ratio changes
            the estimate; their level sets the reported covariance.
        segments: number of equal pieces simulated in parallel, each from its own
            estimated initial state; the last N mod segments samples are not used.
        max_steps, rtol, atol: Levenberg-Marquardt limits and tolerances.

    Returns:
        ``OutputErrorFit`` (theta, cov, std, rel_std, per-segment initial states,
        residual RMS, noise levels, steps, convergence flag).

    Raises:
        ValueError: mismatched shapes, NaN/inf, non-increasing t, non-positive sigma,
            fewer than 4 samples per segment or no more residuals than unknowns; a
            simulation that diverges (theta0 too far off: the solver cannot start). Checks
            on values are skipped under jit/vmap (check ``converged`` and the residual).
    Warns:
        RuntimeWarning: the solver stopped at ``max_steps`` before convergence.
    """
    t, q, qd, tau, theta0 = (jnp.asarray(x, dtype=float) for x in (t, q, qd, tau, theta0))
    n = model.n
    if t.ndim != 1:
        raise ValueError(f"t must have shape (N,), got {t.shape}.")
    N = t.shape[0]
    for name, x in (("q", q), ("qd", qd), ("tau", tau)):
        if x.shape != (N, n):
            raise ValueError(f"{name} must have shape (N, n) = {(N, n)} to match t and the model, got {x.shape}.")
    p = model.parameter_vector().shape[0]
    if theta0.shape != (p,):
        raise ValueError(f"theta0 must have shape ({p},) for this model, got {theta0.shape}.")
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be a positive integer, got {segments!r}.")
    L = N // segments
    if L < 4:
        raise ValueError(f"{N} samples in {segments} segments leaves {L} per segment; use at most {N // 4} segments.")
    if 2 * n * segments * L <= p + 2 * n * segments:
        raise ValueError(
            f"{2 * n * segments * L} residuals for {p + 2 * n * segments} unknowns (parameters and "
            "initial states): use fewer segments or more samples."
        )
    if not is_traced(t, q, qd, tau, theta0):
        for name, x in (("t", t), ("q", q), ("qd", qd), ("tau", tau), ("theta0", theta0)):
            if not np.all(np.isfinite(np.asarray(x))):
                raise ValueError(f"{name} contains NaN or inf; remove or repair those samples.")
        if not np.all(np.diff(np.asarray(t)) > 0):
            raise ValueError("t must be strictly increasing (s).")
    sigmas = []
    for name, s, x in (("sigma_q", sigma_q, q), ("sigma_qd", sigma_qd, qd)):
        s = noise_std(x) if s is None else jnp.broadcast_to(jnp.asarray(s, dtype=float), (n,))
        if not is_traced(s) and not np.all(np.asarray(s) > 0):
            raise ValueError(f"{name} must be positive noise standard deviations, got {np.asarray(s)}.")
        sigmas.append(s)
    fit = _fit(model, t, q, qd, tau, theta0, sigmas[0], sigmas[1], segments, max_steps, rtol, atol)
    if not is_traced(fit.theta):
        if not np.all(np.isfinite(np.asarray(fit.residual_rms))):
            raise ValueError(
                "the simulation diverged (or the mass matrix lost positive definiteness): start "
                "from a theta0 whose model is stable under the measured torque, e.g. a least-squares "
                "estimate from better filtered data, or use more segments (shorter simulations)."
            )
        if not bool(fit.converged):
            warnings.warn(
                f"output_error stopped after {int(fit.num_steps)} steps without meeting "
                f"rtol={rtol}, atol={atol}; raise max_steps.",
                RuntimeWarning,
                stacklevel=2,
            )
    return fit
