"""Models: weighted solvers agree with an independent solver and satisfy their KKT conditions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from spl_bench.errors import ConfigError, DataError
from spl_bench.models import get_model


def weights(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).uniform(0, 1, n)
    v[:5] = 0.0  # some samples fully off
    v[5:10] = 1.0
    return v


def test_lasso_matches_proximal_gradient(diabetes):
    X, y = diabetes
    v = weights(len(y))
    m = get_model("lasso", alpha=0.01)
    p = m.fit_weighted(X, y, v)
    assert m.kkt_violation(p, X, y, v) < 1e-8
    # independent: FISTA on sum v r^2/2 + n alpha |w|_1
    lev = len(y) * 0.01
    L = np.linalg.eigvalsh(X.T @ (v[:, None] * X)).max()
    w = z = np.zeros(X.shape[1])
    t = 1.0
    for _ in range(20000):
        g = -X.T @ (v * (y - X @ z))
        u = z - g / L
        w_new = np.sign(u) * np.maximum(np.abs(u) - lev / L, 0)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        z = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    np.testing.assert_allclose(p.coef, w, atol=1e-6)
    assert m.objective(p, X, y, v) <= m.objective(type(p)(coef=w), X, y, v) + 1e-9


def test_logistic_matches_scipy(cancer_small):
    X, y = cancer_small
    v = weights(len(y), 1)
    m = get_model("logistic", C=0.5)
    p = m.fit_weighted(X, y, v)
    assert m.kkt_violation(p, X, y, v) < 1e-6

    def obj(theta):
        w, b = theta[:-1], theta[-1]
        return 0.5 * w @ w + 0.5 * np.dot(v, np.logaddexp(0, -y * (X @ w + b)))

    res = minimize(obj, np.zeros(X.shape[1] + 1), method="BFGS", options={"gtol": 1e-10, "maxiter": 10000})
    np.testing.assert_allclose(p.coef, res.x[:-1], atol=1e-4)
    assert abs(p.intercept - res.x[-1]) < 1e-4


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_svm_matches_dual_qp(cancer_small, kernel):
    X, y = cancer_small
    X, y = X[:60], y[:60]
    v = weights(len(y), 2)
    m = get_model("svm", C=1.0, kernel=kernel, gamma=0.1)
    p = m.fit_weighted(X, y, v)
    assert m.kkt_violation(p, X, y, v) < 1e-5
    # independent: the dual QP max sum a - 1/2 (a y)^T K (a y), 0 <= a <= C v, a^T y = 0, by SLSQP
    K = m.kernel_matrix(X, X, 0.1)
    Q = (y[:, None] * y[None, :]) * K
    res = minimize(
        lambda a: 0.5 * a @ Q @ a - a.sum(),
        np.zeros(len(y)),
        jac=lambda a: Q @ a - 1.0,
        bounds=[(0, c) for c in m.C * v],
        constraints=[{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    dual_lib = 0.5 * p.dual_coef @ Q @ p.dual_coef - p.dual_coef.sum()
    assert abs(dual_lib - res.fun) < 1e-6 * (1 + abs(res.fun))
    # the decision function agrees with scikit-learn's own on the same weights
    from sklearn.svm import SVC

    pos = v > 0
    ref = SVC(C=1.0, kernel=kernel, gamma=0.1, tol=1e-8).fit(X[pos], y[pos], sample_weight=v[pos])
    np.testing.assert_allclose(m.decision_function(p, X), ref.decision_function(X), atol=1e-6)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_svm_candidates_share_one_kernel_matrix(cancer_small, kernel):
    """``predict_many`` (one kernel matrix for all candidates) gives each candidate's own
    ``decision_function`` / ``predict``, also for candidates on two training sets and widths."""
    X, y = cancer_small
    m = get_model("svm", C=1.0, kernel=kernel, gamma=0.1)
    A, B = X[:60], X[60:110]
    fits = [m.fit_weighted(A, y[:60], weights(60, s)) for s in range(3)]
    fits.append(m.fit_weighted(B, y[60:110], weights(50, 7)))
    fits[1].extra = {"gamma": 0.05}  # another kernel width for one candidate
    X_eval = X[110:170]
    one_by_one = np.vstack([m.decision_function(p, X_eval) for p in fits])
    np.testing.assert_allclose(m.decision_functions(fits, X_eval), one_by_one, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(m.predict_many(fits, X_eval), np.vstack([m.predict(p, X_eval) for p in fits]))


@pytest.mark.parametrize("kernel", ["rbf", "linear", "precomputed"])
def test_direct_libsvm_call_is_svc(cancer_small, kernel):
    """``libsvm_fit`` (libsvm without scikit-learn's checks) returns what ``SVC.fit`` returns."""
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    from spl_bench.models.svm import libsvm_fit

    X, y = cancer_small
    X, y = X[:80], y[:80]
    v = np.random.default_rng(3).uniform(0.05, 1.0, len(y))
    A = rbf_kernel(X, X, gamma=0.2) if kernel == "precomputed" else X
    sup, dual, b = libsvm_fit(A, y, v, 2.0, kernel, 0.2, 1e-7)
    ref = SVC(C=2.0, kernel=kernel, gamma=0.2, tol=1e-7).fit(A, y, sample_weight=v)
    np.testing.assert_array_equal(sup, ref.support_)
    np.testing.assert_array_equal(dual, ref.dual_coef_.ravel())
    assert b == ref.intercept_[0]
    # and it is a solution: the decision values agree with the fitted SVC's
    f = (rbf_kernel(X, X[sup], gamma=0.2) if kernel != "linear" else X @ X[sup].T) @ dual + b
    np.testing.assert_allclose(f, ref.decision_function(A), atol=1e-10)


def test_losses_and_objectives(diabetes, cancer_small):
    X, y = diabetes
    m = get_model("lasso", alpha=0.1)
    p = m.fit_weighted(X, y, np.ones(len(y)))
    np.testing.assert_allclose(m.losses(p, X, y), 0.5 * (y - X @ p.coef) ** 2)
    Xc, yc = cancer_small
    s = get_model("svm", C=2.0, kernel="linear")
    ps = s.fit_weighted(Xc, yc, np.ones(len(yc)))
    f = s.decision_function(ps, Xc)
    np.testing.assert_allclose(s.losses(ps, Xc, yc), 2.0 * np.maximum(0, 1 - yc * f))
    w = (ps.dual_coef * yc) @ Xc  # linear kernel: ||f||^2 = ||w||^2
    assert abs(s.regularizer(ps, len(yc)) - 0.5 * w @ w) < 1e-9


def test_degenerate_weights(diabetes, cancer_small):
    X, y = diabetes
    p = get_model("lasso").fit_weighted(X, y, np.zeros(len(y)))
    assert np.all(p.coef == 0)
    Xc, yc = cancer_small
    for name in ("svm", "logistic"):
        m = get_model(name)
        v = (yc > 0).astype(float)  # one class only
        p = m.fit_weighted(Xc, yc, v)
        assert np.all(m.predict(p, Xc) == 1.0)


def test_bad_model_parameters():
    with pytest.raises(ConfigError, match="alpha"):
        get_model("lasso", alpha=0)
    with pytest.raises(ConfigError, match="C"):
        get_model("svm", C=-1.0)
    with pytest.raises(ConfigError, match="gamma"):
        get_model("svm", gamma=0.0)
    with pytest.raises(ConfigError, match="kernel"):
        get_model("svm", kernel="poly")
    with pytest.raises(ConfigError, match="valid models"):
        get_model("forest")
    with pytest.raises(DataError, match="-1/\\+1"):
        get_model("svm").check_y(np.array([0.0, 1.0, 2.0]))


def test_svm_kkt_flags_coefficients_outside_the_box(cancer_small):
    X, y = cancer_small
    m = get_model("svm", C=1.0, kernel="linear")
    v = np.ones(len(y))
    p = m.fit_weighted(X, y, v)
    assert m.kkt_violation(p, X, y, v) < 1e-5
    bounded = np.flatnonzero(p.dual_coef >= m.C - 1e-9)
    assert bounded.size > 0
    v_small = v.copy()
    v_small[bounded] = 0.5  # the box shrank below the fitted coefficients
    assert m.kkt_violation(p, X, y, v_small) >= 0.5


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), shrink=st.floats(0.0, 0.9))
def test_logistic_warm_started_fit_is_the_cold_fit(seed, shrink):
    """A weighted logistic fit started from another fit's coefficients (ACS, MOSPL, GAGA's warm
    starts) reaches the cold fit's optimum: coefficients to 1e-7, KKT <= 1e-7."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 5))
    y = np.where(X @ rng.normal(size=5) + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    y[:2] = [-1.0, 1.0]
    m = get_model("logistic", C=1.0)
    start = m.fit_weighted(X, y, np.ones(80))
    v = np.clip(1.0 - shrink * rng.random(80), 0.0, 1.0)
    cold, warm = m.fit_weighted(X, y, v), m.fit_weighted(X, y, v, warm=start)
    np.testing.assert_allclose(warm.coef, cold.coef, atol=1e-7)
    assert abs(warm.intercept - cold.intercept) <= 1e-7
    assert m.kkt_violation(warm, X, y, v) <= 1e-7
