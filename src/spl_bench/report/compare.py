"""Our numbers beside the papers': one table's comparison, cell by cell (:func:`compare_table`).

Inputs are committed files only, so the output is a pure function of the repository:

* our per-seed rows, ``results/rows/<experiment>/`` (:mod:`spl_bench.report.ours`);
* the papers' numbers, ``results/paper/*.csv`` (:mod:`spl_bench.report.paper`).

For every paper cell and both selection rules the comparison gives ours ``mean ± std (runs)``,
the paper's ``mean ± std``, and ``z = (ours - paper) / paper std`` (the difference in units of
the paper's spread).  Two selection rules come from the same fits:

* ``validation``: the age chosen on a validation split of the training rows (the row's value);
* ``test``: the best candidate on the test split (``value_test_selected`` in the row's info),
  which is how the GAGA authors' code picks the age — the gap shows what that adds.

Each cell's status and reason: :mod:`spl_bench.report.status`; a table's ``comparison.md`` and
figures: :mod:`spl_bench.report.page`; ``coverage.csv`` and the README section:
:mod:`spl_bench.report.coverage`; everything at once: :func:`spl_bench.report.reproduction.write_all`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.report import blocks, environments, floor, old_rule, significance
from spl_bench.report.bands import agreement
from spl_bench.report.lines import VARIED
from spl_bench.report.lines import line_param as _line_param
from spl_bench.report.ours import (
    LINE_KEYS,
    SELECTIONS,
    as_rmse,
    clean_reference,
    load_ours,
    param_value,
    row_label,
    row_models,
    seed_values,
    summarize_ours,
    to_paper_units,
)
from spl_bench.report.paper import load_paper
from spl_bench.report.status import cell_status
from spl_bench.table_registry import REPORTED_VARIANTS, RMSE_VARIANTS, TABLES


@dataclass
class TableComparison:
    """One table's comparison: the paper's cells beside ours, and the tests run on our seeds."""

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
    #: GAGA cells read from rows of the old candidate rule, with their reruns' seeds (:mod:`.old_rule`)
    old_rule: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=old_rule.COLUMNS))


def compare_table(key: str, rows_root: Path | None = None, failures: dict | None = None,
                  floors: pd.DataFrame | None = None) -> TableComparison:
    """Join the paper's cells of one table with our summaries (both selection rules); ``floors``: the
    constant predictor's values (:mod:`spl_bench.report.floor`; default: the file beside ``rows_root``)."""
    experiment, paper, table = TABLES[key]
    floors = floor.load_floors(floor.floors_path(rows_root)) if floors is None else floors
    pap = load_paper(paper, table).copy()
    pap["noise_rate"] = pd.to_numeric(pap["noise_rate"], errors="coerce").fillna(0.0).round(4)
    name = VARIED.get(table)
    pap["pval"] = pap["param"].map(lambda p: param_value(p, name)) if name else np.nan
    recs = []
    noisy = floor.attach(load_ours(experiment, rows_root), experiment, floors)
    sources = [("", summarize_ours(noisy, table))]
    raw = [noisy.assign(variant="")] if len(noisy) else []
    for variant in REPORTED_VARIANTS:
        rows = floor.attach(load_ours(f"{experiment}@{variant}", rows_root), f"{experiment}@{variant}", floors)
        if variant in RMSE_VARIANTS:
            rows = as_rmse(rows)
        extra = summarize_ours(rows, table)
        if len(extra):
            sources.append((variant, extra))
            raw.append(rows.assign(variant=variant))
    for variant, ours in sources:
        recs += _join(paper, table, pap, ours, name, variant)
    cells = pd.DataFrame(recs)
    cells["z"] = (cells["ours_mean"] - cells["paper_mean"]) / cells["paper_std"]
    _add_clean_reference(cells, clean_reference(experiment, table, rows_root), row_models(noisy, table), name)
    _add_authors_z(cells)
    cells["status"], cells["reason"] = zip(*[cell_status(r, failures or {}) for r in cells.itertuples()], strict=True)
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
                           old_rule=old_rule.table_step_rule(experiment, REPORTED_VARIANTS, rows_root),
                           ranks=blocks.rank_tests(values, frame, SELECTIONS), lines=frame, values=values)  # fmt: skip


def paper_lines(pap: pd.DataFrame, table: int) -> pd.DataFrame:
    """The paper's cells of a table with the keys of their line (as the paired tests name it) and data set."""
    rows = [row_label(p, r, d) for p, r, d in zip(pap["paper"], pap["row"], pap["dataset"], strict=True)]
    return pd.DataFrame({"row": rows, "noise_rate": pap["noise_rate"].astype(float).round(4),
                         "param": [_line_param(table, p) for p in pap["param"]], "dataset": pap["dataset"]})


def _add_clean_reference(cells: pd.DataFrame, ref: pd.DataFrame, models: dict[tuple, set[str]],
                         name: str | None) -> None:
    """Columns ``clean_mean``, ``clean_std``, ``clean_runs``: the clean-label reference of the cell's
    row (in the paper's units). Matched on data set and the table's varied parameter ``name``, and,
    where the row's noisy cells have run, on their model parameters; NaN / 0 where not run or where
    several references would fit."""
    mean, std, runs = [], [], []
    for r in cells.itertuples():
        pval = param_value(r.param, name) if name else None
        hit = ref[ref["dataset"] == r.dataset] if len(ref) else ref
        if len(hit) and pval is not None:
            hit = hit[np.isclose(hit["pval"].astype(float), pval)]
        keys = models.get((r.dataset, float(r.noise_rate), None if pval is None else round(pval, 6)))
        if len(hit) and keys:
            hit = hit[hit["model_key"].isin(keys)]
        if len(hit) == 1:
            h = hit.iloc[0]
            mean.append(to_paper_units(r.metric, h["metric"], h["ours_mean"]))
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


def _join(paper: str, table: int, pap: pd.DataFrame, ours: pd.DataFrame, name: str | None, variant: str) -> list[dict]:
    """One record per paper cell and selection rule; a variant contributes only the cells it ran."""
    recs = []
    for cell in pap.itertuples():
        for sel in SELECTIONS:
            rec = {"paper": paper, "table": table, "row": row_label(paper, cell.row, cell.dataset),
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
                rec.update(ours_mean=to_paper_units(cell.metric, h["metric"], h["ours_mean"]),
                           ours_std=h["ours_std"], runs=int(h["runs"]), ours_restarts=h["restarts_ours"],
                           time_s=h["time_s"], candidates=h["candidates"],
                           floor_mean=to_paper_units(cell.metric, h["metric"], h["floor_mean"]),
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
