"""Validation metrics against their closed forms."""

import warnings

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import bounded

import jaxid  # noqa: F401  (float64)
from jaxid import metrics


@st.composite
def torques(draw):
    """(real, pred) (50, 3): per-joint scales, offsets and prediction errors drawn, the samples
    from a drawn seed."""
    scale, offset = draw(bounded((3,), 0.1, 10.0)), draw(bounded((3,), -5.0, 5.0))
    error = draw(bounded((3,), 0.01, 1.0))  # relative to the scale
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    real = rng.normal(size=(50, 3)) * scale + offset
    return real, real + rng.normal(size=real.shape) * error * scale


@given(torques())
def test_per_joint_and_overall_closed_forms(data):
    real, pred = data
    e = pred - real
    np.testing.assert_allclose(metrics.rmse(real, pred), np.sqrt((e**2).mean(0)))
    np.testing.assert_allclose(metrics.rmse(real, pred, axis=None), np.sqrt((e**2).mean()))
    np.testing.assert_allclose(metrics.nrmse(real, pred), 100 * np.sqrt((e**2).mean(0) / (real**2).mean(0)))
    np.testing.assert_allclose(metrics.nrmse(real, pred, axis=None), 100 * np.linalg.norm(e) / np.linalg.norm(real))
    np.testing.assert_allclose(metrics.wape(real, pred), 100 * np.abs(e).sum(0) / np.abs(real).sum(0))
    np.testing.assert_allclose(metrics.wape(real, pred, axis=None), 100 * np.abs(e).sum() / np.abs(real).sum())
    np.testing.assert_allclose(metrics.max_pe(real, pred), 100 * np.abs(e).max(0) / np.abs(real).mean(0))
    np.testing.assert_allclose(metrics.max_pe(real, pred, axis=None), 100 * np.abs(e).max() / np.abs(real).mean())
    sst = ((real - real.mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(metrics.r2(real, pred), 1 - (e**2).sum(0) / sst)
    np.testing.assert_allclose(metrics.r2(real, pred, axis=None), 1 - (e**2).sum() / sst.sum())
    # sklearn-free cross-check of r2 per joint: squared correlation for a least-squares fit
    for j in range(3):
        fit = np.polyval(np.polyfit(pred[:, j], real[:, j], 1), pred[:, j])
        np.testing.assert_allclose(metrics.r2(real[:, j], fit), np.corrcoef(pred[:, j], real[:, j])[0, 1] ** 2)


@given(torques())
def test_limiting_cases(data):
    real, _ = data
    np.testing.assert_allclose(metrics.r2(real, real), 1.0)
    np.testing.assert_allclose(metrics.r2(real, np.broadcast_to(real.mean(0), real.shape)), 0.0, atol=1e-12)
    np.testing.assert_allclose(metrics.nrmse(real, np.zeros_like(real)), 100.0)
    np.testing.assert_allclose(metrics.wape(real, 2 * real), 100.0)
    assert metrics.rmse(real[:, 0], real[:, 0] + 1).shape == ()  # (N,) input -> scalar


def test_relative_error():
    est, true = np.array([1.1, -2.0, 0.3]), np.array([1.0, -2.5, 0.3])
    np.testing.assert_allclose(metrics.relative_error(est, true), [10.0, 20.0, 0.0])
    np.testing.assert_allclose(metrics.relative_error(est, true).mean(), 10.0)
    # A stack of estimates against one truth: row k is the k-th estimate's error.
    stack = np.stack([est, true, 2 * true])
    np.testing.assert_allclose(metrics.relative_error(stack, true), [[10.0, 20.0, 0.0], [0.0] * 3, [100.0] * 3])
    with pytest.raises(ValueError, match="number of parameters"):
        metrics.relative_error(est, true[:2])


@given(torques())
def test_summary_is_jittable(data):
    real, pred = data
    s = jax.jit(metrics.summary)(real, pred)
    assert set(s) == {"rmse", "nrmse", "r2", "wape", "max_pe"}
    for k, v in s.items():
        assert v["per_joint"].shape == (3,) and v["overall"].shape == ()
        np.testing.assert_allclose(v["per_joint"], getattr(metrics, k)(real, pred))
        # concrete arguments: numpy on the host, the same values as the traced program's
        host = metrics.summary(real, pred)[k]
        assert isinstance(host["per_joint"], np.ndarray)
        np.testing.assert_allclose(host["overall"], v["overall"], rtol=1e-13)
    # a zero denominator is inf or NaN, silently, as under jit
    zero = np.zeros_like(real)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (
            np.all(np.isnan(metrics.nrmse(zero, zero)))
            and np.isinf(metrics.relative_error(1.0 + zero[0], zero[0])).all()
        )


def test_shape_mismatch_raises():
    real, pred = np.ones((50, 3)), np.ones((49, 3))
    with pytest.raises(ValueError, match="same shape"):
        metrics.rmse(real, pred)
