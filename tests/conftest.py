"""Shared fixtures: built-in models and random states, created once per session."""
import os
import tempfile

import jax
import numpy as np
import pytest

import jaxid
import jaxid.cache

# Keep the suite's compile caches small and deterministic on the 2-core CI machine.
os.environ.setdefault("JAXID_NOTEBOOK_SMALL", "1")
# A persistent compilation cache of the session's own (never the user's): functions that are
# jitted anew on every call (closures of the excitation optimiser, the CLI's steps) compile once
# per session. tests/test_cache.py checks the CLI's cache in subprocesses.
os.environ.setdefault("JAXID_CACHE_DIR", tempfile.mkdtemp(prefix="jaxid-test-cache-"))
jaxid.cache.enable()


@pytest.fixture(scope="session")
def ur5():
    return jaxid.models.ur5()


@pytest.fixture(scope="session")
def ur5_friction():
    n = 6
    rng = np.random.default_rng(7)
    values = np.stack([rng.uniform(0.01, 0.1, n), rng.uniform(0.5, 3, n), rng.uniform(1, 5, n),
                       rng.uniform(-1, 1, n)], axis=1)
    return jaxid.models.ur5(joint_terms=("ia", "fv", "fc", "offset"), joint_params=values)


@pytest.fixture(scope="session")
def states():
    """Random states (q, qd, qdd), each (8, 6)."""
    rng = np.random.default_rng(0)
    return tuple(rng.normal(size=(8, 6)) for _ in range(3))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long study, left out of make test (run by make test-all)")
    jax.config.update("jax_enable_x64", True)
