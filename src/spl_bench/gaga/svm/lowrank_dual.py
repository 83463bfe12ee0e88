"""Warm-started primal active-set method for the SVM dual with a low-rank kernel (``Q = G G^T``).

The v-weighted SVM dual of GAGA's ACS step (section 4.1) with a linear kernel::

    min_a  1/2 ||G^T a||^2 - 1^T a   s.t.  0 <= a_i <= u_i,   y^T a = 0,      G = y * X  (n x d)

has ``n`` unknowns but only ``d + 1`` directions of curvature: ``w = G^T a`` and ``y^T a``.
Each sample is the column ``c_i = (G_i, y_i)`` of ``R^(d+1)``.  On a free set ``F`` whose
columns are linearly independent, the stationary point of the face (``g_F = 0`` with
``g = 1 - G w - y b``, and ``y^T a = 0``) is found from a QR factorisation of
``A_F = [c_i]_{i in F}``, kept up to date as samples join and leave ``F``
(:func:`scipy.linalg.qr_insert` / :func:`scipy.linalg.qr_delete`): ``O((d + 1)^2)`` per change
instead of a new factorisation of the ``(|F| + 1)``-square KKT matrix.  The iteration runs
compiled (:mod:`spl_bench.gaga.svm.lowrank_dual_nb`, the same steps with Givens updates of the QR);
:func:`_iterate` is the same iteration in NumPy, the reference the tests compare it with.

With ``A_F = Q R`` (``Q`` square, ``R`` upper trapezoidal, ``m = |F|`` columns) and ``e`` the
last unit vector of ``R^(d+1)``, the Newton step ``p`` of ``a_F`` and the intercept ``b`` solve
``A_F^T (E z + e b) = r`` and ``e^T z = -s`` with ``z = A_F p``, ``E = I - e e^T``,
``r = 1 - G_F w`` and ``s = y^T a``; with ``h = R_m^{-T} r`` and ``q = Q[d, :m]``::

    b = (q^T h + s (1 - |q|^2)) / |q|^2,    c = h - q (b + s),    p = R_m^{-1} c,    z = Q_m c.

Samples whose columns depend on those of ``F`` (more margin samples than ``d + 1``, or
duplicated samples) never enter ``F`` with a singular system: releasing such a sample from
its bound moves along ``delta_k = sigma``, ``delta_F = -sigma R_m^{-1} (Q^T c_k)_{:m}``,
which keeps ``w`` and ``y^T a`` fixed and lowers the objective by ``sigma g_k`` per unit,
until a bound blocks; the blocking sample leaves ``F`` and ``k`` takes its place.

Every iterate after the first step satisfies the box; the objective never increases; a
stationary point whose bounds all have the right sign (``a_i = 0 => g_i <= 0``,
``a_i = u_i => g_i >= 0``) is the optimum.  The caller re-solves the sets of the result with
its own LU solve (:class:`~spl_bench.gaga.svm.inner.WeightedSVMDual`), so this routine only has to
find the right sets.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import LinAlgError, qr, qr_delete, qr_insert
from scipy.linalg.lapack import dtrtrs

from spl_bench.gaga.svm import lowrank_dual_nb as nb

Array = NDArray[np.float64]


class _FreeQR:
    """QR factorisation of the columns ``(G_i, y_i)`` of the free samples, updated in place."""

    def __init__(self, C: Array) -> None:
        self.C = C  # n x (d + 1): row i is the column c_i
        self.dim = C.shape[1]
        self.Q = np.eye(self.dim)
        self.R = np.zeros((self.dim, 0))
        self.idx: list[int] = []
        self.updates = 0

    @property
    def m(self) -> int:
        return len(self.idx)

    def coords(self, k: int) -> tuple[Array, float]:
        """``Q^T c_k``'s first ``m`` entries and the norm of the rest (``c_k``'s distance to the span)."""
        t = self.Q.T @ self.C[k]
        return t[: self.m], float(np.linalg.norm(t[self.m:]))

    def independent(self, k: int, rest: float, rtol: float = 1e-9) -> bool:
        """Whether ``c_k`` (at distance ``rest`` from the span, :meth:`coords`) can join: not in the
        span, to ``rtol`` of its norm, and room left."""
        return self.m < self.dim and rest > rtol * max(float(np.linalg.norm(self.C[k])), 1e-300)

    def build(self, cand: NDArray[np.intp], rtol: float = 1e-9) -> NDArray[np.intp]:
        """Factorise a largest independent subset of the columns ``cand`` (chosen by a pivoted
        QR, in its pivot order) as the free set; return the rest."""
        if cand.size == 0:
            return cand
        cols = self.C[cand].T
        Q, R, piv = qr(cols, mode="full", pivoting=True, check_finite=False)
        diag = np.abs(np.diag(R))
        ok = diag > rtol * np.maximum(np.linalg.norm(cols[:, piv[: diag.size]], axis=0), 1e-300)
        r = diag.size if ok.all() else int(np.argmin(ok))
        # the first r pivoted columns: A[:, piv[:r]] = Q R[:, :r] exactly
        self.Q, self.R = Q, np.ascontiguousarray(R[:, :r])
        self.idx = cand[piv[:r]].tolist()
        return cand[piv[r:]]

    def insert(self, k: int) -> None:
        m = self.m
        if m == 0:
            self.Q, self.R = np.linalg.qr(self.C[k][:, None], mode="complete")
        else:
            self.Q, self.R = qr_insert(self.Q, self.R, self.C[k], m, which="col", check_finite=False)
        self.idx.append(k)
        self._count()

    def delete(self, pos: int) -> None:
        if self.m == 1:
            self.Q, self.R = np.eye(self.dim), np.zeros((self.dim, 0))
        else:
            self.Q, self.R = qr_delete(self.Q, self.R, pos, 1, which="col", check_finite=False)
        del self.idx[pos]
        self._count()

    def _count(self) -> None:
        self.updates += 1
        if self.updates % 400 == 0 and self.m:  # refresh against the drift of many updates
            self.Q, self.R = np.linalg.qr(self.C[self.idx].T, mode="complete")

    # LAPACK's trtrs called directly: the O(m^2) solves run once or twice per iteration, and
    # solve_triangular's argument checks and batching wrapper are a sizeable part of each
    def solve_upper(self, c: Array) -> Array:
        """``R_m^{-1} c``."""
        x, info = dtrtrs(self.R[: self.m, : self.m], c)
        return _checked(x, info)

    def solve_lower(self, r: Array) -> Array:
        """``R_m^{-T} r``."""
        x, info = dtrtrs(self.R[: self.m, : self.m], r, trans=1)
        return _checked(x, info)


def _checked(x: Array, info: int) -> Array:
    """``trtrs``'s solution, or the error ``solve_triangular`` raises for a zero pivot."""
    if info > 0:
        raise LinAlgError(f"singular triangular factor: zero diagonal entry {info}")
    if info < 0:  # pragma: no cover - an argument error is a bug here
        raise ValueError(f"illegal value in argument {-info} of trtrs")
    return x


