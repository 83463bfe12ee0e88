"""Path consistency (GAGA appendix D.4): the age-path agrees with warm-started ACS on a dense grid.

The reference is ACS run sequentially along a grid of ages (step 1e-3), each age warm-started
from the previous ACS solution and converged far beyond the comparison tolerance: ACS stops
at ``max |dv| <= 1e-4`` and a Newton polish on the partial-optimum equations finishes it
(``tests/gaga_reference.py``, no code from ``spl_bench.gaga``); a point is accepted only if the
polish stays next to the ACS iterate, its last Newton correction is <= 1e-9 and the model's KKT
check of the v*-weighted problem holds to 1e-9.

The path's dense output ``AgePath.at`` is compared at every grid age, in the coefficients
(``coef`` or the SVM's ``dual_coef``) and the intercept, relative to ``1 + max |ref|``.
After a jump of the path the ACS reference may legitimately sit on another branch: it is
re-seeded from the path's first point after the jump, and grid ages within ``WINDOW`` of a jump
are not compared.  The number of compared ages is asserted (no vacuous pass).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gaga_reference import Reference, breast_cancer, diabetes, digits_binary
from spl_bench.gaga import AgePath, age_path
from spl_bench.models import get_model
from spl_bench.sp import get_sp

STEP = 1e-3
WINDOW = 5e-3  # grid ages closer than this to a jump are not compared
TOL = 1e-5  # |path - ACS| / (1 + max |ACS|)

DATA = {"diabetes": diabetes, "breast_cancer": breast_cancer, "digits": digits_binary}


@dataclass
class Result:
    compared: int
    skipped: int
    max_err: float
    at_lam: float
    n_events: int
    n_jumps: int
    ref_time: float


def first_after(path: AgePath, lam: float) -> int:
    """Index of the path's first recorded point on the branch after the jump at ``lam``."""
    k = np.flatnonzero((path.point_kind == "after") & (path.lambdas >= lam))
    assert k.size, f"no point recorded after the jump at {lam}"
    return int(k[0])


def compare_with_acs(path: AgePath, ref: Reference, grid: np.ndarray, X, y) -> Result:
    jumps = sorted(e["lam"] for e in path.events if e["kind"] == "jump")
    model = ref.model
    p0 = model.fit_weighted(X, y, np.ones(len(y)))  # the engine's default start as well
    vec, b = (p0.dual_coef if model.name == "svm" else p0.coef), p0.intercept
    nxt, compared, skipped = 0, 0, 0
    worst, worst_lam = 0.0, np.nan
    t0 = time.perf_counter()
    for lam in grid:
        while nxt < len(jumps) and jumps[nxt] < lam:  # re-seed on the branch after the jump
            k = first_after(path, jumps[nxt])
            vec, b = path.values[k], path.intercept[k]
            nxt += 1
        if any(abs(lam - j) < WINDOW for j in jumps):
            skipped += 1
            continue
        pt = ref.solve(float(lam), vec, b)  # raises if it cannot certify the point
        vec, b = pt.vec, pt.b
        pv, pb = path.at(lam)
        scale = 1.0 + float(np.abs(pt.vec).max())
        err = max(float(np.abs(pv[0] - pt.vec).max()) / scale, abs(float(pb[0]) - pt.b) / (1.0 + abs(pt.b)))
        if err > worst:
            worst, worst_lam = err, float(lam)
        compared += 1
    return Result(compared, skipped, worst, worst_lam, len(path.events), len(jumps), time.perf_counter() - t0)


def run_case(data, n, d, seed, model_name, model_kw, sp_name, sp_kw, lam_lo, n_grid):
    X, y = DATA[data](n=n, d=d, seed=seed)
    grid = lam_lo + STEP * np.arange(n_grid)
    path = age_path(X, y, model=model_name, sp=sp_name, sp_params=sp_kw, lam_range=(lam_lo, float(grid[-1])),
                    **model_kw)
    ref = Reference(get_model(model_name, **model_kw), get_sp(sp_name, **sp_kw), X, y)
    res = compare_with_acs(path, ref, grid, X, y)
    return path, grid, res


def check(path, grid, res: Result, min_events: int = 1):
    msg = f"{res}"
    assert res.compared + res.skipped == grid.size
    # every skipped age is next to a jump: at most 2 WINDOW / STEP + 1 ages per jump
    assert res.skipped <= res.n_jumps * (2 * WINDOW / STEP + 1), msg
    assert res.compared >= 0.75 * grid.size, msg
    assert res.n_events >= min_events, "the window should contain critical points: " + msg
    assert res.max_err <= TOL, msg
    assert path.meta["n_failed_warm_starts"] == 0


