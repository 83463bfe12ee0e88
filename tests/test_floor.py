"""The sanity floor (issue 59): the constant predictor on a cell's splits, and the cells no better.

The floors are checked against numpy computations of their own (the majority class counted with
``np.bincount``, the training mean and the squared error written out); a fake Table 5 cell at its
floor must be ``at_floor`` in coverage.csv, marked in the comparison tables and counted in the
README block.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from spl_bench.data import Dataset
from spl_bench.methods.original import Original
from spl_bench.protocol import NoiseConfig, ProtocolConfig, run_once
from spl_bench.protocol.run import constant_floor, prepare_run, training_labels
from spl_bench.report import compare as cmp
from spl_bench.report import floor
from spl_bench.report.coverage import coverage, status_section, update_readme
from spl_bench.report.ours import SELECTIONS, as_rmse
from spl_bench.report.page import row_summary, write_table
from spl_bench.rowfiles import write_row_file

SEEDS = 4
EXPERIMENT = "gaga_table5"
NOISE = "uniform_flip@0.3"


def _synthetic(n: int = 160, p_one: float = 0.3, seed: int = 0) -> Dataset:
    """Labels in {-1, +1} with about ``p_one`` of +1, two noise features."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < p_one, 1.0, -1.0)
    return Dataset("synthetic_floor", rng.normal(size=(n, 2)), y, "classification")


def _majority_rate(y: np.ndarray, run: int, base_seed: int = 40) -> float:
    """Independently: the split3to1 split of run ``run`` by scikit-learn, the training labels'
    majority counted with ``np.bincount``, its rate among the test labels."""
    tr, te = train_test_split(np.arange(len(y)), test_size=0.25, random_state=base_seed + run)
    codes = (y > 0).astype(int)
    majority = int(np.argmax(np.bincount(codes[tr], minlength=2)))
    return float(np.mean(codes[te] == majority))


def test_the_floor_of_a_split_is_the_majority_rate_and_every_run_records_it():
    ds = _synthetic()
    proto, noise = ProtocolConfig(selection="validation", n_runs=2), NoiseConfig("none", 0.0)
    for run in range(2):
        prep = prepare_run(ds, proto, noise, run)
        value, constant = constant_floor(ds.task, training_labels(prep, proto), prep.scaled.y_test)
        assert value == pytest.approx(_majority_rate(ds.y, run), abs=1e-15) and constant == -1.0
        assert len(training_labels(prep, proto)) == len(ds.y) - len(prep.test_idx)  # the whole training split
        out = run_once(ds, lambda: Original(model="logistic"), proto, noise, run)
        assert out.info["floor_value"] == value  # the run's info carries the same number


def test_the_regression_floor_is_the_training_mean_scored_by_the_protocols_error():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    ds = Dataset("synthetic_reg", X, 3.0 + 2.0 * X[:, 0] + rng.normal(size=120), "regression")
    proto, noise = ProtocolConfig(selection="test", n_runs=1), NoiseConfig("none", 0.0)
    prep = prepare_run(ds, proto, noise, 0)
    value, constant = constant_floor(ds.task, training_labels(prep, proto), prep.scaled.y_test)
    tr, te = train_test_split(np.arange(120), test_size=0.25, random_state=40)
    mu, sd = ds.y[tr].mean(), ds.y[tr].std()  # the protocol standardises the target with the training rows
    assert value == pytest.approx(np.mean(((ds.y[te] - mu) / sd) ** 2), rel=1e-12)
    assert constant == pytest.approx(0.0, abs=1e-12)
    # the constant does not depend on the order of the training rows (fsum)
    y = training_labels(prep, proto)
    assert constant_floor(ds.task, y[::-1], prep.scaled.y_test) == (value, constant)


