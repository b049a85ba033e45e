"""Writes notebooks/03_lugre_friction.ipynb (run from the repository root)."""
import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md("""# LuGre dynamic friction: simulation and identification

The LuGre model (Canudas de Wit, Olsson, Åström & Lischinsky, *IEEE TAC* 40(3), 1995) adds a bristle
state $z$ to the static friction curve:

$$F = \\sigma_0 z + \\sigma_1(v)\\,\\dot z + \\alpha_2 v + \\alpha_3\\,\\mathrm{sgn}(v) v^2,\\qquad
\\dot z = v - \\frac{\\sigma_0 |v|}{g(v)} z,\\qquad g(v) = \\alpha_0 + \\alpha_1 e^{-(v/v_0)^2},\\qquad
\\sigma_1(v) = \\sigma_1 e^{-(v/v_d)^2}.$$

This notebook simulates the reference parameter set of that paper on a jerk-limited S-curve friction
experiment, shows the two signatures of dynamic friction (the Stribeck peak of the friction–velocity
curve and the presliding hysteresis loop), identifies the eight parameters from noisy data with
`jaxid.identification.lugre.identify` (least squares, shape factors, particle swarm, shape-factor
iteration, golden section, Levenberg–Marquardt) and validates the result on a held-out S-curve against
a Coulomb + viscous model.

Set `JAXID_NOTEBOOK_SMALL=1` for a quick run (a smaller particle swarm; same data)."""),
    code("""import os
import warnings

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve
from jaxid.friction import lugre as L
from jaxid.identification import lugre as I
from jaxid.metrics import max_pe, wape

# Warnings as one line each, without the kernel's temporary file paths.
warnings.formatwarning = lambda message, category, *args, **kwargs: f"{category.__name__}: {message}\\n"

SMALL = os.environ.get("JAXID_NOTEBOOK_SMALL") == "1"
SWARM = (16, 10) if SMALL else (50, 50)  # particles x generations
DT, SIGMA_F = 1e-3, 2e-3  # 1 kHz; white force noise, N
truth = L.reference_parameters()
{name: float(value) for name, value in zip(L.NAMES, np.asarray(truth.vector()))}"""),
    md("""## The friction experiment

Creep dwells at ±1e-5 m/s (inside the presliding range, the bristle deflection at rest is
$g(0)/\\sigma_0 = 15\\,\\mu m$), staircases of quasi-steady plateaus through the Stribeck range
($v_0$ = 1 mm/s) in both directions, reversals through zero at 1–10 m/s² and sliding up to 1.5 m/s.
The measured force is the simulated one plus white noise of 2 mN."""),
    code("""t, x, v, a = (np.asarray(u) for u in friction_s_curve())
tv, xv, vv, av = (np.asarray(u) for u in friction_s_curve("validation"))
rng = np.random.default_rng(0)
F = np.asarray(L.simulate(truth, v, DT)) + SIGMA_F * rng.standard_normal(v.shape)
Fv = np.asarray(L.simulate(truth, vv, DT)) + SIGMA_F * rng.standard_normal(vv.shape)

fig, ax = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
ax[0].plot(t, v)
ax[0].set_ylabel("v (m/s)")
ax[1].semilogy(t, np.abs(v))
ax[1].set_ylabel("|v| (m/s)")
ax[1].set_xlabel("t (s)")
fig.suptitle(f"identification S-curve: {len(t)} samples, {np.sum(np.diff(np.sign(v)) != 0)} sign changes")
plt.show()"""),
    md("""## Friction–velocity curve and presliding hysteresis

Left: the steady-state (Stribeck) curve $F_{ss}(v) = g(v)\\,\\mathrm{sgn}(v) + \\alpha_2 v + \\alpha_3
\\mathrm{sgn}(v) v^2$ with the measured force on the plateaus; the peak $F_s = \\alpha_0 + \\alpha_1$ is
reached as $v \\to 0$. Right: the presliding hysteresis loop, force against displacement for a
slow sinusoidal motion of amplitude 10 µm (below the 15 µm bristle deflection at which sliding
starts), simulated; just after each reversal its slope is $\\sigma_0 (1 + \\sigma_0 |z| / g(0))$,
between $\\sigma_0$ and $2\\sigma_0$."""),
    code("""speeds = np.logspace(-5, np.log10(1.5), 400)
# Presliding: x = A sin(2 pi t / T), A = 10 um, T = 2 s, two periods at 1 kHz.
tl = np.arange(4001) * DT
xl, vl = 1e-5 * np.sin(np.pi * tl), 1e-5 * np.pi * np.cos(np.pi * tl)


def curves(params, label, style, axes):
    axes[0].semilogx(speeds, np.asarray(L.stribeck(params, jnp.asarray(speeds))), style, label=label)
    axes[1].plot(xl * 1e6, np.asarray(L.simulate(params, vl, DT, z0=0.0)), style, label=label)


fig, axes = plt.subplots(1, 2, figsize=(11, 4))
plateau = (v > 0) & (a == 0)
axes[0].semilogx(v[plateau], F[plateau], ".", ms=1, color="0.7", label="measured on the plateaus (v > 0)")
curves(truth, "LuGre, true parameters", "k-", axes)
axes[0].axhline(float(truth.alpha0 + truth.alpha1), ls=":", color="C3", label="$F_s$")
axes[0].set(xlabel="v (m/s)", ylabel="F (N)", title="friction-velocity (Stribeck) curve", ylim=(0.8, 1.8))
axes[1].set(xlabel="x (um)", ylabel="F (N)", title="presliding hysteresis (10 um sine)")
for ax in axes:
    ax.legend(fontsize=8)
plt.show()"""),
    md("""## Identification

`identify` runs the steps a–g of `jaxid.identification.lugre` on the noisy data. The static
Coulomb + viscous model $F = F_c\\,\\mathrm{sgn}(v) + f_v v$, fitted by least squares to the sliding
samples of the same data ($|v| >$ 3 deg/s), is the baseline."""),
    code("""fit = I.identify(x, v, F, DT, jax.random.key(0), method="full", n_particles=SWARM[0], n_iter=SWARM[1])
est = fit.params
cv = np.asarray(I.coulomb_viscous(jnp.asarray(v), jnp.asarray(F)))
print(f"{'param':8s} {'unit':10s} {'true':>12s} {'identified':>12s} {'error %':>9s}")
for n, u, a_, b_ in zip(L.NAMES, L.UNITS, np.asarray(truth.vector()), np.asarray(est.vector())):
    print(f"{n:8s} {u:10s} {a_:12.5g} {b_:12.5g} {100 * (b_ / a_ - 1):9.3f}")
print(f"RMS residual {np.sqrt(float(fit.loss)) * 1e3:.2f} mN (noise {SIGMA_F * 1e3:.1f} mN); "
      f"Coulomb + viscous: Fc = {cv[0]:.3f} N, fv = {cv[1]:.3f} N s/m")"""),
    code("""fig, axes = plt.subplots(1, 2, figsize=(11, 4))
axes[0].semilogx(speeds, cv[0] + cv[1] * speeds, "C1--", label="before: Coulomb + viscous")
axes[1].plot(xl * 1e6, cv[0] * np.sign(vl) + cv[1] * vl, "C1--", label="before: Coulomb + viscous")
curves(truth, "true", "k-", axes)
curves(est, "after: identified LuGre", "C0:", axes)
axes[0].set(xlabel="v (m/s)", ylabel="F (N)", title="friction-velocity curve", ylim=(0.8, 1.8))
axes[1].set(xlabel="x (um)", ylabel="F (N)", title="presliding hysteresis")
for ax in axes:
    ax.legend(fontsize=8)
plt.show()"""),
    md("""## Validation on a held-out S-curve

Weighted absolute percentage error $\\mathrm{WAPE} = 100\\,\\sum|\\hat F - F| / \\sum|F|$ and maximum
percentage error $\\max\\mathrm{PE} = 100\\,\\max|\\hat F - F| / \\mathrm{mean}|F|$ of the simulated force
on the validation experiment (other levels and dwell times, its own noise)."""),
    code("""pred = {"LuGre (identified)": np.asarray(L.simulate(est, vv, DT)),
        "Coulomb + viscous": cv[0] * np.sign(vv) + cv[1] * vv}
print(f"{'model':22s} {'WAPE %':>8s} {'max PE %':>9s}")
for name, p_ in pred.items():
    print(f"{name:22s} {float(wape(Fv, p_)):8.2f} {float(max_pe(Fv, p_)):9.2f}")

fig, ax = plt.subplots(figsize=(10, 3.5))
ax.plot(tv, Fv, color="0.7", lw=1, label="measured")
for (name, p_), style in zip(pred.items(), ("C0-", "C1--")):
    ax.plot(tv, p_, style, lw=1, label=name)
ax.set(xlabel="t (s)", ylabel="F (N)", title="validation S-curve")
ax.legend(fontsize=8)
plt.show()"""),
    md("""The LuGre model reproduces the validation force to the noise level; the static model misses
the presliding range (it jumps between $\\pm F_c$ at each reversal instead of following the bristle
spring) and the Stribeck peak, which is where its largest errors lie. The 100-trial study of the three
identification methods is `benchmarks/lugre.py`.

## What each parameter shapes (the article's diagnostic figures)

The Stribeck curve is set by $\\alpha_1$ (height of the peak) and $v_0$ (its width); the presliding
loop by $\\sigma_0$ (its slope) and $\\sigma_1$ (the damping that opens it at speed). The shape-factor
method reads these shapes off the measured force and corrects the four parameters until the simulated
shapes match."""),
    code("""import equinox as eqx

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for k, c in zip((0.5, 1.0, 2.0), ("C0", "k", "C3")):
    for field, style in (("alpha1", "-"), ("v0", ":")):
        p_ = eqx.tree_at(lambda q: getattr(q, field), truth, k * getattr(truth, field))
        axes[0].semilogx(speeds, np.asarray(L.stribeck(p_, jnp.asarray(speeds))), c + style, lw=1,
                         label=f"{field} x {k:g}")
    for field, style in (("sigma0", "-"), ("sigma1", ":")):
        p_ = eqx.tree_at(lambda q: getattr(q, field), truth, k * getattr(truth, field))
        axes[1].plot(xl * 1e6, np.asarray(L.simulate(p_, 30 * vl, DT / 30, z0=0.0)), c + style, lw=1,
                     label=f"{field} x {k:g}")
axes[0].set(xlabel="v (m/s)", ylabel="F (N)", title="Stribeck curve vs alpha1 (-), v0 (:)", ylim=(0.8, 2.2))
axes[1].set(xlabel="x (um)", ylabel="F (N)", title="hysteresis loop (30x faster sine) vs sigma0 (-), sigma1 (:)")
for ax in axes:
    ax.legend(fontsize=7, ncol=2)
plt.show()"""),
    md("""## The article's Table 3: A, B, C on this axis

A: LuGre identified by the shape-factor method (`method="shape"`); B: the static model with the
quadratic term $\\alpha_3$, LuGre's steady-state curve with A's parameters (no bristle state);
C: LuGre identified by the particle swarm alone (`method="pso"`). Held-out WAPE and max PE on the
validation S-curve. (`benchmarks/lugre_robot.py` prints the same table for the seven joints of a
simulated Panda.)"""),
    code("""# The fits' warnings (each stops short of the record's least-squares optimum, which method 'full' refines to)
# printed once each as notes, below the table.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fits = {"A": I.identify(x, v, F, DT, jax.random.key(0), method="shape", n_particles=SWARM[0], n_iter=SWARM[1]),
            "C": I.identify(x, v, F, DT, jax.random.key(0), method="pso", n_particles=2 * SWARM[0],
                            n_iter=4 * SWARM[1])}
table = {"A: LuGre + shape factors": np.asarray(L.simulate(fits["A"].params, vv, DT)),
         "B: static model with alpha3": np.asarray(L.stribeck(fits["A"].params, jnp.asarray(vv))),
         "C: LuGre + pure PSO": np.asarray(L.simulate(fits["C"].params, vv, DT))}
print(f"{'model':30s} {'WAPE %':>8s} {'max PE %':>9s}")
for name, p_ in table.items():
    print(f"{name:30s} {float(wape(Fv, p_)):8.2f} {float(max_pe(Fv, p_)):9.2f}")
for w in caught:
    print(f"note ({w.category.__name__}): {w.message}")"""),
    md("""## LuGre in a robot: rigid body and friction identified together

A planar 2-R arm whose joints have LuGre friction (the reference set on joint 1, another set on joint
2; rad, N m). Two runs at 1 kHz: the S-curve friction experiment on both joints, and a Fourier-type
excitation for the rigid body; torque noise 2 mN m. `jaxid.workflow.identify_lugre` fits the base
parameters by least squares on the steady-state equations, each joint's LuGre on the friction record
F = tau - tau_dyn of the S-curve run, then refines all of them together by Levenberg–Marquardt
(variable projection, autodiff through the bristle integration); `workflow.validate` integrates the
bristle states along a held-out run. The baseline is the same workflow with Coulomb + viscous joint
terms (`identify_experiment`)."""),
    code("""from jaxid import data, models, simulation, workflow

robot = models.planar(2)
joints = L.LuGre.from_vector(jnp.stack([truth.vector(), jnp.array([5e4, 200.0, 0.8, 0.4, 1.5e-3, 0.02, 0.3, 0.05])]))
sign = np.array([1.0, -1.0])
experiment = {"scurve": (t, 0.3 * sign + np.outer(x, sign), np.outer(v, sign), np.outer(a, sign))}
for name, f, amp in (("fourier", [0.7, 1.1], [0.8, 1.2]), ("held-out", [0.5, 1.3], [1.0, 0.9])):
    w = 2 * np.pi * np.asarray(f)
    experiment[name] = (t, np.asarray(amp) / w * np.sin(np.outer(t, w)), amp * np.cos(np.outer(t, w)),
                        -np.asarray(amp) * w * np.sin(np.outer(t, w)))
runs = {}
for k, (name, (tt, q, qd, qdd)) in enumerate(experiment.items()):
    m = simulation.measure(robot, tt, q, qd, qdd, jax.random.key(k), sigma_q=0.0, tau_sigma=2e-3, lugre=joints)
    runs[name] = data.from_arrays(tt, q, m.data.tau, qd, qdd, source=name)
train = workflow.prepare([runs["scurve"], runs["fourier"]], robot)
held = workflow.prepare([runs["held-out"]], robot)

params = workflow.identify_lugre(robot, train)
lug = params.lugre_fit
print(f"converged: {lug.converged} in {lug.steps} Levenberg-Marquardt steps; warnings: {lug.warnings}")
print(f"{'param':8s} {'unit':14s}" + "".join(f"{'joint ' + str(j + 1):>12s} {'error %':>8s} {'err/std':>8s}"
                                             for j in range(2)))
est, std = np.asarray(params.lugre.vector()), np.asarray(lug.std)
for i, (n, u) in enumerate(zip(L.NAMES, L.JOINT_UNITS)):
    print(f"{n:8s} {u:14s}" + "".join(
        f"{est[j, i]:12.5g} {100 * (est[j, i] / joints.vector()[j, i] - 1):8.3f} "
        f"{(est[j, i] - joints.vector()[j, i]) / std[j, i]:8.2f}" for j in range(2)))"""),
    code("""static = robot.with_joint_terms(("fv", "fc"))
baseline = workflow.identify_experiment(static, train)
print(f"{'model':22s} {'held-out RMS per joint (N m)':>30s}")
preds = {}
for name, (model, p_) in {"rigid body + LuGre": (robot, params), "Coulomb + viscous": (static, baseline)}.items():
    val = workflow.validate(model, p_, held)
    preds[name] = val.predicted[0]
    print(f"{name:22s} " + " ".join(f"{e:12.4g}" for e in val.runs[0]["rmse"]["per_joint"]))
print("noise std 0.002 N m")

fig, ax = plt.subplots(figsize=(10, 3.5))
tau = np.asarray(runs["held-out"].tau)
for (name, p_), style in zip(preds.items(), ("C0-", "C1--")):
    ax.plot(t, tau[:, 0] - p_[:, 0], style, lw=0.8, label=name)
ax.set(xlabel="t (s)", ylabel="error (N m)", title="held-out torque error of joint 1")
ax.legend(fontsize=8)
plt.show()"""),
]
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                               "language": "python"}})
nbf.write(nb, "notebooks/03_lugre_friction.ipynb")
