"""Solves with J_theta by refinement on a nearby factor (GLM systems with many unknowns).

Checked against dense LU solves and against the path computed with an LU at every point.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.gaga import EngineOptions, age_path
from spl_bench.gaga.core.factors import Factor
from spl_bench.gaga.core.gram import RankOnePlusSparse, weighted_gram
from spl_bench.gaga.core.refined import CholeskyFactor, RefinedFactor, pcg
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.models import get_model
from spl_bench.sp import get_sp


def _sym(rng: np.random.Generator, k: int, indefinite: bool) -> np.ndarray:
    A = rng.normal(size=(k, k))
    eig = rng.uniform(0.5, 3.0, k)
    if indefinite:
        eig[: max(1, k // 3)] *= -1
    Qm, _ = np.linalg.qr(A)
    return (Qm * eig) @ Qm.T


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(2, 30), eps=st.floats(0.0, 0.2), indefinite=st.booleans())
def test_refined_solves_equal_dense_solves_and_keep_the_reference_inertia(seed, k, eps, indefinite):
    rng = np.random.default_rng(seed)
    J_ref = _sym(rng, k, indefinite)
    E = rng.normal(size=(k, k))
    J = J_ref + eps * (E + E.T) / (2 * np.sqrt(k))
    b = rng.normal(size=k)
    # positive definite reference: conjugate gradients on its Cholesky factor; else Richardson
    ref = CholeskyFactor.attempt(J_ref) or Factor(J_ref)
    assert isinstance(ref, CholeskyFactor) != indefinite
    f = RefinedFactor(lambda x: J @ x, ref, lambda: Factor(J), max_iter=40 if not indefinite else 10)
    x, accepted = f.refine(b)
    x_dense = np.linalg.solve(J, b)
    if accepted:
        assert np.abs(x - x_dense).max() <= 1e-9 * (1 + np.abs(x_dense).max())
        # the certified inertia: same sign of det J and, for a PD reference, J PD too
        assert f.sign == np.sign(np.linalg.det(J))
        if not indefinite:
            assert np.linalg.eigvalsh(J).min() > 0
    # solve() is exact either way (refined, or the factor of J itself)
    assert np.abs(f.solve(b) - x_dense).max() <= 1e-9 * (1 + np.abs(x_dense).max())
    assert np.abs(f.solve(2 * b) - 2 * x_dense).max() <= 1e-9 * (1 + np.abs(x_dense).max())


@pytest.mark.parametrize("cholesky", [False, True])
def test_refinement_is_refused_across_a_change_of_inertia(cholesky):
    """J with one eigenvalue of the reference flipped (a fold in between): never certified,
    neither by Richardson on an LU nor by conjugate gradients on a Cholesky factor."""
    rng = np.random.default_rng(3)
    k = 12
    Qm, _ = np.linalg.qr(rng.normal(size=(k, k)))
    eig = np.linspace(1.0, 2.0, k)
    J_ref = (Qm * eig) @ Qm.T
    eig2 = eig.copy()
    eig2[0] = -0.05
    J = (Qm * eig2) @ Qm.T
    calls = []

    def full():
        calls.append(1)
        return Factor(J)

    f = RefinedFactor(lambda x: J @ x, CholeskyFactor.attempt(J_ref) if cholesky else Factor(J_ref), full,
                      max_iter=40)
    b = rng.normal(size=k)
    assert not f.refine(b)[1]
    assert np.allclose(f.solve(b), np.linalg.solve(J, b), rtol=1e-10, atol=1e-12) and calls == [1]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 40), eps=st.floats(0.0, 2.0))
def test_pcg_equals_dense_solves_and_never_returns_a_wrong_one(seed, k, eps):
    rng = np.random.default_rng(seed)
    J_ref = _sym(rng, k, indefinite=False)
    E = rng.normal(size=(k, k))
    J = J_ref + eps * E @ E.T / k  # SPD, up to far from the reference
    b = rng.normal(size=k)
    x = pcg(lambda u: J @ u, b, Factor(J_ref))
    x_dense = np.linalg.solve(J, b)
    assert x is not None  # k + 1 steps at most in exact arithmetic: well within max_iter
    assert np.abs(x - x_dense).max() <= 1e-9 * (1 + np.abs(x_dense).max())
    if k >= 2:
        Jn = J - (np.linalg.eigvalsh(J)[0] + 1.0) * np.eye(k)  # one eigenvalue -1 or less
        xn = pcg(lambda u: Jn @ u, b, Factor(J_ref))
        # refused, or (when no iterate met the negative direction) an exact solution all the same
        assert xn is None or np.abs(Jn @ xn - b).max() <= 1e-12 * np.abs(b).max() * 10


def _noisy_cancer(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Breast-cancer rows (all 30 features, standardised) with 30 % of the labels flipped."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    i = rng.choice(len(y), n, replace=False)
    X, y = X[i], np.where(y[i] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / X.std(0)
    y[rng.random(n) < 0.3] *= -1
    return X, y


def _path(X, y, sp, lam_min):
    return age_path(X, y, "logistic", sp, lam_range=(lam_min, 3.0), C=1.0)


# (below these ages every loss is above the SP threshold at the start: a one-class fit, w = 0)
@pytest.mark.parametrize("sp,lam_min", [("linear", 0.3), ("mixture", 0.5)])
def test_logistic_path_with_refined_solves_equals_the_lu_path(sp, lam_min, monkeypatch):
    """The same event log (kinds, indices, ages to 1e-8) and the same path on a grid, with
    refined solves and Newton-fitted warm starts everywhere as with an LU at every point."""
    X, y = _noisy_cancer(150)
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 10**9)
    ref = _path(X, y, sp, lam_min)
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 1)
    new = _path(X, y, sp, lam_min)
    assert new.meta["n_refined_solves"] > new.meta["n_jacobian_factors"] > 0
    assert ref.meta["n_refined_solves"] == 0
    ev = [(e["kind"], e["lam"]) for e in new.events]
    ev0 = [(e["kind"], e["lam"]) for e in ref.events]
    assert len(ev0) >= 10
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-8, atol=1e-10)
    grid = np.linspace(lam_min + 0.01, 2.99, 150)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.abs(a - a0).max() <= 1e-7 * (1 + np.abs(a0).max()) and np.abs(b - b0).max() <= 1e-7


def assert_newton_fit_equals_the_models(system, model, X, y, v, warm):
    """``system.newton_fit`` against the model's own solver (scikit-learn): the same optimum to 1e-7,
    KKT at the model's tolerance.  Returns our fit."""
    ours = system.newton_fit(v, warm)
    theirs = model.fit_weighted(X, y, v, warm=warm)
    assert ours is not None
    assert np.abs(ours.coef - theirs.coef).max() <= 1e-7 * (1 + np.abs(theirs.coef).max())
    assert abs(ours.intercept - theirs.intercept) <= 1e-7 * (1 + abs(theirs.intercept))
    assert model.kkt_violation(ours, X, y, v) <= 1e-8
    return ours


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), drop=st.floats(0.0, 0.6), refined=st.booleans())
def test_newton_fit_equals_the_models_solver(seed, drop, refined):
    """The v-weighted logistic fit of the warm starts (Newton; its systems solved by refinement, or
    by the Hessian's Cholesky factor below ``refine_min_dim`` unknowns) against scikit-learn's
    Newton-Cholesky (the model's solver): the same optimum, KKT at the model's tolerance."""
    X, y = _noisy_cancer(120, seed % 1000)
    rng = np.random.default_rng(seed)
    model = get_model("logistic", C=1.0)
    system = GLMSystem(model, get_sp("linear"), X, y)
    system.refine_min_dim = 1 if refined else 10**9
    v = rng.random(X.shape[0])
    v[rng.random(X.shape[0]) < drop] = 0.0
    warm = model.fit_weighted(X, y, np.ones(X.shape[0]))
    for _ in range(2):  # (refined: the second fit refines on the first one's Hessian)
        ours = assert_newton_fit_equals_the_models(system, model, X, y, v, warm)
        warm, v = ours, np.clip(v * rng.uniform(0.8, 1.2, v.size), 0.0, 1.0)


