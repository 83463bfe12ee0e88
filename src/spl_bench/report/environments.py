"""Which environments a table's rows came from, and the cells that pool several of them.

Every row carries the environment of the process that made it (``environment`` column, see
:mod:`spl_bench.environment`).  A report names the environments behind its rows (a footer), and
warns, listing them, when one cell pools rows of two different library keys (Python, numpy,
scipy, scikit-learn, numba, pandas, hydra-core) or of two BLAS kernel families (OpenBLAS's
SkylakeX, Haswell, ...: they round differently, and MOSPL's fronts move with them, see
docs/mospl.md).  That is a warning, not an error: the numbers of such a cell are still means over
runs of one configuration, but a reader comparing it with a rerun should know that the runs were
not all made with the same libraries.  Rows made before the column existed count as "not
recorded", and rows that do not record a kernel family have none to compare; neither makes a
cell mixed on their own.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from spl_bench.environment import NOT_RECORDED, kernel_family, library_key, parse
from spl_bench.report.markdown import to_markdown


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    env = frame["environment"] if "environment" in frame else pd.Series(None, index=frame.index, dtype=object)
    cpu = [((parse(t) or {}).get("cpu") or "") for t in env]
    return frame.assign(_lib=[library_key(t) for t in env], _cpu=cpu,
                        _kernels=[kernel_family(t) or "" for t in env])


def _runs(part: pd.DataFrame, cell_keys: Sequence[str]) -> int:
    keys = [k for k in (*cell_keys, "seed") if k in part]
    return len(part[keys].drop_duplicates()) if keys else len(part)


def environment_table(frame: pd.DataFrame, cell_keys: Sequence[str]) -> pd.DataFrame:
    """One line per library key: the runs made under it, the CPUs they ran on and the BLAS kernel
    families they recorded."""
    if frame.empty:
        return pd.DataFrame(columns=["environment", "CPU", "BLAS kernels", "runs"])
    work = _keyed(frame)
    out = []
    for lib, part in work.groupby("_lib", sort=True):
        cpus = sorted({c for c in part["_cpu"] if c})
        kernels = sorted({k for k in part["_kernels"] if k})
        out.append({"environment": lib, "CPU": "; ".join(cpus) or "–", "BLAS kernels": ", ".join(kernels) or "–",
                    "runs": _runs(part, cell_keys)})
    out.sort(key=lambda r: (r["environment"] == NOT_RECORDED, -r["runs"]))
    return pd.DataFrame(out)


def mixed_cells(frame: pd.DataFrame, cell_keys: Sequence[str]) -> list[str]:
    """One line per cell whose recorded rows come from two or more library keys, or from two or
    more BLAS kernel families among the rows that record one, naming each."""
    if frame.empty:
        return []
    keys = [k for k in cell_keys if k in frame]
    work = _keyed(frame)
    work = work[work["_lib"] != NOT_RECORDED]
    lines = []
    for cell, part in work.groupby(keys, sort=True, dropna=False) if keys else []:
        libs = part.groupby("_lib", sort=True)
        families = part[part["_kernels"] != ""].groupby("_kernels", sort=True)
        each = []
        if libs.ngroups >= 2:
            each += [f"{lib} ({_runs(p, keys)} runs)" for lib, p in libs]
        if families.ngroups >= 2:
            each += [f"BLAS kernels {fam} ({_runs(p, keys)} runs)" for fam, p in families]
        if each:
            name = ", ".join(str(v) for v in (cell if isinstance(cell, tuple) else (cell,)))
            lines.append(f"{name}: {'; '.join(each)}")
    return lines


def footer(frame: pd.DataFrame, cell_keys: Sequence[str]) -> str:
    """Markdown: the environments of the rows, then a warning listing any cell that pools several."""
    env = environment_table(frame, cell_keys)
    if env.empty:
        return ""
    text = ("\n## Environments\n\nThe environments the rows above were made in (Python, libraries, BLAS; "
            f"`{NOT_RECORDED}`: rows written before runs recorded their environment):\n\n")  # fmt: skip
    text += to_markdown(env)
    mixed = mixed_cells(frame, cell_keys)
    if mixed:
        text += (f"\n**Warning:** {len(mixed)} cell{'s' * (len(mixed) != 1)} pool rows made under different "
                 "library versions or BLAS kernel families:\n\n" + "".join(f"- {m}\n" for m in mixed))  # fmt: skip
    return text
