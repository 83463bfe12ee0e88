"""Progress inside long fits (issue 21 item 4): the hooks of GAGA, ACS and MOSPL, and the runner's display."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

from spl_bench.gaga.core import tracker as engine
from spl_bench.methods.acs import ACS
from spl_bench.methods.gaga import GAGA
from spl_bench.methods.mospl import MOSPL
from spl_bench.progress import DisplayHook, describe, with_progress


def lasso_data(n: int = 40, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n)
    y[:4] += 6.0  # outliers: samples leave and enter as the age grows
    return X - X.mean(0), y - y.mean()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, event: str, **fields: object) -> None:
        self.calls.append((event, fields))


def test_gaga_reports_increasing_age_and_same_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "PROGRESS_INTERVAL", 0.0)  # every report passes the throttles
    X, y = lasso_data()
    kw = dict(model="lasso", model_params={"alpha": 0.05}, sp="linear", lam_min=0.5, lam_max=8.0, n_grid=20)
    plain = GAGA(**kw).fit(X, y)
    rec = Recorder()
    hooked = GAGA(**kw).set_progress(rec).fit(X, y)

    assert rec.calls and {e for e, _ in rec.calls} == {"gaga"}
    lams = [f["lam"] for _, f in rec.calls]
    crit = [f["n_critical"] for _, f in rec.calls]
    assert len(lams) > 3
    assert np.all(np.diff(lams) >= 0) and np.all(np.diff(crit) >= 0)
    assert lams[-1] == pytest.approx(8.0) and rec.calls[-1][1]["lam_max"] == 8.0
    assert crit[-1] == len(hooked.path_.events) > 0
    # the hook only reads: the fit is bit for bit the same
    assert np.array_equal(plain.path_.lambdas, hooked.path_.lambdas)
    assert np.array_equal(plain.path_.values, hooked.path_.values)
    assert np.array_equal(plain.predict_candidates(X), hooked.predict_candidates(X))
    assert plain.candidate_params_ == hooked.candidate_params_


def test_gaga_engine_reports_from_inside_long_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    from spl_bench.gaga import EngineOptions, age_path

    X, y = lasso_data()
    seen: list[tuple[float, int]] = []

    def note(lam: float, k: int) -> None:
        seen.append((lam, k))

    # the step-by-step route (the lasso's default, the compiled follower, reports once per call of
    # the follower, which takes up to COMPILED_CAP steps: test_gaga_engine.py checks it)
    ode = EngineOptions(method="auto")
    monkeypatch.setattr(engine, "PROGRESS_INTERVAL", 0.0)
    path = age_path(X, y, model="lasso", lam_range=(0.5, 8.0), alpha=0.05, progress=note, options=ode)
    n_segments = int(path.segment.max()) + 1
    assert len(seen) > n_segments  # solver steps report too, not only the ends of segments
    monkeypatch.setattr(engine, "PROGRESS_INTERVAL", 3600.0)
    seen.clear()
    age_path(X, y, model="lasso", lam_range=(0.5, 8.0), alpha=0.05, progress=note, options=ode)
    assert len(seen) <= n_segments + 1  # throttled: the ends of segments (and the first step) only


def test_gaga_engine_throttles_by_time() -> None:
    X, y = lasso_data()
    rec = Recorder()
    est = GAGA(model="lasso", model_params={"alpha": 0.05}, lam_min=0.5, lam_max=8.0, n_grid=0).set_progress(rec)
    t0 = time.monotonic()
    est.fit(X, y)
    seconds = time.monotonic() - t0
    # the estimator's reports: the first, one per PROGRESS_INTERVAL at most, and the final one
    assert 1 <= len(rec.calls) <= 2 + seconds / engine.PROGRESS_INTERVAL
    assert len(rec.calls) < len(est.path_.lambdas) / 2  # far fewer than the recorded points
    assert rec.calls[-1][1]["lam"] == pytest.approx(8.0)


def test_acs_reports_every_age() -> None:
    X, y = lasso_data()
    rec = Recorder()
    est = ACS(model="lasso", model_params={"alpha": 0.05}, lam_min=0.5, lam_max=4.0, lam_step=0.5)
    est.set_progress(rec).fit(X, y)
    grid = est.ages()
    assert [f["done"] for _, f in rec.calls] == list(range(1, len(grid) + 1))
    assert all(e == "acs" and f["total"] == len(grid) for e, f in rec.calls)
    assert [f["lam"] for _, f in rec.calls] == [float(g) for g in grid]
    plain = ACS(model="lasso", model_params={"alpha": 0.05}, lam_min=0.5, lam_max=4.0, lam_step=0.5).fit(X, y)
    assert np.array_equal(plain.predict_candidates(X), est.predict_candidates(X))


@pytest.mark.parametrize("backend", ["pymoo", "geatpy"])
def test_mospl_reports_generations_and_refits(backend: str) -> None:
    from spl_bench.methods._moo_backends import geatpy_available

    if backend == "geatpy" and not geatpy_available():
        pytest.skip("geatpy not installed")
    X, y = lasso_data(n=30)
    kw = dict(model="lasso", model_params={"alpha": 0.05}, pop_size=12, n_gen=6, backend=backend, seed=1)
    rec = Recorder()
    est = MOSPL(**kw).set_progress(rec).fit(X, y)
    gens = [f["generation"] for e, f in rec.calls if f["stage"] == "evolution"]
    refits = [f["done"] for e, f in rec.calls if f["stage"] == "refit"]
    assert gens == list(range(1, 7))
    assert all(f["n_gen"] == 6 for _, f in rec.calls if f["stage"] == "evolution")
    assert refits == list(range(1, len(est.candidate_params_) + 1))
    plain = MOSPL(**kw).fit(X, y)
    assert np.array_equal(plain.predict_candidates(X), est.predict_candidates(X))


def test_no_hook_is_the_default_and_clone_drops_it() -> None:
    from sklearn.base import clone

    est = ACS().set_progress(Recorder())
    assert "progress" not in est.get_params()
    assert getattr(clone(est), "_progress_hook", None) is None


class FlushCounter(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.getvalue()))
        super().flush()


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_log_lines_are_throttled_and_flushed() -> None:
    clock, out = FakeClock(), FlushCounter()
    hook = DisplayHook("acs · music · lasso/linear", terminal=False, stream=out, interval=10.0, clock=clock)
    for k in range(1, 41):  # one report a second for 40 s
        clock.t += 1.0
        hook("acs", done=k, total=40, lam=0.5 * k)
    lines = out.getvalue().splitlines()
    assert [ln.split(" · age ")[1].split(" ")[0] for ln in lines] == ["1", "11", "21", "31"]
    assert lines[0] == "[0:00:01] acs · music · lasso/linear · age 1 / 40 (λ 0.5)"
    assert lines[1].startswith("[0:00:11] ")
    # every line is flushed as soon as it is written
    assert out.flushed_at == [sum(len(ln) + 1 for ln in lines[: i + 1]) for i in range(len(lines))]


def test_terminal_updates_the_bar_description() -> None:
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(file=io.StringIO(), force_terminal=True), auto_refresh=False)
    task = bar.add_task("gaga · music · lasso/linear", total=3, completed=1)
    hook = DisplayHook("gaga · music · lasso/linear", bar, task, terminal=True)
    hook("gaga", lam=3.2, lam_min=0.1, lam_max=20.0, n_critical=184)
    assert bar.tasks[0].description == "gaga · music · lasso/linear · λ 3.2 / 20, 184 critical points"
    # log lines give the run number from the bar
    out = io.StringIO()
    DisplayHook("gaga", bar, task, terminal=False, stream=out)("mospl", stage="evolution", generation=7, n_gen=800)
    assert out.getvalue().endswith("gaga · run 2/3 · generation 7 / 800\n")


def test_describe_and_factory() -> None:
    assert describe("mospl", {"stage": "refit", "done": 3, "total": 9}) == "refit 3 / 9 Pareto points"
    assert describe("other", {"x": 0.123456}) == "other: x 0.123"
    rec = Recorder()
    make = with_progress(lambda: ACS(lam_min=0.5, lam_max=1.0), rec)
    assert make()._progress_hook is rec
    plain = lambda: ACS()  # noqa: E731
    assert with_progress(plain, None) is plain
