# spl-bench — everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Local dataset copies: $SPL_BENCH_DATA_DIR if set, else ../shared/datasets when it exists.
SPL_BENCH_DATA_DIR ?= $(abspath $(wildcard ../shared/datasets))
export SPL_BENCH_DATA_DIR
PYTEST_WORKERS ?= 2

.PHONY: install dev run test test-slow lint reproduce-tables bench bench-full clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed  ## install the package and its dependencies into .venv

dev: $(VENV)/.dev            ## install the dev tools (pytest, hypothesis, ruff)

run: install                 ## the default experiment: ACS + lasso on scikit-learn's diabetes data
	$(BIN)/spl-bench run

test: dev                    ## the default test suite (< 10 min on 2 cores)
	$(BIN)/python -m pytest -m "not slow" -n $(PYTEST_WORKERS) -q

test-slow: dev               ## the slow reproduction checks
	$(BIN)/python -m pytest -m slow -q

lint: dev
	$(BIN)/ruff check src tests scripts

reproduce-tables: install    ## the paper's tables, from raw data to results/tables (hours on 2 cores)
	$(BIN)/python scripts/reproduce_tables.py

bench: install               ## speed benchmarks (quick sizes), written under results/bench/
	$(BIN)/python scripts/bench_gaga.py --quick
	$(BIN)/python scripts/bench_outlier_path.py
	$(BIN)/python scripts/bench_dspl.py

bench-full: install          ## the full-size benchmarks (hours on 2 cores)
	$(BIN)/python scripts/bench_gaga.py
	$(BIN)/python scripts/bench_outlier_path.py
	$(BIN)/python scripts/bench_dspl.py --n 1000000 --p 50

clean:
	rm -rf runs .pytest_cache .ruff_cache
