"""SP-regularizers: v* minimises v ell + f(v, lam) on [0, 1]; derivatives; partitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from spl_bench.errors import ConfigError
from spl_bench.sp import EASY, HARD, MIXED, REGISTRY, get_sp

REGS = [
    ("hard", {}),
    ("linear", {}),
    ("mixture", {"gamma": 0.5}),
    ("mixture", {"gamma": 2.0}),
    ("polynomial", {"t": 1.35}),
    ("polynomial", {"t": 2.0}),
]
losses = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
ages = st.floats(min_value=0.05, max_value=20.0, allow_nan=False)


def brute_force_min(sp, ell: float, lam: float) -> float:
    """Minimum of v ell + f(v, lam) over [0, 1] by a bounded scalar search and a grid."""
    obj = lambda v: float(sp.sp_objective(np.array([v]), np.array([ell]), lam)[0])  # noqa: E731
    grid = np.linspace(0.0, 1.0, 2001)
    best = float(sp.sp_objective(grid, np.full_like(grid, ell), lam).min())
    res = minimize_scalar(obj, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
    return min(best, float(res.fun), obj(0.0), obj(1.0))


@pytest.mark.parametrize(("name", "params"), REGS)
@settings(max_examples=60, deadline=None)
@given(ell=losses, lam=ages)
def test_v_star_minimises_sp_objective(name, params, ell, lam):
    sp = get_sp(name, **params)
    v = sp.v_star(np.array([ell]), lam)
    assert 0.0 <= v[0] <= 1.0
    attained = float(sp.sp_objective(v, np.array([ell]), lam)[0])
    assert attained <= brute_force_min(sp, ell, lam) + 1e-9 * (1 + abs(attained))


@settings(max_examples=60, deadline=None)
@given(ell=losses, lam=st.floats(min_value=0.02, max_value=0.98))
def test_log_v_star_minimises(ell, lam):
    sp = get_sp("log")
    v = sp.v_star(np.array([ell]), lam)
    attained = float(sp.sp_objective(v, np.array([ell]), lam)[0])
    assert attained <= brute_force_min(sp, ell, lam) + 1e-9 * (1 + abs(attained))


@pytest.mark.parametrize(("name", "params", "lam"), [*[(n, p, 2.0) for n, p in REGS if n != "hard"], ("log", {}, 0.6)])
def test_derivatives_match_finite_differences(name, params, lam):
    sp = get_sp(name, **params)
    lo, hi = sp.thresholds(lam)
    ell = np.linspace(lo, hi, 23)[1:-1]  # strictly inside M
    assert np.all(sp.partition(ell, lam) == MIXED)
    d_ell, d_lam = sp.dv_star(ell, lam)
    h = 1e-6
    fd_ell = (sp.v_star(ell + h, lam) - sp.v_star(ell - h, lam)) / (2 * h)
    fd_lam = (sp.v_star(ell, lam + h) - sp.v_star(ell, lam - h)) / (2 * h)
    np.testing.assert_allclose(d_ell, fd_ell, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(d_lam, fd_lam, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(("name", "params"), REGS)
def test_partition_agrees_with_v_star(name, params):
    sp = get_sp(name, **params)
    ell = np.linspace(0.0, 30.0, 3001)
    for lam in (0.3, 1.0, 4.0):
        part, v = sp.partition(ell, lam), sp.v_star(ell, lam)
        assert np.all(v[part == EASY] == 1.0)
        assert np.all(v[part == HARD] == 0.0)
        assert np.all((v[part == MIXED] > 0) & (v[part == MIXED] < 1))
        # Definition 2: v* non-increasing in the loss, non-decreasing in the age
        assert np.all(np.diff(v) <= 1e-12)
        assert np.all(sp.v_star(ell, lam * 1.5) >= v - 1e-12)


def test_closed_forms():
    ell = np.array([0.0, 0.04, 0.25, 1.0, 4.0])
    np.testing.assert_allclose(get_sp("hard").v_star(ell, 1.0), [1, 1, 1, 0, 0])
    np.testing.assert_allclose(get_sp("linear").v_star(ell, 2.0), [1, 0.98, 0.875, 0.5, 0])
    g, lam = 0.5, 2.0  # lo = (1/2.5)^2 = 0.16, hi = 4
    expect = [1, 1, g * (1 / 0.5 - 0.5), g * (1 - 0.5), 0]
    np.testing.assert_allclose(get_sp("mixture", gamma=g).v_star(ell, lam), expect)


def test_bad_parameters_are_clear():
    with pytest.raises(ConfigError, match="gamma"):
        get_sp("mixture", gamma=-1)
    with pytest.raises(ConfigError, match="0 < lambda < 1"):
        get_sp("log").v_star([0.1], 2.0)
    with pytest.raises(ConfigError, match="valid SP-regularizers"):
        get_sp("nope")
    assert {"hard", "linear", "mixture", "log", "polynomial"} <= set(REGISTRY.names())
    with pytest.raises(FloatingPointError):
        get_sp("linear").v_star([np.nan], 1.0)


@pytest.mark.parametrize("name", ["linear", "log", "polynomial"])
@settings(max_examples=20, deadline=None)
@given(lam=st.floats(0.1, 0.9), eps=st.floats(1e-6, 1e-3))
def test_closed_forms_declared_smooth_across_zero_are(name, lam, eps):
    """``clip_mixed_loss = False`` lets the path engine continue v* just below ell = 0: the closed
    form must be finite there and its derivative must match central differences across 0."""
    sp = get_sp(name)
    assert sp.clip_mixed_loss is False
    ell = np.array([-eps, 0.0, eps])
    v = sp._v_mixed(ell, lam)
    dv, _ = sp._dv_mixed(np.array([0.0]), lam)
    assert np.isfinite(v).all()
    assert (v[2] - v[0]) / (2 * eps) == pytest.approx(float(dv[0]), rel=1e-2, abs=1e-9)


def test_the_mixture_form_needs_positive_losses():
    assert get_sp("mixture").clip_mixed_loss is True


@pytest.mark.parametrize(("name", "params"), REGS)
def test_v_star_on_a_population_of_loss_vectors(name, params):
    """MOSPL's use: a (population x n) array with zero and infinite losses gives, row by row, the
    values of the scalar calls, with no warning from the mixed formula outside M."""
    import warnings

    sp = get_sp(name, **params)
    rng = np.random.default_rng(0)
    L = rng.exponential(2.0, size=(5, 40))
    L[0, :3] = 0.0
    L[1, :2] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        V = sp.v_star(L, 1.3)
    one = np.array([[sp.v_star(np.array([x]), 1.3)[0] for x in row] for row in L])
    assert V.shape == L.shape and np.array_equal(V, one)
    assert np.all(V[1, :2] == 0.0) and np.all(V[0, :3] == 1.0)


# Losses for v_star_scaled: exact zeros, the thresholds at age 1 and their neighbours (E / M / D
# boundaries), ordinary and huge values, infinity.
_EDGES = [0.0, 1.0, np.nextafter(1.0, 0.0), np.nextafter(1.0, 2.0), 0.25, 1e-300, 1e300, np.inf]
scaled_losses = st.lists(
    st.one_of(st.sampled_from(_EDGES), st.floats(min_value=0.0, max_value=1e6, allow_nan=False)),
    min_size=1, max_size=30,
)


@pytest.mark.parametrize(("name", "params"), REGS + [("mixture", {"gamma": 1e-3})])
@settings(max_examples=60, deadline=None)
@given(rows=st.lists(scaled_losses, min_size=1, max_size=4), scales=st.lists(
    st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=1e3)), min_size=4, max_size=4))
def test_v_star_scaled_is_v_star_of_the_scaled_losses_to_the_bit(name, params, rows, scales):
    """MOSPL's weights ``v*(z_p ell_pi, 1)``: the compiled pass (hard, linear, mixture, whose kernels
    are :attr:`CompiledSP.exact`) repeats the numpy formula operation for operation, so the claim
    is equality of the bits (MOSPL compares objectives exactly); the other regularizers take
    ``v_star`` itself.  Thresholds of the mixture with gamma 0.5 and 2: 1/9 and 4/9."""
    sp = get_sp(name, **params)
    n = min(len(r) for r in rows)
    L = np.array([r[:n] for r in rows], dtype=float)
    z = np.array(scales[: len(rows)], dtype=float)
    z[(z == 0.0) & np.isinf(L).any(axis=1)] = 1.0  # 0 * inf is a NaN loss, tested below
    expected = sp.v_star(z[:, None] * L, 1.0)
    got = sp.v_star_scaled(L, z)
    assert got.shape == L.shape
    np.testing.assert_array_equal(got, expected)


def test_v_star_scaled_takes_the_compiled_pass_only_where_it_is_exact():
    assert {n for n in ("hard", "linear", "mixture", "polynomial", "log")
            if type(get_sp(n)).compiled.exact} == {"hard", "linear", "mixture"}


@pytest.mark.parametrize("name", ["linear", "mixture", "polynomial"])
def test_v_star_scaled_refuses_a_nan_loss_as_v_star_does(name):
    sp = get_sp(name)
    L = np.array([[0.5, np.nan, 2.0], [0.1, 0.2, 0.3]])
    with pytest.raises(FloatingPointError, match="NaN loss"):
        sp.v_star_scaled(L, np.array([1.0, 1.0]))
    with pytest.raises(FloatingPointError, match="NaN loss"), np.errstate(invalid="ignore"):  # 0 * inf
        sp.v_star_scaled(np.array([[np.inf, 0.1]]), np.array([0.0]))
