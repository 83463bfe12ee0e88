"""GAGA: the exact age-path of self-paced learning (Qu et al., NeurIPS 2022).

>>> from spl_bench.gaga import age_path                      # doctest: +SKIP
>>> path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 20.0), alpha=0.005)
>>> path.lambdas, path.coef, path.events, path.n_restarts    # doctest: +SKIP
>>> w, b = path.at(3.7)                                      # doctest: +SKIP

See :mod:`spl_bench.gaga.api` (the entry points), :mod:`spl_bench.gaga.core.tracker` (the path
follower), :mod:`spl_bench.gaga.systems` (``make_system``: the system ``F = 0`` of eq. (5) for each
model) and :mod:`spl_bench.gaga.core.path` (the result).
"""

from spl_bench.gaga.api import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.path import AgePath

__all__ = ["AgePath", "EngineOptions", "age_path"]
