"""Events of the lasso's compiled follower, and their location (numba).

The event functions are those of :meth:`~spl_bench.gaga.glm.glm_system.GLMSystem.events` for
the lasso: ``sign_j w_j`` of an active feature, ``1 - |g_j| / (n alpha)`` of an inactive one
(``g = X_I^T phi``, ``phi = v r``), and each sample's distance to the lower and upper boundary
of its set (the SP thresholds ``lo``, ``hi`` of the loss); all are ``>= 0`` while the sets are
valid.  :func:`events_r` evaluates them from the residuals ``r = X_A w - y`` and ``phi`` that
the follower already holds at a point, so that a point costs one product with ``X_I`` more.

Inside a step ``(t0, w0, d0) -> (t0 + h, w1, d1)`` the follower checks the events on the cubic
Hermite interpolant ``w(s) = h00 w0 + h h10 d0 + h01 w1 + h h11 d1``.  Its residuals are the
same combination of ``r0 = X_A w0 - y``, ``r1``, ``q0 = X_A d0`` and ``q1 = X_A d1``
(``h00 + h01 = 1``, :func:`hermite_r`), so an interior point costs ``O(n)`` for the samples and,
only when they and the active features see no crossing, ``phi`` and one product with ``X_I``
for the inactive features (:func:`interior_sees`).

:func:`locate` finds the first crossing inside an accepted step on the *projected* path:
a scan of the step's cubic Hermite interpolant for the first sign change, secant steps from
the raw root, then regula falsi (Illinois) on a bracket.  Each projection starts from the
interpolant corrected by the step's middle point: the interpolant's error is
``e(s) = w''''(xi) h^4 u^2 (1 - u)^2 / 24`` (``u = (s - t0) / h``), so ``16 u^2 (1 - u)^2``
times the error measured at the middle (projected minus interpolated, ``dmid``) predicts it to
higher order (:func:`predict`); once a point of the step has been projected, its remaining
correction is added too (the ages regula falsi tries lie close together).  The starting
point decides how many Newton iterations a projection takes, not the point it converges to.

The regularizer's kernels ``kind`` have the type :data:`spl_bench.gaga.glm.segment_nb.KERNELS`;
from Python, call these functions through :func:`spl_bench.gaga.glm.segment_nb.call_typed`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spl_bench.gaga.glm.lasso_nb import phi_r, project_r, set_lists
from spl_bench.models.datafits import quadratic_loss_nb
from spl_bench.sp.base import EASY, MIXED


@njit(cache=True)
def events_r(XI: np.ndarray, code: np.ndarray, sign_A: np.ndarray, acols: np.ndarray, icols: np.ndarray,
             lev: float, w: np.ndarray, r: np.ndarray, phi: np.ndarray, lo: float,
             hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The event functions of :meth:`GLMSystem.events` (lasso) at the point ``w`` with residuals
    ``r`` and ``phi = v r`` (``lo``, ``hi``: the thresholds at its age): features ``[0, d)``,
    then the samples' distance to the lower (``[d, d + n)``) and upper (``[d + n, d + 2n)``,
    M only) boundary of their set; ``>= 0`` while the sets are valid.  Returns ``(h, g)`` with
    ``g = X_I^T phi``, the inactive features' gradient."""
    n = r.size
    d = acols.size + icols.size
    h = np.empty(d + 2 * n)
    for j in range(acols.size):
        h[acols[j]] = sign_A[j] * w[j]
    g = np.empty(0)
    if icols.size:
        g = XI.T @ phi
        for j in range(icols.size):
            h[icols[j]] = 1.0 - abs(g[j]) / lev
    for i in range(n):
        ell = quadratic_loss_nb(r[i])
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
    return h, g


@njit(cache=True)
def events(XA: np.ndarray, XI: np.ndarray, y: np.ndarray, code: np.ndarray, sign_A: np.ndarray,
           acols: np.ndarray, icols: np.ndarray, lev: float, w: np.ndarray, lam: float,
           kind, p: float) -> np.ndarray:
    """:func:`events_r` at ``(w, lam)``, from ``w`` alone."""
    easy, mixed = set_lists(code)
    r = XA @ w - y
    lo, hi = kind[1](lam, p)
    return events_r(XI, code, sign_A, acols, icols, lev, w, r, phi_r(r, easy, mixed, lam, kind, p), lo, hi)[0]


