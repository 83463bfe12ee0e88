"""The compiled lasso segment follower (``EngineOptions.method="compiled"``, gaga/glm/segment_nb.py).

Each compiled piece against an independent computation: the regularizers' closed forms against
the SP classes, ``F``, its Jacobians and the event functions against the NumPy path system
(:class:`GLMSystem`), the LU against LAPACK through NumPy; and whole paths against the ODE
route: the same event log (kinds, moves, ages to 1e-8), KKT at every recorded point, the same
path between critical points.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.gaga import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.glm import segment_nb
from spl_bench.gaga.glm.segment_nb import call_typed
from spl_bench.gaga.systems import make_system
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp
from test_gaga_engine import _diabetes, _lasso_kkt

SPS = [("linear", {}), ("mixture", {"gamma": 0.3}), ("mixture", {"gamma": 2.0}), ("log", {}),
       ("polynomial", {"t": 1.5}), ("polynomial", {"t": 3.0}), ("hard", {})]


@settings(max_examples=60, deadline=None)
@given(which=st.integers(0, len(SPS) - 1), lam=st.floats(0.05, 0.95), frac=st.floats(0.0, 1.2))
def test_sp_kernels_match_the_regularizers(which, lam, frac):
    name, params = SPS[which]
    sp = get_sp(name, **params)
    kind, p = sp.compiled_kernels()
    lo, hi = sp.thresholds(lam)
    assert kind[1](lam, p) == pytest.approx((lo, hi), rel=1e-15, abs=0.0)
    if name == "hard":
        return
    ell = lo + frac * (hi - lo)
    if name == "polynomial" and ell >= lam:
        ell = lo + 0.99 * (hi - lo)  # (1 - ell/lam)^q is not real past the boundary
    v, dl, dlam = kind[0](ell, lam, p)
    ref_v = sp.v_mixed(np.array([ell]), lam)[0]
    ref_dl, ref_dlam = (a[0] for a in sp.dv_mixed(np.array([ell]), lam))
    assert v == pytest.approx(ref_v, rel=1e-12, abs=1e-14)
    assert dl == pytest.approx(ref_dl, rel=1e-12, abs=1e-14)
    assert dlam == pytest.approx(ref_dlam, rel=1e-12, abs=1e-14)


def test_sp_kernels_only_where_the_kernels_compute_the_class_formulas():
    linear = type(get_sp("linear"))

    class SameLinear(linear):  # inherits the formulas and their kernels
        pass

    class OtherLinear(linear):  # changes a formula but not the kernels
        def _v_mixed(self, ell, lam):
            return 1.0 - 0.5 * ell / lam

    assert SameLinear().compiled_kernels() == linear().compiled_kernels()
    assert OtherLinear().compiled_kernels() is None
    mixture = get_sp("mixture", gamma=0.7)
    assert mixture.compiled_kernels() == ((mixture.compiled.mixed, mixture.compiled.thresholds), 0.7)


@pytest.mark.parametrize("name,params", [s for s in SPS if s[0] != "log"])
def test_residual_jacobians_and_events_match_the_glm_system(name, params):
    X, y = _diabetes(n=70, d=9, seed=4)
    model, sp, lam = get_model("lasso", alpha=0.01), get_sp(name, **params), 1.3
    rng = np.random.default_rng(0)
    w = np.where(rng.random(9) < 0.6, rng.normal(size=9), 0.0)
    sysm = make_system(model, sp, X, y)
    sysm.init_from(Params(coef=w), lam)
    acols, icols, XA, XI, XL, yL, cL, sign_A = segment_nb._sets(X, y, sysm.active, sysm.code, sysm.sign)
    kind, p = sp.compiled_kernels()
    lev, code = model.penalty.level(len(y)), sysm.code
    theta = sysm.theta()
    F = call_typed(segment_nb.residual, XL, yL, cL, lev * sign_A, theta, lam, kind, p)
    assert np.allclose(F, sysm.residual(theta, lam), rtol=1e-12, atol=1e-12)
    J, Jl = call_typed(segment_nb.jacobians, XL, yL, cL, theta, lam, kind, p)
    J0, Jl0 = sysm.jacobians(theta, lam)
    assert np.allclose(J, J0, rtol=1e-12, atol=1e-10) and np.allclose(Jl, Jl0, rtol=1e-12, atol=1e-12)
    h = call_typed(segment_nb.events, XA, XI, y, code, sign_A, acols, icols, lev, theta, lam, kind, p)
    h0 = sysm.events(theta, lam)
    assert np.array_equal(np.isinf(h), np.isinf(h0))
    fin = np.isfinite(h0)
    assert np.allclose(h[fin], h0[fin], rtol=1e-12, atol=1e-12)


def test_cached_kernels_see_the_regularizer_only_as_a_function_type():
    """No compiled function of the follower holds an overload typed by dispatcher objects: such an
    overload is saved to numba's index in every process and never matched again (the index grows
    until its stale types raise "underlying object has vanished").  The tests above have run
    them in this process through ``call_typed``; a direct call with ``sp.compiled_kernels()``
    would show here."""
    from numba.core.registry import CPUDispatcher

    from spl_bench.gaga.glm import events_nb, lasso_nb

    X, y = _diabetes(n=30, d=4, seed=1)
    sp = get_sp("linear")
    sysm = make_system(get_model("lasso", alpha=0.01), sp, X, y)
    sysm.init_from(Params(coef=np.zeros(4)), 1.0)
    _, _, _, _, XL, yL, cL, _ = segment_nb._sets(X, y, sysm.active, sysm.code, sysm.sign)
    kind, p = sp.compiled_kernels()
    call_typed(segment_nb.jacobians, XL, yL, cL, sysm.theta(), 1.0, kind, p)
    seen = 0
    for mod in (segment_nb, lasso_nb, events_nb):
        for name, fn in vars(mod).items():
            if isinstance(fn, CPUDispatcher) and fn.__module__ == mod.__name__:
                for sig in fn.signatures:
                    seen += 1
                    assert not any("Dispatcher" in str(t) for t in sig), (name, sig)
    assert seen > 0


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 12), seed=st.integers(0, 10_000), rank_drop=st.booleans())
def test_lu_solves_and_signs_as_lapack_does(k, seed, rank_drop):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, k))
    if rank_drop and k > 1:
        A[-1] = A[0] * 2.0 - A[min(1, k - 1)] * (k > 2)  # a row that is a combination of others
        LU, _, _, ok = segment_nb.lu_factor(A)
        adg = np.abs(np.diag(LU))
        # the dependent row is eliminated down to rounding: a pivot at rounding level, flagged by the
        # 1e-13 cut-off unless the residue happens to land above it (k 9, seed 40: 9e-13)
        assert adg.min() <= 1e-10 * adg.max()
        assert ok == bool(adg.min() > 1e-13 * adg.max())
        return
    LU, perm, sign, ok = segment_nb.lu_factor(A)
    b = rng.normal(size=k)
    assert ok
    x = segment_nb.lu_solve(LU, perm, b)
    assert np.allclose(A @ x, b, atol=1e-9 * (1 + np.abs(A).sum(axis=1).max() * np.abs(x).max()))
    assert sign == np.sign(np.linalg.det(A))


def _events(path):
    return [(e["kind"], e["lam"], e["moves"]) for e in path.events]


@pytest.mark.parametrize("name,params,lam_range,seed", [
    ("linear", {}, (0.2, 3.0), 0),
    ("mixture", {"gamma": 0.3}, (0.2, 3.0), 1),
    ("log", {}, (0.1, 0.9), 0),
    ("polynomial", {"t": 1.5}, (0.2, 5.0), 2),
    ("hard", {}, (0.2, 3.0), 0),
])
def test_compiled_route_gives_the_ode_routes_path(name, params, lam_range, seed):
    """Same event log (kinds, moves, ages to 1e-8), KKT <= 1e-6 at every recorded point, the
    same path on a grid (1e-6), with the segments followed by the compiled loop."""
    X, y = _diabetes(n=80, d=8, seed=seed)
    kw = dict(model="lasso", sp=name, sp_params=params or None, lam_range=lam_range, alpha=0.01)
    ref = age_path(X, y, **kw, options=EngineOptions(method="auto"))
    cmp_ = age_path(X, y, **kw, options=EngineOptions(method="compiled"))
    ev, ev0 = _events(cmp_), _events(ref)
    assert len(ev0) >= 15
    assert [(k, m) for k, _, m in ev] == [(k, m) for k, _, m in ev0]
    assert np.allclose([t for _, t, _ in ev], [t for _, t, _ in ev0], rtol=1e-8, atol=1e-10)
    turning = sum(k == "turning" for k, _, _ in ev0)
    assert cmp_.meta["n_compiled_events"] >= 0.8 * turning
    # KKT at the steps the compiled loop recorded (at a jump point of the hard regularizer, v* is
    # discontinuous and a sample sits on its threshold)
    kkt = _lasso_kkt(cmp_, X, y, 0.01, get_sp(name, **params))
    steps = cmp_.point_kind == "step"
    assert steps.sum() >= 5 and kkt[steps].max() <= 1e-6
    grid = np.linspace(lam_range[0] + 1e-3, lam_range[1] - 1e-3, 150)
    jumps = [t for k, t, _ in ev0 if k == "jump"]
    grid = np.array([t for t in grid if all(abs(t - j) > 1e-3 for j in jumps)])
    w, w0 = cmp_.at(grid)[0], ref.at(grid)[0]
    assert np.max(np.abs(w - w0)) <= 1e-6 * (1 + np.abs(w0).max())


def test_compiled_route_hands_folds_back_to_the_ode_route():
    """Where ``det J`` changes sign inside a step (a fold: the polynomial regularizer's path
    turns back), the compiled loop hands the segment back and the ODE route locates the fold:
    the same jumps as the ODE route alone."""
    X, y = _diabetes(n=80, d=8, seed=2)
    kw = dict(model="lasso", sp="polynomial", sp_params={"t": 1.5}, lam_range=(0.2, 5.0), alpha=0.01)
    ref = age_path(X, y, **kw)
    cmp_ = age_path(X, y, **kw, options=EngineOptions(method="compiled"))
    assert cmp_.meta["n_compiled_handbacks"] > 0
    assert [e["kind"] for e in cmp_.events] == [e["kind"] for e in ref.events]
    assert np.allclose([e["lam"] for e in cmp_.events], [e["lam"] for e in ref.events], rtol=1e-8, atol=1e-10)
    # a fold on one route is a fold on the other (found by the sign of det J, or by the projection
    # failing past it: which of the two depends on where the ODE steps fall)
    folds = [["fold" in e.get("reason", "") for e in p.events] for p in (cmp_, ref)]
    assert folds[0] == folds[1] and sum(folds[0]) >= 2


def test_compiled_method_leaves_other_models_on_the_ode_route():
    X, y = _diabetes(n=60, d=5, seed=1)
    y = np.where(y > 0, 1.0, -1.0)
    kw = dict(model="logistic", sp="linear", lam_range=(0.05, 1.0), C=1.0)
    ref = age_path(X, y, **kw)
    cmp_ = age_path(X, y, **kw, options=EngineOptions(method="compiled"))
    assert cmp_.meta["n_compiled_calls"] == 0
    assert _events(cmp_) == _events(ref)
    assert np.array_equal(cmp_.lambdas, ref.lambdas)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 40), d=st.integers(1, 12), dup=st.booleans(),
       alpha=st.floats(0.005, 0.5), warm=st.booleans())
def test_compiled_weighted_lasso_is_the_reference_fit(seed, n, d, dup, alpha, warm):
    """The compiled active-set lasso (gaga/glm/inner_nb.py) against the NumPy one and the subgradient
    conditions, with zero weights, duplicated columns and warm starts."""
    from spl_bench.gaga.glm.inner import weighted_lasso

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if dup and d > 1:
        X[:, -1] = X[:, 0]
    y = X @ rng.normal(size=d) + rng.normal(size=n)
    v = np.where(rng.random(n) < 0.2, 0.0, rng.random(n))
    lev = alpha * n
    w0 = np.where(rng.random(d) < 0.5, rng.normal(size=d), 0.0) if warm else np.zeros(d)
    ref = weighted_lasso(X, y, v, lev, w0)
    got = weighted_lasso(X, y, v, lev, w0, compiled=True)
    if ref is None or got is None:
        # only an active system singular to working precision stops a fit (the caller then uses
        # the model's solver): duplicated columns, or fewer weighted rows than features
        assert dup or np.linalg.matrix_rank(X[v > 0]) < d
        return
    g = X.T @ (v * (y - X @ got))
    act = got != 0
    assert np.all(np.abs(g[~act]) <= lev * (1 + 1e-9))
    assert np.allclose(g[act], lev * np.sign(got[act]), rtol=1e-8, atol=1e-8 * lev)
    live = v > 0
    if np.linalg.matrix_rank(X[live]) < d:
        # columns dependent on the weighted rows (two equal columns, or fewer rows than columns):
        # the minimiser need not be unique, and where LAPACK calls the reference's system singular
        # and the compiled LU does not, the reference's degenerate pivots may pick another one:
        # the same fit and objective

        def objective(w):
            r = y - X @ w
            return 0.5 * float(np.sum(v * r * r)) + lev * float(np.abs(w).sum())

        assert np.allclose(X[live] @ got, X[live] @ ref, rtol=1e-8, atol=1e-9)
        assert objective(got) == pytest.approx(objective(ref), rel=1e-10, abs=1e-12)
    else:
        assert np.allclose(got, ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("name,params", [("linear", {}), ("mixture", {"gamma": 0.3}), ("polynomial", {"t": 1.5})])
def test_refined_tangent_is_the_factorised_one(name, params):
    """The tangent refined on the factor of a nearby J (``segment_nb.tangent``) against the one
    from J's own LU; a reference of the other inertia is not refined across (it falls back)."""
    X, y = _diabetes(n=70, d=9, seed=5)
    model, sp, lam = get_model("lasso", alpha=0.01), get_sp(name, **params), 1.3
    sysm = make_system(model, sp, X, y)
    rng = np.random.default_rng(1)
    sysm.init_from(Params(coef=np.where(rng.random(9) < 0.7, rng.normal(size=9), 0.0)), lam)
    acols, _, _, _, XL, yL, cL, _ = segment_nb._sets(X, y, sysm.active, sysm.code, sysm.sign)
    kind, p = sp.compiled_kernels()
    w = sysm.theta()
    J_near, _ = call_typed(segment_nb.jacobians, XL, yL, cL, w + 1e-5, lam + 1e-5, kind, p)
    LU, perm, sign, ok = segment_nb.lu_factor(J_near)
    assert ok
    tangent = segment_nb.tangent
    full, _, _, sign_full, _, nf_full = call_typed(tangent, XL, yL, cL, w, lam, kind, p, LU, perm, sign, False)
    ref, _, _, sign_ref, ok_ref, nf_ref = call_typed(tangent, XL, yL, cL, w, lam, kind, p, LU, perm, sign, True)
    assert nf_full == 1 and ok_ref and nf_ref == 0 and sign_ref == sign_full
    assert np.allclose(ref, full, rtol=1e-9, atol=1e-10 * np.abs(full).max())
    LUm, permm, sign_m, _ = segment_nb.lu_factor(-J_near)  # every eigenvalue of J_near^-1 J flipped
    _, _, sign_back, _, nf_back = call_typed(tangent, XL, yL, cL, w, lam, kind, p, LUm, permm, sign_m, True)[1:]
    assert nf_back == 1 and sign_back == sign_full


def test_compiled_route_takes_read_only_inputs():
    """A read-only design (a memory map, as scikit-learn's estimator checks pass) is copied for
    the compiled signature, not refused."""
    X, y = _diabetes(n=40, d=5, seed=3)
    X.setflags(write=False)
    y.setflags(write=False)
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.2, 2.0), alpha=0.01,
                    options=EngineOptions(method="compiled"))
    assert path.meta["n_compiled_calls"] > 0 and len(path.events) > 0