# (id, data, n, d, model, model params, sp, sp params, lam_lo, grid size)
SMALL = [
    ("diabetes-lasso-linear", "diabetes", 80, 6, "lasso", {"alpha": 0.01}, "linear", {}, 0.5, 301),
    ("diabetes-lasso-mixture", "diabetes", 80, 6, "lasso", {"alpha": 0.01}, "mixture", {"gamma": 0.5}, 0.5, 301),
    ("cancer-svm-linear", "breast_cancer", 80, 6, "svm", {"C": 1.0, "gamma": 0.2}, "linear", {}, 0.5, 301),
    ("cancer-svm-mixture", "breast_cancer", 60, 6, "svm", {"C": 1.0, "gamma": 0.2}, "mixture", {"gamma": 0.5},
     0.5, 301),
    ("cancer-logistic-mixture", "breast_cancer", 80, 6, "logistic", {"C": 1.0}, "mixture", {"gamma": 0.5},
     0.9, 301),
    ("digits-svm-linear", "digits", 80, 8, "svm", {"C": 1.0, "gamma": 0.1}, "linear", {}, 0.5, 301),
    ("digits-logistic-mixture", "digits", 80, 8, "logistic", {"C": 1.0}, "mixture", {"gamma": 0.5}, 0.9, 301),
]


@pytest.mark.parametrize("case", [pytest.param(c[1:], id=c[0]) for c in SMALL])
def test_path_agrees_with_warm_started_acs_on_a_dense_grid(case):
    data, n, d, model_name, model_kw, sp_name, sp_kw, lam_lo, n_grid = case
    path, grid, res = run_case(data, n, d, 0, model_name, model_kw, sp_name, sp_kw, lam_lo, n_grid)
    check(path, grid, res)


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000), sp_name=st.sampled_from(["linear", "mixture"]),
       lam_lo=st.sampled_from([0.3, 0.6, 1.0]))
def test_lasso_path_agrees_with_acs_over_subsamples(seed, sp_name, lam_lo):
    sp_kw = {"gamma": 0.5} if sp_name == "mixture" else {}
    path, grid, res = run_case("diabetes", 60, 5, seed, "lasso", {"alpha": 0.01}, sp_name, sp_kw, lam_lo, 151)
    check(path, grid, res, min_events=0)


# full data sets (appendix D.4 used the scikit-learn toy sets); a few minutes in all
FULL = [
    ("diabetes-lasso-linear", "diabetes", None, None, "lasso", {"alpha": 0.01}, "linear", {}, 0.5, 301),
    ("diabetes-lasso-mixture", "diabetes", None, None, "lasso", {"alpha": 0.01}, "mixture", {"gamma": 0.5},
     0.5, 301),
    ("cancer-svm-linear", "breast_cancer", None, None, "svm", {"C": 1.0, "gamma": "scale"}, "linear", {},
     0.5, 101),
    ("cancer-logistic-mixture", "breast_cancer", None, None, "logistic", {"C": 1.0}, "mixture", {"gamma": 0.5},
     0.9, 301),
    ("digits-logistic-mixture", "digits", None, None, "logistic", {"C": 1.0}, "mixture", {"gamma": 0.5},
     0.9, 101),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(c[1:], id=c[0]) for c in FULL])
def test_full_data_path_agrees_with_warm_started_acs(case):
    data, n, d, model_name, model_kw, sp_name, sp_kw, lam_lo, n_grid = case
    path, grid, res = run_case(data, n, d, 0, model_name, model_kw, sp_name, sp_kw, lam_lo, n_grid)
    check(path, grid, res)


# (id, data, data params, model, model params, sp, sp params, age range)
JUMP_CASES = [
    ("diabetes-lasso-linear", "diabetes", {"n": 80, "d": 6}, "lasso", {"alpha": 0.01}, "linear", {}, (0.1, 3.0)),
    ("diabetes-lasso-mixture", "diabetes", {"n": 150, "d": 8}, "lasso", {"alpha": 0.01}, "mixture",
     {"gamma": 0.5}, (0.1, 3.0)),
    ("cancer-svm-linear", "breast_cancer", {"n": 100, "d": 6, "flip": 0.1}, "svm", {"C": 1.0, "gamma": 0.2},
     "linear", {}, (0.1, 3.0)),
]


@pytest.mark.parametrize("case", [pytest.param(c[1:], id=c[0]) for c in JUMP_CASES])
def test_after_each_jump_the_path_is_where_acs_goes(case):
    """A jump point is left for the partial optimum that warm-started ACS reaches (Algorithm 2,
    line 8), not for some other one the engine's Newton polish might find: the reference runs
    ACS from the last point before the jump at the age of the first point after it."""
    data, data_kw, model_name, model_kw, sp_name, sp_kw, lam_range = case
    X, y = DATA[data](**data_kw)
    path = age_path(X, y, model=model_name, sp=sp_name, sp_params=sp_kw, lam_range=lam_range, **model_kw)
    ref = Reference(get_model(model_name, **model_kw), get_sp(sp_name, **sp_kw), X, y)
    jumps = [e["lam"] for e in path.events if e["kind"] == "jump"]
    assert len(jumps) >= 3, "the range should contain jump points"
    errs, uncertified = [], 0
    for lam in jumps:
        k = first_after(path, lam)
        kb = int(np.flatnonzero(path.lambdas <= lam)[-1])
        try:
            pt = ref.solve(float(path.lambdas[k]), path.values[kb], float(path.intercept[kb]))
        except AssertionError:  # the reference could not certify its ACS point (SVM, slow ACS)
            uncertified += 1
            continue
        errs.append(float(np.abs(pt.vec - path.values[k]).max()) / (1.0 + float(np.abs(pt.vec).max())))
    assert uncertified <= len(jumps) // 4, (uncertified, len(jumps))
    assert max(errs) <= 1e-6, errs
