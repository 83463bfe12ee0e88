"""Duplicated columns of the design, merged for the lasso path (:class:`ColumnGroups`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class ColumnGroups:
    """Exactly duplicated columns of ``X`` (up to sign), merged for the lasso path.

    With identical columns the lasso solution is not unique (only the sum of the
    group's coefficients is) and every Jacobian containing two of them is
    singular.  The path is followed for the reduced design ``X[:, keep]`` and each
    group's coefficient ``u`` is split equally, ``w_k = s_k u / |group|``: the
    minimum-norm lasso solution, which satisfies the subgradient conditions of the
    original problem exactly (identical columns have identical conditions).
    """

    keep: NDArray[np.intp]  # representative column of each group
    group: NDArray[np.intp]  # group of every original column
    sign: Array  # +1 / -1: original column = sign * representative
    size: NDArray[np.intp]  # number of columns in each group

    @classmethod
    def find(cls, X: Array) -> ColumnGroups:
        d = X.shape[1]
        sign = np.ones(d)
        for j in range(d):  # orient each column by its first non-zero entry
            nz = np.flatnonzero(X[:, j])
            if nz.size and X[nz[0], j] < 0:
                sign[j] = -1.0
        _, keep, group = np.unique((X * sign).T, axis=0, return_index=True, return_inverse=True)
        group = np.asarray(group).ravel()
        order = np.argsort(keep)  # groups in order of their first column
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        keep, group = keep[order], rank[group]
        sign = sign * sign[keep][group]  # relative to the representative
        return cls(keep=keep, group=group, sign=sign, size=np.bincount(group))

    @property
    def trivial(self) -> bool:
        return self.keep.size == self.group.size

    def reduce(self, w: Array) -> Array:
        """Coefficients of the reduced design giving the same ``X w``."""
        return np.bincount(self.group, weights=self.sign * w, minlength=self.keep.size)

    def expand(self, W: Array) -> Array:
        """Split reduced coefficients (rows of ``W``) equally over each group."""
        return W[..., self.group] * (self.sign / self.size[self.group])
