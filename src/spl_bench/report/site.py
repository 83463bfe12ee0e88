"""One static HTML page of the reproduction: ``results/index.html``.

Made from what ``scripts/reproduce_tables.py --report-only`` writes, and from nothing else: each
table's ``comparison.md`` (ours beside the paper, its significance marks and run counts),
``comparison.csv`` (the agreement band of every cell, which colours it), its figures
(``comparison.png``, ``critical_difference.png`` or ``sweep.png``), ``coverage.csv`` (the counts),
``status.md`` (the README's status section) and ``results/FINDINGS.md``.  The Markdown is rendered
by markdown-it-py, the page by the Jinja2 template ``templates/index.html.j2``; the page has no
script, no external style sheet or font and no absolute link, so it opens from the file system
with no network.  The output is a pure function of those files (no date, no machine name), so a
stale page shows in CI (``tests/test_site.py``) as the committed tables do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.report.bands import AGREEMENT, BEYOND
from spl_bench.table_registry import PAPER_TITLES, REPORTED_VARIANTS, TABLES

#: the page, relative to the results folder
PAGE = "index.html"
#: figures of a table's folder, in the order the page shows them
FIGURES = (
    ("comparison.png", "ours (solid) beside the paper (hatched), validation selection"),
    ("critical_difference.png", "critical-difference diagram: average ranks across the lines"),
    ("sweep.png", "the sweep: each method's mean along the swept value; a triangle where the best is significant"),
)
#: the files of a table's folder the page links to
FILES = ("comparison.md", "comparison.csv", "significance.csv")
#: agreement band -> CSS class of a cell
BAND_CLASS = {**{label: f"band{i + 1}" for i, (_, label) in enumerate(AGREEMENT)}, BEYOND: "band4"}


def results_dir() -> Path:
    from spl_bench.paths import repo_root

    return repo_root() / "results"


def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# ----------------------------------------------------------------------------- the cells' bands
def section_selection(title: str) -> str | None:
    """The selection rule of a ``comparison.md`` section from its heading (``page.write_table``'s
    titles): ``validation``, ``test``, ``validation@<variant>``, ``test@<variant>``; None for others."""
    variant = re.search(r"Protocol variant '([^']+)'", title)
    suffix = f"@{variant.group(1)}" if variant and variant.group(1) in REPORTED_VARIANTS else ""
    if variant and not suffix:
        return None
    if "test split" in title:
        return "test" + suffix
    if "validation" in title:
        return "validation" + suffix
    return None


def cell_band(cells: pd.DataFrame, selection: str, row: dict[str, str], method: str, text: str) -> str | None:
    """The agreement band of one cell of a Markdown table: the ``comparison.csv`` cell of that
    selection rule, line (row, noise, parameter) and method; where the keys leave several (Table 7's
    own parameters per method), the one whose z the cell prints."""
    hit = cells[(cells["selection"] == selection) & (cells["row"] == row.get("row")) & (cells["method"] == method)]
    if "noise" in row and len(hit) > 1:
        hit = hit[np.isclose(hit["noise_rate"].astype(float), float(row["noise"]))]
    if "param" in row and len(hit) > 1:
        hit = hit[hit["param"] == row["param"]]
    if len(hit) > 1:
        z = re.search(r"z ([+-]\d+\.\d)", text)
        hit = hit[[z is not None and f"{v:+.1f}" == z.group(1) for v in hit["z"]]]
    if len(hit) != 1 or int(hit["runs"].iloc[0]) == 0:
        return None
    return BAND_CLASS.get(str(hit["agreement"].iloc[0]))


def _inline_text(tokens: list[Any], i: int) -> str:
    """The text of the inline token after ``tokens[i]`` (a cell's or heading's opening token)."""
    return tokens[i + 1].content if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""


def colour_cells(tokens: list[Any], cells: pd.DataFrame) -> int:
    """Give each method cell of the tables in ``tokens`` the class of its agreement band; returns how
    many cells were coloured."""
    methods = set(cells["method"]) if len(cells) else set()
    selection, header, row, coloured = None, [], [], 0
    tds: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            selection = section_selection(_inline_text(tokens, i))
        elif tok.type == "thead_open":
            header = []
        elif tok.type == "th_open":
            header.append(_inline_text(tokens, i))
        elif tok.type == "tr_open":
            row, tds = [], []
        elif tok.type == "td_open":
            row.append(_inline_text(tokens, i))
            tds.append(i)
        elif tok.type == "tr_close" and tds and selection and len(row) == len(header):
            values = dict(zip(header, row, strict=True))
            for name, text, j in zip(header, row, tds, strict=True):
                band = cell_band(cells, selection, values, name, text) if name in methods else None
                if band:
                    tokens[j].attrSet("class", band)
                    coloured += 1
    return coloured


# ----------------------------------------------------------------------------- Markdown to HTML
def render_markdown(text: str, anchor: str = "", cells: pd.DataFrame | None = None, demote: int = 1,
                    links: dict[str, str] | None = None) -> str:  # fmt: skip
    """Markdown as HTML: headings one level down (``demote``) with ids ``<anchor>-<slug>``, table cells
    coloured by their band (``cells``: a ``comparison.csv``), link targets replaced by ``links``."""
    return _render(text, anchor, cells, demote, links)[0]


def _render(text: str, anchor: str, cells: pd.DataFrame | None, demote: int, links: dict[str, str] | None
            ) -> tuple[str, int]:  # fmt: skip
    """:func:`render_markdown` and the number of cells it coloured."""
    md = _markdown()
    tokens = md.parse(text)
    coloured = colour_cells(tokens, cells) if cells is not None else 0
    for i, tok in enumerate(tokens):
        if tok.type in ("heading_open", "heading_close"):
            tok.tag = f"h{min(6, int(tok.tag[1]) + demote)}"
            if tok.type == "heading_open" and anchor:
                tok.attrSet("id", f"{anchor}-{_slug(_inline_text(tokens, i))}")
        if tok.type == "inline" and links:
            for child in tok.children or []:
                href = child.attrGet("href") if child.type == "link_open" else None
                if href is not None:
                    child.attrSet("href", rewrite_link(str(href), links))
    return md.renderer.render(tokens, md.options, {}), coloured


def rewrite_link(href: str, links: dict[str, str]) -> str:
    """``href`` of a Markdown written for the repository root, as seen from ``results/index.html``."""
    if href in links:
        return links[href]
    return href.removeprefix("results/") if href.startswith("results/") else href


# ----------------------------------------------------------------------------- the page's parts
@dataclass
class TableSection:
    """One table of the page."""

    key: str
    experiment: str
    title: str
    html: str
    files: list[tuple[str, str]] = field(default_factory=list)  # (relative path, name)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (relative path, caption)
    cells_with_runs: int = 0
    cells: int = 0
    runs: int = 0
    bands: dict[str, int] = field(default_factory=dict)
    coloured: int = 0


def table_section(key: str, root: Path) -> TableSection:
    """The page's section of table ``key`` (:data:`spl_bench.table_registry.TABLES`)."""
    experiment, paper, number = TABLES[key]
    folder = root / "tables" / experiment
    md_path = folder / "comparison.md"
    text = md_path.read_text() if md_path.is_file() else f"# {PAPER_TITLES.get(paper, paper)}, Table {number}\n"
    first, _, body = text.partition("\n")
    title = first.lstrip("# ").strip() or f"{paper} Table {number}"
    cells = pd.read_csv(folder / "comparison.csv", keep_default_na=False, na_values=[""], dtype={"param": str}) \
        if (folder / "comparison.csv").is_file() else pd.DataFrame(columns=["selection", "row", "method"])  # fmt: skip
    if "param" in cells:
        cells["param"] = cells["param"].fillna("")
    html, coloured = _render(body, experiment, cells, 1, None)
    val = cells[cells["selection"] == "validation"] if len(cells) else cells
    ran = val[val["runs"] > 0] if len(val) else val
    section = TableSection(
        key=key, experiment=experiment, title=title, html=html,
        files=[(f"tables/{experiment}/{f}", f) for f in FILES if (folder / f).is_file()],
        figures=[(f"tables/{experiment}/{f}", cap) for f, cap in FIGURES if (folder / f).is_file()],
        cells_with_runs=len(ran), cells=len(val), runs=int(ran["runs"].sum()) if len(ran) else 0,
        bands={label: int((ran["agreement"] == label).sum()) for label in BAND_CLASS} if len(ran) else {},
        coloured=coloured,
    )  # fmt: skip
    return section


