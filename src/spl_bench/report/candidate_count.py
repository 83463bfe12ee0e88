"""A section of ``results/FINDINGS.md``: how much of a difference is the candidate count.

Under validation selection each method picks among its own candidates: ACS among its 40 grid
ages, GAGA among thousands of path points.  With more candidates the pick fits the noisy
validation split better, so a significant difference between GAGA and ACS can come from the
count rather than from the solutions.  The equal-candidates variant (``--variant
equal_candidates``, ``protocol.candidates=shared_grid``; docs/protocol.md) gives both the same 40
ages; :func:`candidate_count_section` sets each line's paired test under the default selection
beside the same test under equal candidates (rows of the tables' ``significance.csv``, selections
``validation`` and ``validation@equal_candidates``), and measures test-selection optimism: per
method, the test-selected mean minus the validation-selected mean of the same fits, in each
line's direction (``comparison.csv``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from spl_bench.report import blocks
from spl_bench.report.direction import higher_is_better
from spl_bench.report.markdown import to_markdown
from spl_bench.report.pairs import tests_of

EQUAL = "validation@equal_candidates"
NAMES = {"gaga": "GAGA", "mospl": "MOSPL", "acs": "ACS", "original": "Original"}


def _pair_tests(comps: Sequence[Any], selection: str, a: str, b: str) -> pd.DataFrame:
    """The pooled lines' tests of ``a`` against ``b`` under ``selection``, keyed by (table, row, noise, param)."""
    out = tests_of(comps, selection, "pooled", (a, b))
    if out.empty:
        return out
    out["param"] = out["param"].fillna("").astype(str)
    return out.set_index(["table", "row", "noise_rate", "param"])


def _verdict(t: pd.Series) -> str:
    """``"ACS ▲ (r 0.80, median 2e-4)"``, ``"no significant difference (r ...)"`` or ``"too few runs"``."""
    if int(t.get("n_nonzero", 0)) == 0 and int(t.get("n_pairs", 0)) > 0:
        return f"the same on all {int(t['n_pairs'])} seeds (every paired difference a tie)"
    if pd.isna(t.get("p_value")):
        return "too few runs"
    effect = (f"r {float(t['rank_biserial']):+.2f}, median difference {float(t['median_diff']):.2g}, "
              f"p_holm {float(t['p_holm']):.2g}")
    if bool(t["significant"]):
        return f"{NAMES.get(str(t['better']), t['better'])} better ({effect})"
    return f"no significant difference ({effect})"


def _lines_table(own: pd.DataFrame, equal: pd.DataFrame) -> tuple[str, dict[str, int]]:
    """Per line with a significant difference under either rule: both verdicts; and the counts."""
    rows, counts = [], {"own_sig": 0, "with_equal": 0, "remain": 0}
    for key in own.index.union(equal.index):
        o = own.loc[key] if key in own.index else None
        e = equal.loc[key] if key in equal.index else None
        o_sig = o is not None and bool(o["significant"])
        e_sig = e is not None and bool(e["significant"])
        if o_sig:
            counts["own_sig"] += 1
            if e is not None:
                counts["with_equal"] += 1
                counts["remain"] += int(e_sig and e["better"] == o["better"])
        if o_sig or e_sig:
            table, row, noise, param = key
            rows.append({"table": table, "line": f"{row} {noise:g}" + (f" {param}" if param else ""),
                         "own candidates (validation)": _verdict(o) if o is not None else "–",
                         "equal candidates (validation)": _verdict(e) if e is not None else "not run yet"})
    return (to_markdown(pd.DataFrame(rows)) if rows else "No line has a significant difference yet.\n"), counts


def _optimism(comps: Sequence[Any], methods: Sequence[str]) -> str:
    """Per method: the test-selected minus the validation-selected mean of the same fits, over the
    pooled lines, each in its own direction (positive: test selection reports a better value)."""
    rows = []
    for m in methods:
        gains = []
        for comp in comps:
            if len(comp.lines) and blocks.is_sweep(comp.lines):
                continue
            c = comp.cells[(comp.cells["method"] == m) & (comp.cells["runs"] > 0)]
            pooled = set(comp.lines[comp.lines["pooled"]]["row"]) if len(comp.lines) else set(c["row"])
            c = c[c["row"].isin(pooled)].assign(param=c["param"].fillna("").astype(str))
            v = c[c["selection"] == "validation"].set_index(["row", "noise_rate", "param"])
            t = c[c["selection"] == "test"].set_index(["row", "noise_rate", "param"])
            for key in v.index.intersection(t.index):
                sign = 1.0 if higher_is_better(str(v.loc[key, "metric"])) else -1.0
                gains.append(sign * (float(t.loc[key, "ours_mean"]) - float(v.loc[key, "ours_mean"])))
        if gains:
            s = pd.Series(gains)
            rows.append({"method": NAMES.get(m, m), "lines": len(s), "mean optimism": f"{s.mean():.4f}",
                         "median": f"{s.median():.4f}", "lines where test selection looks better": int((s > 0).sum())})
    return to_markdown(pd.DataFrame(rows)) if rows else "No lines yet.\n"


def candidate_count_section(comps: Sequence[Any]) -> str:
    """The FINDINGS section: GAGA against ACS with their own candidates and with equal ones, line by
    line, and the optimism of test selection per method."""
    own = _pair_tests(comps, "validation", "gaga", "acs")
    equal = _pair_tests(comps, EQUAL, "gaga", "acs")
    table, n = _lines_table(own, equal)
    lead = (f"Under validation selection with each method's own candidates, {n['own_sig']} pooled lines show a "
            f"significant difference between GAGA and ACS; {n['with_equal']} of them have equal-candidates rows "
            f"(`--variant equal_candidates`: both methods at the same 40 ages, GAGA's path by its dense output), "
            f"and in {n['remain']} of those the same method is still significantly better. A difference that "
            "disappears under equal candidates came from how many candidates the selection saw, not from the "
            "solutions. Lines with a significant difference under either rule (Wilcoxon, Holm within the line; "
            "r: rank-biserial correlation, the sign for the first method of the pair in `significance.csv`):\n\n")
    return (lead + table + "\n**Test-selection optimism**: the test-selected mean minus the validation-selected "
            "mean of the same fits, per pooled line, in each line's direction (positive: test selection reports "
            "a better value than a user choosing on validation data would get):\n\n" + _optimism(comps, tuple(NAMES)))
