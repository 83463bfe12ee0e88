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
    """The re-timing rows of each ``(rows folder, cell id)``, those of the newest code version.

    Rows whose code version names an option after the commit (``0.1.0+e7f6569+newton_step_check``,
    written by hand when an opt-in option was measured) are left out: they time another method than
    the cells', and they would be read as the newest version (Tables 5-6 hiva MOSPL, 2026-11-27)."""
    path = path if path is not None else repo_root() / RETIMED_FILE
    if not path.is_file():
        return
    frame = pd.read_csv(path)
    if "code_version" in frame:
        frame = frame[frame["code_version"].astype(str).str.count(r"\+") <= 1]
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


def recorded_seconds(seeds: pd.DataFrame) -> pd.Series:
    """The seconds each seed's row records: ``cpu_s`` where it has them, else ``time_s`` (what a
    re-timing is compared with, :func:`current_retimings`, and what ``retime_cells`` stores as the
    seed's committed seconds)."""
    wall = pd.to_numeric(seeds["time_s"], errors="coerce")
    return wall if "cpu_s" not in seeds else pd.to_numeric(seeds["cpu_s"], errors="coerce").fillna(wall)


def todays_seconds(rows: pd.DataFrame, seeds: pd.DataFrame, since: int | None) -> float:
    """Seconds of one run of a cell with today's code: the mean over its seeds of each seed's seconds on
    today's code, for the seeds that have such an estimate.

    * a re-timed seed: its re-timing (median per seed);
    * a seed made by the code version of re-timed seeds: its committed seconds times that version's
      ratio, sum of the re-timings / sum of their committed seconds (a ratio estimator: the seeds of
      one cell differ in cost far more than a code change moves one seed, and a seed's committed
      seconds and its re-timing pair the version's speed and its machine's load with today's);
    * a seed made by code no older than the re-timing's (``since``, :func:`retimed_at`; git's commit
      times): its own seconds (CPU where the row records them);
    * any other seed is left out: older code, measured on a machine whose load no re-timing paired.

    Without the versions or the commits' times, the median of the re-timings.  Before 2026-11-30 the
    seeds of a re-timed version were left out too, and a cell re-timed on one seed was priced at that
    seed's seconds: Table 3's hiva GAGA cell at 313 CPU-s a run from seed 0 (the only seed of its
    version), whose other 19 seeds took 26-365 CPU-s, 186 on average.
    """
    fallback = float(rows["cpu_s"].median())
    if "code_version" not in seeds or not len(seeds) or not commits.commit_times() or since is None:
        return fallback
    again = rows.groupby("seed")["cpu_s"].median()
    own = recorded_seconds(seeds)
    version = seeds["code_version"]
    timed = [s for s in again.index if s in version.index]  # re-timed seeds with a committed measure
    ratio: dict[object, float] = {}
    if "committed_s" in rows:
        committed = rows.groupby("seed")["committed_s"].median()
        for v in {version[s] for s in timed}:
            same = [s for s in timed if version[s] == v]
            den = float(committed[same].sum())
            if den > 0:
                ratio[v] = float(again[same].sum()) / den
    per = [float(sec) for sec in again]
    for s in seeds.index:
        if s in again.index or not np.isfinite(own[s]):
            continue
        if version[s] in ratio:
            per.append(float(own[s]) * ratio[version[s]])
        elif (made := commits.made_at(version[s])) is not None and made >= since:
            per.append(float(own[s]))
    return float(np.mean(per))


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
