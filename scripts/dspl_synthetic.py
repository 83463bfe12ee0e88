"""DSPL paper (Zhang et al., IJCAI 2018) section 5.2 on synthetic data: Figure 1, Table 2, Figure 2.

    .venv/bin/python scripts/dspl_synthetic.py              # all three, 10 runs (paper)
    .venv/bin/python scripts/dspl_synthetic.py --quick      # 3 runs, smaller panels
    .venv/bin/python scripts/dspl_synthetic.py --only table2 --runs 5

Writes tidy CSVs, markdown tables and figures under ``results/dspl/`` (``--out``).
Metric: ``||w_hat - w*||_2``.  DSPL runs on the serial backend here (it gives the same
numbers as Dask, see tests/test_dspl.py).  RLHH runs on each batch and averages the batch
coefficients (the paper's baseline); DRLR fits each batch and averages its majority clique
(docs/dspl.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.data.synthetic import SyntheticRegression, corrupted_batch_rates, make_dspl_regression
from spl_bench.methods.dspl import dspl_solve
from spl_bench.methods.robust_regression import drlr, rlhh_batches, spl_hard_path, torrent_fc

METHODS = ("TORR", "TORR25", "RLHH", "DRLR", "SPL", "DSPL")


def fit_all(d: SyntheticRegression, beta: float, seed: int) -> dict[str, tuple[np.ndarray, float]]:
    """Fit every method on one data set; return ``{method: (w_hat, seconds)}``."""
    out: dict[str, tuple[np.ndarray, float]] = {}
    rng = np.random.default_rng(seed + 10_007)
    n, p = d.X.shape
    cap = 1.0 - p / n

    def timed(name: str, fn: Callable[[], np.ndarray]) -> None:
        t0 = time.perf_counter()
        w = fn()
        out[name] = (w, time.perf_counter() - t0)

    timed("TORR", lambda: torrent_fc(d.X, d.y, min(beta, cap))[0])
    beta25 = min(beta * rng.uniform(0.75, 1.25), cap)
    timed("TORR25", lambda: torrent_fc(d.X, d.y, beta25)[0])
    timed("RLHH", lambda: rlhh_batches(d.batches())[0])  # per batch, then the mean (paper 5.1)
    timed("DRLR", lambda: drlr(d.batches())[0])
    timed("SPL", lambda: spl_hard_path(d.X, d.y, lam0=1.0, tau=1.0, mu=1.1)[0][-1])
    timed("DSPL", lambda: dspl_solve(d.batches(), lam0=0.1, tau=1.0, mu=1.1).z)
    return out


def rows_for(d: SyntheticRegression, beta: float, seed: int, **keys: object) -> list[dict[str, object]]:
    return [
        {**keys, "seed": seed, "method": m, "error": float(np.linalg.norm(w - d.w_star)), "seconds": s}
        for m, (w, s) in fit_all(d, beta, seed).items()
    ]


# ------------------------------------------------------------------------------ Figure 1
def figure1(out: Path, runs: int, quick: bool) -> pd.DataFrame:
    """Error against the corruption ratio; panels (a), (b): two p at fixed n; (c): larger n."""
    if quick:
        panels = [("a", 2000, 20), ("b", 2000, 50), ("c", 8000, 20)]
        ratios = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    else:
        panels = [("a", 5000, 50), ("b", 5000, 100), ("c", 20000, 100)]
        ratios = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    m = 10
    rows = []
    for panel, n, p in panels:
        for ratio in ratios:
            for run in range(runs):
                seed = 1000 * run + int(100 * ratio) + 7 * p + n
                d = make_dspl_regression(n // m, p, ratio, n_batches=m, sigma=0.1, rng=seed)
                rows += rows_for(d, ratio, seed, panel=panel, n=n, p=p, ratio=ratio, run=run)
            print(f"fig1 ({panel}) n={n} p={p} ratio={ratio}: done", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "fig1.csv", index=False)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), sharey=False)
    for ax, (panel, n, p) in zip(np.atleast_1d(axes), panels, strict=True):
        sub = df[df.panel == panel]
        for meth in METHODS:
            g = sub[sub.method == meth].groupby("ratio")["error"]
            ax.errorbar(g.mean().index, g.mean().values, yerr=g.std().values, label=meth, marker="o",
                        capsize=2, ms=3)
        ax.set_title(f"({panel}) n={n}, p={p}")
        ax.set_xlabel("corruption ratio")
        ax.set_yscale("log")
    np.atleast_1d(axes)[0].set_ylabel(r"$\|\hat w - w^*\|_2$")
    np.atleast_1d(axes)[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "fig1.png", dpi=120)
    plt.close(fig)
    return df


def markdown_table(df: pd.DataFrame) -> str:
    """A pipe table of a small frame of strings (index = first column)."""
    head = ["", *map(str, df.columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join([str(i), *map(str, row)]) + " |" for i, row in zip(df.index, df.values, strict=True)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- Table 2
def table2(out: Path, runs: int, quick: bool) -> pd.DataFrame:
    """k/10 corrupted batches at 90 % corruption, the others at 10 %; random batch order."""
    n_i, p = (500, 20) if quick else (1000, 50)
    rows = []
    for k in range(4, 10):
        for run in range(runs):
            seed = 5000 + 100 * k + run
            rates = corrupted_batch_rates(10, k, 0.9, 0.1, rng=seed)
            d = make_dspl_regression(n_i, p, list(rates), sigma=0.1, rng=seed + 1)
            beta = float(d.corrupted.mean())  # TORR gets the true overall ratio
            rows += rows_for(d, beta, seed, corrupted_batches=k, run=run, n=10 * n_i, p=p)
        print(f"table2 {k}/10: done", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "table2.csv", index=False)
    mean = df.pivot_table(index="method", columns="corrupted_batches", values="error", aggfunc="mean")
    std = df.pivot_table(index="method", columns="corrupted_batches", values="error", aggfunc="std")
    cells = mean.map(lambda x: f"{x:.3f}") + " ± " + std.map(lambda x: f"{x:.3f}")
    cells = cells.loc[list(METHODS)]
    cells.columns = [f"{c}/10" for c in cells.columns]
    with open(out / "table2.md", "w") as f:
        f.write(f"DSPL Table 2 reproduction: ||w - w*||_2, mean ± std over {runs} runs "
                f"(10 batches of {n_i} rows, p = {p}, sigma = 0.1)\n\n")
        f.write(markdown_table(cells))
    return df


# ------------------------------------------------------------------------------ Figure 2
def figure2(out: Path, quick: bool, lam_top: float = 4.0) -> pd.DataFrame:
    """Recovery error and Lagrangian against lambda (90 % corruption), lambda run past tau = 1."""
    n, p = (3000, 20) if quick else (10000, 50)
    d = make_dspl_regression(n // 10, p, 0.9, n_batches=10, sigma=0.1, rng=2018)
    res = dspl_solve(d.batches(), lam0=0.1, tau=lam_top, mu=1.1)
    df = pd.DataFrame({
        "lam": res.lambdas,
        "lagrangian": res.lagrangians,
        "error": [float(np.linalg.norm(h.z - d.w_star)) for h in res.history],
        "n_selected": [h.n_selected for h in res.history],
        "admm_iters": [h.admm_iters for h in res.history],
    })
    df.to_csv(out / "fig2.csv", index=False)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = df.groupby("lam").tail(1)  # one point per age (the converged iteration)
    fig, ax = plt.subplots(figsize=(5, 3.4))
    ax.plot(last.lam, last.error, "b-o", ms=3)
    ax.set_xlabel(r"$\lambda$")
    ax.set_ylabel("recovery error", color="b")
    ax.set_yscale("log")
    ax2 = ax.twinx()
    ax2.plot(last.lam, last.lagrangian, "r-s", ms=3)
    ax2.set_ylabel("Lagrangian L (symlog)", color="r")
    ax2.set_yscale("symlog", linthresh=10.0)
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_title(f"DSPL, 90% corruption, n={n}, p={p}")
    fig.tight_layout()
    fig.savefig(out / "fig2.png", dpi=120)
    plt.close(fig)
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/dspl")
    ap.add_argument("--runs", type=int, default=None, help="runs per setting (default 10; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="smaller data (n <= 8000, p <= 50)")
    ap.add_argument("--only", choices=["fig1", "table2", "fig2"], action="append")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = args.runs or (3 if args.quick else 10)
    todo = args.only or ["fig1", "table2", "fig2"]
    if "fig2" in todo:
        df = figure2(out, args.quick)
        print(df.groupby("lam").tail(1).to_string(index=False, float_format="%.4g"))
    if "table2" in todo:
        df = table2(out, runs, args.quick)
        print((out / "table2.md").read_text())
    if "fig1" in todo:
        df = figure1(out, runs, args.quick)
        print(df.pivot_table(index=["panel", "ratio"], columns="method", values="error").to_string(
            float_format="%.4f"))


if __name__ == "__main__":
    main()
