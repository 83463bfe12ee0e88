"""Solves with ``J = diag(r, 0) + Phi^T diag(D) Phi`` in the samples' dimension (``WoodburyFactor``).

Checked against dense solves of the formed ``J`` and its determinant's sign, and the path and
the v-weighted fits on wide data (fewer live samples than unknowns) against the ``k``-dimensional
route.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from spl_bench.gaga import EngineOptions, age_path
from spl_bench.gaga.core.woodbury import WoodburyFactor
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.models import get_model
from spl_bench.sp import get_sp
from test_gaga_refined import assert_newton_fit_equals_the_models


def _dense(X: np.ndarray, r: np.ndarray, D: np.ndarray, q: int) -> np.ndarray:
    Phi = np.hstack([X, np.ones((X.shape[0], q))])
    return np.diag(np.r_[r, np.zeros(q)]) + Phi.T @ (D[:, None] * Phi)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 25), p=st.integers(1, 40), q=st.integers(0, 1),
       nonneg=st.booleans(), dup=st.booleans())
def test_woodbury_solves_equal_dense_solves_with_the_sign_of_det_j(seed, m, p, q, nonneg, dup):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, p))
    if dup and m > 1:
        X[-1] = X[0]  # duplicated samples are normal inputs
    r = rng.uniform(0.2, 3.0, p)
    D = rng.normal(size=m)
    if nonneg:
        D = np.abs(D)
        D[rng.random(m) < 0.2] = 0.0
    J = _dense(X, r, D, q)
    cond = np.linalg.cond(J)
    assume(np.isfinite(cond) and cond < 1e9)
    f = WoodburyFactor(X, r, D, (X / r) @ X.T, n_free=q, form=lambda: J)
    assert not f.singular and f.n == p + q
    assert f.sign == np.linalg.slogdet(J)[0]
    b, B = rng.normal(size=p + q), rng.normal(size=(p + q, 3))
    tol = 1e-10 * cond
    for rhs in (b, B):
        x_dense = np.linalg.solve(J, rhs)
        assert np.abs(f.solve(rhs) - x_dense).max() <= tol * (1 + np.abs(x_dense).max())
    assert f.J is J
    # the symmetric route (D >= 0) vouches for positive definiteness, and only where J has it
    if f.positive_definite:
        assert D.min() >= 0 and np.linalg.eigvalsh(J).min() > 0


def test_woodbury_says_singular_where_j_is():
    """No curvature along the intercept (``D = 0``): ``J``'s last row is zero."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 9))
    f = WoodburyFactor(X, np.ones(9), np.zeros(5), X @ X.T, n_free=1)
    assert f.singular
    assert np.linalg.matrix_rank(_dense(X, np.ones(9), np.zeros(5), 1)) == 9
    with pytest.raises(ValueError):
        WoodburyFactor(X, np.ones(9), np.zeros(5), X @ X.T, n_free=2)


def _wide(n: int = 100, d: int = 180, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Wide logistic data: a sparse signal in ``d > n`` Gaussian columns, 30 % of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:8] = rng.normal(size=8)
    y = np.where(X @ w + rng.normal(size=n) > 0, 1.0, -1.0)
    y[rng.random(n) < 0.3] *= -1
    return X, y


# (20 and 11 critical points on these data, every one a jump: ACS warm starts by Newton fits)
@pytest.mark.parametrize("sp,sp_params,lam,C", [("linear", {}, (0.1, 20.0), 1.0),
                                                ("mixture", {"gamma": 1.0}, (0.05, 5.0), 0.5)])
