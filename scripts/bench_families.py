"""Proxies of the expensive cell families (issue 39), each route against the others in one process.

Each proxy is a subsample of a table cell's data with the cell's model and regularizer; its
cost is given in CPU seconds and in units of one dense ``d x d`` LU factorisation
(``scipy.linalg.lu_factor`` of a random SPD matrix of the proxy's order, timed in the same
process), so that the figure does not depend on the machine's speed.

* ``logistic_hiva_wide``: GAGA, logistic regression (C 0.5), mixture SP (gamma 0.2), 400 rows of
  hiva_agnostic with every non-constant column (n < d), 30 % of the labels flipped;
* ``logistic_hiva_tall``: the same on 1,000 rows and 300 random columns (n > d, as in the
  Tables 5-6 cells);
* ``logistic_hiva_cell``: the same on 2,306 rows and every column (n > d = 1,617, the size of a
  Tables 5-6 training set), followed from age 0.1 to ``CELL_LAM_MAX``: the refined solves' route;
  the path's live-row products through the dense rows or through ``X = 1 m^T + S``;
* ``svm_linear_mfeat``: GAGA, linear-kernel SVM (C 0.4), linear SP, 1,000 rows of mfeat-pixel (the
  first class against the rest, 30 % of the labels flipped): the family of Tables 8, 11, 12, 15 and 16,
  whose paths are mostly jump points and so ACS warm starts;
* ``outlier_path_musk``: Outlier-Path (variant s, linear kernel, C 1) on 640 rows of musk (the
  training rows of a 1,600-row subsample under Outlier-Path Table 2's 40 % split), 15 % flipped.

Routes: GAGA's ``auto`` (RK45 with the Newton corrector) and ``PC`` (predictor-corrector); for
the cell proxy, the path's products through the dense rows (``dense_rows``) or the split
(``split_rows``, the default); for the SVM, the trial polishes of the warm starts run all their
rounds (``full_polish``) or give up once the re-assignment of the sets cycles (``cycle_exit``,
the default); Outlier-Path has one route.
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

import numpy as np
import pandas as pd
import scipy.linalg as sla

from spl_bench.data.loaders import load_dataset
from spl_bench.gaga.api import age_path
from spl_bench.gaga.core.tracker import EngineOptions
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.paths import repo_root
from spl_bench.report.markdown import to_markdown


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
    with class attributes of the GLM path system set for that route): CPU seconds, LU units,
    critical points."""
    if not model_params:
        model_params = {"C": 0.5}
    if sp_params is None and sp == "mixture":
        sp_params = {"gamma": 0.2}
    unit = lu_unit(X.shape[1] + 1)
    out, ref = [], None
    for route, spec in routes.items():
        opts, attrs = spec if isinstance(spec, tuple) else (spec, {})
        saved = {a: getattr(GLMSystem, a) for a in attrs}
        t = time.process_time()
        try:
            for a, value in attrs.items():
                setattr(GLMSystem, a, value)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                path = age_path(X, y, model=model, sp=sp, sp_params=sp_params, lam_range=lam_range,
                                options=opts, **model_params)
        finally:
            for a, value in saved.items():
                setattr(GLMSystem, a, value)
        cpu = time.process_time() - t
        ages = np.array([e["lam"] for e in path.events])
        ref = ages if ref is None else ref
        same = ages.size == ref.size and bool(np.allclose(ages, ref, rtol=1e-8, atol=0.0))
        out.append({"case": name, "route": route, "n": X.shape[0], "d": X.shape[1], "cpu_s": cpu,
                    "lu_unit_ms": 1e3 * unit, "lu_units": cpu / unit, "events": ages.size,
                    "lu_units_per_event": cpu / unit / max(ages.size, 1), "restarts": path.n_restarts,
                    "same_events": same})
        print(out[-1], flush=True)
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


def outlier_path_case() -> list[dict]:
    """Outlier-Path (variant s, linear kernel, C 1) on 640 training rows of musk, 15 % flipped."""
    from spl_bench.methods.outlier_path.estimators import OutlierPath

    ds = load_dataset("musk")
    rng = np.random.default_rng(0)
    rows = rng.choice(len(ds.y), 640, replace=False)
    X, y = np.asarray(ds.X, float)[rows], np.where(np.asarray(ds.y)[rows] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    y[rng.random(y.size) < 0.15] *= -1
    unit = lu_unit(X.shape[1] + 1)
    t = time.process_time()
    est = OutlierPath(model_params={"kernel": "linear", "C": 1.0}, variant="s", C_grid=[1.0]).fit(X, y)
    cpu = time.process_time() - t
    n_ev = int(est.run_info()["n_events"])
    return [{"case": "outlier_path_musk", "route": "exact", "n": X.shape[0], "d": X.shape[1], "cpu_s": cpu,
             "lu_unit_ms": 1e3 * unit, "lu_units": cpu / unit, "events": n_ev,
             "lu_units_per_event": cpu / unit / max(n_ev, 1), "restarts": 0, "same_events": True}]


#: GAGA's ODE route against its predictor-corrector route
ODE_ROUTES = {"auto": EngineOptions(), "PC": EngineOptions(method="PC")}
#: the Tables 5-6 cell proxy is followed up to this age: 3 critical points, about 13 CPU-s a route
#: (past 2.0 a warm start alone takes minutes; the whole Table 6 path takes an hour or more)
CELL_LAM_MAX = 1.6
#: the path's live-row products through the dense rows against ``X = 1 m^T + S`` (GLMSystem.sparse_path_products)
SPLIT_ROUTES = {"dense_rows": (EngineOptions(), {"sparse_path_products": False}),
                "split_rows": (EngineOptions(), {"sparse_path_products": True})}
#: trial polishes with all their rounds against giving up once the set re-assignment cycles
POLISH_ROUTES = {"full_polish": EngineOptions(polish_cycle_exit=False), "cycle_exit": EngineOptions()}

CASES = {
    "logistic_hiva_wide": lambda: gaga_case("logistic_hiva_wide", *hiva(400, None), ODE_ROUTES),
    "logistic_hiva_tall": lambda: gaga_case("logistic_hiva_tall", *hiva(1000, 300), ODE_ROUTES),
    "logistic_hiva_cell": lambda: gaga_case("logistic_hiva_cell", *hiva(2306, None), SPLIT_ROUTES,
                                            lam_range=(0.1, CELL_LAM_MAX)),
    "svm_linear_mfeat": lambda: gaga_case("svm_linear_mfeat", *mfeat(1000), POLISH_ROUTES, model="svm", sp="linear",
                                          kernel="linear", C=0.4),
    "outlier_path_musk": outlier_path_case,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--stem", default="families")
    args = ap.parse_args()
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
          "process.", "", to_markdown(df.round(3)), ""]
    (out / f"{args.stem}.md").write_text("\n".join(md))
    print(df.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
