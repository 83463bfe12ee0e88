"""Tests of the exact SVM starts of the outlier path: the C-path, the KKT solve and the
null-space moves on singular active systems (duplicated rows)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.linalg import hilbert

from spl_bench.errors import ConfigError
from spl_bench.methods.outlier_path import CSVM, OutlierPath, outlier_path_theta
from spl_bench.methods.outlier_path.errors import SingularSystemError
from spl_bench.methods.outlier_path.linalg import fixed_part_hi, kkt_solve
from spl_bench.methods.outlier_path.path import svm_path
from test_outlier_path import kernel, make_data, reference_decision, theorem4_violation

CS = [0.01, 0.1, 1.0, 10.0, 100.0]


def exact_solve(M: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Gauss-Jordan elimination in rational arithmetic on the float entries (exact)."""
    n = len(r)
    A = [[Fraction(float(M[i, j])) for j in range(n)] + [Fraction(float(r[i]))] for i in range(n)]
    for c in range(n):
        p = next(i for i in range(c, n) if A[i][c] != 0)
        A[c], A[p] = A[p], A[c]
        for i in range(n):
            if i != c and A[i][c] != 0:
                f = A[i][c] / A[c][c]
                A[i] = [a - f * b for a, b in zip(A[i], A[c], strict=True)]
    return np.array([float(A[i][n] / A[i][i]) for i in range(n)])


@pytest.mark.parametrize("kind,d,seed,through_x", [("rbf", 3, 3, False), ("linear", 6, 4, False),
                                                  ("linear", 2, 5, False), ("linear", 6, 4, True),
                                                  ("linear", 2, 5, True)])
def test_svm_path_matches_the_polished_svc_at_every_c(kind, d, seed, through_x):
    """``through_x``: the margins through the linear kernel's factor X (``factor=X``)."""
    X, y = make_data(seed, n=60, d=d)
    K = kernel(X, kind)
    order = [3, 0, 4, 1, 2]  # the result follows the order of Cs, not the sorted one
    Cs = [CS[k] for k in order]
    for C, (a, b) in zip(Cs, svm_path(K, y, Cs, factor=X if through_x else None), strict=True):
        f = K @ (a * y) + b
        ref = reference_decision(X, y, C, kind, None)
        assert np.max(np.abs(f - ref)) <= 1e-8 * max(1.0, C), C
        viol, _ = theorem4_violation(a, b, K, y, C, 1.0, -np.inf)  # the standard SVM's KKT
        assert viol <= 1e-9 * max(1.0, C), (C, viol)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), n_dup=st.integers(1, 12), kind=st.sampled_from(["rbf", "linear"]))
@example(seed=4005, n_dup=1, kind="linear")  # a D-step stop (a fresh clone's make test, 2026-11-27)
def test_duplicated_rows_singular_systems_keep_the_kkt_conditions(seed, n_dup, kind):
    """Two copies of a point on the margin make system (11) singular: the null-space moves
    must leave a KKT point, for the SVM C-path and for the outlier path."""
    X, y = make_data(seed, n=36, d=2)
    X, y = np.vstack([X, X[:n_dup]]), np.concatenate([y, y[:n_dup]])
    K = kernel(X, kind)
    for C, (a, b) in zip(CS[1:], svm_path(K, y, CS[1:]), strict=True):
        viol, _ = theorem4_violation(a, b, K, y, C, 1.0, -np.inf)
        assert viol <= 1e-8 * max(1.0, C), (C, viol)
    res = outlier_path_theta(K, y, 10.0)
    # every recorded point is a KKT point; a step the path cannot take (a singular or degenerate
    # system, or a D-step whose swapped point would leave [0, C]: seed 4005, one duplicate, linear
    # kernel) ends it with the reason reported, never with a wrong point
    for bp in res.breakpoints:
        viol, _ = theorem4_violation(bp.alpha, bp.b, K, y, 10.0, bp.param, 0.0, bp.inlier)
        assert viol <= 1e-5, (bp.param, viol, res.failed)
    if res.failed is not None:
        assert res.failed.strip() and res.breakpoints, res.failed


