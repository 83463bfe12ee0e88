"""Our committed rows of the papers' tables, and what the comparison reads from them.

Inputs are committed files only: the per-seed rows under ``results/rows/<experiment>/`` (written by
``scripts/reproduce_tables.py``; ``index.csv`` names each cell's current configuration hash, and
only that hash is read), ``failures.csv`` and ``deferred.csv`` beside them.  Two selection rules
come from the same fits (:data:`SELECTIONS`):

* ``validation``: the age chosen on a validation split of the training rows (the row's value);
* ``test``: the best candidate on the test split (``value_test_selected`` in the row's info),
  which is how the GAGA authors' code picks the age.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.paths import rows_root
from spl_bench.report import floor
from spl_bench.report.direction import higher_is_better
from spl_bench.report.lines import VARIED
from spl_bench.report.lines import line_param as _line_param
from spl_bench.rowstore import read_folder
from spl_bench.table_registry import CLEAN_VARIANT, TABLES

#: the selection rules of the comparison (each a section of the tables)
SELECTIONS = ("validation", "test")


def load_ours(experiment: str, root: Path | None = None) -> pd.DataFrame:
    """Every committed row of ``experiment``, each cell under its current hash (:func:`read_folder`)."""
    return read_folder((root or rows_root()) / experiment)


def load_failures(root: Path | None = None) -> dict[tuple, tuple[str, str]]:
    """``(paper, table, dataset, method) -> (status, reason)`` for the cells without rows that have
    a known reason: ``failures.csv`` (runs that failed: ``failed``) and ``deferred.csv`` (cells
    measured too slow to run on this machine, with what was measured: ``not_run``)."""
    out: dict[tuple, tuple[str, str]] = {}
    for name, status in (("deferred.csv", "not_run"), ("failures.csv", "failed")):
        path = (root or rows_root()) / name
        if path.is_file():
            for r in pd.read_csv(path).itertuples():
                out[(r.paper, int(r.table), r.dataset, r.method)] = (status, str(r.reason))
    return out


def noise_rate_of(label: str) -> float:
    """The noise rate of a row's noise label (``uniform_flip@0.3`` -> 0.3; ``clean`` -> 0)."""
    return float(label.rsplit("@", 1)[1]) if "@" in str(label) else 0.0


def param_value(text: str, name: str) -> float | None:
    """The number of ``name=`` in a paper cell's ``param`` text (``alpha=0.01,C=1``), None if absent."""
    m = re.search(rf"(?:^|,){name}=([0-9.eE+-]+)", str(text))
    return float(m.group(1)) if m else None


def key_param(frame: pd.DataFrame, table: int) -> pd.Series:
    """Per row, the model parameter ``table`` varies along its rows (:data:`~spl_bench.report.lines.VARIED`),
    read from the row's ``params`` (JSON); NaN for a table that varies none."""
    name = VARIED.get(table)
    if name is None:
        return pd.Series([np.nan] * len(frame), index=frame.index)
    return frame["params"].map(lambda p: float(json.loads(p).get("model", {}).get(name, np.nan)))


def info_number(info: str, key: str) -> float:
    """A number of a row's ``info`` (JSON); NaN where absent or unreadable."""
    try:
        return float(json.loads(info).get(key, np.nan))
    except (TypeError, ValueError, AttributeError):
        return float("nan")


def test_selected(info: str) -> float:
    """The test metric of the candidate best on the test split (``value_test_selected`` of the info)."""
    return info_number(info, "value_test_selected")


