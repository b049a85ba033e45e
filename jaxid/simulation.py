"""Simulated measurements: a perturbed "true" robot, its torques along a trajectory, sensor noise.

Identification is judged on simulated data against a truth that the nominal model does not
know, as in a real experiment where the CAD model is only a prior:

- [`perturb`][jaxid.simulation.perturb] builds the true robot: every link's mass, centre of mass and inertia
  about the centre of mass are changed at random in a way that keeps the body physically
  consistent (positive mass and positive second moments of the mass distribution, i.e. a
  positive definite pseudo-inertia; Wensing, Kim and Slotine, "Linear matrix inequalities
  for physically consistent inertial parameter identification", IEEE RA-L 3(1), 2018), and
  joint friction (viscous ``fv``, Coulomb ``fc``) and torque-sensor offsets are added;
- [`measure`][jaxid.simulation.measure] computes the true torques along a trajectory and adds noise to the
  positions (Gaussian, and/or encoder quantisation) and to the torques;
- [`simulate`][jaxid.simulation.simulate] does both.

Velocities and accelerations are *not* part of a measurement: a real sensor gives positions
and torques, and ``qd``/``qdd`` come from filtered differentiation (``jaxid.signals``). The
noise-free truth (q, qd, qdd, tau) is returned next to the measured dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from jaxid import cache
from jaxid.arrays import device, namespace, plain
from jaxid.data import Dataset, from_arrays
from jaxid.dynamics import spatial
from jaxid.model import inertia

if TYPE_CHECKING:
    from jaxid.model.robot import Robot

#: Ranges of the added joint terms, as fractions of each joint's torque scale T_j (N m):
#: ``fv`` in [0.01, 0.05] T_j per rad/s, ``fc`` in [0.01, 0.05] T_j, ``offset`` in
#: [-0.01, 0.01] T_j, the Stribeck excess ``fs`` (static minus Coulomb level) in [0.005, 0.02]
#: T_j (about half the Coulomb level, Armstrong-Helouvry 1994), the asymmetric viscous ``fva``
#: in [-0.005, 0.005] T_j per rad/s (below fv: both directions stay dissipative), drawn
#: uniformly. T_j is the joint's torque limit ``tau_max`` where it is finite, else the largest
#: gravity torque of the nominal robot over 64 random configurations (at least 1 N m; also
#: where the limits look like placeholders, ``torque_scale``). For
#: the UR5 (150 / 28 N m limits) this gives Coulomb friction of 1.5-7.5 N m on the large
#: joints, the order reported for such arms.
FRICTION_RANGES = {
    "fv": (0.01, 0.05),
    "fc": (0.01, 0.05),
    "offset": (-0.01, 0.01),
    "fs": (0.005, 0.02),
    "fva": (-0.005, 0.005),
}

#: Smallest second moment of a perturbed body, relative to its largest one; a thin rod
#: (two zero second moments, a singular pseudo-inertia) becomes a slightly thick one.
MOMENT_FLOOR = 0.01
#: Smallest second moment in kg m^2 per kg of mass (m^2): a point mass gets a 5 mm radius.
LENGTH_FLOOR = 0.005


class Measurement(eqx.Module):
    """A simulated experiment.

    Attributes:
        data: what the sensors give, a ``Dataset`` with noisy ``q`` (N, n) rad and noisy
            ``tau`` (N, n) N m; ``qd``, ``qdd`` are None (differentiate ``q`` to get them).
        q, qd, qdd: the true trajectory (N, n), rad, rad/s, rad/s^2.
        tau: the true, noise-free torques (N, n), N m.
        sigma_tau: standard deviation of the torque noise per joint (n,), N m.
        robot: the true robot that produced ``tau`` (payload merged into its last link).
    """

    data: Dataset
    q: jax.Array
    qd: jax.Array
    qdd: jax.Array
    tau: jax.Array
    sigma_tau: jax.Array
    robot: Robot


# ------------------------------------------------------------------------------- perturb
def _perturb_link(pi, key, scale):
    """One link's 10-vector, perturbed and kept consistent (a massless link stays as it is)."""
    k_m, k_s, k_axis, k_angle, k_c = jax.random.split(key, 5)
    m = pi[0]
    massive = m > 0
    m_safe = jnp.where(massive, m, 1.0)
    _, c, I_c = inertia.to_mass_com_inertia(jnp.where(massive, pi, pi.at[0].set(1.0)))
    lam, R = jnp.linalg.eigh(0.5 * (I_c + I_c.T))
    # Principal second moments s_i = integral of x_i^2 dm: I_1 = s_2 + s_3 etc. A body is
    # physically consistent iff m > 0 and every s_i > 0 (the triangle inequalities, strict).
    s = 0.5 * jnp.sum(lam) - lam
    s = jnp.maximum(s, jnp.maximum(MOMENT_FLOOR * jnp.max(s), m_safe * LENGTH_FLOOR**2))
    m_new = m_safe * (1.0 + scale * jax.random.uniform(k_m, minval=-1.0, maxval=1.0))
    # The mass factor scales the density, the second factor the shape.
    s_new = s * (m_new / m_safe) * (1.0 + scale * jax.random.uniform(k_s, (3,), minval=-1.0, maxval=1.0))
    axis = jax.random.normal(k_axis, (3,))
    angle = scale * jnp.pi / 2 * jax.random.uniform(k_angle, minval=-1.0, maxval=1.0)
    R_new = spatial.axis_angle(axis / jnp.linalg.norm(axis), angle) @ R
    I_new = (R_new * (jnp.sum(s_new) - s_new)) @ R_new.T
    radius = jnp.sqrt(jnp.sum(s) / m_safe)  # radius of gyration about the centre of mass
    c_new = c + scale * radius * jax.random.uniform(k_c, (3,), minval=-1.0, maxval=1.0)
    return jnp.where(massive, inertia.from_mass_com_inertia(m_new, c_new, I_new), pi)


