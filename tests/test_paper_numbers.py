"""The committed paper numbers (``results/paper/*.csv``) against the papers' own text.

An independent check of the transcription: the table rows are parsed here, with their own
regexes, out of the paper text files (GAGA from the ``.txt`` rendering, whose rows are intact;
Outlier-Path and DSPL from their ``.md``), and every committed cell must equal the printed
number, while every printed cell must have exactly one committed row.  The committed CSVs are
read with the ``csv`` module, not through :mod:`spl_bench.report.paper`.

The papers are looked up in ``$SPL_BENCH_PAPERS_DIR``, else ``<repo_root>/../shared/papers``;
without them the paper checks are skipped, or fail when ``SPL_BENCH_REQUIRE_DATA`` is set.
"""

from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path

import pytest

from spl_bench.paths import repo_root
from spl_bench.report.paper import PAPER_COLUMNS

PAPERS_DIR_ENV = "SPL_BENCH_PAPERS_DIR"
GAGA_TXT = "gaga-age-path-neurips2022.txt"
OP_MD = "outlier-path-robust-svm-icml2014.md"
DSPL_MD = "dspl-distributed-spl-ijcai2018.md"

COLUMNS = list(PAPER_COLUMNS)  # the schema the loader declares; the files must follow it
TABLES = [("gaga", t) for t in (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)]
TABLES += [("outlier_path", 2), ("outlier_path", 3), ("dspl", 2)]

RESULTS = repo_root() / "results" / "paper"

# ---------------------------------------------------------------------------------------------
# the committed cells


