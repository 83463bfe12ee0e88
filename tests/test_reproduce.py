"""The table reproduction: cells, resumable committed rows, the comparison with the papers, drift.

The last two tests are CI's regression check of the reported numbers: the committed tables
are regenerated from the committed rows (they must be identical), and for every table with
committed rows the cheapest cell's seeds 0-1 are rerun and compared with the committed values.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from fake_rows import fake_table2_rows as _fake_rows
from spl_bench.environment import describe, environment_json
from spl_bench.errors import ConfigError
from spl_bench.report import compare as cmp
from spl_bench.report import status as report_status
from spl_bench.report.bands import agreement
from spl_bench.report.coverage import _far_reasons
from spl_bench.report.ours import load_failures, load_ours
from spl_bench.report.page import clean_lines, order_mark, row_summary, write_table
from spl_bench.report.reproduction import tables_dir, write_all
from spl_bench.report.status import FIDELITY_NOTE, available, cell_status
from spl_bench.rowfiles import read_row_file, write_row_file
from spl_bench.rowstore import read_cell
from spl_bench.runner import commits, drift
from spl_bench.runner import reproduce as rp
from spl_bench.runner.cells import Cell, cell_hash, compose_cell, table_cells
from spl_bench.runner.plan import CellState, cell_states, from_scratch, plan_lines, runs_left, seconds_per_run
from spl_bench.runner.retiming import (
    RETIMED_COLUMNS,
    append_retimed_row,
    retimed,
    retimed_at,
    retimed_ratios,
    retimed_rows,
    todays_seconds,
)
from spl_bench.runner.run_config import estimator_factory
from spl_bench.table_registry import TABLES


def test_table_cells_follow_the_sweep_configs():
    t2 = table_cells("2")
    assert len(t2) == 40  # 10 rows x 4 methods
    assert Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga")) in t2
    assert len(table_cells("2", methods=["gaga"], data=["music", "houses"])) == 2
    op2 = table_cells("op2")
    assert len(op2) == 6 * 2 * 2 + 6  # data x {outlier_path, cccp} x {theta, s}, plus C-SVM per data set
    assert len(table_cells("9")) == 15 * 3
    some = table_cells("11", where=["model.params.C=0.5", "model.params.C=1.0", "method=gaga"])
    assert [c.overrides for c in some] == [("model.params.C=0.5", "method=gaga"), ("model.params.C=1.0", "method=gaga")]
    with pytest.raises(ConfigError, match="key=value"):
        table_cells("11", where=["C"])


def test_cell_hash_is_the_runners(tmp_path, data_dir):
    """A committed row's hash is the one ``spl-bench run`` gives the same overrides (so resuming is exact)."""
    from spl_bench.runner.cli import main

    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    code = main(["run", f"results_root={tmp_path}", "protocol.n_runs=1", "progress=false", "print_table=false",
                 "experiment=gaga_table2", *cell.overrides])  # fmt: skip
    assert code == 0
    (path,) = tmp_path.rglob("*__*.csv")
    assert path == cell.rows_file(cell_hash(compose_cell(cell)), tmp_path)  # the file the sweep writes the cell to
    rows = read_row_file(path)
    assert set(rows["config_hash"]) == {cell_hash(compose_cell(cell))}
    ours = rp.run_seed(cell, 0)
    got = {r["metric"]: r["value"] for r in ours}
    for metric, value in rows.set_index("metric")["value"].items():
        assert got[metric] == pytest.approx(value, rel=1e-12)


def test_checkpoint_override_reaches_gaga_and_leaves_the_hash_alone(tmp_path):
    """GAGA cells get the checkpoint directory and BLAS threads (the other methods have no such
    settings), and the config hash, which decides which committed rows a cell owns, does not
    change with them."""
    gaga = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"))
    acs = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=acs"))
    assert rp.run_only_overrides(acs, tmp_path) == ()
    assert rp.run_only_overrides(gaga, None) == ()
    extra = rp.run_only_overrides(gaga, tmp_path)
    cfg = compose_cell(gaga, extra)
    assert cell_hash(cfg) == cell_hash(compose_cell(gaga))
    est = estimator_factory(cfg)()
    assert est.get_params()["checkpoint_dir"] == str(tmp_path.resolve())
    threads = rp.run_only_overrides(gaga, tmp_path, blas_threads=2)
    assert rp.run_only_overrides(acs, tmp_path, blas_threads=2) == ()
    cfg2 = compose_cell(gaga, threads)
    assert cell_hash(cfg2) == cell_hash(compose_cell(gaga))
    assert estimator_factory(cfg2)().get_params()["blas_threads"] == 2


def test_a_sweep_run_logs_its_progress(capsys, data_dir):
    """A run in a sweep prints the estimator's progress (here ACS's grid) as a log line naming
    the cell and seed; without ``progress`` it prints nothing."""
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=acs"))
    quiet = rp.run_seed(cell, 0)
    assert capsys.readouterr().out == ""
    loud = rp.run_seed(cell, 0, progress=True)
    out = capsys.readouterr().out
    assert f"{cell.label} seed 0 · age 1 / " in out
    assert {r["metric"]: r["value"] for r in loud} == {r["metric"]: r["value"] for r in quiet}


def test_sweep_resumes_from_committed_rows(tmp_path, data_dir):
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    states = cell_states([cell], tmp_path)
    assert rp.pending_tasks(states, 2, None) == [(cell, 0), (cell, 1)]
    lines: list[str] = []
    assert rp.run_tables(states, 2, log=lines.append, root=tmp_path) == {}
    assert any("seed 1: gen_error" in line for line in lines)
    again = cell_states([cell], tmp_path)
    assert again[0].done == {0, 1} and rp.pending_tasks(again, 2, None) == []
    assert rp.pending_tasks(again, 3, None) == [(cell, 2)]
    # a per-run budget below the measured time gives the cell no new seed (reduced runs)
    assert rp.pending_tasks(again, 3, max_cell_seconds=0.0) == []
    index = pd.read_csv(tmp_path / "gaga_table2" / "index.csv")
    assert list(index["config_hash"]) == [again[0].config_hash]
    plan = plan_lines(again, 3)
    assert "2/3 done" in plan[0] and plan[1].startswith("total: 1 runs left")
    # rows of another configuration hash are listed as stale and never read
    stale = again[0].file.with_name(f"{cell.cell_id}__000000000000.csv")
    stale.write_text(again[0].file.read_text())
    assert cell_states([cell], tmp_path)[0].stale == [stale]
    assert len(load_ours("gaga_table2", tmp_path)) == len(read_cell(again[0].file))


def test_a_cell_without_its_data_fails_once_and_its_other_seeds_are_passed_over(tmp_path, data_dir, monkeypatch):
    """One job: a cell whose dataset cannot be loaded (DataError) is run once, recorded as failed
    once and its other seeds are passed over (said in one line); the other cell runs all its seeds."""
    from spl_bench.errors import DataError

    ok = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    gone = Cell("5", "gaga_table5", ("+table_row=t5_nomao_n20", "method=original"))
    real, calls = rp.run_seeds, []

    def fake(cell, seed, extra=(), progress=False, companions=()):
        calls.append((cell, seed))
        if cell == gone:
            raise DataError("dataset 'nomao': local file not found")
        return real(cell, seed, extra, companions=companions)

    monkeypatch.setattr(rp, "run_seeds", fake)
    states = cell_states([gone, ok], tmp_path)
    lines: list[str] = []
    failures = rp.run_tables(states, 3, log=lines.append, root=tmp_path)
    assert list(failures) == [gone.label]
    assert [c for c, _ in calls].count(gone) == 1 and [c for c, _ in calls].count(ok) == 3
    assert sum("FAILED" in line for line in lines) == 1
    assert lines[-1].startswith("2 runs passed over: 1 cell(s) whose data could not be loaded")
    assert len(pd.read_csv(tmp_path / "failures.csv")) == 1