@jax.jit
def _perturb_links(inertial, key, scale):
    return jax.vmap(_perturb_link, in_axes=(0, 0, None))(inertial, jax.random.split(key, inertial.shape[0]), scale)


@cache.jit  # n, a Python int, is static: one stored program per joint count
def _draws(key, n):
    """(the links' key, uniform draws (n, 5) of the n joints' terms) of a true robot's key."""
    k_links, k_joints = jax.random.split(key)
    # fv, fc, offset keep the draws they had before fs and fva existed, so seeded truths are unchanged.
    draws = jnp.concatenate(
        [
            jax.random.uniform(k_joints, (n, 3)),
            jax.random.uniform(jax.random.fold_in(k_joints, 1), (n, len(FRICTION_RANGES) - 3)),
        ],
        axis=1,
    )
    return k_links, draws


#: Torque limits whose largest is more than this many times the robot's largest gravity torque are
#: read as a model file's placeholders, not its drives' (example-robot-data's finger_edu: effort
#: 1000 N m on links whose gravity torque is at most 0.22 N m, 4600x; real arms measured 0.8-12x:
#: Talos arm, Panda, xArm7, UR5/UR10, Z1, Kinova, SO-101).
PLACEHOLDER_TAU_RATIO = 100.0


def torque_scale(robot) -> np.ndarray:
    """Torque scale T_j (n,) N m of each joint: ``tau_max`` where finite, else the largest
    |gravity torque| of the robot over 64 random configurations (at least 1 N m). Limits that
    look like placeholders ([`PLACEHOLDER_TAU_RATIO`][jaxid.simulation.PLACEHOLDER_TAU_RATIO])
    are not a scale: friction 1-5 % of 1000 N m would bury a 0.2 N m finger's dynamics; those
    robots take the gravity torques too (at least 1 % of the largest), with a warning."""
    import warnings

    from jaxid.dynamics.terms import gravity_torques

    tau_max = np.asarray(robot.tau_max)
    finite = np.isfinite(tau_max)
    # A bound of every gravity torque, on the host (g 9.81 m/s^2 x total mass x reach: the link
    # offsets and the farthest centre of mass): limits below its ratio need no gravity program.
    m = np.asarray(robot.inertial)[:, 0]
    h = np.asarray(robot.inertial)[:, 1:4]
    reach = np.sum(np.linalg.norm(np.asarray(robot.placements)[:, :3, 3], axis=1))
    reach += np.max(np.linalg.norm(h, axis=1) / np.where(m > 0, m, 1.0), initial=0.0)
    bound = 9.81 * np.sum(np.maximum(m, 0.0)) * reach
    if finite.all() and np.max(tau_max) <= PLACEHOLDER_TAU_RATIO * bound:
        return tau_max
    n = robot.n
    lo = np.where(np.isfinite(robot.q_min), robot.q_min, -np.pi)
    hi = np.where(np.isfinite(robot.q_max), robot.q_max, np.pi)
    q = np.random.default_rng(0).uniform(lo, hi, size=(64, n))
    rigid = robot.with_joint_terms(())
    g = np.max(np.abs(np.asarray(gravity_torques(rigid, q))), axis=0)
    if finite.any() and 0.0 < g.max() and np.max(tau_max[finite]) > PLACEHOLDER_TAU_RATIO * g.max():
        warnings.warn(
            f"torque limits up to {np.max(tau_max[finite]):g} N m are {np.max(tau_max[finite]) / g.max():.0f}x the "
            f"robot's largest gravity torque ({g.max():.3g} N m): placeholders, not its drives' limits; the "
            "simulated friction and offsets are scaled on the gravity torques instead",
            stacklevel=2,
        )
        return np.maximum(g, 0.01 * g.max())
    if finite.all():
        return tau_max
    return np.where(finite, tau_max, np.maximum(g, 1.0))


