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
                   compiled: bool = False) -> Array | None:
    """Exact ``argmin_w 1/2 sum_i v_i (y_i - x_i^T w)^2 + lev ||w||_1`` by an active-set method.

    Warm-started from ``w0``: solve the equality system on the active set with fixed signs,
    step back to the first coefficient that would change sign (and drop it), add the most
    violating inactive coordinate, until the subgradient conditions hold to 1e-12.
    Returns ``None`` if it does not converge (the caller then uses the model's solver).
    ``compiled``: the same method compiled (:func:`spl_bench.gaga.glm.inner_nb.weighted_lasso`).
    """
    if compiled:
        w_nb, ok = inner_nb.weighted_lasso(np.ascontiguousarray(X, dtype=float), np.asarray(y, dtype=float),
                                           np.asarray(v, dtype=float), float(lev),
                                           np.array(w0, dtype=float), max_iter)
        return w_nb if ok else None
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
            return w
        if n_round > 3:  # after a few rounds add one coordinate at a time (no cycling)
            add = add[[int(np.argmax(viol[add]))]]
        active[add] = True
        sign[add] = np.sign(corr[add])
    return None
