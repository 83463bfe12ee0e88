"""The whole report of the reproduction, from committed files only: every table's comparison with
the paper, ``coverage.csv``, GAGA's critical points (Fig. 6), the README section and FINDINGS.

The output is a pure function of the repository (``tests/test_reproduce.py`` regenerates the
committed tables and checks that nothing changes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from spl_bench.atomic import atomic_write_text
from spl_bench.paths import repo_root
from spl_bench.report import floor
from spl_bench.report.bands import within
from spl_bench.report.compare import compare_table
from spl_bench.report.coverage import COVERAGE_COLUMNS, coverage, dspl_table, status_section, update_readme
from spl_bench.report.ours import critical_points, load_failures
from spl_bench.report.page import critical_point_figure, write_table
from spl_bench.table_registry import TABLES


def tables_dir() -> Path:
    """Where the comparison tables, ``coverage.csv`` and the figures go (``results/tables``)."""
    return repo_root() / "results" / "tables"


def write_all(
    out_root: Path | None = None, rows_root: Path | None = None, readme: Path | None = None, figures: bool = True,
    findings: Path | None = None,
) -> list[Path]:
    """Every comparison table, ``coverage.csv``, the README section, the findings page (``findings``,
    default ``<out_root>/FINDINGS.md``; the script writes ``results/FINDINGS.md``) and the PNGs."""
    out_root = out_root or tables_dir()
    failures = load_failures(rows_root)
    floors = floor.load_floors(floor.floors_path(rows_root))
    comps = [compare_table(k, rows_root, failures, floors) for k in TABLES]
    paths: list[Path] = []
    for comp in comps:
        paths += write_table(comp, out_root, figures)
        if comp.mixed:  # a warning, not an error: the footer of comparison.md lists them too
            print(f"warning: {comp.experiment}: {len(comp.mixed)} cell(s) pool rows made under different "
                  "library versions or BLAS kernel families:\n  " + "\n  ".join(comp.mixed),
                  file=sys.stderr)  # fmt: skip
    cov = pd.concat([coverage(comps), dspl_table().reindex(columns=COVERAGE_COLUMNS)], ignore_index=True)
    cov["within_1_std"] = within(cov["z"], 1.0).where(cov["z"].notna())
    cov_path = out_root / "coverage.csv"
    cov.to_csv(cov_path, index=False, float_format="%.6g")
    paths.append(cov_path)
    crit = critical_points(rows_root)
    crit.to_csv(out_root / "gaga_fig6_critical_points.csv", index=False, float_format="%.6g")
    paths.append(out_root / "gaga_fig6_critical_points.csv")
    if len(crit) and figures:
        critical_point_figure(crit, out_root / "gaga_fig6_critical_points.png")
        paths.append(out_root / "gaga_fig6_critical_points.png")
    section = status_section(cov)
    atomic_write_text(out_root / "status.md", section)
    paths.append(out_root / "status.md")
    from spl_bench.report.findings import findings_markdown

    findings = findings or out_root / "FINDINGS.md"
    atomic_write_text(findings, findings_markdown(comps, cov))
    paths.append(findings)
    if readme is not None:
        update_readme(section, readme)
        paths.append(readme)
    return paths
