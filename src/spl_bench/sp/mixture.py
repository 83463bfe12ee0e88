"""Mixture SP-regularizer ``f(v, lam) = gamma^2 / (v + gamma/lam)`` (Zhao et al. 2015).

Closed form, with ``lo = (lam gamma / (lam + gamma))^2`` and ``hi = lam^2``::

    v* = 1                              if ell <= lo
    v* = gamma (1/sqrt(ell) - 1/lam)    if lo < ell < hi
    v* = 0                              if ell >= hi
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import check_positive
from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL, cache=True)
def _mixed_nb(ell: float, lam: float, gamma: float) -> tuple[float, float, float]:
    """``gamma (ell^-1/2 - 1/lam)``, ``-gamma ell^-3/2 / 2``, ``gamma / lam^2`` (loss clipped at 1e-100)."""
    e = max(ell, 1e-100)
    s = np.sqrt(e)
    return gamma * (1.0 / s - 1.0 / lam), -0.5 * gamma / (e * s), gamma / (lam * lam)


@njit(THRESHOLDS_KERNEL, cache=True)
def _thresholds_nb(lam: float, gamma: float) -> tuple[float, float]:
    """``((lam gamma / (lam + gamma))^2, lam^2)``."""
    lo = lam * gamma / (lam + gamma)
    return lo * lo, lam * lam


@REGISTRY.register("mixture")
class MixtureSP(SPRegularizer):
    """Mixture regularizer with shape parameter ``gamma > 0`` (GAGA Table 3 column γ)."""

    compiled = CompiledSP(_mixed_nb, _thresholds_nb, "gamma", exact=True)

    def __init__(self, gamma: float = 0.5) -> None:
        self.gamma = check_positive("mixture gamma", gamma)

    def get_params(self) -> dict[str, float]:
        return {"gamma": self.gamma}

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        v = np.asarray(v, dtype=float)
        return self.gamma**2 / (v + self.gamma / lam)

    def thresholds(self, lam: float) -> tuple[float, float]:
        g = self.gamma
        return float((lam * g / (lam + g)) ** 2), float(lam**2)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        return self.gamma * (1.0 / np.sqrt(ell) - 1.0 / lam)

    def _dv_mixed(self, ell, lam):
        g = self.gamma
        return -0.5 * g / (ell * np.sqrt(ell)), np.full_like(ell, g / lam**2)  # (ell^-1.5 without pow)
