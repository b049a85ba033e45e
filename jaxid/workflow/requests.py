"""What a command asks for: one frozen record per command, of plain values (paths, numbers,
tuples, names), checked when it is made.

A request holds the flags of a ``jaxid`` subcommand as the Python API spells them; its
``__post_init__`` refuses a bad combination with [`jaxid.workflow.WorkflowError`][jaxid.workflow.records.WorkflowError] and the
message the command line prints, so a library user gets the same error as the command. The
functions that carry a request out are in [`jaxid.workflow.commands`][jaxid.workflow.commands]. Each request lists
its input and output paths with their flags (``paths()``), and the output guard
([`jaxid.workflow.paths.check_names`][jaxid.workflow.paths.check_names]) refuses outputs that would clobber each other or an
input, and a run given twice, when the request is made; the commands check the files themselves
([`jaxid.workflow.paths.check_files`][jaxid.workflow.paths.check_files]) before any work. Nothing here reads a file's content
or imports JAX.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Literal

from jaxid.workflow import METHODS, WorkflowError
from jaxid.workflow.paths import Arg, check_names, data_args, sidecar

__all__ = [
    "BoundsSpec",
    "CrossvalRequest",
    "DataSpec",
    "ExciteRequest",
    "ExportRequest",
    "IdentifyRequest",
    "LugreRequest",
    "ModelSpec",
    "NO_MODEL",
    "PayloadRequest",
    "PayloadSpec",
    "SimulateRequest",
    "ValidateRequest",
    "parse_terms",
    "parse_weights",
]


#: What a --report folder receives (``jaxid.report.Document.write``).
REPORT_FILES = ("report.html", "report.md", "figures")


def _set(obj, name, value):
    object.__setattr__(obj, name, value)  # a frozen record normalising its own field


def _paths(value) -> tuple[str, ...]:
    return (str(value),) if isinstance(value, str) else tuple(str(v) for v in value)


def _positive(value, message: str) -> None:
    if value is not None and not 0 < value < math.inf:
        raise WorkflowError(message.format(value))


def _window(text: str | None) -> None:
    """Refuse a --window that is not T0:T1 with times >= 0 s, T0 < T1 (the reader,
    ``jaxid.data.parse_window``, reads it; checked here before anything is loaded)."""
    if text is None:
        return
    parts = text.split(":")
    try:
        lo, hi = (float(p) if p.strip() else None for p in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        lo = hi = math.nan
    if (lo is None and hi is None) or any(b is not None and not 0 <= b < math.inf for b in (lo, hi)):
        raise WorkflowError(f"--window '{text}' is not T0:T1 in s from the log's start, e.g. '5:30', '5:' or ':30'")
    if lo is not None and hi is not None and not lo < hi:
        raise WorkflowError(f"--window '{text}': T0 = {lo:g} s is not before T1 = {hi:g} s")


def parse_terms(text: str) -> tuple[str, ...]:
    """'fv,fc,offset' -> ('fv', 'fc', 'offset'); '' or 'none' -> (); unknown terms are a WorkflowError."""
    from jaxid.model.robot import JOINT_TERMS

    terms = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    bad = [t for t in terms if t not in JOINT_TERMS]
    if bad:
        raise WorkflowError(f"--joint-terms: unknown term(s) {bad}; choose from {','.join(JOINT_TERMS)}")
    return terms


def parse_weights(text) -> tuple[float, ...]:
    """The prior weights of the held-out protocol: 'w1,w2,...' or numbers, each finite and >= 0."""
    if isinstance(text, str):
        try:
            weights = tuple(float(w) for w in text.split(","))
        except ValueError:
            raise WorkflowError(f"--prior-weights must be comma-separated numbers, got {text!r}") from None
    else:
        weights = tuple(float(w) for w in text)
    if not weights or any(not (math.isfinite(w) and w >= 0) for w in weights):
        raise WorkflowError(f"--prior-weights must be finite numbers >= 0, got {text!r}")
    return weights


#: The error of a command that fits a log when no model is named (and the log's sidecar records none).
NO_MODEL = "no robot model given: pass --urdf PATH (or --robot/--mjcf/--dh); jaxid fits only a model you name"

_MODEL_KEYS = ("robot", "urdf", "dh", "mjcf", "tip_link")


# ------------------------------------------------------------------------------- the parts
@dataclass(frozen=True)
class ModelSpec:
    """The model: a built-in ``robot`` name, or a ``urdf`` (with ``tip_link``), ``dh`` or
    ``mjcf`` file; the per-joint ``joint_terms`` (names or 'fv,fc' text), the Coulomb scale
    ``coulomb_eps`` (rad/s) and the Stribeck velocity ``stribeck_vs`` (rad/s, or "fit" where
    the command identifies it). ``default_robot`` is used when neither a name nor a file is given
    (``jaxid excite`` and ``jaxid simulate``: "ur5"); None (the default): the model is the one a
    params.json or the data's sidecar records ([`with_recorded`][jaxid.workflow.requests.ModelSpec.with_recorded]), else the command refuses
    with [`NO_MODEL`][jaxid.workflow.requests.NO_MODEL] — a log is never fitted to a model nobody named. ``transmission``: a transmission file
    (.json/.toml, ``jaxid.model.transmission``) or ``"urdf"`` (the URDF's ``<transmission>``
    elements): the logs are then motor-side and the joint terms act on the motors.
    ``package_dirs``: folders where a URDF's ``package://`` mesh names are looked up first
    (``--package-dir``; each a package or a folder of packages), before ``ROS_PACKAGE_PATH``,
    ``AMENT_PREFIX_PATH`` and the URDF's own folders (``jaxid.model.meshes``)."""

    robot: str | None = None
    urdf: str | None = None
    dh: str | None = None
    mjcf: str | None = None
    tip_link: str | None = None
    joint_terms: tuple[str, ...] | str = ("fv", "fc", "offset")
    coulomb_eps: float | None = None
    stribeck_vs: float | Literal["fit"] | None = None
    check_inertia: bool = True
    default_robot: str | None = None
    transmission: str | None = None
    package_dirs: tuple[str, ...] = ()

    def __post_init__(self):
        files = [k for k in ("urdf", "dh", "mjcf") if getattr(self, k)]
        _set(self, "package_dirs", tuple(str(d) for d in self.package_dirs))
        if self.package_dirs and (self.robot or self.dh or self.mjcf):
            raise WorkflowError("--package-dir resolves the package:// mesh names of a URDF; it needs --urdf PATH")
        for d in self.package_dirs:
            if not os.path.isdir(os.path.expanduser(d)):
                raise WorkflowError(f"--package-dir {d!r}: no such folder (give a package or a folder of packages)")
        if self.transmission == "urdf" and not self.urdf:
            raise WorkflowError("--transmission urdf reads the URDF's <transmission> elements; it needs --urdf PATH")
        if self.transmission not in (None, "urdf") and not str(self.transmission).lower().endswith((".json", ".toml")):
            raise WorkflowError(
                f"--transmission {self.transmission!r}: give a .json or .toml transmission file, or 'urdf'"
            )
        if len(files) + (self.robot is not None) > 1:
            raise WorkflowError("give one model: --robot, --urdf, --dh or --mjcf")
        if self.tip_link and not self.urdf:
            raise WorkflowError("--tip-link selects the chain of a URDF file; it needs --urdf PATH")
        terms = parse_terms(self.joint_terms) if isinstance(self.joint_terms, str) else tuple(self.joint_terms)
        _set(self, "joint_terms", parse_terms(",".join(terms)))
        if self.coulomb_eps is not None and not self.coulomb_eps > 0:
            raise WorkflowError(f"--coulomb-eps must be > 0 rad/s, got {self.coulomb_eps}")
        vs = self.stribeck_vs
        if vs == "fit":
            if "fs" not in self.joint_terms:
                raise WorkflowError(
                    "--stribeck-vs fit identifies the Stribeck velocity of the fs term; add fs to --joint-terms"
                )
            return
        _positive(vs, "--stribeck-vs must be a finite velocity > 0 rad/s, got {}")
        if vs is not None and "fs" not in self.joint_terms:
            raise WorkflowError("--stribeck-vs sets the Stribeck velocity of the fs term; add fs to --joint-terms")

    @property
    def file(self) -> tuple[str | None, str | None]:
        """(flag, path) of the model file, both None for a built-in model."""
        return next(((f"--{k}", getattr(self, k)) for k in ("urdf", "dh", "mjcf") if getattr(self, k)), (None, None))

    @property
    def builtin(self) -> str | None:
        """The built-in model's name (the default one when nothing is given), None with a file."""
        return None if self.file[1] else (self.robot or self.default_robot)

    @property
    def named(self) -> bool:
        """Whether the spec names a model: a built-in name, a file, or a default robot."""
        return bool(self.robot or self.file[1] or self.default_robot)

    def with_recorded(self, recorded: dict) -> ModelSpec:
        """The spec of a model the command did not get a flag for, taken from the data files'
        sidecars (``jaxid simulate`` records the model it simulated; ``jaxid.data.read_model``):
        ``recorded`` maps each data file to its recorded model entry (a params.json ``model``
        table) or None. Returns this spec with the recorded built-in name or file (its joint
        terms and the rest kept), or itself when it names a model. Raises WorkflowError
        ([`NO_MODEL`][jaxid.workflow.requests.NO_MODEL]) when a file records no model, or when the files record different ones."""
        if self.named:
            return self
        models = {}
        for path, desc in recorded.items():
            keys = {k: (desc or {}).get("builtin" if k == "robot" else k) for k in _MODEL_KEYS}
            if not any(keys[k] for k in ("robot", "urdf", "dh", "mjcf")):
                why = "" if len(recorded) == 1 and desc is None else f" ({path} records no model)"
                raise WorkflowError(NO_MODEL + why)
            models[path] = keys
        if not models:
            raise WorkflowError(NO_MODEL)
        first, *rest = models.items()
        other = next(((p, m) for p, m in rest if m != first[1]), None)
        if other is not None:

            def shown(m: dict) -> str:
                return ", ".join(f"{k}={v}" for k, v in m.items() if v)

            raise WorkflowError(
                f"the data files record different models ({first[0]}: {shown(first[1])}; {other[0]}: "
                f"{shown(other[1])}): name the model (--urdf PATH or --robot NAME)"
            )
        m = first[1]
        return dataclasses.replace(
            self, robot=m["robot"], urdf=m["urdf"], dh=m["dh"], mjcf=m["mjcf"], tip_link=m["tip_link"]
        )

    def paths(self) -> list[Arg]:
        """The model's input files (``jaxid.workflow.paths.Arg``)."""
        transmission = None if self.transmission == "urdf" else self.transmission
        return [
            Arg("--urdf", self.urdf, what="URDF"),
            Arg("--dh", self.dh, what="DH table"),
            Arg("--mjcf", self.mjcf, what="MJCF"),
            Arg("--transmission", transmission, what="transmission"),
        ]

    def no_fitted_vs(self) -> None:
        """Refuse ``stribeck_vs="fit"`` (for the commands that do not identify it)."""
        if self.stribeck_vs == "fit":
            raise WorkflowError("--stribeck-vs fit is for 'jaxid identify'; here give the velocity in rad/s")