def test_todays_seconds_scale_the_re_timed_seeds_version_and_count_the_seeds_run_since(monkeypatch):
    """A re-timed seed at its re-timing; the other seeds of its code version at their committed seconds
    times that version's ratio (sum of re-timings / sum of their committed seconds); seeds made by
    code no older than the re-timing's at their own seconds (CPU where the row has them); older seeds
    left out.  Without the commits' times, the re-timings alone.  An independent computation of the
    same mean, written out seed by seed."""
    monkeypatch.setattr(commits, "commit_times", lambda: {"aaa": 1, "bbb": 2, "ccc": 3, "ddd": 0})
    seeds = pd.DataFrame({"time_s": [1000.0, 900.0, 100.0, 120.0, 800.0],
                          "cpu_s": [np.nan, np.nan, 90.0, np.nan, 400.0],
                          "code_version": ["0.1.0+aaa", "0.1.0+aaa", "0.1.0+bbb", "0.1.0+ccc", "0.1.0+ddd"]},
                         index=pd.Index([0, 1, 2, 3, 4], name="seed"))
    rows = pd.DataFrame({"seed": [0, 0], "cpu_s": [190.0, 210.0], "committed_s": [1000.0, 1000.0],
                         "code_version": ["0.1.0+bbb+flag"] * 2})
    # seed 0: median of its re-timings 200; seed 1 (aaa, its version): 900 x 0.2; seeds 2, 3 (made
    # since bbb, the re-timing's code): own, CPU and wall; seed 4 (ddd, older): left out
    assert todays_seconds(rows, seeds, retimed_at(rows)) == pytest.approx((200 + 180 + 90 + 120) / 4, rel=1e-12)
    later = rows.assign(code_version="0.1.0+ccc")
    assert todays_seconds(later, seeds, retimed_at(later)) == pytest.approx((200 + 180 + 120) / 3, rel=1e-12)
    # two re-timed seeds of one version: a ratio of sums, not a mean of ratios
    two = pd.DataFrame({"seed": [0, 4], "cpu_s": [200.0, 100.0], "committed_s": [1000.0, 400.0],
                        "code_version": ["0.1.0+ccc"] * 2})
    seeds4 = seeds.assign(code_version=["0.1.0+aaa", "0.1.0+aaa", "0.1.0+bbb", "0.1.0+ccc", "0.1.0+aaa"])
    assert todays_seconds(two, seeds4, retimed_at(two)) == pytest.approx(
        (200 + 900 * 300 / 1400 + 120 + 100) / 4, rel=1e-12)
    unknown = rows.assign(code_version="0.1.0+zzz")
    assert todays_seconds(unknown, seeds, retimed_at(unknown)) == 200.0
    monkeypatch.setattr(commits, "commit_times", dict)
    assert todays_seconds(rows, seeds, retimed_at(rows)) == 200.0


def test_without_runs_each_cell_goes_to_its_papers_run_count(tmp_path):
    """``runs=None`` (the script's and the Makefile's default): a GAGA cell is brought to 20 seeds and
    an Outlier-Path cell to 10 (that paper's "10 different random data splits"); seeds a cell has
    beyond its count are kept and ask for nothing; an explicit ``runs`` applies to every cell."""
    gaga = Cell("16", "gaga_table16", ("noise.rate=0.1", "method=acs"))
    op = Cell("op2", "outlier_path_table2", ("data=musk", "method=cccp", "method.variant=s"))
    more = Cell("op2", "outlier_path_table2", ("data=musk", "method=csvm", "method.variant=-"))
    states = [CellState(gaga, "a", tmp_path / "a.csv", set(range(5)), [], 1.0),
              CellState(op, "b", tmp_path / "b.csv", set(range(5)), [], 1.0),
              CellState(more, "c", tmp_path / "c.csv", set(range(12)), [], 1.0)]
    assert runs_left(states, None) == {gaga: 15, op: 5, more: 0}
    assert runs_left(states, 12) == {gaga: 7, op: 7, more: 0}
    tasks = rp.pending_tasks(states, None, None)
    assert sorted(s for c, s in tasks if c == gaga) == list(range(5, 20))
    assert sorted(s for c, s in tasks if c == op) == list(range(5, 10))
    plan = plan_lines(states, None)
    assert "5/20 done" in plan[0] and "5/10 done" in plan[1] and "12/10 done" in plan[2]
    assert plan[3].startswith("total: 20 runs left")


def test_plan_prefers_todays_re_timings_and_scales_their_family(tmp_path):
    """A re-timed cell's ETA uses its re-timing, the other cells of its (table, method) family the
    committed seconds times the family's median ratio, other families their committed seconds."""
    cells = [Cell("16", "gaga_table16", (f"noise.rate={r}", "method=gaga")) for r in ("0.1", "0.2")]
    cells.append(Cell("16", "gaga_table16", ("noise.rate=0.1", "method=acs")))
    path = tmp_path / "retimed.csv"
    pd.DataFrame([{"rows_name": "gaga_table16", "cell_id": cells[0].cell_id, "seed": s, "cpu_s": c}
                  for s, c in ((0, 30.0), (1, 50.0))]).to_csv(path, index=False)
    assert retimed(path) == {("gaga_table16", cells[0].cell_id): 40.0}
    states = [CellState(c, f"h{i}", tmp_path / "x.csv", {0}, [], committed, again)  # three configurations
              for i, (c, committed, again) in enumerate(zip(cells, (100.0, 200.0, 50.0), (40.0, None, None),
                                                            strict=True))]
    plan = plan_lines(states, 3)
    assert "r40.0 s/run" in plan[0] and "≈80.0 s/run" in plan[1] and " 50.0 s/run" in plan[2]
    # 2 runs left per cell: (40 + 80 + 50) * 2 = 340 s; from the committed seconds (100 + 200 + 50) * 2
    assert "ETA 6 min" in plan[3] and "from the committed rows' seconds alone: 12 min" in plan[4]
    # a per-run budget reads the re-timing where there is one
    assert [c for c, _ in rp.pending_tasks(states, 2, max_cell_seconds=60.0)] == [cells[0], cells[2]]
    # and the family's scaled estimate where there is none: 200 s committed, ≈80 s today, is run
    # under a 90 s budget
    assert [c for c, _ in rp.pending_tasks(states, 2, max_cell_seconds=90.0)] == cells
    # the family's ratio is that of the re-timed seeds against their own committed seconds, which
    # runs committed later by today's code (a faster committed mean, 45 s here) do not dilute
    pd.DataFrame([{"rows_name": "gaga_table16", "cell_id": cells[0].cell_id, "seed": 0, "cpu_s": 40.0,
                   "committed_s": 100.0}]).to_csv(path, index=False)
    assert retimed_ratios(path) == {("gaga_table16", cells[0].cell_id): 0.4}
    states[0] = CellState(cells[0], "h0", tmp_path / "x.csv", {0, 1}, [], 45.0, 40.0, 0.4)
    assert "≈80.0 s/run" in plan_lines(states, 3)[1]
    # a cell whose data must be downloaded is marked, and its part of the ETA given on its own
    states[2].data_here = False
    plan = plan_lines(states, 3)
    assert plan[2].endswith("download") and not plan[1].endswith("download")
    # left: 1 run of cell 0 (40 s), 2 of cell 1 (80 s each), 2 of cell 2 (50 s each): 300 s in all
    assert "ETA 5 min" in plan[3]
    assert "of which 2 runs in 1 cells" in plan[4] and "ETA 100 s; with the data here: 3 min" in plan[4]  # 200 s
    # from scratch: each offline cell at the paper's 20 runs x its seconds per run, by method
    # (cell 2, whose data must be downloaded, is not counted): gaga (40 + 80) * 20 = 2,400 s
    assert plan[-1] == ("from scratch: 0.7 CPU-h for every offline cell of these tables at its paper's run count "
                        "x seconds per run (gaga 0.7)")
    assert from_scratch(states) == {"gaga": pytest.approx((40.0 + 80.0) * 20, rel=1e-12)}


