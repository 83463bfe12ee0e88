"""Our numbers beside the papers': comparison tables, bar figures and ``coverage.csv``.

Inputs are committed files only, so the output is a pure function of the repository:

* our per-seed rows, ``results/rows/<experiment>/`` (written by ``scripts/reproduce_tables.py``;
  ``index.csv`` names each cell's current configuration hash, and only that hash is read);
* the papers' numbers, ``results/paper/*.csv`` (:mod:`spl_bench.report.paper`).

For every paper cell and both selection rules the comparison gives ours ``mean ± std (runs)``,
the paper's ``mean ± std``, and ``z = (ours - paper) / paper std`` (the difference in units of
the paper's spread).  Two selection rules come from the same fits:

* ``validation``: the age chosen on a validation split of the training rows (the row's value);
* ``test``: the best candidate on the test split (``value_test_selected`` in the row's info),
  which is how the GAGA authors' code picks the age — the gap shows what that adds.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.paths import data_dir, repo_root
from spl_bench.report import blocks, environments, floor, page, significance
from spl_bench.report.bands import AGREEMENT, FAR, agreement, beyond, within
from spl_bench.report.direction import higher_is_better as _higher_better
from spl_bench.report.lines import VARIED, table_lines
from spl_bench.report.lines import clear_winner as _clear_winner
from spl_bench.report.lines import line_param as _line_param
from spl_bench.report.lines import per_method_params as _per_method_params
from spl_bench.report.markdown import to_markdown
from spl_bench.report.page import _best, _fmt, _order_mark, bar_figure, clean_lines, critical_point_figure
from spl_bench.report.paper import load_paper
from spl_bench.rowfiles import read_row_file, read_row_index

#: table key -> (experiment config, paper, paper table number)
TABLES: dict[str, tuple[str, str, int]] = {
    **{str(t): (f"gaga_table{t}", "gaga", t) for t in (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)},
    "op2": ("outlier_path_table2", "outlier_path", 2),
    "op3": ("outlier_path_table3", "outlier_path", 3),
}
#: the papers, as a table's title names them
PAPER_TITLES = {"gaga": "GAGA (Qu et al., NeurIPS 2022)", "outlier_path": "Outlier-Path (Suzumura et al., ICML 2014)",
                "dspl": "DSPL"}  # fmt: skip
#: what each paper's table header says beyond the common legend
PAPER_NOTES = {
    "gaga": "*paper order holds*: our means keep the GAGA paper's ordering GAGA, MOSPL, ACS, Original. ",
    "outlier_path": "Rows D1-D10 are the paper's data sets (named beside); its metric is the test error "
    "(1 − our accuracy). ",
}
#: runs per cell in the papers (Outlier-Path: 10 repetitions; GAGA and DSPL: 20)
PAPER_RUNS = {"gaga": 20, "outlier_path": 10, "dspl": 20}
FIDELITY_NOTE = {
    "regression": "paper: authors' RMSE of a min-max scaled target, lasso without intercept; ours: MSE of the "
    "standardised target (docs/protocol.md#fidelity)",
    "classification": "paper: noise injected before the split, so the test labels are noisy too; ours: clean "
    "test labels (protocol.noise_scope=all runs the authors' order; docs/protocol.md#fidelity)",
    "worse": "not explained by the known protocol differences (the paper's noisy test labels would lower "
    "its numbers, not ours; docs/protocol.md#fidelity)",
    "clean_ceiling": "the paper's mean is {gap:.0f} of its stds above what the row's plain model reaches here on "
    "clean training labels ({mean:.3f} ± {std:.3f}, {runs} runs, --variant clean), so no handling of the noise "
    "closes the gap: the paper's model, features or binarisation differ from the printed ones "
    "(docs/protocol.md#fidelity)",
    "authors_noise": "under the authors' noise (--variant authors: near-boundary flips of rate x 30 % of the rows, "
    "before the split) ours is {mean:.3f} ({runs} runs), z {z:+.1f}: the gap is the milder noise of the authors' "
    "code (docs/protocol.md#fidelity)",
    "inverted": "uniform flips of half or more of the training labels make the flipped label the majority of "
    "each class, so every method learns the inverted rule; the authors' noise flips rate x 30 % of the rows, "
    "those nearest a linear SVM's hyperplane (21 % at 70 %), which never inverts the classes "
    "(noise=near_boundary_flip noise.options.count=pool; docs/protocol.md#fidelity)",
}
#: noise rate from which uniform label flips invert the classes (FIDELITY_NOTE["inverted"])
INVERTING_RATE = 0.5
#: datasets of the papers with no offline copy and no config here
NO_CONFIG = {"w5a", "a6a", "a7a", "synthetic"}
SELECTIONS = ("validation", "test")
#: protocol variants whose rows live in ``results/rows/<experiment>@<variant>`` (runner.reproduce.VARIANTS)
VARIANTS = ("authors", "authors_protocol", "equal_candidates")
#: variants whose regression cells the paper reports as RMSE (the authors' Evaluation.RMSE): the rows
#: hold the MSE the candidates were selected by, and the report takes the square root run by run
RMSE_VARIANTS = ("authors_protocol",)
#: the clean-label reference (runner.reproduce.CLEAN_VARIANT): per row, the plain model with no noise
CLEAN = "clean"
VARIANT_TITLES = {"authors": "the GAGA authors' noise: labels flipped near the boundary before the split, so "
                  "test labels are noisy; regression N(0.2, 3²) on features and target",
                  "authors_protocol": "the GAGA authors' whole protocol: their noise, 20 KFold folds, scaling on "
                  "all rows, min-max target and RMSE, no intercept, their mfeat-pixel coding; the age chosen "
                  "on the test fold, as the paper reports",
                  "equal_candidates": "equal candidates: GAGA and ACS both offer their solutions at the same 40 ages "
                  "(the paper's ACS grid; GAGA's path by its dense output), docs/protocol.md"}  # fmt: skip


def rows_dir() -> Path:
    return repo_root() / "results" / "rows"


def tables_dir() -> Path:
    return repo_root() / "results" / "tables"


def load_ours(experiment: str, root: Path | None = None) -> pd.DataFrame:
    """Every committed row of ``experiment`` under the current hash of each cell."""
    base = (root or rows_dir()) / experiment
    index = base / "index.csv"
    if not index.is_file():
        return pd.DataFrame()
    frames = []
    for entry in read_row_index(index).itertuples():
        path = base / str(entry.file)
        if path.is_file():  # an empty or damaged file raises DamagedRows (one line), never counts
            frame = read_row_file(path)
            frame["cell"] = entry.cell
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _noise_rate(label: str) -> float:
    return float(label.rsplit("@", 1)[1]) if "@" in str(label) else 0.0


def _param_value(text: str, name: str) -> float | None:
    m = re.search(rf"(?:^|,){name}=([0-9.eE+-]+)", str(text))
    return float(m.group(1)) if m else None


def _our_key_param(frame: pd.DataFrame, table: int) -> pd.Series:
    name = VARIED.get(table)
    if name is None:
        return pd.Series([np.nan] * len(frame), index=frame.index)
    return frame["params"].map(lambda p: float(json.loads(p).get("model", {}).get(name, np.nan)))


def _info_number(info: str, key: str) -> float:
    """A number of a row's ``info`` (JSON); NaN where absent or unreadable."""
    try:
        return float(json.loads(info).get(key, np.nan))
    except (TypeError, ValueError, AttributeError):
        return float("nan")


