"""Running a test script in a fresh process with two host CPU devices (``XLA_FLAGS``), as a user
forcing host devices would; shared by the sharding tests."""

import json
import os
import subprocess
import sys

from jaxid import hostdevices


def run_on_two_host_devices(script: str, timeout: float) -> dict:
    """The last line ``python -c script`` printed, read as JSON, from a new process on two host CPU
    devices (JAX_PLATFORMS=cpu). The scheduler flag is taken out of XLA_FLAGS, so that the child
    shows whether ``import jaxid`` adds it; asserts the child exited cleanly within ``timeout`` s."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "").replace(hostdevices.SCHEDULER_FLAG, "") + " --xla_force_host_platform_device_count=2"
    )
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
