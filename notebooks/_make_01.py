"""Writes 01_six_dof_system.ipynb: python notebooks/_make_01.py [--execute]

--execute runs it (at the size JAXID_NOTEBOOK_SMALL selects, full size by default) with
nbclient and stores the outputs in the file.
"""
import pathlib
import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(r"""# The six-DOF nonlinear benchmark system

`jaxid.models.nonlinear_6dof()`: six coupled degrees of freedom with cubic damping and
stiffness and ring-coupling springs ($j = i + 1$, DOF 6 couples to DOF 1),

$$\tau_i = m_i \ddot q_i + c_i \dot q_i \dot q_j + d_i \dot q_i + b_i \dot q_i^3 + k_i q_i + k_{3,i} q_i^3
+ h_i (q_i - q_j) + h_{3,i} (q_i - q_j)^3 + g_i .$$

Nonlinear in the states but linear in its 54 parameters, so $\tau = Y(q, \dot q, \ddot q)\,\theta$
with $Y = \partial\tau/\partial\theta$ (`jaxid.regressor`, by `jax.jacfwd`).

The study (library calls only; `benchmarks/six_dof.py` runs the same study at full size and adds a
Levenberg-Marquardt check):

* excitation: per DOF a sum of 3 sines, frequencies ~ U(0.4, 1.6) Hz, amplitudes ~ U(0.15, 0.45) rad,
  random phases; T = 30 s, N = 3000; true torques from the model;
* measurements: $\sigma_q = 0.002$ rad, $\sigma_{\dot q} = 0.005$ rad/s, $\sigma_\tau = 0.02$ N m;
* the naive pipeline: Savitzky-Golay (window 31, order 3) on the measured velocity, its central
  difference for the acceleration, OLS;
* a noise sweep over $\sigma_{\dot q}$, ridge, Levenberg-Marquardt, cross-validation, and an estimator
  that removes the errors-in-variables problem: **output error**.

With `JAXID_NOTEBOOK_SMALL=1` everything runs at a reduced size (6 s, 600 samples, 2 noise draws,
3 noise levels) so that the notebook executes in well under a minute; the figures quoted in the
conclusion are from the full-size benchmark."""),
    new_code_cell(r'''%matplotlib inline
import os

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxid
from jaxid import metrics, signals
from jaxid.excitation import random_multisine
from jaxid.identification.estimators import identify
from jaxid.identification.instrumental import iv
from jaxid.identification.output_error import output_error
from jaxid.models import NONLINEAR_6DOF_TERMS
from jaxid.simulation import gaussian_noise

SMALL = os.environ.get("JAXID_NOTEBOOK_SMALL") == "1"
N, T, SEEDS, SEGMENT_S = (600, 6.0, 2, 1.0) if SMALL else (3000, 30.0, 3, 3.0)  # samples, s, draws, s
SWEEP = (0.005, 0.05, 0.1) if SMALL else (0.001, 0.005, 0.01, 0.02, 0.05, 0.1)  # sigma_qd, rad/s
SIGMA_Q, SIGMA_QD, SIGMA_TAU = 0.002, 0.005, 0.02  # rad, rad/s, N m
WINDOW, ORDER = 31, 3  # Savitzky-Golay on the measured velocity
model = jaxid.models.nonlinear_6dof()
theta, names = model.parameter_vector(), model.parameter_names()
TERMS = [k.rstrip("_") for k in NONLINEAR_6DOF_TERMS]  # the 9 term types of each DOF
dt = T / N
t = jnp.arange(N) * dt


def record(seed):
    """Noise-free q, qd, qdd (N, 6) of one random multi-sine, and the model's torque."""
    q, qd, qdd, _ = random_multisine(seed, model.n, t)
    return q, qd, qdd, jaxid.rnea(model, q, qd, qdd)


q, qd, qdd, tau = record(0)  # identification
qv, qdv, qddv, tauv = record(1)  # held out
print(f"{len(theta)} parameters; N = {N}, T = {T} s, dt = {dt} s")'''),
    new_markdown_cell("""## 1. Linear in the parameters: exact recovery from exact data

$Y\\theta$ must equal the model's torque, and with the analytic derivatives of the multi-sine
(no noise, no filter) OLS must return the 54 parameters to rounding."""),
    new_code_cell(r'''Y = jaxid.regressor(model, q, qd, qdd)
print("max |Y theta - torque| =", float(jnp.max(jnp.abs(Y @ theta - tau))), "N m")
fit0 = identify(*jaxid.stack(Y, tau), "ols", n_joints=6)
print(f"noiseless OLS: max relative error {float(jnp.max(jnp.abs(fit0.theta / theta - 1))):.1e}, "
      f"condition number of the column-scaled W {float(fit0.cond):.1f}")'''),
    new_markdown_cell("""## 2. What the naive pipeline feeds the regressor

Two things go wrong before least squares even starts:

* **distortion**: a cubic fitted over 31 samples (0.31 s) spans half a period of a 1.6 Hz component,
  so the smoothed velocity, and even more its derivative, lose about 1 % of their amplitude at the
  top of the band. The torque is not filtered, so the equation $\\tau = Y\\theta$ no longer holds
  exactly even without noise, and the fit bends the small parameters (stiffness, cubic terms) to
  absorb the mismatch;
* **noise**: the acceleration is a derivative of a noisy signal; its error enters the regressor
  (errors in variables) and, multiplied by the mass, acts as torque noise tens of times larger
  than $\\sigma_\\tau$."""),
    new_code_cell(r'''def measure(key, sigma_qd):
    """Measured q, qd, tau of the identification record: white noise on each."""
    return gaussian_noise(key, (q, qd, tau), (SIGMA_Q, sigma_qd, SIGMA_TAU))


rms = lambda x: float(jnp.sqrt(jnp.mean(x**2)))
for s in (0.0, SIGMA_QD, 0.05):
    _, qd_m, _ = measure(jax.random.key(0), s)
    qd_s, qdd_s = signals.velocity_derivatives(qd_m, dt, WINDOW, ORDER)
    print(f"sigma_qd = {s:5.3f}: rms error of smoothed qd {rms(qd_s - qd):.4f} rad/s "
          f"(signal {rms(qd):.2f}), of qdd {rms(qdd_s - qdd):.3f} rad/s^2 (signal {rms(qdd):.1f})")

_, qd_m, _ = measure(jax.random.key(0), 0.05)
qd_s, qdd_s = signals.velocity_derivatives(qd_m, dt, WINDOW, ORDER)
_, qdd_0 = signals.velocity_derivatives(qd, dt, WINDOW, ORDER)
k = slice(0, int(3 / dt))
fig, ax = plt.subplots(1, 2, figsize=(11, 3.4))
ax[0].plot(t[k], qd_s[k, 0], label="Savitzky-Golay (31, 3)")
ax[0].plot(t[k], qd[k, 0], "k--", lw=1, label="true")
ax[0].plot(t[k], qd_m[k, 0], ".", ms=2, color="0.4", zorder=3, label="measured, $\\sigma_{\\dot q}$ = 0.05")
ax[0].set(xlabel="t (s)", ylabel="$\\dot q_1$ (rad/s)", title="velocity, DOF 1")
ax[0].legend(fontsize=8)
ax[1].plot(t[k], qdd_s[k, 0] - qdd[k, 0], lw=0.8, label="noisy velocity")
ax[1].plot(t[k], qdd_0[k, 0] - qdd[k, 0], lw=1.5, label="noise-free velocity (distortion only)")
ax[1].set(xlabel="t (s)", ylabel="error of $\\ddot q_1$ (rad/s$^2$)", title="differentiated acceleration minus truth")
ax[1].legend(fontsize=8)
fig.tight_layout()'''),
    new_markdown_cell("""## 3. The study

Every noise level and draw: the same identification record measured with $\\sigma_q$ = 0.002 rad,
$\\sigma_\\tau$ = 0.02 N m and the level's $\\sigma_{\\dot q}$, fitted by the naive pipeline (OLS) and by output
error (`jaxid.identification.output_error`, section 5) started from the naive estimate. The output-error
fit is compiled once (`equinox.filter_jit`) and reused for every draw. Then the per-parameter table at
the baseline noise (OLS and output error side by side), ridge, and the R² on the held-out record's true
states and torque."""),
    new_code_cell(r'''def naive(q_m, qd_m, tau_m):
    """The naive pipeline: the smoothed measured velocity and its central difference in the
    regressor, then OLS; returns the fit and the stacked W, b."""
    W, b = jaxid.stack(jaxid.regressor(model, q_m, *signals.velocity_derivatives(qd_m, dt, WINDOW, ORDER)), tau_m)
    return identify(W, b, "ols", n_joints=model.n, names=names), W, b


keys = jax.random.split(jax.random.key(0), SEEDS)
segments = round(T / SEGMENT_S)
fits = {}  # (sigma_qd, draw) -> (naive OLS fit, output-error fit)
for s in SWEEP:
    for i, key in enumerate(keys):
        meas = measure(key, s)
        ols = naive(*meas)[0]
        # Output error starts from the naive estimate; noise levels estimated from the data.
        fits[s, i] = ols, output_error(model, t, *meas, ols.theta, segments=segments)
err = {name: np.array([[metrics.relative_error(fits[s, i][e].theta, theta) for i in range(SEEDS)] for s in SWEEP])
       for e, name in enumerate(("naive OLS", "output error"))}  # (levels, draws, 54), %
converged = sum(bool(oe.converged) for _, oe in fits.values())
print(f"{len(fits)} noise draws, each fitted both ways; output error converged in {converged} of them")'''),
    new_code_cell(r'''ols, oe = fits[SIGMA_QD, 0]
_, W, b = naive(*measure(keys[0], SIGMA_QD))
ridge = identify(W, b, method="ridge", n_joints=model.n)
Yv = jaxid.regressor(model, qv, qdv, qddv)  # the held-out record's true states


def heldout_r2(th):
    return float(metrics.r2(tauv, Yv @ th, axis=None))


# Calibration of the reported standard deviations: RMS of (estimate - truth) / std, 1 when right.
z_rms = lambda f: float(jnp.sqrt(jnp.mean(((f.theta - theta) / f.std) ** 2)))
e_ols, e_oe = metrics.relative_error(ols.theta, theta), metrics.relative_error(oe.theta, theta)
print(f"baseline sigma_qd = {SIGMA_QD}, first draw")
print(f"{'param':>6} {'true':>7} | {'OLS':>8} {'err%':>7} {'std%':>6} | {'OE':>8} {'err%':>7} {'std%':>6}")
for name, *row in zip(names, *(np.asarray(x) for x in (theta, ols.theta, e_ols, ols.rel_std, oe.theta, e_oe,
                                                        oe.rel_std))):
    print("{:>6} {:7.3f} | {:8.4f} {:7.2f} {:6.2f} | {:8.4f} {:7.2f} {:6.2f}".format(name, *row))
for label, f in (("OLS", ols), ("ridge", ridge), ("output error", oe)):
    print(f"{label:<13}: mean rel. error {float(metrics.relative_error(f.theta, theta).mean()):.3f} %, held-out R2 "
          f"(true states) {heldout_r2(f.theta):.7f}" + (f", (err / std) rms {z_rms(f):.1f}" if label != "ridge" else
                                                         f", GCV lambda {float(ridge.lam):.1e}"))
print(f"condition number of the column-scaled W {float(ols.cond):.1f}; output error took {int(oe.num_steps)} LM steps")'''),
    new_code_cell(r'''# True against identified, parameter by parameter: the estimate's error in % of the true value,
# with its reported +-2 std (a bar that does not reach 0 is an error the fit did not admit to).
fig, ax = plt.subplots(figsize=(11, 3.6))
k = np.arange(len(theta))
for shift, label, f, e, colour in ((-0.18, "naive OLS", ols, e_ols, "C3"), (0.18, "output error", oe, e_oe, "C0")):
    signed = 100 * (np.asarray(f.theta) - np.asarray(theta)) / np.abs(np.asarray(theta))
    ax.errorbar(k + shift, signed, yerr=200 * np.asarray(f.std) / np.abs(np.asarray(theta)), fmt="o", ms=3, lw=0.8, color=colour, label=label)
ax.axhline(0.0, color="k", lw=0.8)
ax.set_xticks(k[::9] + 4, [f"DOF {i + 1}" for i in range(model.n)])
for x in k[::9][1:] - 0.5:
    ax.axvline(x, color="0.85", lw=0.8)
ax.set_ylabel("identified - true, % of true")
ax.set_title(f"sigma_qd = {SIGMA_QD} rad/s, first draw: each DOF's {', '.join(TERMS)}; bars +-2 reported std")
ax.legend(loc="upper right")
plt.show()'''),
    new_markdown_cell("""**Reading the baseline** (the figures quoted are the full-size ones).

* The OLS standard deviations (`std%`) are far below the actual errors for the stiffness and cubic
  terms: the covariance $\\sigma^2 (W^TW)^{-1}$ describes torque noise, not a regressor built from
  distorted and noisy signals. The errors are mostly bias.
* Ridge ≈ OLS: the column-scaled regressor has a condition number of a few tens, so generalised
  cross-validation picks a negligible $\\lambda$. There is nothing ill-posed to regularise; the data
  are wrong, not insufficient.
* Levenberg-Marquardt on the torque residual from 0.8 × truth (the benchmark's check) lands on the OLS
  solution (to 1e-12):
  the residual is linear in $\\theta$, so its only minimum is the least-squares one. A nonlinear
  solver cannot fix what the regressor got wrong.
* Held-out R² on the second trajectory, processed the same naive way, looks excellent (0.9997 or
  more) for both estimators and even favours OLS, which was fitted to the same distortion. Against
  the second trajectory's true states and torque the difference is clear (OLS 0.9998, output error
  0.9999999): a torque R² is a weak judge of parameters.
* `(err / std) rms` is the RMS of (estimate - truth) / reported std, 1 for calibrated standard
  deviations: far above 1 for OLS (23 at full size: bias), about 2 for output error (section 5)."""),
    new_code_cell(r'''mean = {k: v.mean(2) for k, v in err.items()}  # (levels, draws): mean over the parameters
fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
for (name, m), marker in zip(mean.items(), "os"):
    ax[0].errorbar(SWEEP, m.mean(1), yerr=m.std(1), marker=marker, capsize=3, label=name)
ax[0].set(xscale="log", yscale="log", xlabel="$\\sigma_{\\dot q}$ (rad/s)", ylabel="mean relative error (%)",
          title="parameter error vs velocity noise")
ax[0].legend()
per_term = err["naive OLS"].mean(1).reshape(len(SWEEP), model.n, len(TERMS)).mean(1)  # (levels, 9)
for j, name in enumerate(TERMS):
    ax[1].plot(SWEEP, per_term[:, j], marker=".", label=name)
ax[1].set(xscale="log", yscale="log", xlabel="$\\sigma_{\\dot q}$ (rad/s)", ylabel="mean relative error (%)",
          title="naive OLS, per term type")
ax[1].legend(ncol=3, fontsize=8)
fig.tight_layout()
growth = dict(zip(TERMS, per_term[-1] / per_term[0]))
print("naive OLS, growth of the error from the lowest to the highest noise level:",
      ", ".join(f"{k} x{v:.1f}" for k, v in sorted(growth.items(), key=lambda kv: -kv[1])))'''),
    new_markdown_cell("""**Which parameters degrade first** (full size; the reduced run is noisier). The inertia,
velocity-product, damping and cubic-damping terms (m, c, d, b) stay within about 2 % at every noise
level: their columns are large and the velocity noise, once smoothed, is small against them. The
stiffness-type terms are the weak ones, the cubic ones most of all: the cubic stiffness k3 carries
the largest error at every level (14 % to 50 %), the cubic coupling h3 and the stiffness k come
next, and the couplings h, h3 and the cubic stiffness k3 grow fastest with the noise (× 3.6 to
× 5.9 from 0.001 to 0.1 rad/s). Their torque contributions are small (k3 $q^3$ with $|q| < 1$ rad is
a few % of the torque) and their columns are nearly collinear with $\\ddot q$ for sinusoids
($\\ddot q \\approx -\\omega^2 q$), so the error of the differentiated acceleration leaks into them.
The cubic *damping* b, the term one might expect to suffer most from velocity noise, does not
move: $\\dot q^3$ is large, and the bias $E[(\\dot q + e)^3] - \\dot q^3 = 3\\dot q\\,\\sigma^2$ of the
smoothed velocity is tiny."""),
    new_markdown_cell("""## 4. Why the naive pipeline fails, and why instrumental variables or TLS would not help here

With noisy states inside the regressor, $W = Y(\\hat x)$, least squares is biased whenever the
errors of $W$ are correlated with $W$ (errors in variables). The classical remedies act on that
correlation: instrumental variables replace $W^T$ in the normal equations by instruments $Z^T$
correlated with the true regressor but not with the errors (Gautier's IDIM-IV builds $Z$ from a
simulation of the model); total least squares assumes i.i.d. errors in every column.

The diagnosis below measures what each part costs at $\\sigma_{\\dot q}$ = 0.05:

* the pipeline on **noise-free** measurements already has a large error: that part is the
  Savitzky-Golay distortion, a deterministic function of the true signal;
* the error of the **mean** estimate over the noise draws is most of the total: a bias;
* **IV with perfect instruments** (the true noise-free regressor, an upper bound for any IV
  scheme) barely helps: the distortion is correlated with the true signal, so no instrument
  built from it can remove it, and IV does nothing for the spread;
* **TLS** barely changes it: the errors are neither i.i.d. nor in every column.

The bias is not an attenuation that a smarter solve can undo; it is in the processed data."""),
    new_code_cell(r'''s = 0.05
level = SWEEP.index(s)
Z = jaxid.stack(Y)  # the true, noise-free regressor: the best instruments there can be
rows = {"naive OLS": err["naive OLS"][level].mean(),
        "  same pipeline on noise-free measurements (filter distortion)":
            float(metrics.relative_error(naive(q, qd, tau)[0].theta, theta).mean()),
        f"  error of the mean estimate over the {SEEDS} draws (bias)":
            float(metrics.relative_error(np.mean([fits[s, i][0].theta for i in range(SEEDS)], 0), theta).mean())}
ivs, tls = [], []
for key in keys:
    _, W, b = naive(*measure(key, s))
    ivs.append(metrics.relative_error(iv(W, b, Z, n_joints=model.n).theta, theta))
    tls.append(metrics.relative_error(identify(W, b, method="tls", n_joints=model.n).theta, theta))
rows["IV, the true regressor as instruments (the best any IV can do)"] = np.mean(ivs)
rows["total least squares"] = np.mean(tls)
rows["output error (same data)"] = err["output error"][level].mean()
print(f"sigma_qd = {s}: mean relative parameter error over the {SEEDS} draws, %")
for label, v in rows.items():
    print(f"{label:<66} {float(v):7.3f}")'''),
    new_markdown_cell("""## 5. Output error: keep the noise at the output

`jaxid.identification.output_error` never differentiates and never filters. It simulates the model
with the candidate parameters under the measured torque, and fits the simulated positions and
velocities to the measured ones,

$$\\min_{\\theta,\\,x_{0,s}} \\sum_k \\Big\\|\\frac{q^{sim}_k(\\theta) - q_k}{\\sigma_q}\\Big\\|^2
+ \\Big\\|\\frac{\\dot q^{sim}_k(\\theta) - \\dot q_k}{\\sigma_{\\dot q}}\\Big\\|^2 ,$$

by Levenberg-Marquardt (optimistix), over the parameters and the initial state of each segment
(multiple shooting: the record is cut into pieces simulated in parallel, so that an open-loop
simulation never drifts far). Why it works:

* the measurement noise of $q$ and $\\dot q$ is an **output** error: it is compared with, never fed
  into, the model, so it cannot bias the estimate; with white noise and the weights $1/\\sigma$
  the criterion is the maximum-likelihood one. The noise levels are estimated from the data
  (fourth differences), not given;
* the acceleration comes from the model and the measured torque, which is precise
  ($\\sigma_\\tau$ = 0.02 N m): the torque sensor, not the differentiated velocity, carries the
  acceleration information, and there is no filter to distort anything;
* the positions ($\\sigma_q$ = 0.002 rad) carry the information that the noisy velocities lose, so
  the error grows only from 0.4 % to 0.9 % while $\\sigma_{\\dot q}$ grows a hundredfold.

Its costs and limits: each LM step simulates the model and its forward-mode sensitivities
(per segment only the parameters and the segment's own initial state: 66 tangents, not 174
for 10 segments);
it needs a starting point whose simulation is stable (the naive OLS estimate; on a short,
poorly exciting record use shorter segments); the torque noise enters as process noise, which the
output-error covariance ignores, so its standard deviations are somewhat optimistic (the
`(err / std) rms` of the baseline)."""),
    new_code_cell(r'''m_naive, m_oe = (mean[k].mean(1) for k in ("naive OLS", "output error"))
print(f"{'sigma_qd':>8}  {'naive OLS %':>11}  {'output error %':>14}  ratio")
for s, a, b in zip(SWEEP, m_naive, m_oe):
    print(f"{s:8.3f}  {a:11.3f}  {b:14.3f}  {a / b:5.1f}")
level = SWEEP.index(0.05)
print(f"at sigma_qd = 0.05: {m_naive[level]:.2f} % -> {m_oe[level]:.2f} %, a {m_naive[level] / m_oe[level]:.1f}x cut; "
      f"output error converged in {converged} of {len(fits)} fits")'''),
    new_markdown_cell("""## Conclusion (full size: `python benchmarks/six_dof.py`, N = 3000, T = 30 s, 3 noise draws)

Mean relative parameter error (%) over the 54 parameters, mean of 3 noise draws per level,
same data for both estimators:

| $\\sigma_{\\dot q}$ (rad/s) | 0.001 | 0.005 | 0.01 | 0.02 | 0.05 | 0.1 |
|---|---|---|---|---|---|---|
| naive (Savitzky-Golay 31/3, central difference, OLS) | 4.78 | 4.85 | 5.01 | 5.46 | 8.30 | 15.66 |
| output error | 0.38 | 0.55 | 0.71 | 0.83 | 0.88 | 0.89 |
| ratio | 12.7 | 8.8 | 7.1 | 6.6 | 9.4 | 17.5 |

* Baseline ($\\sigma_{\\dot q}$ = 0.005, first draw): naive OLS 4.74 %, training R² 0.99996, held-out R²
  0.99995 on the naively processed second trajectory and 0.99982 on its true states; its standard
  deviations are 23 × too small (RMS of error / std). Ridge is identical (GCV $\\lambda$ = 4e-8,
  condition number 28); Levenberg-Marquardt from 0.8 × truth returns the OLS solution (14 steps,
  8e-12 relative). Output error: 0.52 %, held-out R² 0.9999999 on the true states, its
  standard deviations 2.2 × optimistic (torque noise is process noise it does not model).
* At $\\sigma_{\\dot q}$ = 0.05 the naive error of 8.30 % splits into 4.67 % of filter distortion (noise-free
  measurements) and noise; 6.51 % of it is bias (error of the mean over the draws). Ideal
  instrumental variables reach 8.23 %, TLS 8.06 %; output error 0.88 %, a **9.4 ×** cut.
* Degradation of the naive estimate from $\\sigma_{\\dot q}$ = 0.001 to 0.1: h × 5.9, h3 × 5.2,
  k3 × 3.6, g × 2.8, k × 2.2, d × 2.1, c × 1.5, m × 1.4, b × 1.0; the cubic stiffness terms k3
  and h3 have the largest errors (50 % and 39 % at 0.1).
* Cost: the 18 output-error fits take about 80 s on two CPU cores (lax.map, one after the
  other), the 18 naive fits 2 s."""),
]

nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
})
path = pathlib.Path(__file__).with_name("01_six_dof_system.ipynb")
if "--execute" in sys.argv:
    import nbclient

    nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
nbformat.write(nb, path)
print("wrote", path)