def coverage_rows(root: Path, sections: list[TableSection]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Per table, the paper cells under validation selection by completeness and by agreement
    (``coverage.csv``), with a total line; the completeness and agreement columns."""
    cov = pd.read_csv(root / "tables" / "coverage.csv")
    val = cov[cov["selection"].isin(["validation", "none"])]
    statuses = sorted(val["status"].dropna().unique())
    bands = list(BAND_CLASS)
    anchors = {(TABLES[s.key][1], TABLES[s.key][2]): s.experiment for s in sections}
    rows = []
    for (paper, table), grp in val.groupby(["paper", "table"], sort=False):
        ran = grp[grp["runs"] > 0]
        exp = anchors.get((paper, int(table)))
        rows.append({"name": f"{paper} {table}", "anchor": exp,
                     "link": None if exp else ("dspl/table2.md" if paper == "dspl" else None),
                     "cells": len(grp), "with_runs": len(ran), "runs": int(ran["runs"].sum()),
                     "status": {s: int((grp["status"] == s).sum()) for s in statuses},
                     "bands": {b: int((ran["agreement"] == b).sum()) for b in bands}})  # fmt: skip
    ran = val[val["runs"] > 0]
    rows.append({"name": "all tables", "anchor": None, "link": None, "cells": len(val), "with_runs": len(ran),
                 "runs": int(ran["runs"].sum()), "status": {s: int((val["status"] == s).sum()) for s in statuses},
                 "bands": {b: int((ran["agreement"] == b).sum()) for b in bands}, "total": True})  # fmt: skip
    return rows, statuses, bands


def split_title(path: Path, default: str) -> tuple[str, str]:
    """A Markdown file's first heading (the page's heading of its section) and the rest; ``default``
    and nothing for a missing file."""
    if not path.is_file():
        return default, ""
    text = path.read_text()
    first, _, rest = text.lstrip().partition("\n")
    if first.startswith("#"):
        return first.lstrip("#").strip(), rest
    return default, text


def status_links(sections: list[TableSection]) -> dict[str, str]:
    """The status section's links to each table's comparison.md, as anchors of the page."""
    return {f"results/tables/{s.experiment}/comparison.md": f"#{s.experiment}" for s in sections}


def render_page(root: Path | None = None) -> str:
    """The page's HTML from the files under ``root`` (default ``results/``)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    root = root or results_dir()
    sections = [table_section(k, root) for k in TABLES]
    rows, statuses, bands = coverage_rows(root, sections)
    findings_title, findings = split_title(root / "FINDINGS.md", "Findings")
    status_title, status = split_title(root / "tables" / "status.md", "Reproduction status")
    extra = [(p, cap) for p, cap in (("tables/gaga_fig6_critical_points.png", "GAGA's critical points by data set "
                                      "(cf. the paper's Fig. 6)"),) if (root / p).is_file()]  # fmt: skip
    env = Environment(loader=PackageLoader("spl_bench.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    page = env.get_template("index.html.j2").render(
        sections=sections, coverage=rows, statuses=statuses, bands=bands, band_class=BAND_CLASS,
        findings_title=findings_title, findings=render_markdown(findings, "findings", demote=2),
        status_title=status_title, status=render_markdown(status, "status", demote=2, links=status_links(sections)),
        extra_figures=extra, has_coverage_csv=(root / "tables" / "coverage.csv").is_file(),
    )  # fmt: skip
    return page


def write_site(root: Path | None = None) -> Path:
    """Write ``<root>/index.html`` (default ``results/index.html``) and return its path."""
    from spl_bench.atomic import atomic_write_text

    root = root or results_dir()
    path = root / PAGE
    atomic_write_text(path, render_page(root))
    return path
