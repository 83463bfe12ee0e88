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

This module holds the tracker, :class:`_Tracker`: its state, the segment loop (:meth:`~_Tracker.start`,
:meth:`~_Tracker.follow`), progress reports and the recorded points.  Its numerics are mixins, one
module each:

* :mod:`~spl_bench.gaga.core.equation`: the tangent ``rhs``, the event functions and the Newton
  projection onto ``F = 0`` (``_PathEquation``);
* :mod:`~spl_bench.gaga.core.stepping`: the segments, by the ODE solvers or the compiled
  follower (``_Stepping``; step 2);
* :mod:`~spl_bench.gaga.core.events`: the first crossing inside a step (``_Events``, ``illinois``;
  step 3);
* :mod:`~spl_bench.gaga.core.critical`: turning points, jump points and folds (``_CriticalPoints``);
* :mod:`~spl_bench.gaga.core.warm`: ACS warm starts and the Newton polish (``_WarmStarts``,
  ``acs_step``, ``spl_objective``; step 1 and every jump).

The options are in :mod:`~spl_bench.gaga.core.options` (``EngineOptions``, ``ODE_METHODS``), the
merged duplicate columns in :mod:`~spl_bench.gaga.core.columns` (``ColumnGroups``); their names,
and those of the constants and functions of the modules above, are importable from here too.  The
entry point :func:`~spl_bench.gaga.api.age_path` (and plain :func:`~spl_bench.gaga.api.acs`), which
picks the model's system, is in :mod:`spl_bench.gaga.api`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.columns import ColumnGroups
from spl_bench.gaga.core.critical import _CriticalPoints
from spl_bench.gaga.core.equation import _PathEquation
from spl_bench.gaga.core.events import INTERIOR, _Events, illinois
from spl_bench.gaga.core.factors import AnyFactor
from spl_bench.gaga.core.options import _RUN_ONLY_OPTIONS, ODE_METHODS, ODE_SOLVERS, EngineOptions
from spl_bench.gaga.core.path import AgePath
from spl_bench.gaga.core.stepping import COMPILED_CAP, MAX_RETAKES, _Stepping
from spl_bench.gaga.core.system_base import PathSystem
from spl_bench.gaga.core.warm import _WarmStarts, acs_step, spl_objective
from spl_bench.models import Model, Params
from spl_bench.sp import SPRegularizer

__all__ = [
    "COMPILED_CAP",
    "INTERIOR",
    "MAX_RETAKES",
    "ODE_METHODS",
    "ODE_SOLVERS",
    "PROGRESS_INTERVAL",
    "_RUN_ONLY_OPTIONS",
    "ColumnGroups",
    "EngineOptions",
    "_Tracker",
    "acs_step",
    "illinois",
    "spl_objective",
]

Array = NDArray[np.float64]

#: seconds between two calls of the ``progress`` callback of :func:`age_path` from inside a segment
#: (the call at the end of every segment is always made)
PROGRESS_INTERVAL = 0.25


