"""The compiled sample events of the SVM path (:mod:`spl_bench.gaga.svm.events_nb`).

They replaced NumPy expressions of the same operations in the same order, so the path's rows do
not move: the first test holds the kernel to those expressions bit for bit; the second checks the
per-set distances against their definitions (GAGA Theorem 2's partition) to rounding."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from spl_bench.gaga.svm.events_nb import sample_events
from spl_bench.gaga.svm.svm_system import SVM_N, SVM_PD, SVM_PE, SVM_PM, SVM_Z, SVMSystem

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=True)


def _numpy_events(g, a, c, lo, hi, C):
    """The NumPy expressions the kernel replaced (SVMSystem._sample_events before 2026-11-29)."""
    aC = a / C
    k1, k2 = SVMSystem._H1[c], SVMSystem._H2[c]
    h1 = k1[:, 0] * g + k1[:, 1] * aC + (k1[:, 3] * lo + k1[:, 4] * hi) / C
    h2 = k2[:, 0] * g + k2[:, 1] * aC + k2[:, 2] + (k2[:, 3] * lo + k2[:, 4] * hi) / C
    h2[(c == SVM_N) | (c == SVM_PD)] = np.inf
    return h1, h2


def _kernel(g, a, c, lo, hi, C):
    h1, h2 = np.empty(g.size), np.empty(g.size)
    sample_events(g, a, c, SVMSystem._H1, SVMSystem._H2, lo, hi, C, SVM_N, SVM_PD, h1, h2)
    return h1, h2


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 40), data=st.data(), lo=finite, width=st.floats(0, 1e6), C=st.floats(1e-6, 1e6),
       hi_inf=st.booleans())
def test_the_kernel_gives_the_numpy_expressions_bits(n, data, lo, width, C, hi_inf):
    g = data.draw(arrays(np.float64, n, elements=finite))
    a = data.draw(arrays(np.float64, n, elements=st.floats(0, 1e6)))
    c = data.draw(arrays(np.int8, n, elements=st.integers(0, 4)))
    hi = np.inf if hi_inf else lo + width  # the hard regularizer's hi can be infinite
    with np.errstate(invalid="ignore"):
        want = _numpy_events(g, a, c, lo, hi, C)
    got = _kernel(g, a, c, lo, hi, C)
    for w, x in zip(want, got, strict=True):  # the same operations in the same order: equal bits
        np.testing.assert_array_equal(x.view(np.int64), w.view(np.int64))


def test_the_distances_are_those_of_each_set():
    rng = np.random.default_rng(3)
    n, C, lo, hi = 500, 0.7, 0.4, 1.9
    g, a = rng.normal(size=n), rng.uniform(0, C, n)
    c = rng.integers(0, 5, n).astype(np.int8)
    h1, h2 = _kernel(g, a, c, lo, hi, C)
    want1 = np.select([c == SVM_N, c == SVM_Z, c == SVM_PE, c == SVM_PM, c == SVM_PD],
                      [-g, a / C, g, g - lo / C, g - hi / C])
    want2 = np.select([c == SVM_Z, c == SVM_PE, c == SVM_PM], [1 - a / C, lo / C - g, hi / C - g], np.inf)
    np.testing.assert_allclose(h1, want1, rtol=0, atol=1e-14)
    np.testing.assert_allclose(h2, want2, rtol=0, atol=1e-14)
    assert np.isinf(h2[(c == SVM_N) | (c == SVM_PD)]).all()
