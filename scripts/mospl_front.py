"""One MOSPL run on one protocol split: save the Pareto front and its validation-error curve.

Example (paper budget, music with the lasso, run 0 of the protocol)::

    SPL_BENCH_DATA_DIR=/work/shared/datasets .venv/bin/python scripts/mospl_front.py \
        --data music --model lasso --pop-size 150 --n-gen 800

The split, scaling, noise and validation hold-out are
:func:`spl_bench.protocol.run.prepare_run`'s, as in ``spl-bench run``.  Writes ``mospl_front_<tag>.png`` (left:
``f1`` against ``f2`` for the raw NSGA-III front and the refit front; right:
validation and test metric of every Pareto point against ``f2``) under ``--out``
and a JSON summary with the timings under ``--bench-dir``.  ``--compare-acs``
also times ACS (GAGA grid [0.1, 20], step 0.5) on the same split.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from spl_bench.data import load_dataset
from spl_bench.methods.acs import ACS
from spl_bench.methods.mospl import MOSPL
from spl_bench.protocol.metrics import best_candidate, candidate_scores, metric_name
from spl_bench.protocol.run import NoiseConfig, ProtocolConfig, prepare_run
from spl_bench.runner.run_config import AUTO_NOISE

DEFAULT_MODEL_PARAMS = {"lasso": {"alpha": 5e-3}, "logistic": {"C": 0.5}, "svm": {"C": 1.0, "gamma": 0.5}}


def parse_value(text: str) -> Any:
    """``"0.5"`` -> 0.5, ``"rbf"`` -> ``"rbf"``."""
    try:
        return float(text)
    except ValueError:
        return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="music")
    ap.add_argument("--model", default="lasso", choices=["lasso", "logistic", "svm"])
    ap.add_argument("--model-param", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--sp", default="linear", help="linear | polynomial | hard | mixture (-> polynomial)")
    ap.add_argument("--t", type=float, default=1.2, help="polynomial order (sp=polynomial or mixture)")
    ap.add_argument("--noise-rate", type=float, default=0.3)
    ap.add_argument("--run", type=int, default=0)
    ap.add_argument("--base-seed", type=int, default=40)
    ap.add_argument("--pop-size", type=int, default=150)
    ap.add_argument("--n-gen", type=int, default=800)
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--no-refit", action="store_true")
    ap.add_argument("--compare-acs", action="store_true")
    ap.add_argument("--out", default="results/figures")
    ap.add_argument("--bench-dir", default="results/bench")
    ap.add_argument("--tag", default=None)
    args = ap.parse_args(argv)

    ds = load_dataset(args.data)
    model_params = dict(DEFAULT_MODEL_PARAMS[args.model])
    for item in args.model_param:
        key, _, value = item.partition("=")
        model_params[key] = parse_value(value)
    sp_params = {"t": args.t} if args.sp == "polynomial" else {}

    noise = NoiseConfig(AUTO_NOISE[ds.task], args.noise_rate)
    prep = prepare_run(ds, ProtocolConfig(base_seed=args.base_seed), noise, args.run)
    X_fit, y_fit, X_val, y_val, sc = prep.X_fit, prep.y_fit, prep.X_sel, prep.y_sel, prep.scaled

    est = MOSPL(
        model=args.model,
        model_params=model_params,
        sp=args.sp,
        sp_params=sp_params,
        pop_size=args.pop_size,
        n_gen=args.n_gen,
        seed=args.seed,
        refit=not args.no_refit,
        mixture_t=args.t,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X_fit, y_fit)
    fit_seconds, fit_cpu_seconds = time.perf_counter() - t0, time.process_time() - c0

    task = ds.task
    val_scores = candidate_scores(task, est.predict_candidates(X_val), y_val)
    test_scores = candidate_scores(task, est.predict_candidates(sc.X_test), sc.y_test)
    best = best_candidate(task, val_scores)
    prob = est.problem_
    raw_val = candidate_scores(
        task, np.vstack([prob.model.predict(prob.params(g), X_val) for g in est.front_genomes_]), y_val
    )

    summary: dict[str, Any] = {
        "data": args.data,
        "model": args.model,
        "model_params": model_params,
        "sp": repr(est.sp_),
        "run": args.run,
        "n_fit": int(len(y_fit)),
        "n_features": int(X_fit.shape[1]),
        "pop_size": args.pop_size,
        "n_gen": args.n_gen,
        "metric": metric_name(task),
        "fit_seconds": fit_seconds,
        "fit_cpu_seconds": fit_cpu_seconds,
        **est.run_info(),
        "selected": int(best),
        "selected_lam_equiv": est.candidate_params_[best]["lam_equiv"],
        "val_selected": float(val_scores[best]),
        "test_selected": float(test_scores[best]),
        "val_best_raw_front": float(raw_val[best_candidate(task, raw_val)]),
    }
    if args.compare_acs:
        acs = ACS(model=args.model, model_params=model_params, sp=args.sp, sp_params=sp_params)
        if args.sp == "mixture":
            acs.set_params(sp="polynomial", sp_params={"t": args.t})
        t0, c0 = time.perf_counter(), time.process_time()
        acs.fit(X_fit, y_fit)
        summary["acs_seconds"] = time.perf_counter() - t0
        summary["acs_cpu_seconds"] = time.process_time() - c0
        av = candidate_scores(task, acs.predict_candidates(X_val), y_val)
        ab = best_candidate(task, av)
        summary["acs_test_selected"] = float(
            candidate_scores(task, acs.predict_candidates(sc.X_test)[ab : ab + 1], sc.y_test)[0]
        )
        summary["acs_lam_selected"] = float(acs.lambdas_[ab])

    tag = args.tag or f"{args.data}_{args.model}_{args.sp}_p{args.pop_size}_g{args.n_gen}_run{args.run}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figure = out / f"mospl_front_{tag}.png"
    plot(est, val_scores, test_scores, raw_val, best, metric_name(task), figure, tag)
    summary["figure"] = str(figure)
    bench = Path(args.bench_dir)
    bench.mkdir(parents=True, exist_ok=True)
    (bench / f"mospl_{tag}.json").write_text(json.dumps(summary, indent=2, default=str))
    print(json.dumps(summary, indent=2, default=str))
    return summary


def plot(
    est: MOSPL,
    val_scores: np.ndarray,
    test_scores: np.ndarray,
    raw_val: np.ndarray,
    best: int,
    metric: str,
    path: Path,
    title: str,
) -> None:
    """Two panels: the Pareto front (raw and refit) and the metric along it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    F, Fr = est.front_F_, est.front_F_refit_
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.plot(F[:, 1], F[:, 0], "o", ms=3, label="NSGA-III front")
    if est.refit:
        a.plot(Fr[:, 1], Fr[:, 0], "x", ms=4, label="refit at the same v")
    a.plot(Fr[best, 1], Fr[best, 0], "*", ms=12, color="C3", label="selected (validation)")
    a.set_xlabel("f2 = sum_i g(v_i)  (self-paced term)")
    a.set_ylabel("f1 = sum_i v_i l_i(w) + R(w)")
    a.set_title("Pareto front")
    a.legend(fontsize=8)
    b.plot(Fr[:, 1], val_scores, "o-", ms=3, label=f"validation {metric}")
    b.plot(Fr[:, 1], test_scores, "s-", ms=3, alpha=0.7, label=f"test {metric}")
    if est.refit:
        b.plot(F[:, 1], raw_val, ".", ms=3, alpha=0.6, label=f"validation {metric}, unrefit")
    b.axvline(Fr[best, 1], color="C3", lw=0.8)
    b.set_xlabel("f2 (left end: lam = inf, v = 1; right: young, few samples)")
    b.set_ylabel(metric)
    b.set_title("metric along the front")
    b.legend(fontsize=8)
    fig.suptitle(f"MOSPL {title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
