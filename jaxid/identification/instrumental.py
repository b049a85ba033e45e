"""Estimators that do not need a noise-free regressor: instrumental variables (IDIM-IV) and
DIDIM, with instruments from the model simulated in closed loop.

Inverse-dynamics least squares solves ``tau = W theta + e`` with ``W = Y(q, qd, qdd)`` built
from differentiated noisy positions: the noise sits *inside* W (errors in variables), it is
correlated with the equation error ``e = e_tau - (W - W_true) theta``, and least squares is
biased, towards zero on the qdd- and qd^2-dominated (inertia) columns, by an amount the LS
covariance does not contain. Both estimators here replace the measured motion, where it
matters, by the motion of the *model* simulated in closed loop with the same reference
trajectory and the same control law as the robot. That simulated motion is a function of
the reference and of theta only, never of the measurement noise.

- **IDIM-IV** (Janot, Vandanjon & Gautier, "A generic instrumental variable approach for
  industrial robot identification", IEEE Trans. Control Systems Technology 22(1), 2014):
  instruments ``Z = Y(q_s, qd_s, qdd_s)`` from the simulation at the previous estimate,
  ``theta = (Z^T S W)^-1 Z^T S tau`` with per-joint weights S (two-step, as Gautier's WLS),
  iterated until theta stops changing. Z is uncorrelated with e, so the estimate is
  consistent whatever the filter did to W; the simulated closed loop only has to be close
  enough to the robot's for Z to stay correlated with W.
- **DIDIM** (Gautier, Janot & Vandanjon, "A new closed-loop output error method for
  parameter identification of robot dynamics", IEEE TCST 21(2), 2013): the measured torque
  regressed on the simulated regressor, ``theta = WLS(Z, tau)``, iterated: a Gauss-Newton
  output-error fit of the torque (the control law makes the simulated torque equal
  ``Z theta``). It never differentiates the measurements, but it is consistent only when the
  simulated closed loop reproduces the robot's: the control law (gains) must be the robot's.

The control law is ``tau = kp (q_r - q) + kd (qd_r - qd)`` (per-joint PD on the reference
q_r, qd_r; [`closed_loop`][jaxid.identification.instrumental.closed_loop], integrated by ``jaxid.simulate``), or, with no gains, a
controller that tracks the reference exactly (computed torque with the model, or the ideal
tracking of ``jaxid simulate``'s data): the simulated motion is then the reference itself,
the instruments ``Y(q_r, qd_r, qdd_r)`` need no simulation and one pass converges.

Covariance: IV, ``s^2 (Z^T S W)^-1 Z^T S Z (W^T S Z)^-1`` (Soderstrom & Stoica,
*Instrumental Variable Methods for System Identification*, Springer 1983, ch. 4) with s^2
from the IV residual, which contains the regressor noise, so the std covers it as far as
the residual is white; DIDIM, the WLS covariance of the final regression.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid.dynamics.terms import mass_matrix, simulate
from jaxid.identification.base import TOL, r_factor
from jaxid.identification.estimators import Identification, _result, _variance_floor, identify
from jaxid.identification.output_error import _AtTheta, _Interp

__all__ = ["InstrumentalFit", "closed_loop", "didim", "idim_iv", "iv", "pd_gains"]


class InstrumentalFit(eqx.Module):
    """Result of [`idim_iv`][jaxid.identification.instrumental.idim_iv] and [`didim`][jaxid.identification.instrumental.didim].

    fit: the final ``Identification`` (theta, cov, std, ... of the last solve; ``method``
        "iv" or "didim"). iterations: solves done. converged: the last relative change of
        theta was below ``rtol``. change: that change (max over parameters of
        |dtheta| / max(|theta|, ||theta|| / sqrt(p))).
    """

    fit: Identification
    iterations: int = eqx.field(static=True)
    converged: bool = eqx.field(static=True)
    change: float = eqx.field(static=True)


# --------------------------------------------------------------------------- simulation
def pd_gains(model, theta, q, bandwidth: float, damping: float = 1.0):
    """Per-joint PD gains (kp, kd), each (n,), N m/rad and N m s/rad, that give each joint a
    closed-loop natural frequency ``bandwidth`` (Hz) and damping ratio ``damping`` on the
    diagonal of the mass matrix of the model at theta, at the mean of the positions q (N, n),
    rad: kp = w^2 M_jj, kd = 2 zeta w M_jj, w = 2 pi bandwidth. A stand-in for a robot whose
    control law is a PD of unknown gains; a robot's own gains are better."""
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth must be a finite frequency > 0 Hz, got {bandwidth}")
    d = jnp.diag(mass_matrix(_AtTheta(model, jnp.asarray(theta, dtype=float)), jnp.mean(jnp.asarray(q), axis=0)))
    w = 2 * np.pi * bandwidth
    return w**2 * d, 2 * damping * w * d