def lowrank_svm_dual(G: Array, y: Array, u: Array, a0: Array, Z: NDArray[np.bool_],
                     P: NDArray[np.bool_], tol: float = 1e-9, max_iter: int | None = None,
                     compiled: bool = True, state: LowRankState | None = None) -> Array | None:
    """The dual ``min 1/2 ||G^T a||^2 - 1^T a``, ``0 <= a <= u``, ``y^T a = 0``, warm-started.

    Parameters
    ----------
    G : (n, d) array
        The factor of ``Q = G G^T`` (``y * X`` for a linear kernel).
    y : (n,) array of +-1
    u : (n,) array
        The box (``C v``); samples with ``u_i = 0`` stay at 0.
    a0, Z, P : warm start
        A nearby solution and its free and upper-bound sets (every other sample starts at 0).
    tol : float
        KKT tolerance on ``g`` (the caller's).
    max_iter : int, optional
        Iteration limit (default ``20 n``).
    compiled : bool
        Run the iteration in the compiled loop of :mod:`spl_bench.gaga.svm.lowrank_dual_nb`
        (default), or in NumPy (:func:`_iterate`, the reference it is tested against).
    state : LowRankState, optional
        Carried from call to call on the same ``G`` (compiled loop only): the start's free set
        is factorised by updating the previous optimum's factorisation where it differs by a
        few samples, instead of a new pivoted QR.

    Returns
    -------
    The optimum ``a`` (to ``tol``), or ``None`` when the iteration limit is reached or a
    step is not finite (the caller has other solvers).
    """
    n, d = G.shape
    live = u > 0
    if state is not None and state.G is G:
        C = state.C
    else:
        C = np.ascontiguousarray(np.column_stack([G, y]), dtype=np.float64)
        if state is not None:
            state.reset(G, C)
    a = np.zeros(n)
    P = P & live
    a[P] = u[P]
    Zl = Z & live & ~P
    a[Zl] = np.clip(a0[Zl], 0.0, u[Zl])
    at_u = P.copy()
    cand = np.flatnonzero(Zl)
    start = state.start(cand) if compiled and state is not None else None
    if start is None:
        fq = _FreeQR(C)
        for k in fq.build(cand):  # the free start: the independent columns of Z;
            if a[k] > 0.5 * u[k]:  # the others to the nearer bound (the first step restores y^T a = 0)
                a[k], at_u[k] = u[k], True
            else:
                a[k] = 0.0
        if not compiled:
            return _iterate(G, y, u, live, a, at_u, fq, tol, max_iter or 20 * n)
        R = np.zeros((fq.dim, fq.dim))
        R[:, : fq.m] = fq.R[:, : fq.m]
        F = np.zeros(fq.dim, dtype=np.int64)
        F[: fq.m] = fq.idx
        start = (np.ascontiguousarray(fq.Q), R, F, fq.m, 0)
    Q, R, F, m, updates = start
    code, m, updates = nb.iterate(np.ascontiguousarray(G, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64),
                                  C, np.ascontiguousarray(u, dtype=np.float64), live, a, at_u, Q, R, F, m,
                                  float(tol), int(max_iter or 20 * n), updates)
    if state is not None:
        state.keep((Q, R, F, m, updates) if code == nb.OPTIMUM else None)
    if code == nb.SINGULAR:
        raise LinAlgError("singular triangular factor of the free columns")
    return a if code == nb.OPTIMUM else None


