"""The fault zoo: faults of real logs, files and library calls injected into one simulated log of a
URDF robot, each run as a user would (the CLI in-process, ``jaxid.cli.main``, or the library), and
the outcome classified (issue 36).

Setup (once): a 3-joint arm in a vertical plane written as a URDF (joint 1 works about +-pi, so an
encoder wrapping at +-pi shows), a Fourier trajectory from rest (0.05 Hz, 5 harmonics), and two runs
simulated (``jaxid simulate``: a perturbed true robot, friction, noise) at 100 Hz, 2001 samples
each: ``fit.csv`` (identified) and ``val.csv`` (held out, another trajectory of the same band). The clean fit (``jaxid identify
--urdf arm.urdf fit.csv``) gives the reference: its held-out relative torque error on ``val.csv``.

Each fault is a small function that writes its faulty input and returns an :class:`Outcome`; the
verdicts:

- ``error``: a non-zero exit (CLI) or an exception of jaxid's own kinds (library), with a one-line
  message;
- ``repaired``: exit 0 with a warning the clean run does not give, and the result right (an
  estimate within :data:`TOLERANCE` times the clean fit's held-out error; for a file fault, every
  file intact);
- ``correct``: exit 0, no new warning, the result right;
- ``warned-wrong``: exit 0, the result wrong, but a new warning was given;
- ``silent-wrong``: exit 0, the result wrong, no new warning;
- ``traceback``: an uncaught exception, or a traceback printed.

Several classes are made loud by sibling work on other branches (log plausibility; the output
guard; messages): on a branch without it they show here as silent-wrong, which is the point of the
table. Printed: one row per class (count, verdict counts) and the totals; ``--verbose`` prints each
fault's verdict and message. Run: ``PYTHONPATH=. .venv/bin/python benchmarks/fault_zoo.py
[--quick] [--classes a,b] [--verbose]``; ``--quick`` runs the first fault of each class. Last figures: ``benchmarks/README.md`` (row ``fault_zoo.py``).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import dataclasses
import io
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: A completed run's estimate is right when its held-out relative torque error is at most this many
#: times the clean fit's (the log zoo's 1.2, and a little room for a repair that drops samples).
TOLERANCE = 1.25

FS = 100.0  # Hz, the log's rate
F0 = 0.05  # Hz, the excitation's base frequency: one period is 20 s, 2001 samples
HARMONICS = 5
HOME = np.array([2.9, 0.15, -0.1])  # rad: joint 1 swings across +pi, joint 2 or 3 across 0 (encoder wraps show)

VERDICTS = ("error", "repaired", "correct", "warned-wrong", "silent-wrong", "traceback")


def _link(name: str, mass: float, length: float) -> str:
    """A URDF link: a slender box of ``length`` m along -z from its joint, ``mass`` kg."""
    w = 0.05
    ixx = mass * (length**2 + w**2) / 12
    izz = mass * 2 * w**2 / 12
    return (
        f'<link name="{name}"><inertial><origin xyz="0 0 {-length / 2:g}"/><mass value="{mass:g}"/>'
        f'<inertia ixx="{ixx:.6g}" ixy="0" ixz="0" iyy="{ixx:.6g}" iyz="0" izz="{izz:.6g}"/></inertial></link>'
    )


def _joint(name: str, parent: str, child: str, z: float, lower: float = -6.0, upper: float = 6.0) -> str:
    return (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 {z:g}"/><axis xyz="0 1 0"/>'
        f'<limit lower="{lower:g}" upper="{upper:g}" effort="100" velocity="3"/>'
        f'<dynamics damping="0.1" friction="0.2"/></joint>'
    )


def arm_urdf(*, extra: str = "", limits=None, links: str | None = None) -> str:
    """The zoo's 3-joint arm (joints about y, links hanging along -z: gravity acts on every joint)."""
    lim = limits or [(-6.0, 6.0)] * 3
    body = links if links is not None else _link("base", 2.0, 0.1) + _link("l1", 3.0, 0.6) + _link("l2", 2.0, 0.5)
    body += _link("l3", 1.0, 0.3) if links is None else ""
    joints = (
        _joint("shoulder", "base", "l1", 0.0, *lim[0])
        + _joint("elbow", "l1", "l2", -0.6, *lim[1])
        + _joint("wrist", "l2", "l3", -0.5, *lim[2])
    )
    return f'<?xml version="1.0"?>\n<robot name="arm3">{body}{joints}{extra}</robot>\n'


@dataclasses.dataclass
class Outcome:
    """What a fault's run did: ``code`` the exit status (CLI; None for a library call), ``exc`` an
    exception that escaped, ``err`` the stderr text, ``warned`` the warnings the clean run does not
    give, ``ok`` the case's own check of a completed run (True right, False wrong), ``note`` a line
    for --verbose."""

    code: int | None = None
    exc: BaseException | None = None
    err: str = ""
    warned: tuple[str, ...] = ()
    ok: bool | None = None
    note: str = ""


