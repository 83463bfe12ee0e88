"""CCCP baseline for the same robust SVM (section 5 of the outlier-path paper).

The loss of eq. (2) with ``s = 0`` or ``theta = 0`` splits into convex minus convex,
``ell(z) = [1 - z]_+ - (1 - theta) [s - z]_+``.  The concave-convex procedure
(Yuille & Rangarajan 2002; Collobert et al. 2006) linearises the concave part at
the current margins ``z^k``: with ``O_k = {i : z^k_i < s}`` the convex subproblem

    min_f ||f||^2 / 2 + C sum_i [1 - z_i]_+ + C (1 - theta) sum_{i in O_k} z_i

has the SVM dual with the shifted box ``-C (1 - theta) <= a_i <= C theta`` on
``O_k`` (``0 <= a_i <= C`` elsewhere) and ``sum_i a_i y_i = 0``.  It is solved by
an SMO with second-order working-set selection (Fan, Chen & Lin 2005) on the
precomputed ``Q = y y^T K``, warm-started from the previous solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from spl_bench.gaga.core.gather import take_block, transpose_for_columns
from spl_bench.methods.outlier_path.errors import DegenerateStepError
from spl_bench.methods.outlier_path.linalg import q_product
from spl_bench.methods.outlier_path.path import rsvm_objective
from spl_bench.methods.outlier_path.state import Array


def project_feasible(alpha: Array, y: Array, lo: Array, hi: Array) -> Array:
    """Euclidean projection of ``alpha`` onto ``{lo <= a <= hi, y^T a = 0}`` (bisection)."""

    def g(lam: float) -> float:
        return float(y @ np.clip(alpha - lam * y, lo, hi))

    a, b = -1.0, 1.0
    while g(a) < 0:
        a *= 2
    while g(b) > 0:
        b *= 2
    for _ in range(200):
        mid = 0.5 * (a + b)
        if g(mid) > 0:
            a = mid
        else:
            b = mid
    out = np.clip(alpha - 0.5 * (a + b) * y, lo, hi)
    # remove the last rounding error on a free coordinate
    free = np.flatnonzero((out > lo + 1e-12) & (out < hi - 1e-12))
    if free.size:
        k = free[0]
        out[k] -= y[k] * float(y @ out)
    return out


def smo_box(
    Q: Array, y: Array, lo: Array, hi: Array, alpha0: Array | None = None,
    tol: float = 1e-8, max_iter: int = 50_000, compiled: bool = True,
) -> tuple[Array, float, int]:
    """Solve ``min a^T Q a / 2 - sum a  s.t.  lo <= a <= hi, y^T a = 0`` by SMO.

    Returns ``(alpha, b, n_iter)``; ``b`` is the intercept of ``f = sum a_j y_j K_j + b``.
    ``n_iter == max_iter`` means the gap ``tol`` was not reached.  The pair loop runs compiled
    (:func:`_smo_pairs_nb`) or, with ``compiled=False``, as numpy array operations
    (:func:`_smo_pairs_np`, the reference); both do the same floating-point operations in the
    same order, so they give the same iterates bit for bit.
    """
    n = len(y)
    alpha = project_feasible(np.zeros(n) if alpha0 is None else alpha0, y, lo, hi)
    G = Q @ alpha - 1.0
    diag = np.diag(Q).copy()
    pos = y > 0
    y = np.ascontiguousarray(y, dtype=float)
    lo = np.ascontiguousarray(lo, dtype=float)
    hi = np.ascontiguousarray(hi, dtype=float)
    if compiled:
        # the gradient update reads columns of Q: as rows of a C-ordered transpose they are
        # contiguous (a strided column costs about 7x a row at n = 2,600); Q itself when symmetric
        Qc = np.ascontiguousarray(Q, dtype=float)
        it = int(_smo_pairs_nb(Qc, transpose_for_columns(Qc), y, lo, hi, alpha, G, diag, float(tol),
                               int(max_iter)))
    else:
        it = _smo_pairs_np(Q, y, lo, hi, alpha, G, diag, float(tol), int(max_iter))
    v = -y * G
    free = (alpha > lo + 1e-10) & (alpha < hi - 1e-10)
    if np.any(free):
        b = float(v[free].mean())
    else:
        # the sets of the loop (1e-14 from a bound counts as at it: an update can leave a
        # coefficient at 1e-61 instead of 0, which must not make it movable both ways)
        up = np.where(pos, alpha < hi - 1e-14, alpha > lo + 1e-14)
        low = np.where(pos, alpha > lo + 1e-14, alpha < hi - 1e-14)
        ends = [float(v[up].max())] if np.any(up) else []
        ends += [float(v[low].min())] if np.any(low) else []
        b = float(np.mean(ends)) if ends else 0.0
    return alpha, b, it


def _smo_pairs_np(Q: Array, y: Array, lo: Array, hi: Array, alpha: Array, G: Array, diag: Array,
                  tol: float, max_iter: int) -> int:
    """SMO pair updates on ``alpha`` and the gradient ``G = Q alpha - 1`` in place; returns the
    iteration count (``max_iter`` when the gap stayed above ``tol``).

    Second-order working set (Fan, Chen & Lin 2005): ``i`` maximises ``-y_i G_i`` over the
    points that can move up, ``j`` minimises ``-(b_ij^2) / a_ij`` with
    ``b_ij = -y_i G_i + y_j G_j > 0`` and ``a_ij = Q_ii + Q_jj - 2 y_i y_j Q_ij``, and the pair
    moves by ``d = b_ij / a_ij`` clipped to the box.  Pure numpy: Python overhead per pair.
    """
    pos = y > 0
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        up = np.where(pos, alpha < hi - 1e-14, alpha > lo + 1e-14)
        low = np.where(pos, alpha > lo + 1e-14, alpha < hi - 1e-14)
        v = -y * G
        vu = np.where(up, v, -np.inf)
        i = int(np.argmax(vu))
        m_up = vu[i]
        vl = np.where(low, v, np.inf)
        if m_up - vl.min() < tol:
            break
        bij = m_up - v
        cand = low & (bij > 0)
        aij = diag[i] + diag - 2.0 * y[i] * y * Q[i]
        aij = np.where(aij > 1e-12, aij, 1e-12)
        score = np.where(cand, -(bij**2) / aij, np.inf)
        j = int(np.argmin(score))
        d = bij[j] / aij[j]
        d = min(d, hi[i] - alpha[i] if y[i] > 0 else alpha[i] - lo[i])
        d = min(d, alpha[j] - lo[j] if y[j] > 0 else hi[j] - alpha[j])
        alpha[i] += y[i] * d
        alpha[j] -= y[j] * d
        G += d * (y[i] * Q[:, i] - y[j] * Q[:, j])
    return it


@njit(cache=True)
def _smo_pairs_nb(Q: Array, Qt: Array, y: Array, lo: Array, hi: Array, alpha: Array, G: Array,
                  diag: Array, tol: float, max_iter: int) -> int:  # pragma: no cover - compiled
    """:func:`_smo_pairs_np` compiled: the same operations in the same order, per coordinate
    (first index on ties, as ``argmax`` / ``argmin``), three passes over the points per pair.
    ``Qt`` is ``Q.T`` in C order (the columns ``Q[:, i]`` as rows)."""
    n = y.shape[0]
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        i = 0
        m_up = -np.inf
        vl_min = np.inf
        for k in range(n):
            vk = -y[k] * G[k]
            if y[k] > 0:
                up_k = alpha[k] < hi[k] - 1e-14
                low_k = alpha[k] > lo[k] + 1e-14
            else:
                up_k = alpha[k] > lo[k] + 1e-14
                low_k = alpha[k] < hi[k] - 1e-14
            vu = vk if up_k else -np.inf
            if k == 0 or vu > m_up:
                m_up = vu
                i = k
            vlk = vk if low_k else np.inf
            if vlk < vl_min:
                vl_min = vlk
        if m_up - vl_min < tol:
            break
        two_yi = 2.0 * y[i]
        j = 0
        best = np.inf
        bij_j = 0.0
        aij_j = 0.0
        for k in range(n):
            vk = -y[k] * G[k]
            if y[k] > 0:
                low_k = alpha[k] > lo[k] + 1e-14
            else:
                low_k = alpha[k] < hi[k] - 1e-14
            b = m_up - vk
            a = diag[i] + diag[k] - two_yi * y[k] * Q[i, k]
            if not a > 1e-12:
                a = 1e-12
            sc = -(b * b) / a if (low_k and b > 0) else np.inf
            if k == 0 or sc < best:
                best = sc
                j = k
                bij_j = b
                aij_j = a
        d = bij_j / aij_j
        lim = hi[i] - alpha[i] if y[i] > 0 else alpha[i] - lo[i]
        if lim < d:
            d = lim
        lim = alpha[j] - lo[j] if y[j] > 0 else hi[j] - alpha[j]
        if lim < d:
            d = lim
        alpha[i] += y[i] * d
        alpha[j] -= y[j] * d
        yi, yj = y[i], y[j]
        qi, qj = Qt[i], Qt[j]
        for k in range(n):
            G[k] += d * (yi * qi[k] - yj * qj[k])
    return it


_LO, _FREE, _HI = 0, 1, 2


class _BoxPath:
    """The variables of :func:`box_homotopy`: the coefficients, ``b``, the moving box and every
    point's state (at its lower bound, free with margin 1, or at its upper bound)."""

    def __init__(self, Q: Array, y: Array, Z: Array | None, alpha: Array, b: float, lo0: Array, hi0: Array,
                 lo1: Array, hi1: Array) -> None:
        self.Q, self.y, self.Z = Q, y, Z
        self.alpha = alpha.astype(float).copy()
        self.b = b
        self.dlo, self.dhi = lo1 - lo0, hi1 - hi0
        self.lo, self.hi = lo0.astype(float).copy(), hi0.astype(float).copy()
        scale = max(1.0, float(np.abs(hi0).max()), float(np.abs(lo0).max()))
        a, lo, hi = self.alpha, self.lo, self.hi
        self.st = np.where(a <= lo + 1e-9 * scale, _LO, np.where(a >= hi - 1e-9 * scale, _HI, _FREE))
        self.m = np.zeros(len(y))  # the margins, set by refresh()

    def solve(self, A: NDArray[np.intp], rhs: Array) -> Array:
        """Solve the KKT system ``[[Q_AA, y_A], [y_A^T, 0]] x = rhs`` of the free points ``A`` (the
        box dual's analogue of the active system (11) of the outlier path)."""
        Q, y = self.Q, self.y
        M = np.zeros((A.size + 1, A.size + 1))
        M[:-1, :-1] = take_block(Q, A, A)
        M[:-1, -1] = y[A]
        M[-1, :-1] = y[A]
        try:
            sol = np.linalg.solve(M, rhs)
        except np.linalg.LinAlgError as exc:
            raise DegenerateStepError("singular system in the CCCP box homotopy") from exc
        if not np.all(np.isfinite(sol)) or np.linalg.norm(M @ sol - rhs) > 1e-6 * (1 + np.abs(rhs).max()):
            raise DegenerateStepError("ill-conditioned system in the CCCP box homotopy")
        return sol

    def refresh(self) -> None:
        """Put the bound points on their bounds, re-solve the free ones (margin 1) and ``b``, and
        recompute the margins ``m = Q a + y b``."""
        st, alpha, y = self.st, self.alpha, self.y
        alpha[st == _LO] = self.lo[st == _LO]
        alpha[st == _HI] = self.hi[st == _HI]
        A = np.flatnonzero(st == _FREE)
        if A.size:
            fix = np.flatnonzero(st != _FREE)
            rhs = np.concatenate([1.0 - take_block(self.Q, A, fix) @ alpha[fix], [-(y[fix] @ alpha[fix])]])
            sol = self.solve(A, rhs)
            alpha[A] = sol[:-1]
            self.b = float(sol[-1])
        self.m = q_product(self.Q, self.Z, alpha) + y * self.b

    def bmove(self, r: float) -> int:
        """Slide ``b`` with the coefficients fixed (the sign of ``r = y^T q``) until a bound point
        reaches margin 1 and can absorb the change of ``sum a_i y_i``; returns that point."""
        st, m = self.st, self.m
        delta = 1.0 if r > 0 else -1.0
        dm = self.y * delta
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(((st == _LO) & (dm < 0)) | ((st == _HI) & (dm > 0)), (1.0 - m) / dm, np.inf)
        j = int(np.argmin(t))
        if not np.isfinite(t[j]):
            raise DegenerateStepError("no point can become free (CCCP box homotopy)")
        self.b += delta * max(t[j], 0.0)
        return j

    def direction(self, A: NDArray[np.intp], q: Array) -> tuple[Array, float]:
        """``(da, db)`` when the bound coefficients move by ``q`` per unit of ``tau``."""
        y = self.y
        da = q.copy()
        db = 0.0
        if A.size:
            nz = np.flatnonzero(q)
            sol = self.solve(A, -np.concatenate([take_block(self.Q, A, nz) @ q[nz], [y[nz] @ q[nz]]]))
            da[A] = sol[:-1]
            db = float(sol[-1])
        return da, db

    def next_event(self, da: Array, dm: Array, limit: float, last: int) -> tuple[float, int, int]:
        """``(t, j, new)``: the first step ``t <= limit`` at which a free coefficient meets its
        moving bound or a bound point's margin reaches 1; point ``j`` then takes the state ``new``
        (``j = -1`` when none comes first; ``last`` may not switch back at a zero step)."""
        st, alpha, lo, hi, dlo, dhi, m = self.st, self.alpha, self.lo, self.hi, self.dlo, self.dhi, self.m
        eps = 1e-13
        with np.errstate(divide="ignore", invalid="ignore"):
            cand = [
                (np.where((st == _FREE) & (da - dlo < -eps), (alpha - lo) / (dlo - da), np.inf), _LO),
                (np.where((st == _FREE) & (da - dhi > eps), (hi - alpha) / (da - dhi), np.inf), _HI),
                (np.where(((st == _LO) & (dm < -eps)) | ((st == _HI) & (dm > eps)), (1.0 - m) / dm, np.inf),
                 _FREE),
            ]
        best_t, best_j, best_new = limit, -1, -1
        for t, new in cand:
            t = np.maximum(t, 0.0)
            if last >= 0 and t[last] <= 1e-12:
                t[last] = np.inf
            j = int(np.argmin(t))
            if t[j] < best_t:
                best_t, best_j, best_new = float(t[j]), j, new
        return best_t, best_j, best_new


