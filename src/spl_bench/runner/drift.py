"""The drift check's cells, and its reference values under other BLAS kernel families.

The drift check (``tests/test_reproduce.py``) reruns seeds 0-1 of the cheapest committed cell of
every table and compares each metric with the committed row (rtol 1e-6): a change of code that
moves a published number fails it.

OpenBLAS picks its compute kernels by the CPU (threadpoolctl's ``architecture``; some machines
set ``OPENBLAS_CORETYPE`` themselves, because older OpenBLAS builds fail on their processors), and
kernels of another family round differently.  Most methods absorb that; a method that amplifies
rounding does not: MOSPL's evolutionary search, whose seed-0 accuracy on the drift cells of
Tables 15 and 16 is 0.34 and 0.8297 with the ``SkylakeX`` (and ``Cooperlake``) kernels the
committed rows were made with, and 0.318 and 0.8103 with the ``Haswell`` kernels (Table 16's
also with ``Zen``).
Neither is wrong; they are two environments.  So the values a drift cell gives under a kernel
family other than the committed rows' are recorded once, with their environment and code
version (:data:`REFERENCE_FILE`, ``scripts/drift_reference.py``), and a rerun passes when it
equals the committed value or the reference of the family it runs under.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench.environment import code_version, environment_json
from spl_bench.environment import kernel_family as row_kernel_family
from spl_bench.paths import repo_root
from spl_bench.report.ours import load_ours
from spl_bench.rowstore import atomic_write_csv
from spl_bench.table_registry import TABLES

#: seeds of a drift cell that are rerun (those committed among them)
DRIFT_SEEDS = (0, 1)
#: a drift cell whose committed runs took longer than this (mean seconds per run) is rerun by
#: ``make test-drift-slow`` (in CI after the default suite), not by the default suite, which stays
#: under 10 minutes: the linear-kernel tables have no cell faster than a few minutes
DRIFT_FAST_S = 150.0
#: the drift cells' values under kernel families other than the committed rows'
REFERENCE_FILE = Path("results") / "reference" / "drift_kernels.csv"
REFERENCE_COLUMNS = ["table", "cell", "seed", "metric", "value", "kernel", "code_version", "environment"]


def drift_cells() -> list[tuple[str, str, bool]]:
    """``(table key, cell id, slow)`` of the cheapest committed cell of every table with committed
    rows (mean seconds over its seeds 0-1); ``slow`` where that is over :data:`DRIFT_FAST_S`."""
    out = []
    for key, spec in TABLES.items():
        rows = load_ours(spec[0])
        if rows.empty:
            continue
        cand = rows[rows["seed"].isin(DRIFT_SEEDS)]
        if cand.empty:
            continue
        times = cand.groupby("cell")["time_s"].mean()
        out.append((key, str(times.idxmin()), float(times.min()) > DRIFT_FAST_S))
    return out


def kernel_family() -> str:
    """The kernel family of numpy's BLAS in this process, or ``"unknown"``: read from the
    environment this process records in its rows (:func:`spl_bench.environment.kernel_family`),
    so the drift check and the reports' pooling warning cannot disagree on it."""
    return row_kernel_family(environment_json()) or "unknown"


def _path(path: Path | None) -> Path:
    return path if path is not None else repo_root() / REFERENCE_FILE


def reference_values(key: str, cell_id: str, seed: int, kernel: str, path: Path | None = None) -> dict[str, float]:
    """The recorded values (by metric) of seed ``seed`` of a drift cell under ``kernel``; empty if none."""
    path = _path(path)
    if not path.is_file():
        return {}
    ref = pd.read_csv(path, dtype={"table": str})
    hit = ref[(ref["table"] == key) & (ref["cell"] == cell_id) & (ref["seed"] == seed) & (ref["kernel"] == kernel)]
    return {str(r.metric): float(r.value) for r in hit.itertuples()}


def record_reference(key: str, cell_id: str, seed: int, rows: list[dict[str, Any]], kernel: str,
                     path: Path | None = None) -> Path:
    """Record one rerun seed of a drift cell under ``kernel`` (replacing an older record of it)."""
    path = _path(path)
    new = pd.DataFrame([{"table": key, "cell": cell_id, "seed": seed, "metric": r["metric"], "value": r["value"],
                         "kernel": kernel, "code_version": code_version(), "environment": environment_json()}
                        for r in rows], columns=REFERENCE_COLUMNS)
    old = pd.read_csv(path, dtype={"table": str}) if path.is_file() else pd.DataFrame(columns=REFERENCE_COLUMNS)
    same = (old["table"] == key) & (old["cell"] == cell_id) & (old["seed"] == seed) & (old["kernel"] == kernel)
    frame = pd.concat([old[~same], new], ignore_index=True) if len(old[~same]) else new
    atomic_write_csv(frame.sort_values(["table", "cell", "seed", "kernel", "metric"], kind="stable"), path)
    return path
