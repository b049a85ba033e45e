"""LuGre dynamic friction: parameters, steady state and integration over a sample grid.

Model (Canudas de Wit, Olsson, Astrom & Lischinsky, "A new model for control of
systems with friction", IEEE TAC 40(3), 1995), per axis with velocity v and bristle
deflection z::

    F     = sigma0 z + sigma1(v) dz/dt + f(v)
    dz/dt = v - sigma0 |v| z / g(v)
    g(v)  = alpha0 + alpha1 exp(-(v/v0)^2)          (Coulomb + Stribeck)
    sigma1(v) = sigma1 exp(-(v/vd)^2)               (damping fading with speed)
    f(v)  = alpha2 v + alpha3 sgn(v) v^2            (viscous + quadratic)

Units are those of a linear axis (N, m, m/s); for a rotary joint read N*m, rad, rad/s.
The bristle equation is stiff (sigma0 |v| / g reaches 1e5 1/s) but linear in z, so each
sample interval is an affine map z -> A z + b. Its sub-steps are fourth-order Magnus
steps whose exponential is closed form: unconditionally stable, exact wherever g(v) is
constant (all of sliding, and presliding), and smooth in the parameters (so forward- and
reverse-mode differentiable). Sub-steps are split at zero crossings of v and gathered
where |v| is below a few v0, where g changes.
"""

from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

NAMES = ("sigma0", "sigma1", "alpha0", "alpha1", "v0", "vd", "alpha2", "alpha3")
UNITS = ("N/m", "N*s/m", "N", "N", "m/s", "m/s", "N*s/m", "N*s^2/m^2")
JOINT_UNITS = ("N*m/rad", "N*m*s/rad", "N*m", "N*m", "rad/s", "rad/s", "N*m*s/rad", "N*m*s^2/rad^2")  # rotary joint


class LuGre(eqx.Module):
    """LuGre parameters; each field a scalar, or an array of shape (B,) for B axes/sets.

    sigma0: bristle stiffness, N/m. sigma1: bristle damping, N*s/m. alpha0: Coulomb
    level Fc, N. alpha1: Stribeck excess Fs - Fc, N. v0: Stribeck velocity, m/s.
    vd: velocity at which the bristle damping fades, m/s. alpha2: viscous coefficient,
    N*s/m. alpha3: quadratic (drag) coefficient, N*s^2/m^2.
    """

    sigma0: jax.Array = eqx.field(converter=jnp.asarray)
    sigma1: jax.Array = eqx.field(converter=jnp.asarray)
    alpha0: jax.Array = eqx.field(converter=jnp.asarray)
    alpha1: jax.Array = eqx.field(converter=jnp.asarray)
    v0: jax.Array = eqx.field(converter=jnp.asarray)
    vd: jax.Array = eqx.field(converter=jnp.asarray)
    alpha2: jax.Array = eqx.field(converter=jnp.asarray)
    alpha3: jax.Array = eqx.field(converter=jnp.asarray)

    def vector(self) -> jax.Array:
        """Parameters stacked in the order of ``NAMES``, shape (..., 8)."""
        return jnp.stack(jnp.broadcast_arrays(*(getattr(self, n) for n in NAMES)), axis=-1)

    @classmethod
    def from_vector(cls, p) -> LuGre:
        """Inverse of ``vector``: p of shape (..., 8) in the order of ``NAMES``."""
        p = jnp.asarray(p)
        return cls(*(p[..., i] for i in range(8)))


def reference_parameters(vd=0.01, alpha3=0.1) -> LuGre:
    """The parameter set of Canudas de Wit et al. (1995), Table I, with vd and alpha3.

    sigma0 = 1e5 N/m, sigma1 = sqrt(1e5) N*s/m, alpha0 = Fc = 1 N, alpha1 = Fs - Fc =
    0.5 N, v0 = 0.001 m/s, alpha2 = 0.4 N*s/m. The paper has neither the fading damping
    nor the quadratic term; we take vd = 0.01 m/s (10 v0) and alpha3 = 0.1 N*s^2/m^2.
    """
    return LuGre(*map(jnp.asarray, (1e5, np.sqrt(1e5), 1.0, 0.5, 1e-3, vd, 0.4, alpha3)))