def test_a_family_scaled_cell_scales_only_its_seeds_older_than_the_family_re_timing(tmp_path):
    """``≈``: seeds made by code no older than the family's re-timing are today's seconds already and
    are not scaled again; the older seeds are scaled by the family's ratio.  Without commit times
    (no git) the committed mean is scaled, as before."""
    cells = [Cell("16", "gaga_table16", (f"noise.rate={r}", "method=gaga")) for r in ("0.1", "0.2")]
    states = [CellState(cells[0], "h0", tmp_path / "x.csv", {0}, [], 100.0, 40.0, 0.4, retimed_since=5),
              CellState(cells[1], "h1", tmp_path / "y.csv", {0, 1, 2}, [], 100.0,
                           seed_times=((200.0, 1), (60.0, 5), (40.0, 9)))]
    per, mark, committed = seconds_per_run(states)[1]
    # seed 0 (code of time 1) scaled: 200 * 0.4 = 80; seeds 1 and 2 (times 5, 9) at their own seconds
    assert mark == "≈" and committed == 100.0 and per == pytest.approx((80 + 60 + 40) / 3, rel=1e-12)
    # the old rule, committed mean times the ratio, would have given 40 s: the two new seeds twice discounted
    states[1].seed_times = ((200.0, None), (60.0, None), (40.0, None))
    assert seconds_per_run(states)[1][0] == pytest.approx(100.0 * 0.4, rel=1e-12)
    states[1].seed_times = ((200.0, 1), (60.0, 5), (40.0, 9))
    states[0].retimed_since = None  # the family's re-timing commit unknown: the old rule
    assert seconds_per_run(states)[1][0] == pytest.approx(100.0 * 0.4, rel=1e-12)


def test_pairing_reads_the_seeds_a_re_timed_cells_estimate_rests_on(tmp_path):
    """``p`` against a re-timed table-rule cell: its re-timed seeds at their re-timings and its seeds
    made since at their own seconds are paired; an older seed, not re-timed, is not (its seconds are
    not today's)."""
    cell = Cell("16", "gaga_table16", ("noise.rate=0.1", "method=gaga"))
    ruled = CellState(cell, "h0", tmp_path / "x.csv", {0, 1, 2}, [], 100.0, 40.0, retimed_since=5,
                      seed_times=((100.0, 1), (30.0, 6), (170.0, 2)), seed_ids=(0, 1, 2), seed_retimed=((0, 50.0),))
    rerun = CellState(replace(cell, current_rule=True), "h1", tmp_path / "y.csv", {0, 2}, [], 62.5,
                      seed_times=((45.0, 9), (80.0, 9)), seed_ids=(0, 2), ruled=ruled)
    per, mark, committed = seconds_per_run([rerun])[0]
    # seed 0 only (seed 2 of the table rule is old code, not re-timed): 40 x 45 / 50
    assert mark == "p" and per == pytest.approx(36.0, rel=1e-12) and committed == 62.5
    # no seed in common: the rerun's own seeds decide (their mean)
    rerun.seed_ids, rerun.seed_times = (2,), ((80.0, 9),)
    assert seconds_per_run([rerun])[0][:2] == (pytest.approx(62.5, rel=1e-12), "")


def test_a_cell_never_run_takes_the_slowest_estimate_of_its_method_in_its_folder(tmp_path):
    """``~``: a cell never run is priced at the largest estimate (re-timed or scaled, not the committed
    mean) among its method's cells of the same rows folder; with none there, among its method's cells
    anywhere.  Its committed seconds are guessed the same way from the committed means."""
    t5 = [Cell("5", "gaga_table5", (f"table_row=t5_{d},method=gaga",)) for d in ("hiva", "pendigits", "nomao")]
    t6 = [Cell("6", "gaga_table6", (f"table_row=t6_{d},method=gaga",)) for d in ("hiva", "nomao")]
    acs = Cell("9", "gaga_table9", ("method=acs",))
    states = [CellState(t5[0], "a", tmp_path / "a.csv", {0}, [], 1000.0, 250.0),  # re-timed: 250 s today
              CellState(t5[1], "b", tmp_path / "b.csv", {0}, [], 6.0),
              CellState(t5[2], "c", tmp_path / "c.csv", set(), [], None),
              CellState(t6[0], "d", tmp_path / "d.csv", {0}, [], 2000.0, 1700.0),
              CellState(t6[1], "e", tmp_path / "e.csv", set(), [], None),
              CellState(acs, "f", tmp_path / "f.csv", set(), [], None)]
    est = seconds_per_run(states)
    # Table 5's slowest estimate is hiva's re-timing, 250 s (not its 1,000 s committed, nor Table 6's 1,700 s)
    assert est[2] == (pytest.approx(250.0, rel=1e-12), "~", pytest.approx(1000.0, rel=1e-12))
    assert est[4] == (pytest.approx(1700.0, rel=1e-12), "~", pytest.approx(2000.0, rel=1e-12))
    # no ACS cell anywhere has seconds: no guess
    assert est[5] == (None, "", None)
    # a folder with no timed cell of the method falls back to the method's slowest estimate anywhere
    states[0:2] = [CellState(t5[0], "a", tmp_path / "a.csv", set(), [], None),
                   CellState(t5[1], "b", tmp_path / "b.csv", set(), [], None)]
    assert seconds_per_run(states)[2] == (pytest.approx(1700.0, rel=1e-12), "~", pytest.approx(2000.0, rel=1e-12))


