"""One run of the evaluation protocol: split, scale, corrupt, fit, select, score.

Order of operations for run ``k`` (all seeded from ``base_seed`` and ``k``):

1. split rows into train and test (:func:`~spl_bench.protocol.splits.split_indices`);
2. scale (fitted on the training rows; ``scaling=authors`` for the authors' variant);
3. corrupt ``round(rate * n_train)`` training rows (in scaled units); test rows stay clean;
4. with ``selection=validation`` hold out ``val_size`` of the (noisy) training rows;
5. fit the method on the remaining training rows; it returns candidates (ages, ...);
6. choose the candidate with the best validation metric (or the best *test* metric
   with ``selection=test``, as the GAGA authors' code does) and report its test metric.

``noise_scope=all`` replaces step 3 by the GAGA authors' order for classification: the
labels (or targets) of ``round(rate * n)`` rows of the *whole* data set are corrupted once,
before any split (seeded from ``base_seed`` only, so every run sees the same noisy data), and
the test metric is measured on the noisy test labels.  The metric on the clean test labels
is kept in the run's info (``test_value_clean``).

Every run also records ``value_test_selected`` in its info: the test metric of the candidate
that is best *on the test split*, from the same fit.  Beside the reported value it shows what
choosing the age on the test set (the authors' code) adds, at no extra fit.

Every run records ``floor_value`` in its info too: the test metric of the constant predictor on
the same split (:func:`constant_floor`: the majority class of the training labels, or the mean of
the training targets, predicted for every test row), the report's sanity floor
(:mod:`spl_bench.report.floor`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from spl_bench.data import Dataset, inject_noise, scale_split
from spl_bench.errors import ConfigError
from spl_bench.methods.base import SPLEstimator
from spl_bench.protocol.metrics import best_candidate, candidate_scores, metric_name
from spl_bench.protocol.splits import split_indices, validation_split

SELECTIONS = ("validation", "test")
CANDIDATE_SETS = ("own", "shared_grid")
NOISE_SCOPES = ("train", "all")
#: noise kinds that change the features too; with ``noise_scope=all`` only label / target noise is allowed
_FEATURE_NOISE = ("gaussian_shift",)


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
    noise_scope: str = "train"
    # the candidates offered to the selection: each method's own, or the equal-candidates control
    # (GAGA and ACS at the ages lam_min, lam_min + candidate_step, ..., lam_max; docs/protocol.md)
    candidates: str = "own"
    candidate_step: float = 0.5

    def __post_init__(self) -> None:
        if self.candidates not in CANDIDATE_SETS:
            raise ConfigError(f"unknown protocol.candidates {self.candidates!r}; valid: {', '.join(CANDIDATE_SETS)}")
        if not float(self.candidate_step) > 0:
            raise ConfigError(f"protocol.candidate_step must be > 0, got {self.candidate_step}")
        if self.selection not in SELECTIONS:
            raise ConfigError(f"unknown protocol.selection {self.selection!r}; valid: {', '.join(SELECTIONS)}")
        if self.noise_scope not in NOISE_SCOPES:
            raise ConfigError(
                f"unknown protocol.noise_scope {self.noise_scope!r}; valid: {', '.join(NOISE_SCOPES)}"
            )
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
    #: the fit's CPU seconds (this process, all its threads); ``fit_time`` is wall-clock
    fit_cpu: float = float("nan")


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
    return run_shared(ds, make_estimator, [protocol], noise, run, after_fit)[0]


#: the protocol fields that choose among a fitted method's solutions and never change the fit
SELECTION_ONLY_FIELDS = ("candidates", "candidate_step")


def shares_fit(a: ProtocolConfig, b: ProtocolConfig) -> bool:
    """Whether runs under ``a`` and ``b`` fit the same data the same way: they differ at most in the
    candidates offered to the selection (:data:`SELECTION_ONLY_FIELDS`)."""
    same = {f: getattr(a, f) for f in SELECTION_ONLY_FIELDS}
    return replace(b, **same) == a


def run_shared(
    ds: Dataset,
    make_estimator: Callable[[], SPLEstimator],
    protocols: Sequence[ProtocolConfig],
    noise: NoiseConfig,
    run: int,
    after_fit: Callable[[SPLEstimator, int], None] | None = None,
) -> list[RunOutcome]:
    """Run ``run`` of several protocols that share one fit (:func:`shares_fit`): split, corrupt and fit
    once, then select and score once per protocol.  One outcome per protocol, in their order.

    Each outcome is the one :func:`run_once` gives for its protocol alone: the fit does not depend on
    the candidates, and the selections under the method's own candidates are made before the
    equal-candidates control narrows them (``use_ages``).
    """
    if not protocols:
        raise ValueError("run_shared needs at least one protocol")
    first = protocols[0]
    for other in protocols[1:]:
        if not shares_fit(first, other):
            raise ConfigError(f"protocols that share a fit may differ only in {', '.join(SELECTION_ONLY_FIELDS)}; "
                              f"got {first} and {other}")
    prep = prepare_run(ds, first, noise, run)
    est = make_estimator()
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(prep.X_fit, prep.y_fit)
    # an estimator resumed from a checkpoint (GAGA's checkpoint_dir) adds the time spent before it
    before = float(getattr(est, "time_before_resume_", 0.0))
    fit_time = time.perf_counter() - t0 + before
    # the fit's CPU seconds (this process, all its threads): what the run costs, whatever else the
    # machine was doing or however long the process was paused; the plan prices cells by it.  A fit
    # resumed from a checkpoint adds the earlier processes' CPU seconds (NaN where the checkpoint did
    # not record them: its wall-clock seconds count pauses and other work, and are no CPU measure)
    fit_cpu = time.process_time() - c0 + float(getattr(est, "cpu_before_resume_", 0.0))
    if after_fit is not None:
        after_fit(est, run)
    # the method's own candidates first: the control keeps only some of them
    order = sorted(range(len(protocols)), key=lambda i: protocols[i].candidates != "own")
    out: dict[int, RunOutcome] = {}
    for i in order:
        out[i] = _select_and_score(ds, est, prep, protocols[i], run, fit_time)
        out[i].fit_cpu = fit_cpu
    return [out[i] for i in range(len(protocols))]


def _select_and_score(ds: Dataset, est: SPLEstimator, prep: PreparedRun, protocol: ProtocolConfig, run: int,
                      fit_time: float) -> RunOutcome:
    """Steps 6 of the module doc for a fitted estimator: choose a candidate and score it."""
    X_sel, y_sel, sc, clean = prep.X_sel, prep.y_sel, prep.scaled, prep.clean
    if protocol.candidates == "shared_grid":
        # the equal-candidates control: the method's solutions at the shared ages only
        est.use_ages(shared_ages(est, protocol.candidate_step))

    sel_scores = candidate_scores(ds.task, est.predict_candidates(X_sel), y_sel)
    best = best_candidate(ds.task, sel_scores)
    test_scores = candidate_scores(ds.task, est.predict_candidates(sc.X_test), sc.y_test)
    est.select(best)
    test_value = float(candidate_scores(ds.task, est.predict(sc.X_test)[None, :], sc.y_test)[0])
    if not np.isfinite(test_value):
        raise FloatingPointError(f"run {run}: test metric is {test_value}")
    info = est.run_info()
    info["value_test_selected"] = float(test_scores[best_candidate(ds.task, test_scores)])
    info["floor_value"] = constant_floor(ds.task, training_labels(prep, protocol), sc.y_test)[0]
    if clean is not None:
        info["test_value_clean"] = float(candidate_scores(ds.task, est.predict(clean.X_test)[None, :], clean.y_test)[0])
    cand = dict(est.selected_params_)
    return RunOutcome(
        run=run,
        metric=metric_name(ds.task),
        value=test_value,
        selection_score=float(sel_scores[best]),
        candidate=cand,
        lam=_age_of(cand),
        fit_time=fit_time,
        info=info,
        n_train=len(prep.y_fit),
        n_selection=len(y_sel),
        n_test=len(prep.test_idx),
        n_corrupted=prep.n_corrupted,
    )


def training_labels(prep: PreparedRun, protocol: ProtocolConfig) -> np.ndarray:
    """The labels (targets) of the run's whole training split as the methods see it (noise included):
    the fitted rows and, with ``selection=validation``, the validation rows held out of them."""
    if protocol.selection == "validation":
        return np.concatenate([prep.y_fit, prep.y_sel])
    return prep.y_fit


def constant_floor(task: str, y_train: np.ndarray, y_test: np.ndarray) -> tuple[float, float]:
    """The test metric of the constant predictor fitted on ``y_train``, and the constant.

    Classification: the majority class of ``y_train`` (the smallest label on a tie) predicted for
    every test row, scored by accuracy.  Regression: the mean of ``y_train`` (``math.fsum``, so it
    does not depend on the order of the rows) predicted for every test row, scored by the
    protocol's generalisation error.  The value a fit must beat to be more than a constant.
    """
    y_train = np.asarray(y_train)
    if len(y_train) == 0 or len(y_test) == 0:
        raise ValueError("the constant predictor needs training and test rows")
    if task == "classification":
        classes, counts = np.unique(y_train, return_counts=True)
        constant = float(classes[int(np.argmax(counts))])
    else:
        constant = math.fsum(np.asarray(y_train, float).tolist()) / len(y_train)
    preds = np.full((1, len(y_test)), constant)
    return float(candidate_scores(task, preds, np.asarray(y_test))[0]), constant


def shared_ages(est: SPLEstimator, step: float) -> np.ndarray:
    """The ages of the equal-candidates control: ``lam_min, lam_min + step, ..., lam_max`` of the
    estimator's age range (the paper's ACS grid at the default step 0.5; GAGA appendix D.2)."""
    from spl_bench.methods.acs import lambda_grid

    if not hasattr(est, "lam_min") or not hasattr(est, "lam_max"):
        raise ConfigError(f"protocol.candidates=shared_grid needs a method with an age range; "
                          f"{type(est).__name__} has none (use GAGA or ACS)")
    return lambda_grid(float(est.lam_min), float(est.lam_max), float(step))


def noisy_labels_all_rows(ds: Dataset, noise: NoiseConfig, base_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels (targets) of the whole data set with ``round(rate * n)`` rows corrupted before any split.

    The GAGA authors' code corrupts the labels of the loaded data set once (seed 40) and then
    splits it, so their test labels carry the noise too (``protocol.noise_scope=all``).  Noise
    that needs the features (``near_boundary_flip``) sees them standardised on all rows; noise
    that changes the features (``gaussian_shift``) is refused, since it would move test inputs.

    Returns
    -------
    y : ndarray
        The noisy labels (targets) in the data set's own units.
    idx : ndarray of int
        The corrupted rows.
    """
    if noise.kind in _FEATURE_NOISE and noise.rate > 0:
        raise ConfigError(
            f"protocol.noise_scope=all corrupts labels / targets only; noise kind {noise.kind!r} changes features"
        )
    key = _noise_key(ds, noise, base_seed)
    hit = _ALL_ROWS_NOISE.pop(key, None)  # re-inserted below: the most recently used entry is kept longest
    if hit is None:
        X = ds.X - ds.X.mean(axis=0)
        sd = X.std(axis=0)
        X = X / np.where(sd > 0, sd, 1.0)
        rng = np.random.default_rng([base_seed])
        noisy = inject_noise(X, ds.y, ds.task, noise.kind, noise.rate, rng, **noise.options)
        hit = (noisy.y, noisy.idx)
    _ALL_ROWS_NOISE[key] = hit
    while len(_ALL_ROWS_NOISE) > _ALL_ROWS_NOISE_SIZE:
        _ALL_ROWS_NOISE.pop(next(iter(_ALL_ROWS_NOISE)))
    return hit[0].copy(), hit[1].copy()