def _test_selected(info: str) -> float:
    return _info_number(info, "value_test_selected")


def _selections(main: pd.DataFrame) -> tuple[tuple[str, str], ...]:
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
    main["noise_rate"] = main["noise"].map(_noise_rate).round(4)
    main["pval"] = _our_key_param(main, table)
    main["value_test"] = main["info"].map(_test_selected)
    main["n_candidates"] = main["info"].map(lambda i: _info_number(i, "n_candidates"))
    keys = ["dataset", "noise_rate", "pval", "method", "metric"]
    out = []
    for sel, col in _selections(main):
        g = main.groupby(keys, dropna=False)[col]
        s = g.agg(ours_mean="mean", ours_std=lambda x: x.std(ddof=1) if x.count() > 1 else 0.0, runs="count")
        s["selection"] = sel
        s["restarts_ours"] = main.groupby(keys, dropna=False)["n_restarts"].mean()
        s["time_s"] = main.groupby(keys, dropna=False)["time_s"].mean()
        s["candidates"] = main.groupby(keys, dropna=False)["n_candidates"].mean()
        s = floor.join_floors(s, main, keys, col)  # the constant predictor's mean on the same runs
        out.append(s.reset_index())
    return pd.concat(out, ignore_index=True)


def _convert(metric: str, ours_metric: str, mean: float) -> float:
    """Our metric in the paper's units (the Outlier-Path tables print test error = 1 - accuracy)."""
    if metric == "test_error" and ours_metric == "accuracy":
        return 1.0 - mean
    return mean


@functools.cache
def _available(dataset: str) -> bool:
    """Whether a dataset loads here: scikit-learn's, or its local file is in the data dir."""
    path = repo_root() / "configs" / "data" / f"{dataset}.yaml"
    if dataset in NO_CONFIG or not path.is_file():
        return False
    from omegaconf import OmegaConf

    spec = OmegaConf.load(path)
    if spec.get("source") == "sklearn":
        return True
    if spec.get("file") is None:
        return False
    return (data_dir(spec.get("root")) / str(spec.file)).is_file()


@dataclass
class TableComparison:
    key: str
    experiment: str
    paper: str
    table: int
    cells: pd.DataFrame  # one row per paper cell x selection
    footer: str = ""  # Markdown: the environments of the rows (spl_bench.report.environments.footer)
    #: paired tests of every pair of methods per line and selection rule (significance.COLUMNS)
    significance: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=significance.COLUMNS))
    #: Friedman + Nemenyi across the lines, per selection rule (only where >= 3 methods and 2 full lines,
    #: and not for a sweep of one data set: :mod:`spl_bench.report.blocks`)
    ranks: dict[str, significance.RankTest] = field(default_factory=dict)
    #: the table's lines in the paper's order, with their data set and whether they may be pooled
    lines: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: one value per (line, method, seed, selection rule): what the tests ran on (:func:`seed_values`)
    values: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: cells pooling rows of different library versions or BLAS kernel families
    mixed: list[str] = field(default_factory=list)


