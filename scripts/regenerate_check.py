"""Do the committed rows regenerate?  One seed of the cheapest cell of each (table, method) family, rerun.

    python scripts/regenerate_check.py                       # rows made before the lock, cells under 60 s a run
    python scripts/regenerate_check.py --all-rows --tables 9 13 --max-seconds 30
    python scripts/regenerate_check.py --out results/reference/prelock_regeneration.csv

Prints one line per family (relative difference of its worst metric; 0: the same bits) and writes the
records as CSV (spl_bench.runner.regenerate).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spl_bench.errors import SplBenchError
from spl_bench.runner.regenerate import family_cells, regenerate, write_csv
from spl_bench.table_registry import TABLES


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="only cells whose committed run took at most this")
    ap.add_argument("--all-rows", action="store_true", help="also rows that record their environment")
    ap.add_argument("--out", default=None, help="write the records here (CSV)")
    args = ap.parse_args()
    records = []
    for st, row in family_cells(args.tables, args.seed, args.max_seconds, prelock_only=not args.all_rows):
        rec = regenerate(st, row, args.seed)
        records.append(rec)
        print(f"{rec['table']:>4} {rec['method']:<14} {rec['cell']:<70} "
              f"relative difference {rec['max_rel_diff']:.2e}", flush=True)
    if args.out and records:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_csv(records, Path(args.out))
        print(f"wrote {args.out}")
    print(f"{len(records)} families rerun, {sum(not r['equal'] for r in records)} with another value")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SplBenchError as err:  # a config or data problem: one line, exit 2
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
