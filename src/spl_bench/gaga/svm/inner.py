"""Inner solvers of the ACS steps: the exact v-weighted fits for fixed weights ``v``.

GAGA's warm starts and restarts (Algorithm 1), ACS and MOSPL all need the minimiser of the
model's loss weighted by ``v`` (the ACS step for a fixed age).  Two exact active-set solvers,
apart from the path systems that use them (:mod:`spl_bench.gaga.glm.glm_system`,
:mod:`spl_bench.gaga.svm.svm_system`):

* :func:`~spl_bench.gaga.glm.inner.weighted_lasso`: ``argmin_w 1/2 sum_i v_i (y_i - x_i^T w)^2 +
  lev ||w||_1`` (in :mod:`spl_bench.gaga.glm.inner`);
* :class:`WeightedSVMDual`: the v-weighted kernel SVM dual on a fixed kernel, warm-started (here).

Both return ``None`` when they do not converge; the caller then uses the model's solver.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor, Factor
from spl_bench.gaga.core.gather import combine_rows
from spl_bench.gaga.svm.kkt import KKTUpdate, LowRankSVMFactor, MergedKKT, kkt_factor, kkt_matrix
from spl_bench.gaga.svm.lowrank_dual import LowRankState, lowrank_svm_dual
from spl_bench.models.svm import libsvm_fit

Array = NDArray[np.float64]


def canonical_duplicates(labels: NDArray[np.intp] | None) -> NDArray[np.intp] | None:
    """The representative (smallest index) of each sample's group of duplicates, from group labels."""
    if labels is None:
        return None
    _, first = np.unique(labels, return_index=True)
    return first[np.searchsorted(np.unique(labels), labels)]


def low_rank_factor(kernel: str, X: Array, y: Array) -> Array | None:
    """``G = y * X`` with ``Q = G G^T`` for a linear kernel with fewer features than rows (the
    ``factor`` of :class:`WeightedSVMDual`), else ``None``."""
    if kernel != "linear" or X.shape[1] >= X.shape[0]:
        return None
    return np.ascontiguousarray(y[:, None] * X)


_HIGHS: list[Any] = []


def _highs_instance() -> Any:
    """One silent HiGHS instance per process (its constructor prints a banner on standard output,
    which would land in the middle of the runner's progress lines)."""
    if not _HIGHS:
        import highspy

        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        h.setOptionValue("output_flag", False)
        _HIGHS.append(h)
    return _HIGHS[0]


def highs_svm_dual(G: Array, y: Array, u: Array, guess: Array | None = None, tol: float = 1e-10,
                   margin: float = 0.5) -> Array | None:
    """The dual ``min 1/2 a^T Q a - 1^T a``, ``0 <= a <= u``, ``y^T a = 0`` for ``Q = G G^T`` by HiGHS.

    With ``G`` of shape ``(n, r)`` (a linear kernel: ``G = y * X``, ``r = d``) the QP is passed
    as ``min 1/2 ||w||^2 - 1^T a`` subject to ``G^T a - w = 0`` and ``y^T a = 0``: a Hessian of
    order ``r`` and ``(n + 1) r`` constraint entries instead of a dense ``n x n`` Hessian.
    HiGHS's active-set QP solver is exact up to its feasibility tolerances (``tol``); the
    caller checks the sets of its solution with an LU solve.

    With a ``guess`` (a nearby solution, e.g. the previous ACS iterate) the samples whose
    margins ``g`` there are beyond ``+-margin`` are fixed at their bound (``u`` or 0) and only
    the others are variables; samples fixed on the wrong side of the margin at the reduced
    optimum are freed and the reduced QP solved again (at most 5 times, then all samples).
    ``None`` unless HiGHS reaches an optimum.
    """
    n = G.shape[0]
    live = u > 0
    if guess is not None:
        a0 = np.clip(guess, 0.0, u)
        Ga = G.T @ a0
        inner = live & (a0 > 1e-8 * u) & (a0 < (1.0 - 1e-8) * u)
        s = 1.0 - G @ Ga  # g + y b
        b0 = float(np.median(y[inner] * s[inner])) if inner.any() else 0.0
        g0 = s - y * b0
        at_u = live & (g0 > margin) & ~inner
        var = live & ~at_u & ((g0 >= -margin) | inner)
        for _ in range(5):
            fixed = np.where(at_u, u, 0.0)
            out = _highs_reduced(G, y, u, np.flatnonzero(var), fixed, tol)
            if out is None:
                break
            a, b = out
            g = 1.0 - G @ (G.T @ a) - y * b
            wrong = (at_u & (g < -1e-9)) | (live & ~var & ~at_u & (g > 1e-9))
            if not wrong.any():
                return a
            var |= wrong
            at_u &= ~wrong
    out = _highs_reduced(G, y, u, np.flatnonzero(live), np.zeros(n), tol)
    return None if out is None else out[0]


