"""The row store: the one place rows are written to and read from, by ``spl-bench run`` and the tables.

One layout under a root (``results_root`` of ``spl-bench run``, default ``runs/``; the committed
tables' ``results/rows/``)::

    <root>/<folder>/<cell>__<hash>.csv    every seed of one cell under one configuration hash
    <root>/<folder>/<cell>__<hash>.json   the hashed config (written with the cell's first seed)
    <root>/<folder>/index.csv             cell -> its current hash and file: what every reader reads
    <root>/<folder>/damaged/              files that failed their check, each with a ``.reason.txt``
    <root>/<folder>/stale/                files of older hashes moved aside by ``replace_stale=true``

``<folder>`` is the experiment (``exp_name``), with ``@<variant>`` for a protocol variant of the
tables; ``<cell>`` is the cell's overrides (:func:`spl_bench.runner.cells.cell_id`).  A cell's
file is rewritten whole, by an atomic rename and under a lock, after each seed, so a killed run
loses only the seed it was running, and a rerun skips every seed the file has.  Rows of two hashes
of one cell sit in two files and are never pooled: the index names the hash of the config the
cell was last run under.  Each file ends with the check trailer of :mod:`spl_bench.rowfiles`; a file
that fails it never counts as done.

This module sits below the runner (which writes) and the report (which reads).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench.atomic import atomic_write_text
from spl_bench.errors import DamagedRows, DataError
from spl_bench.rowfiles import (
    INDEX_COLUMNS,
    INDEX_NAME,
    check_row_file,
    read_row_file,
    read_row_index,
    write_row_file,
)

#: Column order of the tidy rows (``candidate``: the selected candidate's parameters, JSON; absent from
#: the committed rows written before the row store, which dropped it; ``time_s``: the fit's wall-clock
#: seconds, ``cpu_s``: its CPU seconds, empty in the rows written before 2026-11-29)
COLUMNS = [
    "experiment", "dataset", "noise", "method", "model", "sp", "selection", "params", "seed",
    "metric", "value", "lam", "candidate", "time_s", "cpu_s", "n_restarts", "n_train", "n_test",
    "n_corrupted", "info", "config_hash", "code_version", "environment", "n_critical_turning", "n_critical_jump",
]  # fmt: skip
#: folders (inside an experiment folder) for damaged files and for rows of replaced configurations
DAMAGED_DIR = "damaged"
STALE_DIR = "stale"


def atomic_write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` as a plain CSV (no check trailer) through an atomic rename.

    For the files derived from row files (``index.csv``, ``failures.csv``).
    """
    atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (POSIX ``flock`` on ``folder/.lock``) for a read-modify-write.

    Two processes that add seeds to one cell file, or entries to one index, would otherwise each
    rewrite it from what they read, and one seed would be lost.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cell_file(root: Path, folder: str, cell: str, h: str) -> Path:
    """The row file of ``cell`` under configuration hash ``h``."""
    return Path(root) / folder / f"{cell}__{h}.csv"


def info_dict(info: object) -> dict[str, Any]:
    """A row's ``info`` JSON (its run's counters: restarts, resumes, candidates) as a dict; empty
    where it is not one (a row without info, or a method that writes none)."""
    try:
        out = json.loads(str(info))
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def read_cell(path: Path) -> pd.DataFrame:
    """The rows of a cell's file (none if there is no file); :class:`DamagedRows` if it is not whole."""
    if not Path(path).is_file():
        return pd.DataFrame(columns=COLUMNS)
    return read_row_file(path)


@dataclass(frozen=True)
class OtherHash:
    """Rows of the same cell under another configuration hash (kept, never pooled)."""

    path: Path
    config_hash: str
    n_seeds: int
    differs: str

    def describe(self) -> str:
        diff = f"; differs in {self.differs}" if self.differs else ""
        return f"{self.config_hash} ({self.n_seeds} seed{'s' * (self.n_seeds != 1)}{diff})"


