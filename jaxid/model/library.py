"""Built-in models: the UR5, the PUMA 560, planar n-R arms and the six-DOF nonlinear benchmark system."""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxid.model import inertia
from jaxid.model.robot import Robot

# Universal Robots' published DH parameters and masses for the UR5 (CB3).
UR5_DH = np.array(
    [  # theta_offset, d, a, alpha
        [0.0, 0.089159, 0.0, np.pi / 2],
        [0.0, 0.0, -0.425, 0.0],
        [0.0, 0.0, -0.39225, 0.0],
        [0.0, 0.10915, 0.0, np.pi / 2],
        [0.0, 0.09465, 0.0, -np.pi / 2],
        [0.0, 0.0823, 0.0, 0.0],
    ]
)
UR5_MASSES = np.array([3.7, 8.393, 2.33, 1.219, 1.219, 0.1879])
UR5_COMS = np.array(
    [
        [0.0, -0.02561, 0.00193],
        [0.2125, 0.0, 0.11336],
        [0.15, 0.0, 0.0265],
        [0.0, -0.0018, 0.01634],
        [0.0, 0.0018, 0.01634],
        [0.0, 0.0, -0.001159],
    ]
)
# Inertia approximation: uniform solid cylinders (radius, length, axis in the DH frame).
UR5_CYLINDERS = [
    (0.06, 0.15, 1),
    (0.06, 0.425, 0),
    (0.05, 0.39225, 0),
    (0.045, 0.12, 1),
    (0.045, 0.12, 1),
    (0.0375, 0.0345, 2),
]


def ur5(joint_terms: Sequence[str] = (), joint_params: ArrayLike | None = None) -> Robot:
    """The Universal Robots UR5 from its published standard DH table and link masses.

    DH: d1 = 0.089159, a2 = -0.425, a3 = -0.39225, d4 = 0.10915, d5 = 0.09465,
    d6 = 0.0823 m; alpha = [pi/2, 0, 0, pi/2, -pi/2, 0]. Masses [3.7, 8.393, 2.33,
    1.219, 1.219, 0.1879] kg; centres of mass in the DH link frames as published by UR.
    UR publishes no inertia tensors: each link is approximated by a uniform solid
    cylinder about its centre of mass (shoulder, wrist links: r = 0.06 / 0.045 m along the
    joint axis; upper arm and forearm: r = 0.06 / 0.05 m along the link, the lengths of
    a2, a3; flange: a disc r = 0.0375 m).
    Limits: +-2 pi rad, pi rad/s, 15 rad/s^2 (a conservative figure: UR states no
    hardware acceleration limit), torques 150, 150, 150, 28, 28, 28 N m.
    joint_terms: per-joint terms to enable, e.g. ("fv", "fc"), with values joint_params (n, k).
    """
    inertias = [inertia.cylinder_inertia(m, r, L, ax) for m, (r, L, ax) in zip(UR5_MASSES, UR5_CYLINDERS)]
    limits = dict(
        q_min=-2 * np.pi,
        q_max=2 * np.pi,
        qd_max=np.pi,
        qdd_max=15.0,
        tau_max=np.array([150.0, 150.0, 150.0, 28.0, 28.0, 28.0]),
    )
    return Robot.from_dh(
        UR5_DH,
        "standard",
        masses=UR5_MASSES,
        coms=UR5_COMS,
        inertias=np.stack(inertias),
        limits=limits,
        joint_terms=joint_terms,
        joint_params=joint_params,
        names=("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"),
        name="ur5",
    )


