"""Compiled ``S^T diag(D) S`` for a sparse ``S`` (:meth:`spl_bench.gaga.core.gram.RankOnePlusSparse.weighted_gram`).

Column ``j`` of the upper triangle is ``sum_i D_i S_ij S_i,[j:]`` over the rows ``i`` with an
entry in column ``j``: the rows' entries from column ``j`` on are added into one dense buffer
of length ``k``, which stays in the cache, instead of scattering every product into the
``k x k`` result.  A row with ``m`` non-zeros costs ``m (m + 1) / 2`` products, so a share
``rho`` of non-zeros costs about ``n (rho k)^2 / 2``, against ``n k^2 / 2`` multiply-adds for
the dense rank-k update.

Compiled with numba (``cache=True``: the first call on a machine compiles, later processes
load the cache).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def sparse_weighted_gram(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, col_ptr: np.ndarray,
                         col_rows: np.ndarray, col_data: np.ndarray, D: np.ndarray, k: int) -> np.ndarray:
    """``S^T diag(D) S`` (``k x k``, symmetric) from the CSR arrays of ``S`` (sorted column
    indices within each row) and of ``S^T`` (``col_*``: the rows and values of each column)."""
    G = np.empty((k, k))
    g = np.zeros(k)
    for j in range(k):
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_rows[p]
            w = D[i] * col_data[p]
            if w == 0.0:
                continue
            # the entries of row i in columns >= j (binary search on its sorted indices)
            lo, hi = indptr[i], indptr[i + 1]
            while lo < hi:
                mid = (lo + hi) // 2
                if indices[mid] < j:
                    lo = mid + 1
                else:
                    hi = mid
            for q in range(lo, indptr[i + 1]):
                g[indices[q]] += w * data[q]
        for t in range(j, k):
            G[j, t] = g[t]
            G[t, j] = g[t]
            g[t] = 0.0
    return G
