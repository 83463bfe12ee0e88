"""Interface of a learning model: per-sample loss, weighted solver and KKT check.

Conventions (``docs/conventions.md``; all methods share them):

* the SPL objective is ``sum_i v_i ell_i(w) + R(w) + sum_i f(v_i, lam)``;
* for fixed ``v`` the model solves the *v-weighted convex problem*
  ``min_w sum_i v_i ell_i(w) + R(w)`` with :meth:`Model.fit_weighted`;
* :meth:`Model.kkt_violation` measures the optimality of a solution of that
  problem, so a partial optimum (GAGA Definition 4) can be checked by
  computing ``v = v*(ell(w), lam)`` and then the KKT conditions for that ``v``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import DataError

Array = NDArray[np.float64]


@dataclass
class Params:
    """Fitted parameters of a model.

    Linear models use ``coef`` (d,) and ``intercept``.  The kernel SVM uses
    ``dual_coef`` (n,), the ``a_j`` of ``f(x) = sum_j a_j y_j K(x_j, x) + b``,
    with ``X_fit``/``y_fit`` the training rows they refer to, and ``intercept``
    for ``b``.  ``extra`` holds model-specific state (a resolved kernel width).
    """

    coef: Array | None = None
    intercept: float = 0.0
    dual_coef: Array | None = None
    X_fit: Array | None = None
    y_fit: Array | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> Params:
        return Params(
            coef=None if self.coef is None else self.coef.copy(),
            intercept=float(self.intercept),
            dual_coef=None if self.dual_coef is None else self.dual_coef.copy(),
            X_fit=self.X_fit,
            y_fit=self.y_fit,
            extra=dict(self.extra),
        )


class Described:
    """``get_params`` (hyper-parameters as a plain dict) and a ``repr`` built from it."""

    def get_params(self) -> dict[str, Any]:
        """Hyper-parameters as a plain dict."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class Model(Described, ABC):
    """A convex learning model usable inside SPL.

    Subclasses register themselves in :data:`spl_bench.models.REGISTRY`.
    """

    name: str = "base"
    #: ``"regression"`` or ``"classification"`` (binary, labels -1 / +1).
    task: str = "regression"

    # ------------------------------------------------------------------ data
    def check_y(self, y: NDArray[Any]) -> Array:
        """Return ``y`` as floats; classification models require labels in {-1, +1}."""
        y = np.asarray(y, dtype=float)
        if self.task == "classification":
            labels = set(np.unique(y).tolist())
            if not labels <= {-1.0, 1.0}:
                raise DataError(
                    f"model {self.name!r} needs binary labels -1/+1, got {sorted(labels)[:10]}"
                )
        return y

    # --------------------------------------------------------------- abstract
    @abstractmethod
    def decision_function(self, params: Params, X: Array) -> Array:
        """Real-valued output ``x^T w + b`` or ``f(x)``."""

    @abstractmethod
    def losses(self, params: Params, X: Array, y: Array) -> Array:
        """Per-sample losses ``ell_i`` (with the model's scaling, e.g. C)."""

    @abstractmethod
    def regularizer(self, params: Params, n_samples: int) -> float:
        """The model's own regularization term ``R(w)`` for ``n_samples`` training rows."""

    @abstractmethod
    def fit_weighted(
        self, X: Array, y: Array, v: Array, warm: Params | None = None
    ) -> Params:
        """Solve ``min_w sum_i v_i ell_i(w) + R(w)`` (the w-step of ACS)."""

    @abstractmethod
    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        """Maximum relative violation of the KKT conditions of the v-weighted problem."""

    # --------------------------------------------------------------- derived
    def degenerate_selection(self, y: Array, v: Array) -> bool:
        """Whether the weights ``v`` leave a v-weighted problem whose fit is degenerate.

        Classification: the samples with ``v_i > 0`` hold fewer than two classes.  The
        v-weighted logistic problem then has no finite minimiser (``b`` is not penalised, so
        ``b -> ±inf`` with ``w = 0``; the model's solver stops at ``|b| = 50``), and the SVM's
        dual forces ``a = 0`` (``sum_i a_i y_i = 0``): a constant predictor either way.  Such
        a point passes every KKT check of the v-weighted problem (``docs/gaga.md``, "Degenerate
        partial optima").  Regression: no sample selected (``w = 0``).
        """
        sel = np.asarray(y)[np.asarray(v) > 0]
        if self.task == "classification":
            return bool(np.unique(sel).size < 2)
        return bool(sel.size == 0)

    def predict(self, params: Params, X: Array) -> Array:
        """Predicted target (regression) or label in {-1, +1} (classification)."""
        f = self.decision_function(params, X)
        if self.task == "classification":
            return np.where(f >= 0.0, 1.0, -1.0)
        return f

    def decision_functions(self, params_list: list[Params], X: Array) -> Array:
        """:meth:`decision_function` of several fitted parameters, shape ``(k, n_samples)``
        (models override it where the candidates can share work)."""
        return np.vstack([self.decision_function(p, X) for p in params_list])

    def predict_many(self, params_list: list[Params], X: Array) -> Array:
        """:meth:`predict` of several fitted parameters, shape ``(k, n_samples)``."""
        F = self.decision_functions(params_list, X)
        if self.task == "classification":
            return np.where(F >= 0.0, 1.0, -1.0)
        return F

    def objective(self, params: Params, X: Array, y: Array, v: Array) -> float:
        """``sum_i v_i ell_i + R(w)``, the v-weighted objective."""
        return float(np.dot(v, self.losses(params, X, y)) + self.regularizer(params, len(y)))
