"""Compiled segment follower of the lasso age-path (``EngineOptions.method="compiled"``).

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path is the solution of GAGA eq. (5) for the lasso,

    F(w_A, lam) = X_LA^T (v*(ell, lam) * (X_LA w_A - y_L)) + n alpha sign_A = 0,

with ``ell = (y - x^T w)^2 / 2``, ``L`` the samples not in D and ``v*`` the SP-regularizer's
closed form on M (1 on E).  Its Jacobians are

    J_w = X_LA^T diag(v + (dv*/dell) r^2) X_LA,    J_lam = X_LA^T ((dv*/dlam) r),   r = X_LA w_A - y_L.

This module follows one segment the way :class:`~spl_bench.gaga.continuation.PredictorCorrector`
does, with the whole loop compiled (numba, ``cache=True``):

* predictor ``w + h w'`` with the tangent ``w' = -J_w^{-1} J_lam``; corrector: chord Newton on
  the step start's LU factor, full Newton with backtracking when the chord does not halve
  the residual (the projection of ``_Tracker.newton``, same relative tolerance);
* one LU factorisation per accepted step, at its end: the end tangent and the sign of
  ``det J_w`` (a change is a fold: the reference route handles it);
* step control by the cubic Hermite interpolant of both ends, checked at the step's middle
  against the projected middle point (``dense_tol``, error ``O(h^4)``);
* events: the same event functions as :meth:`GLMSystem.events` (active ``sign_j w_j``,
  inactive ``1 - |g_j| / (n alpha)``, the loss's distance to the boundaries of the sample's
  set), checked at the step end and at the interior points ``INTERIOR`` of the interpolant;
  the first crossing is located on the *projected* path by regula falsi (Illinois), after a
  scan of the interpolant for the first sign change.

Anything out of the ordinary — a singular ``J_w``, a corrector that fails on short steps, a
change of the sign of ``det J_w``, a located point whose bracket does not hold — returns
``GAVE_UP`` with the steps accepted so far, and the engine continues that segment on its
reference (ODE) route, which has the least-squares fallback, retakes and fold location.

The closed forms of ``v*`` on M are those of :mod:`spl_bench.sp` (one scalar kernel per
regularizer kind, :func:`sp_mixed`; ``tests/test_segment_nb.py`` checks them against the
SP classes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spl_bench.sp.base import EASY, MIXED, SPRegularizer
from spl_bench.sp.hard import HardSP
from spl_bench.sp.linear import LinearSP
from spl_bench.sp.log import LogSP
from spl_bench.sp.mixture import MixtureSP
from spl_bench.sp.polynomial import PolynomialSP

# SP-regularizer kinds (``SPRegularizer.compiled_kind``)
SP_HARD, SP_LINEAR, SP_MIXTURE, SP_LOG, SP_POLYNOMIAL = 0, 1, 2, 3, 4

# exit codes of ``follow``
REACHED, EVENT, FULL, GAVE_UP = 0, 1, 2, 3

#: interior points of a step (fractions) where the events are checked on the interpolant
INTERIOR = np.array([0.2, 0.4, 0.6, 0.8])
#: step halvings tried when the corrector fails before the segment is handed back
MAX_HALVINGS = 6
#: bounds of the factor of the next step size
GROW, SHRINK = 2.0, 0.5


@njit(cache=True)
def sp_mixed(kind: int, p: float, ell: float, lam: float) -> tuple[float, float, float]:
    """``(v*, dv*/dell, dv*/dlam)`` of the closed form on M (not clipped to [0, 1]).

    linear ``1 - ell/lam``; mixture ``gamma (ell^-1/2 - 1/lam)`` (loss clipped at 1e-100);
    LOG ``log(ell + 1 - lam) / log(1 - lam)``; polynomial ``(1 - ell/lam)^(1/(t-1))``.
    ``p``: gamma (mixture) or t (polynomial).  The hard regularizer has no M.
    """
    if kind == SP_LINEAR:
        return 1.0 - ell / lam, -1.0 / lam, ell / (lam * lam)
    if kind == SP_MIXTURE:
        e = max(ell, 1e-100)
        s = np.sqrt(e)
        return p * (1.0 / s - 1.0 / lam), -0.5 * p / (e * s), p / (lam * lam)
    if kind == SP_LOG:
        z = 1.0 - lam
        lz = np.log(z)
        a = ell + z
        d_ell = 1.0 / (a * lz)
        return np.log(a) / lz, d_ell, -(d_ell - np.log(a) / (z * lz * lz))
    if kind == SP_POLYNOMIAL:
        q = 1.0 / (p - 1.0)
        base = 1.0 - ell / lam
        common = q * base ** (q - 1.0)
        return base**q, -common / lam, common * ell / (lam * lam)
    return 0.0, 0.0, 0.0


@njit(cache=True)
def sp_thresholds(kind: int, p: float, lam: float) -> tuple[float, float]:
    """``(lo, hi)``: losses ``<= lo`` are in E, ``>= hi`` in D (``SPRegularizer.thresholds``)."""
    if kind == SP_HARD:
        return np.nextafter(lam, -np.inf), lam
    if kind == SP_MIXTURE:
        lo = lam * p / (lam + p)
        return lo * lo, lam * lam
    return 0.0, lam


@njit(cache=True)
def _weights(r: np.ndarray, code: np.ndarray, lam: float, kind: int, p: float,
             v: np.ndarray, dl: np.ndarray, dlam: np.ndarray) -> None:
    """``v``, ``dv/dell``, ``dv/dlam`` of the residuals ``r`` (tracked set codes) into the outputs."""
    for i in range(r.size):
        c = code[i]
        if c == MIXED:
            v[i], dl[i], dlam[i] = sp_mixed(kind, p, 0.5 * r[i] * r[i], lam)
        else:
            v[i] = 1.0 if c == EASY else 0.0
            dl[i] = 0.0
            dlam[i] = 0.0


@njit(cache=True)
def residual(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, grad_pen: np.ndarray, w: np.ndarray,
             lam: float, kind: int, p: float) -> np.ndarray:
    """``F(w_A, lam)`` on the live rows (``grad_pen = n alpha sign_A``)."""
    r = XL @ w - yL
    v, dl, dlam = np.empty_like(r), np.empty_like(r), np.empty_like(r)
    _weights(r, cL, lam, kind, p, v, dl, dlam)
    return XL.T @ (v * r) + grad_pen


@njit(cache=True)
def jacobians(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, w: np.ndarray, lam: float,
              kind: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``(J_w, J_lam)`` on the live rows (module docstring)."""
    r = XL @ w - yL
    v, dl, dlam = np.empty_like(r), np.empty_like(r), np.empty_like(r)
    _weights(r, cL, lam, kind, p, v, dl, dlam)
    D = v + dl * r * r
    J = (XL.T * D) @ XL
    return J, XL.T @ (dlam * r)


