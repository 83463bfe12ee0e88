"""Claims that are right (issue 58): "better" decided per line, honest blocks, what a test rests on.

Every expected number is computed here independently from the values the test writes (numpy,
the rank formulas written out, exact enumeration), never copied from the code under test.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixed_rows import CANDIDATES, md_row, mixed_table
from spl_bench.report import blocks, direction
from spl_bench.report import compare as cmp
from spl_bench.report import significance as sig
from spl_bench.report.bands import agreement, within
from spl_bench.report.coverage import coverage
from spl_bench.report.findings import findings_markdown
from spl_bench.report.page import write_table
from spl_bench.report.paper import load_paper


def test_the_counts_of_the_page_are_counts_of_significance_csv(tmp_path):
    mixed_table(tmp_path, seed=3)
    comp = cmp.compare_table("2", tmp_path)
    t = comp.significance
    page = findings_markdown([comp], coverage([comp]))
    for sel, label in (("validation", "honest: age on a validation split"),
                       ("test", "same fits, age on the test split (favours more candidates)")):  # fmt: skip
        for a, b in (("gaga", "acs"), ("gaga", "mospl"), ("acs", "original")):
            rows = t[(t["selection"] == sel) & t["pooled"] & (((t["method_a"] == a) & (t["method_b"] == b))
                                                              | ((t["method_a"] == b) & (t["method_b"] == a)))]
            rec = md_row(page, label, a.upper().replace("ORIGINAL", "Original"), b.upper().replace("ORIGINAL",
                                                                                                   "Original"))
            assert int(rec["A significantly better"]) == int((rows["significant"] & (rows["better"] == a)).sum())
            assert int(rec["B significantly better"]) == int((rows["significant"] & (rows["better"] == b)).sum())


def test_significance_csv_says_what_each_test_rests_on():
    rng = np.random.default_rng(2)
    n = 20
    a = np.round(rng.normal(size=n), 1)
    b = a.copy()
    b[:5] = a[:5] - np.array([0.5, 0.6, 0.7, 0.8, 0.9])  # five distinct positive differences, fifteen zeros
    frame = pd.DataFrame([{"line": "x", "method": m, "seed": k, "value": v[k], "higher_is_better": False}
                          for m, v in (("a", a), ("b", b)) for k in range(n)])  # fmt: skip
    (r,) = sig.paired_tests(frame, ["line"], ["a", "b"]).itertuples()
    d = a - b
    assert r.n_pairs == n and r.n_nonzero == int(np.sum(d != 0)) == 5
    assert r.median_diff == pytest.approx(float(np.median(d))) and r.mean_diff == pytest.approx(float(np.mean(d)))
    assert r.rank_biserial == pytest.approx(1.0)  # every non-zero difference positive
    assert r.p_method == sig.P_NORMAL  # zeros, n = 20 > 13: scipy's normal approximation
    z = (15 - 5 * 6 / 4) / np.sqrt(5 * 6 * 11 / 24)  # signed-rank z of five positive ranks 1..5
    from scipy.stats import norm

    assert r.p_value == pytest.approx(2 * norm.sf(z), rel=1e-9) and r.p_holm < sig.ALPHA
    assert not r.significant and r.note == sig.FEW_NONZERO  # p < 0.05 on 5 differences: no mark
    assert r.better == "b"  # a − b > 0 on an error: b is better
    assert r.share_a_not_worse == pytest.approx(15 / 20) and r.share_b_not_worse == pytest.approx(1.0)


def _rank_biserial_by_hand(d: np.ndarray) -> float:
    nz = d[d != 0]
    ranks = pd.Series(np.abs(nz)).rank().to_numpy()
    return float((ranks[nz > 0].sum() - ranks[nz < 0].sum()) / ranks.sum())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 30), digits=st.integers(0, 2))
def test_the_recorded_p_method_is_scipys_own_choice(seed, n, digits):
    """Rounded differences have ties and zeros: the p-value under the recorded method equals scipy's
    default (``method="auto"``), and the effect sizes match a computation by hand."""
    from scipy.stats import wilcoxon

    d = np.round(np.random.default_rng(seed).normal(0.2, 1.0, n), digits)
    if not np.any(d):
        return
    frame = pd.DataFrame([{"line": "x", "method": m, "seed": k, "value": v, "higher_is_better": True}
                          for k in range(n) for m, v in (("a", d[k]), ("b", 0.0))])  # fmt: skip
    (r,) = sig.paired_tests(frame, ["line"], ["a", "b"]).itertuples()
    assert r.p_value == pytest.approx(float(wilcoxon(d).pvalue), rel=1e-9)
    zeros, nonzero = int(np.sum(d == 0)), d[d != 0]
    ties = len(np.unique(np.abs(nonzero))) < len(nonzero)
    assert (r.p_method == sig.P_EXACT) == (not zeros and not ties)
    assert r.n_nonzero == len(nonzero) and r.rank_biserial == pytest.approx(_rank_biserial_by_hand(d))


def test_an_exact_p_value_is_the_enumeration():
    d = np.array([0.3, -0.1, 0.7, 1.1, 0.45, 0.9, -0.25])
    ranks = pd.Series(np.abs(d)).rank().to_numpy()
    t_plus = ranks[d > 0].sum()
    null = [sum(r for r, s in zip(ranks, signs, strict=True) if s) for signs in itertools.product([0, 1], repeat=7)]
    mean = 7 * 8 / 4
    p = float(np.mean(np.abs(np.array(null) - mean) >= abs(t_plus - mean) - 1e-9))
    frame = pd.DataFrame([{"line": "x", "method": m, "seed": k, "value": v}
                          for k in range(7) for m, v in (("a", d[k]), ("b", 0.0))])  # fmt: skip
    (r,) = sig.paired_tests(frame, ["line"], ["a", "b"]).itertuples()
    assert r.p_method == sig.P_EXACT and r.p_value == pytest.approx(p, rel=1e-12)
    assert r.better == "" and not r.significant  # no direction given: no better method, no mark


def test_one_function_decides_the_direction():
    assert direction.higher_is_better("accuracy") and not direction.higher_is_better("generalization_error")
    assert not direction.higher_is_better("test_error") and not direction.higher_is_better("selection_gen_error")
    with pytest.raises(ValueError, match="unknown metric"):
        direction.higher_is_better("bananas")
    from spl_bench.report import lines

    assert lines.higher_better is direction.higher_is_better


def test_cadata_and_houses_are_one_data_set_and_count_once():
    assert blocks.data_identity("cadata") == blocks.data_identity("houses") != blocks.data_identity("music")
    pap = load_paper("gaga", 3)
    pap["noise_rate"] = pd.to_numeric(pap["noise_rate"], errors="coerce").fillna(0.0)
    frame = blocks.line_frame(cmp.paper_lines(pap, 3))
    left = frame[~frame["pooled"]]
    assert list(left["row"]) == ["houses†"] and "cadata†" in left["pooled_note"].iloc[0]
    assert not blocks.is_sweep(frame)


@pytest.mark.parametrize("key", ["9", "10", "13", "16"])
def test_sweeps_have_no_test_across_their_points(tmp_path, key):
    comp = cmp.compare_table(key, tmp_path)  # no rows: the paper's lines alone
    assert blocks.is_sweep(comp.lines) and not comp.lines["pooled"].any()
    assert comp.ranks == {}
    md = write_table(comp, tmp_path / "out", figures=False)[0].read_text()
    assert "A sweep, not a set of data sets" in md and "Friedman test over" not in md


def test_friedman_ranks_means_over_the_shared_seeds_and_draws_bars_only_when_it_rejects(tmp_path):
    rng = np.random.default_rng(7)
    rows = []
    for line in range(5):
        base = rng.normal(size=6)
        for m, shift in (("a", 0.0), ("b", 0.01), ("c", 0.02)):
            seeds = range(9) if m == "a" else range(6)  # a has three extra seeds, far better
            for s in seeds:
                v = base[s] + shift if s < 6 else -100.0
                rows.append({"row": f"r{line}", "noise_rate": 0.3, "param": "", "selection": "validation",
                             "method": m, "seed": s, "value": v, "higher_is_better": False})  # fmt: skip
    values = pd.DataFrame(rows)
    frame = pd.DataFrame({"row": [f"r{i}" for i in range(5)], "noise_rate": 0.3, "param": "",
                          "dataset": [f"d{i}" for i in range(5)]})  # fmt: skip
    frame = blocks.line_frame(frame)
    means, higher, notes = blocks.line_means(values, frame)
    shared = values[values["seed"] < 6].groupby(["row", "method"])["value"].mean().unstack()
    np.testing.assert_allclose(means.to_numpy(), shared.to_numpy())
    assert not higher.any() and "6 of 9" in notes[0]
    rt = blocks.rank_tests(values, frame, ["validation"])["validation"]
    assert list(rt.ranks.sort_values().index) == ["a", "b", "c"] and rt.rejected  # 5 of 5 lines a < b < c
    assert rt.nemenyi.shape == (3, 3)
    flat = sig.rank_test(pd.DataFrame(rng.normal(size=(4, 3)), columns=list("xyz")), False)
    if not flat.rejected:
        assert flat.nemenyi.empty and "no bars" in flat.summary()
    sig.cd_figure({"validation": rt, "flat": flat}, "T", tmp_path / "cd.png")
    assert (tmp_path / "cd.png").stat().st_size > 0


def test_band_edges_are_compared_at_a_relative_tolerance():
    z = (0.52 - 0.5) / 0.01  # 2 in exact arithmetic; a few ulps beyond in floating point
    assert abs(z) > 2.0 and agreement(z) == "within 2 stds" and agreement(-2.0000000000000018) == "within 2 stds"
    assert agreement(2.0 * (1 + 1e-6)) == "within 3 stds" and agreement(3.0 + 1e-6) == "beyond 3 stds"
    assert bool(within(1.0 + 1e-12, 1.0)) and not bool(within(1.0 + 1e-6, 1.0))


def test_candidates_per_run_reach_the_tables_and_the_selection_bias_is_measured(tmp_path):
    lines = mixed_table(tmp_path, seed=5)
    comp = cmp.compare_table("2", tmp_path)
    val = comp.cells[(comp.cells["selection"] == "test") & (comp.cells["runs"] > 0)]
    assert dict(zip(val["method"], val["candidates"], strict=False)) == CANDIDATES
    t = comp.significance
    pair = t[(t["selection"] == "test") & (t["method_a"] == "original") & (t["method_b"] == "mospl")]
    by_hand = []
    for row, vals in lines.items():
        better = vals["mospl"] >= vals["original"] if row == "mfeat-pixel†" else vals["mospl"] <= vals["original"]
        by_hand.append(float(np.mean(better)))
    np.testing.assert_allclose(sorted(pair["share_b_not_worse"]), sorted(by_hand))
    page = findings_markdown([comp], coverage([comp]))
    assert "| MOSPL | Original | 150 against 1 | 100% of 16 seeds | 100% of 16 seeds |" in page
