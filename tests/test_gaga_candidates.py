"""GAGA's selection candidates do not depend on the solver route (issue 62).

The candidates are both sides of every critical point, the path's last point and a fixed grid
of ages evaluated by the dense output (``candidates="critical_grid"``).  Two routes must give the
same candidate ages, the same candidate values and the same selected test value; the grid values
must be partial optima (checked against ACS at those ages, an independent computation).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from spl_bench.errors import ConfigError
from spl_bench.methods._acs_solvers import make_inner_solver
from spl_bench.methods.acs import acs_solve
from spl_bench.methods.gaga import GAGA
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp

#: the dense output of every route is held to ``EngineOptions.dense_tol`` = 1e-7 relative to
#: 1 + max |values| against the projected path; two routes may each be off by that much
DENSE_TOL = 1e-7
#: the compiled follower and the predictor-corrector take the same steps: they agree to rounding
SAME_STEPS_TOL = 1e-10

CASES = {
    "lasso": ({"alpha": 0.01}, "regression"),
    "logistic": ({"C": 1.0}, "classification"),
    "svm": ({"C": 1.0, "kernel": "rbf", "gamma": "scale"}, "classification"),
}


def _data(task: str, n: int, seed: int, d: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    if task == "regression":
        y = X @ w + 0.3 * rng.normal(size=n)
        bad = rng.random(n) < 0.3
        y[bad] += rng.normal(0.2, 3.0, bad.sum())
        return X, y
    y = np.sign(X @ w + 0.5 * rng.normal(size=n))
    y[rng.random(n) < 0.2] *= -1
    return X, y


def _fit(model: str, route: str, X: np.ndarray, y: np.ndarray, **kw) -> GAGA:
    params, _ = CASES[model]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GAGA(model=model, model_params=params, sp="linear", lam_min=0.1, lam_max=4.0, n_grid=60,
                    ode_method=route, **kw).fit(X, y)


def _table(est: GAGA) -> tuple[np.ndarray, np.ndarray]:
    lams = np.array([c["lam"] for c in est.candidate_params_])
    vals = np.array([np.append(m.coef if m.coef is not None else m.dual_coef, m.intercept)
                     for m in est.candidate_models_])
    return lams, vals


def _selected_test_value(est: GAGA, task: str, Xv, yv, Xt, yt) -> float:
    """Validation selection as the protocol does it: best validation value, first on ties."""
    pv, pt = est.predict_candidates(Xv), est.predict_candidates(Xt)
    if task == "regression":
        best = int(np.argmin(((pv - yv) ** 2).mean(axis=1)))
        return float(((pt[best] - yt) ** 2).mean())
    best = int(np.argmax((pv == yv).mean(axis=1)))
    return float((pt[best] == yt).mean())


#: the default route against another one: the lasso's default is the compiled follower, compared with
#: RK45 / LSODA ("auto"); the others' is "auto", compared with the predictor-corrector
OTHER_ROUTE = {"lasso": "auto", "logistic": "PC", "svm": "PC"}


@pytest.mark.parametrize("model", list(CASES))
def test_two_routes_give_the_same_candidates_and_selection(model):
    _, task = CASES[model]
    X, y = _data(task, 120, 1)
    Xv, yv = _data(task, 80, 2)
    Xt, yt = _data(task, 80, 3)
    fast, ode = _fit(model, "fastest", X, y), _fit(model, OTHER_ROUTE[model], X, y)
    assert fast.path_.meta["ode_method"] != ode.path_.meta["ode_method"]
    (lf, vf), (lo, vo) = _table(fast), _table(ode)
    # the same candidates: the same ages (critical points located to the event tolerance)
    assert lf.shape == lo.shape
    np.testing.assert_allclose(lf, lo, rtol=0, atol=1e-8)
    # the same values, each route within its dense-output tolerance of the path
    scale = 1.0 + np.abs(vf).max()
    assert np.abs(vf - vo).max() <= 2 * DENSE_TOL * scale
    # no candidate is a solver step point: every candidate age is a grid age or a critical one
    crit = fast.path_.lambdas[fast.path_.point_kind != "step"]
    grid = np.linspace(0.1, 4.0, 60)
    on_grid = np.isclose(lf[:, None], grid[None, :], rtol=0, atol=1e-12).any(axis=1)
    at_critical = np.isclose(lf[:, None], crit[None, :], rtol=0, atol=1e-12).any(axis=1)
    at_end = np.isclose(lf, fast.path_.lambdas[-1], rtol=0, atol=1e-12)
    assert np.all(on_grid | at_critical | at_end)
    # the same selected test value
    a = _selected_test_value(fast, task, Xv, yv, Xt, yt)
    b = _selected_test_value(ode, task, Xv, yv, Xt, yt)
    assert abs(a - b) <= 1e-8 * max(1.0, abs(a))


def test_the_compiled_lasso_route_and_the_predictor_corrector_agree_to_rounding():
    """``fastest`` (compiled for the lasso) against ``PC``: the same steps, the same candidates."""
    X, y = _data("regression", 120, 4)
    fast = _fit("lasso", "fastest", X, y)
    assert fast.path_.meta["n_compiled_calls"] > 0
    (lf, vf), (lp, vp) = _table(fast), _table(_fit("lasso", "PC", X, y))
    assert lf.shape == lp.shape
    np.testing.assert_allclose(lf, lp, rtol=0, atol=SAME_STEPS_TOL)
    assert np.abs(vf - vp).max() <= SAME_STEPS_TOL * (1.0 + np.abs(vf).max())


def test_grid_candidates_are_partial_optima():
    """The grid candidates (dense output) against ACS converged at the same ages from them."""
    X, y = _data("regression", 150, 5)
    est = _fit("lasso", "fastest", X, y)
    lams, vals = _table(est)
    grid = np.linspace(0.1, 4.0, 60)
    # ACS with the exact active-set lasso fits (not GAGA's path code), started at the candidate
    fits, _ = make_inner_solver("exact", get_model("lasso", alpha=0.01), X, y)
    sp = get_sp("linear")
    for lam in grid[::7]:
        i = int(np.flatnonzero(np.isclose(lams, lam, rtol=0, atol=1e-12))[0])
        w = vals[i, :-1]
        params, _, _, converged = acs_solve(fits, sp, X, y, lam, init=Params(coef=w.copy()), tol=1e-13,
                                            max_iter=500, kkt_tol=1e-12)
        assert converged
        assert np.abs(params.coef - w).max() <= 2 * DENSE_TOL * (1.0 + np.abs(w).max())


def test_step_rule_keeps_the_old_candidates_and_an_unknown_rule_is_refused():
    X, y = _data("regression", 100, 6)
    steps = _fit("lasso", "auto", X, y, candidates="steps")
    crit = _fit("lasso", "auto", X, y)
    # the step rule offers the solver's steps too
    assert len(steps.candidate_params_) > len(crit.candidate_params_)
    assert steps.run_info()["candidate_rule"] == "steps"
    assert crit.run_info()["candidate_rule"] == "critical_grid"
    with pytest.raises(ConfigError, match="candidates must be one of"):
        _fit("lasso", "auto", X, y, candidates="knots")


def test_the_route_is_not_part_of_the_hash_and_the_committed_step_rule_cells_keep_theirs():
    """Under ``critical_grid`` two routes are one configuration.  The step rule (``STEP_CANDIDATES``)
    composes to the hash its committed rows were written under, and a table's cells (and their
    equal-candidates cells) read that rule while the table is in ``STEP_CANDIDATE_TABLES``, the
    current one once it has left: the folders' index points at the hash of the table's rule."""
    from dataclasses import replace

    import pandas as pd

    from spl_bench.paths import rows_root
    from spl_bench.runner.cells import Cell, cell_hash, compose_cell
    from spl_bench.runner.run_config import identity
    from spl_bench.table_registry import STEP_CANDIDATE_TABLES, STEP_CANDIDATES

    for variant in ("", "equal_candidates"):
        cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=gaga"), variant)
        now = replace(cell, current_rule=True)
        step_rule, current = compose_cell(now, STEP_CANDIDATES), compose_cell(now)
        assert step_rule.method.candidates == "steps" and step_rule.method.ode_method == "auto"
        ident = identity(step_rule)["method"]
        assert "candidates" not in ident and ident["ode_method"] == "auto"
        assert cell.rows_file(cell_hash(step_rule)).is_file()  # the step rule's committed rows
        assert (step_rule.protocol.candidates == "shared_grid") == bool(variant) == (current.protocol.candidates
                                                                                      == "shared_grid")
        # the default: candidates kept, route left out (two routes, one hash)
        ident = identity(current)["method"]
        assert ident["candidates"] == "critical_grid" and "ode_method" not in ident
        other = compose_cell(replace(now, overrides=(*now.overrides, "method.ode_method=PC")))
        assert cell_hash(other) == cell_hash(current) != cell_hash(step_rule)
        # the table's rule, and the index the tables read
        want = step_rule if cell.table in STEP_CANDIDATE_TABLES else current
        assert cell_hash(compose_cell(cell)) == cell_hash(want)
        index = pd.read_csv(rows_root() / cell.rows_name / "index.csv")
        assert index.loc[index["cell"] == cell.cell_id, "config_hash"].iloc[0] == cell_hash(want)
