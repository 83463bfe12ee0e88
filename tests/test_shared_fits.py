"""One fit, several selections: a cell and its equal-candidates cell written from the same fits.

A GAGA or ACS cell of Tables 2-3 and its equal-candidates cell differ only in the candidates the
selection is offered (``protocol.candidates``), so the sweep fits once and selects twice
(:func:`spl_bench.protocol.run_shared`, :func:`spl_bench.runner.cell_run.run_cells`).  The rows so
written must be the rows each cell gives when run alone; the reference here is each cell run on
its own, a second computation of the same configuration.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spl_bench.data.loaders import load_dataset
from spl_bench.errors import ConfigError
from spl_bench.methods.acs import ACS
from spl_bench.methods.gaga import GAGA
from spl_bench.protocol import NoiseConfig, ProtocolConfig, run_once, run_shared, shares_fit
from spl_bench.rowstore import read_cell
from spl_bench.runner import reproduce as rp
from spl_bench.runner.cell_run import prepare_cell, run_cells
from spl_bench.runner.cells import Cell, cell_hash, companion_cells, compose_cell, table_cells
from spl_bench.runner.committed import refresh_index, store_of
from spl_bench.runner.plan import cell_states
from spl_bench.table_registry import EQUAL_VARIANT, STEP_CANDIDATE_TABLES

KW = dict(model="lasso", model_params={"alpha": 0.005}, sp="linear", lam_min=0.1, lam_max=5.0)
#: two computations of one configuration on this machine agree to rounding (the same code, seeds, BLAS thread)
REL = 1e-12


def _same(a, b) -> None:
    assert a.value == pytest.approx(b.value, rel=REL, abs=1e-15)
    assert a.selection_score == pytest.approx(b.selection_score, rel=REL, abs=1e-15)
    assert a.lam == pytest.approx(b.lam, rel=REL)
    assert a.info["n_candidates"] == b.info["n_candidates"]
    assert a.info.get("candidate_set") == b.info.get("candidate_set")


@pytest.mark.parametrize("make", [lambda: GAGA(**KW), lambda: ACS(lam_step=0.5, **KW)], ids=["gaga", "acs"])
def test_one_fit_selects_as_each_protocol_alone(make):
    """Both orders of (own, shared_grid) give, per protocol, the outcome of its own run."""
    ds = load_dataset("diabetes")
    noise = NoiseConfig("target_gaussian", 0.3)
    own, shared = ProtocolConfig(n_runs=1), ProtocolConfig(n_runs=1, candidates="shared_grid")
    alone = [run_once(ds, make, p, noise, 1) for p in (own, shared)]
    for order in ((own, shared), (shared, own)):
        got = run_shared(ds, make, list(order), noise, 1)
        by = {p.candidates: o for p, o in zip(order, got, strict=True)}
        _same(by["own"], alone[0])
        _same(by["shared_grid"], alone[1])
        assert by["own"].fit_time == by["shared_grid"].fit_time  # one fit, its time on both rows
        assert by["own"].fit_cpu == by["shared_grid"].fit_cpu > 0
    assert alone[1].info["n_candidates"] < alone[0].info["n_candidates"] or make().__class__ is ACS


def test_protocols_that_fit_differently_do_not_share_a_fit():
    a = ProtocolConfig(n_runs=1)
    assert shares_fit(a, replace(a, candidates="shared_grid", candidate_step=0.25))
    for other in (replace(a, selection="test"), replace(a, val_size=0.3), replace(a, noise_scope="all")):
        assert not shares_fit(a, other)
    ds = load_dataset("diabetes")
    with pytest.raises(ConfigError, match="may differ only in candidates"):
        run_shared(ds, lambda: GAGA(**KW), [a, replace(a, selection="test")], NoiseConfig("none", 0.0), 0)


def test_companions_are_the_equal_candidates_cells_of_tables_2_and_3():
    gaga = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"))
    assert companion_cells(gaga) == [replace(gaga, variant=EQUAL_VARIANT)]
    assert companion_cells(replace(gaga, current_rule=True)) == [replace(gaga, variant=EQUAL_VARIANT,
                                                                         current_rule=True)]
    acs = Cell("3", "gaga_table3", ("+table_row=t3_houses_n30", "method=acs"))
    assert companion_cells(acs) == [replace(acs, variant=EQUAL_VARIANT)]
    assert companion_cells(Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=mospl"))) == []
    assert companion_cells(replace(gaga, variant=EQUAL_VARIANT)) == []
    assert all(companion_cells(c) == [] for c in table_cells("5", ["gaga", "acs"]))


def test_a_cell_and_its_companion_compose_to_one_fit_and_their_own_hashes():
    """Under the table's rule and under the current rule, the equal-candidates cell is its cell plus
    ``protocol.candidates=shared_grid``: the same fit, another hash."""
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"))
    hashes = set()
    for c in (cell, replace(cell, current_rule=True)):
        (twin,) = companion_cells(c)
        a, b = compose_cell(c), compose_cell(twin)
        step = c.table in STEP_CANDIDATE_TABLES and not c.current_rule
        assert a.method.candidates == b.method.candidates == ("steps" if step else "critical_grid")
        assert b.protocol.candidates == "shared_grid" and a.protocol.candidates == "own"
        hashes |= {cell_hash(a), cell_hash(b)}
    assert len(hashes) == (4 if cell.table in STEP_CANDIDATE_TABLES else 2)


def test_run_cells_refuses_cells_that_fit_differently(data_dir):
    gaga = prepare_cell(compose_cell(Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"))))
    acs = prepare_cell(compose_cell(Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=acs"))))
    with pytest.raises(ConfigError, match="differs .* in method"):
        run_cells([gaga, acs], 0)


def test_the_sweep_writes_a_cells_companion_from_its_fits(tmp_path, data_dir):
    """Seeds the cell lacks are written to both files from one fit; a seed only the companion lacks is
    fitted again for it alone, and the cell's own file is left as it was.  Each row equals the row its
    cell gives run alone.  The current rule's cells stay out of the index."""
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=acs"))
    (twin,) = companion_cells(cell)
    states = cell_states([cell], tmp_path)
    lines: list[str] = []
    assert rp.run_tables(states, 1, log=lines.append, root=tmp_path) == {}
    assert any("also gaga_table2@equal_candidates" in line for line in lines)
    (twin_state,) = cell_states([twin], tmp_path)
    assert twin_state.done == {0}
    alone = {r["metric"]: r["value"] for r in rp.run_seed(twin, 0)}
    written = read_cell(twin_state.file).set_index("metric")["value"]
    assert set(written.index) == set(alone)
    for metric, value in alone.items():
        assert written[metric] == pytest.approx(value, rel=REL)
    assert json.loads(read_cell(twin_state.file)["info"].iloc[0])["candidate_set"] == "shared_grid"
    assert (read_cell(twin_state.file)["cpu_s"].astype(float) > 0).all()  # the fit's CPU seconds, recorded
    # seed 1: the cell has it (written by hand here), its companion does not
    own_file = cell_states([cell], tmp_path)[0].file
    (st,) = cell_states([cell], tmp_path)
    store_of(st, tmp_path).add(rp.run_seed(cell, 1))
    before = own_file.read_bytes()
    (st,) = cell_states([cell], tmp_path)
    assert rp.pending_tasks([st], 2, None) == []
    assert rp.pending_tasks([st], 2, None, {cell: cell_states([twin], tmp_path)}) == [(cell, 1)]
    assert rp.run_tables([st], 2, log=lines.append, root=tmp_path) == {}
    assert own_file.read_bytes() == before
    assert cell_states([twin], tmp_path)[0].done == {0, 1}
    # the current rule: its rows are written, the index keeps the table's rule
    gaga = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"))
    refresh_index(cell_states([gaga], tmp_path), tmp_path)
    index = (tmp_path / "gaga_table2" / "index.csv").read_text()
    old_hash = cell_hash(compose_cell(gaga))
    now = replace(gaga, current_rule=True)
    refresh_index(cell_states([now], tmp_path), tmp_path)
    assert (tmp_path / "gaga_table2" / "index.csv").read_text() == index and old_hash in index


