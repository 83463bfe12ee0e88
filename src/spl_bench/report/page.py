"""A table's ``comparison.md`` and its figures (:func:`write_table`), and their pieces: cell formats,
the paper-order mark, the clean-label lines, the bar figures, and what each method chose among.

Test selection picks, per run, the candidate with the best test value: a method with more
candidates gets more chances (Original has one, ACS its age grid, MOSPL its Pareto front, GAGA
every critical point of its path), so each block of the page says how many each method had.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.atomic import atomic_write_text
from spl_bench.report import blocks, floor, old_rule, significance
from spl_bench.report.compare import TableComparison
from spl_bench.report.direction import higher_is_better as _higher_better
from spl_bench.report.lines import clear_winner, line_param, per_method_params, table_lines
from spl_bench.report.markdown import to_markdown
from spl_bench.report.ours import SELECTIONS
from spl_bench.table_registry import PAPER_NOTES, PAPER_RUNS, PAPER_TITLES, REPORTED_VARIANTS


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


def order_mark(grp: pd.DataFrame, better: bool) -> str:
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


#: what each reported protocol variant is, as its sections' titles say
VARIANT_TITLES = {"authors": "the GAGA authors' noise: labels flipped near the boundary before the split, so "
                  "test labels are noisy; regression N(0.2, 3²) on features and target",
                  "authors_protocol": "the GAGA authors' whole protocol: their noise, 20 KFold folds, scaling on "
                  "all rows, min-max target and RMSE, no intercept, their mfeat-pixel coding; the age chosen "
                  "on the test fold, as the paper reports",
                  "equal_candidates": "equal candidates: GAGA and ACS both offer their solutions at the same 40 ages "
                  "(the paper's ACS grid; GAGA's path by its dense output), docs/protocol.md"}  # fmt: skip
#: the legend of ▲ under every section
SIGNIFICANCE_NOTE = (
    "\n▲: the row's best mean (in the row's own direction: higher accuracy, lower error) is better than the "
    "second best by the Wilcoxon signed-rank test on the seeds both ran (`scipy.stats.wilcoxon`, two-sided), "
    "Holm-corrected over the row's pairs of methods, p < 0.05, with at least 6 non-zero paired differences. "
    "Beside ▲: the non-zero paired differences of the seeds both ran, |rank-biserial r| and whether p is exact. "
    "Every pair's test is in `significance.csv`, with what it rests on: the non-zero differences, the median "
    "difference, the rank-biserial correlation and whether the p-value is exact or the normal approximation "
    "(fewer than 6 shared seeds: \"too few runs\"; docs/statistics.md).\n"
)


def row_summary(cells: pd.DataFrame, selection: str, tests: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per table line (:func:`table_lines`): ours / paper per method, best marked (**),
    z, and whether the paper's ordering holds.  With ``tests`` (the paired tests of this
    selection rule), the best mean is marked ▲ where it is significantly better than the second."""
    part = cells[cells["selection"] == selection]
    per_method = per_method_params(part)
    lines = []
    for label, grp in table_lines(part):
        better = _higher_better(str(grp["metric"].iloc[0]))
        rec: dict[str, Any] = {"row": label["row"]}
        if "noise_rate" in label:
            rec["noise"] = f"{label['noise_rate']:g}"
        rec["param"] = label["param"]
        best_ours = _best(grp, "ours_mean", better)
        best_paper = _best(grp, "paper_mean", better)
        clear = clear_winner(grp, tests, better)
        rests = f" ▲ ({_rests_on(grp, tests, better)})" if clear else ""
        for r in grp.itertuples():
            ours = _fmt(r.ours_mean, r.ours_std) + (f" ({r.runs})" if r.runs else "")
            if r.method == best_ours:
                ours = f"**{ours}**" + rests
            ours += floor.mark(r)
            pap = _fmt(r.paper_mean, r.paper_std)
            if r.method == best_paper:
                pap = f"**{pap}**"
            z = f"{r.z:+.1f}" if np.isfinite(r.z) else "–"
            own = f" [{r.param}]" if per_method and r.param else ""
            rec[r.method] = f"{ours} / {pap} / z {z}{own}"
        lines.append(rec)
        # the GAGA paper's claim; the Outlier-Path paper makes none such
        if "paper" not in grp or (grp["paper"] == "gaga").all():
            rec["paper order holds"] = order_mark(grp, better)
    frame = pd.DataFrame(lines)
    if len(frame) and per_method:
        frame = frame.drop(columns="param")
    if len(frame) and "paper order holds" in frame:  # the ordering mark last, whatever order the methods came in
        frame = frame[[c for c in frame.columns if c != "paper order holds"] + ["paper order holds"]]
    return frame


