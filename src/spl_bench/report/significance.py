"""Whether a difference between two methods is real: paired tests within a line, ranks across lines.

Runs are paired by seed: seed k of every method of a line uses the same split and the same noise,
so the difference of two methods on seed k is free of the split's and the noise's variation.

* **Within a line** (a data set at one noise rate and parameter), every pair of methods is
  compared by the Wilcoxon signed-rank test on the seeds both ran (``scipy.stats.wilcoxon``,
  two-sided, zero differences dropped: its defaults; differences below :data:`TIE_RTOL` of the
  values are ties, i.e. zeros).  Which null distribution gives the p-value
  is recorded (``p_method``): the exact one where the differences have no zeros and no ties
  (and n <= 50), all 2^n sign patterns where they have ties or zeros and n <= 13, else the normal
  approximation -- scipy's own choice under ``method="auto"``, made here explicitly so that it
  can be written down.  Beside the p-value, what it rests on: the number of non-zero differences
  and two effect sizes, the median paired difference and the matched-pairs rank-biserial
  correlation (Kerby 2014).  The p-values of a line's pairs are Holm-corrected together
  (``statsmodels.stats.multitest.multipletests(method="holm")``).  A pair is *significant* where
  p_holm < :data:`ALPHA` and at least :data:`MIN_PAIRS` differences are non-zero; fewer than
  :data:`MIN_PAIRS` shared seeds give no p-value at all ("too few runs": with 5 pairs the
  smallest two-sided p of the signed-rank test is 0.0625).
* **Across the lines of a table** (Demšar 2006): the Friedman test on the methods' means per
  line (two methods: the Wilcoxon signed-rank test of the line means, Demšar's section 3.1.3),
  each line ranked in its own metric's direction (:mod:`spl_bench.report.direction`); the
  Nemenyi post-hoc test (``scikit_posthocs.posthoc_nemenyi_friedman``) and its bars in the
  critical-difference diagram only where the Friedman test rejects at :data:`ALPHA`.  Which lines
  may be blocks of that test (distinct data sets or noise settings) is decided in
  :mod:`spl_bench.report.blocks`.
"""

from __future__ import annotations

import gc
import itertools
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

#: fewer shared seeds (or non-zero differences) than this: no p-value (no significant mark)
MIN_PAIRS = 6
#: level of the marks in the tables and of the critical-difference bars
ALPHA = 0.05
TOO_FEW = "too few runs"
IDENTICAL = "identical on every shared seed"
FEW_NONZERO = f"fewer than {MIN_PAIRS} non-zero differences: not marked significant"
#: ``p_method`` values: which null distribution gave the p-value
P_EXACT = "exact"
P_SIGN_PATTERNS = "exact over all sign patterns (ties or zeros)"
P_NORMAL = "normal approximation"
#: scipy's limits for its exact distributions under ``method="auto"``
EXACT_MAX_N = 50
PERMUTATION_MAX_N = 13

#: the columns of ``significance.csv``: the line, the pair, what the test rests on, the test
COLUMNS = ["row", "noise_rate", "param", "selection", "method_a", "method_b", "higher_is_better", "n_pairs",
           "n_nonzero", "mean_diff", "median_diff", "rank_biserial", "share_a_not_worse", "share_b_not_worse",
           "statistic", "p_value", "p_method", "p_holm", "better", "significant", "pooled", "note"]  # fmt: skip
#: the columns :func:`paired_tests` computes (``pooled`` is the report's: :mod:`spl_bench.report.blocks`)
TEST_COLUMNS = [c for c in COLUMNS[4:] if c != "pooled"]


def p_method(d: np.ndarray) -> str:
    """Which null distribution scipy's ``wilcoxon(method="auto")`` uses for the differences ``d``.

    ``n`` counts the zero differences too (scipy decides before dropping them); ties are equal
    absolute values among the non-zero differences.
    """
    d = np.asarray(d, dtype=float)
    nonzero = d[d != 0]
    zeros = len(d) - len(nonzero)
    ties = len(np.unique(np.abs(nonzero))) < len(nonzero)
    if len(d) > EXACT_MAX_N:
        return P_NORMAL
    if not (ties or zeros):
        return P_EXACT
    return P_SIGN_PATTERNS if len(d) <= PERMUTATION_MAX_N else P_NORMAL


