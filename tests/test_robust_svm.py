"""Biggio et al.'s label-noise robust SVM (GAGA Table 8).

Independent computations: the corrected kernel (KC) against the exact
expectation over all 2^n label-flip patterns; ``mu = 0`` against scikit-learn's
RBF ``SVC``; the libsvm solution on the corrected matrix against the dual QP
solved by scipy's SLSQP.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.spatial.distance import cdist
from sklearn.svm import SVC

from spl_bench.errors import ConfigError, DataError
from spl_bench.methods.robust.robust_svm import RobustSVC, RobustSVMMethod, flip_correction


def two_blobs(seed: int, n: int = 200, flip: float = 0.0):
    rng = np.random.default_rng(seed)
    t = rng.choice([-1.0, 1.0], n)
    X = rng.standard_normal((n, 4)) + 0.8 * t[:, None] * np.array([1.0, 1.0, 0.0, 0.0])
    y = t.copy()
    bad = rng.choice(n, int(round(flip * n)), replace=False)
    y[bad] = -y[bad]
    return X, y, t


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), mu=st.floats(0.0, 0.49))
def test_correction_is_the_expected_hessian_over_label_flips(seed: int, mu: float) -> None:
    rng = np.random.default_rng(seed)
    n = 5
    A = rng.standard_normal((n, 3))
    K = A @ A.T
    t = rng.choice([-1.0, 1.0], n)
    expected = np.zeros((n, n))
    for eps in itertools.product([1.0, -1.0], repeat=n):
        e = np.array(eps)
        p = np.prod(np.where(e < 0, mu, 1.0 - mu))
        yy = t * e
        expected += p * np.outer(yy, yy) * K
    np.testing.assert_allclose(np.outer(t, t) * flip_correction(K, mu), expected, atol=1e-12)
    assert np.linalg.eigvalsh(flip_correction(K, mu)).min() > -1e-10


def test_mu_zero_is_the_plain_svm() -> None:
    X, y, _ = two_blobs(0, flip=0.2)
    Xt, *_ = two_blobs(1)
    ours = RobustSVC(C=3.0, gamma=0.4, mu=0.0).fit(X, y)
    ref = SVC(C=3.0, gamma=0.4, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(Xt), ref.decision_function(Xt), atol=1e-4)
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))


@pytest.mark.parametrize("mu", [0.1, 0.3])
def test_libsvm_on_corrected_kernel_solves_the_corrected_dual(mu: float) -> None:
    X, y, _ = two_blobs(2, n=30, flip=0.3)
    C, g = 2.0, 0.5
    est = RobustSVC(C=C, gamma=g, mu=mu, tol=1e-8).fit(X, y)
    K = np.exp(-g * cdist(X, X, "sqeuclidean"))
    s = 1 - 4 * mu * (1 - mu)
    Kc = s * K + (1 - s) * np.diag(np.diag(K))
    Q = np.outer(y, y) * Kc

    def neg_dual(a: np.ndarray) -> float:
        return 0.5 * a @ Q @ a - a.sum()

    res = minimize(
        neg_dual,
        np.full(len(y), C / 2),
        jac=lambda a: Q @ a - 1.0,
        bounds=[(0.0, C)] * len(y),
        constraints=[{"type": "eq", "fun": lambda a: a @ y, "jac": lambda a: y}],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success
    a = np.zeros(len(y))
    a[est.support_] = est.dual_coef_ * y[est.support_]  # dual_coef_ holds a_j y_j (labels are -1/+1)
    assert neg_dual(a) == pytest.approx(res.fun, rel=1e-5)
    # test-point decision function: shrunk kernel sum plus b, from the SLSQP dual
    Xt, *_ = two_blobs(3, n=50)
    Kt = np.exp(-g * cdist(Xt, X, "sqeuclidean"))
    free = (res.x > 1e-5 * C) & (res.x < C * (1 - 1e-5))
    b = np.mean(y[free] - Q[free] @ res.x * y[free])
    np.testing.assert_allclose(est.decision_function(Xt), s * Kt @ (res.x * y) + b, atol=2e-3)


def test_beats_svc_under_30_percent_label_flips() -> None:
    acc_r, acc_s = [], []
    for seed in range(4):
        X, y, _ = two_blobs(seed, n=200, flip=0.3)
        Xt, _, tt = two_blobs(seed + 100, n=500)
        acc_r.append(RobustSVC(C=10.0, gamma=1.0, mu=0.3).fit(X, y).score(Xt, tt))
        acc_s.append(SVC(C=10.0, gamma=1.0).fit(X, y).score(Xt, tt))
    assert np.mean(acc_r) > np.mean(acc_s) + 0.03


def test_labels_errors_and_parameters() -> None:
    X, y, _ = two_blobs(4, n=40)
    words = np.where(y > 0, "spam", "ham")
    est = RobustSVC(mu=0.2).fit(X, words)
    assert set(est.predict(X)) <= {"spam", "ham"}
    assert np.mean(est.predict(X) == words) > 0.7
    with pytest.raises(DataError, match="binary"):
        RobustSVC().fit(X, np.arange(40) % 3)
    with pytest.raises(ConfigError, match="mu"):
        RobustSVC(mu=0.5).fit(X, y)
    with pytest.raises(ConfigError, match="C"):
        RobustSVC(C=0).fit(X, y)
    with pytest.raises(ConfigError, match="gamma_units"):
        RobustSVC(gamma_units="median").fit(X, y)


def test_gamma_units_scale_divides_by_feature_variance() -> None:
    X, y, _ = two_blobs(6, n=60, flip=0.2)
    X = 4.0 * X
    s = X.shape[1] * X.var()
    a = RobustSVC(C=1.0, gamma=0.5, mu=0.1, gamma_units="scale").fit(X, y)
    b = RobustSVC(C=1.0, gamma=0.5 / s, mu=0.1).fit(X, y)
    c = RobustSVC(C=1.0, gamma="scale", mu=0.1).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-8)
    assert c.gamma_ == pytest.approx(1.0 / s)


def test_method_grid_takes_svm_model_params() -> None:
    X, y, _ = two_blobs(5, n=80, flip=0.2)
    m = RobustSVMMethod(model="svm", model_params={"C": 1.0, "gamma": 0.5}, mu=[0.0, 0.2]).fit(X, y)
    assert m.candidate_params_ == [{"C": 1.0, "gamma": 0.5, "mu": 0.0}, {"C": 1.0, "gamma": 0.5, "mu": 0.2}]
    P = m.predict_candidates(X)
    assert set(np.unique(P)) <= {-1.0, 1.0}
    np.testing.assert_array_equal(P[1], RobustSVC(C=1.0, gamma=0.5, mu=0.2).fit(X, y).predict(X))
    assert 0.0 <= m.select(1).score(X, y) <= 1.0
    with pytest.raises(ConfigError, match="classification"):
        RobustSVMMethod(model="lasso").fit(X, y)
    with pytest.raises(DataError):
        RobustSVMMethod(model="svm").fit(X, (y > 0).astype(float))  # labels must be -1/+1
