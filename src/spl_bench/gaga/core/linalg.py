"""Dense linear algebra of the path systems: LU with a minimum-norm fallback (GAGA appendix A.2).

``Factor`` is shared by the engine (``J_theta`` of eq. (5), Theorem 3) and the
systems' own exact solvers (the warm-started weighted-SVM active-set fit).  The SVM's KKT
factors, built on these, are in :mod:`spl_bench.gaga.svm.kkt`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray
from scipy.linalg.blas import dsymv, dsyrk
from scipy.linalg.lapack import (
    dgetrf,
    dgetrs,
    dgttrf,
    dgttrs,
    dorgqr,
    dpotrf,
    dpotri,
    dpotrs,
    dsytrd,
    dsytrd_lwork,
)

Array = NDArray[np.float64]


class Factor:
    """LU factorisation of ``J`` with a least-squares (pseudo-inverse) fallback when singular.

    GAGA appendix A.2.  ``singular`` tells whether the fallback is used, ``sign``
    is the sign of ``det J`` (0 when singular; for merged duplicates, that of the merged
    system, the one whose sign changes at a fold).  Solutions are never NaN.

    The common singular case is duplicated training rows (some benchmark data have them): two
    identical samples on the margin give ``J`` two equal rows and two equal columns,
    and only the sum of their unknowns is determined.  Such groups are merged (one
    row, one column), the reduced system is LU-factorised, and each group's sum is
    split equally: the minimum-norm solution, as the least-squares fallback would
    give, at the cost of an LU.  Anything else singular goes to LAPACK ``gelsy``.
    """

    def __init__(self, J: Array, hint: tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None = None) -> None:
        self.J = J
        self.lu: tuple[Array, NDArray[np.int32]] | None = None
        # (group of each index, group sizes, LU of the merged system, representative of each group)
        self.merged: tuple[NDArray[np.intp], Array, tuple[Array, NDArray[np.int32]], NDArray[np.intp]] | None = None
        self.sign = 0.0
        if J.shape[0] == 0:
            self.sign = 1.0
            return
        # groups expected to be equal (``hint``: the caller knows its duplicated samples):
        # if they hold, J is singular and the merged LU is all that is needed
        if hint is not None and _groups_hold(J, hint[0], hint[2]):
            lu_m = _lu(np.ascontiguousarray(J[np.ix_(hint[2], hint[2])]))
            if lu_m is not None:
                self.merged = (hint[0], hint[1], lu_m, hint[2])
                self.sign = _lu_sign(lu_m)
                return
        # LAPACK getrf directly: the scipy.linalg wrappers cost more than the factorisation
        # of the small systems of a path (tens of microseconds per call, many thousand calls)
        lu = _lu(J)
        if lu is not None:
            self.lu = lu
            self.sign = _lu_sign(lu)
        elif np.isfinite(J).all():
            self.merged = _merge_duplicates(J)
            if self.merged is not None:
                self.sign = _lu_sign(self.merged[2])

    @property
    def n(self) -> int:
        """Order of ``J``."""
        return int(self.J.shape[0])

    @property
    def singular(self) -> bool:
        return self.lu is None and self.J.shape[0] > 0

    @property
    def least_squares(self) -> bool:
        """Whether solves take the least-squares fallback (singular, and not only through
        merged duplicates)."""
        return self.singular and self.merged is None

    @property
    def groups(self) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None:
        """The merged groups, if any (usable as the ``hint`` of a factor of a matrix with the same groups)."""
        return None if self.merged is None else (self.merged[0], self.merged[1], self.merged[3])

    def solve(self, rhs: Array) -> Array:
        """``J^{-1} rhs`` (or the minimum-norm least-squares solution); ``rhs`` a vector or a
        matrix of right-hand sides."""
        if self.J.shape[0] == 0:
            return np.zeros(rhs.shape)
        if self.lu is not None:
            x, info = dgetrs(self.lu[0], self.lu[1], rhs)
            if info == 0 and np.isfinite(x).all():
                return x
        if not np.isfinite(rhs).all() or not np.isfinite(self.J).all():
            return np.zeros(rhs.shape)
        if self.merged is not None:
            group, size, lu, _ = self.merged
            if rhs.ndim == 1:
                summed = np.bincount(group, weights=rhs, minlength=size.size)
            else:
                summed = np.zeros((size.size, *rhs.shape[1:]))
                np.add.at(summed, group, rhs)
            wsize = size if rhs.ndim == 1 else size[:, None]
            u, info = dgetrs(lu[0], lu[1], summed / wsize)
            if info == 0 and np.isfinite(u).all():
                return u[group] / wsize[group]
        try:  # minimum-norm least squares by a complete orthogonal factorisation (LAPACK gelsy)
            x = sla.lstsq(self.J, rhs, cond=1e-12, lapack_driver="gelsy", check_finite=False)[0]
        except (ValueError, np.linalg.LinAlgError):
            x = np.zeros(rhs.shape)
        return np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)


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


class CholeskyFactor:
    """Cholesky factorisation of a symmetric positive definite ``J`` (LAPACK ``potrf``), with the
    interface of :class:`Factor` (``sign`` +1, never singular).  :meth:`attempt` gives ``None``
    when ``J`` is not positive definite."""

    singular = False
    least_squares = False
    groups = None
    sign = 1.0

    #: preconditioner applications after which the explicit inverse is formed (``potri``: about
    #: the cost of the factorisation; a ``symv`` then does the work of the two triangular solves,
    #: ``k^2`` multiply-adds, in one pass without their sequential dependence)
    INVERSE_AFTER = 20

    def __init__(self, J: Array, c: Array) -> None:
        self.J, self._c = J, c
        self._uses = 0
        self._inv: Array | None = None

    @classmethod
    def attempt(cls, J: Array) -> CholeskyFactor | None:
        c, info = dpotrf(J, lower=False, clean=False)
        if info != 0 or not np.isfinite(c).all():
            return None
        dg = np.abs(np.diag(c))
        if dg.size and not dg.min() > 1e-8 * dg.max():  # condition number above ~1e16
            return None
        return cls(J, c)

    @property
    def n(self) -> int:
        return int(self.J.shape[0])

    def solve(self, rhs: Array) -> Array:
        x, info = dpotrs(self._c, rhs, lower=False)
        if info != 0:  # pragma: no cover - potrs fails only on bad arguments
            raise np.linalg.LinAlgError(f"potrs info {info}")
        return x

    def precondition(self, r: Array) -> Array:
        """``J^{-1} r`` as a preconditioner (:func:`pcg`): by the explicit inverse once this factor
        has been applied ``INVERSE_AFTER`` times (not backward stable, which a preconditioner
        need not be; :meth:`solve` stays the triangular solves)."""
        self._uses += 1
        if self._inv is None and self._uses >= self.INVERSE_AFTER and r.ndim == 1:
            inv, info = dpotri(self._c, lower=False)
            if info == 0:
                self._inv = np.asfortranarray(np.triu(inv) + np.triu(inv, 1).T)
        if self._inv is not None and r.ndim == 1:
            return dsymv(1.0, self._inv, r)
        return self.solve(r)


class RefinedFactor:
    """Solves with ``J`` (one right-hand side at a time) by iterations on the factor of a nearby
    ``J_ref``, with ``J x`` from ``matvec`` (a product with the data, ``O(n k)``) instead of forming
    ``J`` (``O(n k^2)``) and factorising it (``O(k^3)``).

    ``J_ref`` positive definite (a :class:`CholeskyFactor`): conjugate gradients preconditioned by
    it (:func:`pcg`).  They are accepted when the residual reaches ``tol`` with every curvature
    ``p^T J p`` positive; ``J`` is then taken to be positive definite too (``sign`` +1: a negative
    eigenvalue of ``J``, generic right-hand sides, would either show up as a non-positive
    curvature or keep the residual from converging).

    Otherwise preconditioned Richardson: ``x_0 = J_ref^{-1} b``, ``x_{k+1} = x_k + J_ref^{-1} (b - J x_k)``.
    The error contracts by ``I - M``, ``M = J_ref^{-1} J``.  A solve is accepted if the residual
    reached ``tol`` within ``max_iter`` iterations, each reducing it by ``rate`` or better:
    then the spectral radius of ``I - M`` is taken to be below one, so every eigenvalue of ``M``
    has a positive real part, the segment ``J_ref ((1 - t) I + t M)`` is non-singular for ``t``
    in [0, 1], and symmetric ``J`` has the inertia of ``J_ref``: the same sign of ``det J``.

    Either way a path that approaches a fold (``J`` singular) is refused, and the caller
    factorises ``J`` afresh.  The tolerance is relative to ``max(|rhs|, max|J_ref| |x|)``,
    the scale of an LU solve's backward error, or for conjugate gradients to ``bound(x)``, the
    size of the terms summed in ``J x``, if larger: the products cannot measure a smaller residual
    (cancelling terms, as with the negative weights of the mixture SP).  A failed :meth:`solve` after an accepted
    :meth:`refine` (another right-hand side) falls back to ``full()``, the factor of ``J``
    itself, and keeps it.  ``jscale``: ``max |J_ref|`` if known.
    """

    singular = False
    least_squares = False
    groups = None

    def __init__(self, matvec: Callable[[Array], Array], ref: Factor | CholeskyFactor, full: Callable[[], Any],
                 jscale: float | None = None, tol: float = 1e-13, max_iter: int = 10, rate: float = 0.5,
                 bound: Callable[[Array], float] | None = None) -> None:
        self.matvec = matvec
        self.ref = ref
        self.full = full
        self.tol, self.max_iter, self.rate = tol, max_iter, rate
        self.sign = ref.sign
        self.iterations = 0  # products with J of the latest solve
        self._jscale = jscale
        self.bound = bound
        self._fallback: Any = None
        self._memo: tuple[Array, Array] | None = None

    @property
    def n(self) -> int:
        return self.ref.n

    def _tol_scale(self, rhs: Array, x: Array) -> float:
        """``max(|rhs|, max |J_ref| max |x|)``, what residuals are measured against."""
        if self._jscale is None:
            self._jscale = float(np.abs(self.ref.J).max(initial=0.0))
        return max(float(np.abs(rhs).max(initial=0.0)), self._jscale * float(np.abs(x).max(initial=0.0)))

    def refine(self, rhs: Array) -> tuple[Array, bool]:
        """``(x, accepted)``: the solution of ``J x = rhs`` and whether it was accepted (see the class)."""
        if isinstance(self.ref, CholeskyFactor):
            x0 = self.ref.solve(rhs)
            count = [0]

            def mv(u: Array) -> Array:
                count[0] += 1
                return self.matvec(u)

            x = pcg(mv, rhs, self.ref, tol=self.tol, max_iter=self.max_iter, scale=self._tol_scale(rhs, x0),
                    floor=self.bound, x0=x0)
            self.iterations = count[0]
            if x is None:
                return x0, False
            self._memo = (rhs.copy(), x)
            return x, True
        x = self.ref.solve(rhs)
        if not np.abs(rhs).max(initial=0.0) > 0:
            return x, True
        scale = self._tol_scale(rhs, x)
        prev = np.inf
        for it in range(self.max_iter + 1):
            r = rhs - self.matvec(x)
            res = float(np.abs(r).max()) / scale
            if not np.isfinite(res):
                break
            self.iterations = it
            if res <= self.tol:
                self._memo = (rhs.copy(), x)
                return x, True
            if res > self.rate * prev:
                break
            prev = res
            x = x + self.ref.solve(r)
        return x, False

    def solve(self, rhs: Array) -> Array:
        if self._fallback is not None:
            return self._fallback.solve(rhs)
        if self._memo is not None and np.array_equal(self._memo[0], rhs):
            return self._memo[1].copy()
        x, ok = self.refine(rhs)
        if ok:
            return x
        self._fallback = self.full()
        return self._fallback.solve(rhs)


def pcg(matvec: Callable[[Array], Array], rhs: Array, precond: Any, tol: float = 1e-13,
        max_iter: int = 200, scale: float | None = None,
        floor: Callable[[Array], float] | None = None, x0: Array | None = None) -> Array | None:
    """Conjugate gradients for ``J x = rhs`` with ``J`` symmetric positive definite, preconditioned
    by the factor of a nearby SPD matrix (anything with ``solve``).

    Converged when the residual is at most ``tol`` times ``scale`` (default ``max |rhs|``) or,
    if larger, ``floor(x_0)``: the size of the terms summed in ``matvec(x)`` at the first iterate,
    below which the products cannot measure a residual.  ``None`` if the residual stops
    decreasing (three iterations without a 10 % reduction) or ``max_iter`` iterations pass
    before that, or if a direction of non-positive curvature shows up (``J`` not positive
    definite).  ``x0``: the first iterate if already computed (default ``precond`` applied to ``rhs``).
    """
    apply = getattr(precond, "precondition", precond.solve)
    x = apply(rhs) if x0 is None else x0
    if not np.abs(rhs).max(initial=0.0) > 0:
        return x
    if scale is None:
        scale = float(np.abs(rhs).max())
    if floor is not None:
        scale = max(scale, floor(x))
    r = rhs - matvec(x)
    z = apply(r)
    p = z.copy()
    rz = float(r @ z)
    best, flat = np.inf, 0
    for _ in range(max_iter):
        res = float(np.abs(r).max())
        if res <= tol * scale:
            return x
        flat = flat + 1 if res > 0.9 * best else 0
        best = min(best, res)
        if flat >= 3:
            return None
        Jp = matvec(p)
        curv = float(p @ Jp)
        if not curv > 0 or not np.isfinite(curv):
            return None
        alpha = rz / curv
        x = x + alpha * p
        r = r - alpha * Jp
        z = apply(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    # the recursive residual drifts from the true one: accept only on the true residual
    return x if float(np.abs(rhs - matvec(x)).max()) <= tol * scale else None


def _lu_sign(lu: tuple[Array, NDArray[np.int32]]) -> float:
    """Sign of the determinant from ``getrf``'s factors (diagonal of ``U``, pivot parity)."""
    piv = lu[1]
    parity = int(np.count_nonzero(piv != np.arange(piv.size))) % 2
    return float(np.prod(np.sign(np.diag(lu[0])))) * (-1.0 if parity else 1.0)


