"""Smooth systems ``F(theta, lam) = 0`` of the age-path for fixed index sets (GAGA eq. (5)).

A *system* couples one model (its per-sample losses with their first and second
derivatives, and its non-smooth structure) with one SP-regularizer (``v*``,
``dv*/dell``, ``dv*/dlam`` and the thresholds ``lo(lam) < hi(lam)`` of the
partition E / M / D).  For the index sets currently tracked it provides

* ``residual(theta, lam)``: the left-hand side ``F`` of eq. (5) restricted to
  the free variables ``theta``;
* ``jacobians(theta, lam)``: ``(J_theta, J_lam)`` so that Theorem 3 gives
  ``dtheta/dlam = -J_theta^{-1} J_lam``;
* ``events(theta, lam)``: one number per set boundary, ``>= 0`` while the sets
  are valid (a loss crossing a threshold, a margin ``g_i`` crossing 0, a
  coefficient reaching 0, a lasso subgradient reaching +-1, a dual variable
  leaving its box);
* ``move(positions, lam)``: re-assign the indices whose event fired
  (GAGA appendix C: "resign the violated indexes by the partition rule").

The derivatives are derived here from ``F = 0`` directly (not transcribed from
Props. 1-2, whose printed forms contain errors; see ``docs/gaga.md``):

GLM models (a datafit and a penalty: lasso, logistic, huber; see
:mod:`~spl_bench.gaga.glm.glm_system`).  With ``z = Phi theta`` (``Phi`` = active columns
of ``X``, plus a column of ones for an intercept), per-sample loss ``ell(z)``
with ``ell' = d ell / dz`` and ``ell''``, and ``v = v*(ell, lam)``::

    F       = R'(theta) + Phi^T (v * ell')
    J_theta = R''       + Phi^T diag(v ell'' + (dv*/dell) ell'^2) Phi
    J_lam   =             Phi^T ((dv*/dlam) ell')

For the lasso with the linear regularizer (``ell = r^2 / 2``, ``ell' = -r``,
``ell'' = 1``, ``v = 1 - ell/lam``) this is
``dw_A/dlam = -(X_A^T diag(1 - 3 ell/lam) X_A)^{-1} X_A^T r^3 / (2 lam^2)``:
the *signed* cube of the residual.

Kernel SVM (dual, ``Q_ij = y_i y_j K_ij``, ``g = 1 - Q a - y b``), free
variables ``a_Z`` (margin set E_Z), ``a_M`` (samples with ``g > 0`` and
``0 < v* < 1``) and ``b``::

    F = ( g_Z ,  a_M - C v*(C g_M, lam) ,  y^T a )
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor, Factor
from spl_bench.gaga.core.options import COMPILED_ROUTES
from spl_bench.models import Model, Params
from spl_bench.sp import EASY, HARD, MIXED, SPRegularizer

Array = NDArray[np.float64]

#: sample-set names used in event records (GLM models)
SAMPLE_SETS = {EASY: "E", MIXED: "M", HARD: "D"}

# exit codes of a compiled follower (``follow`` of :mod:`spl_bench.gaga.glm.segment_nb`)
REACHED, EVENT, FULL, GAVE_UP = 0, 1, 2, 3


@dataclass
class CompiledRun:
    """What one call of a compiled follower (:func:`spl_bench.gaga.glm.segment_nb.follow`) did, in the
    tracker's terms (:meth:`GLMSystem.compiled_follow`).

    ``records``: ``(age, coefficients, intercept, tangent, its intercept, segment offset, kind)``
    with kind ``step`` / ``critical`` / ``after``; ``events``: the handled critical points as
    the tracker logs them; ``t_end``: the age reached (with ``status == EVENT``, a critical
    point left to the tracker, with its ``crossed`` event positions); ``counts``:
    factorisations, rejected steps, accepted steps, refined and factorised tangents.
    """

    status: int
    records: list[tuple[float, Any, float, Any, float, int, str]]
    events: list[dict[str, Any]]
    t_end: float
    crossed: NDArray[np.intp]
    counts: NDArray[np.int64]


def sp_v(sp: SPRegularizer, ell: Array, code: NDArray[np.int8], lam: Any) -> Array:
    """``v*`` for *tracked* set codes (not re-partitioned).

    ``ell`` holds one loss per sample (shape ``(n,)``) or one row per age (``(m, n)``,
    with ``lam`` a column ``(m, 1)`` of ages).  On the smooth piece ``M`` the closed form
    is evaluated without clipping (:meth:`SPRegularizer.v_mixed`), so ``v`` stays smooth up
    to (and slightly beyond) the set boundary.
    """
    mid = code == MIXED
    with np.errstate(all="ignore"):
        if mid.all():
            return sp.v_mixed(ell, lam)
        if not mid.any():
            return np.broadcast_to((code == EASY).astype(float), ell.shape).copy()
        # the closed form everywhere (elementwise) and a select: cheaper than masked assignment
        # along the last axis of a (points, samples) array; values off M are discarded
        return np.where(mid, sp.v_mixed(ell, lam), (code == EASY).astype(float))


def sp_weights(
    sp: SPRegularizer, ell: Array, code: NDArray[np.int8], lam: float
) -> tuple[Array, Array, Array]:
    """``(v, dv/dell, dv/dlam)`` for *tracked* set codes (:func:`sp_v`; one age)."""
    v = sp_v(sp, ell, code, lam)
    mid = code == MIXED
    if mid.all():
        with np.errstate(all="ignore"):
            return (v, *sp.dv_mixed(ell, lam))
    if not mid.any():
        return v, np.zeros_like(ell), np.zeros_like(ell)
    with np.errstate(all="ignore"):
        dl, dlam = sp.dv_mixed(ell, lam)
    return v, np.where(mid, dl, 0.0), np.where(mid, dlam, 0.0)


def _has_mixed(sp: SPRegularizer, lam: float) -> bool:
    lo, hi = sp.thresholds(lam)
    return hi - lo > 1e-12 * max(1.0, hi)


class PathSystem(ABC):
    """Common interface of a model x SP-regularizer system (see module docstring)."""

    #: number of entries of :meth:`events`
    n_events: int
    #: a critical point is recorded with the values :meth:`move` gives the moved indices (exact
    #: zeros where a coefficient left); ``False``: with the located point on the old sets' path
    record_moved_values: bool = True
    #: the v-weighted fits of the warm starts by their compiled solver where there is one
    #: (``EngineOptions.method="compiled"``; the lasso's :mod:`spl_bench.gaga.glm.inner_nb`)
    compiled_fits: bool = False

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array) -> None:
        self.model = model
        self.sp = sp
        self.X = X
        self.y = y
        self.n, self.d = X.shape
        #: bumped whenever the sets change (:meth:`_invalidate`): keys of the engine's caches
        self.version = 0

    # -- state -----------------------------------------------------------------
    @abstractmethod
    def init_from(self, params: Params, lam: float) -> None:
        """Set the full state and classify every index from a (near) partial optimum."""

    @abstractmethod
    def theta(self) -> Array:
        """The free variables for the current sets."""

    @abstractmethod
    def set_theta(self, theta: Array) -> None:
        """Write ``theta`` back into the full state."""

    @abstractmethod
    def params(self) -> Params:
        """The current state as model :class:`Params`."""

    @abstractmethod
    def full_vector(self) -> tuple[Array, float]:
        """``(coef or dual_coef, intercept)`` of the current state (copies)."""

    @abstractmethod
    def full_derivative(self, dtheta: Array) -> tuple[Array, float]:
        """Map ``dtheta/dlam`` to ``(d coef or d dual_coef, d intercept)``."""

    @abstractmethod
    def consistent(self, lam: float, tol: float = 1e-9) -> NDArray[np.intp]:
        """Positions of events violated by more than ``tol`` (relative) at the current state."""

    def snapshot(self) -> dict[str, Any]:
        """Everything needed to restore the sets and state later."""
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._state().items()}

    def restore(self, snap: dict[str, Any]) -> None:
        for k, v in snap.items():
            setattr(self, k, v.copy() if isinstance(v, np.ndarray) else v)
        self._invalidate()

    @abstractmethod
    def _state(self) -> dict[str, Any]: ...

    #: the entries of :meth:`_state` that say which index is in which set (``sets_key``)
    set_fields: tuple[str, ...] = ()

    def sets_key(self) -> bytes | None:
        """The set assignment as bytes: equal keys, the same equations ``F = 0`` (``None``: the
        system does not say which of its state entries are sets, :attr:`set_fields`)."""
        if not self.set_fields:
            return None
        return b"".join(np.ascontiguousarray(getattr(self, f)).tobytes() for f in self.set_fields)

    def _invalidate(self) -> None:
        """Drop caches that depend on the sets (subclasses extend it and call this)."""
        self.version += 1

    # -- equations ---------------------------------------------------------------
    @abstractmethod
    def residual(self, theta: Array, lam: float) -> Array: ...

    @abstractmethod
    def jacobians(self, theta: Array, lam: float) -> tuple[Array, Array]: ...

    def factor(self, theta: Array, lam: float) -> tuple[AnyFactor, Array]:
        """``(factorised J_theta, J_lam)`` at ``(theta, lam)``.  Systems with structure override it."""
        J, Jl = self.jacobians(theta, lam)
        return Factor(J, hint=self._merge_hint()), Jl

    def _merge_hint(self) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None:
        """Rows (= columns) of ``J_theta`` known to be equal for the current sets (a
        :class:`Factor` ``hint``), if any."""
        return None

    @abstractmethod
    def residual_scale(self) -> float:
        """Scale of ``F`` used for relative tolerances."""

    def compiled_follow(self, lam0: float, lam_max: float, opts: Any, cap: int, max_events: int,
                        last_event: float) -> Any:
        """The path from ``lam0`` by a compiled follower (:mod:`spl_bench.gaga.glm.segment_nb`), or
        ``None`` where there is none (the default: the engine's ODE route)."""
        return None

    def apply_options(self, opts: Any) -> None:
        """Take the engine options that concern the system (``EngineOptions.method`` ``"compiled"`` or
        ``"fastest"``: the compiled v-weighted fits where the system has them)."""
        self.compiled_fits = opts.method in COMPILED_ROUTES

    def info(self) -> dict[str, Any]:
        """The system's own counters and notes for the path's ``meta`` (none by default)."""
        return {}

    # -- events ----------------------------------------------------------------
    @abstractmethod
    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        """Event functions, ``>= 0`` while the current sets are valid (only positions ``idx`` if given)."""

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """:meth:`events` at several points at once: row ``j`` at ``(thetas[j], lams[j])``."""
        return np.array([self.events(th, float(lam), idx) for th, lam in zip(thetas, lams, strict=True)])

    # -- ACS warm starts -----------------------------------------------------------
    def fit_has_unique_minimiser(self) -> bool:
        """Does :meth:`fit_weighted` return the unique minimiser of a strictly convex problem,
        whatever its warm start (``EngineOptions.acs_warm_extrapolate`` may then move the warm
        start)?  False by default."""
        return False

    def acs_affine_state(self, params: Params, lam: float) -> tuple[Array, Array] | None:
        """``(x, q)`` of the ACS iterate ``params`` (the latest :meth:`fit_weighted` output) when the
        ACS map is affine around it, else ``None`` (the default).

        ``x`` is the iterate as a vector and ``q`` quantities affine in the iterate whose signs
        (0 within 1e-9) fix the affine piece of the map: while they keep their signs, ACS
        iterates ``x_{k+1} = T x_k + c`` with a fixed ``T``.
        """
        return None

    def acs_jump_to(self, x: Array, q: Array) -> Params:
        """The ACS iterate for an extrapolated ``(x, q)`` of :meth:`acs_affine_state` (same piece),
        set up so that the next v-weighted fit is warm-started with that piece's sets."""
        raise NotImplementedError

    @abstractmethod
    def event_scale(self, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        """Typical magnitude of each event function (for tolerances); only positions ``idx`` if given."""

    @abstractmethod
    def move(self, positions: NDArray[np.intp], lam: float) -> list[tuple[int, str, str]]:
        """Re-assign the indices of the fired ``positions``; return ``(index, from, to)``."""

    @abstractmethod
    def kkt(self, lam: float) -> float:
        """Relative KKT violation of the v*-weighted problem at the current state."""

    def stable(self, theta: Array, lam: float) -> bool:
        """Whether the point is a local minimum of the SPL objective (where this can be told)."""
        return True

    # -- ACS (warm starts at jump points) -------------------------------------------
    def initial_fit(self) -> Params:
        """The fit at ``v = 1`` the path's first ACS starts from (the model's own solver)."""
        return self.model.fit_weighted(self.X, self.y, np.ones(self.n))

    def fit_weighted(self, v: Array, warm: Params) -> Params:
        """The v-weighted model fit of one ACS iteration, warm-started from ``warm``."""
        return self.model.fit_weighted(self.X, self.y, v, warm=warm)

    def losses(self, params: Params) -> Array:
        """Per-sample losses of ``params`` on the training data."""
        return self.model.losses(params, self.X, self.y)

    def objective(self, params: Params, lam: float) -> float:
        """SPL objective with ``v`` minimised out (GAGA eq. (2) at ``v = v*``); ACS decreases it."""
        ell = self.losses(params)
        reg = self.model.regularizer(params, self.n)
        return float(reg + self.sp.sp_objective(self.sp.v_star(ell, lam), ell, lam).sum())


