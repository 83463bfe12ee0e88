"""Which lines of a table may be pooled: blocks of the across-line test, and lines counted once.

A test across the lines of a table (Friedman, Demšar 2006) treats each line as an independent
block, and a claim counted over many lines ("A significantly better on k lines") treats each
line as a separate piece of evidence.  Neither holds for every table of the GAGA paper:

* **Sweeps.**  Tables 9-16 hold one data set each, at 15-30 values of one hyper-parameter
  (Tables 9-12) or at several noise rates (Tables 13-16).  Their lines are points of one curve:
  no Friedman test "across data sets" is made there; the report draws the curve with each
  point's paired tests instead (:func:`sweep_markdown`, :func:`sweep_figure`).
* **The same data under two names.**  ``cadata`` and ``houses`` are one file (the same sha256
  in ``configs/data/``).  Within a table, lines of the same data at the same noise rate count
  once: the first in the paper's order is kept, the others are left out of the table's Friedman
  test and of the findings page's counts (``pooled`` is False in ``significance.csv``).
* **Different seed sets.**  The means a Friedman test ranks are taken over the seeds every
  method of the line shares (paired, as the within-line tests are); a line whose methods ran
  different seeds says so in the test's notes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.paths import repo_root
from spl_bench.report import significance
from spl_bench.report.lines import VARIED
from spl_bench.report.markdown import to_markdown

#: what makes one line (within a selection rule): the line keys of the paired tests but the rule
LINE = ["row", "noise_rate", "param"]
SWEEP_NOTE = "sweep of one data set: a point of a curve, not pooled with other data sets"


@functools.cache
def data_identity(dataset: str) -> str:
    """What a data set *is*: the sha256 of its file (``configs/data/<name>.yaml``), else its name.

    Two names with one file (``cadata`` and ``houses``) have one identity.
    """
    path = repo_root() / "configs" / "data" / f"{dataset}.yaml"
    if path.is_file():
        for line in path.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "sha256" and value.split("#")[0].strip():
                return "sha256:" + value.split("#")[0].strip()
    return f"name:{dataset}"


def line_frame(lines: pd.DataFrame) -> pd.DataFrame:
    """The distinct lines of a table in the paper's order, with their data set, whether they may
    be pooled (``pooled``) and why not (``pooled_note``).

    ``lines`` has the columns :data:`LINE` and ``dataset``, one row per paper cell (the paper's order).
    """
    frame = lines[[*LINE, "dataset"]].drop_duplicates(subset=LINE).reset_index(drop=True)
    frame["identity"] = frame["dataset"].map(data_identity)
    if is_sweep(frame):
        return frame.assign(pooled=False, pooled_note=SWEEP_NOTE)
    first = frame.groupby(["identity", "noise_rate"], sort=False)["row"].transform("first")
    frame["pooled"] = ~frame.duplicated(subset=["identity", "noise_rate"])
    frame["pooled_note"] = [
        "" if keep else f"same data as {f} at this noise rate: counted once (as {f})"
        for keep, f in zip(frame["pooled"], first, strict=True)
    ]
    return frame


def is_sweep(frame: pd.DataFrame) -> bool:
    """Whether a table's lines (:func:`line_frame`'s columns) are one data set at several settings."""
    identities = frame["identity"] if "identity" in frame else frame["dataset"].map(data_identity)
    return len(frame) > 1 and identities.nunique() == 1


def swept(frame: pd.DataFrame, table: int) -> str:
    """The variable a sweep table varies along its lines: ``noise rate`` or its parameter's name."""
    if frame["noise_rate"].nunique() > 1:
        return "noise rate"
    return VARIED.get(table, "param")


