"""The Hydra application behind ``spl-bench run``: one job's task, its run folder and its rows.

What a run's config means (protocol, noise, estimator, identity, rows) is
:mod:`spl_bench.runner.run_config`, shared with the table sweep and the scripts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import hydra
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from spl_bench.errors import ConfigError, SplBenchError, environment_error, print_error, unknown_key
from spl_bench.methods.base import SPLEstimator
from spl_bench.paths import config_dir
from spl_bench.progress import display_hook
from spl_bench.rowstore import STALE_DIR, CellStore, write_index
from spl_bench.runner.cell_run import prepare_cell, run_cell
from spl_bench.runner.cells import cell_name, cell_overrides, rule_overrides, short_path_values, table_of, variant_of

#: folder name of a run without overrides (``runs/<exp_name>/_default/``): not the parent of the others
DEFAULT_DIRNAME = "_default"


def job_dirname(override_dirname: str) -> str:
    """Folder name of a job: its overrides (Hydra's ``override_dirname``), or ``_default`` if none.

    Registered as the ``spl_job_dir`` resolver used by ``hydra.run.dir`` / ``hydra.sweep.subdir``
    in ``configs/config.yaml``.  Without it the no-override run would write straight into
    ``runs/<exp_name>/``, the parent folder of every other run of the experiment.  A value that
    is a path (``+data.file=/some/dir/wine2.csv.gz``) is named by its last part and 6 hex digits
    of the whole value (``+data.file=wine2.csv.gz~1a2b3c``): one folder level per run, one folder
    per path.
    """
    return short_path_values(str(override_dirname)) or DEFAULT_DIRNAME


# at import: parallel launchers unpickle ``task`` by reference, which imports this module first
OmegaConf.register_new_resolver("spl_job_dir", job_dirname, replace=True)


def console() -> Console:
    """The stderr console, made on first use in the process that runs the task.

    Not a module-level object: parallel launchers (joblib, submitit) pickle the task, and a rich
    console holds locks and an open stream, which cannot be pickled.
    """
    global _CONSOLE
    if _CONSOLE is None:
        _CONSOLE = Console(stderr=True)
    return _CONSOLE


_CONSOLE: Console | None = None


def root_keys(experiment: str | None = None) -> list[str]:
    """The top-level keys a ``spl-bench run`` config may have.

    The root config's and its groups', plus those the selected ``experiment`` config defines
    for itself (Table 7's per-dataset ``table7_gaga_alpha``, say): experiment configs are
    ``@package _global_``, so their own keys sit at the top level.
    """
    root = OmegaConf.load(config_dir() / "config.yaml")
    keys = {str(k) for k in root if k not in ("defaults", "hydra")}
    for entry in root.get("defaults", []):
        name = next(iter(entry)) if isinstance(entry, DictConfig) else str(entry)
        keys.add(str(name).replace("optional ", "").strip().lstrip("/"))
    keys.discard("_self_")
    exp_file = config_dir() / "experiment" / f"{experiment}.yaml"
    if experiment and exp_file.is_file():
        keys |= {str(k) for k in OmegaConf.load(exp_file) if k not in ("defaults", "hydra")}
    return sorted(keys)


def check_root_keys(cfg: DictConfig, experiment: str | None = None) -> None:
    """Refuse top-level keys no config defines (``+protocl.n_runs=1`` would otherwise be ignored)."""
    valid = root_keys(experiment)
    for key in cfg:
        if key not in valid:
            raise unknown_key("top-level config key", str(key), valid)


def path_writer(run_dir: Path) -> Callable[[SPLEstimator, int], None]:
    """Write the fitted path(s) of a path method (GAGA's AgePath, the outlier paths) per run.

    Files go to ``<run_dir>/paths/run<k>/``: ``age_path.npz`` from ``save_path`` (GAGA) or one
    file per path from ``save_paths`` (Outlier-Path: one per C).  Methods without a path are
    skipped.
    """

    def write(est: SPLEstimator, run: int) -> None:
        out = run_dir / "paths" / f"run{run:02d}"
        if hasattr(est, "save_paths"):
            est.save_paths(out)
        elif hasattr(est, "save_path"):
            est.save_path(out / "age_path.npz")

    return write


def apply_table_rules(cfg: DictConfig, experiment: str | None, given: list[str]) -> list[str]:
    """Give a table's cell the overrides its committed rows were made under (what the sweep composes).

    A GAGA cell of a table whose rows were made under the step-point candidates gets
    :data:`~spl_bench.table_registry.STEP_CANDIDATES` (:func:`~spl_bench.runner.cells.rule_overrides`),
    so ``spl-bench run experiment=gaga_table2 +table_row=... method=gaga`` is the committed cell; with
    a protocol variant's overrides on the command line, the rule of that variant's cells
    (:func:`~spl_bench.runner.cells.variant_of`).  A key the command line sets itself is left as given.
    Returns the overrides applied.
    """
    table = table_of(experiment)
    if table is None:
        return []
    mine = {o.split("=", 1)[0].lstrip("+~") for o in given}
    variant = variant_of(given, str(OmegaConf.select(cfg, "data.task", default="")))
    more = [o for o in rule_overrides(table, str(cfg.method.name), variant) if o.split("=", 1)[0] not in mine]
    for item in more:
        key, value = item.split("=", 1)
        OmegaConf.update(cfg, key, value, merge=False)
    return more


def run_experiment(cfg: DictConfig, run_dir: Path, overrides: list[str] | None = None,
                   experiment: str | None = None) -> tuple[Path, pd.DataFrame]:
    """Run every seed of the configured cell into the row store; return its row file and rows.

    The rows go to ``<results_root>/<exp_name>/<cell>__<hash>.csv`` (:mod:`spl_bench.rowstore`),
    the cell named by the command's overrides (:func:`~spl_bench.runner.cells.cell_name`), exactly
    where the table sweep writes the same cell.  ``run_dir`` (Hydra's folder of this job) gets the
    fitted paths when ``save_paths``.
    """
    overrides = list(overrides or [])
    for item in apply_table_rules(cfg, experiment, overrides):
        console().print(f"[cyan]table cell:[/] {item}, as its committed rows (set it to change)", soft_wrap=True)
    replace = cfg.get("replace_stale", False)
    if not isinstance(replace, bool):
        raise ConfigError(f"replace_stale must be true or false, got {replace!r}")
    cell = prepare_cell(cfg)
    root, folder = Path(str(cfg.results_root)), str(cfg.exp_name)
    store = cell.store(root, folder, cell_name(overrides, experiment))
    home = store.same_config_elsewhere()
    if home is not None:  # one configuration reached by two commands (data=diabetes, or no override)
        console().print(f"[cyan]same configuration:[/] config hash {cell.config_hash} already has rows in {home}; "
                        "the runs continue there", soft_wrap=True)  # fmt: skip
        store = cell.store(root, folder, home.name[: -len(f"__{cell.config_hash}.csv")])
    damaged = store.set_aside_damaged()  # a damaged row file never counts: its seeds run again
    if damaged is not None:
        console().print(Text.assemble(("damaged: ", "yellow"), f"{store.file} ({damaged[1]}): moved to "
                                      f"{damaged[0]}; its runs are run again"), soft_wrap=True)  # fmt: skip
    _other_hashes(store, replace)
    done = store.done()
    todo = [k for k in range(cell.protocol.n_runs) if k not in done]
    if len(todo) < cell.protocol.n_runs:
        n_done = cell.protocol.n_runs - len(todo)
        console().print(f"[cyan]resuming:[/] {n_done} of {cell.protocol.n_runs} runs already in {store.file}")
    writer = path_writer(run_dir) if cfg.get("save_paths", False) else None
    label = f"{cfg.method.name} · {cell.ds.name} · {cfg.model.name}/{cfg.sp.name}"
    frame = store.read()
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console(), disable=not cfg.progress, transient=False,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=cell.protocol.n_runs, completed=cell.protocol.n_runs - len(todo))
        # progress inside each fit: the bar's description on a terminal, log lines otherwise
        hook = display_hook(label, bar, task, console()) if cfg.progress else None
        for k in todo:
            rows = run_cell(cell, k, hook, after_fit=writer)
            try:
                frame = store.add(rows)
                if k == todo[0]:  # the index names this hash once it has a row, not before
                    write_index(store.dir, [store.index_entry(" ".join(cell_overrides(overrides, experiment)))])
            except OSError as exc:
                raise environment_error(exc, f"writing the rows of run {k} to", store.file,
                                        ROWS_KEPT) or exc from None  # fmt: skip
            bar.advance(task)
    if not todo and len(frame):  # every seed there already: the index names this hash all the same
        write_index(store.dir, [store.index_entry(" ".join(cell_overrides(overrides, experiment)))])
    return store.file, frame


def _other_hashes(store: CellStore, replace: bool) -> None:
    """Say which other configurations of the cell have rows: kept and never pooled, or moved to ``stale/``."""
    others = store.others()
    if not others:
        return
    if replace:
        for moved in store.move_aside([o.path for o in others], STALE_DIR):
            console().print(f"[yellow]replaced:[/] rows of another configuration moved to {moved}", soft_wrap=True)
        return
    listed = "; ".join(o.describe() for o in others)
    console().print(f"[yellow]note:[/] this cell also has rows of config hash {listed}; they are kept apart and "
                    f"not pooled (the index now names {store.config_hash}; replace_stale=true moves them to "
                    f"{STALE_DIR}/)", soft_wrap=True)  # fmt: skip


def task(cfg: DictConfig) -> None:
    """One Hydra job of ``spl-bench run`` (one point of a sweep).

    Kept undecorated at module level so that parallel launchers pickle it by reference
    (``spl_bench.runner.app.task``) instead of by value with this module's globals.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    root = Path(str(cfg.get("results_root", run_dir.parent)))
    _tidy_sweep_folder()
    try:
        experiment = HydraConfig.get().runtime.choices.get("experiment")
        check_root_keys(cfg, experiment)
        results, frame = run_experiment(cfg, run_dir, list(HydraConfig.get().overrides.task), experiment)
        if cfg.print_table and len(frame):
            from spl_bench.report.tables import print_tables, summarize

            print_tables(summarize(frame))
        console().print(f"[green]results:[/] {results}", soft_wrap=True)
    except OSError as exc:  # a full disk, a read-only folder, no permission: one line, no traceback
        problem = environment_error(exc, "writing", run_dir, ROWS_KEPT)
        _drop_if_empty(run_dir, root)
        if problem is None:
            raise
        print_error(console(), problem)
        raise SystemExit(2) from None
    except SplBenchError as exc:
        _drop_if_empty(run_dir, root)
        print_error(console(), exc)
        raise SystemExit(2) from None
    except BaseException:  # a bug or an interrupt: the traceback stays, an empty folder does not
        _drop_if_empty(run_dir, root)
        raise


def _tidy_sweep_folder() -> None:
    """Move Hydra's ``multirun.yaml`` from ``<results_root>/<exp_name>/`` to its ``.hydra/`` folder.

    That folder holds run folders only; the sweep's record sits beside them in ``.hydra/``, as
    each run folder's own ``.hydra/`` holds its config.  The first job of a sweep moves it.
    """
    from hydra.types import RunMode

    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        return
    sweep = Path(str(hc.sweep.dir))
    try:
        (sweep / ".hydra").mkdir(parents=True, exist_ok=True)
        os.replace(sweep / "multirun.yaml", sweep / ".hydra" / "multirun.yaml")
    except OSError:  # another job moved it first, or the folder is not writable: nothing to tidy
        pass


#: what the one-line error of a failed write adds: nothing written is lost, nothing half-written counts
ROWS_KEPT = ("the runs written before are kept and the same command resumes from them; "
             "no half-written row file is left")  # fmt: skip


def _drop_if_empty(run_dir: Path, results_root: Path) -> None:
    """Remove a job folder that holds only what Hydra wrote before the task failed.

    Hydra creates ``<run_dir>/.hydra/`` and its log file before the task starts; after a refused
    input they are the only content, and would leave a folder with no results.  A folder
    with anything else (rows of earlier runs, results.csv, paths) is left alone.  Parent folders
    left empty (an override value with a ``/`` makes nested folders) go too, up to ``results_root``.
    """
    try:
        if not run_dir.is_dir():
            return
        if any(p.name != ".hydra" and p.suffix != ".log" for p in run_dir.iterdir()):
            return
        shutil.rmtree(run_dir)
        root = results_root.resolve()
        parent = run_dir.resolve().parent
        while parent != root and root in parent.parents and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    except OSError:  # best effort: a leftover folder is better than hiding the real error
        pass


# Entry point of ``spl-bench run`` (Hydra parses the overrides).
hydra_main = hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")(task)