@dataclass(frozen=True)
class DataSpec:
    """How dataset files are read and prepared (``jaxid.workflow.read`` and ``prepare``): the
    column mapping (``columns``, ``units``, ``gains`` as the flags' text, or a ``mapping`` file),
    ``resample``, ``max_gap`` (s), the derivative filter's ``cutoff`` (Hz), the edge ``trim``
    (samples), decimation ``step``, the ``base_frequency`` (Hz) of a periodic run, ``periodic``,
    ``parallel`` filtering and the ``reversal_band`` (rad/s) left out of the fit; a bag's JointState
    ``topic``, the sampling ``rate`` (Hz) of logs without a time column and the time ``window``
    (``"T0:T1"``, s from each log's start); ``accept_faults``: the faults of the logs' plausibility
    checks (``jaxid.workflow.plausibility.FAULTS``) to proceed with (``--accept-fault``)."""

    columns: str | None = None
    units: str | None = None
    gains: str | None = None
    mapping: str | None = None
    resample: bool = False
    max_gap: float | None = None
    cutoff: float | None = None
    trim: int | None = None
    step: int = 1
    base_frequency: float | None = None
    periodic: bool = True
    parallel: bool = False
    reversal_band: float | None = None
    topic: str | None = None
    rate: float | None = None
    window: str | None = None
    accept_faults: tuple[str, ...] = ()

    def __post_init__(self):
        from jaxid.workflow.plausibility import check_accept

        _set(self, "accept_faults", check_accept(self.accept_faults))
        _window(self.window)
        _positive(self.rate, "--rate must be a finite sampling rate > 0 Hz, got {}")
        if self.step < 1:
            raise WorkflowError(f"--step must be an integer >= 1, got {self.step}")
        if self.cutoff is not None and not self.cutoff > 0:
            raise WorkflowError(f"--cutoff must be > 0 Hz, got {self.cutoff}")
        if self.trim is not None and self.trim < 0:
            raise WorkflowError(f"--trim must be an integer >= 0 samples, got {self.trim}")
        _positive(self.reversal_band, "--reversal-band must be a finite velocity > 0 rad/s, got {}")
        _positive(self.max_gap, "--max-gap must be a finite time > 0 s, got {}")
        _positive(self.base_frequency, "--base-frequency must be a finite frequency > 0 Hz, got {}")
        if self.mapping and (self.columns or self.units or self.gains):
            raise WorkflowError("give either --mapping PATH or --columns/--units/--gains, not both")

    def paths(self) -> list[Arg]:
        """The input files of the reading (``jaxid.workflow.paths.Arg``): the --mapping file."""
        return [Arg("--mapping", self.mapping, what="column mapping")]


