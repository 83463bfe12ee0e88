"""Drift check: compare a rerun of a small fixed set of configurations with committed numbers.

The cases and their run live in :mod:`spl_bench.runner.smoke` (``SMOKE_CASES``, ``run_smoke``);
``scripts/reproduce_tables.py --smoke`` writes ``results/reference/smoke.csv`` from them and
``tests/test_drift.py`` reruns the same cases and fails when a number moved by more than the
tolerance (a change of method, protocol or data handling shows up as drift and needs a
deliberate regeneration of the reference).  This module only compares: the report does not
import the runner.
"""

from __future__ import annotations

import pandas as pd

from spl_bench.environment import describe

#: the columns that identify one number of the smoke results
KEY = ["experiment", "dataset", "noise", "method", "model", "sp", "selection", "seed", "metric"]


def reference_rows_like(reference: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """The reference rows of the (experiment, dataset, method, sp) cells present in ``fresh``."""
    cell = ["experiment", "dataset", "method", "sp"]
    return reference.merge(fresh[cell].drop_duplicates(), on=cell, how="inner")


def compare(reference: pd.DataFrame, fresh: pd.DataFrame, rtol: float = 1e-6, atol: float = 1e-9) -> list[str]:
    """Differences between two smoke results (empty when nothing drifted)."""
    # both sides carry an environment column (None where not recorded), so that a drift names both
    reference, fresh = (f if "environment" in f else f.assign(environment=None) for f in (reference, fresh))
    merged = reference.merge(fresh, on=KEY, how="outer", suffixes=("_ref", "_new"), indicator=True)
    problems = [f"row only in {side}: {dict(r[KEY])}" for side, part in (("reference", "left_only"),
                ("fresh run", "right_only")) for _, r in merged[merged["_merge"] == part].iterrows()]  # fmt: skip
    both = merged[merged["_merge"] == "both"]
    for col in ("value", "lam"):
        a, b = both[f"{col}_ref"], both[f"{col}_new"]
        same = ((a - b).abs() <= atol + rtol * b.abs()) | (a.isna() & b.isna())
        for _, r in both[~same].iterrows():
            where = (f" (reference made under: {describe(r['environment_ref'])}; "
                     f"rerun under: {describe(r['environment_new'])})")  # fmt: skip
            problems.append(f"{col} drifted for {dict(r[KEY])}: {r[f'{col}_ref']} -> {r[f'{col}_new']}{where}")
    return problems