@njit(cache=True)
def event_scale(d: int, n: int, nA: int, acols: np.ndarray, wscale: float, hi: float) -> np.ndarray:
    """``GLMSystem.event_scale``: ``wscale`` for active features, 1 for inactive ones, ``1 + hi``
    for samples."""
    s = np.ones(d + 2 * n)
    for j in range(nA):
        s[acols[j]] = wscale
    s[d:] = 1.0 + hi
    return s


@njit(cache=True)
def interior_sees(XI: np.ndarray, code: np.ndarray, sign_A: np.ndarray, icols: np.ndarray, lev: float,
                  easy: np.ndarray, mixed: np.ndarray, ws: np.ndarray, rs: np.ndarray, s: float, kind,
                  p: float, wscale: float, event_tol: float) -> bool:
    """Whether an event function at the point ``ws`` of age ``s`` (residuals ``rs``) is below
    ``-event_tol`` times its scale (:func:`event_scale`), as :func:`events_r` would say: the
    samples and the active features first; ``phi`` and ``X_I^T phi`` only when they see none."""
    lo, hi = kind[1](s, p)
    tol_s = event_tol * (1.0 + hi)
    for i in range(rs.size):
        ell = quadratic_loss_nb(rs[i])
        c = code[i]
        if c == EASY:
            if lo - ell < -tol_s:
                return True
        elif c == MIXED:
            if ell - lo < -tol_s or hi - ell < -tol_s:
                return True
        elif ell - hi < -tol_s:
            return True
    for j in range(ws.size):
        if sign_A[j] * ws[j] < -event_tol * wscale:
            return True
    if icols.size:
        g = XI.T @ phi_r(rs, easy, mixed, s, kind, p)
        for j in range(icols.size):
            if 1.0 - abs(g[j]) / lev < -event_tol:
                return True
    return False


@njit(cache=True)
def hermite_coef(t0: float, h: float, s: float) -> tuple[float, float, float, float]:
    """``(h00, h h10, h01, h h11)``: the cubic Hermite basis at ``u = (s - t0) / h``."""
    u = (s - t0) / h
    h00 = (1 + 2 * u) * (1 - u) ** 2
    h10 = u * (1 - u) ** 2
    h01 = u * u * (3 - 2 * u)
    h11 = u * u * (u - 1)
    return h00, h10 * h, h01, h11 * h


@njit(cache=True)
def hermite(t0: float, h: float, w0: np.ndarray, w1: np.ndarray, d0: np.ndarray, d1: np.ndarray,
            s: float) -> np.ndarray:
    """Cubic Hermite interpolant of ``(t0, w0, d0)`` and ``(t0 + h, w1, d1)`` at ``s``."""
    a, b, c, e = hermite_coef(t0, h, s)
    return a * w0 + b * d0 + c * w1 + e * d1


@njit(cache=True)
def hermite_r(t0: float, h: float, r0: np.ndarray, r1: np.ndarray, q0: np.ndarray, q1: np.ndarray,
              s: float) -> np.ndarray:
    """The residuals ``X_A w(s) - y`` of the interpolant from those of its ends (``r0``, ``r1``) and
    the products ``q0 = X_A d0``, ``q1 = X_A d1``: ``O(n)``, no product with ``X_A``."""
    a, b, c, e = hermite_coef(t0, h, s)
    out = np.empty(r0.size)
    for i in range(r0.size):
        out[i] = a * r0[i] + b * q0[i] + c * r1[i] + e * q1[i]
    return out


@njit(cache=True)
def _crossed_min(XA, XI, y, code, sign_A, slot, lev, w, lam, kind, p, crossed, wscale, event_tol, easy, mixed, r):
    """``min`` over the ``crossed`` positions of (event function + its tolerance) at ``(w, lam)``:
    the rows of the samples involved only, and every residual (``r``, or ``X_A w - y`` when
    ``r`` is empty) only when an inactive feature is among them (its subgradient sums over all
    samples)."""
    n = y.size
    d = slot.size
    lo, hi = kind[1](lam, p)
    vr = np.empty(0)
    for q in crossed:
        if q < d and slot[q] < 0:
            vr = phi_r(r if r.size else XA @ w - y, easy, mixed, lam, kind, p)
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
            ell = quadratic_loss_nb(ri)
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


