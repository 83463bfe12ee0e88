"""Two sections of ``results/FINDINGS.md``: how much test selection favours more candidates, and
the corrections of issue 58.

**Selection bias.**  Under test selection a run reports its best candidate on the test split.
Original has one candidate, ACS its age grid (about 40), MOSPL its Pareto front (about 150),
GAGA every critical point of its path (thousands): the more candidates, the more chances, and
where one method's candidates include another's model the comparison holds by construction.
:func:`selection_bias` measures it seed by seed from ``significance.csv`` (``share_a_not_worse``
/ ``share_b_not_worse``: the share of paired seeds where a method is at least as good as the
other), under test selection and, beside it, under validation selection of the same fits.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.report import blocks
from spl_bench.report.markdown import to_markdown
from spl_bench.report.pairs import tests_of

METHODS = ("original", "acs", "mospl", "gaga")
NAMES = {"gaga": "GAGA", "mospl": "MOSPL", "acs": "ACS", "original": "Original"}


def _pooled_tests(comps: Sequence[Any], selection: str, every_line: bool = False) -> pd.DataFrame:
    """The rows of the tables' ``significance.csv`` of one selection rule: pooled lines of the
    tables that are not sweeps, or ``every_line``."""
    return tests_of(comps, selection, "all" if every_line else "pooled")


def candidates(comps: Sequence[Any], selection: str = "test") -> dict[str, tuple[float, float]]:
    """Each method's candidates per run: (smallest, largest) mean over the cells with runs."""
    out: dict[str, tuple[float, float]] = {}
    for comp in comps:
        c = comp.cells[(comp.cells["selection"] == selection) & (comp.cells["runs"] > 0)]
        if "candidates" not in c:
            continue
        for m, grp in c.dropna(subset=["candidates"]).groupby("method"):
            lo, hi = out.get(m, (np.inf, -np.inf))
            out[m] = (min(lo, float(grp["candidates"].min())), max(hi, float(grp["candidates"].max())))
    return out


def _share(rows: pd.DataFrame, more: str) -> tuple[int, float]:
    """(paired seeds, share where ``more`` is at least as good) over ``rows`` of one pair."""
    if rows.empty:
        return 0, float("nan")
    share = np.where(rows["method_a"] == more, rows["share_a_not_worse"], rows["share_b_not_worse"])
    n = rows["n_pairs"].to_numpy(dtype=float)
    ok = np.isfinite(share)
    return int(n[ok].sum()), float((share[ok] * n[ok]).sum() / n[ok].sum()) if ok.any() else float("nan")


def _fmt_range(r: tuple[float, float] | None) -> str:
    if r is None:
        return "–"
    lo, hi = (f"{x:,.0f}" for x in r)
    return lo if lo == hi else f"{lo}–{hi}"


def selection_bias(comps: Sequence[Any]) -> str:
    """The section's table: per pair of methods, how often the one with more candidates is at least
    as good, seed by seed, under test selection and under validation selection of the same fits."""
    cand = candidates(comps)
    tests = {sel: _pooled_tests(comps, sel) for sel in ("test", "validation")}
    rows = []
    for a, b in itertools.combinations(METHODS, 2):
        if a not in cand or b not in cand:
            continue
        more, fewer = (b, a) if cand[b][0] >= cand[a][1] else (a, b)
        rec: dict[str, Any] = {"more candidates": NAMES[more], "fewer": NAMES[fewer],
                               "candidates per run": f"{_fmt_range(cand[more])} against {_fmt_range(cand[fewer])}"}
        for sel, label in (("test", "test selection"), ("validation", "validation selection")):
            t = tests[sel]
            pair = t[((t["method_a"] == a) & (t["method_b"] == b)) | ((t["method_a"] == b) & (t["method_b"] == a))] \
                if len(t) else t  # fmt: skip
            n, share = _share(pair, more)
            rec[f"{label}: the one with more at least as good"] = f"{share:.0%} of {n} seeds" if n else "–"
        rows.append(rec)
    if not rows:
        return "No pair of methods with candidate counts yet.\n"
    return (to_markdown(pd.DataFrame(rows)) + "\nSeeds of the pooled lines (sweeps apart), each line in its own "
            "direction; ties count as at least as good (columns `share_a_not_worse` / `share_b_not_worse` of "
            "`significance.csv`, candidates: column `candidates` of `coverage.csv`). Where the method with more "
            "candidates is at least as good on (nearly) every seed under test selection, a claim that it beats "
            "the other under test selection (the authors' protocol included) holds largely by construction: "
            "read the validation-selection column for the claim.\n")  # fmt: skip