def box_homotopy(
    Q: Array, y: Array, alpha: Array, b: float, lo0: Array, hi0: Array, lo1: Array, hi1: Array,
    max_events: int | None = None, Z: Array | None = None,
) -> tuple[Array, float, int]:
    """Exact solution of the box dual for ``[lo1, hi1]`` from an exact one for ``[lo0, hi0]``.

    The bounds move linearly, ``lo(tau) = lo0 + tau (lo1 - lo0)`` (same for ``hi``), and the
    optimum follows a piecewise-linear path in ``tau`` (parametric QP, like the C-step):
    points at a bound move with it, free points (margin 1) and ``b`` solve the KKT system,
    and the path changes pieces when a free coefficient meets a bound or a margin reaches 1.
    Returns ``(alpha, b, n_events)``; raises :class:`DegenerateStepError` on a singular system.
    With ``Z`` (``Q = Z Z^T``, a linear kernel) the margins and their rates are computed through it
    (:func:`~spl_bench.methods.outlier_path.linalg.q_product`); the KKT systems use ``Q``'s entries.
    """
    n = len(y)
    box = _BoxPath(Q, y, Z, alpha, b, lo0, hi0, lo1, hi1)
    st, dlo, dhi = box.st, box.dlo, box.dhi
    max_events = max_events or 20 * n + 100
    tau, n_ev, last = 0.0, 0, -1
    box.refresh()
    while True:
        q = np.where(st == _LO, dlo, np.where(st == _HI, dhi, 0.0))
        A = np.flatnonzero(st == _FREE)
        r = float(y @ q)
        if A.size == 0 and abs(r) > 1e-12 * max(1.0, float(np.abs(q).max(initial=0.0))):
            # b-move: slide b with alpha fixed until a point can absorb sum(a y) changes
            j = box.bmove(r)
            st[j] = _FREE
            last = j
            box.refresh()
            continue
        da, db = box.direction(A, q)
        dm = q_product(Q, Z, da) + y * db
        t, j, new = box.next_event(da, dm, 1.0 - tau, last)
        box.alpha += t * da
        box.b += t * db
        box.lo += t * dlo
        box.hi += t * dhi
        tau += t
        if j < 0:
            box.lo, box.hi = lo1.astype(float).copy(), hi1.astype(float).copy()
            box.refresh()
            return box.alpha, box.b, n_ev
        st[j] = new
        last = j
        n_ev += 1
        if n_ev > max_events:
            raise DegenerateStepError("too many events in the CCCP box homotopy")
        box.refresh()


