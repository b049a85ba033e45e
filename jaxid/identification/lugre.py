"""LuGre friction identification from a sampled friction experiment.

Staged as is usual for LuGre (static curve first, then the dynamic parameters; Canudas
de Wit & Lischinsky, "Adaptive friction compensation with partially known dynamic
friction model", Int. J. Adapt. Control Signal Process. 11, 1997), then refined by a
particle swarm (Kennedy & Eberhart, 1995), a shape-factor iteration and
Levenberg-Marquardt (Marquardt, SIAM J. Appl. Math. 11, 1963). Each step is its own
pure function:

  a. ``steady_state``       alpha0, alpha2, alpha3 by least squares where |v| > threshold;
  b. ``stribeck_shape``     a, b of a exp(-(v/b)^2) fitted to the rest below it;
  c. ``hysteresis_shape``   presliding regression on [1, x, v, v x] where |v| < v_pre;
  d. ``search`` (``pso``)   a vmapped particle swarm for the dynamic parameters;
  e. ``shape_iteration``    (alpha1, v0) and (sigma0, sigma1) corrected until the
                            shape factors of the simulation match the measured ones;
  f. ``fit_vd``             golden-section search for vd;
  g. ``refine``             Levenberg-Marquardt on all eight parameters (optimistix),
                            positive parameters in log coordinates, Jacobian by
                            forward-mode autodiff through the simulation.

``identify`` chains them (``method="pso" | "shape" | "full"``; e and f alternate
twice, since the damping shape factor depends weakly on vd); ``identify_joints``
runs it for every joint of a robot in one vmapped call. Data are one axis sampled
uniformly: x (N,) position, v (N,) velocity, F (N,) friction force; SI units of a
linear axis (m, m/s, N), or rad, rad/s, N*m for a joint.
"""
from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jax import lax

from jaxid.friction.lugre import NAMES, LuGre, check_signal, integration_steps, simulate

THRESHOLD = float(np.deg2rad(3.0))  # 3 deg/s: above it the friction is in steady state

# Search box of the dynamic parameters, SI units of a linear axis (prior knowledge:
# bristle stiffness of metal contacts, damping near critical, Stribeck velocities of
# lubricated contacts). alpha1 is searched in [0, 2] alpha0. Log-uniform where marked.
BOUNDS = {
    "sigma0": (1e3, 3e7, True),
    "sigma1": (1.0, 1e4, True),
    "alpha1": (0.0, 2.0, False),
    "v0": (3e-5, 1e-2, True),
    "vd": (1e-3, 0.2, True),
}
# numpy, not jnp: a module-level jnp array would start the JAX backend at import.
_LOG = np.array([n in ("sigma0", "sigma1", "alpha0", "v0", "vd") for n in NAMES])


class Fit(eqx.Module):
    """Result of ``identify``: parameters, the loss (mean squared residual, N^2) and
    the shape factors of the data; every field batched when vmapped."""

    params: LuGre
    loss: jax.Array
    shape: jax.Array  # (a, b, c0, c1, c2, c3) of the measured force


# --------------------------------------------------------------------------- a, b, c
@jax.jit
def steady_state(v, F, threshold=THRESHOLD):
    """Step a: (alpha0, alpha2, alpha3) by least squares on [sgn v, v, sgn(v) v^2].

    Only samples with |v| > ``threshold`` (units/s) enter, where dz/dt = 0 and
    F = alpha0 sgn v + alpha2 v + alpha3 sgn(v) v^2 (+ a Stribeck term that is
    negligible there). v, F: shape (N,). Returns shape (3,).
    """
    w = (jnp.abs(v) > threshold).astype(v.dtype)
    A = jnp.stack([jnp.sign(v), v, jnp.sign(v) * v**2], axis=1) * w[:, None]
    return jnp.linalg.lstsq(A, F * w)[0]


@jax.jit
def coulomb_viscous(v, F, threshold=THRESHOLD):
    """Static baseline F = Fc sgn(v) + fv v, the usual least-squares fit to the sliding
    samples (|v| > threshold): returns (Fc in N, fv in N*s/m)."""
    w = (jnp.abs(v) > threshold).astype(v.dtype)
    return jnp.linalg.lstsq(jnp.stack([jnp.sign(v), v], axis=1) * w[:, None], F * w)[0]


