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


def binarize(y: NDArray[Any], spec: dict[str, Any] | None, name: str) -> NDArray[np.float64]:
    """Map a class target to {-1, +1} following ``spec`` (the ``binarize`` block of a data config).

    ``spec`` kinds:

    * ``None`` / ``auto``: exactly two classes; the smaller label -> -1, the larger -> +1;
    * ``threshold``: ``label >= value`` -> +1, else -1;
    * ``one_vs_rest``: ``label == positive`` (or in a list) -> +1, else -1;
    * ``first_rows``: the first ``n`` rows in file order -> -1, the rest +1 (the
      GAGA authors' mfeat-pixel coding).
    """
    y = np.asarray(y)
    kind = (spec or {}).get("kind", "auto")
    if kind == "auto":
        labels = np.unique(y)
        if labels.size != 2:
            raise DataError(
                f"dataset {name!r} has {labels.size} classes and cannot be made binary automatically; "
                "set data.binarize (kind: threshold | one_vs_rest | first_rows)"
            )
        return np.where(y == labels[1], 1.0, -1.0)
    if kind == "threshold":
        out = np.where(y.astype(float) >= float(spec["value"]), 1.0, -1.0)
    elif kind == "one_vs_rest":
        pos = spec["positive"]
        pos = pos if isinstance(pos, list | tuple) else [pos]
        out = np.where(np.isin(y.astype(float), np.asarray(pos, dtype=float)), 1.0, -1.0)
    elif kind == "first_rows":
        out = np.ones(y.shape[0])
        out[: int(spec["n"])] = -1.0
    else:
        raise ConfigError(
            f"unknown binarize kind {kind!r} for dataset {name!r}; "
            "valid: auto, threshold, one_vs_rest, first_rows"
        )
    if np.unique(out).size < 2:
        raise DataError(f"binarising dataset {name!r} with {spec} leaves a single class")
    return out
