"""Mean ± std tables in the layout of the GAGA paper's Tables 2-3 (rows: datasets, columns: methods)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from spl_bench.atomic import atomic_write_text
from spl_bench.errors import DataError
from spl_bench.report import environments
from spl_bench.report.markdown import to_markdown
from spl_bench.rowfiles import is_sealed, read_row_file
from spl_bench.rowstore import read_tree

ROW_KEYS = ["experiment", "dataset", "noise", "model", "selection", "metric"]
#: per-run counts of critical points by kind, written by path methods (GAGA)
CRITICAL_COLUMNS = ["n_critical_turning", "n_critical_jump"]


#: the columns that make a cell of a table: one configuration (config hash) each
CELL_KEYS = ["experiment", "dataset", "noise", "method", "model", "sp", "selection"]


def read_results(paths: Iterable[str | Path], config_hash: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Read results: a folder contributes every experiment folder of the row store at or below it
    (:func:`~spl_bench.rowstore.read_tree`: each cell under the hash its ``index.csv`` names); a file is
    a row file (checked by its trailer) or a plain results CSV.

    A cell (same :data:`CELL_KEYS`) must hold one configuration: rows of two config hashes in
    one cell (two folders given, say) are refused with a :class:`DataError` listing them, never
    averaged.  ``config_hash`` (one hash or several, unique prefixes accepted; ``--hash`` of
    ``spl-bench report``) keeps, in every cell holding rows of a given hash, only those rows;
    cells without any given hash are kept as they are.
    """
    frames = []
    for src in map(Path, paths):
        if src.is_dir():
            frame = read_tree(src)
            if len(frame):  # where each row came from, for the refusal of a cell of two hashes
                frame["_source"] = str(src) + "/" + frame["experiment"].astype(str) + "/" + frame["cell"].astype(str)
        elif src.is_file():
            if src.stat().st_size == 0:
                continue
            frame = read_row_file(src) if is_sealed(src.read_bytes()) else pd.read_csv(src)
        else:
            raise DataError(f"no results file or folder at {src}")
        if len(frame):
            frames.append(frame if "_source" in frame else frame.assign(_source=str(src)))
    if not frames:
        raise DataError("no rows found in the given paths (a folder of spl-bench run, results/rows, or a CSV file)")
    frame = pd.concat(frames, ignore_index=True)
    key = [*CELL_KEYS, "config_hash", "seed", "metric"]
    frame = frame.drop_duplicates(subset=[k for k in key if k in frame.columns], keep="last")
    if config_hash is not None:
        frame = select_config(frame, [config_hash] if isinstance(config_hash, str) else list(config_hash))
    check_one_config(frame)
    return frame.drop(columns=[c for c in ("_source", "cell") if c in frame]).reset_index(drop=True)


def _hash_column(frame: pd.DataFrame) -> pd.Series:
    return frame["config_hash"].astype(object).where(frame["config_hash"].notna(), "<none>").astype(str)


def select_config(frame: pd.DataFrame, hashes: list[str]) -> pd.DataFrame:
    """In each cell holding rows of one of ``hashes`` (full hashes or unique prefixes), keep only those.

    Raises :class:`DataError` for a given hash that matches no row, or a prefix matching several.
    """
    if "config_hash" not in frame:
        raise DataError("these results have no config_hash column: nothing to select with --hash")
    col = _hash_column(frame)
    found = sorted(col.unique())
    chosen: set[str] = set()
    for h in hashes:
        match = [f for f in found if f.startswith(str(h))]
        if not match:
            raise DataError(f"no rows of config hash {h}; the results hold {', '.join(found)}")
        if len(match) > 1 and str(h) not in match:
            raise DataError(f"config hash prefix {h} matches {', '.join(match)}; give more characters")
        chosen.add(str(h) if str(h) in match else match[0])
    keys = [k for k in CELL_KEYS if k in frame.columns]
    cell = frame[keys].astype(str).agg("\x1f".join, axis=1) if keys else pd.Series("", index=frame.index)
    cells_with = set(cell[col.isin(chosen)])
    keep = ~cell.isin(cells_with) | col.isin(chosen)
    return frame[keep]


def check_one_config(frame: pd.DataFrame) -> None:
    """Refuse a frame with rows of two or more config hashes in one cell (a :class:`DataError`).

    The message names the first mixed cell and each hash in it (its runs, and the folders it
    was read from when known) and how to choose.  Frames without ``config_hash`` pass.
    """
    if "config_hash" not in frame or frame.empty:
        return
    keys = [k for k in CELL_KEYS if k in frame.columns]
    work = frame.assign(_hash=_hash_column(frame))
    n_hashes = work.groupby(keys, dropna=False)["_hash"].nunique() if keys else pd.Series([work["_hash"].nunique()])
    mixed = n_hashes[n_hashes > 1]
    if mixed.empty:
        return
    first = mixed.index[0] if keys else None
    values = first if isinstance(first, tuple) else (first,)
    rows = work
    for k, v in zip(keys, values, strict=False):
        rows = rows[rows[k].isna()] if pd.isna(v) else rows[rows[k] == v]
    listed = []
    for h, part in rows.groupby("_hash", sort=True):
        runs = part["seed"].nunique() if "seed" in part else len(part)
        where = ""
        if "_source" in part:
            folders = sorted(part["_source"].unique())
            where = f", in {folders[0]}" + (f" and {len(folders) - 1} more" if len(folders) > 1 else "")
        listed.append(f"{h} ({runs} run{'s' * (runs != 1)}{where})")
    cell = ", ".join(f"{k} {v}" for k, v in zip(keys, values, strict=False))
    more = f" ({len(mixed) - 1} more mixed cell{'s' * (len(mixed) > 2)})" if len(mixed) > 1 else ""
    raise DataError(
        f"rows of {len(listed)} configurations in one cell ({cell}){more}: config hash {'; '.join(listed)}. "
        "They are not averaged: choose one with --hash H (read_results(..., config_hash=H)), "
        "or report their folders separately"
    )


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
    """Mean, std and count of every (row keys, method) group of the main metrics.

    Refuses (a :class:`DataError`) a cell holding rows of two config hashes: see
    :func:`read_results` to select one.
    """
    check_one_config(frame)
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


