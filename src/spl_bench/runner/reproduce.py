"""Reproduce the papers' tables: every cell (row x method) of a table, seed by seed, resumable.

A *cell* is one point of a table's Hydra sweep (``configs/experiment/<table>.yaml``,
``hydra.sweeper.params``): the same config that ``spl-bench run experiment=<table> <overrides>``
composes.  Its per-seed rows are committed under ``results/rows/<experiment>/`` in one small
CSV per cell and configuration hash (``<cell>__<hash>.csv``), so a sweep continues from the
committed rows on any machine: a seed whose row is there is not run again.  Rows of another
hash (the cell's config changed) are never pooled with the current ones; ``plan`` lists them
as stale.  ``index.csv`` beside them maps each cell to its current hash and is what the
report reads.  Each row file ends with a check trailer (row count and SHA-256,
:mod:`spl_bench.rowfiles`); a file that fails it stops the sweep with one line naming it,
never counted as done.

Parallel runs use joblib (processes on this machine) or submitit (a SLURM cluster, or its
local executor); the parent process is the only writer of the row files.

This module runs the seeds (:func:`run_tables`); the cells and their configs are
:mod:`spl_bench.runner.cells`, the row files and the index :mod:`spl_bench.runner.committed`,
the plan and its ETA :mod:`spl_bench.runner.plan` (re-timings: :mod:`spl_bench.runner.retiming`),
and the tables, variants and extra sweeps :mod:`spl_bench.table_registry`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spl_bench.errors import DataError
from spl_bench.paths import repo_root
from spl_bench.runner.cells import Cell, companion_cells, compose_cell, method_of
from spl_bench.runner.committed import record_failure, refresh_index, store_of
from spl_bench.runner.plan import CellState, cell_states, same_config_leaders, seconds_per_run, target_runs

#: seconds between two progress lines of one run in a sweep's log (a run of hours shows where it is)
RUN_PROGRESS_INTERVAL = 300.0


def run_seed(cell: Cell, seed: int, extra: tuple[str, ...] = (), progress: bool = False) -> list[dict[str, Any]]:
    """Run seed ``seed`` of ``cell`` (one protocol run, :func:`~spl_bench.runner.cell_run.run_cell`) and
    return its tidy rows.

    ``progress``: the estimator's progress reports (GAGA's age, ACS's grid, MOSPL's generations)
    go to standard output as a line every ``RUN_PROGRESS_INTERVAL`` seconds.
    """
    return run_seeds(cell, seed, extra, progress)[cell]


def run_seeds(cell: Cell, seed: int, extra: tuple[str, ...] = (), progress: bool = False,
              companions: tuple[Cell, ...] = ()) -> dict[Cell, list[dict[str, Any]]]:
    """Seed ``seed`` of ``cell`` and of ``companions`` (:func:`~spl_bench.runner.cells.companion_cells`)
    from one fit (:func:`~spl_bench.runner.cell_run.run_cells`): the tidy rows of each cell."""
    from threadpoolctl import threadpool_limits

    from spl_bench.progress import DisplayHook
    from spl_bench.runner.cell_run import prepare_cell, run_cells

    order = (cell, *companions)
    prepared = [prepare_cell(compose_cell(c, extra)) for c in order]
    hook = DisplayHook(f"{cell.label} seed {seed}", terminal=False, stream=sys.stdout,
                       interval=RUN_PROGRESS_INTERVAL) if progress else None
    with threadpool_limits(limits=1):  # one BLAS thread per run: parallelism is across runs
        try:
            rows = run_cells(prepared, seed, hook)
        except FloatingPointError as exc:
            raise FloatingPointError(f"{cell.label}: {exc}") from None
    return dict(zip(order, rows, strict=True))


def pending_tasks(states: list[CellState], runs: int | None, max_cell_seconds: float | None,
                  companions: dict[Cell, list[CellState]] | None = None) -> list[tuple[Cell, int]]:
    """(cell, seed) still to run, seed-major (every cell gets seed k before any gets k + 1), each cell
    to ``runs`` seeds (``None``: its paper's run count, :func:`~spl_bench.runner.plan.target_runs`).

    A seed is still to run when the cell or one of its ``companions`` (cells written from the same
    fit, :func:`~spl_bench.runner.cells.companion_cells`) lacks it.
    A cell whose estimated seconds per run (:func:`~spl_bench.runner.plan.seconds_per_run`, the plan's
    estimate: re-timed by today's code, or its committed rows' scaled by its family's re-timing)
    exceed ``max_cell_seconds`` gets no new seed (it is reported with the runs it has and the reason).
    """
    per = [p for p, _, _ in seconds_per_run(states)]
    companions = companions or {}
    # a cell of ``states`` that is another's companion (the same configuration) is run with it
    with_other = {c.cell for cs in companions.values() for c in cs}
    tasks = []
    targets = [target_runs(st.cell, runs) for st in states]
    for seed in range(max(targets, default=0)):
        for st, sec, n in zip(states, per, targets, strict=True):
            if st.cell in with_other or seed >= n:
                continue
            if seed in st.done and all(seed in c.done for c in companions.get(st.cell, [])):
                continue
            if max_cell_seconds is not None and sec is not None and sec > max_cell_seconds:
                continue
            tasks.append((st.cell, seed))
    return tasks


def run_only_overrides(cell: Cell, checkpoint_dir: Path | None, blas_threads: int = 1) -> tuple[str, ...]:
    """Overrides that change how a run is computed, not its numbers (nor the config hash): GAGA
    paths save checkpoints under ``checkpoint_dir`` and a rerun resumes from them, and use
    ``blas_threads`` BLAS threads."""
    if method_of(cell) != "gaga":
        return ()
    out = () if checkpoint_dir is None else (f"method.checkpoint_dir={Path(checkpoint_dir).resolve()}",)
    return out + ((f"method.blas_threads={int(blas_threads)}",) if blas_threads != 1 else ())


def _execute(
    tasks: list[tuple[Cell, int, tuple[Cell, ...]]], jobs: int, executor: str, slurm: dict[str, Any] | None,
    checkpoint_dir: Path | None = None, blas_threads: int = 1, skip: Callable[[Cell], bool] | None = None,
) -> Iterator[tuple[Cell, int, dict[Cell, list[dict[str, Any]]] | BaseException]]:
    """Run the tasks (cell, seed, companions written from the same fit); yield each (cell, seed, rows by
    cell or the exception) as it finishes.

    ``skip``: run by run (one job, in this process), a task whose cell it accepts is passed over
    (the parallel executors submit every task up front)."""
    extras = [run_only_overrides(c, checkpoint_dir, blas_threads) for c, _, _ in tasks]

    if executor == "submitit":
        import submitit

        folder = repo_root() / "runs" / "submitit"
        ex = submitit.AutoExecutor(folder=str(folder), cluster=None if slurm else "local")
        ex.update_parameters(timeout_min=int((slurm or {}).get("timeout_min", 240)), cpus_per_task=1,
                             **{k: v for k, v in (slurm or {}).items() if k != "timeout_min"})  # fmt: skip
        jobs_ = ex.map_array(_guarded_task, [c for c, _, _ in tasks], [s for _, s, _ in tasks], extras,
                             [t for _, _, t in tasks])
        pending = list(jobs_)
        while pending:
            for job in [j for j in pending if j.done()]:
                pending.remove(job)
                yield job.result()
            time.sleep(2)
        return
    if jobs <= 1:
        for (cell, seed, twins), extra in zip(tasks, extras, strict=True):
            if skip is None or not skip(cell):
                yield _guarded_task(cell, seed, extra, twins)
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)
    yield from par(delayed(_guarded_task)(cell, seed, extra, twins)
                   for (cell, seed, twins), extra in zip(tasks, extras, strict=True))


def _guarded_task(cell: Cell, seed: int, extra: tuple[str, ...] = (), companions: tuple[Cell, ...] = ()
                  ) -> tuple[Cell, int, dict[Cell, list[dict[str, Any]]] | BaseException]:
    try:
        return cell, seed, run_seeds(cell, seed, extra, progress=True, companions=companions)
    except Exception as exc:  # reported by the parent, the sweep goes on
        return cell, seed, exc


def run_tables(
    states: list[CellState],
    runs: int | None,
    jobs: int = 1,
    executor: str = "joblib",
    max_cell_seconds: float | None = None,
    slurm: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    root: Path | None = None,
    checkpoint_dir: Path | None = None,
    blas_threads: int = 1,
    shared_fits: bool = True,
) -> dict[str, str]:
    """Run every missing seed (to ``runs`` seeds a cell; ``None``: its paper's run count,
    :func:`~spl_bench.runner.plan.target_runs`); write each seed's rows as it finishes. Returns
    failures by cell.

    ``root``: the rows folder (default ``results/rows``; the states' files must lie below it).
    ``checkpoint_dir``: GAGA runs save their path's state there and resume from it
    (:func:`run_only_overrides`); ``blas_threads``: their BLAS threads.
    ``shared_fits``: a cell's companions (:func:`~spl_bench.runner.cells.companion_cells`: its
    equal-candidates cell) get their missing seeds from the cell's fits; a seed the cell has and a
    companion lacks is fitted again for the companion only.
    A cell whose data cannot be loaded (:class:`~spl_bench.errors.DataError`: no local copy and no
    download) fails once; with one job its other seeds are passed over and counted at the end.
    Cells under :attr:`~spl_bench.runner.cells.Cell.current_rule` are not entered in the folders'
    index: the tables go on reading their table's rule until the table leaves the step rule.
    """
    companions = companion_states(states, root) if shared_fits else {}
    tasks = pending_tasks(states, runs, max_cell_seconds, companions)
    by_cell = {st.cell: st for st in states}
    for twins in companions.values():
        by_cell.update({c.cell: c for c in twins})
    refresh_index(list(by_cell.values()), root)
    failures: dict[str, str] = {}
    no_data: set[Cell] = set()
    t0 = time.perf_counter()
    log(f"{len(tasks)} runs to do in {len({c for c, _ in tasks})} cells, {jobs} job(s)")
    planned = [(c, s, tuple(t.cell for t in companions.get(c, []) if s not in t.done)) for c, s in tasks]
    results = _execute(planned, jobs, executor, slurm, checkpoint_dir, blas_threads, skip=no_data.__contains__)
    i = 0
    for i, (cell, seed, result) in enumerate(results, start=1):
        elapsed = time.perf_counter() - t0
        if isinstance(result, BaseException):
            failures[cell.label] = f"{type(result).__name__}: {result}".splitlines()[0][:300]
            log(f"[{i}/{len(tasks)}] {cell.label} seed {seed}: FAILED {failures[cell.label]}")
            record_failure(cell, seed, failures[cell.label], root)
            if isinstance(result, DataError):
                no_data.add(cell)
            continue
        for done_cell, rows in result.items():
            st = by_cell[done_cell]
            if seed in st.done:  # fitted again for a companion: the cell's committed rows stay
                continue
            store_of(st, root).add(rows)
            st.done.add(seed)
        main = next(r for r in result[cell] if not str(r["metric"]).startswith("selection_"))
        also = "".join(f"; also {c.rows_name}" for c in result if c != cell)
        log(f"[{i}/{len(tasks)}] {cell.label} seed {seed}: {main['metric']} {main['value']:.4f} "
            f"({main['time_s']:.1f} s fit; {elapsed / 60:.1f} min elapsed{also})")  # fmt: skip
    if i < len(tasks):
        log(f"{len(tasks) - i} runs passed over: {len(no_data)} cell(s) whose data could not be loaded "
            "(the first failure of each is above)")
    return failures


def companion_states(states: list[CellState], root: Path | None = None, same_config: bool = True
                     ) -> dict[Cell, list[CellState]]:
    """Each cell's companions (:func:`~spl_bench.runner.cells.companion_cells`) with their seeds done;
    a companion that is itself one of ``states`` is run as a cell of its own.

    ``same_config``: also, a cell of ``states`` that repeats the configuration of another (the same
    hash in another table, :func:`~spl_bench.runner.plan.same_config_leaders`) is a companion of the
    first such cell, with its own companions: one fit of a seed writes every table's rows (they
    differ in the table's name only), and :func:`pending_tasks` gives it no task of its own."""
    own = {st.cell for st in states}
    twins = {st.cell: [c for c in companion_cells(st.cell) if c not in own] for st in states}
    known = {st.cell: st for st in cell_states(sorted({c for cs in twins.values() for c in cs}, key=str), root)}
    out = {cell: [known[c] for c in cs] for cell, cs in twins.items() if cs}
    if same_config:
        by_cell = {st.cell: st for st in states}
        for follower, lead in same_config_leaders(states).items():
            out.setdefault(lead, []).extend([by_cell[follower], *out.pop(follower, [])])
    return out


def refresh_indexes(states: list[CellState], root: Path | None = None) -> None:
    """Point the index entries of ``states`` and of their companions (:func:`companion_states`) at their
    current hashes: a cell's equal-candidates rows come from its fits and follow its candidate rule,
    so a table leaving the step rule moves both (``reproduce_tables.py --report-only``)."""
    more = [t for ts in companion_states(states, root).values() for t in ts]
    refresh_index(states + [t for t in more if t.cell not in {st.cell for st in states}], root)


def log_line(text: str) -> None:
    """Print a progress line at once, also when output goes to a file."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def default_jobs() -> int:
    """One job per CPU of this machine."""
    return max(1, (os.cpu_count() or 1))
