"""Mean ± std tables in the layout of the GAGA paper's Tables 2-3 (rows: datasets, columns: methods)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from spl_bench.errors import DataError

ROW_KEYS = ["experiment", "dataset", "noise", "model", "selection", "metric"]
#: per-run counts of critical points by kind, written by path methods (GAGA)
CRITICAL_COLUMNS = ["n_critical_turning", "n_critical_jump"]


def read_results(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Read results CSVs; a directory contributes every ``results.csv`` below it."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.rglob("results.csv")))
        elif p.is_file():
            files.append(p)
        else:
            raise DataError(f"no results file or folder at {p}")
    if not files:
        raise DataError("no results.csv found in the given paths")
    frames = [pd.read_csv(f) for f in files if f.stat().st_size > 0]
    frame = pd.concat(frames, ignore_index=True)
    key = ["experiment", "dataset", "noise", "method", "model", "sp", "selection", "config_hash", "seed", "metric"]
    return frame.drop_duplicates(subset=[k for k in key if k in frame.columns], keep="last")


def info_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """The integer counters ``n_*`` of the ``info`` column (a JSON object per row), one column each.

    Methods report there what a reader of the table must know about a run: truncated
    outlier paths, SVM starts that fell back to libsvm, failed warm starts of GAGA.  Rows
    without (valid JSON) info give 0.
    """
    if "info" not in frame:
        return pd.DataFrame(index=frame.index)
    parsed = []
    for text in frame["info"]:
        try:
            info = json.loads(text) if isinstance(text, str) else {}
        except json.JSONDecodeError:
            info = {}
        parsed.append({k: v for k, v in info.items() if k.startswith("n_") and isinstance(v, int)
                       and not isinstance(v, bool)} if isinstance(info, dict) else {})
    return pd.DataFrame(parsed, index=frame.index).fillna(0).astype(int)


def _method_label(frame: pd.DataFrame) -> pd.Series:
    sps = frame.loc[frame["sp"] != "-", "sp"].unique()
    if len(sps) <= 1:
        return frame["method"].astype(str)
    return np.where(frame["sp"] == "-", frame["method"], frame["method"] + "/" + frame["sp"].astype(str))


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and count of every (row keys, method) group of the main metrics."""
    main = frame[~frame["metric"].astype(str).str.startswith("selection_")].copy()
    main["method_label"] = _method_label(main)
    counts = info_counts(main)
    info_cols = [f"info_{c}" for c in counts.columns]
    main[info_cols] = counts.to_numpy()
    grouped = main.groupby([*ROW_KEYS, "method_label"], dropna=False)
    out = grouped["value"].agg(mean="mean", std=lambda s: s.std(ddof=1) if len(s) > 1 else 0.0, n="count")
    restarts = grouped["n_restarts"].mean() if "n_restarts" in main else None
    out["restarts"] = restarts
    out["time_s"] = grouped["time_s"].mean()
    for col in CRITICAL_COLUMNS:  # exact-path methods (GAGA): critical points by kind, per run
        if col in main:
            out[col] = grouped[col].mean()
    for col in info_cols:  # totals over the runs of a cell (e.g. info_n_truncated_paths)
        out[col] = grouped[col].sum()
    return out.reset_index()


def paper_table(summary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """Pivot a summary into rows = (dataset, noise, ...) and columns = methods, cells ``mean ± std``."""
    s = summary.copy()
    s["cell"] = [f"{m:.{digits}f} ± {d:.{digits}f}" for m, d in zip(s["mean"], s["std"], strict=True)]
    table = s.pivot_table(index=ROW_KEYS, columns="method_label", values="cell", aggfunc="first")
    if s["restarts"].notna().any():
        rst = s.dropna(subset=["restarts"]).groupby(ROW_KEYS)["restarts"].mean().round(1)
        table["restarts"] = rst
    table["runs"] = s.groupby(ROW_KEYS)["n"].max()
    table.columns.name = None
    return table.reset_index()


def to_markdown(table: pd.DataFrame) -> str:
    """Render a table as GitHub Markdown (no extra dependency)."""
    cols = [str(c) for c in table.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join("" if pd.isna(v) else str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def print_tables(summary: pd.DataFrame, console: Console | None = None) -> None:
    """Print the paper-style table with rich."""
    console = console or Console()
    table = paper_table(summary)
    constant = [k for k in ROW_KEYS if table[k].nunique(dropna=False) == 1]
    title = "\n".join(f"{k}: {table[k].iloc[0]}" for k in constant)
    table = table.drop(columns=constant)
    rt = Table(title=f"mean ± std over runs (accuracy ↑, gen_error ↓)\n{title}")
    for c in table.columns:
        rt.add_column(str(c))
    for row in table.itertuples(index=False):
        rt.add_row(*["" if pd.isna(v) else str(v) for v in row])
    console.print(rt)


UNAVAILABLE = "not available offline"


def with_unavailable(table: pd.DataFrame, datasets: Iterable[str]) -> pd.DataFrame:
    """Append one row per dataset of the paper's table that could not be run here.

    Each method cell reads ``not available offline`` (the dataset has no local copy and
    OpenML / UCI cannot be reached), so a table never silently drops a row of the paper.
    """
    names = [d for d in datasets if d not in set(table["dataset"])]
    if not names:
        return table
    methods = [c for c in table.columns if c not in ROW_KEYS and c not in ("restarts", "runs")]
    first = table.iloc[0] if len(table) else None
    rows = []
    for d in names:
        row = {k: (first[k] if first is not None and k != "dataset" else "") for k in ROW_KEYS}
        row["dataset"] = d
        row.update({m: UNAVAILABLE for m in methods})
        row["runs"] = 0
        rows.append(row)
    return pd.concat([table, pd.DataFrame(rows)], ignore_index=True)


def write_report(
    frame: pd.DataFrame, out_dir: str | Path, name: str = "table", unavailable: Iterable[str] = (),
) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (paper layout) and ``<name>_summary.csv``.

    ``unavailable``: datasets of the paper's table without a local copy, listed as such.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(frame)
    table = with_unavailable(paper_table(summary), unavailable)
    paths = [out / f"{name}.md", out / f"{name}.csv", out / f"{name}_summary.csv"]
    paths[0].write_text(to_markdown(table))
    table.to_csv(paths[1], index=False)
    summary.to_csv(paths[2], index=False)
    return paths
