# The whole set-up on a fresh machine is `make run` (the dashboard) or `make test`
# (the suite); either creates the virtual environment on first use. `make check` is the fast
# lane while working: lint, types and the pure tests (no engine), in about a minute.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where torch comes from. Empty: the package registry's default, a CUDA build (~5 GB of wheels,
# which also runs on a CPU). On a machine without a GPU, torch's CPU build is far smaller:
#   make run TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=

.PHONY: run test check lint bench screenshots gpu-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install -q torch --index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/infertop $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -q -ra $(ARGS)

# ruff and mypy, configured in pyproject.toml
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

check: lint
	$(PY) -m pytest -q -m pure $(ARGS)

bench: $(STAMP)
	$(VENV)/bin/infertop bench --quick --out bench-out $(ARGS)

# NVML vs nvidia-smi, CUDA graphs, fp16 and the HBM roofline: run it on a machine with a GPU
gpu-check: $(STAMP)
	$(PY) -m probe.engine.gpu_check $(ARGS)

screenshots: $(STAMP)
	$(PY) -m tui.screenshots screenshots/sessions/*.json --size 80x24

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
