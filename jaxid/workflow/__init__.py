"""The path from a robot's log to an identified model: read -> prepare -> identify -> validate.

One module for the library, the command line and the demo: ``jaxid identify`` is
``read`` + ``prepare`` + ``identify_experiment`` + ``results.save_params``, ``jaxid validate``
is ``read`` + ``prepare`` + ``validate``, and ``jaxid demo`` runs the subcommands
``excite -> simulate -> identify -> validate`` with the defaults a user gets. The choices
made on the data (cutoff, edge trim, resampling) are recorded in the results and printed.

- :func:`model` builds a robot (built-in or URDF) with its description for ``params.json``.
- :func:`read` reads one log (``jaxid.data.read`` without differentiation).
- :func:`prepare` turns raw logs into q, qd, qdd, tau for identification under a
  :class:`Policy`: missing derivatives by zero-phase filtering with a cutoff chosen from
  the position spectrum (:func:`choose_cutoff`), edge samples dropped over the filter's
  settling time (:func:`edge_trim`), optional decimation.
- :func:`identify_experiment` identifies the base parameters (and joint friction) of all
  prepared runs stacked, optionally physically consistent standard parameters, and names
  what is physically wrong with the result (:func:`physics_report`).
- :func:`validate` predicts held-out torques and computes the metrics, warning when the
  parameters were identified for another model (``jaxid.results.fingerprint``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from jaxid.identification.base import SAMPLES as CHUNK

#: CHUNK: samples per regressor evaluation, ``jaxid.identification.base.SAMPLES``: a fixed
#: chunk (the last one padded) compiles once, shared with ``base_parameters`` (and so with the
#: excitation design), and the persistent compilation cache reuses it in the next process.

#: Signal-to-noise ratio of the smoothed position spectrum at the chosen cutoff
#: (:func:`choose_cutoff`): 10, i.e. the cutoff is where the signal falls to 10 dB above the
#: noise floor.
SNR_CUTOFF = 10.0

#: Cutoff of the derivative filter, in multiples of the signal band (the excitation's known
#: base frequency x harmonics, or the band edge read from the spectrum by
#: :func:`choose_cutoff`): the forward-backward 4th-order Butterworth passes the top of the band
#: at 1 / (1 + 3^-8) = 99.985 %; a cutoff at the band edge itself (the spectrum's first guess,
#: 1.35 x band on a noisy planar arm) passes it at 92 % and biases the estimates by tens of std.
EXCITATION_CUTOFF = 3.0

#: Estimators of :func:`identify_experiment`.
METHODS = ("wls", "ols", "irls", "ridge", "iv", "didim")

#: Fraction of the filter's impulse-response mass that may reach past the kept edge samples
#: (:func:`edge_trim`).
SETTLING_TOL = 1e-4


class WorkflowError(ValueError):
    """Data or settings that the workflow cannot use; the message names the problem and the fix."""


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
):
    """(robot, description): a built-in robot (``"ur5"``, ``"planarN"``), one read from a
    URDF, a DH description file (``jaxid.model.dh``) or an MJCF file, with ``joint_terms`` enabled, and
    its ``model`` entry for ``params.json`` (see ``jaxid.results.model_description``), with the
    fingerprint of its kinematics and the file's content hash. check_inertia=False accepts
    placeholder (non-physical) URDF or MJCF inertials."""
    from jaxid import results

    robot = results.build_model(
        builtin=builtin,
        urdf=urdf,
        tip_link=tip_link,
        dh=dh,
        mjcf=mjcf,
        joint_terms=joint_terms,
        coulomb_eps=coulomb_eps,
        stribeck_vs=stribeck_vs,
        check_inertia=check_inertia,
    )
    return robot, results.model_description(robot, builtin=builtin, urdf=urdf, tip_link=tip_link, dh=dh, mjcf=mjcf)


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
):
    """One raw log as a ``jaxid.data.Dataset`` (no derivatives computed: :func:`prepare` does).

    path: ``.csv``/``.npz`` file (formats in ``jaxid.data``). n: expected joints (checked).
    columns, units, gains: column mapping, unit conversion and current-to-torque gains of
    ``jaxid.data.read``. resample: interpolate jittered time stamps onto a uniform grid.
    max_gap: s, accept gaps in the time stamps up to this long (dropped samples; bridged by
    resampling), else a gap of over ``jaxid.data.GAP_FACTOR`` median steps is an error.
    Raises ``jaxid.data.DatasetError`` naming the file, column and row of any problem.
    """
    from jaxid import data

    extra = {k: v for k, v in dict(columns=columns, units=units, gains=gains, max_gap=max_gap).items() if v is not None}
    return data.read(path, n=n, resample=resample, derivatives=None, **extra)


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

    loaded, unloaded: ``jaxid.data.Dataset`` raw runs (:func:`read`) of one trajectory at the same
    sample times, t (N,) s, q and tau (N, n) rad and N m. Returns a Dataset with the loaded run's
    t, q (and logged qd, qdd) and the torque difference (N, n), N m, for :func:`prepare`.
    Raises ValueError when the runs differ in joints, length or time stamps, or when a joint's
    RMS position difference exceeds :data:`SAME_TRAJECTORY` of its range.
    """
    from jaxid import data

    name = lambda ds: ds.source or "the run"
    if loaded.n != unloaded.n:
        raise ValueError(
            f"the loaded run has {loaded.n} joints and the unloaded run {unloaded.n}: record both on the same robot"
        )
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
            f"(sample period {dt:.3g} s): align the two runs of the trajectory first"
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


# --------------------------------------------------------------------------------- prepare
@dataclass(frozen=True)
class Policy:
    """How measured signals become the q, qd, qdd, tau that identification uses.

    derivatives: "butterworth" (zero-phase, then central differences) or "savgol": the
        method of ``jaxid.signals.derivatives`` for velocities/accelerations missing from a log.
    cutoff: low-pass cutoff, Hz, or None: chosen per run from its position spectrum
        (:func:`choose_cutoff`).
    order: Butterworth order.
    trim: samples dropped at each end of a differentiated run, or None: the filter's
        settling time (:func:`edge_trim`). Runs whose qd and qdd were logged are not trimmed.
    step: keep every ``step``-th sample after filtering (decimation), >= 1.
    base_frequency: base frequency of a periodic excitation, Hz, or None: the run's own
        (``Dataset.base_frequency``, from ``jaxid excite``'s sidecar), if any.
    periodic: when the base frequency is known and a run without logged qd, qdd holds whole
        periods of it, differentiate in the frequency domain over the averaged period
        (``jaxid.signals.periodic_derivatives``) instead of filtering (:func:`prepare`).
    parallel: parallel filtering (Gautier 1997): the regressor columns and tau of each run are
        low-pass filtered with the same zero-phase filter and then decimated by ``step``
        (:func:`regressor_rows`), instead of decimating the prepared samples; the prepared
        runs keep every sample.
    reversal_band: rad/s, or None: samples at which some joint's |qd| is below it (velocity
        reversals and rest, where the Coulomb sign tanh(qd / eps) of an estimated qd can flip
        against the true one and give spikes of +-2 fc) are left out of the fit
        (:func:`identify_experiment`); a few times the noise std of qd plus the model's
        ``coulomb_eps`` (the periodic path prints that std). The runs keep them (validation).
    """

    derivatives: str = "butterworth"
    cutoff: float | None = None
    order: int = 4
    trim: int | None = None
    step: int = 1
    base_frequency: float | None = None
    periodic: bool = True
    parallel: bool = False
    reversal_band: float | None = None

    def __post_init__(self):
        if self.derivatives not in ("butterworth", "savgol"):
            raise WorkflowError(f"derivatives must be 'butterworth' or 'savgol', got {self.derivatives!r}")
        if self.cutoff is not None and not (math.isfinite(self.cutoff) and self.cutoff > 0):
            raise WorkflowError(f"cutoff must be a finite frequency > 0 Hz, got {self.cutoff}")
        if int(self.order) != self.order or self.order < 1:
            raise WorkflowError(f"order must be an integer >= 1, got {self.order}")
        if self.trim is not None and (int(self.trim) != self.trim or self.trim < 0):
            raise WorkflowError(f"trim must be an integer >= 0 samples, got {self.trim}")
        if int(self.step) != self.step or self.step < 1:
            raise WorkflowError(f"step must be an integer >= 1, got {self.step}")
        if self.reversal_band is not None and not (math.isfinite(self.reversal_band) and self.reversal_band > 0):
            raise WorkflowError(f"reversal_band must be a finite velocity > 0 rad/s, got {self.reversal_band}")
        if self.base_frequency is not None and not (math.isfinite(self.base_frequency) and self.base_frequency > 0):
            raise WorkflowError(f"base_frequency must be a finite frequency > 0 Hz, got {self.base_frequency}")


