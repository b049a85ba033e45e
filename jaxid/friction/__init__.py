"""Friction models: LuGre dynamic friction (``jaxid.friction.lugre``)."""
from jaxid.friction import lugre
from jaxid.friction.lugre import LuGre, integration_steps, reference_parameters, simulate, stribeck

__all__ = ["lugre", "LuGre", "integration_steps", "reference_parameters", "simulate", "stribeck"]
