"""The committed smoke results do not drift: rerun the same cases and compare."""

from __future__ import annotations

import pandas as pd
import pytest

from spl_bench.paths import repo_root
from spl_bench.report.drift import compare, reference_rows_like
from spl_bench.runner.smoke import SMOKE_CASES, run_smoke

#: cases that take over ~20 s on 2 busy cores (GAGA's music path ~160 s, the outlier path ~30 s,
#: pendigits ACS ~25 s): reproduction checks, run by ``make test-slow``; the rest stay in the default suite
SLOW_CASES = ("method=gaga", "method=outlier_path", "+table_row=t5_pendigits_n20")


def _case(c: list[str]):
    marks = [pytest.mark.slow] if any(tok in c for tok in SLOW_CASES) else []
    return pytest.param(c, id="-".join(c[1:3]), marks=marks)


@pytest.mark.parametrize("case", [_case(c) for c in SMOKE_CASES])
def test_reported_numbers_do_not_drift(tmp_path, data_dir, case):
    reference = pd.read_csv(repo_root() / "results" / "reference" / "smoke.csv")
    fresh = run_smoke(tmp_path, [case])
    expected = reference_rows_like(reference, fresh)
    assert len(expected) == len(fresh) > 0, "the reference has no rows for this case: regenerate it"
    problems = compare(expected, fresh)
    assert not problems, "\n".join(problems[:20])


def test_compare_detects_drift():
    ref = pd.DataFrame({"experiment": ["e"], "dataset": ["d"], "noise": ["n"], "method": ["m"], "model": ["x"],
                        "sp": ["s"], "selection": ["v"], "seed": [0], "metric": ["acc"], "value": [0.5],
                        "lam": [1.0]})  # fmt: skip
    assert compare(ref, ref.copy()) == []
    moved = ref.assign(value=0.5 + 1e-3)
    assert any("value drifted" in p for p in compare(ref, moved))
    assert any("only in" in p for p in compare(ref, ref.assign(seed=1)))
