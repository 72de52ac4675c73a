# Quick start: `make run` serves on http://127.0.0.1:8765/mcp, `make test` runs every check.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run serve-stdio test lint typecheck unit browser clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/mcp-memory-server --transport http

serve-stdio: $(STAMP)
	$(BIN)/mcp-memory-server

lint: $(STAMP)
	$(BIN)/ruff check mcp_memory_server tests benchmarks
	$(BIN)/ruff format --check mcp_memory_server tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# Debian's chromium and a CJK font for tests/test_dashboard_browser.py, when missing (apt-get).
browser:
	bash .ci/install-browser

unit: $(STAMP) browser
	$(BIN)/python -m pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
