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
from spl_bench.models.base import Array, Params
from spl_bench.models.datafits import Quadratic
from spl_bench.models.glm import GLMModel
from spl_bench.models.penalties import L1


@REGISTRY.register("lasso")
class LassoModel(GLMModel):
    """Squared loss with an L1 penalty ``n alpha ||w||_1`` (datafit :class:`Quadratic`, penalty :class:`L1`)."""

    task = "regression"

    def __init__(self, alpha: float = 5e-3, tol: float = 1e-12, max_iter: int = 100_000) -> None:
        self.alpha = check_positive("lasso alpha", alpha)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.datafit = Quadratic()
        self.penalty = L1(self.alpha)

    def get_params(self) -> dict[str, float]:
        return {"alpha": self.alpha}

    def penalty_level(self, n: int) -> float:
        """``n alpha``, the L1 weight of the objective."""
        return self.penalty.level(n)

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
