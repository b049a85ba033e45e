"""JAX's persistent compilation cache for jaxid: compiled code is reused by the next process.

The command line turns it on (:func:`enable`) before any computation; library users may call
``jaxid.cache.enable()`` themselves. Where: ``$JAXID_CACHE_DIR`` if set (``off``, ``0`` or
empty turns the cache off), else ``$XDG_CACHE_HOME/jaxid/xla`` (default ``~/.cache/jaxid/xla``).
An unwritable folder gives one warning and the run goes on without the cache.

Every compiled function is cached (``jax_persistent_cache_min_compile_time_secs = 0``): a jaxid
run compiles many small functions whose compile times add up to most of a cold start.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

OFF = ("off", "0", "", "none", "false")

_state: dict = {}


def directory() -> Path | None:
    """The cache folder jaxid uses, or None when ``JAXID_CACHE_DIR`` turns it off."""
    env = os.environ.get("JAXID_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxid" / "xla"


def enable(path=None, *, warn=None) -> Path | None:
    """Turn on JAX's persistent compilation cache in ``path`` (default :func:`directory`).

    Returns the folder in use, or None when the cache is off or the folder cannot be written
    (then ``warn(message)`` is called once, if given). Call it before the first computation.
    """
    import jax

    if "dir" in _state:
        return _state["dir"]
    path = Path(path) if path is not None else directory()
    if path is not None:
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path, prefix=".probe"):
                pass
        except OSError as e:
            if warn is not None:
                warn(f"the compilation cache folder {str(path)!r} is not writable ({e.strerror or e}); running "
                     "without the cache (set JAXID_CACHE_DIR to a writable folder, or JAXID_CACHE_DIR=off)")
            path = None
    if path is not None:
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _state["dir"] = path
    return path


def _marker(command: str) -> Path | None:
    from jaxid import __version__

    d = _state.get("dir")
    return None if d is None else d / f".warm-{command}-{__version__}"


def warm(command: str) -> bool:
    """Whether ``command`` has completed once with this cache (its compiled code is there)."""
    m = _marker(command)
    return m is not None and m.exists()


def mark_warm(command: str) -> None:
    """Record that ``command`` completed with this cache."""
    m = _marker(command)
    if m is not None:
        try:
            m.touch()
        except OSError:
            pass
