"""GAGA engine pieces: duplicated columns, the choice of ODE solver, warm starts after jumps.

Checked against independent computations: the KKT conditions of the original (not the
reduced) lasso problem, a path computed on a hand-deduplicated design, and the model's
own solver.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_diabetes

from spl_bench.errors import ConfigError
from spl_bench.gaga import age_path
from spl_bench.gaga.core.columns import ColumnGroups
from spl_bench.gaga.core.options import ODE_METHODS, EngineOptions
from spl_bench.gaga.core.warm import spl_objective
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp


def _diabetes(n: int = 60, d: int = 5, seed: int = 0, noise: float = 0.3):
    X, y = load_diabetes(return_X_y=True)
    rng = np.random.default_rng(seed)
    i = rng.choice(len(y), n, replace=False)
    X = X[i][:, :d]
    X = (X - X.mean(0)) / X.std(0)
    y = y[i]
    y = (y - y.mean()) / y.std()
    k = rng.random(n) < noise
    y[k] += rng.normal(0.2, 3.0, k.sum())
    return X, y - y.mean()


def _lasso_kkt(path, X, y, alpha, sp):
    model = get_model("lasso", alpha=alpha)
    out = []
    for lam, w in zip(path.lambdas, path.coef, strict=True):
        p = Params(coef=w)
        out.append(model.kkt_violation(p, X, y, sp.v_star(model.losses(p, X, y), lam)))
    return np.array(out)


# ------------------------------------------------------------------ column groups
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), reps=st.lists(st.integers(0, 3), min_size=1, max_size=4))
def test_column_groups_reduce_and_expand_keep_the_fit(seed, reps):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(12, 4))
    cols, truth = [base], list(range(4))
    for r in reps:  # append copies of base columns, some negated
        s = rng.choice([-1.0, 1.0])
        cols.append(s * base[:, [r]])
        truth.append(r)
    X = np.hstack(cols)
    g = ColumnGroups.find(X)
    assert g.keep.size == 4 and np.array_equal(g.group, truth)
    assert np.allclose(X, X[:, g.keep][:, g.group] * g.sign)
    w = rng.normal(size=X.shape[1])
    u = g.reduce(w)
    assert np.allclose(X[:, g.keep] @ u, X @ w)
    we = g.expand(u)
    assert np.allclose(X @ we, X[:, g.keep] @ u)
    # the split is the minimum-norm one: equal magnitudes inside a group, signs matching the columns
    for k in range(4):
        members = np.flatnonzero(g.group == k)
        assert np.allclose(np.abs(we[members]), abs(u[k]) / members.size)
    assert np.abs(we).sum() == pytest.approx(np.abs(u).sum())


def test_lasso_path_with_duplicated_columns_is_exact_for_the_original_design():
    X0, y = _diabetes(n=60, d=5)
    X = np.column_stack([X0, X0[:, 1], -X0[:, 1], X0[:, 3]])  # 3 duplicates of two columns
    sp = get_sp("linear")
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.3, 2.0), alpha=0.01)
    assert path.coef.shape[1] == X.shape[1]
    assert path.meta["duplicate_column_groups"] == [[1, 5, 6], [3, 7]]
    # exact for the original problem (the duplicated columns' subgradient conditions included)
    assert _lasso_kkt(path, X, y, 0.01, sp).max() <= 1e-6
    # equal split inside each group (minimum-norm lasso solution)
    assert np.allclose(path.coef[:, 5], path.coef[:, 1]) and np.allclose(path.coef[:, 6], -path.coef[:, 1])
    assert np.allclose(path.coef[:, 7], path.coef[:, 3])
    # and the same path as the one computed by hand on the deduplicated design
    ref = age_path(X0, y, model="lasso", sp="linear", lam_range=(0.3, 2.0), alpha=0.01)
    lams = np.linspace(0.35, 1.95, 17)
    jumps = [e["lam"] for e in ref.events if e["kind"] == "jump"]
    lams = np.array([t for t in lams if all(abs(t - j) > 1e-3 for j in jumps)])
    w, _ = path.at(lams)
    w0, _ = ref.at(lams)
    u = w[:, 1] + w[:, 5] - w[:, 6]
    assert np.allclose(u, w0[:, 1], atol=1e-8) and np.allclose(w[:, 3] + w[:, 7], w0[:, 3], atol=1e-8)
    assert np.allclose(w[:, [0, 2, 4]], w0[:, [0, 2, 4]], atol=1e-8)
    assert [e["kind"] for e in path.events] == [e["kind"] for e in ref.events]



def test_acs_fits_left_to_the_models_solver_are_counted(monkeypatch):
    """A warm start's v-weighted lasso fit that the exact active-set solver does not finish is made by
    the model's solver, and counted (``meta["n_fit_fallbacks"]``): one per fit when the exact solver
    never finishes; none on the same path when it does."""
    from spl_bench.gaga.glm import glm_system

    X, y = _diabetes(n=60, d=5)
    kw = dict(model="lasso", sp="linear", lam_range=(0.3, 2.0), alpha=0.01, options=EngineOptions(method="auto"))
    calls = []
    exact = glm_system.weighted_lasso
    monkeypatch.setattr(glm_system, "weighted_lasso", lambda *a, **k: calls.append(exact(*a, **k)) or calls[-1])
    ok = age_path(X, y, **kw)
    assert len(calls) > 0 and all(w is not None for w in calls)
    assert ok.meta["n_fit_fallbacks"] == 0
    calls.clear()
    monkeypatch.setattr(glm_system, "weighted_lasso", lambda *a, **k: calls.append(None))
    failing = age_path(X, y, **kw)
    assert failing.meta["n_fit_fallbacks"] == len(calls) > 0
    # the model's solver finds the same partial optima: the same critical points
    assert [e["kind"] for e in failing.events] == [e["kind"] for e in ok.events]
    assert np.allclose([e["lam"] for e in failing.events], [e["lam"] for e in ok.events], rtol=1e-6)


# --------------------------------------------------------------------- ODE solvers
@pytest.mark.parametrize("method,stiff_steps", [(m, 40) for m in ODE_METHODS if m != "LSODA"] + [("auto", 1)])
def test_every_ode_solver_gives_the_same_exact_path(method, stiff_steps):
    """Every solver against LSODA; ``auto`` also with every segment handed from RK45 to LSODA."""
    X, y = _diabetes(n=50, d=6, seed=3)
    sp = get_sp("linear")
    ref = age_path(X, y, model="lasso", sp="linear", lam_range=(0.2, 2.0), alpha=0.01,
                   options=EngineOptions(method="LSODA"))
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.2, 2.0), alpha=0.01,
                    options=EngineOptions(method=method, stiff_steps=stiff_steps, max_step=0.01))
    assert (path.meta["n_stiff_switches"] > 0) == (stiff_steps == 1)
    assert _lasso_kkt(path, X, y, 0.01, sp).max() <= 1e-6
    # the critical points are properties of the path, not of the integrator
    ev, ev0 = [(e["kind"], e["lam"]) for e in path.events], [(e["kind"], e["lam"]) for e in ref.events]
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-8, atol=1e-10)


PC_CASES = [
    ("svm", "linear", {}, {"C": 1.0, "gamma": 0.2}, 0.1),
    ("svm", "mixture", {"gamma": 0.3}, {"C": 1.0, "gamma": 0.2}, 0.1),
    ("svm", "linear", {}, {"C": 1.0, "kernel": "linear"}, 0.1),
    ("logistic", "linear", {}, {"C": 1.0}, 0.01),  # its losses cross lam below 0.1
]


@pytest.mark.parametrize("model,sp,spp,mp,lam_min", PC_CASES)
def test_predictor_corrector_gives_the_ode_routes_critical_points(model, sp, spp, mp, lam_min):
    """The predictor-corrector continuation (``method="PC"``) against the ODE route (RK45 /
    LSODA): the same event log (kinds, and ages to 1e-7), the same path between critical points
    (1e-6 on a grid), and fewer factorisations of J."""
    X, y = _noisy_cancer_svm(70, 2)
    kw = dict(model=model, sp=sp, sp_params=spp or None, lam_range=(lam_min, 3.0), **mp)
    ref = age_path(X, y, **kw, options=EngineOptions(method="auto"))
    pc = age_path(X, y, **kw, options=EngineOptions(method="PC"))
    ev, ev0 = [(e["kind"], e["lam"]) for e in pc.events], [(e["kind"], e["lam"]) for e in ref.events]
    assert len(ev0) >= 5
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-7, atol=1e-9)
    # a logistic case selects one class at lam_min: both routes start at the same later age (test_degenerate.py)
    assert pc.lambdas[0] == ref.lambdas[0]
    grid = np.linspace(max(0.11, ref.lambdas[0]), 2.99, 200)
    (a, b), (a0, b0) = pc.at(grid), ref.at(grid)
    assert np.max(np.abs(a - a0)) <= 1e-6 * (1 + np.abs(a0).max()) and np.max(np.abs(b - b0)) <= 1e-6
    assert pc.meta["n_rhs"] < ref.meta["n_rhs"]


def test_unknown_ode_solver_is_a_clear_error():
    X, y = _diabetes(n=30, d=3)
    with pytest.raises(ConfigError, match="RK45"):
        age_path(X, y, model="lasso", lam_range=(0.5, 1.0), alpha=0.01, options=EngineOptions(method="Euler"))


# ------------------------------------------------------------------- warm starts
def test_points_after_jumps_are_stable_partial_optima_not_worse_than_acs():
    """After each jump the engine lands on a point no worse (in the SPL objective) than plain ACS
    warm-started from the old branch at the same age reaches, and the Hessian there is PD."""
    from spl_bench.gaga.api import acs

    X, y = _diabetes(n=80, d=6, seed=1, noise=0.4)
    model, sp = get_model("lasso", alpha=0.01), get_sp("linear")
    path = age_path(X, y, model="lasso", sp="linear", lam_range=(0.1, 2.0), alpha=0.01)
    # a jump's new branch starts at lam + delta, after the old branch's last point at lam
    jumps = [i for i, k in enumerate(path.point_kind)
             if k == "after" and i > 0 and path.lambdas[i] > path.lambdas[i - 1]]
    assert jumps, "this case is chosen to contain jumps"
    for i in jumps:
        lam = float(path.lambdas[i])
        start = Params(coef=path.coef[i - 1])
        ref, _, conv = acs(model, sp, X, y, lam, start, tol=1e-12, max_iter=20_000)
        assert conv
        g_path = spl_objective(model, sp, Params(coef=path.coef[i]), X, y, lam)
        g_acs = spl_objective(model, sp, ref, X, y, lam)
        assert g_path <= g_acs + 1e-9 * max(1.0, abs(g_acs))
        active = path.coef[i] != 0
        ell = model.losses(Params(coef=path.coef[i]), X, y)
        code = sp.partition(ell, lam)
        # d(v* ell')/dz: 1 on E, 1 - 3 ell/lam on M (linear SP: v = 1 - ell/lam, ell'^2 = 2 ell), 0 on D
        Dw = np.select([code == 0, code == 1], [np.ones_like(ell), 1.0 - 3.0 * ell / lam], 0.0)
        H = X[:, active].T @ (Dw[:, None] * X[:, active])
        assert np.linalg.eigvalsh(H).min() > 0


@pytest.mark.parametrize("sp", ["linear", "mixture"])
def test_over_relaxed_acs_after_jumps_keeps_every_point_exact_and_descends(sp):
    """``acs_extrapolate=True`` (opt-in): the warm starts may land on another partial optimum
    than plain ACS (this case, with warm starts 1e-6 past a jump, is one where they do), but
    every recorded point is still exact and each point after a jump is no worse than the old
    branch's point at that age."""
    X, y = _diabetes(n=100, d=8, seed=1, noise=0.4)
    model, spr = get_model("lasso", alpha=0.01), get_sp(sp)
    plain, fast = (age_path(X, y, model="lasso", sp=sp, lam_range=(0.05, 3.0), alpha=0.01,
                            options=EngineOptions(acs_extrapolate=flag, delta=1e-6))
                   for flag in (False, True))
    assert fast.n_restarts > 0
    assert _lasso_kkt(fast, X, y, 0.01, spr).max() <= 1e-6
    if sp == "linear":  # documents why the option is off by default
        assert [e["lam"] for e in plain.events] != pytest.approx([e["lam"] for e in fast.events])
    for i in np.flatnonzero(fast.point_kind == "after"):
        if i == 0 or fast.lambdas[i] <= fast.lambdas[i - 1]:
            continue
        lam = float(fast.lambdas[i])
        g_new = spl_objective(model, spr, Params(coef=fast.coef[i]), X, y, lam)
        g_old = spl_objective(model, spr, Params(coef=fast.coef[i - 1]), X, y, lam)
        assert g_new <= g_old + 1e-9 * max(1.0, abs(g_old))