def _steady(coef, v):
    return coef[0] * jnp.sign(v) + coef[1] * v + coef[2] * jnp.sign(v) * v**2


@partial(jax.jit, static_argnums=(0, 3))
def golden_section(f, lo, hi, n_iter=40):
    """Minimiser of a unimodal scalar function on [lo, hi] by golden-section search.

    One new evaluation per iteration, fixed iteration count (jit/vmap-able); the bracket
    shrinks by 0.618 per iteration (Kiefer, "Sequential minimax search for a maximum",
    Proc. AMS 4, 1953).
    """
    r = (np.sqrt(5.0) - 1) / 2
    a, b = jnp.asarray(lo, float), jnp.asarray(hi, float)
    c, d = b - r * (b - a), a + r * (b - a)

    def body(_, s):
        a, b, c, d, fc, fd = s
        left = fc < fd  # minimum in [a, d]: d <- c, new c; else in [c, b]: c <- d, new d
        a, b = jnp.where(left, a, c), jnp.where(left, d, b)
        c, d = jnp.where(left, b - r * (b - a), d), jnp.where(left, c, a + r * (b - a))
        fnew = f(jnp.where(left, c, d))
        return a, b, c, d, jnp.where(left, fnew, fd), jnp.where(left, fc, fnew)

    fc, fd = jax.vmap(f)(jnp.stack([c, d]))
    a, b, *_ = lax.fori_loop(0, n_iter, body, (a, b, c, d, fc, fd))
    return (a + b) / 2


@jax.jit
def presliding_displacement(x, v):
    """Displacement since the last velocity reversal, shape (N,) (same units as x).

    A reversal is a sample whose velocity sign differs from the last non-zero sign.
    Returns (xp, start): xp signed along the motion (>= 0 while the sign holds) and the
    index of the reversal each sample belongs to.
    """
    s = jnp.sign(v)
    last = lax.associative_scan(lambda a, b: jnp.where(b != 0, b, a), s)  # last non-zero sign
    rev = jnp.concatenate([jnp.array([True]), last[1:] != last[:-1]])
    start = lax.cummax(jnp.where(rev, jnp.arange(v.shape[0]), 0))
    return last * (x - x[start]), start


@jax.jit
def stribeck_shape(xp, v, F, steady, threshold=THRESHOLD, v_min=1e-4, x_pre=1e-4):
    """Step b: shape factors (a, b) of y = a exp(-(v/b)^2), y = sgn(v) (F - steady part).

    Fitted to the quasi-steady samples below the threshold: v_min < |v| < threshold
    and more than ``x_pre`` travelled since the last reversal (xp from
    ``presliding_displacement``). a is linear given b; b is found by golden-section
    search of the residual over log b in [v_min, threshold]. For steady data a = alpha1
    and b = v0. Returns shape (2,): a in N, b in units/s.
    """
    w = ((jnp.abs(v) > v_min) & (jnp.abs(v) < threshold) & (xp > x_pre)).astype(v.dtype)
    y = jnp.sign(v) * (F - _steady(steady, v))

    def amp(lb):
        e = jnp.exp(-((v / jnp.exp(lb)) ** 2)) * w
        return jnp.sum(e * y) / jnp.sum(e * e), e

    def cost(lb):
        a, e = amp(lb)
        return jnp.sum((w * y - a * e) ** 2)

    lb = golden_section(cost, jnp.log(v_min), jnp.log(threshold))
    return jnp.stack([amp(lb)[0], jnp.exp(lb)])


