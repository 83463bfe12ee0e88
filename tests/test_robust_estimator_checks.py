"""scikit-learn's ``check_estimator`` on every robust baseline.

Every check must pass.  The one check scikit-learn itself skips is
``check_array_api_input``: the estimators compute with NumPy, libsvm (``SVC``)
or numba (skglm) and do not declare array-API support.  ``RobustSVC`` declares
``multi_class = False`` in its tags (Biggio et al.'s correction is binary), so
scikit-learn runs its binary-only checks instead of the multiclass ones.
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_estimator

from spl_bench.methods.robust.huber_lasso import HuberLasso
from spl_bench.methods.robust.lssvm import LSSVMRegressor, ReLSSVMRegressor, RLSSVMRegressor
from spl_bench.methods.robust.robust_svm import RobustSVC


@pytest.mark.parametrize(
    "estimator",
    [HuberLasso(), HuberLasso(solver="lbfgs"), LSSVMRegressor(), RLSSVMRegressor(), ReLSSVMRegressor(), RobustSVC()],
    ids=lambda e: f"{type(e).__name__}-{getattr(e, 'solver', '')}",
)
def test_check_estimator(estimator: BaseEstimator) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], repr(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    skipped = [r["check_name"] for r in results if r["status"] == "skipped"]
    assert not failed
    assert set(skipped) <= {"check_array_api_input"}, f"unexpected skipped checks: {skipped}"
    assert len(results) > 40
