"""MOSPL: multi-objective self-paced learning (Li, Gong, Meng and Miao, AAAI 2016; GAGA ref. [29]).

MOSPL drops the age ``lam`` of the SPL objective (GAGA eq. (1))::

    min_{w, v in [0,1]^n}  sum_i v_i ell_i(w) + R(w) + sum_i f(v_i, lam)

and, for SP-regularizers of the form ``f(v, lam) = lam g(v)``, treats the two
parts as objectives of a bi-objective problem::

    f1(w, v) = sum_i v_i ell_i(w) + R(w)        (weighted loss)
    f2(v)    = sum_i g(v_i)                     (self-paced term; g(v) = v^2/2 - v for
                                                 the linear, v^t/t - v for the polynomial
                                                 regularizer of GAGA ref. [19])

so that the SPL objective at age ``lam`` is the scalarisation ``f1 + lam f2`` and
the Pareto front is an approximate age-path.  The front is approximated by
NSGA-III (GAGA appendix D.2: population 150, 800 generations).

Encoding ("w with v induced", see docs/mospl.md)
-----------------------------------------------
An individual is ``(theta, z)``: the model parameters ``theta`` (``w`` for the
lasso, ``(w, b)`` for logistic regression, the kernel expansion ``(beta, b)`` of
``f(x) = sum_j beta_j K(x_j, x) + b`` for the SVM) and an inverse age ``z >= 0``.
Its weights are induced: ``v = v*(ell(theta), 1/z) = v*(z ell(theta), 1)``
(``z = 0`` gives ``v = 1``).  This loses no Pareto point: for fixed ``theta`` the
problem in ``v`` is convex (``f1`` linear, ``f2`` strictly convex for ``t > 1``),
so every Pareto-optimal ``v`` minimises ``f1 + lam f2`` for some ``lam`` in
``[0, inf]``, i.e. is ``v*(ell, lam)``.  Every evaluation is closed-form (one
matrix product for the population), which makes ``150 x 800`` evaluations cheap.

The final candidates are the Pareto points, each refit by an exact weighted
solver at its induced ``v`` (``refit=True``; the refit weakly improves ``f1`` and
leaves ``f2`` unchanged).  With ``refit_solver="exact"`` (default) the refits are
chained: the points are visited from the most to the fewest samples in use and
each fit is warm-started from the previous one with GAGA's exact warm-started
solvers (the ones the ACS baseline uses, :mod:`spl_bench.methods._acs_solvers`);
``refit_solver="model"`` fits each point with the model's own solver from its
evolved parameters (the earlier behaviour).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from spl_bench.errors import ConfigError, check_positive
from spl_bench.methods._acs_solvers import WeightedFits, make_inner_solver, solver_info
from spl_bench.methods._moo_backends import BACKENDS, REF_DIRS, MOOResult, non_dominated, run_nsga3
from spl_bench.methods.base import Array, SPLEstimator
from spl_bench.models import Model, Params
from spl_bench.models.svm import SVMModel, resolve_gamma
from spl_bench.sp import SPRegularizer, get_sp

INIT_MODES = ("extremes", "random")
#: values of the option ``refit_solver``
REFIT_SOLVERS = ("exact", "model")
FULL_FITS = ("exact", "model")
KERNEL_PRODUCTS = ("factor", "matrix")


def refit_order(V: Array) -> Array:
    """The order of the chained refits: most samples with ``v > 0`` first, ties by ``sum v``.

    Neighbours in this order have similar weights, so each refit starts close to its
    solution; the first one starts from the ``v = 1`` fit.  Sorting is stable, so equal
    keys keep the front order.
    """
    V = np.atleast_2d(V)
    return np.lexsort((-V.sum(axis=1), -(V > 0).sum(axis=1)))


def refit_chain(fits: WeightedFits, X: Array, y: Array, V: Array, order: Array, start: Params | None,
                done: Callable[[int], None] | None = None) -> list[Params]:
    """Fit ``fits.fit_weighted(X, y, V[k])`` for every ``k`` of ``order``, each warm-started
    from the previous fit (the first from ``start``); the fits in the rows' order of ``V``.
    ``done(i)``, when given, is called after the ``i``-th fit (progress reports)."""
    out: list[Params | None] = [None] * len(V)
    warm = start
    for i, k in enumerate(order, 1):
        warm = fits.fit_weighted(X, y, V[k], warm=warm)
        out[int(k)] = warm
        if done is not None:
            done(i)
    if any(p is None for p in out):
        raise ValueError("refit_chain: order must visit every row of V")
    return out  # type: ignore[return-value]


def check_age_linear(sp: SPRegularizer, rtol: float = 1e-9) -> None:
    """Raise :class:`ConfigError` unless ``f(v, lam) = lam f(v, 1)`` and ``v*(ell, lam) = v*(ell/lam, 1)``.

    MOSPL's split of the SPL objective into ``f1`` and ``f2`` (with ``lam`` as the
    scalarisation weight) needs an SP-regularizer linear in the age; the linear,
    polynomial and hard regularizers are, the mixture and LOG ones are not.
    """
    v = np.linspace(0.0, 1.0, 11)
    ell = np.array([0.0, 0.05, 0.3, 0.9, 1.7, 4.0])
    for lam in (0.37, 2.9):
        try:  # an age outside the regularizer's range (LOG: lam < 1) also disqualifies it
            pen_ok = np.allclose(sp.penalty(v, lam), lam * sp.penalty(v, 1.0), rtol=rtol, atol=1e-12)
            v_ok = np.allclose(sp.v_star(ell, lam), sp.v_star(ell / lam, 1.0), rtol=1e-7, atol=1e-9)
        except ConfigError:
            pen_ok = v_ok = False
        if not (pen_ok and v_ok):
            raise ConfigError(
                f"MOSPL needs an SP-regularizer linear in the age, f(v, lam) = lam g(v) "
                f"(linear, polynomial, hard); {sp!r} is not.  For the mixture runs the GAGA paper "
                "uses the polynomial regularizer: sp=polynomial sp.params.t=1.2 (or 1.35)"
            )


class MOSPLProblem:
    """The bi-objective MOSPL problem of one training set, vectorised over a population.

    Parameters
    ----------
    model : Model
        A linear model made of a datafit and a penalty (:class:`~spl_bench.models.glm.GLMModel`:
        lasso, logistic, huber) or the kernel :class:`SVMModel`.
    sp : SPRegularizer
        An SP-regularizer linear in the age (see :func:`check_age_linear`).
    X, y : arrays
        Training rows and targets (labels in {-1, +1} for classification).

    Notes
    -----
    A genome is the row ``[theta, z]``; ``n_theta`` is the length of ``theta``.
    """

    def __init__(self, model: Model, sp: SPRegularizer, X: Array, y: Array, kernel_product: str = "matrix") -> None:
        self.model = model
        self.sp = sp
        self.X = X
        self.y = y
        n, d = X.shape
        self.d = d
        #: the per-sample loss of the decision values (every model here has one)
        self.datafit = getattr(model, "datafit", None)
        #: a linear kernel's K = X X^T applied through its factor X (``kernel_product="factor"``)
        self.K_factor: Array | None = None
        if isinstance(model, SVMModel):
            self.kind = "svm"
            self.n_theta = n + 1
            self.gamma = resolve_gamma(model.gamma, X)
            if kernel_product == "factor" and model.kernel == "linear":
                self.K_factor = np.ascontiguousarray(X, dtype=float)
            else:
                if n * n * 8 > 4e9:
                    raise ConfigError(f"MOSPL with the kernel SVM needs the {n} x {n} kernel matrix (> 4 GB)")
                self.K = model.kernel_matrix(X, X, self.gamma)
        elif self.datafit is not None and getattr(model, "penalty", None) is not None:
            # a linear model: theta = w, plus b if the penalty leaves an intercept
            self.kind = "glm"
            self.penalty = model.penalty
            self.icpt = bool(self.penalty.has_intercept)
            self.n_theta = d + 1 if self.icpt else d
        else:
            raise ConfigError(
                f"MOSPL supports the svm model and models with a datafit and a penalty, not {model.name!r}"
            )
        self.n_var = self.n_theta + 1

    # ------------------------------------------------------------- pieces
    def decision_and_reg(self, G: Array) -> tuple[Array, Array]:
        """Decision values ``(p, n)`` and regulariser ``R(theta)`` ``(p,)`` of each genome."""
        T = G[:, : self.n_theta]
        if self.kind == "glm":
            W = T[:, : self.d]
            D = W @ self.X.T
            if self.icpt:
                D = D + T[:, -1][:, None]
            R = self.penalty.value(W, len(self.y))
        else:  # the kernel expansion
            B, b = T[:, :-1], T[:, -1]
            # K is symmetric; with a linear kernel B K = (B X) X^T: O(p n d) instead of O(p n^2)
            KB = B @ self.K if self.K_factor is None else (B @ self.K_factor) @ self.K_factor.T
            D = KB + b[:, None]
            R = 0.5 * np.einsum("pj,pj->p", B, KB)
        return D, R

    def losses_from_decision(self, D: Array) -> Array:
        """Per-sample losses ``ell_i`` (the model's datafit), shape ``(p, n)``."""
        return self.datafit.value(D, self.y)

    def weights(self, L: Array, z: Array) -> Array:
        """Induced weights ``v*(ell, 1/z) = v*(z ell, 1)`` of each row of ``L`` (``z = 0``: ``v = 1``)."""
        return self.sp.v_star_scaled(L, z)

    def evaluate_full(self, G: Array) -> tuple[Array, Array, Array]:
        """``(F, V, L)``: objectives ``[f1, f2]`` ``(p, 2)``, weights and losses ``(p, n)``."""
        G = np.atleast_2d(np.asarray(G, dtype=float))
        D, R = self.decision_and_reg(G)
        L = self.losses_from_decision(D)
        V = self.weights(L, G[:, -1])
        f1 = np.einsum("pi,pi->p", V, L) + R
        f2 = self.sp.penalty(V, 1.0).sum(axis=1)
        F = np.column_stack([f1, f2])
        if not np.all(np.isfinite(F)):
            raise FloatingPointError("MOSPL objective is not finite")
        return F, V, L

    def f1(self, G: Array, V: Array) -> Array:
        """Weighted objective ``sum_i v_i ell_i + R`` of each genome at given weights ``V`` (``(p, n)``)."""
        G = np.atleast_2d(np.asarray(G, dtype=float))
        D, R = self.decision_and_reg(G)
        return np.einsum("pi,pi->p", np.atleast_2d(V), self.losses_from_decision(D)) + R

    def evaluate(self, G: Array) -> Array:
        """Objectives ``[f1, f2]`` of each genome (the function NSGA-III minimises)."""
        return self.evaluate_full(G)[0]

    # ------------------------------------------------------ genome <-> Params
    def params(self, g: Array) -> Params:
        """The model :class:`Params` of one genome (its ``theta`` part)."""
        theta = np.asarray(g, dtype=float)[: self.n_theta]
        if self.kind == "glm":
            return Params(coef=theta[: self.d].copy(), intercept=float(theta[-1]) if self.icpt else 0.0)
        # dual_coef a_j with a_j y_j = beta_j, so decision_function gives K beta + b
        return Params(
            dual_coef=theta[:-1] * self.y,
            intercept=float(theta[-1]),
            X_fit=self.X,
            y_fit=self.y,
            extra={"gamma": self.gamma},
        )

    def theta(self, params: Params) -> Array:
        """The ``theta`` part of a genome for fitted model :class:`Params`."""
        if self.kind == "glm":
            coef = np.asarray(params.coef, dtype=float)
            return np.append(coef, params.intercept) if self.icpt else coef.copy()
        return np.append(params.dual_coef * params.y_fit, params.intercept)

    def g_at_one(self) -> float:
        """``f2`` at ``v = 1`` (its minimum, reached as ``lam -> inf``)."""
        return float(self.sp.penalty(np.ones(len(self.y)), 1.0).sum())


class MOSPL(SPLEstimator):
    """Multi-objective SPL with NSGA-III; the candidates are the Pareto points.

    Parameters
    ----------
    model, model_params, sp, sp_params
        As for every method (:class:`~spl_bench.methods.base.SPLEstimator`).
        ``sp`` must be linear in the age (linear, polynomial, hard); ``sp="mixture"``
        is replaced by the polynomial regularizer of order ``mixture_t`` (GAGA
        appendix D.2).
    pop_size, n_gen : int
        NSGA-III population size and number of generations (paper: 150 and 800).
    backend : {"geatpy", "pymoo"}
        Evolutionary library: geatpy's ``moea_NSGA3_templet`` (package ``geatpy-rs``;
        the GAGA authors' choice, default) or pymoo's ``NSGA3``.
    ref_dirs : {"das-dennis", "energy"}
        NSGA-III reference directions (pymoo back-end; geatpy builds its own uniform
        points, so only ``das-dennis`` is accepted with ``backend="geatpy"``).
    seed : int
        Seed of the evolutionary search (initial population and operators).
    lam_min : float
        Smallest age the encoding can express: the inverse age ``z`` lies in
        ``[0, 1/lam_min]`` (``z = 0`` is ``lam = inf``).
    bound_scale : float
        Box of the linear-model parameters: ``|w_j| <= bound_scale * max|w_full|``
        with ``w_full`` the ``v = 1`` solution (and likewise for the intercept).
        SVM expansion coefficients use their exact box ``|beta_j| <= C``.
    init : {"extremes", "random"}
        Initial population: ``theta = s w_full + noise`` with ``s ~ U(0, 1)``
        (between the ``lam -> 0`` and ``lam -> inf`` solutions), or uniform in the box.
    init_sigma : float
        Noise of the ``extremes`` initialisation, relative to the box half-width.
    refit : bool
        Refit every Pareto point with the exact weighted solver at its induced ``v``.
    refit_solver : {"exact", "model"}
        ``exact`` (default): the refits are chained along :func:`refit_order`, each
        warm-started from the previous one, with GAGA's exact warm-started solvers
        (lasso: the active-set ``weighted_lasso``; SVM: ``WeightedSVMDual`` on the
        precomputed kernel, libsvm's point where it gives up, the ACS option
        ``inner_solver=hybrid``; logistic regression: the model's
        solver, there is no exact one).  ``model``: the model's own solver per point,
        warm-started from its evolved parameters.  Both reach the optimum of the same
        weighted problem.
    full_fit : {"exact", "model"}
        The ``v = 1`` fit that sets the box and the initial population: ``exact`` (default) by
        the exact solver of the refits (``inner_solver=hybrid``: the SVM's weighted dual, the lasso's
        active set, the refined Newton fit of a wide logistic model; the model's solver where none
        applies), the refit chain then sharing its kernel and factors; ``model``: the model's own
        solver (libsvm for the SVM; the rows made before 2026-11-29).  Both solve the same
        problem; libsvm stops at its tolerance (decision values within about 1e-3), and the
        search compares objective values exactly, so the two give other Pareto sets.
    kernel_product : {"factor", "matrix"}
        How the SVM's decision values ``K beta`` of a generation are formed: ``factor`` (default)
        through ``X`` for a linear kernel, ``(B X) X^T`` (O(p n d) per generation instead of
        O(p n^2), and no ``n x n`` matrix); ``matrix``: through the kernel matrix (an RBF kernel
        always; the rows made before 2026-11-29).  The same numbers up to rounding, but the
        search compares objective values exactly, so the two give other Pareto sets.
    mixture_t : float
        Polynomial order used when ``sp="mixture"`` (paper: 1.2 and 1.35).
    """

    def __init__(
        self,
        model: str = "lasso",
        model_params: dict[str, Any] | None = None,
        sp: str = "linear",
        sp_params: dict[str, Any] | None = None,
        pop_size: int = 150,
        n_gen: int = 800,
        backend: str = "geatpy",
        ref_dirs: str = "das-dennis",
        seed: int = 40,
        lam_min: float = 0.01,
        bound_scale: float = 3.0,
        init: str = "extremes",
        init_sigma: float = 0.1,
        refit: bool = True,
        refit_solver: str = "exact",
        full_fit: str = "exact",
        kernel_product: str = "factor",
        mixture_t: float = 1.2,
    ) -> None:
        super().__init__(model=model, model_params=model_params, sp=sp, sp_params=sp_params)
        self.pop_size = pop_size
        self.n_gen = n_gen
        self.backend = backend
        self.ref_dirs = ref_dirs
        self.seed = seed
        self.lam_min = lam_min
        self.bound_scale = bound_scale
        self.init = init
        self.init_sigma = init_sigma
        self.refit = refit
        self.refit_solver = refit_solver
        self.full_fit = full_fit
        self.kernel_product = kernel_product
        self.mixture_t = mixture_t

    # ------------------------------------------------------------ settings
    def _make_sp(self) -> SPRegularizer:
        if self.sp == "mixture":
            return get_sp("polynomial", t=self.mixture_t)
        return super()._make_sp()

    def _check_settings(self) -> None:
        if int(self.pop_size) != self.pop_size or int(self.pop_size) < 4:
            raise ConfigError(f"method.pop_size must be an integer >= 4, got {self.pop_size!r}")
        if int(self.n_gen) != self.n_gen or int(self.n_gen) < 1:
            raise ConfigError(f"method.n_gen must be an integer >= 1, got {self.n_gen!r}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"unknown method.backend {self.backend!r}; valid: {', '.join(BACKENDS)}")
        if self.ref_dirs not in REF_DIRS:
            raise ConfigError(f"unknown method.ref_dirs {self.ref_dirs!r}; valid: {', '.join(REF_DIRS)}")
        if self.backend == "geatpy" and self.ref_dirs != "das-dennis":
            raise ConfigError(
                f"method.ref_dirs={self.ref_dirs} needs method.backend=pymoo (geatpy uses its own uniform points)"
            )
        if self.refit_solver not in REFIT_SOLVERS:
            raise ConfigError(
                f"unknown method.refit_solver {self.refit_solver!r}; valid: {', '.join(REFIT_SOLVERS)}"
            )
        if self.full_fit not in FULL_FITS:
            raise ConfigError(f"unknown method.full_fit {self.full_fit!r}; valid: {', '.join(FULL_FITS)}")
        if self.kernel_product not in KERNEL_PRODUCTS:
            raise ConfigError(f"unknown method.kernel_product {self.kernel_product!r}; valid: "
                              f"{', '.join(KERNEL_PRODUCTS)}")
        if self.init not in INIT_MODES:
            raise ConfigError(f"unknown method.init {self.init!r}; valid: {', '.join(INIT_MODES)}")
        check_positive("method.lam_min", self.lam_min)
        check_positive("method.bound_scale", self.bound_scale)
        if not float(self.init_sigma) >= 0:
            raise ConfigError(f"method.init_sigma must be >= 0, got {self.init_sigma!r}")

    # ---------------------------------------------------------------- box
    def _box(self, prob: MOSPLProblem, theta_full: Array) -> tuple[Array, Array]:
        """Search box ``[xl, xu]`` of the genome ``[theta, z]``."""
        s = float(self.bound_scale)
        if prob.kind == "glm":
            hw = s * max(float(np.abs(theta_full[: prob.d]).max(initial=0.0)), 1e-3)
            half = np.full(prob.n_theta, hw)
            if prob.icpt:
                half[-1] = s * max(abs(float(theta_full[-1])), 1.0)
        else:
            hb = s * max(abs(float(theta_full[-1])), 1.0)
            half = np.append(np.full(prob.n_theta - 1, prob.model.C), hb)
        xl = np.append(-half, 0.0)
        xu = np.append(half, 1.0 / float(self.lam_min))
        return xl, xu

    def _initial_population(self, rng: np.random.Generator, xl: Array, xu: Array, theta_full: Array) -> Array | None:
        if self.init == "random":
            return None  # the back-end's uniform sampling in the box
        p, m = int(self.pop_size), xl.size
        s = rng.uniform(0.0, 1.0, size=(p, 1))
        half = 0.5 * (xu[:-1] - xl[:-1])
        theta = s * theta_full[None, :] + float(self.init_sigma) * half * rng.standard_normal((p, m - 1))
        theta[0] = theta_full  # the exact lam -> inf solution ...
        theta[1] = 0.0  # ... and the exact lam -> 0 solution (argmin R = 0)
        z = rng.uniform(0.0, xu[-1], size=p)
        z[0], z[1] = 0.0, xu[-1]
        return np.clip(np.column_stack([theta, z]), xl, xu)

    # ----------------------------------------------------------------- fit
    def _fit(self, X: Array, y: Array) -> None:
        self._check_settings()
        sp = self._make_sp()
        check_age_linear(sp)
        model = self.model_
        prob = MOSPLProblem(model, sp, X, y, kernel_product=self.kernel_product)
        # the exact solvers of the refits; "hybrid": an RBF refit whose guess-and-check gives up is
        # libsvm's point, as in the committed rows (ACS now solves libsvm's sets exactly there; for
        # MOSPL that would change its RBF rows, ~130 such refits per pendigits run)
        # (distant_starts: consecutive refits' weights differ much more than ACS iterates')
        exact = self.full_fit == "exact" or (self.refit and self.refit_solver == "exact")
        fits, used = make_inner_solver("hybrid", model, X, y, distant_starts=True) if exact else (model, "model")
        # the v = 1 fit: the box, the initial population and the refit chain's first warm start
        t_full = time.perf_counter()
        full = (fits if self.full_fit == "exact" else model).fit_weighted(X, y, np.ones(len(y)))
        full_seconds = time.perf_counter() - t_full
        full_counts = solver_info(fits) if self.full_fit == "exact" else {}
        self.full_fit_used_ = ("exact" if used == "hybrid" else used) if self.full_fit == "exact" else "model"
        theta_full = prob.theta(full)
        xl, xu = self._box(prob, theta_full)
        rng = np.random.default_rng(int(self.seed))
        init = self._initial_population(rng, xl, xu, theta_full)
        n_gen = int(self.n_gen)
        generation = 0

        def evaluate(G: Array) -> Array:  # the back-ends evaluate one whole generation per call
            nonlocal generation
            F = prob.evaluate(G)
            generation += 1
            self._progress("mospl", stage="evolution", generation=min(generation, n_gen), n_gen=n_gen)
            return F

        hooked = getattr(self, "_progress_hook", None) is not None
        res: MOOResult = run_nsga3(
            self.backend,
            evaluate if hooked else prob.evaluate,
            xl,
            xu,
            n_obj=2,
            pop_size=int(self.pop_size),
            n_gen=int(self.n_gen),
            seed=int(self.seed),
            init=init,
            ref_dirs=self.ref_dirs,
        )
        keep = non_dominated(res.F)
        G = res.X[keep]
        # order along the front, f1 increasing (f2 decreasing): from the youngest point
        # (few samples) to the oldest one (v = 1 when z = 0), the base class's default
        F, V, _ = prob.evaluate_full(G)
        order = np.lexsort((-F[:, 1], F[:, 0]))
        G, F, V = G[order], F[order], V[order]

        def refitted(i: int) -> None:
            self._progress("mospl", stage="refit", done=i, total=len(G))

        t0 = time.perf_counter()
        F_refit = F.copy()
        self.refit_solver_used_ = "none"
        self.refit_info_: dict[str, Any] = {}
        if not self.refit:
            models = [prob.params(g) for g in G]
        elif self.refit_solver == "exact":
            self.refit_solver_used_ = "exact" if used == "hybrid" else used
            models = refit_chain(fits, X, y, V, refit_order(V), full, done=refitted)
            # the refits' counters: the solver's own ("inner_*") less those of the full fit it made
            self.refit_info_ = {k: v - full_counts.get(k, 0) if k.startswith("inner_") else v
                                for k, v in solver_info(fits).items()}
        else:
            self.refit_solver_used_ = "model"
            models = []
            for k in range(len(G)):
                models.append(model.fit_weighted(X, y, V[k], warm=prob.params(G[k])))
                refitted(k + 1)
        if self.refit:
            T = np.array([prob.theta(p) for p in models])
            F_refit[:, 0] = prob.f1(np.column_stack([T, G[:, -1]]), V)
        refit_seconds = time.perf_counter() - t0

        z = G[:, -1]
        self.problem_ = prob
        self.sp_ = sp
        self.front_genomes_ = G
        self.front_F_ = F
        self.front_F_refit_ = F_refit
        self.front_v_ = V
        self.lam_equiv_ = np.where(z > 0, 1.0 / np.where(z > 0, z, 1.0), np.inf)
        self.full_params_ = full
        self.moo_result_ = res
        self._timing = {"ea_seconds": res.seconds, "refit_seconds": refit_seconds, "full_fit_seconds": full_seconds}
        self.candidate_models_ = models
        self.candidate_params_ = [
            {
                "pareto_index": k,
                "lam_equiv": float(lam) if np.isfinite(lam) else None,
                "f1": float(F_refit[k, 0]),
                "f2": float(F_refit[k, 1]),
            }
            for k, lam in enumerate(self.lam_equiv_)
        ]

    def run_info(self) -> dict[str, Any]:
        finite = self.lam_equiv_[np.isfinite(self.lam_equiv_)]
        return {
            **super().run_info(),
            "backend": self.moo_result_.backend,
            "sp_used": repr(self.sp_),
            "n_pareto": len(self.candidate_params_),
            "n_evals": int(self.moo_result_.n_evals),
            "ea_seconds": float(self._timing["ea_seconds"]),
            "refit_seconds": float(self._timing["refit_seconds"]),
            "refit_solver": self.refit_solver_used_,
            "full_fit_seconds": float(self._timing["full_fit_seconds"]),
            "full_fit": self.full_fit_used_,
            "kernel_product": "factor" if getattr(self.problem_, "K_factor", None) is not None else "matrix",
            **{f"refit_{k.removeprefix('inner_')}": v for k, v in self.refit_info_.items()},
            "lam_equiv_min": float(finite.min()) if finite.size else None,
            "lam_equiv_max_finite": float(finite.max()) if finite.size else None,
            "n_lam_inf": int((~np.isfinite(self.lam_equiv_)).sum()),
        }
