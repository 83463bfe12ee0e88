"""``spl-bench``: the command line.

Sub-commands::

    spl-bench run [hydra overrides]        run an experiment (Hydra; -m for sweeps)
    spl-bench report PATH... [--out DIR] [--hash H]
                                           mean ± std tables (Markdown, CSV) and figures
    spl-bench path [hydra overrides]       GAGA age-path file and figures
    spl-bench datasets                     list the dataset configs and whether they load offline
    spl-bench verify [PATH...]             check every row file under run folders or results/rows
                                           (default results/rows): one line per problem, exit 1 on any
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path

from rich.console import Console

from spl_bench.errors import SplBenchError, environment_error, print_error

console = Console(stderr=True)
USAGE = __doc__ or ""


def _override(argv: list[str], key: str) -> str | None:
    """The last command-line value of ``key`` (``key=v``, ``+key=v`` or ``++key=v``), if any."""
    value = None
    for a in argv:
        k, sep, v = a.lstrip("+").partition("=")
        if sep and k == key:
            value = v
    return value


#: bytes the output-folder check writes (and removes): less free space than this is a full disk
PROBE_BYTES = 64 * 1024


def check_output_folder(label: str, root: str) -> None:
    """Refuse an output folder (``results_root``, ``--out``) that is a file or cannot be written.

    ``label`` names the option in the message (``results_root=``, ``--out ``).  For
    ``results_root`` this runs before Hydra starts: Hydra creates the run folder and writes its
    config files before the task runs, and a failure there (a full disk) is a traceback.  The
    check creates a folder and writes :data:`PROBE_BYTES` into it (a read-only folder, a missing
    permission and a full disk all fail here, in one line); nothing is left behind.
    """
    import tempfile

    from spl_bench.errors import ConfigError

    path = Path(root).expanduser().absolute()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == path else f"is under the file {existing}"
        raise ConfigError(f"{label}{root} {what}, not a folder; give a folder (it is created if missing)")
    try:
        with tempfile.TemporaryDirectory(dir=existing) as probe:
            with open(Path(probe) / "probe", "wb") as fh:
                fh.write(bytes(PROBE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        unnamed = OSError(exc.errno, exc.strerror)  # the probe's own name means nothing to the user
        problem = environment_error(unnamed, f"{label}{root}: writing in", existing, "nothing was run")
        if problem is not None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise problem from None
        raise ConfigError(
            f"{label}{root}: cannot create folders in {existing} ({exc.strerror or exc}); "
            "choose a writable folder"
        ) from None


def _run(argv: list[str]) -> int:
    from spl_bench.runner.app import hydra_main

    root = _override(argv, "results_root")
    if root is None or "," not in root:  # a swept results_root is left to Hydra
        check_output_folder("results_root=", root if root is not None else "runs")
    sys.argv = ["spl-bench run", *argv]
    hydra_main()
    return 0


def _report(argv: list[str]) -> int:
    from spl_bench.report.figures import bar_figure, critical_point_figure
    from spl_bench.report.tables import print_tables, read_results, summarize, write_report

    ap = argparse.ArgumentParser(prog="spl-bench report", description="aggregate results into tables")
    ap.add_argument("paths", nargs="+", help="results.csv files or folders containing them")
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
        for f in sorted(p.rglob("results.csv")) if p.is_dir() else [p] if p.is_file() else []:
            check_results_file(f)
    frame = read_results(args.paths, config_hash=args.hashes)
    warn_mixed_environments(frame)
    summary = summarize(frame)
    print_tables(summary)
    if args.out:
        try:
            written = write_report(frame, args.out, args.name, args.unavailable)
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


#: columns every results file has (see spl_bench.runner.results.COLUMNS)
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
            "give results.csv files or the folders holding them"
        )


def _path(argv: list[str]) -> int:
    try:
        from spl_bench.runner.path_cmd import main as path_main
    except ImportError:
        raise SplBenchError("the GAGA path command is not available in this build") from None
    return int(path_main(argv) or 0)


def _datasets(argv: list[str]) -> int:
    from rich.table import Table

    from spl_bench.data.loaders import available_datasets, dataset_spec
    from spl_bench.paths import data_dir

    table = Table(title=f"datasets (data directory: {data_dir()})")
    for col in ("name", "task", "source", "local file", "note"):
        table.add_column(col)
    for name in available_datasets():
        spec = dataset_spec(name)
        src = spec.get("source", "local")
        if src == "local":
            here = (data_dir(spec.get("root")) / str(spec["file"])).is_file()
            status = "yes" if here else ("no (OpenML online)" if spec.get("openml_id") else "no")
        else:
            status = "bundled"
        note = f"stand-in for {spec['stand_in_for']}" if spec.get("stand_in_for") else ""
        table.add_row(name, spec.get("task", "?"), src, status, note)
    Console().print(table)
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
