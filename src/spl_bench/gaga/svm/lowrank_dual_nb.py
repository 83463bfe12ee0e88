"""Compiled loop of the low-rank SVM dual active-set method (:mod:`spl_bench.gaga.svm.lowrank_dual`).

The same iteration as :func:`spl_bench.gaga.svm.lowrank_dual._iterate` (the reference, in NumPy),
with the QR factorisation of the free columns ``A_F = Q R`` kept up to date by Givens
rotations in place: appending a column rotates ``Q^T c`` onto its first ``m + 1`` entries
(rows ``j - 1, j`` from the bottom up, ``Q <- Q G^T``); removing column ``p`` leaves ``R``
upper Hessenberg from column ``p`` on, and rotations of rows ``(j, j + 1)`` restore it. Each
costs ``O((d + 1)^2)``, as scipy's ``qr_insert`` / ``qr_delete`` do, without their per-call
overhead, which dominated the NumPy loop (a fit makes hundreds of set changes, each a few
library calls on small arrays).
Every ``REFRESH`` updates the factorisation is rebuilt from the columns against the drift
of many rotations.

Compiled with numba (``cache=True``: the first call on a machine compiles, later processes
load the cache).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: rebuild Q, R from the free columns after this many updates
REFRESH = 400

# exit codes of ``iterate``
OPTIMUM, GAVE_UP, SINGULAR, LIMIT = 0, 1, 2, 3


@njit(cache=True)
def _rotation(f: float, g: float) -> tuple[float, float]:
    """``(c, s)`` with ``[c s; -s c] [f; g] = [r; 0]``."""
    if g == 0.0:
        return 1.0, 0.0
    r = np.hypot(f, g)
    return f / r, g / r


@njit(cache=True)
def _rotate_q(Q: np.ndarray, i: int, j: int, c: float, s: float) -> None:
    """``Q <- Q G^T`` for the rotation ``G`` of coordinates ``(i, j)``."""
    for r in range(Q.shape[0]):
        qi, qj = Q[r, i], Q[r, j]
        Q[r, i] = c * qi + s * qj
        Q[r, j] = -s * qi + c * qj


@njit(cache=True)
def _insert(Q: np.ndarray, R: np.ndarray, m: int, col: np.ndarray) -> None:
    """Append ``col`` as column ``m`` of ``A_F = Q R``."""
    dim = Q.shape[0]
    t = Q.T @ col
    for j in range(dim - 1, m, -1):
        c, s = _rotation(t[j - 1], t[j])
        t[j - 1] = c * t[j - 1] + s * t[j]
        t[j] = 0.0
        _rotate_q(Q, j - 1, j, c, s)
    for r in range(dim):
        R[r, m] = t[r] if r <= m else 0.0


@njit(cache=True)
def _delete(Q: np.ndarray, R: np.ndarray, m: int, pos: int) -> None:
    """Remove column ``pos`` of the ``m`` columns of ``A_F = Q R``."""
    dim = Q.shape[0]
    for k in range(pos, m - 1):
        for r in range(dim):
            R[r, k] = R[r, k + 1]
    for r in range(dim):
        R[r, m - 1] = 0.0
    for j in range(pos, m - 1):
        c, s = _rotation(R[j, j], R[j + 1, j])
        for k in range(j, m - 1):
            rj, rj1 = R[j, k], R[j + 1, k]
            R[j, k] = c * rj + s * rj1
            R[j + 1, k] = -s * rj + c * rj1
        R[j + 1, j] = 0.0
        _rotate_q(Q, j, j + 1, c, s)


@njit(cache=True)
def _rebuild(Q: np.ndarray, R: np.ndarray, C: np.ndarray, idx: np.ndarray, m: int) -> None:
    """``Q, R`` of the free columns afresh (from the identity, one column at a time)."""
    dim = Q.shape[0]
    for r in range(dim):
        for k in range(dim):
            Q[r, k] = 1.0 if r == k else 0.0
            R[r, k] = 0.0
    for k in range(m):
        _insert(Q, R, k, C[idx[k]].copy())


@njit(cache=True)
def _triangular_solve(R: np.ndarray, m: int, rhs: np.ndarray, transpose: bool) -> tuple[np.ndarray, bool]:
    """``R_m^{-1} rhs`` by back substitution, or (``transpose``) ``R_m^{-T} rhs`` by forward
    substitution; ``ok`` false on a zero pivot."""
    x = rhs.copy()
    for step in range(m):
        i = step if transpose else m - 1 - step
        if R[i, i] == 0.0:
            return x, False
        acc = x[i]
        if transpose:
            for k in range(i):
                acc -= R[k, i] * x[k]
        else:
            for k in range(i + 1, m):
                acc -= R[i, k] * x[k]
        x[i] = acc / R[i, i]
    return x, True


@njit(cache=True)
def _move(a: np.ndarray, u: np.ndarray, at_u: np.ndarray, F: np.ndarray, m: int, p: np.ndarray,
          cap: float) -> tuple[float, int]:
    """Move ``a_F`` along ``p`` by the longest step ``<= cap`` inside the box (as the reference
    ``_move``): ``(alpha, j)`` with ``j`` the blocking position in ``F`` or ``-1``."""
    j = -1
    best = np.inf
    for i in range(m):
        k = F[i]
        if p[i] < 0.0:
            ratio = a[k] / -p[i]
        elif p[i] > 0.0:
            ratio = (u[k] - a[k]) / p[i]
        else:
            ratio = np.inf
        if j < 0 or ratio < best:
            j, best = i, ratio
    alpha = best if best < cap else cap
    for i in range(m):
        k = F[i]
        a[k] = min(max(a[k] + alpha * p[i], 0.0), u[k])
    if not best < cap:
        return cap, -1
    k = F[j]
    if p[j] < 0.0:
        a[k] = 0.0
    else:
        a[k] = u[k]
        at_u[k] = True
    return alpha, j


@njit(cache=True)
def _join(Q: np.ndarray, R: np.ndarray, C: np.ndarray, F: np.ndarray, in_F: np.ndarray, m: int, k: int) -> int:
    """Sample ``k`` joins the free set ``F[:m]`` as its last column; the new ``m``."""
    _insert(Q, R, m, C[k].copy())
    F[m] = k
    in_F[k] = True
    return m + 1


@njit(cache=True)
def _leave(Q: np.ndarray, R: np.ndarray, F: np.ndarray, in_F: np.ndarray, m: int, j: int) -> int:
    """The sample at position ``j`` of the free set ``F[:m]`` leaves it; the new ``m``."""
    in_F[F[j]] = False
    _delete(Q, R, m, j)
    for i in range(j, m - 1):
        F[i] = F[i + 1]
    return m - 1


@njit(cache=True)
def _newton_step(G: np.ndarray, w: np.ndarray, Q: np.ndarray, R: np.ndarray, F: np.ndarray, m: int,
                 s: float, eps: float) -> tuple[int, float, np.ndarray, np.ndarray]:
    """The Newton step to the stationary point of the face ``F[:m]`` (and onto ``y^T a = 0``):
    ``(code, b, c, p)`` with ``code`` -1, or ``SINGULAR`` / ``GAVE_UP`` (``b, c, p`` unused)."""
    d = G.shape[1]
    r = np.empty(m)
    for i in range(m):
        r[i] = 1.0 - G[F[i]] @ w
    h, ok = _triangular_solve(R, m, r, True)
    if not ok:
        return SINGULAR, 0.0, r, h
    qq = 0.0
    qh = 0.0
    for i in range(m):
        qq += Q[d, i] * Q[d, i]
        qh += Q[d, i] * h[i]
    if qq <= 1e-300:
        return GAVE_UP, 0.0, r, h
    b = (qh + s * (1.0 - qq)) / qq
    c = np.empty(m)
    for i in range(m):
        c[i] = h[i] - Q[d, i] * (b + s)
    p, ok = _triangular_solve(R, m, c, False)
    if not ok:
        return SINGULAR, b, c, p
    if not (np.all(np.isfinite(p)) and np.isfinite(b)):
        return GAVE_UP, b, c, p
    for i in range(m):
        if abs(p[i]) <= eps:
            p[i] = 0.0
    return -1, b, c, p


@njit(cache=True)
def _advance_w(w: np.ndarray, Q: np.ndarray, c: np.ndarray, alpha: float, m: int) -> None:
    """``w += alpha Q[:d, :m] c``: ``w`` after a Newton step cut short at ``alpha``."""
    for r in range(w.shape[0]):
        zr = 0.0
        for i in range(m):
            zr += Q[r, i] * c[i]
        w[r] += alpha * zr


@njit(cache=True)
def _restoring_sample(G: np.ndarray, w: np.ndarray, y: np.ndarray, live: np.ndarray, at_u: np.ndarray,
                      s: float) -> int:
    """With no free sample to restore ``y^T a = 0``: the bound sample that moves ``y^T a``
    towards 0 and whose gradient favours that move most, or -1."""
    gw = G @ w
    k = -1
    best = -np.inf
    for i in range(G.shape[0]):
        if not live[i]:
            continue
        if not at_u[i] and y[i] * s < 0.0:
            score = 1.0 - gw[i]
        elif at_u[i] and y[i] * s > 0.0:
            score = gw[i] - 1.0
        else:
            continue
        if score > best:
            k, best = i, score
    if k < 0 or not np.isfinite(best):
        return -1
    return k


@njit(cache=True)
def _bound_intercept(g0: np.ndarray, y: np.ndarray, live: np.ndarray, at_u: np.ndarray) -> float:
    """``b`` from the bounds alone (no free sample): the middle of the interval they allow."""
    lo, hi = -np.inf, np.inf
    for i in range(g0.shape[0]):
        if not live[i]:
            continue
        if at_u[i]:
            if y[i] > 0:
                hi = min(hi, g0[i])
            elif y[i] < 0:
                lo = max(lo, -g0[i])
        else:
            if y[i] > 0:
                lo = max(lo, g0[i])
            elif y[i] < 0:
                hi = min(hi, -g0[i])
    if np.isfinite(lo + hi):
        return 0.5 * (lo + hi)
    elif np.isfinite(lo):
        return lo
    elif np.isfinite(hi):
        return hi
    return 0.0


@njit(cache=True)
def _most_violated(g0: np.ndarray, y: np.ndarray, b: float, live: np.ndarray, in_F: np.ndarray,
                   at_u: np.ndarray, viol: np.ndarray) -> int:
    """The bound sample whose sign condition (``g <= 0`` at 0, ``g >= 0`` at ``u``, with
    ``g = g0 - y b``) is most violated; ``viol`` filled in place (0 off the bounds)."""
    k = 0
    for i in range(g0.shape[0]):
        gi = g0[i] - y[i] * b
        if live[i] and not in_F[i]:
            viol[i] = -gi if at_u[i] else gi
        else:
            viol[i] = 0.0
        if viol[i] > viol[k]:
            k = i
    return k


@njit(cache=True)
def _free_residual(g0: np.ndarray, y: np.ndarray, b: float, F: np.ndarray, m: int) -> float:
    """``max |g|`` on the free set ``F[:m]``."""
    worst = 0.0
    for i in range(m):
        worst = max(worst, abs(g0[F[i]] - y[F[i]] * b))
    return worst


@njit(cache=True)
def _outside_span(t: np.ndarray, col: np.ndarray, m: int) -> bool:
    """Whether the column ``col`` (``t = Q^T col``) can join the ``m`` free columns: not in
    their span, to ``1e-9`` of its norm, and room left."""
    rest = 0.0
    for i in range(m, t.shape[0]):
        rest += t[i] * t[i]
    return m < t.shape[0] and np.sqrt(rest) > 1e-9 * max(np.sqrt(col @ col), 1e-300)


@njit(cache=True)
def _exchange(Q: np.ndarray, R: np.ndarray, C: np.ndarray, F: np.ndarray, in_F: np.ndarray, a: np.ndarray,
              u: np.ndarray, at_u: np.ndarray, t: np.ndarray, m: int, k: int, sigma: float
              ) -> tuple[int, int, int]:
    """Release sample ``k`` from its bound (``sigma``: +1 up from 0, -1 down from ``u``) when its
    column is in the span of the free ones (``t = Q^T c_k``): a direction that keeps ``w`` and
    ``y^T a``, down by ``g_k``.  ``(code, m, updates made)``, ``code`` -1 or ``SINGULAR``."""
    dF, ok = _triangular_solve(R, m, t[:m].copy(), False)
    if not ok:
        return SINGULAR, m, 0
    big = 0.0
    for i in range(m):
        dF[i] = -sigma * dF[i]
        big = max(big, abs(dF[i]))
    for i in range(m):
        if abs(dF[i]) <= 1e-13 * max(1.0, big):
            dF[i] = 0.0
    alpha, j = _move(a, u, at_u, F, m, dF, u[k])
    if j < 0:  # k crosses its box first: it changes bound, F stays
        if sigma > 0:
            a[k] = u[k]
            at_u[k] = True
        else:
            a[k] = 0.0
        return -1, m, 0
    # the blocking free sample leaves F, k takes its place
    a[k] = min(max(a[k] + sigma * alpha, 0.0), u[k])
    m = _join(Q, R, C, F, in_F, _leave(Q, R, F, in_F, m, j), k)
    return -1, m, 2


@njit(cache=True)
def iterate(G: np.ndarray, y: np.ndarray, C: np.ndarray, u: np.ndarray, live: np.ndarray,
            a: np.ndarray, at_u: np.ndarray, Q: np.ndarray, R: np.ndarray, F: np.ndarray, m: int,
            tol: float, max_iter: int, updates: int) -> tuple[int, int, int]:
    """Run the active-set iteration from the free set ``F[:m]`` (factorised as ``Q R``, after
    ``updates`` updates) and the bounds ``a``, ``at_u``, updating all of them in place; return
    ``(exit code, m, updates)``."""
    n, d = G.shape
    w = G.T @ a
    s = float(y @ a)
    b = 0.0
    umax = 0.0
    for i in range(n):
        umax = max(umax, u[i])
    scale_u = max(umax, 1e-300)
    tol_a = tol * scale_u
    eps = 1e-14 * scale_u
    in_F = np.zeros(n, dtype=np.bool_)
    for i in range(m):
        in_F[F[i]] = True
    viol = np.zeros(n)
    for _ in range(max_iter):
        if updates >= REFRESH:
            _rebuild(Q, R, C, F, m)
            updates = 0
        if m > 0:
            code, b, c, p = _newton_step(G, w, Q, R, F, m, s, eps)
            if code >= 0:
                return code, m, updates
            alpha, j = _move(a, u, at_u, F, m, p, 1.0)
            if j >= 0:  # a free sample reached its bound first: w moves by alpha Q[:d, :m] c
                _advance_w(w, Q, c, alpha, m)
                m = _leave(Q, R, F, in_F, m, j)
                updates += 1
                s = float(y @ a)
                continue
        elif abs(s) > tol_a:
            k = _restoring_sample(G, w, y, live, at_u, s)
            if k < 0:
                return GAVE_UP, m, updates
            at_u[k] = False
            m = _join(Q, R, C, F, in_F, m, k)
            updates += 1
            continue
        # a stationary point of the face: w, y^T a and g afresh, then the signs at the bounds
        w = G.T @ a
        s = float(y @ a)
        g0 = 1.0 - G @ w
        if m == 0:
            b = _bound_intercept(g0, y, live, at_u)
        k = _most_violated(g0, y, b, live, in_F, at_u, viol)
        if viol[k] <= tol:
            if m and (_free_residual(g0, y, b, F, m) > tol or abs(s) > tol_a):
                return GAVE_UP, m, updates
            return OPTIMUM, m, updates
        sigma = -1.0 if at_u[k] else 1.0
        at_u[k] = False
        t = Q.T @ C[k]
        if _outside_span(t, C[k], m):
            m = _join(Q, R, C, F, in_F, m, k)
            updates += 1
            continue
        code, m, made = _exchange(Q, R, C, F, in_F, a, u, at_u, t, m, k, sigma)
        if code >= 0:
            return code, m, updates
        updates += made
        s = float(y @ a)
    return LIMIT, m, updates