def _concrete(*trees) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(trees))


def parameter_problems(p: LuGre, *, dissipative: bool = True) -> list[str]:
    """What makes ``p`` (one parameter set) not a physical LuGre model, one line each, by
    name: non-finite values; sigma0, v0, vd, alpha0 not > 0 (stiffness, Coulomb level and
    the characteristic velocities are positive); sigma1 < 0 (micro-damping); g(v) = alpha0 +
    alpha1 exp(-(v/v0)^2) not > 0; alpha2 < 0 or alpha3 < 0 (viscous or quadratic friction
    that feeds energy in instead of dissipating it; checked when ``dissipative``). Empty when
    physical."""
    values = {n: np.asarray(getattr(p, n), dtype=float) for n in NAMES}
    bad = [f"LuGre parameter {n} must be finite, got {v}" for n, v in values.items() if not np.all(np.isfinite(v))]
    if bad:
        return bad
    out = [
        f"LuGre parameter {n} must be > 0, got {values[n]}; stiffness, Coulomb level and the characteristic "
        "velocities are positive"
        for n in ("sigma0", "v0", "vd", "alpha0")
        if np.any(values[n] <= 0)
    ]
    if np.any(values["sigma1"] < 0):
        out.append(f"LuGre parameter sigma1 must be >= 0, got {values['sigma1']}")
    if np.any(values["alpha0"] + np.minimum(values["alpha1"], 0) <= 0):
        out.append("LuGre needs g(v) = alpha0 + alpha1 exp(-(v/v0)^2) > 0: alpha0 + alpha1 <= 0")
    for n, what in (("alpha2", "viscous"), ("alpha3", "quadratic")) if dissipative else ():
        if np.any(values[n] < 0):
            out.append(f"negative {what} friction {n} = {values[n]}: it would feed energy in, not dissipate it")
    return out


def check_parameters(p: LuGre) -> None:
    """Raise ValueError if ``p`` is not a valid LuGre parameter set (called at the edge): the
    first of [`parameter_problems`][jaxid.friction.lugre.parameter_problems] that breaks the model's definition (a negative
    viscous or quadratic coefficient can be simulated; the fits' warnings name it)."""
    problems = parameter_problems(p, dissipative=False)
    if problems:
        raise ValueError(problems[0])


def check_signal(name, x, min_len=2) -> np.ndarray:
    """Return ``x`` as a float array of shape (N,) or (N, n); raise ValueError if bad."""
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[0] < min_len:
        raise ValueError(f"{name} must have shape (N,) or (N, n) with N >= {min_len}, got {x.shape}")
    bad = np.argwhere(~np.isfinite(x))
    if bad.size:
        raise ValueError(f"{name} contains NaN or inf (first at sample {bad[0][0]}); remove or repair it")
    return x


def g(p: LuGre, v):
    """Stribeck function g(v) = alpha0 + alpha1 exp(-(v/v0)^2), N."""
    return p.alpha0 + p.alpha1 * jnp.exp(-((v / p.v0) ** 2))


def stribeck(p: LuGre, v):
    """Steady-state friction F_ss(v) = g(v) sgn(v) + alpha2 v + alpha3 sgn(v) v^2, N.

    This is the force of the ODE once dz/dt = 0 (z = sgn(v) g(v) / sigma0).
    """
    return (g(p, v) + p.alpha3 * v**2) * jnp.sign(v) + p.alpha2 * v


def _rate(p: LuGre, v, z):
    return v - p.sigma0 * jnp.abs(v) * z / g(p, v)


