"""LS-SVM regression and its robust variants RLSSVM and Re-LSSVM (GAGA appendix D.6, Table 7).

LS-SVM regression (Suykens et al.), with sample weights ``v_i > 0``::

    min_{w, b, e}  1/2 ||w||^2 + gamma/2 sum_i v_i e_i^2,   y_i = w^T phi(x_i) + b + e_i.   (LS)

Its optimality conditions are the linear system

    [ 0      1^T                      ] [ b     ]   [ 0 ]
    [ 1      K + diag(1 / (gamma v))  ] [ alpha ] = [ y ],                               (KKT)

with ``f(x) = sum_i alpha_i K(x, x_i) + b``.  With ``H = K + diag(1/(gamma v))``
(symmetric positive definite) it is solved by one Cholesky factorisation:
``eta = H^{-1} 1``, ``nu = H^{-1} y``, ``b = 1^T nu / 1^T eta``, ``alpha = nu - b eta``.
Rows with ``v_i = 0`` are dropped (``alpha_i = 0``).

The two robust variants of GAGA refs [48] and [49] are LS-SVMs with outlier
handling.  Their papers are not available here, so this module implements the
standard formulations their titles name (see ``docs/robust_baselines.md``):

* :class:`RLSSVMRegressor` (ref [48], "robust weighted LS-SVR based on least
  trimmed squares"): iteratively reweighted (LS) with the weights of Suykens et
  al. (2002) computed from residuals standardised by the least-trimmed-squares
  scale of the current fit;
* :class:`ReLSSVMRegressor` (ref [49], "robust LS-SVM ... with noise"): the
  truncated least-squares loss ``min(e^2, theta^2)``, i.e. (TLS)
  ``min 1/2 ||w||^2 + gamma/2 sum_i min(e_i^2, theta^2)``, minimised by
  alternating between the inlier set ``S = {i : |e_i| <= theta}`` and the LS-SVM
  fitted on ``S``; each step does not increase (TLS) and the loop stops at a
  fixed point of ``S``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import norm
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.utils.validation import check_is_fitted, validate_data

from spl_bench.errors import ConfigError, check_positive
from spl_bench.methods.robust._grid import GridMethod

Array = np.ndarray

#: Weight of a sample beyond ``c2`` robust standard deviations (Suykens et al. 2002).
MIN_WEIGHT = 1e-4


SIGMA_UNITS = ("absolute", "scale")


def lssvm_kernel(A: Array, B: Array, kernel: str, sigma: float, scale: float = 1.0) -> Array:
    """``K(A, B)``: RBF ``exp(-||a - b||^2 / (2 sigma^2 scale))`` or linear ``a^T b``."""
    if kernel == "rbf":
        return rbf_kernel(A, B, gamma=1.0 / (2.0 * sigma**2 * scale))
    if kernel == "linear":
        return linear_kernel(A, B)
    raise ConfigError(f"LS-SVM kernel must be 'rbf' or 'linear', got {kernel!r}")


def solve_lssvm(K: Array, y: Array, gamma: float, v: Array | None = None) -> tuple[Array, float]:
    """Solve (KKT) of the v-weighted LS-SVM; return ``(alpha, b)`` for all rows.

    Parameters
    ----------
    K : (n, n) array
        Kernel matrix of the training rows.
    y : (n,) array
        Targets.
    gamma : float
        Regularisation constant of (LS).
    v : (n,) array, optional
        Non-negative sample weights (default 1); rows with ``v_i = 0`` get ``alpha_i = 0``.
    """
    n = len(y)
    v = np.ones(n) if v is None else np.asarray(v, dtype=float)
    if np.any(v < 0) or not np.all(np.isfinite(v)):
        raise ValueError("LS-SVM sample weights must be finite and non-negative")
    keep = np.flatnonzero(v > 0)
    alpha = np.zeros(n)
    if keep.size == 0:
        return alpha, float(np.mean(y))
    H = K[np.ix_(keep, keep)].copy()
    H[np.diag_indices_from(H)] += 1.0 / (gamma * v[keep])
    factor = cho_factor(H, lower=True, check_finite=False)
    rhs = np.column_stack([np.ones(keep.size), y[keep]])
    eta, nu = cho_solve(factor, rhs, check_finite=False).T
    b = float(nu.sum() / eta.sum())
    alpha[keep] = nu - b * eta
    return alpha, b


def lts_scale(r: Array, h_fraction: float) -> float:
    """Least-trimmed-squares scale of residuals ``r``, consistent at the normal law.

    The mean of the ``h = ceil(h_fraction n)`` smallest ``r_i^2`` divided by the
    normal consistency factor ``E[Z^2 | |Z| <= z] = 1 - 2 z phi(z) / q`` with
    ``q = h / n`` and ``z = Phi^{-1}((1 + q) / 2)`` (Rousseeuw and Leroy 1987).
    """
    n = len(r)
    h = min(n, max(1, int(np.ceil(h_fraction * n))))
    r2 = np.sort(np.asarray(r, dtype=float) ** 2)[:h]
    q = h / n
    if q >= 1.0:
        return float(np.sqrt(r2.mean()))
    z = norm.ppf((1.0 + q) / 2.0)
    factor = 1.0 - 2.0 * z * norm.pdf(z) / q
    return float(np.sqrt(r2.mean() / factor))


def suykens_weights(u: Array, c1: float = 2.5, c2: float = 3.0) -> Array:
    """Weights of the weighted LS-SVM (Suykens et al. 2002) for standardised residuals ``u``.

    ``1`` for ``|u| <= c1``, ``(c2 - |u|) / (c2 - c1)`` for ``c1 < |u| <= c2``,
    ``1e-4`` beyond ``c2``; never below ``1e-4``, so no row gets weight zero.
    """
    a = np.abs(np.asarray(u, dtype=float))
    w = np.where(a <= c1, 1.0, np.where(a <= c2, (c2 - a) / (c2 - c1), MIN_WEIGHT))
    return np.maximum(w, MIN_WEIGHT)


class LSSVMRegressor(RegressorMixin, BaseEstimator):
    """LS-SVM regression (LS) with ``v = 1``.

    Parameters
    ----------
    gamma : float
        Regularisation constant ``gamma`` of (LS) (larger fits the data more closely).
    sigma : float
        RBF width: ``K(x, x') = exp(-||x - x'||^2 / (2 sigma^2 s))``.
    kernel : {"rbf", "linear"}
        Kernel; the linear LS-SVM is ridge regression with ``alpha = 1 / gamma``.
    sigma_units : {"absolute", "scale"}
        ``s = 1`` (absolute width) or ``s = n_features * Var(X_train)``, which makes
        ``sigma`` scale-free like scikit-learn's ``gamma="scale"`` (which is
        ``sigma = 1/sqrt(2)`` here).
    """

    def __init__(
        self, gamma: float = 1.0, sigma: float = 1.0, kernel: str = "rbf", sigma_units: str = "absolute"
    ) -> None:
        self.gamma = gamma
        self.sigma = sigma
        self.kernel = kernel
        self.sigma_units = sigma_units

    # ------------------------------------------------------------ helpers
    def _check_params(self) -> tuple[float, float]:
        gamma = check_positive("LS-SVM gamma", self.gamma)
        sigma = check_positive("LS-SVM sigma", self.sigma)
        if self.kernel not in ("rbf", "linear"):
            raise ConfigError(f"LS-SVM kernel must be 'rbf' or 'linear', got {self.kernel!r}")
        if self.sigma_units not in SIGMA_UNITS:
            raise ConfigError(f"LS-SVM sigma_units must be one of {SIGMA_UNITS}, got {self.sigma_units!r}")
        return gamma, sigma

    def _gram(self, A: Array, B: Array) -> Array:
        return lssvm_kernel(A, B, self.kernel, float(self.sigma), self.width_scale_)

    def _fit_weights(self, K: Array, y: Array, v: Array | None) -> Array:
        """Solve the weighted system, store ``dual_coef_``/``intercept_``; return training fit."""
        self.dual_coef_, self.intercept_ = solve_lssvm(K, y, float(self.gamma), v)
        return K @ self.dual_coef_ + self.intercept_

    def _fit_robust(self, K: Array, y: Array, f: Array) -> None:
        """Robust refinement of a plain fit ``f`` (none for the plain LS-SVM)."""
        self.n_iter_ = 0

    # ---------------------------------------------------------------- api
    def fit(self, X: ArrayLike, y: ArrayLike) -> LSSVMRegressor:
        """Fit the LS-SVM on ``(X, y)``."""
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        y = np.asarray(y, dtype=float)
        self.X_fit_ = X
        var = float(X.var())
        self.width_scale_ = X.shape[1] * var if self.sigma_units == "scale" and var > 0 else 1.0
        K = self._gram(X, X)
        self.sample_weight_ = np.ones(len(y))
        f = self._fit_weights(K, y, None)
        self._fit_robust(K, y, f)
        return self

    def predict(self, X: ArrayLike) -> Array:
        """``f(x) = sum_i alpha_i K(x, x_i) + b``."""
        check_is_fitted(self, "dual_coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        nz = self.dual_coef_ != 0
        if not np.any(nz):
            return np.full(X.shape[0], self.intercept_)
        return self._gram(X, self.X_fit_[nz]) @ self.dual_coef_[nz] + self.intercept_


class RLSSVMRegressor(LSSVMRegressor):
    """Robust weighted LS-SVR with a least-trimmed-squares scale (GAGA ref [48], reconstructed).

    Starting from the plain LS-SVM, repeat: residuals ``r = y - f(X)``; robust
    scale ``s = lts_scale(r, h_fraction)``; weights ``v = suykens_weights(r / s)``;
    refit (LS) with ``v``; until ``max |v_new - v| <= tol`` or ``max_iter``.

    Parameters
    ----------
    gamma, sigma, kernel, sigma_units
        As :class:`LSSVMRegressor` (Table 7's ``gamma_1`` and ``sigma``).
    h_fraction : float in (0, 1]
        Fraction of smallest squared residuals the LTS scale keeps (0.5: highest breakdown).
    c1, c2 : float
        Cut-offs of the weight function, ``0 < c1 < c2``.
    max_iter : int
        Maximum number of reweighting steps.
    tol : float
        Stop when the weights change by at most ``tol``.
    """

    def __init__(
        self,
        gamma: float = 1.0,
        sigma: float = 1.0,
        kernel: str = "rbf",
        sigma_units: str = "absolute",
        h_fraction: float = 0.5,
        c1: float = 2.5,
        c2: float = 3.0,
        max_iter: int = 10,
        tol: float = 1e-6,
    ) -> None:
        super().__init__(gamma=gamma, sigma=sigma, kernel=kernel, sigma_units=sigma_units)
        self.h_fraction = h_fraction
        self.c1 = c1
        self.c2 = c2
        self.max_iter = max_iter
        self.tol = tol

    def _check_params(self) -> tuple[float, float]:
        out = super()._check_params()
        if not 0.0 < float(self.h_fraction) <= 1.0:
            raise ConfigError(f"RLSSVM h_fraction must be in (0, 1], got {self.h_fraction!r}")
        if not 0.0 < float(self.c1) < float(self.c2):
            raise ConfigError(f"RLSSVM needs 0 < c1 < c2, got c1={self.c1!r}, c2={self.c2!r}")
        return out

    def _fit_robust(self, K: Array, y: Array, f: Array) -> None:
        v = np.ones(len(y))
        self.n_iter_ = 0
        self.converged_ = False
        for _ in range(int(self.max_iter)):
            r = y - f
            s = lts_scale(r, float(self.h_fraction))
            if not s > 0:  # an exact fit of more than h rows: nothing to down-weight
                self.converged_ = True
                break
            v_new = suykens_weights(r / s, float(self.c1), float(self.c2))
            if np.max(np.abs(v_new - v)) <= float(self.tol):
                self.converged_ = True
                break
            v = v_new
            f = self._fit_weights(K, y, v)
            self.n_iter_ += 1
        self.sample_weight_ = v
        self.scale_ = lts_scale(y - f, float(self.h_fraction))


class ReLSSVMRegressor(LSSVMRegressor):
    """LS-SVM with the truncated least-squares loss (TLS) (GAGA ref [49], reconstructed).

    Parameters
    ----------
    gamma, sigma, kernel, sigma_units
        As :class:`LSSVMRegressor` (Table 7's ``gamma_2``).
    theta : float
        Truncation point: a residual beyond ``theta`` costs ``theta^2`` (Table 7's ``theta``).
    max_iter : int
        Maximum number of inlier-set updates.
    """

    def __init__(
        self,
        gamma: float = 1.0,
        sigma: float = 1.0,
        kernel: str = "rbf",
        sigma_units: str = "absolute",
        theta: float = 1.0,
        max_iter: int = 100,
    ) -> None:
        super().__init__(gamma=gamma, sigma=sigma, kernel=kernel, sigma_units=sigma_units)
        self.theta = theta
        self.max_iter = max_iter

    def _check_params(self) -> tuple[float, float]:
        out = super()._check_params()
        check_positive("Re-LSSVM theta", self.theta)
        return out

    def tls_objective(self, X: ArrayLike, y: ArrayLike) -> float:
        """Value of (TLS) at the fitted model on its training rows ``(X, y)``."""
        check_is_fitted(self, "dual_coef_")
        K = self._gram(self.X_fit_, self.X_fit_)
        r = np.asarray(y, dtype=float) - self.predict(X)
        reg = 0.5 * float(self.dual_coef_ @ K @ self.dual_coef_)
        return reg + 0.5 * float(self.gamma) * float(np.minimum(r**2, float(self.theta) ** 2).sum())

    def _fit_robust(self, K: Array, y: Array, f: Array) -> None:
        theta = float(self.theta)
        inlier = np.abs(y - f) <= theta
        self.n_iter_ = 0
        self.converged_ = False
        for _ in range(int(self.max_iter)):
            f = self._fit_weights(K, y, inlier.astype(float))
            self.n_iter_ += 1
            new = np.abs(y - f) <= theta
            if np.array_equal(new, inlier):
                self.converged_ = True
                break
            inlier = new
        self.inlier_ = inlier
        self.sample_weight_ = inlier.astype(float)


# ----------------------------------------------------------------- runner adapters
class _LSSVMMethodBase(GridMethod):
    """Common part of the LS-SVM adapters: fixed keywords and the training-size cap.

    An LS-SVM costs ``O(n^2)`` memory and ``O(n^3)`` time per solve, so with
    ``max_train`` set, every candidate is fitted on the same random subset of at
    most ``max_train`` training rows (drawn with ``random_state``).
    """

    grid_names: tuple[str, ...] = ("gamma", "sigma")
    task = "regression"
    estimator_class: type[LSSVMRegressor] = LSSVMRegressor
    fixed_names: tuple[str, ...] = ("kernel", "sigma_units")

    def make_estimator(self, **params: Any) -> LSSVMRegressor:
        fixed = {name: getattr(self, name) for name in self.fixed_names}
        return self.estimator_class(**fixed, **params)

    def _fit(self, X: Array, y: Array) -> None:
        n = len(y)
        self.n_fit_rows_ = n
        if self.max_train is not None and n > int(self.max_train):
            if int(self.max_train) < 2:
                raise ConfigError(f"max_train must be at least 2, got {self.max_train!r}")
            rng = np.random.default_rng(self.random_state)
            rows = np.sort(rng.choice(n, int(self.max_train), replace=False))
            X, y = X[rows], y[rows]
            self.n_fit_rows_ = len(rows)
        super()._fit(X, y)

    def run_info(self) -> dict[str, Any]:
        return {**super().run_info(), "n_fit_rows": int(self.n_fit_rows_)}


class LSSVMMethod(_LSSVMMethodBase):
    """Runner adapter: plain LS-SVM, one candidate per ``(gamma, sigma)``; ``sp`` ignored."""

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        gamma: float | list[float] = (1.0,),
        sigma: float | list[float] = (1.0,),
        kernel: str = "rbf",
        sigma_units: str = "scale",
        max_train: int | None = 2000,
        random_state: int = 0,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.gamma = gamma
        self.sigma = sigma
        self.kernel = kernel
        self.sigma_units = sigma_units
        self.max_train = max_train
        self.random_state = random_state


class RLSSVMMethod(_LSSVMMethodBase):
    """Runner adapter: :class:`RLSSVMRegressor`, one candidate per ``(gamma, sigma)``."""

    estimator_class = RLSSVMRegressor
    fixed_names = ("kernel", "sigma_units", "h_fraction", "c1", "c2", "max_iter")

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        gamma: float | list[float] = (1.7, 1.8, 1.9),
        sigma: float | list[float] = (0.5, 0.7, 0.8, 1.0),
        kernel: str = "rbf",
        sigma_units: str = "scale",
        h_fraction: float = 0.5,
        c1: float = 2.5,
        c2: float = 3.0,
        max_iter: int = 10,
        max_train: int | None = 2000,
        random_state: int = 0,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.gamma = gamma
        self.sigma = sigma
        self.kernel = kernel
        self.sigma_units = sigma_units
        self.h_fraction = h_fraction
        self.c1 = c1
        self.c2 = c2
        self.max_iter = max_iter
        self.max_train = max_train
        self.random_state = random_state

    def run_info(self) -> dict[str, Any]:
        est = self.candidate_models_[self.selected_]
        return {
            **super().run_info(),
            "reweight_iters": int(est.n_iter_),
            "reweight_converged": bool(est.converged_),
        }


class ReLSSVMMethod(_LSSVMMethodBase):
    """Runner adapter: :class:`ReLSSVMRegressor`, one candidate per ``(gamma, sigma, theta)``."""

    grid_names = ("gamma", "sigma", "theta")
    estimator_class = ReLSSVMRegressor
    fixed_names = ("kernel", "sigma_units", "max_iter")

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        gamma: float | list[float] = (1.7, 1.8, 1.9),
        sigma: float | list[float] = (0.7,),
        theta: float | list[float] = (0.2, 0.4, 0.6, 0.8, 1.0),
        kernel: str = "rbf",
        sigma_units: str = "scale",
        max_iter: int = 100,
        max_train: int | None = 2000,
        random_state: int = 0,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.gamma = gamma
        self.sigma = sigma
        self.theta = theta
        self.kernel = kernel
        self.sigma_units = sigma_units
        self.max_iter = max_iter
        self.max_train = max_train
        self.random_state = random_state

    def run_info(self) -> dict[str, Any]:
        est = self.candidate_models_[self.selected_]
        return {
            **super().run_info(),
            "inlier_updates": int(est.n_iter_),
            "n_outliers": int((~est.inlier_).sum()),
        }
