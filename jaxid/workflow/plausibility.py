"""Plausibility of each run's log against the model and the physics, before any fit (and of the fit's
residual after it): the faults that real logs have and a least-squares fit would silently absorb.

What is checked, per run ([`check_log`][jaxid.workflow.plausibility.check_log] on the raw run as read,
[`check_torques`][jaxid.workflow.plausibility.check_torques] on the
prepared run, [`check_residuals`][jaxid.workflow.plausibility.check_residuals] after the fit):

- ``still``: no joint moves beyond its position noise (or 1 mrad): the robot did not move, which
  the torque screening would otherwise report as stuck torque channels;
- ``units``: positions outside the model's joint range by a large factor, or whose range fits it
  once read as degrees (a log in degrees read as rad); positions that span only a few degrees
  after ``--units q=deg`` (a log already in rad converted once more, 57.3x too small);
- ``time``: joint speeds implied by the time stamps far above the model's velocity limits (or a
  physical ceiling): stamps in the wrong unit (``--units t=ms`` on a log in s);
- ``wrap``: positions wrapped at +-pi or at 0 and 2 pi (steps of ~2 pi in one sample): unwrapped
  (and moved by whole turns into the model's range), and said;
- ``jump``: single-sample encoder spikes (a sample off both neighbours' midpoint by far more than
  the run's robust spread and than any joint can move in one sample): refused, or with
  ``--accept-fault jump`` bridged by the neighbours' midpoint;
- ``torque-sign`` and ``torque-scale``: the logged torque against the nominal model's torque at the
  logged motion (``tau ~ k tau_model`` per joint by least squares, where the model explains the
  torque's shape): k < 0 is an inverted sign, |k| beyond 10x (or below 1/10) a scale error
  (``--gains`` on a log already in N m, a torque unit); and, for a log read with ``--gains``, a
  joint whose torque before the gain matches the model far better than after it (a log already in
  N m given gains). Where the model explains less (a friction-dominated joint), its scale says
  nothing (the friction's projection on a small model torque can be many times it): only a torque
  that the model and dissipating friction explain flipped far better than as logged is named;
- ``residual`` (after the fit): a joint whose residual RMS is of the order of its torque RMS.

Each [`Finding`][jaxid.workflow.plausibility.Finding] names the run, the joint, the 1-based file rows where they matter
(``Dataset.row``), the factor and the flag that fixes it. Errors stop the command unless accepted
(``--accept-fault NAME``, [`FAULTS`][jaxid.workflow.plausibility.FAULTS]); warnings are printed and recorded (the run's notes,
params.json ``plausibility``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from jaxid.workflow.records import WorkflowError

#: The faults [`check_log`][jaxid.workflow.plausibility.check_log], [`check_torques`][jaxid.workflow.plausibility.check_torques] and
#: [`check_residuals`][jaxid.workflow.plausibility.check_residuals] find, and
#: what each means (the names of ``--accept-fault``).
FAULTS = {
    "still": "the robot did not move (positions constant within their noise)",
    "units": "positions in another unit than the model's (degrees, or rad converted as degrees)",
    "time": "time stamps in another unit (joint speeds far beyond the model's limits)",
    "jump": "single-sample encoder spikes (accepting bridges them by the neighbours' midpoint)",
    "wrap": "positions wrapped at +-pi or at 0 and 2 pi (unwrapped; a warning)",
    "torque-sign": "a torque channel of inverted sign against the nominal model",
    "torque-scale": "a torque channel off the nominal model's by more than 10x (TORQUE_FACTOR)",
    "residual": "a joint whose fit residual is of the order of its torque (a warning)",
}

#: A joint's speed above this many times its velocity limit (``Robot.qd_max``, else
#: [`SPEED_CEILING`][jaxid.workflow.plausibility.SPEED_CEILING]) is a time-stamp fault: a robot overshoots its limit a little, a wrong time
#: unit by 1000x (ms/s) or 60x.
SPEED_FACTOR = 10.0

#: rad/s (revolute) and m/s (prismatic): the speed no robot joint reaches, for joints without a
#: velocity limit (direct-drive arms stay below ~20 rad/s).
SPEED_CEILING = (30.0, 10.0)

#: Quantile of a joint's sample-to-sample speed compared with its limit: robust to the spikes and
#: wraps that [`check_log`][jaxid.workflow.plausibility.check_log] reports on their own (they are under 1 % of the samples).
SPEED_QUANTILE = 0.99

#: Robust z (spread by the MAD) above which a sample off its neighbours' midpoint is a spike.
SPIKE_Z = 20.0

#: Positions beyond the model's range by more than this factor of the range's half width (about
#: its centre) are a unit fault (an error); closer, ``prepare`` warns (``RANGE_SLACK``).
RANGE_FACTOR = 2.0

#: rad: after ``--units q=deg`` the revolute joints spanning at most this much (5.7 degrees: a log in
#: rad converted once more spans under 0.1 rad where it moved up to 5.7 rad) are a unit fault.
DEG_SPAN = 0.1

#: Torque scale against the nominal model's beyond this factor (either way) is a fault; a rough
#: nominal model (CAD masses, 20-50 % off) stays well within it.
TORQUE_FACTOR = 10.0

#: A joint's torque is compared with the model's only where the model explains most of it: the
#: cosine between the logged and the model's torque (uncentred: the static gravity part counts) at
#: least this (or at most minus this, an inverted sign), i.e. the model's share of the torque's power
#: (cos^2) over 0.64. A flipped gravity-loaded joint gives -0.99; friction-dominated joints, or a log
#: that is no robot's (torques made up of the positions), stay below it and are not judged.
TORQUE_COSINE = 0.8

#: A joint of a log read with ``--gains`` g whose torque without the gain, k / g, is at least this
#: factor closer to the model's (in log scale) than with it, k, was already in N m: the gain is a
#: fault (an error) even when k is within [`TORQUE_FACTOR`][jaxid.workflow.plausibility.TORQUE_FACTOR] (a gain of 10 on a log in N m).
GAIN_EVIDENCE = 4.0

#: A joint the nominal model alone does not explain is of inverted sign when the model's torque plus
#: dissipating friction explains at least this share of its variance with the sign flipped (and more
#: than twice the share as logged; `_inverted`). A noise channel is explained by neither.
SIGN_SHARE = 0.5

#: A joint the model alone explains less of (cosine < [`TORQUE_COSINE`][jaxid.workflow.plausibility.TORQUE_COSINE]) has its sign and scale
#: judged by `_model_scale` (friction and an offset fitted beside the model) when the model's
#: column explains at least this share of the torque's variance both alone (cosine^2) and beyond
#: the friction columns, with one sign: a small model torque next to a large friction (a wrist) is
#: then not judged, since the friction's leak into its scale is large.
MODEL_SHARE = 0.25

#: The nominal model's torque enters `_explained` scaled by at most this factor either way.
MODEL_SLACK = 3.0

#: Samples of a run used by [`check_torques`][jaxid.workflow.plausibility.check_torques] (evenly spaced): the check is on the scale and sign,
#: not the detail.
TORQUE_SAMPLES = 2000

#: A run whose joints all span at most this many times their position noise, or [`STILL_SPAN`][jaxid.workflow.plausibility.STILL_SPAN], is
#: a robot that did not move (its torque channels then look stuck: that is not a sensor fault).
STILL_NOISE = 20.0
STILL_SPAN = 1e-3  # rad or m
#: The position noise `_still` trusts at most, rad or m: a larger second difference is motion the
#: sampling does not resolve (a coarse log, or poses logged one by one), not encoder noise.
STILL_NOISE_MAX = 1e-3

#: After the fit, a joint whose residual RMS is at least this share of its torque RMS is named.
RESIDUAL_SHARE = 0.5


@dataclass(frozen=True)
class Finding:
    """One implausible thing about a run.

    fault: a key of [`FAULTS`][jaxid.workflow.plausibility.FAULTS]. source: the run's file. joint: the joint's name, or None (the
    run). message: one sentence naming what, where (1-based file rows) and the fix. error: the
    command stops on it unless ``fault`` is accepted. rows: the file rows named (as
    ``Dataset.row`` says them). factor: the factor of a scale fault, or None. repaired: what was
    done to the run (unwrapped, bridged), or None."""

    fault: str
    source: str
    joint: str | None
    message: str
    error: bool
    rows: tuple[str, ...] = ()
    factor: float | None = None
    repaired: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self) | {"rows": list(self.rows)}

    @property
    def line(self) -> str:
        """``source: message``."""
        return f"{self.source}: {self.message}"


def check_accept(accept) -> tuple[str, ...]:
    """The fault names of ``--accept-fault`` as a tuple; WorkflowError on an unknown one."""
    accept = tuple(accept or ())
    bad = [a for a in accept if a not in FAULTS]
    if bad:
        raise WorkflowError(f"--accept-fault: unknown fault {bad[0]!r}; the faults are {', '.join(FAULTS)}")
    return accept


def _labels(robot) -> list[str]:
    return list(robot.coordinate_names)


def _said(names, j) -> str:
    """Joint j (0-based) as messages name it: counted from 1 beside its name, "joint 3 (elbow)"."""
    return f"joint {j + 1} ({names[j]})"


def _revolute(robot) -> np.ndarray:
    return np.array([robot.joint_types[robot.coordinates.index(k)] == "R" for k in range(robot.n)])


def _speed_limits(robot) -> np.ndarray:
    """(n,) the velocity limit of each joint, rad/s or m/s: ``qd_max`` where finite and > 0, else
    [`SPEED_CEILING`][jaxid.workflow.plausibility.SPEED_CEILING]."""
    qd_max = np.asarray(robot.qd_max, dtype=float)
    ceiling = np.where(_revolute(robot), SPEED_CEILING[0], SPEED_CEILING[1])
    return np.where(np.isfinite(qd_max) & (qd_max > 0), qd_max, ceiling)


def _rows(ds, ks, limit: int = 5) -> tuple[str, ...]:
    return tuple(ds.row(int(k)) for k in ks[:limit])


def _rows_text(rows, total: int) -> str:
    more = f" and {total - len(rows)} more" if total > len(rows) else ""
    return ", ".join(rows) + more


# ------------------------------------------------------------------------------ the raw log
def check_log(ds, robot) -> tuple[object, tuple[Finding, ...]]:
    """The findings on a raw run ``ds`` (``jaxid.data.Dataset`` as read: t (N,) s, q (N, n) rad or
    m) against ``robot``: units, wraps (repaired: the returned run is unwrapped), jumps, time. Returns
    (the run, findings); no exception (see [`raise_errors`][jaxid.workflow.plausibility.raise_errors])."""
    source = ds.source or "<dataset>"
    q = np.array(ds.q, dtype=float)
    findings: list[Finding] = []
    q, wraps = _wraps(ds, q, robot, source)
    findings += wraps
    if wraps:
        ds = dataclasses.replace(ds, q=jnp.asarray(q), notes=(*ds.notes, *(f.message for f in wraps)))
    still = _still(ds, q, robot, source)
    if still:
        return ds, tuple(findings + still)
    spike, e = _spikes(ds, q, robot)
    clean = np.where(spike, q - e, q)  # the range and speeds without the spikes, which are named on their own
    units = _units(ds, clean, robot, source)
    findings += units
    findings += _jumps(ds, q, robot, source)
    if not units:  # a position unit fault scales the speeds too: said once
        findings += _time(ds, clean, robot, source)
    return ds, tuple(findings)


def _still(ds, q, robot, source: str) -> list[Finding]:
    """A ``still`` finding when every joint spans at most [`STILL_NOISE`][jaxid.workflow.plausibility.STILL_NOISE] x its position noise
    (1.4826 MAD of q_k - (q_k-1 + q_k+1) / 2, / sqrt(1.5), at most [`STILL_NOISE_MAX`][jaxid.workflow.plausibility.STILL_NOISE_MAX]) or
    [`STILL_SPAN`][jaxid.workflow.plausibility.STILL_SPAN]."""
    if q.shape[0] < 3:
        return []
    e = q[1:-1] - 0.5 * (q[:-2] + q[2:])
    noise = 1.4826 * np.median(np.abs(e - np.median(e, axis=0)), axis=0) / math.sqrt(1.5)
    noise = np.minimum(noise, STILL_NOISE_MAX)
    span = q.max(axis=0) - q.min(axis=0)
    if not np.all(span <= np.maximum(STILL_NOISE * noise, STILL_SPAN)):
        return []
    return [
        Finding(
            "still",
            source,
            None,
            f"the robot did not move (positions constant: every joint spans at most {span.max():.3g} rad, within "
            "its noise): its torques show only the static load, and their channels look stuck although the sensors "
            "may be fine; record a run in which the joints move (an excitation: jaxid excite)",
            True,
        )
    ]


def _units(ds, q, robot, source: str) -> list[Finding]:
    lo, hi = np.asarray(robot.q_min, dtype=float), np.asarray(robot.q_max, dtype=float)
    names, revolute = _labels(robot), _revolute(robot)
    found = []
    qmin, qmax = q.min(axis=0), q.max(axis=0)
    for j in range(robot.n):
        if not (np.isfinite(lo[j]) and np.isfinite(hi[j]) and hi[j] > lo[j]):
            continue
        centre, half = (hi[j] + lo[j]) / 2, (hi[j] - lo[j]) / 2  # this joint's only: another may have no limits
        reach = max(abs(qmin[j] - centre), abs(qmax[j] - centre)) / half  # 1: the range's edge
        degrees = revolute[j] and lo[j] - 0.1 * half <= np.radians(qmin[j]) <= np.radians(qmax[j]) <= hi[j] + 0.1 * half
        if reach <= RANGE_FACTOR:  # (a log in degrees reaching less moved under 2/57.3 of the range)
            continue
        unit = "rad" if revolute[j] else "m"
        fix = (
            "the log is in degrees: add --units q=deg"
            if degrees
            else "check the unit, zero offset and order of the q columns (--units q=..., --columns), or the model"
        )
        found.append(
            Finding(
                "units",
                source,
                names[j],
                f"{_said(names, j)} spans [{qmin[j]:.4g}, {qmax[j]:.4g}] {unit}, {reach:.3g}x the half width of the "
                f"model's range [{lo[j]:.4g}, {hi[j]:.4g}] about its centre"
                + (" (57.3x: degrees read as rad)" if degrees else "")
                + f": {fix}",
                True,
                factor=float(math.degrees(1) if degrees else reach),
            )
        )
    converted = any(n.startswith("q: converted from deg") for n in ds.notes)
    spans = (qmax - qmin)[revolute]
    if converted and spans.size and spans.max() <= DEG_SPAN:
        found.append(
            Finding(
                "units",
                source,
                None,
                f"after the conversion of q from degrees the revolute joints span at most {spans.max():.3g} rad "
                f"({np.degrees(spans.max()):.3g} deg): a log already in rad is made 57.3x too small (its speeds "
                "and accelerations too): drop q=deg from --units (or the mapping)",
                True,
                factor=float(math.degrees(1)),
            )
        )
    return found


def _wraps(ds, q, robot, source: str) -> tuple[np.ndarray, list[Finding]]:
    """Positions unwrapped where a revolute joint steps by ~2 pi in one sample while its positions
    stay within one turn (an encoder or driver reporting the angle modulo 2 pi: in [-pi, pi), or
    in [0, 2 pi) where the joint crosses 0), then moved by whole turns where that puts fewer
    samples inside the model's range (a 0..2 pi encoder's angles below 0 read as 2 pi less)."""
    found = []
    q = q.copy()
    names = _labels(robot)
    lo, hi = np.asarray(robot.q_min, dtype=float), np.asarray(robot.q_max, dtype=float)
    for j in np.flatnonzero(_revolute(robot)):
        step = np.diff(q[:, j])
        big = np.flatnonzero(np.abs(step) > math.pi)
        if not big.size or np.ptp(q[:, j]) > 2 * math.pi * (1 + 1e-6):
            continue
        if not np.all(np.abs(np.abs(step[big]) - 2 * math.pi) < 0.5 * math.pi):
            continue  # not a wrap: left to the spike test
        at = "+-pi" if q[:, j].min() < -1e-9 else "0 and 2 pi"
        u = np.unwrap(q[:, j])
        # The branch with the fewest samples outside the model's range, the logged one on a tie.
        centre = (lo[j] + hi[j]) / 2 if np.isfinite(lo[j]) and np.isfinite(hi[j]) else 0.0
        near = round((centre - float(np.mean(u))) / (2 * math.pi))
        turns = min(
            (0, near - 1, near, near + 1),
            key=lambda k: (int(np.sum((u + 2 * math.pi * k < lo[j]) | (u + 2 * math.pi * k > hi[j]))), abs(k)),
        )
        q[:, j] = u + 2 * math.pi * turns
        shifted = f", then {turns:+d} turn(s) into the model's range" if turns else ""
        rows = _rows(ds, big + 1)
        found.append(
            Finding(
                "wrap",
                source,
                names[j],
                f"{_said(names, j)} wraps at {at} ({big.size} step(s) of ~2 pi at {_rows_text(rows, big.size)}): "
                f"unwrapped (a multiple of 2 pi added after each{shifted})",
                False,
                rows=rows,
                repaired="unwrapped",
            )
        )
    return q, found


def _spikes(ds, q, robot) -> tuple[np.ndarray, np.ndarray]:
    """(spike (N, n) bool, offset (N, n) of each sample from its neighbours' midpoint; rad or m).

    A spike is a sample whose offset from the midpoint of samples k-1 and k+1 exceeds both
    [`SPIKE_Z`][jaxid.workflow.plausibility.SPIKE_Z] robust spreads (1.4826 MAD) of that offset over the run and the distance the
    joint moves in one sample at [`SPEED_FACTOR`][jaxid.workflow.plausibility.SPEED_FACTOR] x its limit, with the steps in and out of
    opposite sign and as large (a step in the trajectory is no spike). The offset is minus half the
    second difference, which smooth motion keeps at qdd dt^2 / 2: far below either bound."""
    N = q.shape[0]
    spike, e = np.zeros(q.shape, dtype=bool), np.zeros(q.shape)
    if N < 3:
        return spike, e
    dt = float(np.median(np.diff(np.asarray(ds.t, dtype=float))))
    floor = SPEED_FACTOR * _speed_limits(robot) * dt
    e[1:-1] = q[1:-1] - 0.5 * (q[:-2] + q[2:])
    spread = 1.4826 * np.median(np.abs(e[1:-1] - np.median(e[1:-1], axis=0)), axis=0)
    thr = np.maximum(SPIKE_Z * spread, floor)
    step_in, step_out = q[1:-1] - q[:-2], q[2:] - q[1:-1]
    spike[1:-1] = (
        (np.abs(e[1:-1]) > thr) & (np.abs(step_in) > thr) & (np.abs(step_out) > thr) & (step_in * step_out < 0)
    )
    return spike, e


def _jumps(ds, q, robot, source: str) -> list[Finding]:
    """A ``jump`` finding per joint with spikes (`_spikes`), naming their file rows."""
    spike, e = _spikes(ds, q, robot)
    names = _labels(robot)
    found = []
    for j in np.flatnonzero(spike.any(axis=0)):
        ks = np.flatnonzero(spike[:, j])
        rows = _rows(ds, ks)
        size = np.abs(e[ks, j]).max()
        found.append(
            Finding(
                "jump",
                source,
                names[j],
                f"{_said(names, j)} jumps by up to {size:.3g} {'rad' if _revolute(robot)[j] else 'm'} for one sample at "
                f"{_rows_text(rows, ks.size)} (encoder glitch): repair the log, or drop those samples (bridged by "
                "their neighbours) with --accept-fault jump",
                True,
                rows=rows,
            )
        )
    return found


def bridge_jumps(ds, robot):
    """The run ``ds`` with its spike samples (`_spikes`) replaced by the midpoint of their
    neighbours (each dropped and the gap bridged linearly), noted in its ``notes``."""
    q = np.array(ds.q, dtype=float)
    spike, e = _spikes(ds, q, robot)
    if not spike.any():
        return ds
    q[spike] -= e[spike]
    ks = np.flatnonzero(spike.any(axis=1))
    note = f"{ks.size} spike sample(s) at {_rows_text(_rows(ds, ks), ks.size)} dropped and bridged by their neighbours"
    return dataclasses.replace(ds, q=jnp.asarray(q), notes=(*ds.notes, note))


def _time(ds, q, robot, source: str) -> list[Finding]:
    t = np.asarray(ds.t, dtype=float)
    dt = np.diff(t)
    if q.shape[0] < 3:
        return []
    speed = np.quantile(np.abs(np.diff(q, axis=0)) / dt[:, None], SPEED_QUANTILE, axis=0)
    limit = _speed_limits(robot)
    ratio = speed / limit
    j = int(np.argmax(ratio))
    if not ratio[j] > SPEED_FACTOR:
        return []
    names = _labels(robot)
    given = next((n.split()[3] for n in ds.notes if n.startswith("t: converted from ")), None)
    fix = (
        f"the stamps were converted from {given}: if they are in s, drop t={given} from --units"
        if given
        else "check the unit of the time column (--units t=s, ms, us or ns) and the rate (--rate)"
    )
    unit = "rad/s" if _revolute(robot)[j] else "m/s"
    return [
        Finding(
            "time",
            source,
            names[j],
            f"{_said(names, j)} moves at {speed[j]:.3g} {unit} ({100 * SPEED_QUANTILE:g}th percentile of its sample-to-sample "
            f"speed), {ratio[j]:.3g}x its limit {limit[j]:.3g} {unit}: the time stamps are about {ratio[j]:.2g}x too "
            f"short for this motion ({1 / float(np.mean(dt)):.4g} Hz read); {fix}",
            True,
            factor=float(ratio[j]),
        )
    ]


# ------------------------------------------------------------------------- the torques
def _nominal_torques(robot, q, qd, qdd) -> np.ndarray:
    """(M, n) N m: the nominal model's torque (rigid body and its joint terms) at the samples."""
    from jaxid.workflow.validation import model_torques

    return model_torques(robot, robot.parameter_vector(), q, qd, qdd)


def check_torques(prepared, robot) -> tuple[Finding, ...]:
    """Sign and scale of each run's logged torque against the nominal model's at its prepared
    motion (``Prepared``: q, qd, qdd, tau (N, n)): per joint k = <tau, tau_m> / <tau_m, tau_m> and the
    (uncentred) cosine c between them, on up to [`TORQUE_SAMPLES`][jaxid.workflow.plausibility.TORQUE_SAMPLES] samples. Where |c| >=
    [`TORQUE_COSINE`][jaxid.workflow.plausibility.TORQUE_COSINE] (the model explains the torque's shape: gravity, inertia), k < 0 is an
    inverted sign and |k| beyond [`TORQUE_FACTOR`][jaxid.workflow.plausibility.TORQUE_FACTOR] either way a scale error, and a run read with
    gains (``Dataset.gains``) whose joint matches the model [`GAIN_EVIDENCE`][jaxid.workflow.plausibility.GAIN_EVIDENCE] x better without
    its gain is an error too; elsewhere the
    nominal model cannot say the scale (friction-dominated joints, a rough model) and only a torque
    that the model and friction explain flipped far better than as logged is found (`_inverted`)."""
    from jaxid.identification import screening

    names = _labels(robot)
    found = []
    for ds, c in zip(prepared.datasets, prepared.choices):
        source = c["source"]
        N = len(ds)
        if screening.implausible_values(np.asarray(ds.tau)):
            continue  # absurd values: the screening names them (workflow.screen.check_torques)
        dead = set(screening.dead_channels(np.asarray(ds.tau)).joints)  # named there too
        pick = np.unique(np.linspace(0, N - 1, min(N, TORQUE_SAMPLES)).astype(int))
        tau = np.asarray(ds.tau, dtype=float)[pick]
        q, qd, qdd = (np.asarray(x, dtype=float)[pick] for x in (ds.q, ds.qd, ds.qdd))
        model = _nominal_torques(robot, q, qd, qdd)
        mm, tt, tm = (model**2).sum(axis=0), (tau**2).sum(axis=0), (tau * model).sum(axis=0)
        gains = next((n for n in ds.notes if n.startswith("tau: motor currents")), None)
        given = ds.gains if ds.gains is not None and not ds.motor_side and len(ds.gains) == robot.n else None
        for j in range(robot.n):
            if j in dead or not (mm[j] > 0 and tt[j] > 0):
                continue
            k, cos = tm[j] / mm[j], tm[j] / math.sqrt(mm[j] * tt[j])
            if abs(cos) < TORQUE_COSINE:
                # Friction fitted beside the model: its scale where the model alone explains less,
                # trusted only where it is plausible as logged or before the gains (a torque the model
                # fits only at a far other scale, a spring against its inertia, is not judged by it).
                k, share = _model_scale(tau[:, j], model[:, j], qd[:, j])
                raw = k / given[j] if given is not None and given[j] > 0 else k
                # The model's column must explain the share alone too, with the sign of its fit: a
                # share it gains only beside friction (collinear columns cancelling, a real KUKA wrist
                # at cosine -0.08 fitted at -1.5) is no evidence of a sign or a scale.
                alone = cos * cos >= MODEL_SHARE and k * cos > 0
                if share < MODEL_SHARE or not alone or not (_plausible(k) or _plausible(raw)):
                    found += _inverted(tau[:, j], model[:, j], qd[:, j], names[j], source, _said(names, j))
                    continue
            if k < 0:
                found.append(
                    Finding(
                        "torque-sign",
                        source,
                        names[j],
                        f"{_said(names, j)}'s torque is {k:.3g} x the nominal model's at the logged motion (cosine "
                        f"{cos:.2f}): its sign is inverted (a negative gain, or the channel's direction): flip it "
                        f"(a negative entry of --gains, or fix the log)",
                        True,
                        factor=float(k),
                    )
                )
            elif (
                given is not None
                and given[j] > 0
                and (abs(math.log(k / given[j])) + math.log(GAIN_EVIDENCE) <= abs(math.log(k)))
            ):
                found.append(
                    Finding(
                        "torque-scale",
                        source,
                        names[j],
                        f"{_said(names, j)}'s torque is {k:.3g} x the nominal model's at the logged motion, but "
                        f"{k / given[j]:.3g} x before its gain {given[j]:g} N m/A (cosine {cos:.2f}): the channel "
                        "looks already in N m: drop --gains (or give this joint's true torque constant)",
                        True,
                        factor=float(k),
                    )
                )
            elif not 1 / TORQUE_FACTOR <= k <= TORQUE_FACTOR:
                found.append(_scale_finding(names[j], source, k, cos, gains, _said(names, j)))
    return tuple(found)


def _plausible(k: float) -> bool:
    """A scale of the model's torque within [`MODEL_SLACK`][jaxid.workflow.plausibility.MODEL_SLACK] of 1, either sign: what a rough
    nominal model gives (where the model alone explains less, the scale is trusted only there)."""
    return 1 / MODEL_SLACK <= abs(k) <= MODEL_SLACK


def _scale_finding(name: str, source: str, k: float, cos: float, gains: str | None, label: str) -> Finding:
    """The ``torque-scale`` error of a joint (``name``; ``label`` as the message says it) whose torque is k x
    the nominal model's; ``gains``: the run's note on the gains it was read with, or None."""
    fix = (
        f"the log's currents were multiplied by gains ({gains.split('gains ')[-1]}): if the log is "
        "already in N m, drop --gains"
        if gains
        else "check the torque unit (--units tau=...), the gains (--gains), or the model's masses"
    )
    return Finding(
        "torque-scale",
        source,
        name,
        f"{label}'s torque is {k:.3g} x the nominal model's at the logged motion (cosine {cos:.2f}), more than "
        f"{TORQUE_FACTOR:g}x off: {fix}",
        True,
        factor=float(k),
    )


def _friction_columns(qd) -> np.ndarray:
    """(N, 3) unit columns beside the model's torque in `_model_scale` and `_explained`:
    Coulomb friction tanh(qd / (0.05 max|qd|)), viscous qd, an offset (the offset alone for a joint
    that does not move)."""
    scale = 0.05 * float(np.abs(qd).max())
    cols = [np.tanh(qd / scale), qd] if scale > 0 else [np.zeros_like(qd)] * 2
    F = np.stack([*cols, np.ones_like(qd)], axis=1)
    norm = np.linalg.norm(F, axis=0)
    return F / np.where(norm > 0, norm, 1.0)


def _model_scale(tau, model, qd) -> tuple[float, float]:
    """(a, share) of one joint: a, the scale of the nominal model's torque (N,) in the least-squares
    fit of tau (N,) by a * model + b * tanh(qd / (0.05 max|qd|)) + c * qd + d (friction and an offset
    beside it, so that they do not leak into a); share, the part of tau's variance that only the
    model's column explains (the fit's residual without it less the residual with it, over the
    variance). A joint the model alone explains little of (cosine < [`TORQUE_COSINE`][jaxid.workflow.plausibility.TORQUE_COSINE]) still has
    a trustworthy scale when share >= [`MODEL_SHARE`][jaxid.workflow.plausibility.MODEL_SHARE]."""
    F = _friction_columns(qd)
    mn = float(np.linalg.norm(model))
    total = float(np.sum((tau - tau.mean()) ** 2))
    if not (mn > 0 and total > 0):
        return 0.0, 0.0
    A = np.concatenate([model[:, None] / mn, F], axis=1)
    x = np.linalg.lstsq(A, tau, rcond=None)[0]
    r_full = float(np.sum((tau - A @ x) ** 2))
    y = np.linalg.lstsq(F, tau, rcond=None)[0]
    r_without = float(np.sum((tau - F @ y) ** 2))
    return float(x[0] / mn), max(0.0, (r_without - r_full) / total)


def _explained(tau, model, qd) -> float:
    """Share of the variance of one joint's torque tau (N,) explained by the nominal model's torque
    (N,), scaled by a in [1/`MODEL_SLACK`, `MODEL_SLACK`] (the nominal masses roughly
    right), plus friction that dissipates, b * tanh(qd / (0.05 max|qd|)) + c * qd (b, c >= 0), and a
    free offset: 1 - |residual|^2 / |tau - mean|^2 of the bounded least-squares fit, in [0, 1]. A
    torque the model explains only at a scale far from its own (a spring, a log that is no robot's)
    is not explained."""
    if not (float(np.linalg.norm(model)) > 0 and float(np.abs(qd).max()) > 0):
        return 0.0
    lo = np.array([1 / MODEL_SLACK, 0.0, 0.0, -np.inf])
    hi = np.array([MODEL_SLACK, np.inf, np.inf, np.inf])
    _, res = bounded_lstsq(np.concatenate([model[:, None], _friction_columns(qd)], axis=1), tau, lo, hi)
    total = float(np.sum((tau - tau.mean()) ** 2))
    return max(0.0, 1.0 - res / total) if total > 0 else 0.0


def bounded_lstsq(A, b, lo, hi) -> tuple[np.ndarray, float]:
    """``min ||A x - b||^2`` subject to ``lo <= x <= hi`` for a few columns (A (N, k), k <= 6; lo,
    hi (k,), +-inf for an open side): (x (k,), the squared residual). Exact by enumeration of the
    active sets (each variable free, or at one of its finite bounds; the optimum's is among them,
    and its free variables are then the least-squares solution), on the k x k normal equations:
    3^k tiny solves instead of importing ``scipy.optimize`` (0.37 s of every ``jaxid identify``
    that calls ``lsq_linear``, its reference in the tests)."""
    A, b = np.asarray(A, dtype=float), np.asarray(b, dtype=float)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    G, g, bb = A.T @ A, A.T @ b, float(b @ b)
    scale = np.sqrt(np.maximum(np.diag(G), 1e-300))
    best, best_x = math.inf, np.clip(np.zeros(len(g)), lo, hi)
    choices = [[None] + [v for v in (lo[i], hi[i]) if np.isfinite(v)] for i in range(len(g))]
    for combo in itertools.product(*choices):
        free = np.array([v is None for v in combo])
        x = np.array([0.0 if v is None else v for v in combo])
        if free.any():
            Gf = G[np.ix_(free, free)] / np.outer(scale[free], scale[free])
            rhs = (g[free] - G[np.ix_(free, ~free)] @ x[~free]) / scale[free]
            x[free] = np.linalg.lstsq(Gf, rhs, rcond=1e-12)[0] / scale[free]
        tol = 1e-9 * np.maximum(1.0, np.abs(x))
        if np.all(x >= lo - tol) and np.all(x <= hi + tol):
            res = bb - 2 * float(x @ g) + float(x @ G @ x)
            if res < best:
                best, best_x = res, np.clip(x, lo, hi)
    return best_x, max(best, 0.0)


def _inverted(tau, model, qd, name: str, source: str, label: str) -> list[Finding]:
    """A ``torque-sign`` finding for a joint (``name``; ``label`` as the message says it) the nominal model
    alone does not explain (friction-
    dominated, or the model only partly right) when the model's torque plus dissipating friction
    (`_explained`) explains the torque with its sign inverted, a share of at least
    [`SIGN_SHARE`][jaxid.workflow.plausibility.SIGN_SHARE] of its power, and more than twice the share it explains as logged: friction
    opposes motion and gravity pulls one way, so a flipped channel fits only flipped."""
    logged, flipped = _explained(tau, model, qd), _explained(-tau, model, qd)
    if not (flipped >= SIGN_SHARE and flipped > 2 * logged):
        return []
    return [
        Finding(
            "torque-sign",
            source,
            name,
            f"{label}'s torque is explained by the nominal model and friction that dissipates only with its sign "
            f"inverted ({100 * flipped:.0f} % of its variance, against {100 * logged:.0f} % as logged): its sign is "
            "inverted (a negative gain, or the channel's direction): flip it (a negative entry of --gains, or fix "
            "the log)",
            True,
            factor=-flipped,
        )
    ]


def check_residuals(robot, params, prepared) -> tuple[Finding, ...]:
    """After the fit: a ``residual`` warning per joint whose residual RMS over the prepared runs is
    at least [`RESIDUAL_SHARE`][jaxid.workflow.plausibility.RESIDUAL_SHARE] of its torque RMS (the model does not explain that joint)."""
    from jaxid.workflow.validation import predict

    names = _labels(robot)
    res2, tau2 = np.zeros(robot.n), np.zeros(robot.n)
    for ds in prepared.datasets:
        tau = np.asarray(ds.tau, dtype=float)
        try:
            pred = np.asarray(predict(robot, params, ds), dtype=float)
        except ValueError:
            return ()
        res2 += ((tau - pred) ** 2).sum(axis=0)
        tau2 += (tau**2).sum(axis=0)
    share = np.sqrt(res2 / np.where(tau2 > 0, tau2, np.inf))
    source = ", ".join(c["source"] for c in prepared.choices)
    return tuple(
        Finding(
            "residual",
            source,
            names[j],
            f"{_said(names, j)}: the fit's residual RMS is {100 * share[j]:.3g} % of the torque RMS: the model does not "
            "explain this joint (a unit, sign or gain fault of its channel, a friction term missing (--friction), "
            "or a joint that barely moves)",
            False,
            factor=float(share[j]),
        )
        for j in range(robot.n)
        if share[j] >= RESIDUAL_SHARE
    )


# ------------------------------------------------------------------------- the verdict
@dataclass(frozen=True)
class Plausibility:
    """The findings on the runs of one command ([`screen_logs`][jaxid.workflow.plausibility.screen_logs],
    [`screen_torques`][jaxid.workflow.plausibility.screen_torques]) and the
    faults accepted (``--accept-fault``). Stored in params.json (``plausibility``)."""

    findings: tuple[Finding, ...] = ()
    accepted: tuple[str, ...] = ()

    def __add__(self, other: Plausibility) -> Plausibility:
        return Plausibility(self.findings + other.findings, tuple(dict.fromkeys(self.accepted + other.accepted)))

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The error findings not accepted."""
        return tuple(f for f in self.findings if f.error and f.fault not in self.accepted)

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings], "accepted": list(self.accepted)}


def raise_errors(record: Plausibility) -> None:
    """WorkflowError (one line) naming the first error finding not accepted, how many more there are,
    and ``--accept-fault NAME`` to proceed anyway."""
    errors = record.errors
    if not errors:
        return
    first = errors[0]
    more = (
        f" ({len(errors) - 1} more fault(s): {', '.join(sorted({f.fault for f in errors[1:]}))})"
        if len(errors) > 1
        else ""
    )
    anyway = (
        "" if f"--accept-fault {first.fault}" in first.message else f"; to fit anyway: --accept-fault {first.fault}"
    )
    raise WorkflowError(f"{first.line}{more}{anyway}")


def _warn(f: Finding, accepted: bool) -> None:
    note = " (accepted)" if accepted and f.error else ""
    warnings.warn(f"{f.line}{note}", stacklevel=4)


def screen_logs(raw, robot, accept=()) -> tuple[list, Plausibility]:
    """[`check_log`][jaxid.workflow.plausibility.check_log] on every raw run: the runs (unwrapped; spikes bridged where ``jump`` is
    accepted) and the record. WorkflowError ([`raise_errors`][jaxid.workflow.plausibility.raise_errors]) on an error not accepted; the
    other findings warned and noted in their run's notes."""
    accept = check_accept(accept)
    out: list = []
    findings: list[Finding] = []
    for ds in raw:
        ds, found = check_log(ds, robot)
        if "jump" in accept and any(f.fault == "jump" for f in found):
            ds = bridge_jumps(ds, robot)
        out.append(ds)
        findings += found
    record = Plausibility(tuple(findings), accept)
    raise_errors(record)
    out = [_noted(ds, [f for f in findings if f.source == (ds.source or "<dataset>")], accept) for ds in out]
    return out, record


def _noted(ds, findings, accept):
    new = []
    for f in findings:
        _warn(f, f.fault in accept)
        if f.repaired is None and f.message not in ds.notes:
            new.append(f.message + (" (accepted)" if f.error else ""))
    return dataclasses.replace(ds, notes=(*ds.notes, *new)) if new else ds


def screen_torques(prepared, robot, accept=()) -> Plausibility:
    """[`check_torques`][jaxid.workflow.plausibility.check_torques] on the prepared runs; WorkflowError on an error not accepted, the
    accepted ones warned."""
    accept = check_accept(accept)
    record = Plausibility(check_torques(prepared, robot), accept)
    raise_errors(record)
    for f in record.findings:
        _warn(f, True)
    return record
