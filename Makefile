# Elion developer entry points. `make` alone lists them.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV   := .venv
PY     := $(VENV)/bin/python
# One stamp per lock: the app's packages, then the developers' on top.
APP_STAMP := $(VENV)/.installed-app
DEV_STAMP := $(VENV)/.installed-dev
LOCK_VENV := .venv-lock

HOST ?= 127.0.0.1
PORT ?= 8000
ARGS ?=
PYTEST_ARGS ?= $(ARGS)
export HOST PORT PYTEST_ARGS

.PHONY: help run run-scaled check test test-sqlite test-postgres lint lock

help: ## list the targets
	@echo "Elion: make <target>   (HOST=, PORT= for run; ARGS=\"pytest args\" for the test targets)"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  \1\t\2/' | expand -t 18

run: $(APP_STAMP) ## install the app's packages, migrate, serve Daphne + the django-q2 cluster (Ctrl-C stops)
	bash scripts/run.sh

run-scaled: $(APP_STAMP) ## PostgreSQL + Redis + nginx in front of 2 Daphne and 2 qcluster processes
	bash scripts/run_scaled.sh

check: $(DEV_STAMP) ## ruff, lint-imports, migrations, the fast tier on SQLite (minutes)
	bash scripts/test.sh check

test: $(DEV_STAMP) ## the whole suite: SQLite and PostgreSQL at once, browser and fuzz on SQLite (what CI runs)
	bash scripts/test.sh all

test-sqlite: $(DEV_STAMP) ## the whole suite on SQLite only
	bash scripts/test.sh sqlite

test-postgres: $(DEV_STAMP) ## the suite on a throwaway PostgreSQL (browser and fuzz left to SQLite)
	bash scripts/test.sh postgres

lint: $(DEV_STAMP) ## ruff, then lint-imports against .importlinter
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

lock: ## recompile requirements.txt and requirements-dev.txt (with hashes) from the .in files
	@test -x $(LOCK_VENV)/bin/pip-compile || { python3 -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/pip install -q pip-tools; }
	$(LOCK_VENV)/bin/pip-compile -q --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links --output-file requirements.txt requirements.in
	$(LOCK_VENV)/bin/pip-compile -q --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links --output-file requirements-dev.txt requirements-dev.in

# Internal: create the venv if missing; reinstall only when a lock changed.
# pip's own lines, one per package as it is fetched and once as they install (its progress bar needs a
# terminal, and -q printed nothing for a minute): `make run` shows where the first start is.
PIP_PROGRESS := grep --line-buffered -E '^(Collecting|Processing|Installing|Successfully|ERROR)' || true

$(APP_STAMP): requirements.txt
	@test -x $(PY) || { echo "make: creating the virtual environment in $(VENV)"; python3 -m venv $(VENV); }
	@echo "make: installing the app's packages from requirements.txt (the first time takes a minute or so)"
	@set -o pipefail; $(PY) -m pip install --disable-pip-version-check --require-hashes -r requirements.txt \
		| { $(PIP_PROGRESS); }
	@touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt
	@test -x $(PY) || { echo "make: creating the virtual environment in $(VENV)"; python3 -m venv $(VENV); }
	@echo "make: installing the app's and the developers' packages (the first time takes a few minutes)"
	@set -o pipefail; $(PY) -m pip install --disable-pip-version-check --require-hashes \
		-r requirements.txt -r requirements-dev.txt | { $(PIP_PROGRESS); }
	@touch $@ $(APP_STAMP)
