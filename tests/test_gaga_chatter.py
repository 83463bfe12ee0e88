"""A critical point met again and again at one age (``gaga/core/tracker.py``): events whose moves undo
each other, and the tracker's loop forcing progress after the second of them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.tracker import CHATTER_RTOL, _Tracker, chattering, undone


def test_moves_that_undo_each_other() -> None:
    assert undone([(7, "E_Z", "M"), (7, "M", "E_Z")])
    assert undone([(7, "E_Z", "M"), (3, "E_R", "E_Z"), (7, "M", "E_Z"), (3, "E_Z", "E_R")])
    assert not undone([(7, "E_Z", "M")])
    assert not undone([(7, "E_Z", "M"), (7, "M", "E_R")])  # back out of M, but into another set
    assert not undone([(7, "E_Z", "M"), (7, "M", "E_Z"), (3, "E_R", "E_Z")])  # one index stays moved
    assert not undone([])  # no move: not an event that undid anything


def _ev(lam: float, moves: list[tuple[int, str, str]], kind: str = "turning") -> dict[str, Any]:
    return {"lam": lam, "kind": kind, "moves": moves}


BACK = [(1193, "E_Z", "M"), (1193, "M", "E_Z")]


def test_chattering_is_the_same_undone_turning_point_twice() -> None:
    lam = 5.197204604416733
    assert not chattering([_ev(lam, BACK)])
    assert chattering([_ev(lam, BACK), _ev(lam + 7e-12, BACK)])  # ages equal to rounding (measured: 7e-12)
    assert not chattering([_ev(lam, BACK), _ev(lam + 10 * CHATTER_RTOL * lam, BACK)])  # another age
    assert not chattering([_ev(lam, [(1193, "E_Z", "M")]), _ev(lam, BACK)])  # the first one moved a sample
    assert not chattering([_ev(lam, BACK, "jump"), _ev(lam, BACK)])


class _Stepper:
    """Segments whose events are given in advance: each call appends the next event (or none; at the
    segment's start if the script's age is before it) and returns the event's age (the segment's end),
    or ``lam_max`` when the script is done."""

    def __init__(self, state: TrackState, script: list[dict[str, Any] | None]) -> None:
        self.state, self.script = state, list(script)

    def segment(self, lam0: float, lam_max: float) -> float:
        if not self.script:
            return lam_max
        ev = self.script.pop(0)
        if ev is None:
            return min(lam0 + 0.1, lam_max)
        ev = {**ev, "lam": max(ev["lam"], lam0)}  # a segment cannot end before it starts
        self.state.events.append(ev)
        return ev["lam"]


def _tracker(script: list[dict[str, Any] | None]) -> tuple[_Tracker, list[float]]:
    """A tracker whose stepper follows ``script`` and whose warm starts note their age."""
    tr = object.__new__(_Tracker)
    tr.state = TrackState(sys=SimpleNamespace(params=lambda: None), model=None, sp=None,  # type: ignore[arg-type]
                          X=np.zeros((1, 1)), y=np.zeros(1), o=EngineOptions())
    tr.state.lam = 1.0
    warm_ages: list[float] = []
    tr.stepper = _Stepper(tr.state, script)  # type: ignore[assignment]
    tr.warm = SimpleNamespace(warm_start=lambda lam, before: warm_ages.append(lam))  # type: ignore[assignment]
    tr.recorder = SimpleNamespace(record=lambda lam, kind: None)  # type: ignore[assignment]
    tr.progress = None
    return tr, warm_ages


def test_the_second_undone_event_at_one_age_forces_progress() -> None:
    lam = 2.5
    tr, warm_ages = _tracker([_ev(lam, BACK)] * 30)
    tr.follow(lam_max=3.0)
    st = tr.state
    # two events at lam, then the warm start delta on (the rule's own age), and the path goes on from there
    delta = st.o.delta * lam
    assert warm_ages[0] == pytest.approx(lam + delta, rel=1e-15)
    assert [e["lam"] for e in st.events[:2]] == [lam, lam]
    assert st.n_chatter_stops >= 1
    # each pair of chattering events is stopped at its second (the next pair is met at the new age):
    # 30 scripted events, 15 stops
    assert st.n_chatter_stops == 15 and len(warm_ages) == 15


def test_events_that_move_samples_for_good_are_left_to_the_repeat_rule() -> None:
    # the same age 25 times, each event moving a sample for good: only the old rule (more than 20
    # repeats at one age) stops it, once
    lam = 2.5
    tr, warm_ages = _tracker([_ev(lam, [(i, "E_Z", "M")]) for i in range(25)])
    tr.follow(lam_max=3.0)
    assert tr.state.n_chatter_stops == 1 and len(warm_ages) == 1
    assert len(tr.state.events) == 25


def test_an_undone_event_alone_or_a_segment_without_events_forces_nothing() -> None:
    # undone events at two ages, each once, with segments without events between: nothing is forced
    tr, warm_ages = _tracker([_ev(1.5, BACK), None, None, _ev(1.9, BACK), None])
    tr.follow(lam_max=3.0)
    assert warm_ages == [] and tr.state.n_chatter_stops == 0
    # a chattering pair is stopped once; the segments after it add no event, and the last two events
    # (still the pair) force nothing more
    tr, warm_ages = _tracker([_ev(1.5, BACK), _ev(1.5, BACK), None, None])
    tr.follow(lam_max=3.0)
    assert tr.state.n_chatter_stops == 1 and len(warm_ages) == 1


def test_segments_that_end_further_on_without_events_are_no_repeats() -> None:
    # one critical point, then 30 segments that each end 0.1 further on without one (a compiled call
    # that filled its buffer): the path goes on to lam_max and nothing is forced.  Before, each such
    # segment counted as a repeat of the last critical point, and the 21st forced a warm start.
    tr, warm_ages = _tracker([_ev(1.5, [(4, "E_Z", "M")])] + [None] * 30)
    tr.follow(lam_max=10.0)
    assert warm_ages == [] and tr.state.n_chatter_stops == 0
    assert len(tr.state.events) == 1 and tr.state.lam == 10.0


class _StuckStepper:
    """One critical point, then segments that end where they started without another, until a warm start
    (``unstuck``) lets the next segment reach ``lam_max``."""

    def __init__(self, state: TrackState) -> None:
        self.state, self.unstuck, self.calls = state, False, 0

    def segment(self, lam0: float, lam_max: float) -> float:
        self.calls += 1
        if not self.state.events:
            self.state.events.append(_ev(lam0, [(4, "E_Z", "M")]))
        return lam_max if self.unstuck else lam0


def test_segments_that_make_no_progress_are_still_repeats() -> None:
    # the old rule's safety net stays: more than 20 segments in a row that end where they began force a
    # warm start (else the loop would never end)
    tr, warm_ages = _tracker([])
    stuck = _StuckStepper(tr.state)
    tr.stepper = stuck  # type: ignore[assignment]

    def warm_start(lam: float, before: Any) -> None:
        warm_ages.append(lam)
        stuck.unstuck = True

    tr.warm = SimpleNamespace(warm_start=warm_start)  # type: ignore[assignment]
    tr.follow(lam_max=1.5)
    assert len(warm_ages) == 1 and tr.state.n_chatter_stops == 1
    assert stuck.calls == 23  # the critical point's segment, 21 repeats, the segment after the warm start
    assert tr.state.lam == 1.5