@pytest.mark.parametrize("model,sp", [("lasso", "linear"), ("lasso", "mixture"), ("logistic", "linear"),
                                      ("logistic", "mixture"), ("svm", "linear"), ("svm", "mixture")])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_subset_and_batched_event_functions_equal_the_full_ones(model, sp, seed):
    """The engine's shortcuts (events at a few positions, several ages at once) against the
    full event vector evaluated one point at a time, on perturbed states with every set in use."""
    from sklearn.datasets import load_breast_cancer

    from spl_bench.gaga.systems import make_system

    rng = np.random.default_rng(seed)
    if model == "lasso":
        X, y = _diabetes(n=80, d=6, seed=seed % 7)
        params = {"alpha": 0.05}
    else:
        X, y = load_breast_cancer(return_X_y=True)
        i = rng.choice(len(y), 90, replace=False)
        X, y = X[i][:, :6], 2.0 * y[i] - 1.0
        X = (X - X.mean(0)) / X.std(0)
        params = {"C": 1.0} if model == "logistic" else {"C": 1.0, "kernel": "rbf"}
    mdl, spr = get_model(model, **params), get_sp(sp)
    system = make_system(mdl, spr, X, y)
    lam = 0.5 + 2.0 * rng.random()
    system.init_from(mdl.fit_weighted(X, y, np.ones(len(y))), lam)
    theta = system.theta()
    thetas = theta + 0.05 * rng.normal(size=(3, theta.size))
    lams = lam * (1.0 + 0.1 * rng.random(3))
    full = np.array([system.events(t, float(s)) for t, s in zip(thetas, lams, strict=True)])
    np.testing.assert_allclose(system.events_many(thetas, lams), full, rtol=1e-12, atol=1e-12)
    idx = rng.choice(system.n_events, size=min(25, system.n_events), replace=False)
    np.testing.assert_allclose(system.events(thetas[0], float(lams[0]), idx), full[0, idx], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(system.events_many(thetas, lams, idx), full[:, idx], rtol=1e-12, atol=1e-12)
    # sample positions only (the shortcut through the rows of those samples)
    off = system.d if model == "lasso" else 0
    smp = off + rng.choice(system.n_events - off, size=15, replace=False)
    np.testing.assert_allclose(system.events_many(thetas, lams, smp), full[:, smp], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(system.event_scale(float(lams[0]), idx), system.event_scale(float(lams[0]))[idx])
    # the sample events against their definitions (distance to the boundaries of each set)
    lam0 = float(lams[0])
    lo, hi = spr.thresholds(lam0)
    n, code = len(y), system.code
    if model == "svm":
        a = system.a.copy()
        a[system.ifree] = thetas[0][:system.ifree.size]
        g = 1.0 - system.Q @ a - y * thetas[0][-1]
        m = mdl.C * g
        ref1 = np.select([code == 0, code == 1, code == 2, code == 3], [-g, a / mdl.C, g, (m - lo) / mdl.C],
                         (m - hi) / mdl.C)
        ref2 = np.select([code == 1, code == 2, code == 3], [1 - a / mdl.C, (lo - m) / mdl.C, (hi - m) / mdl.C],
                         np.inf)
        h = full[0]
    else:
        coef = np.zeros(X.shape[1])
        coef[system.active] = thetas[0][:int(system.active.sum())]
        b = 0.0 if model == "lasso" else thetas[0][-1]
        ell = mdl.losses(Params(coef=coef, intercept=b), X, y)
        ref1 = np.select([code == 0, code == 1], [lo - ell, ell - lo], ell - hi)
        ref2 = np.where(code == 1, hi - ell, np.inf)
        h = full[0, X.shape[1]:] if model == "lasso" else full[0]
    np.testing.assert_allclose(h[:n], ref1, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(h[n:], ref2, rtol=1e-9, atol=1e-9)


def test_progress_callback_reports_increasing_ages_up_to_lam_max():
    X, y = _diabetes(n=60, d=5, seed=2)
    # the ODE route reports after every segment; the default route (the compiled follower for the
    # lasso) after every call of the follower, which takes many segments
    for route, per_segment in (("auto", True), ("fastest", False)):
        seen: list[tuple[float, int]] = []
        path = age_path(X, y, model="lasso", lam_range=(0.2, 1.5), alpha=0.01, options=EngineOptions(method=route),
                        progress=lambda lam, k, seen=seen: seen.append((lam, k)))
        lams, counts = np.array([s[0] for s in seen]), np.array([s[1] for s in seen])
        assert len(seen) >= (len(path.events) if per_segment else 1)
        assert np.all(np.diff(lams) >= 0) and np.all(np.diff(counts) >= 0)
        assert lams[-1] == pytest.approx(1.5) and counts[-1] == len(path.events)


def test_path_command_writes_the_path_file_figures_and_summary(tmp_path, capsys):
    import json

    from spl_bench.gaga.core.path import AgePath
    from spl_bench.runner.cli import main

    code = main(["path", "model=lasso", "sp=linear", "data=diabetes", "lam_min=0.5", "lam_max=1.5",
                 f"out={tmp_path}", "progress=true"])
    assert code == 0
    stem = tmp_path / "diabetes_lasso_linear"
    loaded = AgePath.load(f"{stem}.npz")
    summary = json.loads(stem.with_name(stem.name + "_summary.json").read_text())
    assert summary["points"] == len(loaded) and summary["turning"] + summary["jump"] == len(loaded.events)
    for fig in ("_agepath.png", "_learning_curve.png", "_critical.png"):
        assert stem.with_name(stem.name + fig).stat().st_size > 0
    assert "critical points" in capsys.readouterr().out


def test_path_command_rejects_a_bad_age_range_with_a_clear_message(tmp_path, capsys):
    from spl_bench.runner.cli import main

    code = main(["path", "data=diabetes", "lam_min=0", "lam_max=2", f"out={tmp_path}", "progress=false"])
    assert code != 0
    err = capsys.readouterr().err
    assert "lam_min" in err and "Traceback" not in err


def test_path_command_takes_the_ode_method_and_rejects_an_unknown_one(tmp_path, capsys):
    from spl_bench.gaga.core.path import AgePath
    from spl_bench.runner.cli import main

    code = main(["path", "data=diabetes", "lam_min=0.5", "lam_max=1.0", "ode_method=LSODA", f"out={tmp_path}",
                 "progress=false"])
    assert code == 0
    assert AgePath.load(tmp_path / "diabetes_lasso_linear.npz").meta["ode_method"] == "LSODA"
    code = main(["path", "data=diabetes", "lam_min=0.5", "lam_max=1.0", "ode_method=Euler", f"out={tmp_path}",
                 "progress=false"])
    assert code != 0
    err = capsys.readouterr().err
    assert "Euler" in err and "Traceback" not in err


# ------------------------------------------------------ SVM ACS steps: active-set fit
def _svm_problem(seed: int, n: int, dup: int):
    from sklearn.metrics.pairwise import rbf_kernel

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    if dup:  # duplicated samples (mfeat-pixel has some): the fit's system becomes singular
        X[-dup:], y[-dup:] = X[:dup], y[:dup]
    K = rbf_kernel(X, X, gamma=0.5)
    return X, y, K


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), dup=st.integers(0, 4), zeros=st.integers(0, 10))
def test_active_set_svm_fit_solves_the_weighted_dual(seed, dup, zeros):
    """Warm-started from libsvm's solution for nearby weights, the active-set fit returns a point
    satisfying the model's own KKT check of the v-weighted dual, with libsvm's dual objective and
    decision values (libsvm solved to 1e-10 here)."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual
    from spl_bench.models.svm import SVMModel, libsvm_fit

    n, C = 60, 2.0
    X, y, K = _svm_problem(seed, n, dup)
    rng = np.random.default_rng(seed + 1)
    model = SVMModel(C=C, gamma=0.5)
    Q = K * np.outer(y, y)

    def ref(v):
        idx = np.flatnonzero(v > 0)
        sup, dual, b = libsvm_fit(K[np.ix_(idx, idx)], y[idx], v[idx], C, "precomputed", 0.0, 1e-10)
        a = np.zeros(n)
        a[idx[sup]] = dual * y[idx[sup]]
        return np.clip(a, 0.0, C * v), b

    v0 = rng.uniform(0.3, 1.0, n)
    v1 = np.clip(v0 + 0.05 * rng.normal(size=n), 0.0, 1.0)
    v1[rng.choice(n, zeros, replace=False)] = 0.0  # samples dropped (D): a_i = 0, no condition
    if np.unique(y[v1 > 0]).size < 2:
        return
    a0, _ = ref(v0)
    solver = WeightedSVMDual(Q, y)
    out = solver.fit(C * v1, a0)
    if out is None:  # it may give up (the caller then uses libsvm); it must not be wrong
        return
    a, b, g = out
    p = Params(dual_coef=a, intercept=b, X_fit=X, y_fit=y, extra={"gamma": 0.5})
    assert model.kkt_violation(p, X, y, v1) <= 1e-8
    assert np.allclose(g, 1.0 - y * model.decision_function(p, X), atol=1e-9)
    a_ref, b_ref = ref(v1)
    p_ref = Params(dual_coef=a_ref, intercept=b_ref, X_fit=X, y_fit=y, extra={"gamma": 0.5})

    def dual_obj(a):
        return 0.5 * a @ Q @ a - a.sum()

    assert dual_obj(a) <= dual_obj(a_ref) + 1e-8
    assert np.allclose(model.decision_function(p, X), model.decision_function(p_ref, X), atol=1e-4)
    # warm-started from its own solution for the same weights: the same point, from the kept sets
    a2, b2, _ = solver.fit(C * v1, a)
    assert np.allclose(a2, a, atol=1e-12) and abs(b2 - b) <= 1e-12


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), dup=st.integers(0, 4), zeros=st.integers(0, 10))
def test_libsvm_start_gives_the_active_set_methods_optimum(seed, dup, zeros):
    """Where guess-and-check gives up (here: one round, from the sets of a = 0), the fit from
    libsvm's sets and the primal active-set method from the warm start return the same exact
    optimum of the weighted dual (RBF kernel, duplicated samples, samples with v = 0)."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual
    from spl_bench.models.svm import SVMModel

    n, C = 60, 2.0
    X, y, K = _svm_problem(seed, n, dup)
    rng = np.random.default_rng(seed + 2)
    Q = K * np.outer(y, y)
    v = rng.uniform(0.2, 1.0, n)
    v[rng.choice(n, zeros, replace=False)] = 0.0
    if np.unique(y[v > 0]).size < 2:
        return
    u = C * v
    fits = {}
    for start in (True, False):
        solver = WeightedSVMDual(Q, y, max_rounds=1)
        solver.libsvm_start = start
        fits[start] = (solver.fit(u, np.zeros(n)), solver.n_libsvm_starts)
    (out, _), (ref, starts_ref) = fits[True], fits[False]
    assert starts_ref == 0
    if ref is None or out is None:  # a route may give up (the caller then uses libsvm)
        return
    a, b, g = out
    model = SVMModel(C=C, gamma=0.5)
    p = Params(dual_coef=a, intercept=b, X_fit=X, y_fit=y, extra={"gamma": 0.5})
    assert model.kkt_violation(p, X, y, v) <= 1e-8
    assert np.allclose(g, 1.0 - y * model.decision_function(p, X), atol=1e-9)
    # the optimum's decision values are unique (Q positive definite up to duplicated samples)
    p_ref = Params(dual_coef=ref[0], intercept=ref[1], X_fit=X, y_fit=y, extra={"gamma": 0.5})
    assert np.allclose(model.decision_function(p, X), model.decision_function(p_ref, X), atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 80), k=st.integers(0, 40))
