"""The comparison of GAGA's step-rule rows with their reruns under the current rule (issue 62, step 3)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spl_bench.runner.cells import Cell
from spl_bench.runner.committed import store_of
from spl_bench.runner.plan import cell_states
from spl_bench.runner.rule_change import moved_values, rule_pairs, rule_summary


def _write(state, root, values: dict[int, tuple[float, float, int]]) -> None:
    for seed, (value, lam, n) in values.items():
        base = {"experiment": "gaga_table2", "seed": seed, "lam": lam, "config_hash": state.config_hash,
                "info": f'{{"n_candidates": {n}}}', "time_s": 1.0}
        store_of(state, root).add([{**base, "metric": "gen_error", "value": value},
                                   {**base, "metric": "selection_gen_error", "value": value + 1.0}])


def test_seeds_under_both_rules_are_paired_and_the_moves_counted(tmp_path, monkeypatch):
    from spl_bench.runner import cells

    # Table 2 on the step rule here
    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"2"}), cells.OLD_RULES["gaga"][1]))
    cell = Cell("2", "gaga_table2", ("+table_row=t2_houses_n30", "method=gaga"))
    (old,) = cell_states([cell], tmp_path)
    (new,) = cell_states([replace(cell, current_rule=True)], tmp_path)
    assert old.config_hash != new.config_hash
    _write(old, tmp_path, {0: (0.5, 1.0, 3000), 1: (0.25, 2.0, 3100), 2: (0.75, 3.0, 2900)})
    # seed 0 within rounding, seed 1 moved with its age, seed 2 not rerun, seed 3 only rerun
    _write(new, tmp_path, {0: (0.5 + 1e-12, 1.0, 1200), 1: (0.2525, 2.5, 1300), 3: (0.1, 1.0, 1250)})
    pairs = rule_pairs([cell], tmp_path)
    assert list(pairs["seed"]) == [0, 1] and set(pairs["metric"]) == {"gen_error"}
    assert list(pairs["value_step"]) == [0.5, 0.25]
    (row,) = rule_summary(pairs).itertuples(index=False)
    assert (row.rows, row.cells, row.seeds, row.values_moved, row.ages_moved) == ("gaga_table2", 1, 2, 1, 1)
    assert row.max_abs_move == pytest.approx(0.0025)
    assert (row.median_candidates_step, row.median_candidates_current) == (3050.0, 1250.0)
    # named by its rerun, the cell is the same comparison; the hashes do not depend on the registry
    assert rule_pairs([replace(cell, current_rule=True)], tmp_path).equals(pairs)
    from spl_bench.runner.rule_change import rule_hashes

    assert rule_hashes(cell) == (old.config_hash, new.config_hash)


@pytest.mark.parametrize("on_step_rule", [{"2"}, {"2@authors_protocol"}, set()])
def test_a_variants_gaga_cells_leave_the_step_rule_under_their_own_key(monkeypatch, on_step_rule):
    """A table's own GAGA cells and its equal-candidates cells (rows of the same fits) follow the key
    ``"2"``; the cells of another protocol variant follow ``"2@<variant>"``, rerun by a sweep of their own."""
    from spl_bench.runner import cells
    from spl_bench.runner.cells import compose_cell

    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset(on_step_rule), cells.OLD_RULES["gaga"][1]))
    overrides = ("+table_row=t2_music_n30", "method=gaga")
    rule = {v: compose_cell(Cell("2", "gaga_table2", overrides, v)).method.candidates
            for v in ("", "equal_candidates", "authors_protocol")}
    table, variant = ("steps" if "2" in on_step_rule else "critical_grid",
                      "steps" if "2@authors_protocol" in on_step_rule else "critical_grid")
    assert rule == {"": table, "equal_candidates": table, "authors_protocol": variant}


def test_a_seed_whose_path_changed_is_told_apart_from_a_candidate_move(tmp_path, monkeypatch):
    """A moved value on a path with another number of critical points was moved by the code since the
    step rule's row (the path), not by the candidates; one on the same path by the candidates."""
    from spl_bench.runner import cells

    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"2"}), cells.OLD_RULES["gaga"][1]))
    cell = Cell("2", "gaga_table2", ("+table_row=t2_houses_n30", "method=gaga"))
    (old,) = cell_states([cell], tmp_path)
    (new,) = cell_states([replace(cell, current_rule=True)], tmp_path)
    for state, counts in ((old, {0: 500, 1: 600, 2: 700}), (new, {0: 500, 1: 1200, 2: 700})):
        rows = [{"experiment": "gaga_table2", "seed": s, "lam": 1.0, "config_hash": state.config_hash,
                 "info": '{"n_candidates": 3000}', "time_s": 1.0, "metric": "gen_error", "n_critical_turning": n,
                 "n_critical_jump": 1, "value": 0.5 + (0.1 if state is new and s in (1, 2) else 0.0)}
                for s, n in counts.items()]
        store_of(state, tmp_path).add(rows)
    pairs = rule_pairs([cell], tmp_path)
    assert list(pairs["n_critical_step"]) == [501, 601, 701] and list(pairs["n_critical_current"]) == [501, 1201, 701]
    (row,) = rule_summary(pairs).itertuples(index=False)
    assert (row.values_moved, row.paths_changed, row.values_moved_same_path) == (2, 1, 1)
    assert list(moved_values(pairs)["seed"]) == [1, 2]


