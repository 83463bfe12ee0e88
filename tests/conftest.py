"""Shared fixtures: the local dataset directory and small standardised data sets."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from spl_bench.paths import repo_root

if os.environ.get("PYTEST_XDIST_WORKER"):
    # one BLAS thread per test worker: with two workers on two cores, multithreaded BLAS
    # oversubscribes the machine and small products slow down many times over
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1)


def shared_data_dir() -> Path | None:
    env = os.environ.get("SPL_BENCH_DATA_DIR")
    cand = Path(env) if env else repo_root().parent / "shared" / "datasets"
    return cand if (cand / "MANIFEST.json").is_file() else None


@pytest.fixture
def data_dir(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The offline dataset copies; required in CI (SPL_BENCH_REQUIRE_DATA=1), else skipped.

    The loader is pointed at them too (``SPL_BENCH_DATA_DIR``), so a test that runs a cell finds
    the same folder whether pytest was started by ``make`` (which exports it) or by hand.
    """
    d = shared_data_dir()
    if d is None:
        if os.environ.get("SPL_BENCH_REQUIRE_DATA"):
            pytest.fail("SPL_BENCH_DATA_DIR does not point at the offline dataset copies")
        pytest.skip("offline dataset copies not found (set SPL_BENCH_DATA_DIR)")
    monkeypatch.setenv("SPL_BENCH_DATA_DIR", str(d))
    return d


def _std(a: np.ndarray) -> np.ndarray:
    return (a - a.mean(axis=0)) / a.std(axis=0)


@pytest.fixture(scope="session")
def diabetes() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_diabetes(return_X_y=True)
    return _std(X), _std(y)


@pytest.fixture(scope="session")
def cancer_small() -> tuple[np.ndarray, np.ndarray]:
    """150 rows of breast cancer, standardised, labels -1/+1, 10 % labels flipped."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(y), 150, replace=False)
    X, y = _std(X[idx]), 2.0 * y[idx] - 1.0
    flip = rng.choice(150, 15, replace=False)
    y[flip] = -y[flip]
    return X, y
