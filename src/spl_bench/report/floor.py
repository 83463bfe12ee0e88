"""The sanity floor of the report: a cell no better than a constant predictor is flagged (issue 59).

The floor of a run is the test metric of the constant predictor on the same split
(:func:`spl_bench.protocol.run.constant_floor`): the majority class of the run's training labels
predicted for every test row (classification, scored by accuracy; the Outlier-Path tables print
its test error), or the mean of the training targets predicted for every test row (regression,
scored by the generalisation error; the RMSE under the authors' protocol).  A cell's floor is the
mean of its runs' floors, in the cell's metric.

A cell whose mean is at or below its floor, in the direction of its metric
(:func:`spl_bench.report.direction.higher_is_better`, at the bands' relative tolerance), fits
nothing the labels' proportions would not give (a one-class partial optimum does that; so does a
model fitted to uniform flips of a data set whose classes are more unequal than the noise): it
is ``at_floor`` in ``coverage.csv``
(its status, with the floor in its reason), marked ⚠ in the comparison tables and counted in the
README.

Where the floors come from, so that the report stays a pure, fast function of the repository:

1. the row's own info, ``floor_value`` (recorded by :func:`spl_bench.protocol.run.run_once` since
   the floor exists);
2. else ``results/reference/floors.csv``, written once from the data by ``scripts/floors.py`` and
   keyed by (rows folder, data set, noise, seed): the floor depends on the data, protocol and
   noise of a run, never on its method.

A cell with a run whose floor is in neither says so (``floor_check``: ``no floor for k of n
runs``) and is not flagged: no floor is guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.atomic import atomic_write_text
from spl_bench.paths import repo_root
from spl_bench.report.bands import REL_TOL
from spl_bench.report.direction import higher_is_better

#: columns of ``results/reference/floors.csv`` (written by ``scripts/floors.py``)
FLOOR_COLUMNS = ("rows_name", "dataset", "noise", "seed", "task", "floor", "constant", "n_train", "n_test", "spec")
#: the join key of a row and its floor
KEY = ["dataset", "noise", "seed"]
#: the status of a flagged cell in ``coverage.csv``: at or below the constant predictor, whatever the
#: cause (a degenerate one-class fit, or labels noisy enough that no model beats the majority class)
DEGENERATE = "at_floor"
#: the first words of a flagged cell's reason (the README counts the far cells by it)
REASON_START = "at or below the constant predictor"
#: the mark of a flagged cell in the comparison tables
MARK = "⚠"
#: ``floor_check`` values
ABOVE, AT_OR_BELOW, MISSING = "above", "at or below", "no floor"


def floors_path(rows_root: Path | None = None) -> Path:
    """``results/reference/floors.csv`` beside the rows folder ``rows_root`` (default ``results/rows``)."""
    base = rows_root.parent if rows_root is not None else repo_root() / "results"
    return base / "reference" / "floors.csv"


def load_floors(path: Path) -> pd.DataFrame:
    """The floors file, or an empty frame with its columns where there is none."""
    if not path.is_file():
        return pd.DataFrame(columns=list(FLOOR_COLUMNS))
    frame = pd.read_csv(path, dtype={"rows_name": str, "dataset": str, "noise": str})
    return frame.reindex(columns=list(FLOOR_COLUMNS))


def write_floors(frame: pd.DataFrame, path: Path) -> None:
    """Write the floors file sorted by its key, every float at full precision (round trip exact)."""
    frame = frame.reindex(columns=list(FLOOR_COLUMNS)).sort_values(["rows_name", *KEY], kind="stable")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))


def _info_floor(info: Any) -> float:
    try:
        return float(json.loads(info).get("floor_value", np.nan))
    except (TypeError, ValueError, AttributeError):
        return float("nan")


def attach(rows: pd.DataFrame, rows_name: str, floors: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (of the folder ``rows_name``) with a column ``floor``: each run's floor in the row's
    metric units, from its info, else from ``floors``; NaN where neither has it."""
    if rows.empty:
        return rows
    rows = rows.copy()
    own = rows["info"].map(_info_floor) if "info" in rows else pd.Series(np.nan, index=rows.index)
    part = floors[floors["rows_name"] == rows_name][[*KEY, "floor"]].drop_duplicates(subset=KEY)
    keys = pd.DataFrame({"dataset": rows["dataset"].astype(str), "noise": rows["noise"].astype(str),
                         "seed": pd.to_numeric(rows["seed"]).astype(int)})  # fmt: skip
    part = part.assign(seed=part["seed"].astype(int))
    looked_up = keys.merge(part, on=KEY, how="left")["floor"].to_numpy(dtype=float)
    rows["floor"] = own.to_numpy(dtype=float)
    rows.loc[rows["floor"].isna(), "floor"] = looked_up[rows["floor"].isna().to_numpy()]
    return rows


def join_floors(summary: pd.DataFrame, main: pd.DataFrame, keys: list[str], col: str) -> pd.DataFrame:
    """``summary`` (indexed by ``keys``) with the columns of :func:`group_floors` (``floor_runs`` 0
    for a group none of whose runs has a value in ``col``)."""
    out = summary.join(group_floors(main, keys, col))
    out["floor_runs"] = out["floor_runs"].fillna(0).astype(int)
    return out


def group_floors(main: pd.DataFrame, keys: list[str], col: str) -> pd.DataFrame:
    """Per group of ``keys``: ``floor_mean`` (mean floor of the runs with a value in ``col``; NaN
    unless every one of them has a floor) and ``floor_runs`` (how many of them have one)."""
    part = main[main[col].notna()]
    if "floor" not in part:
        part = part.assign(floor=np.nan)
    g = part.groupby(keys, dropna=False)["floor"]
    out = g.agg(floor_runs="count", floor_all=lambda x: x.mean() if x.notna().all() else np.nan)
    return out.rename(columns={"floor_all": "floor_mean"})