@pytest.mark.parametrize("single", [False, True])
def test_cholesky_preconditioner_by_the_explicit_inverse_equals_the_triangular_solves(single, monkeypatch):
    """The explicit inverse in double precision agrees with the solves to 1e-10; in single
    precision (the default) to float32's rounding times the condition number (here < 6), also for
    right-hand sides far outside float32's range (it scales them)."""
    monkeypatch.setattr(CholeskyFactor, "single_inverse", single)
    rng = np.random.default_rng(5)
    J = _sym(rng, 25, indefinite=False)
    f = CholeskyFactor.attempt(J)
    assert f is not None and CholeskyFactor.attempt(-J) is None
    b = rng.normal(size=(CholeskyFactor.INVERSE_AFTER + 3, 25))
    b[-1] *= 1e-60
    b[-2] *= 1e60
    out = np.array([f.precondition(r) for r in b])
    assert f._inv is not None and f._inv.dtype == (np.float32 if single else np.float64)
    exact = np.linalg.solve(J, b.T).T
    rel = np.abs(out - exact).max(axis=1) / np.abs(exact).max(axis=1)
    assert rel.max() <= (1e-5 if single else 1e-10)
    assert single == (rel[: CholeskyFactor.INVERSE_AFTER - 1].max() < 1e-12 < rel[-3:].min())
    assert np.array_equal(f.precondition(np.zeros(25)), np.zeros(25))
    assert np.allclose(f.solve(b.T), np.linalg.solve(J, b.T), rtol=1e-12, atol=1e-13)


