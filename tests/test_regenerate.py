"""The regeneration check: the cheapest committed cell of each family, rerun and compared."""

from __future__ import annotations

import pytest

from spl_bench.runner.cells import table_cells
from spl_bench.runner.committed import store_of
from spl_bench.runner.plan import cell_states
from spl_bench.runner.regenerate import family_cells, regenerate


def _commit(state, root, seconds: float, value: float, environment: str | None) -> None:
    base = {"experiment": "gaga_table9", "seed": 0, "config_hash": state.config_hash, "time_s": seconds,
            "code_version": "0.1.0+test", "environment": environment}
    store_of(state, root).add([{**base, "metric": "gen_error", "value": value},
                               {**base, "metric": "selection_gen_error", "value": value + 0.25}])


def test_the_cheapest_row_of_each_family_is_rerun_and_compared(tmp_path):
    acs = table_cells("9", ["acs"], where=["model.params.alpha=0.001", "model.params.alpha=0.002",
                                           "model.params.alpha=0.003"])
    (gaga,) = table_cells("9", ["gaga"], where=["model.params.alpha=0.001"])
    a1, a2, a3, g = cell_states([*acs, gaga], tmp_path)
    _commit(a1, tmp_path, 5.0, 0.3, None)  # made before the lock
    _commit(a2, tmp_path, 1.0, 0.4, '{"numpy": "2.4.6"}')  # recorded: not a pre-lock row
    _commit(a3, tmp_path, 3.0, 0.5, None)  # the cheapest pre-lock row of ACS
    _commit(g, tmp_path, 100.0, 0.6, None)  # over the time limit
    chosen = family_cells(["9"], max_seconds=60.0, root=tmp_path)
    assert [st.cell for st, _ in chosen] == [a3.cell]
    every = family_cells(["9"], max_seconds=200.0, prelock_only=False, root=tmp_path)
    assert sorted(st.cell.cell_id for st, _ in every) == sorted([a2.cell.cell_id, g.cell.cell_id])

    (st, row), = chosen

    def same(cell, seed):  # a rerun giving the committed values
        return [{"metric": "gen_error", "value": 0.5}, {"metric": "selection_gen_error", "value": 0.75}]

    rec = regenerate(st, row, 0, run=same)
    assert rec["equal"] and rec["max_rel_diff"] == 0.0
    assert (rec["method"], rec["code_version"]) == ("acs", "0.1.0+test")

    def moved(cell, seed):  # gen_error moved by 1e-3 relative, the other metric by less
        return [{"metric": "gen_error", "value": 0.5005}, {"metric": "selection_gen_error", "value": 0.75 + 1e-9}]

    rec = regenerate(st, row, 0, run=moved)
    assert not rec["equal"] and rec["max_rel_diff"] == pytest.approx(1e-3, rel=1e-9)