# The PUMA 560 as Corke's Robotics Toolbox models it (mdl_puma560): standard DH, the dynamic
# parameters of Armstrong, Khatib and Burdick (1986) as compiled by Corke and
# Armstrong-Helouvry (1994).
PUMA560_DH = np.array(
    [  # theta_offset, d, a, alpha
        [0.0, 0.0, 0.0, np.pi / 2],
        [0.0, 0.0, 0.4318, 0.0],
        [0.0, 0.15005, 0.0203, -np.pi / 2],
        [0.0, 0.4318, 0.0, np.pi / 2],
        [0.0, 0.0, 0.0, -np.pi / 2],
        [0.0, 0.0, 0.0, 0.0],
    ]
)
# Link 1: the source gives m = 0 and only Iyy = 0.35 (about the joint-1 axis, y in DH frame 1).
# Neither the mass nor Ixx, Izz of link 1 enters any joint torque (its centre of mass lies on
# the fixed vertical axis 1 and it only turns about that axis), so they are free to be chosen:
# a uniform solid cylinder about y, r = 0.2 m, L = 0.3 m, with the published Iyy gives
# m = 2 Iyy / r^2 = 17.5 kg -- assumed, not measured -- and a rigid body.
PUMA560_LINK1_CYLINDER = (0.2, 0.3, 1)  # radius, length m, axis in DH frame 1
PUMA560_MASSES = np.array([2 * 0.35 / 0.2**2, 17.4, 4.8, 0.82, 0.34, 0.09])
PUMA560_COMS = np.array(
    [
        [0.0, 0.0, 0.0],
        [-0.3638, 0.006, 0.2275],
        [-0.0203, -0.0141, 0.070],
        [0.0, 0.019, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.032],
    ]
)
PUMA560_INERTIAS = np.array(
    [  # principal moments Ixx, Iyy, Izz about the centre of mass, DH link frames
        [np.nan, 0.35, np.nan],  # Ixx, Izz from PUMA560_LINK1_CYLINDER
        [0.13, 0.524, 0.539],
        [0.074, 0.086, 0.0125],  # published Ixx 0.066: see puma560()
        [1.8e-3, 1.3e-3, 1.8e-3],
        [0.3e-3, 0.4e-3, 0.3e-3],
        [0.15e-3, 0.15e-3, 0.04e-3],
    ]
)
#: Gear ratios, motor to joint (signed: the motor's positive direction), from mdl_puma560.
PUMA560_GEAR = np.array([-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686])
#: Motor torque constants, N m/A: plausible values (about 0.2 N m/A for the large motors of
#: joints 1-3, smaller for the wrist), not taken from the sources above.
PUMA560_KM = np.array([0.2, 0.2, 0.2, 0.07, 0.07, 0.07])


def puma560(joint_terms: Sequence[str] = (), joint_params: ArrayLike | None = None) -> Robot:
    """The Unimation PUMA 560: standard DH table and dynamic parameters of Armstrong, Khatib
    and Burdick, "The explicit dynamic model and inertial parameters of the PUMA 560 arm",
    ICRA 1986, as compiled in Corke and Armstrong-Helouvry, "A search for consensus among
    model parameters reported for the PUMA 560 robot", ICRA 1994 (the values of Corke's
    Robotics Toolbox ``mdl_puma560``).

    DH (theta, d, a, alpha): (0, 0, 0, pi/2), (0, 0, 0.4318, 0), (0, 0.15005, 0.0203, -pi/2),
    (0, 0.4318, 0, pi/2), (0, 0, 0, -pi/2), (0, 0, 0, 0); the flange is the wrist centre.
    Masses [m1, 17.4, 4.8, 0.82, 0.34, 0.09] kg, centres of mass and principal inertias
    (about the centre of mass, DH link frames) as published.
    Two of the source's inertias are not rigid bodies (jaxid's check, the triangle inequality,
    refuses them) and are changed:
    link 1 has m = 0 and inertia diag(0, 0.35, 0) kg m^2; only its Iyy (about joint axis 1)
    affects any joint torque, so m1 = 17.5 kg and Ixx = Izz = 0.306 kg m^2 are assumed, a uniform
    cylinder r = 0.2 m, L = 0.3 m about y with the published Iyy (no torque changes). Link 3's
    published (0.066, 0.086, 0.0125) kg m^2 give 0.066 + 0.0125 < 0.086; its Ixx is raised to
    0.074 (the bound is 0.0735), which changes the torques a little. Motor rotor inertias (the
    source's Jm, times G^2) are not included; enable "ia" in joint_terms for them.
    Limits: joint ranges +-160, -45..225, -225..45, -110..170, -100..100, -266..266 deg as in
    the Python Robotics Toolbox's Puma560 (joints 1-2 checked there, 3-6 as recalled); 2 rad/s,
    10 rad/s^2 and torques 100, 190, 90, 25, 20, 20 N m are plausible figures, not from the
    sources. Gear ratios ``PUMA560_GEAR`` (source) and motor torque constants ``PUMA560_KM``
    (plausible, N m/A) convert motor currents to joint torques,
    ``tau = PUMA560_KM * PUMA560_GEAR * current`` (the gains of ``jaxid.data.read``).
    joint_terms: per-joint terms to enable, e.g. ("fv", "fc"), with values joint_params (n, k).
    """
    r, L, ax = PUMA560_LINK1_CYLINDER
    inertias = np.stack([np.diag(d) for d in PUMA560_INERTIAS])
    inertias[0] = np.asarray(inertia.cylinder_inertia(PUMA560_MASSES[0], r, L, ax))
    deg = np.pi / 180
    limits = dict(
        q_min=deg * np.array([-160.0, -45.0, -225.0, -110.0, -100.0, -266.0]),
        q_max=deg * np.array([160.0, 225.0, 45.0, 170.0, 100.0, 266.0]),
        qd_max=2.0,
        qdd_max=10.0,
        tau_max=np.array([100.0, 190.0, 90.0, 25.0, 20.0, 20.0]),
    )
    return Robot.from_dh(
        PUMA560_DH,
        "standard",
        masses=PUMA560_MASSES,
        coms=PUMA560_COMS,
        inertias=inertias,
        limits=limits,
        joint_terms=joint_terms,
        joint_params=joint_params,
        names=("waist", "shoulder", "elbow", "wrist_1", "wrist_2", "wrist_3"),
        name="puma560",
    )


