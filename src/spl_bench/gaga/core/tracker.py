"""The GAGA path-following engine (GAGA Algorithm 2, appendix C).

One engine for every model x SP-regularizer pair: a :class:`~spl_bench.gaga.core.system_base.PathSystem`
supplies ``F = 0`` (eq. (5)) for the current index sets, its Jacobians and its
event functions; the engine

1. starts from a converged ACS solution at ``lam_min`` (polished by Newton on ``F``);
2. follows ``dtheta/dlam = -J_theta^{-1} J_lam`` (Theorem 3) with a scipy ODE
   stepper (tight tolerances, dense output; by default RK45, handing a segment
   over to LSODA when it looks stiff), driven step by step so that all
   set-boundary events are checked at once, vectorised, after each step;
3. locates the first event inside a step on the step's dense output (grid scans,
   then secant / regula falsi on Newton-projected points), moves the violating
   indices (appendix C) and checks that the new sets give a valid continuation
   (the KKT conditions of the v*-weighted problem keep holding: residual of ``F``
   unchanged and every event function non-negative just after the point).  If so
   it is a *turning point*; otherwise a *jump point*: ACS is warm-started at ``lam + delta`` and a
   restart is counted.  A sign change of ``det J`` (a fold of the path) or a
   solver failure is also a jump point.

Every recorded point is projected back onto ``F = 0`` by a few Newton steps,
so the recorded path is exact to the Newton tolerance, not to the ODE tolerance.

This module holds the tracker, :class:`_Tracker`: the segment loop (:meth:`~_Tracker.start`,
:meth:`~_Tracker.follow`), progress reports and the path it returns.  Its state is one
:class:`~spl_bench.gaga.core.state.TrackState` (inputs, recorded points, events, counters), shared
by its collaborators, one module each; each receives the state and the collaborators it calls
in its constructor:

* :class:`~spl_bench.gaga.core.equation.PathEquation` (``equation``): the tangent ``rhs``, the event
  functions and the Newton projection onto ``F = 0``; calls no collaborator;
* :class:`~spl_bench.gaga.core.record.Recorder` (``recorder``): the recorded points; calls the
  equation;
* :class:`~spl_bench.gaga.core.warm.WarmStarts` (``warm``): ACS warm starts and the Newton polish
  (``acs_step``, ``spl_objective``; step 1 and every jump); calls the equation;
* :class:`~spl_bench.gaga.core.critical.CriticalPoints` (``critical``): turning points, jump points
  and folds; calls the equation, the recorder and the warm starts;
* :class:`~spl_bench.gaga.core.events.EventLocator` (``locator``): the first crossing inside a step
  (``illinois``; step 3); calls the equation;
* :class:`~spl_bench.gaga.core.stepping.Stepper` (``stepper``): the segments, by the ODE solvers,
  the predictor-corrector or the compiled follower (step 2); calls the equation, the recorder,
  the locator, the critical points and the tracker's :meth:`~_Tracker.report`.

The tracker calls the stepper, the warm starts and the recorder.  The options are in
:mod:`~spl_bench.gaga.core.options` (``EngineOptions``, ``ODE_METHODS``), the merged duplicate
columns in :mod:`~spl_bench.gaga.core.columns` (``ColumnGroups``).  The entry point
:func:`~spl_bench.gaga.api.age_path` (and plain :func:`~spl_bench.gaga.api.acs`), which picks the
model's system, is in :mod:`spl_bench.gaga.api`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.critical import CriticalPoints
from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.events import EventLocator
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.path import AgePath
from spl_bench.gaga.core.record import Recorder
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.stepping import Stepper
from spl_bench.gaga.core.system_base import PathSystem
from spl_bench.gaga.core.warm import WarmStarts
from spl_bench.models import Model, Params
from spl_bench.sp import SPRegularizer

__all__ = ["PROGRESS_INTERVAL", "_Tracker"]

Array = NDArray[np.float64]

#: seconds between two calls of the ``progress`` callback of :func:`age_path` from inside a segment
#: (the call at the end of every segment is always made)
PROGRESS_INTERVAL = 0.25
#: two events this close in age (relative to max(1, lam)) are at the same age for :func:`undone`'s rule:
#: the ages of one critical point met again differ by rounding (measured up to 7e-12 on Table 11)
CHATTER_RTOL = 1e-9


def chattering(events: list[dict[str, Any]]) -> bool:
    """Whether the last two events are one critical point met twice: turning points at the same age
    (:data:`CHATTER_RTOL`) whose moves undo each other (:func:`undone`).  Such an event leaves the
    sets and the point as they were, so the segment after it meets the same crossing at the same age
    again, until the tracker forces progress (a warm start ``delta`` on, from the same point): after
    the second such event rather than after 20 repeats.  Measured on Table 11 (C 1.0, seed 19): 52
    such points met 24 times each on average, 1,263 of the path's 2,319 events and 23 % of its CPU."""
    if len(events) < 2:
        return False
    a, b = events[-2], events[-1]
    return (a["kind"] == b["kind"] == "turning" and abs(b["lam"] - a["lam"]) <= CHATTER_RTOL * max(1.0, b["lam"])
            and undone(a.get("moves", ())) and undone(b.get("moves", ())))


