"""The event-driven tracer of the outlier-path homotopy (Suzumura et al., ICML 2014).

Both the C-step (parameter theta, section 4.2) and the D-step (parameter mu of appendix C,
run as ``tau = 1 - mu``) are one scalar homotopy in which the fixed coefficients move
linearly; so is the regularization path in C of the standard SVM (Hastie et al. 2004).
:class:`Engine` traces such a path piece by piece: the direction from the active system
(:class:`~spl_bench.methods.outlier_path.linalg.ActiveSystem`), the next event from the
Harris ratio test (:func:`~spl_bench.methods.outlier_path.events.next_event`), and the
state change and re-solve at each event, all on one shared
:class:`~spl_bench.methods.outlier_path.state.PathState`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spl_bench.methods.outlier_path.errors import DegenerateStepError, NoEnteringPointError, SingularSystemError
from spl_bench.methods.outlier_path.events import apply_event, next_event
from spl_bench.methods.outlier_path.linalg import ActiveSystem
from spl_bench.methods.outlier_path.state import OO, Array, E, L, PathState, R


class Engine:
    """Event-driven tracer of one-parameter piecewise-linear paths of the RSVM KKT system (Theorem 4).

    ``state`` holds the path's variables; ``system`` the kernel's active system (11).
    """

    def __init__(self, state: PathState, system: ActiveSystem) -> None:
        self.state = state
        self.system = system

    def _move(self, t: float, da: Array, db: float, dm: Array) -> None:
        """Advance ``(alpha, b)`` and the margins by ``t`` along the piece's rates."""
        state = self.state
        state.alpha += t * da
        state.b += t * db
        state.m += t * dm

    def trace(
        self,
        rate: Callable[[], Array],
        limit: float,
        advance: Callable[[float], None],
        on_event: Callable[[str], bool],
        max_events: int,
    ) -> str:
        """Follow the path for ``limit`` units of the step variable.

        ``rate()`` gives the rate of the moving fixed coefficients (OO in a C-step,
        F in a D-step), ``advance(t)`` moves the homotopy parameter by ``t`` and
        ``on_event(kind)`` is called after each event; it returns True to stop.
        Returns ``"end"`` or ``"stop"``.
        """
        state, system = self.state, self.system
        done = 0.0
        zero_steps = 0
        while True:
            q = rate()
            try:
                d = system.direction(state, q)
            except SingularSystemError:
                # states set without a re-solve (boundary points of OP-s) can leave dependent
                # active points: reduce them by null-space moves (f unchanged), then solve
                system.refresh(state)
                q = rate()
                d = system.direction(state, q)
            if d is None:
                kind = self.bmove(float(state.y @ q))
                if on_event(kind):
                    return "stop"
                continue
            da, db = d
            dm = system.margin_rate(da, db)
            t, j, kind = next_event(state, system, da, dm, limit - done, state.last)
            self._move(t, da, db, dm)
            done += t
            advance(t)
            if j < 0:
                system.refresh(state)
                return "end"
            state.n_events += 1
            if state.n_events > max_events:
                raise DegenerateStepError(f"more than {max_events} events on the path")
            zero_steps = zero_steps + 1 if t <= 1e-14 else 0
            if zero_steps > 2 * state.n + 10:
                raise DegenerateStepError("the path cycles without progress (degenerate ties)")
            apply_event(state, j, kind)
            state.last = j
            if kind in ("L->IB", "OO->OB") and on_event(kind):
                state.m[j] = state.s  # stop for a D-step; the swapped point will be forced, not solved
                return "stop"
            system.refresh(state)
            if kind in ("R->E", "L->E"):
                done += self.snap_entry(j, rate, advance, limit - done)
            if on_event(kind):
                return "stop"

    def snap_entry(self, j: int, rate: Callable[[], Array], advance: Callable[[float], None], room: float) -> float:
        """Place an entering point's coefficient on its bound by locating the event on the new system.

        In exact arithmetic a point entering E (``R->E`` / ``L->E``) has ``a_j = 0`` / ``C`` at
        the event (eq. 10b).  The event is found on the margin ``m_j``; when ``j`` nearly duplicates an
        active point (near-duplicate rows of a linear kernel), ``m_j`` crosses 1 very slowly
        and ``a_j`` moves very fast on the new system, so the rounding error of the margins
        (about 1e-13) shifts the event by ``~1e-10`` and the re-solve leaves ``a_j`` outside
        ``[0, C]`` by far more than the KKT tolerance (1e-6 C at ``theta = 0.49`` on spambase).
        If the new direction moves ``a_j`` back into its box, the path is advanced by the tiny
        step at which it gets there (the event point seen by the new active set), provided no
        other event comes first.  Returns the step taken.
        """
        state, system = self.state, self.system
        done = 0.0
        for _ in range(3):  # a few Newton-like steps: the re-solve is not exactly linear in t
            a, C = float(state.alpha[j]), state.C
            dev = a if a < 0.0 else (a - C if a > C else 0.0)
            if abs(dev) <= 1e-10 * C:
                break
            d = system.direction(state, rate())
            if d is None:
                break
            da, db = d
            r = float(da[j]) - (state.dC if dev > 0.0 else 0.0)
            if r == 0.0 or not 0.0 < -dev / r <= room - done:
                break
            t = -dev / r
            dm = system.margin_rate(da, db)
            if next_event(state, system, da, dm, t, j)[1] >= 0:
                break
            self._move(t, da, db, dm)
            advance(t)
            done += t
            system.refresh(state)
        return done

    def bmove(self, r: float) -> str:
        """Move ``b`` with all coefficients fixed until a point becomes active.

        Needed when no point is active and the equality ``sum a_i y_i = 0`` must be
        kept while fixed coefficients move: ``b`` is not unique there, and the end of
        its optimal interval on the side given by ``sign(r)`` is the one at which the
        entering point can absorb the change.  Raises :class:`NoEnteringPointError` when
        no point can.
        """
        state = self.state
        delta = 1.0 if r > 0 else -1.0
        dm = state.y * delta
        t, j, kind = next_event(state, self.system, np.zeros(state.n), dm, np.inf, -1)
        if j < 0 or not np.isfinite(t):
            raise NoEnteringPointError("no point can become active (b-move)")
        state.b += delta * t
        state.m += t * dm
        apply_event(state, j, kind)
        state.last = j
        state.n_bmoves += 1
        self.system.refresh(state)
        return kind

    def start(self, alpha: Array, b: float) -> None:
        """States from an SVM solution (Algorithm 1 step 2: inliers ``m_i >= s``), then an exact
        re-solve of system (11) and active-set polishing until Theorem 4 (10a-10c) holds."""
        state, system = self.state, self.system
        C = state.C
        state.alpha = alpha.astype(float).copy()
        state.b = float(b)
        state.m = system.q_dot(state.alpha) + state.y * state.b
        state.inl = state.m >= state.s
        tol_a = 1e-8 * C
        st = np.where(state.alpha <= tol_a, R, np.where(state.alpha >= C - tol_a, L, E)).astype(np.int8)
        st[~state.inl] = OO
        state.st = st
        # active-set polishing: first swap every violator at once, then one at a time
        for it in range(30 + 3 * state.n):
            # a rank-deficient free set (linear kernel, more free SVs than d + 1) is reduced
            # by null-space moves inside refresh()
            system.refresh(state)
            a, m, st = state.alpha, state.m, state.st
            bad = False
            for mask, new in (
                ((st == E) & (a < -1e-10 * C), R),
                ((st == E) & (a > C * (1 + 1e-10)), L),
                ((st == R) & (m < 1 - 1e-9), E),
                ((st == L) & (m > 1 + 1e-9), E),
            ):
                idx = np.flatnonzero(mask)
                if idx.size:
                    if it < 30:
                        st[idx] = new
                    else:
                        st[idx[np.argmax(np.abs(np.where(new == E, m[idx] - 1, a[idx])))]] = new
                    bad = True
                    if it >= 30:
                        break
            if not bad:
                return
        raise DegenerateStepError("could not polish the initial SVM solution")
