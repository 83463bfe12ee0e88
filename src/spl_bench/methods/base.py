"""Base class of every method: a scikit-learn estimator that fits a *set of candidates*.

An SPL method produces many models, one per age ``lam`` (a grid for ACS, the
knots and dense output of an age-path for GAGA, Pareto points for MOSPL).  The
evaluation protocol chooses one of them on a validation split, so every method
exposes the same small interface:

``fit(X, y)``
    fit all candidates on the training rows;
``candidate_params_``
    a list with one dict per candidate (for example ``{"lam": 0.6}``);
``predict_candidates(X)``
    a ``(k, n)`` array, the predictions of all ``k`` candidates;
``select(i)``
    make candidate ``i`` the one used by ``predict`` and ``score``;
``run_info()``
    extra numbers for the results file (restarts, critical points, ...).

By default the selected candidate is the last one (the largest age).

Input checks follow scikit-learn's conventions, here for every method: ``predict``,
``score`` and the candidate predictions before ``fit`` raise
:class:`~sklearn.exceptions.NotFittedError`; a different number of features at predict
time, fewer than 2 samples, a single class for a classifier and non-numeric labels raise a
:class:`~spl_bench.errors.DataError` (a ``ValueError``) that says so.  Subclasses that
override ``predict_candidates`` or ``decision_candidates`` get the same checks (see
``__init_subclass__``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import ClassifierTags, RegressorTags, Tags
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from spl_bench.checks import check_finite_X  # defined below the layers (gaga uses it too); importable from here
from spl_bench.errors import ConfigError, DataError, SplBenchError
from spl_bench.models import Model, Params, get_model
from spl_bench.progress import ProgressHook
from spl_bench.sp import SPRegularizer, get_sp

Array = NDArray[np.float64]


def _as_data_error(call: Callable[[], Any]) -> Any:
    """Run a scikit-learn validation; its ValueError becomes a :class:`DataError`.

    The message is kept (scikit-learn's own wording: "Reshape your data", "X has 3 features,
    but ... is expecting 5"); a DataError is still a ``ValueError``, and the CLI prints it as
    one line.  TypeErrors (sparse input, objects that are not numbers) pass unchanged, as
    scikit-learn raises them.
    """
    try:
        return call()
    except SplBenchError:
        raise
    except ValueError as exc:
        raise DataError(str(exc)) from None


def _checked_input(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a subclass's ``predict_candidates`` / ``decision_candidates`` with the predict checks."""

    @functools.wraps(method)
    def wrapper(self: SPLEstimator, X: ArrayLike, *args: Any, **kwargs: Any) -> Any:
        return method(self, self._check_predict_X(X), *args, **kwargs)

    wrapper._spl_checked = True  # type: ignore[attr-defined]
    return wrapper


class SPLEstimator(BaseEstimator):
    """Common base: model and SP-regularizer by name, candidate bookkeeping.

    Parameters
    ----------
    model : str
        Model name (``lasso``, ``logistic``, ``svm``; see :mod:`spl_bench.models`).
    model_params : dict, optional
        Hyper-parameters of the model (``alpha``; ``C``; ``C``, ``kernel``, ``gamma``).
    sp : str
        SP-regularizer name (``hard``, ``linear``, ``mixture``, ``log``, ``polynomial``).
    sp_params : dict, optional
        Hyper-parameters of the SP-regularizer (``gamma`` for mixture).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.model_params = model_params
        self.sp = sp
        self.sp_params = sp_params

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("predict_candidates", "decision_candidates"):
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_spl_checked", False):
                setattr(cls, name, _checked_input(method))

    # -------------------------------------------------------------- progress
    def set_progress(self, hook: ProgressHook | None) -> SPLEstimator:
        """Report the progress of later fits to ``hook(event, **fields)`` (None: no reports).

        Not a constructor parameter: it changes neither the fit nor ``get_params``, and
        :func:`sklearn.base.clone` does not copy it.  Events: :mod:`spl_bench.progress`.
        """
        self._progress_hook = hook
        return self

    def _progress(self, event: str, **fields: Any) -> None:
        """Call the progress hook, if one is set."""
        hook = getattr(self, "_progress_hook", None)
        if hook is not None:
            hook(event, **fields)

    def _task(self) -> str | None:
        try:
            return self._make_model().task
        except Exception:  # an invalid model name or parameter: reported by fit
            return None

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        task = self._task()
        if task == "regression":
            tags.estimator_type = "regressor"
            tags.regressor_tags = RegressorTags()
        elif task == "classification":
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags(multi_class=False)
        tags.target_tags.required = True
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "selected_")

    # ---------------------------------------------------------- input checks
    def _check_fit_data(self, X: ArrayLike, y: ArrayLike, model: Model) -> tuple[Array, Array]:
        """``X`` (2-D, finite, >= 2 rows) and ``y`` (1-D, numeric, a usable target for ``model``)."""
        X = _as_data_error(lambda: validate_data(self, X, reset=True, dtype=np.float64,
                                                  ensure_all_finite=False, ensure_min_samples=2))  # fmt: skip
        X = check_finite_X(X)
        if y is None:
            raise DataError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        y_arr = _as_data_error(lambda: column_or_1d(np.asarray(y), warn=True))
        if y_arr.dtype.kind not in "biuf":
            try:
                y_arr = y_arr.astype(float)
            except (TypeError, ValueError):
                examples = ", ".join(repr(v) for v in list(dict.fromkeys(y_arr.tolist()))[:3])
                need = "labels -1 and +1" if model.task == "classification" else "numbers"
                raise DataError(
                    f"y has non-numeric values ({examples}); model {model.name!r} needs {need}: "
                    "encode them first, e.g. np.where(y == 'yes', 1, -1)"
                ) from None
        if y_arr.shape[0] != X.shape[0]:
            raise DataError(f"X has {X.shape[0]} rows but y has {y_arr.shape[0]}")
        if not np.all(np.isfinite(y_arr)):
            raise DataError("y contains NaN or infinite values")
        if model.task == "classification":
            kind = type_of_target(y_arr)
            if kind == "continuous":
                raise DataError(f"Unknown label type: continuous y for model {model.name!r}, a classifier; "
                                "it needs labels -1 and +1 (use a regression model, e.g. model=lasso)")  # fmt: skip
            if kind == "multiclass":
                n_classes = np.unique(y_arr).size
                raise DataError(f"Only binary classification is supported. The type of the target is multiclass "
                                f"({n_classes} classes); model {model.name!r} needs labels -1 and +1")  # fmt: skip
        y_arr = model.check_y(y_arr)
        if model.task == "classification":
            labels = np.unique(y_arr)
            if labels.size < 2:
                raise DataError(
                    f"y has only one class ({labels[0]:+g}); model {model.name!r} is a classifier and needs "
                    "samples of both classes -1 and +1"
                )
        return X, y_arr

    def _check_predict_X(self, X: ArrayLike) -> Array:
        """``X`` for prediction: fitted estimator, same number of features as at fit, finite."""
        check_is_fitted(self)
        X = _as_data_error(lambda: validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=False))
        return check_finite_X(X)

    # ----------------------------------------------------------- components
    def _make_model(self) -> Model:
        return get_model(self.model, **(self.model_params or {}))

    def _make_sp(self) -> SPRegularizer:
        return get_sp(self.sp, **(self.sp_params or {}))

    # ------------------------------------------------------------------ fit
    def fit(self, X: ArrayLike, y: ArrayLike) -> SPLEstimator:
        if hasattr(self, "selected_"):
            del self.selected_  # a refit that fails must not leave the old fit looking valid
        model = self._make_model()
        X, y = self._check_fit_data(X, y, model)
        self.model_ = model
        self.task_ = model.task
        self.candidate_params_: list[dict[str, Any]] = []
        self._fit(X, y)
        if not self.candidate_params_:
            raise RuntimeError(f"{type(self).__name__} produced no candidate model")
        self.selected_ = len(self.candidate_params_) - 1
        return self

    def _fit(self, X: Array, y: Array) -> None:
        """Fill ``candidate_params_`` and ``candidate_models_`` (list of :class:`Params`)."""
        raise NotImplementedError

    # ------------------------------------------------------------ candidates
    def predict_candidates(self, X: ArrayLike) -> Array:
        """Predictions of every candidate, shape ``(k, n_samples)``."""
        X = self._check_predict_X(X)
        preds = self.model_.predict_many(list(self.candidate_models_), X)
        if np.isnan(preds).any():
            raise FloatingPointError(f"{type(self).__name__} predicted NaN")
        return preds

    def select(self, index: int) -> SPLEstimator:
        """Use candidate ``index`` for :meth:`predict` and :meth:`score`."""
        check_is_fitted(self)
        if not 0 <= index < len(self.candidate_params_):
            raise IndexError(f"candidate {index} out of range 0..{len(self.candidate_params_) - 1}")
        self.selected_ = int(index)
        return self

    @property
    def selected_params_(self) -> dict[str, Any]:
        return self.candidate_params_[self.selected_]

    def run_info(self) -> dict[str, Any]:
        """Method-specific numbers for the results file (override to add more)."""
        info: dict[str, Any] = {"n_candidates": len(self.candidate_params_)}
        if hasattr(self, "candidate_set_"):  # the equal-candidates control (use_ages)
            info["candidate_set"] = self.candidate_set_
        return info

    def use_ages(self, ages: ArrayLike) -> SPLEstimator:
        """Replace the candidates by this method's solutions at ``ages`` (equal candidates).

        The selection control ``protocol.candidates=shared_grid`` (``docs/protocol.md``): every path
        method offers its solution at the same ages, so that a comparison of selected values
        measures the solutions, not how many candidates each method offers.  Methods whose
        candidates are not ages (Original, MOSPL's Pareto points, ...) raise a ``ConfigError``.
        """
        raise ConfigError(f"{type(self).__name__} has no solutions indexed by age: "
                          "protocol.candidates=shared_grid applies to GAGA and ACS")

    def _keep_candidates(self, lams: Array, models: list[Params]) -> None:
        """Set the candidates to ``models`` at the ages ``lams`` (``use_ages``); none left is an error."""
        if len(models) == 0:
            raise ConfigError(f"{type(self).__name__}: none of the shared ages lies on its solutions")
        self.candidate_params_ = [{"lam": float(lam)} for lam in lams]
        self.candidate_models_ = list(models)
        self.candidate_set_ = "shared_grid"
        self.selected_ = len(models) - 1

    # --------------------------------------------------------------- predict
    def predict(self, X: ArrayLike) -> Array:
        X = self._check_predict_X(X)
        return self._predict_selected(X)

    def _predict_selected(self, X: Array) -> Array:
        return self.model_.predict(self.candidate_models_[self.selected_], X)

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Accuracy (classification) or R^2 (regression) of the selected candidate."""
        pred = self.predict(X)
        y = np.asarray(y, dtype=float).ravel()
        return float(accuracy_score(y, pred) if self.task_ == "classification" else r2_score(y, pred))

    @property
    def candidate_models_(self) -> list[Params]:
        return self._candidate_models

    @candidate_models_.setter
    def candidate_models_(self, value: list[Params]) -> None:
        self._candidate_models = value