@dataclass(frozen=True)
class BoundsSpec:
    """Bounds on the bodies of a consistent fit: each link's mass within +-``mass_tol``
    (relative) of nominal, its centre of mass within +-``com_margin`` m, the ``total_mass``
    (LO, HI) kg, the centre of mass (``com_in_geometry``) or whole body (``body_in_geometry``)
    inside the link's collision capsules; each body inside its link's bounding ellipsoid
    (``ellipsoid``, the default; ``jaxid.workflow.consistency.geometry_bounds``)."""

    mass_tol: float | None = None
    com_margin: float | None = None
    total_mass: tuple[float, float] | str | None = None
    com_in_geometry: bool = False
    body_in_geometry: bool = False
    ellipsoid: bool = True

    def __post_init__(self):
        if isinstance(self.total_mass, str):
            try:
                total = tuple(float(v) for v in self.total_mass.split(","))
            except ValueError:
                total = ()
            if len(total) != 2:
                raise WorkflowError(f"--total-mass must be LO,HI in kg, got {self.total_mass!r}")
            _set(self, "total_mass", total)

    @property
    def given(self) -> bool:
        return (
            self.mass_tol is not None
            or self.com_margin is not None
            or self.total_mass is not None
            or self.com_in_geometry
            or self.body_in_geometry
        )