def _lu(J: Array, tol: float = 1e-13) -> tuple[Array, NDArray[np.int32]] | None:
    """``getrf`` of ``J``, or ``None`` if a pivot of ``U`` is at most ``tol`` times the largest
    (``1e-13``: singular to working precision)."""
    lu, piv, info = dgetrf(J)
    if info < 0 or not np.isfinite(lu).all():
        return None
    adg = np.abs(np.diag(lu))
    if adg.min() > tol * max(adg.max(), 1e-300):
        return lu, piv
    return None


def _groups_hold(J: Array, group: NDArray[np.intp], keep: NDArray[np.intp]) -> bool:
    """Do the rows and the columns of ``J`` within each group agree (to 1e-12 of ``max |J|``)?"""
    if group.size != J.shape[0] or not np.isfinite(J).all():
        return False
    other = np.flatnonzero(keep[group] != np.arange(group.size))  # non-representative indices
    rep = keep[group[other]]
    tol = 1e-12 * float(np.abs(J).max())
    return bool(np.all(np.abs(J[other] - J[rep]) <= tol) and np.all(np.abs(J[:, other] - J[:, rep]) <= tol))


def _merge_duplicates(
    J: Array,
) -> tuple[NDArray[np.intp], Array, tuple[Array, NDArray[np.int32]], NDArray[np.intp]] | None:
    """Groups of equal rows that are also groups of equal columns, and the LU of the merged system.

    Rows (columns) are equal when they agree to 1e-12 of ``max |J|`` (kernel values of
    identical samples can differ in the last bit).  Returns ``(group of each index,
    group sizes, LU of J[keep, keep], keep)`` if that merged matrix is non-singular, else
    ``None``.
    """
    scale = float(np.abs(J).max())
    if not scale > 0:
        return None
    n = J.shape[0]
    key = np.round(J / (1e-12 * scale)).astype(np.int64)
    # rows grouped by a random integer hash (exact, order-independent sums modulo 2**64);
    # the groups are then checked entry by entry, rows and columns
    probe = np.random.default_rng(n).integers(1, 2**31, size=n)
    _, keep_r, group = np.unique((key * probe).sum(axis=1), return_index=True, return_inverse=True)
    group = np.asarray(group).ravel()
    size = np.bincount(group).astype(float)
    if keep_r.size == n or not _groups_hold(J, group, keep_r):
        return None
    lu = _lu(np.ascontiguousarray(J[np.ix_(keep_r, keep_r)]))
    if lu is None:
        return None
    return group, size, lu, keep_r