def test_at_or_below_follows_each_metrics_direction():
    assert floor.at_or_below("accuracy", 0.5, 0.5) and floor.at_or_below("accuracy", 0.4, 0.5)
    assert not floor.at_or_below("accuracy", 0.51, 0.5)
    assert floor.at_or_below("test_error", 0.5, 0.4) and not floor.at_or_below("test_error", 0.3, 0.4)
    assert floor.at_or_below("gen_error", 1.0 + 1e-12, 1.0) and not floor.at_or_below("gen_error", 0.9, 1.0)
    assert not floor.at_or_below("accuracy", 0.3, float("nan"))  # no floor: nothing flagged


def _write_cell(root, method: str, values: list[float], info: list[dict] | None = None) -> None:
    """Committed-style rows of one Table 5 MagicTelescope cell (validation selection)."""
    base = root / EXPERIMENT
    base.mkdir(parents=True, exist_ok=True)
    cell = f"table_row=t5_magic_telescope_n30,method={method}"
    rows = [{"experiment": EXPERIMENT, "dataset": "magic_telescope", "noise": NOISE, "method": method,
             "model": "logistic", "sp": "linear", "selection": "validation",
             "params": json.dumps({"model": {"C": 0.5}}), "seed": seed, "lam": 1.0, "time_s": 0.1,
             "n_restarts": np.nan, "metric": "accuracy", "value": v,
             "info": json.dumps({"value_test_selected": v, **(info[seed] if info else {})}), "config_hash": "abc"}
            for seed, v in enumerate(values)]  # fmt: skip
    write_row_file(pd.DataFrame(rows), base / f"{cell}__abc.csv")
    index = base / "index.csv"
    entries = pd.read_csv(index).to_dict("records") if index.is_file() else []
    entries.append({"cell": cell, "overrides": "", "config_hash": "abc", "file": f"{cell}__abc.csv"})
    pd.DataFrame(entries).to_csv(index, index=False)


@pytest.fixture
def degenerate_table(tmp_path):
    """Table 5 MagicTelescope with fake rows: GAGA at the floor on every seed, ACS below it, Original
    above it, MOSPL above it with its floors in its own info, and the floors file of a synthetic data
    set beside the rows (results/reference/floors.csv)."""
    ds = _synthetic()
    proto = ProtocolConfig(selection="validation", n_runs=SEEDS)
    floors = []
    for seed in range(SEEDS):
        prep = prepare_run(ds, proto, NoiseConfig("none", 0.0), seed)
        value, constant = constant_floor(ds.task, training_labels(prep, proto), prep.scaled.y_test)
        floors.append({"rows_name": EXPERIMENT, "dataset": "magic_telescope", "noise": NOISE, "seed": seed,
                       "task": ds.task, "floor": value, "constant": constant, "n_train": 120, "n_test": 40,
                       "spec": "x"})  # fmt: skip
    expected = [_majority_rate(ds.y, seed) for seed in range(SEEDS)]
    floor.write_floors(pd.DataFrame(floors), floor.floors_path(tmp_path / "rows"))
    rows = tmp_path / "rows"
    _write_cell(rows, "gaga", expected)
    _write_cell(rows, "acs", [v - 0.2 for v in expected])
    _write_cell(rows, "original", [v + 0.1 for v in expected])
    _write_cell(rows, "mospl", [v + 0.05 for v in expected], info=[{"floor_value": v} for v in expected])
    return rows, expected


