"""Learning models: one module per model, found by name through :data:`REGISTRY`."""

from __future__ import annotations

from typing import Any

from spl_bench._registry import Registry, import_submodules
from spl_bench.models.base import Model, Params

REGISTRY: Registry[Model] = Registry("model")


def get_model(name: str | Model, **params: Any) -> Model:
    """Create the model called ``name`` (``lasso``, ``logistic``, ``svm``, ``huber``)."""
    return REGISTRY.create(name, **params)


import_submodules(__name__, __path__)

__all__ = ["REGISTRY", "Model", "Params", "get_model"]
