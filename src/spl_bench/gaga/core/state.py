"""The state of one path computation, shared by the tracker and its collaborators.

:class:`TrackState` is plain data: the inputs (the path system, the model, the SP-regularizer,
the data, the engine options), the recorded points and events, the segment loop's position and
the counters that go into the path's ``meta``.  The tracker (:mod:`~spl_bench.gaga.core.tracker`)
creates one and hands it to each of its collaborators (:mod:`~spl_bench.gaga.core.equation`,
:mod:`~spl_bench.gaga.core.record`, :mod:`~spl_bench.gaga.core.warm`,
:mod:`~spl_bench.gaga.core.critical`, :mod:`~spl_bench.gaga.core.events`,
:mod:`~spl_bench.gaga.core.stepping`), which read and update it; what each of them keeps for
itself (the path equation's memos, the set-change note of the latest event) is its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.system_base import PathSystem
from spl_bench.models import Model
from spl_bench.sp import SPRegularizer

Array = NDArray[np.float64]


@dataclass(eq=False)
class TrackState:
    """Inputs, recorded points, events, the loop's position and the counters of one path computation."""

    # ----------------------------------------------------------- inputs
    sys: PathSystem
    model: Model
    sp: SPRegularizer
    X: Array
    y: Array
    o: EngineOptions
    # --------------------------------------------- recorded points (one entry each) and events
    lams: list[float] = field(default_factory=list)
    vecs: list[Array] = field(default_factory=list)
    bs: list[float] = field(default_factory=list)
    dvecs: list[Array] = field(default_factory=list)
    dbs: list[float] = field(default_factory=list)
    segs: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    seg: int = 0  # the current segment's number
    # ------------------------------------------------------------------ counters (the path's meta)
    n_restarts: int = 0
    n_singular: int = 0  # right-hand sides with J singular (duplicated samples / columns included)
    n_lstsq: int = 0  # of those, solved by the least-squares fallback (not by merging duplicates)
    n_steps: int = 0
    n_rhs: int = 0
    n_failed_warm_starts: int = 0
    n_stiff_switches: int = 0  # segments handed from RK45 to LSODA (method "auto")
    n_fold_retakes: int = 0  # steps an ODE route took again by the predictor-corrector at a fold
    n_compiled_calls: int = 0  # calls of the compiled follower (method "compiled")
    n_compiled_events: int = 0  # critical points it handled
    n_compiled_handbacks: int = 0  # segments it handed back to the ODE route
    n_retaken_steps: int = 0  # steps retaken shorter: no partial optimum at their end
    n_stalled_segments: int = 0  # segments ended by a stall (continuation.STALL_STEPS; PC or compiled route)
    n_chatter_stops: int = 0  # warm starts that ended a critical point met again and again at one age (tracker)
    compiled_short: int = 0  # the compiled follower's short accepted steps in a row, over its FULL calls
    n_acs_skips: int = 0  # affine extrapolations in warm starts (acs_skip_ahead)
    n_acs_skipped: int = 0  # ACS iterations they skipped (a jump to a piece's fixed point: not counted)
    n_polish_cycles: int = 0  # trial polishes given up because the re-assignment of the sets cycled
    n_resumes: int = 0  # times the computation was resumed from a checkpoint (age_path)
    n_degenerate_acs: int = 0  # ACS runs (start, scans, warm starts) that ended on a degenerate point
    start_lam: float = np.nan  # the age the path starts at (lam_min unless a degenerate start moved it)
    degenerate_reason: str = ""  # why the path is degenerate, when it is (one line)
    #: ``[lam_a, lam_b]`` where no two-class point was found after a jump (the path resumes at lam_b)
    degenerate_gaps: list[list[float]] = field(default_factory=list)
    # ------------------------------------- the segment loop's position (_Tracker.follow)
    lam: float = -np.inf  # age reached
    lam_end: float = np.inf  # the age the path is followed to (jumps advance through gaps up to it)
    last_event: float = -np.inf  # latest event age
    repeats: int = 0  # critical points in a row at that age

    def append(self, lam: float, vec: Array, b: float, dvec: Array, db: float, kind: str) -> None:
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

    def drop_after(self, lam: float) -> None:
        """Drop the points of the current segment recorded past ``lam`` (a fold)."""
        while self.lams and self.lams[-1] > lam and self.segs[-1] == self.seg:
            for lst in (self.lams, self.vecs, self.bs, self.dvecs, self.dbs, self.segs, self.kinds):
                lst.pop()

    def last_point(self) -> tuple[Array, float, Array, float]:
        """The latest recorded point and its derivative ``(vec, b, dvec, db)``."""
        return self.vecs[-1], self.bs[-1], self.dvecs[-1], self.dbs[-1]
