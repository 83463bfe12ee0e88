"""A researcher's own table: a CSV file (``data=csv``) or any OpenML data set (``data=openml``).

Both go through the same rules (docs/data.md, "Your own data"), from a table of feature columns
and one target column to the numeric ``X`` and the target ``y`` the runner takes:

* **Columns.** ``data.target`` names the target, anywhere in the file; ``data.drop`` lists
  columns to leave out (an id, a free-text note); every other column is a feature.
* **Missing values** (an empty cell, ``NA``, ``NaN``: what ``pandas.read_csv`` reads as missing)
  are refused by default (``data.missing=refuse``), with one line naming each column that has
  them and how many; ``data.missing=drop_rows`` drops every row with a missing value in a
  feature or the target.  Nothing is imputed: a value filled in from all rows would carry the
  test rows' values into training.
* **Text features.** A numeric or true/false column is used as it is (true = 1).  A column of
  text with at most ``data.max_categories`` (default 20) distinct values is one-hot encoded:
  one 0/1 column per value, ``<column>=<value>``, in the values' sorted order.  A text column
  with more distinct values (an id, a free-text field) is refused with one line naming it.
* **Task** (``data.task=auto``, the default): classification when the target is text or
  true/false, has exactly two distinct values, or has whole-number values with at most
  :data:`MAX_CLASSES` distinct ones; regression otherwise.  ``data.task=classification`` or
  ``data.task=regression`` overrides it.
* **Labels.** The models take two classes, coded -1/+1 as for the bundled sets
  (:func:`spl_bench.data.dataset.binarize`): the smaller label (text: the first in sorted
  order) -1, the larger +1.  More than two classes: one line listing them and how to make one
  class positive against the rest (``+data.binarize.kind=one_vs_rest
  +data.binarize.positive=<label>``).

The CSV file's sha256 goes into the resolved config (``data.sha256``, by the
``spl_file_sha256`` resolver registered here), so it is part of the config hash and of
``rows/<hash>/config.json``, as the sha256 of a bundled data set's config is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from spl_bench.errors import ConfigError, DataError

#: a target of whole numbers with at most this many distinct values is a class label
MAX_CLASSES = 10
#: default of ``data.max_categories``: text columns with at most this many values are one-hot encoded
MAX_CATEGORIES = 20
#: values of ``data.missing``
MISSING_RULES = ("refuse", "drop_rows")
#: values of ``data.task`` (``auto``: inferred from the target, :func:`infer_task`)
TASKS = ("auto", "classification", "regression")
#: suffixes left out of a file's name when it names the data set (``wine.csv.gz`` -> ``wine``)
_SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".zst", ".csv", ".tsv", ".txt")


def _shown(items: Sequence[object], limit: int = 8) -> str:
    items = [str(i) for i in items]
    return ", ".join(items[:limit]) + (f" ... ({len(items)} in all)" if len(items) > limit else "")


# ----------------------------------------------------------------- the file
def csv_path(spec: dict[str, Any]) -> Path:
    """The file ``data.path`` names: as given when absolute, else under ``data.root`` when set,
    else under the current folder.  A missing ``data.path`` or ``data.target`` is a one-line error."""
    raw = spec.get("path")
    if raw in (None, ""):
        raise ConfigError("data=csv needs the file and its target column: data.path=FILE data.target=COLUMN")
    if spec.get("target") in (None, ""):
        raise ConfigError(f"data=csv needs the target column of {raw}: data.target=COLUMN")
    path = Path(str(raw)).expanduser()
    if not path.is_absolute() and spec.get("root"):
        path = Path(str(spec["root"])).expanduser() / path
    return path.absolute()


def dataset_name(path: Path) -> str:
    """The data set's name for the results: the file's name without its suffixes (``wine.csv.gz`` -> ``wine``)."""
    name = path.name
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes (kept per path, size and modification time: read once per process)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


def _sha256_resolver(path: Any = None, root: Any = None) -> str | None:
    """``${spl_file_sha256:${.path},${.root}}`` in ``configs/data/csv.yaml``: the file's sha256, or
    None when there is no such file (the loader then says so in one line)."""
    if path in (None, ""):
        return None
    try:
        p = csv_path({"path": path, "target": "-", "root": root})
        return file_sha256(p) if p.is_file() else None
    except (OSError, ConfigError):
        return None


# registered at import (spl_bench.data imports this module): every process that resolves a run's
# config, parallel launchers' workers included, has it
OmegaConf.register_new_resolver("spl_file_sha256", _sha256_resolver, replace=True)


def is_interpolation(value: Any) -> bool:
    """Whether ``value`` is an unresolved OmegaConf interpolation (a config read without resolving)."""
    return isinstance(value, str) and value.strip().startswith("${")


# ----------------------------------------------------------------- the rules
def infer_task(y: pd.Series) -> str:
    """``classification`` or ``regression`` for a target column (the module's rule, *Task*)."""
    values = y.dropna()
    if isinstance(values.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(values):
        return "classification"
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.isna().any():  # some label is text
        return "classification"
    distinct = np.unique(numeric.to_numpy(dtype=float))
    if distinct.size == 2:
        return "classification"
    whole = bool(np.all(np.isfinite(distinct)) and np.all(distinct == np.round(distinct)))
    return "classification" if whole and distinct.size <= MAX_CLASSES else "regression"


def _is_numeric(col: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype)


def encode_features(features: pd.DataFrame, name: str, max_categories: int
                    ) -> tuple[np.ndarray, list[str], list[str]]:  # fmt: skip
    """The feature columns as one float matrix, the names of its columns and the text columns that
    were one-hot encoded (the module's rule, *Text features*); a text column with too many distinct
    values is a one-line :class:`DataError`."""
    text_cols = [c for c in features.columns
                 if not (_is_numeric(features[c]) or pd.api.types.is_bool_dtype(features[c]))]  # fmt: skip
    too_many = {str(c): int(features[c].astype(str).nunique()) for c in text_cols}
    too_many = {c: k for c, k in too_many.items() if k > max_categories}
    if too_many:
        shown = _shown([f"{c} ({k} values)" for c, k in too_many.items()], 5)
        raise DataError(
            f"dataset {name!r}: text column(s) with more than {max_categories} distinct values are not one-hot "
            f"encoded: {shown}; leave them out with data.drop=[{','.join(too_many)}] or raise data.max_categories"
        )
    blocks, names = [], []
    for col in features.columns:
        c = features[col]
        if col in text_cols:
            text = c.astype(str).to_numpy(dtype=object)
            levels = sorted(set(text))
            blocks.append((text[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(float))
            names += [f"{col}={v}" for v in levels]
        else:
            blocks.append(c.to_numpy(dtype=float)[:, None])
            names.append(str(col))
    X = np.hstack(blocks) if blocks else np.empty((len(features), 0))
    return X, names, [str(c) for c in text_cols]


def _missing_rule(spec: dict[str, Any], name: str) -> str:
    rule = str(spec.get("missing") or "refuse")
    if rule not in MISSING_RULES:
        raise ConfigError(f"dataset {name!r}: data.missing must be one of {', '.join(MISSING_RULES)}, got {rule!r}")
    return rule


def handle_missing(features: pd.DataFrame, target: pd.Series, spec: dict[str, Any], name: str, origin: str
                   ) -> tuple[pd.DataFrame, pd.Series, int]:  # fmt: skip
    """Refuse missing values (one line naming the columns), or drop their rows (``data.missing=drop_rows``);
    returns the features, the target and the number of rows dropped."""
    rule = _missing_rule(spec, name)
    holes = features.isna()
    target_holes = target.isna().to_numpy()
    per_column = {str(c): int(n) for c, n in holes.sum().items() if n}
    if target_holes.any():
        per_column[f"{target.name} (the target)"] = int(target_holes.sum())
    if not per_column:
        return features, target, 0
    bad_rows = holes.any(axis=1).to_numpy() | target_holes
    if rule == "refuse":
        cols = [c for c in per_column if not c.endswith("(the target)")]
        leave = f", or leave the columns out with data.drop=[{','.join(cols)}]" if cols else ""
        raise DataError(
            f"dataset {name!r} ({origin}): missing values in {_shown([f'{c} ({n})' for c, n in per_column.items()])}; "
            f"drop the {int(bad_rows.sum())} row(s) that have one with data.missing=drop_rows{leave}"
        )
    keep = ~bad_rows
    if not keep.any():
        raise DataError(f"dataset {name!r} ({origin}): every row has a missing value; data.missing=drop_rows leaves "
                        "nothing (leave the emptiest columns out with data.drop=[...])")  # fmt: skip
    return features[keep].reset_index(drop=True), target[keep].reset_index(drop=True), int(bad_rows.sum())


def check_task(task: Any, name: str) -> str:
    """``data.task`` as one of :data:`TASKS`, else a one-line :class:`ConfigError`."""
    if task in (None, ""):
        return "auto"
    if str(task) not in TASKS:
        raise ConfigError(f"dataset {name!r}: data.task must be one of {', '.join(TASKS)}, got {task!r}")
    return str(task)


def table_arrays(features: pd.DataFrame, target: pd.Series, spec: dict[str, Any], name: str, origin: str
                 ) -> tuple[np.ndarray, np.ndarray, str, dict[str, Any]]:  # fmt: skip
    """``(X, y, task, meta)`` of a table by the module's rules; ``y`` as read (labels not yet coded)."""
    drop = spec.get("drop") or []
    drop = [drop] if isinstance(drop, str) else [str(c) for c in drop]
    unknown = [c for c in drop if c not in set(map(str, features.columns))]
    if unknown:
        raise DataError(f"dataset {name!r}: data.drop names no column {_shown(unknown)}; the columns: "
                        f"{_shown(list(features.columns), 12)}")  # fmt: skip
    features = features.drop(columns=[c for c in features.columns if str(c) in drop])
    if features.shape[1] == 0:
        raise DataError(f"dataset {name!r} ({origin}): no feature column is left beside the target {target.name!r}")
    max_categories = spec.get("max_categories", MAX_CATEGORIES)
    if isinstance(max_categories, bool) or not isinstance(max_categories, int) or max_categories < 1:
        raise ConfigError(f"dataset {name!r}: data.max_categories must be a positive whole number, "
                          f"got {max_categories!r}")  # fmt: skip
    if len(target) == 0:
        raise DataError(f"dataset {name!r} ({origin}) has no data rows (a header only?)")
    features, target, dropped = handle_missing(features, target, spec, name, origin)
    task = check_task(spec.get("task"), name)
    inferred = infer_task(target)
    if task == "auto":
        task = inferred
    X, columns, one_hot = encode_features(features, name, max_categories)
    if pd.api.types.is_bool_dtype(target):
        y = target.to_numpy(dtype=float)  # false -1, true +1 (the smaller label -1)
    else:
        y = np.asarray(target.astype(object) if isinstance(target.dtype, pd.CategoricalDtype) else target.to_numpy())
    meta = {"columns": columns, "target": str(target.name), "task_inferred": inferred, "rows_dropped": dropped,
            "one_hot": one_hot}
    return X, y, task, meta


def split_target(frame: pd.DataFrame, target: Any, name: str, origin: str) -> tuple[pd.DataFrame, pd.Series]:
    """The feature columns and the target column ``target`` of a read file (one line if it has none)."""
    col = str(target)
    cols = [str(c) for c in frame.columns]
    if col not in cols:
        raise DataError(f"dataset {name!r} ({origin}): no column {col!r} for data.target; the columns: "
                        f"{_shown(cols, 12)}")  # fmt: skip
    frame = frame.copy()
    frame.columns = cols
    return frame.drop(columns=[col]), frame[col]
