"""Preprocessing fitted on training rows only (the honest default), or the authors' variant.

``scaling="train"``: features standardised with the mean/std of the training
rows; for regression the target is standardised the same way.  The test rows
are transformed with the training statistics.

``scaling="authors"``: features standardised on *all* rows (train and test) and
the regression target min-max scaled on all rows, as in the GAGA authors' code.
Their loaders first shift the target by its mean and then min-max scale it, which is the same as
min-max scaling alone: ``(y - ybar - min(y - ybar)) / span = (y - min y) / span``.

``scaling="authors_slip"``: as ``authors``, but the target as two of the authors' loaders compute
it (``regression_data7``, ``regression_data12`` of their ``Input_Data.py``), with an operator-
precedence slip: ``y' = (y - ybar) - min(y - ybar) / span``, i.e. the mean-centred target shifted by
a constant and not scaled.  Which data sets of the paper went through those two loaders is not
known (docs/protocol.md, "The authors' protocol"); the option is there to test that reading.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import ConfigError

Array = NDArray[np.float64]


@dataclass
class Scaled:
    """Transformed train/test features and targets."""

    X_train: Array
    y_train: Array
    X_test: Array
    y_test: Array


def _standardize(fit: Array, *apply: Array) -> list[Array]:
    mu = fit.mean(axis=0)
    sd = fit.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)  # constant columns stay constant (zero)
    return [(a - mu) / sd for a in apply]


def scale_split(
    X_train: Array, y_train: Array, X_test: Array, y_test: Array, task: str, scaling: str = "train"
) -> Scaled:
    """Scale one split; see module doc for ``scaling``."""
    if scaling == "train":
        Xtr, Xte = _standardize(X_train, X_train, X_test)
        if task == "regression":
            ytr, yte = _standardize(y_train, y_train, y_test)
        else:
            ytr, yte = y_train.copy(), y_test.copy()
    elif scaling in ("authors", "authors_slip"):
        X_all = np.vstack([X_train, X_test])
        Xtr, Xte = _standardize(X_all, X_train, X_test)
        if task == "regression":
            y_all = np.concatenate([y_train, y_test])
            lo, hi = y_all.min(), y_all.max()
            span = hi - lo if hi > lo else 1.0
            if scaling == "authors":  # (y - min y) / (max y - min y)
                ytr, yte = (y_train - lo) / span, (y_test - lo) / span
            else:  # (y - ybar) - (min y - ybar) / (max y - min y): the loaders' slip
                ybar = y_all.mean()
                shift = (lo - ybar) / span
                ytr, yte = (y_train - ybar) - shift, (y_test - ybar) - shift
        else:
            ytr, yte = y_train.copy(), y_test.copy()
    else:
        raise ConfigError(f"unknown scaling {scaling!r}; valid: train, authors, authors_slip")
    return Scaled(np.asarray(Xtr), np.asarray(ytr), np.asarray(Xte), np.asarray(yte))
