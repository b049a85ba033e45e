"""Excitation trajectories and their optimisation."""
