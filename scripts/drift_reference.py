"""Record the drift cells' values under this process's BLAS kernel family (spl_bench.runner.drift).

Run it on a machine whose OpenBLAS kernel family differs from the committed rows' where a drift
check fails for that reason alone (its message names both families): it reruns seeds 0-1 of every
drift cell (``--slow``: only the slow ones, ``--fast``: only the others) and records each value
with the kernel family, environment and code version in ``results/reference/drift_kernels.csv``.
A value that differs from the committed one is printed; commit the file with the reason.

    python scripts/drift_reference.py [--fast | --slow] [--tables 15 16] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from spl_bench.errors import SplBenchError
from spl_bench.report.ours import load_ours
from spl_bench.runner import drift
from spl_bench.runner.cells import table_cells
from spl_bench.runner.reproduce import run_seed
from spl_bench.table_registry import TABLES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--fast", action="store_true", help="only the drift cells of the default suite")
    which.add_argument("--slow", action="store_true", help="only the drift cells of make test-drift-slow")
    ap.add_argument("--tables", nargs="*", help="table keys (default: every table with a drift cell)")
    ap.add_argument("--out", type=Path, default=None, help=f"the reference file (default {drift.REFERENCE_FILE})")
    args = ap.parse_args(argv)
    kernel = drift.kernel_family()
    print(f"BLAS kernel family: {kernel}", flush=True)
    try:
        for key, cell_id, slow in drift.drift_cells():
            if (args.fast and slow) or (args.slow and not slow) or (args.tables and key not in args.tables):
                continue
            cell = next(c for c in table_cells(key) if c.cell_id == cell_id)
            committed = load_ours(TABLES[key][0])
            committed = committed[committed["cell"] == cell_id]
            for seed in sorted(set(committed["seed"]) & set(drift.DRIFT_SEEDS)):
                rows = run_seed(cell, int(seed))
                drift.record_reference(key, cell_id, int(seed), rows, kernel, args.out)
                old = {r.metric: r.value for r in committed[committed["seed"] == seed].itertuples()}
                moved = [f"{r['metric']} {old[r['metric']]} -> {r['value']}" for r in rows if r["metric"] in old
                         and not math.isclose(r["value"], old[r["metric"]], rel_tol=1e-6, abs_tol=1e-9)]
                print(f"table {key} {cell_id} seed {seed}: " + ("; ".join(moved) if moved else "as committed"),
                      flush=True)
    except SplBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
