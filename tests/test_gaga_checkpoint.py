"""Checkpointed age-paths (gaga/core/checkpoint.py): a path interrupted and resumed from its last
checkpoint equals the path computed in one go, bit for bit."""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import numpy as np
import pytest

from spl_bench.gaga import EngineOptions, age_path
from spl_bench.gaga.core.checkpoint import checkpoint_file, checkpoint_key
from spl_bench.gaga.core.options import _RUN_ONLY_OPTIONS


class Interrupt(Exception):
    """Stands for a session ending in the middle of a path."""


def _problem(model: str) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 5))
    if model == "lasso":
        y = X[:, 0] + 0.1 * rng.normal(size=80)
        y[:10] += 5.0  # outliers: samples leave and enter the easy set
        return X - X.mean(0), y - y.mean(), {"alpha": 0.01}
    if model == "logistic":
        # data whose logistic path is two-class from its (moved) start to lam_max with 20+ critical
        # points: the seed-1 data below walk into a one-class partial optimum (docs/gaga.md)
        rng = np.random.default_rng(3)
        X = rng.normal(size=(80, 5))
        y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
        y[:8] *= -1
        return X, y, {"C": 1.0}
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    y[:16] *= -1  # flipped labels
    return X, y, ({"C": 1.0, "kernel": "rbf", "gamma": 0.5} if model == "svm" else {"C": 1.0})


def _interrupted(tmp_path, model: str, sp: str, stop_at: int) -> tuple:
    """Run until ``stop_at`` critical points, raise, and resume; return both paths' pieces."""
    X, y, mp = _problem(model)
    spp = {"gamma": 0.2} if sp == "mixture" else None
    whole = age_path(X, y, model=model, sp=sp, sp_params=spp, lam_range=(0.1, 5.0), **mp)
    opts = EngineOptions(checkpoint_dir=str(tmp_path), checkpoint_every=0.0)

    def stop(lam: float, n_critical: int) -> None:
        if n_critical >= stop_at:
            raise Interrupt

    with pytest.raises(Interrupt):
        age_path(X, y, model=model, sp=sp, sp_params=spp, lam_range=(0.1, 5.0), options=opts, progress=stop, **mp)
    assert len(list(tmp_path.glob("agepath-*.pkl"))) == 1
    resumed = age_path(X, y, model=model, sp=sp, sp_params=spp, lam_range=(0.1, 5.0), options=opts, **mp)
    return whole, resumed


@pytest.mark.parametrize(("model", "sp"), [("lasso", "mixture"), ("logistic", "linear"), ("svm", "linear")])
def test_resumed_path_equals_the_uninterrupted_one(tmp_path, model, sp):
    """Interrupted after a third of its critical points; the resumed computation gives the same
    recorded points, events and restarts, and removes its checkpoint when done."""
    X, y, _ = _problem(model)
    probe = age_path(X, y, model=model, sp=sp, sp_params={"gamma": 0.2} if sp == "mixture" else None,
                     lam_range=(0.1, 5.0), **_problem(model)[2])
    n_events = len(probe.events)
    assert n_events >= 20  # enough critical points to stop in the middle
    whole, resumed = _interrupted(tmp_path, model, sp, n_events // 3)
    assert resumed.meta["n_resumes"] == 1 and whole.meta["n_resumes"] == 0
    assert resumed.meta["time_before_resume_s"] > 0.0
    np.testing.assert_array_equal(resumed.lambdas, whole.lambdas)
    vec = "dual_coef" if model == "svm" else "coef"
    np.testing.assert_array_equal(getattr(resumed, vec), getattr(whole, vec))
    np.testing.assert_array_equal(resumed.intercept, whole.intercept)
    np.testing.assert_array_equal(resumed.point_kind, whole.point_kind)
    assert resumed.events == whole.events
    assert resumed.n_restarts == whole.n_restarts
    assert not list(tmp_path.glob("agepath-*"))


def _lasso_interrupted(tmp_path) -> tuple:
    """A lasso path stopped after 10 critical points: its data, options and checkpoint file."""
    X, y, mp = _problem("lasso")
    opts = EngineOptions(checkpoint_dir=str(tmp_path), checkpoint_every=0.0)

    def stop(lam: float, n_critical: int) -> None:
        if n_critical >= 10:
            raise Interrupt

    with pytest.raises(Interrupt):
        age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 5.0), options=opts, progress=stop, **mp)
    (saved,) = tmp_path.glob("agepath-*.pkl")
    return X, y, mp, opts, saved