class _Tracker(_Stepping, _CriticalPoints, _Events, _WarmStarts, _PathEquation):
    """State of one path computation.

    The segment loop, the recorded points and the progress reports are here; stepping, event
    location, critical points, warm starts and the path equation come from the mixins (see the
    module).  Its instances are pickled whole by the checkpoints (:mod:`~spl_bench.gaga.core.checkpoint`).
    """

    def __init__(self, system: PathSystem, model: Model, sp: SPRegularizer, X: Array, y: Array,
                 opts: EngineOptions) -> None:
        self.sys = system
        self.model = model
        self.sp = sp
        self.X = X
        self.y = y
        self.o = opts
        self.lams: list[float] = []
        self.vecs: list[Array] = []
        self.bs: list[float] = []
        self.dvecs: list[Array] = []
        self.dbs: list[float] = []
        self.segs: list[int] = []
        self.kinds: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.seg = 0
        self.n_restarts = 0
        self.n_singular = 0  # right-hand sides with J singular (duplicated samples / columns included)
        self.n_lstsq = 0  # of those, solved by the least-squares fallback (not by merging duplicates)
        self.n_steps = 0
        self.n_rhs = 0
        self.n_failed_warm_starts = 0
        self.n_stiff_switches = 0  # segments handed from RK45 to LSODA (method "auto")
        self.n_compiled_calls = 0  # calls of the compiled follower (method "compiled")
        self.n_compiled_events = 0  # critical points it handled
        self.n_compiled_handbacks = 0  # segments it handed back to the ODE route
        self.n_retaken_steps = 0  # steps retaken shorter: no partial optimum at their end
        self.n_acs_skips = 0  # affine extrapolations in warm starts (acs_skip_ahead)
        self.n_acs_skipped = 0  # ACS iterations they skipped (a jump to a piece's fixed point: not counted)
        self.n_resumes = 0  # times the computation was resumed from a checkpoint (age_path)
        self.n_degenerate_acs = 0  # ACS runs (start, scans, warm starts) that ended on a degenerate point
        self.start_lam = np.nan  # the age the path starts at (lam_min unless a degenerate start moved it)
        self.degenerate_reason = ""  # why the path is degenerate, when it is (one line)
        # the segment loop's position (follow): age reached, latest event age, repeats at that age
        self.lam = -np.inf
        self.last_event = -np.inf
        self.repeats = 0
        self.last_factor: AnyFactor | None = None  # factorised J of the latest rhs evaluation
        self.last_sign = 0.0  # its sign of det J
        # ((lam, sets version), theta, rhs) of the latest rhs evaluation
        self._rhs_memo: tuple[tuple[float, int], Array, Array] | None = None
        self._events_memo: list[tuple[tuple[float, int], Array, Array]] = []
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
        up to ``lam_max`` where it does not (:meth:`first_proper_age`); ``meta["start_lam"]``.
        """
        if init is None:
            init = self.sys.initial_fit()
        # the start is ACS's own partial optimum (a polish straight from the v = 1 fit can
        # land on another one): ACS first, Newton only once ACS contracts
        self.warm_start(lam_min, init, polish_first=False)
        lam0 = lam_min
        if self.degenerate(lam_min):
            self.n_degenerate_acs += 1
            if self.o.degenerate_start == "advance" and lam_max is not None:
                lam0 = self.first_proper_age(lam_min, lam_max, init)
        self.start_lam = lam0
        self.n_restarts = 0
        self.record(lam0, "start")
        self.lam = lam0
        self.last_event = -np.inf
        self.repeats = 0
        return lam0

    def follow(self, lam_max: float, after_segment: Callable[[], None] | None = None) -> None:
        """Segment after segment from ``self.lam`` to ``lam_max``; ``after_segment`` is called
        between two segments (the checkpoints of :func:`age_path`)."""
        o = self.o
        self.lam_end = lam_max
        while self.lam < lam_max and len(self.events) < o.max_events:
            lam = self.segment(self.lam, lam_max)
            self.report(min(lam, lam_max), force=True)
            if self.events:
                ev = self.events[-1]["lam"]
                self.repeats = self.repeats + 1 if ev - self.last_event <= 1e-12 * max(1.0, ev) else 0
                self.last_event = ev
                if self.repeats > 20:  # chattering between sets: force progress with a warm start
                    before = self.sys.params()
                    lam = min(lam + o.delta * max(1.0, lam), lam_max)
                    self.warm_start(lam, before)
                    self.seg += 1
                    self.record(lam, "after")
                    self.repeats = 0
            self.lam = lam
            if after_segment is not None and self.lam < lam_max:
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
            self.progress(self._progress_lam, len(self.events))

    # ------------------------------------------------------------ recording
    def record(self, lam: float, kind: str = "step",
               deriv: tuple[Array, float] | None = None, values: tuple[Array, float] | None = None) -> None:
        """Record the system's current point at ``lam`` as a point of ``kind`` (``step``, ``start``,
        ``critical``, ``before``, ``after``): its full vector (or ``values``) and its derivative (from
        :meth:`rhs`, or ``deriv``)."""
        vec, b = self.sys.full_vector() if values is None else values
        if deriv is None:
            theta = self.sys.theta()
            d = self.rhs(lam, np.append(theta, 0.0))[:-1]
            dvec, db = self.sys.full_derivative(d)
        else:
            dvec, db = deriv
        self._append(lam, vec, b, dvec, db, kind)

    def _append(self, lam: float, vec: Array, b: float, dvec: Array, db: float, kind: str) -> None:
        """One recorded point of the current segment."""
        if self.lams and lam < self.lams[-1]:  # pragma: no cover - defensive
            raise RuntimeError("age-path went backwards")
        self.lams.append(float(lam))
        self.vecs.append(vec)
        self.bs.append(b)
        self.dvecs.append(dvec)
        self.dbs.append(db)
        self.segs.append(self.seg)
        self.kinds.append(kind)

    def to_path(self, meta: dict[str, Any]) -> AgePath:
        """The recorded points and events as an :class:`~spl_bench.gaga.core.path.AgePath` with ``meta``."""
        vecs = np.array(self.vecs)
        dv = np.array(self.dvecs)
        svm = meta["model"] == "svm"
        ev = []
        for e in self.events:
            # lam, kind, moves, a jump's reason, and what a system notes on an event (the SVM's set-change log)
            ev.append({**e, "lam": e["lam"], "kind": e["kind"], "moves": [list(m) for m in e["moves"]]})
        return AgePath(
            lambdas=np.array(self.lams),
            coef=None if svm else vecs,
            dual_coef=vecs if svm else None,
            intercept=np.array(self.bs),
            d_vec=dv,
            d_intercept=np.array(self.dbs),
            segment=np.array(self.segs, dtype=int),
            point_kind=np.array(self.kinds),
            events=ev,
            n_restarts=self.n_restarts,
            meta=meta,
        )