def groups_hint(labels: NDArray[np.intp]) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None:
    """A :class:`Factor` ``hint`` from known labels of the rows (= columns): equal labels are
    rows expected to be equal (duplicated samples).  ``None`` if all labels differ."""
    _, keep, group = np.unique(labels, return_index=True, return_inverse=True)
    if keep.size == labels.size:
        return None
    group = np.asarray(group).ravel()
    return group, np.bincount(group).astype(float), keep


#: SchurBlocks.complement: the point of a set configuration at which W is reduced to tridiagonal.
#: The second: the reduction costs about four LUs (``sytrd`` and ``orgqr`` about ``4 m^3 / 3`` flops
#: each, an LU ``2 m^3 / 3``) and an RK45 segment asks its configuration for many points (six
#: stages a step, the projections), while a configuration asked for a single point keeps its one LU
UNIFORM_REDUCE_AT = 2


def uniform_value(c: Array) -> float | None:
    """The one value of ``c`` (to ``1e-14`` of ``max |c|``: the linear SP-regularizer gives every
    mixed sample the same ``C^2 dv*/dell``), or ``None``."""
    if c.size == 0:
        return None
    return float(c[0]) if float(np.ptp(c)) <= 1e-14 * float(np.abs(c).max()) else None


class SchurBlocks:
    """The parts of a block system that stay fixed while the index sets do.

    ``J`` (rows and columns in the same order) has, for index arrays ``i1`` / ``i2``
    and a vector ``c`` that changes from point to point::

        J[i1, i1] = A,   J[i1, i2] = B,   J[i2, i1] = diag(c) C0,   J[i2, i2] = I + diag(c) D0

    so its Schur complement ``S = I + diag(c) W`` with ``W = D0 - C0 A^{-1} B`` needs
    only ``A``'s factorisation (kept) and one small LU per point.  ``A`` is factorised
    by :class:`Factor` (duplicated rows and columns merged: the minimum-norm solves);
    a :class:`Factor` of ``A`` made before can be passed instead of ``A``.
    """

    def __init__(self, A: Array | AnyFactor, B: Array, C0: Array, D0: Array, i1: NDArray[np.intp],
                 i2: NDArray[np.intp], hint: tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None = None) -> None:
        self.A = Factor(A, hint=hint) if isinstance(A, np.ndarray) else A
        self.i1, self.i2 = i1, i2
        self.B, self.C0, self.D0 = B, C0, D0
        self.AiB = self.A.solve(B) if B.shape[1] else np.zeros((self.A.n, 0))
        self.W = D0 - C0 @ self.AiB
        self.n = i1.size + i2.size
        self._n_uniform = 0
        self._tri: Tridiagonal | None | bool = None  # W = Q T Q^T, once asked for; False: not symmetric

    def complement(self, c: Array) -> Factor | ShiftedTridiagonal:
        """A factor of the Schur complement ``S = I + diag(c) W``.

        When ``c`` is one value for every index (the linear SP-regularizer: ``dv/dl = -1/lam``
        for every mixed sample) and ``W`` is symmetric (the SVM's is), ``S = Q (I + c T) Q^T``
        with ``W = Q T Q^T`` tridiagonal, reduced once per set configuration at its
        ``UNIFORM_REDUCE_AT``-th such point (``sytrd`` and ``orgqr`` cost about four LUs; an RK45
        segment asks for many points, a predictor-corrector one for a few): each point is then a
        tridiagonal LU and two products with ``Q``.  Else one LU per point.
        """
        if c.size >= 3 and self._tri is not False and uniform_value(c) is not None:
            self._n_uniform += 1
            if self._tri is None and self._n_uniform >= UNIFORM_REDUCE_AT:
                self._tri = Tridiagonal.make(self.W) or False
            if isinstance(self._tri, Tridiagonal):
                f = ShiftedTridiagonal(self._tri, float(c[0]))
                if not f.singular:
                    return f
        return Factor(np.eye(c.size) + c[:, None] * self.W)

    def uniform_rhs(self, r1: Array, u2: Array) -> tuple[Array, Array]:
        """The parts of right-hand sides ``(r1, c u2)`` that no point's ``c`` changes, for
        :meth:`uniform_solve`: ``y1 = A^{-1} r1`` and ``P = Q^T (u2 - C0 y1)`` (``W = Q T Q^T``;
        reduced blocks only)."""
        assert isinstance(self._tri, Tridiagonal)
        y1 = self.A.solve(r1)
        return y1, self._tri.Q.T @ (u2 - self.C0 @ y1)

    def uniform_solve(self, parts: tuple[Array, Array], S: ShiftedTridiagonal, c: float) -> Array:
        """``J^{-1} [r1; c u2]`` (rows and columns ``i1`` / ``i2``) at one ``c`` for every index, from
        :meth:`uniform_rhs`: ``x2 = Q (I + c T)^{-1} c P`` and ``x1 = y1 - A^{-1} B x2``; no
        refinement (the caller checks its own residual)."""
        y1, P = parts
        x2 = S.Q @ S.solve_reduced(c * P)
        out = np.empty((self.n, *P.shape[1:]))
        out[self.i1] = y1 - self.AiB @ x2
        out[self.i2] = x2
        return out

    @property
    def reduced(self) -> bool:
        """Whether ``W`` has been reduced to tridiagonal form (its points then cost ``O(|M|^2)``)."""
        return isinstance(self._tri, Tridiagonal)

    @property
    def usable(self) -> bool:
        """``A`` non-singular, or singular only through duplicated rows / columns."""
        return not self.A.singular or self.A.merged is not None