def test_a_rerun_without_seeds_is_priced_at_its_table_rule_cells_seconds(tmp_path, monkeypatch):
    """The plan's estimate for a current-rule cell with no seed yet is the step-rule cell's (same paths)."""
    from spl_bench.runner import cells

    # Table 2 on the step rule here
    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"2"}), cells.OLD_RULES["gaga"][1]))
    gaga = Cell("2", "gaga_table2", ("+table_row=t2_houses_n30", "method=gaga"))
    (ruled,) = cell_states([gaga], tmp_path)
    rows = [{"experiment": "gaga_table2", "seed": s, "metric": m, "value": 0.5, "time_s": t,
             "config_hash": ruled.config_hash, "code_version": "0.1.0+unknown"}
            for s, t in ((0, 100.0), (1, 140.0)) for m in ("gen_error", "selection_gen_error")]
    store_of(ruled, tmp_path).add(rows)
    (ruled,) = cell_states([gaga], tmp_path)
    assert ruled.sec_per_run == pytest.approx(120.0)
    (rerun,) = cell_states([replace(gaga, current_rule=True)], tmp_path)
    assert rerun.config_hash != ruled.config_hash and not rerun.done
    assert rerun.sec_per_run == pytest.approx(120.0) and rerun.seed_times == ruled.seed_times


