# Two commands on a fresh machine: `make demo` (set-up + the main job) and `make test` (set-up + tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOME_DIR := $(CURDIR)/.arena
STAMP := $(VENV)/.installed
export ARENA_HOME ?= $(HOME_DIR)
export DAGSTER_HOME ?= $(HOME_DIR)/dagster
export MLFLOW_TRACKING_URI ?= sqlite:///$(HOME_DIR)/mlflow.db
export ARENA_PROFILE ?= small

.PHONY: setup demo cycle release test lint ui bench clean

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c requirements.lock -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)
	@mkdir -p $(DAGSTER_HOME)
	@test -f $(DAGSTER_HOME)/dagster.yaml || printf 'telemetry:\n  enabled: false\n' > $(DAGSTER_HOME)/dagster.yaml

# The main job: materialise every asset of the project's graph on embedded defaults (Dagster's own executor), then
# every check's verdict (the league's gates among them) read back from the run (pipeline/run.py --last); the exit
# status is the job's.
demo: setup
	$(VENV)/bin/dagster job execute -m pipeline.definitions -j main_job; status=$$?; \
	$(PY) -m pipeline.run --last main_job; exit $$status

# One Loong expert-iteration cycle on the network `make demo` published (expert-N -> expert-N+1); the job's log at
# INFO, then each gate's verdict (pipeline/run.py) and exit status 1 when a step or gate failed.
cycle: setup
	$(PY) -m pipeline.run loong_cycle_job

# The published network's searching bot: the search check, then the release check against the foil.
release: setup
	$(PY) -m pipeline.run loong_release_job

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: lint
	$(PY) -m pytest -q -n 2

ui: setup
	$(VENV)/bin/dagster dev -m pipeline.definitions -h 127.0.0.1 -p 3000

bench: setup
	$(PY) -m ops.bench

clean:
	rm -rf .arena
