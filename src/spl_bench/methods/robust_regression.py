"""Robust-regression baselines of the DSPL paper (Zhang et al., IJCAI 2018, section 5.1).

* :class:`SPLKumar` -- centralised self-paced learning (Kumar et al., 2010) with the hard
  regularizer on the DSPL model: squared loss ``(y - x^T w)^2`` plus ``reg ||w||^2``,
  alternating the exact weighted ridge solve and ``v = 1[ell < lam]``, ``lam <- min(mu lam, tau)``.
* :class:`TORR` -- Torrent-FC (Bhatia, Jain & Kar, NIPS 2015): least squares on the active
  set, then hard thresholding to the ``(1 - beta) n`` smallest absolute residuals, with the
  corruption ratio ``beta`` given; ``perturb = 0.25`` gives TORR25 (``beta`` drawn uniformly
  in ``[0.75 beta, 1.25 beta]``).
* :class:`RLHH` -- robust least squares via heuristic hard thresholding (Zhang, Zhao,
  Boedihardjo & Lu, IJCAI 2017): the same alternation as Torrent, but the number ``tau`` of
  rows kept is estimated from the sorted residuals at every iteration (no corruption ratio).
  With ``n_batches > 1`` it runs on each batch and averages the batch coefficients, as the
  DSPL paper's baseline does.
* :class:`DRLR` -- distributed robust linear regression (Zhang, Zhao, Boedihardjo & Lu,
  ICDM 2017): a heuristic-hard-thresholding fit per batch, then the *majority clique* of the
  batch coefficients (the ``floor(m/2) + 1`` batches closest to one centre batch) is averaged.

The heuristics and constants of RLHH and DRLR were read in the authors' MATLAB code
(``xuczhang/DistOnlineRR``: ``src/model/RLHH.m``, ``src/model/SingleHR.m``,
``src/DRLR.m``, ``src/model/Baseline_RLHH.m``; ``xuczhang/RLHH``); ``docs/dspl.md`` lists
where paper and code differ and what is used here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import ConfigError, DataError, check_int, check_positive
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.methods.dspl import split_batches
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
        w = _lstsq(X[S], y[S], "Torrent")
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


# ----------------------------------------------------------------------------- RLHH / DRLR
#: Stopping tolerance of the heuristic-hard-thresholding loop: the authors' ``MIN_THRES = 1e-3``
#: (DistOnlineRR ``src/model/RLHH.m`` and ``src/model/SingleHR.m``).
HH_TOL = 1e-3
#: Iteration cap of that loop: the authors' ``MAX_ITER = 100`` (same files).
HH_MAX_ITER = 100
#: Slope factor of the consistency bound ``r_(tau) <= 2 tau r_rms / tau_o``: the authors' 2.
HH_SLOPE = 2.0
#: Constant added to ``r_(k)`` in RLHH's score ``((r_(k) + 1) / k) / ((r_(n) - r_(k)) / (n - k))``.
HH_SCORE_SHIFT = 1.0
#: DRLR's per-batch search never keeps fewer than ``3 p`` rows (the authors' ``SingleHR.m``).
HH_MIN_ROWS_PER_FEATURE = 3

HEURISTICS = ("score", "descending")


def _check_xy(X: Array, y: Array, who: str) -> tuple[Array, Array]:
    """``X`` (n, p) and ``y`` (n,) as finite float arrays, or a one-line :class:`DataError`."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[1] < 1:
        raise DataError(f"{who} needs X of shape (n, p) and y of shape (n,); got {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise DataError(f"{who}: X or y contains NaN or infinite values")
    return X, y


def _lstsq(X: Array, y: Array, who: str) -> Array:
    """Least squares by an orthogonal factorisation (LAPACK ``gelsd``); never a NaN."""
    w = np.linalg.lstsq(X, y, rcond=None)[0]
    if not np.isfinite(w).all():
        raise DataError(f"{who}: the least-squares fit on the kept rows is not finite (X or y too large?)")
    return w


def trimmed_rms(r_sorted: Array, k: ArrayLike) -> Array:
    """``sqrt((r_(1)^2 + ... + r_(k)^2) / k)`` for counts ``k >= 1`` of ascending ``r_sorted``."""
    k = np.asarray(k, dtype=np.int64)
    if k.size and (k.min() < 1 or k.max() > r_sorted.size):
        raise ConfigError(f"trimmed counts must be in 1..{r_sorted.size}")
    csum = np.cumsum(r_sorted * r_sorted)
    return np.sqrt(csum[k - 1] / k)


def closest_rank(r_sorted: Array, v: ArrayLike) -> NDArray[np.int64]:
    """1-based rank of the entry of ascending ``r_sorted`` closest to each ``v``.

    Ties (two neighbours equally close, or a repeated value) go to the smallest rank, as
    ``argmin |r_sorted - v|`` would.
    """
    v = np.asarray(v, dtype=float)
    n = r_sorted.size
    j = np.searchsorted(r_sorted, v, side="left")  # r[j - 1] < v <= r[j]
    lo = np.clip(j - 1, 0, n - 1)
    hi = np.clip(j, 0, n - 1)
    idx = np.where(np.abs(v - r_sorted[lo]) <= np.abs(r_sorted[hi] - v), lo, hi)
    idx = np.searchsorted(r_sorted, r_sorted[idx], side="left")  # first of a repeated value
    return idx + 1


def consistency_bound(r_sorted: Array, tau: ArrayLike) -> tuple[Array, Array]:
    """The heuristic bound on ``r_(tau)`` for candidate sizes ``tau > ceil(n / 2)``.

    With ``tau' = tau - ceil(n/2)`` (the authors' "magic point", ``floor(tau - n/2)``: the
    rows of a size-``tau`` set that are clean if fewer than half the rows are corrupted),
    ``r_rms`` the root mean square of the ``tau'`` smallest residuals and ``tau_o`` the rank of
    the residual closest to ``r_rms``, the bound is ``2 tau r_rms / tau_o``: the residuals may
    grow from the origin to rank ``tau`` at most twice as steeply as they do to rank ``tau_o``
    (authors' ``cal_mean_tau`` and ``constaint`` / ``cal_thres``; factor :data:`HH_SLOPE`).

    Returns
    -------
    (bound, r_rms)
    """
    tau = np.asarray(tau, dtype=np.int64)
    half = (r_sorted.size + 1) // 2
    if tau.size and tau.min() <= half:
        raise ConfigError(f"candidate sizes must exceed ceil(n/2) = {half}")
    rms = trimmed_rms(r_sorted, tau - half)
    return HH_SLOPE * tau * rms / closest_rank(r_sorted, rms), rms


def rlhh_size(r: ArrayLike) -> int:
    """RLHH's estimate of the uncorrupted-set size from the residuals ``r`` (the authors' search).

    The authors' ``HT_ParamSearch`` (DistOnlineRR ``src/model/RLHH.m``, the function that
    ``Baseline_RLHH.m`` runs per batch): with ``r_(1) <= ... <= r_(n)`` the sorted absolute
    residuals, every size ``k`` gets the score

        s(k) = ((r_(k) + 1) / k) / ((r_(n) - r_(k)) / (n - k))

    (the slope to ``r_(k)`` from the origin, shifted by :data:`HH_SCORE_SHIFT`, over the slope
    from ``r_(k)`` to ``r_(n)``; ``s(n)`` is 0/0 and ranks last).  The sizes are tried by
    increasing score and the first ``tau`` with

        r_(tau) <= min(2 tau r_rms / tau_o, (r_(n) + r_rms) / 2)

    is returned (:func:`consistency_bound`; the second term is the authors' ``thres_2``).
    Sizes ``tau <= ceil(n/2)`` never pass (their ``tau'`` is empty).  If none passes,
    ``floor(n/2)`` (the authors' fallback ``n/2``).
    """
    r_sorted = np.sort(np.abs(np.asarray(r, dtype=float)))
    n = r_sorted.size
    if n < 2 or not np.isfinite(r_sorted).all():
        raise DataError("rlhh_size needs at least 2 finite residuals")
    k = np.arange(1, n + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = ((r_sorted + HH_SCORE_SHIFT) / k) / ((r_sorted[-1] - r_sorted) / (n - k))
    order = np.argsort(score, kind="stable") + 1  # sizes by increasing score; NaN (k = n) last
    cand = order[order > (n + 1) // 2]
    if cand.size:
        bound, rms = consistency_bound(r_sorted, cand)
        ok = r_sorted[cand - 1] <= np.minimum(bound, (r_sorted[-1] + rms) / 2.0)
        if ok.any():
            return int(cand[np.argmax(ok)])
    return n // 2


def descending_size(r: ArrayLike, tau_prev: int, tau_min: int) -> int:
    """The largest ``tau`` in ``[tau_min, tau_prev]`` with ``r_(tau) <= 2 tau r_rms / tau_o``.

    The authors' ``HTSearch`` of ``SingleHR.m`` (DistOnlineRR; DRLR's per-batch solver): the
    sizes are tried downwards from the previous size, so ``tau`` never grows, and the first
    one within :func:`consistency_bound` is kept; if none is, ``tau_min`` (``3 p`` there).
    """
    r_sorted = np.sort(np.abs(np.asarray(r, dtype=float)))
    n = r_sorted.size
    if not np.isfinite(r_sorted).all():
        raise DataError("descending_size needs finite residuals")
    if not 1 <= tau_min <= tau_prev <= n:
        raise ConfigError(f"need 1 <= tau_min <= tau_prev <= n, got {tau_min}, {tau_prev}, {n}")
    low = max(tau_min, (n + 1) // 2 + 1)
    if tau_prev < low:
        return int(tau_min)
    cand = np.arange(tau_prev, low - 1, -1)
    bound, _ = consistency_bound(r_sorted, cand)
    ok = r_sorted[cand - 1] <= bound
    return int(cand[np.argmax(ok)]) if ok.any() else int(tau_min)


def rlhh(
    X: Array,
    y: Array,
    heuristic: str = "score",
    tol: float = HH_TOL,
    max_iter: int = HH_MAX_ITER,
) -> tuple[Array, dict[str, Any]]:
    """Robust least squares via heuristic hard thresholding (Zhang et al., IJCAI 2017, Alg. 1).

    ``S_0 = [n]``, ``tau_0 = n``; repeat

    1. ``w = argmin_w ||y_S - X_S w||^2`` (least squares on the kept rows),
    2. ``r = |y - X w|``, ``tau = size(r)`` (the heuristic), ``S = HT(r, tau)``, the ``tau``
       rows of smallest residual,

    until ``||r_S - r^{old}_S||_2 / |S| <= tol`` (``r^{old}`` the residuals of the previous
    iteration, zero before the first: the authors' stopping rule and ``MIN_THRES = 1e-3``,
    DistOnlineRR ``RLHH.m``) or ``max_iter`` (100) iterations.  The returned ``w`` is the fit
    of the last step 1, as in the authors' code.

    Parameters
    ----------
    X, y : arrays (n, p), (n,)
    heuristic : {"score", "descending"}
        ``"score"``: :func:`rlhh_size` (RLHH as run by ``Baseline_RLHH.m``; needs ``n >= 2 p``).
        ``"descending"``: :func:`descending_size` with ``tau_min = 3 p`` (``SingleHR.m``,
        the per-batch solver of DRLR; needs ``n >= 3 p``).
    tol, max_iter : float, int
        Stopping rule.

    Returns
    -------
    (w, info)
        ``info``: ``support`` (the last ``S``, row indices, sorted), ``fit_rows`` (the rows
        ``w`` was fitted on), ``tau``, ``taus`` (one per iteration), ``n_iter``, ``converged``.
    """
    X, y = _check_xy(X, y, "RLHH")
    n, p = X.shape
    tol = check_positive("tol", tol)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    if heuristic == "score":
        if n // 2 < p:
            raise DataError(f"RLHH keeps at least floor(n/2) rows: {n} rows are too few for {p} features")

        def next_size(r: Array, tau_prev: int) -> int:
            return rlhh_size(r)
    elif heuristic == "descending":
        tau_min = HH_MIN_ROWS_PER_FEATURE * p
        if n < tau_min:
            raise DataError(f"the descending size search (DRLR's batch solver) keeps at least 3p = {tau_min} "
                            f"rows; {n} rows are too few (use fewer batches)")

        def next_size(r: Array, tau_prev: int) -> int:
            return descending_size(r, tau_prev, tau_min)
    else:
        raise ConfigError(f"heuristic must be one of {', '.join(HEURISTICS)}, got {heuristic!r}")
    S = np.arange(n)
    tau = n
    r_old = np.zeros(n)
    taus: list[int] = []
    info: dict[str, Any] = {}
    w = np.zeros(p)
    for it in range(1, max_iter + 1):
        w = _lstsq(X[S], y[S], "RLHH")
        r = np.abs(y - X @ w)
        tau = next_size(r, tau)
        taus.append(tau)
        S_new = hard_threshold(r, tau)
        done = float(np.linalg.norm(r[S_new] - r_old[S_new])) / tau <= tol
        info = {"support": S_new, "fit_rows": S, "tau": tau, "taus": taus, "n_iter": it, "converged": done}
        if done:
            return w, info
        S, r_old = S_new, r
    return w, info


def rlhh_batches(
    batches: Sequence[tuple[Array, Array]],
    heuristic: str = "score",
    tol: float = HH_TOL,
    max_iter: int = HH_MAX_ITER,
) -> tuple[Array, dict[str, Any]]:
    """RLHH as a DSPL baseline: :func:`rlhh` on every batch, then the plain mean of the batch
    coefficients (DSPL section 5.1: "computes the regression coefficients for each batch,
    and averages them all"; the authors' ``Baseline_RLHH.m`` sums and divides by ``m``).

    Returns
    -------
    (w, info)
        ``info``: ``batch_coefs`` (m, p) and ``batch_info``, the per-batch ``info`` dicts.
    """
    if len(batches) < 1:
        raise ConfigError("RLHH needs at least one batch")
    B, infos = _fit_batches(batches, heuristic, tol, max_iter)
    return B.mean(axis=0), {"batch_coefs": B, "batch_info": infos}


def _fit_batches(batches: Sequence[tuple[Array, Array]], heuristic: str, tol: float, max_iter: int
                 ) -> tuple[Array, list[dict[str, Any]]]:
    """:func:`rlhh` on every batch: the ``(m, p)`` coefficients and the per-batch ``info``."""
    fits = [rlhh(X_i, y_i, heuristic, tol, max_iter) for X_i, y_i in batches]
    if len({w.shape for w, _ in fits}) != 1:
        raise DataError("every batch must have the same number of features")
    return np.array([w for w, _ in fits]), [info for _, info in fits]


def majority_clique(B: Array) -> tuple[NDArray[np.int64], int, float]:
    """DRLR's consolidation: the ``h = floor(m/2) + 1`` batch estimates around the best centre.

    For each batch ``i``, ``rad_i`` is the ``h``-th smallest of ``||b_i - b_j||_2`` over all
    ``j`` (itself included, at distance 0); the centre is the ``i`` of smallest radius (first
    on ties) and the clique its ``h`` nearest batches (stable order, ties by index).  This is
    the authors' ``BatchRC`` in DistOnlineRR ``src/DRLR.m`` (without their ``1e4`` cap on the
    radius, which only leaves the clique undefined when every radius exceeds it).

    Returns
    -------
    (clique, centre, radius)
        Batch indices nearest first, the centre batch, its radius.
    """
    B = np.asarray(B, dtype=float)
    if B.ndim != 2 or B.shape[0] < 1 or not np.isfinite(B).all():
        raise DataError("majority_clique needs a finite (m, p) array of batch coefficients")
    m = B.shape[0]
    h = m // 2 + 1
    D = np.linalg.norm(B[:, None, :] - B[None, :, :], axis=2)
    order = np.argsort(D, axis=1, kind="stable")
    radius = D[np.arange(m), order[:, h - 1]]
    centre = int(np.argmin(radius))
    return order[centre, :h].astype(np.int64), centre, float(radius[centre])


def drlr(
    batches: Sequence[tuple[Array, Array]],
    tol: float = HH_TOL,
    max_iter: int = HH_MAX_ITER,
) -> tuple[Array, dict[str, Any]]:
    """Distributed robust linear regression (Zhang et al., ICDM 2017), the authors' ``BatchRC``.

    1. on every batch, heuristic hard thresholding with the descending size search
       (:func:`rlhh` with ``heuristic="descending"``, the authors' ``SingleHR.m``);
    2. distributed robust consolidation: the mean of the batch coefficients of the majority
       clique (:func:`majority_clique`).

    Returns
    -------
    (w, info)
        ``info``: ``batch_coefs`` (m, p), ``clique`` (batch indices), ``centre``, ``radius``,
        ``batch_info`` (the per-batch :func:`rlhh` info).
    """
    if len(batches) < 1:
        raise ConfigError("DRLR needs at least one batch")
    B, infos = _fit_batches(batches, "descending", tol, max_iter)
    clique, centre, radius = majority_clique(B)
    w = B[clique].mean(axis=0)
    return w, {"batch_coefs": B, "clique": clique, "centre": centre, "radius": radius, "batch_info": infos}


def _regression_batches(est: SPLEstimator, X: Array, y: Array) -> list[tuple[Array, Array]]:
    """The ``est.n_batches`` contiguous row batches of a regression fit (RLHH, DRLR)."""
    if est.task_ != "regression":
        raise ConfigError(f"{type(est).__name__} is a robust-regression method; use a regression model")
    return split_batches(X, y, check_int("n_batches", est.n_batches, minimum=1))


def _store_batched_fit(est: SPLEstimator, w: Array, info: dict[str, Any], m: int) -> None:
    """The fitted attributes shared by RLHH and DRLR from ``(w, info)`` of a batched fit."""
    est.coef_ = w
    est.batch_coefs_ = info["batch_coefs"]
    est.n_iter_ = max(b["n_iter"] for b in info["batch_info"])
    est.converged_ = all(b["converged"] for b in info["batch_info"])
    est.candidate_models_ = [Params(coef=w)]
    est.candidate_params_ = [{"n_batches": m}]


class RLHH(SPLEstimator):
    """RLHH, robust regression via heuristic hard thresholding (Zhang et al., IJCAI 2017).

    No corruption ratio: the number of rows kept is estimated at every iteration from the
    sorted residuals (:func:`rlhh_size`).  With ``n_batches > 1`` the rows are split into
    contiguous batches, RLHH runs on each and the coefficients are averaged (the DSPL
    paper's RLHH baseline, section 5.1; :func:`rlhh_batches`).

    Parameters
    ----------
    n_batches : int
        Number of contiguous row batches (1: plain RLHH on all rows).
    heuristic : {"score", "descending"}
        Size search: the authors' RLHH score search (default) or DRLR's descending search.
    tol : float
        Stop when ``||r_S - r^{old}_S|| / |S| <= tol`` (authors: 1e-3).
    max_iter : int
        Iteration cap (authors: 100).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "hard",
        sp_params: dict[str, Any] | None = None,
        n_batches: int = 1,
        heuristic: str = "score",
        tol: float = HH_TOL,
        max_iter: int = HH_MAX_ITER,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.n_batches = n_batches
        self.heuristic = heuristic
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, X: Array, y: Array) -> None:
        batches = _regression_batches(self, X, y)
        w, info = rlhh_batches(batches, self.heuristic, self.tol, self.max_iter)
        starts = np.cumsum([0] + [len(y_i) for _, y_i in batches[:-1]])
        self.support_ = np.concatenate([s + b["support"] for s, b in zip(starts, info["batch_info"], strict=True)])
        _store_batched_fit(self, w, info, len(batches))

    def run_info(self) -> dict[str, Any]:
        return {**super().run_info(), "n_selected": int(self.support_.size), "iters": int(self.n_iter_),
                "converged": bool(self.converged_)}


class DRLR(SPLEstimator):
    """DRLR, distributed robust linear regression (Zhang et al., ICDM 2017).

    The rows are split into ``n_batches`` contiguous batches; each is fitted by heuristic
    hard thresholding with the descending size search, and the coefficients of the majority
    clique of batches are averaged (:func:`drlr`, :func:`majority_clique`).

    Parameters
    ----------
    n_batches : int
        Number of contiguous row batches (each needs at least ``3 p`` rows).
    tol : float
        Per-batch stopping rule ``||r_S - r^{old}_S|| / |S| <= tol`` (authors: 1e-3).
    max_iter : int
        Per-batch iteration cap (authors: 100).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "hard",
        sp_params: dict[str, Any] | None = None,
        n_batches: int = 10,
        tol: float = HH_TOL,
        max_iter: int = HH_MAX_ITER,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.n_batches = n_batches
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, X: Array, y: Array) -> None:
        batches = _regression_batches(self, X, y)
        w, info = drlr(batches, self.tol, self.max_iter)
        self.clique_ = info["clique"]
        _store_batched_fit(self, w, info, len(batches))

    def run_info(self) -> dict[str, Any]:
        return {**super().run_info(), "clique_size": int(self.clique_.size), "iters": int(self.n_iter_),
                "converged": bool(self.converged_)}
