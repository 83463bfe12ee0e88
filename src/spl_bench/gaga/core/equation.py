"""The path equation at one point: the tangent, the event functions and the projection onto ``F = 0``.

:class:`_PathEquation` is a mixin of :class:`~spl_bench.gaga.core.tracker._Tracker`; every other
part of the tracker (stepping, event location, critical points, warm starts) and the
predictor-corrector stepper (:mod:`~spl_bench.gaga.core.continuation`) stand on its three methods.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor

Array = NDArray[np.float64]


class _PathEquation:
    """``rhs`` (the tangent), ``event_values`` and ``newton`` of the tracker's system.

    Uses the tracker's ``sys`` (the :class:`~spl_bench.gaga.core.system_base.PathSystem`), ``o``
    (the :class:`~spl_bench.gaga.core.options.EngineOptions`), its counters ``n_rhs``,
    ``n_singular``, ``n_lstsq`` and its memos (``_rhs_memo``, ``_events_memo``, ``last_factor``,
    ``last_sign``), all set by ``_Tracker.__init__``.
    """

    def rhs(self, lam: float, ext: Array) -> Array:
        """The path ODE at ``(lam, ext)``: ``(dtheta/dlam, 0)`` with ``dtheta/dlam = -J_theta^{-1} J_lam``
        (Theorem 3; ``ext`` is ``theta`` with a trailing 0).  Keeps the factor of ``J_theta`` and its
        sign of ``det J`` (``last_factor``, ``last_sign``); the latest point is memoised."""
        theta = ext[:-1]
        memo = self._rhs_memo
        if memo is not None and memo[0] == (lam, self.sys.version) and np.array_equal(memo[1], theta):
            return memo[2].copy()  # the same point again (recorded, then continued from)
        self.n_rhs += 1
        f, Jl = self.sys.factor(theta, lam)
        self.last_factor, self.last_sign = f, f.sign
        if f.singular:
            self.n_singular += 1
            self.n_lstsq += int(f.least_squares)
        out = np.append(f.solve(-Jl), 0.0)
        self._rhs_memo = ((lam, self.sys.version), theta.copy(), out.copy())
        return out

    def event_values(self, theta: Array, lam: float) -> Array:
        """All event functions at ``(theta, lam)``, memoised for the two latest points (same sets).

        The continuation check of a critical point and the first-step prediction of the
        next segment evaluate the same two points.
        """
        key = (lam, self.sys.version)
        for k, th, h in self._events_memo:
            if k == key and np.array_equal(th, theta):
                return h
        h = self.sys.events(theta, lam)
        self._events_memo = [(key, theta.copy(), h), *self._events_memo[:1]]
        return h

    def newton(self, theta: Array, lam: float, max_iter: int = 8,
               chord: AnyFactor | None = None, stop_singular: bool = False) -> tuple[Array, float]:
        """Project ``theta`` onto ``F(., lam) = 0``; return it and the relative residual.

        With ``chord`` (a factorised Jacobian from a nearby point) the cheap chord
        iteration is tried first and kept while it at least halves the residual;
        full Newton with backtracking finishes.  With ``stop_singular`` a Jacobian that
        needs the least-squares fallback ends the iteration with an infinite residual
        (a trial polish: such sets are not those of a followable partial optimum, and the
        least-squares solves of a large singular system cost more than the rest of the trial).
        """
        scale = self.sys.residual_scale()
        F = self.sys.residual(theta, lam)
        res = float(np.abs(F).max(initial=0.0)) / scale
        if chord is not None and chord.n == theta.shape[0]:
            for _ in range(6):
                if res <= self.o.newton_tol:
                    return theta, res
                theta_new = theta - chord.solve(F)
                F_new = self.sys.residual(theta_new, lam)
                res_new = float(np.abs(F_new).max(initial=0.0)) / scale
                if not res_new <= 0.5 * res:
                    break
                theta, F, res = theta_new, F_new, res_new
        for _ in range(max_iter):
            if res <= self.o.newton_tol:
                break
            fac = self.sys.factor(theta, lam)[0]
            if stop_singular and fac.least_squares:
                return theta, np.inf
            step = fac.solve(F)
            t = 1.0
            for _ in range(12):  # backtracking on the residual
                theta_new = theta - t * step
                F_new = self.sys.residual(theta_new, lam)
                res_new = float(np.abs(F_new).max(initial=0.0)) / scale
                if not np.isfinite(res_new):
                    res_new = np.inf
                if res_new < res:
                    break
                t *= 0.5
            if not res_new < res:
                break
            theta, F, res = theta_new, F_new, res_new
        return theta, res
