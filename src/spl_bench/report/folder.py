"""The statistics of the paper tables for any run folders (``spl-bench report DIR``).

A *line* is one row of the report's table: an experiment, data set, noise, model, selection rule
and metric, its methods in the columns.  On each line, as in the comparison tables
(:mod:`spl_bench.report.compare`), every pair of methods is compared by the paired Wilcoxon
signed-rank test on the seeds both ran, Holm-corrected over the line's pairs
(:func:`spl_bench.report.significance.paired_tests`), and the best mean, in the direction of the
line's metric (:mod:`spl_bench.report.direction`: higher accuracy, lower error), is marked ▲ where
it is significantly better than the second.  With two or more data sets, the Friedman test across
the lines (two methods: the Wilcoxon test of the line means) and the critical-difference diagram
(:func:`spl_bench.report.blocks.rank_tests`, :func:`spl_bench.report.significance.cd_figure`), with
the tables' rule for which lines may be pooled (one data set at one noise rate counts once).
Nothing here computes a statistic of its own: it only arranges a run folder's rows for those
functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console

from spl_bench.report import blocks, significance
from spl_bench.report.direction import higher_is_better
from spl_bench.report.markdown import to_markdown
from spl_bench.report.tables import ROW_KEYS, _method_label

#: the keys of a line for the paired tests (one Holm family each), as in the comparison tables
LINE_KEYS = [*blocks.LINE, "selection"]
#: the ROW_KEYS that name a line in its label: the data set, and the others where one data set has several
LABEL_KEYS = ["dataset", "experiment", "model", "noise", "metric"]
MARK = "▲"

NOTE = (
    f"{MARK}: the line's best mean (in its metric's direction: higher accuracy, lower error) is better than the "
    "second best by the Wilcoxon signed-rank test on the seeds both ran (`scipy.stats.wilcoxon`, two-sided), "
    f"Holm-corrected over the line's pairs of methods, p < {significance.ALPHA:g}, with at least "
    f"{significance.MIN_PAIRS} non-zero paired differences (fewer shared seeds: no test, \"{significance.TOO_FEW}\"; "
    "docs/statistics.md)."
)


@dataclass
class FolderTests:
    """What the paired tests and the rank tests of a results frame found."""

    #: one value per (line, method, seed): what the tests ran on
    values: pd.DataFrame
    #: every pair of methods per line (:data:`spl_bench.report.significance.COLUMNS`)
    tests: pd.DataFrame
    #: the lines in order, with their data set and whether the rank test pools them
    lines: pd.DataFrame
    #: the across-line test per selection rule (two or more data sets only)
    ranks: dict[str, significance.RankTest] = field(default_factory=dict)
    #: ROW_KEYS of a table row -> its line's label (the ``row`` of the tests)
    labels: dict[tuple, str] = field(default_factory=dict)


def _noise_rate(label: object) -> float:
    """The rate of a noise label (``uniform_flip@0.3`` -> 0.3; ``clean`` -> 0)."""
    text = str(label)
    try:
        return round(float(text.rsplit("@", 1)[1]), 4) if "@" in text else 0.0
    except ValueError:
        return 0.0


def _direction(metric: object) -> float:
    """1.0 / 0.0 where higher / lower is better; NaN for a metric of unknown direction (no ▲ then)."""
    try:
        return 1.0 if higher_is_better(str(metric)) else 0.0
    except ValueError:
        return float("nan")


def line_labels(main: pd.DataFrame) -> pd.Series:
    """Each row's line label: its data set, plus whichever of experiment, model, noise and metric
    differ between the lines of one data set (the keys that tell its lines apart)."""
    per_dataset = main.astype({k: str for k in LABEL_KEYS}).groupby("dataset")
    varying = ["dataset", *(k for k in LABEL_KEYS[1:] if (per_dataset[k].nunique() > 1).any())]
    return main[varying].astype(str).agg(" · ".join, axis=1)


def folder_tests(frame: pd.DataFrame) -> FolderTests:
    """Paired tests of every line and, with two or more data sets, the rank tests, of a results frame
    (the rows :func:`spl_bench.report.tables.read_results` returns)."""
    main = frame[~frame["metric"].astype(str).str.startswith("selection_")].copy()
    empty = pd.DataFrame(columns=significance.COLUMNS)
    if main.empty:
        return FolderTests(pd.DataFrame(), empty, pd.DataFrame(columns=[*blocks.LINE, "dataset"]))
    main["method"] = _method_label(main)
    main["row"] = line_labels(main)
    main["noise_rate"] = main["noise"].map(_noise_rate)
    main["param"] = ""
    main["higher_is_better"] = main["metric"].map(_direction)
    labels = {tuple(k): r for k, r in zip(main[ROW_KEYS].itertuples(index=False, name=None), main["row"],
                                          strict=True)}  # fmt: skip
    values = main[[*LINE_KEYS, "method", "seed", "value", "higher_is_better", "dataset"]].reset_index(drop=True)
    order = sorted(values["method"].unique())
    lines = blocks.line_frame(values[[*blocks.LINE, "dataset"]])
    raw = significance.paired_tests(values, LINE_KEYS, order)
    tests = blocks.mark_pooled(raw, lines)[significance.COLUMNS] if len(raw) else empty
    known = values.dropna(subset=["higher_is_better"]).astype({"higher_is_better": bool})
    selections = list(dict.fromkeys(values["selection"]))
    ranks = blocks.rank_tests(known, lines, selections)  # none for one data set (blocks.is_sweep)
    return FolderTests(values, tests, lines, ranks, labels)


def marks(ft: FolderTests, summary: pd.DataFrame) -> dict[tuple, str]:
    """``ROW_KEYS -> method`` of each table row whose best mean is significantly better than the
    second (``summary``: :func:`spl_bench.report.tables.summarize`)."""
    out: dict[tuple, str] = {}
    if ft.tests.empty:
        return out
    for key, grp in summary.groupby(ROW_KEYS, dropna=False, sort=False):
        higher = _direction(key[ROW_KEYS.index("metric")])
        label = ft.labels.get(tuple(key))
        if label is None or not np.isfinite(higher) or grp["mean"].notna().sum() < 2:
            continue
        ranked = grp.dropna(subset=["mean"]).sort_values("mean", ascending=not higher)
        best, second = str(ranked["method_label"].iloc[0]), str(ranked["method_label"].iloc[1])
        line = ft.tests[(ft.tests["row"] == label) & (ft.tests["selection"] == key[ROW_KEYS.index("selection")])]
        if significance.significantly_better(line, best, second):
            out[tuple(key)] = best
    return out


def tests_table(ft: FolderTests) -> pd.DataFrame:
    """The paired tests, one line per pair, for reading: the line, the pair, what the test rests on."""
    t = ft.tests
    if t.empty:
        return pd.DataFrame()

    def num(v: object, fmt: str) -> str:
        return format(float(v), fmt) if pd.notna(v) and np.isfinite(float(v)) else "–"

    return pd.DataFrame({
        "line": t["row"], "selection": t["selection"], "pair": t["method_a"] + " vs " + t["method_b"],
        "non-zero / pairs": [f"{int(a)} / {int(b)}" for a, b in zip(t["n_nonzero"], t["n_pairs"], strict=True)],
        "median diff (a − b)": [num(v, ".3g") for v in t["median_diff"]],
        "rank-biserial": [num(v, ".2f") for v in t["rank_biserial"]],
        "p_holm": [num(v, ".3g") for v in t["p_holm"]],
        "better": [str(b) if isinstance(b, str) else "" for b in t["better"]],
        "significant": [MARK if s is True or s == "True" else "" for s in t["significant"]],
        "note": t["note"].fillna(""),
    })  # fmt: skip


def compared(ft: FolderTests) -> bool:
    """Whether there is anything to compare: two or more methods in the results."""
    return len(ft.values) > 0 and ft.values["method"].nunique() > 1


def rank_lines(ft: FolderTests) -> list[str]:
    """Sentences on the test across lines: its result per selection rule, or why there is none
    (nothing with a single method)."""
    if not compared(ft):
        return []
    if ft.ranks:
        return [f"{sel}: {rt.summary()}" for sel, rt in ft.ranks.items()]
    if len(ft.lines) and ft.lines["identity"].nunique() < 2:
        return ["One data set: no Friedman test across data sets (it needs two or more)."]
    return ["No test across data sets: it needs two or more methods run on two or more data sets."]


def markdown(ft: FolderTests, name: str) -> str:
    """The section ``<name>.md`` adds below its table: the legend of ▲, the paired tests and the rank test
    (nothing with a single method)."""
    if not compared(ft):
        return ""
    parts = [f"\n{NOTE}\n\n"]
    table = tests_table(ft)
    if len(table):
        parts.append("Every pair's test (all columns in `" + f"{name}_significance.csv`):\n\n" + to_markdown(table))
    parts.append("\n" + "\n".join(rank_lines(ft)))
    if ft.ranks:
        parts.append(f" Diagram: `{name}_critical_difference.png`.")
    return "".join(parts) + "\n"


def write(ft: FolderTests, out_dir: str | Path, name: str, figures: bool = True) -> list[Path]:
    """``<name>_significance.csv`` (the columns of the tables' ``significance.csv``) and, with a rank
    test, ``<name>_critical_difference.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}_significance.csv"
    ft.tests.to_csv(path, index=False, float_format="%.6g")
    written = [path]
    if figures and ft.ranks:
        title = f"{ft.lines['dataset'].nunique()} data sets"
        written.append(significance.cd_figure(ft.ranks, title, out / f"{name}_critical_difference.png"))
    return written


