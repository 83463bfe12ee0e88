"""GAGA paths of the SVM with a *linear* kernel (issue 20, first part).

With a linear kernel ``Q = (y y^T) * (X X^T)`` has rank ``<= d``, the weighted duals of the ACS
steps are degenerate and a sample in M couples to its own margin with ``Q_ii = |x_i|^2`` (~d on
standardised data), not 1 as with the RBF kernel.  Before the fix every such path here failed:
recorded points violated the KKT conditions by 1e2 to 1e50, paths overshot ``lam_max`` after
failed warm starts, and the digits paths took minutes.

Checked against computations that do not use ``spl_bench.gaga``:

* the natural-residual KKT measure of the v*-weighted dual at every recorded point
  (``gaga_reference.svm_natural_residual``, with ``v* = v*(ell(point), lam)``);
* an independent ACS scan: at a grid of ages inside the path's segments, ACS started from the
  path's dense output ``at(lam)`` must stay there: same partition of the samples and margins
  ``g = 1 - y f(x)`` (unique at the optimum of each weighted dual, unlike ``a`` when ``Q`` is
  rank deficient) within 1e-5.  A set change the path missed leaves ``at`` off the partial
  optimum there, and ACS moves away.  The ACS fits are the exact warm-started weighted-dual
  solver (``ExactSVMFits``, as ``ACS(inner_solver="exact")``); it shares code with the engine,
  so each of its fits is certified here by the natural residual above (<= 1e-8, with the
  margins recomputed from ``a`` and ``b``) and not trusted on its word.  libsvm cannot be the
  reference: its kernel cache is single precision, so even at tolerance 1e-10 (met on the
  float32-rounded ``Q``: residual ~5e-11) its fits are up to 1.4e-5 off the KKT conditions
  of the double-precision dual, and on these degenerate duals that is up to 2.9e-4 in the
  margins (digits n = 250, lam = 5.89; the exact fit from the same ``v`` is 3e-10 from ``at``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from sklearn.datasets import load_digits

from gaga_reference import breast_cancer, standardise, svm_natural_residual
from spl_bench.gaga import age_path
from spl_bench.methods._acs_solvers import ExactSVMFits
from spl_bench.models import Params, get_model
from spl_bench.sp import get_sp

SP_KW = {"linear": {}, "mixture": {"gamma": 0.5}}
C = 1.0


def digits_3_vs_8(n: int, seed: int = 0, flip: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Digits 3 (label -1) against 8 (+1), standardised (constant pixels dropped), ``flip`` of the
    labels flipped."""
    X, y = load_digits(return_X_y=True)
    keep = (y == 3) | (y == 8)
    X, y = X[keep], y[keep]
    i = np.sort(np.random.default_rng(seed).choice(len(y), n, replace=False))
    X, y = standardise(X[i]), np.where(y[i] == 8, 1.0, -1.0)
    y[np.random.default_rng(seed + 1).random(n) < flip] *= -1
    return X, y