def test_combine_rows_is_the_product_with_the_gathered_rows(seed, n, k):
    """``combine_rows(Q, rows, c)`` is ``c @ Q[rows]`` (another summation order: equal to 1e-12 of the
    terms' size), repeated rows and zero coefficients included."""
    from spl_bench.gaga.core.gather import combine_rows

    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n + 3))
    rows = rng.integers(0, n, size=k)
    c = rng.normal(size=k) * (rng.random(k) < 0.8)
    ref = c @ Q[rows]
    scale = float(np.abs(c) @ np.abs(Q[rows]).max(1)) if k else 0.0
    assert np.allclose(combine_rows(Q, rows, c), ref, rtol=0.0, atol=1e-12 * max(scale, 1e-300))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), dup=st.integers(0, 4), zeros=st.integers(0, 10))
def test_guess_and_check_products_in_place_give_the_same_fit(seed, dup, zeros):
    """Guess-and-check with its products with rows of Q taken in place (``compiled_rows``) and by
    numpy's gathers: the same sets and the same solution, to rounding (RBF kernel, duplicated
    samples, samples with v = 0, a warm start from the solution for other weights)."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual
    from spl_bench.models.svm import libsvm_fit

    n, C = 70, 2.0
    _, y, K = _svm_problem(seed, n, dup)
    rng = np.random.default_rng(seed + 3)
    Q = K * np.outer(y, y)
    v0 = rng.uniform(0.3, 1.0, n)
    v1 = np.clip(v0 + 0.1 * rng.normal(size=n), 0.0, 1.0)
    v1[rng.choice(n, zeros, replace=False)] = 0.0
    if np.unique(y[v1 > 0]).size < 2:
        return
    idx = np.flatnonzero(v0 > 0)
    sup, dual, _ = libsvm_fit(K[np.ix_(idx, idx)], y[idx], v0[idx], C, "precomputed", 0.0, 1e-10)
    a0 = np.zeros(n)
    a0[idx[sup]] = dual * y[idx[sup]]
    fits = {}
    for flag in (False, True):
        solver = WeightedSVMDual(Q, y)
        solver.compiled_rows = flag
        # from libsvm's sets for v0, then from that solution's sets for v1 (as ACS's next iteration)
        first = solver._guess_and_check(C * v0, *solver._sets_of(np.clip(a0, 0.0, C * v0), C * v0))
        start = first[0] if first is not None else a0
        fits[flag] = (first, solver._guess_and_check(C * v1, *solver._sets_of(start, C * v1)))
    for x, r in zip(fits[False], fits[True], strict=True):
        assert (x is None) == (r is None)
        if x is not None:
            assert np.allclose(r[0], x[0], rtol=0.0, atol=1e-9 * C) and abs(r[1] - x[1]) <= 1e-9
            assert np.allclose(r[2], x[2], rtol=0.0, atol=1e-9)


def test_libsvm_start_is_taken_when_guess_and_check_gives_up():
    """The case of the test above where one round of guess-and-check cannot settle: the fit
    comes from libsvm's sets (counted), not from the primal active-set method."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual

    X, y, K = _svm_problem(3, 60, 0)
    solver = WeightedSVMDual(K * np.outer(y, y), y, max_rounds=1)
    calls = []
    qp = solver._active_set_qp
    solver._active_set_qp = lambda u, a0: calls.append(1) or qp(u, a0)
    assert solver.fit(np.full(60, 2.0), np.zeros(60)) is not None
    assert solver.n_libsvm_starts == 1 and not calls


