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
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from spl_bench.data import has_local_copy
from spl_bench.errors import ConfigError, DamagedRows, DataError
from spl_bench.paths import config_dir, repo_root
from spl_bench.report.compare import TABLES
from spl_bench.rowfiles import read_row_file, read_row_index, write_row_file
from spl_bench.runner.results import COLUMNS, atomic_write_csv

#: extra sweeps of a table beyond its config's sweeper (the C-SVM column of the Outlier-Path tables)
EXTRA_SWEEPS: dict[str, list[dict[str, list[str]]]] = {
    "op2": [{"method": ["csvm"], "method.variant": ["-"]}],
    "op3": [{"method": ["csvm"], "method.variant": ["-"]}],
}
#: columns kept in the committed rows: the runner's tidy rows minus the bulky candidate dict, plus
#: the exact-path methods' critical-point counts
ROW_COLUMNS = [c for c in COLUMNS if c != "candidate"] + ["n_critical_turning", "n_critical_jump"]


def rows_root() -> Path:
    """Where committed per-seed rows live (``results/rows``)."""
    return repo_root() / "results" / "rows"


@dataclass(frozen=True)
class Cell:
    """One cell of a table: the overrides of ``spl-bench run`` that compose its config."""

    table: str
    experiment: str
    overrides: tuple[str, ...]
    variant: str = ""  # a key of VARIANTS: the same cell under another protocol

    @property
    def rows_name(self) -> str:
        """Folder of the cell's rows: ``<experiment>`` or ``<experiment>@<variant>``."""
        return f"{self.experiment}@{self.variant}" if self.variant else self.experiment

    @property
    def cell_id(self) -> str:
        """A file-name-safe label, e.g. ``table_row=t2_music_n30,method=gaga``."""
        text = ",".join(o.lstrip("+") for o in self.overrides)
        return re.sub(r"[^A-Za-z0-9_.=,-]", "_", text)

    @property
    def label(self) -> str:
        return f"{self.rows_name} {self.cell_id}"


#: protocol variants of a table, by task: the overrides that turn our protocol into the authors'
VARIANTS: dict[str, dict[str, tuple[str, ...]]] = {
    # the GAGA authors' noise (docs/protocol.md, Fidelity): classification labels flipped near a
    # linear SVM's hyperplane, rate x pool size rows, before the split (test labels noisy);
    # regression: N(0.2, 3^2) added to the features and target of the training rows
    "authors": {
        "classification": ("noise=near_boundary_flip", "noise.options.count=pool", "protocol.noise_scope=all"),
        "regression": ("noise=gaussian_shift",),
    },
    # the GAGA authors' whole protocol (docs/protocol.md, "The authors' protocol"): their noise as
    # above, their 20 shuffled KFold folds (random_state=40), features standardised and the target
    # min-max scaled on all rows, lasso without intercept (ours has none either), the age chosen on
    # the test fold, and their label coding of mfeat-pixel (first 500 rows in file order -> -1).
    # A "data=<name>" key adds overrides for that data set only.
    "authors_protocol": {
        "classification": ("protocol=authors", "noise=near_boundary_flip", "noise.options.count=pool",
                           "protocol.noise_scope=all"),
        "regression": ("protocol=authors", "noise=gaussian_shift"),
        "data=mfeat_pixel": ("~data.binarize", "+data.binarize={kind:first_rows,n:500}"),
    },
    # the clean-label reference of a table row: its plain model (method=original) fitted on the
    # row's splits with no corrupted training rows; one cell per row (CLEAN_VARIANT below)
    "clean": {
        "classification": ("noise.rate=0",),
        "regression": ("noise.rate=0",),
    },
    # the equal-candidates control (issue 65; docs/protocol.md, "What each selection rule measures"):
    # GAGA and ACS each offer their solutions at the same ages, the paper's ACS grid, so that a
    # difference of selected values measures the solutions, not how many candidates each offers;
    # only the methods whose solutions are indexed by age (EQUAL_CANDIDATE_METHODS) have such cells
    "equal_candidates": {
        "classification": ("protocol.candidates=shared_grid",),
        "regression": ("protocol.candidates=shared_grid",),
    },
}
#: the variant whose cells are one plain-model run per table row instead of every method's cell
CLEAN_VARIANT = "clean"
#: the equal-candidates variant and the methods it applies to
EQUAL_VARIANT = "equal_candidates"
EQUAL_CANDIDATE_METHODS = ("gaga", "acs")


