"""Re-time committed seeds with today's code, and check that their values still reproduce.

The plan's ETA (``reproduce_tables.py --plan``) reads the seconds per run of the committed rows,
many of them made by older code on busier machines.  This reruns one committed seed (or more) of
each chosen cell, measures its CPU seconds, compares every metric with the committed value (the
drift check's tolerance: rtol 1e-6, atol 1e-9) and appends a row to ``results/bench/retimed.csv``;
the plan then uses these seconds for the cell, and their median ratio to the committed seconds for
the other cells of its (table, method) family.  Resumable: a (cell, seed) already re-timed by
the same code version is skipped.

    python scripts/retime_cells.py --tables 16 12 --methods gaga
    python scripts/retime_cells.py --tables 11 --methods gaga --max-cells 3 --seeds 1

The seeds re-timed are those of the code version that made most of the cell's seeds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from spl_bench.environment import code_version
from spl_bench.errors import SplBenchError
from spl_bench.paths import repo_root
from spl_bench.rowstore import read_cell as read_rows
from spl_bench.runner.cells import table_cells
from spl_bench.runner.plan import cell_states
from spl_bench.runner.reproduce import run_seed
from spl_bench.runner.retiming import RETIMED_COLUMNS, RETIMED_FILE, append_retimed_row, recorded_seconds
from spl_bench.table_registry import PROTOCOL_VARIANTS

#: the drift check's tolerances (tests/test_reproduce.py)
RTOL, ATOL = 1e-6, 1e-9


def compare(committed: pd.DataFrame, fresh: dict[str, float]) -> tuple[bool, float, dict[str, tuple[float, float]]]:
    """Whether every committed metric of one seed is reproduced: ``(agrees, worst relative gap, differing)``."""
    worst, differing = 0.0, {}
    for r in committed.itertuples():
        if r.metric not in fresh or not np.isfinite(r.value):
            continue
        gap = abs(fresh[r.metric] - r.value)
        worst = max(worst, gap / max(abs(r.value), 1e-300))
        if gap > ATOL + RTOL * abs(r.value):
            differing[str(r.metric)] = (float(r.value), float(fresh[r.metric]))
    return not differing, worst, differing


def pick_seeds(rows: pd.DataFrame, done: set[int], k: int) -> list[int]:
    """The ``k`` lowest seeds of the code version that made most of a cell's seeds (ties: the version of
    the lower seed).  The plan prices a cell's seeds of a re-timed version by that version's ratio and
    the others at their own seconds (:func:`~spl_bench.runner.retiming.todays_seconds`), so a re-timing
    of the common version reaches most seeds: seed 0 of Table 3's cells was often made by an older
    version than the other 19."""
    if "code_version" not in rows or rows["code_version"].isna().all():
        return sorted(done)[:k]
    version = rows.drop_duplicates("seed").set_index("seed")["code_version"]
    ordered = [version[s] for s in sorted(done) if s in version.index]
    if not ordered:
        return sorted(done)[:k]
    top = Counter(ordered).most_common(1)[0][0]  # equal counts: the version met first, i.e. of the lower seed
    return sorted(s for s in done if version.get(s) == top)[:k]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", nargs="+", required=True)
    ap.add_argument("--methods", nargs="+")
    ap.add_argument("--data", nargs="+")
    ap.add_argument("--variant", default="", choices=["", *PROTOCOL_VARIANTS])
    ap.add_argument("--where", nargs="+", default=None, metavar="KEY=VALUE",
                    help="only cells with these sweep values (e.g. model.params.C=0.9)")
    ap.add_argument("--seeds", type=int, default=1,
                    help="committed seeds re-timed per cell: the lowest ones of the code version that made most of "
                         "the cell's seeds (the plan scales that version's seeds by their re-timings)")
    ap.add_argument("--max-cells", type=int, help="at most this many cells per table")
    args = ap.parse_args()
    out = repo_root() / RETIMED_FILE
    version = code_version()
    try:
        have = pd.read_csv(out) if out.is_file() else pd.DataFrame(columns=RETIMED_COLUMNS)
        done = {(r.rows_name, r.cell_id, int(r.seed)) for r in have.itertuples() if r.code_version == version}
        for table in args.tables:
            cells = table_cells(table, args.methods, args.data, args.variant, args.where)
            states = [st for st in cell_states(cells) if st.done][: args.max_cells]
            for st in states:
                rows = read_rows(st.file)
                for seed in pick_seeds(rows, st.done, args.seeds):
                    if (st.cell.rows_name, st.cell.cell_id, seed) in done:
                        continue
                    t = time.process_time()
                    fresh = {r["metric"]: r["value"] for r in run_seed(st.cell, seed)}
                    cpu = time.process_time() - t
                    committed = rows[rows["seed"] == seed]
                    agrees, worst, differing = compare(committed, fresh)
                    # the seconds the plan compares a re-timing with: CPU where the row records them
                    committed_s = float(recorded_seconds(committed).iloc[0])
                    row = {"rows_name": st.cell.rows_name, "cell_id": st.cell.cell_id, "seed": seed, "cpu_s": cpu,
                           "committed_s": committed_s, "agrees": agrees, "worst_rel": worst,
                           "code_version": version, "date": datetime.now(UTC).strftime("%Y-%m-%d")}
                    append_retimed_row(out, row)
                    print(f"{st.cell.label} seed {seed}: {cpu:.1f} CPU-s (committed {row['committed_s']:.1f} s); "
                          + ("values reproduced" if agrees else f"DIFFERS: {differing}"), flush=True)
    except SplBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
