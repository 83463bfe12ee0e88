"""Which way is better for a metric: the one place where the report decides it.

Every comparison of the report (the bold best mean and its ▲, the paper-order column, the
Friedman ranks and the critical-difference diagrams, the counts of the findings page) asks
:func:`higher_is_better` for the metric of the line it compares, line by line: a table may mix
accuracy lines (higher is better) with error lines (lower is better), as the GAGA paper's
Tables 2 and 3 do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: metrics where a higher value is better
HIGHER = frozenset({"accuracy", "balanced_accuracy", "auc", "f1"})
#: metrics where a lower value is better (any other name ending in ``_error`` too)
LOWER = frozenset({"generalization_error", "gen_error", "test_error", "recovery_l2_error", "mse", "rmse"})


def higher_is_better(metric: str) -> bool:
    """Whether a higher value of ``metric`` is better (``selection_`` prefixes ignored).

    Raises
    ------
    ValueError
        For a metric this module does not know: a comparison with an unknown direction must
        not be made silently one way.
    """
    name = str(metric).removeprefix("selection_")
    if name in HIGHER:
        return True
    if name in LOWER or name.endswith("_error"):
        return False
    raise ValueError(f"unknown metric {metric!r}: say in spl_bench.report.direction whether higher is better")


def sign(metric: str) -> float:
    """+1.0 where higher is better, -1.0 where lower is: ``sign * value`` is a score, higher = better."""
    return 1.0 if higher_is_better(metric) else -1.0


def score(values: pd.Series | np.ndarray | float, metric: str) -> pd.Series | np.ndarray | float:
    """``values`` of ``metric`` turned into scores where higher is better (errors negated)."""
    return values * sign(metric)
