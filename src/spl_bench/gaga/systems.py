"""The path system of a model x SP-regularizer pair (GAGA eq. (5)): :func:`make_system`.

The systems live in their own modules, imported from there: the interface and the SP weights in
:mod:`~spl_bench.gaga.core.system_base`, the GLM models in :mod:`~spl_bench.gaga.glm.glm_system`,
the kernel-SVM dual in :mod:`~spl_bench.gaga.svm.svm_system`.
"""

from __future__ import annotations

from spl_bench.errors import ConfigError
from spl_bench.gaga.core.system_base import Array, PathSystem
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.gaga.svm.svm_system import SVMSystem
from spl_bench.models import Model
from spl_bench.models.svm import SVMModel
from spl_bench.sp import SPRegularizer

__all__ = ["make_system"]


def make_system(model: Model, sp: SPRegularizer, X: Array, y: Array) -> PathSystem:
    """The system for ``model``: the kernel SVM's dual system, or the GLM system of any model
    made of a (piecewise) smooth datafit and a penalty (lasso, logistic, huber)."""
    if isinstance(model, SVMModel):
        return SVMSystem(model, sp, X, y)
    datafit = getattr(model, "datafit", None)
    if datafit is not None and datafit.smooth and getattr(model, "penalty", None) is not None:
        return GLMSystem(model, sp, X, y)
    raise ConfigError(
        f"GAGA supports the svm model and models with a smooth datafit and a penalty, not {model.name!r}"
    )
