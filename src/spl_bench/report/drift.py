"""Drift check: rerun a small fixed set of configurations and compare with committed numbers.

``scripts/reproduce_tables.py --smoke`` writes ``results/reference/smoke.csv`` from
:data:`SMOKE_CASES`; ``tests/test_drift.py`` reruns the same cases and fails when a number
moved by more than the tolerance (a change of method, protocol or data handling shows up
as drift and needs a deliberate regeneration of the reference).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

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
KEY = ["experiment", "dataset", "noise", "method", "model", "sp", "selection", "seed", "metric"]


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


def reference_rows_like(reference: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """The reference rows of the (experiment, dataset, method, sp) cells present in ``fresh``."""
    cell = ["experiment", "dataset", "method", "sp"]
    return reference.merge(fresh[cell].drop_duplicates(), on=cell, how="inner")


def compare(reference: pd.DataFrame, fresh: pd.DataFrame, rtol: float = 1e-6, atol: float = 1e-9) -> list[str]:
    """Differences between two smoke results (empty when nothing drifted)."""
    merged = reference.merge(fresh, on=KEY, how="outer", suffixes=("_ref", "_new"), indicator=True)
    problems = [f"row only in {side}: {dict(r[KEY])}" for side, part in (("reference", "left_only"),
                ("fresh run", "right_only")) for _, r in merged[merged["_merge"] == part].iterrows()]  # fmt: skip
    both = merged[merged["_merge"] == "both"]
    for col in ("value", "lam"):
        a, b = both[f"{col}_ref"], both[f"{col}_new"]
        same = ((a - b).abs() <= atol + rtol * b.abs()) | (a.isna() & b.isna())
        for _, r in both[~same].iterrows():
            problems.append(f"{col} drifted for {dict(r[KEY])}: {r[f'{col}_ref']} -> {r[f'{col}_new']}")
    return problems
