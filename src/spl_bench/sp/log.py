"""LOG SP-regularizer of Meng, Zhao and Jiang (2017), GAGA paper ref. [35].

With ``zeta = 1 - lam`` and ``0 < lam < 1``::

    f(v, lam) = zeta v - zeta^v / log(zeta)
    v*(ell, lam) = log(ell + zeta) / log(zeta)   for ell < lam,   0 otherwise.

The age must lie in (0, 1) for this regularizer; :meth:`check_lam` says so.
(The GAGA paper writes LOG as ``KL(1 + alpha lam, v) / alpha``; we follow the
cited source, whose closed form is unambiguous.  See docs/conventions.md.)
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import ConfigError
from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL, cache=True)
def _mixed_nb(ell: float, lam: float, p: float) -> tuple[float, float, float]:
    """``log(ell + z) / log z`` with ``z = 1 - lam``, and its derivatives in ``ell`` and ``lam``."""
    z = 1.0 - lam
    lz = np.log(z)
    a = ell + z
    d_ell = 1.0 / (a * lz)
    return np.log(a) / lz, d_ell, -(d_ell - np.log(a) / (z * lz * lz))


@njit(THRESHOLDS_KERNEL, cache=True)
def _thresholds_nb(lam: float, p: float) -> tuple[float, float]:
    """``(0, lam)``."""
    return 0.0, lam


@REGISTRY.register("log")
class LogSP(SPRegularizer):
    """LOG regularizer; ``E = {ell == 0}``, ``M = {0 < ell < lam}``, ``D = {ell >= lam}``."""

    clip_mixed_loss = False  # the closed form is smooth across ell = 0
    compiled = CompiledSP(_mixed_nb, _thresholds_nb)

    def check_lam(self, lam: float) -> float:
        lam = float(lam)
        if not 0.0 < lam < 1.0:
            raise ConfigError(f"the LOG SP-regularizer needs 0 < lambda < 1, got {lam}")
        return lam

    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        self.check_lam(lam)
        v = np.asarray(v, dtype=float)
        z = 1.0 - lam
        return z * v - z**v / np.log(z)

    def thresholds(self, lam: float) -> tuple[float, float]:
        self.check_lam(lam)
        return 0.0, float(lam)

    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        z = 1.0 - lam
        return np.log(ell + z) / np.log(z)

    def _dv_mixed(self, ell, lam):
        z = 1.0 - lam
        lz = np.log(z)
        d_ell = 1.0 / ((ell + z) * lz)
        # d/dlam with dz/dlam = -1: d/dz [log(ell+z)/log z] times -1
        d_z = 1.0 / ((ell + z) * lz) - np.log(ell + z) / (z * lz**2)
        return d_ell, -d_z
