"""Rigid-body base parameters and per-joint LuGre friction, identified together.

The model of a robot whose joints have LuGre friction (``jaxid.friction.lugre``):

    tau_j(t) = W_j(q, qd, qdd) theta_b + F_j(p_j; qd_j(s), s <= t) + e_j,

linear in the b base parameters theta_b, nonlinear in the eight LuGre parameters p_j of
each joint, whose friction depends on the joint's whole velocity history (its bristle state
is integrated along each run). Identified from one experiment (several runs: e.g. the
article's S-curve through zero velocity on every joint, and a Fourier excitation for the
rigid body), staged and then refined together:

  1. ``static_start``: least squares on [W, sgn qd_j, qd_j, sgn(qd_j) qd_j^2], the
     rigid body with LuGre's steady-state friction (Coulomb, viscous, quadratic);
  2. the residual tau - W theta_b of the friction run (the run that dwells longest at low
     speed) is each joint's friction record F = tau - tau_dyn, identified joint by joint
     (``jaxid.identification.lugre.identify_joints``: static curve, shape factors, swarm,
     Levenberg-Marquardt);
  3. ``refine``: Levenberg-Marquardt (optimistix) on all joints' LuGre parameters with
     theta_b eliminated by variable projection (Golub & Pereyra, "The differentiation of
     pseudo-inverses and nonlinear least squares problems whose variables separate", SIAM J.
     Numer. Anal. 10(2), 1973): the residual is the weighted torque error projected off the
     range of W, its Jacobian forward-mode autodiff through the LuGre integration; at the
     optimum theta_b is the least-squares solution on tau - F, so (theta_b, p) is the joint
     least-squares estimate of all runs;
  4. the Gauss-Newton covariance of (theta_b, p) together, each joint's torque weighted by
     its residual std (``jaxid.identification.lugre.gauss_newton_normal``).

Units: rad, rad/s, N*m (LuGre's of a rotary joint, ``jaxid.friction.lugre.UNITS`` read per rad).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from jaxid.friction.lugre import NAMES, LuGre, check_parameters, check_signal, g, integration_steps, simulate
from jaxid.identification import lugre as single

#: Samples per bristle time constant g(v0) / (sigma0 v0) (the presliding relaxation at the
#: Stribeck velocity) that a run must have: fewer, and the torque samples miss the transient
#: that determines sigma0 and sigma1.
SAMPLES_PER_BRISTLE = 5


class Fit(eqx.Module):
    """Result of [`identify`][jaxid.identification.lugre_robot.identify].

    theta: base parameters (b,). lugre: LuGre with fields of shape (n,), one set per joint.
    std_theta: (b,) and std_lugre: (n, 8) standard deviations (Gauss-Newton covariance of
    the joint estimate); cov_theta: (b, b) covariance of theta; corr: (b + 8n, b + 8n)
    correlations of [theta, p_1, ..., p_n]; to_optimum: (b + 8n,) Gauss-Newton step to the
    least-squares optimum in std. sigma: (n,) per-joint torque noise std the fit weighted by,
    N*m; residual_rms: (n,) RMS of the final torque residual, N*m. converged: Levenberg-
    Marquardt met its tolerance; steps: its steps, over all reweighting rounds. initial: the per-joint staged fits
    (``jaxid.identification.lugre.Fit``, batched (n,)) that started it; friction_run: the
    index of the run they were made on.
    """

    theta: jax.Array
    lugre: LuGre
    std_theta: jax.Array
    std_lugre: jax.Array
    cov_theta: jax.Array
    corr: jax.Array
    to_optimum: jax.Array
    sigma: jax.Array
    residual_rms: jax.Array
    converged: jax.Array
    steps: jax.Array
    initial: single.Fit
    friction_run: int = eqx.field(static=True)

    def rel_std_lugre(self):
        """std / |parameter| of each joint's LuGre parameters, shape (n, 8)."""
        return self.std_lugre / jnp.abs(self.lugre.vector())

    def warnings(self, joint_names=None, rel_std=single.REL_STD):
        """One line per problem: LuGre parameters whose relative std exceeds ``rel_std``
        (named per joint), parameters at an edge of the LuGre search box, a
        Levenberg-Marquardt that did not converge. Empty if none."""
        n = self.std_lugre.shape[0]
        names = [f"joint {j + 1}" for j in range(n)] if joint_names is None else list(joint_names)
        rel = np.asarray(self.rel_std_lugre())
        out = []
        for j in range(n):
            poor = [f"{k} ({100 * r:.3g} %)" for k, r in zip(NAMES, rel[j]) if not r <= rel_std]
            if poor:
                out.append(
                    f"{names[j]}: LuGre poorly determined by these runs (relative std > "
                    f"{100 * rel_std:g} %): " + ", ".join(poor)
                )
            bound = [k for k, b in zip(NAMES, np.asarray(single.at_bound(self.lugre.vector()[j]))) if b]
            if bound:
                out.append(f"{names[j]}: LuGre at the edge of the search box: {', '.join(bound)}")
        if not bool(self.converged):
            out.append(
                f"the joint rigid-body + LuGre fit did not converge in {int(self.steps)} Levenberg-Marquardt "
                "steps; the estimate is not the least-squares optimum"
            )
        return out


