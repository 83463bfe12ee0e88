"""Runner adapter shared by the robust baselines: one candidate per hyper-parameter tuple.

GAGA appendix D.6 chooses the baselines' hyper-parameters "from the best
performance by grid search".  The protocol already selects the best candidate of
a method on the validation split, so a baseline exposes its grid as candidates:
:meth:`GridMethod.fit` fits one estimator per point of the Cartesian product of
the grid lists and the protocol picks the best one.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator

from spl_bench.errors import ConfigError
from spl_bench.methods.base import Array, SPLEstimator, check_finite_X


def as_grid(name: str, value: Any) -> list[Any]:
    """Return ``value`` as a non-empty list of grid values (a scalar is a one-point grid)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        values = list(value)
    else:
        values = [value]
    if not values:
        raise ConfigError(f"grid {name!r} is empty; give at least one value")
    return values


class GridMethod(SPLEstimator):
    """Base of the robust-baseline methods: candidates are the points of a grid.

    Subclasses list the grid parameters in ``grid_names`` (constructor keywords that
    take a value or a list of values), give the model task they need in ``task``
    and build one stand-alone estimator per grid point in :meth:`make_estimator`.
    A grid parameter left at ``None`` takes its value from ``model_params`` under
    the name ``model_param_names[name]`` (for example Lasso's ``alpha`` or the
    SVM's ``C``), so a table config can reuse the backbone's settings.
    """

    grid_names: tuple[str, ...] = ()
    model_param_names: dict[str, str] = {}
    task: str = "regression"

    def make_estimator(self, **params: Any) -> BaseEstimator:
        """A stand-alone estimator for one grid point."""
        raise NotImplementedError

    def default_value(self, name: str) -> Any:
        """Value of grid parameter ``name`` when it is ``None`` (from ``model_params``)."""
        key = self.model_param_names.get(name)
        mp = self.model_params or {}
        if key is None or key not in mp:
            raise ConfigError(
                f"{type(self).__name__}: grid parameter {name!r} is not set and model_params "
                f"has no {key or name!r}"
            )
        return mp[key]

    def grid(self) -> list[dict[str, Any]]:
        """The candidate hyper-parameters: Cartesian product of the grid lists, in order."""
        lists = []
        for name in self.grid_names:
            value = getattr(self, name)
            lists.append(as_grid(name, self.default_value(name) if value is None else value))
        return [dict(zip(self.grid_names, point, strict=True)) for point in itertools.product(*lists)]

    def _fit(self, X: Array, y: Array) -> None:
        if self.model_.task != self.task:
            raise ConfigError(
                f"{type(self).__name__} is a {self.task} method but model {self.model!r} is for "
                f"{self.model_.task}"
            )
        grid = self.grid()
        self.candidate_models_ = [self.make_estimator(**p).fit(X, y) for p in grid]
        self.candidate_params_ = grid

    @property
    def candidate_estimators_(self) -> list[BaseEstimator]:
        """The fitted stand-alone estimators, one per candidate (same as ``candidate_models_``)."""
        return self.candidate_models_

    def predict_candidates(self, X: ArrayLike) -> Array:
        """Predictions of every grid point, shape ``(k, n_samples)``."""
        X = check_finite_X(X)
        preds = np.vstack([est.predict(X) for est in self.candidate_models_]).astype(float)
        if np.isnan(preds).any():
            raise FloatingPointError(f"{type(self).__name__} predicted NaN")
        return preds

    def _predict_selected(self, X: Array) -> Array:
        return np.asarray(self.candidate_models_[self.selected_].predict(X), dtype=float)