def force(p: LuGre, v, z):
    """Friction force for velocity v (m/s) and bristle deflection z (m), N."""
    damping = p.sigma1 * jnp.exp(-((v / p.vd) ** 2))
    return p.sigma0 * z + damping * _rate(p, v, z) + p.alpha2 * v + p.alpha3 * jnp.sign(v) * v**2


def _phi(x, em1):
    """(1 - exp(-x)) / x given em1 = expm1(-x), continued by 1 - x/2 near x = 0."""
    small = x < 1e-8
    return jnp.where(small, 1.0 - x / 2, -em1 / jnp.where(small, 1.0, x))


_GAUSS = (0.5 - np.sqrt(3) / 6, 0.5 + np.sqrt(3) / 6)


def _substeps(va, vb, substeps, scale, warp=0.75):
    """Sub-steps of sample intervals whose velocity goes linearly from va to vb.

    |v| has a kink where v changes sign, so an interval is split there, half the
    sub-steps on either side. Within a half, the sub-step ends are placed a fraction
    ``warp`` uniformly in asinh(v / scale) and the rest uniformly in time, which puts
    them where g(v) changes (|v| below a few v0) when the velocity sweeps through zero.
    They depend on the data only, so under vmap over parameters they are computed once.

    Returns (h, u1, u2), each shape (2 ceil(substeps / 2),) + va.shape: the sub-step
    lengths as a fraction of the sample interval and the velocities at their Gauss points.
    """
    n = -(-substeps // 2)
    f = (np.arange(n + 1) / n).reshape((-1,) + (1,) * va.ndim)
    cross = va * vb < 0
    c = jnp.where(cross, va / jnp.where(cross, va - vb, 1.0), 0.5)
    out = []
    for lo, width in ((0.0, c), (c, 1.0 - c)):
        ua, ub = va + lo * (vb - va), va + (lo + width) * (vb - va)
        wa, wb = jnp.arcsinh(ua / scale), jnp.arcsinh(ub / scale)
        dv = ub - ua
        ok = dv != 0
        warped = jnp.where(ok, (scale * jnp.sinh(wa + f * (wb - wa)) - ua) / jnp.where(ok, dv, 1.0), f)
        tau = (1 - warp) * f + warp * warped
        t0, dtau = tau[:-1], tau[1:] - tau[:-1]
        out.append((dtau * width, *(ua + (t0 + q * dtau) * dv for q in _GAUSS)))
    return tuple(jnp.concatenate(parts) for parts in zip(*out))


def _transition(p: LuGre, steps, dt):
    """Affine map z -> A z + b of sample intervals, composed from their sub-steps.

    Each sub-step is the fourth-order Magnus step for the linear equation
    z' = v(t) - k(t) z, k = sigma0 |v| / g(v), written as the 2x2 system for [z, 1]
    (Blanes, Casas, Oteo & Ros, "The Magnus expansion and some of its applications",
    Phys. Rep. 470, 2009, section 5); the exponential of that upper-triangular matrix
    is closed form. The step is exact when g is constant and stable for any k h.
    steps: (h, u1, u2) from ``_substeps``; returns A, b shaped like one of their rows.
    """

    def substep(ab, hu):
        h, u1, u2 = hu
        h = h * dt
        k1 = p.sigma0 * jnp.abs(u1) / g(p, u1)
        k2 = p.sigma0 * jnp.abs(u2) / g(p, u2)
        x = h * (k1 + k2) / 2
        em1 = jnp.expm1(-x)
        drive = (h * (u1 + u2) / 2 + np.sqrt(3) / 12 * h**2 * (k1 * u2 - k2 * u1)) * _phi(x, em1)
        return ((1.0 + em1) * ab[0], (1.0 + em1) * ab[1] + drive), None

    one = jnp.ones_like(steps[0][0] * p.sigma0)
    return lax.scan(substep, (one, 0.0 * one), steps)[0]


HOLDS = ("linear", "zero")


def integration_steps(v, substeps, scale, hold="linear"):
    """Sub-step table of a velocity record, for ``simulate(..., steps=...)``.

    It depends on the data only, so a caller simulating one record many times (an
    identification) builds it once. v: shape (N,), units/s; scale: velocity around
    which sub-steps are concentrated, units/s (v0 / 3 works well); hold: the velocity
    between samples, "linear" (first-order hold, the default) or "zero" (held at v[k] over
    [t_k, t_k+1), as a simulator that updates the bristle state once per sample with the
    exact exponential of the sampled velocity). Returns (h, u1, u2), each shape
    (2 ceil(substeps / 2), N - 1).
    """
    if hold not in HOLDS:
        raise ValueError(f"hold must be one of {HOLDS}, got {hold!r}")
    return _substeps(v[:-1], v[1:] if hold == "linear" else v[:-1], substeps, scale)


def _simulate(p: LuGre, v, dt, steps, z0, block=128):
    # The bristle equation is linear in z, so every sample interval is an affine map
    # z -> A z + b whose coefficients do not depend on z: they are computed for a block
    # of samples at once (vectorised transcendental work), then chained sequentially.
    nint = v.shape[0] - 1
    nb = -(-nint // block)
    # Zero-length sub-steps pad the record to whole blocks: they are the identity map.
    steps = tuple(jnp.pad(s, ((0, 0), (0, nb * block - nint))).reshape(-1, nb, block).swapaxes(0, 1) for s in steps)

    def affine(z, ab):
        z = ab[0] * z + ab[1]
        return z, z

    def chunk(z, st):
        return lax.scan(affine, z, _transition(p, st, dt))

    _, z = lax.scan(chunk, z0, steps)
    z = jnp.concatenate([z0[None], z.reshape(-1)[:nint]])
    return force(p, v, z), z


@partial(jax.jit, static_argnums=(3, 6))
def _simulate_auto(p, v, dt, substeps, scale, z0, hold="linear"):
    return _simulate(p, v, dt, integration_steps(v, substeps, scale, hold), z0)


_simulate_steps = jax.jit(_simulate)


def simulate(p: LuGre, v, dt, substeps=8, z0=None, scale=None, steps=None, return_state=False, hold="linear"):
    """Friction force along a sampled velocity record, by integrating the bristle ODE.

    The velocity is taken piecewise linear between samples (first-order hold); each
    sample interval is split into ``substeps`` sub-steps (fourth-order Magnus steps,
    exact where g(v) is constant), concentrated where |v| is below a few ``scale``.
    Pure and jit/vmap-able: vmap over parameter sets (``in_axes=(0, None, None)``) or
    over joints (``in_axes=(0, 1, None), out_axes=1``); differentiable in forward and
    reverse mode.

    Args:
      p: LuGre parameters, scalar fields.
      v: velocity samples, shape (N,), m/s.
      dt: sample period, s.
      substeps: sub-steps per sample interval (static; 8 keeps the error below 1e-5 N
        for the reference parameters on the identification trajectory).
      z0: initial bristle deflection, m; default 0 (relaxed bristles, for a record that
        starts at rest; one that starts sliding forgets z0 within a few g / sigma0 of travel).
      scale: velocity scale of the sub-step placement, m/s; default ``p.v0 / 3``.
      steps: a precomputed ``integration_steps(v, ...)`` (then substeps, scale, hold unused).
      hold: velocity between samples, "linear" (first-order hold) or "zero" (zero-order
        hold); see ``integration_steps``.

    Returns:
      F: friction force, shape (N,), N (and z, shape (N,), m, if ``return_state``).
    """
    if _concrete(p, v, dt, z0):
        check_parameters(p)
        v = check_signal("v", v)
        if v.ndim != 1:
            raise ValueError(f"v must have shape (N,) for one axis, got {v.shape}; vmap over joints")
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
    v = jnp.asarray(v)
    z0 = jnp.asarray(0.0 if z0 is None else z0, dtype=v.dtype)
    if steps is None:
        F, z = _simulate_auto(p, v, dt, int(substeps), p.v0 / 3 if scale is None else scale, z0, hold)
    else:
        F, z = _simulate_steps(p, v, dt, steps, z0)
    return (F, z) if return_state else F


def simulate_reference(p: LuGre, v, dt, rtol=1e-10, atol=1e-16, max_step=1e-4, z0=0.0):
    """Reference solution with scipy's Radau (implicit, order 5) for verification only.

    Same model and the same first-order hold of ``v`` as ``simulate``; shape (N,) -> (N,).
    """
    from scipy.integrate import solve_ivp

    check_parameters(p)
    v = check_signal("v", v)
    s0, a0, a1, v0 = (float(getattr(p, n)) for n in ("sigma0", "alpha0", "alpha1", "v0"))
    t = np.arange(len(v)) * dt

    def gn(u):
        return a0 + a1 * np.exp(-((u / v0) ** 2))

    def rhs(tt, z):
        u = np.interp(tt, t, v)
        return u - s0 * abs(u) * z / gn(u)

    def jac(tt, z):
        u = np.interp(tt, t, v)
        return [[-s0 * abs(u) / gn(u)]]

    sol = solve_ivp(
        rhs, (t[0], t[-1]), [z0], method="Radau", t_eval=t, rtol=rtol, atol=atol, max_step=max_step, jac=jac
    )
    z = sol.y[0]
    return np.asarray(force(p, jnp.asarray(v), jnp.asarray(z))), z


def joint_torque(params: LuGre, t, qd, substeps=8, z0=None):
    """LuGre friction torque of every joint of an arm along a sampled trajectory.

    Each joint's bristle state z is integrated along the whole record (``simulate``,
    vmapped over joints), so the torque at a sample depends on the motion before it:
    not a per-sample static term. Units of a rotary joint: rad/s, N*m, rad.

    Args:
      params: LuGre with fields of shape (n,) (one set per joint) or scalars (the same set
        for every joint).
      t: sample times, shape (N,), s, uniformly spaced.
      qd: joint velocities, shape (N, n), rad/s.
      substeps: sub-steps per sample interval (see ``simulate``).
      z0: initial bristle deflections, shape (n,), rad; default 0 (relaxed, at rest).

    Returns:
      tau_f: friction torque, shape (N, n), N*m (add it to the rigid-body torque; the
      article's F = tau - tau_dyn is this per joint).
    """
    qd = check_signal("qd", qd)
    t = check_signal("t", t)
    if qd.ndim != 2 or t.ndim != 1 or t.shape[0] != qd.shape[0]:
        raise ValueError(f"t must have shape (N,) and qd (N, n) with the same N, got {t.shape} and {qd.shape}")
    steps = np.diff(t)
    dt = float(np.median(steps))
    if not dt > 0 or np.any(np.abs(steps - dt) > 1e-6 * dt):
        raise ValueError("t must be uniformly spaced and increasing for the LuGre integration; resample it")
    n = qd.shape[1]
    vec = np.asarray(params.vector(), dtype=float)
    if vec.shape not in ((8,), (n, 8)):
        raise ValueError(
            f"LuGre parameters for {n} joints need fields of shape ({n},) or scalars, got shape {vec.shape[:-1]}"
        )
    p = LuGre.from_vector(np.broadcast_to(vec, (n, 8)))
    check_parameters(p)
    z0 = jnp.zeros(n) if z0 is None else jnp.broadcast_to(jnp.asarray(z0, dtype=float), (n,))
    sim = jax.vmap(lambda pj, vj, zj: simulate(pj, vj, dt, substeps, z0=zj), in_axes=(0, 1, 0), out_axes=1)
    return sim(p, jnp.asarray(qd), z0)
