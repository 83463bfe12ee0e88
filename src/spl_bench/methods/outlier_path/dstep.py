"""The D-step of the outlier-path homotopy (Suzumura et al., ICML 2014, Algorithm 3, appendix C).

When a margin reaches the boundary ``m_i = s`` (Theorem 4, 10e), the point is swapped to the
other side (inlier <-> outlier) and the solution of the convex problem (14) for the new
partition is traced by the homotopy in ``mu`` from 1 to 0 (run as ``tau = 1 - mu``): the
swapped coefficient moves linearly to its new fixed value while the active ones follow system
(11).  By Theorem 3 the objective (1) strictly decreases.  These functions act on the shared
:class:`~spl_bench.methods.outlier_path.state.PathState` through the
:class:`~spl_bench.methods.outlier_path.engine.Engine` and its active system.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.methods.outlier_path.engine import Engine
from spl_bench.methods.outlier_path.errors import DegenerateStepError, NoEnteringPointError
from spl_bench.methods.outlier_path.linalg import ActiveSystem
from spl_bench.methods.outlier_path.state import IB, OB, OO, Array, E, F, L, PathState, R


def expose_boundary(state: PathState) -> None:
    """Give the boundary states to fixed points lying on the boundary ``m_i = s`` (eq. 15).

    An L point (``a_i = C``) or OO point (``a_i = C theta``) can end a D-step on the
    boundary, e.g. when a null-space move fixed it there (duplicated rows).  Its
    coefficient is on the edge of the IB / OB box, so the states change and f does not;
    Theorem 4 (10e) then sends it through a D-step of its own.
    """
    near = np.abs(state.m - state.s) <= state.tol
    state.st[near & (state.st == L) & state.inl] = IB
    state.st[near & (state.st == OO) & ~state.inl] = OB


def settleable(state: PathState) -> bool:
    """Whether every boundary point already holds the coefficient of the fixed state on its
    side (IB: ``a_i = C``, OB: ``a_i = C theta``; eq. 10c, 10d), so :func:`settle_boundary`
    leaves f as it is.

    After a D-step that did not decrease the objective this holds when f is pinned (the
    swapped coefficient reached its target with f unchanged).  It fails for a tie that the
    D-step has only half resolved: e.g. two duplicated rows reach the boundary together, the
    first is swapped, and the second absorbs the change of the first (f unchanged) and stays
    on the boundary with a coefficient strictly inside its box.  Forcing that coefficient to
    its bound would move f by a finite amount (the wrong-state failures of the spambase
    paths); the tie must instead be resolved by a D-step on the second point.
    """
    B = state.boundary()
    fixed = np.where(state.st[B] == IB, state.C, state.C * state.theta)
    return bool(np.all(np.abs(state.alpha[B] - fixed) <= 1e-9 * state.C))


def settle_boundary(state: PathState, system: ActiveSystem) -> None:
    """Turn boundary points into the fixed state their coefficient allows (degenerate ties),
    then re-solve system (11).

    Only valid when :func:`settleable`: the coefficients are already at the fixed values,
    so f does not change.
    """
    for i in state.boundary():
        if state.st[i] == OB:
            state.st[i] = OO
            state.alpha[i] = state.C * state.theta
        else:
            state.st[i] = L
            state.alpha[i] = state.C
        state.last = int(i)
    system.refresh(state)


def finish_collapsed_dstep(state: PathState, system: ActiveSystem) -> None:
    """End a D-step whose mu-path cannot keep ``sum a_i y_i = 0`` (no active point can absorb it).

    This happens when the solution collapses towards a constant classifier (all points
    that could move are of one class).  The end point of the D-step is then computed
    directly: the swapped coefficients take their targets, and if ``sum a_i y_i = 0``
    holds there, ``b`` is chosen inside the interval where every fixed state keeps its
    margin condition (the KKT conditions of the convex problem (14), hence optimal).
    """
    A = state.active()
    f = np.flatnonzero(state.st == F)
    alpha = state.alpha.copy()
    alpha[f] = state.target[f]
    if A.size or abs(float(alpha @ state.y)) > 1e-9 * max(1.0, state.C):
        raise DegenerateStepError("no point can become active (b-move) and the D-step end is infeasible")
    g = system.q_dot(alpha)  # margins without b: m = g + y b
    lo, hi = -np.inf, np.inf
    st, y, s = state.st, state.y, state.s
    inl_like = (st == L) | ((st == F) & state.inl)
    out_like = (st == OO) | ((st == F) & ~state.inl)
    for mask, mlo, mhi in ((st == R, 1.0, np.inf), (inl_like, s, 1.0), (out_like, -np.inf, s)):
        for i in np.flatnonzero(mask):
            # mlo <= g_i + y_i b <= mhi
            a1, a2 = (mlo - g[i], mhi - g[i]) if y[i] > 0 else (g[i] - mhi, g[i] - mlo)
            lo, hi = max(lo, a1), min(hi, a2)
    if not lo <= hi:
        raise DegenerateStepError("collapsed D-step: no intercept satisfies the KKT conditions")
    if np.isfinite(lo) and np.isfinite(hi):
        b = 0.5 * (lo + hi)
    elif np.isfinite(lo) or np.isfinite(hi):
        b = lo + 1.0 if np.isfinite(lo) else hi - 1.0
    else:
        b = 0.0
    state.alpha = alpha
    state.b = float(b)
    state.tau = 1.0
    state.m = g + y * state.b


def dstep(engine: Engine, max_events: int, candidates: NDArray[np.intp] | None = None) -> int:
    """One D-step (Algorithm 3, appendix C): swap a boundary point, trace mu 1 -> 0.

    ``candidates`` (default: all boundary points) are the points that may be swapped.
    Returns the number of swapped points; they are kept in ``engine.state.swapped``.
    """
    state, system = engine.state, engine.system
    B = state.boundary() if candidates is None else np.asarray(candidates, dtype=np.intp)
    if B.size > 1:
        # ties: swap one point per D-step, the one violating the KKT conditions of
        # the other side most (Theorem 3 holds for any single swap; the joint
        # mu-path of several swaps is not monotone and can fail)
        viol = np.where(state.st[B] == IB, state.alpha[B] - state.C * state.theta, state.C - state.alpha[B])
        B = B[[int(np.argmax(viol))]]
    state.swapped = B
    state.inl[B] = ~state.inl[B]
    state.bef[B] = state.alpha[B]
    state.target[B] = np.where(state.inl[B], state.C, state.C * state.theta)
    state.st[B] = F
    state.tau = 0.0
    q = np.zeros(state.n)
    q[B] = state.target[B] - state.bef[B]

    def adv(t: float) -> None:
        state.tau = min(1.0, state.tau + t)

    def rate() -> Array:
        return np.where(state.st == F, q, 0.0)

    state.last = -1
    try:
        engine.trace(rate, 1.0, adv, lambda kind: False, max_events)
    except NoEnteringPointError:
        finish_collapsed_dstep(state, system)
    state.tau = 1.0
    f = np.flatnonzero(state.st == F)
    state.alpha[f] = state.target[f]
    for i in f:
        if state.inl[i]:
            state.st[i] = IB if state.m[i] <= state.s + state.tol else (E if state.m[i] >= 1 - state.tol else L)
        else:
            state.st[i] = OB if state.m[i] >= state.s - state.tol else OO
    system.refresh(state)
    return int(B.size)
