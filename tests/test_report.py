"""Report: critical-point counts of path methods in the summary and their histogram figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spl_bench.report.figures import critical_point_figure
from spl_bench.report.tables import summarize


def _frame(with_counts: bool) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for seed in range(6):
        turning, jump = int(rng.integers(100, 400)), int(rng.integers(0, 30))
        for metric in ("gen_error", "selection_gen_error"):
            row = {"experiment": "e", "dataset": "d", "noise": "n", "method": "gaga", "model": "lasso",
                   "sp": "linear", "selection": "validation", "config_hash": "h", "seed": seed,
                   "metric": metric, "value": rng.random(), "time_s": 1.0, "n_restarts": jump}
            if with_counts:
                row |= {"n_critical_turning": turning, "n_critical_jump": jump}
            rows.append(row)
    return pd.DataFrame(rows)


def test_summary_has_the_mean_critical_point_counts(tmp_path):
    frame = _frame(True)
    main = frame[frame.metric == "gen_error"]
    row = summarize(frame).iloc[0]
    assert row["n_critical_turning"] == pytest.approx(main.n_critical_turning.mean())
    assert row["n_critical_jump"] == pytest.approx(main.n_critical_jump.mean())
    written = critical_point_figure(frame, tmp_path / "cp.png")
    assert written == [tmp_path / "cp.png"] and written[0].stat().st_size > 0


def test_no_critical_point_figure_without_the_counts(tmp_path):
    frame = _frame(False)
    assert "n_critical_turning" not in summarize(frame)
    assert critical_point_figure(frame, tmp_path / "cp.png") == []
    assert not (tmp_path / "cp.png").exists()


def test_unavailable_datasets_are_listed_not_dropped(tmp_path):
    from spl_bench.report.tables import UNAVAILABLE, write_report

    frame = pd.DataFrame({
        "experiment": "e", "dataset": "d1", "noise": "n", "model": "svm", "selection": "validation",
        "metric": "accuracy", "method": ["a", "a", "b", "b"], "sp": "-", "seed": [0, 1, 0, 1],
        "value": [0.8, 0.9, 0.7, 0.7], "n_restarts": np.nan, "time_s": 1.0,
    })  # fmt: skip
    md, csv, _ = write_report(frame, tmp_path, "t", unavailable=["gisette", "d1"])
    table = pd.read_csv(csv)
    assert list(table.dataset) == ["d1", "gisette"]
    gis = table[table.dataset == "gisette"].iloc[0]
    assert gis["a"] == UNAVAILABLE and gis["b"] == UNAVAILABLE and gis["runs"] == 0
    assert table[table.dataset == "d1"].iloc[0]["a"] == "0.850 ± 0.071"
    assert "not available offline" in md.read_text()


def test_summary_totals_the_integer_counters_of_the_info_column():
    frame = _frame(False)
    rng = np.random.default_rng(3)
    n_trunc = rng.integers(0, 4, len(frame))
    frame["info"] = [json.dumps({"n_truncated_paths": int(k), "truncation_reasons": ["x"] * int(k),
                                 "flag": True, "n_ratio": 0.5}) for k in n_trunc]
    frame.loc[0, "info"] = "not json"
    main = frame.metric == "gen_error"
    expected = int(n_trunc[main.to_numpy() & (frame.index != 0)].sum())
    row = summarize(frame).iloc[0]
    assert row["info_n_truncated_paths"] == expected
    assert "info_n_ratio" not in row and "info_flag" not in row


# ----------------------------------------------------------------------------- never pool two configurations
def _cell_rows(h: str, offset: float, seeds=range(3), dataset: str = "d") -> list[dict]:
    return [{"experiment": "e", "dataset": dataset, "noise": "n", "method": "acs", "model": "lasso", "sp": "linear",
             "selection": "validation", "config_hash": h, "seed": s, "metric": m, "value": offset + s,
             "time_s": 1.0, "n_restarts": None}
            for s in seeds for m in ("gen_error", "selection_gen_error")]  # fmt: skip


def _mixed_folders(root):
    """Experiment folder ``e`` of the row store with two cells that are one cell of the report (``lam_step``
    is no cell key of it) under two config hashes, and a third cell of another dataset."""
    from spl_bench.rowstore import CellStore, write_index

    entries = []
    for cell, h, offset in (("lam_step=2", "aaaa11112222", 0.0), ("lam_step=3", "bbbb33334444", 10.0)):
        store = CellStore(root, "e", cell, h)
        for seed in range(3):
            store.add([r for r in _cell_rows(h, offset) if r["seed"] == seed])
        entries.append(store.index_entry(cell))
    other = CellStore(root, "e", "other", "cccc55556666")  # another cell: untouched by --hash
    other.add(_cell_rows("cccc55556666", 5.0, seeds=[0], dataset="d2"))
    write_index(root / "e", [*entries, other.index_entry("other")])


def test_report_refuses_two_configurations_in_one_cell(tmp_path, capsys):
    from spl_bench.errors import DataError
    from spl_bench.report.tables import read_results
    from spl_bench.runner.cli import main

    _mixed_folders(tmp_path)
    with pytest.raises(DataError) as exc:
        read_results([tmp_path])
    msg = str(exc.value)
    assert "rows of 2 configurations in one cell" in msg and "method acs" in msg and "dataset d," in msg
    # each hash named with the cell it was read from (experiment folder and cell name)
    assert f"aaaa11112222 (3 runs, in {tmp_path}/e/lam_step=2)" in msg
    assert f"bbbb33334444 (3 runs, in {tmp_path}/e/lam_step=3)" in msg
    assert "--hash" in msg
    with pytest.raises(DataError, match="2 configurations"):  # a frame pooled elsewhere: summarize refuses too
        summarize(pd.DataFrame(_cell_rows("aaaa11112222", 0.0) + _cell_rows("bbbb33334444", 10.0)))

    capsys.readouterr()
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "aaaa11112222" in err and "bbbb33334444" in err
    assert main(["report", str(tmp_path), "--hash", "nope"]) == 2
    assert "no rows of config hash nope" in capsys.readouterr().err


def test_hash_selects_one_configuration(tmp_path, capsys):
    from spl_bench.report.tables import paper_table, read_results
    from spl_bench.runner.cli import main

    _mixed_folders(tmp_path)
    for chosen, mean in (("bbbb33334444", 11.0), ("aaaa", 1.0)):  # a full hash or a unique prefix
        frame = read_results([tmp_path], config_hash=chosen)
        d = frame[frame.dataset == "d"]
        assert set(d.config_hash) == {chosen if len(chosen) == 12 else "aaaa11112222"}
        assert set(frame[frame.dataset == "d2"].config_hash) == {"cccc55556666"}  # other cells kept
        table = paper_table(summarize(frame)).set_index("dataset")
        assert table.loc["d", "runs"] == 3 and table.loc["d", "acs"].startswith(f"{mean:.3f} ± ")
    capsys.readouterr()
    assert main(["report", str(tmp_path), "--hash", "bbbb", "--out", str(tmp_path / "out"), "--no-figure"]) == 0
    written = pd.read_csv(tmp_path / "out" / "table.csv").set_index("dataset")
    assert written.loc["d", "runs"] == 3 and written.loc["d", "acs"] == "11.000 ± 1.000"


def test_two_hashes_of_one_cell_file_are_never_pooled(tmp_path):
    """One cell of the row store run under two configurations: the report reads the hash its index names."""
    from spl_bench.report.tables import read_results
    from spl_bench.rowstore import CellStore, write_index

    old, new = CellStore(tmp_path, "e", "c", "aaaa11112222"), CellStore(tmp_path, "e", "c", "bbbb33334444")
    old.add(_cell_rows("aaaa11112222", 0.0))
    new.add(_cell_rows("bbbb33334444", 10.0, seeds=[0, 1]))
    write_index(tmp_path / "e", [old.index_entry("c")])
    frame = read_results([tmp_path])
    assert set(frame.config_hash) == {"aaaa11112222"} and sorted(frame.seed.unique()) == [0, 1, 2]
    write_index(tmp_path / "e", [new.index_entry("c")])  # the index now names the new hash: only its rows
    frame = read_results([tmp_path])
    assert set(frame.config_hash) == {"bbbb33334444"} and sorted(frame.seed.unique()) == [0, 1]
    assert "cell" not in frame


def test_one_cell_of_two_results_folders_under_two_hashes_is_refused_naming_each_folder(tmp_path):
    from spl_bench.errors import DataError
    from spl_bench.report.tables import read_results
    from spl_bench.rowstore import CellStore, write_index

    roots = []
    for name, h, offset in (("runs_a", "aaaa11112222", 0.0), ("runs_b", "bbbb33334444", 10.0)):
        store = CellStore(tmp_path / name, "e", "c", h)
        store.add(_cell_rows(h, offset))
        write_index(tmp_path / name / "e", [store.index_entry("c")])
        roots.append(tmp_path / name)
    with pytest.raises(DataError) as exc:
        read_results(roots)
    msg = str(exc.value)
    assert f"aaaa11112222 (3 runs, in {roots[0]}/e/c)" in msg and f"bbbb33334444 (3 runs, in {roots[1]}/e/c)" in msg
    assert len(read_results(roots, config_hash="bbbb")) == 6
