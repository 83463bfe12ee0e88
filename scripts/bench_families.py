"""Proxies of the expensive cell families (issue 39), each route against the others in one process.

Each proxy is a subsample of a table cell's data with the cell's model and regularizer; its
cost is given in CPU seconds and in units of one dense ``d x d`` LU factorisation
(``scipy.linalg.lu_factor`` of a random SPD matrix of the proxy's order, timed in the same
process), so that the figure does not depend on the machine's speed.  BLAS runs one thread, as in
the table sweeps (with two, OpenBLAS's waiting threads count as CPU time, and the ACS proxy's
libsvm give-ups differ).

* ``logistic_hiva_wide``: GAGA, logistic regression (C 0.5), mixture SP (gamma 0.2), 400 rows of
  hiva_agnostic with every non-constant column (n < d), 30 % of the labels flipped;
* ``logistic_hiva_tall``: the same on 1,000 rows and 300 random columns (n > d, as in the
  Tables 5-6 cells);
* ``logistic_hiva_cell``: the same on 2,306 rows and every column (n > d = 1,617, the size of a
  Tables 5-6 training set), followed from age 0.1 to ``CELL_LAM_MAX``: the refined solves' route;
  the path's live-row products through the dense rows or through ``X = 1 m^T + S``;
* ``logistic_hiva_solves``: the cell proxy followed to ``SOLVES_LAM_MAX`` (45 critical points),
  where the refined solves of the path and of the warm starts' Newton fits dominate: their
  factorisations and preconditioner before and after 03f3044 (``SOLVES_ROUTES``);
* ``svm_linear_mfeat``: GAGA, linear-kernel SVM (C 0.4), linear SP, 1,000 rows of mfeat-pixel (the
  first class against the rest, 30 % of the labels flipped): the family of Tables 8, 11, 12, 15 and 16,
  whose paths are mostly jump points and so ACS warm starts;
* ``outlier_path_musk``: Outlier-Path (variant s, linear kernel, C 1) on 640 rows of musk (the
  training rows of a 1,600-row subsample under Outlier-Path Table 2's 40 % split), 15 % flipped;
* ``outlier_path_musk_factor``: the same on 1,320 rows (half the Table 2 cell's training rows);
* ``outlier_path_musk_extended``: the same on 2,638 rows (the Table 2 cell's training rows);
* ``cccp_smo_musk``: the CCCP baseline's SMO fallback on a subproblem of the musk cell's size;
* ``acs_pendigits``: the ACS baseline, RBF kernel, linear SP, on the training rows of run 1 of the
  Table 2 pendigits (20 % noise) cell, first 4 ages: the family where guess-and-check gives up on
  most v-weighted fits after its 30 rounds;
* ``mospl_hiva_refits``: MOSPL's chained logistic refits (C 1) on the cell proxy's 2,306 rows and
  every column, at ``REFIT_POINTS`` linear-SP weight vectors of the ``v = 1`` fit's losses (the
  Tables 5-6 hiva cells' Pareto points have such weights).

Routes: GAGA's ``auto`` (RK45 with the Newton corrector) and ``PC`` (predictor-corrector); for
the wide proxy, each of them with the solves in the ``d + 1`` unknowns' dimension (``k_dim``) or in
the live samples' (``samples_dim``, the default; ``WoodburyFactor``); for the cell proxy, the
path's products through the dense rows (``dense_rows``) or the split
(``split_rows``, the default); for the SVM, the trial polishes of the warm starts run all their
rounds (``full_polish``) or give up once the re-assignment of the sets cycles (``cycle_exit``,
the default); for Outlier-Path, the engine's active-set gathers by numpy's fancy indexing or compiled
(the default), and the margins through Q or through the linear kernel's factor X (the default); for
CCCP, the SMO fallback's pair loop in numpy or compiled (the default); for ACS,
guess-and-check's give-ups taken as libsvm's point or solved exactly at libsvm's sets (the default).
A route's critical points are compared with the first route's
(``same_events``: the same count, ages within 1e-8 relative).

The data come from the local copies (``$SPL_BENCH_DATA_DIR``; ``make bench`` points it at
``../shared/datasets``).  Writes ``results/bench/families.csv`` and ``.md`` (with ``--cases``, the
rows of the other cases are kept from the earlier file)::

    python scripts/bench_families.py                 # every proxy
    python scripts/bench_families.py --cases logistic_hiva_tall
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from contextlib import nullcontext
from unittest.mock import patch

import numpy as np
import pandas as pd
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from spl_bench.data.loaders import load_dataset
from spl_bench.gaga.api import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.refined import CholeskyFactor
from spl_bench.gaga.core.warm import WarmStarts
from spl_bench.gaga.glm.design import GLMDesign
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.methods._acs_solvers import make_inner_solver
from spl_bench.methods.mospl import refit_chain, refit_order
from spl_bench.models import get_model
from spl_bench.paths import repo_root
from spl_bench.report.markdown import to_markdown
from spl_bench.runner.drift import kernel_family


def lu_unit(order: int, seconds: float = 1.0) -> float:
    """CPU seconds of one LU factorisation of a dense ``order x order`` matrix (median of a second's worth)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(order, order))
    A = A @ A.T + order * np.eye(order)
    sla.lu_factor(A)
    times = []
    start = time.process_time()
    while time.process_time() - start < seconds or len(times) < 5:
        t = time.process_time()
        sla.lu_factor(A)
        times.append(time.process_time() - t)
    return float(np.median(times))


def _row(case: str, route: str, X: np.ndarray, cpu: float, unit: float, events: int, same: bool,
         restarts: int = 0, warm_cpu: float = float("nan")) -> dict:
    """One row of the table (LU units: ``cpu`` over ``unit``, the seconds of one LU of the proxy's order;
    ``warm_units``: the CPU seconds of GAGA's ACS warm starts, Algorithm 2 line 8, in the same units)."""
    row = {"case": case, "route": route, "n": X.shape[0], "d": X.shape[1], "cpu_s": cpu, "lu_unit_ms": 1e3 * unit,
           "lu_units": cpu / unit, "events": events, "lu_units_per_event": cpu / unit / max(events, 1),
           "restarts": restarts, "warm_units": warm_cpu / unit, "same_events": same,
           # the LU unit depends on OpenBLAS's kernel family (0.47 ms at order 301 with SkylakeX, 0.99 with Haswell)
           "blas_kernels": kernel_family()}
    print(row, flush=True)
    return row


def hiva(n: int, n_cols: int | None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of hiva_agnostic (``n_cols`` random columns, or all), standardised, 30 % flipped."""
    ds = load_dataset("hiva_agnostic")
    X, y = np.asarray(ds.X, float), np.asarray(ds.y, float)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(y), n, replace=False)
    Xs = X[rows] if n_cols is None else X[rows][:, rng.choice(X.shape[1], n_cols, replace=False)]
    Xs = Xs[:, Xs.std(0) > 0]
    ys = np.where(y[rows] > 0, 1.0, -1.0)
    ys[rng.random(n) < 0.3] *= -1
    return (Xs - Xs.mean(0)) / Xs.std(0), ys


def gaga_case(name: str, X: np.ndarray, y: np.ndarray, routes: dict[str, EngineOptions | tuple[EngineOptions, dict]],
              model: str = "logistic", sp: str = "mixture", sp_params: dict | None = None,
              lam_range: tuple[float, float] = (0.1, 20.0), **model_params) -> list[dict]:
    """GAGA on ``(X, y)`` by each route (name: its engine options, or ``(options, {attribute: value})``
    with class attributes of the GLM path system, or of ``CholeskyFactor`` as ``"CholeskyFactor.name"``,
    set for that route): CPU seconds, LU units, critical points."""
    if not model_params:
        model_params = {"C": 0.5}
    if sp_params is None and sp == "mixture":
        sp_params = {"gamma": 0.2}
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route, spec in routes.items():
        opts, attrs = spec if isinstance(spec, tuple) else (spec, {})
        owners = {a: (CholeskyFactor, a.split(".", 1)[1]) if a.startswith("CholeskyFactor.") else (GLMSystem, a)
                  for a in attrs}
        saved = {a: getattr(*owners[a]) for a in attrs}
        warm_cpu = [0.0]

        def timed_warm_start(warm, *args, _inner=WarmStarts.warm_start, _acc=warm_cpu, **kwargs):
            # the warm starts' share: the initial ACS fit and the restarts after jumps
            t0 = time.process_time()
            try:
                return _inner(warm, *args, **kwargs)
            finally:
                _acc[0] += time.process_time() - t0

        t = time.process_time()
        try:
            for a, value in attrs.items():
                setattr(*owners[a], value)
            with warnings.catch_warnings(), patch.object(WarmStarts, "warm_start", timed_warm_start):
                warnings.simplefilter("ignore")
                path = age_path(X, y, model=model, sp=sp, sp_params=sp_params, lam_range=lam_range,
                                options=opts, **model_params)
        finally:
            for a, value in saved.items():
                setattr(*owners[a], value)
        cpu = time.process_time() - t
        ages = np.array([e["lam"] for e in path.events])
        ref = ages if ref is None else ref
        same = ages.size == ref.size and bool(np.allclose(ages, ref, rtol=1e-8, atol=0.0))
        out.append(_row(name, route, X, cpu, unit, ages.size, same, restarts=path.n_restarts, warm_cpu=warm_cpu[0]))
    return out


def mfeat(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of mfeat-pixel, standardised, the first class against the rest, 30 % flipped."""
    ds = load_dataset("mfeat_pixel")
    X, y = np.asarray(ds.X, float), np.asarray(ds.y)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(y), n, replace=False)
    X, y = X[rows], np.where(y[rows] == np.unique(y)[0], 1.0, -1.0)
    X = X[:, X.std(0) > 0]
    y[rng.random(n) < 0.3] *= -1
    return (X - X.mean(0)) / X.std(0), y


def musk(n: int = 640) -> tuple[np.ndarray, np.ndarray]:
    """``n`` training rows of musk (those of a 1,600-row subsample under Outlier-Path Table 2's 40 % split),
    standardised, 15 % of the labels flipped."""
    ds = load_dataset("musk")
    rng = np.random.default_rng(0)
    rows = rng.choice(len(ds.y), n, replace=False)
    X, y = np.asarray(ds.X, float)[rows], np.where(np.asarray(ds.y)[rows] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    y[rng.random(y.size) < 0.15] *= -1
    return X, y


#: Outlier-Path's routes: (active-set gathers compiled?, margins through the linear kernel's factor X?,
#: extended-precision right-hand sides over the non-zero fixed coefficients only?)
GATHER_ROUTES = {"numpy_gathers": (False, False, True), "compiled_gathers": (True, False, True)}
FACTOR_ROUTES = {"through_K": (True, False, True), "through_X": (True, True, True)}
EXTENDED_ROUTES = {"all_fixed_extended": (True, True, False), "nonzero_fixed_extended": (True, True, True)}


def all_fixed_part_hi(QAF: np.ndarray, yF: np.ndarray, af: np.ndarray) -> tuple[np.ndarray, np.longdouble]:
    """The route before dd33245 (:func:`~spl_bench.methods.outlier_path.linalg.fixed_part_hi` over every
    fixed coefficient, zeros included)."""
    afl = af.astype(np.longdouble)
    return QAF.astype(np.longdouble) @ afl, yF.astype(np.longdouble) @ afl


def outlier_path_case(name: str = "outlier_path_musk", n: int = 640,
                      routes: dict[str, tuple[bool, bool, bool]] = GATHER_ROUTES) -> list[dict]:
    """Outlier-Path (variant s, linear kernel, C 1) on ``n`` of :func:`musk`'s rows, by each route:
    the engine's active-set gathers by numpy's fancy indexing (``numpy_gathers``) or compiled
    (``compiled_gathers``), both with the margins ``Q a`` through Q, bit-identical; or the margins
    through Q (``through_K``) or through ``Z = diag(y) X`` (``through_X``, the default for a linear
    kernel with 2d < n), which round differently: ``same_events`` there compares the breakpoints'
    parameters and coefficients within 1e-8; or the extended-precision right-hand sides of the
    ill-conditioned active systems over every fixed coefficient (``all_fixed_extended``) or over the
    non-zero ones (``nonzero_fixed_extended``, the default), bit-identical."""
    from spl_bench.methods.outlier_path import estimators
    from spl_bench.methods.outlier_path import linalg as op_linalg
    from spl_bench.methods.outlier_path.estimators import OutlierPath
    from spl_bench.methods.outlier_path.linalg import ActiveSystem

    X, y = musk(n)
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route, (compiled, through_x, nonzero_hi) in routes.items():
        t = time.process_time()
        with (patch.object(ActiveSystem, "compiled_gathers", compiled),
              patch.object(estimators, "linear_factor", estimators.linear_factor if through_x else lambda k, X: None),
              patch.object(op_linalg, "fixed_part_hi", op_linalg.fixed_part_hi if nonzero_hi else all_fixed_part_hi)):
            est = OutlierPath(model_params={"kernel": "linear", "C": 1.0}, variant="s", C_grid=[1.0]).fit(X, y)
        cpu = time.process_time() - t
        bps = [(bp.param, bp.b, bp.alpha) for p in est.paths_ for bp in p.breakpoints]
        ref = bps if ref is None else ref
        exact = routes is not FACTOR_ROUTES
        same = len(bps) == len(ref) and all(
            (a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2])) if exact else
            (np.isclose(a[0], b[0], rtol=1e-8, atol=1e-10) and np.allclose(a[2], b[2], rtol=0.0, atol=1e-8))
            for a, b in zip(bps, ref, strict=True))
        n_ev = int(est.run_info()["n_events"])
        out.append(_row(name, route, X, cpu, unit, n_ev, same))
    return out


