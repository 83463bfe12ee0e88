"""Solves with ``J = diag(r, 0) + Phi^T diag(D) Phi`` in the dimension of the samples (Woodbury).

The Jacobian of a GLM path with a smooth penalty (GAGA eq. (5) differentiated, the L2 logistic
regression of Tables 5-6) has this form: ``Phi = [X, Q]`` are the live rows of the design
(``X`` the ``p`` penalised columns, ``r > 0`` their ``R''``; ``Q`` the ``q`` unpenalised ones,
the intercept's column of ones), ``D`` the per-sample curvatures (negative for mixed samples of
the mixture SP).  With fewer live samples ``m`` than unknowns ``k = p + q``, ``J`` has rank
``m + q`` above ``diag(r)``, and ``J x = b`` reduces to a system of order ``m + q``: with
``u = diag(D) Phi x`` and ``K = X diag(r)^{-1} X^T``,

    [ I + diag(D) K   -diag(D) Q ] [ u   ]   [ diag(D) X diag(r)^{-1} b_P ]
    [ Q^T              0         ] [ x_Q ] = [ b_Q                        ],
    x_P = diag(r)^{-1} (b_P - X^T u)

(rows ``P`` of ``J x = b`` are ``r x_P + X^T u = b_P``, rows ``Q`` are ``Q^T u = b_Q``; the
definition of ``u`` gives the first block row).  Eliminating ``x_P`` from the bordered matrix
``[[R, 0, X^T D], [0, 0, Q^T D], [-X, -Q, I]]``, whose determinant is ``det J``, shows
``det J = det diag(r) det N``: ``J`` and the reduced matrix ``N`` have the same sign of the
determinant (the fold test) and are singular together.

An LU of ``N`` costs ``2 (m + q)^3 / 3`` flops against ``J``'s ``m k^2`` to form and ``2 k^3 / 3`` to
factorise: the wide data (``m < k``, the hiva_agnostic subsample of ``bench_families``) gain
the cube of the ratio.  ``K`` is the Gram matrix of the live rows, kept by the caller while the
sets do not change.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dpotrf, dpotrs

from spl_bench.gaga.core.factors import Factor

Array = NDArray[np.float64]


class WoodburyFactor:
    """``J = diag(r, 0) + Phi^T diag(D) Phi`` solved through the ``(m + q)``-order matrix ``N`` (module
    docstring), with the interface of :class:`~spl_bench.gaga.core.factors.Factor`.

    Parameters
    ----------
    X : (m, p) array
        The live rows of the penalised columns.
    r : (p,) array
        ``R''`` on them, all positive.
    D : (m,) array
        The per-sample curvature (any sign).
    K : (m, m) array
        ``X diag(r)^{-1} X^T``.
    n_free : int
        ``q``, the unpenalised columns after the ``p`` penalised ones: 0, or 1 for an intercept
        (its column of ones).
    form : callable, optional
        ``() -> J`` formed densely, for :attr:`J` (the positive-definiteness test of
        ``GLMSystem.stable``; never needed by a solve).

    With ``D >= 0`` the solves take a symmetric positive definite form of ``N`` instead
    (:meth:`_symmetric`).  ``singular`` is ``N``'s, and then ``J`` is singular too: the caller
    factorises ``J`` itself, whose least-squares fallback gives the minimum-norm solution.
    """

    least_squares = False
    groups = None

    def __init__(self, X: Array, r: Array, D: Array, K: Array, n_free: int = 0,
                 form: Callable[[], Array] | None = None) -> None:
        if n_free not in (0, 1):
            raise ValueError(f"n_free must be 0 or 1 (an intercept), not {n_free}")
        self.X, self.r, self.D, self.q = X, r, D, n_free
        self._form = form
        self._J: Array | None = None
        m = D.shape[0]
        # (S's Cholesky factor, S^-1 c, c^T S^-1 c) on the symmetric route, below
        self._chol: tuple[Array, Array, float] | None = None
        if m and D.min() >= 0.0:
            self._chol = self._symmetric(K)
        if self._chol is not None:
            self.sign, self.singular = 1.0, False
            return
        N = np.empty((m + n_free, m + n_free))
        np.multiply(D[:, None], K, out=N[:m, :m])
        N[np.diag_indices(m)] += 1.0
        if n_free:
            N[:m, m] = -D  # -diag(D) Q with Q = 1
            N[m, :m] = 1.0  # Q^T
            N[m, m] = 0.0
        self._N = Factor(N)
        self.sign = self._N.sign
        self.singular = self._N.singular

    def _symmetric(self, K: Array) -> tuple[Array, Array, float] | None:
        """With ``D >= 0`` (a convex fit's Hessian; a path point with no mixed sample), ``u = s * t``,
        ``s = sqrt(D)``, turns ``N`` into ``[[S, -c], [-c^T, 0]]`` with ``S = I + diag(s) K diag(s)``
        positive definite and ``c = s`` (the intercept), solved by Cholesky of ``S`` (half an LU's
        flops) and the scalar Schur complement ``c^T S^-1 c``.  ``J`` is then positive semidefinite,
        so non-singular means ``det J > 0``.  ``None`` if ``S`` or the complement is not usable."""
        s = np.sqrt(self.D)
        S = s[:, None] * K * s[None, :]
        S[np.diag_indices(s.size)] += 1.0
        c, info = dpotrf(S, lower=False, overwrite_a=True, clean=False)
        if info != 0 or not np.isfinite(c).all():
            return None
        if not self.q:
            return c, s, 0.0
        Sc, _ = dpotrs(c, s, lower=False)
        sigma = float(s @ Sc)  # c^T S^-1 c = 0 iff D = 0: no curvature along the intercept
        if not sigma > 1e-13 * float(s @ s):
            return None
        return c, Sc, sigma

    @property
    def n(self) -> int:
        """Order of ``J`` (``p + q``)."""
        return int(self.r.shape[0]) + self.q

    @property
    def positive_definite(self) -> bool:
        """``J`` is positive definite, as the symmetric route shows (``D >= 0`` makes ``J`` positive
        semidefinite, and it is non-singular); ``False`` means not known."""
        return self._chol is not None

    @property
    def J(self) -> Array:
        """``J`` formed densely (by the caller's ``form``), once."""
        if self._J is None:
            if self._form is None:
                raise AttributeError("this WoodburyFactor was made without a way to form J")
            self._J = self._form()
        return self._J

    def solve(self, rhs: Array) -> Array:
        """``J^{-1} rhs`` (a vector, or a matrix of right-hand sides) through ``N``."""
        p, m = self.r.shape[0], self.D.shape[0]
        bP, bQ = rhs[:p], rhs[p:]
        scaled = bP / self.r if rhs.ndim == 1 else bP / self.r[:, None]
        top = self.X @ scaled
        if self._chol is not None:
            return self._solve_symmetric(bP, bQ, top)
        top *= self.D if rhs.ndim == 1 else self.D[:, None]
        sol = self._N.solve(np.concatenate([top, bQ]) if self.q else top)
        u = sol[:m]
        xP = bP - self.X.T @ u
        xP /= self.r if rhs.ndim == 1 else self.r[:, None]
        return np.concatenate([xP, sol[m:]]) if self.q else xP

    def _solve_symmetric(self, bP: Array, bQ: Array, t: Array) -> Array:
        """The symmetric route (:meth:`_symmetric`) from ``t = X diag(r)^-1 b_P``: ``S w = s t + c x_Q``,
        ``c^T w = b_Q``, ``u = s w``."""
        c, Sc, sigma = self._chol
        s = np.sqrt(self.D)
        vec = bP.ndim == 1
        st = s * t if vec else s[:, None] * t
        w, info = dpotrs(c, st, lower=False)
        if info != 0:  # pragma: no cover - potrs fails only on bad arguments
            raise np.linalg.LinAlgError(f"potrs info {info}")
        if self.q:
            xQ = (bQ - s @ w) / sigma  # (c = s)
            w = w + (np.outer(Sc, xQ) if not vec else Sc * xQ[0])
        u = s * w if vec else s[:, None] * w
        xP = bP - self.X.T @ u
        xP /= self.r if vec else self.r[:, None]
        return np.concatenate([xP, xQ]) if self.q else xP