@eqx.filter_jit
def _closed_loop(model, theta, t, q_r, qd_r, kp, kd, substeps):
    n = q_r.shape[1]
    ref = _Interp(t, jnp.concatenate([q_r, qd_r], axis=1))

    def law(ti, q, qd):
        r = ref(ti)
        return kp * (r[:n] - q) + kd * (r[n:] - qd)

    q, qd, qdd, _ = simulate(_AtTheta(model, theta), law, q_r[0], qd_r[0], t, substeps)
    return q, qd, qdd


def closed_loop(model, theta, t, q_r, qd_r, kp, kd, substeps: int | None = None):
    """Motion of the model at theta under the PD law ``tau = kp (q_r - q) + kd (qd_r - qd)``
    from the reference's first state: ``jaxid.simulate`` (RK4), the reference interpolated
    between samples by local cubics.

    model: ``torque(theta, q, qd, qdd)``, ``n`` (a ``Robot``, ...). theta: (p,).
    t: sample times (N,), s, uniform or not. q_r, qd_r: reference (N, n), rad, rad/s.
    kp, kd: gains (n,) (or scalars), N m/rad, N m s/rad. substeps: RK4 steps per interval;
    default enough for w h <= 0.5 at the stiffest joint (w = sqrt(kp / M_jj) of the model
    at the first reference sample), the PD loop's own time scale.
    Returns q, qd, qdd, each (N, n), rad, rad/s, rad/s^2.
    """
    t, q_r, qd_r = (jnp.asarray(x, dtype=float) for x in (t, q_r, qd_r))
    theta = jnp.asarray(theta, dtype=float)
    kp, kd = (jnp.broadcast_to(jnp.asarray(k, dtype=float), (q_r.shape[1],)) for k in (kp, kd))
    if substeps is None:
        d = np.asarray(jnp.diag(mass_matrix(_AtTheta(model, theta), q_r[0])))
        w = float(np.max(np.sqrt(np.asarray(kp) / np.maximum(d, 1e-12)) + np.asarray(kd) / np.maximum(d, 1e-12)))
        substeps = max(1, int(np.ceil(w * float(np.max(np.diff(np.asarray(t)))) / 0.5)))
    return _closed_loop(model, theta, t, q_r, qd_r, kp, kd, int(substeps))


# ------------------------------------------------------------------------------- IV solve
@functools.partial(jax.jit, static_argnames=("n",))
def _iv(W, tau, Z, *, n):
    M, p = W.shape
    N = M // n
    nw = jnp.linalg.norm(W, axis=0)
    d = jnp.where(nw > 0, nw, 1.0)
    A = W / d
    nz = jnp.linalg.norm(Z, axis=0)
    Zs = Z / jnp.where(nz > 0, nz, 1.0)  # scaling Z leaves the estimate unchanged

    def solve(white):
        # With Zw = Q R: (Zw^T Aw)^-1 Zw^T tw = B^-1 Q^T tw, B = Q^T Aw (p, p), and the IV
        # covariance (Zw^T Aw)^-1 Zw^T Zw (Aw^T Zw)^-1 = (B^T B)^-1.
        Aw, Zw, tw = A * white[:, None], Zs * white[:, None], tau * white
        Q, _ = jnp.linalg.qr(Zw)
        B = Q.T @ Aw
        U, s, Vt = jnp.linalg.svd(B)
        x = Vt.T @ ((U.T @ (Q.T @ tw)) / s)
        return x, (Vt.T / s**2) @ Vt, s, tw - Aw @ x

    x, _, _, r = solve(jnp.ones(M, W.dtype))
    var = _variance_floor(jnp.sum(r.reshape(N, n) ** 2, axis=0) / (N - p / n), tau.reshape(N, n))
    x, P, s_b, rw = solve(jnp.tile(1.0 / jnp.sqrt(var), N))
    sv = jnp.linalg.svd(r_factor(A, jnp), compute_uv=False)
    sz = jnp.linalg.svd(r_factor(Zs, jnp), compute_uv=False)  # Q spans range(Z) only when Z has full rank
    # Per-joint residual sums of squares; sigma2 over N - p / n samples, as before the shared builder.
    r2 = lambda theta: jnp.sum((tau - W @ theta).reshape(N, n) ** 2, axis=0)
    fit = _result(x, P * (rw @ rw) / (M - p), d, sv, r2, N, p / n, M - p, jnp.zeros((), W.dtype), "iv")
    return fit, jnp.minimum(s_b[-1] / s_b[0], sz[-1] / sz[0])


