"""What the tracker does at a critical point: a turning point, a jump point or a fold (appendix C).

:class:`_CriticalPoints` is a mixin of :class:`~spl_bench.gaga.core.tracker._Tracker`.  At a
located crossing :meth:`~_CriticalPoints.event` moves the violating indices and checks that the
new sets continue the path (a *turning point*); if they do not, or ``det J`` changed sign inside
the step (:meth:`~_CriticalPoints.fold`), the point is a *jump point*
(:meth:`~_CriticalPoints.jump`): ACS is warm-started a little further on
(:mod:`~spl_bench.gaga.core.warm`) and a restart is counted.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor
from spl_bench.models import Params


class _CriticalPoints:
    """Turning points, jump points and folds (the tracker's ``sys``, ``o``, ``newton``, ``rhs``,
    ``event_values``, ``record``, ``warm_start``, its recorded points, events and counters)."""

    # ------------------------------------------------------- set-change log
    def _sets_mark(self) -> Any:
        """The system's sets now, for :meth:`_note_sets` (``None``: the system keeps no set log)."""
        mark = getattr(self.sys, "sets_mark", None)
        return None if mark is None else mark()

    def _old_state(self) -> tuple[Any, float, Any, float]:
        """The latest recorded point and its derivative ``(vec, b, dvec, db)``: the old segment's end."""
        return self.vecs[-1], self.bs[-1], self.dvecs[-1], self.dbs[-1]

    def _note_sets(self, mark: Any, lam: float, old: Any) -> None:
        """Add to the latest event the net set change from ``mark`` (the old segment's sets, whose
        end is ``old``) to the sets of the segment just recorded at ``lam`` (its derivative is the
        last recorded one): ``set_change``, ``lam_sets``, ``degenerate_face``, ``rank_deficiency``
        (:meth:`~spl_bench.gaga.svm.svm_system.SVMSystem.set_change_note`)."""
        if mark is None or not self.events:
            return
        k = len(self.events) - 1
        self.events[k].update(self.sys.set_change_note(k, mark, lam, old, self._old_state()))
        self._noted = (k, mark, old, self._sets_mark())

    def settle_sets(self, lam: float, d: Any) -> None:
        """At a segment's start (``lam``, path derivative ``d``): sets changed since the latest
        note without an event of their own (the warm start that ends a run of chattering events,
        :meth:`~spl_bench.gaga.core.tracker._Tracker.follow`) go into that event's note."""
        noted = getattr(self, "_noted", None)
        if noted is None:
            return
        k, mark, old, after = noted
        now = self._sets_mark()
        if now is None or np.array_equal(now, after):
            return
        a, b = self.sys.full_vector()
        da, db = self.sys.full_derivative(d)
        self.events[k].update(self.sys.set_change_note(k, mark, lam, old, (a, b, da, db)))
        self._noted = (k, mark, old, now)

    def fold(self, a: float, b: float, dense: Any, sign0: float,
             reason: str = "fold of the path (det J changes sign)") -> float:
        """``det J`` changed sign in ``(a, b)``: locate the fold by bisection; it is a jump point."""
        sysm = self.sys
        # drop points recorded past the fold
        while self.lams and self.lams[-1] > a and self.segs[-1] == self.seg:
            for lst in (self.lams, self.vecs, self.bs, self.dvecs, self.dbs, self.segs, self.kinds):
                lst.pop()
        chord: AnyFactor | None = None  # the previous midpoint's factor: chord Newton first
        for _ in range(60):
            m = 0.5 * (a + b)
            th, _ = self.newton(dense(m)[:-1], m, chord=chord)
            chord = sysm.factor(th, m)[0]
            if chord.sign == sign0:  # (the system's factor: merged duplicates too)
                a = m
            else:
                b = m
            if b - a <= 1e-13 * max(1.0, b):
                break
        # Newton converges slowly right at the fold (J is singular there): back off towards
        # the last accepted step until the projected point is a partial optimum again
        lo, fold_at = (self.lams[-1] if self.lams else a), a
        theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
        back = 1e-12 * max(1.0, a)
        while res > self.o.newton_tol and a - back > lo:
            a = fold_at - back
            theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
            back *= 10.0
        if res > 1e3 * self.o.newton_tol and lo < fold_at:  # the fold is at the last recorded point
            a = lo
            theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
        sysm.set_theta(theta)
        if not self.lams or a > self.lams[-1]:
            self.record(a, "before")
        else:
            self.kinds[-1] = "before"
        return self.jump(a, [], reason)

    def event(self, lam: float, lam_max: float, crossed: NDArray[np.intp]) -> float:
        """Handle a critical point at ``lam`` (state already on the old sets' path)."""
        o = self.o
        sysm = self.sys
        theta = sysm.theta()
        h = self.event_values(theta, lam)
        scale = sysm.event_scale(lam)
        # indices that crossed inside the step and sit on their boundary now (several may cross
        # at the same age), plus any that are violated already
        fire = np.union1d(crossed[h[crossed] <= 1e3 * o.event_tol * scale[crossed]],
                          np.flatnonzero(h < -o.event_tol * scale))
        before = sysm.params()
        snap = sysm.snapshot()
        mark = self._sets_mark()
        d_old = sysm.full_derivative(self.rhs(lam, np.append(theta, 0.0))[:-1])
        v_old = sysm.full_vector()
        old = (*v_old, *d_old)  # the old segment's end, for the set-change note
        moves = sysm.move(fire, lam)
        # the end of the old segment: with exact zeros where indices left (GLM), or the located
        # point itself (SVM: see PathSystem.record_moved_values)
        self.record(lam, "critical", deriv=d_old, values=None if sysm.record_moved_values else v_old)
        # continuation check: F still holds with the new sets, and the event functions of the
        # moved indices are >= 0 just after lam.  Indices sitting on their boundary at lam that
        # would leave it at once crossed at the same age: move them too.
        moved = set(int(q) for q in fire)
        ok = False
        for _ in range(10):
            theta, res = self.newton(sysm.theta(), lam)
            if res > 1e3 * o.newton_tol:
                break
            sysm.set_theta(theta)
            eps = 1e-7 * max(1.0, lam)
            if lam + eps >= lam_max:
                ok = True
                break
            d = self.rhs(lam, np.append(theta, 0.0))[:-1]
            h0 = self.event_values(theta, lam)
            h_after = self.event_values(theta + eps * d, lam + eps)
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
                self.events.append({"lam": float(lam), "kind": "jump", "moves": moves,
                                    "reason": "discontinuous: new partial optimum found by Newton"})
                self.n_restarts += 1
                self.seg += 1
                self.record(lam, "after")
                self._note_sets(mark, lam, old)
                return lam
            self.events.append({"lam": float(lam), "kind": "turning", "moves": moves})
            self.seg += 1
            self.record(lam, "after")
            self._note_sets(mark, lam, old)
            return lam
        sysm.restore(snap)
        return self.jump(lam, moves, "KKT conditions fail after re-assigning the sets", before)

    def jump(self, lam: float, moves: list, reason: str, before: Params | None = None) -> float:
        o = self.o
        if before is None:
            before = self.sys.params()
        mark = self._sets_mark()  # the old segment's sets (event() restored them)
        if not self.lams or self.lams[-1] < lam:
            self.record(lam, "before")
        old = self._old_state() if mark is not None else None
        self.events.append({"lam": float(lam), "kind": "jump", "moves": moves, "reason": reason})
        self.seg += 1
        # ACS converges slowly next to a fold of the path: move further away if it fails
        for mult in (1.0, 10.0, 100.0, 1000.0, 1e4):
            new_lam = lam + mult * o.delta * max(1.0, lam)
            if self.warm_start(new_lam, before):
                break
        else:
            self.n_failed_warm_starts += 1
            warnings.warn(f"GAGA: no consistent partial optimum found after the jump at lam={lam:.6g}; "
                          "the path continues from the best ACS point (see meta['n_failed_warm_starts'])",
                          RuntimeWarning, stacklevel=2)
        if o.degenerate_retry and self.degenerate(new_lam):
            # one class left after the jump: ACS from the v = 1 fit instead (the start's rule)
            self.n_degenerate_acs += 1
            init = self.sys.initial_fit()
            self.warm_start(new_lam, init, polish_first=False)
            if self.degenerate(new_lam) and new_lam < self.lam_end:
                # from the v = 1 fit too: go on at the first age where ACS from it is not degenerate (the
                # start's rule); the interval between is a gap without candidates (meta["degenerate_gaps"])
                self.n_degenerate_acs += 1
                lam_b = self.first_proper_age(new_lam, self.lam_end, init, after_jump=True)
                if lam_b > new_lam:
                    self.degenerate_gaps = [*self.degenerate_gaps, [float(new_lam), float(lam_b)]]
                    new_lam = lam_b
        self.record(new_lam, "after")
        self._note_sets(mark, new_lam, old)
        return new_lam
