"""GAGA cells that a table still reads from rows made under the step-point candidates.

GAGA's selection candidates became route-independent on 2026-11-29 (`candidate_rule`
``critical_grid`` in a row's ``info``; docs/gaga.md, "Routes and candidates").  A table keeps reading
its committed rows of the old rule (solver step points as candidates, no ``candidate_rule``) until
every GAGA cell of the table has been rerun under the new one; the reruns are written beside them in
the same folder, under a configuration hash of their own, and are not in the folder's ``index.csv``.
This module reads, from the rows themselves, which cells are on the old rule and how many seeds their
reruns have, so that each page says which of its values are not today's rule's.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spl_bench.paths import rows_root
from spl_bench.rowstore import index_cells, info_dict, read_cell

#: the candidate rule of a GAGA row without ``candidate_rule`` in its info (made before 2026-11-29)
OLD_RULE = "steps"
CURRENT_RULE = "critical_grid"
COLUMNS = ["folder", "cell", "seeds_read", "seeds_current"]


def _rule_seeds(rows: pd.DataFrame) -> dict[str, set[int]]:
    """The seeds of ``rows`` by the candidate rule their GAGA run recorded."""
    out: dict[str, set[int]] = {}
    for info, seed in zip(rows["info"], rows["seed"], strict=True):
        out.setdefault(str(info_dict(info).get("candidate_rule", OLD_RULE)), set()).add(int(seed))
    return out


def step_rule_cells(folder: Path) -> pd.DataFrame:
    """The GAGA cells of one rows folder read (through its ``index.csv``) from rows of the old candidate
    rule: per cell the seeds read, and the most seeds a file beside it has under the current rule (its
    rerun; another hash of the cell, not in the index).  Empty where every GAGA cell is on the current rule."""
    out = []
    for store in index_cells(folder):
        if "method=gaga" not in store.cell.split(","):
            continue
        rows = store.read()
        if not len(rows) or set(_rule_seeds(rows)) == {CURRENT_RULE}:
            continue
        current = max((len(_rule_seeds(read_cell(o.path)).get(CURRENT_RULE, ())) for o in store.others() if o.n_seeds),
                      default=0)
        out.append({"folder": Path(folder).name, "cell": store.cell, "seeds_read": rows["seed"].nunique(),
                    "seeds_current": current})
    return pd.DataFrame(out, columns=COLUMNS)


def table_step_rule(experiment: str, variants: tuple[str, ...], root: Path | None = None) -> pd.DataFrame:
    """:func:`step_rule_cells` of a table's folder and of its variants' folders (``<experiment>@<variant>``)."""
    base = root or rows_root()
    frames = [step_rule_cells(base / name) for name in (experiment, *(f"{experiment}@{v}" for v in variants))]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def note(frame: pd.DataFrame, runs: int) -> str:
    """A paragraph of a table's page: which folders' GAGA cells are on the old rule, and their reruns."""
    if not len(frame):
        return ""
    parts = []
    for folder, f in frame.groupby("folder", sort=False):
        done = int((f["seeds_current"] >= runs).sum())
        parts.append(f"`{folder}`: {len(f)} cell(s), {int(f['seeds_read'].sum())} seeds read; their rerun under "
                     f"the current rule has {int(f['seeds_current'].sum())} seeds ({done} of the cells at {runs})")
    return ("\n**GAGA's values here come from rows of the old candidate rule** (solver step points as "
            "candidates, before 2026-11-29; docs/gaga.md, \"Routes and candidates\"): "
            + "; ".join(parts) + ". The table reads the rerun's rows once every GAGA cell of it has "
            f"{runs} seeds under the current rule; values can move then (`scripts/candidate_rule_change.py`).\n")
