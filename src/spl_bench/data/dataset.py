"""The :class:`Dataset` container and target binarisation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import ConfigError, DataError


@dataclass
class Dataset:
    """Features ``X`` (n, d), target ``y`` (n,), ``task`` and free-form ``meta``.

    Classification targets are always in {-1, +1} (binarised at load time).
    """

    name: str
    X: NDArray[np.float64]
    y: NDArray[np.float64]
    task: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def validate(self) -> Dataset:
        """Check shapes, finiteness and label coding; raise :class:`DataError` if broken."""
        if self.X.ndim != 2 or self.X.shape[0] != self.y.shape[0]:
            raise DataError(f"dataset {self.name!r}: X {self.X.shape} and y {self.y.shape} do not match")
        if self.X.shape[0] == 0:
            raise DataError(f"dataset {self.name!r} has no rows")
        if not np.all(np.isfinite(self.X)):
            raise DataError(
                f"dataset {self.name!r}: {int((~np.isfinite(self.X)).sum())} NaN/inf value(s) in the features"
            )
        if not np.all(np.isfinite(self.y)):
            raise DataError(f"dataset {self.name!r}: NaN/inf in the target")
        if self.task == "classification" and not set(np.unique(self.y).tolist()) <= {-1.0, 1.0}:
            raise DataError(f"dataset {self.name!r}: classification labels must be -1/+1 after binarisation")
        return self


def _numeric(y: NDArray[Any]) -> NDArray[np.float64] | None:
    """``y`` as floats, or None when some label is not a number (``'barolo'``)."""
    try:
        return np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        return None


def _labels_text(y: NDArray[Any], limit: int = 6) -> str:
    labels = [str(v) for v in np.unique(y.astype(str))]
    return ", ".join(labels[:limit]) + (f" ... ({len(labels)} labels)" if len(labels) > limit else "")


def _option(spec: dict[str, Any], key: str, kind: str, name: str) -> Any:
    if key not in spec or spec[key] is None:
        raise ConfigError(f"dataset {name!r}: binarize kind {kind} needs data.binarize.{key} "
                          f"(+data.binarize.{key}=...)")  # fmt: skip
    return spec[key]


def _one_vs_rest(y: NDArray[Any], positive: Any, name: str) -> NDArray[np.float64]:
    """``label in positive`` -> +1, else -1; labels compared as numbers when both are, else as text."""
    pos = list(positive) if isinstance(positive, list | tuple) else [positive]
    y_num, pos_num = _numeric(y), _numeric(np.asarray(pos, dtype=object))
    if y_num is not None and pos_num is not None:
        hit = np.isin(y_num, pos_num)
    else:  # text labels (or a text positive for numeric labels): compare the spellings
        hit = np.isin(y.astype(str), [str(p) for p in pos])
    if not hit.any():
        shown = ", ".join(map(str, pos))
        raise DataError(f"dataset {name!r}: no row has the positive label {shown} of binarize kind one_vs_rest; "
                        f"the labels are {_labels_text(y)}")  # fmt: skip
    return np.where(hit, 1.0, -1.0)


def binarize(
    y: NDArray[Any], spec: dict[str, Any] | None, name: str, numeric_hint: bool = False
) -> NDArray[np.float64]:
    """Map a class target to {-1, +1} following ``spec`` (the ``binarize`` block of a data config).

    ``spec`` kinds:

    * ``None`` / ``auto``: exactly two classes; the smaller label -> -1, the larger -> +1;
    * ``threshold``: ``label >= value`` -> +1, else -1 (numeric labels only);
    * ``one_vs_rest``: ``label == positive`` (or in a list) -> +1, else -1; text labels
      (``positive: barolo``) are compared as text;
    * ``first_rows``: the first ``n`` rows in file order -> -1, the rest +1 (the
      GAGA authors' mfeat-pixel coding).

    A missing option, a threshold on text labels or a positive label no row has is a
    :class:`ConfigError` / :class:`DataError` saying what to set.  ``numeric_hint`` (a task
    inferred from the target, ``data=csv`` / ``data=openml``): the message for more than two
    numeric classes also offers ``data.task=regression``.
    """
    y = np.asarray(y)
    spec = dict(spec or {})
    kind = spec.get("kind", "auto")
    if kind == "auto":
        labels = np.unique(y if _numeric(y) is not None else y.astype(str))
        if labels.size != 2:
            numeric = _numeric(y) is not None
            threshold = ", or split at a value with +data.binarize.kind=threshold +data.binarize.value=<v>"
            regression = "; or data.task=regression if the target is a quantity" if numeric_hint and numeric else ""
            raise DataError(
                f"dataset {name!r} has {labels.size} classes ({_labels_text(y)}) and cannot be made binary "
                "automatically: the models take two; make one class +1 and the others -1 with "
                "+data.binarize.kind=one_vs_rest +data.binarize.positive=<label>"
                + (threshold if numeric else "")
                + regression
            )
        return np.where(y.astype(labels.dtype) == labels[1], 1.0, -1.0)
    if kind == "threshold":
        value = _option(spec, "value", kind, name)
        y_num = _numeric(y)
        if y_num is None:
            raise DataError(f"dataset {name!r}: binarize kind threshold needs numeric labels, but they are text "
                            f"({_labels_text(y)}); use +data.binarize.kind=one_vs_rest "
                            "+data.binarize.positive=<label>")  # fmt: skip
        try:
            cut = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"dataset {name!r}: data.binarize.value must be a number, got {value!r}") from None
        out = np.where(y_num >= cut, 1.0, -1.0)
    elif kind == "one_vs_rest":
        out = _one_vs_rest(y, _option(spec, "positive", kind, name), name)
    elif kind == "first_rows":
        out = np.ones(y.shape[0])
        out[: int(_option(spec, "n", kind, name))] = -1.0
    else:
        raise ConfigError(
            f"unknown binarize kind {kind!r} for dataset {name!r}; "
            "valid: auto, threshold, one_vs_rest, first_rows"
        )
    if np.unique(out).size < 2:
        raise DataError(f"binarising dataset {name!r} with {spec} leaves a single class")
    return out
