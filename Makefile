# Two commands: `make run` (set up + serve the demo) and `make test` (set up + test suite).
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed
INSPECT_STAMP := $(VENV)/.inspect-installed
WHEELHOUSE := $(VENV)/wheelhouse
INSTALL_LOG := $(VENV)/install.log
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

.PHONY: run test lint bench setup migrate demo worker clean screenshots messages

# The harness is its own distribution (benchforge_harness/pyproject.toml, import name benchforge_harness:
# `harness` on PyPI is another project), installed first so the platform's dependency on it is met from
# the repo. The wheelhouse holds the wheels of the harness's openai extra,
# for the test that installs the harness wheel into a clean virtualenv without the network.
$(STAMP): pyproject.toml benchforge_harness/pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "benchforge needs Python 3.11, found " + sys.version.split()[0]'
	@echo "Installing benchforge into $(VENV) (first run only: a few minutes; pip's output goes to $(INSTALL_LOG))"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@{ $(BIN)/python -m pip install --quiet --upgrade pip \
	  && $(BIN)/python -m pip uninstall -qq --yes benchforge \
	  && $(BIN)/python -m pip install --quiet -e ./benchforge_harness \
	  && $(BIN)/python -m pip install --quiet -e '.[test,labelstudio]' \
	  && $(BIN)/python -m pip download --quiet --only-binary=:all: --dest $(WHEELHOUSE) \
	  $$($(BIN)/python -c 'import tomllib; print(*tomllib.load(open("benchforge_harness/pyproject.toml", "rb"))["project"]["optional-dependencies"]["openai"])'); \
	  } > $(INSTALL_LOG) 2>&1 || { cat $(INSTALL_LOG); echo "Installing failed: the output above is in $(INSTALL_LOG)"; exit 1; }
	@touch $(STAMP)

# The interface's translation catalogs, compiled beside their .po files (benchforge/catalogs.py).
CATALOGS := $(patsubst %.po,%.mo,$(wildcard locale/*/LC_MESSAGES/django.po))
%.mo: %.po $(STAMP)
	@$(BIN)/python -m benchforge.catalogs compile

setup: $(STAMP) $(CATALOGS)

migrate: setup
	@echo "Bringing the database up to date..."
	@$(BIN)/python manage.py migrate --noinput --verbosity 0

# With no models file, the demo writes one declaring the built-in offline demo endpoints (and says so).
demo: migrate
	@$(BIN)/python manage.py seed_demo --demo-models

# The server announces itself in one line, with the port it really listens on.
run: demo
	@$(BIN)/python manage.py serve --skip-checks $(HOST):$(PORT)

# The house rules first (lint, formatting, import layers: pyproject.toml), then the suite.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

# inspect-ai (~90 MB with its dependencies) only for the test that runs a release in Inspect: never
# installed by `make run`.
$(INSPECT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,labelstudio,inspect]'
	touch $(INSPECT_STAMP)

# The suite runs in parallel processes (pytest-xdist): `auto` is one per core plus one, 2 to 4 (tests/conftest.py
# keeps the processes apart and picks the number; loadgroup keeps the tests that share one server,
# Label Studio, on one process). TEST_PROCESSES=0 runs it in this process alone.
TEST_PROCESSES ?= auto
# PYTHONDONTWRITEBYTECODE is emptied (some machines set it): the many Python processes the suite starts
# (job workers, commands, servers) then load the compiled modules the first one wrote, and pytest keeps
# its rewritten test modules (a process collects in 4 s instead of 11 s from the second run on).
test: lint $(INSPECT_STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadgroup $(PYTEST_ARGS)

# Performance checks print their numbers; they are not part of `make test`. Their extra
# packages (faiss, to compare against) are installed here, never for `make run`.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,labelstudio,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	@set -e; for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script; done

# The demo's main pages at 1280x800 and 390x844 for each role, as PNG files in var/screenshots/
# (a fresh demo on its own SQLite file, Debian's chromium); not part of `make test`.
screenshots: setup
	$(BIN)/python -m demo.screenshots

# A worker for the scaled runtime: needs CELERY_BROKER_URL (and DATABASE_URL shared with the web).
worker: setup
	$(BIN)/celery -A benchforge worker --loglevel=INFO

# After changing interface text: bring the Chinese catalog up to date, then translate what is new.
messages: setup
	$(BIN)/python manage.py makemessages -l zh_Hans $$($(BIN)/python -c 'from benchforge.catalogs import MAKEMESSAGES_OPTIONS as o; print(*o)')

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache
