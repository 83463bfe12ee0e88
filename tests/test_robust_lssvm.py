"""LS-SVM, RLSSVM and Re-LSSVM regression (GAGA appendix D.6).

Independent computations: the LS-SVM (LS) is ridge regression with an
unpenalised intercept on an explicit feature map ``Phi`` with ``Phi Phi^T = K``
(scikit-learn's ``Ridge``, from an eigendecomposition of ``K``); the LTS scale is
checked against the known standard deviation of large normal samples; the
truncated objective (TLS) is recomputed from scratch with scipy distances.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.spatial.distance import cdist
from scipy.stats import norm
from sklearn.linear_model import Ridge

from spl_bench.errors import ConfigError
from spl_bench.methods.robust.lssvm import (
    LSSVMMethod,
    LSSVMRegressor,
    ReLSSVMMethod,
    ReLSSVMRegressor,
    RLSSVMMethod,
    RLSSVMRegressor,
    lts_scale,
    solve_lssvm,
    suykens_weights,
)


def rbf(A: np.ndarray, B: np.ndarray, sigma: float) -> np.ndarray:
    return np.exp(-cdist(A, B, "sqeuclidean") / (2 * sigma**2))


def feature_map(K: np.ndarray) -> np.ndarray:
    lam, U = np.linalg.eigh(K)
    return U * np.sqrt(np.clip(lam, 0, None))


def sinc_data(seed: int, n: int = 120, corrupt: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    y = np.sinc(X[:, 0]) + 0.05 * rng.standard_normal(n)
    bad = rng.choice(n, int(round(corrupt * n)), replace=False)
    y[bad] += rng.uniform(1.0, 3.0, bad.size) * rng.choice([-1.0, 1.0], bad.size)
    Xt = np.linspace(-3, 3, 300)[:, None]
    return X, y, Xt, np.sinc(Xt[:, 0]), bad


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), gamma=st.floats(0.05, 50.0), weighted=st.booleans())
def test_linear_lssvm_is_ridge(seed: int, gamma: float, weighted: bool) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 4))
    y = X @ rng.standard_normal(4) + 1.5 + rng.standard_normal(30)
    v = rng.uniform(0.1, 2.0, 30) if weighted else np.ones(30)
    alpha, b = solve_lssvm(X @ X.T, y, gamma, v)
    ridge = Ridge(alpha=1.0 / gamma, tol=1e-12).fit(X, y, sample_weight=v)
    np.testing.assert_allclose(X.T @ alpha, ridge.coef_, rtol=1e-7, atol=1e-9)
    assert b == pytest.approx(ridge.intercept_, rel=1e-7, abs=1e-9)
    if not weighted:
        est = LSSVMRegressor(gamma=gamma, kernel="linear").fit(X, y)
        np.testing.assert_allclose(est.predict(X[:5]), ridge.predict(X[:5]), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("sigma, gamma", [(0.5, 10.0), (1.0, 1.9), (2.0, 0.3)])
def test_rbf_lssvm_is_ridge_on_the_feature_map(sigma: float, gamma: float) -> None:
    X, y, *_ = sinc_data(0, n=60, corrupt=0.2)
    est = LSSVMRegressor(gamma=gamma, sigma=sigma).fit(X, y)
    Phi = feature_map(rbf(X, X, sigma))
    ridge = Ridge(alpha=1.0 / gamma, tol=1e-12).fit(Phi, y)
    np.testing.assert_allclose(est.predict(X), ridge.predict(Phi), atol=1e-7)
    # zero weights drop rows: the same as fitting on the kept rows only
    v = np.ones(len(y))
    v[::3] = 0.0
    alpha, b = solve_lssvm(rbf(X, X, sigma), y, gamma, v)
    assert np.all(alpha[::3] == 0)
    keep = v > 0
    sub = LSSVMRegressor(gamma=gamma, sigma=sigma).fit(X[keep], y[keep])
    np.testing.assert_allclose(rbf(X, X[keep], sigma) @ alpha[keep] + b, sub.predict(X), atol=1e-8)


def trimmed_second_moment(q: float) -> float:
    """E[Z^2 | |Z| <= z] for the central fraction q of N(0, 1), by numerical integration."""
    z = norm.ppf((1 + q) / 2)
    return quad(lambda x: x**2 * norm.pdf(x), -z, z)[0] / q


def test_lts_scale_is_consistent_and_robust() -> None:
    rng = np.random.default_rng(1)
    r = 2.0 * rng.standard_normal(20_000)
    for h in (0.5, 0.75, 1.0):
        assert lts_scale(r, h) == pytest.approx(2.0, rel=0.03)
    r[:6000] = 1e3  # 30 % gross outliers: the 10000 smallest are the central 10/14 of the inliers
    expected = 2.0 * np.sqrt(trimmed_second_moment(10 / 14) / trimmed_second_moment(0.5))
    assert lts_scale(r, 0.5) == pytest.approx(expected, rel=0.03)
    assert r.std() > 100 * expected


@settings(max_examples=50, deadline=None)
@given(u=st.lists(st.floats(-10, 10), min_size=2, max_size=30))
def test_suykens_weights_in_unit_interval_and_nonincreasing(u: list[float]) -> None:
    a = np.sort(np.abs(np.array(u)))
    w = suykens_weights(a)
    assert np.all((w >= 1e-4) & (w <= 1.0))
    assert np.all(np.diff(w) <= 0)
    assert np.all(w[a <= 2.5] == 1.0) and np.all(w[a > 3.0] == 1e-4)


def tls_objective(X, y, est: LSSVMRegressor, gamma: float, sigma: float, theta: float) -> float:
    """(TLS) from scratch: 1/2 a^T K a + gamma/2 sum min(r^2, theta^2)."""
    K = rbf(X, X, sigma)
    f = K @ est.dual_coef_ + est.intercept_
    return 0.5 * est.dual_coef_ @ K @ est.dual_coef_ + 0.5 * gamma * np.minimum((y - f) ** 2, theta**2).sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_relssvm_decreases_tls_and_stops_at_a_fixed_point(seed: int) -> None:
    X, y, *_ = sinc_data(seed, corrupt=0.3)
    g, s, th = 10.0, 0.5, 0.3
    plain = LSSVMRegressor(gamma=g, sigma=s).fit(X, y)
    rob = ReLSSVMRegressor(gamma=g, sigma=s, theta=th).fit(X, y)
    assert rob.converged_
    assert tls_objective(X, y, rob, g, s, th) < tls_objective(X, y, plain, g, s, th)
    assert rob.tls_objective(X, y) == pytest.approx(tls_objective(X, y, rob, g, s, th), rel=1e-10)
    np.testing.assert_array_equal(rob.inlier_, np.abs(y - rob.predict(X)) <= th)
    # on the fixed inlier set, the fit is the LS-SVM of the inliers
    sub = LSSVMRegressor(gamma=g, sigma=s).fit(X[rob.inlier_], y[rob.inlier_])
    np.testing.assert_allclose(rob.predict(X), sub.predict(X), atol=1e-8)


def test_relssvm_equals_lssvm_when_theta_exceeds_every_residual() -> None:
    X, y, Xt, *_ = sinc_data(3, corrupt=0.3)
    plain = LSSVMRegressor(gamma=5.0, sigma=0.7).fit(X, y)
    theta = 1.01 * np.abs(y - plain.predict(X)).max()
    rob = ReLSSVMRegressor(gamma=5.0, sigma=0.7, theta=theta).fit(X, y)
    assert rob.inlier_.all()
    np.testing.assert_allclose(rob.predict(Xt), plain.predict(Xt), atol=1e-12)


def test_robust_lssvms_beat_lssvm_under_30_percent_gross_corruption() -> None:
    mse = {"ls": [], "rls": [], "re": []}
    for seed in range(3):
        X, y, Xt, yt, bad = sinc_data(seed, corrupt=0.3)
        ests = {
            "ls": LSSVMRegressor(gamma=10.0, sigma=0.5),
            "rls": RLSSVMRegressor(gamma=10.0, sigma=0.5),
            "re": ReLSSVMRegressor(gamma=10.0, sigma=0.5, theta=0.3),
        }
        for k, est in ests.items():
            mse[k].append(np.mean((est.fit(X, y).predict(Xt) - yt) ** 2))
        # RLSSVM down-weights the corrupted rows
        w = ests["rls"].sample_weight_
        assert np.median(w[bad]) < 0.01 and np.median(np.delete(w, bad)) == 1.0
    ls = np.mean(mse["ls"])
    assert np.mean(mse["rls"]) < 0.1 * ls
    assert np.mean(mse["re"]) < 0.1 * ls


def test_rlssvm_without_outliers_stays_close_to_lssvm() -> None:
    X, y, Xt, yt, _ = sinc_data(5, corrupt=0.0)
    plain = LSSVMRegressor(gamma=10.0, sigma=0.5).fit(X, y)
    rob = RLSSVMRegressor(gamma=10.0, sigma=0.5).fit(X, y)
    assert np.mean(rob.sample_weight_ == 1.0) > 0.95
    assert np.max(np.abs(rob.predict(Xt) - plain.predict(Xt))) < 0.05


def test_bad_parameters_raise_config_error() -> None:
    X, y, *_ = sinc_data(0, n=20)
    for est, word in [
        (LSSVMRegressor(gamma=0.0), "gamma"),
        (LSSVMRegressor(sigma=-1.0), "sigma"),
        (LSSVMRegressor(kernel="poly"), "kernel"),
        (RLSSVMRegressor(h_fraction=0.0), "h_fraction"),
        (RLSSVMRegressor(c1=3.0, c2=2.0), "c1"),
        (ReLSSVMRegressor(theta=0.0), "theta"),
    ]:
        with pytest.raises(ConfigError, match=word):
            est.fit(X, y)


def test_methods_expose_the_grid_as_candidates() -> None:
    X, y, Xt, *_ = sinc_data(1, n=60, corrupt=0.3)
    m = ReLSSVMMethod(gamma=[1.0, 10.0], sigma=0.5, theta=[0.3, 0.6], sigma_units="absolute").fit(X, y)
    assert len(m.candidate_params_) == 4
    P = m.predict_candidates(Xt)
    for i, p in enumerate(m.candidate_params_):
        np.testing.assert_allclose(P[i], ReLSSVMRegressor(**p).fit(X, y).predict(Xt))
    assert set(m.select(2).run_info()) >= {"n_candidates", "inlier_updates", "n_outliers", "n_fit_rows"}
    r = RLSSVMMethod(gamma=1.9, sigma=[0.5, 1.0]).fit(X, y)
    assert [p["sigma"] for p in r.candidate_params_] == [0.5, 1.0]
    ref = RLSSVMRegressor(1.9, 0.5, sigma_units="scale").fit(X, y)
    np.testing.assert_allclose(r.select(0).predict(Xt), ref.predict(Xt))
    assert LSSVMMethod().fit(X, y).predict_candidates(Xt).shape == (1, 300)


def test_sigma_units_scale_is_a_rescaled_absolute_width() -> None:
    rng = np.random.default_rng(6)
    X = 3.0 * rng.standard_normal((50, 5))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(50)
    s = np.sqrt(X.shape[1] * X.var())
    a = LSSVMRegressor(gamma=2.0, sigma=0.7, sigma_units="scale").fit(X, y)
    b = LSSVMRegressor(gamma=2.0, sigma=0.7 * s).fit(X, y)
    np.testing.assert_allclose(a.predict(X), b.predict(X), atol=1e-10)
    with pytest.raises(ConfigError, match="sigma_units"):
        LSSVMRegressor(sigma_units="median").fit(X, y)


def test_max_train_fits_every_candidate_on_one_subset() -> None:
    X, y, Xt, *_ = sinc_data(2, n=100, corrupt=0.3)
    m = LSSVMMethod(gamma=[1.0, 5.0], sigma=0.5, sigma_units="absolute", max_train=40, random_state=3)
    m.fit(X, y)
    assert m.run_info()["n_fit_rows"] == 40
    rows = np.sort(np.random.default_rng(3).choice(100, 40, replace=False))
    for i, p in enumerate(m.candidate_params_):
        ref = LSSVMRegressor(**p).fit(X[rows], y[rows])
        np.testing.assert_allclose(m.select(i).predict(Xt), ref.predict(Xt), atol=1e-10)
    assert LSSVMMethod(max_train=None).fit(X, y).run_info()["n_fit_rows"] == 100
