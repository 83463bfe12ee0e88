"""``results/index.html``: one static page of every table, its figures, FINDINGS and the coverage counts.

CI fails when the committed page is not what the committed tables give (as the tables themselves are
checked in test_reproduce.py); the page references only files that exist and anchors it has, loads
nothing from the network, shows all 16 tables, and renders in a headless browser where one is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spl_bench.report import site
from spl_bench.report.bands import AGREEMENT, BEYOND
from spl_bench.table_registry import TABLES

RESULTS = site.results_dir()
PAGE = RESULTS / site.PAGE
CHROMIUM = Path("/usr/bin/chromium")


class PageParser(HTMLParser):
    """Every link and image target, every id, the sections (id -> its text), the coloured cells and
    the tags that would load something (script, link, iframe ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.ids: set[str] = set()
        self.tags: set[str] = set()
        self.cells: list[tuple[str, str, str]] = []  # (section id, band class, text)
        self.section_text: dict[str, list[str]] = {}
        self._section: str | None = None
        self._cell: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.add(tag)
        for key in ("href", "src"):
            if a.get(key):
                self.refs.append(str(a[key]))
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "section":
            self._section = a.get("id")
            self.section_text.setdefault(str(self._section), [])
        if tag == "td" and (a.get("class") or "").startswith("band"):
            self._cell = (str(a["class"]), [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.cells.append((str(self._section), self._cell[0], "".join(self._cell[1])))
            self._cell = None
        if tag == "section":
            self._section = None

    def handle_data(self, data: str) -> None:
        if self._section is not None:
            self.section_text[str(self._section)].append(data)
        if self._cell is not None:
            self._cell[1].append(data)


@pytest.fixture(scope="module")
def page() -> PageParser:
    if not PAGE.is_file():
        pytest.fail("results/index.html is missing: run scripts/reproduce_tables.py --report-only")
    parser = PageParser()
    parser.feed(PAGE.read_text())
    return parser


def test_committed_page_is_what_the_committed_tables_give():
    """CI: a change of the tables (or of the page's code) without ``--report-only`` fails here."""
    if not PAGE.is_file():
        pytest.fail("results/index.html is missing: run scripts/reproduce_tables.py --report-only")
    assert PAGE.read_text() == site.render_page(RESULTS), (
        "results/index.html is stale: rerun scripts/reproduce_tables.py --report-only"
    )


def test_every_reference_is_a_local_file_or_an_anchor_of_the_page(page):
    assert page.refs
    for ref in page.refs:
        assert not re.match(r"^[a-z][a-z0-9+.-]*:|^//", ref), f"{ref}: the page must not load or link off the machine"
        if ref.startswith("#"):
            assert ref[1:] in page.ids, f"no element with id {ref[1:]!r}"
        else:
            target = ref.split("#", 1)[0]
            assert not target.startswith("/"), f"{ref}: links are relative, the page opens from the file system"
            assert (RESULTS / target).exists(), f"{ref} does not exist under results/"
    assert not page.tags & {"script", "link", "iframe", "object", "embed"}


def test_all_sixteen_tables_with_their_figures_and_marks(page):
    assert len(TABLES) == 16
    text = PAGE.read_text()
    for key, (experiment, *_) in TABLES.items():
        folder = RESULTS / "tables" / experiment
        assert experiment in page.ids, f"table {key} has no section"
        assert f'href="#{experiment}"' in text  # the contents and the coverage table link to it
        body = "".join(page.section_text[experiment])
        md = (folder / "comparison.md").read_text()
        assert md.splitlines()[0].lstrip("# ") in body  # its title
        assert body.count("▲") == md.count("▲"), f"table {key}: the significance marks"
        runs = re.findall(r"\((\d+)\)", md)
        assert runs and all(f"({n})" in body for n in set(runs))  # the number of runs of each cell
        for name in ("comparison.png", "critical_difference.png", "sweep.png"):
            if (folder / name).is_file():
                assert f'src="tables/{experiment}/{name}"' in text
    for anchor in ("coverage", "findings", "status"):
        assert anchor in page.ids
    findings = (RESULTS / "FINDINGS.md").read_text().splitlines()[0].lstrip("# ")
    assert findings in "".join(page.section_text["findings"])


def test_the_coverage_counts_are_coverage_csvs(page):
    cov = pd.read_csv(RESULTS / "tables" / "coverage.csv")
    val = cov[cov["selection"].isin(["validation", "none"])]
    text = "".join(page.section_text["coverage"])
    for status, n in val["status"].value_counts().items():
        assert status in text and str(n) in text


def test_every_cell_with_runs_is_coloured_by_its_band(page):
    """Each coloured cell's printed z (one decimal) lies in its band; every cell with runs has a colour."""
    lows = {"band1": 0.0, "band2": AGREEMENT[0][0], "band3": AGREEMENT[1][0], "band4": AGREEMENT[2][0]}
    highs = {"band1": AGREEMENT[0][0], "band2": AGREEMENT[1][0], "band3": AGREEMENT[2][0], "band4": np.inf}
    assert site.BAND_CLASS[BEYOND] == "band4"
    seen: dict[str, int] = {}
    for section, band, text in page.cells:
        seen[section] = seen.get(section, 0) + 1
        z = re.search(r"z ([+-]\d+\.\d)", text)
        if z is None:  # z not printed (a paper std of 0): nothing to check the band against
            continue
        assert lows[band] - 0.05 <= abs(float(z.group(1))) <= highs[band] + 0.05, (section, band, text)
    for experiment, *_ in TABLES.values():
        cells = pd.read_csv(RESULTS / "tables" / experiment / "comparison.csv")
        assert seen.get(experiment, 0) == int((cells["runs"] > 0).sum()), experiment


def test_every_section_heading_names_a_selection_rule_of_its_table():
    for experiment, *_ in TABLES.values():
        folder = RESULTS / "tables" / experiment
        selections = set(pd.read_csv(folder / "comparison.csv")["selection"])
        headings = [ln[3:] for ln in (folder / "comparison.md").read_text().splitlines() if ln.startswith("## ")]
        mapped = {site.section_selection(h) for h in headings} - {None}
        assert mapped == selections, experiment


def test_the_page_of_another_results_folder_is_written_there(tmp_path):
    """``write_site`` on a copy of the results gives the same page, at ``<root>/index.html``."""
    for name in ("FINDINGS.md",):
        shutil.copy(RESULTS / name, tmp_path / name)
    shutil.copytree(RESULTS / "tables", tmp_path / "tables")
    path = site.write_site(tmp_path)
    assert path == tmp_path / "index.html" and path.read_text() == PAGE.read_text()


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (apt-get install chromium) to render the page")
def test_the_page_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    shot = tmp_path / "page.png"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1400,2000",
           PAGE.as_uri()]  # fmt: skip
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert shot.is_file(), "chromium wrote no screenshot"
    image = np.asarray(Image.open(shot).convert("RGB"))
    assert image.shape[:2] == (2000, 1400)
    colours = np.unique(image.reshape(-1, 3), axis=0)
    assert len(colours) > 50, "the screenshot is (nearly) one colour: the page did not render"
    dark = (image.sum(axis=2) < 200).mean()  # text
    assert 0.001 < dark < 0.5
