"""The published numbers of the reproduced papers, as committed under ``results/paper/``.

Each table is one long-format CSV, ``results/paper/<paper>_table<N>.csv``, with one row per
(table row x method) cell; ``results/paper/README.md`` describes the columns and the
transcription choices. ``tests/test_paper_numbers.py`` checks every cell against the paper text.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spl_bench.errors import ConfigError, DataError
from spl_bench.paths import repo_root
from spl_bench.table_registry import PAPER_FILES, PAPER_TABLES

#: the columns of every paper CSV, in order
PAPER_COLUMNS: tuple[str, ...] = (
    "paper",
    "table",
    "row",
    "dataset",
    "noise_rate",
    "param",
    "method",
    "metric",
    "mean",
    "std",
    "restarts",
    "bold",
)

_STRING_COLUMNS = ("paper", "row", "dataset", "param", "method", "metric")


def paper_dir() -> Path:
    """The folder of the transcribed tables, ``<repo_root>/results/paper``.

    Returns
    -------
    pathlib.Path
        The directory holding ``<paper>_table<N>.csv`` and its ``README.md``.
    """
    return repo_root() / "results" / "paper"


def paper_tables(paper: str | None = None) -> list[tuple[str, int]]:
    """The available (paper, table) pairs.

    Parameters
    ----------
    paper : str, optional
        Restrict to one paper (``"gaga"``, ``"outlier_path"`` or ``"dspl"``).

    Returns
    -------
    list of (str, int)
        The pairs in the order of :data:`~spl_bench.table_registry.PAPER_FILES`.

    Raises
    ------
    spl_bench.errors.ConfigError
        If ``paper`` is not one of the transcribed papers.
    """
    if paper is not None and paper not in PAPER_TABLES:
        raise ConfigError(f"unknown paper {paper!r}; known: {', '.join(PAPER_TABLES)}")
    return [key for key in PAPER_FILES if paper is None or key[0] == paper]


def paper_file(paper: str, table: int) -> Path:
    """The CSV path of one transcribed table.

    Parameters
    ----------
    paper : str
        ``"gaga"``, ``"outlier_path"`` or ``"dspl"``.
    table : int
        The table number as printed in the paper.

    Returns
    -------
    pathlib.Path
        ``<repo_root>/results/paper/<paper>_table<table>.csv``.

    Raises
    ------
    spl_bench.errors.ConfigError
        If that table was not transcribed.
    """
    try:
        name = PAPER_FILES[(paper, int(table))]
    except KeyError:
        raise ConfigError(f"no transcribed table {table} of paper {paper!r}; available: {paper_tables()}") from None
    return paper_dir() / name


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise DataError(f"paper table missing: {path}")
    frame = pd.read_csv(path, dtype={c: str for c in _STRING_COLUMNS}, keep_default_na=False, na_values=[""])
    if tuple(frame.columns) != PAPER_COLUMNS:
        raise DataError(f"{path}: columns {list(frame.columns)} differ from {list(PAPER_COLUMNS)}")
    for col in _STRING_COLUMNS:
        frame[col] = frame[col].fillna("")
    frame["table"] = frame["table"].astype(int)
    for col in ("noise_rate", "mean", "std"):
        frame[col] = frame[col].astype(float)
    for col in ("restarts", "bold"):
        frame[col] = frame[col].astype("Int64")
    return frame


def load_paper(paper: str | None = None, table: int | None = None) -> pd.DataFrame:
    """The published numbers, one row per table cell.

    Parameters
    ----------
    paper : str, optional
        ``"gaga"``, ``"outlier_path"`` or ``"dspl"``; all papers when omitted.
    table : int, optional
        A table number as printed in the paper; all transcribed tables of ``paper`` when omitted.
        Given without ``paper``, every paper's table of that number.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`PAPER_COLUMNS`: ``table`` is int; ``noise_rate``, ``mean`` and ``std`` are
        float (NaN where not printed); ``restarts`` and ``bold`` are nullable ``Int64``; the other
        columns are strings (empty where not applicable).

    Raises
    ------
    spl_bench.errors.ConfigError
        If the selection names no transcribed table.
    spl_bench.errors.DataError
        If a CSV is missing or malformed.
    """
    keys = [k for k in paper_tables(paper) if table is None or k[1] == int(table)]
    if not keys:
        raise ConfigError(f"no transcribed table {table} of paper {paper!r}; available: {paper_tables()}")
    frames = [_read(paper_dir() / PAPER_FILES[k]) for k in keys]
    return pd.concat(frames, ignore_index=True)