def _cell(mean: float, std: float, n: int, digits: int) -> str:
    """``mean ± std``; one run has no spread: ``mean (1 run)``."""
    return f"{mean:.{digits}f} (1 run)" if n == 1 else f"{mean:.{digits}f} ± {std:.{digits}f}"


def runs_per_method(part: pd.DataFrame) -> int | str:
    """The ``runs`` of one table row: the count when every method has it, else each method's."""
    counts = part.groupby("method_label")["n"].max()
    if counts.nunique() == 1:
        return int(counts.iloc[0])
    return ", ".join(f"{m} {int(n)}" for m, n in counts.items())


def paper_table(summary: pd.DataFrame, digits: int = 3, marks: dict[tuple, str] | None = None) -> pd.DataFrame:
    """Pivot a summary into rows = (dataset, noise, ...) and columns = methods, cells ``mean ± std``.

    ``runs`` is the number of runs of the row's methods when they agree, else per method
    (``acs 20, original 2``): a mean over 2 runs is not one over 20.  ``marks`` (``ROW_KEYS`` ->
    method, :func:`spl_bench.report.folder.marks`): cells marked ▲, the row's best mean
    significantly better than the second.
    """
    s = summary.copy()
    s["cell"] = [_cell(m, d, int(n), digits) for m, d, n in zip(s["mean"], s["std"], s["n"], strict=True)]
    if marks:
        keys = s[ROW_KEYS].itertuples(index=False, name=None)
        s["cell"] = [c + " ▲" if marks.get(tuple(k)) == m else c
                     for c, k, m in zip(s["cell"], keys, s["method_label"], strict=True)]  # fmt: skip
    table = s.pivot_table(index=ROW_KEYS, columns="method_label", values="cell", aggfunc="first")
    if s["restarts"].notna().any():
        rst = s.dropna(subset=["restarts"]).groupby(ROW_KEYS)["restarts"].mean().round(1)
        table["restarts"] = rst
    runs = {key: runs_per_method(part) for key, part in s.groupby(ROW_KEYS, dropna=False)}
    table["runs"] = pd.Series(runs, dtype=object).reindex(table.index)
    table.columns.name = None
    return table.reset_index()


def heading_lines(items: list[str], width: int, sep: str = " · ") -> list[str]:
    """``items`` joined by ``sep`` into lines of at most ``width`` characters (an item is never split)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + len(sep) + len(item) <= width:
            lines[-1] += sep + item
        else:
            lines.append(item)
    return lines


def print_tables(summary: pd.DataFrame, console: Console | None = None, marks: dict[tuple, str] | None = None) -> None:
    """Print the paper-style table with rich, the keys it shares above it in lines of the console's width
    (``marks``: as :func:`paper_table`'s)."""
    console = console or Console()
    table = paper_table(summary, marks=marks)
    constant = [k for k in ROW_KEYS if table[k].nunique(dropna=False) == 1]
    metrics = [m for m in ("accuracy", "gen_error") if m in set(summary["metric"].astype(str))]
    arrows = ", ".join(f"{m} {'↑' if m == 'accuracy' else '↓'}" for m in metrics)
    items = [f"mean ± std over runs ({arrows})" if arrows else "mean ± std over runs",
             *(f"{k}: {table[k].iloc[0]}" for k in constant)]  # fmt: skip
    for line in heading_lines(items, max(int(console.width) - 1, 20)):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    table = table.drop(columns=constant)
    rt = Table()
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
    marks: dict[tuple, str] | None = None, notes: str = "",
) -> list[Path]:
    """Write ``<name>.md``, ``<name>.csv`` (paper layout) and ``<name>_summary.csv``.

    ``unavailable``: datasets of the paper's table without a local copy, listed as such.
    ``marks``: cells marked ▲ (:func:`paper_table`); ``notes``: Markdown below the table (the
    tests behind the marks).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(frame)
    table = with_unavailable(paper_table(summary, marks=marks), unavailable)
    paths = [out / f"{name}.md", out / f"{name}.csv", out / f"{name}_summary.csv"]
    atomic_write_text(paths[0], to_markdown(table) + notes + environments.footer(frame, CELL_KEYS))
    table.to_csv(paths[1], index=False)
    summary.to_csv(paths[2], index=False)
    return paths
