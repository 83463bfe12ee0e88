"""Datafits, penalties and the Huber-L1 model on the GAGA path engine.

* the datafits' derivatives against finite differences, and the Quadratic / Logistic /
  Hinge datafits and the L1 / L2 penalties against the models' former formulas;
* the Huber model's weighted solver against an independent solver;
* the GAGA age-path of the Huber model (linear and mixture SP-regularizers): the KKT
  conditions of the ``v*``-weighted problem at every recorded point, and at a few points
  the path's coefficients against an independent solve of the weighted problem with
  ``v`` fixed at the path's ``v``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from spl_bench.gaga.api import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.tracker import _Tracker
from spl_bench.gaga.glm.glm_system import GLMSystem
from spl_bench.gaga.systems import make_system
from spl_bench.models import Params, get_model
from spl_bench.models.datafits import HUBER_DOWN, HUBER_QUAD, HUBER_UP, Huber, Logistic, Quadratic
from spl_bench.models.huber import HuberModel
from spl_bench.models.penalties import L1, L2
from spl_bench.sp import get_sp


def huber_data(n=80, d=6, seed=1, n_out=8, noise=0.5):
    """Centred linear data with ``n_out`` gross outliers in ``y`` and two zero coefficients."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w0 = rng.standard_normal(d)
    w0[-2:] = 0.0
    y = X @ w0 + noise * rng.standard_normal(n)
    y[:n_out] += rng.choice([-1.0, 1.0], n_out) * rng.uniform(3.0, 6.0, n_out)
    return X - X.mean(0), y - y.mean()


def huber_l1_lbfgs(X, y, v, lev, delta):
    """``min_w sum_i v_i H_delta(y_i - x_i^T w) + lev ||w||_1`` by L-BFGS-B on ``w = p - q``,
    ``p, q >= 0`` (smooth there), with the Huber function written out here."""
    d = X.shape[1]

    def f(u):
        r = y - X @ (u[:d] - u[d:])
        a = np.abs(r)
        val = np.where(a <= delta, 0.5 * r * r, delta * a - 0.5 * delta**2)
        g = -X.T @ (v * np.clip(r, -delta, delta))
        return float(v @ val + lev * u.sum()), np.concatenate([g + lev, -g + lev])

    res = minimize(f, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * (2 * d),
                   options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 50_000, "maxcor": 30})
    return res.x[:d] - res.x[d:], float(res.fun)


# ------------------------------------------------------------------ datafits
DATAFITS = [Quadratic(), Logistic(C=0.7), Huber(delta=0.8)]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), which=st.integers(0, len(DATAFITS) - 1))
def test_datafit_derivatives_match_finite_differences(seed, which):
    df = DATAFITS[which]
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal(30)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0) if df.name == "logistic" else 3.0 * rng.standard_normal(30)
    piece = df.pieces(z, y)
    if df.piecewise:  # keep away from the kinks of ell''
        ok = np.abs(df.piece_distance(z, y, piece)) > 1e-3
        z, y, piece = z[ok], y[ok], piece[ok]
    ell, d1, d2 = df.derivatives(z, y)
    h = 1e-6
    ep, d1p, _ = df.derivatives(z + h, y, piece)
    em, d1m, _ = df.derivatives(z - h, y, piece)
    assert np.allclose((ep - em) / (2 * h), d1, rtol=1e-6, atol=1e-7)
    assert np.allclose((d1p - d1m) / (2 * h), d2, rtol=1e-6, atol=1e-7)
    assert np.array_equal(df.value(z, y), ell)
    assert np.array_equal(df.d1(z, y), d1) and np.array_equal(df.d2(z, y), d2)