def test_svm_path_is_the_same_with_the_active_set_fit_or_libsvm():
    """The ACS steps' solver is an implementation detail: same critical points, same restarts."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    i = rng.choice(len(y), 60, replace=False)
    X, y = X[i][:, :6], np.where(y[i] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / X.std(0)
    y[rng.random(60) < 0.3] *= -1  # label noise: jump points, hence ACS warm starts
    kw = dict(model="svm", sp="linear", lam_range=(0.1, 3.0), C=1.0, gamma=0.2)
    fast = age_path(X, y, **kw)
    slow = age_path(X, y, **kw, options=EngineOptions(svm_active_set=False))
    assert fast.n_restarts >= 5, "this case is chosen to contain jumps"
    assert fast.meta["n_acs_fits"] > 100 and "n_acs_fits" not in slow.meta
    assert fast.meta["n_acs_libsvm_fallbacks"] < 0.05 * fast.meta["n_acs_fits"]
    assert fast.n_restarts == slow.n_restarts
    ev, ev0 = [(e["kind"], e["lam"]) for e in fast.events], [(e["kind"], e["lam"]) for e in slow.events]
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-7, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n1=st.integers(1, 12), n2=st.integers(0, 6), dup=st.booleans())
def test_schur_factor_solves_like_the_dense_factor(seed, n1, n2, dup):
    """The SVM Jacobian's Schur-complement factor against the dense LU / minimum-norm solve of the
    assembled J: same solution, same sign of det J; also with duplicated rows and columns in A
    (identical samples on the margin), where J is singular."""
    from spl_bench.gaga.core.factors import Factor
    from spl_bench.gaga.core.structured import SchurBlocks, SchurFactor

    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n1 + n2, 3))
    if dup and n1 >= 2:  # sample 1 of block 1 duplicates sample 0
        Xs[1] = Xs[0]
    K = np.exp(-0.5 * ((Xs[:, None, :] - Xs[None, :, :]) ** 2).sum(-1))  # RBF kernel matrix
    A, B, C0, D0 = -K[:n1, :n1], -K[:n1, n1:], K[n1:, :n1], K[n1:, n1:]
    c = rng.uniform(-0.5, 2.0, n2)
    perm = rng.permutation(n1 + n2)  # blocks interleaved in the unknowns, as in theta
    i1, i2 = perm[:n1], perm[n1:]
    J = np.empty((n1 + n2, n1 + n2))
    J[np.ix_(i1, i1)], J[np.ix_(i1, i2)] = A, B
    J[np.ix_(i2, i1)], J[np.ix_(i2, i2)] = c[:, None] * C0, np.eye(n2) + c[:, None] * D0
    rhs = J @ rng.normal(size=n1 + n2)  # consistent, also when J is singular
    f = SchurFactor(SchurBlocks(A, B, C0, D0, i1, i2), c)
    ref = Factor(J)
    x = f.solve(rhs)
    assert np.allclose(J @ x, rhs, atol=1e-8 * (1 + np.abs(rhs).max()))
    assert np.allclose(x, ref.solve(rhs), atol=1e-7 * (1 + np.abs(x).max()))
    assert f.singular == ref.singular
    assert f.least_squares == ref.least_squares
    if not ref.singular:
        assert f.sign == np.sign(np.linalg.det(J))
    # blocks built on a factorisation of A made before (the SVM system's cache of recent ones)
    g = SchurFactor(SchurBlocks(Factor(A), B, C0, D0, i1, i2), c)
    assert np.array_equal(g.solve(rhs), x) and g.sign == f.sign


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n1=st.integers(1, 8), n2=st.integers(3, 30),
       cs=st.lists(st.floats(-8.0, 2.0), min_size=6, max_size=8))
def test_schur_factor_with_one_weight_for_every_mixed_sample_solves_like_the_dense_factor(seed, n1, n2, cs):
    """The linear SP gives every mixed sample the same ``c``: from the ``UNIFORM_REDUCE_AT``-th such point the Schur
    complement ``I + c W`` is solved through ``W``'s tridiagonal reduction.  Against the dense LU of
    the assembled J at each point: same solution, same sign of det J (where J is not singular)."""
    from spl_bench.gaga.core.factors import Factor
    from spl_bench.gaga.core.structured import UNIFORM_REDUCE_AT, SchurBlocks, SchurFactor, ShiftedTridiagonal

    rng = np.random.default_rng(seed)
    Xs = rng.normal(size=(n1 + n2, 3))
    K = np.exp(-0.3 * ((Xs[:, None, :] - Xs[None, :, :]) ** 2).sum(-1))
    A, B, C0, D0 = -K[:n1, :n1], -K[:n1, n1:], K[n1:, :n1], K[n1:, n1:]
    i1, i2 = np.arange(n1), np.arange(n1, n1 + n2)
    blocks = SchurBlocks(A, B, C0, D0, i1, i2)
    kinds = []
    for cv in cs:
        c = np.full(n2, cv)
        J = np.block([[A, B], [c[:, None] * C0, np.eye(n2) + c[:, None] * D0]])
        f = SchurFactor(blocks, c)
        kinds.append(isinstance(f.S, ShiftedTridiagonal))
        ref = Factor(J)
        if ref.singular or np.linalg.cond(J) > 1e8:
            continue
        rhs = rng.normal(size=n1 + n2)
        x = f.solve(rhs)
        assert np.allclose(x, np.linalg.solve(J, rhs), atol=1e-8 * (1 + np.abs(x).max()))
        assert f.sign == np.sign(np.linalg.det(J))
    k = UNIFORM_REDUCE_AT - 1
    assert not any(kinds[:k])
    if not Factor(A).singular:
        assert any(kinds[k:])


def test_steps_overshooting_the_end_of_a_branch_are_retaken_not_taken_for_folds():
    """An SVM margin leaving M at g = 0 (linear SP): past it the path of the old sets goes on only
    if v*'s closed form is continued below ell = 0.  Clipped there (as a regularizer whose form
    needs ell > 0 is), Newton stalls past the crossing and long steps that overshoot it are
    retaken shorter; either way the critical points are those found with short steps."""
    from sklearn.datasets import load_breast_cancer

    from spl_bench.sp.linear import LinearSP

    class ClippedLinearSP(LinearSP):
        clip_mixed_loss = True

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(1)
    i = rng.choice(len(y), 80, replace=False)
    X, y = X[i][:, :6], np.where(y[i] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / X.std(0)
    y[rng.random(80) < 0.3] *= -1
    kw = dict(model="svm", lam_range=(0.1, 3.0), C=1.0, gamma=0.2)
    smooth = age_path(X, y, sp="linear", **kw)
    clipped = age_path(X, y, sp=ClippedLinearSP(), **kw)
    short = age_path(X, y, sp="linear", **kw, options=EngineOptions(max_step=0.002))
    assert smooth.meta["n_retaken_steps"] == 0 and clipped.meta["n_retaken_steps"] > 0
    ev0 = [(e["kind"], e["lam"]) for e in short.events]
    for path in (smooth, clipped):
        ev = [(e["kind"], e["lam"]) for e in path.events]
        assert [k for k, _ in ev] == [k for k, _ in ev0]
        assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-8, atol=1e-10)


def _noisy_cancer_svm(n: int, seed: int):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    i = rng.choice(len(y), n, replace=False)
    X, y = X[i][:, :6], np.where(y[i] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / X.std(0)
    y[rng.random(n) < 0.3] *= -1  # label noise: jump points, hence ACS warm starts
    return X, y


def test_svm_path_is_the_same_with_or_without_skipped_acs_iterations():
    """Skipping creeping ACS iterations (affine extrapolation) changes no critical point."""
    X, y = _noisy_cancer_svm(120, 1)
    kw = dict(model="svm", sp="linear", lam_range=(0.1, 3.0), C=1.0, gamma=0.2)
    fast = age_path(X, y, **kw)
    plain = age_path(X, y, **kw, options=EngineOptions(acs_skip=False))
    assert fast.meta["n_acs_skips"] >= 5 and fast.meta["n_acs_skipped"] > 200
    assert plain.meta["n_acs_skips"] == 0
    assert fast.meta["n_acs_fits"] < 0.5 * plain.meta["n_acs_fits"]
    ev, ev0 = [(e["kind"], e["lam"]) for e in fast.events], [(e["kind"], e["lam"]) for e in plain.events]
    assert [k for k, _ in ev] == [k for k, _ in ev0]
    assert np.allclose([t for _, t in ev], [t for _, t in ev0], rtol=1e-9, atol=1e-12)
    grid = np.linspace(0.11, 2.99, 300)
    (a, b), (a0, b0) = fast.at(grid), plain.at(grid)
    assert np.max(np.abs(a - a0)) <= 1e-8 and np.max(np.abs(b - b0)) <= 1e-8


_CYCLE_CASES = {
    "lasso": lambda: (*_diabetes(80, 5, 2), dict(model="lasso", sp="linear", alpha=0.01)),
    "logistic": lambda: (*_noisy_cancer_svm(100, 1), dict(model="logistic", sp="linear", C=1.0)),
    "svm_rbf": lambda: (*_noisy_cancer_svm(100, 0), dict(model="svm", sp="linear", C=1.0, gamma=0.2)),
    "svm_linear": lambda: (*_noisy_cancer_svm(80, 0), dict(model="svm", sp="linear", C=1.0, kernel="linear")),
}


@pytest.mark.parametrize("case", list(_CYCLE_CASES))
def test_paths_are_the_same_whether_cycling_trial_polishes_give_up_early_or_not(case):
    """Giving up a trial polish once its set re-assignment cycles changes no critical point and
    no value of the path (the given-up trials would have failed, next test)."""
    X, y, kw = _CYCLE_CASES[case]()
    early = age_path(X, y, lam_range=(0.1, 5.0), **kw)
    full = age_path(X, y, lam_range=(0.1, 5.0), **kw, options=EngineOptions(polish_cycle_exit=False))
    assert early.meta["n_polish_cycles"] > 0 and full.meta["n_polish_cycles"] == 0
    assert [(e["kind"], e["moves"]) for e in early.events] == [(e["kind"], e["moves"]) for e in full.events]
    assert np.allclose([e["lam"] for e in early.events], [e["lam"] for e in full.events], rtol=1e-10, atol=0)
    assert early.lambdas[0] == full.lambdas[0]  # the same start (a later one where lam_min is degenerate)
    grid = np.linspace(full.lambdas[0], 5.0, 400)
    (a, b), (a0, b0) = early.at(grid), full.at(grid)
    assert np.max(np.abs(a - a0)) <= 1e-9 * (1 + np.abs(a0).max())
    assert np.max(np.abs(b - b0)) <= 1e-9 * (1 + np.abs(b0).max())


@pytest.mark.parametrize("case", ["lasso", "logistic", "svm_rbf", "svm_linear"])
def test_a_trial_polish_given_up_on_a_cycle_would_have_failed_all_its_rounds(monkeypatch, case):
    """Every trial given up early, replayed from the same state with all its rounds, fails too."""
    from spl_bench.gaga.core import warm

    orig = warm.WarmStarts.polish
    replays = []

    def checked(self, lam, max_rounds=100, trial=False):
        st = self.state
        snap, before = st.sys.snapshot(), st.n_polish_cycles
        res = orig(self, lam, max_rounds, trial)
        if st.n_polish_cycles > before:
            after = st.sys.snapshot()
            st.sys.restore(snap)
            st.o.polish_cycle_exit = False
            replays.append(orig(self, lam, max_rounds, trial))
            st.o.polish_cycle_exit = True
            st.sys.restore(after)
        return res

    monkeypatch.setattr(warm.WarmStarts, "polish", checked)
    X, y, kw = _CYCLE_CASES[case]()
    age_path(X, y, lam_range=(0.1, 5.0), **kw)
    assert len(replays) >= 3
    assert all(r == np.inf for r in replays)


def test_skipped_acs_iterations_land_on_the_plain_acs_iterate(monkeypatch):
    """Each skip of ``j`` ACS iterations lands where ``j`` plain ACS steps (on a fresh system,
    whose fits guess their sets from scratch) go, to 1e-3 of the distance travelled."""
    from spl_bench.gaga.core import warm
    from spl_bench.gaga.systems import make_system

    orig = warm.WarmStarts.acs_skip_ahead
    errors = []

    def checked(self, lam, p, hist):
        st = self.state
        before = st.n_acs_skipped
        out = orig(self, lam, p, hist)
        j = st.n_acs_skipped - before
        if out is not None and 0 < j <= 400:
            fresh = make_system(st.model, st.sp, st.X, st.y)
            q = p
            v = st.sp.v_star(fresh.losses(q), lam)
            for _ in range(j):
                q, v = warm.acs_step(fresh, lam, q, v)
            moved = float(np.abs(q.dual_coef - p.dual_coef).max())
            errors.append((float(np.abs(out[0].dual_coef - q.dual_coef).max()), moved))
        return out

    monkeypatch.setattr(warm.WarmStarts, "acs_skip_ahead", checked)
    X, y = _noisy_cancer_svm(60, 0)
    age_path(X, y, model="svm", sp="linear", lam_range=(0.1, 3.0), C=1.0, gamma=0.2)
    assert len(errors) >= 5
    for err, moved in errors:
        assert moved > 0 and err <= 1e-3 * moved + 1e-10


def _kkt_problem(seed: int, n: int = 24, dup: bool = False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = rng.choice([-1.0, 1.0], n)
    if dup:  # samples 1 and 2 duplicate sample 0
        X[1:3], y[1:3] = X[0], y[0]
    Q = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) * np.outer(y, y)
    return rng, Q, y


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_out=st.integers(0, 5), n_in=st.integers(0, 5), s=st.sampled_from([-1.0, 1.0]))
def test_kkt_update_solves_like_a_new_factorisation(seed, n_out, n_in, s):
    """A margin-block factor updated by bordering (indices dropped and added) against the dense
    solve of the new matrix: same solutions (vector and matrix right-hand sides), same sign of
    the determinant."""
    from spl_bench.gaga.core.factors import Factor
    from spl_bench.gaga.svm.kkt import KKTUpdate, kkt_matrix

    rng, Q, y = _kkt_problem(seed)
    z0 = np.sort(rng.choice(Q.shape[0], 10, replace=False))
    kept = rng.choice(z0, z0.size - n_out, replace=False)
    z = np.union1d(kept, rng.choice(Q.shape[0], n_in, replace=False))
    upd = KKTUpdate.make(Factor(kkt_matrix(Q, y, z0, s)), z0, z, Q, y, s)
    M = kkt_matrix(Q, y, z, s)
    assert upd is not None and upd.n == M.shape[0]
    for rhs in (rng.normal(size=M.shape[0]), rng.normal(size=(M.shape[0], 3))):
        np.testing.assert_allclose(upd.solve(rhs), np.linalg.solve(M, rhs), rtol=1e-8, atol=1e-9)
    assert upd.sign == np.linalg.slogdet(M)[0]
    np.testing.assert_array_equal(upd.J, M)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), s=st.sampled_from([-1.0, 1.0]), with_root=st.booleans())
def test_kkt_factor_with_duplicated_samples_gives_the_minimum_norm_solution(seed, s, with_root):
    """Duplicated samples on the margin (equal rows and columns): ``kkt_factor`` factorises their
    representatives (new LU or an update of a root) and splits each group's value equally, the
    pseudo-inverse solution; the sign is that of the merged system."""
    from spl_bench.gaga.core.factors import Factor, groups_hint
    from spl_bench.gaga.svm.inner import canonical_duplicates
    from spl_bench.gaga.svm.kkt import kkt_factor, kkt_matrix

    rng, Q, y = _kkt_problem(seed, dup=True)
    labels = np.arange(Q.shape[0])
    labels[1:3] = 0
    canon = canonical_duplicates(labels)
    assert canon[2] == 0 and canon[5] == 5
    z = np.union1d([1, 2], rng.choice(np.arange(3, Q.shape[0]), 8, replace=False))  # twins without 0
    root = None
    if with_root:
        z0 = np.union1d([0], rng.choice(np.arange(3, Q.shape[0]), 8, replace=False))
        _, root = kkt_factor(Q, y, z0, s, canon, None)
    fac, new_root = kkt_factor(Q, y, z, s, canon, root)
    M = kkt_matrix(Q, y, z, s)
    ref = Factor(M, hint=groups_hint(np.append(labels[z], -1)))
    assert fac.singular and new_root is not None
    rhs = M @ rng.normal(size=M.shape[0])
    np.testing.assert_allclose(fac.solve(rhs), np.linalg.pinv(M) @ rhs, rtol=1e-7, atol=1e-9)
    assert fac.sign == ref.sign != 0.0


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_out=st.integers(0, 4), n_in=st.integers(0, 4), n_shift=st.integers(0, 4))
def test_kkt_update_with_diagonal_shifts_and_reordered_indices_solves_like_a_new_factorisation(
        seed, n_out, n_in, n_shift):
    """``kkt_matrix(..., shift=h)`` updated from another index set and shift: indices dropped,
    added, kept with a changed shift, and the kept ones in another order (the SVM's free set
    is E_Z then M: an index moving between them changes place).  Against the dense solve: same
    solutions, same sign of the determinant."""
    from spl_bench.gaga.core.factors import Factor
    from spl_bench.gaga.svm.kkt import KKTUpdate, kkt_matrix

    rng, Q, y = _kkt_problem(seed)
    z0 = rng.choice(Q.shape[0], 10, replace=False)
    h0 = np.where(rng.random(10) < 0.5, 0.0, rng.uniform(0.5, 2.0, 10))
    keep = rng.choice(10, 10 - n_out, replace=False)
    out_of_z0 = np.setdiff1d(np.arange(Q.shape[0]), z0)
    z = np.concatenate([z0[keep], rng.choice(out_of_z0, n_in, replace=False)])
    h = np.concatenate([h0[keep], rng.uniform(0.5, 2.0, n_in)])
    changed = rng.choice(keep.size, min(n_shift, keep.size), replace=False)
    h[changed] = np.where(h[changed] == 0.0, 1.5, 0.0)
    order = rng.permutation(z.size)
    z, h = z[order], h[order]
    upd = KKTUpdate.make(Factor(kkt_matrix(Q, y, z0, 1.0, shift=h0)), z0, z, Q, y, 1.0, shift0=h0, shift=h)
    M = kkt_matrix(Q, y, z, 1.0, shift=h)
    assert upd is not None and upd.n == M.shape[0]
    for rhs in (rng.normal(size=M.shape[0]), rng.normal(size=(M.shape[0], 3))):
        np.testing.assert_allclose(upd.solve(rhs), np.linalg.solve(M, rhs), rtol=1e-8, atol=1e-9)
    assert upd.sign == np.linalg.slogdet(M)[0]
    np.testing.assert_array_equal(upd.J, M)


def _svm_schur_system(monkeypatch, seed: int, dup: bool = False):
    """An RBF SVM system (linear SP) on 120 breast-cancer rows, the Schur route (and its updates)
    for any margin set and M; ``dup``: rows 1-3 repeat row 0 and row 11 repeats row 10."""
    from sklearn.datasets import load_breast_cancer

    import spl_bench.gaga.svm.svm_system as svm_system
    from spl_bench.gaga.systems import make_system

    monkeypatch.setattr(svm_system, "SCHUR_MIN_Z", 3)
    monkeypatch.setattr(svm_system, "SCHUR_UPDATE_MIN_M", 3)
    rng = np.random.default_rng(seed)
    X, y = load_breast_cancer(return_X_y=True)
    i = rng.choice(len(y), 120, replace=False)
    if dup:
        i[1:4], i[11] = i[0], i[10]
    X, y = X[i][:, :8], 2.0 * y[i] - 1.0
    X = (X - X.mean(0)) / X.std(0)
    mdl = get_model("svm", C=1.0, kernel="rbf")
    return rng, make_system(mdl, get_sp("linear"), X, y), svm_system


def _set_codes(system, code):
    system.code = code.astype(np.int8)
    system._invalidate()


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.lists(st.sampled_from(
    ["Z>M", "M>Z", "M>D", "D>M", "N>Z", "Z>N"]), min_size=1, max_size=6), dup=st.booleans())
def test_svm_jacobian_of_new_sets_through_the_latest_reduced_blocks_solves_like_the_dense_one(seed, moves, dup):
    """A set configuration a few moves from the one whose Schur blocks were last reduced is
    solved through those blocks (``SVMSystem._updated_factor``: bordering of the symmetric form
    of ``J``).  Against the dense ``J`` of the new sets: same solution, same sign of det J; with
    duplicated samples on the margin (J singular) the minimum-norm solution (``lstsq``) and the
    merged system's sign.  Past ``SCHUR_UPDATE_MAX`` changes the configuration gets blocks of
    its own."""
    import pytest as _pytest

    from spl_bench.gaga.core.factors import Factor
    from spl_bench.gaga.core.structured import RowScaled, SchurFactor

    with _pytest.MonkeyPatch.context() as mp:
        rng, system, svm_system = _svm_schur_system(mp, seed, dup)
        n = system.n
        code = rng.choice([svm_system.SVM_N, svm_system.SVM_Z, svm_system.SVM_PE, svm_system.SVM_PM,
                           svm_system.SVM_PD], n, p=[0.3, 0.15, 0.1, 0.3, 0.15])
        if dup:  # twins share g, v and so their set: both groups on the margin
            code[[0, 1, 2, 3, 10, 11]] = svm_system.SVM_Z
        _set_codes(system, code)
        system.a = rng.uniform(0.0, system.C, n)
        system.b = 0.1
        theta = system.theta()
        for lam in (0.7, 0.8):  # the reduction is made at the second point of a configuration
            f, _ = system.factor(theta, lam)
        assert isinstance(f, SchurFactor) and f.b.reduced
        name = {"N": svm_system.SVM_N, "Z": svm_system.SVM_Z, "M": svm_system.SVM_PM, "D": svm_system.SVM_PD}
        for mv in moves:
            src, dst = mv.split(">")
            idx = np.flatnonzero(code == name[src])
            idx = idx[idx > 11]  # the twins stay on the margin
            if idx.size:
                code[rng.choice(idx)] = name[dst]
        _set_codes(system, code)
        theta = system.theta()
        lam = 0.9
        f, Jl = system.factor(theta, lam)
        J, Jl_ref = system.jacobians(theta, lam)
        np.testing.assert_allclose(Jl, Jl_ref, rtol=0, atol=0)
        assert isinstance(f, RowScaled) != dup and f.singular == dup
        for rhs in (J @ rng.normal(size=J.shape[0]), Jl_ref):
            ref = np.linalg.lstsq(J, rhs, rcond=1e-12)[0]
            np.testing.assert_allclose(f.solve(rhs), ref, rtol=1e-8, atol=1e-9 * np.abs(ref).max())
        assert f.sign == (Factor(J).sign if dup else np.linalg.slogdet(J)[0])
        assert system.n_schur_updates >= 1
        # too many changes: the configuration's own blocks
        mp.setattr(svm_system, "SCHUR_UPDATE_MAX", 0)
        code[np.flatnonzero(code == svm_system.SVM_PD)[:1]] = svm_system.SVM_PM
        _set_codes(system, code)
        assert isinstance(system.factor(system.theta(), lam)[0], SchurFactor)


@pytest.mark.parametrize("dup", [False, True])
def test_svm_path_through_reduced_blocks_equals_the_path_with_blocks_per_configuration(monkeypatch, dup):
    """The whole RBF-SVM path (linear SP, jumps included) with Jacobians of new set configurations
    solved through the latest reduced Schur blocks, against blocks made for every configuration:
    the same event log (kinds, moves, ages to 1e-9) and the same path on a grid; also with
    duplicated rows (merged on the margin)."""
    rng, system, svm_system = _svm_schur_system(monkeypatch, 3, dup=dup)
    X, y = system.X, system.y
    b = age_path(X, y, model="svm", sp="linear", lam_range=(0.2, 3.0), C=1.0, kernel="rbf")
    monkeypatch.setattr(svm_system, "SCHUR_UPDATE_MAX", 0)
    a = age_path(X, y, model="svm", sp="linear", lam_range=(0.2, 3.0), C=1.0, kernel="rbf")
    assert b.meta["n_schur_updates"] > 0 and a.meta["n_schur_updates"] == 0
    assert len(a.events) >= 20 and len(a.events) == len(b.events)
    for ea, eb in zip(a.events, b.events, strict=True):
        assert ea["kind"] == eb["kind"] and str(ea["moves"]) == str(eb["moves"])
        assert abs(ea["lam"] - eb["lam"]) <= 1e-9 * max(1.0, ea["lam"])
    grid = np.linspace(0.2, 3.0, 60)
    for vb, va in zip(b.at(grid), a.at(grid), strict=True):
        np.testing.assert_allclose(vb, va, atol=1e-8)