def _committed() -> dict[tuple[str, int], list[dict[str, str]]]:
    out: dict[tuple[str, int], list[dict[str, str]]] = {}
    for path in sorted(RESULTS.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            assert reader.fieldnames == COLUMNS, f"{path.name}: columns {reader.fieldnames}"
            for rec in reader:
                rec["_file"] = path.name
                out.setdefault((rec["paper"], int(rec["table"])), []).append(rec)
    return out


COMMITTED = _committed()


def _param_values(param: str) -> tuple[str, ...]:
    """``"C=1.00,gamma_k=0.50"`` -> ``("1.00", "0.50")``."""
    return tuple(v.strip() for v in re.findall(r"=([^,]+)", param))


def _noise(text: str) -> float | None:
    return float(text) if text.strip() else None


def _committed_key(rec: dict[str, str]) -> tuple:
    return (rec["row"], _noise(rec["noise_rate"]), _param_values(rec["param"]), rec["method"])


# ---------------------------------------------------------------------------------------------
# the papers


def _papers_dir() -> Path | None:
    env = os.environ.get(PAPERS_DIR_ENV)
    cand = Path(env) if env else repo_root().parent / "shared" / "papers"
    return cand if all((cand / name).is_file() for name in (GAGA_TXT, OP_MD, DSPL_MD)) else None


# A printed cell: key -> (mean, std or None, restarts or None), all as the printed strings.
Cells = dict[tuple, tuple[str, str | None, str | None]]

NUM = r"\d*\.?\d+(?:e-?\d+)?"
GAGA_METHODS = {
    "Original": "original",
    "ACS": "acs",
    "MOSPL": "mospl",
    "GAGA": "gaga",
    "Huber Lasso": "huber_lasso",
    "RLSSVM": "rlssvm",
    "Re-LSSVM": "relssvm",
    "Robust-SVM": "robust_svm",
}
GAGA_METHOD_RE = re.compile(r"(?<![\w-])(" + "|".join(re.escape(m) for m in GAGA_METHODS) + r")(?![\w-])")
GAGA_HEADER_RE = re.compile(r"^(Dataset Source|Dataset Parameter|Parameter Huber Lasso)\b")
# "0.959±0.037plus-or-minus0.037\pm 0.037": the std is printed three times in the garbled rendering
GAGA_PM_RE = re.compile(r"(\d*\.\d+)±(\d*\.\d+)plus-or-minus(\d*\.\d+)\\pm (\d*\.\d+)")
GAGA_MAIN_ROW_RE = re.compile(
    r"^(?P<label>.+?[†‡]) (?P<params>.*?)\s*(?P<cells>(?:\s*" + GAGA_PM_RE.pattern + r")+)\s+(?P<restarts>\d+)$"
)
IS_NUM = re.compile(rf"^{NUM}$")


def _gaga_noise_marks(text: str) -> dict[str, float]:
    m = re.search(r"‘†’ in tables denotes (\d+)% of artificial noise, while ‘‡’ represents (\d+)%", text)
    assert m, "GAGA: the sentence defining † and ‡ not found"
    return {"†": int(m.group(1)) / 100, "‡": int(m.group(2)) / 100}


def _parse_gaga(text: str) -> dict[int, Cells]:
    lines = text.splitlines()
    marks = _gaga_noise_marks(text)
    headers = [i for i, line in enumerate(lines) if GAGA_HEADER_RE.match(line)]
    captions = [int(m.group(1)) for line in lines if (m := re.match(r"^Table (\d+):", line))]
    assert captions == list(range(1, 17)), f"GAGA captions out of order: {captions}"
    assert len(headers) == 16, f"GAGA: {len(headers)} table headers found, expected 16"
    tables: dict[int, Cells] = {}
    for number, start in enumerate(headers, start=1):
        if lines[start].startswith("Dataset Source"):  # Tables 1 and 4 describe the datasets
            continue
        header_text, rows = lines[start], []
        for line in lines[start + 1 :]:
            if not line.strip() or line.startswith("Table "):
                break
            tokens = line.split()
            if "±" in line or any(IS_NUM.match(t) for t in tokens):
                rows.append(line)
            else:
                assert not rows, f"GAGA Table {number}: header text after the rows: {line!r}"
                header_text += " " + line
        methods = [GAGA_METHODS[m] for m in GAGA_METHOD_RE.findall(header_text)]
        assert rows and methods, f"GAGA Table {number}: no rows or no method names"
        cells: Cells = {}

        def put(key: tuple, value: tuple, number: int = number, cells: Cells = cells) -> None:
            assert key not in cells, f"GAGA Table {number}: duplicate printed row {key}"
            cells[key] = value

        for line in rows:
            tokens = line.split()
            if "±" in line:  # Tables 2, 3, 5, 6: label, parameters, mean±std x 4, restarting times
                m = GAGA_MAIN_ROW_RE.match(line)
                assert m, f"GAGA Table {number}: unparsed row {line!r}"
                pms = GAGA_PM_RE.findall(m.group("cells"))
                assert len(pms) == len(methods), f"GAGA Table {number}: {line!r}"
                label = m.group("label")
                params = tuple(re.findall(NUM, m.group("params")))
                for method, (mean, s1, s2, s3) in zip(methods, pms, strict=True):
                    assert s1 == s2 == s3, f"GAGA Table {number}: std printed differently in {line!r}"
                    restarts = m.group("restarts") if method == "gaga" else None
                    put((label, marks[label[-1]], params, method), (mean, s1, restarts))
            elif number == 7:  # 6 parameters (2 per baseline), mean std x 4, noise, dataset
                nums, label = tokens[:15], " ".join(tokens[15:])
                assert all(IS_NUM.match(t) for t in nums) and label, f"GAGA Table 7: {line!r}"
                for j, method in enumerate(methods):
                    params = tuple(nums[2 * j : 2 * j + 2]) if j < 3 else ()
                    put((label, float(nums[14]), params, method), (nums[6 + 2 * j], nums[7 + 2 * j], None))
            else:  # Tables 8-16: dataset, parameters, mean std per method, noise level
                label, nums = tokens[0], tokens[1:]
                assert all(IS_NUM.match(t) for t in nums), f"GAGA Table {number}: {line!r}"
                n_params = len(nums) - 1 - 2 * len(methods)
                assert n_params in (1, 2), f"GAGA Table {number}: {line!r}"
                params, values = tuple(nums[:n_params]), nums[n_params:-1]
                for j, method in enumerate(methods):
                    put((label, float(nums[-1]), params, method), (values[2 * j], values[2 * j + 1], None))
        tables[number] = cells
    return tables


OP_METHODS = {"c_svm": "csvm", "cccp_theta": "cccp_theta", "op_theta": "op_theta", "cccp_s": "cccp_s", "op_s": "op_s"}


def _parse_outlier_path(text: str) -> dict[int, Cells]:
    lines = text.splitlines()
    m = re.search(r"flipped (\d+)% of the labels as outliers", text)
    assert m, "Outlier-Path: the noise sentence not found"
    noise = int(m.group(1)) / 100
    tables: dict[int, Cells] = {}
    for number in (2, 3):
        start = next(i for i, line in enumerate(lines) if line.startswith(f"Table {number}."))
        methods: list[str] = []
        cells: Cells = {}
        for line in lines[start + 1 :]:
            if line.startswith("Data\t"):
                names = [
                    re.sub(r"[$\s]", "", c).replace("\\theta", "theta").replace("θ", "theta")
                    for c in line.split("\t")[1:]
                ]
                methods = [OP_METHODS[n.lower().replace("-", "_")] for n in names]
                continue
            row = re.match(r"^(D\d+)\t(.*)$", line)
            if not row:
                if cells:
                    break
                continue
            printed = re.findall(r"(\.?\d+)\((\.\d+)\)", row.group(2))
            assert len(printed) == len(methods) == 5, f"Outlier-Path Table {number}: {line!r}"
            for method, (mean, std) in zip(methods, printed, strict=True):
                # the .md drops one leading dot ("142(.013)", Table 3, D2, OP-s): every error is < 1
                mean = mean if mean.startswith(".") else "." + mean
                cells[(row.group(1), noise, (), method)] = (mean, std, None)
        tables[number] = cells
    return tables


DSPL_METHODS = {"TORR": "torr", "TORR25": "torr25", "RLHH": "rlhh", "DRLR": "drlr", "SPL": "spl_kumar", "DSPL": "dspl"}


def _parse_dspl(text: str) -> dict[int, Cells]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Table 2:"))
    columns: list[str] = []
    cells: Cells = {}
    for line in lines[start + 1 :]:
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) > 1 and fields[0] == "" and all(re.fullmatch(r"\d+/\d+", f) for f in fields[1:]):
            columns = fields[1:]
            continue
        if columns and fields[0] in DSPL_METHODS:
            assert len(fields) == len(columns) + 1 and all(IS_NUM.match(f) for f in fields[1:]), line
            for col, value in zip(columns, fields[1:], strict=True):
                cells[(col, None, (col.split("/")[0],), DSPL_METHODS[fields[0]])] = (value, None, None)
        elif cells:
            break
    return {2: cells}


