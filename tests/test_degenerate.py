"""Degenerate partial optima (issue 59): a path or an ACS run parked on a single-class point.

With the logistic model and a small ``lam_min``, ACS from the v = 1 fit can select samples of one
class only; the v-weighted fit then has no finite minimiser (``b`` is not penalised), the model's
solver stops at ``|b| = 50`` with ``w = 0``, and every KKT check passes.  GAGA now starts at the
first age where ACS from the v = 1 fit is not degenerate, and ACS drops degenerate ages from its
candidates.  Each claim is checked with a plain ACS loop written here (the model's own fits and
``v*``), independently of the engine's warm starts.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_wine

from spl_bench.gaga import EngineOptions, age_path
from spl_bench.methods.acs import ACS
from spl_bench.methods.gaga import GAGA
from spl_bench.models import Params, get_model
from spl_bench.runner.cells import compose_cell, table_cells
from spl_bench.runner.run_config import noise_config, plain, protocol_config
from spl_bench.sp import get_sp


def _wine() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's wine, standardised, class 0 against the rest, 20 % of the labels flipped."""
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(y == 0, 1.0, -1.0)
    y[np.random.default_rng(0).random(len(y)) < 0.2] *= -1
    return X, y


def _plain_acs(model, sp, X, y, lam: float, iters: int = 3000) -> tuple[Params, np.ndarray]:
    """ACS (GAGA Algorithm 1) at ``lam`` from the v = 1 fit, the model's own solver at every step."""
    p = model.fit_weighted(X, y, np.ones(len(y)))
    v = sp.v_star(model.losses(p, X, y), lam)
    for _ in range(iters):
        p = model.fit_weighted(X, y, v, warm=p)
        v_new = sp.v_star(model.losses(p, X, y), lam)
        if np.max(np.abs(v_new - v)) <= 1e-10:
            break
        v = v_new
    return p, v_new