@dataclasses.dataclass
class Zoo:
    """The shared files and the clean reference."""

    work: Path
    urdf: Path
    fit: Path
    val: Path
    traj: Path
    clean_params: Path
    clean_error: float = float("nan")
    clean_std: np.ndarray | None = None
    baseline: frozenset = frozenset()  # warning lines of the clean run
    counter: int = 0

    def path(self, suffix: str) -> Path:
        """A fresh path in the work folder."""
        self.counter += 1
        return self.work / f"f{self.counter:03d}{suffix}"


# ------------------------------------------------------------------------------------ running
@contextlib.contextmanager
def denied(*paths):
    """``open`` of these paths (or of files below them) raises PermissionError, as for a user
    without the permission: tests and containers often run as root, whom chmod does not stop."""
    roots = [str(Path(p).resolve()) for p in paths]
    real = builtins.open

    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)):
            full = str(Path(os.fspath(file)).resolve())
            if any(full == r or full.startswith(r + os.sep) for r in roots):
                raise PermissionError(13, "Permission denied", os.fspath(file))
        return real(file, *args, **kwargs)

    builtins.open = guarded
    try:
        yield
    finally:
        builtins.open = real


def _warning_lines(err: str, caught) -> list[str]:
    lines = [ln.strip() for ln in err.splitlines() if ": warning:" in ln]
    return lines + [str(w.message).strip() for w in caught]


def cli(zoo: Zoo, argv: list[str], check: Callable[[], bool | None] | None = None) -> Outcome:
    """Run ``jaxid.cli.main(argv)`` in-process, stdout and stderr captured; a completed run (exit 0)
    is checked by ``check``."""
    from jaxid.cli import main

    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
        except BaseException as e:  # noqa: BLE001 - a traceback is a verdict here
            return Outcome(exc=e, err=err.getvalue() + traceback.format_exc())
    text = err.getvalue()
    warned = tuple(w for w in _warning_lines(text, caught) if _strip(w) not in zoo.baseline)
    if code != 0:
        return Outcome(code=code, err=text, warned=warned)
    try:
        ok = check() if check is not None else None
    except Exception as e:  # noqa: BLE001 - a check that cannot run means the result is unusable
        ok, text = False, text + f"\n(check failed: {type(e).__name__}: {e})"
    return Outcome(code=0, err=text, warned=warned, ok=ok)