#: noisy labels of whole data sets, by :func:`_noise_key`: every run and every method of a table row
#: sees the same corrupted data set, and ``near_boundary_flip`` fits a linear SVM on all rows to draw
#: it (about 5 CPU-minutes on hiva_agnostic), so a sweep draws it once per process instead of per run.
#: Least recently used entries go first; a sweep visits its cells seed by seed, so the memo must hold
#: every (data, noise) of the sweep: with 4 entries the 5 of Tables 2-3's RBF rows (mfeat-pixel and
#: pendigits at two rates, hiva) evicted hiva's before its next run, 190 CPU-s each time.  An entry is
#: two vectors of the data set's length.
_ALL_ROWS_NOISE: dict[str, tuple[np.ndarray, np.ndarray]] = {}
_ALL_ROWS_NOISE_SIZE = 64


def _noise_key(ds: Dataset, noise: NoiseConfig, base_seed: int) -> str:
    """Digest of everything :func:`noisy_labels_all_rows` depends on: the data, the noise, the seed."""
    h = hashlib.blake2b(digest_size=20)
    for a in (ds.X, ds.y):
        a = np.ascontiguousarray(a)
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(a.data)
    h.update(json.dumps([ds.task, noise.kind, noise.rate, noise.options, int(base_seed)], sort_keys=True,
                        default=str).encode())
    return h.hexdigest()


