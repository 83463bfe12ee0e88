"""Tests of the outlier path (OP-theta, OP-s) against independent computations.

* local optimality (Theorem 4, conditions 10a-10e) at every breakpoint, with margins
  recomputed from the coefficients through scikit-learn kernels;
* exactness of the path between breakpoints: scikit-learn's SVC with per-sample C
  (``sample_weight`` 1 for inliers and theta for outliers) at interior points;
* strict decrease of eq. (1) at every D-step (Theorem 3), recomputed independently.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import linear_kernel, rbf_kernel
from sklearn.svm import SVC

from spl_bench.methods.outlier_path import OutlierPathResult, outlier_path_s, outlier_path_theta

TOL = 1e-7


def make_data(seed: int, n: int = 40, d: int = 3, flip: float = 0.17) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    y[rng.choice(n, int(flip * n), replace=False)] *= -1
    return X, y


def kernel(X: np.ndarray, kind: str) -> np.ndarray:
    return linear_kernel(X) if kind == "linear" else rbf_kernel(X, gamma=1.0 / X.shape[1])


def svc(X, y, C, kind, weights):
    return SVC(C=C, kernel=kind, gamma=1.0 / X.shape[1], tol=1e-12, shrinking=False).fit(
        X, y, sample_weight=weights
    )


def reference_decision(X, y, C, kind, weights):
    """SVC with per-sample C, polished by one exact solve of its KKT system (a direct QP step).

    libsvm stops at a gradient tolerance (about 1e-7 in f here); fixing its bound
    coefficients and solving the equality-constrained system for the free ones and b
    gives the exact optimum whenever libsvm found the right active set, which is
    then verified.
    """
    w = np.ones(len(y)) if weights is None else weights
    est = svc(X, y, C, kind, w)
    K = kernel(X, kind)
    Q = np.outer(y, y) * K
    cap = C * w
    a = np.zeros(len(y))
    a[est.support_] = np.abs(est.dual_coef_.ravel())
    free = (a > 1e-6 * C) & (a < cap - 1e-6 * C)
    a[~free] = np.where(a[~free] > 0.5 * cap[~free], cap[~free], 0.0)
    F = np.flatnonzero(free)
    if F.size == 0:
        return est.decision_function(X)
    M = np.block([[Q[np.ix_(F, F)], y[F, None]], [y[None, F], np.zeros((1, 1))]])
    rhs = np.concatenate([1.0 - Q[F][:, ~free] @ a[~free], [-(y[~free] @ a[~free])]])
    sol = np.linalg.solve(M, rhs)
    a[F], b = sol[:-1], sol[-1]
    f = K @ (a * y) + b
    m = y * f
    assert np.all(a >= -1e-9) and np.all(a <= cap + 1e-9)
    assert np.all(m[a <= 1e-12] >= 1 - 1e-6) and np.all(m[a >= cap - 1e-12] <= 1 + 1e-6)
    return f


def independent_loss(z, theta, s):
    """Eq. (2) written as the difference of convex functions hinge - (1 - theta) [s - z]_+."""
    return np.maximum(0.0, 1.0 - z) - (1.0 - theta) * np.maximum(0.0, s - z)


def objective(alpha, b, K, y, C, theta, s):
    f = K @ (alpha * y) + b
    return 0.5 * (alpha * y) @ K @ (alpha * y) + C * independent_loss(y * f, theta, s).sum()


def theorem4_violation(alpha, b, K, y, C, theta, s, inlier=None):
    """Largest violation of (10a)-(10d) and the margin gap of (10e), both from scratch."""
    m = y * (K @ (alpha * y) + b)
    viol = abs(float(alpha @ y))  # the intercept's equality constraint
    for mi, ai in zip(m, alpha, strict=True):
        if mi > 1 + TOL:
            viol = max(viol, abs(ai))  # (10a)
        elif mi >= 1 - TOL:
            viol = max(viol, -ai, ai - C)  # (10b)
        elif mi > s + TOL:
            viol = max(viol, abs(ai - C))  # (10c)
        elif mi < s - TOL:
            viol = max(viol, abs(ai - C * theta))  # (10d)
    if inlier is not None:  # the stored partition is the polytope (3): inliers m >= s, outliers m <= s
        viol = max(viol, float(np.max(np.where(inlier, s - m, m - s))))
    gap = float(np.min(np.abs(m - s)))  # (10e): nobody on the boundary
    return viol, gap


CASES = [("rbf", 0.5, 3, 1), ("rbf", 2.0, 3, 2), ("linear", 0.5, 6, 3), ("linear", 2.0, 6, 4)]


@pytest.mark.parametrize("kind,C,d,seed", CASES)
def test_op_theta_breakpoints_are_local_optima(kind, C, d, seed):
    X, y = make_data(seed, d=d)
    K = kernel(X, kind)
    res = outlier_path_theta(K, y, C)
    assert res.failed is None
    th = res.params
    assert th[0] == 1.0 and th[-1] == 0.0 and np.all(np.diff(th) <= 0)
    assert len(res.breakpoints) > 5
    for bp in res.breakpoints:
        viol, gap = theorem4_violation(bp.alpha, bp.b, K, y, C, bp.param, 0.0, bp.inlier)
        assert viol <= 1e-6 * max(1.0, C), (bp.param, viol)
        if bp.param < 1.0:  # Theorem 4 is stated for theta in [0, 1)
            assert gap > 1e-10, (bp.param, gap)


@pytest.mark.parametrize("kind,C,d,seed", CASES)
def test_op_s_breakpoints_are_local_optima(kind, C, d, seed):
    X, y = make_data(seed, d=d)
    K = kernel(X, kind)
    res = outlier_path_s(K, y, C)
    assert res.failed is None
    s = res.params
    f0 = svc(X, y, C, kind, None).decision_function(X)
    assert s[0] == pytest.approx(min((y * f0).min(), 0.0), abs=1e-5)  # s_init of the paper
    assert s[-1] == 0.0 and np.all(np.diff(s) > 0)
    for bp in res.breakpoints:
        viol, gap = theorem4_violation(bp.alpha, bp.b, K, y, C, 0.0, bp.param, bp.inlier)
        assert viol <= 1e-6 * max(1.0, C), (bp.param, viol)
        assert gap > 1e-10, (bp.param, gap)


@pytest.mark.parametrize("kind,C,d,seed", [("rbf", 1.0, 3, 5), ("linear", 0.5, 5, 6)])
def test_op_theta_path_is_exact_between_breakpoints(kind, C, d, seed):
    """Inside a polytope the local solution is the SVM with per-sample C (1 or theta)."""
    X, y = make_data(seed, d=d)
    K = kernel(X, kind)
    res = outlier_path_theta(K, y, C)
    assert res.failed is None
    bps = res.breakpoints
    checked = 0
    for k in range(len(bps) - 1):
        t0, t1 = bps[k].param, bps[k + 1].param
        if t0 - t1 < 1e-6:
            continue
        for w in (0.3, 0.5):
            theta = t0 - w * (t0 - t1)
            a, b = res.solution_at(theta)
            f = K @ (a * y) + b
            ref = reference_decision(X, y, C, kind, np.where(bps[k].inlier, 1.0, theta))
            assert np.max(np.abs(f - ref)) <= 1e-6, (theta, np.max(np.abs(f - ref)))
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("kind,C,d,seed", [("rbf", 1.0, 3, 7), ("linear", 0.5, 5, 8)])
def test_op_s_path_matches_svc_on_inliers(kind, C, d, seed):
    """With theta = 0 the outliers have no weight: the SVM of the inliers, constant in s."""
    X, y = make_data(seed, d=d)
    K = kernel(X, kind)
    res = outlier_path_s(K, y, C)
    assert res.failed is None
    for k, bp in enumerate(res.breakpoints[:-1]):
        s_mid = 0.5 * (bp.param + res.breakpoints[k + 1].param)
        a, b = res.solution_at(s_mid)
        f_in = reference_decision(X[bp.inlier], y[bp.inlier], C, kind, None)
        assert np.max(np.abs((K @ (a * y) + b)[bp.inlier] - f_in)) <= 1e-6


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(["rbf", "linear"]),
    C=st.sampled_from([0.3, 1.0, 3.0]),
    variant=st.sampled_from(["theta", "s"]),
)
def test_dsteps_strictly_decrease_the_objective(seed, kind, C, variant):
    """Theorem 3: each D-step moves to a strictly better conditionally optimal solution."""
    X, y = make_data(seed, n=30, d=4)
    K = kernel(X, kind)
    res = (outlier_path_theta if variant == "theta" else outlier_path_s)(K, y, C)
    for bp in res.breakpoints:  # whatever the path produced is a local optimum
        theta, s = (bp.param, 0.0) if variant == "theta" else (0.0, bp.param)
        viol, _ = theorem4_violation(bp.alpha, bp.b, K, y, C, theta, s)
        assert viol <= 1e-6 * max(1.0, C)
    for jump in res.jumps:
        theta, s = (jump.param, 0.0) if variant == "theta" else (0.0, jump.param)
        after = next(bp for bp in res.breakpoints if bp.param == jump.param and bp.kind == "jump")
        before = objective(jump.alpha_before, jump.b_before, K, y, C, theta, s)
        now = objective(after.alpha, after.b, K, y, C, theta, s)
        assert now == pytest.approx(jump.objective_after, rel=1e-9, abs=1e-9)
        chain = [jump.objective_before, *jump.objectives]
        if variant == "theta" and jump.param == 1.0:
            # Theorem 3 needs theta < 1: at theta = 1 both sides of the boundary have the same loss
            assert abs(now - before) <= 1e-9 * max(1.0, abs(before))
            continue
        if jump.degenerate:
            # the last D-step did not move f at all (pinned by a rank-deficient kernel):
            # same decision values, and only possible for the linear kernel (rank <= d + 1)
            assert kind == "linear"
            f_before = K @ (jump.alpha_before * y) + jump.b_before
            if len(chain) == 2:
                assert np.max(np.abs(K @ (after.alpha * y) + after.b - f_before)) <= 1e-8
            chain = chain[:-1]
        else:
            assert now < before - 1e-12
        assert all(b < a for a, b in zip(chain, chain[1:], strict=False))


def test_path_file_round_trip(tmp_path):
    X, y = make_data(15, n=40, d=3)
    res = outlier_path_theta(kernel(X, "rbf"), y, 2.0)
    back = OutlierPathResult.load(res.save(tmp_path / "op_theta", meta={"data": "toy"}))
    assert np.array_equal(back.params, res.params) and np.array_equal(back.alphas, res.alphas)
    assert [j.objective_after for j in back.jumps] == [j.objective_after for j in res.jumps]
    for t in (0.77, 0.31):
        a0, b0 = res.solution_at(t)
        a1, b1 = back.solution_at(t)
        assert np.array_equal(a0, a1) and b0 == b1


def test_path_has_jumps_and_theta_start_is_the_svm():
    X, y = make_data(15, n=40, d=3)
    K = kernel(X, "rbf")
    res = outlier_path_theta(K, y, 2.0)
    ref = reference_decision(X, y, 2.0, "rbf", None)
    f = K @ (res.breakpoints[0].alpha * y) + res.breakpoints[0].b
    assert np.max(np.abs(f - ref)) <= 1e-6
    assert len(res.jumps) >= 1
    # the objective at theta = 0 is not larger than that of the SVM start evaluated at theta = 0
    svm = res.breakpoints[0]
    assert res.breakpoints[-1].objective <= objective(svm.alpha, svm.b, K, y, 2.0, 0.0, 0.0) + 1e-9


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 10_000), symmetric=st.booleans())
def test_gathers_give_numpys_fancy_indexing_values_and_layout(n, seed, symmetric):
    """The engine's gathers replace ``Q[np.ix_(A, F)]`` and ``Q[:, nz]``: same values and same
    memory layout (the layout decides which BLAS kernel a product runs, hence its rounding)."""
    from spl_bench.gaga.core.gather import take_block, take_columns, transpose_for_columns

    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n))
    if symmetric:
        Q = Q + Q.T
    rows = np.flatnonzero(rng.uniform(size=n) < 0.4)
    cols = np.flatnonzero(rng.uniform(size=n) < 0.6)
    Qt = transpose_for_columns(Q)
    assert (Qt is Q) == bool(np.array_equal(Q, Q.T))
    assert np.array_equal(Qt, Q.T) and Qt.flags["C_CONTIGUOUS"]
    for mine, ref in ((take_block(Q, rows, cols), Q[np.ix_(rows, cols)]), (take_columns(Qt, cols), Q[:, cols])):
        assert mine.shape == ref.shape and np.array_equal(mine, ref)
        assert mine.flags["C_CONTIGUOUS"] == ref.flags["C_CONTIGUOUS"]
        assert mine.flags["F_CONTIGUOUS"] == ref.flags["F_CONTIGUOUS"]
        x = rng.normal(size=ref.shape[1])
        assert np.array_equal(mine @ x, ref @ x)


@pytest.mark.parametrize("variant", ["theta", "s"])
@pytest.mark.parametrize("kind,C,d,seed", [c for c in CASES if c[0] == "linear"] + [("linear", 1.0, 4, 7)])
def test_linear_factor_route_traces_the_same_local_optima(variant, kind, C, d, seed):
    """With ``factor=X`` (K = X X^T) the margins go through X in O(n d): every breakpoint is still a
    local optimum (Theorem 4, margins recomputed from scikit-learn's kernel), and the path has the
    breakpoints of the route through K, at the same parameters and coefficients up to rounding."""
    X, y = make_data(seed, n=60, d=d)
    K = kernel(X, kind)
    run = outlier_path_theta if variant == "theta" else outlier_path_s
    ref, fac = run(K, y, C), run(K, y, C, factor=X)
    assert ref.failed is None and fac.failed is None
    assert len(fac.breakpoints) == len(ref.breakpoints) > 1
    for a, b in zip(fac.breakpoints, ref.breakpoints, strict=True):
        assert a.param == pytest.approx(b.param, rel=1e-8, abs=1e-10)
        np.testing.assert_allclose(a.alpha, b.alpha, rtol=0.0, atol=1e-8 * max(1.0, C))
        theta, s = (a.param, 0.0) if variant == "theta" else (0.0, a.param)
        viol, _ = theorem4_violation(a.alpha, a.b, K, y, C, theta, s, a.inlier)
        assert viol <= 1e-6 * max(1.0, C), (a.param, viol)
