"""The kernels the compiled lasso follower is made of (gaga/glm/lasso_nb.py, events_nb.py), each
against a plain NumPy computation: the Gram matrix ``X_A^T diag(D) X_A``, the Woodbury factor of
a low-rank change of ``J_w``, Newton from a predicted residual vector, the residuals of the
Hermite interpolant from those of its ends, and the event test at an interior point.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.gaga import age_path
from spl_bench.gaga.glm import events_nb, lasso_nb
from spl_bench.gaga.glm.segment_nb import call_typed
from spl_bench.gaga.systems import make_system
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp
from test_gaga_engine import _diabetes


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 13), seed=st.integers(0, 10_000))
def test_gram_is_the_weighted_product(n, k, seed):
    """Every tile size and remainder of the 4 x 4 tiling; weights of both signs and zeros (D)."""
    rng = np.random.default_rng(seed)
    XA = rng.normal(size=(n, k))
    D = np.where(rng.random(n) < 0.2, 0.0, rng.normal(size=n))
    J = lasso_nb.gram(lasso_nb.gram_work(XA), D)
    ref = (XA.T * D) @ XA
    assert np.array_equal(J, J.T)
    assert np.allclose(J, ref, rtol=1e-12, atol=1e-12 * (1.0 + np.abs(XA).max() ** 2 * np.abs(D).sum()))


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 10), m=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_low_rank_factor_solves_the_changed_system(k, m, seed):
    """``P = J + U^T diag(c) U`` through the factor of ``J``: solves and the sign of ``det P``."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, k))
    J = A @ A.T + k * np.eye(k) * rng.choice([-1.0, 1.0])
    U = rng.normal(size=(m, k))
    c = rng.choice([-1.0, 1.0], size=m) * rng.uniform(0.1, 3.0, size=m)
    LU, perm, sign, ok = lasso_nb.lu_factor(J)
    assert ok
    fac, sign_p, ok = lasso_nb.low_rank(lasso_nb.plain(LU, perm), sign, U, c)
    P = J + U.T @ np.diag(c) @ U
    if not ok:  # the capacitance is singular to working precision: so is P, nearly
        assert abs(np.linalg.det(P)) <= 1e-8 * np.abs(J).max() ** k
        return
    b = rng.normal(size=k)
    x = lasso_nb.fsolve(fac, b)
    assert np.allclose(P @ x, b, atol=1e-8 * (1.0 + np.abs(P).max() * np.abs(x).max()))
    assert sign_p == np.sign(np.linalg.det(P))


def _system(name="linear", params=None, n=70, d=9, seed=4, lam=0.5, coef=None):
    X, y = _diabetes(n=n, d=d, seed=seed)
    model, sp = get_model("lasso", alpha=0.01), get_sp(name, **(params or {}))
    rng = np.random.default_rng(0)
    sysm = make_system(model, sp, X, y)
    if coef is None:
        coef = np.where(rng.random(d) < 0.6, rng.normal(size=d), 0.0)
    sysm.init_from(Params(coef=coef), lam)
    return X, y, model, sp, sysm


def test_projection_from_a_predicted_residual_returns_the_points_own():
    """``project_r`` started from a wrong prediction of ``X_A w - y`` (as the follower's predictors
    give it) converges to the point it reaches from the exact one, and returns that point's own
    residuals; a prediction that looks converged is judged again on the point's own."""
    X, y = _diabetes(n=70, d=9, seed=4)
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.2, 2.0), alpha=0.01)
    i = int(np.flatnonzero(path.point_kind == "step")[len(path) // 3])
    lam = float(path.lambdas[i])
    X, y, model, sp, sysm = _system(lam=lam, coef=path.coef[i])
    acols = np.flatnonzero(sysm.active)
    XA = np.ascontiguousarray(X[:, acols])
    lev = model.penalty.level(len(y))
    gp = lev * sysm.sign[acols]
    kind, p = sp.compiled_kernels()
    easy, mixed = lasso_nb.set_lists(sysm.code)
    G = lasso_nb.gram_work(XA)
    fac = lasso_nb.no_factor()
    w0 = sysm.theta() + 1e-4
    exact = call_typed(lasso_nb.project_r, XA, y, easy, mixed, gp, lev, w0, np.empty(0), lam, kind, p, fac, False,
                       1e-12, G)
    assert exact[3] <= 1e-12
    noise = 1e-3 * np.random.default_rng(1).normal(size=len(y))
    for r_pred in (XA @ w0 - y + noise, XA @ exact[0] - y + noise):
        out = call_typed(lasso_nb.project_r, XA, y, easy, mixed, gp, lev, w0.copy(), r_pred, lam, kind, p, fac,
                         False, 1e-12, G)
        assert out[3] <= 1e-12
        assert np.array_equal(out[1], XA @ out[0] - y)
        assert np.allclose(out[0], exact[0], rtol=0, atol=1e-10)
    # the converged point with a prediction that hides a residual above the tolerance
    w_off = exact[0] + 1e-6
    out = call_typed(lasso_nb.project_r, XA, y, easy, mixed, gp, lev, w_off, exact[1], lam, kind, p, fac, True,
                     1e-12, G)
    assert out[3] <= 1e-12 and np.allclose(out[0], exact[0], rtol=0, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), u=st.floats(0.0, 1.0))
def test_interpolant_residuals_from_the_ends(seed, u):
    rng = np.random.default_rng(seed)
    n, k = 40, 5
    XA, y = rng.normal(size=(n, k)), rng.normal(size=n)
    w0, w1, d0, d1 = (rng.normal(size=k) for _ in range(4))
    t0, h = 0.7, 0.3
    s = t0 + u * h
    rs = events_nb.hermite_r(t0, h, XA @ w0 - y, XA @ w1 - y, XA @ d0, XA @ d1, s)
    assert np.allclose(rs, XA @ events_nb.hermite(t0, h, w0, w1, d0, d1, s) - y, rtol=1e-12, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(which=st.sampled_from([("linear", {}), ("mixture", {"gamma": 0.3}), ("log", {}), ("hard", {})]),
       seed=st.integers(0, 10_000), tol=st.sampled_from([1e-10, 1e-3, 0.05]))
def test_interior_check_says_what_the_event_functions_say(which, seed, tol):
    """``interior_sees`` (samples first, the inactive features' gradient only when needed) against
    the full event vector of the same point and its scale; ``tol`` large enough to put events
    on both sides of the test."""
    name, params = which
    X, y, model, sp, sysm = _system(name, params, seed=seed % 7)
    rng = np.random.default_rng(seed)
    acols, icols = np.flatnonzero(sysm.active), np.flatnonzero(~sysm.active)
    XA, XI = np.ascontiguousarray(X[:, acols]), np.ascontiguousarray(X[:, icols])
    sign_A = sysm.sign[acols]
    kind, p = sp.compiled_kernels()
    lev, code = model.penalty.level(len(y)), sysm.code
    easy, mixed = lasso_nb.set_lists(code)
    ws = sysm.theta() + 0.05 * rng.normal(size=acols.size)
    s = 0.5 * (1.0 + 0.05 * rng.normal())
    wscale = 1e-3 + np.abs(ws).max()
    seen = call_typed(events_nb.interior_sees, XI, code, sign_A, icols, lev, easy, mixed, ws, XA @ ws - y, s, kind,
                      p, wscale, tol)
    h = call_typed(events_nb.events, XA, XI, y, code, sign_A, acols, icols, lev, ws, s, kind, p)
    sc = events_nb.event_scale(X.shape[1], len(y), acols.size, acols, wscale, kind[1](s, p)[1])
    assert seen == bool(np.any(h < -tol * sc))