def data(name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "breast_cancer":
        return breast_cancer(n=n, seed=0, flip=0.2)
    return digits_3_vs_8(n)


def margins(X: np.ndarray, y: np.ndarray, a: np.ndarray, b: float) -> np.ndarray:
    """``g = 1 - y f(x)`` with ``f = sum_j a_j y_j x_j^T x + b`` (the linear kernel, written out)."""
    w = X.T @ (a * y)
    return 1.0 - y * (X @ w + b)


def recorded_kkt(path, X, y, sp) -> np.ndarray:
    out = []
    for lam, a, b in zip(path.lambdas, path.dual_coef, path.intercept, strict=True):
        g = margins(X, y, a, b)
        out.append(svm_natural_residual(a, g, sp.v_star(C * np.maximum(g, 0.0), lam), y, C))
    return np.array(out)


#: natural residual every exact ACS fit must meet: the solver's own test is 1e-9, with ``a``
#: within ``bound_tol = 1e-8`` (times C) of a bound taken as at it (measured: <= 8.5e-10)
REF_KKT = 1e-8
#: margins of ACS from ``at(lam)`` against those of ``at(lam)``.  Measured <= 3.5e-6 over the 9
#: cases (breast cancer n = 250, linear SP; 5.8e-8 .. 2.8e-7 in the default suite).  That is
#: ``at``'s own interpolation error (its KKT <= 2.9e-7 there): the reference's part is at most
#: ~70 x REF_KKT = 7e-7 (libsvm's margin errors are <= ~70 x its KKT errors on these duals)
MARGIN_TOL = 1e-5


def acs_scan(path, X, y, sp, n_ages: int, acs_iters: int = 4) -> tuple[int, float, float, float, int]:
    """ACS with the exact weighted-dual fits from ``path.at(lam)`` at ``n_ages`` ages spread over
    the path's segments (away from its critical points).  Returns (ages compared, max KKT of
    ``at``, max natural residual of the ACS fits, max change of the margins, samples whose set
    differs)."""
    fits = ExactSVMFits(get_model("svm", C=C, kernel="linear"), X, y)
    crit = np.array([e["lam"] for e in path.events])
    L = path.lambdas
    ages = np.geomspace(L[0] * 1.0005, L[-1] * 0.9995, n_ages)
    gap = 2e-3 * np.maximum(1.0, ages)
    ages = ages[np.all(np.abs(ages[:, None] - crit[None, :]) > gap[:, None], axis=1)] if crit.size else ages
    A, B = path.at(ages)
    worst_kkt = worst_ref = worst_g = 0.0
    n_diff = 0
    for lam, a, b in zip(ages, A, B, strict=True):
        g = margins(X, y, a, b)
        ell = C * np.maximum(g, 0.0)
        v = sp.v_star(ell, lam)
        worst_kkt = max(worst_kkt, svm_natural_residual(a, g, v, y, C))
        p = Params(dual_coef=a, intercept=float(b), X_fit=X, y_fit=y, extra={"gamma": 1.0})
        for _ in range(acs_iters):
            p = fits.fit_weighted(X, y, v, warm=p)
            g_acs = margins(X, y, p.dual_coef, p.intercept)  # recomputed, not the solver's own
            worst_ref = max(worst_ref, svm_natural_residual(p.dual_coef, g_acs, v, y, C))
            v = sp.v_star(C * np.maximum(g_acs, 0.0), lam)
        worst_g = max(worst_g, float(np.abs(g_acs - g).max()))
        # the partition (E / M / D by the loss); a sample within MARGIN_TOL of a boundary may
        # cross it inside the allowed margin change, so it is left out
        lo, hi = sp.thresholds(lam)
        ell_acs = C * np.maximum(g_acs, 0.0)
        part, part_acs = sp.partition(ell, lam), sp.partition(ell_acs, lam)
        near = (np.abs(ell - lo) < MARGIN_TOL) | (np.abs(ell - hi) < MARGIN_TOL)
        n_diff += int(np.sum((part != part_acs) & ~near))
    return ages.size, worst_kkt, worst_ref, worst_g, n_diff


def check_path(name: str, sp_name: str, n: int, lam_range: tuple[float, float], n_ages: int,
               time_limit: float) -> None:
    X, y = data(name, n)
    sp = get_sp(sp_name, **SP_KW[sp_name])
    t0 = time.process_time()
    path = age_path(X, y, model="svm", sp=sp_name, sp_params=SP_KW[sp_name], lam_range=lam_range,
                    C=C, kernel="linear")
    took = time.process_time() - t0
    assert path.meta["n_failed_warm_starts"] == 0
    # the whole range, and not past it
    assert path.lambdas[-1] == pytest.approx(lam_range[1], rel=1e-12)
    assert path.lambdas[0] == pytest.approx(lam_range[0])
    kkt = recorded_kkt(path, X, y, sp)
    worst = int(kkt.argmax())
    assert kkt.max() <= 1e-5, (kkt.max(), path.lambdas[worst], path.point_kind[worst])
    n_ages_used, kkt_at, kkt_ref, dg, n_diff = acs_scan(path, X, y, sp, n_ages)
    assert n_ages_used >= n_ages // 2
    assert kkt_at <= 1e-5
    assert kkt_ref <= REF_KKT  # the reference is exact to this ...
    assert dg <= MARGIN_TOL, dg  # ... so a margin change is ``at``'s (or a missed set change)
    assert n_diff == 0
    assert took <= time_limit, took


# default suite: subsamples on part of the range (each failed before the fix: KKT 1e2 .. 5e49 at
# recorded points, or warm starts that found no partial optimum)
@pytest.mark.parametrize(("name", "sp_name", "lam_range"), [
    ("breast_cancer", "linear", (0.1, 6.0)),
    ("breast_cancer", "mixture", (0.1, 5.0)),
    ("digits", "mixture", (0.1, 5.0)),
])
def test_linear_kernel_path_is_exact_on_a_subsample(name, sp_name, lam_range):
    check_path(name, sp_name, 150, lam_range, n_ages=12, time_limit=30.0)


# the method config's whole range (configs/method/gaga.yaml: lam_min 0.1, lam_max 20)
@pytest.mark.slow
@pytest.mark.parametrize("sp_name", ["linear", "mixture"])
@pytest.mark.parametrize(("name", "n"), [("breast_cancer", 250), ("digits", 250), ("breast_cancer", 300)])
def test_linear_kernel_path_is_exact_over_the_whole_range(name, n, sp_name):
    check_path(name, sp_name, n, (0.1, 20.0), n_ages=40, time_limit=60.0)


@pytest.mark.parametrize("route", ["lowrank", "highs"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_low_rank_weighted_dual_is_exact(seed, route):
    """The low-rank routes of the weighted dual (``factor`` given: ``Q = G G^T``), the active-set
    method in ``(w, b)`` coordinates and HiGHS, from a cold start and after weights change on
    samples at their bound, where guess-and-check gives up on these degenerate duals: the
    natural residual with margins recomputed from ``a`` and ``b`` (independent of the solver)
    <= 1e-9, and the dual objective no worse than the primal active-set method's (which shares
    no code with either)."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual, low_rank_factor

    X, y = digits_3_vs_8(240, seed=seed, flip=0.3)
    n = len(y)
    rng = np.random.default_rng(seed)
    Q = (X @ X.T) * np.outer(y, y)
    solver = WeightedSVMDual(Q, y, factor=low_rank_factor("linear", X, y))
    solver.lowrank_first = route == "lowrank"
    reference = WeightedSVMDual(Q, y)  # no factor: guess-and-check, then the primal active set
    v = np.clip(rng.uniform(-0.2, 1.3, n), 0.0, 1.0)
    a = np.zeros(n)
    for step in range(3):
        out = solver.fit(C * v, a)
        assert out is not None
        a, b, _ = out
        g = margins(X, y, a, b)
        assert svm_natural_residual(a, g, v, y, C) <= 1e-9, step
        ref = reference._active_set_qp(C * v, np.zeros(n))
        if ref is not None:
            assert 0.5 * a @ Q @ a - a.sum() <= 0.5 * ref[0] @ Q @ ref[0] - ref[0].sum() + 1e-8
        at_bound = np.flatnonzero(np.isclose(a, C * v) & (v > 0))
        j = rng.choice(at_bound, min(8, at_bound.size), replace=False)
        v = v.copy()
        v[j] = rng.uniform(0.0, 1.0, j.size)  # weights of bound samples change, as in ACS
    # the route under test was taken
    assert (solver.n_lowrank if route == "lowrank" else solver.n_highs) >= 1


def test_low_rank_correction_recovers_the_exact_point_from_a_nearby_one():
    """``_correct`` (one minimum-norm step on the equations of the sets) from the exact solution
    moved by 1e-6 within the box and off ``y^T a = 0``, as HiGHS's points are: back within 1e-9
    of the KKT conditions (margins recomputed from ``a`` and ``b``); from a point with the wrong
    sets (a free sample pushed to its bound) it returns ``None``, never a wrong point."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual, low_rank_factor

    X, y = digits_3_vs_8(200, seed=4, flip=0.3)
    n = len(y)
    rng = np.random.default_rng(4)
    Q = (X @ X.T) * np.outer(y, y)
    solver = WeightedSVMDual(Q, y, factor=low_rank_factor("linear", X, y))
    v = np.clip(rng.uniform(-0.2, 1.3, n), 0.0, 1.0)
    a, _, _ = solver.fit(C * v, np.zeros(n))
    Z, P = solver._sets_of(a, C * v)
    near = a + np.where(Z, 1e-6 * rng.normal(size=n), 0.0)
    out = solver._correct(C * v, near, Z, P)
    assert out is not None
    a2, b2, _ = out
    assert svm_natural_residual(a2, margins(X, y, a2, b2), v, y, C) <= 1e-9
    wrong = Z.copy()
    i = np.flatnonzero(Z)[0]
    wrong[i] = False
    far = near.copy()
    far[i] = 0.0
    out = solver._correct(C * v, far, wrong, P)
    if out is not None:  # the sets may still be those of an optimum (a degenerate dual)
        a3, b3, _ = out
        assert svm_natural_residual(a3, margins(X, y, a3, b3), v, y, C) <= 1e-9


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_first_fit_at_v1_is_exact_with_a_linear_kernel(kernel):
    """The fit at ``v = 1`` that GAGA's path and ACS start from: exact from a cold start with a
    linear kernel (natural residual <= 1e-9 with the margins recomputed from ``a`` and ``b``,
    against libsvm's ~1e-7), the model's libsvm fit with an RBF kernel (no low-rank factor)."""
    from spl_bench.gaga.svm.svm_system import SVMSystem

    X, y = digits_3_vs_8(200, seed=5, flip=0.3)
    model = get_model("svm", C=C, kernel=kernel)
    system = SVMSystem(model, get_sp("linear"), X, y)
    p = system.initial_fit()
    fits = ExactSVMFits(model, X, y)
    q = fits.fit_weighted(X, y, np.ones(len(y)))
    if kernel == "linear":
        for params in (p, q):
            g = margins(X, y, params.dual_coef, params.intercept)
            assert svm_natural_residual(params.dual_coef, g, np.ones(len(y)), y, C) <= 1e-9
        assert system.dual_solver.n_lowrank == 1 and fits.n_libsvm == 0
    else:
        assert system.dual_solver is None or system.dual_solver.n_lowrank == 0
        assert fits.n_libsvm == 1


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_warm_start_sets_from_the_margins(kernel):
    """A path point warm-starts a fit in the box of a new age (GAGA Algorithm 2, line 8): its
    samples at the bound sit inside the new box.  The start sets taken from its margins
    (``fit(u, a0, b0)``) are the optimum's own sets in the old box, and from them the fit in the
    new box is exact (natural residual with margins ``1 - Q a - y b`` recomputed <= 1e-9)
    with the dual objective of a fit from ``a = 0`` on another solver."""
    from spl_bench.gaga.svm.inner import WeightedSVMDual, low_rank_factor

    X, y = digits_3_vs_8(240, seed=5, flip=0.3)
    n = len(y)
    rng = np.random.default_rng(5)
    if kernel == "linear":
        Q = (X @ X.T) * np.outer(y, y)
        make = lambda: WeightedSVMDual(Q, y, factor=low_rank_factor("linear", X, y))  # noqa: E731
    else:
        sq = (X**2).sum(1)
        Q = np.exp(-(sq[:, None] + sq[None, :] - 2 * X @ X.T) / X.shape[1]) * np.outer(y, y)
        make = lambda: WeightedSVMDual(Q, y)  # noqa: E731
    solver = make()
    v = np.clip(rng.uniform(0.2, 1.3, n), 0.0, 1.0)
    a, b, g = solver.fit_cold(C * v) if kernel == "linear" else solver.fit(C * v, np.zeros(n))
    Z, P = solver._sets_of(a, C * v)
    Zm, Pm = solver._sets_of_margins(a, b, C * v)
    assert np.array_equal(Z, Zm) and np.array_equal(P, Pm & ~Z)
    # a new age: the weights of the samples at the bound grow, theirs a stays
    v2 = np.where(P, np.minimum(1.05 * v, 1.0), v)
    assert np.array_equal(solver._sets_of_margins(a, b, C * v2)[1], P)  # still at the bound
    solver._last = None  # a0 is not the solver's latest solution (a path point is not)
    out = solver.fit(C * v2, a, b)
    assert out is not None
    a2, b2, _ = out
    assert svm_natural_residual(a2, 1.0 - Q @ a2 - y * b2, v2, y, C) <= 1e-9
    fresh = make()
    ref = fresh.fit_cold(C * v2) if kernel == "linear" else fresh.fit(C * v2, np.zeros(n))
    assert ref is not None
    obj = lambda t: 0.5 * t @ Q @ t - t.sum()  # noqa: E731
    assert abs(obj(a2) - obj(ref[0])) <= 1e-8 * (1.0 + abs(obj(ref[0])))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_the_dual_products_through_the_low_rank_factor_are_q_times_a(kernel):
    """``Q a`` (all rows and a mask of rows) and ``a^T Q a`` of the SVM path system: with a linear
    kernel through ``Q = G G^T`` (O(n d)), which rounds otherwise than the n x n product, so the
    claim is agreement to 1e-12 of the terms' scale; with an RBF kernel the product itself."""
    from spl_bench.gaga.systems import make_system

    X, y = data("digits", 160)
    model = get_model("svm", C=1.0, kernel=kernel, gamma=0.02)
    sysm = make_system(model, get_sp("linear"), X, y)
    assert (sysm.G is not None) == (kernel == "linear")
    rng = np.random.default_rng(3)
    a = rng.uniform(0.0, 1.0, size=len(y)) * (rng.random(len(y)) < 0.6)
    ref = sysm.Q @ a
    scale = np.abs(sysm.Q).sum(axis=1).max()
    assert np.abs(sysm._Qa(a) - ref).max() <= 1e-12 * scale
    rows = rng.random(len(y)) < 0.3
    assert np.abs(sysm._Qa(a, rows) - ref[rows]).max() <= 1e-12 * scale
    params = Params(dual_coef=a, intercept=0.3, X_fit=X, y_fit=y, extra={"gamma": 0.02})
    ell = model.datafit.of_margin(1.0 - ref - 0.3 * y)
    expected = 0.5 * float(a @ sysm.Q @ a) + float(get_sp("linear").sp_objective(
        get_sp("linear").v_star(ell, 1.5), ell, 1.5).sum())
    assert sysm.objective(params, 1.5) == pytest.approx(expected, rel=1e-12)