@dataclass
class CCCPSolution:
    theta: float
    s: float
    alpha: Array
    b: float
    n_outer: int
    n_inner: int
    objective: float
    n_unconverged: int = 0
    lo: Array | None = None  # the box of the last convex subproblem (for warm starts)
    hi: Array | None = None


def cccp(
    Q: Array, y: Array, C: float, theta: float, s: float, alpha0: Array, b0: float,
    tol: float = 1e-8, max_outer: int = 100, box0: tuple[Array, Array] | None = None,
    solver: str = "homotopy", smo_compiled: bool = True, Z: Array | None = None,
) -> CCCPSolution:
    """CCCP for eq. (1) at one ``(theta, s)``, started from ``(alpha0, b0)``.

    ``(alpha0, b0)`` must be optimal for the box ``box0`` (default ``[0, C]``: the SVM).
    Each convex subproblem is solved exactly by :func:`box_homotopy` from the previous
    one (``solver="homotopy"``; on a degenerate system it falls back to SMO) or by
    :func:`smo_box` with gap ``tol`` (``solver="smo"``).  Stops when the linearisation set
    ``O_k`` no longer changes (then the iterate is a fixed point).  ``smo_compiled=False`` runs
    SMO's numpy pair loop (the same iterates, slower: for benchmarks).  ``Z``: a factor of
    ``Q = Z Z^T`` for the margins (:func:`box_homotopy`).
    """
    alpha, b = alpha0.copy(), float(b0)
    n = len(y)
    lo_cur, hi_cur = box0 if box0 is not None else (np.zeros(n), np.full(n, float(C)))
    out_prev: Array | None = None
    n_inner = 0
    n_unconv = 0
    k = 0
    for k in range(1, max_outer + 1):  # noqa: B007
        m = q_product(Q, Z, alpha) + y * b
        out = m < s
        if out_prev is not None and np.array_equal(out, out_prev):
            break
        lo = np.where(out, -C * (1.0 - theta), 0.0)
        hi = np.where(out, C * theta, C)
        done = False
        if solver == "homotopy":
            try:
                alpha, b, it = box_homotopy(Q, y, alpha, b, lo_cur, hi_cur, lo, hi, Z=Z)
                done = True
            except DegenerateStepError:
                n_unconv += 1  # counted as a fallback
        if not done:
            alpha, b, it = smo_box(Q, y, lo, hi, alpha, tol=tol, compiled=smo_compiled)
            n_unconv += it >= 50_000
        n_inner += it
        lo_cur, hi_cur = lo, hi
        out_prev = out
    obj = rsvm_objective(alpha, b, Q, y, C, theta, s, Qa=q_product(Q, Z, alpha))
    return CCCPSolution(theta, s, alpha, b, k, n_inner, obj, n_unconv, lo_cur, hi_cur)


def cccp_sequence(
    Q: Array, y: Array, C: float, variant: str, values: Array, alpha0: Array, b0: float,
    tol: float = 1e-8, solver: str = "homotopy", smo_compiled: bool = True, Z: Array | None = None,
) -> list[CCCPSolution]:
    """CCCP-theta (``s = 0``) or CCCP-s (``theta = 0``) along ``values``, warm-started.

    ``(alpha0, b0)`` must be the exact SVM solution when ``solver="homotopy"``.  ``Z``: as in
    :func:`cccp`.
    """
    sols: list[CCCPSolution] = []
    a, b = alpha0, b0
    box = None
    for v in values:
        theta, s = (float(v), 0.0) if variant == "theta" else (0.0, float(v))
        sol = cccp(Q, y, C, theta, s, a, b, tol=tol, box0=box, solver=solver, smo_compiled=smo_compiled, Z=Z)
        sols.append(sol)
        a, b, box = sol.alpha, sol.b, (sol.lo, sol.hi)
    return sols
