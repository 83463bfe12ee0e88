"""Dense linear algebra of the path systems: LU with a minimum-norm fallback (GAGA appendix A.2).

``Factor`` is shared by the engine (``J_theta`` of eq. (5), Theorem 3) and the
systems' own exact solvers (the warm-started weighted-SVM active-set fit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
    dtrtrs,
)

Array = NDArray[np.float64]


class Factor:
    """LU factorisation of ``J`` with a least-squares (pseudo-inverse) fallback when singular.

    GAGA appendix A.2.  ``singular`` tells whether the fallback is used, ``sign``
    is the sign of ``det J`` (0 when singular; for merged duplicates, that of the merged
    system, the one whose sign changes at a fold).  Solutions are never NaN.

    The common singular case is duplicated training rows (mfeat-pixel has some): two
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
    and ``X^T u = S^T u + (1^T u) m``.  Standardised binary or count features (hiva_agnostic:
    8 % of the entries differ from their column's most frequent value) make ``S`` sparse, and a
    product then reads a tenth of the memory.  The results equal the dense products to rounding.

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
        sparse part by :func:`~spl_bench.gaga.sparse_gram_nb.sparse_weighted_gram` (the products
        of the non-zeros only), the rest rank-one terms.  Equals :func:`weighted_gram` of the dense
        ``X`` to rounding."""
        from spl_bench.gaga.sparse_gram_nb import sparse_weighted_gram

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
    #: the cost of the factorisation; a ``symv`` then costs a fifth of the two triangular solves)
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
#: The second: the reduction costs three to four LUs and RK45 asks nearly every configuration for
#: ten points or more, while a configuration asked for a single point keeps its one LU (docs/gaga.md)
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

    def __init__(self, A: Array | Factor | KKTUpdate | MergedKKT, B: Array, C0: Array, D0: Array, i1: NDArray[np.intp],
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
        ``UNIFORM_REDUCE_AT``-th such point (``sytrd`` and ``orgqr`` cost three to four LUs at
        order 400; an RK45 segment asks for ten or more points, a predictor-corrector one for a
        few): each point is then a tridiagonal LU and two products with ``Q``.  Else one LU
        per point.
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
        taken only if that residual exceeds ``1e-12`` of the right-hand side (on mfeat the
        step changed the solution by at most 3e-12 relative; ``refine=False``: none, for a
        caller that refines on its own system).  ``rhs``: a vector or a matrix of right-hand
        sides."""
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
        # formed by orgqr (about half the time of applying them to the identity with ormqr)
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


def kkt_matrix(Q: Array, y: Array, z: NDArray[np.intp], s: float, Qzz: Array | None = None,
               shift: Array | None = None) -> Array:
    """``[[s (Q[z, z] + diag(shift)), s y_z], [y_z^T, 0]]``: the margin block of the SVM
    (``s = -1``, the path's ``J``), the matrix of the weighted dual's equality system (``s = 1``)
    and, with ``shift`` (``1 / c`` on the mixed samples, 0 on the margin), the symmetric form of
    the path's whole ``J`` (:meth:`spl_bench.gaga.svm_system.SVMSystem.factor`).  ``Qzz``: the
    block ``Q[z, z]`` if the caller has it."""
    k = z.size
    M = np.empty((k + 1, k + 1))
    M[:k, :k] = Q[np.ix_(z, z)] if Qzz is None else Qzz
    if shift is not None:
        M[np.arange(k), np.arange(k)] += shift
    M[:k, k] = y[z]
    if s != 1.0:
        M[:k] *= s
    M[k, :k] = y[z]
    M[k, k] = 0.0
    return M


class _KKTSystem:
    """``kkt_matrix(Q, y, z, s)`` given by its parts; the matrix itself is built on first use."""

    def __init__(self, Q: Array, y: Array, z: NDArray[np.intp], s: float, shift: Array | None = None) -> None:
        self.Q, self.y, self.z, self.s, self.shift = Q, y, z, s, shift
        self._J: Array | None = None

    @property
    def n(self) -> int:
        return int(self.z.size + 1)

    @property
    def J(self) -> Array:
        if self._J is None:
            self._J = kkt_matrix(self.Q, self.y, self.z, self.s, shift=self.shift)
        return self._J


class KKTBorder:
    """The bordering of :class:`KKTUpdate`: positions of the kept, added and dropped indices and of
    the kept ones whose shift changed (``dpos0`` in ``z0``, by ``delta``), and ``V``, ``W``, ``D``."""

    def __init__(self, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array, s: float,
                 shift: Array | None, pos: tuple, V: Array, W: Array, D: Array) -> None:
        self.z0, self.z, self.Q, self.y, self.s, self.shift = z0, z, Q, y, s, shift
        self.kpos, self.kpos0, self.apos, self.rpos, self.dpos0, self.delta = pos
        self.V, self.W, self.D = V, W, D
        self.q = int(W.shape[0])

    @classmethod
    def make(cls, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array, s: float,
             shift0: Array | None, shift: Array | None, max_changes: int) -> KKTBorder | None:
        """``None`` when the sets differ in more than ``max_changes`` indices (or shifts)."""
        in0 = np.isin(z, z0, assume_unique=True)
        keep0 = np.isin(z0, z, assume_unique=True)
        apos, kpos = np.flatnonzero(~in0), np.flatnonzero(in0)
        rpos = np.flatnonzero(~keep0)
        order0 = np.argsort(z0, kind="stable")
        kpos0 = order0[np.searchsorted(z0, z[kpos], sorter=order0)]  # z0[kpos0] == z[kpos], any order
        dpos0 = np.zeros(0, dtype=np.intp)
        delta = np.zeros(0)
        if shift is not None or shift0 is not None:
            h = np.zeros(z.size) if shift is None else shift
            h0 = np.zeros(z0.size) if shift0 is None else shift0
            delta = h[kpos] - h0[kpos0]
            changed = np.flatnonzero(delta != 0.0)
            dpos0, delta = kpos0[changed], delta[changed]
        na, nr, nd = apos.size, rpos.size, dpos0.size
        q = na + nr + nd
        if q > max_changes:
            return None
        n0 = z0.size + 1
        ad = z[apos]
        V = np.zeros((n0, q))
        V[:-1, :na] = s * Q[np.ix_(z0, ad)]
        V[-1, :na] = y[ad]
        V[rpos, na + np.arange(nr)] = 1.0
        V[dpos0, na + nr + np.arange(nd)] = s * delta
        W = np.zeros((q, n0))
        W[:na, :-1] = s * Q[np.ix_(ad, z0)]
        W[:na, -1] = s * y[ad]
        W[na + np.arange(nr), rpos] = 1.0
        W[na + nr + np.arange(nd), dpos0] = -1.0
        D = np.zeros((q, q))
        D[:na, :na] = s * Q[np.ix_(ad, ad)]
        if shift is not None:
            D[np.arange(na), np.arange(na)] += s * shift[apos]
        D[na + nr + np.arange(nd), na + nr + np.arange(nd)] = 1.0
        return cls(z0, z, Q, y, s, shift, (kpos, kpos0, apos, rpos, dpos0, delta), V, W, D)


class KKTUpdate(_KKTSystem):
    r""":class:`Factor`'s interface for ``kkt_matrix(Q, y, z, s, shift=h)`` from a factorisation of
    the matrix of another index set ``z0`` and shift ``h0`` (bordering, as in active-set QP
    solvers).

    With ``R = z0 \ z`` dropped, ``Ad = z \ z0`` added and ``Dl`` the kept indices whose shift
    changed (by ``delta``), the system of ``z`` is that of ``z0`` bordered by the rows and columns
    of ``Ad``, by unit rows and columns that pin the unknowns of ``R`` to 0 (their equations then
    hold with a free multiplier) and by a copy ``u = x[Dl]`` of the changed unknowns::

        [M0   V] [x0]   [r0]        V = [M[z0+b, Ad] | e_R | s e_Dl diag(delta)],
        [W    D] [ w] = [rq],       W = [M[Ad, z0+b]; e_R^T; -e_Dl^T],
                                    D = blockdiag(M[Ad, Ad], 0, I),

    solved with the Schur complement ``S = D - W M0^{-1} V`` (order ``|Ad| + |R| + |Dl|``): one
    solve with ``M0``'s factors per right-hand side, ``|Ad| + |R| + |Dl|`` solves once.  An index
    set changes by one or two indices per set change of the SVM, where a new LU costs the
    cube of ``|z|``.  ``det M = (-1)^{|R|} det M0 det S`` (the copies add a unit block).
    ``None`` from :meth:`make` when ``z0``'s factor is singular, the sets differ in more than
    ``max_changes`` indices or a pivot of ``S`` is at most ``pivot_tol`` of the largest.
    """

    max_changes = 24

    def __init__(self, root: Any, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array,
                 s: float, parts: tuple, shift: Array | None = None) -> None:
        super().__init__(Q, y, z, s, shift)
        self.root, self.z0 = root, z0
        (self.kpos, self.kpos0, self.apos, self.rpos, self.MiV, self.W, self.S_lu) = parts
        self.sign = root.sign * _lu_sign(self.S_lu) * (-1.0 if self.rpos.size % 2 else 1.0)
        self.merged = None

    @classmethod
    def make(cls, root: Any, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array,
             s: float, shift0: Array | None = None, shift: Array | None = None,
             max_changes: int | None = None, pivot_tol: float = 1e-13) -> KKTUpdate | None:
        """``root``: a factor of the matrix of ``z0`` (shift ``shift0``) with ``solve`` (vector or
        matrix), ``sign`` and ``singular``."""
        if root.singular:
            return None
        b = KKTBorder.make(z0, z, Q, y, s, shift0, shift,
                           cls.max_changes if max_changes is None else max_changes)
        if b is None:
            return None
        return cls.finish(root, b, root.solve(b.V) if b.q else np.zeros((z0.size + 1, 0)), b.D, pivot_tol)

    @classmethod
    def finish(cls, root: Any, b: KKTBorder, MiV: Array, D: Array, pivot_tol: float = 1e-13,
               shift: Array | None = None) -> KKTUpdate | None:
        """The update from its border ``b`` and ``MiV = M0^{-1} V`` (and ``D``, the border's or a
        rescaled one, with ``shift`` the new matrix's shift if not the border's); ``None`` when a
        pivot of ``S`` is at most ``pivot_tol`` of the largest."""
        S = D - b.W @ MiV
        S_lu = _lu(S, pivot_tol) if S.size else (np.zeros((0, 0)), np.zeros(0, dtype=np.int32))
        if S_lu is None or not np.isfinite(MiV).all():
            return None
        return cls(root, b.z0, b.z, b.Q, b.y, b.s, (b.kpos, b.kpos0, b.apos, b.rpos, MiV, b.W, S_lu),
                   b.shift if shift is None else shift)

    @property
    def singular(self) -> bool:
        return False

    @property
    def least_squares(self) -> bool:
        return False

    def solve(self, rhs: Array) -> Array:
        n0, q = self.z0.size + 1, self.W.shape[0]
        tail = rhs.shape[1:]
        r0 = np.zeros((n0, *tail))
        r0[self.kpos0] = rhs[self.kpos]
        r0[-1] = rhs[-1]
        y0 = self.root.solve(r0)
        rq = np.zeros((q, *tail))
        rq[:self.apos.size] = rhs[self.apos]
        w = rq - self.W @ y0
        if q:
            w, info = dgetrs(self.S_lu[0], self.S_lu[1], w)
            if info != 0:  # pragma: no cover - LAPACK argument error
                return Factor(self.J).solve(rhs)
        x0 = y0 - self.MiV @ w
        out = np.empty(rhs.shape)
        out[self.kpos] = x0[self.kpos0]
        out[self.apos] = w[:self.apos.size]
        out[-1] = x0[-1]
        if not np.isfinite(out).all():
            return Factor(self.J).solve(rhs)
        return out


class MergedKKT(_KKTSystem):
    """:class:`Factor`'s interface for ``kkt_matrix(Q, y, z, s)`` when ``z`` holds duplicated
    samples (equal rows and columns of ``Q``), from a factor of the matrix of their
    representatives: each group's unknowns get an equal share of the group's value, the
    minimum-norm solution, as :class:`Factor`'s merged branch gives."""

    def __init__(self, inner: Factor | KKTUpdate, group: NDArray[np.intp], Q: Array, y: Array,
                 z: NDArray[np.intp], s: float) -> None:
        super().__init__(Q, y, z, s)
        self.inner = inner
        self.group = np.append(group, inner.n - 1)  # the row of b is its own group
        self.size = np.bincount(self.group, minlength=inner.n).astype(float)
        self.sign = inner.sign

    @property
    def singular(self) -> bool:
        return self.inner.n < self.n or self.inner.singular

    @property
    def least_squares(self) -> bool:
        return self.inner.least_squares

    @property
    def merged(self) -> tuple[NDArray[np.intp], Array] | None:
        """The groups, if the system is singular only through them (the representatives' matrix
        is not: else its least-squares fallback decides, and ``None``)."""
        return (self.group, self.size) if self.inner.n < self.n and not self.inner.singular else None

    @property
    def updated(self) -> bool:
        """Whether the representatives' factor is an update (:class:`KKTUpdate`)."""
        return isinstance(self.inner, KKTUpdate)

    def solve(self, rhs: Array) -> Array:
        wsize = self.size if rhs.ndim == 1 else self.size[:, None]
        summed = np.zeros((self.inner.n, *rhs.shape[1:]))
        np.add.at(summed, self.group, rhs)
        u = self.inner.solve(summed / wsize)
        return u[self.group] / wsize[self.group]


def kkt_factor(Q: Array, y: Array, z: NDArray[np.intp], s: float, canon: NDArray[np.intp] | None,
               root: tuple[NDArray[np.intp], Factor] | None, Qzz: Array | None = None,
               ) -> tuple[Factor | KKTUpdate | MergedKKT, tuple[NDArray[np.intp], Factor] | None]:
    """A factor of ``kkt_matrix(Q, y, z, s)`` (``z`` increasing) and the root for the next call.

    ``canon`` maps each sample to the representative of its group of duplicated samples
    (``None``: no duplicates): the matrix of the representatives is factorised
    (:class:`MergedKKT`), by a :class:`KKTUpdate` of ``root`` (the latest LU, an index set and
    its factor) when the sets are close, else by a new LU, which becomes the root.  ``Qzz``
    (``Q[z, z]``, if the caller has it) saves the gather of the matrix.
    """
    reps = z if canon is None else canon[z]
    zr = np.unique(reps)
    same = np.array_equal(zr, z)
    inner: Factor | KKTUpdate | None = None
    if root is not None:
        inner = KKTUpdate.make(root[1], root[0], zr, Q, y, s)
    if inner is None:
        inner = Factor(kkt_matrix(Q, y, zr, s, Qzz if same else None))
        if inner.lu is not None:
            root = (zr, inner)
    out: Factor | KKTUpdate | MergedKKT = inner if same else MergedKKT(inner, np.searchsorted(zr, reps), Q, y, z, s)
    if Qzz is not None and not isinstance(out, Factor):
        out._J = kkt_matrix(Q, y, z, s, Qzz)
    return out, root


def _full_rank_r(R: Array) -> bool:
    """A QR factor's triangle ``R`` is finite and no diagonal entry is at most ``1e-10`` of the
    largest (its columns independent to working precision)."""
    dg = np.abs(np.diag(R))
    return bool(np.isfinite(R).all() and dg.min() > 1e-10 * dg.max())


def _lowrank_ed(Gm: Array, ym: Array, c: Array, v: Array) -> Array:
    """``E D v`` of :class:`LowRankSVMFactor` for ``v = (x_b, w)`` (a vector or a matrix of
    columns): ``t = G_M w + y_M x_b``, then ``(-(c y_M)^T t, -(w + G_M^T (c t)))``."""
    t = Gm @ v[1:] + np.multiply.outer(ym, v[0])
    ct = (c if v.ndim == 1 else c[:, None]) * t
    out = np.empty(v.shape)
    out[0] = -(ym @ ct)
    out[1:] = -(v[1:] + Gm.T @ ct)
    return out


class MarginQR:
    """The full QR factorisation ``P^T = Q R`` of the margin columns ``(y_i, G_i)``, ``i`` in
    ``idx`` (in that order), of :class:`LowRankSVMFactor`, updated as samples join and leave.

    A set a few samples away from this one is reached by column deletions and insertions
    (:func:`scipy.linalg.qr_delete` / :func:`scipy.linalg.qr_insert`, ``O((d + 1)^2)`` each)
    instead of a new factorisation (``O((d + 1)^2 |Z|)``); after :data:`MAX_UPDATES` updates
    the factorisation is made afresh.  ``R`` is kept in full (``d + 1`` rows) as the update
    routines take it.
    """

    #: most samples joining or leaving in one update
    MAX_CHANGES = 8
    #: updates before a new factorisation (the drift of many Givens rotations)
    MAX_UPDATES = 64

    def __init__(self, idx: NDArray[np.intp], Q: Array, R: Array, updates: int) -> None:
        self.idx, self.Q, self.R, self.updates = idx, Q, R, updates

    @classmethod
    def make(cls, idx: NDArray[np.intp], Gz: Array, yz: Array) -> MarginQR | None:
        """A new factorisation of the rows ``Gz`` (samples ``idx``), or ``None`` if there are more
        of them than ``d + 1`` or they are linearly dependent (:meth:`ok`)."""
        nz, d = Gz.shape
        k = d + 1
        if nz > k:
            return None
        if nz == 0:
            return cls(idx, np.eye(k), np.zeros((k, 0)), 0)
        Pt = np.empty((k, nz))
        Pt[0] = yz
        Pt[1:] = Gz.T
        Q, R = sla.qr(Pt, mode="full", check_finite=False)
        out = cls(idx, Q, R, 0)
        return out if out.ok() else None

    def ok(self) -> bool:
        """Finite, and full rank (:func:`_full_rank_r`)."""
        return self.idx.size == 0 or _full_rank_r(self.R[: self.idx.size])

    def moved_to(self, idx: NDArray[np.intp], G: Array, y: Array) -> MarginQR | None:
        """The factorisation of the samples ``idx`` (rows of ``G``, labels ``y``, columns in the
        order of ``idx``): updated from this one, or made afresh when the sets differ by more
        than :data:`MAX_CHANGES` samples, after :data:`MAX_UPDATES` updates, or when the kept
        samples are in another order; ``None`` where :meth:`make` gives ``None``."""
        k = G.shape[1] + 1
        kept = np.isin(self.idx, idx)
        added = np.flatnonzero(~np.isin(idx, self.idx))
        nchg = int(np.count_nonzero(~kept)) + added.size
        if (nchg > self.MAX_CHANGES or self.updates + nchg > self.MAX_UPDATES or idx.size > k
                or not kept.any() or not np.array_equal(self.idx[kept], np.delete(idx, added))):
            return MarginQR.make(idx, G[idx], y[idx])
        Q, R = self.Q, self.R
        for pos in np.flatnonzero(~kept)[::-1]:
            Q, R = sla.qr_delete(Q, R, int(pos), 1, which="col", check_finite=False)
        for j in added:  # every sample before position j of idx is in place already
            col = np.concatenate([[y[idx[j]]], G[idx[j]]])
            Q, R = sla.qr_insert(Q, R, col, int(j), which="col", check_finite=False)
        out = MarginQR(idx.copy(), Q, R, self.updates + nchg)
        return out if out.ok() else MarginQR.make(idx, G[idx], y[idx])

    def factors(self) -> tuple[Array, Array]:
        """``(Q, R_1)``: ``Q`` square and the ``|Z|``-square triangle of ``R``."""
        return self.Q, np.ascontiguousarray(self.R[: self.idx.size])


class LowRankSVMFactor:
    """:class:`Factor`'s interface for the SVM path Jacobian with a linear kernel.

    With ``Q = G G^T`` (``G = y * X``, ``d`` columns) the Jacobian of GAGA eq. (5) on the
    unknowns ``(a_Z, a_M, b)`` (rows in the same order; :meth:`SVMSystem.jacobians`) is::

        Z rows:  -G_Z G_F^T a_F - y_Z b
        M rows:  diag(c) (G_M G_F^T a_F + y_M b) + a_M
        b row:   y_Z^T a_Z + y_M^T a_M

    (``F = Z, M``).  With ``w = G_F^T x_F`` as an extra unknown and ``x_M`` eliminated
    through its identity block, ``J x = r`` becomes the system ``S`` of order
    ``|Z| + 1 + d`` on ``(x_Z, v)``, ``v = (x_b, w)``::

        [ 0          -P ] [x_Z]   [ r_Z                       ]
        [ E P^T       D ] [ v ] = [ (r_b - y_M^T r_M, G_M^T r_M) ]

    with ``P = [y_Z, G_Z]``, ``E = diag(1, -I_d)`` and ``D v = (-(c y_M)^T t, w + G_M^T (c t))``,
    ``t = G_M w + y_M x_b``; then ``x_M = r_M - c t``.  Both eliminations are Schur
    complements of identity blocks of the augmented system (unknowns permuted alike on rows
    and columns), so ``det J = det S``.

    ``S`` is solved through a full QR of ``P^T = [Q_1 Q_2] [R; 0]`` (``|Z| <= d + 1``; it depends
    on the margin set only, so the caller may keep it while M and ``c`` change): with
    ``v = Q_1 alpha + Q_2 beta`` the Z rows give ``alpha = -R^{-T} r_Z``, the other rows projected
    on ``Q_2`` give ``X beta = Q_2^T E (r_v - D Q_1 alpha)`` with ``X = Q_2^T E D Q_2`` of order
    ``d + 1 - |Z|``, and projected on ``Q_1`` give ``x_Z = R^{-1} Q_1^T E (r_v - D v)``.  In the
    basis ``(I, Q)`` the matrix ``diag(1, E) S`` is ``[[0, -R^T, 0], [R, X_11, X_12], [0, X_21, X]]``,
    so ``det S = (-1)^d det(R)^2 det X``: the sign the engine's fold test reads is
    ``(-1)^d sign det X``.  Cost per point ``O(|M| d (d + 1 - |Z|))`` and the small LU, plus the
    QR per margin set, instead of the ``O(|M|^3)`` of a dense LU of ``J`` (``|M|`` runs to
    thousands on the Table 11-16 rows, ``d`` to hundreds).
    :meth:`make` gives ``None`` when ``P`` or ``X`` is singular to working precision
    (duplicated samples on the margin, for instance): the caller's dense route then merges or
    takes least squares.  With more than ``d + 1`` margin samples :meth:`make_singular` gives
    the minimum-norm least-squares solution.
    """

    groups = None

    def __init__(self, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array,
                 zqr: tuple[Array, Array] | None, xlu: tuple[Array, NDArray[np.int32]] | None,
                 qr: tuple[Array, Array] | None = None) -> None:
        self.Gz, self.Gm, self.yz, self.ym, self.c = Gz, Gm, yz, ym, c
        self.zqr, self.xlu, self.qr = zqr, xlu, qr
        self.nz, self.nm = Gz.shape[0], Gm.shape[0]
        self.n = self.nz + self.nm + 1
        d = Gz.shape[1]
        if qr is not None:
            self.sign = 0.0
        else:
            self.sign = (-1.0) ** d * (_lu_sign(xlu) if xlu is not None else 1.0)

    @property
    def singular(self) -> bool:
        return self.qr is not None

    @property
    def least_squares(self) -> bool:
        """Singular ``J`` (more than ``d + 1`` samples on the margin): minimum-norm least squares."""
        return self.qr is not None

    @classmethod
    def make_singular(cls, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array) -> LowRankSVMFactor | None:
        """The factor of a ``J`` made singular by more than ``d + 1`` margin samples whose
        ``P = [G_Z, y_Z]`` has full column rank (``None`` otherwise).

        The Z rows of ``J x = r`` read ``P (w, x_b) = -r_Z``; whatever ``(w, x_b)`` is, the
        M rows give ``x_M = r_M - c (G_M w + y_M x_b)`` and ``P^T x_Z = (w - G_M^T x_M,
        r_b - y_M^T x_M)`` (the definition of ``w`` and the b row) has solutions.  So the
        least-squares solutions of ``J`` are those with ``(w, x_b)`` the least-squares
        solution of the Z rows (unique), and the one of minimum norm has
        ``x_Z = P (P^T P)^{-1} (w - G_M^T x_M, r_b - y_M^T x_M)``: the answer of LAPACK
        ``gelsy`` on ``J`` (:meth:`Factor.solve`) from one thin QR of ``P``, ``O(|J| d^2)``
        instead of ``O(|J|^3)``.
        """
        P = np.column_stack([Gz, yz])
        if P.shape[0] < P.shape[1]:
            return None
        q, r = np.linalg.qr(P)
        if not _full_rank_r(r):
            return None
        return cls(Gz, Gm, yz, ym, c, None, None, (q, r))

    @classmethod
    def make(cls, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array,
             zqr: tuple[Array, Array] | None = None) -> LowRankSVMFactor | None:
        """The factor for ``|Z| <= d + 1`` margin samples, or ``None`` if ``S`` is singular to
        working precision; ``zqr`` is :meth:`MarginQR.factors` of ``(Gz, yz)`` if the caller has it."""
        if zqr is None:
            m = MarginQR.make(np.arange(Gz.shape[0]), Gz, yz)
            if m is None:
                return None
            zqr = m.factors()
        nz = Gz.shape[0]
        xlu = None
        if nz < Gz.shape[1] + 1:
            Q2 = zqr[0][:, nz:]
            xlu = _lu(Q2.T @ _lowrank_ed(Gm, ym, c, Q2))
            if xlu is None:
                return None
        return cls(Gz, Gm, yz, ym, c, zqr, xlu)

    def matvec(self, x: Array) -> Array:
        """``J x`` from the factors (``x`` a vector or a matrix of columns)."""
        nz, nm = self.nz, self.nm
        xz, xm, xb = x[:nz], x[nz:nz + nm], x[nz + nm]
        u = self.Gz.T @ xz + self.Gm.T @ xm
        cm = self.c if x.ndim == 1 else self.c[:, None]
        out = np.empty(x.shape)
        out[:nz] = -(self.Gz @ u) - np.multiply.outer(self.yz, xb)
        out[nz:nz + nm] = cm * (self.Gm @ u + np.multiply.outer(self.ym, xb)) + xm
        out[nz + nm] = self.yz @ xz + self.ym @ xm
        return out

    def _solve(self, r: Array) -> Array:
        if self.qr is not None:
            return self._solve_singular(r)
        assert self.zqr is not None
        Q, R = self.zqr
        nz, nm = self.nz, self.nm
        rm = r[nz:nz + nm]
        # E r_v, r_v = (r_b - y_M^T r_M, G_M^T r_M)
        er = np.concatenate([(r[nz + nm] - self.ym @ rm)[None], -(self.Gm.T @ rm)])
        Q1, Q2 = Q[:, :nz], Q[:, nz:]
        if nz:
            alpha, info = dtrtrs(R, r[:nz], trans=1)
            if info != 0:
                return np.zeros(r.shape)
            v = -(Q1 @ alpha)
        else:
            v = np.zeros(er.shape)
        if Q2.shape[1]:
            assert self.xlu is not None
            beta, info = dgetrs(self.xlu[0], self.xlu[1], Q2.T @ (er - _lowrank_ed(self.Gm, self.ym, self.c, v)))
            if info != 0:
                return np.zeros(r.shape)
            v = v + Q2 @ beta
        out = np.empty(r.shape)
        if nz:
            xz, info = dtrtrs(R, Q1.T @ (er - _lowrank_ed(self.Gm, self.ym, self.c, v)))
            if info != 0:
                return np.zeros(r.shape)
            out[:nz] = xz
        xb, w = v[0], v[1:]
        cm = self.c if r.ndim == 1 else self.c[:, None]
        out[nz:nz + nm] = rm - cm * (self.Gm @ w + np.multiply.outer(self.ym, xb))
        out[nz + nm] = xb
        return out

    def _solve_singular(self, r: Array) -> Array:
        """Minimum-norm least-squares solution (:meth:`make_singular`)."""
        assert self.qr is not None
        q, rr = self.qr
        nz, nm, d = self.nz, self.nm, self.Gz.shape[1]
        rm, rb = r[nz:nz + nm], r[nz + nm]
        om = -sla.solve_triangular(rr, q.T @ r[:nz], check_finite=False)
        w, xb = om[:d], om[d]
        cm = self.c if r.ndim == 1 else self.c[:, None]
        xm = rm - cm * (self.Gm @ w + np.multiply.outer(self.ym, xb))
        s = np.concatenate([w - self.Gm.T @ xm, (rb - self.ym @ xm)[None]])
        out = np.empty(r.shape)
        out[:nz] = q @ sla.solve_triangular(rr, s, trans="T", check_finite=False)
        out[nz:nz + nm] = xm
        out[nz + nm] = xb
        return out

    def solve(self, rhs: Array) -> Array:
        """``J^{-1} rhs`` by the small system, with one step of iterative refinement on the
        residual of ``J`` when it exceeds ``1e-12`` of the right-hand side (as
        :meth:`SchurFactor.solve`)."""
        x = self._solve(rhs)
        if self.qr is not None:  # least squares: J x = rhs need not hold
            return x
        e = rhs - self.matvec(x)
        if float(np.abs(e).max(initial=0.0)) > 1e-12 * float(np.abs(rhs).max(initial=0.0)):
            x = x + self._solve(e)
        return x


class MergedLowRankSVMFactor:
    """:class:`LowRankSVMFactor` of ``J`` with duplicated samples on the margin (equal rows and
    columns of ``J``, so ``J`` is singular): the factor of the system on one representative per
    group, the rows' right-hand sides averaged over each group and each group's unknown split
    equally, as :class:`Factor` does with its merged LU (the same solution and sign)."""

    singular = True
    least_squares = False
    groups = None

    def __init__(self, inner: LowRankSVMFactor, group: NDArray[np.intp], size: Array) -> None:
        self.inner, self.group, self.size = inner, group, size
        self.sign = inner.sign
        self.nz = group.size
        self.n = self.nz + inner.nm + 1

    def solve(self, rhs: Array) -> Array:
        g, nz = self.size.size, self.nz
        if rhs.ndim == 1:
            avg = np.bincount(self.group, weights=rhs[:nz], minlength=g) / self.size
            wsize = self.size[self.group]
        else:
            avg = np.zeros((g, *rhs.shape[1:]))
            np.add.at(avg, self.group, rhs[:nz])
            avg /= self.size[:, None]
            wsize = self.size[self.group][:, None]
        x = self.inner.solve(np.concatenate([avg, rhs[nz:]]))
        out = np.empty(rhs.shape)
        out[:nz] = x[:g][self.group] / wsize
        out[nz:] = x[g:]
        return out


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


#: what a system's ``factor`` returns (all have ``n``, ``sign``, ``singular``, ``solve``)
AnyFactor = (Factor | SchurFactor | KKTUpdate | MergedKKT | RefinedFactor | CholeskyFactor | LowRankSVMFactor
             | MergedLowRankSVMFactor | RowScaled)
