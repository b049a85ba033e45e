"""jaxid against FIGAROH on a simulated UR10: the same data, both identification paths.

The benchmark is generated here with Pinocchio: the UR10 of ``example-robot-data``
(``ur_description/urdf/ur10_robot.urdf``, rigid bodies only, its URDF inertials as the true
parameters), a Fourier excitation (Swevers et al. 1997; 5 harmonics of 0.1 Hz, so 10 s is
one period) sampled for 10 s at 100 Hz (1000 samples), torques by ``pinocchio.rnea`` plus
white noise of 1 % of each joint's torque standard deviation; q, qd, qdd as sampled
(logged derivatives, so both paths see the same states).

- FIGAROH (``pip install figaroh``; its identification functions, loaded without the
  package's ``__init__``, which imports its visualisation and optimisation stacks --
  meshcat, ndcurves, picos, numdifftools, pandas, rospkg -- none of which identification
  uses): ``build_regressor_basic`` (``pinocchio.computeJointTorqueRegressor`` in a Python
  loop), ``get_index_eliminate`` + ``build_regressor_reduced``, ``double_QR`` (base
  parameters and their OLS estimate), ``relative_stdev`` and ``weigthed_least_squares``
  (its WLS). When figaroh cannot be imported, the same algorithm written out with numpy
  (regressor loop, pivoted-QR base columns, lstsq, the same std and WLS formulas), and the
  output says so.
- jaxid: ``workflow.prepare`` + ``workflow.identify_experiment(method="wls")`` (regressor,
  base parameters, screening, Gautier's two-step WLS, covariance, physics report).

Measured in this process, interleaved, medians of --repeat (wall and CPU): warm calls (jaxid
compiled), FIGAROH also without its WLS step (its ``weigthed_least_squares`` builds a dense
(N n) x (N n) weight matrix; the OLS-only path is the fairer floor: regressor, base
parameters, OLS and std). Then cold processes: a fresh Python per run that imports, builds the model and
identifies once, jaxid with a warm persistent compilation cache (``JAXID_CACHE_DIR``, filled
by one run first), medians of --cold runs each, interleaved. Printed: seconds, the ratios
FIGAROH / jaxid (> 1: jaxid faster), and the accuracy of both: each estimate's error
against the true base parameters in its own standard deviations, the agreement of the two
estimates (FIGAROH's base parameters mapped onto jaxid's by the least-squares map between
the two base regressors), and torque errors against the noise-free torques. The two WLS
estimates differ by design: FIGAROH's ``weigthed_least_squares`` weighs joint j's rows by
1 / sigma_j, Gautier's two-step WLS (jaxid) by 1 / sigma_j^2 (Gauss-Markov).

Usage: python benchmarks/vs_figaroh.py [--repeat 5] [--cold 3]
Needs pin and example-robot-data (the ``bench`` extra adds figaroh); skips with a message
without them.

Its row in benchmarks/README.md lists its last figures; cited by ``jaxid/workflow/__init__.py``
and ``pyproject.toml``'s bench extra.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import warnings

import numpy as np

URDF = "ur_description/urdf/ur10_robot.urdf"
FS, SECONDS, NOISE, HARMONICS, F0 = 100.0, 10.0, 0.01, 5, 0.1


def load_figaroh():
    """FIGAROH's identification modules (regressor, qrdecomposition, identification_tools), or None.

    The package's ``__init__`` imports every subpackage eagerly (visualisation, calibration,
    optimal design, with their heavy dependencies); the identification modules import only
    numpy, scipy and pinocchio, so they are loaded as submodules of empty package objects."""
    spec = importlib.util.find_spec("figaroh")
    if spec is None or spec.origin is None:
        return None
    root = os.path.dirname(spec.origin)
    for pkg in ("figaroh", "figaroh.tools", "figaroh.identification"):
        if pkg not in sys.modules:
            mod = types.ModuleType(pkg)
            mod.__path__ = [os.path.join(root, *pkg.split(".")[1:])]
            sys.modules[pkg] = mod
    try:
        from figaroh.identification import identification_tools
        from figaroh.tools import qrdecomposition, regressor
    except ImportError:
        return None
    return types.SimpleNamespace(regressor=regressor, qr=qrdecomposition, tools=identification_tools)


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
def figaroh_identify(fig, model, q, qd, qdd, tau, wls=True):
    """FIGAROH's identification path. Returns (W_b (N*n, b) joint-major, phi_ols, phi_wls, rel_std %,
    phi_nominal): its base regressor, OLS and WLS estimates, OLS relative std and the true base values.
    wls=False stops after the OLS estimate and its std (phi_wls None): FIGAROH's
    ``weigthed_least_squares`` forms a dense (N n) x (N n) weight matrix, which dominates its time."""
    import pinocchio as pin

    n, N = model.nv, len(q)
    robot = types.SimpleNamespace(model=model, data=model.createData())
    config = {
        "has_friction": False,
        "is_joint_torques": True,
        "act_idxv": list(range(n)),
        "idx_tau_stop": [N * (j + 1) for j in range(n)],
    }
    tau_j = tau.T.reshape(-1)  # FIGAROH stacks joint-major: rows j*N .. j*N+N-1 are joint j
    if fig is None:  # its algorithm, written out
        W = np.zeros((N * n, 10 * n))
        for i in range(N):
            W[i::N] = pin.computeJointTorqueRegressor(model, robot.data, q[i], qd[i], qdd[i])
        keep = np.flatnonzero(np.sum(W**2, axis=0) >= 1e-6)
        W_e = W[:, keep]
        _, R, piv = __import__("scipy.linalg").linalg.qr(W_e, mode="economic", pivoting=True)
        rank = int(np.sum(np.abs(np.diag(R)) > 1e-8 * abs(R[0, 0])))
        W_b = W_e[:, np.sort(piv[:rank])]
        phi = np.linalg.lstsq(W_b, tau_j, rcond=None)[0]
        nominal = None
    else:
        from figaroh.identification.parameter import get_standard_parameters

        W = fig.regressor.build_regressor_basic(robot, q, qd, qdd, config)
        params_std = get_standard_parameters(model, config)
        idx_e, params_r = fig.regressor.get_index_eliminate(W, params_std, 1e-6)
        W_e = fig.regressor.build_regressor_reduced(W, idx_e)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            W_b, _, _, phi, nominal = fig.qr.double_QR(tau_j, W_e, params_r, params_std)
    r = tau_j - W_b @ phi
    sig2 = r @ r / (W_b.shape[0] - W_b.shape[1])  # relative_stdev's formula (Presse & Gautier 1991)
    rel_std = 100 * np.sqrt(np.diag(sig2 * np.linalg.inv(W_b.T @ W_b))) / np.abs(phi)
    if not wls:
        wls = None
        if fig is not None:
            rel_std = fig.tools.relative_stdev(W_b, phi, tau_j)
    elif fig is not None:
        rel_std = fig.tools.relative_stdev(W_b, phi, tau_j)
        wls = fig.tools.weigthed_least_squares(robot, phi, W_b, tau_j, W_b @ phi, config)
    else:  # weigthed_least_squares: per joint 1/sigma_j weights (its sigma_j = ||r_j|| / (N - b))
        s = np.array([np.linalg.norm(r[j * N : (j + 1) * N]) / (N - len(phi)) for j in range(n)])
        P = np.repeat(1.0 / s, N)
        wls = np.linalg.pinv(P[:, None] * W_b) @ (P * tau_j)
    return (
        W_b,
        np.asarray(phi),
        None if wls is None else np.asarray(wls),
        np.asarray(rel_std),
        None if nominal is None else np.asarray(nominal),
    )


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


def warm(fig, model, robot, sim, repeat):
    t, q, qd, qdd, tau = sim
    fns = {
        "figaroh": lambda: figaroh_identify(fig, model, q, qd, qdd, tau),
        "figaroh_ols": lambda: figaroh_identify(fig, model, q, qd, qdd, tau, wls=False),
        "jaxid": lambda: jaxid_identify(robot, t, q, qd, qdd, tau),
    }
    outs = {k: f() for k, f in fns.items()}  # warm-up (compiles jaxid)
    outs.pop("figaroh_ols")
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            times[k].append(timed(f)[1:])
    med = {k: tuple(float(np.median([x[i] for x in v])) for i in range(2)) for k, v in times.items()}
    return outs, med


def accuracy(model, robot, sim, clean, fig_out, params):
    """Errors of both estimates against the truth and against each other."""
    import jaxid

    t, q, qd, qdd, tau = sim
    N, n = q.shape
    W_b, phi_ols, phi_wls, _, _ = fig_out
    Wj = np.asarray(jaxid.regressor(robot, q, qd, qdd))[..., np.asarray(params.base.indices)]  # (N, n, b)
    Wj_joint = Wj.transpose(1, 0, 2).reshape(N * n, -1)  # joint-major, as FIGAROH's rows
    T = np.linalg.lstsq(Wj_joint, W_b, rcond=None)[0]  # jaxid base = T @ FIGAROH base
    true_b = np.asarray(params.base.to_base(robot.parameter_vector()))
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    clean_j = clean.T.reshape(-1)
    rel = lambda pred: float(np.sqrt(np.mean((pred - clean_j) ** 2)) / np.sqrt(np.mean(clean_j**2)))
    return dict(
        base_parameters=int(theta.size),
        figaroh_base_parameters=int(phi_ols.size),
        map_residual=float(np.linalg.norm(Wj_joint @ T - W_b) / np.linalg.norm(W_b)),
        jaxid_err_in_std=float(np.max(np.abs(theta - true_b) / std)),
        figaroh_wls_err_in_std=float(np.max(np.abs(T @ phi_wls - true_b) / std)),
        figaroh_ols_err_in_std=float(np.max(np.abs(T @ phi_ols - true_b) / std)),
        jaxid_vs_figaroh_wls_in_std=float(np.max(np.abs(theta - T @ phi_wls) / std)),
        torque_rel_rms_jaxid=rel(Wj_joint @ theta),
        torque_rel_rms_figaroh_wls=rel(W_b @ phi_wls),
        torque_rel_rms_figaroh_ols=rel(W_b @ phi_ols),
        torque_jaxid_vs_figaroh_wls=float(
            np.sqrt(np.mean((Wj_joint @ theta - W_b @ phi_wls) ** 2)) / np.sqrt(np.mean(clean_j**2))
        ),
    )


def child(which, path, urdf):
    """Cold process: import, build the model, identify once from the saved data; print the time.
    The FIGAROH child imports neither jax nor jaxid."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    d = np.load(path)
    sim = tuple(d[k] for k in ("t", "q", "qd", "qdd", "tau"))
    if which == "jaxid":
        from jaxid import cache

        cache.enable()
        jaxid_identify(jaxid_robot(), *sim)
    else:
        import pinocchio as pin

        model = pin.buildModelFromUrdf(urdf)
        figaroh_identify(load_figaroh(), model, *sim[1:])
    print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0)))


