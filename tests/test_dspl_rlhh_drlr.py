"""RLHH (Zhang et al. IJCAI 2017) and DRLR (Zhang et al. ICDM 2017), the DSPL Table 2 baselines."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_estimator

from spl_bench.data.synthetic import corrupted_batch_rates, make_dspl_regression
from spl_bench.errors import ConfigError, DataError
from spl_bench.methods.dspl import split_batches
from spl_bench.methods.robust_regression import (
    DRLR,
    RLHH,
    closest_rank,
    descending_size,
    drlr,
    majority_clique,
    rlhh,
    rlhh_batches,
    rlhh_size,
)

FAST = settings(max_examples=10, deadline=None)
HEURISTIC = st.sampled_from(["score", "descending"])


def ols(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return scipy.linalg.lstsq(X, y)[0]


# ------------------------------------------------------------------ clean data
@FAST
@given(seed=st.integers(0, 10_000), p=st.integers(1, 8), heuristic=HEURISTIC)
def test_noiseless_clean_data_give_the_least_squares_solution(seed, p, heuristic):
    d = make_dspl_regression(60, p, 0.0, n_batches=3, sigma=0.0, rng=seed)
    w_ls = ols(d.X, d.y)
    w, info = rlhh(d.X, d.y, heuristic=heuristic)
    assert np.max(np.abs(w - w_ls)) < 1e-8
    assert info["converged"] and info["n_iter"] == 1  # zero residuals stop the first iteration
    assert np.max(np.abs(rlhh_batches(d.batches())[0] - w_ls)) < 1e-8
    assert np.max(np.abs(drlr(d.batches())[0] - w_ls)) < 1e-8


@FAST
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([0.0, 0.2]), heuristic=HEURISTIC)
def test_rlhh_returns_the_least_squares_fit_of_its_rows(seed, rate, heuristic):
    d = make_dspl_regression(150, 5, rate, rng=seed)
    w, info = rlhh(d.X, d.y, heuristic=heuristic)
    rows = info["fit_rows"]
    assert np.max(np.abs(w - ols(d.X[rows], d.y[rows]))) < 1e-8
    # the support is the tau rows of smallest residual of the last fit
    r = np.abs(d.y - d.X @ w)
    S = info["support"]
    assert len(S) == info["tau"] == info["taus"][-1]
    assert r[S].max() <= np.delete(r, S).min(initial=np.inf)


# ---------------------------------------------------------- corrupted minority
@pytest.mark.parametrize("seed", [3, 11, 29])
def test_rlhh_recovers_w_star_from_a_corrupted_minority(seed):
    d = make_dspl_regression(400, 10, 0.2, rng=seed)
    err_ols = np.linalg.norm(ols(d.X, d.y) - d.w_star)
    w, info = rlhh(d.X, d.y)
    err = np.linalg.norm(w - d.w_star)
    assert err < 0.05 and err < 0.1 * err_ols
    corrupted = set(np.flatnonzero(d.corrupted).tolist())
    kept_bad = len(corrupted.intersection(info["support"].tolist()))
    assert kept_bad <= 0.1 * len(corrupted)  # the support excludes most corrupted rows
    assert len(info["support"]) >= 0.75 * len(d.y)  # ... and keeps most clean ones


@pytest.mark.parametrize("seed", [5, 17])
def test_drlr_recovers_w_star_when_a_minority_of_batches_is_corrupted(seed):
    rates = corrupted_batch_rates(10, 4, 0.9, 0.1, rng=seed)  # DSPL Table 2, 4/10
    d = make_dspl_regression(200, 10, list(rates), rng=seed + 1)
    err_ols = np.linalg.norm(ols(d.X, d.y) - d.w_star)
    w, info = drlr(d.batches())
    err = np.linalg.norm(w - d.w_star)
    assert err < 0.05 and err < 0.1 * err_ols
    assert set(info["clique"].tolist()).isdisjoint(np.flatnonzero(rates > 0.5).tolist())
    assert len(info["clique"]) == 6
    # RLHH's plain average is pulled away by the corrupted batches (the paper's 0.6-0.9)
    assert np.linalg.norm(rlhh_batches(d.batches())[0] - d.w_star) > 10 * np.linalg.norm(w - d.w_star)


# ------------------------------------------------------------ hand computations
def test_closest_rank_breaks_ties_towards_the_smaller_rank():
    r = np.array([1.0, 2.0, 2.0, 4.0])
    assert closest_rank(r, [1.5, 3.0, 2.0, 10.0, -1.0]).tolist() == [1, 2, 2, 4, 1]


def test_size_heuristics_on_two_outliers_by_hand():
    # sorted |r| = .1 .2 ... .8, 5, 9 (given shuffled and signed); n = 10, ceil(n/2) = 5.
    r = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 5.0, 9.0])
    shuffled = np.array([-5.0, 0.3, 0.8, -0.1, 9.0, 0.5, -0.7, 0.2, 0.6, -0.4])
    # RLHH scores s(k) = ((r_k + 1)/k) / ((9 - r_k)/(10 - k)):
    #   s(6) = (1.6/6)/(8.4/4) = .127, s(7) = (1.7/7)/(8.3/3) = .0878, s(8) = (1.8/8)/(8.2/2) = .0549,
    #   s(9) = (6/9)/(4/1) = .167 -> sizes tried 8, 7, 6, 9, 10.
    # tau = 8: tau' = 3, rms = sqrt((.01 + .04 + .09)/3) = .2160, closest r = .2 (rank 2);
    #   bound = min(2 * 8 * .2160 / 2, (9 + .2160)/2) = min(1.728, 4.608); r_8 = .8 passes -> 8.
    assert rlhh_size(r) == rlhh_size(shuffled) == 8
    # descending from 10: tau = 10: tau' = 5, rms = sqrt(.55/5) = .3317 (rank 3),
    #   bound 2 * 10 * .3317 / 3 = 2.211 < r_10 = 9: no;  tau = 9: tau' = 4, rms = .2739 (rank 3),
    #   bound 1.643 < 5: no;  tau = 8: bound 1.728 >= .8: yes.
    assert descending_size(shuffled, 10, 3) == 8
    # from 7 it cannot grow: tau = 7, tau' = 2, rms = sqrt(.05/2) = .1581 (rank 2), bound 1.107 >= .7
    assert descending_size(r, 7, 3) == 7
    # no size above ceil(n/2) is allowed from 5: the floor tau_min
    assert descending_size(r, 5, 3) == 3


def test_size_heuristics_on_linear_residuals_by_hand():
    # r_k = k, n = 10.  s(k) = (k+1)/k: sizes tried 9, 8, 7, 6, 10.  The second bound
    # (r_n + rms)/2 rejects them all: tau = 9: rms = sqrt(30/4) = 2.739, (10 + 2.739)/2 = 6.37 < 9;
    # tau = 8: rms = sqrt(14/3) = 2.160 -> 6.08 < 8; tau = 7: rms = sqrt(5/2) = 1.581 -> 5.79 < 7;
    # tau = 6: rms = 1 -> 5.5 < 6; tau = 10: rms = sqrt(11) = 3.317 -> 6.66 < 10.  Fallback n/2.
    r = np.arange(1.0, 11.0)
    assert rlhh_size(r) == 5
    # the descending search has no second bound: tau = 10, rms = 3.317 (rank 3),
    # 2 * 10 * 3.317 / 3 = 22.1 >= 10
    assert descending_size(r, 10, 3) == 10
    # r_10 = 30 exceeds that bound 22.1 (it is within 3x the slope, 33.2: the factor 2 matters);
    # tau = 9: tau' = 4, rms = 2.739 (rank 3), 2 * 9 * 2.739 / 3 = 16.4 >= 9
    r[-1] = 30.0
    assert descending_size(r, 10, 3) == 9


def test_majority_clique_by_hand():
    # m = 5, h = 3.  Radii (3rd smallest distance): 0 -> 2, 1 -> 1, 2 -> 2, 50 -> 49, -30 -> 31
    B = np.array([[0.0], [1.0], [2.0], [50.0], [-30.0]])
    clique, centre, radius = majority_clique(B)
    assert centre == 1 and radius == 1.0
    assert clique.tolist() == [1, 0, 2]  # nearest first, ties by index


# -------------------------------------------------------------------- options
def test_stopping_rule_and_iteration_cap():
    d = make_dspl_regression(200, 5, 0.3, rng=4)
    w1, info1 = rlhh(d.X, d.y, max_iter=1)
    assert info1["n_iter"] == 1 and not info1["converged"]
    assert np.max(np.abs(w1 - ols(d.X, d.y))) < 1e-10  # the first fit uses every row
    _, info = rlhh(d.X, d.y)
    assert info["converged"] and 1 < info["n_iter"] < 100


def test_bad_inputs_raise_one_clear_error():
    d = make_dspl_regression(60, 4, 0.1, rng=0)
    X = d.X.copy()
    X[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        rlhh(X, d.y)
    with pytest.raises(ConfigError, match="heuristic"):
        rlhh(d.X, d.y, heuristic="median")
    with pytest.raises(DataError, match="too few"):
        rlhh(d.X[:7], d.y[:7])  # floor(7/2) = 3 rows < 4 features
    with pytest.raises(DataError, match="3p"):
        drlr([(d.X[:11], d.y[:11])])  # 11 rows < 3 p = 12
    with pytest.raises(ConfigError):
        drlr([])


# ------------------------------------------------------------------ estimators
@pytest.mark.parametrize("cls", [RLHH, DRLR])
def test_estimators_follow_the_scikit_learn_api(cls):
    d = make_dspl_regression(100, 5, 0.1, n_batches=4, rng=2)
    est = cls(n_batches=4)
    with pytest.raises(NotFittedError):
        est.predict(d.X)
    assert est.fit(d.X, d.y) is est
    assert est.coef_.shape == (5,) and est.batch_coefs_.shape == (4, 5)
    np.testing.assert_allclose(est.predict(d.X), d.X @ est.coef_, rtol=1e-12, atol=1e-12)
    assert est.score(d.X, d.y_clean) > 0.95  # R^2 against the uncorrupted responses
    assert est.get_params()["n_batches"] == 4
    assert clone(est).get_params() == est.get_params()
    assert est.run_info()["converged"] in (True, False)
    with pytest.raises(DataError, match="features"):
        est.predict(d.X[:, :3])
    with pytest.raises(ConfigError):
        cls(model="svm").fit(d.X, np.sign(d.y) + (d.y == 0))
    with pytest.raises(ConfigError):
        cls(n_batches=0).fit(d.X, d.y)


def test_estimators_match_their_functions():
    d = make_dspl_regression(300, 6, 0.2, rng=8)
    batches = split_batches(d.X, d.y, 3)
    np.testing.assert_array_equal(RLHH().fit(d.X, d.y).coef_, rlhh(d.X, d.y)[0])
    np.testing.assert_array_equal(RLHH(n_batches=3).fit(d.X, d.y).coef_, rlhh_batches(batches)[0])
    est = DRLR(n_batches=3).fit(d.X, d.y)
    w, info = drlr(batches)
    np.testing.assert_array_equal(est.coef_, w)
    np.testing.assert_array_equal(est.clique_, info["clique"])
    # the support holds row indices of the whole training set
    sup = RLHH(n_batches=3).fit(d.X, d.y).support_
    assert sup.min() >= 0 and sup.max() < 300 and len(np.unique(sup)) == len(sup)


def test_scikit_learn_check_estimator():
    # RLHH passes every check; DRLR may only refuse the checks' tiny data sets, whose
    # batches have fewer than the 3 p rows its per-batch search keeps (a clear DataError)
    assert [r for r in check_estimator(RLHH(), on_fail=None, on_skip=None) if r["status"] == "failed"] == []
    failed = [r for r in check_estimator(DRLR(n_batches=2), on_fail=None, on_skip=None) if r["status"] == "failed"]
    for r in failed:
        assert isinstance(r["exception"], DataError) and "3p" in str(r["exception"]), r["check_name"]
    assert len(failed) <= 8
