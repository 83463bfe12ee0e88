"""DSPL scaling benchmark: time per outer iteration against batches and Dask workers.

    .venv/bin/python scripts/bench_dspl.py                        # n = 200k, p = 50 (a few minutes)
    .venv/bin/python scripts/bench_dspl.py --n 1000000 --p 50     # the 10^6-row case (~400 MB)
    .venv/bin/python scripts/bench_dspl.py --address tcp://host:8786   # an existing cluster

For every (workers, batches) pair the synthetic data (DSPL section 5.1, 30 % corruption)
are scattered once to a LocalCluster (processes, 1 thread each, BLAS single-threaded),
then DSPL runs ``--outer`` outer iterations.  Reported per outer iteration: total
seconds, seconds in the per-batch setup (v-step of the previous age, Gram, factor: they scale
with n/m and run in parallel), and seconds per ADMM iteration (one scheduler round trip
plus O(p^2) work per batch).  The serial backend is timed
as the reference.  Writes ``results/bench/dspl_scaling.{csv,md,png}``, each through
``<name>.tmp`` and a rename once all three are complete (an interrupted run leaves the
committed files as they were).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from spl_bench.data.synthetic import make_dspl_regression  # noqa: E402
from spl_bench.methods.dspl import DaskBackend, SerialBackend, dspl_solve  # noqa: E402


def run_once(backend, batches, outer: int) -> dict[str, float]:
    t0 = time.perf_counter()
    res = dspl_solve(batches, backend, lam0=0.1, tau=1.0, mu=1.1, max_outer=outer, gather_v=False)
    total = time.perf_counter() - t0
    secs = np.array([h.seconds for h in res.history])
    setup = np.array([h.setup_seconds for h in res.history])
    iters = np.array([h.admm_iters for h in res.history])
    return {"total_s": total, "outer_iters": len(secs), "s_per_outer": float(secs.mean()),
            "setup_s_per_outer": float(setup.mean()), "admm_iters_mean": float(iters.mean()),
            "s_per_admm_iter": float((secs.sum() - setup.sum()) / iters.sum())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="rows (up to 10^6 and more)")
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--batches", default="2,4,8,16")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--outer", type=int, default=3, help="outer iterations timed per setting")
    ap.add_argument("--address", default=None, help="existing Dask scheduler (workers list ignored)")
    ap.add_argument("--out", default="results/bench")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    batch_list = [int(b) for b in args.batches.split(",")]
    worker_list = [0] if args.address else [int(w) for w in args.workers.split(",")]

    d = make_dspl_regression(args.n, args.p, 0.3, n_batches=1, rng=0)
    print(f"data: n={args.n} p={args.p} ({d.X.nbytes / 1e6:.0f} MB)", flush=True)
    rows = []
    for m in batch_list:
        bounds = np.linspace(0, args.n, m + 1).astype(int)
        batches = [(d.X[a:b], d.y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        r = run_once(SerialBackend(), batches, args.outer)
        rows.append({"backend": "serial", "workers": 1, "batches": m, "scatter_s": 0.0, **r})
        print(rows[-1], flush=True)
    for nw in worker_list:
        t0 = time.perf_counter()
        be = (DaskBackend(address=args.address) if args.address
              else DaskBackend(n_workers=nw, threads_per_worker=1, processes=True))
        start = time.perf_counter() - t0
        try:
            for m in batch_list:
                bounds = np.linspace(0, args.n, m + 1).astype(int)
                batches = [(d.X[a:b], d.y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
                t0 = time.perf_counter()
                r = run_once(be, batches, args.outer)  # includes the one-off scatter
                rows.append({"backend": "dask", "workers": be.n_workers(), "batches": m,
                             "scatter_s": r["total_s"] - r["s_per_outer"] * r["outer_iters"],
                             "cluster_start_s": start, **r})
                print(rows[-1], flush=True)
        finally:
            be.close()
    df = pd.DataFrame(rows)
    df.insert(0, "p", args.p)
    df.insert(0, "n", args.n)
    tag = f"dspl_scaling_n{args.n}_p{args.p}"
    df.to_csv(out / f"{tag}.csv.tmp", index=False)
    with open(out / f"{tag}.md.tmp", "w") as f:
        f.write(f"DSPL scaling: n={args.n}, p={args.p}, {args.outer} outer iterations, "
                f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), shared machine\n\n")
        cols = ["backend", "workers", "batches", "s_per_outer", "setup_s_per_outer", "admm_iters_mean",
                "s_per_admm_iter", "scatter_s"]
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for _, r in df[cols].iterrows():
            f.write("| " + " | ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in r) + " |\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for (be_name, nw), g in df.groupby(["backend", "workers"]):
        ax.plot(g.batches, g.s_per_outer, marker="o", label=f"{be_name}, {nw} worker(s)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batches m")
    ax.set_ylabel("seconds per outer iteration")
    ax.set_title(f"DSPL, n={args.n}, p={args.p}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / f"{tag}.png.tmp", dpi=120, format="png")
    plt.close(fig)
    for ext in ("csv", "md", "png"):  # all complete: only now replace the committed files
        os.replace(out / f"{tag}.{ext}.tmp", out / f"{tag}.{ext}")
    print(df.to_string(index=False, float_format="%.4g"))


if __name__ == "__main__":
    main()