def compare_table(key: str, rows_root: Path | None = None, failures: dict | None = None,
                  floors: pd.DataFrame | None = None) -> TableComparison:
    """Join the paper's cells of one table with our summaries (both selection rules); ``floors``: the
    constant predictor's values (:mod:`spl_bench.report.floor`; default: the file beside ``rows_root``)."""
    experiment, paper, table = TABLES[key]
    floors = floor.load_floors(floor.floors_path(rows_root)) if floors is None else floors
    pap = load_paper(paper, table).copy()
    pap["noise_rate"] = pd.to_numeric(pap["noise_rate"], errors="coerce").fillna(0.0).round(4)
    name = VARIED.get(table)
    pap["pval"] = pap["param"].map(lambda p: _param_value(p, name)) if name else np.nan
    recs = []
    noisy = floor.attach(load_ours(experiment, rows_root), experiment, floors)
    sources = [("", summarize_ours(noisy, table))]
    raw = [noisy.assign(variant="")] if len(noisy) else []
    for variant in VARIANTS:
        rows = floor.attach(load_ours(f"{experiment}@{variant}", rows_root), f"{experiment}@{variant}", floors)
        if variant in RMSE_VARIANTS:
            rows = _as_rmse(rows)
        extra = summarize_ours(rows, table)
        if len(extra):
            sources.append((variant, extra))
            raw.append(rows.assign(variant=variant))
    for variant, ours in sources:
        recs += _join(paper, table, pap, ours, name, variant)
    cells = pd.DataFrame(recs)
    cells["z"] = (cells["ours_mean"] - cells["paper_mean"]) / cells["paper_std"]
    _add_clean_reference(cells, clean_reference(experiment, table, rows_root), _row_models(noisy, table), name)
    _add_authors_z(cells)
    cells["status"], cells["reason"] = zip(*[_status(r, failures or {}) for r in cells.itertuples()], strict=True)
    floor.add_columns(cells)
    cells["agreement"] = [agreement(z) if runs else "–" for z, runs in zip(cells["z"], cells["runs"], strict=True)]
    rows = pd.concat(raw, ignore_index=True) if raw else pd.DataFrame()
    keys = ("variant", "cell", "selection")
    values = pd.concat([seed_values(r, table, pap, str(r["variant"].iloc[0])) for r in raw], ignore_index=True) \
        if raw else pd.DataFrame(columns=[*LINE_KEYS, "method", "seed", "value"])  # fmt: skip
    order = [m for m in dict.fromkeys(pap["method"])]
    frame = blocks.line_frame(paper_lines(pap, table))
    tests = blocks.mark_pooled(significance.paired_tests(values, LINE_KEYS, order), frame)[significance.COLUMNS]
    return TableComparison(key, experiment, paper, table, cells, footer=environments.footer(rows, keys),
                           mixed=environments.mixed_cells(rows, keys), significance=tests,
                           ranks=blocks.rank_tests(values, frame, SELECTIONS), lines=frame, values=values)  # fmt: skip


def paper_lines(pap: pd.DataFrame, table: int) -> pd.DataFrame:
    """The paper's cells of a table with the keys of their line (as the paired tests name it) and data set."""
    rows = [_row_label(p, r, d) for p, r, d in zip(pap["paper"], pap["row"], pap["dataset"], strict=True)]
    return pd.DataFrame({"row": rows, "noise_rate": pap["noise_rate"].astype(float).round(4),
                         "param": [_line_param(table, p) for p in pap["param"]], "dataset": pap["dataset"]})


def _as_rmse(rows: pd.DataFrame) -> pd.DataFrame:
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
    main["noise_rate"] = main["noise"].map(_noise_rate).round(4)
    main["pkey"] = _our_key_param(main, table).round(10).fillna(-1.0)
    lines = pap.assign(pkey=pd.to_numeric(pap["pval"], errors="coerce").round(10).fillna(-1.0),
                       noise_rate=pap["noise_rate"].round(4), line_param=[_line_param(table, p) for p in pap["param"]])
    lines["row"] = [_row_label(p, r, d) for p, r, d in zip(lines["paper"], lines["row"], lines["dataset"], strict=True)]
    lines = lines[["row", "dataset", "noise_rate", "pkey", "method", "metric", "line_param"]]
    lines = lines.rename(columns={"metric": "paper_metric"})  # fmt: skip
    empty = pd.DataFrame(columns=[*LINE_KEYS, "method", "seed", "value", "higher_is_better", "dataset"])
    joined = main.merge(lines, on=["dataset", "noise_rate", "pkey", "method"], how="inner")
    if joined.empty:
        return empty
    higher = joined["paper_metric"].map(_higher_better)  # each line's own direction
    out = []
    suffix = f"@{variant}" if variant else ""
    for sel, col in _selections(joined):
        vals = joined["value"] if col == "value" else joined["info"].map(_test_selected)
        conv = [_convert(pm, om, v) for pm, om, v in zip(joined["paper_metric"], joined["metric"], vals, strict=True)]
        out.append(pd.DataFrame({"row": joined["row"], "noise_rate": joined["noise_rate"],
                                 "param": joined["line_param"], "selection": sel + suffix,
                                 "method": joined["method"], "seed": joined["seed"], "value": conv,
                                 "higher_is_better": higher, "dataset": joined["dataset"]}))  # fmt: skip
    return pd.concat(out, ignore_index=True).dropna(subset=["value"])


