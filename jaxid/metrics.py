"""Validation metrics for predicted vs measured torques, and parameter errors.

Torque arrays have shape (N,) or (N, n): samples along axis 0, joints along axis 1.
Every torque metric takes ``axis``: the default ``axis=0`` reduces over samples and
returns one value per joint, shape (n,) (a scalar for (N,) input); ``axis=None`` pools
all joints into one overall value.  Means used for centring (``r2``) are always taken
per joint, over samples.  Percentages are in %.  Each metric computes with the namespace of its
arguments (``jaxid.arrays.namespace``): traced (inside ``jax.jit``, ``vmap`` or a gradient) with
``jax.numpy``, concrete with numpy, returning numpy values: a record of a new length then costs no
compiled program (one per shape and metric, 20-100 ms each, when they were jitted).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import numpy as np
from jax.typing import ArrayLike

from jaxid.arrays import AnyArray, namespace

P = ParamSpec("P")
R = TypeVar("R")


def _quiet(fn: Callable[P, R]) -> Callable[P, R]:
    """fn without numpy's division warnings: like jax.numpy, a zero denominator gives inf or NaN
    (the documented value, e.g. ``relative_error`` of a true 0) silently."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(*args, **kwargs)

    return call


def _err(real: ArrayLike, pred: ArrayLike) -> tuple[Any, Any, Any]:
    """(xp, real, pred - real) in the namespace xp of the arguments."""
    xp = namespace(real, pred)
    r: Any = xp.asarray(real, dtype=float)
    p: Any = xp.asarray(pred, dtype=float)
    if r.shape != p.shape:
        raise ValueError(f"real and pred must have the same shape, got {r.shape} and {p.shape}")
    return xp, r, p - r


@_quiet
def rmse(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> AnyArray:
    """Root-mean-square error sqrt(mean((pred - real)^2)), units of tau."""
    xp, _, e = _err(real, pred)
    return xp.sqrt(xp.mean(e**2, axis=axis))


@_quiet
def nrmse(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> AnyArray:
    """RMSE normalised by the RMS of the measured torque, in %.

    Per joint j: 100 * rms(pred_j - real_j) / rms(real_j); overall (``axis=None``):
    100 * ||pred - real||_F / ||real||_F, i.e. normalised by the RMS over all joints.
    """
    xp, real, e = _err(real, pred)
    return 100.0 * xp.sqrt(xp.sum(e**2, axis=axis) / xp.sum(real**2, axis=axis))


@_quiet
def r2(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> AnyArray:
    """Coefficient of determination 1 - SSE / SST, SST about each joint's mean.

    Overall (``axis=None``): 1 - sum of SSE over joints / sum of SST over joints.
    """
    xp, real, e = _err(real, pred)
    sst = xp.sum((real - xp.mean(real, axis=0)) ** 2, axis=axis)
    return 1.0 - xp.sum(e**2, axis=axis) / sst


@_quiet
def wape(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> AnyArray:
    """Weighted absolute percentage error 100 * sum|pred - real| / sum|real|, in %."""
    xp, real, e = _err(real, pred)
    return 100.0 * xp.sum(xp.abs(e), axis=axis) / xp.sum(xp.abs(real), axis=axis)


@_quiet
def max_pe(real: ArrayLike, pred: ArrayLike, axis: int | None = 0) -> AnyArray:
    """Maximum percentage error 100 * max|pred - real| / mean|real|, in %."""
    xp, real, e = _err(real, pred)
    return 100.0 * xp.max(xp.abs(e), axis=axis) / xp.mean(xp.abs(real), axis=axis)


@_quiet
def nrms_limits(real: ArrayLike, pred: ArrayLike, tau_max: ArrayLike) -> AnyArray:
    """RMSE over the torque range [-tau_max, tau_max] per joint, 100 * RMSE_j / (2 tau_max_j), in %
    (the normalisation of the FloBaRoID toolbox, ``identification/helpers.py:getNRMSE``).
    tau_max: torque limits (n,), N m. Reduces over samples only (its mean over joints is the
    overall figure ``jaxid validate`` and ``jaxid crossval`` print)."""
    xp = namespace(real, pred, tau_max)
    return 100.0 * rmse(real, pred) / (2.0 * xp.asarray(tau_max, dtype=float))


@_quiet
def relative_error(theta_est: ArrayLike, theta_true: ArrayLike) -> AnyArray:
    """Relative parameter error 100 * |est - true| / |true| per parameter, in %.

    theta_est (..., p) and theta_true (p,) or (..., p) broadcast against each other, so a
    stack of estimates (M, p) compares with one truth (p,); take ``.mean(-1)`` for the
    mean relative error.  A true value of 0 gives inf: compare base parameters or mask
    such entries.
    """
    xp = namespace(theta_est, theta_true)
    est, true = xp.asarray(theta_est, dtype=float), xp.asarray(theta_true, dtype=float)
    if est.ndim == 0 or true.ndim == 0 or est.shape[-1] != true.shape[-1]:
        raise ValueError(
            f"theta_est {est.shape} and theta_true {true.shape}: expected (..., p) and (p,) "
            "or (..., p) with the same number of parameters p on the last axis"
        )
    try:
        np.broadcast_shapes(est.shape, true.shape)
    except ValueError:
        raise ValueError(f"theta_est {est.shape} and theta_true {true.shape} do not broadcast") from None
    return 100.0 * xp.abs(est - true) / xp.abs(true)


TORQUE_METRICS = {"rmse": rmse, "nrmse": nrmse, "r2": r2, "wape": wape, "max_pe": max_pe}


@_quiet
def summary(real: ArrayLike, pred: ArrayLike) -> dict[str, dict[str, AnyArray]]:
    """All torque metrics: ``{name: {"per_joint": (n,) array, "overall": scalar}}``."""
    return {
        k: {"per_joint": f(real, pred, axis=0), "overall": f(real, pred, axis=None)} for k, f in TORQUE_METRICS.items()
    }