@dataclass(frozen=True)
class PayloadSpec:
    """A load on the flange: ``mass`` kg, centre of mass ``com`` (3,) m in the flange frame
    (default the origin), and a uniform ``box`` (3,) m about it (default a point mass)."""

    mass: float | None = None
    com: tuple[float, float, float] | None = None
    box: tuple[float, float, float] | None = None

    def __post_init__(self):
        if self.mass is None and (self.com is not None or self.box is not None):
            raise WorkflowError("--payload-com and --payload-box describe a payload: give its --payload-mass too")


def _bounds_need_consistent(bounds: BoundsSpec, consistent: bool) -> None:
    if bounds.given and not consistent:
        raise WorkflowError(
            "--mass-tol, --com-margin, --total-mass, --com-in-geometry and --body-in-geometry bound "
            "the bodies of --consistent; add --consistent"
        )


# ---------------------------------------------------------------------------- the commands
@dataclass(frozen=True)
class IdentifyRequest:
    """``jaxid identify``: base parameters (and joint friction) from the dataset files ``data``,
    written to ``output`` (params.json) and, with ``urdf_out``/``mjcf_out``, as a model file.
    ``reference``: the commanded trajectory of each data file (method iv/didim).
    ``prior_weight``: the consistent fit's prior weight; None (default): chosen by
    cross-validation over the runs (``jaxid.workflow.crossval``, the one-standard-error rule), or
    with ``validate_on`` (held-out runs) the weight of ``prior_weights`` with the least error on
    them. ``validation``: also validate the fit on its own data (for a report).
    ``accept_unconverged`` / ``accept_implausible``: write the model file of a consistent fit that
    did not converge / whose verdict is "not plausible" (by default neither is written).
    ``json``: a further output path checked with the others ('-' is stdout); ``report``: the
    folder of the caller's report (``jaxid.report``), checked with them."""

    data: tuple[str, ...]
    model: ModelSpec = field(default_factory=ModelSpec)
    prepare: DataSpec = field(default_factory=DataSpec)
    output: str = "params.json"
    method: str = "wls"
    reference: tuple[str, ...] | None = None
    consistent: bool = False
    accept_unconverged: bool = False
    accept_implausible: bool = False
    max_steps: int | None = None
    prior_weight: float | None = None
    bounds: BoundsSpec = field(default_factory=BoundsSpec)
    fit_gravity: bool = False
    sdp_check: bool = False
    validate_on: tuple[str, ...] | None = None
    prior_weights: tuple[float, ...] | str | None = None
    urdf_out: str | None = None
    mjcf_out: str | None = None
    urdf_lump: bool = False
    friction: Literal["terms", "lugre"] = "terms"
    validation: bool = False
    json: str | None = None
    report: str | None = None

    def __post_init__(self):
        _set(self, "data", _paths(self.data))
        for name in ("reference", "validate_on"):
            if getattr(self, name) is not None:
                _set(self, name, _paths(getattr(self, name)))
        if self.method not in METHODS:
            raise WorkflowError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")
        if self.urdf_out is not None and self.mjcf_out is not None:
            raise WorkflowError("give one of --urdf-out and --mjcf-out")
        if self.urdf_out is not None and not self.urdf_out.lower().endswith(".urdf"):
            raise WorkflowError(f"--urdf-out {self.urdf_out!r} must end in .urdf")
        if self.urdf_lump and not (self.urdf_out and self.model.urdf):
            raise WorkflowError("--urdf-lump is for writing into a copy of the --urdf FILE: give --urdf and --urdf-out")
        if self.mjcf_out is not None and not (self.model.mjcf and self.mjcf_out.lower().endswith(".xml")):
            raise WorkflowError(
                f"--mjcf-out {self.mjcf_out!r}: writes into a copy of the --mjcf FILE, as a .xml file; give "
                "both (or --urdf-out for a new URDF)"
            )
        if self.friction == "lugre":
            bad = [
                f
                for f, on in (
                    ("--consistent", self.consistent),
                    ("--validate-on", self.validate_on),
                    ("--stribeck-vs", self.model.stribeck_vs is not None),
                    ("--fit-gravity", self.fit_gravity),
                    ("--reference", self.reference is not None),
                )
                if on
            ]
            if bad:
                raise WorkflowError(f"{', '.join(bad)} cannot be combined with --friction lugre")
        elif self.friction != "terms":
            raise WorkflowError(f"friction must be 'terms' or 'lugre', got {self.friction!r}")
        _bounds_need_consistent(self.bounds, self.consistent)
        if self.accept_implausible and not (self.consistent and (self.urdf_out or self.mjcf_out)):
            raise WorkflowError(
                "--accept-implausible writes the model file of a --consistent fit whose checks fail: "
                "give --consistent and --urdf-out (or --mjcf-out), or drop it"
            )
        if self.max_steps is not None:
            if not self.consistent:
                raise WorkflowError("--max-steps limits the Newton steps of --consistent; add --consistent")
            if int(self.max_steps) != self.max_steps or self.max_steps < 1:
                raise WorkflowError(f"--max-steps must be an integer >= 1, got {self.max_steps}")
        if self.prior_weight is not None:
            if not (math.isfinite(self.prior_weight) and self.prior_weight >= 0):
                raise WorkflowError(f"--prior-weight must be a finite number >= 0, got {self.prior_weight}")
            if self.validate_on:
                raise WorkflowError("--prior-weight fixes the weight that --validate-on chooses: give one of them")
        if self.validate_on and not self.consistent:
            raise WorkflowError("--validate-on chooses the prior weight of --consistent; add --consistent")
        if self.prior_weights is not None:
            if not self.consistent or self.prior_weight is not None:
                raise WorkflowError(
                    "--prior-weights are the weights --consistent tries when it chooses its prior weight"
                )
            _set(self, "prior_weights", parse_weights(self.prior_weights))
        if self.reference is not None and self.method not in ("iv", "didim"):
            raise WorkflowError("--reference gives the instruments of --method iv or didim; add one of them")
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``)."""
        inputs = [
            *data_args("DATA", self.data),
            *self.model.paths(),
            *self.prepare.paths(),
            *(Arg("--reference", p, must_exist=True, what="trajectory") for p in self.reference or ()),
            *data_args("--validate-on", self.validate_on, "held-out"),
        ]
        outputs = [
            Arg("-o", self.output),
            Arg("--urdf-out", self.urdf_out),
            Arg("--mjcf-out", self.mjcf_out),
            Arg("--json", self.json),
            Arg("--report", self.report, "folder", contents=REPORT_FILES),
        ]
        return inputs, outputs

    @property
    def model_out(self) -> tuple[str | None, str]:
        """(path, kind) of the model file to write: (mjcf_out, 'MJCF') or (urdf_out or None, 'URDF')."""
        return (self.mjcf_out, "MJCF") if self.mjcf_out else (self.urdf_out, "URDF")


@dataclass(frozen=True)
class CrossvalRequest:
    """``jaxid crossval``: leave-one-run-out cross-validation of WLS (or OLS) and the consistent
    fit at each of ``prior_weights`` (None: ``jaxid.workflow.prior_grid``) over at least two dataset files."""

    data: tuple[str, ...]
    model: ModelSpec = field(default_factory=ModelSpec)
    prepare: DataSpec = field(default_factory=DataSpec)
    method: Literal["wls", "ols"] = "wls"
    bounds: BoundsSpec = field(default_factory=BoundsSpec)
    fit_gravity: bool = False
    prior_weights: tuple[float, ...] | str | None = None
    json: str | None = None

    def __post_init__(self):
        _set(self, "data", _paths(self.data))
        self.model.no_fitted_vs()
        if len(self.data) < 2:
            raise WorkflowError(f"crossval needs at least two dataset files, got {len(self.data)}")
        if self.method not in ("wls", "ols"):
            raise WorkflowError(f"crossval's method is wls or ols, got {self.method!r}")
        if self.prior_weights is not None:
            _set(self, "prior_weights", parse_weights(self.prior_weights))
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``)."""
        inputs = [*data_args("DATA", self.data), *self.model.paths(), *self.prepare.paths()]
        return inputs, [Arg("--json", self.json)]