class LowRankState:
    """What :func:`lowrank_svm_dual` carries from one call to the next on the same ``G``: the
    columns ``C = [G, y]`` and the QR factorisation of the latest optimum's free set.

    In ACS the free set of one fit's optimum is, up to a few samples, the start of the next;
    :meth:`start` updates the carried factorisation to it (Givens removals, appends checked for
    independence) instead of a pivoted QR of all its columns.  Where an appended column depends
    on the others, or the sets differ by more than ``max_new`` new samples, it declines, and
    the pivoted QR chooses the independent subset, as without a state.
    """

    max_new = 16

    def __init__(self) -> None:
        self.G: Array | None = None
        self.C: Array = np.zeros((0, 0))
        self._end: tuple | None = None  # (Q, R, F, m, updates) of the latest optimum

    def reset(self, G: Array, C: Array) -> None:
        self.G, self.C, self._end = G, C, None

    def keep(self, end: tuple | None) -> None:
        self._end = end

    def start(self, cand: NDArray[np.intp]) -> tuple | None:
        """``(Q, R, F, m, updates)`` factorising the columns ``cand`` (all of them), or ``None``."""
        if self._end is None:
            return None
        Q, R, F, m, updates = self._end
        self._end = None  # updated in place below: not reusable whatever the outcome
        prev = F[:m]
        keep = np.isin(prev, cand)
        new = cand[~np.isin(cand, prev)]
        if new.size > self.max_new:
            return None
        C = self.C
        in_F = np.zeros(C.shape[0], dtype=bool)  # the compiled loop's membership mask, rebuilt there
        for pos in np.flatnonzero(~keep)[::-1]:
            m = nb._leave(Q, R, F, in_F, m, int(pos))
            updates += 1
        for k in new:
            t = Q.T @ C[k]
            if not (m < Q.shape[0] and np.linalg.norm(t[m:]) > 1e-9 * max(np.linalg.norm(C[k]), 1e-300)):
                return None  # dependent: the pivoted QR chooses
            m = nb._join(Q, R, C, F, in_F, m, int(k))
            updates += 1
        return Q, R, F, m, updates


