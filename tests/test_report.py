"""Report: critical-point counts of path methods in the summary and their histogram figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spl_bench.report.figures import critical_point_figure
from spl_bench.report.tables import summarize


def _frame(with_counts: bool) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for seed in range(6):
        turning, jump = int(rng.integers(100, 400)), int(rng.integers(0, 30))
        for metric in ("gen_error", "selection_gen_error"):
            row = {"experiment": "e", "dataset": "d", "noise": "n", "method": "gaga", "model": "lasso",
                   "sp": "linear", "selection": "validation", "config_hash": "h", "seed": seed,
                   "metric": metric, "value": rng.random(), "time_s": 1.0, "n_restarts": jump}
            if with_counts:
                row |= {"n_critical_turning": turning, "n_critical_jump": jump}
            rows.append(row)
    return pd.DataFrame(rows)


def test_summary_has_the_mean_critical_point_counts(tmp_path):
    frame = _frame(True)
    main = frame[frame.metric == "gen_error"]
    row = summarize(frame).iloc[0]
    assert row["n_critical_turning"] == pytest.approx(main.n_critical_turning.mean())
    assert row["n_critical_jump"] == pytest.approx(main.n_critical_jump.mean())
    written = critical_point_figure(frame, tmp_path / "cp.png")
    assert written == [tmp_path / "cp.png"] and written[0].stat().st_size > 0


def test_no_critical_point_figure_without_the_counts(tmp_path):
    frame = _frame(False)
    assert "n_critical_turning" not in summarize(frame)
    assert critical_point_figure(frame, tmp_path / "cp.png") == []
    assert not (tmp_path / "cp.png").exists()


def test_unavailable_datasets_are_listed_not_dropped(tmp_path):
    from spl_bench.report.tables import UNAVAILABLE, write_report

    frame = pd.DataFrame({
        "experiment": "e", "dataset": "d1", "noise": "n", "model": "svm", "selection": "validation",
        "metric": "accuracy", "method": ["a", "a", "b", "b"], "sp": "-", "seed": [0, 1, 0, 1],
        "value": [0.8, 0.9, 0.7, 0.7], "n_restarts": np.nan, "time_s": 1.0,
    })  # fmt: skip
    md, csv, _ = write_report(frame, tmp_path, "t", unavailable=["gisette", "d1"])
    table = pd.read_csv(csv)
    assert list(table.dataset) == ["d1", "gisette"]
    gis = table[table.dataset == "gisette"].iloc[0]
    assert gis["a"] == UNAVAILABLE and gis["b"] == UNAVAILABLE and gis["runs"] == 0
    assert table[table.dataset == "d1"].iloc[0]["a"] == "0.850 ± 0.071"
    assert "not available offline" in md.read_text()


def test_summary_totals_the_integer_counters_of_the_info_column():
    frame = _frame(False)
    rng = np.random.default_rng(3)
    n_trunc = rng.integers(0, 4, len(frame))
    frame["info"] = [json.dumps({"n_truncated_paths": int(k), "truncation_reasons": ["x"] * int(k),
                                 "flag": True, "n_ratio": 0.5}) for k in n_trunc]
    frame.loc[0, "info"] = "not json"
    main = frame.metric == "gen_error"
    expected = int(n_trunc[main.to_numpy() & (frame.index != 0)].sum())
    row = summarize(frame).iloc[0]
    assert row["info_n_truncated_paths"] == expected
    assert "info_n_ratio" not in row and "info_flag" not in row
