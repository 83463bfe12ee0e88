"""Tests of the CCCP baseline, its SMO solver and the OutlierPath / CCCP / CSVM estimators."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from spl_bench.errors import ConfigError
from spl_bench.methods.outlier_path import CCCP, CSVM, OutlierPath
from spl_bench.methods.outlier_path.cccp import box_homotopy, cccp, smo_box
from spl_bench.methods.outlier_path.path import polished_svm
from spl_bench.models import get_model


def make_data(seed, n=30, d=3, flip=0.17):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] - 0.7 * X[:, 1] > 0, 1.0, -1.0)
    y[rng.choice(n, int(flip * n), replace=False)] *= -1
    return X, y


def ramp(z, theta, s):
    return np.maximum(0.0, 1.0 - z) - (1.0 - theta) * np.maximum(0.0, s - z)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 5000), C=st.sampled_from([0.2, 1.0, 5.0]))
@example(seed=1083, C=0.2)  # no free coefficient, one left at 1e-61 instead of 0
def test_smo_box_matches_svc(seed, C):
    X, y = make_data(seed)
    K = rbf_kernel(X, gamma=0.5)
    Q = np.outer(y, y) * K
    a, b, _ = smo_box(Q, y, np.zeros(len(y)), np.full(len(y), C), tol=1e-10)
    est = SVC(C=C, kernel="rbf", gamma=0.5, tol=1e-10).fit(X, y)
    ref = est.decision_function(X) - est.intercept_[0]
    assert np.max(np.abs(K @ (a * y) - ref)) < 1e-5  # the kernel part is unique
    # b is unique only with a free coefficient; otherwise check it lies in the KKT interval
    m = y * (K @ (a * y) + b)
    assert np.all(m[a < 1e-9] >= 1 - 1e-6) and np.all(m[a > C - 1e-9] <= 1 + 1e-6)
    if np.any((a > 1e-6) & (a < C - 1e-6)):
        assert abs(b - est.intercept_[0]) < 1e-5


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 5000), C=st.sampled_from([0.01, 1.0, 100.0]), kernel=st.sampled_from(["rbf", "linear"]),
       warm=st.booleans())
def test_compiled_smo_takes_the_numpy_loops_steps(seed, C, kernel, warm):
    """The compiled pair loop is the numpy loop (same operations, same order): same iterates, bit for bit,
    including duplicated rows (ties in the working-set choice) and an iteration cap that stops it."""
    X, y = make_data(seed)
    X[:5] = X[0]
    K = rbf_kernel(X, gamma=0.5) if kernel == "rbf" else X @ X.T
    Q = np.outer(y, y) * K
    rng = np.random.default_rng(seed)
    out = rng.uniform(size=len(y)) < 0.25
    theta = float(rng.uniform())
    lo = np.where(out, -C * (1 - theta), 0.0)
    hi = np.where(out, C * theta, C)
    a0 = rng.uniform(0.0, C, size=len(y)) if warm else None
    for cap in (7, 50_000):
        a1, b1, it1 = smo_box(Q, y, lo, hi, a0, tol=1e-10, max_iter=cap, compiled=False)
        a2, b2, it2 = smo_box(Q, y, lo, hi, a0, tol=1e-10, max_iter=cap, compiled=True)
        assert it1 == it2
        assert np.array_equal(a1, a2) and b1 == b2


def test_smo_shifted_box_matches_slsqp():
    """The CCCP subproblem's box [-C(1-theta), C theta] on outliers, against SLSQP."""
    X, y = make_data(3, n=16)
    K = rbf_kernel(X, gamma=0.5)
    Q = np.outer(y, y) * K
    C, theta = 1.0, 0.3
    out = np.zeros(len(y), dtype=bool)
    out[[1, 4, 9]] = True
    lo = np.where(out, -C * (1 - theta), 0.0)
    hi = np.where(out, C * theta, C)
    a, _, _ = smo_box(Q, y, lo, hi, tol=1e-12)
    res = minimize(
        lambda v: 0.5 * v @ Q @ v - v.sum(), np.zeros(len(y)), jac=lambda v: Q @ v - 1.0,
        bounds=list(zip(lo, hi, strict=True)), constraints=[{"type": "eq", "fun": lambda v: y @ v}],
        method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000},
    )
    assert res.success
    obj = 0.5 * a @ Q @ a - a.sum()
    assert obj <= res.fun + 1e-9
    assert np.max(np.abs(K @ ((a - res.x) * y))) < 1e-4


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 5000), kind=st.sampled_from(["rbf", "linear", "linear_factor"]),
       theta=st.sampled_from([0.0, 0.4]))
