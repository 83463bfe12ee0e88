"""ACS: alternate convex search on an age grid (GAGA Algorithm 1).

For each age ``lam`` of the grid (increasing, warm-started from the previous
age) ACS alternates the closed-form v-step ``v = v*(ell(w), lam)`` and the
w-step ``w = argmin_w sum_i v_i ell_i(w) + R(w)`` until ``v`` stops changing;
the result is a partial optimum (GAGA Theorem 1).

The w-step is the *inner solver* (option ``inner_solver``,
:mod:`spl_bench.methods._acs_solvers`): ``model``, the model's library solver with
sample weights (libsvm / scikit-learn: the paper's baseline), or ``exact``, the
exact warm-started solvers of GAGA's warm starts (SVM: the active-set dual on the
precomputed kernel; lasso: the active-set weighted lasso; logistic: the model's
solver), or ``hybrid``, ``exact`` with libsvm's inexact point where the RBF dual's
guess-and-check gives up.  All solve the same v-weighted problems; ``docs/acs.md``
compares them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from spl_bench.errors import ConfigError, check_positive
from spl_bench.gaga.core.acs_skip import AffineSkip
from spl_bench.methods._acs_solvers import WeightedFits, make_inner_solver, solver_info
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.models import Params
from spl_bench.sp import SPRegularizer


def lambda_grid(lam_min: float, lam_max: float, lam_step: float) -> Array:
    """The ages ``lam_min, lam_min + step, ...`` up to ``lam_max`` (inclusive within step/1e6)."""
    lam_min = check_positive("lam_min", lam_min)
    lam_max = check_positive("lam_max", lam_max)
    lam_step = check_positive("lam_step", lam_step)
    if lam_min >= lam_max:
        raise ConfigError(f"lam_min ({lam_min}) must be smaller than lam_max ({lam_max})")
    k = int(np.floor((lam_max - lam_min) / lam_step * (1 + 1e-9))) + 1
    return lam_min + lam_step * np.arange(k)


def acs_solve(
    model: WeightedFits,
    sp: SPRegularizer,
    X: Array,
    y: Array,
    lam: float,
    init: Params,
    tol: float = 1e-10,
    max_iter: int = 1000,
    kkt_tol: float = 1e-7,
    skip: AffineSkip | None = None,
) -> tuple[Params, Array, int, bool]:
    """Run ACS at one age from ``init``; return ``(params, v, n_iter, converged)``.

    ``model`` is a :class:`~spl_bench.models.Model` or an inner solver of
    :mod:`spl_bench.methods._acs_solvers` (its fits, losses and KKT check are used).

    Converged means that ``(params, v)`` is a partial optimum (GAGA Definition 4)
    to the solvers' accuracy: ``v = v*(ell(params), lam)`` exactly, and either the
    v-step no longer changes ``v`` by more than ``tol`` (max norm) or ``params``
    satisfies the KKT conditions of the ``v``-weighted problem within ``kkt_tol``.

    ``skip``: where the inner solver knows the ACS map to be affine (``acs_affine_state``:
    the exact SVM fits with the linear or hard SP), runs of iterations that change no set
    are skipped by :class:`~spl_bench.gaga.core.acs_skip.AffineSkip` and ACS goes on from the
    iterate they lead to (they count as one iteration).
    """
    params = init
    v = sp.v_star(model.losses(params, X, y), lam)
    state = getattr(model, "acs_affine_state", None) if skip is not None else None
    if skip is not None:
        skip.clear()
    for it in range(1, max_iter + 1):
        params = model.fit_weighted(X, y, v, warm=params)
        v_new = sp.v_star(model.losses(params, X, y), lam)
        if np.max(np.abs(v_new - v), initial=0.0) <= tol:
            return params, v_new, it, True
        if model.kkt_violation(params, X, y, v_new) <= kkt_tol:
            return params, v_new, it, True
        v = v_new
        if state is not None and skip is not None:
            ahead = skip.ahead(state(params, sp, lam))
            if ahead is not None:
                params = model.acs_jump_to(ahead[0], ahead[1])  # type: ignore[attr-defined]
                v = sp.v_star(model.losses(params, X, y), lam)
    return params, v, max_iter, False


class ACS(SPLEstimator):
    """Alternate convex search at every age of a grid.

    Parameters
    ----------
    lam_min, lam_max, lam_step : float
        The age grid (GAGA appendix D.2: [0.1, 20], step 0.5).
    lam_grid : list of float, optional
        An explicit increasing grid instead of ``lam_min/lam_max/lam_step``.
    tol : float
        Stop when ``max |v_new - v| <= tol``.
    max_iter : int
        Maximum number of alternations per age.
    kkt_tol : float
        Also stop when the KKT violation of the v*-weighted problem is below this.
    inner_solver : {"exact", "hybrid", "model"}
        The v-weighted fit of each iteration.  ``model``: the model's library solver
        (libsvm for the SVM, a cold fit every time; scikit-learn's coordinate descent
        for the lasso and the logistic regression), as the paper's baseline.
        ``exact`` (default): the exact warm-started active-set solvers of GAGA
        (``spl_bench.gaga.svm.inner.WeightedSVMDual`` on the precomputed kernel,
        ``weighted_lasso``); the logistic regression keeps the model's solver; with an
        RBF kernel, a fit whose guess-and-check gives up is solved exactly at the sets of
        libsvm's solution.  ``hybrid``: ``exact``, but such a fit is libsvm's point (to
        its tolerance), the route of the rows made before 2026-11-27; where most fits
        give up (pendigits) these inexact steps keep ACS from converging at some ages.
        ``exact`` is many times faster on the SVM and meets the KKT check at every age
        (``docs/acs.md``).
    acs_skip : bool
        With the exact SVM fits and the linear or hard SP, skip the iterations where ACS
        creeps along one affine piece (no set changes) by extrapolating them
        (:mod:`spl_bench.gaga.core.acs_skip`, as GAGA's warm starts do); ACS's own iterations
        make every set change.  ``False``: every iteration is computed (``docs/acs.md``).
    drop_degenerate : bool
        An age whose ACS ends on a degenerate partial optimum (a single class selected, after a
        second try from the v = 1 fit: a constant predictor whose KKT conditions hold) is no
        candidate, unless every age is (``run_info()["n_degenerate_ages"]``; ``docs/acs.md``).
        ``False``: every age is a candidate, and ACS warm-starts from every age's point.
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        lam_min: float = 0.1,
        lam_max: float = 20.0,
        lam_step: float = 0.5,
        lam_grid: list[float] | None = None,
        tol: float = 1e-10,
        max_iter: int = 1000,
        kkt_tol: float = 1e-7,
        inner_solver: str = "exact",
        acs_skip: bool = True,
        drop_degenerate: bool = True,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.lam_min = lam_min
        self.lam_max = lam_max
        self.lam_step = lam_step
        self.lam_grid = lam_grid
        self.tol = tol
        self.max_iter = max_iter
        self.kkt_tol = kkt_tol
        self.inner_solver = inner_solver
        self.acs_skip = acs_skip
        self.drop_degenerate = drop_degenerate

    def ages(self) -> Array:
        """The grid of ages this estimator visits."""
        if self.lam_grid is not None:
            grid = np.asarray(self.lam_grid, dtype=float)
            if grid.size == 0 or np.any(np.diff(grid) <= 0) or grid[0] <= 0:
                raise ConfigError("lam_grid must be a non-empty increasing list of positive ages")
            return grid
        return lambda_grid(self.lam_min, self.lam_max, self.lam_step)

    def _fit(self, X: Array, y: Array) -> None:
        sp = self._make_sp()
        grid = self.ages()
        for lam in grid:
            sp.check_lam(lam)
        fits, self.inner_solver_used_ = make_inner_solver(self.inner_solver, self.model_, X, y)
        self.inner_ = fits
        plain = fits.fit_weighted(X, y, np.ones(len(y)))
        params = plain
        self.lambdas_ = grid
        models: list[Params] = []
        self.v_path_ = np.empty((len(grid), len(y)))
        self.n_iter_ = np.empty(len(grid), dtype=int)
        self.converged_ = np.empty(len(grid), dtype=bool)
        self.kkt_ = np.empty(len(grid))
        self.degenerate_ = np.zeros(len(grid), dtype=bool)
        skip = AffineSkip() if self.acs_skip else None
        self.skip_ = skip
        for k, lam in enumerate(grid):
            out = acs_solve(fits, sp, X, y, float(lam), params, self.tol, self.max_iter, self.kkt_tol, skip)
            if self.drop_degenerate and self.model_.degenerate_selection(y, out[1]) and params is not plain:
                # a single class selected: ACS from the v = 1 fit instead (the first age's start)
                out = acs_solve(fits, sp, X, y, float(lam), plain, self.tol, self.max_iter, self.kkt_tol, skip)
            p, v, it, ok = out
            self.degenerate_[k] = self.model_.degenerate_selection(y, v)
            # the next age starts from this one, unless it is degenerate (then from the v = 1 fit)
            params = plain if self.degenerate_[k] and self.drop_degenerate else p
            models.append(p)
            self.v_path_[k] = v
            self.n_iter_[k] = it
            self.converged_[k] = ok
            self.kkt_[k] = fits.kkt_violation(p, X, y, v)
            self._progress("acs", done=k + 1, total=len(grid), lam=float(lam))
        # degenerate partial optima (a constant predictor, docs/acs.md) are no candidates, unless
        # every age is one; run_info counts them
        # every per-age attribute (lambdas_, v_path_, ...) is over the candidates' ages
        keep = ~self.degenerate_ if self.drop_degenerate and not self.degenerate_.all() else np.ones(len(grid), bool)
        self.dropped_ages_ = grid[~keep]
        self.lambdas_ = grid[keep]
        self.v_path_, self.n_iter_ = self.v_path_[keep], self.n_iter_[keep]
        self.converged_, self.kkt_, self.degenerate_ = self.converged_[keep], self.kkt_[keep], self.degenerate_[keep]
        self.candidate_models_ = [m for m, ok in zip(models, keep, strict=True) if ok]
        self.candidate_params_ = [{"lam": float(lam)} for lam in self.lambdas_]
        if n_bad := int((~keep).sum() + self.degenerate_.sum()):
            warnings.warn(f"ACS: {n_bad} of {len(grid)} ages end with a single class selected (a constant predictor; "
                          + ("dropped from the candidates" if (~keep).any() else "every age is one: kept")
                          + "; run_info()['n_degenerate_ages'])", RuntimeWarning, stacklevel=2)

    def use_ages(self, ages: Any) -> ACS:
        """Keep the candidates at ``ages`` (the equal-candidates control, ``protocol.candidates=shared_grid``).

        Every age must be one of the grid's (``ages()``, to 1e-9 relative); ages dropped as
        degenerate stay dropped.  With the default grid as the shared one, nothing changes."""
        ages = np.asarray(ages, dtype=float)
        grid = self.ages()
        off = [a for a in ages if not np.isclose(grid, a, rtol=1e-9, atol=0.0).any()]
        if off:
            raise ConfigError(f"ACS was fitted on another grid: ages {off[:5]} are not on it (set lam_step / lam_grid)")
        keep = np.array([np.isclose(ages, lam, rtol=1e-9, atol=0.0).any() for lam in self.lambdas_], dtype=bool)
        self._keep_candidates(self.lambdas_[keep], [m for m, k in zip(self.candidate_models_, keep, strict=True) if k])
        return self

    def run_info(self) -> dict[str, Any]:
        return {
            **super().run_info(),
            "acs_iters_mean": float(self.n_iter_.mean()),
            "acs_not_converged": int((~self.converged_).sum()),
            "kkt_max": float(self.kkt_.max()),
            # ages dropped as degenerate, and degenerate ages kept (every age was one, or drop_degenerate=False)
            "n_degenerate_ages": int(len(self.dropped_ages_) + self.degenerate_.sum()),
            "inner_solver": self.inner_solver_used_,
            "acs_skips": self.skip_.n_skips if self.skip_ is not None else 0,
            "acs_skipped": self.skip_.n_skipped if self.skip_ is not None else 0,
            **solver_info(self.inner_),
        }