def test_logistic_datafit_against_scipy_and_at_extreme_margins():
    """The one-exp forms of the logistic loss against scipy's logaddexp / expit, also where
    exp(|y z|) overflows."""
    from scipy.special import expit

    rng = np.random.default_rng(3)
    z = np.concatenate([5.0 * rng.standard_normal(200), [-800.0, -40.0, 0.0, 40.0, 800.0]])
    y = np.where(rng.random(z.size) < 0.5, -1.0, 1.0)
    ell, d1, d2 = Logistic(C=0.7).derivatives(z, y)
    s = expit(-y * z)
    assert np.allclose(ell, 0.7 * np.logaddexp(0.0, -y * z), rtol=1e-14, atol=0.0)
    assert np.allclose(d1, -0.7 * y * s, rtol=1e-14, atol=1e-300)
    assert np.allclose(d2, 0.7 * s * expit(y * z), rtol=1e-14, atol=1e-300)  # (1 - s without cancellation)
    assert np.isfinite(ell).all() and np.isfinite(d1).all() and np.isfinite(d2).all()


def test_huber_pieces_boundaries_and_continuation():
    df = Huber(delta=1.0)
    y = np.zeros(5)
    z = -np.array([-2.0, -1.0, 0.3, 1.0, 2.5])  # residuals r = y - z
    piece = df.pieces(z, y)
    assert piece.tolist() == [HUBER_DOWN, HUBER_QUAD, HUBER_QUAD, HUBER_QUAD, HUBER_UP]
    assert np.allclose(df.piece_distance(z, y, piece), [1.0, 0.0, 0.7, 0.0, 1.5])
    ell = df.value(z, y)
    assert np.allclose(ell, [1.5, 0.5, 0.045, 0.5, 2.0])
    # each piece's formula continued past its boundary: the quadratic one at r = 2.5
    ell_q, d1_q, d2_q = df.derivatives(z, y, np.zeros(5, dtype=np.int8))
    assert np.isclose(ell_q[-1], 0.5 * 2.5**2) and d1_q[-1] == -2.5 and d2_q[-1] == 1.0
    assert df.next_piece(-1.0, 0.0, HUBER_QUAD) == HUBER_UP and df.next_piece(1.0, 0.0, HUBER_QUAD) == HUBER_DOWN
    assert df.next_piece(0.0, 0.0, HUBER_UP) == HUBER_QUAD
    # with delta above every residual it is the quadratic datafit
    assert np.allclose(Huber(delta=10.0).derivatives(z, y)[0], Quadratic().value(z, y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_datafits_and_penalties_reproduce_the_models_former_formulas(seed):
    """The formulas the models had before the datafit / penalty split, written out here."""
    rng = np.random.default_rng(seed)
    n, d = 50, 5
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d) * (rng.random(d) < 0.6)
    b = float(rng.standard_normal())
    yr = rng.standard_normal(n)
    yc = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    v = rng.random(n) * (rng.random(n) < 0.8)

    lasso = get_model("lasso", alpha=0.03)
    p = Params(coef=w)
    # The datafits evaluate their own (algebraically equal) expressions, so compare to a few ulps: rtol
    # 1e-13 is ~500 ulps of a double, far below any difference a wrong formula would make on O(1) values,
    # and above the rounding that a numpy / libm release or another association order may change.
    close = {"rtol": 1e-13, "atol": 1e-15}
    np.testing.assert_allclose(lasso.losses(p, X, yr), 0.5 * (yr - X @ w) ** 2, **close)
    np.testing.assert_allclose(lasso.regularizer(p, n), n * 0.03 * np.abs(w).sum(), **close)
    lev = n * 0.03
    corr = X.T @ (v * (yr - X @ w))
    old = np.where(w != 0, np.abs(corr - lev * np.sign(w)), np.maximum(np.abs(corr) - lev, 0.0))
    assert np.isclose(lasso.kkt_violation(p, X, yr, v), old.max() / lev, rtol=1e-12, atol=1e-15)

    logit = get_model("logistic", C=0.7)
    p = Params(coef=w, intercept=b)
    f = X @ w + b
    # the datafit computes max(-m, 0) + log1p(exp(-|m|)), equal to logaddexp(0, -m) up to rounding
    np.testing.assert_allclose(logit.losses(p, X, yc), 0.7 * np.logaddexp(0.0, -yc * f), **close)
    np.testing.assert_allclose(logit.regularizer(p, n), float(0.5 * w @ w), **close)
    s = -0.7 * v * yc / (1.0 + np.exp(yc * f))
    gw, gb = logit.gradient(p, X, yc, v)
    assert np.allclose(gw, w + X.T @ s, rtol=1e-12, atol=1e-13) and np.isclose(gb, s.sum(), atol=1e-13)
    old = max(np.abs(w + X.T @ s).max(), abs(s.sum())) / (1.0 + np.abs(w).max())
    assert np.isclose(logit.kkt_violation(p, X, yc, v), old, rtol=1e-12, atol=1e-15)

    svm = get_model("svm", C=1.3, gamma=0.4)
    ps = svm.fit_weighted(X, yc, np.ones(n))
    hinge = 1.3 * np.maximum(0.0, 1.0 - yc * svm.decision_function(ps, X))
    np.testing.assert_allclose(svm.losses(ps, X, yc), hinge, **close)

    # penalties, one row per point (the MOSPL population) and one vector
    W = rng.standard_normal((4, d))
    assert np.allclose(L1(0.03).value(W, n), [L1(0.03).value(row, n) for row in W])
    assert np.allclose(L2().value(W, n), [L2().value(row, n) for row in W])
    assert L1(0.03).support(w).tolist() == (w != 0).tolist() and L2().support(w).all()


def test_sp_public_mixed_weights_match_the_private_forms():
    ell = np.array([0.0, 1e-120, 0.2, 0.7])
    for name, kw in [("linear", {}), ("mixture", {"gamma": 0.5}), ("log", {}), ("polynomial", {"t": 1.5})]:
        sp = get_sp(name, **kw)
        lam = 1.7
        e = np.maximum(ell, 1e-100) if sp.clip_mixed_loss else ell
        with np.errstate(all="ignore"):
            assert np.array_equal(sp.v_mixed(ell, lam), sp._v_mixed(e, lam), equal_nan=True)
            for a, b in zip(sp.dv_mixed(ell, lam), sp._dv_mixed(e, lam), strict=True):
                assert np.array_equal(a, b, equal_nan=True)


# --------------------------------------------------------------- the model
def test_huber_model_solver_matches_an_independent_solver():
    X, y = huber_data(n=90, d=8, seed=3)
    rng = np.random.default_rng(0)
    model = HuberModel(alpha=0.02, delta=0.6)
    lev = model.penalty_level(len(y))
    for v in (np.ones(len(y)), rng.random(len(y)) * (rng.random(len(y)) < 0.8)):
        p = model.fit_weighted(X, y, v)
        assert model.kkt_violation(p, X, y, v) <= 1e-9
        w_ref, f_ref = huber_l1_lbfgs(X, y, v, lev, 0.6)
        assert model.objective(p, X, y, v) <= f_ref + 1e-12 * abs(f_ref)
        assert np.abs(p.coef - w_ref).max() <= 1e-6
        # warm-started from elsewhere: the same optimum
        q = model.fit_weighted(X, y, v, warm=Params(coef=rng.standard_normal(8)))
        assert np.abs(q.coef - p.coef).max() <= 1e-9
    assert np.array_equal(model.fit_weighted(X, y, np.zeros(len(y))).coef, np.zeros(8))
    # a column that is zero on every row with v > 0 gets a zero coefficient, even from a warm start
    v = np.ones(len(y))
    Xz = X.copy()
    Xz[:, 3] = 0.0
    Xz[:5, 3] = 1.0
    v[:5] = 0.0
    pz = model.fit_weighted(Xz, y, v, warm=Params(coef=np.ones(8)))
    assert pz.coef[3] == 0.0 and model.kkt_violation(pz, Xz, y, v) <= 1e-9
    # large delta: the lasso
    big = HuberModel(alpha=0.02, delta=1e3).fit_weighted(X, y, np.ones(len(y)))
    las = get_model("lasso", alpha=0.02).fit_weighted(X, y, np.ones(len(y)))
    assert np.abs(big.coef - las.coef).max() <= 1e-8


def test_huber_is_registered_and_gets_the_glm_system():
    model = get_model("huber", alpha=0.01, delta=0.5)
    assert isinstance(model, HuberModel) and model.get_params() == {"alpha": 0.01, "delta": 0.5}
    X, y = huber_data(n=30, d=4)
    system = make_system(model, get_sp("linear"), X, y)
    assert isinstance(system, GLMSystem) and system.n_events == 4 + 3 * 30


@pytest.mark.parametrize("sp_name,sp_kw", [("linear", {}), ("mixture", {"gamma": 1.0})])
def test_huber_system_jacobians_match_finite_differences(sp_name, sp_kw):
    X, y = huber_data(n=70, d=6, seed=2)
    model = HuberModel(alpha=0.02, delta=0.4)
    sp = get_sp(sp_name, **sp_kw)
    system = make_system(model, sp, X, y)
    tr = _Tracker(system, model, sp, X, y, EngineOptions())
    lam = 2.0
    assert tr.warm_start(lam, model.fit_weighted(X, y, np.ones(len(y))))
    assert np.any(system.piece != HUBER_QUAD) and np.any(system.piece == HUBER_QUAD)
    th = system.theta()
    J, Jl = system.jacobians(th, lam)
    e = 1e-6
    Jfd = np.column_stack([(system.residual(th + e * u, lam) - system.residual(th - e * u, lam)) / (2 * e)
                           for u in np.eye(th.size)])
    assert np.abs(J - Jfd).max() <= 1e-6 * (1.0 + np.abs(J).max())
    Jlfd = (system.residual(th, lam + e) - system.residual(th, lam - e)) / (2 * e)
    assert np.abs(Jl - Jlfd).max() <= 1e-6 * (1.0 + np.abs(Jl).max())
    # the event functions, evaluated one by one, for a subset and for several points at once
    h = system.events(th, lam)
    assert h.size == system.n_events and np.all(h >= -1e-9 * system.event_scale(lam))
    idx = np.arange(system.n_events)
    assert np.allclose(system.events_many(np.array([th, th]), np.array([lam, lam]), idx), [h, h])
    local = np.array([system.poff + 3, system.off + 5, system.off + system.n + 7])
    assert np.allclose(system.events(th, lam, local), h[local])


# ------------------------------------------------------------------ the path
CASES = [
    ("linear", {}, (0.5, 8.0), dict(n=80, d=6, seed=1)),
    ("mixture", {"gamma": 1.0}, (0.5, 5.0), dict(n=80, d=6, seed=1)),
    ("linear", {}, (0.3, 6.0), dict(n=110, d=9, seed=4, n_out=12)),
]


@pytest.fixture(scope="module", params=range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def huber_path(request):
    sp_name, sp_kw, lam_range, data_kw = CASES[request.param]
    X, y = huber_data(**data_kw)
    model = HuberModel(alpha=0.02, delta=0.4)
    path = age_path(X, y, model=model, sp=sp_name, sp_params=sp_kw, lam_range=lam_range)
    return path, model, get_sp(sp_name, **sp_kw), X, y


def test_huber_path_has_piece_events_and_holds_kkt_at_every_point(huber_path):
    path, model, sp, X, y = huber_path
    moves = [(m[1], m[2]) for e in path.events for m in e["moves"]]
    assert any(a in Huber.piece_names.values() for a, _ in moves)  # samples changed piece
    assert path.critical_counts()["turning"] >= 5
    system = make_system(model, sp, X, y)
    worst = 0.0
    for lam, w in zip(path.lambdas, path.coef, strict=True):
        system.init_from(Params(coef=w), lam)
        worst = max(worst, system.kkt(lam))
    assert worst <= 1e-6


def test_huber_path_points_match_an_independent_solver(huber_path):
    path, model, sp, X, y = huber_path
    lev = model.penalty_level(len(y))
    steps = np.flatnonzero(path.point_kind == "step")
    for k in steps[np.linspace(0, steps.size - 1, 4).astype(int)]:
        p = Params(coef=path.coef[k])
        v = sp.v_star(model.losses(p, X, y), path.lambdas[k])
        w_ref, f_ref = huber_l1_lbfgs(X, y, v, lev, model.delta)
        f_path = model.objective(p, X, y, v)
        assert f_path <= f_ref + 1e-12 * abs(f_ref)
        assert np.abs(path.coef[k] - w_ref).max() <= 1e-6
