"""ACS converges to a partial optimum: w optimal for v = v*(ell(w), lam), KKT <= 1e-6."""

from __future__ import annotations

import numpy as np
import pytest

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