@dataclass(frozen=True)
class Prepared:
    """Runs ready for identification, with the choices made on each.

    datasets: ``jaxid.data.Dataset`` per run, with q (filtered where differentiated), qd,
        qdd and tau, trimmed and decimated.
    choices: one dict per run: ``source``, ``samples_read``, ``samples`` (kept), ``fs_hz``,
        ``derivatives`` ("logged" or the method), ``cutoff_hz`` and ``cutoff_from``
        ("spectrum", "excitation": :data:`EXCITATION_CUTOFF` x the known band, or "policy"), ``trim`` (samples per end), ``step``, ``index``
        ``[start, stop, step]`` into the run as read, ``notes``; ``parallel`` (None, or with
        ``Policy.parallel`` ``{"cutoff_hz", "order", "step"}`` of :func:`parallel_cutoff`),
        ``reversal_band`` (rad/s or None, ``Policy.reversal_band``), ``memory`` (samples, as
        fitted: the settling length :func:`edge_trim` of the derivative filter, plus that of the
        parallel filter, over which the filters correlate the equation errors; 0 for logged and
        periodic runs without parallel filtering: the lag window of the covariance of
        :func:`identify_experiment`); with ``derivatives``
        "periodic" (the run averaged into one period) also ``base_frequency_hz``,
        ``base_frequency_from`` ("data" or "policy"), ``periods``, ``samples_per_period``,
        ``harmonics`` (per joint) and ``harmonics_from`` ("excitation" or "noise floor"),
        ``noise_std`` (per joint, of q rad, qd rad/s, qdd rad/s^2 after averaging; None when
        it cannot be estimated) and ``noise_from`` ("period spread", or from one period
        "spectrum above the harmonics").
    """

    datasets: tuple
    choices: tuple

    @property
    def n_samples(self) -> int:
        """Samples over all runs."""
        return sum(len(d) for d in self.datasets)

    def align(self, run: int, x):
        """Rows of ``x`` (an array over the samples of run ``run`` as read, e.g. the noise-free
        torques of a simulation) that the prepared run kept (of a run averaged into one period:
        the first period, which is the average of a periodic ``x``)."""
        start, stop, step = self.choices[run]["index"]
        return np.asarray(x)[start:stop:step]

    def describe(self) -> list[str]:
        """One line per run: what was done to it (:func:`describe_run`)."""
        return [describe_run(c) for c in self.choices]


def describe_run(c: dict) -> str:
    """One line: what :func:`prepare` did to a run, from its choices (``Prepared.choices[i]``,
    ``params.fit["preprocessing"][i]``)."""
    if c["derivatives"] == "logged":
        how = "qd, qdd as logged"
    elif c["derivatives"] == "periodic":
        std = c["noise_std"]
        noise = (
            f", noise std qd <= {max(std['qd']):.2g} rad/s, qdd <= {max(std['qdd']):.2g} rad/s^2 "
            f"(from the {c.get('noise_from', 'period spread')})"
            if std
            else ", no noise estimate"
        )
        how = (
            f"{c['periods']} period{'s' if c['periods'] > 1 else ''} of {c['base_frequency_hz']:.4g} Hz "
            f"({'from the excitation file' if c['base_frequency_from'] == 'data' else 'as set'})"
            f"{' averaged into one' if c['periods'] > 1 else ''}, qd, qdd in the frequency domain with "
            f"{max(c['harmonics'])} harmonics "
            f"({'of the excitation' if c['harmonics_from'] == 'excitation' else 'above the noise floor'})"
            f"{noise}"
        )
    else:
        source = dict(
            spectrum="from the position spectrum", excitation=f"{EXCITATION_CUTOFF:g} x the excitation's band"
        ).get(c["cutoff_from"], "as set")
        how = (
            f"qd, qdd by {c['derivatives']} at {c['cutoff_hz']:.3g} Hz ({source}), "
            f"{c['trim']} samples trimmed at each end"
        )
    step = f", every {c['step']}th sample" if c["step"] > 1 else ""
    if c.get("parallel"):
        step = (
            f", W and tau low-passed at {c['parallel']['cutoff_hz']:.3g} Hz together"
            f"{step and ' and decimated to' + step[1:]}"
        )
    notes = "".join(f"; {n}" for n in c["notes"])
    return f"{c['source']}: {c['samples']} of {c['samples_read']} samples at {c['fs_hz']:.4g} Hz, {how}{step}{notes}"


def choose_cutoff(q, fs: float, snr: float = SNR_CUTOFF, margin: float = EXCITATION_CUTOFF) -> float:
    """Low-pass cutoff, Hz, for differentiating sampled positions: ``margin`` times the band
    edge, where the position spectrum meets the noise floor.

    Per joint: the periodogram of q (linear trend removed, Hann window) averaged over 9
    neighbouring bins (a mean of 9 exponential variables: noise alone exceeds 10 times its
    mean with probability below 1e-20); the noise floor at each frequency f is read from the
    raw periodogram over [f / 2, 2 f] (:func:`_local_floor`: its median, so that noise that
    is not white, as on a resampled or drive-filtered log, is still noise); the joint's cutoff is the highest
    frequency below fs/4 at which the averaged spectrum is above ``snr`` times the floor, so
    that a signal with separate bands keeps all of them. Returned: ``margin`` (default :data:`EXCITATION_CUTOFF`, 3) times the
    largest band edge over joints, clipped to [fs/1000, fs/4]: the filter then passes the
    whole band unattenuated (a cutoff at the edge itself would take 8 % off the top of the
    band, a bias the reported std does not cover). Noise-free data (no floor) give fs/4.

    q: positions (N, n), rad. fs: sample rate, Hz. snr: power ratio to the floor at the cutoff.
    The idea: cut where the signal-to-noise ratio of the positions, and so of their
    derivatives, falls to about one (Gautier & Khalil, "Exciting trajectories for the
    identification of base inertial parameters of robots", IJRR 11(4), 1992; the noise floor
    read from the spectrum as in Pintelon & Schoukens, System Identification, 2012).
    """
    q = np.asarray(q, dtype=float)
    N = q.shape[0]
    t = np.arange(N) - (N - 1) / 2
    x = q - q.mean(axis=0) - np.outer(t, (t @ (q - q.mean(axis=0))) / (t @ t))
    X = np.abs(np.fft.rfft(x * np.hanning(N)[:, None], axis=0)) ** 2
    f = np.fft.rfftfreq(N, 1.0 / fs)
    smooth = np.apply_along_axis(lambda x: np.convolve(x, np.ones(9) / 9, mode="same"), 0, X)
    band = (f > 0) & (f <= fs / 4)
    floor = _local_floor(X, f, fs)
    cut = []
    for j in range(q.shape[1]):
        above = np.nonzero(band & ((smooth[:, j] > snr * floor[:, j]) | (floor[:, j] <= 0)))[0]
        cut.append(f[above[-1]] if above.size else fs / 4)
    return float(np.clip(margin * max(cut), fs / 1000, fs / 4))


def _local_floor(X, f, fs: float, points: int = 200):
    """The noise floor (N_f, n) of periodograms ``X`` (N_f, n) at each frequency ``f`` (N_f,)
    Hz: the median of X over [f / 2, min(2 f, fs/2)] over ln 2 (the median of an exponential
    variable is ln 2 times its mean), evaluated on ``points`` log-spaced frequencies up to fs/4
    and held between them (a median per bin would cost O(N^2)).

    Measured above each frequency rather than once above fs/4, so that noise that is not white
    (positions filtered inside the drive, or resampled from jittered stamps by a spline, which
    damps the top of the band: the Panda log of Gaz et al. 2019 has a floor 6-8 times higher
    over 3-100 Hz than above 245 Hz) is still read as noise: the window is centred on f on a
    log scale, so a floor that falls with frequency is not underestimated. Measured limit: a
    floor falling as a first-order low-pass (power / 4 per octave) is read as noise; one that
    falls as steeply as a second-order filter's near fs/4 can still be read as signal there.
    A smooth roll-off of the signal itself (windowed noise-free data) is read as floor too,
    so its cut is ``margin`` times where the roll-off begins. The median leaves
    out the excitation's lines in the window and, at the band edge, the signal below it (less
    than half the window)."""
    grid = np.geomspace(max(f[1], 1e-12), fs / 4, points)
    lo = np.searchsorted(f, grid / 2)
    hi = np.searchsorted(f, np.minimum(2 * grid, fs / 2), side="right")
    at = np.stack([np.median(X[a : max(b, a + 1)], axis=0) for a, b in zip(lo, hi)]) / np.log(2)
    return at[np.clip(np.searchsorted(grid, f, side="right") - 1, 0, points - 1)]


def edge_trim(fs: float, cutoff: float, order: int = 4, tol: float = SETTLING_TOL) -> int:
    """Samples to drop at each end of a zero-phase Butterworth-filtered run: the filter's
    settling time, the half-width k of the forward-backward impulse response outside which
    only ``tol`` of its absolute mass lies (at least the filter's own edge padding
    3 (order + 1)). The short odd extension at an edge (``jaxid.signals.butterworth``) starts
    the filter off its steady state and flips the sign of qdd; the transient spreads over the
    impulse response, so beyond k it is below ``tol`` of its size at the edge (with the default
    1e-4, qdd errors at the kept edge are those of the interior; 1e-3 leaves about 8 times more).

    fs: sample rate, Hz. cutoff: Hz. order: Butterworth order.
    """
    from scipy import signal

    b, a = signal.butter(order, min(cutoff / (fs / 2), 0.99))
    n = int(min(max(64, 40 * fs / cutoff), 1e6))
    h = signal.lfilter(b, a, np.r_[1.0, np.zeros(n - 1)])
    # filtfilt's impulse response: h correlated with itself, symmetric about lag 0.
    m = np.abs(np.convolve(h, h[::-1])[n - 1 :])
    tail = np.cumsum(m[::-1])[::-1] / (2 * m.sum() - m[0])  # mass beyond lag k, both sides
    return int(max(np.argmax(tail < tol), 3 * (order + 1)))