class CellStore:
    """The rows of one cell under one configuration hash: which seeds are done, and adding one."""

    def __init__(self, root: Path, folder: str, cell: str, h: str, identity: dict[str, Any] | None = None) -> None:
        self.root = Path(root)
        self.folder = folder
        self.cell = cell
        self.config_hash = h
        self.identity = identity
        self.dir = self.root / folder
        self.file = cell_file(self.root, folder, cell, h)

    def read(self) -> pd.DataFrame:
        """Every row of this cell and hash (:class:`DamagedRows` if the file is not whole)."""
        return read_cell(self.file)

    def done(self) -> set[int]:
        """The seeds the file has (:class:`DamagedRows` if it is not whole: none counts)."""
        frame = self.read()
        return {int(s) for s in frame["seed"].unique()} if len(frame) else set()

    def add(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        """Add one seed's rows (a seed already there is replaced): the file is rewritten whole, atomically."""
        new = pd.DataFrame(rows).reindex(columns=COLUMNS)
        with locked(self.dir):
            old = self.read()
            if len(old):
                old = old[~old["seed"].isin(new["seed"].unique())]
            frame = pd.concat([old, new], ignore_index=True) if len(old) else new
            frame = frame.reindex(columns=COLUMNS + [c for c in frame if c not in COLUMNS])
            frame = frame.sort_values(["seed", "metric"]).reset_index(drop=True)
            self._write_identity()
            write_row_file(frame, self.file)
        return frame

    def _write_identity(self) -> None:
        """``<cell>__<hash>.json``: the hashed config, so a later run of the cell can say what differs."""
        path = self.file.with_suffix(".json")
        if self.identity is None or path.is_file():
            return
        atomic_write_text(path, json.dumps(self.identity, sort_keys=True, indent=1, default=str) + "\n")

    def others(self) -> list[OtherHash]:
        """Files of this cell under other hashes, each with its seeds and what differs (when both configs are known)."""
        out = []
        for path in sorted(self.dir.glob(f"{self.cell}__*.csv")):
            h = path.stem[len(self.cell) + 2:]
            if h == self.config_hash or "__" in h:
                continue
            reason = check_row_file(path)
            n = 0 if reason else read_row_file(path)["seed"].nunique()
            out.append(OtherHash(path, h, n, self._differences(path.with_suffix(".json"))))
        return out

    def _differences(self, old_json: Path) -> str:
        try:
            old = json.loads(old_json.read_text())
        except (OSError, ValueError):
            return ""
        return config_differences(old, self.identity) if self.identity else ""

    def move_aside(self, paths: Iterable[Path], to: str) -> list[Path]:
        """Move files of this folder (with their ``.json``) to ``<folder>/<to>/``; returns the new paths."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        moved = []
        for path in paths:
            target = self.dir / to / path.name
            if target.exists():
                target = target.with_name(f"{path.stem}-{stamp}{path.suffix}")
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(path, target)
            except FileNotFoundError:  # another process moved it first
                continue
            side = path.with_suffix(".json")
            if side.is_file():
                os.replace(side, target.with_suffix(".json"))
            moved.append(target)
        return moved

    def set_aside_damaged(self) -> tuple[Path, str] | None:
        """Move this cell's file to ``damaged/`` if it is not whole; returns (new path, reason), or None."""
        if not self.file.is_file():
            return None
        reason = check_row_file(self.file)
        if reason is None:
            return None
        moved = self.move_aside([self.file], DAMAGED_DIR)
        if not moved:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        atomic_write_text(moved[0].with_name(f"{moved[0].name}.reason.txt"),
                          f"{self.file}\n{reason}\nset aside {stamp} UTC\n")  # fmt: skip
        return moved[0], reason

    def same_config_elsewhere(self) -> Path | None:
        """A file of this hash under another cell name of the folder (one config reached by two commands)."""
        if self.file.is_file():
            return None
        found = [p for p in self.dir.glob(f"*__{self.config_hash}.csv") if p != self.file]
        return max(found, key=lambda p: (read_row_file(p)["seed"].nunique() if check_row_file(p) is None else -1,
                                         str(p)), default=None)  # fmt: skip

    def index_entry(self, overrides: str) -> dict[str, Any]:
        return {"cell": self.cell, "overrides": overrides, "config_hash": self.config_hash, "file": self.file.name}


def config_differences(old: dict[str, Any], new: dict[str, Any], limit: int = 3) -> str:
    """``key: a there, b now`` for the first ``limit`` keys that differ (flattened, dotted)."""
    a, b = _flat(old), _flat(new)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k, "<unset>") != b.get(k, "<unset>"))
    parts = [f"{k}: {a.get(k, '<unset>')} there, {b.get(k, '<unset>')} now" for k in keys[:limit]]
    if len(keys) > limit:
        parts.append(f"{len(keys) - limit} more")
    return "; ".join(parts)


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: node}