def test_box_homotopy_matches_slsqp(seed, kind, theta):
    """The exact warm-started CCCP subproblem solver against SLSQP on the new box (``linear_factor``:
    a linear kernel whose margins go through ``Z = diag(y) X``)."""
    X, y = make_data(seed, n=18, d=4)
    K = rbf_kernel(X, gamma=0.5) if kind == "rbf" else X @ X.T
    Q = np.outer(y, y) * K
    C = 1.0
    a0, b0 = polished_svm(K, y, C)
    m = y * (K @ (a0 * y) + b0)
    out = m < np.sort(m)[4]  # the 4 smallest margins become the linearisation's outliers
    lo = np.where(out, -C * (1 - theta), 0.0)
    hi = np.where(out, C * theta, C)
    Z = y[:, None] * X if kind == "linear_factor" else None
    a, b, _ = box_homotopy(Q, y, a0, b0, np.zeros(len(y)), np.full(len(y), C), lo, hi, Z=Z)
    res = minimize(
        lambda v: 0.5 * v @ Q @ v - v.sum(), np.clip(a0, lo, hi), jac=lambda v: Q @ v - 1.0,
        bounds=list(zip(lo, hi, strict=True)), constraints=[{"type": "eq", "fun": lambda v: y @ v}],
        method="SLSQP", options={"ftol": 1e-15, "maxiter": 2000},
    )
    assert np.all(a >= lo - 1e-9) and np.all(a <= hi + 1e-9) and abs(a @ y) < 1e-9
    assert 0.5 * a @ Q @ a - a.sum() <= res.fun + 1e-9
    # KKT with the returned intercept: margin > 1 at lo, < 1 at hi, = 1 in between
    mm = y * (K @ (a * y) + b)
    free = (a > lo + 1e-9) & (a < hi - 1e-9)
    assert np.all(np.abs(mm[free] - 1) < 1e-8)
    assert np.all(mm[a <= lo + 1e-9] >= 1 - 1e-8) and np.all(mm[a >= hi - 1e-9] <= 1 + 1e-8)


@pytest.mark.parametrize("theta,s", [(0.5, 0.0), (0.0, 0.0), (0.0, -0.5)])
def test_cccp_decreases_the_objective_and_is_a_fixed_point(theta, s):
    X, y = make_data(5, n=40)
    K = rbf_kernel(X, gamma=0.5)
    Q = np.outer(y, y) * K
    C = 1.0
    est = SVC(C=C, kernel="precomputed", tol=1e-8).fit(K, y)
    a0 = np.zeros(len(y))
    a0[est.support_] = np.abs(est.dual_coef_.ravel())
    b0 = float(est.intercept_[0])

    def J(a, b):
        ay = a * y
        return 0.5 * ay @ K @ ay + C * ramp(y * (K @ ay + b), theta, s).sum()

    sol = cccp(Q, y, C, theta, s, a0, b0, tol=1e-9, solver="smo")
    exact = polished_svm(K, y, C)
    hom = cccp(Q, y, C, theta, s, exact[0], exact[1], solver="homotopy")
    assert hom.objective == pytest.approx(sol.objective, rel=1e-6)
    assert sol.objective <= J(a0, b0) + 1e-9
    assert sol.objective == pytest.approx(J(sol.alpha, sol.b), rel=1e-9)
    # fixed point: the linearisation set no longer changes and the box KKT holds
    m = y * (K @ (sol.alpha * y) + sol.b)
    out = m < s
    assert np.all(sol.alpha[out] <= C * theta + 1e-7) and np.all(sol.alpha[out] >= -C * (1 - theta) - 1e-7)
    assert np.all(sol.alpha[~out] >= -1e-7) and np.all(sol.alpha[~out] <= C + 1e-7)


