"""Hard SP-regularizer ``f(v, lam) = -lam v`` (Kumar et al. 2010; GAGA eq. in section 2.2)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL, cache=True)
def _mixed_nb(ell: float, lam: float, p: float) -> tuple[float, float, float]:
    """M is empty: never called on a sample of M."""
    return 0.0, 0.0, 0.0


@njit(THRESHOLDS_KERNEL, cache=True)
def _thresholds_nb(lam: float, p: float) -> tuple[float, float]:
    """``(lam - ulp, lam)``: a loss equal to ``lam`` is in D."""
    return np.nextafter(lam, -np.inf), lam


@REGISTRY.register("hard")
class HardSP(SPRegularizer):
    """``v* = 1[ell < lam]``; the set ``M`` is always empty.

    A loss exactly equal to ``lam`` gets ``v* = 0`` (both 0 and 1 are optimal
    there; we pick the one that makes the set of easy samples open).
    """

    v_affine_in_loss = True  # v* is constant (0 or 1) on each piece
    compiled = CompiledSP(_mixed_nb, _thresholds_nb, exact=True)

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        return -lam * np.asarray(v, dtype=float)

    def thresholds(self, lam: float) -> tuple[float, float]:
        # ell <= lo -> E, ell >= hi -> D.  With lo just below lam, ell == lam is D.
        return float(np.nextafter(lam, -np.inf)), float(lam)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        return np.zeros_like(ell)  # pragma: no cover - M is empty

    def _dv_mixed(self, ell, lam):  # pragma: no cover - M is empty
        return np.zeros_like(ell), np.zeros_like(ell)
