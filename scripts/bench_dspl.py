"""DSPL scaling benchmark: time per outer and per ADMM iteration, serial against Dask workers.

    .venv/bin/python scripts/bench_dspl.py                          # n = 200k, p = 50 (a minute)
    .venv/bin/python scripts/bench_dspl.py --n 1000000 --p 50       # the 10^6-row case (~400 MB)
    .venv/bin/python scripts/bench_dspl.py --suite                  # make bench-dspl: 10^6, 10^7, weak scaling
    .venv/bin/python scripts/bench_dspl.py --address tcp://host:8786   # an existing cluster

Synthetic data of DSPL section 5.1 (30 % corruption), ``--outer`` outer iterations per run,
``--repeats`` runs per setting; every number reported is the median over all timed outer
iterations (the spread is in the CSV).  Per outer iteration: ``setup`` (Gram matrices and
factors of the new ``v``, on the hosts), ``admm`` (the ADMM iterations: one message to every
host and back per iteration, ``s_per_admm_iter``), ``tail`` (objectives at ``w_i`` and ``z``
and the v-step of eq. (11), on the hosts).  ``place_s`` is the one-off sending of the batches.

The serial backend runs in this process with its BLAS limited to each of ``--serial-threads``
(threadpoolctl); every Dask worker is one process with one thread, and the BLAS threads it
reports are in the ``blas_threads`` column.  On a machine with fewer cores than
``workers x threads`` the comparison measures contention, not scaling.

**The machine's own ceiling, in the same run.**  Before and after each fixed-``n`` case the script
times one single-threaded ``A^T A`` loop alone (``A`` 4096 x p, the block of DSPL's Gram work,
``--ceiling-reps`` products) and then ``k`` such loops side by side in ``k`` processes, for every
worker count ``k`` (each time the least of three measurements, a ceiling at most ``k``):
``ceiling_k = k t(one) / t(k side by side)``, the speed-up ``k`` workers can get
on this machine for DSPL's arithmetic (1.76 for 2 on the quiet 2-vCPU EPYC VM of issue 61, 0.9 on
an earlier day: it varies, hence the measurement in every run).  Every Dask row gets ``speedup``
(serial with one BLAS thread over it, s per outer iteration), ``ceiling`` (the mean of the two
measurements) and ``efficiency = speedup / ceiling``; the script prints one line per setting.
Each Dask row also has ``roundtrip_s``: a bare call (``BatchHost.echo``) to every host and back
through the backend, the latency floor of an ADMM iteration, beside ``s_per_admm_iter``.

Writes ``results/bench/<stem>.{csv,md,png}``, each through a temporary file and a rename once
all three are complete (an interrupted run leaves the committed files as they were).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from spl_bench.atomic import atomic_paths
from spl_bench.data.synthetic import make_dspl_regression
from spl_bench.methods.dspl import DaskBackend, SerialBackend, dspl_solve
from spl_bench.methods.dspl_backends import blas_threads

COLS = ["backend", "workers", "blas_threads", "n", "batches", "s_per_outer", "setup_s", "admm_s", "tail_s",
        "admm_iters", "s_per_admm_iter", "roundtrip_s", "place_s", "samples", "speedup", "ceiling", "efficiency"]

#: the weak-scaling table: no serial rows to compare with
WEAK_COLS = [c for c in COLS if c not in ("speedup", "ceiling", "efficiency")]

#: rows of the block of the ceiling loop: DSPL's Gram work is ``A_c^T A_c`` over blocks of 4096 rows
CEILING_ROWS = 4096


def gram_loop(reps: int, rows: int, p: int, start_at: float) -> float:
    """Seconds of ``reps`` products ``A^T A`` (``A`` rows x p) on one BLAS thread, started at ``start_at`` (epoch).

    The loop of the ceiling: the Gram work of DSPL (eq. (7)) without its data stream.  Waiting for a
    common start time lets several processes run it side by side.
    """
    A = np.random.default_rng(0).normal(size=(rows, p))
    G = np.zeros((p, p))
    with threadpool_limits(limits=1, user_api="blas"):
        G += A.T @ A  # warm: the library's buffers
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.perf_counter()
        for _ in range(reps):
            G += A.T @ A
        return time.perf_counter() - t0


def ceiling(workers: list[int], reps: int, p: int, rounds: int = 3) -> dict[str, Any]:
    """The machine's ceiling for ``k`` workers: ``k t(one) / t(k side by side)`` of :func:`gram_loop`.

    ``t(k side by side)`` is the mean loop time of ``k`` processes started together; ``ceiling_k`` is
    what ``k`` workers doing only DSPL's Gram arithmetic could gain over one.  Each time is the least of
    ``rounds`` measurements (interference from outside only adds time: on a shared VM one ``t(one)``
    once came out 40 % long, which made a ceiling of 2.6 for 2 workers), and ``ceiling_k`` is at most
    ``k``.
    """
    ks = sorted({k for k in workers if k > 1})
    out: dict[str, Any] = {"one": float("nan"), "side_by_side": {}, "ceiling": {1: 1.0}}
    if not ks:
        return out
    with ProcessPoolExecutor(max_workers=max(ks), mp_context=multiprocessing.get_context("spawn")) as pool:
        start = time.time() + 5.0  # every process started and warm before any loop begins
        list(pool.map(gram_loop, [1] * max(ks), [CEILING_ROWS] * max(ks), [p] * max(ks), [start] * max(ks)))
        out["one"] = min(pool.submit(gram_loop, reps, CEILING_ROWS, p, 0.0).result() for _ in range(rounds))
        for k in ks:
            side = []
            for _ in range(rounds):
                start = time.time() + 1.0
                futures = [pool.submit(gram_loop, reps, CEILING_ROWS, p, start) for _ in range(k)]
                side.append(float(np.mean([f.result() for f in futures])))
            out["side_by_side"][k] = min(side)
            out["ceiling"][k] = min(float(k), k * out["one"] / out["side_by_side"][k])
    return out


def roundtrip(backend: Any, p: int, calls: int = 200) -> float:
    """Median seconds of one bare call to every host and back (:meth:`BatchHost.echo` of ``p`` numbers)."""
    z = np.zeros(p).tobytes()
    backend.call("echo", x=z)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        backend.call("echo", x=z)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def timed_runs(backend: Any, batches: list, outer: int, repeats: int) -> dict[str, float]:
    """Medians over the outer iterations of ``repeats`` runs of ``outer`` outer iterations each."""
    recs, place = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = dspl_solve(batches, backend, lam0=0.1, tau=1.0, mu=1.1, max_outer=outer, gather_v=False)
        total = time.perf_counter() - t0
        place.append(total - sum(h.seconds for h in res.history))
        recs += res.history
    secs = np.array([h.seconds for h in recs])
    setup = np.array([h.setup_seconds for h in recs])
    admm = np.array([h.admm_seconds for h in recs])
    iters = np.array([h.admm_iters for h in recs])
    return {"s_per_outer": float(np.median(secs)), "setup_s": float(np.median(setup)),
            "admm_s": float(np.median(admm)), "tail_s": float(np.median(secs - setup - admm)),
            "admm_iters": float(np.median(iters)), "s_per_admm_iter": float(np.median(admm / iters)),
            "place_s": float(np.median(place)), "samples": len(recs),
            "s_per_outer_min": float(secs.min()), "s_per_outer_max": float(secs.max()),
            "s_per_admm_iter_min": float((admm / iters).min()), "s_per_admm_iter_max": float((admm / iters).max())}


def split(d: Any, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    bounds = np.linspace(0, d.X.shape[0], m + 1).astype(int)
    return [(d.X[a:b], d.y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def dask_backend(nw: int, address: str | None) -> DaskBackend:
    if address:
        return DaskBackend(address=address)
    return DaskBackend(n_workers=nw, threads_per_worker=1, processes=True)


def strong(n: int, p: int, batch_list: list[int], workers: list[int], serial_threads: list[int], outer: int,
           repeats: int, address: str | None) -> pd.DataFrame:
    """Fixed ``n``: serial (each BLAS thread count) and Dask (each worker count), every batch count."""
    d = make_dspl_regression(n, p, 0.3, n_batches=1, rng=0)
    print(f"data: n={n} p={p} ({d.X.nbytes / 1e6:.0f} MB)", flush=True)
    # one untimed outer iteration first: right after the data are made the first setting measured ran up to
    # 1.3x slow for several outer iterations (n = 10^7, the serial row of 2026-11-29), the machine still
    # settling its fresh gigabytes
    with threadpool_limits(limits=1, user_api="blas"):
        timed_runs(SerialBackend(), split(d, batch_list[0]), 1, 1)
    rows = []
    for m in batch_list:
        for k in serial_threads:
            with threadpool_limits(limits=k, user_api="blas"):
                r = timed_runs(SerialBackend(), split(d, m), outer, repeats)
                rows.append({"backend": "serial", "workers": 1, "blas_threads": blas_threads(), "n": n,
                             "batches": m, **r})
            print(rows[-1], flush=True)
    for nw in workers:
        with dask_backend(nw, address) as be:
            threads = sorted(set(be.client.run(blas_threads).values()))
            for m in batch_list:
                r = timed_runs(be, split(d, m), outer, repeats)  # the hosts of the last run stay placed
                rows.append({"backend": "dask", "workers": be.n_workers(), "blas_threads": max(threads), "n": n,
                             "batches": m, **r, "roundtrip_s": roundtrip(be, p)})
                print(rows[-1], flush=True)
        gc.collect()
    return pd.DataFrame(rows)


def efficiency(df: pd.DataFrame, ceil: dict[int, float]) -> pd.DataFrame:
    """Adds ``speedup``, ``ceiling`` and ``efficiency = speedup / ceiling`` to the Dask rows.

    ``speedup``: s per outer iteration of serial with the fewest BLAS threads (one) over the row's.
    """
    df = df.copy()
    serial = df[df.backend == "serial"]
    serial = serial[serial.blas_threads == serial.blas_threads.min()].set_index("batches").s_per_outer
    dask = df.backend == "dask"
    df.loc[dask, "speedup"] = df.loc[dask, "batches"].map(serial) / df.loc[dask, "s_per_outer"]
    df.loc[dask, "ceiling"] = df.loc[dask, "workers"].map(lambda k: ceil.get(int(k), np.nan))
    df["efficiency"] = df["speedup"] / df["ceiling"]
    return df


def efficiency_lines(df: pd.DataFrame, ceils: list[dict[str, Any]]) -> list[str]:
    """One line per Dask setting and the ceiling measurements, for the terminal and the .md file."""
    lines = [f"ceiling loop ({CEILING_ROWS} x p, one BLAS thread), {label}: one alone {c['one']:.3f} s, "
             + ", ".join(f"{k} side by side {t:.3f} s (ceiling {c['ceiling'][k]:.3f})"
                         for k, t in c["side_by_side"].items())
             for label, c in zip(("before", "after"), ceils, strict=False)]
    for _, r in df[df.backend == "dask"].iterrows():
        lines.append(f"efficiency n={r.n} m={r.batches}: Dask {r.workers} worker(s) {r.speedup:.3f}x serial "
                     f"(1 BLAS thread), ceiling {r.ceiling:.3f}, efficiency {r.efficiency:.3f}; ADMM iteration "
                     f"{r.s_per_admm_iter * 1e3:.2f} ms, bare round trip {r.roundtrip_s * 1e3:.2f} ms")
    return lines


def weak(n_per_worker: int, p: int, batches_per_worker: int, workers: list[int], outer: int,
         repeats: int) -> pd.DataFrame:
    """Fixed ``n`` per worker: ``k`` workers get ``k n_per_worker`` rows in ``k batches_per_worker`` batches."""
    rows = []
    for nw in workers:
        d = make_dspl_regression(n_per_worker * nw, p, 0.3, n_batches=1, rng=0)
        with dask_backend(nw, None) as be:
            threads = sorted(set(be.client.run(blas_threads).values()))
            r = timed_runs(be, split(d, batches_per_worker * nw), outer, repeats)
            rows.append({"backend": "dask", "workers": nw, "blas_threads": max(threads), "n": d.X.shape[0],
                         "batches": batches_per_worker * nw, **r, "roundtrip_s": roundtrip(be, p)})
            print(rows[-1], flush=True)
        del d
        gc.collect()
    return pd.DataFrame(rows)


def write(df: pd.DataFrame, out: Path, stem: str, title: str, x: str, notes: list[str] | None = None,
          cols: list[str] = COLS) -> None:
    """``<stem>.csv``, ``.md`` (columns ``cols`` of the medians, then ``notes``), ``.png`` (s per outer iteration)."""
    df = df.reindex(columns=list(dict.fromkeys(cols + list(df.columns))))
    with atomic_paths([out / f"{stem}.{ext}" for ext in ("csv", "md", "png")]) as (csv_tmp, md_tmp, png_tmp):
        # all complete: only then replace the committed files
        _write_files(df, title, x, notes or [], cols, csv_tmp, md_tmp, png_tmp)
    print(df[cols].to_string(index=False, float_format="%.4g"), flush=True)


def _write_files(df: pd.DataFrame, title: str, x: str, notes: list[str], cols: list[str], csv_file: Path,
                 md_file: Path, png_file: Path) -> None:
    """The three files of :func:`write`, each at the (temporary) path given."""
    df.to_csv(csv_file, index=False)
    with open(md_file, "w") as f:
        f.write(f"{title}; {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
                f"medians over `samples` outer iterations; load average at the end "
                f"{os.getloadavg()[0]:.2f} (a shared machine: other users' processes are not paused)\n\n")
        f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for _, r in df[cols].iterrows():
            f.write("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in r) + " |\n")
        f.write("".join(f"\n{line}\n" for line in notes))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    for (be_name, nw, th), g in df.groupby(["backend", "workers", "blas_threads"]):
        label = f"{be_name}, {nw} worker(s), {th} BLAS thread(s)" if x != "workers" else be_name
        ax.plot(g[x], g.s_per_outer, marker="o", label=label)
    if x == "batches":
        ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.set_xlabel({"batches": "batches m", "workers": "workers (n per worker fixed)"}[x])
    ax.set_ylabel("seconds per outer iteration")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png_file, dpi=120, format="png")
    plt.close(fig)


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200_000, help="rows")
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--batches", default="2,4,8,16")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--serial-threads", default="1,2", help="BLAS threads of the serial runs")
    ap.add_argument("--outer", type=int, default=3, help="outer iterations per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per setting")
    ap.add_argument("--address", default=None, help="existing Dask scheduler (workers list ignored)")
    ap.add_argument("--weak", type=int, default=0, metavar="N_PER_WORKER",
                    help="weak scaling instead: this many rows per worker, --batches per worker (first value)")
    ap.add_argument("--suite", action="store_true",
                    help="the issue-42 suite: n=10^6 and n=10^7 (p=50), weak scaling at 2.5*10^6 rows per worker")
    ap.add_argument("--ceiling-reps", type=int, default=6000,
                    help="products of the ceiling loop (6000: about 2.5 s alone on a 2-vCPU EPYC)")
    ap.add_argument("--out", default="results/bench")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    threads = ints(args.serial_threads)
    workers = [0] if args.address else ints(args.workers)
    if args.suite:
        cases = [("strong", 1_000_000, [2, 4, 8, 16], args.outer, args.repeats),
                 ("strong", 10_000_000, [8], max(args.outer, 5), 1), ("weak", 2_500_000, [4], 3, 2)]
    elif args.weak:
        cases = [("weak", args.weak, ints(args.batches)[:1], args.outer, args.repeats)]
    else:
        cases = [("strong", args.n, ints(args.batches), args.outer, args.repeats)]
    for kind, n, batch_list, outer, repeats in cases:
        if kind == "strong":
            ceils = [] if args.address else [ceiling(workers, args.ceiling_reps, args.p)]
            df = strong(n, args.p, batch_list, workers, threads, outer, repeats, args.address)
            ceils += [] if args.address else [ceiling(workers, args.ceiling_reps, args.p)]
            ceil = {k: float(np.mean([c["ceiling"][k] for c in ceils])) for k in ceils[0]["ceiling"]} if ceils else {}
            df = efficiency(df, ceil)
            notes = efficiency_lines(df, ceils)
            write(df, out, f"dspl_scaling_n{n}_p{args.p}", f"DSPL strong scaling, n={n}, p={args.p}", "batches", notes)
            print("\n".join(notes), flush=True)
        else:
            df = weak(n, args.p, batch_list[0], ints(args.workers), outer, repeats)
            write(df, out, f"dspl_weak_n{n}_per_worker_p{args.p}",
                  f"DSPL weak scaling, {n} rows and {batch_list[0]} batches per worker, p={args.p}", "workers",
                  cols=WEAK_COLS)
        del df
        gc.collect()


if __name__ == "__main__":
    main()