def _model_key(params: str) -> str:
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
    rows = load_ours(f"{experiment}@{CLEAN}", rows_root)
    cols = ["dataset", "pval", "model_key", "metric", "ours_mean", "ours_std", "runs"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    rows = rows[(rows["method"] == "original") & ~rows["metric"].astype(str).str.startswith("selection_")].copy()
    rows = rows.drop_duplicates(subset=["dataset", "params", "seed", "metric"])
    rows["pval"] = _our_key_param(rows, table)
    rows["model_key"] = rows["params"].map(_model_key)
    g = rows.groupby(["dataset", "pval", "model_key", "metric"], dropna=False)["value"]
    out = g.agg(ours_mean="mean", ours_std=lambda x: x.std(ddof=1) if x.count() > 1 else 0.0, runs="count")
    return out.reset_index()[cols]


def _row_models(rows: pd.DataFrame, table: int) -> dict[tuple, set[str]]:
    """``(dataset, noise rate, varied parameter) -> model parameters`` of a table's noisy ``rows``:
    which clean-label reference belongs to a paper cell (Table 3's two mfeat-pixel rows differ in C)."""
    out: dict[tuple, set[str]] = {}
    if rows.empty:
        return out
    rate = rows["noise"].map(_noise_rate).round(4)
    pval = _our_key_param(rows, table)
    for ds, r, p, params in zip(rows["dataset"], rate, pval, rows["params"], strict=True):
        key = (ds, float(r), None if not np.isfinite(p) else round(float(p), 6))
        out.setdefault(key, set()).add(_model_key(params))
    return out


def _add_clean_reference(cells: pd.DataFrame, ref: pd.DataFrame, models: dict[tuple, set[str]],
                         name: str | None) -> None:
    """Columns ``clean_mean``, ``clean_std``, ``clean_runs``: the clean-label reference of the cell's
    row (in the paper's units). Matched on data set and the table's varied parameter ``name``, and,
    where the row's noisy cells have run, on their model parameters; NaN / 0 where not run or where
    several references would fit."""
    mean, std, runs = [], [], []
    for r in cells.itertuples():
        pval = _param_value(r.param, name) if name else None
        hit = ref[ref["dataset"] == r.dataset] if len(ref) else ref
        if len(hit) and pval is not None:
            hit = hit[np.isclose(hit["pval"].astype(float), pval)]
        keys = models.get((r.dataset, float(r.noise_rate), None if pval is None else round(pval, 6)))
        if len(hit) and keys:
            hit = hit[hit["model_key"].isin(keys)]
        if len(hit) == 1:
            h = hit.iloc[0]
            mean.append(_convert(r.metric, h["metric"], h["ours_mean"]))
            std.append(h["ours_std"])
            runs.append(int(h["runs"]))
        else:
            mean.append(np.nan)
            std.append(np.nan)
            runs.append(0)
    cells["clean_mean"], cells["clean_std"], cells["clean_runs"] = mean, std, runs


def _add_authors_z(cells: pd.DataFrame) -> None:
    """Column ``authors_z`` (and ``authors_mean``, ``authors_runs``) on the default-protocol cells: the
    z of the same cell under the authors' noise (``validation@authors`` / ``test@authors``), if run."""
    keys = ["row", "noise_rate", "param", "method"]
    cells["authors_z"], cells["authors_mean"], cells["authors_runs"] = np.nan, np.nan, 0
    for sel in SELECTIONS:
        var = cells[cells["selection"] == f"{sel}@authors"].set_index(keys)
        if var.empty:
            continue
        base = cells["selection"] == sel
        idx = pd.MultiIndex.from_frame(cells.loc[base, keys])
        hit = var.reindex(idx)
        cells.loc[base, "authors_z"] = hit["z"].to_numpy()
        cells.loc[base, "authors_mean"] = hit["ours_mean"].to_numpy()
        cells.loc[base, "authors_runs"] = hit["runs"].fillna(0).astype(int).to_numpy()


def _row_label(paper: str, row: str, dataset: str) -> str:
    """A table line's name: the paper's row name; the Outlier-Path paper's D1-D10 with the data set beside."""
    return f"{row} {dataset}" if paper == "outlier_path" else str(row)


def _join(paper: str, table: int, pap: pd.DataFrame, ours: pd.DataFrame, name: str | None, variant: str) -> list[dict]:
    """One record per paper cell and selection rule; a variant contributes only the cells it ran."""
    recs = []
    for cell in pap.itertuples():
        for sel in SELECTIONS:
            rec = {"paper": paper, "table": table, "row": _row_label(paper, cell.row, cell.dataset),
                   "dataset": cell.dataset,
                   "noise_rate": cell.noise_rate, "param": cell.param if isinstance(cell.param, str) else "",
                   "method": cell.method, "metric": cell.metric, "selection": sel, "paper_mean": cell.mean,
                   "paper_std": cell.std, "paper_restarts": cell.restarts}  # fmt: skip
            hit = pd.DataFrame()
            if len(ours):
                m = (ours["dataset"] == cell.dataset) & np.isclose(ours["noise_rate"], cell.noise_rate)
                m &= (ours["method"] == cell.method) & (ours["selection"] == sel)
                if name:
                    m &= np.isclose(ours["pval"].astype(float), float(cell.pval))
                hit = ours[m]
            if len(hit):
                h = hit.iloc[0]
                rec.update(ours_mean=_convert(cell.metric, h["metric"], h["ours_mean"]), ours_std=h["ours_std"],
                           runs=int(h["runs"]), ours_restarts=h["restarts_ours"], time_s=h["time_s"],
                           candidates=h["candidates"], floor_mean=_convert(cell.metric, h["metric"], h["floor_mean"]),
                           floor_runs=int(h["floor_runs"]))  # fmt: skip
            elif variant:
                continue
            else:
                rec.update(ours_mean=np.nan, ours_std=np.nan, runs=0, ours_restarts=np.nan, time_s=np.nan,
                           candidates=np.nan, floor_mean=np.nan, floor_runs=0)
            if variant:
                rec["selection"] = f"{sel}@{variant}"
            recs.append(rec)
    return recs


#: data sets whose offline copy is another data set than the paper's (issue 59; docs/protocol.md, "houses"):
#: their cells' reason says so until they are rerun on the right file
DIFFERENT_DATA = {
    "houses": "different data from the paper's: ours is California housing (20,640 x 8, the cadata file), the "
              "paper's houses is OpenML 22,600 x 8 (closest: house_8L, OpenML 218, data=house_8l)",
}


def _status(r, failures: dict) -> tuple[str, str]:
    status, note = _status_of(r, failures)
    if r.runs and r.dataset in DIFFERENT_DATA:
        note = f"{note}; {DIFFERENT_DATA[r.dataset]}" if note else DIFFERENT_DATA[r.dataset]
    return status, note


def _status_of(r, failures: dict) -> tuple[str, str]:
    target = PAPER_RUNS[r.paper]
    if r.runs == 0:
        if not _available(r.dataset):
            return "unavailable_offline", "no offline copy of the data set (OpenML / UCI needs the network)"
        known = failures.get((r.paper, r.table, r.dataset, r.method))
        if known:
            return known
        return "not_run", "no committed rows yet (scripts/reproduce_tables.py --plan shows what is left)"
    note = ""
    degenerate = floor.is_degenerate(r)  # no better than a constant: that, not the protocol, explains the gap
    if degenerate:
        note = floor.reason(r)
    elif np.isfinite(r.z) and beyond(r.z, FAR) and "@" not in r.selection:  # variants carry their own protocol
        task = "classification" if r.metric in ("accuracy", "test_error") else "regression"
        # noisy test labels lower the paper's accuracy: they explain ours above it, not below
        ours_better = r.z > 0 if _higher_better(r.metric) else r.z < 0
        if task == "classification" and not ours_better:
            note = f"|z| > {FAR:g}, ours worse than the paper: " + _worse_reason(r)
        else:
            note = f"|z| > {FAR:g}: " + FIDELITY_NOTE[task]
    if r.runs < target:
        tail = f"; {note}" if note else ""
        per = f", {r.time_s:.0f} s per run measured" if np.isfinite(r.time_s) else ""
        status = floor.DEGENERATE if degenerate else "partial"
        return status, f"{r.runs} of {target} runs committed{per} (the sweep resumes from here){tail}"
    return (floor.DEGENERATE if degenerate else "complete"), note


def _worse_reason(r: Any) -> str:
    """Why a classification cell is more than ``FAR`` paper stds worse than the paper, from what was
    measured: uniform flips that invert the classes; the paper above the plain model's clean-label
    reference by more than ``FAR`` of its stds; the same cell within ``FAR`` under the authors' noise."""
    if float(getattr(r, "noise_rate", 0.0)) >= INVERTING_RATE:
        return FIDELITY_NOTE["inverted"]
    clean, runs = float(getattr(r, "clean_mean", np.nan)), int(getattr(r, "clean_runs", 0) or 0)
    if runs and np.isfinite(clean) and r.paper_std > 0:
        gap = (r.paper_mean - clean) / r.paper_std * (1.0 if _higher_better(r.metric) else -1.0)
        if gap > 0 and beyond(gap, FAR):
            return FIDELITY_NOTE["clean_ceiling"].format(gap=gap, mean=clean, std=float(r.clean_std), runs=runs)
    az, aruns = float(getattr(r, "authors_z", np.nan)), int(getattr(r, "authors_runs", 0) or 0)
    if aruns and np.isfinite(az) and within(az, FAR):
        return FIDELITY_NOTE["authors_noise"].format(mean=float(r.authors_mean), runs=aruns, z=az)
    return FIDELITY_NOTE["worse"]


def row_summary(cells: pd.DataFrame, selection: str, tests: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per table line (:func:`table_lines`): ours / paper per method, best marked (**),
    z, and whether the paper's ordering holds.  With ``tests`` (the paired tests of this
    selection rule), the best mean is marked ▲ where it is significantly better than the second."""
    part = cells[cells["selection"] == selection]
    per_method = _per_method_params(part)
    lines = []
    for label, grp in table_lines(part):
        better = _higher_better(str(grp["metric"].iloc[0]))
        rec: dict[str, Any] = {"row": label["row"]}
        if "noise_rate" in label:
            rec["noise"] = f"{label['noise_rate']:g}"
        rec["param"] = label["param"]
        best_ours = _best(grp, "ours_mean", better)
        best_paper = _best(grp, "paper_mean", better)
        clear = _clear_winner(grp, tests, better)
        rests = f" ▲ ({_rests_on(grp, tests, better)})" if clear else ""
        for r in grp.itertuples():
            ours = _fmt(r.ours_mean, r.ours_std) + (f" ({r.runs})" if r.runs else "")
            if r.method == best_ours:
                ours = f"**{ours}**" + rests
            ours += floor.mark(r)
            pap = _fmt(r.paper_mean, r.paper_std)
            if r.method == best_paper:
                pap = f"**{pap}**"
            z = f"{r.z:+.1f}" if np.isfinite(r.z) else "–"
            own = f" [{r.param}]" if per_method and r.param else ""
            rec[r.method] = f"{ours} / {pap} / z {z}{own}"
        lines.append(rec)
        # the GAGA paper's claim; the Outlier-Path paper makes none such
        if "paper" not in grp or (grp["paper"] == "gaga").all():
            rec["paper order holds"] = _order_mark(grp, better)
    frame = pd.DataFrame(lines)
    if len(frame) and per_method:
        frame = frame.drop(columns="param")
    if len(frame) and "paper order holds" in frame:  # the ordering mark last, whatever order the methods came in
        frame = frame[[c for c in frame.columns if c != "paper order holds"] + ["paper order holds"]]
    return frame


def _rests_on(grp: pd.DataFrame, tests: pd.DataFrame | None, better: bool) -> str:
    """What the ▲ of a line rests on: the best-against-second test's non-zero differences of the
    paired seeds, its |rank-biserial correlation| and whether its p-value is exact."""
    ranked = grp.dropna(subset=["ours_mean"]).sort_values("ours_mean", ascending=not better)
    best, second = str(ranked["method"].iloc[0]), str(ranked["method"].iloc[1])
    r0 = ranked.iloc[0]
    line = tests[(tests["row"] == r0["row"]) & np.isclose(tests["noise_rate"].astype(float), float(r0["noise_rate"]))
                 & (tests["param"].fillna("").astype(str) == _line_param(int(r0["table"]), r0["param"]))]  # fmt: skip
    hit = line[((line["method_a"] == best) & (line["method_b"] == second))
               | ((line["method_a"] == second) & (line["method_b"] == best))]  # fmt: skip
    t = hit.iloc[0]
    how = "exact" if str(t["p_method"]).startswith("exact") else "approx."
    return f"{int(t['n_nonzero'])}/{int(t['n_pairs'])} non-zero, r {abs(float(t['rank_biserial'])):.2f}, {how}"


def write_table(comp: TableComparison, out_root: Path, figures: bool = True) -> list[Path]:
    """``comparison.md`` / ``comparison.csv`` / ``comparison.png`` of one table."""
    out = out_root / comp.experiment
    out.mkdir(parents=True, exist_ok=True)
    cells = comp.cells
    csv = out / "comparison.csv"
    cells.to_csv(csv, index=False, float_format="%.6g")
    md = [f"# {PAPER_TITLES.get(comp.paper, comp.paper)}, Table {comp.table}: ours beside the paper\n",
          "Each cell: ours mean ± std (runs) / the paper's mean ± std / z = (ours − paper) / paper std. "
          "Best of each row in bold, in ours and in the paper. " + PAPER_NOTES.get(comp.paper, "")
          + "Generated by `scripts/reproduce_tables.py` from `results/rows/` and `results/paper/`; protocol "
          "differences in docs/protocol.md.\n"]  # fmt: skip
    sections = [("validation", "Age chosen on a validation split (default, honest)"),
              ("test", "Age chosen on the test split (the authors' code), same fits")]  # fmt: skip
    for variant in VARIANTS:
        sections += [(f"validation@{variant}", f"Protocol variant '{variant}' ({VARIANT_TITLES[variant]}), validation"),
                     (f"test@{variant}", f"Protocol variant '{variant}', age chosen on the test split")]  # fmt: skip
    tests = comp.significance
    sweep = len(comp.lines) > 0 and blocks.is_sweep(comp.lines)
    for sel, title in sections:
        if not (cells["selection"] == sel).any():
            continue
        md.append(f"\n## {title}\n\n")
        md.append(to_markdown(row_summary(cells, sel, tests[tests["selection"] == sel])))
        md.append(SIGNIFICANCE_NOTE)
        md.append(page.candidates_line(cells, sel))
        md.append(floor.note(cells, sel))
        if sel in comp.ranks:
            md.append(comp.ranks[sel].summary() + " Diagram: `critical_difference.png`.\n")
        elif sweep and sel in SELECTIONS:
            md.append(blocks.sweep_markdown(cells, tests[tests["selection"] == sel], comp.lines, comp.table, sel))
    ref = clean_lines(cells)
    if len(ref):
        md.append("\n## Clean-label reference\n\nEach row's plain model (Original) on the same splits with no "
                  "corrupted training rows (`scripts/reproduce_tables.py --variant clean`), validation hold-out as "
                  "above: what the model family reaches on this data. A paper mean far above it cannot come from "
                  "handling the noise.\n\n")  # fmt: skip
        md.append(to_markdown(ref))
    val = cells[cells["selection"] == "validation"]
    counts = val["status"].value_counts().to_dict()
    agree = val[val["runs"] > 0]["agreement"].value_counts().to_dict()
    md.append("\nCells under validation selection, by completeness: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + "; by agreement with the paper: " + ", ".join(f"{k} {v}" for k, v in sorted(agree.items()))
              + "\n")  # fmt: skip
    md.append(comp.footer)
    md_path = out / "comparison.md"
    md_path.write_text("".join(md))
    sig = out / "significance.csv"
    tests.to_csv(sig, index=False, float_format="%.6g")
    if not figures:
        return [md_path, csv, sig]
    png = out / "comparison.png"
    bar_figure(cells, f"{comp.paper} Table {comp.table}", png)
    written = [md_path, csv, sig, png]
    if comp.ranks:
        written.append(significance.cd_figure(comp.ranks, f"{comp.paper} Table {comp.table}",
                                              out / "critical_difference.png"))  # fmt: skip
    elif sweep:
        written.append(blocks.sweep_figure(cells, tests, comp.lines, comp.table, f"{comp.paper} Table {comp.table}",
                                               out / "sweep.png", SELECTIONS))  # fmt: skip
    return written


SIGNIFICANCE_NOTE = (
    "\n▲: the row's best mean (in the row's own direction: higher accuracy, lower error) is better than the "
    "second best by the Wilcoxon signed-rank test on the seeds both ran (`scipy.stats.wilcoxon`, two-sided), "
    "Holm-corrected over the row's pairs of methods, p < 0.05, with at least 6 non-zero paired differences. "
    "Beside ▲: the non-zero paired differences of the seeds both ran, |rank-biserial r| and whether p is exact. "
    "Every pair's test is in `significance.csv`, with what it rests on: the non-zero differences, the median "
    "difference, the rank-biserial correlation and whether the p-value is exact or the normal approximation "
    "(fewer than 6 shared seeds: \"too few runs\"; docs/statistics.md).\n"
)


COVERAGE_COLUMNS = [
    "paper", "table", "dataset", "noise_rate", "method", "metric", "selection", "paper_mean", "paper_std",
    "ours_mean", "ours_std", "runs", "status", "agreement", "reason", "param", "row", "z", "within_1_std",
    "clean_mean", "clean_std", "clean_runs", "candidates", "floor_mean", "floor_check",
]  # fmt: skip


def coverage(comps: list[TableComparison]) -> pd.DataFrame:
    frame = pd.concat([c.cells for c in comps], ignore_index=True)
    frame["within_1_std"] = within(frame["z"], 1.0).where(frame["z"].notna())
    return frame.reindex(columns=COVERAGE_COLUMNS)


def dspl_table(root: Path | None = None) -> pd.DataFrame:
    """DSPL Table 2 from ``results/dspl/table2.csv`` (scripts/dspl_synthetic.py) beside the paper."""
    pap = load_paper("dspl", 2)
    src = (root or repo_root()) / "results" / "dspl" / "table2.csv"
    ours = pd.read_csv(src) if src.is_file() else pd.DataFrame(columns=["corrupted_batches", "method", "error"])
    ours["method"] = ours["method"].str.lower().replace({"spl": "spl_kumar"})
    recs = []
    for cell in pap.itertuples():
        k = _param_value(cell.param, "corrupted_batches")
        hit = ours[(ours["corrupted_batches"] == k) & (ours["method"] == cell.method)]["error"]
        n = int(hit.count())
        rec = {"paper": "dspl", "table": 2, "row": cell.row, "dataset": cell.dataset, "noise_rate": np.nan,
               "param": cell.param, "method": cell.method, "metric": cell.metric, "selection": "none",
               "paper_mean": cell.mean, "paper_std": cell.std, "ours_mean": hit.mean() if n else np.nan,
               "ours_std": hit.std(ddof=1) if n > 1 else np.nan, "runs": n}  # fmt: skip
        if n == 0:
            rec["status"], rec["reason"] = "failed", f"{cell.method} is not implemented (docs/dspl.md)"
        else:
            rec["status"] = "partial"
            rec["reason"] = f"{n} runs at reduced size (10 batches of 500 rows, p = 20; results/dspl/README.md)"
        recs.append(rec)
    cells = pd.DataFrame(recs)
    cells["z"] = (cells["ours_mean"] - cells["paper_mean"]) / cells["paper_std"]
    cells["agreement"] = [agreement(z) if runs else "–" for z, runs in zip(cells["z"], cells["runs"], strict=True)]
    return cells


def status_section(cov: pd.DataFrame) -> str:
    """The README's "Reproduction status" section, generated from ``coverage.csv``."""
    val = cov[cov["selection"].isin(["validation", "none"])]
    counts = val["status"].value_counts()
    ran = val[val["runs"] > 0]
    close = int(within(ran["z"], 1.0).sum())
    far_agree = ran["agreement"] == "beyond 3 stds"
    lines = [
        "## Reproduction status",
        "",
        "Generated from [`results/tables/coverage.csv`](results/tables/coverage.csv) by "
        "`make reproduce-tables` (one row per paper cell and selection rule). Counts are of the "
        f"{len(val)} paper cells under validation selection:",
        "",
        "| completeness | cells |",
        "|---|---|",
        *[f"| {k} | {int(v)} |" for k, v in counts.sort_index().items()],
        "",
        "`complete`: every run of the paper's count is committed (20; Outlier-Path 10); `partial`: fewer. "
        "Whether a cell agrees with the paper is a separate column (`agreement` in coverage.csv):",
        "",
        "| agreement with the paper (cells with runs) | cells |",
        "|---|---|",
        *[f"| {k} | {int((ran['agreement'] == k).sum())} |" for k in (*[a for _, a in AGREEMENT], "beyond 3 stds")],
        "",
        f"Complete and beyond 3 stds: {int(((ran['status'] == 'complete') & far_agree).sum())} cells "
        "(the reasons below).",
        "",
        f"Of the {len(ran)} cells with runs, {close} are within one paper std of the paper's mean "
        f"(|z| ≤ 1) and {int(beyond(ran['z'], FAR).sum())} are more than {FAR:g} stds away; the reasons "
        "found are in docs/protocol.md (Fidelity).",
        "",
        *_far_reasons(ran),
        *floor.readme_lines(val, cov),
        "| table | cells with runs | within 1 std | rows where the paper's order holds |",
        "|---|---|---|---|",
    ]
    for (paper, table), grp in ran.groupby(["paper", "table"]):
        holds = _order_counts(val[(val["paper"] == paper) & (val["table"] == table)])  # rows with every method
        link = "results/dspl/table2.md" if paper == "dspl" else f"results/tables/{_exp_of(paper, table)}/comparison.md"
        lines.append(f"| [{paper} {table}]({link}) | {len(grp)} | "
                     f"{int(within(grp['z'], 1.0).sum())} | {holds} |")  # fmt: skip
    return "\n".join(lines) + "\n"


#: the reasons of the cells more than FAR stds away, as counted in the README (first match wins)
FAR_REASONS = [
    (f"no better than the constant predictor on the same splits (status `{floor.DEGENERATE}`)", floor.REASON_START),
    ("regression: the paper's metric is another scale (RMSE of a min-max target, no intercept)",
     FIDELITY_NOTE["regression"]),
    ("classification, ours above the paper: its test labels are noisy", FIDELITY_NOTE["classification"]),
    ("ours below: uniform flips of half or more of the labels invert the classes", FIDELITY_NOTE["inverted"]),
    ("ours below: the paper is above the plain model's clean-label accuracy (`--variant clean`)",
     "on clean training labels"),
    ("ours below: within 3 stds under the authors' noise (`--variant authors`)", "under the authors' noise"),
    ("ours below: not explained", FIDELITY_NOTE["worse"]),
]  # fmt: skip


def _far_reasons(ran: pd.DataFrame) -> list[str]:
    """Table lines of the README section: the cells more than ``FAR`` stds away, counted by reason."""
    far = ran[beyond(ran["z"], FAR)]
    if far.empty:
        return []
    reasons = far["reason"].fillna("").astype(str)
    left = pd.Series(True, index=far.index)
    lines = ["| why more than 3 stds away | cells |", "|---|---|"]
    for label, needle in FAR_REASONS:
        hit = left & reasons.str.contains(needle, regex=False)
        left &= ~hit
        if hit.any():
            lines.append(f"| {label} | {int(hit.sum())} |")
    if left.any():
        lines.append(f"| other (the reason column of coverage.csv; e.g. a paper std of 0) | {int(left.sum())} |")
    return [*lines, ""]


def _order_counts(grp: pd.DataFrame) -> str:
    marks = [_order_mark(g, _higher_better(str(g["metric"].iloc[0]))) for _, g in table_lines(grp)]
    marks = [m for m in marks if m != "–"]
    return f"{marks.count('yes')} of {len(marks)}" if marks else "–"


def _exp_of(paper: str, table: int) -> str:
    for exp, p, t in TABLES.values():
        if p == paper and t == table:
            return exp
    return f"{paper}_table{table}"


README_START = "<!-- reproduction-status:start -->"
README_END = "<!-- reproduction-status:end -->"


def update_readme(section: str, readme: Path) -> None:
    text = readme.read_text()
    block = f"{README_START}\n{section}{README_END}"
    if README_START in text and README_END in text:
        text = re.sub(re.escape(README_START) + ".*?" + re.escape(README_END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text)


def load_failures(root: Path | None = None) -> dict[tuple, tuple[str, str]]:
    """``(paper, table, dataset, method) -> (status, reason)`` for the cells without rows that have
    a known reason: ``failures.csv`` (runs that failed: ``failed``) and ``deferred.csv`` (cells
    measured too slow to run on this machine, with what was measured: ``not_run``)."""
    out: dict[tuple, tuple[str, str]] = {}
    for name, status in (("deferred.csv", "not_run"), ("failures.csv", "failed")):
        path = (root or rows_dir()) / name
        if path.is_file():
            for r in pd.read_csv(path).itertuples():
                out[(r.paper, int(r.table), r.dataset, r.method)] = (status, str(r.reason))
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


def write_all(
    out_root: Path | None = None, rows_root: Path | None = None, readme: Path | None = None, figures: bool = True,
    findings: Path | None = None,
) -> list[Path]:
    """Every comparison table, ``coverage.csv``, the README section, the findings page (``findings``,
    default ``<out_root>/FINDINGS.md``; the script writes ``results/FINDINGS.md``) and the PNGs."""
    out_root = out_root or tables_dir()
    failures = load_failures(rows_root)
    floors = floor.load_floors(floor.floors_path(rows_root))
    comps = [compare_table(k, rows_root, failures, floors) for k in TABLES]
    paths: list[Path] = []
    for comp in comps:
        paths += write_table(comp, out_root, figures)
        if comp.mixed:  # a warning, not an error: the footer of comparison.md lists them too
            print(f"warning: {comp.experiment}: {len(comp.mixed)} cell(s) pool rows made under different "
                  "library versions or BLAS kernel families:\n  " + "\n  ".join(comp.mixed),
                  file=sys.stderr)  # fmt: skip
    cov = pd.concat([coverage(comps), dspl_table().reindex(columns=COVERAGE_COLUMNS)], ignore_index=True)
    cov["within_1_std"] = within(cov["z"], 1.0).where(cov["z"].notna())
    cov_path = out_root / "coverage.csv"
    cov.to_csv(cov_path, index=False, float_format="%.6g")
    paths.append(cov_path)
    crit = critical_points(rows_root)
    crit.to_csv(out_root / "gaga_fig6_critical_points.csv", index=False, float_format="%.6g")
    paths.append(out_root / "gaga_fig6_critical_points.csv")
    if len(crit) and figures:
        critical_point_figure(crit, out_root / "gaga_fig6_critical_points.png")
        paths.append(out_root / "gaga_fig6_critical_points.png")
    section = status_section(cov)
    (out_root / "status.md").write_text(section)
    paths.append(out_root / "status.md")
    from spl_bench.report.findings import findings_markdown

    findings = findings or out_root / "FINDINGS.md"
    findings.write_text(findings_markdown(comps, cov))
    paths.append(findings)
    if readme is not None:
        update_readme(section, readme)
        paths.append(readme)
    return paths
