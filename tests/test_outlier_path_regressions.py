"""Regression tests of the outlier path on degenerate data (duplicated and near-duplicated rows).

Spambase with the linear kernel (duplicated and nearly duplicated e-mails) used to truncate
every OP-theta path by a failed Theorem-4 check:

* two *duplicated* rows reach the boundary ``m = s`` together.  The D-step swaps one of them;
  its duplicate absorbs the change (f unchanged), so the objective does not decrease, and the
  chain then forced the duplicate's coefficient (strictly inside its box) to the bound of a
  fixed state, which moved f by a finite amount (violations of order C);
* a point *nearly duplicating* an active one enters E: its margin crosses 1 very slowly while
  its coefficient moves very fast on the new active system, so rounding in the margins left
  the re-solved coefficient outside ``[0, C]`` by more than the tolerance.

Every breakpoint is checked from scratch against Theorem 4 (10a-10e).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel

from spl_bench.methods.outlier_path import outlier_path_s, outlier_path_theta
from spl_bench.methods.outlier_path.path import svm_path
from test_outlier_path import make_data, objective, theorem4_violation


def with_duplicates(seed: int, n_dup: int = 8, eps: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``make_data`` plus ``n_dup`` copies of random rows (perturbed by ``eps`` in a few features)."""
    X, y = make_data(seed, n=40, d=3, flip=0.2)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(y), n_dup, replace=False)
    Xd = X[idx] + eps * rng.normal(size=(n_dup, X.shape[1])) * (rng.random((n_dup, X.shape[1])) < 0.3)
    return np.r_[X, Xd], np.r_[y, y[idx]]


def near_duplicates(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """100 rows in 10 dimensions plus 40 copies perturbed by 1e-5 in about a third of the features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(100, 10)) * 3.0
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    y[rng.choice(100, 20, replace=False)] *= -1
    idx = rng.choice(100, 40, replace=False)
    Xd = X[idx] + 1e-5 * rng.normal(size=(40, 10)) * (rng.random((40, 10)) < 0.3)
    return np.r_[X, Xd], np.r_[y, y[idx]]


def check_path(res, K, y, C, variant):
    assert res.failed is None, res.failed
    for bp in res.breakpoints:
        theta, s = (bp.param, 0.0) if variant == "theta" else (0.0, bp.param)
        viol, gap = theorem4_violation(bp.alpha, bp.b, K, y, C, theta, s, bp.inlier)
        assert viol <= 1e-6 * max(1.0, C), (bp.param, viol)
        if variant == "s" or bp.param < 1.0:  # (10e) is stated for theta < 1
            assert gap > 1e-10, (bp.param, gap)
    for jump in res.jumps:
        theta, s = (jump.param, 0.0) if variant == "theta" else (0.0, jump.param)
        after = next(bp for bp in res.breakpoints if bp.param == jump.param and bp.kind == "jump")
        before = objective(jump.alpha_before, jump.b_before, K, y, C, theta, s)
        now = objective(after.alpha, after.b, K, y, C, theta, s)
        chain = [jump.objective_before, *jump.objectives]
        # a D-step on one of two duplicated boundary points can leave f (and the objective)
        # unchanged; the chain as a whole still decreases (Theorem 3).  Such neutral steps differ
        # by the rounding of the objective (n^2 products of size up to C^2 Q_ij: relative rises
        # of 1e-12 to 2e-12 seen on australian at C = 10, 100), hence the relative 1e-10
        assert all(b <= a + 1e-10 * max(1.0, abs(a)) for a, b in zip(chain, chain[1:], strict=False))
        if not (variant == "theta" and jump.param == 1.0) and not jump.degenerate:
            assert now < before - 1e-12


# (seed, C, variant): each truncated before the fix ("local-optimality check failed at jump"
# with a violation of order C, or "OP-s cannot move s past a degenerate tie")
DUPLICATE_CASES = [
    (1, 1.0, "theta"), (3, 0.1, "theta"), (4, 10.0, "theta"), (12, 10.0, "theta"),
    (0, 1.0, "s"), (5, 1.0, "s"), (7, 0.1, "s"), (18, 10.0, "s"),
]


@pytest.mark.parametrize("seed,C,variant", DUPLICATE_CASES)
def test_duplicated_rows_on_the_boundary(seed, C, variant):
    X, y = with_duplicates(seed)
    K = linear_kernel(X)
    res = (outlier_path_theta if variant == "theta" else outlier_path_s)(K, y, C)
    check_path(res, K, y, C, variant)
    assert len(res.jumps) >= 1


@pytest.mark.parametrize("C", [1.0, 100.0])
def test_near_duplicated_row_entering_the_margin(C):
    """Before the fix: the entering point's coefficient was 2e-3 (C = 1) / 1e-4 (C = 100) out of
    its box after the re-solve at the event."""
    X, y = near_duplicates(0)
    K = linear_kernel(X)
    res = outlier_path_theta(K, y, C)
    check_path(res, K, y, C, "theta")


def australian_subset(data_dir, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """40 % of australian (binary and integer features), 15 % of the labels flipped, standardised."""
    from spl_bench.data.loaders import load_dataset

    ds = load_dataset("australian", data_dir)
    y_all = np.where(ds.y == ds.y.max(), 1.0, -1.0)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y_all))[: int(0.4 * len(y_all))]
    X, y = ds.X[idx], y_all[idx].copy()
    y[rng.random(len(y)) < 0.15] *= -1
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), y


@pytest.mark.parametrize(("seed", "C"), [(7, 10.0), (4, 100.0)])
def test_pinned_swap_with_rounding_level_margin_rate(data_dir, seed, C, monkeypatch):
    """OP-s, linear kernel, large C on australian (started from the exact SVM of the C-path).

    f is pinned during a D-step (the swapped row is in the span of the active ones), so the
    swapped point's margin rate is zero in exact arithmetic; the solve returns it with the
    wrong sign at 1e-10 to 1e-8 of ``|da_j| Q_jj``.  That used to stop the path ("crossed
    back over the boundary"); the D-step must now go on, and every breakpoint must pass
    Theorem 4.
    """
    import spl_bench.methods.outlier_path.events as events_mod

    X, y = australian_subset(data_dir, seed)
    K = linear_kernel(X)
    start = svm_path(K, y, [0.01, C])[-1]
    res = outlier_path_s(K, y, C, init=start)
    check_path(res, K, y, C, "s")
    assert len(res.jumps) >= 1
    # the case exercises the tolerance: without it the same path stops at the D-step
    monkeypatch.setattr(events_mod, "SCHUR_NOISE", 0.0)
    old = outlier_path_s(K, y, C, init=start)
    assert old.failed is not None and "crossed back" in old.failed
