"""Robust-regression baselines of the DSPL paper: SPL (Kumar), TORR, TORR25."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.data.synthetic import make_dspl_regression
from spl_bench.errors import ConfigError
from spl_bench.methods.robust_regression import TORR, SPLKumar, hard_threshold, torrent_fc, weighted_ridge

FAST = settings(max_examples=15, deadline=None)


@FAST
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([0.0, 0.2, 0.4]))
def test_torrent_stops_at_a_fixed_point(seed, rate):
    d = make_dspl_regression(120, 5, rate, rng=seed)
    beta = max(rate, 0.05)
    w, S, _, ok = torrent_fc(d.X, d.y, beta)
    assert ok
    # w is the least-squares fit on S (independent: QR-based lstsq) ...
    w_ref = scipy.linalg.lstsq(d.X[S], d.y[S])[0]
    assert np.max(np.abs(w - w_ref)) < 1e-8
    # ... and S holds the n - round(beta n) smallest absolute residuals of w
    r = np.abs(d.y - d.X @ w)
    k = 120 - round(beta * 120)
    assert len(S) == k
    assert r[S].max() <= np.delete(r, S).min(initial=np.inf) + 1e-12


def test_hard_threshold_by_brute_force():
    r = np.array([3.0, -0.5, 2.0, -4.0, 0.1])
    assert hard_threshold(r, 3).tolist() == [1, 2, 4]


def test_torr_recovers_w_star_with_the_true_ratio():
    d = make_dspl_regression(400, 10, 0.3, rng=7)
    est = TORR(corruption=0.3).fit(d.X, d.y)
    assert np.linalg.norm(est.coef_ - d.w_star) < 0.05
    assert set(est.active_set_.tolist()).isdisjoint(np.flatnonzero(d.corrupted).tolist())


@FAST
@given(seed=st.integers(0, 10_000), beta=st.floats(0.05, 0.6))
def test_torr25_draws_its_ratio_within_25_percent(seed, beta):
    est = TORR(corruption=beta, perturb=0.25, random_state=seed)
    b = est.beta_used()
    assert 0.75 * beta <= b <= 1.25 * beta
    assert est.beta_used() == b  # reproducible from the seed


def test_torr_needs_the_ratio():
    X = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(ConfigError, match="corruption"):
        TORR().fit(X, X[:, 0])
    with pytest.raises(ConfigError):
        TORR(corruption=1.2).fit(X, X[:, 0])


def test_spl_kumar_ends_at_a_partial_optimum():
    d = make_dspl_regression(300, 6, 0.3, rng=9)
    est = SPLKumar(lam0=1.0, lam_max=1.0, reg=1.0).fit(d.X, d.y)
    assert est.converged_
    w, v = est.coef_, est.v_
    # w-step optimal for v (independent: stacked least squares), v-step optimal for w at lam = 1
    s = np.sqrt(v)
    A = np.vstack([d.X * s[:, None], np.eye(6)])
    b = np.concatenate([d.y * s, np.zeros(6)])
    assert np.max(np.abs(w - scipy.linalg.lstsq(A, b)[0])) < 1e-8
    np.testing.assert_array_equal(v, ((d.y - d.X @ w) ** 2 < 1.0).astype(float))
    assert np.linalg.norm(w - d.w_star) < 0.1


def test_spl_kumar_schedule_grows_by_mu_up_to_the_cap():
    d = make_dspl_regression(200, 4, 0.2, rng=1)
    est = SPLKumar(lam0=1.0, lam_max=2.0, mu=1.1).fit(d.X, d.y)
    lams = [c["lam"] for c in est.candidate_params_]
    expected = np.minimum(1.1 ** np.arange(len(lams)), 2.0)
    np.testing.assert_allclose(lams, expected, rtol=1e-12)


def test_weighted_ridge_matches_normal_equations():
    rng = np.random.default_rng(3)
    X, y, v = rng.standard_normal((50, 4)), rng.standard_normal(50), rng.uniform(size=50)
    ref = np.linalg.solve(X.T @ np.diag(v) @ X + 2.0 * np.eye(4), X.T @ (v * y))
    np.testing.assert_allclose(weighted_ridge(X, y, v, 2.0), ref, rtol=1e-10)
