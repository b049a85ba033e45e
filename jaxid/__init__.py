"""jaxid: differentiable robot-dynamics identification in JAX.

Importing the package enables float64 (``jax_enable_x64``): identification is
ill-conditioned by nature and float32 loses the small base parameters. With several host CPU
devices asked for, it also switches off an XLA:CPU scheduler that can hang
(``jaxid.hostdevices``). It turns on the persistent compilation cache (``jaxid.cache``, in
``~/.cache/jaxid/xla`` or ``$JAXID_CACHE_DIR``), as the command line does, so that a second
process skips the compiling; ``JAXID_CACHE_DIR=off`` before the import, or
``jaxid.cache.disable()``, turns it off.
"""

import os as _os
import sys as _sys


def _command_line(argv) -> bool:
    """Whether argv (``sys.orig_argv``) runs the jaxid command: ``jaxid ...`` or ``python -m jaxid ...``."""
    return list(argv[1:3]) == ["-m", "jaxid"] or len(argv) > 1 and _os.path.basename(argv[1]) in ("jaxid", "jaxid.exe")


__version__ = "0.2.0"

_argv = list(getattr(_sys, "orig_argv", ()))
if _command_line(_argv) and _argv[3 if _argv[1:2] == ["-m"] else 2 :] == ["--version"]:
    # `jaxid --version` answers before JAX is imported (0.9-1.2 s of a 1.3 s command otherwise).
    print(f"jaxid {__version__}")
    raise SystemExit(0)

if _command_line(_argv):
    # One OpenBLAS thread for a command (before numpy loads it), unless the user says otherwise: a
    # command's BLAS work is small (per-joint QR folds, the base-parameter QR; the heavy work runs in
    # XLA), and OpenBLAS's other threads only busy-wait: 0.45 s of the 2.5 s of CPU of a warm
    # `jaxid identify` on the KUKA example (2 cores, same wall time); on a loaded machine a threaded
    # base-parameter QR took 6 s instead of 0.02 s. A library user's process is left as it is.
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

from jaxid import hostdevices as _hostdevices  # noqa: E402

_hostdevices.configure()  # XLA:CPU's faster-compiling emitters; with several host devices, a scheduler that does not hang

from jaxid import cache  # noqa: E402

if not _command_line(_argv):
    # The persistent compilation cache, on as for a command (which turns it on itself, with its own
    # warning): a second process reuses what the first compiled. JAXID_CACHE_DIR=off before the
    # import, or jaxid.cache.disable(), turns it off.
    import warnings as _warnings

    cache.enable(warn=lambda m: _warnings.warn(f"jaxid: {m}", RuntimeWarning, stacklevel=3))

from jaxid import metrics, models, workflow  # noqa: E402
from jaxid.dynamics.rnea import forward_kinematics  # noqa: E402
from jaxid.dynamics.terms import (  # noqa: E402
    bias_torques,
    coriolis_matrix,
    forward_dynamics,
    gravity_torques,
    mass_matrix,
    rnea,
    simulate,
)
from jaxid.identification.base import BaseParameters, base_from_regressor, base_parameters  # noqa: E402
from jaxid.identification.estimators import Identification, identify  # noqa: E402
from jaxid.identification.regressor import (  # noqa: E402
    is_linear_in_parameters,
    parameter_names,
    parameter_vector,
    regressor,
    stack,
)
from jaxid.model.robot import Robot  # noqa: E402

__all__ = [
    "Robot",
    "models",
    "rnea",
    "mass_matrix",
    "coriolis_matrix",
    "gravity_torques",
    "bias_torques",
    "forward_dynamics",
    "forward_kinematics",
    "simulate",
    "regressor",
    "stack",
    "parameter_vector",
    "parameter_names",
    "is_linear_in_parameters",
    "base_parameters",
    "base_from_regressor",
    "BaseParameters",
    "identify",
    "Identification",
    "metrics",
    "workflow",
    "__version__",
]