@njit(cache=True)
def lu_factor(J: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """LU with partial pivoting: ``(LU, perm, sign of det J, ok)``.

    ``ok`` is False when ``J`` is singular to working precision (the smallest pivot at most
    1e-13 times the largest, the test of :func:`spl_bench.gaga.linalg._lu`).
    """
    k = J.shape[0]
    LU = J.copy()
    perm = np.arange(k)
    sign = 1.0
    for j in range(k):
        piv, big = j, abs(LU[j, j])
        for i in range(j + 1, k):
            if abs(LU[i, j]) > big:
                piv, big = i, abs(LU[i, j])
        if piv != j:
            for c in range(k):
                LU[j, c], LU[piv, c] = LU[piv, c], LU[j, c]
            perm[j], perm[piv] = perm[piv], perm[j]
            sign = -sign
        d = LU[j, j]
        if d == 0.0 or not np.isfinite(d):
            return LU, perm, 0.0, False
        if d < 0.0:
            sign = -sign
        for i in range(j + 1, k):
            f = LU[i, j] / d
            LU[i, j] = f
            if f != 0.0:
                for c in range(j + 1, k):
                    LU[i, c] -= f * LU[j, c]
    if k:
        adg = np.abs(np.diag(LU))
        if not adg.min() > 1e-13 * max(adg.max(), 1e-300):
            return LU, perm, 0.0, False
    return LU, perm, sign, True


@njit(cache=True)
def lu_solve(LU: np.ndarray, perm: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``J^{-1} b`` from :func:`lu_factor`'s factors."""
    k = b.size
    x = b[perm].copy()
    for i in range(k):
        s = x[i]
        for c in range(i):
            s -= LU[i, c] * x[c]
        x[i] = s
    for i in range(k - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, k):
            s -= LU[i, c] * x[c]
        x[i] = s / LU[i, i]
    return x


@njit(cache=True)
def _max_abs(x: np.ndarray) -> float:
    out = 0.0
    for i in range(x.size):
        a = abs(x[i])
        if not a <= out:  # NaN propagates
            out = a
    return out


@njit(cache=True)
def project(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, grad_pen: np.ndarray, lev: float,
            w: np.ndarray, lam: float, kind: int, p: float, LU: np.ndarray, perm: np.ndarray,
            chord: bool, newton_tol: float) -> tuple[np.ndarray, float, int]:
    """Newton onto ``F(., lam) = 0`` from ``w``: ``(point, relative residual, factorisations)``.

    ``_Tracker.newton``: chord iterations on ``(LU, perm)`` kept while they at least halve the
    residual, then full Newton with backtracking (8 iterations, 12 halvings each).  The
    residual is relative to ``n alpha`` (``L1.kkt_scale``).
    """
    F = residual(XL, yL, cL, grad_pen, w, lam, kind, p)
    res = _max_abs(F) / lev
    n_lu = 0
    if chord and LU.shape[0] == w.size:
        for _ in range(6):
            if res <= newton_tol:
                return w, res, n_lu
            w_new = w - lu_solve(LU, perm, F)
            F_new = residual(XL, yL, cL, grad_pen, w_new, lam, kind, p)
            res_new = _max_abs(F_new) / lev
            if not res_new <= 0.5 * res:
                break
            w, F, res = w_new, F_new, res_new
    for _ in range(8):
        if res <= newton_tol:
            break
        J, _ = jacobians(XL, yL, cL, w, lam, kind, p)
        LUn, permn, _, ok = lu_factor(J)
        n_lu += 1
        if not ok:
            return w, np.inf, n_lu
        step = lu_solve(LUn, permn, F)
        t = 1.0
        w_new, F_new, res_new = w, F, res
        for _ in range(12):
            w_new = w - t * step
            F_new = residual(XL, yL, cL, grad_pen, w_new, lam, kind, p)
            res_new = _max_abs(F_new) / lev
            if not np.isfinite(res_new):
                res_new = np.inf
            if res_new < res:
                break
            t *= 0.5
        if not res_new < res:
            break
        w, F, res = w_new, F_new, res_new
    return w, res, n_lu


@njit(cache=True)
def events(XA: np.ndarray, XI: np.ndarray, y: np.ndarray, code: np.ndarray, sign_A: np.ndarray,
           acols: np.ndarray, icols: np.ndarray, lev: float, w: np.ndarray, lam: float,
           kind: int, p: float) -> np.ndarray:
    """The event functions of :meth:`GLMSystem.events` (lasso): features ``[0, d)``, then the
    samples' distance to the lower (``[d, d + n)``) and upper (``[d + n, d + 2n)``, M only)
    boundary of their set; ``>= 0`` while the sets are valid."""
    n = y.size
    d = acols.size + icols.size
    h = np.empty(d + 2 * n)
    r = XA @ w - y
    lo, hi = sp_thresholds(kind, p, lam)
    v, dl, dlam = np.empty(n), np.empty(n), np.empty(n)
    _weights(r, code, lam, kind, p, v, dl, dlam)
    for j in range(acols.size):
        h[acols[j]] = sign_A[j] * w[j]
    if icols.size:
        g = XI.T @ (v * r)
        for j in range(icols.size):
            h[icols[j]] = 1.0 - abs(g[j]) / lev
    for i in range(n):
        ell = 0.5 * r[i] * r[i]
        c = code[i]
        if c == EASY:
            h[d + i] = lo - ell
            h[d + n + i] = np.inf
        elif c == MIXED:
            h[d + i] = ell - lo
            h[d + n + i] = hi - ell
        else:
            h[d + i] = ell - hi
            h[d + n + i] = np.inf
    return h


@njit(cache=True)
def _scale(d: int, n: int, nA: int, acols: np.ndarray, wscale: float, hi: float) -> np.ndarray:
    """``GLMSystem.event_scale``: ``wscale`` for active features, 1 for inactive ones, ``1 + hi``
    for samples."""
    s = np.ones(d + 2 * n)
    for j in range(nA):
        s[acols[j]] = wscale
    s[d:] = 1.0 + hi
    return s


@njit(cache=True)
def _hermite(t0: float, h: float, w0: np.ndarray, w1: np.ndarray, d0: np.ndarray, d1: np.ndarray,
             s: float) -> np.ndarray:
    """Cubic Hermite interpolant of ``(t0, w0, d0)`` and ``(t0 + h, w1, d1)`` at ``s``."""
    u = (s - t0) / h
    h00 = (1 + 2 * u) * (1 - u) ** 2
    h10 = u * (1 - u) ** 2
    h01 = u * u * (3 - 2 * u)
    h11 = u * u * (u - 1)
    return h00 * w0 + (h10 * h) * d0 + h01 * w1 + (h11 * h) * d1


@njit(cache=True)
def follow(XA: np.ndarray, XI: np.ndarray, y: np.ndarray, code: np.ndarray, sign_A: np.ndarray,
           acols: np.ndarray, icols: np.ndarray, lev: float, kind: int, p: float,
           lam0: float, w0: np.ndarray, lam_max: float, max_step: float,
           newton_tol: float, event_tol: float, dense_tol: float, cap: int):
    """Follow the segment from ``(lam0, w0)`` until the first event, ``lam_max`` or ``cap`` steps.

    Returns ``(status, ages, points, tangents, n_steps, t_end, w_end, crossed, n_lu, n_rejected)``:
    the accepted step ends (projected points and their tangents, at most ``cap``); with
    ``EVENT``, the located critical point ``(t_end, w_end)`` and the crossed event positions
    (those violated at the step end or the interior point that saw them); with ``REACHED`` /
    ``FULL`` / ``GAVE_UP``, ``t_end`` is the last accepted age (``lam0`` if none).
    """
    n = y.size
    k = w0.size
    d = acols.size + icols.size
    live = np.flatnonzero(code != 2)
    XL = np.ascontiguousarray(XA[live])
    yL = y[live].copy()
    cL = code[live].copy()
    grad_pen = lev * sign_A
    ages = np.empty(cap)
    pts = np.empty((cap, k))
    tans = np.empty((cap, k))
    no_cross = np.empty(0, dtype=np.int64)
    ok_res = 1e3 * newton_tol
    n_lu = 0
    n_rej = 0
    n_rec = 0

    # the start: its factor, tangent and sign of det J
    t, w = lam0, w0.copy()
    J, Jl = jacobians(XL, yL, cL, w, t, kind, p)
    LU, perm, sign0, ok = lu_factor(J)
    n_lu += 1
    if not ok:
        return GAVE_UP, ages, pts, tans, 0, t, w, no_cross, n_lu, n_rej
    dw = lu_solve(LU, perm, -Jl)

    # first step: a little past the first event predicted along the tangent (_Tracker.first_step)
    span = lam_max - t
    eps = 1e-7 * max(1.0, t)
    ha = events(XA, XI, y, code, sign_A, acols, icols, lev, w, t, kind, p)
    hb = events(XA, XI, y, code, sign_A, acols, icols, lev, w + eps * dw, t + eps, kind, p)
    best = np.inf
    for i in range(ha.size):
        sl = (hb[i] - ha[i]) / eps
        if np.isfinite(ha[i]) and np.isfinite(sl) and sl < 0:
            best = min(best, max(ha[i], 0.0) / -sl)
    if np.isfinite(best):
        h = min(max(1.5 * best, 1e-9 * max(1.0, t)), max_step, span)
    else:
        h = min(0.01 * span, max_step, span)

    while True:
        if n_rec >= cap:
            return FULL, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
        # ---- one accepted step from (t, w, dw): predictor, corrector, step control
        accepted = False
        w1 = w
        d1 = dw
        LU1, perm1 = LU, perm
        sign1 = sign0
        t1 = t
        err = 0.0
        for _ in range(MAX_HALVINGS + 1):
            h = min(h, max_step)
            t1 = t + h
            if t1 >= lam_max or lam_max - t1 < 1e-12 * max(1.0, abs(t1)):
                t1, h = lam_max, lam_max - t
            w1, res, nl = project(XL, yL, cL, grad_pen, lev, w + h * dw, t1, kind, p, LU, perm, True,
                                  newton_tol)
            n_lu += nl
            if res <= ok_res:
                J, Jl = jacobians(XL, yL, cL, w1, t1, kind, p)
                LU1, perm1, sign1, ok = lu_factor(J)
                n_lu += 1
                if not ok:
                    return GAVE_UP, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
                d1 = lu_solve(LU1, perm1, -Jl)
                wm = 0.5 * (w + w1) + 0.125 * h * (dw - d1)
                pm, res_m, nl = project(XL, yL, cL, grad_pen, lev, wm, t + 0.5 * h, kind, p, LU1, perm1,
                                        True, newton_tol)
                n_lu += nl
                err = _max_abs(pm - wm) / (1.0 + _max_abs(pm))
                if res_m <= ok_res and err <= dense_tol:
                    accepted = True
                    break
                if res_m <= ok_res and err > 0.0:
                    h *= max(0.2, min(SHRINK, 0.9 * (dense_tol / err) ** 0.25))
                else:
                    h *= SHRINK
            else:
                h *= SHRINK
            n_rej += 1
            if h <= 1e-12 * max(1.0, abs(t)):
                break
        if not accepted or sign1 != sign0:
            # the corrector fails even on short steps, or det J changes sign (a fold): the
            # reference route retakes the step and locates the fold
            return GAVE_UP, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej

        # ---- events at the step end, then at the interior points of the interpolant
        wscale = 1e-3 + _max_abs(w)
        hi1 = sp_thresholds(kind, p, t1)[1]
        he = events(XA, XI, y, code, sign_A, acols, icols, lev, w1, t1, kind, p)
        sc = _scale(d, n, k, acols, wscale, hi1)
        crossed = np.flatnonzero(he < -event_tol * sc)
        t_end, w_end = t1, w1
        for f in INTERIOR:
            s = t + f * h
            ws = _hermite(t, h, w, w1, dw, d1, s)
            hs = events(XA, XI, y, code, sign_A, acols, icols, lev, ws, s, kind, p)
            scs = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, s)[1])
            if np.any(hs < -event_tol * scs):  # confirmed on the projected point
                ps, res_s, nl = project(XL, yL, cL, grad_pen, lev, ws, s, kind, p, LU1, perm1, True,
                                        newton_tol)
                n_lu += nl
                if res_s > ok_res:
                    return GAVE_UP, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
                bs = np.flatnonzero(events(XA, XI, y, code, sign_A, acols, icols, lev, ps, s, kind, p)
                                    < -event_tol * scs)
                if bs.size:
                    crossed, t_end, w_end = bs, s, ps
                    break
        if crossed.size:
            t_star, w_star, ok = _locate(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL,
                                         grad_pen, newton_tol, event_tol, wscale, crossed,
                                         t, h, w, w1, dw, d1, t_end, w_end, LU1, perm1)
            if not ok:
                return GAVE_UP, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
            J, _ = jacobians(XL, yL, cL, w_star, t_star, kind, p)
            _, _, sign_s, ok = lu_factor(J)
            n_lu += 1
            if not ok or sign_s != sign0:
                return GAVE_UP, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
            return EVENT, ages, pts, tans, n_rec, t_star, w_star, crossed, n_lu, n_rej

        # ---- accept: record the projected end and its tangent
        ages[n_rec] = t1
        pts[n_rec] = w1
        tans[n_rec] = d1
        n_rec += 1
        t, w, dw, LU, perm = t1, w1, d1, LU1, perm1
        if t >= lam_max:
            return REACHED, ages, pts, tans, n_rec, t, w, no_cross, n_lu, n_rej
        grow = GROW if err == 0.0 else min(GROW, max(SHRINK, 0.9 * (dense_tol / err) ** 0.25))
        h = h * grow


