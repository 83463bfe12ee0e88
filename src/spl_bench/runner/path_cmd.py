"""``spl-bench path``: compute one GAGA age-path, write the AgePath file and its figures.

The keys are those of ``spl-bench run`` (:data:`USAGE`); the short names of earlier versions
(``alpha``, ``sp_gamma``, ``noise_rate``, ...) are still taken.  The data are prepared exactly as
run ``run`` of ``spl-bench run`` with the default protocol (:func:`spl_bench.protocol.run.prepare_run`:
3:1 split seeded ``protocol.base_seed + run``, scaling on the training rows, ``noise.rate`` of the
training rows corrupted by ``noise.kind`` -- ``auto``: label flips or target replacement by task --
and 20 % of them held out for validation), so the path is the one ``spl-bench run method=gaga``
fits in that run.  Writes ``<out>/<data>_<model>_<sp>.npz`` (:meth:`AgePath.save`),
``*_agepath.png`` (paper Fig. 2), ``*_learning_curve.png`` (Fig. 1), ``*_critical.png`` (Fig. 6)
and ``*_summary.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from spl_bench.atomic import atomic_write_text
from spl_bench.errors import ConfigError, check_int, check_number, unknown_key
from spl_bench.runner.output_folder import check_output_folder

USAGE = """usage: spl-bench path [key=value ...]

One GAGA age-path (the path spl-bench run method=gaga fits in one run), its file and figures.
Keys (as in spl-bench run; default in brackets):
  data=NAME                  dataset config [diabetes]
  model=lasso|logistic|huber|svm   [lasso]
  sp=NAME                    SP-regularizer [linear]
  model.params.alpha=A       lasso / huber [0.005];  model.params.delta=D (huber)
  model.params.C=C           logistic / svm;  model.params.kernel=K, model.params.gamma=G (svm)
  sp.params.gamma=G          sp=mixture [0.5]
  method.lam_min=L  method.lam_max=L   the ages [0.1, 20]
  method.ode_method=M        fastest | auto | PC | compiled | LSODA | ... [fastest]
  noise.rate=R  noise.kind=K [0.3, auto]
  protocol.base_seed=S       [40];  run=K: the run whose data are used [0]
  out=DIR                    where the files go [runs/path]
  progress=false             no progress bar
