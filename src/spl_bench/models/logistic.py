"""Logistic regression: ``ell_i = C log(1 + exp(-y_i (x_i^T w + b)))``, ``R(w) = ||w||^2 / 2``.

GAGA appendix D.1, eq. (24).  The intercept ``b`` is not penalised.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from spl_bench.errors import check_positive
from spl_bench.models import REGISTRY
from spl_bench.models.base import Array, Params
from spl_bench.models.datafits import Logistic
from spl_bench.models.glm import GLMModel
from spl_bench.models.penalties import L2


@REGISTRY.register("logistic")
class LogisticModel(GLMModel):
    """L2-regularised logistic regression with per-sample weight ``C v_i`` (datafit
    :class:`Logistic`, penalty :class:`L2`)."""

    task = "classification"

    def __init__(self, C: float = 1.0, tol: float = 1e-10, max_iter: int = 1000) -> None:
        self.C = check_positive("logistic C", C)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.datafit = Logistic(self.C)
        self.penalty = L2()

    def get_params(self) -> dict[str, float]:
        return {"C": self.C}

    def gradient(self, params: Params, X: Array, y: Array, v: Array) -> tuple[Array, float]:
        """Gradient of the v-weighted objective with respect to ``(w, b)``."""
        gw, gb = self.data_gradient(params, X, y, v)
        return params.coef + gw, gb

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        d = X.shape[1]
        pos = v > 0
        if not np.any(pos) or np.unique(y[pos]).size < 2:
            # no data (or one class) left: w = 0 and b solving the weighted 1-D problem
            return self._fit_degenerate(X, y, v)
        est = LogisticRegression(C=self.C, solver="newton-cholesky", tol=self.tol, max_iter=self.max_iter)
        if warm is not None and warm.coef is not None and np.shape(warm.coef) == (d,) and np.isfinite(warm.coef).all():
            # Newton from the previous iterate (ACS, MOSPL's refits, GAGA's warm starts): the same
            # optimum to the solver's tolerance in a few Newton steps instead of a cold start's
            est.set_params(warm_start=True)
            est.coef_ = np.asarray(warm.coef, dtype=float).reshape(1, d).copy()
            est.intercept_ = np.array([float(warm.intercept)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X[pos], y[pos], sample_weight=v[pos])
        coef = np.asarray(est.coef_, dtype=float).ravel()
        b = float(est.intercept_[0])
        if est.classes_[0] != -1.0:  # pragma: no cover - classes are sorted
            coef, b = -coef, -b
        return Params(coef=coef.reshape(d), intercept=b)

    def _fit_degenerate(self, X: Array, y: Array, v: Array) -> Params:
        d = X.shape[1]
        sp, sn = float(v[y > 0].sum()), float(v[y < 0].sum())
        if sp > 0 and sn > 0:  # pragma: no cover - handled by sklearn above
            b = float(np.log(sp / sn))
        elif sp > 0:
            b = 50.0
        elif sn > 0:
            b = -50.0
        else:
            b = 0.0
        return Params(coef=np.zeros(d), intercept=b)
