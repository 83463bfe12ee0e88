"""Paired significance within a row and ranks across rows, against independent computations."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_rows import fake_table2_rows
from spl_bench.report import compare as cmp
from spl_bench.report import significance as sig
from spl_bench.report.coverage import coverage
from spl_bench.report.page import row_summary, write_table


def _exact_signed_rank_p(d: np.ndarray) -> float:
    """Two-sided p of the signed-rank statistic by enumerating all 2^n sign patterns (no zeros, no ties)."""
    ranks = pd.Series(np.abs(d)).rank().to_numpy()
    t_plus = ranks[d > 0].sum()
    n = len(d)
    mean = n * (n + 1) / 4
    null = np.array([sum(r for r, s in zip(ranks, signs, strict=True) if s)
                     for signs in itertools.product([0, 1], repeat=n)])  # fmt: skip
    return float(np.mean(np.abs(null - mean) >= abs(t_plus - mean) - 1e-9))


def _holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment written out: sorted p_(i) * (m - i), running maximum, capped at 1."""
    m = len(p)
    order = np.argsort(p)
    adj = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, (m - i) * p[j])
        adj[j] = min(1.0, running)
    return adj.tolist()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 11))
def test_paired_tests_match_an_exact_enumeration_and_holm(seed, n):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    # continuous shifts: no zero differences and no tied |differences| (almost surely)
    vals = {"a": base, "b": base + rng.normal(0.3, 1.0, n), "c": base + rng.normal(-0.2, 1.0, n)}
    frame = pd.DataFrame([{"line": "x", "method": m, "seed": k, "value": v[k]} for m, v in vals.items()
                          for k in range(n)])  # fmt: skip
    out = sig.paired_tests(frame, ["line"], ["a", "b", "c"])
    assert list(zip(out.method_a, out.method_b, strict=True)) == [("a", "b"), ("a", "c"), ("b", "c")]
    expected = [_exact_signed_rank_p(vals[a] - vals[b]) for a, b in zip(out.method_a, out.method_b, strict=True)]
    np.testing.assert_allclose(out.p_value, expected, rtol=1e-9)  # both exact: agree to rounding
    np.testing.assert_allclose(out.p_holm, _holm(expected), rtol=1e-9)
    np.testing.assert_allclose(out.mean_diff, [np.mean(vals[a] - vals[b]) for a, b in
                                               zip(out.method_a, out.method_b, strict=True)], rtol=1e-12)  # fmt: skip
    assert (out.n_pairs == n).all() and (out.note == "").all()


def test_only_shared_seeds_are_paired_and_too_few_give_no_p_value():
    rows = [{"line": "x", "method": "a", "seed": k, "value": float(k)} for k in range(8)]
    rows += [{"line": "x", "method": "b", "seed": k, "value": k + 1.0 + 0.1 * k} for k in range(2, 8)]  # 6 shared
    rows += [{"line": "x", "method": "c", "seed": k, "value": float(k)} for k in range(5)]  # 5 with a, 3 with b
    out = sig.paired_tests(pd.DataFrame(rows), ["line"]).set_index(["method_a", "method_b"])
    assert out.loc[("a", "b"), "n_pairs"] == 6 and np.isfinite(out.loc[("a", "b"), "p_value"])
    assert out.loc[("a", "b"), "p_value"] == pytest.approx(2 / 2**6)  # all six differences negative
    assert out.loc[("a", "c"), "note"] == sig.TOO_FEW and np.isnan(out.loc[("a", "c"), "p_value"])
    assert out.loc[("b", "c"), "n_pairs"] == 3
    # the Holm family of the line is the one tested pair: p_holm = p
    assert out.loc[("a", "b"), "p_holm"] == pytest.approx(out.loc[("a", "b"), "p_value"])
    same = pd.DataFrame([{"line": "y", "method": m, "seed": k, "value": 1.0} for m in "ab" for k in range(7)])
    (r,) = sig.paired_tests(same, ["line"]).itertuples()
    assert r.p_value == 1.0 and r.note == sig.IDENTICAL


def test_friedman_statistic_and_ranks_match_the_formula():
    rng = np.random.default_rng(4)
    means = pd.DataFrame(rng.normal(size=(9, 4)), columns=["w", "x", "y", "z"])
    means["w"] -= 1.0  # w has the lowest error: rank 1 most often
    rt = sig.rank_test(means, higher_better=False)
    ranks = means.rank(axis=1)
    n, k = means.shape
    chi2 = 12 * n / (k * (k + 1)) * ((ranks.mean() - (k + 1) / 2) ** 2).sum()  # Demšar (2006), eq. 3, no ties
    assert rt.statistic == pytest.approx(chi2, rel=1e-12) and rt.n_lines == 9
    pd.testing.assert_series_equal(rt.ranks, ranks.mean(), check_names=False)
    higher = sig.rank_test(means, higher_better=True)
    pd.testing.assert_series_equal(higher.ranks, (k + 1) - ranks.mean(), check_names=False)
    # Nemenyi only where the Friedman test rejects
    assert rt.nemenyi.shape == ((4, 4) if rt.p_value < sig.ALPHA else (0, 0)) and rt.rejected == (rt.p_value < 0.05)
    clear = sig.rank_test(means.assign(w=means["w"] - 10.0, x=means["x"] - 5.0), higher_better=False)
    assert clear.rejected and clear.nemenyi.shape == (4, 4) and np.allclose(np.diag(clear.nemenyi), 1.0)
    two = sig.rank_test(means[["w", "x"]], False)  # two methods: the Wilcoxon test of the row means
    assert two.test == "wilcoxon" and two.p_value == pytest.approx(_exact_signed_rank_p((means.w - means.x).to_numpy()))
    assert two.nemenyi.loc["w", "x"] == two.p_value and "Wilcoxon" in two.summary()
    assert sig.rank_test(means.iloc[:1], False) is None


