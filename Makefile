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

$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
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

# Debian's chromium and a CJK font for tests/test_dashboard_browser.py, when missing (apt-get).
browser:
	bash .ci/install-browser

# Debian's PostgreSQL server and pg_trgm for the PostgreSQL tests, when missing (apt-get; the
# service is not started: tests/pg_server.py runs a throwaway cluster on loopback).
postgres:
	bash .ci/install-postgres

unit: $(STAMP) browser postgres
	$(BIN)/python -m pytest

test: lint typecheck unit

# The MCP Inspector (Node.js) for tests/test_inspector_cli.py, pinned in .ci/inspector: `npm ci`
# again whenever the lockfile changes. Node.js and npm must be installed (CI machines have them).
INSPECTOR := .ci/inspector
$(INSPECTOR)/node_modules/.installed-stamp: $(INSPECTOR)/package.json $(INSPECTOR)/package-lock.json
	@command -v npm >/dev/null || { echo "make inspector: npm not found; install Node.js (with npm) for the MCP Inspector check" >&2; exit 1; }
	cd $(INSPECTOR) && npm ci --no-audit --no-fund
	touch $@

.PHONY: inspector
inspector: $(INSPECTOR)/node_modules/.installed-stamp
unit: inspector

# The MCP conformance suite for tests/test_conformance.py, pinned in .ci/conformance with the Node.js
# it needs (>= 22, the npm package `node`: no system Node.js of that version is required, only npm).
CONFORMANCE := .ci/conformance
$(CONFORMANCE)/node_modules/.installed-stamp: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	@command -v npm >/dev/null || { echo "make conformance: npm not found; install Node.js (with npm) for the MCP conformance check" >&2; exit 1; }
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund
	touch $@

.PHONY: conformance
conformance: $(CONFORMANCE)/node_modules/.installed-stamp
unit: conformance

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
