"""Data layer: loaders, binarisation, bad-input errors, noise injection."""

from __future__ import annotations

import gzip
import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.data import available_datasets, binarize, has_local_copy, inject_noise, load_dataset, n_corrupted
from spl_bench.data.loaders import frame_to_arrays
from spl_bench.errors import ConfigError, DataError


def write_csv(path, X, y):
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["target"] = y
    with gzip.open(path, "wt") as fh:
        frame.to_csv(fh, index=False)


def test_every_paper_dataset_has_a_config():
    names = set(available_datasets())
    paper = {
        "mfeat_pixel", "hiva_agnostic", "pendigits", "elevators", "ailerons", "music", "delta_elevators",
        "houses", "cadata", "magic_telescope", "nomao", "diabetes", "breast_cancer", "digits",
    }  # fmt: skip
    assert paper <= names


def test_offline_copies_load_with_manifest_shapes(data_dir):
    manifest = {e["name"]: e for e in json.loads((data_dir / "MANIFEST.json").read_text())}
    for name in ("music", "mfeat_pixel", "houses", "delta_elevators"):
        ds = load_dataset(name, data_dir)
        assert ds.X.shape == (manifest[name]["n_rows"], manifest[name]["n_features"])
    pen = load_dataset("pendigits", data_dir)
    assert pen.X.shape == (3498, 16)  # the UCI test split the paper reports
    assert load_dataset("pendigits_full", data_dir).X.shape == (10992, 16)
    mf = load_dataset("mfeat_pixel", data_dir)
    assert set(np.unique(mf.y)) == {-1.0, 1.0} and (mf.y > 0).sum() == 1000
    assert load_dataset("a8a", data_dir).meta["stand_in_for"] == "a6a, a7a"


def test_local_file_and_sha_check(tmp_path):
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10.0)
    write_csv(tmp_path / "toy.csv.gz", X, y)
    spec = {"name": "toy", "task": "regression", "source": "local", "file": "toy.csv.gz"}
    ds = load_dataset(spec, tmp_path)
    np.testing.assert_array_equal(ds.X, X)
    digest = hashlib.sha256((tmp_path / "toy.csv.gz").read_bytes()).hexdigest()
    load_dataset({**spec, "sha256": digest}, tmp_path)
    with pytest.raises(DataError, match="sha256"):
        load_dataset({**spec, "sha256": "0" * 64}, tmp_path)
    sliced = load_dataset({**spec, "rows": "7:"}, tmp_path)
    np.testing.assert_array_equal(sliced.y, [7.0, 8.0, 9.0])


def test_max_rows_thins_after_the_label_coding(tmp_path):
    """``max_rows`` keeps every k-th row after ``binarize``: a coding by file position keeps its classes."""
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)
    write_csv(tmp_path / "toy.csv.gz", X, y)
    spec = {"name": "toy", "task": "classification", "source": "local", "file": "toy.csv.gz",
            "binarize": {"kind": "first_rows", "n": 5}}  # fmt: skip
    thin = load_dataset({**spec, "max_rows": 7}, tmp_path)  # k = ceil(20 / 7) = 3: rows 0, 3, ..., 18
    np.testing.assert_array_equal(thin.X[:, 0], X[::3, 0])
    np.testing.assert_array_equal(thin.y, np.where(np.arange(0, 20, 3) < 5, -1.0, 1.0))
    assert len(load_dataset({**spec, "max_rows": 100}, tmp_path).y) == 20
    for bad in (0, -3, 2.5, "10", True):
        with pytest.raises(ConfigError, match="max_rows"):
            load_dataset({**spec, "max_rows": bad}, tmp_path)


def test_has_local_copy_is_whether_load_dataset_reads_without_a_download(tmp_path):
    spec = {"name": "toy", "task": "regression", "source": "local", "file": "toy.csv.gz", "openml_id": 1}
    assert not has_local_copy(spec, tmp_path)
    write_csv(tmp_path / "toy.csv.gz", np.ones((3, 2)), np.arange(3.0))
    assert has_local_copy(spec, tmp_path)
    assert not has_local_copy({**spec, "source": "openml"}, tmp_path)  # downloaded even with the file here
    assert has_local_copy({"name": "diabetes", "task": "regression", "source": "sklearn"}, tmp_path)


def test_missing_file_says_where_to_put_it(tmp_path):
    spec = {"name": "ghost", "task": "regression", "source": "local", "file": "ghost.csv.gz"}
    with pytest.raises(DataError, match="SPL_BENCH_DATA_DIR") as err:
        load_dataset(spec, tmp_path)
    assert str(tmp_path / "ghost.csv.gz") in str(err.value)