def _iterate(G: Array, y: Array, u: Array, live: NDArray[np.bool_], a: Array, at_u: NDArray[np.bool_],
             fq: _FreeQR, tol: float, max_iter: int) -> Array | None:
    """The active-set iteration in NumPy from ``fq``'s free set and the bounds ``a``, ``at_u``."""
    n, d = G.shape
    w = G.T @ a
    s = float(y @ a)
    b = 0.0
    scale_u = max(float(u.max(initial=0.0)), 1e-300)
    tol_a = tol * scale_u
    eps = 1e-14 * scale_u
    for _ in range(max_iter):
        F = np.asarray(fq.idx, dtype=np.intp)
        m = F.size
        if m:
            # Newton step to the stationary point of the face (and onto y^T a = 0)
            h = fq.solve_lower(1.0 - G[F] @ w)
            q = fq.Q[d, :m]
            qq = float(q @ q)
            if qq <= 1e-300:
                return None
            b = (float(q @ h) + s * (1.0 - qq)) / qq
            c = h - q * (b + s)
            p = fq.solve_upper(c)
            z = fq.Q[:, :m] @ c
            if not (np.isfinite(p).all() and np.isfinite(b)):
                return None
            p[np.abs(p) <= eps] = 0.0  # rounding, not a direction (e.g. a lone free sample)
            alpha, j = _move(a, u, at_u, F, p, 1.0)
            if j >= 0:  # a free sample reached its bound first
                w += alpha * z[:d]
                fq.delete(j)
                s = float(y @ a)
                continue
        elif abs(s) > tol_a:
            # no free sample to restore y^T a = 0 with: free the bound sample that moves y^T a
            # towards 0 and whose gradient favours that move most; the next step moves it
            up = live & ~at_u & (y * s < 0)  # at 0, can rise
            down = live & at_u & (y * s > 0)  # at u, can fall
            score = np.where(up, 1.0 - G @ w, np.where(down, G @ w - 1.0, -np.inf))
            k = int(np.argmax(score))
            if not np.isfinite(score[k]):
                return None
            at_u[k] = False
            fq.insert(k)
            continue
        # a stationary point of the face: w, y^T a and g afresh, then the signs at the bounds
        w = G.T @ a
        s = float(y @ a)
        g0 = 1.0 - G @ w
        bound = live.copy()
        bound[F] = False
        at0 = bound & ~at_u
        atu = bound & at_u
        if m == 0:
            b = _bound_intercept(g0, y, at0, atu)
        g = g0 - y * b
        viol = np.zeros(n)
        viol[at0] = g[at0]
        viol[atu] = -g[atu]
        k = int(np.argmax(viol))
        if viol[k] <= tol:
            if m and (float(np.abs(g[F]).max()) > tol or abs(s) > tol_a):
                return None
            return a
        sigma = 1.0 if at0[k] else -1.0
        at_u[k] = False
        t, rest = fq.coords(k)
        if fq.independent(k, rest):
            fq.insert(k)
            continue
        _exchange(fq, a, u, at_u, F, k, t, sigma)
        s = float(y @ a)
    return None


def _bound_intercept(g0: Array, y: Array, at0: NDArray[np.bool_], atu: NDArray[np.bool_]) -> float:
    """``b`` from the bounds alone (no free sample): the middle of the interval they allow."""
    lo = np.concatenate([g0[at0 & (y > 0)], -g0[atu & (y < 0)]]).max(initial=-np.inf)
    hi = np.concatenate([g0[atu & (y > 0)], -g0[at0 & (y < 0)]]).min(initial=np.inf)
    return 0.5 * (lo + hi) if np.isfinite(lo + hi) else (lo if np.isfinite(lo) else
                                                        (hi if np.isfinite(hi) else 0.0))


def _exchange(fq: _FreeQR, a: Array, u: Array, at_u: NDArray[np.bool_], F: NDArray[np.intp], k: int,
              t: Array, sigma: float) -> None:
    """Release sample ``k`` from its bound (``sigma``: +1 up from 0, -1 down from ``u``) when
    ``c_k`` is in the span of the free columns (``t``: :meth:`_FreeQR.coords`): a direction that
    keeps ``w`` and ``y^T a``, down by ``g_k``, until a bound blocks."""
    dF = -sigma * fq.solve_upper(t)
    dF[np.abs(dF) <= 1e-13 * max(1.0, float(np.abs(dF).max(initial=0.0)))] = 0.0
    alpha, j = _move(a, u, at_u, F, dF, float(u[k]))
    if j < 0:  # k crosses its box first: it changes bound, F stays
        if sigma > 0:
            a[k], at_u[k] = u[k], True
        else:
            a[k] = 0.0
    else:  # the blocking free sample leaves F, k takes its place
        a[k] = min(max(a[k] + sigma * alpha, 0.0), u[k])
        fq.delete(j)
        fq.insert(k)


def _move(a: Array, u: Array, at_u: NDArray[np.bool_], F: NDArray[np.intp], p: Array, cap: float
          ) -> tuple[float, int]:
    """Move ``a_F`` along ``p`` by the longest step ``alpha <= cap`` that stays in the box.

    Returns ``(alpha, j)``: ``j`` the position in ``F`` of the sample whose bound stopped the
    step (put exactly at that bound, ``at_u`` marked), or ``-1`` if ``cap`` did.
    """
    if F.size == 0:
        return cap, -1
    aF, uF = a[F], u[F]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p < 0, aF / -p, np.where(p > 0, (uF - aF) / p, np.inf))
    j = int(np.argmin(ratio))
    if not ratio[j] < cap:
        a[F] = np.clip(aF + cap * p, 0.0, uF)
        return cap, -1
    alpha = float(ratio[j])
    a[F] = np.clip(aF + alpha * p, 0.0, uF)
    k = int(F[j])
    if p[j] < 0:
        a[k] = 0.0
    else:
        a[k], at_u[k] = u[k], True
    return alpha, j
