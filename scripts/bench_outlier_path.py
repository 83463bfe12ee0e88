"""Timing benchmark like Fig. 5 of the outlier-path paper: OP versus CCCP as the number of
(theta, s) candidates grows.

OP computes the whole path once (its cost does not depend on how many candidates are
then read off it); CCCP solves one warm-started problem per candidate.  Both start from
the same standard SVM, whose time is included in both.

    .venv/bin/python scripts/bench_outlier_path.py                    # breast cancer, 40 % rows
    .venv/bin/python scripts/bench_outlier_path.py --C 10 --counts 5 10 20 40 80

Writes ``results/bench/outlier_path_timing.csv`` and ``.png``, each through a temporary file and a
rename once both are complete (an interrupted run leaves the committed files as they were).
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from spl_bench.atomic import atomic_paths
from spl_bench.methods.outlier_path.cccp import cccp_sequence
from spl_bench.methods.outlier_path.estimators import cccp_values
from spl_bench.methods.outlier_path.path import outlier_path_s, outlier_path_theta, polished_svm, svm_dual


def load(frac: float, flip: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    y = np.where(y == 1, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))[: int(frac * len(y))]
    X = StandardScaler().fit_transform(X[idx])
    y = y[idx]
    y[rng.choice(len(y), int(flip * len(y)), replace=False)] *= -1
    return X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--counts", type=int, nargs="+", default=[5, 10, 20, 40])
    ap.add_argument("--frac", type=float, default=0.4, help="fraction of the rows used for training")
    ap.add_argument("--flip", type=float, default=0.15)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/bench"))
    ap.add_argument("--cccp-solver", choices=["homotopy", "smo"], default="homotopy",
                    help="CCCP subproblem solver: exact warm-started homotopy or numpy SMO")
    args = ap.parse_args()
    threadpool_limits(limits=1, user_api="blas")  # small dense solves: threads only add overhead

    X, y = load(args.frac, args.flip, 0)
    rows = []
    for kernel in ("linear", "rbf"):
        K = linear_kernel(X) if kernel == "linear" else rbf_kernel(X, gamma=1.0 / X.shape[1])
        Q = np.outer(y, y) * K
        for variant in ("theta", "s"):
            for k in args.counts:
                for rep in range(args.repeats):
                    t0 = time.perf_counter()
                    a0, b0 = svm_dual(K, y, args.C)
                    res = (outlier_path_theta if variant == "theta" else outlier_path_s)(
                        K, y, args.C, init=(a0, b0)
                    )
                    t_op = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    a0, b0 = polished_svm(K, y, args.C)
                    s_init = float((Q @ a0 + y * b0).min())
                    cccp_sequence(Q, y, args.C, variant, cccp_values(variant, k, s_init), a0, b0,
                                  solver=args.cccp_solver)
                    t_cc = time.perf_counter() - t0
                    rows.append({"kernel": kernel, "variant": variant, "n_candidates": k, "repeat": rep,
                                 "n": len(y), "C": args.C, "op_seconds": t_op, "cccp_seconds": t_cc,
                                 "op_breakpoints": len(res.breakpoints), "op_failed": res.failed or "",
                                 "cccp_solver": args.cccp_solver})
                    print(f"{kernel:6s} {variant:5s} k={k:3d} OP {t_op:7.3f}s "
                          f"({len(res.breakpoints)} breakpoints)  CCCP {t_cc:7.3f}s", flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    stem = "outlier_path_timing" + ("" if args.cccp_solver == "homotopy" else "_smo")
    csv_file = args.out / f"{stem}.csv"
    png = args.out / f"{stem}.png"
    with atomic_paths([csv_file, png]) as (csv_tmp, png_tmp):  # both complete: only then replace the committed files
        with csv_tmp.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        plot_timing(rows, args, len(y), png_tmp)
    print(f"wrote {csv_file} and {png}")


def plot_timing(rows: list[dict], args: argparse.Namespace, n: int, png: Path) -> None:
    """Seconds of the outlier path and of CCCP against the number of candidates (paper Fig. 5), as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    for ax, (kernel, variant) in zip(axes, [(k, v) for k in ("linear", "rbf") for v in ("theta", "s")],
                                     strict=True):
        sel = [r for r in rows if r["kernel"] == kernel and r["variant"] == variant]
        ks = sorted({r["n_candidates"] for r in sel})
        for key, label in (("op_seconds", f"OP-{variant}"), ("cccp_seconds", f"CCCP-{variant}")):
            ax.plot(ks, [np.mean([r[key] for r in sel if r["n_candidates"] == k]) for k in ks], "o-",
                    label=label)
        ax.set_title(f"{kernel} kernel")
        ax.set_xlabel(f"number of {variant} candidates")
        ax.set_ylabel("elapsed time [s]")
        ax.legend()
    fig.suptitle(f"breast cancer, n = {n}, C = {args.C}, CCCP solver {args.cccp_solver} "
                 "(cf. Fig. 5 of Suzumura et al. 2014)")
    fig.tight_layout()
    fig.savefig(png, dpi=120, format="png")
    plt.close(fig)


if __name__ == "__main__":
    main()
