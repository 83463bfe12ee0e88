"""Polynomial soft-weighting SP-regularizer (Gong et al., GAGA ref. [19]; used by MOSPL).

``f(v; lam, t) = lam (v^t / t - v)`` with order ``t > 1``; the closed form is
``v* = (1 - ell/lam)^(1/(t-1))`` for ``ell < lam`` and 0 otherwise.  ``t = 2``
is the linear regularizer.  GAGA appendix D.2 uses ``t = 1.2`` and ``1.35``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import ConfigError
from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL, cache=True)
def _mixed_nb(ell: float, lam: float, t: float) -> tuple[float, float, float]:
    """``(1 - ell/lam)^q`` with ``q = 1/(t - 1)``, and its derivatives in ``ell`` and ``lam``."""
    q = 1.0 / (t - 1.0)
    base = 1.0 - ell / lam
    common = q * base ** (q - 1.0)
    return base**q, -common / lam, common * ell / (lam * lam)


@njit(THRESHOLDS_KERNEL, cache=True)
def _thresholds_nb(lam: float, t: float) -> tuple[float, float]:
    """``(0, lam)``."""
    return 0.0, lam


@REGISTRY.register("polynomial")
class PolynomialSP(SPRegularizer):
    """Polynomial regularizer of order ``t > 1``."""

    clip_mixed_loss = False  # the closed form is smooth across ell = 0
    compiled = CompiledSP(_mixed_nb, _thresholds_nb, "t")

    def __init__(self, t: float = 1.2) -> None:
        t = float(t)
        if not t > 1.0:
            raise ConfigError(f"polynomial SP-regularizer order t must be > 1, got {t}")
        self.t = t

    def get_params(self) -> dict[str, float]:
        return {"t": self.t}

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        v = np.asarray(v, dtype=float)
        return lam * (v**self.t / self.t - v)

    def thresholds(self, lam: float) -> tuple[float, float]:
        return 0.0, float(lam)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        return (1.0 - ell / lam) ** (1.0 / (self.t - 1.0))

    def _dv_mixed(self, ell, lam):
        p = 1.0 / (self.t - 1.0)
        base = 1.0 - ell / lam
        common = p * base ** (p - 1.0)
        return -common / lam, common * ell / lam**2