def perturb(robot, key, scale: float = 0.2, friction: Sequence[str] = ("fv", "fc", "offset")):
    """A "true" robot: the nominal one with perturbed links and added joint friction.

    Per link with m > 0 (massless links are kept):
      - mass multiplied by a factor uniform in [1 - scale, 1 + scale];
      - principal second moments of the mass distribution (s_i = integral x_i^2 dm about the
        centre of mass) first floored at ``MOMENT_FLOOR`` of the largest and at
        m (``LENGTH_FLOOR``)^2, then scaled with the mass and by factors uniform in
        [1 - scale, 1 + scale]; the principal axes rotated about a random axis by an angle
        uniform in [-scale pi/2, scale pi/2]. With every s_i > 0 and m > 0 the body is
        physically consistent (positive definite pseudo-inertia);
      - centre of mass shifted by ``scale * r * u``, r the radius of gyration about the
        centre of mass (m), u uniform in [-1, 1]^3.
    Joint terms in ``friction`` are drawn uniformly from [`FRICTION_RANGES`][jaxid.simulation.FRICTION_RANGES] times the
    torque scale of [`torque_scale`][jaxid.simulation.torque_scale]; other enabled joint terms (e.g. ``ia``) keep their values.
    With a transmission (``robot.transmission``, terms on the motors) they are drawn as the
    same joint-side friction carried to the motor by its own gear (R's diagonal d: ``fv_m = d^2 fv``,
    ``fc_m = |d| fc``, ...), so that a 1:100 gear gets a motor's friction, not a joint's.

    robot: the nominal ``Robot``. key: ``jax.random`` key. scale: relative size of the
    perturbation, in [0, 1). friction: subset of ``FRICTION_RANGES`` (``fv, fc, offset, fs, fva``).
    Returns the true ``Robot``, with joint terms ``robot.joint_terms`` plus ``friction``.
    """
    scale = float(scale)
    if not 0.0 <= scale < 1.0:
        raise ValueError(f"scale must be in [0, 1) so that masses stay positive, got {scale}")
    friction = tuple(friction)
    bad = [f for f in friction if f not in FRICTION_RANGES]
    if bad:
        raise ValueError(f"unknown friction terms {bad}; choose from {tuple(FRICTION_RANGES)}")
    k_links, draws = _draws(key, robot.n_joints)
    # The links by their own program, as always (a body with equal principal moments has no
    # unique axes, and another program may pick others): seeded truths stay as they were.
    links = _perturb_links(robot.inertial, k_links, scale)
    # The friction below on the host (a few numbers, no programs); in jax where the key is traced.
    xp = namespace(draws, robot.joint_params)
    draws = xp.asarray(draws)
    T = torque_scale(robot)[np.asarray(robot.coordinates)]  # per joint: a coupled joint takes its master's
    drawn = {f: (lo + (hi - lo) * draws[:, j]) * T for j, (f, (lo, hi)) in enumerate(FRICTION_RANGES.items())}
    if robot.transmission is not None:  # the inverse of jaxid.model.transmission.joint_side_terms, per own gear
        d = np.diag(np.asarray(robot.transmission.matrix))
        motor = dict(fv=d**2, fva=d * np.abs(d), fc=np.abs(d), fs=np.abs(d), offset=d)
        drawn = {f: v * motor[f] for f, v in drawn.items()}
    old = dict(zip(robot.joint_terms, xp.asarray(robot.joint_params).T))
    true = robot.with_joint_terms(tuple(robot.joint_terms) + friction)
    values = (
        xp.stack([drawn[t] if t in friction else old[t] for t in true.joint_terms], axis=1)
        if true.joint_terms
        else None
    )
    true = robot.with_joint_terms(true.joint_terms, values)
    return eqx.tree_at(lambda r: r.inertial, true, links)


