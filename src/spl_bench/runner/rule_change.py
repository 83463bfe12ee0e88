"""What GAGA's route-independent candidates changed: the step rule's rows against the reruns (and
likewise MOSPL's exact full fit against the model's, :data:`~spl_bench.table_registry.OLD_RULES`).

A GAGA cell of a table still on the step rule (:data:`~spl_bench.table_registry.STEP_CANDIDATE_TABLES`)
has its committed rows under the step rule's hash and, once rerun (``reproduce_tables.py
--current-rule``), rows under the current rule's hash in the same folder.  Paired by seed (the same
split, noise and path), the two say how much the candidate rule moved each reported value: the
closing figure of issue 62, step 3, table by table.  The equal-candidates cells of Tables 2-3 are
compared the same way (their candidates are the shared ages under both rules; what can move them
is the route, and the step rule's recording of the path).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.rowstore import info_dict, read_cell
from spl_bench.runner.cells import Cell, cell_hash, compose_cell, method_of
from spl_bench.table_registry import OLD_RULES

#: a value moved when it differs by more than this, relative to max(1, |value|): more than the rounding
#: in which two routes of one path differ (issue 62 asks for the same selected values to 1e-8)
MOVED_REL = 1e-8

PAIR_COLUMNS = ["table", "rows", "cell", "seed", "metric", "value_step", "value_current", "lam_step",
                "lam_current", "n_candidates_step", "n_candidates_current", "n_critical_step", "n_critical_current",
                "code_step"]


def main_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A cell's rows of its reported metric (not the selection's), one per seed, indexed by seed."""
    if not len(frame):
        return frame
    frame = frame[~frame["metric"].astype(str).str.startswith("selection_")]
    return frame.drop_duplicates("seed").set_index("seed")


def _main_rows(path: Path) -> pd.DataFrame:
    return main_rows(read_cell(path))


def _n_candidates(info: object) -> float:
    return float(info_dict(info).get("n_candidates", np.nan))


def _n_critical(row: pd.Series) -> float:
    """The path's critical points (turning points and jumps) as the row records them (its columns, else
    its info); NaN if it does not."""
    i = info_dict(row.get("info"))
    parts = []
    for key in ("n_critical_turning", "n_critical_jump"):
        v = row.get(key)
        parts.append(float(v) if v is not None and pd.notna(v) else float(i.get(key, np.nan)))
    return np.nan if all(np.isnan(parts)) else float(np.nansum(parts))


def rule_hashes(cell: Cell) -> tuple[str, str]:
    """The configuration hashes of a cell under its method's old rule (:data:`OLD_RULES`: GAGA's step rule,
    MOSPL's model full fit) and under the current rule, whatever its table's rule in the registry today
    (so the comparison outlives the switch)."""
    now = replace(cell, current_rule=True)
    return cell_hash(compose_cell(now, OLD_RULES[method_of(cell)][1])), cell_hash(compose_cell(now))


def rule_pairs(cells: list[Cell], root: Path | None = None) -> pd.DataFrame:
    """One row per seed that a GAGA cell has under both rules: the step rule's value and age beside the
    current rule's (:data:`PAIR_COLUMNS`)."""
    out = []
    for cell in dict.fromkeys(replace(c, current_rule=False) for c in cells):
        step, current = rule_hashes(cell)
        a, b = _main_rows(cell.rows_file(step, root)), _main_rows(cell.rows_file(current, root))
        if not len(a) or not len(b):
            continue
        for seed in sorted(set(a.index) & set(b.index)):
            ra, rb = a.loc[seed], b.loc[seed]
            out.append([cell.table, cell.rows_name, cell.cell_id, int(seed), ra["metric"], float(ra["value"]),
                        float(rb["value"]), float(ra["lam"]), float(rb["lam"]), _n_candidates(ra["info"]),
                        _n_candidates(rb["info"]), _n_critical(ra), _n_critical(rb),
                        str(ra.get("code_version", ""))])
    return pd.DataFrame(out, columns=PAIR_COLUMNS)


def _flags(pairs: pd.DataFrame) -> pd.DataFrame:
    p = pairs.assign(d=(pairs["value_current"] - pairs["value_step"]).abs())
    p["moved"] = p["d"] > MOVED_REL * np.maximum(1.0, p["value_step"].abs())
    p["age_moved"] = (p["lam_current"] - p["lam_step"]).abs() > MOVED_REL * np.maximum(1.0, p["lam_step"].abs())
    known = p["n_critical_step"].notna() & p["n_critical_current"].notna()
    p["path_changed"] = known & (p["n_critical_step"] != p["n_critical_current"])
    return p


def moved_values(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairs whose value moved (:data:`MOVED_REL`), with their ages, critical points under each row and
    the code of the step rule's row."""
    cols = ["rows", "cell", "seed", "metric", "value_step", "value_current", "lam_step", "lam_current",
            "n_critical_step", "n_critical_current", "code_step"]
    if not len(pairs):
        return pd.DataFrame(columns=cols)
    p = _flags(pairs)
    return p.loc[p["moved"], cols].reset_index(drop=True)


def rule_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per rows folder (a table, or its equal-candidates variant): cells and seeds compared, the values
    that moved (:data:`MOVED_REL`), the largest and median move among them, the ages that moved, and
    the median number of candidates under each rule.

    ``paths_changed`` counts the seeds whose path has another number of critical points under the two
    rows: the step rule's row was made by older code (``code_step``), and the path itself changed
    since (a candidate rule does not change the path).  ``values_moved_same_path`` counts the moved
    values among the other seeds: those are what the candidate rule moved."""
    cols = ["rows", "cells", "seeds", "values_moved", "max_abs_move", "median_abs_move", "ages_moved",
            "paths_changed", "values_moved_same_path", "median_candidates_step", "median_candidates_current"]
    if not len(pairs):
        return pd.DataFrame(columns=cols)
    p = _flags(pairs)
    rows = []
    for name, g in p.groupby("rows", sort=True):
        moved = g.loc[g["moved"], "d"]
        rows.append([name, g["cell"].nunique(), len(g), int(g["moved"].sum()), float(g["d"].max()),
                     float(moved.median()) if len(moved) else 0.0, int(g["age_moved"].sum()),
                     int(g["path_changed"].sum()), int((g["moved"] & ~g["path_changed"]).sum()),
                     float(g["n_candidates_step"].median()), float(g["n_candidates_current"].median())])
    return pd.DataFrame(rows, columns=cols)