def at_or_below(metric: str, mean: float, floor: float) -> bool:
    """Whether ``mean`` is at or below ``floor`` in the direction of ``metric`` (relative tolerance
    :data:`~spl_bench.report.bands.REL_TOL`); False where either is not finite."""
    if not (np.isfinite(mean) and np.isfinite(floor)):
        return False
    slack = REL_TOL * max(abs(floor), 1.0)
    return bool(mean <= floor + slack) if higher_is_better(metric) else bool(mean >= floor - slack)


def is_degenerate(r: Any) -> bool:
    """Whether a cell (a row of the comparison's cells) is at or below its floor."""
    runs = int(getattr(r, "runs", 0) or 0)
    mean, fl = float(getattr(r, "ours_mean", np.nan)), float(getattr(r, "floor_mean", np.nan))
    return runs > 0 and at_or_below(str(r.metric), mean, fl)


def what(metric: str) -> str:
    """What the constant predictor of a metric predicts."""
    if metric in ("accuracy", "test_error"):
        return "the majority class of the training labels for every test row"
    return "the mean of the training targets for every test row"


def reason(r: Any) -> str:
    """The reason of a flagged cell: its mean against the floor, and what the floor is."""
    return (f"{REASON_START} on the same splits ({what(str(r.metric))}: {float(r.floor_mean):.3f}; ours "
            f"{float(r.ours_mean):.3f}): no better than a constant, whatever the cause (a one-class partial "
            "optimum, or training labels noisier than the classes are unequal), so not a result to compare "
            "(results/reference/floors.csv)")


def check(r: Any) -> str:
    """``floor_check`` of a cell: ``above`` / ``at or below`` its floor, ``no floor for k of n runs``,
    or empty for a cell without runs."""
    runs = int(getattr(r, "runs", 0) or 0)
    if runs == 0:
        return ""
    have = int(getattr(r, "floor_runs", 0) or 0)
    if have < runs or not np.isfinite(float(getattr(r, "floor_mean", np.nan))):
        return f"{MISSING} for {runs - have} of {runs} runs (scripts/floors.py)"
    return AT_OR_BELOW if is_degenerate(r) else ABOVE


def add_columns(cells: pd.DataFrame) -> None:
    """Column ``floor_check`` of the comparison's cells (:func:`check`)."""
    cells["floor_check"] = [check(r) for r in cells.itertuples()] if len(cells) else []


def mark(r: Any) -> str:
    """The mark of a cell in the comparison tables: `` ⚠ ≤ floor 0.646`` where it is degenerate."""
    return f" {MARK} ≤ floor {float(r.floor_mean):.3f}" if is_degenerate(r) else ""


def note(cells: pd.DataFrame, selection: str) -> str:
    """One sentence under a comparison table: the mark, how many cells carry it, floors missing."""
    part = cells[(cells["selection"] == selection) & (cells["runs"] > 0)]
    if part.empty or "floor_check" not in part:
        return ""
    flagged = int((part["floor_check"] == AT_OR_BELOW).sum())
    missing = int(part["floor_check"].astype(str).str.startswith(MISSING).sum())
    text = (f"{MARK} ≤ floor: the mean is at or below the constant predictor on the same splits (the majority "
            f"class of the training labels; regression: the training mean): no better than a constant (status "
            f"`{DEGENERATE}` in coverage.csv); {flagged} of {len(part)} cells with runs here")
    if missing:
        text += f"; {missing} without a floor for every run (`floor_check`)"
    return text + ".\n"


def readme_lines(val: pd.DataFrame, cov: pd.DataFrame | None = None) -> list[str]:
    """Lines of the README's status section: the cells of ``val`` (validation selection) at or below
    the floor, listed, and those without one; with ``cov``, the count under every selection rule too."""
    if "floor_check" not in val:
        return []
    ran = val[val["runs"] > 0]
    checked = ran["floor_check"].fillna("").astype(str)
    flagged = ran[checked == AT_OR_BELOW]
    missing = int(checked.str.startswith(MISSING).sum())
    outside = int(ran["floor_check"].isna().sum())  # the DSPL table (synthetic data, its own script)
    lines = [f"At or below the constant predictor on the same splits (the majority class of the training labels; "
             f"regression: the training mean), status `{DEGENERATE}`: {len(flagged)} of the "
             f"{int(checked.isin([ABOVE, AT_OR_BELOW]).sum())} cells with runs and a floor"
             + (f" ({missing} cells with runs have no floor for every run)" if missing else "")
             + (f" ({outside} cells with runs outside the papers' tables, DSPL's, have none)" if outside else "")
             + (":" if len(flagged) else "."), ""]  # fmt: skip
    if cov is not None and "floor_check" in cov:
        every = int((cov["floor_check"] == AT_OR_BELOW).sum())
        lines[0] = lines[0].rstrip(":.") + (f"; {every} cells under every selection rule and protocol variant "
                                            "(coverage.csv)" + (":" if len(flagged) else "."))
    if len(flagged):
        lines += ["| table | row | noise | method | ours | floor |", "|---|---|---|---|---|---|"]
        lines += [f"| {r.paper} {r.table} | {r.row} | {r.noise_rate:g} | {r.method} | {r.ours_mean:.3f} | "
                  f"{r.floor_mean:.3f} |" for r in flagged.itertuples()]  # fmt: skip
        lines.append("")
    return lines