def undone(moves: Any) -> bool:
    """Whether an event's moves ``(index, from, to)`` undo each other: every index ends in the set it
    started from (e.g. ``E_Z -> M`` then ``M -> E_Z`` at a point where the sample only touches the
    boundary of its set); an event without moves is not one."""
    net: dict[int, list[str]] = {}
    for i, a, b in moves:
        net.setdefault(int(i), [a, b])[1] = b
    return bool(net) and all(a == b for a, b in net.values())


class _Tracker:
    """One path computation: its state, its collaborators, the segment loop and progress reports.

    ``state`` holds what the path depends on and what it has recorded (the counters of its
    ``meta`` too); the numerics are in the collaborators (see the module).  Its instances are
    pickled whole by the checkpoints (:mod:`~spl_bench.gaga.core.checkpoint`).
    """

    def __init__(self, system: PathSystem, model: Model, sp: SPRegularizer, X: Array, y: Array,
                 opts: EngineOptions) -> None:
        self.state = TrackState(system, model, sp, X, y, opts)
        self.equation = PathEquation(self.state)
        self.recorder = Recorder(self.state, self.equation)
        self.warm = WarmStarts(self.state, self.equation)
        self.critical = CriticalPoints(self.state, self.equation, self.recorder, self.warm)
        self.locator = EventLocator(self.state, self.equation)
        self.stepper = Stepper(self.state, self.equation, self.recorder, self.locator, self.critical, self.report)
        self.progress: Callable[[float, int], None] | None = None  # called with (age, events so far)
        self._progress_next = -np.inf  # time.monotonic() of the next progress call
        self._progress_lam = -np.inf  # the furthest age reported

    # ----------------------------------------------------------------- main
    def start(self, lam_min: float, init: Params | None, lam_max: float | None = None) -> float:
        """The first point: ACS's partial optimum at ``lam_min``; returns the age the path starts at.

        Where ACS from ``init`` (default: the v = 1 fit, as the authors' driver starts from the
        plain model's losses) ends on a degenerate partial optimum at ``lam_min`` (one class
        selected: :meth:`~spl_bench.models.base.Model.degenerate_selection`) and
        ``EngineOptions.degenerate_start`` is ``"advance"``, the path starts at the first age
        up to ``lam_max`` where it does not (:meth:`WarmStarts.first_proper_age
        <spl_bench.gaga.core.warm.WarmStarts.first_proper_age>`); ``meta["start_lam"]``.
        """
        st, warm = self.state, self.warm
        if init is None:
            init = st.sys.initial_fit()
        # the start is ACS's own partial optimum (a polish straight from the v = 1 fit can
        # land on another one): ACS first, Newton only once ACS contracts
        warm.warm_start(lam_min, init, polish_first=False)
        lam0 = lam_min
        if warm.degenerate(lam_min):
            st.n_degenerate_acs += 1
            if st.o.degenerate_start == "advance" and lam_max is not None:
                lam0 = warm.first_proper_age(lam_min, lam_max, init)
        st.start_lam = lam0
        st.n_restarts = 0
        self.recorder.record(lam0, "start")
        st.lam = lam0
        st.last_event = -np.inf
        st.repeats = 0
        return lam0

    def follow(self, lam_max: float, after_segment: Callable[[], None] | None = None) -> None:
        """Segment after segment from the state's ``lam`` to ``lam_max``; ``after_segment`` is called
        between two segments (the checkpoints of :func:`age_path`)."""
        st = self.state
        o = st.o
        st.lam_end = lam_max
        while st.lam < lam_max and len(st.events) < o.max_events:
            n_events = len(st.events)
            lam = self.stepper.segment(st.lam, lam_max)
            self.report(min(lam, lam_max), force=True)
            new = len(st.events) > n_events
            # a segment that ended further on without a critical point (a compiled call that filled
            # its buffer, COMPILED_CAP records) repeats nothing; one that made no progress does
            if st.events and (new or lam <= st.lam):
                ev = st.events[-1]["lam"]
                st.repeats = st.repeats + 1 if ev - st.last_event <= 1e-12 * max(1.0, ev) else 0
                st.last_event = ev
                if st.repeats > 20 or (new and chattering(st.events)):
                    # chattering between sets: force progress with a warm start
                    st.n_chatter_stops += 1
                    before = st.sys.params()
                    lam = min(lam + o.delta * max(1.0, lam), lam_max)
                    self.warm.warm_start(lam, before)
                    st.seg += 1
                    self.recorder.record(lam, "after")
                    st.repeats = 0
            st.lam = lam
            if after_segment is not None and st.lam < lam_max:
                after_segment()

    def report(self, lam: float, force: bool = False) -> None:
        """Call ``progress`` with the furthest age reached and the critical points so far.

        At most once per ``PROGRESS_INTERVAL`` seconds unless ``force`` (the end of a segment; a
        long segment without critical points reports from its solver steps); reads the state only.
        """
        if self.progress is None:
            return
        self._progress_lam = max(self._progress_lam, lam)
        now = time.monotonic()
        if force or now >= self._progress_next:
            self._progress_next = now + PROGRESS_INTERVAL
            self.progress(self._progress_lam, len(self.state.events))

    def warm_start(self, lam: float, params: Params, polish_first: bool = True) -> bool:
        """ACS from ``params`` at ``lam``, finished by Newton (:meth:`WarmStarts.warm_start
        <spl_bench.gaga.core.warm.WarmStarts.warm_start>`): the system is left at the point found."""
        return self.warm.warm_start(lam, params, polish_first)

    # ------------------------------------------------------------ the path
    def to_path(self, meta: dict[str, Any]) -> AgePath:
        """The recorded points and events as an :class:`~spl_bench.gaga.core.path.AgePath` with ``meta``."""
        st = self.state
        vecs = np.array(st.vecs)
        dv = np.array(st.dvecs)
        svm = meta["model"] == "svm"
        ev = []
        for e in st.events:
            # lam, kind, moves, a jump's reason, and what a system notes on an event (the SVM's set-change log)
            ev.append({**e, "lam": e["lam"], "kind": e["kind"], "moves": [list(m) for m in e["moves"]]})
        return AgePath(
            lambdas=np.array(st.lams),
            coef=None if svm else vecs,
            dual_coef=vecs if svm else None,
            intercept=np.array(st.bs),
            d_vec=dv,
            d_intercept=np.array(st.dbs),
            segment=np.array(st.segs, dtype=int),
            point_kind=np.array(st.kinds),
            events=ev,
            n_restarts=st.n_restarts,
            meta=meta,
        )
