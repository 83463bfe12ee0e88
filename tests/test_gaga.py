"""GAGA exact age-path: derivatives, exactness (KKT at every recorded point), consistency with ACS,
dense output, persistence, edge cases and the estimator.

Every numeric claim is checked against an independent computation: finite differences of
``F`` and of converged ACS solutions, the models' own KKT checks, or a plain ACS run.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_diabetes

from spl_bench.errors import ConfigError
from spl_bench.gaga import AgePath, age_path
from spl_bench.gaga.core.factors import Factor, solve_linear
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.gaga.core.tracker import _Tracker
from spl_bench.gaga.svm.svm_system import svm_kkt
from spl_bench.gaga.systems import make_system
from spl_bench.methods.gaga import GAGA
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp


# --------------------------------------------------------------------------- data
def _std(X):
    return (X - X.mean(0)) / X.std(0)


def reg_data(n=60, d=6, seed=0, noise=0.0):
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(seed)
    i = rng.choice(len(y), n, replace=False)
    X, y = _std(X[i][:, :d]), y[i]
    y = (y - y.mean()) / y.std()
    if noise:
        k = rng.random(n) < noise
        y[k] += rng.normal(0.2, 3.0, k.sum())
        y -= y.mean()
    return X, y


def clf_data(n=60, d=6, seed=0, noise=0.2):
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    i = rng.choice(len(y), n, replace=False)
    X, y = _std(X[i][:, :d]), np.where(y[i] > 0, 1.0, -1.0)
    flip = rng.random(n) < noise
    y[flip] *= -1
    return X, y


MODEL_KW = {"lasso": {"alpha": 0.01}, "logistic": {"C": 1.0}, "svm": {"C": 1.0, "gamma": 0.2}}
SP_KW = {"linear": {}, "mixture": {"gamma": 0.5}, "hard": {}}


def point_kkt(path: AgePath, model, sp, X, y) -> np.ndarray:
    """KKT violation at each recorded point, computed from the point alone (v* from its losses)."""
    out = []
    for lam, vec, b in zip(path.lambdas, path.values, path.intercept, strict=True):
        if path.dual_coef is not None:
            p = Params(dual_coef=vec, intercept=b, X_fit=X, y_fit=y, extra={"gamma": path.meta["kernel_gamma"]})
            out.append(svm_kkt(model, sp, p, X, y, lam))
        else:
            p = Params(coef=vec, intercept=b)
            v = sp.v_star(model.losses(p, X, y), lam)
            out.append(model.kkt_violation(p, X, y, v))
    return np.array(out)


def independent_svm_kkt(model, sp, p, X, y, lam) -> float:
    """SVM box/margin conditions written out case by case, with a tolerance on 'at the bound'."""
    C = model.C
    g = 1.0 - y * model.decision_function(p, X)
    v = sp.v_star(C * np.maximum(g, 0.0), lam)
    a = p.dual_coef
    viol = [abs(float(a @ y)) / C, float(np.max(a - C * v, initial=0.0)) / C, float(np.max(-a, initial=0.0)) / C]
    tol = 1e-7 * C
    lo = a <= tol
    hi = a >= C * v - tol
    free = ~lo & ~hi
    viol.append(float(np.max(np.abs(g[free]), initial=0.0)))
    viol.append(float(np.max(g[lo & ~hi], initial=0.0)))
    viol.append(float(np.max(-g[hi & ~lo], initial=0.0)))
    return max(viol)


# ------------------------------------------------------------ derivatives of F
@pytest.mark.parametrize("model_name", ["lasso", "logistic", "svm"])
@pytest.mark.parametrize("sp_name", ["linear", "mixture"])
def test_jacobians_match_finite_differences_of_F(model_name, sp_name):
    X, y = (reg_data() if model_name == "lasso" else clf_data(n=40))
    model = get_model(model_name, **MODEL_KW[model_name])
    sp = get_sp(sp_name, **SP_KW[sp_name])
    system = make_system(model, sp, X, y)
    tr = _Tracker(system, model, sp, X, y, EngineOptions())
    lam = 1.5
    assert tr.warm_start(lam, model.fit_weighted(X, y, np.ones(len(y))))
    th = system.theta()
    J, Jl = system.jacobians(th, lam)
    e = 1e-6
    cols = [(system.residual(th + e * u, lam) - system.residual(th - e * u, lam)) / (2 * e)
            for u in np.eye(th.size)]
    Jfd = np.column_stack(cols) if cols else np.zeros((th.size, 0))
    scale = 1.0 + np.abs(J).max()
    assert np.abs(J - Jfd).max() <= 1e-6 * scale
    Jlfd = (system.residual(th, lam + e) - system.residual(th, lam - e)) / (2 * e)
    assert np.abs(Jl - Jlfd).max() <= 1e-6 * (1.0 + np.abs(Jl).max())


def _acs_point(model, sp, X, y, lam, init):
    """A converged, polished partial optimum at ``lam`` (independent of the ODE)."""
    system = make_system(model, sp, X, y)
    tr = _Tracker(system, model, sp, X, y, EngineOptions())
    assert tr.warm_start(lam, init)
    return system, tr


@pytest.mark.parametrize("model_name,sp_name", [("lasso", "linear"), ("lasso", "mixture"),
                                                ("logistic", "linear"), ("svm", "linear"),
                                                ("svm", "mixture")])
def test_ode_matches_finite_differences_of_acs_solutions(model_name, sp_name):
    X, y = (reg_data() if model_name == "lasso" else clf_data(n=40))
    model = get_model(model_name, **MODEL_KW[model_name])
    sp = get_sp(sp_name, **SP_KW[sp_name])
    lam, h = 1.5, 1e-5
    init = model.fit_weighted(X, y, np.ones(len(y)))
    sys0, tr0 = _acs_point(model, sp, X, y, lam, init)
    d = tr0.equation.rhs(lam, np.append(sys0.theta(), 0.0))[:-1]
    dvec, db = sys0.full_derivative(d)
    pts = []
    for s in (-1, 1):
        sysk, _ = _acs_point(model, sp, X, y, lam + s * h, sys0.params())
        assert np.array_equal(sysk.code, sys0.code)  # same smooth piece
        pts.append(sysk.full_vector())
    fd = (pts[1][0] - pts[0][0]) / (2 * h)
    fdb = (pts[1][1] - pts[0][1]) / (2 * h)
    assert np.abs(dvec - fd).max() <= 1e-4 * (1.0 + np.abs(fd).max())
    assert abs(db - fdb) <= 1e-4 * (1.0 + abs(fdb))


def test_lasso_linear_derivative_is_the_signed_residual_cube():
    """dw_A/dlam = (X_A^T diag(1 - 3 ell/lam) X_A)^{-1} X_A^T r^3 / (2 lam^2); |r|^3 is wrong."""
    X, y = reg_data(noise=0.3, seed=3)
    model, sp = get_model("lasso", alpha=0.01), get_sp("linear")
    lam, h = 2.0, 1e-5
    sys0, _ = _acs_point(model, sp, X, y, lam, model.fit_weighted(X, y, np.ones(len(y))))
    w = sys0.full_vector()[0]
    A = w != 0
    r = y - X @ w
    ell = 0.5 * r**2
    M = ~(ell >= lam)  # samples with v* > 0
    XA = X[M][:, A]
    G = XA.T @ ((1 - 3 * ell[M] / lam)[:, None] * XA)
    signed = np.linalg.solve(G, XA.T @ r[M] ** 3) / (2 * lam**2)
    unsigned = np.linalg.solve(G, XA.T @ np.abs(r[M]) ** 3) / (2 * lam**2)
    pts = [_acs_point(model, sp, X, y, lam + s * h, sys0.params())[0].full_vector()[0] for s in (-1, 1)]
    fd = ((pts[1] - pts[0]) / (2 * h))[A]
    assert np.abs(signed - fd).max() <= 1e-4 * (1 + np.abs(fd).max())
    assert np.abs(unsigned - fd).max() > 1e-2 * np.abs(fd).max()


# ------------------------------------------------------------------ exactness
CASES = [
    ("lasso", "linear", (0.1, 3.0)),
    ("lasso", "mixture", (0.1, 3.0)),
    ("logistic", "linear", (0.5, 4.0)),
    ("logistic", "mixture", (0.9, 4.0)),
    ("svm", "linear", (0.1, 3.0)),
    pytest.param("svm", "mixture", (0.3, 2.0), marks=pytest.mark.slow),
    ("svm", "mixture", (0.4, 1.0)),
]


@pytest.mark.parametrize("model_name,sp_name,lam_range", CASES)
def test_kkt_holds_at_every_recorded_point(model_name, sp_name, lam_range):
    n_clf = (30 if lam_range[1] > 1.0 else 24) if (model_name, sp_name) == ("svm", "mixture") else 40
    X, y = (reg_data(n=50, noise=0.3) if model_name == "lasso" else clf_data(n=n_clf))
    path = age_path(X, y, model=model_name, sp=sp_name, sp_params=SP_KW[sp_name], lam_range=lam_range,
                    **MODEL_KW[model_name])
    model = get_model(model_name, **MODEL_KW[model_name])
    sp = get_sp(sp_name, **SP_KW[sp_name])
    kkt = point_kkt(path, model, sp, X, y)
    tol = 1e-5 if model_name == "svm" else 1e-6
    assert kkt.max() <= tol, (kkt.max(), path.lambdas[kkt.argmax()], path.point_kind[kkt.argmax()])
    assert np.all(np.diff(path.lambdas) >= 0)
    assert path.lambdas[0] == lam_range[0] and path.lambdas[-1] == pytest.approx(lam_range[1])
    assert len(path.events) > 0
    if model_name == "svm":
        k = np.linspace(0, len(path) - 1, 15).astype(int)
        gamma = path.meta["kernel_gamma"]
        for i in k:
            p = Params(dual_coef=path.dual_coef[i], intercept=path.intercept[i], X_fit=X, y_fit=y,
                       extra={"gamma": gamma})
            assert independent_svm_kkt(model, sp, p, X, y, path.lambdas[i]) <= 1e-5


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000), noise=st.sampled_from([0.1, 0.3]), sp_name=st.sampled_from(["linear", "mixture"]))
def test_lasso_exactness_over_datasets_and_noise(seed, noise, sp_name):
    X, y = reg_data(n=40, d=5, seed=seed, noise=noise)
    path = age_path(X, y, model="lasso", sp=sp_name, sp_params=SP_KW[sp_name], lam_range=(0.2, 2.0), alpha=0.02)
    kkt = point_kkt(path, get_model("lasso", alpha=0.02), get_sp(sp_name, **SP_KW[sp_name]), X, y)
    assert kkt.max() <= 1e-6


# ---------------------------------------------------------- consistency with ACS
@pytest.mark.parametrize("model_name,sp_name", [("lasso", "linear"), ("logistic", "mixture"), ("svm", "linear")])
def test_path_agrees_with_warm_started_acs_between_jumps(model_name, sp_name):
    X, y = (reg_data(n=50, noise=0.3) if model_name == "lasso" else clf_data(n=40))
    lr = (0.5, 2.5)
    path = age_path(X, y, model=model_name, sp=sp_name, sp_params=SP_KW[sp_name], lam_range=lr,
                    **MODEL_KW[model_name])
    model = get_model(model_name, **MODEL_KW[model_name])
    sp = get_sp(sp_name, **SP_KW[sp_name])
    rng = np.random.default_rng(0)
    jumps = [e["lam"] for e in path.events if e["kind"] == "jump"]
    checked = 0
    # (the logistic data select one class at lr[0]: the path starts later, test_degenerate.py)
    for lam in rng.uniform(path.lambdas[0] + 0.02, lr[1], size=12):
        if any(abs(lam - j) < 0.02 for j in jumps):
            continue
        # ACS warm-started from the path a little earlier, then run to convergence at lam
        vec0, b0 = path.at(lam - 0.01)
        init = (Params(coef=vec0[0], intercept=b0[0]) if path.coef is not None else
                Params(dual_coef=vec0[0], intercept=b0[0], X_fit=X, y_fit=y,
                       extra={"gamma": path.meta["kernel_gamma"]}))
        sysk, _ = _acs_point(model, sp, X, y, lam, init)
        vec, b = path.at(lam)
        ref, bref = sysk.full_vector()
        assert np.abs(vec[0] - ref).max() <= 1e-4 * (1 + np.abs(ref).max())
        assert abs(b[0] - bref) <= 1e-4 * (1 + abs(bref))
        checked += 1
    assert checked >= 5


# ------------------------------------------------------- dense output, save/load
def test_dense_output_and_save_load_roundtrip(tmp_path):
    X, y = reg_data(n=50, noise=0.3)
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.5, 2.0), alpha=0.01)
    # at() reproduces recorded points of each segment
    k = np.flatnonzero(path.point_kind[:-1] == "step")[::7]
    vals, _ = path.at(path.lambdas[k])
    assert np.allclose(vals, path.coef[k], atol=1e-12)
    # between recorded points, the interpolant is a partial optimum to high accuracy
    model, sp = get_model("lasso", alpha=0.01), get_sp("linear")
    mids = 0.5 * (path.lambdas[k] + path.lambdas[k + 1])
    same = path.segment[k] == path.segment[k + 1]
    vm, _ = path.at(mids[same])
    for lam, w in zip(mids[same], vm, strict=True):
        p = Params(coef=w)
        assert model.kkt_violation(p, X, y, sp.v_star(model.losses(p, X, y), lam)) <= 1e-5
    f = path.save(tmp_path / "p.npz")
    back = AgePath.load(f)
    assert np.array_equal(back.lambdas, path.lambdas) and np.array_equal(back.coef, path.coef)
    assert back.events == [{**e, "moves": [list(m) for m in e["moves"]]} for e in path.events]
    assert back.n_restarts == path.n_restarts and back.meta["model"] == "lasso"
    assert np.allclose(back.at(1.234)[0], path.at(1.234)[0])


# ------------------------------------------------------------------ edge cases
def test_hard_regularizer_path_is_piecewise_constant_with_only_jumps():
    X, y = reg_data(n=50, noise=0.3)
    path = age_path(X, y, model="lasso", sp="hard", lam_range=(0.2, 3.0), alpha=0.01)
    assert path.critical_counts()["turning"] == 0 and path.critical_counts()["jump"] > 0
    for s in np.unique(path.segment):
        seg = path.coef[path.segment == s]
        assert np.abs(seg - seg[0]).max() <= 1e-10
    model = get_model("lasso", alpha=0.01)
    kkt = point_kkt(path, model, get_sp("hard"), X, y)
    ends = np.isin(path.point_kind, ["critical", "before"])
    assert kkt[~ends].max() <= 1e-6
    # at a jump the old solution has a loss exactly at lam, where v = 0 and v = 1 are both
    # optimal: it is a partial optimum with that tie resolved the old way (closed or open E)
    for lam, w in zip(path.lambdas[ends], path.coef[ends], strict=True):
        p = Params(coef=w)
        ell = model.losses(p, X, y)
        closed = (ell <= lam * (1 + 1e-9)).astype(float)
        open_ = (ell < lam * (1 - 1e-9)).astype(float)
        assert min(model.kkt_violation(p, X, y, closed), model.kkt_violation(p, X, y, open_)) <= 1e-6


def test_all_samples_hard_at_lam_min_and_empty_active_set():
    X, y = reg_data(n=40, noise=0.0)
    y = 3.0 * y + 4.0 * np.sign(y)  # every loss >= 8 > lam_min: all samples in D, w = 0
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.5, 12.0), alpha=0.01,
                    init=Params(coef=np.zeros(X.shape[1])))
    assert np.all(path.coef[0] == 0)
    model, sp = get_model("lasso", alpha=0.01), get_sp("linear")
    assert np.all(sp.v_star(model.losses(Params(coef=path.coef[0]), X, y), 0.5) == 0)
    assert path.events and path.events[0]["moves"][0][1:] == ["D", "M"]
    assert point_kkt(path, model, sp, X, y).max() <= 1e-6


def test_everything_easy_and_no_critical_point_in_range():
    X, y = reg_data(n=40, noise=0.0)
    # mixture with a huge age: every loss is far below lo(lam); nothing changes on the range
    path = age_path(X, y, model="lasso", sp="mixture", sp_params={"gamma": 50.0}, lam_range=(100.0, 101.0),
                    alpha=0.01)
    assert path.events == [] and path.n_restarts == 0
    ref = get_model("lasso", alpha=0.01).fit_weighted(X, y, np.ones(len(y))).coef
    assert np.abs(path.coef - ref).max() <= 1e-7


def test_several_indices_crossing_at_the_same_age():
    X, y = reg_data(n=30, noise=0.3)
    X = np.vstack([X, X[:5]])  # duplicated samples have identical losses: they cross together
    y = np.concatenate([y, y[:5]])
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 3.0), alpha=0.01)
    multi = [e for e in path.events if len({m[0] for m in e["moves"]}) > 1]
    assert multi, "duplicated samples should move together"
    kkt = point_kkt(path, get_model("lasso", alpha=0.01), get_sp("linear"), X, y)
    assert kkt.max() <= 1e-6


def test_singular_jacobian_falls_back_to_least_squares():
    J = np.array([[1.0, 2.0], [2.0, 4.0]])
    x, singular, sign = solve_linear(J, np.array([1.0, 2.0]))
    assert singular and sign == 0.0 and np.all(np.isfinite(x))
    assert np.allclose(J @ x, [1.0, 2.0])
    assert Factor(J).least_squares and not Factor(np.eye(2)).least_squares
    x, singular, sign = solve_linear(np.diag([2.0, -1.0]), np.array([2.0, 1.0]))
    assert not singular and sign == -1.0 and np.allclose(x, [1.0, -1.0])


def test_svm_path_with_duplicated_samples_is_exact_and_splits_twins_equally():
    """Twins (identical x and y, as in mfeat-pixel) make J singular wherever both are free;
    the merged solves keep the path exact without the least-squares fallback
    (``meta["n_lstsq"]``).  Only the sum of the twins' a is determined: they get equal shares
    at every point, so the event log does not depend on how an inner fit split them (libsvm,
    the active-set fit, skipped ACS iterations).  An unequal split from a fit had left one twin
    at a = 0 on the margin, and a warm start then failed at every delta."""
    X, y = clf_data(n=40)
    X, y = np.vstack([X, X[:8]]), np.concatenate([y, y[:8]])
    model, sp = get_model("svm", **MODEL_KW["svm"]), get_sp("linear")
    kw = dict(model="svm", sp="linear", lam_range=(0.1, 3.0), **MODEL_KW["svm"])
    path = age_path(X, y, **kw)
    assert path.meta["n_singular"] > 0 and path.meta["n_lstsq"] == 0
    assert path.meta["n_failed_warm_starts"] == 0
    assert point_kkt(path, model, sp, X, y).max() <= 1e-5
    np.testing.assert_allclose(path.dual_coef[:, :8], path.dual_coef[:, 40:], rtol=0, atol=1e-12)
    log = [(e["kind"], e["lam"]) for e in path.events]
    for opts in (EngineOptions(acs_skip=False), EngineOptions(svm_active_set=False)):
        other = [(e["kind"], e["lam"]) for e in age_path(X, y, **kw, options=opts).events]
        assert [k for k, _ in other] == [k for k, _ in log]
        assert np.allclose([t for _, t in other], [t for _, t in log], rtol=1e-9, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 9), dup=st.integers(1, 3))
def test_duplicated_rows_and_columns_give_the_minimum_norm_solution(seed, k, dup):
    """A J with groups of equal rows and equal columns (duplicated samples on the margin): the
    merged LU solve equals the pseudo-inverse solution, for a consistent and an inconsistent
    right-hand side (least squares).  The sign of the factor is that of the merged system's
    determinant (the fold test of a path with duplicated samples on the margin)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, k)) + k * np.eye(k)
    idx = np.concatenate([np.arange(k), rng.integers(0, k, size=dup)])  # some indices repeated
    J = A[np.ix_(idx, idx)]
    rng.shuffle(perm := np.arange(idx.size))
    J = J[np.ix_(perm, perm)]
    f = Factor(J)
    assert f.singular and f.merged is not None and not f.least_squares
    assert f.sign == np.linalg.slogdet(A)[0]  # the merged system is A itself, up to a symmetric permutation
    # the groups passed on to the next factor: used when they hold, ignored when they do not
    J2 = J + 1e-3 * (J != 0) * np.add.outer(idx[perm], idx[perm])  # same duplicate structure
    hinted = Factor(J2, hint=f.groups)
    assert hinted.sign == np.linalg.slogdet(A + 1e-3 * (A != 0) * np.add.outer(np.arange(k), np.arange(k)))[0]
    J3 = J2 + np.diag(np.arange(idx.size) * 1e-2)  # duplicates broken: non-singular
    unhinted = Factor(J3, hint=f.groups)
    assert not unhinted.singular and unhinted.merged is None
    for rhs in (J @ rng.normal(size=idx.size), rng.normal(size=idx.size)):
        np.testing.assert_allclose(f.solve(rhs), np.linalg.pinv(J) @ rhs, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(hinted.solve(rhs), np.linalg.pinv(J2) @ rhs, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(unhinted.solve(rhs), np.linalg.solve(J3, rhs), rtol=1e-8, atol=1e-10)


def test_bad_input_gives_clear_errors():
    X, y = reg_data(n=20)
    with pytest.raises(ConfigError):
        age_path(X, y, model="lasso", sp="linear", lam_range=(2.0, 1.0))
    with pytest.raises(ConfigError):
        age_path(X, y, model="nope", sp="linear")
    with pytest.raises(ConfigError):
        GAGA(lam_min=3.0, lam_max=1.0).fit(X, y)
    with pytest.raises(ConfigError, match="jump_delta"):
        GAGA(jump_delta=0.0).fit(X, y)


# ------------------------------------------------------------------ estimator
def test_estimator_candidates_and_run_info():
    X, y = clf_data(n=50)
    est = GAGA(model="logistic", model_params={"C": 1.0}, sp="mixture", sp_params={"gamma": 0.5},
               lam_min=0.5, lam_max=3.0, n_grid=20, max_candidates=200)
    est.fit(X, y)
    lams = [c["lam"] for c in est.candidate_params_]
    # these data select one class at lam_min = 0.5: the path starts where they do not (test_degenerate.py)
    assert np.all(np.diff(lams) >= 0) and lams[0] == est.run_info()["start_lam"] >= 0.5
    P = est.predict_candidates(X)
    assert P.shape == (len(lams), len(y)) and set(np.unique(P)) <= {-1.0, 1.0}
    info = est.run_info()
    assert info["n_critical_turning"] + info["n_critical_jump"] == len(est.path_.events)
    assert info["n_restarts"] == est.path_.n_restarts
    est.select(3)
    assert np.array_equal(est.predict(X), P[3])


def test_estimator_passes_the_svm_fit_choice_to_the_engine():
    X, y = clf_data(n=40, noise=0.3)
    kw = dict(model="svm", model_params={"C": 1.0, "gamma": 0.2}, lam_min=0.1, lam_max=1.0, n_grid=5)
    on, off = GAGA(**kw).fit(X, y), GAGA(**kw, svm_active_set=False).fit(X, y)
    assert on.path_.meta["n_acs_fits"] > 0 and "n_acs_fits" not in off.path_.meta
    assert GAGA(**kw, svm_active_set=False).get_params()["svm_active_set"] is False
    no_skip = GAGA(**kw, acs_skip=False).fit(X, y)
    assert no_skip.path_.meta["n_acs_skips"] == 0 and no_skip.get_params()["acs_skip"] is False


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), frac=st.floats(0.2, 1.0))
def test_active_set_weighted_lasso_matches_coordinate_descent(seed, frac):
    from spl_bench.gaga.glm.inner import weighted_lasso

    X, y = reg_data(n=60, d=8, seed=seed, noise=0.3)
    rng = np.random.default_rng(seed)
    v = rng.random(60) * (rng.random(60) < frac)
    model = get_model("lasso", alpha=0.01)
    ref = model.fit_weighted(X, y, v).coef
    w = weighted_lasso(X, y, v, model.penalty_level(60), rng.normal(size=8) * (rng.random(8) < 0.5))
    if w is not None:  # None means "fall back to the model's solver"
        assert np.abs(w - ref).max() <= 1e-7 * (1 + np.abs(ref).max())
        assert model.kkt_violation(Params(coef=w), X, y, v) <= 1e-10


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_dup=st.integers(1, 3), combo=st.booleans(), compiled=st.booleans())
@example(seed=1121, n_dup=1, combo=False, compiled=False)  # the plain solver ends on a dependent support
def test_weighted_lasso_with_columns_dependent_on_the_live_rows(seed, n_dup, combo, compiled):
    """Columns equal (or one a sum of two others) on the rows with v > 0 but not on the others, as on
    ailerons: the active set's equality systems are singular there.  The fit is still made by the
    exact active-set solver (its degenerate pivots, ``rank_safe``), and it is the lasso's minimum:
    checked against the subgradient conditions and against the objective value of scikit-learn's
    coordinate descent (an independent solver), from a warm start whose support is dependent."""
    from sklearn.linear_model import Lasso

    from spl_bench.gaga.glm.inner import _active_set, weighted_lasso

    rng = np.random.default_rng(seed)
    n, d = 80, 6
    X = rng.normal(size=(n, d))
    v = rng.random(n) * (rng.random(n) < 0.7)
    dead = v == 0
    extra = []
    for k in range(n_dup):  # equal to column k where v > 0, not where v = 0
        col = X[:, k].copy()
        col[dead] = rng.normal(size=dead.sum())
        extra.append(col)
    if combo:  # the sum of columns 1 and 2 where v > 0
        col = X[:, 1] + X[:, 2]
        col[dead] = rng.normal(size=dead.sum())
        extra.append(col)
    X = np.column_stack([X, *extra])
    y = X[:, :d] @ rng.normal(size=d) + rng.normal(scale=0.5, size=n)
    lev = 0.05 * float(np.abs(X.T @ (v * y)).max())
    w0 = rng.normal(size=X.shape[1])  # every column active: a dependent support
    counts: dict[str, int] = {}
    w = weighted_lasso(X, y, v, lev, w0, compiled=compiled, counts=counts)
    assert w is not None

    def objective(u):
        r = y - X @ u
        return 0.5 * float(np.sum(v * r * r)) + lev * float(np.abs(u).sum())

    corr = X.T @ (v * (y - X @ w))
    on = w != 0
    assert np.abs(corr[on] - lev * np.sign(w[on])).max(initial=0.0) <= 1e-9 * lev
    assert np.abs(corr[~on]).max(initial=0.0) <= lev * (1 + 1e-9)
    cd = Lasso(alpha=lev / v.sum(), fit_intercept=False, tol=1e-14, max_iter=200_000).fit(X, y, sample_weight=v)
    assert objective(w) <= objective(cd.coef_) + 1e-9 * objective(cd.coef_)
    # a fit made with the pivots has a support independent on the live rows; the plain solver's
    # equality solves can still converge on a dependent one (seed 1121: both copies of column 0
    # active), which is a minimum too (the lasso's minimiser is not unique there): checked above
    if counts.get("pivoted"):
        assert np.linalg.matrix_rank(X[~dead][:, on]) == on.sum()
    # where the plain active set (no pivots) returns a fit, it is the same minimum (it is checked now)
    plain = _active_set(X, y, v, lev, w0, 500, rank_safe=False)
    if plain is not None:
        assert objective(plain) == pytest.approx(objective(w), rel=1e-9)


