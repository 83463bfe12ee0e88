"""Committed-style rows of a GAGA Table 2 that mixes an accuracy line with an error line, for the
report's tests (tests/test_mixed_metrics.py, tests/test_report_claims.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from spl_bench.rowfiles import write_row_file

METHODS = ["original", "acs", "mospl", "gaga"]
#: candidates per run written into the rows' info (as the runner records them)
CANDIDATES = {"original": 1, "acs": 40, "mospl": 150, "gaga": 3000}


def write_line(root, dataset: str, noise: str, metric: str, params: dict, values: dict[str, list[float]],
                tag: str) -> None:  # fmt: skip
    """Committed-style rows of one line of GAGA Table 2 under ``root/gaga_table2`` (validation value
    ``values[m][k]``; test-selected value the same)."""
    base = root / "gaga_table2"
    base.mkdir(parents=True, exist_ok=True)
    index = base / "index.csv"
    entries = pd.read_csv(index).to_dict("records") if index.is_file() else []
    for method, vals in values.items():
        cell = f"table_row={tag},method={method}"
        rows = []
        for seed, v in enumerate(vals):
            info = json.dumps({"value_test_selected": v, "n_candidates": CANDIDATES[method]})
            common = {"experiment": "gaga_table2", "dataset": dataset, "noise": noise, "method": method,
                      "model": "m", "sp": "linear", "selection": "validation", "params": json.dumps({"model": params}),
                      "seed": seed, "lam": 1.0, "time_s": 0.1, "n_restarts": np.nan, "info": info,
                      "config_hash": "abc"}  # fmt: skip
            rows += [{**common, "metric": metric, "value": v},
                     {**common, "metric": f"selection_{metric}", "value": 9.0}]
        write_row_file(pd.DataFrame(rows), base / f"{cell}__abc.csv")
        entries.append({"cell": cell, "overrides": "", "config_hash": "abc", "file": f"{cell}__abc.csv"})
    pd.DataFrame(entries).to_csv(index, index=False)


def mixed_table(root, n: int = 8, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """One accuracy line (mfeat-pixel†) and one error line (music†); on both GAGA is the best, then
    MOSPL, ACS, Original, each by a clear margin on every seed."""
    rng = np.random.default_rng(seed)
    acc_base, err_base = 0.9 + 0.005 * rng.normal(size=n), 0.3 + 0.01 * rng.normal(size=n)
    steps = {"gaga": 0.0, "mospl": 0.01, "acs": 0.02, "original": 0.03}
    jitter = {m: 0.001 * rng.random(n) for m in METHODS}
    acc = {m: acc_base - steps[m] - jitter[m] for m in METHODS}  # higher is better
    err = {m: err_base + steps[m] + jitter[m] for m in METHODS}  # lower is better
    write_line(root, "mfeat_pixel", "uniform_flip@0.3", "accuracy", {"C": 1.0},
                {m: list(v) for m, v in acc.items()}, "t2_mfeat_n30")
    write_line(root, "music", "target_gaussian@0.3", "gen_error", {"alpha": 0.005},
                {m: list(v) for m, v in err.items()}, "t2_music_n30")
    return {"mfeat-pixel†": acc, "music†": err}


def expected_ranks(lines: dict[str, dict[str, np.ndarray]], higher: dict[str, bool]) -> pd.Series:
    """Mean rank per method (1 = best) with each line ranked in its own direction, by sorting."""
    total = dict.fromkeys(METHODS, 0.0)
    for row, vals in lines.items():
        means = {m: float(np.mean(v)) for m, v in vals.items()}
        order = sorted(means, key=means.get, reverse=higher[row])
        for r, m in enumerate(order, start=1):
            total[m] += r
    return pd.Series({m: t / len(lines) for m, t in total.items()})


def md_row(page: str, protocol: str, a: str, b: str) -> dict[str, str]:
    """The row of a Markdown table of ``page`` for protocol / A / B, keyed by the table's header."""
    lines = page.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:3] == [protocol, a, b]:
            j = i
            while not lines[j - 1].startswith("|---"):
                j -= 1
            header = [c.strip() for c in lines[j - 2].strip("|").split("|")]
            return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no row {protocol} / {a} / {b}")
