"""Compiled v-weighted lasso fit of the ACS steps (``EngineOptions.method="compiled"``).

The active-set method of :func:`spl_bench.gaga.glm.inner.weighted_lasso` (the reference, in
NumPy), with the loop compiled (numba, ``cache=True``): it solves

    argmin_w 1/2 sum_i v_i (y_i - x_i^T w)^2 + lev ||w||_1

warm-started from ``w0``: the equality system on the active set with fixed signs, a step back
to the first coefficient that would change sign (dropped), the most violating inactive
coordinate added, until the subgradient conditions hold to 1e-12.  The Gram matrix
``X^T V X`` is formed only on the columns that are ever active.  A warm start after a jump
runs a hundred or more ACS steps, each one such fit; in NumPy the per-call overhead of the
small solves was most of their time.

The systems are solved by :func:`spl_bench.gaga.core.lu_nb.lu_factor`; a system singular to
working precision ends the fit without a result, as a failed solve ends the reference's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from spl_bench.gaga.core.lu_nb import lu_factor, lu_solve

#: the active coordinates' subgradient conditions on the result, relative to ``lev`` (also
#: :data:`spl_bench.gaga.glm.inner.ACTIVE_TOL`; a global of the compiled function, so it is set here)
ACTIVE_TOL = 1e-7


@njit(cache=True)
def _extend_gram(X: np.ndarray, v: np.ndarray, G: np.ndarray, have: np.ndarray, idx: np.ndarray) -> None:
    """Fill the rows and columns of ``G = X^T V X`` of the columns in ``idx`` not yet there."""
    new = idx[np.logical_not(have[idx])]
    if new.size == 0:
        return
    known = np.flatnonzero(have)
    XVn = np.ascontiguousarray(X[:, new]) * v.reshape(-1, 1)
    blk = np.ascontiguousarray(X[:, new]).T @ XVn
    for a in range(new.size):
        for b in range(new.size):
            G[new[a], new[b]] = blk[a, b]
    if known.size:
        kb = np.ascontiguousarray(X[:, known]).T @ XVn
        for a in range(known.size):
            for b in range(new.size):
                G[known[a], new[b]] = kb[a, b]
                G[new[b], known[a]] = kb[a, b]
    have[new] = True


@njit(cache=True)
def weighted_lasso(X: np.ndarray, y: np.ndarray, v: np.ndarray, lev: float, w0: np.ndarray,
                   max_iter: int) -> tuple[np.ndarray, bool]:
    """``(w, converged)``: the exact v-weighted lasso fit (module docstring)."""
    n, d = X.shape
    w = w0.copy()
    vy = v * y
    c0 = X.T @ vy
    G = np.empty((d, d))
    have = np.zeros(d, dtype=np.bool_)
    active = w != 0
    sign = np.sign(w)
    for n_round in range(max_iter):
        # equality solve on the active set, dropping coordinates that would change sign
        for _ in range(d + 1):
            idx = np.flatnonzero(active)
            m = idx.size
            if m == 0:
                break
            _extend_gram(X, v, G, have, idx)
            A = np.empty((m, m))
            rhs = np.empty(m)
            for a in range(m):
                rhs[a] = c0[idx[a]] - lev * sign[idx[a]]
                for b in range(m):
                    A[a, b] = G[idx[a], idx[b]]
            LU, perm, _, ok = lu_factor(A)
            if not ok:
                return w, False
            target = lu_solve(LU, perm, rhs)
            if not np.all(np.isfinite(target)):
                return w, False
            cur = w[idx]
            k, tk = -1, np.inf
            for a in range(m):
                if np.sign(target[a]) != sign[idx[a]]:
                    ta = cur[a] / (cur[a] - target[a]) if cur[a] != target[a] else np.inf
                    if ta < tk or k < 0:
                        k, tk = a, ta
            if k < 0:
                w[idx] = target
                break
            tk = min(max(tk, 0.0), 1.0)
            w[idx] = cur + tk * (target - cur)
            w[idx[k]] = 0.0
            active[idx[k]] = False
            sign[idx[k]] = 0.0
        corr = X.T @ (vy - v * (X @ w))  # X^T V r
        best, add_one = -np.inf, -1
        n_add = 0
        for j in range(d):
            if not active[j] and abs(corr[j]) - lev > 1e-12 * lev:
                n_add += 1
                if abs(corr[j]) - lev > best:
                    best, add_one = abs(corr[j]) - lev, j
        if d == 0 or n_add == 0:
            # the active coordinates' conditions too (a singular system solves into a point
            # that does not satisfy them; inner.ACTIVE_TOL)
            for j in range(d):
                if active[j] and w[j] != 0 and abs(corr[j] - lev * sign[j]) > ACTIVE_TOL * lev:
                    return w, False
            return w, True
        if n_round > 3:  # after a few rounds add one coordinate at a time (no cycling)
            active[add_one] = True
            sign[add_one] = np.sign(corr[add_one])
        else:
            for j in range(d):
                if not active[j] and abs(corr[j]) - lev > 1e-12 * lev:
                    active[j] = True
                    sign[j] = np.sign(corr[j])
    return w, False
