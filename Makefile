# spl-bench — everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Local dataset copies: $SPL_BENCH_DATA_DIR if set, else ../shared/datasets when it exists.
SPL_BENCH_DATA_DIR ?= $(abspath $(wildcard ../shared/datasets))
export SPL_BENCH_DATA_DIR
PYTEST_WORKERS ?= 2
# Exact versions and hashes of every dependency (runtime and dev tools), for Python 3.11 and 3.12:
# `make lock` regenerates it from the ranges in pyproject.toml.
LOCK   := requirements.lock
UV_COMPILE = $(BIN)/uv pip compile --quiet pyproject.toml --extra dev --universal --fork-strategy fewest \
	--python-version 3.11 --generate-hashes --custom-compile-command "make lock"

.PHONY: install dev run test test-latest lock test-slow test-drift-slow lint reproduce-tables reproduce-plan bench bench-full bench-dspl clean

# the locked versions first (pip refuses any package whose hash is not in the lock), then the
# package itself without resolving again
$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

$(VENV)/.dev: $(VENV)/.installed
	touch $@

install: $(VENV)/.installed  ## install the package and its locked dependencies (requirements.lock) into .venv

dev: $(VENV)/.dev            ## the dev tools (pytest, hypothesis, ruff, uv) come with the lock

lock: dev                    ## regenerate requirements.lock: the newest releases the ranges of pyproject.toml allow
	$(UV_COMPILE) --upgrade -o $(LOCK)

# the newest releases, unlocked, in a venv of their own: a breaking release shows up here first
test-latest:                 ## the default suite on the newest releases of every dependency (.venv-latest)
	$(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install -q --upgrade pip
	.venv-latest/bin/python -m pip install -q --upgrade --upgrade-strategy eager -e ".[dev]"
	.venv-latest/bin/python -m pip freeze --exclude-editable > .venv-latest/versions.txt
	.venv-latest/bin/python -m pytest -m "not slow" -n $(PYTEST_WORKERS) -q

run: install                 ## the default experiment: ACS + lasso on scikit-learn's diabetes data
	$(BIN)/spl-bench run

test: dev                    ## the default test suite (< 10 min on 2 cores)
	$(BIN)/python -m pytest -m "not slow" -n $(PYTEST_WORKERS) -q

test-slow: dev               ## the slow reproduction checks
	$(BIN)/python -m pytest -m slow -q

test-drift-slow: dev         ## drift checks of the tables whose cheapest committed cell takes minutes (CI runs them)
	$(BIN)/python -m pytest -m "slow and drift" -n $(PYTEST_WORKERS) -q tests/test_reproduce.py || [ $$? -eq 5 ]  # 5: none to run

lint: dev
	$(BIN)/ruff check src tests scripts

# Tables of the three papers (GAGA 2, 3, 5-16; Outlier-Path op2, op3), runs per cell (empty: each
# table's paper's run count, GAGA 20 and Outlier-Path 10), parallel runs.
TABLES ?= 2 3 5 6 7 8 9 10 11 12 13 14 15 16 op2 op3
RUNS   ?=
JOBS   ?= 1
# runs of the clean-label reference (each GAGA row's plain model without noise: the reason column)
CLEAN_RUNS ?= 5

reproduce-tables: install    ## every table and figure of the papers, ours beside theirs (days on 2 cores; resumable)
	$(BIN)/python scripts/reproduce_tables.py --tables $(TABLES) $(if $(RUNS),--runs $(RUNS)) --jobs $(JOBS)
	$(BIN)/python scripts/reproduce_tables.py --variant clean --tables $(filter-out op%,$(TABLES)) --runs $(CLEAN_RUNS) --jobs $(JOBS)
	$(BIN)/python scripts/gaga_figures.py --fig 4 5
	$(BIN)/python scripts/dspl_synthetic.py --only fig1 --only table2 --quick --runs 10
	$(BIN)/python scripts/reproduce_tables.py --report-only

reproduce-plan: install      ## every cell of those tables: runs done / left and an ETA from measured times
	$(BIN)/python scripts/reproduce_tables.py --tables $(TABLES) $(if $(RUNS),--runs $(RUNS)) --jobs $(JOBS) --plan

bench: install               ## speed benchmarks (quick sizes), written under results/bench/
	$(BIN)/python scripts/bench_gaga.py --quick --method fastest --reference-method auto
	$(BIN)/python scripts/bench_gaga.py --cases lasso_n1000_d50 --method fastest --reference-method auto --acs-fine-max 200 --stem gaga_default
	$(BIN)/python scripts/bench_outlier_path.py
	$(BIN)/python scripts/bench_dspl.py
	$(BIN)/python scripts/bench_families.py

bench-full: install          ## the full-size benchmarks (hours on 2 cores)
	$(BIN)/python scripts/bench_gaga.py
	$(BIN)/python scripts/bench_gaga.py --no-acs --cases svm_t2_pendigits svm_t2_mfeat_pixel svm_t2_hiva_agnostic \
		--reference-method PC --stem gaga_svm_rows
	$(BIN)/python scripts/bench_outlier_path.py
	$(BIN)/python scripts/bench_dspl.py --suite

bench-dspl: install          ## DSPL scaling: n=10^6 and 10^7 (p=50), weak scaling, the machine's ceiling and the efficiency; ~9 GB
	$(BIN)/python scripts/bench_dspl.py --suite

clean:
	rm -rf runs .pytest_cache .ruff_cache .venv-latest
