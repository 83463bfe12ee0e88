"""``coverage.csv`` (one row per paper cell and selection rule), DSPL's table and the README's
"Reproduction status" section generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.atomic import atomic_write_text
from spl_bench.paths import repo_root
from spl_bench.report import floor
from spl_bench.report.bands import AGREEMENT, FAR, agreement, beyond, within
from spl_bench.report.compare import TableComparison
from spl_bench.report.direction import higher_is_better
from spl_bench.report.lines import table_lines
from spl_bench.report.ours import param_value
from spl_bench.report.page import order_mark
from spl_bench.report.paper import load_paper
from spl_bench.report.status import FIDELITY_NOTE
from spl_bench.table_registry import TABLES

#: the columns of ``coverage.csv``, in order
COVERAGE_COLUMNS = [
    "paper", "table", "dataset", "noise_rate", "method", "metric", "selection", "paper_mean", "paper_std",
    "ours_mean", "ours_std", "runs", "status", "agreement", "reason", "param", "row", "z", "within_1_std",
    "clean_mean", "clean_std", "clean_runs", "candidates", "floor_mean", "floor_check",
]  # fmt: skip


def coverage(comps: list[TableComparison]) -> pd.DataFrame:
    """The cells of every comparison in one frame of :data:`COVERAGE_COLUMNS`."""
    frame = pd.concat([c.cells for c in comps], ignore_index=True)
    frame["within_1_std"] = within(frame["z"], 1.0).where(frame["z"].notna())
    return frame.reindex(columns=COVERAGE_COLUMNS)


def dspl_table(root: Path | None = None) -> pd.DataFrame:
    """DSPL Table 2 from ``results/dspl/table2.csv`` (scripts/dspl_synthetic.py) beside the paper."""
    pap = load_paper("dspl", 2)
    src = (root or repo_root()) / "results" / "dspl" / "table2.csv"
    ours = pd.read_csv(src) if src.is_file() else pd.DataFrame(columns=["corrupted_batches", "method", "error"])
    ours["method"] = ours["method"].str.lower().replace({"spl": "spl_kumar"})
    recs = []
    for cell in pap.itertuples():
        k = param_value(cell.param, "corrupted_batches")
        hit = ours[(ours["corrupted_batches"] == k) & (ours["method"] == cell.method)]["error"]
        n = int(hit.count())
        rec = {"paper": "dspl", "table": 2, "row": cell.row, "dataset": cell.dataset, "noise_rate": np.nan,
               "param": cell.param, "method": cell.method, "metric": cell.metric, "selection": "none",
               "paper_mean": cell.mean, "paper_std": cell.std, "ours_mean": hit.mean() if n else np.nan,
               "ours_std": hit.std(ddof=1) if n > 1 else np.nan, "runs": n}  # fmt: skip
        if n == 0:
            rec["status"], rec["reason"] = "failed", f"{cell.method} is not implemented (docs/dspl.md)"
        else:
            rec["status"] = "partial"
            rec["reason"] = f"{n} runs at reduced size (10 batches of 500 rows, p = 20; results/dspl/README.md)"
        recs.append(rec)
    cells = pd.DataFrame(recs)
    cells["z"] = (cells["ours_mean"] - cells["paper_mean"]) / cells["paper_std"]
    cells["agreement"] = [agreement(z) if runs else "–" for z, runs in zip(cells["z"], cells["runs"], strict=True)]
    return cells


def status_section(cov: pd.DataFrame) -> str:
    """The README's "Reproduction status" section, generated from ``coverage.csv``."""
    val = cov[cov["selection"].isin(["validation", "none"])]
    counts = val["status"].value_counts()
    ran = val[val["runs"] > 0]
    close = int(within(ran["z"], 1.0).sum())
    far_agree = ran["agreement"] == "beyond 3 stds"
    lines = [
        "## Reproduction status",
        "",
        "Generated from [`results/tables/coverage.csv`](results/tables/coverage.csv) by "
        "`make reproduce-tables` (one row per paper cell and selection rule). Counts are of the "
        f"{len(val)} paper cells under validation selection:",
        "",
        "| completeness | cells |",
        "|---|---|",
        *[f"| {k} | {int(v)} |" for k, v in counts.sort_index().items()],
        "",
        "`complete`: every run of the paper's count is committed (20; Outlier-Path 10); `partial`: fewer. "
        "Whether a cell agrees with the paper is a separate column (`agreement` in coverage.csv):",
        "",
        "| agreement with the paper (cells with runs) | cells |",
        "|---|---|",
        *[f"| {k} | {int((ran['agreement'] == k).sum())} |" for k in (*[a for _, a in AGREEMENT], "beyond 3 stds")],
        "",
        f"Complete and beyond 3 stds: {int(((ran['status'] == 'complete') & far_agree).sum())} cells "
        "(the reasons below).",
        "",
        f"Of the {len(ran)} cells with runs, {close} are within one paper std of the paper's mean "
        f"(|z| ≤ 1) and {int(beyond(ran['z'], FAR).sum())} are more than {FAR:g} stds away; the reasons "
        "found are in docs/protocol.md (Fidelity).",
        "",
        *_far_reasons(ran),
        *floor.readme_lines(val, cov),
        "| table | cells with runs | within 1 std | rows where the paper's order holds |",
        "|---|---|---|---|",
    ]
    for (paper, table), grp in ran.groupby(["paper", "table"]):
        holds = _order_counts(val[(val["paper"] == paper) & (val["table"] == table)])  # rows with every method
        link = "results/dspl/table2.md" if paper == "dspl" else f"results/tables/{_exp_of(paper, table)}/comparison.md"
        lines.append(f"| [{paper} {table}]({link}) | {len(grp)} | "
                     f"{int(within(grp['z'], 1.0).sum())} | {holds} |")  # fmt: skip
    return "\n".join(lines) + "\n"


