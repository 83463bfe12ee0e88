"""Compiled event functions of the SVM path's samples (:meth:`SVMSystem._sample_events`).

GAGA's SVM path (Theorem 2, the partition of the samples by margin ``g_i = 1 - y_i f(x_i)`` and
dual ``a_i``) changes a sample's set when one of its two distances to the set's boundaries
reaches zero.  Per set code ``c`` (E_N, E_Z, E_P, M, D) with the regularizer's thresholds
``(lo, hi)`` at the age and the box ``C``::

    h1 = H1[c, 0] g + H1[c, 1] a/C + (H1[c, 3] lo + H1[c, 4] hi) / C
    h2 = H2[c, 0] g + H2[c, 1] a/C + H2[c, 2] + (H2[c, 3] lo + H2[c, 4] hi) / C   (inf on E_N, D)

i.e. ``h1 = -g | a/C | g | g - lo/C | g - hi/C`` and ``h2 = inf | 1 - a/C | lo/C - g | hi/C - g | inf``.
One pass over the samples evaluates both with the operations in this order (the NumPy
expressions they replace, so the values are the same bits); it replaces a dozen NumPy calls and
two gathers of ``(n, 5)`` coefficient rows, whose overhead dominated the event checks on the few
samples of a crossing.

Compiled with numba (``cache=True``: the first call on a machine compiles, later processes
load the cache).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def sample_events(g: np.ndarray, a: np.ndarray, c: np.ndarray, H1: np.ndarray, H2: np.ndarray,
                  lo: float, hi: float, C: float, no_h2_a: int, no_h2_b: int,
                  h1: np.ndarray, h2: np.ndarray) -> None:
    """Fill ``h1``, ``h2`` (the module's equations) for margins ``g``, duals ``a`` and set codes
    ``c``; ``h2`` is ``inf`` on the codes ``no_h2_a`` and ``no_h2_b`` (sets with one boundary)."""
    for i in range(g.shape[0]):
        k = c[i]
        aC = a[i] / C
        h1[i] = H1[k, 0] * g[i] + H1[k, 1] * aC + (H1[k, 3] * lo + H1[k, 4] * hi) / C
        if k == no_h2_a or k == no_h2_b:
            h2[i] = np.inf
        else:
            h2[i] = H2[k, 0] * g[i] + H2[k, 1] * aC + H2[k, 2] + (H2[k, 3] * lo + H2[k, 4] * hi) / C