def _issue_count(comps: Sequence[Any], a: str, b: str) -> tuple[int, int]:
    """(a, b) significantly better, honest protocol, every line of every table, the line's direction,
    p_holm < 0.05 alone: the count issue 58 made."""
    t = _pooled_tests(comps, "validation", every_line=True)
    if t.empty:
        return 0, 0
    t = t[(((t["method_a"] == a) & (t["method_b"] == b)) | ((t["method_a"] == b) & (t["method_b"] == a)))
          & (t["p_holm"] < 0.05)]  # fmt: skip
    return int((t["better"] == a).sum()), int((t["better"] == b).sum())


def _friedman(comps: Sequence[Any], table: int, selection: str, every_line: bool) -> str:
    from spl_bench.report.significance import rank_test

    comp = next((c for c in comps if c.table == table), None)
    if comp is None or comp.values.empty:
        return "–"
    if not every_line:
        rt = comp.ranks.get(selection)
    else:
        part = comp.values[comp.values["selection"] == selection]
        means, higher, _ = blocks.line_means(part, comp.lines, pooled_only=False)
        rt = rank_test(means, higher) if len(means) else None
    if rt is None:
        return "–"
    ranks = ", ".join(f"{NAMES.get(m, m)} {r:.2f}" for m, r in rt.ranks.sort_values().items())
    return f"χ² = {rt.statistic:.2f}, p = {rt.p_value:.2g} over {rt.n_lines} lines; ranks {ranks}"


def corrections(comps: Sequence[Any], before: dict) -> str:
    """The closing note: what the page and Tables 2-3 printed before issue 58, and the corrected values."""
    from spl_bench.report.pairs import pair_counts

    rows = []
    for (a, b), (pa, pb) in before["pairs"].items():
        ia, ib = _issue_count(comps, a, b)
        c = pair_counts(comps, "validation", a, b)
        rows.append({"A": NAMES[a], "B": NAMES[b], "printed before (A / B significantly better)": f"{pa} / {pb}",
                     "per-line direction, every line, p_holm < 0.05": f"{ia} / {ib}",
                     "this page (≥ 6 non-zero differences, same data once, sweeps apart)":
                         f"{c['a_sig']} / {c['b_sig']}"})  # fmt: skip
    fried = []
    for (table, sel), old in before["friedman"].items():
        fried.append({"table": table, "selection": sel, "printed before": old,
                      "corrected: every line": _friedman(comps, table, sel, every_line=True),
                      "corrected: the table's test (same data once)": _friedman(comps, table, sel, every_line=False)})
    return ("\n## Corrections (issue 58)\n\nUntil issue 58 the direction of \"better\" was read once per table, "
            "from its first cell; Tables 2 and 3 mix accuracy lines (higher is better) with error lines (lower is "
            "better), so half their lines were ranked backwards, in §1-2 above and in the Friedman tests and "
            "critical-difference diagrams of those tables. The counts of §1-2, honest protocol (validation "
            "selection):\n\n" + to_markdown(pd.DataFrame(rows))
            + "\nThe Friedman tests of Tables 2 and 3 (Table 3 holds cadata† and houses†, one file: its own test "
            "counts them once):\n\n" + to_markdown(pd.DataFrame(fried)))  # fmt: skip
