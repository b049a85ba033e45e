"""Validation metrics for predicted vs measured torques, and parameter errors.

Torque arrays have shape (N,) or (N, n): samples along axis 0, joints along axis 1.
Every torque metric takes ``axis``: the default ``axis=0`` reduces over samples and
returns one value per joint, shape (n,) (a scalar for (N,) input); ``axis=None`` pools
all joints into one overall value.  Means used for centring (``r2``) are always taken
per joint, over samples.  Percentages are in %.  Pure ``jnp``: jit- and vmap-able, and each
jitted (``axis`` static): on concrete arrays one compiled program per shape, not one per
``jnp`` operation.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def _err(real: ArrayLike, pred: ArrayLike) -> tuple[jax.Array, jax.Array]:
    real, pred = jnp.asarray(real), jnp.asarray(pred)
    if real.shape != pred.shape:
        raise ValueError(f"real and pred must have the same shape, got {real.shape} and {pred.shape}")
    return real, pred - real


@partial(jax.jit, static_argnames="axis")
def rmse(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> jax.Array:
    """Root-mean-square error sqrt(mean((pred - real)^2)), units of tau."""
    _, e = _err(real, pred)
    return jnp.sqrt(jnp.mean(e**2, axis=axis))


@partial(jax.jit, static_argnames="axis")
def nrmse(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> jax.Array:
    """RMSE normalised by the RMS of the measured torque, in %.

    Per joint j: 100 * rms(pred_j - real_j) / rms(real_j); overall (``axis=None``):
    100 * ||pred - real||_F / ||real||_F, i.e. normalised by the RMS over all joints.
    """
    real, e = _err(real, pred)
    return 100.0 * jnp.sqrt(jnp.sum(e**2, axis=axis) / jnp.sum(real**2, axis=axis))


@partial(jax.jit, static_argnames="axis")
def r2(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> jax.Array:
    """Coefficient of determination 1 - SSE / SST, SST about each joint's mean.

    Overall (``axis=None``): 1 - sum of SSE over joints / sum of SST over joints.
    """
    real, e = _err(real, pred)
    sst = jnp.sum((real - jnp.mean(real, axis=0)) ** 2, axis=axis)
    return 1.0 - jnp.sum(e**2, axis=axis) / sst


@partial(jax.jit, static_argnames="axis")
def wape(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> jax.Array:
    """Weighted absolute percentage error 100 * sum|pred - real| / sum|real|, in %."""
    real, e = _err(real, pred)
    return 100.0 * jnp.sum(jnp.abs(e), axis=axis) / jnp.sum(jnp.abs(real), axis=axis)


@partial(jax.jit, static_argnames="axis")
def max_pe(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> jax.Array:
    """Maximum percentage error 100 * max|pred - real| / mean|real|, in %."""
    real, e = _err(real, pred)
    return 100.0 * jnp.max(jnp.abs(e), axis=axis) / jnp.mean(jnp.abs(real), axis=axis)


@jax.jit
def nrms_limits(real: ArrayLike, pred: ArrayLike, tau_max: ArrayLike) -> jax.Array:
    """RMSE over the torque range [-tau_max, tau_max] per joint, 100 * RMSE_j / (2 tau_max_j), in %
    (the normalisation of the FloBaRoID toolbox, ``identification/helpers.py:getNRMSE``).
    tau_max: torque limits (n,), N m. Reduces over samples only (its mean over joints is the
    overall figure ``jaxid validate`` and ``jaxid crossval`` print)."""
    return 100.0 * rmse(real, pred) / (2.0 * jnp.asarray(tau_max))


@jax.jit
def relative_error(theta_est: ArrayLike, theta_true: ArrayLike) -> jax.Array:
    """Relative parameter error 100 * |est - true| / |true| per parameter, in %.

    theta_est (..., p) and theta_true (p,) or (..., p) broadcast against each other, so a
    stack of estimates (M, p) compares with one truth (p,); take ``.mean(-1)`` for the
    mean relative error.  A true value of 0 gives inf: compare base parameters or mask
    such entries.
    """
    est, true = jnp.asarray(theta_est), jnp.asarray(theta_true)
    if est.ndim == 0 or true.ndim == 0 or est.shape[-1] != true.shape[-1]:
        raise ValueError(
            f"theta_est {est.shape} and theta_true {true.shape}: expected (..., p) and (p,) "
            "or (..., p) with the same number of parameters p on the last axis"
        )
    try:
        jnp.broadcast_shapes(est.shape, true.shape)
    except ValueError:
        raise ValueError(f"theta_est {est.shape} and theta_true {true.shape} do not broadcast") from None
    return 100.0 * jnp.abs(est - true) / jnp.abs(true)


TORQUE_METRICS = {"rmse": rmse, "nrmse": nrmse, "r2": r2, "wape": wape, "max_pe": max_pe}


@jax.jit
def summary(real: ArrayLike, pred: ArrayLike) -> dict[str, dict[str, jax.Array]]:
    """All torque metrics: ``{name: {"per_joint": (n,) array, "overall": scalar}}``."""
    return {
        k: {"per_joint": f(real, pred, axis=0), "overall": f(real, pred, axis=None)} for k, f in TORQUE_METRICS.items()
    }