def test_mospl_rows_of_both_full_fits_are_paired_by_seed(tmp_path, monkeypatch):
    """MOSPL's old rule (the model's full fit) against its reruns with the exact one: the same pairing."""
    from spl_bench.runner import cells

    # Table 11 on MOSPL's old rule here
    monkeypatch.setitem(cells.OLD_RULES, "mospl", (frozenset({"11"}), cells.OLD_RULES["mospl"][1]))
    cell = Cell("11", "gaga_table11", ("model.params.C=1.0", "method=mospl"))
    (old,) = cell_states([cell], tmp_path)
    (new,) = cell_states([replace(cell, current_rule=True)], tmp_path)
    assert old.config_hash != new.config_hash
    from spl_bench.runner.rule_change import rule_hashes

    assert rule_hashes(cell) == (old.config_hash, new.config_hash)
    _write(old, tmp_path, {0: (0.808, 0.5, 150), 1: (0.8, 0.5, 150)})
    _write(new, tmp_path, {0: (0.824, 0.5, 150), 1: (0.8, 0.5, 150)})
    pairs = rule_pairs([cell], tmp_path)
    (row,) = rule_summary(pairs).itertuples(index=False)
    assert (row.seeds, row.values_moved, row.paths_changed) == (2, 1, 0)  # no critical points: no path to compare
    assert row.max_abs_move == pytest.approx(0.016)


def test_the_reruns_an_old_rule_owes_are_planned_under_the_current_rule(tmp_path, monkeypatch):
    """A GAGA cell of a table still on the step rule owes its rerun under the current rule; so does a
    MOSPL cell of a linear-kernel SVM table on MOSPL's old rule, not one of a lasso table (its old rule
    stays, docs/mospl.md); a table that left the rule owes nothing, nor does a method without one.
    The plan counts the reruns once, in its total, and says which they are."""
    from spl_bench.runner import cells
    from spl_bench.runner.plan import plan_lines

    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"9"}), cells.OLD_RULES["gaga"][1]))
    monkeypatch.setitem(cells.OLD_RULES, "mospl", (frozenset({"9", "12"}), cells.OLD_RULES["mospl"][1]))
    t9 = cells.table_cells("9", ["gaga", "mospl", "acs"], where=["model.params.alpha=0.001"])
    t12 = cells.table_cells("12", ["gaga", "mospl"], where=["model.params.C=1.0"])
    t13 = cells.table_cells("13", ["gaga"], where=["noise.rate=0.4"])
    owed = cells.old_rule_reruns(t9 + t12 + t13)
    assert [(c.table, cells.method_of(c)) for c in owed] == [("9", "gaga"), ("12", "mospl")]
    assert all(c.current_rule for c in owed) and cells.old_rule_reruns(owed) == []
    # one seed of the GAGA rerun made; none of the MOSPL one: 19 + 20 runs, both in the total
    states = cell_states(owed, tmp_path)
    states[0].done = {0}
    states[0].sec_per_run, states[1].sec_per_run = 10.0, 30.0
    lines = plan_lines(states, 20)
    total = next(line for line in lines if line.startswith("total:"))
    assert total.startswith("total: 39 runs left in 2 cells")
    (rerun,) = [line for line in lines if "under the current rule" in line]
    assert "of which 39 runs in 2 cells" in rerun and "gaga: 19 runs, tables 9; mospl: 20 runs, tables 12" in rerun
    assert "ETA 13 min" in rerun  # 19 * 10 + 20 * 30 = 790 s
    assert all("[current rule]" in line for line in lines[:2])
