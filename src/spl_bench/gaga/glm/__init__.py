"""GAGA's GLM models (a smooth datafit and a penalty: lasso, logistic, huber).

* :mod:`~spl_bench.gaga.glm.glm_system`: ``GLMSystem``, the path system, and ``GLMDesign``;
* :mod:`~spl_bench.gaga.glm.inner` (with :mod:`~spl_bench.gaga.glm.inner_nb`): the exact
  v-weighted lasso fit of the ACS steps;
* :mod:`~spl_bench.gaga.glm.segment_nb`: the compiled segment follower of the lasso
  (``EngineOptions.method="compiled"``).

Imports :mod:`spl_bench.gaga.core`, never :mod:`spl_bench.gaga.svm`.
"""
