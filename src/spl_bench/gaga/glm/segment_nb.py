"""Compiled segment follower of the lasso age-path (``EngineOptions.method="compiled"``).

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path is the solution of GAGA eq. (5) for the lasso,

    F(w_A, lam) = X_LA^T (v*(ell, lam) * (X_LA w_A - y_L)) + n alpha sign_A = 0,

with ``ell = (y - x^T w)^2 / 2``, ``L`` the samples not in D and ``v*`` the SP-regularizer's
closed form on M (1 on E).  Its Jacobians are

    J_w = X_LA^T diag(v + (dv*/dell) r^2) X_LA,    J_lam = X_LA^T ((dv*/dlam) r),   r = X_LA w_A - y_L.

This module follows the segments the way :class:`~spl_bench.gaga.core.continuation.PredictorCorrector`
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

The system (``F``, its Jacobians, the Newton projection and the tangent) is in
:mod:`~spl_bench.gaga.glm.lasso_nb`, the events and their location in
:mod:`~spl_bench.gaga.glm.events_nb`, the LU factors in :mod:`~spl_bench.gaga.core.lu_nb`.
The closed forms of ``v*`` on M are the regularizer's own compiled kernels
(:meth:`~spl_bench.sp.base.SPRegularizer.compiled_kernels`, passed as ``kind`` with their
parameter ``p``): a regularizer that gives them is followed here with no change to this
module, one that does not is followed on the reference route.
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
from spl_bench.gaga.glm.events_nb import event_scale, events, hermite, locate
from spl_bench.gaga.glm.lasso_nb import _sets, jacobians, project, residual, tangent, weights
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
    regularizer's kernels (a tuple in ``args``) typed as :data:`KERNELS`, as :func:`follow`
    calls it; the other arguments keep their own numba types.

    The entry point is compiled for those types and kept (not cached on disk); what it calls is
    cached under the same signatures the path follower uses.
    """
    sig = tuple(KERNELS if isinstance(a, tuple) else numba.typeof(a) for a in args)
    return _typed_entry(fn, sig)(*args)


@functools.cache
def _typed_entry(fn, sig):
    return njit(sig)(fn.py_func)


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
def _step(XL, yL, cL, sign_A, lev, kind, p, t, w, dw, h, LU, perm, sign0, lam_max, max_step, newton_tol,
          dense_tol, counts):
    """One accepted step from ``(t, w, dw)``: predictor ``w + h dw``, corrector (:func:`project`
    on the start's factor), the end tangent, and step control by the interpolant's middle.

    Returns ``(ok, t1, h, w1, d1, LU1, perm1, sign1, err)``; ``ok`` is False when the corrector
    fails even on short steps, ``J_w`` is singular, or ``det J_w`` changes sign (a fold): the
    reference route retakes the step.
    """
    ok_res = 1e3 * newton_tol
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
        w1, res, nl = project(XL, yL, cL, lev * sign_A, lev, w + h * dw, t1, kind, p, LU, perm, True, newton_tol)
        counts[0] += nl
        if res <= ok_res:
            d1, LU1, perm1, sign1, ok, nf = tangent(XL, yL, cL, w1, t1, kind, p, LU, perm, sign0, False)
            counts[0] += nf
            counts[3 + nf] += 1
            if not ok:
                return False, t1, h, w1, d1, LU1, perm1, sign1, err
            wm = 0.5 * (w + w1) + 0.125 * h * (dw - d1)
            pm, res_m, nl = project(XL, yL, cL, lev * sign_A, lev, wm, t + 0.5 * h, kind, p, LU1, perm1, True,
                                    newton_tol)
            counts[0] += nl
            err = max_abs(pm - wm) / (1.0 + max_abs(pm))
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
    return accepted and sign1 == sign0, t1, h, w1, d1, LU1, perm1, sign1, err


