"""GAGA as an SPL method: the exact age-path, with λ chosen over the whole path.

Candidates (``candidates="critical_grid"``, the default) are the path's critical points, each
just before and just after (``AgePath.point_kind`` other than ``step``: the start, the end of a
segment, the point after a turning point or a jump warm start, the last point before a jump),
its last point, and ``n_grid`` fixed ages of ``[lam_min, lam_max]`` through the dense output
:meth:`AgePath.at`: none of them depends on where the solver stepped, so the route
(``ode_method``) is a speed choice.  ``candidates="steps"`` is the rule of the rows made before
2026-11-29: every recorded point (solver steps included, evenly thinned to ``max_candidates``)
plus ``n_grid`` ages between the path's first and last age.  ``run_info`` reports restarts and
critical points by kind.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from spl_bench.errors import ConfigError, check_int, check_positive
from spl_bench.gaga import AgePath, EngineOptions
from spl_bench.gaga.api import trace_age_path
from spl_bench.gaga.core import tracker as engine
from spl_bench.gaga.core.options import ODE_METHODS
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.models import Params

#: GAGA's candidate rules (the ``candidates`` parameter)
CANDIDATE_RULES = ("critical_grid", "steps")


class GAGA(SPLEstimator):
    """Generalized Age-path Algorithm (GAGA paper, Algorithm 2).

    Parameters
    ----------
    lam_min, lam_max : float
        The age interval (GAGA appendix D.2: [0.1, 20]).
    n_grid : int
        Ages of the uniform grid ``linspace(lam_min, lam_max, n_grid)`` evaluated through the dense
        output, besides the critical points (the ages below a moved start or inside a degenerate
        gap are left out).
    candidates : {"critical_grid", "steps"}
        ``"critical_grid"``: both sides of every critical point, the path's last point and the
        grid, independent of the route.  ``"steps"``: every recorded point, solver steps included
        (the rows made before 2026-11-29; depends on the route).
    max_candidates : int
        ``candidates="steps"`` only: cap on the number of recorded points used as candidates
        (evenly thinned; critical points are always kept).
    ode_method : {"fastest", "auto", "LSODA", "BDF", "RK45", "DOP853", "PC", "compiled"}
        How the path is followed between critical points, a speed choice (every route gives the
        same critical points and dense output; ``docs/gaga.md``, "Routes and candidates").
        ``"fastest"``: the compiled predictor-corrector for the lasso
        (:mod:`spl_bench.gaga.glm.segment_nb`), ``"auto"`` for every other model.  ``"auto"``:
        RK45, handing a segment over to LSODA when it takes many short steps.  ``"PC"``: the
        predictor-corrector continuation on ``F = 0`` (one factorisation per step;
        :mod:`spl_bench.gaga.core.continuation`).  ``"compiled"``: as ``"fastest"``.
    rtol, atol, max_step : float
        ODE solver settings.
    jump_delta : float
        The warm start after a jump point is at ``lam + jump_delta * max(1, lam)`` (GAGA
        Algorithm 2, line 8: "a small delta").
    acs_extrapolate : bool
        Over-relaxed ACS in the warm starts after jumps (lasso, logistic): faster, but the
        point after a jump may differ from plain ACS's (off by default; ``docs/gaga.md``).
    svm_active_set : bool
        SVM: the ACS steps of the warm starts by the exact warm-started active-set fit of the
        weighted dual (libsvm when it gives up); ``False``: libsvm for every step.
    acs_skip : bool
        SVM with the linear or hard SP: creeping ACS iterations of the warm starts, where the
        ACS map is affine and no set changes, are skipped by extrapolation (the same critical
        points; ``docs/gaga.md``); ``False``: every iteration is computed.
    checkpoint_dir : str, optional
        Save the path's state there every ``checkpoint_every`` seconds; a fit on the same data
        with the same parameters resumes from it (a path longer than a session:
        :mod:`spl_bench.gaga.core.checkpoint`).  Does not change the path.
    checkpoint_every : float
        Seconds between two checkpoints.
    degenerate_start : {"advance", "lam_min"}
        Where ACS from the v = 1 fit ends on a degenerate partial optimum at ``lam_min`` (a single
        class selected: a constant predictor whose KKT conditions hold), ``"advance"`` starts
        the path at the first age where it does not (``run_info()["start_lam"]``);
        ``"lam_min"`` starts at ``lam_min`` whatever ACS gives there (``docs/gaga.md``,
        "Degenerate partial optima").
    blas_threads : int
        BLAS threads while the path is computed (the factorisations of ``J_theta`` and the Gram
        products of large paths; the BLAS library must have been started with at least this
        many, e.g. ``OPENBLAS_NUM_THREADS``).  Does not change the path.
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        lam_min: float = 0.1,
        lam_max: float = 20.0,
        n_grid: int = 400,
        candidates: str = "critical_grid",
        max_candidates: int = 3000,
        ode_method: str = "fastest",
        rtol: float = 1e-7,
        atol: float = 1e-9,
        max_step: float = 0.25,
        jump_delta: float = 1e-5,
        acs_extrapolate: bool = False,
        svm_active_set: bool = True,
        acs_skip: bool = True,
        checkpoint_dir: str | None = None,
        checkpoint_every: float = 600.0,
        degenerate_start: str = "advance",
        blas_threads: int = 1,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.lam_min = lam_min
        self.lam_max = lam_max
        self.n_grid = n_grid
        self.candidates = candidates
        self.max_candidates = max_candidates
        self.ode_method = ode_method
        self.rtol = rtol
        self.atol = atol
        self.max_step = max_step
        self.jump_delta = jump_delta
        self.acs_extrapolate = acs_extrapolate
        self.svm_active_set = svm_active_set
        self.acs_skip = acs_skip
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_every = checkpoint_every
        self.degenerate_start = degenerate_start
        self.blas_threads = blas_threads

    def _fit(self, X: Array, y: Array) -> None:
        lam_min = check_positive("lam_min", self.lam_min)
        lam_max = check_positive("lam_max", self.lam_max)
        if lam_min >= lam_max:
            raise ConfigError(f"lam_min ({lam_min}) must be smaller than lam_max ({lam_max})")
        if self.degenerate_start not in ("advance", "lam_min"):
            raise ConfigError(f"degenerate_start must be 'advance' or 'lam_min', got {self.degenerate_start!r}")
        if self.ode_method not in ODE_METHODS:
            raise ConfigError(f"unknown ODE solver {self.ode_method!r}; choose one of {', '.join(ODE_METHODS)}")
        if self.candidates not in CANDIDATE_RULES:
            raise ConfigError(f"candidates must be one of {', '.join(CANDIDATE_RULES)}, got {self.candidates!r}")
        opts = EngineOptions(method=str(self.ode_method), rtol=float(self.rtol), atol=float(self.atol),
                             max_step=float(self.max_step), delta=check_positive("jump_delta", self.jump_delta),
                             acs_extrapolate=bool(self.acs_extrapolate),
                             svm_active_set=bool(self.svm_active_set), acs_skip=bool(self.acs_skip),
                             checkpoint_dir=None if self.checkpoint_dir is None else str(self.checkpoint_dir),
                             checkpoint_every=check_positive("checkpoint_every", self.checkpoint_every),
                             blas_threads=check_int("blas_threads", self.blas_threads, minimum=1),
                             degenerate_start=str(self.degenerate_start),
                             # the step rule's candidates are the recorded points of the rows made
                             # before 2026-11-29: record them as those were recorded
                             dense_check="solver" if self.candidates == "steps" else "projected")

        interval, next_at = engine.PROGRESS_INTERVAL, -np.inf

        def report(lam: float, n_critical: int) -> None:  # a few times per second, and at lam_max
            nonlocal next_at
            now = time.monotonic()
            if now >= next_at or lam >= lam_max:
                next_at = now + interval
                self._progress("gaga", lam=lam, lam_min=lam_min, lam_max=lam_max, n_critical=n_critical)

        hooked = getattr(self, "_progress_hook", None) is not None
        spr = self._make_sp()
        spr.check_lam(lam_min)
        spr.check_lam(lam_max)
        # X and y were checked by fit (SPLEstimator._check_fit_data), the ages and options above
        path = trace_age_path(X, self.model_.check_y(y), self.model_, spr, lam_min, lam_max, opts,
                              progress=report if hooked else None)
        self.path_ = path
        self._fit_data_ = (X, y)  # the kernel SVM's candidates refer to the training rows (use_ages)
        self.time_before_resume_ = float(path.meta["time_before_resume_s"])
        self.cpu_before_resume_ = float(path.meta["cpu_before_resume_s"])
        if self.candidates == "steps":
            idx, grid = self._step_candidates(path)
        else:
            idx, grid = self._critical_grid_candidates(path, lam_min, lam_max)
        lams = list(path.lambdas[idx])
        vals = [path.values[i] for i in idx]
        bs = list(path.intercept[idx])
        if grid.size:  # the grid's ages through the dense output
            gv, gb = path.at(grid)
            lams += list(grid)
            vals += list(gv)
            bs += list(gb)
        order = np.argsort(np.asarray(lams), kind="stable")
        self.candidate_params_ = [{"lam": float(lams[i])} for i in order]
        self.candidate_models_ = [self._params(vals[i], bs[i], X, y, path) for i in order]

    def _critical_grid_candidates(self, path: AgePath, lam_min: float, lam_max: float) -> tuple[Array, Array]:
        """Recorded points offered (both sides of every critical point, the last point) and the grid:
        ``n_grid`` fixed ages of ``[lam_min, lam_max]`` on the path and outside its degenerate gaps."""
        keep = path.point_kind != "step"
        keep[-1] = True
        grid = np.linspace(lam_min, lam_max, max(int(self.n_grid or 0), 0))
        grid = _outside_gaps(grid[(grid >= path.lambdas[0]) & (grid <= path.lambdas[-1])], path)
        return np.flatnonzero(keep), grid

    def _step_candidates(self, path: AgePath) -> tuple[Array, Array]:
        """Every recorded point (thinned to ``max_candidates``) and ``n_grid`` ages between the path's
        first and last age: the rule of the rows made before 2026-11-29."""
        keep = np.zeros(len(path), dtype=bool)
        keep[path.point_kind != "step"] = True
        n_free = max(int(self.max_candidates) - int(keep.sum()), 0)
        steps = np.flatnonzero(~keep)
        if steps.size > n_free:
            steps = steps[np.linspace(0, steps.size - 1, n_free).astype(int)] if n_free else steps[:0]
        keep[steps] = True
        grid = np.linspace(path.lambdas[0], path.lambdas[-1], max(int(self.n_grid or 0), 0))
        return np.flatnonzero(keep), _outside_gaps(grid, path)

    def use_ages(self, ages: Any) -> GAGA:
        """The path at ``ages`` by its dense output (:meth:`AgePath.at`), the equal-candidates control
        (``protocol.candidates=shared_grid``).  Ages outside the path (below a start that a
        degenerate ``lam_min`` moved, ``run_info()["start_lam"]``) are no candidates, as ACS drops
        its degenerate ages."""
        path = self.path_
        ages = np.asarray(ages, dtype=float)
        ages = _outside_gaps(ages[(ages >= path.lambdas[0]) & (ages <= path.lambdas[-1])], path)
        vals, bs = path.at(ages) if ages.size else (np.empty((0, 0)), np.empty(0))
        X, y = self._fit_data_
        self._keep_candidates(ages, [self._params(v, b, X, y, path) for v, b in zip(vals, bs, strict=True)])
        return self

    def _params(self, vec: Array, b: float, X: Array, y: Array, path: AgePath) -> Params:
        if path.dual_coef is not None:
            return Params(dual_coef=np.asarray(vec), intercept=float(b), X_fit=X, y_fit=y,
                          extra={"gamma": path.meta["kernel_gamma"]})
        return Params(coef=np.asarray(vec), intercept=float(b))

    def save_path(self, file: str | Path) -> Path:
        """Write the fitted age-path (:meth:`AgePath.save`, ``.npz``); the runner calls this per seed."""
        return self.path_.save(file)

    def run_info(self) -> dict[str, Any]:
        cc = self.path_.critical_counts()
        return {
            **super().run_info(),
            "n_restarts": int(self.path_.n_restarts),
            "n_critical_turning": cc["turning"],
            "n_critical_jump": cc["jump"],
            "n_path_points": len(self.path_),
            "path_time_s": float(self.path_.meta["time_s"]),
            "n_resumes": int(self.path_.meta["n_resumes"]),
            # CPU seconds before the resume (NaN: not recorded; the row's cpu_s is then no CPU measure)
            "cpu_before_resume_s": float(self.path_.meta["cpu_before_resume_s"]),
            "candidate_rule": str(self.candidates),
            "ode_method": str(self.path_.meta["ode_method"]),
            "n_solver_steps": int(self.path_.meta["n_solver_steps"]),
            "n_failed_warm_starts": int(self.path_.meta["n_failed_warm_starts"]),
            "n_fold_retakes": int(self.path_.meta.get("n_fold_retakes", 0)),
            # a degenerate start moved (docs/gaga.md "Degenerate partial optima"), J singular
            "start_lam": float(self.path_.meta["start_lam"]),
            "n_degenerate_acs": int(self.path_.meta["n_degenerate_acs"]),
            "n_lstsq": int(self.path_.meta["n_lstsq"]),
            "n_degenerate_gaps": len(self.path_.meta.get("degenerate_gaps", [])),
            # ACS fits of the warm starts made by the model's solver: the exact one did not finish
            **({"n_fit_fallbacks": int(n)} if (n := self.path_.meta.get("n_fit_fallbacks")) else {}),
            # segments ended by the predictor-corrector's stall rule (docs/gaga.md "Stalled segments")
            **({"n_stalled_segments": int(n)} if (n := self.path_.meta.get("n_stalled_segments")) else {}),
            # exact lasso fits made with degenerate pivots (docs/gaga.md "The weighted fits")
            **({"n_pivoted_fits": int(n)} if (n := self.path_.meta.get("n_pivoted_fits")) else {}),
            **({"degenerate_reason": r} if (r := self.path_.meta["degenerate_reason"]) else {}),
        }


def _outside_gaps(ages: Array, path: AgePath) -> Array:
    """``ages`` without those inside a degenerate gap of the path (``meta["degenerate_gaps"]``: after a
    jump no two-class partial optimum was found until the gap's end, where the path resumes; the dense
    output there would extrapolate the old branch, no partial optimum)."""
    keep = np.ones(len(ages), dtype=bool)
    for a, b in path.meta.get("degenerate_gaps", []):
        keep &= ~((ages > a) & (ages < b))
    return ages[keep]
