"""The six-DOF article's details (seed 000, issue 35): the raw measured velocity in the regressor
(``signals.velocity_derivatives(..., velocity="raw")``) and the unscaled cond(Phi^T Phi) with its
rule of thumb (< 1e3 good, > 1e6 poor) beside the column-scaled cond."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxid import data, signals, workflow
from jaxid.identification import streaming
from jaxid.workflow.screen import Rows


def test_raw_velocity_is_the_measured_one_and_the_acceleration_the_smoothed_ones():
    dt = 0.01
    t = np.arange(400) * dt
    qd = np.stack([np.sin(2 * t), np.cos(3 * t)], 1) + np.random.default_rng(0).normal(0, 0.01, (400, 2))
    qd_s, qdd_s = signals.velocity_derivatives(qd, dt, 31, 3)
    qd_r, qdd_r = signals.velocity_derivatives(qd, dt, 31, 3, velocity="raw")
    np.testing.assert_array_equal(np.asarray(qd_r), qd)  # unsmoothed
    np.testing.assert_array_equal(np.asarray(qdd_r), np.asarray(qdd_s))  # from the smoothed velocity
    assert np.std(np.asarray(qd_s) - qd) > 0.005  # the smoothing removed the noise the raw one keeps
    with pytest.raises(ValueError, match="'smoothed' or 'raw'"):
        signals.velocity_derivatives(qd, dt, 31, 3, velocity="filtered")


def test_gram_condition_is_the_unscaled_square_and_streamed_rows_agree():
    """cond(Phi^T Phi) = (s_max / s_min)^2 of the unscaled Phi, whatever the column scaling would
    give: two columns 1e-2 apart in scale are cond^2 ~ 1e4 unscaled (marginal) though orthogonal
    (scaled cond 1); the R factors of the same rows (streamed) give the same figure."""
    rng = np.random.default_rng(1)
    n, N, b = 2, 200, 3
    Q, _ = np.linalg.qr(rng.normal(size=(n * N, b)))
    W = Q * np.array([1.0, 0.3, 1e-2])  # orthogonal columns: singular values 1, 0.3, 0.01
    tau = rng.normal(size=n * N)
    held = Rows(moving=np.ones(N, bool), stream=False, W=W, tau=tau, Wb=W)
    c = workflow.gram_condition(held, SimpleNamespace(reduced=None))
    assert c == pytest.approx(1e4, rel=1e-10)
    # Beyond GRAM_EXACT the formed Gram matrix would lose the small eigenvalue: the SVD decides.
    deep = Rows(moving=held.moving, stream=False, W=W, tau=tau, Wb=Q * np.array([1.0, 0.3, 1e-6]))
    assert workflow.gram_condition(deep, SimpleNamespace(reduced=None)) == pytest.approx(1e12, rel=1e-8)
    red = streaming.update(
        streaming.Reduced.empty(n, b), jnp.asarray(W.reshape(N, n, b)), jnp.asarray(tau.reshape(N, n))
    )
    streamed = workflow.gram_condition(Rows(moving=held.moving, stream=True), SimpleNamespace(reduced=red))
    assert streamed == pytest.approx(c, rel=1e-8)
    assert workflow.condition_rating(c).startswith("marginal")
    assert workflow.condition_rating(999.0).startswith("good")
    assert workflow.condition_rating(2e6).startswith("poor")
    assert workflow.condition_rating(float("nan")) == "unknown"


def test_identify_records_and_prints_the_unscaled_condition(tmp_path, capsys):
    """identify_experiment stores cond(Phi^T Phi) of its base regressor in params.json (estimation
    .cond_gram) and `jaxid identify` prints it with its rating beside the scaled cond."""
    robot, desc = workflow.model(builtin="planar2", joint_terms=("fv", "fc"))
    t = np.arange(0.0, 8.0, 0.01)
    w = 2 * np.pi * np.array([0.25, 0.5, 0.75])
    a = np.random.default_rng(2).normal(size=(3, 2)) * 0.6
    s, co = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q, qd, qdd = s @ a, (co * w) @ a, (-s * w**2) @ a
    theta = robot.parameter_vector()
    tau = np.asarray(jax.vmap(lambda *x: robot.torque(theta, *x))(q, qd, qdd))
    ds = data.from_arrays(t, q, tau + np.random.default_rng(3).normal(0, 1e-3, tau.shape), qd, qdd)
    params = workflow.identify_experiment(robot, workflow.prepare([ds], robot), description=desc)
    c = params.estimation.cond_gram
    assert c is not None and np.isfinite(c) and c >= 1.0
    path = workflow.save_params(tmp_path / "p.json", params)
    assert workflow.load_params(path).estimation.cond_gram == c
    from jaxid.cli import main

    data.write(ds, tmp_path / "run.csv")
    assert (
        main(
            [
                "identify",
                "--robot",
                "planar2",
                "--joint-terms",
                "fv,fc",
                str(tmp_path / "run.csv"),
                "-o",
                str(tmp_path / "q.json"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "cond(Phi^T Phi) = " in out and "(column-scaled)" in out
    assert workflow.condition_rating(c).split(" ")[0] in out