def test_kkt_solve_refines_an_ill_conditioned_system_and_rejects_a_singular_one():
    H = hilbert(8)  # condition number ~1.5e10
    r = H @ np.ones(8)
    exact = exact_solve(H, r)
    refined = np.abs(kkt_solve(H, r) - exact).max()
    plain = np.abs(np.linalg.solve(H, r) - exact).max()
    assert refined <= 1e-9 and refined <= plain / 50, (refined, plain)
    with pytest.raises(SingularSystemError):
        kkt_solve(np.ones((3, 3)), np.ones(3))
    with pytest.raises(SingularSystemError):
        kkt_solve(np.array([[1.0, 1.0], [1.0, 1.0 + 1e-17]]), np.ones(2))


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 6), m=st.integers(0, 12), seed=st.integers(0, 2**32 - 1), zero_share=st.floats(0.0, 1.0))
def test_fixed_part_hi_is_the_exact_sum_and_skips_the_zero_coefficients(k, m, seed, zero_share):
    """``(Q_AF a_F, y_F^T a_F)`` in long double: within the long double's rounding of the exact
    rational sums, and equal to the product over every column, zeros included.  Equality (not a
    tolerance) is the claim there: it is the same ordered sum with exact zeros left out, and
    Outlier-Path's committed rows reproduce only if it holds."""
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(k, m)) * 10.0 ** rng.integers(-3, 4, size=(k, m))
    af = rng.normal(size=m) * 10.0 ** rng.integers(-3, 4, size=m)
    af[rng.uniform(size=m) < zero_share] = 0.0
    af[rng.uniform(size=m) < 0.1] = -0.0
    yF = rng.choice([-1.0, 1.0], size=m)
    q, yq = fixed_part_hi(Q, yF, af)
    assert q.dtype == np.longdouble and q.shape == (k,)
    eps = float(np.finfo(np.longdouble).eps)
    for row, got in zip(Q, q, strict=True):
        exact = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(row, af, strict=True)), Fraction(0))
        bound = m * eps * float(np.abs(row * af).sum()) + 1e-300
        assert abs(Fraction(*got.as_integer_ratio()) - exact) <= Fraction(bound)
    exact_y = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(yF, af, strict=True)), Fraction(0))
    assert abs(Fraction(*yq.as_integer_ratio()) - exact_y) <= Fraction(m * eps * float(np.abs(af).sum()) + 1e-300)
    full = Q.astype(np.longdouble) @ af.astype(np.longdouble), yF.astype(np.longdouble) @ af.astype(np.longdouble)
    assert np.array_equal(q, full[0]) and yq == full[1]


def test_estimators_with_path_and_svc_starts_agree():
    X, y = make_data(11, n=50, d=3)
    Xt, _ = make_data(12, n=40, d=3)
    kw = {"model": "svm", "model_params": {"kernel": "rbf"}, "C_grid": [0.1, 1.0, 10.0]}
    # OutlierPath polishes its start exactly; CSVM with "svc" keeps libsvm's answer (tol 1e-5)
    for cls, tol in ((CSVM, 1e-3), (OutlierPath, 1e-6)):
        a = cls(svm_start="path", **kw).fit(X, y)
        b = cls(svm_start="svc", **kw).fit(X, y)
        assert a.n_start_fallbacks_ == 0
        fa, fb = a.decision_candidates(Xt), b.decision_candidates(Xt)
        assert fa.shape == fb.shape and fa.shape[0] >= 3
        assert np.max(np.abs(fa - fb)) <= tol, cls
    with pytest.raises(ConfigError, match="svm_start"):
        CSVM(svm_start="smo", **kw).fit(X, y)
