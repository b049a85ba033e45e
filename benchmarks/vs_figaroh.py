"""jaxid against FIGAROH on a simulated UR10: the same data, FIGAROH's main path and its helper.

The benchmark is generated here with Pinocchio: the UR10 of ``example-robot-data``
(``ur_description/urdf/ur10_robot.urdf``, rigid bodies only, its URDF inertials as the true
parameters), a Fourier excitation (Swevers et al. 1997; 5 harmonics of 0.1 Hz, so 10 s is
one period) sampled for 10 s at 100 Hz (1000 samples), torques by ``pinocchio.rnea`` plus
white noise of 1 % of each joint's torque standard deviation; q, qd, qdd as sampled
(logged derivatives, so every path sees the same states).

Three rows, each a whole identification from the states and torques to base parameters:

- FIGAROH ``solve`` (its main identification path, ``BaseIdentification.solve(wls=True)``):
  a ``BaseIdentification`` subclass fed the states as processed data (its filtering and
  differentiation skipped, as the derivatives are given), then ``calculate_full_regressor``
  (``build_regressor_basic``: ``pinocchio.computeJointTorqueRegressor`` in a Python loop),
  ``initialize_standard_parameters``, ``compute_reference_torque`` and
  ``solve(decimate=False, plotting=False, wls=True)``: zero-column elimination, the QR base
  parameters and OLS (``QRDecomposer``), Gautier's WLS refinement
  (``_apply_weighted_least_squares``: rows weighted by 1 / the joint's mean squared OLS
  residual), quality metrics and its quality report (printed into a buffer, not shown).
- FIGAROH helper: the older module functions ``build_regressor_basic``, ``get_index_eliminate``
  + ``build_regressor_reduced``, ``double_QR`` and ``weigthed_least_squares`` (which ``solve``
  no longer calls; it builds a dense (N n) x (N n) = 6000 x 6000 weight matrix and a pinv of
  the weighted regressor), plus ``relative_stdev``.
- jaxid: ``workflow.prepare`` + ``workflow.identify_experiment(method="wls")`` (regressor,
  base parameters, screening, Gautier's two-step WLS, covariance, physics report).

FIGAROH (``pip install figaroh``) is loaded without the package's ``__init__`` (which imports
its visualisation and optimal-design stacks: meshcat, ndcurves, picos, numdifftools, rospkg);
``solve``'s module needs pandas and PyYAML besides numpy, scipy and pinocchio. Without
figaroh, the helper's algorithm written out with numpy stands in for the helper row, the
``solve`` row is not run, and the output says so.

The weighting: the helper multiplies joint j's rows by 1 / sigma_j (sigma_j = ||r_j|| / (N - b),
r the pooled OLS residual), so its normal equations weigh them by 1 / sigma_j^2; ``solve``
weighs them by 1 / mean(r_j^2). The two weights differ by one factor common to all joints,
so the two FIGAROH estimates are the same (they agree to about 1e-9, rounding; printed): they
do not "differ by design". jaxid's two-step WLS also weighs by 1 / sigma_j^2, but takes sigma_j
from each joint's own OLS fit (its rows alone; floored at 1e-6 of the noisiest joint's
variance), FIGAROH from the pooled fit, whose residuals on the small-torque wrist joints are
mostly the other joints' misfit (printed per joint against the true noise std), so the
estimates differ (printed, in jaxid's and in FIGAROH's own standard deviations).

Measured: warm calls in this process (jaxid compiled), interleaved round by round, medians of
--repeat, wall and CPU; the same warm calls of FIGAROH solve and jaxid each alone in its own
process (medians of --repeat calls, median of --cold processes). Then whole processes, each a fresh Python that imports, builds the
model, loads the data and identifies once, timed from outside (start to exit) and inside:
FIGAROH ``solve``, FIGAROH helper, jaxid with an empty compile cache (a new
``JAXID_CACHE_DIR`` per run: everything compiled) and jaxid with a filled one (the folder of
one earlier run), interleaved, medians of --cold. Printed: seconds, the ratios FIGAROH / jaxid
(> 1: jaxid faster), the load average at each part, the BLAS threads (``blas_threads.py``), and
the accuracy: each estimate's error against the true base parameters in jaxid's standard
deviations (FIGAROH's bases mapped onto jaxid's by the least-squares map between the base
regressors), their agreement, torque errors against the noise-free torques.

Usage: python benchmarks/vs_figaroh.py [--repeat 5] [--cold 3]
Needs pin and example-robot-data (the ``bench`` extra adds figaroh); skips with a message
without them.

Last figures (2026-12-06, figaroh 1.0.2, ``--repeat 5 --cold 3``, 2 shared cores,
OPENBLAS_NUM_THREADS=2; medians; two runs: A at 5adf47a, load 2.4-5.0; B at 084ba75, load
6.6-7.7; the script unchanged between them):

    warm, in-process               wall s (A / B)    CPU s (A / B)   FIGAROH / jaxid wall (CPU)
      FIGAROH solve(wls=True)      1.75 / 1.78       0.89 / 0.82     A 6.8x (5.2x), B 3.2x (2.5x)
      FIGAROH helper (dense W)     8.14 / 9.87       4.62 / 4.85     A 31x (27x), B 18x (15x)
      jaxid                        0.259 / 0.552     0.171 / 0.328
    whole processes, start to exit (A / B)
      FIGAROH solve 4.29 / 4.06 s, helper 14.0 / 19.0 s, jaxid with an empty compile cache
      12.4 / 14.95 s, with a filled one 2.64 / 3.45 s: jaxid is 1.6x / 1.2x faster than
      FIGAROH solve with a filled cache, 2.9x / 3.7x slower with an empty one
    accuracy (the same in both): max |error| / jaxid's std vs the true base parameters: jaxid
      1.65, FIGAROH solve 5.72 (1.25 in its own std), helper = solve to 9.8e-10; per-joint
      sigma_j (N m) for joints 4-6: noise 1.5e-3 4.3e-5 7.6e-6, jaxid 1.5e-3 1.0e-4 1.0e-4
      (floored), FIGAROH 3.1e-3 2.3e-3 1.9e-3; torque rel. RMS error vs noise-free 6.35e-5
      (jaxid), 6.36e-5 (FIGAROH)

On an idle machine (2026-12-06, load 1.1-1.6, ``--repeat 5 --cold 2`` / ``--repeat 3 --cold 2``) FIGAROH is
much faster than under load: at f9dee9a warm solve 0.0745 s vs jaxid 0.0569 s (1.31x), whole processes
solve 1.63 s, jaxid 4.19 s with an empty cache, 1.78 s with a filled one; at 33551df (the verdicts'
pseudo-inertias compiled, not an eager vmap) warm solve 0.0708 s vs jaxid 0.0353 s (2.01x wall, 1.80x
CPU), processes solve 1.68 s, jaxid 3.97 s empty (2.4x slower), 1.82 s filled (0.92x).
At a605ce6 (2026-12-07, load 1.9-2.9, ``--repeat 5 --cold 3``): warm solve 0.0661 s vs jaxid
0.0430 s (1.54x wall, 1.42x CPU; the workflow's jackknife covariance of logged runs, new at
5fcfa33, is about 10 ms of jaxid's 43), processes solve 1.56 s, jaxid 3.55 s empty (2.27x
slower), 1.56 s filled (1.00x); accuracy as above (jaxid 1.09, FIGAROH solve 5.67 std).
Same script, one after the other (load 1.0-1.6), jaxid at 5fcfa33 (by PYTHONPATH; the header
names the checkout's commit) -> 16cefe2 (the jackknife's block sums on the host, 34 -> 19
programs on this path): warm solve / jaxid 1.28x -> 1.48x (jaxid 59.5 -> 55.6 ms), jaxid's
process with an empty cache 4.16 -> 3.57 s (2.36x -> 2.06x FIGAROH solve's 1.76 / 1.73 s).
At 5e354d4 (a worktree, by PYTHONPATH) -> 1e0675d (small host computations in numpy, models
built without compiling; a cold identify of this run compiles 3 programs instead of 15), two pairs
one after the other (load 1.3-1.5, then 0.8-1.6): warm solve / jaxid 0.86x -> 1.64x and 1.56x ->
1.86x (jaxid 139.6 -> 62.9 ms and 58.6 -> 40.2 ms; FIGAROH solve 119 / 103 and 91 / 75 ms in the
same runs); processes with an empty cache 4.93 -> 3.63 s and 4.07 -> 2.80 s (1.97x -> 1.60x and
2.19x -> 1.60x FIGAROH solve's 2.50 / 2.27 and 1.86 / 1.75 s), with a filled one 2.26 -> 1.62 s and
1.78 -> 1.33 s (FIGAROH solve / jaxid 1.11x -> 1.40x and 1.05x -> 1.32x). Alone in a process
(OPENBLAS_NUM_THREADS=1, load ~1) jaxid's warm call is 27-30 ms, of which the regressor 5 ms.
A third pair, 5e354d4 -> c65b5ad (also the host cuts: a cold identify of this run compiles 2
programs), load 0.7-1.2: warm 1.74x -> 2.05x (jaxid 42.0 -> 36.1 ms, FIGAROH solve 72.9 / 73.9 ms),
empty-cache process 3.41 -> 2.34 s (2.13x -> 1.49x FIGAROH solve's 1.60 / 1.57 s), filled 1.51 ->
1.08 s (FIGAROH solve / jaxid 1.06x -> 1.46x).

At e0ec724 (a worktree, by PYTHONPATH) -> dbb1cbd (identify's reduced fit on the host, one regressor
chunk of 1024 samples: a cold identify of this run compiles the regressor alone), two pairs one after the
other (2026-12-07, load 1.5-1.9, every package's and jaxid's .pyc compiled first, as an installed package
has them): warm solve / jaxid 2.36x -> 2.85x and 2.33x -> 2.86x (jaxid 21.4 -> 19.1 and 22.0 -> 17.3 ms;
FIGAROH solve 50-55 ms; target 3x not met), empty-cache process 1.76 -> 1.32 s and 1.79 -> 1.31 s
(1.54x -> 1.19x and 1.54x -> 1.14x FIGAROH solve's 1.11-1.16 s; target 1.0x not met), filled cache
0.76 -> 0.70 s and 0.73 -> 0.72 s (FIGAROH solve / jaxid 1.51x -> 1.58x, 1.59x -> 1.60x). Without the
.pyc files (this machine sets PYTHONDONTWRITEBYTECODE) both sides compile their sources in every
process: FIGAROH solve 2.8 s, jaxid 3.3 s at e0ec724 (load 0.9); the script now says so. Alone in a
process (OPENBLAS_NUM_THREADS=1) jaxid's warm call is 14.1 ms (18.4 ms at e0ec724), the regressor
program 1.1 ms of it; with two BLAS threads 16.4 ms (the physics check's and verdicts' small
factorisations paid for OpenBLAS's second thread), 13.8 ms at 24f50ad (identify on one BLAS thread).
A third pair, e0ec724 -> 24f50ad, ``--repeat 7 --cold 5``, load 0.5-1.2: warm 2.05x -> 2.83x (jaxid
24.1 -> 17.7 ms, FIGAROH solve 49.3 / 50.0 ms), empty-cache process 1.74 -> 1.28 s (1.55x -> 1.13x
FIGAROH solve's 1.12 / 1.13 s), filled 0.74 -> 0.70 s (1.51x -> 1.61x faster than solve).

At b516a78 (2026-12-07, ``--repeat 7 --cold 3``, load 1.2-1.3, .pyc compiled), with the warm calls
also timed each alone in its own process (``warm_child``; interleaved in one process, a thread pool's
spinning threads after one side's call slow the other's: docs/batches.md, "Threads"): warm
in-process, interleaved: FIGAROH solve 68.0 ms, jaxid 20.1 ms (3.38x wall, 3.22x CPU); alone: solve
68.9 ms, jaxid 17.2 ms (4.00x wall; CPU 133 vs 18 ms, 7.3x: FIGAROH's BLAS runs on both cores);
whole processes: solve 1.46 s, jaxid empty cache 1.65 s (1.13x slower; target 1.0x not met),
filled 0.99 s (1.48x faster). Standalone children one after the other (``/usr/bin/time``, load
~1): solve 1.41 / 1.11 / 1.13 s, jaxid empty 1.46 / 1.30 / 1.25 s: the cold floor is jax's and
equinox's imports (0.32 + 0.10 s), the regressor's trace (0.16 s) and its XLA compile (0.33 s;
``--xla_backend_optimization_level=1`` 0.28 s, other flags within noise).

A quick run (``--repeat 2 --cold 1``, load 5-8) had solve 5.1 s warm (10.6x jaxid), helper
13.3 s, whole processes solve 7.1 s, jaxid 12.2 s (empty cache) and 3.0 s (filled). The
earlier "25x" (CHANGELOG 0.2.0) was against the helper only.

Its row in benchmarks/README.md lists its last figures; cited by ``jaxid/workflow/regress.py``
(``base_of``), ``pyproject.toml``'s bench extra and the CHANGELOG.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import warnings

import blas_threads  # benchmarks/blas_threads.py: sets the BLAS threads before numpy loads
import numpy as np

URDF = "ur_description/urdf/ur10_robot.urdf"
FS, SECONDS, NOISE, HARMONICS, F0 = 100.0, 10.0, 0.01, 5, 0.1


def load_figaroh():
    """FIGAROH's identification modules, or None when figaroh is not installed.

    The package's ``__init__`` imports every subpackage eagerly (visualisation, calibration,
    optimal design, with their heavy dependencies); the identification modules are loaded as
    submodules of empty package objects. Returns a namespace with ``regressor``, ``qr``,
    ``tools`` (the helper's modules) and ``base`` (``BaseIdentification``, the ``solve`` path;
    None when it does not import, ``why`` then says why)."""
    if "figaroh" in sys.modules:  # loaded here before (its empty package object)
        root = sys.modules["figaroh"].__path__[0]
    else:
        spec = importlib.util.find_spec("figaroh")
        if spec is None or spec.origin is None:
            return None
        root = os.path.dirname(spec.origin)
    for pkg in ("figaroh", "figaroh.tools", "figaroh.identification", "figaroh.utils", "figaroh.data"):
        if pkg not in sys.modules:
            mod = types.ModuleType(pkg)
            mod.__path__ = [os.path.join(root, *pkg.split(".")[1:])]
            sys.modules[pkg] = mod
    try:
        from figaroh.identification import identification_tools
        from figaroh.tools import qrdecomposition, regressor
    except ImportError:
        return None
    fig = types.SimpleNamespace(
        regressor=regressor, qr=qrdecomposition, tools=identification_tools, base=None, why=None
    )
    try:
        from figaroh.identification.base_identification import BaseIdentification

        fig.base = BaseIdentification
    except ImportError as e:
        fig.why = f"figaroh's BaseIdentification does not import ({e})"
    return fig


def simulate():
    """(pinocchio model, t, q, qd, qdd, tau measured, tau noise-free) of the UR10 benchmark."""
    import pinocchio as pin

    import jaxid
    from jaxid.excitation.trajectories import fourier

    model = pin.buildModelFromUrdf(jaxid.models.example_robot_urdf(URDF))
    data = model.createData()
    n = model.nv
    rng = np.random.default_rng(0)
    t = np.arange(int(SECONDS * FS)) / FS
    k = np.arange(1, HARMONICS + 1)
    # Velocity amplitudes falling with the harmonic (positions within about +-1.5 rad).
    a, b = (rng.normal(size=(n, HARMONICS)) * 0.5 / k for _ in range(2))
    q, qd, qdd = (np.asarray(x) for x in fourier(a, b, np.zeros(n), 2 * np.pi * F0, t))
    clean = np.stack([pin.rnea(model, data, q[i], qd[i], qdd[i]) for i in range(len(t))])
    tau = clean + NOISE * clean.std(axis=0) * rng.normal(size=clean.shape)
    return model, t, q, qd, qdd, tau, clean


# ------------------------------------------------------------------------------ FIGAROH
def _config(model, N):
    n = model.nv
    return {
        "has_friction": False,
        "is_joint_torques": True,
        "act_idxv": list(range(n)),
        "active_joints": [model.names[j + 1] for j in range(n)],
        "idx_tau_stop": [N * (j + 1) for j in range(n)],
    }


def figaroh_solve(fig, model, q, qd, qdd, tau):
    """FIGAROH's main path, ``BaseIdentification.solve(wls=True)``. Returns (W_b (N*n, b)
    joint-major, phi_wls, its relative std %, the quality report it printed)."""

    class Identification(fig.base):
        # The config as a dict (the YAML parser's output); the data as given (no file to read).
        def load_param(self, config_file, setting_type="identification"):
            self.identif_config = config_file

        def load_trajectory_data(self, data_source=None):
            raise NotImplementedError

    ident = Identification(types.SimpleNamespace(model=model, data=model.createData()), _config(model, len(q)))
    ident.processed_data = {"positions": q, "velocities": qd, "accelerations": qdd, "torques": tau}
    ident.num_samples = len(q)
    ident.calculate_full_regressor()
    ident.initialize_standard_parameters()
    ident.compute_reference_torque()
    with contextlib.redirect_stdout(io.StringIO()) as report, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phi = ident.solve(decimate=False, plotting=False, wls=True)
    return (
        ident.dynamic_regressor_base,
        np.asarray(phi),
        np.asarray(ident.result["wls_std_deviations"]),
        report.getvalue(),
    )


def figaroh_helper(fig, model, q, qd, qdd, tau):
    """FIGAROH's helper functions (``double_QR`` + ``weigthed_least_squares``), or their algorithm
    in numpy when fig is None. Returns (W_b (N*n, b) joint-major, phi_ols, phi_wls, rel_std %)."""
    import pinocchio as pin

    n, N = model.nv, len(q)
    robot = types.SimpleNamespace(model=model, data=model.createData())
    config = _config(model, N)
    tau_j = tau.T.reshape(-1)  # FIGAROH stacks joint-major: rows j*N .. j*N+N-1 are joint j
    if fig is None:  # its algorithm, written out
        import scipy.linalg

        W = np.zeros((N * n, 10 * n))
        for i in range(N):
            W[i::N] = pin.computeJointTorqueRegressor(model, robot.data, q[i], qd[i], qdd[i])
        keep = np.flatnonzero(np.sum(W**2, axis=0) >= 1e-6)
        W_e = W[:, keep]
        _, R, piv = scipy.linalg.qr(W_e, mode="economic", pivoting=True)
        rank = int(np.sum(np.abs(np.diag(R)) > 1e-8 * abs(R[0, 0])))
        W_b = W_e[:, np.sort(piv[:rank])]
        phi = np.linalg.lstsq(W_b, tau_j, rcond=None)[0]
        r = tau_j - W_b @ phi
        sig2 = r @ r / (W_b.shape[0] - W_b.shape[1])  # relative_stdev's formula (Presse & Gautier 1991)
        rel_std = 100 * np.sqrt(np.diag(sig2 * np.linalg.inv(W_b.T @ W_b))) / np.abs(phi)
        # weigthed_least_squares: joint j's rows times 1 / sigma_j, sigma_j = ||r_j|| / (N - b)
        s = np.array([np.linalg.norm(r[j * N : (j + 1) * N]) / (N - len(phi)) for j in range(n)])
        P = np.repeat(1.0 / s, N)
        wls = np.linalg.pinv(P[:, None] * W_b) @ (P * tau_j)
        return W_b, phi, wls, rel_std
    from figaroh.identification.parameter import get_standard_parameters

    W = fig.regressor.build_regressor_basic(robot, q, qd, qdd, config)
    params_std = get_standard_parameters(model, config)
    idx_e, params_r = fig.regressor.get_index_eliminate(W, params_std, 1e-6)
    W_e = fig.regressor.build_regressor_reduced(W, idx_e)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        W_b, _, _, phi, _ = fig.qr.double_QR(tau_j, W_e, params_r, params_std)
    rel_std = fig.tools.relative_stdev(W_b, phi, tau_j)
    wls = fig.tools.weigthed_least_squares(robot, phi, W_b, tau_j, W_b @ phi, config)
    return W_b, np.asarray(phi), np.asarray(wls), np.asarray(rel_std)


# -------------------------------------------------------------------------------- jaxid
def jaxid_robot():
    import jaxid

    return jaxid.Robot.from_urdf(jaxid.models.example_robot_urdf(URDF))


def jaxid_identify(robot, t, q, qd, qdd, tau):
    from jaxid import data, workflow

    prepared = workflow.prepare([data.Dataset(t=t, q=q, tau=tau, qd=qd, qdd=qdd, source="ur10")], robot)
    return workflow.identify_experiment(robot, prepared, method="wls")


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def warm(fns, repeat):
    """Each of fns once (warm-up: compiles jaxid), then interleaved round by round; medians of
    (wall, CPU) s, and the warm-up outputs."""
    outs = {k: f() for k, f in fns.items()}
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            times[k].append(timed(f)[1:])
    med = {k: tuple(float(np.median([x[i] for x in v])) for i in range(2)) for k, v in times.items()}
    return outs, med


def accuracy(robot, sim, clean, outs, params):
    """Errors of every estimate against the truth, in jaxid's standard deviations, and their agreement."""
    import jaxid

    t, q, qd, qdd, tau = sim
    N, n = q.shape
    Wj = np.asarray(jaxid.regressor(robot, q, qd, qdd))[..., np.asarray(params.base.indices)]  # (N, n, b)
    Wj_joint = Wj.transpose(1, 0, 2).reshape(N * n, -1)  # joint-major, as FIGAROH's rows
    true_b = np.asarray(params.base.to_base(robot.parameter_vector()))
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    clean_j = clean.T.reshape(-1)
    rms = lambda x: float(np.sqrt(np.mean(x**2)))
    est = {"jaxid": theta}
    out = dict(base_parameters=int(theta.size))
    for k in ("figaroh_solve", "figaroh_helper"):
        if k not in outs:
            continue
        W_b, phi = outs[k][0], outs[k][2 if k == "figaroh_helper" else 1]
        T = np.linalg.lstsq(Wj_joint, W_b, rcond=None)[0]  # jaxid base = T @ FIGAROH base
        est[k] = T @ phi
        out[f"{k}_base_parameters"] = int(phi.size)
        out[f"{k}_map_residual"] = float(np.linalg.norm(Wj_joint @ T - W_b) / np.linalg.norm(W_b))
        out[f"{k}_torque_rel_rms"] = rms(W_b @ phi - clean_j) / rms(clean_j)
        if k == "figaroh_solve":  # in its own standard deviations (its relative std %, rounded to 0.01 %)
            own = outs[k][2] / 100 * np.abs(phi)
            out[f"{k}_err_in_own_std"] = float(np.max(np.abs(phi - np.linalg.solve(T, true_b)) / own))
            r = tau.T.reshape(-1) - W_b @ np.linalg.lstsq(W_b, tau.T.reshape(-1), rcond=None)[0]
            out["figaroh_sigma"] = [float(np.sqrt(np.mean(r[j * N : (j + 1) * N] ** 2))) for j in range(n)]
    from jaxid.identification.estimators import wls_variances

    out["jaxid_sigma"] = np.sqrt(np.asarray(wls_variances(Wj.reshape(N * n, -1), tau.reshape(-1), n))).tolist()
    out["noise_sigma"] = (NOISE * clean.std(axis=0)).tolist()
    out["jaxid_torque_rel_rms"] = rms(Wj_joint @ theta - clean_j) / rms(clean_j)
    for k, v in est.items():
        out[f"{k}_err_in_std"] = float(np.max(np.abs(v - true_b) / std))
    if "figaroh_solve" in est:
        out["jaxid_vs_solve_in_std"] = float(np.max(np.abs(theta - est["figaroh_solve"]) / std))
        W_b, phi = outs["figaroh_solve"][:2]
        out["torque_jaxid_vs_solve"] = rms(Wj_joint @ theta - W_b @ phi) / rms(clean_j)
        if "figaroh_helper" in est:
            a, b = est["figaroh_solve"], est["figaroh_helper"]
            out["solve_vs_helper_rel"] = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
    return out


