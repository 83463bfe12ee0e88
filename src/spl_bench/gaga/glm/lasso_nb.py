"""The lasso's path system on fixed sets, compiled (numba): GAGA eq. (5) for the quadratic
datafit and the L1 penalty, with the SP-regularizer's compiled kernels.

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path solves

    F(w_A, lam) = X_LA^T (v*(ell, lam) * (X_LA w_A - y_L)) + n alpha sign_A = 0,

with ``ell = (y - x^T w)^2 / 2`` (:func:`~spl_bench.models.datafits.quadratic_loss_nb`), ``L``
the samples not in D and ``v*`` the regularizer's closed form on M (1 on E).  Its Jacobians are

    J_w = X_LA^T diag(v + (dv*/dell) r^2) X_LA,    J_lam = X_LA^T ((dv*/dlam) r),   r = X_LA w_A - y_L.

``kind`` is the pair of the regularizer's kernels ``(mixed, thresholds)`` and ``p`` its
parameter (:meth:`spl_bench.sp.base.SPRegularizer.compiled_kernels`): this module holds no
formula of a regularizer or of the loss.  ``kind`` has the first-class function type
:data:`spl_bench.gaga.glm.segment_nb.KERNELS`; from Python, call these functions through
:func:`spl_bench.gaga.glm.segment_nb.call_typed` (the reason is beside ``KERNELS``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spl_bench.gaga.core.lu_nb import lu_factor, lu_solve, max_abs
from spl_bench.models.datafits import quadratic_loss_nb
from spl_bench.sp.base import EASY, HARD, MIXED

#: iterative refinement of the tangent on an earlier factor (:func:`tangent`): at most this many
#: iterations, accepted at this relative residual, given up when the residual does not shrink
#: by this factor per iteration
REFINE_MAX, REFINE_TOL, REFINE_RATE = 8, 1e-10, 0.5


@njit(cache=True)
def weights(r: np.ndarray, code: np.ndarray, lam: float, kind: int, p: float,
             v: np.ndarray, dl: np.ndarray, dlam: np.ndarray) -> None:
    """``v``, ``dv/dell``, ``dv/dlam`` of the residuals ``r`` (tracked set codes) into the outputs."""
    for i in range(r.size):
        c = code[i]
        if c == MIXED:
            v[i], dl[i], dlam[i] = kind[0](quadratic_loss_nb(r[i]), lam, p)
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
    weights(r, cL, lam, kind, p, v, dl, dlam)
    return XL.T @ (v * r) + grad_pen


@njit(cache=True)
def jacobians(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, w: np.ndarray, lam: float,
              kind: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``(J_w, J_lam)`` on the live rows (module docstring)."""
    r = XL @ w - yL
    v, dl, dlam = np.empty_like(r), np.empty_like(r), np.empty_like(r)
    weights(r, cL, lam, kind, p, v, dl, dlam)
    D = v + dl * r * r
    J = (XL.T * D) @ XL
    return J, XL.T @ (dlam * r)


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
    res = max_abs(F) / lev
    n_lu = 0
    if chord and LU.shape[0] == w.size:
        for _ in range(6):
            if res <= newton_tol:
                return w, res, n_lu
            w_new = w - lu_solve(LU, perm, F)
            F_new = residual(XL, yL, cL, grad_pen, w_new, lam, kind, p)
            res_new = max_abs(F_new) / lev
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
            res_new = max_abs(F_new) / lev
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
    weights(r, cL, t, kind, p, v, dl, dlam)
    D = v + dl * r * r
    b = -(XL.T @ (dlam * r))
    if use_ref and LU.shape[0] == w.size:
        x = lu_solve(LU, perm, b)
        prev = np.inf
        for _ in range(REFINE_MAX):
            Jx = XL.T @ (D * (XL @ x))
            res = b - Jx
            rn = max_abs(res)
            if not np.isfinite(rn):
                break
            if rn <= REFINE_TOL * max(max_abs(b), max_abs(Jx), 1e-300):
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
