"""Adding an SP-regularizer is one new module (issue 41): a walk-through on a toy regularizer.

The module ``TOY`` below is written to a temporary folder and imported, as a user's own module
would be; nothing else in the package changes.  It registers ``quadratic_decay``:

    f(v, lam) = 2 lam ((1 - v)^(3/2) - 1) / 3,        v*(ell, lam) = 1 - (ell / lam)^2 on M = (0, lam),

(``d/dv [v ell + f(v, lam)] = ell - lam sqrt(1 - v)`` vanishes there; ``f`` is convex in ``v``).
It gives its closed forms as numpy methods and as compiled kernels (``compiled``).  The tests
show GAGA's compiled lasso route taking its kernels, the reference route agreeing with it, a
twin without kernels being said to fall back, and MOSPL (which needs ``f`` linear in the age)
taking it by name.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from spl_bench.gaga import age_path
from spl_bench.gaga.core.options import EngineOptions
from spl_bench.methods.mospl import MOSPL
from spl_bench.sp import REGISTRY, get_sp
from test_gaga_engine import _diabetes, _lasso_kkt

TOY = '''
"""Quadratic-decay SP-regularizer: f(v, lam) = 2 lam ((1 - v)^(3/2) - 1) / 3, v* = 1 - (ell/lam)^2."""

import numpy as np
from numba import njit

from spl_bench.sp import REGISTRY
from spl_bench.sp.base import MIXED_KERNEL, THRESHOLDS_KERNEL, CompiledSP, SPRegularizer


@njit(MIXED_KERNEL)
def _mixed_nb(ell, lam, p):
    u = ell / lam
    return 1.0 - u * u, -2.0 * u / lam, 2.0 * u * u / lam


@njit(THRESHOLDS_KERNEL)
def _thresholds_nb(lam, p):
    return 0.0, lam


@REGISTRY.register("quadratic_decay")
class QuadraticDecaySP(SPRegularizer):
    clip_mixed_loss = False  # smooth across ell = 0
    compiled = CompiledSP(_mixed_nb, _thresholds_nb)

    def penalty(self, v, lam):
        v = np.asarray(v, dtype=float)
        return 2.0 * lam * ((1.0 - v) ** 1.5 - 1.0) / 3.0

    def thresholds(self, lam):
        return 0.0, float(lam)

    def _v_mixed(self, ell, lam):
        u = ell / lam
        return 1.0 - u * u

    def _dv_mixed(self, ell, lam):
        u = ell / lam
        return -2.0 * u / lam, 2.0 * u * u / lam
'''

LAM_RANGE = (0.3, 3.0)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy module, imported from its own file; unregistered afterwards."""
    path = tmp_path_factory.mktemp("user_sp") / "quadratic_decay.py"
    path.write_text(TOY)
    spec = importlib.util.spec_from_file_location("quadratic_decay", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["quadratic_decay"] = module
    spec.loader.exec_module(module)
    yield module
    REGISTRY._items.pop("quadratic_decay", None)
    sys.modules.pop("quadratic_decay", None)


@pytest.fixture(scope="module")
def data():
    return _diabetes(n=60, d=5, seed=1)


@pytest.fixture(scope="module")
def compiled_path(toy, data):
    X, y = data
    return age_path(X, y, model="lasso", sp="quadratic_decay", lam_range=LAM_RANGE,
                    options=EngineOptions(method="compiled"), alpha=0.01)


def test_the_toy_minimises_its_objective_and_its_kernels_are_its_formulas(toy):
    sp = get_sp("quadratic_decay")
    v = np.linspace(0.0, 1.0, 200_001)
    for lam in (0.4, 2.5):
        ell = np.array([0.0, 0.1, 0.37, 0.9, 1.3, 2.4, 3.0]) * lam
        brute = v[np.argmin(v[None, :] * ell[:, None] + sp.penalty(v, lam)[None, :], axis=1)]
        assert np.allclose(sp.v_star(ell, lam), brute, atol=1e-4)  # grid step 5e-6; the objective is flat near v = 1
        (mixed, thresholds), p = sp.compiled_kernels()
        assert thresholds(lam, p) == sp.thresholds(lam)
        inner = ell[(ell > 0) & (ell < lam)]
        kern = np.array([mixed(e, lam, p) for e in inner])
        d_ell, d_lam = sp.dv_mixed(inner, lam)
        assert np.allclose(kern[:, 0], sp.v_mixed(inner, lam), rtol=1e-14, atol=0.0)
        assert np.allclose(kern[:, 1], d_ell, rtol=1e-14, atol=0.0)
        assert np.allclose(kern[:, 2], d_lam, rtol=1e-14, atol=0.0)


def test_the_compiled_route_takes_the_toys_kernels(compiled_path, toy, data):
    X, y = data
    meta = compiled_path.meta
    assert meta["n_compiled_calls"] > 0 and "compiled_route" not in meta
    assert len(compiled_path.events) >= 3
    assert _lasso_kkt(compiled_path, X, y, 0.01, get_sp("quadratic_decay")).max() <= 1e-6


def test_the_reference_route_agrees_with_the_compiled_one(compiled_path, toy, data):
    X, y = data
    ref = age_path(X, y, model="lasso", sp="quadratic_decay", lam_range=LAM_RANGE, alpha=0.01,
                   options=EngineOptions(method="auto"))
    assert ref.meta["n_compiled_calls"] == 0
    a = [e["lam"] for e in compiled_path.events]
    b = [e["lam"] for e in ref.events]
    assert len(a) == len(b) and np.allclose(a, b, rtol=1e-6, atol=0.0)
    jumps = [e["lam"] for e in ref.events if e["kind"] == "jump"]
    lams = np.array([t for t in np.linspace(0.35, 2.95, 27) if all(abs(t - j) > 1e-3 for j in jumps)])
    assert np.allclose(compiled_path.at(lams)[0], ref.at(lams)[0], atol=1e-7)


def test_a_regularizer_without_kernels_is_said_to_take_the_reference_route(compiled_path, toy, data):
    X, y = data

    class NoKernels(toy.QuadraticDecaySP):
        compiled = None

    with pytest.warns(UserWarning, match="gives no compiled kernels"):
        path = age_path(X, y, model="lasso", sp=NoKernels(), lam_range=LAM_RANGE,
                        options=EngineOptions(method="compiled"), alpha=0.01)
    assert path.meta["n_compiled_calls"] == 0 and "no compiled kernels" in path.meta["compiled_route"]
    assert np.allclose([e["lam"] for e in path.events], [e["lam"] for e in compiled_path.events], rtol=1e-6)


def test_mospl_takes_the_toy_by_name(toy, data):
    X, y = data
    est = MOSPL(model="lasso", model_params={"alpha": 0.02}, sp="quadratic_decay", pop_size=12, n_gen=15,
                seed=3).fit(X, y)
    assert isinstance(est.sp_, toy.QuadraticDecaySP)
    V = np.asarray(est.front_v_)
    assert np.any((V > 0) & (V < 1))  # weights from the toy's M, not only 0 or 1
    for k, params in enumerate(est.candidate_models_):
        if V[k].any():
            assert est.model_.kkt_violation(params, X, y, V[k]) <= 1e-6