def static_start(W, tau, qd, threshold=single.THRESHOLD):
    """Step 1: (theta_b (b,), friction (n, 3)) by least squares on [W, sgn qd_j, qd_j,
    sgn(qd_j) qd_j^2]: the rigid body with each joint's steady-state LuGre friction
    (alpha0, alpha2, alpha3), on the equations (sample k, joint j) with |qd_j| > threshold:
    there the friction is in steady state and this model is exact; below it (presliding,
    the Stribeck dip, dwells) the static model would bias theta_b and with it every joint's
    friction record. W: (N, n, b); tau, qd: (N, n)."""
    N, n, b = W.shape
    cols = jnp.stack([jnp.sign(qd), qd, jnp.sign(qd) * qd**2], axis=-1)  # (N, n, 3)
    F = (cols[:, :, None, :] * jnp.eye(n)[None, :, :, None]).reshape(N, n, 3 * n)
    keep = (jnp.abs(qd) > threshold).reshape(-1, 1)
    A = jnp.concatenate([W, F], axis=-1).reshape(N * n, -1) * keep
    scale = jnp.linalg.norm(A, axis=0)
    scale = jnp.where(scale > 0, scale, 1.0)
    x = jnp.linalg.lstsq(A / scale, tau.reshape(-1) * keep[:, 0])[0] / scale
    return x[:b], x[b:].reshape(n, 3)


def _unpack(y):
    return LuGre.from_vector(jnp.where(single._LOG, jnp.exp(y), y))


def _friction(p, qd, dt, steps):
    """Each joint's friction (N, n) along qd (N, n) for LuGre ``p`` with fields (n,)."""
    return jax.vmap(lambda pj, v, st: simulate(pj, v, dt, steps=st), in_axes=(0, 1, 0), out_axes=1)(p, qd, steps)


def _friction_jac(P, qd, dt, steps, log):
    """Each joint's friction (N, n) and its Jacobian (N, n, 8) with respect to its own eight
    parameters (log coordinates where ``log``): forward mode, eight tangents per joint."""

    def one(pj, v, st):
        to_p = (lambda u: LuGre.from_vector(jnp.where(single._LOG, jnp.exp(u), u))) if log else LuGre.from_vector
        u0 = jnp.where(single._LOG, jnp.log(jnp.abs(pj)), pj) if log else pj
        return jax.jacfwd(lambda u: (lambda f: (f, f))(simulate(to_p(u), v, dt, steps=st)), has_aux=True)(u0)

    J, F = jax.vmap(one, in_axes=(0, 1, 0), out_axes=(1, 1))(P, qd, steps)
    return F, J


def _block(J):
    """(N, n, 8) per-joint Jacobians -> the (N n, 8 n) block-diagonal Jacobian of all joints."""
    N, n, k = J.shape
    return (J[:, :, None, :] * jnp.eye(n)[None, :, :, None]).reshape(N * n, n * k)