def cccp_smo_case() -> list[dict]:
    """CCCP's SMO fallback on a subproblem of the musk table cell's size (2,638 rows, linear kernel, C 1,
    15 % of the points on the outliers' box ``[-C, 0]`` as with ``s`` fixed and ``theta = 0``), from zero,
    ``SMO_PAIRS`` pairs: the pair loop in numpy (``numpy_smo``) or compiled (``compiled_smo``, the
    default).  ``events`` counts the pairs; ``same_events``: the iterates bit-identical to the first route's.
    (Smaller CCCP proxies of musk never fall back to SMO: their subproblem homotopies stay regular.)"""
    from spl_bench.methods.outlier_path.cccp import smo_box

    X, y = musk(2638)
    Q = np.outer(y, y) * (X @ X.T)
    out_box = np.random.default_rng(1).random(y.size) < 0.15
    lo, hi = np.where(out_box, -1.0, 0.0), np.where(out_box, 0.0, 1.0)
    smo_box(Q[:3, :3], y[:3], lo[:3], hi[:3])  # compiled (or loaded from numba's cache) before timing
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route, flag in (("numpy_smo", False), ("compiled_smo", True)):
        t = time.process_time()
        alpha, b, pairs = smo_box(Q, y, lo, hi, tol=1e-8, max_iter=SMO_PAIRS, compiled=flag)
        cpu = time.process_time() - t
        ref = (alpha, b) if ref is None else ref
        same = bool(np.array_equal(alpha, ref[0]) and b == ref[1])
        out.append(_row("cccp_smo_musk", route, X, cpu, unit, pairs, same))
    return out