example: spl-bench path data=diabetes sp=mixture sp.params.gamma=0.5 method.lam_max=3"""

MODEL_KEYS = {"lasso": ("alpha",), "logistic": ("C",), "huber": ("alpha", "delta"),
              "svm": ("C", "kernel", "gamma")}
#: every key ``spl-bench path`` understands, by its short name; anything else is refused (a typo must not be ignored)
KEYS = ("model", "sp", "data", "alpha", "delta", "C", "kernel", "gamma", "sp_gamma", "lam_min", "lam_max", "seed",
        "run", "noise_rate", "noise_kind", "out", "ode_method", "progress")  # fmt: skip
#: ``spl-bench run``'s name of each key -> the short name
RUN_KEYS = {
    **{f"model.params.{k}": k for k in ("alpha", "delta", "C", "kernel", "gamma")},
    "sp.params.gamma": "sp_gamma", "method.lam_min": "lam_min", "method.lam_max": "lam_max",
    "method.ode_method": "ode_method", "noise.rate": "noise_rate", "noise.kind": "noise_kind",
    "protocol.base_seed": "seed",
}  # fmt: skip
#: the default output folder: beside spl-bench run's ``runs/``, never inside the committed results/
DEFAULT_OUT = "runs/path"


def _parse(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for a in argv:
        if "=" not in a:
            raise ConfigError(f"spl-bench path takes key=value arguments (spl-bench path --help), got {a!r}")
        k, v = a.split("=", 1)
        k = k.lstrip("+")
        k = RUN_KEYS.get(k, k)
        if k not in KEYS:
            raise unknown_key("spl-bench path key", k, [*RUN_KEYS, *KEYS])
        out[k] = v
    return out


def _num(k: str, v: str) -> float | str:
    if k == "kernel":
        return v
    if k == "gamma" and v in ("scale", "auto"):
        return v
    return check_number(k, v)


def main(argv: list[str]) -> int:
    from spl_bench.data.loaders import load_dataset
    from spl_bench.gaga import EngineOptions, age_path
    from spl_bench.gaga.core.plots import plot_age_path, plot_critical_histogram, plot_learning_curve
    from spl_bench.models import Params, get_model
    from spl_bench.protocol import NoiseConfig, ProtocolConfig
    from spl_bench.protocol.run import prepare_run
    from spl_bench.runner.run_config import AUTO_NOISE

    if any(arg in ("-h", "--help") for arg in argv):
        print(USAGE)
        return 0
    a = _parse(argv)
    model = a.get("model", "lasso")
    sp = a.get("sp", "linear")
    data = a.get("data", "diabetes")
    if model not in MODEL_KEYS:
        raise ConfigError(f"unknown model {model!r}; valid models: {', '.join(MODEL_KEYS)}")
    for k in ("alpha", "delta", "C", "kernel", "gamma"):
        if k in a and k not in MODEL_KEYS[model]:
            raise ConfigError(f"model.params.{k} / {k} is not a parameter of model {model!r} (its parameters: "
                              f"{', '.join(MODEL_KEYS[model])})")
    mparams = {k: _num(k, a[k]) for k in MODEL_KEYS[model] if k in a}
    if model in ("lasso", "huber"):
        mparams.setdefault("alpha", 0.005)
    if "sp_gamma" in a and sp != "mixture":
        raise ConfigError(f"sp.params.gamma / sp_gamma is a parameter of sp=mixture only, not of sp={sp}")
    sp_params = {"gamma": check_number("sp_gamma", a.get("sp_gamma", 0.5))} if sp == "mixture" else {}
    seed = check_int("seed", a.get("seed", "40"), minimum=0)
    lam_range = (check_number("lam_min", a.get("lam_min", 0.1)), check_number("lam_max", a.get("lam_max", 20.0)))
    if not 0.0 < lam_range[0] < lam_range[1]:
        raise ConfigError(f"need 0 < lam_min < lam_max, got lam_min={lam_range[0]}, lam_max={lam_range[1]}")
    out = Path(a.get("out", DEFAULT_OUT))
    check_output_folder("out=", str(out))

    run = check_int("run", a.get("run", "0"), minimum=0)
    rate = check_number("noise_rate", a.get("noise_rate", 0.3))
    ds = load_dataset(data)
    kind = a.get("noise_kind", "auto")
    noise = NoiseConfig(AUTO_NOISE[ds.task] if kind == "auto" else kind, rate)
    prep = prepare_run(ds, ProtocolConfig(base_seed=seed), noise, run)
    Xtr, ytr, Xva, yva = prep.X_fit, prep.y_fit, prep.X_sel, prep.y_sel
    Xte, yte = prep.scaled.X_test, prep.scaled.y_test

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    show = a.get("progress", "true").lower() not in ("false", "0", "no")
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("λ = {task.fields[lam]:.4g}"),
                  TimeElapsedColumn(), disable=not show) as bar:
        # the bar runs over log λ: critical points are densest at small ages
        lo, hi = np.log(lam_range[0]), np.log(lam_range[1])
        task = bar.add_task(f"age-path {data} {model}/{sp}", total=hi - lo, lam=lam_range[0])

        def report(lam: float, n_events: int) -> None:
            bar.update(task, completed=np.log(lam) - lo, lam=lam,
                       description=f"age-path {data} {model}/{sp} · {n_events} critical points")

        path = age_path(Xtr, ytr, model=model, sp=sp, sp_params=sp_params, lam_range=lam_range,
                        options=EngineOptions(method=str(a.get("ode_method", "fastest"))), progress=report, **mparams)
    stem = f"{data}_{model}_{sp}"
    out.mkdir(parents=True, exist_ok=True)
    f = path.save(out / f"{stem}.npz")
    mdl = get_model(model, **mparams)
    grid = np.geomspace(lam_range[0], lam_range[1], 300)
    vals, bs = path.at(grid)
    errs: dict[str, list[float]] = {"validation": [], "test": []}
    for v, b in zip(vals, bs, strict=True):
        p = (Params(dual_coef=v, intercept=b, X_fit=Xtr, y_fit=ytr, extra={"gamma": path.meta["kernel_gamma"]})
             if path.dual_coef is not None else Params(coef=v, intercept=b))
        for name, X, y in (("validation", Xva, yva), ("test", Xte, yte)):
            pred = mdl.predict(p, X)
            errs[name].append(float(np.mean((pred - y) ** 2) if ds.task == "regression" else np.mean(pred != y)))
    plot_age_path(path, out / f"{stem}_agepath.png")
    plot_learning_curve(grid, {k: np.array(v) for k, v in errs.items()}, out / f"{stem}_learning_curve.png",
                        ylabel="MSE (standardised target)" if ds.task == "regression" else "error rate")
    plot_critical_histogram(path, out / f"{stem}_critical.png")
    best = int(np.argmin(errs["validation"]))
    summary = {"file": str(f), **path.critical_counts(), "n_restarts": path.n_restarts, "points": len(path),
               "time_s": path.meta["time_s"], "lam_selected": float(grid[best]),
               "validation_error": errs["validation"][best], "test_error": errs["test"][best]}
    atomic_write_text(out / f"{stem}_summary.json", json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0
