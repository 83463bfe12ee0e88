"""DSPL (consensus-ADMM distributed SPL): checks against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.data.synthetic import make_dspl_regression
from spl_bench.errors import ConfigError, DataError
from spl_bench.methods.dspl import DSPL, dspl_solve, split_batches

FAST = settings(max_examples=12, deadline=None)


def ridge_lstsq(X: np.ndarray, y: np.ndarray, v: np.ndarray, reg: float) -> np.ndarray:
    """``argmin_z sum v_j (y_j - x_j^T z)^2 + reg ||z||^2`` as a stacked least-squares problem."""
    s = np.sqrt(v)
    A = np.vstack([X * s[:, None], np.sqrt(reg) * np.eye(X.shape[1])])
    b = np.concatenate([y * s, np.zeros(X.shape[1])])
    return scipy.linalg.lstsq(A, b)[0]


def spl_objective(X, y, z, v, lam, reg):
    """Centralised SPL objective ``sum v (y - Xz)^2 - lam sum v + reg ||z||^2`` (problem (1))."""
    r = y - X @ z
    return float(v @ (r * r) - lam * v.sum() + reg * z @ z)


# ------------------------------------------------------------------ ADMM = centralised
@FAST
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(1, 5),
    p=st.integers(1, 8),
    reg=st.sampled_from([0.0, 1.0, 10.0]),
)
def test_admm_reaches_centralised_solution_for_fixed_v(seed, m, p, reg):
    # one outer iteration = one ADMM solve with v = 1 on clean batches of different sizes
    rng = np.random.default_rng(seed)
    sizes = rng.integers(p + 1, 40, size=m)
    d = make_dspl_regression(list(sizes), p, 0.0, rng=rng)
    res = dspl_solve(d.batches(), max_outer=1, reg=reg, eps_r=1e-20, eps_s=1e-20, max_admm=5000)
    z_ref = ridge_lstsq(d.X, d.y, np.ones(len(d.y)), reg)
    assert np.max(np.abs(res.z - z_ref)) < 1e-6
    assert np.max(np.abs(res.W - z_ref)) < 1e-6  # consensus reached by every batch
    # the duals are minus the gradients of the batch losses at w_i (ADMM optimality)
    for (X_i, y_i), w_i, a_i in zip(d.batches(), res.W, res.alpha, strict=True):
        grad = -2.0 * X_i.T @ (y_i - X_i @ w_i)
        assert np.allclose(a_i, -grad, atol=1e-6 * max(1.0, np.abs(grad).max()))


@FAST
@given(seed=st.integers(0, 10_000), adaptive=st.booleans())
def test_admm_with_fixed_rho_or_adaptive_rho_agree_with_normal_equations(seed, adaptive):
    rng = np.random.default_rng(seed)
    d = make_dspl_regression(30, 4, 0.0, n_batches=3, rng=rng)
    res = dspl_solve(d.batches(), max_outer=1, rho=7.0, adaptive_rho=adaptive, eps_r=1e-20, eps_s=1e-20,
                     max_admm=20_000)
    # independent: normal equations (X^T X + I) z = X^T y solved by Cholesky
    z_ref = scipy.linalg.solve(d.X.T @ d.X + np.eye(4), d.X.T @ d.y, assume_a="pos")
    assert np.max(np.abs(res.z - z_ref)) < 1e-6


# ------------------------------------------------------------- Lagrangian (Theorem 3)
@FAST
@given(seed=st.integers(0, 10_000), rate=st.sampled_from([0.1, 0.3, 0.5]), m=st.integers(2, 4))
def test_lagrangian_non_increasing_over_outer_iterations(seed, rate, m):
    d = make_dspl_regression(60, 5, rate, n_batches=m, rng=seed)
    res = dspl_solve(d.batches(), store_v=True, max_outer=60)
    L = res.lagrangians
    assert len(L) >= 3
    scale = np.maximum(1.0, np.abs(L[:-1]))
    assert np.all(np.diff(L) <= 1e-7 * scale), np.diff(L).max()
    # and each recorded L equals the centralised SPL objective at z with the same v and lam
    for h in res.history:
        F = spl_objective(d.X, d.y, h.z, h.v, h.lam, 1.0)
        assert abs(h.lagrangian - F) <= 1e-6 * max(1.0, abs(F))


def test_dspl_follows_the_centralised_spl_path():
    # with exact ADMM solves DSPL is ACS on the whole data: same v, same z at every age
    d = make_dspl_regression(150, 6, 0.3, n_batches=4, rng=11)
    res = dspl_solve(d.batches(), store_v=True, eps_r=1e-20, eps_s=1e-20, max_admm=5000)
    v = np.ones(len(d.y))
    for h in res.history:
        z_ref = ridge_lstsq(d.X, d.y, v, 1.0)
        np.testing.assert_array_equal(h.v, v)
        assert np.max(np.abs(h.z - z_ref)) < 1e-7
        r = d.y - d.X @ z_ref
        v = (r * r < h.lam).astype(float)  # eq. (11) on the centralised model
    assert res.converged


def test_lambda_schedule_is_geometric_and_capped():
    d = make_dspl_regression(50, 3, 0.2, n_batches=2, rng=3)
    res = dspl_solve(d.batches(), lam0=0.1, tau=1.0, mu=1.1)
    lams = res.lambdas
    k = int(np.ceil(np.log(10.0) / np.log(1.1)))  # 0.1 * 1.1^k >= 1 first at k = 25
    expected = np.minimum(0.1 * 1.1 ** np.arange(len(lams)), 1.0)
    np.testing.assert_allclose(lams, expected, rtol=1e-12)
    assert len(lams) >= k + 1 and lams[-1] == 1.0


# ------------------------------------------------------------------------- recovery
def test_dspl_recovers_w_star_at_30_percent_corruption():
    d = make_dspl_regression(300, 10, 0.3, n_batches=5, sigma=0.1, rng=2024)
    est = DSPL(n_batches=5, backend="serial").fit(d.X, d.y)
    err = np.linalg.norm(est.coef_ - d.w_star)
    ols = np.linalg.lstsq(d.X, d.y, rcond=None)[0]
    assert err < 0.1
    assert err < 0.2 * np.linalg.norm(ols - d.w_star)  # and far better than least squares
    # the kept rows are (almost) all clean ones
    assert est.v_[d.corrupted].mean() < 0.2 and est.v_[~d.corrupted].mean() > 0.9


def test_inner_v_update_variant_recovers_too():
    d = make_dspl_regression(200, 5, 0.3, n_batches=4, rng=5)
    res = dspl_solve(d.batches(), v_in_admm=True)
    assert np.linalg.norm(res.z - d.w_star) < 0.1


# ------------------------------------------------------------------------ estimator
def test_estimator_candidates_and_predictions():
    d = make_dspl_regression(80, 4, 0.2, n_batches=3, rng=8)
    est = DSPL(n_batches=3, backend="serial", lam0=0.25, lam_max=1.0, mu=2.0).fit(d.X, d.y)
    lams = [c["lam"] for c in est.candidate_params_]
    assert lams[:3] == [0.25, 0.5, 1.0] and all(lam == 1.0 for lam in lams[2:])
    P = est.predict_candidates(d.X[:7])
    assert P.shape == (len(lams), 7)
    np.testing.assert_allclose(P[-1], d.X[:7] @ est.coef_)
    np.testing.assert_allclose(est.predict(d.X[:7]), P[-1])
    info = est.run_info()
    assert info["outer_iters"] == len(lams) and info["backend"] == "serial"


def test_bad_inputs_raise_clear_errors():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = X @ np.ones(3)
    with pytest.raises(ConfigError):
        DSPL(backend="spark").fit(X, y)
    with pytest.raises(DataError):
        DSPL(n_batches=30, backend="serial").fit(X, y)
    with pytest.raises(ConfigError):
        DSPL(lam0=2.0, lam_max=1.0, backend="serial").fit(X, y)
    with pytest.raises(ConfigError):
        DSPL(rho="big", backend="serial").fit(X, y)
    with pytest.raises(ConfigError):
        DSPL(model="logistic", backend="serial").fit(X, np.sign(y))
    with pytest.raises(DataError):
        DSPL(backend="serial").fit(np.vstack([X[:-1], [np.nan] * 3]), y)


def test_split_batches_covers_rows_in_order():
    X = np.arange(23.0)[:, None]
    parts = split_batches(X, X[:, 0], 4)
    assert [len(b[1]) for b in parts] in ([6, 6, 5, 6], [6, 5, 6, 6], [5, 6, 6, 6], [6, 6, 6, 5])
    np.testing.assert_array_equal(np.concatenate([b[1] for b in parts]), X[:, 0])


# ----------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    yield cluster
    cluster.close()


def test_dask_and_serial_backends_give_the_same_model(dask_cluster):
    d = make_dspl_regression(40, 4, 0.3, n_batches=3, rng=17)
    kw = dict(n_batches=3, lam0=0.3, lam_max=1.0, mu=1.5, eps_r=1e-14, eps_s=1e-14)
    ser = DSPL(backend="serial", **kw).fit(d.X, d.y)
    dsk = DSPL(backend="dask", cluster={"address": dask_cluster.scheduler_address}, **kw).fit(d.X, d.y)
    assert len(ser.history_) == len(dsk.history_)
    assert np.max(np.abs(ser.coef_ - dsk.coef_)) <= 1e-10
    np.testing.assert_array_equal(ser.v_, dsk.v_)
    assert dsk.run_info()["n_workers"] == 2
    # the backend closed its client but not the cluster it joined
    assert dask_cluster.status.name == "running"


@pytest.mark.slow
@pytest.mark.parametrize("k", [4, 9])
def test_table2_setting_dspl_recovers_and_matches_centralised_spl(k):
    # DSPL Table 2 setting (k of 10 batches 90 % corrupted, the others 10 %), reduced size
    from spl_bench.data.synthetic import corrupted_batch_rates
    from spl_bench.methods.robust_regression import spl_hard_path

    for seed in range(3):
        rates = corrupted_batch_rates(10, k, rng=seed)
        d = make_dspl_regression(500, 20, list(rates), rng=100 + seed)
        res = dspl_solve(d.batches())
        err = np.linalg.norm(res.z - d.w_star)
        ols = np.linalg.lstsq(d.X, d.y, rcond=None)[0]
        assert err < 0.1 and err < 0.2 * np.linalg.norm(ols - d.w_star)
        # same partial optimum as centralised SPL run with the same schedule
        ws, _, _, _ = spl_hard_path(d.X, d.y, lam0=0.1, tau=1.0, mu=1.1)
        assert np.linalg.norm(ws[-1] - res.z) < 1e-5


@pytest.mark.parametrize("sp_name", ["hard", "linear"])
def test_the_v_step_made_ahead_is_the_v_step_then_gram(sp_name):
    """objectives(ahead=True) + v_step gives the v_i, G_i, b_i of v_step then gram, to the bit;
    with another lam, or with W given (v in the ADMM loop), the plain route is taken."""
    from spl_bench.methods.dspl_backends import Batch, BatchHost
    from spl_bench.sp import get_sp

    rng = np.random.default_rng(5)
    batches = [Batch(rng.normal(size=(9000, 6)), rng.normal(size=9000)) for _ in range(2)]
    W, z, sp = rng.normal(size=(2, 6)), rng.normal(size=6), get_sp(sp_name)
    plain, ahead = BatchHost([0, 1], *batches), BatchHost([0, 1], *batches)
    for lam in (0.8, 1.3):  # two outer iterations: the second starts from the first's v
        for host in (plain, ahead):
            host.gram()
        np.testing.assert_array_equal(plain.objectives(W, z, lam, sp), ahead.objectives(W, z, lam, sp, ahead=True))
        assert plain.v_step(lam=lam, sp=sp) == ahead.v_step(lam=lam, sp=sp)
        plain.gram()
        for a, b in zip(plain.v + plain.G + plain.b, ahead.v + ahead.G + ahead.b, strict=True):
            np.testing.assert_array_equal(a, b)
        W = W + 0.1
    ahead.objectives(W, z, 2.0, sp, ahead=True)
    changed = ahead.v_step(lam=2.5, sp=sp)  # another lam: the work made ahead is not used
    assert ahead._ahead is None and not ahead._gram_current and changed >= 0
