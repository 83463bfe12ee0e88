"""Progress reports from inside one long fit, and the runner's display of them.

A *progress hook* is any callable ``hook(event: str, **fields)``.  An estimator given one
(:meth:`SPLEstimator.set_progress <spl_bench.methods.base.SPLEstimator.set_progress>`)
calls it while it fits; without one nothing is called, so the numbers and the speed of a
fit do not depend on it.  The events and their fields:

``"gaga"``
    ``lam`` (the age reached), ``lam_min``, ``lam_max``, ``n_critical`` (critical points so
    far); at most a few times per second (the engine throttles by time) and once at the end.
``"acs"``
    ``done`` (ages finished), ``total`` (ages of the grid), ``lam`` (the age just finished);
    after every age.
``"dspl"``
    ``outer`` (outer iterations done), ``max_outer``, ``lam`` (the age of the iteration just
    done), ``lam_max``, ``admm_iters`` (its ADMM iterations); after every outer iteration.
``"mospl"``
    ``stage="evolution"`` with ``generation`` and ``n_gen`` after every generation of the
    evolutionary search; ``stage="refit"`` with ``done`` and ``total`` after every refit of a
    Pareto point.

:class:`DisplayHook` is the hook of ``spl-bench run``: on a terminal it writes the latest
report into the description of the progress bar; otherwise (output sent to a file) it prints
a log line, flushed at once, at most every ``interval`` seconds.

This module imports nothing from :mod:`spl_bench.methods` or :mod:`spl_bench.gaga`, so both
may use it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any, Protocol

#: ``hook(event, **fields)``
ProgressHook = Callable[..., None]


def no_progress(event: str, **fields: Any) -> None:
    """The default hook: does nothing."""
    return None


class _SupportsProgress(Protocol):
    def set_progress(self, hook: ProgressHook | None) -> Any: ...


def with_progress(make: Callable[[], Any], hook: ProgressHook | None) -> Callable[[], Any]:
    """An estimator factory whose estimators report to ``hook`` (``make`` itself when ``hook`` is None)."""
    if hook is None:
        return make

    def make_reporting() -> Any:
        est = make()
        est.set_progress(hook)
        return est

    return make_reporting


def _g(x: Any) -> str:
    try:
        return f"{float(x):.3g}"
    except (TypeError, ValueError):
        return str(x)


def describe(event: str, fields: dict[str, Any]) -> str:
    """One short line for a report (``λ 3.2 / 20, 184 critical points``)."""
    f = fields
    if event == "gaga" and "lam" in f:
        return f"λ {_g(f['lam'])} / {_g(f.get('lam_max', '?'))}, {f.get('n_critical', 0)} critical points"
    if event == "acs" and "done" in f:
        return f"age {f['done']} / {f.get('total', '?')} (λ {_g(f.get('lam'))})"
    if event == "dspl" and "outer" in f:
        lam = f"λ {_g(f.get('lam'))} / {_g(f.get('lam_max', '?'))}"
        return f"outer iteration {f['outer']} ({lam}, {f.get('admm_iters', '?')} ADMM iterations)"
    if event == "mospl" and f.get("stage") == "evolution":
        return f"generation {f.get('generation')} / {f.get('n_gen', '?')}"
    if event == "mospl" and f.get("stage") == "refit":
        return f"refit {f.get('done')} / {f.get('total', '?')} Pareto points"
    extra = ", ".join(f"{k} {_g(v) if isinstance(v, float) else v}" for k, v in f.items())
    return f"{event}: {extra}" if extra else event


class DisplayHook:
    """The runner's progress hook.

    Parameters
    ----------
    label : str
        What runs (``gaga · music · lasso/linear``); every line starts with it.
    bar, task : rich Progress and its task id, optional
        On a terminal the task's description becomes ``label · <report>``; the bar also gives
        the number of runs done for the log lines.
    terminal : bool
        True: update the bar; False: print log lines to ``stream``.
    stream : file, optional
        Where log lines go (default ``sys.stderr``); flushed after every line.
    interval : float
        Log lines: at most one per ``interval`` seconds (the first report prints at once).
    clock : callable
        Seconds, monotonic (injectable for tests).
    """

    def __init__(
        self,
        label: str,
        bar: Any = None,
        task: Any = None,
        *,
        terminal: bool,
        stream: IO[str] | None = None,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.bar = bar
        self.task = task
        self.terminal = terminal
        self.stream = stream
        self.interval = float(interval)
        self.clock = clock
        self.start = clock()
        self.last: float | None = None

    def _runs(self) -> str:
        if self.bar is None or self.task is None:
            return ""
        for t in getattr(self.bar, "tasks", []):
            if t.id == self.task and t.total:
                return f" · run {min(int(t.completed) + 1, int(t.total))}/{int(t.total)}"
        return ""

    def __call__(self, event: str, **fields: Any) -> None:
        text = describe(event, fields)
        if self.terminal:
            if self.bar is not None:
                self.bar.update(self.task, description=f"{self.label} · {text}")
            return
        now = self.clock()
        if self.last is not None and now - self.last < self.interval:
            return
        self.last = now
        secs = int(now - self.start)
        stamp = f"{secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"[{stamp}] {self.label}{self._runs()} · {text}", file=stream, flush=True)


def display_hook(label: str, bar: Any, task: Any, console: Any, interval: float = 10.0) -> DisplayHook:
    """The hook of ``spl-bench run`` for a rich ``console``: the bar on a terminal, log lines otherwise."""
    return DisplayHook(label, bar, task, terminal=bool(console.is_terminal), stream=console.file, interval=interval)
