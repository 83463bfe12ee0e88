"""``spl-bench``: the command line (sub-commands in :data:`USAGE`)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from spl_bench.errors import SplBenchError, environment_error, print_error
from spl_bench.runner.output_folder import check_output_folder

if TYPE_CHECKING:
    from omegaconf import DictConfig

console = Console(stderr=True)

#: what ``spl-bench``, ``spl-bench -h`` and ``spl-bench --help`` print
USAGE = """usage: spl-bench <command> [arguments]

commands:
  run [overrides]           run an experiment: Hydra overrides such as method=acs data=music
                            protocol.n_runs=5; -m to sweep (method=acs,original)
  report PATH... [--out DIR] [--hash H]
                            mean ± std tables (Markdown, CSV) and figures of run folders, with
                            the paired tests (▲) and, over two or more data sets, the Friedman
                            test and its critical-difference diagram
  path [key=value ...]      one GAGA age-path: its file and figures (spl-bench path --help)
  datasets                  the dataset configs and whether each loads here
  verify [PATH...]          check every row file under run folders or results/rows

  spl-bench --version       the version
  spl-bench <command> --help   the options of a command (run: Hydra's help)

examples:
  spl-bench run                                   ACS + lasso on diabetes, 20 runs
  spl-bench run method=original data=breast_cancer model=svm
  spl-bench report runs/default
docs: README.md and docs/ of the repository"""


def _override(argv: list[str], key: str) -> str | None:
    """The last command-line value of ``key`` (``key=v``, ``+key=v`` or ``++key=v``), if any."""
    value = None
    for a in argv:
        k, sep, v = a.lstrip("+").partition("=")
        if sep and k == key:
            value = v
    return value


#: the Hydra flags ``spl-bench run`` checks the overrides of before Hydra starts (others: Hydra alone)
CHECKED_FLAGS = ("-m", "--multirun")
#: swept keys that choose a table's data: a table run without one would run the default data set
DATA_KEYS = ("+table_row", "table_row", "data")


def _first_of_sweeps(overrides: list[str]) -> list[tuple[str, str, list[str]]]:
    """``(override for compose, key as written, every value)`` of each override; a sweep composes its first value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType

    out = []
    for o in OverridesParser.create().parse_overrides(overrides):
        key = o.get_key_element()
        if o.is_sweep_override():
            try:
                values = [str(v) for v in o.sweep_string_iterator()]
            except Exception:  # glob() and the like need Hydra's loader: Hydra checks those itself
                continue
            out.append((f"{key}={values[0]}", key, values))
        elif o.type is OverrideType.DEL:
            out.append((o.input_line, key, []))
        else:
            value = o.get_value_element_as_str()
            out.append((o.input_line, key, [value]))
    return out


def check_overrides(argv: list[str]) -> None:
    """Compose ``spl-bench run``'s config as Hydra will, and turn a refused override into one line.

    Runs before Hydra starts, so nothing is created for a command that cannot run.  Hydra's own
    errors are several lines and suggest ``+key=value`` for a key the config does not have, which
    for a misspelt or misplaced key only moves the failure into the fit.  A sweep (``-m``) is
    checked with the first value of every swept key; other Hydra flags are left to Hydra.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    from spl_bench.errors import ConfigError
    from spl_bench.paths import config_dir

    if any(a.startswith("-") and a not in CHECKED_FLAGS for a in argv):
        return
    multirun = any(a in CHECKED_FLAGS for a in argv)
    given = [a for a in argv if a not in CHECKED_FLAGS and not a.lstrip("+~").startswith("hydra")]
    try:
        parsed = _first_of_sweeps(given)
    except HydraException as exc:
        raise ConfigError(f"cannot read the overrides: {exc}") from None
    overrides = [p[0] for p in parsed]

    def compose_with(items: list[str]) -> DictConfig:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            return compose("config", overrides=items, return_hydra_config=True)

    try:
        cfg = compose_with(overrides)
    except MissingConfigException as exc:
        group, _, name = str(exc.missing_cfg_file or "").rpartition("/")
        if group and exc.options:
            raise ConfigError(f"unknown {group} {name!r}; valid: {', '.join(sorted(exc.options))}") from None
        raise ConfigError(str(exc).split("Config search path")[0]) from None
    except (HydraException, OmegaConfBaseException) as exc:
        raise override_error(exc, overrides, compose_with) from None
    check_table_data(cfg, [(k, v) for _, k, v in parsed], multirun)


def override_error(exc: Exception, overrides: list[str], compose_with: Callable[[list[str]], Any]) -> Exception:
    """One line for an override Hydra refused: what the key is, and what to write instead."""
    from spl_bench.errors import ConfigError, unknown_key
    from spl_bench.paths import config_dir

    found = re.search(r"Could not override '([^']+)'", str(exc))
    if not found:
        return ConfigError(f"{str(exc).splitlines()[0]}" + (f" ({exc.__cause__})" if exc.__cause__ else ""))
    key = found.group(1)
    rest = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] != key]
    try:
        base = compose_with(rest)
    except Exception:
        base = None
    parent, _, leaf = key.rpartition(".")
    if base is not None and parent == "model.params":
        from omegaconf import OmegaConf

        model = str(base.model.name)
        have = sorted(p.stem for p in (config_dir() / "model").glob("*.yaml")
                      if leaf in (OmegaConf.load(p).get("params") or {}))  # fmt: skip
        where = f"; the models with {leaf}: {', '.join(have)} (e.g. model={have[0]})" if have else ""
        valid = ", ".join(map(str, base.model.get("params") or {})) or "none"
        return ConfigError(f"model {model!r} has no parameter {leaf!r} (its parameters: {valid}){where}")
    if base is not None and key == "data.root":
        return ConfigError(f"dataset {base.data.name!r} is bundled with scikit-learn and reads no data folder; "
                           "data.root is for datasets read from files (e.g. data=music data.root=/path/to/datasets), "
                           "or set SPL_BENCH_DATA_DIR for every run")  # fmt: skip
    if base is not None:  # the first part of the key the config does not have, and its siblings
        node: Any = base
        parts = key.split(".")
        for k, part in enumerate(parts):
            if not hasattr(node, "keys"):
                break
            if part not in node:
                where = ".".join(parts[:k])
                siblings = [str(x) for x in node.keys() if str(x) != "hydra"]
                return unknown_key(f"config key{f' under {where}' if where else ''}", part, siblings)
            node = node[part]
    return ConfigError(f"the config has no key {key!r}: check its spelling (a new key needs +{key}=..., "
                       "and only keys the code reads do anything)")  # fmt: skip


def check_table_data(cfg: DictConfig, given: list[tuple[str, list[str]]], multirun: bool) -> None:
    """A table experiment runs only its own rows: its data key (``+table_row``, ``data``) given, one of the table's.

    ``spl-bench run experiment=gaga_table2 method=original`` would otherwise run the default data set
    into ``runs/gaga_table2/`` and the report would show a row the table does not have.  In a sweep the
    table's values fill the key.  Another ``exp_name`` runs the table's settings on any data.
    """
    from spl_bench.errors import ConfigError

    experiment = cfg.hydra.runtime.choices.get("experiment")
    swept = dict(cfg.hydra.sweeper.get("params") or {})
    if not experiment or str(cfg.exp_name) != experiment:
        return
    chosen = {k.lstrip("+"): v for k, v in given}
    for key, values in swept.items():
        name = str(key).lstrip("+")
        if str(key) not in DATA_KEYS:
            continue
        table = [v.strip() for v in str(values).split(",")]
        if name not in chosen:
            if multirun:
                continue
            what = "row" if name == "table_row" else "data set"
            raise ConfigError(f"experiment={experiment} runs one {what} of the table at a time: add {key}=<{what}> "
                              f"(one of {', '.join(table)}), or -m for the whole table")  # fmt: skip
        other = [v for v in chosen[name] if v not in table]
        if other:
            raise ConfigError(f"{key}={other[0]} is not in experiment {experiment} (its {name}: {', '.join(table)}); "
                              f"to run the table's settings on other data give another exp_name=...")  # fmt: skip


def _run(argv: list[str]) -> int:
    from spl_bench.runner.app import hydra_main

    check_overrides(argv)
    root = _override(argv, "results_root")
    if root is None or "," not in root:  # a swept results_root is left to Hydra
        check_output_folder("results_root=", root if root is not None else "runs")
    sys.argv = ["spl-bench run", *argv]
    hydra_main()
    return 0


def _report(argv: list[str]) -> int:
    from spl_bench.report import folder
    from spl_bench.report.figures import bar_figure, critical_point_figure
    from spl_bench.report.tables import print_tables, read_results, summarize, write_report

    ap = argparse.ArgumentParser(
        prog="spl-bench report",
        description="aggregate results into mean ± std tables, with the paper tables' statistics: the paired "
                    "Wilcoxon signed-rank tests of every pair of methods per line (Holm; ▲ on a best mean "
                    "significantly better than the second) and, with two or more data sets, the Friedman test "
                    "and its critical-difference diagram",
    )  # fmt: skip
    ap.add_argument("paths", nargs="+", help="results folders (results_root of spl-bench run, results/rows, or one "
                                             "experiment folder in them) or row / results CSV files")
    ap.add_argument("--out", default=None, help="folder for table.md / table.csv / figures")
    ap.add_argument("--name", default="table", help="base name of the written files")
    ap.add_argument("--no-figure", action="store_true", help="do not draw the bar figure")
    ap.add_argument("--unavailable", nargs="*", default=[], metavar="DATASET",
                    help="datasets of the paper's table with no local copy: listed as not available")
    ap.add_argument("--hash", nargs="+", action="extend", dest="hashes", metavar="H",
                    help="config hash(es) (or unique prefixes) to keep in cells holding rows of several "
                         "configurations; such cells are refused otherwise, never averaged")
    args = ap.parse_args(argv)
    if args.out:
        check_output_folder("--out ", args.out)
    for p in map(Path, args.paths):
        if p.is_file():
            check_results_file(p)
    frame = read_results(args.paths, config_hash=args.hashes)
    warn_mixed_environments(frame)
    summary = summarize(frame)
    tests = folder.folder_tests(frame)  # the paper tables' paired tests and rank tests, on these runs
    marks = folder.marks(tests, summary)
    print_tables(summary, marks=marks)
    folder.print_tests(tests)
    if args.out:
        try:
            written = write_report(frame, args.out, args.name, args.unavailable, marks=marks,
                                   notes=folder.markdown(tests, args.name))  # fmt: skip
            written += folder.write(tests, args.out, args.name, figures=not args.no_figure)
            if not args.no_figure:
                written += bar_figure(summary, Path(args.out) / f"{args.name}.png")
                written += critical_point_figure(frame, Path(args.out) / f"{args.name}_critical_points.png")
        except OSError as exc:
            raise environment_error(exc, "writing the report to", args.out) or exc from None
        for p in written:
            console.print(f"wrote {p}", soft_wrap=True)
    return 0


def warn_mixed_environments(frame) -> None:
    """Print a warning listing the cells whose rows were made under different library versions or
    BLAS kernel families."""
    from spl_bench.report.environments import mixed_cells
    from spl_bench.report.tables import CELL_KEYS

    mixed = mixed_cells(frame, CELL_KEYS)
    if mixed:
        console.print(f"[yellow]warning:[/] {len(mixed)} cell(s) pool rows made under different library versions "
                      "or BLAS kernel families:", soft_wrap=True)  # fmt: skip
        for line in mixed:
            console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)


#: columns every results file has (see spl_bench.rowstore.COLUMNS)
RESULT_COLUMNS = ("experiment", "dataset", "noise", "method", "model", "sp", "selection", "seed", "metric", "value")


def check_results_file(path: Path) -> None:
    """Refuse a file that is not a results CSV written by ``spl-bench run``, naming what is wrong."""
    import pandas as pd

    from spl_bench.errors import DataError

    if path.stat().st_size == 0:
        if path.name == "results.csv":
            return  # an interrupted first run: read_results skips it
        raise DataError(f"{path} is empty, not a results file of spl-bench run")
    try:
        header = pd.read_csv(path, nrows=0)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError, EOFError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataError(f"{path} cannot be read as a CSV results file ({first})") from None
    missing = [c for c in RESULT_COLUMNS if c not in header.columns]
    if missing:
        raise DataError(
            f"{path} is not a results file of spl-bench run (no column {', '.join(missing)}); "
            "give row files, results CSV files or the folders holding them"
        )


def _path(argv: list[str]) -> int:
    try:
        from spl_bench.runner.path_cmd import main as path_main
    except ImportError:
        raise SplBenchError("the GAGA path command is not available in this build") from None
    return int(path_main(argv) or 0)


def dataset_status(name: str) -> tuple[str, str]:
    """(status, why) of one dataset config: ``yes`` only when it loads here, checks and all.

    ``yes`` (a local file that passes its sha256 check and loads), ``bundled`` (scikit-learn's),
    ``download`` (no file here: fetched from OpenML on first use, online), ``missing`` (no file
    and no OpenML id) or ``NO`` with ``why``, the first line of the loading error (a file failing
    its sha256 check, unreadable, without its target column).
    """
    from spl_bench.data.loaders import dataset_spec, has_local_copy, load_dataset
    from spl_bench.errors import SplBenchError

    spec = dataset_spec(name)
    src = spec.get("source", "local")
    if src == "sklearn":
        return "bundled", ""
    if src in ("csv", "openml") and not spec.get("path") and not spec.get("openml_id"):
        return "yours", ""  # data=csv data.path=FILE / data=openml data.openml_id=N (docs/data.md)
    if src != "local" or not has_local_copy(spec):
        return ("download" if spec.get("openml_id") else "missing"), ""
    try:
        load_dataset(spec)
    except SplBenchError as exc:
        return "NO", str(exc).strip().splitlines()[0]
    return "yes", ""


def _datasets(argv: list[str]) -> int:
    from rich.table import Table

    from spl_bench.data.loaders import available_datasets, dataset_spec
    from spl_bench.paths import data_dir

    ap = argparse.ArgumentParser(
        prog="spl-bench datasets",
        description="list the dataset configs (configs/data/) and whether each loads here: every local file "
                    "is loaded and checked against its sha256. loads: yes | bundled (scikit-learn) | download "
                    "(from OpenML on first use) | missing | NO (the reason is printed below the table) | yours "
                    "(csv, openml: your file or OpenML id, docs/data.md)",
    )  # fmt: skip
    ap.parse_args(argv)
    table = Table(title=f"datasets (data directory: {data_dir()})")
    for col in ("name", "task", "source", "loads", "note"):
        table.add_column(col)
    problems = []
    for name in available_datasets():
        spec = dataset_spec(name)
        status, why = dataset_status(name)
        if why:
            problems.append(f"{name}: {why}")
        note = f"stand-in for {spec['stand_in_for']}" if spec.get("stand_in_for") else ""
        table.add_row(name, spec.get("task", "?"), spec.get("source", "local"), status, note)
    out = Console()
    out.print(table)
    for line in problems:
        out.print(Text.assemble(("does not load: ", "yellow"), line), soft_wrap=True)
    return 0


def _verify(argv: list[str]) -> int:
    from spl_bench.rowfiles import verify_tree

    ap = argparse.ArgumentParser(
        prog="spl-bench verify",
        description="check every row file under run folders or results/rows: readable, whole (check trailer: "
                    "row count and SHA-256), the columns, complete rows, config hash, no seed twice",
    )  # fmt: skip
    ap.add_argument("paths", nargs="*", default=["results/rows"], metavar="PATH",
                    help="run folders, folders of them, results/rows, or single row files (default results/rows)")
    args = ap.parse_args(argv)
    out = Console(soft_wrap=True, highlight=False)
    status = 0
    for found in verify_tree(args.paths):
        for line in found.problems:
            out.print(line, markup=False)
        out.print(found.summary(), markup=False)
        status = max(status, 1 if found.problems else 0)
    return status


COMMANDS = {"run": _run, "report": _report, "path": _path, "datasets": _datasets, "verify": _verify}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``spl-bench <command> ...``; user and environment errors print one line and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from spl_bench import __version__

        print(f"spl-bench {__version__}")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print_error(console, f"unknown command {cmd!r}; valid: {', '.join(COMMANDS)}")
        return 2
    try:
        return COMMANDS[cmd](rest)
    except SplBenchError as exc:
        print_error(console, exc)
        return 2
    except OSError as exc:  # a full disk, a read-only folder, no permission: one line, no traceback
        problem = environment_error(exc)
        if problem is None:
            raise
        print_error(console, problem)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
