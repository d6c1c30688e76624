# Two entry points on a fresh clone: `make repro` (the pipeline) and `make test`.
# Both create .venv first when it is missing. torch is pinned to 2.13.0 and installed
# first, so pip takes the local CPU build where one is provided instead of fetching
# the CUDA stack.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STAMP_LLM := $(VENV)/.installed-local-llm
PYTEST_ARGS ?=

.PHONY: setup setup-llm test verify repro repro-from-scratch bench lint clean-venv

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# llama-cpp-python compiles for about 5 minutes on 2 cores; only tests and
# `envgen llm record --backend local` need it, `make repro` replays the cache.
# It is built for a portable x86-64 (AVX2) target, not -march=native: a native build
# on a CPU that advertises AMX (Intel Xeon, Sapphire Rapids on) segfaulted on its
# first completion (docs/llm.md, "Local backend"). --no-cache-dir keeps pip from
# reusing a wheel built natively earlier.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
setup-llm: $(STAMP_LLM)

$(STAMP_LLM): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir -e '.[local-llm,dev]'
	touch $@

test: setup-llm
	$(BIN)/ruff check envgen replication tests
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Re-derive every committed table, plot CSV and CLAIMS.md number from the raw run logs,
# check every run's manifest and the LLM cache; one line per table, nonzero on a difference.
verify: setup
	$(BIN)/envgen verify

repro: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

# A fresh clone's `make repro` finds the committed results up to date. This retrains
# every run instead: it empties the run store and removes the train stages' runs.json,
# then re-runs every stage. If it is interrupted, `make repro` finishes the job: the
# stages whose runs.json is missing re-run, and finished runs are kept.
repro-from-scratch: setup
	rm -rf results/runs results/*/runs.json
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro --force

bench: setup
	$(BIN)/envgen bench env
	$(BIN)/envgen bench train
	$(BIN)/envgen bench heist

lint: setup
	$(BIN)/ruff check envgen replication tests
	$(BIN)/ruff format --check envgen replication tests

clean-venv:
	rm -rf $(VENV)