def _highs_reduced(G: Array, y: Array, u: Array, var: NDArray[np.intp], fixed: Array, tol: float
                   ) -> tuple[Array, float] | None:
    """:func:`highs_svm_dual` with only the samples ``var`` as variables, the others at ``fixed``:
    ``(a, b)`` (``b`` the multiplier of ``y^T a = 0``), or ``None``."""
    import highspy  # the QP solver of HiGHS (scipy bundles only its LP/MIP front ends)

    r = G.shape[1]
    m = var.size
    Gv, yv = G[var], y[var]
    rest = fixed.copy()
    rest[var] = 0.0
    h = _highs_instance()
    h.clearModel()
    h.setOptionValue("primal_feasibility_tolerance", tol)
    h.setOptionValue("dual_feasibility_tolerance", tol)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = m + r, r + 1
    lp.col_cost_ = np.concatenate([-np.ones(m), np.zeros(r)])
    lp.col_lower_ = np.concatenate([np.zeros(m), np.full(r, -inf)])
    lp.col_upper_ = np.concatenate([u[var], np.full(r, inf)])
    # G_V^T a_V - w = -G_F^T a_F and y_V^T a_V = -y_F^T a_F
    rhs = -np.append(G.T @ rest, y @ rest)
    lp.row_lower_ = lp.row_upper_ = rhs
    # column-wise constraint matrix: a_i has G[i, :] in rows 0..r-1 and y_i in row r; w_j has -1 in row j
    rows_a = np.append(np.arange(r), r)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([np.arange(m + 1) * (r + 1), m * (r + 1) + np.arange(1, r + 1)])
    lp.a_matrix_.index_ = np.concatenate([np.tile(rows_a, m), np.arange(r)]).astype(np.int32)
    lp.a_matrix_.value_ = np.concatenate([np.column_stack([Gv, yv]).ravel(), -np.ones(r)])
    model = highspy.HighsModel()
    model.lp_ = lp
    hess = highspy.HighsHessian()  # identity on the w block (lower triangle, column-wise)
    hess.dim_ = m + r
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_ = np.concatenate([np.zeros(m + 1), np.arange(1, r + 1)]).astype(np.int32)
    hess.index_ = np.arange(m, m + r, dtype=np.int32)
    hess.value_ = np.ones(r)
    model.hessian_ = hess
    h.passModel(model)
    h.run()
    # "solve error" also where the QP solver stopped at its optimum with a primal infeasibility
    # above the tolerance (seen at 1e-5 on degenerate duals): its point still tells the sets
    if h.getModelStatus() not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kSolveError):
        return None
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=float)
    duals = np.asarray(sol.row_dual, dtype=float)
    if x.size != m + r or duals.size != r + 1 or not (np.isfinite(x).all() and np.isfinite(duals).all()):
        return None
    a = rest
    a[var] = np.clip(x[:m], 0.0, u[var])
    return a, -float(duals[r])


