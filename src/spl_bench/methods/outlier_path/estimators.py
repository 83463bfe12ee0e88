"""Estimators: OP-theta / OP-s (:class:`OutlierPath`), CCCP-theta / CCCP-s (:class:`CCCP`)
and the plain C-SVM over a C grid (:class:`CSVM`).

Each fits every ``(C, theta)`` or ``(C, s)`` candidate on the training rows; the
protocol picks one on the validation rows (section 5 of the outlier-path paper).
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits

from spl_bench.errors import ConfigError, check_positive
from spl_bench.methods.base import Array, SPLEstimator, check_finite_X
from spl_bench.methods.outlier_path.cccp import cccp_sequence
from spl_bench.methods.outlier_path.errors import DegenerateStepError
from spl_bench.methods.outlier_path.linalg import linear_factor, q_factor, q_product
from spl_bench.methods.outlier_path.path import (
    OutlierPathResult,
    outlier_path_s,
    outlier_path_theta,
    polished_svm,
    svm_dual,
    svm_path,
)
from spl_bench.models import Model, Params, get_model
from spl_bench.models.svm import resolve_gamma

PAPER_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


class _KernelSVMEstimator(SPLEstimator):
    """Shared parts: the svm model, the kernel, the C grid and fast candidate prediction."""

    def _check_variant(self) -> str:
        variant = getattr(self, "variant", "theta")
        if variant not in ("theta", "s"):
            raise ConfigError(f"variant must be 'theta' or 's', got {variant!r}")
        return variant

    def _make_model(self) -> Model:
        if self.model != "svm":
            raise ConfigError(f"{type(self).__name__} needs model=svm, got model={self.model!r}")
        params = dict(self.model_params or {})
        if params.get("gamma") == "auto":
            params["gamma"] = 1.0  # resolved to 1 / n_features at fit time (Params.extra)
        return get_model("svm", **params)

    def _gamma(self, X: Array) -> float:
        g = getattr(self, "gamma", None)
        if g is None:
            g = (self.model_params or {}).get("gamma", self.model_.gamma)
        if g == "auto":  # the paper's gamma = 1 / d
            return 1.0 / X.shape[1]
        return resolve_gamma(g, X)

    def _C_values(self) -> list[float]:
        grid = self.C_grid if self.C_grid is not None else [self.model_.C]
        if len(grid) == 0:
            raise ConfigError("C_grid is empty")
        return [check_positive("C", c) for c in grid]

    def _factor(self, X: Array) -> Array | None:
        """``X`` for a linear kernel of rank ``d < n / 2`` (:func:`linear_factor`): the paths then
        compute their margins through it."""
        return linear_factor(self.model_.kernel, X)

    def _svm_starts(self, K: Array, y: Array, Cs: list[float], factor: Array | None = None,
                    ) -> list[tuple[Array, float]]:
        """The standard SVM for every C: exact by the C-path (``svm_start="path"``, falling back
        to SVC if the path meets a degenerate step) or scikit-learn's SVC (``"svc"``).
        ``factor``: ``X`` with ``K = X X^T`` (:meth:`_factor`), for the C-path's margins."""
        start = getattr(self, "svm_start", "path")
        if start not in ("path", "svc"):
            raise ConfigError(f"svm_start must be 'path' or 'svc', got {start!r}")
        self.n_start_fallbacks_ = 0
        if start == "path":
            try:
                with threadpool_limits(limits=1, user_api="blas"):
                    return svm_path(K, y, Cs, factor=factor)
            except DegenerateStepError:
                self.n_start_fallbacks_ = 1
        return [svm_dual(K, y, C) for C in Cs]

    def _kernel(self, X: Array) -> Array:
        self.gamma_ = self._gamma(X)
        return self.model_.kernel_matrix(X, X, self.gamma_)

    def _params(self, alpha: Array, b: float) -> Params:
        return Params(dual_coef=alpha, intercept=float(b), X_fit=self.X_fit_, y_fit=self.y_fit_,
                      extra={"gamma": self.gamma_})

    def decision_candidates(self, X: ArrayLike) -> Array:
        """Decision values of every candidate, shape ``(k, n_samples)`` (one kernel evaluation)."""
        X = check_finite_X(X)
        K = self.model_.kernel_matrix(X, self.X_fit_, self.gamma_)
        AY = np.vstack([p.dual_coef * p.y_fit for p in self.candidate_models_])
        b = np.array([p.intercept for p in self.candidate_models_])
        return AY @ K.T + b[:, None]

    def predict_candidates(self, X: ArrayLike) -> Array:
        return np.where(self.decision_candidates(X) >= 0.0, 1.0, -1.0)


