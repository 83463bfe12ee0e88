"""Synthetic robust-regression data of the DSPL paper (Zhang et al., IJCAI 2018, section 5.1).

Each mini-batch ``i`` is generated as ``y^(i) = X^(i) w* + u^(i) + eps^(i)``:

* ``w*`` is a random unit vector in ``R^p``;
* the rows of ``X^(i)`` are i.i.d. ``N(0, I_p)`` (the paper stores ``X`` as ``p x n``;
  here rows are samples, as everywhere in spl-bench);
* ``eps ~ N(0, sigma^2)`` is the dense noise and ``y* = X w* + eps``;
* ``u^(i)`` is zero except on a uniformly random subset of the batch, where it is
  uniform in ``[-5 ||y*^(i)||_inf, 5 ||y*^(i)||_inf]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import ConfigError, DataError

Array = NDArray[np.float64]


def _check_rate(rate: float, name: str = "corruption rate") -> float:
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number in [0, 1], got {rate!r}") from None
    if not 0.0 <= r <= 1.0:
        raise ConfigError(f"{name} must lie in [0, 1], got {rate!r}")
    return r


def dspl_corruption(
    y: ArrayLike, rate: float, rng: np.random.Generator | int | None = None, scale: float = 5.0
) -> tuple[Array, NDArray[np.int64]]:
    """Corrupt ``round(rate * n)`` responses with the DSPL corruption (section 5.1).

    A uniformly random subset of ``round(rate * n)`` indices gets
    ``u_j ~ U[-scale ||y||_inf, scale ||y||_inf]`` added (``scale = 5`` in the paper);
    ``||y||_inf`` is taken over the *uncorrupted* input ``y``.

    Parameters
    ----------
    y : array (n,)
        Clean responses ``y*``.
    rate : float in [0, 1]
        Fraction of corrupted responses.
    rng : Generator, int or None
        Random source.
    scale : float
        Half-width of the corruption interval in units of ``||y||_inf``.

    Returns
    -------
    (y_corrupted, idx)
        A corrupted copy of ``y`` and the sorted indices that were corrupted.
    """
    y = np.asarray(y, dtype=float).ravel()
    if y.size == 0:
        raise DataError("cannot corrupt an empty response vector")
    if not np.all(np.isfinite(y)):
        raise DataError("y contains NaN or infinite values")
    rate = _check_rate(rate)
    rng = np.random.default_rng(rng)
    n = y.size
    k = int(round(rate * n))
    idx = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
    bound = float(scale) * float(np.max(np.abs(y)))
    out = y.copy()
    out[idx] += rng.uniform(-bound, bound, size=k)
    return out, idx


@dataclass
class SyntheticRegression:
    """A DSPL synthetic data set: rows ordered batch by batch.

    Attributes
    ----------
    X : (n, p) features;  y : (n,) corrupted responses;  y_clean : (n,) ``X w* + eps``;
    w_star : (p,) ground truth;  batch : (n,) batch index of each row;
    corrupted : (n,) bool mask of the corrupted rows;  rates : per-batch corruption rates.
    """

    X: Array
    y: Array
    y_clean: Array
    w_star: Array
    batch: NDArray[np.int64]
    corrupted: NDArray[np.bool_]
    rates: Array
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_batches(self) -> int:
        return int(self.rates.size)

    def batches(self) -> list[tuple[Array, Array]]:
        """The list of ``(X_i, y_i)`` mini-batches."""
        return [(self.X[self.batch == i], self.y[self.batch == i]) for i in range(self.n_batches)]


def make_dspl_regression(
    n_per_batch: int | Sequence[int],
    n_features: int,
    rates: float | Sequence[float],
    n_batches: int | None = None,
    sigma: float = 0.1,
    rng: np.random.Generator | int | None = None,
) -> SyntheticRegression:
    """Generate the synthetic robust-regression data of DSPL section 5.1.

    Parameters
    ----------
    n_per_batch : int or list of int
        Rows of each batch (an int repeats for ``n_batches`` batches).
    n_features : int
        ``p``.
    rates : float or list of float
        Corruption ratio of each batch (a float is used for every batch).
    n_batches : int, optional
        Number of batches when neither ``n_per_batch`` nor ``rates`` is a list (default 1).
    sigma : float
        Standard deviation of the dense noise ``eps`` (not stated in the paper; 0.1 here).
    rng : Generator, int or None
        Random source.
    """
    rng = np.random.default_rng(rng)
    sizes = None if np.isscalar(n_per_batch) else [int(s) for s in n_per_batch]  # type: ignore[union-attr]
    rate_list = None if np.isscalar(rates) else [float(r) for r in rates]  # type: ignore[union-attr]
    m = n_batches
    for lst in (sizes, rate_list):
        if lst is not None:
            if m is not None and len(lst) != m:
                raise ConfigError(f"got {len(lst)} per-batch values but {m} batches")
            m = len(lst)
    m = 1 if m is None else int(m)
    if m < 1:
        raise ConfigError(f"n_batches must be >= 1, got {m}")
    sizes = sizes if sizes is not None else [int(n_per_batch)] * m  # type: ignore[arg-type]
    rate_arr = np.array(rate_list if rate_list is not None else [float(rates)] * m)  # type: ignore[arg-type]
    for r in rate_arr:
        _check_rate(r)
    p = int(n_features)
    if p < 1 or min(sizes) < 1:
        raise ConfigError("n_features and every batch size must be >= 1")
    if sigma < 0:
        raise ConfigError(f"sigma must be >= 0, got {sigma}")
    w_star = rng.standard_normal(p)
    w_star /= np.linalg.norm(w_star)
    Xs, ys, ycs, bs, cs = [], [], [], [], []
    for i, (n_i, r_i) in enumerate(zip(sizes, rate_arr, strict=True)):
        X_i = rng.standard_normal((n_i, p))
        y_clean = X_i @ w_star + sigma * rng.standard_normal(n_i)
        y_i, idx = dspl_corruption(y_clean, r_i, rng)
        mask = np.zeros(n_i, dtype=bool)
        mask[idx] = True
        Xs.append(X_i)
        ys.append(y_i)
        ycs.append(y_clean)
        bs.append(np.full(n_i, i, dtype=np.int64))
        cs.append(mask)
    return SyntheticRegression(
        X=np.vstack(Xs),
        y=np.concatenate(ys),
        y_clean=np.concatenate(ycs),
        w_star=w_star,
        batch=np.concatenate(bs),
        corrupted=np.concatenate(cs),
        rates=rate_arr,
        meta={"sigma": float(sigma), "sizes": sizes},
    )


def corrupted_batch_rates(n_batches: int, n_corrupted: int, high: float = 0.9, low: float = 0.1,
                          rng: np.random.Generator | int | None = None) -> Array:
    """Per-batch rates of DSPL Table 2: ``n_corrupted`` random batches at ``high``, the rest at ``low``."""
    if not 0 <= n_corrupted <= n_batches:
        raise ConfigError(f"n_corrupted must be in [0, {n_batches}], got {n_corrupted}")
    rng = np.random.default_rng(rng)
    rates = np.full(n_batches, _check_rate(low))
    rates[rng.choice(n_batches, size=n_corrupted, replace=False)] = _check_rate(high)
    return rates