@jax.jit
def hysteresis_shape(xp, start, v, F, v_pre=1e-3, x_pre=1e-4):
    """Step c: presliding shape factors c (4,) by least squares.

    In presliding (|v| < v_pre, less than ``x_pre`` travelled since the reversal) the
    force difference since the reversal, sgn(v) (F - F_rev), is regressed on
    [1, xp, |v|, |v| xp]; there F - F_rev ~ sigma0 (z - z_rev) + sigma1 dz/dt with
    dz/dt ~ v, so c1 follows the bristle stiffness and c2 the damping.
    xp, start: from ``presliding_displacement``; v, F: shape (N,).
    """
    s = jnp.sign(v)
    w = ((jnp.abs(v) < v_pre) & (xp < x_pre) & (s != 0)).astype(v.dtype)
    av = jnp.abs(v)
    A = jnp.stack([jnp.ones_like(v), xp, av, av * xp], axis=1) * w[:, None]
    return jnp.linalg.lstsq(A, s * (F - F[start]) * w)[0]


@jax.jit
def shape_factors(x, v, F, threshold=THRESHOLD):
    """Steps a-c together: (steady (3,), shape (6,) = (a, b, c0, c1, c2, c3))."""
    xp, start = presliding_displacement(x, v)
    steady = steady_state(v, F, threshold)
    stri = stribeck_shape(xp, v, F, steady, threshold)
    return steady, jnp.concatenate([stri, hysteresis_shape(xp, start, v, F)])


# --------------------------------------------------------------------------- d: PSO
@partial(jax.jit, static_argnums=(0, 4, 5))
def pso(fitness, lower, upper, key, n_particles=50, n_iter=50, w=0.7298, c=1.49618):
    """Minimise ``fitness`` over the box [lower, upper] by particle swarm optimisation.

    Global-best swarm with Clerc-Kennedy constriction coefficients (Clerc & Kennedy,
    "The particle swarm", IEEE TEC 6(1), 2002); positions are clipped to the box.
    ``fitness`` maps (n_particles, d) -> (n_particles,) (typically a vmapped loss).
    lower, upper: shape (d,). Returns (best position (d,), best fitness).
    """
    d = lower.shape[0]
    k0, k1, key = jax.random.split(key, 3)
    span = upper - lower
    pos = lower + span * jax.random.uniform(k0, (n_particles, d))
    vel = 0.2 * span * jax.random.uniform(k1, (n_particles, d), minval=-1, maxval=1)

    def gen(state, k):  # evaluate, update the bests, move: n_iter x n_particles evaluations
        pos, vel, pbest, pval, gbest, gval = state
        val = fitness(pos)
        better = val < pval
        pbest = jnp.where(better[:, None], pos, pbest)
        pval = jnp.where(better, val, pval)
        i = jnp.argmin(pval)
        gbest, gval = pbest[i], pval[i]
        r1, r2 = jax.random.uniform(k, (2, n_particles, d))
        vel = w * vel + c * r1 * (pbest - pos) + c * r2 * (gbest - pos)
        vel = jnp.clip(vel, -0.5 * span, 0.5 * span)
        return (jnp.clip(pos + vel, lower, upper), vel, pbest, pval, gbest, gval), None

    inf = jnp.full(n_particles, jnp.inf)
    state = (pos, vel, pos, inf, pos[0], inf[0])
    state, _ = lax.scan(gen, state, jax.random.split(key, n_iter))
    return state[4], state[5]


def _box(steady, names, bounds=BOUNDS):
    """Corners of the search box (log coordinates where flagged) and the log flags."""
    lo, hi, log = [], [], []
    for name in names:
        if name in ("alpha0", "alpha2", "alpha3"):  # +-1 % of the least-squares value
            val = steady[("alpha0", "alpha2", "alpha3").index(name)]
            lo.append(val - 0.01 * jnp.abs(val))
            hi.append(val + 0.01 * jnp.abs(val))
            log.append(False)
        else:
            a, b, is_log = bounds[name]
            if name == "alpha1":
                a, b = a * steady[0], b * steady[0]
            lo.append(jnp.log(a) if is_log else jnp.asarray(a, float))
            hi.append(jnp.log(b) if is_log else jnp.asarray(b, float))
            log.append(is_log)
    return jnp.stack(lo), jnp.stack(hi), np.array(log)


def _loss(p, v, F, dt, steps):
    return jnp.mean((simulate(p, v, dt, steps=steps) - F) ** 2)