@eqx.filter_jit
def refine(P0, runs, Q, w, rtol=1e-6, atol=1e-6, max_steps=50):
    """Step 3: Levenberg-Marquardt on the LuGre parameters of every joint, theta_b eliminated.

    P0: (n, 8) starting parameters. runs: tuple of (tau (N_r, n), qd (N_r, n), dt_r, steps_r)
    per run (steps_r: per-joint sub-step tables, leading axis n). Q: tuple of (N_r n, b)
    blocks of the orthonormal basis of the range of the weighted regressor of all runs
    stacked. w: (n,) per-joint weights 1 / sigma_j. Residual: the weighted torque errors
    projected off range(W); log coordinates for the positive parameters as in
    ``jaxid.identification.lugre.refine``. Returns (P (n, 8), converged, steps).
    """

    def weighted(y, jac):
        out = [
            _friction_jac(_unpack(y).vector(), qd, dt, st, True) if jac else (_friction(_unpack(y), qd, dt, st), None)
            for tau, qd, dt, st in runs
        ]
        r = [(w * (tau - F)).reshape(-1) for (tau, *_), (F, _) in zip(runs, out)]
        return r, [None if Jr is None else w[None, :, None] * Jr for _, Jr in out]

    def project(xs):
        c = sum(Qr.T @ x for Qr, x in zip(Q, xs))
        return [x - Qr @ c for Qr, x in zip(Q, xs)]

    @jax.custom_jvp
    def residual(y):
        r, _ = weighted(y, False)
        return jnp.concatenate(project(r))

    @residual.defjvp
    def residual_jvp(primals, tangents):
        (y,), (t,) = primals, tangents
        r, J = weighted(y, True)
        dr = [-jnp.einsum("knd,nd->kn", Jr, t).reshape(-1) for Jr in J]  # block diagonal in the joints
        return jnp.concatenate(project(r)), jnp.concatenate(project(dr))

    y0 = jnp.where(single._LOG, jnp.log(jnp.abs(P0)), P0)
    sol = optx.least_squares(
        lambda y, _: residual(y), optx.LevenbergMarquardt(rtol, atol), y0, max_steps=max_steps, throw=False
    )
    return _unpack(sol.value).vector(), sol.result == optx.RESULTS.successful, sol.stats["num_steps"]


@eqx.filter_jit
def _linear_part(P, W, runs, w, normal=True):
    """theta_b by weighted least squares on tau - F(P), the residuals (N_r, n) per run, and (if
    ``normal``) the normal equations of the Gauss-Newton covariance of [theta_b, P] (natural units)."""
    if normal:
        F, J = zip(*(_friction_jac(P, qd, dt, st, False) for tau, qd, dt, st in runs))
    else:
        F = [_friction(LuGre.from_vector(P), qd, dt, st) for tau, qd, dt, st in runs]
    A = jnp.concatenate([(w[None, :, None] * Wr).reshape(-1, Wr.shape[-1]) for Wr in W])
    y = jnp.concatenate([(w * (tau - Fr)).reshape(-1) for (tau, *_), Fr in zip(runs, F)])
    theta = jnp.linalg.lstsq(A, y)[0]
    res = [tau - jnp.einsum("knb,b->kn", Wr, theta) - Fr for (tau, *_), Wr, Fr in zip(runs, W, F)]
    if not normal:
        return theta, res
    k = W[0].shape[-1] + 8 * P.shape[0]
    JtJ, Jtr, rr, m = jnp.zeros((k, k)), jnp.zeros(k), 0.0, 0
    for Wr, Jr, er in zip(W, J, res):  # the Jacobian of a long run is accumulated, not stored whole
        Jf = jnp.concatenate([(w[None, :, None] * Wr).reshape(-1, Wr.shape[-1]), _block(w[None, :, None] * Jr)], 1)
        rw = (w * er).reshape(-1)
        JtJ, Jtr, rr, m = JtJ + Jf.T @ Jf, Jtr + Jf.T @ rw, rr + rw @ rw, m + rw.shape[0]
    return theta, res, JtJ, Jtr, rr, m


