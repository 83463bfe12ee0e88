"""Skipping the creeping iterations of ACS where its map is affine (GAGA engine and ACS baseline).

With the SVM and an SP-regularizer whose ``v*`` is affine in the loss on each piece (linear,
hard), one ACS iteration (fit with the box ``u = C v*``, then ``v*`` of the new losses) is,
while the free / upper-bound sets of the fit and the SP pieces of every sample hold, an affine
map ``x_{k+1} = T x_k + c`` of ``x = (a, b)``.  Near a vanished branch (after a jump of the
path, or at an age where samples sit near an SP threshold) ACS creeps: ``T`` has one
eigenvalue ``rho`` near 1 and the others decay, so the differences ``x_{k+1} - x_k`` become
``rho`` times the previous one and

    x_{k+j} = x_k + (x_k - x_{k-1}) (rho + rho^2 + ... + rho^j).

:class:`AffineSkip` watches the iterates, and once three of them lie on one piece with
differences ``rho`` times the previous ones it moves the iterate to the largest ``j`` whose
predicted quantities stay at :data:`MARGIN` of the way to the first sign change (or to the
piece's fixed point, if ``rho < 1`` and it comes first).  Plain ACS takes over from there, so
the set changes happen in ACS's own iterations and order; what is skipped are iterations that
change no set.

The SVM's state ``(x, q)`` (:func:`~spl_bench.gaga.svm.acs_skip.svm_state`) and the jump back
into its fit (:func:`~spl_bench.gaga.svm.acs_skip.svm_jump`) are in :mod:`spl_bench.gaga.svm.acs_skip`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

#: |q| below this is "at 0"
ZERO = 1e-9
#: rank-one test of the differences of two successive iterates (relative)
RANK1 = 1e-4
#: the fraction of the way to the first predicted sign change that is skipped
MARGIN = 0.9
#: fewest iterations worth a skip
MIN_SKIP = 3
#: most iterations one skip may stand for
MAX_SKIP = 1e6


class AffineSkip:
    """The state of one ACS run: its latest affine states and what was skipped.

    Feed :meth:`ahead` the state ``(x, q)`` of every iterate (``None`` where the map is not
    known to be affine): ``x`` the iterate, ``q`` the quantities whose signs fix the piece
    (margins minus the hinge kink and the SP thresholds, distances of the duals to their
    box).  ``n_skips`` / ``n_skipped`` count the skips and the iterations they stood for
    (a jump to a piece's fixed point adds none).
    """

    def __init__(self) -> None:
        self.hist: list[tuple[Array, Array, NDArray[np.int8]]] = []
        self.n_skips = 0
        self.n_skipped = 0

    def clear(self) -> None:
        self.hist.clear()

    def ahead(self, state: tuple[Array, Array] | None) -> tuple[Array, Array, float] | None:
        """``(x, q, rho**j)`` of the iterate ``j`` ACS steps on, or ``None`` (no skip)."""
        hist = self.hist
        if state is None:
            hist.clear()
            return None
        x, q = state
        pat = (np.sign(q) * (np.abs(q) > ZERO)).astype(np.int8)
        hist.append((x, q, pat))
        del hist[:-3]
        if len(hist) < 3 or not all(np.array_equal(h[2], pat) for h in hist[:2]):
            return None
        (x0, q0, _), (x1, q1, _) = hist[0], hist[1]
        d0, d1, e0, e1 = x1 - x0, x - x1, q1 - q0, q - q1
        n0 = float(d0 @ d0)
        if not n0 > 0:
            return None
        rho = float(d1 @ d0) / n0
        nd1, ne1 = float(np.linalg.norm(d1)), float(np.linalg.norm(e1))
        if not (rho > 0 and np.linalg.norm(d1 - rho * d0) <= RANK1 * nd1
                and np.linalg.norm(e1 - rho * e0) <= RANK1 * ne1):
            return None
        if np.any((pat == 0) & (np.abs(e1) > ZERO)):  # a quantity at 0 about to leave it
            return None
        toward = (pat != 0) & (q * e1 < 0)
        s_first = float(np.min(-q[toward] / e1[toward])) if np.any(toward) else np.inf
        target = MARGIN * s_first
        if rho < 1.0 and rho / (1.0 - rho) <= target:  # the fixed point of this piece comes first
            j, S = np.inf, rho / (1.0 - rho)
        else:
            if not np.isfinite(target):
                return None
            j = (np.floor(np.log1p(target * (rho - 1.0) / rho) / np.log(rho)) if abs(rho - 1.0) > 1e-12
                 else np.floor(target))
            if not j >= MIN_SKIP:
                return None
            j = min(j, MAX_SKIP)
            S = rho * np.expm1(j * np.log(rho)) / (rho - 1.0) if abs(rho - 1.0) > 1e-12 else j
        hist.clear()
        self.n_skips += 1
        self.n_skipped += int(j) if np.isfinite(j) else 0
        return x + S * d1, q + S * e1, (rho ** j if np.isfinite(j) else 0.0)
