"""Friction models: static joint friction and the joint regressor basis
(``jaxid.friction.models``), LuGre dynamic friction (``jaxid.friction.lugre``).

``jaxid.friction.lugre_joint_torque`` is the LuGre torque of every joint of an arm along a
trajectory (its bristle states integrated). ``jaxid.friction.stribeck`` is the LuGre
steady-state curve; the static Stribeck model of a
joint is ``jaxid.friction.models.stribeck``.
"""

from jaxid.friction import lugre, models
from jaxid.friction.lugre import LuGre, integration_steps, reference_parameters, simulate, stribeck
from jaxid.friction.lugre import joint_torque as lugre_joint_torque
from jaxid.friction.models import (
    JOINT_BASIS,
    JOINT_TERMS,
    asymmetric,
    asymmetric_from_terms,
    asymmetric_terms,
    coulomb,
    joint_basis,
    smooth_sign,
    stribeck_column,
    viscous,
)

__all__ = [
    "lugre",
    "models",
    "LuGre",
    "lugre_joint_torque",
    "integration_steps",
    "reference_parameters",
    "simulate",
    "stribeck",
    "JOINT_BASIS",
    "JOINT_TERMS",
    "asymmetric",
    "asymmetric_from_terms",
    "asymmetric_terms",
    "coulomb",
    "joint_basis",
    "smooth_sign",
    "stribeck_column",
    "viscous",
]
