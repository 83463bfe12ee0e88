"""The design-matrix algebra of the GLM path system: products with ``Phi = [X_A, 1]``.

``GLMDesign`` holds the products of GAGA eq. (5) for a linear model made of ``model.datafit``
and ``model.penalty``: the Gram matrix ``J_theta = Phi^T diag(D) Phi + R''(w_A)``, the
Jacobian-vector product ``x -> J_theta x`` (and the bound on its rounding), and the v-weighted
fit ``argmin sum_i v_i ell(z_i) + R(w)`` by damped (inexact) Newton on them.  The path system
(:class:`~spl_bench.gaga.glm.glm_system.GLMSystem`) and the exact inner solver of the ACS / MOSPL
baselines (``methods._acs_solvers.ExactGLMFits``) share it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import Factor
from spl_bench.gaga.core.gram import RankOnePlusSparse, weighted_gram
from spl_bench.gaga.core.refined import CholeskyFactor, RefinedFactor
from spl_bench.gaga.core.system_base import Array
from spl_bench.gaga.core.woodbury import WoodburyFactor
from spl_bench.models import Model, Params


class GLMDesign:
    """Products with the design ``Phi = [X_A, 1]`` (the intercept column if the penalty has one) of
    a linear model made of ``model.datafit`` and ``model.penalty``, and the v-weighted fit by
    Newton on them (:meth:`newton_fit`).  Shared by the path system (:class:`GLMSystem`) and the
    exact inner solver of the ACS / MOSPL baselines (``methods._acs_solvers.ExactGLMFits``).

    ``theta`` is ``(w_A, b)`` with an intercept, ``w_A`` without.
    """

    #: this many unknowns or more: solves with J_theta / the fit's Hessian by refinement
    #: (:class:`~spl_bench.gaga.core.refined.RefinedFactor`) and the v-weighted fits by :meth:`newton_fit`
    refine_min_dim = 400
    #: products with the data a refined solve may take (conjugate gradients) before the matrix is
    #: formed afresh
    refine_max_iter = 40
    #: an accepted refined solve that took more products than this retires its reference: the
    #: next solve forms the matrix at its own point (``O(n k^2)`` to form and ``O(k^3)`` to factorise
    #: against ``O(n k)`` per product, so a slow reference costs more than a new one) and the solves
    #: after it converge in a few
    refine_refresh = 15
    #: inexact Newton in :meth:`newton_fit`: a refined solve of a Newton system stops at a relative
    #: residual ``min(newton_forcing, |g| / scale)`` (the forcing term of inexact Newton, which keeps
    #: the convergence quadratic) instead of 1e-13; 0 solves every Newton system to 1e-13
    newton_forcing = 1e-2
    #: :meth:`newton_fit` checks each refined Newton step against ``|g|`` itself: the step ``s``
    #: is kept when ``|H s + g| <= forcing |g|`` (or below the products' rounding, 1e-13 times
    #: the summed terms), else the Hessian is formed at the point and solved exactly.  The refined
    #: solves' own test is relative to the larger of ``|g|`` and the summed terms' size, which on
    #: many standardised columns (hiva, 1,617) is 60-600 times ``|g|``: steps with residuals near
    #: ``|g|`` pass, Newton converges linearly and gives up after ``max_iter`` (MOSPL's refits then
    #: fall back to the model's solver, 89 of 148 on Table 5 hiva).  With the check on, the refined
    #: solves themselves are held to the check's test (residuals relative to ``|g|``, not to the
    #: summed terms), so that conjugate gradients go on where they would have stopped short and the
    #: Hessian is formed only where they do not converge.  Off by default: GAGA's and the
    #: ACS baseline's fits start next to their answers; MOSPL's refits switch it on
    #: (``make_inner_solver(distant_starts=True)``)
    newton_step_check = False
    #: this many columns or more: ``Phi^T diag(D) Phi`` by BLAS ``syrk`` (:func:`weighted_gram`);
    #: fewer: one general product (``syrk``'s two passes and the mirroring cost more there)
    syrk_min_dim = 100
    #: the products of :meth:`newton_fit` through ``X = 1 m^T + S`` when ``S`` is sparse
    #: (:meth:`_fit_rows`); False: always the dense rows
    sparse_products = True
    #: ``J_theta`` and the fits' Hessians from the non-zeros of ``S`` (:meth:`_gram`) when at most
    #: this share ``rho`` of ``S`` is non-zero: the loop costs about ``n (rho k)^2 / 2`` products
    #: against the dense rank-k update's ``n k^2 / 2`` multiply-adds, but a product of the loop
    #: (scattered rows, cache misses) costs some 60 of BLAS's, so it pays while ``60 rho^2 < 1``
    sparse_gram_max_density = 0.1
    #: solve with ``J_theta`` and the fits' Hessians in the dimension of the live samples
    #: (:class:`~spl_bench.gaga.core.woodbury.WoodburyFactor`) when the penalty is smooth
    #: (``R'' > 0`` on every coefficient), there are ``refine_min_dim`` unknowns or more and the live
    #: samples plus the intercept number at most this share of them; 0: never.  An LU of order
    #: ``m + 1`` replaces forming the matrix (``m k^2``) and factorising it (``k^3``): at 0.5 its
    #: ``(m + 1)^3`` is an eighth of the LU of the ``k``-order matrix alone.  GAGA on the table
    #: cells stays on the ``k``-dimensional route (hiva_agnostic, Tables 5-6, seed 0: 0.755 k live
    #: samples or more); the ACS baseline's first fits on Table 6 (0.364 k) take this one
    woodbury_max_ratio = 0.5

    def __init__(self, model: Model, X: Array, y: Array) -> None:
        self.model = model
        self.X, self.y = X, y
        self.n, self.d = X.shape
        self.datafit = model.datafit  # type: ignore[attr-defined]
        self.penalty = model.penalty  # type: ignore[attr-defined]
        self.icpt = bool(self.penalty.has_intercept)
        #: (Cholesky / LU factor of a Hessian of the v-weighted fit, its max |.|): newton_fit's reference
        self._fit_ref: tuple[Factor | CholeskyFactor, float] | None = None

    def _XA(self) -> Array:
        return self.X

    def _jvp_bound(self, theta: Array, XA: Array, D: Array, absXA: Array | None = None) -> Callable[[Array], float]:
        """``x -> max (|Phi|^T (|D| |Phi| |x|) + |R''| |x|)``: the size of the terms summed in a
        product ``J_theta x`` (:meth:`_jvp`), whose rounding floors the residuals it can measure.
        ``absXA``: ``|XA|`` if already at hand."""
        k = XA.shape[1]
        hd = np.abs(self.penalty.hess_diag(theta[:k], self.n))
        aD = np.abs(D)

        def bound(x: Array) -> float:
            ax = np.abs(x)
            aX = abs(XA) if absXA is None else absXA
            u = aD * (aX @ ax[:k] + (ax[k] if self.icpt else 0.0))
            out = aX.T @ u + hd * ax[:k]
            return float(max(out.max(initial=0.0), u.sum() if self.icpt else 0.0))

        return bound

    def smooth_fit(self) -> bool:
        """Smooth datafit and smooth penalty: the weighted fit is a smooth convex problem
        (:meth:`newton_fit` solves it)."""
        return not self.penalty.sparse and not self.datafit.piecewise

    def newton_fit_applies(self) -> bool:
        """:meth:`smooth_fit` with ``refine_min_dim`` unknowns or more (where the refined Newton
        solves pay off against the model's own solver)."""
        return self.smooth_fit() and self.d + self.icpt >= self.refine_min_dim

    def _predictor(self, thetas: Array, XA: Array) -> Array:
        """``z`` of the rows of ``XA`` for ``theta`` (1-D) or one row per point (2-D)."""
        k = XA.shape[1]
        if thetas.ndim == 1:
            z = XA @ thetas[:k]
            return z + thetas[k] if self.icpt else z
        Z = thetas[:, :k] @ XA.T
        if self.icpt:
            Z += thetas[:, k:k + 1]
        return Z

    def _phi_T(self, u: Array, XA: Array | None = None) -> Array:
        """``Phi^T u`` (over all samples, or over the rows of ``XA``)."""
        out = (self._XA() if XA is None else XA).T @ u
        return np.append(out, u.sum()) if self.icpt else out

    def _gram(self, theta: Array, XA: Array, D: Array, rows: NDArray[np.intp] | None = None) -> Array:
        """``Phi^T diag(D) Phi + R''(w_A)`` over the rows of ``XA`` (``Phi = [X_A, 1]`` with an intercept).

        ``rows``: the rows of ``X`` that ``XA`` holds, when ``XA`` has every column; then, with
        :meth:`_sparse_gram`, the products are those of the non-zeros of ``S``
        (:meth:`RankOnePlusSparse.weighted_gram`), not those of the dense rows.
        """
        k = XA.shape[1]
        split = self._sparse_gram() if rows is not None and k == self.d else None
        if split is None and not isinstance(XA, np.ndarray):  # the split's rows, too dense for its Gram
            XA = np.ascontiguousarray(self.X[rows])
        if split is not None:
            Dn = np.zeros(self.n)
            Dn[rows] = D
            JA = split.weighted_gram(Dn)
        elif k >= self.syrk_min_dim:
            JA = weighted_gram(XA, D)
        else:
            JA = XA.T @ (D[:, None] * XA)
        JA[np.diag_indices(k)] += self.penalty.hess_diag(theta[:k], self.n)
        if not self.icpt:
            return JA
        J = np.empty((k + 1, k + 1))
        J[:k, :k] = JA
        # (a product, not DX.sum(axis=0): column sums of a tall C-ordered array are slow)
        col = split.T @ Dn if split is not None else D @ XA
        J[:k, k] = col
        J[k, :k] = col
        J[k, k] = D.sum()
        return J

    def _jvp(self, theta: Array, XA: Array, D: Array) -> Callable[[Array], Array]:
        """``x -> J_theta x`` (``x`` a vector) without forming ``J_theta`` (two products with the live rows)."""
        k = XA.shape[1]
        hd = self.penalty.hess_diag(theta[:k], self.n)

        def matvec(x: Array) -> Array:
            out = self._phi_T(D * self._predictor(x, XA), XA)
            out[:k] += hd * x[:k]
            return out

        return matvec

    def _split_of_x(self) -> RankOnePlusSparse | None:
        """``X`` as ``1 m^T + S`` with a sparse ``S`` (:class:`RankOnePlusSparse`), made on first use,
        with ``refine_min_dim`` unknowns or more, a smooth fit and ``sparse_products``; else ``None``."""
        split = getattr(self, "_split", False)  # False: not looked at yet (also for older pickles)
        if split is False:
            split = None
            if self.sparse_products and self.smooth_fit() and self.d + self.icpt >= self.refine_min_dim:
                split = RankOnePlusSparse.split(self.X)
            self._split = split
        return split

    def _sparse_gram(self) -> RankOnePlusSparse | None:
        """The split of ``X`` (:meth:`_split_of_x`) if its ``S`` is sparse enough for the Gram
        products to pay (``sparse_gram_max_density``), else ``None``."""
        split = self._split_of_x()
        if split is None or split.S.nnz > self.sparse_gram_max_density * self.n * self.d:
            return None
        return split

    def _fit_rows(self, live: NDArray[np.intp]) -> tuple[Any, Any, Callable[[], Array]]:
        """``(X_L, |X_L| or None, () -> dense X_L)`` for the rows ``live`` of a v-weighted fit.

        With ``refine_min_dim`` unknowns or more and ``X = 1 m^T + S`` with a sparse ``S``
        (:class:`~spl_bench.gaga.core.gram.RankOnePlusSparse`; ``sparse_products``), ``X_L`` and
        ``|X_L|`` are that form, whose products read a fraction of the memory of the dense rows;
        the dense rows are made only when a Hessian is formed.  The latest rows are kept (the
        live set of consecutive ACS fits is mostly the same)."""
        split = self._split_of_x()
        if split is None:
            XL = np.ascontiguousarray(self.X[live])
            return XL, None, lambda: XL
        key = live.tobytes()
        hit = getattr(self, "_split_rows", None)
        if hit is None or hit[0] != key:
            rows = split.rows(live)
            hit = self._split_rows = (key, rows, abs(rows))
        dense: list[Array] = []

        def make_dense() -> Array:
            if not dense:
                dense.append(np.ascontiguousarray(self.X[live]))
            return dense[0]

        return hit[1], hit[2], make_dense

    def newton_fit(self, v: Array, warm: Params, tol: float = 1e-11, max_iter: int = 50) -> Params | None:
        """``argmin sum_i v_i ell(z_i) + R(w)`` by damped Newton from ``warm``.

        With ``refine_min_dim`` or more unknowns each Newton system is solved by conjugate
        gradients preconditioned by the Cholesky factor of the Hessian of an earlier step or fit
        (:class:`RefinedFactor`; the Hessian is formed and factorised afresh when they do not
        converge in ``refine_max_iter`` products); with fewer, by the Hessian's own Cholesky
        factor (forming it costs less than the products there).  With fewer live samples than
        unknowns (:meth:`woodbury_applies`), each Newton system is solved exactly in the samples'
        dimension instead (:class:`~spl_bench.gaga.core.woodbury.WoodburyFactor`).

        The refined solves are inexact Newton steps: each stops at a relative residual of
        ``min(newton_forcing, |g| / scale)``, so far from the optimum a step takes a few products
        and near it the steps are as accurate as the gradient is small (quadratic convergence,
        Dembo, Eisenstat & Steihaug 1982).  The stopping test below is on the exact gradient, so the
        point returned meets the same tolerance as with exact steps.

        Stops when the gradient is below ``tol`` relative to its datafit part (the scale of the
        model's KKT check); ``None`` when it does not get there (the caller falls back).
        """
        live = np.flatnonzero(v > 0)
        if live.size == 0 or (self.model.task == "classification" and np.unique(self.y[live]).size < 2):
            return None
        XL, aXL, dense = self._fit_rows(live)
        vL, yL = v[live], self.y[live]
        theta = np.append(warm.coef, float(warm.intercept)) if self.icpt else np.array(warm.coef, dtype=float)
        k = self.d
        no_sign = np.zeros(k)

        def terms(th: Array) -> tuple[float, Array, Array]:
            ell, l1, l2 = self.datafit.derivatives(self._predictor(th, XL), yL)
            obj = float(vL @ ell) + float(self.penalty.value(th[:k], self.n))
            return obj, vL * l1, vL * l2

        obj, u, D = terms(theta)
        # fewer live samples than unknowns: each Newton system exactly in their dimension
        wide = self.woodbury_applies(theta.shape[0], live.size)
        for _ in range(max_iter):
            g = self._phi_T(u, XL)
            scale = 1.0 + float(np.abs(g[:k]).max())
            g[:k] += self.penalty.grad(theta[:k], no_sign, self.n)
            gmax = float(np.abs(g).max())
            if gmax <= tol * scale:
                return Params(coef=theta[:k].copy(), intercept=float(theta[k]) if self.icpt else 0.0)

            def full(_th: Array = theta, _D: Array = D) -> Factor | CholeskyFactor:
                # (through the split, the dense rows are not needed: the Gram takes the non-zeros)
                H = self._gram(_th, XL if self._sparse_gram() is not None else dense(), _D, live)
                f = CholeskyFactor.attempt(H) or Factor(H)
                if not f.singular:
                    self._fit_ref = (f, float(np.abs(H).max(initial=0.0)))
                return f

            ref = self._fit_ref
            if wide:
                step = (self._woodbury_factor(live, theta, D, lambda: full().J) or full()).solve(-g)
            elif ref is not None and ref[0].n == theta.shape[0] >= self.refine_min_dim:
                aXL = abs(XL) if aXL is None else aXL
                forcing = min(self.newton_forcing, gmax / scale)
                rtol, bound = max(forcing, 1e-13), self._jvp_bound(theta, XL, D, aXL)
                jscale, floor = ref[1], bound
                if self.newton_step_check:
                    # conjugate gradients held to the check's own test, |H s + g| <= max(forcing |g|,
                    # 1e-13 bound(s)): residuals relative to |g| (jscale 0), floored at the products'
                    # rounding (bound scaled by 1e-13 / rtol, since pcg multiplies its floor by rtol)
                    jscale, floor = 0.0, lambda x, _b=bound, _t=rtol: 1e-13 / _t * _b(x)
                solver = RefinedFactor(self._jvp(theta, XL, D), ref[0], full, jscale=jscale, tol=rtol,
                                       max_iter=self.refine_max_iter, bound=floor)
                step = solver.solve(-g)
                if self.newton_step_check and not self._newton_step_ok(theta, XL, D, aXL, step, g, forcing):
                    step = full().solve(-g)  # (and its factor is the next steps' reference)
                elif solver.iterations > self.refine_refresh:
                    self._fit_ref = None  # drifted away: the next step forms its own Hessian
            else:
                step = full().solve(-g)
            decrease = -float(g @ step)  # g^T H^-1 g: twice the decrease the quadratic model predicts
            if not decrease > 0:
                return None
            accepted = self._damped_step(terms, theta, step, obj, decrease)
            if accepted is None:
                return None
            theta, obj, u, D = accepted
        return None

    def _newton_step_ok(self, theta: Array, XL: Any, D: Array, aXL: Any, step: Array, g: Array,
                        forcing: float) -> bool:
        """``|H step + g| <= max(forcing |g|, 1e-13 bound(step))`` (``newton_step_check``): one more
        product with the data, ``O(n k)``."""
        r = float(np.abs(self._jvp(theta, XL, D)(step) + g).max())
        floor = 1e-13 * self._jvp_bound(theta, XL, D, aXL)(step)
        return bool(np.isfinite(r)) and r <= max(forcing * float(np.abs(g).max()), floor)

    def woodbury_applies(self, k: int, m: int) -> bool:
        """Solve the systems of ``k`` unknowns on ``m`` live samples in the samples' dimension
        (:class:`WoodburyFactor`)?  A smooth penalty, ``k >= refine_min_dim`` and
        ``m + icpt <= woodbury_max_ratio k``."""
        if self.penalty.sparse or k < self.refine_min_dim or not self.woodbury_max_ratio > 0:
            return False
        return m + self.icpt <= self.woodbury_max_ratio * k

    def _woodbury_factor(self, live: NDArray[np.intp], theta: Array, D: Array,
                         form: Callable[[], Array]) -> WoodburyFactor | None:
        """:class:`WoodburyFactor` of ``Phi^T diag(D) Phi + R''`` on the rows ``live`` of ``X`` (every
        column: a smooth penalty; ``form() -> J`` formed densely, for its ``J``), or ``None`` when its
        reduced matrix is singular or ``R''`` is not positive (the caller factorises ``J`` itself).
        ``K = X_L diag(R'')^-1 X_L^T`` is kept for the latest two sets of rows (the path's and the
        ACS fits')."""
        k = self.d
        r = np.asarray(self.penalty.hess_diag(theta[:k], self.n), dtype=float)
        if not (r > 0).all() or not np.isfinite(r).all():
            return None  # (a penalty flat somewhere: diag(r) is not invertible)
        key = live.tobytes()
        cache = getattr(self, "_woodbury_cache", None)
        if cache is None:
            cache = self._woodbury_cache = {}
        hit = cache.get(key)
        if hit is None or not np.array_equal(hit[0], r):
            XL = np.ascontiguousarray(self.X[live])
            hit = (r.copy(), XL, (XL / r) @ XL.T)
            if len(cache) >= 2:
                cache.pop(next(iter(cache)))
            cache[key] = hit
        f = WoodburyFactor(hit[1], r, D, hit[2], n_free=int(self.icpt), form=form)
        return None if f.singular else f

    @staticmethod
    def _damped_step(terms: Callable[[Array], tuple[float, Array, Array]], theta: Array, step: Array,
                     obj: float, decrease: float) -> tuple[Array, float, Array, Array] | None:
        """The damped Newton point ``theta + t step`` of :meth:`newton_fit` and its ``terms``.

        ``t`` halves from 1 until the Armijo condition ``obj(theta + t step) <= obj - 1e-4 t
        decrease`` holds (``decrease = g^T H^-1 g``); ``None`` when 30 halvings do not get there
        or the objective is not finite.
        """
        t = 1.0
        cand = theta + step
        obj_c, u_c, D_c = terms(cand)
        if decrease > 1e-13 * (1.0 + abs(obj)):
            # backtracking (Armijo); below that the objective cannot tell the steps apart
            # (the full Newton step is taken: near the optimum it is quadratically convergent)
            for _ in range(30):
                if np.isfinite(obj_c) and obj_c <= obj - 1e-4 * t * decrease:
                    break
                t *= 0.5
                cand = theta + t * step
                obj_c, u_c, D_c = terms(cand)
            else:
                return None
        if not np.isfinite(obj_c):
            return None
        return cand, obj_c, u_c, D_c