def print_tests(ft: FolderTests, console: Console | None = None) -> None:
    """Print the paired tests (one line per pair) and the test across data sets below the table."""
    from rich.table import Table

    console = console or Console()
    table = tests_table(ft)
    if len(table):
        console.print("paired tests: Wilcoxon signed-rank on the seeds both ran, Holm over the line's pairs "
                      f"({MARK}: p_holm < {significance.ALPHA:g}, ≥ {significance.MIN_PAIRS} non-zero differences)",
                      markup=False, highlight=False, soft_wrap=True)  # fmt: skip
        constant = [c for c in ("line", "selection") if table[c].nunique() == 1]
        short = {"non-zero / pairs": "non-zero", "median diff (a − b)": "median a−b", "rank-biserial": "r",
                 "significant": MARK}  # fmt: skip
        shown = table.drop(columns=[*constant, "note"]).rename(columns=short)
        rt = Table()
        for c in shown.columns:
            rt.add_column(str(c))
        for row in shown.itertuples(index=False):
            rt.add_row(*[str(v) for v in row])
        console.print(rt)
        for pair, line, note in zip(table["pair"], table["line"], table["note"], strict=True):
            if note:
                where = "" if "line" in constant else f" ({line})"
                console.print(f"  {pair}{where}: {note}", markup=False, highlight=False, soft_wrap=True)
    for line in rank_lines(ft):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
