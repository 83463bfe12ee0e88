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

from spl_bench.paths import rows_root
from spl_bench.rowstore import CellStore, atomic_write_csv, write_index
from spl_bench.runner.cells import Cell, compose_cell
from spl_bench.table_registry import TABLES

if TYPE_CHECKING:
    from spl_bench.runner.plan import CellState

def store_of(st: CellState, root: Path | None = None) -> CellStore:
    """The row store of a cell of the plan (its current hash), as ``spl-bench run`` would open it."""
    return CellStore(root or rows_root(), st.cell.rows_name, st.cell.cell_id, st.config_hash, st.identity)


def refresh_index(states: list[CellState], root: Path | None = None) -> None:
    """Point every cell's index entry at its current configuration hash.

    A cell run under :attr:`~spl_bench.runner.cells.Cell.current_rule` is left out: the index, and so
    the tables, keep its table's rule until the table leaves the step rule."""
    states = [st for st in states if not st.cell.current_rule]
    for exp in sorted({st.cell.rows_name for st in states}):
        write_index((root or rows_root()) / exp, [_index_entry(st) for st in states if st.cell.rows_name == exp])


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
