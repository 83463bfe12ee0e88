"""One run's config as the library reads it: the protocol, the noise, the estimator, the identity.

What ``spl-bench run`` (:mod:`spl_bench.runner.app`, the Hydra shell), the table sweep
(:mod:`spl_bench.runner.reproduce`), ``spl-bench path`` and the scripts share, so a config gives the
same run and the same configuration hash everywhere:

* :func:`plain`: a config node as plain Python containers;
* :func:`protocol_config`, :func:`noise_config`, :func:`estimator_factory`, :func:`check_task`:
  the run's parts, refused with one line where a key or a value is wrong;
* :func:`identity`: the part of the config that determines the numbers (hashed for resuming);
* :func:`outcome_rows`: a run's tidy rows.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from spl_bench.data import Dataset
from spl_bench.environment import code_version, environment_json
from spl_bench.errors import ConfigError, check_int, check_number, unknown_key
from spl_bench.methods.base import SPLEstimator
from spl_bench.models import get_model
from spl_bench.protocol import NoiseConfig, ProtocolConfig, RunOutcome

#: the noise kind ``noise.kind=auto`` stands for, by task
AUTO_NOISE = {"classification": "uniform_flip", "regression": "target_gaussian"}


def plain(node: Any) -> Any:
    """A config node as plain Python containers (interpolations resolved); anything else as given."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def noise_config(cfg: DictConfig, task: str) -> NoiseConfig:
    """The noise options of ``cfg`` with ``kind: auto`` resolved by the task."""
    kind = str(cfg.noise.kind)
    if kind == "auto":
        kind = AUTO_NOISE[task]
    rate = check_number("noise.rate", cfg.noise.rate, 0.0, 1.0)
    return NoiseConfig(kind=kind, rate=rate, options=dict(plain(cfg.noise.get("options")) or {}))


def protocol_config(cfg: DictConfig) -> ProtocolConfig:
    """``cfg.protocol`` as a :class:`ProtocolConfig`; unknown keys and ill-typed values are refused."""
    given = dict(plain(cfg.protocol))
    fields = {f.name: f.type for f in dataclasses.fields(ProtocolConfig)}
    for key, value in given.items():
        if key not in fields:
            raise unknown_key("protocol key", key, list(fields))
        kind = str(fields[key])
        if kind == "int":
            given[key] = check_int(f"protocol.{key}", value, minimum=1 if key == "n_runs" else None)
        elif kind == "float":
            given[key] = check_number(f"protocol.{key}", value)
    return ProtocolConfig(**given)


def check_keywords(kind: str, target: Callable[..., Any], given: dict[str, Any]) -> None:
    """Refuse keys of ``given`` that ``target`` does not take, naming the closest valid one.

    ``+model.params.alpah=0.01`` would otherwise end in a traceback (``unexpected keyword argument``)
    deep inside the fit.  ``kind`` names the config keys (``model.params key of model lasso``).
    """
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    valid = [n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL]
    for key in given:
        if key not in valid:
            raise unknown_key(kind, str(key), valid)


def check_component_params(cfg: DictConfig) -> None:
    """``model.params``, ``sp.params`` and the method's keys: every key one the code takes."""
    from hydra.utils import get_class

    from spl_bench.models import REGISTRY as MODELS
    from spl_bench.sp import REGISTRY as SPS

    model, sp = str(cfg.model.name), str(cfg.sp.name)
    check_keywords(f"model.params key of model {model}", MODELS.get(model), dict(plain(cfg.model.get("params")) or {}))
    check_keywords(f"sp.params key of sp {sp}", SPS.get(sp), dict(plain(cfg.sp.get("params")) or {}))
    method = {k: v for k, v in plain(cfg.method).items() if k not in ("name", "_target_")}
    try:
        target = get_class(str(cfg.method.get("_target_")))
    except Exception:  # an unknown target is reported by instantiate, with its own message
        return
    check_keywords(f"method key of method {cfg.method.get('name')}", target, method)


def estimator_factory(cfg: DictConfig) -> Callable[[], SPLEstimator]:
    """A function building a fresh, unfitted method estimator from ``cfg.method``."""
    method_cfg = {k: v for k, v in plain(cfg.method).items() if k != "name"}
    if "_target_" not in method_cfg:
        raise ConfigError(f"method config {cfg.method.get('name')!r} has no _target_")
    check_component_params(cfg)
    kwargs = {
        "model": str(cfg.model.name),
        "model_params": dict(plain(cfg.model.get("params")) or {}),
        "sp": str(cfg.sp.name),
        "sp_params": dict(plain(cfg.sp.get("params")) or {}),
    }

    def make() -> SPLEstimator:
        return instantiate(method_cfg, **kwargs, _convert_="all")

    make()  # fail early (and clearly) on bad method/model/sp parameters
    return make


