"""Payload experiment design: how well a trajectory, a set of joints and a number of periods will
determine each of a payload's ten inertial parameters, before the experiment is run.

The payload's torques are linear in its parameters, ``tau_L = Y_L(q, qd, qdd) @ theta_L``
(``jaxid.identification.payload.payload_regressor``). With independent Gaussian torque noise of
std ``sigma_j`` on joint j, the weighted least-squares estimate ``identify_payload`` computes is
unbiased with covariance the inverse of the Fisher information

    F = sum_samples Y_L^T Sigma^-1 Y_L,   cov(theta_L) = F^-1,   std_i = sqrt((F^-1)_ii)

(the Cramer-Rao bound, reached by least squares in the linear Gaussian model; Swevers, Ganseman,
Tukel, De Schutter and Van Brussel, "Optimal robot excitation and identification", IEEE Trans.
Robot. Automat. 13(5), 1997, eq. 14; the payload case: Khalil and Dombre, *Modeling,
Identification and Control of Robots*, 2002, ch. 12.8). A periodic excitation repeated P times
has P times the information of one period, so every std falls as 1/sqrt(P) (whether the periods
are fitted as they are or averaged into one, which divides the noise variance by P instead).

What the design refuses to promise: parameters the chosen joints do not see at all (the numerical
null space of the stacked regressor; e.g. a planar arm's joints never see the inertia products
about horizontal axes, a single joint sees only a few combinations) are "not determined by joints
X with this trajectory", with the combinations the joints do see named; no number of periods
helps there. Parameters the joints see, but only with a std beyond ``bound`` times their nominal
scale (a wrist held still while joints 1-3 move: the inertia products of a compact tool), are "not
determined at this noise and length", with the number of periods that would bring them to a target.

Also here, for the measured record: the model-free torque-noise RMS (the RMS2 of the payload
article ``../shared/seeds/004``: the noise beside the residual RMS1, eq. 12) and the information
loss of the five-point cubic smoothing it applies (its check: at most 10 % of the information
removed, which chose its five passes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxid import signals
from jaxid.arrays import plain
from jaxid.identification.base import TOL, base_from_regressor
from jaxid.identification.payload import PAYLOAD_NAMES, payload_regressor

#: A parameter whose std exceeds this multiple of its nominal scale is not promised: at one
#: std as large as the value itself even its sign is a coin toss.
BOUND = 1.0

#: The payload article's limit on the information a smoothing may remove (seeds/004, sec. 2.2:
#: "the information loss rate after preprocessing should generally not exceed 10 %").
SMOOTHING_LOSS_LIMIT = 0.10

#: Targets of the payload benchmarks (benchmarks/payload_accuracy.py): mass 1 % of the mass,
#: centre of mass 2 mm, inertia 10 % of trace/3 of the inertia about the flange origin.
TARGETS = dict(mass=0.01, com=0.002, inertia=0.10)

_INERTIA = np.arange(4, 10)
_DIAGONAL = (4, 6, 9)  # Ixx, Iyy, Izz in PAYLOAD_NAMES


@dataclass(frozen=True)
class PayloadDesign:
    """Expected standard deviations of the ten payload parameters for one experiment design.

    Attributes (parameters in the order of ``PAYLOAD_NAMES``; units kg, kg m, kg m^2):
        std: (10,) expected std after ``periods`` periods; NaN where not ``determined`` (no
            finite promise is made there).
        std_fisher: (10,) sqrt(diag(F^-1)) after ``periods`` periods wherever the joints see the
            parameter alone (finite even where ``bound`` refuses it); inf in the null space.
        determined: (10,) bool: seen by the joints and std <= ``bound`` x its nominal scale.
        reasons: (10,) why each undetermined parameter is not promised ('' where determined).
        rank: rank of the stacked regressor of the chosen joints (10: every parameter seen).
        seen: the combinations the joints determine (``BaseParameters.names``), when rank < 10.
        joints: 0-based joints used; periods: repetitions of the trajectory; noise: (k,) N m std
            of each used joint's torque per sample.
        nominal: (10,) the nominal payload the relative figures are against, or None.
        scale: (10,) nominal scale of each parameter (m; m r for the first moments, r the
            radius of gyration sqrt(tr I / 2m) about the flange origin; trace/3 for the inertia),
            NaN without a nominal payload.
        mass_pct: expected std of the mass, % of the nominal mass (NaN if undetermined/no nominal).
        com_mm: (3,) expected std of the centre of mass, mm (first-order propagation of the
            covariance through c = (m s) / m).
        inertia_pct: (6,) expected std of each inertia entry, % of nominal trace/3.
        cov_one: (10, 10) covariance after ONE period (pseudo-inverse restricted to the seen
            parameters; NaN rows/columns elsewhere).
    """

    std: np.ndarray
    std_fisher: np.ndarray
    determined: np.ndarray
    reasons: tuple[str, ...]
    rank: int
    seen: tuple[str, ...]
    joints: tuple[int, ...]
    periods: int
    noise: np.ndarray
    nominal: np.ndarray | None
    scale: np.ndarray
    mass_pct: float
    com_mm: np.ndarray
    inertia_pct: np.ndarray
    cov_one: np.ndarray
    bound: float = BOUND

    def at(self, periods: int) -> PayloadDesign:
        """The same design after ``periods`` periods (every std times sqrt(self.periods / periods))."""
        if isinstance(periods, bool) or not isinstance(periods, (int, np.integer)) or periods < 1:
            raise ValueError(f"periods must be an integer >= 1, got {plain(periods)!r}")
        return _design(self.cov_one, self.rank, self.seen, self.joints, periods, self.noise, self.nominal, self.bound)

    def to_json(self) -> dict:
        """The design as JSON-ready values (NaN and inf as None): stds, relative figures, reasons,
        and the periods needed for ``TARGETS``."""
        num = lambda v: float(v) if np.isfinite(v) else None
        return dict(
            names=list(PAYLOAD_NAMES),
            joints=[j + 1 for j in self.joints],
            periods=self.periods,
            noise_std=[num(v) for v in self.noise],
            rank=self.rank,
            std=[num(v) for v in self.std],
            determined=[bool(v) for v in self.determined],
            reasons=list(self.reasons),
            seen=list(self.seen),
            nominal=None if self.nominal is None else [float(v) for v in self.nominal],
            mass_std_pct=num(self.mass_pct),
            com_std_mm=[num(v) for v in self.com_mm],
            inertia_std_pct_of_trace3=[num(v) for v in self.inertia_pct],
            periods_needed=self.periods_needed(),
            targets=dict(TARGETS),
        )

    def periods_needed(self, mass: float | None = None, com: float | None = None, inertia: float | None = None):
        """Periods for each target (``TARGETS`` by default): dict mass/com/inertia -> int, or
        None where the joints cannot see it (no number of periods is enough) or without a
        nominal payload. mass and inertia: fractions (0.01 = 1 % of the mass, 0.1 = 10 % of
        trace/3, every inertia entry); com: metres (the worst axis)."""
        targets = dict(TARGETS)
        targets.update({k: v for k, v in dict(mass=mass, com=com, inertia=inertia).items() if v is not None})
        for k, v in targets.items():
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"target {k} must be a finite number > 0, got {v}")
        # One period with no bound: the Fisher figure of every parameter the joints see.
        one = _design(self.cov_one, self.rank, self.seen, self.joints, 1, self.noise, self.nominal, np.inf)
        worst = dict(
            mass=one.mass_pct / 100,
            com=float(np.max(one.com_mm)) / 1e3,
            inertia=float(np.max(one.inertia_pct)) / 100,
        )
        seen = dict(
            mass=bool(self.std_fisher[0] < np.inf),
            com=bool(np.all(self.std_fisher[:4] < np.inf)),
            inertia=bool(np.all(self.std_fisher[_INERTIA] < np.inf)),
        )
        # std scales as 1/sqrt(P): P = (std_1 / target)^2, whole periods.
        return {
            k: (int(max(1, np.ceil((worst[k] / targets[k]) ** 2))) if seen[k] and np.isfinite(worst[k]) else None)
            for k in targets
        }


def design_payload(
    robot,
    q,
    qd,
    qdd,
    noise,
    *,
    joints=None,
    periods: int = 1,
    nominal=None,
    bound: float = BOUND,
    tol: float = TOL,
) -> PayloadDesign:
    """Expected std of each payload parameter for a trajectory, the joints used, the number of
    periods and the torque noise, from the Fisher information of the payload regressor.

    robot: the ``jaxid.Robot`` carrying the payload on its flange (``robot.tip``).
    q, qd, qdd: one period of the trajectory (N, n), rad, rad/s, rad/s^2, at the rate the
        torques will be logged (each sample one measurement per joint).
    noise: torque noise std per sample, N m: a scalar, (n,) per joint, or (k,) per used joint.
    joints: 0-based joints whose torques are used (default all).
    periods: repetitions of the trajectory recorded (int >= 1).
    nominal: the payload 10-vector the relative figures are against (``PAYLOAD_NAMES`` order,
        e.g. ``jaxid.simulation.payload_vector(m, com, box=...)``), or None (absolute only).
    bound: a parameter whose std exceeds bound x its nominal scale is not promised (needs nominal;
        inf: no bound).
    tol: rank tolerance, as ``identify_payload`` (``base_from_regressor``): the same parameters
        are refused here as the fit leaves unidentified.

    Returns ``PayloadDesign``. Raises ValueError on malformed input.
    """
    from jaxid.identification.payload import _joint_indices

    n = robot.n
    if not hasattr(robot, "tip"):
        raise ValueError("a payload design needs a rigid-body robot with a flange (robot.tip)")
    arrays = []
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f"{name} must have shape (N, {n}) for this {n}-joint robot, got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name} contains NaN or inf")
        arrays.append(x)
    if len({x.shape[0] for x in arrays}) != 1:
        raise ValueError(f"q, qd, qdd have different numbers of samples: {[x.shape[0] for x in arrays]}")
    sel = _joint_indices(joints, n)
    k = len(sel)
    if arrays[0].shape[0] * k <= 10:
        raise ValueError(f"{arrays[0].shape[0]} samples on {k} joint(s) are too few for 10 payload parameters")
    if isinstance(periods, bool) or not isinstance(periods, (int, np.integer)) or periods < 1:
        raise ValueError(f"periods must be an integer >= 1, got {plain(periods)!r}")
    if not bound > 0:  # inf: no bound, every parameter the joints see is promised
        raise ValueError(f"bound must be a number > 0 (inf for none), got {bound}")
    sigma = np.asarray(noise, dtype=float)
    if sigma.ndim == 0:
        sigma = np.full(k, float(sigma))
    elif sigma.shape == (n,):
        sigma = sigma[list(sel)]
    elif sigma.shape != (k,):
        raise ValueError(f"noise must be a scalar, ({n},) per joint or ({k},) per used joint, N m; got {sigma.shape}")
    if not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
        raise ValueError(f"noise must be finite and > 0 N m (a noise-free measurement promises anything), got {sigma}")
    if nominal is not None:
        nominal = np.asarray(nominal, dtype=float)
        if nominal.shape != (10,) or not np.all(np.isfinite(nominal)) or not nominal[0] > 0:
            raise ValueError(f"nominal must be a finite payload 10-vector with mass > 0, got {nominal}")

    # Whitened rows: each joint's torque divided by its noise std, so F = A^T A.
    Y = np.asarray(payload_regressor(robot, *(a for a in arrays)))[:, list(sel), :]
    A = (Y / sigma[None, :, None]).reshape(-1, 10)
    # The parameters the joints see alone are decided as identify_payload decides them (its
    # base_from_regressor on the same rows: the rank does not depend on the whitening, which
    # scales rows), so the design refuses exactly what the fit will leave unidentified.
    base = base_from_regressor(A, PAYLOAD_NAMES, tol=tol)
    ind = np.asarray(base.indices)
    K = np.asarray(base.K)
    alone = np.zeros(10, bool)
    alone[ind] = ~np.any(K != 0, axis=1) if K.size else True
    Ab = np.asarray(base.reduce(A))
    # Column scaling before the inverse: the columns' units differ by orders of magnitude.
    d = np.linalg.norm(Ab, axis=0)
    R = np.asarray(np.linalg.qr(Ab / d)[1])
    Rinv = np.linalg.solve(R, np.eye(R.shape[0])) / d[:, None]
    Cb = Rinv @ Rinv.T
    cov = np.full((10, 10), np.nan)
    cov[np.ix_(ind, ind)] = Cb
    cov[~alone, :] = np.nan
    cov[:, ~alone] = np.nan
    seen = tuple(base.names) if base.rank < 10 else ()
    return _design(cov, base.rank, seen, sel, int(periods), sigma, nominal, float(bound))


def _scales(nominal):
    """(10,) nominal scale of each parameter: m; m r (r = sqrt(tr I / 2m), the radius of gyration
    about the flange origin: |c| for a point mass); trace/3 of the inertia about the flange origin."""
    if nominal is None:
        return np.full(10, np.nan)
    m = nominal[0]
    tr = float(np.sum(nominal[list(_DIAGONAL)]))
    r = np.sqrt(max(tr, 0.0) / (2 * m))
    out = np.r_[m, np.full(3, m * r), np.full(6, tr / 3)]
    return np.where(out > 0, out, np.nan)  # a point mass at the origin has no inertia to compare to


def _design(cov_one, rank, seen, joints, periods, sigma, nominal, bound) -> PayloadDesign:
    alone = np.isfinite(np.diag(cov_one))
    cov = cov_one / periods
    fisher = np.where(alone, np.sqrt(np.where(alone, np.diag(cov), 0.0)), np.inf)
    scale = _scales(nominal)
    weak = alone & np.isfinite(scale) & (fisher > bound * scale)
    determined = alone & ~weak
    names = ",".join(str(j + 1) for j in joints)
    reasons = []
    for i in range(10):
        if not alone[i]:
            what = "; ".join(seen) if seen else "none"
            reasons.append(
                f"not determined by joints {names} with this trajectory: their torques see {PAYLOAD_NAMES[i]} only in "
                f"combinations with other parameters (rank {rank} of 10; they determine: {what}); no number of periods "
                "helps: use more joints (the wrist's) or move the joints that change the payload's orientation"
            )
        elif weak[i]:
            reasons.append(
                f"not determined at this noise after {periods} period(s): std {fisher[i]:.3g} is "
                f"{fisher[i] / scale[i]:.3g} x its nominal scale {scale[i]:.3g} (more than {bound:g} x)"
            )
        else:
            reasons.append("")
    std = np.where(determined, fisher, np.nan)
    m = nominal[0] if nominal is not None else np.nan
    mass_pct = float(100 * std[0] / m) if nominal is not None else np.nan
    if nominal is not None and np.all(determined[:4]):
        # c = s / m: dc/dm = -s / m^2, dc/ds = I / m (first-order propagation).
        s = nominal[1:4]
        J = np.concatenate([-s[:, None] / m**2, np.eye(3) / m], axis=1)
        com_mm = 1e3 * np.sqrt(np.diag(J @ cov[:4, :4] @ J.T))
    else:
        com_mm = np.full(3, np.nan)
    inertia_pct = 100 * std[_INERTIA] / scale[_INERTIA]
    return PayloadDesign(
        std=std,
        std_fisher=fisher,
        determined=determined,
        reasons=tuple(reasons),
        rank=int(rank),
        seen=tuple(seen),
        joints=tuple(joints),
        periods=int(periods),
        noise=np.asarray(sigma),
        nominal=nominal,
        scale=scale,
        mass_pct=mass_pct,
        com_mm=com_mm,
        inertia_pct=inertia_pct,
        cov_one=cov_one,
        bound=bound,
    )


# ----------------------------------------------------------------------- the measured record
def torque_noise_rms(tau, period: int | None = None) -> np.ndarray:
    """Model-free RMS of the torque noise per joint (n,), N m: the payload article's RMS2
    (seeds/004, Table 3), beside the residual RMS1 that the fitted model leaves.

    tau: (N, n) torques, N m. period: samples per excitation period of a periodic record (N a
    multiple of it, >= 2 periods): the noise is then the spread of each sample across the periods
    (sum of squared deviations from the period average over N - period, unbiased for white
    noise), which no smooth signal enters. Without it: the residual of five-point cubic smoothing
    (a local cubic fit, which a signal sampled well above its bandwidth passes unchanged) divided
    by the residual's white-noise gain sqrt(630) / 35, the first and last two samples left out.
    """
    tau = np.asarray(tau, dtype=float)
    if tau.ndim != 2 or tau.shape[0] < 5 or not np.all(np.isfinite(tau)):
        raise ValueError(f"tau must be a finite (N, n) array with N >= 5, got shape {tau.shape}")
    if period is not None:
        if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 1:
            raise ValueError(f"period must be an integer >= 1 sample, got {plain(period)!r}")
        M = tau.shape[0] // period
        if M < 2 or tau.shape[0] % period:
            raise ValueError(f"the record's {tau.shape[0]} samples are not >= 2 whole periods of {period}")
        x = tau.reshape(M, period, -1)
        dev = x - x.mean(axis=0)
        return np.sqrt(np.sum(dev**2, axis=(0, 1)) / (tau.shape[0] - period))
    r = tau - np.asarray(signals.five_point_cubic(tau))
    # interior residual weights (3, -12, 18, -12, 3) / 35: white noise gain^2 = 630 / 35^2
    return np.sqrt(np.mean(r[2:-2] ** 2, axis=0) / (630 / 35**2))


def smoothing_noise_gain(passes: int) -> float:
    """Std of white noise after ``passes`` interior five-point cubic passes, per unit std before
    (the root sum of squares of the repeated filter's impulse response); 1 for 0 passes."""
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 0:
        raise ValueError(f"passes must be an integer >= 0, got {plain(passes)!r}")
    h = np.array([1.0])
    for _ in range(passes):
        h = np.convolve(h, np.array([-3.0, 12.0, 17.0, 12.0, -3.0]) / 35)
    return float(np.sqrt(np.sum(h**2)))


def smoothing_loss(x, passes: int, period: int | None = None) -> np.ndarray:
    """Information loss of ``passes`` five-point cubic smoothing passes, per column (n,), a
    fraction: the share of the signal's energy (about its mean) that the smoothing removes,
    ||x - S^k x||^2 / ||x - mean x||^2, the payload article's check (seeds/004, sec. 2.2: at most
    10 %, ``SMOOTHING_LOSS_LIMIT``, which made it stop at five passes). The removed part holds the
    noise the smoothing is for as well as signal, so this bounds the signal's loss from above; a
    share well over the noise's (``torque_noise_rms``^2 / variance) is signal taken away.

    x: (N, n) signal (torque N m or position rad), as fitted: a period average is one period.
    period: samples per period of a periodic x (its ends wrap, as ``payload.preprocess`` does).
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[0] < 5 or not np.all(np.isfinite(x)):
        raise ValueError(f"x must be a finite (N, n) array with N >= 5, got shape {x.shape}")
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 0:
        raise ValueError(f"passes must be an integer >= 0, got {plain(passes)!r}")
    if passes == 0:
        return np.zeros(x.shape[1])
    pad = min(period, len(x)) if period else 0
    xw = np.concatenate([x[len(x) - pad :], x, x[:pad]]) if pad else x
    y = np.asarray(signals.five_point_cubic(xw, int(passes)))
    y = y[pad : len(y) - pad] if pad else y
    var = np.sum((x - x.mean(axis=0)) ** 2, axis=0)
    return np.sum((x - y) ** 2, axis=0) / np.where(var > 0, var, np.nan)