class SchurFactor:
    """:class:`Factor`'s interface for a system given as :class:`SchurBlocks` and ``c``.

    ``det J = det A det S`` (``i1`` / ``i2`` permute rows and columns alike).
    """

    def __init__(self, blocks: SchurBlocks, c: Array, refine: bool = True) -> None:
        self.b = blocks
        self.c = c
        self.refine = refine
        self.S = blocks.complement(c)
        self.sign = blocks.A.sign * self.S.sign
        self.n = blocks.n

    @property
    def singular(self) -> bool:
        return self.b.A.singular or self.S.singular

    @property
    def least_squares(self) -> bool:
        return self.b.A.least_squares or self.S.least_squares

    def _solve(self, r1: Array, r2: Array) -> tuple[Array, Array]:
        b = self.b
        c = self.c if r2.ndim == 1 else self.c[:, None]
        y1 = b.A.solve(r1)
        x2 = self.S.solve(r2 - c * (b.C0 @ y1))
        return y1 - b.AiB @ x2, x2

    def solve(self, rhs: Array) -> Array:
        """Block elimination, then one step of iterative refinement on the residual of
        ``J`` (the Schur complement loses a little accuracy when ``A`` is ill-conditioned),
        taken only if that residual exceeds ``1e-12`` of the right-hand side (a residual that
        small is already at the Newton tolerance that decides the path's accuracy;
        ``refine=False``: none, for a caller that refines on its own system).  ``rhs``: a vector
        or a matrix of right-hand sides."""
        b = self.b
        r1, r2 = rhs[b.i1], rhs[b.i2]
        x1, x2 = self._solve(r1, r2)
        if self.refine:
            c = self.c if rhs.ndim == 1 else self.c[:, None]
            e1 = r1 - b.A.J @ x1 - b.B @ x2
            e2 = r2 - x2 - c * (b.C0 @ x1 + b.D0 @ x2)
            big = 1e-12 * float(np.abs(rhs).max(initial=0.0))
            if float(np.abs(e1).max(initial=0.0)) > big or float(np.abs(e2).max(initial=0.0)) > big:
                d1, d2 = self._solve(e1, e2)
                x1, x2 = x1 + d1, x2 + d2
        out = np.empty(rhs.shape)
        out[b.i1] = x1
        out[b.i2] = x2
        return out


