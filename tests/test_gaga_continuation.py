"""The predictor-corrector stepper (``gaga/core/continuation.py``) on path equations of known behaviour:
a stall at the corrector's noise floor ends the branch, an ordinary path is followed to its end; the
compiled follower's calls under the same stall rule (``Stepper.compiled_segment``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spl_bench.gaga.core.continuation import STALL_STEP, STALL_STEPS, PredictorCorrector
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.stepping import COMPILED_CAP, Stepper
from spl_bench.gaga.core.system_base import FULL, REACHED, CompiledRun
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


class _FollowedSystem:
    """What the stepper asks of a system after a compiled call: its current point."""

    def theta(self) -> np.ndarray:
        return np.zeros(2)


def _stepper() -> tuple[Stepper, list[float]]:
    """A stepper on a bare state, whose ``branch_end`` notes the age it is called at."""
    st = TrackState(sys=_FollowedSystem(), model=None, sp=None, X=np.zeros((1, 1)), y=np.zeros(1),  # type: ignore[arg-type]
                    o=EngineOptions(method="compiled"))
    ends: list[float] = []
    stepper = Stepper(st, None, None, None, None, report=lambda lam: None)  # type: ignore[arg-type]

    def branch_end(t: float, theta: np.ndarray, lam_max: float) -> float:
        ends.append(t)
        return t

    stepper.branch_end = branch_end  # type: ignore[method-assign]
    return stepper, ends


def _run(t0: float, steps: np.ndarray, status: int = FULL, kinds: list[str] | None = None) -> CompiledRun:
    """A compiled call from ``t0`` that recorded steps of the given lengths (kind ``step`` unless told)."""
    ages = t0 + np.cumsum(steps)
    kinds = kinds or ["step"] * len(steps)
    records = [(float(a), np.zeros(2), 0.0, np.zeros(2), 0.0, 0, k) for a, k in zip(ages, kinds, strict=True)]
    counts = np.array([0, 0, len(steps), 0, 0])
    return CompiledRun(status, records, [], float(ages[-1]), np.empty(0, dtype=np.intp), counts)


def test_compiled_calls_whose_steps_stall_end_the_branch_after_stall_steps_in_a_row() -> None:
    stepper, ends = _stepper()
    st = stepper.state
    t, n_calls = 2.0, 0
    short = np.full(COMPILED_CAP, 0.25 * STALL_STEP)  # relative 1.25e-9 at lam = 2: each one short
    while not ends:
        t_end = stepper.compiled_segment(_run(t, short), t, 3.0)
        n_calls += 1
        assert n_calls * COMPILED_CAP < STALL_STEPS + COMPILED_CAP, "the stall was not seen"
        t = t_end
    # the branch ends at the end of the first call that completes STALL_STEPS short steps in a row
    assert n_calls == -(-STALL_STEPS // COMPILED_CAP)
    assert ends == [pytest.approx(2.0 + n_calls * COMPILED_CAP * 0.25 * STALL_STEP, rel=1e-12)]
    assert st.n_stalled_segments == 1 and st.compiled_short == 0
    assert len(st.lams) == n_calls * COMPILED_CAP


def test_compiled_calls_with_ordinary_or_interrupted_short_steps_go_on() -> None:
    stepper, ends = _stepper()
    st = stepper.state
    # ordinary steps: each call's end is where the next starts
    t = 2.0
    for _ in range(8):
        t_next = stepper.compiled_segment(_run(t, np.full(COMPILED_CAP, 1e-3)), t, 3.0)
        assert t_next == pytest.approx(t + COMPILED_CAP * 1e-3)
        t = t_next
    assert st.compiled_short == 0
    # short steps, but a critical point in each call ends the run of them (a new segment starts there)
    kinds = ["step"] * COMPILED_CAP
    kinds[COMPILED_CAP // 2] = "critical"
    for _ in range(8):
        t = stepper.compiled_segment(_run(t, np.full(COMPILED_CAP, 1e-10), kinds=kinds), t, 10.0)
    assert not ends and st.n_stalled_segments == 0
    assert st.compiled_short < STALL_STEPS
    # a call that reaches lam_max clears the count
    stepper.compiled_segment(_run(t, np.full(3, 1e-10), status=REACHED), t, 10.0)
    assert st.compiled_short == 0


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
