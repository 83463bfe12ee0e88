"""What the tracker does at a critical point: a turning point, a jump point or a fold (appendix C).

:class:`CriticalPoints` is a collaborator of :class:`~spl_bench.gaga.core.tracker._Tracker` on its
:class:`~spl_bench.gaga.core.state.TrackState`.  At a located crossing
:meth:`~CriticalPoints.event` moves the violating indices and checks that the new sets continue
the path (a *turning point*); if they do not, or ``det J`` changed sign inside the step
(:meth:`~CriticalPoints.fold`), the point is a *jump point* (:meth:`~CriticalPoints.jump`): ACS is
warm-started a little further on (:class:`~spl_bench.gaga.core.warm.WarmStarts`) and a restart is
counted.  It calls the path equation (:class:`~spl_bench.gaga.core.equation.PathEquation`), the
recorder (:class:`~spl_bench.gaga.core.record.Recorder`) and the warm starts.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.factors import AnyFactor
from spl_bench.gaga.core.record import Recorder
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.warm import WarmStarts
from spl_bench.models import Params


class CriticalPoints:
    """Turning points, jump points and folds: the state's system, options, recorded points, events
    and counters; the path equation's ``newton``, ``rhs``, ``event_values``; the recorder's
    ``record``; the warm starts' ``warm_start``, ``degenerate``, ``first_proper_age``."""

    def __init__(self, state: TrackState, equation: PathEquation, recorder: Recorder, warm: WarmStarts) -> None:
        self.state = state
        self.equation = equation
        self.recorder = recorder
        self.warm = warm
        #: ``(event index, its old sets' mark, old segment's end, sets after)`` of the latest set-change note
        self._noted: tuple[int, Any, Any, Any] | None = None

    # ------------------------------------------------------- set-change log
    def _sets_mark(self) -> Any:
        """The system's sets now, for :meth:`_note_sets` (``None``: the system keeps no set log)."""
        mark = getattr(self.state.sys, "sets_mark", None)
        return None if mark is None else mark()

    def _note_sets(self, mark: Any, lam: float, old: Any) -> None:
        """Add to the latest event the net set change from ``mark`` (the old segment's sets, whose
        end is ``old``) to the sets of the segment just recorded at ``lam`` (its derivative is the
        last recorded one): ``set_change``, ``lam_sets``, ``degenerate_face``, ``rank_deficiency``
        (:meth:`~spl_bench.gaga.svm.svm_system.SVMSystem.set_change_note`)."""
        st = self.state
        if mark is None or not st.events:
            return
        k = len(st.events) - 1
        st.events[k].update(st.sys.set_change_note(k, mark, lam, old, st.last_point()))
        self._noted = (k, mark, old, self._sets_mark())

    def settle_sets(self, lam: float, d: Any) -> None:
        """At a segment's start (``lam``, path derivative ``d``): sets changed since the latest
        note without an event of their own (the warm start that ends a run of chattering events,
        :meth:`~spl_bench.gaga.core.tracker._Tracker.follow`) go into that event's note."""
        noted = self._noted
        if noted is None:
            return
        k, mark, old, after = noted
        now = self._sets_mark()
        if now is None or np.array_equal(now, after):
            return
        sysm = self.state.sys
        a, b = sysm.full_vector()
        da, db = sysm.full_derivative(d)
        self.state.events[k].update(sysm.set_change_note(k, mark, lam, old, (a, b, da, db)))
        self._noted = (k, mark, old, now)

    def fold(self, a: float, b: float, dense: Any, sign0: float,
             reason: str = "fold of the path (det J changes sign)") -> float:
        """``det J`` changed sign in ``(a, b)``: locate the fold by bisection; it is a jump point."""
        st, newton = self.state, self.equation.newton
        sysm = st.sys
        st.drop_after(a)  # the points recorded past the fold
        chord: AnyFactor | None = None  # the previous midpoint's factor: chord Newton first
        for _ in range(60):
            m = 0.5 * (a + b)
            th, _ = newton(dense(m)[:-1], m, chord=chord)
            chord = sysm.factor(th, m)[0]
            if chord.sign == sign0:  # (the system's factor: merged duplicates too)
                a = m
            else:
                b = m
            if b - a <= 1e-13 * max(1.0, b):
                break
        # Newton converges slowly right at the fold (J is singular there): back off towards
        # the last accepted step until the projected point is a partial optimum again
        lo, fold_at = (st.lams[-1] if st.lams else a), a
        theta, res = newton(dense(a)[:-1], a, max_iter=20)
        back = 1e-12 * max(1.0, a)
        while res > st.o.newton_tol and a - back > lo:
            a = fold_at - back
            theta, res = newton(dense(a)[:-1], a, max_iter=20)
            back *= 10.0
        if res > 1e3 * st.o.newton_tol and lo < fold_at:  # the fold is at the last recorded point
            a = lo
            theta, res = newton(dense(a)[:-1], a, max_iter=20)
        sysm.set_theta(theta)
        if not st.lams or a > st.lams[-1]:
            self.recorder.record(a, "before")
        else:
            st.kinds[-1] = "before"
        return self.jump(a, [], reason)

    def event(self, lam: float, lam_max: float, crossed: NDArray[np.intp]) -> float:
        """Handle a critical point at ``lam`` (the system already on the old sets' path)."""
        st, eq, record = self.state, self.equation, self.recorder.record
        sysm, o = st.sys, st.o
        theta = sysm.theta()
        h = eq.event_values(theta, lam)
        scale = sysm.event_scale(lam)
        # indices that crossed inside the step and sit on their boundary now (several may cross
        # at the same age), plus any that are violated already
        fire = np.union1d(crossed[h[crossed] <= 1e3 * o.event_tol * scale[crossed]],
                          np.flatnonzero(h < -o.event_tol * scale))
        before = sysm.params()
        snap = sysm.snapshot()
        mark = self._sets_mark()
        d_old = sysm.full_derivative(eq.rhs(lam, np.append(theta, 0.0))[:-1])
        v_old = sysm.full_vector()
        old = (*v_old, *d_old)  # the old segment's end, for the set-change note
        moves = sysm.move(fire, lam)
        # the end of the old segment: with exact zeros where indices left (GLM), or the located
        # point itself (SVM: see PathSystem.record_moved_values)
        record(lam, "critical", deriv=d_old, values=None if sysm.record_moved_values else v_old)
        # continuation check: F still holds with the new sets, and the event functions of the
        # moved indices are >= 0 just after lam.  Indices sitting on their boundary at lam that
        # would leave it at once crossed at the same age: move them too.
        moved = set(int(q) for q in fire)
        ok = False
        for _ in range(10):
            theta, res = eq.newton(sysm.theta(), lam)
            if res > 1e3 * o.newton_tol:
                break
            sysm.set_theta(theta)
            eps = 1e-7 * max(1.0, lam)
            if lam + eps >= lam_max:
                ok = True
                break
            d = eq.rhs(lam, np.append(theta, 0.0))[:-1]
            h0 = eq.event_values(theta, lam)
            h_after = eq.event_values(theta + eps * d, lam + eps)
            sc = sysm.event_scale(lam + eps)
            fail = np.flatnonzero(h_after < -1e-3 * eps * sc)
            if fail.size == 0:
                ok = True
                break
            at_bound = h0[fail] <= 1e3 * o.event_tol * sc[fail]
            new = [int(q) for q in fail[at_bound] if int(q) not in moved]
            if not np.all(at_bound) or not new:
                break
            moved.update(new)
            moves += sysm.move(np.array(new), lam)
        if ok:
            vec_new, b_new = sysm.full_vector()
            vec_old = before.coef if before.coef is not None else before.dual_coef
            gap = max(float(np.abs(vec_new - vec_old).max(initial=0.0)), abs(b_new - before.intercept))
            if gap > 1e-7 * (1.0 + float(np.abs(vec_old).max(initial=0.0))):
                # the new sets give a partial optimum at the same age, but not continuously
                # (v* jumps, e.g. the hard regularizer): a jump point, warm-started by Newton
                st.events.append({"lam": float(lam), "kind": "jump", "moves": moves,
                                  "reason": "discontinuous: new partial optimum found by Newton"})
                st.n_restarts += 1
                st.seg += 1
                record(lam, "after")
                self._note_sets(mark, lam, old)
                return lam
            st.events.append({"lam": float(lam), "kind": "turning", "moves": moves})
            st.seg += 1
            record(lam, "after")
            self._note_sets(mark, lam, old)
            return lam
        sysm.restore(snap)
        return self.jump(lam, moves, "KKT conditions fail after re-assigning the sets", before)

    def jump(self, lam: float, moves: list, reason: str, before: Params | None = None) -> float:
        """A jump point at ``lam`` (``moves``: the sets moved there, ``reason``): recorded with the
        old sets, then ACS warm-started from ``before`` (default: the current point) a little
        further on; returns the age the path goes on from."""
        st, warm = self.state, self.warm
        o = st.o
        if before is None:
            before = st.sys.params()
        mark = self._sets_mark()  # the old segment's sets (event() restored them)
        if not st.lams or st.lams[-1] < lam:
            self.recorder.record(lam, "before")
        old = st.last_point() if mark is not None else None
        st.events.append({"lam": float(lam), "kind": "jump", "moves": moves, "reason": reason})
        st.seg += 1
        # ACS converges slowly next to a fold of the path: move further away if it fails
        for mult in (1.0, 10.0, 100.0, 1000.0, 1e4):
            new_lam = lam + mult * o.delta * max(1.0, lam)
            if warm.warm_start(new_lam, before):
                break
        else:
            st.n_failed_warm_starts += 1
            warnings.warn(f"GAGA: no consistent partial optimum found after the jump at lam={lam:.6g}; "
                          "the path continues from the best ACS point (see meta['n_failed_warm_starts'])",
                          RuntimeWarning, stacklevel=2)
        if o.degenerate_retry and warm.degenerate(new_lam):
            # one class left after the jump: ACS from the v = 1 fit instead (the start's rule)
            st.n_degenerate_acs += 1
            init = st.sys.initial_fit()
            warm.warm_start(new_lam, init, polish_first=False)
            if warm.degenerate(new_lam) and new_lam < st.lam_end:
                # from the v = 1 fit too: go on at the first age where ACS from it is not degenerate (the
                # start's rule); the interval between is a gap without candidates (meta["degenerate_gaps"])
                st.n_degenerate_acs += 1
                lam_b = warm.first_proper_age(new_lam, st.lam_end, init, after_jump=True)
                if lam_b > new_lam:
                    st.degenerate_gaps = [*st.degenerate_gaps, [float(new_lam), float(lam_b)]]
                    new_lam = lam_b
        self.recorder.record(new_lam, "after")
        self._note_sets(mark, new_lam, old)
        return new_lam
