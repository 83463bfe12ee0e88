"""Where the index sets stop holding: the first crossing of an event function inside a solver step.

:class:`EventLocator` is a collaborator of :class:`~spl_bench.gaga.core.tracker._Tracker` on its
:class:`~spl_bench.gaga.core.state.TrackState`: the crossings at a step's end and inside it
(:meth:`~EventLocator.crossings`), the age of the first one on the Newton-projected path
(:meth:`~EventLocator.first_crossing`, :meth:`~EventLocator.locate`, by :func:`illinois`), and the
first step of a segment, a little past the first predicted event (:meth:`~EventLocator.first_step`).
It calls only the path equation (:class:`~spl_bench.gaga.core.equation.PathEquation`).  What
happens at a located critical point is in :mod:`~spl_bench.gaga.core.critical`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.state import TrackState

Array = NDArray[np.float64]

#: relative positions inside each solver step where the event functions are also checked
INTERIOR = np.array([0.2, 0.4, 0.6, 0.8])


def illinois(f: Any, a: float, fa: float, b: float, fb: float, ftol: float, xtol: float,
             max_iter: int = 60) -> float:
    """Root of ``f`` in ``[a, b]`` with ``fa >= 0 > fb``, by the Illinois variant of regula falsi.

    Stops at a point with ``|f| <= ftol`` or when the bracket is shorter than ``xtol``
    (then returns its end on the ``f < 0`` side).  Superlinear on smooth ``f``; the
    bracket is kept, so it cannot leave ``[a, b]``.
    """
    side = 0
    for _ in range(max_iter):
        if b - a <= xtol:
            break
        c = b - fb * (b - a) / (fb - fa)
        if not a < c < b:
            c = 0.5 * (a + b)
        fc = f(c)
        if abs(fc) <= ftol:
            return float(c)
        if fc >= 0:
            a, fa = c, fc
            if side == 1:
                fb *= 0.5
            side = 1
        else:
            b, fb = c, fc
            if side == -1:
                fa *= 0.5
            side = -1
    return float(b)


class EventLocator:
    """Event location on a solver step's dense output (the state's ``sys`` and ``o``; the path
    equation's ``newton`` and ``event_values``)."""

    def __init__(self, state: TrackState, equation: PathEquation) -> None:
        self.state = state
        self.equation = equation

    def first_step(self, theta: Array, d: Array, lam: float, lam_max: float) -> float | None:
        """Initial step of a segment: a little past the first event predicted along ``d``.

        A restarted solver would otherwise begin with a tiny step (LSODA: of first
        order) and need many steps to reach the next critical point; critical points
        are often much closer together than ``max_step``.  Overshooting is harmless: a crossing
        inside the step is located on its dense output.
        """
        event_values = self.equation.event_values
        eps = 1e-7 * max(1.0, lam)
        h0 = event_values(theta, lam)
        h1 = event_values(theta + eps * d, lam + eps)
        with np.errstate(all="ignore"):
            slope = (h1 - h0) / eps
            ok = np.isfinite(h0) & np.isfinite(slope) & (slope < 0)
            dt = np.maximum(h0[ok], 0.0) / -slope[ok]
        if dt.size == 0:
            return None
        step = 1.5 * float(dt.min())
        return float(min(max(step, 1e-9 * max(1.0, lam)), self.state.o.max_step, lam_max - lam))

    def crossings(self, theta1: Array, t_prev: float, t1: float, dense: Any) -> tuple[NDArray[np.intp], float, Array]:
        """Event functions violated at the step ``(t_prev, t1]``: ``(indices, age, projected point)``.

        Checked at the projected step end ``(theta1, t1)``, and at the interior points
        ``INTERIOR`` of the dense output, since an index can cross its boundary and come back
        inside one long step: the first interior point where a violation is confirmed on the
        projected point replaces the end.  No indices: the step end, unchanged.
        """
        o, sysm, eq = self.state.o, self.state.sys, self.equation
        h = eq.event_values(theta1, t1)
        bad = np.flatnonzero(h < -o.event_tol * sysm.event_scale(t1))
        s_in = t_prev + (t1 - t_prev) * INTERIOR
        h_in = sysm.events_many(dense(s_in)[:-1].T, s_in)
        for s, hs in zip(s_in, h_in, strict=True):
            if np.any(hs < -o.event_tol * sysm.event_scale(s)):  # confirm on the projected point
                ths, _ = eq.newton(dense(s)[:-1], s)
                bs = np.flatnonzero(eq.event_values(ths, s) < -o.event_tol * sysm.event_scale(s))
                if bs.size:
                    return bs, float(s), ths
        return bad, t1, theta1

    def first_crossing(self, crossed: NDArray[np.intp], dense: Any, t_prev: float, theta_prev: Array,
                       t_end: float, theta_end: Array) -> tuple[float, Array]:
        """Age of the first crossing of ``crossed`` in ``[t_prev, t_end]`` and its projected point.

        ``H(s)``, the smallest crossed event function on the Newton-projected path at ``s`` (chord
        iterations with the factor at the violating point first), is located by :meth:`locate`;
        ``t_prev`` (the step start, whose projected point is ``theta_prev``) if it is negative there.
        """
        o, sysm, newton = self.state.o, self.state.sys, self.equation.newton
        chord = sysm.factor(theta_end, t_end)[0]
        # age -> (H, projected point); the step start's projected point is known
        hs0 = sysm.events(theta_prev, t_prev, crossed) + o.event_tol * sysm.event_scale(t_prev, crossed)
        memo: dict[float, tuple[float, Array]] = {t_prev: (float(np.min(hs0)), theta_prev)}

        def H(s: float) -> float:
            """Smallest crossed event function on the Newton-projected path at ``s``."""
            if s not in memo:
                th, _ = newton(dense(s)[:-1], s, chord=chord)
                hs = sysm.events(th, s, crossed)
                memo[s] = (float(np.min(hs + o.event_tol * sysm.event_scale(s, crossed))), th)
            return memo[s][0]

        if H(t_prev) < 0:  # already violated at the step start
            t_star = t_prev
        else:
            t_star = self.locate(H, crossed, dense, t_prev, t_end)
        if t_star in memo:
            return t_star, memo[t_star][1]
        return t_star, newton(dense(t_star)[:-1], t_star, chord=chord)[0]

    def locate(self, H: Any, crossed: NDArray[np.intp], dense: Any, a: float, b: float) -> float:
        """Age of the *first* crossing in ``(a, b)`` where ``H(a) >= 0 > H(b)``.

        Past its first crossing an index follows the continuation of the wrong sets and
        may cross back, so a root finder on the whole step could return a later root.
        The raw dense output is scanned on a grid for the first sign change, and that
        grid cell again on a finer grid (two vectorised evaluations); the root there,
        by linear interpolation, starts secant steps on the Newton-projected ``H``
        until two points bracket the projected root, which regula falsi (Illinois)
        then finds.  Projected ``brentq`` is the fallback.
        """
        sysm, tol = self.state.sys, self.state.o.event_tol
        xtol = 1e-14 * max(1.0, b)
        tol_sc = tol * sysm.event_scale(b, crossed)  # the raw scan only seeds the projected search

        def H_raw(s: Array) -> Array:
            return np.min(sysm.events_many(dense(s)[:-1].T, s, crossed) + tol_sc, axis=1)

        lo, hi = a, b
        grid = np.linspace(a, b, 17)
        hg = H_raw(grid)
        neg = np.flatnonzero(hg[1:] < 0)
        if neg.size and hg[neg[0]] >= 0:
            k = int(neg[0])
            lo, hi = float(grid[k]), float(grid[k + 1])
            fine = np.linspace(lo, hi, 17)
            hf = H_raw(fine)
            j = int(np.flatnonzero(hf[1:] < 0)[0]) if np.any(hf[1:] < 0) else 15
            u, w, hu, hw = float(fine[j]), float(fine[j + 1]), float(hf[j]), float(hf[j + 1])
            if hu >= 0 > hw:
                # the projected root is within the ODE error of the raw one: secant steps on the
                # projected H from the raw root (slope of the raw H) until two points bracket it
                ftol = 1e-3 * tol * float(np.min(sysm.event_scale(u, crossed)))
                slope = (hw - hu) / (w - u)
                p = u - hu / slope
                hp = H(p)
                q = p - hp / slope
                for _ in range(6):
                    if abs(hp) <= ftol:
                        return float(p)
                    q = float(min(max(q, lo), hi))
                    if q == p:
                        break
                    hq = H(q)
                    if (hp >= 0) != (hq >= 0):
                        (u, hu), (w, hw) = sorted([(p, hp), (q, hq)])
                        if hu >= 0 > hw:
                            return illinois(H, u, hu, w, hw, ftol=ftol, xtol=xtol)
                        break  # H rises through 0 there: an earlier root, left to the fallback
                    q, p, hp = (q - hq * (q - p) / (hq - hp) if hq != hp else q), q, hq
        if lo > a and H(lo) >= 0 > H(hi):
            return float(brentq(H, lo, hi, xtol=xtol, rtol=1e-15))
        return float(brentq(H, a, b, xtol=xtol, rtol=1e-15))
