"""ACS converges to a partial optimum: w optimal for v = v*(ell(w), lam), KKT <= 1e-6."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.errors import ConfigError
from spl_bench.methods.acs import ACS, acs_solve, lambda_grid
from spl_bench.models import get_model
from spl_bench.sp import get_sp

CASES = [
    ("lasso", {"alpha": 0.01}, "linear", {}),
    ("lasso", {"alpha": 0.01}, "mixture", {"gamma": 0.5}),
    ("logistic", {"C": 1.0}, "linear", {}),
    ("logistic", {"C": 1.0}, "mixture", {"gamma": 0.5}),
    ("svm", {"C": 1.0, "gamma": 0.1}, "linear", {}),
    ("svm", {"C": 1.0, "kernel": "linear"}, "mixture", {"gamma": 0.5}),
]


@pytest.mark.parametrize(("model", "mp", "sp", "spp"), CASES)
def test_acs_reaches_partial_optimum(model, mp, sp, spp, diabetes, cancer_small):
    X, y = diabetes if model == "lasso" else cancer_small
    est = ACS(
        model=model, model_params=mp, sp=sp, sp_params=spp, lam_min=0.2, lam_max=3.0, lam_step=0.7,
        max_iter=60 if model == "svm" else 1000,
    )  # fmt: skip
    est.fit(X, y)
    if model == "svm":
        # ACS on the hinge loss can cycle (the v-step and w-step chase each other);
        # it must then say so, and every age it reports converged must be a partial optimum.
        assert est.converged_.any()
        assert est.run_info()["acs_not_converged"] == int((~est.converged_).sum())
    else:
        assert est.converged_.all()
    m, reg = get_model(model, **mp), get_sp(sp, **spp)
    tol = 1e-5 if model == "svm" else 1e-6
    for lam, params, ok in zip(est.lambdas_, est.candidate_models_, est.converged_, strict=True):
        if not ok:
            continue
        v = reg.v_star(m.losses(params, X, y), lam)  # v-step optimality: v is v*(ell(w))
        assert m.kkt_violation(params, X, y, v) <= tol  # w-step optimality for that v
    assert est.predict_candidates(X).shape == (len(est.lambdas_), len(y))


def test_partial_optimum_is_a_fixed_point(diabetes):
    X, y = diabetes
    m, reg = get_model("lasso", alpha=0.01), get_sp("linear")
    p0 = m.fit_weighted(X, y, np.ones(len(y)))
    p, v, it, ok = acs_solve(m, reg, X, y, 1.0, p0)
    assert ok and it > 1
    # one more ACS sweep from the solution changes nothing
    p2 = m.fit_weighted(X, y, v, warm=p)
    np.testing.assert_allclose(p2.coef, p.coef, atol=1e-8)
    # and the SPL objective did not increase along the way
    obj = lambda q, vv: m.objective(q, X, y, vv) + reg.penalty(vv, 1.0).sum()  # noqa: E731
    v0 = reg.v_star(m.losses(p0, X, y), 1.0)
    assert obj(p, v) <= obj(p0, v0) + 1e-9


def test_grid_and_errors():
    np.testing.assert_allclose(lambda_grid(0.1, 20.0, 0.5)[[0, -1]], [0.1, 19.6])
    assert len(lambda_grid(0.1, 20.0, 0.5)) == 40
    with pytest.raises(ConfigError, match="smaller than lam_max"):
        lambda_grid(5.0, 1.0, 0.5)
    with pytest.raises(ConfigError, match="lam_step"):
        lambda_grid(0.1, 1.0, 0.0)
    with pytest.raises(ConfigError, match="lam_grid"):
        ACS(lam_grid=[1.0, 0.5]).fit(np.eye(5), np.arange(5.0))


# ------------------------------------------------------------------ inner solvers (issue 19)
def _svm_problem(seed: int, n: int, d: int, n_dup: int) -> tuple[np.ndarray, np.ndarray]:
    """Two noisy Gaussian classes, ``n_dup`` rows duplicated (identical x and y)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    X = rng.normal(size=(n, d)) + 0.8 * y[:, None]
    y[rng.random(n) < 0.2] *= -1  # label noise: hard samples for the SP
    if n_dup:
        src = rng.choice(n, n_dup, replace=False)
        X, y = np.vstack([X, X[src]]), np.append(y, y[src])
    return X, y