def _weights(res):
    s = jnp.sqrt(jnp.mean(jnp.concatenate(res) ** 2, axis=0))
    return jnp.maximum(s, 1e-12 * jnp.max(s))


def friction_run(runs, threshold=single.THRESHOLD):
    """Index of the run that identifies LuGre best: among those in which every joint moves
    through zero velocity and above ``threshold`` (``check_excitation``), the one with the
    most samples at 0 < |qd| < threshold (creep dwells, the Stribeck region). ValueError if
    none qualifies."""
    best, count, why = None, -1, None
    for i, ds in enumerate(runs):
        qd = np.asarray(ds.qd)
        try:
            single.check_excitation(qd, threshold)
        except ValueError as e:
            why = why or f"run {i} ({ds.source or 'arrays'}): {e}".replace("axis ", "joint ")
            continue
        slow = int(np.sum((np.abs(qd) > 0) & (np.abs(qd) < threshold)))
        if slow > count:
            best, count = i, slow
    if best is None:
        raise ValueError(
            f"no run identifies LuGre friction on every joint ({why}); record the S-curve friction "
            "experiment (jaxid.excitation.scurve.friction_s_curve) on every joint"
        )
    return best


def _check_runs(W, runs):
    if len(W) != len(runs) or not runs:
        raise ValueError(f"give one regressor per run: {len(W)} regressors for {len(runs)} runs")
    n = runs[0].n
    out = []
    for Wr, ds in zip(W, runs):
        name = ds.source or "arrays"
        if ds.qd is None:
            raise ValueError(f"{name}: no joint velocities; LuGre integrates each joint's bristle state along qd")
        t = check_signal(f"{name}: t", ds.t, min_len=100)
        qd, tau = (check_signal(f"{name}: {k}", getattr(ds, k)) for k in ("qd", "tau"))
        if qd.shape != (t.shape[0], n) or tau.shape != qd.shape or np.shape(Wr)[:2] != qd.shape:
            raise ValueError(
                f"{name}: qd, tau must be (N, {n}) and W (N, {n}, b) with N = len(t) = {t.shape[0]}; "
                f"got {qd.shape}, {tau.shape}, {np.shape(Wr)}"
            )
        step = np.diff(t)
        dt = float(np.median(step))
        if not dt > 0 or np.any(np.abs(step - dt) > 1e-6 * dt):
            raise ValueError(f"{name}: time stamps must be uniform for the LuGre integration; resample the run")
        out.append((jnp.asarray(tau), jnp.asarray(qd), dt))
    return out


def check_rate(P, runs):
    """ValueError naming the run and the rate needed when a run is sampled too slowly for the
    bristle dynamics of ``P`` (n, 8): fewer than ``SAMPLES_PER_BRISTLE`` samples per bristle
    time constant g(v0) / (sigma0 v0) of some joint."""
    p = LuGre.from_vector(P)
    tc = np.asarray(g(p, p.v0) / (p.sigma0 * p.v0))
    need = SAMPLES_PER_BRISTLE / float(tc.min())
    for ds in runs:
        fs = 1.0 / ds.dt
        if fs < need:
            j = int(np.argmin(tc))
            raise ValueError(
                f"{ds.source or 'a run'}: sampled at {fs:.4g} Hz, too slowly for the bristle dynamics of "
                f"joint {j + 1} (time constant {tc[j] * 1e3:.3g} ms at its Stribeck velocity); record at "
                f">= {int(np.ceil(need))} Hz"
            )


