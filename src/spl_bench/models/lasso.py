"""Lasso: ``ell_i = (y_i - x_i^T w)^2 / 2``, ``R(w) = n alpha ||w||_1``, no intercept.

With ``v = 1`` the objective is ``n`` times scikit-learn's Lasso objective
(GAGA section 4.2, eq. (10) up to that scaling; the data are centred so there
is no intercept).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from spl_bench.errors import check_positive
from spl_bench.models import REGISTRY
from spl_bench.models.base import Array, Model, Params


@REGISTRY.register("lasso")
class LassoModel(Model):
    """Squared loss with an L1 penalty ``n alpha ||w||_1``."""

    task = "regression"

    def __init__(self, alpha: float = 5e-3, tol: float = 1e-12, max_iter: int = 100_000) -> None:
        self.alpha = check_positive("lasso alpha", alpha)
        self.tol = float(tol)
        self.max_iter = int(max_iter)

    def get_params(self) -> dict[str, float]:
        return {"alpha": self.alpha}

    def decision_function(self, params: Params, X: Array) -> Array:
        return X @ params.coef

    def losses(self, params: Params, X: Array, y: Array) -> Array:
        return 0.5 * (y - X @ params.coef) ** 2

    def regularizer(self, params: Params, n_samples: int) -> float:
        return float(self.penalty_level(n_samples) * np.abs(params.coef).sum())

    def penalty_level(self, n: int) -> float:
        """``n alpha``, the L1 weight of the objective."""
        return n * self.alpha

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        n, d = X.shape
        if not np.any(v > 0):
            return Params(coef=np.zeros(d))
        s = np.sqrt(v)
        # sum_i v_i r_i^2 / 2 + n alpha |w|_1  ==  n * [ |s*(y - Xw)|^2 / (2n) + alpha |w|_1 ]
        est = Lasso(
            alpha=self.alpha,
            fit_intercept=False,
            tol=self.tol,
            max_iter=self.max_iter,
            warm_start=warm is not None,
            selection="cyclic",
        )
        if warm is not None:
            est.coef_ = np.array(warm.coef, dtype=float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X * s[:, None], y * s)
        return Params(coef=np.asarray(est.coef_, dtype=float).copy())

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        """Subgradient condition ``X^T (v r) in n alpha d|w|_1``, relative to ``n alpha``."""
        w = params.coef
        lev = self.penalty_level(len(y))
        corr = X.T @ (v * (y - X @ w))
        nz = w != 0
        viol = np.where(nz, np.abs(corr - lev * np.sign(w)), np.maximum(np.abs(corr) - lev, 0.0))
        return float(viol.max(initial=0.0) / lev)
