"""XLA:CPU settings that several host devices need, set by jaxid itself.

With more than one CPU device in a process (``XLA_FLAGS=--xla_force_host_platform_device_count=K``,
``JAX_NUM_CPU_DEVICES=K`` or ``jax.config.update("jax_num_cpu_devices", K)``), e.g. to shard a
``jaxid.study.run_study`` over the cores of one machine or of each process of a
``jax.distributed`` run, XLA:CPU's concurrency-optimised scheduler can lose a wake-up when two
host devices run at once (jaxlib 0.10): the program hangs. [`configure`][jaxid.hostdevices.configure] switches that
scheduler off (``--xla_cpu_enable_concurrency_optimized_scheduler=false``) before the backend
starts; ``import jaxid`` calls it, and so does ``run_study`` (for a device count set through
``jax.config`` after the import). A flag the user set either way is left alone. XLA reads
``XLA_FLAGS`` when the backend starts, so a backend started before jaxid was imported keeps
its scheduler: [`warn_if_unsafe`][jaxid.hostdevices.warn_if_unsafe] says so. Across processes the collectives are JAX's
default for CPU, gloo (``jax_cpu_collectives_implementation``), which jaxid leaves as it is.
A second hang the flag does not cure: jaxlib 0.10's batched LAPACK kernels block XLA:CPU's
thread pool when as many run at once as it has threads, e.g. one per host device on as many
cores (``jaxid.study``'s module docstring says what ``run_study`` does about it).
"""

from __future__ import annotations

import os
import re
import warnings

__all__ = ["SCHEDULER_FLAG", "requested_devices", "configure", "warn_if_unsafe"]

SCHEDULER_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
_NAME = "xla_cpu_enable_concurrency_optimized_scheduler"


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


def configure(env=None) -> bool:
    """Add [`SCHEDULER_FLAG`][jaxid.hostdevices.SCHEDULER_FLAG] to ``env["XLA_FLAGS"]`` (default ``os.environ``) when more
    than one CPU device per process is asked for, the user has not set the flag, and (for
    ``os.environ``) the JAX backend has not started. True when it was added."""
    env = os.environ if env is None else env
    flags = env.get("XLA_FLAGS", "")
    if _NAME in flags or requested_devices(env) <= 1:
        return False
    if env is os.environ:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            return False
    env["XLA_FLAGS"] = f"{flags} {SCHEDULER_FLAG}".strip()
    return True


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