_PARSED: dict[tuple[str, int], Cells] | None = None


@pytest.fixture(scope="module")
def paper_cells() -> dict[tuple[str, int], Cells]:
    """Every printed cell of the transcribed tables, parsed from the paper text files."""
    global _PARSED
    d = _papers_dir()
    if d is None:
        if os.environ.get("SPL_BENCH_REQUIRE_DATA"):
            pytest.fail(f"the paper text files are not found (set {PAPERS_DIR_ENV})")
        pytest.skip(f"paper text files not found (set {PAPERS_DIR_ENV})")
    if _PARSED is None:
        parsed: dict[tuple[str, int], Cells] = {}
        for n, cells in _parse_gaga((d / GAGA_TXT).read_text(encoding="utf-8")).items():
            parsed[("gaga", n)] = cells
        for n, cells in _parse_outlier_path((d / OP_MD).read_text(encoding="utf-8")).items():
            parsed[("outlier_path", n)] = cells
        for n, cells in _parse_dspl((d / DSPL_MD).read_text(encoding="utf-8")).items():
            parsed[("dspl", n)] = cells
        _PARSED = parsed
    return _PARSED


# ---------------------------------------------------------------------------------------------
# tests


def test_committed_files() -> None:
    names = sorted(p.name for p in RESULTS.glob("*.csv"))
    assert names == sorted(f"{p}_table{t}.csv" for p, t in TABLES)
    assert (RESULTS / "README.md").is_file()
    for (paper, table), recs in COMMITTED.items():
        assert {r["_file"] for r in recs} == {f"{paper}_table{table}.csv"}


