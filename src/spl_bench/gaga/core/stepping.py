"""Following the path with fixed index sets: one segment, from a critical point to the next.

:class:`Stepper` is a collaborator of :class:`~spl_bench.gaga.core.tracker._Tracker` on its
:class:`~spl_bench.gaga.core.state.TrackState`.  A segment is taken by the compiled follower where
the system has one (``EngineOptions.method="compiled"``, :meth:`~Stepper.compiled_segment`) or step
by step by a scipy ODE solver or the predictor-corrector stepper (:meth:`~Stepper.ode_segment`,
:meth:`~Stepper.solver`): every step end is projected onto ``F = 0``
(:class:`~spl_bench.gaga.core.equation.PathEquation`), checked for crossings
(:class:`~spl_bench.gaga.core.events.EventLocator`) and recorded
(:class:`~spl_bench.gaga.core.record.Recorder`), with points inside the step where the Hermite
interpolant of the recorded points would be inaccurate (:meth:`~Stepper.fill`).  The segment ends
at a critical point or a fold (:class:`~spl_bench.gaga.core.critical.CriticalPoints`), or at
``lam_max``.  A fold seen by an ODE solver (``det J`` changes sign at a projected step end or before
a crossing, or the end cannot be projected) is not bisected on the solver's dense output: the step
is taken again by the predictor-corrector, which stays on the branch and ends at its fold
(:meth:`~Stepper.branch_end`), so every route locates a fold on points of the branch itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import LSODA, OdeSolver

from spl_bench.gaga.core.continuation import STALL_STEPS, PredictorCorrector, short_steps
from spl_bench.gaga.core.critical import CriticalPoints
from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.events import EventLocator
from spl_bench.gaga.core.options import AUTO_ROUTES, COMPILED_ROUTES, ODE_SOLVERS, stepper_name
from spl_bench.gaga.core.record import Recorder
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.system_base import EVENT, FULL, REACHED, CompiledRun

Array = NDArray[np.float64]

#: steps retaken shorter per segment when their end cannot be projected onto F = 0
MAX_RETAKES = 4
#: accepted steps of a compiled segment (:mod:`spl_bench.gaga.glm.segment_nb`) between two returns
#: to the tracker (a longer segment continues in another call)
COMPILED_CAP = 256


class Stepper:
    """Segments of the path: the state (system, options, recorded points, counters), the path
    equation (``rhs``, ``newton``, ``last_factor``, ``last_sign``), the recorder, the event locator
    (``first_step``, ``crossings``, ``first_crossing``), the critical points (``event``, ``jump``,
    ``fold``, ``settle_sets``) and ``report`` (the tracker's progress report: ``report(lam)``)."""

    def __init__(self, state: TrackState, equation: PathEquation, recorder: Recorder, locator: EventLocator,
                 critical: CriticalPoints, report: Callable[[float], None]) -> None:
        self.state = state
        self.equation = equation
        self.recorder = recorder
        self.locator = locator
        self.critical = critical
        self.report = report

    def segment(self, lam0: float, lam_max: float) -> float:
        """Follow the path from ``lam0`` with fixed sets until an event; return the new age."""
        st = self.state
        o = st.o
        if o.method in COMPILED_ROUTES:
            run = st.sys.compiled_follow(lam0, lam_max, o, COMPILED_CAP, o.max_events - len(st.events),
                                         st.last_event)
            if run is not None:
                return self.compiled_segment(run, lam0, lam_max)
        st.compiled_short = 0  # step-by-step segments count their own short steps (PredictorCorrector)
        return self.ode_segment(lam0, lam_max)

    def compiled_segment(self, run: CompiledRun, lam0: float, lam_max: float) -> float:
        """Take over what the compiled follower did (:meth:`PathSystem.compiled_follow`) from ``lam0``.

        Its records and its turning points go into the path as the tracker's own would; a
        critical point it leaves (a jump: the continuation check fails) goes to
        :meth:`CriticalPoints.event`; where it gives up (singular ``J``, corrector failure, a
        fold), the ODE route continues the segment from its last accepted step.  A call that
        filled its buffer (``FULL``, :data:`COMPILED_CAP` records) is followed by another from its
        end, unless its accepted steps stall: ``STALL_STEPS`` of them in a row, over the calls, each
        shorter than ``STALL_STEP max(1, |lam|)`` (the predictor-corrector's rule,
        :func:`~spl_bench.gaga.core.continuation.short_steps`) end the branch at the call's end
        (:meth:`branch_end`), counted in ``n_stalled_segments``.
        """
        st = self.state
        seg0 = st.seg
        st.n_compiled_calls += 1
        st.n_compiled_events += len(run.events)
        st.n_rhs += int(run.counts[0])
        st.n_steps += int(run.counts[2])
        t_prev = lam0
        for lam, vec, b, dvec, db, offset, kind in run.records:
            st.seg = seg0 + offset
            st.append(lam, vec, b, dvec, db, kind)
            # a critical point ends a run of short steps (the next segment starts there)
            st.compiled_short = short_steps(st.compiled_short, lam - t_prev, t_prev) if kind == "step" else 0
            t_prev = lam
        for ev in run.events:
            st.events.append(ev)
            st.n_restarts += ev["kind"] == "jump"
        st.seg = seg0 + len(run.events)
        if len(run.events) >= 2:  # the tracker's repeat count, as if it had seen each of them
            st.last_event, st.repeats = run.events[-2]["lam"], 0
        self.report(run.t_end)
        if run.status != FULL:
            st.compiled_short = 0
        if run.status == EVENT:
            return self.critical.event(run.t_end, lam_max, run.crossed)
        if run.status == REACHED:
            return lam_max
        if run.status == FULL:
            if st.compiled_short >= STALL_STEPS:
                st.compiled_short = 0
                st.n_stalled_segments += 1
                return self.branch_end(run.t_end, st.sys.theta(), lam_max)
            return run.t_end
        st.n_compiled_handbacks += 1
        return self.ode_segment(run.t_end, lam_max)

    def ode_segment(self, lam0: float, lam_max: float) -> float:
        """:meth:`segment` step by step (:func:`~spl_bench.gaga.core.options.stepper_name`: ``auto`` for
        ``compiled``, and for ``fastest`` where the model has no faster exact route)."""
        st, eq, crit = self.state, self.equation, self.critical
        o, sysm = st.o, st.sys
        theta0 = sysm.theta()
        d0 = eq.rhs(lam0, np.append(theta0, 0.0))[:-1]
        sign0 = eq.last_sign
        auto = o.method in AUTO_ROUTES
        name = stepper_name(o.method, getattr(st.model, "name", ""))
        crit.settle_sets(lam0, d0)  # sets a warm start changed without an event of their own
        first = self.locator.first_step(theta0, d0, lam0, lam_max)
        solver = self.solver(name, lam0, theta0, lam_max, o.max_step, first)
        t_prev, theta_prev = lam0, theta0  # the step start and its projected point
        n_seg_steps = retakes = 0
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                msg = solver.step()
            st.n_steps += 1
            if solver.status == "failed":
                if getattr(solver, "branch_end", False):  # the predictor-corrector: no step from t_prev
                    st.n_stalled_segments += int(getattr(solver, "stalled", False))
                    return self.branch_end(t_prev, theta_prev, lam_max)
                if name != "PC":  # an ODE solver's steps vanish (next to a fold): the predictor-corrector
                    name = "PC"
                    st.n_fold_retakes += 1
                    solver = self.solver("PC", t_prev, theta_prev, lam_max, o.max_step, None)
                    continue
                return crit.jump(t_prev, [], f"solver failed: {msg}")
            t1, y1 = float(solver.t), solver.y
            # crossings are judged on the Newton-projected step end, not on the raw ODE state
            # (whose error can hide or invent a crossing when steps are long)
            # (chord iteration with the solver's latest Jacobian first: it is from inside this step)
            theta1, res1 = eq.newton(y1[:-1].copy(), t1, chord=eq.last_factor)
            h_step = t1 - t_prev
            if res1 > 1e3 * o.newton_tol and h_step > 1e-9 * max(1.0, t1) and retakes < MAX_RETAKES:
                # no partial optimum at t1 with these sets: the step may have overshot a critical
                # point past which this branch ends, and event functions at a point that is not
                # one cannot be trusted.  Retake the step, shorter (MAX_RETAKES times at most per
                # segment: a branch that ends right at a critical point is then handled from the
                # events seen inside the step, or as a fold)
                retakes += 1
                st.n_retaken_steps += 1
                solver = self.solver(name, t_prev, theta_prev, lam_max, 0.5 * h_step, 0.25 * h_step)
                continue
            dense = solver.dense_output()
            bad, t_end, theta_end = self.locator.crossings(theta1, t_prev, t1, dense)
            if bad.size:
                out = self.critical_point(bad, dense, t_prev, theta_prev, t_end, theta_end, sign0, lam_max,
                                          refine=name != "PC")
                if out is not None:
                    return out
                # det J changed sign before the first crossing: the step again, on the branch
                name, solver = "PC", self.solver("PC", t_prev, theta_prev, lam_max, o.max_step, 0.5 * h_step)
                st.n_fold_retakes += 1
                continue
            if res1 > 1e3 * o.newton_tol:  # no partial optimum at t1: the path ends (a fold)
                if name != "PC":  # the step again, on the branch: the predictor-corrector ends at its fold
                    name, solver = "PC", self.solver("PC", t_prev, theta_prev, lam_max, o.max_step, 0.5 * h_step)
                    st.n_fold_retakes += 1
                    continue
                return crit.fold(t_prev, t1, dense, sign0, "the projection fails (fold of the path)")
            if sign0 != 0 and name != "PC":
                # det J at the projected end (the factor fill and record use): another sign is a fold
                # inside the step, or a Newton start from the solver's state on the other branch of a
                # fold ahead.  Either way the step again by the predictor-corrector, which stays on
                # the branch (and ends at the fold, if there is one)
                eq.rhs(t1, np.append(theta1, 0.0))
                if eq.last_sign != sign0 and eq.last_sign != 0:
                    name, solver = "PC", self.solver("PC", t_prev, theta_prev, lam_max, o.max_step, 0.5 * h_step)
                    st.n_fold_retakes += 1
                    continue
            # regular step: record the Newton-projected point (and enough points inside for at())
            sysm.set_theta(theta1)
            self.fill(t1, dense)
            self.recorder.record(t1)
            self.report(t1)
            if sign0 != 0 and eq.last_sign != sign0 and eq.last_sign != 0:
                return crit.fold(t_prev, t1, dense, sign0)
            if t1 - t_prev < 0.5 * o.max_step:  # a step limited by accuracy, not by max_step
                n_seg_steps += 1
            t_prev, theta_prev = t1, theta1
            if solver.status == "finished":
                return lam_max
            if auto and name == "RK45" and n_seg_steps >= o.stiff_steps:
                # an explicit method taking this many short steps without reaching a critical
                # point: the path ODE may be stiff here; LSODA (stiffness detection, BDF) goes on
                name = "LSODA"
                st.n_stiff_switches += 1
                solver = LSODA(eq.rhs, t1, np.append(theta1, 0.0), lam_max, rtol=o.rtol, atol=o.atol,
                               max_step=o.max_step)

    def critical_point(self, crossed: NDArray[np.intp], dense: Any, t_prev: float, theta_prev: Array,
                       t_end: float, theta_end: Array, sign0: float, lam_max: float,
                       refine: bool = False) -> float | None:
        """The step from ``t_prev`` crossed event functions (``crossed``, violated at ``t_end``): the
        first crossing (:meth:`EventLocator.first_crossing`) ends the segment, as a critical point
        (:meth:`CriticalPoints.event`, after :meth:`fill` up to it) or, if ``det J`` changed sign
        from ``sign0`` before it, as a fold (:meth:`CriticalPoints.fold`; with ``refine``, ``None``:
        the caller takes the step again by the predictor-corrector)."""
        t_star, theta = self.locator.first_crossing(crossed, dense, t_prev, theta_prev, t_end, theta_end)
        self.state.sys.set_theta(theta)
        self.equation.rhs(t_star, np.append(theta, 0.0))
        if sign0 != 0 and self.equation.last_sign != sign0:
            if refine:
                return None
            return self.critical.fold(t_prev, t_star, dense, sign0)
        self.fill(t_star, dense)
        return self.critical.event(t_star, lam_max, crossed)

    def branch_end(self, t: float, theta: Array, lam_max: float) -> float:
        """The predictor-corrector found no point of the branch past ``t`` (``theta``, the last accepted
        step end; :class:`~spl_bench.gaga.core.continuation.PredictorCorrector` ``branch_end``): an
        index on its boundary there is an event (:meth:`CriticalPoints.event`: a turning or a jump
        point, by its continuation check); else the branch turns back at ``t``, a fold: a jump point
        (:meth:`CriticalPoints.jump`).  The step point recorded at ``t`` is recorded again as the
        critical point's own."""
        st, eq, o = self.state, self.equation, self.state.o
        sysm = st.sys
        if st.lams and st.lams[-1] == t and st.kinds[-1] == "step" and st.segs[-1] == st.seg:
            st.drop_after(float(np.nextafter(t, -np.inf)))
        sysm.set_theta(theta)
        h = eq.event_values(theta, t)
        near = np.flatnonzero(h <= 1e3 * o.event_tol * sysm.event_scale(t))
        if near.size:
            return self.critical.event(t, lam_max, near)
        return self.critical.jump(t, [], "fold of the path (the branch ends: no partial optimum with these sets "
                                         "past it)")

    def solver(self, name: str, t0: float, theta0: Array, lam_max: float, max_step: float,
               first_step: float | None) -> OdeSolver:
        """The stepper of a segment: a scipy ODE solver on the path ODE, or (``"PC"``) the
        predictor-corrector continuation of :mod:`spl_bench.gaga.core.continuation`."""
        y0 = np.append(theta0, 0.0)
        if name == "PC":
            return PredictorCorrector(self.equation, self.state.o, t0, y0, lam_max, max_step, first_step)
        o = self.state.o
        return ODE_SOLVERS[name](self.equation.rhs, t0, y0, lam_max, rtol=o.rtol, atol=o.atol, max_step=max_step,
                                 first_step=first_step)

    def fill(self, t1: float, dense: Any) -> None:
        """Record projected points inside ``(lams[-1], t1)`` where ``AgePath.at`` would be inaccurate.

        ``at`` interpolates recorded points by cubic Hermite polynomials with the exact
        derivatives; a long solver step (RK45 takes few) can leave it less accurate than
        the ODE solution.  The interpolant's error at the middle of the interval is
        estimated against the middle point projected onto ``F = 0`` (``dense_check="solver"``:
        against the solver's dense output); above ``dense_tol`` the projected
        middle point is recorded and both halves are checked again (``dense_max_depth``
        levels).  The state at ``t1`` (current sets, the projected point) is restored.
        """
        st, eq = self.state, self.equation
        o = st.o
        if not st.lams or st.segs[-1] != st.seg or not st.lams[-1] < t1:
            return
        sysm = st.sys
        theta1 = sysm.theta()
        d1 = eq.rhs(t1, np.append(theta1, 0.0))[:-1]
        end = (t1, theta1, *sysm.full_vector(), *sysm.full_derivative(d1))
        start = (st.lams[-1], None, *st.last_point())

        def full(theta: Array) -> tuple[Array, float]:
            sysm.set_theta(theta)
            return sysm.full_vector()

        def check(a: tuple, b: tuple, depth: int) -> None:
            ta, _, va, ba, dva, dba = a
            tb, _, vb, bb, dvb, dbb = b
            tm, h = 0.5 * (ta + tb), tb - ta
            # cubic Hermite at s = 1/2: (va + vb) / 2 + h (dva - dvb) / 8
            herm = 0.5 * (va + vb) + 0.125 * h * (dva - dvb)
            hb = 0.5 * (ba + bb) + 0.125 * h * (dba - dbb)
            raw = dense(tm)[:-1]
            thm = res = None
            if o.dense_check == "projected":  # against the point of the path, not the solver's estimate
                thm, res = eq.newton(raw, tm, chord=eq.last_factor)
                if res > 1e3 * o.newton_tol:  # leave it to the caller's checks
                    return
                raw = thm
            vm, bm = full(raw)
            scale = 1.0 + float(np.abs(vm).max(initial=0.0))
            if max(float(np.abs(herm - vm).max(initial=0.0)), abs(hb - bm)) <= o.dense_tol * scale:
                return
            if thm is None:
                thm, res = eq.newton(raw, tm, chord=eq.last_factor)
            if res > 1e3 * o.newton_tol:  # leave it to the caller's checks
                return
            sysm.set_theta(thm)
            dm = eq.rhs(tm, np.append(thm, 0.0))[:-1]
            mid = (tm, thm, *sysm.full_vector(), *sysm.full_derivative(dm))
            if depth > 1:
                check(a, mid, depth - 1)
            sysm.set_theta(thm)
            self.recorder.record(tm, deriv=(mid[4], mid[5]))
            if depth > 1:
                check(mid, b, depth - 1)

        check(start, end, o.dense_max_depth)
        sysm.set_theta(theta1)
