"""Factors of Jacobians with structure: block systems solved through a Schur complement
(:class:`SchurBlocks`, :class:`SchurFactor`; the complement reduced to tridiagonal form,
:class:`Tridiagonal` / :class:`ShiftedTridiagonal`, when one value scales all its rows) and
row-scaled systems (:class:`RowScaled`).  All have the interface of
:class:`~spl_bench.gaga.core.factors.AnyFactor`; the dense blocks are factorised by
:class:`~spl_bench.gaga.core.factors.Factor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dgttrf, dgttrs, dorgqr, dsytrd, dsytrd_lwork

from spl_bench.gaga.core.factors import AnyFactor, Factor

Array = NDArray[np.float64]


#: SchurBlocks.complement: the point of a set configuration at which W is reduced to tridiagonal.
#: The second: the reduction costs about four LUs (``sytrd`` and ``orgqr`` about ``4 m^3 / 3`` flops
#: each, an LU ``2 m^3 / 3``) and an RK45 segment asks its configuration for many points (six
#: stages a step, the projections), while a configuration asked for a single point keeps its one LU
UNIFORM_REDUCE_AT = 2


def uniform_value(c: Array) -> float | None:
    """The one value of ``c`` (to ``1e-14`` of ``max |c|``: the linear SP-regularizer gives every
    mixed sample the same ``C^2 dv*/dell``), or ``None``."""
    if c.size == 0:
        return None
    return float(c[0]) if float(np.ptp(c)) <= 1e-14 * float(np.abs(c).max()) else None


class SchurBlocks:
    """The parts of a block system that stay fixed while the index sets do.

    ``J`` (rows and columns in the same order) has, for index arrays ``i1`` / ``i2``
    and a vector ``c`` that changes from point to point::

        J[i1, i1] = A,   J[i1, i2] = B,   J[i2, i1] = diag(c) C0,   J[i2, i2] = I + diag(c) D0

    so its Schur complement ``S = I + diag(c) W`` with ``W = D0 - C0 A^{-1} B`` needs
    only ``A``'s factorisation (kept) and one small LU per point.  ``A`` is factorised
    by :class:`Factor` (duplicated rows and columns merged: the minimum-norm solves);
    a :class:`Factor` of ``A`` made before can be passed instead of ``A``.
    """

    def __init__(self, A: Array | AnyFactor, B: Array, C0: Array, D0: Array, i1: NDArray[np.intp],
                 i2: NDArray[np.intp], hint: tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None = None) -> None:
        self.A = Factor(A, hint=hint) if isinstance(A, np.ndarray) else A
        self.i1, self.i2 = i1, i2
        self.B, self.C0, self.D0 = B, C0, D0
        self.AiB = self.A.solve(B) if B.shape[1] else np.zeros((self.A.n, 0))
        self.W = D0 - C0 @ self.AiB
        self.n = i1.size + i2.size
        self._n_uniform = 0
        self._tri: Tridiagonal | None | bool = None  # W = Q T Q^T, once asked for; False: not symmetric

    def complement(self, c: Array) -> Factor | ShiftedTridiagonal:
        """A factor of the Schur complement ``S = I + diag(c) W``.

        When ``c`` is one value for every index (the linear SP-regularizer: ``dv/dl = -1/lam``
        for every mixed sample) and ``W`` is symmetric (the SVM's is), ``S = Q (I + c T) Q^T``
        with ``W = Q T Q^T`` tridiagonal, reduced once per set configuration at its
        ``UNIFORM_REDUCE_AT``-th such point (``sytrd`` and ``orgqr`` cost about four LUs; an RK45
        segment asks for many points, a predictor-corrector one for a few): each point is then a
        tridiagonal LU and two products with ``Q``.  Else one LU per point.
        """
        if c.size >= 3 and self._tri is not False and uniform_value(c) is not None:
            self._n_uniform += 1
            if self._tri is None and self._n_uniform >= UNIFORM_REDUCE_AT:
                self._tri = Tridiagonal.make(self.W) or False
            if isinstance(self._tri, Tridiagonal):
                f = ShiftedTridiagonal(self._tri, float(c[0]))
                if not f.singular:
                    return f
        return Factor(np.eye(c.size) + c[:, None] * self.W)

    def uniform_rhs(self, r1: Array, u2: Array) -> tuple[Array, Array]:
        """The parts of right-hand sides ``(r1, c u2)`` that no point's ``c`` changes, for
        :meth:`uniform_solve`: ``y1 = A^{-1} r1`` and ``P = Q^T (u2 - C0 y1)`` (``W = Q T Q^T``;
        reduced blocks only)."""
        assert isinstance(self._tri, Tridiagonal)
        y1 = self.A.solve(r1)
        return y1, self._tri.Q.T @ (u2 - self.C0 @ y1)

    def uniform_solve(self, parts: tuple[Array, Array], S: ShiftedTridiagonal, c: float) -> Array:
        """``J^{-1} [r1; c u2]`` (rows and columns ``i1`` / ``i2``) at one ``c`` for every index, from
        :meth:`uniform_rhs`: ``x2 = Q (I + c T)^{-1} c P`` and ``x1 = y1 - A^{-1} B x2``; no
        refinement (the caller checks its own residual)."""
        y1, P = parts
        x2 = S.Q @ S.solve_reduced(c * P)
        out = np.empty((self.n, *P.shape[1:]))
        out[self.i1] = y1 - self.AiB @ x2
        out[self.i2] = x2
        return out

    @property
    def reduced(self) -> bool:
        """Whether ``W`` has been reduced to tridiagonal form (its points then cost ``O(|M|^2)``)."""
        return isinstance(self._tri, Tridiagonal)

    @property
    def usable(self) -> bool:
        """``A`` non-singular, or singular only through duplicated rows / columns."""
        return not self.A.singular or self.A.merged is not None


class SchurFactor:
    """:class:`Factor`'s interface for a system given as :class:`SchurBlocks` and ``c``.

    ``det J = det A det S`` (``i1`` / ``i2`` permute rows and columns alike).
    """

    def __init__(self, blocks: SchurBlocks, c: Array, refine: bool = True) -> None:
        self.b = blocks
        self.c = c
        self.refine = refine
        self.S = blocks.complement(c)
        self.sign = blocks.A.sign * self.S.sign
        self.n = blocks.n

    @property
    def singular(self) -> bool:
        return self.b.A.singular or self.S.singular

    @property
    def least_squares(self) -> bool:
        return self.b.A.least_squares or self.S.least_squares

    def _solve(self, r1: Array, r2: Array) -> tuple[Array, Array]:
        b = self.b
        c = self.c if r2.ndim == 1 else self.c[:, None]
        y1 = b.A.solve(r1)
        x2 = self.S.solve(r2 - c * (b.C0 @ y1))
        return y1 - b.AiB @ x2, x2

    def solve(self, rhs: Array) -> Array:
        """Block elimination, then one step of iterative refinement on the residual of
        ``J`` (the Schur complement loses a little accuracy when ``A`` is ill-conditioned),
        taken only if that residual exceeds ``1e-12`` of the right-hand side (a residual that
        small is already at the Newton tolerance that decides the path's accuracy;
        ``refine=False``: none, for a caller that refines on its own system).  ``rhs``: a vector
        or a matrix of right-hand sides."""
        b = self.b
        r1, r2 = rhs[b.i1], rhs[b.i2]
        x1, x2 = self._solve(r1, r2)
        if self.refine:
            c = self.c if rhs.ndim == 1 else self.c[:, None]
            e1 = r1 - b.A.J @ x1 - b.B @ x2
            e2 = r2 - x2 - c * (b.C0 @ x1 + b.D0 @ x2)
            big = 1e-12 * float(np.abs(rhs).max(initial=0.0))
            if float(np.abs(e1).max(initial=0.0)) > big or float(np.abs(e2).max(initial=0.0)) > big:
                d1, d2 = self._solve(e1, e2)
                x1, x2 = x1 + d1, x2 + d2
        out = np.empty(rhs.shape)
        out[b.i1] = x1
        out[b.i2] = x2
        return out


class RowScaled:
    """:class:`Factor`'s interface for ``diag(d) M`` given a factor of ``M`` (``d`` without zeros).

    ``matvec`` (``x -> diag(d) M x``, optional): one step of iterative refinement on its
    residual when that exceeds ``1e-12`` of the right-hand side (as :meth:`SchurFactor.solve`).
    """

    merged = None

    def __init__(self, inner: Any, d: Array, matvec: Callable[[Array], Array] | None = None) -> None:
        self.inner, self.d, self.matvec = inner, d, matvec
        self.sign = float(inner.sign) * float(np.prod(np.sign(d)))

    @property
    def n(self) -> int:
        return int(self.d.size)

    @property
    def singular(self) -> bool:
        return bool(self.inner.singular)

    @property
    def least_squares(self) -> bool:
        return bool(self.inner.least_squares)

    def _solve(self, rhs: Array) -> Array:
        return self.inner.solve(rhs / (self.d if rhs.ndim == 1 else self.d[:, None]))

    def solve(self, rhs: Array) -> Array:
        x = self._solve(rhs)
        if self.matvec is not None:
            e = rhs - self.matvec(x)
            if float(np.abs(e).max(initial=0.0)) > 1e-12 * float(np.abs(rhs).max(initial=0.0)):
                x = x + self._solve(e)
        return x


class Tridiagonal:
    """``W = Q T Q^T`` for a symmetric ``W``: ``T`` tridiagonal (diagonal ``d``, off-diagonal ``e``),
    ``Q`` orthogonal (LAPACK ``sytrd``, ``Q`` formed by ``orgqr`` from its reflectors)."""

    def __init__(self, d: Array, e: Array, Q: Array) -> None:
        self.d, self.e, self.Q = d, e, Q

    @classmethod
    def make(cls, W: Array) -> Tridiagonal | None:
        """The reduction, or ``None`` if ``W`` is not symmetric to ``1e-10`` of ``max |W|`` or
        LAPACK fails."""
        m = W.shape[0]
        scale = float(np.abs(W).max(initial=0.0))
        if m < 3 or not np.isfinite(scale) or float(np.abs(W - W.T).max()) > 1e-10 * max(scale, 1e-300):
            return None
        lwork = int(dsytrd_lwork(m, lower=1)[0])
        red, d, e, tau, info = dsytrd(0.5 * (W + W.T), lower=1, lwork=max(lwork, 1))
        if info != 0:
            return None
        # reflectors below the subdiagonal: those of a QR of red[1:, :m-1] (Q = diag(1, Q1)),
        # formed by orgqr, which knows it starts from the identity and skips its zero blocks
        # (ormqr applied to the identity does not)
        Q = np.eye(m)
        Q1, _, info = dorgqr(red[1:, : m - 1], tau[: m - 1], lwork=max(64 * m, 1))
        if info != 0 or not np.isfinite(Q1).all():
            return None
        Q[1:, 1:] = Q1
        return cls(d, e, Q)


class ShiftedTridiagonal:
    """:class:`Factor`'s interface for ``I + c W`` with ``W = Q T Q^T`` (:class:`Tridiagonal`) and
    ``c`` a scalar: a tridiagonal LU of ``I + c T`` (LAPACK ``gttrf``); ``det`` has its sign,
    solves are ``Q (I + c T)^{-1} Q^T r``.  ``singular`` when a pivot falls below ``1e-13`` of the
    largest (the caller then takes a dense LU with the least-squares fallback)."""

    least_squares = False
    merged = None

    def __init__(self, tri: Tridiagonal, c: float) -> None:
        self.Q = tri.Q
        off = c * tri.e
        self.lu = dgttrf(off, 1.0 + c * tri.d, off)
        dl, du_diag, du, du2, ipiv, info = self.lu
        ad = np.abs(du_diag)
        self.singular = bool(info != 0 or not np.isfinite(du_diag).all() or ad.min() <= 1e-13 * ad.max())
        swaps = int(np.count_nonzero(ipiv != np.arange(1, ipiv.size + 1)))
        self.sign = 0.0 if self.singular else float(np.prod(np.sign(du_diag))) * (-1.0 if swaps % 2 else 1.0)

    @property
    def n(self) -> int:
        return int(self.Q.shape[0])

    def solve(self, rhs: Array) -> Array:
        return self.Q @ self.solve_reduced(self.Q.T @ rhs)

    def solve_reduced(self, t: Array) -> Array:
        """``(I + c T)^{-1} t`` (a vector or a matrix)."""
        if t.ndim == 2 and t.shape[1] == 0:  # LAPACK dgttrs corrupts the heap with no columns
            return np.zeros(t.shape)
        dl, d, du, du2, ipiv, _ = self.lu
        x, info = dgttrs(dl, d, du, du2, ipiv, t if t.ndim == 2 else t[:, None])
        return x if t.ndim == 2 else x[:, 0]
