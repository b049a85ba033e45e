"""Monte-Carlo studies: the Cramér-Rao bound in closed form, WLS spread at the bound,
a study sharded over two (host) devices equal to the unsharded one, and over two processes
(jax.distributed) equal to one."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from host_devices import run_on_two_host_devices

import jaxid  # noqa: F401  (float64)
from jaxid import hostdevices
from jaxid.study import cramer_rao, noise, run_study

N, n, b = 80, 3, 5
SIGMA = np.array([0.05, 0.2, 0.01])  # unequal per-joint noise: OLS is then not efficient
R = 400


def problem():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(N * n, b)) * np.array([1.0, 20.0, 0.1, 3.0, 0.5])
    theta = np.array([1.5, -0.2, 4.0, 0.7, -2.0])
    return W, theta


@pytest.fixture(scope="module")
def study():
    W, theta = problem()
    return run_study(W, theta, SIGMA, R, estimators={"wls": "wls", "ols": "ols"}, n_joints=len(SIGMA))


def test_cramer_rao_closed_form():
    W, _ = problem()
    w = 1 / np.tile(SIGMA, N) ** 2
    ref = np.sqrt(np.diag(np.linalg.inv(W.T @ (w[:, None] * W))))
    np.testing.assert_allclose(cramer_rao(W, SIGMA), ref, rtol=1e-10)


def test_wls_spread_matches_cramer_rao(study):
    s = study["wls"]
    assert s.estimates.shape == (R, b)
    # The sample std of R Gaussian estimates has relative standard error 1/sqrt(2(R-1))
    # (0.035 here); 4 of those bound all b ratios with probability > 0.999. Two-step WLS
    # estimates its weights, which costs O(1/N) efficiency (N = 80 samples per joint).
    tol = 4 / np.sqrt(2 * (R - 1)) + 2 / N
    np.testing.assert_array_less(np.abs(np.asarray(s.ratio) - 1), tol)
    np.testing.assert_array_less(np.abs(np.asarray(s.bias_z)), 4.0)  # unbiased
    # OLS shares the noise draws; the bound is a lower bound on its spread
    assert np.all(np.asarray(study["ols"].ratio) > 1 - 4 / np.sqrt(2 * (R - 1)))
    assert np.max(np.asarray(study["ols"].ratio)) > 1.5  # heteroscedastic noise costs OLS


SHARDED = textwrap.dedent("""
    import json, numpy as np, jax
    import jaxid
    from jaxid.study import run_study
    rng = np.random.default_rng(0)
    W = rng.normal(size=(60, 4)); theta = np.array([1.0, -2.0, 0.5, 3.0])
    kw = dict(estimators="ridge", key=jax.random.PRNGKey(3), batch_size=2, n_joints=2)
    sharded = run_study(W, theta, np.array([0.1, 0.3]), 11, **kw)   # 11 runs: padded to 12
    single = run_study(W, theta, np.array([0.1, 0.3]), 11, devices=jax.devices()[:1], **kw)
    # IRLS's batched QRs on two host devices at once deadlocked XLA:CPU's pool (20 runs never returned)
    big = rng.normal(size=(6000, 24))
    irls = run_study(big, rng.normal(size=24), np.linspace(0.1, 0.5, 6), 20, estimators="irls", n_joints=6)
    import os
    print(json.dumps(dict(devices=list(sharded.devices), scale=float(np.abs(single.estimates).max()),
                          xla_flags=os.environ["XLA_FLAGS"], irls_devices=list(irls.devices),
                          irls_finite=bool(np.all(np.isfinite(np.asarray(irls.estimates)))),
                          diff=float(np.abs(np.asarray(sharded.estimates) - np.asarray(single.estimates)).max()))))
""")


def test_several_host_devices_run_on_one():
    """Two host CPU devices in one process: run_study runs the vmapped estimators on the first
    (they share the cores, and jaxlib 0.10's batched LAPACK kernels deadlock when both run at
    once: this IRLS study hung before), with the single-device numbers."""
    # XLA:CPU's concurrency-optimised scheduler can lose a wake-up when two host devices run at
    # once (jaxlib 0.10): import jaxid switches it off (jaxid.hostdevices).
    res = run_on_two_host_devices(SHARDED, timeout=180)
    assert res["devices"] == res["irls_devices"] == ["cpu:0"] and res["irls_finite"]
    assert hostdevices.SCHEDULER_FLAG in res["xla_flags"]
    assert res["diff"] <= 1e-12 * res["scale"]


MULTIPROCESS = textwrap.dedent("""
    import json, sys, numpy as np, jax
    jax.distributed.initialize(coordinator_address=sys.argv[1], num_processes=2, process_id=int(sys.argv[2]))
    import jaxid
    from jaxid.study import run_study
    rng = np.random.default_rng(0)
    W = rng.normal(size=(60, 4)); theta = np.array([1.0, -2.0, 0.5, 3.0])
    s = run_study(W, theta, np.array([0.1, 0.3]), 11, estimators="ridge", key=jax.random.PRNGKey(3), batch_size=2, n_joints=2)
    print(json.dumps(dict(devices=list(s.devices), processes=jax.process_count(),
                          estimates=np.asarray(s.estimates).tolist())))
