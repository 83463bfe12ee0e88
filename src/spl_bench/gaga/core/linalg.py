"""Linear algebra of the path systems (GAGA appendix A.2): the names of five modules, kept importable here.

* :mod:`~spl_bench.gaga.core.factors`: ``Factor`` (LU with merged duplicates and a minimum-norm
  fallback), its LU helpers (``_lu``, ``_lu_sign``, ``groups_hint``), ``solve_linear``,
  ``det_sign`` and the factor interface ``AnyFactor``;
* :mod:`~spl_bench.gaga.core.refined`: solves by iterations on a nearby factor
  (``RefinedFactor``, ``CholeskyFactor``, ``pcg``);
* :mod:`~spl_bench.gaga.core.structured`: Schur-complement, tridiagonal and row-scaled factors
  (``SchurBlocks``, ``SchurFactor``, ``Tridiagonal``, ``ShiftedTridiagonal``, ``RowScaled``,
  ``uniform_value``, ``UNIFORM_REDUCE_AT``);
* :mod:`~spl_bench.gaga.core.woodbury`: ``WoodburyFactor`` (solves with a diagonal plus a weighted
  Gram matrix in the samples' dimension);
* :mod:`~spl_bench.gaga.core.gram`: products with the design (``weighted_gram``,
  ``RankOnePlusSparse``).

The SVM's KKT factors, built on these, are in :mod:`spl_bench.gaga.svm.kkt`.
"""

from __future__ import annotations

from spl_bench.gaga.core.factors import AnyFactor, Factor, _lu, _lu_sign, det_sign, groups_hint, solve_linear
from spl_bench.gaga.core.gram import RankOnePlusSparse, weighted_gram
from spl_bench.gaga.core.refined import CholeskyFactor, RefinedFactor, pcg
from spl_bench.gaga.core.structured import (
    UNIFORM_REDUCE_AT,
    RowScaled,
    SchurBlocks,
    SchurFactor,
    ShiftedTridiagonal,
    Tridiagonal,
    uniform_value,
)
from spl_bench.gaga.core.woodbury import WoodburyFactor

__all__ = [
    "UNIFORM_REDUCE_AT",
    "AnyFactor",
    "CholeskyFactor",
    "Factor",
    "RankOnePlusSparse",
    "RefinedFactor",
    "RowScaled",
    "SchurBlocks",
    "SchurFactor",
    "ShiftedTridiagonal",
    "Tridiagonal",
    "WoodburyFactor",
    "_lu",
    "_lu_sign",
    "det_sign",
    "groups_hint",
    "pcg",
    "solve_linear",
    "uniform_value",
    "weighted_gram",
]