# ------------------------------------------------------------------------------- measure
def payload_vector(mass, com, inertia_com=None, *, box=None):
    """Payload 10-vector in the flange frame from mass (kg), centre of mass com (3,) m and
    either its inertia about the centre of mass (3, 3) kg m^2 or the size (3,) m of a uniform
    box (``box``) centred there; a point mass when neither is given."""
    if inertia_com is not None and box is not None:
        raise ValueError("give either inertia_com or box for the payload, not both")
    if not float(mass) > 0:
        raise ValueError(f"payload mass must be > 0 kg, got {mass}")
    if box is not None and (len(box) != 3 or not all(np.isfinite(b) and b > 0 for b in box)):
        raise ValueError(f"payload box must be three finite sizes > 0 m, got {plain(box)}")
    I_c = (
        inertia.box_inertia(float(mass), tuple(float(b) for b in box))
        if box is not None
        else jnp.zeros((3, 3))
        if inertia_com is None
        else jnp.asarray(inertia_com, dtype=float)
    )
    return inertia.from_mass_com_inertia(float(mass), jnp.asarray(com, dtype=float), I_c)


@cache.jit  # stored: a warm process loads it instead of tracing and lowering it again
def _noise(key, q, tau, sigma_q, sigma_tau, step):
    kq, kt = jax.random.split(key)
    qm = q + sigma_q * jax.random.normal(kq, q.shape)
    # An encoder reports the nearest multiple of its resolution; step 0 means none.
    qm = jnp.where(step > 0, jnp.round(qm / jnp.where(step > 0, step, 1.0)) * step, qm)
    return qm, tau + sigma_tau * jax.random.normal(kt, tau.shape)


@cache.jit  # one stored program, not a split and a slice of each key eagerly
def _experiment_keys(key, noise_key):
    """(the true robot's key, the noise's key) of ``simulate``."""
    k_true, k_noise = jax.random.split(key)
    return k_true, k_noise if noise_key is None else jax.random.split(noise_key)[1]


def gaussian_noise(key, arrays, sigmas):
    """Each array of ``arrays`` plus independent zero-mean Gaussian noise of the matching
    standard deviation of ``sigmas`` (same unit as the array; scalar or broadcastable), one
    subkey of ``jax.random.split(key, len(arrays))`` each. jit/vmap-able in key and sigmas.
    Returns a tuple of the noisy arrays."""
    keys = jax.random.split(key, len(arrays))
    return tuple(x + s * jax.random.normal(k, jnp.shape(x)) for x, s, k in zip(arrays, sigmas, keys))


