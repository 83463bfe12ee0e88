"""The lines of a comparison table: which cells form one line, and whether one method clearly wins it.

A *line* is one row of the paper at one noise rate and, where the row's methods share it, one
parameter setting (Tables 9-12 vary alpha or C along their rows).  Used by the comparison tables
(:mod:`spl_bench.report.compare`) and the findings page (:mod:`spl_bench.report.findings`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from spl_bench.report import significance
from spl_bench.report.direction import higher_is_better

#: which parameter a table varies along its rows (matched numerically between ours and the paper)
VARIED = {9: "alpha", 10: "alpha", 11: "C", 12: "C"}


def line_param(table: int, param: Any) -> str:
    """The ``param`` of a line: the varied parameter of Tables 9-12, else empty (one line per row)."""
    return str(param) if table in VARIED and isinstance(param, str) else ""


#: the one function that decides a metric's direction (:mod:`spl_bench.report.direction`), under its old name
higher_better = higher_is_better


def per_method_params(part: pd.DataFrame) -> bool:
    """Whether the ``param`` column holds each method's own hyper-parameters (Table 7: one
    method per parameter string) rather than a setting shared by the row's methods."""
    if part.empty:
        return False
    methods = part.groupby(["row", "noise_rate", "param"])["method"].nunique()
    per_line = part.groupby(["row", "noise_rate"])["method"].nunique()
    return bool((methods == 1).all() and (per_line > 1).any())


def table_lines(part: pd.DataFrame) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The lines of a table (in the paper's order), each with its label and its cells.

    A line is one row of the paper at one noise rate and, where the row's methods share it,
    one parameter setting (a row of Tables 9-12 is one alpha / C); where the parameters are
    each method's own (Table 7) they do not split the line.
    """
    if part.empty:
        return []
    per_method = per_method_params(part)
    keys = ["row", "noise_rate"] + ([] if per_method else ["param"])
    several_noises = bool((part.groupby("row")["noise_rate"].nunique() > 1).any())
    out = []
    for values, grp in part.groupby(keys, sort=False):
        label = dict(zip(keys, values, strict=True))
        if not several_noises:
            label.pop("noise_rate")
        if per_method:
            label["param"] = ""
        out.append((label, grp))
    return out


def clear_winner(grp: pd.DataFrame, tests: pd.DataFrame | None, better: bool) -> bool:
    """Whether the line's best mean (``better``: whether higher is, the line's direction) is
    significantly better than its second best (:func:`significance.significantly_better`)."""
    if tests is None or tests.empty:
        return False
    ranked = grp.dropna(subset=["ours_mean"]).sort_values("ours_mean", ascending=not better)
    if len(ranked) < 2:
        return False
    r0 = ranked.iloc[0]
    param = line_param(int(r0["table"]), r0["param"])
    line = tests[(tests["row"] == r0["row"]) & np.isclose(tests["noise_rate"].astype(float), float(r0["noise_rate"]))
                 & (tests["param"].fillna("").astype(str) == param)]  # fmt: skip
    return significance.significantly_better(line, str(r0["method"]), str(ranked.iloc[1]["method"]))
