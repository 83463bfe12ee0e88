"""Tidy results rows, written atomically, one file per run, so a killed sweep resumes.

Layout inside a run directory::

    rows/<config-hash>/run-000.csv     one file per (config, run), written by rename
    results.csv                        every row of the directory, rewritten after each run

A rerun of the same command finds ``rows/<hash>/run-<k>.csv`` and skips run ``k``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench import __version__
from spl_bench.paths import repo_root

#: Column order of the tidy results.
COLUMNS = [
    "experiment", "dataset", "noise", "method", "model", "sp", "selection", "params", "seed",
    "metric", "value", "lam", "candidate", "time_s", "n_restarts", "n_train", "n_test",
    "n_corrupted", "info", "config_hash", "code_version",
]  # fmt: skip


def config_hash(payload: dict[str, Any]) -> str:
    """Stable short hash of a JSON-able config."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


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
    """Write ``frame`` to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            frame.to_csv(fh, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RowStore:
    """Per-run row files of one configuration inside a run directory."""

    def __init__(self, run_dir: Path, cfg_hash: str) -> None:
        self.run_dir = Path(run_dir)
        self.cfg_hash = cfg_hash
        self.rows_dir = self.run_dir / "rows" / cfg_hash

    def path(self, run: int) -> Path:
        return self.rows_dir / f"run-{run:03d}.csv"

    def done(self, run: int) -> bool:
        return self.path(run).is_file()

    def write(self, run: int, rows: list[dict[str, Any]]) -> None:
        frame = pd.DataFrame(rows)
        for col in COLUMNS:
            if col not in frame.columns:
                frame[col] = None
        extra = [c for c in frame.columns if c not in COLUMNS]
        atomic_write_csv(frame[COLUMNS + extra], self.path(run))

    def load(self) -> pd.DataFrame:
        """All rows of this configuration."""
        files = sorted(self.rows_dir.glob("run-*.csv"))
        return pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else pd.DataFrame()

    def rewrite_summary(self) -> Path:
        """Rewrite ``results.csv`` of the run directory from every row file in it."""
        files = sorted((self.run_dir / "rows").glob("*/run-*.csv"))
        frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else pd.DataFrame()
        out = self.run_dir / "results.csv"
        atomic_write_csv(frame, out)
        return out
