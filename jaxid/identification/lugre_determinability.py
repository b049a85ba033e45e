"""Which LuGre parameters a friction record determines, and what experiment would determine the rest.

After a fit (``jaxid.identification.lugre.identify``) each of the eight parameters gets a
status from its Cramer-Rao (Gauss-Newton) relative standard deviation at the estimate:

  * "determined"         rel std <= ``rel_std`` (default ``REL_STD``, 5 %);
  * "poorly determined"  rel_std < rel std <= 1 (the value is shown with its std flagged);
  * "not determined"     rel std > 1 or infinite (the record does not tell the value from 0 or
                         from twice itself; the value is not shown as identified).

Where the information matrix (relative, log-parameter coordinates) is near-singular the
statement names the combination the record cannot see: the eigenvector of the smallest
eigenvalues whose std exceeds ``rel_std`` (e.g. "only sigma1^0.7 vd^-0.7 ... is seen").

The one-line reason and the experiment that would determine the parameter come from what the
record contains, measured on its velocity and the estimate (``record_features``):

  * presliding: the bristle deflection at rest, z_ss = (alpha0 + alpha1) / sigma0, and the
    samples within 3 z_ss of travel after each velocity reversal (sigma0, sigma1);
  * the velocity at which each bristle transient ends (|v| when the travel since the reversal
    reaches z_ss): the damping sigma1(v) = sigma1 exp(-(v/vd)^2) fades at vd, so vd is seen only
    if transients reach |v| ~ vd (a reversal through zero at acceleration a reaches
    sqrt(2 a z_ss); a jerk-limited start from rest at jerk j, 0.5 j^(1/3) (6 z_ss)^(2/3));
  * quasi-steady Stribeck samples: v0/3 < |v| < 3 v0 with more than 3 z_ss travelled (alpha1, v0);
  * the sliding speed range (alpha0 above the threshold; alpha2, alpha3 grow with v_max).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from jaxid.friction.lugre import NAMES, LuGre

REL_STD = 0.05
STATUSES = ("determined", "poorly determined", "not determined")


@dataclass(frozen=True)
class Determination:
    """One parameter: status (one of ``STATUSES``), value and std in its unit, rel_std, the reason
    in one line, and the experiment that would determine it ("" when determined)."""

    name: str
    status: str
    value: float
    std: float
    rel_std: float
    reason: str
    experiment: str

    def as_dict(self) -> dict:
        return asdict(self)


def record_features(p: LuGre, x, v, threshold) -> dict:
    """What the record (x, v of one axis, shape (N,)) contains, measured against the estimate p.

    z_ss: bristle deflection at rest, (alpha0 + alpha1) / sigma0; n_presliding: samples within
    3 z_ss of travel after a velocity reversal (or start from rest) while moving; n_transients:
    reversals followed by at least z_ss of travel; v_transient: the largest |v| at which a
    transient reaches z_ss of travel (its end; 0 if none); n_stribeck: samples with
    v0/3 < |v| < 3 v0 and more than 3 z_ss travelled since the reversal; n_sliding: samples with
    |v| > threshold; v_max: largest |v|."""
    x, v = np.asarray(x, float), np.asarray(v, float)
    a0, a1, s0, v0 = (float(getattr(p, n)) for n in ("alpha0", "alpha1", "sigma0", "v0"))
    z_ss = abs(a0 + max(a1, 0.0)) / s0 if s0 > 0 else np.inf
    s = np.sign(v)
    last = s.copy()  # last non-zero sign
    for i in range(1, len(s)):
        if last[i] == 0:
            last[i] = last[i - 1]
    rev = np.r_[True, last[1:] != last[:-1]]
    start = np.maximum.accumulate(np.where(rev, np.arange(len(v)), 0))
    xp = last * (x - x[start])
    moving = s != 0
    n_pre = int(np.sum(moving & (xp < 3 * z_ss)))
    ends = []
    for k in np.flatnonzero(rev):
        seg = np.flatnonzero((start == k) & (xp >= z_ss))
        if seg.size:
            ends.append(abs(v[seg[0]]))
    av = np.abs(v)
    return {
        "z_ss": z_ss,
        "n_presliding": n_pre,
        "n_transients": len(ends),
        "v_transient": float(max(ends)) if ends else 0.0,
        "n_stribeck": int(np.sum((av > v0 / 3) & (av < 3 * v0) & (xp > 3 * z_ss))),
        "n_sliding": int(np.sum(av > threshold)),
        "v_max": float(av.max()),
    }


def _reason(name, p: LuGre, f: dict, residual_std) -> tuple[str, str]:
    """(reason, experiment) for a parameter the record does not determine, from the features."""
    g = {n: float(getattr(p, n)) for n in NAMES}
    z, vt, vmax = f["z_ss"], f["v_transient"], f["v_max"]
    a_vd = g["vd"] ** 2 / (2 * z) if z > 0 else np.inf  # reversal acceleration reaching |v| = vd at z_ss
    if name == "sigma0":
        return (
            f"{f['n_presliding']} presliding samples (within {3 * z:.2g} of travel after a reversal, "
            f"z_ss = {z:.2g}) in {f['n_transients']} bristle transients",
            f"creep dwells or reversals of amplitude below {z:.2g} (z_ss), or starts from rest at a "
            "lower jerk, so that each transient spans tens of samples",
        )
    if name == "sigma1":
        damp = g["sigma1"] * vt * np.exp(-((vt / g["vd"]) ** 2)) if g["vd"] > 0 else 0.0
        return (
            f"the bristle transients end at |v| <= {vt:.2g} units/s, where the damping force "
            f"sigma1(v) v <= {damp:.2g} against a residual std of {residual_std:.2g}",
            f"velocity reversals without a stop at {0.25 * a_vd:.2g}-{a_vd:.2g} units/s^2, so that "
            f"the transients pass |v| ~ vd/2-vd ({g['vd'] / 2:.2g}-{g['vd']:.2g} units/s)",
        )
    if name == "vd":
        return (
            f"the bristle transients end at |v| <= {vt:.2g} units/s, "
            + (
                f"well below vd = {g['vd']:.2g} where the damping fades (sigma1(v) ~ sigma1 there)"
                if vt < 0.5 * g["vd"]
                else f"near vd = {g['vd']:.2g}, but in only {f['n_transients']} transients"
            ),
            f"velocity reversals without a stop at >= {a_vd:.2g} units/s^2 (transients reaching "
            f"|v| ~ vd = {g['vd']:.2g} units/s at z_ss = {z:.2g})",
        )
    if name in ("alpha1", "v0"):
        return (
            f"{f['n_stribeck']} quasi-steady samples in the Stribeck range v0/3-3 v0 "
            f"({g['v0'] / 3:.2g}-{3 * g['v0']:.2g} units/s, more than {3 * z:.2g} past a reversal)",
            f"a slow staircase of moves at cruise speeds {g['v0'] / 2:.2g}-{2 * g['v0']:.2g} units/s "
            f"(~v0), each held >= {max(10 * z / max(g['v0'], 1e-12), 0.1):.2g} s and entered without reversal",
        )
    if name == "alpha0":
        return (
            f"{f['n_sliding']} samples above the steady-state threshold",
            "longer cruise phases in both directions",
        )
    return (  # alpha2, alpha3: the velocity-dependent sliding terms
        f"sliding speeds only up to {vmax:.2g} units/s: "
        + (
            f"the quadratic term alpha3 v^2 <= {abs(g['alpha3']) * vmax**2:.2g}"
            if name == "alpha3"
            else f"the viscous term alpha2 v <= {abs(g['alpha2']) * vmax:.2g}"
        )
        + f" against a residual std of {residual_std:.2g}",
        f"cruise phases at several speeds up to >= {3 * vmax:.2g} units/s in both directions",
    )


def null_directions(J, p: LuGre, residual_std, rel_std=REL_STD):
    """Combinations of the log-parameters the record does not determine.

    J: d F_sim / d theta, shape (N, 8), at p. In relative coordinates (J diag(theta): a unit
    step is a 100 % change of each parameter) the information matrix's eigenvectors with
    std s / sqrt(lambda) > rel_std are the combinations sum_i u_i log(theta_i) that the record
    cannot fix to ``rel_std``. Returns [(std, u (8,))], largest std first."""
    Jr = np.asarray(J) * np.asarray(p.vector())[None, :]
    lam, V = np.linalg.eigh(Jr.T @ Jr)
    out = []
    for k in range(len(lam)):
        std = residual_std / np.sqrt(lam[k]) if lam[k] > lam[-1] * 1e-16 else np.inf
        if std > rel_std:
            out.append((float(std), V[:, k]))
    return sorted(out, key=lambda t: -t[0])


def _combination(u, tol=0.3) -> str:
    terms = [(n, c) for n, c in zip(NAMES, u) if abs(c) >= tol]
    sign = 1.0 if max(terms, key=lambda t: abs(t[1]))[1] > 0 else -1.0
    return " * ".join(f"{n}^{sign * c:+.2f}" for n, c in terms)


def determinability(p: LuGre, std, x, v, threshold, residual_std, J=None, rel_std=REL_STD):
    """Per-parameter determinability of one axis's fit (unbatched).

    p: the estimate; std: (8,) its Gauss-Newton standard deviations (``Fit.std``); x, v: the
    record's position and velocity (N,); threshold: the steady-state velocity threshold;
    residual_std: the force residual std (``Fit.residual_std``); J: optional (N, 8) Jacobian
    of the simulated force at p (for the null-space statement); rel_std: the limit of
    "determined". Returns a list of ``Determination`` in the order of ``NAMES``.
    """
    values = np.asarray(p.vector(), float)
    std = np.asarray(std, float)
    rel = np.where(values != 0, std / np.abs(np.where(values != 0, values, 1.0)), np.inf)
    f = record_features(p, x, v, threshold)
    nulls = null_directions(J, p, residual_std, rel_std) if J is not None else []
    out = []
    for i, n in enumerate(NAMES):
        r = float(rel[i]) if np.isfinite(rel[i]) else np.inf
        status = STATUSES[0] if r <= rel_std else STATUSES[1] if r <= 1.0 else STATUSES[2]
        if status == STATUSES[0]:
            out.append(Determination(n, status, float(values[i]), float(std[i]), r, "", ""))
            continue
        reason, experiment = _reason(n, p, f, float(residual_std))
        for s, u in nulls:  # a combination of several parameters: say which
            if abs(u[i]) >= 0.3 and np.sum(np.abs(u) >= 0.3) > 1:
                reason += (
                    f"; the record fixes only the combination {_combination(u)} to {100 * s:.3g} % "
                    "(near-singular information)"
                )
                break
        pct = "inf" if not np.isfinite(r) else f"{100 * r:.3g} %"
        out.append(
            Determination(n, status, float(values[i]), float(std[i]), r, f"{reason} (rel std {pct})", experiment)
        )
    return out


def summary_lines(dets, axis=None) -> list[str]:
    """One line per parameter that is not determined: "<axis>: sigma1: not determined: <reason>;
    to determine it: <experiment>"."""
    where = "" if axis is None else f"{axis}: "
    return [
        f"{where}{d.name}: {d.status}: {d.reason}; to determine it: {d.experiment}"
        for d in dets
        if d.status != STATUSES[0]
    ]


def force_jacobian(p: LuGre, v, dt, hold="linear"):
    """d F_sim / d theta, shape (N, 8), of ``simulate`` at p along velocity v (N,) (forward mode,
    the sub-step table ``identify`` uses)."""
    import jax

    from jaxid.friction.lugre import integration_steps, simulate

    steps = integration_steps(v, 8, p.v0 / 3, hold)
    return np.asarray(jax.jacfwd(lambda q: simulate(LuGre.from_vector(q), v, dt, steps=steps))(p.vector()))


def of_fit(fit, x, v, dt, threshold, rel_std=REL_STD, null_space=True, hold="linear"):
    """``determinability`` of an unbatched ``Fit`` of one axis on its record x, v (N,), sample period
    dt; with the null-space statement (one more Jacobian of the simulation) when ``null_space``."""
    import jax.numpy as jnp

    J = force_jacobian(fit.params, jnp.asarray(v), dt, hold) if null_space else None
    return determinability(fit.params, fit.std, x, v, threshold, float(fit.residual_std), J, rel_std)
