"""Compiled segment follower of the lasso age-path (``EngineOptions.method="compiled"``).

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path is the solution of GAGA eq. (5) for the lasso,

    F(w_A, lam) = X_A^T phi + n alpha sign_A = 0,    phi_i = v*(ell_i, lam) r_i,   r = X_A w_A - y,

with ``ell = r^2 / 2`` and ``v*`` the SP-regularizer's closed form on M, 1 on E and 0 on D (the
sums run over all samples; those in D add nothing).  Its Jacobians are

    J_w = X_A^T diag(v + (dv*/dell) r^2) X_A,    J_lam = X_A^T ((dv*/dlam) r).

This module follows the segments the way :class:`~spl_bench.gaga.core.continuation.PredictorCorrector`
does, with the whole loop compiled (numba, ``cache=True``):

* predictor: the cubic Hermite interpolant of the step before, extended (``w + h w'`` on the
  first step of a segment), with the tangent ``w' = -J_w^{-1} J_lam``; corrector: chord Newton
  on the step start's factor, full Newton with backtracking when the chord does not halve the
  residual (the projection of ``_Tracker.newton``, same relative tolerance).  The predictor
  decides the number of iterations, not the point they converge to;
* one ``J_w`` formed and factorised per step, at its end: the end tangent and the sign of
  ``det J_w`` (a change is a fold: the reference route handles it);
* step control by the cubic Hermite interpolant of both ends, checked at the step's middle
  against the projected middle point (``dense_tol``, error ``O(h^4)``): the steps of ``PC``;
* events: the same event functions as :meth:`GLMSystem.events` (active ``sign_j w_j``,
  inactive ``1 - |g_j| / (n alpha)``, the loss's distance to the boundaries of the sample's
  set), checked at the step end and at the interior points ``INTERIOR`` of the interpolant;
  the first crossing is located on the *projected* path by regula falsi (Illinois), after a
  scan of the interpolant for the first sign change.

What a point costs: the follower keeps the residuals ``r = X_A w - y`` of the points it holds
and ``q = X_A w'`` of their tangents.  ``F``, ``J_w``'s weights and the event functions of a
point share its ``r``; the interior points of a step take theirs from the ends'
(:func:`~spl_bench.gaga.glm.events_nb.hermite_r`, ``O(n)``), as the predictor and the middle
point take theirs; a predicted ``r`` only starts Newton (:func:`~spl_bench.gaga.glm.lasso_nb.project_r`
returns every point with its ``r`` computed from it).  At a critical point where only samples
change sets, the features' arrays stay, and Newton and the tangent on the new sets use the
factor of the old ``J_w`` with the Woodbury correction of the moved samples' rank-one changes
(:func:`~spl_bench.gaga.glm.lasso_nb.low_rank`) instead of forming and factorising ``J_w``.

Anything out of the ordinary — a singular ``J_w``, a corrector that fails on short steps, a
change of the sign of ``det J_w``, a located point whose bracket does not hold — returns
``GAVE_UP`` with the steps accepted so far, and the engine continues that segment on its
reference (ODE) route, which has the least-squares fallback, retakes and fold location.

The system (``F``, its Jacobians, the Newton projection and the tangent) is in
:mod:`~spl_bench.gaga.glm.lasso_nb`, the events and their location in
:mod:`~spl_bench.gaga.glm.events_nb`, the LU factors in :mod:`~spl_bench.gaga.core.lu_nb`.
The closed forms of ``v*`` on M are the regularizer's own compiled kernels
(:meth:`~spl_bench.sp.base.SPRegularizer.compiled_kernels`, passed as ``kind`` with their
parameter ``p``): a regularizer that gives them is followed here with no change to this
module, one that does not is followed on the reference route.  ``G`` in the signatures is
:func:`~spl_bench.gaga.glm.lasso_nb.gram`'s pair ``(X_A^T, work array)``.
"""

from __future__ import annotations

import functools
import warnings

import numba
import numpy as np
from numba import njit, types
from numba.core.errors import NumbaExperimentalFeatureWarning