@dataclass
class PreparedRun:
    """The data of run ``k`` as the protocol prepares it (steps 1-4 of the module doc)."""

    X_fit: np.ndarray
    y_fit: np.ndarray
    X_sel: np.ndarray  # the selection split: validation rows, or the test rows with selection=test
    y_sel: np.ndarray
    scaled: Any  # the scaled train / test split (``data.preprocess.Scaled``), test labels as scored
    clean: Any  # with noise_scope=all: the same split with the clean labels, else None
    test_idx: np.ndarray
    n_corrupted: int


def prepare_run(ds: Dataset, protocol: ProtocolConfig, noise: NoiseConfig, run: int) -> PreparedRun:
    """Split, scale, corrupt and hold out the selection rows of run ``run``.

    The one preparation shared by ``spl-bench run`` (:func:`run_once`), ``spl-bench path``
    and the scripts, so one configuration gives the same numbers everywhere.
    """
    tr, te = split_indices(ds.n_samples, run, protocol.splits, protocol.base_seed, protocol.test_size)
    if protocol.noise_scope == "all":
        y_all, idx_all = noisy_labels_all_rows(ds, noise, protocol.base_seed)
        sc = scale_split(ds.X[tr], y_all[tr], ds.X[te], y_all[te], ds.task, protocol.scaling)
        clean = scale_split(ds.X[tr], ds.y[tr], ds.X[te], ds.y[te], ds.task, protocol.scaling)
        X_tr, y_tr = sc.X_train, sc.y_train
        n_noisy_train = int(np.isin(tr, idx_all).sum())
    else:
        sc = scale_split(ds.X[tr], ds.y[tr], ds.X[te], ds.y[te], ds.task, protocol.scaling)
        clean = None
        rng = np.random.default_rng([protocol.base_seed, run])
        noisy = inject_noise(sc.X_train, sc.y_train, ds.task, noise.kind, noise.rate, rng, **noise.options)
        X_tr, y_tr = noisy.X, noisy.y
        n_noisy_train = len(noisy.idx)
    if protocol.selection == "validation":
        fit, val = validation_split(len(y_tr), protocol.val_size, protocol.base_seed + run)
        X_fit, y_fit, X_sel, y_sel = X_tr[fit], y_tr[fit], X_tr[val], y_tr[val]
    else:
        X_fit, y_fit, X_sel, y_sel = X_tr, y_tr, sc.X_test, sc.y_test

    return PreparedRun(X_fit, y_fit, X_sel, y_sel, sc, clean, te, n_noisy_train)
