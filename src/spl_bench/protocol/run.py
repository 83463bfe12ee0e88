"""One run of the evaluation protocol: split, scale, corrupt, fit, select, score.

Order of operations for run ``k`` (all seeded from ``base_seed`` and ``k``):

1. split rows into train and test (:func:`~spl_bench.protocol.splits.split_indices`);
2. scale (fitted on the training rows; ``scaling=authors`` for the authors' variant);
3. corrupt ``round(rate * n_train)`` training rows (in scaled units); test rows stay clean;
4. with ``selection=validation`` hold out ``val_size`` of the (noisy) training rows;
5. fit the method on the remaining training rows; it returns candidates (ages, ...);
6. choose the candidate with the best validation metric (or the best *test* metric
   with ``selection=test``, as the GAGA authors' code does) and report its test metric.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spl_bench.data import Dataset, inject_noise, scale_split
from spl_bench.errors import ConfigError
from spl_bench.methods.base import SPLEstimator
from spl_bench.protocol.metrics import best_candidate, candidate_scores, metric_name
from spl_bench.protocol.splits import split_indices, validation_split

SELECTIONS = ("validation", "test")


@dataclass
class ProtocolConfig:
    """Evaluation protocol options (``configs/protocol/*.yaml``)."""

    splits: str = "split3to1"
    test_size: float = 0.25
    val_size: float = 0.2
    selection: str = "validation"
    base_seed: int = 40
    n_runs: int = 20
    scaling: str = "train"

    def __post_init__(self) -> None:
        if self.selection not in SELECTIONS:
            raise ConfigError(f"unknown protocol.selection {self.selection!r}; valid: {', '.join(SELECTIONS)}")
        if int(self.n_runs) < 1:
            raise ConfigError(f"protocol.n_runs must be >= 1, got {self.n_runs}")


@dataclass
class NoiseConfig:
    """Noise options (``configs/noise/*.yaml``): kind, rate and kind-specific keywords."""

    kind: str = "none"
    rate: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "clean" if self.kind == "none" or self.rate == 0 else f"{self.kind}@{self.rate:g}"


@dataclass
class RunOutcome:
    """What one run measured."""

    run: int
    metric: str
    value: float
    selection_score: float
    candidate: dict[str, Any]
    lam: float
    fit_time: float
    info: dict[str, Any]
    n_train: int
    n_selection: int
    n_test: int
    n_corrupted: int


def _age_of(candidate: dict[str, Any]) -> float:
    """The age of a candidate: ``lam``, else an equivalent age (MOSPL's ``lam_equiv``), else NaN."""
    for key in ("lam", "lam_equiv"):
        val = candidate.get(key)
        if val is not None:
            return float(val)
    return float("nan")


def run_once(
    ds: Dataset,
    make_estimator: Callable[[], SPLEstimator],
    protocol: ProtocolConfig,
    noise: NoiseConfig,
    run: int,
    after_fit: Callable[[SPLEstimator, int], None] | None = None,
) -> RunOutcome:
    """Carry out run number ``run`` (0-based) of the protocol; see the module doc.

    ``after_fit(estimator, run)``, when given, is called right after the fit (the runner
    uses it to write path files).
    """
    tr, te = split_indices(ds.n_samples, run, protocol.splits, protocol.base_seed, protocol.test_size)
    sc = scale_split(ds.X[tr], ds.y[tr], ds.X[te], ds.y[te], ds.task, protocol.scaling)
    rng = np.random.default_rng([protocol.base_seed, run])
    noisy = inject_noise(sc.X_train, sc.y_train, ds.task, noise.kind, noise.rate, rng, **noise.options)
    X_tr, y_tr = noisy.X, noisy.y
    if protocol.selection == "validation":
        fit, val = validation_split(len(y_tr), protocol.val_size, protocol.base_seed + run)
        X_fit, y_fit, X_sel, y_sel = X_tr[fit], y_tr[fit], X_tr[val], y_tr[val]
    else:
        X_fit, y_fit, X_sel, y_sel = X_tr, y_tr, sc.X_test, sc.y_test

    est = make_estimator()
    t0 = time.perf_counter()
    est.fit(X_fit, y_fit)
    fit_time = time.perf_counter() - t0
    if after_fit is not None:
        after_fit(est, run)

    sel_scores = candidate_scores(ds.task, est.predict_candidates(X_sel), y_sel)
    best = best_candidate(ds.task, sel_scores)
    est.select(best)
    test_value = float(candidate_scores(ds.task, est.predict(sc.X_test)[None, :], sc.y_test)[0])
    if not np.isfinite(test_value):
        raise FloatingPointError(f"run {run}: test metric is {test_value}")
    cand = dict(est.selected_params_)
    return RunOutcome(
        run=run,
        metric=metric_name(ds.task),
        value=test_value,
        selection_score=float(sel_scores[best]),
        candidate=cand,
        lam=_age_of(cand),
        fit_time=fit_time,
        info=est.run_info(),
        n_train=len(y_fit),
        n_selection=len(y_sel),
        n_test=len(te),
        n_corrupted=len(noisy.idx),
    )