from spl_bench.gaga.core.lu_nb import lu_factor, lu_solve, max_abs
from spl_bench.gaga.core.system_base import EVENT, FULL, GAVE_UP, REACHED
from spl_bench.gaga.glm.events_nb import (
    event_scale,
    events,
    events_r,
    hermite,
    hermite_coef,
    hermite_r,
    interior_sees,
    locate,
    predict,
)
from spl_bench.gaga.glm.lasso_nb import (
    _sets,
    curvature,
    d_of,
    jacobians,
    low_rank,
    no_factor,
    phi_r,
    project,
    project_r,
    residual,
    set_lists,
    tangent,
    tangent_d,
)
from spl_bench.sp.base import EASY, HARD, MIXED, MIXED_KERNEL, THRESHOLDS_KERNEL

__all__ = ["follow", "lu_factor", "lu_solve", "residual", "jacobians", "events", "tangent",
           "project", "_sets"]

# numba calls the regularizer's kernels through first-class function types (one compiled follower
# serves every regularizer); numba marks that feature experimental
warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                        category=NumbaExperimentalFeatureWarning)

#: interior points of a step (fractions) where the events are checked on the interpolant
INTERIOR = np.array([0.2, 0.4, 0.6, 0.8])
#: step halvings tried when the corrector fails before the segment is handed back
MAX_HALVINGS = 6
#: bounds of the factor of the next step size
GROW, SHRINK = 2.0, 0.5

#: numba type of ``kind``: the regularizer's kernels ``(mixed, thresholds)``.  Every cached
#: function here, in lasso_nb and in events_nb sees ``kind`` only with this type: a tuple of
#: dispatchers passed from Python would be typed per dispatcher object, whose identity differs in
#: every process, so each process would add an overload to numba's on-disk index that no later one
#: matches; the index grows, and its stale dispatcher types end in "underlying object has
#: vanished" (numba issues 2956, 9348).  Python callers go through :func:`follow` or
#: :func:`call_typed`.
KERNELS = types.Tuple((types.FunctionType(MIXED_KERNEL), types.FunctionType(THRESHOLDS_KERNEL)))


def call_typed(fn, *args):
    """``fn(*args)`` for a compiled function of this package called from Python with the
    regularizer's kernels (a tuple of compiled functions in ``args``) typed as :data:`KERNELS`,
    as :func:`follow` calls it; the other arguments (other tuples too: factors, :func:`gram`'s
    arrays) keep their own numba types.

    The entry point is compiled for those types and kept (not cached on disk); what it calls is
    cached under the same signatures the path follower uses.
    """
    sig = tuple(KERNELS if _is_kernels(a) else numba.typeof(a) for a in args)
    return _typed_entry(fn, sig)(*args)


def _is_kernels(a: object) -> bool:
    """``a`` is a regularizer's pair of compiled kernels."""
    return isinstance(a, tuple) and len(a) == 2 and all(hasattr(f, "py_func") for f in a)


@functools.cache
def _typed_entry(fn, sig):
    return njit(sig)(fn.py_func)


@njit(cache=True)
def _sets_all(X, active, sign):
    """The arrays of the current features: ``(acols, icols, X_A, X_I, sign_A, X_A^T)`` (all rows: a
    sample in D has ``phi = D = s = 0``; ``X_A^T`` contiguous, for :func:`gram`)."""
    acols = np.flatnonzero(active)
    icols = np.flatnonzero(np.logical_not(active))
    n = X.shape[0]
    XA = np.empty((n, acols.size))
    XI = np.empty((n, icols.size))
    for i in range(n):
        for j in range(acols.size):
            XA[i, j] = X[i, acols[j]]
        for j in range(icols.size):
            XI[i, j] = X[i, icols[j]]
    return acols, icols, XA, XI, sign[acols].copy(), np.ascontiguousarray(XA.T)


@njit(cache=True)
def _gram_arrays(XT, buf):
    """:func:`gram`'s ``(X_A^T, work array)``, the work array on the first entries of ``buf``."""
    k, n = XT.shape
    return XT, buf[:k * n].reshape((k, n))