def mark_pooled(tests: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``tests`` (paired tests) with the ``pooled`` column of their line, and the reason in ``note``."""
    key = frame.set_index(LINE)
    idx = pd.MultiIndex.from_frame(tests[LINE].assign(noise_rate=tests["noise_rate"].astype(float).round(4),
                                                      param=tests["param"].fillna("").astype(str)))  # fmt: skip
    key.index = pd.MultiIndex.from_frame(key.index.to_frame().assign(
        noise_rate=lambda f: f["noise_rate"].astype(float).round(4), param=lambda f: f["param"].astype(str)))
    hit = key.reindex(idx)
    out = tests.copy()
    out["pooled"] = hit["pooled"].fillna(False).astype(bool).to_numpy()
    why = hit["pooled_note"].fillna("").to_numpy()
    out["note"] = ["; ".join(x for x in (n, w) if x) for n, w in zip(out["note"].fillna(""), why, strict=True)]
    return out


def line_means(values: pd.DataFrame, frame: pd.DataFrame, pooled_only: bool = True
               ) -> tuple[pd.DataFrame, pd.Series, list[str]]:  # fmt: skip
    """Per line (the lines of ``frame`` in order, pooled ones only by default) and method, the mean
    over the seeds every method of the table shares on that line; the lines' directions; notes.

    ``values`` holds one selection rule's seed values (columns :data:`LINE`, ``method``, ``seed``,
    ``value``, ``higher_is_better``).  A line lacking a method has no mean (the rank test drops it).
    """
    methods = list(dict.fromkeys(values["method"]))
    means, higher, fewer = {}, {}, []
    keep = frame[frame["pooled"]] if pooled_only else frame
    groups = {(r, round(float(n), 4), str(p)): g for (r, n, p), g in
              values.groupby(LINE, sort=False, dropna=False)}  # fmt: skip
    for line in keep.itertuples():
        grp = groups.get((line.row, round(float(line.noise_rate), 4), str(line.param)))
        if grp is None:
            continue
        wide = grp.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
        wide = wide.reindex(columns=methods)
        shared = wide.dropna()
        label = " ".join(str(x) for x in (line.row, line.param) if str(x))
        if wide.notna().any().all() and len(shared):
            means[label] = shared.mean()
            higher[label] = bool(grp["higher_is_better"].iloc[0])
            if int(wide.notna().sum().max()) > len(shared):
                fewer.append(f"{label} ({len(shared)} of {int(wide.notna().sum().max())})")
    notes = []
    if fewer:
        notes.append(f"Means over the seeds all methods share; {len(fewer)} line(s) rank fewer runs than "
                     "their longest method has: " + ", ".join(fewer) + ".")  # fmt: skip
    left = frame[~frame["pooled"]] if pooled_only else frame.iloc[0:0]
    if len(left):
        notes.append("Left out: " + "; ".join(f"{r.row} ({r.pooled_note})" for r in left.itertuples()) + ".")
    table = pd.DataFrame(means).T.reindex(columns=methods) if means else pd.DataFrame()
    return table, pd.Series(higher, dtype=bool), notes


def rank_tests(values: pd.DataFrame, frame: pd.DataFrame, selections: Sequence[str],
               pooled_only: bool = True) -> dict[str, significance.RankTest]:  # fmt: skip
    """The across-line test of each selection rule (none for a sweep table)."""
    out: dict[str, significance.RankTest] = {}
    if is_sweep(frame) or values.empty:
        return out
    for sel in selections:
        part = values[values["selection"] == sel]
        if part.empty:
            continue
        means, higher, notes = line_means(part, frame, pooled_only)
        rt = significance.rank_test(means, higher) if len(means) else None
        if rt is not None:
            rt.notes = notes
            out[sel] = rt
    return out


def _x_value(label: dict[str, Any], axis: str) -> float:
    if axis == "noise rate":
        return float(label["noise_rate"])
    text = str(label.get("param", ""))
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip() == axis:
            return float(value)
    return float("nan")


def sweep_points(cells: pd.DataFrame, tests: pd.DataFrame, axis: str, selection: str) -> pd.DataFrame:
    """One row per point of a sweep (a line of the table): the swept value, the best and second
    means (each line in its metric's direction) and the paired test between them."""
    from spl_bench.report.direction import higher_is_better
    from spl_bench.report.lines import line_param, table_lines

    part = cells[(cells["selection"] == selection) & (cells["runs"] > 0)]
    recs = []
    for label, grp in table_lines(part):
        higher = higher_is_better(str(grp["metric"].iloc[0]))
        ranked = grp.dropna(subset=["ours_mean"]).sort_values("ours_mean", ascending=not higher)
        if len(ranked) < 2:
            continue
        best, second = str(ranked["method"].iloc[0]), str(ranked["method"].iloc[1])
        r0 = ranked.iloc[0]
        same = np.isclose(tests["noise_rate"].astype(float), float(r0["noise_rate"]))
        param = line_param(int(r0["table"]), r0["param"])
        line = tests[(tests["row"] == r0["row"]) & same & (tests["param"].fillna("").astype(str) == param)]
        hit = line[((line["method_a"] == best) & (line["method_b"] == second))
                   | ((line["method_a"] == second) & (line["method_b"] == best))]  # fmt: skip
        t = hit.iloc[0] if len(hit) else None
        flip = t is not None and t["method_a"] != best  # differences printed best − second
        recs.append({axis: _x_value(label, axis), "best": best, "second": second,
                     "n non-zero / pairs": f"{int(t['n_nonzero'])} / {int(t['n_pairs'])}" if t is not None else "–",
                     "median diff (best − second)": _num(t, "median_diff", flip),
                     "rank-biserial": _num(t, "rank_biserial", flip), "p_holm": _num(t, "p_holm", False),
                     "p": t["p_method"] if t is not None and t["p_method"] else "–",
                     "significant": "▲" if significance.significantly_better(line, best, second) else ""})  # fmt: skip
    return pd.DataFrame(recs)


def _num(t: Any, col: str, flip: bool) -> str:
    if t is None or not np.isfinite(float(t[col])):
        return "–"
    v = -float(t[col]) if flip else float(t[col])
    return f"{v:.3g}"


def sweep_markdown(cells: pd.DataFrame, tests: pd.DataFrame, frame: pd.DataFrame, table: int,
                   selection: str) -> str:  # fmt: skip
    """The sweep section of one selection rule: why there is no test across the lines, and the
    per-point paired tests of the best mean against the second."""
    axis = swept(frame, table)
    points = sweep_points(cells, tests, axis, selection)
    data = ", ".join(dict.fromkeys(frame["dataset"]))
    head = (f"\n**A sweep, not a set of data sets.** Every line of this table is {data} at another "
            f"{axis}: the lines are points of one curve, not independent data sets, so no Friedman test "
            "across them. Per point: the best mean against the second, paired by seed (the tests of "
            f"`significance.csv`; ▲: p_holm < {significance.ALPHA:g} with ≥ {significance.MIN_PAIRS} "
            "non-zero differences). Curve: `sweep.png`.\n\n")  # fmt: skip
    if points.empty:
        return head + "No point has two methods with runs yet.\n"
    wins = points[points["significant"] == "▲"]["best"].value_counts()
    who = " (" + ", ".join(f"{m} {k}" for m, k in wins.items()) + ")" if len(wins) else ""
    count = (f"\nPoints where the best is significantly better than the second: {int(wins.sum())} of "
             f"{len(points)}{who}; a count of per-point tests, without correction across points.\n")  # fmt: skip
    return head + to_markdown(points) + count


def sweep_figure(cells: pd.DataFrame, tests: pd.DataFrame, frame: pd.DataFrame, table: int, title: str,
                 path: Path, selections: Sequence[str]) -> Path:  # fmt: skip
    """The sweep as curves, one panel per selection rule: each method's mean (± std) against the
    swept value; a filled triangle where that point's best is significantly better than the second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from spl_bench.report.lines import table_lines

    axis = swept(frame, table)
    sels = [s for s in selections if ((cells["selection"] == s) & (cells["runs"] > 0)).any()]
    fig, axes = plt.subplots(1, max(1, len(sels)), figsize=(5.0 * max(1, len(sels)), 3.4), squeeze=False)
    methods = list(dict.fromkeys(cells["method"]))
    for ax, sel in zip(axes[0], sels, strict=False):
        part = cells[(cells["selection"] == sel) & (cells["runs"] > 0)]
        pts = [(_x_value(label, axis), grp) for label, grp in table_lines(part)]
        for j, m in enumerate(methods):
            xy = sorted((x, float(g.loc[g["method"] == m, "ours_mean"].iloc[0]),
                         float(g.loc[g["method"] == m, "ours_std"].fillna(0).iloc[0]))
                        for x, g in pts if (g["method"] == m).any() and math.isfinite(x))  # fmt: skip
            if xy:
                x, y, e = (np.array(v) for v in zip(*xy, strict=True))
                ax.errorbar(x, y, yerr=e, label=m, color=f"C{j % 10}", marker="o", markersize=3, capsize=2,
                            linewidth=1)  # fmt: skip
        marks = sweep_points(cells, tests, axis, sel)
        for x0, best in (zip(marks[axis], marks["best"], strict=True) if len(marks) else []):
            if best and (marks.loc[marks[axis] == x0, "significant"] == "▲").any():
                hit = [float(g.loc[g["method"] == best, "ours_mean"].iloc[0]) for x, g in pts
                       if math.isclose(x, x0) and (g["method"] == best).any()]  # fmt: skip
                if hit:
                    ax.plot([x0], hit[:1], marker="^", markersize=9, color="k", linestyle="none")
        if axis != "noise rate":
            ax.set_xscale("log")
        ax.set_xlabel(axis)
        ax.set_ylabel(str(part["metric"].iloc[0]) if len(part) else "")
        ax.set_title(f"{sel}: ▲ best significantly better than the second (paired, Holm)", fontsize=8)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title}: a sweep of one data set (no test across its points)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