def test_pcg_accepts_at_the_products_rounding_floor_and_only_there():
    """A product that cannot resolve residuals below ~1e-10 (noise standing in for the rounding of
    cancelling terms): refused against |rhs| alone, accepted against a floor that says so, refused
    against a floor below the noise."""
    rng = np.random.default_rng(7)
    k = 30
    J = _sym(rng, k, indefinite=False)
    b = rng.normal(size=k)

    def noisy(u):
        return J @ u + 1e-10 * rng.normal(size=k)

    ref = CholeskyFactor.attempt(J + 0.05 * np.eye(k))
    assert pcg(noisy, b, ref, tol=1e-13) is None
    x = pcg(noisy, b, ref, tol=1e-13, floor=lambda u: 1e4)
    assert x is not None and np.abs(x - np.linalg.solve(J, b)).max() <= 1e-8
    assert pcg(noisy, b, ref, tol=1e-13, floor=lambda u: 1.0) is None


@pytest.mark.parametrize("sp,lam_min", [("linear", 0.3), ("mixture", 0.5)])
def test_logistic_path_with_newton_warm_starts_equals_the_models_solver(sp, lam_min, monkeypatch):
    """The ACS fits of the warm starts by :meth:`GLMDesign.newton_fit` (a Cholesky factor of the
    Hessian at this size) against scikit-learn's solver (the model's): the same event log (kinds,
    ages to 1e-8) and the same path on a grid, the jumps included."""
    X, y = _noisy_cancer(150)
    new = _path(X, y, sp, lam_min)
    monkeypatch.setattr(GLMSystem, "smooth_fit", lambda self: False)
    ref = _path(X, y, sp, lam_min)
    ev = [(e["kind"], e["lam"]) for e in new.events]
    ev0 = [(e["kind"], e["lam"]) for e in ref.events]
    assert sum(k == "jump" for k, _ in ev0) >= 1  # warm starts happened
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-8, atol=1e-10)
    grid = np.linspace(lam_min + 0.01, 2.99, 150)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.abs(a - a0).max() <= 1e-7 * (1 + np.abs(a0).max()) and np.abs(b - b0).max() <= 1e-7


def _binary_standardised(rng: np.random.Generator, n: int, d: int, density: float) -> np.ndarray:
    """Standardised sparse binary features (as hiva_agnostic after scaling), one constant column."""
    B = (rng.random((n, d)) < density).astype(float)
    B[:, 0] = 0.0
    sd = B.std(0)
    return (B - B.mean(0)) / np.where(sd > 0, sd, 1.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), density=st.floats(0.01, 0.2), frac=st.floats(0.3, 1.0))
