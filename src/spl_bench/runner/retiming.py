"""Re-timings of committed seeds by today's code (``scripts/retime_cells.py``, ``results/bench/retimed.csv``).

The committed rows' seconds were measured by older code on busier machines; the plan's ETA and
the sweep's per-run budget (:mod:`spl_bench.runner.plan`) read a cell's re-timings instead where
it has them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spl_bench.paths import repo_root
from spl_bench.runner import commits

#: the re-timings of committed seeds by today's code (``scripts/retime_cells.py``): the plan's ETA
#: reads them instead of the committed rows' seconds, which older code made, on busier machines
RETIMED_FILE = Path("results") / "bench" / "retimed.csv"
RETIMED_COLUMNS = ["rows_name", "cell_id", "seed", "cpu_s", "committed_s", "agrees", "worst_rel", "code_version",
                   "date"]


def append_retimed_row(path: Path, row: dict[str, Any]) -> None:
    """Append one re-timing to ``retimed.csv`` (header only for a new file).  Appending, not rewriting
    the file from a copy read earlier: two re-timings running at once would otherwise drop the rows
    the other one wrote in the meantime."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file() or path.stat().st_size == 0
    pd.DataFrame([row], columns=RETIMED_COLUMNS).to_csv(path, mode="a", header=new, index=False)


def retimed_rows(path: Path | None) -> Iterator[tuple[tuple[str, str], pd.DataFrame]]:
    """The re-timing rows of each ``(rows folder, cell id)``, those of the newest code version."""
    path = path if path is not None else repo_root() / RETIMED_FILE
    if not path.is_file():
        return
    frame = pd.read_csv(path)
    for key, rows in frame.groupby(["rows_name", "cell_id"]):
        if "code_version" in rows:  # the code version re-timed last (rows are appended in time order)
            rows = rows[rows["code_version"] == rows["code_version"].iloc[-1]]
        yield (str(key[0]), str(key[1])), rows


def retimed_summary(rows: pd.DataFrame) -> tuple[float, float | None]:
    """Median re-timed CPU seconds of a cell's re-timing rows, and the median of (re-timed CPU seconds /
    the seed's committed seconds when it was re-timed): the speed-up of today's code on the same
    seeds, which later runs committed to the cell (by today's code) do not dilute."""
    ratio = None
    if "committed_s" in rows and (rows["committed_s"] > 0).all():
        ratio = float((rows["cpu_s"] / rows["committed_s"]).median())
    return float(rows["cpu_s"].median()), ratio


def retimed(path: Path | None = None) -> dict[tuple[str, str], float]:
    """Median re-timed CPU seconds per ``(rows folder, cell id)``, from the newest code version's rows."""
    return {key: retimed_summary(rows)[0] for key, rows in retimed_rows(path)}


def retimed_ratios(path: Path | None = None) -> dict[tuple[str, str], float]:
    """:func:`retimed_summary`'s ratio per ``(rows folder, cell id)`` (cells with committed seconds)."""
    out = {key: retimed_summary(rows)[1] for key, rows in retimed_rows(path)}
    return {key: r for key, r in out.items() if r is not None}


def retimed_at(rows: pd.DataFrame) -> int | None:
    """Commit time of the code that re-timed a cell (rows of one code version; the latest of them)."""
    made = [commits.made_at(v) for v in rows["code_version"]]
    known = [t for t in made if t is not None]
    return max(known) if known and len(known) == len(made) else None


def todays_seconds(rows: pd.DataFrame, seeds: pd.DataFrame, since: int | None) -> float:
    """Seconds of one run of a cell with today's code: the mean over its re-timed seeds (at their
    re-timings, median per seed) and its seeds committed since by code no older than the re-timing's
    (at their own seconds).

    Which rows are that recent is read from the commits in their ``code_version`` (git's commit
    times; main's history is linear).  Without them (no git, unknown commits) the re-timings alone
    count, their median.  Re-timing seed 0 alone priced Table 6's hiva GAGA cell at 2,660 s a run
    against 1,180-3,310 s for the nine seeds run after the re-timing.  ``since`` is the commit time
    of the re-timing's code (:func:`retimed_at`; ``None``: unknown).
    """
    fallback = float(rows["cpu_s"].median())
    times = commits.commit_times()
    if not times or "code_version" not in seeds or since is None:
        return fallback
    again = rows.groupby("seed")["cpu_s"].median()
    per = [float(sec) for sec in again]
    for seed, version in seeds["code_version"].items():
        made = commits.made_at(version)
        if int(seed) not in again.index and made is not None and made >= since:
            # its CPU seconds where the row records them (a loaded machine's wall clock is no measure)
            cpu = float(seeds.at[seed, "cpu_s"]) if "cpu_s" in seeds else float("nan")
            per.append(cpu if np.isfinite(cpu) else float(seeds.at[seed, "time_s"]))
    return fallback if len(per) == len(again) else float(np.mean(per))


def current_retimings(rows: pd.DataFrame | None, times: pd.Series) -> pd.DataFrame | None:
    """The re-timings of seeds whose committed row is still the one re-timed (its committed seconds
    unchanged): once a seed is run again (new code, a rerun cell), its old re-timing no longer
    describes the cell."""
    if rows is None or "committed_s" not in rows:
        return rows
    # atol: early re-timings stored the committed seconds rounded to 0.01 s
    keep = [int(r.seed) in times.index and bool(np.isclose(times[int(r.seed)], r.committed_s, rtol=1e-9, atol=0.006))
            for r in rows.itertuples()]
    return rows[keep] if any(keep) else None