def test_a_checkpoint_of_other_inputs_is_not_used(tmp_path):
    """The key covers the data and the parameters: another alpha does not find the file, and a
    file of another path under this path's name is ignored with a warning."""
    X, y, mp, opts, saved = _lasso_interrupted(tmp_path)
    other = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 5.0), options=opts, alpha=0.02)
    assert other.meta["n_resumes"] == 0
    assert saved.is_file()  # not this path's file: left alone

    key = saved.name[len("agepath-"):-len(".pkl")]
    state = pickle.loads(saved.read_bytes())
    state["key"] = "0" * len(key)
    saved.write_bytes(pickle.dumps(state))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 5.0), options=opts, **mp)
    assert again.meta["n_resumes"] == 0
    assert any("another path" in str(w.message) for w in caught)
    assert checkpoint_file(tmp_path, key) == saved


def test_an_unreadable_checkpoint_is_ignored(tmp_path):
    X, y, mp, opts, saved = _lasso_interrupted(tmp_path)
    saved.write_bytes(saved.read_bytes()[:100])  # truncated, as by a crash in the middle of a write
    with pytest.warns(RuntimeWarning, match="unreadable checkpoint"):
        path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 5.0), options=opts, **mp)
    whole = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 5.0), **mp)
    np.testing.assert_array_equal(path.lambdas, whole.lambdas)
    assert not saved.exists()


def test_an_option_added_later_keeps_the_key_at_its_earlier_behaviour():
    """``acs_warm_extrapolate`` off (what the engine did before the option existed) leaves the key that
    the options had then, so older checkpoints resume with it; on (the default now), another key."""
    X, y = np.eye(3), np.ones(3)
    before = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(EngineOptions)
              if f.name != "acs_warm_extrapolate"]
    old = dataclasses.make_dataclass("EngineOptions", before)()
    key_old = checkpoint_key(X, y, {}, old, _RUN_ONLY_OPTIONS)
    assert checkpoint_key(X, y, {}, EngineOptions(acs_warm_extrapolate=False), _RUN_ONLY_OPTIONS) == key_old
    assert checkpoint_key(X, y, {}, EngineOptions(), _RUN_ONLY_OPTIONS) != key_old


def test_a_resumed_path_counts_the_earlier_processes_cpu_seconds_not_their_pauses(tmp_path, monkeypatch):
    """The checkpoint keeps the CPU seconds spent before it; a pause before the interruption (a sweep
    stopped with SIGSTOP, or a loaded machine) counts in the wall clock only.  A checkpoint written
    before CPU seconds were saved gives NaN: no CPU measure of the run (its rows' cpu_s is not one)."""
    import time

    from spl_bench.gaga.core import checkpoint

    X, y, mp = _problem("svm")
    opts = EngineOptions(checkpoint_dir=str(tmp_path), checkpoint_every=0.0)
    real_save, saves = checkpoint.save, []

    def paused_save(*args, **kwargs):
        saves.append(1)
        time.sleep(0.1)  # the process paused (after the seconds of this checkpoint were read)
        real_save(*args, **kwargs)

    def stop(lam: float, n_critical: int) -> None:
        if n_critical >= 10:
            raise Interrupt

    def interrupted() -> None:
        with monkeypatch.context() as m:
            m.setattr(checkpoint, "save", paused_save)
            with pytest.raises(Interrupt):
                age_path(X, y, model="svm", sp="linear", lam_range=(0.1, 5.0), options=opts, progress=stop, **mp)

    interrupted()
    (saved,) = tmp_path.glob("agepath-*.pkl")
    state = pickle.loads(saved.read_bytes())
    n_pauses = len(saves) - 1  # the pauses before the last checkpoint's seconds were read
    assert n_pauses >= 2
    resumed = age_path(X, y, model="svm", sp="linear", lam_range=(0.1, 5.0), options=opts, **mp)
    wall, cpu = resumed.meta["time_before_resume_s"], resumed.meta["cpu_before_resume_s"]
    assert cpu == state["cpu"] and wall == state["elapsed"]
    assert np.isfinite(cpu) and cpu > 0.0
    assert wall - cpu >= 0.09 * n_pauses  # the pauses are wall-clock time, not CPU time
    # the same interruption, its checkpoint stripped of the CPU seconds (format of earlier code)
    interrupted()
    (saved,) = tmp_path.glob("agepath-*.pkl")
    state = pickle.loads(saved.read_bytes())
    del state["cpu"]
    saved.write_bytes(pickle.dumps(state))
    old = age_path(X, y, model="svm", sp="linear", lam_range=(0.1, 5.0), options=opts, **mp)
    assert old.meta["n_resumes"] == 1 and np.isnan(old.meta["cpu_before_resume_s"])
    np.testing.assert_array_equal(old.lambdas, resumed.lambdas)