def cold(path, runs, cache_dir):
    import jaxid

    env = dict(os.environ, JAXID_CACHE_DIR=cache_dir)
    urdf = jaxid.models.example_robot_urdf(URDF)
    run = lambda w: json.loads(
        subprocess.run(
            [sys.executable, __file__, "--child", w, path, urdf], env=env, check=True, capture_output=True, text=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )

    # Process start (interpreter, imports) is part of what a user waits for: measured from outside.
    def outside(w):
        t0 = time.perf_counter()
        r = run(w)
        return dict(r, process=time.perf_counter() - t0)

    outside("jaxid")  # fills the persistent cache
    times = {"figaroh": [], "jaxid": []}
    for _ in range(runs):
        for w in times:
            times[w].append(outside(w))
    return {w: {k: float(np.median([x[k] for x in v])) for k in ("process", "wall", "cpu")} for w, v in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)
    try:
        import pinocchio  # noqa: F401

        import jaxid

        jaxid.models.example_robot_urdf(URDF)
    except (ImportError, FileNotFoundError) as e:
        print(f"skipped: this benchmark needs pin and example-robot-data ({e}); pip install 'jaxid[bench]'")
        return None
    fig = load_figaroh()
    baseline = (
        f"figaroh {importlib.metadata.version('figaroh')}"
        if fig
        else "FIGAROH's algorithm written out with numpy (figaroh not importable)"
    )
    print(f"baseline: {baseline}; load average {os.getloadavg()[0]:.2f}")
    model, t, q, qd, qdd, tau, clean = simulate()
    robot = jaxid_robot()
    sim = (t, q, qd, qdd, tau)
    outs, med = warm(fig, model, robot, sim, args.repeat)
    acc = accuracy(model, robot, sim, clean, outs["figaroh"], outs["jaxid"])
    load_warm = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ur10.npz")
        np.savez(path, t=t, q=q, qd=qd, qdd=qdd, tau=tau)
        cold_t = cold(path, args.cold, os.path.join(tmp, "xla")) if args.cold else None
    load_cold = os.getloadavg()[0]
    N, n = q.shape
    print(
        f"\nUR10, {N} samples x {n} joints ({SECONDS:g} s at {FS:g} Hz, {100 * NOISE:g} % noise), "
        f"{acc['base_parameters']} base parameters (FIGAROH {acc['figaroh_base_parameters']})"
    )
    print(f"warm, in-process, medians of {args.repeat} (load average {load_warm:.2f})")
    print(
        f"{'':>10} {'FIGAROH s':>10} {'jaxid s':>9} {'FIGAROH/jaxid':>14} {'FIGAROH OLS only s':>19} {'its ratio':>10}"
    )
    for i, kind in enumerate(("wall", "CPU")):
        f, j, o = med["figaroh"][i], med["jaxid"][i], med["figaroh_ols"][i]
        print(f"{kind:>10} {f:>10.4f} {j:>9.4f} {f / j:>14.2f} {o:>19.4f} {o / j:>10.2f}")
    if cold_t:
        print(
            f"cold process (jaxid with a warm persistent cache), medians of {args.cold} (load average {load_cold:.2f})"
        )
        for kind, label in (("process", "start-end"), ("wall", "in child"), ("cpu", "CPU child")):
            f, j = cold_t["figaroh"][kind], cold_t["jaxid"][kind]
            print(f"{label:>10} {f:>10.3f} {j:>9.3f} {f / j:>14.2f}")
    print("accuracy (std: jaxid's WLS standard deviations)")
    print(
        f"  max |error| / std vs the true base parameters: jaxid WLS {acc['jaxid_err_in_std']:.2f}, "
        f"FIGAROH WLS {acc['figaroh_wls_err_in_std']:.2f}, FIGAROH OLS {acc['figaroh_ols_err_in_std']:.2f}"
    )
    print(
        f"  max |jaxid - FIGAROH| / std (WLS): {acc['jaxid_vs_figaroh_wls_in_std']:.3f} "
        f"(base map residual {acc['map_residual']:.1e}); the two WLS differ by design: FIGAROH weighs joint j by "
        "1 / sigma_j, Gautier's two-step (jaxid) by 1 / sigma_j^2"
    )
    print(
        f"  torque rel. RMS error vs noise-free: jaxid {acc['torque_rel_rms_jaxid']:.2e}, FIGAROH WLS "
        f"{acc['torque_rel_rms_figaroh_wls']:.2e}, OLS {acc['torque_rel_rms_figaroh_ols']:.2e}; "
        f"jaxid vs FIGAROH {acc['torque_jaxid_vs_figaroh_wls']:.2e}"
    )
    out = dict(
        benchmark="vs_figaroh",
        baseline=baseline,
        samples=N,
        joints=n,
        load_warm=load_warm,
        load_cold=load_cold,
        warm={k: dict(wall=v[0], cpu=v[1]) for k, v in med.items()},
        warm_ratio_wall=med["figaroh"][0] / med["jaxid"][0],
        warm_ratio_wall_ols_only=med["figaroh_ols"][0] / med["jaxid"][0],
        cold=cold_t,
        accuracy=acc,
    )
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