def pendigits_cell(n: int, row: str = "t2_pendigits_n20", seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The first ``n`` training rows of run ``seed`` of a Table 2 pendigits cell (its split, scaling and
    label noise, as the table sweep fits them)."""
    from spl_bench.protocol.run import prepare_run
    from spl_bench.runner import run_config
    from spl_bench.runner.cells import compose_cell, table_cells

    cell = next(c for c in table_cells("2", ["acs"], ["pendigits"]) if row in c.label)
    cfg = compose_cell(cell)
    ds = load_dataset(run_config.plain(cfg.data))
    prep = prepare_run(ds, run_config.protocol_config(cfg), run_config.noise_config(cfg, ds.task), seed)
    return np.asarray(prep.X_fit[:n], float), np.asarray(prep.y_fit[:n], float)


def acs_pendigits_case() -> list[dict]:
    """The ACS baseline, RBF kernel (C 1, gamma "scale"), linear SP, on ``ACS_ROWS`` training rows of
    :func:`pendigits_cell` over the ages ``ACS_AGES``, by three routes:

    * ``hybrid``: ``inner_solver=hybrid``, guess-and-check's give-ups taken as libsvm's point (the
      route of the rows committed before 2026-11-27, bit for bit);
    * ``exact`` (the default): give-ups solved exactly at the sets of libsvm's solution, and
      guess-and-check's products with rows of Q in place (``WeightedSVMDual.compiled_rows``).

    ``events`` counts the v-weighted fits; ``same_events``: every age's dual coefficients agree
    with the first route's to 1e-6 of their largest (libsvm's error where the hybrid ACS
    converged; more where it ran out of iterations)."""
    from spl_bench.methods.acs import ACS

    X, y = pendigits_cell(ACS_ROWS)
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route in ("hybrid", "exact"):
        t = time.process_time()
        est = ACS(model="svm", model_params={"C": 1.0, "kernel": "rbf", "gamma": "scale"}, sp="linear",
                  lam_grid=ACS_AGES, inner_solver=route).fit(X, y)
        cpu = time.process_time() - t
        coefs = np.array([m.dual_coef for m in est.candidate_models_])
        ref = coefs if ref is None else ref
        same = bool(np.abs(coefs - ref).max() <= 1e-6 * max(float(np.abs(ref).max()), 1e-300))
        out.append(_row("acs_pendigits", route, X, cpu, unit, int(est.run_info()["inner_fits"]), same))
    return out


def mospl_refits_case() -> list[dict]:
    """MOSPL's refit chain (``refit_chain`` in ``refit_order``, from the ``v = 1`` fit) on :func:`hiva`'s
    2,306 rows: the logistic refits by each route; ``events``: the refits, ``same_events``: every
    refit's coefficients within 1e-8 (relative) of the first route's."""
    X, y = hiva(2306, None)
    model = get_model("logistic", C=1.0)
    full = model.fit_weighted(X, y, np.ones(len(y)))
    losses = model.losses(full, X, y)
    # linear SP weights v = max(0, 1 - ell / lam) at ages spread over the losses' range
    lams = np.quantile(losses, np.linspace(0.55, 0.95, REFIT_POINTS))
    V = np.clip(1.0 - losses[None, :] / lams[:, None], 0.0, 1.0)
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route, refuse in (("hessian_each_step", True), ("checked_refined", False)):
        fits, _ = make_inner_solver("hybrid", model, X, y, distant_starts=True)
        t = time.process_time()
        # hessian_each_step: the check refuses every refined step, so each is solved with its Hessian
        refusing = patch.object(GLMDesign, "_newton_step_ok", lambda *a, **k: False) if refuse else nullcontext()
        with warnings.catch_warnings(), refusing:
            warnings.simplefilter("ignore")
            params = refit_chain(fits, X, y, V, refit_order(V), full)
        cpu = time.process_time() - t
        coefs = np.array([np.append(p.coef, p.intercept) for p in params])
        ref = coefs if ref is None else ref
        same = bool(np.abs(coefs - ref).max() <= 1e-8 * (1.0 + float(np.abs(ref).max())))
        out.append(_row("mospl_hiva_refits", route, X, cpu, unit, len(params), same))
    return out


#: weight vectors of the MOSPL refit proxy (a Tables 5-6 hiva run refits about 148)
REFIT_POINTS = 12

#: rows and ages of the ACS proxy (the whole training set of the cell; the cell runs 40 ages)
ACS_ROWS = 2098
ACS_AGES = [0.1, 0.6, 1.1, 1.6]

#: pairs of the SMO proxy (the Table 2 CCCP-s musk cell ran 2.5 million in 58 fallbacks)
SMO_PAIRS = 20_000

#: GAGA's ODE route against its predictor-corrector route
ODE_ROUTES = {"auto": EngineOptions(), "PC": EngineOptions(method="PC"),
              # the opt-in over-relaxed ACS escape: fewer ACS iterations, but it may settle on
              # another partial optimum than plain ACS (GAGA's restart rule)
              "PC_acs_extrapolate": EngineOptions(method="PC", acs_extrapolate=True)}
#: the wide proxy's solves with J_theta and the warm starts' Hessians in the k = d + 1 unknowns' dimension
#: (``woodbury_max_ratio`` 0, the route before 2323301) against the live samples' (WoodburyFactor), by
#: either ODE route
WIDE_ROUTES = {"k_dim": (EngineOptions(), {"woodbury_max_ratio": 0.0}),
               "k_dim_PC": (EngineOptions(method="PC"), {"woodbury_max_ratio": 0.0}),
               "samples_dim": (EngineOptions(), {"woodbury_max_ratio": 0.5}),
               "samples_dim_PC": (EngineOptions(method="PC"), {"woodbury_max_ratio": 0.5}),
               "samples_dim_acs_extrapolate": (EngineOptions(acs_extrapolate=True), {"woodbury_max_ratio": 0.5})}
#: the Tables 5-6 cell proxy is followed up to this age: 3 critical points, about 13 CPU-s a route
#: (past 2.0 a warm start alone takes minutes; the whole Table 6 path takes an hour or more)
CELL_LAM_MAX = 1.6
#: the path's live-row products through the dense rows against ``X = 1 m^T + S`` (GLMSystem.sparse_path_products)
SPLIT_ROUTES = {"dense_rows": (EngineOptions(), {"sparse_path_products": False}),
                "split_rows": (EngineOptions(), {"sparse_path_products": True})}
#: the solves' route of the Tables 5-6 cell proxy followed further (to ``SOLVES_LAM_MAX``): Cholesky
#: attempted first and the preconditioner's inverse in double precision (``double_inverse``, the
#: route before 03f3044) against LU first after an indefinite J_theta and the inverse in single
#: precision (``single_inverse``, the default)
SOLVES_ROUTES = {"double_inverse": (EngineOptions(), {"lu_first_when_indefinite": False,
                                                      "CholeskyFactor.single_inverse": False}),
                 "single_inverse": (EngineOptions(), {"lu_first_when_indefinite": True,
                                                      "CholeskyFactor.single_inverse": True})}
#: 45 critical points of the cell proxy, 240-300 CPU-s a route (the refined solves dominate)
SOLVES_LAM_MAX = 1.8
#: trial polishes with all their rounds against giving up once the set re-assignment cycles
POLISH_ROUTES = {"full_polish": EngineOptions(polish_cycle_exit=False), "cycle_exit": EngineOptions()}

CASES = {
    "logistic_hiva_wide": lambda: gaga_case("logistic_hiva_wide", *hiva(400, None), WIDE_ROUTES),
    "logistic_hiva_tall": lambda: gaga_case("logistic_hiva_tall", *hiva(1000, 300), ODE_ROUTES),
    "logistic_hiva_cell": lambda: gaga_case("logistic_hiva_cell", *hiva(2306, None), SPLIT_ROUTES,
                                            lam_range=(0.1, CELL_LAM_MAX)),
    "logistic_hiva_solves": lambda: gaga_case("logistic_hiva_solves", *hiva(2306, None), SOLVES_ROUTES,
                                              lam_range=(0.1, SOLVES_LAM_MAX)),
    "svm_linear_mfeat": lambda: gaga_case("svm_linear_mfeat", *mfeat(1000), POLISH_ROUTES, model="svm", sp="linear",
                                          kernel="linear", C=0.4),
    "outlier_path_musk": outlier_path_case,
    "outlier_path_musk_factor": lambda: outlier_path_case("outlier_path_musk_factor", 1320, FACTOR_ROUTES),
    "outlier_path_musk_extended": lambda: outlier_path_case("outlier_path_musk_extended", 2638, EXTENDED_ROUTES),
    "cccp_smo_musk": cccp_smo_case,
    "acs_pendigits": acs_pendigits_case,
    "mospl_hiva_refits": mospl_refits_case,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--stem", default="families")
    args = ap.parse_args()
    with threadpool_limits(limits=1):  # one BLAS thread, as the table sweeps run each cell
        rows = [r for c in args.cases for r in CASES[c]()]
    df = pd.DataFrame(rows)
    out = repo_root() / "results" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    old = out / f"{args.stem}.csv"
    if old.is_file():  # the other cases' rows of an earlier run are kept
        kept = pd.read_csv(old)
        df = pd.concat([kept[~kept["case"].isin(args.cases)], df], ignore_index=True)
    df.to_csv(out / f"{args.stem}.csv", index=False)
    md = [f"# Cost families' proxies ({time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()})",
          "", "`python scripts/bench_families.py`; LU units: CPU seconds over one dense d x d LU in the same "
          "process; warm_units: the part of them in GAGA's ACS warm starts (the initial fit and the restarts "
          "after jumps); same_events: the route's events against the case's first route.", "",
          to_markdown(df.round(3)), ""]
    (out / f"{args.stem}.md").write_text("\n".join(md))
    print(df.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
