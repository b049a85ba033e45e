"""The direction of gravity identified from prepared runs ([`fit_gravity`][jaxid.workflow.gravity.fit_gravity])."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxid.workflow.preprocess import Prepared
from jaxid.workflow.records import WorkflowError


def fit_gravity(robot, prepared: Prepared):
    """(robot, doc): the robot under the direction of gravity identified from all samples of
    the prepared runs (``jaxid.identification.gravity.fit_gravity``: base parameters and joint
    terms eliminated), and its record ``{"vector" (3,) m/s^2, "tilt_deg" from the model's,
    "nll_drop" (the log-likelihood gained, 2 degrees of freedom), "converged"}``."""
    import jax.numpy as jnp

    from jaxid.identification.gravity import fit_gravity as fit

    stacked = [
        np.concatenate([np.asarray(getattr(d, k)) for d in prepared.datasets]) for k in ("q", "qd", "qdd", "tau")
    ]
    try:
        g = fit(robot, *stacked)
    except ValueError as e:
        raise WorkflowError(f"fitting the direction of gravity: {e}") from None
    return dataclasses.replace(robot, gravity=jnp.asarray(g.gravity)), {
        "vector": g.gravity.tolist(),
        "tilt_deg": g.tilt_deg,
        "nll_drop": g.cost_nominal - g.cost,
        "converged": g.converged,
    }