def _quiet_path(X, y, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = age_path(X, y, model="logistic", sp="linear", lam_range=(0.1, 20.0), **kw)
    return path, [str(w.message) for w in caught]


@given(labels=st.lists(st.sampled_from([-1.0, 1.0]), min_size=2, max_size=30),
       weights=st.lists(st.floats(0.0, 1.0), min_size=30, max_size=30))
@settings(max_examples=60, deadline=None)
def test_degenerate_selection_is_fewer_than_two_classes_selected(labels, weights):
    y = np.array(labels)
    v = np.array(weights[: len(y)])
    picked = set(y[v > 0].tolist())
    assert get_model("logistic").degenerate_selection(y, v) == (len(picked) < 2)
    assert get_model("svm").degenerate_selection(y, v) == (len(picked) < 2)
    # regression: degenerate only when nothing is selected
    assert get_model("lasso").degenerate_selection(y, v) == (not np.any(v > 0))


def test_wine_path_from_small_age_starts_where_both_classes_are_selected():
    X, y = _wine()
    model, sp = get_model("logistic", C=1.0), get_sp("linear")
    # independent: at lam_min, ACS from the v = 1 fit ends with a single class selected
    p_min, v_min = _plain_acs(model, sp, X, y, 0.1)
    assert np.unique(y[v_min > 0]).size == 1
    assert np.allclose(p_min.coef, 0.0) and abs(p_min.intercept) == 50.0
    path, said = _quiet_path(X, y, C=1.0)
    start = path.meta["start_lam"]
    assert 0.1 < start < 20.0 and path.lambdas[0] == start
    assert any("the path starts at lam=" in s for s in said)
    counts = path.critical_counts()
    assert counts["turning"] + counts["jump"] > 0
    # the start is a two-class partial optimum: v* selects both classes, KKT of its weighted problem
    w0 = Params(coef=path.coef[0], intercept=float(path.intercept[0]))
    v0 = sp.v_star(model.losses(w0, X, y), start)
    assert np.unique(y[v0 > 0]).size == 2
    assert model.kkt_violation(w0, X, y, v0) < 1e-6
    # and the plain ACS loop at that age agrees that a two-class partial optimum is reached there
    _, v_start = _plain_acs(model, sp, X, y, start)
    assert np.unique(y[v_start > 0]).size == 2
    # both classes predicted at lam_max, as the plain model does
    f_end = X @ path.coef[-1] + path.intercept[-1]
    f_plain = X @ model.fit_weighted(X, y, np.ones(len(y))).coef
    assert (f_end > 0).any() and (f_end < 0).any() and (f_plain > 0).any()
    assert path.meta["n_lstsq"] < 0.1 * path.meta["n_rhs"]


def test_wine_path_keeps_the_degenerate_start_on_request_and_warns_about_lstsq():
    X, y = _wine()
    path, said = _quiet_path(X, y, C=1.0, options=EngineOptions(degenerate_start="lam_min"))
    assert path.meta["start_lam"] == 0.1
    assert path.critical_counts() == {"turning": 0, "jump": 0}
    assert np.all(np.abs(path.intercept) == 50.0)
    assert path.meta["n_lstsq"] == path.meta["n_rhs"] > 50
    assert any("solved by least squares" in s for s in said)


def test_acs_drops_degenerate_ages_and_gaga_reports_its_start():
    X, y = _wine()
    kw = dict(model="logistic", model_params={"C": 1.0}, sp="linear", lam_min=0.1, lam_max=5.0)
    with pytest.warns(RuntimeWarning, match="ages end with a single class selected"):
        acs = ACS(lam_step=0.5, **kw).fit(X, y)
    info = acs.run_info()
    assert info["n_degenerate_ages"] >= 1
    assert len(acs.candidate_params_) == len(acs.lambdas_) == len(acs.ages()) - info["n_degenerate_ages"]
    for p in acs.candidate_models_:  # every candidate selects both classes (independent v*)
        v = get_sp("linear").v_star(get_model("logistic", C=1.0).losses(p, X, y), 1e9)
        assert np.unique(y[v > 0]).size == 2
        assert abs(p.intercept) < 50.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        kept = ACS(lam_step=0.5, drop_degenerate=False, **kw).fit(X, y)
    assert len(kept.candidate_params_) == len(kept.lambdas_)
    assert np.all(kept.predict_candidates(X)[0] == kept.predict_candidates(X)[0][0])  # a constant predictor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = GAGA(n_grid=20, **kw).fit(X, y)
    gi = g.run_info()
    assert gi["start_lam"] > 0.1 and gi["n_degenerate_acs"] >= 1
    assert min(c["lam"] for c in g.candidate_params_) >= gi["start_lam"]


def test_magic_telescope_seed_path_has_critical_points_and_two_classes(data_dir):
    """400 random training rows of Table 5 MagicTelescope run 0 (logistic, C 0.5, linear SP, 30 % flips)."""
    from spl_bench.data.loaders import load_dataset
    from spl_bench.protocol.run import prepare_run

    cell = next(c for c in table_cells("5", ["gaga"], ["magic_telescope"]))
    cfg = compose_cell(cell)
    ds = load_dataset(plain(cfg.data))
    prep = prepare_run(ds, protocol_config(cfg), noise_config(cfg, ds.task), 0)
    idx = np.random.default_rng(0).permutation(len(prep.y_fit))[:400]
    X, y = prep.X_fit[idx], prep.y_fit[idx]
    model, sp = get_model("logistic", C=0.5), get_sp("linear")
    _, v_min = _plain_acs(model, sp, X, y, 0.1)
    assert np.unique(y[v_min > 0]).size == 1  # the trap is there at lam_min
    path, _ = _quiet_path(X, y, C=0.5)
    counts = path.critical_counts()
    assert counts["turning"] + counts["jump"] > 0
    f_end = X @ path.coef[-1] + path.intercept[-1]
    assert (f_end > 0).any() and (f_end < 0).any()
    w0 = Params(coef=path.coef[0], intercept=float(path.intercept[0]))
    assert np.unique(y[sp.v_star(model.losses(w0, X, y), path.meta["start_lam"]) > 0]).size == 2


def test_houses_cells_say_they_are_not_the_papers_data():
    """The offline houses copy is the cadata file (California housing), not the paper's houses: every
    houses cell with runs says so in coverage.csv, and house_8l names the closest OpenML match."""
    import pandas as pd
    import yaml

    from spl_bench.paths import repo_root

    cfg = {n: yaml.safe_load((repo_root() / "configs" / "data" / f"{n}.yaml").read_text()) for n in ("houses", "cadata",
                                                                                                    "house_8l")}
    assert cfg["houses"]["sha256"] == cfg["cadata"]["sha256"]
    assert cfg["house_8l"]["openml_id"] == 218 and cfg["house_8l"]["file"] != cfg["houses"]["file"]
    cov = pd.read_csv(repo_root() / "results" / "tables" / "coverage.csv")
    houses = cov[(cov["dataset"] == "houses") & (cov["runs"] > 0)]
    assert len(houses) > 0
    assert houses["reason"].str.contains("different data from the paper's", regex=False).all()
    assert not cov[cov["dataset"] == "cadata"]["reason"].fillna("").str.contains("different data").any()


def test_a_jump_into_a_single_class_goes_on_where_acs_from_the_plain_fit_has_both():
    """80 rows, 20 % flips: after the jump near 0.60 the warm start, and ACS from the v = 1 fit, select
    one class (checked here by the plain ACS loop); the path resumes at the first age where that loop
    selects both, the gap is recorded, GAGA offers no candidate inside it, and the path ends two-class
    (the intercept of the plain loop at lam_max, 1e-6)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 5))
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=80))
    y[:16] *= -1
    model, sp = get_model("logistic", C=1.0), get_sp("linear")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = age_path(X, y, model="logistic", sp="linear", lam_range=(0.1, 5.0), C=1.0)
    gaps = path.meta["degenerate_gaps"]
    assert len(gaps) >= 1 and any("after the jump" in str(w.message) for w in caught)
    for a, b in gaps:
        assert np.unique(y[_plain_acs(model, sp, X, y, a)[1] > 0]).size == 1
        assert np.unique(y[_plain_acs(model, sp, X, y, b)[1] > 0]).size == 2
        after = np.flatnonzero(np.isclose(path.lambdas, b, rtol=1e-12, atol=0))
        assert after.size and path.point_kind[after[0]] == "after"
    p_end, v_end = _plain_acs(model, sp, X, y, 5.0)
    assert np.unique(y[v_end > 0]).size == 2
    assert path.intercept[-1] == pytest.approx(p_end.intercept, rel=1e-6, abs=1e-6)
    g = GAGA(model="logistic", model_params={"C": 1.0}, sp="linear", lam_min=0.1, lam_max=5.0, n_grid=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g.fit(X, y)
    lams = np.array([c["lam"] for c in g.candidate_params_])
    for a, b in g.path_.meta["degenerate_gaps"]:
        assert not np.any((lams > a) & (lams < b))
    assert g.run_info()["n_degenerate_gaps"] == len(gaps)