# ----------------------------------------------------------------------------- the index


def write_index(folder: Path, entries: list[dict[str, Any]]) -> Path:
    """Point each given cell's entry of ``<folder>/index.csv`` at its hash and file; other cells are kept."""
    path = Path(folder) / INDEX_NAME
    frame = pd.DataFrame(entries, columns=list(INDEX_COLUMNS))
    with locked(Path(folder)):
        try:  # the index is derived: one that cannot be read is rebuilt from the entries given
            old = read_row_index(path) if path.is_file() else frame.iloc[:0]
        except DamagedRows:
            old = frame.iloc[:0]
        frame = pd.concat([old[~old["cell"].isin(frame["cell"])], frame], ignore_index=True).sort_values("cell")
        atomic_write_csv(frame.reset_index(drop=True), path)
    return path


# ----------------------------------------------------------------------------- the reader


def read_folder(folder: Path) -> pd.DataFrame:
    """Every row of an experiment folder under the current hash of each cell (its ``index.csv``).

    A ``cell`` column names each row's cell.  A file that is not whole raises
    :class:`~spl_bench.errors.DamagedRows` (one line): its seeds never count.
    """
    folder = Path(folder)
    index = folder / INDEX_NAME
    if not index.is_file():
        return pd.DataFrame()
    frames = []
    for entry in read_row_index(index).itertuples():
        path = folder / str(entry.file)
        if path.is_file():
            frames.append(read_row_file(path).assign(cell=entry.cell))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def index_cells(folder: Path) -> list[CellStore]:
    """The cells a folder's ``index.csv`` reads, each as the store of the hash it reads (its rows:
    :meth:`CellStore.read`; the same cell's files under other hashes: :meth:`CellStore.others`)."""
    folder = Path(folder)
    index = folder / INDEX_NAME
    if not index.is_file():
        return []
    return [CellStore(folder.parent, folder.name, str(e.cell), str(e.config_hash))
            for e in read_row_index(index).itertuples()]


def folders_under(path: Path) -> list[Path]:
    """The experiment folders (each with an ``index.csv``) at or below ``path``, sorted."""
    path = Path(path)
    skip = {DAMAGED_DIR, STALE_DIR, "logs", ".hydra", ".git"}
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        if INDEX_NAME in filenames:
            out.append(Path(dirpath))
    return out


def read_tree(path: Path) -> pd.DataFrame:
    """Every current row of the experiment folders at or below ``path`` (:func:`read_folder` each).

    A folder in the layout of spl-bench before the row store (``rows/<hash>/run-NNN.csv``) is
    refused with one line naming the migration script.
    """
    path = Path(path)
    old = next((f for f in path.rglob("run-*.csv") if f.parent.parent.name == "rows"), None)
    if old is not None:
        raise DataError(f"{old.parent.parent.parent} holds rows in the layout before the row store "
                        f"(rows/<hash>/run-NNN.csv): move them with python scripts/migrate_run_folders.py "
                        f"{path}")  # fmt: skip
    frames = [read_folder(f) for f in folders_under(path)]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
