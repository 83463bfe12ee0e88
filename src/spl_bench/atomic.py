"""Atomic file writes that follow the umask: the one way this package replaces a file.

A file is written to a temporary name in its own folder and renamed over the target only once
it is complete, so a reader (another process, a rerun after a kill, a full disk) sees either the
old file or the new one, never half of it.  On any failure the temporary file is removed.

The temporary file is created with mode ``0o666`` and the process's umask applied by the kernel
(0644 under the usual umask 022, 0664 under a group's 002; a folder's default ACL applies too),
unlike :func:`tempfile.mkstemp`, whose 0600 would survive the rename and hide the file from the
rest of a research group sharing a results folder.

An :class:`OSError` raised while writing names the target path (``exc.filename``), whatever
call failed (a ``write`` on a full disk names no file by itself), so the one-line error the CLI
prints (:func:`spl_bench.errors.environment_error`) can say which file could not be written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path`` (mode 0o666 less the umask), opened for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = _temp_name(path)
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 32 random bits and the pid
            continue


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` as an :class:`OSError` of the same errno that names ``path`` (the file meant)."""
    if exc.errno is None:
        return exc
    named = OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))
    named.__cause__ = exc
    return named


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, fsync: bool = True) -> Path:
    """Replace ``path`` by a file holding ``data``, atomically; the folder is created if missing.

    ``fsync``: the data reach the disk before the rename (a power cut leaves the old file or the
    new one, not an empty one).  Returns ``path`` as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temp(path)
    except OSError as exc:
        raise _naming(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _naming(exc, path) from exc
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str, fsync: bool = True) -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8, line endings written as given."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


@contextlib.contextmanager
def atomic_paths(paths: Sequence[str | os.PathLike[str]]) -> Iterator[list[Path]]:
    """Temporary paths, one per target, renamed over the targets together when the block succeeds.

    For writers that want a file name (``fig.savefig(tmp, format="png")``, ``frame.to_csv(tmp)``):
    each temporary file exists (empty, mode 0o666 less the umask) when the block starts, and
    writing into it keeps that mode.  Give the format explicitly where the writer guesses it from
    the name's suffix (the temporary names end in ``.tmp``).  If the block raises, every temporary
    file is removed and no target is touched.
    """
    targets = [Path(p) for p in paths]
    temps: list[Path] = []
    try:
        for target in targets:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = _create_temp(target)
            except OSError as exc:
                raise _naming(exc, target) from exc
            os.close(fd)
            temps.append(tmp)
        try:
            yield list(temps)
        except OSError as exc:  # the caller's write failed: name the file it was writing
            meant = {str(t): g for t, g in zip(temps, targets, strict=True)}
            target = meant.get(str(exc.filename), targets[0] if len(targets) == 1 else targets[0].parent)
            raise _naming(exc, target) from exc
        for tmp, target in zip(temps, targets, strict=True):
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise _naming(exc, target) from exc
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """:func:`atomic_paths` for one file: ``with atomic_path(out) as tmp: fig.savefig(tmp, format="png")``."""
    with atomic_paths([path]) as (tmp,):
        yield tmp