#: tables whose committed GAGA rows were made under the step-point candidates and the RK45 route
#: (the rule before 2026-11-29, STEP_CANDIDATES below); a table leaves this set once every GAGA cell
#: of it has been rerun under the route-independent candidates (issue 62; docs/gaga.md, "Routes and candidates")
STEP_CANDIDATE_TABLES = frozenset(TABLES)
#: the overrides that give a GAGA cell the rule its committed rows were made under; the
#: equal-candidates cells keep them for good (their candidates are the shared ages whatever GAGA's
#: own rule, and their committed rows were made under this configuration hash)
STEP_CANDIDATES = ("method.candidates=steps", "method.ode_method=auto")


def _sweep_params(experiment: str) -> dict[str, list[str]]:
    path = config_dir() / "experiment" / f"{experiment}.yaml"
    if not path.is_file():
        raise ConfigError(f"no experiment config {path}")
    conf = OmegaConf.load(path)
    params = OmegaConf.select(conf, "hydra.sweeper.params", default=None)
    if params is None:
        raise ConfigError(f"{path} has no hydra.sweeper.params")
    return {str(k): [v.strip() for v in str(val).split(",")] for k, val in params.items()}


def table_cells(
    table: str, methods: Iterable[str] | None = None, data: Iterable[str] | None = None, variant: str = "",
    where: Iterable[str] | None = None,
) -> list[Cell]:
    """Every cell of ``table`` (a key of :data:`TABLES`), optionally only some methods / datasets.

    ``variant``: a key of :data:`VARIANTS` (the cells under that protocol, rows kept apart).
    ``where``: ``key=value`` conditions on the cell's sweep parameters (e.g. ``model.params.C=1.0``);
    a cell is kept when, for every key named, its value is one of those given for that key.
    With ``variant="clean"`` the cells are the clean-label reference: per table row (a noise rate
    swept by the table is not a row of its own here) the plain model, ``method=original``.
    """
    if variant and variant not in VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; valid: {', '.join(VARIANTS)}")
    if table not in TABLES:
        raise ConfigError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
    experiment = TABLES[table][0]
    base = _sweep_params(experiment)
    if variant == CLEAN_VARIANT:
        if not experiment.startswith("gaga_"):
            raise ConfigError(f"variant {CLEAN_VARIANT!r} is defined for the GAGA tables (their plain model is "
                              f"method=original); table {table!r} has none")
        base = {k: v for k, v in base.items() if k not in ("method", "method.variant", "noise.rate")}
        base["method"] = ["original"]
    if variant == EQUAL_VARIANT:
        base = {**base, "method": [m for m in base.get("method", []) if m in EQUAL_CANDIDATE_METHODS]}
    sweeps = [base]
    for extra in EXTRA_SWEEPS.get(table, []) if variant != EQUAL_VARIANT else []:
        sweeps.append({**{k: v for k, v in base.items() if k not in ("method", "method.variant")}, **extra})
    keep_m = set(methods) if methods else None
    keep_d = set(data) if data else None
    conditions: dict[str, set[str]] = {}
    for item in where or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--where takes key=value, got {item!r}")
        conditions.setdefault(key.strip(), set()).add(value.strip())
    out: list[Cell] = []
    for sweep in sweeps:
        keys = list(sweep)
        for values in itertools.product(*(sweep[k] for k in keys)):
            pairs = dict(zip(keys, values, strict=True))
            if keep_m and pairs.get("method") not in keep_m:
                continue
            if keep_d and not _mentions_dataset(pairs, keep_d):
                continue
            if any(pairs.get(k) not in vals for k, vals in conditions.items()):
                continue
            out.append(Cell(table, experiment, tuple(f"{k}={v}" for k, v in pairs.items()), variant))
    return out


def _mentions_dataset(pairs: dict[str, str], names: set[str]) -> bool:
    if "data" in pairs:
        return pairs["data"] in names
    row = pairs.get("+table_row", "")
    return any(f"_{n}_" in f"_{row}_" or row.split("_", 1)[-1].startswith(f"{n}_n") for n in names)


