# The README's two commands: `make run` and `make test`. Both install what they need first
# (scripts/setup.sh is idempotent) and work on a fresh Debian 12 machine, as root or not.
.PHONY: setup run demo test lint typecheck check bench clean

VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8080

setup:
	bash scripts/setup.sh

run: setup
	$(VENV)/bin/memory serve --host $(HOST) --port $(PORT)

demo: setup
	$(VENV)/bin/memory demo

test: setup
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest

lint:
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench

typecheck:
	$(VENV)/bin/mypy

bench: setup
	$(PY) bench/policy_search.py
	$(PY) bench/history.py
	$(PY) bench/full_text.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
