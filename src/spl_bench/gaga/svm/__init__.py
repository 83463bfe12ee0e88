"""GAGA's kernel SVM (the dual path).

* :mod:`~spl_bench.gaga.svm.svm_system`: ``SVMSystem``, the path system, and ``svm_kkt``;
  its Jacobian's factor routes in :mod:`~spl_bench.gaga.svm.svm_factor`, duplicated margin
  samples merged by :mod:`~spl_bench.gaga.svm.reps`;
* :mod:`~spl_bench.gaga.svm.kkt`: the KKT factors of its margin block;
* :mod:`~spl_bench.gaga.svm.inner`: ``WeightedSVMDual``, the exact v-weighted dual fit of the
  ACS steps (HiGHS and libsvm fallbacks), with :mod:`~spl_bench.gaga.svm.lowrank_dual` (and
  :mod:`~spl_bench.gaga.svm.lowrank_dual_nb`) for a linear kernel of low rank;
* :mod:`~spl_bench.gaga.svm.acs_skip`: the SVM's affine ACS state for
  :class:`~spl_bench.gaga.core.acs_skip.AffineSkip`.

Imports :mod:`spl_bench.gaga.core`, never :mod:`spl_bench.gaga.glm`.
"""
