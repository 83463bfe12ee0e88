"""MOSPL's rule since 2026-11-29 against the rows made before: the v = 1 fit (``full_fit``) by the exact
solver of its refits or by the model's own, and a linear kernel's decision values (``kernel_product``)
through ``X`` or through the kernel matrix.

The full fit sets the search box ``|w_j| <= bound_scale max|w_full|`` (``|beta_j| <= C`` for the SVM's
dual coefficients) and the population's first member, so it must solve the unweighted problem
exactly: checked by the model's KKT conditions and against the independent solver (libsvm for the
SVM, the model's coordinate descent for the lasso) to that solver's stopping tolerance.  The
configuration hash keeps ``full_fit=model`` and ``kernel_product=matrix`` out (the committed rows'
hashes), and the tables whose MOSPL rows were made with them compose their cells with them until they
are rerun.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from spl_bench.errors import ConfigError
from spl_bench.methods.mospl import MOSPL, MOSPLProblem
from spl_bench.models import get_model
from spl_bench.runner.cells import compose_cell, rule_overrides, table_cells
from spl_bench.runner.run_config import identity
from spl_bench.sp import get_sp
from spl_bench.table_registry import MOSPL_OLD_RULE, MOSPL_OLD_TABLES, OLD_RULES, STEP_CANDIDATES, TABLES


def _blobs(n: int = 90, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, d)) + 0.8 * y[:, None]
    flip = rng.choice(n, n // 5, replace=False)
    y[flip] = -y[flip]  # overlapping classes: free and bounded dual coefficients
    return X, y


def _regression(n: int = 60, d: int = 5, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    y[: n // 6] += 5.0
    return X, y


#: (model, params, data, KKT tolerance of the exact full fit): the linear-kernel dual and the lasso's
#: active set solve to rounding; with an RBF kernel the refits' "hybrid" solver takes libsvm's point
#: where its guess-and-check does not settle (as the committed refits do), so there it is libsvm's
CASES = [
    ("svm", {"C": 1.0, "kernel": "linear"}, _blobs, 1e-9),
    ("svm", {"C": 0.7, "gamma": 0.2}, _blobs, 1e-6),
    ("lasso", {"alpha": 0.05}, _regression, 1e-9),
]


@pytest.mark.parametrize(("model", "mp", "data", "kkt_tol"), CASES)
def test_the_exact_full_fit_solves_the_unweighted_problem(model, mp, data, kkt_tol):
    X, y = data()
    ones = np.ones(len(y))
    kw = {"model": model, "model_params": mp, "pop_size": 8, "n_gen": 3, "seed": 2}
    ex = MOSPL(**kw, full_fit="exact").fit(X, y)
    old = MOSPL(**kw, full_fit="model").fit(X, y)
    assert ex.run_info()["full_fit"] == "exact" and old.run_info()["full_fit"] == "model"
    # the exact solvers reach the KKT conditions to rounding; libsvm / coordinate descent to their tolerance
    assert ex.model_.kkt_violation(ex.full_params_, X, y, ones) <= kkt_tol
    f_ex = ex.model_.decision_function(ex.full_params_, X)
    f_old = old.model_.decision_function(old.full_params_, X)
    scale = max(1.0, float(np.abs(f_old).max()))
    np.testing.assert_allclose(f_ex, f_old, rtol=0, atol=5e-3 * scale)  # libsvm's tol 1e-3 on the dual gradient
    # the objective can only be lower at the exact optimum (up to rounding)
    j_ex = ex.model_.objective(ex.full_params_, X, y, ones)
    assert j_ex <= old.model_.objective(old.full_params_, X, y, ones) + 1e-10


def test_an_unknown_full_fit_is_one_config_error():
    X, y = _regression(20, 2)
    with pytest.raises(ConfigError, match="full_fit"):
        MOSPL(model="lasso", pop_size=6, n_gen=2, full_fit="libsvm").fit(X, y)


@pytest.fixture
def table11_on_old_rules(monkeypatch):
    """Table 11 on both methods' old rules, whatever the registry says today (its keys leave as the
    tables are rerun)."""
    from spl_bench.runner import cells

    assert cells.OLD_RULES["mospl"][1] == MOSPL_OLD_RULE and cells.OLD_RULES["gaga"][1] == STEP_CANDIDATES
    monkeypatch.setitem(cells.OLD_RULES, "mospl", (frozenset({"11"}), MOSPL_OLD_RULE))
    monkeypatch.setitem(cells.OLD_RULES, "gaga", (frozenset({"11"}), STEP_CANDIDATES))


@pytest.mark.usefixtures("table11_on_old_rules")
def test_the_old_rule_keeps_the_committed_hashes_and_the_current_one_has_its_own():
    (cell,) = table_cells("11", ["mospl"], where=["model.params.C=1.0"])
    old_cfg, new_cfg = compose_cell(cell), compose_cell(replace(cell, current_rule=True))
    assert (old_cfg.method.full_fit, old_cfg.method.kernel_product) == ("model", "matrix")
    assert (new_cfg.method.full_fit, new_cfg.method.kernel_product) == ("exact", "factor")
    keys = {"full_fit", "kernel_product"}
    assert not keys & set(identity(old_cfg)["method"])  # the hash the committed rows were made under
    assert {k: identity(new_cfg)["method"][k] for k in keys} == {"full_fit": "exact", "kernel_product": "factor"}
    rest = {k: v for k, v in identity(new_cfg)["method"].items() if k not in keys}
    assert rest == identity(old_cfg)["method"]  # nothing else differs


@pytest.mark.parametrize(("n", "d"), [(70, 5), (40, 60)])  # n > d, and d > n
def test_a_linear_kernels_decision_values_through_x_are_those_of_the_kernel_matrix(n, d):
    """``(B X) X^T`` against ``B K`` with ``K = X X^T`` formed by the model (scikit-learn's linear_kernel):
    equal to rounding, for genomes spread over the box; the factor route holds no n x n matrix."""
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    model, sp = get_model("svm", C=1.0, kernel="linear"), get_sp("linear")
    by_x = MOSPLProblem(model, sp, X, y, kernel_product="factor")
    by_k = MOSPLProblem(model, sp, X, y, kernel_product="matrix")
    assert by_x.K_factor is not None and not hasattr(by_x, "K")
    G = rng.uniform(-1.0, 1.0, size=(25, by_x.n_var))
    G[:, -1] = rng.uniform(0.0, 5.0, size=25)
    (D1, R1), (D2, R2) = by_x.decision_and_reg(G), by_k.decision_and_reg(G)
    scale = float(np.abs(G[:, :n]).sum(axis=1).max() * np.abs(X @ X.T).max())  # |K beta| <= |beta|_1 max|K|
    np.testing.assert_allclose(D1, D2, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(R1, R2, rtol=1e-11, atol=1e-13 * scale)
    # an RBF kernel has no factor: both settings form the kernel matrix
    rbf = MOSPLProblem(get_model("svm", C=1.0, gamma=0.1), sp, X, y, kernel_product="factor")
    assert rbf.K_factor is None and rbf.K.shape == (n, n)


def test_an_unknown_kernel_product_is_one_config_error():
    X, y = _blobs(20, 2)
    with pytest.raises(ConfigError, match="kernel_product"):
        MOSPL(model="svm", model_params={"kernel": "linear"}, pop_size=6, n_gen=2, kernel_product="dense").fit(X, y)


def test_the_registry_keeps_every_old_rule_key_a_table_or_a_tables_variant():
    assert OLD_RULES["mospl"] == (MOSPL_OLD_TABLES, MOSPL_OLD_RULE)
    for keys, _ in OLD_RULES.values():
        assert all(k.split("@")[0] in TABLES for k in keys)


@pytest.mark.usefixtures("table11_on_old_rules")
def test_old_rules_give_each_method_its_own_overrides():
    assert rule_overrides("11", "mospl") == list(MOSPL_OLD_RULE)
    assert rule_overrides("11", "mospl", current_rule=True) == []
    assert rule_overrides("11", "gaga") == list(STEP_CANDIDATES)
    assert rule_overrides("11", "acs") == []
    assert rule_overrides(None, "mospl") == []  # not a table's cell: the method's own default
    # --current-rule keeps the methods with an old rule, and only those
    methods = {c.overrides[-1] for c in table_cells("11", current_rule=True, where=["model.params.C=1.0"])}
    assert methods == {"method=gaga", "method=mospl"}
