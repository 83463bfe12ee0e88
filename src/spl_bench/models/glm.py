"""Linear models made of a datafit and a penalty: ``sum_i v_i ell(x_i^T w + b, y_i) + R(w)``.

A :class:`GLMModel` subclass sets :attr:`GLMModel.datafit` and :attr:`GLMModel.penalty`
(:mod:`~spl_bench.models.datafits`, :mod:`~spl_bench.models.penalties`) and supplies its
weighted solver; the losses, the penalty value and the KKT check follow from the two.
The GAGA path engine builds its GLM system from the same two objects.
"""

from __future__ import annotations

from spl_bench.models.base import Array, Model, Params
from spl_bench.models.datafits import Datafit
from spl_bench.models.penalties import Penalty


class GLMModel(Model):
    """A model ``ell_i = datafit(x_i^T w (+ b), y_i)``, ``R = penalty(w)`` (intercept if the penalty has one)."""

    datafit: Datafit
    penalty: Penalty

    def decision_function(self, params: Params, X: Array) -> Array:
        z = X @ params.coef
        return z + params.intercept if self.penalty.has_intercept else z

    def losses(self, params: Params, X: Array, y: Array) -> Array:
        return self.datafit.value(self.decision_function(params, X), y)

    def regularizer(self, params: Params, n_samples: int) -> float:
        return float(self.penalty.value(params.coef, n_samples))

    def data_gradient(self, params: Params, X: Array, y: Array, v: Array) -> tuple[Array, float]:
        """Gradient of ``sum_i v_i ell_i`` with respect to ``(w, b)``."""
        s = v * self.datafit.d1(self.decision_function(params, X), y)
        return X.T @ s, float(s.sum())

    def kkt_violation(self, params: Params, X: Array, y: Array, v: Array) -> float:
        """Largest violation of ``0 in g + dR(w)`` (and ``g_b = 0`` with an intercept), relative
        to the penalty's scale (L1: ``n alpha``; L2: ``1 + ||w||_inf``)."""
        g, gb = self.data_gradient(params, X, y, v)
        n = len(y)
        viol = float(self.penalty.subdiff_distance(params.coef, g, n).max(initial=0.0))
        if self.penalty.has_intercept:
            viol = max(viol, abs(gb))
        return viol / self.penalty.kkt_scale(params.coef, n)