def compose_cell(cell: Cell, extra: Iterable[str] = ()) -> DictConfig:
    """The resolved config of ``cell`` (Hydra's compose API: the same config ``spl-bench run`` builds)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    base = [f"experiment={cell.experiment}", *cell.overrides]
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=[*base, *extra])
        more: list[str] = []
        if cell.variant:
            spec = VARIANTS[cell.variant]
            more += [*spec[str(cfg.data.task)], *spec.get(f"data={cfg.data.name}", ())]
        if str(cfg.method.name) == "gaga" and (cell.table in STEP_CANDIDATE_TABLES or cell.variant == EQUAL_VARIANT):
            more += STEP_CANDIDATES
        if more:
            cfg = compose("config", overrides=[*base, *more, *extra])
    return cfg


def cell_hash(cfg: DictConfig) -> str:
    """The configuration hash the runner gives this config (its resumable identity)."""
    from spl_bench.runner.app import identity
    from spl_bench.runner.results import config_hash

    return config_hash(identity(cfg))


#: seconds between two progress lines of one run in a sweep's log (a run of hours shows where it is)
RUN_PROGRESS_INTERVAL = 300.0


def run_seed(cell: Cell, seed: int, extra: tuple[str, ...] = (), progress: bool = False) -> list[dict[str, Any]]:
    """Run seed ``seed`` of ``cell`` (one protocol run) and return its tidy rows.

    ``progress``: the estimator's progress reports (GAGA's age, ACS's grid, MOSPL's generations)
    go to standard output as a line every ``RUN_PROGRESS_INTERVAL`` seconds.
    """
    from threadpoolctl import threadpool_limits

    from spl_bench.data import load_dataset
    from spl_bench.progress import DisplayHook, with_progress
    from spl_bench.protocol import run_once
    from spl_bench.runner import app

    cfg = compose_cell(cell, extra)
    protocol = app.protocol_config(cfg)
    ds = load_dataset(app._plain(cfg.data))
    app.check_task(cfg, ds)
    noise = app.noise_config(cfg, ds.task)
    hook = DisplayHook(f"{cell.label} seed {seed}", terminal=False, stream=sys.stdout,
                       interval=RUN_PROGRESS_INTERVAL) if progress else None
    make = with_progress(app.estimator_factory(cfg), hook)
    with threadpool_limits(limits=1):  # one BLAS thread per run: parallelism is across runs
        out = run_once(ds, make, protocol, noise, seed)
    if not math.isfinite(out.value):
        raise FloatingPointError(f"{cell.label} seed {seed}: non-finite metric")
    return app.outcome_rows(cfg, ds, noise, out, cell_hash(cfg))


# ----------------------------------------------------------------------------- committed rows


def rows_file(cell: Cell, h: str, root: Path | None = None) -> Path:
    """The committed row file of ``cell`` under configuration hash ``h``."""
    return (root or rows_root()) / cell.rows_name / f"{cell.cell_id}__{h}.csv"


def read_rows(path: Path) -> pd.DataFrame:
    """The rows of a cell's file (none if there is no file).

    A file that is not whole (empty, cut, changed: :func:`~spl_bench.rowfiles.read_row_file`)
    raises :class:`~spl_bench.errors.DamagedRows`: its seeds are never counted as done.
    """
    if not path.is_file():
        return pd.DataFrame(columns=ROW_COLUMNS)
    return read_row_file(path)


def append_rows(path: Path, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Add one seed's rows to a cell's file (atomic rewrite; a seed already there is replaced)."""
    old = read_rows(path)
    new = pd.DataFrame(rows).reindex(columns=ROW_COLUMNS)
    if len(old):
        old = old[~old["seed"].isin(new["seed"].unique())]
    frame = pd.concat([old, new], ignore_index=True) if len(old) else new
    frame = frame.sort_values(["seed", "metric"]).reset_index(drop=True)
    write_row_file(frame, path)
    return frame