#: the reasons of the cells more than FAR stds away, as counted in the README (first match wins)
FAR_REASONS = [
    (f"no better than the constant predictor on the same splits (status `{floor.DEGENERATE}`)", floor.REASON_START),
    ("regression: the paper's metric is another scale (RMSE of a min-max target, no intercept)",
     FIDELITY_NOTE["regression"]),
    ("classification, ours above the paper: its test labels are noisy", FIDELITY_NOTE["classification"]),
    ("ours below: uniform flips of half or more of the labels invert the classes", FIDELITY_NOTE["inverted"]),
    ("ours below: the paper is above the plain model's clean-label accuracy (`--variant clean`)",
     "on clean training labels"),
    ("ours below: within 3 stds under the authors' noise (`--variant authors`)", "under the authors' noise"),
    ("ours below: not explained", FIDELITY_NOTE["worse"]),
]  # fmt: skip


def _far_reasons(ran: pd.DataFrame) -> list[str]:
    """Table lines of the README section: the cells more than ``FAR`` stds away, counted by reason."""
    far = ran[beyond(ran["z"], FAR)]
    if far.empty:
        return []
    reasons = far["reason"].fillna("").astype(str)
    left = pd.Series(True, index=far.index)
    lines = ["| why more than 3 stds away | cells |", "|---|---|"]
    for label, needle in FAR_REASONS:
        hit = left & reasons.str.contains(needle, regex=False)
        left &= ~hit
        if hit.any():
            lines.append(f"| {label} | {int(hit.sum())} |")
    if left.any():
        lines.append(f"| other (the reason column of coverage.csv; e.g. a paper std of 0) | {int(left.sum())} |")
    return [*lines, ""]


def _order_counts(grp: pd.DataFrame) -> str:
    marks = [order_mark(g, higher_is_better(str(g["metric"].iloc[0]))) for _, g in table_lines(grp)]
    marks = [m for m in marks if m != "–"]
    return f"{marks.count('yes')} of {len(marks)}" if marks else "–"


def _exp_of(paper: str, table: int) -> str:
    for exp, p, t in TABLES.values():
        if p == paper and t == table:
            return exp
    return f"{paper}_table{table}"


#: the markers of the README's generated block
README_START = "<!-- reproduction-status:start -->"
README_END = "<!-- reproduction-status:end -->"


def update_readme(section: str, readme: Path) -> None:
    """Put ``section`` between the README's markers (appended with them where they are missing)."""
    text = readme.read_text()
    block = f"{README_START}\n{section}{README_END}"
    if README_START in text and README_END in text:
        text = re.sub(re.escape(README_START) + ".*?" + re.escape(README_END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    atomic_write_text(readme, text)