def test_wide_logistic_path_through_the_samples_dimension_equals_the_full_one(sp, sp_params, lam, C, monkeypatch):
    """The same event log (kinds, moves, ages to 1e-8) and the same path on a grid whether ``J_theta``
    and the warm starts' Hessians are solved in the live samples' dimension or formed (k = 181)."""
    X, y = _wide()
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 1)
    monkeypatch.setattr(GLMSystem, "woodbury_max_ratio", 0.0)
    ref = age_path(X, y, "logistic", sp, sp_params=sp_params, lam_range=lam, C=C)
    monkeypatch.setattr(GLMSystem, "woodbury_max_ratio", 1.0)  # (every point: m + 1 <= 101 < k)
    new = age_path(X, y, "logistic", sp, sp_params=sp_params, lam_range=lam, C=C)
    assert ref.meta["n_woodbury_factors"] == 0 < new.meta["n_woodbury_factors"]
    ev, ev0 = new.events, ref.events
    assert len(ev0) >= 10
    assert [e["kind"] for e in ev] == [e["kind"] for e in ev0]
    assert [sorted(e["moves"]) for e in ev] == [sorted(e["moves"]) for e in ev0]
    assert np.allclose([e["lam"] for e in ev], [e["lam"] for e in ev0], rtol=1e-8, atol=1e-10)
    # (the mixture case selects one class at lam_min: both start at the same later age, test_degenerate.py)
    assert new.lambdas[0] == ref.lambdas[0]
    grid = np.linspace(max(lam[0] + 0.01, ref.lambdas[0]), lam[1] - 0.01, 120)
    (a, b), (a0, b0) = new.at(grid), ref.at(grid)
    assert np.abs(a - a0).max() <= 1e-7 * (1 + np.abs(a0).max()) and np.abs(b - b0).max() <= 1e-7


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), drop=st.floats(0.0, 0.6))
def test_wide_newton_fit_equals_the_models_solver(seed, drop):
    """The v-weighted fit on wide data, its Newton systems solved in the live samples' dimension
    (the symmetric positive definite form: ``D >= 0``), against scikit-learn's solver."""
    X, y = _wide(seed=seed % 1000)
    rng = np.random.default_rng(seed)
    model = get_model("logistic", C=0.5)
    system = GLMSystem(model, get_sp("linear"), X, y)
    system.refine_min_dim, system.woodbury_max_ratio = 1, 1.0
    v = rng.random(X.shape[0])
    v[rng.random(X.shape[0]) < drop] = 0.0
    assume(np.unique(y[v > 0]).size == 2)
    assert system.woodbury_applies(X.shape[1] + 1, int(np.count_nonzero(v)))
    assert_newton_fit_equals_the_models(system, model, X, y, v, model.fit_weighted(X, y, np.ones(X.shape[0])))


def test_wide_path_resumed_from_a_checkpoint_equals_the_uninterrupted_one(tmp_path, monkeypatch):
    """The kept ``K`` is left out of checkpoints and made again on resuming: the same path, bit for bit."""
    class Interrupt(Exception):
        pass

    X, y = _wide()
    monkeypatch.setattr(GLMSystem, "refine_min_dim", 1)
    monkeypatch.setattr(GLMSystem, "woodbury_max_ratio", 1.0)
    kw = {"sp_params": {"gamma": 1.0}, "lam_range": (0.05, 5.0), "C": 0.5}
    whole = age_path(X, y, "logistic", "mixture", **kw)
    assert whole.meta["n_woodbury_factors"] > 0 and len(whole.events) >= 10
    opts = EngineOptions(checkpoint_dir=str(tmp_path), checkpoint_every=0.0)

    def stop(lam: float, n_critical: int) -> None:
        if n_critical >= 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        age_path(X, y, "logistic", "mixture", options=opts, progress=stop, **kw)
    resumed = age_path(X, y, "logistic", "mixture", options=opts, **kw)
    assert resumed.meta["n_resumes"] == 1
    np.testing.assert_array_equal(resumed.lambdas, whole.lambdas)
    np.testing.assert_array_equal(resumed.coef, whole.coef)
    np.testing.assert_array_equal(resumed.intercept, whole.intercept)
    assert resumed.events == whole.events


def test_a_penalty_flat_somewhere_keeps_the_k_dimensional_route():
    """``R'' = 0`` on a coefficient makes ``diag(r)`` singular: no WoodburyFactor (never a NaN)."""
    X, y = _wide()
    system = GLMSystem(get_model("logistic", C=0.5), get_sp("linear"), X, y)
    system.refine_min_dim, system.woodbury_max_ratio = 1, 1.0
    live = np.arange(20)
    theta = np.zeros(X.shape[1] + 1)
    assert system._woodbury_factor(live, theta, np.ones(20), lambda: np.eye(theta.size)) is not None
    system.penalty = type("Flat", (), {"hess_diag": staticmethod(lambda w, n: np.r_[0.0, np.ones(w.size - 1)]),
                                       "sparse": False})()
    assert system._woodbury_factor(live, theta, np.ones(20), lambda: np.eye(theta.size)) is None
