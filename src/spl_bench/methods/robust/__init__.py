"""Robust baselines outside SPL (GAGA appendix D.6, Tables 7 and 8).

* :mod:`.huber_lasso` -- Huber-loss Lasso, the Huber special case of the extended
  Lasso of Nasrabadi et al. (GAGA ref [51]), solved by skglm;
* :mod:`.lssvm` -- plain LS-SVM regression and the robust variants RLSSVM (GAGA
  ref [48]) and Re-LSSVM (GAGA ref [49]);
* :mod:`.robust_svm` -- the label-noise kernel correction of Biggio et al. 2011
  (GAGA ref [50]).

Each module has a scikit-learn estimator usable on its own and a thin
:class:`~spl_bench.methods.base.SPLEstimator` wrapper whose candidates are a
hyper-parameter grid, so the protocol's validation selection is the grid search
of appendix D.6.  See ``docs/robust_baselines.md``.
"""
