"""The linear algebra of the outlier-path homotopy: the active system (11) and products with ``Q``.

With ``Q = y y^T K`` (Suzumura et al., ICML 2014) the active points ``A`` (states E, IB, OB,
:mod:`.state`) and the intercept ``b`` solve the linear system (11) / appendix C, eq. (15):

    [[Q_AA, y_A], [y_A^T, 0]] [a_A; b] = [t_A - Q_AF a_F; -y_F^T a_F]

with the margins ``t_A`` they keep (1 on E, ``s`` on IB / OB) and the fixed coefficients
``a_F``.  The same matrix with the fixed coefficients' rates on the right gives the path's
direction.  :class:`ActiveSystem` holds one kernel's matrices and solves the system for the
shared :class:`~spl_bench.methods.outlier_path.state.PathState`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import lapack

from spl_bench.gaga.core.gather import take_block, take_columns, transpose_for_columns
from spl_bench.methods.outlier_path.errors import DegenerateStepError, SingularSystemError
from spl_bench.methods.outlier_path.state import IB, OO, Array, E, L, PathState, R

#: reciprocal condition number (1-norm estimate) under which the active system counts as
#: singular.  In exact arithmetic its null space only holds coefficient changes that leave f
#: unchanged (exactly dependent active points: duplicated rows, ``d + 2`` points on a linear
#: margin, ...); near-dependent points on a path give ``1 / rcond`` up to about 1e12 here.
RCOND_SINGULAR = 1e-15
#: under this, the right-hand side and the residuals are formed in extended precision and
#: the solution is refined (near-dependent active points of a linear kernel on discrete
#: features: the error of a plain solve, ``eps / rcond``, reaches the KKT tolerance)
RCOND_REFINE = 1e-8


def kkt_factor(M: Array) -> tuple[Array, Array, float]:
    """LU of the active system ``M`` (eq. 11 with the row ``sum a_i y_i = 0``) and its reciprocal
    condition estimate: ``(lu, piv, rcond)``.  Raises :class:`SingularSystemError` when
    ``rcond < RCOND_SINGULAR``."""
    lu, piv, info = lapack.dgetrf(M)
    if info > 0:
        raise SingularSystemError("singular KKT system (linear system (11))")
    anorm = float(np.abs(M).sum(axis=0).max())
    rcond, _ = lapack.dgecon(lu, anorm, norm="1")
    if not rcond >= RCOND_SINGULAR:
        raise SingularSystemError(f"singular KKT system (linear system (11)), rcond {rcond:.1e}")
    return lu, piv, float(rcond)


def kkt_apply(M: Array, factor: tuple[Array, Array, float], rhs: Array,
              rhs_hi: Callable[[], NDArray[np.longdouble]] | None = None) -> Array:
    """``M^{-1} rhs`` from :func:`kkt_factor`'s factor.  An ill-conditioned system
    (``rcond < RCOND_REFINE``) is refined with residuals in extended precision (``np.longdouble``),
    the right-hand side given by ``rhs_hi()`` when the caller can form it more accurately than ``rhs``."""
    lu, piv, rcond = factor
    x, _ = lapack.dgetrs(lu, piv, rhs)
    if rcond < RCOND_REFINE:
        r_hi = rhs_hi() if rhs_hi is not None else rhs.astype(np.longdouble)
        M_hi = M.astype(np.longdouble)
        for _ in range(4):
            # np.dot: the same ordered long-double sums as ``@`` (which accumulates through memory)
            res = r_hi - np.dot(M_hi, x.astype(np.longdouble))
            dx, _ = lapack.dgetrs(lu, piv, res.astype(float))
            x = x + dx
            if np.abs(dx).max(initial=0.0) <= 1e-15 * max(1.0, float(np.abs(x).max(initial=0.0))):
                break
    if not np.all(np.isfinite(x)):
        raise DegenerateStepError("non-finite solution of the KKT system (linear system (11))")
    return x


def fixed_part_hi(QAF: Array, yF: Array, af: Array) -> tuple[NDArray[np.longdouble], np.longdouble]:
    """The fixed coefficients' part of eq. (11)'s right-hand side in extended precision:
    ``(Q_AF a_F, y_F^T a_F)`` as ``np.longdouble``.

    Only the non-zero ``a_F`` enter (most fixed points sit at ``a_i = 0``, the set R): numpy sums
    long-double products one after the other from +0 (no BLAS for the type), and adding an exact
    zero product leaves such a sum unchanged, so the result is the full product's, bit for bit,
    at a fraction of the gathers and products (:func:`products_hi`).
    """
    nz = np.flatnonzero(af)
    return products_hi(QAF[:, nz], yF[nz], af[nz])


def products_hi(Q: Array, y: Array, a: Array) -> tuple[NDArray[np.longdouble], np.longdouble]:
    """``(Q a, y^T a)`` in extended precision (``np.longdouble``), each an ordered sum from +0.

    ``np.dot`` forms the same ordered sums as ``@`` in a register instead of through memory."""
    al = a.astype(np.longdouble)
    return np.dot(Q.astype(np.longdouble), al), np.dot(y.astype(np.longdouble), al)


def kkt_solve(M: Array, rhs: Array, rhs_hi: Callable[[], NDArray[np.longdouble]] | None = None) -> Array:
    """Solve the active system ``M x = rhs``: :func:`kkt_factor`, then :func:`kkt_apply`."""
    return kkt_apply(M, kkt_factor(M), rhs, rhs_hi)



def q_product(Q: Array, Z: Array | None, v: Array) -> Array:
    """``Q v``: with a factor ``Z`` of ``Q = Z Z^T`` (n x r, r < n) as ``Z (Z^T v)``, O(n r);
    otherwise the O(n^2) product with ``Q``.  The two round differently."""
    return Q @ v if Z is None else Z @ (Z.T @ v)


def q_factor(y: Array, factor: Array | None) -> Array | None:
    """``Z = diag(y) factor``, so that ``Q = Z Z^T`` when ``K = factor factor^T``; ``None`` without one."""
    return None if factor is None else y[:, None] * factor


def linear_factor(kernel: str, X: Array) -> Array | None:
    """``X`` when ``K = X X^T`` (a linear kernel) and ``X`` has fewer than half as many columns as
    rows, so that products through it pay (2 n d against n^2 operations); otherwise ``None``."""
    return X if kernel == "linear" and 2 * X.shape[1] < X.shape[0] else None


class ActiveSystem:
    """The active system (11) of one kernel: the gathers and products with ``Q``, the factorisation
    of the KKT matrix of the last active set, and the re-solves of a :class:`PathState`."""

    #: the active-set gathers by :func:`take_block` / :func:`take_columns` (True), or by numpy's
    #: fancy indexing (False: the route before them, kept for ``scripts/bench_families.py``); both
    #: give the same arrays, so the same path bit for bit
    compiled_gathers = True
    #: the margins ``Q a`` and their rates through the factor ``Z`` of ``Q = Z Z^T`` when the
    #: system is given one (True), or through ``Q`` (False: the route before it, kept for
    #: ``scripts/bench_families.py``).  The two round differently, so paths can differ at
    #: degenerate ties (Table 2's committed seeds, rerun with it: ``docs/outlier_path.md``)
    factor_products = True

    def __init__(self, Q: Array, y: Array, factor: Array | None = None) -> None:
        self.Q = np.ascontiguousarray(Q, dtype=float)
        #: ``Z`` with ``Q = Z Z^T`` (n x r, r < n: a linear kernel's ``y_i x_i``), or ``None``
        self.Z = (np.ascontiguousarray(factor, dtype=float)
                  if factor is not None and self.factor_products else None)
        #: ``Q.T`` in C order: the columns of Q as rows (:func:`take_columns`)
        self.Qt = transpose_for_columns(self.Q)
        self.y = y
        self.q_diag = np.abs(np.diag(Q))
        self.q_scale = max(1.0, float(self.q_diag.max(initial=1.0)))
        #: (active set, KKT matrix, its factor) of the last solve (:meth:`solve`)
        self._kkt_cache: tuple[bytes, Array, tuple[Array, Array, float]] | None = None

    # ----------------------------------------------------------------- products
    def block(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Array:
        """``Q[np.ix_(rows, cols)]``."""
        return take_block(self.Q, rows, cols) if self.compiled_gathers else self.Q[np.ix_(rows, cols)]

    def columns(self, cols: NDArray[np.intp]) -> Array:
        """``Q[:, cols]``."""
        return take_columns(self.Qt, cols) if self.compiled_gathers else self.Q[:, cols]

    def q_dot(self, v: Array) -> Array:
        """``Q v`` (:func:`q_product`: through the factor when the system has one)."""
        return q_product(self.Q, self.Z, v)

    def margin_rate(self, da: Array, db: float) -> Array:
        """``dm = Q da + y db`` (the columns of the moving coefficients, or through the factor)."""
        nz = np.flatnonzero(da)
        if self.Z is not None:
            return self.Z @ (self.Z[nz].T @ da[nz]) + self.y * db
        return self.columns(nz) @ da[nz] + self.y * db

    # ----------------------------------------------------------------- solves
    def kkt_matrix(self, A: NDArray[np.intp]) -> Array:
        """The matrix ``[[Q_AA, y_A], [y_A^T, 0]]`` of the active system (11) of ``A``."""
        k = A.size
        M = np.zeros((k + 1, k + 1))
        M[:k, :k] = self.block(A, A)
        M[:k, k] = self.y[A]
        M[k, :k] = self.y[A]
        return M

    def solve(self, A: NDArray[np.intp], rhs: Array,
              rhs_hi: Callable[[], NDArray[np.longdouble]] | None = None) -> Array:
        """Solve the active system of ``A`` (eq. 11).  Its matrix depends on ``A`` alone (the kernel
        is fixed), so the factor of the last active set is kept: an event's re-solve
        (:meth:`refresh`) and the next direction (:meth:`direction`) share one factorisation."""
        key = A.tobytes()
        cached = self._kkt_cache
        if cached is not None and cached[0] == key:
            M, factor = cached[1], cached[2]
        else:
            M = self.kkt_matrix(A)
            self._kkt_cache = None
            factor = kkt_factor(M)  # raises SingularSystemError: nothing is cached
            self._kkt_cache = (key, M, factor)
        return kkt_apply(M, factor, rhs, rhs_hi)

    def refresh(self, state: PathState) -> None:
        """Set the fixed coefficients exactly and re-solve the active ones and ``b`` (eq. 11).

        A singular system (the active coefficients are not unique) is first reduced by
        null-space moves (:meth:`drop_dependent`), which leave ``f`` unchanged.
        """
        state.set_fixed_alpha()
        for _ in range(state.n + 1):
            A = state.active()
            if A.size == 0:
                break
            fix = np.ones(state.n, dtype=bool)
            fix[A] = False
            F = np.flatnonzero(fix)
            af = state.alpha[F]
            QAF = self.block(A, F)
            rhs = np.empty(A.size + 1)
            rhs[:-1] = state.targets(A) - QAF @ af
            rhs[-1] = -state.y[F] @ af

            def rhs_hi(A=A, F=F, af=af, QAF=QAF) -> NDArray[np.longdouble]:
                q, y = fixed_part_hi(QAF, state.y[F], af)
                r = np.empty(A.size + 1, dtype=np.longdouble)
                r[:-1] = state.targets(A).astype(np.longdouble) - q
                r[-1] = -y
                return r

            try:
                sol = self.solve(A, rhs, rhs_hi)
            except SingularSystemError:
                self.drop_dependent(state, A)
                continue
            state.alpha[A] = sol[:-1]
            state.b = float(sol[-1])
            break
        else:
            raise DegenerateStepError("could not reduce a singular active set")
        state.m = self.q_dot(state.alpha) + state.y * state.b

    def drop_dependent(self, state: PathState, A: NDArray[np.intp]) -> None:
        """Null-space move: with a singular active system, move the active coefficients along
        its null space until one reaches its bound, and fix that point there.

        The null space of ``[[Q_AA, y_A], [y_A^T, 0]]`` holds ``(v, 0)`` with ``Q_AA v = 0``
        and ``y_A^T v = 0`` (``v^T Q_AA v = 0`` and ``Q`` is PSD), i.e. coefficient changes
        that leave ``f`` unchanged everywhere: every margin, the objective and the KKT
        conditions of all other points stay as they are.  The fixed point keeps its margin
        (1 for E, s for IB/OB) with its coefficient at the bound, which (10a)-(10d) allow.
        """
        M = self.kkt_matrix(A)
        _, _, Vt = np.linalg.svd(M)
        v = Vt[-1, :-1]
        v = v / np.abs(v).max()
        a = state.alpha[A]
        lo, hi = state.bounds(A)
        a = np.clip(a, lo, hi)
        best_t, best_j, best_sign = np.inf, -1, 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            for sign in (1.0, -1.0):
                r = sign * v
                t = np.where(r > 1e-12, (hi - a) / r, np.where(r < -1e-12, (lo - a) / r, np.inf))
                t = np.maximum(t, 0.0)
                j = int(np.argmin(t))
                if t[j] < best_t:
                    best_t, best_j, best_sign = float(t[j]), j, sign
        if best_j < 0 or not np.isfinite(best_t):
            raise DegenerateStepError("singular active system without a bounded null direction")
        a = a + best_t * best_sign * v
        i = int(A[best_j])
        at_lo = best_sign * v[best_j] < 0
        state.alpha[A] = a
        old = state.st[i]
        if old == E:
            state.st[i] = R if at_lo else L
        elif old == IB:
            state.st[i] = L
        else:
            state.st[i] = OO
        state.alpha[i] = lo[best_j] if at_lo else hi[best_j]
        state.last = i
        state.n_null_moves += 1

    def direction(self, state: PathState, q: Array) -> tuple[Array, float] | None:
        """Derivative of ``(alpha, b)`` when the fixed coefficients move by ``q`` per unit step:
        system (11) with the rates ``-Q_AF q_F`` and ``-y_F^T q_F`` on the right.

        ``None`` when no point is active and ``sum_i q_i y_i != 0``: the intercept must
        first move (a b-move) until a point becomes active.
        """
        A = state.active()
        da = q.copy()
        da[A] = 0.0
        nz = np.flatnonzero(da)
        if A.size == 0:
            r = float(state.y[nz] @ da[nz])
            if abs(r) <= 1e-12 * max(1.0, np.abs(da).max(initial=0.0)):
                return da, 0.0
            return None
        QAn = self.block(A, nz)
        dn = da[nz]
        rhs = np.empty(A.size + 1)
        rhs[:-1] = -(QAn @ dn)
        rhs[-1] = -(state.y[nz] @ dn)

        def rhs_hi() -> NDArray[np.longdouble]:
            q, yq = products_hi(QAn, state.y[nz], dn)  # dn holds the non-zero moves only
            r = np.empty(A.size + 1, dtype=np.longdouble)
            r[:-1] = -q
            r[-1] = -yq
            return r

        sol = self.solve(A, rhs, rhs_hi)
        da[A] = sol[:-1]
        return da, float(sol[-1])