@dataclass(frozen=True)
class ValidateRequest:
    """``jaxid validate``: predict the torques of the held-out dataset files ``data`` from the
    parameters in ``params`` (the model from ``model`` when it names one, else from the file).
    ``out`` and ``report``: the folders of the caller's figures (``metrics.json``, one
    ``STEM_torques.png`` per data file) and report, checked with ``json``. A params.json whose
    consistent fit did not converge (written with ``--accept-unconverged``) is refused unless
    ``accept_unconverged``."""

    data: tuple[str, ...]
    params: str
    model: ModelSpec = field(default_factory=lambda: ModelSpec(joint_terms=()))
    prepare: DataSpec = field(default_factory=DataSpec)
    accept_unconverged: bool = False
    json: str | None = None
    out: str | None = None
    report: str | None = None

    def __post_init__(self):
        _set(self, "data", _paths(self.data))
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``)."""
        from pathlib import PurePath

        inputs = [
            *data_args("DATA", self.data),
            Arg("--params", self.params, what="params.json"),
            *self.model.paths(),
            *self.prepare.paths(),
        ]
        figures = ("metrics.json", *(f"{PurePath(p).stem}_torques.png" for p in self.data))
        outputs = [
            Arg("--json", self.json),
            Arg("--out", self.out, "folder", contents=figures),
            Arg("--report", self.report, "folder", contents=REPORT_FILES),
        ]
        return inputs, outputs


@dataclass(frozen=True)
class SimulateRequest:
    """``jaxid simulate``: noisy measurements of a perturbed ("true") robot along the
    ``trajectory`` file, written to ``output`` (.csv/.npz); ``truth`` the noise-free signals,
    ``true_params`` the true parameters (JSON). Seeds: ``robot_seed`` and ``noise_seed``
    (default ``seed``, default 0). ``rate`` Hz resamples the trajectory; ``scale`` is the
    relative perturbation; ``friction`` the joint terms added to the true robot (with its
    Stribeck velocity ``stribeck_vs``, rad/s); noise: ``sigma_q`` rad, ``quantization`` rad, the
    torque's ``tau_noise`` % of range (default 0.5) or ``tau_sigma`` N m (one or one per joint).
    With a transmission (``model.transmission``) the friction acts on the motors and the files are
    motor-side logs (``jaxid.data.motor_log``)."""

    trajectory: str
    output: str
    model: ModelSpec = field(default_factory=lambda: ModelSpec(joint_terms=(), default_robot="ur5"))
    robot_seed: int | None = None
    noise_seed: int | None = None
    seed: int | None = None
    rate: float | None = None
    scale: float = 0.2
    friction: tuple[str, ...] | str = ("fv", "fc", "offset")
    stribeck_vs: float | None = None
    sigma_q: float = 1e-4
    quantization: float | None = None
    tau_noise: float | None = None
    tau_sigma: tuple[float, ...] | None = None
    payload: PayloadSpec = field(default_factory=PayloadSpec)
    truth: str | None = None
    true_params: str | None = None
    json: str | None = None

    def __post_init__(self):
        from jaxid.simulation import FRICTION_RANGES

        for out in (self.output, self.truth):
            if out is not None and not out.lower().endswith((".csv", ".npz")):
                raise WorkflowError(f"output {out!r} must end in .csv or .npz")
        text = self.friction if isinstance(self.friction, str) else ",".join(self.friction)
        friction = parse_terms(text)
        if any(f not in FRICTION_RANGES for f in friction):
            raise WorkflowError(f"--friction: choose from {','.join(FRICTION_RANGES)}, got {text!r}")
        _set(self, "friction", friction)
        if not 0 <= self.scale < 1:
            raise WorkflowError(f"--scale must be in [0, 1), got {self.scale}")
        if self.stribeck_vs is not None:
            if "fs" not in friction:
                raise WorkflowError("--stribeck-vs sets the Stribeck velocity of the fs term; add fs to --friction")
            _positive(self.stribeck_vs, "--stribeck-vs must be a finite velocity > 0 rad/s, got {}")
        if self.tau_noise is not None and self.tau_sigma is not None:
            raise WorkflowError("give either --tau-noise or --tau-sigma")
        if self.rate is not None and not (math.isfinite(self.rate) and self.rate > 0):
            raise WorkflowError(f"--rate must be a finite rate > 0 Hz, got {self.rate}")
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``): each dataset written has
        its sidecar FILE.json (the model simulated)."""
        inputs = [
            Arg("--trajectory", self.trajectory, what="trajectory"),
            sidecar("--trajectory", self.trajectory),
            *self.model.paths(),
        ]
        outputs = [Arg("-o", self.output), sidecar("-o", self.output)]
        if self.truth is not None:
            outputs += [Arg("--truth", self.truth), sidecar("--truth", self.truth)]
        outputs += [Arg("--true-params", self.true_params), Arg("--json", self.json)]
        return inputs, outputs

    @property
    def seeds(self) -> tuple[int, int]:
        """(robot seed, noise seed)."""
        seed = 0 if self.seed is None else self.seed
        return (
            seed if self.robot_seed is None else self.robot_seed,
            seed if self.noise_seed is None else self.noise_seed,
        )