""")


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two processes start JAX and compile the study: about 25 s on 2 busy cores
def test_two_processes_equal_one():
    """jax.distributed over two local processes (CPU, gloo collectives): the runs are split
    over the two processes' devices and every process gets all the estimates, equal to the
    single-process study."""
    import jax

    env = dict(os.environ, JAX_PLATFORMS="cpu")
    address = f"127.0.0.1:{_free_port()}"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MULTIPROCESS, address, str(i)],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(2)
    ]
    try:
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    rng = np.random.default_rng(0)
    W = rng.normal(size=(60, 4))
    single = run_study(
        W,
        np.array([1.0, -2.0, 0.5, 3.0]),
        np.array([0.1, 0.3]),
        11,
        estimators="ridge",
        key=jax.random.PRNGKey(3),
        batch_size=2,
        devices=jax.devices()[:1],
        n_joints=2,
    )
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        res = json.loads(out.strip().splitlines()[-1])
        assert res["processes"] == 2 and len(res["devices"]) == 2
        np.testing.assert_allclose(res["estimates"], np.asarray(single.estimates), rtol=1e-12, atol=0)


def test_rejects_bad_input():
    W, theta = problem()
    with pytest.raises(ValueError, match="rank deficient"):
        run_study(np.concatenate([W, W[:, :1]], axis=1), np.append(theta, 1.0), SIGMA, 10, n_joints=3)
    with pytest.raises(ValueError, match="sigma"):
        run_study(W, theta, np.array([0.1, 0.0, 0.1]), 10)
    with pytest.raises(ValueError, match="n_runs"):
        run_study(W, theta, SIGMA, 1)
    # one std per row divides W's rows too: only the stated joint count catches it
    with pytest.raises(ValueError, match=r"sigma holds 1 noise std for a 3-joint robot"):
        run_study(W, theta, SIGMA[:1], 10, n_joints=len(SIGMA))
    with pytest.raises(ValueError, match="unknown estimator"):
        run_study(W, theta, SIGMA, 10, estimators="lasso", n_joints=3)


def test_factored_equals_per_run():
    """ols and two-step wls solve all runs against one factorisation of W (jaxid.study._factored);
    the estimates equal identify's, run by run, on the same noise draws: a small problem with
    unequal joint noise and a joint whose own rows miss two parameters (rank-deficient per-joint
    fit, as a wrist joint's)."""
    import jax
    import jax.numpy as jnp

    from jaxid.identification.estimators import identify
    from jaxid.study import _batched, _estimator

    rng = np.random.default_rng(1)
    N, n, b, R = 300, 3, 8, 50
    W = rng.normal(size=(N * n, b)) * np.logspace(-1, 2, b)
    W[1::n, :2] = 0.0  # joint 1 sees neither parameter 0 nor 1
    theta, sigma = rng.normal(size=b), np.array([0.05, 0.3, 0.01])
    key = jax.random.PRNGKey(5)
    fast = run_study(W, theta, sigma, R, estimators={"wls": "wls", "ols": "ols"}, n_joints=n, key=key)
    keys = jax.random.split(key, R)
    slow = _batched(
        {m: _estimator(m, n) for m in ("wls", "ols")},
        *(jnp.asarray(x) for x in (W, theta, sigma)),
        keys,
        tuple(jax.devices()[:1]),
        16,
    )
    for m in ("wls", "ols"):
        est, ref = np.asarray(fast[m].estimates), np.asarray(slow[m])
        assert est.shape == (R, b)
        np.testing.assert_array_less(np.abs(est - ref).max(axis=0), 1e-10 * np.abs(ref).max(axis=0))
    # and the first run by hand, through identify on the concrete noisy torques
    e = np.asarray(noise(keys[0], N, sigma))
    ref = identify(W, W @ theta + e, "wls", n_joints=n).theta
    np.testing.assert_allclose(fast["wls"].estimates[0], ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


TWO_DEVICES = textwrap.dedent("""
    import json, time, numpy as np, jax
    import jaxid
    from jaxid.study import run_study
    rng = np.random.default_rng(0)
    W = rng.normal(size=(1200, 12)); theta = rng.normal(size=12)
    t = time.perf_counter()
    s = run_study(W, theta, np.linspace(0.1, 0.5, 6), 1000, estimators={"wls": "wls", "ols": "ols"}, n_joints=6)
    print(json.dumps(dict(devices=len(jax.devices()), shape=list(s["wls"].estimates.shape),
                          ratio=float(np.median(np.asarray(s["wls"].ratio))), s=time.perf_counter() - t)))
""")


def test_two_host_devices_do_not_hang():
    """Deliver 5 of issue 38: with two host devices a 1000-run study hung in run_study (jaxlib
    0.10's batched LAPACK kernels block XLA:CPU's thread pool when two run at once, here one per
    device; 1000 runs of this 1200-row W hung, 200 finished). ols/wls now run their runs as one
    chain of solves on one device; in a subprocess that may not take more than 120 s."""
    res = run_on_two_host_devices(TWO_DEVICES, timeout=120)
    assert res["devices"] == 2 and res["shape"] == [1000, 12]
    assert abs(res["ratio"] - 1) < 0.2  # WLS at the Cramér-Rao bound