def check_task(cfg: DictConfig, ds: Dataset) -> None:
    """Refuse a model of another task than the dataset's (and model parameters it does not take)."""
    check_component_params(cfg)
    model = get_model(str(cfg.model.name), **(plain(cfg.model.get("params")) or {}))
    if model.task != ds.task:
        suggestion = "lasso" if ds.task == "regression" else "svm or model=logistic"
        raise ConfigError(
            f"model {model.name!r} is for {model.task} but dataset {ds.name!r} is {ds.task}; "
            f"use model={suggestion}"
        )


#: method settings that do not change the numbers (where a long fit saves its state)
RUN_ONLY_METHOD_KEYS = ("checkpoint_dir", "checkpoint_every", "blas_threads")
#: per method, more settings that do not change the numbers: where DSPL's batches are computed
#: (its backends give the same numbers, docs/dspl.md)
RUN_ONLY_BY_METHOD = {"dspl": ("backend", "cluster")}


def identity(cfg: DictConfig) -> dict[str, Any]:
    """The part of the config that determines the numbers (hashed for resuming)."""
    keys = ("data", "noise", "model", "sp", "method", "protocol")
    ident = {k: plain(cfg[k]) for k in keys}
    ident["protocol"] = {k: v for k, v in ident["protocol"].items() if k != "n_runs"}
    if ident["protocol"].get("candidates", "own") == "own":
        # each method's own candidates: the hashes of every configuration made before the
        # equal-candidates control existed stay as they were
        ident["protocol"] = {k: v for k, v in ident["protocol"].items() if k not in ("candidates", "candidate_step")}
    ident["data"] = {k: v for k, v in ident["data"].items() if k != "root"}
    run_only = (*RUN_ONLY_METHOD_KEYS, *RUN_ONLY_BY_METHOD.get(str(ident["method"].get("name")), ()))
    if ident["method"].get("name") == "gaga":
        # GAGA: under its route-independent candidates the route is a speed choice; the step rule
        # ("steps", the rows made before it existed) keeps the hashes those rows were made under
        legacy = ident["method"].get("candidates", "steps") == "steps"
        run_only = (*run_only, "candidates") if legacy else (*run_only, "ode_method")
    if ident["method"].get("name") == "mospl":
        # MOSPL: the keys at their values before they existed (the model's full fit, the kernel matrix's
        # product) keep the hashes of the rows made then
        before = {"full_fit": "model", "kernel_product": "matrix"}
        run_only = (*run_only, *(k for k, v in before.items() if ident["method"].get(k, v) == v))
    ident["method"] = {k: v for k, v in ident["method"].items() if k not in run_only}
    return ident


def outcome_rows(cfg: DictConfig, ds: Dataset, noise: NoiseConfig, out: RunOutcome, h: str) -> list[dict]:
    """The tidy rows of one run (its metric and its selection score) under configuration hash ``h``."""
    info = dict(out.info)
    restarts = info.pop("n_restarts", None)
    base = {
        "experiment": cfg.exp_name,
        "dataset": ds.name,
        "noise": noise.label,
        "method": cfg.method.name,
        "model": cfg.model.name,
        "sp": cfg.sp.name if cfg.method.name != "original" else "-",
        "selection": cfg.protocol.selection,
        "params": json.dumps({"model": plain(cfg.model.get("params")), "sp": plain(cfg.sp.get("params"))}),
        "seed": out.run,
        "lam": out.lam,
        "candidate": json.dumps(out.candidate, default=float),
        "time_s": out.fit_time,
        "cpu_s": out.fit_cpu,
        "n_restarts": restarts,
        "n_train": out.n_train,
        "n_test": out.n_test,
        "n_corrupted": out.n_corrupted,
        "info": json.dumps(info, default=float),
        "config_hash": h,
        "code_version": code_version(),
        "environment": environment_json(),  # library versions, BLAS and CPU of this process
    }
    for key, val in info.items():
        if key.startswith("n_critical_"):
            base[key] = val
    return [
        {**base, "metric": out.metric, "value": out.value},
        {**base, "metric": f"selection_{out.metric}", "value": out.selection_score},
    ]
