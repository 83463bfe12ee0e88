"""Warm starts: ACS (GAGA Algorithm 1) from a given point, finished by a Newton polish.

The path's first point and every point after a jump are ACS partial optima (GAGA Algorithm 2,
line 8).  :class:`WarmStarts`, a collaborator of :class:`~spl_bench.gaga.core.tracker._Tracker`
on its :class:`~spl_bench.gaga.core.state.TrackState`, runs ACS (:func:`acs_step`) and polishes
its iterate by Newton (:class:`~spl_bench.gaga.core.equation.PathEquation`, the only collaborator
it calls) with set re-assignment once it contracts (:meth:`~WarmStarts.polish`,
:meth:`~WarmStarts.try_polish`), skipping iterations where the ACS map is affine
(:meth:`~WarmStarts.acs_skip_ahead`) and, opt-in, over-relaxing them
(:meth:`~WarmStarts.extrapolate`).  :func:`spl_objective` is the SPL objective ACS decreases.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.acs_skip import AffineSkip
from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.state import TrackState
from spl_bench.gaga.core.system_base import PathSystem
from spl_bench.models import Model, Params
from spl_bench.sp import SPRegularizer

Array = NDArray[np.float64]


def spl_objective(model: Model, sp: SPRegularizer, params: Params, X: Array, y: Array, lam: float) -> float:
    """The SPL objective with ``v`` minimised out: ``R(w) + sum_i min_v (v ell_i + f(v, lam))``.

    GAGA eq. (2) at ``v = v*(ell, lam)``; ACS decreases it monotonically.
    """
    ell = model.losses(params, X, y)
    return float(model.regularizer(params, len(y)) + sp.sp_objective(sp.v_star(ell, lam), ell, lam).sum())


def acs_step(system: PathSystem, lam: float, params: Params, v: Array,
             start: Params | None = None) -> tuple[Params, Array]:
    """One ACS iteration (GAGA Algorithm 1): the v-weighted fit, then ``v* = v*(ell, lam)``.
    ``start``: the fit's warm start, if not ``params`` (the fit's minimiser must not depend on it)."""
    params = system.fit_weighted(v, params if start is None else start)
    return params, system.sp.v_star(system.losses(params), lam)


class WarmStarts:
    """ACS warm starts and their Newton polish: the state's ``sys``, ``sp``, ``model``, ``y``, ``o``,
    its counters (``n_restarts``, ``n_acs_skips``, ``n_acs_skipped``, ``n_polish_cycles``,
    ``n_degenerate_acs``) and ``degenerate_reason``; the path equation's ``newton``, ``rhs``,
    ``event_values``."""

    def __init__(self, state: TrackState, equation: PathEquation) -> None:
        self.state = state
        self.equation = equation

    def degenerate(self, lam: float) -> bool:
        """Whether the current point is a degenerate partial optimum at ``lam``: ``v*(ell, lam)``
        selects one class only (:meth:`~spl_bench.models.base.Model.degenerate_selection`), where
        the v-weighted fit is a constant predictor although its KKT conditions hold."""
        st = self.state
        v = st.sp.v_star(st.sys.losses(st.sys.params()), lam)
        return st.model.degenerate_selection(st.y, v)

    def first_proper_age(self, lam_min: float, lam_max: float, init: Params, after_jump: bool = False) -> float:
        """The first age in ``(lam_min, lam_max]`` where ACS from ``init`` ends on a partial optimum
        that is not degenerate; the tracker is left at that point.

        Ages ``lam_min * 2**(k/4)`` are tried in turn (ACS from ``init`` at each, as at the start),
        then the interval between the last degenerate age and the first proper one is bisected to
        ``EngineOptions.start_rtol``.  Where every age tried is degenerate, the tracker is left at
        ``lam_min`` (the degenerate start) and the state's ``degenerate_reason`` says so.
        """
        st = self.state
        o = st.o
        lo, hi, lam = lam_min, np.nan, lam_min
        while lam < lam_max:
            lam = min(lam * 2.0 ** 0.25, lam_max)
            self.warm_start(lam, init, polish_first=False)
            if not self.degenerate(lam):
                hi = lam
                break
            st.n_degenerate_acs += 1
            lo = lam
        if np.isnan(hi):
            st.degenerate_reason = (
                f"ACS from the v = 1 fit selects a single class at every age tried in [{lam_min:.4g}, "
                f"{lam_max:.4g}]: no two-class partial optimum was found "
                + ("after the jump there" if after_jump else "on the range"))
            warnings.warn(f"GAGA: {st.degenerate_reason}; the path is a constant predictor",
                          RuntimeWarning, stacklevel=3)
            self.warm_start(lam_min, init, polish_first=False)
            return lam_min
        at = hi  # the age the tracker's point belongs to
        while hi - lo > o.start_rtol * hi:
            mid = 0.5 * (lo + hi)
            self.warm_start(mid, init, polish_first=False)
            at = mid
            if self.degenerate(mid):
                st.n_degenerate_acs += 1
                lo = mid
            else:
                hi = mid
        if at != hi:
            self.warm_start(hi, init, polish_first=False)
        where = (f"after the jump, from lam={lam_min:.4g}; the path goes on at lam={hi:.4g}, the first age where it "
                 "does not (meta['degenerate_gaps'])" if after_jump else
                 f"at lam_min={lam_min:.4g}; the path starts at lam={hi:.4g}, the first age where it does not "
                 "(meta['start_lam'])")
        warnings.warn(f"GAGA: ACS from the v = 1 fit selects a single class {where}", RuntimeWarning, stacklevel=3)
        return hi

    def warm_start(self, lam: float, params: Params, polish_first: bool = True) -> bool:
        """ACS from ``params`` at ``lam`` (GAGA Algorithm 2, line 8), finished by Newton.

        After a jump ACS first escapes slowly from the ghost of the vanished branch
        (the change of ``v`` per iteration grows), then contracts linearly onto the
        new branch.  Once it contracts, the sets are those of the new branch and
        the Newton polish (with set re-assignment) converges quadratically, so the
        polish is tried then (and again at doubling intervals), not after a fixed
        number of iterations.  A polished point is accepted only if it is a
        consistent partial optimum from which the path can be followed, does not
        raise the SPL objective above the ACS iterate it started from (Newton
        must not climb to the unstable twin of a fold) and is a local minimum
        where the system can tell (:meth:`PathSystem.stable`).
        """
        st = self.state
        sysm, o = st.sys, st.o
        st.n_restarts += 1
        # cheapest first: the polish alone, from params with the sets re-derived at lam
        if polish_first and self.try_polish(lam, params, rounds=4):
            return True
        p = params
        v = st.sp.v_star(sysm.losses(p), lam)
        dv_prev, next_try, gap = np.inf, 0, 2
        extrapolate = o.acs_extrapolate and p.dual_coef is None
        skip = AffineSkip()  # latest affine states (acs_skip_ahead)
        # the fits' warm start extrapolated from the last two ACS iterates (acs_warm_extrapolate)
        extrapolate_fit = o.acs_warm_extrapolate and p.dual_coef is None and sysm.fit_has_unique_minimiser()
        p_prev = None
        for it in range(1, o.acs_max_iter + 1):
            start = None
            if extrapolate_fit and p_prev is not None and p.coef is not None and p_prev.coef is not None:
                start = replace(p, coef=2.0 * p.coef - p_prev.coef, intercept=2.0 * p.intercept - p_prev.intercept)
            p_prev = p
            p, v_new = acs_step(sysm, lam, p, v, start)
            dv = float(np.max(np.abs(v_new - v), initial=0.0))
            if extrapolate and dv > dv_prev:
                p, v_new = self.extrapolate(lam, p_prev, p, v_new)
            v = v_new
            converged = dv <= o.acs_tol
            if converged or (dv < dv_prev and dv < 1e-2 and it >= next_try):
                if self.try_polish(lam, p, rounds=4):
                    return True
                if converged:
                    break
                next_try, gap = it + gap, 2 * gap
            dv_prev = dv
            if o.acs_skip and not converged:
                ahead = self.acs_skip_ahead(lam, p, skip)
                if ahead is not None:
                    p, growth = ahead
                    v = st.sp.v_star(sysm.losses(p), lam)
                    dv_prev = dv * growth  # the change per iteration ACS would have reached there
        # ACS alone (converged or out of iterations): its point, polished without the safeguards
        sysm.init_from(p, lam)
        res = self.polish(lam, max_rounds=20)
        return (res <= 1e3 * o.newton_tol and sysm.consistent(lam, o.event_tol).size == 0
                and self.can_continue(lam))

    def acs_skip_ahead(self, lam: float, p: Params, skip: AffineSkip) -> tuple[Params, float] | None:
        """Skip ACS iterations where the ACS map is affine (:class:`~spl_bench.gaga.core.acs_skip.AffineSkip`,
        on the state of :meth:`PathSystem.acs_affine_state`): ``(iterate j steps on, rho**j)``
        or ``None``."""
        st = self.state
        before = (skip.n_skips, skip.n_skipped)
        out = skip.ahead(st.sys.acs_affine_state(p, lam))
        if out is None:
            return None
        st.n_acs_skips += skip.n_skips - before[0]
        st.n_acs_skipped += skip.n_skipped - before[1]
        return st.sys.acs_jump_to(out[0], out[1]), out[2]

    def extrapolate(self, lam: float, p0: Params, p1: Params, v1: Array) -> tuple[Params, Array]:
        """Over-relax one ACS step ``p0 -> p1`` by a doubling line search on the SPL objective.

        Opt-in (``EngineOptions.acs_extrapolate``), GLM models.  While ACS escapes from
        the ghost of a vanished branch it moves slowly along a fixed direction, with
        growing steps.  ``p0 + t (p1 - p0)`` for ``t = 2, 4, 8, ...`` is kept while the SPL
        objective (``v`` minimised out, GAGA eq. (2)) decreases, so every iterate is
        lower than plain ACS's.  The escape is much shorter, since the step doubles while
        the direction holds, but lower iterates can end in the basin of another partial
        optimum than plain ACS's (GAGA's definition of the point after a jump), so it is
        opt-in.
        """
        st = self.state
        step, step_b = p1.coef - p0.coef, p1.intercept - p0.intercept
        best, g_best = p1, st.sys.objective(p1, lam)
        t = 2.0
        while t <= st.o.acs_extrapolate_max:
            cand = replace(p1, coef=p0.coef + t * step, intercept=p0.intercept + t * step_b)
            g = st.sys.objective(cand, lam)
            if not g < g_best:
                break
            best, g_best = cand, g
            t *= 2.0
        if best is p1:
            return p1, v1
        return best, st.sp.v_star(st.sys.losses(best), lam)

    def try_polish(self, lam: float, params: Params, rounds: int) -> bool:
        """Polish ``params`` at ``lam``; keep it if it is a followable, stable partial optimum."""
        sysm, o = self.state.sys, self.state.o
        sysm.init_from(params, lam)
        res = self.polish(lam, max_rounds=rounds, trial=True)
        if not (res <= 1e3 * o.newton_tol and sysm.consistent(lam, o.event_tol).size == 0):
            return False
        g0 = sysm.objective(params, lam)
        g1 = sysm.objective(sysm.params(), lam)
        if g1 > g0 + 1e-10 * max(1.0, abs(g0)):
            return False
        return sysm.stable(sysm.theta(), lam) and self.can_continue(lam)

    def can_continue(self, lam: float) -> bool:
        """Every event function stays >= 0 a small step ``eps`` after ``lam``."""
        sysm = self.state.sys
        theta = sysm.theta()
        eps = 1e-7 * max(1.0, lam)
        d = self.equation.rhs(lam, np.append(theta, 0.0))[:-1]
        h_after = self.equation.event_values(theta + eps * d, lam + eps)
        return bool(np.all(h_after >= -1e-3 * eps * sysm.event_scale(lam + eps)))

    def polish(self, lam: float, max_rounds: int = 100, trial: bool = False) -> float:
        """Newton on ``F`` with the current sets, re-assigning violated indices until consistent.

        ``trial`` (a trial polish of a warm start, whose point is kept only if it converges):
        give up on a singular Jacobian (:meth:`PathEquation.newton`'s ``stop_singular``), and, with
        ``EngineOptions.polish_cycle_exit``, as soon as the re-assignment returns to a set
        assignment it has had (:meth:`PathSystem.sets_key`): on the same sets Newton lands on
        the same root of ``F = 0`` again, so the re-assignment cycles (``A -> B -> A`` is the
        common case) and the trial would fail after its rounds.  An exhausted trial returns
        without a last Newton, whose point would be discarded.
        """
        st, newton = self.state, self.equation.newton
        sysm, o = st.sys, st.o
        seen = None
        if trial and o.polish_cycle_exit:
            key = sysm.sets_key()
            seen = None if key is None else {key}
        for _ in range(max_rounds):
            theta, res = newton(sysm.theta(), lam, max_iter=15, stop_singular=trial)
            sysm.set_theta(theta)
            bad = sysm.consistent(lam, tol=o.event_tol)
            if bad.size == 0:
                return res
            sysm.move(bad, lam)
            if seen is not None:
                key = sysm.sets_key()
                if key in seen:
                    st.n_polish_cycles += 1
                    return np.inf
                seen.add(key)
        if trial and o.polish_cycle_exit:
            return np.inf
        theta, res = newton(sysm.theta(), lam, max_iter=15, stop_singular=trial)
        sysm.set_theta(theta)
        return np.inf