def test_no_report_runs_the_seeds_and_writes_no_table(monkeypatch, capsys):
    """``reproduce_tables.py --no-report`` (one part of a sweep): the cells' runs are made, the tables
    are not written; without it the same command writes them."""
    import importlib.util
    import sys

    import spl_bench.report.reproduction as reproduction
    import spl_bench.report.site as site
    from spl_bench.paths import repo_root

    spec = importlib.util.spec_from_file_location("reproduce_tables", repo_root() / "scripts" / "reproduce_tables.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # type: ignore[union-attr]
    ran, wrote = [], []
    monkeypatch.setattr(script, "cell_states", lambda cells: [c.cell_id for c in cells])
    monkeypatch.setattr(script, "run_tables", lambda states, *a, **k: ran.append(states) or {})
    monkeypatch.setattr(reproduction, "write_all", lambda **k: wrote.append("tables") or [])
    monkeypatch.setattr(site, "write_site", lambda: wrote.append("site") or "index.html")
    argv = ["reproduce_tables.py", "--tables", "16", "--methods", "acs"]
    monkeypatch.setattr(sys, "argv", [*argv, "--no-report"])
    assert script.main() == 0
    assert len(ran) == 1 and len(ran[0]) == 7 and wrote == []  # Table 16: 7 noise rates
    assert "tables not written (--no-report)" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", argv)
    assert script.main() == 0
    assert len(ran) == 2 and wrote == ["tables", "site"]


def test_report_only_points_every_tables_index_at_its_rule(monkeypatch):
    """``--report-only`` writes every table, so without ``--tables`` it refreshes every table's index
    (a table that left an old rule is then read on its new rows); with ``--tables`` those only; a
    sweep without ``--tables`` keeps the default tables."""
    import importlib.util
    import sys

    import spl_bench.report.reproduction as reproduction
    import spl_bench.report.site as site
    from spl_bench.paths import repo_root

    spec = importlib.util.spec_from_file_location("reproduce_tables", repo_root() / "scripts" / "reproduce_tables.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # type: ignore[union-attr]
    refreshed, ran = [], []
    monkeypatch.setattr(script, "cell_states", lambda cells: list(cells))
    monkeypatch.setattr(script, "refresh_indexes", lambda states: refreshed.append({c.table for c in states}))
    monkeypatch.setattr(script, "run_tables", lambda states, *a, **k: ran.append({c.table for c in states}) or {})
    monkeypatch.setattr(reproduction, "write_all", lambda **k: [])
    monkeypatch.setattr(site, "write_site", lambda: "index.html")
    monkeypatch.setattr(sys, "argv", ["reproduce_tables.py", "--report-only"])
    assert script.main() == 0 and refreshed == [set(TABLES)]
    monkeypatch.setattr(sys, "argv", ["reproduce_tables.py", "--report-only", "--tables", "12", "16"])
    assert script.main() == 0 and refreshed[-1] == {"12", "16"}
    monkeypatch.setattr(sys, "argv", ["reproduce_tables.py", "--methods", "original", "--no-report"])
    assert script.main() == 0 and ran == [set(script.DEFAULT_TABLES)] and len(refreshed) == 2


def test_cell_states_record_each_seeds_code_time_and_the_re_timings(tmp_path, monkeypatch):
    monkeypatch.setattr(commits, "commit_times", lambda: {"aaa": 1, "bbb": 2})
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    path = cell.rows_file(cell_hash(compose_cell(cell)), tmp_path)
    path.parent.mkdir(parents=True)
    write_row_file(pd.DataFrame([{"seed": s, "metric": "gen_error", "value": 0.1, "time_s": t, "code_version": v}
                                 for s, t, v in ((0, 100.0, "0.1.0+aaa"), (1, 30.0, "0.1.0+bbb"),
                                                 (2, 20.0, "0.1.0+zzz"))]), path)
    retimed = tmp_path / "retimed.csv"
    pd.DataFrame([{"rows_name": "gaga_table2", "cell_id": cell.cell_id, "seed": 0, "cpu_s": 10.0,
                   "committed_s": 100.0, "code_version": "0.1.0+bbb"}]).to_csv(retimed, index=False)
    st = cell_states([cell], tmp_path, retimed)[0]
    assert st.seed_times == ((100.0, 1), (30.0, 2), (20.0, None)) and st.retimed_since == 2
    # today's seconds: seed 0 at its re-timing, seed 1 (made by the re-timing's code) at its own
    assert st.sec_retimed == pytest.approx((10.0 + 30.0) / 2, rel=1e-12)


def test_seeds_resumed_without_their_cpu_seconds_are_left_out_and_their_re_timings_kept(tmp_path, monkeypatch):
    """A seed resumed from a checkpoint that kept no CPU seconds has no measure (its cpu_s added the
    earlier part's wall clock); a re-timing of it is today's CPU and still counts."""
    monkeypatch.setattr(commits, "commit_times", lambda: {"aaa": 1, "bbb": 2})
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    path = cell.rows_file(cell_hash(compose_cell(cell)), tmp_path)
    path.parent.mkdir(parents=True)
    resumed, whole = json.dumps({"n_resumes": 1}), json.dumps({"n_resumes": 0})
    write_row_file(pd.DataFrame([{"seed": s, "metric": "gen_error", "value": 0.1, "time_s": t, "cpu_s": t,
                                  "code_version": "0.1.0+aaa", "info": i}
                                 for s, t, i in ((0, 2700.0, resumed), (1, 30.0, whole), (2, 900.0, resumed))]), path)
    st = cell_states([cell], tmp_path, tmp_path / "none.csv")[0]
    assert st.n_unmeasured == 2 and st.sec_per_run == 30.0 and st.done == {0, 1, 2}
    assert "2 seeds of 1 cells were resumed from checkpoints" in "\n".join(plan_lines([st], 3))
    retimed = tmp_path / "retimed.csv"
    pd.DataFrame([{"rows_name": "gaga_table2", "cell_id": cell.cell_id, "seed": 0, "cpu_s": 40.0,
                   "committed_s": 2700.0, "code_version": "0.1.0+bbb"}]).to_csv(retimed, index=False)
    again = cell_states([cell], tmp_path, retimed)[0]
    assert again.sec_retimed == 40.0  # seed 0 at its re-timing; seeds 1-2 are older than it


def test_a_re_timing_counts_only_while_its_seed_is_the_committed_one(tmp_path):
    """A re-timed seed that was run again (its committed seconds changed: new code, a rerun cell) no
    longer gives the cell's seconds per run; the seeds still committed as re-timed do."""
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    h = cell_hash(compose_cell(cell))
    path = cell.rows_file(h, tmp_path)
    path.parent.mkdir(parents=True)

    def commit(times: dict[int, float]) -> None:
        write_row_file(pd.DataFrame([{"seed": s, "metric": "gen_error", "value": 0.1, "time_s": t}
                                     for s, t in times.items()]), path)

    retimed = tmp_path / "retimed.csv"
    timings = ((0, 10.0, 100.0), (1, 30.0, 200.0))  # seed, re-timed CPU-s, committed s when re-timed
    pd.DataFrame([{"rows_name": "gaga_table2", "cell_id": cell.cell_id, "seed": s, "cpu_s": c, "committed_s": t,
                   "code_version": "v"} for s, c, t in timings]).to_csv(retimed, index=False)
    commit({0: 100.0, 1: 200.004})  # re-timings once stored the committed seconds rounded to 0.01 s
    st = cell_states([cell], tmp_path, retimed)[0]
    assert st.sec_retimed == 20.0 and st.retimed_ratio == pytest.approx(0.125)
    commit({0: 100.0, 1: 3.0})  # seed 1 made again: only seed 0's re-timing describes the cell
    st = cell_states([cell], tmp_path, retimed)[0]
    assert st.sec_retimed == 10.0 and st.retimed_ratio == pytest.approx(0.1)
    commit({0: 2.0, 1: 3.0})  # both made again: the committed rows' own seconds
    st = cell_states([cell], tmp_path, retimed)[0]
    assert st.sec_retimed is None and st.retimed_ratio is None and st.sec_per_run == 2.5


def test_re_timings_are_appended_so_that_two_re_timing_processes_keep_each_others_rows(tmp_path):
    path = tmp_path / "bench" / "retimed.csv"

    def row(cell: str, cpu: float) -> dict:
        return {"rows_name": "outlier_path_table2", "cell_id": cell, "seed": 0, "cpu_s": cpu, "committed_s": 100.0,
                "agrees": True, "worst_rel": 0.0, "code_version": "v", "date": "2026-11-27"}

    # process A read the file (empty), then process B appended a row, then A appends its own
    append_retimed_row(path, row("a", 10.0))
    append_retimed_row(path, row("b", 20.0))
    frame = pd.read_csv(path)
    assert list(frame.columns) == RETIMED_COLUMNS
    assert list(frame["cell_id"]) == ["a", "b"] and list(frame["cpu_s"]) == [10.0, 20.0]
    assert retimed(path) == {("outlier_path_table2", "a"): 10.0, ("outlier_path_table2", "b"): 20.0}


def test_comparison_against_an_independent_computation(tmp_path):
    vals = {"original": [0.33, 0.35], "acs": [0.22, 0.24], "mospl": [0.25, 0.23], "gaga": [0.20, 0.22]}
    tests = {m: [x - 0.01 for x in v] for m, v in vals.items()}
    _fake_rows(tmp_path, vals, tests)
    comp = cmp.compare_table("2", tmp_path)
    music = comp.cells[comp.cells["dataset"] == "music"].set_index(["method", "selection"])
    for m, v in vals.items():
        r = music.loc[(m, "validation")]
        assert r["ours_mean"] == pytest.approx(np.mean(v)) and r["ours_std"] == pytest.approx(np.std(v, ddof=1))
        assert r["z"] == pytest.approx((np.mean(v) - r["paper_mean"]) / r["paper_std"])
        assert r["runs"] == 2 and r["status"] == "partial"
        assert music.loc[(m, "test"), "ours_mean"] == pytest.approx(np.mean(tests[m]))
    assert music.loc[("gaga", "validation"), "paper_mean"] == 0.206  # the paper's Table 2, music†
    table = row_summary(comp.cells, "validation").set_index("row").loc["music†"]
    assert table["gaga"].startswith("**0.210")  # ours: GAGA best (0.210 mean)
    assert table["paper order holds"] == "no"  # ours: MOSPL (0.24) behind ACS (0.23)
    other = comp.cells[comp.cells["dataset"] != "music"]
    assert set(other["status"]) <= {"not_run", "unavailable_offline"}


def _write_cell_rows(root, experiment: str, dataset: str, noise: str, method: str, values: list[float],
                     model: dict | None = None) -> None:
    """Committed-style rows of one cell (accuracy, validation selection) under ``root/experiment``."""
    base = root / experiment
    base.mkdir(parents=True, exist_ok=True)
    cell = f"data={dataset},method={method},noise={noise},model={json.dumps(model or {}, sort_keys=True)}"
    rows = [{"experiment": experiment.split("@")[0], "dataset": dataset, "noise": noise, "method": method,
             "model": "logistic", "sp": "linear", "selection": "validation",
             "params": json.dumps({"model": model or {}, "sp": {"gamma": 0.1}}),
             "seed": seed, "lam": 1.0, "time_s": 0.1, "n_restarts": np.nan, "info": json.dumps({}),
             "config_hash": "abc", "metric": "accuracy", "value": v} for seed, v in enumerate(values)]  # fmt: skip
    write_row_file(pd.DataFrame(rows), base / f"{cell}__abc.csv")
    index = base / "index.csv"
    entries = pd.read_csv(index).to_dict("records") if index.is_file() else []
    entries.append({"cell": cell, "overrides": "", "config_hash": "abc", "file": f"{cell}__abc.csv"})
    pd.DataFrame(entries).to_csv(index, index=False)


def test_worse_cells_are_explained_by_the_clean_reference_or_the_authors_noise(tmp_path):
    """A classification cell far below the paper: explained when the paper is more than 3 of its stds
    above the plain model's clean-label accuracy (pendigits here), or when the same cell under the
    authors' noise is within 3 stds (mfeat-pixel here); otherwise it stays unexplained."""
    _write_cell_rows(tmp_path, "gaga_table5", "pendigits", "uniform_flip@0.2", "original", [0.80, 0.82])
    _write_cell_rows(tmp_path, "gaga_table5", "mfeat_pixel", "uniform_flip@0.3", "original", [0.70, 0.71])
    _write_cell_rows(tmp_path, "gaga_table5", "mfeat_pixel", "uniform_flip@0.3", "acs", [0.70, 0.72])
    _write_cell_rows(tmp_path, "gaga_table5@clean", "pendigits", "uniform_flip@0", "original", [0.81, 0.83, 0.82])
    # a second row of the same configuration (rows differing only in their noise rate): counted once
    _write_cell_rows(tmp_path, "gaga_table5@clean", "pendigits", "uniform_flip@0.0", "original", [0.81, 0.83])
    # the reference of another row's model on the same data (Table 3's two mfeat-pixel rows differ in
    # C): the noisy cells' model parameters pick the row's own
    _write_cell_rows(tmp_path, "gaga_table5@clean", "pendigits", "uniform_flip@0", "original", [0.5, 0.6], {"C": 2})
    _write_cell_rows(tmp_path, "gaga_table5@clean", "mfeat_pixel", "uniform_flip@0", "original", [0.88, 0.87])
    _write_cell_rows(tmp_path, "gaga_table5@authors", "mfeat_pixel", "near_boundary_flip@0.3", "original", [0.84])
    cells = cmp.compare_table("5", tmp_path).cells
    val = cells[cells["selection"] == "validation"].set_index(["dataset", "method"])
    pen = val.loc[("pendigits", "original")]
    assert pen["clean_mean"] == pytest.approx(0.82) and pen["clean_runs"] == 3
    assert pen["clean_std"] == pytest.approx(np.std([0.81, 0.83, 0.82], ddof=1))
    gap = (0.982 - 0.82) / 0.007  # the paper's Table 5, pendigits‡ Original: 0.982 ± 0.007
    assert f"the paper's mean is {gap:.0f} of its stds above" in pen["reason"]
    assert "0.820 ± 0.010, 3 runs" in pen["reason"]
    # every method of the row gets the row's reference (GAGA has no rows here: not run)
    assert val.loc[("pendigits", "gaga"), "clean_mean"] == pytest.approx(0.82)
    mf = val.loc[("mfeat_pixel", "original")]
    assert mf["authors_runs"] == 1 and mf["authors_z"] == pytest.approx((0.84 - 0.827) / 0.028)
    assert "under the authors' noise" in mf["reason"] and "ours is 0.840 (1 runs)" in mf["reason"]
    # mfeat-pixel ACS: its reference (0.875) is below the paper's 0.937 by less than 3 stds (0.054)
    # and it has no authors' row: unexplained
    assert val.loc[("mfeat_pixel", "acs"), "reason"].endswith(FIDELITY_NOTE["worse"])
    md = clean_lines(cells).set_index("row")
    assert md.loc["pendigits‡", "plain model, clean labels"] == "0.820 ± 0.010 (3)"
    assert md.loc["pendigits‡", "paper: best"].endswith("(gaga)")


def test_deferred_and_failed_cells_carry_their_reason(tmp_path, monkeypatch):
    """A cell without rows listed in ``deferred.csv`` is ``not_run`` with the measured reason, one in
    ``failures.csv`` is ``failed``; the others keep the generic ``not_run`` reason."""
    # every data set counts as loadable here: whether houses is in the data folder is another test's matter
    monkeypatch.setattr(report_status, "available", lambda dataset: True)
    vals = {"original": [0.33, 0.35]}
    _fake_rows(tmp_path, vals, vals)
    pd.DataFrame([{"paper": "gaga", "table": 2, "dataset": "houses", "method": "gaga",
                   "reason": "measured: too slow here"}]).to_csv(tmp_path / "deferred.csv", index=False)
    pd.DataFrame([{"paper": "gaga", "table": 2, "dataset": "ailerons", "method": "acs", "cell": "x", "seed": 0,
                   "reason": "ValueError: boom"}]).to_csv(tmp_path / "failures.csv", index=False)
    cells = cmp.compare_table("2", tmp_path, load_failures(tmp_path)).cells
    cells = cells[cells["selection"] == "validation"].set_index(["dataset", "method"])
    assert tuple(cells.loc[("houses", "gaga"), ["status", "reason"]]) == ("not_run", "measured: too slow here")
    assert tuple(cells.loc[("ailerons", "acs"), ["status", "reason"]]) == ("failed", "ValueError: boom")
    assert cells.loc[("houses", "acs"), "status"] == "not_run"
    assert cells.loc[("houses", "acs"), "reason"].startswith("no committed rows yet")


def test_a_page_names_the_gaga_cells_it_reads_on_the_old_candidate_rule(tmp_path, monkeypatch):
    """GAGA rows without ``candidate_rule`` in their info (the step rule) are named on the table's page
    and in FINDINGS, with the seeds of their rerun: the rows of a file beside them (another hash, not in
    the index) whose info says ``critical_grid``.  Once the index reads current-rule rows, nothing is said."""
    from spl_bench.report.findings import _old_rule_section
    from spl_bench.report.old_rule import step_rule_cells

    monkeypatch.setattr(report_status, "available", lambda dataset: True)
    vals = {"acs": [0.30, 0.31, 0.32], "gaga": [0.33, 0.35, 0.34]}
    _fake_rows(tmp_path, vals, vals)
    folder = tmp_path / "gaga_table2"
    cell = "table_row=t2_music_n30,method=gaga"
    old = read_row_file(folder / f"{cell}__abc.csv")
    rerun = old[old["seed"] < 2].assign(info=json.dumps({"candidate_rule": "critical_grid"}), config_hash="new")
    write_row_file(rerun, folder / f"{cell}__new.csv")
    got = step_rule_cells(folder)
    assert got.to_dict("records") == [{"folder": "gaga_table2", "cell": cell, "seeds_read": 3, "seeds_current": 2}]
    comp = cmp.compare_table("2", tmp_path)
    write_table(comp, tmp_path / "out", figures=False)
    page = (tmp_path / "out" / "gaga_table2" / "comparison.md").read_text()
    assert "old candidate rule" in page and "`gaga_table2`: 1 cell(s), 3 seeds read" in page
    assert "has 2 seeds (0 of the cells at 20)" in page
    assert "| 2 | `gaga_table2` | 1 | 3 | 2 |" in _old_rule_section([comp])
    # the index switched to the rerun's file: the cell is on the current rule, nothing to say
    index = pd.read_csv(folder / "index.csv")
    index.loc[index["cell"] == cell, ["config_hash", "file"]] = ["new", f"{cell}__new.csv"]
    index.to_csv(folder / "index.csv", index=False)
    assert step_rule_cells(folder).empty
    comp = cmp.compare_table("2", tmp_path)
    write_table(comp, tmp_path / "out", figures=False)
    assert "old candidate rule" not in (tmp_path / "out" / "gaga_table2" / "comparison.md").read_text()
    assert _old_rule_section([comp]) == ""


def test_a_cell_without_rows_is_unavailable_offline_exactly_when_its_file_is_missing(tmp_path, monkeypatch):
    """``unavailable_offline`` follows the data folder: the same empty cell is ``not_run`` once the file is there."""
    monkeypatch.setenv("SPL_BENCH_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    available.cache_clear()  # an earlier test of this process may have seen the real data folder
    vals = {"original": [0.33, 0.35]}
    _fake_rows(tmp_path / "rows", vals, vals)

    def houses_acs() -> str:
        available.cache_clear()  # it caches the answer per data set for a report's run
        cells = cmp.compare_table("2", tmp_path / "rows").cells
        return cells[(cells["selection"] == "validation") & (cells["dataset"] == "houses")
                     & (cells["method"] == "acs")]["status"].item()  # fmt: skip

    assert available("diabetes")  # scikit-learn's own data sets always load
    assert not available("houses") and houses_acs() == "unavailable_offline"
    (tmp_path / "data" / "houses.csv.gz").write_bytes(b"")
    assert houses_acs() == "not_run" and available("houses")
    available.cache_clear()


def test_far_classification_cells_are_explained_only_in_the_direction_the_noise_explains():
    """|z| > 3 on accuracy: the paper's noisy test labels explain ours above the paper, not below."""
    base = dict(paper="gaga", table=5, dataset="mfeat_pixel", method="gaga", runs=20, time_s=1.0,
                selection="validation", metric="accuracy")
    above = cell_status(pd.Series({**base, "z": 5.0}), {})
    below = cell_status(pd.Series({**base, "z": -5.0}), {})
    near = cell_status(pd.Series({**base, "z": -1.0}), {})
    assert above == ("complete", "|z| > 3: " + FIDELITY_NOTE["classification"])
    assert below == ("complete", "|z| > 3, ours worse than the paper: " + FIDELITY_NOTE["worse"])
    assert near == ("complete", "")
    err = cell_status(pd.Series({**base, "metric": "test_error", "z": 5.0}), {})  # a higher error is worse
    assert err[1].startswith("|z| > 3, ours worse than the paper")
    # from 50 % uniform flips the flipped label is each class's majority: explained, and said so
    inverted = cell_status(pd.Series({**base, "noise_rate": 0.6, "z": -50.0}), {})
    assert inverted == ("complete", "|z| > 3, ours worse than the paper: " + FIDELITY_NOTE["inverted"])
    assert cell_status(pd.Series({**base, "noise_rate": 0.4, "z": -5.0}), {}) == below


def test_agreement_is_a_column_of_its_own_by_paper_stds():
    assert [agreement(z) for z in (0.0, -1.0, 1.5, -2.0, 2.9, 3.0, -3.01, 40.0, np.inf, np.nan)] == [
        "within 1 std", "within 1 std", "within 2 stds", "within 2 stds", "within 3 stds", "within 3 stds",
        "beyond 3 stds", "beyond 3 stds", "beyond 3 stds", "–"]  # fmt: skip


def test_outlier_path_rows_name_their_data_set_and_carry_no_gaga_order(tmp_path):
    comp = cmp.compare_table("op2", tmp_path)  # no rows: the paper's cells alone
    rows = set(comp.cells["row"])
    assert "D1 breast_cancer" in rows and not any(r == "D1" for r in rows)
    assert set(comp.cells[comp.cells["runs"] == 0]["agreement"]) == {"–"}
    lines = row_summary(comp.cells, "validation")
    assert "paper order holds" not in lines.columns
    md = write_table(comp, tmp_path / "out", figures=False)[0].read_text()
    assert md.startswith("# Outlier-Path (Suzumura et al., ICML 2014), Table 2") and "GAGA, MOSPL" not in md


def test_readme_counts_the_far_cells_by_reason():
    notes = FIDELITY_NOTE
    ran = pd.DataFrame({
        "z": [5.0, -4.0, -9.0, -6.0, 0.5, np.inf, -3.5],
        "reason": ["|z| > 3: " + notes["regression"], "|z| > 3, ours worse than the paper: " + notes["worse"],
                   "x; |z| > 3, ours worse than the paper: " + notes["clean_ceiling"].format(gap=9, mean=0.8, std=0.01,
                                                                                            runs=5),
                   "|z| > 3, ours worse than the paper: " + notes["inverted"], "", "5 of 20 runs committed",
                   "|z| > 3, ours worse than the paper: " + notes["worse"]],
    })  # fmt: skip
    lines = _far_reasons(ran)
    counts = {line.split(" | ")[0].lstrip("| "): int(line.rstrip(" |").rsplit("| ", 1)[1]) for line in lines[2:-1]}
    assert sum(counts.values()) == 6  # every cell with |z| > 3 counted once (0.5 is not)
    assert counts["ours below: not explained"] == 2
    assert counts["ours below: the paper is above the plain model's clean-label accuracy (`--variant clean`)"] == 1
    assert counts["regression: the paper's metric is another scale (RMSE of a min-max target, no intercept)"] == 1
    assert sum(v for k, v in counts.items() if k.startswith("other")) == 1


def test_order_mark():
    grp = pd.DataFrame({"method": ["original", "acs", "mospl", "gaga"], "ours_mean": [0.3, 0.25, 0.22, 0.2]})
    assert order_mark(grp, better=False) == "yes"
    assert order_mark(grp, better=True) == "no"
    grp.loc[3, "ours_mean"] = 0.23
    assert order_mark(grp, better=False) == "no"


def test_committed_tables_are_regenerated_identically(tmp_path, data_dir):
    """CI: the committed comparison tables and coverage.csv are those the committed rows give."""
    committed = tables_dir()
    if not (committed / "coverage.csv").is_file():
        pytest.fail("results/tables/coverage.csv is missing: run scripts/reproduce_tables.py --report-only")
    write_all(tmp_path, figures=False)
    for fresh in sorted(tmp_path.rglob("*")):
        if fresh.suffix not in (".md", ".csv"):
            continue
        # the findings page lives beside the tables folder: results/FINDINGS.md
        old = committed.parent / fresh.name if fresh.name == "FINDINGS.md" else committed / fresh.relative_to(tmp_path)
        assert old.is_file(), f"{old} is not committed"
        assert old.read_text() == fresh.read_text(), (
            f"{old} differs from what the committed rows give: rerun scripts/reproduce_tables.py --report-only"
        )


def _drift_params() -> list:
    """The drift cells (:func:`spl_bench.runner.drift.drift_cells`), marked ``slow`` (and ``drift``)
    where even the cheapest cell of a table takes more than ``DRIFT_FAST_S`` a run."""
    return [pytest.param(key, cell_id, marks=[pytest.mark.slow, pytest.mark.drift] if slow else [])
            for key, cell_id, slow in drift.drift_cells()]


@pytest.mark.parametrize("key,cell_id", _drift_params())
def test_reported_numbers_do_not_drift(key, cell_id, data_dir):
    """Seeds 0-1 (those committed) of one cell per table, rerun: a change that moves a published number
    fails here.  A value equal to the one recorded for this process's BLAS kernel family
    (:mod:`spl_bench.runner.drift`) passes too: the committed rows were made with another family."""
    exp = TABLES[key][0]
    cell = next(c for c in table_cells(key) if c.cell_id == cell_id)
    committed = load_ours(exp)
    committed = committed[committed["cell"] == cell_id]
    kernel = drift.kernel_family()
    for seed in sorted(set(committed["seed"]) & set(drift.DRIFT_SEEDS)):
        fresh = {r["metric"]: r["value"] for r in rp.run_seed(cell, seed)}
        ref = drift.reference_values(key, cell_id, int(seed), kernel)
        for r in committed[committed["seed"] == seed].itertuples():
            if fresh[r.metric] == pytest.approx(r.value, rel=1e-6, abs=1e-9):
                continue
            assert r.metric in ref and fresh[r.metric] == pytest.approx(ref[r.metric], rel=1e-6, abs=1e-9), (
                f"{exp} {cell_id} seed {seed} {r.metric}: committed {r.value}, now {fresh[r.metric]}, "
                f"recorded for {kernel} kernels: {ref.get(r.metric, 'none')}; "
                f"committed under: {describe(getattr(r, 'environment', None))}; "
                f"now under: {describe(environment_json())}"
            )


def test_drift_references_are_read_by_table_cell_seed_and_kernel(tmp_path):
    path = tmp_path / "drift.csv"
    assert drift.reference_values("15", "c", 0, "Haswell", path) == {}
    drift.record_reference("15", "c", 0, [{"metric": "accuracy", "value": 0.3}], "Haswell", path)
    drift.record_reference("15", "c", 1, [{"metric": "accuracy", "value": 0.4}], "Haswell", path)
    drift.record_reference("15", "c", 0, [{"metric": "accuracy", "value": 0.5}], "Zen", path)
    drift.record_reference("15", "c", 0, [{"metric": "accuracy", "value": 0.31}], "Haswell", path)  # replaces
    assert drift.reference_values("15", "c", 0, "Haswell", path) == {"accuracy": 0.31}
    assert drift.reference_values("15", "c", 0, "Zen", path) == {"accuracy": 0.5}
    assert drift.reference_values("16", "c", 0, "Haswell", path) == {}
    assert len(pd.read_csv(path)) == 3
    assert drift.kernel_family() != ""


def test_drift_reference_script_records_this_kernels_values(tmp_path, data_dir):
    """``scripts/drift_reference.py --tables 2`` in a subprocess: the cheapest Table 2 cell's
    committed seeds, recorded under the subprocess's kernel family, equal to the committed rows
    (an ``original`` cell: no method there amplifies rounding)."""
    import subprocess
    import sys

    from spl_bench.paths import repo_root

    out = tmp_path / "ref.csv"
    env = {**os.environ, "SPL_BENCH_DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, str(repo_root() / "scripts" / "drift_reference.py"), "--tables", "2",
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    ref = pd.read_csv(out, dtype={"table": str})
    key, cell_id, _ = next(c for c in drift.drift_cells() if c[0] == "2")
    assert set(ref["table"]) == {"2"} and set(ref["cell"]) == {cell_id}
    assert set(ref["kernel"]) == {done.stdout.splitlines()[0].split(": ")[1]}
    committed = load_ours(TABLES["2"][0])
    committed = committed[(committed["cell"] == cell_id) & committed["seed"].isin(drift.DRIFT_SEEDS)]
    merged = ref.merge(committed, on=["seed", "metric"], suffixes=("", "_committed"))
    assert len(merged) == len(committed) > 0
    np.testing.assert_allclose(merged["value"], merged["value_committed"], rtol=1e-6, atol=1e-9)
    assert "as committed" in done.stdout


def test_authors_variant_composes_the_authors_noise():
    cls = table_cells("2", ["original"], ["pendigits"], "authors")[0]
    assert cls.rows_name == "gaga_table2@authors"
    cfg = compose_cell(cls)
    assert cfg.noise.kind == "near_boundary_flip" and cfg.noise.options.count == "pool"
    assert cfg.protocol.noise_scope == "all" and cfg.noise.rate == 0.3
    reg = compose_cell(table_cells("2", ["original"], ["music"], "authors")[0])
    assert reg.noise.kind == "gaussian_shift" and reg.protocol.noise_scope == "train"
    base = table_cells("2", ["original"], ["pendigits"])[0]
    assert cell_hash(cfg) != cell_hash(compose_cell(base))
    with pytest.raises(Exception, match="variant"):
        table_cells("2", variant="nope")


def test_authors_protocol_variant_composes_the_authors_whole_protocol():
    reg = compose_cell(table_cells("2", ["gaga"], ["music"], "authors_protocol")[0])
    assert (reg.protocol.splits, reg.protocol.scaling, reg.protocol.selection) == ("kfold20", "authors", "test")
    assert reg.noise.kind == "gaussian_shift" and reg.noise.rate == 0.3 and reg.model.name == "lasso"
    cls = compose_cell(table_cells("2", ["acs"], ["mfeat_pixel"], "authors_protocol")[0])
    assert cls.noise.kind == "near_boundary_flip" and cls.protocol.noise_scope == "all"
    assert dict(cls.data.binarize) == {"kind": "first_rows", "n": 500}  # their coding of mfeat-pixel
    pen = compose_cell(table_cells("2", ["acs"], ["pendigits"], "authors_protocol")[0])
    ours = compose_cell(table_cells("2", ["acs"], ["pendigits"])[0])
    assert dict(pen.data.binarize) == dict(ours.data.binarize)  # class >= 5 -> +1: the authors' coding already


def test_authors_protocol_rows_are_reported_as_rmse_under_test_selection(tmp_path):
    vals = {"acs": [0.04, 0.09], "gaga": [0.01, 0.16]}  # MSE per run: RMSE 0.2, 0.3 and 0.1, 0.4
    _fake_rows(tmp_path, vals, vals)
    (tmp_path / "gaga_table2").rename(tmp_path / "gaga_table2@authors_protocol")
    for f in (tmp_path / "gaga_table2@authors_protocol").glob("*__abc.csv"):
        write_row_file(read_row_file(f).assign(selection="test"), f)
    cells = cmp.compare_table("2", tmp_path).cells
    ours = cells[(cells["dataset"] == "music") & (cells["runs"] > 0)].set_index(["method", "selection"])
    assert set(ours.index.get_level_values("selection")) == {"test@authors_protocol"}
    assert ours.loc[("acs", "test@authors_protocol"), "ours_mean"] == pytest.approx(0.25)
    assert ours.loc[("gaga", "test@authors_protocol"), "ours_mean"] == pytest.approx(0.25)
    assert ours.loc[("gaga", "test@authors_protocol"), "ours_std"] == pytest.approx(np.std([0.1, 0.4], ddof=1))


def test_clean_variant_is_one_plain_model_cell_per_row_without_noise():
    # Table 8 sweeps two data sets x three noise rates x two methods: the reference is one
    # plain-model cell per data set, its noise rate 0
    cells = table_cells("8", variant="clean")
    assert [c.overrides for c in cells] == [("data=mfeat_pixel", "method=original"),
                                            ("data=pendigits", "method=original")]
    assert {c.rows_name for c in cells} == {"gaga_table8@clean"}
    cfg = compose_cell(cells[1])
    assert cfg.noise.rate == 0 and cfg.method.name == "original" and cfg.data.name == "pendigits"
    noisy = compose_cell(table_cells("8", ["robust_svm"], ["pendigits"])[0])
    assert cfg.model == noisy.model and cfg.protocol == noisy.protocol and noisy.noise.rate > 0
    # a table without an original column (Table 11) still gets its rows' plain model, per C
    t11 = table_cells("11", variant="clean")
    assert len(t11) == 19 and all(c.overrides[-1] == "method=original" for c in t11)
    with pytest.raises(Exception, match="GAGA tables"):
        table_cells("op2", variant="clean")


def _cells(rows):
    cols = ["row", "noise_rate", "param", "method", "metric", "selection", "ours_mean", "ours_std", "runs",
            "paper_mean", "paper_std", "z"]
    return pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows])


def test_table_lines_split_noise_rates_and_keep_per_method_parameters_together():
    """A row of the paper at several noise rates is several lines (Tables 13-16, 7), a shared
    parameter splits lines (Tables 9-12), and each method's own hyper-parameters (Table 7) do not."""
    sweep = _cells([("music", nr, "alpha=0.006", m, "gen_error", "validation", mean, 0.0, 1, mean + 0.01, 0.01, -1.0)
                    for nr in (0.1, 0.2) for m, mean in (("acs", 0.3 + nr), ("gaga", 0.2 + nr))])
    lines = row_summary(sweep, "validation")
    assert list(lines["noise"]) == ["0.1", "0.2"]
    assert lines.loc[0, "acs"].startswith("0.400") and lines.loc[1, "gaga"].startswith("**0.400")
    assert list(lines.columns)[-1] == "paper order holds"
    own = _cells([("ailerons", 0.1, p, m, "gen_error", "validation", 0.2, 0.0, 2, 0.3, 0.01, -10.0)
                  for p, m in (("e=0.2", "huber_lasso"), ("sigma=0.7", "rlssvm"), ("", "gaga"))])
    lines = row_summary(own, "validation")
    assert len(lines) == 1 and "param" not in lines.columns
    assert lines.loc[0, "huber_lasso"].endswith("[e=0.2]") and lines.loc[0, "rlssvm"].endswith("[sigma=0.7]")
    varied = _cells([("music", 0.3, f"alpha={a}", m, "gen_error", "validation", 0.2, 0.0, 1, 0.2, 0.01, 0.0)
                     for a in (0.001, 0.002) for m in ("acs", "gaga")])
    assert list(row_summary(varied, "validation")["param"]) == ["alpha=0.001", "alpha=0.002"]


def test_a_refresh_reruns_the_seeds_made_before_a_fix_and_replaces_their_rows(tmp_path, data_dir, monkeypatch):
    """``--refresh-made-before``: seeds whose ``code_version`` lacks the fix's commit (or names no
    commit) are run again and their rows replaced; seeds made with the fix stay, and a second
    refresh has nothing to do.  The ancestry is a fake history (``old`` < ``fix`` < ``new``)."""
    from spl_bench.runner.plan import made_before

    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    states = cell_states([cell], tmp_path)
    assert rp.run_tables(states, 3, log=lambda _: None, root=tmp_path) == {}
    path = states[0].file
    rows = read_row_file(path)
    first = rows.copy()
    rows["code_version"] = rows["seed"].map({0: "0.1.0+old", 1: "0.1.0+new", 2: "0.1.0+nogit"})
    rows["value"] = np.where(rows["seed"] == 1, rows["value"], -1.0)  # the "wrong" values of the old code
    write_row_file(rows, path)
    after = {("fix", "new"): True, ("fix", "old"): False}
    monkeypatch.setattr(commits, "resolve", lambda c: c if c in ("old", "fix", "new") else None)
    monkeypatch.setattr(commits, "_is_ancestor", lambda a, c: after.get((a, c)))
    fresh, old = made_before(cell_states([cell], tmp_path), "fix")
    assert old == {cell: [0, 2]} and fresh[0].done == {1}
    assert rp.pending_tasks(fresh, 3, None) == [(cell, 0), (cell, 2)]
    assert rp.run_tables(fresh, 3, log=lambda _: None, root=tmp_path) == {}
    got = read_row_file(path)
    assert sorted(got["seed"].unique()) == [0, 1, 2] and len(got) == len(first)
    # replaced by today's runs (an independent second computation: the same values as the first run)
    merged = got.merge(first, on=["seed", "metric"], suffixes=("", "_first"))
    assert np.allclose(merged["value"], merged["value_first"], rtol=1e-12, atol=0)
    assert (got.loc[got["seed"] == 1, "code_version"] == "0.1.0+new").all()
    assert not (got.loc[got["seed"] != 1, "code_version"].isin(["0.1.0+old", "0.1.0+nogit"])).any()
    with pytest.raises(Exception, match="no commit of this checkout"):
        made_before(cell_states([cell], tmp_path), "nonesuch")


def test_contains_reads_the_checkouts_history():
    """``commits.contains``: a version's commit includes its ancestors, not its descendants."""
    import subprocess

    from spl_bench.paths import repo_root

    out = subprocess.run(["git", "-C", str(repo_root()), "rev-list", "--max-count=2", "HEAD"],
                         capture_output=True, text=True)
    heads = out.stdout.split()
    if out.returncode != 0 or len(heads) < 2:
        pytest.skip("no git history in this checkout (a source archive)")
    head, parent = heads
    assert commits.contains(f"0.1.0+{head[:7]}", parent) is True
    assert commits.contains(f"0.1.0+{parent[:7]}", head) is False
    assert commits.contains("0.1.0+nogit", head) is None and commits.contains(None, head) is None
    assert commits.resolve(head[:7]) == head
    # a file as committed, read back through git: the bytes of the committed pyproject.toml; a path
    # that is not in the commit, or an unknown commit, gives None
    committed = subprocess.run(["git", "-C", str(repo_root()), "cat-file", "blob", f"{head}:pyproject.toml"],
                               capture_output=True).stdout
    assert committed and commits.show(head, "pyproject.toml") == committed
    assert commits.show(head, "no/such/file") is None and commits.show("nonesuch", "pyproject.toml") is None
    # the files that changed since the parent, below a folder: git's own list of the head commit's
    # files there (the work tree may add its uncommitted changes to it)
    listed = subprocess.run(["git", "-C", str(repo_root()), "diff-tree", "--no-commit-id", "--name-only", "-r",
                             head, "--", "src"], capture_output=True, text=True).stdout.split()
    assert set(listed) <= set(commits.changed_since(parent, "src"))
    assert commits.changed_since("nonesuch", "src") is None


def test_refresh_report_pairs_only_the_seeds_the_fix_replaced(tmp_path, monkeypatch):
    """``runner.refresh``: a seed is paired when its old row (at ``before``) lacks the fix and its new row
    has it; the summary counts the moves beyond 1e-8 relative and the runs that met a one-class age."""
    from spl_bench.runner import refresh

    def frame(values, versions, degenerate):
        rows = []
        for seed, (v, ver, d) in enumerate(zip(values, versions, degenerate, strict=True)):
            for metric, x in (("accuracy", v), ("selection_accuracy", 0.5)):
                rows.append({"seed": seed, "metric": metric, "value": x, "lam": 1.0, "code_version": ver,
                             "info": json.dumps({"n_degenerate_ages": d})})
        return pd.DataFrame(rows)

    old = frame([0.9, 0.8, 0.7], ["0.1.0+old", "0.1.0+old", "0.1.0+new"], [0, 0, 0])
    new = frame([0.9, 0.8 + 1e-12, 0.75], ["0.1.0+new", "0.1.0+new", "0.1.0+new"], [2, 0, 0])
    path = tmp_path / "gaga_table6" / "table_row=t6_x,method=acs__abc.csv"
    path.parent.mkdir()
    write_row_file(new, path)
    monkeypatch.setattr(refresh, "_at_commit", lambda p, before: old)
    monkeypatch.setattr(commits, "_is_ancestor", lambda a, c: {("fix", "new"): True, ("fix", "old"): False}.get((a, c)))
    pairs = refresh.refresh_pairs([path], "fix", "before")
    assert list(pairs["seed"]) == [0, 1]  # seed 2 was made with the fix already
    s = refresh.refresh_summary(pairs).iloc[0]
    assert (s["seeds"], s["seeds_degenerate"], s["values_moved"]) == (2, 1, 0)
    assert s["max_abs_move"] == pytest.approx(1e-12, rel=1e-3)
    moved = refresh.refresh_summary(pairs.assign(value_new=[0.9, 0.81])).iloc[0]
    assert moved["values_moved"] == 1 and moved["mean_new"] == pytest.approx(0.855, rel=1e-12)


def test_retime_cells_picks_the_seeds_of_the_version_that_made_most_of_the_cell():
    import importlib.util

    from spl_bench.paths import repo_root

    spec = importlib.util.spec_from_file_location("retime_cells", repo_root() / "scripts" / "retime_cells.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # type: ignore[union-attr]
    versions = ["old", "new", "new", "mid", "new", "mid"]
    rows = pd.DataFrame({"seed": [s for s in range(6) for _ in range(2)],  # two metric rows per seed
                         "code_version": [v for v in versions for _ in range(2)]})
    assert script.pick_seeds(rows, set(range(6)), 2) == [1, 2]
    assert script.pick_seeds(rows, {0, 3, 5}, 1) == [3]  # among the seeds done: "mid" twice, "old" once
    assert script.pick_seeds(rows.assign(code_version=["a", "a", "b", "b"] * 3), set(range(6)), 1) == [0]  # a tie
    assert script.pick_seeds(rows.drop(columns="code_version"), {4, 2, 5}, 2) == [2, 4]


def test_re_timings_of_an_opt_in_option_do_not_price_the_cell(tmp_path):
    """A re-timing whose code version names an option after the commit timed another method: the
    newest plain version's rows price the cell."""
    path = tmp_path / "retimed.csv"
    timings = ((337.0, "0.1.0+aaa"), (213.0, "0.1.0+bbb+newton_step_check"))
    pd.DataFrame([{"rows_name": "gaga_table5", "cell_id": "c", "seed": 0, "cpu_s": cpu, "committed_s": 372.0,
                   "code_version": v} for cpu, v in timings]).to_csv(path, index=False)
    ((key, rows),) = list(retimed_rows(path))
    assert key == ("gaga_table5", "c") and list(rows["cpu_s"]) == [337.0]
    assert retimed(path) == {("gaga_table5", "c"): 337.0}
