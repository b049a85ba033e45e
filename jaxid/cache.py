"""JAX's persistent compilation cache for jaxid: compiled code is reused by the next process.

On by default: ``import jaxid`` turns it on ([`enable`][jaxid.cache.enable]) for a Python program as the command
line does for a command, so a second process reuses what the first compiled (the README's first
snippet on 2 cores: 26 s cold, 5 s warm). Where: ``$JAXID_CACHE_DIR`` if set (``off``, ``0``,
``none``, ``false`` or empty turns the cache off), else ``$XDG_CACHE_HOME/jaxid/xla`` (default
``~/.cache/jaxid/xla``). An unwritable folder gives one warning and the run goes on without the
cache. To opt out: ``JAXID_CACHE_DIR=off`` in the environment (before ``import jaxid``), or
[`disable`][jaxid.cache.disable] in the program (before the computations to run uncached).

Every compiled function is cached (``jax_persistent_cache_min_compile_time_secs = 0``): a jaxid
run compiles many small functions whose compile times add up to most of a cold start.

In the same folder, while the cache is on: ``compiled/`` holds the executables of the functions
wrapped by [`jit`][jaxid.cache.jit], for this host's CPU (a warm process then skips their Python tracing and
lowering as well), and ``values/`` the results of [`memo`][jaxid.cache.memo] (model analyses). Deleting the
folder is always safe.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import io
import logging
import os
import pickle
import tempfile
import types
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import ParamSpec, TypeVar, overload

import numpy as np

OFF = ("off", "0", "", "none", "false")

P = ParamSpec("P")
R = TypeVar("R")

_state: dict = {}


def directory() -> Path | None:
    """The cache folder jaxid uses, or None when ``JAXID_CACHE_DIR`` turns it off."""
    env = os.environ.get("JAXID_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jaxid" / "xla"


def enable(path=None, *, warn=None) -> Path | None:
    """Turn on JAX's persistent compilation cache in ``path`` (default [`directory`][jaxid.cache.directory]).

    Returns the folder in use, or None when the cache is off or the folder cannot be written
    (then ``warn(message)`` is called once, if given). Call it before the first computation.
    """
    import jax

    if "dir" in _state and not _state.get("disabled"):
        return _state["dir"]
    _state.pop("disabled", None)
    path = Path(path) if path is not None else directory()
    if path is not None:
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path, prefix=".probe"):
                pass
        except OSError as e:
            if warn is not None:
                warn(
                    f"the compilation cache folder {str(path)!r} is not writable ({e.strerror or e}); running "
                    "without the cache (set JAXID_CACHE_DIR to a writable folder, or JAXID_CACHE_DIR=off)"
                )
            path = None
    if path is not None:
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", str(path))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _state["dir"] = path
    return path


def disable() -> None:
    """Turn the cache off for the rest of this process: JAX's persistent compilation cache, the
    stored programs of [`jit`][jaxid.cache.jit] and the values of [`memo`][jaxid.cache.memo] (what this process already
    compiled stays in memory). ``import jaxid`` turns it on unless ``JAXID_CACHE_DIR=off``;
    [`enable`][jaxid.cache.enable] turns it on again."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()
    _state["dir"], _state["disabled"] = None, True


def _marker(command: str) -> Path | None:
    # Keyed on the package's source, as the stored programs are: a changed jaxid compiles again.
    d = _state.get("dir")
    return None if d is None else d / f".warm-{command}-{_source()[:16]}"


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


# ---- stored programs ---------------------------------------------------------------------
# XLA's cache saves compiling, not tracing or lowering: a warm process still runs every jitted
# function's Python to build its program (most of a warm `jaxid excite`) and lowers it to find
# its cache entry (half a second of a warm `jaxid identify` on the KUKA example). ``jit`` stores
# the compiled executable itself in ``<cache>/compiled``, keyed on everything the trace bakes
# in and on the host's CPU, so that the next process loads and runs it.

_log = logging.getLogger(__name__)
#: Version of the file layout below; part of every key.
_FORMAT = 2
_MAGIC = b"jaxid-stored\n"


class _Unkeyable(Exception):
    """A static value whose content cannot be written into a key (e.g. a local lambda)."""


