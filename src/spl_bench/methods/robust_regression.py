"""Robust-regression baselines of the DSPL paper (Zhang et al., IJCAI 2018, section 5.1).

* :class:`SPLKumar` -- centralised self-paced learning (Kumar et al., 2010) with the hard
  regularizer on the DSPL model: squared loss ``(y - x^T w)^2`` plus ``reg ||w||^2``,
  alternating the exact weighted ridge solve and ``v = 1[ell < lam]``, ``lam <- min(mu lam, tau)``.
* :class:`TORR` -- Torrent-FC (Bhatia, Jain & Kar, NIPS 2015): least squares on the active
  set, then hard thresholding to the ``(1 - beta) n`` smallest absolute residuals, with the
  corruption ratio ``beta`` given; ``perturb = 0.25`` gives TORR25 (``beta`` drawn uniformly
  in ``[0.75 beta, 1.25 beta]``).

RLHH (Zhang et al., IJCAI 2017) and DRLR (Zhang et al., ICDM 2017) are not implemented:
their thresholding heuristics could not be reconstructed faithfully from the material
available here (see ``docs/dspl.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import ConfigError, DataError, check_positive
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.models import Params


# ----------------------------------------------------------------------------- SPL (Kumar)
def weighted_ridge(X: Array, y: Array, v: Array, reg: float) -> Array:
    """``argmin_w sum_j v_j (y_j - w^T x_j)^2 + reg ||w||^2``: ``(X^T V X + reg I) w = X^T V y``."""
    Xv = X * v[:, None]
    A = Xv.T @ X + reg * np.eye(X.shape[1])
    b = Xv.T @ y
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        # reg = 0 with too few selected rows: minimum-norm least squares
        return np.linalg.lstsq(A, b, rcond=None)[0]


def spl_hard_path(
    X: Array,
    y: Array,
    lam0: float = 1.0,
    tau: float = 1.0,
    mu: float = 1.1,
    reg: float = 1.0,
    max_iter: int = 500,
) -> tuple[list[Array], list[float], list[Array], bool]:
    """Centralised hard-SPL (Kumar et al. 2010) by alternate convex search.

    Starts from ``v = 1``; each iteration solves the weighted ridge problem, sets
    ``v = 1[(y - Xw)^2 < lam]`` and grows ``lam <- min(mu lam, tau)``.  Stops when
    ``lam = tau`` and ``v`` no longer changes (a partial optimum at ``tau``).

    Returns
    -------
    (ws, lams, vs, converged)
        The model after each iteration, the age it was fitted with, its weights.
    """
    lam0 = check_positive("lam0", lam0)
    tau = check_positive("lam_max", tau)
    mu = check_positive("mu", mu)
    if lam0 > tau or mu < 1:
        raise ConfigError(f"need lam0 <= lam_max and mu >= 1, got lam0={lam0}, lam_max={tau}, mu={mu}")
    v = np.ones(len(y))
    lam = lam0
    ws, lams, vs = [], [], []
    for _ in range(int(max_iter)):
        w = weighted_ridge(X, y, v, reg)
        ws.append(w)
        lams.append(lam)
        vs.append(v)
        r = y - X @ w
        v_new = (r * r < lam).astype(float)
        if lam >= tau and np.array_equal(v_new, v):
            return ws, lams, vs, True
        v = v_new
        lam = min(lam * mu, tau)
    return ws, lams, vs, False


class SPLKumar(SPLEstimator):
    """Self-paced learning (Kumar et al. 2010), hard regularizer, on all data at once.

    DSPL section 5.1 runs it with ``lam = 1`` and step ``mu = 1.1``; the schedule is
    ``lam0, mu lam0, ...`` capped at ``lam_max`` (default ``lam_max = lam0 = 1``, the
    DSPL ``tau_lambda``; an uncapped schedule ends by including every corrupted row).
    Candidates are the iterations (``{"lam": ..., "iter": ...}``).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "hard",
        sp_params: dict[str, Any] | None = None,
        lam0: float = 1.0,
        lam_max: float = 1.0,
        mu: float = 1.1,
        reg: float = 1.0,
        max_iter: int = 500,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.lam0 = lam0
        self.lam_max = lam_max
        self.mu = mu
        self.reg = reg
        self.max_iter = max_iter

    def _fit(self, X: Array, y: Array) -> None:
        if self.task_ != "regression":
            raise ConfigError("SPLKumar is the DSPL robust-regression baseline; use a regression model")
        ws, lams, vs, ok = spl_hard_path(X, y, self.lam0, self.lam_max, self.mu, self.reg, self.max_iter)
        self.coef_ = ws[-1]
        self.v_ = vs[-1]
        self.converged_ = ok
        self.n_iter_ = len(ws)  # alternate-convex-search iterations run (at most max_iter)
        self.candidate_models_ = [Params(coef=w) for w in ws]
        self.candidate_params_ = [{"lam": float(lam), "iter": i} for i, lam in enumerate(lams)]

    def run_info(self) -> dict[str, Any]:
        return {**super().run_info(), "converged": bool(self.converged_), "n_selected": float(self.v_.sum())}


