"""Do the committed rows regenerate?  One seed of the cheapest cell of each (table, method) family,
rerun with today's code and environment and compared with its committed row.

The drift check (:mod:`spl_bench.runner.drift`) reruns the cheapest cell of each *table*; this
looks at every method of a table, and by default at the rows made before ``requirements.lock``
(no ``environment`` recorded), which nothing else reruns.  ``scripts/regenerate_check.py`` writes
the records; docs/reproducing.md ("Rows made before the lock") reports them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench.rowstore import read_cell
from spl_bench.runner.cells import Cell, method_of, table_cells
from spl_bench.runner.plan import CellState, cell_states
from spl_bench.runner.reproduce import run_seed


def family_cells(tables: Iterable[str], seed: int = 0, max_seconds: float = 60.0, prelock_only: bool = True,
                 root: Path | None = None) -> list[tuple[CellState, pd.DataFrame]]:
    """Per (table, method): the cell whose committed row of ``seed`` took the fewest seconds (at most
    ``max_seconds``), with that row; with ``prelock_only`` only among rows that record no environment."""
    out = []
    for table in tables:
        best: dict[str, tuple[CellState, pd.DataFrame, float]] = {}
        for st in cell_states(table_cells(table), root):
            if seed not in st.done:
                continue
            frame = read_cell(st.file)
            row = frame[frame["seed"] == seed]
            recorded = "environment" in row and bool(row["environment"].notna().any())
            if row.empty or (prelock_only and recorded):
                continue
            sec = float(row["time_s"].iloc[0])
            m = method_of(st.cell)
            if sec <= max_seconds and (m not in best or sec < best[m][2]):
                best[m] = (st, row, sec)
        out += [(st, row) for st, row, _ in best.values()]
    return out


def regenerate(st: CellState, row: pd.DataFrame, seed: int = 0, run: Any = run_seed) -> dict[str, Any]:
    """Rerun ``seed`` of the cell (``run``: :func:`~spl_bench.runner.reproduce.run_seed`) and compare each
    metric with the committed ``row``: the record of the comparison (``max_rel_diff`` 0: the same bits)."""
    cell: Cell = st.cell
    t0 = time.process_time()
    rows = run(cell, seed)
    cpu = time.process_time() - t0
    ref = dict(zip(row["metric"], row["value"], strict=True))
    got = {r["metric"]: float(r["value"]) for r in rows}
    rel = max((abs(got[k] - ref[k]) / max(abs(ref[k]), 1e-300) for k in ref if k in got), default=float("nan"))
    return {"table": cell.table, "method": method_of(cell), "cell": cell.cell_id, "seed": seed,
            "committed_s": float(row["time_s"].iloc[0]), "cpu_s": round(cpu, 1), "max_rel_diff": rel,
            "equal": rel == 0.0, "code_version": row["code_version"].iloc[0] if "code_version" in row else None,
            "metrics": json.dumps({k: [ref.get(k), v] for k, v in got.items()})}


def write_csv(records: list[dict[str, Any]], path: Path) -> None:
    """The records of :func:`regenerate` as one CSV."""
    pd.DataFrame(records).to_csv(path, index=False)