def write_index(experiment: str, entries: list[dict[str, Any]], root: Path | None = None) -> Path:
    """``index.csv`` of an experiment: cell -> current hash and file (what the report reads)."""
    path = (root or rows_root()) / experiment / "index.csv"
    frame = pd.DataFrame(entries, columns=["cell", "overrides", "config_hash", "file"])
    try:  # the index is derived: one that cannot be read is rebuilt from the entries given
        old = read_row_index(path) if path.is_file() else frame.iloc[:0]
    except DamagedRows:
        old = frame.iloc[:0]
    frame = pd.concat([old[~old["cell"].isin(frame["cell"])], frame], ignore_index=True).sort_values("cell")
    atomic_write_csv(frame.reset_index(drop=True), path)
    return path


# ----------------------------------------------------------------------------- planning


@dataclass
class CellState:
    cell: Cell
    config_hash: str
    file: Path
    done: set[int]
    stale: list[Path]
    sec_per_run: float | None
    #: seconds of one run of this cell with today's code: its seeds re-timed (``results/bench/retimed.csv``)
    #: and those run since (:func:`_todays_seconds`)
    sec_retimed: float | None = None
    #: those seconds over the re-timed seeds' committed seconds (:func:`retimed_ratios`)
    retimed_ratio: float | None = None
    #: the cell's dataset is read without a download (:func:`~spl_bench.data.has_local_copy`)
    data_here: bool = True
    #: per committed seed, its seconds and the commit time of the code that made it (``None``: unknown)
    seed_times: tuple[tuple[float, int | None], ...] = ()
    #: commit time of the code that re-timed this cell (``None``: not re-timed, or unknown)
    retimed_since: int | None = None


#: the re-timings of committed seeds by today's code (``scripts/retime_cells.py``): the plan's ETA
#: reads them instead of the committed rows' seconds, which older code made, on busier machines
RETIMED_FILE = Path("results") / "bench" / "retimed.csv"
RETIMED_COLUMNS = ["rows_name", "cell_id", "seed", "cpu_s", "committed_s", "agrees", "worst_rel", "code_version",
                   "date"]