class RowScaled:
    """:class:`Factor`'s interface for ``diag(d) M`` given a factor of ``M`` (``d`` without zeros).

    ``matvec`` (``x -> diag(d) M x``, optional): one step of iterative refinement on its
    residual when that exceeds ``1e-12`` of the right-hand side (as :meth:`SchurFactor.solve`).
    """

    merged = None

    def __init__(self, inner: Any, d: Array, matvec: Callable[[Array], Array] | None = None) -> None:
        self.inner, self.d, self.matvec = inner, d, matvec
        self.sign = float(inner.sign) * float(np.prod(np.sign(d)))

    @property
    def n(self) -> int:
        return int(self.d.size)

    @property
    def singular(self) -> bool:
        return bool(self.inner.singular)

    @property
    def least_squares(self) -> bool:
        return bool(self.inner.least_squares)

    def _solve(self, rhs: Array) -> Array:
        return self.inner.solve(rhs / (self.d if rhs.ndim == 1 else self.d[:, None]))

    def solve(self, rhs: Array) -> Array:
        x = self._solve(rhs)
        if self.matvec is not None:
            e = rhs - self.matvec(x)
            if float(np.abs(e).max(initial=0.0)) > 1e-12 * float(np.abs(rhs).max(initial=0.0)):
                x = x + self._solve(e)
        return x