def test_parsed_tables(paper_cells: dict[tuple[str, int], Cells]) -> None:
    assert set(TABLES) <= set(paper_cells)


@pytest.mark.parametrize(("paper", "table"), TABLES, ids=[f"{p}-{t}" for p, t in TABLES])
def test_cells_match_paper(paper: str, table: int, paper_cells: dict[tuple[str, int], Cells]) -> None:
    printed = paper_cells[(paper, table)]
    recs = COMMITTED.get((paper, table), [])
    assert len(recs) == len(printed), f"{paper} Table {table}: {len(recs)} committed cells, {len(printed)} printed"
    committed = {}
    for rec in recs:
        key = _committed_key(rec)
        assert key not in committed, f"{paper} Table {table}: duplicate committed cell {key}"
        committed[key] = rec
    assert set(committed) - set(printed) == set(), f"{paper} Table {table}: committed cells not in the paper"
    assert set(printed) - set(committed) == set(), f"{paper} Table {table}: printed cells not committed"
    for key, (mean, std, restarts) in printed.items():
        rec = committed[key]
        assert float(rec["mean"]) == float(mean), f"{paper} Table {table} {key}: mean {rec['mean']} != {mean}"
        if std is None:
            assert rec["std"] == "", f"{paper} Table {table} {key}: std {rec['std']!r}, none printed"
        else:
            assert float(rec["std"]) == float(std), f"{paper} Table {table} {key}: std {rec['std']} != {std}"
        if restarts is None:
            assert rec["restarts"] == "", f"{paper} Table {table} {key}: restarts {rec['restarts']!r}"
        else:
            assert int(rec["restarts"]) == int(restarts), f"{paper} Table {table} {key}: restarts"


NO_CONFIG_DATASETS = {"w5a", "a6a", "a7a", "synthetic"}
NO_CONFIG_METHODS = {"rlhh", "drlr", "cccp_theta", "cccp_s", "op_theta", "op_s"}
METRICS = {"accuracy", "generalization_error", "test_error", "recovery_l2_error"}


def test_metadata() -> None:
    configs = repo_root() / "configs"
    datasets = {p.stem for p in (configs / "data").glob("*.yaml")} | NO_CONFIG_DATASETS
    methods = {p.stem for p in (configs / "method").glob("*.yaml")} | NO_CONFIG_METHODS
    for (paper, _), recs in COMMITTED.items():
        for rec in recs:
            assert rec["dataset"] in datasets, rec
            assert rec["method"] in methods, rec
            assert rec["metric"] in METRICS, rec
            assert rec["bold"] in ("", "1"), rec
            assert rec["restarts"] == "" or (paper == "gaga" and rec["method"] == "gaga"), rec
            assert math.isfinite(float(rec["mean"])), rec


def test_load_paper() -> None:
    from spl_bench.report.paper import load_paper, paper_tables
    from spl_bench.table_registry import PAPER_FILES

    assert sorted(PAPER_FILES) == sorted(TABLES) == sorted(paper_tables())
    frame = load_paper()
    assert list(frame.columns) == COLUMNS
    assert len(frame) == sum(len(v) for v in COMMITTED.values())
    one = load_paper("gaga", 2)
    assert set(one["table"]) == {2} and set(one["paper"]) == {"gaga"} and len(one) == len(COMMITTED[("gaga", 2)])
    assert one["mean"].dtype.kind == "f" and str(one["restarts"].dtype) == "Int64"
    assert set(load_paper(table=2)["paper"]) == {"gaga", "outlier_path", "dspl"}
    assert paper_tables("dspl") == [("dspl", 2)]
