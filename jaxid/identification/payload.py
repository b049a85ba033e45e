"""Payload identification on top of an identified robot model.

With a load rigidly attached to the flange, the joint torques are

    tau = tau_robot(q, qd, qdd; theta_robot) + J(q)^T w(q, qd, qdd; theta_L),

where ``J`` is the geometric Jacobian of the flange and ``w`` the Newton-Euler wrench
that accelerates the load (equal and opposite to the wrench the load exerts on the
last link). ``w`` is linear in the load's inertial 10-vector ``theta_L = [m, m sx, m sy,
m sz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` expressed in the flange frame (inertia about the
flange origin), so ``tau - tau_robot = Phi_L(q, qd, qdd) @ theta_L`` (Khalil and
Dombre, *Modeling, Identification and Control of Robots*, 2002, ch. 12.8; Kubus, Kroger
and Wahl, "On-line estimation of inertial parameters using a recursive total least-squares
approach", IROS 2008). ``Phi_L`` is ``jax.jacfwd`` of that torque in ``theta_L``.

The robot model is identified once; ``identify_payload`` subtracts its prediction and
fits ``theta_L`` by weighted least squares, optionally on a subset of joints, reports
which parameters (or combinations) the chosen joints and trajectory identify, and
checks physical consistency, with a constrained estimate through the log-Cholesky
parametrisation of the pseudo-inertia (Rucker and Wensing, 2022) when the LS one fails.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from jaxid import arrays, cache, signals
from jaxid.arrays import AnyArray, plain
from jaxid.dynamics import spatial
from jaxid.dynamics.batching import batched
from jaxid.dynamics.rnea import kinematics, link_wrench
from jaxid.dynamics.terms import rnea
from jaxid.identification.base import TOL, BaseParameters, base_from_regressor
from jaxid.identification.consistent import project_consistent
from jaxid.identification.estimators import Identification, identify
from jaxid.identification.jackknife import BLOCKS, at_least, block_jackknife
from jaxid.identification.regressor import regressor as jaxid_regressor
from jaxid.model import inertia

#: Names of the payload parameters, in the order of ``theta_L``.
PAYLOAD_NAMES = tuple(f"{k}L" for k in inertia.INERTIAL_NAMES)

#: ``identify_payload`` warns when an inertia entry's std exceeds this fraction of trace/3 of the
#: (constrained) estimate: the inertia is then not determined by the data at their noise level.
INERTIA_STD = 0.1


#: Relative std of each joint's torque gain that ``identify_payload``'s std includes by default
#: (``gain_std=``): what a torque logged in N m and right to about 2 % (a calibrated joint-torque sensor)
#: leaves in the payload, a bias that no residual shows (a gain on the payload's torque is a payload of
#: another size).
GAIN_STD = 0.02

#: The same for torques that are motor currents times torque constants (a log read with ``gains``,
#: ``jaxid payload --gains``): a datasheet's torque constant is typically within +-10 %, and the gear's
#: efficiency varies with load and temperature (the UR10e's current-based runs of
#: ``benchmarks/ur10e_payload.py``: its known 2.805 kg load comes out 11-12 % light on both paths).
CURRENT_GAIN_STD = 0.1

#: The loaded data's noise variance is scaled by this to find ``PayloadFit.std_floor``: what the
#: robot prior alone leaves once the data determine every other direction (to 1 % of their std).
_FLOOR_SCALE = 1e-4


# ------------------------------------------------------------------------ kinematics
def _flange(robot, q, qd, qdd):
    """Flange Jacobian (6, n), velocity v (6,) and acceleration a (6,), all in the flange frame."""
    vl, al, U = kinematics(robot, q, qd, qdd)
    # Flange link's frame -> flange frame; U[b] already zeroes joints that do not carry link b,
    # and to_coordinates moves coupled joints' columns onto their masters (dx = J G dq).
    b = robot.tip_joint
    X = spatial.motion_transform(robot.tip)
    return robot.to_coordinates((X @ U[b].T).T).T, X @ vl[b], X @ al[b]


def flange_jacobian(robot, q):
    """Geometric Jacobian of the flange in the flange frame, shape (6, n).

    Rows ``[omega; v]`` (rad/s, m/s per unit qd) of the flange origin, expressed in the
    flange frame ``robot.tip``; q: joint positions (n,), rad.
    """
    q = jnp.asarray(q, dtype=float)
    return _flange(robot, q, jnp.zeros_like(q), jnp.zeros_like(q))[0]


def _payload_wrench(robot, theta_L, q, qd, qdd):
    J, v, a = _flange(robot, q, qd, qdd)
    # Newton-Euler in the (moving) flange frame, where the load's inertia is constant;
    # a carries gravity as an upward acceleration of the base.
    return J, link_wrench(theta_L, v, a)


def _payload_torque(robot, theta_L, q, qd, qdd):
    J, w = _payload_wrench(robot, theta_L, q, qd, qdd)
    return J.T @ w


def _check_payload(theta_L):
    theta_L = (
        jnp.asarray(theta_L, dtype=float) if arrays.is_traced(theta_L) else arrays.device(np.asarray(theta_L, float))
    )
    if theta_L.shape != (10,):
        raise ValueError(
            f"theta_L must be the payload's inertial 10-vector [m, m sx, m sy, m sz, Ixx, Ixy, "
            f"Iyy, Ixz, Iyz, Izz] with shape (10,), got {theta_L.shape}"
        )
    if not isinstance(theta_L, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(theta_L))):
        raise ValueError("theta_L contains NaN or inf")
    return theta_L


def payload_wrench(robot, theta_L, q, qd, qdd):
    """Wrench ``w = I a + v x* I v`` that moves the payload, in the flange frame, shape (..., 6).

    ``[n; f]`` (N m, N) about the flange origin; the payload exerts ``-w`` on the last link.
    theta_L: payload inertial 10-vector in the flange frame (kg, kg m, kg m^2);
    q, qd, qdd: (n,) or (N, n), rad, rad/s, rad/s^2.
    """
    return _wrench_batch(robot, _check_payload(theta_L), q, qd, qdd)


@eqx.filter_jit
def _wrench_batch(robot, theta_L, q, qd, qdd):
    return batched(lambda r, *x: _payload_wrench(r, theta_L, *x)[1], robot, q, qd, qdd)


@eqx.filter_jit
def _torque_batch(robot, theta_L, q, qd, qdd):
    return batched(lambda r, *x: _payload_torque(r, theta_L, *x), robot, q, qd, qdd)


def payload_torque(robot, theta_L, q, qd, qdd):
    """Joint torques of the payload, ``J(q)^T w``, shape (n,) or (N, n), N m.

    robot: ``jaxid.Robot`` (its kinematics and flange ``tip``; its inertial parameters
    play no part). theta_L: payload inertial 10-vector ``[m, m sx, m sy, m sz, Ixx, Ixy,
    Iyy, Ixz, Iyz, Izz]`` in the flange frame, inertia about the flange origin (kg, kg m,
    kg m^2). q, qd, qdd: (n,) or (N, n), rad, rad/s, rad/s^2.
    """
    return _torque_batch(robot, _check_payload(theta_L), q, qd, qdd)


@cache.jit
def payload_regressor(robot, q, qd, qdd):
    """Payload regressor Phi_L with ``payload_torque = Phi_L @ theta_L``: (n, 10) or (N, n, 10).

    ``jax.jacfwd`` of ``payload_torque`` in theta_L (exact: the torque is linear in it).
    q, qd, qdd: (n,) or (N, n), rad, rad/s, rad/s^2. Columns in the order of
    ``PAYLOAD_NAMES``; units N m per kg, kg m, kg m^2.
    """
    jac = jax.jacfwd(_payload_torque, argnums=1)
    return batched(lambda r, *x: jac(r, jnp.zeros(10), *x), robot, q, qd, qdd)


class PayloadRows(eqx.Module):
    """``payload_regressor`` with joint j's rows times ``weights[j]``: (N, n, 10) from q, qd, qdd (N, n).

    What ``jaxid excite --payload`` designs for (``optimize(regressor_fn=...)``; weights (n,): one over
    each joint's noise scale, there its torque limit). A module rather than a ``functools.partial``:
    the excitation optimiser's programs hold it, and with a partial they can be neither keyed nor
    stored (``jaxid.cache.jit``), so they were compiled again at every call, in a new process and in
    the same one (where each compile kept about 2000 memory maps until the process ran out).
    """

    robot: object
    weights: AnyArray

    def __call__(self, q, qd, qdd):
        return payload_regressor(self.robot, q, qd, qdd) * self.weights[:, None]


def attach_payload(robot, theta_L):
    """The robot with the payload merged into the flange's link (``robot.tip_joint``).

    theta_L (10,) is moved from the flange frame to that joint frame
    (``inertia.transform`` by ``robot.tip``) and added to the link's parameters.
    """
    theta_L = _check_payload(theta_L)
    b = robot.tip_joint
    merged = robot.inertial[b] + inertia.transform(theta_L, robot.tip)
    return eqx.tree_at(lambda r: r.inertial, robot, robot.inertial.at[b].set(merged))


# ------------------------------------------------------------------ physical consistency
def consistency_failures(theta_L, rtol: float = 1e-10) -> tuple[str, ...]:
    """The physical-consistency conditions theta_L (10,) fails, as readable strings.

    Conditions: mass m > 0 and pseudo-inertia positive semi-definite (Wensing, Kim and
    Slotine 2017; equivalent to the triangle inequalities of the principal moments at the
    centre of mass), to rounding: smallest eigenvalue >= -rtol * largest |eigenvalue|.
    The semi-definite boundary holds degenerate bodies (point masses, rods, plates), where
    a constrained estimate ends when the data push towards them. Empty when consistent.
    """
    theta_L = np.asarray(theta_L, dtype=float)
    failed = []
    if not theta_L[0] > 0:
        failed.append(f"mass m = {theta_L[0]:.6g} kg is not > 0")
    lam = np.linalg.eigvalsh(inertia.pseudo_inertias(theta_L))  # numpy in, numpy out: no program
    if not lam[0] >= -rtol * np.max(np.abs(lam)):
        failed.append(f"pseudo-inertia is not positive definite (smallest eigenvalue {lam[0]:.3g})")
    return tuple(failed)


@cache.jit
def _consistent_fit(theta_ls, cov):
    # For a linear model the whitened residual splits exactly:
    #   ||L^-1 (W theta - y)||^2 = ||L^-1 (W theta_ls - y)||^2 + (theta - theta_ls)^T cov^-1 (theta - theta_ls)
    # with cov = (W^T Sigma^-1 W)^-1, so least squares on the 10-vector
    # C^-1/2 (theta - theta_ls) / std is least squares on the whitened residual.
    std = jnp.sqrt(jnp.diag(cov))
    L = jnp.linalg.cholesky(cov / jnp.outer(std, std))

    def residual(z, _):
        d = (inertia.log_cholesky_to_inertial(z) - theta_ls) / std
        return jax.scipy.linalg.solve_triangular(L, d, lower=True)

    z0 = inertia.inertial_to_log_cholesky(project_consistent(theta_ls))
    # When the LS estimate is inconsistent the optimum lies on the boundary of the
    # consistent set, at z -> -inf in some log-diagonal entries: Levenberg-Marquardt's
    # step test then never passes and it crawls, while BFGS on the sum of squares
    # converges (measured: 250 steps vs > 1000).
    solver = optx.BFGS(rtol=1e-10, atol=1e-10)
    sol = optx.least_squares(residual, solver, z0, max_steps=2000, throw=False)
    return inertia.log_cholesky_to_inertial(sol.value), sol.result == optx.RESULTS.successful


def consistent_estimate(theta_ls, cov):
    """Physically consistent payload estimate closest to a least-squares one.

    Minimises the whitened residual over consistent bodies, parametrised by the
    log-Cholesky factor of the pseudo-inertia (Rucker and Wensing 2022), with
    optimistix' BFGS. For a linear model that residual equals, up to a
    constant, the Mahalanobis distance ``(theta - theta_ls)^T cov^-1 (theta - theta_ls)``,
    which is what is solved (10 residuals instead of N*n).

    theta_ls: LS estimate (10,); cov: its covariance (10, 10), positive definite.
    Returns (theta (10,), converged: bool). Equals theta_ls when that is consistent.
    """
    theta_ls = _check_payload(theta_ls)
    cov = arrays.device(np.asarray(cov, dtype=float))
    if cov.shape != (10, 10) or not np.all(np.isfinite(np.asarray(cov))):
        raise ValueError(f"cov must be a finite (10, 10) covariance, got shape {cov.shape}")
    c = np.asarray(cov)
    if not np.allclose(c, c.T, rtol=1e-10, atol=0) or np.linalg.eigvalsh(c)[0] <= 0:
        raise ValueError(
            "cov must be symmetric positive definite (the covariance of a full-rank fit); "
            "use the cov of a PayloadFit with rank 10"
        )
    theta, ok = _consistent_fit(theta_ls, cov)
    return theta, bool(ok)


# ------------------------------------------------------------------------ preprocessing
def preprocess(
    t,
    q,
    tau,
    *,
    period: int | None = None,
    average: bool = False,
    smooth: int = 0,
    commanded=None,
    cutoff: float | None = None,
    step: int = 1,
):
    """Measured (t, q, tau) -> (t, q, qd, qdd, tau) ready for ``identify_payload``.

    In this order: average the M periods of a periodic excitation into one
    (``jaxid.signals.period_average``; noise std falls by sqrt(M)); five-point cubic
    smoothing of q and tau repeated ``smooth`` times (``jaxid.signals.five_point_cubic``);
    velocities and accelerations either from the commanded trajectory's analytic form
    or by zero-phase Butterworth filtering and central differences
    (``jaxid.signals.derivatives``); finally every ``step``-th sample is kept.

    t: times (N,), s, uniform. q: positions (N, n), rad. tau: torques (N, n), N m.
    period: samples per excitation period; the record must hold whole periods. It is
        then treated as periodic: smoothing and filtering wrap around the ends (one
        period of padding each side), so there are no edge transients to trim.
    average: average the periods into one (needs ``period``).
    smooth: number of five-point cubic passes, >= 0.
    commanded: ``commanded(t) -> (q, qd, qdd)``, each (len(t), n), e.g.
        ``functools.partial(jaxid.excitation.fourier, a, b, q0, omega_f)``; when given it
        replaces the measured q and its derivatives (the robot tracks it).
    cutoff: Butterworth cutoff for differentiation, Hz (default fs / 10).
    step: sub-sampling factor, int >= 1 (e.g. 10: 1 kHz -> 100 Hz).
    """
    t = np.asarray(t, dtype=float)
    q, tau = np.asarray(q, dtype=float), np.asarray(tau, dtype=float)
    if t.ndim != 1 or q.ndim != 2 or tau.shape != q.shape or q.shape[0] != t.shape[0]:
        raise ValueError(
            f"t must be (N,), q and tau (N, n) with the same N; got t {t.shape}, q {q.shape}, tau {tau.shape}"
        )
    for name, x in (("t", t), ("q", q), ("tau", tau)):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf; remove or repair those samples")
    if t.shape[0] < 10:
        raise ValueError(f"{t.shape[0]} samples are too few to filter; record at least 10")
    dt = (t[-1] - t[0]) / (t.shape[0] - 1)
    if not dt > 0 or np.any(np.abs(np.diff(t) - dt) > 1e-6 * dt):
        raise ValueError(
            "t must be uniformly spaced and increasing (resample with jaxid.data.read(..., resample=True))"
        )
    for name, v, lo in (("smooth", smooth, 0), ("step", step, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {plain(v)!r}")
    if average and period is None:
        raise ValueError("average=True needs period (samples per excitation period)")
    if period is not None:
        if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or not 5 <= period <= len(t):
            raise ValueError(f"period must be an integer number of samples in [5, {len(t)}], got {plain(period)!r}")
        if len(t) % period:
            raise ValueError(
                f"the record has {len(t)} samples, not whole periods of {period}; trim it to "
                f"{len(t) // period * period} samples"
            )
    if average and period is not None:  # period None with average raised above
        q, tau = (np.asarray(signals.period_average(x, period)) for x in (q, tau))
        t = t[:period]
    # Periodic records wrap around their ends; others are processed as they are.
    pad = min(period, len(t)) if period is not None else 0
    wrap = lambda x: np.concatenate([x[len(x) - pad :], x, x[:pad]]) if pad else x
    trim = lambda x: np.asarray(x)[pad : len(x) - pad] if pad else np.asarray(x)
    qw, tauw = wrap(q), wrap(tau)
    if smooth:
        qw, tauw = signals.five_point_cubic(qw, smooth), signals.five_point_cubic(tauw, smooth)
    if commanded is not None:
        q, qd, qdd = (np.asarray(x) for x in commanded(jnp.asarray(t)))
        if not q.shape == qd.shape == qdd.shape == tau.shape:
            raise ValueError(f"commanded(t) must return q, qd, qdd of shape {tau.shape}, got {q.shape}")
    else:
        q, qd, qdd = (trim(x) for x in signals.derivatives(qw, dt, cutoff=cutoff))
    tau = trim(tauw)
    return tuple(x[::step] for x in (t, q, qd, qdd, tau))


# ------------------------------------------------------------------------ identification
class PayloadFit(eqx.Module):
    """Result of ``identify_payload``.

    Attributes:
        theta: payload estimate (10,) in the flange frame (``PAYLOAD_NAMES``); NaN for
            parameters the chosen joints and trajectory do not identify individually.
        std: standard deviations (10,), NaN where theta is NaN: sqrt(diag(cov)).
        std_floor: (10,) the part of std that the robot prior leaves when the loaded data's noise
            vanishes: the uncertainty of the flange link's own parameters, which the payload adds to
            and no payload experiment can lower (only an unloaded twin run or a better robot model
            can); NaN without ``robot_cov``.
        cov: covariance (10, 10) (NaN rows/columns where theta is NaN), units of theta^2: with
            ``covariance == "jackknife"`` the delete-a-block jackknife over ``blocks`` contiguous blocks
            of samples, at least the white one (``jackknife.at_least``); it holds the robot model's
            unrepresented error (load-dependent friction, ...) as well as the noise; plus ``cov_gain``.
        std_white, cov_white: (10,), (10, 10): the same under white noise and a right model (the
            Fisher information's inverse at the residual's variance per joint): what the noise alone
            leaves.
        covariance: "jackknife" (``cov`` as above) or "white" (methods other than "wls", "ols").
        blocks: the jackknife's number of blocks G (None with "white").
        gain_std, cov_gain: the relative std of each joint's torque gain assumed, and the covariance
            (10, 10) it adds to ``cov`` (included there; the rest of ``cov`` is the data's).
        identifiable: (10,) bool, which parameters are identified individually.
        rank: rank of the payload regressor on the chosen joints (10 = all identifiable).
        base: ``BaseParameters`` of that regressor (``.names`` the identified combinations).
        theta_base, std_base: estimate and standard deviations of the base combinations (rank,).
        theta_consistent: physically consistent estimate (10,) (== theta when theta is
            consistent); NaN when the regressor is rank deficient.
        failures: physical-consistency conditions theta fails (empty when consistent).
        fit: the ``Identification`` of the base problem with the robot model as given
            (residual_rms, sigma2, cond, ...); with ``robot_cov`` theta and cov are those of the
            robot-updated fit (``_robot_update``), not ``fit.theta``.
        joints: 0-based joint indices used.
        converged: the estimate is final: least squares is a direct solve, and the
            constrained estimate's solver (run only when theta is not consistent) converged.
    """

    theta: jax.Array
    std: jax.Array
    std_floor: jax.Array
    cov: jax.Array
    identifiable: jax.Array
    theta_base: jax.Array
    std_base: jax.Array
    theta_consistent: jax.Array
    base: BaseParameters
    fit: Identification
    rank: int = eqx.field(static=True)
    failures: tuple = eqx.field(static=True)
    joints: tuple = eqx.field(static=True)
    converged: bool = eqx.field(static=True, default=True)
    std_white: jax.Array | None = None
    cov_white: jax.Array | None = None
    covariance: str = eqx.field(static=True, default="white")
    blocks: int | None = eqx.field(static=True, default=None)
    cov_gain: jax.Array | None = None
    gain_std: float = eqx.field(static=True, default=0.0)

    @property
    def consistent(self) -> bool:
        """theta is a physical body (full rank, no ``failures``)."""
        return self.rank == 10 and not self.failures

    def verdict(self) -> str:
        """One line: whether the fit converged and the named check ``consistent`` (pseudo-inertia
        positive semi-definite) of the least-squares payload, with the column it applies to: when
        least squares is not a body, the estimate reported is the constrained body closest to it."""
        solved = "converged" if self.converged else "NOT converged (the constrained estimate's solver stopped)"
        if self.rank < 10:
            physics = f"consistent: not judged (rank {self.rank} of 10: use more joints or a richer trajectory)"
        elif self.consistent:
            physics = "consistent: pass (the least-squares payload is a body; it is the estimate reported)"
        else:
            physics = (
                "consistent: FAIL for the least-squares column: "
                + "; ".join(self.failures)
                + "; the estimate reported is the constrained body closest to it (consistent: pass)"
            )
        return f"{solved}; {physics}"

    @property
    def estimate(self):
        """The payload (10,) as reported: a physical body. ``theta_consistent`` at full rank (``theta``
        itself when that is a body), else ``theta`` (only the identified entries).

        A payload is a rigid body, so its pseudo-inertia is positive semi-definite; the constrained
        estimate is the body closest to ``theta`` in the metric of ``cov``. That projection onto a
        convex set that holds the truth is non-expansive, so its error is never larger than the
        least-squares one in that metric (and smaller whenever ``theta`` is not a body): ``std``,
        the least-squares one, bounds it (measured in ``benchmarks/payload_accuracy.py``)."""
        return self.theta_consistent if self.rank == 10 else self.theta

    @property
    def estimate_kind(self) -> str:
        """What [`estimate`][jaxid.identification.payload.PayloadFit.estimate] is: "constrained" (least squares was not a body) or "least squares"."""
        return "constrained" if self.rank == 10 and not self.consistent else "least squares"

    @property
    def mass(self):
        """Payload mass of ``estimate``, kg."""
        return self.estimate[0]

    @property
    def com(self):
        """Centre of mass of ``estimate`` in the flange frame (3,), m."""
        return self.estimate[1:4] / self.estimate[0]


def _data_arrays(data, n):
    """(q, qd, qdd, tau), each (N, n), from a Dataset or a 4-tuple; checked."""
    if hasattr(data, "q") and hasattr(data, "tau"):
        if data.qd is None or data.qdd is None:
            raise ValueError(
                "the dataset has no velocities/accelerations; read it with derivatives="
                "'butterworth' or use payload preprocessing to compute them"
            )
        given = (data.q, data.qd, data.qdd, data.tau)
    else:
        try:
            given = tuple(data)
        except TypeError:
            raise ValueError("data must be a jaxid Dataset or a tuple (q, qd, qdd, tau)") from None
        if len(given) != 4:
            raise ValueError(f"data must be a tuple (q, qd, qdd, tau), got {len(given)} arrays")
    out = []
    for name, x in zip(("q", "qd", "qdd", "tau"), given):
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{name} must have shape (N, {n}) for this {n}-joint robot, got {x.shape}")
        bad = np.argwhere(~np.isfinite(x))
        if bad.size:
            raise ValueError(
                f"{name} contains NaN or inf (first at sample {bad[0][0]}, joint {bad[0][1] + 1}); "
                "remove or repair those samples"
            )
        out.append(x)
    if len({x.shape[0] for x in out}) != 1:
        raise ValueError(f"q, qd, qdd, tau have different numbers of samples: {[x.shape[0] for x in out]}")
    return tuple(arrays.device(x) for x in out)


def _joint_indices(joints, n):
    if joints is None:
        return tuple(range(n))
    joints = tuple(int(j) for j in joints)
    if not joints:
        raise ValueError("joints is empty; give at least one joint index (0-based)")
    if len(set(joints)) != len(joints) or any(not 0 <= j < n for j in joints):
        raise ValueError(
            f"joints must be distinct 0-based indices in [0, {n - 1}], got {[j.item() if hasattr(j, 'item') else j for j in joints]}"
        )
    return tuple(sorted(joints))


@cache.jit
def _robot_update(Wb, Yr, y, robot_cov, noise):
    """The payload fitted together with a correction of the robot model, whose identified
    estimate and covariance enter as a Gaussian prior: least squares on

        [Wb  Yr L] [theta_b; z] = y   (each sample's rows whitened by the noise),   z = 0,

    with robot_cov = L L^T (L: its eigenvectors times sqrt of its eigenvalues, the null space
    of a base-parameter covariance left out) and the robot's correction Yr L z. This is the
    stacked least squares of the robot's own experiment and the loaded one in information form
    (recursive least squares; Ljung, *System Identification*, 1999, ch. 11.2), so the robot
    parameters that the loaded data determine better than the prior are re-estimated there and
    only those that the payload mimics (the flange link's) keep the prior's uncertainty.

    Wb (N, k, b), Yr (N, k, p) per sample and used joint; y (N, k) torque residuals, N m;
    robot_cov (p, p); noise (k, k) torque noise covariance of a sample, N^2 m^2 (the prior's rows
    are in its units).
    Returns (theta_b (b,), its covariance (b, b), sigma2 (k,) of the updated residuals, the white
    noise's whitened rows A (N, k, b + p) and residuals (N, k), the prior's information (b + p,
    b + p) and the solution (b + p,): what ``jackknife.block_jackknife`` needs).
    """
    N, k, b = Wb.shape
    lam, V = jnp.linalg.eigh(robot_cov)
    keep = lam > 1e-12 * jnp.max(lam)
    L = V * jnp.sqrt(jnp.where(keep, lam, 0.0))  # columns of a discarded direction are zero
    w = jax.scipy.linalg.solve_triangular(jnp.linalg.cholesky(noise), jnp.eye(k), lower=True)
    A = jnp.einsum("ij,njc->nic", w, jnp.concatenate([Wb, Yr @ L], axis=2))
    # The prior's rows; a discarded direction's zero column is then pinned at z = 0 by its own.
    A = jnp.concatenate([A.reshape(N * k, -1), jnp.concatenate([jnp.zeros((L.shape[1], b)), jnp.eye(L.shape[1])], 1)])
    rhs = jnp.concatenate([(y @ w.T).reshape(-1), jnp.zeros(L.shape[1])])
    d = jnp.linalg.norm(A, axis=0)
    d = jnp.where(d > 0, d, 1.0)
    Q, R = jnp.linalg.qr(A / d)
    x = jax.scipy.linalg.solve_triangular(R, Q.T @ rhs) / d
    Rinv = jax.scipy.linalg.solve_triangular(R, jnp.eye(R.shape[0])) / d[:, None]
    r = y - jnp.einsum("nkb,b->nk", Wb, x[:b]) - jnp.einsum("nkp,p->nk", Yr @ L, x[b:])
    s2 = jnp.sum(r**2, axis=0) / jnp.maximum(N - (b + jnp.sum(keep)) / k, 1.0)
    prior = jnp.zeros((A.shape[1],) * 2).at[b:, b:].set(jnp.eye(L.shape[1]))
    return x[:b], (Rinv @ Rinv.T)[:b, :b], s2, A[: N * k].reshape(N, k, -1), r @ w.T, prior, x


@cache.jit
def _gain_cov(A, prior, S, Wr, theta_b, gain_std):
    """Covariance (b, b) of the payload's base estimate, the first b of the c columns of the least squares
    on the whitened rows A (N, k, c) and a prior's information ``prior`` (c, c), from a relative error g_j
    of each joint's torque gain, independent with std ``gain_std``: ``gain_std^2 sum_j D_j D_j^T`` with
    ``D_j = F^-1 sum_t A_t^T wh[:, j] tau_payload[t, j]`` the estimate's change per unit g_j (exact for
    fixed weights: the torque y becomes ``y + g_j tau_payload[:, j]`` on joint j), F the information, wh
    the whitening of a sample's rows by the noise covariance S (k, k) that A's were whitened with, and
    ``tau_payload = Wr theta_b`` (N, k) the payload's fitted torque, N m (Wr (N, k, b) its base
    regressor, theta_b (b,) its estimate). A Type B uncertainty (JCGM 100:2008, *Guide to the expression
    of uncertainty in measurement*, 4.3): stated, not estimated, since a gain on the payload's torque is
    a payload of another size and no residual shows it."""
    wh = jax.scipy.linalg.solve_triangular(jnp.linalg.cholesky(S), jnp.eye(S.shape[0]), lower=True)
    d = jnp.sqrt(jnp.sum(A**2, axis=(0, 1)) + jnp.diag(prior))
    d = jnp.where(d > 0, d, 1.0)
    As = A / d
    F = jnp.einsum("nki,nkj->ij", As, As) + prior / jnp.outer(d, d)
    rhs = jnp.einsum("nkc,kj,nj->cj", As, wh, jnp.einsum("nkb,b->nk", Wr, theta_b))
    D = (jnp.linalg.solve(F, rhs) / d[:, None])[: Wr.shape[2]]
    return gain_std**2 * D @ D.T


# The eager steps of identify_payload on the host or as compiled programs: outside a jit every jnp
# operation on the record compiles a program of its own for its shape.
def _rows(tau, tau_robot, Phi, sel):
    """The payload's torques y (N, k) and regressor rows W (N k, 10) on the joints sel (k,) from
    the measured torques, the robot model's (N, n) and the payload regressor (N, n, 10), on the host
    (numpy: a compiled program per record length bought nothing for a subtraction and a copy)."""
    sel = np.asarray(sel)
    return (np.asarray(tau) - np.asarray(tau_robot))[:, sel], np.asarray(Phi)[:, sel, :].reshape(-1, 10)


def _whitened(Wr, y, theta_b, S):
    """The noise-whitened rows A (N, k, b) and residuals (N, k) of the base fit theta_b, S the
    noise covariance (k, k) of the joints' torques; concrete, on the host."""
    wh = np.linalg.inv(np.linalg.cholesky(np.asarray(S)))  # k x k lower-triangular: its inverse whitens
    Wr, theta_b = np.asarray(Wr), np.asarray(theta_b)
    return np.einsum("ij,njc->nic", wh, Wr), (np.asarray(y) - np.einsum("nkb,b->nk", Wr, theta_b)) @ wh.T


def _expand(theta_b, Cb, Cb_white, ind, identifiable):
    """The ten payload parameters (10,) and their covariances (10, 10) from the base ones
    (columns ind); NaN where a parameter is not identified alone. Concrete, on the host."""
    ind, identifiable = np.asarray(ind), np.asarray(identifiable, bool)

    def full(x, shape, where):
        out = np.full(shape, np.nan)
        out[where] = np.asarray(x)
        return out

    theta = np.where(identifiable, full(theta_b, 10, ind), np.nan)
    both = identifiable[:, None] & identifiable[None, :]
    cov = lambda c: np.where(both, full(c, (10, 10), (ind[:, None], ind[None, :])), np.nan)
    return theta, cov(Cb), cov(Cb_white)


def identify_payload(
    robot,
    theta_robot,
    data,
    *,
    joints: Sequence[int] | None = None,
    cov=None,
    method: str = "wls",
    tol: float = TOL,
    robot_cov=None,
    blocks: int = BLOCKS,
    gain_std: float = GAIN_STD,
) -> PayloadFit:
    """Identify a payload's 10 inertial parameters from data measured with it attached.

    robot: the ``jaxid.Robot`` (kinematics and flange frame; its ``torque`` predicts the
        robot's own torques). theta_robot: the robot's identified parameter vector (p,)
        for ``robot.torque`` — not the truth; base-parameter estimates enter as a full
        vector with the dependent entries zero. None uses ``robot.parameter_vector()``.
    data: ``Dataset`` or tuple (q, qd, qdd, tau), each (N, n), rad, rad/s, rad/s^2, N m.
    joints: 0-based joint indices whose torques are used (e.g. (0, 1, 2) when the
        wrist torques are unreliable); default all.
    cov: noise variances of the used joints (k,) or covariance (k, k), N^2 m^2; default:
        estimated per joint from the residuals (Gautier's two-step WLS, see ``identify``).
    method: estimator of ``jaxid.identification.estimators.identify`` ("wls", "ols",
        "irls", ...); cov only with "wls".
    tol: rank tolerance of ``base_from_regressor``.
    robot_cov: covariance (p, p) of theta_robot (e.g. ``jaxid.results.Params.full_cov()``), or
        None. The robot model's own estimation error enters the residual as
        ``Y_robot dtheta_robot`` and, on another trajectory than the robot was identified on,
        does not average out. With robot_cov the robot's estimate is a Gaussian prior and the
        loaded data correct it together with the payload (``_robot_update``: the stacked least
        squares of both experiments): the directions the loaded data determine are re-estimated
        and leave the payload; those the payload mimics (the flange link's parameters) keep the
        prior's uncertainty, which the payload covariance then holds. Without it the robot is
        taken as exact and the std covers the torque noise only.
    blocks: number G of contiguous blocks of samples of the jackknife covariance (>= 2; default
        [`BLOCKS`][jaxid.identification.jackknife.BLOCKS]).
    gain_std: relative std of each joint's torque gain (torque constant, drive gain, sensor
        calibration), independent between joints, that ``cov`` includes (``_gain_cov``; default
        [`GAIN_STD`][jaxid.identification.payload.GAIN_STD], 2 %; for motor currents times torque
        constants [`CURRENT_GAIN_STD`][jaxid.identification.payload.CURRENT_GAIN_STD], 10 %, is what
        ``jaxid payload`` uses); 0 for torques known exactly.

    The covariance (``PayloadFit.cov``, ``std``) does not assume the model right: it is the
    delete-a-block jackknife of the final least squares (``jaxid.identification.jackknife``;
    Kunsch 1989), raised where needed to be at least the white-noise covariance
    (``jackknife.at_least``). A robot model that is wrong in a way no
    parameter represents (load-dependent friction, cogging, an elastic joint) leaves an error that is
    smooth in time and follows the motion, not white noise, and the fit absorbs part of it: the
    white-noise covariance (``cov_white``, ``std_white``), which counts every sample as independent,
    then understates the payload's error many times, and so does a HAC sandwich of the residuals, which
    no longer hold the absorbed part (``benchmarks/payload_coverage.py``). Leaving a block out, its error
    is no longer fitted, so the spread of the G estimates holds it. With white residuals it estimates the
    white covariance (with G - 1 degrees of freedom). Methods other than "wls" and "ols" keep the white
    covariance. To it is added what an error of ``gain_std`` in each joint's torque gain leaves in the
    estimate (``cov_gain``): a torque scale that is wrong the same way all along the run (a torque constant,
    a gear's torque-proportional losses) is a payload of another size to the data, a bias that neither the
    residuals nor the jackknife show.

    The residual ``tau - robot.torque(theta_robot)`` is regressed on the payload regressor
    of the chosen joints. When its rank is below 10 the base combinations are estimated
    (``PayloadFit.base``) and only individually identified parameters get values. When the
    full estimate is not physically consistent a ``UserWarning`` names the failed
    condition and ``theta_consistent`` holds the constrained estimate.

    Returns ``PayloadFit``. Raises ValueError on malformed data, joints, cov or theta.
    """
    n = robot.n
    q, qd, qdd, tau = _data_arrays(data, n)
    sel = _joint_indices(joints, n)
    theta_robot = robot.parameter_vector() if theta_robot is None else jnp.asarray(theta_robot, dtype=float)
    p = len(robot.parameter_names())
    if theta_robot.shape != (p,) or not np.all(np.isfinite(np.asarray(theta_robot))):
        raise ValueError(
            f"theta_robot must be a finite vector of the robot's {p} parameters, got shape {theta_robot.shape}"
        )
    if (
        isinstance(gain_std, bool)
        or not isinstance(gain_std, (int, float, np.floating, np.integer))
        or not (0 <= gain_std < 1)
    ):
        raise ValueError(
            f"gain_std must be a number in [0, 1) (a relative std of the joints' torque gains, e.g. 0.02), "
            f"got {plain(gain_std)!r}"
        )
    if q.shape[0] * len(sel) <= 10:
        raise ValueError(
            f"{q.shape[0]} samples on {len(sel)} joint(s) give {q.shape[0] * len(sel)} equations "
            "for 10 payload parameters; record more samples"
        )

    y, W = _rows(
        tau, rnea(robot.with_parameters(theta_robot), q, qd, qdd), payload_regressor(robot, q, qd, qdd), np.asarray(sel)
    )
    base = base_from_regressor(W, PAYLOAD_NAMES, tol=tol)
    K = np.asarray(base.K)
    ind = np.asarray(base.indices)
    # A parameter is identified alone when it is a base column no dependent column folds into.
    identifiable = np.zeros(10, bool)
    identifiable[ind] = ~np.any(K != 0, axis=1) if K.size else True

    fit = identify(
        base.reduce(W), np.asarray(y).reshape(-1), method, cov=cov, n_joints=len(sel), names=list(base.names)
    )
    # Host values (numpy) between the compiled steps: an eager jnp operation compiles a program. The
    # robot prior's update below returns jax arrays for the same names.
    S: AnyArray
    S_A: AnyArray
    prior: AnyArray
    Cfloor: AnyArray
    theta_b, Cb, Cfloor = fit.theta, fit.cov, np.full(np.shape(fit.cov), np.nan)
    Wr = np.asarray(base.reduce(W)).reshape(q.shape[0], len(sel), -1)
    given = cov is not None and method == "wls"
    if given:
        S = np.diag(np.asarray(cov, float)) if np.ndim(cov) == 1 else np.asarray(cov, float)
    else:  # the weights the estimator used: per joint ("wls") or pooled (a scale the jackknife ignores)
        s2 = np.asarray(fit.sigma2)
        s2w = s2 if method == "wls" else np.full(len(sel), np.mean(s2))
        S = np.diag(np.maximum(s2w, (1e-8 * np.sqrt(np.mean(np.asarray(y) ** 2, axis=0))) ** 2 + 1e-300))
    A, res = _whitened(Wr, y, theta_b, S)
    prior, x, S_A = np.zeros((Wr.shape[2],) * 2), theta_b, S
    if robot_cov is not None:
        robot_cov = np.asarray(robot_cov, dtype=float)
        if robot_cov.shape != (p, p) or not np.all(np.isfinite(np.asarray(robot_cov))):
            raise ValueError(
                f"robot_cov must be a finite ({p}, {p}) covariance of theta_robot, got shape {robot_cov.shape}"
            )
        Yr = np.asarray(jaxid_regressor(robot, q, qd, qdd))[:, np.asarray(sel), :]
        # The prior's rows need the noise's units: the given cov, else estimated per joint ("wls")
        # or pooled, in two passes: the payload-only residuals behind fit.sigma2 also hold the robot
        # model's error, the updated fit's residuals do not.
        # Floored at 1e-8 of each joint's torque RMS, far below any sensor: noise-free data (s2 at
        # rounding level) would otherwise weight the data 1e14 times the prior and lose its digits.
        s2_min = (1e-8 * np.sqrt(np.mean(np.asarray(y) ** 2, axis=0))) ** 2
        noise = lambda s2: np.diag(
            np.maximum(np.asarray(s2) if method == "wls" else np.full(len(sel), np.mean(np.asarray(s2))), s2_min)
        )
        S = (
            (np.diag(np.asarray(cov, float)) if np.ndim(cov) == 1 else np.asarray(cov, float))
            if given
            else noise(fit.sigma2)
        )
        for _ in range(1 if given else 2):
            theta_b, Cb, s2, A, res, prior, x = _robot_update(Wr, Yr, y, robot_cov, S)
            S_A, S = S, S if given else noise(s2)
        Cfloor = _robot_update(Wr, Yr, y, robot_cov, _FLOOR_SCALE * S)[1]
    Cb_white, used_blocks = Cb, None
    if method in ("wls", "ols"):
        if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or not 2 <= blocks <= q.shape[0]:
            raise ValueError(f"blocks must be an integer in [2, {q.shape[0]}] (the samples), got {plain(blocks)!r}")
        Cb, used_blocks = (
            at_least(block_jackknife(A, res, prior, x, int(blocks))[: Wr.shape[2], : Wr.shape[2]], Cb),
            int(blocks),
        )
    Cb_gain = _gain_cov(A, prior, S_A, Wr, theta_b, float(gain_std))
    theta, C, C_white = _expand(theta_b, np.asarray(Cb) + np.asarray(Cb_gain), Cb_white, ind, identifiable)
    C_gain = _expand(theta_b, Cb_gain, Cb_gain, ind, identifiable)[1]

    failures: tuple[str, ...] = ()
    theta_c, ok = arrays.device(np.full(10, np.nan)), True
    if base.rank == 10:
        failures = consistency_failures(theta)
        # A consistent estimate is its own constrained estimate: skip the solver (and its compile).
        # In the white metric, in which the constrained estimate was always defined (unchanged by the jackknife).
        theta_c, ok = consistent_estimate(theta, C_white) if failures else (theta, True)
        if failures:
            warnings.warn(
                "the least-squares payload estimate is not physically consistent: "
                + "; ".join(failures)
                + ". PayloadFit.theta_consistent holds the constrained (log-Cholesky) estimate"
                + ("" if ok else " (its solver did not converge: check the data and the robot model)"),
                UserWarning,
                stacklevel=2,
            )
    std = np.sqrt(np.diag(np.asarray(C)))
    floor = np.full(10, np.nan)
    floor[ind] = np.sqrt(np.diag(np.asarray(Cfloor)))
    floor[~identifiable] = np.nan
    tr3 = float(np.sum(np.asarray(theta_c)[[4, 6, 9]])) / 3 if base.rank == 10 else np.nan
    if tr3 > 0 and np.max(std[4:]) > INERTIA_STD * tr3:
        i = 4 + int(np.argmax(std[4:]))
        what = (
            f"the std of {PAYLOAD_NAMES[i]} is {100 * std[i] / tr3:.0f} % of trace/3 = {tr3:.3g} kg m^2 "
            f"(more than {100 * INERTIA_STD:g} %)"
        )
        gain_var = float(np.asarray(C_gain)[i, i])
        if floor[i] ** 2 > 0.5 * std[i] ** 2:  # most of the variance is the robot model's, not the noise's
            warnings.warn(
                f"the payload's inertia is not determined by the robot model it is fitted on: {what}, of which "
                f"{100 * floor[i] / tr3:.0f} % is the uncertainty of the flange link's own parameters in the robot's "
                "estimate (the payload adds to them), which no payload experiment lowers; fit the difference to an "
                "unloaded run of the same trajectory (jaxid payload --unloaded), or identify the robot from a longer "
                "experiment",
                UserWarning,
                stacklevel=2,
            )
        elif gain_var > 0.5 * std[i] ** 2:  # most of it is the torque gains' stated uncertainty
            warnings.warn(
                f"the payload's inertia is not determined against the joints' torque-gain uncertainty: {what}, of "
                f"which {100 * np.sqrt(gain_var) / tr3:.0f} % is what a {100 * gain_std:g} % error of one joint's torque "
                "gain (gain_std) moves it by: a torque scale the data cannot tell from the payload; calibrate the "
                "torques and lower gain_std (jaxid payload --gain-std), or use an excitation designed for the "
                "payload (jaxid excite --payload), on which the joints' gains move the inertia less",
                UserWarning,
                stacklevel=2,
            )
        else:
            # with a zero robot model the data already are a difference to an unloaded run
            twin = (
                ""
                if not np.any(np.asarray(theta_robot))
                else ", or fit the difference to an unloaded run of the same trajectory (jaxid payload --unloaded)"
            )
            warnings.warn(
                f"the payload's inertia is not determined at this noise level: {what}; move the wrist faster (an "
                f"excitation designed for the payload: jaxid excite --payload) or record more periods{twin}",
                UserWarning,
                stacklevel=2,
            )
    return PayloadFit(
        theta=arrays.device(theta),
        std=arrays.device(std),
        std_floor=arrays.device(floor),
        cov=arrays.device(C),
        std_white=arrays.device(np.sqrt(np.diag(np.asarray(C_white)))),
        cov_white=arrays.device(C_white),
        identifiable=arrays.device(identifiable),
        theta_base=theta_b,
        std_base=arrays.device(np.sqrt(np.diag(np.asarray(Cb)))),
        theta_consistent=arrays.device(theta_c),
        base=base,
        fit=fit,
        rank=base.rank,
        failures=failures,
        joints=sel,
        converged=bool(ok),
        covariance="white" if used_blocks is None else "jackknife",
        blocks=used_blocks,
        cov_gain=C_gain,
        gain_std=float(gain_std),
    )
