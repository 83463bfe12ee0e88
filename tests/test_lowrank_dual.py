"""The warm-started active-set method for the SVM dual with a low-rank kernel (issue 20).

``lowrank_svm_dual`` solves ``min 1/2 ||G^T a||^2 - 1^T a``, ``0 <= a <= u``, ``y^T a = 0``.
Each answer is certified without the solver: the natural residual of the dual, with the
margins ``g = 1 - y (X w + b)`` recomputed from ``a`` (``w = X^T (a y)``) and ``b`` taken from the
free samples, must vanish.  For this convex QP that is the whole of the KKT conditions, so a
point that passes is an optimum (HiGHS is no second reference here: on some of these
problems, 100-odd samples, its QP solver runs for minutes, and its points are feasible only
to its tolerances).  The inputs include what the linear kernel meets in the
tables: far more samples than features, duplicated samples, collinear columns, samples with
zero weight, and warm starts from the optimum of a nearby box.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import LinAlgError

from gaga_reference import svm_natural_residual
from spl_bench.gaga.svm.lowrank_dual import LowRankState, _FreeQR, lowrank_svm_dual


def problem(seed: int, n: int, d: int, n_dup: int, collinear: bool, flip: float):
    """Two Gaussian classes in ``d`` dimensions with ``flip`` of the labels flipped, ``n_dup``
    samples repeated, and (``collinear``) a last column equal to the sum of the first two."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, d)) + 0.8 * y[:, None]
    y[rng.random(n) < flip] *= -1.0
    if collinear:
        X = np.column_stack([X, X[:, 0] + X[:, 1]])
    if n_dup:
        j = rng.choice(n, n_dup, replace=False)
        X, y = np.vstack([X, X[j]]), np.concatenate([y, y[j]])
    return X, y


def intercept(X, y, a, u):
    """``b`` from the free samples (``g_i = 0``), their median; 0 if none is free."""
    w = X.T @ (a * y)
    free = (a > 1e-8 * u) & (a < (1 - 1e-8) * u)
    return float(np.median(y[free] - X[free] @ w)) if free.any() else 0.0


def certify(X, y, a, u, C):
    b = intercept(X, y, a, u)
    g = 1.0 - y * (X @ (X.T @ (a * y)) + b)
    return svm_natural_residual(a, g, u / C, y, C)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(30, 160), d=st.integers(2, 12),
       n_dup=st.integers(0, 6), collinear=st.booleans(), flip=st.floats(0.0, 0.4),
       C=st.sampled_from([0.1, 1.0, 10.0]))
def test_cold_start_is_the_optimum(seed, n, d, n_dup, collinear, flip, C):
    X, y = problem(seed, n, d, n_dup, collinear, flip)
    rng = np.random.default_rng(seed + 1)
    u = C * np.clip(rng.uniform(-0.2, 1.2, y.size), 0.0, 1.0)  # some weights are exactly 0
    none = np.zeros(y.size, dtype=bool)
    a = lowrank_svm_dual(y[:, None] * X, y, u, np.zeros(y.size), none, none)
    assert a is not None
    assert np.all(a >= 0.0) and np.all(a <= u) and np.all(a[u == 0] == 0.0)
    assert certify(X, y, a, u, C) <= 1e-8


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(40, 200), d=st.integers(2, 15),
       n_dup=st.integers(0, 4), shift=st.floats(0.01, 0.5))
def test_warm_start_from_a_nearby_box(seed, n, d, n_dup, shift):
    """As in ACS: the previous optimum and its sets, a box changed on part of the samples."""
    X, y = problem(seed, n, d, n_dup, collinear=False, flip=0.25)
    G = y[:, None] * X
    rng = np.random.default_rng(seed + 2)
    u = np.clip(rng.uniform(-0.1, 1.1, y.size), 0.0, 1.0)
    none = np.zeros(y.size, dtype=bool)
    a = lowrank_svm_dual(G, y, u, np.zeros(y.size), none, none)
    assert a is not None
    for _ in range(3):
        Z = (a > 1e-8 * u) & (a < (1 - 1e-8) * u)
        P = (u > 0) & ~Z & (a >= (1 - 1e-8) * u)
        moved = rng.random(y.size) < 0.3
        u = np.where(moved, np.clip(u + rng.uniform(-shift, shift, y.size), 0.0, 1.0), u)
        a = lowrank_svm_dual(G, y, u, a, Z, P)
        assert a is not None
        assert certify(X, y, a, u, 1.0) <= 1e-8


