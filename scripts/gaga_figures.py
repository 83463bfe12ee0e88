"""Reproduce GAGA's Figure 4 (robustness to noise) and Figure 5 (efficiency), NeurIPS 2022.

    export SPL_BENCH_DATA_DIR=/work/shared/datasets
    nice -n 10 env OMP_NUM_THREADS=1 .venv/bin/python scripts/gaga_figures.py            # both figures
    .venv/bin/python scripts/gaga_figures.py --fig 4 --seeds 5
    .venv/bin/python scripts/gaga_figures.py --quick --out /tmp/figs                     # smoke run (< 1 min)

Setting (the Table 2 row ``configs/table_row/t2_music_n30.yaml``): music, lasso α = 5e-3 (no
intercept), linear SP-regularizer, ages [0.1, 20]; GAGA with the defaults of
``configs/method/gaga.yaml``, ACS with those of ``configs/method/acs.yaml``.

**Figure 4** (learning curves under noise).  For each noise rate (default 0, 0.1, 0.2, 0.3, 0.4;
``target_gaussian``, the regression noise of ``spl-bench run``) and seed k (run k of the protocol,
default seeds 0-2), the data are prepared by :func:`spl_bench.protocol.run_once` itself with the
default protocol (3:1 split seeded 40 + k, standardised on the training rows, round(rate · n_train)
training targets corrupted, 20 % of the noisy training rows held out for validation): GAGA and ACS
are fitted on the same 635 rows, exactly as ``spl-bench run experiment=gaga_table2
+table_row=t2_music_n30 noise.rate=<rate> method=<gaga|acs>`` does.  The curve is the test
generalisation error (MSE on the standardised clean test target, 265 rows) of

* GAGA: the path's solution at 400 evenly spaced ages, at ACS's grid ages (``point = acs_age``)
  and at every recorded point that is not a plain solver step (start, both sides of every
  critical point: ``point = critical``);
* ACS (step 0.5): its partial optimum at each of its 40 grid ages (``point = acs_age``).

ACS rows carry ``same_point``: ACS converged there and GAGA's point at that age has the same
sample partition {i : v*_i > 0} and is a partial optimum (KKT of the v*-weighted lasso ≤ 1e-3,
to the dense output's accuracy); where it is true both methods sit on the same partial optimum
and their test errors must agree (``tests/test_gaga_figures.py``).  Where it is false the
warm-started ACS grid walk and the path are on different branches (after a jump).

**Figure 5** (efficiency; CPU seconds of the fitting process, ``time.process_time``, one BLAS
thread).  Data: the training rows of protocol run k (split, scaling, 30 % target noise with the
protocol's own functions), no validation hold-out, then a random subset of n rows.

* (a) time against n ∈ {200, 400, 600, 794} (794 = every training row of the 3:1 split) on
  [0.1, 20];
* (b) time against the interval length, [0.1, λ_max] with λ_max ∈ {2, 5, 10, 20}, n = 794.
  The n = 794, λ_max = 20 fits are measured once and appear in both panels.

Methods: GAGA (the whole path, ``GAGA(n_grid=0).fit``), ACS at step 0.5 (the paper's baseline)
and ACS at step 0.01 (GAGA's resolution).  **Cap**: ACS at step 0.01 is run in full when its grid
has at most ``--acs-fine-max`` ages (default 100); longer grids (1,991 ages on [0.1, 20]) are timed
on 5 runs of 20 consecutive ages spread over the grid, each warm-started from an untimed ACS solve
at the age before it, and scaled to the whole grid (``extrapolated = True`` in the CSV; on music
that is 5 % of the 2-4 CPU-minutes a full grid takes per fit; the cost per age varies by a factor
~2 along the grid, 70-170 ms at n = 200, so the estimate is rough).  Seeds: 0-1.

Sizes and cost (CPU time of the process on the shared 2-core VM, measured): Figure 4,
5 noise rates × 3 seeds (GAGA 5-9 s + ACS 0.4-0.6 s each), 118 s CPU; Figure 5, 7 configurations
× 2 seeds, 312 s CPU (ACS at step 0.01 is 85 % of it).  ``--quick``: Figure 4 on 240 random music rows, noise 0.3, one
seed, ages [0.1, 3]; Figure 5 with n ∈ {60, 100}, λ_max ∈ {0.5, 1}, the ACS step-0.01 cap 10 ages.

Outputs (``--out``, default ``results/figures``): ``gaga_fig4.{csv,png}``, ``gaga_fig5.{csv,png}``.
A CSV is written (to a temporary file, then renamed) only when its figure has completed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from spl_bench.atomic import atomic_write_text
from spl_bench.data import Dataset, load_dataset
from spl_bench.methods.acs import ACS, acs_solve, lambda_grid
from spl_bench.methods.gaga import GAGA
from spl_bench.models import Params, get_model
from spl_bench.protocol.metrics import candidate_scores
from spl_bench.protocol.run import NoiseConfig, ProtocolConfig, prepare_run, run_once
from spl_bench.sp import get_sp

ALPHA = 5e-3  # configs/table_row/t2_music_n30.yaml
MODEL_PARAMS = {"alpha": ALPHA}
LAM_MIN, LAM_MAX = 0.1, 20.0
NOISE_KIND = "target_gaussian"  # noise.kind=auto for a regression task
FIG5_NOISE = 0.3
#: GAGA's point at an ACS age counts as a partial optimum below this KKT violation (relative to n α):
#: the dense output is accurate to ~1e-7 in the coefficients, which is ~1e-5 in this measure
KKT_PARTIAL = 1e-3

FIG4_COLUMNS = ["noise_rate", "method", "seed", "lam", "test_error", "point", "same_point"]
FIG5_COLUMNS = ["panel", "method", "n", "lam_max", "seed", "cpu_s", "n_critical_points", "n_ages", "extrapolated"]

GAGA_NAME, ACS_NAME, ACS_FINE_NAME = "GAGA", "ACS (step 0.5)", "ACS (step 0.01)"


def log(msg: str) -> None:
    print(msg, flush=True)


class _Recording:
    """Mixin: keeps the rows the estimator was fitted on and the CPU time of ``fit``."""

    def fit(self, X, y):  # noqa: D401 - same signature as the estimators
        self.X_fit_, self.y_fit_ = np.asarray(X), np.asarray(y)
        c0 = time.process_time()
        with threadpool_limits(limits=1, user_api="blas"):
            super().fit(X, y)
        self.cpu_s_ = time.process_time() - c0
        return self


class RecGAGA(_Recording, GAGA):
    pass


class RecACS(_Recording, ACS):
    pass


def write_csv(df: pd.DataFrame, path: Path) -> None:
    """Write ``df`` to ``path`` as CSV by an atomic rename (a reader never sees half of it)."""
    atomic_write_text(path, df.to_csv(index=False))


# ----------------------------------------------------------------------------------- Figure 4
def clean_test_rows(ds: Dataset, protocol: ProtocolConfig, run: int) -> tuple[np.ndarray, np.ndarray]:
    """The clean scaled test rows of protocol run ``run`` (``run_once``'s own preparation, ``prepare_run``)."""
    prep = prepare_run(ds, protocol, NoiseConfig(), run)
    sc = prep.scaled if prep.clean is None else prep.clean
    return sc.X_test, sc.y_test


def _errors(model, vecs: np.ndarray, bs: np.ndarray, X: np.ndarray, y: np.ndarray, task: str) -> np.ndarray:
    preds = np.vstack([model.predict(Params(coef=w, intercept=float(b)), X) for w, b in zip(vecs, bs, strict=True)])
    return candidate_scores(task, preds, y)


def fig4_one(ds: Dataset, rate: float, seed: int, lam_max: float, n_dense: int) -> list[dict]:
    """GAGA's and ACS's test-error curves for one noise rate and one protocol run."""
    protocol = ProtocolConfig()
    noise = NoiseConfig(kind=NOISE_KIND if rate > 0 else "none", rate=rate)
    fitted = {}

    def keep(est, _run):
        fitted["est"] = est

    out_g = run_once(ds, lambda: RecGAGA(model="lasso", model_params=MODEL_PARAMS, sp="linear",
                                         lam_min=LAM_MIN, lam_max=lam_max), protocol, noise, seed, after_fit=keep)
    gaga = fitted["est"]
    cc = gaga.path_.critical_counts()
    log(f"[fig4] noise={rate:g} seed={seed} GAGA  {gaga.cpu_s_:6.2f} s CPU  {cc['turning']} turning, "
        f"{cc['jump']} jump points; selected lam={out_g.lam:.3g} test error {out_g.value:.4f}")
    out_a = run_once(ds, lambda: RecACS(model="lasso", model_params=MODEL_PARAMS, sp="linear",
                                        lam_min=LAM_MIN, lam_max=lam_max, lam_step=0.5),
                     protocol, noise, seed, after_fit=keep)
    acs = fitted["est"]
    log(f"[fig4] noise={rate:g} seed={seed} ACS   {acs.cpu_s_:6.2f} s CPU  {len(acs.lambdas_)} ages; "
        f"selected lam={out_a.lam:.3g} test error {out_a.value:.4f}")
    if not (np.array_equal(gaga.X_fit_, acs.X_fit_) and np.array_equal(gaga.y_fit_, acs.y_fit_)):
        raise RuntimeError("GAGA and ACS were not fitted on the same rows")

    X_te, y_te = clean_test_rows(ds, protocol, seed)
    model, path, task = gaga.model_, gaga.path_, ds.task
    rows = []

    def add(method, lams, errs, point, same=None):
        for i, (lam, err) in enumerate(zip(lams, errs, strict=True)):
            rows.append({"noise_rate": rate, "method": method, "seed": seed, "lam": float(lam),
                         "test_error": float(err), "point": point,
                         "same_point": None if same is None else bool(same[i])})

    dense = np.linspace(path.lambdas[0], path.lambdas[-1], n_dense)
    W, B = path.at(dense)
    add(GAGA_NAME, dense, _errors(model, W, B, X_te, y_te, task), "grid")
    crit = np.flatnonzero(path.point_kind != "step")
    add(GAGA_NAME, path.lambdas[crit], _errors(model, path.values[crit], path.intercept[crit], X_te, y_te, task),
        "critical")

    ages = acs.lambdas_
    Wa, Ba = path.at(ages)
    add(GAGA_NAME, ages, _errors(model, Wa, Ba, X_te, y_te, task), "acs_age")
    acs_errs = candidate_scores(task, acs.predict_candidates(X_te), y_te)
    sp = gaga._make_sp()
    Xf, yf = gaga.X_fit_, gaga.y_fit_
    same = np.zeros(len(ages), dtype=bool)
    for k, lam in enumerate(ages):
        p = Params(coef=Wa[k], intercept=float(Ba[k]))
        v = sp.v_star(model.losses(p, Xf, yf), float(lam))
        kkt = model.kkt_violation(p, Xf, yf, v)
        same[k] = bool(acs.converged_[k]) and kkt <= KKT_PARTIAL and np.array_equal(v > 0, acs.v_path_[k] > 0)
    add(ACS_NAME, ages, acs_errs, "acs_age", same)
    gaga_at = _errors(model, Wa, Ba, X_te, y_te, task)
    diff = np.abs(gaga_at - acs_errs)
    log(f"[fig4] noise={rate:g} seed={seed} same partial optimum at {same.sum()}/{len(ages)} ACS ages; "
        f"max |GAGA - ACS| test error there {diff[same].max(initial=0.0):.2e}, elsewhere "
        f"{diff[~same].max(initial=0.0):.2e}")
    return rows


def run_fig4(ds: Dataset, rates, seeds, lam_max, n_dense) -> pd.DataFrame:
    rows = []
    for rate in rates:
        for seed in seeds:
            rows += fig4_one(ds, rate, seed, lam_max, n_dense)
    return pd.DataFrame(rows, columns=FIG4_COLUMNS)


def plot_fig4(df: pd.DataFrame, file: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted(df.noise_rate.unique())
    n_seeds = df.seed.nunique()
    ncol = min(3, len(rates))
    nrow = -(-len(rates) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.5 * nrow), squeeze=False)
    for ax, rate in zip(axes.flat, rates, strict=False):
        d = df[df.noise_rate == rate]
        gg = d[d.method == GAGA_NAME]
        for i, (_seed, s) in enumerate(gg[gg.point != "acs_age"].groupby("seed")):
            s = s.sort_values("lam", kind="stable")
            ax.plot(s.lam, s.test_error, color="tab:red", lw=0.6, alpha=0.35,
                    label="GAGA, each seed (grid + critical points)" if i == 0 else None)
        g = gg[gg.point == "grid"].groupby("lam").test_error.mean()
        ax.plot(g.index, g.values, color="darkred", lw=1.8, label=f"GAGA, mean of {n_seeds} seeds")
        a = d[d.method == ACS_NAME].groupby("lam").test_error.mean()
        ax.plot(a.index, a.values, "o--", color="tab:blue", ms=3.5, lw=1.0, label=f"ACS step 0.5, mean of {n_seeds}")
        ax.axvline(g.idxmin(), color="grey", lw=0.8, ls=":", label="best age of the GAGA mean")
        ax.set_xscale("log")
        ax.set_title(f"noise {rate:.0%}")
        ax.set_xlabel("age λ (log scale)")
        lo, hi = min(g.min(), a.min()), max(g.max(), a.max())
        ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.15 * (hi - lo))
        ax.grid(alpha=0.3, which="both")
        ax.set_ylabel("test generalisation error")
    for ax in list(axes.flat)[len(rates):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if len(rates) < nrow * ncol:
        axes.flat[-1].legend(handles, labels, loc="center", fontsize=9)
    else:
        axes.flat[0].legend(fontsize=7)
    fig.suptitle("GAGA Fig. 4 (music, lasso α = 5e-3, linear SP): test error along the age under noise",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(file, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------------- Figure 5
def fig5_training_rows(ds: Dataset, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The noisy scaled training rows of protocol run ``seed`` (30 % target noise, no validation hold-out)."""
    # selection on the test rows: no validation rows are held out of the (noisy) training rows
    prep = prepare_run(ds, ProtocolConfig(selection="test"), NoiseConfig(NOISE_KIND, FIG5_NOISE), seed)
    return prep.X_fit, prep.y_fit


def time_acs_fine(X, y, lam_max: float, cap: int, n_chunks: int = 5) -> tuple[float, int, bool]:
    """CPU seconds of warm-started ACS at step 0.01 on [0.1, lam_max]; extrapolated past ``cap`` ages."""
    grid = lambda_grid(LAM_MIN, lam_max, 0.01)
    if len(grid) <= cap:
        est = RecACS(model="lasso", model_params=MODEL_PARAMS, sp="linear", lam_grid=list(grid)).fit(X, y)
        return est.cpu_s_, len(grid), False
    ref = ACS()  # the estimator's stopping rules
    model, sp = get_model("lasso", **MODEL_PARAMS), get_sp("linear")
    m = max(1, cap // n_chunks)
    spent, timed = 0.0, 0
    with threadpool_limits(limits=1, user_api="blas"):
        p0 = model.fit_weighted(X, y, np.ones(len(y)))
        for s0 in np.linspace(0, len(grid) - m, n_chunks).astype(int):
            p = p0
            if s0 > 0:  # the warm start a sequential run would have had (not timed)
                p = acs_solve(model, sp, X, y, float(grid[s0 - 1]), p, ref.tol, ref.max_iter, ref.kkt_tol)[0]
            c0 = time.process_time()
            for lam in grid[s0:s0 + m]:
                p = acs_solve(model, sp, X, y, float(lam), p, ref.tol, ref.max_iter, ref.kkt_tol)[0]
            spent += time.process_time() - c0
            timed += m
    return spent * len(grid) / timed, len(grid), True


def fig5_one(X, y, n: int, lam_max: float, seed: int, cap: int) -> list[dict]:
    sub = np.sort(np.random.default_rng([40, seed, n]).choice(len(y), size=n, replace=False))
    X, y = X[sub], y[sub]
    rows = []

    def add(method, cpu, ncrit, n_ages, extra):
        rows.append({"method": method, "n": n, "lam_max": lam_max, "seed": seed, "cpu_s": cpu,
                     "n_critical_points": ncrit, "n_ages": n_ages, "extrapolated": extra})
        log(f"[fig5] n={n} lam_max={lam_max:g} seed={seed} {method:16s} {cpu:8.2f} s CPU"
            + (f"  {ncrit} critical points" if ncrit is not None else f"  {n_ages} ages")
            + (" (extrapolated)" if extra else ""))

    g = RecGAGA(model="lasso", model_params=MODEL_PARAMS, sp="linear", lam_min=LAM_MIN, lam_max=lam_max,
                n_grid=0).fit(X, y)
    cc = g.path_.critical_counts()
    add(GAGA_NAME, g.cpu_s_, cc["turning"] + cc["jump"], None, False)
    a = RecACS(model="lasso", model_params=MODEL_PARAMS, sp="linear", lam_min=LAM_MIN, lam_max=lam_max,
               lam_step=0.5).fit(X, y)
    add(ACS_NAME, a.cpu_s_, None, len(a.lambdas_), False)
    cpu, n_ages, extra = time_acs_fine(X, y, lam_max, cap)
    add(ACS_FINE_NAME, cpu, None, n_ages, extra)
    return rows


def run_fig5(ds: Dataset, ns, lam_max_a: float, lam_maxes, n_b: int, seeds, cap: int) -> pd.DataFrame:
    configs = [("a", n, lam_max_a) for n in ns] + [("b", n_b, lm) for lm in lam_maxes]
    done: dict[tuple[int, float], list[dict]] = {}
    rows = []
    for seed in seeds:
        X, y = fig5_training_rows(ds, seed)
        for panel, n, lm in configs:
            n = min(n, len(y))
            if (n, lm) not in done:
                done[(n, lm)] = fig5_one(X, y, n, lm, seed, cap)
            rows += [{"panel": panel, **r} for r in done[(n, lm)]]
        done.clear()
    df = pd.DataFrame(rows, columns=FIG5_COLUMNS)
    return df


def plot_fig5(df: pd.DataFrame, file: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {GAGA_NAME: ("tab:red", "o-"), ACS_NAME: ("tab:blue", "s--"), ACS_FINE_NAME: ("tab:green", "^-.")}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, panel, x in ((axes[0], "a", "n"), (axes[1], "b", "lam_max")):
        d = df[df.panel == panel]
        for method, (color, fmt) in styles.items():
            m = d[d.method == method].groupby(x).cpu_s
            mean, sd = m.mean(), m.std().fillna(0.0)
            label = method
            if method == ACS_FINE_NAME and d[d.method == method].extrapolated.astype(bool).any():
                label += " (partly extrapolated, hollow)"
            ax.errorbar(mean.index, mean.values, yerr=sd.values, fmt=fmt, color=color, ms=4, lw=1.2, capsize=2,
                        label=label)
            ext = d[(d.method == method) & d.extrapolated.astype(bool)].groupby(x).cpu_s.mean()
            if len(ext):
                ax.plot(ext.index, ext.values, "o", ms=9, mfc="none", color=color)
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
        ax.set_ylabel(f"CPU seconds per fit (mean of {d.seed.nunique()} seeds)")
    lm = df[df.panel == "a"].lam_max.iloc[0]
    nb = df[df.panel == "b"].n.iloc[0]
    axes[0].set_xlabel(f"training rows n   (ages [0.1, {lm:g}])")
    axes[0].set_title("(a) time against the sample size")
    axes[1].set_xlabel(f"λ_max   (ages [0.1, λ_max], n = {nb})")
    axes[1].set_title("(b) time against the age interval")
    axes[0].legend(fontsize=7)
    fig.suptitle("GAGA Fig. 5: music subsamples, lasso α = 5e-3, linear SP, 30 % noise", fontsize=10)
    fig.tight_layout()
    fig.savefig(file, dpi=130)
    plt.close(fig)


# ----------------------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fig", nargs="+", type=int, choices=(4, 5), default=[4, 5])
    ap.add_argument("--seeds", type=int, default=None, help="seeds (protocol runs 0..N-1) per point; default 3 "
                    "(Fig. 4), 2 (Fig. 5); --quick: 1")
    ap.add_argument("--quick", action="store_true", help="small sizes for a smoke run (< 1 min)")
    ap.add_argument("--out", type=Path, default=None, help="output directory (default results/figures)")
    ap.add_argument("--acs-fine-max", type=int, default=None,
                    help="ACS step 0.01: longest grid run in full, else ages timed (default 100; --quick 10)")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNGs from the CSVs in --out")
    return ap.parse_args(argv)


#: default sizes (see the module doc) and the --quick ones
SIZES = {
    "full": {"rates": [0.0, 0.1, 0.2, 0.3, 0.4], "lam_max4": LAM_MAX, "n_dense": 400, "max_rows": None,
             "seeds4": 3, "ns": [200, 400, 600, 795], "lam_max_a": LAM_MAX, "lam_maxes": [2.0, 5.0, 10.0, 20.0],
             "n_b": 795, "seeds5": 2, "cap": 100},
    "quick": {"rates": [0.3], "lam_max4": 3.0, "n_dense": 60, "max_rows": 240,
              "seeds4": 1, "ns": [60, 100], "lam_max_a": 1.0, "lam_maxes": [0.5, 1.0],
              "n_b": 100, "seeds5": 1, "cap": 10},
}


def subsample(ds: Dataset, max_rows: int | None) -> Dataset:
    """``max_rows`` random rows of ``ds`` (fixed seed, file order kept); the whole set if None."""
    if max_rows is None or max_rows >= ds.n_samples:
        return ds
    idx = np.sort(np.random.default_rng(0).choice(ds.n_samples, size=max_rows, replace=False))
    return Dataset(f"{ds.name}[{max_rows} rows]", ds.X[idx], ds.y[idx], ds.task, dict(ds.meta))


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out or Path(__file__).resolve().parents[1] / "results" / "figures"
    out.mkdir(parents=True, exist_ok=True)
    sz = dict(SIZES["quick" if args.quick else "full"])
    if args.seeds is not None:
        sz["seeds4"] = sz["seeds5"] = args.seeds
    if args.acs_fine_max is not None:
        sz["cap"] = args.acs_fine_max
    if args.plot_only:
        for fig in args.fig:
            df = pd.read_csv(out / f"gaga_fig{fig}.csv")
            (plot_fig4 if fig == 4 else plot_fig5)(df, out / f"gaga_fig{fig}.png")
        return 0
    ds = load_dataset("music")
    for fig in args.fig:
        c0, t0 = time.process_time(), time.perf_counter()
        if fig == 4:
            df = run_fig4(subsample(ds, sz["max_rows"]), sz["rates"], range(sz["seeds4"]), sz["lam_max4"],
                          sz["n_dense"])
            plot_fig4(df, out / "gaga_fig4.png")
            write_csv(df, out / "gaga_fig4.csv")
        else:
            df = run_fig5(ds, sz["ns"], sz["lam_max_a"], sz["lam_maxes"], sz["n_b"], range(sz["seeds5"]), sz["cap"])
            plot_fig5(df, out / "gaga_fig5.png")
            write_csv(df, out / "gaga_fig5.csv")
        log(f"[fig{fig}] done: {time.process_time() - c0:.1f} s CPU, {time.perf_counter() - t0:.1f} s wall "
            f"-> {out / f'gaga_fig{fig}.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
