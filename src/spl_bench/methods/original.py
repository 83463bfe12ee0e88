"""Original: the plain model without SPL (every sample weighted 1).

GAGA section 5, baseline 1: scikit-learn's Lasso / SVC / LogisticRegression
with the same ``alpha`` / ``C`` / kernel as the SPL methods.
"""

from __future__ import annotations

import numpy as np

from spl_bench.methods.base import Array, SPLEstimator


class Original(SPLEstimator):
    """One candidate: the model fitted with ``v = 1``.  ``sp`` is ignored."""

    def _fit(self, X: Array, y: Array) -> None:
        params = self.model_.fit_weighted(X, y, np.ones(len(y)))
        self.candidate_models_ = [params]
        self.candidate_params_ = [{}]
        self.kkt_ = self.model_.kkt_violation(params, X, y, np.ones(len(y)))