def prepare(datasets, robot=None, policy: Policy | None = None) -> Prepared:
    """Raw runs (``jaxid.data.Dataset``, as :func:`read` returns them) -> :class:`Prepared`.

    Runs with logged qd and qdd are used sample by sample as they are. A run of a periodic
    excitation of known base frequency (``policy.base_frequency``, else the run's own, from
    ``jaxid excite``'s sidecar) that holds whole periods (two, or one when the excitation's
    harmonics are known) is averaged into one period (q and tau alike), and qd, qdd come from
    the frequency domain (``jaxid.signals.periodic_derivatives``: exact for a band-limited
    periodic motion, no edge trim, a noise estimate per joint); so identification uses N =
    samples per period. Otherwise q is
    low-pass filtered and differentiated (``jaxid.signals.derivatives``) with the policy's
    cutoff, else :data:`EXCITATION_CUTOFF` times the excitation's band (base frequency x
    harmonics) when the run records it, else one chosen from the data (:func:`choose_cutoff`);
    a logged qd is kept, and
    :func:`edge_trim` samples are dropped at each end; then every ``step``-th sample.
    Each run is processed on its own (never across the join of two runs).

    robot: the model (or None), to check the joint count and the positions: a joint that does not
    move, or positions outside the model's range, are warned about and noted in the run's
    description (:func:`_position_problems`). policy: :class:`Policy`.
    Raises WorkflowError naming the run when it is too short or irregularly sampled.
    """
    from jaxid import data, signals

    policy = policy or Policy()
    if isinstance(datasets, data.Dataset):
        datasets = [datasets]
    out, choices = [], []
    for ds in datasets:
        name = ds.source or "<dataset>"
        if robot is not None and ds.n != robot.n:
            raise WorkflowError(
                f"{name}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}; "
                "choose the model of this robot (--robot NAME or --urdf PATH)"
            )
        N = len(ds)
        fs = 1.0 / ds.dt
        notes = list(getattr(ds, "notes", ()) or ())
        c = dict(source=name, samples_read=N, fs_hz=fs, step=policy.step, notes=notes)
        for problem in [] if robot is None else _position_problems(np.asarray(ds.q), robot):
            notes.append(problem)
            warnings.warn(f"{name}: {problem}", stacklevel=2)
        step_t = np.diff(np.asarray(ds.t))
        jitter = float(np.std(step_t) / np.mean(step_t))
        uniform = jitter <= data.JITTER_TOL  # else the filtered path below names the problem
        periodic = _periodic(ds, policy, name) if ds.qd is None and ds.qdd is None and uniform else None
        memory = 0  # samples over which the derivative filter correlates the equation errors
        if ds.qd is not None and ds.qdd is not None:
            c.update(derivatives="logged", cutoff_hz=None, cutoff_from=None, trim=0)
            start, stop = 0, N
        elif isinstance(periodic, tuple):
            ds, more = periodic
            c.update(more)
            start, stop = 0, len(ds)
        else:
            if isinstance(periodic, str):
                notes.append(periodic)
            if not uniform:
                raise WorkflowError(
                    f"{name}: irregular time stamps (std/mean of the step {jitter:.2g}); filtered "
                    "differentiation needs a uniform grid: resample (read(..., resample=True), "
                    "CLI --resample) or log qd and qdd"
                )
            band = ds.base_frequency * ds.harmonics if ds.base_frequency and ds.harmonics else None
            cutoff_from = "policy" if policy.cutoff is not None else "excitation" if band else "spectrum"
            cutoff = dict(policy=policy.cutoff, excitation=EXCITATION_CUTOFF * (band or 0)).get(
                cutoff_from
            ) or choose_cutoff(ds.q, fs)
            if not cutoff < fs / 2:
                raise WorkflowError(
                    f"{name}: cutoff {cutoff:g} Hz is not below the Nyquist frequency "
                    f"{fs / 2:g} Hz of this {fs:g} Hz run; choose a lower cutoff"
                )
            trim = policy.trim if policy.trim is not None else edge_trim(fs, cutoff, policy.order)
            if N <= 2 * trim + data.MIN_SAMPLES:
                raise WorkflowError(
                    f"{name}: {N} samples; differentiating q at {cutoff:.3g} Hz drops {trim} at each "
                    f"end and needs more than {2 * trim + data.MIN_SAMPLES}: record a longer run, "
                    "raise the cutoff, or log qd and qdd"
                )
            try:
                q, qd, qdd = signals.derivatives(
                    ds.q, 1.0 / fs, method=policy.derivatives, cutoff=cutoff, order=policy.order
                )
            except ValueError as e:
                raise WorkflowError(f"{name}: computing qd, qdd from the positions: {e}") from None
            ds = dataclasses.replace(
                ds, q=q, qd=ds.qd if ds.qd is not None else qd, qdd=qdd, derivatives=policy.derivatives
            )
            c.update(derivatives=policy.derivatives, cutoff_hz=float(cutoff), cutoff_from=cutoff_from, trim=int(trim))
            memory = edge_trim(fs, cutoff, policy.order)
            start, stop = trim, N - trim
        step = 1 if policy.parallel else policy.step  # with parallel filtering, regressor_rows decimates
        ds = ds.slice(start, stop, step)
        parallel = (
            dict(cutoff_hz=parallel_cutoff(fs, policy.step, c["cutoff_hz"]), order=policy.order, step=policy.step)
            if policy.parallel
            else None
        )
        if parallel:  # filtering W and tau again lengthens the errors' memory by the second filter's
            memory += edge_trim(fs, parallel["cutoff_hz"], policy.order)
        c.update(
            samples=len(ds),
            index=[int(start), int(stop), int(step)],
            reversal_band=policy.reversal_band,
            parallel=parallel,
            memory=-(-int(memory) // policy.step),
        )
        out.append(ds)
        choices.append(c)
    if not out:
        raise WorkflowError("no datasets given")
    return Prepared(tuple(out), tuple(choices))


#: Logged positions beyond the model's position range by more than this fraction of the range's
#: width are reported (a log may overshoot a soft limit a little; a wrong unit, zero offset or
#: joint order does not stay that close).
RANGE_SLACK = 0.1


def _position_problems(q, robot) -> list[str]:
    """Sentences naming what is implausible about the positions q (N, n) of a run: joints that
    do not move at all (a dead encoder channel, or a joint left at rest), and joints that leave
    the model's [q_min, q_max] by more than :data:`RANGE_SLACK` of its width (suggesting degrees
    where q / 57.3 fits; joints without finite limits are not checked)."""
    lo, hi = np.asarray(robot.q_min, dtype=float), np.asarray(robot.q_max, dtype=float)
    slack = RANGE_SLACK * np.where(np.isfinite(hi - lo), hi - lo, np.inf)
    qmin, qmax = q.min(axis=0), q.max(axis=0)
    revolute = [robot.joint_types[robot.coordinates.index(k)] == "R" for k in range(robot.n)]
    problems = [
        f"{robot.coordinate_names[j]} does not move (q = {qmin[j]:.4g} throughout): a dead encoder channel, "
        "or a joint the trajectory leaves at rest, whose friction and inertia this run cannot show"
        for j in np.flatnonzero(qmax == qmin)
    ]
    bad = np.flatnonzero((qmin < lo - slack) | (qmax > hi + slack))
    if not len(bad):
        return problems
    parts = []
    for j in bad:
        unit = "rad" if revolute[j] else "m"
        degrees = revolute[j] and np.radians(qmin[j]) >= lo[j] - slack[j] and np.radians(qmax[j]) <= hi[j] + slack[j]
        parts.append(
            f"{robot.coordinate_names[j]} spans [{qmin[j]:.4g}, {qmax[j]:.4g}] {unit} against the model's "
            f"[{lo[j]:.4g}, {hi[j]:.4g}]" + (" (degrees? --units q=deg)" if degrees else "")
        )
    return problems + [
        "positions outside the model's range: "
        + "; ".join(parts)
        + "; check the unit, zero offset and order of the q columns, or the model's limits"
    ]


def parallel_cutoff(fs: float, step: int, cutoff: float | None = None) -> float:
    """Cutoff, Hz, of the parallel filter of W and tau (Gautier 1997): 0.8 of the Nyquist
    frequency after decimation by ``step``, 0.4 fs / step (so decimating does not alias), or the
    derivative filter's ``cutoff`` when that is lower (tau then filtered as q was)."""
    return float(min(0.4 * fs / step, cutoff if cutoff is not None else math.inf))


def _periodic(ds, policy: Policy, name: str):
    """(the run averaged into one period, its choices) by ``signals.periodic_derivatives``;
    None without a known base frequency or with ``policy.periodic`` off; a note (str) when
    the base frequency from the data does not fit the run (one set in the policy then is an
    error)."""
    from jaxid import signals

    f0 = policy.base_frequency or ds.base_frequency
    if not policy.periodic or f0 is None:
        return None
    harmonics = ds.harmonics if policy.base_frequency in (None, ds.base_frequency) else None
    fs, N = 1.0 / ds.dt, len(ds)
    try:
        P = signals.samples_per_period(fs, f0)
        if N < P * (1 if harmonics else 2):
            raise ValueError(
                f"{N} samples hold {N / P:.3g} periods of {P} samples at {f0:g} Hz; the periodic "
                f"path needs {'one' if harmonics else 'two'}: record more periods"
            )
        r = signals.periodic_derivatives(ds.q, fs, f0, harmonics=harmonics)
    except ValueError as e:
        if policy.base_frequency is not None:
            raise WorkflowError(f"{name}: base frequency {f0:g} Hz: {e}") from None
        return f"not differentiated as periodic ({e})"  # the data's base frequency does not fit: filter
    M, P = r.periods, r.samples_per_period
    tau = signals.period_average(np.asarray(ds.tau)[: M * P], P)
    out = dataclasses.replace(ds, t=ds.t[:P], q=r.q, tau=tau, qd=r.qd, qdd=r.qdd, derivatives="periodic")
    var = np.asarray(r.var)
    notes = [f"the last {N - M * P} sample(s) after the last whole period dropped"] if N > M * P else []
    return out, dict(
        derivatives="periodic",
        cutoff_hz=None,
        cutoff_from=None,
        trim=0,
        base_frequency_hz=float(f0),
        base_frequency_from="policy" if policy.base_frequency is not None else "data",
        periods=M,
        samples_per_period=P,
        harmonics=[int(k) for k in np.asarray(r.harmonics)],
        harmonics_from="excitation" if harmonics else "noise floor",
        noise_std=None
        if not np.all(np.isfinite(var))
        else {k: np.sqrt(v).tolist() for k, v in zip(("q", "qd", "qdd"), var)},
        noise_from="period spread" if M > 1 else "spectrum above the harmonics",
        notes=list(ds.notes or ()) + notes,
    )


# -------------------------------------------------------------------------------- identify
def regressor_rows(robot, datasets, columns=None, progress: Callable | None = None, parallel=None):
    """Stacked regressor (M, k) and torques (M,) of prepared datasets, M = samples * n,
    sample-major.

    parallel: per dataset None or ``{"cutoff_hz", "order", "step"}`` (``Prepared.choices[i]
    ["parallel"]``): parallel filtering and decimation (Gautier 1997): every regressor column
    and every torque of that run is filtered along time with the same zero-phase Butterworth
    filter (``jaxid.signals.butterworth``) and then every ``step``-th sample kept. The filter is
    linear, so tau = W theta still holds exactly for the filtered rows (edges and Coulomb
    discontinuities included), while the noise above the cutoff leaves tau. Gautier, "Dynamic
    identification of robots with power model", ICRA 1997; Gautier & Poignet, 2001.

    columns: regressor columns kept (e.g. the base indices), default all. The regressor is
    evaluated in chunks of :data:`CHUNK` samples (the last one padded by repeating its last
    sample) so that it compiles once for every data length. progress: optional wrapper
    ``progress(iterable, total=..., desc=...)`` (e.g. a tqdm bar).
    """
    import jaxid
    from jaxid import signals

    parallel = [None] * len(datasets) if parallel is None else list(parallel)
    chunks = [(i, s) for i, ds in enumerate(datasets) for s in range(0, len(ds), CHUNK)]
    if progress is not None:
        chunks = progress(chunks, total=len(chunks), desc="regressor")
    W, tau = [[] for _ in datasets], [[np.asarray(ds.tau)] for ds in datasets]
    for i, s in chunks:
        q, qd, qdd = (np.asarray(x)[s : s + CHUNK] for x in (datasets[i].q, datasets[i].qd, datasets[i].qdd))
        k = q.shape[0]
        pad = (lambda x: np.concatenate([x, np.repeat(x[-1:], CHUNK - k, axis=0)])) if k < CHUNK else (lambda x: x)
        Y = np.asarray(jaxid.regressor(robot, pad(q), pad(qd), pad(qdd)))[:k]
        W[i].append(Y if columns is None else Y[..., columns])
    for i, (ds, f) in enumerate(zip(datasets, parallel)):
        W[i], tau[i] = np.concatenate(W[i]), tau[i][0]  # (N, n, k), (N, n)
        if f is not None:
            try:
                W[i], tau[i] = (
                    np.asarray(signals.butterworth(x, 1.0 / ds.dt, f["cutoff_hz"], f["order"]))[:: f["step"]]
                    for x in (W[i], tau[i])
                )
            except ValueError as e:
                raise WorkflowError(f"{ds.source}: parallel filtering of W and tau: {e}") from None
    return np.concatenate([w.reshape(-1, w.shape[-1]) for w in W]), np.concatenate([t.reshape(-1) for t in tau])


def _streamed_runs(robot, prepared: Prepared, columns):
    """The runs as ``streaming.reduce_runs`` takes them, and the rows of each: the states, or
    for a run with parallel filtering (each regressor column filtered along the whole run) a
    callable returning its filtered, decimated rows (only that run is then held)."""
    runs, lengths = [], []
    for ds, c in zip(prepared.datasets, prepared.choices):
        f = c.get("parallel")
        if f is None:
            runs.append(tuple(np.asarray(x) for x in (ds.q, ds.qd, ds.qdd, ds.tau)))
        else:

            def rows(ds=ds, f=f):
                W, tau = regressor_rows(robot, [ds], columns, parallel=[f])
                return W.reshape(-1, robot.n, W.shape[-1]), tau.reshape(-1, robot.n)

            runs.append(rows)
        lengths.append(len(range(0, len(ds), (f or {}).get("step", 1))))
    return runs, lengths


def outside_reversals(prepared: Prepared) -> np.ndarray:
    """Which rows of :func:`regressor_rows` (one per sample, after parallel decimation) enter
    the fit: those at which every joint's |qd| is at least the run's ``reversal_band``
    (``Policy.reversal_band``; all where it is None). Near a velocity reversal or at rest the
    smooth Coulomb sign of an estimated qd may have the wrong sign; such samples are dropped,
    not down-weighted, so the estimator and its variance see only the equations it can trust.
    Returns a boolean array over the samples of all runs."""
    keep = []
    for ds, c in zip(prepared.datasets, prepared.choices):
        qd = np.abs(np.asarray(ds.qd))[:: (c.get("parallel") or {}).get("step", 1)]
        band = c.get("reversal_band")
        keep.append(np.all(qd >= band, axis=1) if band is not None else np.ones(len(qd), bool))
    return np.concatenate(keep)


#: Base parameters of the models identified in this process, by model value (:func:`base_of`).
_BASES: dict = {}
_BASES_KEPT = 8


def base_of(robot):
    """``jaxid.base_parameters(robot)``, warnings off (an ambiguous rank is reported by
    :func:`physics_report`, from ``base.gap``), remembered for the last few models by value.

    They depend on the model alone, not on the data: structure, evaluated on fixed random
    states (in chunks of the data's shape, so the regressor compiles once). Recomputing them
    (a regressor on ``SAMPLES`` states and a QR) was half of a warm ``identify_experiment`` of
    a 1000-sample UR10 (``benchmarks/vs_figaroh.py``). The key is the model's pytree structure
    (topology, names, static settings) and the bytes of its arrays, so an equal model built
    again hits and any change of geometry, limits or terms misses."""
    import jax

    import jaxid

    leaves, treedef = jax.tree_util.tree_flatten(robot)
    key = (treedef, tuple((np.shape(x), np.asarray(x).dtype.str, np.asarray(x).tobytes()) for x in leaves))
    try:
        base = _BASES.get(key)
    except TypeError:  # an unhashable static field: no memory
        key, base = None, None
    if base is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = jaxid.base_parameters(robot)
        if key is not None:
            if len(_BASES) >= _BASES_KEPT:
                _BASES.pop(next(iter(_BASES)))  # the oldest
            _BASES[key] = base
    return base


def identify_experiment(
    robot,
    prepared: Prepared,
    *,
    method: str = "wls",
    description: dict | None = None,
    consistent: bool = False,
    prior_weight: float = 1e-3,
    stribeck_vs: float | str | None = None,
    bounds=None,
    sdp_check: bool = False,
    outliers: str = "drop",
    reference=None,
    gains=None,
    gravity: str | None = None,
    progress: Callable | None = None,
):
    """Identify the base parameters (and enabled joint terms) from all prepared runs stacked.

    robot: the model (``jaxid.Robot``). prepared: :func:`prepare`'s result.
    method: "wls" (Gautier's two-step weighted LS, default), "ols", "irls" (Huber), "ridge", or
        "iv" (IDIM-IV) / "didim" (``jaxid.identification.instrumental``: the regressor noise of
        differentiated positions does not bias them), started from the WLS estimate, with
        instruments from the model's motion under the runs' control law (:func:`instruments`).
    reference: "iv", "didim": per run the commanded trajectory ``(t, q, qd, qdd)`` (s, rad, rad/s,
        rad/s^2; e.g. ``jaxid excite``'s file), or None: the prepared motion (with ``gains`` only).
    gains: "iv", "didim": the PD gains ``(kp, kd)`` (n,) each, N m/rad and N m s/rad, of the
        controller that tracked the reference, or None: a controller that tracked it exactly
        (computed torque; ``jaxid simulate``'s data), so that the model moves along the reference.
    description: the model's ``params.json`` entry (:func:`model`); default that of a model
        built in code (``jaxid.results.model_description``: validating then needs the robot).
    consistent: also estimate physically consistent standard parameters
        (``jaxid.identification.consistent.identify_consistent``, prior weight
        ``prior_weight``) and predict with them.
    bounds: ``jaxid.identification.consistent.Bounds`` on the consistent bodies (masses,
        centres of mass, total mass), or None.
    sdp_check: with ``consistent``, also solve the same problem as an SDP (cvxpy + Clarabel,
        the ``consistent-sdp`` extra) and record how far the fit's cost is from its optimum.
    stribeck_vs: the Stribeck velocity of the ``fs`` term, rad/s, or "fit" to identify it
        (``jaxid.identification.stribeck.fit_stribeck_velocity``); None keeps the robot's.
    gravity: "fit" to identify the direction of gravity in the base frame (a base that is not
        level) before the parameters (:func:`fit_gravity`); the model then carries it
        (``params.model["gravity"]``, ``params.fit["gravity"]``); None keeps the robot's.

    Screening (``jaxid.identification.screening``): a torque beyond 1e6 N m or a dead (all
    zero, stuck) torque channel is an error naming the run and joint; samples that are
    outliers on the residual of an OLS fit (robust z > 8) are dropped before the fit
    (``outliers="drop"``, default), or the fit switches to Huber IRLS (``"irls"``), or they
    are kept (``"keep"``); reported in ``params.fit["screening"]``.

    Covariance (``params.cov``, ``params.std``): for "wls" and "ols" on runs that were filtered
    (a ``memory`` > 0 in their choices), the HAC sandwich of :func:`_sandwich`
    (``jaxid.identification.sandwich``: residuals correlated over the filter's memory); else
    the estimator's own (white-noise) covariance. ``params.fit["covariance"]`` is "hac" or
    "white", ``params.fit["std_white"]`` the white-noise std (b,) in either case.

    Returns ``jaxid.results.Params``; ``params.fit`` records the preprocessing choices
    (``preprocessing``), the physics check (``physics``: ``consistent``, ``problems``) and,
    with ``consistent``, whether the constrained fit converged (``converged``, ``steps``).
    The robot actually identified (with the fitted Stribeck velocity) is rebuilt from
    ``params.model`` by ``validate``. Raises WorkflowError when the data do not identify
    the base parameters.
    """
    import jax.numpy as jnp

    from jaxid import memory, results
    from jaxid.identification import screening, streaming

    if method not in METHODS:
        raise WorkflowError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method in ("iv", "didim") and reference is None and gains is None:
        raise WorkflowError(
            f"method {method} needs the instruments' motion: the commanded trajectory of each run "
            "(reference=, CLI --reference traj.csv) or the controller's PD gains (gains=)"
        )
    if consistent and method not in ("wls", "ols"):
        raise WorkflowError(f"consistent identification works with method wls or ols, not {method}")
    if outliers not in ("drop", "irls", "keep") or (consistent and outliers == "irls"):
        raise WorkflowError(f"outliers must be 'drop', 'irls' or 'keep' ('irls' not with consistent), got {outliers!r}")
    if not (math.isfinite(prior_weight) and prior_weight >= 0):
        raise WorkflowError(f"prior_weight must be a finite number >= 0, got {prior_weight}")
    for ds in prepared.datasets:
        if ds.n != robot.n:
            raise WorkflowError(f"{ds.source}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}")
    description = dict(description) if description is not None else results.model_description(robot)
    datasets = prepared.datasets
    if stribeck_vs == "fit":
        from jaxid.identification.stribeck import fit_stribeck_velocity

        stacked = [np.concatenate([np.asarray(getattr(d, k)) for d in datasets]) for k in ("q", "qd", "qdd", "tau")]
        try:
            vs = fit_stribeck_velocity(robot, *stacked)
        except ValueError as e:
            raise WorkflowError(f"fitting the Stribeck velocity: {e}") from None
        robot = dataclasses.replace(robot, stribeck_vs=float(vs))
    elif stribeck_vs is not None:
        robot = dataclasses.replace(robot, stribeck_vs=float(stribeck_vs))
    description["stribeck_vs"] = float(robot.stribeck_vs)
    gravity_doc = None
    if gravity == "fit":
        robot, gravity_doc = fit_gravity(robot, prepared)
        description.update(gravity=gravity_doc["vector"], fingerprint=results.fingerprint(robot))
    elif gravity is not None:
        raise WorkflowError(f"gravity must be None or 'fit', got {gravity!r}")
    base = base_of(robot)
    names = robot.parameter_names()
    N = prepared.n_samples
    if N * robot.n <= base.rank:
        raise WorkflowError(
            f"{N} samples x {robot.n} joints give {N * robot.n} equations for {base.rank} base "
            "parameters; record more samples"
        )
    # Above STREAM_BYTES of W the regressor is reduced chunk by chunk instead (the instrumental fits
    # regenerate their instruments' rows: they hold W).
    stream = (
        method in (*streaming.METHODS, "irls")
        and memory.regressor_bytes(N, robot.n, base.rank) > streaming.STREAM_BYTES
    )
    if not stream:
        memory.check_identify(N, robot.n, base.rank, all_columns=len(names) if consistent else None)  # before the work
    for ds in datasets:  # before any fit, located in the run (a filtered spike would smear over samples)
        bad = screening.implausible_values(np.asarray(ds.tau), names=list(robot.coordinate_names))
        if bad:
            raise WorkflowError(f"{ds.source}: {bad.message}")
        dead = screening.dead_channels(np.asarray(ds.tau), names=list(robot.coordinate_names))
        if dead:
            raise WorkflowError(
                f"{ds.source}: {dead.message}; a dead torque channel cannot be identified: repair it "
                "or record without it"
            )
    moving = outside_reversals(prepared)
    N = int(np.sum(moving))  # the samples fitted (after parallel decimation and reversals)
    if not stream:
        W, tau = regressor_rows(
            robot,
            datasets,
            None if consistent else np.asarray(base.indices),
            progress,
            parallel=[c.get("parallel") for c in prepared.choices],
        )
        W, tau = W[np.repeat(moving, robot.n)], tau[np.repeat(moving, robot.n)]
        Wb = W[:, np.asarray(base.indices)] if consistent else W
    try:
        # Gross outliers on the residual of an OLS fit (robust z > 8) are dropped and the chosen
        # estimator refitted on the rest: on the real KUKA runs this costs a quarter of Huber IRLS
        # (3 s vs 14 s CPU) and keeps the estimator's covariance; reported in params.fit["screening"].
        fit_method = "wls" if method in ("iv", "didim") else method  # the instruments start from WLS
        if stream:
            runs, lengths = _streamed_runs(robot, prepared, np.asarray(base.indices))
            scr = streaming.screen(
                robot,
                runs,
                np.asarray(base.indices),
                method=fit_method,
                masks=np.split(moving, np.cumsum(lengths)[:-1]),
                names=list(base.names),
                joint_names=list(robot.coordinate_names),
                on_outliers=outliers,
                progress=progress,
            )
        else:
            scr = screening.screen_fit(
                Wb,
                tau,
                robot.n,
                method=fit_method,
                names=list(base.names),
                joint_names=list(robot.coordinate_names),
                on_outliers=outliers,
            )
    except ValueError as e:
        raise WorkflowError(f"the data do not identify the base parameters: {e}") from None
    fit = scr.fit
    held = None if stream else (Wb, tau)  # the rows of the moving samples, for the covariance
    rows = (
        (np.asarray(scr.samples)[:, None] * robot.n + np.arange(robot.n)).ravel()
        if scr.outliers and outliers == "drop"
        else None
    )
    if consistent and rows is not None and not stream:
        W, tau = W[rows], tau[rows]
    if method in ("iv", "didim"):
        keep = np.repeat(moving, robot.n).nonzero()[0]  # the rows of W among all samples' rows
        keep = keep if rows is None else keep[rows]
        fit, iv_doc = _instrumental(
            robot,
            prepared,
            base,
            Wb if rows is None else Wb[rows],
            tau if rows is None else tau[rows],
            fit,
            method,
            reference,
            gains,
            keep,
            progress,
        )
    params = results.from_fit(
        description, names, base, fit, n_samples=N, sources=[c["source"] for c in prepared.choices]
    )
    cov = None
    if method in ("wls", "ols") and scr.method == method:
        kept = moving.copy()
        kept[np.flatnonzero(moving)[np.setdiff1d(np.arange(N), np.asarray(scr.samples))]] = False
        cov = _sandwich(robot, prepared, base, fit, moving, kept, dense=held, reduced=scr.reduced, progress=progress)
    if cov is not None:
        params = dataclasses.replace(params, cov=jnp.asarray(cov))
    extra = {
        "preprocessing": [dict(c) for c in prepared.choices],
        "rank_gap": float(base.gap),
        "covariance": "white" if cov is None else "hac",
        "std_white": np.asarray(fit.std).tolist(),
        "reversals": {
            "band_rad_s": [c.get("reversal_band") for c in prepared.choices],
            "samples_dropped": int(np.sum(~moving)),
        },
        "screening": {
            "message": scr.message,
            "method": scr.method,
            "outlier_samples": [int(r) for r in np.asarray(scr.outliers.rows)] if scr.outliers else [],
        },
    }
    if method in ("iv", "didim"):
        extra["instrumental"] = iv_doc
    if gravity_doc is not None:
        extra["gravity"] = gravity_doc
    standard, source = None, None
    if consistent:
        from jaxid.identification.consistent import identify_consistent

        if bounds is not None:
            bounds.check()
        rows_or_reduced = dict(reduced=scr.reduced) if stream else dict(W=W, tau=tau)
        c = identify_consistent(
            robot, **rows_or_reduced, base=base, method=method, weight=prior_weight, bounds=bounds, reference=sdp_check
        )
        converged = bool(c.converged)
        standard = np.asarray(c.theta) if bool(c.valid) else None
        source = (
            f"physically consistent estimate (identify_consistent, prior weight {prior_weight:g}, "
            f"{'converged' if converged else 'NOT converged'} in {int(c.num_steps)} steps)"
        )
        # The consistent bodies are the identified model: predict with their base parameters
        # (the covariance stays that of the unconstrained least-squares estimate).
        num = lambda x: None if not np.isfinite(float(x)) else float(x)
        extra.update(
            method=f"{method}+consistent",
            prior_weight=prior_weight,
            converged=converged,
            steps=int(c.num_steps),
            grad_norm=num(c.grad_norm),
            gap_bound=num(c.gap_bound),
            cost=num(c.cost),
            rss=num(c.rss),
            sdp_cost=num(c.sdp_cost),
            sdp_gap=num(c.sdp_gap),
            bounds=None
            if bounds is None
            else {
                "mass_kg": [[_finite(lo), _finite(hi)] for lo, hi in zip(bounds.mass_min, bounds.mass_max)],
                "com_min_m": [[_finite(v) for v in r] for r in bounds.com_min],
                "com_max_m": [[_finite(v) for v in r] for r in bounds.com_max],
                "body_min_m": [[_finite(v) for v in r] for r in bounds.body_min],
                "body_max_m": [[_finite(v) for v in r] for r in bounds.body_max],
                "total_mass_kg": None if bounds.total_mass is None else list(bounds.total_mass),
            },
            residual_rms=np.asarray(c.residual_rms).tolist(),
            estimate_ls=np.asarray(fit.theta).tolist(),
            history=None
            if c.history is None
            else {
                "cost": [num(v) for v in np.asarray(c.history)[: int(c.num_steps), 0]],
                "gap_bound": [num(v) for v in np.asarray(c.history)[: int(c.num_steps), 1]],
            },
        )
        params = dataclasses.replace(params, theta=c.base)
    else:
        theta, ok = results.consistent_standard(robot, params)
        if ok:
            standard, source = (
                np.asarray(theta),
                ("base estimate with the non-identifiable parameters at their nominal values"),
            )
    fit_doc = {**params.fit, **extra}
    if standard is not None:
        fit_doc["standard_source"] = source
    params = dataclasses.replace(params, fit=fit_doc, standard=None if standard is None else jnp.asarray(standard))
    problems = physics_report(robot, params)
    scale = scale_vs_model(robot, params)
    params = dataclasses.replace(
        params,
        fit={
            **params.fit,
            "scale_vs_model": scale,
            "physics": {
                "consistent": standard is not None and not problems and fit_doc.get("converged", True),
                "problems": problems,
            },
        },
    )
    if scale is not None and not 1 / SCALE_WARN < scale < SCALE_WARN:
        warnings.warn(
            f"the inertial base parameters are {scale:.3g} times the model's nominal values (median over "
            "those identified to 10 %): a torque unit or gain off by that factor (--units tau=..., "
            "--gains), or placeholder inertials in the model",
            stacklevel=2,
        )
    return params


#: Factor between the identified and the model's nominal inertial parameters from which
#: :func:`identify_experiment` warns (a unit or gain error is 10^3, or a gear ratio; a model's
#: inertials are seldom 30x off the real robot's, placeholder ones may be).
SCALE_WARN = 30.0


def scale_vs_model(robot, params) -> float | None:
    """The geometric median of estimate / nominal over the inertial base parameters identified to
    10 % whose nominal value (from the model's own inertials) is not negligible; None with fewer
    than three such parameters. About 1 for a model whose inertials are roughly right; a torque
    logged in another unit, or a wrong gain, scales every one of them by the same factor."""
    from jaxid.model.inertia import INERTIAL_NAMES

    theta, std = np.asarray(params.theta), np.asarray(params.std)
    nominal = np.asarray(params.base.to_base(np.asarray(robot.parameter_vector())))
    lead = [name.split(" ")[0].rstrip("0123456789") for name in params.base.names]
    keep = (
        np.array([k in INERTIAL_NAMES for k in lead])
        & (std < 0.1 * np.abs(theta))
        & (np.abs(nominal) > 1e-3 * np.max(np.abs(nominal), initial=0.0))
        & (np.sign(theta) == np.sign(nominal))
    )
    if keep.sum() < 3:
        return None
    return float(np.exp(np.median(np.log(theta[keep] / nominal[keep]))))


def _sandwich(robot, prepared: Prepared, base, fit, moving, kept, *, dense=None, reduced=None, progress=None):
    """The HAC sandwich covariance (b, b) of a "wls" or "ols" ``fit`` of the base parameters
    (``jaxid.identification.sandwich``), with each run's lag window its ``memory``; None when
    no run has one (logged or periodic derivatives: the white covariance stands).

    moving, kept: (samples of all runs,) bool, the samples outside reversals
    (:func:`outside_reversals`) and, of those, the ones fitted. dense: the moving samples' rows
    ``(W, tau)`` held in memory, or None: the rows are evaluated again chunk by chunk from the
    runs, and ``reduced`` (``streaming.Reduced`` of the fit) gives the two-step weights."""
    import jax.numpy as jnp

    from jaxid.identification import sandwich, streaming
    from jaxid.identification.estimators import reduced_variances, wls_variances

    lags = [int(c.get("memory", 0)) for c in prepared.choices]
    if not any(lags):
        return None
    n, cols = robot.n, np.asarray(base.indices)
    runs, lengths = _streamed_runs(robot, prepared, cols)
    edges = np.cumsum([0, *lengths])
    if dense is not None:
        W, tau = (np.asarray(x) for x in dense)
        W, tau = W.reshape(-1, n, W.shape[-1]), tau.reshape(-1, n)
        at = np.flatnonzero(moving)  # the sample (over all runs) of each held row

        def rows(a, b):  # run [a, b) of the grid, zero rows where not held (masked out)
            sel = (at >= a) & (at < b)
            Wr, tr = np.zeros((b - a, *W.shape[1:])), np.zeros((b - a, n))
            Wr[at[sel] - a], tr[at[sel] - a] = W[sel], tau[sel]
            return Wr, tr

        runs = [lambda a=a, b=b: rows(a, b) for a, b in zip(edges[:-1], edges[1:])]
        fitted = kept[moving]
        var = wls_variances(W[fitted].reshape(-1, W.shape[-1]), tau[fitted].reshape(-1), n)
    else:
        var = reduced_variances(reduced.R, reduced.N)
    if fit.method == "wls":
        weights, bread = 1.0 / np.asarray(var), np.asarray(fit.cov)  # fit.cov = (W^T Omega W)^-1
    else:  # ols: cov = s^2 (W^T W)^-1, s^2 = ||r||^2 / dof
        weights = np.ones(n)
        bread = np.asarray(fit.cov) / (np.sum(np.asarray(fit.residual_rms) ** 2) * np.sum(kept) / float(fit.dof))
    meat = streaming.meat(robot, runs, cols, fit.theta, weights, bread, lags, np.split(kept, edges[1:-1]), progress)
    return np.asarray(sandwich.covariance(jnp.asarray(bread), meat))


def instruments(robot, prepared: Prepared, reference=None, gains=None):
    """The motion of the model that instrumental estimators use, per prepared run: a function
    ``motion(theta) -> [(q, qd, qdd), ...]`` ((N_i, n) each, at the run's prepared sample times)
    and whether it depends on theta.

    reference: per run ``(t, q, qd, qdd)`` of the commanded trajectory (the run's samples must lie
    inside it; values between its samples by cubic splines), or None: the prepared q, qd, qdd.
    gains: ``(kp, kd)``: the model at theta simulated under that PD law tracking the reference
    (``jaxid.identification.instrumental.closed_loop``) from the reference's first state;
    None: the reference itself (exact tracking; no dependence on theta).
    """
    from scipy.interpolate import CubicSpline

    from jaxid.identification.instrumental import closed_loop

    refs = []  # per run: its sample times, and the reference (t, q, qd, qdd) from its start to the run's end
    for i, (ds, c) in enumerate(zip(prepared.datasets, prepared.choices)):
        t = np.asarray(ds.t)
        if reference is None:
            refs.append((t, (t, np.asarray(ds.q), np.asarray(ds.qd), np.asarray(ds.qdd))))
            continue
        if len(reference) != len(prepared.datasets):
            raise WorkflowError(
                f"{len(reference)} reference trajectories for {len(prepared.datasets)} runs: give "
                "one per run, in the same order"
            )
        tr, *x = (np.asarray(v, dtype=float) for v in reference[i])
        if any(v.shape != (tr.size, robot.n) for v in x):
            raise WorkflowError(f"{c['source']}: the reference must be t (N,) and q, qd, qdd (N, {robot.n})")
        if t[0] < tr[0] - 1e-9 or t[-1] > tr[-1] + 1e-9:
            raise WorkflowError(
                f"{c['source']}: its samples ({t[0]:g} to {t[-1]:g} s) are not all inside the "
                f"reference trajectory ({tr[0]:g} to {tr[-1]:g} s); give the run's own reference"
            )
        upto = min(tr.size, int(np.searchsorted(tr, t[-1] + 1e-9)) + 3)  # a few past the end for the spline
        refs.append((t, (tr[:upto], *(v[:upto] for v in x))))

    def at(t, grid, *x):
        return tuple(CubicSpline(grid, v, axis=0)(t) if grid.shape != t.shape or np.any(grid != t) else v for v in x)

    if gains is None:
        return (lambda theta: [at(t, *r) for t, r in refs]), False
    kp, kd = (np.broadcast_to(np.asarray(g, dtype=float), (robot.n,)) for g in gains)
    if not (np.all(np.isfinite(kp)) and np.all(np.isfinite(kd)) and np.all(kp > 0) and np.all(kd >= 0)):
        raise WorkflowError(f"gains must be kp > 0 and kd >= 0 per joint, got kp {kp}, kd {kd}")
    # The closed loop is simulated from the reference's start, where the robot started on it, not from
    # the run's first kept sample (after an edge trim the robot is off the reference by its tracking error).
    return (
        lambda theta: [
            at(t, r[0], *(np.asarray(v) for v in closed_loop(robot, theta, r[0], r[1], r[2], kp, kd))) for t, r in refs
        ]
    ), True


def _instrumental(robot, prepared, base, W, tau, fit, method, reference, gains, rows, progress):
    """IDIM-IV / DIDIM fit of the base parameters (``identify_experiment``), and its record."""
    from jaxid.identification import instrumental
    from jaxid.identification.base import lift

    motion, iterate = instruments(robot, prepared, reference, gains)
    nominal, cols = robot.parameter_vector(), np.asarray(base.indices)

    def Z(theta_b):
        moved = [
            dataclasses.replace(ds, q=m[0], qd=m[1], qdd=m[2])
            for ds, m in zip(prepared.datasets, motion(lift(base, theta_b, nominal)))
        ]
        return regressor_rows(robot, moved, cols, progress, [c.get("parallel") for c in prepared.choices])[0][rows]

    try:
        out = (
            instrumental.idim_iv(W, tau, Z, fit.theta, robot.n, iterate=iterate)
            if method == "iv"
            else instrumental.didim(tau, Z, fit.theta, robot.n, iterate=iterate)
        )
    except ValueError as e:
        raise WorkflowError(f"{method}: {e}") from None
    if not out.converged:
        warnings.warn(
            f"{method} did not converge in {out.iterations} iterations (last relative change "
            f"{out.change:.2g}); the estimate is the last one",
            RuntimeWarning,
            stacklevel=3,
        )
    return out.fit, {
        "iterations": out.iterations,
        "converged": out.converged,
        "change": out.change,
        "reference": "given" if reference is not None else "prepared motion",
        "controller": "exact tracking" if gains is None else "PD",
        "estimate_wls": np.asarray(fit.theta).tolist(),
    }


def _holdout_rows(robot, prepared: Prepared, progress):
    """Standard regressor rows (W, tau) of each prepared run, for the held-out protocol."""
    if not np.all(np.isfinite(np.asarray(robot.tau_max))):
        raise WorkflowError(
            "scoring on held-out data uses RMSE / (2 tau_max): the model needs torque limits (URDF <limit effort>)"
        )
    return [
        regressor_rows(robot, [d], None, progress, [c.get("parallel")])
        for d, c in zip(prepared.datasets, prepared.choices)
    ]


def choose_prior_weight(
    robot,
    train: Prepared,
    test: Prepared,
    *,
    weights=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    method: str = "wls",
    bounds=None,
    progress: Callable | None = None,
) -> dict:
    """The held-out protocol for consistent identification: fit on the runs of ``train``,
    score on those of ``test``, for the unconstrained WLS model and a consistent model per
    prior weight (``jaxid.identification.consistent.holdout``).

    Returns ``{"rows": [...], "best": row}``: each row ``model`` ("wls" or "consistent"),
    ``weight``, ``rmse`` per joint (N m), ``nrms_limits`` (mean over joints of
    100 RMSE / (2 tau_max), %), ``converged``, ``steps``, ``valid``; ``best`` is the consistent row with the least
    held-out error.
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    memory.check_identify(train.n_samples + test.n_samples, robot.n, len(robot.parameter_names()))
    runs = _holdout_rows(robot, train, progress)
    test_rows = regressor_rows(robot, list(test.datasets), None, progress, [c.get("parallel") for c in test.choices])
    if bounds is not None:
        bounds.check()
    return holdout(robot, runs, test_rows, weights=tuple(weights), bounds=bounds, method=method)


#: Joint terms that LuGre friction replaces: its alpha0 is the Coulomb level, alpha2 the viscous
#: coefficient, alpha1 and v0 the Stribeck term (``identify_lugre`` refuses a model with them).
LUGRE_REPLACES = ("fv", "fc", "fs", "fva")


def identify_lugre(
    robot,
    prepared: Prepared,
    *,
    description: dict | None = None,
    key=None,
    method: str = "full",
    progress: Callable | None = None,
):
    """Base parameters and per-joint LuGre friction identified together from prepared runs.

    ``jaxid.identification.lugre_robot.identify``: least squares with static friction, each
    joint's LuGre fit on the residual of the run that dwells longest at low speed, then
    Levenberg-Marquardt on all of them with the base parameters eliminated (variable
    projection), reweighted per joint; the Gauss-Newton covariance of both together.

    robot: the model without the friction terms LuGre replaces (:data:`LUGRE_REPLACES`;
    ``ia``, ``offset`` may stay). prepared: runs with qd (logged, or filtered by
    :func:`prepare`), uniformly sampled, one of them through zero velocity on every joint with
    low-speed dwells (the S-curve friction experiment), fast enough for the bristle dynamics.
    key: PRNG key of the per-joint swarms; method: their staged method
    (``jaxid.identification.lugre.METHODS``).

    Returns ``jaxid.results.Params`` with ``lugre`` (fields (n,)) and ``fit["lugre"]``:
    ``method``, ``converged``, ``steps``, ``std`` and ``rel_std`` (n, 8), ``warnings``,
    ``friction_run`` (the run of the per-joint starting fits); ``fit["physics"]`` names a
    refinement that did not converge. Raises WorkflowError for data that cannot identify it.
    """
    import jax.numpy as jnp

    from jaxid import results
    from jaxid.identification import lugre_robot

    overlap = [t for t in robot.joint_terms if t in LUGRE_REPLACES]
    if overlap:
        raise WorkflowError(
            f"LuGre friction replaces the joint terms {', '.join(overlap)}; build the model without "
            "them (--joint-terms without fv, fc, fs, fva)"
        )
    datasets = prepared.datasets
    for ds, c in zip(datasets, prepared.choices):
        if ds.n != robot.n:
            raise WorkflowError(f"{ds.source}: the data have {ds.n} joints but the model {robot.name!r} has {robot.n}")
        if c.get("parallel") or c.get("derivatives") == "periodic":
            raise WorkflowError(
                f"{ds.source}: LuGre integrates each joint's bristle state sample by sample along "
                "the run; use the run as recorded (no parallel filtering, no period averaging)"
            )
    base = base_of(robot)
    idx = np.asarray(base.indices)
    W = [regressor_rows(robot, [ds], idx, progress)[0].reshape(len(ds), robot.n, -1) for ds in datasets]
    with warnings.catch_warnings(record=True):  # the same lines are returned in fit["lugre"]["warnings"]
        warnings.simplefilter("always", RuntimeWarning)
        try:
            fit = lugre_robot.identify(W, datasets, key=key, method=method)
        except ValueError as e:
            raise WorkflowError(f"the data do not identify LuGre friction: {e}") from None
    names = list(robot.coordinate_names)
    A = np.concatenate([w.reshape(-1, w.shape[-1]) for w in W])
    sv = np.linalg.svd(A / np.where((nrm := np.linalg.norm(A, axis=0)) > 0, nrm, 1.0), compute_uv=False)
    N = prepared.n_samples
    dof = N * robot.n - base.rank - 8 * robot.n
    lugre_doc = {
        "method": method,
        "converged": bool(fit.converged),
        "steps": int(fit.steps),
        "friction_run": prepared.choices[fit.friction_run]["source"],
        "std": np.asarray(fit.std_lugre).tolist(),
        "rel_std": np.asarray(fit.rel_std_lugre()).tolist(),
        "warnings": fit.warnings(names),
    }
    stats = {
        "method": "lugre",
        "cond": float(sv[0] / sv[-1]),
        "singular_values": [results.json_number(v) for v in sv],
        "residual_rms": np.asarray(fit.residual_rms).tolist(),
        "sigma2": (np.asarray(fit.sigma) ** 2).tolist(),
        "dof": float(dof),
        "n_samples": int(N),
        "sources": [c["source"] for c in prepared.choices],
        "preprocessing": [dict(c) for c in prepared.choices],
        "rank_gap": float(base.gap),
        "lugre": lugre_doc,
    }
    params = results.Params(
        model=dict(description if description is not None else results.model_description(robot)),
        parameter_names=tuple(robot.parameter_names()),
        base=base,
        theta=fit.theta,
        cov=jnp.nan_to_num(fit.cov_theta, nan=0.0),
        fit=stats,
        lugre=fit.lugre,
    )
    theta, ok = results.consistent_standard(robot, params)
    if ok:
        params = dataclasses.replace(
            params,
            standard=jnp.asarray(theta),
            fit={
                **stats,
                "standard_source": "base estimate with the non-identifiable parameters at their nominal values",
            },
        )
    problems = physics_report(robot, params)
    return dataclasses.replace(
        params,
        fit={
            **params.fit,
            "physics": {"consistent": params.standard is not None and not problems, "problems": problems},
        },
    )


def crossval(
    robot,
    prepared: Prepared,
    *,
    weights=(0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    method: str = "wls",
    bounds=None,
    gravity: str | None = None,
    progress: Callable | None = None,
) -> dict:
    """Leave-one-run-out cross-validation of consistent identification: for every run, fit
    on all the others and score on it (``jaxid.identification.consistent.holdout``), for
    the unconstrained WLS model and a consistent model per prior weight.

    prepared: at least two runs (:func:`prepare`). weights, method, bounds: as
    :func:`choose_prior_weight`. gravity: "fit": in each rotation the direction of gravity is
    identified on the training runs (:func:`fit_gravity`) and both models use it; the
    rotation's ``gravity`` entry records it.

    Returns ``{"rotations": [{"test": source, "train": [sources], "rows": [...], "best": row}],
    "weights": [...], "mean_nrms_limits": {weight: mean over rotations}, "chosen": the weight with
    the least mean held-out NRMS (%, 100 RMSE / (2 tau_max))}``; rows as :func:`choose_prior_weight`.
    """
    from jaxid import memory
    from jaxid.identification.consistent import holdout

    if len(prepared.datasets) < 2:
        raise WorkflowError(
            f"cross-validation needs at least two runs (fit on the others, score on one); got {len(prepared.datasets)}"
        )
    if bounds is not None:
        bounds.check()
    memory.check_identify(prepared.n_samples, robot.n, len(robot.parameter_names()))
    if gravity not in (None, "fit"):
        raise WorkflowError(f"gravity must be None or 'fit', got {gravity!r}")
    rows = _holdout_rows(robot, prepared, progress) if gravity is None else None
    sources = [c["source"] for c in prepared.choices]
    rotations = []
    for i in range(len(sources)):
        model, fitted = robot, None
        if gravity == "fit":  # on the training runs only: the held-out run is not seen
            train = Prepared(
                prepared.datasets[:i] + prepared.datasets[i + 1 :], prepared.choices[:i] + prepared.choices[i + 1 :]
            )
            model, fitted = fit_gravity(robot, train)
            rows = _holdout_rows(model, prepared, progress)
        res = holdout(model, rows[:i] + rows[i + 1 :], rows[i], weights=tuple(weights), bounds=bounds, method=method)
        for r in res["rows"]:
            r.pop("theta", None)
        rotations.append(dict(test=sources[i], train=sources[:i] + sources[i + 1 :], gravity=fitted, **res))
    mean = {
        float(w): float(np.mean([r["rows"][1 + k]["nrms_limits"] for r in rotations])) for k, w in enumerate(weights)
    }
    return dict(
        rotations=rotations, weights=[float(w) for w in weights], mean_nrms_limits=mean, chosen=min(mean, key=mean.get)
    )


def fit_gravity(robot, prepared: Prepared):
    """(robot, doc): the robot under the direction of gravity identified from all samples of
    the prepared runs (``jaxid.identification.gravity.fit_gravity``: base parameters and joint
    terms eliminated), and its record ``{"vector" (3,) m/s^2, "tilt_deg" from the model's,
    "nll_drop" (the log-likelihood gained, 2 degrees of freedom), "converged"}``."""
    import jax.numpy as jnp

    from jaxid.identification.gravity import fit_gravity as fit

    stacked = [
        np.concatenate([np.asarray(getattr(d, k)) for d in prepared.datasets]) for k in ("q", "qd", "qdd", "tau")
    ]
    try:
        g = fit(robot, *stacked)
    except ValueError as e:
        raise WorkflowError(f"fitting the direction of gravity: {e}") from None
    return dataclasses.replace(robot, gravity=jnp.asarray(g.gravity)), {
        "vector": g.gravity.tolist(),
        "tilt_deg": g.tilt_deg,
        "nll_drop": g.cost_nominal - g.cost,
        "converged": g.converged,
    }


def _finite(x):
    """A JSON number for a finite bound, None for an unbounded side."""
    return float(x) if np.isfinite(x) else None


#: Standard deviations below zero from which viscous and Coulomb friction both negative are read
#: as an inverted torque sign (:func:`physics_report`).
SIGN_Z = 10.0


def physics_report(robot, params) -> list[str]:
    """What is physically wrong with an identification, in words (empty when nothing is).

    Named: base parameters estimated below zero although they are positive combinations of
    quantities that are >= 0 for any physical robot (masses, diagonal moments of inertia,
    rotor inertia, friction: ``jaxid.report.parameter_flags``, the report's flags), with
    their distance to zero in standard deviations; bodies that are not physically consistent
    (non-positive mass, inertia not positive definite or violating the triangle inequality)
    in the standard parameters written; a constrained fit that did not converge; an
    ambiguous rank of the regressor; and a joint whose viscous and Coulomb friction are both more
    than :data:`SIGN_Z` std below zero, as the sign of its logged torque (or position) inverted.
    """
    from jaxid.identification.base import GAP_WARN
    from jaxid.model import inertia
    from jaxid.report import FLAG_FRICTION, FLAG_INERTIA, FLAG_MASS, FLAG_STIFFNESS, parameter_flags

    problems = []
    theta, std = np.asarray(params.theta), np.asarray(params.std)
    single = dict(
        fv="viscous friction",
        fc="Coulomb friction",
        fs="Stribeck friction",
        ia="rotor inertia",
        ks="joint stiffness (no passive spring has one)",
    )
    what = {
        FLAG_MASS: "negative mass",
        FLAG_FRICTION: "negative friction",
        FLAG_STIFFNESS: "negative stiffness",
        FLAG_INERTIA: "negative moment of inertia (no positive semi-definite inertia has one)",
    }
    # Without the standard parameters the flags are the sign rule's alone (bad links: below).
    negative = {}  # (term, joint number) -> std below zero, for the single-parameter names
    for i, (name, flags) in enumerate(
        zip(params.base.names, parameter_flags(dataclasses.replace(params, standard=None)))
    ):
        kind = next((f for f in flags if f in what), None)
        if kind is None:
            continue
        z = -theta[i] / std[i] if std[i] > 0 else math.inf
        term = name.rstrip("0123456789")
        negative[term, name[len(term) :]] = z
        problems.append(
            f"{name} = {theta[i]:.4g} < 0 ({z:.1f} std below zero): "
            + (f"negative {single[term]}" if term in single else what[kind])
        )
    # Friction that pushes the joint along its motion, viscous and Coulomb alike, is what a log
    # whose torque (or position) sign is the opposite of the model's joint axis looks like.
    for _, joint in [k for k in negative if k[0] == "fv"]:
        if negative.get(("fc", joint), 0.0) > SIGN_Z and negative["fv", joint] > SIGN_Z:
            label = f"joint {joint}" + (f" ({robot.names[int(joint) - 1]})" if robot is not None else "")
            problems.append(
                f"{label}: viscous and Coulomb friction both negative: the sign of its logged "
                "torque (or position) is likely opposite to the model's joint axis; check that "
                "column's sign or its gain (--gains)"
            )
    if params.standard is not None:
        links, _ = robot.split(params.standard)
        ok = np.asarray(inertia.is_consistent(links))
        for j in np.nonzero(~ok)[0]:
            problems.append(f"link {j + 1} ({robot.names[j]}): not a physical body (mass, inertia)")
    if params.fit.get("converged") is False:
        gap, cost = params.fit.get("gap_bound"), params.fit.get("cost")
        bound = (
            f" (its cost may be up to {gap:.3g} = {gap / cost:.1e} of it above the optimum)"
            if gap is not None and cost
            else ""
        )
        why = (
            (
                "; at prior weight 0 the optimum may be reached only as bodies grow without bound along directions "
                "the data cannot see: give a positive --prior-weight"
            )
            if params.fit.get("prior_weight") == 0
            else ""
        )
        problems.append(f"the consistent fit did not converge in {params.fit.get('steps')} steps{bound}{why}")
    sdp, cost = params.fit.get("sdp_cost"), params.fit.get("cost")
    if sdp is not None and cost is not None and sdp > 0 and cost / sdp - 1 > 1e-6:
        problems.append(f"the consistent fit's cost is {cost / sdp - 1:.1e} above the SDP optimum")
    lugre = params.fit.get("lugre") or {}
    if lugre.get("converged") is False:
        problems.append(f"the joint rigid-body + LuGre fit did not converge in {lugre.get('steps')} steps")
    gap = params.fit.get("rank_gap", params.base.gap)
    if gap is not None and gap < GAP_WARN:
        problems.append(f"the rank of the regressor is not clear-cut (R-diagonal gap {gap:.3g})")
    return problems


# -------------------------------------------------------------------------------- validate
@dataclass
class Validation:
    """Held-out prediction of :func:`validate`.

    runs: one dict per run: ``source``, ``samples`` and the metrics of
        ``jaxid.results.validation_metrics`` (rmse N m, nrmse %, r2, wape %, max_pe %,
        relative_error %, nrms_limits % where the model has torque limits).
    t, measured, predicted: per run, (N,) s and (N, n) N m.
    warnings: model mismatches found between the parameters and the given robot.
    """

    runs: list
    t: list
    measured: list
    predicted: list
    warnings: list = field(default_factory=list)

    def worst(self, metric: str = "nrmse") -> float:
        """The largest per-joint value of ``metric`` over all runs."""
        return max(max(v for v in r[metric]["per_joint"] if v is not None) for r in self.runs)


def validate(robot, params, prepared: Prepared, *, truth: Sequence | None = None) -> Validation:
    """Predict the torques of prepared held-out runs from identified parameters.

    robot: the model the parameters were identified for
        (``jaxid.results.model_from_description(params.model)`` rebuilds it).
    params: ``jaxid.results.Params``. prepared: :func:`prepare`'s result.
    truth: optional torques per run (N_read, n) N m to compare with instead of the measured
        ones (e.g. the noise-free torques of a simulation), aligned with ``Prepared.align``.
    Returns :class:`Validation`.
    """
    from jaxid import results
    from jaxid.identification import screening

    mismatches = results.model_mismatches(robot, params)
    if params.model.get("n") not in (None, robot.n):  # predictions would not even have the data's shape
        raise WorkflowError(mismatches[0])
    tau_max = np.asarray(getattr(robot, "tau_max", np.full(robot.n, np.inf)))
    val = Validation(runs=[], t=[], measured=[], predicted=[], warnings=mismatches)
    for i, ds in enumerate(prepared.datasets):
        real = np.asarray(ds.tau) if truth is None else prepared.align(i, truth[i])
        pred = np.asarray(results.predict(robot, params, ds))
        bad = screening.implausible_values(
            pred, label=f"{prepared.choices[i]['source']}: the predicted torque", names=list(robot.coordinate_names)
        )
        if bad:  # an overflowing model: its metrics would be inf or NaN
            raise WorkflowError(
                f"{bad.message}; these parameters are not a usable model of this robot "
                "(check the params file, and that it was identified for this robot)"
            )
        val.runs.append(
            {
                "source": prepared.choices[i]["source"],
                "samples": len(ds),
                **results.validation_metrics(real, pred, tau_max),
            }
        )
        val.t.append(np.asarray(ds.t))
        val.measured.append(real)
        val.predicted.append(pred)
    return val
