"""The entry points of GAGA: :func:`age_path` (the exact age-path) and :func:`acs` (plain ACS).

They pick the path system of the model (:func:`~spl_bench.gaga.systems.make_system`: the GLM
system of :mod:`spl_bench.gaga.glm` or the kernel SVM's of :mod:`spl_bench.gaga.svm`) and run
the tracker of :mod:`spl_bench.gaga.core.tracker` on it.  This module sits above the three
packages and may import all of them; ``gaga/core`` imports neither ``gaga/glm`` nor ``gaga/svm``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from spl_bench.gaga.core import checkpoint
from spl_bench.gaga.core.columns import ColumnGroups
from spl_bench.gaga.core.options import _RUN_ONLY_OPTIONS, ODE_METHODS, EngineOptions
from spl_bench.gaga.core.path import AgePath
from spl_bench.gaga.core.system_base import PathSystem
from spl_bench.gaga.core.tracker import _Tracker
from spl_bench.gaga.core.warm import acs_step
from spl_bench.gaga.systems import make_system
from spl_bench.models import Model, Params
from spl_bench.sp import SPRegularizer

Array = NDArray[np.float64]


def acs(model: Model, sp: SPRegularizer, X: Array, y: Array, lam: float, init: Params,
        tol: float, max_iter: int) -> tuple[Params, int, bool]:
    """Plain ACS (GAGA Algorithm 1) at one age, stopped when ``v`` changes by ``<= tol``.

    Convergence is judged on ``v`` only; the Newton polish that follows makes the
    point exact.
    """
    system = make_system(model, sp, X, y)
    params = init
    v = sp.v_star(system.losses(params), lam)
    for it in range(1, max_iter + 1):
        params, v_new = acs_step(system, lam, params, v)
        if np.max(np.abs(v_new - v), initial=0.0) <= tol:
            return params, it, True
        v = v_new
    return params, max_iter, False


def age_path(
    X: Array,
    y: Array,
    model: str | Model = "lasso",
    sp: str | SPRegularizer = "linear",
    lam_range: tuple[float, float] = (0.1, 20.0),
    sp_params: dict[str, Any] | None = None,
    init: Params | None = None,
    options: EngineOptions | None = None,
    progress: Callable[[float, int], None] | None = None,
    **model_params: Any,
) -> AgePath:
    """Compute the exact age-path of self-paced learning on ``lam_range`` (GAGA Algorithm 2).

    Parameters
    ----------
    X, y : arrays
        Training data (classification labels in {-1, +1}).  Lasso has no
        intercept, so centre ``X`` and ``y`` first.
    model : {"lasso", "logistic", "huber", "svm"} or Model
        The learning model (objective conventions of ``docs/conventions.md``): any model
        with a ``datafit`` and a ``penalty`` (``spl_bench.models.datafits`` / ``penalties``),
        or the kernel SVM.
    sp : {"linear", "mixture", "hard", "log", "polynomial"} or SPRegularizer
        The SP-regularizer; ``sp_params`` are passed to it (``gamma`` for mixture).
    lam_range : (float, float)
        ``(lam_min, lam_max)``.
    init : Params, optional
        Starting point for the ACS solve at ``lam_min`` (default: the model with v = 1).
    options : EngineOptions, optional
        Tolerances and step limits.  With ``checkpoint_dir`` the computation saves its state
        there every ``checkpoint_every`` seconds and a call with the same inputs resumes from
        it (:mod:`spl_bench.gaga.core.checkpoint`; ``meta["n_resumes"]``, and ``meta["time_s"]``
        includes the time before the checkpoint).
    progress : callable, optional
        Called after every segment (on the compiled route, after every call of the compiled
        follower, which may pass several critical points) with the age reached and the number
        of critical points so far (a progress bar: ``spl-bench path``).
    **model_params
        Model hyper-parameters (``alpha``; ``C``; ``C``, ``kernel``, ``gamma``).

    Returns
    -------
    AgePath
        Recorded points (solver steps, and every critical point just before and
        after), events, restarts and Hermite dense output ``at(lam)``.
    """
    X, y, mdl, spr, lam_min, lam_max, opts = _checked_inputs(X, y, model, sp, lam_range, sp_params, options,
                                                             model_params)
    return trace_age_path(X, y, mdl, spr, lam_min, lam_max, opts, init, progress)


def trace_age_path(X: Array, y: Array, mdl: Model, spr: SPRegularizer, lam_min: float, lam_max: float,
                   opts: EngineOptions, init: Params | None = None,
                   progress: Callable[[float, int], None] | None = None) -> AgePath:
    """:func:`age_path` on inputs already checked (GAGA Algorithm 2): the GAGA estimator's road.

    ``X`` finite 2-D, ``y`` the model's target (:meth:`Model.check_y`), ``lam_min < lam_max`` both
    valid ages of ``spr`` and ``opts`` a checked :class:`EngineOptions`: the estimator checks them
    once at its ``fit`` (scikit-learn's rule: validate at the edge), :func:`age_path` for its callers.
    """
    # duplicated columns merged (the lasso), the saved state of these inputs if any
    groups, X_path, init = _merged_columns(mdl, X, init)
    file, key, saved = _find_checkpoint(X, y, mdl, spr, lam_min, lam_max, init, opts)
    # the path system and its tracker (Algorithm 2), new or resumed
    tr, system = _tracker(saved, mdl, spr, X_path, y, opts)
    tr.progress = progress
    # ACS at lam_min, then the segments up to lam_max (Algorithm 2's loop)
    t0 = _run(tr, lam_min, lam_max, init, opts, file, key, saved)
    meta = _meta(mdl, spr, X, lam_min, lam_max, opts, tr, system, t0, saved)
    return _to_path(tr, meta, groups)


def _checked_inputs(X: Array, y: Array, model: str | Model, sp: str | SPRegularizer,
                    lam_range: tuple[float, float], sp_params: dict[str, Any] | None,
                    options: EngineOptions | None, model_params: dict[str, Any],
                    ) -> tuple[Array, Array, Model, SPRegularizer, float, float, EngineOptions]:
    """``(X, y, model, SP-regularizer, lam_min, lam_max, options)`` of :func:`age_path`'s
    arguments, checked (``DataError`` / ``ConfigError`` on bad data or settings)."""
    from spl_bench.checks import check_finite_X
    from spl_bench.errors import ConfigError, DataError
    from spl_bench.models import get_model
    from spl_bench.sp import get_sp

    X = check_finite_X(X)
    mdl = get_model(model, **model_params)
    spr = get_sp(sp, **(sp_params or {}))
    y = mdl.check_y(np.asarray(y).ravel())
    if y.shape[0] != X.shape[0]:
        raise DataError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if not np.all(np.isfinite(y)):
        raise DataError("y contains NaN or infinite values")
    lam_min, lam_max = (float(v) for v in lam_range)
    spr.check_lam(lam_min)
    spr.check_lam(lam_max)
    if not lam_min < lam_max:
        raise ConfigError(f"lam_range must be increasing, got {lam_range}")
    opts = options or EngineOptions()
    if opts.method not in ODE_METHODS:
        raise ConfigError(f"unknown ODE solver {opts.method!r}; choose one of {', '.join(ODE_METHODS)}")
    return X, y, mdl, spr, lam_min, lam_max, opts


def _merged_columns(mdl: Model, X: Array, init: Params | None) -> tuple[ColumnGroups | None, Array, Params | None]:
    """``(groups, X_path, init)``: the duplicated columns of ``X`` merged where the penalty
    allows it (L1 without an intercept; :class:`ColumnGroups`), else ``(None, X, init)``."""
    merge = getattr(getattr(mdl, "penalty", None), "merges_duplicate_columns", False)
    groups = ColumnGroups.find(X) if merge else None
    if groups is not None and groups.trivial:
        groups = None
    X_path = X if groups is None else np.ascontiguousarray(X[:, groups.keep])
    if groups is not None and init is not None and init.coef is not None:
        init = Params(coef=groups.reduce(np.asarray(init.coef, dtype=float)), intercept=init.intercept)
    return groups, X_path, init


def _find_checkpoint(X: Array, y: Array, mdl: Model, spr: SPRegularizer, lam_min: float, lam_max: float,
                     init: Params | None, opts: EngineOptions,
                     ) -> tuple[Path | None, str | None, dict[str, Any] | None]:
    """``(file, key, saved state)`` of the checkpoint of these inputs (``options.checkpoint_dir``;
    :mod:`spl_bench.gaga.core.checkpoint`); ``saved`` is ``None`` when there is none to resume."""
    file: Path | None = None
    key: str | None = None
    saved: dict[str, Any] | None = None
    if opts.checkpoint_dir is not None:
        inputs = {"model": mdl.name, "model_params": mdl.get_params(), "sp": spr.name,
                  "sp_params": spr.get_params(), "lam_range": [lam_min, lam_max],
                  "init": None if init is None else [np.asarray(init.coef), float(init.intercept)]}
        key = checkpoint.checkpoint_key(X, y, inputs, opts, _RUN_ONLY_OPTIONS)
        file = checkpoint.checkpoint_file(opts.checkpoint_dir, key)
        saved = checkpoint.load(file, key)
    return file, key, saved


def _tracker(saved: dict[str, Any] | None, mdl: Model, spr: SPRegularizer, X_path: Array, y: Array,
             opts: EngineOptions) -> tuple[_Tracker, PathSystem]:
    """``(tracker, its path system)``: the saved tracker resumed, or a new one on the model's
    system (:func:`~spl_bench.gaga.systems.make_system`)."""
    if saved is not None:
        tr = saved["tracker"]
        tr.state.n_resumes += 1
        tr._progress_next = -np.inf  # a time of the process that saved it
        system = tr.state.sys
    else:
        system = make_system(mdl, spr, X_path, y)
        system.apply_options(opts)
        tr = _Tracker(system, mdl, spr, X_path, y, opts)
    return tr, system


def cpu_before_resume(saved: dict[str, Any] | None) -> float | None:
    """CPU seconds the path took in the processes before the checkpoint ``saved`` (``None``: none
    resumed; NaN: a checkpoint written before they were saved, whose wall-clock seconds counted
    pauses and other processes' work)."""
    if saved is None:
        return None
    cpu = saved.get("cpu")
    return float("nan") if cpu is None else float(cpu)


def _run(tr: _Tracker, lam_min: float, lam_max: float, init: Params | None, opts: EngineOptions,
         file: Path | None, key: str | None, saved: dict[str, Any] | None) -> float:
    """GAGA Algorithm 2 to ``lam_max``: the ACS solve at ``lam_min`` (unless resumed), then the
    path followed segment by segment, saved to ``file`` every ``checkpoint_every`` seconds and
    the file removed at the end.  Returns the start time ``t0`` of ``meta["time_s"]``."""
    # time_s counts the time before the checkpoint this call resumed from
    t0 = time.perf_counter() - (saved["elapsed"] if saved is not None else 0.0)
    # and its CPU seconds (a checkpoint from before they were saved: this process's only)
    before = cpu_before_resume(saved)
    c0 = time.process_time() - (before if before is not None and np.isfinite(before) else 0.0)
    last_save = time.monotonic()

    def after_segment() -> None:
        nonlocal last_save
        if file is not None and key is not None and time.monotonic() - last_save >= opts.checkpoint_every:
            checkpoint.save(file, key, tr, time.perf_counter() - t0, time.process_time() - c0)
            last_save = time.monotonic()

    # many small dense solves: one BLAS thread is faster, and much faster on a loaded machine
    with threadpool_limits(limits=opts.blas_threads, user_api="blas"):
        if saved is None:
            tr.start(lam_min, init, lam_max)
        tr.follow(lam_max, after_segment)
    if file is not None:
        file.unlink(missing_ok=True)
    return t0


def _meta(mdl: Model, spr: SPRegularizer, X: Array, lam_min: float, lam_max: float, opts: EngineOptions,
          tr: _Tracker, system: PathSystem, t0: float, saved: dict[str, Any] | None) -> dict[str, Any]:
    """The ``meta`` of the path: inputs, times and the counters of the tracker and the system."""
    st = tr.state
    meta = {
        "model": mdl.name,
        "model_params": {k: v for k, v in mdl.get_params().items()},
        "sp": spr.name,
        "sp_params": spr.get_params(),
        "lam_range": [lam_min, lam_max],
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "time_s": time.perf_counter() - t0,
        "time_before_resume_s": saved["elapsed"] if saved is not None else 0.0,
        # CPU seconds of the earlier processes (NaN: a checkpoint that did not record them)
        "cpu_before_resume_s": cpu_before_resume(saved) if saved is not None else 0.0,
        "n_resumes": st.n_resumes,
        "n_solver_steps": st.n_steps,
        "n_rhs": st.n_rhs,
        "n_singular": st.n_singular,
        "n_lstsq": st.n_lstsq,
        "n_failed_warm_starts": st.n_failed_warm_starts,
        "ode_method": opts.method,
        "n_stiff_switches": st.n_stiff_switches,
        "n_fold_retakes": st.n_fold_retakes,
        "n_compiled_calls": st.n_compiled_calls,
        "n_compiled_events": st.n_compiled_events,
        "n_compiled_handbacks": st.n_compiled_handbacks,
        "n_retaken_steps": st.n_retaken_steps,
        "n_stalled_segments": st.n_stalled_segments,
        "n_chatter_stops": st.n_chatter_stops,
        "n_acs_skips": st.n_acs_skips,
        "n_acs_skipped": st.n_acs_skipped,
        "n_polish_cycles": st.n_polish_cycles,
        "start_lam": float(st.start_lam) if np.isfinite(st.start_lam) else lam_min,
        "n_degenerate_acs": st.n_degenerate_acs,
        "degenerate_reason": st.degenerate_reason,
        "degenerate_gaps": [list(g) for g in st.degenerate_gaps],
    }
    meta.update(system.info())
    if st.n_lstsq > max(opts.lstsq_warn_min, opts.lstsq_warn_share * st.n_rhs):
        # J singular on most of the path: a degenerate point (w = 0 at a huge |b|) or duplicated data
        warnings.warn(f"GAGA: {st.n_lstsq} of {st.n_rhs} right-hand sides solved by least squares (J singular; "
                      "meta['n_lstsq'])", RuntimeWarning, stacklevel=3)
    return meta


def _to_path(tr: _Tracker, meta: dict[str, Any], groups: ColumnGroups | None) -> AgePath:
    """The tracker's :class:`AgePath`, with merged duplicated columns expanded back to the
    columns of ``X`` (``meta["duplicate_column_groups"]``)."""
    if groups is None:
        return tr.to_path(meta)
    meta["duplicate_column_groups"] = [np.flatnonzero(groups.group == g).tolist()
                                       for g in np.flatnonzero(groups.size > 1)]
    path = tr.to_path(meta)
    path.coef = groups.expand(path.coef)
    path.d_vec = groups.expand(path.d_vec)
    for e in path.events:  # feature indices of lasso moves back to original columns
        for m in e["moves"]:
            if m[1] in ("A", "inactive"):
                m[0] = int(groups.keep[m[0]])
    return path