def _encode(x, out: list) -> None:
    """Append a canonical, process-independent description of the static value x to out."""
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        out.append(f"{type(x).__name__}:{x!r}")
    elif isinstance(x, (np.ndarray, np.generic)) or hasattr(x, "__array__") and hasattr(x, "dtype"):
        try:
            a = np.ascontiguousarray(x)
        except Exception as e:  # noqa: BLE001 -- e.g. a typed PRNG key
            raise _Unkeyable(f"{type(x).__name__} has no numpy value") from e
        out.append(f"nd:{a.dtype.str}:{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}")
    elif isinstance(x, (tuple, list)):
        out.append(f"{_qualname(type(x))}({len(x)}")
        for v in x:
            _encode(v, out)
        out.append(")")
    elif isinstance(x, (frozenset, set, dict)):
        # In the order of the encodings: a set's iteration order varies with the string hash seed.
        items = sorted("\x1e".join([_encoded(k)] + ([_encoded(x[k])] if isinstance(x, dict) else [])) for k in x)
        out.append(f"{_qualname(type(x))}({len(items)}")
        out.extend(items)
        out.append(")")
    elif isinstance(x, type) or callable(x) and hasattr(x, "__qualname__"):
        bound = getattr(x, "__self__", None)
        if bound is not None and not isinstance(bound, types.ModuleType):
            raise _Unkeyable(f"{x!r} is a bound method (its object is not in the key)")
        out.append(f"ref:{_qualname(x)}")
    elif dataclasses.is_dataclass(x):
        out.append(f"dc:{_qualname(type(x))}(")
        for f in dataclasses.fields(x):
            out.append(f.name)
            _encode(getattr(x, f.name), out)
        out.append(")")
    elif isinstance(x, enum.Enum):
        out.append(f"enum:{_qualname(type(x))}.{x.name}")
    else:
        r = repr(x)
        if type(x).__repr__ is object.__repr__ or " at 0x" in r:
            raise _Unkeyable(f"{type(x).__name__} has no value-based description")
        out.append(f"{_qualname(type(x))}:{r}")


def _encoded(x) -> str:
    out: list = []
    _encode(x, out)
    return "\x1f".join(out)


def _qualname(obj) -> str:
    """module.qualname of a module-level function or class; _Unkeyable for local ones (their
    closure is not in the key)."""
    name = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if name is None or module is None or "<locals>" in name or "<lambda>" in name:
        raise _Unkeyable(f"{obj!r} is not a module-level definition")
    if getattr(obj, "__closure__", None):
        raise _Unkeyable(f"{obj!r} closes over values the key does not hold")
    return f"{module}.{name}"


def _encode_tree(treedef, out: list) -> None:
    """The treedef's node types and their auxiliary data (equinox's static fields)."""
    node = treedef.node_data()
    if node is None:
        out.append("*")
        return
    kind, aux = node
    out.append(f"<{_qualname(kind)}")
    _encode(aux, out)
    for child in treedef.children():
        _encode_tree(child, out)
    out.append(">")


