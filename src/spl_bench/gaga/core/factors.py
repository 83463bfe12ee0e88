"""LU factors of a path system's Jacobian, with a minimum-norm fallback (GAGA appendix A.2).

:class:`Factor` is shared by the engine (``J_theta`` of eq. (5), Theorem 3) and the
systems' own exact solvers (the warm-started weighted-SVM active-set fit): LAPACK ``getrf``,
duplicated rows and columns merged when singular (:func:`_merge_duplicates`, or a caller's
:func:`groups_hint`), the least-squares solution otherwise.  :class:`AnyFactor` is the
interface every factor of ``J`` offers (those of :mod:`~spl_bench.gaga.core.refined`,
:mod:`~spl_bench.gaga.core.structured` and :mod:`spl_bench.gaga.svm.kkt` too).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray
from scipy.linalg.lapack import dgetrf, dgetrs

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
    general factors (:class:`Factor`; :class:`~spl_bench.gaga.core.structured.SchurFactor`,
    :class:`~spl_bench.gaga.core.structured.RowScaled`; :class:`~spl_bench.gaga.core.refined.RefinedFactor`,
    :class:`~spl_bench.gaga.core.refined.CholeskyFactor`) and the SVM's KKT factors of
    :mod:`spl_bench.gaga.svm.kkt` (``KKTUpdate``, ``MergedKKT``, ``LowRankSVMFactor``,
    ``MergedLowRankSVMFactor``).  A type for annotations only."""

    n: int
    sign: float
    singular: bool

    def solve(self, rhs: Array) -> Array: ...
