"""Huber-loss Lasso (GAGA appendix D.6, Table 7; GAGA ref [51], Nasrabadi et al. 2011).

Nasrabadi, Tran and Nguyen's extended Lasso models gross corruptions by a sparse
error vector ``e``::

    min_{w, b, e}  1/(2n) ||y - X w - b - e||^2 + alpha ||w||_1 + (epsilon / n) ||e||_1.

Minimising over ``e`` in closed form (soft-thresholding of each residual) gives
``min_e (r - e)^2 / 2 + epsilon |e| = H_epsilon(r)``, the Huber function, so the
problem is the Huber-loss Lasso

    min_{w, b}  1/n sum_i H_epsilon(y_i - x_i^T w - b) + alpha ||w||_1,          (HL)

    H_epsilon(r) = r^2 / 2                       if |r| <= epsilon,
                   epsilon |r| - epsilon^2 / 2    otherwise.

This is the "special case of the generalized model" GAGA uses (full observation,
identity corruption matrix).  (HL) is solved by skglm's coordinate descent with
its ``Huber`` datafit and ``L1`` penalty; its objective is exactly (HL).
When ``epsilon`` exceeds every residual of the solution, (HL) is the Lasso
objective of scikit-learn and both give the same solution.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from spl_bench.errors import check_positive
from spl_bench.methods.robust._grid import GridMethod

Array = np.ndarray


def huber(r: ArrayLike, epsilon: float) -> Array:
    """The Huber function ``H_epsilon`` of (HL), elementwise."""
    a = np.abs(np.asarray(r, dtype=float))
    return np.where(a <= epsilon, 0.5 * a**2, epsilon * a - 0.5 * epsilon**2)


class HuberLasso(RegressorMixin, BaseEstimator):
    """Huber-loss Lasso (HL) solved by skglm (``Huber`` datafit + ``L1`` penalty).

    Parameters
    ----------
    alpha : float
        L1 weight ``alpha`` of (HL) (same scaling as scikit-learn's ``Lasso``).
    epsilon : float
        Huber threshold: residuals above it are penalised linearly (Table 7's ``e``).
    fit_intercept : bool
        Fit an unpenalised intercept ``b``.
    tol : float
        Stopping tolerance of skglm's Anderson-accelerated coordinate descent.
    max_iter, max_epochs : int
        Outer (working-set) iterations and inner epochs of the solver.
    """

    def __init__(
        self,
        alpha: float = 1e-3,
        epsilon: float = 0.1,
        fit_intercept: bool = True,
        tol: float = 1e-8,
        max_iter: int = 100,
        max_epochs: int = 50_000,
    ) -> None:
        self.alpha = alpha
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_epochs = max_epochs

    def fit(self, X: ArrayLike, y: ArrayLike) -> HuberLasso:
        """Solve (HL) on ``(X, y)``."""
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import Huber
        from skglm.penalties import L1
        from skglm.solvers import AndersonCD

        alpha = check_positive("huber_lasso alpha", self.alpha)
        epsilon = check_positive("huber_lasso epsilon", self.epsilon)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        solver = AndersonCD(
            fit_intercept=bool(self.fit_intercept),
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            max_epochs=int(self.max_epochs),
        )
        est = GeneralizedLinearEstimator(datafit=Huber(epsilon), penalty=L1(alpha), solver=solver)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            est.fit(np.require(X, requirements=["C", "W"]), np.require(y, requirements=["C", "W"]))
        self.converged_ = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
        self.coef_ = np.asarray(est.coef_, dtype=float).ravel().copy()
        self.intercept_ = float(np.ravel(est.intercept_)[0]) if self.fit_intercept else 0.0
        self.n_iter_ = int(np.ravel(est.n_iter_)[0]) if np.size(est.n_iter_) else 0
        return self

    def predict(self, X: ArrayLike) -> Array:
        """``X w + b``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_

    def objective(self, X: ArrayLike, y: ArrayLike) -> float:
        """Value of (HL) at the fitted ``(w, b)`` on ``(X, y)``."""
        r = np.asarray(y, dtype=float) - self.predict(X)
        return float(huber(r, float(self.epsilon)).mean() + float(self.alpha) * np.abs(self.coef_).sum())


class HuberLassoMethod(GridMethod):
    """Runner adapter: one :class:`HuberLasso` per ``(alpha, epsilon)`` of the grid.

    Parameters
    ----------
    model, model_params, sp, sp_params
        The runner's keywords; ``sp`` is ignored, ``model`` must be a regression
        model, and ``alpha=None`` takes Lasso's ``model_params["alpha"]``.
    alpha : float or list of float, optional
        L1 weights to try.
    epsilon : float or list of float
        Huber thresholds to try.
    fit_intercept : bool
        Passed to every :class:`HuberLasso`.
    """

    grid_names = ("alpha", "epsilon")
    model_param_names = {"alpha": "alpha"}
    task = "regression"

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        alpha: float | list[float] | None = None,
        epsilon: float | list[float] = (0.1, 0.2, 0.3),
        fit_intercept: bool = True,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.alpha = alpha
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept

    def make_estimator(self, **params: Any) -> HuberLasso:
        return HuberLasso(fit_intercept=self.fit_intercept, **params)
