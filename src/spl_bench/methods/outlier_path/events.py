"""The event search of the outlier-path homotopy: the next state change on a linear piece.

On one piece of the path (Suzumura et al., ICML 2014, section 4.2 and appendix C) the
coefficients move by ``da`` and the margins by ``dm`` per unit step; the piece ends when a
coefficient of an active point reaches its bound or the margin of a fixed point reaches 1 or
``s`` (Theorem 4, conditions 10a-10d), and the point changes state (:data:`EVENT_STATES`).
:func:`next_event` finds that step by a Harris ratio test, :func:`apply_event` changes the state.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.methods.outlier_path.errors import DegenerateStepError
from spl_bench.methods.outlier_path.linalg import ActiveSystem
from spl_bench.methods.outlier_path.state import IB, OB, OO, Array, E, F, L, PathState, R

#: Harris ratio test: the largest overshoot of a margin (or, times C, of a coefficient) past
#: its threshold allowed when a degenerate tie is broken towards the largest rate
HARRIS_TOL = 1e-11
#: a swapped point's margin rate of the wrong sign below this fraction of ``|da_j| Q_jj`` (a
#: relative Schur complement) is rounding noise of a pinned f, not a crossing back
SCHUR_NOISE = 1e-6

#: the state a point takes at each kind of event
EVENT_STATES = {
    "E->R": R, "E->L": L, "IB->L": L, "OB->OO": OO, "R->E": E,
    "L->E": E, "L->IB": IB, "OO->OB": OB, "F->E": E,
}


class _Candidates:
    """The state changes reachable on the current piece, gathered for the Harris ratio test."""

    def __init__(self, exclude: int) -> None:
        self.exclude = exclude
        self.t: list[Array] = []
        self.slack: list[Array] = []
        self.rate: list[Array] = []
        self.idx: list[NDArray[np.intp]] = []
        self.kind: list[str] = []

    def add(self, mask: NDArray[np.bool_], num: Array, den: Array, kind: str, unit: float) -> None:
        """The points of ``mask`` reach their threshold at ``t = num / den`` (``den``: the rate,
        ``unit``: its scale, ``C`` for coefficients and 1 for margins)."""
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return
        t = num[idx] / den[idx]
        rate = np.abs(den[idx]) / unit
        if self.exclude >= 0:
            # the point of the last event may not switch back at (numerically) zero step
            t[(idx == self.exclude) & (t <= 1e-12)] = np.inf
        self.t.append(t)
        self.slack.append(t + HARRIS_TOL / rate)
        self.rate.append(rate)
        self.idx.append(idx)
        self.kind.append(kind)

    def first(self, limit: float) -> tuple[float, int, str]:
        """``(t, j, kind)`` of the event that ends the piece, ``(limit, -1, "end")`` if none comes
        before ``limit``: the largest rate among the candidates within the Harris slack."""
        best_t, best_j, best_k = limit, -1, "end"
        if self.t:
            t_all = np.concatenate(self.t)
            if t_all.size and float(t_all.min()) < limit:
                t_h = float(np.concatenate(self.slack).min())
                rate = np.where(t_all <= t_h, np.concatenate(self.rate), -np.inf)
                k = int(np.argmax(rate))
                sizes = np.cumsum([c.size for c in self.idx])
                g = int(np.searchsorted(sizes, k, side="right"))
                best_t = max(0.0, min(float(t_all[k]), limit))
                best_j = int(np.concatenate(self.idx)[k])
                best_k = self.kind[g]
        return best_t, best_j, best_k


def _crossing_back(state: PathState, q_diag: Array, da: Array, dm: Array) -> tuple[float, int]:
    """``(t, j)`` of the first swapped point (state F) whose margin moves back over the boundary
    ``m_j = s``; ``(inf, -1)`` if none does.

    In exact arithmetic this cannot happen: ``dm_j / da_j`` is the Schur complement of the active
    KKT matrix (11) in the bordered Gram matrix, >= 0 for a PSD kernel.  With f pinned (the swapped
    row in the span of the active ones: duplicated rows, d + 1 active points of a linear kernel)
    it is zero and the computed ``dm_j`` is the solve's rounding error, which grows with ``|da_j|``
    and the condition of the system (relative Schur complements of 1e-12 to 1e-10 with the wrong
    sign on australian): rates below :data:`SCHUR_NOISE` of ``|da_j| Q_jj`` are ignored; the margins
    are recomputed by the re-solve at the end of the D-step and checked by Theorem 4 there.
    """
    st, m = state.st, state.m
    fin = (st == F) & state.inl
    fout = (st == F) & ~state.inl
    bad_t, bad_j = np.inf, -1
    with np.errstate(divide="ignore", invalid="ignore"):
        big = 1e-9 * (1.0 + float(np.abs(dm).max(initial=0.0)))
        big = np.maximum(big, SCHUR_NOISE * np.abs(da) * q_diag)
        for mask in (fin & (dm < -big), fout & (dm > big)):
            idx = np.flatnonzero(mask)
            if idx.size:
                t = np.maximum((state.s - m[idx]) / dm[idx], 0.0)
                k = int(np.argmin(t))
                if t[k] < bad_t:
                    bad_t, bad_j = float(t[k]), int(idx[k])
    return bad_t, bad_j


def next_event(state: PathState, system: ActiveSystem, da: Array, dm: Array, limit: float,
               exclude: int) -> tuple[float, int, str]:
    """Step ``t in [0, limit]`` to the next state change (Theorem 4, 10a-10d), by a Harris ratio test.

    Returns ``(t, j, kind)``: point ``j`` changes state by ``kind`` (a key of :data:`EVENT_STATES`,
    or ``"F-bad"`` for a swapped point crossing back, :func:`_crossing_back`), or ``j = -1``
    and ``kind = "end"`` when no event comes before ``limit``.  ``exclude``: the point of the
    last event, which may not switch back at a zero step.

    Degenerate ties (with a linear kernel many points can sit exactly on the margin or
    the boundary, e.g. when f collapses to a constant) are broken as in the simplex
    method (Harris 1973): every candidate may overshoot its threshold by at most
    ``HARRIS_TOL`` (margin units; ``C * HARRIS_TOL`` for coefficients), and among the
    candidates reachable within that slack the one with the largest rate enters or
    leaves.  Picking a point whose rate is rounding noise (a tiny pivot) otherwise makes
    the next active system nearly singular and its coefficients inaccurate.
    """
    st, a, m, C = state.st, state.alpha, state.m, state.C
    eps = 1e-13
    # margin rates below rounding level count as zero (a rank-deficient kernel can pin f
    # while the coefficients still move; then every dm is noise)
    eps_m = 1e-11 * max(1.0, float(np.abs(da).max(initial=0.0))) * system.q_scale
    cands = _Candidates(exclude)
    with np.errstate(divide="ignore", invalid="ignore"):
        cu = max(C, 1e-300)
        dC = state.dC
        cands.add((st == E) & (da < -eps), -a, da, "E->R", cu)
        cands.add((st == E) & (da > dC + eps), C - a, da - dC, "E->L", cu)
        cands.add((st == IB) & (da < dC - eps), C - a, da - dC, "IB->L", cu)
        cands.add((st == OB) & (da > eps), C * state.theta - a, da, "OB->OO", cu)
        cands.add((st == R) & (dm < -eps_m), 1.0 - m, dm, "R->E", 1.0)
        cands.add((st == L) & (dm > eps_m), 1.0 - m, dm, "L->E", 1.0)
        cands.add((st == L) & (dm < -eps_m), state.s - m, dm, "L->IB", 1.0)
        cands.add((st == OO) & (dm > eps_m), state.s - m, dm, "OO->OB", 1.0)
        cands.add((st == F) & state.inl & (dm > eps_m), 1.0 - m, dm, "F->E", 1.0)
    bad_t, bad_j = _crossing_back(state, system.q_diag, da, dm)
    best_t, best_j, best_k = cands.first(limit)
    if bad_j >= 0 and bad_t < best_t:
        return bad_t, bad_j, "F-bad"
    return best_t, best_j, best_k


def apply_event(state: PathState, j: int, kind: str) -> None:
    """Give point ``j`` its state after the event ``kind`` (:data:`EVENT_STATES`); raises
    :class:`DegenerateStepError` for a swapped point that crossed back over the boundary or
    reached margin 1 with its coefficient outside ``[0, C]``."""
    if kind == "F-bad":
        raise DegenerateStepError(
            f"D-step: swapped point {j} crossed back over the boundary (simultaneous swaps)"
        )
    if kind == "F->E" and not 0.0 <= state.alpha[j] <= state.C:
        raise DegenerateStepError(f"D-step: swapped point {j} reached margin 1 with a_i outside [0, C]")
    state.st[j] = EVENT_STATES[kind]