@njit(cache=True)
def _start(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, w, r, t, fac, sign_ref, use_ref, G):
    """The state a segment starts from at ``(w, t)`` (``r = X_A w - y``): ``(factor, sign of det J,
    tangent w', q = X_A w', events at (w, t), events a step ``eps`` along the tangent (residuals
    ``r + eps q``), D, ok, factorisations)`` (:func:`tangent_d`; ``D``: the weights of ``J_w`` at
    the point)."""
    phi, D, s = curvature(r, easy, mixed, t, kind, p)
    dw, fac, sign, ok, nf = tangent_d(XA, D, s, w, fac, sign_ref, use_ref, G)
    e = np.empty(0)
    if not ok:
        return fac, sign, w.copy(), e, e, e, D, False, nf
    eps = 1e-7 * max(1.0, t)
    lo, hi = kind[1](t, p)
    ha = events_r(XI, code, sign_A, acols, icols, lev, w, r, phi, lo, hi)[0]
    q = XA @ dw
    wb, rb = w + eps * dw, r + eps * q
    lo, hi = kind[1](t + eps, p)
    hb = events_r(XI, code, sign_A, acols, icols, lev, wb, rb, phi_r(rb, easy, mixed, t + eps, kind, p), lo, hi)[0]
    return fac, sign, dw, q, ha, hb, D, True, nf


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
def _first_step(ha, hb, t, lam_max, max_step):
    """The first step of a segment: a little past the first event predicted along the tangent
    (``ha``, ``hb``: the events at the start and a step ``eps`` on; ``_Tracker.first_step``)."""
    span = lam_max - t
    eps = 1e-7 * max(1.0, t)
    best = np.inf
    for i in range(ha.size):
        sl = (hb[i] - ha[i]) / eps
        if np.isfinite(ha[i]) and np.isfinite(sl) and sl < 0:
            best = min(best, max(ha[i], 0.0) / -sl)
    if np.isfinite(best):
        return min(max(1.5 * best, 1e-9 * max(1.0, t)), max_step, span)
    return min(0.01 * span, max_step, span)


@njit(cache=True)
def _step(XA, y, easy, mixed, grad_pen, lev, kind, p, t, w, r, dw, q, h, fac, sign0, lam_max, max_step, newton_tol,
          dense_tol, counts, G, prev):
    """One accepted step from ``(t, w, dw)`` (``r = X_A w - y``, ``q = X_A dw``): predictor, corrector
    (:func:`project_r` on the start's factor), the end tangent, and step control by the
    interpolant's middle, projected.  The predictor is the cubic Hermite interpolant of the step
    before, ``prev = (t_prev, w_prev, d_prev, r_prev, q_prev)`` (``t_prev < t``), extended to
    ``t + h``, or ``w + h dw`` without one (the first step of a segment; ``t_prev >= t``); its
    residuals are the same combination of ``r``, ``q`` and the previous step's.  The projection
    of the middle starts from the interpolant corrected by the error the extended interpolant
    made at ``t1``: a cubic Hermite interpolant's error is the fourth derivative over 24 times
    the squared distances to its two nodes, ``(t1 - t_prev)^2 h^2`` at ``t1`` and ``h^4 / 16``
    at the middle.  Both starting points decide the number of corrector iterations, not the
    points they converge to (nor ``err``, measured from the uncorrected middle).

    Returns ``(ok, t1, h, w1, r1, phi1, d1, q1, factor1, sign1, err, dmid)``: the end, its
    residuals, ``phi``, tangent and ``X_A`` times it, its factor, and the middle point's
    correction (projected minus interpolated; :func:`predict`); ``ok`` is False
    when the corrector fails even on short steps, ``J_w`` is singular, or ``det J_w`` changes
    sign (a fold): the reference route retakes the step.
    """
    ok_res = 1e3 * newton_tol
    accepted = False
    w1, r1, phi1, d1, q1 = w, r, r, dw, q
    fac1 = fac
    sign1 = sign0
    t1 = t
    err = 0.0
    dmid = np.zeros(w.size)
    for _ in range(MAX_HALVINGS + 1):
        h = min(h, max_step)
        t1 = t + h
        if t1 >= lam_max or lam_max - t1 < 1e-12 * max(1.0, abs(t1)):
            t1, h = lam_max, lam_max - t
        t_prev, w_prev, d_prev, r_prev, q_prev = prev
        extrapolated = t_prev < t
        if extrapolated:
            a, b, c, e = hermite_coef(t_prev, t - t_prev, t1)
            wp = a * w_prev + b * d_prev + c * w + e * dw
            rp = a * r_prev + b * q_prev + c * r + e * q
        else:
            wp, rp = w + h * dw, r + h * q
        w1, r1, phi1, res, nl = project_r(XA, y, easy, mixed, grad_pen, lev, wp, rp, t1, kind, p, fac, True,
                                          newton_tol, G)
        counts[0] += nl
        if res <= ok_res:
            _, D1, s1 = curvature(r1, easy, mixed, t1, kind, p)
            d1, fac1, sign1, ok, nf = tangent_d(XA, D1, s1, w1, fac, sign0, False, G)
            counts[0] += nf
            counts[3 + nf] += 1
            if not ok:
                return False, t1, h, w1, r1, phi1, d1, q1, fac1, sign1, err, dmid
            q1 = XA @ d1
            wm = 0.5 * (w + w1) + 0.125 * h * (dw - d1)
            rm = 0.5 * (r + r1) + 0.125 * h * (q - q1)
            if extrapolated:  # the middle's error predicted from the predictor's (docstring)
                fm = h * h / (16.0 * (t1 - t_prev) ** 2)
                wm0, rm0 = wm + fm * (w1 - wp), rm + fm * (r1 - rp)
            else:
                wm0, rm0 = wm, rm
            pm, _, _, res_m, nl = project_r(XA, y, easy, mixed, grad_pen, lev, wm0, rm0, t + 0.5 * h, kind, p,
                                            fac1, True, newton_tol, G)
            counts[0] += nl
            err = max_abs(pm - wm) / (1.0 + max_abs(pm))
            if res_m <= ok_res and err <= dense_tol:
                dmid = pm - wm
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
    return accepted and sign1 == sign0, t1, h, w1, r1, phi1, d1, q1, fac1, sign1, err, dmid


