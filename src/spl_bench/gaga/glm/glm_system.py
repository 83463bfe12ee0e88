"""The GLM path system of GAGA eq. (5): any model made of a datafit and a penalty.

See :mod:`spl_bench.gaga.core.system_base` for the equations.  The system is built from
``model.datafit`` (per-sample ``ell``, ``ell'``, ``ell''`` of the linear predictor
``z``; :mod:`spl_bench.models.datafits`) and ``model.penalty`` (intercept or not,
support, ``R'`` and ``R''`` on it, feature events; :mod:`spl_bench.models.penalties`).

Event functions, in this order (``>= 0`` while the tracked sets are valid):

* a *sparse* penalty (L1): one per feature, the active coefficient's ``sign * w_j``
  (it reaches 0) or the inactive feature's ``1 - |g_j| / lev`` (its subgradient reaches
  ``+-1``);
* two per sample: the distance of its loss to the lower / upper boundary of its SP
  set (E, M, D);
* a *piecewise* datafit (Huber): one per sample, the distance of its linear predictor
  to the boundary of its tracked piece; :meth:`GLMSystem.move` flips the piece.

The losses and their derivatives are evaluated with the *tracked* pieces (each
piece's formula continued past its boundary), as ``v*`` is with the tracked sets,
so the system stays smooth up to the event.

The products with the design ``Phi = [X_A, 1]`` and the Newton fits of the weighted GLM are
:class:`~spl_bench.gaga.glm.design.GLMDesign` (re-exported here), which ``GLMSystem`` extends.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor, Factor
from spl_bench.gaga.core.refined import CholeskyFactor, RefinedFactor
from spl_bench.gaga.core.system_base import (
    SAMPLE_SETS,
    Array,
    CompiledRun,
    PathSystem,
    _has_mixed,
    sp_v,
    sp_weights,
)
from spl_bench.gaga.core.woodbury import WoodburyFactor
from spl_bench.gaga.glm import segment_nb
from spl_bench.gaga.glm.design import GLMDesign
from spl_bench.gaga.glm.inner import weighted_lasso
from spl_bench.models import Model, Params
from spl_bench.models.datafits import Quadratic
from spl_bench.models.penalties import L1
from spl_bench.sp import EASY, HARD, MIXED, SPRegularizer

#: set names of features in event records (sparse penalties)
ACTIVE, INACTIVE = "A", "inactive"


class GLMSystem(GLMDesign, PathSystem):
    """A linear model ``sum_i v_i ell(x_i^T w (+ b), y_i) + R(w)`` from ``model.datafit`` and
    ``model.penalty`` (lasso, L2 logistic regression, Huber-L1, ...)."""

    #: the live rows of the path's equations through ``X = 1 m^T + S`` where ``S`` is sparse
    #: (:meth:`_live`); False: the dense rows (as ``sparse_products`` does for the v-weighted fits)
    sparse_path_products = True
    #: when the latest J_theta factorised was not positive definite, factorise the next by LU first
    #: and attempt Cholesky only if det J > 0 (:meth:`factor`); False: Cholesky first always.  The
    #: same factors either way
    lu_first_when_indefinite = True
    #: the latest J_theta factorised in :meth:`factor` was not positive definite
    _last_indefinite = False
    #: Cholesky attempts left out because the LU said det J < 0 (class default: old checkpoints resume)
    n_cholesky_skipped = 0
    #: factor() calls served by the n-dimensional form (class default: old checkpoints resume)
    n_woodbury = 0
    #: why the compiled route is not taken, once said (:meth:`_no_compiled_kernels`)
    compiled_route_note: str | None = None
    #: v-weighted fits the exact solver did not finish, made by the model's solver instead
    #: (:meth:`fit_weighted`; class default: old checkpoints resume)
    n_fit_fallbacks = 0
    #: of the exact lasso fits, those made with degenerate pivots (columns dependent on the live rows;
    #: :func:`~spl_bench.gaga.glm.inner.weighted_lasso`)
    n_pivoted_fits = 0

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array) -> None:
        PathSystem.__init__(self, model, sp, X, y)
        GLMDesign.__init__(self, model, X, y)
        if not self.datafit.smooth:
            raise TypeError(f"the GLM path system needs a (piecewise) smooth datafit, not {self.datafit!r}")
        #: offsets of the event blocks: features [0, off), samples [off, poff), pieces [poff, ...)
        self.off = self.d if self.penalty.sparse else 0
        self.poff = self.off + 2 * self.n
        self.piecewise = bool(self.datafit.piecewise)
        self.n_events = self.poff + (self.n if self.piecewise else 0)
        self._cache: dict[str, Any] = {}
        #: (factor of a J_theta, the support it was made on, max |J_theta|): RefinedFactor's reference
        self._ref: tuple[Factor, NDArray[np.bool_], float] | None = None
        #: the latest reference of the other kind (LU if ``_ref`` is a Cholesky factor, and the
        #: reverse): tried when ``_ref`` does not refine (see :meth:`factor`)
        self._ref_other: tuple[Factor, NDArray[np.bool_], float] | None = None
        self.n_refined = self.n_full_factors = 0  # factor() calls served by refinement / by an LU

    # ------------------------------------------------------------------ state
    def init_from(self, params: Params, lam: float) -> None:
        self.w = np.array(params.coef, dtype=float)
        self.b = float(params.intercept) if self.icpt else 0.0
        self.active = np.asarray(self.penalty.support(self.w), dtype=bool)
        self.sign = np.sign(self.w) if self.penalty.sparse else np.zeros(self.d)
        z = self.X @ self.w + self.b
        self.piece = self.datafit.pieces(z, self.y)
        ell, _, _ = self._loss(z)
        self.code = self.sp.partition(ell, lam)
        self._invalidate()

    def _state(self) -> dict[str, Any]:
        return {"w": self.w, "b": self.b, "active": self.active, "sign": self.sign, "code": self.code,
                "piece": self.piece}

    set_fields = ("active", "sign", "code", "piece")

    def _invalidate(self) -> None:
        super()._invalidate()
        self._cache = {}

    #: cache entries that are copies of the data for the current sets (made again on first use)
    _DATA_COPIES = ("XA", "XL", "rowsL", "cL", "aXL", "Xi")

    def __getstate__(self) -> dict[str, Any]:
        """The state for a checkpoint (:mod:`spl_bench.gaga.core.checkpoint`) without the copies of the
        data that the accessors make again on first use (``X[:, A]``, its live rows and their
        absolute values: most of a large checkpoint)."""
        state = self.__dict__.copy()
        state["_cache"] = {k: v for k, v in self._cache.items() if k not in self._DATA_COPIES}
        state.pop("_split_rows", None)
        state.pop("_woodbury_cache", None)
        return state

    def _XA(self) -> Array:
        if "XA" not in self._cache:
            self._cache["XA"] = np.ascontiguousarray(self.X[:, self.active])
        return self._cache["XA"]

    def theta(self) -> Array:
        wa = self.w[self.active]
        return np.append(wa, self.b) if self.icpt else wa.copy()

    def set_theta(self, theta: Array) -> None:
        k = int(self.active.sum())
        self.w[self.active] = theta[:k]
        if self.icpt:
            self.b = float(theta[k])

    def params(self) -> Params:
        return Params(coef=self.w.copy(), intercept=self.b)

    def full_vector(self) -> tuple[Array, float]:
        return self.w.copy(), self.b

    def full_derivative(self, dtheta: Array) -> tuple[Array, float]:
        dw = np.zeros(self.d)
        k = int(self.active.sum())
        dw[self.active] = dtheta[:k]
        return dw, (float(dtheta[k]) if self.icpt else 0.0)

    # ------------------------------------------------------------ equations
    def _loss(self, z: Array, rows: NDArray[np.intp] | None = None) -> tuple[Array, Array, Array]:
        """``(ell, d ell/dz, d^2 ell/dz^2)`` with the tracked pieces (of ``rows``, default all samples)."""
        if rows is None:
            return self.datafit.derivatives(z, self.y, self.piece)
        return self.datafit.derivatives(z, self.y[rows], self.piece[rows])

    def _live(self) -> tuple[Any, NDArray[np.intp], NDArray[np.int8]]:
        """``(X_A, rows, code)`` on the samples not in D: samples in D have ``v = 0`` and
        ``dv* = 0``, so they contribute nothing to ``F`` or its Jacobians.

        ``X_A`` is the dense rows, or, with every feature in the model (a smooth penalty),
        ``sparse_path_products`` and ``X = 1 m^T + S`` with a sparse ``S``
        (:meth:`~spl_bench.gaga.glm.design.GLMDesign._split_of_x`), the split's rows: the
        residual, ``J_lam`` and the products ``J_theta x`` of refined solves then read the
        non-zeros of ``S`` (hiva_agnostic's standardised binary features: 8 % of the entries,
        a product some 6 times faster than with the dense rows), equal to the dense products
        to rounding."""
        if "XL" not in self._cache:
            live = np.flatnonzero(self.code != HARD)
            split = self._split_of_x() if self.sparse_path_products and self.active.all() else None
            self._cache["XL"] = split.rows(live) if split is not None else np.ascontiguousarray(self._XA()[live])
            self._cache["rowsL"] = live
            self._cache["cL"] = self.code[live]
        return self._cache["XL"], self._cache["rowsL"], self._cache["cL"]

    def _abs_live(self) -> Array:
        """``|X_A|`` on the live rows (the rounding bound of refined solves), cached per sets."""
        if "aXL" not in self._cache:
            self._cache["aXL"] = abs(self._live()[0])  # (exact for the split too)
        return self._cache["aXL"]

    def _live_terms(self, theta: Array, lam: float) -> tuple[Array, Array, Array, Array, Array, Array]:
        """``X_A``, ``ell'``, ``ell''``, ``v``, ``dv/dell``, ``dv/dlam`` on the live samples.

        Memoised for the latest point (per sets): the residual and the Jacobians are often
        evaluated at the same point (a Newton-projected point, then the derivative there).
        """
        hit = self._cache.get("terms")
        if hit is not None and hit[0] == lam and np.array_equal(hit[1], theta):
            return hit[2]
        XL, rows, cL = self._live()
        ell, l1, l2 = self._loss(self._predictor(theta, XL), rows)
        v, dl, dlam = sp_weights(self.sp, ell, cL, lam)
        out = (XL, l1, l2, v, dl, dlam)
        self._cache["terms"] = (lam, theta.copy(), out)
        return out

    def residual(self, theta: Array, lam: float) -> Array:
        XA, l1, _, v, _, _ = self._live_terms(theta, lam)
        F = self._phi_T(v * l1, XA)
        k = XA.shape[1]
        F[:k] += self.penalty.grad(theta[:k], self.sign[self.active], self.n)
        return F

    def _curvature(self, theta: Array, lam: float) -> tuple[Array, Array, Array]:
        """``(X_A of the live rows, D, J_lam)`` with ``J_theta = Phi^T diag(D) Phi + R''``:
        ``D = v ell'' + (dv/dell) ell'^2`` (GAGA eq. (5) differentiated through ``v*``)."""
        XA, l1, l2, v, dl, dlam = self._live_terms(theta, lam)
        return XA, v * l2 + dl * l1 * l1, self._phi_T(dlam * l1, XA)

    def jacobians(self, theta: Array, lam: float) -> tuple[Array, Array]:
        XA, D, Jl = self._curvature(theta, lam)
        return self._gram(theta, XA, D, self._live()[1]), Jl

    def factor(self, theta: Array, lam: float) -> tuple[AnyFactor, Array]:
        """``(factorised J_theta, J_lam)``.  With ``refine_min_dim`` or more unknowns, solves
        refine on the latest factorised ``J_theta`` of the same support (:class:`RefinedFactor`:
        ``O(n k)`` per iteration instead of ``O(n k^2 + k^3)`` per point); ``J_theta`` is formed
        and factorised afresh when the refinement does not contract, and becomes the reference.
        With fewer live samples than unknowns (``woodbury_max_ratio``), ``J_theta`` is solved in the
        samples' dimension instead (:meth:`_woodbury_route`)."""
        live = self._live()[1]
        if self.active.all() and self.woodbury_applies(theta.shape[0], live.size):
            out = self._woodbury_route(theta, lam, live)
            if out is not None:
                return out
        if theta.shape[0] < self.refine_min_dim:
            self.n_full_factors += 1
            return super().factor(theta, lam)
        XA, D, Jl = self._curvature(theta, lam)

        def full() -> Factor | CholeskyFactor:
            J = self.jacobians(theta, lam)[0]
            if self._last_indefinite and self.lu_first_when_indefinite:
                # The last J formed was not positive definite, and the mixture SP keeps J indefinite
                # over long stretches of a path: a Cholesky attempt there fails after most of its
                # work.  LU first: det J < 0 (an odd number of negative eigenvalues) rules out
                # positive definiteness, so the LU is what the Cholesky-first order would give;
                # otherwise Cholesky is attempted as before.  The same factor either way.
                lu = Factor(J)
                if lu.sign < 0:
                    self.n_cholesky_skipped += 1
                    f = lu
                else:
                    f = CholeskyFactor.attempt(J) or lu
            else:
                f = CholeskyFactor.attempt(J) or Factor(J)
            self._last_indefinite = not isinstance(f, CholeskyFactor)
            if not f.singular:
                old = self._ref
                if old is not None and isinstance(old[0], CholeskyFactor) != isinstance(f, CholeskyFactor):
                    self._ref_other = old
                self._ref = (f, self.active.copy(), float(np.abs(J).max(initial=0.0)))
            return f

        # The references of both kinds: the path's J_theta is indefinite where the mixture SP's
        # concave terms outweigh the rest, and ACS polishes and earlier segments leave references
        # of the other inertia, which conjugate gradients reject at their first direction
        # (``p^T J p <= 0``) at the cost of two products; a factor of J costs hundreds.
        for ref in (self._ref, getattr(self, "_ref_other", None)):
            if ref is None or ref[0].n != theta.shape[0] or not np.array_equal(ref[1], self.active):
                continue
            f = RefinedFactor(self._jvp(theta, XA, D), ref[0], full, jscale=ref[2],
                              max_iter=self.refine_max_iter if isinstance(ref[0], CholeskyFactor) else 10,
                              bound=self._jvp_bound(theta, XA, D, self._abs_live()))
            _, ok = f.refine(-Jl)
            if ok:
                self.n_refined += 1
                if ref is not self._ref:  # the kind that refines now goes first
                    self._ref, self._ref_other = ref, self._ref
                if f.iterations > self.refine_refresh:
                    self._ref = None  # drifted away: the next point forms its own J
                return f, Jl
        self.n_full_factors += 1
        return full(), Jl

    def _woodbury_route(self, theta: Array, lam: float, live: NDArray[np.intp]) -> tuple[AnyFactor, Array] | None:
        """``(J_theta in the live samples' dimension, J_lam)`` (:meth:`GLMDesign._woodbury_factor`), or
        ``None`` where its reduced matrix is singular.  Each call factorises afresh: refining on the
        latest such factor (Richardson, as the ``k``-dimensional route does) took longer on the wide
        proxy of ``bench_families`` (48.7 against 36.4 CPU-s), an LU of order ``m`` being cheap there."""
        _, D, Jl = self._curvature(theta, lam)
        th = theta.copy()
        wf = self._woodbury_factor(live, th, D, lambda: self.jacobians(th, lam)[0])
        if wf is None:
            return None
        self.n_woodbury += 1
        return wf, Jl

    def fit_weighted(self, v: Array, warm: Params) -> Params:
        """The v-weighted fit of an ACS step (GAGA Algorithm 1), warm-started from ``warm``.

        Quadratic datafit with L1: the exact active-set solver.  A smooth datafit with a smooth
        penalty: damped Newton (:meth:`newton_fit`; with ``refine_min_dim`` or more unknowns its
        systems are solved by refinement, below that by a Cholesky factor of the Hessian).
        Otherwise, or if these do not converge, the model's solver (counted: ``n_fit_fallbacks``).
        """
        if isinstance(self.datafit, Quadratic) and isinstance(self.penalty, L1):
            counts: dict[str, int] = {}
            w = weighted_lasso(self.X, self.y, v, self.penalty.level(self.n), warm.coef,
                               compiled=self.compiled_fits, counts=counts)
            self.n_pivoted_fits += counts.get("pivoted", 0)
            if w is not None:
                return Params(coef=w)
            self.n_fit_fallbacks += 1
        elif self.smooth_fit() and warm.coef is not None and np.isfinite(warm.coef).all():
            out = self.newton_fit(v, warm)
            if out is not None:
                return out
            self.n_fit_fallbacks += 1
        return self.model.fit_weighted(self.X, self.y, v, warm=warm)

    def fit_has_unique_minimiser(self) -> bool:
        """A smooth datafit with a smooth (L2) penalty (:meth:`smooth_fit`): the v-weighted problem is
        strictly convex in ``w`` (and in ``b`` where ``sum v ell'' > 0``), and :meth:`newton_fit` solves
        it to a gradient of 1e-11."""
        return self.smooth_fit()

    def stable(self, theta: Array, lam: float) -> bool:
        """``J_theta`` is the Hessian of the SPL objective on the current face: positive definite?

        A refined factor (:class:`RefinedFactor`) certifies that ``J_theta`` has its reference's
        inertia: the reference's factorisation answers.  A Cholesky factor, or a
        :class:`WoodburyFactor` on its symmetric route, says yes; otherwise J is formed and tested.
        """
        f, _ = self.factor(theta, lam)
        if isinstance(f, RefinedFactor):
            f = f.ref
        if isinstance(f, CholeskyFactor) or (isinstance(f, WoodburyFactor) and f.positive_definite):
            return True
        J = f.J
        if J.shape[0] == 0:
            return True
        try:
            np.linalg.cholesky(0.5 * (J + J.T))
        except np.linalg.LinAlgError:
            return False
        return True

    def residual_scale(self) -> float:
        return self.penalty.kkt_scale(self.w, self.n)

    def compiled_follow(self, lam0: float, lam_max: float, opts: Any, cap: int, max_events: int,
                        last_event: float) -> CompiledRun | None:
        """The path from ``lam0`` by the compiled follower (:func:`segment_nb.follow`), for the
        lasso (quadratic datafit, L1 penalty) with a regularizer that gives its compiled kernels
        (:meth:`~spl_bench.sp.base.SPRegularizer.compiled_kernels`; one that does not is said
        once, as a warning and in :meth:`info`) and fewer than ``refine_min_dim`` active features
        (above, the refined solves of :meth:`factor` cost less than its LU per step); ``None``
        where it does not apply.

        ``opts``: the engine's options (``max_step``, ``newton_tol``, ``event_tol``,
        ``dense_tol``).  The system's state is left where the compiled loop stopped.
        """
        if not (type(self.datafit) is Quadratic and type(self.penalty) is L1):
            return None
        kind = self.sp.compiled_kernels()
        if kind is None:
            self._no_compiled_kernels()
            return None
        if int(self.active.sum()) >= self.refine_min_dim:
            return None
        active, sign, w, code = self.active.copy(), self.sign.copy(), self.w.copy(), self.code.copy()
        (status, n_rec, ages, recw, recd, rkind, rseg, n_ev, ev_lam, ev_kind, n_mv, mv, t_end, crossed,
         counts) = segment_nb.follow(
            np.ascontiguousarray(self.X, dtype=float), np.ascontiguousarray(self.y, dtype=float), active, sign,
            w, code, self.penalty.level(self.n), *kind, lam0, lam_max, opts.max_step, opts.newton_tol,
            opts.event_tol, opts.dense_tol, cap, max_events, last_event)
        moves: list[list[tuple[int, str, str]]] = [[] for _ in range(n_ev)]
        feature_set = (INACTIVE, ACTIVE)
        for e, i, feat, a, b in mv[:n_mv]:
            names = feature_set if feat else SAMPLE_SETS
            moves[e].append((int(i), names[int(a)], names[int(b)]))
        kinds = ("step", "critical", "after")
        records = [(float(ages[r]), recw[r].copy(), 0.0, recd[r].copy(), 0.0, int(rseg[r]), kinds[rkind[r]])
                   for r in range(n_rec)]
        events: list[dict[str, Any]] = []
        for e in range(n_ev):
            if ev_kind[e]:
                events.append({"lam": float(ev_lam[e]), "kind": "jump", "moves": moves[e],
                               "reason": "discontinuous: new partial optimum found by Newton"})
            else:
                events.append({"lam": float(ev_lam[e]), "kind": "turning", "moves": moves[e]})
        self.restore({"w": w, "b": self.b, "active": active, "sign": sign, "code": code, "piece": self.piece})
        return CompiledRun(int(status), records, events, float(t_end), crossed, counts)

    def _no_compiled_kernels(self) -> None:
        """Say once that the regularizer has no compiled kernels, so the compiled route is not taken."""
        if self.compiled_route_note is None:
            self.compiled_route_note = (
                f"the {self.sp.name!r} SP-regularizer ({type(self.sp).__name__}) gives no compiled kernels "
                "(SPRegularizer.compiled): its segments are followed on the reference (ODE) route")
            warnings.warn(self.compiled_route_note, stacklevel=3)

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n_refined_solves": self.n_refined, "n_jacobian_factors": self.n_full_factors,
                               "n_cholesky_skipped": self.n_cholesky_skipped, "n_woodbury_factors": self.n_woodbury,
                               "n_fit_fallbacks": self.n_fit_fallbacks,
                               "n_pivoted_fits": self.n_pivoted_fits}
        if self.compiled_route_note is not None:
            out["compiled_route"] = self.compiled_route_note
        return out

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

    def _feature_events(self, thetas: Array, ell: Array, l1: Array, lam: Any) -> Array:
        """Events of the features (sparse penalty) at one point (``thetas`` 1-D, ``lam`` a
        number) or several (2-D, one row per point, ``lam`` a column of ages)."""
        k = int(self.active.sum())
        hf = np.empty(thetas.shape[:-1] + (self.d,))
        hf[..., self.active] = self.penalty.active_slack(thetas[..., :k], self.sign[self.active])
        if k < self.d:
            v = sp_v(self.sp, ell, self.code, lam)
            g = self._X_inactive().T @ (v * l1) if ell.ndim == 1 else (v * l1) @ self._X_inactive()
            hf[..., ~self.active] = self.penalty.inactive_slack(g, self.n)
        return hf

    def _subset_is_local(self, idx: NDArray[np.intp] | None) -> bool:
        """``idx`` holds no inactive feature: its events need only the rows of the samples
        involved (an inactive feature's subgradient needs every residual)."""
        return idx is not None and not np.any(~self.active[idx[idx < self.off]])

    def events(self, theta: Array, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        if self._subset_is_local(idx):
            return self.events_many(theta[None, :], np.array([lam]), idx)[0]
        lo, hi = self.sp.thresholds(lam)
        z = self._predictor(theta, self._XA())
        ell, l1, _ = self._loss(z)
        h1, h2 = self._sample_events(ell, None, lo, hi)
        parts = [h1, h2]
        if self.off:
            parts.insert(0, self._feature_events(theta, ell, l1, lam))
        if self.piecewise:
            parts.append(self.datafit.piece_distance(z, self.y, self.piece))
        h = np.concatenate(parts)
        return h if idx is None else h[idx]

    def events_many(self, thetas: Array, lams: Array, idx: NDArray[np.intp] | None = None) -> Array:
        """Vectorised :meth:`events` (one matrix product for all points).

        With ``idx`` (and no inactive feature among them) only the rows of the samples
        involved are used, as in :meth:`events`.
        """
        off, poff = self.off, self.poff
        th = np.array([self.sp.thresholds(float(lam)) for lam in lams])
        if self._subset_is_local(idx):
            out = np.empty((lams.size, idx.size))
            feat = idx < off
            if np.any(feat):
                pos = np.cumsum(self.active) - 1
                j = idx[feat]
                out[:, feat] = self.penalty.active_slack(thetas[:, pos[j]], self.sign[j])
            smp = (idx >= off) & (idx < poff)
            if np.any(smp):
                q = idx[smp] - off
                i = q % self.n
                ell, _, _ = self._loss(self._predictor(thetas, self._XA()[i]), i)
                h1, h2 = self._sample_events(ell, self.code[i], th[:, :1], th[:, 1:])
                out[:, smp] = np.where(q >= self.n, h2, h1)
            pcs = idx >= poff
            if np.any(pcs):
                i = idx[pcs] - poff
                Z = self._predictor(thetas, self._XA()[i])
                out[:, pcs] = self.datafit.piece_distance(Z, self.y[i], self.piece[i])
            return out
        Z = self._predictor(thetas, self._XA())
        ell, l1, _ = self._loss(Z)
        h1, h2 = self._sample_events(ell, None, th[:, :1], th[:, 1:])
        parts = [h1, h2]
        if off:
            parts.insert(0, self._feature_events(thetas, ell, l1, lams[:, None]))
        if self.piecewise:
            parts.append(self.datafit.piece_distance(Z, self.y, self.piece))
        h = np.hstack(parts)
        return h if idx is None else h[:, idx]

    def event_scale(self, lam: float, idx: NDArray[np.intp] | None = None) -> Array:
        """(Cached for the latest age, sets and coefficient size: do not modify the result.)"""
        wscale = 1e-3 + float(np.abs(self.w).max(initial=0.0)) if self.off else 0.0
        hi = self.sp.thresholds(lam)[1]
        if idx is not None:
            out = np.full(idx.size, 1.0 + hi)
            feat = idx < self.off
            out[feat] = np.where(self.active[idx[feat]], wscale, 1.0)
            out[idx >= self.poff] = self.datafit.boundary_scale()
            return out
        key = (lam, wscale)
        hit = self._cache.get("scale")
        if hit is not None and hit[0] == key:
            return hit[1]
        parts = [np.full(2 * self.n, 1.0 + hi)]
        if self.off:
            parts.insert(0, np.where(self.active, wscale, 1.0))
        if self.piecewise:
            parts.append(np.full(self.n, self.datafit.boundary_scale()))
        s = np.concatenate(parts)
        self._cache["scale"] = (key, s)
        return s

    def move(self, positions: NDArray[np.intp], lam: float) -> list[tuple[int, str, str]]:
        moves: list[tuple[int, str, str]] = []
        mixed_ok = _has_mixed(self.sp, lam)
        z = self.X @ self.w + self.b
        ell, l1, _ = self._loss(z)
        vl1: Array | None = None  # v * ell', for features entering the support
        for p in sorted(set(int(q) for q in positions)):
            if p < self.off:
                j = p
                if self.active[j]:
                    self.active[j] = False
                    self.w[j] = 0.0
                    self.sign[j] = 0.0
                    moves.append((j, ACTIVE, INACTIVE))
                else:
                    if vl1 is None:
                        vl1 = sp_v(self.sp, ell, self.code, lam) * l1
                    self.active[j] = True
                    self.w[j] = 0.0
                    self.sign[j] = self.penalty.entering_sign(float(self.X[:, j] @ vl1))
                    moves.append((j, INACTIVE, ACTIVE))
                continue
            if p >= self.poff:
                i = p - self.poff
                old_piece = int(self.piece[i])
                new_piece = self.datafit.next_piece(float(z[i]), float(self.y[i]), old_piece)
                self.piece[i] = new_piece
                names = self.datafit.piece_names
                moves.append((i, names[old_piece], names[new_piece]))
                continue
            i = (p - self.off) % self.n
            upper = (p - self.off) >= self.n
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
