"""A tiny name -> class registry, filled by decorators in each plug-in module.

A new SP-regularizer or model is one new module in its package that decorates
its class with ``@REGISTRY.register("name")``; the package ``__init__`` imports
every submodule, so nothing else in the tree has to be edited.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from spl_bench.errors import unknown_name

T = TypeVar("T")


class Registry(Generic[T]):
    """Map names to classes of one kind (``"SP-regularizer"``, ``"model"``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            if name in self._items and self._items[name] is not cls:
                raise RuntimeError(f"{self.kind} {name!r} registered twice")
            self._items[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return deco

    def names(self) -> list[str]:
        return sorted(self._items)

    def get(self, name: str) -> type[T]:
        try:
            return self._items[name]
        except KeyError:
            raise unknown_name(self.kind, name, self.names()) from None

    def create(self, name: str | Any, **params: Any) -> T:
        """Instantiate ``name`` with ``params``; an instance is passed through."""
        if not isinstance(name, str):
            return name
        return self.get(name)(**params)


def import_submodules(package_name: str, package_path: list[str]) -> None:
    """Import every module of a package so their ``register`` decorators run."""
    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