class WeightedSVMDual:
    """Exact warm-started active-set solver of the v-weighted SVM dual on a fixed kernel.

    The ACS step of GAGA Algorithm 1 for the kernel SVM (section 4.1)::

        min_a  1/2 a^T Q a - 1^T a   s.t.  0 <= a_i <= u_i = C v_i,   y^T a = 0.

    With ``g = 1 - Q a - y b`` its KKT conditions are ``a_i = 0 => g_i <= 0``,
    ``a_i = u_i => g_i >= 0`` and ``0 < a_i < u_i => g_i = 0``.  For a guess of the
    free set ``Z`` and the upper-bound set ``P`` (every other sample at 0) the
    solution is that of::

        [Q_ZZ   y_Z] [a_Z]   [1 - Q_ZP u_P]
        [y_Z^T   0 ] [ b ] = [  -y_P^T u_P ]

    checked against every KKT condition; violators change sets and the system is
    solved again (at most ``max_rounds`` times).  A low-rank ``Q = G G^T`` (its systems are
    singular once more than ``rank Q + 1`` samples are guessed free) is solved first by the
    warm-started active-set method in ``(w, b)`` coordinates
    (:func:`~spl_bench.gaga.svm.lowrank_dual.lowrank_svm_dual`) and its sets checked in the same
    way; by HiGHS (:func:`highs_svm_dual`) where these give up.  A full-rank ``Q`` (an RBF
    kernel) whose guessed sets do not settle is solved by libsvm from a cold start, to its
    tolerance, and libsvm's sets then by guess-and-check (exact again); then :meth:`_active_set_qp`
    tries, from libsvm's point; ``None`` if all fail (the caller uses libsvm).
    The matrix depends on ``Z`` only, and during ACS only ``u`` changes from one
    iteration to the next while ``Z`` seldom does, so its factorisation is kept
    (:class:`~spl_bench.gaga.core.factors.Factor`: duplicated samples in ``Z`` are merged,
    the minimum-norm split).  The sets of the latest solution are the next guess
    when it is warm-started from that solution.
    """

    #: with a low-rank factor, fit by the warm-started active-set method in ``(w, b)`` coordinates
    #: (:func:`~spl_bench.gaga.svm.lowrank_dual.lowrank_svm_dual`); false: guess-and-check, then HiGHS
    lowrank_first: bool = True
    #: with a full-rank Q, where guess-and-check gives up: libsvm's solution (at ``libsvm_start_tol``)
    #: solved exactly at its sets; false: the primal active-set method from the warm start
    libsvm_start: bool = True
    libsvm_start_tol: float = 1e-7
    #: ``|g|`` up to which a sample of a warm start is taken for free (:meth:`_sets_of_margins`)
    MARGIN_TOL: float = 1e-7
    #: with a full-rank Q, guess-and-check's products with rows of Q (``u_P @ Q[P]`` and
    #: ``a_Z @ Q[Z]``) taken in place by :func:`~spl_bench.gaga.core.gather.combine_rows`, equal to
    #: numpy's gather + ``gemv`` to rounding; false: numpy's (the route of rows made before)
    compiled_rows: bool = True

    def __init__(self, Q: Array, y: Array, tol: float = 1e-9, max_rounds: int = 30,
                 duplicates: NDArray[np.intp] | None = None, factor: Array | None = None) -> None:
        self.Q = Q
        self.y = y
        #: ``G`` with ``Q = G G^T`` when ``Q`` has low rank (a linear kernel: ``G = y * X``)
        self.factor = factor
        self.duplicates = duplicates  # group label of each sample (identical x and y), if any
        self.canon = canonical_duplicates(duplicates)
        self.tol = tol
        self.max_rounds = max_rounds
        self._factor: tuple[bytes, AnyFactor, Array | None] | None = None  # (Z, its factor, Q[Z, :] or G[Z] or None)
        self._root: tuple[NDArray[np.intp], Factor] | None = None  # the latest LU (updated by KKTUpdate)
        self._cols_P: tuple[bytes, Array] | None = None  # (P, Q[P, :] or G[P])
        self._last: tuple[Array, NDArray[np.bool_], NDArray[np.bool_]] | None = None  # (a, Z, P)
        self.last_u: Array | None = None  # the box of the latest solution
        self.n_fits = 0
        self.n_fallbacks = 0
        self.n_highs = 0
        self.n_lowrank = 0
        self.n_libsvm_starts = 0  # fits solved exactly from libsvm's sets (full-rank Q)
        self._lowrank = LowRankState()  # carried between the low-rank fits (the free set's QR)

    def fit(self, u: Array, a0: Array, b0: float | None = None) -> tuple[Array, float, Array] | None:
        """``(a, b, g)`` solving the dual with box ``[0, u]``, warm-started from ``a0``; or ``None``.

        The start's sets are those of the latest solution when ``a0`` is it; else, with the
        intercept ``b0`` of ``a0``, the sets ``g = 0`` (free) and ``g > 0`` (at ``u``) of its
        margins (:meth:`_sets_of_margins`); else ``a0``'s place in the new box (:meth:`_sets_of`).

        With a low-rank factor (and ``lowrank_first``), the warm-started active-set method of
        :func:`~spl_bench.gaga.svm.lowrank_dual.lowrank_svm_dual` from the sets of ``a0``, its sets
        then solved by guess-and-check (exact to the LU's precision); otherwise guess-and-check
        from the sets of ``a0`` first.  Where these give up, the QP solved by HiGHS and its sets
        checked the same way; with a full-rank ``Q``, libsvm's point solved exactly at its sets
        (``libsvm_start``); then the primal active-set method of :meth:`_active_set_qp`.
        """
        self.n_fits += 1
        live = u > 0
        last = self._last
        if last is not None and last[0] is a0:
            Z, P = last[1] & live, last[2] & live
        elif b0 is not None:
            Z, P = self._sets_of_margins(a0, b0, u)
        else:
            Z, P = self._sets_of(a0, u)
        lowrank = self.factor is not None and self.lowrank_first
        # with a low-rank Q guess-and-check's systems turn singular once its guess frees more
        # than rank Q + 1 samples, and it then spends its rounds before giving up: the active-set
        # method (one set change at a time, never singular) finds the sets, checked below
        out = None if lowrank else self._guess_and_check(u, Z, P)
        if out is not None:
            return out
        start = a0
        if self.factor is not None:
            a_qp = (lowrank_svm_dual(self.factor, self.y, u, a0, Z, P, tol=self.tol, state=self._lowrank)
                    if lowrank else None)
            if a_qp is not None:
                self.n_lowrank += 1
            else:
                a_qp = highs_svm_dual(self.factor, self.y, u, guess=a0)
                self.n_highs += a_qp is not None
            if a_qp is not None:
                out = self._exact_at_sets_of(u, a_qp)
                if out is not None:
                    return out
                start = a_qp
        elif self.libsvm_start:
            # few fits end here, but from the warm start the primal active-set method changes one
            # bound per step, and with an RBF kernel hundreds of samples can be free: libsvm's
            # sets are close to the optimum's, so guess-and-check from them settles at once
            a_svm = self._libsvm_point(u)
            if a_svm is not None:
                out = self._exact_at_sets_of(u, a_svm)
                if out is not None:
                    self.n_libsvm_starts += 1
                    return out
                start = a_svm
        out = self._active_set_qp(u, start)
        if out is not None:
            return out
        self.n_fallbacks += 1
        self._last = None
        return None

    def _libsvm_point(self, u: Array) -> Array | None:
        """libsvm's solution of the dual with box ``[0, u]`` (a cold start, stopped at
        ``libsvm_start_tol``), or ``None`` with fewer than two classes among the live samples.

        The kernel matrix is ``Q ∘ y yᵀ``; libsvm's box is ``C · weight``, here ``1 · u_i``.
        """
        live = np.flatnonzero(u > 0)
        y = self.y[live]
        if np.unique(y).size < 2:
            return None
        K = self.Q[np.ix_(live, live)] * np.outer(y, y)
        support, dual, _ = libsvm_fit(K, y, u[live], 1.0, "precomputed", 0.0, self.libsvm_start_tol)
        a = np.zeros_like(u)
        sv = live[support]
        a[sv] = dual * self.y[sv]
        return np.clip(a, 0.0, u)

    def fit_cold(self, u: Array) -> tuple[Array, float, Array] | None:
        """``(a, b, g)`` solving the dual with box ``[0, u]`` without a nearby solution: with a
        low-rank factor by :func:`~spl_bench.gaga.svm.lowrank_dual.lowrank_svm_dual` from ``a = 0``
        (exact, where libsvm stops at its tolerance), else ``None`` (the caller uses libsvm)."""
        if self.factor is None:
            return None
        self.n_fits += 1
        none = np.zeros(u.size, dtype=bool)
        a = lowrank_svm_dual(self.factor, self.y, u, np.zeros(u.size), none, none, tol=self.tol,
                             state=self._lowrank)
        if a is None:
            return None
        self.n_lowrank += 1
        return self._exact_at_sets_of(u, a)

    def _exact_at_sets_of(self, u: Array, a: Array) -> tuple[Array, float, Array] | None:
        """The solution for the sets of a (near) optimum ``a``: guess-and-check from them, or, on
        a degenerate dual (more free samples than ``rank Q + 1``), one minimum-norm correction."""
        Z, P = self._sets_of(a, u)
        out = self._guess_and_check(u, Z, P)
        if out is None:
            out = self._correct(u, a, Z, P)
        return out

    @staticmethod
    def _sets_of(a: Array, u: Array) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """The free and upper-bound sets of ``a`` in the box ``[0, u]`` (relative slack 1e-8)."""
        live = u > 0
        scale = np.maximum(u, 1e-300)
        Z = live & (a > 1e-8 * scale) & (a < (1.0 - 1e-8) * u)
        P = live & ~Z & (a >= (1.0 - 1e-8) * u)
        return Z, P

    def _sets_of_margins(self, a0: Array, b0: float, u: Array) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """The free and upper-bound sets the KKT conditions give the margins of ``(a0, b0)``:
        free where ``|g| <= MARGIN_TOL``, at ``u`` where ``g`` is larger.

        A point of the age-path warm-starts the first ACS fit after a jump (GAGA Algorithm 2,
        line 8) in a box ``u = C v*`` of a new age.  Its samples in M sit at ``a_i = C v_i`` of
        the old age, inside the new box, so :meth:`_sets_of` takes them all for free samples
        (``|M|`` of them, while with a linear kernel a free set holds at most ``d + 1``
        independent ones); their margins say they belong at the bound.
        """
        live = u > 0
        g = 1.0 - self._Q_times(a0) - self.y * b0
        Z = live & (np.abs(g) <= self.MARGIN_TOL)
        P = live & ~Z & (g > 0)
        return Z, P

    def _correct(self, u: Array, a: Array, Z: NDArray[np.bool_], P: NDArray[np.bool_]
                 ) -> tuple[Array, float, Array] | None:
        """``a`` with the sets ``(Z, P)`` corrected onto their equations by one minimum-norm step.

        The equations of the sets (``g_Z = 0``, ``y^T a = 0``, ``a_P = u_P``, the others 0) are
        consistent when the sets are those of an optimum, also when their matrix is singular;
        the least-squares step from a nearby point (HiGHS's, to its tolerances) then solves them
        to working precision and moves ``a`` by about that tolerance.  The result is returned
        only if it meets every KKT condition (``tol``), else ``None``.
        """
        live = u > 0
        tol, tol_a = self.tol, self.tol * max(float(u.max(initial=0.0)), 1e-300)
        z, p = np.flatnonzero(Z), np.flatnonzero(P)
        if z.size == 0:
            return None
        a = np.where(P, u, np.where(Z, a, 0.0))
        Qa = self._Q_times(a)
        b0 = float(np.mean(self.y[z] * (1.0 - Qa[z])))  # g_Z = 0 in the least-squares sense
        M = kkt_matrix(self.Q, self.y, z, 1.0)
        r = np.append(1.0 - Qa[z] - self.y[z] * b0, -float(self.y @ a))
        step = Factor(M).solve(r)
        a[z] += step[:-1]
        b = b0 + float(step[-1])
        if np.any(a[z] < -tol_a) or np.any(a[z] > u[z] + tol_a):
            return None
        a = np.clip(a, 0.0, u)
        g = 1.0 - self._Q_times(a) - self.y * b
        N = live & ~Z & ~P
        if (float(np.abs(g[z]).max()) > tol or abs(float(self.y @ a)) > tol_a
                or np.any(g[N] > tol) or np.any(g[p] < -tol)):
            return None
        self._last = (a, Z, P)
        self.last_u = u
        return a, b, g

    def _Q_times(self, a: Array) -> Array:
        """``Q a`` (through the low-rank factor when there is one)."""
        if self.factor is not None:
            return self.factor @ (self.factor.T @ a)
        return self.Q @ a

    def _guess_and_check(self, u: Array, Z: NDArray[np.bool_], P: NDArray[np.bool_]
                         ) -> tuple[Array, float, Array] | None:
        """Solve the equality system of the sets ``(Z, P)``, move the violators, repeat; ``None``
        when a system has no exact solution or the sets do not settle in ``max_rounds``."""
        live = u > 0
        tol, tol_a = self.tol, self.tol * max(float(u.max(initial=0.0)), 1e-300)
        Q, y = self.Q, self.y
        G = self.factor
        rows = G is None and self.compiled_rows
        seen: set[bytes] = set()
        fresh = False  # the factor of this round's Z was made afresh after an inaccurate update
        prev: tuple[NDArray[np.bool_], NDArray[np.bool_]] | None = None  # the previous round's sets
        single = False  # move one violator per round (after a singular system)
        rounds, limit = -1, self.max_rounds
        while rounds + 1 < limit:
            rounds += 1
            z = np.flatnonzero(Z)
            if z.size == 0:
                break
            key = z.tobytes()
            if self._factor is None or self._factor[0] != key:
                fresh = False
                self._factor = (key, self._system_factor(z), None if rows else Q[z] if G is None else G[z])
            # Qz: the rows Q[z] (a row gather is a contiguous copy), or G[z] with Q = G G^T; None
            # when the products with rows of Q are taken in place (compiled_rows)
            fac, Qz = self._factor[1], self._factor[2]
            p = np.flatnonzero(P)
            if rows:  # qP = Q[:, P] u_P = sum_{i in P} u_i Q[i, :] (Q symmetric)
                qP = combine_rows(Q, p, u[p])
            else:
                pkey = p.tobytes()
                if self._cols_P is None or self._cols_P[0] != pkey:
                    self._cols_P = (pkey, Q[p] if G is None else G[p])
                qP = u[p] @ self._cols_P[1] if G is None else G @ (u[p] @ self._cols_P[1])
            rhs = np.append(1.0 - qP[z], -float(y[p] @ u[p]))
            if isinstance(fac, LowRankSVMFactor):  # it factorises [[-Q_zz, -y_z], [y_z^T, 0]]
                rhs[:-1] *= -1.0
            sol = fac.solve(rhs)
            a = np.zeros_like(u)
            a[p] = u[p]
            a[z] = sol[:-1]
            b = float(sol[-1])
            if rows:
                qZ = combine_rows(Q, z, sol[:-1])
            else:
                qZ = sol[:-1] @ Qz if G is None else G @ (sol[:-1] @ Qz)
            g = 1.0 - qP - qZ - y * b
            if not (np.isfinite(g).all() and np.isfinite(b)):
                break
            if float(np.abs(g[z]).max()) > tol or abs(float(y @ a)) > tol_a:
                updated = isinstance(fac, KKTUpdate) or (isinstance(fac, MergedKKT) and fac.updated)
                if updated and not fresh:  # an update not accurate enough: a new LU
                    self._factor = (key, self._kkt_factor(z, update=False), Qz)
                    fresh = True
                    continue
                if prev is not None and not single:
                    # a singular system (more free samples than the rank of Q allows): back to
                    # the previous sets, and from there one violator at a time
                    (Z, P), single, limit = prev, True, limit + self.max_rounds
                    continue
                break  # a singular system without an exact solution: the fallbacks decide
            low = Z & (a < -tol_a)
            high = Z & (a > u + tol_a)
            N = live & ~Z & ~P
            up = N & (g > tol)
            down = P & (g < -tol)
            if not (low.any() or high.any() or up.any() or down.any()):
                a = np.clip(a, 0.0, u)
                self._last = (a, Z, P)
                self.last_u = u
                return a, b, g
            seen.add(key + np.flatnonzero(P).tobytes())
            if single or (rounds >= 2 and len(seen) <= rounds):  # one index at a time (also after a cycle)
                viol = np.zeros(Z.size)
                viol[low] = -a[low] / tol_a * tol
                viol[high] = (a[high] - u[high]) / tol_a * tol
                viol[up] = g[up]
                viol[down] = -g[down]
                keep = np.zeros(Z.size, dtype=bool)
                keep[int(np.argmax(viol))] = True
                low, high, up, down = low & keep, high & keep, up & keep, down & keep
            prev = (Z, P)
            Z = (Z & ~low & ~high) | up | down
            P = (P & ~down) | high
        return None

    def _active_set_qp(self, u: Array, a0: Array) -> tuple[Array, float, Array] | None:
        """The same dual by a primal active-set method: the fallback of :meth:`fit` when its
        guessed sets do not settle.

        Guess-and-check moves every violator at once; from a poor guess it can wander without
        end, and with a low-rank ``Q`` (a linear kernel: rank ``Q <= d``) its systems are singular
        whenever more than ``d + 1`` samples are guessed free, so it can give up on every fit of
        a warm start, and libsvm's inexact points would then mislead the polish.  Here the
        iterates stay feasible (box and ``y^T a = 0``) and the objective
        never increases: on the free set ``F`` the equality-constrained step solves
        ``[Q_FF y_F; y_F^T 0] [p; mu] = [-grad_F; 0]``; if that system is singular and
        inconsistent, the residual of its minimum-norm solution is a direction of zero curvature
        and strictly decreasing objective (``Q_FF r = 0``, ``y_F^T r = 0``), followed to the box.
        A blocking bound joins the working set; at a stationary point the bound with the most
        violated sign condition (``a_i = 0`` needs ``g_i <= 0``, ``a_i = u_i`` needs ``g_i >= 0``,
        ``b = mu``) leaves it.  ``None`` if it does not finish within its iterations.
        """
        Q, y = self.Q, self.y
        n = u.size
        a, live, at0, atu = self._feasible_start(u, a0)
        tol = self.tol
        scale_u = max(float(u.max(initial=0.0)), 1e-300)
        b = 0.0
        # Q a is updated by the rows of the samples that moved (|F| n per step, not n^2), and
        # computed afresh every 50 steps and wherever the KKT conditions are tested
        Qa, since = Q @ a, 0
        for _ in range(50 + 4 * n):
            free = np.flatnonzero(live & ~at0 & ~atu)
            if since >= 50:
                Qa, since = Q @ a, 0
            if free.size == 0:
                b = self._box_intercept(1.0 - Qa, at0, atu)
            else:
                p, consistent, sol = self._face_direction(free, Qa)
                stationary = consistent and float(np.abs(p).max()) <= 1e-13 * scale_u
                if consistent:
                    b = float(sol[-1])
                if not stationary:
                    af = self._ratio_step(a, u, free, p, consistent, at0, atu)
                    if af is None:
                        return None
                    Qa += (a[free] - af) @ Q[free]  # Q symmetric: rows of the moved samples
                    since += 1
                    continue
            if since:  # a stationary point: its KKT conditions tested on an exact Q a
                Qa, since = Q @ a, 0
            g = 1.0 - Qa - y * b
            viol = np.zeros(n)
            viol[at0] = g[at0]
            viol[atu] = -g[atu]
            k = int(np.argmax(viol))
            if viol[k] <= tol:
                if free.size and (float(np.abs(g[free]).max()) > tol or abs(float(y @ a)) > tol * scale_u):
                    return None
                a = self._split_duplicates(np.clip(a, 0.0, u), u, live & ~at0 & ~atu)
                Z, P = self._sets_of(a, u)
                self._last = (a, Z, P)
                self.last_u = u
                return a, b, g
            at0[k] = atu[k] = False
        return None

    def _feasible_start(self, u: Array, a0: Array
                        ) -> tuple[Array, NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
        """``(a, live, at0, atu)`` of :meth:`_active_set_qp`'s start: ``a0`` in the box ``[0, u]``
        with ``y^T a = 0``, the samples with ``u > 0`` and those of ``a`` at 0 and at ``u``."""
        y = self.y
        live = u > 0
        a = np.where(live, np.clip(a0, 0.0, u), 0.0)
        s = float(y @ a)
        if s != 0.0:  # feasible start: shrink the class with the larger sum (stays in the box)
            cls = y * np.sign(s) > 0
            tot = float(a[cls].sum())
            a[cls] *= max(tot - abs(s), 0.0) / tot
        at0 = live & (a <= 0.0)
        atu = live & ~at0 & (a >= u)
        a[at0], a[atu] = 0.0, u[atu]
        return a, live, at0, atu

    def _box_intercept(self, g0: Array, at0: NDArray[np.bool_], atu: NDArray[np.bool_]) -> float:
        """With no free sample, ``b`` with ``g = g0 - y b <= 0`` on the samples at 0 and
        ``g >= 0`` at ``u``, as nearly as possible (the middle of the interval they allow)."""
        y = self.y
        lo_b = np.concatenate([g0[at0 & (y > 0)], -g0[atu & (y < 0)]])
        hi_b = np.concatenate([g0[atu & (y > 0)], -g0[at0 & (y < 0)]])
        lo, hi = float(lo_b.max(initial=-np.inf)), float(hi_b.min(initial=np.inf))
        return 0.5 * (lo + hi) if np.isfinite(lo + hi) else (lo if np.isfinite(lo) else
                                                            (hi if np.isfinite(hi) else 0.0))

    def _face_direction(self, free: NDArray[np.intp], Qa: Array) -> tuple[Array, bool, Array]:
        """``(p, consistent, sol)``: the step ``p`` of ``a_F`` on the free set ``F`` (the solution
        ``sol = (p, mu)`` of ``[Q_FF y_F; y_F^T 0] [p; mu] = [1 - (Q a)_F; 0]``, or, if that system
        is singular and inconsistent, its least-squares residual: a direction of zero curvature)."""
        # the free set changes by one index per step: its factor is a bordered update
        # of the latest LU (KKTUpdate), a new LU only when that drifts too far
        fac = self._kkt_factor(free)
        rhs = np.append(1.0 - Qa[free], 0.0)
        sol = fac.solve(rhs)
        # a non-singular system (or one singular only through duplicated samples, whose
        # equal rows have equal right-hand sides) is consistent; only the least-squares
        # fallback needs its residual
        r = rhs - fac.J @ sol if fac.least_squares else rhs
        consistent = not fac.least_squares or (
            float(np.abs(r).max()) <= 1e-9 * (1.0 + float(np.abs(rhs).max())))
        p = sol[:-1] if consistent else r[:-1]
        return p, consistent, sol

    @staticmethod
    def _ratio_step(a: Array, u: Array, free: NDArray[np.intp], p: Array, consistent: bool,
                    at0: NDArray[np.bool_], atu: NDArray[np.bool_]) -> Array | None:
        """Move ``a_F`` along ``p`` (the full step if ``consistent`` and no bound blocks it, else to
        the first blocking bound, whose sample joins ``at0`` or ``atu``), in place; ``a_F`` before
        the step, or ``None`` if ``p`` is unbounded in the box."""
        af, uf = a[free], u[free]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(p < 0, af / -p, np.where(p > 0, (uf - af) / p, np.inf))
        k = int(np.argmin(ratio))
        alpha = float(ratio[k])
        if consistent and alpha >= 1.0:
            a[free] = af + p
        elif not np.isfinite(alpha):
            return None
        else:
            a[free] = np.clip(af + alpha * p, 0.0, uf)
            i = free[k]
            if p[k] < 0:
                a[i], at0[i] = 0.0, True
            else:
                a[i], atu[i] = u[i], True
        return af

    def _split_duplicates(self, a: Array, u: Array, free: NDArray[np.bool_]) -> Array:
        """``a`` with each group of duplicated samples that has a free member re-split at one
        level: ``a_i = clip(t, 0, u_i)`` with the group's sum kept (the minimum-norm split in the
        box, the one the merged factorisations give; ``Q a``, and so ``g``, is unchanged).

        Identical samples have equal rows of ``Q`` and so equal ``g``: with one of them free
        (``g = 0``) every split in the box with the same sum meets the KKT conditions.
        """
        labels = self.duplicates if self.duplicates is not None else self._equal_rows()
        if labels is None:
            return a
        for grp in np.unique(labels[free]):
            idx = np.flatnonzero(labels == grp)
            if idx.size < 2:
                continue
            total, caps = float(a[idx].sum()), np.sort(u[idx])
            # the level t: the smallest caps are filled first, the rest share what is left
            below = np.concatenate([[0.0], np.cumsum(caps)[:-1]])
            k = idx.size - np.arange(idx.size)
            reach = below + k * caps  # the sum at t = caps[j]
            j = int(np.searchsorted(reach, total))
            t = caps[-1] if j >= idx.size else (total - below[j]) / k[j]
            a[idx] = np.clip(t, 0.0, u[idx])
        return a

    def _equal_rows(self) -> NDArray[np.intp] | None:
        """Group labels of the samples with equal rows of ``Q`` and equal ``y`` (to 1e-12 of
        ``max |Q|``), for callers that did not pass ``duplicates``; ``None`` if all differ.
        Computed once per solver (``Q`` is fixed)."""
        if not hasattr(self, "_rows_groups"):
            scale = float(np.abs(self.Q).max(initial=0.0))
            key = np.round(self.Q / (1e-12 * scale)) if scale > 0 else np.zeros_like(self.Q)
            _, labels, counts = np.unique(np.column_stack([key, self.y]), axis=0, return_inverse=True,
                                          return_counts=True)
            self._rows_groups = np.asarray(labels).ravel() if np.any(counts > 1) else None
        return self._rows_groups

    def _system_factor(self, z: NDArray[np.intp]) -> AnyFactor:
        """The factor of guess-and-check's system on the free set ``z``.  With ``Q = G G^T`` and
        more than ``d + 1`` free samples that system is singular: its minimum-norm least-squares
        solution (LAPACK ``gelsy``'s answer) from a QR of ``[G_z, y_z]``
        (:meth:`~spl_bench.gaga.svm.kkt.LowRankSVMFactor.make_singular` on ``-Q_zz``: rows negated,
        the same least-squares solutions) instead of a failed LU of order ``|z| + 1`` and ``gelsy``
        on it; else :meth:`_kkt_factor`."""
        G = self.factor
        if G is not None and z.size > G.shape[1] + 1:
            none = np.zeros(0)
            f = LowRankSVMFactor.make_singular(G[z], G[:0], self.y[z], none, none)
            if f is not None:
                return f
        return self._kkt_factor(z)

    def _kkt_factor(self, z: NDArray[np.intp], update: bool = True) -> AnyFactor:
        """The factor of ``[[Q_zz, y_z], [y_z^T, 0]]`` (:func:`~spl_bench.gaga.svm.kkt.kkt_factor`):
        an update of the latest LU (a set seldom changes by more than an index or two), else a
        new LU (also with ``update=False``), which becomes the root of the next updates."""
        fac, self._root = kkt_factor(self.Q, self.y, z, 1.0, self.canon, self._root if update else None)
        return fac