# ------------------------------------------------------------------ location of the first crossing
# ``ev``: what the crossed event functions need, ``(XA, XI, y, code, sign_A, slot, lev, kind, p,
# crossed, wscale, event_tol, easy, mixed, need_r)`` (``need_r``: an inactive feature is crossed,
# whose event needs every residual); ``pr``: the step's interpolant and the projection onto F = 0,
# ``(t0, h, w0, w1, d0, d1, r0, r1, q0, q1, dmid, XA, y, easy, mixed, grad_pen, lev, kind, p, fac,
# newton_tol, G, last_w, have_last)`` (``last_w``: the remaining correction of the last projected
# point, kept in place).

@njit(cache=True)
def _h_at(ev, ws, s, rs):
    """``H`` at the point ``ws`` of age ``s`` (residuals ``rs``, or empty): the smallest crossed
    event function plus its tolerance."""
    XA, XI, y, code, sign_A, slot, lev, kind, p, crossed, wscale, event_tol, easy, mixed, _ = ev
    return _crossed_min(XA, XI, y, code, sign_A, slot, lev, ws, s, kind, p, crossed, wscale, event_tol, easy,
                        mixed, rs)


@njit(cache=True)
def predict(t0, h, w0, w1, d0, d1, dmid, s):
    """The interpolant at ``s`` corrected by the middle point's error ``dmid`` (module docstring)."""
    u = (s - t0) / h
    return hermite(t0, h, w0, w1, d0, d1, s) + (16.0 * u * u * (1.0 - u) * (1.0 - u)) * dmid


@njit(cache=True)
def _h_proj(ev, pr, s):
    """``H`` at the Newton projection at age ``s``: ``(H, point, projected)``."""
    (t0, h, w0, w1, d0, d1, r0, r1, q0, q1, dmid, XA, y, easy, mixed, grad_pen, lev, kind, p, fac, newton_tol, G,
     last_w, have_last) = pr
    wb = predict(t0, h, w0, w1, d0, d1, dmid, s)
    ws = wb + last_w if have_last[0] else wb
    # (the residuals of the start computed from it: close to the path, it is often the projection)
    ps, rps, _, res, _ = project_r(XA, y, easy, mixed, grad_pen, lev, ws, np.empty(0), s, kind, p, fac, True,
                                   newton_tol, G)
    ok = res <= 1e3 * newton_tol
    if ok:
        last_w[:] = ps - wb
        have_last[0] = True
    return _h_at(ev, ps, s, rps), ps, ok


@njit(cache=True)
def _scan(ev, pr, t_end, ha):
    """The first sign change of ``H`` on the raw interpolant, on two grids of 16 cells (the
    second inside the first's cell, as ``_Tracker.locate`` scans the dense output).

    Returns ``(lo, hi, H(lo), H(hi), c_lo, c_hi, fine)``: the finest cell found, the coarse
    cell, and whether the fine grid saw the change too.
    """
    t0, h, w0, w1, d0, d1, r0, r1, q0, q1 = pr[0], pr[1], pr[2], pr[3], pr[4], pr[5], pr[6], pr[7], pr[8], pr[9]
    none = np.empty(0)
    lo, hi = t0, t_end
    c_lo, c_hi = t0, t_end
    h_lo, h_hi = ha, 0.0
    fine = False
    for level in range(2):
        prev_s, prev_h = lo, h_lo
        found = False
        for j in range(1, 17):
            s = lo + (hi - lo) * j / 16.0
            rs = hermite_r(t0, h, r0, r1, q0, q1, s) if ev[14] else none
            hs = _h_at(ev, hermite(t0, h, w0, w1, d0, d1, s), s, rs)
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
    return lo, hi, h_lo, h_hi, c_lo, c_hi, fine


@njit(cache=True)
def _secant_bracket(ev, pr, lo, hi, h_lo, h_hi, c_lo, c_hi, ftol):
    """Secant steps on the projected ``H`` from the raw root of the fine cell (raw slope), within
    the coarse cell: the projected root is within the interpolant's error of the raw one.

    Returns ``(status, u, H(u), v, H(v), point)``: status 2, the root ``u`` with its projected
    point; status 1, a bracket ``[u, v]`` with ``H(u) >= 0 > H(v)`` and the point at ``v``;
    status 0, neither (``H`` rises through 0 there: an earlier root, left to the fallback).
    """
    slope = (h_hi - h_lo) / (hi - lo)
    pt = lo - h_lo / slope
    fp, pp, okp = _h_proj(ev, pr, pt)
    q = pt - fp / slope
    for _ in range(6):
        if not okp:
            break
        if abs(fp) <= ftol:
            return 2, pt, fp, pt, fp, pp
        q = min(max(q, c_lo), c_hi)
        if q == pt:
            break
        fq, pq, okq = _h_proj(ev, pr, q)
        if not okq:
            break
        if (fp >= 0) != (fq >= 0):
            if q < pt:
                u, fu, w_, fw, pw = q, fq, pt, fp, pp
            else:
                u, fu, w_, fw, pw = pt, fp, q, fq, pq
            if fu >= 0 > fw:
                return 1, u, fu, w_, fw, pw
            break
        q_new = q - fq * (q - pt) / (fq - fp) if fq != fp else q
        pt, fp, pp = q, fq, pq
        q = q_new
    return 0, pt, fp, pt, fp, pp