@dataclass(frozen=True)
class PayloadRequest:
    """``jaxid payload``: the 10 inertial parameters of a load on the flange from the loaded
    run ``data``, on top of the robot identified in ``params``, against the ``unloaded`` run of the
    same trajectory, or (``nominal``, which must be asked for) on top of the model's nominal
    parameters. ``joints``: 1-based
    joints whose torques are used; ``cov``: noise variance per used joint (N^2 m^2); ``period``
    (samples), ``average`` and ``smooth`` (passes) preprocess a periodic run. ``align``: put the
    unloaded run on the loaded run's stamps first (``workflow.align_runs``); False differences the
    runs sample by sample, which needs the same stamps. ``gain_std``: relative std of each joint's
    torque gain that the payload's std includes (``identify_payload(gain_std=...)``; None: its default)."""

    data: str
    model: ModelSpec = field(default_factory=lambda: ModelSpec(joint_terms=()))
    params: str | None = None
    unloaded: str | None = None
    nominal: bool = False
    joints: tuple[int, ...] | None = None
    cov: tuple[float, ...] | None = None
    period: int | None = None
    average: bool = False
    smooth: int = 0
    prepare: DataSpec = field(default_factory=DataSpec)
    output: str | None = None
    json: str | None = None
    align: bool = True
    gain_std: float | None = None

    def __post_init__(self):
        if self.average and not self.period:
            raise WorkflowError("--average averages whole periods: give --period K (samples per excitation period)")
        if not self.align and not self.unloaded:
            raise WorkflowError("--no-align concerns the unloaded run: give --unloaded DATA, or drop --no-align")
        if self.gain_std is not None and not 0 <= self.gain_std < 1:  # NaN fails too
            raise WorkflowError(
                f"--gain-std {self.gain_std:g}: a relative std of the torque gains, a fraction in [0, 1) "
                "(0.02 is 2 %; 0 for exact torques)"
            )
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``)."""
        inputs = [
            *data_args("DATA", [self.data]),
            *data_args("--unloaded", [self.unloaded]),
            Arg("--params", self.params, what="params.json"),
            *self.model.paths(),
            *self.prepare.paths(),
        ]
        return inputs, [Arg("-o", self.output), Arg("--json", self.json)]


@dataclass(frozen=True)
class LugreRequest:
    """``jaxid lugre``: LuGre friction per axis of the friction experiment ``data`` (CSV), scored
    on ``validation``; ``method`` of ``jaxid.identification.lugre.identify_joints``, swarm
    ``seed``, ``rel_std`` above which a parameter is poorly determined, steady-state
    ``threshold`` (units/s), ``hold`` of the velocity between samples ("linear" or "zero")."""

    data: str
    validation: str | None = None
    method: Literal["full", "shape", "shape-log", "shape-article", "shape-article-once", "pso"] = "full"
    rel_std: float | None = None
    seed: int = 0
    threshold: float | None = None
    output: str | None = None
    json: str | None = None
    hold: Literal["linear", "zero"] = "linear"

    def __post_init__(self):
        if self.threshold is not None and not (math.isfinite(self.threshold) and self.threshold > 0):
            raise WorkflowError(f"--threshold must be a finite velocity > 0 units/s, got {self.threshold}")
        if self.rel_std is not None and not (math.isfinite(self.rel_std) and self.rel_std > 0):
            raise WorkflowError(f"--rel-std must be a finite ratio > 0 (0.05 = 5 %), got {self.rel_std}")
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``)."""
        inputs = [
            Arg("CSV", self.data, run="train", what="friction CSV"),
            Arg("--validation", self.validation, run="held-out", what="friction CSV"),
        ]
        return inputs, [Arg("-o", self.output), Arg("--json", self.json)]


