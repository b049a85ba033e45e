PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Test processes: one per core of the 2-core CI machine (make test TEST_WORKERS=0 runs serially),
# each single-threaded (XLA and BLAS thread pools would only spin against the other worker).
TEST_WORKERS ?= 2
# One fresh persistent XLA cache shared by both workers: a program compiled in one is read by
# the other (tests/conftest.py enables jaxid.cache in JAXID_CACHE_DIR).
TEST_CACHE := $(CURDIR)/build/test-xla-cache
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 JAXID_CACHE_DIR=$(TEST_CACHE) \
	XLA_FLAGS="$(XLA_FLAGS) --xla_cpu_multi_thread_eigen=false"

.PHONY: demo test lint test-all docs notebooks clean

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; install Python 3.11 or run 'make PYTHON=python3 ...'"; exit 2; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade pip >/dev/null
	$(PY) -m pip install -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/jaxid demo

# Ruff (lint and format), the layer contracts (import-linter, .importlinter) and the type check.
lint: $(STAMP)
	$(VENV)/bin/ruff check jaxid tests benchmarks
	$(VENV)/bin/ruff format --check jaxid tests benchmarks
	PYTHONPATH=$(CURDIR) $(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test: lint
	rm -rf $(TEST_CACHE) && mkdir -p $(TEST_CACHE)
	$(TEST_ENV) $(PY) -m pytest tests -q --durations=15 -m "not slow" -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) build site *.egg-info

# The documentation site (mkdocs-material + mkdocstrings) into site/; warnings are errors.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

# The tutorial notebooks in JupyterLab (the notebooks extra).
notebooks: $(STAMP)
	$(PY) -m pip install -e ".[notebooks]" >/dev/null
	$(VENV)/bin/jupyter lab notebooks

# Also the slow tests (full LuGre identification from noiseless data): minutes on 2 cores.
test-all: $(STAMP)
	$(PY) -m pytest tests -q --durations=15