@njit(cache=True)
def _crossings(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, grad_pen, t, h, w, w1, r, r1,
               phi1, dw, d1, q, q1, dmid, t1, fac1, newton_tol, event_tol, counts, G):
    """The events crossed in the step ``(t, w) -> (t1, w1)``: at its end, then at the first
    interior point of the interpolant (``INTERIOR``, :func:`interior_sees`) that sees one,
    confirmed on the projected point.  Returns ``(ok, crossed, t_end, w_end, wscale)``; ``ok``
    is False when a projection fails."""
    n = y.size
    k = w.size
    d = acols.size + icols.size
    ok_res = 1e3 * newton_tol
    wscale = 1e-3 + max_abs(w)
    lo, hi = kind[1](t1, p)
    he = events_r(XI, code, sign_A, acols, icols, lev, w1, r1, phi1, lo, hi)[0]
    crossed = np.flatnonzero(he < -event_tol * event_scale(d, n, k, acols, wscale, hi))
    t_end, w_end = t1, w1
    for f in INTERIOR:
        s = t + f * h
        ws = hermite(t, h, w, w1, dw, d1, s)
        if interior_sees(XI, code, sign_A, icols, lev, easy, mixed, ws, hermite_r(t, h, r, r1, q, q1, s), s, kind,
                         p, wscale, event_tol):  # confirmed on the projected point
            wp = predict(t, h, w, w1, dw, d1, dmid, s)
            ps, rps, phis, res_s, nl = project_r(XA, y, easy, mixed, grad_pen, lev, wp, np.empty(0), s, kind, p, fac1,
                                                 True, newton_tol, G)
            counts[0] += nl
            if res_s > ok_res:
                return False, crossed, t_end, w_end, wscale
            lo, hi = kind[1](s, p)
            hs = events_r(XI, code, sign_A, acols, icols, lev, ps, rps, phis, lo, hi)[0]
            bs = np.flatnonzero(hs < -event_tol * event_scale(d, n, k, acols, wscale, hi))
            if bs.size:
                return True, bs, s, ps, wscale
    return True, crossed, t_end, w_end, wscale