def measure(
    robot,
    t,
    q,
    qd,
    qdd,
    key,
    *,
    sigma_q: float = 1e-4,
    quantization: float | None = None,
    tau_sigma=None,
    tau_rel: float | None = None,
    payload=None,
    lugre=None,
) -> Measurement:
    """Torques of ``robot`` along a trajectory, with measurement noise.

    robot: the true ``Robot`` (e.g. from [`perturb`][jaxid.simulation.perturb]).
    t: sample times (N,), s, strictly increasing. q, qd, qdd: the trajectory (N, n), rad,
        rad/s, rad/s^2. key: ``jax.random`` key.
    sigma_q: standard deviation of Gaussian position noise, rad (>= 0).
    quantization: encoder resolution, rad: the noisy position is rounded to a multiple of
        it (None: no rounding).
    tau_sigma: torque noise standard deviation, N m, scalar or per joint (n,); or
    tau_rel: torque noise standard deviation as a fraction of each joint's true torque
        range (max - min along the trajectory). Give at most one; default tau_rel = 0.005.
    payload: optional payload 10-vector in the flange frame (see [`payload_vector`][jaxid.simulation.payload_vector]),
        merged into the last link before the torques are computed.
    lugre: optional per-joint LuGre friction (``jaxid.friction.LuGre``, fields (n,) or
        scalars; rad, rad/s, N m): its torque along the true trajectory, bristle states
        integrated from rest (``jaxid.friction.lugre_joint_torque``; t uniform), is added
        to the rigid-body torques. ``tau - rnea(robot, ...)`` is then the article's
        per-joint friction record F = tau - tau_dyn.

    Returns [`Measurement`][jaxid.simulation.Measurement] (noisy dataset and the noise-free truth).
    """
    from jaxid.dynamics.terms import rnea

    t = np.asarray(t, dtype=float)
    q, qd, qdd = (np.asarray(x, dtype=float) for x in (q, qd, qdd))
    n = robot.n
    if t.ndim != 1 or any(x.shape != (t.shape[0], n) for x in (q, qd, qdd)):
        raise ValueError(
            f"t must be (N,) and q, qd, qdd (N, {n}) for this {n}-joint robot; got t {t.shape}, "
            f"q {q.shape}, qd {qd.shape}, qdd {qdd.shape}"
        )
    for name, x in (("t", t), ("q", q), ("qd", qd), ("qdd", qdd)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf; repair the trajectory")
    if not (np.isfinite(sigma_q) and sigma_q >= 0):
        raise ValueError(f"sigma_q must be a finite number >= 0 rad, got {sigma_q}")
    if quantization is not None and not (np.isfinite(quantization) and quantization > 0):
        raise ValueError(f"quantization (encoder resolution) must be > 0 rad, got {quantization}")
    if tau_sigma is not None and tau_rel is not None:
        raise ValueError("give either tau_sigma (N m) or tau_rel (fraction of the torque range), not both")
    if payload is not None:
        from jaxid.identification.payload import attach_payload  # lazily: it pulls in optimistix

        robot = attach_payload(robot, payload)
    tau = np.asarray(rnea(robot, q, qd, qdd))
    if lugre is not None:
        from jaxid.friction.lugre import joint_torque

        tau = tau + np.asarray(joint_torque(lugre, t, qd))
    if tau_sigma is None:
        tau_rel = 0.005 if tau_rel is None else float(tau_rel)
        if not (np.isfinite(tau_rel) and tau_rel >= 0):
            raise ValueError(f"tau_rel must be a finite fraction >= 0, got {tau_rel}")
        sigma_tau = tau_rel * (tau.max(axis=0) - tau.min(axis=0))
    else:
        sigma_tau = np.broadcast_to(np.asarray(tau_sigma, dtype=float), (n,))
        if not np.all(np.isfinite(sigma_tau)) or np.any(sigma_tau < 0):
            raise ValueError(f"tau_sigma must be finite and >= 0 N m, got {tau_sigma}")
    qm, taum = _noise(
        key,
        np.asarray(q, dtype=float),
        tau,
        np.asarray(sigma_q, dtype=float),
        sigma_tau,
        np.asarray(0.0 if quantization is None else quantization, dtype=float),
    )
    data = from_arrays(t, qm, taum, source="simulated")
    return Measurement(
        data=data,
        q=device(q),
        qd=device(qd),
        qdd=device(qdd),
        tau=device(tau),
        sigma_tau=device(sigma_tau),
        robot=robot,
    )


def simulate(
    robot,
    t,
    q,
    qd,
    qdd,
    key,
    *,
    scale: float = 0.2,
    friction: Sequence[str] = ("fv", "fc", "offset"),
    noise_key=None,
    **noise,
) -> Measurement:
    """Perturb the nominal ``robot`` ([`perturb`][jaxid.simulation.perturb]) and measure the true one along the
    trajectory ([`measure`][jaxid.simulation.measure]; ``noise`` are its keyword arguments). The true robot is
    ``result.robot``. Same key, same experiment.

    key: draws the true robot, and the noise unless ``noise_key`` is given: the same ``key``
    with another ``noise_key`` is a second experiment on the same simulated robot (the keys
    are split so that ``noise_key == key`` gives the experiment of ``key`` alone)."""
    k_true, k_noise = _experiment_keys(key, noise_key)
    return measure(perturb(robot, k_true, scale, friction), t, q, qd, qdd, k_noise, **noise)
