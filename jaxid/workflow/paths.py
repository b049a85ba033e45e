"""The output guard: every input and output path of a command, checked before any work.

Each request ([`jaxid.workflow.requests`][jaxid.workflow.requests]) lists its paths as [`Arg`][jaxid.workflow.paths.Arg] records, each
with the flag that gave it (``-o``, ``--urdf-out``, ``DATA``, ...), through its ``paths()``
method. Two checks run on them:

- [`check_names`][jaxid.workflow.paths.check_names], when the request is made (its ``__post_init__``): no two outputs are
  the same file (``-o`` and ``--json``, simulate's ``--truth`` and ``-o``, ``--json`` onto
  excite's sidecar ``OUT.json``, a file inside a ``--report`` folder), no output is one of the
  inputs (a data file, its sidecar, the model file, ``--params``), and no data file is given
  twice (stacked with itself its std shrinks by sqrt(2) with no new information; a held-out
  run that is the training run scores the fit on its own data).
- [`check_files`][jaxid.workflow.paths.check_files], at the start of the command (``jaxid.workflow.commands``): every input
  that exists is a readable file (a ROS 2 bag folder where a data file is expected), every
  output can be written: its folder exists and is writable, it is not a folder, and an
  existing file there is not read-only (jaxid never replaces a file its owner made read-only,
  although a rename over it would succeed); an output folder (``--report DIR``) is a folder or
  can be created.

Paths are compared as files, not as strings: two existing paths are the same when they are the
same inode (symlinks, hard links, ``./a.csv`` and ``a.csv``), others after
``os.path.realpath``. Every refusal is one [`jaxid.workflow.WorkflowError`][jaxid.workflow.records.WorkflowError] line naming
both flags and the path. Only [`check_files`][jaxid.workflow.paths.check_files] reads content, and only of two runs of the same
size: a run copied under another name (``cp run.csv run2.csv``) is the same run twice.
"""

from __future__ import annotations

import filecmp
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from jaxid.workflow import WorkflowError

__all__ = ["Arg", "check", "check_files", "check_names", "data_args", "same_file", "sidecar"]


@dataclass(frozen=True)
class Arg:
    """One path of a command. ``flag``: how the user gave it (``-o``, ``--urdf``, ``DATA``).
    ``kind``: ``"file"``, ``"data"`` (an input that may also be a ROS 2 bag folder) or
    ``"folder"`` (an output folder). ``run``: an input that is a run of measurements,
    ``"train"`` or ``"held-out"``: no run may be given twice, nor a training run as a held-out
    one. ``contents``: the names an output folder receives (``report.html``, ...), which no
    other output may be. ``must_exist``: an input the command reads only late
    (``--reference``): its absence is refused here too. ``what``: the kind of file an input is,
    for its message ("URDF", "params.json")."""

    flag: str
    path: str | None
    kind: Literal["file", "data", "folder"] = "file"
    run: Literal["train", "held-out"] | None = None
    contents: tuple[str, ...] = ()
    must_exist: bool = False
    what: str = "input"

    @property
    def given(self) -> bool:
        return self.path is not None and str(self.path) not in ("", "-")


def data_args(
    flag: str, paths: Iterable[str | None] | None, run: Literal["train", "held-out"] | None = "train"
) -> list[Arg]:
    """The [`Arg`][jaxid.workflow.paths.Arg] of each data file of ``flag`` (a run, ``run``) and of each one's sidecar
    ``FILE.json`` (an input too: an output over it would replace the excitation and model it
    records)."""
    out = []
    for p in paths or ():
        if p is not None:
            out.append(Arg(flag, p, "data", run))
            out.append(sidecar(flag, p))
    return out


def sidecar(flag: str, path: str) -> Arg:
    """The sidecar ``PATH.json`` of the data file ``path`` of ``flag`` (``jaxid.data``)."""
    return Arg(f"the sidecar of {flag} {path!r}", f"{path}.json")


