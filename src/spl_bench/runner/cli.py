"""``spl-bench``: the command line.

Sub-commands::

    spl-bench run [hydra overrides]        run an experiment (Hydra; -m for sweeps)
    spl-bench report PATH... [--out DIR]   mean ± std tables (Markdown, CSV) and figures
    spl-bench path [hydra overrides]       GAGA age-path file and figures
    spl-bench datasets                     list the dataset configs and whether they load offline
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from spl_bench.errors import SplBenchError

console = Console(stderr=True)
USAGE = __doc__ or ""


def _run(argv: list[str]) -> int:
    from spl_bench.runner.app import hydra_main

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
    args = ap.parse_args(argv)
    frame = read_results(args.paths)
    summary = summarize(frame)
    print_tables(summary)
    if args.out:
        written = write_report(frame, args.out, args.name, args.unavailable)
        if not args.no_figure:
            written += bar_figure(summary, Path(args.out) / f"{args.name}.png")
            written += critical_point_figure(frame, Path(args.out) / f"{args.name}_critical_points.png")
        for p in written:
            console.print(f"wrote {p}")
    return 0


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


COMMANDS = {"run": _run, "report": _report, "path": _path, "datasets": _datasets}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``spl-bench <command> ...``; user errors print one line and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        console.print(f"[bold red]error:[/] unknown command {cmd!r}; valid: {', '.join(COMMANDS)}")
        return 2
    try:
        return COMMANDS[cmd](rest)
    except SplBenchError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
