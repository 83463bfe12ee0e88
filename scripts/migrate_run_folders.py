"""Move the rows of ``spl-bench run`` folders made before the row store into it, values unchanged.

Before the row store (:mod:`spl_bench.rowstore`), ``spl-bench run`` wrote one file per run::

    <results_root>/<exp_name>/<overrides>/rows/<hash>/run-NNN.csv   (+ config.json, results.csv)

and now writes, as the tables' sweep does, one file per cell and hash::

    <results_root>/<exp_name>/<cell>__<hash>.csv   (+ <cell>__<hash>.json, index.csv)

    python scripts/migrate_run_folders.py runs            # every old run folder under runs/
    python scripts/migrate_run_folders.py runs --check    # say what would be written; write nothing

Each old row file is read through its check trailer (a damaged one is named and left where it
is: nothing of its folder moves).  The cell is named from the folder's ``.hydra/overrides.yaml``
as ``spl-bench run`` names it today (:func:`~spl_bench.runner.cells.cell_name`; the folder's name
when that file is missing).  The rows are written unchanged, the index points each cell at the
newest hash, and the old ``rows/`` folder is renamed ``rows_migrated/`` so a second pass finds
nothing to do.  Nothing is deleted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd
import yaml

from spl_bench.atomic import atomic_write_text
from spl_bench.errors import DamagedRows
from spl_bench.rowfiles import read_row_file
from spl_bench.rowstore import CellStore, write_index


def old_folders(root: Path) -> list[Path]:
    """Run folders of the old layout under ``root``: each holding ``rows/<hash>/run-NNN.csv``."""
    return sorted({f.parent.parent.parent for f in root.rglob("run-*.csv") if f.parent.parent.name == "rows"})


def cell_of(run_dir: Path) -> tuple[str, str, str]:
    """(cell name, overrides text, experiment) of an old run folder."""
    from spl_bench.runner.cells import cell_name

    path = run_dir / ".hydra" / "overrides.yaml"
    overrides = [str(o) for o in yaml.safe_load(path.read_text()) or []] if path.is_file() else []
    experiment = next((o.split("=", 1)[1] for o in overrides if o.startswith("experiment=")), None)
    if not path.is_file():
        name = run_dir.name if run_dir.name != "_default" else ""
        overrides = [o for o in name.split(",") if o]
    return cell_name(overrides, experiment), " ".join(overrides), experiment or ""


def migrate(run_dir: Path, check: bool) -> list[str]:
    """Move one old run folder's rows into the row store of its experiment folder; lines to print."""
    cell, overrides, _ = cell_of(run_dir)
    hashes = sorted((d for d in (run_dir / "rows").iterdir() if d.is_dir()), key=lambda d: max(
        (f.stat().st_mtime for f in d.glob("run-*.csv")), default=0.0))  # fmt: skip
    frames = {d.name: pd.concat([read_row_file(f) for f in sorted(d.glob("run-*.csv"))], ignore_index=True)
              for d in hashes if any(d.glob("run-*.csv"))}  # fmt: skip
    exp_dir = run_dir.parent
    lines = []
    for h, frame in frames.items():
        store = CellStore(exp_dir.parent, exp_dir.name, cell, h)
        lines.append(f"{run_dir}/rows/{h}: {frame['seed'].nunique()} seeds -> {store.file}")
        if check:
            continue
        if store.file.is_file():
            raise SystemExit(f"{store.file} exists already: {run_dir} was migrated, or two folders hold one cell")
        store.add(frame.to_dict("records"))  # every seed at once; the columns of the row store (COLUMNS)
        side = run_dir / "rows" / h / "config.json"
        if side.is_file():
            atomic_write_text(store.file.with_suffix(".json"), side.read_text())
    if frames and not check:
        newest = list(frames)[-1]
        write_index(exp_dir, [CellStore(exp_dir.parent, exp_dir.name, cell, newest).index_entry(overrides)])
        os.replace(run_dir / "rows", run_dir / "rows_migrated")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", type=Path, help="folders to search for old run folders (e.g. runs)")
    ap.add_argument("--check", action="store_true", help="say what would be written; write nothing")
    args = ap.parse_args(argv)
    found = 0
    for root in args.roots:
        for run_dir in old_folders(root):
            found += 1
            try:
                for line in migrate(run_dir, args.check):
                    print(line)
            except DamagedRows as exc:
                print(f"left as it is: {exc}", file=sys.stderr)
    print(f"{found} old run folder(s){' (nothing written: --check)' if args.check else ' migrated'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
