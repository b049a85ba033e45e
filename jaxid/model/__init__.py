"""The model classes and readers: ``Robot`` (``jaxid.model.robot``, also ``jaxid.Robot``), the
URDF, MJCF, DH and Pinocchio readers and writers, inertia, transmissions, geometry.

The built-in robots (UR5, PUMA 560, planar arms, the six-DOF system) are ``jaxid.models``
(plural), the one public module for them; ``jaxid.model.library`` implements them.
"""
