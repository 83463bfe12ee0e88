"""What a refresh changed: rows made before a fix (``reproduce_tables.py --refresh-made-before``)
against the rows that replaced them.

The old rows are read from a commit of the repository's history (``before``, the last commit with
them), the new ones from the working tree; paired by cell and seed (the same split, noise and
configuration hash), they say which reported values the fix moved and by how much.  Only seeds
whose old row was made by code without the fix and whose new row by code with it are paired.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.paths import repo_root
from spl_bench.rowfiles import read_row_file, split_checked
from spl_bench.rowstore import info_dict
from spl_bench.runner import commits
from spl_bench.runner.rule_change import MOVED_REL, main_rows

PAIR_COLUMNS = ["rows", "cell", "seed", "metric", "value_old", "value_new", "lam_old", "lam_new", "code_old",
                "code_new", "n_degenerate_ages"]


def _at_commit(path: Path, before: str) -> pd.DataFrame:
    """The row file ``path`` (inside the repository) as committed at ``before`` (empty if it was not there)."""
    rel = path.resolve().relative_to(repo_root().resolve())
    raw = commits.show(before, rel.as_posix())
    if raw is None:
        return pd.DataFrame()
    return pd.read_csv(io.BytesIO(split_checked(raw)), dtype={"config_hash": str})


def _degenerate(info: object) -> float:
    return float(info_dict(info).get("n_degenerate_ages", np.nan))


def refresh_pairs(files: list[Path], fix: str, before: str) -> pd.DataFrame:
    """One row per refreshed seed of the row ``files`` (:data:`PAIR_COLUMNS`): its reported value as
    committed at ``before`` and in the working tree, where the old row lacks ``fix`` and the new has it."""
    out = []
    for path in files:
        old, new = _at_commit(path, before), read_row_file(path)
        if not len(old) or not len(new):
            continue
        a, b = main_rows(old), main_rows(new)
        for seed in sorted(set(a.index) & set(b.index)):
            ra, rb = a.loc[seed], b.loc[seed]
            old_has, new_has = commits.contains(ra["code_version"], fix), commits.contains(rb["code_version"], fix)
            if old_has is True or new_has is not True:
                continue
            out.append([path.parent.name, path.name.split("__")[0], int(seed), ra["metric"], float(ra["value"]),
                        float(rb["value"]), float(ra["lam"]), float(rb["lam"]), str(ra["code_version"]),
                        str(rb["code_version"]), _degenerate(rb.get("info"))])
    return pd.DataFrame(out, columns=PAIR_COLUMNS)


def refresh_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: seeds refreshed, seeds whose new run met a one-class age (``n_degenerate_ages`` > 0),
    values moved (by more than :data:`~spl_bench.runner.rule_change.MOVED_REL` relative), the largest
    move, and the cell's mean over the refreshed seeds before and after."""
    cols = ["rows", "cell", "seeds", "seeds_degenerate", "values_moved", "max_abs_move", "mean_old", "mean_new"]
    if not len(pairs):
        return pd.DataFrame(columns=cols)
    p = pairs.assign(d=(pairs["value_new"] - pairs["value_old"]).abs())
    p["moved"] = p["d"] > MOVED_REL * np.maximum(1.0, p["value_old"].abs())
    rows = []
    for (name, cell), g in p.groupby(["rows", "cell"], sort=True):
        rows.append([name, cell, len(g), int((g["n_degenerate_ages"] > 0).sum()), int(g["moved"].sum()),
                     float(g["d"].max()), float(g["value_old"].mean()), float(g["value_new"].mean())])
    return pd.DataFrame(rows, columns=cols)
