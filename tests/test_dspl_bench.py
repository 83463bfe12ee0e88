"""``scripts/bench_dspl.py``: the machine's ceiling, the efficiency columns and lines, one small run."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from spl_bench.paths import repo_root

SCRIPT = repo_root() / "scripts" / "bench_dspl.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The script as module ``bench_dspl``, importable by name (spawned processes unpickle its loop by name)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        yield importlib.import_module("bench_dspl")
    finally:
        sys.path.remove(str(SCRIPT.parent))
        sys.modules.pop("bench_dspl", None)


def test_efficiency_is_the_speedup_over_one_blas_thread_divided_by_the_ceiling(bench):
    df = pd.DataFrame([
        {"backend": "serial", "workers": 1, "blas_threads": 1, "batches": 8, "s_per_outer": 2.0},
        {"backend": "serial", "workers": 1, "blas_threads": 2, "batches": 8, "s_per_outer": 1.5},
        {"backend": "dask", "workers": 1, "blas_threads": 1, "batches": 8, "s_per_outer": 2.5},
        {"backend": "dask", "workers": 2, "blas_threads": 1, "batches": 8, "s_per_outer": 1.25},
    ])
    out = bench.efficiency(df, {1: 1.0, 2: 1.76})
    dask = out[out.backend == "dask"].set_index("workers")
    assert dask.speedup.tolist() == [0.8, 1.6]  # against serial with 1 BLAS thread, not 2
    assert dask.ceiling.tolist() == [1.0, 1.76]
    np.testing.assert_allclose(dask.efficiency, [0.8, 1.6 / 1.76])
    assert out[out.backend == "serial"].efficiency.isna().all()


def test_the_ceiling_loop_runs_alone_and_side_by_side(bench):
    c = bench.ceiling([1, 2], reps=30, p=8)
    assert c["ceiling"][1] == 1.0 and set(c["side_by_side"]) == {2}
    assert c["one"] > 0 and c["side_by_side"][2] > 0
    assert c["ceiling"][2] == pytest.approx(min(2.0, 2 * c["one"] / c["side_by_side"][2]))


@pytest.mark.slow
def test_a_small_run_writes_the_efficiency_lines(tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--n", "20000", "--p", "10", "--batches", "4", "--workers", "2",
         "--serial-threads", "1", "--outer", "2", "--repeats", "1", "--ceiling-reps", "50", "--out", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "efficiency n=20000 m=4: Dask 2 worker(s)" in proc.stdout
    df = pd.read_csv(tmp_path / "dspl_scaling_n20000_p10.csv")
    dask = df[df.backend == "dask"].iloc[0]
    assert dask.roundtrip_s > 0 and dask.speedup > 0 and dask.ceiling > 0
    assert dask.efficiency == pytest.approx(dask.speedup / dask.ceiling)
    md = (tmp_path / "dspl_scaling_n20000_p10.md").read_text()
    assert "ceiling loop (4096 x p, one BLAS thread), before:" in md and "after:" in md
    assert "| roundtrip_s |" in md or "roundtrip_s" in md.splitlines()[2]
