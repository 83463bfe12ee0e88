"""The sanity floor of every table cell: the constant predictor on the cell's own splits (issue 59).

For every cell of the tables whose rows are committed (``results/rows/<experiment>[@variant]/``),
this composes the cell's config as ``spl-bench run`` does (:func:`spl_bench.runner.cells.compose_cell`),
prepares each run's data with :func:`spl_bench.protocol.run.prepare_run` (split, scaling, noise:
the very labels the methods are fitted on and scored against) and scores the constant predictor
:func:`spl_bench.protocol.run.constant_floor`: the majority class of the run's training labels
(regression: the mean of its training targets) predicted for every test row, in the run's metric.

The floor depends on the data, the protocol and the noise of a cell, never on its method or model,
so it is written once per (rows folder, data set, noise, seed); the script checks that every cell
of one such key has the same data, protocol and noise (column ``spec``, a digest of them) and stops
otherwise.  The report (:mod:`spl_bench.report.floor`) reads the file; it stays a pure, fast
function of the repository.  Runs made since the floor existed carry it in their info
(``floor_value``) as well.

    SPL_BENCH_DATA_DIR=../shared/datasets python scripts/floors.py            # every committed folder
    python scripts/floors.py --tables 5 6 --out /tmp/floors.csv              # some tables only

Writes ``results/reference/floors.csv`` (with ``--tables``, the other tables' lines are kept).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench.data.loaders import load_dataset
from spl_bench.errors import SplBenchError
from spl_bench.paths import rows_root
from spl_bench.protocol.run import constant_floor, prepare_run, training_labels
from spl_bench.report import floor
from spl_bench.report.status import available
from spl_bench.runner import run_config
from spl_bench.runner.cells import compose_cell, table_cells
from spl_bench.table_registry import REPORTED_VARIANTS, TABLES

#: protocol keys that decide the training split, its labels and the test rows (the selection rule and
#: the validation share do not: the floor's training labels are the whole training split)
FLOOR_PROTOCOL_KEYS = ("splits", "test_size", "base_seed", "scaling", "noise_scope")


def spec_of(cfg: Any) -> dict[str, Any]:
    """What the floor of a cell depends on: its data, protocol (:data:`FLOOR_PROTOCOL_KEYS`) and noise."""
    ident = run_config.identity(cfg)
    protocol = {k: ident["protocol"].get(k) for k in FLOOR_PROTOCOL_KEYS}
    return {"data": ident["data"], "protocol": protocol, "noise": ident["noise"]}


def _digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]


def floor_groups(keys: Iterable[str]) -> dict[tuple[str, str, str], tuple[Any, int]]:
    """``(rows folder, data set, noise label) -> (a composed config, runs)`` for every cell of the
    tables ``keys`` under each protocol variant with committed rows; raises where two cells of one
    key differ in data, protocol or noise."""
    groups: dict[tuple[str, str, str], tuple[Any, int]] = {}
    specs: dict[tuple[str, str, str], str] = {}
    for key in keys:
        experiment = TABLES[key][0]
        for variant in ("", *REPORTED_VARIANTS):
            rows_name = f"{experiment}@{variant}" if variant else experiment
            if not (rows_root() / rows_name / "index.csv").is_file():
                continue
            for cell in table_cells(key, variant=variant):
                cfg = compose_cell(cell)
                if not available(str(cfg.data.name)):
                    continue
                task = str(cfg.data.task)
                gkey = (rows_name, str(cfg.data.name), run_config.noise_config(cfg, task).label)
                digest = _digest(spec_of(cfg))
                if specs.setdefault(gkey, digest) != digest:
                    raise SplBenchError(f"{rows_name}: cells of {gkey[1]} at {gkey[2]} differ in data, protocol or "
                                        f"noise ({cell.cell_id}); the floor needs a key of its own for them")
                runs = max(int(cfg.protocol.n_runs), groups.get(gkey, (None, 0))[1])
                groups[gkey] = (groups.get(gkey, (cfg, 0))[0], runs)
    return groups


def floor_rows(gkey: tuple[str, str, str], cfg: Any, runs: int) -> list[dict[str, Any]]:
    """One line per seed of a floor key: the constant predictor's test metric on that run's split."""
    ds = load_dataset(run_config.plain(cfg.data))
    protocol, noise = run_config.protocol_config(cfg), run_config.noise_config(cfg, ds.task)
    out = []
    for seed in range(runs):
        prep = prepare_run(ds, protocol, noise, seed)
        value, constant = constant_floor(ds.task, training_labels(prep, protocol), prep.scaled.y_test)
        out.append({"rows_name": gkey[0], "dataset": gkey[1], "noise": gkey[2], "seed": seed, "task": ds.task,
                    "floor": value, "constant": constant, "n_train": len(training_labels(prep, protocol)),
                    "n_test": len(prep.test_idx), "spec": _digest(spec_of(cfg))})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="*", help=f"table keys (default: all of {', '.join(TABLES)})")
    ap.add_argument("--out", type=Path, default=None, help="the floors file (default results/reference/floors.csv)")
    args = ap.parse_args(argv)
    out = args.out or floor.floors_path()
    keys = args.tables or list(TABLES)
    try:
        groups = floor_groups(keys)
        rows: list[dict[str, Any]] = []
        for gkey, (cfg, runs) in sorted(groups.items()):
            rows += floor_rows(gkey, cfg, runs)
            print(f"{gkey[0]} {gkey[1]} {gkey[2]}: {runs} seeds, floor mean "
                  f"{pd.DataFrame(rows[-runs:])['floor'].mean():.4f}", flush=True)
    except SplBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frame = pd.DataFrame(rows, columns=list(floor.FLOOR_COLUMNS))
    if args.tables and out.is_file():  # keep the lines of the tables not recomputed
        done = {TABLES[k][0] for k in keys}
        old = floor.load_floors(out)
        frame = pd.concat([old[~old["rows_name"].str.split("@").str[0].isin(done)], frame], ignore_index=True)
    floor.write_floors(frame, out)
    print(f"wrote {out} ({len(frame)} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
