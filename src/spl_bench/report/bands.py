"""How far a cell is from the paper: |z| in the paper's stds, compared with the bands at a tolerance.

``z = (ours − paper) / paper std`` is computed in floating point, so a cell exactly on a band's
edge can land a few ulps outside it (Outlier-Path Table 2, german_numer OP-s: z =
−2.0000000000000018).  Every comparison of |z| with a band goes through :func:`within`, which
allows a relative tolerance of :data:`REL_TOL`, so rounding does not move a cell between bands.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: relative tolerance of the band edges
REL_TOL = 1e-9
#: |z| above which a cell is explained by a known protocol difference (docs/protocol.md, "Fidelity")
FAR = 3.0
#: agreement of a cell with the paper, by |z| in paper stds (the reason column says why where beyond)
AGREEMENT = ((1.0, "within 1 std"), (2.0, "within 2 stds"), (3.0, "within 3 stds"))
BEYOND = "beyond 3 stds"


def within(z: float | pd.Series | np.ndarray, bound: float) -> bool | pd.Series | np.ndarray:
    """Whether |z| ≤ ``bound``, the edge widened by the relative tolerance :data:`REL_TOL`
    (NaN: False)."""
    return np.abs(z) <= bound * (1.0 + REL_TOL)


def beyond(z: float | pd.Series | np.ndarray, bound: float) -> bool | pd.Series | np.ndarray:
    """Whether |z| > ``bound`` beyond the tolerance (the complement of :func:`within` for finite z)."""
    return np.abs(z) > bound * (1.0 + REL_TOL)


def agreement(z: float) -> str:
    """``within 1 std`` / ``within 2 stds`` / ``within 3 stds`` / ``beyond 3 stds`` of the paper;
    ``–`` for a cell without runs or without a finite z (a paper std of 0 and equal means)."""
    if not np.isfinite(z):
        return BEYOND if np.isinf(z) else "–"
    for bound, label in AGREEMENT:
        if within(z, bound):
            return label
    return BEYOND