def library(call: Callable[[], object], check: Callable[[object], bool] | None = None) -> Outcome:
    """Run a library call; an exception of jaxid's kinds (ValueError and its subclasses, OSError for
    a file) is an ``error``, any other a traceback; a returned value is checked by ``check``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except (ValueError, OSError) as e:
            return Outcome(code=1, err=f"{type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001
            return Outcome(exc=e, err=traceback.format_exc())
    warned = tuple(str(w.message) for w in caught if "overflow" not in str(w.message))  # numpy's own
    try:
        ok = check(value) if check is not None else False
    except Exception as e:  # noqa: BLE001
        return Outcome(code=0, warned=warned, ok=False, note=f"check failed: {e}")
    return Outcome(code=0, warned=warned, ok=ok)


def _strip(line: str) -> str:
    """A warning line without its 'jaxid CMD: warning: ' prefix (to compare across commands)."""
    return line.split(": warning: ", 1)[-1]


def classify(o: Outcome) -> str:
    """The verdict of an outcome (module docstring)."""
    if o.exc is not None or "Traceback (most recent call last)" in o.err:
        return "traceback"
    if o.code:
        return "error"
    if o.ok:
        return "repaired" if o.warned else "correct"
    return "warned-wrong" if o.warned else "silent-wrong"


def message(o: Outcome) -> str:
    """The line a user reads: the error line, else the first new warning."""
    if o.exc is not None:
        return f"{type(o.exc).__name__}: {o.exc}".splitlines()[0]
    lines = [ln for ln in o.err.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower()]
    if o.code and (errs or lines):
        return (errs or lines)[-1]
    return (o.warned[0] if o.warned else o.note or "").splitlines()[0] if (o.warned or o.note) else ""


# ------------------------------------------------------------------------------------ setup
def _trajectory(path: Path, seed: int = 0) -> None:
    """A Fourier series from rest about HOME, one period of 20 s, as ``jaxid excite`` writes it."""
    from jaxid import data

    c = np.random.default_rng(seed).uniform(-0.15, 0.15, (HARMONICS, 3))
    t = np.arange(int(FS / F0) + 1) / FS
    w = 2 * np.pi * F0 * np.arange(1, HARMONICS + 1)
    q = HOME + (1 - np.cos(np.outer(t, w))) @ c
    qd = (np.sin(np.outer(t, w)) * w) @ c
    qdd = (np.cos(np.outer(t, w)) * w**2) @ c
    ds = data.from_arrays(t, q, np.zeros_like(q), qd, qdd)
    data.write(dataclasses.replace(ds, base_frequency=F0, harmonics=HARMONICS), path)


def setup(work: Path) -> Zoo:
    """The URDF, the trajectory, the two simulated runs (sidecars removed: a robot's own log has
    none) and the clean fit."""
    from jaxid.cli import main

    work.mkdir(parents=True, exist_ok=True)
    urdf = work / "arm.urdf"
    urdf.write_text(arm_urdf())
    traj, held = work / "traj.csv", work / "traj_held_out.csv"
    _trajectory(traj, seed=0)
    _trajectory(held, seed=1)
    zoo = Zoo(work, urdf, work / "fit.csv", work / "val.csv", traj, work / "clean.json")
    for k, (path, motion) in enumerate(((zoo.fit, traj), (zoo.val, held))):
        argv = ["simulate", "--urdf", urdf, "--trajectory", motion, "-o", path, "--robot-seed", "0"]
        argv += ["--noise-seed", str(k), "--rate", str(FS), "--quiet"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main([str(a) for a in argv]) == 0, argv
        Path(str(path) + ".json").unlink(missing_ok=True)
    o = cli(zoo, identify(zoo, zoo.fit, out=zoo.clean_params))
    assert o.code == 0, o.err
    zoo.baseline = frozenset(_strip(w) for w in o.warned)
    zoo.clean_error = held_out_error(zoo, zoo.clean_params)
    zoo.clean_std = _std(zoo.clean_params)
    return zoo


def identify(zoo: Zoo, *files, out: Path | None = None, extra=()) -> list:
    return ["identify", "--urdf", zoo.urdf, *files, "-o", out or zoo.path(".json"), "--quiet", *extra]


def held_out_error(zoo: Zoo, params: Path) -> float:
    """Relative torque error (%) of params.json on the held-out run (``jaxid validate``'s figure)."""
    from jaxid.workflow.commands import ModelSpec, ValidateRequest, run_validate

    req = ValidateRequest(data=(str(zoo.val),), params=str(params), model=ModelSpec(urdf=str(zoo.urdf), joint_terms=()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(run_validate(req).validation.runs[0]["relative_error"])


def _std(params: Path) -> np.ndarray:
    p = json.loads(Path(params).read_text())
    return np.asarray(p["base_parameters"]["std"], dtype=float) if "base_parameters" in p else np.asarray(p["std"])


def estimate_ok(zoo: Zoo, params: Path) -> Callable[[], bool]:
    """The check of a fit: its held-out error within TOLERANCE of the clean fit's."""
    return lambda: held_out_error(zoo, params) <= TOLERANCE * zoo.clean_error


# ------------------------------------------------------------------------------------ faults
#: class name -> the faults of that class, each ``f(zoo) -> Outcome``.
CLASSES: dict[str, list[Callable[[Zoo], Outcome]]] = {}


def fault(name: str, variants=(None,)):
    """Register ``f(zoo, variant)`` as one fault per variant of class ``name``."""

    def register(f):
        CLASSES.setdefault(name, []).extend((lambda zoo, v=v: f(zoo, v)) for v in variants)
        return f

    return register


def _table(path: Path) -> tuple[list[str], np.ndarray]:
    lines = Path(path).read_text().splitlines()
    return lines[0].split(","), np.array([[float(x) for x in ln.split(",")] for ln in lines[1:]])


def _write(zoo: Zoo, header: list[str], rows: np.ndarray, suffix: str = ".csv") -> Path:
    path = zoo.path(suffix)
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(f"{x:.17g}" for x in r) for r in rows) + "\n")
    return path


def faulty_log(zoo: Zoo, change: Callable[[list[str], np.ndarray], np.ndarray], source: Path | None = None) -> Path:
    """A copy of fit.csv (or ``source``) with ``change(header, rows)`` applied."""
    header, rows = _table(source or zoo.fit)
    return _write(zoo, header, change(header, rows.copy()))


def fit_faulty(zoo: Zoo, path: Path, extra=()) -> Outcome:
    """identify on a faulty log; a completed fit is checked against the clean one."""
    out = zoo.path(".json")
    return cli(zoo, identify(zoo, path, out=out, extra=extra), estimate_ok(zoo, out))


def _col(header, name):
    return header.index(name)


# Units and signs -----------------------------------------------------------------------------
@fault("units q=deg on a rad log", variants=("fit", "val"))
def _q_deg(zoo, which):
    return fit_faulty(zoo, zoo.fit if which == "fit" else zoo.val, ["--units", "q=deg"])


@fault("units t=ms on a 100 Hz log", variants=("fit", "val"))
def _t_ms(zoo, which):
    return fit_faulty(zoo, zoo.fit if which == "fit" else zoo.val, ["--units", "t=ms"])


@fault("gains on a log in N m", variants=("32,32,32", "10,10,10", "1,1,32"))
def _gains(zoo, gains):
    return fit_faulty(zoo, zoo.fit, ["--gains", gains])


@fault("inverted sign: negative gain", variants=(0, 1, 2))
def _neg_gain(zoo, j):
    g = ["1", "1", "1"]
    g[j] = "-1"
    return fit_faulty(zoo, zoo.fit, ["--gains", ",".join(g)])


@fault("inverted sign: flipped channel", variants=(0, 1, 2))
def _flipped(zoo, j):
    def change(h, r):
        r[:, _col(h, f"tau{j + 1}")] *= -1
        return r

    return fit_faulty(zoo, faulty_log(zoo, change))


# Encoder faults -------------------------------------------------------------------------------
@fault("encoder spike +10 rad", variants=((0, 500), (1, 900), (2, 1500), (0, 1999)))
def _spike(zoo, where):
    j, k = where

    def change(h, r):
        r[k, _col(h, f"q{j + 1}")] += 10.0
        return r

    return fit_faulty(zoo, faulty_log(zoo, change))


class NotInjected(Exception):
    """A fault the setup's motion cannot hold (counted apart, not as a verdict)."""


def _wrapped(r, c):
    """The rows, checked to hold the fault: a step of more than pi in column c (else the motion does
    not cross the wrap and the fault would be no fault)."""
    if not np.abs(np.diff(r[:, c])).max() > np.pi:
        raise NotInjected("the motion does not cross the wrap (--home)")
    return r


@fault("encoder wrap at +-pi", variants=("fit", "val"))
def _wrap(zoo, which):
    def change(h, r):
        c = _col(h, "q1")  # joint 1 swings across +pi
        r[:, c] = np.angle(np.exp(1j * r[:, c]))
        return _wrapped(r, c)

    return fit_faulty(zoo, faulty_log(zoo, change, zoo.fit if which == "fit" else zoo.val))


@fault("encoder wrap at 0 (0..2pi encoder)", variants=(1, 2))
def _wrap0(zoo, j):
    def change(h, r):
        c = _col(h, f"q{j + 1}")
        r[:, c] = np.mod(r[:, c], 2 * np.pi)
        return _wrapped(r, c)

    return fit_faulty(zoo, faulty_log(zoo, change))


@fault("10 s gap bridged by --max-gap 20", variants=(300, 800, 1000))
def _gap(zoo, start):
    return fit_faulty(
        zoo,
        faulty_log(zoo, lambda h, r: np.delete(r, np.s_[start : start + 1000], axis=0)),
        ["--resample", "--max-gap", "20"],
    )


# Stale context --------------------------------------------------------------------------------
@fault("stale sidecar next to a replaced log", variants=(0.1, 0.15))
def _stale(zoo, f0):
    """The sidecar of an earlier excitation (base frequency f0: 2 or 3 "periods" in the 20 s log)
    left next to a log of another motion, which is not periodic at f0."""
    path = faulty_log(zoo, lambda h, r: r, zoo.val)
    Path(str(path) + ".json").write_text(json.dumps({"base_frequency": f0, "harmonics": HARMONICS}))
    return fit_faulty(zoo, path)


@fault("payload without --params or --unloaded", variants=(2.0, 0.5))
def _payload(zoo, mass):
    from jaxid.cli import main

    loaded = zoo.path(".csv")
    argv = ["simulate", "--urdf", zoo.urdf, "--trajectory", zoo.traj, "-o", loaded, "--robot-seed", "0"]
    argv += ["--noise-seed", "5", "--rate", str(FS), "--payload-mass", str(mass), "--quiet"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([str(a) for a in argv]) == 0
    Path(str(loaded) + ".json").unlink(missing_ok=True)
    out = zoo.path(".json")

    def check():
        est = json.loads(out.read_text())
        m = est["estimate"][0] if isinstance(est.get("estimate"), list) else est["payload"]["mass"]
        return abs(float(m) - mass) <= 0.1 * mass

    return cli(zoo, ["payload", "--urdf", zoo.urdf, loaded, "-o", out, "--quiet"], check)


# Files that clobber each other ------------------------------------------------------------------
def _intact(*files: tuple[Path, bytes]) -> Callable[[], bool]:
    """The check of a file fault: each given file still holds its bytes."""
    return lambda: all(p.exists() and p.read_bytes() == b for p, b in files)


def _kept(path: Path) -> tuple[Path, bytes]:
    return path, path.read_bytes()


@fault("clobbering outputs", variants=("urdf-out", "json", "mapping", "reference", "truth", "excite-json"))
def _clobber(zoo, pair):
    """Two paths of one command that are the same file: -o onto --urdf-out, --json, --mapping or
    --reference; simulate's --truth onto -o; excite's --json onto its own sidecar. Right: refused,
    or both written intact (impossible), so a completed run is wrong."""
    out = zoo.path(".json")
    if pair == "urdf-out":
        out = zoo.path(".urdf")  # --urdf-out must end in .urdf; -o takes any name
        argv = identify(zoo, zoo.fit, out=out, extra=["--consistent", "--urdf-out", out])
    elif pair == "json":
        argv = identify(zoo, zoo.fit, out=out, extra=["--json", out])
    elif pair == "mapping":
        out.write_text(json.dumps({"units": {"q": "rad"}}))
        argv = identify(zoo, zoo.fit, out=out, extra=["--mapping", out])
    elif pair == "reference":
        ref = zoo.path(".csv")
        shutil.copy(zoo.traj, ref)
        argv = identify(zoo, zoo.fit, out=ref, extra=["--method", "iv", "--reference", ref])
    elif pair == "truth":
        sim = zoo.path(".csv")
        argv = ["simulate", "--urdf", zoo.urdf, "--trajectory", zoo.traj, "-o", sim, "--truth", sim, "--quiet"]
    else:
        traj = zoo.path(".csv")
        # (the built-in planar2: no collision geometry to compile, the file fault is the same)
        argv = ["excite", "--robot", "planar2", "-o", traj, "--json", str(traj) + ".json", "--starts", "1"]
        argv += ["--steps", "2", "--harmonics", "2", "--base-frequency", "0.2", "--allow-infeasible", "--quiet"]
    return cli(zoo, argv, lambda: False)


@fault("read-only target replaced", variants=("-o", "--urdf-out"))
def _read_only(zoo, flag):
    target = zoo.path(".json" if flag == "-o" else ".urdf")
    target.write_text("{}" if flag == "-o" else arm_urdf())
    target.chmod(0o444)
    kept = _kept(target)
    extra = ["--consistent", "--urdf-out", target] if flag == "--urdf-out" else []
    out = target if flag == "-o" else zoo.path(".json")
    try:
        return cli(zoo, identify(zoo, zoo.fit, out=out, extra=extra), _intact(kept))
    finally:
        target.chmod(0o644)


@fault("same data file twice", variants=("same path", "another spelling", "a copy"))
def _twice(zoo, how):
    other = zoo.fit if how == "same path" else f"{zoo.fit.parent}/./{zoo.fit.name}"
    if how == "a copy":
        other = zoo.path(".csv")
        shutil.copyfile(zoo.fit, other)
    out = zoo.path(".json")
    return cli(zoo, identify(zoo, zoo.fit, other, out=out), lambda: bool(np.all(_std(out) > 0.8 * zoo.clean_std)))


@fault("training file as --validate-on")
def _train_validate(zoo, _):
    out = zoo.path(".json")
    return cli(zoo, identify(zoo, zoo.fit, out=out, extra=["--consistent", "--validate-on", zoo.fit]), lambda: False)


# Written models --------------------------------------------------------------------------------
def _loadable(path: Path) -> bool:
    """A written URDF as the standard tools need it: every <limit> with its attributes (urdfdom
    requires effort and velocity; Pinocchio reads lower/upper), friction kept in <dynamics>, and
    Pinocchio (when installed) builds a model of it."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    for j in root.iter("joint"):
        lim = j.find("limit")
        if j.get("type") in ("revolute", "prismatic") and (
            lim is None or not {"effort", "velocity"} <= set(lim.attrib)
        ):
            return False
        if j.get("type") != "fixed" and j.find("dynamics") is None:
            return False
    try:
        import pinocchio
    except ImportError:
        return True
    pinocchio.buildModelFromUrdf(str(path))
    return True


@fault("written URDF loadable by urdfdom/Pinocchio", variants=("builtin", "dh"))
def _written(zoo, source):
    out, urdf = zoo.path(".json"), zoo.path(".urdf")
    if source == "builtin":
        model = ["--robot", "planar3"]
    else:
        dh = zoo.path(".toml")
        row = "[[joint]]\ndh = [0, 0, 1, 0]\nmass = 1\ncom = [-0.5, 0, 0]\ninertia = [0.01, 0, 0, 0.08, 0, 0.08]\n"
        dh.write_text('convention = "standard"\ngravity = [0, -9.81, 0]\n' + row * 3)
        model = ["--dh", dh]
    sim = zoo.path(".csv")
    from jaxid.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(
            [str(a) for a in ["simulate", *model, "--trajectory", zoo.traj, "-o", sim, "--robot-seed", "0", "--quiet"]]
        )
    if code:
        return Outcome(code=code, err=f"(setup: simulate {model[0]} failed)")
    argv = ["identify", *model, sim, "-o", out, "--consistent", "--urdf-out", urdf, "--quiet"]
    return cli(zoo, argv, lambda: _loadable(urdf))


@fault("duplicate <inertial> in a link", variants=("read", "identify"))
def _dup_inertial(zoo, how):
    stale = '<inertial><mass value="9"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    text = arm_urdf().replace('<link name="l2">', f'<link name="l2">{stale}', 1)
    urdf = zoo.path(".urdf")
    urdf.write_text(text)
    if how == "read":
        import jaxid

        return library(lambda: jaxid.Robot.from_urdf(str(urdf)), lambda r: False)
    out = zoo.path(".json")
    return cli(zoo, ["identify", "--urdf", urdf, zoo.fit, "-o", out, "--quiet"], lambda: False)


# Crashes ---------------------------------------------------------------------------------------
@fault("model or input path is a directory", variants=("identify --urdf", "simulate --urdf", "lugre input"))
def _directory(zoo, how):
    folder = zoo.path(".urdf")
    folder.mkdir()
    if how == "lugre input":
        return cli(zoo, ["lugre", folder, "-o", zoo.path(".json"), "--quiet"], lambda: False)
    if how == "simulate --urdf":
        return cli(zoo, ["simulate", "--urdf", folder, "--trajectory", zoo.traj, "-o", zoo.path(".csv")], lambda: False)
    return cli(zoo, ["identify", "--urdf", folder, zoo.fit, "-o", zoo.path(".json"), "--quiet"], lambda: False)


@fault("unreadable file", variants=("--urdf", "data", "lugre input"))
def _unreadable(zoo, what):
    target = zoo.path(".urdf" if what == "--urdf" else ".csv")
    shutil.copy(zoo.urdf if what == "--urdf" else zoo.fit, target)
    target.chmod(0o000)
    try:
        with denied(target):
            if what == "lugre input":
                return cli(zoo, ["lugre", target, "-o", zoo.path(".json"), "--quiet"], lambda: False)
            urdf = target if what == "--urdf" else zoo.urdf
            data = zoo.fit if what == "--urdf" else target
            return cli(zoo, ["identify", "--urdf", urdf, data, "-o", zoo.path(".json"), "--quiet"], lambda: False)
    finally:
        target.chmod(0o644)


@fault("report into a read-only folder or onto a file", variants=("read-only folder", "existing file"))
def _report(zoo, how):
    target = zoo.path("")
    out = zoo.path(".json")
    if how == "existing file":
        target.write_text("notes\n")
        kept = _kept(target)
        return cli(zoo, identify(zoo, zoo.fit, out=out, extra=["--report", target]), _intact(kept))
    target.mkdir()
    target.chmod(0o555)
    try:
        with denied(target):
            return cli(zoo, identify(zoo, zoo.fit, out=out, extra=["--report", target]), lambda: False)
    finally:
        target.chmod(0o755)


# Library ---------------------------------------------------------------------------------------
ESTIMATORS = ("ols", "wls", "irls", "ridge", "tls", "streamed")


def _rows(zoo: Zoo):
    """(robot, base, W_b (N*n, b), tau (N*n,)) of the clean fit log, with exact derivatives from
    the trajectory: the library's own inputs. Cached on the zoo."""
    cached = getattr(zoo, "_rows_cache", None)
    if cached is not None:
        return cached
    import jaxid
    from jaxid import data

    robot = jaxid.Robot.from_urdf(str(zoo.urdf))
    base = jaxid.base_parameters(robot)
    traj = data.read(zoo.traj, derivatives=None)
    _, rows = _table(zoo.fit)
    q, qd, qdd = (np.asarray(x)[::4] for x in (traj.q, traj.qd, traj.qdd))
    tau = rows[::4, 4:7]
    W = np.asarray(base.reduce(jaxid.stack(jaxid.regressor(robot, q, qd, qdd))))
    zoo._rows_cache = (robot, base, W, tau.reshape(-1))  # type: ignore[attr-defined]
    return zoo._rows_cache  # type: ignore[attr-defined]


def _estimate(W, tau, method):
    import jaxid
    from jaxid.identification import streaming

    if method == "streamed":
        return streaming.fit(streaming.from_rows(W, tau, 3), "ols")
    return jaxid.identify(W, tau, method, n_joints=3)


def _finite_and_spread(fit) -> bool:
    """A returned fit is right only with a finite estimate and a positive spread."""
    return bool(np.all(np.isfinite(np.asarray(fit.theta))) and np.all(np.asarray(fit.std) > 0))


@fault("zero torque (library estimators)", variants=ESTIMATORS)
def _zero(zoo, method):
    _, _, W, tau = _rows(zoo)
    return library(lambda: _estimate(W, np.zeros_like(tau), method), lambda fit: False)


@fault("non-finite torque (library estimators)", variants=[(m, v) for m in ESTIMATORS for v in (np.nan, np.inf)])
def _nonfinite(zoo, what):
    method, value = what
    _, _, W, tau = _rows(zoo)
    bad = tau.copy()
    bad[101] = value
    return library(lambda: _estimate(W, bad, method), _finite_and_spread)


@fault("one torque of 1e200 (library estimators)", variants=ESTIMATORS)
def _absurd(zoo, method):
    _, _, W, tau = _rows(zoo)
    bad = tau.copy()
    bad[77] = 1e200
    clean = _estimate(W, tau, "ols").theta

    def close(fit):
        theta = np.asarray(fit.theta)
        return bool(np.all(np.isfinite(theta)) and np.linalg.norm(theta - clean) <= 0.05 * np.linalg.norm(clean))

    return library(lambda: _estimate(W, bad, method), close)


@fault("one torque of 1e200 in a log (CLI)", variants=(0, 2))
def _absurd_cli(zoo, j):
    def change(h, r):
        r[777, _col(h, f"tau{j + 1}")] = 1e200
        return r

    return fit_faulty(zoo, faulty_log(zoo, change))


@fault("zero torque in a log (CLI)")
def _zero_cli(zoo, _):
    def change(h, r):
        r[:, 4:7] = 0.0
        return r

    return fit_faulty(zoo, faulty_log(zoo, change))


@fault("identify_consistent on zero torque", variants=("rows", "reduced"))
def _consistent_zero(zoo, how):
    import jaxid
    from jaxid.identification import streaming
    from jaxid.identification.consistent import identify_consistent

    robot, base, _, tau = _rows(zoo)
    traj_q = np.asarray(_table(zoo.traj)[1][::8, 1:4])
    Y = jaxid.stack(jaxid.regressor(robot, traj_q, 0 * traj_q, 0 * traj_q + 0.1))
    zero = np.zeros(Y.shape[0])
    if how == "rows":
        call = lambda: identify_consistent(robot, Y, zero, max_steps=50)  # noqa: E731
    else:
        call = lambda: identify_consistent(  # noqa: E731
            robot, reduced=streaming.from_rows(np.asarray(base.reduce(Y)), zero, 3), max_steps=50
        )
    return library(call, lambda fit: not bool(fit.valid))


@fault("forward dynamics of a massless model", variants=("one sample", "batch", "all links massless"))
def _massless(zoo, how):
    import dataclasses as dc

    import jaxid

    robot = _rows(zoo)[0]
    links = [2] if how != "all links massless" else [0, 1, 2]
    inertial = np.asarray(robot.inertial).copy()
    inertial[links] = 0.0
    model = dc.replace(robot, inertial=inertial)
    shape = (3,) if how == "one sample" else (4, 3)
    return library(
        lambda: jaxid.forward_dynamics(model, np.zeros(shape), np.zeros(shape), np.ones(shape)),
        lambda qdd: bool(np.all(np.isfinite(np.asarray(qdd)))),
    )


@fault("inverted joint limits", variants=("Robot", "URDF read", "identify --urdf"))
def _inverted(zoo, how):
    import dataclasses as dc

    import jaxid

    if how == "Robot":
        robot = _rows(zoo)[0]
        return library(lambda: dc.replace(robot, q_min=np.array([-1.0, 1.0, -1.0]), q_max=np.array([1, -1, 1.0])))
    urdf = zoo.path(".urdf")
    urdf.write_text(arm_urdf(limits=[(-6, 6), (2, -2), (-6, 6)]))
    if how == "URDF read":
        return library(lambda: jaxid.Robot.from_urdf(str(urdf)))
    return cli(zoo, ["identify", "--urdf", urdf, zoo.fit, "-o", zoo.path(".json"), "--quiet"], lambda: False)


@fault("detached links in a URDF", variants=("cycle: read", "cycle: identify", "loose link: read"))
def _detached(zoo, how):
    import jaxid

    extra = (
        _link("ghost_a", 1.0, 0.2)
        + _link("ghost_b", 1.0, 0.2)
        + _joint("ghost_1", "ghost_a", "ghost_b", -0.2)
        + _joint("ghost_2", "ghost_b", "ghost_a", -0.2)
        if how.startswith("cycle")
        else _link("ghost", 1.0, 0.2)
    )
    urdf = zoo.path(".urdf")
    urdf.write_text(arm_urdf(extra=extra))
    if how.endswith("read"):
        return library(lambda: jaxid.Robot.from_urdf(str(urdf)), lambda r: False)
    return cli(zoo, ["identify", "--urdf", urdf, zoo.fit, "-o", zoo.path(".json"), "--quiet"], lambda: False)


@fault(
    "run_study bad arguments",
    variants=(
        "5 sigmas for 6 joints (n_joints)",
        "5 sigmas for 6 joints (3-D W)",
        "5 sigmas, no joint count",
        "2.7 runs",
        "True runs",
    ),
)
def _study(zoo, how):
    from jaxid.study import run_study

    W = np.random.default_rng(0).normal(size=(120 * 6, 4))
    theta, sigma, runs, kw = np.ones(4), np.full(5, 0.1), 8, {}
    if how.endswith("(n_joints)"):
        kw = dict(n_joints=6)
    elif how.endswith("(3-D W)"):
        W = W.reshape(120, 6, 4)
    elif how == "2.7 runs":
        sigma, runs = np.full(6, 0.1), 2.7
    elif how == "True runs":
        sigma, runs = np.full(6, 0.1), True
    return library(lambda: run_study(W, theta, sigma, runs, **kw), lambda s: False)


@fault("bad NPZ file", variants=("not a zip", "object array (pickle)", "truncated"))
def _npz(zoo, how):
    path = zoo.path(".npz")
    if how == "not a zip":
        path.write_bytes(b"t,q1\n0,1\n")
    elif how == "object array (pickle)":
        np.savez(path, t=np.arange(3.0), q=np.array([{"a": 1}] * 3, dtype=object), tau=np.zeros((3, 3)))
    else:
        good = zoo.path(".npz")
        _, rows = _table(zoo.fit)
        np.savez(good, t=rows[:, 0], q=rows[:, 1:4], tau=rows[:, 4:7])
        path.write_bytes(good.read_bytes()[:-200])
    return cli(zoo, ["identify", "--urdf", zoo.urdf, path, "-o", zoo.path(".json"), "--quiet"], lambda: False)


@fault("placeholder joint range lower = upper = 0 (excite)")
def _placeholder(zoo, _):
    urdf = zoo.path(".urdf")
    urdf.write_text(arm_urdf(limits=[(0, 0), (0, 0), (-6, 6)]))
    argv = [
        "excite",
        "--urdf",
        urdf,
        "-o",
        zoo.path(".csv"),
        "--starts",
        "1",
        "--steps",
        "2",
        "--floor",
        "none",
        "--quiet",
    ]
    return cli(zoo, argv, lambda: False)


@fault("interrupt (Ctrl-C) while drawing the report")
def _interrupt(zoo, _):
    from jaxid import report

    draw = report.torque_figure  # the first figure of a report: the Ctrl-C lands while drawing

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    report.torque_figure = interrupted
    try:
        o = cli(zoo, identify(zoo, zoo.fit, extra=["--report", zoo.path("")]), lambda: False)
    finally:
        report.torque_figure = draw
    if o.code == 130:  # the shell's code for SIGINT: the right answer
        o.code, o.ok = 0, True
    return o


@fault("warnings under PYTHONWARNINGS=ignore", variants=("spike", "gains"))
def _ignored(zoo, how):
    """A fault that warns (when it does), run with every warning filtered out as lab scripts do:
    right when the warning still reaches the user (stderr)."""
    if how == "spike":

        def change(h, r):
            r[500, _col(h, "q1")] += 10.0
            return r

        path, extra = faulty_log(zoo, change), []
    else:
        path, extra = zoo.fit, ["--gains", "32,32,32"]
    out = zoo.path(".json")
    from jaxid.cli import main

    err = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in identify(zoo, path, out=out, extra=extra)])
            except BaseException as e:  # noqa: BLE001
                return Outcome(exc=e, err=traceback.format_exc())
    text = err.getvalue()
    return Outcome(code=code, err=text, ok=": warning:" in text or code != 0)