@dataclass(frozen=True)
class ExciteRequest:
    """``jaxid excite``: an optimised Fourier excitation written to ``output`` (.csv/.npz, or a
    ROS 2 JointTrajectory .json). Optimiser: ``harmonics``, ``base_frequency`` Hz,
    ``objective`` (default cond; information with ``payload_design``), ``starts``, ``steps``,
    ``learning_rate``, ``margin``, ``seed``. Sampling: ``fs`` Hz, ``periods``. Poses (rad):
    ``home`` (default the range centres), ``start_from``. Constraints: ``clearance`` m,
    ``floor`` m (None: no floor; "auto", the default: 0, or none with a warning where that plane
    cuts the robot in every pose), ``workspace`` (6,) m, ``obstacles`` ((6,), ...) m, ``srdf``,
    ``capsule_radius`` m, ``jerk_max`` rad/s^3. ``payload``: the load carried (needed by
    ``payload_design``). ``torque_noise`` (N m, one value or one per joint; default 0.5 % of each
    joint's torque range along the trajectory, ``jaxid simulate``'s default) and ``payload_joints``
    (1-based, default all): the experiment the expected payload stds are computed for
    (``jaxid.identification.payload_design``)."""

    output: str
    model: ModelSpec = field(default_factory=lambda: ModelSpec(default_robot="ur5"))
    harmonics: int = 5
    base_frequency: float = 0.05
    objective: Literal["cond", "logdet", "information"] | None = None
    payload_design: bool = False
    payload: PayloadSpec = field(default_factory=PayloadSpec)
    starts: int = 8
    steps: int = 300
    learning_rate: float = 0.02
    margin: float = 0.05
    seed: int = 0
    fs: float = 100.0
    home: tuple[float, ...] | None = None
    start_from: tuple[float, ...] | None = None
    clearance: float = 0.02
    floor: float | str | None = "auto"
    workspace: tuple[float, ...] | None = None
    obstacles: tuple[tuple[float, ...], ...] = ()
    srdf: str | None = None
    capsule_radius: float = 0.05
    jerk_max: float | None = None
    allow_infeasible: bool = False
    periods: int = 1
    preview: str | None = None
    json: str | None = None
    torque_noise: tuple[float, ...] | None = None
    payload_joints: tuple[int, ...] | None = None

    def __post_init__(self):
        if not self.output.lower().endswith((".csv", ".npz", ".json")):
            raise WorkflowError(f"output {self.output!r} must end in .csv, .npz or .json")
        # Checked before the optimisation, which takes minutes, rather than after it.
        if not (math.isfinite(self.fs) and self.fs > 0):
            raise WorkflowError(f"--fs must be a finite sample rate > 0 Hz, got {self.fs}")
        if self.periods < 1:
            raise WorkflowError(f"--periods must be >= 1, got {self.periods}")
        self.model.no_fitted_vs()
        if self.srdf and not self.model.urdf:
            raise WorkflowError("--srdf names link pairs of a URDF; it needs --urdf PATH")
        if self.payload_design and self.payload.mass is None:
            # The load's own torque adds to the robot's: limits checked without it are not the run's.
            raise WorkflowError(
                "--payload: give the load's --payload-mass KG (and --payload-com X Y Z, m, in the "
                "flange frame), so that the torque limits are checked with it attached"
            )
        if (self.torque_noise is not None or self.payload_joints is not None) and not self.payload_design:
            raise WorkflowError("--torque-noise and --payload-joints describe the payload experiment: add --payload")
        if self.torque_noise is not None and not all(math.isfinite(v) and v > 0 for v in self.torque_noise):
            raise WorkflowError(f"--torque-noise must be finite numbers > 0 N m, got {self.torque_noise}")
        check_names(*self.paths())

    def paths(self) -> tuple[list[Arg], list[Arg]]:
        """(inputs, outputs) with their flags (``jaxid.workflow.paths``): a .csv/.npz trajectory
        has its sidecar OUT.json (base frequency and harmonics)."""
        outputs = [Arg("-o", self.output)]
        if not self.output.lower().endswith(".json"):
            outputs.append(sidecar("-o", self.output))
        outputs += [Arg("--json", self.json), Arg("--preview", self.preview)]
        return [*self.model.paths(), Arg("--srdf", self.srdf, what="SRDF")], outputs

    @property
    def chosen_objective(self) -> str:
        return self.objective or ("information" if self.payload_design else "cond")


