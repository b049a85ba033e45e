"""Atomic file writes: a reader never sees a half-written file, and a failed write leaves the
previous file as it was.

[`atomic_write`][jaxid.atomic.atomic_write] writes into a temporary file in the target's directory, flushes and
fsyncs it, and then renames it onto the target with `os.replace` (atomic on POSIX and on
Windows within one file system). On any error the temporary file is removed. Problems with the
output path itself (a directory, a missing or non-writable directory, a full disk) raise
[`OutputPathError`][jaxid.atomic.OutputPathError], a ``ValueError`` whose message names the path.

This module imports nothing but the standard library, so any writer (datasets, params.json,
metrics.json, trajectories) can use it cheaply.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["OutputPathError", "atomic_write", "check_output_path"]


class OutputPathError(ValueError):
    """The output path cannot be written; the message names the path and the reason."""


def check_output_path(path) -> Path:
    """Check that ``path`` can be created or replaced as a file; return it as a Path.

    Raises OutputPathError when ``path`` is a directory, when its directory does not exist or
    is not a directory, when that directory is not writable, or when ``path`` is an existing
    read-only file (no write permission bit, or not writable by this user).
    """
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{path}: is a directory; give the name of a file to write")
    parent = path.parent
    if not parent.exists():
        raise OutputPathError(f"{path}: cannot write: directory '{parent}' does not exist")
    if not parent.is_dir():
        raise OutputPathError(f"{path}: cannot write: '{parent}' is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{path}: cannot write: directory '{parent}' is not writable (permission denied)")
    try:
        bits = os.stat(path).st_mode
    except OSError:
        return path
    # The mode bits too: root may write any file, and the rename below needs only the folder's
    # permission; a file its owner made read-only is not replaced.
    if not bits & 0o222 or not os.access(path, os.W_OK):
        raise OutputPathError(
            f"{path}: the file is read-only; jaxid does not replace a read-only file: make it writable "
            "(chmod u+w) or choose another path"
        )
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None):
    """Context manager yielding a file object whose content replaces ``path`` on success.

    path: the final file. mode: "w" (text, ``encoding``/``newline`` as for `open`) or
    "wb" (binary). The data go to a temporary file ``.NAME.XXXX.tmp`` beside ``path``; on
    leaving the block without an exception it is flushed, fsynced and renamed onto ``path``
    (the directory is fsynced too, where the platform allows). The new file gets the mode bits
    of the file it replaces, or 0666 less the umask for a new file. On an exception the
    temporary file is deleted, ``path`` is left untouched and the exception propagates; an
    ``OSError`` of the write itself (e.g. a full disk) is re-raised as OutputPathError.

    Raises OutputPathError (a ValueError) naming ``path`` for a directory as output, a missing
    or non-writable directory, or a failed write.

    Example::

        with atomic_write("params.json") as f:
            json.dump(params, f)
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w' or 'wb', got {mode!r}")
    path = check_output_path(path)
    fd: int | None
    tmp: str | None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise OutputPathError(f"{path}: cannot create a file in '{path.parent}' ({e.strerror or e})") from None
    try:
        try:
            old = os.stat(path)
            bits = stat.S_IMODE(old.st_mode)
        except FileNotFoundError:
            bits = 0o666 & ~_umask()
        os.chmod(tmp, bits)
        kwargs: dict[str, Any] = {} if "b" in mode else dict(encoding=encoding, newline=newline)
        with os.fdopen(fd, mode, **kwargs) as f:
            fd = None
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise OutputPathError(
            f"{path}: writing failed ({e.strerror or e}); the previous file, if any, is unchanged"
        ) from e
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    with contextlib.suppress(OSError, AttributeError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
