"""Counts of the pooled paired tests of two methods over the tables' ``significance.csv``.

What FINDINGS' claims (:mod:`spl_bench.report.findings`) and the selection-bias section
(:mod:`spl_bench.report.selection_bias`) both count: lines with both methods, lines where one
method's mean is better (each line in its own direction of "better"), lines tested and lines
significantly better either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from spl_bench.report import blocks


def tests_of(comps: Sequence[Any], selection: str, lines: str = "pooled",
             pair: tuple[str, str] | None = None) -> pd.DataFrame:
    """The rows of the tables' ``significance.csv`` under ``selection`` that have paired runs, with their table.

    ``lines``: ``"pooled"`` (the pooled lines of the tables that are not sweeps), ``"sweeps"`` (every
    line of the sweep tables) or ``"all"`` (every line of every table).  ``pair``: only the tests of
    those two methods (either order).
    """
    parts = []
    for comp in comps:
        sweep = len(comp.lines) > 0 and blocks.is_sweep(comp.lines)
        if (lines == "pooled" and sweep) or (lines == "sweeps" and not sweep):
            continue
        t = comp.significance
        keep = (t["selection"] == selection) & (t["n_pairs"] > 0)
        if pair is not None:
            a, b = pair
            keep &= ((t["method_a"] == a) & (t["method_b"] == b)) | ((t["method_a"] == b) & (t["method_b"] == a))
        if lines == "pooled":
            keep &= t["pooled"].astype(bool)
        parts.append(t[keep].assign(table=comp.table))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _a_mean_better(rows: pd.DataFrame, a: str) -> int:
    """Lines where ``a``'s mean over the paired seeds is the better one, each in its own direction."""
    if rows.empty:
        return 0
    sign = rows["higher_is_better"].map(lambda h: 1.0 if bool(h) else -1.0)
    diff = rows["mean_diff"] * sign * (rows["method_a"] == a).map({True: 1.0, False: -1.0})
    return int((diff > 0).sum())


def pair_counts(comps: Sequence[Any], selection: str, a: str, b: str, sweeps: bool = False) -> dict[str, int]:
    """Lines with both ``a`` and ``b``: a's mean better, lines tested, a / b significantly better."""
    rows = tests_of(comps, selection, "sweeps" if sweeps else "pooled", (a, b))
    if rows.empty:
        return {"lines": 0, "a_better": 0, "tested": 0, "a_sig": 0, "b_sig": 0}
    sig = rows[rows["significant"].astype(bool)]
    return {"lines": len(rows), "a_better": _a_mean_better(rows, a),
            "tested": int(rows["p_value"].notna().sum()),
            "a_sig": int((sig["better"] == a).sum()), "b_sig": int((sig["better"] == b).sum())}  # fmt: skip