def append_retimed_row(path: Path, row: dict[str, Any]) -> None:
    """Append one re-timing to ``retimed.csv`` (header only for a new file).  Appending, not rewriting
    the file from a copy read earlier: two re-timings running at once would otherwise drop the rows
    the other one wrote in the meantime."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file() or path.stat().st_size == 0
    pd.DataFrame([row], columns=RETIMED_COLUMNS).to_csv(path, mode="a", header=new, index=False)


def _retimed_rows(path: Path | None) -> Iterator[tuple[tuple[str, str], pd.DataFrame]]:
    """The re-timing rows of each ``(rows folder, cell id)``, those of the newest code version."""
    path = path if path is not None else repo_root() / RETIMED_FILE
    if not path.is_file():
        return
    frame = pd.read_csv(path)
    for key, rows in frame.groupby(["rows_name", "cell_id"]):
        if "code_version" in rows:  # the code version re-timed last (rows are appended in time order)
            rows = rows[rows["code_version"] == rows["code_version"].iloc[-1]]
        yield (str(key[0]), str(key[1])), rows


def _retimed_summary(rows: pd.DataFrame) -> tuple[float, float | None]:
    """Median re-timed CPU seconds of a cell's re-timing rows, and the median of (re-timed CPU seconds /
    the seed's committed seconds when it was re-timed): the speed-up of today's code on the same
    seeds, which later runs committed to the cell (by today's code) do not dilute."""
    ratio = None
    if "committed_s" in rows and (rows["committed_s"] > 0).all():
        ratio = float((rows["cpu_s"] / rows["committed_s"]).median())
    return float(rows["cpu_s"].median()), ratio


def retimed(path: Path | None = None) -> dict[tuple[str, str], float]:
    """Median re-timed CPU seconds per ``(rows folder, cell id)``, from the newest code version's rows."""
    return {key: _retimed_summary(rows)[0] for key, rows in _retimed_rows(path)}


def retimed_ratios(path: Path | None = None) -> dict[tuple[str, str], float]:
    """:func:`_retimed_summary`'s ratio per ``(rows folder, cell id)`` (cells with committed seconds)."""
    out = {key: _retimed_summary(rows)[1] for key, rows in _retimed_rows(path)}
    return {key: r for key, r in out.items() if r is not None}


def cell_states(cells: list[Cell], root: Path | None = None, retimed_path: Path | None = None) -> list[CellState]:
    """Hash, committed seeds, stale files and measured seconds per run of every cell (committed, and
    re-timed by today's code where :data:`RETIMED_FILE` has the cell)."""
    # a rows root of its own (tests, other worktrees) has no re-timings unless given them
    use = retimed_path is not None or root is None
    again = dict(_retimed_rows(retimed_path)) if use else {}
    states = []
    for cell in cells:
        cfg = compose_cell(cell)
        h = cell_hash(cfg)
        path = rows_file(cell, h, root)
        frame = read_rows(path)
        done = set(int(s) for s in frame["seed"].unique()) if len(frame) else set()
        seeds = frame.drop_duplicates("seed").set_index("seed") if len(frame) else frame
        times = seeds["time_s"] if len(frame) else pd.Series(dtype=float)
        stale = sorted(p for p in path.parent.glob(f"{cell.cell_id}__*.csv") if p != path)
        rows = _current_retimings(again.get((cell.rows_name, cell.cell_id)), times)
        since = None if rows is None or "code_version" not in rows else _retimed_at(rows)
        sec, ratio = (None, None) if rows is None else _retimed_summary(rows)
        if rows is not None:
            sec = _todays_seconds(rows, seeds, since)
        versions = seeds["code_version"] if len(frame) and "code_version" in seeds else pd.Series(dtype=object)
        seed_times = tuple((float(t), _made_at(versions.get(s))) for s, t in times.items())
        states.append(CellState(cell, h, path, done, stale, float(times.mean()) if len(times) else None, sec, ratio,
                                has_local_copy(OmegaConf.to_container(cfg.data, resolve=True)), seed_times, since))
    return states


def _commit_of(version: object) -> str | None:
    """The git commit of a ``code_version`` (``"0.1.0+1c5fb72"``, ``"0.1.0+6a544e5+flag"``), if any."""
    parts = str(version).split("+")
    return parts[1] if len(parts) > 1 and parts[1] not in ("", "nogit") else None


@functools.lru_cache(maxsize=1)
def _commit_times() -> dict[str, int]:
    """Commit time of every commit of the checkout's history, by abbreviated and full hash (empty
    without git)."""
    try:
        out = subprocess.run(["git", "-C", str(repo_root()), "log", "--format=%h %H %ct"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    times: dict[str, int] = {}
    for line in out.splitlines():
        short, full, ct = line.split()
        times[short] = times[full] = int(ct)
    return times


def _made_at(version: object) -> int | None:
    """Commit time of the code of a ``code_version`` (``None``: no git, no commit, or not in the history)."""
    commit = _commit_of(version) if version is not None else None
    return None if commit is None else _commit_times().get(commit)


def _retimed_at(rows: pd.DataFrame) -> int | None:
    """Commit time of the code that re-timed a cell (rows of one code version; the latest of them)."""
    made = [_made_at(v) for v in rows["code_version"]]
    known = [t for t in made if t is not None]
    return max(known) if known and len(known) == len(made) else None


def _todays_seconds(rows: pd.DataFrame, seeds: pd.DataFrame, since: int | None) -> float:
    """Seconds of one run of a cell with today's code: the mean over its re-timed seeds (at their
    re-timings, median per seed) and its seeds committed since by code no older than the re-timing's
    (at their own seconds).

    Which rows are that recent is read from the commits in their ``code_version`` (git's commit
    times; main's history is linear).  Without them (no git, unknown commits) the re-timings alone
    count, their median.  Re-timing seed 0 alone priced Table 6's hiva GAGA cell at 2,660 s a run
    against 1,180-3,310 s for the nine seeds run after the re-timing.  ``since`` is the commit time
    of the re-timing's code (:func:`_retimed_at`; ``None``: unknown).
    """
    fallback = float(rows["cpu_s"].median())
    times = _commit_times()
    if not times or "code_version" not in seeds or since is None:
        return fallback
    again = rows.groupby("seed")["cpu_s"].median()
    per = [float(sec) for sec in again]
    for seed, version in seeds["code_version"].items():
        made = _made_at(version)
        if int(seed) not in again.index and made is not None and made >= since:
            per.append(float(seeds.at[seed, "time_s"]))
    return fallback if len(per) == len(again) else float(np.mean(per))


def _current_retimings(rows: pd.DataFrame | None, times: pd.Series) -> pd.DataFrame | None:
    """The re-timings of seeds whose committed row is still the one re-timed (its committed seconds
    unchanged): once a seed is run again (new code, a rerun cell), its old re-timing no longer
    describes the cell."""
    if rows is None or "committed_s" not in rows:
        return rows
    # atol: early re-timings stored the committed seconds rounded to 0.01 s
    keep = [int(r.seed) in times.index and bool(np.isclose(times[int(r.seed)], r.committed_s, rtol=1e-9, atol=0.006))
            for r in rows.itertuples()]
    return rows[keep] if any(keep) else None


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
            ratios.setdefault((st.cell.rows_name, _method_of(st.cell)), []).append(r)
    return {k: float(np.median(v)) for k, v in ratios.items()}


def seconds_per_run(states: list[CellState], ratio: dict[tuple[str, str], float] | None = None
                    ) -> list[tuple[float | None, str, float | None]]:
    """Each cell's estimated CPU seconds per run, its mark, and the committed seconds it scales.

    A cell's seconds with today's code (``r``: its re-timed seeds and the seeds run since,
    :func:`_todays_seconds`) where it has been re-timed; else its committed rows' mean
    scaled by the median re-timed / committed ratio of its (table, method) family (``≈``) where
    the family has re-timed cells, the seeds made by code no older than the family's re-timing
    counted at their own seconds (they are today's already); else the committed mean; a cell never
    run takes its method's slowest cell (``~``).  The plan's ETA and the sweep's per-run budget
    both read this, so a cell the plan prices under the budget is run.  ``ratio``: the families'
    ratios if the caller has them already (:func:`_family_ratios` of ``states``).
    """
    by_method: dict[str, list[float]] = {}
    for st in states:
        if st.sec_per_run is not None:
            by_method.setdefault(_method_of(st.cell), []).append(st.sec_per_run)
    ratio = _family_ratios(states) if ratio is None else ratio
    since = _family_retimed_at(states)
    out: list[tuple[float | None, str, float | None]] = []
    for st in states:
        committed, mark = st.sec_per_run, ""
        if committed is None and _method_of(st.cell) in by_method:
            committed, mark = max(by_method[_method_of(st.cell)]), "~"
        per = committed
        key = (st.cell.rows_name, _method_of(st.cell))
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
        out.append((per, mark, committed))
    return out


def _family_retimed_at(states: list[CellState]) -> dict[tuple[str, str], int]:
    """Per (rows folder, method): the commit time of the newest code that re-timed one of its cells,
    where every re-timed cell of the family knows it."""
    at: dict[tuple[str, str], list[int | None]] = {}
    for st in states:
        if st.sec_retimed is not None:
            at.setdefault((st.cell.rows_name, _method_of(st.cell)), []).append(st.retimed_since)
    return {k: max(t for t in v if t is not None) for k, v in at.items() if all(t is not None for t in v)}


def plan_lines(states: list[CellState], runs: int, jobs: int = 1) -> list[str]:
    """One line per cell (runs done / left, seconds per run, ETA) and a total.

    Seconds per run: :func:`seconds_per_run` (its marks ``r``, ``≈``, ``~``).  The total is given
    both ways, and the part of it in cells whose dataset is not in the data directory
    (``download``: OpenML on their first run).
    """
    ratio = _family_ratios(states)
    estimates = seconds_per_run(states, ratio)
    lines, total, total_committed, unknown = [], 0.0, 0.0, 0
    away = {"runs": 0, "cells": 0, "sec": 0.0}  # cells whose data must be downloaded first
    for st, (per, mark, committed) in zip(states, estimates, strict=True):
        left = max(0, runs - len([s for s in st.done if s < runs]))
        eta = "?" if per is None else _fmt_seconds(per * left)
        if left and per is None:
            unknown += 1
        total += (per or 0.0) * left
        total_committed += (committed or 0.0) * left
        if left and not st.data_here:
            away["runs"] += left
            away["cells"] += 1
            away["sec"] += (per or 0.0) * left
        stale = f"  stale: {len(st.stale)} file(s)" if st.stale else ""
        where = "" if st.data_here else "  download"
        per_s = "?" if per is None else f"{mark}{per:.1f}"
        lines.append(f"{st.cell.label:<80} {len(st.done):>3}/{runs} done  {per_s:>8} s/run  ETA {eta}{stale}{where}")
    n_left = sum(max(0, runs - len(st.done)) for st in states)
    lines.append(
        f"total: {n_left} runs left in {len(states)} cells, "
        f"ETA {_fmt_seconds(total / max(1, jobs))} with {jobs} job(s)"
        + (f" (+ {unknown} cells never timed)" if unknown else "")
    )
    if away["cells"]:
        lines.append(f"       (of which {away['runs']} runs in {away['cells']} cells whose data is not in the data "
                     f"directory, downloaded on their first run: ETA {_fmt_seconds(away['sec'] / max(1, jobs))}; "
                     f"with the data here: {_fmt_seconds((total - away['sec']) / max(1, jobs))})")
    if ratio:
        n_re = sum(st.sec_retimed is not None for st in states)
        lines.append(f"       (re-timed: {n_re} cells, {len(ratio)} (table, method) families scaled; "
                     f"from the committed rows' seconds alone: {_fmt_seconds(total_committed / max(1, jobs))})")
    return lines


def _method_of(cell: Cell) -> str:
    for o in cell.overrides:
        if o.startswith("method="):
            return o.split("=", 1)[1]
    return "?"


# ----------------------------------------------------------------------------- running


def pending_tasks(states: list[CellState], runs: int, max_cell_seconds: float | None) -> list[tuple[Cell, int]]:
    """(cell, seed) still to run, seed-major (every cell gets seed k before any gets k + 1).

    A cell whose estimated seconds per run (:func:`seconds_per_run`, the plan's estimate: re-timed
    by today's code, or its committed rows' scaled by its family's re-timing) exceed
    ``max_cell_seconds`` gets no new seed (it is reported with the runs
    it has and the reason).
    """
    per = [p for p, _, _ in seconds_per_run(states)]
    tasks = []
    for seed in range(runs):
        for st, sec in zip(states, per, strict=True):
            if seed in st.done:
                continue
            if max_cell_seconds is not None and sec is not None and sec > max_cell_seconds:
                continue
            tasks.append((st.cell, seed))
    return tasks


def run_only_overrides(cell: Cell, checkpoint_dir: Path | None, blas_threads: int = 1) -> tuple[str, ...]:
    """Overrides that change how a run is computed, not its numbers (nor the config hash): GAGA
    paths save checkpoints under ``checkpoint_dir`` and a rerun resumes from them, and use
    ``blas_threads`` BLAS threads."""
    if _method_of(cell) != "gaga":
        return ()
    out = () if checkpoint_dir is None else (f"method.checkpoint_dir={Path(checkpoint_dir).resolve()}",)
    return out + ((f"method.blas_threads={int(blas_threads)}",) if blas_threads != 1 else ())


def _execute(
    tasks: list[tuple[Cell, int]], jobs: int, executor: str, slurm: dict[str, Any] | None,
    checkpoint_dir: Path | None = None, blas_threads: int = 1, skip: Callable[[Cell], bool] | None = None,
) -> Iterator[tuple[Cell, int, list[dict[str, Any]] | BaseException]]:
    """Run the tasks; yield each (cell, seed, rows or the exception) as it finishes.

    ``skip``: run by run (one job, in this process), a task whose cell it accepts is passed over
    (the parallel executors submit every task up front)."""
    extras = [run_only_overrides(c, checkpoint_dir, blas_threads) for c, _ in tasks]

    if executor == "submitit":
        import submitit

        folder = repo_root() / "runs" / "submitit"
        ex = submitit.AutoExecutor(folder=str(folder), cluster=None if slurm else "local")
        ex.update_parameters(timeout_min=int((slurm or {}).get("timeout_min", 240)), cpus_per_task=1,
                             **{k: v for k, v in (slurm or {}).items() if k != "timeout_min"})  # fmt: skip
        jobs_ = ex.map_array(_guarded_task, [c for c, _ in tasks], [s for _, s in tasks], extras)
        pending = list(jobs_)
        while pending:
            for job in [j for j in pending if j.done()]:
                pending.remove(job)
                yield job.result()
            time.sleep(2)
        return
    if jobs <= 1:
        for (cell, seed), extra in zip(tasks, extras, strict=True):
            if skip is None or not skip(cell):
                yield _guarded_task(cell, seed, extra)
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)
    yield from par(delayed(_guarded_task)(cell, seed, extra) for (cell, seed), extra in zip(tasks, extras, strict=True))


def _guarded_task(cell: Cell, seed: int, extra: tuple[str, ...] = ()
                  ) -> tuple[Cell, int, list[dict[str, Any]] | BaseException]:
    try:
        return cell, seed, run_seed(cell, seed, extra, progress=True)
    except Exception as exc:  # reported by the parent, the sweep goes on
        return cell, seed, exc


def run_tables(
    states: list[CellState],
    runs: int,
    jobs: int = 1,
    executor: str = "joblib",
    max_cell_seconds: float | None = None,
    slurm: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    root: Path | None = None,
    checkpoint_dir: Path | None = None,
    blas_threads: int = 1,
) -> dict[str, str]:
    """Run every missing seed; write each seed's rows as it finishes. Returns failures by cell.

    ``root``: the rows folder (default ``results/rows``; the states' files must lie below it).
    ``checkpoint_dir``: GAGA runs save their path's state there and resume from it
    (:func:`run_only_overrides`); ``blas_threads``: their BLAS threads.
    A cell whose data cannot be loaded (:class:`~spl_bench.errors.DataError`: no local copy and no
    download) fails once; with one job its other seeds are passed over and counted at the end.
    """
    tasks = pending_tasks(states, runs, max_cell_seconds)
    by_cell = {st.cell: st for st in states}
    refresh_index(states, root)
    failures: dict[str, str] = {}
    no_data: set[Cell] = set()
    t0 = time.perf_counter()
    log(f"{len(tasks)} runs to do in {len({c for c, _ in tasks})} cells, {jobs} job(s)")
    results = _execute(tasks, jobs, executor, slurm, checkpoint_dir, blas_threads, skip=no_data.__contains__)
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
        st = by_cell[cell]
        append_rows(st.file, result)
        st.done.add(seed)
        main = next(r for r in result if not str(r["metric"]).startswith("selection_"))
        log(f"[{i}/{len(tasks)}] {cell.label} seed {seed}: {main['metric']} {main['value']:.4f} "
            f"({main['time_s']:.1f} s fit; {elapsed / 60:.1f} min elapsed)")  # fmt: skip
    if i < len(tasks):
        log(f"{len(tasks) - i} runs passed over: {len(no_data)} cell(s) whose data could not be loaded "
            "(the first failure of each is above)")
    return failures


def refresh_index(states: list[CellState], root: Path | None = None) -> None:
    """Point every cell's index entry at its current configuration hash."""
    for exp in sorted({st.cell.rows_name for st in states}):
        write_index(exp, [_index_entry(st) for st in states if st.cell.rows_name == exp], root)


def record_failure(cell: Cell, seed: int, reason: str, root: Path | None = None) -> Path:
    """Add a failed run to ``failures.csv`` (the report marks the cell ``failed`` with this reason)."""
    _, paper, table = TABLES[cell.table]
    cfg = compose_cell(cell)
    path = (root or rows_root()) / "failures.csv"
    old = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    rec = {"paper": paper, "table": table, "dataset": str(cfg.data.name), "method": str(cfg.method.name),
           "cell": cell.label, "seed": seed, "reason": reason}  # fmt: skip
    frame = pd.concat([old, pd.DataFrame([rec])], ignore_index=True).drop_duplicates(["cell", "seed"], keep="last")
    atomic_write_csv(frame, path)
    return path


def _index_entry(st: CellState) -> dict[str, Any]:
    return {"cell": st.cell.cell_id, "overrides": " ".join(st.cell.overrides), "config_hash": st.config_hash,
            "file": st.file.name}  # fmt: skip


def log_line(text: str) -> None:
    """Print a progress line at once, also when output goes to a file."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 1))
