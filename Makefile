# Two entry points on a fresh clone: `make repro` (the pipeline) and `make test`.
# Both create .venv first when it is missing, from the lock files. torch is pinned to
# 2.13.0 and installed first, so pip takes the local CPU build where one is provided
# instead of fetching the CUDA stack.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STAMP_LLM := $(VENV)/.installed-local-llm
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (0: one process). A file's tests share a worker
# (--dist loadfile); tests/conftest.py hands out the longest files first, and
# --no-loadscope-reorder keeps that order.
PYTEST_WORKERS ?= 2

.PHONY: setup setup-llm lock test verify repro repro-from-scratch bench lint clean-venv

setup: $(STAMP)

# Every dependency comes from requirements.lock at its exact version, hash-checked; torch
# is pinned apart (its CPU and CUDA builds differ by machine; see the lock's header).
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

# llama-cpp-python compiles for about 5 minutes on 2 cores; only tests and
# `envgen llm record --backend local` need it, `make repro` replays the cache.
# It is built for a portable x86-64 (AVX2) target, not -march=native: a native build
# on a CPU that advertises AMX (Intel Xeon, Sapphire Rapids on) segfaulted on its
# first completion (docs/llm.md, "Local backend"). --no-cache-dir keeps pip from
# reusing a wheel built natively earlier.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
setup-llm: $(STAMP_LLM)

$(STAMP_LLM): $(STAMP) requirements-llm.lock
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir \
		--require-hashes --no-deps -r requirements-llm.lock
	touch $@

# Refresh the lock files from pyproject.toml (pins already in them are kept; add
# UPGRADE=--upgrade for the newest versions the ranges allow). Uses pip-tools in a
# throwaway environment; torch stays pinned in the Makefile and pyproject.toml.
LOCK_ENV := /tmp/envgen-lock-env
LOCK_ARGS := --generate-hashes --unsafe-package torch --strip-extras --no-emit-index-url \
	--no-emit-find-links --annotation-style line $(UPGRADE)
lock:
	test -x $(LOCK_ENV)/bin/pip-compile || ($(PY) -m venv $(LOCK_ENV) && $(LOCK_ENV)/bin/pip install -q pip-tools)
	$(LOCK_ENV)/bin/pip-compile -q pyproject.toml --extra dev $(LOCK_ARGS) -o requirements.lock
	$(LOCK_ENV)/bin/pip-compile -q pyproject.toml --extra dev --extra local-llm $(LOCK_ARGS) \
		-o requirements-llm.lock

test: setup-llm
	$(BIN)/ruff check envgen replication tests
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

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
