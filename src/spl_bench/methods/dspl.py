"""DSPL: distributed self-paced learning by consensus ADMM (Zhang et al., IJCAI 2018).

The data are split into ``m`` batches ``(X_i, y_i)``.  Each batch keeps its own
model ``w_i`` and weights ``v_i``; the consensus variable ``z`` ties them together
(problem (3))::

    min  sum_i f_i(w_i, v_i; lam) + reg ||z||^2     s.t.  w_i = z,  v_ij in [0, 1]
    f_i(w_i, v_i; lam) = sum_j v_ij (y_ij - w_i^T x_ij)^2 + sum_j f_SP(v_ij, lam)

with the hard SP-regularizer ``f_SP(v, lam) = -lam v`` of the paper (eq. (4)); any
:mod:`spl_bench.sp` regularizer can be used instead.  ``reg = 1`` is the paper's
``||z||_2^2``.  Algorithm 1: for fixed ``v`` the convex problem in ``(w, z)`` is solved
by consensus ADMM on the augmented Lagrangian (5) -- closed-form ``w_i``-update (7),
``z``-update (8), dual update, stopping on the squared primal/dual residuals (9) --
then ``v_i = 1[ell_ij(w_i) < lam]`` (11) and ``lam <- min(mu lam, tau)``, until the
Lagrangian stops changing.

Execution: the per-batch work (Gram matrices, factorizations, ``w_i``-updates,
``v_i``-updates, batch objectives) runs on *batch hosts*
(:mod:`spl_bench.methods.dspl_backends`): :class:`SerialBackend` keeps one host in this
process, :class:`DaskBackend` one host per Dask worker as a Dask actor (LocalCluster, an
existing scheduler, or SLURM through dask-jobqueue).  The batches are sent once and stay on
their host with their ``v_i``, Gram matrices, factors and duals ``alpha_i`` across ADMM and outer
iterations; each ADMM iteration sends every host one message with ``z`` and gets its ``w_i`` back
(``p`` numbers per batch); the client repeats the hosts' dual updates on its own copy of the
``alpha_i`` (the same arithmetic, the same numbers) for (5) and (8).  Both backends call the same
host methods in the same order, so they give the same numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from spl_bench.errors import ConfigError, DataError, check_positive
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.methods.dspl_backends import (
    Batch,
    BatchHost,
    DaskBackend,
    SerialBackend,
    WorkerLostError,
    make_backend,
    resolve_backend,
    slurm_cluster,
)
from spl_bench.models import Params
from spl_bench.sp import SPRegularizer, get_sp

__all__ = ["DSPL", "Batch", "BatchHost", "DSPLResult", "DaskBackend", "OuterRecord", "SerialBackend",
           "WorkerLostError", "dspl_solve", "make_backend", "slurm_cluster", "split_batches"]

# =====================================================================================
# The algorithm
# =====================================================================================


@dataclass
class OuterRecord:
    """What one outer iteration (one ADMM solve for fixed ``v``) produced."""

    lam: float
    lagrangian: float
    objective: float
    z: Array
    n_selected: float
    admm_iters: int
    admm_converged: bool
    r2: float
    s2: float
    rho: float
    seconds: float
    setup_seconds: float = 0.0
    admm_seconds: float = 0.0
    v: Array | None = None


@dataclass
class DSPLResult:
    """Output of :func:`dspl_solve`."""

    z: Array
    W: Array
    alpha: Array
    history: list[OuterRecord] = field(default_factory=list)
    converged: bool = False
    v: list[Array] | None = None

    @property
    def lagrangians(self) -> Array:
        return np.array([h.lagrangian for h in self.history])

    @property
    def lambdas(self) -> Array:
        return np.array([h.lam for h in self.history])


def _check_batches(batches: Sequence[tuple[Array, Array]]) -> tuple[int, int]:
    """(m, p) of the batches; :class:`DataError` unless every one is a non-empty ``(X_i, y_i)`` with the same p."""
    m = len(batches)
    if m < 1:
        raise ConfigError("DSPL needs at least one batch")
    p = batches[0][0].shape[1]
    for X_i, y_i in batches:
        if X_i.ndim != 2 or X_i.shape[1] != p or X_i.shape[0] != y_i.shape[0] or X_i.shape[0] == 0:
            raise DataError("every batch must be a non-empty (X_i (n_i, p), y_i (n_i,)) pair with the same p")
    return m, p


def _check_options(
    lam0: float, tau: float, mu: float, reg: float, rho: float | str
) -> tuple[float, float, float, float, bool, float]:
    """The checked age schedule, ``reg`` and ``rho`` of :func:`dspl_solve`: (lam0, tau, mu, reg, auto_rho, rho)."""
    lam0 = check_positive("lam0", lam0)
    tau = check_positive("tau (lam_max)", tau)
    mu = check_positive("mu", mu)
    if mu < 1:
        raise ConfigError(f"mu must be >= 1 (lambda grows), got {mu}")
    if lam0 > tau:
        raise ConfigError(f"lam0 ({lam0}) must not exceed tau ({tau})")
    reg = float(reg)
    if not reg >= 0:
        raise ConfigError(f"reg must be >= 0, got {reg}")
    auto_rho = isinstance(rho, str)
    if auto_rho and rho != "auto":
        raise ConfigError(f"rho must be a positive number or 'auto', got {rho!r}")
    rho_val = 1.0 if auto_rho else check_positive("rho", rho)
    return lam0, tau, mu, reg, auto_rho, rho_val


@dataclass
class _ADMMOptions:
    """The options of one consensus-ADMM solve (see :func:`dspl_solve`)."""

    reg: float
    eps_r: float
    eps_s: float
    max_admm: int
    adaptive_rho: bool
    v_in_admm: bool


@dataclass
class _Consensus:
    """The iterates of consensus ADMM on the augmented Lagrangian (5): ``w_i`` (rows of ``W``), ``z``, ``alpha_i``.

    They are carried from one ADMM solve to the next (outer iterations warm-start each other).
    """

    W: Array
    z: Array
    alpha: Array
    rho: float
    dual_rho: float | None = None  # the rho of the last dual update (the hosts repeat it on their alpha_i)


def _prepare_admm(backend: SerialBackend | DaskBackend, p: int, auto_rho: bool, rho: float) -> float:
    """``G_i``, ``b_i`` of eq. (7) for the current ``v_i`` and the factors of ``G_i + rho I``; returns ``rho``.

    With ``auto_rho`` the penalty becomes ``mean_i tr(G_i) / p`` (1 if that is not positive).
    """
    traces = np.concatenate(backend.call("gram"))  # G_i, b_i of eq. (7) for the current v_i
    if auto_rho:
        rho = float(np.mean(traces)) / p
        if not rho > 0:
            rho = 1.0
    backend.call("factor", rho=rho)
    return rho


def _admm_iteration(backend: SerialBackend | DaskBackend, st: _Consensus, reg: float) -> tuple[float, float]:
    """One ADMM iteration: ``w_i``-update (7) on the hosts, ``z``-update (8) and dual update here.

    The hosts keep their ``alpha_i``: each gets ``z`` (and the ``rho`` of the last dual update, which
    it repeats on its ``alpha_i`` first) and sends back its ``w_i``.  Returns the squared primal and
    dual residuals ``||r||^2``, ``||s||^2`` of eq. (9).
    """
    m, p = st.W.shape
    st.W = backend.rows(backend.call("w_step", z=st.z.tobytes(), rho=st.rho, dual_rho=st.dual_rho), m, p)  # (7)
    z_old = st.z
    st.z = (st.rho * st.W.sum(axis=0) + st.alpha.sum(axis=0)) / (2.0 * reg + st.rho * m)  # (8)
    st.alpha = st.alpha + st.rho * (st.W - st.z)  # dual update (the hosts make it at the next w_step)
    st.dual_rho = st.rho
    r2 = float(np.sum((st.W - st.z) ** 2))  # (9)
    s2 = float(m * st.rho**2 * np.sum((st.z - z_old) ** 2))
    return r2, s2


def _admm_solve(
    backend: SerialBackend | DaskBackend, st: _Consensus, opt: _ADMMOptions, lam: float, sp: SPRegularizer
) -> tuple[int, bool, float, float]:
    """Consensus ADMM for fixed ``v`` (Algorithm 1 lines 3-11) until the residuals (9) are small.

    Updates ``st`` in place; returns (iterations, converged, ``||r||^2``, ``||s||^2``).  With
    ``v_in_admm`` the v-step (11) follows every dual update (and the Gram matrices and factors
    are rebuilt when a weight changed); with ``adaptive_rho`` residual balancing follows it.
    """
    r2 = s2 = np.inf
    n_admm = 0
    for _k in range(int(opt.max_admm)):
        n_admm += 1
        r2, s2 = _admm_iteration(backend, st, opt.reg)
        if opt.v_in_admm:
            changed = sum(backend.call("v_step", backend.split(st.W), lam=lam, sp=sp))  # (11) inside ADMM
            if changed > 0:
                backend.call("gram")
                backend.call("factor", rho=st.rho)
        if r2 < opt.eps_r and s2 < opt.eps_s:
            return n_admm, True, r2, s2
        if opt.adaptive_rho:
            r, s = np.sqrt(r2), np.sqrt(s2)
            new_rho = st.rho * 2.0 if r > 10.0 * s else st.rho / 2.0 if 10.0 * r < s else st.rho
            if new_rho != st.rho:
                st.rho = new_rho
                backend.call("factor", rho=st.rho)
    return n_admm, False, r2, s2


def _lagrangian_and_objective(
    backend: SerialBackend | DaskBackend, st: _Consensus, lam: float, sp: SPRegularizer, reg: float, r2: float
) -> tuple[float, float, float]:
    """(augmented Lagrangian (5), centralised objective (4) at ``z``, ``sum_ij v_ij``) after an ADMM solve.

    Both with the ``v`` and ``lam`` the solve used.  One pass over every ``X_i`` gives
    ``[f_i(w_i), sum v_i, f_i(z)]`` per batch; ahead, the same pass makes the v-step (11) and the
    next Gram matrices (7), kept on the hosts until the ``v_step`` call of :func:`dspl_solve`
    takes them over.
    """
    parts = np.concatenate(backend.call("objectives", backend.split(st.W), z=st.z, lam=lam, sp=sp, ahead=True))
    f_sum, n_sel = float(parts[:, 0].sum()), float(parts[:, 1].sum())
    L = (f_sum + reg * float(st.z @ st.z) + float(np.sum(st.alpha * (st.W - st.z))) + 0.5 * st.rho * r2)
    objective = float(parts[:, 2].sum()) + reg * float(st.z @ st.z)
    return L, objective, n_sel


def _outer_iteration(
    backend: SerialBackend | DaskBackend, st: _Consensus, opt: _ADMMOptions, lam: float, sp: SPRegularizer,
    auto_rho: bool, store_v: bool,
) -> OuterRecord:
    """One outer iteration of Algorithm 1 up to (not including) its v-step: (7) setup, ADMM, Lagrangian (5)."""
    t0 = time.perf_counter()
    st.rho = _prepare_admm(backend, st.W.shape[1], auto_rho, st.rho)
    t_setup = time.perf_counter() - t0
    n_admm, converged_admm, r2, s2 = _admm_solve(backend, st, opt, lam, sp)
    t_admm = time.perf_counter() - t0 - t_setup
    L, objective, n_sel = _lagrangian_and_objective(backend, st, lam, sp, opt.reg, r2)
    v_store = np.concatenate(backend.join(backend.call("get_v"), st.W.shape[0])) if store_v else None
    return OuterRecord(
        lam=lam, lagrangian=L, objective=objective, z=st.z.copy(), n_selected=n_sel, admm_iters=n_admm,
        admm_converged=converged_admm, r2=r2, s2=s2, rho=st.rho,
        seconds=time.perf_counter() - t0, setup_seconds=t_setup, admm_seconds=t_admm, v=v_store,
    )


def dspl_solve(
    batches: Sequence[tuple[Array, Array]],
    backend: SerialBackend | DaskBackend | None = None,
    sp: SPRegularizer | str = "hard",
    lam0: float = 0.1,
    tau: float = 1.0,
    mu: float = 1.1,
    rho: float | str = "auto",
    reg: float = 1.0,
    eps_r: float = 1e-12,
    eps_s: float = 1e-12,
    eps_L: float = 1e-6,
    max_outer: int = 200,
    max_admm: int = 2000,
    adaptive_rho: bool = False,
    v_in_admm: bool = False,
    w_init: ArrayLike | float = 1.0,
    store_v: bool = False,
    gather_v: bool = True,
    progress: Callable[..., None] | None = None,
) -> DSPLResult:
    """Run DSPL (Algorithm 1) on a list of batches ``[(X_1, y_1), ..., (X_m, y_m)]``.

    Per outer iteration: Gram matrices and factors of eq. (7) for the current ``v``
    (:func:`_prepare_admm`), consensus ADMM (:func:`_admm_solve`: (7), (8), dual update, stop on
    (9)), the Lagrangian (5) (:func:`_lagrangian_and_objective`), then the v-step (11) and
    ``lam <- min(mu lam, tau)``, until ``lam = tau`` and the Lagrangian stops changing.

    Parameters
    ----------
    batches : list of (X_i, y_i)
        The mini-batches (rows are samples).
    backend : SerialBackend or DaskBackend
        Where the per-batch work runs (default: serial).
    sp : SP-regularizer or name
        ``hard`` (the paper, eq. (11)) or any :mod:`spl_bench.sp` regularizer.
    lam0, tau, mu : float
        Age schedule: ``lam <- min(mu lam, tau)`` after each outer iteration (Algorithm 1
        lines 14-17; the paper uses 0.1, 1, 1.1).
    rho : float or "auto"
        ADMM penalty.  ``auto`` sets, before every ADMM solve, ``rho = mean_i tr(G_i) / p``
        (the mean curvature of the batch losses), with ``G_i = 2 X_i^T V_i X_i``.
    reg : float
        Weight of ``||z||^2`` (1 in the paper).
    eps_r, eps_s : float
        ADMM stops when ``||r||^2 < eps_r`` and ``||s||^2 < eps_s`` (eq. (9)).
    eps_L : float
        Outer loop stops when ``lam`` has reached ``tau`` and ``|L^t - L^{t-1}| < eps_L``.
    max_outer, max_admm : int
        Iteration limits.
    adaptive_rho : bool
        Residual balancing after each ADMM iteration: ``r > 10 s -> 2 rho``, ``10 r < s -> rho / 2``.
    v_in_admm : bool
        Also update ``v_i`` after every dual update (the paper's second variant; no
        convergence guarantee).
    w_init : float or array (p,)
        Initial ``w_i`` (Algorithm 1 line 1: all ones) and ``z``.
    store_v : bool
        Keep the gathered ``v`` of every outer iteration in the history (tests, figures).
    gather_v : bool
        Gather the final ``v`` into :attr:`DSPLResult.v`.
    progress : callable, optional
        Called after every outer iteration as ``progress(outer=t + 1, max_outer=..., lam=...,
        lam_max=tau, admm_iters=...)`` (the ``"dspl"`` event of :mod:`spl_bench.progress`).

    Returns
    -------
    DSPLResult
        Final ``z`` (the model), ``W`` (m, p), ``alpha`` (m, p), per-outer-iteration history.
    """
    backend = SerialBackend() if backend is None else backend
    sp = get_sp(sp) if isinstance(sp, str) else sp
    m, p = _check_batches(batches)
    lam0, tau, mu, reg, auto_rho, rho_val = _check_options(lam0, tau, mu, reg, rho)
    opt = _ADMMOptions(reg, eps_r, eps_s, int(max_admm), adaptive_rho, v_in_admm)
    w0 = np.broadcast_to(np.asarray(w_init, dtype=float), (p,)).copy()
    backend.place([Batch(np.ascontiguousarray(X_i, dtype=float), np.asarray(y_i, dtype=float))
                   for X_i, y_i in batches])  # once: data and state stay on their hosts
    st = _Consensus(W=np.tile(w0, (m, 1)), z=w0.copy(), alpha=np.zeros((m, p)), rho=rho_val)
    lam, prev_L = lam0, None
    result = DSPLResult(z=st.z, W=st.W, alpha=st.alpha)
    for t in range(int(max_outer)):
        t0 = time.perf_counter()
        rec = _outer_iteration(backend, st, opt, lam, sp, auto_rho, store_v)
        result.history.append(rec)
        if progress is not None:
            progress(outer=t + 1, max_outer=int(max_outer), lam=float(lam), lam_max=float(tau),
                     admm_iters=rec.admm_iters)
        if prev_L is not None and lam >= tau and abs(rec.lagrangian - prev_L) < eps_L:
            result.converged = True
            break
        prev_L = rec.lagrangian
        backend.call("v_step", lam=lam, sp=sp)  # line 13, eq. (11), on the losses at w_i just computed
        lam = min(lam * mu, tau)  # lines 14-17, capped at tau
        rec.seconds = time.perf_counter() - t0  # include the v-step
    result.z, result.W, result.alpha = st.z, st.W, st.alpha
    if gather_v:
        result.v = backend.join(backend.call("get_v"), m)
    return result


def split_batches(X: Array, y: Array, n_batches: int) -> list[tuple[Array, Array]]:
    """Split the rows into ``n_batches`` contiguous, nearly equal batches (row order kept)."""
    n_batches = int(n_batches)
    if n_batches < 1:
        raise ConfigError(f"n_batches must be >= 1, got {n_batches}")
    if n_batches > X.shape[0]:
        raise DataError(f"cannot split {X.shape[0]} rows into {n_batches} batches")
    bounds = np.linspace(0, X.shape[0], n_batches + 1).round().astype(int)
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


# =====================================================================================
# Estimator
# =====================================================================================


class DSPL(SPLEstimator):
    """Distributed self-paced learning (Zhang et al., IJCAI 2018, Algorithm 1).

    A linear regression model ``y ~ x^T z`` without intercept (centre the data), squared
    loss and ``reg ||z||^2``; the runner's ``model`` (``lasso``) is used for prediction
    only.  Candidates are the outer iterations, one per age of the schedule
    ``lam0, mu lam0, ..., tau`` (``{"lam": ..., "outer_iter": ...}``); the last one is
    selected by default.

    Parameters
    ----------
    n_batches : int
        Number of mini-batches (contiguous row blocks of the training data).
    lam0, lam_max, mu : float
        Age schedule ``lam <- min(mu lam, lam_max)``; ``lam_max`` is the paper's ``tau_lambda``.
    rho, reg, eps_r, eps_s, eps_L, max_outer, max_admm, adaptive_rho, v_in_admm :
        See :func:`dspl_solve`.
    backend : {"auto", "dask", "serial"}
        Where the per-batch updates run (the same numbers).  ``auto`` (default): ``dask`` when
        ``cluster`` names a scheduler (``address``) or SLURM jobs (``slurm``), or the training data
        have at least :data:`~spl_bench.methods.dspl_backends.AUTO_DASK_ROWS` rows; else ``serial``.
    cluster : dict
        Dask options: ``address`` (join an existing scheduler); ``slurm`` (dask-jobqueue
        ``SLURMCluster`` options and ``jobs``, waiting for ``n_workers`` workers); else
        ``n_workers``, ``threads_per_worker``, ``processes`` for a LocalCluster.  A cluster the
        fit starts is closed when it ends.  A worker lost mid-fit raises ``WorkerLostError``.
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "hard",
        sp_params: dict[str, Any] | None = None,
        n_batches: int = 10,
        lam0: float = 0.1,
        lam_max: float = 1.0,
        mu: float = 1.1,
        rho: float | str = "auto",
        reg: float = 1.0,
        eps_r: float = 1e-12,
        eps_s: float = 1e-12,
        eps_L: float = 1e-6,
        max_outer: int = 200,
        max_admm: int = 2000,
        adaptive_rho: bool = False,
        v_in_admm: bool = False,
        backend: str = "auto",
        cluster: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.n_batches = n_batches
        self.lam0 = lam0
        self.lam_max = lam_max
        self.mu = mu
        self.rho = rho
        self.reg = reg
        self.eps_r = eps_r
        self.eps_s = eps_s
        self.eps_L = eps_L
        self.max_outer = max_outer
        self.max_admm = max_admm
        self.adaptive_rho = adaptive_rho
        self.v_in_admm = v_in_admm
        self.backend = backend
        self.cluster = cluster

    def _fit(self, X: Array, y: Array) -> None:
        if self.task_ != "regression":
            raise ConfigError(f"DSPL is a regression method; model {self.model!r} is a {self.task_} model")
        sp = self._make_sp()
        batches = split_batches(X, y, self.n_batches)
        self.backend_ = resolve_backend(self.backend, dict(self.cluster or {}), X.shape[0])
        with make_backend(self.backend_, dict(self.cluster or {})) as be:
            self.n_workers_ = be.n_workers()
            res = dspl_solve(
                batches, be, sp=sp, lam0=self.lam0, tau=self.lam_max, mu=self.mu, rho=self.rho,
                reg=self.reg, eps_r=self.eps_r, eps_s=self.eps_s, eps_L=self.eps_L,
                max_outer=self.max_outer, max_admm=self.max_admm, adaptive_rho=self.adaptive_rho,
                v_in_admm=self.v_in_admm, progress=lambda **f: self._progress("dspl", **f),
            )
            self.admm_on_ = getattr(be, "admm_on", "client")  # the serial backend: all in this process
        self.result_ = res
        self.coef_ = res.z
        self.v_ = np.concatenate(res.v) if res.v is not None else None
        self.history_ = res.history
        self.candidate_models_ = [Params(coef=h.z.copy()) for h in res.history]
        self.candidate_params_ = [{"lam": float(h.lam), "outer_iter": t} for t, h in enumerate(res.history)]

    def run_info(self) -> dict[str, Any]:
        h = self.history_
        return {
            **super().run_info(),
            "outer_iters": len(h),
            "admm_iters_total": int(sum(r.admm_iters for r in h)),
            "admm_not_converged": int(sum(not r.admm_converged for r in h)),
            "converged": bool(self.result_.converged),
            "final_lagrangian": float(h[-1].lagrangian),
            "n_selected": float(h[-1].n_selected),
            "backend": self.backend_,
            "n_workers": int(self.n_workers_),
            "admm_on": self.admm_on_,
        }