def test_rank_one_plus_sparse_products_equal_the_dense_ones(seed, density, frac):
    """``X = 1 m^T + S``: products with rows of X, its transpose and |X| (1-D and 2-D operands)
    equal numpy's dense products to rounding; a dense matrix is not split."""
    rng = np.random.default_rng(seed)
    X = _binary_standardised(rng, 60, 25, density)
    R = RankOnePlusSparse.split(X)
    assert R is not None
    rows = np.flatnonzero(rng.random(60) < frac)
    XL, RL = X[rows], R.rows(rows)
    x, U = rng.normal(size=25), rng.normal(size=(rows.size, 3))
    tol = 1e-12 * (1 + np.abs(X).max()) * 25
    assert np.abs(RL @ x - XL @ x).max() <= tol
    assert np.abs(RL.T @ U[:, 0] - XL.T @ U[:, 0]).max() <= tol * rows.size / 25
    assert np.abs(RL.T @ U - XL.T @ U).max() <= tol * rows.size / 25
    assert np.abs(U.T @ RL - U.T @ XL).max() <= tol * rows.size / 25
    A = rng.normal(size=(4, 25))
    assert np.abs(A @ RL.T - A @ XL.T).max() <= tol
    aRL = abs(RL)
    assert np.abs(aRL @ np.abs(x) - np.abs(XL) @ np.abs(x)).max() <= tol
    assert np.abs(aRL.T @ np.abs(U[:, 0]) - np.abs(XL).T @ np.abs(U[:, 0])).max() <= tol * rows.size / 25
    assert RankOnePlusSparse.split(rng.normal(size=(30, 8))) is None


def test_weighted_gram_equals_the_general_product():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 12))
    for D in (rng.random(50), rng.normal(size=50), np.zeros(50)):
        D[:4] = 0.0
        G = weighted_gram(X, D)
        assert np.array_equal(G, G.T)
        assert np.abs(G - X.T @ (D[:, None] * X)).max() <= 1e-12 * (1 + np.abs(X).max() ** 2 * 50)


def test_newton_fit_with_sparse_products_equals_the_dense_fit():
    """A v-weighted logistic fit on 420 standardised binary features (the Newton systems by
    refinement, above ``refine_min_dim``): through ``1 m^T + S`` and through the dense rows, the
    same optimum, both meeting the model's KKT conditions; and the split is in use."""
    rng = np.random.default_rng(11)
    X = _binary_standardised(rng, 500, 420, 0.06)
    w = rng.normal(size=420) * (rng.random(420) < 0.1)
    y = np.where(X @ w + 0.5 * rng.normal(size=500) > 0, 1.0, -1.0)
    model = get_model("logistic", C=0.5)
    v = rng.random(500)
    v2 = np.clip(v + 0.3 * rng.random(500) - 0.15, 0.0, 1.0)
    warm = model.fit_weighted(X, y, np.ones(500))
    fits = {}
    for sparse in (True, False):
        system = GLMSystem(model, get_sp("mixture", gamma=0.2), X, y)
        system.sparse_products = sparse
        first = system.newton_fit(v, warm)
        second = system.newton_fit(v2, first)  # refined on the first fit's Hessian
        assert (system._split is not None) == sparse
        assert model.kkt_violation(second, X, y, v2) <= 1e-8
        fits[sparse] = second
    assert np.abs(fits[True].coef - fits[False].coef).max() <= 1e-9 * (1 + np.abs(fits[False].coef).max())
    assert abs(fits[True].intercept - fits[False].intercept) <= 1e-9


