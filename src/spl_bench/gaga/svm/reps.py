"""Duplicated samples on the SVM path's margin merged, one per group: the representatives of the
free set ``E_Z ∪ M`` (:class:`_Reps`) and the :class:`~spl_bench.gaga.core.factors.Factor`
interfaces between a merged system and the unmerged one (:class:`_RepSolve`, :class:`_MergedOut`).

Identical samples (x and y) have equal rows and columns of ``Q``, so of the Jacobian of GAGA
eq. (5) on E_Z: its merged system is the one :class:`~spl_bench.gaga.core.factors.Factor` solves,
with the minimum-norm (equal-share) split.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


class _Reps:
    """A free set ``E_Z ∪ M`` with duplicated samples in E_Z merged, one per group (equal rows and
    columns of ``J``; M rows differ by their identity term): ``ids`` (E_Z's representatives, as
    ``canon`` gives them, then M), ``group`` (of each E_Z position), ``size`` (of each group) and
    ``pos`` (a position in the free set of each of ``ids``).  ``expand`` copies a merged row to its
    group, ``contract`` sums a group's rows, ``average`` and ``split`` take a right-hand side to the
    merged system and its solution back (equal shares: :class:`Factor`'s minimum-norm solution).
    """

    def __init__(self, ids: NDArray[np.intp], nz: int, nz_full: int, group: NDArray[np.intp], size: Array,
                 pos: NDArray[np.intp]) -> None:
        self.ids, self.nz, self.nz_full, self.group, self.size, self.pos = ids, nz, nz_full, group, size, pos
        self.m = int(ids.size - nz)
        self.identity = nz == nz_full
        self.pattern = np.concatenate([np.zeros(nz), np.ones(self.m)])  # the shift of M, per unit

    @classmethod
    def make(cls, iz: NDArray[np.intp], im: NDArray[np.intp], canon: NDArray[np.intp] | None) -> _Reps | None:
        nz = iz.size
        if canon is None:
            return cls(np.concatenate([iz, im]), nz, nz, np.arange(nz), np.ones(nz),
                       np.arange(nz + im.size))
        reps, first, group, size = np.unique(canon[iz], return_index=True, return_inverse=True, return_counts=True)
        if np.isin(canon[im], reps).any() or np.isin(im, reps).any():
            return None
        return cls(np.concatenate([reps, im]), reps.size, nz, np.asarray(group).ravel(), size.astype(float),
                   np.concatenate([first, nz + np.arange(im.size)]))

    def expand(self, X: Array) -> Array:
        """Merged rows to the free set's (a group's row copied to each member)."""
        return X if self.identity else np.concatenate([X[self.group], X[self.nz:]])

    def contract(self, X: Array) -> Array:
        """The free set's rows to merged ones (a group's rows summed)."""
        if self.identity:
            return X
        Z = np.zeros((self.nz, *X.shape[1:]))
        np.add.at(Z, self.group, X[:self.nz_full])
        return np.concatenate([Z, X[self.nz_full:]])

    def average(self, X: Array) -> Array:
        """The free set's rows to merged ones (a group's rows averaged)."""
        if self.identity:
            return X
        Z = self.contract(X)
        Z[:self.nz] /= self.size if X.ndim == 1 else self.size[:, None]
        return Z

    def split(self, X: Array) -> Array:
        """A merged solution to the free set's (equal shares of a group's value)."""
        w = self.size if X.ndim == 1 else self.size[:, None]
        return np.concatenate([(X[:self.nz] / w)[self.group], X[self.nz:]])


class _RepSolve:
    """:class:`Factor`'s interface for the merged system (:class:`_Reps`) of the unmerged ``inner``
    (whose solves are the minimum-norm ones); ``sign`` given by the caller."""

    singular = False
    least_squares = False
    merged = None

    def __init__(self, inner: Any, reps: _Reps, sign: float) -> None:
        self.inner, self.reps, self.sign = inner, reps, float(sign)

    @property
    def n(self) -> int:
        return int(self.reps.ids.size + 1)

    def solve(self, rhs: Array) -> Array:
        return self.reps.contract(self.inner.solve(self.reps.expand(rhs)))


class _MergedOut:
    """:class:`Factor`'s interface for ``J`` with duplicated samples in E_Z from a factor of its
    merged system (:class:`_Reps`): a group's rows averaged, its value split equally, the merged
    system's sign; ``singular`` (not least squares), as :class:`Factor` reports a merged ``J``."""

    singular = True
    least_squares = False
    merged = None

    def __init__(self, inner: Any, reps: _Reps) -> None:
        self.inner, self.reps, self.sign = inner, reps, float(inner.sign)

    @property
    def n(self) -> int:
        return int(self.reps.nz_full + self.reps.m + 1)

    def solve(self, rhs: Array) -> Array:
        return self.reps.split(self.inner.solve(self.reps.average(rhs)))