def _steps(p, v, steps):
    return integration_steps(v, 8, p.v0 / 3) if steps is None else steps


def search(v, F, dt, steady, key, steps, vd, n_particles=50, n_iter=50, bounds=BOUNDS,
           search_vd=False):
    """Step d: particle swarm over sigma0, sigma1, alpha1, v0 (and vd if ``search_vd``)
    with alpha0, alpha2, alpha3 within +-1 % of ``steady`` (3,); vd held at ``vd``
    otherwise. The fitness is the mean squared force error of ``simulate`` on the
    sub-step table ``steps`` (``integration_steps(v, 2, ...)``: coarse is enough to
    locate the basin). Returns LuGre.
    """
    names = ("sigma0", "sigma1", "alpha0", "alpha1", "v0", "alpha2", "alpha3")
    names = names + ("vd",) if search_vd else names
    lo, hi, log = _box(steady, names, bounds)

    def decode(u):
        vals = dict(zip(names, jnp.where(log, jnp.exp(u), u)))
        vals.setdefault("vd", vd)
        return LuGre(*(vals[n] for n in NAMES))

    def fitness(us):
        return jax.vmap(lambda u: _loss(decode(u), v, F, dt, steps))(us)

    best, _ = pso(fitness, lo, hi, key, n_particles, n_iter)
    return decode(best)


# --------------------------------------------------------------------------- e, f, g
@partial(jax.jit, static_argnames=("max_iter",))
def shape_iteration(p, x, v, F, dt, measured, gain=0.5, tol=1e-4, max_iter=30,
                    threshold=THRESHOLD, steps=None):
    """Step e: correct (alpha1, v0) and (sigma0, sigma1) from the shape factors.

    Each sweep simulates the force, computes its shape factors s and updates, in log
    coordinates, alpha1 <- alpha1 (a_m / a_s)^gain, v0 <- v0 (b_m / b_s)^gain,
    sigma0 <- sigma0 (c1_m / c1_s)^gain, sigma1 <- sigma1 (c2_m / c2_s)^gain (each
    shape factor grows with its parameter, d log s / d log p ~ 1); stops when the
    largest relative change is below ``tol`` or after ``max_iter`` sweeps.
    measured: shape factors (6,) of F; steps: sub-step table (default 8, p.v0 / 3).
    """
    steps = _steps(p, v, steps)
    idx = jnp.array([NAMES.index(n) for n in ("alpha1", "v0", "sigma0", "sigma1")])
    sel = jnp.array([0, 1, 3, 4])  # a, b, c1, c2

    def sweep(q):
        _, s = shape_factors(x, v, simulate(LuGre.from_vector(q), v, dt, steps=steps), threshold)
        ratio = jnp.clip(measured[sel] / s[sel], 0.5, 2.0)  # bounded steps far from the fit
        step = jnp.where(jnp.isfinite(ratio) & (ratio > 0), ratio, 1.0) ** gain
        return q.at[idx].multiply(step), jnp.max(jnp.abs(step - 1))

    def cond(state):
        _, change, it = state
        return (change > tol) & (it < max_iter)

    def body(state):
        q, _, it = state
        q, change = sweep(q)
        return q, change, it + 1

    q, _, _ = lax.while_loop(cond, body, (p.vector(), jnp.asarray(jnp.inf), 0))
    return LuGre.from_vector(q)


@partial(jax.jit, static_argnames=("n_iter",))
def fit_vd(p, v, F, dt, lo=BOUNDS["vd"][0], hi=BOUNDS["vd"][1], n_iter=30, steps=None):
    """Step f: vd by golden-section search of the mean squared force error over
    log vd in [lo, hi] (units/s), the other parameters held."""
    steps = _steps(p, v, steps)

    def with_vd(lvd):
        return eqx.tree_at(lambda q: q.vd, p, jnp.exp(lvd))

    return with_vd(golden_section(lambda lvd: _loss(with_vd(lvd), v, F, dt, steps), jnp.log(lo),
                                  jnp.log(hi), n_iter))


