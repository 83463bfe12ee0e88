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
its ``Huber`` datafit and ``L1`` penalty (``solver="skglm"``); its objective is
exactly (HL).  On strongly collinear designs (ailerons has exactly collinear
columns) coordinate descent is slow, so ``solver="lbfgs"`` solves the same (HL)
with scipy's L-BFGS-B on the split ``w = p - q``, ``p, q >= 0``, where (HL) is
smooth: ``1/n sum_i H(r_i) + alpha 1^T (p + q)``.
When ``epsilon`` exceeds every residual of the solution, (HL) is the Lasso
objective of scikit-learn and both give the same solution.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from spl_bench.errors import ConfigError, check_positive
from spl_bench.methods.robust._grid import GridMethod
from spl_bench.models.datafits import Huber

Array = np.ndarray
SOLVERS = ("skglm", "lbfgs")


def huber(r: ArrayLike, epsilon: float) -> Array:
    """The Huber function ``H_epsilon`` of (HL), elementwise: the :class:`~spl_bench.models.datafits.Huber`
    datafit's loss (``delta = epsilon``) of the residuals ``r``."""
    r = np.asarray(r, dtype=float)
    return Huber(epsilon).value(np.zeros_like(r), r)


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
        skglm: outer (working-set) iterations and inner epochs; lbfgs: ``max_iter``
        times 100 is the iteration limit.
    solver : {"skglm", "lbfgs"}
        skglm's Anderson coordinate descent or scipy's L-BFGS-B on the split problem.
    """

    def __init__(
        self,
        alpha: float = 1e-3,
        epsilon: float = 0.1,
        fit_intercept: bool = True,
        tol: float = 1e-8,
        max_iter: int = 100,
        max_epochs: int = 50_000,
        solver: str = "skglm",
    ) -> None:
        self.alpha = alpha
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.max_epochs = max_epochs
        self.solver = solver

    def fit(self, X: ArrayLike, y: ArrayLike) -> HuberLasso:
        """Solve (HL) on ``(X, y)``."""
        alpha = check_positive("huber_lasso alpha", self.alpha)
        epsilon = check_positive("huber_lasso epsilon", self.epsilon)
        if self.solver not in SOLVERS:
            raise ConfigError(f"huber_lasso solver must be one of {SOLVERS}, got {self.solver!r}")
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = np.asarray(y, dtype=float)
        if self.solver == "skglm":
            self._fit_skglm(X, y, alpha, epsilon)
        else:
            self._fit_lbfgs(X, y, alpha, epsilon)
        return self

    def _fit_skglm(self, X: Array, y: Array, alpha: float, epsilon: float) -> None:
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import Huber
        from skglm.penalties import L1
        from skglm.solvers import AndersonCD

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

    def _fit_lbfgs(self, X: Array, y: Array, alpha: float, epsilon: float) -> None:
        n, d = X.shape
        fit_b = bool(self.fit_intercept)

        def fun(z: Array) -> tuple[float, Array]:
            w = z[:d] - z[d : 2 * d]
            b = z[-1] if fit_b else 0.0
            r = y - X @ w - b
            psi = np.clip(r, -epsilon, epsilon)  # H'(r)
            value = huber(r, epsilon).mean() + alpha * z[: 2 * d].sum()
            gw = -(X.T @ psi) / n
            grad = np.concatenate([gw + alpha, -gw + alpha, [-psi.mean() if fit_b else 0.0]])
            return float(value), grad

        bounds = [(0.0, None)] * (2 * d) + [(None, None) if fit_b else (0.0, 0.0)]
        z0 = np.zeros(2 * d + 1)
        if fit_b:
            z0[-1] = float(np.median(y))
        res = minimize(
            fun,
            z0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 100 * int(self.max_iter), "ftol": 1e-15, "gtol": float(self.tol)},
        )
        self.converged_ = bool(res.success)
        self.coef_ = res.x[:d] - res.x[d : 2 * d]
        self.intercept_ = float(res.x[-1]) if fit_b else 0.0
        self.n_iter_ = int(res.nit)

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
    fit_intercept, solver
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
        solver: str = "skglm",
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.alpha = alpha
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.solver = solver

    def make_estimator(self, **params: Any) -> HuberLasso:
        return HuberLasso(fit_intercept=self.fit_intercept, solver=self.solver, **params)
