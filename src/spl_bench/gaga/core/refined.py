"""Solves with a Jacobian without factorising it: iterations on the factor of a nearby one.

:class:`RefinedFactor` (the GLM systems' ``J_theta`` from products with the data) refines on a
:class:`CholeskyFactor` by preconditioned conjugate gradients (:func:`pcg`) or on a general
:class:`~spl_bench.gaga.core.factors.Factor` by preconditioned Richardson iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.blas import dsymv, ssymv
from scipy.linalg.lapack import dpotrf, dpotri, dpotrs

from spl_bench.gaga.core.factors import Factor

Array = NDArray[np.float64]


class CholeskyFactor:
    """Cholesky factorisation of a symmetric positive definite ``J`` (LAPACK ``potrf``), with the
    interface of :class:`~spl_bench.gaga.core.factors.Factor` (``sign`` +1, never singular).
    :meth:`attempt` gives ``None`` when ``J`` is not positive definite."""

    singular = False
    least_squares = False
    groups = None
    sign = 1.0

    #: preconditioner applications after which the explicit inverse is formed (``potri``: about
    #: the cost of the factorisation; a ``symv`` then does the work of the two triangular solves,
    #: ``k^2`` multiply-adds, in one pass without their sequential dependence)
    INVERSE_AFTER = 20
    #: keep the explicit inverse in single precision (``ssymv``): the product reads half the bytes
    #: of the double one (at k = 1,617, 10 MB instead of 21: most of its time).  A preconditioner's
    #: rounding changes how fast conjugate gradients converge, not what they converge to: their
    #: residuals are products with ``J`` in double precision, accepted at the same tolerance
    single_inverse = True

    def __init__(self, J: Array, c: Array) -> None:
        self.J, self._c = J, c
        self._uses = 0
        self._inv: Array | None = None

    @classmethod
    def attempt(cls, J: Array) -> CholeskyFactor | None:
        c, info = dpotrf(J, lower=False, clean=False)
        if info != 0 or not np.isfinite(c).all():
            return None
        dg = np.abs(np.diag(c))
        if dg.size and not dg.min() > 1e-8 * dg.max():  # condition number above ~1e16
            return None
        return cls(J, c)

    @property
    def n(self) -> int:
        return int(self.J.shape[0])

    def solve(self, rhs: Array) -> Array:
        x, info = dpotrs(self._c, rhs, lower=False)
        if info != 0:  # pragma: no cover - potrs fails only on bad arguments
            raise np.linalg.LinAlgError(f"potrs info {info}")
        return x

    def precondition(self, r: Array) -> Array:
        """``J^{-1} r`` as a preconditioner (:func:`pcg`): by the explicit inverse once this factor
        has been applied ``INVERSE_AFTER`` times (not backward stable, which a preconditioner
        need not be; :meth:`solve` stays the triangular solves)."""
        self._uses += 1
        if self._inv is None and self._uses >= self.INVERSE_AFTER and r.ndim == 1:
            inv, info = dpotri(self._c, lower=False)  # (the upper triangle, which symv reads)
            if info == 0 and np.isfinite(inv).all():
                self._inv = np.asfortranarray(inv, dtype=np.float32 if self.single_inverse else np.float64)
        if self._inv is not None and r.ndim == 1:
            if self._inv.dtype == np.float64:
                return dsymv(1.0, self._inv, r)
            # J^{-1} r = s J^{-1} (r / s), s = max|r|: r / s is within float32's range whatever r's size
            s = float(np.abs(r).max(initial=0.0))
            if not (s > 0 and np.isfinite(s)):
                return self.solve(r)
            return ssymv(1.0, self._inv, (r / s).astype(np.float32)).astype(np.float64) * s
        return self.solve(r)


class RefinedFactor:
    """Solves with ``J`` (one right-hand side at a time) by iterations on the factor of a nearby
    ``J_ref``, with ``J x`` from ``matvec`` (a product with the data, ``O(n k)``) instead of forming
    ``J`` (``O(n k^2)``) and factorising it (``O(k^3)``).

    ``J_ref`` positive definite (a :class:`CholeskyFactor`): conjugate gradients preconditioned by
    it (:func:`pcg`).  They are accepted when the residual reaches ``tol`` with every curvature
    ``p^T J p`` positive; ``J`` is then taken to be positive definite too (``sign`` +1: a negative
    eigenvalue of ``J``, generic right-hand sides, would either show up as a non-positive
    curvature or keep the residual from converging).

    Otherwise preconditioned Richardson: ``x_0 = J_ref^{-1} b``, ``x_{k+1} = x_k + J_ref^{-1} (b - J x_k)``.
    The error contracts by ``I - M``, ``M = J_ref^{-1} J``.  A solve is accepted if the residual
    reached ``tol`` within ``max_iter`` iterations, each reducing it by ``rate`` or better:
    then the spectral radius of ``I - M`` is taken to be below one, so every eigenvalue of ``M``
    has a positive real part, the segment ``J_ref ((1 - t) I + t M)`` is non-singular for ``t``
    in [0, 1], and symmetric ``J`` has the inertia of ``J_ref``: the same sign of ``det J``.

    Either way a path that approaches a fold (``J`` singular) is refused, and the caller
    factorises ``J`` afresh.  The tolerance is relative to ``max(|rhs|, max|J_ref| |x|)``,
    the scale of an LU solve's backward error, or for conjugate gradients to ``bound(x)``, the
    size of the terms summed in ``J x``, if larger: the products cannot measure a smaller residual
    (cancelling terms, as with the negative weights of the mixture SP).  A failed :meth:`solve` after an accepted
    :meth:`refine` (another right-hand side) falls back to ``full()``, the factor of ``J``
    itself, and keeps it.  ``jscale``: ``max |J_ref|`` if known.
    """

    singular = False
    least_squares = False
    groups = None

    def __init__(self, matvec: Callable[[Array], Array], ref: Factor | CholeskyFactor, full: Callable[[], Any],
                 jscale: float | None = None, tol: float = 1e-13, max_iter: int = 10, rate: float = 0.5,
                 bound: Callable[[Array], float] | None = None) -> None:
        self.matvec = matvec
        self.ref = ref
        self.full = full
        self.tol, self.max_iter, self.rate = tol, max_iter, rate
        self.sign = ref.sign
        self.iterations = 0  # products with J of the latest solve
        self._jscale = jscale
        self.bound = bound
        self._fallback: Any = None
        self._memo: tuple[Array, Array] | None = None

    @property
    def n(self) -> int:
        return self.ref.n

    def _tol_scale(self, rhs: Array, x: Array) -> float:
        """``max(|rhs|, max |J_ref| max |x|)``, what residuals are measured against."""
        if self._jscale is None:
            self._jscale = float(np.abs(self.ref.J).max(initial=0.0))
        return max(float(np.abs(rhs).max(initial=0.0)), self._jscale * float(np.abs(x).max(initial=0.0)))

    def refine(self, rhs: Array) -> tuple[Array, bool]:
        """``(x, accepted)``: the solution of ``J x = rhs`` and whether it was accepted (see the class)."""
        if isinstance(self.ref, CholeskyFactor):
            # the first iterate by the preconditioner (its explicit inverse once formed: a third
            # of the triangular solves' time at k ~ 1,600), refined to the tolerance below
            x0 = self.ref.precondition(rhs) if self.ref.single_inverse else self.ref.solve(rhs)
            count = [0]

            def mv(u: Array) -> Array:
                count[0] += 1
                return self.matvec(u)

            x = pcg(mv, rhs, self.ref, tol=self.tol, max_iter=self.max_iter, scale=self._tol_scale(rhs, x0),
                    floor=self.bound, x0=x0)
            self.iterations = count[0]
            if x is None:
                return x0, False
            self._memo = (rhs.copy(), x)
            return x, True
        x = self.ref.solve(rhs)
        if not np.abs(rhs).max(initial=0.0) > 0:
            return x, True
        scale = self._tol_scale(rhs, x)
        prev = np.inf
        for it in range(self.max_iter + 1):
            r = rhs - self.matvec(x)
            res = float(np.abs(r).max()) / scale
            if not np.isfinite(res):
                break
            self.iterations = it
            if res <= self.tol:
                self._memo = (rhs.copy(), x)
                return x, True
            if res > self.rate * prev:
                break
            prev = res
            x = x + self.ref.solve(r)
        return x, False

    def solve(self, rhs: Array) -> Array:
        if self._fallback is not None:
            return self._fallback.solve(rhs)
        if self._memo is not None and np.array_equal(self._memo[0], rhs):
            return self._memo[1].copy()
        x, ok = self.refine(rhs)
        if ok:
            return x
        self._fallback = self.full()
        return self._fallback.solve(rhs)


def pcg(matvec: Callable[[Array], Array], rhs: Array, precond: Any, tol: float = 1e-13,
        max_iter: int = 200, scale: float | None = None,
        floor: Callable[[Array], float] | None = None, x0: Array | None = None) -> Array | None:
    """Conjugate gradients for ``J x = rhs`` with ``J`` symmetric positive definite, preconditioned
    by the factor of a nearby SPD matrix (anything with ``solve``).

    Converged when the residual is at most ``tol`` times ``scale`` (default ``max |rhs|``) or,
    if larger, ``floor(x_0)``: the size of the terms summed in ``matvec(x)`` at the first iterate,
    below which the products cannot measure a residual.  ``None`` if the residual stops
    decreasing (three iterations without a 10 % reduction) or ``max_iter`` iterations pass
    before that, or if a direction of non-positive curvature shows up (``J`` not positive
    definite).  ``x0``: the first iterate if already computed (default ``precond`` applied to ``rhs``).
    """
    apply = getattr(precond, "precondition", precond.solve)
    x = apply(rhs) if x0 is None else x0
    if not np.abs(rhs).max(initial=0.0) > 0:
        return x
    if scale is None:
        scale = float(np.abs(rhs).max())
    if floor is not None:
        scale = max(scale, floor(x))
    r = rhs - matvec(x)
    z = apply(r)
    p = z.copy()
    rz = float(r @ z)
    best, flat = np.inf, 0
    for _ in range(max_iter):
        res = float(np.abs(r).max())
        if res <= tol * scale:
            return x
        flat = flat + 1 if res > 0.9 * best else 0
        best = min(best, res)
        if flat >= 3:
            return None
        Jp = matvec(p)
        curv = float(p @ Jp)
        if not curv > 0 or not np.isfinite(curv):
            return None
        alpha = rz / curv
        x = x + alpha * p
        r = r - alpha * Jp
        z = apply(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    # the recursive residual drifts from the true one: accept only on the true residual
    return x if float(np.abs(rhs - matvec(x)).max()) <= tol * scale else None
