"""GAGA's model-independent core: the path tracker and what it stands on.

* :mod:`~spl_bench.gaga.core.tracker`: the tracker (``_Tracker``: the segment loop, progress
  reports, the path it returns) on one shared state, :mod:`~spl_bench.gaga.core.state`
  (``TrackState``: inputs, recorded points, events, counters), and its collaborators, one module
  each, which receive the state and the collaborators they call in their constructors:
  :mod:`~spl_bench.gaga.core.equation` (``PathEquation``: tangent, event functions, Newton
  corrector), :mod:`~spl_bench.gaga.core.record` (``Recorder``: the recorded points),
  :mod:`~spl_bench.gaga.core.warm` (``WarmStarts``: ACS warm starts),
  :mod:`~spl_bench.gaga.core.critical` (``CriticalPoints``: turning points, jump points, folds),
  :mod:`~spl_bench.gaga.core.events` (``EventLocator``: event location) and
  :mod:`~spl_bench.gaga.core.stepping` (``Stepper``: ODE, predictor-corrector and compiled
  segments);
* :mod:`~spl_bench.gaga.core.options` (``EngineOptions``) and :mod:`~spl_bench.gaga.core.columns`
  (``ColumnGroups``);
* :mod:`~spl_bench.gaga.core.continuation`: the predictor-corrector stepper (``method="PC"``);
* :mod:`~spl_bench.gaga.core.acs_skip`: skipping ACS iterations where its map is affine;
* :mod:`~spl_bench.gaga.core.system_base`: the interface of a path system (``PathSystem``) and
  the SP weights;
* the general factors of ``J``: :mod:`~spl_bench.gaga.core.factors` (LU with merged duplicates and
  a least-squares fallback), :mod:`~spl_bench.gaga.core.refined` (iterations on a nearby factor),
  :mod:`~spl_bench.gaga.core.structured` (Schur complements, tridiagonal and row-scaled factors),
  :mod:`~spl_bench.gaga.core.woodbury` (solves in the live samples' dimension) and the design
  products of :mod:`~spl_bench.gaga.core.gram` (with :mod:`~spl_bench.gaga.core.sparse_gram_nb`);
* :mod:`~spl_bench.gaga.core.path` (``AgePath``, the result), :mod:`~spl_bench.gaga.core.checkpoint`,
  :mod:`~spl_bench.gaga.core.plots`.

Imports run one way: :mod:`spl_bench.gaga.glm` and :mod:`spl_bench.gaga.svm` import this
package; it imports neither (``tests/test_layers.py``).
"""
