"""Huber regression with an L1 penalty: ``ell_i = H_delta(y_i - x_i^T w)``, ``R(w) = n alpha ||w||_1``.

``H_delta(r) = r^2 / 2`` for ``|r| <= delta`` and ``delta |r| - delta^2 / 2`` beyond; no
intercept (centre the data, as for the lasso).  With ``delta`` larger than every
residual this is the lasso.  The scale of the residuals is *not* estimated (unlike
scikit-learn's ``HuberRegressor``): ``delta`` is in the units of ``y``.

The weighted problem ``min_w sum_i v_i H_delta(r_i) + n alpha ||w||_1`` is solved by
cyclic coordinate descent on the quadratic majoriser (``H'' <= 1``), and the result
polished exactly: the objective is piecewise quadratic, so once the support, the
signs and each sample's piece are identified the optimum solves one linear system,
which is accepted only if it reproduces that support, those signs and pieces.
"""

from __future__ import annotations

import numpy as np

from spl_bench.errors import check_positive
from spl_bench.models import REGISTRY
from spl_bench.models.base import Array, Params
from spl_bench.models.datafits import HUBER_QUAD, Huber
from spl_bench.models.glm import GLMModel
from spl_bench.models.penalties import L1


@REGISTRY.register("huber")
class HuberModel(GLMModel):
    """Huber loss (datafit :class:`Huber`) with an L1 penalty ``n alpha ||w||_1`` (:class:`L1`)."""

    task = "regression"

    def __init__(self, alpha: float = 5e-3, delta: float = 1.0, tol: float = 1e-12,
                 max_sweeps: int = 20_000) -> None:
        self.alpha = check_positive("huber alpha", alpha)
        self.delta = check_positive("huber delta", delta)
        self.tol = float(tol)
        self.max_sweeps = int(max_sweeps)
        self.datafit = Huber(self.delta)
        self.penalty = L1(self.alpha)

    def get_params(self) -> dict[str, float]:
        return {"alpha": self.alpha, "delta": self.delta}

    def penalty_level(self, n: int) -> float:
        """``n alpha``, the L1 weight of the objective."""
        return self.penalty.level(n)

    # ------------------------------------------------------------------ solve
    def fit_weighted(self, X: Array, y: Array, v: Array, warm: Params | None = None) -> Params:
        n, d = X.shape
        lev = self.penalty_level(n)
        keep = v > 0
        w = np.zeros(d) if warm is None or warm.coef is None else np.array(warm.coef, dtype=float)
        if not np.any(keep):
            return Params(coef=np.zeros(d))
        Xk, yk, vk = X[keep], y[keep], v[keep]
        curv = vk @ (Xk * Xk)  # coordinate-wise Lipschitz constants of the data gradient
        w[curv <= 0.0] = 0.0  # a column that is 0 on every weighted row: only the penalty sees it
        r = yk - Xk @ w
        done = 0
        while done < self.max_sweeps:
            sweeps = min(25 if done == 0 else 2 * done, self.max_sweeps - done)
            r = self._cd(Xk, yk, vk, w, r, curv, lev, sweeps)
            done += sweeps
            exact = self._polish(Xk, yk, vk, w, n)
            if exact is not None:
                return Params(coef=exact)
            if self._kkt(Xk, yk, vk, w, n) <= self.tol:
                break
        return Params(coef=w)

    def _cd(self, X: Array, y: Array, v: Array, w: Array, r: Array, curv: Array, lev: float,
            sweeps: int) -> Array:
        """``sweeps`` cyclic sweeps of majorised coordinate descent (``w`` updated in place);
        returns the residual ``y - X w``."""
        dl = self.delta
        for _ in range(sweeps):
            for j in range(w.size):
                if curv[j] <= 0.0:
                    continue
                xj = X[:, j]
                g = -(xj @ (v * np.clip(r, -dl, dl)))  # d/dw_j of sum_i v_i H(r_i)
                t = w[j] - g / curv[j]
                new = np.sign(t) * max(abs(t) - lev / curv[j], 0.0)
                if new != w[j]:
                    r -= xj * (new - w[j])
                    w[j] = new
        return r

    def _kkt(self, X: Array, y: Array, v: Array, w: Array, n: int) -> float:
        """:meth:`kkt_violation` on the rows with ``v > 0`` of a problem with ``n`` rows."""
        g = X.T @ (v * self.datafit.d1(X @ w, y))
        return float(self.penalty.subdiff_distance(w, g, n).max(initial=0.0)) / self.penalty_level(n)

    def _polish(self, X: Array, y: Array, v: Array, w: Array, n: int) -> Array | None:
        """The exact optimum for the support, signs and pieces of ``w``, if it keeps them
        (``X, y, v``: the rows with ``v > 0`` of a problem with ``n`` rows)."""
        lev = self.penalty_level(n)
        A = w != 0.0
        sign = np.sign(w[A])
        piece = self.datafit.pieces(X @ w, y)
        quad = piece == HUBER_QUAD
        XA = X[:, A]
        out = np.zeros(w.size)
        if A.any():
            XQ = XA[quad]
            H = XQ.T @ (v[quad, None] * XQ)
            rhs = XQ.T @ (v[quad] * y[quad]) + self.delta * (XA[~quad].T @ (v[~quad] * piece[~quad])) - lev * sign
            try:
                out[A] = np.linalg.solve(H, rhs)
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(out)) or np.any(np.sign(out[A]) != sign):
                return None
        if np.any(self.datafit.pieces(X @ out, y) != piece):
            return None
        if self._kkt(X, y, v, out, n) > 1e-9:
            return None
        return out
