"""Linear SP-regularizer ``f(v, lam) = lam (v^2 / 2 - v)`` (Jiang et al. 2014).

Closed form (GAGA section 3.2, footnote 3): ``v* = max(0, 1 - ell / lam)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spl_bench.sp import REGISTRY
from spl_bench.sp.base import SPRegularizer


@REGISTRY.register("linear")
class LinearSP(SPRegularizer):
    """``v* = 1 - ell/lam`` for ``0 < ell < lam``; ``E = {ell == 0}``, ``D = {ell >= lam}``."""

    clip_mixed_loss = False  # the closed form is smooth across ell = 0
    v_affine_in_loss = True  # v* = 1 - ell/lam on M

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        v = np.asarray(v, dtype=float)
        return lam * (0.5 * v**2 - v)

    def thresholds(self, lam: float) -> tuple[float, float]:
        return 0.0, float(lam)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        return 1.0 - ell / lam

    def _dv_mixed(self, ell, lam):
        return np.full_like(ell, -1.0 / lam), ell / lam**2
