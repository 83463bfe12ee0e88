"""Dense LU factorisation with partial pivoting, compiled (numba): for the compiled loops of
GAGA's followers and exact solvers, which solve small systems ``J x = b`` many times.

:func:`lu_factor` returns the factors, the sign of ``det J`` (a change of sign along a path
is a fold) and whether ``J`` is non-singular to working precision; :func:`lu_solve` solves
with them.  :func:`max_abs` is the max norm with NaN propagating (a NaN residual must never
pass a tolerance test).
"""

from __future__ import annotations

import numpy as np
from numba import njit


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
def max_abs(x: np.ndarray) -> float:
    """``max |x_i|``, NaN if any entry is NaN."""
    out = 0.0
    for i in range(x.size):
        a = abs(x[i])
        if not a <= out:  # NaN propagates
            out = a
    return out
