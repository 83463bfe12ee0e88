"""The SVM's KKT factors: the margin block of the kernel SVM's path and of its weighted dual.

Built on the general ``Factor`` and LU helpers of :mod:`spl_bench.gaga.core.factors`:
:func:`kkt_matrix`, the bordered updates :class:`KKTUpdate` / :class:`MergedKKT`
(:func:`kkt_factor`), and the low-rank (linear kernel) factor :class:`LowRankSVMFactor` with its
margin QR (:class:`MarginQR`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray
from scipy.linalg.lapack import dgetrs, dtrtrs

from spl_bench.gaga.core.factors import Factor, _lu, _lu_sign
from spl_bench.gaga.core.gather import take_block

Array = NDArray[np.float64]


def kkt_matrix(Q: Array, y: Array, z: NDArray[np.intp], s: float, Qzz: Array | None = None,
               shift: Array | None = None) -> Array:
    """``[[s (Q[z, z] + diag(shift)), s y_z], [y_z^T, 0]]``: the margin block of the SVM
    (``s = -1``, the path's ``J``), the matrix of the weighted dual's equality system (``s = 1``)
    and, with ``shift`` (``1 / c`` on the mixed samples, 0 on the margin), the symmetric form of
    the path's whole ``J`` (:meth:`spl_bench.gaga.svm.svm_system.SVMSystem.factor`).  ``Qzz``: the
    block ``Q[z, z]`` if the caller has it."""
    k = z.size
    M = np.empty((k + 1, k + 1))
    # take_block: Q[np.ix_(z, z)]'s values and layout, without fancy indexing's cost (1.3 ms a call
    # at |z| ~ 300 of pendigits' 2,098 rows, a seventh of the ACS cell's profile)
    if Qzz is None:
        zi = np.asarray(z, dtype=np.intp)
        Qzz = take_block(Q, zi, zi)
    M[:k, :k] = Qzz
    if shift is not None:
        M[np.arange(k), np.arange(k)] += shift
    M[:k, k] = y[z]
    if s != 1.0:
        M[:k] *= s
    M[k, :k] = y[z]
    M[k, k] = 0.0
    return M


class _KKTSystem:
    """``kkt_matrix(Q, y, z, s)`` given by its parts; the matrix itself is built on first use."""

    def __init__(self, Q: Array, y: Array, z: NDArray[np.intp], s: float, shift: Array | None = None) -> None:
        self.Q, self.y, self.z, self.s, self.shift = Q, y, z, s, shift
        self._J: Array | None = None

    @property
    def n(self) -> int:
        return int(self.z.size + 1)

    @property
    def J(self) -> Array:
        if self._J is None:
            self._J = kkt_matrix(self.Q, self.y, self.z, self.s, shift=self.shift)
        return self._J


class KKTBorder:
    """The bordering of :class:`KKTUpdate`: positions of the kept, added and dropped indices and of
    the kept ones whose shift changed (``dpos0`` in ``z0``, by ``delta``), and ``V``, ``W``, ``D``."""

    def __init__(self, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array, s: float,
                 shift: Array | None, pos: tuple, V: Array, W: Array, D: Array) -> None:
        self.z0, self.z, self.Q, self.y, self.s, self.shift = z0, z, Q, y, s, shift
        self.kpos, self.kpos0, self.apos, self.rpos, self.dpos0, self.delta = pos
        self.V, self.W, self.D = V, W, D
        self.q = int(W.shape[0])

    @classmethod
    def make(cls, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array, s: float,
             shift0: Array | None, shift: Array | None, max_changes: int) -> KKTBorder | None:
        """``None`` when the sets differ in more than ``max_changes`` indices (or shifts)."""
        in0 = np.isin(z, z0, assume_unique=True)
        keep0 = np.isin(z0, z, assume_unique=True)
        apos, kpos = np.flatnonzero(~in0), np.flatnonzero(in0)
        rpos = np.flatnonzero(~keep0)
        order0 = np.argsort(z0, kind="stable")
        kpos0 = order0[np.searchsorted(z0, z[kpos], sorter=order0)]  # z0[kpos0] == z[kpos], any order
        dpos0 = np.zeros(0, dtype=np.intp)
        delta = np.zeros(0)
        if shift is not None or shift0 is not None:
            h = np.zeros(z.size) if shift is None else shift
            h0 = np.zeros(z0.size) if shift0 is None else shift0
            delta = h[kpos] - h0[kpos0]
            changed = np.flatnonzero(delta != 0.0)
            dpos0, delta = kpos0[changed], delta[changed]
        na, nr, nd = apos.size, rpos.size, dpos0.size
        q = na + nr + nd
        if q > max_changes:
            return None
        n0 = z0.size + 1
        ad = z[apos]
        V = np.zeros((n0, q))
        V[:-1, :na] = s * Q[np.ix_(z0, ad)]
        V[-1, :na] = y[ad]
        V[rpos, na + np.arange(nr)] = 1.0
        V[dpos0, na + nr + np.arange(nd)] = s * delta
        W = np.zeros((q, n0))
        W[:na, :-1] = s * Q[np.ix_(ad, z0)]
        W[:na, -1] = s * y[ad]
        W[na + np.arange(nr), rpos] = 1.0
        W[na + nr + np.arange(nd), dpos0] = -1.0
        D = np.zeros((q, q))
        D[:na, :na] = s * Q[np.ix_(ad, ad)]
        if shift is not None:
            D[np.arange(na), np.arange(na)] += s * shift[apos]
        D[na + nr + np.arange(nd), na + nr + np.arange(nd)] = 1.0
        return cls(z0, z, Q, y, s, shift, (kpos, kpos0, apos, rpos, dpos0, delta), V, W, D)


class KKTUpdate(_KKTSystem):
    r""":class:`Factor`'s interface for ``kkt_matrix(Q, y, z, s, shift=h)`` from a factorisation of
    the matrix of another index set ``z0`` and shift ``h0`` (bordering, as in active-set QP
    solvers).

    With ``R = z0 \ z`` dropped, ``Ad = z \ z0`` added and ``Dl`` the kept indices whose shift
    changed (by ``delta``), the system of ``z`` is that of ``z0`` bordered by the rows and columns
    of ``Ad``, by unit rows and columns that pin the unknowns of ``R`` to 0 (their equations then
    hold with a free multiplier) and by a copy ``u = x[Dl]`` of the changed unknowns::

        [M0   V] [x0]   [r0]        V = [M[z0+b, Ad] | e_R | s e_Dl diag(delta)],
        [W    D] [ w] = [rq],       W = [M[Ad, z0+b]; e_R^T; -e_Dl^T],
                                    D = blockdiag(M[Ad, Ad], 0, I),

    solved with the Schur complement ``S = D - W M0^{-1} V`` (order ``|Ad| + |R| + |Dl|``): one
    solve with ``M0``'s factors per right-hand side, ``|Ad| + |R| + |Dl|`` solves once.  An index
    set changes by one or two indices per set change of the SVM, where a new LU costs the
    cube of ``|z|``.  ``det M = (-1)^{|R|} det M0 det S`` (the copies add a unit block).
    ``None`` from :meth:`make` when ``z0``'s factor is singular, the sets differ in more than
    ``max_changes`` indices or a pivot of ``S`` is at most ``pivot_tol`` of the largest.
    """

    max_changes = 24

    def __init__(self, root: Any, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array,
                 s: float, parts: tuple, shift: Array | None = None) -> None:
        super().__init__(Q, y, z, s, shift)
        self.root, self.z0 = root, z0
        (self.kpos, self.kpos0, self.apos, self.rpos, self.MiV, self.W, self.S_lu) = parts
        self.sign = root.sign * _lu_sign(self.S_lu) * (-1.0 if self.rpos.size % 2 else 1.0)
        self.merged = None

    @classmethod
    def make(cls, root: Any, z0: NDArray[np.intp], z: NDArray[np.intp], Q: Array, y: Array,
             s: float, shift0: Array | None = None, shift: Array | None = None,
             max_changes: int | None = None, pivot_tol: float = 1e-13) -> KKTUpdate | None:
        """``root``: a factor of the matrix of ``z0`` (shift ``shift0``) with ``solve`` (vector or
        matrix), ``sign`` and ``singular``."""
        if root.singular:
            return None
        b = KKTBorder.make(z0, z, Q, y, s, shift0, shift,
                           cls.max_changes if max_changes is None else max_changes)
        if b is None:
            return None
        return cls.finish(root, b, root.solve(b.V) if b.q else np.zeros((z0.size + 1, 0)), b.D, pivot_tol)

    @classmethod
    def finish(cls, root: Any, b: KKTBorder, MiV: Array, D: Array, pivot_tol: float = 1e-13,
               shift: Array | None = None) -> KKTUpdate | None:
        """The update from its border ``b`` and ``MiV = M0^{-1} V`` (and ``D``, the border's or a
        rescaled one, with ``shift`` the new matrix's shift if not the border's); ``None`` when a
        pivot of ``S`` is at most ``pivot_tol`` of the largest."""
        S = D - b.W @ MiV
        S_lu = _lu(S, pivot_tol) if S.size else (np.zeros((0, 0)), np.zeros(0, dtype=np.int32))
        if S_lu is None or not np.isfinite(MiV).all():
            return None
        return cls(root, b.z0, b.z, b.Q, b.y, b.s, (b.kpos, b.kpos0, b.apos, b.rpos, MiV, b.W, S_lu),
                   b.shift if shift is None else shift)

    @property
    def singular(self) -> bool:
        return False

    @property
    def least_squares(self) -> bool:
        return False

    def solve(self, rhs: Array) -> Array:
        n0, q = self.z0.size + 1, self.W.shape[0]
        tail = rhs.shape[1:]
        r0 = np.zeros((n0, *tail))
        r0[self.kpos0] = rhs[self.kpos]
        r0[-1] = rhs[-1]
        y0 = self.root.solve(r0)
        rq = np.zeros((q, *tail))
        rq[:self.apos.size] = rhs[self.apos]
        w = rq - self.W @ y0
        if q:
            w, info = dgetrs(self.S_lu[0], self.S_lu[1], w)
            if info != 0:  # pragma: no cover - LAPACK argument error
                return Factor(self.J).solve(rhs)
        x0 = y0 - self.MiV @ w
        out = np.empty(rhs.shape)
        out[self.kpos] = x0[self.kpos0]
        out[self.apos] = w[:self.apos.size]
        out[-1] = x0[-1]
        if not np.isfinite(out).all():
            return Factor(self.J).solve(rhs)
        return out


class MergedKKT(_KKTSystem):
    """:class:`Factor`'s interface for ``kkt_matrix(Q, y, z, s)`` when ``z`` holds duplicated
    samples (equal rows and columns of ``Q``), from a factor of the matrix of their
    representatives: each group's unknowns get an equal share of the group's value, the
    minimum-norm solution, as :class:`Factor`'s merged branch gives."""

    def __init__(self, inner: Factor | KKTUpdate, group: NDArray[np.intp], Q: Array, y: Array,
                 z: NDArray[np.intp], s: float) -> None:
        super().__init__(Q, y, z, s)
        self.inner = inner
        self.group = np.append(group, inner.n - 1)  # the row of b is its own group
        self.size = np.bincount(self.group, minlength=inner.n).astype(float)
        self.sign = inner.sign

    @property
    def singular(self) -> bool:
        return self.inner.n < self.n or self.inner.singular

    @property
    def least_squares(self) -> bool:
        return self.inner.least_squares

    @property
    def merged(self) -> tuple[NDArray[np.intp], Array] | None:
        """The groups, if the system is singular only through them (the representatives' matrix
        is not: else its least-squares fallback decides, and ``None``)."""
        return (self.group, self.size) if self.inner.n < self.n and not self.inner.singular else None

    @property
    def updated(self) -> bool:
        """Whether the representatives' factor is an update (:class:`KKTUpdate`)."""
        return isinstance(self.inner, KKTUpdate)

    def solve(self, rhs: Array) -> Array:
        wsize = self.size if rhs.ndim == 1 else self.size[:, None]
        summed = np.zeros((self.inner.n, *rhs.shape[1:]))
        np.add.at(summed, self.group, rhs)
        u = self.inner.solve(summed / wsize)
        return u[self.group] / wsize[self.group]


def kkt_factor(Q: Array, y: Array, z: NDArray[np.intp], s: float, canon: NDArray[np.intp] | None,
               root: tuple[NDArray[np.intp], Factor] | None, Qzz: Array | None = None,
               ) -> tuple[Factor | KKTUpdate | MergedKKT, tuple[NDArray[np.intp], Factor] | None]:
    """A factor of ``kkt_matrix(Q, y, z, s)`` (``z`` increasing) and the root for the next call.

    ``canon`` maps each sample to the representative of its group of duplicated samples
    (``None``: no duplicates): the matrix of the representatives is factorised
    (:class:`MergedKKT`), by a :class:`KKTUpdate` of ``root`` (the latest LU, an index set and
    its factor) when the sets are close, else by a new LU, which becomes the root.  ``Qzz``
    (``Q[z, z]``, if the caller has it) saves the gather of the matrix.
    """
    reps = z if canon is None else canon[z]
    zr = np.unique(reps)
    same = np.array_equal(zr, z)
    inner: Factor | KKTUpdate | None = None
    if root is not None:
        inner = KKTUpdate.make(root[1], root[0], zr, Q, y, s)
    if inner is None:
        inner = Factor(kkt_matrix(Q, y, zr, s, Qzz if same else None))
        if inner.lu is not None:
            root = (zr, inner)
    out: Factor | KKTUpdate | MergedKKT = inner if same else MergedKKT(inner, np.searchsorted(zr, reps), Q, y, z, s)
    if Qzz is not None and not isinstance(out, Factor):
        out._J = kkt_matrix(Q, y, z, s, Qzz)
    return out, root


def _full_rank_r(R: Array) -> bool:
    """A QR factor's triangle ``R`` is finite and no diagonal entry is at most ``1e-10`` of the
    largest (its columns independent to working precision)."""
    dg = np.abs(np.diag(R))
    return bool(np.isfinite(R).all() and dg.min() > 1e-10 * dg.max())


def _lowrank_ed(Gm: Array, ym: Array, c: Array, v: Array) -> Array:
    """``E D v`` of :class:`LowRankSVMFactor` for ``v = (x_b, w)`` (a vector or a matrix of
    columns): ``t = G_M w + y_M x_b``, then ``(-(c y_M)^T t, -(w + G_M^T (c t)))``."""
    t = Gm @ v[1:] + np.multiply.outer(ym, v[0])
    ct = (c if v.ndim == 1 else c[:, None]) * t
    out = np.empty(v.shape)
    out[0] = -(ym @ ct)
    out[1:] = -(v[1:] + Gm.T @ ct)
    return out


class MarginQR:
    """The full QR factorisation ``P^T = Q R`` of the margin columns ``(y_i, G_i)``, ``i`` in
    ``idx`` (in that order), of :class:`LowRankSVMFactor`, updated as samples join and leave.

    A set a few samples away from this one is reached by column deletions and insertions
    (:func:`scipy.linalg.qr_delete` / :func:`scipy.linalg.qr_insert`, ``O((d + 1)^2)`` each)
    instead of a new factorisation (``O((d + 1)^2 |Z|)``); after :data:`MAX_UPDATES` updates
    the factorisation is made afresh.  ``R`` is kept in full (``d + 1`` rows) as the update
    routines take it.
    """

    #: most samples joining or leaving in one update
    MAX_CHANGES = 8
    #: updates before a new factorisation (the drift of many Givens rotations)
    MAX_UPDATES = 64

    def __init__(self, idx: NDArray[np.intp], Q: Array, R: Array, updates: int) -> None:
        self.idx, self.Q, self.R, self.updates = idx, Q, R, updates

    @classmethod
    def make(cls, idx: NDArray[np.intp], Gz: Array, yz: Array) -> MarginQR | None:
        """A new factorisation of the rows ``Gz`` (samples ``idx``), or ``None`` if there are more
        of them than ``d + 1`` or they are linearly dependent (:meth:`ok`)."""
        nz, d = Gz.shape
        k = d + 1
        if nz > k:
            return None
        if nz == 0:
            return cls(idx, np.eye(k), np.zeros((k, 0)), 0)
        Pt = np.empty((k, nz))
        Pt[0] = yz
        Pt[1:] = Gz.T
        Q, R = sla.qr(Pt, mode="full", check_finite=False)
        out = cls(idx, Q, R, 0)
        return out if out.ok() else None

    def ok(self) -> bool:
        """Finite, and full rank (:func:`_full_rank_r`)."""
        return self.idx.size == 0 or _full_rank_r(self.R[: self.idx.size])

    def moved_to(self, idx: NDArray[np.intp], G: Array, y: Array) -> MarginQR | None:
        """The factorisation of the samples ``idx`` (rows of ``G``, labels ``y``, columns in the
        order of ``idx``): updated from this one, or made afresh when the sets differ by more
        than :data:`MAX_CHANGES` samples, after :data:`MAX_UPDATES` updates, or when the kept
        samples are in another order; ``None`` where :meth:`make` gives ``None``."""
        k = G.shape[1] + 1
        kept = np.isin(self.idx, idx)
        added = np.flatnonzero(~np.isin(idx, self.idx))
        nchg = int(np.count_nonzero(~kept)) + added.size
        if (nchg > self.MAX_CHANGES or self.updates + nchg > self.MAX_UPDATES or idx.size > k
                or not kept.any() or not np.array_equal(self.idx[kept], np.delete(idx, added))):
            return MarginQR.make(idx, G[idx], y[idx])
        Q, R = self.Q, self.R
        for pos in np.flatnonzero(~kept)[::-1]:
            Q, R = sla.qr_delete(Q, R, int(pos), 1, which="col", check_finite=False)
        for j in added:  # every sample before position j of idx is in place already
            col = np.concatenate([[y[idx[j]]], G[idx[j]]])
            Q, R = sla.qr_insert(Q, R, col, int(j), which="col", check_finite=False)
        out = MarginQR(idx.copy(), Q, R, self.updates + nchg)
        return out if out.ok() else MarginQR.make(idx, G[idx], y[idx])

    def factors(self) -> tuple[Array, Array]:
        """``(Q, R_1)``: ``Q`` square and the ``|Z|``-square triangle of ``R``."""
        return self.Q, np.ascontiguousarray(self.R[: self.idx.size])


class LowRankSVMFactor:
    """:class:`Factor`'s interface for the SVM path Jacobian with a linear kernel.

    With ``Q = G G^T`` (``G = y * X``, ``d`` columns) the Jacobian of GAGA eq. (5) on the
    unknowns ``(a_Z, a_M, b)`` (rows in the same order; :meth:`SVMSystem.jacobians`) is::

        Z rows:  -G_Z G_F^T a_F - y_Z b
        M rows:  diag(c) (G_M G_F^T a_F + y_M b) + a_M
        b row:   y_Z^T a_Z + y_M^T a_M

    (``F = Z, M``).  With ``w = G_F^T x_F`` as an extra unknown and ``x_M`` eliminated
    through its identity block, ``J x = r`` becomes the system ``S`` of order
    ``|Z| + 1 + d`` on ``(x_Z, v)``, ``v = (x_b, w)``::

        [ 0          -P ] [x_Z]   [ r_Z                       ]
        [ E P^T       D ] [ v ] = [ (r_b - y_M^T r_M, G_M^T r_M) ]

    with ``P = [y_Z, G_Z]``, ``E = diag(1, -I_d)`` and ``D v = (-(c y_M)^T t, w + G_M^T (c t))``,
    ``t = G_M w + y_M x_b``; then ``x_M = r_M - c t``.  Both eliminations are Schur
    complements of identity blocks of the augmented system (unknowns permuted alike on rows
    and columns), so ``det J = det S``.

    ``S`` is solved through a full QR of ``P^T = [Q_1 Q_2] [R; 0]`` (``|Z| <= d + 1``; it depends
    on the margin set only, so the caller may keep it while M and ``c`` change): with
    ``v = Q_1 alpha + Q_2 beta`` the Z rows give ``alpha = -R^{-T} r_Z``, the other rows projected
    on ``Q_2`` give ``X beta = Q_2^T E (r_v - D Q_1 alpha)`` with ``X = Q_2^T E D Q_2`` of order
    ``d + 1 - |Z|``, and projected on ``Q_1`` give ``x_Z = R^{-1} Q_1^T E (r_v - D v)``.  In the
    basis ``(I, Q)`` the matrix ``diag(1, E) S`` is ``[[0, -R^T, 0], [R, X_11, X_12], [0, X_21, X]]``,
    so ``det S = (-1)^d det(R)^2 det X``: the sign the engine's fold test reads is
    ``(-1)^d sign det X``.  Cost per point ``O(|M| d (d + 1 - |Z|))`` and the small LU, plus the
    QR per margin set, instead of the ``O(|M|^3)`` of a dense LU of ``J`` (``|M|`` grows with
    the number of samples and the age, ``d`` is fixed).
    :meth:`make` gives ``None`` when ``P`` or ``X`` is singular to working precision
    (duplicated samples on the margin, for instance): the caller's dense route then merges or
    takes least squares.  With more than ``d + 1`` margin samples :meth:`make_singular` gives
    the minimum-norm least-squares solution.
    """

    groups = None

    def __init__(self, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array,
                 zqr: tuple[Array, Array] | None, xlu: tuple[Array, NDArray[np.int32]] | None,
                 qr: tuple[Array, Array] | None = None) -> None:
        self.Gz, self.Gm, self.yz, self.ym, self.c = Gz, Gm, yz, ym, c
        self.zqr, self.xlu, self.qr = zqr, xlu, qr
        self.nz, self.nm = Gz.shape[0], Gm.shape[0]
        self.n = self.nz + self.nm + 1
        d = Gz.shape[1]
        if qr is not None:
            self.sign = 0.0
        else:
            self.sign = (-1.0) ** d * (_lu_sign(xlu) if xlu is not None else 1.0)

    @property
    def singular(self) -> bool:
        return self.qr is not None

    @property
    def least_squares(self) -> bool:
        """Singular ``J`` (more than ``d + 1`` samples on the margin): minimum-norm least squares."""
        return self.qr is not None

    @classmethod
    def make_singular(cls, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array) -> LowRankSVMFactor | None:
        """The factor of a ``J`` made singular by more than ``d + 1`` margin samples whose
        ``P = [G_Z, y_Z]`` has full column rank (``None`` otherwise).

        The Z rows of ``J x = r`` read ``P (w, x_b) = -r_Z``; whatever ``(w, x_b)`` is, the
        M rows give ``x_M = r_M - c (G_M w + y_M x_b)`` and ``P^T x_Z = (w - G_M^T x_M,
        r_b - y_M^T x_M)`` (the definition of ``w`` and the b row) has solutions.  So the
        least-squares solutions of ``J`` are those with ``(w, x_b)`` the least-squares
        solution of the Z rows (unique), and the one of minimum norm has
        ``x_Z = P (P^T P)^{-1} (w - G_M^T x_M, r_b - y_M^T x_M)``: the answer of LAPACK
        ``gelsy`` on ``J`` (:meth:`Factor.solve`) from one thin QR of ``P``, ``O(|J| d^2)``
        instead of ``O(|J|^3)``.
        """
        P = np.column_stack([Gz, yz])
        if P.shape[0] < P.shape[1]:
            return None
        q, r = np.linalg.qr(P)
        if not _full_rank_r(r):
            return None
        return cls(Gz, Gm, yz, ym, c, None, None, (q, r))

    @classmethod
    def make(cls, Gz: Array, Gm: Array, yz: Array, ym: Array, c: Array,
             zqr: tuple[Array, Array] | None = None) -> LowRankSVMFactor | None:
        """The factor for ``|Z| <= d + 1`` margin samples, or ``None`` if ``S`` is singular to
        working precision; ``zqr`` is :meth:`MarginQR.factors` of ``(Gz, yz)`` if the caller has it."""
        if zqr is None:
            m = MarginQR.make(np.arange(Gz.shape[0]), Gz, yz)
            if m is None:
                return None
            zqr = m.factors()
        nz = Gz.shape[0]
        xlu = None
        if nz < Gz.shape[1] + 1:
            Q2 = zqr[0][:, nz:]
            xlu = _lu(Q2.T @ _lowrank_ed(Gm, ym, c, Q2))
            if xlu is None:
                return None
        return cls(Gz, Gm, yz, ym, c, zqr, xlu)

    def matvec(self, x: Array) -> Array:
        """``J x`` from the factors (``x`` a vector or a matrix of columns)."""
        nz, nm = self.nz, self.nm
        xz, xm, xb = x[:nz], x[nz:nz + nm], x[nz + nm]
        u = self.Gz.T @ xz + self.Gm.T @ xm
        cm = self.c if x.ndim == 1 else self.c[:, None]
        out = np.empty(x.shape)
        out[:nz] = -(self.Gz @ u) - np.multiply.outer(self.yz, xb)
        out[nz:nz + nm] = cm * (self.Gm @ u + np.multiply.outer(self.ym, xb)) + xm
        out[nz + nm] = self.yz @ xz + self.ym @ xm
        return out

    def _solve(self, r: Array) -> Array:
        if self.qr is not None:
            return self._solve_singular(r)
        assert self.zqr is not None
        Q, R = self.zqr
        nz, nm = self.nz, self.nm
        rm = r[nz:nz + nm]
        # E r_v, r_v = (r_b - y_M^T r_M, G_M^T r_M)
        er = np.concatenate([(r[nz + nm] - self.ym @ rm)[None], -(self.Gm.T @ rm)])
        Q1, Q2 = Q[:, :nz], Q[:, nz:]
        if nz:
            alpha, info = dtrtrs(R, r[:nz], trans=1)
            if info != 0:
                return np.zeros(r.shape)
            v = -(Q1 @ alpha)
        else:
            v = np.zeros(er.shape)
        if Q2.shape[1]:
            assert self.xlu is not None
            beta, info = dgetrs(self.xlu[0], self.xlu[1], Q2.T @ (er - _lowrank_ed(self.Gm, self.ym, self.c, v)))
            if info != 0:
                return np.zeros(r.shape)
            v = v + Q2 @ beta
        out = np.empty(r.shape)
        if nz:
            xz, info = dtrtrs(R, Q1.T @ (er - _lowrank_ed(self.Gm, self.ym, self.c, v)))
            if info != 0:
                return np.zeros(r.shape)
            out[:nz] = xz
        xb, w = v[0], v[1:]
        cm = self.c if r.ndim == 1 else self.c[:, None]
        out[nz:nz + nm] = rm - cm * (self.Gm @ w + np.multiply.outer(self.ym, xb))
        out[nz + nm] = xb
        return out

    def _solve_singular(self, r: Array) -> Array:
        """Minimum-norm least-squares solution (:meth:`make_singular`)."""
        assert self.qr is not None
        q, rr = self.qr
        nz, nm, d = self.nz, self.nm, self.Gz.shape[1]
        rm, rb = r[nz:nz + nm], r[nz + nm]
        om = -sla.solve_triangular(rr, q.T @ r[:nz], check_finite=False)
        w, xb = om[:d], om[d]
        cm = self.c if r.ndim == 1 else self.c[:, None]
        xm = rm - cm * (self.Gm @ w + np.multiply.outer(self.ym, xb))
        s = np.concatenate([w - self.Gm.T @ xm, (rb - self.ym @ xm)[None]])
        out = np.empty(r.shape)
        out[:nz] = q @ sla.solve_triangular(rr, s, trans="T", check_finite=False)
        out[nz:nz + nm] = xm
        out[nz + nm] = xb
        return out

    def solve(self, rhs: Array) -> Array:
        """``J^{-1} rhs`` by the small system, with one step of iterative refinement on the
        residual of ``J`` when it exceeds ``1e-12`` of the right-hand side (as
        :meth:`SchurFactor.solve`)."""
        x = self._solve(rhs)
        if self.qr is not None:  # least squares: J x = rhs need not hold
            return x
        e = rhs - self.matvec(x)
        if float(np.abs(e).max(initial=0.0)) > 1e-12 * float(np.abs(rhs).max(initial=0.0)):
            x = x + self._solve(e)
        return x


class MergedLowRankSVMFactor:
    """:class:`LowRankSVMFactor` of ``J`` with duplicated samples on the margin (equal rows and
    columns of ``J``, so ``J`` is singular): the factor of the system on one representative per
    group, the rows' right-hand sides averaged over each group and each group's unknown split
    equally, as :class:`Factor` does with its merged LU (the same solution and sign)."""

    singular = True
    least_squares = False
    groups = None

    def __init__(self, inner: LowRankSVMFactor, group: NDArray[np.intp], size: Array) -> None:
        self.inner, self.group, self.size = inner, group, size
        self.sign = inner.sign
        self.nz = group.size
        self.n = self.nz + inner.nm + 1

    def solve(self, rhs: Array) -> Array:
        g, nz = self.size.size, self.nz
        if rhs.ndim == 1:
            avg = np.bincount(self.group, weights=rhs[:nz], minlength=g) / self.size
            wsize = self.size[self.group]
        else:
            avg = np.zeros((g, *rhs.shape[1:]))
            np.add.at(avg, self.group, rhs[:nz])
            avg /= self.size[:, None]
            wsize = self.size[self.group][:, None]
        x = self.inner.solve(np.concatenate([avg, rhs[nz:]]))
        out = np.empty(rhs.shape)
        out[:nz] = x[:g][self.group] / wsize
        out[nz:] = x[g:]
        return out