@njit(cache=True)
def _locate(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL, grad_pen,
            newton_tol, event_tol, wscale, crossed, t0, h, w0, w1, d0, d1, t_end, w_end, LU, perm):
    """Age of the first crossing of the ``crossed`` event functions in ``(t0, t_end]``, on the
    projected path: ``(age, projected point, ok)``.

    ``H(s)`` is the smallest crossed event function plus its tolerance at the Newton-projected
    point of age ``s``.  The interpolant is scanned on a grid for the first sign change (two
    levels of 17 points, as ``_Tracker.locate`` scans the dense output); regula falsi
    (Illinois) on the projected ``H`` finishes from that cell, or from the whole interval when
    the cell does not bracket the projected root.
    """
    n = y.size
    d = acols.size + icols.size
    k = w0.size
    xtol = 1e-14 * max(1.0, t_end)

    def H_at(ws, s):
        hs = events(XA, XI, y, code, sign_A, acols, icols, lev, ws, s, kind, p)
        sc = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, s)[1])
        out = np.inf
        for i in crossed:
            out = min(out, hs[i] + event_tol * sc[i])
        return out

    def H_proj(s):
        ws = _hermite(t0, h, w0, w1, d0, d1, s)
        ps, res, _ = project(XL, yL, cL, grad_pen, lev, ws, s, kind, p, LU, perm, True, newton_tol)
        return H_at(ps, s), ps, res <= 1e3 * newton_tol

    ha = H_at(w0, t0)
    if ha < 0:  # already violated at the step start
        return t0, w0.copy(), True
    # the first sign change of the raw interpolant, on two grids
    lo, hi = t0, t_end
    for _level in range(2):
        prev_s = lo
        found = False
        for j in range(1, 17):
            s = lo + (hi - lo) * j / 16.0
            if H_at(_hermite(t0, h, w0, w1, d0, d1, s), s) < 0:
                lo, hi = prev_s, s
                found = True
                break
            prev_s = s
        if not found:
            break
    # a bracket of the projected root: the cell if it holds, else the whole interval
    a, fa = t0, ha
    b, fb, pb = t_end, H_at(w_end, t_end), w_end.copy()
    if lo > t0 or hi < t_end:
        f_lo, _, ok_lo = H_proj(lo) if lo > t0 else (ha, w0.copy(), True)
        f_hi, p_hi, ok_hi = H_proj(hi) if hi < t_end else (fb, pb, True)
        if ok_lo and ok_hi and f_lo >= 0 > f_hi:
            a, fa, b, fb, pb = lo, f_lo, hi, f_hi, p_hi
    if not (fa >= 0 > fb):
        return t_end, w_end, False
    # Illinois (``engine.illinois``: the same stopping rules)
    sc = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, lo)[1])
    ftol = np.inf
    for i in crossed:
        ftol = min(ftol, 1e-3 * event_tol * sc[i])
    side = 0
    for _ in range(60):
        if b - a <= xtol:
            break
        c = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        if not a < c < b:
            c = 0.5 * (a + b)
        fc, pc, okc = H_proj(c)
        if not okc:
            return t_end, w_end, False
        if abs(fc) <= ftol:
            return c, pc, True
        if fc >= 0:
            a, fa = c, fc
            if side == 1:
                fb *= 0.5
            side = 1
        else:
            b, fb, pb = c, fc, pc
            if side == -1:
                fa *= 0.5
            side = -1
    return b, pb, True


def sp_kind(sp: SPRegularizer) -> tuple[int, float] | None:
    """``(kind, parameter)`` of ``sp`` for :func:`sp_mixed`, or ``None`` if this module has no
    closed form of it (exact classes only: a subclass may change the formulas)."""
    kinds = {HardSP: (SP_HARD, ""), LinearSP: (SP_LINEAR, ""), MixtureSP: (SP_MIXTURE, "gamma"),
             LogSP: (SP_LOG, ""), PolynomialSP: (SP_POLYNOMIAL, "t")}
    hit = kinds.get(type(sp))
    if hit is None:
        return None
    return hit[0], float(getattr(sp, hit[1])) if hit[1] else 0.0