@njit(cache=True)
def _crossings(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL, t, h, w, w1, dw, d1, t1,
               LU1, perm1, newton_tol, event_tol, counts):
    """The events crossed in the step ``(t, w) -> (t1, w1)``: at its end, then at the first
    interior point of the interpolant (``INTERIOR``) that sees one, confirmed on the projected
    point.  Returns ``(ok, crossed, t_end, w_end, wscale)``; ``ok`` is False when a projection
    fails."""
    n = y.size
    k = w.size
    d = acols.size + icols.size
    ok_res = 1e3 * newton_tol
    wscale = 1e-3 + max_abs(w)
    he = events(XA, XI, y, code, sign_A, acols, icols, lev, w1, t1, kind, p)
    sc = event_scale(d, n, k, acols, wscale, kind[1](t1, p)[1])
    crossed = np.flatnonzero(he < -event_tol * sc)
    t_end, w_end = t1, w1
    for f in INTERIOR:
        s = t + f * h
        ws = hermite(t, h, w, w1, dw, d1, s)
        hs = events(XA, XI, y, code, sign_A, acols, icols, lev, ws, s, kind, p)
        scs = event_scale(d, n, k, acols, wscale, kind[1](s, p)[1])
        if np.any(hs < -event_tol * scs):  # confirmed on the projected point
            ps, res_s, nl = project(XL, yL, cL, lev * sign_A, lev, ws, s, kind, p, LU1, perm1, True, newton_tol)
            counts[0] += nl
            if res_s > ok_res:
                return False, crossed, t_end, w_end, wscale
            bs = np.flatnonzero(events(XA, XI, y, code, sign_A, acols, icols, lev, ps, s, kind, p)
                                < -event_tol * scs)
            if bs.size:
                return True, bs, s, ps, wscale
    return True, crossed, t_end, w_end, wscale


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
    no_cross = np.empty(0, dtype=np.int64)
    no_tan = np.empty(0)
    cap = ages.size
    t, w = lam0, w0.copy()
    h = _first_step(ha, hb, t, lam_max, max_step)
    while True:
        if n_rec >= cap:
            return FULL, n_rec, t, w, no_cross, no_tan, LU, perm
        ok, t1, h, w1, d1, LU1, perm1, sign1, err = _step(XL, yL, cL, sign_A, lev, kind, p, t, w, dw, h, LU, perm,
                                                           sign0, lam_max, max_step, newton_tol, dense_tol, counts)
        if not ok:
            return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
        ok, crossed, t_end, w_end, wscale = _crossings(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL,
                                                       yL, cL, t, h, w, w1, dw, d1, t1, LU1, perm1, newton_tol,
                                                       event_tol, counts)
        if not ok:
            return GAVE_UP, n_rec, t, w, no_cross, no_tan, LU, perm
        if crossed.size:
            t_star, w_star, ok = locate(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, XL, yL, cL,
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
                    r = X @ w - y
                    v, dl, dlam = np.empty(n), np.empty(n), np.empty(n)
                    weights(r, code, lam, kind, p, v, dl, dlam)
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
def _continue(X, y, active, sign, w, code, lev, kind, p, t, lam_max, newton_tol, event_tol, moved, moves, n_mv,
              n_ev, LU, perm, sign0, counts):
    """The continuation check after the moves at the critical point ``t`` (``_Tracker.event``):
    Newton on the new sets, then every event function ``>= 0`` a step ``1e-7`` on; indices at
    their boundary that would cross at once are moved too (at most 10 rounds).

    Returns ``(ok, n_mv, sets, LU, perm, sign of det J, tangent, events at t, events a step on)``
    with the new sets' :func:`_sets` arrays; ``w`` holds the projected point.  ``ok`` is False when Newton fails,
    ``J`` is singular, or an index away from its boundary would cross: a jump, left to the tracker.
    """
    n = y.size
    d = X.shape[1]
    dw = ha = hb = np.empty(0)
    for _ in range(10):
        S = _sets(X, y, active, code, sign)
        acols, icols, XA, XI, XL, yL, cL, sign_A = S
        wA, res, nl = project(XL, yL, cL, lev * sign_A, lev, w[acols].copy(), t, kind, p, LU, perm, False,
                              newton_tol)
        counts[0] += nl
        if res > 1e3 * newton_tol:
            return False, n_mv, S, LU, perm, sign0, dw, ha, hb
        w[acols] = wA
        eps = 1e-7 * max(1.0, t)
        LU, perm, sign0, dw, ha, hb, okf, nf = _start(XA, XI, y, code, sign_A, acols, icols, lev, kind, p,
                                                      XL, yL, cL, wA, t, LU, perm, sign0, True)
        counts[0] += nf
        counts[3 + nf] += 1
        if not okf:  # singular: the tracker's least-squares fallback
            return False, n_mv, S, LU, perm, sign0, dw, ha, hb
        if t + eps >= lam_max:
            return True, n_mv, S, LU, perm, sign0, dw, ha, hb
        sc = event_scale(d, n, acols.size, acols, 1e-3 + max_abs(w), kind[1](t + eps, p)[1])
        fail = np.flatnonzero(hb < -1e-3 * eps * sc)
        if fail.size == 0:
            return True, n_mv, S, LU, perm, sign0, dw, ha, hb
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
            return False, n_mv, S, LU, perm, sign0, dw, ha, hb
        for q in new:
            moved[q] = True
        n_mv = _move(new, X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
    return False, n_mv, S, LU, perm, sign0, dw, ha, hb


@njit(cache=True)
def _fired(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, w, wA, t, crossed, event_tol):
    """The event positions that fire at the critical point ``t`` on the old sets: those violated
    beyond the tolerance, and the located ones within 1e3 tolerances of their boundary."""
    n = y.size
    d = acols.size + icols.size
    h = events(XA, XI, y, code, sign_A, acols, icols, lev, wA, t, kind, p)
    sc = event_scale(d, n, acols.size, acols, 1e-3 + max_abs(w), kind[1](t, p)[1])
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
        # ---- the critical point at t, on the old sets (_Tracker.event): move, keeping what undoes it
        fire_mask = _fired(XA, XI, y, code, sign_A, acols, icols, lev, kind, p, w, wA, t, crossed, event_tol)
        active0, sign_0, w0, code0 = active.copy(), sign.copy(), w.copy(), code.copy()
        n_mv0, n_rec0 = n_mv, n_rec
        n_mv = _move(np.flatnonzero(fire_mask), X, y, active, sign, w, code, t, kind, p, moves, n_mv, n_ev)
        # (w after the moves: exact zeros where features left, as GLMSystem.move leaves them)
        _record(ages, recw, recd, rkind, rseg, n_rec, t, acols, w[acols], d_old, 1, n_ev)
        n_rec += 1
        # ---- continuation check on the new sets
        ok, n_mv, S, LU, perm, sign0, dw, ha, hb = _continue(X, y, active, sign, w, code, lev, kind, p, t, lam_max,
                                                     newton_tol, event_tol, fire_mask, moves, n_mv, n_ev, LU,
                                                     perm, sign0, counts)
        if not ok:
            # undo: the tracker handles this critical point (a jump)
            active[:], sign[:], w[:], code[:] = active0, sign_0, w0, code0
            n_mv, n_rec = n_mv0, n_rec0
            return (EVENT, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, moves, t,
                    crossed, counts)
        acols, icols, XA, XI, XL, yL, cL, sign_A = S
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

