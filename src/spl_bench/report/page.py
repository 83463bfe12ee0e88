"""Pieces of a table's ``comparison.md``: cell formats, the paper-order mark, the clean-label
lines, the bar figures, and what each method chose among.

Test selection picks, per run, the candidate with the best test value: a method with more
candidates gets more chances (Original has one, ACS its age grid, MOSPL its Pareto front, GAGA
every critical point of its path), so each block of the page says how many each method had.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.report.direction import higher_is_better as _higher_better
from spl_bench.report.lines import table_lines


def _count(x: float) -> str:
    return f"{x:,.0f}"


def candidates_line(cells: pd.DataFrame, selection: str) -> str:
    """One sentence: each method's candidates per run (mean over runs, range over the lines)."""
    if "candidates" not in cells:
        return ""
    part = cells[(cells["selection"] == selection) & (cells["runs"] > 0)].dropna(subset=["candidates"])
    if part.empty:
        return ""
    items = []
    for method, grp in part.groupby("method", sort=False):
        lo, hi = float(np.min(grp["candidates"])), float(np.max(grp["candidates"]))
        items.append(f"{method} {_count(lo)}" if _count(lo) == _count(hi) else f"{method} {_count(lo)}–{_count(hi)}")
    rule = ("the best of them on the test split is reported" if selection.startswith("test")
            else "one of them is chosen on the validation split")  # fmt: skip
    return (f"Candidates per run (mean over runs; range over the rows; {rule}): " + ", ".join(items)
            + ". Column `candidates` of comparison.csv.\n")  # fmt: skip


#: the paper's ordering of GAGA's methods, best first (checked per row where all four ran)
GAGA_ORDER = ["gaga", "mospl", "acs", "original"]


def _fmt(mean: float, std: float, digits: int = 3) -> str:
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f} ± {std:.{digits}f}" if np.isfinite(std) else f"{mean:.{digits}f}"


def _best(grp: pd.DataFrame, col: str, better: bool) -> str | None:
    vals = grp.dropna(subset=[col])
    if vals.empty:
        return None
    return str(vals.loc[vals[col].idxmax() if better else vals[col].idxmin(), "method"])


def _order_mark(grp: pd.DataFrame, better: bool) -> str:
    """Whether our means keep the paper's ordering of GAGA, MOSPL, ACS, Original (where present)."""
    have = {r.method: r.ours_mean for r in grp.itertuples() if np.isfinite(r.ours_mean)}
    order = [m for m in GAGA_ORDER if m in set(grp["method"])]
    if len(order) < 2 or any(m not in have for m in order):
        return "–"
    vals = [have[m] for m in order]
    ok = all((a >= b) if better else (a <= b) for a, b in itertools.pairwise(vals))
    return "yes" if ok else "no"


def clean_lines(cells: pd.DataFrame) -> pd.DataFrame:
    """One line per table line (validation selection) that has a clean-label reference: the
    reference, and the paper's best and Original means beside it."""
    part = cells[cells["selection"] == "validation"]
    if "clean_runs" not in part or not (part["clean_runs"] > 0).any():
        return pd.DataFrame()
    lines = []
    for label, grp in table_lines(part):
        g = grp[grp["clean_runs"] > 0]
        if g.empty:
            continue
        first = g.iloc[0]
        better = _higher_better(str(first["metric"]))
        best = _best(grp, "paper_mean", better)
        rec = {"row": label["row"]}
        if "noise_rate" in label:
            rec["noise"] = f"{label['noise_rate']:g}"
        rec["param"] = label["param"]
        clean = _fmt(first["clean_mean"], first["clean_std"])
        rec["plain model, clean labels"] = f"{clean} ({int(first['clean_runs'])})"
        orig = grp[grp["method"] == "original"]
        rec["paper: original"] = _fmt(orig["paper_mean"].iloc[0], orig["paper_std"].iloc[0]) if len(orig) else "–"
        if best is not None:
            b = grp[grp["method"] == best].iloc[0]
            rec["paper: best"] = f"{_fmt(b['paper_mean'], b['paper_std'])} ({best})"
        lines.append(rec)
    return pd.DataFrame(lines)


def bar_figure(cells: pd.DataFrame, title: str, path: Path) -> None:
    """Grouped bars per table row: ours (validation selection) solid, the paper's hatched, std as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    part = cells[cells["selection"] == "validation"]
    rows = table_lines(part)
    methods = list(dict.fromkeys(part["method"]))
    ncol = min(4, len(rows))
    nrow = math.ceil(len(rows) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.6 * nrow), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    refs: list[bool] = []
    for ax, (label, grp) in zip(axes.flat, rows, strict=False):
        grp = grp.set_index("method")
        x = np.arange(len(methods))
        for j, m in enumerate(methods):
            if m not in grp.index:
                continue
            r = grp.loc[m]
            c = colors[j % len(colors)]
            ax.bar(x[j] - 0.2, r["ours_mean"], 0.4, yerr=r["ours_std"], color=c, capsize=2)
            ax.bar(x[j] + 0.2, r["paper_mean"], 0.4, yerr=r["paper_std"], color="white", edgecolor=c,
                   hatch="///", capsize=2)  # fmt: skip
        clean = grp["clean_mean"].dropna() if "clean_mean" in grp else pd.Series(dtype=float)
        if len(clean):  # the row's plain model on clean training labels
            ax.axhline(float(clean.iloc[0]), color="0.4", linestyle="--", linewidth=0.8)
            refs.append(True)
        lows = pd.concat([grp["ours_mean"] - grp["ours_std"].fillna(0), grp["paper_mean"] - grp["paper_std"].fillna(0),
                          clean])  # fmt: skip
        if _higher_better(str(grp["metric"].iloc[0])) and lows.notna().any():
            ax.set_ylim(bottom=max(0.0, float(lows.min()) - 0.05))  # accuracies: zoom onto the differences
        ax.set_xticks(x, methods, rotation=45, ha="right", fontsize=7)
        noise = f" noise {label['noise_rate']:g}" if "noise_rate" in label else ""
        ax.set_title(f"{label['row']}{noise} {label['param']}".strip()[:40], fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    dashed = "; dashed: the plain model on clean labels" if refs else ""
    fig.suptitle(f"{title}: ours (solid, validation selection) vs paper (hatched){dashed}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def critical_point_figure(frame: pd.DataFrame, path: Path) -> None:
    """Bars of turning and jump points per data set (GAGA Fig. 6), one group per table row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"T{t} {d}\n{n}" for t, d, n in zip(frame["table"], frame["dataset"], frame["noise"], strict=True)]
    x = np.arange(len(frame))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(frame) + 2), 3.6))
    ax.bar(x - 0.2, frame["turning_mean"], 0.4, label="turning points")
    ax.bar(x + 0.2, frame["jump_mean"], 0.4, label="jump points")
    ax.set_yscale("log")
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("critical points per path (mean over runs)")
    ax.set_title("GAGA critical points by data set (cf. the paper's Fig. 6)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
