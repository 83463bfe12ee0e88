"""The committed smoke results do not drift: rerun the same cases and compare."""

from __future__ import annotations

import pandas as pd

from spl_bench.paths import repo_root
from spl_bench.report.drift import compare, run_smoke


def test_reported_numbers_do_not_drift(tmp_path, data_dir):
    reference = pd.read_csv(repo_root() / "results" / "reference" / "smoke.csv")
    fresh = run_smoke(tmp_path)
    problems = compare(reference, fresh)
    assert not problems, "\n".join(problems[:20])


def test_compare_detects_drift():
    ref = pd.DataFrame({"experiment": ["e"], "dataset": ["d"], "noise": ["n"], "method": ["m"], "model": ["x"],
                        "sp": ["s"], "selection": ["v"], "seed": [0], "metric": ["acc"], "value": [0.5],
                        "lam": [1.0]})  # fmt: skip
    assert compare(ref, ref.copy()) == []
    moved = ref.assign(value=0.5 + 1e-3)
    assert any("value drifted" in p for p in compare(ref, moved))
    assert any("only in" in p for p in compare(ref, ref.assign(seed=1)))