def test_a_cell_at_the_floor_is_flagged_marked_and_counted(degenerate_table, tmp_path):
    rows, expected = degenerate_table
    comp = cmp.compare_table("5", rows)
    cells = comp.cells[comp.cells["dataset"] == "magic_telescope"].set_index(["method", "selection"])
    for method in ("gaga", "acs", "original", "mospl"):
        for sel in SELECTIONS:
            assert cells.loc[(method, sel), "floor_mean"] == pytest.approx(np.mean(expected), abs=1e-12)
    for sel in SELECTIONS:
        for method in ("gaga", "acs"):
            r = cells.loc[(method, sel)]
            assert r["status"] == floor.DEGENERATE and r["floor_check"] == floor.AT_OR_BELOW
            assert r["reason"].startswith(f"{SEEDS} of 20 runs committed") and floor.REASON_START in r["reason"]
            assert f"{np.mean(expected):.3f}" in r["reason"]
        for method in ("original", "mospl"):  # MOSPL's floor from its own info
            r = cells.loc[(method, sel)]
            assert r["status"] == "partial" and r["floor_check"] == floor.ABOVE
    # the comparison tables: the mark beside the degenerate cells only, and the note under the table
    line = row_summary(comp.cells, "validation").set_index("row").loc["MagicTelescope†"]
    mark = f"{floor.MARK} ≤ floor {np.mean(expected):.3f}"
    assert mark in line["gaga"] and mark in line["acs"] and floor.MARK not in line["original"] + line["mospl"]
    md = write_table(comp, tmp_path / "out", figures=False)[0].read_text()
    assert "2 of 4 cells with runs here" in md
    csv = pd.read_csv(tmp_path / "out" / EXPERIMENT / "comparison.csv")
    assert set(csv[csv["status"] == floor.DEGENERATE]["method"]) == {"gaga", "acs"}
    # the README block: its own completeness line and the list of the flagged cells
    cov = coverage([comp])
    assert {"floor_mean", "floor_check"} <= set(cov.columns)
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    update_readme(status_section(cov), readme)
    text = readme.read_text()
    assert f"| {floor.DEGENERATE} | 2 |" in text
    assert f"status `{floor.DEGENERATE}`: 2 of the 4 cells with runs and a floor; 4 cells under every" in text
    assert f"| gaga 5 | MagicTelescope† | 0.3 | gaga | {np.mean(expected):.3f} | {np.mean(expected):.3f} |" in text


def test_a_cell_without_a_floor_says_so_and_is_not_flagged(degenerate_table):
    rows, expected = degenerate_table
    floors = floor.load_floors(floor.floors_path(rows))
    comp = cmp.compare_table("5", rows, floors=floors[floors["seed"] != 2])  # seed 2 has no floor
    cells = comp.cells[(comp.cells["dataset"] == "magic_telescope") & (comp.cells["selection"] == "validation")]
    cells = cells.set_index("method")
    assert cells.loc["gaga", "floor_check"] == f"{floor.MISSING} for 1 of {SEEDS} runs (scripts/floors.py)"
    assert cells.loc["gaga", "status"] == "partial" and np.isnan(cells.loc["gaga", "floor_mean"])
    assert cells.loc["mospl", "floor_check"] == floor.ABOVE  # its info has every seed's floor


def test_the_rmse_variant_takes_the_root_of_the_floor_too():
    rows = pd.DataFrame({"metric": ["gen_error", "accuracy"], "value": [0.25, 0.8], "floor": [0.64, 0.6],
                         "info": [json.dumps({}), json.dumps({})]})  # fmt: skip
    out = as_rmse(rows)
    assert out["floor"].tolist() == [np.sqrt(0.64), 0.6]


def test_the_committed_floor_of_a_real_split_is_its_majority_rate(data_dir):
    """results/reference/floors.csv against numpy on the data: Table 5 MagicTelescope, seed 0 (30 %
    uniform flips of the training labels leave the majority class of this 65/35 data set as it is)."""
    from spl_bench.data.loaders import load_dataset

    floors = floor.load_floors(floor.floors_path())
    hit = floors[(floors["rows_name"] == EXPERIMENT) & (floors["dataset"] == "magic_telescope")
                 & (floors["seed"] == 0)]  # fmt: skip
    if hit.empty:
        pytest.fail("results/reference/floors.csv has no Table 5 MagicTelescope line: run scripts/floors.py")
    y = np.asarray(load_dataset("magic_telescope").y)
    assert hit["floor"].item() == pytest.approx(_majority_rate(y, 0), abs=1e-15)
    assert hit["n_test"].item() == len(y) - hit["n_train"].item() == int(np.ceil(0.25 * len(y)))
