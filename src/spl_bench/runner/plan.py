"""The plan of a sweep: each cell's committed seeds, stale files and estimated seconds per run, the ETA.

``scripts/reproduce_tables.py --plan`` prints :func:`plan_lines`; the sweep's per-run budget
(:func:`spl_bench.runner.reproduce.pending_tasks`) reads the same estimates
(:func:`seconds_per_run`), so a cell the plan prices under the budget is run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from spl_bench.data import has_local_copy
from spl_bench.errors import SplBenchError
from spl_bench.rowfiles import config_hash
from spl_bench.rowstore import info_dict, read_cell
from spl_bench.runner import commits, run_config
from spl_bench.runner.cells import Cell, compose_cell, method_of
from spl_bench.runner.retiming import (
    current_retimings,
    recorded_seconds,
    retimed_at,
    retimed_rows,
    retimed_summary,
    todays_seconds,
)
from spl_bench.table_registry import PAPER_RUNS, TABLES


@dataclass
class CellState:
    """What the plan knows of one cell: its hash and row file, the seeds done, the seconds they took."""

    cell: Cell
    config_hash: str
    file: Path
    done: set[int]
    stale: list[Path]
    sec_per_run: float | None
    #: seconds of one run of this cell with today's code: its seeds re-timed (``results/bench/retimed.csv``),
    #: the other seeds of their code version scaled by the re-timings, and the seeds made since at their
    #: own seconds (:func:`~spl_bench.runner.retiming.todays_seconds`)
    sec_retimed: float | None = None
    #: those seconds over the re-timed seeds' committed seconds (:func:`~spl_bench.runner.retiming.retimed_ratios`)
    retimed_ratio: float | None = None
    #: the cell's dataset is read without a download (:func:`~spl_bench.data.has_local_copy`)
    data_here: bool = True
    #: per committed seed, its seconds and the commit time of the code that made it (``None``: unknown)
    seed_times: tuple[tuple[float, int | None], ...] = ()
    #: commit time of the code that re-timed this cell (``None``: not re-timed, or unknown)
    retimed_since: int | None = None
    #: the hashed part of the cell's config (written beside its row file, :mod:`spl_bench.rowstore`)
    identity: dict[str, Any] | None = None
    #: committed seeds whose seconds measure no CPU (resumed from a checkpoint that kept none, :func:`seed_seconds`)
    n_unmeasured: int = 0
    #: the seeds of :attr:`seed_times`, in its order
    seed_ids: tuple[int, ...] = ()
    #: per re-timed seed whose committed row is still the one re-timed: its re-timed CPU seconds (median)
    seed_retimed: tuple[tuple[int, float], ...] = ()
    #: a rerun under the current rule with seeds: the state of its cell on the table's rule (the same
    #: configuration but the candidate rule, the same seeds' paths), for :func:`seconds_per_run`'s pairing
    ruled: CellState | None = None


def seed_seconds(seeds: pd.DataFrame) -> pd.Series:
    """Seconds of each seed's fit (one row per seed): its CPU seconds where the row records them
    (``cpu_s``, since 2026-11-29), else its wall-clock ``time_s``, which counts whatever else the
    machine was doing and any pause of the sweep.

    NaN (no measure) for a fit resumed from a checkpoint that did not record the earlier processes'
    CPU seconds (``info``: ``n_resumes`` > 0 without a finite ``cpu_before_resume_s``): its seconds add
    the earlier part's wall clock, pauses included (Table 11, C 0.1, seed 1: 2,741 "CPU-s" of which
    a 44-minute first part beside other work and a paused sweep; the same path takes 132 CPU-s)."""
    out = recorded_seconds(seeds)
    if "info" in seeds:
        return out.where(~seeds["info"].map(_resumed_without_cpu).astype(bool))
    return out


def _resumed_without_cpu(info: object) -> bool:
    i = info_dict(info)
    if not i.get("n_resumes"):
        return False
    cpu = i.get("cpu_before_resume_s")
    return not (isinstance(cpu, (int, float)) and np.isfinite(cpu))


def cell_states(cells: list[Cell], root: Path | None = None, retimed_path: Path | None = None) -> list[CellState]:
    """Hash, committed seeds, stale files and measured seconds per run of every cell (committed, and
    re-timed by today's code where :data:`~spl_bench.runner.retiming.RETIMED_FILE` has the cell)."""
    # a rows root of its own (tests, other worktrees) has no re-timings unless given them
    use = retimed_path is not None or root is None
    again = dict(retimed_rows(retimed_path)) if use else {}
    states = []
    for cell in cells:
        cfg = compose_cell(cell)
        ident = run_config.identity(cfg)
        h = config_hash(ident)
        path = cell.rows_file(h, root)
        frame = read_cell(path)
        done = set(int(s) for s in frame["seed"].unique()) if len(frame) else set()
        seeds = frame.drop_duplicates("seed").set_index("seed") if len(frame) else frame
        times = seed_seconds(seeds).dropna() if len(frame) else pd.Series(dtype=float)
        recorded = recorded_seconds(seeds) if len(frame) else times
        seeds = seeds.loc[times.index] if len(frame) else seeds  # the seeds with a measure of their seconds
        stale = sorted(p for p in path.parent.glob(f"{cell.cell_id}__*.csv") if p != path)
        # a re-timing is today's CPU of its seed, whatever the committed row's seconds measured
        rows = current_retimings(again.get((cell.rows_name, cell.cell_id)), recorded)
        since = None if rows is None or "code_version" not in rows else retimed_at(rows)
        sec, ratio = (None, None) if rows is None else retimed_summary(rows)
        if rows is not None:
            sec = todays_seconds(rows, seeds, since)
        versions = seeds["code_version"] if len(frame) and "code_version" in seeds else pd.Series(dtype=object)
        seed_times = tuple((float(t), commits.made_at(versions.get(s))) for s, t in times.items())
        per_seed = () if rows is None else tuple((int(s), float(c)) for s, c in rows.groupby("seed")["cpu_s"].median()
                                                 .items())
        states.append(CellState(cell, h, path, done, stale, float(times.mean()) if len(times) else None, sec, ratio,
                                has_local_copy(OmegaConf.to_container(cfg.data, resolve=True)), seed_times, since,
                                ident, len(recorded) - len(times), tuple(int(s) for s in times.index), per_seed))
    # a rerun under the current rule follows the same paths as its table-rule cell: with no seed yet,
    # that cell's seconds are its estimate; with some, they are paired with that cell's same seeds
    for i, st in enumerate(states):
        if st.cell.current_rule:
            (ruled,) = cell_states([replace(st.cell, current_rule=False)], root, retimed_path)
            if st.done:
                states[i] = replace(st, ruled=ruled)
            else:
                states[i] = replace(st, sec_per_run=ruled.sec_per_run, sec_retimed=ruled.sec_retimed,
                                    retimed_ratio=ruled.retimed_ratio, seed_times=ruled.seed_times,
                                    retimed_since=ruled.retimed_since, seed_ids=ruled.seed_ids,
                                    seed_retimed=ruled.seed_retimed)
    return states


def made_before(states: list[CellState], commit: str) -> tuple[list[CellState], dict[Cell, list[int]]]:
    """The states with the seeds whose rows were made by code without ``commit`` taken out of
    ``done`` (so that a sweep runs them again and its rows replace theirs: ``CellStore.add``), and
    those seeds per cell.

    A fix that leaves the configuration hash as it was (a new default that changes numbers only
    where the old code went wrong, e.g. ACS's degenerate ages, aeaaaff) leaves rows that the cell's
    hash still counts as done; this is how a sweep refreshes them.  A row whose ``code_version``
    names no commit of the checkout's history cannot be shown to include the fix and is run again.
    """
    full = commits.resolve(commit)
    if full is None:
        raise SplBenchError(f"--refresh-made-before: {commit!r} is no commit of this checkout's history")
    out, seeds = [], {}
    for st in states:
        frame = read_cell(st.file) if st.done else pd.DataFrame()
        if not len(frame) or "code_version" not in frame:
            old = sorted(st.done)
        else:
            per = frame.drop_duplicates("seed").set_index("seed")["code_version"]
            old = sorted(int(s) for s, v in per.items() if commits.contains(v, full) is not True)
        if old:
            seeds[st.cell] = old
            st = replace(st, done=st.done - set(old))
        out.append(st)
    return out, seeds


def _fmt_seconds(sec: float) -> str:
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def _family_ratios(states: list[CellState]) -> dict[tuple[str, str], float]:
    """Median of (re-timed / committed seconds) over the re-timed cells of each (rows folder, method):
    per cell the ratio on the re-timed seeds themselves (:attr:`CellState.retimed_ratio`), else
    the re-timing over the cell's committed mean."""
    ratios: dict[tuple[str, str], list[float]] = {}
    for st in states:
        r = st.retimed_ratio
        if r is None and st.sec_retimed is not None and st.sec_per_run:
            r = st.sec_retimed / st.sec_per_run
        if r is not None:
            ratios.setdefault((st.cell.rows_name, method_of(st.cell)), []).append(r)
    return {k: float(np.median(v)) for k, v in ratios.items()}


def seconds_per_run(states: list[CellState], ratio: dict[tuple[str, str], float] | None = None
                    ) -> list[tuple[float | None, str, float | None]]:
    """Each cell's estimated CPU seconds per run, its mark, and the committed seconds it scales.

    A cell's seconds with today's code (``r``: its re-timed seeds, the other seeds of their code
    version scaled by them and the seeds run since at their own seconds,
    :func:`~spl_bench.runner.retiming.todays_seconds`) where it has been re-timed; else its committed rows' mean
    scaled by the median re-timed / committed ratio of its (table, method) family (``≈``) where
    the family has re-timed cells, the seeds made by code no older than the family's re-timing
    counted at their own seconds (they are today's already); else the committed mean.  A rerun under
    the current rule with fewer seeds than its paper's run count is priced by pairing (``p``,
    :func:`_paired`).  A cell never run (``~``) takes the largest of those estimates among its
    method's cells of the same rows folder (same table and variant: the same model, SP-regularizer
    and protocol), else among its method's cells anywhere.  It takes an estimate, not a committed
    mean, so that it does not move when the folder's cells go from committed rows to re-timings or
    to rows of today's code.  The plan's ETA and the sweep's per-run budget both read this, so a
    cell the plan prices under the budget is run.  ``ratio``: the families' ratios if the caller
    has them already (:func:`_family_ratios` of ``states``).
    """
    ratio = _family_ratios(states) if ratio is None else ratio
    since = _family_retimed_at(states)
    out = [_estimate(st, ratio, since) for st in states]
    paired = [i for i, st in enumerate(states)
              if st.ruled is not None and len(st.done) < target_runs(st.cell, None)]
    if paired:
        ruled = [states[i].ruled for i in paired]
        ruled_est = seconds_per_run(ruled)  # type: ignore[arg-type]
        ruled_ratio, ruled_since = _family_ratios(ruled), _family_retimed_at(ruled)  # type: ignore[arg-type]
        for i, (per, _, _) in zip(paired, ruled_est, strict=True):
            got = _paired(states[i], per, ruled_ratio, ruled_since)
            if got is not None:
                out[i] = (got, "p", out[i][2])
    return _guess_never_run(states, out)


def _estimate(st: CellState, ratio: dict[tuple[str, str], float], since: dict[tuple[str, str], int]
              ) -> tuple[float | None, str, float | None]:
    """One cell's estimate of :func:`seconds_per_run` from its own seeds (``r``, ``≈`` or the committed mean)."""
    committed, mark = st.sec_per_run, ""
    per = committed
    key = (st.cell.rows_name, method_of(st.cell))
    family = ratio.get(key)
    if st.sec_retimed is not None:
        per, mark = st.sec_retimed, "r"
    elif per is not None and family is not None:
        per, mark = per * family, "≈"
        if st.seed_times and key in since:
            # seeds made by code no older than the family's re-timing already are today's
            # seconds: only the older ones are scaled
            per = float(np.mean([t if made is not None and made >= since[key] else t * family
                                 for t, made in st.seed_times]))
    return per, mark, committed


def _todays_seed_seconds(st: CellState, ratio: dict[tuple[str, str], float],
                         since: dict[tuple[str, str], int]) -> dict[int, float]:
    """The seeds of a cell that its estimate (:func:`_estimate`) rests on, each at its seconds on
    today's scale: for a re-timed cell its re-timed seeds (at their re-timings) and the seeds made by
    code no older than the re-timing (at their own seconds), as
    :func:`~spl_bench.runner.retiming.todays_seconds`; else every measured seed, scaled by its
    family's ratio where :func:`_estimate` scales it."""
    if st.sec_retimed is not None:
        out = {s: t for s, (t, made) in zip(st.seed_ids, st.seed_times, strict=True)
               if st.retimed_since is not None and made is not None and made >= st.retimed_since}
        out.update(dict(st.seed_retimed))
        return out
    key = (st.cell.rows_name, method_of(st.cell))
    family = ratio.get(key)
    if family is None:
        return {s: t for s, (t, _) in zip(st.seed_ids, st.seed_times, strict=True)}
    return {s: t if key in since and made is not None and made >= since[key] else t * family
            for s, (t, made) in zip(st.seed_ids, st.seed_times, strict=True)}


def _paired(st: CellState, ruled_per: float | None, ratio: dict[tuple[str, str], float],
            since: dict[tuple[str, str], int]) -> float | None:
    """The seconds per run of a rerun under the current rule (``st``, some seeds done) paired with its
    cell on the table's rule (:attr:`CellState.ruled`): that cell's estimate ``ruled_per`` times the
    ratio of the two rules' seconds summed over the seeds both have measured (a ratio estimator,
    sum_s t_new(s) / sum_s t_old(s)).  The rules follow the same paths on a seed and differ in the
    candidates kept, so a seed's cost under the two rules moves together: Table 6 hiva's seed 0, the
    slowest seed of its cell, took 2,633 CPU-s under the current rule and 2,660 re-timed under the
    step rule, whose 20 seeds average 1,711 s; its mean alone priced the rerun's 19 seeds left at
    2,633 s each.  ``None`` (the rerun's own seeds decide) without a shared measured seed or an
    estimate of the ruled cell."""
    if st.ruled is None or ruled_per is None:
        return None
    new = dict(zip(st.seed_ids, (t for t, _ in st.seed_times), strict=True))
    old = _todays_seed_seconds(st.ruled, ratio, since)
    both = [s for s in new if s in old]
    den = sum(old[s] for s in both)
    if not both or den <= 0:
        return None
    return ruled_per * sum(new[s] for s in both) / den


def _guess_never_run(states: list[CellState], est: list[tuple[float | None, str, float | None]]
                     ) -> list[tuple[float | None, str, float | None]]:
    """``est`` with each cell that has no estimate given the slowest estimate of its method in its
    rows folder, else of its method anywhere, marked ``~`` (:func:`seconds_per_run`); its committed
    seconds (the plan's "from the committed rows' seconds alone") are guessed the same way from the
    committed means."""
    def slowest(values: list[float | None]) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
        folder: dict[tuple[str, str], float] = {}
        method: dict[str, float] = {}
        for st, x in zip(states, values, strict=True):
            if x is not None:
                key = (st.cell.rows_name, method_of(st.cell))
                folder[key] = max(x, folder.get(key, x))
                method[key[1]] = max(x, method.get(key[1], x))
        return folder, method

    def guess(st: CellState, table: tuple[dict[tuple[str, str], float], dict[str, float]]) -> float | None:
        folder, method = table
        return folder.get((st.cell.rows_name, method_of(st.cell)), method.get(method_of(st.cell)))

    per_max = slowest([e[0] for e in est])
    committed_max = slowest([e[2] for e in est])
    out = []
    for st, e in zip(states, est, strict=True):
        if e[0] is None and (per := guess(st, per_max)) is not None:
            e = (per, "~", guess(st, committed_max))
        out.append(e)
    return out


def _family_retimed_at(states: list[CellState]) -> dict[tuple[str, str], int]:
    """Per (rows folder, method): the commit time of the newest code that re-timed one of its cells,
    where every re-timed cell of the family knows it."""
    at: dict[tuple[str, str], list[int | None]] = {}
    for st in states:
        if st.sec_retimed is not None:
            at.setdefault((st.cell.rows_name, method_of(st.cell)), []).append(st.retimed_since)
    return {k: max(t for t in v if t is not None) for k, v in at.items() if all(t is not None for t in v)}


def same_config_leaders(states: list[CellState]) -> dict[Cell, Cell]:
    """Cells that repeat another cell's configuration in another table, each mapped to the first cell
    of ``states`` with its configuration hash (Table 8's pendigits cells are Table 16's at the same
    noise rates, Table 11's C = 1.0 is Table 15's noise rate 0.3).  A seed of such a configuration is
    one computation: the sweep fits it once and writes every table's rows from that fit
    (:func:`~spl_bench.runner.reproduce.companion_states`), and the plan counts it once."""
    first: dict[str, Cell] = {}
    out: dict[Cell, Cell] = {}
    for st in states:
        lead = first.setdefault(st.config_hash, st.cell)
        if lead != st.cell:
            out[st.cell] = lead
    return out


def target_runs(cell: Cell, runs: int | None) -> int:
    """The seeds a sweep brings ``cell`` to: ``runs``, or with ``None`` its paper's run count
    (:data:`~spl_bench.table_registry.PAPER_RUNS`: GAGA 20; Outlier-Path 10, "the test errors on 10
    different random data splits", Section 5 of that paper), seeds ``0 .. n - 1``."""
    return PAPER_RUNS[TABLES[cell.table][1]] if runs is None else int(runs)


def runs_left(states: list[CellState], runs: int | None, shared: bool = True) -> dict[Cell, int]:
    """Fits left per cell to bring every cell to ``runs`` seeds (``None``: its paper's run count,
    :func:`target_runs`).  With ``shared``, a cell that repeats another's configuration
    (:func:`same_config_leaders`) has none of its own: the first cell of its configuration counts
    every seed that one of them lacks (each is one fit, written to all)."""
    missing = {st.cell: {s for s in range(target_runs(st.cell, runs)) if s not in st.done} for st in states}
    if not shared:
        return {cell: len(m) for cell, m in missing.items()}
    leaders = same_config_leaders(states)
    union = {cell: set(m) for cell, m in missing.items() if cell not in leaders}
    for follower, lead in leaders.items():
        union[lead] |= missing[follower]
    return {cell: len(union.get(cell, ())) for cell in missing}


def from_scratch(states: list[CellState], estimates: list[tuple[float | None, str, float | None]] | None = None
                 ) -> dict[str, float]:
    """CPU seconds of the whole reproduction started again, by method: each offline cell (its data in the
    data directory) of the tables themselves (no protocol variant) at its paper's run count
    (:data:`~spl_bench.table_registry.PAPER_RUNS`) times its estimated seconds per run
    (:func:`seconds_per_run`; a cell never timed counts 0 and is named in the plan's total).  A
    configuration in several tables (:func:`same_config_leaders`) counts once."""
    estimates = seconds_per_run(states) if estimates is None else estimates
    once: dict[str, tuple[str, float]] = {}  # per configuration: (method, the largest of runs x seconds)
    for st, (per, _, _) in zip(states, estimates, strict=True):
        if st.cell.variant or not st.data_here or per is None:
            continue
        sec = max(target_runs(st.cell, None) * per, once.get(st.config_hash, ("", 0.0))[1])
        once[st.config_hash] = (method_of(st.cell), sec)
    out: dict[str, float] = {}
    for method, sec in once.values():
        out[method] = out.get(method, 0.0) + sec
    return out


def plan_lines(states: list[CellState], runs: int | None, jobs: int = 1) -> list[str]:
    """One line per cell (runs done / left, seconds per run, ETA) and a total; ``runs``: the seeds
    each cell is brought to (``None``: its paper's run count, :func:`target_runs`).

    Seconds per run: :func:`seconds_per_run` (its marks ``r``, ``≈``, ``~``).  The total is given
    both ways, and the part of it in cells whose dataset is not in the data directory
    (``download``: OpenML on their first run).
    """
    ratio = _family_ratios(states)
    estimates = seconds_per_run(states, ratio)
    lines, total, total_committed, unknown = [], 0.0, 0.0, 0
    away = {"runs": 0, "cells": 0, "sec": 0.0}  # cells whose data must be downloaded first
    fits = runs_left(states, runs)
    leaders = same_config_leaders(states)
    for st, (per, mark, committed) in zip(states, estimates, strict=True):
        left = fits[st.cell]
        eta = "?" if per is None else _fmt_seconds(per * left)
        if left and per is None:
            unknown += 1
        total += (per or 0.0) * left
        total_committed += (committed or 0.0) * left
        if left and not st.data_here:
            away["runs"] += left
            away["cells"] += 1
            away["sec"] += (per or 0.0) * left
        # beside a rerun under the current rule: the rows its table reads on the old rule
        stale = f"  {'beside' if st.cell.current_rule else 'stale'}: {len(st.stale)} file(s)" if st.stale else ""
        where = "" if st.data_here else "  download"
        per_s = "?" if per is None else f"{mark}{per:.1f}"
        same = f"  fitted with {leaders[st.cell].label}" if st.cell in leaders else ""
        n = target_runs(st.cell, runs)
        lines.append(f"{st.cell.label:<80} {len(st.done):>3}/{n} done  {per_s:>8} s/run  ETA {eta}{stale}{where}"
                     f"{same}")
    n_left = sum(fits.values())
    lines.append(
        f"total: {n_left} runs left in {len(states)} cells, "
        f"ETA {_fmt_seconds(total / max(1, jobs))} with {jobs} job(s)"
        + (f" (+ {unknown} cells never timed)" if unknown else "")
    )
    if away["cells"]:
        lines.append(f"       (of which {away['runs']} runs in {away['cells']} cells whose data is not in the data "
                     f"directory, downloaded on their first run: ETA {_fmt_seconds(away['sec'] / max(1, jobs))}; "
                     f"with the data here: {_fmt_seconds((total - away['sec']) / max(1, jobs))})")
    lines += rerun_lines([st for st in states if st.cell.current_rule], runs, jobs, fits)
    unmeasured = [st.n_unmeasured for st in states if st.n_unmeasured]
    if unmeasured:
        lines.append(f"       ({sum(unmeasured)} seeds of {len(unmeasured)} cells were resumed from checkpoints that "
                     "kept no CPU seconds: their seconds per run leave them out)")
    if leaders:
        lines.append(f"       ({len(leaders)} cells repeat the configuration of a cell of another table: fitted "
                     f"with it, once per seed, and counted once here)")
    if ratio:
        n_re = sum(st.sec_retimed is not None for st in states)
        lines.append(f"       (re-timed: {n_re} cells, {len(ratio)} (table, method) families scaled; "
                     f"from the committed rows' seconds alone: {_fmt_seconds(total_committed / max(1, jobs))})")
    scratch = from_scratch(states, estimates)
    if scratch:
        parts = ", ".join(f"{m} {sec / 3600:.1f}" for m, sec in sorted(scratch.items(), key=lambda kv: -kv[1]))
        lines.append(f"from scratch: {sum(scratch.values()) / 3600:.1f} CPU-h for every offline cell of these tables "
                     f"at its paper's run count x seconds per run ({parts})")
    return lines


def rerun_lines(states: list[CellState], runs: int | None, jobs: int = 1,
                fits: dict[Cell, int] | None = None) -> list[str]:
    """The part of a plan made under the current rule beside rows the tables read on an old rule
    (``states`` of cells with :attr:`~spl_bench.runner.cells.Cell.current_rule`; a sweep makes
    a cell still owed such a rerun that way, :func:`~spl_bench.runner.cells.old_rule_reruns`): its
    runs left by method, with their tables, and their ETA; already in the plan's total."""
    if not states:
        return []
    estimates = seconds_per_run(states, _family_ratios(states))
    by_method: dict[str, tuple[int, list[str]]] = {}
    n_left = n_cells = 0
    sec = 0.0
    fits = runs_left(states, runs) if fits is None else fits
    for st, (per, _, _) in zip(states, estimates, strict=True):
        left = fits[st.cell]
        if not left:
            continue
        n_left, n_cells, sec = n_left + left, n_cells + 1, sec + (per or 0.0) * left
        n, tables = by_method.get(method_of(st.cell), (0, []))
        by_method[method_of(st.cell)] = (n + left, tables if st.cell.table in tables else [*tables, st.cell.table])
    if not n_left:
        at = "its paper's run count" if runs is None else f"{runs} runs"
        return [f"current rule: every cell made under it beside an old rule's rows is at {at}"]
    parts = "; ".join(f"{m}: {n} runs, tables {', '.join(t)}" for m, (n, t) in by_method.items())
    return [f"       (of which {n_left} runs in {n_cells} cells under the current rule, beside rows their tables "
            f"read on an old rule ({parts}): ETA {_fmt_seconds(sec / max(1, jobs))} with {jobs} job(s))"]
