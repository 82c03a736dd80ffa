# Elion developer entry points.
#   make run                 migrate, collectstatic, then daphne + django-q cluster (Ctrl-C stops both)
#   make run HOST=0.0.0.0 PORT=9000
#   make run-scaled          PostgreSQL + Redis (started on loopback if not running), 2 Daphne workers and
#                            2 qcluster processes behind nginx on HOST:PORT (scripts/run_scaled.sh; see Procfile)
#   make test                whole suite on SQLite and on a throwaway PostgreSQL, both at once
#   make test ARGS="-k foo"  extra pytest arguments (or set PYTEST_ARGS)
#   make test-sqlite | test-postgres | lint   (lint: ruff, then lint-imports against .importlinter)

SHELL := /bin/bash
.DEFAULT_GOAL := test

VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

HOST ?= 127.0.0.1
PORT ?= 8000
ARGS ?=
PYTEST_ARGS ?= $(ARGS)
export HOST PORT PYTEST_ARGS

.PHONY: venv run run-scaled test test-sqlite test-postgres lint

# Internal: create the venv if missing; reinstall only when requirements.txt changed.
venv: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	@touch $@

run: venv
	bash scripts/run.sh

run-scaled: venv
	bash scripts/run_scaled.sh

test: venv
	bash scripts/test.sh all

test-sqlite: venv
	bash scripts/test.sh sqlite

test-postgres: venv
	bash scripts/test.sh postgres

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
