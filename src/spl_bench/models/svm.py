"""Kernel SVM: ``ell_i = C max(0, 1 - y_i f(x_i))``, ``R = ||f||_H^2 / 2``.

``f(x) = sum_j a_j y_j K(x_j, x) + b`` with ``0 <= a_j <= C v_j`` (GAGA section
4.1).  Kernels: RBF ``exp(-gamma ||x - x'||^2)`` or linear; ``gamma="scale"``
means ``1 / (n_features * Var X)`` as in scikit-learn.
"""

from __future__ import annotations

import warnings

import numpy as np
import sklearn
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.svm import SVC

from spl_bench.errors import ConfigError, check_positive
from spl_bench.models import REGISTRY
from spl_bench.models.base import Array, Model, Params
from spl_bench.models.datafits import Hinge


def resolve_gamma(gamma: float | str, X: Array) -> float:
    """Numeric RBF width; ``"scale"`` is ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``."""
    if gamma == "auto":
        return 1.0 / X.shape[1]
    if gamma == "scale":
        var = float(X.var())
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    return check_positive("svm gamma", gamma)


try:  # libsvm as scikit-learn wraps it (private module: used only through libsvm_fit below)
    from sklearn.svm import _libsvm
except ImportError:  # pragma: no cover - another scikit-learn layout: SVC is used
    _libsvm = None

_FAST_LIBSVM = {"ok": _libsvm is not None}
if _libsvm is not None:
    _libsvm.set_verbosity_wrap(0)  # as SVC(verbose=False) sets before every fit


def libsvm_fit(
    X: Array, y: Array, sample_weight: Array, C: float, kernel: str, gamma: float, tol: float,
    cache_size: float = 500.0,
) -> tuple[Array, Array, float]:
    """One weighted C-SVM fit by libsvm: ``(support, dual_coef, intercept)`` as ``SVC`` gives them.

    ``y`` in {-1, +1} with both classes present; ``kernel`` is ``"rbf"``, ``"linear"`` or
    ``"precomputed"`` (``X`` is then the kernel matrix); ``sample_weight > 0`` and
    finite (the caller's checks).  ``dual_coef[k] = a_i y_i`` for ``i = support[k]``.

    ACS calls this thousands of times on small problems, where scikit-learn's
    input validation (target type, array checks) costs more than libsvm itself.
    The same libsvm routine ``SVC.fit`` calls is called here directly, with the
    arguments ``SVC.fit`` passes (classes encoded 0 / 1, signs flipped back as
    ``SVC`` does for two classes), so the result is the same to the bit
    (``tests/test_models.py``).  Both GAGA and the ACS baseline fit through
    here.  If the private module's signature ever differs, ``SVC`` is used
    instead, after one warning.
    """
    if _FAST_LIBSVM["ok"]:
        try:
            out = _libsvm.fit(
                np.ascontiguousarray(X, dtype=np.float64), (np.asarray(y) > 0).astype(np.float64),
                svm_type=0, sample_weight=np.ascontiguousarray(sample_weight, dtype=np.float64),
                class_weight=np.empty(0), kernel=kernel, C=float(C), nu=0.5, probability=0,
                degree=3, shrinking=1, tol=float(tol), cache_size=float(cache_size), coef0=0.0,
                gamma=float(gamma), epsilon=0.1, max_iter=-1, random_seed=0,
            )
            support, dual, intercept = out[0], out[3], out[4]
            return np.asarray(support, dtype=np.intp), -np.asarray(dual, dtype=float).ravel(), -float(intercept[0])
        except (TypeError, ValueError, AttributeError) as exc:  # pragma: no cover - other versions
            _FAST_LIBSVM["ok"] = False
            warnings.warn(f"direct libsvm call unavailable ({exc}); using sklearn.svm.SVC", RuntimeWarning,
                          stacklevel=2)
    est = SVC(C=C, kernel=kernel, gamma=gamma if kernel != "precomputed" else "scale", tol=tol,
              cache_size=cache_size, shrinking=True)
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        est.fit(X, y, sample_weight=sample_weight)
    return est.support_, np.asarray(est.dual_coef_, dtype=float).ravel(), float(est.intercept_[0])