def test_the_plain_active_set_refuses_a_singular_solve_it_used_to_return():
    """The case the pivots are for (seed 247 of the test above): from a start with every column active,
    the singular equality system of two columns equal on the live rows "solves" into +-1.8e15; the
    inactive coordinates' conditions hold there, the active ones' do not.  The plain method now says
    so (None), and :func:`weighted_lasso` makes the fit with its pivots."""
    from spl_bench.gaga.glm.inner import _active_set, weighted_lasso

    rng = np.random.default_rng(247)
    n, d = 80, 6
    X = rng.normal(size=(n, d))
    v = rng.random(n) * (rng.random(n) < 0.7)
    dead = v == 0
    col = X[:, 0].copy()
    col[dead] = rng.normal(size=dead.sum())
    X = np.column_stack([X, col])
    y = X[:, :d] @ rng.normal(size=d) + rng.normal(scale=0.5, size=n)
    lev = 0.05 * float(np.abs(X.T @ (v * y)).max())
    w0 = rng.normal(size=d + 1)
    assert _active_set(X, y, v, lev, w0, 500, rank_safe=False) is None
    for compiled in (False, True):
        w = weighted_lasso(X, y, v, lev, w0, compiled=compiled)
        assert w is not None and np.abs(w).max() < 10.0
        assert (w[0] == 0.0) or (w[d] == 0.0)  # one of the two equal columns carries the pair