def identify(W, runs, *, key=None, method="full", threshold=single.THRESHOLD, max_steps=50, rounds=3):
    """Identify the base parameters and every joint's LuGre friction together.

    Args:
      W: per run, the base regressor, shape (N_r, n, b) (``tau = W @ theta_b`` for the rigid
        body and any joint terms not covered by LuGre: no fv, fc, fs, fva columns).
      runs: per run, a ``jaxid.data.Dataset`` with t (N_r,) s uniform, qd (N_r, n) rad/s
        and tau (N_r, n) N*m; one of them must take every joint through zero velocity with
        dwells at low speed (``friction_run``).
      key: PRNG key of the per-joint particle swarms (default ``jax.random.key(0)``).
      method: the per-joint staged method of step 2 (``jaxid.identification.lugre.METHODS``).
      threshold: |qd| above which friction is steady state, rad/s.
      max_steps: Levenberg-Marquardt steps of each joint refinement.
      rounds: refinements at most, each with the weights of the previous one's residual.

    Returns:
      [`Fit`][jaxid.identification.lugre_robot.Fit]; ``fit.warnings()`` names poorly determined or bounded LuGre parameters
      and a refinement that did not converge (also issued as RuntimeWarnings).
    """
    data = _check_runs(W, runs)
    W = [jnp.asarray(Wr, dtype=float) for Wr in W]
    i = friction_run(runs, threshold)
    theta0, _ = static_start(jnp.concatenate(W), *(jnp.concatenate([d[k] for d in data]) for k in (0, 1)), threshold)
    tau, qd, dt = data[i]
    with warnings.catch_warnings():  # the starting fits' warnings are superseded by the joint fit's
        warnings.simplefilter("ignore", RuntimeWarning)
        initial = single.identify_joints(
            np.asarray(runs[i].q),
            np.asarray(qd),
            np.asarray(tau - jnp.einsum("knb,b->kn", W[i], theta0)),
            dt,
            key,
            method=method,
            threshold=threshold,
        )
    P = initial.params.vector()
    check_parameters(LuGre.from_vector(P))
    scale = initial.params.v0 / 3  # sub-steps concentrated at each joint's Stribeck velocity, fixed hereafter
    steps = [jax.vmap(lambda v, sc: integration_steps(v, 8, sc), in_axes=(1, 0))(qd_r, scale) for _, qd_r, _ in data]
    runs_j = tuple((tau_r, qd_r, dt_r, st) for (tau_r, qd_r, dt_r), st in zip(data, steps))
    n = qd.shape[1]
    sizes = np.cumsum([Wr.shape[0] * n for Wr in W])[:-1]
    w, nsteps = jnp.ones(n), 0
    # Two-step weighting (as WLS): each joint's torque weighted by the std of its residual,
    # re-estimated after each refinement until it settles (the first residual, of the staged
    # start, overstates the noise of a joint whose start was poor).
    for _ in range(rounds):
        _, res = _linear_part(P, W, runs_j, w, False)
        w_new = 1.0 / _weights(res)
        if nsteps and float(jnp.max(jnp.abs(w_new / w - 1))) < 0.05:
            break
        w = w_new
        A = jnp.concatenate([(w[None, :, None] * Wr).reshape(-1, Wr.shape[-1]) for Wr in W])
        Q = tuple(jnp.split(jnp.linalg.qr(A)[0], sizes))
        P, converged, k = refine(P, runs_j, Q, w, max_steps=max_steps)
        nsteps += int(k)
    check_rate(P, runs)  # on the joint estimate: a staged start on a contaminated residual can be 2x off
    theta, res, JtJ, Jtr, rr, m = _linear_part(P, W, runs_j, w)
    std, corr, s, to_optimum = single.gauss_newton_normal(JtJ, Jtr, rr, m)
    b = theta.shape[0]
    d = std[:b]
    cov_theta = corr[:b, :b] * jnp.outer(d, d)
    fit = Fit(
        theta,
        LuGre.from_vector(P),
        d,
        std[b:].reshape(n, 8),
        cov_theta,
        corr,
        to_optimum,
        s / w,
        jnp.sqrt(jnp.mean(jnp.concatenate(res) ** 2, axis=0)),
        converged,
        jnp.asarray(nsteps),
        initial,
        i,
    )
    for line in fit.warnings():
        warnings.warn(line, RuntimeWarning, stacklevel=2)
    return fit