@functools.cache
def _source() -> str:
    """sha256 (hex) of the jaxid package's source files (their paths and bytes). Read from the
    files next to this one: importing ``jaxid`` from here would import every layer above."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@functools.cache
def _environment() -> str:
    """What every key shares: the source of the jaxid package, the versions of the libraries
    whose Python runs inside a trace, the backend and the tracing configuration."""
    import importlib.metadata

    import jax

    versions = []
    for dist in ("jax", "jaxlib", "equinox", "optax", "optimistix", "lineax", "diffrax", "numpy"):
        try:
            versions.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist}=-")
    config = [
        f"{k}={getattr(jax.config, k, None)}"
        for k in (
            "jax_enable_x64",
            "jax_default_matmul_precision",
            "jax_numpy_rank_promotion",
            "jax_default_prng_impl",
            "jax_numpy_dtype_promotion",
        )
    ]
    device = jax.devices()[0]
    return "|".join(
        [
            f"format={_FORMAT}",
            _source(),
            *versions,
            *config,
            jax.default_backend(),
            device.device_kind,
            str(jax.device_count()),
        ]
    )


#: Each argument structure's encoding (`_encode_tree`), by its treedef: a warm call's key is then
#: its leaves' types alone (the encoding walks every static field of a model).
_TREES: dict = {}


def _tree_code(treedef) -> list:
    try:
        return _TREES[treedef]
    except KeyError:
        pass
    except TypeError:  # static data that does not hash: encoded every time
        out: list = []
        _encode_tree(treedef, out)
        return out
    out = []
    _encode_tree(treedef, out)
    if len(_TREES) < 4096:
        _TREES[treedef] = out
    return out


#: Each array type's part of a key, by (dtype, shape, weak type).
_AVALS: dict = {}


def _key(fn, treedef, leaves, dynamic) -> str:
    import jax

    out = [_environment(), _qualname(fn), *_tree_code(treedef)]
    for x, d in zip(leaves, dynamic):
        if d:
            try:
                a = jax.typeof(x)  # shape, dtype and weak type, as traced
            except TypeError as e:
                raise _Unkeyable(f"a traced argument of type {type(x).__name__}") from e
            sig = (a.dtype, a.shape, a.weak_type)
            code = _AVALS.get(sig)
            if code is None:  # formatting a dtype costs ~2.5 us, a model has a dozen array leaves
                code = f"a:{a.dtype}:{a.shape}:{a.weak_type}"
                if len(_AVALS) < 65536:
                    _AVALS[sig] = code
            out.append(code)
        else:
            _encode(x, out)
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()


@functools.cache
def _host() -> str:
    """What a compiled executable is tied to beyond the key's environment: XLA:CPU generates
    code for the host's instruction set (an AVX-512 executable would crash a machine without
    it, and a shared cache folder may move between machines), and ``XLA_FLAGS`` change the
    code it generates. A hash of the first processor's model and feature flags, the machine
    type and ``XLA_FLAGS``."""
    import platform

    parts = [platform.machine(), platform.system(), os.environ.get("XLA_FLAGS", "")]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor is enough: they share one instruction set
                if line.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part", "vendor_id"):
                    parts.append(line.strip())
    except OSError:
        parts.append(platform.processor())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class _Program:
    """A stored executable: flat arrays in, the function's output pytree out."""

    def __init__(self, compiled, out_tree, out_static):
        self._compiled, self._out_tree, self._out_static = compiled, out_tree, out_static

    def __call__(self, arrays):
        it = iter(self._compiled(*arrays))
        leaves = [next(it) if is_array else s for is_array, s in self._out_static]
        return self._out_tree.unflatten(leaves)


def _compile_fresh(lowered):
    """``lowered.compile()`` with XLA's persistent cache off, for an executable to serialise.

    An executable that XLA's cache loaded, or one compiled again in a process that loaded it,
    serialises (jaxlib 0.10) into a payload that fails when it is loaded ("Function ... not
    found"). So the programs that [`jit`][jaxid.cache.jit] stores are compiled afresh: one compile per
    stored program after its key changed (a new jaxid), which the next process never pays.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    was = bool(getattr(jax.config, "jax_enable_compilation_cache", True))
    try:
        jax.config.update("jax_enable_compilation_cache", False)
        compilation_cache.reset_cache()
        return lowered.compile()
    finally:
        jax.config.update("jax_enable_compilation_cache", was)
        compilation_cache.reset_cache()


def _meta(out_tree, out_static) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer).dump((out_tree, out_static))
    return len(buffer.getvalue()).to_bytes(8, "little") + buffer.getvalue()


def _split_meta(body: bytes):
    """(out_tree, out_static) and the rest of a body written as _meta(...) + rest."""
    meta_len = int.from_bytes(body[:8], "little")
    return pickle.loads(body[8 : 8 + meta_len]), body[8 + meta_len :]


def _load(path: Path) -> bytes:
    """The body of a file written by _store; ValueError if it is not one or is damaged."""
    blob = path.read_bytes()
    if not blob.startswith(_MAGIC):
        raise ValueError("not a jaxid cache file")
    digest, body = blob[len(_MAGIC) : len(_MAGIC) + 32], blob[len(_MAGIC) + 32 :]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError("checksum mismatch")
    return body


def _store(path: Path, body: bytes) -> None:
    """Write body with a checksum, atomically; a failure (full disk, read-only) is logged only."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(_MAGIC + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        _log.debug("jaxid.cache: could not store %s (%s)", path.name, e)


def _equinox_missing():
    """equinox's marker of an absent field, which its unflatten tests by identity."""
    try:
        from equinox._module._flatten import MISSING
    except ImportError:
        return None
    return MISSING


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        # Unpickled as a new object, the marker would no longer be equinox's own, and
        # unflattening an equinox module of the output would fail.
        return (_equinox_missing, ()) if obj is not None and obj is _equinox_missing() else NotImplemented


