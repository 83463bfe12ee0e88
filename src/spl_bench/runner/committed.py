"""The committed rows of the tables' cells: one row file per cell and configuration hash, the index.

A cell's per-seed rows are committed under ``results/rows/<experiment>/`` in one small CSV per
cell and configuration hash (``<cell>__<hash>.csv``), so a sweep continues from the committed rows
on any machine.  ``index.csv`` beside them maps each cell to its current hash and is what the
report reads; ``failures.csv`` records the runs that failed.  Each row file ends with a check
trailer (row count and SHA-256, :mod:`spl_bench.rowfiles`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from spl_bench.errors import DamagedRows
from spl_bench.paths import rows_root
from spl_bench.rowfiles import read_row_file, read_row_index, write_row_file
from spl_bench.runner.cells import Cell, compose_cell
from spl_bench.runner.results import COLUMNS, atomic_write_csv
from spl_bench.table_registry import TABLES

if TYPE_CHECKING:
    from spl_bench.runner.plan import CellState

#: columns kept in the committed rows: the runner's tidy rows minus the bulky candidate dict, plus
#: the exact-path methods' critical-point counts
ROW_COLUMNS = [c for c in COLUMNS if c != "candidate"] + ["n_critical_turning", "n_critical_jump"]


def rows_file(cell: Cell, h: str, root: Path | None = None) -> Path:
    """The committed row file of ``cell`` under configuration hash ``h``."""
    return (root or rows_root()) / cell.rows_name / f"{cell.cell_id}__{h}.csv"


def read_rows(path: Path) -> pd.DataFrame:
    """The rows of a cell's file (none if there is no file).

    A file that is not whole (empty, cut, changed: :func:`~spl_bench.rowfiles.read_row_file`)
    raises :class:`~spl_bench.errors.DamagedRows`: its seeds are never counted as done.
    """
    if not path.is_file():
        return pd.DataFrame(columns=ROW_COLUMNS)
    return read_row_file(path)


def append_rows(path: Path, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Add one seed's rows to a cell's file (atomic rewrite; a seed already there is replaced)."""
    old = read_rows(path)
    new = pd.DataFrame(rows).reindex(columns=ROW_COLUMNS)
    if len(old):
        old = old[~old["seed"].isin(new["seed"].unique())]
    frame = pd.concat([old, new], ignore_index=True) if len(old) else new
    frame = frame.sort_values(["seed", "metric"]).reset_index(drop=True)
    write_row_file(frame, path)
    return frame


def write_index(experiment: str, entries: list[dict[str, Any]], root: Path | None = None) -> Path:
    """``index.csv`` of an experiment: cell -> current hash and file (what the report reads)."""
    path = (root or rows_root()) / experiment / "index.csv"
    frame = pd.DataFrame(entries, columns=["cell", "overrides", "config_hash", "file"])
    try:  # the index is derived: one that cannot be read is rebuilt from the entries given
        old = read_row_index(path) if path.is_file() else frame.iloc[:0]
    except DamagedRows:
        old = frame.iloc[:0]
    frame = pd.concat([old[~old["cell"].isin(frame["cell"])], frame], ignore_index=True).sort_values("cell")
    atomic_write_csv(frame.reset_index(drop=True), path)
    return path


def refresh_index(states: list[CellState], root: Path | None = None) -> None:
    """Point every cell's index entry at its current configuration hash."""
    for exp in sorted({st.cell.rows_name for st in states}):
        write_index(exp, [_index_entry(st) for st in states if st.cell.rows_name == exp], root)


def _index_entry(st: CellState) -> dict[str, Any]:
    return {"cell": st.cell.cell_id, "overrides": " ".join(st.cell.overrides), "config_hash": st.config_hash,
            "file": st.file.name}  # fmt: skip


def record_failure(cell: Cell, seed: int, reason: str, root: Path | None = None) -> Path:
    """Add a failed run to ``failures.csv`` (the report marks the cell ``failed`` with this reason)."""
    _, paper, table = TABLES[cell.table]
    cfg = compose_cell(cell)
    path = (root or rows_root()) / "failures.csv"
    old = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    rec = {"paper": paper, "table": table, "dataset": str(cfg.data.name), "method": str(cfg.method.name),
           "cell": cell.label, "seed": seed, "reason": reason}  # fmt: skip
    frame = pd.concat([old, pd.DataFrame([rec])], ignore_index=True).drop_duplicates(["cell", "seed"], keep="last")
    atomic_write_csv(frame, path)
    return path
