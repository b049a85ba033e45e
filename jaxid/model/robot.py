"""The rigid-body robot model: topology, geometry, limits and parameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid import arrays
from jaxid.dynamics import spatial
from jaxid.friction import models as friction_models
from jaxid.model import inertia
from jaxid.model.transmission import Transmission

# Per-joint terms that can be switched on, in the order their columns appear; the columns
# and units live in one table, jaxid.friction.models.JOINT_BASIS (eps = coulomb_eps,
# vs = stribeck_vs):
#   ia: rotor (armature) inertia,  tau = ia * qdd                               [kg m^2]
#   fv: viscous friction,          tau = fv * qd                                [N m s/rad]
#   fc: Coulomb friction,          tau = fc * tanh(qd/eps)                      [N m]
#   fs: Stribeck excess fs - fc,   tau = fs * tanh(qd/eps) * exp(-(qd/vs)^2)    [N m]
#   fva: asymmetric viscous,       tau = fva * qd * tanh(qd/eps)                [N m s/rad]
#   offset: constant torque offset (sensor bias + Coulomb asymmetry)            [N m]
#   ks: joint stiffness (cables, hoses, springs), tau = ks * q                   [N m/rad]
JOINT_TERMS = friction_models.JOINT_TERMS  # ("ia", "fv", "fc", "fs", "fva", "offset", "ks")


class Robot(eqx.Module):
    """A rigid-body robot with joints (revolute 'R' or prismatic 'P') and n coordinates.

    Joint i moves link i. Its frame is ``T_parent @ placements[i] @ motion(q_i)``,
    where ``motion`` rotates about (or translates along) ``axes[i]``, expressed in
    the joint frame; link i's inertial parameters are expressed in that frame.

    Coupled (mimic) joints: a joint j that mimics joint i has no variable of its own,
    ``q_j = ratio_j * q_i + offset_j``. The robot's coordinates q (n,) are then those of
    the independent joints, in joint order, and torques, regressors and limits are in
    those coordinates: the virtual work ``tau . dq`` of the coupled joint is carried
    by its master, ``tau_i += ratio_j * tau_j`` (the generalised force of the
    constrained system, Featherstone 2008, sec. 3.2). Without mimic joints n is the
    number of joints and the coordinates are the joints.

    Attributes (arrays are differentiable leaves, the rest is static topology):
        joint_types: tuple of 'R' / 'P', one per joint (``n_joints``).
        parents: parent link index of each link (-1 for the fixed base).
        names: joint names, one per joint.
        mimic: per joint, the index of the joint it mimics, or -1 for an independent joint.
        joint_terms: enabled per-joint terms, a subset of ``JOINT_TERMS`` in that order.
        coulomb_eps: velocity scale of the smooth Coulomb sign ``tanh(qd / eps)``, rad/s.
        stribeck_vs: Stribeck velocity vs of the ``fs`` term, rad/s (see
            ``jaxid.identification.stribeck.fit_stribeck_velocity`` to identify it).
        placements: fixed transforms parent frame -> joint frame, shape (n_joints, 4, 4).
        axes: joint axes in the joint frames, shape (n_joints, 3), unit vectors.
        tip: the flange (tool) frame in the frame of joint ``tip_joint``, shape (4, 4): where a
            payload is mounted (``jaxid.identification.payload``).
        tip_joint: the joint whose link carries the flange, default the last joint.
        gravity: gravity acceleration in the base frame, shape (3,), m/s^2.
        inertial: per-link inertial 10-vectors, shape (n_joints, 10) (see ``jaxid.model.inertia``).
        joint_params: values of the enabled joint terms, shape (n_joints, len(joint_terms)).
        mimic_ratio, mimic_offset: per joint, the coupling ``q_j = ratio * q_master + offset``
            (n_joints,), 1 and 0 for independent joints (offset in rad or m).
        q_min, q_max: position limits of the coordinates, (n,), rad or m; q_min > q_max is refused
            (ValueError naming the joint) when they are concrete.
        qd_max, qdd_max, tau_max: velocity, acceleration and torque limits, (n,).
        transmission: None (the joint terms act on the joints), or a
            [`Transmission`][jaxid.model.transmission.Transmission] from motors to joints, ``q = R q_m +
            offset``: every joint term then acts on its motor's coordinate ``q_m = R^{-1} (q -
            offset)`` and reaches the joints as ``R^{-T} tau_m`` (rotor inertia and friction on the
            motor side; a coupled wrist's cross terms), and is named ``fv_m1``, ``ia_m5``, ...
            (needs a robot without mimic joints: one motor per coordinate).
    """

    joint_types: tuple = eqx.field(static=True)
    parents: tuple = eqx.field(static=True)
    names: tuple = eqx.field(static=True)
    joint_terms: tuple = eqx.field(static=True)
    coulomb_eps: float = eqx.field(static=True)
    stribeck_vs: float = eqx.field(static=True)
    name: str = eqx.field(static=True)
    mimic: tuple = eqx.field(static=True)
    tip_joint: int = eqx.field(static=True)
    placements: jnp.ndarray
    axes: jnp.ndarray
    tip: jnp.ndarray
    gravity: jnp.ndarray
    inertial: jnp.ndarray
    joint_params: jnp.ndarray
    mimic_ratio: jnp.ndarray
    mimic_offset: jnp.ndarray
    q_min: jnp.ndarray
    q_max: jnp.ndarray
    qd_max: jnp.ndarray
    qdd_max: jnp.ndarray
    tau_max: jnp.ndarray
    transmission: Transmission | None

    def __init__(
        self,
        placements,
        axes,
        inertial,
        *,
        joint_types=None,
        parents=None,
        names=None,
        joint_terms=(),
        joint_params=None,
        coulomb_eps=1e-3,
        stribeck_vs=0.05,
        tip=None,
        gravity=(0.0, 0.0, -9.81),
        q_min=None,
        q_max=None,
        qd_max=None,
        qdd_max=None,
        tau_max=None,
        mimic=None,
        tip_joint=-1,
        name="robot",
        mimic_ratio=None,
        mimic_offset=None,
        transmission=None,
    ):
        placements = _floats(placements)
        if placements.ndim != 3 or placements.shape[1:] != (4, 4):
            raise ValueError(f"placements must have shape (n, 4, 4), got {placements.shape}")
        n = placements.shape[0]
        if n < 1:
            raise ValueError("a robot needs at least one joint")
        # The axes' check on the host values given (under an outer jit a device copy is traced).
        axes = jnp.asarray(axes, dtype=float) if arrays.is_traced(axes) else np.asarray(axes, dtype=float)
        inertial = _floats(inertial)
        _check_shape("axes", axes, (n, 3))
        _check_shape("inertial", inertial, (n, 10))
        norms = np.linalg.norm(np.asarray(axes), axis=1)
        if np.any(norms < 1e-12):
            raise ValueError(
                f"joint axes must be non-zero; zero axis at joint(s) {(np.where(norms < 1e-12)[0] + 1).tolist()} (1-based)"
            )
        axes = _floats(np.asarray(axes) / norms[:, None])
        joint_types = tuple(joint_types) if joint_types is not None else ("R",) * n
        if len(joint_types) != n or any(t not in ("R", "P") for t in joint_types):
            raise ValueError(f"joint_types must be n={n} entries of 'R' or 'P', got {joint_types}")
        parents = tuple(int(p) for p in parents) if parents is not None else tuple(range(-1, n - 1))
        if len(parents) != n or any(not (-1 <= p < i) for i, p in enumerate(parents)):
            raise ValueError(f"parents must list n={n} indices with -1 <= parents[i] < i, got {parents}")
        bad = [t for t in joint_terms if t not in JOINT_TERMS]
        if bad:
            raise ValueError(f"unknown joint terms {bad}; choose from {JOINT_TERMS}")
        joint_terms = tuple(t for t in JOINT_TERMS if t in joint_terms)
        if mimic_ratio is not None:  # the field form (dataclasses.replace): master indices, ratios, offsets
            mimic = [
                None if m < 0 else (m, r, o)
                for m, r, o in zip(mimic, np.asarray(mimic_ratio), np.asarray(mimic_offset))
            ]
        self.mimic, ratio, offset = _coupling(mimic, n, names)
        self.mimic_ratio, self.mimic_offset = _floats(ratio), _floats(offset)
        if joint_params is None:
            joint_params = np.zeros((n, len(joint_terms)))
        joint_params = (
            jnp.asarray(joint_params, dtype=float).reshape(n, len(joint_terms))
            if arrays.is_traced(joint_params)
            else _floats(np.reshape(np.asarray(joint_params, dtype=float), (n, len(joint_terms))))
        )
        self.joint_types, self.parents, self.joint_terms = joint_types, parents, joint_terms
        self.names = tuple(names) if names is not None else tuple(f"joint{i + 1}" for i in range(n))
        if not (np.isfinite(coulomb_eps) and coulomb_eps > 0):
            raise ValueError(f"coulomb_eps must be a finite velocity > 0 rad/s, got {coulomb_eps}")
        if not (np.isfinite(stribeck_vs) and stribeck_vs > 0):
            raise ValueError(f"stribeck_vs must be a finite velocity > 0 rad/s, got {stribeck_vs}")
        self.coulomb_eps, self.stribeck_vs, self.name = float(coulomb_eps), float(stribeck_vs), str(name)
        self.placements, self.axes, self.inertial, self.joint_params = placements, axes, inertial, joint_params
        self.tip = _floats(np.eye(4) if tip is None else tip)
        if not -n <= int(tip_joint) < n:
            raise ValueError(f"tip_joint must index one of the {n} joints, got {tip_joint}")
        self.tip_joint = int(tip_joint) % n
        self.gravity = _floats(gravity)
        nq = self.n
        # strong-typed, as the given limits are: one stored program for both
        inf, ninf = _floats(np.full(nq, np.inf)), _floats(np.full(nq, -np.inf))
        lim = lambda v, d: d if v is None else _floats(v, (nq,))
        self.q_min, self.q_max = lim(q_min, ninf), lim(q_max, inf)
        if not arrays.is_traced(self.q_min, self.q_max):  # (dataclasses.replace under jit rebuilds a Robot of tracers)
            inverted = np.flatnonzero(np.asarray(self.q_min) > np.asarray(self.q_max))
            if inverted.size:
                j = int(inverted[0])
                raise ValueError(
                    f"joint {j + 1} ({self.coordinate_names[j]}): position limits inverted, q_min = "
                    f"{float(self.q_min[j]):g} > q_max = {float(self.q_max[j]):g}"
                    + (f" (and {inverted.size - 1} more joint(s))" if inverted.size > 1 else "")
                    + "; swap them (lower below upper, rad or m)"
                )
        self.qd_max, self.qdd_max, self.tau_max = lim(qd_max, inf), lim(qdd_max, inf), lim(tau_max, inf)
        self.transmission = _checked_transmission(transmission, self)

    # ---- the model interface -------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of coordinates: the joints, less those that mimic another."""
        return sum(m < 0 for m in self.mimic)

    @property
    def n_joints(self) -> int:
        """Number of joints (and of links, each with its 10 inertial parameters)."""
        return len(self.joint_types)

    @property
    def coordinates(self) -> tuple:
        """Per joint, the index of the coordinate that drives it (its own, or its master's)."""
        own = np.cumsum([m < 0 for m in self.mimic]) - 1
        return tuple(int(own[i] if m < 0 else own[m]) for i, m in enumerate(self.mimic))

    @property
    def coordinate_names(self) -> tuple:
        """Names of the n coordinates: the independent joints."""
        return tuple(name for name, m in zip(self.names, self.mimic) if m < 0)

    def joint_motion(self, q, qd, qdd):
        """Coordinates q, qd, qdd (n,) -> joint positions, velocities, accelerations (n_joints,)."""
        if self.n == self.n_joints:
            return q, qd, qdd
        idx = np.asarray(self.coordinates)
        return q[idx] * self.mimic_ratio + self.mimic_offset, qd[idx] * self.mimic_ratio, qdd[idx] * self.mimic_ratio

    def to_coordinates(self, tau):
        """Joint torques (n_joints, ...) -> generalised forces of the coordinates (n, ...)."""
        if self.n == self.n_joints:
            return tau
        weighted = tau * self.mimic_ratio.reshape((-1,) + (1,) * (tau.ndim - 1))
        return jax.ops.segment_sum(weighted, np.asarray(self.coordinates), num_segments=self.n)

    def parameter_vector(self):
        """theta (p,): the n_joints inertial 10-vectors, then each joint's enabled terms."""
        xp = arrays.namespace(self.inertial, self.joint_params)
        # Concrete: joined in numpy, one transfer (jnp ravels and a concatenate are three programs).
        return arrays.device(xp.concatenate([xp.ravel(self.inertial), xp.ravel(self.joint_params)]))

    def parameter_names(self) -> tuple[str, ...]:
        """Names of theta's entries, e.g. ``m1, mx1, ..., Izz6, fv1, fc1, ...`` (per joint)."""
        rigid = [f"{k}{i + 1}" for i in range(self.n_joints) for k in inertia.INERTIAL_NAMES]
        side = "" if self.transmission is None else "_m"  # motor-side terms: their own names
        joint = [f"{k}{side}{i + 1}" for i in range(self.n_joints) for k in self.joint_terms]
        return tuple(rigid + joint)

    def split(self, theta):
        """theta (p,) -> (inertial (n_joints, 10), joint_params (n_joints, k)); a concrete theta is cut
        on the host and put on the device (``device_put``: no slicing programs)."""
        n, k = self.n_joints, len(self.joint_terms)
        if arrays.is_traced(theta):
            return theta[: 10 * n].reshape(n, 10), theta[10 * n :].reshape(n, k)
        t = np.asarray(theta, dtype=float)
        return arrays.device(t[: 10 * n].reshape(n, 10)), arrays.device(t[10 * n :].reshape(n, k))

    def torque(self, theta, q, qd, qdd):
        """Joint torques (n,) N m of one sample: Newton-Euler plus the enabled joint terms.

        theta: parameters (p,); q, qd, qdd: (n,) rad, rad/s, rad/s^2 (m for prismatic).
        """
        from jaxid.dynamics.rnea import rnea_inertial

        inertial, joint_params = self.split(theta)
        return rnea_inertial(self, inertial, q, qd, qdd) + self.joint_torque(joint_params, q, qd, qdd)

    def regressor(self, theta, q, qd, qdd):
        """Regressor (n, p) of one sample, ``jax.jacfwd`` of [`torque`][jaxid.model.robot.Robot.torque] taken link by link.

        torque is a sum of independent link and joint terms, so its Jacobian is assembled
        from the Jacobian of each link's wrench in that link's 10 parameters, and the joint
        terms' columns are written out ([`joint_columns`][jaxid.model.robot.joint_columns]): the same
        numbers as ``jax.jacfwd(self.torque)`` (the tests check it) at a fraction of the cost.
        """
        from jaxid.dynamics.rnea import rigid_regressor

        return jnp.concatenate(
            [rigid_regressor(self, q, qd, qdd), joint_columns(self, *self.joint_motion(q, qd, qdd))], axis=1
        )

    def mass_matrix(self, theta, q):
        """Mass matrix (n, n) of one sample, d [`torque`][jaxid.model.robot.Robot.torque] / d qdd at qd = 0: by the
        composite-rigid-body algorithm (``jaxid.dynamics.rnea.crba``; faster than ``jax.jacfwd``
        of the torque at every n measured, 2 .. 20), plus the joint terms' part (rotor
        inertia). theta: (p,); q: (n,) rad."""
        from jaxid.dynamics import rnea

        inertial, joint_params = self.split(theta)
        zero = jnp.zeros_like(q)
        return rnea.crba(self, inertial, q) + jax.jacfwd(lambda qdd: self.joint_torque(joint_params, q, zero, qdd))(
            zero
        )

    def joint_torque(self, joint_params, q, qd, qdd):
        """Torque of the enabled per-joint terms (n,) N m, linear in ``joint_params`` (n_joints, k):
        the columns of ``jaxid.friction.models.JOINT_BASIS`` at each joint's position, velocity
        and acceleration, from the coordinates' q, qd, qdd (n,) rad, rad/s, rad/s^2; with a
        ``transmission``, at each motor's (``q_m = R^{-1} (q - offset)``), carried to the joints
        by ``R^{-T}``."""
        if self.transmission is not None:
            t = self.transmission
            motion = t.motor_positions(q), t.motor_velocities(qd), t.motor_velocities(qdd)
            columns = friction_models.joint_basis(self.joint_terms, *motion, self.coulomb_eps, self.stribeck_vs)
            return t.joint_torques(jnp.sum(columns * joint_params, axis=-1))
        q, qd, qdd = self.joint_motion(q, qd, qdd)
        columns = friction_models.joint_basis(self.joint_terms, q, qd, qdd, self.coulomb_eps, self.stribeck_vs)
        return self.to_coordinates(jnp.sum(columns * joint_params, axis=-1))

    # ---- variants ------------------------------------------------------------------------
    def anonymous(self) -> Robot:
        """This robot with placeholder names (joints ``joint1``..., robot ``robot``) and everything
        else the same: a program compiled for it (``jaxid.cache``) is then shared by every robot of
        the same topology, joint types and joint terms, whatever it and its joints are called (a
        UR10 read from a URDF reuses what the built-in UR5 compiled). For functions whose outputs
        do not carry the names (per-sample dynamics: ``jaxid.dynamics.batching.bucketed_jit``).
        No check is run again (the fields are copied, not rebuilt)."""
        placeholder = tuple(f"joint{i + 1}" for i in range(len(self.names)))
        if self.names == placeholder and self.name == "robot":
            return self
        new = object.__new__(type(self))
        for f in dataclasses.fields(self):
            object.__setattr__(new, f.name, getattr(self, f.name))
        object.__setattr__(new, "names", placeholder)
        object.__setattr__(new, "name", "robot")
        return new

    def with_parameters(self, theta):
        """The same robot with parameter vector theta (p,)."""
        inertial, joint_params = self.split(theta)
        return eqx.tree_at(lambda r: (r.inertial, r.joint_params), self, (inertial, joint_params))

    def with_joint_terms(self, terms: Sequence[str], values=None):
        """The same robot with another set of enabled joint terms (values default to zero)."""
        return Robot(
            self.placements,
            self.axes,
            self.inertial,
            joint_types=self.joint_types,
            parents=self.parents,
            names=self.names,
            joint_terms=tuple(terms),
            joint_params=values,
            coulomb_eps=self.coulomb_eps,
            stribeck_vs=self.stribeck_vs,
            tip=self.tip,
            tip_joint=self.tip_joint,
            gravity=self.gravity,
            q_min=self.q_min,
            q_max=self.q_max,
            qd_max=self.qd_max,
            qdd_max=self.qdd_max,
            tau_max=self.tau_max,
            mimic=self.mimic_spec(),
            name=self.name,
            transmission=self.transmission,
        )

    def with_transmission(self, transmission):
        """The same robot with its joint terms on the motors of ``transmission`` (a
        [`Transmission`][jaxid.model.transmission.Transmission], or None: on the joints); the joint terms'
        values are kept (their meaning changes: motor side)."""
        return dataclasses.replace(self, transmission=transmission)

    def mimic_spec(self):
        """The ``mimic=`` argument that rebuilds this robot's coupling: per joint None or
        ``(master joint index, ratio, offset)``."""
        return [
            None if m < 0 else (m, float(r), float(o))
            for m, r, o in zip(self.mimic, np.asarray(self.mimic_ratio), np.asarray(self.mimic_offset))
        ]

    # ---- constructors --------------------------------------------------------------------
    @classmethod
    def from_dh(
        cls,
        table,
        convention="standard",
        *,
        masses=None,
        coms=None,
        inertias=None,
        joint_types=None,
        limits=None,
        check_inertia=True,
        **kwargs,
    ):
        """A serial robot from a Denavit-Hartenberg table.

        table: shape (n, 4), columns ``(theta_offset, d, a, alpha)`` (rad, m, m, rad).
            standard (Denavit-Hartenberg 1955): ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``;
            modified (Craig 1986): row i holds ``(theta_i, d_i, a_{i-1}, alpha_{i-1})`` and
            ``A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``.
        masses: (n,) kg. coms: (n, 3) m, centres of mass in the DH link frames.
        inertias: (n, 3, 3) kg m^2 about the centres of mass, in the DH link frames.
            Each defaults to zero: omit all three for plain least squares, whose regressor
            does not depend on them. The links are then massless placeholders: torques
            computed from the model's own parameters are zero, and nothing that starts
            from them (a consistent fit's prior, a lifted URDF) means anything.
        joint_types: 'R' (theta is the variable) or 'P' (d is the variable), default all 'R'.
        limits: dict with any of q_min, q_max, qd_max, qdd_max, tau_max.
        check_inertia: reject a link whose mass and inertia are not a rigid body
            (``jaxid.model.inertia.physical_problem``); False skips the check.

        For the standard convention the joint frame of link i is the DH frame i-1 moved by
        joint i (``Tz(d_i) Rz(q_i)``); the inertial parameters are re-expressed there (they
        are given in DH frame i = joint frame i @ ``Tx(a_i) Rx(alpha_i)``), and the flange
        ``tip`` is ``Tx(a_n) Rx(alpha_n)``. For the modified convention the joint frames are
        the DH frames.
        """
        table = np.asarray(table, dtype=float)
        if table.ndim != 2 or table.shape[1] != 4 or table.shape[0] < 1:
            raise ValueError(
                f"DH table must have shape (n, 4) with columns (theta_offset, d, a, alpha), got {table.shape}"
            )
        if convention not in ("standard", "modified"):
            raise ValueError(f"convention must be 'standard' or 'modified', got {convention!r}")
        n = table.shape[0]
        rows = np.flatnonzero(~np.all(np.isfinite(table), axis=1))
        if rows.size:
            raise ValueError(f"DH table row {int(rows[0])} is not finite: {table[rows[0]].tolist()}")

        def array(what, x, shape):
            x = np.zeros(shape) if x is None else np.asarray(x, dtype=float)
            if x.size != np.prod(shape):
                raise ValueError(f"{what} must have shape {shape} for a {n}-row DH table, got {x.shape}")
            return x.reshape(shape)

        masses, coms = array("masses", masses, (n,)), array("coms", coms, (n, 3))
        inertias = array("inertias", inertias, (n, 3, 3))
        joint_types = tuple(joint_types) if joint_types is not None else ("R",) * n
        if len(joint_types) != n or any(t not in ("R", "P") for t in joint_types):
            raise ValueError(f"joint_types must be {n} entries (one per DH row) of 'R' or 'P', got {joint_types}")
        names = kwargs.get("names")
        for i in range(n):
            if not np.all(np.isfinite(coms[i])):
                problem = f"centre of mass {coms[i].tolist()} is not finite"
            elif check_inertia:
                problem = inertia.physical_problem(masses[i], inertias[i])
            else:
                problem = (
                    None
                    if np.isfinite(masses[i]) and np.all(np.isfinite(inertias[i]))
                    else "mass or inertia not finite"
                )
            if problem:
                label = names[i] if names is not None and i < len(names) else f"joint{i + 1}"
                raise ValueError(
                    f"DH link {i + 1} ({label}): {problem}; correct masses/coms/inertias, or omit them "
                    "(or pass check_inertia=False) for plain least squares"
                )
        placements, inertial, tip = _dh_geometry(
            *table.T, masses, coms, inertias, np.array([t == "R" for t in joint_types]), convention=convention
        )
        return cls(
            placements,
            np.tile([0.0, 0.0, 1.0], (n, 1)),
            inertial,
            joint_types=joint_types,
            tip=tip,
            **(limits or {}),
            **kwargs,
        )

    # The file and Pinocchio readers know the formats, not this class: each returns the
    # constructor's keyword arguments, so that the readers sit below the model they build.
    @classmethod
    def from_urdf(cls, path, *, base_link=None, tip_link=None, **kwargs):
        """A chain or tree from a URDF file; see [`jaxid.model.urdf.read`][jaxid.model.urdf.read] (tip_link: a link
        or a list of links; mimic=, check_inertia=, joint_terms=, ...)."""
        from jaxid.model import urdf

        return cls(**urdf.read(path, base_link=base_link, tip_link=tip_link, **kwargs))

    @classmethod
    def from_mjcf(cls, path, **kwargs):
        """A chain or tree from a MuJoCo MJCF file; see [`jaxid.model.mjcf.read`][jaxid.model.mjcf.read]
        (tool_site=, check_inertia=, joint_terms=)."""
        from jaxid.model import mjcf

        return cls(**mjcf.read(path, **kwargs))

    @classmethod
    def from_pinocchio(cls, model, **kwargs):
        """A robot from a ``pinocchio.Model``; see [`jaxid.model.pinocchio_model.read`][jaxid.model.pinocchio_model.read]."""
        from jaxid.model import pinocchio_model

        return cls(**pinocchio_model.read(model, **kwargs))

    def to_pinocchio(self, theta=None):
        """This robot (parameters theta (p,), default its own) as a ``pinocchio.Model``; see
        [`jaxid.model.pinocchio_model.to_pinocchio`][jaxid.model.pinocchio_model.to_pinocchio]."""
        from jaxid.model.pinocchio_model import to_pinocchio

        return to_pinocchio(self, theta)

    def __repr__(self):  # a readable summary instead of equinox's array dump
        lines = [
            f"Robot {self.name!r}: {self.n} joints ({''.join(self.joint_types)}), "
            f"joint terms {list(self.joint_terms) or 'none'}"
            f"{' on the motors of a transmission' if self.transmission is not None else ''}, "
            f"{len(self.parameter_names())} parameters"
        ]
        coords = self.coordinates
        for i in range(self.n_joints):
            m = float(self.inertial[i, 0])
            c = np.asarray(self.inertial[i, 1:4]) / m if m > 0 else np.zeros(3)
            k = coords[i]
            limits = (
                f"q in [{float(self.q_min[k]):.3g}, {float(self.q_max[k]):.3g}]  |tau|<={float(self.tau_max[k]):.4g}"
                if self.mimic[i] < 0
                else f"q = {float(self.mimic_ratio[i]):.4g} q_{self.names[self.mimic[i]]} "
                f"+ {float(self.mimic_offset[i]):.4g}"
            )
            lines.append(
                f"  {self.names[i]:<12} axis {np.round(np.asarray(self.axes[i]), 3)}  m={m:.4g} kg  "
                f"c={np.round(c, 4)} m  {limits}"
            )
        return "\n".join(lines)


def joint_columns(robot, q, qd, qdd):
    """The joint terms' regressor columns, d ``Robot.joint_torque`` / d joint_params, shape
    (n, n_joints * k, ...): joint j's ``JOINT_BASIS`` columns (k = len(joint_terms)) at its
    position, velocity and acceleration q, qd, qdd (n_joints, ...) rad, rad/s, rad/s^2 (joints,
    not coordinates; any trailing sample shape), in its own row, carried to its coordinate with its coupling
    ratio. Written out rather than by ``jax.jacfwd``: 1.1-1.2x faster for a UR5 with joint terms
    (3 or 6 terms, N = 10,000 batched; the same numbers). With a ``transmission`` (no mimic joints),
    motor j's columns at its motion ``R^{-1} (q - offset)``, carried to the joints by ``R^{-T}``."""
    t = robot.transmission
    if t is not None:  # the motors' motion, along the leading (joint) axis
        move = lambda x: jnp.tensordot(t.inverse, x, axes=1)
        shape = (-1,) + (1,) * (jnp.ndim(q) - 1)
        q, qd, qdd = move(q - t.offset.reshape(shape)), move(qd), move(qdd)
    basis = friction_models.joint_basis(robot.joint_terms, q, qd, qdd, robot.coulomb_eps, robot.stribeck_vs)
    basis = jnp.moveaxis(basis, -1, 1)  # (n_joints, k, ...)
    nj, k = basis.shape[:2]
    eye = jnp.eye(nj, dtype=basis.dtype).reshape((nj, nj, 1) + (1,) * (basis.ndim - 2))
    columns = (eye * basis[None]).reshape((nj, nj * k) + basis.shape[2:])
    if t is not None:  # tau = R^{-T} tau_m, row by row
        return jnp.tensordot(t.inverse.T, columns, axes=1)
    return robot.to_coordinates(columns)


def _checked_transmission(transmission, robot):
    """``transmission`` (None or a Transmission for the robot's n coordinates), checked."""
    if transmission is None:
        return None
    if not isinstance(transmission, Transmission):
        raise ValueError(f"transmission must be a jaxid.model.transmission.Transmission or None, got {transmission!r}")
    if robot.n != robot.n_joints:
        raise ValueError(
            "a transmission drives every joint by a motor of its own; this robot has mimic joints "
            "(read the URDF with mimic='independent', or leave the transmission out)"
        )
    if transmission.n != robot.n:
        raise ValueError(
            f"the transmission maps {transmission.n} motors but the robot has {robot.n} joints; "
            "give one ratio (and matrix row) per joint"
        )
    return transmission


def _floats(x, shape=None):
    """x as a float64 jax array (broadcast to ``shape``): traced, by jax.numpy; concrete, by
    ``device_put`` of a numpy array, which compiles nothing (a jnp operation on concrete values
    outside a jit compiles a program per shape, about 10 ms each on a command's first run)."""
    if arrays.is_traced(x):
        x = jnp.asarray(x, dtype=float)
        return x if shape is None else jnp.broadcast_to(x, shape)
    x = np.asarray(x, dtype=float)
    return arrays.device(x if shape is None else np.broadcast_to(x, shape).copy())


def _coupling(mimic, n, names=None):
    """(mimic static tuple, ratio (n,), offset (n,)) from ``mimic=``: per joint None or
    (master joint index, 0-based, ratio, offset); a master must be an independent joint. Messages
    name joints as "joint k (name)", k 1-based."""

    def joint(j):
        return f"joint {j + 1}" + (f" ({names[j]})" if names is not None and j < len(names) else "")

    if mimic is None:
        return (-1,) * n, np.ones(n), np.zeros(n)
    mimic = list(mimic)
    if len(mimic) != n:
        raise ValueError(f"mimic must have one entry per joint (n={n}), got {len(mimic)}")
    masters, ratio, offset = [-1] * n, np.ones(n), np.zeros(n)
    for j, spec in enumerate(mimic):
        if spec is None:
            continue
        master, r, o = spec
        master = int(master)
        if not 0 <= master < n or master == j:
            raise ValueError(
                f"{joint(j)}: mimic master index {master} is not another joint of this robot (0-based indices 0..{n - 1})"
            )
        if mimic[master] is not None:
            raise ValueError(
                f"{joint(j)} mimics {joint(master)}, which itself mimics a joint; couple it to the "
                "independent joint (compose the ratios and offsets)"
            )
        if not (np.isfinite(r) and np.isfinite(o)):
            raise ValueError(f"{joint(j)}: mimic ratio and offset must be finite, got {float(r)}, {float(o)}")
        masters[j], ratio[j], offset[j] = master, float(r), float(o)
    return tuple(masters), ratio, offset


def _check_shape(name, x, shape):
    if x.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {x.shape}")


def _dh_link(off, d, a, alpha, a_prev, alpha_prev, m, c, I, revolute, *, convention):
    """Joint placement (4, 4) and link inertial (10,) in the joint frame of one DH row; with
    ``a_prev, alpha_prev`` the previous row's (standard convention). numpy on the host (the
    numbers of a table: nothing to compile, as the URDF reader)."""
    tx = lambda x: spatial.translation(np.array([x, 0.0, 0.0]))
    tz = lambda z: spatial.translation(np.array([0.0, 0.0, z]))
    rx = lambda x: spatial.homogeneous(spatial.rot_x(x), np.zeros(3))
    rz = lambda x: spatial.homogeneous(spatial.rot_z(x), np.zeros(3))
    # Fixed part of the joint placement: the joint variable enters as Rz (R) or Tz (P).
    joint_fixed = tz(d) @ rz(off) if revolute else rz(off) @ tz(d)
    pi_dh = inertia.from_mass_com_inertia(float(m), np.asarray(c, dtype=float), np.asarray(I, dtype=float))
    if convention == "standard":  # DH frame i in the joint frame i: tx(a) rx(alpha)
        return tx(a_prev) @ rx(alpha_prev) @ joint_fixed, inertia.transform(pi_dh, tx(a) @ rx(alpha))
    return rx(alpha) @ tx(a) @ joint_fixed, pi_dh


def _dh_geometry(offset, d, a, alpha, masses, coms, inertias, revolute, *, convention):
    """Joint placements (n, 4, 4), link inertials (n, 10) in the joint frames and the tip
    (4, 4) of a DH table (see ``Robot.from_dh``); revolute: (n,) bool."""
    # The first link's placement starts at the base: (a, alpha) = 0 before row 0.
    a_prev, alpha_prev = (np.concatenate([[0.0], x[:-1]]) for x in (a, alpha))
    rows = [
        _dh_link(*row, convention=convention)
        for row in zip(offset, d, a, alpha, a_prev, alpha_prev, masses, coms, inertias, revolute)
    ]
    placements, inertial = (np.stack([np.asarray(r[k]) for r in rows]) for k in (0, 1))
    # The tip, tx(a) rx(alpha) of the last row, as a massless row with zero offset and d.
    last = np.array([0.0, 0.0, a[-1], alpha[-1], a[-1], alpha[-1], 0.0])
    tip = (
        np.asarray(_dh_link(*last, np.zeros(3), np.zeros((3, 3)), np.True_, convention="standard")[0])
        if convention == "standard"
        else np.eye(4)
    )
    return placements, inertial, tip