def child(which, path, urdf):
    """A whole process: import, build the model, load the data, identify once; print the times.
    The FIGAROH children import neither jax nor jaxid."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    d = np.load(path)
    sim = tuple(d[k] for k in ("t", "q", "qd", "qdd", "tau"))
    if which.startswith("jaxid"):
        jaxid_identify(jaxid_robot(), *sim)
    else:
        import pinocchio as pin

        model = pin.buildModelFromUrdf(urdf)
        fig = load_figaroh()
        if which == "figaroh_solve":
            figaroh_solve(fig, model, *sim[1:])
        else:
            figaroh_helper(fig, model, *sim[1:])
    print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0)))


def warm_child(which, path, urdf, repeat):
    """Warm calls alone in this process: one warm-up call of ``which`` (jaxid: compiles), then
    ``repeat`` timed calls; prints the medians (wall, CPU) s."""
    d = np.load(path)
    sim = tuple(d[k] for k in ("t", "q", "qd", "qdd", "tau"))
    if which == "jaxid":
        robot = jaxid_robot()
        fn = lambda: jaxid_identify(robot, *sim)
    else:
        import pinocchio as pin

        model, fig = pin.buildModelFromUrdf(urdf), load_figaroh()
        fn = lambda: figaroh_solve(fig, model, *sim[1:])
    _, med = warm({which: fn}, int(repeat))
    print(json.dumps(dict(wall=med[which][0], cpu=med[which][1])))


def warm_alone(path, rounds, repeat, which):
    """Warm calls of each of ``which``, each in its own process (``warm_child``), the processes
    alternated for ``rounds`` rounds: medians over the rounds of each process's medians."""
    import jaxid

    urdf = jaxid.models.example_robot_urdf(URDF)
    times = {w: [] for w in which}
    for _ in range(rounds):
        for w in which:
            res = subprocess.run(
                [sys.executable, __file__, "--warm-child", w, path, urdf, str(repeat)],
                check=True,
                capture_output=True,
                text=True,
            )
            times[w].append(json.loads(res.stdout.strip().splitlines()[-1]))
    return {w: tuple(float(np.median([x[c] for x in v])) for c in ("wall", "cpu")) for w, v in times.items()}