def iv(W, tau, Z, n_joints: int) -> Identification:
    """Instrumental-variable estimate of theta in ``tau = W theta + e``, two-step weighted.

    W: stacked sample-major regressor (N*n, p) from the measured (noisy, differentiated)
    motion; tau: (N*n,), N m; Z: instruments, the same shape as W, uncorrelated with the
    noise in W and tau but correlated with W (e.g. the regressor along the model's simulated
    motion); n_joints: n. Step 1, unweighted IV; step 2, rows weighted by the inverse of each
    joint's variance of the step-1 residual (floored as Gautier's WLS). Covariance: module
    docstring. Returns ``jaxid.identification.estimators.Identification`` (method "iv").

    Raises ValueError: shapes, NaN/inf, or a rank-deficient instrument matrix Z^T W (the
    instruments do not excite every parameter: a reference trajectory too poor, or Z
    unrelated to W).
    """
    W, tau, Z = (jnp.asarray(x, dtype=float) for x in (W, tau, Z))
    if W.ndim != 2 or Z.shape != W.shape or tau.shape != (W.shape[0],):
        raise ValueError(
            f"W and Z must have the same shape (N*n, p) and tau (N*n,); got W {W.shape}, Z {Z.shape}, tau {tau.shape}"
        )
    M, p = W.shape
    if n_joints < 1 or M % n_joints or M // n_joints * n_joints <= p:
        raise ValueError(
            f"{M} rows for {p} parameters and {n_joints} joints: the IV estimate needs more "
            "equations than parameters, and rows a multiple of the joints; add samples"
        )
    for name, x in (("W", W), ("tau", tau), ("Z (instruments)", Z)):
        if not np.all(np.isfinite(np.asarray(x))):
            raise ValueError(
                f"{name} contains NaN or inf; repair the data (or the simulation diverged: "
                "start from a better estimate)"
            )
    fit, rc = _iv(W, tau, Z, n=n_joints)
    if not float(rc) > TOL:
        raise ValueError(
            f"the instrument matrix Z^T W is rank deficient (reciprocal condition {float(rc):.2g}): "
            "the instruments do not excite every parameter; use base parameters and a reference "
            "trajectory that excites them"
        )
    return fit


# ----------------------------------------------------------------------------- iterating
def _change(new, old):
    scale = np.linalg.norm(old) / np.sqrt(old.size) or 1.0
    return float(np.max(np.abs(new - old) / np.maximum(np.abs(old), scale)))


def _iterate(solve, instruments, theta0, iterate, max_iter, rtol):
    theta, change, k = np.asarray(theta0, dtype=float), np.inf, 0
    for k in range(1, (max_iter if iterate else 1) + 1):  # noqa: B007 (k is the iteration count returned)
        fit = solve(instruments(theta))
        new = np.asarray(fit.theta)
        change, theta = _change(new, theta), new
        if change < rtol:
            break
    return InstrumentalFit(fit=fit, iterations=k, converged=(not iterate) or change < rtol, change=change)


def idim_iv(
    W,
    tau,
    instruments: Callable,
    theta0,
    n_joints: int,
    *,
    iterate: bool = True,
    max_iter: int = 20,
    rtol: float = 1e-6,
) -> InstrumentalFit:
    """IDIM-IV (Janot, Vandanjon & Gautier 2014): iterate ``theta <- iv(W, tau, Z(theta))``.

    W, tau: the inverse-dynamics system from the measured motion, (N*n, p) and (N*n,).
    instruments: ``Z = instruments(theta)``, (N*n, p), the regressor along the model's
    closed-loop simulated motion at theta (rows matching W's). theta0: start (p,), e.g. the
    WLS estimate. iterate: False when Z does not depend on theta (a controller that tracks the
    reference exactly): one solve. max_iter, rtol: stop when the relative change of theta is
    below rtol. Returns [`InstrumentalFit`][jaxid.identification.instrumental.InstrumentalFit].
    """
    return _iterate(lambda Z: iv(W, tau, Z, n_joints), instruments, theta0, iterate, max_iter, rtol)


def didim(
    tau, instruments: Callable, theta0, n_joints: int, *, iterate: bool = True, max_iter: int = 20, rtol: float = 1e-6
) -> InstrumentalFit:
    """DIDIM (Gautier, Janot & Vandanjon 2013): iterate ``theta <- WLS(Z(theta), tau)``, the
    measured torque regressed on the regressor of the model's closed-loop simulated motion
    (two-step WLS of ``jaxid.identification.estimators.identify``). Arguments as
    [`idim_iv`][jaxid.identification.instrumental.idim_iv]. Returns [`InstrumentalFit`][jaxid.identification.instrumental.InstrumentalFit]
    (``fit.method`` "didim")."""

    def solve(Z):
        return dataclasses.replace(identify(Z, tau, "wls", n_joints=n_joints), method="didim")

    return _iterate(solve, instruments, theta0, iterate, max_iter, rtol)
