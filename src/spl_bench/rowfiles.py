"""Reading the row files of a run directory: the part of the results layout the report needs.

Layout inside a run directory (written by :mod:`spl_bench.runner.results`)::

    rows/<config-hash>/run-000.csv     one file per (config, run), written by rename
    results.csv                        every row of the directory, rebuilt from rows/ (never the truth)

This module sits below both the runner (which writes rows) and the report (which reads them),
so the report does not import the runner; ``spl_bench.runner.results`` re-exports these names.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def row_files(run_dir: Path) -> list[Path]:
    """Every per-run row file of a run directory (all hashes), sorted."""
    return sorted((Path(run_dir) / "rows").glob("*/run-*.csv"))


def rows_frame(run_dir: Path) -> pd.DataFrame:
    """Every row of the row files of ``run_dir`` (empty frame when there are none)."""
    files = row_files(run_dir)
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else pd.DataFrame()


def write_summary(run_dir: Path, frame: pd.DataFrame | None = None) -> Path:
    """Make ``results.csv`` of ``run_dir`` equal to its row files; rewritten only when it differs.

    With no row file, ``results.csv`` is removed.  Returns the path of ``results.csv``.
    """
    out = Path(run_dir) / "results.csv"
    frame = rows_frame(run_dir) if frame is None else frame
    if frame.empty:
        out.unlink(missing_ok=True)
        return out
    text = frame.to_csv(index=False)
    try:
        same = out.read_text() == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", newline="") as fh:
                fh.write(text)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return out


def read_run_folder(run_dir: Path) -> pd.DataFrame:
    """The rows of a run directory, from its row files; ``results.csv`` is refreshed to match.

    The refresh is best effort (a read-only copy of a results folder still reads).
    """
    frame = rows_frame(run_dir)
    try:
        write_summary(run_dir, frame)
    except OSError:
        pass
    return frame