class Tridiagonal:
    """``W = Q T Q^T`` for a symmetric ``W``: ``T`` tridiagonal (diagonal ``d``, off-diagonal ``e``),
    ``Q`` orthogonal (LAPACK ``sytrd``, ``Q`` formed by ``orgqr`` from its reflectors)."""

    def __init__(self, d: Array, e: Array, Q: Array) -> None:
        self.d, self.e, self.Q = d, e, Q

    @classmethod
    def make(cls, W: Array) -> Tridiagonal | None:
        """The reduction, or ``None`` if ``W`` is not symmetric to ``1e-10`` of ``max |W|`` or
        LAPACK fails."""
        m = W.shape[0]
        scale = float(np.abs(W).max(initial=0.0))
        if m < 3 or not np.isfinite(scale) or float(np.abs(W - W.T).max()) > 1e-10 * max(scale, 1e-300):
            return None
        lwork = int(dsytrd_lwork(m, lower=1)[0])
        red, d, e, tau, info = dsytrd(0.5 * (W + W.T), lower=1, lwork=max(lwork, 1))
        if info != 0:
            return None
        # reflectors below the subdiagonal: those of a QR of red[1:, :m-1] (Q = diag(1, Q1)),
        # formed by orgqr, which knows it starts from the identity and skips its zero blocks
        # (ormqr applied to the identity does not)
        Q = np.eye(m)
        Q1, _, info = dorgqr(red[1:, : m - 1], tau[: m - 1], lwork=max(64 * m, 1))
        if info != 0 or not np.isfinite(Q1).all():
            return None
        Q[1:, 1:] = Q1
        return cls(d, e, Q)


