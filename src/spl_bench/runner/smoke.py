"""The smoke run of the drift check: a small fixed set of configurations, run through the CLI.

``scripts/reproduce_tables.py --smoke`` writes ``results/reference/smoke.csv`` from
:data:`SMOKE_CASES`; ``tests/test_drift.py`` reruns the same cases and compares them with
:func:`spl_bench.report.drift.compare` (the comparison stays in the report, which does not
import the runner).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spl_bench.report.drift import KEY
from spl_bench.report.tables import read_results
from spl_bench.runner.cli import main as cli_main

#: Cheap paper rows (2 runs each): Hydra overrides of ``spl-bench run``.
SMOKE_CASES: list[list[str]] = [
    ["experiment=gaga_table2", "+table_row=t2_music_n30", "method=original"],
    ["experiment=gaga_table2", "+table_row=t2_music_n30", "method=acs", "method.lam_step=4.0"],
    ["experiment=gaga_table3", "+table_row=t3_music_n30", "method=acs", "method.lam_step=5.0"],
    ["experiment=gaga_table2", "+table_row=t2_delta_elevators_n30", "method=original"],
    ["experiment=gaga_table2", "+table_row=t2_pendigits_n20", "method=original"],
    ["experiment=gaga_table5", "+table_row=t5_pendigits_n20", "method=acs", "method.lam_step=5.0"],
    ["experiment=gaga_table2", "+table_row=t2_music_n30", "method=gaga"],  # the exact age-path, ~20 s
    ["experiment=outlier_path_table2", "data=breast_cancer", "method=outlier_path", "method.variant=theta"],
]
SMOKE_RUNS = 2


def run_smoke(results_root: str | Path, cases: list[list[str]] | None = None) -> pd.DataFrame:
    """Run the smoke cases (default: all) into ``results_root``; return their rows (key columns + value, lam)."""
    for case in SMOKE_CASES if cases is None else cases:
        code = cli_main(
            ["run", f"results_root={results_root}", f"protocol.n_runs={SMOKE_RUNS}",
             "progress=false", "print_table=false", *case]
        )  # fmt: skip
        if code:
            raise RuntimeError(f"smoke case {case} failed with exit code {code}")
    frame = read_results([results_root])
    return frame[[*KEY, "value", "lam"]].sort_values(KEY).reset_index(drop=True)
