"""``spl-bench report DIR``: the paper tables' statistics on any results folder -- the paired Wilcoxon / Holm
tests with ▲ in each line's own direction, and over two or more data sets the Friedman test and the
critical-difference diagram (the functions of spl_bench.report.significance, not a second implementation)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import friedmanchisquare, wilcoxon
from statsmodels.stats.multitest import multipletests

from spl_bench.report import folder, significance
from spl_bench.report.tables import read_results, summarize
from spl_bench.rowstore import CellStore, write_index
from spl_bench.runner.cli import main

METHODS = ("acs", "gaga", "original")
#: data set -> its metric (accuracy: higher is better; gen_error: lower is better)
DATASETS = {"d_acc": "accuracy", "d_err": "gen_error", "d_acc2": "accuracy"}


def write_folders(root, values: dict[tuple[str, str], np.ndarray]) -> None:
    """One cell per (data set, method) in the row store's folder ``root/e``, a seed at a time, and its index,
    as ``spl-bench run`` writes them."""
    entries = []
    for (dataset, method), vals in values.items():
        metric = DATASETS[dataset]
        h = f"{abs(hash((dataset, method))) % 10**12:012d}"
        cell = f"data={dataset},method={method}"
        store = CellStore(root, "e", cell, h)
        for seed, v in enumerate(vals):
            common = {"experiment": "e", "dataset": dataset, "noise": "uniform_flip@0.3", "method": method,
                      "model": "svm", "sp": "linear" if method != "original" else "-", "selection": "validation",
                      "config_hash": h, "seed": seed, "time_s": 0.1, "n_restarts": None}  # fmt: skip
            store.add([{**common, "metric": metric, "value": float(v)},
                       {**common, "metric": f"selection_{metric}", "value": 0.0}])  # fmt: skip
        entries.append(store.index_entry(f"data={dataset} method={method}"))
    write_index(root / "e", entries)


def values_with_a_winner(winner: str, n: int = 12, datasets=tuple(DATASETS), seed: int = 0) -> dict:
    """Per seed: a shared level plus small noise; ``winner`` is better by 0.05 on every seed, in the
    direction of each data set's metric."""
    rng = np.random.default_rng(seed)
    out = {}
    for d in datasets:
        base = rng.uniform(0.3, 0.7, n)
        for m in METHODS:
            shift = 0.05 if m == winner else 0.0
            sign = 1.0 if DATASETS[d] == "accuracy" else -1.0
            out[(d, m)] = base + sign * shift + rng.normal(0, 0.005, n)
    return out


def run_report(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_paired_tests_marks_and_friedman_over_data_sets(tmp_path, capsys):
    vals = values_with_a_winner("gaga")
    write_folders(tmp_path / "runs", vals)
    code, out, err = run_report(capsys, str(tmp_path / "runs"), "--out", str(tmp_path / "rep"))
    assert code == 0, err
    table = pd.read_csv(tmp_path / "rep" / "table.csv").set_index("dataset")
    # the winner is marked on every line, in that line's direction (the error line: lower is better)
    for d in DATASETS:
        assert table.loc[d, "gaga"].endswith(" ▲") and "▲" not in table.loc[d, "acs"] + table.loc[d, "original"]
    tests = pd.read_csv(tmp_path / "rep" / "table_significance.csv")
    assert list(tests.columns) == significance.COLUMNS
    assert len(tests) == len(DATASETS) * 3 and set(tests["better"][tests["method_a"] == "gaga"]) == {"gaga"}
    # the p-values are scipy's signed-rank test, Holm-corrected over each line's three pairs
    for d in DATASETS:
        line = tests[tests["row"] == d]
        raw = [wilcoxon(vals[(d, a)] - vals[(d, b)]).pvalue for a, b in itertools.combinations(METHODS, 2)]
        holm = multipletests(raw, method="holm")[1]
        got = [float(line[(line["method_a"] == a) & (line["method_b"] == b)]["p_holm"].iloc[0])
               for a, b in itertools.combinations(METHODS, 2)]  # fmt: skip
        np.testing.assert_allclose(got, holm, rtol=1e-4)
    # three data sets: the Friedman test on the line means, ranked in each line's direction
    means = np.array([[vals[(d, m)].mean() * (1 if DATASETS[d] == "accuracy" else -1) for m in METHODS]
                      for d in DATASETS])  # fmt: skip
    p = friedmanchisquare(*means.T).pvalue
    md = (tmp_path / "rep" / "table.md").read_text()
    assert "Friedman test over the 3 lines" in md and f"p = {p:.3g}" in md and "gaga 1.00" in md
    assert "Friedman test over the 3 lines" in out and "paired tests" in out
    png = tmp_path / "rep" / "table_critical_difference.png"
    assert png.is_file() and png.stat().st_size > 5_000


def test_one_data_set_has_no_friedman_test_and_no_diagram(tmp_path, capsys):
    write_folders(tmp_path / "runs", values_with_a_winner("acs", datasets=("d_err",)))
    code, out, err = run_report(capsys, str(tmp_path / "runs"), "--out", str(tmp_path / "rep"))
    assert code == 0, err
    assert "One data set: no Friedman test" in out and "acs vs gaga" in out
    assert not (tmp_path / "rep" / "table_critical_difference.png").exists()
    assert pd.read_csv(tmp_path / "rep" / "table.csv")["acs"].iloc[0].endswith(" ▲")


def test_too_few_runs_give_no_mark(tmp_path, capsys):
    write_folders(tmp_path / "runs", values_with_a_winner("acs", n=significance.MIN_PAIRS - 1, datasets=("d_acc",)))
    code, out, _ = run_report(capsys, str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--no-figure")
    assert code == 0 and "▲" not in pd.read_csv(tmp_path / "rep" / "table.csv").to_string()
    assert set(pd.read_csv(tmp_path / "rep" / "table_significance.csv")["note"]) == {significance.TOO_FEW}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), metric=st.sampled_from(["accuracy", "gen_error"]),
       shift=st.floats(-0.2, 0.2))  # fmt: skip
