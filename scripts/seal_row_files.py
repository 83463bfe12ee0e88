"""Add the check trailer to row files written before row files were checked (idempotent).

    python scripts/seal_row_files.py                     # every row file under results/rows
    python scripts/seal_row_files.py runs/my_exp         # a results folder of spl-bench run
    python scripts/seal_row_files.py --check             # say what would change; change nothing

A row file without its trailer (``#spl-bench rows=<n> sha256=<hex>``, :mod:`spl_bench.rowfiles`)
is refused by every reader.  This script appends the trailer to each such file after checking
what it can: the file ends with a complete line, parses as CSV with every row as long as the
header, and its rows pass :func:`spl_bench.rowfiles.row_problems` (the columns, seeds that are
whole numbers, values that are numbers, the config hash of its name, no seed twice).  A file that
fails is left as it is and listed (exit status 1): it may be cut, and sealing it would make a
damaged file look whole.  The CSV text itself is not rewritten (only the trailer line is added),
so every value, and the tables made from them, stay the same; the file's modification time is
kept.  A file already sealed is checked and left alone, so the script can be rerun at any time
(after new rows were written by older code, say).

One repair is made: older code read a cell's file back with the config hash parsed as a number
when it looked like one (``66e484979502`` -> ``inf``, ``064052863215`` -> ``64052863215``) and
wrote it so.  Where a row's ``config_hash`` is such a number and equals the file name's hash read
as a number, it is set back to the hash text (and the file is listed as repaired); nothing else
in the file changes, which is checked by writing the unchanged rows again and comparing bytes.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from pathlib import Path

import pandas as pd

from spl_bench.atomic import atomic_write_bytes
from spl_bench.rowfiles import (
    COMMITTED_FILE,
    _candidates,
    check_row_file,
    is_sealed,
    row_problems,
    rows_for_checks,
    seal,
)


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def repair_hashes(path: Path, data: bytes) -> tuple[bytes, int]:
    """``data`` with every ``config_hash`` that is the file name's hash parsed as a number set back to it.

    Returns the new bytes and how many rows changed (0: ``data`` itself).  The CSV text is written
    again with Python's csv writer (the rules pandas writes by); if that does not give back
    ``data`` byte for byte for the rows as they are, nothing is repaired.
    """
    named = COMMITTED_FILE.match(path.name)
    h = named.group(1) if named else None
    if h is None or _as_number(h) is None:
        return data, 0
    text = data.decode("utf-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or "config_hash" not in rows[0]:
        return data, 0
    col, target, changed = rows[0].index("config_hash"), _as_number(h), 0

    def write(records: list[list[str]]) -> str:
        out = io.StringIO(newline="")
        csv.writer(out, lineterminator="\n").writerows(records)
        return out.getvalue()

    if write(rows) != text:
        return data, 0
    for rec in rows[1:]:
        if len(rec) > col and rec[col] != h and _as_number(rec[col]) == target:
            rec[col] = h
            changed += 1
    return (write(rows).encode("utf-8"), changed) if changed else (data, 0)


def seal_file(path: Path, check_only: bool = False) -> tuple[str, str]:
    """Seal one row file: ``("sealed" | "would seal" | "whole" | "refused", detail)``."""
    data = path.read_bytes()
    if is_sealed(data):
        reason = check_row_file(path)
        return ("whole", "") if reason is None else ("refused", reason)
    data, repaired = repair_hashes(path, data)
    try:
        sealed = seal(data)
        frame = rows_for_checks(data)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        return "refused", (str(exc).splitlines() or [type(exc).__name__])[0] or "the file is empty"
    problems = row_problems(path, frame)
    if problems:
        return "refused", "; ".join(problems)
    note = f"config_hash of {repaired} row(s) set back from a number to the file's hash" if repaired else ""
    if check_only:
        return "would seal", note
    stat = path.stat()
    atomic_write_bytes(path, sealed)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return "sealed", note


def main(argv: list[str] | None = None) -> int:
    """Seal every row file under the given folders; print refused files and a summary line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", default=None, metavar="PATH",
                    help="folders holding row files: results/rows, run folders (default: results/rows)")
    ap.add_argument("--check", action="store_true", help="change nothing; say what would be sealed")
    args = ap.parse_args(argv)
    if not args.paths:
        from spl_bench.paths import repo_root

        args.paths = [repo_root() / "results" / "rows"]
    counts = {"sealed": 0, "would seal": 0, "whole": 0, "refused": 0}
    for root in map(Path, args.paths):
        if not root.is_dir():
            print(f"error: {root} is not a folder; give results/rows or a run folder", file=sys.stderr)
            return 2
        for path, kind in _candidates(root):
            if kind == "index":
                continue
            try:
                status, detail = seal_file(path, args.check)
            except OSError as exc:
                status, detail = "refused", f"cannot be read or written ({exc.strerror or exc})"
            counts[status] += 1
            if status == "refused":
                print(f"{path}: not sealed: {detail}", file=sys.stderr)
            elif detail:
                print(f"{path}: {detail}")
    done = "would seal" if args.check else "sealed"
    print(f"{counts[done]} row file(s) {done}, {counts['whole']} already whole, {counts['refused']} refused")
    return 1 if counts["refused"] else 0


if __name__ == "__main__":
    sys.exit(main())
