"""LuGre friction: simulation speed and accuracy, and the 100-trial identification study.

Simulation: the reference parameter set (Canudas de Wit et al. 1995; vd = 0.01 m/s,
alpha3 = 0.1 N*s^2/m^2), 1 kHz, 8 sub-steps per sample.
  accuracy_N: max |F - F_Radau| on the identification S-curve (scipy Radau,
    rtol 1e-10, atol 1e-16, max step 1e-4 s, same first-order hold of v);
  sim_10s_s: one 10 s trajectory (10,001 samples), best of repeated runs;
  sim_1000_s: 1,000 parameter sets at once (vmap; each parameter x U(0.8, 1.2); the
    sub-step placement of the reference v0 for all).
Identification: ``trials`` noisy data sets of the identification S-curve (3.75 s);
  noise: white Gaussian on the force, sigma_F = 2e-3 N (0.2 % of Fc), none on x, v;
  trial i uses numpy seed i for the noise and the i-th key of jax.random.split(key(0))
  for the swarm (the trials are the columns of one ``identify_joints`` call).
  Methods: pso (100 particles x 200 generations over all eight parameters; alpha0,
  alpha2, alpha3 within +-1 % of their least-squares values, as in the other methods),
  shape-log (swarm 50 x 50, jaxid's shape-factor iteration: all four at once, multiplicative,
  alternated twice with the golden section for vd, then sigma1 and vd together by
  Levenberg-Marquardt with the other six held, ``fit_damping``; what ``shape`` runs),
  shape-article (swarm 50 x 50, the article's law: [alpha1, v0] += w (a_r - a_s), then
  [sigma0, sigma1] += w (dsigma0, dsigma1) from the LS of dF on [1 x v vx], then vd once),
  full (the shape-log iteration, then Levenberg-Marquardt on all eight). Success: all eight within 1 % of the truth.
  iterations: shape-factor sweeps per trial (median, max); converged: share of trials
  whose iteration met its tolerance.
  Uncertainty (every method): std_reported_pct, the median over trials of the reported
  relative std (Gauss-Newton covariance at each estimate); spread_pct, the RMS error over
  the trials, % of the truth; within_3std, the share of trials whose error is within 3
  reported std, per parameter (Monte-Carlo check of the reported std).
  batch_s (batch_cpu_s): wall (CPU) time of the trials as one vmapped batch, compiled
  beforehand; per_id_s = batch_s / trials; median_single_s: median over ``--single``
  separate ``identify`` calls.
  crb_pct: Cramer-Rao standard deviation of each parameter for this noise, % of value
    (Gauss-Newton covariance at the truth, sigma_F known). crb_ratio_*: |error| / that std
    per parameter over the trials (median, 95th percentile, max; ~0.67, ~1.96 and ~3 for an
    efficient estimator); within_3crb: share of trials within 3 of it, per parameter;
    all_within_3crb: share of trials with all eight within 3 (~0.98 for an efficient one).
Measured (100 trials, 2 cores, load ~10 from other work; batch s / trial):
  shape-log     99 %  (85 % before fit_damping: 14 sigma1 failures), 23 sweeps, 0.92 s;
                |error| / CRB: sigma1 median 0.60 (9.7 before), vd 0.74 (6.2); all eight
                within 3 CRB std in 73 % of trials (sigma0, alpha0, alpha2, alpha3 are the
                shape-factor and static LS estimates, up to 5.5 CRB std off)
  pso           61 %  (run alone, 100 x 200 swarm), 4.99 s; all eight within 3 CRB std in 40 %
  shape-article  4 %  (sigma1 96 and vd 85 failures, 44 and 27 CRB std median), 10 sweeps, 0.84 s
  full         100 %, 23 sweeps, 1.19 s; |error| / CRB median 0.64-0.84, 95th percentile
                1.78-2.08, max 2.96 over the eight; all eight within 3 CRB std in 100 %
--determined: the experiment x method table instead (plain S-curves ``jog-reversal`` and
  ``rest-to-rest`` of ``plain_s_curve``, the designed ``friction_s_curve``; data with 16
  sub-steps): a parameter is determined by the experiment when its Cramer-Rao std at the truth
  is <= 1/3 % (3 std inside the 1 % tolerance); success: every determined parameter within 1 %;
  all 8; report agrees: share of trials whose reported std names exactly that set; median
  sweeps; median |error| per parameter. --article-noiseless adds shape-article on noiseless data.
  Measured (100 trials, 2 cores, load 8-12; full table in docs/friction.md):
  jog-reversal  full 100 % (8 determined), shape 78 %, shape-article 0 % (diverges; 0 % noiseless)
  rest-to-rest  only alpha0 determined to 1 %; full at the CRB (median |error| / CRB 0.6-0.7)
  designed      full 100 %, shape 99 %, shape-article 86 % (100 % noiseless, 17 sweeps),
                shape-article-once 4 % (10 sweeps)
Usage: python benchmarks/lugre.py [--trials 100] [--methods pso shape-log shape-article full] [--single 3]
  (--trials 10 --single 0 --no-reference for a quick run; 100 trials of the three shape
  methods: about 200 s of CPU time plus 5 min of compilation on 2 cores)

Its row in benchmarks/README.md lists its last figures; cited by docs/friction.md,
``jaxid/identification/lugre.py`` and notebook 03.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from timing import best_of  # benchmarks/timing.py (the script's folder is on sys.path)

import jaxid  # noqa: F401  (float64)
from jaxid.excitation.scurve import friction_s_curve, plain_s_curve
from jaxid.friction import lugre as L
from jaxid.identification import lugre as I

SIGMA_F = 2e-3
DT = 1e-3


def simulation_figures(p, v_id, reference=True):
    out = {}
    if reference:
        F_ref, _ = L.simulate_reference(p, np.asarray(v_id), DT)
        out["accuracy_N"] = float(np.max(np.abs(np.asarray(L.simulate(p, v_id, DT)) - F_ref)))
    # A 10 s trajectory: the identification profile's levels, held longer.
    v10 = friction_s_curve(stretch=3.3)[2][:10001]
    sim = jax.jit(lambda q, u: L.simulate(q, u, DT))
    sim(p, v10).block_until_ready()
    out["sim_10s_s"] = best_of(lambda: sim(p, v10))
    scales = np.random.default_rng(0).uniform(0.8, 1.2, (1000, 8))
    batch = L.LuGre.from_vector(jnp.asarray(scales) * p.vector())
    # Sub-steps placed around the reference v0 for all sets: built once, not per set.
    simb = jax.jit(jax.vmap(lambda q: L.simulate(q, v10, DT, scale=p.v0 / 3)))
    simb(batch).block_until_ready()
    out["sim_1000_s"] = best_of(lambda: simb(batch), repeat=2)
    out["samples"] = int(v10.shape[0])
    return out


def crb(p, v):
    J = jax.jacfwd(lambda q: L.simulate(L.LuGre.from_vector(jnp.exp(q)), v, DT))(jnp.log(p.vector()))
    J = np.asarray(J)
    return dict(zip(L.NAMES, np.sqrt(np.diag(np.linalg.inv(J.T @ J))) * SIGMA_F * 100))


def study(method, x, v, F, truth, single, crb_std):
    """F: (N, trials). Trials are the columns of one ``identify_joints`` call. crb_std: (8,)
    Cramer-Rao std of each parameter at the truth, in its unit."""
    trials = F.shape[1]
    X, V, F = (jnp.asarray(a) for a in (np.tile(x[:, None], trials), np.tile(v[:, None], trials), F))
    keys = jax.random.split(jax.random.key(0), trials)  # what identify_joints(key=key(0)) uses
    n_particles, n_iter = I._DEFAULT_SIZE[method]
    t0 = time.perf_counter()
    compiled = I._identify_joints.lower(X, V, F, DT, keys, method, I.THRESHOLD, n_particles, n_iter).compile()
    compile_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    fit = jax.block_until_ready(compiled(X, V, F, DT, keys, I.THRESHOLD))
    batch_s, batch_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    err = (np.asarray(fit.params.vector()) - truth) / truth
    ok = np.all(np.abs(err) < 0.01, axis=1)
    rel_std = np.asarray(fit.std) / truth
    z = np.abs(np.asarray(fit.params.vector()) - truth) / crb_std  # |error| / CRB std, (trials, 8)
    singles = []
    for i in range(single + 1 if single else 0):  # the first call compiles
        t0 = time.perf_counter()
        jax.block_until_ready(I.identify(x, v, np.asarray(F[:, i]), DT, jax.random.key(i), method=method))
        singles.append(time.perf_counter() - t0)
    return {
        "method": method,
        "success_rate": float(ok.mean()),
        "batch_s": batch_s,
        "batch_cpu_s": batch_cpu_s,
        "per_id_s": batch_s / trials,
        "median_single_s": float(np.median(singles[1:])) if single else None,
        "compile_s": compile_s,
        "median_abs_err_pct": dict(zip(L.NAMES, np.median(np.abs(err), axis=0) * 100)),
        "max_abs_err_pct": dict(zip(L.NAMES, np.max(np.abs(err), axis=0) * 100)),
        "failures_by_parameter": {n: int(np.sum(np.abs(err[:, j]) >= 0.01)) for j, n in enumerate(L.NAMES)},
        "iterations_median": float(np.median(np.asarray(fit.iterations))),
        "iterations_max": int(np.max(np.asarray(fit.iterations))),
        "converged": float(np.mean(np.asarray(fit.converged))),
        "std_reported_pct": dict(zip(L.NAMES, np.median(rel_std, axis=0) * 100)),
        "spread_pct": dict(zip(L.NAMES, np.sqrt(np.mean(err**2, axis=0)) * 100)),
        "within_3std": dict(zip(L.NAMES, np.mean(np.abs(err) <= 3 * rel_std, axis=0))),
        "crb_ratio_median": dict(zip(L.NAMES, np.median(z, axis=0))),
        "crb_ratio_q95": dict(zip(L.NAMES, np.quantile(z, 0.95, axis=0))),
        "crb_ratio_max": dict(zip(L.NAMES, np.max(z, axis=0))),
        "within_3crb": dict(zip(L.NAMES, np.mean(z <= 3, axis=0))),
        "all_within_3crb": float(np.mean(np.all(z <= 3, axis=1))),
    }


EXPERIMENTS = {
    "jog-reversal": lambda: plain_s_curve("jog-reversal"),
    "rest-to-rest": lambda: plain_s_curve("rest-to-rest"),
    "designed": friction_s_curve,
}
TOL = 0.01  # success tolerance: |error| < 1 % of the truth


def determined_study(experiment, method, trials, sigma_f=SIGMA_F):
    """One row of the experiment x method table: ``trials`` noisy records (numpy seed i, swarm key
    i) of ``experiment``. A parameter is determined by the experiment when its Cramer-Rao relative
    std at the truth (this noise) is <= TOL / 3 (its 3-std interval inside the tolerance; all eight
    for noiseless data); success: every determined parameter within TOL of the truth (and,
    separately, all eight). report_agrees: share of trials whose own report (reported rel std at
    the estimate <= TOL / 3) names exactly the determined set."""
    p = L.reference_parameters()
    truth = np.asarray(p.vector())
    t, x, v, a = (np.asarray(u) for u in EXPERIMENTS[experiment]())
    F0 = np.asarray(L.simulate(p, jnp.asarray(v), DT, substeps=16))
    F = np.stack([F0 + sigma_f * np.random.default_rng(i).standard_normal(F0.shape) for i in range(trials)], 1)
    X, V = (jnp.asarray(np.tile(u[:, None], trials)) for u in (x, v))
    keys = jax.random.split(jax.random.key(0), trials)
    n_particles, n_iter = I._DEFAULT_SIZE[method]
    t0 = time.perf_counter()
    fit = jax.block_until_ready(
        I._identify_joints(X, V, jnp.asarray(F), DT, keys, method, I.THRESHOLD, n_particles, n_iter)
    )
    seconds = time.perf_counter() - t0
    err = np.abs(np.asarray(fit.params.vector()) / truth - 1)
    rel = np.asarray(fit.std) / np.abs(np.asarray(fit.params.vector()))
    crb_pct = crb(p, jnp.asarray(v)) if sigma_f > 0 else {n: 0.0 for n in L.NAMES}
    crb_rel = np.array([crb_pct[n] for n in L.NAMES]) / 100 * sigma_f / SIGMA_F
    det = np.broadcast_to(crb_rel <= TOL / 3, err.shape)
    reported = rel <= TOL / 3
    return {
        "experiment": experiment,
        "method": method,
        "sigma_F": sigma_f,
        "trials": trials,
        "samples": int(v.shape[0]),
        "success_determined": float(np.mean(np.all(~det | (err < TOL), axis=1))),
        "success_all8": float(np.mean(np.all(err < TOL, axis=1))),
        "determined": int(det[0].sum()),
        "report_agrees": float(np.mean(np.all(reported == det, axis=1))),
        "reported_share": dict(zip(L.NAMES, reported.mean(0))),
        "iterations_median": float(np.median(np.asarray(fit.iterations))),
        "median_err_pct": dict(zip(L.NAMES, np.median(err, 0) * 100)),
        "crb_pct": {n: c * sigma_f / SIGMA_F for n, c in crb_pct.items()},
        "seconds": seconds,
    }


def print_determined(r):
    print(
        f"{r['experiment']:13s} {r['method']:14s} {r['sigma_F']:7.0e} {100 * r['success_determined']:6.0f}% "
        f"{100 * r['success_all8']:6.0f}% {r['determined']:5d} {100 * r['report_agrees']:6.0f}% "
        f"{r['iterations_median']:6.0f}  "
        + " ".join(f"{r['median_err_pct'][n]:7.3f}" for n in L.NAMES)
        + f"  {r['seconds']:6.0f}s",
        flush=True,
    )
    print(
        f"{'':13s} {'  CRB %':14s} {'':7s} {'':7s} {'':7s} {'':5s} {'':7s} {'':6s}  "
        + " ".join(f"{r['crb_pct'][n]:7.3f}" for n in L.NAMES)
        + "   reported determined "
        + " ".join(f"{r['reported_share'][n]:.2f}" for n in L.NAMES),
        flush=True,
    )


def main_determined(args):
    print(
        f"{'experiment':13s} {'method':14s} {'sigma_F':>7s} {'succ det':>7s} {'all 8':>7s} {'#det':>5s} {'agree':>7s} "
        f"{'sweeps':>6s}  " + " ".join(f"{n:>7s}" for n in L.NAMES) + "   (median |error| %)",
        flush=True,
    )
    rows = []
    for experiment in args.experiments:
        for method in args.methods:
            rows.append(determined_study(experiment, method, args.trials))
            print_determined(rows[-1])
    if args.article_noiseless:  # the article's own setting: noiseless data, trials differ by the swarm
        for experiment in args.experiments:
            rows.append(determined_study(experiment, "shape-article", args.trials, sigma_f=0.0))
            print_determined(rows[-1])
    print(json.dumps(rows, default=float))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument(
        "--determined",
        action="store_true",
        help="the experiment x method table (plain S-curves and the designed experiment) instead",
    )
    parser.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS), choices=list(EXPERIMENTS))
    parser.add_argument("--article-noiseless", action="store_true", help="also shape-article on noiseless data")
    parser.add_argument(
        "--methods", nargs="+", default=["pso", "shape-log", "shape-article-once", "full"], choices=I.METHODS
    )
    parser.add_argument("--single", type=int, default=3, help="separate identifications timed per method")
    parser.add_argument("--no-reference", action="store_true", help="skip the Radau accuracy check")
    args = parser.parse_args(argv)
    if args.determined:
        return main_determined(args)

    p = L.reference_parameters()
    truth = np.asarray(p.vector())
    t, x, v, a = friction_s_curve()
    F0 = np.asarray(L.simulate(p, v, DT))
    F = np.stack([F0 + SIGMA_F * np.random.default_rng(i).standard_normal(F0.shape) for i in range(args.trials)], 1)

    crb_pct = crb(p, v)
    crb_std = np.array([crb_pct[n] for n in L.NAMES]) / 100 * truth
    result = {
        "cpu_count": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
        "noise_sigma_F_N": SIGMA_F,
        "samples": int(v.shape[0]),
        "trials": args.trials,
        "truth": dict(zip(L.NAMES, truth.tolist())),
        "simulation": simulation_figures(p, v, not args.no_reference),
        "crb_pct": crb_pct,
        "methods": [study(m, np.asarray(x), np.asarray(v), F, truth, args.single, crb_std) for m in args.methods],
    }
    sim = result["simulation"]
    print(f"LuGre, {result['samples']} samples at 1 kHz, sigma_F = {SIGMA_F} N, {args.trials} trials")
    if "accuracy_N" in sim:
        print(f"integration error vs Radau: {sim['accuracy_N']:.2e} N")
    print(
        f"simulate 10 s ({sim['samples']} samples): {sim['sim_10s_s'] * 1e3:.1f} ms; "
        f"1,000 parameter sets: {sim['sim_1000_s']:.2f} s"
    )
    print(
        f"{'method':14s} {'success':>8s} {'iter med':>9s} {'iter max':>9s} {'conv':>6s} {'batch s':>9s} "
        f"{'CPU s':>8s} {'s / id':>8s} {'single s':>9s} {'compile s':>10s}"
    )
    for r in result["methods"]:
        single = f"{r['median_single_s']:.2f}" if r["median_single_s"] is not None else "-"
        print(
            f"{r['method']:14s} {r['success_rate'] * 100:7.0f}% {r['iterations_median']:9.0f} "
            f"{r['iterations_max']:9d} {r['converged'] * 100:5.0f}% {r['batch_s']:9.1f} {r['batch_cpu_s']:8.1f} "
            f"{r['per_id_s']:8.3f} {single:>9s} {r['compile_s']:10.1f}"
        )
    print("failures by parameter (|error| >= 1 %), and reported std vs spread (% of value) / share within 3 std:")
    print(f"{'method':14s} {'':9s}" + "".join(f"{n:>8s}" for n in L.NAMES))
    print(f"{'CRB':14s} {'std %':9s}" + "".join(f"{result['crb_pct'][n]:8.3f}" for n in L.NAMES))
    for r in result["methods"]:
        for label, key, fmt in (
            ("failures", "failures_by_parameter", "8d"),
            ("std %", "std_reported_pct", "8.3f"),
            ("spread %", "spread_pct", "8.3f"),
            ("in 3 std", "within_3std", "8.2f"),
        ):
            print(f"{r['method']:14s} {label:9s}" + "".join(f"{r[key][n]:{fmt}}" for n in L.NAMES))
    print(
        "|error| / Cramer-Rao std at the truth, per parameter (median, 95th percentile, max, share <= 3), and "
        "the share of trials with all eight <= 3:"
    )
    for r in result["methods"]:
        for label, key, fmt in (
            ("median", "crb_ratio_median", "8.2f"),
            ("q95", "crb_ratio_q95", "8.2f"),
            ("max", "crb_ratio_max", "8.2f"),
            ("<= 3", "within_3crb", "8.2f"),
        ):
            print(
                f"{r['method']:14s} {label:9s}"
                + "".join(f"{r[key][n]:{fmt}}" for n in L.NAMES)
                + (f"   all eight: {r['all_within_3crb']:.2f}" if key == "within_3crb" else "")
            )
    print(json.dumps(result, indent=1, default=float))


if __name__ == "__main__":
    main()