@njit(cache=True)
def _segment(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, lam0, w0, r0, fac, sign0, dw, q, ha,
             hb, lam_max, max_step, newton_tol, event_tol, dense_tol, ages, recw, recd, rkind, rseg, n_rec, seg,
             counts, G):
    """Follow one segment from ``(lam0, w0)`` (residuals ``r0``; its :func:`_start` state) until the
    first event, ``lam_max`` or a full record buffer.

    Accepted steps are written to the record buffers (full coefficient vectors, kind 0).
    Returns ``(status, n_rec, t_end, w_end, r_end, phi, D, crossed, tangent, factor)``: with
    ``EVENT`` the located critical point with its residuals, ``phi`` and ``D`` (old sets), the
    crossed event positions (those violated at the step end, or at the interior point that saw
    them), the tangent there and the factor it was solved with (a change of the sign of
    ``det J`` up to the critical point is a fold: ``GAVE_UP``); otherwise ``t_end`` is the last
    accepted age.  ``counts`` gathers the factorisations, rejected and accepted steps, and the
    tangents refined and factorised (``follow``).
    """
    no_cross = np.empty(0, dtype=np.int64)
    e = np.empty(0)
    cap = ages.size
    grad_pen = lev * sign_A
    t, w, r = lam0, w0.copy(), r0
    prev = (t, w, dw, r, q)  # no step before (t_prev = t): the first predictor is along the tangent
    h = _first_step(ha, hb, t, lam_max, max_step)
    while True:
        if n_rec >= cap:
            return FULL, n_rec, t, w, r, e, e, no_cross, e, fac
        ok, t1, h, w1, r1, phi1, d1, q1, fac1, sign1, err, dmid = _step(
            XA, y, easy, mixed, grad_pen, lev, kind, p, t, w, r, dw, q, h, fac, sign0, lam_max, max_step, newton_tol,
            dense_tol, counts, G, prev)
        if not ok:
            return GAVE_UP, n_rec, t, w, r, e, e, no_cross, e, fac
        ok, crossed, t_end, w_end, wscale = _crossings(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind,
                                                       p, grad_pen, t, h, w, w1, r, r1, phi1, dw, d1, q, q1, dmid,
                                                       t1, fac1, newton_tol, event_tol, counts, G)
        if not ok:
            return GAVE_UP, n_rec, t, w, r, e, e, no_cross, e, fac
        if crossed.size:
            t_star, w_star, ok = locate(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, grad_pen,
                                        newton_tol, event_tol, wscale, crossed, t, h, w, w1, dw, d1, r, r1, q, q1,
                                        dmid, t_end, w_end, fac1, G)
            if not ok:
                return GAVE_UP, n_rec, t, w, r, e, e, no_cross, e, fac
            # the tangent at the critical point on these sets, and the sign of det J there
            r_star = XA @ w_star - y
            phi_s, D_s, s_s = curvature(r_star, easy, mixed, t_star, kind, p)
            d_s, fac_s, sign_s, ok, nf = tangent_d(XA, D_s, s_s, w_star, fac1, sign1, True, G)
            counts[0] += nf
            counts[3 + nf] += 1
            if not ok or sign_s != sign0:  # a fold inside the step: the reference route locates it
                return GAVE_UP, n_rec, t, w, r, e, e, no_cross, e, fac
            return EVENT, n_rec, t_star, w_star, r_star, phi_s, D_s, crossed, d_s, fac_s

        # ---- accept: record the projected end and its tangent
        _record(ages, recw, recd, rkind, rseg, n_rec, t1, acols, w1, d1, 0, seg)
        n_rec += 1
        counts[2] += 1
        prev = (t, w, dw, r, q)
        t, w, r, dw, q, fac = t1, w1, r1, d1, q1, fac1
        if t >= lam_max:
            return REACHED, n_rec, t, w, r, e, e, no_cross, e, fac
        grow = GROW if err == 0.0 else min(GROW, max(SHRINK, 0.9 * (dense_tol / err) ** 0.25))
        h = h * grow


