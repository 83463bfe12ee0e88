"""Robust SVM under label noise by kernel-matrix correction (GAGA Table 8; ref [50], Biggio et al. 2011).

The SVM dual maximises ``sum_i a_i - 1/2 sum_ij a_i a_j y_i y_j K_ij`` over
``0 <= a_i <= C``, ``sum_i a_i y_i = 0``.  If every observed label is the true
label flipped independently with probability ``mu`` (``y_i = eps_i t_i`` with
``P(eps_i = -1) = mu``), the expected dual Hessian is

    E[eps_i eps_j] t_i t_j K_ij = t_i t_j K_ij (1 - 4 mu (1 - mu))   (i != j),
                                  t_i t_j K_ij                        (i == j),

because ``E[eps_i] = 1 - 2 mu`` and ``eps_i^2 = 1``.  Biggio et al. train the SVM
on this expected Hessian, i.e. with the corrected kernel matrix

    K' = K o M,   M = (1 - 4 mu (1 - mu)) 1 1^T + 4 mu (1 - mu) I,                   (KC)

(a shrunk kernel plus a diagonal term, positive semi-definite for ``mu <= 1/2``),
which limits the influence of any single (possibly flipped) label.  New points
differ from every training row, so the decision function is
``f(x) = (1 - 4 mu (1 - mu)) sum_j a_j y_j K(x, x_j) + b``.  ``mu = 0`` is the plain
SVM.  The corrected matrix goes to scikit-learn's ``SVC(kernel="precomputed")``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.svm import SVC
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from spl_bench.errors import ConfigError, DataError, check_positive
from spl_bench.methods.robust._grid import GridMethod

Array = np.ndarray


def flip_correction(K: Array, mu: float) -> Array:
    """The corrected training kernel matrix ``K'`` of (KC) for flip probability ``mu``."""
    if not 0.0 <= mu < 0.5:
        raise ConfigError(f"label-flip probability mu must be in [0, 0.5), got {mu!r}")
    shrink = 1.0 - 4.0 * mu * (1.0 - mu)
    Kc = shrink * np.asarray(K, dtype=float)
    Kc[np.diag_indices_from(Kc)] = np.diag(K)
    return Kc


class RobustSVC(ClassifierMixin, BaseEstimator):
    """Binary SVM with Biggio et al.'s label-noise kernel correction (KC).

    Parameters
    ----------
    C : float
        Box constraint of the SVM dual.
    gamma : float or "scale"
        RBF width, ``K(x, x') = exp(-gamma ||x - x'||^2 / s)`` (GAGA section 5 with ``s = 1``);
        ``"scale"`` is ``gamma = 1`` with ``s = n_features Var X`` (scikit-learn's ``"scale"``).
    gamma_units : {"absolute", "scale"}
        ``s = 1`` or ``s = n_features Var(X_train)`` (scale-free ``gamma``).
    mu : float in [0, 0.5)
        Assumed label-flip probability; ``0`` gives the plain SVM.
    kernel : {"rbf", "linear"}
        Base kernel ``K``.
    tol : float
        Stopping tolerance of libsvm.
    """

    def __init__(
        self,
        C: float = 1.0,
        gamma: float | str = "scale",
        mu: float = 0.1,
        kernel: str = "rbf",
        gamma_units: str = "absolute",
        tol: float = 1e-6,
    ) -> None:
        self.C = C
        self.gamma = gamma
        self.mu = mu
        self.kernel = kernel
        self.gamma_units = gamma_units
        self.tol = tol

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _kernel(self, A: Array, B: Array) -> Array:
        if self.kernel == "linear":
            return linear_kernel(A, B)
        return rbf_kernel(A, B, gamma=self.gamma_)

    def fit(self, X: ArrayLike, y: ArrayLike) -> RobustSVC:
        """Train the SVM on the corrected kernel matrix (KC)."""
        C = check_positive("robust_svm C", self.C)
        mu = float(self.mu)
        if self.kernel not in ("rbf", "linear"):
            raise ConfigError(f"robust_svm kernel must be 'rbf' or 'linear', got {self.kernel!r}")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise DataError(
                "Only binary classification is supported. "
                f"RobustSVC got {len(self.classes_)} class(es)."
            )
        if self.gamma_units not in ("absolute", "scale"):
            raise ConfigError(f"robust_svm gamma_units must be 'absolute' or 'scale', got {self.gamma_units!r}")
        var = float(X.var())
        s = X.shape[1] * var if var > 0 else 1.0
        if self.gamma == "scale":
            self.gamma_ = 1.0 / s
        else:
            g = check_positive("robust_svm gamma", self.gamma)
            self.gamma_ = g / s if self.gamma_units == "scale" else g
        t = np.where(y == self.classes_[1], 1.0, -1.0)
        self.shrink_ = 1.0 - 4.0 * mu * (1.0 - mu)
        K = flip_correction(self._kernel(X, X), mu)
        svc = SVC(C=C, kernel="precomputed", tol=float(self.tol)).fit(K, t)
        sv = svc.support_
        self.X_fit_ = X[sv]
        self.dual_coef_ = np.asarray(svc.dual_coef_, dtype=float).ravel()  # a_j y_j of the SVs
        self.support_ = sv
        self.intercept_ = float(svc.intercept_[0])
        return self

    def decision_function(self, X: ArrayLike) -> Array:
        """``f(x) = (1 - 4 mu (1 - mu)) sum_j a_j y_j K(x, x_j) + b`` (positive: ``classes_[1]``)."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.shrink_ * (self._kernel(X, self.X_fit_) @ self.dual_coef_) + self.intercept_

    def predict(self, X: ArrayLike) -> Array:
        """Label ``classes_[1]`` where ``f(x) >= 0``, else ``classes_[0]``."""
        f = self.decision_function(X)
        return self.classes_[(f >= 0).astype(int)]


class RobustSVMMethod(GridMethod):
    """Runner adapter: one :class:`RobustSVC` per ``(C, gamma, mu)`` of the grid.

    ``C=None`` / ``gamma=None`` take the SVM model's ``model_params`` (``gamma`` then
    in the model's absolute units); ``sp`` is ignored.
    Labels are the protocol's -1 / +1, so predictions are -1 / +1.
    """

    grid_names = ("C", "gamma", "mu")
    model_param_names = {"C": "C", "gamma": "gamma"}
    task = "classification"

    def __init__(
        self,
        model: str = "svm",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        C: float | list[float] | None = None,
        gamma: float | str | list[float] | None = None,
        mu: float | list[float] = (0.05, 0.1, 0.2, 0.3),
        kernel: str = "rbf",
        gamma_units: str = "absolute",
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.C = C
        self.gamma = gamma
        self.mu = mu
        self.kernel = kernel
        self.gamma_units = gamma_units

    def default_value(self, name: str) -> Any:
        mp = self.model_params or {}
        if name == "gamma" and "gamma" not in mp:
            return "scale"
        if name == "C" and "C" not in mp:
            return 1.0
        return super().default_value(name)

    def make_estimator(self, **params: Any) -> RobustSVC:
        return RobustSVC(kernel=self.kernel, gamma_units=self.gamma_units, **params)
