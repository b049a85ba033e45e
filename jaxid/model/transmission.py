"""Transmissions: the joints' coordinates from the motors' (gear ratios, signs, zero offsets and
coupled joints such as a wrist whose last motor also turns the joint before it).

A robot's controller logs what its drives measure: motor angles q_m and motor torques tau_m (or
currents). A transmission maps them to the joints the dynamic model is written in,

    q = R q_m + offset,        qd = R qd_m,        qdd = R qdd_m,

with R (n, n) invertible ("joint from motor") and ``offset`` (n,) the joint position at the motors'
zero (rad, or m for a prismatic joint). For independent joints R is diagonal, ``R_jj = sign_j /
ratio_j`` with ``ratio_j`` the motor turns per joint turn; a coupled joint has an off-diagonal
entry, e.g. the wrist of many industrial arms (KUKA, ABB, Fanuc), where motor 5 also turns
joint 6: ``q6 = q_m6 / r6 + c q_m5 / r5``. Torques follow from the power balance (an ideal, lossless
gear: the motors' power ``tau_m . qd_m`` is the joints' ``tau . qd`` for every motion): ``tau_m =
R^T tau``, so ``tau = R^{-T} tau_m``. The same conventions as ROS ``transmission_interface``
(``SimpleTransmission``: ``q = q_m / reduction + offset``, ``tau = reduction tau_m``;
``DifferentialTransmission``), which `from_urdf` reads.

What the gear loses is friction, and the rotor's inertia acts on the motor's own acceleration:
with a transmission on the model (``Robot.transmission``), every joint term of
``jaxid.friction.models.JOINT_BASIS`` acts on its motor's coordinate, its joint-space torque
``R^{-T} (ia_m qdd_m + fv_m qd_m + fc_m sgn(qd_m) + ...)`` (Khalil & Dombre, "Modeling,
Identification and Control of Robots", 2002, sec. 9.3.3 and 14.3: rotor inertia and friction of
coupled joints are written on the motor side).

A transmission file (``--transmission FILE``, [`load`][jaxid.model.transmission.load]) is JSON or TOML, with

- ``ratio`` (n,): motor turns per joint turn, ``q_m = ratio q`` for an independent joint
  (a negative ratio, or ``sign`` -1, flips the direction); default all 1;
- ``sign`` (n,), optional: +1 or -1 per joint, multiplying ``ratio``;
- ``offset`` (n,), optional: the joint position at the motors' zero, rad (m), default 0;
- ``coupling`` (n, n), optional: the coupling of the joints to the motors' gear outputs,
  ``R = coupling @ diag(sign / ratio)``, default the identity; the wrist above is the identity
  with ``coupling[5][4] = c``;
- or ``matrix`` (n, n): R itself, instead of ``ratio``, ``sign`` and ``coupling``;
- ``joints`` (n,), optional: the joints' names in the order of the lists above, checked against
  the model's (and the lists reordered to the model's joint order).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid import arrays
from jaxid.tables import read_table

#: Largest condition number of R accepted: beyond it the motors' torques cannot be told apart on
#: the joints (a singular coupling: two joints driven by the same combination of motors).
MAX_CONDITION = 1e12

#: The keys of a transmission file ([`load`][jaxid.model.transmission.load]).
FILE_KEYS = ("joints", "ratio", "sign", "offset", "coupling", "matrix")


class TransmissionError(ValueError):
    """A transmission that is not invertible, of the wrong size, or not finite; the message names the fix."""


class Transmission(eqx.Module):
    """Joints from motors, ``q = R q_m + offset``, and motor torques from joint torques, ``tau_m = R^T tau``.

    matrix: R (n, n), joint from motor, invertible (dimensionless; m/rad for a prismatic joint
        driven by a rotary motor). offset: (n,) joint positions at the motors' zero, rad (m).

    The mappings take arrays (..., n): one sample or a batch (samples first).
    """

    matrix: jax.Array
    offset: jax.Array

    def __init__(self, matrix, offset=None):
        if arrays.is_traced(matrix, offset):  # rebuilt under a transform: checked when it was made
            self.matrix = jnp.asarray(matrix)
            self.offset = jnp.zeros(matrix.shape[0]) if offset is None else jnp.asarray(offset)
            return
        R = _matrix(matrix, "matrix")
        n = R.shape[0]
        off = np.zeros(n) if offset is None else _vector(offset, n, "offset")
        self.matrix, self.offset = jnp.asarray(R), jnp.asarray(off)

    # ---- constructors ------------------------------------------------------------------
    @classmethod
    def from_ratios(cls, ratio, *, sign=None, offset=None, coupling=None) -> Transmission:
        """R = coupling @ diag(sign / ratio): ratio (n,) motor turns per joint turn (nonzero; negative
        flips), sign (n,) of +-1 (default +1), offset (n,) rad (m) of the joints at the motors' zero,
        coupling (n, n) (default identity; e.g. ``coupling[5][4] = c`` for a wrist whose motor 5
        also turns joint 6 by c turns per turn of its own gear output)."""
        r = np.asarray(ratio, dtype=float)
        if r.ndim != 1 or r.size == 0:
            raise TransmissionError(f"ratio: expected one gear ratio per joint, got shape {r.shape}")
        n = r.size
        r = _vector(r, n, "ratio")
        if np.any(r == 0):
            j = int(np.flatnonzero(r == 0)[0])
            raise TransmissionError(f"ratio: joint {j + 1} has ratio 0; give motor turns per joint turn (nonzero)")
        s = np.ones(n) if sign is None else _vector(sign, n, "sign")
        if not np.all(np.isin(s, (-1.0, 1.0))):
            raise TransmissionError(f"sign: expected +1 or -1 per joint, got {s.tolist()}")
        C = np.eye(n) if coupling is None else _matrix(coupling, "coupling", n, check_rank=False)
        return cls(C @ np.diag(s / r), offset)

    @classmethod
    def identity(cls, n: int) -> Transmission:
        """Direct drives: the motors are the joints (R = I, no offset)."""
        return cls(np.eye(n))

    @classmethod
    def from_dict(cls, doc: dict, names=None, where: str = "transmission") -> Transmission:
        """The transmission of a file's table (keys [`FILE_KEYS`][jaxid.model.transmission.FILE_KEYS]; module docstring). names: the
        model's joint (coordinate) names, to check the size and a ``joints`` list against (and to
        reorder by it). TransmissionError naming ``where`` and the key for a bad table."""
        if not isinstance(doc, dict):
            raise TransmissionError(f"{where}: expected a table with keys {', '.join(FILE_KEYS)}")
        unknown = sorted(set(doc) - set(FILE_KEYS))
        if unknown:
            raise TransmissionError(
                f"{where}: unknown key(s) {', '.join(unknown)}; a transmission has {', '.join(FILE_KEYS)}"
            )
        if "matrix" in doc and any(k in doc for k in ("ratio", "sign", "coupling")):
            raise TransmissionError(f"{where}: give either 'matrix' (R itself) or 'ratio'/'sign'/'coupling', not both")
        if not any(k in doc for k in ("matrix", "ratio", "coupling")):
            raise TransmissionError(
                f"{where}: give 'ratio' (motor turns per joint turn) or 'matrix' (R, joint from motor)"
            )
        try:
            if "matrix" in doc:
                t = cls(doc["matrix"], doc.get("offset"))
            else:
                size = np.shape(doc["ratio"])[0] if "ratio" in doc else np.shape(doc["coupling"])[0]
                t = cls.from_ratios(
                    doc.get("ratio", np.ones(size)),
                    sign=doc.get("sign"),
                    offset=doc.get("offset"),
                    coupling=doc.get("coupling"),
                )
        except (TypeError, IndexError) as e:
            raise TransmissionError(f"{where}: expected lists of numbers ({e})") from None
        except TransmissionError as e:
            raise TransmissionError(f"{where}: {e}") from None
        return t.for_joints(doc.get("joints"), names, where)

    def for_joints(self, joints, names, where: str = "transmission") -> Transmission:
        """This transmission, given for the joints ``joints`` (names in its order, or None: the
        model's), on a model with coordinates ``names`` (or None: not checked): reordered to the
        model's order. TransmissionError when the sizes or names differ."""
        n = self.n
        if joints is not None:
            joints = [str(j) for j in joints]
            if len(joints) != n:
                raise TransmissionError(f"{where}: 'joints' names {len(joints)} joints but the lists have {n}")
            if len(set(joints)) != n:
                raise TransmissionError(f"{where}: 'joints' names a joint twice: {joints}")
        if names is None:
            return self
        names = [str(x) for x in names]
        if len(names) != n:
            raise TransmissionError(
                f"{where}: {n} joints, but the model has {len(names)} ({', '.join(names)}); "
                f"give one ratio (and matrix row) per joint of the model"
            )
        if joints is None or joints == names:
            return self
        if sorted(joints) != sorted(names):
            raise TransmissionError(
                f"{where}: 'joints' ({', '.join(joints)}) are not the model's joints ({', '.join(names)}); "
                "name the model's joints"
            )
        order = [joints.index(name) for name in names]
        R, off = np.asarray(self.matrix), np.asarray(self.offset)
        return Transmission(R[np.ix_(order, order)], off[order])

    # ---- properties --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of joints (= motors)."""
        return int(self.matrix.shape[0])

    @property
    def inverse(self):
        """R^{-1} (n, n), motor from joint (numpy for a concrete transmission)."""
        return self._parts()[2]

    @property
    def diagonal(self) -> bool:
        """Whether every motor drives its own joint alone (R diagonal): no coupled joints."""
        R = np.asarray(self.matrix)
        return bool(np.all(R == np.diag(np.diag(R))))

    def _parts(self, *xs):
        """(R, offset, R^{-1}): jax arrays under a trace of any of xs or of the transmission, else
        numpy (concrete bookkeeping without compiling a program per shape, ``jaxid.arrays``)."""
        if arrays.is_traced(self.matrix, self.offset, *xs):
            return self.matrix, self.offset, jnp.linalg.inv(self.matrix)
        R = np.asarray(self.matrix)
        return R, np.asarray(self.offset), np.linalg.inv(R)

    # ---- the mappings (arrays (..., n)) -----------------------------------------------
    def joint_positions(self, q_m):
        """Joint positions (..., n) rad (m) from motor positions q_m (..., n) rad: ``R q_m + offset``."""
        R, off, _ = self._parts(q_m)
        return q_m @ R.T + off

    def joint_velocities(self, v_m):
        """Joint velocities or accelerations (..., n) from the motors' (..., n): ``R v_m``."""
        return v_m @ self._parts(v_m)[0].T

    def motor_positions(self, q):
        """Motor positions (..., n) rad from joint positions q (..., n): ``R^{-1} (q - offset)``."""
        _, off, inv = self._parts(q)
        return (q - off) @ inv.T

    def motor_velocities(self, v):
        """Motor velocities or accelerations (..., n) from the joints' (..., n): ``R^{-1} v``."""
        return v @ self._parts(v)[2].T

    def joint_torques(self, tau_m):
        """Joint torques (..., n) N m (N) from motor torques tau_m (..., n) N m: ``R^{-T} tau_m``."""
        return tau_m @ self._parts(tau_m)[2]

    def motor_torques(self, tau):
        """Motor torques (..., n) N m from joint torques tau (..., n): ``R^T tau`` (power balance)."""
        return tau @ self._parts(tau)[0]

    # ---- records -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """``{"matrix": R, "offset": offset}`` as lists (a transmission file; params.json's
        ``model.transmission``)."""
        return {"matrix": np.asarray(self.matrix).tolist(), "offset": np.asarray(self.offset).tolist()}

    def describe(self, names=None) -> str:
        """One line: the ratios (motor turns per joint turn) of the independent joints, the
        coupled ones as their rows of R, and the nonzero offsets."""
        R, off = np.asarray(self.matrix), np.asarray(self.offset)
        names = list(names) if names is not None else [f"joint{j + 1}" for j in range(self.n)]
        parts = []
        for j in range(self.n):
            others = [k for k in range(self.n) if k != j and R[j, k] != 0]
            if not others:
                parts.append(f"{names[j]} ratio {1 / R[j, j]:.4g}")
            else:
                row = " + ".join(f"{R[j, k]:.4g} q_m{k + 1}" for k in range(self.n) if R[j, k] != 0)
                parts.append(f"{names[j]} = {row}")
        shifted = [f"{names[j]} {off[j]:+.4g}" for j in range(self.n) if off[j] != 0]
        return (
            "motor-side log through the transmission "
            + ", ".join(parts)
            + (f"; offsets {', '.join(shifted)} rad" if shifted else "")
        )


def _vector(x, n: int, what: str) -> np.ndarray:
    try:
        v = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TransmissionError(f"{what}: expected {n} numbers, got {x!r}") from None
    if v.shape != (n,):
        raise TransmissionError(f"{what}: expected {n} values (one per joint), got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise TransmissionError(f"{what}: value(s) not finite: {v.tolist()}")
    return v


def _matrix(x, what: str, n: int | None = None, check_rank: bool = True) -> np.ndarray:
    try:
        R = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TransmissionError(f"{what}: expected a square matrix of numbers (a list of rows), got {x!r}") from None
    if R.ndim != 2 or R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise TransmissionError(f"{what}: expected a square (n, n) matrix, one row per joint, got shape {R.shape}")
    if n is not None and R.shape[0] != n:
        raise TransmissionError(f"{what}: expected ({n}, {n}) for {n} joints, got shape {R.shape}")
    if not np.all(np.isfinite(R)):
        raise TransmissionError(f"{what}: entries not finite: {R.tolist()}")
    cond = np.linalg.cond(R)
    if not cond < MAX_CONDITION:
        raise TransmissionError(
            f"{what}: singular (condition number {cond:.3g}): two joints are driven by the same "
            "combination of motors; every joint needs a motor of its own (check the coupling's rows)"
        )
    return R


def load(path, names=None) -> Transmission:
    """The transmission of a ``.json`` or ``.toml`` file (format: the module docstring); ``names``
    the model's joint (coordinate) names, to check and order it by. TransmissionError naming the
    file for an unreadable file, a syntax error, an unknown key or a bad value."""
    path = Path(path)
    doc = read_table(path, "a transmission file", TransmissionError)
    return Transmission.from_dict(doc, names, where=str(path))


def joint_side_terms(transmission: Transmission, terms, values) -> dict:
    """Motor-side joint-term values (n, k) of ``terms`` as the joint-side values with the same
    torque, for a transmission without coupled joints (R = diag(d), ``tau = tau_m / d``,
    ``qd_m = qd / d``): ``{term: (n,)}`` for the terms that have one: ia and fv scale by
    ``1 / d^2``, fc by ``1 / |d|`` (its smooth-sign scale eps then acts as ``eps |d|`` on the
    joint), offset by ``1 / d``, fva by ``1 / (d |d|)``. Not ks (its motor-side column holds the
    offset as well) nor fs (its Stribeck velocity scales too). A model file written with them
    (URDF ``<dynamics>``, MJCF) then has the same torques. TransmissionError for a coupled
    transmission, which no joint-side model holds."""
    if not transmission.diagonal:
        raise TransmissionError(
            "the joint terms act on the motors of coupled joints, which no joint-side model file can hold; "
            "keep the parameters in params.json, or write the model file without friction"
        )
    d = np.diag(np.asarray(transmission.matrix))
    factor = {"ia": 1 / d**2, "fv": 1 / d**2, "fc": 1 / np.abs(d), "offset": 1 / d, "fva": 1 / (d * np.abs(d))}
    values = np.asarray(values, dtype=float)
    return {t: values[:, k] * factor[t] for k, t in enumerate(terms) if t in factor}


def motor_side_terms(transmission: Transmission, terms, values) -> np.ndarray:
    """Joint-side joint-term values (n, k) of ``terms`` (e.g. a URDF's ``<dynamics>``) as the
    motor-side values with the same torque (the inverse of [`joint_side_terms`][jaxid.model.transmission.joint_side_terms]), where the
    transmission has no coupled joints and the term has an equivalent; 0 elsewhere (a coupled
    joint's friction is not one motor's). Nominal values only: what a prior starts from."""
    values = np.asarray(values, dtype=float)
    out = np.zeros_like(values)
    if not transmission.diagonal or not len(terms):
        return out
    ones = joint_side_terms(transmission, terms, np.ones_like(values))  # factor per term
    for k, t in enumerate(terms):
        if t in ones:
            out[:, k] = values[:, k] / ones[t]
    return out


def file_values(robot, joint_values) -> np.ndarray:
    """A robot's joint-term values (n_joints, k) as a joint-side model file (URDF ``<dynamics>``,
    MJCF, Pinocchio) holds them: as they are without a transmission; with one, each term's
    joint-side equivalent ([`joint_side_terms`][jaxid.model.transmission.joint_side_terms]), NaN for a term without one, and all NaN with
    a warning for a coupled transmission (the writers then leave those values out)."""
    values = np.asarray(joint_values, dtype=float)
    t = getattr(robot, "transmission", None)
    if t is None:
        return values
    if not t.diagonal:
        warnings.warn(
            "the joint terms act on the motors of coupled joints, which a joint-side model file cannot hold: "
            "they are left out of it (params.json keeps them)",
            stacklevel=3,
        )
        return np.full_like(values, np.nan)
    side = joint_side_terms(t, robot.joint_terms, values)
    return np.stack([side.get(term, np.full(len(values), np.nan)) for term in robot.joint_terms], axis=1).reshape(
        values.shape
    )
