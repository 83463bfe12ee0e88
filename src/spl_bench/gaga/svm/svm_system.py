"""The kernel-SVM dual path system of GAGA eq. (5); see :mod:`spl_bench.gaga.core.system_base`
for the equations."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor, Factor, groups_hint
from spl_bench.gaga.core.structured import SchurBlocks
from spl_bench.gaga.core.system_base import Array, PathSystem, _has_mixed, sp_v, sp_weights
from spl_bench.gaga.svm.acs_skip import svm_jump, svm_state
from spl_bench.gaga.svm.events_nb import sample_events
from spl_bench.gaga.svm.inner import WeightedSVMDual, canonical_duplicates, low_rank_factor
from spl_bench.gaga.svm.kkt import KKTUpdate, MarginQR, MergedKKT
from spl_bench.gaga.svm.reps import _Reps
from spl_bench.gaga.svm.svm_factor import SCHUR_CACHE as SCHUR_CACHE
from spl_bench.gaga.svm.svm_factor import _remember, _SVMFactorMixin
from spl_bench.models import Model, Params
from spl_bench.models.svm import SVMModel, libsvm_fit, resolve_gamma
from spl_bench.sp import EASY, HARD, MIXED, SPRegularizer

#: SVM sample sets: margin sets and, for g > 0, the SP partition
SVM_N, SVM_Z, SVM_PE, SVM_PM, SVM_PD = 0, 1, 2, 3, 4
SVM_SETS = {SVM_N: "E_N", SVM_Z: "E_Z", SVM_PE: "E_P", SVM_PM: "M", SVM_PD: "D"}

# the limits of the factor routes, read by SVMSystem.factor at each call and passed to them
# (svm_factor; the number of set configurations kept, SCHUR_CACHE, is defined there)
#: smallest margin set E_Z for which the SVM Jacobian is factorised by its Schur complement
SCHUR_MIN_Z = 64
#: set changes (indices in or out of the free set, or between E_Z and M) up to which a new set
#: configuration's Jacobian is solved through the latest reduced Schur blocks
#: (:meth:`SVMSystem._updated_factor`) instead of blocks and a reduction of its own; 0: never
SCHUR_UPDATE_MAX = 12
#: smallest M for that route: below it a reduction of W costs less than the bordered solves
SCHUR_UPDATE_MIN_M = 128
#: a moved sample whose margin ``g`` and ``dg/dlam`` are both within this of 0 after its set change
#: stays on the margin: its move is inside a degenerate face (:meth:`SVMSystem.set_change_note`)
FACE_TOL = 1e-9


def margin_rank_deficiency(Gz: Array, yz: Array) -> int:
    """``|E_Z| + 1 - rank B`` of the bordered margin block ``B = [[Q_ZZ, y_Z], [y_Z^T, 0]]`` (the
    matrix of eq. (7) on the margin samples) with ``Q_ZZ = G_Z G_Z^T``: how many directions the
    dual ``(a_Z, b)`` of the margin samples is free to move in without changing ``w`` or the KKT
    conditions.

    With ``K = G_Z G_Z^T`` symmetric and ``y_Z != 0``, a bordered matrix has ``rank B = rank K + 1``
    when ``y_Z`` lies in the range of ``K`` (the Schur complement ``-y^T K^+ y`` is non-zero) and
    ``rank K + 2`` otherwise; either way ``rank B = rank [G_Z, y_Z] + 1``, since ``range K =
    range G_Z``.  So one SVD of the ``|E_Z| x (d + 1)`` matrix ``[G_Z, y_Z]`` gives it (it was two QR
    factorisations and an SVD of a ``(d + 2)``-square core: 13 % of a Table 11 path).  With no
    margin sample ``B = [0]`` and the deficiency is 1: ``b`` is not fixed by the margin.  The rank is
    NumPy's (``matrix_rank``'s default tolerance); a diagnostic of the event log, not used by the path.
    """
    if len(yz) == 0:
        return 1
    return int(len(yz) - np.linalg.matrix_rank(np.column_stack([Gz, yz])))


class SVMSystem(_SVMFactorMixin, PathSystem):
    """Kernel SVM in the dual: ``f = sum_j a_j y_j K(x_j, .) + b``, ``0 <= a_i <= C v_i``."""

    #: the located point, not the moved values: a sample in M has ``a_i = C v*(C g_i)`` with
    #: ``d a_i / d g_i = C^2 dv*/dell``, and putting it on its boundary value moves its own margin
    #: by ``C^2 |dv*/dell| Q_ii`` times the location error; with a linear kernel (``Q_ii = |x_i|^2``,
    #: of the order of the number of features on standardised data) and the mixture SP at small
    #: ages that gain is in the thousands, and the recorded point would be off F
    record_moved_values = False

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array) -> None:
        super().__init__(model, sp, X, y)
        assert isinstance(model, SVMModel)
        self.C = model.C
        self.gamma = resolve_gamma(model.gamma, X)
        self.K = np.ascontiguousarray(model.kernel_matrix(X, X, self.gamma))  # for libsvm (ACS steps)
        self.Q = np.ascontiguousarray(self.K * np.outer(y, y))
        self.n_events = 2 * self.n
        self._cache: dict[str, Any] = {}
        self._K_sub: tuple[NDArray[np.intp], Array] | None = None  # the latest K[idx, idx] (ACS)
        # identical samples (x and y) have equal rows and columns in Q: their group labels make
        # the merge of a singular system (linalg.Factor) a hint to check, not a search
        _, dup, counts = np.unique(np.column_stack([X, y]), axis=0, return_inverse=True, return_counts=True)
        self.duplicates: NDArray[np.intp] | None = np.asarray(dup).ravel() if np.any(counts > 1) else None
        self._canon = canonical_duplicates(self.duplicates)
        #: ACS steps: the exact warm-started active-set fit first (libsvm when it gives up)
        #: ``G = y * X`` with ``Q = G G^T`` (linear kernel, d < n): the low-rank Jacobian factors
        self.G = low_rank_factor(model.kernel, X, y)
        self._deficiency_of: tuple[bytes, int] = (b"", -1)  # margin set (E_Z) -> its rank deficiency
        self.dual_solver: WeightedSVMDual | None = WeightedSVMDual(
            self.Q, y, duplicates=self.duplicates, factor=self.G)
        self._last_fit: tuple[Array, float, Array] | None = None  # (a, b, g) of its latest fit
        # recent Schur blocks by (E_Z, M) and factorisations of the margin block by E_Z (SCHUR_CACHE)
        self._blocks_lru: OrderedDict[tuple[bytes, bytes], SchurBlocks] = OrderedDict()
        self._A_lru: OrderedDict[bytes, Factor | KKTUpdate | MergedKKT] = OrderedDict()
        self._A_root: tuple[NDArray[np.intp], Factor] | None = None  # the latest LU of a margin block
        # (merged free set, blocks) of the latest configuration whose Schur blocks were reduced
        self._schur_base: tuple[_Reps, SchurBlocks] | None = None
        self._margin_qr_memo: MarginQR | None = None  # the latest margin set's QR (linear kernel)
        self.n_schur_updates = 0  # Jacobians solved through them (_updated_factor)
        self._rows_lru: OrderedDict[bytes, tuple[Array, Array]] = OrderedDict()  # Q[free], Q[free, free]
        self._pe_lru: OrderedDict[bytes, Array] = OrderedDict()  # C Q[:, E_P] 1

    # ------------------------------------------------------------------ state
    def init_from(self, params: Params, lam: float, tol: float = 1e-6) -> None:
        C = self.C
        self.a = np.clip(np.array(params.dual_coef, dtype=float), 0.0, C)
        if self.duplicates is not None:
            # duplicated samples (identical x and y) share g, v and the box: only the sum of
            # their a is determined, and f depends on nothing else.  They get equal shares (the
            # minimum-norm split, which the merged solves of the path then keep), so twins sit in
            # one set: an unequal split from a fit left one twin at a = 0 in E_Z with the other
            # free, and the path then stopped there (can_continue) or logged spurious events
            dup = self.duplicates
            self.a = (np.bincount(dup, weights=self.a) / np.bincount(dup))[dup]
        self.b = float(params.intercept)
        g = 1.0 - self._Qa(self.a) - self.y * self.b
        ell = C * np.maximum(g, 0.0)
        part = self.sp.partition(ell, lam)
        code = np.full(self.n, SVM_Z, dtype=np.int8)
        code[(g < -tol) & (self.a <= tol * C)] = SVM_N
        pos = g > tol
        code[pos & (part == EASY)] = SVM_PE
        code[pos & (part == MIXED)] = SVM_PM
        code[pos & (part == HARD)] = SVM_PD
        self.code = code
        self._fix_fixed(lam)
        self._invalidate()

    def _Qa(self, a: Array, rows: NDArray[np.bool_] | None = None) -> Array:
        """``(Q a)[rows]`` (all rows if ``None``); with a linear kernel through ``Q = G G^T``:
        ``G[rows] (G^T a)``, O(n d) instead of O(n^2) (Table 12, pendigits: these products were 44 %
        of a run)."""
        if self.G is None:
            return self.Q @ a if rows is None else self.Q[rows] @ a
        w = self.G.T @ a
        return self.G @ w if rows is None else self.G[rows] @ w

    def _fix_fixed(self, lam: float) -> None:
        """Set ``a`` on the sets where it is not free (E_N, D: 0; E_P: C; M: C v*)."""
        c = self.code
        self.a[(c == SVM_N) | (c == SVM_PD)] = 0.0
        self.a[c == SVM_PE] = self.C
        m = c == SVM_PM
        if np.any(m):
            g = 1.0 - self._Qa(self.a, m) - self.y[m] * self.b
            v = sp_v(self.sp, self.C * g, np.full(int(m.sum()), MIXED, np.int8), lam)
            self.a[m] = self.C * v

    def _state(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "code": self.code}

    set_fields = ("code",)

    def _invalidate(self) -> None:
        super()._invalidate()
        c = self.code
        self.iz = np.flatnonzero(c == SVM_Z)
        self.im = np.flatnonzero(c == SVM_PM)
        self.ifree = np.concatenate([self.iz, self.im])
        fixed = (c == SVM_PE)
        self.ipe = np.flatnonzero(fixed)
        self._cache = {}

    def _Qrows(self) -> Array:
        """``Q[free, :]`` (``Q`` is symmetric: the columns of the free variables), cached per
        set configuration with ``Q[free, free]`` and ``C Q[:, E_P] 1`` (the fixed ``a = C``)."""
        if "Qr" not in self._cache:
            # recent configurations are revisited (SCHUR_CACHE): their gathers are kept too
            key, key_pe = self.ifree.tobytes(), self.ipe.tobytes()
            rows = self._rows_lru.get(key)
            if rows is None:
                Qr = self.Q[self.ifree]  # a row gather: contiguous copies, unlike Q[:, free]
                rows = (Qr, np.ascontiguousarray(Qr[:, self.ifree]))
                _remember(self._rows_lru, key, rows)
            qpe = self._pe_lru.get(key_pe)
            if qpe is None:
                qpe = self.Q[self.ipe].sum(axis=0) * self.C if self.ipe.size else np.zeros(self.n)
                _remember(self._pe_lru, key_pe, qpe)
            self._cache["Qr"], self._cache["Qff"] = rows
            self._cache["Qpe"] = qpe
            self._cache["Qpe_f"] = qpe[self.ifree]
        return self._cache["Qr"]

    def _Qff(self) -> Array:
        """``Q[free, free]`` (:meth:`_Qrows`)."""
        self._Qrows()
        return self._cache["Qff"]

    def theta(self) -> Array:
        return np.append(self.a[self.ifree], self.b)

    def set_theta(self, theta: Array) -> None:
        k = self.ifree.size
        self.a[self.ifree] = theta[:k]
        self.b = float(theta[k])

    def params(self) -> Params:
        return Params(dual_coef=self.a.copy(), intercept=self.b, X_fit=self.X, y_fit=self.y,
                      extra={"gamma": self.gamma})

    def full_vector(self) -> tuple[Array, float]:
        return self.a.copy(), self.b

    def full_derivative(self, dtheta: Array) -> tuple[Array, float]:
        da = np.zeros(self.n)
        k = self.ifree.size
        da[self.ifree] = dtheta[:k]
        return da, float(dtheta[k])

    # ------------------------------------------------------------ equations
    def _Gfree(self) -> tuple[Array, Array]:
        """``(G[free], C G[E_P]^T 1)`` (linear kernel): ``w = G[free]^T a_free + C G[E_P]^T 1``
        and ``g = 1 - G w - y b``, ``O(n d)`` per point instead of the ``Q`` rows' ``O(n |free|)``
        (and no gather of ``|free|`` rows of ``Q`` per set configuration)."""
        if "Gf" not in self._cache:
            assert self.G is not None
            self._cache["Gf"] = (self.G[self.ifree], self.C * self.G[self.ipe].sum(axis=0))
        return self._cache["Gf"]

    def _w(self, thetas: Array) -> Array:
        """Primal ``w`` of the free variables ``thetas`` (1-D, or one point per row), linear kernel."""
        Gf, wpe = self._Gfree()
        return thetas[..., :self.ifree.size] @ Gf + wpe

    def _g(self, theta: Array) -> Array:
        """Margins ``g = 1 - y f(x)`` of every sample for free variables ``theta``."""
        k = self.ifree.size
        if self.G is not None:
            return 1.0 - self.G @ self._w(theta) - self.y * theta[k]
        Qr = self._Qrows()
        return 1.0 - theta[:k] @ Qr - self._cache["Qpe"] - self.y * theta[k]

    def _g_free(self, theta: Array) -> Array:
        """Margins of the samples with free variables only (E_Z, then M): all ``F`` and ``J``
        need.  Memoised for the latest point (per sets): Newton evaluates the residual and
        then the factor at the same point."""
        hit = self._cache.get("g_free")
        if hit is not None and np.array_equal(hit[0], theta):
            return hit[1]
        k = self.ifree.size
        if self.G is not None:
            g = 1.0 - self._Gfree()[0] @ self._w(theta) - self.y[self.ifree] * theta[k]
        else:
            Qff = self._Qff()
            g = 1.0 - Qff @ theta[:k] - self._cache["Qpe_f"] - self.y[self.ifree] * theta[k]
        self._cache["g_free"] = (theta.copy(), g)
        return g

    def _merge_hint(self) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None:
        """Duplicated samples both in E_Z: equal rows and columns of ``J_theta`` (not in M,
        whose rows carry the identity)."""
        if self.duplicates is None:
            return None
        if "merge_hint" not in self._cache:
            labels = np.concatenate([self.duplicates[self.iz], -2 - np.arange(self.im.size), [-1]])
            self._cache["merge_hint"] = groups_hint(labels)
        return self._cache["merge_hint"]

    def residual(self, theta: Array, lam: float) -> Array:
        k = self.ifree.size
        nz = self.iz.size
        g = self._g_free(theta)
        F = np.empty(k + 1)
        F[:nz] = g[:nz]
        if self.im.size:
            v = sp_v(self.sp, self.C * g[nz:], np.full(self.im.size, MIXED, np.int8), lam)
            F[nz:k] = theta[nz:k] - self.C * v
        F[k] = self.y[self.ifree] @ theta[:k] + self.C * self.y[self.ipe].sum()
        return F

    def jacobians(self, theta: Array, lam: float) -> tuple[Array, Array]:
        k = self.ifree.size
        nz = self.iz.size
        Qff = self._Qff()
        J = np.zeros((k + 1, k + 1))
        Jl = np.zeros(k + 1)
        J[:nz, :k] = -Qff[:nz]
        J[:nz, k] = -self.y[self.iz]
        if self.im.size:
            g = self._g_free(theta)[nz:]
            _, dl, dlam = sp_weights(self.sp, self.C * g, np.full(self.im.size, MIXED, np.int8), lam)
            c2 = (self.C**2) * dl
            J[nz:k, :k] = c2[:, None] * Qff[nz:]
            J[nz:k, nz:k] += np.eye(self.im.size)
            J[nz:k, k] = c2 * self.y[self.im]
            Jl[nz:k] = -self.C * dlam
        J[k, :k] = self.y[self.ifree]
        return J, Jl

    def factor(self, theta: Array, lam: float) -> tuple[AnyFactor, Array]:
        """``J_theta`` by its Schur complement on the M rows (only they change with the point).

        Unknowns ``(a_Z, b)`` and ``a_M``: the Z rows and ``y^T a`` are fixed per sets,
        the M rows are ``diag(C^2 dv/dell) [Q_MZ, y_M | Q_MM] + [0 | I]``.  The blocks
        are built once per set configuration; each point costs one ``|M| x |M|`` LU (or, with
        one ``c`` on every M row, a tridiagonal one).  A configuration near the latest one
        whose blocks were reduced is solved through those instead (:meth:`_updated_factor`).
        The routes are :meth:`_lowrank_factor` and :meth:`_schur_factor` of
        :class:`~spl_bench.gaga.svm.svm_factor._SVMFactorMixin`.

        With a linear kernel and more than ``d + 1`` samples in M: :class:`LowRankSVMFactor`
        (order ``|E_Z| + 1 + d``; with more than ``d + 1`` margin samples its minimum-norm
        least squares; with duplicated samples on the margin, on one per group:
        :class:`MergedLowRankSVMFactor`, and with more than ``d + 1`` groups there, the
        minimum-norm least squares of the unmerged system); the dense route where those do not
        apply (rank-deficient ``[G_Z, y_Z]``, a singular small system).
        """
        if self.G is not None and self.im.size > self.G.shape[1] + 1:
            out = self._lowrank_factor(theta, lam)
        elif self.iz.size < SCHUR_MIN_Z:  # small systems: one dense LU costs less than the bookkeeping
            out = None
        else:
            out = self._schur_factor(theta, lam, SCHUR_UPDATE_MAX, SCHUR_UPDATE_MIN_M)
        return out if out is not None else super().factor(theta, lam)

    def residual_scale(self) -> float:
        return 1.0

    # --------------------------------------------------------------- events
    #: per set code (E_N, E_Z, E_P, M, D), coefficients of (g, a/C, 1, lo/C, hi/C) in h1 and h2:
    #: h1 = -g | a/C | g | g - lo/C | g - hi/C;  h2 = inf | 1 - a/C | lo/C - g | hi/C - g | inf
    _H1 = np.array([[-1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [1, 0, 0, -1, 0], [1, 0, 0, 0, -1]], float)
    _H2 = np.array([[0, 0, 0, 0, 0], [0, -1, 1, 0, 0], [-1, 0, 0, 1, 0], [-1, 0, 0, 0, 1], [0, 0, 0, 0, 0]], float)

    def _sample_events(self, g: Array, a: Array, c: NDArray[np.int8], lam: float) -> tuple[Array, Array]:
        """``(h1, h2)``: distances of margins ``g`` / duals ``a`` to the boundaries of sets ``c``."""
        lo, hi = self.sp.thresholds(lam)
        h1, h2 = np.empty(g.shape[0]), np.empty(g.shape[0])
        sample_events(g, a, c, self._H1, self._H2, float(lo), float(hi), float(self.C), SVM_N, SVM_PD, h1, h2)
        return h1, h2

    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        k = self.ifree.size
        if idx is not None:  # only the rows of the samples involved
            i = idx % self.n
            if self.G is not None:
                g = 1.0 - self.G[i] @ self._w(theta) - self.y[i] * theta[k]
            else:
                g = 1.0 - theta[:k] @ self._Qrows()[:, i] - self.y[i] * theta[k]
                if self.ipe.size:
                    g -= self._cache["Qpe"][i]
            if "pos" not in self._cache:
                pos = np.full(self.n, -1)
                pos[self.ifree] = np.arange(k)
                self._cache["pos"] = pos
            p = self._cache["pos"][i]
            a = np.where(p >= 0, theta[np.maximum(p, 0)], self.a[i])
            h1, h2 = self._sample_events(g, a, self.code[i], lam)
            return np.where(idx >= self.n, h2, h1)
        a = self.a.copy()
        a[self.ifree] = theta[:k]
        h1, h2 = self._sample_events(self._g(theta), a, self.code, lam)
        return np.concatenate([h1, h2])

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """Vectorised :meth:`events` (one matrix product for all margins; with ``idx``, the
        rows of the samples involved, point by point)."""
        if idx is not None:
            return super().events_many(thetas, lams, idx)
        k = self.ifree.size
        if self.G is not None:
            G = 1.0 - self._w(thetas) @ self.G.T - np.outer(thetas[:, k], self.y)
        else:
            G = 1.0 - thetas[:, :k] @ self._Qrows() - np.outer(thetas[:, k], self.y) - self._cache["Qpe"]
        A = np.repeat(self.a[None, :], lams.size, axis=0)
        A[:, self.ifree] = thetas[:, :k]
        out = np.empty((lams.size, 2 * self.n))
        for j, lam in enumerate(lams):
            h1, h2 = self._sample_events(G[j], A[j], self.code, float(lam))
            out[j, :self.n], out[j, self.n:] = h1, h2
        return out

    def event_scale(self, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        lo, hi = self.sp.thresholds(lam)
        return np.full(2 * self.n if idx is None else idx.size, 1.0 + hi / self.C)

    def move(self, positions: NDArray[np.intp], lam: float) -> list[tuple[int, str, str]]:
        moves: list[tuple[int, str, str]] = []
        lo, hi = self.sp.thresholds(lam)
        mixed_ok = _has_mixed(self.sp, lam)
        for p in sorted(set(int(q) for q in positions)):
            i = p % self.n
            upper = p >= self.n
            old = int(self.code[i])
            if old == SVM_N:
                new = SVM_Z
            elif old == SVM_Z:
                if not upper:
                    new = SVM_N
                else:  # a_i reached C: g_i becomes positive with ell = 0+
                    new = SVM_PE if lo > 0 else (SVM_PM if mixed_ok else SVM_PD)
            elif old == SVM_PE:
                new = SVM_Z if not upper else (SVM_PM if mixed_ok else SVM_PD)
            elif old == SVM_PM:
                new = (SVM_PE if lo > 0 else SVM_Z) if not upper else SVM_PD
            else:
                new = SVM_PM if mixed_ok else SVM_PE
            self.code[i] = new
            moves.append((i, SVM_SETS[old], SVM_SETS[new]))
            # the moved index takes the value of the boundary it crossed (v* = 0 at hi, 1 at lo);
            # the other free variables keep theirs.  Re-evaluating a_M = C v*(C g_M) for all of M
            # here would be one fixed-point step whose gain C^2 |dv*/dell| Q_ii can be in the
            # thousands with a linear kernel (Q_ii = |x_i|^2): it would amplify the location error
            if new in (SVM_N, SVM_PD):
                self.a[i] = 0.0
            elif new == SVM_PE:
                self.a[i] = self.C
            elif new == SVM_PM:
                self.a[i] = 0.0 if old == SVM_PD else self.C
        self._invalidate()
        return moves

    # ------------------------------------------------------- set-change log
    def sets_mark(self) -> NDArray[np.int8]:
        """The current set of every sample (a copy of ``code``), to compare with later."""
        return self.code.copy()

    def _margin_class(self, state: tuple[Array, float, Array, float], lam: float,
                      rows: NDArray[np.intp]) -> NDArray[np.int8]:
        """Where the margin of each sample of ``rows`` is at a point ``(a, b, da/dlam, db/dlam)``: 0 below
        the margin, 1 on it and staying (``|g|, |dg/dlam| <= FACE_TOL``), 2 + the SP partition above it
        (a sample at ``g = 0`` takes the side its ``dg/dlam`` points to).  Only the rows asked for are
        formed: an event moves a few samples, and the whole ``Q a`` (O(n^2)) was 16 % of a kernel path."""
        a, b, da, db = state
        y = self.y[rows]
        if self.G is not None:
            Gr = self.G[rows]
            g = 1.0 - Gr @ (self.G.T @ a) - y * b
            dg = -(Gr @ (self.G.T @ da)) - y * db
        else:
            Qr = self.Q[rows]
            g = 1.0 - Qr @ a - y * b
            dg = -(Qr @ da) - y * db
        at = np.abs(g) <= FACE_TOL
        side = np.where(at, np.where(np.abs(dg) <= FACE_TOL, 0.0, dg), g)
        out = (2 + self.sp.partition(self.C * np.maximum(g, 0.0), lam)).astype(np.int8)
        out[side < 0] = 0
        out[side == 0] = 1
        return out

    def _rank_deficiency(self) -> int | None:
        """:func:`margin_rank_deficiency` of the margin samples with a low-rank (linear) kernel
        ``Q = G G^T``; ``None`` otherwise (an RBF block is generically of full rank, and its SVD would
        cost O(|E_Z|^3) at every event)."""
        if self.G is None:
            return None
        key = self.iz.tobytes()  # most events move samples off the margin only: E_Z, and so the rank, unchanged
        if self._deficiency_of[1] < 0 or self._deficiency_of[0] != key:
            self._deficiency_of = (key, margin_rank_deficiency(self.G[self.iz], self.y[self.iz]))
        return self._deficiency_of[1]

    def set_change_note(self, k: int, mark: NDArray[np.int8], lam: float, old: tuple[Array, float, Array, float],
                        new: tuple[Array, float, Array, float]) -> dict[str, Any]:
        """Note on event ``k``: the net set change from the sets ``mark`` to the current ones.

        ``set_change`` lists ``[i, from, to]`` for every sample whose set differs, whether the
        event's own moves made it or the warm start after a jump (or after chattering) did, which
        re-derives the sets from the margins (:meth:`init_from`); ``lam_sets`` is the age the new
        sets hold from (the event's, or ``lam + delta`` after a warm start).  ``degenerate_face``
        lists the moved samples whose margin does not move with their set: on the margin
        (``g = 1 - Q a - y b = 0`` and ``dg/dlam = -Q da/dlam - y db/dlam = 0``, eq. (7)) at the old
        point ``old`` and at the new one ``new`` (each ``(a, b, da/dlam, db/dlam)``), or on the same
        side of it (:meth:`_margin_class`).  Only ``a_i``'s label changed there (E_Z against E_N or
        E_P with ``a_i`` at that bound), which ``w`` and ``b`` do not see: with a linear kernel the
        dual of more than ``rank + 1`` margin samples is not unique.  ``rank_deficiency`` is
        ``|E_Z| + 1 - rank [[Q_ZZ, y_Z], [y_Z^T, 0]]`` with the new sets.
        """
        moved = np.flatnonzero(mark != self.code)
        same = self._margin_class(old, lam, moved) == self._margin_class(new, lam, moved)
        note = {"set_change": [[int(i), SVM_SETS[int(mark[i])], SVM_SETS[int(self.code[i])]] for i in moved],
                "lam_sets": float(lam), "degenerate_face": [int(i) for i in moved[same]],
                "rank_deficiency": self._rank_deficiency()}
        return note

    def apply_options(self, opts: Any) -> None:
        """As :meth:`PathSystem.apply_options`; ``svm_active_set=False`` leaves the fits to libsvm."""
        super().apply_options(opts)
        if not opts.svm_active_set:
            self.dual_solver = None

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kernel_gamma": float(self.gamma), "n_schur_updates": self.n_schur_updates}
        if self.dual_solver is not None:
            out["n_acs_fits"] = self.dual_solver.n_fits
            out["n_acs_libsvm_fallbacks"] = self.dual_solver.n_fallbacks
            out["n_acs_highs"] = self.dual_solver.n_highs
            out["n_acs_lowrank"] = self.dual_solver.n_lowrank
            out["n_acs_libsvm_starts"] = self.dual_solver.n_libsvm_starts
        return out

    def kkt(self, lam: float) -> float:
        return svm_kkt(self.model, self.sp, self.params(), self.X, self.y, lam)

    def initial_fit(self) -> Params:
        """The fit at ``v = 1``: with a low-rank (linear) kernel :meth:`fit_weighted` without a
        warm start (exact from a cold start), else the model's libsvm fit."""
        if self.dual_solver is not None and self.dual_solver.factor is not None:
            return self.fit_weighted(np.ones(self.n), Params())
        return super().initial_fit()

    def fit_weighted(self, v: Array, warm: Params) -> Params:
        """The v-weighted SVM dual on the precomputed kernel: :class:`WeightedSVMDual`
        warm-started from ``warm`` (without one, :meth:`WeightedSVMDual.fit_cold`: exact with a
        linear kernel), or libsvm if it gives up (or is switched off)."""
        if self.dual_solver is not None:
            out = (self.dual_solver.fit(self.C * v, warm.dual_coef, warm.intercept) if warm.dual_coef is not None
                   else self.dual_solver.fit_cold(self.C * v))
            if out is not None:
                self._last_fit = out
                return Params(dual_coef=out[0], intercept=out[1], X_fit=self.X, y_fit=self.y,
                              extra={"gamma": self.gamma})
        a = np.zeros(self.n)
        b = 0.0
        idx = np.flatnonzero(v > 0)
        if idx.size and np.unique(self.y[idx]).size == 2:
            K = self._kernel_rows(idx)
            support, dual, b = libsvm_fit(K, self.y[idx], v[idx], self.C, "precomputed", 0.0, self.model.tol)
            sv = idx[support]
            a[sv] = dual * self.y[sv]
            a = np.clip(a, 0.0, self.C * v)
        elif idx.size:  # one class only: the constant classifier of that class
            b = float(np.sign(self.y[idx][0]))
        return Params(dual_coef=a, intercept=b, X_fit=self.X, y_fit=self.y, extra={"gamma": self.gamma})

    def _kernel_rows(self, idx: NDArray[np.intp]) -> Array:
        """``K[idx, idx]`` for libsvm, kept for the next call: during ACS the samples with
        ``v > 0`` seldom change, and the copy reads ``|idx|^2`` kernel entries, the same order
        as the fit itself."""
        if idx.size == self.n:
            return self.K
        last = self._K_sub
        if last is not None and np.array_equal(last[0], idx):
            return last[1]
        sub = self.K[np.ix_(idx, idx)]
        self._K_sub = (idx, sub)
        return sub

    def acs_affine_state(self, params: Params, lam: float) -> tuple[Array, Array] | None:
        """The hinge margins ``g`` are affine in ``(a, b)``; with an SP whose ``v*`` is affine in
        the loss on each piece (linear, hard), so are the box ``u = C v*`` of the next fit and,
        for fixed free / upper-bound sets, its solution (:func:`~spl_bench.gaga.svm.acs_skip.svm_state`)."""
        return svm_state(self.dual_solver, self._last_fit, params.dual_coef, self.C, self.sp, lam)

    def acs_jump_to(self, x: Array, q: Array) -> Params:
        a, b, g = svm_jump(self.dual_solver, x, q, self.C)
        self._last_fit = (a, b, g)  # the margins, extrapolated like everything else
        return Params(dual_coef=a, intercept=b, X_fit=self.X, y_fit=self.y, extra={"gamma": self.gamma})

    def losses(self, params: Params) -> Array:
        last = self._last_fit
        if last is not None and params.dual_coef is last[0] and params.intercept == last[1]:
            return self.model.datafit.of_margin(last[2])  # the margins the fit computed
        return self.model.datafit.of_margin(1.0 - self._Qa(params.dual_coef) - self.y * params.intercept)

    def objective(self, params: Params, lam: float) -> float:
        ell = self.losses(params)
        a = params.dual_coef
        w = None if self.G is None else self.G.T @ a  # the primal w: a^T Q a = |w|^2
        reg = 0.5 * float(a @ self.Q @ a if w is None else w @ w)
        return float(reg + self.sp.sp_objective(self.sp.v_star(ell, lam), ell, lam).sum())

    def consistent(self, lam: float, tol: float = 1e-9) -> NDArray[np.intp]:
        h = self.events(self.theta(), lam)
        return np.flatnonzero(h < -tol * self.event_scale(lam))


def svm_kkt(model: SVMModel, sp: SPRegularizer, params: Params, X: Array, y: Array, lam: float) -> float:
    """Natural-residual KKT violation of the v*-weighted SVM dual.

    With ``v = v*(ell(f), lam)`` and ``g = 1 - y f(x)``, the box-constrained dual
    ``min 1/2 a^T Q a - 1^T a`` s.t. ``0 <= a <= C v``, ``y^T a = 0`` is solved iff
    ``a = clip(a + C g, 0, C v)`` (box and margin conditions together) and
    ``y^T a = 0``.  Returned relative to ``C``: ``max(|a/C - clip(a/C + g, 0, v)|,
    |y^T a| / C)``.  Unlike a test on ``a`` being exactly at a bound, this measure
    is continuous in ``a``.
    """
    C = model.C
    g = 1.0 - y * model.decision_function(params, X)
    v = sp.v_star(C * np.maximum(g, 0.0), lam)
    a = params.dual_coef / C
    nat = np.abs(a - np.clip(a + g, 0.0, v))
    return float(max(nat.max(initial=0.0), abs(float(params.dual_coef @ y)) / C))
