"""Train/test splits of the evaluation protocol (GAGA appendix D.2).

``split3to1`` (paper)
    run ``k`` uses ``train_test_split(test_size=0.25, random_state=base_seed + k)``.
``kfold20`` (the GAGA authors' code)
    the runs are the folds of ``KFold(n_splits=20, shuffle=True, random_state=base_seed)``
    (95 % train / 5 % test); at most 20 runs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from sklearn.model_selection import KFold, train_test_split

from spl_bench.errors import ConfigError, DataError

Index = NDArray[np.int64]
SPLITS = ("split3to1", "kfold20")


def split_indices(
    n: int, run: int, splits: str = "split3to1", base_seed: int = 40, test_size: float = 0.25
) -> tuple[Index, Index]:
    """Train and test row indices of run number ``run`` (0-based)."""
    if n < 4:
        raise DataError(f"{n} rows are too few to split into train and test")
    idx = np.arange(n)
    if splits == "split3to1":
        if not 0.0 < test_size < 1.0:
            raise ConfigError(f"protocol.test_size must be in (0, 1), got {test_size}")
        tr, te = train_test_split(idx, test_size=test_size, random_state=base_seed + run)
    elif splits == "kfold20":
        if not 0 <= run < 20:
            raise ConfigError(f"kfold20 has 20 folds; run {run} does not exist (use n_runs <= 20)")
        folds = list(KFold(n_splits=20, shuffle=True, random_state=base_seed).split(idx))
        tr, te = folds[run]
    else:
        raise ConfigError(f"unknown protocol.splits {splits!r}; valid: {', '.join(SPLITS)}")
    if len(tr) == 0 or len(te) == 0:
        raise DataError(f"split {splits} run {run} left an empty train or test part (n = {n})")
    return np.sort(tr), np.sort(te)


def validation_split(n_train: int, val_size: float, seed: int) -> tuple[Index, Index]:
    """Split training rows into a fitting part and a validation part for choosing the age."""
    if not 0.0 < val_size < 1.0:
        raise ConfigError(f"protocol.val_size must be in (0, 1), got {val_size}")
    idx = np.arange(n_train)
    fit, val = train_test_split(idx, test_size=val_size, random_state=seed)
    if len(fit) == 0 or len(val) == 0:
        raise DataError(f"the validation split of {n_train} training rows is empty")
    return np.sort(fit), np.sort(val)
