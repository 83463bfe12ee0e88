"""Input checks shared by every layer (below ``data``: it imports only :mod:`spl_bench.errors`).

The exact path engine (:mod:`spl_bench.gaga`) and the methods (:mod:`spl_bench.methods`)
validate their ``X`` the same way; the check lives here so that ``gaga`` does not import
``methods`` (``spl_bench.methods.base.check_finite_X`` re-exports it).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import DataError

Array = NDArray[np.float64]


def check_finite_X(X: ArrayLike) -> Array:
    """Return ``X`` as a 2-D float array; raise a clear error on NaN/inf or empty input."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise DataError("X has no rows (empty split?)")
    if not np.all(np.isfinite(X)):
        bad = int((~np.isfinite(X)).sum())
        raise DataError(f"X contains {bad} NaN or infinite value(s); clean or impute the data first")
    return X