def test_more_margin_samples_than_dimensions():
    """Samples on a grid of a plane, many exactly on the margins: the free columns are
    dependent, which the method handles by the zero-curvature exchange, not a singular solve."""
    g = np.arange(-3.0, 4.0)
    X = np.array([[i, j] for i in g for j in g])
    y = np.where(X[:, 0] >= 0.5, 1.0, -1.0)  # the margins +-1 pass through grid columns 0 and 1
    X = np.vstack([X, X])  # every sample twice
    y = np.concatenate([y, y])
    u = np.full(y.size, 10.0)
    none = np.zeros(y.size, dtype=bool)
    a = lowrank_svm_dual(y[:, None] * X, y, u, np.zeros(y.size), none, none)
    assert a is not None
    assert certify(X, y, a, u, 10.0) <= 1e-9
    w = X.T @ (a * y)
    np.testing.assert_allclose(w, [2.0, 0.0], atol=1e-9)  # the margins x1 = 0 and x1 = 1


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 8), m=st.integers(1, 6))
def test_free_set_triangular_solves_match_the_dense_solves_and_refuse_a_zero_pivot(seed, d, m):
    """``_FreeQR``'s solves with ``R_m`` and ``R_m^T`` (LAPACK ``trtrs``) against ``numpy.linalg.solve``
    on the assembled ``R_m``, and a zero on the diagonal of ``R_m`` raising like ``solve_triangular``."""
    rng = np.random.default_rng(seed)
    fq = _FreeQR(rng.normal(size=(3 * (d + 1), d + 1)))
    for k in range(min(m, d + 1)):
        fq.insert(k)
    Rm = fq.R[: fq.m, : fq.m]
    r = rng.normal(size=fq.m)
    assert np.allclose(Rm @ fq.solve_upper(r), r, atol=1e-9 * (1 + np.abs(r).max()))
    assert np.allclose(Rm.T @ fq.solve_lower(r), r, atol=1e-9 * (1 + np.abs(r).max()))
    fq.R = fq.R.copy()
    fq.R[fq.m - 1, fq.m - 1] = 0.0
    with pytest.raises(LinAlgError):
        fq.solve_upper(r)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(30, 200), d=st.integers(2, 20),
       n_dup=st.integers(0, 6), collinear=st.booleans(), C=st.sampled_from([0.1, 1.0, 10.0]))
def test_compiled_loop_matches_the_numpy_reference(seed, n, d, n_dup, collinear, C):
    """The compiled iteration (Givens-updated QR), also with the factorisation carried from fit
    to fit (``LowRankState``), and the NumPy one (scipy's ``qr_insert`` / ``qr_delete``) from a
    cold start and three warm starts as in ACS: all certified optima with the same
    ``w = G^T a`` (the dual point itself is not unique with duplicated samples)."""
    X, y = problem(seed, n, d, n_dup, collinear, flip=0.2)
    G = y[:, None] * X
    rng = np.random.default_rng(seed + 3)
    u = C * np.clip(rng.uniform(-0.2, 1.2, y.size), 0.0, 1.0)
    a_prev, Z, P = np.zeros(y.size), np.zeros(y.size, dtype=bool), np.zeros(y.size, dtype=bool)
    state = LowRankState()
    for _ in range(4):
        ref = lowrank_svm_dual(G, y, u, a_prev, Z, P, compiled=False)
        out = lowrank_svm_dual(G, y, u, a_prev, Z, P, compiled=True)
        carried = lowrank_svm_dual(G, y, u, a_prev, Z, P, compiled=True, state=state)
        assert (ref is None) == (out is None) == (carried is None)
        if ref is None:
            return
        for a in (out, carried):
            assert certify(X, y, a, u, C) <= 1e-8
            np.testing.assert_allclose(G.T @ a, G.T @ ref, atol=1e-9 * C * (1 + np.abs(G).sum(0).max()))
        Z = (ref > 1e-8 * u) & (ref < (1 - 1e-8) * u)
        P = (u > 0) & ~Z & (ref >= (1 - 1e-8) * u)
        a_prev = ref
        moved = rng.random(y.size) < 0.3
        u = np.where(moved, np.clip(u + C * rng.uniform(-0.3, 0.3, y.size), 0.0, C), u)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 10), ops=st.lists(st.integers(0, 10**6), min_size=1,
                                                                       max_size=40))
def test_givens_updates_keep_the_free_columns_factorised(seed, d, ops):
    """After any sequence of column appends and removals (and a rebuild), ``Q`` stays orthogonal,
    ``R``'s first ``m`` columns upper triangular and ``Q R`` equal to the free columns."""
    from spl_bench.gaga.svm import lowrank_dual_nb as nb

    rng = np.random.default_rng(seed)
    dim = d + 1
    C = rng.normal(size=(4 * dim, dim))
    Q, R = np.eye(dim), np.zeros((dim, dim))
    F: list[int] = []

    def check():
        m = len(F)
        np.testing.assert_allclose(Q.T @ Q, np.eye(dim), atol=1e-12)
        assert np.all(np.tril(R[:, :m], -1) == 0.0) and np.all(R[:, m:] == 0.0)
        np.testing.assert_allclose(Q @ R[:, :m], C[F].T, atol=1e-11 * (1 + np.abs(C).max()))

    for op in ops:
        if len(F) < dim and (op % 3 or not F):  # append an unused column
            k = int(rng.choice([i for i in range(C.shape[0]) if i not in F]))
            nb._insert(Q, R, len(F), C[k].copy())
            F.append(k)
        else:  # remove the column at some position
            pos = op % len(F)
            nb._delete(Q, R, len(F), pos)
            del F[pos]
        check()
    nb._rebuild(Q, R, C, np.array(F + [0] * (dim - len(F)), dtype=np.int64), len(F))
    check()