def test_a_clear_winner_is_marked_and_the_csv_has_the_issue_columns(tmp_path):
    rng = np.random.default_rng(0)
    base = 0.3 + 0.01 * rng.normal(size=8)
    vals = {"original": list(base + 0.05), "acs": list(base + 0.02 + 0.001 * rng.normal(size=8)),
            "mospl": list(base + 0.03), "gaga": list(base)}  # fmt: skip
    fake_table2_rows(tmp_path, vals, {m: [x + 0.5 for x in v] for m, v in vals.items()})
    comp = cmp.compare_table("2", tmp_path)
    tests = comp.significance
    assert list(tests.columns) == ["row", "noise_rate", "param", "selection", "method_a", "method_b",
                                   "higher_is_better", "n_pairs", "n_nonzero", "mean_diff", "median_diff",
                                   "rank_biserial", "share_a_not_worse", "share_b_not_worse", "statistic", "p_value",
                                   "p_method", "p_holm", "better", "significant", "pooled", "note"]  # fmt: skip
    music = tests[(tests["row"] == "music†") & (tests["selection"] == "validation")].set_index(["method_a", "method_b"])
    assert len(music) == 6 and (music["n_pairs"] == 8).all()
    # gaga is below acs on every seed: p = 2 / 2^8 before Holm's factor (6 pairs, all at that p)
    assert music.loc[("acs", "gaga"), "p_value"] == pytest.approx(2 / 256)
    assert music.loc[("acs", "gaga"), "mean_diff"] == pytest.approx(np.mean([0.02] * 8), abs=2e-3)
    line = row_summary(comp.cells, "validation", tests[tests["selection"] == "validation"]).set_index("row")
    assert line.loc["music†", "gaga"].startswith("**") and "▲" in line.loc["music†", "gaga"]
    assert "▲" not in line.loc["music†", "acs"]
    # the test selection of the same fits: every value + 0.5, the same differences and tests
    test_sel = tests[(tests["row"] == "music†") & (tests["selection"] == "test")]
    np.testing.assert_allclose(test_sel["p_value"], music["p_value"], rtol=1e-12)
    out = write_table(comp, tmp_path / "out", figures=True)
    assert (tmp_path / "out" / "gaga_table2" / "significance.csv") in out
    assert "Wilcoxon signed-rank" in (tmp_path / "out" / "gaga_table2" / "comparison.md").read_text()


def test_two_close_methods_are_not_marked(tmp_path):
    rng = np.random.default_rng(1)
    base = 0.3 + 0.01 * rng.normal(size=8)
    vals = {"acs": list(base + 0.001 * rng.normal(size=8)), "gaga": list(base + 0.001 * rng.normal(size=8))}
    fake_table2_rows(tmp_path, vals, vals)
    comp = cmp.compare_table("2", tmp_path)
    line = row_summary(comp.cells, "validation", comp.significance).set_index("row")
    assert "▲" not in "".join(line.loc["music†"].astype(str))


def test_findings_count_the_lines_and_their_significant_winners(tmp_path):
    from spl_bench.report.findings import findings_markdown

    rng = np.random.default_rng(0)
    base = 0.3 + 0.01 * rng.normal(size=8)
    vals = {"original": list(base + 0.05), "acs": list(base + 0.02), "mospl": list(base + 0.0001 * rng.normal(size=8)),
            "gaga": list(base)}  # fmt: skip
    fake_table2_rows(tmp_path, vals, vals)
    comp = cmp.compare_table("2", tmp_path)
    page = findings_markdown([comp], coverage([comp]))
    # music† is a regression line (lower is better): GAGA below ACS on all 8 seeds; MOSPL within noise of GAGA
    assert "| honest: age on a validation split | GAGA | ACS | 1 | 1 | 1 | 1 | 0 |" in page
    assert "| honest: age on a validation split | GAGA | MOSPL | 1 |" in page
    assert "| honest: age on a validation split | ACS | Original | 1 | 1 | 1 | 1 | 0 |" in page
    assert "| authors' whole protocol" not in page  # no rows of that variant: no line of it


_CD_SCRIPT = """
import sys
import numpy as np, pandas as pd
from pathlib import Path
from spl_bench.report import significance as sig
rng = np.random.default_rng(5)
means = pd.DataFrame(rng.normal(size=(12, 6)) + 0.25 * np.arange(6), columns=list("abcdef"))
sig.cd_figure({"validation": sig.rank_test(means, higher_better=False)}, "T", Path(sys.argv[1]))
"""


def test_the_critical_difference_figure_has_the_same_bytes_whatever_the_hash_seed(tmp_path):
    """Two processes with differently salted string hashes draw the same PNG (scikit-posthocs draws
    its crossbars through sets of method names; several crossbars overlap in these ranks)."""
    import os
    import subprocess
    import sys

    out = []
    for seed in ("0", "1", "2"):
        png = tmp_path / f"cd_{seed}.png"
        env = {**os.environ, "PYTHONHASHSEED": seed, "MPLBACKEND": "Agg"}
        subprocess.run([sys.executable, "-c", _CD_SCRIPT, str(png)], check=True, env=env)
        out.append(png.read_bytes())
    assert out[0] == out[1] == out[2]
