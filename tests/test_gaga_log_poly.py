"""The LOG and polynomial SP-regularizers through the GAGA engine.

Checked against computations that do not use ``spl_bench.gaga``:

* exactness: the KKT measure of every recorded point, computed from the point alone
  (``v = v*(ell(point), lam)``, then the model's KKT check of the v-weighted problem;
  for the SVM the natural residual of the dual, as in ``tests/test_gaga.py::point_kkt``);
* ``v*``: at recorded points, each sample's weight is compared with the minimiser of
  ``v ell + f(v, lam)`` over [0, 1] found numerically by scipy, with ``f`` written out
  here from the regularizers' definitions (not taken from ``spl_bench.sp``);
* the exact derivative stored at a recorded point (``AgePath.d_vec``, Theorem 3) against
  central differences of converged ACS solutions (``tests/gaga_reference.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from gaga_reference import Reference, breast_cancer, diabetes
from spl_bench.gaga import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.models import get_model
from spl_bench.sp import get_sp


# ------------------------------------------------------- the regularizers, written out
def log_penalty(v: float, lam: float) -> float:
    """LOG (Meng, Zhao and Jiang 2017): ``zeta v - zeta^v / log zeta`` with ``zeta = 1 - lam``."""
    z = 1.0 - lam
    return z * v - z**v / np.log(z)


def poly_penalty(v: float, lam: float, t: float) -> float:
    """Polynomial soft weighting (Gong et al.): ``lam (v^t / t - v)``."""
    return lam * (v**t / t - v)


def numeric_v(ell: float, lam: float, sp_name: str, t: float = 0.0) -> float:
    """argmin over [0, 1] of ``v ell + f(v, lam)`` by a bounded scalar search (the end points included)."""
    f = (lambda v: v * ell + log_penalty(v, lam)) if sp_name == "log" else \
        (lambda v: v * ell + poly_penalty(v, lam, t))
    res = minimize_scalar(f, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    cands = [(f(0.0), 0.0), (f(1.0), 1.0), (float(res.fun), float(res.x))]
    return min(cands)[1]


def make_sp(sp_name: str, t: float):
    return get_sp("log") if sp_name == "log" else get_sp("polynomial", t=t)


@settings(max_examples=150, deadline=None)
@given(ell=st.floats(0.0, 5.0), lam=st.floats(0.02, 0.98), t=st.sampled_from([1.2, 1.35, 1.7, 2.5]),
       which=st.sampled_from(["log", "polynomial"]))
def test_closed_form_v_star_is_the_numerical_minimiser(ell, lam, t, which):
    v = float(make_sp(which, t).v_star(np.array([ell]), lam)[0])
    vn = numeric_v(ell, lam, which, t)
    assert abs(v - vn) <= 1e-6
    # and it is at least as good as the numerical minimiser (no tolerance on the side of v*)
    f = (lambda u: u * ell + log_penalty(u, lam)) if which == "log" else (lambda u: u * ell + poly_penalty(u, lam, t))
    assert f(v) <= f(vn) + 1e-12 * (1 + abs(f(vn)))


# ------------------------------------------------------------------------ the paths
MODEL_KW = {"lasso": {"alpha": 0.01}, "logistic": {"C": 0.3}, "svm": {"C": 1.0, "gamma": 0.2}}
TOL = {"lasso": 1e-6, "logistic": 1e-6, "svm": 1e-5}

#: (model, sp, t, lam_range, flipped label fraction).  LOG needs 0 < lam < 1.  The
#: logistic ranges avoid the degenerate one-class start (docs/gaga.md): LOG with C = 0.3,
#: the polynomial with C = 1 from lam = 1.
PATH_CASES = [
    ("lasso", "log", 0.0, (0.1, 0.9), 0.0),
    ("lasso", "polynomial", 1.2, (0.2, 3.0), 0.0),
    ("lasso", "polynomial", 1.35, (0.2, 3.0), 0.0),
    ("logistic", "log", 0.0, (0.3, 0.95), 0.0),
    ("logistic", "polynomial", 1.35, (1.0, 2.0), 0.0),
    ("svm", "log", 0.0, (0.1, 0.95), 0.15),
    ("svm", "polynomial", 1.35, (0.2, 2.0), 0.0),
    ("svm", "polynomial", 1.2, (0.2, 1.0), 0.0),
]


def _data(model_name: str, flip: float):
    return diabetes(n=50, d=6) if model_name == "lasso" else breast_cancer(n=50, d=6, flip=flip)


def _path(model_name, sp_name, t, lam_range, flip):
    X, y = _data(model_name, flip)
    sp_params = {} if sp_name == "log" else {"t": t}
    model_kw = dict(MODEL_KW[model_name])
    if model_name == "logistic" and sp_name == "polynomial":
        model_kw["C"] = 1.0
    path = age_path(X, y, model=model_name, sp=sp_name, sp_params=sp_params, lam_range=lam_range, **model_kw)
    return X, y, path, get_model(model_name, **model_kw), make_sp(sp_name, t)


def _ids(case):
    m, s, t, lr, _ = case
    return f"{m}-{s}{t if s == 'polynomial' else ''}-{lr[0]}-{lr[1]}"


@pytest.mark.parametrize("case", PATH_CASES, ids=[_ids(c) for c in PATH_CASES])
def test_kkt_at_every_recorded_point_and_v_star_matches_numerical_minimiser(case):
    model_name, sp_name, t, lam_range, flip = case
    X, y, path, model, sp = _path(*case)
    ref = Reference(model, sp, X, y)
    kkt = np.array([ref.kkt(vec, b, lam) for lam, vec, b in zip(path.lambdas, path.values, path.intercept,
                                                                 strict=True)])
    worst = int(kkt.argmax())
    assert kkt.max() <= TOL[model_name], (f"KKT {kkt.max():.3g} at lam={path.lambdas[worst]!r} "
                                          f"({path.point_kind[worst]}, segment {path.segment[worst]})")
    assert np.all(np.diff(path.lambdas) >= 0)
    assert path.lambdas[0] == lam_range[0] and path.lambdas[-1] == pytest.approx(lam_range[1])
    assert path.critical_counts()["turning"] > 0, "the range should contain critical points"
    # v* of the recorded points against the numerical minimiser, sample by sample
    n_mixed = 0
    for k in np.linspace(0, len(path) - 1, 5).astype(int):
        lam = float(path.lambdas[k])
        p = ref.params(path.values[k], path.intercept[k])
        ell = model.losses(p, X, y)
        v_num = np.array([numeric_v(e, lam, sp_name, t) for e in ell])
        v = sp.v_star(ell, lam)
        assert np.abs(v - v_num).max() <= 1e-6, (lam, np.abs(v - v_num).max())
        n_mixed += int(np.sum((v_num > 1e-6) & (v_num < 1 - 1e-6)))
        if model_name != "svm":  # the point solves the problem weighted by the numerical v as well
            assert model.kkt_violation(p, X, y, v_num) <= 1e-4
    assert n_mixed > 0


#: the logistic path with the polynomial SP (t = 1.35, lam in [1, 2]) ends a branch at a fold near
#: lam = 1.6568852905 (det J -> 0): the predictor-corrector once stepped past it with its unprojected
#: prediction (a jump at 1.65688635, KKT 1.4e-5 there) and RK45 located it early, by bisecting det J on
#: points projected from its own dense output (1.656885145: a Newton start on the other branch)
FOLD_CASE = ("logistic", "polynomial", 1.35, (1.0, 2.0), 0.0)


def test_routes_give_the_same_critical_points_at_a_fold():
    """``PC``, ``auto`` and RK45 at tight tolerances: the same critical points (kinds, ages to 1e-8), every
    one of them a partial optimum (KKT <= 1e-10, computed from the point alone)."""
    X, y = _data("logistic", 0.0)
    model, sp = get_model("logistic", C=1.0), make_sp("polynomial", 1.35)
    ref = Reference(model, sp, X, y)
    routes = {"auto": EngineOptions(method="auto"), "PC": EngineOptions(method="PC"),
              "tight": EngineOptions(method="RK45", rtol=1e-10, atol=1e-12)}
    events, crit, retakes = {}, {}, {}
    for name, opts in routes.items():
        path = age_path(X, y, model="logistic", sp="polynomial", sp_params={"t": 1.35}, lam_range=(1.0, 2.0),
                        C=1.0, options=opts)
        events[name] = path.events
        retakes[name] = path.meta["n_fold_retakes"]
        keep = path.point_kind != "step"
        crit[name] = (path.lambdas[keep], path.point_kind[keep])
        kkt = [ref.kkt(v, b, lam) for lam, v, b in zip(path.lambdas[keep], path.values[keep], path.intercept[keep],
                                                       strict=True)]
        worst = int(np.argmax(kkt))
        assert kkt[worst] <= 1e-10, (name, kkt[worst], path.lambdas[keep][worst], path.point_kind[keep][worst])
    kinds = [e["kind"] for e in events["auto"]]
    assert "jump" in kinds and "turning" in kinds
    for name in ("PC", "tight"):
        assert [e["kind"] for e in events[name]] == kinds, name
        np.testing.assert_allclose([e["lam"] for e in events[name]], [e["lam"] for e in events["auto"]],
                                   rtol=0, atol=1e-8, err_msg=name)
        assert list(crit[name][1]) == list(crit["auto"][1]), name
        np.testing.assert_allclose(crit[name][0], crit["auto"][0], rtol=0, atol=1e-8, err_msg=name)
    # the ODE routes reached the fold by handing steps to the predictor-corrector, and say so;
    # the predictor-corrector itself hands nothing
    assert retakes["auto"] >= 1 and retakes["tight"] >= 1 and retakes["PC"] == 0, retakes


DERIV_CASES = [
    ("lasso", "log", 0.0, (0.1, 0.9), 0.0),
    ("lasso", "polynomial", 1.35, (0.5, 1.5), 0.0),
    ("logistic", "log", 0.0, (0.3, 0.95), 0.0),
    ("svm", "log", 0.0, (0.1, 0.95), 0.15),
    ("svm", "polynomial", 1.35, (0.5, 1.5), 0.0),
]


@pytest.mark.parametrize("case", DERIV_CASES, ids=[_ids(c) for c in DERIV_CASES])
def test_path_derivative_matches_finite_differences_of_acs_solutions(case):
    """``d_vec`` at recorded points vs (ref(lam + h) - ref(lam - h)) / 2h of converged ACS solutions."""
    model_name, sp_name, t, lam_range, flip = case
    X, y, path, model, sp = _path(*case)
    ref = Reference(model, sp, X, y)
    ev = np.array([e["lam"] for e in path.events])
    h = 1e-5
    # recorded solver steps away from every critical point, spread over the range
    ok = (path.point_kind == "step") & np.array([np.all(np.abs(ev - lam) > 0.01) for lam in path.lambdas])
    ok &= (path.lambdas > lam_range[0] + 0.01) & (path.lambdas < lam_range[1] - 0.01)
    cand = np.flatnonzero(ok)
    assert cand.size >= 3
    checked = 0
    for k in cand[np.linspace(0, cand.size - 1, 3).astype(int)]:
        lam = float(path.lambdas[k])
        mid = ref.solve(lam, path.values[k], path.intercept[k])
        pts = [ref.solve(lam + s * h, mid.vec, mid.b) for s in (-1, 1)]
        if not all(np.array_equal(p.code, mid.code) for p in pts):  # a set boundary within h
            continue
        # the recorded point is the reference point at that age
        assert np.abs(path.values[k] - mid.vec).max() <= 1e-8 * (1 + np.abs(mid.vec).max())
        fd = (pts[1].vec - pts[0].vec) / (2 * h)
        fdb = (pts[1].b - pts[0].b) / (2 * h)
        assert np.abs(path.d_vec[k] - fd).max() <= 1e-4 * (1 + np.abs(fd).max()), (lam, path.d_vec[k], fd)
        assert abs(path.d_intercept[k] - fdb) <= 1e-4 * (1 + abs(fdb))
        checked += 1
    assert checked >= 2


def test_log_age_outside_unit_interval_is_rejected():
    X, y = diabetes(n=20, d=4)
    from spl_bench.errors import ConfigError

    for lr in [(0.5, 1.0), (0.0, 0.5), (0.5, 1.5)]:
        with pytest.raises(ConfigError):
            age_path(X, y, model="lasso", sp="log", lam_range=lr, alpha=0.01)
    # a valid range works and stays inside (0, 1)
    path = age_path(X, y, model="lasso", sp="log", lam_range=(0.5, 0.6), alpha=0.01)
    assert 0 < path.lambdas.min() and path.lambdas.max() < 1
