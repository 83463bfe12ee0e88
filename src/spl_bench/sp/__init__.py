"""SP-regularizers: one module per regularizer, found by name through :data:`REGISTRY`.

>>> from spl_bench.sp import get_sp
>>> get_sp("mixture", gamma=0.5).v_star([0.01, 0.1, 1.0], lam=1.0)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from spl_bench._registry import Registry, import_submodules
from spl_bench.sp.base import EASY, HARD, MIXED, SET_NAMES, SPRegularizer

REGISTRY: Registry[SPRegularizer] = Registry("SP-regularizer")


def get_sp(name: str | SPRegularizer, **params: Any) -> SPRegularizer:
    """Create the SP-regularizer called ``name`` (``hard``, ``linear``, ``mixture``, ...)."""
    return REGISTRY.create(name, **params)


import_submodules(__name__, __path__)

__all__ = ["EASY", "HARD", "MIXED", "REGISTRY", "SET_NAMES", "SPRegularizer", "get_sp"]
