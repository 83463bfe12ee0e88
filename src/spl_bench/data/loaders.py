"""Dataset loading: scikit-learn's bundled sets, local files and OpenML.

A dataset is described by its config ``configs/data/<name>.yaml``::

    name: music
    task: regression            # or classification
    source: local               # sklearn | local | openml
    file: music.csv.gz          # local: file under the data directory (CSV, last column `target`)
    sha256: ...                 # optional integrity check of the local file
    openml_id: 4544             # local/openml: the OpenML id (used when no local file exists)
    openml_target: V100         # OpenML target column (default: the dataset's default target)
    rows: null                  # optional row slice "start:stop" (pendigits' UCI test split: "7494:")
    binarize: null              # classification: see spl_bench.data.dataset.binarize
    max_rows: (absent)          # optional: keep every k-th row (after rows and binarize) so that at most
                                # max_rows remain; a quick look or a smoke test (`+data.max_rows=300`)

A ``local`` dataset whose file is missing is fetched from OpenML (with the
``openml`` package and its cache) when ``openml_id`` is set; with no network the
error says where to put the file.

A researcher's own data: ``source: csv`` (``configs/data/csv.yaml``: any CSV file, ``path`` and
``target``) and ``source: openml`` (``configs/data/openml.yaml``: any OpenML data set,
``openml_id`` and ``openml_target``) go through the rules of :mod:`spl_bench.data.tabular`
(columns, missing values, one-hot encoding of text features, ``task: auto``).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.data import tabular
from spl_bench.data.dataset import Dataset, binarize
from spl_bench.errors import ConfigError, DataError, check_int, unknown_name
from spl_bench.paths import DATA_DIR_ENV, config_dir, data_dir

SKLEARN_LOADERS = ("diabetes", "breast_cancer", "digits", "iris", "wine")
#: sources of a researcher's own table: the rules of :mod:`spl_bench.data.tabular`, ``task: auto`` allowed
TABLE_SOURCES = ("csv", "openml")


def available_datasets() -> list[str]:
    """Names of the dataset configs in ``configs/data/``."""
    return sorted(p.stem for p in (config_dir() / "data").glob("*.yaml"))


def dataset_spec(name: str) -> dict[str, Any]:
    """The config of dataset ``name`` as a plain dict."""
    from omegaconf import OmegaConf

    path = config_dir() / "data" / f"{name}.yaml"
    if not path.is_file():
        raise unknown_name("dataset", name, available_datasets())
    spec = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    assert isinstance(spec, dict)
    spec.setdefault("name", name)
    return spec


def has_local_copy(name_or_spec: str | dict[str, Any], data_dir_: str | Path | None = None) -> bool:
    """Whether :func:`load_dataset` reads the dataset without a download: it ships with
    scikit-learn, or its file is in the data directory (an OpenML dataset may still sit in
    openml's own cache; it counts as not local here)."""
    spec = dataset_spec(name_or_spec) if isinstance(name_or_spec, str) else dict(name_or_spec)
    source = spec.get("source", "local")
    if source == "sklearn":
        return True
    if source == "csv":
        try:
            return tabular.csv_path(spec).is_file()
        except ConfigError:
            return False
    if source != "local" or spec.get("file") is None:  # source openml: always downloaded
        return False
    return (data_dir(data_dir_ or spec.get("root")) / str(spec["file"])).is_file()


def load_dataset(name_or_spec: str | dict[str, Any], data_dir_: str | Path | None = None) -> Dataset:
    """Load a dataset by config name (``"music"``) or from a spec dict.

    Parameters
    ----------
    name_or_spec : str or dict
        A name from ``configs/data`` or the content of such a config.
    data_dir_ : path, optional
        Directory of local files; default ``data.root``, ``$SPL_BENCH_DATA_DIR`` or a user cache.
    """
    spec = dataset_spec(name_or_spec) if isinstance(name_or_spec, str) else dict(name_or_spec)
    source = spec.get("source", "local")
    name = str(spec.get("name") or _default_name(spec))
    task = spec.get("task")
    if source not in TABLE_SOURCES and task not in ("regression", "classification"):
        raise ConfigError(f"dataset {name!r}: task must be 'regression' or 'classification', got {task!r}")
    extra: dict[str, Any] = {}
    if source in TABLE_SOURCES:
        spec = {**spec, "root": data_dir_ or spec.get("root")}
        load_table = _load_own_csv if source == "csv" else _load_openml_table
        X, y, task, origin, extra = load_table(spec, name)
    elif source == "sklearn":
        if spec.get("file"):
            raise ConfigError(f"dataset {name!r} is bundled with scikit-learn and does not read data.file "
                              f"({spec['file']}); to run your own file, override the file of a local dataset "
                              "(e.g. data=australian data.file=/path/file.csv.gz data.sha256=null)")  # fmt: skip
        X, y = _load_sklearn(spec.get("sklearn_name", name))
        origin = f"scikit-learn {spec.get('sklearn_name', name)}"
    elif source == "local":
        path = data_dir(data_dir_ or spec.get("root")) / str(spec["file"])
        if path.is_file():
            X, y = _load_csv(path, spec)
            origin = str(path)
        elif spec.get("openml_id") is not None:
            X, y = _load_openml_or_explain(spec, path)
            origin = f"OpenML {spec['openml_id']}"
        else:
            raise DataError(_missing_file_message(name, path))
    else:
        raise ConfigError(f"dataset {name!r}: unknown source {source!r}; valid: sklearn, local, csv, openml")
    X, y = _slice_rows(X, y, spec.get("rows"), name)
    _check_rows_and_target(X, y, name, origin)
    if task == "classification":
        y = binarize(y, spec.get("binarize"), name, numeric_hint=source in TABLE_SOURCES)
    else:
        try:
            y = np.asarray(y, dtype=float)
        except (TypeError, ValueError):
            how = "a classification config (task: classification)"
            how = "data.task=classification" if source in TABLE_SOURCES else how
            raise DataError(f"dataset {name!r} ({origin}): the target has text values, a regression target must be "
                            f"numeric; for class labels use {how}") from None
    # after binarize: a label coding by file position (mfeat's first_rows) keeps its meaning
    X, y = _thin_rows(X, y, spec.get("max_rows"), name)
    meta = {"origin": origin, "binarize": spec.get("binarize"), "rows": spec.get("rows")}
    if spec.get("max_rows") is not None:
        meta["max_rows"] = int(spec["max_rows"])
    if spec.get("stand_in_for"):
        meta["stand_in_for"] = spec["stand_in_for"]
    meta.update(extra)
    return Dataset(name=name, X=np.asarray(X, dtype=float), y=y, task=task, meta=meta).validate()


# ----------------------------------------------------------------- sources
def _load_sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets as skd

    if name not in SKLEARN_LOADERS:
        raise ConfigError(f"unknown scikit-learn dataset {name!r}; valid: {', '.join(SKLEARN_LOADERS)}")
    X, y = getattr(skd, f"load_{name}")(return_X_y=True)
    return np.asarray(X, dtype=float), np.asarray(y)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _load_csv(path: Path, spec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    expected = spec.get("sha256")
    if expected and spec.get("verify_sha256", True) and _sha256(path) != expected:
        raise DataError(
            f"{path}: sha256 does not match the config ({expected[:12]}...); the file is not the expected copy"
        )
    frame = _read_table(path)
    target = spec.get("target_column", "target")
    if target not in frame.columns:
        raise DataError(f"{path}: no column {target!r} (columns: {', '.join(map(str, frame.columns[-5:]))} ...)")
    y = frame.pop(target).to_numpy()
    try:
        X = frame.to_numpy(dtype=float)
    except ValueError as exc:
        raise DataError(f"{path}: non-numeric feature values ({exc})") from None
    return X, y


def _read_table(path: Path, sep: str = ",") -> pd.DataFrame:
    """``pd.read_csv(path)`` with a one-line :class:`DataError` for files that are not readable CSV."""
    if path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty (0 bytes); copy or download it again")
    try:
        return pd.read_csv(path, sep=sep)
    except gzip.BadGzipFile:
        raise DataError(
            f"{path}: not a gzip file although its name ends in '.gz'; compress it (gzip) or drop the '.gz'"
        ) from None
    except (EOFError, zlib.error) as exc:
        raise DataError(f"{path}: the compressed file is truncated or damaged ({exc}); copy it again") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: no header and no rows (empty after decompression?)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{path}: cannot be read as a CSV file ({first})") from None


def _check_rows_and_target(X: np.ndarray, y: np.ndarray, name: str, origin: str) -> None:
    """No rows, or rows without a target value, are refused before labels are counted."""
    if len(y) == 0:
        raise DataError(f"dataset {name!r} ({origin}) has no data rows (a header only?)")
    missing = np.asarray(pd.isna(pd.Series(y)))
    if missing.any():
        rows = np.flatnonzero(missing)
        shown = ", ".join(str(int(r)) for r in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise DataError(
            f"dataset {name!r} ({origin}): {rows.size} row(s) have no target value (NaN/empty), at row index "
            f"{shown}; drop or fill them"
        )


def frame_to_arrays(X: pd.DataFrame, y: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Convert an OpenML (pandas) frame to numeric arrays: categoricals become their codes."""
    X = X.copy()
    for col in X.columns:
        if isinstance(X[col].dtype, pd.CategoricalDtype) or X[col].dtype == object:
            X[col] = X[col].astype("category").cat.codes.astype(float)
    y_arr = np.asarray(y)
    if y_arr.dtype == object or isinstance(getattr(y, "dtype", None), pd.CategoricalDtype):
        y_arr = pd.Series(y_arr).astype("category").cat.codes.to_numpy()
        y_arr = y_arr.astype(float)
    return X.to_numpy(dtype=float), y_arr


def openml_frame(spec: dict[str, Any]) -> tuple[pd.DataFrame, pd.Series | None, str]:
    """The features (a frame), the target column (None when the data set has no default target and
    ``openml_target`` is not set) and the name of OpenML data set ``spec["openml_id"]``: the one
    download of the package, for the bundled configs' fallback and for ``data=openml``."""
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # the client logs every request at INFO, and Hydra shows INFO: one line stays one
    try:
        import openml  # the real client, with its own cache (~/.openml or openml.config.cache_directory)

        ds = openml.datasets.get_dataset(
            int(spec["openml_id"]), download_data=True, download_qualities=False, download_features_meta_data=False
        )
        target = spec.get("openml_target") or ds.default_target_attribute
        X, y, _, _ = ds.get_data(target=target, dataset_format="dataframe")
    finally:
        logging.disable(previous)
    return X, y, str(ds.name)


def _load_openml(spec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    X, y, _ = openml_frame(spec)
    return frame_to_arrays(X, y)


def _load_openml_or_explain(spec: dict[str, Any], local_path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        return _load_openml(spec)
    except ImportError:  # pragma: no cover - openml is a dependency
        raise DataError("the 'openml' package is not installed; pip install openml") from None
    except Exception as exc:  # network errors come in many types (requests, openml, OSError)
        raise DataError(
            _missing_file_message(str(spec.get("name")), local_path)
            + f"\nDownloading OpenML dataset {spec['openml_id']} failed too: {type(exc).__name__}: {exc}"
        ) from None


def _default_name(spec: dict[str, Any]) -> str:
    """The name of a config without one: ``data=csv`` the file's (``wine.csv.gz`` -> ``wine``),
    ``data=openml`` ``openml_<id>``."""
    source = spec.get("source", "local")
    if source == "csv":
        return tabular.dataset_name(tabular.csv_path(spec))
    if source == "openml":
        return f"openml_{_openml_id(spec)}"
    return "dataset"


def _load_own_csv(spec: dict[str, Any], name: str) -> tuple[np.ndarray, np.ndarray, str, str, dict[str, Any]]:
    """``data=csv``: ``(X, y, task, origin, meta)`` of the file ``data.path`` by the rules of
    :mod:`spl_bench.data.tabular`; its sha256 checked against ``data.sha256`` when one is given."""
    path = tabular.csv_path(spec)
    if not path.is_file():
        what = "a folder, not a file" if path.is_dir() else "not found"
        raise DataError(f"dataset {name!r}: data.path {path} is {what}; give the CSV file (data.path=FILE)")
    actual = tabular.file_sha256(path)
    expected = spec.get("sha256")
    if expected and not tabular.is_interpolation(expected) and str(expected) != actual:
        raise DataError(f"{path}: sha256 {actual[:12]}... does not match data.sha256 ({str(expected)[:12]}...); "
                        "the file is not the expected copy")  # fmt: skip
    frame = _read_table(path, sep=str(spec.get("sep") or ","))
    features, target = tabular.split_target(frame, spec["target"], name, str(path))
    X, y, task, meta = tabular.table_arrays(features, target, spec, name, str(path))
    return X, y, task, str(path), {**meta, "sha256": actual}


def _openml_id(spec: dict[str, Any]) -> int:
    if spec.get("openml_id") in (None, ""):
        raise ConfigError("data=openml needs the data set's id on openml.org: data.openml_id=N")
    return check_int("data.openml_id", spec["openml_id"], minimum=1)


def _load_openml_table(spec: dict[str, Any], name: str) -> tuple[np.ndarray, np.ndarray, str, str, dict[str, Any]]:
    """``data=openml``: ``(X, y, task, origin, meta)`` of OpenML data set ``data.openml_id`` (its
    default target, or ``data.openml_target``) by the rules of :mod:`spl_bench.data.tabular`."""
    oid = _openml_id(spec)
    try:
        features, target, title = openml_frame({**spec, "openml_id": oid})
    except ImportError:  # pragma: no cover - openml is a dependency
        raise DataError("the 'openml' package is not installed; pip install openml") from None
    except Exception as exc:  # network errors come in many types (requests, urllib3, openml, OSError)
        raise DataError(openml_failure(oid, exc)) from None
    origin = f"OpenML {oid}"
    if target is None:
        raise DataError(f"OpenML data set {oid} ({title}) has no default target; give its column with "
                        f"data.openml_target=COLUMN (columns: {', '.join(map(str, features.columns[:12]))} ...)")
    if not isinstance(target, pd.Series):
        raise DataError(f"OpenML data set {oid} ({title}): data.openml_target must name one column, "
                        f"got {spec.get('openml_target')!r}")  # fmt: skip
    X, y, task, meta = tabular.table_arrays(features, target, spec, name, origin)
    return X, y, task, origin, {**meta, "openml_id": oid, "openml_name": title}


#: exceptions of a download that did not reach the server (requests' are OSErrors too)
_NETWORK_WORDS = ("connection", "timeout", "resolve", "network", "unreachable", "max retries")


def openml_failure(oid: int, exc: BaseException) -> str:
    """One line for a failed OpenML download: no network (and how to provide a local copy), or
    what the server or the package said."""
    local = (f"to run it without the network, download it as CSV where there is one "
             f"(https://www.openml.org/d/{oid}) and run data=csv data.path=FILE data.target=COLUMN, "
             "or copy that machine's OpenML cache (~/.cache/openml) here")  # fmt: skip
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) or any(w in f"{type(exc).__name__} {text}".lower() for w in _NETWORK_WORDS):
        return f"OpenML data set {oid} cannot be downloaded: no network ({type(exc).__name__}); {local}"
    short = text if len(text) <= 160 else text[:157] + "..."
    return f"OpenML data set {oid} could not be loaded ({type(exc).__name__}: {short}); {local}"


def _missing_file_message(name: str, path: Path) -> str:
    return (
        f"dataset {name!r}: local file {path} not found.\n"
        f"Put the file there, or point the data directory at a folder that has it with "
        f"`{DATA_DIR_ENV}=/path/to/datasets` or `data.root=/path/to/datasets`."
    )


def _thin_rows(X: np.ndarray, y: np.ndarray, max_rows: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every k-th row, k = ceil(n / max_rows): at most ``max_rows`` rows spread over the whole file."""
    if max_rows is None:
        return X, y
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ConfigError(f"dataset {name!r}: max_rows must be a positive whole number, got {max_rows!r}")
    step = -(-len(y) // max_rows)
    return X[::step], y[::step]


def _slice_rows(X: np.ndarray, y: np.ndarray, rows: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    if rows in (None, "", "all"):
        return X, y
    try:
        parts = [int(p) if p.strip() else None for p in str(rows).split(":")]
        sl = slice(*parts)
    except (ValueError, TypeError):
        raise ConfigError(f"dataset {name!r}: rows must look like 'start:stop', got {rows!r}") from None
    return X[sl], y[sl]
