"""The Hydra application behind ``spl-bench run``: one job's task, its run folder and its rows.

What a run's config means (protocol, noise, estimator, identity, rows) is
:mod:`spl_bench.runner.run_config`, shared with the table sweep and the scripts.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from spl_bench.data import load_dataset
from spl_bench.errors import ConfigError, SplBenchError, environment_error, print_error, unknown_key
from spl_bench.methods.base import SPLEstimator
from spl_bench.paths import config_dir
from spl_bench.progress import display_hook, with_progress
from spl_bench.protocol import run_once
from spl_bench.runner.results import RowStore, config_hash, hashes_in
from spl_bench.runner.run_config import (
    check_task,
    estimator_factory,
    identity,
    noise_config,
    outcome_rows,
    plain,
    protocol_config,
)

#: folder name of a run without overrides (``runs/<exp_name>/_default/``): not the parent of the others
DEFAULT_DIRNAME = "_default"


#: a value of an override that holds a path (``/some/dir/wine2.csv.gz``): up to the next ``,``
_PATH_VALUE = re.compile(r"=([^,=]*/[^,=]*)")


def _path_value(match: re.Match[str]) -> str:
    value = match.group(1)
    last = value.rstrip("/").rsplit("/", 1)[-1] or "root"
    digest = hashlib.sha1(value.encode()).hexdigest()[:6]
    return f"={last}~{digest}"


def job_dirname(override_dirname: str) -> str:
    """Folder name of a job: its overrides (Hydra's ``override_dirname``), or ``_default`` if none.

    Registered as the ``spl_job_dir`` resolver used by ``hydra.run.dir`` / ``hydra.sweep.subdir``
    in ``configs/config.yaml``.  Without it the no-override run would write straight into
    ``runs/<exp_name>/``, the parent folder of every other run of the experiment.  A value that
    is a path (``+data.file=/some/dir/wine2.csv.gz``) is named by its last part and 6 hex digits
    of the whole value (``+data.file=wine2.csv.gz~1a2b3c``): one folder level per run, one folder
    per path.
    """
    return _PATH_VALUE.sub(_path_value, str(override_dirname)) or DEFAULT_DIRNAME


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


def folder_of_config(exp_root: Path, cfg_hash: str, run_dir: Path) -> Path | None:
    """Another run folder under ``exp_root`` that already holds row files of ``cfg_hash``, if any.

    The folder name comes from the overrides as written, so one configuration can be reached by
    two commands (``data=diabetes`` and no override at all).  Rows of one configuration stay in one
    folder: the run continues in the folder that has the most of them.
    """
    if not exp_root.is_dir() or hashes_in(run_dir).get(cfg_hash):
        return None
    found = [d.parent.parent for d in exp_root.rglob(cfg_hash)
             if d.is_dir() and d.parent.name == "rows" and any(d.glob("run-*.csv"))]  # fmt: skip
    found = [d for d in found if d.resolve() != run_dir.resolve()]
    return max(found, key=lambda d: (len(list((d / "rows" / cfg_hash).glob("run-*.csv"))), str(d)), default=None)


def run_experiment(cfg: DictConfig, run_dir: Path) -> Path:
    """Run every seed of the configured experiment into ``run_dir``; return the results file.

    When another folder of the same experiment already holds rows of this configuration, the runs
    go there instead (:func:`folder_of_config`), and the returned file is that folder's.
    """
    protocol = protocol_config(cfg)
    ds = load_dataset(plain(cfg.data))
    check_task(cfg, ds)
    noise = noise_config(cfg, ds.task)
    make = estimator_factory(cfg)
    ident = identity(cfg)
    h = config_hash(ident)
    replace = cfg.get("replace_stale", False)
    if not isinstance(replace, bool):
        raise ConfigError(f"replace_stale must be true or false, got {replace!r}")
    home = folder_of_config(Path(str(cfg.results_root)) / str(cfg.exp_name), h, run_dir)
    if home is not None:
        console().print(f"[cyan]same configuration:[/] config hash {h} already has rows in {home}; "
                        "the runs continue there", soft_wrap=True)  # fmt: skip
        run_dir = home
    store = RowStore(run_dir, h, ident)
    for path, moved, reason in store.set_aside_damaged():  # a damaged row file never counts: its run runs again
        console().print(Text.assemble(("damaged: ", "yellow"), f"{path} ({reason}): moved to {moved}; its run is "
                                      "run again"), soft_wrap=True)  # fmt: skip
    for moved in store.claim(replace_stale=replace):  # one configuration per folder
        console().print(f"[yellow]replaced:[/] rows of config hash {moved.name} moved to {moved}", soft_wrap=True)
    todo = [k for k in range(protocol.n_runs) if not store.done(k)]
    if len(todo) < protocol.n_runs:
        n_done = protocol.n_runs - len(todo)
        console().print(f"[cyan]resuming:[/] {n_done} of {protocol.n_runs} runs already in {run_dir}")
    writer = path_writer(run_dir) if cfg.get("save_paths", False) else None
    label = f"{cfg.method.name} · {ds.name} · {cfg.model.name}/{cfg.sp.name}"
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console(), disable=not cfg.progress, transient=False,
    ) as bar:  # fmt: skip
        task = bar.add_task(label, total=protocol.n_runs, completed=protocol.n_runs - len(todo))
        # progress inside each fit: the bar's description on a terminal, log lines otherwise
        fit = with_progress(make, display_hook(label, bar, task, console()) if cfg.progress else None)
        for k in todo:
            out = run_once(ds, fit, protocol, noise, k, after_fit=writer)
            if not math.isfinite(out.value):
                raise FloatingPointError(f"run {k} produced a non-finite metric")
            try:
                store.write(k, outcome_rows(cfg, ds, noise, out, h))
            except OSError as exc:
                raise environment_error(exc, f"writing the rows of run {k} to", store.path(k),
                                        ROWS_KEPT) or exc from None  # fmt: skip
            store.rewrite_summary()  # results.csv follows the row files after every run
            bar.advance(task)
    return store.rewrite_summary()


def task(cfg: DictConfig) -> None:
    """One Hydra job of ``spl-bench run`` (one point of a sweep).

    Kept undecorated at module level so that parallel launchers pickle it by reference
    (``spl_bench.runner.app.task``) instead of by value with this module's globals.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    root = Path(str(cfg.get("results_root", run_dir.parent)))
    _tidy_sweep_folder()
    try:
        check_root_keys(cfg, HydraConfig.get().runtime.choices.get("experiment"))
        results = run_experiment(cfg, run_dir)
        if results.parent.resolve() != run_dir.resolve():
            _drop_if_empty(run_dir, root)  # the runs went to the folder that has this configuration
        if cfg.print_table:
            from spl_bench.report.tables import print_tables, read_results, summarize

            print_tables(summarize(read_results([results])))
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
