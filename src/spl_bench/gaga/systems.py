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

GLM models (lasso, logistic).  With ``z = Phi theta`` (``Phi`` = active columns
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
from collections import OrderedDict
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

# the inner ACS solvers (gaga/inner.py): used by the systems, and re-exported for older imports
from spl_bench.gaga.inner import WeightedSVMDual, canonical_duplicates, weighted_lasso  # noqa: F401
from spl_bench.gaga.linalg import (
    AnyFactor,
    Factor,
    KKTUpdate,
    MergedKKT,
    SchurBlocks,
    SchurFactor,
    groups_hint,
    kkt_factor,
)
from spl_bench.models import Model, Params
from spl_bench.models.lasso import LassoModel
from spl_bench.models.logistic import LogisticModel
from spl_bench.models.svm import SVMModel, libsvm_fit, resolve_gamma
from spl_bench.sp import EASY, HARD, MIXED, SPRegularizer

Array = NDArray[np.float64]

#: sample-set names used in event records (GLM models)
SAMPLE_SETS = {EASY: "E", MIXED: "M", HARD: "D"}
#: SVM sample sets: margin sets and, for g > 0, the SP partition
SVM_N, SVM_Z, SVM_PE, SVM_PM, SVM_PD = 0, 1, 2, 3, 4
SVM_SETS = {SVM_N: "E_N", SVM_Z: "E_Z", SVM_PE: "E_P", SVM_PM: "M", SVM_PD: "D"}


def sp_v(sp: SPRegularizer, ell: Array, code: NDArray[np.int8], lam: Any) -> Array:
    """``v*`` for *tracked* set codes (not re-partitioned).

    ``ell`` holds one loss per sample (shape ``(n,)``) or one row per age (``(m, n)``,
    with ``lam`` a column ``(m, 1)`` of ages).  On the smooth piece ``M`` the closed form
    is evaluated without clipping, so ``v`` stays smooth up to (and slightly beyond) the
    set boundary.
    """
    mid = code == MIXED
    with np.errstate(all="ignore"):
        if mid.all():
            return sp._v_mixed(_mixed_loss(sp, ell), lam)
        v = np.broadcast_to((code == EASY).astype(float), ell.shape).copy()
        if mid.any():
            v[..., mid] = sp._v_mixed(_mixed_loss(sp, ell[..., mid]), lam)
    return v


def _mixed_loss(sp: SPRegularizer, ell: Array) -> Array:
    """Losses as ``_v_mixed`` takes them: clipped at 1e-100 unless its form is smooth across 0."""
    return np.maximum(ell, 1e-100) if sp.clip_mixed_loss else ell


def sp_weights(
    sp: SPRegularizer, ell: Array, code: NDArray[np.int8], lam: float
) -> tuple[Array, Array, Array]:
    """``(v, dv/dell, dv/dlam)`` for *tracked* set codes (:func:`sp_v`; one age)."""
    v = sp_v(sp, ell, code, lam)
    mid = code == MIXED
    if mid.all():
        with np.errstate(all="ignore"):
            return (v, *sp._dv_mixed(_mixed_loss(sp, ell), lam))
    dl = np.zeros_like(ell)
    dlam = np.zeros_like(ell)
    if mid.any():
        with np.errstate(all="ignore"):
            dl[mid], dlam[mid] = sp._dv_mixed(_mixed_loss(sp, ell[mid]), lam)
    return v, dl, dlam


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

    # -- events ----------------------------------------------------------------
    @abstractmethod
    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        """Event functions, ``>= 0`` while the current sets are valid (only positions ``idx`` if given)."""

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """:meth:`events` at several points at once: row ``j`` at ``(thetas[j], lams[j])``."""
        return np.array([self.events(th, float(lam), idx) for th, lam in zip(thetas, lams, strict=True)])

    # -- ACS warm starts -----------------------------------------------------------
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


# =============================================================================
class GLMSystem(PathSystem):
    """Lasso (no intercept, L1 on an active set) and L2 logistic regression (with intercept)."""

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array) -> None:
        super().__init__(model, sp, X, y)
        if isinstance(model, LassoModel):
            self.kind = "lasso"
            self.lev = model.penalty_level(self.n)
        elif isinstance(model, LogisticModel):
            self.kind = "logistic"
            self.C = model.C
        else:  # pragma: no cover - guarded by make_system
            raise TypeError(model)
        self.lasso = self.kind == "lasso"
        self.n_events = (self.d if self.lasso else 0) + 2 * self.n
        self._cache: dict[str, Any] = {}

    # ------------------------------------------------------------------ state
    def init_from(self, params: Params, lam: float) -> None:
        self.w = np.array(params.coef, dtype=float)
        self.b = float(params.intercept) if not self.lasso else 0.0
        if self.lasso:
            self.active = self.w != 0.0
            self.sign = np.sign(self.w)
        else:
            self.active = np.ones(self.d, dtype=bool)
            self.sign = np.zeros(self.d)
        ell, _, _ = self._loss(self.X @ self.w + self.b)
        self.code = self.sp.partition(ell, lam)
        self._invalidate()

    def _state(self) -> dict[str, Any]:
        return {"w": self.w, "b": self.b, "active": self.active, "sign": self.sign, "code": self.code}

    def _invalidate(self) -> None:
        super()._invalidate()
        self._cache = {}

    def _XA(self) -> Array:
        if "XA" not in self._cache:
            self._cache["XA"] = np.ascontiguousarray(self.X[:, self.active])
        return self._cache["XA"]

    def theta(self) -> Array:
        wa = self.w[self.active]
        return wa.copy() if self.lasso else np.append(wa, self.b)

    def set_theta(self, theta: Array) -> None:
        k = int(self.active.sum())
        self.w[self.active] = theta[:k]
        if not self.lasso:
            self.b = float(theta[k])

    def params(self) -> Params:
        return Params(coef=self.w.copy(), intercept=self.b)

    def full_vector(self) -> tuple[Array, float]:
        return self.w.copy(), self.b

    def full_derivative(self, dtheta: Array) -> tuple[Array, float]:
        dw = np.zeros(self.d)
        k = int(self.active.sum())
        dw[self.active] = dtheta[:k]
        return dw, (0.0 if self.lasso else float(dtheta[k]))

    # ------------------------------------------------------------ equations
    def _z(self, theta: Array) -> Array:
        k = int(self.active.sum())
        z = self._XA() @ theta[:k]
        if not self.lasso:
            z = z + theta[k]
        return z

    def _loss(self, z: Array, y: Array | None = None) -> tuple[Array, Array, Array]:
        """``(ell, d ell/dz, d^2 ell/dz^2)`` per sample (of ``y``, default all samples)."""
        y = self.y if y is None else y
        if self.lasso:
            r = y - z
            return 0.5 * r * r, -r, np.ones_like(r)
        m = y * z
        C = self.C
        sn = expit(-m)
        ell = C * np.logaddexp(0.0, -m)
        return ell, -C * y * sn, C * sn * (1.0 - sn)

    def _live(self) -> tuple[Array, Array, NDArray[np.int8]]:
        """``(X_A, y, code)`` on the samples not in D: samples in D have ``v = 0`` and
        ``dv* = 0``, so they contribute nothing to ``F`` or its Jacobians."""
        if "XL" not in self._cache:
            live = np.flatnonzero(self.code != HARD)
            self._cache["XL"] = np.ascontiguousarray(self._XA()[live])
            self._cache["yL"] = self.y[live]
            self._cache["cL"] = self.code[live]
        return self._cache["XL"], self._cache["yL"], self._cache["cL"]

    def _live_terms(self, theta: Array, lam: float) -> tuple[Array, Array, Array, Array, Array, Array]:
        """``X_A``, ``ell'``, ``ell''``, ``v``, ``dv/dell``, ``dv/dlam`` on the live samples.

        Memoised for the latest point (per sets): the residual and the Jacobians are often
        evaluated at the same point (a Newton-projected point, then the derivative there).
        """
        hit = self._cache.get("terms")
        if hit is not None and hit[0] == lam and np.array_equal(hit[1], theta):
            return hit[2]
        XL, yL, cL = self._live()
        k = XL.shape[1]
        z = XL @ theta[:k]
        if not self.lasso:
            z = z + theta[k]
        ell, l1, l2 = self._loss(z, yL)
        v, dl, dlam = sp_weights(self.sp, ell, cL, lam)
        out = (XL, l1, l2, v, dl, dlam)
        self._cache["terms"] = (lam, theta.copy(), out)
        return out

    def _phi_T(self, u: Array, XA: Array | None = None) -> Array:
        """``Phi^T u`` (over all samples, or over the rows of ``XA``)."""
        out = (self._XA() if XA is None else XA).T @ u
        return out if self.lasso else np.append(out, u.sum())

    def residual(self, theta: Array, lam: float) -> Array:
        XA, l1, _, v, _, _ = self._live_terms(theta, lam)
        F = self._phi_T(v * l1, XA)
        k = XA.shape[1]
        if self.lasso:
            F += self.lev * self.sign[self.active]
        else:
            F[:k] += theta[:k]
        return F

    def jacobians(self, theta: Array, lam: float) -> tuple[Array, Array]:
        XA, l1, l2, v, dl, dlam = self._live_terms(theta, lam)
        D = v * l2 + dl * l1 * l1
        k = XA.shape[1]
        if self.lasso:
            J = XA.T @ (D[:, None] * XA)
        else:
            J = np.empty((k + 1, k + 1))
            DX = D[:, None] * XA
            J[:k, :k] = XA.T @ DX
            J[:k, :k] += np.eye(k)
            col = DX.sum(axis=0)
            J[:k, k] = col
            J[k, :k] = col
            J[k, k] = D.sum()
        return J, self._phi_T(dlam * l1, XA)

    def fit_weighted(self, v: Array, warm: Params) -> Params:
        """Lasso: the exact active-set solver (falls back to the model's solver)."""
        if self.lasso:
            w = weighted_lasso(self.X, self.y, v, self.lev, warm.coef)
            if w is not None:
                return Params(coef=w)
        return self.model.fit_weighted(self.X, self.y, v, warm=warm)

    def stable(self, theta: Array, lam: float) -> bool:
        """``J_theta`` is the Hessian of the SPL objective on the current face: positive definite?"""
        J, _ = self.jacobians(theta, lam)
        if J.shape[0] == 0:
            return True
        try:
            np.linalg.cholesky(0.5 * (J + J.T))
        except np.linalg.LinAlgError:
            return False
        return True

    def residual_scale(self) -> float:
        if self.lasso:
            return self.lev
        return 1.0 + float(np.abs(self.w).max(initial=0.0))

    # --------------------------------------------------------------- events
    #: per set code (E, M, D): h1 = SGN ell + A_LO lo + A_HI hi, the distance to the lower boundary
    _SGN, _A_LO, _A_HI = np.array([-1.0, 1.0, 1.0]), np.array([1.0, -1.0, 0.0]), np.array([0.0, 0.0, -1.0])

    def _sample_events(self, ell: Array, code: NDArray[np.int8] | None, lo: Any, hi: Any) -> tuple[Array, Array]:
        """``(h1, h2)`` of samples: distance of ``ell`` to the lower / upper boundary of its set.

        ``code=None`` means all samples with the current sets (coefficients cached per sets).
        """
        if code is None:
            if "h_coef" not in self._cache:
                c = self.code
                self._cache["h_coef"] = (self._SGN[c], self._A_LO[c], self._A_HI[c], c != MIXED)
            sgn, alo, ahi, not_mixed = self._cache["h_coef"]
        else:
            sgn, alo, ahi, not_mixed = self._SGN[code], self._A_LO[code], self._A_HI[code], code != MIXED
        if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
            h1 = sgn * ell + alo * lo + ahi * hi
        else:  # an infinite threshold (0 * inf): the explicit form
            h1 = np.where(sgn < 0, lo - ell, np.where(ahi < 0, ell - hi, ell - lo))
        h2 = hi - ell
        if h2.ndim == 2:
            h2[:, not_mixed] = np.inf
        else:
            h2[not_mixed] = np.inf
        return h1, h2

    def _X_inactive(self) -> Array:
        if "Xi" not in self._cache:
            self._cache["Xi"] = np.ascontiguousarray(self.X[:, ~self.active])
        return self._cache["Xi"]

    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        lo, hi = self.sp.thresholds(lam)
        off = self.d if self.lasso else 0
        k = int(self.active.sum())
        # a subset without inactive features needs only the rows of the samples involved (an
        # inactive feature's subgradient needs every residual): events_many's shortcut
        if idx is not None and not np.any(~self.active[idx[idx < off]]):
            return self.events_many(theta[None, :], np.array([lam]), idx)[0]
        z = self._z(theta)
        ell, l1, _ = self._loss(z)
        h1, h2 = self._sample_events(ell, None, lo, hi)
        if not self.lasso:
            h = np.concatenate([h1, h2])
        else:
            hf = np.empty(self.d)
            hf[self.active] = self.sign[self.active] * theta[:k]
            if k < self.d:
                v = sp_v(self.sp, ell, self.code, lam)
                hf[~self.active] = 1.0 - np.abs(self._X_inactive().T @ (v * l1)) / self.lev
            h = np.concatenate([hf, h1, h2])
        return h if idx is None else h[idx]

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """Vectorised :meth:`events` (one matrix product for all points).

        With ``idx`` (and no inactive feature among them) only the rows of the samples
        involved are used, as in :meth:`events`.
        """
        k = int(self.active.sum())
        off = self.d if self.lasso else 0
        th = np.array([self.sp.thresholds(float(lam)) for lam in lams])
        if idx is not None and not np.any(~self.active[idx[idx < off]]):
            out = np.empty((lams.size, idx.size))
            feat = idx < off
            if np.any(feat):
                pos = np.cumsum(self.active) - 1
                out[:, feat] = self.sign[idx[feat]] * thetas[:, pos[idx[feat]]]
            smp = ~feat
            if np.any(smp):
                q = idx[smp] - off
                i = q % self.n
                Zs = thetas[:, :k] @ self._XA()[i].T
                if not self.lasso:
                    Zs += thetas[:, k:k + 1]
                ell, _, _ = self._loss(Zs, self.y[i])
                h1, h2 = self._sample_events(ell, self.code[i], th[:, :1], th[:, 1:])
                out[:, smp] = np.where(q >= self.n, h2, h1)
            return out
        Z = thetas[:, :k] @ self._XA().T
        if not self.lasso:
            Z += thetas[:, k:k + 1]
        ell, l1, _ = self._loss(Z)
        h1, h2 = self._sample_events(ell, None, th[:, :1], th[:, 1:])
        if not self.lasso:
            h = np.hstack([h1, h2])
        else:
            hf = np.empty((lams.size, self.d))
            hf[:, self.active] = self.sign[self.active] * thetas[:, :k]
            if k < self.d:
                U = sp_v(self.sp, ell, self.code, lams[:, None])
                hf[:, ~self.active] = 1.0 - np.abs((U * l1) @ self._X_inactive()) / self.lev
            h = np.hstack([hf, h1, h2])
        return h if idx is None else h[:, idx]

    def event_scale(self, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        """(Cached for the latest age, sets and coefficient size: do not modify the result.)"""
        wscale = 1e-3 + float(np.abs(self.w).max(initial=0.0)) if self.lasso else 0.0
        if idx is not None:
            out = np.full(idx.size, 1.0 + self.sp.thresholds(lam)[1])
            if self.lasso:
                feat = idx < self.d
                out[feat] = np.where(self.active[idx[feat]], wscale, 1.0)
            return out
        key = (lam, wscale)
        hit = self._cache.get("scale")
        if hit is not None and hit[0] == key:
            return hit[1]
        lo, hi = self.sp.thresholds(lam)
        s = np.full(2 * self.n, 1.0 + hi)
        if self.lasso:
            s = np.concatenate([np.where(self.active, wscale, 1.0), s])
        self._cache["scale"] = (key, s)
        return s

    def move(self, positions: NDArray[np.intp], lam: float) -> list[tuple[int, str, str]]:
        moves: list[tuple[int, str, str]] = []
        off = self.d if self.lasso else 0
        mixed_ok = _has_mixed(self.sp, lam)
        z = self.X @ self.w + self.b
        ell, l1, _ = self._loss(z)
        for p in sorted(set(int(q) for q in positions)):
            if p < off:
                j = p
                if self.active[j]:
                    self.active[j] = False
                    self.w[j] = 0.0
                    self.sign[j] = 0.0
                    moves.append((j, "A", "inactive"))
                else:
                    v = sp_v(self.sp, ell, self.code, lam)
                    c = -(self.X[:, j] @ (v * l1)) / self.lev
                    self.active[j] = True
                    self.w[j] = 0.0
                    self.sign[j] = 1.0 if c > 0 else -1.0
                    moves.append((j, "inactive", "A"))
                continue
            i = (p - off) % self.n
            upper = (p - off) >= self.n
            old = int(self.code[i])
            if old == EASY:
                new = MIXED if mixed_ok else HARD
            elif old == MIXED:
                new = HARD if upper else EASY
            else:
                new = MIXED if mixed_ok else EASY
            self.code[i] = new
            moves.append((i, SAMPLE_SETS[old], SAMPLE_SETS[new]))
        self._invalidate()
        return moves

    def kkt(self, lam: float) -> float:
        """Model KKT check of the v*-weighted problem with ``v* = v*(ell(w), lam)``."""
        p = self.params()
        v = self.sp.v_star(self.model.losses(p, self.X, self.y), lam)
        return float(self.model.kkt_violation(p, self.X, self.y, v))

    def consistent(self, lam: float, tol: float = 1e-9) -> NDArray[np.intp]:
        """Positions of events violated by more than ``tol`` (relative) at the current state."""
        h = self.events(self.theta(), lam)
        return np.flatnonzero(h < -tol * self.event_scale(lam))


# =============================================================================
#: smallest margin set E_Z for which the SVM Jacobian is factorised by its Schur complement
SCHUR_MIN_Z = 64
#: recent set configurations whose Schur blocks (and margin-block factorisations) are kept: a
#: critical point whose new sets fail returns to the old ones, and the polish of a warm start
#: revisits configurations (mfeat, 1,500 rows: 59 % of the margin-block LUs were repeats)
SCHUR_CACHE = 4


def _remember(lru: OrderedDict, key: Any, value: Any) -> None:
    """Insert into a recent-items cache of :data:`SCHUR_CACHE` entries."""
    lru[key] = value
    while len(lru) > SCHUR_CACHE:
        lru.popitem(last=False)


class SVMSystem(PathSystem):
    """Kernel SVM in the dual: ``f = sum_j a_j y_j K(x_j, .) + b``, ``0 <= a_i <= C v_i``."""

    #: the located point, not the moved values: a sample in M has ``a_i = C v*(C g_i)`` with
    #: ``d a_i / d g_i = C^2 dv*/dell``, and putting it on its boundary value moves its own margin
    #: by ``Q_ii`` times the location error; with a linear kernel (``Q_ii = |x_i|^2``, ~30-60 on
    #: standardised data) and the mixture SP that left recorded points 1e-5 off the KKT conditions
    record_moved_values = False

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array) -> None:
        super().__init__(model, sp, X, y)
        assert isinstance(model, SVMModel)
        self.C = model.C
        self.gamma = resolve_gamma(model.gamma, X)
        self.K = np.ascontiguousarray(model.kernel_matrix(X, X, self.gamma))  # for libsvm (ACS steps)
        self.Q = np.ascontiguousarray(self.K * np.outer(y, y))
        self.n_events = 2 * self.n
        self._cache: dict[str, Any] = {}
        self._K_sub: tuple[NDArray[np.intp], Array] | None = None  # the latest K[idx, idx] (ACS)
        # identical samples (x and y) have equal rows and columns in Q: their group labels make
        # the merge of a singular system (linalg.Factor) a hint to check, not a search
        _, dup, counts = np.unique(np.column_stack([X, y]), axis=0, return_inverse=True, return_counts=True)
        self.duplicates: NDArray[np.intp] | None = np.asarray(dup).ravel() if np.any(counts > 1) else None
        self._canon = canonical_duplicates(self.duplicates)
        #: ACS steps: the exact warm-started active-set fit first (libsvm when it gives up)
        self.dual_solver: WeightedSVMDual | None = WeightedSVMDual(self.Q, y, duplicates=self.duplicates)
        self._last_fit: tuple[Array, float, Array] | None = None  # (a, b, g) of its latest fit
        # recent Schur blocks by (E_Z, M) and factorisations of the margin block by E_Z (SCHUR_CACHE)
        self._blocks_lru: OrderedDict[tuple[bytes, bytes], SchurBlocks] = OrderedDict()
        self._A_lru: OrderedDict[bytes, Factor | KKTUpdate | MergedKKT] = OrderedDict()
        self._A_root: tuple[NDArray[np.intp], Factor] | None = None  # the latest LU of a margin block
        self._rows_lru: OrderedDict[bytes, tuple[Array, Array]] = OrderedDict()  # Q[free], Q[free, free]
        self._pe_lru: OrderedDict[bytes, Array] = OrderedDict()  # C Q[:, E_P] 1

    # ------------------------------------------------------------------ state
    def init_from(self, params: Params, lam: float, tol: float = 1e-6) -> None:
        C = self.C
        self.a = np.clip(np.array(params.dual_coef, dtype=float), 0.0, C)
        if self.duplicates is not None:
            # duplicated samples (identical x and y) share g, v and the box: only the sum of
            # their a is determined, and f depends on nothing else.  They get equal shares (the
            # minimum-norm split, which the merged solves of the path then keep), so twins sit in
            # one set: an unequal split from a fit left one twin at a = 0 in E_Z with the other
            # free, and the path then stopped there (can_continue) or logged spurious events
            dup = self.duplicates
            self.a = (np.bincount(dup, weights=self.a) / np.bincount(dup))[dup]
        self.b = float(params.intercept)
        g = 1.0 - self.Q @ self.a - self.y * self.b
        ell = C * np.maximum(g, 0.0)
        part = self.sp.partition(ell, lam)
        code = np.full(self.n, SVM_Z, dtype=np.int8)
        code[(g < -tol) & (self.a <= tol * C)] = SVM_N
        pos = g > tol
        code[pos & (part == EASY)] = SVM_PE
        code[pos & (part == MIXED)] = SVM_PM
        code[pos & (part == HARD)] = SVM_PD
        self.code = code
        self._fix_fixed(lam)
        self._invalidate()

    def _fix_fixed(self, lam: float) -> None:
        """Set ``a`` on the sets where it is not free (E_N, D: 0; E_P: C; M: C v*)."""
        c = self.code
        self.a[(c == SVM_N) | (c == SVM_PD)] = 0.0
        self.a[c == SVM_PE] = self.C
        m = c == SVM_PM
        if np.any(m):
            g = 1.0 - self.Q[m] @ self.a - self.y[m] * self.b
            v = sp_v(self.sp, self.C * g, np.full(int(m.sum()), MIXED, np.int8), lam)
            self.a[m] = self.C * v

    def _state(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "code": self.code}

    def _invalidate(self) -> None:
        super()._invalidate()
        c = self.code
        self.iz = np.flatnonzero(c == SVM_Z)
        self.im = np.flatnonzero(c == SVM_PM)
        self.ifree = np.concatenate([self.iz, self.im])
        fixed = (c == SVM_PE)
        self.ipe = np.flatnonzero(fixed)
        self._cache = {}

    def _Qrows(self) -> Array:
        """``Q[free, :]`` (``Q`` is symmetric: the columns of the free variables), cached per
        set configuration with ``Q[free, free]`` and ``C Q[:, E_P] 1`` (the fixed ``a = C``)."""
        if "Qr" not in self._cache:
            # recent configurations are revisited (SCHUR_CACHE): their gathers are kept too
            key, key_pe = self.ifree.tobytes(), self.ipe.tobytes()
            rows = self._rows_lru.get(key)
            if rows is None:
                Qr = self.Q[self.ifree]  # a row gather: contiguous copies, unlike Q[:, free]
                rows = (Qr, np.ascontiguousarray(Qr[:, self.ifree]))
                _remember(self._rows_lru, key, rows)
            qpe = self._pe_lru.get(key_pe)
            if qpe is None:
                qpe = self.Q[self.ipe].sum(axis=0) * self.C if self.ipe.size else np.zeros(self.n)
                _remember(self._pe_lru, key_pe, qpe)
            self._cache["Qr"], self._cache["Qff"] = rows
            self._cache["Qpe"] = qpe
            self._cache["Qpe_f"] = qpe[self.ifree]
        return self._cache["Qr"]

    def _Qff(self) -> Array:
        """``Q[free, free]`` (:meth:`_Qrows`)."""
        self._Qrows()
        return self._cache["Qff"]

    def theta(self) -> Array:
        return np.append(self.a[self.ifree], self.b)

    def set_theta(self, theta: Array) -> None:
        k = self.ifree.size
        self.a[self.ifree] = theta[:k]
        self.b = float(theta[k])

    def params(self) -> Params:
        return Params(dual_coef=self.a.copy(), intercept=self.b, X_fit=self.X, y_fit=self.y,
                      extra={"gamma": self.gamma})

    def full_vector(self) -> tuple[Array, float]:
        return self.a.copy(), self.b

    def full_derivative(self, dtheta: Array) -> tuple[Array, float]:
        da = np.zeros(self.n)
        k = self.ifree.size
        da[self.ifree] = dtheta[:k]
        return da, float(dtheta[k])

    # ------------------------------------------------------------ equations
    def _g(self, theta: Array) -> Array:
        """Margins ``g = 1 - y f(x)`` of every sample for free variables ``theta``."""
        Qr = self._Qrows()
        k = self.ifree.size
        return 1.0 - theta[:k] @ Qr - self._cache["Qpe"] - self.y * theta[k]

    def _g_free(self, theta: Array) -> Array:
        """Margins of the samples with free variables only (E_Z, then M): all ``F`` and ``J``
        need.  Memoised for the latest point (per sets): Newton evaluates the residual and
        then the factor at the same point."""
        hit = self._cache.get("g_free")
        if hit is not None and np.array_equal(hit[0], theta):
            return hit[1]
        Qff = self._Qff()
        k = self.ifree.size
        g = 1.0 - Qff @ theta[:k] - self._cache["Qpe_f"] - self.y[self.ifree] * theta[k]
        self._cache["g_free"] = (theta.copy(), g)
        return g

    def _merge_hint(self) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None:
        """Duplicated samples both in E_Z: equal rows and columns of ``J_theta`` (not in M,
        whose rows carry the identity)."""
        if self.duplicates is None:
            return None
        if "merge_hint" not in self._cache:
            labels = np.concatenate([self.duplicates[self.iz], -2 - np.arange(self.im.size), [-1]])
            self._cache["merge_hint"] = groups_hint(labels)
        return self._cache["merge_hint"]

    def residual(self, theta: Array, lam: float) -> Array:
        k = self.ifree.size
        nz = self.iz.size
        g = self._g_free(theta)
        F = np.empty(k + 1)
        F[:nz] = g[:nz]
        if self.im.size:
            v = sp_v(self.sp, self.C * g[nz:], np.full(self.im.size, MIXED, np.int8), lam)
            F[nz:k] = theta[nz:k] - self.C * v
        F[k] = self.y[self.ifree] @ theta[:k] + self.C * self.y[self.ipe].sum()
        return F

    def jacobians(self, theta: Array, lam: float) -> tuple[Array, Array]:
        k = self.ifree.size
        nz = self.iz.size
        Qff = self._Qff()
        J = np.zeros((k + 1, k + 1))
        Jl = np.zeros(k + 1)
        J[:nz, :k] = -Qff[:nz]
        J[:nz, k] = -self.y[self.iz]
        if self.im.size:
            g = self._g_free(theta)[nz:]
            _, dl, dlam = sp_weights(self.sp, self.C * g, np.full(self.im.size, MIXED, np.int8), lam)
            c2 = (self.C**2) * dl
            J[nz:k, :k] = c2[:, None] * Qff[nz:]
            J[nz:k, nz:k] += np.eye(self.im.size)
            J[nz:k, k] = c2 * self.y[self.im]
            Jl[nz:k] = -self.C * dlam
        J[k, :k] = self.y[self.ifree]
        return J, Jl

    def factor(self, theta: Array, lam: float) -> tuple[AnyFactor, Array]:
        """``J_theta`` by its Schur complement on the M rows (only they change with the point).

        Unknowns ``(a_Z, b)`` and ``a_M``: the Z rows and ``y^T a`` are fixed per sets,
        the M rows are ``diag(C^2 dv/dell) [Q_MZ, y_M | Q_MM] + [0 | I]``.  The blocks
        are built once per set configuration; each point costs one ``|M| x |M|`` LU.
        """
        if self.iz.size < SCHUR_MIN_Z:  # small systems: one dense LU costs less than the bookkeeping
            return super().factor(theta, lam)
        blocks = self._cache.get("schur")
        if blocks is None:
            blocks = self._schur_blocks()
            self._cache["schur"] = blocks
        if not blocks.usable:
            return super().factor(theta, lam)
        Jl = np.zeros(self.ifree.size + 1)
        c = np.zeros(self.im.size)
        if self.im.size:
            g = self._g_free(theta)[self.iz.size:]
            _, dl, dlam = sp_weights(self.sp, self.C * g, np.full(self.im.size, MIXED, np.int8), lam)
            c = (self.C**2) * dl
            Jl[self.iz.size:self.ifree.size] = -self.C * dlam
        return SchurFactor(blocks, c), Jl

    def _schur_blocks(self) -> SchurBlocks:
        """The blocks of :meth:`factor` for the current sets, from the recent ones if they are there."""
        key_z = self.iz.tobytes()
        key = (key_z, self.im.tobytes())
        hit = self._blocks_lru.get(key)
        if hit is not None:
            self._blocks_lru.move_to_end(key)
            return hit
        k, nz = self.ifree.size, self.iz.size
        Qff = self._Qff()
        i1 = np.append(np.arange(nz), k)
        i2 = np.arange(nz, k)
        A_fac = self._A_lru.get(key_z)
        if A_fac is None:
            # an update of the latest LU (KKTUpdate: a critical point moves one or two indices)
            # or a new LU; duplicated samples on the margin need the merged one
            A_fac, self._A_root = kkt_factor(self.Q, self.y, self.iz, -1.0, self._canon, self._A_root,
                                             Qzz=Qff[:nz, :nz])
            _remember(self._A_lru, key_z, A_fac)
        else:
            self._A_lru.move_to_end(key_z)
        B = np.vstack([-Qff[:nz, nz:], self.y[self.im][None, :]])
        C0 = np.hstack([Qff[nz:, :nz], self.y[self.im][:, None]])
        blocks = SchurBlocks(A_fac, B, C0, Qff[nz:, nz:], i1, i2)
        _remember(self._blocks_lru, key, blocks)
        return blocks

    def residual_scale(self) -> float:
        return 1.0

    # --------------------------------------------------------------- events
    #: per set code (E_N, E_Z, E_P, M, D), coefficients of (g, a/C, 1, lo/C, hi/C) in h1 and h2:
    #: h1 = -g | a/C | g | g - lo/C | g - hi/C;  h2 = inf | 1 - a/C | lo/C - g | hi/C - g | inf
    _H1 = np.array([[-1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [1, 0, 0, 0, 0], [1, 0, 0, -1, 0], [1, 0, 0, 0, -1]], float)
    _H2 = np.array([[0, 0, 0, 0, 0], [0, -1, 1, 0, 0], [-1, 0, 0, 1, 0], [-1, 0, 0, 0, 1], [0, 0, 0, 0, 0]], float)

    def _sample_events(self, g: Array, a: Array, c: NDArray[np.int8], lam: float) -> tuple[Array, Array]:
        """``(h1, h2)``: distances of margins ``g`` / duals ``a`` to the boundaries of sets ``c``."""
        lo, hi = self.sp.thresholds(lam)
        aC = a / self.C
        k1, k2 = self._H1[c], self._H2[c]
        h1 = k1[:, 0] * g + k1[:, 1] * aC + (k1[:, 3] * lo + k1[:, 4] * hi) / self.C
        h2 = k2[:, 0] * g + k2[:, 1] * aC + k2[:, 2] + (k2[:, 3] * lo + k2[:, 4] * hi) / self.C
        h2[(c == SVM_N) | (c == SVM_PD)] = np.inf
        return h1, h2

    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        k = self.ifree.size
        if idx is not None:  # only the rows of the samples involved
            i = idx % self.n
            g = 1.0 - theta[:k] @ self._Qrows()[:, i] - self.y[i] * theta[k]
            if self.ipe.size:
                g -= self._cache["Qpe"][i]
            if "pos" not in self._cache:
                pos = np.full(self.n, -1)
                pos[self.ifree] = np.arange(k)
                self._cache["pos"] = pos
            p = self._cache["pos"][i]
            a = np.where(p >= 0, theta[np.maximum(p, 0)], self.a[i])
            h1, h2 = self._sample_events(g, a, self.code[i], lam)
            return np.where(idx >= self.n, h2, h1)
        a = self.a.copy()
        a[self.ifree] = theta[:k]
        h1, h2 = self._sample_events(self._g(theta), a, self.code, lam)
        return np.concatenate([h1, h2])

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """Vectorised :meth:`events` (one matrix product for all margins; with ``idx``, the
        rows of the samples involved, point by point)."""
        if idx is not None:
            return super().events_many(thetas, lams, idx)
        k = self.ifree.size
        G = 1.0 - thetas[:, :k] @ self._Qrows() - np.outer(thetas[:, k], self.y) - self._cache["Qpe"]
        A = np.repeat(self.a[None, :], lams.size, axis=0)
        A[:, self.ifree] = thetas[:, :k]
        out = np.empty((lams.size, 2 * self.n))
        for j, lam in enumerate(lams):
            h1, h2 = self._sample_events(G[j], A[j], self.code, float(lam))
            out[j, :self.n], out[j, self.n:] = h1, h2
        return out

    def event_scale(self, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        lo, hi = self.sp.thresholds(lam)
        return np.full(2 * self.n if idx is None else idx.size, 1.0 + hi / self.C)

    def move(self, positions: NDArray[np.intp], lam: float) -> list[tuple[int, str, str]]:
        moves: list[tuple[int, str, str]] = []
        lo, hi = self.sp.thresholds(lam)
        mixed_ok = _has_mixed(self.sp, lam)
        for p in sorted(set(int(q) for q in positions)):
            i = p % self.n
            upper = p >= self.n
            old = int(self.code[i])
            if old == SVM_N:
                new = SVM_Z
            elif old == SVM_Z:
                if not upper:
                    new = SVM_N
                else:  # a_i reached C: g_i becomes positive with ell = 0+
                    new = SVM_PE if lo > 0 else (SVM_PM if mixed_ok else SVM_PD)
            elif old == SVM_PE:
                new = SVM_Z if not upper else (SVM_PM if mixed_ok else SVM_PD)
            elif old == SVM_PM:
                new = (SVM_PE if lo > 0 else SVM_Z) if not upper else SVM_PD
            else:
                new = SVM_PM if mixed_ok else SVM_PE
            self.code[i] = new
            moves.append((i, SVM_SETS[old], SVM_SETS[new]))
            # the moved index takes the value of the boundary it crossed (v* = 0 at hi, 1 at lo);
            # the other free variables keep theirs.  Re-evaluating a_M = C v*(C g_M) for all of M
            # here (one fixed-point step) left F off by up to 2e-5 with a linear kernel, where
            # the gain C^2 |dv*/dell| Q_ii of that step is in the thousands (Q_ii = |x_i|^2)
            if new in (SVM_N, SVM_PD):
                self.a[i] = 0.0
            elif new == SVM_PE:
                self.a[i] = self.C
            elif new == SVM_PM:
                self.a[i] = 0.0 if old == SVM_PD else self.C
        self._invalidate()
        return moves

    def kkt(self, lam: float) -> float:
        return svm_kkt(self.model, self.sp, self.params(), self.X, self.y, lam)

    def fit_weighted(self, v: Array, warm: Params) -> Params:
        """The v-weighted SVM dual on the precomputed kernel: :class:`WeightedSVMDual`
        warm-started from ``warm``, or libsvm if it gives up (or is switched off)."""
        if self.dual_solver is not None and warm.dual_coef is not None:
            out = self.dual_solver.fit(self.C * v, warm.dual_coef)
            if out is not None:
                self._last_fit = out
                return Params(dual_coef=out[0], intercept=out[1], X_fit=self.X, y_fit=self.y,
                              extra={"gamma": self.gamma})
        a = np.zeros(self.n)
        b = 0.0
        idx = np.flatnonzero(v > 0)
        if idx.size and np.unique(self.y[idx]).size == 2:
            K = self._kernel_rows(idx)
            support, dual, b = libsvm_fit(K, self.y[idx], v[idx], self.C, "precomputed", 0.0, self.model.tol)
            sv = idx[support]
            a[sv] = dual * self.y[sv]
            a = np.clip(a, 0.0, self.C * v)
        elif idx.size:  # one class only: the constant classifier of that class
            b = float(np.sign(self.y[idx][0]))
        return Params(dual_coef=a, intercept=b, X_fit=self.X, y_fit=self.y, extra={"gamma": self.gamma})

    def _kernel_rows(self, idx: NDArray[np.intp]) -> Array:
        """``K[idx, idx]`` for libsvm, kept for the next call: during ACS the samples with
        ``v > 0`` seldom change, and the copy costs a third of a fit at n = 1,500."""
        if idx.size == self.n:
            return self.K
        last = self._K_sub
        if last is not None and np.array_equal(last[0], idx):
            return last[1]
        sub = self.K[np.ix_(idx, idx)]
        self._K_sub = (idx, sub)
        return sub

    def acs_affine_state(self, params: Params, lam: float) -> tuple[Array, Array] | None:
        """The hinge margins ``g`` are affine in ``(a, b)``; with an SP whose ``v*`` is affine in
        the loss on each piece (linear, hard), so are the box ``u = C v*`` of the next fit and,
        for fixed free / upper-bound sets, its solution.  ``q`` holds ``g``, ``g - lo/C``,
        ``g - hi/C`` (the hinge kink and the SP thresholds) and ``a/C``, ``(u - a)/C`` (the
        fit's sets), for the fit that produced ``params`` and the box it had."""
        ds, last = self.dual_solver, self._last_fit
        if (not self.sp.v_affine_in_loss or ds is None or ds._last is None or ds.last_u is None
                or last is None or params.dual_coef is not last[0] or ds._last[0] is not last[0]):
            return None
        a, b, g = last
        lo, hi = self.sp.thresholds(lam)
        C = self.C
        x = np.append(a, b)
        return x, np.concatenate([g, g - lo / C, g - hi / C, a / C, (ds.last_u - a) / C])

    def acs_jump_to(self, x: Array, q: Array) -> Params:
        ds = self.dual_solver
        assert ds is not None and ds._last is not None
        n, C = self.n, self.C
        a, b = x[:n].copy(), float(x[n])
        self._last_fit = (a, b, q[:n].copy())  # the margins, extrapolated like everything else
        ds._last = (a, ds._last[1], ds._last[2])  # the next fit starts from this piece's sets
        ds.last_u = C * q[4 * n:] + a
        return Params(dual_coef=a, intercept=b, X_fit=self.X, y_fit=self.y, extra={"gamma": self.gamma})

    def losses(self, params: Params) -> Array:
        last = self._last_fit
        if last is not None and params.dual_coef is last[0] and params.intercept == last[1]:
            return self.C * np.maximum(0.0, last[2])  # the margins the fit computed
        return self.C * np.maximum(0.0, 1.0 - self.Q @ params.dual_coef - self.y * params.intercept)

    def objective(self, params: Params, lam: float) -> float:
        ell = self.losses(params)
        a = params.dual_coef
        reg = 0.5 * float(a @ self.Q @ a)
        return float(reg + self.sp.sp_objective(self.sp.v_star(ell, lam), ell, lam).sum())

    def consistent(self, lam: float, tol: float = 1e-9) -> NDArray[np.intp]:
        h = self.events(self.theta(), lam)
        return np.flatnonzero(h < -tol * self.event_scale(lam))


def svm_kkt(model: SVMModel, sp: SPRegularizer, params: Params, X: Array, y: Array, lam: float) -> float:
    """Natural-residual KKT violation of the v*-weighted SVM dual.

    With ``v = v*(ell(f), lam)`` and ``g = 1 - y f(x)``, the box-constrained dual
    ``min 1/2 a^T Q a - 1^T a`` s.t. ``0 <= a <= C v``, ``y^T a = 0`` is solved iff
    ``a = clip(a + C g, 0, C v)`` (box and margin conditions together) and
    ``y^T a = 0``.  Returned relative to ``C``: ``max(|a/C - clip(a/C + g, 0, v)|,
    |y^T a| / C)``.  Unlike a test on ``a`` being exactly at a bound, this measure
    is continuous in ``a``.
    """
    C = model.C
    g = 1.0 - y * model.decision_function(params, X)
    v = sp.v_star(C * np.maximum(g, 0.0), lam)
    a = params.dual_coef / C
    nat = np.abs(a - np.clip(a + g, 0.0, v))
    return float(max(nat.max(initial=0.0), abs(float(params.dual_coef @ y)) / C))


def make_system(model: Model, sp: SPRegularizer, X: Array, y: Array) -> PathSystem:
    """The system for ``model`` (lasso, logistic or svm)."""
    if isinstance(model, SVMModel):
        return SVMSystem(model, sp, X, y)
    if isinstance(model, LassoModel | LogisticModel):
        return GLMSystem(model, sp, X, y)
    from spl_bench.errors import ConfigError

    raise ConfigError(f"GAGA supports the models lasso, logistic and svm, not {model.name!r}")
