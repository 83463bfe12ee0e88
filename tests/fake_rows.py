"""Committed-style row files of one GAGA Table 2 row (music†), for the report's tests."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from spl_bench.rowfiles import write_row_file


def fake_table2_rows(tmp_path, values: dict[str, list[float]], test_values: dict[str, list[float]]) -> None:
    """Row files of ``results/rows/gaga_table2`` under ``tmp_path``: seed k of each method has validation
    value ``values[m][k]`` and test-selected value ``test_values[m][k]``."""
    base = tmp_path / "gaga_table2"
    base.mkdir(parents=True)
    entries = []
    for method, vals in values.items():
        cell = f"table_row=t2_music_n30,method={method}"
        rows = []
        for seed, (v, t) in enumerate(zip(vals, test_values[method], strict=True)):
            common = {"experiment": "gaga_table2", "dataset": "music", "noise": "target_gaussian@0.3",
                      "method": method, "model": "lasso", "sp": "linear", "selection": "validation",
                      "params": json.dumps({"model": {"alpha": 0.005}}), "seed": seed, "lam": 1.0, "time_s": 0.1,
                      "n_restarts": 2 if method == "gaga" else np.nan,
                      "info": json.dumps({"value_test_selected": t}), "config_hash": "abc"}  # fmt: skip
            rows += [{**common, "metric": "gen_error", "value": v},
                     {**common, "metric": "selection_gen_error", "value": 9.0}]  # fmt: skip
        write_row_file(pd.DataFrame(rows), base / f"{cell}__abc.csv")
        entries.append({"cell": cell, "overrides": "", "config_hash": "abc", "file": f"{cell}__abc.csv"})
    pd.DataFrame(entries).to_csv(base / "index.csv", index=False)
