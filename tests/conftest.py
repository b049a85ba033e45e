"""Shared fixtures: built-in models and random states, created once per session."""

import os
import tempfile

# Keep the suite's compile caches small and deterministic on the 2-core CI machine.
os.environ.setdefault("JAXID_NOTEBOOK_SMALL", "1")
# A persistent compilation cache of the session's own (never the user's): functions that are
# jitted anew on every call (closures of the excitation optimiser, the CLI's steps) compile once
# per session. Set before `import jaxid`, which turns the cache on in JAXID_CACHE_DIR.
# tests/test_cache.py checks the CLI's cache in subprocesses.
os.environ.setdefault("JAXID_CACHE_DIR", tempfile.mkdtemp(prefix="jaxid-test-cache-"))

import shutil  # noqa: E402

import hypothesis  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jaxid  # noqa: E402
import jaxid.cache  # noqa: E402

jaxid.cache.enable()  # already on since the import: the same folder

# Property tests (hypothesis): the same examples on every run (no flaky seed), no deadline (the
# first example compiles), few examples (the suite's time), no example database (.hypothesis/, which
# hypothesis still fills with a cache of source constants, is in .gitignore).
# HYPOTHESIS_PROFILE=deep searches further, e.g. after changing the dynamics.
hypothesis.settings.register_profile("ci", derandomize=True, deadline=None, max_examples=25, database=None)
hypothesis.settings.register_profile("deep", deadline=None, max_examples=500, database=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def chromium():
    """A headless Chromium driven by playwright, for the tests that check pages as a browser draws
    them: playwright's own browser, or the system's (Debian packages chromium-headless-shell or
    chromium). Skips where there is none."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    names = ("chromium-headless-shell", "chromium", "chromium-browser")
    executable = next((path for path in map(shutil.which, names) if path), None)
    with sync_api.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except Exception as e:  # no browser binary here
            pytest.skip(f"no headless Chromium: {str(e).splitlines()[0]}")
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def ur5():
    return jaxid.models.ur5()


@pytest.fixture(scope="session")
def ur5_friction():
    n = 6
    rng = np.random.default_rng(7)
    values = np.stack(
        [rng.uniform(0.01, 0.1, n), rng.uniform(0.5, 3, n), rng.uniform(1, 5, n), rng.uniform(-1, 1, n)], axis=1
    )
    return jaxid.models.ur5(joint_terms=("ia", "fv", "fc", "offset"), joint_params=values)


@pytest.fixture(scope="session")
def states():
    """Random states (q, qd, qdd), each (8, 6)."""
    rng = np.random.default_rng(0)
    return tuple(rng.normal(size=(8, 6)) for _ in range(3))


#: The longest test files (mostly compiling), longest first: ``make test`` runs files whole on two
#: workers (--dist loadfile), so they are handed out first and the short ones fill in behind them
#: (longest-processing-time-first scheduling). Measured on 2 cores with a fresh cache; a stale
#: order only costs balance.
LONGEST_FIRST = (
    "test_dynamics.py",
    "test_readme.py",
    "test_cli.py",
    "test_lugre.py",
    "test_optimize.py",
    "test_sdp.py",
    "test_streaming.py",
    "test_cache.py",
    "test_friction_models.py",
    "test_gravity.py",
    "test_payload.py",
    "test_estimators.py",
    "test_consistent.py",
    "test_regressor.py",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long study, left out of make test (run by make test-all)")
    jax.config.update("jax_enable_x64", True)
    if hasattr(config.option, "loadscopereorder"):  # xdist's default puts files with many tests first
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
