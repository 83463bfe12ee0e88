"""Inner solver of the GLM's ACS steps: the exact v-weighted lasso fit for fixed weights ``v``.

GAGA's warm starts and restarts (Algorithm 1), ACS and MOSPL all need the minimiser of the
model's loss weighted by ``v`` (the ACS step for a fixed age).  For the lasso:

* :func:`weighted_lasso`: ``argmin_w 1/2 sum_i v_i (y_i - x_i^T w)^2 + lev ||w||_1``.

It returns ``None`` when it does not converge; the caller then uses the model's solver.  The
kernel SVM's counterpart, :class:`~spl_bench.gaga.svm.inner.WeightedSVMDual`, is in
:mod:`spl_bench.gaga.svm.inner`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.glm import inner_nb

Array = NDArray[np.float64]


def weighted_lasso(X: Array, y: Array, v: Array, lev: float, w0: Array, max_iter: int = 500,
                   compiled: bool = False, counts: dict[str, int] | None = None) -> Array | None:
    """Exact ``argmin_w 1/2 sum_i v_i (y_i - x_i^T w)^2 + lev ||w||_1`` by an active-set method.

    Warm-started from ``w0``: solve the equality system on the active set with fixed signs,
    step back to the first coefficient that would change sign (and drop it), add the most
    violating inactive coordinate, until the subgradient conditions hold to 1e-12.
    ``compiled``: the same method compiled (:func:`spl_bench.gaga.glm.inner_nb.weighted_lasso`).

    Where that does not converge (its equality systems are singular when the active columns are
    linearly dependent on the rows with ``v > 0``: columns equal on those rows, as on ailerons),
    the same method again from ``w0`` with degenerate pivots (:func:`_active_set`,
    ``rank_safe``), which keeps the active columns independent.  A fit the first solver makes is
    therefore unchanged to the bit.  Returns ``None`` if neither converges (the caller then uses
    the model's solver).  ``counts["pivoted"]`` (if given) counts the fits made with the pivots.
    """
    if compiled:
        w_nb, ok = inner_nb.weighted_lasso(np.ascontiguousarray(X, dtype=float), np.asarray(y, dtype=float),
                                           np.asarray(v, dtype=float), float(lev),
                                           np.array(w0, dtype=float), max_iter)
        if ok:
            return w_nb
    else:
        w = _active_set(X, y, v, lev, w0, max_iter, rank_safe=False)
        if w is not None:
            return w
    w = _active_set(X, y, v, lev, w0, max_iter, rank_safe=True)
    if w is not None and counts is not None:
        counts["pivoted"] = counts.get("pivoted", 0) + 1
    return w


#: the subgradient condition of an active coordinate, ``|x_j^T V r - lev sign(w_j)| <= ACTIVE_TOL lev``, checked
#: on the result: the equality solves make it hold to rounding unless their system was singular
ACTIVE_TOL = inner_nb.ACTIVE_TOL
#: an eigenvalue of the active Gram matrix at most this share of its largest marks a null direction
#: (``rank_safe``): columns dependent on the rows with ``v > 0`` give about 1e-16
NULL_TOL = 1e-10


def _active_set(X: Array, y: Array, v: Array, lev: float, w0: Array, max_iter: int,
                rank_safe: bool) -> Array | None:
    """The active-set method of :func:`weighted_lasso`.

    ``rank_safe``: each equality system is tested for a null direction ``z`` of the active Gram
    matrix ``G_AA = X_A^T V X_A`` (``X_A z = 0`` on the rows with ``v > 0``).  Along ``z`` the
    datafit is constant and, on the face of the current signs ``s``, the penalty changes by
    ``lev s^T z`` per unit, so the system has no solution unless ``s^T z = 0``.  Instead of solving
    it, ``w_A`` moves along ``d = -sign(s^T z) z`` (``z`` itself if ``s^T z = 0``: then the
    objective is flat along it) to the first coefficient that reaches 0, which leaves the active
    set (a degenerate pivot: the fitted values stay, the penalty does not grow).  An active set
    whose columns are independent has no null direction, so this ends with one.
    """
    d = X.shape[1]
    w = np.array(w0, dtype=float)
    vy = v * y
    c0 = X.T @ vy
    # the Gram matrix X^T V X only on the columns that are ever active (n k^2, not n d^2)
    G = np.empty((d, d))
    have = np.zeros(d, dtype=bool)

    def gram(idx: NDArray[np.intp]) -> Array:
        new = idx[~have[idx]]
        if new.size:
            known = np.flatnonzero(have)
            XVn = X[:, new] * v[:, None]
            G[np.ix_(new, new)] = X[:, new].T @ XVn
            if known.size:
                blk = X[:, known].T @ XVn
                G[np.ix_(known, new)] = blk
                G[np.ix_(new, known)] = blk.T
            have[new] = True
        return G[np.ix_(idx, idx)]

    active = w != 0
    sign = np.sign(w)
    for n_round in range(max_iter):
        # equality solve on the active set, dropping coordinates that would change sign
        for _ in range(d + 1):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            if rank_safe and _degenerate_pivot(gram(idx), idx, w, sign, active):
                continue
            try:
                target = np.linalg.solve(gram(idx), c0[idx] - lev * sign[idx])
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(target)):
                return None
            cur = w[idx]
            bad = np.sign(target) != sign[idx]
            if not np.any(bad):
                w[idx] = target
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(bad, cur / (cur - target), np.inf)
            k = int(np.argmin(t))
            tk = float(np.clip(t[k], 0.0, 1.0))
            w[idx] = cur + tk * (target - cur)
            w[idx[k]] = 0.0
            active[idx[k]] = False
            sign[idx[k]] = 0.0
        corr = X.T @ (vy - v * (X @ w))  # X^T V r
        viol = np.abs(corr) - lev
        viol[active] = -np.inf
        add = np.flatnonzero(viol > 1e-12 * lev)
        if d == 0 or add.size == 0:
            # the active coordinates' conditions too: an equality system singular to working
            # precision is "solved" without an error, into a point that does not satisfy them
            on = active & (w != 0)
            if np.abs(corr[on] - lev * sign[on]).max(initial=0.0) > ACTIVE_TOL * lev:
                return None
            return w
        if n_round > 3:  # after a few rounds add one coordinate at a time (no cycling)
            add = add[[int(np.argmax(viol[add]))]]
        active[add] = True
        sign[add] = np.sign(corr[add])
    return None


def _degenerate_pivot(G: Array, idx: NDArray[np.intp], w: Array, sign: Array, active: NDArray[np.bool_]) -> bool:
    """One degenerate pivot of :func:`_active_set` (``rank_safe``) if ``G`` (the active Gram matrix
    on the columns ``idx``) has a null direction: ``w``, ``sign`` and ``active`` updated in place;
    ``False`` (nothing changed) if it has none."""
    ev, Q = np.linalg.eigh(G)
    if ev[0] > NULL_TOL * max(ev[-1], np.finfo(float).tiny):
        return False
    z = Q[:, 0]
    s = sign[idx]
    sz = float(s @ z)
    d = -np.sign(sz) * z if abs(sz) > NULL_TOL * np.abs(z).sum() else z
    cur = w[idx]
    # coordinates that move towards 0 (or start at 0 and would leave their sign): when they get there
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d * s < 0, np.where(cur != 0, -cur / d, 0.0), np.inf)
    t[np.abs(d) <= NULL_TOL * np.abs(d).max()] = np.inf  # rounding-level components do not block
    k = int(np.argmin(t))
    if not np.isfinite(t[k]):  # pragma: no cover - a null direction must reach a 0 (the penalty is bounded below)
        return False
    tk = max(float(t[k]), 0.0)
    w[idx] = cur + tk * d
    w[idx[k]] = 0.0
    active[idx[k]] = False
    sign[idx[k]] = 0.0
    return True
