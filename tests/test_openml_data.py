"""``data=openml``: any OpenML data set through the openml package (the loaders' one download function),
the rules of ``data=csv``; offline one line saying how to provide a local copy, exit code 2."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import requests

from spl_bench.data import load_dataset
from spl_bench.data.loaders import dataset_spec
from spl_bench.errors import ConfigError, DataError
from spl_bench.rowfiles import read_row_file
from spl_bench.runner.cli import main
from test_first_hour import spl

QUIET = ["progress=false", "print_table=false"]


class FakeOpenMLDataset:
    """What ``openml.datasets.get_dataset`` returns, for a small table with a categorical feature."""

    def __init__(self, frame: pd.DataFrame, default_target: str | None, name: str = "fake-set") -> None:
        self.frame, self.default_target_attribute, self.name = frame, default_target, name

    def get_data(self, target=None, dataset_format="dataframe"):
        assert dataset_format == "dataframe"
        if target is None:
            return self.frame, None, [], list(self.frame.columns)
        return self.frame.drop(columns=[target]), self.frame[target], [], list(self.frame.columns)


def fake_frame(n: int = 80) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    x = rng.normal(size=n)
    return pd.DataFrame({
        "x": x, "colour": pd.Categorical(rng.choice(["red", "green"], n)),
        "class": pd.Categorical(np.where(x + 0.3 * rng.normal(size=n) > 0, "2", "1")),
        "size": rng.normal(size=n) * 3 + 10,
    })  # fmt: skip


def openml_spec(**more: object) -> dict:
    return {**dataset_spec("openml"), **more}


@pytest.fixture
def fake_openml(monkeypatch):
    import openml

    calls: list[int] = []

    def get_dataset(oid, **_kw):
        calls.append(int(oid))
        return FakeOpenMLDataset(fake_frame(), "class")

    monkeypatch.setattr(openml.datasets, "get_dataset", get_dataset)
    return calls


@pytest.fixture
def no_network(monkeypatch):
    """``openml.datasets.get_dataset`` failing as it does here with no network."""
    import openml

    def refuse(oid, **_kw):
        raise requests.exceptions.ConnectionError(
            f"HTTPSConnectionPool(host='www.openml.org', port=443): Max retries exceeded with url: "
            f"/api/v1/xml/data/{oid}"
        )

    monkeypatch.setattr(openml.datasets, "get_dataset", refuse)


def test_an_openml_set_goes_through_the_table_rules(fake_openml):
    ds = load_dataset(openml_spec(openml_id=44))
    frame = fake_frame()
    assert fake_openml == [44] and ds.name == "openml_44" and ds.task == "classification"
    assert ds.meta["openml_name"] == "fake-set" and ds.meta["columns"] == ["x", "colour=green", "colour=red", "size"]
    np.testing.assert_array_equal(ds.y > 0, frame["class"].to_numpy() == "2")  # the larger label +1
    np.testing.assert_array_equal(ds.X[:, 1] == 1.0, frame["colour"].to_numpy() == "green")
    reg = load_dataset(openml_spec(openml_id=44, openml_target="size"))  # another target: a quantity
    assert reg.task == "regression" and reg.meta["target"] == "size"
    np.testing.assert_allclose(reg.y, frame["size"])


def test_no_id_no_target_and_bad_ids_are_one_line(fake_openml, monkeypatch):
    import openml

    with pytest.raises(ConfigError, match="data.openml_id=N"):
        load_dataset(openml_spec())
    with pytest.raises(ConfigError, match="data.openml_id must be >= 1"):
        load_dataset(openml_spec(openml_id=0))
    monkeypatch.setattr(openml.datasets, "get_dataset", lambda oid, **_: FakeOpenMLDataset(fake_frame(), None))
    with pytest.raises(DataError, match="has no default target; give its column with data.openml_target=COLUMN"):
        load_dataset(openml_spec(openml_id=44))


def test_offline_is_one_error_saying_how_to_provide_a_local_copy(no_network):
    with pytest.raises(DataError) as err:
        load_dataset(openml_spec(openml_id=1461))
    msg = str(err.value)
    assert "OpenML data set 1461 cannot be downloaded: no network" in msg
    assert "https://www.openml.org/d/1461" in msg and "data=csv data.path=FILE data.target=COLUMN" in msg
    assert "\n" not in msg


def test_offline_run_exits_with_one_line_and_no_folder(no_network, tmp_path, capsys):
    root = tmp_path / "runs"
    code, out, err = spl(capsys, "run", f"results_root={root}", "data=openml", "data.openml_id=1461", "model=svm",
                         *QUIET)
    lines = [ln for ln in (out + err).strip().splitlines() if ln.strip()]
    assert code not in (0, None) and len(lines) == 1, out + err
    assert lines[0].startswith("error: OpenML data set 1461 cannot be downloaded") and "data=csv" in lines[0]
    assert not root.exists() or not [p for p in root.rglob("*") if p.is_dir()]


def test_offline_without_a_mock_the_real_client_fails_the_same_way(monkeypatch, tmp_path, capsys):
    """The openml package itself, pointed at a port where nothing listens (no network, fast)."""
    import openml

    monkeypatch.setattr(openml.config, "server", "http://127.0.0.1:9/api/v1/xml")
    monkeypatch.setattr(openml.config, "connection_n_retries", 1, raising=False)
    monkeypatch.setattr(openml.config, "set_root_cache_directory", lambda *_: None, raising=False)
    code, out, err = spl(capsys, "run", f"results_root={tmp_path}", "data=openml", "data.openml_id=1461",
                         "model=svm", *QUIET)
    lines = [ln for ln in (out + err).strip().splitlines() if ln.strip()]
    assert code not in (0, None) and len(lines) == 1 and "OpenML data set 1461" in lines[0], out + err


def test_a_run_on_a_fake_openml_set(fake_openml, tmp_path, capsys):
    code = main(["run", f"results_root={tmp_path}", "data=openml", "data.openml_id=44", "model=svm",
                 "method=original", "protocol.n_runs=2", *QUIET])  # fmt: skip
    assert code == 0
    (results,) = tmp_path.rglob("*__*.csv")
    rows = read_row_file(results)
    assert set(rows["dataset"]) == {"openml_44"} and set(rows["metric"]) == {"accuracy", "selection_accuracy"}