def test_openml_fallback_fails_clearly_without_network(tmp_path, monkeypatch):
    import openml

    monkeypatch.setattr(openml.config, "server", "http://127.0.0.1:9/api/v1/xml")
    monkeypatch.setattr(openml.config, "connection_n_retries", 1, raising=False)
    monkeypatch.setattr(openml.config, "set_root_cache_directory", lambda *_: None, raising=False)
    spec = {"name": "nomao", "task": "classification", "source": "local", "file": "nomao.csv.gz", "openml_id": 1486}
    with pytest.raises(DataError, match="OpenML dataset 1486 failed") as err:
        load_dataset(spec, tmp_path)
    assert "SPL_BENCH_DATA_DIR" in str(err.value)


def test_openml_frame_conversion():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": pd.Categorical(["x", "y", "x"])})
    X, y = frame_to_arrays(frame, pd.Series(pd.Categorical(["P", "N", "P"])))
    np.testing.assert_array_equal(X, [[1, 0], [2, 1], [3, 0]])
    assert sorted(set(y)) == [0.0, 1.0]


def test_binarize_kinds_and_errors():
    y = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    np.testing.assert_array_equal(binarize(y, {"kind": "threshold", "value": 5}, "d"), [-1] * 5 + [1] * 5)
    np.testing.assert_array_equal(binarize(y, {"kind": "one_vs_rest", "positive": 3}, "d") > 0, y == 3)
    np.testing.assert_array_equal(binarize(y, {"kind": "first_rows", "n": 4}, "d"), [-1] * 4 + [1] * 6)
    np.testing.assert_array_equal(binarize(np.array([3, 7, 7]), None, "d"), [-1, 1, 1])
    with pytest.raises(DataError, match="cannot be made binary"):
        binarize(y, None, "d")
    with pytest.raises(DataError, match="single class"):
        binarize(y, {"kind": "threshold", "value": 100}, "d")
    with pytest.raises(ConfigError, match="unknown binarize kind"):
        binarize(y, {"kind": "median"}, "d")


def test_nan_features_rejected(tmp_path):
    X = np.ones((6, 2))
    X[2, 1] = np.nan
    write_csv(tmp_path / "nan.csv.gz", X, np.arange(6.0))
    with pytest.raises(DataError, match="NaN"):
        load_dataset({"name": "nan", "task": "regression", "file": "nan.csv.gz"}, tmp_path)


def test_unknown_dataset_lists_valid_names():
    with pytest.raises(ConfigError, match="valid datasets: .*music"):
        load_dataset("not_a_dataset")


@settings(max_examples=40, deadline=None)
@given(n=st.integers(10, 300), rate=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_noise_rate_is_honoured_exactly(n, rate, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0)
    out = inject_noise(X, y, "classification", "uniform_flip", rate, np.random.default_rng(seed))
    assert len(out.idx) == n_corrupted(n, rate) == int(np.floor(rate * n + 0.5))
    changed = np.flatnonzero(out.y != y)
    np.testing.assert_array_equal(changed, out.idx)
    np.testing.assert_array_equal(out.X, X)
    yr = rng.normal(size=n)
    for kind in ("target_gaussian", "gaussian_shift", "dspl_uniform"):
        r = inject_noise(X, yr, "regression", kind, rate, np.random.default_rng(seed))
        assert len(r.idx) == n_corrupted(n, rate)
        untouched = np.setdiff1d(np.arange(n), r.idx)
        np.testing.assert_array_equal(r.y[untouched], yr[untouched])
        np.testing.assert_array_equal(r.X[untouched], X[untouched])


def test_near_boundary_flip_picks_rows_close_to_the_hyperplane():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    out = inject_noise(X, y, "classification", "near_boundary_flip", 0.1, rng, pool=0.3)
    assert len(out.idx) == 40
    # every flipped row lies within the 30 % closest to the boundary x0 = 0
    cutoff = np.quantile(np.abs(X[:, 0]), 0.32)
    assert np.all(np.abs(X[out.idx, 0]) <= cutoff)


def test_noise_kind_must_fit_the_task():
    X, y = np.zeros((10, 2)), np.ones(10)
    with pytest.raises(ConfigError, match="for regression"):
        inject_noise(X, y, "classification", "target_gaussian", 0.2, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="valid noise kinds"):
        inject_noise(X, y, "regression", "salt", 0.2, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="rate"):
        inject_noise(X, y, "regression", "target_gaussian", 1.5, np.random.default_rng(0))