@njit(cache=True)
def _move(pos, X, y, active, sign, w, code, lam, kind, p, moves, n_mv, ev):
    """``GLMSystem.move`` of the event positions ``pos`` (sorted, unique) at ``lam``; each move
    is written to ``moves`` as ``(event, index, is_feature, from, to)`` (features: 1 active,
    0 inactive; samples: their set codes).  Returns the new number of moves."""
    n = y.size
    d = active.size
    lo, hi = kind[1](lam, p)
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
                    easy, mixed = set_lists(code)
                    vr = phi_r(X @ w - y, easy, mixed, lam, kind, p)
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
def _moved_factor(XA, r, code, D, t, kind, p, moves, a, b, fac, sign):
    """The factor for the sets after the sample moves ``moves[a:b]`` at ``t`` from ``fac`` (sign
    ``sign``), a factor of the old sets' ``J_w`` near the point: the Woodbury correction
    (:func:`low_rank`) of the change ``c_i x_i x_i^T`` each moved sample makes to ``J_w``
    (``c_i``: its new ``D_i`` less its old one, ``D``).  Returns ``(factor, sign)``; ``fac``
    itself when no sample changes ``J_w``, ``fac`` already holds a correction, or the
    correction is singular."""
    k = XA.shape[1]
    if fac[0].shape[0] != k or fac[2].shape[0] > 0:
        return fac, sign
    m = 0
    c = np.empty(b - a)
    rows = np.empty(b - a, dtype=np.int64)
    for e in range(a, b):
        if moves[e, 2] == 0:
            i = moves[e, 1]
            ci = d_of(r[i], code[i], t, kind, p) - D[i]
            if ci != 0.0:
                c[m] = ci
                rows[m] = i
                m += 1
    if m == 0:
        return fac, sign
    U = np.empty((m, k))
    for a_ in range(m):
        U[a_] = XA[rows[a_]]
    fac_m, sign_m, ok = low_rank(fac, sign, U, c[:m].copy())
    if not ok:
        return fac, sign
    return fac_m, sign_m


