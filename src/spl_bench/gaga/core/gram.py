"""Products with a design matrix: ``X^T diag(D) X`` (:func:`weighted_gram`) and a mostly constant
``X`` kept as a rank-one term plus a sparse one (:class:`RankOnePlusSparse`, whose sparse Gram
product is compiled in :mod:`~spl_bench.gaga.core.sparse_gram_nb`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.blas import dsyrk

Array = NDArray[np.float64]


class RankOnePlusSparse:
    """Products with ``X = 1 m^T + S`` (``S`` sparse) without the dense ``X``: ``X x = S x + (m^T x) 1``
    and ``X^T u = S^T u + (1^T u) m``.  Standardised binary or count features (most entries
    equal their column's most frequent value ``m_j``) make ``S`` sparse, and a product then
    reads ``nnz(S)`` entries instead of ``n k``.  The results equal the dense products to
    rounding.

    Supports ``X @ x`` and ``A @ X`` (``x``, ``A`` 1-D or 2-D), ``X.T`` (the same for ``X^T``),
    ``abs(X)`` (``|X| = 1 |m|^T + (|m + S| - |m|)`` on the pattern of ``S``: exact) and ``shape``;
    :meth:`split` builds it from a dense ``X`` and :meth:`rows` takes a subset of rows.
    """

    __array_ufunc__ = None  # ``ndarray @ self`` defers to __rmatmul__

    def __init__(self, S: Any, m: Array, St: Any = None) -> None:
        self.S = S.tocsr()
        self.S.sort_indices()
        self.St = self.S.T.tocsr() if St is None else St
        self.m = m
        self.shape = self.S.shape

    @classmethod
    def split(cls, X: Array, max_density: float = 0.25) -> RankOnePlusSparse | None:
        """``X`` as ``1 m^T + S`` with ``m_j`` the most frequent value of column ``j``; ``None`` when
        more than ``max_density`` of the entries of ``S`` are non-zero."""
        import scipy.sparse as sps

        n = X.shape[0]
        if n == 0:
            return None
        srt = np.sort(X, axis=0)
        # the longest run of equal values in each sorted column is its most frequent value
        new = np.vstack([np.ones((1, X.shape[1]), dtype=bool), srt[1:] != srt[:-1]])
        m = np.empty(X.shape[1])
        for j in range(X.shape[1]):
            starts = np.flatnonzero(new[:, j])
            lengths = np.diff(np.append(starts, n))
            m[j] = srt[starts[int(np.argmax(lengths))], j]
        S = X - m
        if np.count_nonzero(S) > max_density * S.size:
            return None
        return cls(sps.csr_matrix(S), m)

    def rows(self, idx: NDArray[np.intp]) -> RankOnePlusSparse:
        return RankOnePlusSparse(self.S[idx], self.m)

    @property
    def T(self) -> _TransposedRankOne:
        return _TransposedRankOne(self)

    def __abs__(self) -> RankOnePlusSparse:
        S = self.S.copy()
        cols = S.indices
        S.data = np.abs(self.m[cols] + S.data) - np.abs(self.m[cols])
        return RankOnePlusSparse(S, np.abs(self.m))

    def weighted_gram(self, D: Array) -> Array:
        """``X^T diag(D) X = S^T diag(D) S + m u^T + u m^T + (1^T D) m m^T`` with ``u = S^T D``: the
        sparse part by :func:`~spl_bench.gaga.core.sparse_gram_nb.sparse_weighted_gram` (the products
        of the non-zeros only), the rest rank-one terms.  Equals :func:`weighted_gram` of the dense
        ``X`` to rounding."""
        from spl_bench.gaga.core.sparse_gram_nb import sparse_weighted_gram

        S, St = self.S, self.St
        D = np.ascontiguousarray(D, dtype=float)
        G = sparse_weighted_gram(S.indptr, S.indices, S.data, St.indptr, St.indices, St.data, D, S.shape[1])
        T = np.outer(self.m, St @ D + (0.5 * D.sum()) * self.m)
        T += T.T  # (one symmetric term: G stays exactly symmetric)
        G += T
        return G

    def __matmul__(self, x: Array) -> Array:  # X x
        mx = self.m @ x
        return self.S @ x + (mx if x.ndim == 1 else mx[None, :])

    def __rmatmul__(self, A: Array) -> Array:  # A X = (X^T A^T)^T
        return (self.T @ np.asarray(A).T).T

    def _t_matmul(self, u: Array) -> Array:  # X^T u
        su = u.sum(axis=0)
        return self.St @ u + (self.m * su if u.ndim == 1 else np.outer(self.m, su))


class _TransposedRankOne:
    """``X^T`` of a :class:`RankOnePlusSparse` ``X`` (products only)."""

    __array_ufunc__ = None

    def __init__(self, X: RankOnePlusSparse) -> None:
        self.X = X
        self.shape = X.shape[::-1]

    def __matmul__(self, u: Array) -> Array:
        return self.X._t_matmul(u)

    def __rmatmul__(self, A: Array) -> Array:  # A X^T = (X A^T)^T
        return (self.X @ np.asarray(A).T).T


def weighted_gram(X: Array, D: Array) -> Array:
    """``X^T diag(D) X`` by symmetric rank-k updates (BLAS ``syrk``: half the products of a
    general matrix product): ``(sqrt(D+) X)^T (sqrt(D+) X) - (sqrt(D-) X)^T (sqrt(D-) X)`` over
    the rows with positive and negative weights, the upper triangle mirrored to the lower."""
    k = X.shape[1]
    out = np.zeros((k, k), order="F")
    for rows, sign in ((D > 0, 1.0), (D < 0, -1.0)):
        if not rows.any():
            continue
        R = X[rows] * np.sqrt(sign * D[rows])[:, None]  # C-ordered: R.T is Fortran-ordered, no copy
        out = dsyrk(sign, R.T, beta=1.0, c=out, trans=0, lower=0, overwrite_c=1)
    out += np.triu(out, 1).T
    return np.ascontiguousarray(out)
