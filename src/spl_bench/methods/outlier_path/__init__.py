"""Outlier-path homotopy for the robust SVM (Suzumura et al., ICML 2014) and its baselines.

* :mod:`.path` -- OP-theta / OP-s: C-step, D-step, breakpoints and jumps (the public API);
  its engine in :mod:`.state` (point states, the path's variables), :mod:`.linalg` (the active
  system (11)), :mod:`.events` (the ratio test), :mod:`.engine` (the tracer), :mod:`.dstep`
  (appendix C) and :mod:`.errors`;
* :mod:`.cccp` -- CCCP-theta / CCCP-s with an SMO solver for the shifted-box SVM dual;
* :mod:`.estimators` -- :class:`OutlierPath`, :class:`CCCP`, :class:`CSVM` for the runner.
"""

from spl_bench.methods.outlier_path.errors import DegenerateStepError
from spl_bench.methods.outlier_path.estimators import CCCP, CSVM, OutlierPath
from spl_bench.methods.outlier_path.path import (
    OutlierPathResult,
    outlier_path_s,
    outlier_path_theta,
    ramp_loss,
    rsvm_objective,
)

__all__ = [
    "CCCP",
    "CSVM",
    "DegenerateStepError",
    "OutlierPath",
    "OutlierPathResult",
    "outlier_path_s",
    "outlier_path_theta",
    "ramp_loss",
    "rsvm_objective",
]
