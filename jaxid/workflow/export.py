"""Identified parameters as a model file: consistent standard parameters ([`consistent_standard`][jaxid.workflow.export.consistent_standard])
and the URDF or MJCF written with them ([`write_model`][jaxid.workflow.export.write_model]). In the workflow layer, not the model's:
a new URDF is written by ``jaxid.identification.consistent.to_urdf``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxid import arrays
from jaxid.workflow.params import _NOMINAL_SOURCE, Params


def consistent_standard(robot, params: Params, nominal=None):
    """Standard parameters (p,) reproducing the base estimate, with the non-identifiable ones
    at their nominal values (``robot.parameter_vector()`` unless given), and whether every
    link of them is physically consistent (bool). Only then can a URDF be written. On the host
    (numpy): a few dozen numbers, where a compiled program cost a cold run 0.1 s."""
    from jaxid.identification.base import lift
    from jaxid.model import inertia

    nominal = np.asarray(robot.parameter_vector() if nominal is None else nominal, dtype=float)
    theta = lift(params.base, np.asarray(params.theta, dtype=float), nominal)
    return arrays.device(theta), bool(np.all(inertia.is_consistent(robot.split(theta)[0])))


def write_model(robot, theta, path, source=None, *, lump=False) -> Path:
    """Write ``robot`` with standard parameters ``theta`` (p,) — or the ``standard``
    parameters of a [`Params`][jaxid.workflow.params.Params] — as a model file; returns its path.

    With ``source`` (the URDF, or the MJCF ``.xml``, the robot was read from) the values go
    into a copy of that file, which otherwise keeps its visuals, collisions, frames and names:
    a URDF's ``<inertial>`` and ``<dynamics damping friction>`` (fv, fc;
    ``jaxid.model.urdf.write_back``), an MJCF's ``<inertial>`` and joint ``damping
    frictionloss armature`` (fv, fc, ia; ``jaxid.model.mjcf.write_back``). Without it, a new
    URDF of the model alone (``jaxid.identification.consistent.to_urdf``: fv, fc in ``<dynamics>``,
    placeholders for the limits the model does not have).
    Either way every body must be physically consistent. ``lump``: a URDF source's links merged
    into an identified one whose rest would not be consistent lose their ``<inertial>`` to it
    (``jaxid.model.urdf.write_back``) instead of being refused."""
    from jaxid.identification.consistent import to_urdf
    from jaxid.model import mjcf, urdf

    if isinstance(theta, Params):
        if theta.standard is None:
            raise ValueError(
                "these parameters hold base parameters only, which do not determine the links' "
                "inertial parameters; identify with consistent standard parameters "
                "('jaxid identify --consistent') to write a model file"
            )
        theta = theta.standard
    if source is None:
        return to_urdf(robot, theta, path)
    if Path(source).suffix.lower() == ".xml":
        if lump:
            raise ValueError("lump is for a URDF source; the MJCF write-back keeps welded bodies")
        return mjcf.write_back(robot, theta, source, path)
    return urdf.write_back(robot, theta, source, path, lump=lump)


def with_nominal_standard(robot, params: Params) -> Params:
    """``params`` with standard parameters when the base estimate with the non-identifiable ones at
    their nominal values is physically consistent ([`consistent_standard`][jaxid.workflow.export.consistent_standard]); else unchanged."""
    theta, ok = consistent_standard(robot, params)
    if not ok:
        return params
    return dataclasses.replace(params, standard=jnp.asarray(theta), standard_source=_NOMINAL_SOURCE)