# ------------------------------------------------------------------------------------ main
def run(zoo: Zoo, classes: list[str], quick: bool, verbose: bool) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for name in classes:
        counts = dict.fromkeys(VERDICTS, 0)
        for k, f in enumerate(CLASSES[name][:1] if quick else CLASSES[name]):
            start = time.perf_counter()
            try:
                o = f(zoo)
            except NotInjected as e:
                print(f"  {name} #{k}: not injected: {e}", flush=True)
                continue
            v = classify(o)
            counts[v] += 1
            if verbose:
                print(f"  {name} #{k}: {v} ({time.perf_counter() - start:.1f} s) {message(o)[:240]}", flush=True)
        table[name] = counts
        row = "".join(f"{counts[v]:>13d}" for v in VERDICTS)
        print(f"{name[:52]:52s} {sum(counts.values()):>5d}{row}", flush=True)
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the first fault of each class")
    ap.add_argument("--classes", default=None, help="comma-separated substrings of class names")
    ap.add_argument("--verbose", action="store_true", help="each fault's verdict and message")
    ap.add_argument("--work", default=None, help="folder for the files (default: a temporary one)")
    ap.add_argument(
        "--home",
        default=None,
        help="the motion's centre, rad, e.g. 2.6,0.4,-0.3 (another pose, other gravity loads: the checks must "
        "not depend on the one pose; the wrap faults need joint 1 to cross pi and joints 2, 3 to cross 0)",
    )
    args = ap.parse_args(argv)
    if args.home:
        global HOME
        HOME = np.array([float(x) for x in args.home.split(",")])
    work = Path(args.work or tempfile.mkdtemp(prefix="fault_zoo_"))
    start = time.perf_counter()
    zoo = setup(work)
    print(f"setup: {time.perf_counter() - start:.0f} s; clean fit's held-out error {zoo.clean_error:.3g} %")
    names = list(CLASSES)
    if args.classes:
        keys = [k.strip() for k in args.classes.split(",")]
        names = [n for n in names if any(k in n for k in keys)]
    print(f"{'class':52s} {'count':>5s}" + "".join(f"{v:>13s}" for v in VERDICTS))
    table = run(zoo, names, args.quick, args.verbose)
    total = {v: sum(t[v] for t in table.values()) for v in VERDICTS}
    print(
        f"{'total (' + str(len(table)) + ' classes)':52s} {sum(total.values()):>5d}"
        + "".join(f"{total[v]:>13d}" for v in VERDICTS)
    )
    print(f"time: {time.perf_counter() - start:.0f} s")
    return int(total["silent-wrong"] + total["traceback"] > 0)


if __name__ == "__main__":
    sys.exit(main())