class OutlierPath(_KernelSVMEstimator):
    """OP-theta / OP-s: every breakpoint of the outlier path, for each C of a grid.

    Parameters
    ----------
    model : str
        Must be ``"svm"``; ``model_params`` gives ``kernel`` (``linear``/``rbf``), ``gamma``
        (a number, ``"scale"`` or ``"auto"`` = 1/d as in the paper) and ``C`` (used when
        ``C_grid`` is not given).
    sp, sp_params
        Ignored (accepted for the common constructor).
    variant : {"theta", "s"}
        OP-theta (s = 0, theta 1 -> 0) or OP-s (theta = 0, s from s_init to 0).
    C_grid : list of float, optional
        Values of C (the paper: 0.01, 0.1, 1, 10, 100).
    gamma : float or str, optional
        RBF width overriding ``model_params["gamma"]``; ``"auto"`` is 1/d (the paper).
    tol : float
        Tolerance for ties with the boundary.
    max_events : int, optional
        Safety cap on the number of events of one path.
    """

    def __init__(
        self,
        model: str = "svm",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        variant: str = "theta",
        C_grid: list[float] | None = None,
        gamma: float | str | None = None,
        tol: float = 1e-9,
        max_events: int | None = None,
        svm_start: str = "path",
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.variant = variant
        self.C_grid = C_grid
        self.gamma = gamma
        self.tol = tol
        self.max_events = max_events
        self.svm_start = svm_start

    def _fit(self, X: Array, y: Array) -> None:
        variant = self._check_variant()
        self.X_fit_, self.y_fit_ = X, y
        K = self._kernel(X)
        run = outlier_path_theta if variant == "theta" else outlier_path_s
        factor = self._factor(X)
        self.paths_: list[OutlierPathResult] = []
        models: list[Params] = []
        self.fit_time_ = 0.0
        self.n_fallback_ = 0
        t0 = time.perf_counter()
        Cs = self._C_values()
        for C, init in zip(Cs, self._svm_starts(K, y, Cs, factor), strict=True):
            # many small dense solves: multi-threaded BLAS only adds overhead (and contention)
            with threadpool_limits(limits=1, user_api="blas"):
                res = run(K, y, C, tol=self.tol, max_events=self.max_events, init=init, factor=factor)
            self.paths_.append(res)
            for bp in res.breakpoints:
                self.candidate_params_.append({"C": C, variant: float(bp.param)})
                models.append(self._params(bp.alpha, bp.b))
            if not res.breakpoints:  # the path failed before its first breakpoint
                self.n_fallback_ += 1
                self.candidate_params_.append({"C": C, variant: 1.0 if variant == "theta" else 0.0})
                models.append(self._params(init[0], init[1]))
        self.fit_time_ = time.perf_counter() - t0
        self.candidate_models_ = models

    def run_info(self) -> dict[str, Any]:
        fails = [p.failed for p in self.paths_ if p.failed]
        return {
            "n_candidates": len(self.candidate_params_),
            "n_critical_breakpoints": int(sum(len(p.breakpoints) for p in self.paths_)),
            "n_critical_jumps": int(sum(len(p.jumps) for p in self.paths_)),
            "n_dsteps": int(sum(j.n_dsteps for p in self.paths_ for j in p.jumps)),
            "n_events": int(sum(p.n_events for p in self.paths_)),
            "n_truncated_paths": len(fails),
            "n_svm_fallbacks": self.n_fallback_,
            "truncation_reasons": sorted(set(fails)),
            "fit_time": self.fit_time_,
        }

    def path_rows(self) -> list[dict[str, Any]]:
        """One row per breakpoint: C, the homotopy parameter, kind, objective, outliers, jump."""
        rows = []
        for p in self.paths_:
            jumps = {j.param: j for j in p.jumps}
            for bp in p.breakpoints:
                j = jumps.get(bp.param) if bp.kind == "jump" else None
                rows.append({
                    "C": p.C,
                    self.variant: bp.param,
                    "kind": bp.kind,
                    "objective": bp.objective,
                    "n_outliers": int((~bp.inlier).sum()),
                    "n_sv": int((bp.alpha > 0).sum()),
                    "jump_objective_before": j.objective_before if j else "",
                    "jump_n_dsteps": j.n_dsteps if j else "",
                    "jump_n_swapped": j.n_swapped if j else "",
                })
        return rows

    def save_path(self, file: str | Path) -> Path:
        """Write :meth:`path_rows` as CSV (the breakpoints, the jumps and local objectives)."""
        file = Path(file)
        file.parent.mkdir(parents=True, exist_ok=True)
        rows = self.path_rows()
        with file.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        return file


    def save_paths(self, directory: str | Path) -> list[Path]:
        """Write every path (one per C) as ``op_<variant>_C=<C>.npz`` (:meth:`OutlierPathResult.save`)."""
        directory = Path(directory)
        meta = {"kernel": self.model_.kernel, "gamma": self.gamma_, "n_train": len(self.y_fit_)}
        return [p.save(directory / f"op_{self.variant}_C={p.C:g}.npz", meta=meta) for p in self.paths_]


def cccp_values(variant: str, n_candidates: int, s_init: float) -> Array:
    """The paper's candidates: theta in {1, .75, .5, .25, 0}; s in s_init * {1, .75, .5, .25, 0}."""
    frac = np.linspace(1.0, 0.0, n_candidates)
    return frac if variant == "theta" else min(s_init, 0.0) * frac


class CCCP(_KernelSVMEstimator):
    """CCCP-theta / CCCP-s on ``n_candidates`` equally spaced values, warm-started, per C.

    Parameters as :class:`OutlierPath`; ``n_candidates`` (5 in the paper) sets the grid
    ``theta = 1 ... 0`` or ``s = s_init ... 0`` with ``s_init = min_i y_i f_SVM(x_i)``.
    ``solver``: ``"homotopy"`` (exact warm-started subproblems, :func:`box_homotopy`) or
    ``"smo"`` (gap ``tol``).
    """

    def __init__(
        self,
        model: str = "svm",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        variant: str = "theta",
        C_grid: list[float] | None = None,
        gamma: float | str | None = None,
        n_candidates: int = 5,
        tol: float = 1e-3,
        solver: str = "homotopy",
        svm_start: str = "path",
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.variant = variant
        self.C_grid = C_grid
        self.gamma = gamma
        self.svm_start = svm_start
        self.solver = solver
        self.n_candidates = n_candidates
        self.tol = tol

    def _fit(self, X: Array, y: Array) -> None:
        variant = self._check_variant()
        if self.solver not in ("homotopy", "smo"):
            raise ConfigError(f"CCCP solver must be 'homotopy' or 'smo', got {self.solver!r}")
        if int(self.n_candidates) < 2:
            raise ConfigError(f"n_candidates must be >= 2, got {self.n_candidates}")
        self.X_fit_, self.y_fit_ = X, y
        K = self._kernel(X)
        Q = np.outer(y, y) * K
        factor = self._factor(X)
        Z = q_factor(y, factor)  # Q = Z Z^T
        models: list[Params] = []
        self.n_outer_ = 0
        self.n_unconverged_ = 0
        t0 = time.perf_counter()
        Cs = self._C_values()
        starts = self._svm_starts(K, y, Cs, factor)
        exact = self.n_start_fallbacks_ == 0 and getattr(self, "svm_start", "path") == "path"
        for C, start in zip(Cs, starts, strict=True):
            solver = self.solver
            if exact:
                a0, b0 = start
            else:
                with threadpool_limits(limits=1, user_api="blas"):
                    try:
                        a0, b0 = polished_svm(K, y, C, init=start) if solver == "homotopy" else start
                    except DegenerateStepError:  # no exact SVM start: fall back to SMO for this C
                        a0, b0 = start
                        solver = "smo"
                        self.n_unconverged_ += 1
            s_init = float((q_product(Q, Z, a0) + y * b0).min())
            values = cccp_values(variant, int(self.n_candidates), s_init)
            with threadpool_limits(limits=1, user_api="blas"):
                sols = cccp_sequence(Q, y, C, variant, values, a0, b0, tol=self.tol, solver=solver, Z=Z)
            for sol in sols:
                self.candidate_params_.append({"C": C, variant: sol.theta if variant == "theta" else sol.s})
                models.append(self._params(sol.alpha, sol.b))
                self.n_outer_ += sol.n_outer
                self.n_unconverged_ += sol.n_unconverged
        self.fit_time_ = time.perf_counter() - t0
        self.candidate_models_ = models

    def run_info(self) -> dict[str, Any]:
        return {"n_candidates": len(self.candidate_params_), "n_cccp_iterations": self.n_outer_,
                "n_subproblem_fallbacks": self.n_unconverged_, "fit_time": self.fit_time_}


class CSVM(_KernelSVMEstimator):
    """The standard C-SVM (scikit-learn SVC), one candidate per C of the grid.

    ``gamma`` as in :class:`OutlierPath`; ``variant`` is accepted and ignored.
    """

    def __init__(
        self,
        model: str = "svm",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        C_grid: list[float] | None = None,
        gamma: float | str | None = None,
        variant: str = "-",
        svm_start: str = "path",
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.C_grid = C_grid
        self.gamma = gamma
        self.variant = variant  # ignored: lets one sweep over method.variant include csvm
        self.svm_start = svm_start

    def _fit(self, X: Array, y: Array) -> None:
        self.X_fit_, self.y_fit_ = X, y
        K = self._kernel(X)
        models = []
        t0 = time.perf_counter()
        Cs = self._C_values()
        for C, (a, b) in zip(Cs, self._svm_starts(K, y, Cs, self._factor(X)), strict=True):
            self.candidate_params_.append({"C": C})
            models.append(self._params(a, b))
        self.fit_time_ = time.perf_counter() - t0
        self.candidate_models_ = models

    def run_info(self) -> dict[str, Any]:
        return {"n_candidates": len(self.candidate_params_), "n_start_fallbacks": self.n_start_fallbacks_,
                "fit_time": self.fit_time_}