def test_factor_refines_on_the_reference_of_the_other_inertia_when_the_latest_one_fails():
    """A Cholesky reference kept beside a later LU one: a positive definite ``J_theta`` is solved
    by refinement on it (the LU reference's Richardson cannot contract there) instead of a new
    factorisation, it becomes the first one tried, and the solve equals the dense one."""
    X, y = _noisy_cancer(150)
    model = get_model("logistic", C=1.0)
    system = GLMSystem(model, get_sp("linear"), X, y)
    system.refine_min_dim = 1
    lam = 20.0  # (every sample in the linear SP's middle set, J_theta positive definite, J_lam != 0)
    system.init_from(model.fit_weighted(X, y, np.ones(X.shape[0])), lam)
    theta = system.theta()
    f0, _ = system.factor(theta, lam)
    assert isinstance(f0, CholeskyFactor) and system.n_full_factors == 1
    chol_ref = system._ref
    # an indefinite reference of the same size made later (as by a polish on other sets)
    k = theta.size
    Qm, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(k, k)))
    J_bad = (Qm * np.linspace(0.5, 3.0, k) * np.where(np.arange(k) % 2, -1.0, 1.0)) @ Qm.T
    system._ref, system._ref_other = (Factor(J_bad), chol_ref[1], float(np.abs(J_bad).max())), chol_ref
    theta2 = theta * (1 + 1e-4)
    f, Jl = system.factor(theta2, lam)
    assert isinstance(f, RefinedFactor) and f.ref is chol_ref[0]
    assert system.n_full_factors == 1 and system._ref is chol_ref
    J = system.jacobians(theta2, lam)[0]
    x_dense = np.linalg.solve(J, -Jl)
    assert np.abs(f.solve(-Jl) - x_dense).max() <= 1e-9 * (1 + np.abs(x_dense).max())
    # with neither reference usable, J is factorised afresh and becomes the first reference
    system._ref = system._ref_other = (Factor(J_bad), chol_ref[1], float(np.abs(J_bad).max()))
    f3, _ = system.factor(theta2, lam)
    assert system.n_full_factors == 2 and not isinstance(f3, RefinedFactor) and system._ref[0] is f3


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), density=st.floats(0.0, 0.3), frac=st.floats(0.0, 1.0))
def test_sparse_weighted_gram_equals_the_dense_one(seed, density, frac):
    """``X^T diag(D) X`` through ``X = 1 m^T + S`` (the products of the non-zeros of ``S``) against
    the rank-k update of the dense ``X``, with negative and zero weights; exactly symmetric."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 60)), int(rng.integers(1, 40))
    X = _binary_standardised(rng, n, k, density)
    R = RankOnePlusSparse.split(X, max_density=1.0)
    D = rng.normal(size=n) * (rng.random(n) < frac)
    G = R.weighted_gram(D)
    G0 = X.T @ (D[:, None] * X)
    assert np.array_equal(G, G.T)
    assert np.abs(G - G0).max() <= 1e-12 * (1 + np.abs(X).max() ** 2 * np.abs(D).sum())


@pytest.mark.parametrize("density", [0.05, 0.2])
def test_path_jacobian_through_the_sparse_gram_equals_the_dense_one(density):
    """``J_theta`` of the logistic path system on standardised binary features: through the
    split (non-zeros of ``S``, the path's live rows; only below ``sparse_gram_max_density``)
    equal to the dense rows' rank-k update, and the v-weighted fit's Hessians too."""
    rng = np.random.default_rng(5)
    X = _binary_standardised(rng, 300, 40, density)
    w = rng.normal(size=40)
    y = np.where(X @ w + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    y[rng.random(300) < 0.2] *= -1
    model = get_model("logistic", C=0.5)
    out = {}
    for sparse in (True, False):
        system = GLMSystem(model, get_sp("mixture", gamma=0.2), X, y)
        system.sparse_products = sparse
        system.refine_min_dim = 1  # (the split is made from refine_min_dim unknowns on)
        system.init_from(model.fit_weighted(X, y, np.ones(300)), 0.8)
        assert 0 < system._live()[1].size < 300  # (some samples in D: not every row is live)
        out[sparse] = system.jacobians(system.theta(), 0.8)[0]
        assert (system._split is not None) == sparse
        assert (system._sparse_gram() is not None) == (sparse and density < system.sparse_gram_max_density)
        v = rng.random(300)
        fit = system.newton_fit(v, model.fit_weighted(X, y, np.ones(300)))
        assert fit is not None and model.kkt_violation(fit, X, y, v) <= 1e-8
    assert np.abs(out[True] - out[False]).max() <= 1e-11 * np.abs(out[False]).max()


def test_path_products_through_the_split_equal_the_dense_ones(monkeypatch):
    """The logistic path system's live rows through ``X = 1 m^T + S`` (``sparse_path_products``):
    the residual, ``J_lam``, a refined solve's products ``J_theta x`` and their rounding bound
    equal those of the dense rows to rounding, on standardised binary features with samples in D;
    and the age-path (linear SP, refined solves and Newton-fitted warm starts) has the same event
    log and values as with the dense rows."""
    rng = np.random.default_rng(7)
    n, d = 240, 60
    X = _binary_standardised(rng, n, d, 0.15)
    w = rng.normal(size=d)
    y = np.where(X @ w + rng.normal(size=n) > 0, 1.0, -1.0)
    y[rng.random(n) < 0.3] *= -1
    model = get_model("logistic", C=0.5)
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 1)  # (the split is made from refine_min_dim unknowns on)
    out = {}
    shake, x = 1 + 1e-3 * rng.normal(size=d + 1), rng.normal(size=d + 1)
    for split in (True, False):
        monkeypatch.setattr(GLMSystem, "sparse_path_products", split)
        system = GLMSystem(model, get_sp("mixture", gamma=0.2), X, y)
        system.init_from(model.fit_weighted(X, y, np.ones(n)), 0.8)
        XL, rows, _ = system._live()
        assert 0 < rows.size < n and isinstance(XL, RankOnePlusSparse) == split
        theta = system.theta() * shake
        _, D, Jl = system._curvature(theta, 0.8)
        out[split] = (system.residual(theta, 0.8), Jl, system._jvp(theta, XL, D)(x),
                      system._jvp_bound(theta, XL, D, system._abs_live())(x))
    for a, b in zip(out[True], out[False], strict=True):
        assert np.abs(np.asarray(a) - np.asarray(b)).max() <= 1e-12 * (1 + np.abs(b).max()) * n
    paths = {}
    for split in (True, False):
        monkeypatch.setattr(GLMSystem, "sparse_path_products", split)
        paths[split] = age_path(X, y, "logistic", "linear", lam_range=(0.2, 5.0), C=0.5)
    new, ref = paths[True], paths[False]
    assert new.meta["n_refined_solves"] > 0 and new.n_restarts > 0 and len(ref.events) >= 20
    assert [e["kind"] for e in new.events] == [e["kind"] for e in ref.events]
    assert [sorted(e["moves"]) for e in new.events] == [sorted(e["moves"]) for e in ref.events]
    assert np.allclose([e["lam"] for e in new.events], [e["lam"] for e in ref.events], rtol=1e-8, atol=1e-10)
    grid = np.linspace(0.21, 4.99, 120)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.abs(a - a0).max() <= 1e-7 * (1 + np.abs(a0).max()) and np.abs(b - b0).max() <= 1e-7


def test_lu_first_on_indefinite_jacobians_gives_the_same_path(monkeypatch):
    """After an indefinite J_theta the next is factorised by LU first and Cholesky is attempted
    only if det J > 0 (``GLMSystem.lu_first_when_indefinite``).  det J < 0 rules out a Cholesky
    factor, so every factor is the one the Cholesky-first order makes: the same computation, so
    the same path bit for bit, and the skipped attempts are counted."""
    X, y = _noisy_cancer(150)
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 1)
    monkeypatch.setattr(GLMSystem, "lu_first_when_indefinite", False)
    ref = age_path(X, y, "logistic", "mixture", lam_range=(0.5, 3.0), C=0.5)
    monkeypatch.setattr(GLMSystem, "lu_first_when_indefinite", True)
    new = age_path(X, y, "logistic", "mixture", lam_range=(0.5, 3.0), C=0.5)
    assert ref.meta["n_cholesky_skipped"] == 0 < new.meta["n_cholesky_skipped"]
    assert [(e["kind"], e["lam"]) for e in new.events] == [(e["kind"], e["lam"]) for e in ref.events]
    assert len(ref.events) >= 10
    grid = np.linspace(0.51, 2.99, 150)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)


@pytest.mark.parametrize("sp,lam_min", [("linear", 0.3), ("mixture", 0.5)])
def test_acs_fits_warm_started_by_extrapolation_give_the_same_path(sp, lam_min, monkeypatch):
    """``EngineOptions.acs_warm_extrapolate``: the ACS fits warm-started at ``2 w_t - w_{t-1}`` have the
    same (unique) minimisers, so the same event log (kinds, moves, ages to 1e-8) and the same path
    on a grid; the extrapolated warm starts were used."""
    import spl_bench.gaga.core.warm as warm

    X, y = _noisy_cancer(150)
    ref = age_path(X, y, "logistic", sp, lam_range=(lam_min, 3.0), C=1.0,
                   options=EngineOptions(acs_warm_extrapolate=False))
    starts = []
    orig = warm.acs_step

    def counting(system, lam, params, v, start=None):
        starts.append(start is not None)
        return orig(system, lam, params, v, start)

    monkeypatch.setattr(warm, "acs_step", counting)
    new = age_path(X, y, "logistic", sp, lam_range=(lam_min, 3.0), C=1.0,
                   options=EngineOptions(acs_warm_extrapolate=True))
    assert sum(starts) >= 10
    assert sum(e["kind"] == "jump" for e in ref.events) >= 1
    assert [e["kind"] for e in new.events] == [e["kind"] for e in ref.events]
    assert [sorted(e["moves"]) for e in new.events] == [sorted(e["moves"]) for e in ref.events]
    assert np.allclose([e["lam"] for e in new.events], [e["lam"] for e in ref.events], rtol=1e-8, atol=1e-10)
    grid = np.linspace(lam_min + 0.01, 2.99, 150)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.abs(a - a0).max() <= 1e-7 * (1 + np.abs(a0).max()) and np.abs(b - b0).max() <= 1e-7


def _refit_chain_data() -> tuple[np.ndarray, np.ndarray]:
    """400 x 300 standardised Gaussian columns, labels from five of them plus noise (the refit chains)."""
    rng0 = np.random.default_rng(0)
    n, d = 400, 300
    X = rng0.normal(size=(n, d))
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(X[:, :5].sum(1) + 2.0 * rng0.normal(size=n) > 0, 1.0, -1.0)


def test_newton_step_check_keeps_the_refits_quadratic(monkeypatch):
    """``GLMDesign.newton_step_check``: chained refits from the ``v = 1`` fit to weights with more and
    more zeros (MOSPL's refit chain) on 300 standardised columns, each refined on the last fit's
    Hessian.  The refined solves' own test is relative to the size of the summed terms, far above
    ``|g|`` here, so their steps are loose and Newton creeps (many damped steps).  With the check each
    step meets ``|H s + g| <= forcing |g|`` or is solved with the Hessian: the same optimum as
    scikit-learn's (1e-7), in far fewer steps."""
    import spl_bench.gaga.glm.design as design

    X, y = _refit_chain_data()
    n = X.shape[0]
    model = get_model("logistic", C=1.0)
    orig = design.GLMDesign._damped_step
    steps = [0]

    def counted(*a, **k):
        steps[0] += 1
        return orig(*a, **k)

    monkeypatch.setattr(design.GLMDesign, "_damped_step", staticmethod(counted))
    totals = {}
    for check in (False, True):
        monkeypatch.setattr(GLMSystem, "newton_step_check", check)
        system = GLMSystem(model, get_sp("linear"), X, y)
        system.refine_min_dim = 1
        rng = np.random.default_rng(1)
        warm = model.fit_weighted(X, y, np.ones(n))
        steps[0] = 0
        for k in range(5):
            v = rng.random(n)
            v[rng.random(n) < 0.1 * k] = 0.0
            if check:
                warm = assert_newton_fit_equals_the_models(system, model, X, y, v, warm)
            else:
                warm = system.newton_fit(v, warm) or model.fit_weighted(X, y, v, warm=warm)
        totals[check] = steps[0]
    assert totals[True] <= 60 and 2 * totals[True] < totals[False], totals


def test_checked_refits_refine_instead_of_forming_hessians(monkeypatch):
    """With ``newton_step_check`` on, the refined solves are held to the check's own test
    (``|H s + g| <= forcing |g|``, residuals relative to ``|g|``): conjugate gradients continue past
    the summed-terms tolerance instead of handing a loose step to the check, which formed the Hessian
    at nearly every Newton step (1,379 Hessians in 1,558 steps on Table 5 hiva MOSPL seed 0).  On
    MOSPL's refit chain over 300 standardised columns: every fit equals scikit-learn's (1e-7, KKT
    1e-8), and fewer Hessians are formed than a third of the Newton steps taken."""
    import spl_bench.gaga.glm.design as design

    X, y = _refit_chain_data()
    n = X.shape[0]
    model = get_model("logistic", C=1.0)
    counts = {"steps": 0, "hessians": 0}
    orig_step, orig_gram = design.GLMDesign._damped_step, design.GLMDesign._gram

    def counted_step(*a, **k):
        counts["steps"] += 1
        return orig_step(*a, **k)

    def counted_gram(self, *a, **k):
        counts["hessians"] += 1
        return orig_gram(self, *a, **k)

    monkeypatch.setattr(design.GLMDesign, "_damped_step", staticmethod(counted_step))
    monkeypatch.setattr(design.GLMDesign, "_gram", counted_gram)
    monkeypatch.setattr(GLMSystem, "newton_step_check", True)
    system = GLMSystem(model, get_sp("linear"), X, y)
    system.refine_min_dim = 1
    rng = np.random.default_rng(1)
    warm = model.fit_weighted(X, y, np.ones(n))
    for k in range(8):
        v = rng.random(n)
        v[rng.random(n) < 0.08 * k] = 0.0
        warm = assert_newton_fit_equals_the_models(system, model, X, y, v, warm)
    assert counts["steps"] >= 16
    assert 3 * counts["hessians"] < counts["steps"], counts