# ----------------------------------------------------------------------------- TORRENT
def hard_threshold(r: Array, k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` smallest ``|r|`` (Torrent's ``HT`` operator), sorted; ties by index."""
    order = np.argsort(np.abs(r), kind="stable")
    return np.sort(order[:k])


def torrent_fc(
    X: Array, y: Array, beta: float, tol: float = 1e-10, max_iter: int = 200
) -> tuple[Array, NDArray[np.int64], int, bool]:
    """Torrent-FC (Bhatia et al. 2015, fully-corrective variant).

    ``S_0 = [n]``; repeat ``w = argmin_w ||y_S - X_S w||^2`` (least squares),
    ``S = HT(y - Xw, n - round(beta n))``, until ``S`` is unchanged or the residual
    norm on the active set changes by less than ``tol``.

    Returns
    -------
    (w, S, n_iter, converged)
    """
    n, p = X.shape
    if not 0.0 <= beta < 1.0:
        raise ConfigError(f"Torrent's corruption ratio must be in [0, 1), got {beta}")
    k = n - int(round(beta * n))
    if k < p:
        raise DataError(f"Torrent keeps {k} rows with beta={beta:.3f}, fewer than the {p} features")
    S = np.arange(n)
    prev = np.inf
    w = np.zeros(p)
    for it in range(1, int(max_iter) + 1):
        w = np.linalg.lstsq(X[S], y[S], rcond=None)[0]
        r = y - X @ w
        S_new = hard_threshold(r, k)
        res = float(np.linalg.norm(r[S_new]))
        if np.array_equal(S_new, S) or abs(prev - res) < tol:
            return w, S_new, it, True
        S, prev = S_new, res
    return w, S, int(max_iter), False


class TORR(SPLEstimator):
    """Torrent-FC with the corruption ratio given (``corruption``), or perturbed (TORR25).

    Parameters
    ----------
    corruption : float
        The true corruption ratio ``beta`` (required).
    perturb : float
        Draw the ratio actually used uniformly in ``[(1 - perturb) beta, (1 + perturb) beta]``
        (0.25 for TORR25; 0 for TORR).
    random_state : int, optional
        Seed of that draw.
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "hard",
        sp_params: dict[str, Any] | None = None,
        corruption: float | None = None,
        perturb: float = 0.0,
        random_state: int | None = None,
        tol: float = 1e-10,
        max_iter: int = 200,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.corruption = corruption
        self.perturb = perturb
        self.random_state = random_state
        self.tol = tol
        self.max_iter = max_iter

    def beta_used(self) -> float:
        """The corruption parameter handed to Torrent (perturbed for TORR25)."""
        if self.corruption is None:
            raise ConfigError("TORR needs the corruption ratio: set method.corruption (e.g. 0.3)")
        beta = float(self.corruption)
        if not 0.0 <= beta < 1.0:
            raise ConfigError(f"method.corruption must be in [0, 1), got {self.corruption!r}")
        if not 0.0 <= float(self.perturb) < 1.0:
            raise ConfigError(f"perturb must be in [0, 1), got {self.perturb!r}")
        if self.perturb:
            rng = np.random.default_rng(self.random_state)
            beta *= rng.uniform(1.0 - self.perturb, 1.0 + self.perturb)
        return beta

    def _fit(self, X: Array, y: Array) -> None:
        if self.task_ != "regression":
            raise ConfigError("TORR is a robust-regression method; use a regression model")
        beta = self.beta_used()
        # a perturbed ratio can exceed what the data allow: keep at least p rows
        beta = min(beta, 1.0 - X.shape[1] / X.shape[0])
        w, S, it, ok = torrent_fc(X, y, beta, self.tol, self.max_iter)
        self.coef_ = w
        self.active_set_ = S
        self.beta_ = beta
        self.n_iter_ = it
        self.converged_ = ok
        self.candidate_models_ = [Params(coef=w)]
        self.candidate_params_ = [{"beta": float(beta)}]

    def run_info(self) -> dict[str, Any]:
        return {**super().run_info(), "beta": float(self.beta_), "iters": int(self.n_iter_),
                "converged": bool(self.converged_)}