def planar(
    n: int = 2, lengths: ArrayLike | None = None, masses: ArrayLike | None = None, gravity: float = 9.81
) -> Robot:
    """An n-link planar revolute arm moving in the vertical x-y plane, gravity along -y.

    Links are uniform thin rods of length l_i (default 1 m) and mass m_i (default 1 kg),
    centre of mass at mid-length, inertia m l^2 / 12 about the centre (z axis).
    """
    lengths = np.ones(n) if lengths is None else np.asarray(lengths, dtype=float).reshape(n)
    masses = np.ones(n) if masses is None else np.asarray(masses, dtype=float).reshape(n)
    table = np.stack([np.zeros(n), np.zeros(n), lengths, np.zeros(n)], axis=1)
    coms = np.stack([-lengths / 2, np.zeros(n), np.zeros(n)], axis=1)  # DH frame i sits at the link's tip
    inertias = np.stack([np.diag([0.0, m * l**2 / 12, m * l**2 / 12]) for m, l in zip(masses, lengths)])
    return Robot.from_dh(
        table, "standard", masses=masses, coms=coms, inertias=inertias, gravity=(0.0, -gravity, 0.0), name=f"planar{n}"
    )


NONLINEAR_6DOF_TERMS = ("m", "c", "d", "b", "k", "k3_", "h", "h3_", "g")
NONLINEAR_6DOF_VALUES = np.array(
    [
        [1.20, 0.35, 0.80, 0.12, 3.50, 0.45, 0.55, 0.22, 0.10],
        [1.10, 0.28, 0.75, 0.15, 3.80, 0.40, 0.62, 0.19, 0.12],
        [0.90, 0.22, 0.60, 0.10, 2.90, 0.38, 0.48, 0.18, 0.08],
        [1.00, 0.18, 0.70, 0.11, 3.10, 0.33, 0.52, 0.25, 0.09],
        [1.30, 0.25, 0.85, 0.14, 3.60, 0.50, 0.60, 0.21, 0.11],
        [1.15, 0.30, 0.65, 0.09, 3.20, 0.42, 0.44, 0.17, 0.13],
    ]
)


class Nonlinear6DOF(eqx.Module):
    """Six coupled DOFs with cubic damping and stiffness and ring coupling springs:

    ``tau_i = m_i qdd_i + c_i qd_i qd_j + d_i qd_i + b_i qd_i^3 + k_i q_i + k3_i q_i^3
    + h_i (q_i - q_j) + h3_i (q_i - q_j)^3 + g_i``, j = i + 1 (6 wraps to 1).

    Nonlinear in the states, linear in its 54 parameters (9 per DOF).
    """

    params: jax.Array  # (6, 9) in the order of NONLINEAR_6DOF_TERMS

    @property
    def n(self) -> int:
        return 6

    def parameter_vector(self) -> jax.Array:
        return self.params.ravel()

    def parameter_names(self) -> tuple[str, ...]:
        return tuple(f"{k}{i + 1}" for i in range(6) for k in NONLINEAR_6DOF_TERMS)

    def torque(self, theta: jax.Array, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
        """tau (6,) for theta (54,), q, qd, qdd (6,)."""
        m, c, d, b, k, k3, h, h3, g = theta.reshape(6, 9).T
        qj, qdj = jnp.roll(q, -1), jnp.roll(qd, -1)
        dq = q - qj
        return m * qdd + c * qd * qdj + d * qd + b * qd**3 + k * q + k3 * q**3 + h * dq + h3 * dq**3 + g


def nonlinear_6dof(params: ArrayLike | None = None) -> Nonlinear6DOF:
    """The six-DOF benchmark system with its reference parameters (6, 9) unless given."""
    values = NONLINEAR_6DOF_VALUES if params is None else params
    return Nonlinear6DOF(jnp.asarray(values, dtype=float).reshape(6, 9))


def example_robot_urdf(relative: str) -> str:
    """Path of a URDF shipped by the ``example-robot-data`` package, e.g.
    ``"ur_description/urdf/ur5_robot.urdf"`` or ``"panda_description/urdf/panda.urdf"``."""
    roots = [sys.prefix, *site.getsitepackages()]
    for root in roots:
        for sub in ("", f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"):
            path = os.path.join(root, sub, "cmeel.prefix/share/example-robot-data/robots", relative)
            if os.path.exists(path):
                return path
    raise FileNotFoundError(f"{relative} not found: install example-robot-data (pip install example-robot-data)")
