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

.PHONY: run test test-pure test-engine test-pilot test-layout check lint bench charts \
	screenshots gpu-check gpu-wheels peer-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(if $(TORCH_INDEX),$(PY) -m pip install -q torch --index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/infertop $(ARGS)

# The suite in two worker processes, a test file to each at a time (tests/conftest.py groups
# them, the files that start Ray in one group, and queues the longest first). A test uses about one core on average
# (dynamo traces on one thread), so two workers on two cores halve the wait. TEST_WORKERS=0: one
# process, in file order.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -ra $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder) $(ARGS)

# The suite by layer (tests/layers.py marks each test with one): pure values, the engine (and
# the CLI and child processes), the dashboard through Textual's Pilot, its SVG layout snapshots.
# A lane imports only the test files that can hold its tests.
test-pure test-engine test-pilot test-layout: $(STAMP)
	$(PY) -m pytest -q -ra -m $(@:test-%=%) $(ARGS)

# ruff and mypy, configured in pyproject.toml
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

check: lint
	$(PY) -m pytest -q -m pure $(ARGS)

bench: $(STAMP)
	$(VENV)/bin/infertop bench --quick --out bench-out $(ARGS)

# The docs' charts from a real run (t5-tiny, --quick; docs/charts.md says which and where)
CHARTS_OUT ?= /tmp/infertop-charts
charts: $(STAMP)
	rm -rf $(CHARTS_OUT)
	$(VENV)/bin/infertop bench --quick --experiments E1,E3,E4,E6,E7,E8 --out $(CHARTS_OUT) $(ARGS)
	$(PY) -m tools.docs_charts $(CHARTS_OUT) docs/charts
	$(VENV)/bin/infertop snapshot show screenshots/sessions/4-continuous-paged.json \
		--plot docs/charts/session_timeline.svg > /dev/null
	$(VENV)/bin/infertop snapshot compare screenshots/sessions/1-baseline.json \
		screenshots/sessions/3-bucketing.json --plot docs/charts/compare_cdf.svg > /dev/null

# The GPU acceptance (tools/gpu_check/check.py), on the GPU machine's own python3 and
# torch: no venv, no download. The pure-Python dependencies its image lacks come from .whl/
# (`make gpu-wheels` fills it where a registry is reachable), installed into .gpu-site/.
GPU_PYTHON ?= python3
gpu-check:
	$(if $(wildcard .whl/*.whl),$(GPU_PYTHON) -m pip install -q --no-index --no-deps \
		--no-compile --upgrade --target .gpu-site .whl/*.whl)
	PYTHONPATH=$(CURDIR)/.gpu-site:$(CURDIR) PYTHONUNBUFFERED=1 \
		$(GPU_PYTHON) -m tools.gpu_check.check $(ARGS)

gpu-wheels:
	$(GPU_PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
		--implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 --platform any -d .whl -r gpu-wheels.txt

# AIPerf and guidellm drive `infertop serve` on loopback and their client records are joined
# with the server's session request by request (tools/peer_check.py, docs/peers.md). The peers
# pin their own libraries: they get a virtual environment of their own, made on first use.
PEERS_VENV ?= .peers-venv
$(PEERS_VENV)/.installed:
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install -q aiperf guidellm
	touch $@

peer-check: $(STAMP) $(PEERS_VENV)/.installed
	$(PY) -m tools.peer_check --peers-bin $(PEERS_VENV)/bin $(ARGS)

screenshots: $(STAMP)
	$(PY) -m tools.screenshots screenshots/sessions/*.json --size 80x24

clean:
	rm -rf $(VENV) $(PEERS_VENV) .pytest_cache .mypy_cache .ruff_cache
