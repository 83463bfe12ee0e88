"""A table mixing an accuracy line with an error line (GAGA Tables 2-3 do): ranks, winners and the
findings' counts must take each line's own direction (issue 58).  Only the report's long-standing
entry points are used, so the test runs against the code before the fix too (and fails there).

The expected numbers are computed here from the values written, by sorting and the rank formula.
"""

from __future__ import annotations

import pandas as pd
import pytest

from mixed_rows import METHODS, expected_ranks, md_row, mixed_table
from spl_bench.report import compare as cmp
from spl_bench.report.coverage import coverage
from spl_bench.report.findings import findings_markdown
from spl_bench.report.page import row_summary


def test_mixed_metrics_are_ranked_won_and_counted_per_line(tmp_path):
    """One accuracy line and one error line: every comparison asks each line's own direction."""
    lines = mixed_table(tmp_path)
    comp = cmp.compare_table("2", tmp_path)
    higher = {"mfeat-pixel†": True, "music†": False}
    # ranks: GAGA best on both lines, so 1.0; Original worst on both, 4.0
    rt = comp.ranks["validation"]
    expected = expected_ranks(lines, higher)
    pd.testing.assert_series_equal(rt.ranks.sort_index(), expected.sort_index(), check_names=False)
    k, n = len(METHODS), len(lines)
    chi2 = 12 * n / (k * (k + 1)) * ((expected - (k + 1) / 2) ** 2).sum()  # Demšar (2006), eq. 3, no ties
    assert rt.statistic == pytest.approx(chi2, rel=1e-12)
    # winners: the bold best mean of each line is GAGA's, marked ▲ (GAGA ahead of MOSPL on all 8 seeds)
    table = row_summary(comp.cells, "validation", comp.significance[comp.significance["selection"] == "validation"])
    for row in lines:
        rec = table.set_index("row").loc[row]
        assert rec["gaga"].startswith("**") and "▲" in rec["gaga"]
        assert not any(str(rec[m]).startswith("**") for m in ("original", "acs", "mospl"))
        assert rec["paper order holds"] == "yes"
    # the findings page: GAGA significantly better than ACS and than Original on both lines
    page = findings_markdown([comp], coverage([comp]))
    for b in ("ACS", "Original"):
        rec = md_row(page, "honest: age on a validation split", "GAGA", b)
        assert (rec["A significantly better"], rec["B significantly better"]) == ("2", "0")
        assert rec["A's mean better"] == "2"


