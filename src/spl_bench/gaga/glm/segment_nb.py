"""Compiled segment follower of the lasso age-path (``EngineOptions.method="compiled"``).

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path is the solution of GAGA eq. (5) for the lasso,

    F(w_A, lam) = X_LA^T (v*(ell, lam) * (X_LA w_A - y_L)) + n alpha sign_A = 0,

with ``ell = (y - x^T w)^2 / 2``, ``L`` the samples not in D and ``v*`` the SP-regularizer's
closed form on M (1 on E).  Its Jacobians are

    J_w = X_LA^T diag(v + (dv*/dell) r^2) X_LA,    J_lam = X_LA^T ((dv*/dlam) r),   r = X_LA w_A - y_L.

This module follows one segment the way :class:`~spl_bench.gaga.core.continuation.PredictorCorrector`
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

from spl_bench.gaga.core.system_base import EVENT, FULL, GAVE_UP, REACHED
from spl_bench.sp.base import EASY, HARD, MIXED, SPRegularizer
from spl_bench.sp.hard import HardSP
from spl_bench.sp.linear import LinearSP
from spl_bench.sp.log import LogSP
from spl_bench.sp.mixture import MixtureSP
from spl_bench.sp.polynomial import PolynomialSP

# SP-regularizer kinds (``SPRegularizer.compiled_kind``)
SP_HARD, SP_LINEAR, SP_MIXTURE, SP_LOG, SP_POLYNOMIAL = 0, 1, 2, 3, 4

#: interior points of a step (fractions) where the events are checked on the interpolant
INTERIOR = np.array([0.2, 0.4, 0.6, 0.8])
#: step halvings tried when the corrector fails before the segment is handed back
MAX_HALVINGS = 6
#: bounds of the factor of the next step size
GROW, SHRINK = 2.0, 0.5
#: iterative refinement of the tangent on an earlier factor (:func:`tangent`): at most this many
#: iterations, accepted at this relative residual, given up when the residual does not shrink
#: by this factor per iteration
REFINE_MAX, REFINE_TOL, REFINE_RATE = 8, 1e-10, 0.5


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
    1e-13 times the largest, the test of :func:`spl_bench.gaga.core.linalg._lu`).
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
def _sets(X: np.ndarray, y: np.ndarray, active: np.ndarray, code: np.ndarray, sign: np.ndarray):
    """The arrays of the current sets: ``(acols, icols, X_A, X_I, X_LA, y_L, code_L, sign_A)``."""
    acols = np.flatnonzero(active)
    icols = np.flatnonzero(np.logical_not(active))
    XA = np.ascontiguousarray(X[:, acols])
    XI = np.ascontiguousarray(X[:, icols])
    live = np.flatnonzero(code != HARD)
    XL = np.ascontiguousarray(XA[live])
    return acols, icols, XA, XI, XL, y[live].copy(), code[live].copy(), sign[acols].copy()


@njit(cache=True)
def tangent(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, w: np.ndarray, t: float, kind: int, p: float,
            LU: np.ndarray, perm: np.ndarray, sign_ref: float, use_ref: bool):
    """``w'(t) = -J_w^{-1} J_lam``: ``(tangent, LU, perm, sign of det J_w, ok, factorisations)``.

    With ``use_ref``, by iterative refinement on the factor ``(LU, perm)`` of a nearby ``J_w``
    (the reference): each iteration costs two products with ``X_LA`` instead of the ``n k^2``
    of forming ``J_w``.  It is accepted when the residual falls to ``REFINE_TOL`` of its scale
    and contracts by at least ``REFINE_RATE`` per iteration: then ``J_w = J_ref (I + E)`` with
    ``rho(E) < 1`` along the way, so ``det J_w`` has the reference's sign (a fold, where it
    changes sign, cannot be refined across).  Otherwise ``J_w`` is formed and factorised,
    and becomes the reference.
    """
    r = XL @ w - yL
    v, dl, dlam = np.empty_like(r), np.empty_like(r), np.empty_like(r)
    _weights(r, cL, t, kind, p, v, dl, dlam)
    D = v + dl * r * r
    b = -(XL.T @ (dlam * r))
    if use_ref and LU.shape[0] == w.size:
        x = lu_solve(LU, perm, b)
        prev = np.inf
        for _ in range(REFINE_MAX):
            Jx = XL.T @ (D * (XL @ x))
            res = b - Jx
            rn = _max_abs(res)
            if not np.isfinite(rn):
                break
            if rn <= REFINE_TOL * max(_max_abs(b), _max_abs(Jx), 1e-300):
                return x, LU, perm, sign_ref, True, 0
            if rn > REFINE_RATE * prev:
                break
            prev = rn
            x = x + lu_solve(LU, perm, res)
    J = (XL.T * D) @ XL
    LUn, permn, sign, ok = lu_factor(J)
    if not ok:
        return b, LUn, permn, 0.0, False, 1
    return lu_solve(LUn, permn, b), LUn, permn, sign, True, 1


@njit(cache=True)
def _start(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL, w, t, LU_ref, perm_ref, sign_ref,
           use_ref):
    """The state a segment starts from: ``(LU, perm, sign of det J, tangent, events at (w, t),
    events a step ``eps`` along the tangent, ok, factorisations)`` (:func:`tangent`)."""
    dw, LU, perm, sign, ok, nf = tangent(XL, yL, cL, w, t, kind, p, LU_ref, perm_ref, sign_ref, use_ref)
    if not ok:
        e = np.empty(0)
        return LU, perm, sign, w.copy(), e, e, False, nf
    eps = 1e-7 * max(1.0, t)
    ha = events(XA, XI, y, code, sign_A, acols, icols, lev, w, t, kind, p)
    hb = events(XA, XI, y, code, sign_A, acols, icols, lev, w + eps * dw, t + eps, kind, p)
    return LU, perm, sign, dw, ha, hb, True, nf


@njit(cache=True)
def _record(ages, recw, recd, rkind, rseg, i, t, acols, wA, dA, kind, seg):
    """Record ``i``: age ``t``, the coefficients and tangent of the active features ``acols``
    (zero elsewhere), its kind (0 step, 1 critical, 2 after) and segment offset."""
    ages[i] = t
    recw[i] = 0.0
    recd[i] = 0.0
    for j in range(acols.size):
        recw[i, acols[j]] = wA[j]
        recd[i, acols[j]] = dA[j]
    rkind[i] = kind
    rseg[i] = seg


@njit(cache=True)
def _segment(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL, lam0, w0, LU, perm, sign0, dw,
             ha, hb, lam_max, max_step, newton_tol, event_tol, dense_tol, ages, recw, recd, rkind, rseg, n_rec,
             seg, counts):
    """Follow one segment from ``(lam0, w0)`` (its :func:`_start` state) until the first event,
    ``lam_max`` or a full record buffer.

    Accepted steps are written to the record buffers (full coefficient vectors, kind 0).
    Returns ``(status, n_rec, t_end, w_end, crossed, tangent, LU, perm)``: with ``EVENT`` the
    located critical point, the crossed event positions (those violated at the step end, or at
    the interior point that saw them), the tangent there and the factor it was solved with (a
    change of the sign of ``det J`` up to the critical point is a fold: ``GAVE_UP``); otherwise
    ``t_end`` is the last accepted age.
    ``counts`` gathers the factorisations, rejected and accepted steps, and the tangents
    refined and factorised (``follow``).
    """
    n = y.size
    k = w0.size
    d = acols.size + icols.size
    no_cross = np.empty(0, dtype=np.int64)
    no_tan = np.empty(0)
    ok_res = 1e3 * newton_tol
    cap = ages.size
    t, w = lam0, w0.copy()

    # first step: a little past the first event predicted along the tangent (_Tracker.first_step)
    span = lam_max - t
    eps = 1e-7 * max(1.0, t)
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
            return FULL, n_rec, t, w, no_cross, no_tan, LU, perm
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
            w1, res, nl = project(XL, yL, cL, lev * sign_A, lev, w + h * dw, t1, kind, p, LU, perm, True,
                                  newton_tol)
            counts[0] += nl
            if res <= ok_res:
                d1, LU1, perm1, sign1, ok, nf = tangent(XL, yL, cL, w1, t1, kind, p, LU, perm, sign0, False)
                counts[0] += nf
                counts[3 + nf] += 1
                if not ok:
                    return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
                wm = 0.5 * (w + w1) + 0.125 * h * (dw - d1)
                pm, res_m, nl = project(XL, yL, cL, lev * sign_A, lev, wm, t + 0.5 * h, kind, p, LU1, perm1,
                                        True, newton_tol)
                counts[0] += nl
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
            counts[1] += 1
            if h <= 1e-12 * max(1.0, abs(t)):
                break
        if not accepted or sign1 != sign0:
            # the corrector fails even on short steps, or det J changes sign (a fold): the
            # reference route retakes the step and locates the fold
            return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm

        # ---- events at the step end, then at the interior points of the interpolant
        wscale = 1e-3 + _max_abs(w)
        he = events(XA, XI, y, code, sign_A, acols, icols, lev, w1, t1, kind, p)
        sc = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, t1)[1])
        crossed = np.flatnonzero(he < -event_tol * sc)
        t_end, w_end = t1, w1
        for f in INTERIOR:
            s = t + f * h
            ws = _hermite(t, h, w, w1, dw, d1, s)
            hs = events(XA, XI, y, code, sign_A, acols, icols, lev, ws, s, kind, p)
            scs = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, s)[1])
            if np.any(hs < -event_tol * scs):  # confirmed on the projected point
                ps, res_s, nl = project(XL, yL, cL, lev * sign_A, lev, ws, s, kind, p, LU1, perm1, True,
                                        newton_tol)
                counts[0] += nl
                if res_s > ok_res:
                    return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
                bs = np.flatnonzero(events(XA, XI, y, code, sign_A, acols, icols, lev, ps, s, kind, p)
                                    < -event_tol * scs)
                if bs.size:
                    crossed, t_end, w_end = bs, s, ps
                    break
        if crossed.size:
            t_star, w_star, ok = _locate(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL,
                                         lev * sign_A, newton_tol, event_tol, wscale, crossed,
                                         t, h, w, w1, dw, d1, t_end, w_end, LU1, perm1)
            if not ok:
                return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
            # the tangent at the critical point on these sets, and the sign of det J there
            d_s, LUs, perms, sign_s, ok, nf = tangent(XL, yL, cL, w_star, t_star, kind, p, LU1, perm1, sign1, True)
            counts[0] += nf
            counts[3 + nf] += 1
            if not ok or sign_s != sign0:  # a fold inside the step: the reference route locates it
                return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
            return EVENT, n_rec, t_star, w_star, crossed, d_s, LUs, perms

        # ---- accept: record the projected end and its tangent
        _record(ages, recw, recd, rkind, rseg, n_rec, t1, acols, w1, d1, 0, seg)
        n_rec += 1
        counts[2] += 1
        t, w, dw, LU, perm = t1, w1, d1, LU1, perm1
        if t >= lam_max:
            return REACHED, n_rec, t, w, no_cross, no_tan, LU, perm
        grow = GROW if err == 0.0 else min(GROW, max(SHRINK, 0.9 * (dense_tol / err) ** 0.25))
        h = h * grow


@njit(cache=True)
def _move(pos, X, y, active, sign, w, code, lam, kind, p, moves, n_mv, ev):
    """``GLMSystem.move`` of the event positions ``pos`` (sorted, unique) at ``lam``; each move
    is written to ``moves`` as ``(event, index, is_feature, from, to)`` (features: 1 active,
    0 inactive; samples: their set codes).  Returns the new number of moves."""
    n = y.size
    d = active.size
    lo, hi = sp_thresholds(kind, p, lam)
    mixed_ok = hi - lo > 1e-12 * max(1.0, hi)
    vr = np.empty(0)
    for q in pos:
        if q < d:
            j = q
            if active[j]:
                active[j] = False
                w[j] = 0.0
                sign[j] = 0.0
                moves[n_mv, 3], moves[n_mv, 4] = 1, 0
            else:
                if vr.size == 0:  # v ell' before any move (features come first in pos)
                    r = X @ w - y
                    v, dl, dlam = np.empty(n), np.empty(n), np.empty(n)
                    _weights(r, code, lam, kind, p, v, dl, dlam)
                    vr = v * r
                g = 0.0
                for i in range(n):
                    g += X[i, j] * vr[i]
                active[j] = True
                w[j] = 0.0
                sign[j] = 1.0 if g < 0 else -1.0  # L1.entering_sign
                moves[n_mv, 3], moves[n_mv, 4] = 0, 1
            moves[n_mv, 0], moves[n_mv, 1], moves[n_mv, 2] = ev, j, 1
        else:
            i = (q - d) % n
            upper = (q - d) >= n
            old = code[i]
            if old == EASY:
                new = MIXED if mixed_ok else HARD
            elif old == MIXED:
                new = HARD if upper else EASY
            else:
                new = MIXED if mixed_ok else EASY
            code[i] = new
            moves[n_mv, 0], moves[n_mv, 1], moves[n_mv, 2] = ev, i, 0
            moves[n_mv, 3], moves[n_mv, 4] = old, new
        n_mv += 1
    return n_mv


@njit(cache=True)
def follow(X: np.ndarray, y: np.ndarray, active: np.ndarray, sign: np.ndarray, w: np.ndarray,
           code: np.ndarray, lev: float, kind: int, p: float, lam0: float, lam_max: float, max_step: float,
           newton_tol: float, event_tol: float, dense_tol: float, cap: int, max_events: int,
           last_event: float):
    """Follow the path from ``lam0`` through its turning points until ``lam_max``, a jump, a
    point the compiled loop leaves to the tracker, or full buffers.

    ``active``, ``sign``, ``w`` (full coefficient vector) and ``code`` are the state; they are
    updated in place.  Each critical point is handled as ``_Tracker.event`` handles it: the
    fired positions move, the point is recorded with the old sets' tangent (kind 1), and the
    continuation check (Newton on the new sets, every event function ``>= 0`` a step ``1e-7``
    on, indices at their boundary that would cross at once moved too, 10 rounds) decides.  A
    turning point, or a discontinuous one that Newton resolves at the same age (``v*`` jumps),
    is recorded again with the new sets (kind 2) and the loop goes on; any other outcome
    leaves the state on the old sets at the critical point and returns ``EVENT`` with the
    crossed positions, for the tracker's own event handling (its jumps and warm starts).
    It returns after a critical point at the same age as the one before (``last_event`` for
    the first), so the tracker sees chattering as it would on its own route.

    Returns ``(status, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves,
    t_end, crossed, counts)``: the records (age, coefficients, tangent, kind 0 step / 1
    critical / 2 after, segment offset), the handled critical points (age, kind 0 turning /
    1 discontinuous) with their moves (``_move``), the age reached and, with ``EVENT``, the
    crossed positions; ``counts`` = (factorisations, rejected steps, accepted steps, tangents
    refined on a nearby factor, tangents factorised).
    """
    n = y.size
    d = X.shape[1]
    ages = np.empty(cap)
    recw = np.empty((cap, d))
    recd = np.empty((cap, d))
    rkind = np.zeros(cap, dtype=np.int8)
    rseg = np.zeros(cap, dtype=np.int64)
    ev_lam = np.empty(max(max_events, 1))
    ev_kind = np.zeros(max(max_events, 1), dtype=np.int8)
    moves = np.empty((4 * cap + d + 2 * n, 5), dtype=np.int64)
    counts = np.zeros(5, dtype=np.int64)
    n_rec = n_ev = n_mv = 0
    no_cross = np.empty(0, dtype=np.int64)
    t = lam0
    acols, icols, XA, XI, XL, yL, cL, sign_A = _sets(X, y, active, code, sign)
    wA = w[acols].copy()
    LU, perm, sign0, dw, ha, hb, ok, nf = _start(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL,
                                                 cL, wA, t, np.empty((0, 0)), np.empty(0, dtype=np.int64), 0.0,
                                                 False)
    counts[0] += nf
    counts[3 + nf] += 1
    if not ok:
        return (GAVE_UP, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                no_cross, counts)
    while True:
        status, n_rec, t, wA, crossed, d_old, LU, perm = _segment(
            XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL, t, wA, LU, perm, sign0, dw, ha, hb,
            lam_max, max_step, newton_tol, event_tol, dense_tol, ages, recw, recd, rkind, rseg, n_rec, n_ev,
            counts)
        w[acols] = wA
        if status != EVENT:
            return (status, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    no_cross, counts)
        if n_ev >= max_events or n_rec + 2 > cap or n_mv + d + 2 * n > moves.shape[0]:
            return (EVENT, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    crossed, counts)
        # ---- the critical point at t, on the old sets (_Tracker.event)
        h = events(XA, XI, y, code, sign_A, acols, icols, lev, wA, t, kind, p)
        sc = _scale(d, n, acols.size, acols, 1e-3 + _max_abs(w), sp_thresholds(kind, p, t)[1])
        fire_mask = h < -event_tol * sc
        for q in crossed:
            if h[q] <= 1e3 * event_tol * sc[q]:
                fire_mask[q] = True
        fire = np.flatnonzero(fire_mask)
        # ---- move, keeping what is needed to undo it
        active0, sign_0, w0, code0 = active.copy(), sign.copy(), w.copy(), code.copy()
        n_mv0, n_rec0 = n_mv, n_rec
        n_mv = _move(fire, X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
        # (w after the moves: exact zeros where features left, as GLMSystem.move leaves them)
        _record(ages, recw, recd, rkind, rseg, n_rec, t, acols, w[acols], d_old, 1, n_ev)
        n_rec += 1
        moved = fire_mask
        # ---- continuation check on the new sets
        ok = False
        for _ in range(10):
            acols, icols, XA, XI, XL, yL, cL, sign_A = _sets(X, y, active, code, sign)
            wA, res, nl = project(XL, yL, cL, lev * sign_A, lev, w[acols].copy(), t, kind, p, LU, perm, False,
                                  newton_tol)
            counts[0] += nl
            if res > 1e3 * newton_tol:
                break
            w[acols] = wA
            eps = 1e-7 * max(1.0, t)
            LU, perm, sign0, dw, ha, hb, okf, nf = _start(XA, XI, y, code, sign_A, acols, icols, lev, kind, p,
                                                          XL, yL, cL, wA, t, LU, perm, sign0, True)
            counts[0] += nf
            counts[3 + nf] += 1
            if not okf:  # singular: the tracker's least-squares fallback
                break
            if t + eps >= lam_max:
                ok = True
                break
            sc = _scale(d, n, acols.size, acols, 1e-3 + _max_abs(w), sp_thresholds(kind, p, t + eps)[1])
            fail = np.flatnonzero(hb < -1e-3 * eps * sc)
            if fail.size == 0:
                ok = True
                break
            new_mask = np.zeros(moved.size, dtype=np.bool_)
            all_at_bound = True
            for q in fail:
                if ha[q] <= 1e3 * event_tol * sc[q]:
                    if not moved[q]:
                        new_mask[q] = True
                else:
                    all_at_bound = False
            new = np.flatnonzero(new_mask)
            if not all_at_bound or new.size == 0:
                break
            for q in new:
                moved[q] = True
            n_mv = _move(new, X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
        if not ok:
            # undo: the tracker handles this critical point (a jump)
            active[:], sign[:], w[:], code[:] = active0, sign_0, w0, code0
            n_mv, n_rec = n_mv0, n_rec0
            acols, icols, XA, XI, XL, yL, cL, sign_A = _sets(X, y, active, code, sign)
            return (EVENT, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    crossed, counts)
        gap = _max_abs(w - w0)
        ev_lam[n_ev] = t
        ev_kind[n_ev] = 1 if gap > 1e-7 * (1.0 + _max_abs(w0)) else 0
        n_ev += 1
        _record(ages, recw, recd, rkind, rseg, n_rec, t, acols, w[acols], dw, 2, n_ev)
        n_rec += 1
        prev = ev_lam[n_ev - 2] if n_ev >= 2 else last_event
        if t - prev <= 1e-12 * max(1.0, t) or t >= lam_max:
            # the same age as the critical point before: the tracker counts the repeats
            return (REACHED if t >= lam_max else FULL, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam,
                    ev_kind, n_mv, moves, t, no_cross, counts)
        wA = w[acols].copy()


@njit(cache=True)
def _crossed_min(XA, XI, y, code, sign_A, slot, lev, w, lam, kind, p, crossed, wscale, event_tol):
    """``min`` over the ``crossed`` positions of (event function + its tolerance) at ``(w, lam)``:
    the rows of the samples involved only, and every residual only when an inactive feature
    is among them (its subgradient sums over all samples)."""
    n = y.size
    d = slot.size
    lo, hi = sp_thresholds(kind, p, lam)
    vr = np.empty(0)
    for q in crossed:
        if q < d and slot[q] < 0:
            r = XA @ w - y
            v, dl, dlam = np.empty(n), np.empty(n), np.empty(n)
            _weights(r, code, lam, kind, p, v, dl, dlam)
            vr = v * r
            break
    out = np.inf
    for q in crossed:
        if q < d:
            sl = slot[q]
            if sl >= 0:
                val = sign_A[sl] * w[sl] + event_tol * wscale
            else:
                g = 0.0
                col = -sl - 1
                for i in range(n):
                    g += XI[i, col] * vr[i]
                val = 1.0 - abs(g) / lev + event_tol
        else:
            i = (q - d) % n
            ri = -y[i]
            for j in range(w.size):
                ri += XA[i, j] * w[j]
            ell = 0.5 * ri * ri
            c = code[i]
            if q - d >= n:
                val = hi - ell if c == MIXED else np.inf
            elif c == EASY:
                val = lo - ell
            elif c == MIXED:
                val = ell - lo
            else:
                val = ell - hi
            val += event_tol * (1.0 + hi)
        out = min(out, val)
    return out


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
    slot = np.empty(d, dtype=np.int64)  # feature -> position among the active (>= 0) / inactive (< 0)
    for j in range(k):
        slot[acols[j]] = j
    for j in range(icols.size):
        slot[icols[j]] = -(j + 1)

    def H_at(ws, s):
        return _crossed_min(XA, XI, y, code, sign_A, slot, lev, ws, s, kind, p, crossed, wscale, event_tol)

    def H_proj(s):
        ws = _hermite(t0, h, w0, w1, d0, d1, s)
        ps, res, _ = project(XL, yL, cL, grad_pen, lev, ws, s, kind, p, LU, perm, True, newton_tol)
        return H_at(ps, s), ps, res <= 1e3 * newton_tol

    ha = H_at(w0, t0)
    if ha < 0:  # already violated at the step start
        return t0, w0.copy(), True
    sc = _scale(d, n, k, acols, wscale, sp_thresholds(kind, p, t_end)[1])
    ftol = np.inf
    for i in crossed:
        ftol = min(ftol, 1e-3 * event_tol * sc[i])
    # the first sign change of the raw interpolant, on two grids (coarse cell [c_lo, c_hi])
    lo, hi = t0, t_end
    c_lo, c_hi = t0, t_end
    h_lo, h_hi = ha, 0.0
    fine = False
    for level in range(2):
        prev_s, prev_h = lo, h_lo
        found = False
        for j in range(1, 17):
            s = lo + (hi - lo) * j / 16.0
            hs = H_at(_hermite(t0, h, w0, w1, d0, d1, s), s)
            if hs < 0:
                lo, hi, h_lo, h_hi = prev_s, s, prev_h, hs
                found = True
                break
            prev_s, prev_h = s, hs
        if not found:
            break
        if level == 0:
            c_lo, c_hi = lo, hi
        else:
            fine = True
    a, fa = t0, ha
    b, fb, pb = t_end, H_at(w_end, t_end), w_end.copy()
    bracket = False
    if fine and h_lo >= 0 > h_hi:
        # the projected root is within the interpolant's error of the raw one: secant steps on
        # the projected H from the raw root (raw slope) until two points bracket it
        slope = (h_hi - h_lo) / (hi - lo)
        pt = lo - h_lo / slope
        fp, pp, okp = H_proj(pt)
        q = pt - fp / slope
        for _ in range(6):
            if not okp:
                break
            if abs(fp) <= ftol:
                return pt, pp, True
            q = min(max(q, c_lo), c_hi)
            if q == pt:
                break
            fq, pq, okq = H_proj(q)
            if not okq:
                break
            if (fp >= 0) != (fq >= 0):
                if q < pt:
                    u, fu, w_, fw, pw = q, fq, pt, fp, pp
                else:
                    u, fu, w_, fw, pw = pt, fp, q, fq, pq
                if fu >= 0 > fw:
                    a, fa, b, fb, pb = u, fu, w_, fw, pw
                    bracket = True
                break  # H rises through 0 there: an earlier root, left to the fallback
            q_new = q - fq * (q - pt) / (fq - fp) if fq != fp else q
            pt, fp, pp = q, fq, pq
            q = q_new
    if not bracket:
        # a bracket of the projected root: the coarse cell if it holds, else the whole interval
        if c_lo > t0 or c_hi < t_end:
            f_lo, _, ok_lo = H_proj(c_lo) if c_lo > t0 else (ha, w0.copy(), True)
            f_hi, p_hi, ok_hi = H_proj(c_hi) if c_hi < t_end else (fb, pb, True)
            if ok_lo and ok_hi and f_lo >= 0 > f_hi:
                a, fa, b, fb, pb = c_lo, f_lo, c_hi, f_hi, p_hi
    if not (fa >= 0 > fb):
        return t_end, w_end, False
    # Illinois (``core.tracker.illinois``: the same stopping rules)
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
