"""``data=csv``: any CSV file, its target anywhere, the task inferred, text features one-hot encoded,
missing values refused or dropped, the file's sha256 in the config hash; runs and reports end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from spl_bench.data import binarize, load_dataset
from spl_bench.data.tabular import MAX_CLASSES, infer_task
from spl_bench.errors import ConfigError, DataError
from spl_bench.paths import config_dir
from spl_bench.rowfiles import config_hash, read_row_file
from spl_bench.runner.run_config import identity
from test_first_hour import one_line_error, spl

QUIET = ["progress=false", "print_table=false"]


def spec(path: Path, target: str, **more: object) -> dict:
    """``configs/data/csv.yaml`` with ``data.path`` / ``data.target`` (and more keys) as Hydra resolves it."""
    overrides = ["data=csv", f"data.path={path}", f"data.target={target}", *(f"data.{k}={v}" for k, v in more.items())]
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    return OmegaConf.to_container(cfg.data, resolve=True)


def cancer_csv(path: Path, rows: int | None = None) -> pd.DataFrame:
    """Breast cancer with a text label in the first column and a text feature (``site``) last."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :5].copy()
    frame.insert(0, "diagnosis", np.where(y == 1, "benign", "malignant"))
    frame["site"] = np.random.default_rng(0).choice(["north", "south", "east"], len(frame))
    if rows is not None:
        frame = frame.sample(rows, random_state=0).reset_index(drop=True)
    frame.to_csv(path, index=False)
    return frame


# ----------------------------------------------------------------------------- loading
def test_text_label_in_the_first_column_is_coded_as_the_bundled_sets_are(tmp_path):
    frame = cancer_csv(tmp_path / "cancer.csv")
    ds = load_dataset(spec(tmp_path / "cancer.csv", "diagnosis"))
    assert ds.name == "cancer" and ds.task == "classification"
    # the bundled sets' rule (spl_bench.data.binarize, kind auto): the smaller label -1, the larger +1
    expected = binarize(frame["diagnosis"].to_numpy(), None, "x")
    np.testing.assert_array_equal(ds.y, expected)
    np.testing.assert_array_equal(ds.y > 0, frame["diagnosis"].to_numpy() == "malignant")
    # five numeric features as they are, the text column one-hot: one 0/1 column per value, sorted
    np.testing.assert_allclose(ds.X[:, :5], frame.iloc[:, 1:6].to_numpy())
    assert ds.meta["columns"][5:] == ["site=east", "site=north", "site=south"]
    np.testing.assert_array_equal(ds.X[:, 5:].sum(axis=1), 1.0)
    np.testing.assert_array_equal(ds.X[:, 6] == 1.0, frame["site"].to_numpy() == "north")


def test_any_column_order_gives_the_same_data(tmp_path):
    frame = cancer_csv(tmp_path / "a.csv")
    frame[list(reversed(frame.columns))].to_csv(tmp_path / "b.csv", index=False)
    a, b = load_dataset(spec(tmp_path / "a.csv", "diagnosis")), load_dataset(spec(tmp_path / "b.csv", "diagnosis"))
    np.testing.assert_array_equal(a.y, b.y)
    order = [b.meta["columns"].index(c) for c in a.meta["columns"]]
    np.testing.assert_array_equal(a.X, b.X[:, order])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.integers(2, 30), n=st.integers(31, 80), seed=st.integers(0, 10_000))
def test_task_inference_rule(k, n, seed):
    """Whole numbers with at most MAX_CLASSES distinct values are classes; more, or fractions, a quantity;
    text and two distinct values are always classes."""
    rng = np.random.default_rng(seed)
    ints = pd.Series(np.r_[np.arange(k), rng.integers(0, k, n - k)])
    assert infer_task(ints) == ("classification" if k <= MAX_CLASSES else "regression")
    fractions = pd.Series(rng.normal(size=n))
    assert infer_task(fractions) == "regression"
    assert infer_task(pd.Series(np.where(fractions > 0, 0.25, 7.5))) == "classification"  # two values
    assert infer_task(ints.map(lambda v: f"class {v}")) == "classification"


