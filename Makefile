# The README's two commands: `make run` and `make test`. Both install what they need first
# (scripts/setup.sh is idempotent) and work on a fresh Debian 12 machine, as root or not.
.PHONY: setup setup-dev run demo lock test test-unit test-integration test-e2e test-model lint typecheck check bench clean reference

VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

# Runtime dependencies only (requirements.lock); `setup-dev` adds the dev tools.
setup:
	bash scripts/setup.sh

setup-dev:
	MEMORY_EXTRAS=dev bash scripts/setup.sh

run: setup
	$(VENV)/bin/memory serve --host $(HOST) --port $(PORT)

demo: setup
	$(VENV)/bin/memory demo

# Regenerates both lock files from pyproject.toml (needs network access to PyPI).
lock:
	python3 -m venv /tmp/memory-lock-venv && /tmp/memory-lock-venv/bin/pip install -q uv
	/tmp/memory-lock-venv/bin/uv pip compile pyproject.toml --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 -o requirements.lock
	/tmp/memory-lock-venv/bin/uv pip compile pyproject.toml --extra dev --generate-hashes \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 -o requirements-dev.lock

test: setup-dev
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts
	$(VENV)/bin/mypy
	$(PY) -m pytest $(PYTEST_WORKERS)

# The suite runs on pytest-xdist workers, each with its own PostgreSQL cluster; a file's tests
# stay together on one worker, so a module's `memory serve` starts once, and files go out in
# collection order, the ones marked `long` first (docs/adr/0143). More workers than cores: the
# suite waits on PostgreSQL and child processes more than it computes. PYTEST_WORKERS= runs it
# in one process.
PYTEST_WORKERS ?= -n 3 --dist loadfile --no-loadscope-reorder

# The suite's tiers, each on its own (docs/testing.md): `make test` runs them all.
# test-unit: no I/O, no PostgreSQL, without the tests marked slow and without the
# schemathesis plugin (it imports hypothesis at start-up): seconds, for the edit loop.
test-unit: setup-dev
	$(PY) -m pytest tests/unit -m "not slow" -p no:schemathesis -q

test-integration: setup-dev
	$(PY) -m pytest tests/integration -q $(PYTEST_WORKERS)

test-e2e: setup-dev
	$(PY) -m pytest tests/e2e -q $(PYTEST_WORKERS)

test-model: setup-dev
	$(PY) -m pytest tests/model -q $(PYTEST_WORKERS)

lint: setup-dev
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts

typecheck: setup-dev
	$(VENV)/bin/mypy

# The API reference of the HTTP client and the in-process API, generated from the code by
# pdoc (docs/adr/0130): open $(REFERENCE_DIR)/index.html. tests/unit/docs/test_reference.py
# runs this recipe.
REFERENCE_DIR ?= build/reference
reference: setup-dev
	$(PY) -m pdoc --docformat markdown --no-search -o $(REFERENCE_DIR) memory.client memory.api

bench: setup-dev
	$(PY) bench/policy_search.py
	$(PY) bench/history.py
	$(PY) bench/full_text.py
	$(PY) bench/org_directory.py
	$(PY) bench/relevance.py
	$(PY) bench/answers.py
	$(PY) bench/bodies.py
	$(PY) bench/tenants.py
	$(PY) bench/sweep_work.py
	$(PY) bench/durability.py
	$(PY) bench/large_orgs.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
