# Two commands do all the set-up on a fresh machine:
#   make demo   the main job (CPU by default)
#   make test   the whole test suite
# Both create .venv, install requirements.txt (`make test` also requirements-test.txt:
# pytest, PyTorch, ruff, clang-format) and build the native code first (cached: a second run rebuilds
# nothing). CUDA kernels are compiled whenever a CUDA toolkit is found; BUILD_FLAGS="--cuda on"
# makes that mandatory (CI).
#   make lint        ruff check and tools/format.sh --check (CI); tools/format.sh formats Python and C++
#   make fuzz        the fuzzer's long campaign under ASan + UBSan (docs/fuzzing.md)
#   make fuzz-short  its short campaign (CI)

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD_FLAGS ?=
DEMO_ARGS ?=
PYTEST_ARGS ?=
FUZZ_ARGS ?=

.PHONY: setup setup-test build demo test lint bench clean sanitize-build fuzz fuzz-short

# One stamp per requirements file: each is reinstalled when its file changes.
$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install --quiet -r requirements-test.txt
	touch $@

setup: $(VENV)/.installed

setup-test: $(VENV)/.installed-test

build: setup
	$(PY) setup_ops.py $(BUILD_FLAGS)

demo: build
	$(PY) -m fastspec.demo $(DEMO_ARGS)

test: setup-test build
	$(PY) -m pytest tests $(PYTEST_ARGS)

lint: setup-test
	$(PY) -m ruff check .
	PYTHON=$(PY) tools/format.sh --check

bench: build
	$(PY) -m bench.bench_ngram_match
	$(PY) -m bench.bench_ngram_append
	$(PY) -m bench.bench_sampling
	$(PY) -m bench.bench_verify_update
	$(PY) -m bench.bench_process_logits
	$(PY) -m bench.bench_adaptive --grid smoke
	$(PY) -m bench.bench_call_overhead

# The pybind11 bindings under ASan + UBSan, into build/sanitize/ (never over fastspec/_lib).
sanitize-build: setup-test
	$(PY) setup_ops.py --bindings-only --sanitize

fuzz: sanitize-build
	$(PY) -m tests.fuzz --long --sanitize $(FUZZ_ARGS)

fuzz-short: sanitize-build
	$(PY) -m tests.fuzz --short --sanitize $(FUZZ_ARGS)

clean:
	rm -rf build fastspec/_lib/*.so
