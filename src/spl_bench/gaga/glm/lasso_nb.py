"""The lasso's path system on fixed sets, compiled (numba): GAGA eq. (5) for the quadratic
datafit and the L1 penalty, with the SP-regularizer's compiled kernels.

Between two critical points the sets (active features A with their signs, samples in E, M
and D) are fixed and the path solves

    F(w_A, lam) = X_A^T phi + n alpha sign_A = 0,    phi_i = v*(ell_i, lam) r_i,

with ``r = X_A w_A - y``, ``ell = r^2 / 2`` (:func:`~spl_bench.models.datafits.quadratic_loss_nb`)
and ``v*`` the regularizer's closed form on M, 1 on E and 0 on D (a sample in D adds nothing:
the sums run over every sample, ``phi_i = 0`` on D).  Its Jacobians are

    J_w = X_A^T diag(D) X_A,    D_i = v_i + (dv*/dell)_i r_i^2,
    J_lam = X_A^T s,            s_i = (dv*/dlam)_i r_i,

(``D_i = 1``, ``s_i = 0`` on E; both 0 on D).  The follower keeps ``r`` of the point it is at,
so that ``F``, the event functions and ``J_w`` of one point share one product ``X_A w``
(:func:`phi_r`, :func:`curvature`, :func:`project_r`, :func:`tangent_d`).

The linear solves go through a *factor* ``(LU, perm, U, Z, LUS, permS)`` (:func:`plain`,
:func:`low_rank`, :func:`fsolve`): the LU of a ``J`` and, after samples change sets at a
critical point, the Woodbury correction of the rank-``m`` change ``U^T diag(c) U`` (the moved
samples' rows ``x_A`` and the changes ``c`` of their ``D_i``),

    P^{-1} b = J^{-1} b - Z S^{-1} U J^{-1} b,    Z = J^{-1} U^T,   S = diag(1/c) + U Z,

with ``det P = det J prod(c) det S``: the new sets' ``J_w`` at the critical point up to the
drift of ``J`` from where it was factorised, so that it serves the chord iterations and the
refined tangent there without forming and factorising ``J_w``.

``kind`` is the pair of the regularizer's kernels ``(mixed, thresholds)`` and ``p`` its
parameter (:meth:`spl_bench.sp.base.SPRegularizer.compiled_kernels`): this module holds no
formula of a regularizer or of the loss.  ``kind`` has the first-class function type
:data:`spl_bench.gaga.glm.segment_nb.KERNELS`; from Python, call these functions through
:func:`spl_bench.gaga.glm.segment_nb.call_typed` (the reason is beside ``KERNELS``).

:func:`residual`, :func:`jacobians`, :func:`project` and :func:`tangent` are the same on the
live rows ``X_LA`` (samples not in D) given as arrays, for the tests against
:class:`~spl_bench.gaga.glm.glm_system.GLMSystem`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spl_bench.gaga.core.lu_nb import lu_factor, lu_solve, max_abs
from spl_bench.models.datafits import quadratic_loss_nb
from spl_bench.sp.base import EASY, HARD, MIXED

#: iterative refinement of the tangent on an earlier factor (:func:`tangent_d`): at most this many
#: iterations, accepted at this relative residual, given up when the residual does not shrink
#: by this factor per iteration
REFINE_MAX, REFINE_TOL, REFINE_RATE = 8, 1e-10, 0.5


@njit(cache=True)
def set_lists(code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(easy, mixed)``: the indices of the samples in E and in M."""
    return np.flatnonzero(code == EASY), np.flatnonzero(code == MIXED)


@njit(cache=True)
def phi_r(r: np.ndarray, easy: np.ndarray, mixed: np.ndarray, lam: float, kind, p: float) -> np.ndarray:
    """``phi = v* r`` of every sample: ``r_i`` on E, ``v*(ell_i, lam) r_i`` on M, 0 on D."""
    phi = np.zeros(r.size)
    for i in easy:
        phi[i] = r[i]
    mk = kind[0]
    for i in mixed:
        ri = r[i]
        phi[i] = mk(quadratic_loss_nb(ri), lam, p)[0] * ri
    return phi