def test_a_rerun_with_seeds_is_priced_by_pairing_them_with_its_table_rule_cells_same_seeds(tmp_path, monkeypatch):
    """``p``: a current-rule cell with fewer seeds than its paper's runs is priced at its table-rule
    cell's estimate times the ratio of the two rules' seconds on the seeds both have; at the paper's
    runs, its own seeds' mean."""
    from spl_bench.runner import cells
    from spl_bench.runner.plan import seconds_per_run

    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"2"}), cells.OLD_RULES["gaga"][1]))
    gaga = Cell("2", "gaga_table2", ("+table_row=t2_houses_n30", "method=gaga"))

    def add(cell: Cell, times: dict[int, float]) -> None:
        (st,) = cell_states([cell], tmp_path)
        store_of(st, tmp_path).add([{"experiment": "gaga_table2", "seed": s, "metric": m, "value": 0.5,
                                     "time_s": t, "config_hash": st.config_hash, "code_version": "0.1.0+unknown"}
                                    for s, t in times.items() for m in ("gen_error", "selection_gen_error")])

    # the table rule's seeds: the slow seed 0 and three fast ones, 250 s a run on average
    add(gaga, {0: 700.0, 1: 100.0, 2: 100.0, 3: 100.0})
    rerun = replace(gaga, current_rule=True)
    add(rerun, {0: 630.0})  # the slow seed, 10 % faster under the current rule
    (st,) = cell_states([rerun], tmp_path)
    assert st.ruled is not None and st.ruled.sec_per_run == pytest.approx(250.0)
    per, mark, own = seconds_per_run([st])[0]
    # 250 x 630 / 700 = 225 s, not the slow seed's 630 s
    assert mark == "p" and per == pytest.approx(225.0, rel=1e-12) and own == pytest.approx(630.0)
    add(rerun, {1: 80.0})  # two shared seeds: 250 x (630 + 80) / (700 + 100)
    assert seconds_per_run(cell_states([rerun], tmp_path))[0][0] == pytest.approx(250.0 * 710 / 800, rel=1e-12)
    add(rerun, {s: 90.0 for s in range(2, 20)})  # at the paper's 20 runs: its own mean
    per, mark, _ = seconds_per_run(cell_states([rerun], tmp_path))[0]
    assert mark == "" and per == pytest.approx((630.0 + 80.0 + 18 * 90.0) / 20, rel=1e-12)


def test_the_plan_prices_a_seed_by_its_cpu_seconds_where_its_row_has_them():
    import numpy as np
    import pandas as pd

    from spl_bench.runner.plan import seed_seconds

    seeds = pd.DataFrame({"time_s": [900.0, 50.0, 70.0], "cpu_s": [60.5, np.nan, ""]})
    assert list(seed_seconds(seeds)) == [60.5, 50.0, 70.0]  # a paused sweep's 900 s wall: 60.5 CPU-s
    assert list(seed_seconds(seeds.drop(columns="cpu_s"))) == [900.0, 50.0, 70.0]  # rows made before
    # a fit resumed from a checkpoint without the earlier CPU seconds: no measure (its cpu_s adds wall clock)
    infos = [json.dumps({"n_resumes": 1}), json.dumps({"n_resumes": 1, "cpu_before_resume_s": 20.0}),
             json.dumps({"n_resumes": 0})]
    got = seed_seconds(seeds.assign(info=infos, cpu_s=[2741.0, 61.0, 70.0]))
    assert np.isnan(got.iloc[0]) and list(got.iloc[1:]) == [61.0, 70.0]
    nan_cpu = json.dumps({"n_resumes": 2, "cpu_before_resume_s": float("nan")})
    assert np.isnan(seed_seconds(seeds.assign(info=[nan_cpu] * 3)).iloc[0])