def test_task_can_be_overridden_and_a_numeric_multiclass_target_says_how(tmp_path):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"grade": rng.integers(1, 6, 60), "x1": rng.normal(size=60), "x2": rng.normal(size=60)})
    frame.to_csv(tmp_path / "g.csv", index=False)
    with pytest.raises(DataError) as err:  # five whole-number grades: classes, and more than two
        load_dataset(spec(tmp_path / "g.csv", "grade"))
    msg = str(err.value)
    assert "5 classes (1, 2, 3, 4, 5)" in msg and "one_vs_rest" in msg and "data.task=regression" in msg
    assert load_dataset(spec(tmp_path / "g.csv", "grade", task="regression")).task == "regression"
    ovr = load_dataset({**spec(tmp_path / "g.csv", "grade"), "binarize": {"kind": "one_vs_rest", "positive": 5}})
    np.testing.assert_array_equal(ovr.y > 0, frame["grade"].to_numpy() == 5)


def test_text_multiclass_lists_its_labels_and_the_one_vs_rest_rule(tmp_path):
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    X.assign(kind=y.map({0: "barolo", 1: "grignolino", 2: "barbera"})).to_csv(tmp_path / "wine.csv", index=False)
    with pytest.raises(DataError) as err:
        load_dataset(spec(tmp_path / "wine.csv", "kind"))
    msg = str(err.value)
    assert "3 classes (barbera, barolo, grignolino)" in msg
    assert "+data.binarize.kind=one_vs_rest +data.binarize.positive=<label>" in msg and "threshold" not in msg


def test_missing_values_are_refused_naming_the_columns_or_their_rows_dropped(tmp_path):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"y": rng.normal(size=40), "a": rng.normal(size=40), "b": rng.normal(size=40),
                          "c": rng.normal(size=40)})  # fmt: skip
    frame.loc[[3, 7], "a"] = np.nan
    frame.loc[[7, 11, 12], "c"] = np.nan
    frame.to_csv(tmp_path / "holes.csv", index=False)
    with pytest.raises(DataError) as err:
        load_dataset(spec(tmp_path / "holes.csv", "y"))
    msg = str(err.value)
    assert "a (2)" in msg and "c (3)" in msg and " b " not in msg and "4 row(s)" in msg
    assert "data.missing=drop_rows" in msg and "data.drop=[a,c]" in msg
    ds = load_dataset(spec(tmp_path / "holes.csv", "y", missing="drop_rows"))
    keep = frame.notna().all(axis=1).to_numpy()
    assert ds.n_samples == keep.sum() == 36 and ds.meta["rows_dropped"] == 4
    np.testing.assert_allclose(ds.y, frame.loc[keep, "y"])
    dropped = load_dataset(spec(tmp_path / "holes.csv", "y", drop="[a,c]"))  # the columns left out instead
    assert dropped.n_samples == 40 and dropped.meta["columns"] == ["b"]


def test_text_columns_with_many_values_are_refused_by_name(tmp_path):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"id": [f"row{i}" for i in range(50)], "x": rng.normal(size=50),
                          "label": rng.choice(["yes", "no"], 50)})  # fmt: skip
    frame.to_csv(tmp_path / "ids.csv", index=False)
    with pytest.raises(DataError) as err:
        load_dataset(spec(tmp_path / "ids.csv", "label"))
    assert "id (50 values)" in str(err.value) and "data.drop=[id]" in str(err.value)
    assert load_dataset(spec(tmp_path / "ids.csv", "label", drop="[id]")).meta["columns"] == ["x"]
    assert load_dataset(spec(tmp_path / "ids.csv", "label", max_categories=50)).n_features == 51
    with pytest.raises(DataError, match="data.drop names no column"):
        load_dataset(spec(tmp_path / "ids.csv", "label", drop="[nope]"))


def test_bad_paths_and_targets_are_one_line_errors(tmp_path):
    cancer_csv(tmp_path / "c.csv")
    with pytest.raises(DataError, match="no column 'Diagnosis' for data.target; the columns: diagnosis"):
        load_dataset(spec(tmp_path / "c.csv", "Diagnosis"))
    with pytest.raises(DataError, match="not found"):
        load_dataset(spec(tmp_path / "none.csv", "diagnosis"))
    with pytest.raises(ConfigError, match="data.path=FILE data.target=COLUMN"):
        load_dataset("csv")
    with pytest.raises(ConfigError, match="data.task must be one of"):
        load_dataset(spec(tmp_path / "c.csv", "diagnosis", task="ranking"))
    with pytest.raises(DataError, match="text values.*use data.task=classification"):
        load_dataset(spec(tmp_path / "c.csv", "diagnosis", task="regression"))


