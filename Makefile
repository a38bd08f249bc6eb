# The README's quick start: `make demo` and `make test`, on a fresh machine with Python 3.11+.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The tests run in parallel (pytest-xdist), two workers a core: a system test waits on the
# processes it started while another uses the core (three a core measured slower: the suite
# keeps both cores busy throughout). Whole modules go to a worker, costliest first
# (tests/scheduling.py). TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The tests start many Python processes; where PYTHONDONTWRITEBYTECODE is set (as on the
# machines this was measured on) each would compile the project's modules again (0.1-0.25 s
# for the server's imports), so they are compiled once here; and pytest's rewritten test
# modules, which every xdist worker would otherwise rewrite again (scripts/rewrite_tests.py).
BYTECODE := $(BIN)/python -m compileall -q -j0 arena sdk dashboard bots && $(BIN)/python scripts/rewrite_tests.py

.PHONY: demo test test-fast test-under-load services lint bench proto screenshots clean dist

$(VENV)/.installed-dev: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed-server: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[arena,dashboard]'
	touch $@

# The main job: house bots on local gRPC ports, a round-robin among them, then the dashboard
# (`make demo PORT=8123` serves it on another port; DEMO_ARGS=--fresh plays a new round-robin).
demo: $(VENV)/.installed-server
	$(BIN)/tonk demo $(if $(PORT),--port $(PORT)) $(DEMO_ARGS)

# Lint and types first (as configured in pyproject.toml), then the tests: CI runs exactly this.
test: $(VENV)/.installed-dev services
	$(BIN)/ruff check .
	$(BIN)/mypy
	@$(BYTECODE)
	$(BIN)/pytest $(PARALLEL)

# The fast loop while working: all but tests/system (what a user does from outside: installs,
# guides, the demo, compose, the browser, processes) and the tests marked slow, by hand or by a
# whole run's measure (tests/costly.txt, tests/scheduling.py). ARGS as below.
test-fast: $(VENV)/.installed-dev services
	@$(BYTECODE)
	$(BIN)/pytest $(PARALLEL) -q -m "not slow" --ignore=tests/system $(ARGS)

# The tests beside two busy loops per core (scripts/under_load.py): no verdict may depend on how
# busy the machine is. ARGS are pytest's: make test-under-load ARGS="tests/arena/play/test_faults.py -x"
test-under-load: $(VENV)/.installed-dev services
	@$(BYTECODE)
	$(BIN)/python scripts/under_load.py $(PARALLEL) $(ARGS)

services:
	@scripts/services.sh

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/engine.py

# docs/screenshots/: every dashboard page at 1360x900 and 390x844, from the browser tests.
screenshots: $(VENV)/.installed-dev
	TONK_UPDATE_SCREENSHOTS=1 $(BIN)/pytest -q tests/system/browser

proto: $(VENV)/.installed-dev
	$(BIN)/python scripts/gen_proto.py

# The wheel a bot author can install without a checkout: pip install dist/tonk_arena-*.whl
dist: $(VENV)/.installed-server
	rm -rf build dist
	$(BIN)/pip wheel -q --no-deps --wheel-dir dist .
	rm -rf build
	@ls dist/*.whl

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist
