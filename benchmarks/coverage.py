"""Coverage of the reported uncertainty: do the +-1, 2, 3 std intervals of the base parameters
contain the truth at the nominal rates (68.3, 95.4, 99.7 %), for each estimator and
preprocessing path, across noise seeds and noise levels?

    python benchmarks/coverage.py [--robot planar3] [--seeds 20] [--sigma-q 1e-4 1e-3] [--periods 3]

Each experiment: a random Fourier excitation (``--harmonics`` at ``--f0`` Hz, ``--periods``
periods at 100 Hz, starting and ending at rest), a perturbed "true" robot with viscous and
Coulomb friction and offsets (``jaxid.simulation.simulate``, robot and noise drawn from the
seed), q-only measurements (Gaussian position noise ``sigma_q``, torque noise 0.5 % of each
joint's range: ``jaxid simulate``'s default). Paths:

- ``filtered``: the file without its excitation sidecar: Butterworth at the cutoff from the
  position spectrum (``workflow.prepare``'s default for such a file);
- ``periodic``: the file with the sidecar (``jaxid excite``'s base frequency and harmonics):
  periods averaged, frequency-domain derivatives (the default for such a file).

Estimators: ``wls`` (the default), ``iv`` and ``didim`` with the commanded trajectory as the
instruments' reference (``--method iv|didim --reference traj.csv``; exact tracking, as in the
simulation). The std is the one reported (``params.std``: on the filtered path of wls and ols
the HAC sandwich, ``jaxid.identification.sandwich``); where that is not the white-noise
covariance, a row ``wls/w`` gives the coverage of the white-noise std it replaced
(``params.estimation.std_white``). Printed per (sigma_q, path, estimator): the fraction of base parameters x seeds
whose |error| <= k std for k = 1, 2, 3, the median |error| / std, and the median and 90th
percentile of the relative error |error| / max(|theta_true|, ||theta_true|| / sqrt(b)).

Measured (``--methods wls[,ols]``, planar3 30 seeds, UR5 20 seeds; "/w" the white-noise std
the HAC sandwich replaced on the filtered path; % of base parameters x seeds):

    robot    sigma_q  path      method  <=1 std  <=2 std  <=3 std  med |z|
    nominal                               68.3     95.4     99.7    0.674
    planar3  1e-4     filtered  wls       67.4     93.0     99.3    0.659
                                wls/w     66.7     94.1     99.3    0.646
                                ols       69.6     94.6     98.9    0.606
                                ols/w     73.7     92.6     98.1    0.590
                      periodic  wls       66.5     94.1     99.8    0.707
             1e-3     filtered  wls       71.9     96.1     99.4    0.643
                                wls/w     61.7     89.6     96.7    0.782
                                ols       73.9     95.2     99.3    0.582
                                ols/w     64.8     85.9     93.7    0.693
                      periodic  wls       65.0     93.7     99.6    0.724
    ur5      1e-4     filtered  wls       68.7     94.6     99.5    0.655
                                wls/w     70.2     96.3     99.9    0.661
                      periodic  wls       68.8     95.5    100.0    0.687
             1e-3     filtered  wls       69.3     94.5     99.3    0.634
                                wls/w     61.4     89.9     97.0    0.766
                      periodic  wls       66.1     93.3     99.0    0.712

Its row in benchmarks/README.md lists its last figures; cited by docs/your-robot.md ("What the
std means") and ``jaxid/identification/sandwich.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

import jax
import numpy as np

from jaxid import workflow
from jaxid.excitation import fourier
from jaxid.simulation import simulate


def excitation(n, harmonics, f0, periods, seed, fs=100.0, amplitude=1.2):
    """t, q, qd, qdd of a zero-start Fourier excitation over whole periods and the closing sample."""
    rng = np.random.default_rng(seed)
    a, b = amplitude * rng.standard_normal((2, n, harmonics)) / np.sqrt(harmonics)
    t = np.arange(int(round(periods * fs / f0)) + 1) / fs
    return (t, *(np.asarray(x) for x in fourier(a, b, np.zeros(n), 2 * np.pi * f0, t, zero_start=True)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", default="planar3")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--sigma-q", type=float, nargs="+", default=[1e-4, 1e-3])
    p.add_argument("--periods", type=int, default=3)
    p.add_argument("--f0", type=float, default=0.2)
    p.add_argument("--harmonics", type=int, default=5)
    p.add_argument("--methods", default="wls,iv,didim")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    robot, desc = workflow.model(builtin=a.robot, joint_terms=("fv", "fc", "offset"))
    methods = a.methods.split(",")
    tic = time.perf_counter()
    z, rel = {}, {}
    for sq in a.sigma_q:
        for seed in range(a.seeds):
            ref = excitation(robot.n, a.harmonics, a.f0, a.periods, seed)
            m = simulate(
                robot.with_joint_terms(()),
                *ref,
                jax.random.PRNGKey(seed),
                noise_key=jax.random.PRNGKey(1000 + seed),
                sigma_q=sq,
            )
            theta_true = np.asarray(m.robot.parameter_vector())
            known = dataclasses.replace(m.data, base_frequency=a.f0, harmonics=a.harmonics)
            for path, ds in (("filtered", m.data), ("periodic", known)):
                prepared = workflow.prepare(ds, robot)
                for method in methods:
                    params = workflow.identify_experiment(
                        robot, prepared, method=method, description=desc, reference=None if method == "wls" else [ref]
                    )
                    bt = np.asarray(params.base.to_base(theta_true))
                    e = np.asarray(params.theta) - bt
                    r = np.abs(e) / np.maximum(np.abs(bt), np.linalg.norm(bt) / np.sqrt(bt.size))
                    stds = {method: params.std}
                    if params.estimation.covariance != "white":  # also the white-noise std it replaced
                        stds[method + "/w"] = params.estimation.std_white
                    for label, std in stds.items():
                        z.setdefault((sq, path, label), []).append(e / np.asarray(std))
                        rel.setdefault((sq, path, label), []).append(r)
            print(f"  sigma_q {sq:g} seed {seed} done ({time.perf_counter() - tic:.0f} s)", flush=True)
        table(a, z, rel)  # after each noise level, so that a long run reports as it goes
    print(f"({time.perf_counter() - tic:.0f} s; timings under load)")


def table(a, z, rel):
    print(
        f"\n{a.robot}: {a.seeds} seeds; {a.periods} periods of {a.f0:g} Hz, {a.harmonics} harmonics at 100 Hz, "
        f"q-only files, torque noise 0.5 % of range; {len(next(iter(z.values()))[0])} base parameters"
    )
    print(
        f"{'sigma_q':>8} {'path':>9} {'method':>7} | {'<=1 std':>8} {'<=2 std':>8} {'<=3 std':>8} "
        f"{'med |z|':>8} | {'med rel %':>9} {'p90 rel %':>9}"
    )
    print(f"{'':>8} {'':>9} {'nominal':>7} | {68.3:8.1f} {95.4:8.1f} {99.7:8.1f} {0.674:8.3f} |")
    for (sq, path, method), zs in z.items():
        zz, rr = np.abs(np.concatenate(zs)), np.concatenate(rel[(sq, path, method)])
        print(
            f"{sq:8.0e} {path:>9} {method:>7} | "
            + " ".join(f"{100 * np.mean(zz <= k):8.1f}" for k in (1, 2, 3))
            + f" {np.median(zz):8.3f} | {100 * np.median(rr):9.3f} {100 * np.percentile(rr, 90):9.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
