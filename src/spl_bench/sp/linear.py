"""Linear SP-regularizer ``f(v, lam) = lam (v^2 / 2 - v)`` (Jiang et al. 2014).

Closed form (GAGA section 3.2, footnote 3): ``v* = max(0, 1 - ell / lam)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL, cache=True)
def _mixed_nb(ell: float, lam: float, p: float) -> tuple[float, float, float]:
    """``(1 - ell/lam, -1/lam, ell/lam^2)``: ``v*`` on M and its two derivatives."""
    return 1.0 - ell / lam, -1.0 / lam, ell / (lam * lam)


@njit(THRESHOLDS_KERNEL, cache=True)
def _thresholds_nb(lam: float, p: float) -> tuple[float, float]:
    """``(0, lam)``."""
    return 0.0, lam


@REGISTRY.register("linear")
class LinearSP(SPRegularizer):
    """``v* = 1 - ell/lam`` for ``0 < ell < lam``; ``E = {ell == 0}``, ``D = {ell >= lam}``."""

    clip_mixed_loss = False  # the closed form is smooth across ell = 0
    v_affine_in_loss = True  # v* = 1 - ell/lam on M
    compiled = CompiledSP(_mixed_nb, _thresholds_nb, exact=True)

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        v = np.asarray(v, dtype=float)
        return lam * (0.5 * v**2 - v)

    def thresholds(self, lam: float) -> tuple[float, float]:
        return 0.0, float(lam)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        return 1.0 - ell / lam

    def _dv_mixed(self, ell, lam):
        return np.full_like(ell, -1.0 / lam), ell / lam**2
