"""The GLM path system (lasso, L2 logistic regression) of GAGA eq. (5); see
:mod:`spl_bench.gaga.system_base` for the equations."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from spl_bench.gaga.inner import weighted_lasso
from spl_bench.gaga.system_base import SAMPLE_SETS, Array, PathSystem, _has_mixed, sp_v, sp_weights
from spl_bench.models import Model, Params
from spl_bench.models.lasso import LassoModel
from spl_bench.models.logistic import LogisticModel
from spl_bench.sp import EASY, HARD, MIXED, SPRegularizer


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