@REGISTRY.register("svm")
class SVMModel(Model):
    """C-SVM with per-sample box ``C v_i`` (the SPL-weighted hinge loss)."""

    task = "classification"

    def __init__(
        self,
        C: float = 1.0,
        kernel: str = "rbf",
        gamma: float | str = 0.5,
        tol: float = 1e-7,
        cache_size: float = 500.0,
    ) -> None:
        self.C = check_positive("svm C", C)
        if kernel not in ("rbf", "linear"):
            raise ConfigError(f"svm kernel must be 'rbf' or 'linear', got {kernel!r}")
        self.kernel = kernel
        self.gamma = gamma if gamma in ("scale", "auto") else check_positive("svm gamma", gamma)
        self.tol = float(tol)
        self.cache_size = float(cache_size)
        #: the per-sample loss of ``f(x)`` (value only: the dual is solved, not the primal)
        self.datafit = Hinge(self.C)

    def get_params(self) -> dict[str, object]:
        return {"C": self.C, "kernel": self.kernel, "gamma": self.gamma}

    # ----------------------------------------------------------------- kernel
    def kernel_matrix(self, A: Array, B: Array, gamma: float) -> Array:
        """``K(A, B)`` for the configured kernel and a resolved ``gamma``."""
        if self.kernel == "linear":
            return linear_kernel(A, B)
        return rbf_kernel(A, B, gamma=gamma)

    def decision_function(self, params: Params, X: Array) -> Array:
        ay = params.dual_coef * params.y_fit
        nz = ay != 0
        if not np.any(nz):
            return np.full(X.shape[0], params.intercept)
        K = self.kernel_matrix(X, params.X_fit[nz], params.extra["gamma"])
        return K @ ay[nz] + params.intercept

    def decision_functions(self, params_list: list[Params], X: Array) -> Array:
        """All candidates' ``f(X)`` from one kernel matrix per training set and kernel width
        (GAGA's thousands of candidates would otherwise each evaluate the kernel again)."""
        out = np.empty((len(params_list), X.shape[0]))
        groups: dict[tuple[int, float], list[int]] = {}
        for i, p in enumerate(params_list):
            groups.setdefault((id(p.X_fit), float(p.extra["gamma"])), []).append(i)
        for idx in groups.values():
            first = params_list[idx[0]]
            K = self.kernel_matrix(X, first.X_fit, first.extra["gamma"])
            AY = np.vstack([params_list[i].dual_coef * params_list[i].y_fit for i in idx])
            out[idx] = AY @ K.T + np.array([params_list[i].intercept for i in idx])[:, None]
        return out

    def losses(self, params: Params, X: Array, y: Array) -> Array:
        return self.datafit.value(self.decision_function(params, X), y)

    def regularizer(self, params: Params, n_samples: int) -> float:
        ay = params.dual_coef * params.y_fit
        nz = ay != 0
        if not np.any(nz):
            return 0.0
        K = self.kernel_matrix(params.X_fit[nz], params.X_fit[nz], params.extra["gamma"])
        return float(0.5 * ay[nz] @ K @ ay[nz])

    # ------------------------------------------------------------------ solve
    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        n = X.shape[0]
        gamma = resolve_gamma(self.gamma, X)
        a = np.zeros(n)
        pos = v > 0
        b = 0.0
        if np.any(pos) and np.unique(y[pos]).size == 2:
            idx = np.flatnonzero(pos)
            Xi, vi = X[idx], v[idx]
            if not (np.isfinite(Xi).all() and np.isfinite(vi).all()):
                raise FloatingPointError("non-finite features or weights passed to the weighted SVM fit")
            support, dual, b = libsvm_fit(Xi, y[idx], vi, self.C, self.kernel, gamma, self.tol, self.cache_size)
            sv = idx[support]
            a[sv] = dual * y[sv]
            # clip tiny excursions outside the box [0, C v_i]
            a = np.clip(a, 0.0, self.C * v)
        elif np.any(pos):  # one class only: the constant classifier of that class
            b = float(np.sign(y[pos][0]))
        return Params(dual_coef=a, intercept=b, X_fit=X, y_fit=y, extra={"gamma": gamma})

    #: relative tolerance for deciding that a coefficient sits at a bound of its box
    bound_tol = 1e-8

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        """Box/margin conditions of the v-weighted SVM dual, relative to 1 (margins) and C.

        With ``g_i = 1 - y_i f(x_i)``: ``a_i = 0 => g_i <= 0``; ``a_i = C v_i =>
        g_i >= 0``; ``0 < a_i < C v_i => g_i = 0``; and ``sum_i a_i y_i = 0``.
        An index at both bounds (``v_i = 0``) is unconstrained.  A coefficient
        within ``bound_tol * C`` of a bound counts as at that bound (the box
        ``C v_i`` is itself only known to the accuracy of ``v``).
        """
        return self.kkt_from_margins(params.dual_coef, 1.0 - y * self.decision_function(params, X), y, v)

    def kkt_from_margins(self, a: Array, g: Array, y: Array, v: Array) -> float:
        """:meth:`kkt_violation` from the dual coefficients ``a`` and the margins ``g = 1 - y f(x)``.

        Solvers that already hold the margins (the exact warm-started fits) call this instead
        of evaluating the kernel expansion again.
        """
        ub = self.C * v
        scale_a = max(self.C, 1e-300)
        at_lo = a <= self.bound_tol * scale_a
        at_hi = a >= ub - self.bound_tol * scale_a
        viol = np.zeros_like(g)
        free = ~at_lo & ~at_hi
        viol[free] = np.abs(g[free])
        only_lo = at_lo & ~at_hi
        only_hi = at_hi & ~at_lo
        viol[only_lo] = np.maximum(g[only_lo], 0.0)
        viol[only_hi] = np.maximum(-g[only_hi], 0.0)
        # a coefficient outside its box [0, C v_i] is infeasible (e.g. after v shrank)
        box = np.maximum(np.maximum(a - ub, -a), 0.0) / scale_a
        viol[box > self.bound_tol] = np.maximum(viol[box > self.bound_tol], 1.0)
        eq = abs(float(a @ y)) / scale_a
        return float(max(viol.max(initial=0.0), box.max(initial=0.0), eq))