def test_a_mark_goes_only_to_the_best_mean_in_the_metrics_direction(tmp_path_factory, seed, metric, shift):
    """Whatever the values: a ▲ sits on the best mean of its line (the highest accuracy, the lowest
    error), and only where the test of best against second is significant."""
    rng = np.random.default_rng(seed)
    n = 8
    base = rng.uniform(0.2, 0.8, n)
    rows = []
    for j, m in enumerate(METHODS):
        vals = base + shift * (j - 1) + rng.normal(0, 0.02, n)
        for s, v in enumerate(vals):
            common = {"experiment": "e", "dataset": "d", "noise": "clean", "method": m, "model": "svm", "sp": "-",
                      "selection": "validation", "config_hash": m, "seed": s, "time_s": 0.0, "n_restarts": None}
            rows.append({**common, "metric": metric, "value": v})
    frame = pd.DataFrame(rows)
    summary = summarize(frame)
    ft = folder.folder_tests(frame)
    marks = folder.marks(ft, summary)
    means = summary.set_index("method_label")["mean"]
    best = means.idxmax() if metric == "accuracy" else means.idxmin()
    second = means.drop(best).idxmax() if metric == "accuracy" else means.drop(best).idxmin()
    expected = significance.significantly_better(ft.tests, best, second)
    assert list(marks.values()) == ([best] if expected else [])


def test_report_of_results_without_row_files_still_works(tmp_path, capsys):
    write_folders(tmp_path / "runs", values_with_a_winner("gaga", datasets=("d_acc", "d_err")))
    frame = read_results([tmp_path / "runs"])
    frame.to_csv(tmp_path / "all.csv", index=False)
    code, out, err = run_report(capsys, str(tmp_path / "all.csv"))
    assert code == 0, err
    assert "Wilcoxon signed-rank test of their means" not in out  # three methods: Friedman, not the 2-method test
    assert "Friedman test over the 2 lines" in out


def test_report_of_one_row_file_or_one_experiment_folder(tmp_path, capsys):
    vals = values_with_a_winner("gaga", datasets=("d_acc",))
    write_folders(tmp_path / "runs", vals)
    one = next((tmp_path / "runs" / "e").glob("data=d_acc,method=gaga__*.csv"))
    frame = read_results([one])  # a row file, read after its check trailer
    assert set(frame.method) == {"gaga"} and sorted(frame.seed.unique()) == list(range(12))
    assert len(read_results([tmp_path / "runs" / "e"])) == len(read_results([tmp_path / "runs"])) == 3 * 12 * 2
    code, out, err = run_report(capsys, str(tmp_path / "runs" / "e"), "--no-figure")
    assert code == 0, err
    assert "acs vs gaga" in out


def test_a_results_folder_of_the_old_layout_is_refused_naming_the_migration(tmp_path, capsys):
    old = tmp_path / "runs" / "e" / "data=d_acc,method=gaga" / "rows" / "0123e4567890"
    old.mkdir(parents=True)
    (old / "run-000.csv").write_text("experiment,dataset\ne,d_acc\n")
    code, _, err = run_report(capsys, str(tmp_path / "runs"), "--no-figure")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    err = " ".join(err.split())
    assert "rows/<hash>/run-NNN.csv" in err and f"scripts/migrate_run_folders.py {tmp_path / 'runs'}" in err
    assert str(old.parent.parent) in err


def test_two_methods_over_data_sets_use_the_wilcoxon_test_of_the_means(tmp_path, capsys):
    vals = {k: v for k, v in values_with_a_winner("gaga").items() if k[1] in ("acs", "gaga")}
    write_folders(tmp_path / "runs", vals)
    code, out, err = run_report(capsys, str(tmp_path / "runs"), "--out", str(tmp_path / "rep"))
    assert code == 0, err
    assert "Two methods: Wilcoxon signed-rank test of their means over the 3 lines" in out
    assert (tmp_path / "rep" / "table_critical_difference.png").is_file()


def test_one_method_has_nothing_to_compare(tmp_path, capsys):
    vals = {k: v for k, v in values_with_a_winner("acs", datasets=("d_acc", "d_err")).items() if k[1] == "acs"}
    write_folders(tmp_path / "runs", vals)
    code, out, err = run_report(capsys, str(tmp_path / "runs"), "--out", str(tmp_path / "rep"), "--no-figure")
    assert code == 0, err
    assert "paired tests" not in out and "Friedman" not in out and "▲" not in out
    assert "▲" not in (tmp_path / "rep" / "table.md").read_text()