@njit(cache=True)
def curvature(r: np.ndarray, easy: np.ndarray, mixed: np.ndarray, lam: float, kind,
              p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(phi, D, s)`` at residuals ``r``: ``phi = v r``, the weights ``D = v + (dv/dell) r^2`` of
    ``J_w`` and ``s = (dv/dlam) r`` of ``J_lam`` (module docstring)."""
    n = r.size
    phi, D, s = np.zeros(n), np.zeros(n), np.zeros(n)
    for i in easy:
        phi[i] = r[i]
        D[i] = 1.0
    mk = kind[0]
    for i in mixed:
        ri = r[i]
        v, dl, dlam = mk(quadratic_loss_nb(ri), lam, p)
        phi[i] = v * ri
        D[i] = v + dl * ri * ri
        s[i] = dlam * ri
    return phi, D, s


@njit(cache=True)
def d_of(ri: float, c: int, lam: float, kind, p: float) -> float:
    """``D_i`` of one sample of set code ``c`` at residual ``ri``."""
    if c == MIXED:
        v, dl, _ = kind[0](quadratic_loss_nb(ri), lam, p)
        return v + dl * ri * ri
    return 1.0 if c == EASY else 0.0


@njit(cache=True, fastmath={"reassoc", "contract"})
def gram(G, D: np.ndarray) -> np.ndarray:
    """``J_w = X_A^T diag(D) X_A = sum_i D_i x_i x_i^T`` from ``G = (X_A^T, T)``, ``T`` a ``k x n``
    work array (``X_A^T diag(D)``).

    Each entry is a dot product over the samples; the upper triangle is formed in 4 x 4 tiles
    (16 sums side by side over contiguous rows of ``X_A^T`` and ``T``) and mirrored: half the
    multiplications of the general product.  The flags let the compiler split each sum into
    partial sums (vector lanes), as BLAS does: only the rounding of the sums changes.
    """
    XT, T = G
    k, n = XT.shape
    for a in range(k):
        for i in range(n):
            T[a, i] = XT[a, i] * D[i]
    J = np.empty((k, k))
    for a0 in range(0, k - k % 4, 4):
        for b0 in range(a0, k - k % 4, 4):
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = 0.0
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = 0.0
            for i in range(n):
                t0, t1, t2, t3 = T[a0, i], T[a0 + 1, i], T[a0 + 2, i], T[a0 + 3, i]
                x0, x1, x2, x3 = XT[b0, i], XT[b0 + 1, i], XT[b0 + 2, i], XT[b0 + 3, i]
                s00 += t0 * x0
                s01 += t0 * x1
                s02 += t0 * x2
                s03 += t0 * x3
                s10 += t1 * x0
                s11 += t1 * x1
                s12 += t1 * x2
                s13 += t1 * x3
                s20 += t2 * x0
                s21 += t2 * x1
                s22 += t2 * x2
                s23 += t2 * x3
                s30 += t3 * x0
                s31 += t3 * x1
                s32 += t3 * x2
                s33 += t3 * x3
            J[a0, b0], J[a0, b0 + 1], J[a0, b0 + 2], J[a0, b0 + 3] = s00, s01, s02, s03
            J[a0 + 1, b0], J[a0 + 1, b0 + 1], J[a0 + 1, b0 + 2], J[a0 + 1, b0 + 3] = s10, s11, s12, s13
            J[a0 + 2, b0], J[a0 + 2, b0 + 1], J[a0 + 2, b0 + 2], J[a0 + 2, b0 + 3] = s20, s21, s22, s23
            J[a0 + 3, b0], J[a0 + 3, b0 + 1], J[a0 + 3, b0 + 2], J[a0 + 3, b0 + 3] = s30, s31, s32, s33
    for a in range(k):  # the rows and columns outside the tiles
        for b in range(max(a, k - k % 4), k):
            acc = 0.0
            for i in range(n):
                acc += T[a, i] * XT[b, i]
            J[a, b] = acc
    for a in range(k):
        for b in range(a):
            J[a, b] = J[b, a]
    return J


@njit(cache=True)
def gram_work(XA: np.ndarray):
    """``G`` of :func:`gram` for ``X_A``: its transpose (contiguous) and a work array."""
    return np.ascontiguousarray(XA.T), np.empty((XA.shape[1], XA.shape[0]))


# ------------------------------------------------------------------ factors of J_w
@njit(cache=True)
def plain(LU: np.ndarray, perm: np.ndarray):
    """The factor of :func:`lu_factor`'s ``(LU, perm)`` with no low-rank correction."""
    k = LU.shape[0]
    return LU, perm, np.empty((0, k)), np.empty((k, 0)), np.empty((0, 0)), np.empty(0, dtype=np.int64)


@njit(cache=True)
def no_factor():
    """An empty factor (no reference: the first tangent is factorised)."""
    return plain(np.empty((0, 0)), np.empty(0, dtype=np.int64))


@njit(cache=True)
def fsolve(fac, b: np.ndarray) -> np.ndarray:
    """``P^{-1} b`` for the factor ``fac`` (Woodbury: module docstring)."""
    LU, perm, U, Z, LUS, permS = fac
    x = lu_solve(LU, perm, b)
    if U.shape[0]:
        x = x - Z @ lu_solve(LUS, permS, U @ x)
    return x


@njit(cache=True)
def low_rank(fac, sign: float, U: np.ndarray, c: np.ndarray):
    """The factor of ``P = J + U^T diag(c) U`` from the plain factor ``fac`` of ``J`` (``sign``: of
    ``det J``; ``c`` non-zero): ``(factor, sign of det P, ok)``; ``ok`` is False when the
    capacitance ``S`` is singular to working precision (:func:`lu_factor`)."""
    LU, perm = fac[0], fac[1]
    m, k = U.shape
    Z = np.empty((k, m))
    for a in range(m):
        Z[:, a] = lu_solve(LU, perm, U[a].copy())
    S = U @ Z
    sg = sign
    for a in range(m):
        S[a, a] += 1.0 / c[a]
        if c[a] < 0.0:
            sg = -sg
    LUS, permS, sS, ok = lu_factor(S)
    return (LU, perm, U, Z, LUS, permS), sg * sS, ok


# ------------------------------------------------------------------ Newton and tangent
@njit(cache=True)
def project_r(XA: np.ndarray, y: np.ndarray, easy: np.ndarray, mixed: np.ndarray, grad_pen: np.ndarray,
              lev: float, w: np.ndarray, r: np.ndarray, lam: float, kind, p: float, fac, chord: bool,
              newton_tol: float, G):
    """Newton onto ``F(., lam) = 0`` from ``w``: ``(point, r, phi, relative residual,
    factorisations)`` with ``r = X_A w - y`` and ``phi = v r`` of the point returned.

    ``_Tracker.newton``: chord iterations on the factor ``fac`` kept while they at least halve the
    residual, then full Newton with backtracking (8 iterations, 12 halvings each).  The
    residual is relative to ``n alpha`` (``L1.kkt_scale``).  ``G``: :func:`gram`'s arrays.

    ``r`` is a prediction of ``X_A w - y`` (the follower's predictors carry one, accurate to
    rounding) or empty.  A prediction saves the product ``X_A w`` of the start and nothing else:
    every point returned, and every residual it is judged by, has its ``r`` computed from it (so
    the errors of predictions never add up along the path), and when Newton from the prediction
    does not converge, it is run again from ``w`` with its own residuals, as without one.
    """
    n_lu = 0
    if r.size:
        w1, r1, phi1, res, n_lu = _newton(XA, y, easy, mixed, grad_pen, lev, w, r, False, lam, kind, p, fac, chord,
                                          newton_tol, G)
        if res <= newton_tol:
            return w1, r1, phi1, res, n_lu
    w1, r1, phi1, res, nl = _newton(XA, y, easy, mixed, grad_pen, lev, w, XA @ w - y, True, lam, kind, p, fac, chord,
                                    newton_tol, G)
    return w1, r1, phi1, res, n_lu + nl


@njit(cache=True)
def _newton(XA, y, easy, mixed, grad_pen, lev, w, r, exact, lam, kind, p, fac, chord, newton_tol, G):
    """:func:`project_r` from ``w`` with the residuals ``r``, computed from it (``exact``) or
    predicted: a predicted start judged converged is judged again on its own residuals, and one
    that no iterate improves on is returned with its own."""
    phi = phi_r(r, easy, mixed, lam, kind, p)
    F = XA.T @ phi + grad_pen
    res = max_abs(F) / lev
    if res <= newton_tol and not exact:  # at the start already: judged again on r computed from w
        r = XA @ w - y
        phi = phi_r(r, easy, mixed, lam, kind, p)
        F = XA.T @ phi + grad_pen
        res = max_abs(F) / lev
        exact = True
    n_lu = 0
    if chord and fac[0].shape[0] == w.size:
        for _ in range(6):
            if res <= newton_tol:
                return w, r, phi, res, n_lu
            w_new = w - fsolve(fac, F)
            r_new = XA @ w_new - y
            phi_new = phi_r(r_new, easy, mixed, lam, kind, p)
            F_new = XA.T @ phi_new + grad_pen
            res_new = max_abs(F_new) / lev
            if not res_new <= 0.5 * res:
                break
            w, r, phi, F, res = w_new, r_new, phi_new, F_new, res_new
            exact = True
    for _ in range(8):
        if res <= newton_tol:
            break
        D = curvature(r, easy, mixed, lam, kind, p)[1]
        LUn, permn, _, ok = lu_factor(gram(G, D))
        n_lu += 1
        if not ok:
            return w, r, phi, np.inf, n_lu
        step = lu_solve(LUn, permn, F)
        t = 1.0
        w_new, r_new, phi_new, F_new, res_new = w, r, phi, F, res
        for _ in range(12):
            w_new = w - t * step
            r_new = XA @ w_new - y
            phi_new = phi_r(r_new, easy, mixed, lam, kind, p)
            F_new = XA.T @ phi_new + grad_pen
            res_new = max_abs(F_new) / lev
            if not np.isfinite(res_new):
                res_new = np.inf
            if res_new < res:
                break
            t *= 0.5
        if not res_new < res:
            break
        w, r, phi, F, res = w_new, r_new, phi_new, F_new, res_new
        exact = True
    if not exact:  # no iterate accepted: the start, judged on its own residuals
        r = XA @ w - y
        phi = phi_r(r, easy, mixed, lam, kind, p)
        res = max_abs(XA.T @ phi + grad_pen) / lev
    return w, r, phi, res, n_lu




@njit(cache=True)
def tangent_d(XA: np.ndarray, D: np.ndarray, s: np.ndarray, w: np.ndarray, fac, sign_ref: float,
              use_ref: bool, G):
    """``w' = -J_w^{-1} J_lam`` from the weights ``(D, s)`` of the point (:func:`curvature`):
    ``(tangent, factor, sign of det J_w, ok, factorisations)``.

    With ``use_ref``, by iterative refinement on the factor ``fac`` of a nearby ``J_w`` (the
    reference, ``sign_ref`` the sign of its determinant): each iteration costs two products
    with ``X_A`` instead of the ``n k^2`` of forming ``J_w``.  It is accepted when the residual
    falls to ``REFINE_TOL`` of its scale and contracts by at least ``REFINE_RATE`` per
    iteration: then ``J_w = P (I + E)`` with ``rho(E) < 1`` along the way, so ``det J_w`` has the
    reference's sign (a fold, where it changes sign, cannot be refined across).  Otherwise
    ``J_w`` is formed (:func:`gram`, arrays ``G``) and factorised, and becomes the reference.
    """
    b = -(XA.T @ s)
    if use_ref and fac[0].shape[0] == w.size:
        x = fsolve(fac, b)
        prev = np.inf
        for _ in range(REFINE_MAX):
            Jx = XA.T @ (D * (XA @ x))
            res = b - Jx
            rn = max_abs(res)
            if not np.isfinite(rn):
                break
            if rn <= REFINE_TOL * max(max_abs(b), max_abs(Jx), 1e-300):
                return x, fac, sign_ref, True, 0
            if rn > REFINE_RATE * prev:
                break
            prev = rn
            x = x + fsolve(fac, res)
    LUn, permn, sign, ok = lu_factor(gram(G, D))
    if not ok:
        return b, plain(LUn, permn), 0.0, False, 1
    return lu_solve(LUn, permn, b), plain(LUn, permn), sign, True, 1


# ------------------------------------------------------------------ on the live rows (tests)
@njit(cache=True)
def residual(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, grad_pen: np.ndarray, w: np.ndarray,
             lam: float, kind, p: float) -> np.ndarray:
    """``F(w_A, lam)`` on the live rows (``grad_pen = n alpha sign_A``)."""
    easy, mixed = set_lists(cL)
    return XL.T @ phi_r(XL @ w - yL, easy, mixed, lam, kind, p) + grad_pen


@njit(cache=True)
def jacobians(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, w: np.ndarray, lam: float,
              kind, p: float) -> tuple[np.ndarray, np.ndarray]:
    """``(J_w, J_lam)`` on the live rows (module docstring)."""
    easy, mixed = set_lists(cL)
    _, D, s = curvature(XL @ w - yL, easy, mixed, lam, kind, p)
    return gram(gram_work(XL), D), XL.T @ s


@njit(cache=True)
def project(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, grad_pen: np.ndarray, lev: float,
            w: np.ndarray, lam: float, kind, p: float, LU: np.ndarray, perm: np.ndarray,
            chord: bool, newton_tol: float) -> tuple[np.ndarray, float, int]:
    """:func:`project_r` on the live rows from ``w`` with the plain factor ``(LU, perm)``:
    ``(point, relative residual, factorisations)``."""
    easy, mixed = set_lists(cL)
    out = project_r(XL, yL, easy, mixed, grad_pen, lev, w, np.empty(0), lam, kind, p, plain(LU, perm),
                    chord, newton_tol, gram_work(XL))
    return out[0], out[3], out[4]


@njit(cache=True)
def tangent(XL: np.ndarray, yL: np.ndarray, cL: np.ndarray, w: np.ndarray, t: float, kind, p: float,
            LU: np.ndarray, perm: np.ndarray, sign_ref: float, use_ref: bool):
    """:func:`tangent_d` on the live rows at ``(w, t)`` with the reference ``(LU, perm)``:
    ``(tangent, LU, perm, sign of det J_w, ok, factorisations)``."""
    easy, mixed = set_lists(cL)
    _, D, s = curvature(XL @ w - yL, easy, mixed, t, kind, p)
    x, fac, sign, ok, nf = tangent_d(XL, D, s, w, plain(LU, perm), sign_ref, use_ref, gram_work(XL))
    return x, fac[0], fac[1], sign, ok, nf


@njit(cache=True)
def _sets(X: np.ndarray, y: np.ndarray, active: np.ndarray, code: np.ndarray, sign: np.ndarray):
    """The arrays of the current sets with the live rows: ``(acols, icols, X_A, X_I, X_LA, y_L,
    code_L, sign_A)``."""
    acols = np.flatnonzero(active)
    icols = np.flatnonzero(np.logical_not(active))
    XA = np.ascontiguousarray(X[:, acols])
    XI = np.ascontiguousarray(X[:, icols])
    live = np.flatnonzero(code != HARD)
    XL = np.ascontiguousarray(XA[live])
    return acols, icols, XA, XI, XL, y[live].copy(), code[live].copy(), sign[acols].copy()
