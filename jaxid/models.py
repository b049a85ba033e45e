"""Built-in models: ``jaxid.models.ur5()``, ``puma560()``, ``planar(n)``, ``nonlinear_6dof()``; and
``pose_bias(model)``, any model with a bias that depends on the pose."""

from jaxid.model.library import (  # noqa: F401
    Nonlinear6DOF,
    example_robot_urdf,
    nonlinear_6dof,
    planar,
    puma560,
    ur5,
)
from jaxid.model.pose_bias import PoseBias, pose_bias  # noqa: F401