@njit(cache=True)
def _continue(X, y, active, sign, w, code, lev, kind, p, t, lam_max, newton_tol, event_tol, moved, moves, n_mv,
              n_mv0, n_ev, S, r, D, fac, sign0, counts, buf):
    """The continuation check after the moves ``moves[n_mv0:n_mv]`` at the critical point ``t``
    (``_Tracker.event``): Newton on the new sets, then every event function ``>= 0`` a step
    ``1e-7`` on; indices at their boundary that would cross at once are moved too (at most 10
    rounds).  ``S``: the old sets' :func:`_sets_all` arrays, ``r`` and ``D`` the residuals and
    ``J_w``'s weights at the point on them, ``fac`` (sign ``sign0``) a factor of their ``J_w``
    near it.  When only samples moved, the features' arrays stay and Newton and the tangent use
    ``fac`` with the moved samples' rank-one corrections (:func:`_moved_factor`).  ``buf``: the
    work array of :func:`gram`.

    Returns ``(ok, n_mv, sets, easy, mixed, r, factor, sign of det J, tangent, X_A tangent, events
    at t, events a step on)`` with the new sets' arrays; ``w`` holds the projected point.
    ``ok`` is False when Newton fails, ``J`` is singular, or an index away from its boundary
    would cross: a jump, left to the tracker.
    """
    n = y.size
    d = X.shape[1]
    e = np.empty(0)
    dw = q = ha = hb = e
    acols, icols, XA, XI, sign_A, XT = S
    easy = mixed = np.empty(0, dtype=np.int64)
    a = n_mv0
    for _ in range(10):
        feature_moved = False
        for m in range(a, n_mv):
            if moves[m, 2] == 1:
                feature_moved = True
        if feature_moved:
            acols, icols, XA, XI, sign_A, XT = _sets_all(X, active, sign)
            wA = w[acols].copy()
            r = XA @ wA - y
            fac_ref, sign_ref, chord = no_factor(), sign0, False
        else:
            wA = w[acols].copy()
            fac_ref, sign_ref = _moved_factor(XA, r, code, D, t, kind, p, moves, a, n_mv, fac, sign0)
            chord = True
        G = _gram_arrays(XT, buf)
        easy, mixed = set_lists(code)
        wA, r, _, res, nl = project_r(XA, y, easy, mixed, lev * sign_A, lev, wA, r, t, kind, p, fac_ref, chord,
                                      newton_tol, G)
        counts[0] += nl
        if res > 1e3 * newton_tol:
            return False, n_mv, (acols, icols, XA, XI, sign_A, XT), easy, mixed, r, fac, sign0, dw, q, ha, hb
        w[acols] = wA
        eps = 1e-7 * max(1.0, t)
        fac, sign0, dw, q, ha, hb, D, okf, nf = _start(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind,
                                                        p, wA, r, t, fac_ref, sign_ref, True, G)
        counts[0] += nf
        counts[3 + nf] += 1
        S = (acols, icols, XA, XI, sign_A, XT)
        if not okf:  # singular: the tracker's least-squares fallback
            return False, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb
        if t + eps >= lam_max:
            return True, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb
        sc = event_scale(d, n, acols.size, acols, 1e-3 + max_abs(w), kind[1](t + eps, p)[1])
        fail = np.flatnonzero(hb < -1e-3 * eps * sc)
        if fail.size == 0:
            return True, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb
        new_mask = np.zeros(moved.size, dtype=np.bool_)
        all_at_bound = True
        for qq in fail:
            if ha[qq] <= 1e3 * event_tol * sc[qq]:
                if not moved[qq]:
                    new_mask[qq] = True
            else:
                all_at_bound = False
        new = np.flatnonzero(new_mask)
        if not all_at_bound or new.size == 0:
            return False, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb
        for qq in new:
            moved[qq] = True
        a = n_mv
        n_mv = _move(new, X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
    return False, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb


@njit(cache=True)
def _fired(XI, code, sign_A, acols, icols, lev, kind, p, w, wA, r, phi, t, crossed, event_tol):
    """The event positions that fire at the critical point ``t`` on the old sets (``wA``, its
    residuals ``r`` and ``phi``): those violated beyond the tolerance, and the located ones
    within 1e3 tolerances of their boundary."""
    n = r.size
    d = acols.size + icols.size
    lo, hi = kind[1](t, p)
    h = events_r(XI, code, sign_A, acols, icols, lev, wA, r, phi, lo, hi)[0]
    sc = event_scale(d, n, acols.size, acols, 1e-3 + max_abs(w), hi)
    fire_mask = h < -event_tol * sc
    for q in crossed:
        if h[q] <= 1e3 * event_tol * sc[q]:
            fire_mask[q] = True
    return fire_mask


def _follow(X, y, active, sign, w, code, lev, kind, p, lam0, lam_max, max_step, newton_tol, event_tol,
            dense_tol, cap, max_events, last_event):
    """:func:`follow`'s loop; compiled once as ``_follow_typed``, for every regularizer's kernels
    (``kind`` has the first-class function type :data:`KERNELS`)."""
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
    buf = np.empty(n * d)  # the work array of J_w (:func:`gram`)
    n_rec = n_ev = n_mv = 0
    no_cross = np.empty(0, dtype=np.int64)
    t = lam0
    S = _sets_all(X, active, sign)
    acols, icols, XA, XI, sign_A, XT = S
    easy, mixed = set_lists(code)
    wA = w[acols].copy()
    r = XA @ wA - y
    fac, sign0, dw, q, ha, hb, D, ok, nf = _start(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, wA,
                                                  r, t, no_factor(), 0.0, False, _gram_arrays(XT, buf))
    counts[0] += nf
    counts[3 + nf] += 1
    if not ok:
        return (GAVE_UP, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                no_cross, counts)
    while True:
        status, n_rec, t, wA, r, phi, D, crossed, d_old, fac = _segment(
            XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, t, wA, r, fac, sign0, dw, q, ha, hb,
            lam_max, max_step, newton_tol, event_tol, dense_tol, ages, recw, recd, rkind, rseg, n_rec, n_ev, counts,
            _gram_arrays(XT, buf))
        w[acols] = wA
        if status != EVENT:
            return (status, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    no_cross, counts)
        if n_ev >= max_events or n_rec + 2 > cap or n_mv + d + 2 * n > moves.shape[0]:
            return (EVENT, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    crossed, counts)
        # ---- the critical point at t, on the old sets (_Tracker.event): move, keeping what undoes it
        fire_mask = _fired(XI, code, sign_A, acols, icols, lev, kind, p, w, wA, r, phi, t, crossed, event_tol)
        active0, sign_0, w0, code0 = active.copy(), sign.copy(), w.copy(), code.copy()
        n_mv0, n_rec0 = n_mv, n_rec
        n_mv = _move(np.flatnonzero(fire_mask), X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
        # (w after the moves: exact zeros where features left, as GLMSystem.move leaves them)
        _record(ages, recw, recd, rkind, rseg, n_rec, t, acols, w[acols], d_old, 1, n_ev)
        n_rec += 1
        # ---- continuation check on the new sets
        ok, n_mv, S, easy, mixed, r, fac, sign0, dw, q, ha, hb = _continue(
            X, y, active, sign, w, code, lev, kind, p, t, lam_max, newton_tol, event_tol, fire_mask, moves, n_mv,
            n_mv0, n_ev, S, r, D, fac, sign0, counts, buf)
        if not ok:
            # undo: the tracker handles this critical point (a jump)
            active[:], sign[:], w[:], code[:] = active0, sign_0, w0, code0
            n_mv, n_rec = n_mv0, n_rec0
            return (EVENT, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    crossed, counts)
        acols, icols, XA, XI, sign_A, XT = S
        gap = max_abs(w - w0)
        ev_lam[n_ev] = t
        ev_kind[n_ev] = 1 if gap > 1e-7 * (1.0 + max_abs(w0)) else 0
        n_ev += 1
        _record(ages, recw, recd, rkind, rseg, n_rec, t, acols, w[acols], dw, 2, n_ev)
        n_rec += 1
        prev = ev_lam[n_ev - 2] if n_ev >= 2 else last_event
        if t - prev <= 1e-12 * max(1.0, t) or t >= lam_max:
            # the same age as the critical point before: the tracker counts the repeats
            return (REACHED if t >= lam_max else FULL, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam,
                    ev_kind, n_mv, moves, t, no_cross, counts)
        wA = w[acols].copy()


def follow(X: np.ndarray, y: np.ndarray, active: np.ndarray, sign: np.ndarray, w: np.ndarray,
           code: np.ndarray, lev: float, kind: tuple[object, object], p: float, lam0: float, lam_max: float,
           max_step: float, newton_tol: float, event_tol: float, dense_tol: float, cap: int, max_events: int,
           last_event: float) -> tuple:
    """Follow the path from ``lam0`` through its turning points until ``lam_max``, a jump, a
    point the compiled loop leaves to the tracker, or full buffers.

    ``active``, ``sign``, ``w`` (full coefficient vector) and ``code`` are the state; they are
    updated in place.  ``(kind, p)`` are the regularizer's compiled kernels and their parameter
    (:meth:`~spl_bench.sp.base.SPRegularizer.compiled_kernels`).  Each critical point is handled
    as ``_Tracker.event`` handles it: the fired positions move, the point is recorded with the
    old sets' tangent (kind 1), and the continuation check (:func:`_continue`) decides.  A
    turning point, or a discontinuous one that Newton resolves at the same age (``v*`` jumps),
    is recorded again with the new sets (kind 2) and the loop goes on; any other outcome leaves
    the state on the old sets at the critical point and returns ``EVENT`` with the crossed
    positions, for the tracker's own event handling (its jumps and warm starts).  It returns
    after a critical point at the same age as the one before (``last_event`` for the first), so
    the tracker sees chattering as it would on its own route.

    Returns ``(status, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves,
    t_end, crossed, counts)``: the records (age, coefficients, tangent, kind 0 step / 1
    critical / 2 after, segment offset), the handled critical points (age, kind 0 turning /
    1 discontinuous) with their moves (``_move``), the age reached and, with ``EVENT``, the
    crossed positions; ``counts`` = (factorisations, rejected steps, accepted steps, tangents
    refined on a nearby factor, tangents factorised).
    """
    if not isinstance(active, np.ndarray) or active.dtype != np.bool_ or code.dtype != np.int8:
        raise TypeError("follow: active must be a bool array and code an int8 array")
    global _follow_typed
    if _follow_typed is None:  # compiled (or loaded from numba's cache) at the first call
        _follow_typed = njit(_FOLLOW_SIGNATURE, cache=True)(_follow)
    return _follow_typed(_writable(X), _writable(y), active,
                         sign, w, code, float(lev), tuple(kind), float(p), float(lam0), float(lam_max),
                         float(max_step), float(newton_tol), float(event_tol), float(dense_tol), int(cap),
                         int(max_events), float(last_event))


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float array the compiled signature accepts (a read-only one, e.g. a
    memory map, is copied: the signature's arrays are writable)."""
    a = np.ascontiguousarray(a, dtype=float)
    return a if a.flags.writeable else a.copy()


_f8, _i8 = types.float64, types.int64
#: :func:`_follow`'s argument types, with the kernels' function type: one compiled, cached loop serves
#: every regularizer
_FOLLOW_SIGNATURE = (_f8[:, ::1], _f8[::1], types.boolean[::1], _f8[::1], _f8[::1], types.int8[::1], _f8, KERNELS,
                     _f8, _f8, _f8, _f8, _f8, _f8, _f8, _i8, _i8, _f8)
_follow_typed = None

