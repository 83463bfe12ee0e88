"""User-facing errors.

Anything raised as :class:`SplBenchError` is a problem with the user's input or
environment (an unknown dataset, a missing file, a bad parameter).  The CLI
prints its message and exits with status 2 instead of showing a traceback.
"""

from __future__ import annotations


class SplBenchError(Exception):
    """An error whose message is meant for the user, not a bug report."""


class ConfigError(SplBenchError, ValueError):
    """A parameter or name given by the user is not valid."""


class DataError(SplBenchError, ValueError):
    """The data cannot be loaded or used as asked."""


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as float, or raise :class:`ConfigError` if it is not > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a positive number, got {value!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise ConfigError(f"{name} must be a positive finite number, got {value!r}")
    return v


def unknown_name(kind: str, name: str, valid: list[str]) -> ConfigError:
    """Build the error for an unknown ``kind`` name, listing the valid ones."""
    return ConfigError(f"unknown {kind} {name!r}; valid {kind}s: {', '.join(sorted(valid))}")
