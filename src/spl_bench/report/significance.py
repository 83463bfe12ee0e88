"""Whether a difference between two methods is real: paired tests within a row, ranks across rows.

Runs are paired by seed: seed k of every method of a row uses the same split and the same noise,
so the difference of two methods on seed k is free of the split's and the noise's variation.

* **Within a row** (one line of a table: a data set at one noise rate and parameter), every pair
  of methods is compared by the Wilcoxon signed-rank test on the seeds both ran
  (``scipy.stats.wilcoxon`` with its defaults: two-sided, zero differences dropped, exact null
  distribution for small samples).  The p-values of a row's pairs are Holm-corrected together
  (``statsmodels.stats.multitest.multipletests(method="holm")``), so "some pair of this row
  differs" holds at level 0.05 whatever the number of methods.  Fewer than :data:`MIN_PAIRS`
  shared seeds give no p-value ("too few runs"): with 5 pairs the smallest two-sided p of the
  signed-rank test is 0.0625, so no difference could be shown anyway.
* **Across the rows of a table** (Demšar 2006): the Friedman test on the methods' mean per row,
  over the rows where every method has runs (two methods: the Wilcoxon signed-rank test of the
  row means, Demšar's section 3.1.3), then the Nemenyi post-hoc test
  (``scikit_posthocs.posthoc_nemenyi_friedman``) and a critical-difference diagram of the
  average ranks (``scikit_posthocs.critical_difference_diagram``): methods joined by a bar are
  not significantly different at 0.05.
"""

from __future__ import annotations

import itertools
import warnings
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

#: fewer shared seeds than this: no p-value (the signed-rank test cannot reach 0.05 with 5 pairs)
MIN_PAIRS = 6
#: level of the marks in the tables and of the critical-difference bars
ALPHA = 0.05
TOO_FEW = "too few runs"
IDENTICAL = "identical on every shared seed"

COLUMNS = ["row", "noise_rate", "param", "selection", "method_a", "method_b", "n_pairs", "mean_diff",
           "statistic", "p_value", "p_holm", "note"]  # fmt: skip


def _wilcoxon(a: pd.Series, b: pd.Series) -> tuple[float, float, str]:
    """(statistic, p, note) of the two-sided signed-rank test of a - b (scipy's defaults)."""
    from scipy.stats import wilcoxon

    d = (a - b).to_numpy()
    if len(d) < MIN_PAIRS:
        return np.nan, np.nan, TOO_FEW
    if np.all(d == 0):  # scipy drops zero differences and has nothing left: no evidence of a difference
        return np.nan, 1.0, IDENTICAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "exact p-value unavailable with ties": it switches itself
        res = wilcoxon(a.to_numpy(), b.to_numpy())
    return float(res.statistic), float(res.pvalue), ""