#: ``jaxid export``'s formats (``jaxid.workflow.export_control.FORMATS``) and the suffixes that name one.
EXPORT_FORMATS = ("stablehlo", "numpy", "c")
EXPORT_SUFFIXES = {".py": "numpy", ".c": "c", ".stablehlo": "stablehlo", ".jaxexport": "stablehlo"}


@dataclass(frozen=True)
class ExportRequest:
    """``jaxid export``: the torque model of ``params`` (a params.json; the model from ``model``
    when it names one, else from the file) as a standalone artefact ``output`` a controller calls:
    ``format`` "stablehlo" (a serialised JAX export; ``batched``: of (N, n) arrays), "numpy" (a
    module needing only numpy) or "c" (a C99 file, function ``name``). Without ``format`` the
    output's suffix names it (.py, .c, .stablehlo, .jaxexport)."""

    params: str
    output: str
    format: str | None = None
    model: ModelSpec = field(default_factory=lambda: ModelSpec(joint_terms=()))
    batched: bool = False
    name: str = "tau"

    def __post_init__(self):
        suffix = os.path.splitext(self.output)[1].lower()
        fmt = self.format if self.format is not None else EXPORT_SUFFIXES.get(suffix)
        if fmt is None:
            raise WorkflowError(
                f"-o {self.output!r}: give --format ({', '.join(EXPORT_FORMATS)}) or a file ending in "
                + ", ".join(EXPORT_SUFFIXES)
            )
        if fmt not in EXPORT_FORMATS:
            raise WorkflowError(f"--format {fmt!r}: choose one of {', '.join(EXPORT_FORMATS)}")
        _set(self, "format", fmt)
        if self.batched and fmt != "stablehlo":
            raise WorkflowError(
                "--batched is for --format stablehlo (the numpy module takes (n,) or (..., n), the C function one sample)"
            )
        if fmt == "c" and not (self.name.isidentifier() and self.name.isascii()):
            raise WorkflowError(f"--name {self.name!r} is not a C identifier")

    @property
    def kind(self) -> str:
        """The artefact's format: ``format``, or the one the output's suffix names."""
        return str(self.format)