def selections(main: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """(selection rule, column of its value): both rules from runs that selected on a validation split
    (the test-selected value is in the info), only ``test`` from runs that selected on the test fold."""
    if "selection" in main and len(main) and (main["selection"] == "test").all():
        return (("test", "value"),)
    return (("validation", "value"), ("test", "value_test"))


def summarize_ours(frame: pd.DataFrame, table: int) -> pd.DataFrame:
    """Mean, std and runs per (dataset, noise rate, varied parameter, method, selection rule)."""
    if frame.empty:
        return pd.DataFrame()
    main = frame[~frame["metric"].astype(str).str.startswith("selection_")].copy()
    if main.empty:
        return pd.DataFrame()
    main["noise_rate"] = main["noise"].map(noise_rate_of).round(4)
    main["pval"] = key_param(main, table)
    main["value_test"] = main["info"].map(test_selected)
    main["n_candidates"] = main["info"].map(lambda i: info_number(i, "n_candidates"))
    keys = ["dataset", "noise_rate", "pval", "method", "metric"]
    out = []
    for sel, col in selections(main):
        g = main.groupby(keys, dropna=False)[col]
        s = g.agg(ours_mean="mean", ours_std=lambda x: x.std(ddof=1) if x.count() > 1 else 0.0, runs="count")
        s["selection"] = sel
        s["restarts_ours"] = main.groupby(keys, dropna=False)["n_restarts"].mean()
        s["time_s"] = main.groupby(keys, dropna=False)["time_s"].mean()
        s["candidates"] = main.groupby(keys, dropna=False)["n_candidates"].mean()
        s = floor.join_floors(s, main, keys, col)  # the constant predictor's mean on the same runs
        out.append(s.reset_index())
    return pd.concat(out, ignore_index=True)


def to_paper_units(metric: str, ours_metric: str, mean: float) -> float:
    """Our metric in the paper's units (the Outlier-Path tables print test error = 1 - accuracy)."""
    if metric == "test_error" and ours_metric == "accuracy":
        return 1.0 - mean
    return mean


def as_rmse(rows: pd.DataFrame) -> pd.DataFrame:
    """The regression rows of ``rows`` with every MSE (value and test-selected value) replaced by its root."""
    if rows.empty:
        return rows
    rows = rows.copy()
    mse = rows["metric"].astype(str).str.endswith("gen_error")
    rows.loc[mse, "value"] = np.sqrt(rows.loc[mse, "value"].astype(float))
    if "floor" in rows:  # the constant predictor's MSE too
        rows.loc[mse, "floor"] = np.sqrt(rows.loc[mse, "floor"].astype(float))

    def root(info: str) -> str:
        d = json.loads(info) if isinstance(info, str) else {}
        if "value_test_selected" in d:
            d["value_test_selected"] = math.sqrt(float(d["value_test_selected"]))
        return json.dumps(d)

    rows.loc[mse, "info"] = rows.loc[mse, "info"].map(root)
    return rows


def row_label(paper: str, row: str, dataset: str) -> str:
    """A table line's name: the paper's row name; the Outlier-Path paper's D1-D10 with the data set beside."""
    return f"{row} {dataset}" if paper == "outlier_path" else str(row)


#: what makes one line of a table for the significance tests (one Holm family)
LINE_KEYS = ["row", "noise_rate", "param", "selection"]


def seed_values(frame: pd.DataFrame, table: int, pap: pd.DataFrame, variant: str = "") -> pd.DataFrame:
    """One value per (line, method, seed, selection rule), in the paper's metric, for the paired tests.

    ``pap`` is the paper's table (with its ``pval`` column): only its (data set, noise rate,
    parameter, method) cells are kept, and each value takes its line's label from it.
    """
    main = frame[~frame["metric"].astype(str).str.startswith("selection_")].copy()
    if main.empty:
        return pd.DataFrame(columns=[*LINE_KEYS, "method", "seed", "value", "higher_is_better", "dataset"])
    main["noise_rate"] = main["noise"].map(noise_rate_of).round(4)
    main["pkey"] = key_param(main, table).round(10).fillna(-1.0)
    lines = pap.assign(pkey=pd.to_numeric(pap["pval"], errors="coerce").round(10).fillna(-1.0),
                       noise_rate=pap["noise_rate"].round(4), line_param=[_line_param(table, p) for p in pap["param"]])
    lines["row"] = [row_label(p, r, d) for p, r, d in zip(lines["paper"], lines["row"], lines["dataset"], strict=True)]
    lines = lines[["row", "dataset", "noise_rate", "pkey", "method", "metric", "line_param"]]
    lines = lines.rename(columns={"metric": "paper_metric"})  # fmt: skip
    empty = pd.DataFrame(columns=[*LINE_KEYS, "method", "seed", "value", "higher_is_better", "dataset"])
    joined = main.merge(lines, on=["dataset", "noise_rate", "pkey", "method"], how="inner")
    if joined.empty:
        return empty
    higher = joined["paper_metric"].map(higher_is_better)  # each line's own direction
    out = []
    suffix = f"@{variant}" if variant else ""
    for sel, col in selections(joined):
        vals = joined["value"] if col == "value" else joined["info"].map(test_selected)
        conv = [to_paper_units(pm, om, v)
                for pm, om, v in zip(joined["paper_metric"], joined["metric"], vals, strict=True)]
        out.append(pd.DataFrame({"row": joined["row"], "noise_rate": joined["noise_rate"],
                                 "param": joined["line_param"], "selection": sel + suffix,
                                 "method": joined["method"], "seed": joined["seed"], "value": conv,
                                 "higher_is_better": higher, "dataset": joined["dataset"]}))  # fmt: skip
    return pd.concat(out, ignore_index=True).dropna(subset=["value"])


def model_key(params: str) -> str:
    """The model part of a row's ``params`` (JSON), canonical: what the clean-label reference of a
    row has in common with the row's noisy cells."""
    try:
        return json.dumps(json.loads(params).get("model", {}), sort_keys=True)
    except (TypeError, ValueError, AttributeError):
        return ""


def clean_reference(experiment: str, table: int, rows_root: Path | None = None) -> pd.DataFrame:
    """The rows' plain model on clean training labels (``<experiment>@clean``): mean, std and runs
    per (dataset, varied parameter, model parameters), validation hold-out as in the noisy cells.

    Two rows of a table that differ only in their noise rate (Table 8's rows, or Table 2's
    mfeat-pixel at 30 % and 20 %) have the same clean-label run: each seed of a configuration is
    counted once.
    """
    rows = load_ours(f"{experiment}@{CLEAN_VARIANT}", rows_root)
    cols = ["dataset", "pval", "model_key", "metric", "ours_mean", "ours_std", "runs"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    rows = rows[(rows["method"] == "original") & ~rows["metric"].astype(str).str.startswith("selection_")].copy()
    rows = rows.drop_duplicates(subset=["dataset", "params", "seed", "metric"])
    rows["pval"] = key_param(rows, table)
    rows["model_key"] = rows["params"].map(model_key)
    g = rows.groupby(["dataset", "pval", "model_key", "metric"], dropna=False)["value"]
    out = g.agg(ours_mean="mean", ours_std=lambda x: x.std(ddof=1) if x.count() > 1 else 0.0, runs="count")
    return out.reset_index()[cols]


def row_models(rows: pd.DataFrame, table: int) -> dict[tuple, set[str]]:
    """``(dataset, noise rate, varied parameter) -> model parameters`` of a table's noisy ``rows``:
    which clean-label reference belongs to a paper cell (Table 3's two mfeat-pixel rows differ in C)."""
    out: dict[tuple, set[str]] = {}
    if rows.empty:
        return out
    rate = rows["noise"].map(noise_rate_of).round(4)
    pval = key_param(rows, table)
    for ds, r, p, params in zip(rows["dataset"], rate, pval, rows["params"], strict=True):
        key = (ds, float(r), None if not np.isfinite(p) else round(float(p), 6))
        out.setdefault(key, set()).add(model_key(params))
    return out


def critical_points(rows_root: Path | None = None) -> pd.DataFrame:
    """GAGA's critical points per run (turning / jump) and restarts, by table and data set (Fig. 6)."""
    recs = []
    for exp, _paper, table in TABLES.values():
        rows = load_ours(exp, rows_root)
        if rows.empty or "n_critical_turning" not in rows:
            continue
        g = rows[(rows["method"] == "gaga") & ~rows["metric"].astype(str).str.startswith("selection_")]
        for (ds, noise), grp in g.groupby(["dataset", "noise"]):
            recs.append({"table": table, "dataset": ds, "noise": noise, "runs": len(grp),
                         "turning_mean": grp["n_critical_turning"].mean(), "jump_mean": grp["n_critical_jump"].mean(),
                         "restarts_mean": grp["n_restarts"].mean()})  # fmt: skip
    return pd.DataFrame(recs, columns=["table", "dataset", "noise", "runs", "turning_mean", "jump_mean",
                                       "restarts_mean"])  # fmt: skip