def _both(model, mp, X, y, **kw):
    out = {}
    for name in ("model", "exact"):
        out[name] = ACS(model=model, model_params=mp, inner_solver=name, **kw).fit(X, y)
    return out["model"], out["exact"]


# derandomize: the same examples on every run.  With random ones a run of the suite met a linear-kernel
# example on which libsvm at tol 1e-10 (no iteration limit) ran for more than 10 minutes.
@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), kernel=st.sampled_from(["rbf", "linear"]), n_dup=st.integers(0, 6))
def test_svm_inner_solvers_reach_the_same_partial_optima(seed, kernel, n_dup):
    """libsvm (solved to 1e-10 here) and the exact warm-started dual give the same ACS result at
    every age where both converged: same v, same decision values, each a partial optimum (KKT of
    the v*-weighted dual).  An age where one ran out of iterations ends at an iterate that is not
    a partial optimum (seed 299, rbf, 3 duplicates: plain ACS creeps for 200 iterations at the
    third age, the exact solver's affine skip reaches the partial optimum in 42), so it is not
    compared."""
    X, y = _svm_problem(seed, 40, 3, n_dup)
    mp = {"C": 1.0, "kernel": kernel, "gamma": 0.3, "tol": 1e-10}
    ref, ex = _both("svm", mp, X, y, lam_min=0.3, lam_max=3.0, lam_step=0.9, max_iter=200)
    assert ex.inner_solver_used_ == "exact" and ex.run_info()["inner_fits"] > 0
    assert ex.run_info()["inner_libsvm_fits"] <= 0.1 * ex.run_info()["inner_fits"] + 1
    m, reg = ref.model_, get_sp("linear")
    assert (ref.converged_ & ex.converged_).any()
    for k, lam in enumerate(ex.lambdas_):
        p, q = ref.candidate_models_[k], ex.candidate_models_[k]
        for est, par in ((ref, p), (ex, q)):
            if est.converged_[k]:
                v = reg.v_star(m.losses(par, X, y), lam)
                assert m.kkt_violation(par, X, y, v) <= 1e-6
        if not (ref.converged_[k] and ex.converged_[k]):
            continue
        # v = 1 - ell / lam carries libsvm's error in the margins (1e-6 here, with a linear kernel's
        # degenerate dual: seed 10000) times 1 / lam: the same bound as the decision values
        np.testing.assert_allclose(ex.v_path_[k], ref.v_path_[k], atol=1e-5)
        np.testing.assert_allclose(m.decision_function(q, X), m.decision_function(p, X), atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_svm_exact_solves_guess_and_check_give_ups_from_libsvms_sets(seed, monkeypatch):
    """With an RBF kernel and guess-and-check cut to one round (so most warm fits give up, as on
    pendigits), ``exact`` solves each give-up at the sets of libsvm's solution: ACS converges at
    every age to a partial optimum (KKT of the v*-weighted dual to 1e-7, the model's own measure),
    with libsvm's point used for the first fit only.  ``hybrid`` takes libsvm's point at each
    give-up; where it converged too, its v and decision values agree with ``exact``'s to libsvm's
    tolerance."""
    from spl_bench.methods._acs_solvers import _ACSDual

    init = _ACSDual.__init__

    def one_round(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.max_rounds = 1

    monkeypatch.setattr(_ACSDual, "__init__", one_round)
    X, y = _svm_problem(seed, 60, 3, 2)
    mp = {"C": 1.0, "kernel": "rbf", "gamma": 0.3}
    kw = {"lam_min": 0.3, "lam_max": 3.0, "lam_step": 0.9, "max_iter": 300}
    ex = ACS(model="svm", model_params=mp, inner_solver="exact", **kw).fit(X, y)
    hy = ACS(model="svm", model_params=mp, inner_solver="hybrid", **kw).fit(X, y)
    info_ex, info_hy = ex.run_info(), hy.run_info()
    assert ex.inner_solver_used_ == "exact" and hy.inner_solver_used_ == "hybrid"
    assert info_ex["inner_libsvm_starts"] > 0 and info_ex["inner_libsvm_fits"] == 1
    assert info_hy["inner_libsvm_starts"] == 0 and info_hy["inner_libsvm_fits"] > 1
    m, reg = ex.model_, get_sp("linear")
    assert ex.converged_.all()
    for k, lam in enumerate(ex.lambdas_):
        p = ex.candidate_models_[k]
        v = reg.v_star(m.losses(p, X, y), lam)
        assert m.kkt_violation(p, X, y, v) <= 1e-7
        if hy.converged_[k]:
            q = hy.candidate_models_[k]
            np.testing.assert_allclose(hy.v_path_[k], ex.v_path_[k], atol=1e-5)
            np.testing.assert_allclose(m.decision_function(q, X), m.decision_function(p, X), atol=1e-5)


def test_svm_exact_kkt_from_margins_is_the_models_measure():
    from spl_bench.methods._acs_solvers import svm_kkt_from_margins
    from spl_bench.models import Params

    X, y = _svm_problem(3, 30, 3, 3)
    m = get_model("svm", C=2.0, gamma=0.5)
    rng = np.random.default_rng(1)
    for _ in range(20):
        v = np.clip(rng.uniform(-0.3, 1.2, len(y)), 0.0, 1.0)
        a = np.clip(rng.uniform(-0.2, 2.4, len(y)), 0.0, None) * (rng.random(len(y)) < 0.7)
        top = rng.random(len(y)) < 0.3
        a[top] = 2.0 * v[top]  # at the upper bound C v
        p = Params(dual_coef=a, intercept=float(rng.normal()), X_fit=X, y_fit=y, extra={"gamma": 0.5})
        g = 1.0 - y * m.decision_function(p, X)
        assert svm_kkt_from_margins(m, a, g, y, v) == pytest.approx(m.kkt_violation(p, X, y, v), abs=1e-12)


@pytest.mark.parametrize("dup_cols", [False, True])
def test_lasso_inner_solvers_reach_the_same_partial_optima(diabetes, dup_cols):
    """scikit-learn's coordinate descent and the exact active-set lasso: the same v, the same
    selected features and fits at every age; duplicated columns (up to sign) merged."""
    X, y = diabetes
    if dup_cols:
        X = np.column_stack([X, X[:, 2], -X[:, 8]])
    ref, ex = _both("lasso", {"alpha": 0.01}, X, y, lam_min=0.2, lam_max=3.0, lam_step=0.4)
    info = ex.run_info()
    assert info["inner_solver"] == "exact" and info["inner_fallbacks"] == 0
    assert info["duplicate_columns"] == (2 if dup_cols else 0)
    assert ref.converged_.all() and ex.converged_.all()
    m = ref.model_
    for k in range(len(ex.lambdas_)):
        p, q = ref.candidate_models_[k], ex.candidate_models_[k]
        np.testing.assert_allclose(ex.v_path_[k], ref.v_path_[k], atol=1e-6)
        np.testing.assert_allclose(X @ q.coef, X @ p.coef, atol=1e-6)
        sel_p, sel_q = np.abs(p.coef[:10]) > 1e-9, np.abs(q.coef[:10]) > 1e-9
        np.testing.assert_array_equal(sel_p, sel_q)
        assert m.kkt_violation(q, X, y, ex.v_path_[k]) <= 1e-6


def test_logistic_exact_keeps_the_models_solver_for_few_features(cancer_small):
    X, y = cancer_small
    ref, ex = _both("logistic", {"C": 1.0}, X, y, lam_grid=[0.8, 2.0])
    assert ex.inner_solver_used_ == "model" and ex.run_info()["inner_solver"] == "model"
    np.testing.assert_array_equal(ex.v_path_, ref.v_path_)


@pytest.mark.parametrize("sp", ["linear", "mixture"])
def test_logistic_inner_solvers_reach_the_same_partial_optima(cancer_small, sp, monkeypatch):
    """Many features (here: the threshold lowered to the 30 of breast cancer): the exact solver's
    Newton fits with conjugate-gradient solves against scikit-learn's Newton-Cholesky, the same v and
    fits at every age, each a partial optimum."""
    from spl_bench.gaga.glm.glm_system import GLMDesign

    monkeypatch.setattr(GLMDesign, "refine_min_dim", 1)
    X, y = cancer_small
    ref, ex = _both("logistic", {"C": 1.0}, X, y, sp=sp, lam_grid=[0.6, 1.0, 2.0, 4.0])
    info = ex.run_info()
    assert info["inner_solver"] == "exact" and info["inner_fits"] > 0 and info["inner_fallbacks"] == 0
    assert ref.converged_.all() and ex.converged_.all()
    m, reg = ref.model_, get_sp(sp)
    for k, lam in enumerate(ex.lambdas_):
        p, q = ref.candidate_models_[k], ex.candidate_models_[k]
        np.testing.assert_allclose(ex.v_path_[k], ref.v_path_[k], atol=1e-7)
        np.testing.assert_allclose(m.decision_function(q, X), m.decision_function(p, X), atol=1e-7)
        assert m.kkt_violation(q, X, y, reg.v_star(m.losses(q, X, y), lam)) <= 1e-6


def test_inner_solver_option_from_config_and_errors():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from spl_bench.paths import config_dir
    from spl_bench.runner.run_config import estimator_factory

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=["method=acs", "model=svm"])
        assert cfg.method.inner_solver == "exact"  # the default
        assert estimator_factory(cfg)().inner_solver == "exact"
        cfg = compose("config", overrides=["method=acs", "model=svm", "method.inner_solver=model"])
        assert OmegaConf.select(cfg, "method.inner_solver") == "model"
        assert estimator_factory(cfg)().inner_solver == "model"
        cfg = compose("config", overrides=["method=acs", "model=svm", "method.inner_solver=hybrid"])
        assert estimator_factory(cfg)().inner_solver == "hybrid"
    assert ACS().inner_solver == "exact"
    with pytest.raises(ConfigError, match="inner_solver"):
        ACS(inner_solver="fast").fit(np.eye(5), np.arange(5.0))


def test_svm_acs_with_skipped_affine_iterations_reaches_the_same_partial_optima():
    """Skipping the iterations where ACS creeps along one affine piece (exact SVM fits, linear
    SP) leaves every age's result as plain ACS's: same duals and v to 1e-6, fewer fits."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(1)
    i = rng.choice(len(y), 120, replace=False)
    X, y = X[i][:, :6], np.where(y[i] > 0, 1.0, -1.0)
    X = (X - X.mean(0)) / X.std(0)
    y[rng.random(120) < 0.3] *= -1  # label noise: ACS creeps near the SP thresholds
    kw = dict(model="svm", model_params={"C": 1.0, "gamma": 0.2}, sp="linear", lam_min=0.1, lam_max=5.0,
              lam_step=0.1)
    fast, plain = ACS(**kw).fit(X, y), ACS(**kw, acs_skip=False).fit(X, y)
    assert fast.run_info()["acs_skips"] >= 5 and plain.run_info()["acs_skips"] == 0
    assert fast.n_iter_.sum() < 0.9 * plain.n_iter_.sum()
    assert fast.converged_.all() and plain.converged_.all()
    for p, q in zip(fast.candidate_models_, plain.candidate_models_, strict=True):
        np.testing.assert_allclose(p.dual_coef, q.dual_coef, atol=1e-6)
    np.testing.assert_allclose(fast.v_path_, plain.v_path_, atol=1e-6)