def _dense_jvp(fn):
    """``fn`` whose JVP is the full forward-mode Jacobian times the tangent.

    optimistix linearises the residual and pushes one tangent per parameter through
    the linearised scan; one ``jacfwd`` pass carries all eight tangents with the
    primal and is several times cheaper.
    """

    @jax.custom_jvp
    def f(y):
        return fn(y)

    @f.defjvp
    def f_jvp(primals, tangents):
        J, value = jax.jacfwd(lambda y: (lambda r: (r, r))(fn(y)), has_aux=True)(primals[0])
        return value, J @ tangents[0]

    return f


@partial(jax.jit, static_argnames=("rtol", "atol", "max_steps"))
def refine(p, v, F, dt, rtol=1e-6, atol=1e-6, max_steps=50, steps=None):
    """Step g: Levenberg-Marquardt on all eight parameters (optimistix).

    sigma0, sigma1, alpha0, v0, vd are optimised as logarithms (positive, and scaled
    alike); alpha1, alpha2, alpha3 directly. Residuals are the force errors divided by
    their RMS; the Jacobian is forward-mode autodiff through ``simulate``. rtol, atol:
    optimistix's Cauchy termination on the (log-)parameters and the residuals.
    """
    steps = _steps(p, v, steps)
    rms = jnp.sqrt(jnp.mean(F**2))

    def unpack(y):
        return LuGre.from_vector(jnp.where(_LOG, jnp.exp(y), y))

    residual = _dense_jvp(lambda y: (simulate(unpack(y), v, dt, steps=steps) - F) / rms)
    y0 = jnp.where(_LOG, jnp.log(jnp.abs(p.vector())), p.vector())
    sol = optx.least_squares(lambda y, _: residual(y), optx.LevenbergMarquardt(rtol, atol), y0,
                             max_steps=max_steps, throw=False)
    return unpack(sol.value)


# --------------------------------------------------------------------------- drivers
def _identify(x, v, F, dt, key, method, threshold, n_particles, n_iter):
    steady, measured = shape_factors(x, v, F, threshold)
    # Sub-steps concentrated around the data's Stribeck velocity; coarse for the swarm.
    fine, coarse = (integration_steps(v, m, measured[1] / 3) for m in (8, 2))
    vd0 = 5 * measured[1]  # vd held during the swarm: a few Stribeck velocities
    if method == "pso":
        p = search(v, F, dt, steady, key, coarse, vd0, n_particles, n_iter, search_vd=True)
    else:
        p = search(v, F, dt, steady, key, coarse, vd0, n_particles, n_iter)
        # The swarm supplies the dynamic parameters; the static ones are the LS values.
        p = eqx.tree_at(lambda q: (q.alpha0, q.alpha2, q.alpha3), p, tuple(steady))
        for _ in range(2):  # c2 depends weakly on vd: a second round removes that bias
            p = shape_iteration(p, x, v, F, dt, measured, threshold=threshold, steps=fine)
            p = fit_vd(p, v, F, dt, steps=fine)
        if method == "full":
            p = refine(p, v, F, dt, steps=fine)
    return Fit(p, _loss(p, v, F, dt, fine), measured)


_identify_jit = jax.jit(_identify, static_argnums=(5, 7, 8))
_identify_joints = jax.jit(jax.vmap(_identify, in_axes=(1, 1, 1, None, 0, None, None, None, None)),
                           static_argnums=(5, 7, 8))

_DEFAULT_SIZE = {"pso": (100, 200), "shape": (50, 50), "full": (50, 50)}


def _check(x, v, F, dt, method, threshold):
    if method not in _DEFAULT_SIZE:
        raise ValueError(f"method must be 'pso', 'shape' or 'full', got {method!r}")
    # stribeck_shape searches v_min = 1e-4 .. threshold: an empty bracket would give NaN everywhere.
    if not (np.isfinite(threshold) and threshold > 1e-4):
        raise ValueError(f"threshold must be a finite velocity > 1e-4 (units/s), got {threshold}")
    x, v, F = (check_signal(n, a, min_len=100) for n, a in (("x", x), ("v", v), ("F", F)))
    if not (x.shape == v.shape == F.shape):
        raise ValueError(f"x, v and F must have the same shape, got {x.shape}, {v.shape}, {F.shape}")
    if not dt > 0:
        raise ValueError(f"dt must be > 0, got {dt}")
    check_excitation(v, threshold)
    return x, v, F