def _rests_on(grp: pd.DataFrame, tests: pd.DataFrame | None, better: bool) -> str:
    """What the ▲ of a line rests on: the best-against-second test's non-zero differences of the
    paired seeds, its |rank-biserial correlation| and whether its p-value is exact."""
    ranked = grp.dropna(subset=["ours_mean"]).sort_values("ours_mean", ascending=not better)
    best, second = str(ranked["method"].iloc[0]), str(ranked["method"].iloc[1])
    r0 = ranked.iloc[0]
    line = tests[(tests["row"] == r0["row"]) & np.isclose(tests["noise_rate"].astype(float), float(r0["noise_rate"]))
                 & (tests["param"].fillna("").astype(str) == line_param(int(r0["table"]), r0["param"]))]  # fmt: skip
    hit = line[((line["method_a"] == best) & (line["method_b"] == second))
               | ((line["method_a"] == second) & (line["method_b"] == best))]  # fmt: skip
    t = hit.iloc[0]
    how = "exact" if str(t["p_method"]).startswith("exact") else "approx."
    return f"{int(t['n_nonzero'])}/{int(t['n_pairs'])} non-zero, r {abs(float(t['rank_biserial'])):.2f}, {how}"


def write_table(comp: TableComparison, out_root: Path, figures: bool = True) -> list[Path]:
    """``comparison.md`` / ``comparison.csv`` / ``comparison.png`` of one table."""
    out = out_root / comp.experiment
    out.mkdir(parents=True, exist_ok=True)
    cells = comp.cells
    csv = out / "comparison.csv"
    cells.to_csv(csv, index=False, float_format="%.6g")
    md = [f"# {PAPER_TITLES.get(comp.paper, comp.paper)}, Table {comp.table}: ours beside the paper\n",
          "Each cell: ours mean ± std (runs) / the paper's mean ± std / z = (ours − paper) / paper std. "
          "Best of each row in bold, in ours and in the paper. " + PAPER_NOTES.get(comp.paper, "")
          + "Generated by `scripts/reproduce_tables.py` from `results/rows/` and `results/paper/`; protocol "
          "differences in docs/protocol.md.\n"]  # fmt: skip
    md.append(old_rule.note(comp.old_rule, PAPER_RUNS[comp.paper]))
    sections = [("validation", "Age chosen on a validation split (default, honest)"),
              ("test", "Age chosen on the test split (the authors' code), same fits")]  # fmt: skip
    for variant in REPORTED_VARIANTS:
        sections += [(f"validation@{variant}", f"Protocol variant '{variant}' ({VARIANT_TITLES[variant]}), validation"),
                     (f"test@{variant}", f"Protocol variant '{variant}', age chosen on the test split")]  # fmt: skip
    tests = comp.significance
    sweep = len(comp.lines) > 0 and blocks.is_sweep(comp.lines)
    for sel, title in sections:
        if not (cells["selection"] == sel).any():
            continue
        md.append(f"\n## {title}\n\n")
        md.append(to_markdown(row_summary(cells, sel, tests[tests["selection"] == sel])))
        md.append(SIGNIFICANCE_NOTE)
        md.append(candidates_line(cells, sel))
        md.append(floor.note(cells, sel))
        if sel in comp.ranks:
            md.append(comp.ranks[sel].summary() + " Diagram: `critical_difference.png`.\n")
        elif sweep and sel in SELECTIONS:
            md.append(blocks.sweep_markdown(cells, tests[tests["selection"] == sel], comp.lines, comp.table, sel))
    ref = clean_lines(cells)
    if len(ref):
        md.append("\n## Clean-label reference\n\nEach row's plain model (Original) on the same splits with no "
                  "corrupted training rows (`scripts/reproduce_tables.py --variant clean`), validation hold-out as "
                  "above: what the model family reaches on this data. A paper mean far above it cannot come from "
                  "handling the noise.\n\n")  # fmt: skip
        md.append(to_markdown(ref))
    val = cells[cells["selection"] == "validation"]
    counts = val["status"].value_counts().to_dict()
    agree = val[val["runs"] > 0]["agreement"].value_counts().to_dict()
    md.append("\nCells under validation selection, by completeness: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
              + "; by agreement with the paper: " + ", ".join(f"{k} {v}" for k, v in sorted(agree.items()))
              + "\n")  # fmt: skip
    md.append(comp.footer)
    md_path = out / "comparison.md"
    atomic_write_text(md_path, "".join(md))
    sig = out / "significance.csv"
    tests.to_csv(sig, index=False, float_format="%.6g")
    if not figures:
        return [md_path, csv, sig]
    png = out / "comparison.png"
    bar_figure(cells, f"{comp.paper} Table {comp.table}", png)
    written = [md_path, csv, sig, png]
    if comp.ranks:
        written.append(significance.cd_figure(comp.ranks, f"{comp.paper} Table {comp.table}",
                                              out / "critical_difference.png"))  # fmt: skip
    elif sweep:
        written.append(blocks.sweep_figure(cells, tests, comp.lines, comp.table, f"{comp.paper} Table {comp.table}",
                                               out / "sweep.png", SELECTIONS))  # fmt: skip
    return written