@njit(cache=True)
def _illinois(ev, pr, a, fa, b, fb, pb, ftol, xtol, t_end, w_end):
    """Regula falsi (Illinois) on the projected ``H`` from the bracket ``[a, b]``, ``H(a) >= 0 > H(b)``
    (``core.tracker.illinois``: the same stopping rules).  Returns ``(age, point, ok)``."""
    side = 0
    for _ in range(60):
        if b - a <= xtol:
            break
        c = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (a + b)
        if not a < c < b:
            c = 0.5 * (a + b)
        fc, pc, okc = _h_proj(ev, pr, c)
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


@njit(cache=True)
def locate(XA, XI, y, code, sign_A, acols, icols, easy, mixed, lev, kind, p, grad_pen, newton_tol, event_tol,
           wscale, crossed, t0, h, w0, w1, d0, d1, r0, r1, q0, q1, dmid, t_end, w_end, fac, G):
    """Age of the first crossing of the ``crossed`` event functions in ``(t0, t_end]``, on the
    projected path: ``(age, projected point, ok)``.

    ``H(s)`` is the smallest crossed event function plus its tolerance at the Newton-projected
    point of age ``s``.  The interpolant is scanned for the first sign change (:func:`_scan`);
    secant steps (:func:`_secant_bracket`) and then Illinois (:func:`_illinois`) on the
    projected ``H`` finish from that cell, or from the whole interval when the cell does not
    bracket the projected root.  ``(r0, r1, q0, q1)``: the residuals of the step's ends and
    the products of their tangents with ``X_A``; ``dmid``: the middle point's correction
    (:func:`predict`); ``fac``: the factor at the step's end.
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
    need_r = False
    for q in crossed:
        if q < d and slot[q] < 0:
            need_r = True
    ev = (XA, XI, y, code, sign_A, slot, lev, kind, p, crossed, wscale, event_tol, easy, mixed, need_r)
    pr = (t0, h, w0, w1, d0, d1, r0, r1, q0, q1, dmid, XA, y, easy, mixed, grad_pen, lev, kind, p, fac, newton_tol,
          G, np.empty(k), np.zeros(1, dtype=np.bool_))

    ha = _h_at(ev, w0, t0, r0)
    if ha < 0:  # already violated at the step start
        return t0, w0.copy(), True
    sc = event_scale(d, n, k, acols, wscale, kind[1](t_end, p)[1])
    ftol = np.inf
    for i in crossed:
        ftol = min(ftol, 1e-3 * event_tol * sc[i])
    lo, hi, h_lo, h_hi, c_lo, c_hi, fine = _scan(ev, pr, t_end, ha)
    a, fa = t0, ha
    b, fb, pb = t_end, _h_at(ev, w_end, t_end, np.empty(0)), w_end.copy()
    bracket = False
    if fine and h_lo >= 0 > h_hi:
        status, u, fu, v_, fv, pv = _secant_bracket(ev, pr, lo, hi, h_lo, h_hi, c_lo, c_hi, ftol)
        if status == 2:
            return u, pv, True
        if status == 1:
            a, fa, b, fb, pb = u, fu, v_, fv, pv
            bracket = True
    if not bracket:
        # a bracket of the projected root: the coarse cell if it holds, else the whole interval
        if c_lo > t0 or c_hi < t_end:
            f_lo, _, ok_lo = _h_proj(ev, pr, c_lo) if c_lo > t0 else (ha, w0.copy(), True)
            f_hi, p_hi, ok_hi = _h_proj(ev, pr, c_hi) if c_hi < t_end else (fb, pb, True)
            if ok_lo and ok_hi and f_lo >= 0 > f_hi:
                a, fa, b, fb, pb = c_lo, f_lo, c_hi, f_hi, p_hi
    if not (fa >= 0 > fb):
        return t_end, w_end, False
    return _illinois(ev, pr, a, fa, b, fb, pb, ftol, xtol, t_end, w_end)