def check_excitation(v, threshold=THRESHOLD):
    """ValueError unless every axis's velocity identifies LuGre: not constant, through zero
    (presliding: sigma0, sigma1; both branches of the Stribeck curve) and above the
    threshold somewhere (steady-state friction). Without these the fit ends at its bounds
    or in NaN without a word."""
    cols = v.reshape(v.shape[0], -1).T
    for j, vj in enumerate(cols):
        axis = f"axis {j}" if v.ndim == 2 else "the axis"
        lo, hi = float(vj.min()), float(vj.max())
        if hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1e-300):
            raise ValueError(f"{axis}: the velocity is constant ({lo:g} units/s); LuGre needs an experiment "
                             "that moves through zero velocity (an S-curve with creep dwells)")
        if not lo < 0 < hi:
            raise ValueError(f"{axis}: the velocity never crosses zero (from {lo:.3g} to {hi:.3g} units/s); the "
                             "presliding parameters sigma0, sigma1 need an experiment through zero velocity "
                             "(an S-curve with creep dwells)")
        if not max(-lo, hi) > threshold:
            raise ValueError(f"{axis}: threshold {threshold:g} is above every |v| (at most {max(-lo, hi):.3g} "
                             "units/s): no steady-state friction to fit; lower it below the sliding speeds")


def identify(x, v, F, dt, key=None, method="full", threshold=THRESHOLD, n_particles=None,
             n_iter=None):
    """Identify the eight LuGre parameters of one axis from a friction experiment.

    Args:
      x: position, shape (N,), m (rad). v: velocity, shape (N,), m/s (rad/s).
      F: friction force, shape (N,), N (N*m). dt: sample period, s.
      key: PRNG key of the particle swarm (default ``jax.random.key(0)``).
      method: "pso" (swarm over all eight parameters, 100 x 200 by default), "shape"
        (swarm 50 x 50, shape-factor iteration, golden section for vd) or "full"
        ("shape" then Levenberg-Marquardt).
      threshold: |v| above which the friction is taken as steady state, units/s.
      n_particles, n_iter: swarm size and generations (defaults by method).

    Returns:
      Fit with ``params`` (LuGre), ``loss`` (mean squared force error, N^2) and the
      measured shape factors.
    """
    x, v, F = _check(x, v, F, dt, method, threshold)
    if x.ndim != 1:
        raise ValueError(f"identify takes one axis, shape (N,), got {x.shape}; use identify_joints")
    key = jax.random.key(0) if key is None else key
    n_particles, n_iter = n_particles or _DEFAULT_SIZE[method][0], n_iter or _DEFAULT_SIZE[method][1]
    return _identify_jit(jnp.asarray(x), jnp.asarray(v), jnp.asarray(F), dt, key, method, threshold,
                         n_particles, n_iter)


def identify_joints(q, qd, F, dt, key=None, method="full", threshold=THRESHOLD, n_particles=None,
                    n_iter=None):
    """``identify`` for every joint of a robot in one vmapped call.

    q, qd, F: shape (N, n) (rad, rad/s, N*m); column j is joint j, with its own swarm
    key (``key`` split n ways). Also serves Monte-Carlo studies: columns may be repeated
    experiments of one axis. Returns Fit with every field batched (n,).
    """
    q, qd, F = _check(q, qd, F, dt, method, threshold)
    if q.ndim != 2:
        raise ValueError(f"q, qd, F must have shape (N, n), got {q.shape}")
    key = jax.random.key(0) if key is None else key
    keys = jax.random.split(key, q.shape[1])
    n_particles, n_iter = n_particles or _DEFAULT_SIZE[method][0], n_iter or _DEFAULT_SIZE[method][1]
    return _identify_joints(jnp.asarray(q), jnp.asarray(qd), jnp.asarray(F), dt, keys, method, threshold,
                            n_particles, n_iter)
