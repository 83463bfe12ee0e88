"""Metrics of the protocol.

Classification: accuracy.  Regression: the "generalisation error" of the GAGA
paper, taken here as the mean squared error on the *standardised* target
(standardised with the training statistics), so 1.0 is the error of predicting
the training mean.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def metric_name(task: str) -> str:
    return "accuracy" if task == "classification" else "gen_error"


def greater_is_better(task: str) -> bool:
    return task == "classification"


def candidate_scores(task: str, preds: Array, y: Array) -> Array:
    """Metric of every candidate; ``preds`` is ``(k, n)``."""
    preds = np.atleast_2d(preds)
    if task == "classification":
        return (preds == y[None, :]).mean(axis=1)
    return ((preds - y[None, :]) ** 2).mean(axis=1)


def best_candidate(task: str, scores: Array) -> int:
    """Index of the best score (first one on ties)."""
    if np.isnan(scores).any():
        raise FloatingPointError("a candidate's validation score is NaN")
    return int(np.argmax(scores) if greater_is_better(task) else np.argmin(scores))
