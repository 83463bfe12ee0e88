"""The bookkeeping of the outlier-path homotopy: point states and the path's variables.

Every point carries a *state* (Suzumura et al., ICML 2014, section 4.2 and appendix C, eq. 15):

====  ======================================  =======================
R     inlier, margin ``m_i > 1``                ``a_i = 0``
E     inlier, ``m_i = 1``                       ``0 <= a_i <= C``
L     inlier, ``s < m_i < 1``                   ``a_i = C``
IB    inlier on the boundary ``m_i = s``        ``a_i >= C``      (I')
OB    outlier on the boundary ``m_i = s``       ``a_i <= C theta`` (O')
OO    outlier, ``m_i < s``                      ``a_i = C theta`` (O'')
F     forced during a D-step (the swapped set)  ``a_i`` moved linearly
====  ======================================  =======================

The *active* points (E, IB, OB) solve the linear system (11) / appendix C (see
:mod:`.linalg`); all other coefficients are fixed by their state (:meth:`PathState.set_fixed_alpha`).
:class:`PathState` is the one object that the homotopy's collaborators share: the active
system (:class:`~spl_bench.methods.outlier_path.linalg.ActiveSystem`), the event search
(:mod:`.events`), the tracer (:class:`~spl_bench.methods.outlier_path.engine.Engine`) and the
D-step (:mod:`.dstep`) all read and write it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

R, E, L, IB, OB, OO, F = range(7)
STATE_NAMES = ("R", "E", "L", "IB", "OB", "OO", "F")
#: the states whose coefficients solve the active system (11)
ACTIVE = (E, IB, OB)


class PathState:
    """The variables of one homotopy: ``(alpha, b)``, the margins, every point's state, the parameters.

    ``theta`` and ``s`` are the loss parameters of eq. (2); ``C`` the regularization parameter of
    eq. (1) (moving with rate ``dC`` on the C-path of ``svm_path``).  During a D-step (appendix C)
    the swapped points (state F) have ``a_i = bef_i + tau (target_i - bef_i)``.
    """

    def __init__(self, y: Array, C: float, theta: float, s: float, tol: float = 1e-9) -> None:
        self.y = y
        self.n = len(y)
        self.C = float(C)
        self.theta = float(theta)
        self.s = float(s)
        self.tol = tol
        self.alpha = np.zeros(self.n)
        self.b = 0.0
        self.m = np.zeros(self.n)
        self.st = np.full(self.n, R, dtype=np.int8)
        self.inl = np.ones(self.n, dtype=bool)
        # forced coefficients of a D-step: a_i = bef_i + tau (target_i - bef_i)
        self.bef = np.zeros(self.n)
        self.target = np.zeros(self.n)
        self.tau = 0.0
        self.swapped = np.zeros(0, dtype=np.intp)  # the points swapped by the last D-step
        self.n_events = 0
        self.n_bmoves = 0
        self.n_null_moves = 0
        #: rate of the upper bound C per unit step (the C-path of ``svm_path``)
        self.dC = 0.0
        self.last = -1  # the point of the last event, not allowed to switch back at a zero step

    def active(self) -> NDArray[np.intp]:
        """The active points (E, IB, OB): the unknowns of the active system (11)."""
        return np.flatnonzero(np.isin(self.st, ACTIVE))

    def boundary(self) -> NDArray[np.intp]:
        """The points on the boundary ``m_i = s`` (IB, OB): the candidates of a D-step."""
        return np.flatnonzero((self.st == IB) | (self.st == OB))

    def targets(self, A: NDArray[np.intp]) -> Array:
        """The margins that the active points keep: 1 on E (eq. 10b), ``s`` on IB / OB (eq. 15)."""
        return np.where(self.st[A] == E, 1.0, self.s)

    def set_fixed_alpha(self) -> None:
        """The fixed coefficients from their states (eq. 10a, 10c, 10d; F: appendix C)."""
        st, a = self.st, self.alpha
        a[st == R] = 0.0
        a[st == L] = self.C
        a[st == OO] = self.C * self.theta
        f = st == F
        if np.any(f):
            a[f] = self.bef[f] + self.tau * (self.target[f] - self.bef[f])

    def bounds(self, A: NDArray[np.intp]) -> tuple[Array, Array]:
        """The box of the active coefficients: E ``[0, C]``, IB ``[C, inf)``, OB ``(-inf, C theta]``."""
        st = self.st[A]
        lo = np.where(st == E, 0.0, np.where(st == IB, self.C, -np.inf))
        hi = np.where(st == E, self.C, np.where(st == IB, np.inf, self.C * self.theta))
        return lo, hi