def cold(path, runs, tmp, which):
    """Whole processes of ``which``, interleaved, medians of ``runs``: process (start to exit,
    from outside), wall and CPU inside. jaxid_empty: a new, empty JAXID_CACHE_DIR per run;
    jaxid_filled: one folder filled by a run first."""
    import jaxid

    urdf = jaxid.models.example_robot_urdf(URDF)
    filled = os.path.join(tmp, "filled")

    def outside(w, k):
        cache = os.path.join(tmp, f"empty{k}") if w == "jaxid_empty" else filled
        env = dict(os.environ, JAXID_CACHE_DIR=cache)
        t0 = time.perf_counter()
        res = subprocess.run(
            [sys.executable, __file__, "--child", w, path, urdf], env=env, check=True, capture_output=True, text=True
        )
        return dict(json.loads(res.stdout.strip().splitlines()[-1]), process=time.perf_counter() - t0)

    if "jaxid_filled" in which:
        outside("jaxid_filled", -1)  # fills the cache folder
    times = {w: [] for w in which}
    for k in range(runs):
        for w in which:
            times[w].append(outside(w, k))
    return {w: {c: float(np.median([x[c] for x in v])) for c in ("process", "wall", "cpu")} for w, v in times.items()}


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--warm-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    if args.warm_child:
        return warm_child(*args.warm_child)
    try:
        import pinocchio  # noqa: F401

        import jaxid

        jaxid.models.example_robot_urdf(URDF)
    except (ImportError, FileNotFoundError) as e:
        print(f"skipped: this benchmark needs pin and example-robot-data ({e}); pip install 'jaxid[bench]'")
        return None
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M')} at {commit or '?'}; {blas_threads.describe()}")
    if sys.flags.dont_write_bytecode:
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: a child process compiles every module's source that has no "
            ".pyc yet (about 1.6 s of jaxid's and FIGAROH's imports on a 2-core machine); compile them first "
            "(python -m compileall) for the figures a user's installed packages give"
        )
    fig = load_figaroh()
    if fig is None:
        baseline = "figaroh not importable: the helper row is its algorithm written out with numpy; solve not run"
    else:
        baseline = f"figaroh {importlib.metadata.version('figaroh')}"
        if fig.base is None:
            baseline += f"; solve not run: {fig.why}"
    print(f"baseline: {baseline}")
    model, t, q, qd, qdd, tau, clean = simulate()
    robot = jaxid_robot()
    sim = (t, q, qd, qdd, tau)
    fns = {}
    if fig is not None and fig.base is not None:
        fns["figaroh_solve"] = lambda: figaroh_solve(fig, model, q, qd, qdd, tau)
    fns["figaroh_helper"] = lambda: figaroh_helper(fig, model, q, qd, qdd, tau)
    fns["jaxid"] = lambda: jaxid_identify(robot, t, q, qd, qdd, tau)
    load_warm0 = load()
    outs, med = warm(fns, args.repeat)
    load_warm = f"{load_warm0} -> {load()}"
    acc = accuracy(robot, sim, clean, outs, outs["jaxid"])
    cold_t = alone = None
    if args.cold:
        load_cold0 = load()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "ur10.npz")
            np.savez(path, t=t, q=q, qd=qd, qdd=qdd, tau=tau)
            alone = warm_alone(path, args.cold, args.repeat, [k for k in fns if k == "figaroh_solve"] + ["jaxid"])
            which = [k for k in fns if k != "jaxid"] + ["jaxid_empty", "jaxid_filled"]
            cold_t = cold(path, args.cold, tmp, which)
        load_cold = f"{load_cold0} -> {load()}"
    N, n = q.shape
    print(
        f"\nUR10, {N} samples x {n} joints ({SECONDS:g} s at {FS:g} Hz, {100 * NOISE:g} % noise), "
        f"{acc['base_parameters']} base parameters (FIGAROH "
        f"{acc.get('figaroh_solve_base_parameters', acc.get('figaroh_helper_base_parameters'))})"
    )
    print(f"warm, in-process, interleaved, medians of {args.repeat} (load average {load_warm})")
    print(f"{'':>16} {'wall s':>8} {'CPU s':>8} {'wall / jaxid':>13} {'CPU / jaxid':>12}")
    for k, (w, c) in med.items():
        print(f"{k:>16} {w:>8.4f} {c:>8.4f} {w / med['jaxid'][0]:>13.2f} {c / med['jaxid'][1]:>12.2f}")
    if alone:
        print(
            f"warm, each alone in its own process, medians of {args.repeat} calls, median of {args.cold} "
            f"processes each (load average {load_cold})"
        )
        for k, (w, c) in alone.items():
            print(f"{k:>16} {w:>8.4f} {c:>8.4f} {w / alone['jaxid'][0]:>13.2f} {c / alone['jaxid'][1]:>12.2f}")
    if cold_t:
        print(f"whole processes, interleaved, medians of {args.cold} (load average {load_cold})")
        print(f"{'':>16} {'start-exit s':>13} {'in child s':>11} {'CPU child s':>12} {'start-exit / jaxid':>19}")
        for k, v in cold_t.items():
            ratio = " ".join(f"{v['process'] / cold_t[j]['process']:.2f}" for j in ("jaxid_empty", "jaxid_filled"))
            print(f"{k:>16} {v['process']:>13.2f} {v['wall']:>11.2f} {v['cpu']:>12.2f} {ratio:>19}")
        print("  (start-exit / jaxid: against jaxid with an empty, then a filled compile cache)")
    print("accuracy (std: jaxid's WLS standard deviations)")
    errs = ", ".join(
        f"{k} {acc[f'{k}_err_in_std']:.2f}"
        for k in ("jaxid", "figaroh_solve", "figaroh_helper")
        if f"{k}_err_in_std" in acc
    )
    print(f"  max |error| / std vs the true base parameters (WLS): {errs}")
    if "jaxid_vs_solve_in_std" in acc:
        print(
            f"  max |jaxid - FIGAROH solve| / std: {acc['jaxid_vs_solve_in_std']:.3f} (base map residual "
            f"{acc['figaroh_solve_map_residual']:.1e}); both weigh joint j by 1 / sigma_j^2, jaxid's sigma_j from "
            "the joint's own OLS fit, FIGAROH's from the pooled one"
        )
    if "figaroh_solve_err_in_own_std" in acc:
        print(f"  FIGAROH solve's max |error| in its own std: {acc['figaroh_solve_err_in_own_std']:.2f}")
    fmt = lambda v: " ".join(f"{x:.1e}" for x in v)
    print(f"  per-joint noise std {fmt(acc['noise_sigma'])}; jaxid's sigma_j {fmt(acc['jaxid_sigma'])}", end="")
    print(f"; FIGAROH's {fmt(acc['figaroh_sigma'])}" if "figaroh_sigma" in acc else "")
    if "solve_vs_helper_rel" in acc:
        print(
            f"  max |FIGAROH solve - helper| / max |solve|: {acc['solve_vs_helper_rel']:.1e} (the same estimate: "
            "their weights differ by one factor common to all joints)"
        )
    torque = ", ".join(
        f"{k} {acc[f'{k}_torque_rel_rms']:.3e}"
        for k in ("jaxid", "figaroh_solve", "figaroh_helper")
        if f"{k}_torque_rel_rms" in acc
    )
    print(f"  torque rel. RMS error vs noise-free: {torque}")
    out = dict(
        benchmark="vs_figaroh",
        baseline=baseline,
        commit=commit,
        threads=blas_threads.describe(),
        samples=N,
        joints=n,
        load_warm=load_warm,
        load_cold=load_cold if cold_t else None,
        warm={k: dict(wall=v[0], cpu=v[1]) for k, v in med.items()},
        cold=cold_t,
        accuracy=acc,
    )
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
