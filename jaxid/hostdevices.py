"""XLA:CPU settings set by jaxid itself: the classic fusion code generator (compiles faster) and,
with several host devices, a scheduler that does not hang.

XLA:CPU's fusion emitters (the MLIR code generator for fused loops, on by default in jaxlib 0.10)
compile jaxid's programs 1.3-1.4x slower than its classic emitters, with the same run time
(``benchmarks/xla_flags.py``): [`configure`][jaxid.hostdevices.configure] adds
[`COMPILE_FLAG`][jaxid.hostdevices.COMPILE_FLAG] (``--xla_cpu_use_fusion_emitters=false``) on the
jaxlib versions checked to know it (an unknown flag aborts XLA), unless ``XLA_FLAGS`` sets it either
way (the opt-out: ``XLA_FLAGS=--xla_cpu_use_fusion_emitters=true``). ``--xla_backend_optimization_level=0``
would compile faster still, but changes results (a NaN gradient, an optimiser that never
improves, in the test suite): jaxid does not set it.

With more than one CPU device in a process (``XLA_FLAGS=--xla_force_host_platform_device_count=K``,
``JAX_NUM_CPU_DEVICES=K`` or ``jax.config.update("jax_num_cpu_devices", K)``), e.g. to test a ``shard_map`` of jaxid's
dynamics, XLA:CPU's concurrency-optimised scheduler can lose a wake-up when two
host devices run at once (jaxlib 0.10): the program hangs. [`configure`][jaxid.hostdevices.configure] switches that
scheduler off (``--xla_cpu_enable_concurrency_optimized_scheduler=false``) before the backend
starts; ``import jaxid`` calls it, and so does ``run_study`` (for a device count set through
``jax.config`` after the import). A flag the user set either way is left alone. XLA reads
``XLA_FLAGS`` when the backend starts, so a backend started before jaxid was imported keeps
its scheduler: [`warn_if_unsafe`][jaxid.hostdevices.warn_if_unsafe] says so. Across processes the collectives are JAX's
default for CPU, gloo (``jax_cpu_collectives_implementation``), which jaxid leaves as it is.
A second hang the flag does not cure: jaxlib 0.10's batched LAPACK kernels block XLA:CPU's
thread pool when as many run at once as it has threads, e.g. one per host device on as many
cores (``jaxid.study.run_study`` therefore uses one CPU device per process).
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings

__all__ = ["SCHEDULER_FLAG", "COMPILE_FLAG", "requested_devices", "configure", "warn_if_unsafe", "one_blas_thread"]

SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
_NAME = "xla_cpu_enable_concurrency_optimized_scheduler"
COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"
_COMPILE_NAME = "xla_cpu_use_fusion_emitters"
#: The jaxlib versions whose XLA is known to have COMPILE_FLAG (checked: 0.10.x).
_COMPILE_FLAG_JAXLIB = (0, 10)


def requested_devices(env=None) -> int:
    """CPU devices per process asked for in ``env`` (default ``os.environ``) or jax.config."""
    env = os.environ if env is None else env
    counts = [int(m) for m in re.findall(r"--xla_force_host_platform_device_count=(\d+)", env.get("XLA_FLAGS", ""))]
    try:
        counts.append(int(env.get("JAX_NUM_CPU_DEVICES", "") or 0))
    except ValueError:
        pass
    if env is os.environ:
        try:
            import jax

            counts.append(int(jax.config.jax_num_cpu_devices))  # type: ignore[attr-defined]  # set by name, not typed
        except (AttributeError, TypeError, ValueError):
            pass
    return max(counts, default=0)


def _jaxlib_knows_compile_flag() -> bool:
    from jaxlib import version  # the loaded jaxlib's, not a distribution's metadata

    return tuple(int(x) for x in re.findall(r"\d+", version.__version__)[:2]) >= _COMPILE_FLAG_JAXLIB


def configure(env=None) -> bool:
    """Add to ``env["XLA_FLAGS"]`` (default ``os.environ``, whose JAX backend must not have started)
    [`COMPILE_FLAG`][jaxid.hostdevices.COMPILE_FLAG] where jaxlib knows it, and
    [`SCHEDULER_FLAG`][jaxid.hostdevices.SCHEDULER_FLAG] when more than one CPU device per
    process is asked for; a flag the user set either way is left alone. True when the scheduler
    flag was added."""
    env = os.environ if env is None else env
    flags = env.get("XLA_FLAGS", "")
    if env is os.environ:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            return False
    add = [COMPILE_FLAG] if _COMPILE_NAME not in flags and _jaxlib_knows_compile_flag() else []
    scheduler = _NAME not in flags and requested_devices(env) > 1
    add += [SCHEDULER_FLAG] if scheduler else []
    if add:
        env["XLA_FLAGS"] = " ".join([flags, *add]).strip()
    return scheduler


def warn_if_unsafe(devices) -> None:
    """A warning when ``devices`` hold several CPU devices of this process and the backend
    runs with the concurrency-optimised scheduler (it started before jaxid could set the flag)."""
    import jax

    local = [d for d in devices if d.platform == "cpu" and d.process_index == jax.process_index()]
    if len(local) > 1 and _NAME not in os.environ.get("XLA_FLAGS", ""):
        warnings.warn(
            f"{len(local)} host CPU devices run with XLA:CPU's concurrency-optimised scheduler, which can "
            f"hang (jaxlib 0.10): set XLA_FLAGS='{SCHEDULER_FLAG}' or import jaxid before JAX starts",
            RuntimeWarning,
            stacklevel=3,
        )


#: threadpoolctl's controller of the BLAS libraries loaded (numpy's and scipy's), made on first use.
_BLAS: list = []


def _blas_controller():
    """threadpoolctl's ``ThreadpoolController`` (listing the loaded libraries costs ~0.6 ms, so it
    is made once, after scipy.linalg has loaded its own OpenBLAS), or None without threadpoolctl."""
    if not _BLAS:
        try:
            import scipy.linalg  # noqa: F401  (scipy's OpenBLAS is not numpy's: both are limited)
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS.append(None)
        else:
            _BLAS.append(ThreadpoolController())
    return _BLAS[0]


@contextlib.contextmanager
def one_blas_thread():
    """One BLAS thread (numpy's and scipy's) while the block runs, as many as before after it.

    jaxid's host linear algebra is many small factorisations and products (per-joint QR folds,
    SVDs of (p + 1)-square factors, block Gram sums, 4 x 4 eigenvalues): OpenBLAS's extra threads
    only wake and wait on them, and on a busy machine they wait for a core. The identification's
    warm path on the UR10 benchmark took 16.4 ms with two OpenBLAS threads and 14.1 ms with one
    (``benchmarks/vs_figaroh.py``); the heavy per-sample work runs in XLA's own thread pool,
    which this does not touch. The command line sets ``OPENBLAS_NUM_THREADS=1`` for the whole
    process; a library user's process keeps its setting outside jaxid's calls. Without
    threadpoolctl (a dependency of jaxid) the block runs as it is. Also a decorator
    (``@one_blas_thread()``), as ``workflow.identify`` uses it."""
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield
