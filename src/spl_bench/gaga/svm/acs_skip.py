"""The SVM's affine ACS state for :class:`~spl_bench.gaga.core.acs_skip.AffineSkip`.

:func:`svm_state` reads the state ``x = (a, b)`` and the quantities ``q`` whose sign changes
end an affine piece from the latest weighted SVM fit; :func:`svm_jump` puts an extrapolated
state back into the fit.  The skipping itself (generic in the state) is in
:mod:`spl_bench.gaga.core.acs_skip`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def svm_state(dual: Any, last: tuple[Array, float, Array] | None, params_a: Array | None, C: float,
              sp: Any, lam: float) -> tuple[Array, Array] | None:
    """The affine state of the latest weighted SVM fit: ``x = (a, b)`` and ``q`` = ``g``,
    ``g - lo/C``, ``g - hi/C`` (hinge kink, SP thresholds), ``a/C``, ``(u - a)/C`` (the fit's
    sets in its box ``u``).  ``last = (a, b, g)`` is that fit, by the exact dual solver ``dual``
    (a ``WeightedSVMDual``); ``None`` unless ``params_a`` is its ``a`` and ``v*`` is affine in the
    loss on each piece (shared by the GAGA engine's SVM system and the ACS baseline)."""
    if (not sp.v_affine_in_loss or last is None or dual is None or dual._last is None or dual.last_u is None
            or params_a is not last[0] or dual._last[0] is not last[0]):
        return None
    a, b, g = last
    lo, hi = sp.thresholds(lam)
    return np.append(a, b), np.concatenate([g, g - lo / C, g - hi / C, a / C, (dual.last_u - a) / C])


def svm_jump(dual: Any, x: Array, q: Array, C: float) -> tuple[Array, float, Array]:
    """``(a, b, g)`` at an extrapolated state of :func:`svm_state`; ``dual``'s next fit starts from
    the sets of its latest one, in the extrapolated box."""
    n = x.size - 1
    a = x[:n].copy()
    dual._last = (a, dual._last[1], dual._last[2])
    dual.last_u = C * q[4 * n:] + a
    return a, float(x[n]), q[:n].copy()