# ----------------------------------------------------------------------------- the sha256 in the config hash
def test_the_files_sha256_is_in_the_config_and_its_hash(tmp_path):
    import hashlib

    cancer_csv(tmp_path / "c.csv")
    overrides = ["data=csv", f"data.path={tmp_path / 'c.csv'}", "data.target=diagnosis", "model=svm"]

    def ident() -> dict:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            return identity(compose("config", overrides=overrides))

    first = ident()
    assert first["data"]["sha256"] == hashlib.sha256((tmp_path / "c.csv").read_bytes()).hexdigest()
    frame = pd.read_csv(tmp_path / "c.csv")
    frame.iloc[:-1].to_csv(tmp_path / "c.csv", index=False)  # the same path, other content: another configuration
    second = ident()
    assert second["data"]["sha256"] == hashlib.sha256((tmp_path / "c.csv").read_bytes()).hexdigest()
    assert config_hash(first) != config_hash(second)
    with pytest.raises(DataError, match="does not match data.sha256"):  # a fixed sha256 is checked
        load_dataset({**spec(tmp_path / "c.csv", "diagnosis"), "sha256": first["data"]["sha256"]})


# ----------------------------------------------------------------------------- end to end
def test_a_two_method_sweep_on_a_csv_and_its_report(tmp_path, capsys, monkeypatch):
    """The issue's command: a CSV with a text label in its first column, ``-m method=original,acs``, then
    ``spl-bench report`` on the folder shows both methods and their paired test."""
    monkeypatch.chdir(tmp_path)
    cancer_csv(tmp_path / "cancer.csv", rows=120)
    root = tmp_path / "runs"
    code, _, err = spl(capsys, "run", "-m", f"results_root={root}", "method=original,acs", "data=csv",
                       "data.path=cancer.csv", "data.target=diagnosis", "model=logistic", "protocol.n_runs=6",
                       *QUIET)  # fmt: skip
    assert code == 0, err
    files = sorted(root.rglob("*__*.csv"))
    assert [f.name.split("method=")[1].split(",")[0].split("__")[0] for f in files] == ["acs", "original"]
    assert {f.parent for f in files} == {root / "default"} and all(len(read_row_file(f)) == 12 for f in files)
    hashed = json.loads(files[0].with_suffix(".json").read_text())  # the config the row file's hash names
    assert files[0].stem.endswith(f"__{config_hash(hashed)}") and len(hashed["data"]["sha256"]) == 64
    code, out, err = spl(capsys, "report", str(root / "default"), "--out", str(tmp_path / "rep"))
    assert code == 0, err
    assert "paired tests" in out and "acs vs original" in out and "One data set" in out
    tests = pd.read_csv(tmp_path / "rep" / "table_significance.csv")
    assert len(tests) == 1 and tests["n_pairs"].iloc[0] == 6 and tests["row"].iloc[0] == "cancer"
    assert bool(tests["higher_is_better"].iloc[0])  # accuracy: higher is better
    assert "acs vs original" in (tmp_path / "rep" / "table.md").read_text()


def test_run_errors_are_one_line_and_leave_no_folder(tmp_path, capsys):
    cancer_csv(tmp_path / "c.csv", rows=60)
    root = tmp_path / "runs"
    code, _, err = spl(capsys, "run", f"results_root={root}", "data=csv", f"data.path={tmp_path / 'c.csv'}",
                       "data.target=diagnosis", *QUIET)  # fmt: skip
    assert code == 2 and "use model=svm or model=logistic" in one_line_error(err)
    code, _, err = spl(capsys, "run", f"results_root={root}", "data=csv", "model=svm", *QUIET)
    assert code == 2 and "data.path=FILE data.target=COLUMN" in one_line_error(err)
    code, _, err = spl(capsys, "run", f"results_root={root}", "data=csv", f"data.path={tmp_path / 'c.csv'}",
                       "data.target=label", "model=svm", *QUIET)  # fmt: skip
    assert code == 2 and "no column 'label'" in one_line_error(err)
    assert not root.exists() or not [p for p in root.rglob("*") if p.is_dir()]  # refused: nothing left behind
