"""Inner (w-step) solvers of the ACS baseline: the model's own, or GAGA's exact ones.

ACS (:mod:`spl_bench.methods.acs`) alternates the closed-form v-step with the
v-weighted fit ``w = argmin_w sum_i v_i ell_i(w) + R(w)``.  It talks to that fit
through three calls, ``fit_weighted(X, y, v, warm)``, ``losses(params, X, y)`` and
``kkt_violation(params, X, y, v)`` (the :class:`~spl_bench.models.Model` interface),
so an *inner solver* is anything with those three methods:

``model``
    the model itself: libsvm through scikit-learn's wrapper for the SVM (a cold fit
    at every ACS iteration: libsvm cannot warm-start), scikit-learn's coordinate
    descent for the lasso and the logistic regression.  The paper's baseline.
``exact``
    the exact warm-started solvers GAGA's warm starts use (``spl_bench.gaga.svm.inner``,
    ``spl_bench.gaga.glm.inner``):
    :class:`ExactSVMFits` (``WeightedSVMDual`` on the precomputed kernel) and
    :class:`ExactLassoFits` (``weighted_lasso``); the logistic regression keeps the
    model's solver (GAGA has no exact solver for it).  With an RBF kernel a fit whose
    guess-and-check gives up is solved exactly at the sets of libsvm's solution, as GAGA's
    warm starts do (``WeightedSVMDual.libsvm_start``).
``hybrid``
    ``exact``, except that such an RBF fit is libsvm's solution (to its tolerance), with
    guess-and-check's products by numpy's gathers: the route of the rows made before this
    option existed (the ``exact`` of then), bit for bit.  On the Table 2
    pendigits cells about 90 % of the fits gave up, and libsvm's inexact steps kept ACS from
    converging at some ages (docs/acs.md).  MOSPL's refits use it (:mod:`spl_bench.methods.mospl`).

Both reach the optimum of the same v-weighted problem (up to libsvm's stopping
tolerance), so ACS reaches the same partial optima (``tests/test_acs.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import ConfigError
from spl_bench.gaga.core.columns import ColumnGroups
from spl_bench.gaga.glm.glm_system import GLMDesign
from spl_bench.gaga.glm.inner import weighted_lasso
from spl_bench.gaga.svm.acs_skip import svm_jump, svm_state
from spl_bench.gaga.svm.inner import WeightedSVMDual, low_rank_factor
from spl_bench.models import Model, Params
from spl_bench.models.glm import GLMModel
from spl_bench.models.lasso import LassoModel
from spl_bench.models.svm import SVMModel, libsvm_fit, resolve_gamma
from spl_bench.sp import SPRegularizer

Array = NDArray[np.float64]

#: values of the ACS option ``inner_solver``
INNER_SOLVERS = ("model", "exact", "hybrid")


class WeightedFits(Protocol):
    """What ACS needs of its w-step (a :class:`~spl_bench.models.Model` qualifies)."""

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params: ...

    def losses(self, params: Params, X: Array, y: Array) -> Array: ...

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float: ...


def make_inner_solver(name: str, model: Model, X: Array, y: Array, distant_starts: bool = False,
                      ) -> tuple[WeightedFits, str]:
    """The inner solver ``name`` for ``model`` on the training rows ``(X, y)``, and the
    name of the solver actually used (``exact`` falls back to ``model`` for a smooth GLM, the
    logistic regression, with fewer than ``GLMDesign.refine_min_dim`` unknowns: its Newton-Cholesky
    is exact there and no faster route exists).  ``distant_starts``: the fits' warm starts are far
    from their answers (MOSPL's refit chain), so the smooth GLM fits check each refined Newton step
    against the gradient (``GLMDesign.newton_step_check``)."""
    if name not in INNER_SOLVERS:
        raise ConfigError(f"ACS inner_solver must be one of {INNER_SOLVERS}, got {name!r}")
    if name in ("exact", "hybrid"):
        if isinstance(model, SVMModel):
            return ExactSVMFits(model, X, y, libsvm_start=name == "exact"), name
        if isinstance(model, LassoModel):
            return ExactLassoFits(model, X, y), "exact"
        if isinstance(model, GLMModel) and GLMDesign(model, X, y).newton_fit_applies():
            return ExactGLMFits(model, X, y, step_check=distant_starts), "exact"
    return model, "model"


def solver_info(fits: WeightedFits) -> dict[str, Any]:
    """Counters of an exact solver for the results file (empty for the model's solver)."""
    info = getattr(fits, "info", None)
    return info() if callable(info) else {}


# ----------------------------------------------------------------------------- SVM
def svm_kkt_from_margins(model: SVMModel, a: Array, g: Array, y: Array, v: Array) -> float:
    """:meth:`SVMModel.kkt_violation` from the margins ``g = 1 - y f(x)`` (the exact solver returns them)."""
    return model.kkt_from_margins(a, g, y, v)


class _ACSDual(WeightedSVMDual):
    """:class:`WeightedSVMDual` whose slow exact fallback is used only where it is cheap.

    When its guessed sets do not settle, ``WeightedSVMDual.fit`` falls back to a feasible
    primal active-set method (``_active_set_qp``) that changes one bound per iteration and
    factorises the KKT matrix of the free set afresh each time.  With a linear kernel the free
    set has at most ``d + 1`` samples (rank ``Q <= d``; guess-and-check is singular there), so
    that is cheap; with an RBF kernel it is not (hundreds of free samples, one bound change and
    one new factorisation per iteration, hundreds of iterations per fallback).  With an RBF
    kernel the step is solved exactly at the sets of libsvm's solution instead
    (``libsvm_start``, set by :class:`ExactSVMFits`), or with ``libsvm_start`` off
    (``inner_solver=hybrid``) fitted by libsvm, as the model's solver would.
    """

    libsvm_start = False

    def __init__(self, Q: Array, y: Array, duplicates: NDArray[np.intp] | None, qp_fallback: bool,
                 factor: Array | None = None) -> None:
        super().__init__(Q, y, duplicates=duplicates, factor=factor)
        self.qp_fallback = qp_fallback

    def _active_set_qp(self, u: Array, a0: Array) -> tuple[Array, float, Array] | None:
        if not self.qp_fallback:
            return None
        return super()._active_set_qp(u, a0)  # type: ignore[misc]


class ExactSVMFits:
    """The v-weighted SVM dual solved exactly, warm-started (GAGA's ACS step).

    ``WeightedSVMDual`` on the kernel of the training rows, computed once: each
    ACS iteration starts from the free / upper-bound sets of the previous iterate
    (also across ages: ACS starts each age from the previous age's solution) and
    keeps the factorisation of the KKT matrix while the free set holds.  Where
    guess-and-check gives up (a singular system, more than 30 set changes) with an RBF
    kernel, libsvm's solution (tolerance 1e-7) is solved exactly at its sets
    (``libsvm_start``; on the Table 2 pendigits cells that is most fits); where that
    fails too or the solver cannot start (no previous fit: the first fit at ``v = 1``),
    the step is fitted by libsvm on the precomputed kernel, as the model's solver would.
    ``libsvm_start=False`` (``inner_solver=hybrid``) skips the exact solve of libsvm's
    sets: every give-up is then libsvm's point, and guess-and-check's products with rows of
    Q are numpy's (``compiled_rows`` off), as in the rows made before it existed, to the bit.
    With a linear kernel the
    low-rank routes come first: the warm-started active-set method in ``(w, b)``
    coordinates (also from a cold start, for the first fit), HiGHS, then the solver's
    own exact fallback (:class:`_ACSDual`).  Duplicated samples
    (identical ``x`` and ``y``) are merged in the factorisations and share their
    ``a`` equally (only the sum is determined; ``f`` is the same).

    The margins ``g = 1 - y f(x)`` of the latest fit are kept, so the losses and
    the KKT check of that fit cost nothing (the model's evaluate the kernel
    expansion again).
    """

    def __init__(self, model: SVMModel, X: Array, y: Array, libsvm_start: bool = True) -> None:
        self.model = model
        self.X, self.y = X, y
        self.C = model.C
        self.gamma = resolve_gamma(model.gamma, X)
        self.K = np.ascontiguousarray(model.kernel_matrix(X, X, self.gamma))
        self.Q = np.ascontiguousarray(self.K * np.outer(y, y))
        _, dup, counts = np.unique(np.column_stack([X, y]), axis=0, return_inverse=True,
                                   return_counts=True)
        self.duplicates = np.asarray(dup).ravel() if np.any(counts > 1) else None
        # the exact fallback of the dual solver only where its free sets are small (linear kernel)
        self.dual = _ACSDual(self.Q, y, self.duplicates, qp_fallback=model.kernel == "linear",
                             factor=low_rank_factor(model.kernel, X, y))
        self.dual.libsvm_start = libsvm_start
        # hybrid (libsvm_start off) is the former route to the bit, numpy's products included: MOSPL's
        # refits use it, and MOSPL picks among 149 near-tied candidates, where rounding can matter
        self.dual.compiled_rows = libsvm_start
        self._last: tuple[Array, float, Array] | None = None  # (a, b, g) of the latest fit
        self.n_fits = 0
        self.n_libsvm = 0

    def info(self) -> dict[str, Any]:
        return {"inner_fits": self.n_fits, "inner_libsvm_fits": self.n_libsvm,
                "inner_libsvm_starts": self.dual.n_libsvm_starts}

    def _params(self, a: Array, b: float, g: Array | None = None) -> Params:
        if g is None:
            g = 1.0 - self.Q @ a - self.y * b
        self._last = (a, b, g)
        return Params(dual_coef=a, intercept=b, X_fit=self.X, y_fit=self.y, extra={"gamma": self.gamma})

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        if X is not self.X:  # pragma: no cover - ACS fits on its training rows only
            return self.model.fit_weighted(X, y, v, warm=warm)
        self.n_fits += 1
        n = len(y)
        idx = np.flatnonzero(v > 0)
        if idx.size == 0 or np.unique(y[idx]).size < 2:
            # as the model: nothing to fit, or one class only (the constant classifier)
            b = float(np.sign(y[idx][0])) if idx.size else 0.0
            return self._params(np.zeros(n), b)
        if warm is not None and warm.dual_coef is not None and warm.X_fit is self.X:
            out = self.dual.fit(self.C * v, warm.dual_coef)
        else:  # exact from a cold start with a linear kernel (None otherwise)
            out = self.dual.fit_cold(self.C * v)
        if out is not None:
            return self._params(out[0], out[1], out[2])
        self.n_libsvm += 1
        K = self.K if idx.size == n else self.K[np.ix_(idx, idx)]
        support, dual, b = libsvm_fit(K, y[idx], v[idx], self.C, "precomputed", 0.0, self.model.tol,
                                      self.model.cache_size)
        a = np.zeros(n)
        sv = idx[support]
        a[sv] = dual * y[sv]
        return self._params(np.clip(a, 0.0, self.C * v), float(b))

    def acs_affine_state(self, params: Params, sp: SPRegularizer, lam: float) -> tuple[Array, Array] | None:
        """The affine state of the latest fit for :class:`~spl_bench.gaga.core.acs_skip.AffineSkip`
        (:func:`~spl_bench.gaga.svm.acs_skip.svm_state`, as GAGA's warm starts use it)."""
        return svm_state(self.dual, self._last, params.dual_coef, self.C, sp, lam)

    def acs_jump_to(self, x: Array, q: Array) -> Params:
        """Params at an extrapolated state of :meth:`acs_affine_state`."""
        return self._params(*svm_jump(self.dual, x, q, self.C))

    def _margins(self, params: Params) -> Array:
        last = self._last
        if last is not None and params.dual_coef is last[0] and params.intercept == last[1]:
            return last[2]
        return 1.0 - self.Q @ params.dual_coef - self.y * params.intercept

    def _own(self, params: Params, X: Array) -> bool:
        return X is self.X and params.X_fit is self.X and params.dual_coef is not None

    def losses(self, params: Params, X: Array, y: Array) -> Array:
        if not self._own(params, X):
            return self.model.losses(params, X, y)
        return self.model.datafit.of_margin(self._margins(params))

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        if not self._own(params, X):
            return self.model.kkt_violation(params, X, y, v)
        return svm_kkt_from_margins(self.model, params.dual_coef, self._margins(params), y, v)


# --------------------------------------------------------------------------- lasso
class _ModelMeasures:
    """Losses and KKT checks of an exact inner solver: the model's (cheap next to the fits)."""

    model: Model

    def losses(self, params: Params, X: Array, y: Array) -> Array:
        return self.model.losses(params, X, y)

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        return self.model.kkt_violation(params, X, y, v)


class ExactLassoFits(_ModelMeasures):
    """The v-weighted lasso solved exactly by GAGA's warm-started active-set method.

    ``weighted_lasso`` (``spl_bench.gaga.glm.inner``) from the previous iterate's
    coefficients; where it does not converge the step falls back to the model's
    coordinate descent.  Losses and KKT checks are the model's (cheap here).
    """

    def __init__(self, model: LassoModel, X: Array, y: Array) -> None:
        self.model = model
        self.X, self.y = X, y
        self.lev = model.penalty_level(len(y))
        self.merge = ColumnGroups.find(X)  # duplicated columns merged, as on GAGA's path
        self.Xr = X if self.merge.trivial else np.ascontiguousarray(X[:, self.merge.keep])
        self.n_fits = 0
        self.n_fallbacks = 0
        self.counts: dict[str, int] = {}  # the fits made with degenerate pivots ("pivoted")

    def info(self) -> dict[str, Any]:
        return {"inner_fits": self.n_fits, "inner_fallbacks": self.n_fallbacks,
                "inner_pivoted": self.counts.get("pivoted", 0),
                "duplicate_columns": int(self.merge.group.size - self.merge.keep.size)}

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        if X is not self.X:  # pragma: no cover - ACS fits on its training rows only
            return self.model.fit_weighted(X, y, v, warm=warm)
        self.n_fits += 1
        d = X.shape[1]
        if not np.any(v > 0):
            return Params(coef=np.zeros(d))
        w0 = np.zeros(self.Xr.shape[1]) if warm is None or warm.coef is None else self.merge.reduce(warm.coef)
        w = weighted_lasso(self.Xr, y, v, self.lev, w0, counts=self.counts)
        if w is not None:
            return Params(coef=w if self.merge.trivial else self.merge.expand(w))
        self.n_fallbacks += 1
        return self.model.fit_weighted(X, y, v, warm=warm)


# ------------------------------------------------------------------ smooth GLMs (logistic)
class ExactGLMFits(_ModelMeasures):
    """The v-weighted fit of a smooth GLM with many features by the Newton iterations of GAGA's
    warm starts (:meth:`~spl_bench.gaga.glm.glm_system.GLMDesign.newton_fit`: each Newton system by
    conjugate gradients on the Cholesky factor of an earlier Hessian, instead of forming and
    factorising the Hessian at every step); the model's solver where it does not apply (no warm
    start, degenerate weights) or does not converge.  Losses and KKT checks are the model's.
    ``step_check``: each refined Newton step is tested against the gradient
    (``GLMDesign.newton_step_check``), for fits whose warm starts are far from their answers.
    """

    def __init__(self, model: GLMModel, X: Array, y: Array, step_check: bool = False) -> None:
        self.model = model
        self.X = X
        self.design = GLMDesign(model, X, y)
        self.design.newton_step_check = step_check
        self.n_fits = 0
        self.n_fallbacks = 0

    def info(self) -> dict[str, Any]:
        return {"inner_fits": self.n_fits, "inner_fallbacks": self.n_fallbacks}

    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        if X is not self.X or warm is None or warm.coef is None or not np.isfinite(warm.coef).all():
            return self.model.fit_weighted(X, y, v, warm=warm)
        self.n_fits += 1
        out = self.design.newton_fit(v, warm)
        if out is not None:
            return out
        self.n_fallbacks += 1
        return self.model.fit_weighted(X, y, v, warm=warm)
