"""GAGA's model-independent core: the path tracker and what it stands on.

* :mod:`~spl_bench.gaga.core.tracker`: the tracker (``_Tracker``: ODE stepping, Newton corrector,
  event location, warm starts), ``EngineOptions`` and ``ColumnGroups``;
* :mod:`~spl_bench.gaga.core.continuation`: the predictor-corrector stepper (``method="PC"``);
* :mod:`~spl_bench.gaga.core.acs_skip`: skipping ACS iterations where its map is affine;
* :mod:`~spl_bench.gaga.core.system_base`: the interface of a path system (``PathSystem``) and
  the SP weights;
* :mod:`~spl_bench.gaga.core.linalg` (with :mod:`~spl_bench.gaga.core.sparse_gram_nb`): the
  general factors of ``J``;
* :mod:`~spl_bench.gaga.core.path` (``AgePath``, the result), :mod:`~spl_bench.gaga.core.checkpoint`,
  :mod:`~spl_bench.gaga.core.plots`.

Imports run one way: :mod:`spl_bench.gaga.glm` and :mod:`spl_bench.gaga.svm` import this
package; it imports neither (``tests/test_layers.py``).
"""
