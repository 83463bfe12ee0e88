"""GAGA speed benchmark: the whole exact age-path against ACS on λ grids (issue 7).

    .venv/bin/python scripts/bench_gaga.py                 # all cases (long: hours with ACS at step 0.01)
    .venv/bin/python scripts/bench_gaga.py --quick         # small versions of every case (minutes)
    .venv/bin/python scripts/bench_gaga.py --cases lasso_music --lam-max 5

Cases: lasso on music (training rows of a 3:1 split, α = 0.005), lasso on a synthetic
set (n = 5000), SVM (RBF, γ = scale) on mfeat-pixel (3:1 split; ``--svm-max-n`` keeps its
first rows), the scaling series lasso n = 1k, 2k, 5k, 10k, 100k (paper Fig. 5; any
``lasso_n<N>``, or ``lasso_n<N>_d<D>`` with D features: ``lasso_n1000_d50`` is the
default-route case of issue 62, written by ``make bench`` to ``gaga_default.*``), and the SVM
rows of GAGA Table 2 exactly as the tables run them
(``svm_t2_mfeat_pixel``, ``svm_t2_pendigits``, ``svm_t2_hiva_agnostic``: run 0's fitting rows),
the logistic row hiva_agnostic of Table 5 (``logistic_t5_hiva_agnostic``, 1,617 features), and
linear-kernel SVM cells of Tables 12, 15 and 16 (``svm_linear_t12_pendigits``: C = 1;
``svm_linear_t16_pendigits_noise0.5``; ``svm_linear_t15_mfeat_pixel_noise0.4``).
Besides the times, each row has the CPU milliseconds of one pass over the data (the event
functions of every sample at the path's last point) and the cost of a critical point in
such passes (``critical_point_over_data_pass``; issue 20's target: at most 5).
``svm_mfeat_anchor`` is the SVM case at the size of the authors' anchor, 1,900 training
rows (run it with ``--no-acs``: ACS there takes hours).  For each: GAGA's path on [λ_min, λ_max], ACS
(warm-started, GAGA Algorithm 1) on the step-0.5 grid (the paper's baseline) and on the
step-0.01 grid (GAGA's resolution).  ACS at step 0.01 is timed on ``--acs-fine-max``
ages in five warm-started runs spread over the grid and scaled to the whole grid; the
output says so (column ``acs_fine_extrapolated``).  A small lasso path runs first, untimed
(``warmup_cpu_s``: with ``--method compiled`` the load of the numba code, once per process).
``--reference-method auto`` times GAGA again with that method in the same process
(``reference_*``: its CPU seconds, the speed-up, whether both give the same critical points
and the largest difference of their ages).  All in one process; wall-clock and
process CPU times are both recorded (``*_cpu_s``): on a shared 2-core machine the CPU
times, and the ratios computed from them, are the ones to read.  GAGA runs with one BLAS
thread (``EngineOptions.blas_threads``), and so does ACS here.
ACS is timed twice: with the model's own solver for each v-weighted fit (the paper's
baseline: scikit-learn's lasso, libsvm), and with the fits GAGA's warm starts use (the
exact warm-started active-set solvers of ``spl_bench.gaga.systems``; columns ``acs_own*``),
so that the part of each ratio due to the inner solver can be read off.
Writes ``results/bench/gaga.{csv,md}`` and, with two or more synthetic sizes, the scaling
figure ``gaga_scaling.png`` (paper Fig. 5; ``--plot-only`` redraws it from the CSV).
While it runs, the rows measured so far are kept in ``gaga.csv.tmp`` / ``gaga.md.tmp``
(rewritten after every case); the committed files are replaced only when every case is
done, so an interrupted or timed-out benchmark never overwrites them with a partial result.

Anchors measured by the issue author with the authors' released code on this machine
(not re-run here): SVM on mfeat-pixel 417 s per path, lasso on music 26-31 s per path.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from spl_bench.atomic import atomic_path, atomic_write_text
from spl_bench.gaga import age_path
from spl_bench.gaga.core.options import ODE_METHODS, EngineOptions
from spl_bench.gaga.systems import make_system
from spl_bench.methods.acs import acs_solve, lambda_grid
from spl_bench.models import get_model
from spl_bench.sp import get_sp

#: the authors' code on this machine, per path; each on the problem size it was measured on
#: (music: 794 training rows, the 3:1 split here; mfeat-pixel: 1,900 training rows)
AUTHORS_ANCHOR_S = {"lasso_music": 28.5, "svm_mfeat_anchor": 417.0}
#: cells of the GAGA tables as the tables run them: case -> (table, the cell's overrides)
TABLE_ROWS = {"svm_t2_mfeat_pixel": ("2", ("+table_row=t2_mfeat_pixel_n30",)),
              "svm_t2_pendigits": ("2", ("+table_row=t2_pendigits_n20",)),
              "svm_t2_hiva_agnostic": ("2", ("+table_row=t2_hiva_agnostic_n30",)),
              "logistic_t5_hiva_agnostic": ("5", ("+table_row=t5_hiva_agnostic_n30",)),
              # linear kernel (Q = G G^T of rank <= d + 1, the low-rank factors of docs/gaga.md)
              "svm_linear_t12_pendigits": ("12", ("model.params.C=1.0",)),
              "svm_linear_t16_pendigits_noise0.5": ("16", ("noise.rate=0.5",)),
              "svm_linear_t15_mfeat_pixel_noise0.4": ("15", ("noise.rate=0.4",))}
#: training rows of each case whose split is not 3:1
TRAIN_ROWS = {"svm_mfeat_anchor": 1900}


def _std(X):
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)


def load_case(name: str, quick: bool, seed: int = 40, max_n: int | None = None):
    from spl_bench.data.loaders import load_dataset

    if name.startswith("lasso_n"):  # lasso_n<N> (d = 20) or lasso_n<N>_d<D>
        size, _, dim = name[len("lasso_n"):].partition("_d")
        n, d = int(size), int(dim or 20)
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, d))
        w = rng.normal(size=d) * (rng.random(d) < 0.5)
        y = X @ w + 0.5 * rng.normal(size=n)
        bad = rng.random(n) < 0.3
        y[bad] += rng.normal(0.2, 3.0, bad.sum())
        return "lasso", {"alpha": 0.005}, _std(X), (y - y.mean()) / y.std()
    if name in TABLE_ROWS:
        return table_case(name, quick)
    data = {"lasso_music": "music", "svm_mfeat": "mfeat_pixel", "svm_mfeat_anchor": "mfeat_pixel"}[name]
    ds = load_dataset(data)
    test_size = len(ds.y) - TRAIN_ROWS[name] if name in TRAIN_ROWS else 0.25
    Xtr, _, ytr, _ = train_test_split(ds.X, ds.y, test_size=test_size, random_state=seed)
    if quick:
        Xtr, ytr = Xtr[:200], ytr[:200]
    if max_n:
        Xtr, ytr = Xtr[:max_n], ytr[:max_n]
    if name == "lasso_music":
        return "lasso", {"alpha": 0.005}, _std(Xtr), (ytr - ytr.mean()) / ytr.std()
    return "svm", {"C": 1.0, "kernel": "rbf", "gamma": "scale"}, _std(Xtr), ytr


def table_case(name: str, quick: bool, run: int = 0):
    """The fitting rows of run ``run`` of a GAGA table row, prepared as the table runs it (the
    row's config composed by Hydra: split, scaling, noise, validation hold-out)."""
    from spl_bench.data.loaders import load_dataset
    from spl_bench.protocol.run import prepare_run
    from spl_bench.runner import run_config
    from spl_bench.runner.cells import Cell, compose_cell

    table, overrides = TABLE_ROWS[name]
    cfg = compose_cell(Cell(table, f"gaga_table{table}", (*overrides, "method=gaga")))
    ds = load_dataset(run_config.plain(cfg.data))
    prep = prepare_run(ds, run_config.protocol_config(cfg), run_config.noise_config(cfg, ds.task), run)
    X, y = prep.X_fit, prep.y_fit
    if quick:
        X, y = X[:200], y[:200]
    params = run_config.plain(cfg.model.params)
    return str(cfg.model.name), params, X, y


def ms_per_data_pass(model_name, mparams, sp, X, y, path, repeats: int = 20) -> float:
    """CPU milliseconds of one pass over the data at the path's last point: the system's event
    functions of every sample and feature (``X w`` or the kernel rows ``Q a``, the losses and
    the threshold tests), the unit the cost of a critical point is measured in (issue 20)."""
    model = get_model(model_name, **mparams)
    system = make_system(model, sp, X, y)
    lam = float(path.lambdas[-1])
    system.init_from(_last_params(model, path, X, y), lam)
    theta = system.theta()
    with threadpool_limits(limits=1, user_api="blas"):
        system.events(theta, lam)  # caches (active columns) built outside the timing
        c0 = time.process_time()
        for _ in range(repeats):
            system.events(theta, lam)
        return 1e3 * (time.process_time() - c0) / repeats


def warm_up(method: str, sp) -> float:
    """CPU seconds of a small lasso path run before the timings, untimed in the rows: with
    ``method="compiled"`` it loads (or, on a new machine, compiles) the numba code once per
    process, as a sweep's worker does before its first run."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=60)
    c0 = time.process_time()
    age_path(X, y, model="lasso", sp=sp, lam_range=(0.2, 1.0), options=EngineOptions(method=method), alpha=0.01)
    return time.process_time() - c0


def reference_columns(method, path, c_gaga, X, y, model_name, sp, lam_range, mparams) -> dict:
    """GAGA timed again with the reference ODE ``method`` in this process: its CPU seconds, the
    speed-up of the benchmarked method over it, and the agreement of the two event logs (same
    number and kinds of critical points, the largest difference of their ages)."""
    if method is None:
        return {}
    c0 = time.process_time()
    ref = age_path(X, y, model=model_name, sp=sp, lam_range=lam_range, options=EngineOptions(method=method),
                   **mparams)
    c_ref = time.process_time() - c0
    same = [e["kind"] for e in ref.events] == [e["kind"] for e in path.events]
    dlam = (max((abs(a["lam"] - b["lam"]) for a, b in zip(ref.events, path.events, strict=True)), default=0.0)
            if same else np.nan)
    return {"reference_method": method, "reference_cpu_s": c_ref, "ratio_reference_over_gaga": c_ref / c_gaga,
            "same_critical_points": same, "max_critical_age_diff": dlam}


def _last_params(model, path, X, y):
    from spl_bench.models import Params
    from spl_bench.models.svm import resolve_gamma

    if path.dual_coef is not None:
        return Params(dual_coef=np.array(path.dual_coef[-1]), intercept=float(path.intercept[-1]), X_fit=X, y_fit=y,
                      extra={"gamma": resolve_gamma(model.gamma, X)})
    return Params(coef=np.array(path.coef[-1]), intercept=float(path.intercept[-1]))


class SystemFits:
    """A model whose v-weighted fits are those of GAGA's warm starts (``PathSystem.fit_weighted``).

    ``acs_solve`` then runs the same ACS iterations with the exact warm-started active-set
    solvers instead of the model's own solver; losses and KKT checks are the model's.
    """

    def __init__(self, model, sp, X, y):
        self.model = model
        self.system = make_system(model, sp, X, y)

    def fit_weighted(self, X, y, v, warm=None):
        if warm is None:
            return self.model.fit_weighted(X, y, v)
        return self.system.fit_weighted(v, warm)

    def losses(self, params, X, y):
        return self.model.losses(params, X, y)

    def kkt_violation(self, params, X, y, v):
        return self.model.kkt_violation(params, X, y, v)


def time_acs(model_name, mparams, sp, X, y, grid, max_points=None, n_chunks=5, own_fits=False):
    """Seconds for warm-started ACS along the whole ``grid`` (GAGA Algorithm 1 at each age).

    With ``max_points`` smaller than the grid, ACS is timed on ``n_chunks`` runs of
    consecutive ages spread evenly over the grid (each warm-started from an untimed
    ACS solve at the age before it, as in a sequential run) and the mean time per age
    is scaled to the whole grid; the early (small-age) ages alone would overstate it.
    """
    with threadpool_limits(limits=1, user_api="blas"):  # like GAGA: CPU times comparable
        return _time_acs(model_name, mparams, sp, X, y, grid, max_points, n_chunks, own_fits)


def _time_acs(model_name, mparams, sp, X, y, grid, max_points, n_chunks, own_fits):
    model = get_model(model_name, **mparams)
    if own_fits:
        model = SystemFits(model, sp, X, y)
    p0 = model.fit_weighted(X, y, np.ones(len(y)))
    if max_points is None or max_points >= len(grid):
        t0, c0 = time.perf_counter(), time.process_time()
        p = model.fit_weighted(X, y, np.ones(len(y)))
        for lam in grid:
            p, _, _, _ = acs_solve(model, sp, X, y, float(lam), p, tol=1e-10, max_iter=1000)
        return time.perf_counter() - t0, time.process_time() - c0, False
    m = max(1, max_points // n_chunks)
    starts = np.linspace(0, len(grid) - m, n_chunks).astype(int)
    spent, spent_cpu, timed = 0.0, 0.0, 0
    for s0 in starts:
        p = p0
        if s0 > 0:  # the warm start a sequential run would have (not timed)
            p, _, _, _ = acs_solve(model, sp, X, y, float(grid[s0 - 1]), p, tol=1e-10, max_iter=1000)
        t0, c0 = time.perf_counter(), time.process_time()
        for lam in grid[s0:s0 + m]:
            p, _, _, _ = acs_solve(model, sp, X, y, float(lam), p, tol=1e-10, max_iter=1000)
        spent += time.perf_counter() - t0
        spent_cpu += time.process_time() - c0
        timed += m
    return spent * len(grid) / timed, spent_cpu * len(grid) / timed, True


def plot_scaling(df: pd.DataFrame, path: Path) -> bool:
    """Paper Fig. 5 analogue: CPU seconds against n for GAGA and both ACS grids (synthetic lasso).

    Left: whole-path times (log-log); right: GAGA's CPU milliseconds per critical point and
    the number of critical points.  Returns False (no figure) with fewer than two sizes.
    """
    rows = df[df["case"].str.startswith("lasso_n")].sort_values("n")
    if len(rows) < 2:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for col, label in (("gaga_cpu_s", "GAGA (exact path)"), ("acs_step0.5_cpu_s", "ACS, step 0.5"),
                       ("acs_step0.01_cpu_s", "ACS, step 0.01")):
        ax.loglog(rows["n"], rows[col], "o-", label=label)
    ax.set(xlabel="n (training rows)", ylabel="CPU seconds", title=f"whole path, λ ∈ [0.1, {rows['lam_max'].max():g}]")
    ax.legend()
    if "reference_cpu_s" in rows and rows["reference_cpu_s"].notna().any():
        ax.loglog(rows["n"], rows["reference_cpu_s"], "o:", color="C0", alpha=0.6,
                  label=f"GAGA, {rows['reference_method'].dropna().iloc[0]} (same process)")
        ax.legend()
    ax2.loglog(rows["n"], rows["cpu_ms_per_critical_point"], "o-", color="C0", label="GAGA, per critical point")
    if "cpu_ms_per_data_pass" in rows:
        ax2.loglog(rows["n"], 5 * rows["cpu_ms_per_data_pass"], "k--", label="5 passes over the data (target)")
    ax2.set(xlabel="n (training rows)", ylabel="CPU ms")
    ax2.legend(loc="upper left", fontsize=8)
    crit = ax2.twinx()
    crit.plot(rows["n"], rows["turning"] + rows["jump"], "s--", color="C3")
    crit.set_ylabel("critical points", color="C3")
    fig.suptitle(f"synthetic lasso (d = {int(rows['d'].iloc[0])}), ODE solver {rows['ode_method'].iloc[0]}")
    fig.tight_layout()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=120, format="png")
    finally:
        plt.close(fig)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="*", default=["lasso_music", "lasso_n5000", "svm_mfeat", "lasso_n1000",
                                                      "lasso_n2000", "lasso_n10000"])
    ap.add_argument("--sp", default="linear")
    ap.add_argument("--lam-min", type=float, default=0.1)
    ap.add_argument("--lam-max", type=float, default=20.0)
    ap.add_argument("--acs-fine-max", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="small versions (n <= 1000, lam_max <= 3)")
    ap.add_argument("--out", default="results/bench")
    ap.add_argument("--stem", default=None, help="output file stem (default gaga or gaga_quick)")
    ap.add_argument("--method", default="fastest", choices=ODE_METHODS,
                    help="route of the engine (EngineOptions.method)")
    ap.add_argument("--reference-method", default=None, choices=ODE_METHODS,
                    help="also time GAGA with this ODE method in the same process (columns reference_*): "
                         "the speed-up of --method over it, and whether both give the same critical points")
    ap.add_argument("--svm-max-n", type=int, default=None,
                    help="use only the first N training rows for the SVM case (the full case is hours)")
    ap.add_argument("--plot-only", action="store_true", help="redraw the scaling figure from the CSV and exit")
    ap.add_argument("--no-acs", action="store_true",
                    help="time GAGA only (e.g. the full SVM case against the authors' anchor: ACS there is hours)")
    args = ap.parse_args()
    if args.plot_only:
        stem = args.stem or ("gaga_quick" if args.quick else "gaga")
        fig = Path(args.out) / f"{stem}_scaling.png"
        done = plot_scaling(pd.read_csv(Path(args.out) / f"{stem}.csv"), fig)
        print(f"wrote {fig}" if done else "fewer than two synthetic sizes: no figure")
        return
    cases = args.cases
    lam_max = args.lam_max
    if args.quick:
        small = {"lasso_n1000": "lasso_n300", "lasso_n2000": "lasso_n700", "lasso_n5000": "lasso_n500",
                 "lasso_n10000": "lasso_n1000"}
        cases = [small.get(c, c) for c in cases]
        lam_max = min(lam_max, 3.0)
    sp = get_sp(args.sp, **({"gamma": 0.5} if args.sp == "mixture" else {}))
    rows = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = args.stem or ("gaga_quick" if args.quick else "gaga")
    warm_s = warm_up(args.method, sp)
    for case in cases:
        max_n = args.svm_max_n if case.startswith("svm_mfeat") else None
        model_name, mparams, X, y = load_case(case, args.quick, max_n=max_n)
        t0, c0 = time.perf_counter(), time.process_time()
        path = age_path(X, y, model=model_name, sp=sp, lam_range=(args.lam_min, lam_max),
                        options=EngineOptions(method=args.method), **mparams)
        t_gaga, c_gaga = time.perf_counter() - t0, time.process_time() - c0
        cc = path.critical_counts()
        pass_ms = ms_per_data_pass(model_name, mparams, sp, X, y, path)
        ref_cols = reference_columns(args.reference_method, path, c_gaga, X, y, model_name, sp,
                                     (args.lam_min, lam_max), mparams)
        if args.no_acs:
            t_coarse = c_coarse = t_fine = c_fine = c_own_coarse = c_own_fine = np.nan
            extrap = None
        else:
            t_coarse, c_coarse, _ = time_acs(model_name, mparams, sp, X, y, lambda_grid(args.lam_min, lam_max, 0.5))
            t_fine, c_fine, extrap = time_acs(model_name, mparams, sp, X, y,
                                              lambda_grid(args.lam_min, lam_max, 0.01), args.acs_fine_max)
            _, c_own_coarse, _ = time_acs(model_name, mparams, sp, X, y, lambda_grid(args.lam_min, lam_max, 0.5),
                                          own_fits=True)
            _, c_own_fine, _ = time_acs(model_name, mparams, sp, X, y, lambda_grid(args.lam_min, lam_max, 0.01),
                                        args.acs_fine_max, own_fits=True)
        row = {
            "case": case, "n": X.shape[0], "d": X.shape[1], "sp": args.sp, "lam_max": lam_max,
            "gaga_s": t_gaga, "acs_step0.5_s": t_coarse, "acs_step0.01_s": t_fine,
            "acs_fine_extrapolated": extrap,
            "ratio_acs0.5_over_gaga": t_coarse / t_gaga, "ratio_acs0.01_over_gaga": t_fine / t_gaga,
            "gaga_cpu_s": c_gaga, "acs_step0.5_cpu_s": c_coarse, "acs_step0.01_cpu_s": c_fine,
            "cpu_ratio_acs0.5_over_gaga": c_coarse / c_gaga, "cpu_ratio_acs0.01_over_gaga": c_fine / c_gaga,
            "acs_own_step0.5_cpu_s": c_own_coarse, "acs_own_step0.01_cpu_s": c_own_fine,
            "cpu_ratio_acs_own0.5_over_gaga": c_own_coarse / c_gaga,
            "cpu_ratio_acs_own0.01_over_gaga": c_own_fine / c_gaga,
            "turning": cc["turning"], "jump": cc["jump"], "restarts": path.n_restarts,
            "points": len(path), "cpu_ms_per_critical_point": 1e3 * c_gaga / max(1, cc["turning"] + cc["jump"]),
            "cpu_ms_per_data_pass": pass_ms,
            "critical_point_over_data_pass": 1e3 * c_gaga / max(1, cc["turning"] + cc["jump"]) / pass_ms,
            "authors_code_s": None,
            "ratio_authors_over_gaga": None,
            "ode_method": args.method,
            "warmup_cpu_s": warm_s,
            **ref_cols,
            "n_failed_warm_starts": path.meta["n_failed_warm_starts"],
            "machine": platform.node(),
        }
        full_size = not args.quick and not (case.startswith("svm_mfeat") and args.svm_max_n)
        if case in AUTHORS_ANCHOR_S and full_size and lam_max == 20.0:
            row["authors_code_s"] = AUTHORS_ANCHOR_S[case]
            row["ratio_authors_over_gaga"] = AUTHORS_ANCHOR_S[case] / c_gaga
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        df = pd.DataFrame(rows)  # written after every case, so a long run keeps what it measured
        df.to_csv(out / f"{stem}.csv.tmp", index=False)
        (out / f"{stem}.md.tmp").write_text(df.to_string(index=False, float_format=lambda v: f"{v:.3g}") + "\n")
    if rows:  # every case done: only now replace the committed files
        df = pd.DataFrame(rows)
        atomic_write_text(out / f"{stem}.csv", df.to_csv(index=False))
        atomic_write_text(out / f"{stem}.md", df.to_string(index=False, float_format=lambda v: f"{v:.3g}") + "\n")
        for ext in ("csv", "md"):
            (out / f"{stem}.{ext}.tmp").unlink(missing_ok=True)
    print(pd.DataFrame(rows).to_string())
    if plot_scaling(pd.DataFrame(rows), out / f"{stem}_scaling.png"):
        print(f"wrote {out / f'{stem}_scaling.png'}")


if __name__ == "__main__":
    main()
