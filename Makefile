# edgespec: `make demo` runs the default job, `make test` runs every check.
# Both create the project-local virtual environment .venv when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.edgespec-installed

.PHONY: demo test lint typecheck unit clean cuda-venv

# llama-cpp-python is built once from its sdist in the exact (batch-invariant) configuration
# and cached outside the clone (tools/build_llamacpp_wheel.sh; about 2 min the first time,
# nothing once cached). Every wheel of the environment is downloaded once per set of pins into
# a folder beside it (tools/wheelhouse.sh), and uv installs from that folder alone
# (--no-index): against the index pip spent most of an install resolving.
LLAMACPP_WHEELS = $$(tools/build_llamacpp_wheel.sh --dir)

$(STAMP): pyproject.toml constraints.txt tools/build_llamacpp_wheel.sh tools/wheelhouse.sh \
		tools/warm_bytecode.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	tools/build_llamacpp_wheel.sh $(PY) >/dev/null
	# pip installs uv alone (one wheel), uv the rest: from the same folder, with the same pins,
	# in seconds (a minute with pip), linking files from its cache (~/.cache/uv) once they are
	# unpacked there. torch is pinned: 2.13.0 is a local CPU wheel; anything else pulls GBs of
	# CUDA. Nothing is compiled at install: Python compiles a module when it is first imported.
	wheels=$$(tools/wheelhouse.sh $(PY) "$(LLAMACPP_WHEELS)") && \
	$(PY) -m pip install -q --no-compile --no-index --find-links "$$wheels" -c constraints.txt uv && \
	$(VENV)/bin/uv pip install -q --python $(PY) --no-index --find-links "$$wheels" \
		-c constraints.txt torch==2.13.0 -e ".[runtime,learn,dev,llamacpp,data]"
	# the bytecode of what the commands import, written once even where the environment sets
	# PYTHONDONTWRITEBYTECODE (there each start compiled it again: docs/DEPLOY.md)
	PYTHONDONTWRITEBYTECODE= $(PY) tools/warm_bytecode.py
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/edgespec sim

lint: $(STAMP)
	$(VENV)/bin/ruff check edgespec tests benchmarks examples
	$(VENV)/bin/ruff format --check edgespec tests benchmarks examples
	$(VENV)/bin/lint-imports  # the import contracts in pyproject.toml

# mypy's cache outside the clone, shared by every clone on the machine: an entry whose file's
# time or path differ is kept when the file's hash is the same (a fresh clone's files and its
# .venv's), so a fresh clone checks what changed instead of every module (a cold check: 30 s)
MYPY_CACHE ?= $(HOME)/.cache/edgespec/mypy

typecheck: $(STAMP)
	$(VENV)/bin/mypy --cache-dir "$(MYPY_CACHE)" edgespec tests benchmarks examples

# four workers on the two cores (much of the suite waits: servers starting, timeouts running
# out; on two workers `/usr/bin/time` counted 509 CPU s in 391 s, the cores 65 % busy; the
# whole suite run back to back on an idle machine took 443 s on three workers, 375 s on four),
# a test file each at a time, the longest files first (tests/conftest.py); a
# worker that a test's timeout ends (pyproject.toml) is replaced once, so a test that hangs
# fails the run in minutes with every thread's stack instead of holding it
# PYTHONDONTWRITEBYTECODE emptied: where the environment sets it, every worker and every
# `edgespec` the tests start would compile the package and rewrite the tests afresh.
unit: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/pytest -q -n 4 --dist loadfile --no-loadscope-reorder \
		--max-worker-restart 1

# lint, mypy and the test workers on two cores: lint and mypy start first, the tests when
# lint is done (20 s), so no core waits for lint alone.
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 lint typecheck unit

# Opt-in, for a GPU server; never run by demo or test: a second environment, .venv-cuda, with
# the same pinned torch 2.13.0 built for CUDA (from the PyTorch wheel index for the CUDA
# version TORCH_CUDA_INDEX names: match it to the driver) and the runtime (serve, draft).
CUDA_VENV := .venv-cuda
TORCH_CUDA_INDEX ?= https://download.pytorch.org/whl/cu128

cuda-venv:
	test -x $(CUDA_VENV)/bin/python || $(PYTHON) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/python -m pip install -q --index-url $(TORCH_CUDA_INDEX) torch==2.13.0
	$(CUDA_VENV)/bin/python -m pip install -q -c constraints.txt -e ".[runtime]"
	$(CUDA_VENV)/bin/python -c "import torch; print('torch', torch.__version__, 'CUDA', \
		torch.version.cuda, 'GPUs', torch.cuda.device_count() if torch.cuda.is_available() else 0)"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
