"""Built-in models: ``jaxid.models.ur5()``, ``puma560()``, ``planar(n)``, ``nonlinear_6dof()``."""

from jaxid.model.library import (  # noqa: F401
    Nonlinear6DOF,
    example_robot_urdf,
    nonlinear_6dof,
    planar,
    puma560,
    ur5,
)