def _read(path: Path) -> _Program:
    # jaxlib fills in its LAPACK kernels' function pointers when it first lowers a linear-algebra
    # op; an executable loaded without any lowering would call null pointers (a segfault). Without
    # this (private) hook the import fails, and the program is traced and compiled as if absent.
    from jax._src.lax.linalg import initialize_lapack
    from jax.experimental import serialize_executable

    initialize_lapack()
    (out_tree, out_static), rest = _split_meta(_load(path))
    in_tree, exe_out_tree, payload = pickle.loads(rest)
    return _Program(serialize_executable.deserialize_and_load(payload, in_tree, exe_out_tree), out_tree, out_static)


def _compile(fn, path: Path, treedef, leaves, dynamic) -> _Program:
    """Trace fn(*args, **kwargs), (args, kwargs) = treedef.unflatten(leaves), with the dynamic
    leaves as inputs; compile it afresh; store the executable in path (a failure to serialise
    or write is logged only); return it as a _Program."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import serialize_executable

    static = [None if d else x for x, d in zip(leaves, dynamic)]
    outs = {}

    def flat(*arrays):
        it = iter(arrays)
        args, kwargs = treedef.unflatten([next(it) if d else s for s, d in zip(static, dynamic)])
        out_leaves, outs["tree"] = jax.tree_util.tree_flatten(fn(*args, **kwargs))
        is_array = [isinstance(y, (jax.Array, np.ndarray, np.generic)) for y in out_leaves]
        outs["static"] = [(a, None if a else y) for y, a in zip(out_leaves, is_array)]
        return [jnp.asarray(y) for y, a in zip(out_leaves, is_array) if a]

    # JAX_LOG_COMPILES and profiles then name the function, not "flat".
    flat.__name__ = flat.__qualname__ = getattr(fn, "__name__", "flat")
    specs = [
        jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
        for a in (jax.typeof(x) for x, d in zip(leaves, dynamic) if d)
    ]
    compiled = _compile_fresh(jax.jit(flat).lower(*specs))
    try:
        payload, in_tree, exe_out_tree = serialize_executable.serialize(compiled)
        _store(path, _meta(outs["tree"], outs["static"]) + pickle.dumps((in_tree, exe_out_tree, payload)))
    except Exception as e:  # noqa: BLE001 -- a backend that cannot serialise: this process still runs it
        _log.debug("jaxid.cache: %s not stored (%s: %s)", path.name, type(e).__name__, e)
    return _Program(compiled, outs["tree"], outs["static"])


@overload
def jit(fn: Callable[P, R], *, static_argnames: str | Iterable[str] | None = None) -> Callable[P, R]: ...
@overload
def jit(
    fn: None = None, *, static_argnames: str | Iterable[str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def jit(fn=None, *, static_argnames=None):
    """``eqx.filter_jit(fn)`` whose compiled program is also kept in the persistent cache.

    Arrays (jax or numpy) among the arguments are traced; every other leaf is static, as with
    ``equinox.filter_jit``. With ``static_argnames`` it is ``jax.jit(fn, static_argnames=...)``
    instead: every leaf of the other arguments is traced, Python numbers included (weakly
    typed). When the cache is on ([`enable`][jaxid.cache.enable]) and no argument is a tracer, the program
    is looked up in ``<cache>/compiled`` under a key of: fn's module and qualified name, a
    hash of the jaxid package's source, the versions of jax, jaxlib and the libraries traced
    through (equinox, optax, ...), the backend, x64 and the other tracing options, the pytree
    structure of the arguments with equinox's static fields, every static value, each array's
    shape, dtype and weak type, and a hash of this host's CPU and ``XLA_FLAGS``
    (`_host`). A hit is loaded (``jax.experimental.serialize_executable``) and run: no
    Python tracing, no lowering, no compiling. A miss traces, compiles and stores once. Only
    for module-level functions whose closure holds no values that vary (constants of the
    jaxid source are in the key); a static value without a value-based description (a local
    lambda, an object that repr's by address), or any failure to compile or read (a host
    callback, a corrupt file), falls back to ``eqx.filter_jit(fn)`` with one debug-level log
    line.
    """
    import equinox as eqx
    import jax

    if fn is None:
        return functools.partial(jit, static_argnames=static_argnames)
    if static_argnames is None:
        jitted = eqx.filter_jit(fn)
    else:
        static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        jitted = jax.jit(fn, static_argnames=static_argnames)
        signature = inspect.signature(fn)
    programs: dict = {}  # key -> _Program, or None for "use jitted"

    def split(args, kwargs):
        """(leaves, treedef of (args, kwargs), which leaves are traced)."""
        if static_argnames is None:
            leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
            return leaves, treedef, [eqx.is_array(x) for x in leaves]
        # By name, so that each leaf's path names its argument.
        paths, treedef = jax.tree_util.tree_flatten_with_path(((), signature.bind(*args, **kwargs).arguments))
        return [x for _, x in paths], treedef, [path[1].key not in static_argnames for path, _ in paths]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        folder = _state.get("dir")
        if folder is None:
            return jitted(*args, **kwargs)
        try:
            leaves, treedef, dynamic = split(args, kwargs)
        except TypeError:  # a call that does not bind: the plain jit says why
            return jitted(*args, **kwargs)
        # Traced (inside another program) or spread over several devices: the stored programs
        # are single-device.
        if any(
            isinstance(x, jax.core.Tracer) or isinstance(x, jax.Array) and len(x.sharding.device_set) > 1
            for x in leaves
        ):
            return jitted(*args, **kwargs)
        try:
            key = _key(fn, treedef, leaves, dynamic)
        except _Unkeyable as e:
            _log.debug("jaxid.cache: %s runs without a stored program: %s", fn.__qualname__, e)
            return jitted(*args, **kwargs)
        if key not in programs:
            path = folder / "compiled" / f"{key}-{_host()}.xla"
            program = None
            if path.exists():
                try:
                    program = _read(path)
                except Exception as e:  # noqa: BLE001 -- a bad file only costs a new trace
                    _log.debug("jaxid.cache: unreadable %s (%s); compiling again", path.name, e)
            if program is None:
                try:
                    program = _compile(fn, path, treedef, leaves, dynamic)
                except Exception as e:  # noqa: BLE001 -- whatever does not compile this way runs as before
                    _log.debug("jaxid.cache: %s not stored (%s: %s); plain jit", fn.__qualname__, type(e).__name__, e)
            programs[key] = program
        program = programs[key]
        if program is not None:
            try:
                return program([x for x, d in zip(leaves, dynamic) if d])
            except Exception as e:  # noqa: BLE001 -- the plain jit runs it, or raises its own error
                _log.debug("jaxid.cache: stored %s failed (%s: %s); plain jit", fn.__qualname__, type(e).__name__, e)
                programs[key] = None
        return jitted(*args, **kwargs)

    return call


def memo(fn):
    """fn(*args, **kwargs) remembered in ``<cache>/values`` by value, for a pure function of
    its arguments' values whose result pickles (e.g. a model analysis in numpy).

    The key is that of [`jit`][jaxid.cache.jit] with every array taken by its content (dtype, shape and a
    hash of its bytes). Warnings fn gave are stored with the result and given again on a hit.
    Off with the cache, under a trace, for arguments without a value-based description, and on
    any failure to read or write (then fn runs, with one debug-level log line).
    """
    import jax

    @functools.wraps(fn)
    def call(*args, **kwargs):
        folder = _state.get("dir")
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        if folder is None or any(isinstance(x, jax.core.Tracer) for x in leaves):
            return fn(*args, **kwargs)
        try:
            path = folder / "values" / f"{_key(fn, treedef, leaves, [False] * len(leaves))}.pkl"
        except _Unkeyable as e:
            _log.debug("jaxid.cache: %s not remembered: %s", fn.__qualname__, e)
            return fn(*args, **kwargs)
        try:
            result, caught = pickle.loads(_load(path))
        except FileNotFoundError:
            result = None
        except Exception as e:  # noqa: BLE001 -- a bad file only costs the computation
            _log.debug("jaxid.cache: unreadable %s (%s); computing again", path.name, e)
            result = None
        if result is None:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                result = fn(*args, **kwargs)
            caught = [(x.category, str(x.message)) for x in w]
            try:
                _store(path, pickle.dumps((result, caught)))
            except Exception as e:  # noqa: BLE001 -- a result that does not pickle
                _log.debug("jaxid.cache: %s not stored (%s)", fn.__qualname__, e)
        for category, message in caught:
            warnings.warn(message, category, stacklevel=2)
        return result

    return call
