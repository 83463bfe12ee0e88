"""The path equation at one point: the tangent, the event functions and the projection onto ``F = 0``.

:class:`PathEquation` is the tracker's collaborator that every other one stands on: stepping,
event location, critical points, warm starts, the recorded points
(:mod:`~spl_bench.gaga.core.stepping`, :mod:`~spl_bench.gaga.core.events`,
:mod:`~spl_bench.gaga.core.critical`, :mod:`~spl_bench.gaga.core.warm`,
:mod:`~spl_bench.gaga.core.record`) and the predictor-corrector stepper
(:mod:`~spl_bench.gaga.core.continuation`) use its three methods.  It calls no other collaborator.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor
from spl_bench.gaga.core.state import TrackState

Array = NDArray[np.float64]


class PathEquation:
    """``rhs`` (the tangent), ``event_values`` and ``newton`` of the state's system.

    Uses the state's ``sys`` (the :class:`~spl_bench.gaga.core.system_base.PathSystem`) and ``o``
    (the :class:`~spl_bench.gaga.core.options.EngineOptions`) and counts into its ``n_rhs``,
    ``n_singular``, ``n_lstsq``; keeps the factor of the latest ``rhs`` evaluation
    (``last_factor``, ``last_sign``) and its memos.
    """

    def __init__(self, state: TrackState) -> None:
        self.state = state
        self.last_factor: AnyFactor | None = None  # factorised J of the latest rhs evaluation
        self.last_sign = 0.0  # its sign of det J
        # ((lam, sets version), theta, rhs) of the latest rhs evaluation
        self._rhs_memo: tuple[tuple[float, int], Array, Array] | None = None
        self._events_memo: list[tuple[tuple[float, int], Array, Array]] = []

    def rhs(self, lam: float, ext: Array) -> Array:
        """The path ODE at ``(lam, ext)``: ``(dtheta/dlam, 0)`` with ``dtheta/dlam = -J_theta^{-1} J_lam``
        (Theorem 3; ``ext`` is ``theta`` with a trailing 0).  Keeps the factor of ``J_theta`` and its
        sign of ``det J`` (``last_factor``, ``last_sign``); the latest point is memoised."""
        st = self.state
        theta = ext[:-1]
        memo = self._rhs_memo
        if memo is not None and memo[0] == (lam, st.sys.version) and np.array_equal(memo[1], theta):
            return memo[2].copy()  # the same point again (recorded, then continued from)
        st.n_rhs += 1
        f, Jl = st.sys.factor(theta, lam)
        self.last_factor, self.last_sign = f, f.sign
        if f.singular:
            st.n_singular += 1
            st.n_lstsq += int(f.least_squares)
        out = np.append(f.solve(-Jl), 0.0)
        self._rhs_memo = ((lam, st.sys.version), theta.copy(), out.copy())
        return out

    def event_values(self, theta: Array, lam: float) -> Array:
        """All event functions at ``(theta, lam)``, memoised for the two latest points (same sets).

        The continuation check of a critical point and the first-step prediction of the
        next segment evaluate the same two points.
        """
        sysm = self.state.sys
        key = (lam, sysm.version)
        for k, th, h in self._events_memo:
            if k == key and np.array_equal(th, theta):
                return h
        h = sysm.events(theta, lam)
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
        sysm, tol = self.state.sys, self.state.o.newton_tol
        scale = sysm.residual_scale()
        F = sysm.residual(theta, lam)
        res = float(np.abs(F).max(initial=0.0)) / scale
        if chord is not None and chord.n == theta.shape[0]:
            for _ in range(6):
                if res <= tol:
                    return theta, res
                theta_new = theta - chord.solve(F)
                F_new = sysm.residual(theta_new, lam)
                res_new = float(np.abs(F_new).max(initial=0.0)) / scale
                if not res_new <= 0.5 * res:
                    break
                theta, F, res = theta_new, F_new, res_new
        for _ in range(max_iter):
            if res <= tol:
                break
            fac = sysm.factor(theta, lam)[0]
            if stop_singular and fac.least_squares:
                return theta, np.inf
            step = fac.solve(F)
            t = 1.0
            for _ in range(12):  # backtracking on the residual
                theta_new = theta - t * step
                F_new = sysm.residual(theta_new, lam)
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
