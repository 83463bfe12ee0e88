"""The event log's ``rank_deficiency`` of a linear-kernel SVM path (``margin_rank_deficiency``),
against the rank of the bordered margin block ``B = [[G_Z G_Z^T, y_Z], [y_Z^T, 0]]`` formed
explicitly.  Integer features of small rank, duplicated rows and labels in or out of the range of
``G_Z``: the ranks are exact and NumPy's tolerance does not decide them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.gaga.svm.svm_system import margin_rank_deficiency


def bordered_deficiency(Gz: np.ndarray, yz: np.ndarray) -> int:
    k = len(yz)
    B = np.zeros((k + 1, k + 1))
    B[:k, :k] = Gz @ Gz.T
    B[:k, k] = B[k, :k] = yz
    return k + 1 - int(np.linalg.matrix_rank(B))


@settings(max_examples=200, deadline=None)
@given(k=st.integers(0, 12), d=st.integers(1, 6), r=st.integers(1, 6), dup=st.integers(0, 4),
       seed=st.integers(0, 2**31 - 1))
def test_the_deficiency_equals_the_bordered_blocks(k, d, r, dup, seed):
    rng = np.random.default_rng(seed)
    G = rng.integers(-3, 4, size=(k, min(r, d))) @ rng.integers(-2, 3, size=(min(r, d), d))
    y = rng.choice([-1.0, 1.0], size=k)
    if k and dup:  # duplicated samples, the same label or the opposite one
        pick = rng.integers(0, k, size=dup)
        G, y = np.vstack([G, G[pick]]), np.concatenate([y, y[pick] * rng.choice([-1.0, 1.0], size=dup)])
    G = G.astype(float)
    assert margin_rank_deficiency(G, y) == bordered_deficiency(G, y)


def test_no_margin_sample_leaves_b_free_and_full_rank_margins_none():
    assert margin_rank_deficiency(np.zeros((0, 3)), np.zeros(0)) == 1 == bordered_deficiency(np.zeros((0, 3)),
                                                                                               np.zeros(0))
    G = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert margin_rank_deficiency(G, np.array([1.0, -1.0])) == 0
    # four margin samples on a line: [G_Z, y_Z] has rank 2, so (a_Z, b) is free in 4 - 2 = 2 directions
    G4, y4 = np.array([[1.0], [2.0], [-1.0], [1.0]]), np.array([1.0, 1.0, -1.0, 1.0])
    assert margin_rank_deficiency(G4, y4) == 2 == bordered_deficiency(G4, y4)
