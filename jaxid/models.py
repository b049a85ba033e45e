"""Built-in models, the one public module for them: ``jaxid.models.ur5()``, ``puma560()``,
``planar(n)``, ``nonlinear_6dof()`` (with its terms ``NONLINEAR_6DOF_TERMS``), the path of a
shipped robot file (``example_robot_urdf``); and ``pose_bias(model)``, any model with a bias
that depends on the pose.

Not to be confused with ``jaxid.model`` (singular), the package of the model classes and
readers (``jaxid.Robot``, ``jaxid.model.urdf``, ``jaxid.model.dh``, ``jaxid.model.mjcf``, ...).
The built-ins are implemented in ``jaxid.model.library``; use them through this module, whose
names are the same objects.
"""

from jaxid.model.library import (
    NONLINEAR_6DOF_TERMS,
    Nonlinear6DOF,
    example_robot_urdf,
    nonlinear_6dof,
    planar,
    puma560,
    ur5,
)
from jaxid.model.pose_bias import PoseBias, pose_bias

__all__ = [
    "ur5",
    "puma560",
    "planar",
    "nonlinear_6dof",
    "Nonlinear6DOF",
    "NONLINEAR_6DOF_TERMS",
    "example_robot_urdf",
    "pose_bias",
    "PoseBias",
]
