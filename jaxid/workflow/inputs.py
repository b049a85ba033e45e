"""The inputs of identification: the model ([`model`][jaxid.workflow.inputs.model]), a raw log ([`read`][jaxid.workflow.inputs.read]), two runs of
one trajectory on one clock ([`align_runs`][jaxid.workflow.inputs.align_runs]), and the payload's own torque of a loaded and an
unloaded run ([`torque_difference`][jaxid.workflow.inputs.torque_difference])."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from jaxid.model.description import build_model, model_description


# ---------------------------------------------------------------------------------- models
def model(
    *,
    builtin: str | None = None,
    urdf=None,
    tip_link: str | None = None,
    dh=None,
    mjcf=None,
    joint_terms=(),
    coulomb_eps: float | None = None,
    stribeck_vs: float | None = None,
    check_inertia: bool = True,
    transmission=None,
):
    """(robot, description): a built-in robot (``"ur5"``, ``"planarN"``), one read from a
    URDF, a DH description file (``jaxid.model.dh``) or an MJCF file, with ``joint_terms`` enabled, and
    its ``model`` entry for ``params.json`` (see ``jaxid.model.description.model_description``), with the
    fingerprint of its kinematics and the file's content hash. check_inertia=False accepts
    placeholder (non-physical) URDF or MJCF inertials. transmission: the motors' transmission
    (a ``jaxid.model.transmission.Transmission``, a file, or ``"urdf"``; see
    ``jaxid.model.description.build_model``): the joint terms then act on the motors, and the
    description records it."""
    robot = build_model(
        builtin=builtin,
        urdf=urdf,
        tip_link=tip_link,
        dh=dh,
        mjcf=mjcf,
        joint_terms=joint_terms,
        coulomb_eps=coulomb_eps,
        stribeck_vs=stribeck_vs,
        check_inertia=check_inertia,
        transmission=transmission,
    )
    return robot, model_description(robot, builtin=builtin, urdf=urdf, tip_link=tip_link, dh=dh, mjcf=mjcf)


# ------------------------------------------------------------------------------------ read
def read(
    path,
    *,
    n: int | None = None,
    columns=None,
    units=None,
    gains=None,
    resample: bool = False,
    max_gap: float | None = None,
    joint_names=None,
    topic: str | None = None,
    rate: float | None = None,
    window=None,
    transmission=None,
):
    """One raw log as a ``jaxid.data.Dataset`` (no derivatives computed: [`prepare`][jaxid.workflow.preprocess.prepare] does).

    path: ``.csv``/``.npz`` file or ROS 2 bag (formats in ``jaxid.data``). n: expected joints (checked).
    columns, units, gains: column mapping, unit conversion and current-to-torque gains of
    ``jaxid.data.read``. resample: interpolate jittered time stamps onto a uniform grid.
    max_gap: s, accept gaps in the time stamps up to this long (dropped samples; bridged by
    resampling), else a gap of over ``jaxid.data.GAP_FACTOR`` median steps is an error.
    joint_names: the model's coordinate names (``robot.coordinate_names``): columns a glob maps
    are put in the model's joint order by the joint names in their headers
    (``jaxid.data.order_by_joint_names``; a mismatch is an error naming both lists).
    topic: a ROS 2 bag's JointState topic (path a bag). rate: Hz, the sampling rate of a log
    without a time column (checked against the stamps of one with). window: (T0, T1) or
    ``"T0:T1"``, s from the log's start: the samples kept.
    transmission: a motor-side log's ``jaxid.model.transmission.Transmission`` (converted to
    the joints on reading, ``jaxid.data.read``), or None.
    Raises ``jaxid.data.DatasetError`` naming the file, column and row of any problem.
    """
    from jaxid import data

    extra = dict(
        columns=columns,
        units=units,
        gains=gains,
        max_gap=max_gap,
        joint_names=joint_names,
        topic=topic,
        rate=rate,
        window=window,
        transmission=transmission,
    )
    extra = {k: v for k, v in extra.items() if v is not None}
    return data.read(path, n=n, resample=resample, derivatives=None, **extra)


#: Fewest samples of the reference run that must have a partner in the other run after
#: [`align_runs`][jaxid.workflow.inputs.align_runs], as a fraction of the reference: with less, most of the loaded run would be
#: thrown away, which two runs of one trajectory recorded over its whole length never need.
MIN_OVERLAP = 0.5
#: How far (in the other run's median sample steps) a reference stamp may lie outside the other
#: run's span and still keep its sample in [`align_runs`][jaxid.workflow.inputs.align_runs].
ALIGN_SLACK = 0.01


@dataclass(frozen=True)
class Alignment:
    """How [`align_runs`][jaxid.workflow.inputs.align_runs] put a run onto a reference run's clock.

    shift: s, added to the other run's stamps (counted from its first) to put its samples on the
    reference's (counted from its first); overlap: reference samples kept (those with the other
    run on both sides); dropped: reference samples without a partner, cut off its ends."""

    shift: float
    overlap: int
    dropped: int

    def describe(self, what: str = "the other run") -> str:
        """One line, e.g. ``unloaded run aligned: shifted by 3.2 ms, 19970 samples of overlap (30 dropped)``."""
        return (
            f"{what} aligned: shifted by {round(1e3 * self.shift, 6) + 0.0:.4g} ms, {self.overlap} samples of overlap "
            f"({self.dropped} dropped)"
        )


def _same_joints(a, b, what=("the loaded run", "the unloaded run")):
    if a.n != b.n:
        raise ValueError(f"{what[0]} has {a.n} joints and {what[1]} {b.n}: record both on the same robot")


def align_runs(reference, other, *, min_overlap: float = MIN_OVERLAP):
    """Two runs of one trajectory on the reference's time stamps: ``(reference, other, Alignment)``.

    The time offset between the runs is the least-squares shift of their positions, all joints
    jointly (``jaxid.signals.estimate_offset``: sub-sample, each run's stamps counted from its
    first, jittered stamps and a start at another phase of the trajectory allowed); the other run's
    q, tau (and qd, qdd when both runs log them) are then resampled by cubic splines onto the
    reference's stamps, and both are cut to the reference samples the other run spans.

    reference, other: ``jaxid.data.Dataset`` raw runs ([`read`][jaxid.workflow.inputs.read]), t (N,) and (M,) s, q and tau
    (N, n), (M, n) rad and N m, the same joints. min_overlap: the fraction of the reference that
    must keep a partner. Returns the reference cut to the overlap, the other run on its stamps (t,
    q, tau, qd, qdd of shape (K,) / (K, n)), and the [`Alignment`][jaxid.workflow.inputs.Alignment].
    Raises ValueError when the joints differ or the overlap is shorter than ``min_overlap``.
    """
    from jaxid import data, signals

    _same_joints(reference, other, ("the reference run", "the other run"))
    t_r, t_o = np.asarray(reference.t, float), np.asarray(other.t, float)
    tau_r, tau_o = t_r - t_r[0], t_o - t_o[0]  # float64 from the first stamp: epoch stamps lose no digits
    offset = float(signals.estimate_offset(tau_r, np.asarray(reference.q), tau_o, np.asarray(other.q)))
    at = tau_r + offset  # the reference's stamps on the other run's clock
    # A stamp within ALIGN_SLACK of a step outside the other run's span keeps its sample (the end
    # cubic continued that far): the shift itself is not known better, and identical stamps shifted by
    # a rounding error should not lose an end sample.
    slack = ALIGN_SLACK * float(np.median(np.diff(tau_o)))
    keep = np.flatnonzero((at >= -slack) & (at <= tau_o[-1] + slack))
    if keep.size < max(3, min_overlap * len(t_r)):
        raise ValueError(
            f"{other.source or 'the other run'} overlaps only {keep.size} of the {len(t_r)} samples of "
            f"{reference.source or 'the reference run'} once "
            f"aligned (shifted by {-offset:.4g} s; at least {min_overlap:.0%} needed): record both runs over the "
            "whole trajectory, and check that they are runs of the same trajectory"
        )
    ref = reference.slice(int(keep[0]), int(keep[-1]) + 1)

    def on_reference(x):
        return None if x is None else np.asarray(signals.spline_resample(tau_o, np.asarray(x), at[keep]))

    both = lambda s: getattr(reference, s) is not None and getattr(other, s) is not None
    moved = data.from_arrays(
        t_r[keep],
        on_reference(other.q),
        on_reference(other.tau),
        on_reference(other.qd) if both("qd") else None,
        on_reference(other.qdd) if both("qdd") else None,
        source=other.source or "<arrays>",
    )
    moved = dataclasses.replace(
        moved, notes=other.notes, base_frequency=other.base_frequency, harmonics=other.harmonics
    )
    return ref, moved, Alignment(shift=-offset, overlap=int(keep.size), dropped=int(len(t_r) - keep.size))


#: Largest RMS position difference between a loaded and an unloaded run of the same trajectory,
#: as a fraction of each joint's range of motion in the loaded run (tracking differs a little
#: under load; a different trajectory differs by its whole range).
SAME_TRAJECTORY = 0.02


def torque_difference(loaded, unloaded):
    """The payload's own torque as a run: ``tau_loaded - tau_unloaded`` at the loaded run's motion.

    The payload literature's experiment (Khalil & Dombre, "Modeling, Identification and Control
    of Robots", 2002, ch. 12; the jaxid seed article 004): the same excitation run without and
    with the payload. The robot's own torque, friction included, then cancels in the difference
    instead of being predicted by an identified model, whose error would otherwise pass into the
    payload (mostly its inertia, which moves the torque least). The difference has twice the
    torque noise variance of one run. Identify it with a zero robot model
    (``identification.payload.identify_payload(robot, zeros, ...)``; ``jaxid payload --unloaded``).

    loaded, unloaded: ``jaxid.data.Dataset`` raw runs ([`read`][jaxid.workflow.inputs.read]) of one trajectory at the same
    sample times ([`align_runs`][jaxid.workflow.inputs.align_runs] puts two runs there), t (N,) s, q and tau (N, n) rad and N m. Returns a Dataset
    with the loaded run's
    t, q (and logged qd, qdd) and the torque difference (N, n), N m, for [`prepare`][jaxid.workflow.preprocess.prepare].
    Raises ValueError when the runs differ in joints, length or time stamps, or when a joint's
    RMS position difference exceeds [`SAME_TRAJECTORY`][jaxid.workflow.inputs.SAME_TRAJECTORY] of its range.
    """
    from jaxid import data

    name = lambda ds: ds.source or "the run"
    _same_joints(loaded, unloaded)
    if loaded.t.shape != unloaded.t.shape:
        raise ValueError(
            f"the loaded run has {loaded.t.shape[0]} samples and the unloaded run {unloaded.t.shape[0]}: "
            "record the same trajectory at the same rate in both (cut them to the same samples)"
        )
    t_l, t_u = np.asarray(loaded.t), np.asarray(unloaded.t)
    dt = np.median(np.diff(t_l))
    shift = np.max(np.abs((t_l - t_l[0]) - (t_u - t_u[0])))
    if shift > 0.1 * dt:
        raise ValueError(
            f"the time stamps of {name(loaded)} and {name(unloaded)} differ by up to {shift:.3g} s "
            f"(sample period {dt:.3g} s): align the two runs of the trajectory first (align_runs; "
            "jaxid payload --unloaded does by default)"
        )
    q_l, q_u = np.asarray(loaded.q), np.asarray(unloaded.q)
    rms = np.sqrt(np.mean((q_l - q_u) ** 2, axis=0))
    span = np.ptp(q_l, axis=0)
    off = np.flatnonzero(rms > SAME_TRAJECTORY * np.maximum(span, 1e-12))
    if off.size:
        j = int(off[0])
        raise ValueError(
            f"{name(loaded)} and {name(unloaded)} are not the same trajectory: joint {j + 1} differs by "
            f"{rms[j]:.3g} rad RMS over a range of {span[j]:.3g} rad (more than {SAME_TRAJECTORY:.0%}); "
            "run the unloaded experiment on the loaded run's trajectory"
        )
    diff = data.from_arrays(
        t_l,
        q_l,
        np.asarray(loaded.tau) - np.asarray(unloaded.tau),
        loaded.qd,
        loaded.qdd,
        source=f"{loaded.source} - {unloaded.source}",
    )
    # The loaded run's excitation (base frequency, harmonics) still describes the motion.
    return dataclasses.replace(diff, base_frequency=loaded.base_frequency, harmonics=loaded.harmonics)
