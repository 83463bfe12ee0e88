"""User-facing errors.

Anything raised as :class:`SplBenchError` is a problem with the user's input or
environment (an unknown dataset, a missing file, a bad parameter).  The CLI
prints its message and exits with status 2 instead of showing a traceback.
"""

from __future__ import annotations

import errno
import os


class SplBenchError(Exception):
    """An error whose message is meant for the user, not a bug report."""


class ConfigError(SplBenchError, ValueError):
    """A parameter or name given by the user is not valid."""


class DataError(SplBenchError, ValueError):
    """The data cannot be loaded or used as asked."""


class DamagedRows(SplBenchError):
    """A row file that is not whole (cut, empty, changed after writing, unreadable as rows).

    ``path`` is the file, ``reason`` what is wrong with it, ``todo`` what to do about it; the
    message says all three in one line.
    """

    def __init__(self, path: os.PathLike[str] | str, reason: str, todo: str = "") -> None:
        self.path, self.reason, self.todo = str(path), reason, todo
        super().__init__(f"{path} is damaged: {reason}" + (f"; {todo}" if todo else ""))


class EnvironmentProblem(SplBenchError):
    """The machine refused a file operation: a full disk, a read-only folder, no permission."""


#: errno -> (what happened, what to do), for :func:`environment_error`
ENVIRONMENT_ERRNOS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("the disk is full", "free space on that disk or give a folder on another one"),
    errno.EDQUOT: ("the disk quota is used up", "free space within the quota or give a folder on another disk"),
    errno.EROFS: ("the file system is read-only", "give a writable folder"),
    errno.EACCES: ("permission denied", "give a folder you may write to, or ask its owner for write access"),
    errno.EPERM: ("operation not permitted", "give a folder you may write to, or ask its owner for write access"),
    errno.EIO: ("an input/output error (disk or network file system)", "check the disk, then run again"),
}


def environment_error(
    exc: OSError, doing: str = "writing", path: object = None, hint: str = ""
) -> SplBenchError | None:
    """The one-line error for an :class:`OSError` the environment caused, or ``None`` for any other.

    ``doing`` says what failed (``"writing the rows of run 3"``), ``path`` which file or folder
    when ``exc`` names none, ``hint`` an extra note (``"runs already written are kept"``).  The
    message reads ``<doing> <path> failed: <what happened> (<strerror>); <what to do>``.
    """
    if exc.errno not in ENVIRONMENT_ERRNOS:
        return None
    what, todo = ENVIRONMENT_ERRNOS[exc.errno]
    where = exc.filename if exc.filename is not None else path
    target = f" {where}" if where is not None else ""
    strerror = exc.strerror or os.strerror(exc.errno)
    return EnvironmentProblem(f"{doing}{target} failed: {what} ({strerror}); {todo}" + (f"; {hint}" if hint else ""))


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


def check_int(name: str, value: object, minimum: int | None = None) -> int:
    """Return ``value`` as an int, or raise :class:`ConfigError` if it is not a whole number.

    Integers and strings of digits pass; ``2.5``, ``"abc"`` and booleans do not (a float
    that happens to be whole, ``3.0``, is refused too: it is a typo for ``3``, not a count).
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    try:
        v = int(value)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None
    if minimum is not None and v < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {v}")
    return v


def check_number(name: str, value: object, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a finite float in ``[low, high]``, or raise :class:`ConfigError`."""
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ConfigError(f"{name} must be in [{lo}, {hi}], got {v:g}")
    return v


def unknown_key(kind: str, key: str, valid: list[str]) -> ConfigError:
    """Build the error for an unknown ``kind`` key, with the closest valid spelling if any."""
    import difflib

    close = difflib.get_close_matches(key, valid, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown {kind} {key!r}{hint} (valid: {', '.join(sorted(valid))})")


def print_error(console: object, message: object) -> None:
    """Print ``error: <message>`` on a rich console as one unwrapped line, the message not read as markup."""
    from rich.text import Text

    text = " ".join(str(message).split())  # one line, whatever the message's own line breaks
    console.print(Text.assemble(("error: ", "bold red"), text), soft_wrap=True)  # type: ignore[attr-defined]