def test_the_report_moves_a_cells_equal_candidates_index_with_it(tmp_path, monkeypatch):
    """When a table leaves the step rule, ``--report-only`` (``refresh_indexes``) points the cell's index
    entry and its equal-candidates cell's at the current rule's hashes together."""
    from spl_bench.rowstore import read_row_index
    from spl_bench.runner import cells
    from spl_bench.runner.reproduce import refresh_indexes

    gaga = Cell("2", "gaga_table2", ("+table_row=t2_houses_n30", "method=gaga"))
    for on_step_rule in ({"2"}, set()):
        monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset(on_step_rule), cells.OLD_RULES["gaga"][1]))
        refresh_indexes(cell_states([gaga], tmp_path), tmp_path)
        for cell in (gaga, *companion_cells(gaga)):
            index = read_row_index(tmp_path / cell.rows_name / "index.csv")
            assert list(index["config_hash"]) == [cell_hash(compose_cell(cell))]
    twin = replace(gaga, variant="equal_candidates", current_rule=True)
    assert list(index["config_hash"]) == [cell_hash(compose_cell(twin))]  # the current rule's, after the switch


def test_cells_of_one_configuration_in_two_tables_are_fitted_once(tmp_path, data_dir):
    """Table 10's alpha 0.006 and Table 14's noise rate 0.3 are one configuration (music, lasso, linear
    SP, 30 % noise): the sweep fits each seed once and writes both tables' rows, which are the rows each
    cell gives run alone; the plan counts the configuration once."""
    from spl_bench.runner.plan import from_scratch, plan_lines, runs_left, same_config_leaders

    a = Cell("10", "gaga_table10", ("model.params.alpha=0.006", "method=acs"))
    b = Cell("14", "gaga_table14", ("noise.rate=0.3", "method=acs"))
    states = cell_states([a, b], tmp_path)
    assert states[0].config_hash == states[1].config_hash
    assert same_config_leaders(states) == {b: a}
    assert runs_left(states, 2) == {a: 2, b: 0} and runs_left(states, 2, shared=False) == {a: 2, b: 2}
    assert rp.pending_tasks(states, 2, None, rp.companion_states(states, tmp_path)) == [(a, 0), (a, 1)]
    assert rp.pending_tasks(states, 1, None) == [(a, 0), (b, 0)]  # --no-shared-fits: each on its own
    lines: list[str] = []
    assert rp.run_tables(states, 1, log=lines.append, root=tmp_path) == {}
    assert [line for line in lines if "seed 0:" in line][0].endswith("also gaga_table14)")
    assert sum("seed 0:" in line for line in lines) == 1  # one fit
    sa, sb = cell_states([a, b], tmp_path)
    assert sa.done == sb.done == {0}
    rows_b = read_cell(sb.file)
    assert set(read_cell(sa.file)["experiment"]) == {"gaga_table10"} and set(rows_b["experiment"]) == {"gaga_table14"}
    alone = {r["metric"]: r["value"] for r in rp.run_seed(b, 0)}
    written = rows_b.set_index("metric")["value"]
    for metric, value in alone.items():
        assert written[metric] == pytest.approx(value, rel=REL)
    # a seed the first cell has and the other lacks: one fit for the other, the first's file unchanged
    store_of(sa, tmp_path).add(rp.run_seed(a, 1))
    sa, sb = cell_states([a, b], tmp_path)
    before = sa.file.read_bytes()
    assert runs_left([sa, sb], 2) == {a: 1, b: 0}
    assert rp.run_tables([sa, sb], 2, log=lines.append, root=tmp_path) == {}
    assert sa.file.read_bytes() == before and cell_states([b], tmp_path)[0].done == {0, 1}
    # the plan: one line names the cell it is fitted with, the from-scratch sum has the configuration once
    sa, sb = cell_states([a, b], tmp_path)
    text = "\n".join(plan_lines([sa, sb], 3))
    assert "fitted with gaga_table10" in text and "total: 1 runs left" in text
    (per, _), (per_b, _) = [(st.sec_per_run, st) for st in (sa, sb)]
    assert from_scratch([sa, sb])["acs"] == pytest.approx(20 * max(per, per_b), rel=1e-12)