class ShiftedTridiagonal:
    """:class:`Factor`'s interface for ``I + c W`` with ``W = Q T Q^T`` (:class:`Tridiagonal`) and
    ``c`` a scalar: a tridiagonal LU of ``I + c T`` (LAPACK ``gttrf``); ``det`` has its sign,
    solves are ``Q (I + c T)^{-1} Q^T r``.  ``singular`` when a pivot falls below ``1e-13`` of the
    largest (the caller then takes a dense LU with the least-squares fallback)."""

    least_squares = False
    merged = None

    def __init__(self, tri: Tridiagonal, c: float) -> None:
        self.Q = tri.Q
        off = c * tri.e
        self.lu = dgttrf(off, 1.0 + c * tri.d, off)
        dl, du_diag, du, du2, ipiv, info = self.lu
        ad = np.abs(du_diag)
        self.singular = bool(info != 0 or not np.isfinite(du_diag).all() or ad.min() <= 1e-13 * ad.max())
        swaps = int(np.count_nonzero(ipiv != np.arange(1, ipiv.size + 1)))
        self.sign = 0.0 if self.singular else float(np.prod(np.sign(du_diag))) * (-1.0 if swaps % 2 else 1.0)

    @property
    def n(self) -> int:
        return int(self.Q.shape[0])

    def solve(self, rhs: Array) -> Array:
        return self.Q @ self.solve_reduced(self.Q.T @ rhs)

    def solve_reduced(self, t: Array) -> Array:
        """``(I + c T)^{-1} t`` (a vector or a matrix)."""
        if t.ndim == 2 and t.shape[1] == 0:  # LAPACK dgttrs corrupts the heap with no columns
            return np.zeros(t.shape)
        dl, d, du, du2, ipiv, _ = self.lu
        x, info = dgttrs(dl, d, du, du2, ipiv, t if t.ndim == 2 else t[:, None])
        return x if t.ndim == 2 else x[:, 0]


def solve_linear(J: Array, rhs: Array) -> tuple[Array, bool, float]:
    """Solve ``J x = rhs`` by LU; fall back to least squares (pseudo-inverse) if singular.

    GAGA appendix A.2.  Returns ``(x, singular, sign of det J)``; never NaN.
    """
    f = Factor(J)
    return f.solve(rhs), f.singular, f.sign


def det_sign(J: Array) -> float:
    if J.shape[0] == 0:
        return 1.0
    s, _ = np.linalg.slogdet(J)
    return float(s)


class AnyFactor(Protocol):
    """What a system's ``factor`` returns (all have ``n``, ``sign``, ``singular``, ``solve``): the
    factors here (:class:`Factor`, :class:`SchurFactor`, :class:`RefinedFactor`,
    :class:`CholeskyFactor`, :class:`RowScaled`) and the SVM's KKT factors of
    :mod:`spl_bench.gaga.svm.kkt` (``KKTUpdate``, ``MergedKKT``, ``LowRankSVMFactor``,
    ``MergedLowRankSVMFactor``).  A type for annotations only."""

    n: int
    sign: float
    singular: bool

    def solve(self, rhs: Array) -> Array: ...
