"""The predictor-corrector stepper (``gaga/core/continuation.py``) on path equations of known behaviour:
a stall at the corrector's noise floor ends the branch, an ordinary path is followed to its end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spl_bench.gaga.core.continuation import STALL_STEP, STALL_STEPS, PredictorCorrector
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.rowfiles import read_row_file
from spl_bench.runner import reproduce as rp
from spl_bench.runner.cells import cell_hash, compose_cell, table_cells


class _Equation:
    """The path ``theta(lam) = (sin lam, lam^2)``; the corrector converges (residual 0) only when the
    step from the latest tangent evaluation is at most ``reach`` (else residual 1, a failed projection),
    as a corrector whose residual floor sits at its acceptance threshold behaves (``reach=inf``: always)."""

    def __init__(self, reach: float) -> None:
        self.reach = reach
        self.anchor = -np.inf
        self.last_factor = None
        self.last_sign = 1.0
        self.n_rhs = 0

    @staticmethod
    def exact(lam: float) -> np.ndarray:
        return np.array([np.sin(lam), lam**2])

    def rhs(self, lam: float, ext: np.ndarray) -> np.ndarray:
        self.n_rhs += 1
        self.anchor = max(self.anchor, lam)
        return np.array([np.cos(lam), 2 * lam, 0.0])

    def newton(self, theta: np.ndarray, lam: float, chord: object = None) -> tuple[np.ndarray, float]:
        if lam - self.anchor > self.reach:
            return theta, 1.0
        return self.exact(lam), 0.0


def _solver(eq: _Equation, t0: float, t_bound: float) -> PredictorCorrector:
    y0 = np.append(eq.exact(t0), 0.0)
    return PredictorCorrector(eq, EngineOptions(), t0, y0, t_bound, max_step=0.25)  # type: ignore[arg-type]


def test_steps_stalled_at_the_correctors_noise_floor_end_the_branch() -> None:
    # every accepted step is at most 5e-10 (relative 2.5e-10 at lam = 2), far below STALL_STEP: after
    # STALL_STEPS - 1 of them the next one is not taken and the branch ends where they stopped
    eq = _Equation(reach=5e-10)
    solver = _solver(eq, 2.0, 3.0)
    n_accepted = 0
    assert STALL_STEPS <= 10_000
    for _ in range(20_000):  # a bound of its own: without the rule the steps would go on for 2e9 steps
        if solver.status != "running":
            break
        solver.step()
        n_accepted += solver.status == "running"
    assert solver.status == "failed"
    assert solver.branch_end and solver.stalled
    assert n_accepted == STALL_STEPS - 1
    # the age moved by the short steps only, and the last accepted point is a point of the path
    assert 0.0 < solver.t - 2.0 <= (STALL_STEPS - 1) * 5e-10 * (1 + 1e-12)
    np.testing.assert_allclose(solver.y[:-1], eq.exact(solver.t), rtol=0, atol=1e-15)


def test_a_corrector_that_fails_beyond_the_shortest_step_is_a_branch_end_not_a_stall() -> None:
    # the corrector fails on every step (reach below the step floor 1e-12 max(1, lam)): the classic
    # branch end, with no accepted step
    eq = _Equation(reach=1e-14)
    solver = _solver(eq, 2.0, 3.0)
    solver.step()
    assert solver.status == "failed" and solver.branch_end and not solver.stalled
    assert solver.t == 2.0


@pytest.mark.parametrize("t0", [0.0, 5.0])
def test_an_ordinary_path_is_followed_to_its_end_without_a_stall(t0: float) -> None:
    eq = _Equation(reach=np.inf)
    solver = _solver(eq, t0, t0 + 2.0)
    n_steps = 0
    while solver.status == "running":
        solver.step()
        n_steps += 1
    assert solver.status == "finished" and not solver.stalled and not solver.branch_end
    assert solver.t == t0 + 2.0
    assert n_steps < STALL_STEPS  # a smooth path takes steps far above STALL_STEP
    # the dense output of the last step holds the path to the interpolant's tolerance (O(h^4))
    dense = solver.dense_output()
    mid = 0.5 * (dense.t_old + dense.t)
    np.testing.assert_allclose(dense(mid)[:-1], eq.exact(mid), rtol=0, atol=1e-6)
    assert STALL_STEP * max(1.0, abs(t0)) < solver.step_size


@pytest.mark.slow
def test_the_run_that_stalled_ends_and_reproduces_its_committed_row(data_dir: Path) -> None:
    """Table 8, mfeat-pixel at noise 0.1, seed 15 (current rule): without the stall rule its path never
    ended (docs/gaga.md "Stalled segments"); with it the run ends with stalled segments counted, and
    gives the committed row's values (the row was made with the rule; 4 min)."""
    cell = next(c for c in table_cells("8", methods=["gaga"], data=["mfeat_pixel"], where=["noise.rate=0.1"]))
    assert not cell.current_rule  # Table 8 reads its current-rule rows as its own (it left the step rule)
    committed = read_row_file(cell.rows_file(cell_hash(compose_cell(cell))))
    committed = committed[committed["seed"] == 15]
    assert len(committed), "the committed row of seed 15 is missing"
    rows = rp.run_seed(cell, 15)
    assert json.loads(rows[0]["info"]).get("n_stalled_segments", 0) >= 1
    fresh = {r["metric"]: r["value"] for r in rows}
    for r in committed.itertuples():
        assert fresh[r.metric] == pytest.approx(r.value, rel=1e-6, abs=1e-9), r.metric
