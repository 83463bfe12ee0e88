"""Base class of every method: a scikit-learn estimator that fits a *set of candidates*.

An SPL method produces many models, one per age ``lam`` (a grid for ACS, the
knots and dense output of an age-path for GAGA, Pareto points for MOSPL).  The
evaluation protocol chooses one of them on a validation split, so every method
exposes the same small interface:

``fit(X, y)``
    fit all candidates on the training rows;
``candidate_params_``
    a list with one dict per candidate (for example ``{"lam": 0.6}``);
``predict_candidates(X)``
    a ``(k, n)`` array, the predictions of all ``k`` candidates;
``select(i)``
    make candidate ``i`` the one used by ``predict`` and ``score``;
``run_info()``
    extra numbers for the results file (restarts, critical points, ...).

By default the selected candidate is the last one (the largest age).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, r2_score

from spl_bench.errors import DataError
from spl_bench.models import Model, Params, get_model
from spl_bench.sp import SPRegularizer, get_sp

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


class SPLEstimator(BaseEstimator):
    """Common base: model and SP-regularizer by name, candidate bookkeeping.

    Parameters
    ----------
    model : str
        Model name (``lasso``, ``logistic``, ``svm``; see :mod:`spl_bench.models`).
    model_params : dict, optional
        Hyper-parameters of the model (``alpha``; ``C``; ``C``, ``kernel``, ``gamma``).
    sp : str
        SP-regularizer name (``hard``, ``linear``, ``mixture``, ``log``, ``polynomial``).
    sp_params : dict, optional
        Hyper-parameters of the SP-regularizer (``gamma`` for mixture).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.model_params = model_params
        self.sp = sp
        self.sp_params = sp_params

    # ----------------------------------------------------------- components
    def _make_model(self) -> Model:
        return get_model(self.model, **(self.model_params or {}))

    def _make_sp(self) -> SPRegularizer:
        return get_sp(self.sp, **(self.sp_params or {}))

    # ------------------------------------------------------------------ fit
    def fit(self, X: ArrayLike, y: ArrayLike) -> SPLEstimator:
        X = check_finite_X(X)
        model = self._make_model()
        y = model.check_y(np.asarray(y).ravel())
        if y.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        if not np.all(np.isfinite(y)):
            raise DataError("y contains NaN or infinite values")
        self.model_ = model
        self.task_ = model.task
        self.n_features_in_ = X.shape[1]
        self.candidate_params_: list[dict[str, Any]] = []
        self._fit(X, y)
        if not self.candidate_params_:
            raise RuntimeError(f"{type(self).__name__} produced no candidate model")
        self.selected_ = len(self.candidate_params_) - 1
        return self

    def _fit(self, X: Array, y: Array) -> None:
        """Fill ``candidate_params_`` and ``candidate_models_`` (list of :class:`Params`)."""
        raise NotImplementedError

    # ------------------------------------------------------------ candidates
    def predict_candidates(self, X: ArrayLike) -> Array:
        """Predictions of every candidate, shape ``(k, n_samples)``."""
        X = check_finite_X(X)
        preds = np.vstack([self.model_.predict(p, X) for p in self.candidate_models_])
        if np.isnan(preds).any():
            raise FloatingPointError(f"{type(self).__name__} predicted NaN")
        return preds

    def select(self, index: int) -> SPLEstimator:
        """Use candidate ``index`` for :meth:`predict` and :meth:`score`."""
        if not 0 <= index < len(self.candidate_params_):
            raise IndexError(f"candidate {index} out of range 0..{len(self.candidate_params_) - 1}")
        self.selected_ = int(index)
        return self

    @property
    def selected_params_(self) -> dict[str, Any]:
        return self.candidate_params_[self.selected_]

    def run_info(self) -> dict[str, Any]:
        """Method-specific numbers for the results file (override to add more)."""
        return {"n_candidates": len(self.candidate_params_)}

    # --------------------------------------------------------------- predict
    def predict(self, X: ArrayLike) -> Array:
        X = check_finite_X(X)
        return self._predict_selected(X)

    def _predict_selected(self, X: Array) -> Array:
        return self.model_.predict(self.candidate_models_[self.selected_], X)

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy (classification) or R^2 (regression) of the selected candidate."""
        pred = self.predict(X)
        y = np.asarray(y, dtype=float).ravel()
        return float(accuracy_score(y, pred) if self.task_ == "classification" else r2_score(y, pred))

    @property
    def candidate_models_(self) -> list[Params]:
        return self._candidate_models

    @candidate_models_.setter
    def candidate_models_(self, value: list[Params]) -> None:
        self._candidate_models = value