def rank_biserial(d: np.ndarray) -> float:
    """Matched-pairs rank-biserial correlation of the differences ``d`` (Kerby 2014): the share of
    the signed-rank sum of the non-zero differences that is positive minus the share negative, in
    [-1, 1]; NaN without a non-zero difference."""
    from scipy.stats import rankdata

    d = np.asarray(d, dtype=float)
    nonzero = d[d != 0]
    if not len(nonzero):
        return float("nan")
    ranks = rankdata(np.abs(nonzero))
    return float((ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum())


def _wilcoxon(d: np.ndarray) -> tuple[float, float, str, str]:
    """(statistic, p, p_method, note) of the two-sided signed-rank test of the differences ``d``."""
    from scipy.stats import PermutationMethod, wilcoxon

    if len(d) < MIN_PAIRS:
        return np.nan, np.nan, "", TOO_FEW
    if np.all(d == 0):  # scipy drops zero differences and has nothing left: no evidence of a difference
        return np.nan, 1.0, "", IDENTICAL
    how = p_method(d)
    method = {P_EXACT: "exact", P_NORMAL: "asymptotic"}.get(how) or PermutationMethod()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = wilcoxon(d, method=method)
    note = FEW_NONZERO if np.count_nonzero(d) < MIN_PAIRS else ""
    return float(res.statistic), float(res.pvalue), how, note


#: paired differences within this of 0, relative to max(1, |a|, |b|), are ties (zero differences):
#: two computations of the same model (GAGA's path at an age by its dense output, accurate to
#: ``EngineOptions.dense_tol`` = 1e-7 of the values, and ACS's converged fit there) differ by
#: 1e-10 to 3e-8 in the metric, and a consistent sign of such differences is not a difference of
#: methods; an accuracy differs by at least 1 / n_test (>= 2e-4 here), and the smallest real
#: differences of the tables' errors are about 1e-5
TIE_RTOL = 1e-6


def paired_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` seed by seed, with numerical ties (:data:`TIE_RTOL`) set to exactly 0."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = a - b
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return np.where(np.abs(d) <= TIE_RTOL * scale, 0.0, d)


def _pair_record(a: np.ndarray, b: np.ndarray, higher: float) -> dict:
    """Everything :data:`TEST_COLUMNS` says about one pair but the Holm-corrected p-value."""
    d = paired_differences(a, b)
    stat, p, how, note = _wilcoxon(d)
    r = rank_biserial(d)
    known = np.isfinite(higher)
    share_a = float(np.mean(d >= 0 if higher else d <= 0)) if known and len(d) else np.nan
    share_b = float(np.mean(d <= 0 if higher else d >= 0)) if known and len(d) else np.nan
    return {"higher_is_better": bool(higher) if known else np.nan, "n_pairs": len(d),
            "n_nonzero": int(np.count_nonzero(d)), "mean_diff": float(d.mean()) if len(d) else np.nan,
            "median_diff": float(np.median(d)) if len(d) else np.nan, "rank_biserial": r,
            "share_a_not_worse": share_a, "share_b_not_worse": share_b, "statistic": stat, "p_value": p,
            "p_method": how, "p_holm": np.nan,
            "note": note, "_up": 0 if not np.isfinite(r) or r == 0 else (1 if r > 0 else -1)}  # fmt: skip


def paired_tests(values: pd.DataFrame, line_keys: Sequence[str], methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Every pair of methods of every line of ``values``, tested on the seeds both ran.

    Parameters
    ----------
    values : DataFrame
        One row per (line, method, seed): the columns ``line_keys``, ``method``, ``seed``, ``value``
        and, optionally, ``higher_is_better`` (the line's direction; without it no pair has a
        ``better`` method nor a ``significant`` mark).
    line_keys : sequence of str
        The columns that make one line (one family of the Holm correction).
    methods : sequence of str, optional
        The order of the methods (``method_a`` comes before ``method_b`` in it); default sorted.

    Returns
    -------
    DataFrame
        ``line_keys`` + :data:`TEST_COLUMNS`: the differences are a − b over the shared seeds;
        ``better`` is the method the signed ranks favour in the line's direction (empty where
        they are balanced); ``significant``: p_holm < ALPHA with at least MIN_PAIRS non-zero
        differences.
    """
    recs: list[dict] = []
    for key, grp in values.groupby(list(line_keys), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        wide = grp.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
        higher = float(grp["higher_is_better"].iloc[0]) if "higher_is_better" in grp else np.nan
        present = [m for m in (methods or sorted(wide.columns)) if m in wide.columns]
        line = []
        for a, b in itertools.combinations(present, 2):
            pair = wide[[a, b]].dropna()
            rec = _pair_record(pair[a].to_numpy(dtype=float), pair[b].to_numpy(dtype=float), higher)
            line.append({**dict(zip(line_keys, key, strict=True)), "method_a": a, "method_b": b, **rec})
        tested = [r for r in line if np.isfinite(r["p_value"])]
        if tested:
            adjusted = _holm([r["p_value"] for r in tested])
            for r, p in zip(tested, adjusted, strict=True):
                r["p_holm"] = float(p)
        for r in line:
            up = r.pop("_up")
            known = isinstance(r["higher_is_better"], bool)
            r["better"] = "" if not up or not known else (r["method_a"] if (up > 0) == r["higher_is_better"]
                                                          else r["method_b"])  # fmt: skip
            r["significant"] = bool(r["better"] and np.isfinite(r["p_holm"]) and r["p_holm"] < ALPHA
                                    and r["n_nonzero"] >= MIN_PAIRS)  # fmt: skip
        recs += line
    return pd.DataFrame(recs, columns=[*line_keys, *TEST_COLUMNS])


def _holm(pvals: list[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (``statsmodels.stats.multitest.multipletests``, ``"holm"``).

    statsmodels 0.15 ends its Holm branch with ``gc.collect()``: a full collection of the process's
    heap, about 84 ms a call in the report's process, 29 of the 95 s of writing every table (345
    lines).  The objects alive before the call are frozen (``gc.freeze``, left out of collections)
    for its duration; the p-values are the same."""
    from statsmodels.stats.multitest import multipletests

    gc.freeze()
    try:
        return multipletests(pvals, method="holm")[1]
    finally:
        gc.unfreeze()


def significantly_better(tests: pd.DataFrame, best: str, other: str) -> bool:
    """Whether the line's test of ``best`` against ``other`` is significant in ``best``'s favour."""
    hit = tests[((tests["method_a"] == best) & (tests["method_b"] == other))
                | ((tests["method_a"] == other) & (tests["method_b"] == best))]  # fmt: skip
    if hit.empty:
        return False
    r = hit.iloc[0]
    return bool(r["significant"]) and str(r["better"]) == best


@dataclass
class RankTest:
    """The Friedman test over a table's lines and, where it rejects, the Nemenyi post-hoc p-values."""

    n_lines: int
    statistic: float
    p_value: float
    ranks: pd.Series  # average rank per method, 1 = best
    nemenyi: pd.DataFrame  # pairwise p-values, methods x methods (two methods: the Wilcoxon p); empty if not run
    test: str = "friedman"  # "friedman" (3 or more methods) or "wilcoxon" (two methods)
    notes: list[str] = field(default_factory=list)  # what the blocks are (shared seeds, lines left out)

    @property
    def rejected(self) -> bool:
        """Whether the across-line test rejects "all methods rank alike" at :data:`ALPHA`."""
        return bool(np.isfinite(self.p_value) and self.p_value < ALPHA)

    def summary(self) -> str:
        ranks = ", ".join(f"{m} {r:.2f}" for m, r in self.ranks.sort_values().items())
        if self.test == "wilcoxon":
            head = (f"Two methods: Wilcoxon signed-rank test of their means over the {self.n_lines} lines where "
                    f"both ran (Demšar 2006, 3.1.3): W = {self.statistic:.1f}, p = {self.p_value:.3g}.")  # fmt: skip
        else:
            head = (f"Friedman test over the {self.n_lines} lines where every method ran, each ranked in its "
                    f"own metric's direction: χ² = {self.statistic:.2f}, p = {self.p_value:.3g}.")  # fmt: skip
        post = (f" Rejects at {ALPHA:g}: the diagram's bars join methods the Nemenyi test does not separate."
                if self.test == "friedman" and self.rejected else
                f" Does not reject at {ALPHA:g}: no post-hoc test, no bars in the diagram."
                if self.test == "friedman" else "")  # fmt: skip
        notes = "".join(f" {n}" for n in self.notes)
        return f"{head} Average ranks (1 = best): {ranks}.{post}{notes}"


def rank_test(means: pd.DataFrame, higher_better: bool | pd.Series) -> RankTest | None:
    """Friedman (+ Nemenyi where it rejects) on ``means`` (one line per row, one column per method).

    ``higher_better`` is the direction of every line (a bool) or of each line (a boolean Series
    indexed like ``means``): each line is ranked in its own direction, rank 1 = its best mean.
    Only lines where every method has a mean take part (a complete block design). With two
    methods the Friedman test is replaced by the Wilcoxon signed-rank test of the paired line
    means, as Demšar (2006, section 3.1.3) recommends for two classifiers over several data
    sets. None when fewer than two methods or two such lines remain, or all differences are 0.
    """
    import scikit_posthocs as sph
    from scipy.stats import friedmanchisquare, wilcoxon

    complete = means.dropna()
    if complete.shape[1] < 2 or len(complete) < 2:
        return None
    if isinstance(higher_better, pd.Series):
        signs = higher_better.reindex(complete.index).map(lambda h: 1.0 if bool(h) else -1.0)
    else:
        signs = pd.Series(1.0 if higher_better else -1.0, index=complete.index)
    score = -complete.mul(signs, axis=0)  # lower score = better: rank 1 = the best mean of the line
    ranks = score.rank(axis=1).mean()
    if complete.shape[1] == 2:
        a, b = (score[m].to_numpy() for m in score.columns)
        if np.all(a == b):
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = wilcoxon(a, b)
        p = float(res.pvalue)
        mat = pd.DataFrame([[1.0, p], [p, 1.0]], index=list(score.columns), columns=list(score.columns))
        return RankTest(len(complete), float(res.statistic), p, ranks, mat, test="wilcoxon")
    stat, p = friedmanchisquare(*[score[m].to_numpy() for m in score.columns])
    nem = pd.DataFrame()
    if p < ALPHA:
        nem = sph.posthoc_nemenyi_friedman(score.to_numpy())
        nem.index = nem.columns = list(score.columns)
    return RankTest(len(complete), float(stat), float(p), ranks, nem)


class _StableLabel(str):
    """A method's name with a hash that does not depend on ``PYTHONHASHSEED``.  scikit-posthocs
    draws each crossbar through the points of a set of labels, in the set's order; with ``str``'s
    salted hash that order, and so the PNG's bytes, changed from one process to the next."""

    __slots__ = ()

    def __hash__(self) -> int:
        return zlib.crc32(self.encode())


def cd_figure(tests: dict[str, RankTest], title: str, path: Path) -> Path:
    """The critical-difference diagram of each selection rule (one panel each) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scikit_posthocs as sph

    fig, axes = plt.subplots(len(tests), 1, figsize=(7.5, 1.9 * len(tests) + 0.4), squeeze=False)
    methods = sorted({m for rt in tests.values() for m in rt.ranks.index})
    stable = {m: _StableLabel(m) for m in methods}  # (the same labels in every set: one hash)
    colours = {stable[m]: f"C{i % 10}" for i, m in enumerate(methods)}  # one colour per method in every panel
    for ax, (label, rt) in zip(axes[:, 0], tests.items(), strict=True):
        idx = pd.Index([stable[m] for m in rt.ranks.index], dtype=object)
        ranks = pd.Series(rt.ranks.to_numpy(), index=idx)
        if rt.test == "friedman" and not rt.rejected:  # no post-hoc test: ranks alone, no bar
            nemenyi = pd.DataFrame(0.0, index=idx, columns=idx)
            text = (f"{label}: Friedman p = {rt.p_value:.3g} over {rt.n_lines} lines: does not reject at "
                    f"{ALPHA:g}, no post-hoc test, no bars (no difference shown)")  # fmt: skip
        else:
            cols = pd.Index([stable[m] for m in rt.nemenyi.columns], dtype=object)
            nemenyi = pd.DataFrame(rt.nemenyi.to_numpy(), index=cols, columns=cols)
            test, post = ("Friedman", "Nemenyi") if rt.test == "friedman" else ("Wilcoxon", "Wilcoxon")
            text = (f"{label}: {test} p = {rt.p_value:.3g} over {rt.n_lines} lines; bars join methods "
                    f"not different at {ALPHA:g} ({post})")  # fmt: skip
        sph.critical_difference_diagram(ranks, nemenyi, ax=ax, alpha=ALPHA, color_palette=colours)
        ax.set_title(text, fontsize=8)
    fig.suptitle(title + " — average ranks, 1 = best", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
