"""GAGA's model-independent core: the path tracker and what it stands on.

* :mod:`~spl_bench.gaga.core.tracker`: the tracker (``_Tracker``: its state, the segment loop, the
  recorded points), composed of mixins, one module each: :mod:`~spl_bench.gaga.core.equation`
  (tangent, event functions, Newton corrector), :mod:`~spl_bench.gaga.core.stepping` (ODE and
  compiled segments), :mod:`~spl_bench.gaga.core.events` (event location),
  :mod:`~spl_bench.gaga.core.critical` (turning points, jump points, folds) and
  :mod:`~spl_bench.gaga.core.warm` (ACS warm starts);
* :mod:`~spl_bench.gaga.core.options` (``EngineOptions``) and :mod:`~spl_bench.gaga.core.columns`
  (``ColumnGroups``), both also importable from the tracker's module;
* :mod:`~spl_bench.gaga.core.continuation`: the predictor-corrector stepper (``method="PC"``);
* :mod:`~spl_bench.gaga.core.acs_skip`: skipping ACS iterations where its map is affine;
* :mod:`~spl_bench.gaga.core.system_base`: the interface of a path system (``PathSystem``) and
  the SP weights;
* the general factors of ``J``: :mod:`~spl_bench.gaga.core.factors` (LU with merged duplicates and
  a least-squares fallback), :mod:`~spl_bench.gaga.core.refined` (iterations on a nearby factor),
  :mod:`~spl_bench.gaga.core.structured` (Schur complements, tridiagonal and row-scaled factors) and
  the design products of :mod:`~spl_bench.gaga.core.gram` (with
  :mod:`~spl_bench.gaga.core.sparse_gram_nb`); :mod:`~spl_bench.gaga.core.linalg` re-exports them;
* :mod:`~spl_bench.gaga.core.path` (``AgePath``, the result), :mod:`~spl_bench.gaga.core.checkpoint`,
  :mod:`~spl_bench.gaga.core.plots`.

Imports run one way: :mod:`spl_bench.gaga.glm` and :mod:`spl_bench.gaga.svm` import this
package; it imports neither (``tests/test_layers.py``).
"""
