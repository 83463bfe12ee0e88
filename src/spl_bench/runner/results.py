"""Tidy results rows, written atomically, one file per run, so a killed sweep resumes.

Layout inside a run directory::

    rows/<config-hash>/run-000.csv     one file per (config, run), written by rename
    rows/<config-hash>/config.json     the hashed part of the resolved config (what the hash means)
    rows_damaged/<config-hash>/        row files that failed their check, set aside (with the reason)
    results.csv                        every row of the directory, rebuilt from rows/ (never the truth)
    rows_stale/<config-hash>/          rows of an older configuration moved aside by replace_stale=true

A rerun of the same command finds ``rows/<hash>/run-<k>.csv`` and skips run ``k`` if the file is
whole (its check trailer, :mod:`spl_bench.rowfiles`); a damaged one is moved to ``rows_damaged/``
first (:meth:`RowStore.set_aside_damaged`) and run ``k`` is run again.  A folder
holds one configuration: rows of a second hash are refused (:meth:`RowStore.claim`) unless the
old ones are moved aside.  ``results.csv`` is a convenience copy: it is rebuilt from the row
files at the start of a run, after every run, and whenever the report reads the folder
(:func:`read_run_folder`), so it cannot lag behind them.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench import __version__
from spl_bench.atomic import atomic_write_text
from spl_bench.errors import ConfigError
from spl_bench.paths import repo_root
from spl_bench.rowfiles import (  # noqa: F401 (re-export)
    check_row_file,
    config_hash,
    read_row_file,
    read_run_folder,
    row_files,
    rows_frame,
    set_aside_damaged,
    write_row_file,
    write_summary,
)

#: folder (inside a run directory) the rows of a replaced configuration are moved to
STALE_DIR = "rows_stale"

#: Column order of the tidy results.
COLUMNS = [
    "experiment", "dataset", "noise", "method", "model", "sp", "selection", "params", "seed",
    "metric", "value", "lam", "candidate", "time_s", "n_restarts", "n_train", "n_test",
    "n_corrupted", "info", "config_hash", "code_version", "environment",
]  # fmt: skip


@cache
def code_version() -> str:
    """Package version plus the git commit of the checkout, if any."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo_root()), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        sha = "nogit"
    return f"{__version__}+{sha}"