def _key(path) -> tuple:
    """The identity of a file: (device, inode) when it exists, else its resolved path."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("inode", st.st_dev, st.st_ino)


def same_file(a, b) -> bool:
    """Whether the paths ``a`` and ``b`` name the same file (symlinks, hard links and relative
    paths resolved)."""
    return _key(a) == _key(b)


def _shown(arg: Arg) -> str:
    if arg.flag.startswith("the sidecar of "):
        return arg.flag  # the flag names the file it belongs to
    return f"{arg.flag} {str(arg.path)!r}"


def _pair(a: Arg, b: Arg) -> str:
    """'-o and --json are the same file 'x'', 'DATA 'x' is given twice' or, when spelled
    differently, both spellings."""
    if str(a.path) == str(b.path) and a.flag == b.flag:
        return f"{_shown(a)} is given twice"
    if str(a.path) == str(b.path):
        return f"{a.flag} and {b.flag} are the same file {str(a.path)!r}"
    return f"{_shown(a)} and {_shown(b)} are the same file"


def check_names(inputs: Iterable[Arg], outputs: Iterable[Arg]) -> None:
    """Refuse (WorkflowError) two outputs that are the same file (or a file inside an output
    folder that the folder receives), an output that is an input, and a data file given twice
    or as both a training and a held-out run. None and '-' (stdout) are skipped."""
    inputs = [a for a in inputs if a.given]
    outputs = [a for a in outputs if a.given]
    files: list[tuple[tuple, Arg]] = []
    for o in outputs:
        twice = next((name for k, name in enumerate(o.contents) if name in o.contents[:k]), None)
        if twice is not None:
            raise WorkflowError(
                f"{_shown(o)} would receive two files named {twice!r}, one over the other (inputs with the same "
                "file name in different folders); give the inputs different names"
            )
        files.append((_key(o.path), o))
        files += [(_key(os.path.join(str(o.path), name)), o) for name in o.contents]
    seen: dict[tuple, Arg] = {}
    for key, o in files:
        other = seen.get(key)
        if other is not None and other.kind == o.kind == "folder" and key == _key(o.path) == _key(other.path):
            continue  # two output folders may be one folder: what they receive is compared
        if other is not None and other is not o:
            if other.kind == "folder" or o.kind == "folder":
                folder, file = (other, o) if other.kind == "folder" else (o, other)
                raise WorkflowError(
                    f"{_shown(file)} is a file that {_shown(folder)} writes: one would overwrite the other; "
                    "give each output its own path"
                )
            raise WorkflowError(f"{_pair(other, o)}: one would overwrite the other; give each output its own path")
        seen[key] = o
    for o in outputs:
        for i in inputs:
            if o.kind == "folder" and not os.path.isdir(str(i.path)):
                continue  # a folder given as an existing file: check_files says so
            if _key(o.path) == _key(i.path):
                raise WorkflowError(
                    f"{_shown(o)} is {_shown(i) if 'sidecar' in i.flag else 'the input file of ' + _shown(i)}; "
                    "writing it would destroy the data: choose another output path"
                )
    runs: dict[tuple, Arg] = {}
    for i in inputs:
        if i.run is None:
            continue
        first = runs.setdefault(_key(i.path), i)
        if first is i:
            continue
        if first.run != i.run:
            train, held = (first, i) if i.run == "held-out" else (i, first)
            raise WorkflowError(
                f"{_shown(held)} is the training file {_shown(train)}: a held-out score needs a run the fit "
                "did not use; give another run"
            )
        if first.flag == i.flag:
            raise WorkflowError(
                f"{_pair(first, i)}: a run stacked with itself counts its samples twice (the std shrinks by "
                "sqrt(2) with no new information); give each run once"
            )
        raise WorkflowError(f"{_pair(first, i)}: they must be two different runs; give the other run")


def _writable_dir(path: str) -> bool:
    """Whether files may be made in the folder ``path``: os.access, and its mode bits, since as
    root os.access says yes to a folder its owner made read-only (chmod a-w), which jaxid respects
    as it does a read-only file."""
    return os.access(path, os.W_OK | os.X_OK) and bool(os.stat(path).st_mode & 0o222)


def _writable_file(arg: Arg, path: str) -> None:
    """An output file: not a folder, in a writable folder, not an existing read-only file."""
    if os.path.isdir(path):
        raise WorkflowError(f"{arg.flag} {path}: is a directory; give the name of a file to write")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise WorkflowError(f"{arg.flag} {path}: cannot write: directory '{parent}' does not exist")
    if not os.path.isdir(parent):
        raise WorkflowError(f"{arg.flag} {path}: cannot write: '{parent}' is not a directory")
    if not _writable_dir(parent):
        raise WorkflowError(
            f"{arg.flag} {path}: cannot write: directory '{parent}' is not writable (permission denied)"
        )
    _not_read_only(arg, path)


def _not_read_only(arg: Arg, path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    # The mode bits, not only os.access: as root every file is "writable", and an atomic write
    # renames over the file, which needs only the folder's permission.
    if not stat.S_ISDIR(mode) and (not mode & 0o222 or not os.access(path, os.W_OK)):
        raise WorkflowError(
            f"{arg.flag} {path}: the file is read-only; jaxid does not replace a read-only file: make it "
            "writable (chmod u+w) or choose another path"
        )


def _writable_folder(arg: Arg) -> None:
    """An output folder: a writable folder, or one that can be created (its nearest existing
    ancestor is a writable folder); the files it receives not read-only."""
    path = str(arg.path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise WorkflowError(f"{arg.flag} {path!r} is a file, not a folder; give a folder for the outputs")
    if os.path.isdir(path):
        if not _writable_dir(path):
            raise WorkflowError(
                f"{arg.flag} {path!r}: the folder is read-only (permission denied): make it writable "
                "(chmod u+w) or choose another folder"
            )
        for name in arg.contents:
            _not_read_only(arg, os.path.join(path, name))
        return
    ancestor = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise WorkflowError(f"{arg.flag} {path!r}: cannot create the folder: '{ancestor}' is a file")
    if not _writable_dir(ancestor):
        raise WorkflowError(
            f"{arg.flag} {path!r}: cannot create the folder: '{ancestor}' is not writable (permission denied)"
        )


def _readable(arg: Arg) -> None:
    """An input that exists: a file that can be opened (a folder only where a data file, which
    may be a ROS 2 bag folder, is expected; its reader checks it)."""
    path = str(arg.path)
    if not os.path.exists(path):
        if arg.must_exist:
            raise WorkflowError(f"{arg.flag}: no such file {path!r}")
        return  # the reader names a missing file in its own words
    if os.path.isdir(path):
        if arg.kind == "data":
            return
        raise WorkflowError(f"{arg.flag} {path}: is a directory, not a {arg.what} file; give the file itself")
    if not os.path.isfile(path):
        return  # a pipe or device: opening it here could block; its reader decides
    try:
        open(path, "rb").close()
    except OSError as e:
        why = "permission denied" if isinstance(e, PermissionError) else (e.strerror or str(e))
        raise WorkflowError(f"{arg.flag} {path!r}: cannot read the file ({why})") from None


def _copies(runs: list[Arg]) -> None:
    """Refuse two runs (regular files) with the same bytes: a copy under another name is the
    same run given twice ([`check_names`][jaxid.workflow.paths.check_names] compares only the files' identities). Files are
    read only when their sizes are equal."""
    by_size: dict[int, list[Arg]] = {}
    for r in runs:
        if os.path.isfile(str(r.path)):
            by_size.setdefault(os.path.getsize(str(r.path)), []).append(r)
    for group in by_size.values():
        for k, b in enumerate(group):
            for a in group[:k]:
                if _key(a.path) != _key(b.path) and filecmp.cmp(str(a.path), str(b.path), shallow=False):
                    if a.run != b.run:
                        train, held = (a, b) if b.run == "held-out" else (b, a)
                        raise WorkflowError(
                            f"{_shown(held)} has the same content as the training file {_shown(train)} (a copy): "
                            "a held-out score needs a run the fit did not use; give another run"
                        )
                    raise WorkflowError(
                        f"{_shown(a)} and {_shown(b)} have the same content (a copy of one run): stacked, its "
                        "samples would count twice (the std shrinks by sqrt(2) with no new information); give each "
                        "run once"
                    )


def check_files(inputs: Iterable[Arg], outputs: Iterable[Arg]) -> None:
    """Refuse (WorkflowError) an input that is a folder or cannot be read, two runs with the same
    content, and an output that cannot be written (see the module docstring); None and '-' are
    skipped."""
    inputs = list(inputs)
    for i in inputs:
        if i.given and "sidecar" not in i.flag:
            _readable(i)
    _copies([i for i in inputs if i.given and i.run is not None])
    for o in outputs:
        if not o.given:
            continue
        if o.kind == "folder":
            _writable_folder(o)
        else:
            _writable_file(o, str(o.path))


def check(inputs: Iterable[Arg], outputs: Iterable[Arg]) -> None:
    """[`check_names`][jaxid.workflow.paths.check_names], then [`check_files`][jaxid.workflow.paths.check_files]."""
    inputs, outputs = list(inputs), list(outputs)
    check_names(inputs, outputs)
    check_files(inputs, outputs)
