"""Penalties ``R(w)`` of the linear models, with what a solver or a path engine needs of them.

==========  ==========================  =========  ===================  ===========================
penalty      ``R(w)``                     intercept  support ``A``         on ``A``: ``R'``, ``R''``
==========  ==========================  =========  ===================  ===========================
L1           ``n alpha ||w||_1``          no         ``w_j != 0``          ``lev sign(w_A)``, ``0``
L2           ``||w||^2 / 2``              yes (free) every coordinate      ``w``, ``I``
==========  ==========================  =========  ===================  ===========================

(``lev = n alpha`` is the L1 level for ``n`` training rows.)  With ``g = X^T (v ell')``
the gradient of the weighted data term, the optimality conditions are
``g_A + R'(w_A) = 0`` on the support and, for a coordinate outside it (only a
*sparse* penalty has such coordinates), ``|g_j| <= lev``; :meth:`Penalty.subdiff_distance`
measures how far each coordinate is from them.  A sparse penalty gives a path
engine two events per coordinate: an active coefficient reaching 0
(:meth:`Penalty.active_slack`) and an inactive coordinate's subgradient reaching
``+-1`` (:meth:`Penalty.inactive_slack`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.errors import check_positive
from spl_bench.models.base import Described

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]


class Penalty(Described):
    """A convex penalty ``R(w)`` (see the module docstring)."""

    name: str = "base"
    #: the model has an unpenalised intercept ``b``
    has_intercept: bool = False
    #: coordinates can sit at 0 with a non-zero data gradient (feature events on a path)
    sparse: bool = False
    #: identical columns of ``X`` can be merged (their summed coefficient split equally over the
    #: group) without changing the optimum: true for L1 without intercept, whatever the datafit
    merges_duplicate_columns: bool = False

    def value(self, w: Array, n: int) -> float | Array:
        """``R(w)`` for ``n`` training rows (one value per row if ``w`` is 2-D)."""
        raise NotImplementedError

    def support(self, w: Array) -> Mask:
        """The generalized support: coordinates where ``R`` is differentiable in ``w``."""
        return np.ones(np.shape(w), dtype=bool)

    def grad(self, w_A: Array, sign_A: Array, n: int) -> Array:
        """``R'`` on the support (``sign_A``: the tracked signs of a sparse penalty)."""
        raise NotImplementedError

    def hess_diag(self, w_A: Array, n: int) -> Array:
        """Diagonal of ``R''`` on the support (the penalties here are separable)."""
        raise NotImplementedError

    def subdiff_distance(self, w: Array, g: Array, n: int) -> Array:
        """Per-coordinate violation of ``0 in g_j + dR_j(w_j)`` (absolute, same units as ``g``)."""
        raise NotImplementedError

    def kkt_scale(self, w: Array, n: int) -> float:
        """Scale of ``g`` for relative KKT measures."""
        return 1.0 + float(np.abs(w).max(initial=0.0))

    # --------------------------------------------------- sparse penalties only
    def active_slack(self, w_A: Array, sign_A: Array) -> Array:
        """Event of an active coordinate (``>= 0`` while it keeps its sign): ``sign * w``."""
        return sign_A * w_A

    def inactive_slack(self, g: Array, n: int) -> Array:
        """Event of an inactive coordinate (``>= 0`` while 0 stays optimal for it)."""
        return np.full(np.shape(g), np.inf)

    @staticmethod
    def entering_sign(g: float) -> float:
        """Sign a coordinate takes when it enters the support with data gradient ``g``."""
        return 1.0 if g < 0 else -1.0


class L1(Penalty):
    """``R(w) = n alpha ||w||_1``, no intercept (the lasso's penalty)."""

    name = "l1"
    has_intercept = False
    sparse = True
    merges_duplicate_columns = True

    def __init__(self, alpha: float) -> None:
        self.alpha = check_positive("L1 alpha", alpha)

    def get_params(self) -> dict[str, float]:
        return {"alpha": self.alpha}

    def level(self, n: int) -> float:
        """``lev = n alpha``, the L1 weight of the objective."""
        return n * self.alpha

    def value(self, w: Array, n: int) -> float | Array:
        w = np.asarray(w, dtype=float)
        if w.ndim == 1:
            return float(self.level(n) * np.abs(w).sum())
        return self.level(n) * np.abs(w).sum(axis=-1)

    def support(self, w: Array) -> Mask:
        return np.asarray(w) != 0.0

    def grad(self, w_A: Array, sign_A: Array, n: int) -> Array:
        return self.level(n) * sign_A

    def hess_diag(self, w_A: Array, n: int) -> Array:
        return np.zeros(np.shape(w_A))

    def subdiff_distance(self, w: Array, g: Array, n: int) -> Array:
        lev = self.level(n)
        return np.where(w != 0, np.abs(g + lev * np.sign(w)), np.maximum(np.abs(g) - lev, 0.0))

    def kkt_scale(self, w: Array, n: int) -> float:
        return self.level(n)

    def inactive_slack(self, g: Array, n: int) -> Array:
        return 1.0 - np.abs(g) / self.level(n)


class L2(Penalty):
    """``R(w) = ||w||^2 / 2`` with an unpenalised intercept (logistic regression's penalty)."""

    name = "l2"
    has_intercept = True

    def value(self, w: Array, n: int) -> float | Array:
        w = np.asarray(w, dtype=float)
        if w.ndim == 1:
            return float(0.5 * w @ w)
        return 0.5 * np.einsum("...j,...j->...", w, w)

    def grad(self, w_A: Array, sign_A: Array, n: int) -> Array:
        return w_A

    def hess_diag(self, w_A: Array, n: int) -> Array:
        return np.ones(np.shape(w_A))

    def subdiff_distance(self, w: Array, g: Array, n: int) -> Array:
        return np.abs(g + w)