def atomic_write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` as a plain CSV (no check trailer) through an atomic rename.

    For the files derived from row files (``index.csv``, ``failures.csv``); row files themselves
    are written by :func:`~spl_bench.rowfiles.write_row_file`.
    """
    atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))


@dataclass(frozen=True)
class HashRows:
    """The rows of one configuration hash in a run directory."""

    config_hash: str
    n_runs: int
    newest: datetime

    def describe(self, note: str = "") -> str:
        runs = f"{self.n_runs} run file{'s' * (self.n_runs != 1)}"
        return f"{self.config_hash} ({runs}, newest {self.newest:%Y-%m-%d %H:%M} UTC{note})"


def hashes_in(run_dir: Path) -> dict[str, HashRows]:
    """The configuration hashes with row files in ``run_dir``, each with its count and newest date."""
    out: dict[str, HashRows] = {}
    for d in sorted((Path(run_dir) / "rows").glob("*")):
        files = list(d.glob("run-*.csv")) if d.is_dir() else []
        if files:
            newest = max(f.stat().st_mtime for f in files)
            out[d.name] = HashRows(d.name, len(files), datetime.fromtimestamp(newest, UTC))
    return out


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


def config_differences(old: dict[str, Any], new: dict[str, Any], limit: int = 3) -> str:
    """``key: a there, b now`` for the first ``limit`` keys that differ (flattened, dotted)."""
    a, b = _flat(old), _flat(new)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k, "<unset>") != b.get(k, "<unset>"))
    parts = [f"{k}: {a.get(k, '<unset>')} there, {b.get(k, '<unset>')} now" for k in keys[:limit]]
    if len(keys) > limit:
        parts.append(f"{len(keys) - limit} more")
    return "; ".join(parts)


class RowStore:
    """Per-run row files of one configuration inside a run directory."""

    def __init__(self, run_dir: Path, cfg_hash: str, identity: dict[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.cfg_hash = cfg_hash
        self.identity = identity
        self.rows_dir = self.run_dir / "rows" / cfg_hash

    def path(self, run: int) -> Path:
        return self.rows_dir / f"run-{run:03d}.csv"

    def done(self, run: int) -> bool:
        """Whether run ``run`` has a whole row file (a damaged one does not count)."""
        return self.path(run).is_file() and check_row_file(self.path(run)) is None

    def set_aside_damaged(self) -> list[tuple[Path, Path, str]]:
        """Move the row files of the run directory that are not whole to ``rows_damaged/``.

        Returns ``(old path, new path, reason)`` per file (:func:`~spl_bench.rowfiles.set_aside_damaged`).
        """
        return set_aside_damaged(self.run_dir)

    def others(self) -> list[HashRows]:
        """Rows of other configuration hashes in the same run directory."""
        return [h for k, h in hashes_in(self.run_dir).items() if k != self.cfg_hash]

    def _stored_identity(self, h: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.run_dir / "rows" / h / "config.json").read_text())
        except (OSError, ValueError):
            return None

    def refusal(self, others: list[HashRows]) -> ConfigError:
        """The one-line error for a folder that already holds rows of other configurations."""
        listed = []
        for o in others:
            old = self._stored_identity(o.config_hash)
            diff = config_differences(old, self.identity) if old is not None and self.identity else ""
            listed.append(o.describe(f"; differs in {diff}" if diff else ""))
        return ConfigError(
            f"{self.run_dir} already holds rows of another configuration: config hash {', '.join(listed)}; "
            f"this configuration is {self.cfg_hash}. Pooling them would average two configurations: rerun with "
            f"replace_stale=true to move the old rows to {STALE_DIR}/ and start this one, or give another "
            "exp_name or results_root to keep both"
        )

    def claim(self, replace_stale: bool = False) -> list[Path]:
        """Make this configuration the only one of the run directory.

        Rows of another hash are refused (:class:`ConfigError`, listing them) unless
        ``replace_stale``: then each ``rows/<hash>/`` is moved to ``rows_stale/<hash>/`` (with a
        time suffix if that exists), together with ``paths/`` (fitted paths of the old runs),
        and ``results.csv`` is rebuilt.  Returns the folders moved.  The hashed config is written
        to ``rows/<hash>/config.json`` (with the first row file, so a failed first run leaves
        nothing) so a later refusal can say what differs.
        """
        others = self.others()
        moved: list[Path] = []
        if others and not replace_stale:
            raise self.refusal(others)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        for o in others:
            target = self.run_dir / STALE_DIR / o.config_hash
            if target.exists():
                target = target.with_name(f"{o.config_hash}-{stamp}")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.run_dir / "rows" / o.config_hash, target)
            moved.append(target)
            paths = self.run_dir / "paths"
            if paths.is_dir():
                os.replace(paths, target / "paths")
        write_summary(self.run_dir)
        return moved

    def _write_identity(self) -> None:
        """``rows/<hash>/config.json``: the hashed config, written with the first row file."""
        if self.identity is None or (self.rows_dir / "config.json").is_file():
            return
        self.rows_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.identity, sort_keys=True, indent=1, default=str)
        atomic_write_text(self.rows_dir / "config.json", text + "\n")

    def write(self, run: int, rows: list[dict[str, Any]]) -> None:
        """Write the rows of run ``run`` as a whole row file (CSV text and check trailer)."""
        others = self.others()  # another process started a different configuration here meanwhile
        if others:
            raise self.refusal(others)
        frame = pd.DataFrame(rows)
        for col in COLUMNS:
            if col not in frame.columns:
                frame[col] = None
        extra = [c for c in frame.columns if c not in COLUMNS]
        self._write_identity()
        write_row_file(frame[COLUMNS + extra], self.path(run))

    def load(self) -> pd.DataFrame:
        """All rows of this configuration (:class:`~spl_bench.errors.DamagedRows` if a file is not whole)."""
        files = sorted(self.rows_dir.glob("run-*.csv"))
        return pd.concat([read_row_file(f) for f in files], ignore_index=True) if files else pd.DataFrame()

    def rewrite_summary(self) -> Path:
        """Rewrite ``results.csv`` of the run directory from every row file in it."""
        return write_summary(self.run_dir)
