"""Excitation trajectories (Fourier, multi-sine, S-curve) and their optimisation."""

from jaxid.excitation.optimize import (  # noqa: F401
    Excitation,
    Feasibility,
    check_limits,
    excitation_objective,
    optimize,
)
from jaxid.excitation.trajectories import fourier, fourier_period, multisine, random_multisine  # noqa: F401
