"""Row files: written whole with a check trailer, read only after checking it.

A row file is one CSV of tidy rows (:data:`spl_bench.rowstore.COLUMNS`): every seed of one cell
under one configuration hash, ``<folder>/<cell>__<config-hash>.csv`` in the row store
(:mod:`spl_bench.rowstore`), which ``spl-bench run`` and the tables' sweep both write; the
folder's ``index.csv`` maps each cell to its current hash and file.

**The check.**  A row file ends with one trailer line after its CSV text::

    #spl-bench rows=<number of rows> sha256=<SHA-256 of every byte before this line>

A file is *whole* when that line is there, is the last line, and both numbers match what comes
before it.  A file cut anywhere (an interrupted copy, a sync from a cluster, a disk error) loses
or breaks its trailer; a file changed after writing no longer matches its checksum; an empty file
has no trailer.  None of them counts: :func:`read_row_file` raises :class:`DamagedRows`.  The
trailer lives in the file itself, so the file and its check are written by one atomic rename and
travel together when copied; a sidecar file could be copied, synced or renamed without it.
Read a row file only through :func:`read_row_file`: a plain ``pandas.read_csv`` would take the
trailer for one more row.  ``index.csv`` is derived and rebuilt, so it stays plain CSV without a trailer.

``scripts/seal_row_files.py`` adds the trailer to row files written before this check existed;
``spl-bench verify`` checks every row file under a folder (:func:`verify_tree`).

This module sits below the row store, the runner (which writes rows) and the report (which reads them).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spl_bench.atomic import atomic_write_bytes
from spl_bench.errors import DamagedRows, SplBenchError

#: first characters of the trailer line; the full line is ``TRAILER_PREFIX rows=<n> sha256=<hex>``
TRAILER_PREFIX = "#spl-bench"
_TRAILER = re.compile(rb"#spl-bench rows=(\d+) sha256=([0-9a-f]{64})\n\Z")
#: columns a row file must have: what the report groups by and averages
REQUIRED_COLUMNS = ("experiment", "dataset", "noise", "method", "model", "sp", "selection", "seed", "metric", "value",
                    "config_hash")  # fmt: skip
#: a row file: ``<cell>__<hash>.csv``
COMMITTED_FILE = re.compile(r".+__([0-9A-Za-z]+)\.csv\Z")
#: the index of a committed experiment folder and its columns
INDEX_NAME = "index.csv"
INDEX_COLUMNS = ("cell", "overrides", "config_hash", "file")


def config_hash(payload: dict[str, Any]) -> str:
    """Stable short hash of a JSON-able config (the name of a run directory's ``rows/<hash>/``)."""
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ----------------------------------------------------------------------------- the check


def trailer(body: bytes, n_rows: int) -> bytes:
    """The trailer line of a row file whose CSV text is ``body`` with ``n_rows`` rows."""
    return f"{TRAILER_PREFIX} rows={n_rows} sha256={hashlib.sha256(body).hexdigest()}\n".encode()


def _records(body: bytes) -> tuple[list[str], list[list[str]]]:
    """Header and records of CSV text; :class:`ValueError` names the first problem."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from None
    if not text.endswith("\n"):
        raise ValueError("the last line is incomplete")
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ValueError(f"not valid CSV ({exc})") from None
    if not rows or not rows[0] or rows[0] == [""]:
        raise ValueError("no header line")
    header, records = rows[0], rows[1:]
    for k, rec in enumerate(records, start=1):
        if len(rec) != len(header):
            raise ValueError(f"row {k} has {len(rec)} fields, the header {len(header)}")
    return header, records


def seal(body: bytes) -> bytes:
    """``body`` (the CSV text of a row file) followed by its trailer; :class:`ValueError` if it is not whole CSV."""
    _, records = _records(body)
    return body + trailer(body, len(records))


def split_checked(data: bytes) -> bytes:
    """The CSV text of a row file's bytes, after checking its trailer; :class:`ValueError` says why not.

    The reasons are written to follow ``<file> is damaged:``.
    """
    if not data:
        raise ValueError("the file is empty")
    if not data.endswith(b"\n"):
        raise ValueError("cut short: its last line is incomplete and there is no check trailer")
    cut = data.rfind(b"\n", 0, len(data) - 1) + 1
    body, last = data[:cut], data[cut:]
    if not last.startswith(TRAILER_PREFIX.encode()):
        raise ValueError("no check trailer: cut short at a line end, or written before row files were checked "
                         "(scripts/seal_row_files.py adds the trailer to such files)")
    m = _TRAILER.match(last)
    if m is None:
        raise ValueError(f"its check trailer is malformed ({last[:80].decode('utf-8', 'replace').strip()!r})")
    if hashlib.sha256(body).hexdigest() != m.group(2).decode():
        raise ValueError("its content does not match its checksum: changed or damaged after it was written")
    try:
        _, records = _records(body)
    except ValueError as exc:
        raise ValueError(f"its CSV text is broken: {exc}") from None
    if len(records) != int(m.group(1)):
        raise ValueError(f"it has {len(records)} rows, its trailer says {int(m.group(1))}")
    return body


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` ends with a check trailer line (right or wrong)."""
    cut = data.rfind(b"\n", 0, max(0, len(data) - 1)) + 1
    return data.endswith(b"\n") and data[cut:].startswith(TRAILER_PREFIX.encode())


def what_to_do(path: Path) -> str:
    """What a user does about a damaged row file."""
    return ("restore it (git checkout -- FILE, if committed), or rerun the command that wrote it: spl-bench run "
            "moves it to damaged/ and runs its seeds again (scripts/reproduce_tables.py stops at it)")


def read_row_file(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The rows of a row file of either layout, after checking that it is whole.

    Raises :class:`~spl_bench.errors.DamagedRows` (one line: the file, what is wrong, what to do)
    for an empty, cut, changed or unparsable file.  A file that cannot be opened raises
    :class:`OSError` (:func:`spl_bench.errors.environment_error` words it).
    """
    path = Path(path)
    data = path.read_bytes()
    try:
        body = split_checked(data)
        # a hash of digits and one "e" would otherwise be read as a number ("66e484979502" -> inf)
        return pd.read_csv(io.BytesIO(body), dtype={"config_hash": str})
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise DamagedRows(path, reason, what_to_do(path)) from None


def check_row_file(path: str | os.PathLike[str]) -> str | None:
    """Why the row file at ``path`` is not whole, or ``None`` when it is (a cheap check: no parse by pandas)."""
    try:
        split_checked(Path(path).read_bytes())
    except ValueError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


def encode_rows(frame: pd.DataFrame) -> bytes:
    """The bytes of a row file holding ``frame``: its CSV text and the check trailer."""
    body = frame.to_csv(index=False, lineterminator="\n").encode("utf-8")
    return body + trailer(body, len(frame))


def write_row_file(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write ``frame`` as a whole row file (CSV text and check trailer) by an atomic rename."""
    return atomic_write_bytes(path, encode_rows(frame))


def read_row_index(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A committed experiment folder's ``index.csv``; :class:`DamagedRows` if it is not readable as one."""
    path = Path(path)
    todo = "rebuild it with scripts/reproduce_tables.py --report-only"
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DamagedRows(path, f"not a readable CSV ({(str(exc).splitlines() or [type(exc).__name__])[0]})",
                          todo) from None
    missing = [c for c in INDEX_COLUMNS if c not in frame.columns]
    if missing:
        raise DamagedRows(path, f"no column {', '.join(missing)}", todo)
    return frame


# ----------------------------------------------------------------------------- spl-bench verify


@dataclass
class Verification:
    """What :func:`verify_tree` found: the row files checked and one line per problem."""

    root: Path
    files: int = 0
    indexes: int = 0
    problems: list[str] = field(default_factory=list)
    bad_files: set[Path] = field(default_factory=set)

    def add(self, path: Path, problem: str) -> None:
        """Record one problem of ``path`` (one line of the report)."""
        self.problems.append(f"{path}: {problem}")
        self.bad_files.add(path)

    def summary(self) -> str:
        """The last line of ``spl-bench verify``: what was checked, how many problems, what to do."""
        what = f"{self.files} row file{'s' * (self.files != 1)}"
        if self.indexes:
            what += f" and {self.indexes} index file{'s' * (self.indexes != 1)}"
        if not self.problems:
            return f"verified {what} under {self.root}: all whole"
        return (f"verified {what} under {self.root}: {len(self.problems)} problem(s) in {len(self.bad_files)} "
                "file(s); "
                "restore committed files from git (git checkout -- FILE), or rerun the command that wrote "
                "them (spl-bench run sets a damaged row file aside and runs its seeds again)")


def _layout(path: Path) -> str | None:
    """``"committed"`` (a row file), ``"index"`` or ``None`` (neither) for a CSV file."""
    if path.name == INDEX_NAME:
        return "index"
    if COMMITTED_FILE.match(path.name):
        return "committed"
    return None


def _candidates(root: Path) -> Iterator[tuple[Path, str]]:
    skip = {"damaged", "stale", "logs", ".hydra", ".git"}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            kind = _layout(path) if name.endswith(".csv") else None
            if kind is not None:
                yield path, kind


def rows_for_checks(body: bytes) -> pd.DataFrame:
    """The rows of a row file's CSV text as :func:`row_problems` reads them (hashes kept as text)."""
    return pd.read_csv(io.BytesIO(body), dtype={"config_hash": str, "metric": str})


def row_problems(path: Path, frame: pd.DataFrame) -> list[str]:
    """What is wrong with the rows of the row file ``path`` (read by :func:`rows_for_checks`): empty when nothing.

    The columns a row file must have, a seed (a whole number), metric and config hash in every row,
    values that are numbers, the config hash its name gives, and no (seed, metric) twice.
    """
    path = Path(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        return [f"no column {', '.join(missing)}: not a row file of spl-bench"]
    if frame.empty:
        return ["no rows"]
    blank = [c for c in ("seed", "metric", "config_hash") if frame[c].isna().any()]
    if blank:
        return [f"rows without a {', '.join(blank)}"]
    seeds = pd.to_numeric(frame["seed"], errors="coerce")
    if seeds.isna().any() or (seeds != seeds.round()).any():
        return ["a seed that is not a whole number"]
    seeds = seeds.astype(int)
    problems = []
    if pd.to_numeric(frame["value"], errors="coerce").isna().any():
        problems.append("a value that is missing or not a number")
    named = COMMITTED_FILE.match(path.name)
    h = named.group(1) if named else None
    hashes = sorted(set(frame["config_hash"].astype(str)))
    if h is not None and hashes != [h]:
        problems.append(f"rows of config hash {', '.join(hashes)} in the file of hash {h}")
    twice = frame.assign(seed=seeds).duplicated(["seed", "metric"])
    if twice.any():
        problems.append(f"seed {', '.join(map(str, sorted(set(seeds[twice]))))} twice (the same metric in two rows)")
    return problems


def _check_config(row_file: Path, found: Verification) -> None:
    """A row file's ``<cell>__<hash>.json`` (the hashed config) hashes to the hash its name gives."""
    cfg = row_file.with_suffix(".json")
    named = COMMITTED_FILE.match(row_file.name)
    if not cfg.is_file() or named is None:
        return
    try:
        got = config_hash(json.loads(cfg.read_text()))
    except (OSError, ValueError) as exc:
        found.add(cfg, f"not readable as JSON ({exc})")
        return
    if got != named.group(1):
        found.add(cfg, f"hashes to {got}, not to its row file's hash {named.group(1)}: not the rows' config")


def _check_index(path: Path, found: Verification) -> None:
    found.indexes += 1
    try:
        frame = read_row_index(path)
    except DamagedRows as exc:
        found.add(path, exc.reason)
        return
    except OSError as exc:
        found.add(path, f"cannot be read ({exc.strerror or exc})")
        return
    for cell in sorted(set(frame.loc[frame["cell"].duplicated(), "cell"])):
        found.add(path, f"cell {cell} listed twice")
    for entry in frame.itertuples():
        if not str(entry.file).endswith(f"__{entry.config_hash}.csv"):
            found.add(path, f"cell {entry.cell}: file {entry.file} is not of its config hash {entry.config_hash}")


def verify_tree(paths: Iterable[str | os.PathLike[str]]) -> list[Verification]:
    """Check every row file under each of ``paths`` (run directories, ``results/rows``, or single files).

    Per row file: readable, whole (trailer, checksum, row count, complete rows), the required
    columns, seeds and values that are numbers, the config hash of its rows equal to the one its
    name gives (and its ``.json`` config hashing to it), no seed twice.  Per ``index.csv``:
    readable, its columns, each cell once and each file of the cell's hash.  The first problem that
    makes a file unreadable ends that file's checks, so a damaged file gives one line.
    """
    out = []
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise SplBenchError(f"{root} does not exist; give a results folder (runs/...) or results/rows")
        found = Verification(root)
        items = [(root, _layout(root) or "committed")] if root.is_file() else list(_candidates(root))
        for path, kind in items:
            if kind == "index":
                _check_index(path, found)
                continue
            found.files += 1
            _check_config(path, found)
            try:
                frame = rows_for_checks(split_checked(path.read_bytes()))
            except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
                found.add(path, (str(exc).splitlines() or [type(exc).__name__])[0])
                continue
            except OSError as exc:
                found.add(path, f"cannot be read ({exc.strerror or exc})")
                continue
            for problem in row_problems(path, frame):
                found.add(path, problem)
        if not items:
            raise SplBenchError(f"no row file under {root}: give a results folder (runs/...) or results/rows")
        out.append(found)
    return out
