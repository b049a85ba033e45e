"""Raw runs -> the q, qd, qdd, tau identification uses ([`prepare`][jaxid.workflow.preprocess.prepare] under a
[`Policy`][jaxid.workflow.preprocess.Policy]), and
the choices made on the data (cutoff from the spectrum, edge trim, periodic averaging)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np

from jaxid.arrays import device
from jaxid.workflow.records import Preprocessing, WorkflowError

#: Signal-to-noise ratio of the smoothed position spectrum at the chosen cutoff
#: ([`choose_cutoff`][jaxid.workflow.preprocess.choose_cutoff]): 10, i.e. the cutoff is where the signal falls to 10 dB above the
#: noise floor.
SNR_CUTOFF = 10.0

#: Cutoff of the derivative filter, in multiples of the signal band (the excitation's known
#: base frequency x harmonics, or the band edge read from the spectrum by
#: [`choose_cutoff`][jaxid.workflow.preprocess.choose_cutoff]): the forward-backward 4th-order Butterworth passes the top of the band
#: at 1 / (1 + 3^-8) = 99.985 %; a cutoff at the band edge itself (the spectrum's first guess,
#: 1.35 x band on a noisy planar arm) passes it at 92 % and biases the estimates by tens of std.
EXCITATION_CUTOFF = 3.0


#: Share of a joint's position power that significant content above its band edge may hold where
#: the spectrum meets no noise floor below fs/4 (noise-free or smoothed positions, whose roll-off
#: is no motion): [`band_edges`][jaxid.workflow.preprocess.band_edges].
POWER_TAIL = 1e-5

#: Bins the periodogram is averaged over before it is compared with the floor ([`band_edges`][jaxid.workflow.preprocess.band_edges]).
SMOOTH_BINS = 9

#: Significant content that begins more than this factor above the band (the frequency below which
#: all but [`LINE_SHARE`][jaxid.workflow.preprocess.LINE_SHARE] of the position power lies, or the band's top) is isolated: a line
#: or cluster that counts as motion only when it holds [`LINE_SHARE`][jaxid.workflow.preprocess.LINE_SHARE]
#: ([`band_edges`][jaxid.workflow.preprocess.band_edges]).
#: Harmonics k and k + 1 of a Fourier excitation are never further apart than 2.
ISOLATION = 2.0

#: Share of a joint's position power that isolated content above its band must hold (with all
#: above it) to count as motion rather than a resonance, interference or a quantisation pattern.
LINE_SHARE = 1e-3

#: Share of a run that the derivative filter's trim may take at each end before the chosen cutoff
#: is raised ([`raise_for_trim`][jaxid.workflow.preprocess.raise_for_trim]).
TRIM_SHARE = 0.1

#: A cutoff above fs / (4 x this) is warned about as ambiguous ([`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs]).
AMBIGUOUS_NYQUIST = 1.5

#: Band edges spread over joints by more than this factor are warned about ([`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs]).
AMBIGUOUS_SPREAD = 10.0

#: Fraction of the filter's impulse-response mass that may reach past the kept edge samples
#: ([`edge_trim`][jaxid.workflow.preprocess.edge_trim]).
SETTLING_TOL = 1e-4


# --------------------------------------------------------------------------------- prepare
@dataclass(frozen=True)
class Policy:
    """How measured signals become the q, qd, qdd, tau that identification uses.

    derivatives: "butterworth" (zero-phase, then central differences) or "savgol": the
        method of ``jaxid.signals.derivatives`` for velocities/accelerations missing from a log.
    cutoff: low-pass cutoff, Hz, one for all joints or one per joint (a tuple), or None: chosen
        per run and joint from the position spectrum ([`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs]), or from the
        excitation's band where the run records it.
    order: Butterworth order.
    trim: samples dropped at each end of a differentiated run, or None: the filter's
        settling time ([`edge_trim`][jaxid.workflow.preprocess.edge_trim]). Runs whose qd and qdd were logged are not trimmed.
    step: keep every ``step``-th sample after filtering (decimation), >= 1.
    base_frequency: base frequency of a periodic excitation, Hz, or None: the run's own
        (``Dataset.base_frequency``, from ``jaxid excite``'s sidecar), if any.
    periodic: when the base frequency is known and a run without logged qd, qdd holds whole
        periods of it, differentiate in the frequency domain over the averaged period
        (``jaxid.signals.periodic_derivatives``) instead of filtering ([`prepare`][jaxid.workflow.preprocess.prepare]).
    parallel: parallel filtering (Gautier 1997): the regressor columns and tau of each run are
        low-pass filtered with the same zero-phase filter and then decimated by ``step``
        ([`regressor_rows`][jaxid.workflow.regress.regressor_rows]), instead of decimating the prepared samples; the prepared
        runs keep every sample.
    settings_from: where the cutoff, trim, order and method came from, for the description:
        None (given by the caller, "given") or a file name ("params.json": ``jaxid validate``
        reusing the identification's, [`policy_from_preprocessing`][jaxid.workflow.preprocess.policy_from_preprocessing]).
    reversal_band: rad/s, or None: samples at which some joint's |qd| is below it (velocity
        reversals and rest, where the Coulomb sign tanh(qd / eps) of an estimated qd can flip
        against the true one and give spikes of +-2 fc) are left out of the fit
        ([`identify_experiment`][jaxid.workflow.pipeline.identify_experiment]); a few times the noise std of qd plus the model's
        ``coulomb_eps`` (the periodic path prints that std). The runs keep them (validation).
    """

    derivatives: str = "butterworth"
    cutoff: float | tuple[float, ...] | None = None
    order: int = 4
    trim: int | None = None
    step: int = 1
    base_frequency: float | None = None
    periodic: bool = True
    parallel: bool = False
    reversal_band: float | None = None
    settings_from: str | None = None

    def __post_init__(self):
        if self.derivatives not in ("butterworth", "savgol"):
            raise WorkflowError(f"derivatives must be 'butterworth' or 'savgol', got {self.derivatives!r}")
        if isinstance(self.cutoff, (list, tuple, np.ndarray)):
            object.__setattr__(self, "cutoff", tuple(float(c) for c in self.cutoff))
        cutoffs = self.cutoff if isinstance(self.cutoff, tuple) else (self.cutoff,)
        if self.cutoff is not None and not (cutoffs and all(math.isfinite(c) and c > 0 for c in cutoffs)):
            raise WorkflowError(f"cutoff must be a finite frequency > 0 Hz (or one per joint), got {self.cutoff}")
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
        ``derivatives`` ("logged" or the method), ``cutoff_hz`` (the highest over joints) and
        ``cutoffs_hz`` (per joint, (n,)), ``cutoff_from`` ("spectrum", "excitation":
        [`EXCITATION_CUTOFF`][jaxid.workflow.preprocess.EXCITATION_CUTOFF] x the known band, "policy", or "params": reused from a
        params.json), ``order`` (Butterworth order), ``logged`` (the logged signals kept as
        they are: "qd", "qdd"), ``trim`` (samples per end) and ``trim_from`` ("settling":
        [`edge_trim`][jaxid.workflow.preprocess.edge_trim], or "policy"), ``step``, ``index``
        ``[start, stop, step]`` into the run as read, ``notes``; ``parallel`` (None, or with
        ``Policy.parallel`` ``{"cutoff_hz", "order", "step"}`` of [`parallel_cutoff`][jaxid.workflow.preprocess.parallel_cutoff]),
        ``reversal_band`` (rad/s or None, ``Policy.reversal_band``), ``memory`` (samples, as
        fitted: the settling length [`edge_trim`][jaxid.workflow.preprocess.edge_trim] of the derivative filter, plus that of the
        parallel filter, over which the filters correlate the equation errors; 0 for logged and
        periodic runs without parallel filtering: the lag window of the covariance of
        [`identify_experiment`][jaxid.workflow.pipeline.identify_experiment]); with ``derivatives``
        "periodic" (the run averaged into one period) also ``base_frequency_hz``,
        ``base_frequency_from`` ("data" or "policy"), ``periods``, ``samples_per_period``,
        ``harmonics`` (per joint) and ``harmonics_from`` ("excitation" or "noise floor"),
        ``noise_std`` (per joint, of q rad, qd rad/s, qdd rad/s^2 after averaging; None when
        it cannot be estimated) and ``noise_from`` ("period spread", or from one period
        "spectrum above the harmonics").
    """

    datasets: tuple
    choices: tuple
    plausibility: object = None  # the checks of the logs (``workflow.plausibility.Plausibility``), or None

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

    @property
    def preprocessing(self) -> tuple[Preprocessing, ...]:
        """The choices as typed records ([`Preprocessing`][jaxid.workflow.records.Preprocessing]), one per run."""
        return tuple(map(Preprocessing.from_partial, self.choices))

    def describe(self) -> list[str]:
        """One line per run: what was done to it ([`describe_run`][jaxid.workflow.preprocess.describe_run])."""
        return [describe_run(c) for c in self.choices]


def describe_run(c: dict | Preprocessing) -> str:
    """One line: what [`prepare`][jaxid.workflow.preprocess.prepare] did to a run, from its choices (``Prepared.choices[i]``, or
    the record ``params.preprocessing[i]``)."""
    if isinstance(c, Preprocessing):
        c = c.to_dict()
    if c["derivatives"] == "logged":
        how = "q, qd, qdd as logged"
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
        how = _describe_filtered(c)
    step = f", every {c['step']}th sample" if c["step"] > 1 else ""
    if c.get("parallel"):
        step = (
            f", W and tau low-passed at {c['parallel']['cutoff_hz']:.3g} Hz together"
            f"{step and ' and decimated to' + step[1:]}"
        )
    notes = "".join(f"; {n}" for n in c["notes"])
    return f"{c['source']}: {c['samples']} of {c['samples_read']} samples at {c['fs_hz']:.4g} Hz, {how}{step}{notes}"


def _describe_filtered(c: dict) -> str:
    """What was done to the q, qd, qdd of a filtered run: which signals were logged and kept,
    which filtered, which computed from the filtered positions, at what cutoff and from where."""
    source = dict(
        spectrum="from the position spectrum",
        excitation=f"{EXCITATION_CUTOFF:g} x the excitation's band",
        params="from params.json",
    ).get(c["cutoff_from"], "given")
    cuts = c.get("cutoffs_hz") or [c["cutoff_hz"]]
    at = (
        f"{cuts[0]:.3g} Hz"
        if max(cuts) <= min(cuts) * (1 + 1e-9)
        else f"{min(cuts):.3g}-{max(cuts):.3g} Hz per joint ({', '.join(f'{x:.3g}' for x in cuts)})"
    )
    logged = list(c.get("logged") or [])
    computed = [s for s in ("qd", "qdd") if s not in logged]
    kept = f", {' and '.join(logged)} as logged" if logged else ""
    trim = "" if c.get("trim_from", "settling") == "settling" else " (given)"
    return (
        f"q filtered by {c['derivatives']} at {at} ({source}){kept}, {', '.join(computed)} from the "
        f"filtered q, {c['trim']} samples trimmed at each end{trim}"
    )


def choose_cutoff(q, fs: float, snr: float = SNR_CUTOFF, margin: float = EXCITATION_CUTOFF) -> float:
    """One low-pass cutoff, Hz, for differentiating sampled positions q (N, n) rad at fs Hz: the
    highest of the per-joint cutoffs of [`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs] (``margin`` times each joint's band
    edge, clipped to [fs/1000, fs/4]), which [`prepare`][jaxid.workflow.preprocess.prepare] uses joint by joint."""
    return max(choose_cutoffs(q, fs, snr, margin).cutoffs)


@dataclass(frozen=True)
class CutoffChoice:
    """What [`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs] read from the position spectrum of a run.

    cutoffs: (n,) Hz, the derivative filter's cutoff of each joint. edges: (n,) Hz, each
    joint's band edge (nan for a joint that does not move, or whose motion nowhere stands above
    the noise floor: its cutoff is then the lowest of the others'). warnings: why the choice is
    ambiguous, each naming the flag that settles it (``--cutoff HZ``). notes: what was read as
    something other than motion (narrow lines above the band)."""

    cutoffs: tuple[float, ...]
    edges: tuple[float, ...]
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def choose_cutoffs(
    q,
    fs: float,
    snr: float = SNR_CUTOFF,
    margin: float = EXCITATION_CUTOFF,
    tail: float = POWER_TAIL,
    names=None,
) -> CutoffChoice:
    """Low-pass cutoff per joint, Hz, for differentiating sampled positions: ``margin`` times
    the joint's band edge ([`band_edges`][jaxid.workflow.preprocess.band_edges]), clipped to [fs/1000, fs/4].

    Per joint, because joints are filtered one by one (``jaxid.signals.derivatives`` takes a
    cutoff per joint) and the error of each joint's acceleration is smallest at its own band's
    cutoff; the errors of different joints are independent, so that is also the smallest error
    of every torque they enter (a cutoff common to all joints, the highest band edge over them,
    let one joint's wide band, or one misread line, set the noise of all: a 5 kHz log whose
    one joint showed a line at 184 Hz was cut at 553 Hz everywhere). The margin (default
    [`EXCITATION_CUTOFF`][jaxid.workflow.preprocess.EXCITATION_CUTOFF], 3) makes the zero-phase filter pass the whole band unattenuated
    (at the edge itself it would take 8 % off the top of the band, a bias the reported std does
    not cover).

    Warned (``warnings``, each naming ``--cutoff HZ``), where the spectrum does not settle the
    choice: a cutoff within a factor [`AMBIGUOUS_NYQUIST`][jaxid.workflow.preprocess.AMBIGUOUS_NYQUIST] of fs/4 (little or no filtering);
    no noise floor below fs/4 (noise-free or smoothed positions: the edge then rests on the
    power criterion alone); band edges spread by more than [`AMBIGUOUS_SPREAD`][jaxid.workflow.preprocess.AMBIGUOUS_SPREAD] over joints;
    a band edge within a few bins of zero frequency (the run too short to resolve its band).

    [`prepare`][jaxid.workflow.preprocess.prepare] then raises the cutoffs of a short run ([`raise_for_trim`][jaxid.workflow.preprocess.raise_for_trim]).

    q: positions (N, n), rad. fs: sample rate, Hz. snr, tail: of [`band_edges`][jaxid.workflow.preprocess.band_edges].
    margin: cutoff / band edge. names: the joints' names for the sentences (default q1..qn).
    """
    q = np.asarray(q, dtype=float)
    n = q.shape[1]
    names = list(names) if names is not None else [f"q{j + 1}" for j in range(n)]
    lo, hi = fs / 1000, fs / 4
    reads = band_edges(q, fs, snr, tail)
    edges = np.array([r["edge"] for r in reads])
    moving = np.isfinite(edges)
    cut = np.clip(margin * edges, lo, hi)
    fill = float(cut[moving].min()) if moving.any() else hi
    cut = np.where(moving, cut, fill)
    warns, notes = [], []
    for j, r in enumerate(reads):
        if r["status"] == "noise" and moving.any():
            notes.append(
                f"{names[j]}: no motion above the position noise floor; filtered at the lowest other cutoff "
                f"{fill:.3g} Hz"
            )
        for f_lo, f_hi, share in r["ignored"]:
            where = f"near {f_lo:.4g} Hz" if f_hi - f_lo <= 0.02 * f_hi else f"over {f_lo:.4g}-{f_hi:.4g} Hz"
            notes.append(
                f"{names[j]}: content {where} above the band ({share:.1g} of its position power) read as a "
                f"resonance or noise, not motion"
            )
    nofloor = [names[j] for j, r in enumerate(reads) if r["status"] == "no floor"]
    if nofloor:
        warns.append(
            f"no noise floor in the position spectrum below fs/4 for {', '.join(nofloor)} (noise-free or "
            f"smoothed positions): the band edge rests on where all but {tail:.0e} of the position power lies; "
            "check the cutoff with --cutoff HZ"
        )
    near = [f"{names[j]} {cut[j]:.4g} Hz" for j in range(n) if moving[j] and cut[j] > hi / AMBIGUOUS_NYQUIST]
    if near:
        warns.append(
            f"cutoff within {AMBIGUOUS_NYQUIST:g}x of fs/4 = {hi:.4g} Hz ({', '.join(near)}): the positions are "
            "hardly filtered and their accelerations may be noise; give --cutoff HZ (a few times the "
            "excitation's highest frequency)"
        )
    if moving.sum() > 1 and edges[moving].max() > AMBIGUOUS_SPREAD * edges[moving].min():
        k, m = int(np.nanargmax(edges)), int(np.nanargmin(edges))
        warns.append(
            f"band edges differ by {edges[k] / edges[m]:.3g}x across joints ({names[k]} {edges[k]:.3g} Hz, "
            f"{names[m]} {edges[m]:.3g} Hz): each joint is filtered at its own cutoff; if one joint's band is "
            "not motion, give --cutoff HZ"
        )
    short = [names[j] for j, r in enumerate(reads) if moving[j] and r["edge_bins"] < 4]
    if short:
        warns.append(
            f"band edge within 4 frequency bins ({4 * fs / len(q):.2g} Hz) of zero for {', '.join(short)}: the "
            "run is too short to resolve its band; record a longer run or give --cutoff HZ"
        )
    if not moving.any() and any(r["status"] == "noise" for r in reads):
        warns.append(
            "no joint's motion stands above the noise floor of its position spectrum: the positions are "
            f"filtered at fs/4 = {hi:.4g} Hz only; give --cutoff HZ (a few times the motion's highest frequency)"
        )
    return CutoffChoice(tuple(float(c) for c in cut), tuple(float(e) for e in edges), tuple(warns), tuple(notes))


def raise_for_trim(choice: CutoffChoice, fs: float, N: int, order: int = 4, names=None) -> CutoffChoice:
    """The choice with the cutoffs of a short run raised, and noted: the trim ([`edge_trim`][jaxid.workflow.preprocess.edge_trim] of
    the lowest cutoff, about 3.4 / cutoff seconds at each end) may take at most
    [`TRIM_SHARE`][jaxid.workflow.preprocess.TRIM_SHARE] of the N samples at each end; lower cutoffs are raised to the cutoff that
    trims that much (a 10 s run of a 0.5 Hz band would otherwise lose 1.9 s at each end, and the
    motion those seconds held: on planar3 at 100 Hz that doubled the held-out error; the noise a
    cutoff of 3.4 Hz instead of 1.8 Hz adds to the accelerations is the smaller loss).
    fs: Hz; order: the Butterworth order; names: the joints' names (default q1..qn)."""
    cut = np.asarray(choice.cutoffs)
    names = list(names) if names is not None else [f"q{j + 1}" for j in range(len(cut))]
    floor = _trim_floor(fs, N, order, float(cut.min()), fs / 4)
    if not floor > cut.min():
        return choice
    raised = [names[j] for j in range(len(cut)) if cut[j] < floor]
    note = (
        f"cutoff of {', '.join(raised)} raised from {cut.min():.3g} to {floor:.3g} Hz: lower, the filter's "
        f"settling time would trim more than {TRIM_SHARE:.0%} of this {N / fs:.3g} s run at each end "
        "(record a longer run to filter lower)"
    )
    return dataclasses.replace(
        choice, cutoffs=tuple(float(c) for c in np.maximum(cut, floor)), notes=(note, *choice.notes)
    )


def _trim_floor(fs: float, N: int, order: int, low: float, hi: float) -> float:
    """The lowest cutoff (Hz, at least ``low``, at most ``hi``) whose [`edge_trim`][jaxid.workflow.preprocess.edge_trim] takes at
    most [`TRIM_SHARE`][jaxid.workflow.preprocess.TRIM_SHARE] of N samples at each end; the trim falls as 1 / cutoff, so a few
    rescaled steps find it."""
    c = low
    for _ in range(8):
        k = edge_trim(fs, c, order)
        if k <= TRIM_SHARE * N or c >= hi:
            break
        c = min(hi, c * k / (TRIM_SHARE * N) * 1.01)
    return c


def band_edges(q, fs: float, snr: float = SNR_CUTOFF, tail: float = POWER_TAIL) -> list[dict]:
    """Each joint's band edge, Hz, read from its position spectrum: the highest frequency below
    fs/4 at which the spectrum stands above the noise floor *and* above which such content
    still holds at least ``tail`` of the joint's position power.

    The spectrum: the periodogram of q (linear trend removed, Hann window) averaged over 9
    neighbouring bins (a mean of 9 exponential variables: noise alone exceeds 10 times its mean
    with probability below 1e-20). The noise floor at each frequency f is read from the raw
    periodogram over [f / 2, 2 f] (`_local_floor`: its median, so that noise that is not
    white, as on a resampled, drive-filtered or random-walk log, is still noise). A bin is
    significant where the averaged spectrum exceeds ``snr`` times the floor (the signal-to-noise
    ratio of the positions, and so of their derivatives, falls to about one a little above:
    Gautier & Khalil, "Exciting trajectories for the identification of base inertial parameters
    of robots", IJRR 11(4), 1992; the floor read from the spectrum as in Pintelon & Schoukens,
    System Identification, 2012).

    Which significant content is band: the highest significant bin alone (the rule before this
    one) takes a drive resonance, interference, a quantisation pattern or the smooth roll-off of
    filtered positions for the band: a narrow line far above the excitation's band stands above
    a low floor (a 0.5 mrad line at 185 Hz on a 0.5 rad motion is 5e-7 of the position power
    but 50 times the floor of 1e-4 rad noise), and its acceleration swamps the motion's. A robot's
    commanded motion is slow and its spectrum contiguous: Fourier harmonics k and k + 1 are
    never more than a factor 2 apart, and its top harmonic holds ~1/H^2 of the position power.
    So the significant bins are split into runs at gaps; the band is the runs up to
    [`ISOLATION`][jaxid.workflow.preprocess.ISOLATION] (2) times the frequency below which all but
    [`LINE_SHARE`][jaxid.workflow.preprocess.LINE_SHARE] (1e-3) of
    the position power lies, and each run that follows within 2 times the band's top (the
    roll-off of the top lines meeting the floor, which the edge follows, so a noisier log gets a
    lower edge); a run beyond that is isolated, and counts as motion only when it, with all
    above it, holds [`LINE_SHARE`][jaxid.workflow.preprocess.LINE_SHARE] of the position power (a second band of real motion
    does; a resonance line, whose acceleration would swamp the motion's long before it holds
    that much of the position, does not). The idea of the occupied bandwidth (the band holding
    all but a given share of the power; ITU-R SM.328). Where the runs reach fs/4 (no floor:
    noise-free or smoothed positions), the edge is the frequency above which the significant
    content holds ``tail`` of the power.

    q: positions (N, n), rad. fs: sample rate, Hz. snr: power ratio to the floor of a
    significant bin. tail: where no floor is met below fs/4, the share of the position power
    that the content above the edge may hold.
    Returns one dict per joint: ``edge`` Hz (nan: the joint does not move, or nothing of it
    stands above the floor), ``status`` ("floor": the spectrum meets a noise floor above the
    band; "no floor": significant up to fs/4, noise-free or smoothed positions; "noise";
    "still"), ``ignored`` [(f_lo, f_hi, share), ...] the significant content above the edge
    (clusters of bins, at most 3, each's share of the position power), ``edge_bins`` the edge
    in frequency bins (its resolution: 1 / duration).
    """
    q = np.asarray(q, dtype=float)
    N = q.shape[0]
    t = np.arange(N) - (N - 1) / 2
    x = q - q.mean(axis=0) - np.outer(t, (t @ (q - q.mean(axis=0))) / (t @ t))
    X = np.abs(np.fft.rfft(x * np.hanning(N)[:, None], axis=0)) ** 2
    f = np.fft.rfftfreq(N, 1.0 / fs)
    smooth = np.apply_along_axis(lambda x: np.convolve(x, np.ones(SMOOTH_BINS) / SMOOTH_BINS, mode="same"), 0, X)
    band = (f > 0) & (f <= fs / 4)
    floor = _local_floor(X, f, fs)
    top = np.nonzero(band)[0][-1]
    out = []
    for j in range(q.shape[1]):
        power = X[1:, j].sum()
        if not power > 0:
            out.append(dict(edge=math.nan, status="still", ignored=[], edge_bins=0.0))
            continue
        sig = band & ((smooth[:, j] > snr * floor[:, j]) | (floor[:, j] <= 0))
        share = X[:, j] / power
        # Significant bins in runs (a gap wider than the smoothing splits them); the band is
        # what lies up to ISOLATION x the frequency below which all but LINE_SHARE of the power
        # lies, and each run that follows within ISOLATION x the band's top; a run beyond that
        # counts only when it, with all above it, holds LINE_SHARE of the power.
        bins = np.nonzero(sig)[0]
        runs = np.split(bins, np.nonzero(np.diff(bins) > SMOOTH_BINS)[0] + 1) if bins.size else []
        after = np.cumsum([share[r].sum() for r in runs][::-1])[::-1]
        reach = ISOLATION * f[int(np.argmax(np.cumsum(share) >= 1 - LINE_SHARE))]
        kept: list[np.ndarray] = []
        for r, held in zip(runs, after):
            if f[r[0]] <= max(reach, ISOLATION * f[kept[-1][-1]] if kept else 0.0) or held >= LINE_SHARE:
                kept.append(r)
        if not kept:
            out.append(dict(edge=math.nan, status="noise", ignored=[], edge_bins=0.0))
            continue
        k = int(kept[-1][-1])
        status = "no floor" if k >= top - 2 else "floor"
        # The average over SMOOTH_BINS spreads a line's significance by half its width above the
        # line: the edge is the run's last bin that stands above snr x the floor on its own.
        alone = kept[-1][X[kept[-1], j] > snr * floor[kept[-1], j]]
        if status == "floor" and alone.size:
            k = int(alone[-1])
        if status == "no floor":  # a roll-off that never meets a floor: where all but `tail` of the power lies
            inside = np.concatenate(kept)
            held = np.cumsum(share[inside][::-1])[::-1]
            k = int(inside[held >= tail][-1]) if np.any(held >= tail) else int(inside[-1])
        rest = bins[bins > kept[-1][-1]]  # the isolated runs left out (not the band's own roll-off)
        notes = [c for c in _clusters(rest, f, share) if c[2] >= tail * 1e-3]  # not the dust of false alarms
        out.append(dict(edge=float(f[k]), status=status, ignored=notes, edge_bins=float(k)))
    return out


def _clusters(bins, f, share, gap: int = 9, most: int = 3) -> list[tuple[float, float, float]]:
    """(f_lo, f_hi, share) of the runs of ``bins`` (sorted bin indices) that are no more than
    ``gap`` bins apart, at most ``most`` (the largest shares), in frequency order."""
    if not len(bins):
        return []
    splits = np.nonzero(np.diff(bins) > gap)[0] + 1
    runs = [(float(f[r[0]]), float(f[r[-1]]), float(share[r].sum())) for r in np.split(bins, splits)]
    return sorted(sorted(runs, key=lambda r: -r[2])[:most])


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


def policy_from_preprocessing(records, base: Policy | None = None, source: str = "params.json") -> Policy | None:
    """The [`Policy`][jaxid.workflow.preprocess.Policy] that repeats on other runs what [`prepare`][jaxid.workflow.preprocess.prepare] did to the filtered
    runs of ``records`` (``Params.preprocessing``: one [`Preprocessing`][jaxid.workflow.records.Preprocessing] per identification
    run): their derivative method, Butterworth order, cutoff per joint (the median over runs
    where they differ) and trim policy (the samples given, or the filter's settling time); the
    rest (step, base frequency, periodic, parallel, reversal band) from ``base``. Its
    ``settings_from`` is ``source``, so that the runs' descriptions say where the cutoff came
    from. None when no identification run was filtered (logged or periodic): nothing to reuse.

    A model fitted to positions filtered at one cutoff predicts the torques of positions filtered
    at the same cutoff: validating at a cutoff chosen afresh on the held-out run (fs/4 on a log
    whose spectrum shows a line above the band) scores the preprocessing, not the model."""
    base = base or Policy()
    runs = [r if isinstance(r, Preprocessing) else Preprocessing.from_partial(r) for r in records or ()]
    runs = [r for r in runs if r.derivatives in ("butterworth", "savgol") and r.cutoff_hz]
    if not runs:
        return None
    cuts = [r.cutoffs_hz or [r.cutoff_hz] for r in runs]
    width = max(len(c) for c in cuts)
    per_joint = np.median([np.broadcast_to(np.asarray(c, dtype=float), (width,)) for c in cuts], axis=0)
    given = [r.trim for r in runs if r.trim_from == "policy"]
    return dataclasses.replace(
        base,
        derivatives=runs[0].derivatives,
        order=int(runs[0].order or (runs[0].parallel or {}).get("order") or base.order),
        cutoff=float(per_joint[0]) if width == 1 else tuple(float(c) for c in per_joint),
        trim=int(given[0]) if len(given) == len(runs) else base.trim,
        settings_from=source,
    )


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
    return max(int(np.argmax(tail < tol)), 3 * (order + 1))


def prepare(datasets, robot=None, policy: Policy | None = None) -> Prepared:
    """Raw runs (``jaxid.data.Dataset``, as [`read`][jaxid.workflow.inputs.read] returns them) -> [`Prepared`][jaxid.workflow.preprocess.Prepared].

    Runs with logged qd and qdd are used sample by sample as they are. A run of a periodic
    excitation of known base frequency (``policy.base_frequency``, else the run's own, from
    ``jaxid excite``'s sidecar) that holds whole periods (two, or one when the excitation's
    harmonics are known) is averaged into one period (q and tau alike), and qd, qdd come from
    the frequency domain (``jaxid.signals.periodic_derivatives``: exact for a band-limited
    periodic motion, no edge trim, a noise estimate per joint); so identification uses N =
    samples per period. Otherwise q is
    low-pass filtered and differentiated (``jaxid.signals.derivatives``) with the policy's
    cutoff, else [`EXCITATION_CUTOFF`][jaxid.workflow.preprocess.EXCITATION_CUTOFF] times the excitation's band (base frequency x
    harmonics) when the run records it, else one per joint chosen from the data
    ([`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs], whose warnings are warned and noted); a logged qd or qdd is kept,
    and [`edge_trim`][jaxid.workflow.preprocess.edge_trim] samples (the lowest cutoff's) are dropped at each end; then every
    ``step``-th sample.
    Each run is processed on its own (never across the join of two runs).

    robot: the model (or None), to check the joint count and the positions: a joint that does not
    move, or positions outside the model's range, are warned about and noted in the run's
    description (`_position_problems`). policy: [`Policy`][jaxid.workflow.preprocess.Policy].
    Raises WorkflowError naming the run when it is too short or irregularly sampled.
    """
    from jaxid import data

    policy = policy or Policy()
    if isinstance(datasets, data.Dataset):
        datasets = [datasets]
    out, choices = [], []
    for ds in datasets:
        ds, c = _prepare_run(ds, robot, policy)
        out.append(ds)
        choices.append(c)
    if not out:
        raise WorkflowError("no datasets given")
    return Prepared(tuple(out), tuple(choices))


def _prepare_run(ds, robot, policy: Policy):
    """One run of [`prepare`][jaxid.workflow.preprocess.prepare]: the prepared run and its choices (``Prepared.choices[i]``)."""
    from jaxid import data

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
        warnings.warn(f"{name}: {problem}", stacklevel=3)  # prepare's caller
    step_t = np.diff(np.asarray(ds.t))
    jitter = float(np.std(step_t) / np.mean(step_t))
    uniform = jitter <= data.JITTER_TOL  # else _differentiate names the problem
    periodic = _periodic(ds, policy, name) if ds.qd is None and ds.qdd is None and uniform else None
    memory = 0  # samples over which the derivative filter correlates the equation errors
    if ds.qd is not None and ds.qdd is not None:
        c.update(derivatives="logged", cutoff_hz=None, cutoff_from=None, trim=0, logged=["qd", "qdd"])
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
        names = None if robot is None else robot.coordinate_names
        ds, start, stop, memory = _differentiate(ds, name, policy, c, names)
    return _decimate(ds, policy, c, start, stop, memory)


def _cutoff(ds, policy: Policy, name: str, names=None) -> tuple[np.ndarray, str, CutoffChoice | None]:
    """The cutoffs (n,) Hz for differentiating the positions of a run, where they came from:
    "policy" (or "params" when the policy's settings came from a params.json), "excitation"
    ([`EXCITATION_CUTOFF`][jaxid.workflow.preprocess.EXCITATION_CUTOFF] times the recorded band) or "spectrum"
    ([`choose_cutoffs`][jaxid.workflow.preprocess.choose_cutoffs],
    whose choice is returned too, else None). WorkflowError when a cutoff is not below the
    Nyquist frequency or a per-joint policy cutoff does not have one value per joint."""
    fs, n = 1.0 / ds.dt, ds.n
    band = ds.base_frequency * ds.harmonics if ds.base_frequency and ds.harmonics else None
    choice = None
    if policy.cutoff is not None:
        cutoff_from = "params" if policy.settings_from else "policy"
        cutoffs = np.broadcast_to(np.asarray(policy.cutoff, dtype=float), (n,)) if np.ndim(policy.cutoff) == 0 else None
        if cutoffs is None:
            if len(policy.cutoff) != n:  # type: ignore[arg-type]
                raise WorkflowError(
                    f"{name}: {len(policy.cutoff)} cutoffs for {n} joints; give one cutoff, or one per joint"  # type: ignore[arg-type]
                )
            cutoffs = np.asarray(policy.cutoff, dtype=float)
        if policy.settings_from:
            cutoffs, choice = _at_least_the_runs_own(ds, cutoffs, band, fs, names, policy.settings_from)
    elif band:
        cutoff_from, cutoffs = "excitation", np.full(n, EXCITATION_CUTOFF * band)
    else:
        choice = raise_for_trim(choose_cutoffs(ds.q, fs, names=names), fs, len(ds), policy.order, names)
        cutoff_from, cutoffs = "spectrum", np.asarray(choice.cutoffs)
    if not cutoffs.max() < fs / 2:
        raise WorkflowError(
            f"{name}: cutoff {cutoffs.max():g} Hz is not below the Nyquist frequency "
            f"{fs / 2:g} Hz of this {fs:g} Hz run; choose a lower cutoff"
        )
    return np.array(cutoffs), cutoff_from, choice


def _at_least_the_runs_own(ds, stored, band, fs: float, names, source: str):
    """The cutoffs (n,) Hz of a run prepared as other runs were (``stored``, from ``source``,
    [`policy_from_preprocessing`][jaxid.workflow.preprocess.policy_from_preprocessing]), each raised to what the run's own band needs, and a
    [`CutoffChoice`][jaxid.workflow.preprocess.CutoffChoice] noting the joints raised (None when none was).

    A stored cutoff passes the band of the runs it was chosen on; a held-out run whose motion
    reaches higher (another excitation, a faster trajectory) would have its accelerations
    attenuated by it, and its score would then measure the filter, not the model (the UR10e
    runs of Mamedov et al. 2020: a 50 s run's 0.77 Hz applied to a 20 s run's band scores it 8.6 %
    where its own cutoff gives 6.5 %). A cutoff above the run's need is kept: filtered as the
    identification runs were, the model predicts these positions' torques best."""
    own = (
        np.full(len(stored), EXCITATION_CUTOFF * band)
        if band
        else np.asarray(choose_cutoffs(ds.q, fs, names=names).cutoffs, dtype=float)
    )
    raised = np.flatnonzero(own > stored * (1 + 1e-9))
    if not raised.size:
        return stored, None
    label = list(names) if names is not None else [f"q{j + 1}" for j in range(len(stored))]
    note = f"cutoff raised above {source}'s where this run's band reaches higher: " + ", ".join(
        f"{label[j]} {stored[j]:.3g} -> {own[j]:.3g} Hz" for j in raised
    )
    cutoffs = np.maximum(stored, own)
    return cutoffs, CutoffChoice(tuple(float(x) for x in cutoffs), (), (), (note,))


def _differentiate(ds, name: str, policy: Policy, c: dict, names=None):
    """A uniformly sampled run with q filtered and qd, qdd from it, each joint at its cutoff (a
    logged qd or qdd kept as it is), its choices ``c`` updated (the cutoff choice's warnings
    warned and, with its notes, noted); returns the run, the kept samples [start, stop) and the
    memory (samples) of the derivative filter: the settling time of the lowest cutoff, which also
    sets the trim. WorkflowError when the run is too short for the trim."""
    from jaxid import data, signals

    N, fs = len(ds), 1.0 / ds.dt
    cutoffs, cutoff_from, choice = _cutoff(ds, policy, name, names)
    low = float(cutoffs.min())  # the longest impulse response
    trim = policy.trim if policy.trim is not None else edge_trim(fs, low, policy.order)
    if N <= 2 * trim + data.MIN_SAMPLES:
        raise WorkflowError(
            f"{name}: {N} samples; differentiating q at {low:.3g} Hz drops {trim} at each "
            f"end and needs more than {2 * trim + data.MIN_SAMPLES}: record a longer run, "
            "raise the cutoff, or log qd and qdd"
        )
    same = cutoffs.max() <= cutoffs.min() * (1 + 1e-12)
    try:
        q, qd, qdd = signals.derivatives(
            ds.q, 1.0 / fs, method=policy.derivatives, cutoff=low if same else cutoffs, order=policy.order
        )
    except ValueError as e:
        raise WorkflowError(f"{name}: computing qd, qdd from the positions: {e}") from None
    logged = [k for k in ("qd", "qdd") if getattr(ds, k) is not None]
    ds = dataclasses.replace(
        ds,
        q=q,
        qd=ds.qd if ds.qd is not None else qd,
        qdd=ds.qdd if ds.qdd is not None else qdd,
        derivatives=policy.derivatives,
    )
    if choice is not None:
        for w in choice.warnings:
            warnings.warn(f"{name}: {w}", stacklevel=4)  # prepare's caller
        c["notes"].extend([*choice.notes, *choice.warnings])
    c.update(
        derivatives=policy.derivatives,
        cutoff_hz=float(cutoffs.max()),
        cutoffs_hz=[float(x) for x in cutoffs],
        cutoff_from=cutoff_from,
        order=int(policy.order),
        logged=logged,
        trim=int(trim),
        trim_from="policy" if policy.trim is not None else "settling",
    )
    return ds, trim, N - trim, edge_trim(fs, low, policy.order)


def _decimate(ds, policy: Policy, c: dict, start: int, stop: int, memory: int):
    """The samples [start, stop) of a run, every ``policy.step``-th (all with parallel filtering,
    which ``regressor_rows`` decimates), and its choices ``c`` completed."""
    fs = c["fs_hz"]
    step = 1 if policy.parallel else policy.step
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
    return ds, c


#: Logged positions beyond the model's position range by more than this fraction of the range's
#: width are reported (a log may overshoot a soft limit a little; a wrong unit, zero offset or
#: joint order does not stay that close).
RANGE_SLACK = 0.1


def _position_problems(q, robot) -> list[str]:
    """Sentences naming what is implausible about the positions q (N, n) of a run: joints that
    do not move at all (a dead encoder channel, or a joint left at rest), and joints that leave
    the model's [q_min, q_max] by more than [`RANGE_SLACK`][jaxid.workflow.preprocess.RANGE_SLACK] of its width (suggesting degrees
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


#: Periods averaged into one may differ, per joint, by at most this many times the position noise
#: (read off the run's sample-to-sample roughness) and this share of the joint's range
#: (`_periods_disagree`): repeated motion repeats within its noise and tracking error.
PERIOD_NOISE = 10.0
PERIOD_SHARE = 0.01


def _periods_disagree(q, M: int, P: int) -> str | None:
    """Why the M periods of P samples of the positions q (N, n) rad are not one motion repeated, or
    None: some joint's RMS deviation of the periods from their average exceeds both
    [`PERIOD_NOISE`][jaxid.workflow.preprocess.PERIOD_NOISE] x its noise std (1.4826 MAD of q_k - (q_k-1 + q_k+1) / 2, / sqrt(1.5): the white
    noise of q; the motion's qdd dt^2 / 2 is far below it) and [`PERIOD_SHARE`][jaxid.workflow.preprocess.PERIOD_SHARE] of its range (a stale
    base frequency, from the sidecar of another log, averages different motions into one)."""
    if M < 2:
        return None
    Q = q[: M * P].reshape(M, P, -1)
    spread = np.sqrt(((Q - Q.mean(axis=0)) ** 2).mean(axis=(0, 1)) * M / (M - 1))
    e = q[1:-1] - 0.5 * (q[:-2] + q[2:])
    noise = 1.4826 * np.median(np.abs(e - np.median(e, axis=0)), axis=0) / math.sqrt(1.5)
    span = q.max(axis=0) - q.min(axis=0)
    bad = np.flatnonzero((spread > PERIOD_NOISE * noise) & (spread > PERIOD_SHARE * span))
    if not bad.size:
        return None
    j = int(bad[np.argmax(spread[bad] / span[bad])])
    return (
        f"positions differ from their average by {spread[j]:.3g} rad RMS at joint {j + 1} ({100 * spread[j] / span[j]:.2g} % "
        f"of its range, the noise std {noise[j]:.2g}): they are not one motion repeated, and averaging them would fit "
        "a motion the robot never made"
    )


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
    mismatch = _periods_disagree(np.asarray(ds.q, dtype=float), M, P)
    if mismatch:
        given = (
            f"--base-frequency {f0:g}"
            if policy.base_frequency is not None
            else f"the sidecar {name}.json (base frequency {f0:g} Hz)"
        )
        fix = (
            "check the base frequency, or filter instead (--no-periodic)"
            if policy.base_frequency is not None
            else f"it is not of this log (a replaced log?): delete or fix {name}.json, or filter instead (--no-periodic)"
        )
        raise WorkflowError(f"{name}: {given} makes {M} periods of {P} samples whose {mismatch}; {fix}")
    tau = signals.period_average(np.asarray(ds.tau)[: M * P], P)
    out = dataclasses.replace(
        ds, t=device(np.asarray(ds.t)[:P]), q=r.q, tau=device(tau), qd=r.qd, qdd=r.qdd, derivatives="periodic"
    )
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