def test_outlier_path_estimator_candidates_and_predictions():
    X, y = make_data(8, n=40)
    est = OutlierPath(model="svm", model_params={"kernel": "rbf", "gamma": "auto"}, variant="theta",
                      C_grid=[0.5, 2.0])
    est.fit(X, y)
    assert est.gamma_ == pytest.approx(1.0 / X.shape[1])
    Cs = {p["C"] for p in est.candidate_params_}
    assert Cs == {0.5, 2.0}
    assert all(0.0 <= p["theta"] <= 1.0 for p in est.candidate_params_)
    n_bp = sum(len(p.breakpoints) for p in est.paths_)
    assert len(est.candidate_params_) == n_bp == est.run_info()["n_critical_breakpoints"]
    # the fast stacked prediction equals the model's own per-candidate prediction
    Xt = np.random.default_rng(1).normal(size=(15, 3))
    P = est.predict_candidates(Xt)
    model = get_model("svm", kernel="rbf", gamma=1.0)
    for k in (0, len(est.candidate_models_) // 2, len(est.candidate_models_) - 1):
        assert np.array_equal(P[k], model.predict(est.candidate_models_[k], Xt))
    est.select(0)  # theta = 1: the standard SVM
    ref = SVC(C=0.5, kernel="rbf", gamma=1.0 / 3, tol=1e-10).fit(X, y)
    assert np.mean(est.predict(X) == ref.predict(X)) == 1.0


def test_op_s_and_cccp_and_csvm_estimators(tmp_path):
    X, y = make_data(9, n=40)
    mp = {"kernel": "linear", "C": 1.0}
    ops = OutlierPath(model_params=mp, variant="s").fit(X, y)
    assert [p["s"] for p in ops.candidate_params_][-1] == 0.0
    file = ops.save_path(tmp_path / "path.csv")
    assert len(file.read_text().splitlines()) == len(ops.candidate_params_) + 1
    (npz,) = ops.save_paths(tmp_path)
    assert npz.name == "op_s_C=1.npz" and npz.exists()
    cc = CCCP(model_params=mp, variant="s", C_grid=[0.1, 1.0]).fit(X, y)
    s_vals = [p["s"] for p in cc.candidate_params_[:5]]
    assert s_vals[-1] == 0.0 and s_vals[0] < 0 and s_vals[2] == pytest.approx(0.5 * s_vals[0])
    assert cc.predict_candidates(X).shape == (10, 40)
    ct = CCCP(model_params=mp, variant="theta", n_candidates=3).fit(X, y)
    assert [p["theta"] for p in ct.candidate_params_] == [1.0, 0.5, 0.0]
    sv = CSVM(model_params=mp, C_grid=[0.1, 1.0]).fit(X, y)
    ref = SVC(C=1.0, kernel="linear").fit(X, y)
    assert np.mean(sv.select(1).predict(X) == ref.predict(X)) >= 0.97


def test_bad_configuration_raises():
    X, y = make_data(1)
    with pytest.raises(ConfigError):
        OutlierPath(model="lasso").fit(X, y)
    with pytest.raises(ConfigError):
        OutlierPath(model_params={"kernel": "linear"}, variant="both").fit(X, y)
    with pytest.raises(ConfigError):
        CCCP(model_params={"kernel": "linear"}, n_candidates=1).fit(X, y)
    with pytest.raises(ConfigError):
        CSVM(model_params={"kernel": "linear"}, C_grid=[-1.0]).fit(X, y)


@pytest.mark.parametrize("method", ["op_theta", "op_s", "cccp_theta", "cccp_s", "csvm"])
def test_linear_kernel_estimators_through_x_give_the_candidates_through_k(method, monkeypatch):
    """A linear kernel with 2d < n routes every margin through X (``linear_factor``); with the
    route switched off the estimators multiply by K: both give the same candidates up to rounding."""
    from spl_bench.methods.outlier_path import estimators as op_est
    from spl_bench.methods.outlier_path import linalg as op_linalg

    X, y = make_data(11, n=60)
    mp = {"kernel": "linear", "C": 1.0}
    kind, _, variant = method.partition("_")
    make = {"op": lambda: OutlierPath(model_params=mp, variant=variant, C_grid=[0.3, 3.0]),
            "cccp": lambda: CCCP(model_params=mp, variant=variant, C_grid=[0.3, 3.0], n_candidates=3),
            "csvm": lambda: CSVM(model_params=mp, C_grid=[0.3, 3.0])}[kind]
    assert op_linalg.linear_factor("linear", X) is X and op_linalg.linear_factor("rbf", X) is None
    fast = make().fit(X, y)
    monkeypatch.setattr(op_est, "linear_factor", lambda kernel, X: None)
    slow = make().fit(X, y)
    assert [p.keys() for p in fast.candidate_params_] == [p.keys() for p in slow.candidate_params_]
    np.testing.assert_allclose([list(p.values()) for p in fast.candidate_params_],
                               [list(p.values()) for p in slow.candidate_params_], rtol=1e-8, atol=1e-10)
    for a, b in zip(fast.candidate_models_, slow.candidate_models_, strict=True):
        np.testing.assert_allclose(a.dual_coef, b.dual_coef, rtol=0.0, atol=1e-8)
        assert a.intercept == pytest.approx(b.intercept, abs=1e-8)