def paired_tests(values: pd.DataFrame, line_keys: Sequence[str], methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Every pair of methods of every line of ``values``, tested on the seeds both ran.

    Parameters
    ----------
    values : DataFrame
        One row per (line, method, seed): the columns ``line_keys``, ``method``, ``seed``, ``value``.
    line_keys : sequence of str
        The columns that make one line (one family of the Holm correction).
    methods : sequence of str, optional
        The order of the methods (``method_a`` comes before ``method_b`` in it); default sorted.

    Returns
    -------
    DataFrame
        ``line_keys`` + method_a, method_b, n_pairs, mean_diff (mean of a − b over the shared seeds),
        statistic, p_value, p_holm, note.
    """
    from statsmodels.stats.multitest import multipletests

    recs: list[dict] = []
    for key, grp in values.groupby(list(line_keys), sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        wide = grp.pivot_table(index="seed", columns="method", values="value", aggfunc="first")
        present = [m for m in (methods or sorted(wide.columns)) if m in wide.columns]
        line = []
        for a, b in itertools.combinations(present, 2):
            pair = wide[[a, b]].dropna()
            stat, p, note = _wilcoxon(pair[a], pair[b])
            line.append({**dict(zip(line_keys, key, strict=True)), "method_a": a, "method_b": b,
                         "n_pairs": len(pair), "mean_diff": float((pair[a] - pair[b]).mean()) if len(pair) else np.nan,
                         "statistic": stat, "p_value": p, "p_holm": np.nan, "note": note})  # fmt: skip
        tested = [r for r in line if np.isfinite(r["p_value"])]
        if tested:
            adjusted = multipletests([r["p_value"] for r in tested], method="holm")[1]
            for r, p in zip(tested, adjusted, strict=True):
                r["p_holm"] = float(p)
        recs += line
    cols = [*line_keys, "method_a", "method_b", "n_pairs", "mean_diff", "statistic", "p_value", "p_holm", "note"]
    return pd.DataFrame(recs, columns=cols)


def significantly_better(tests: pd.DataFrame, best: str, other: str) -> bool:
    """Whether the line's test of ``best`` against ``other`` has p_holm < :data:`ALPHA`."""
    hit = tests[((tests["method_a"] == best) & (tests["method_b"] == other))
                | ((tests["method_a"] == other) & (tests["method_b"] == best))]  # fmt: skip
    return bool(len(hit) and np.isfinite(hit["p_holm"].iloc[0]) and hit["p_holm"].iloc[0] < ALPHA)


@dataclass
class RankTest:
    """The Friedman test over a table's rows and the Nemenyi post-hoc p-values."""

    n_lines: int
    statistic: float
    p_value: float
    ranks: pd.Series  # average rank per method, 1 = best
    nemenyi: pd.DataFrame  # pairwise p-values, methods x methods (two methods: the Wilcoxon p)
    test: str = "friedman"  # "friedman" (3 or more methods) or "wilcoxon" (two methods)

    def summary(self) -> str:
        ranks = ", ".join(f"{m} {r:.2f}" for m, r in self.ranks.sort_values().items())
        if self.test == "wilcoxon":
            head = (f"Two methods: Wilcoxon signed-rank test of their means over the {self.n_lines} rows where "
                    f"both ran (Demšar 2006, 3.1.3): W = {self.statistic:.1f}, p = {self.p_value:.3g}.")  # fmt: skip
        else:
            head = (f"Friedman test over the {self.n_lines} rows where every method ran: "
                    f"χ² = {self.statistic:.2f}, p = {self.p_value:.3g}.")  # fmt: skip
        return f"{head} Average ranks (1 = best): {ranks}."


def rank_test(means: pd.DataFrame, higher_better: bool) -> RankTest | None:
    """Friedman + Nemenyi on ``means`` (one line per table row, one column per method).

    Only rows where every method has a mean take part (a complete block design). With two
    methods the Friedman test is replaced by the Wilcoxon signed-rank test of the paired row
    means, as Demšar (2006, section 3.1.3) recommends for two classifiers over several data
    sets. None when fewer than two methods or two such rows remain, or all differences are 0.
    """
    import scikit_posthocs as sph
    from scipy.stats import friedmanchisquare, wilcoxon

    complete = means.dropna()
    if complete.shape[1] < 2 or len(complete) < 2:
        return None
    score = -complete if higher_better else complete  # rank 1 = the best mean of the row
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
        cols = pd.Index([stable[m] for m in rt.nemenyi.columns], dtype=object)
        nemenyi = pd.DataFrame(rt.nemenyi.to_numpy(), index=cols, columns=cols)
        sph.critical_difference_diagram(ranks, nemenyi, ax=ax, alpha=ALPHA, color_palette=colours)
        test, post = ("Friedman", "Nemenyi") if rt.test == "friedman" else ("Wilcoxon", "Wilcoxon")
        ax.set_title(f"{label}: {test} p = {rt.p_value:.3g} over {rt.n_lines} rows; bars join methods "
                     f"not different at {ALPHA:g} ({post})", fontsize=8)  # fmt: skip
    fig.suptitle(title + " — average ranks, 1 = best", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
