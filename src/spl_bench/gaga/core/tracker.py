"""The GAGA path-following engine (GAGA Algorithm 2, appendix C).

One engine for every model x SP-regularizer pair: a :class:`~spl_bench.gaga.core.system_base.PathSystem`
supplies ``F = 0`` (eq. (5)) for the current index sets, its Jacobians and its
event functions; the engine

1. starts from a converged ACS solution at ``lam_min`` (polished by Newton on ``F``);
2. follows ``dtheta/dlam = -J_theta^{-1} J_lam`` (Theorem 3) with a scipy ODE
   stepper (tight tolerances, dense output; by default RK45, handing a segment
   over to LSODA when it looks stiff), driven step by step so that all
   set-boundary events are checked at once, vectorised, after each step;
3. locates the first event inside a step on the step's dense output (grid scans,
   then secant / regula falsi on Newton-projected points), moves the violating
   indices (appendix C) and checks that the new sets give a valid continuation
   (the KKT conditions of the v*-weighted problem keep holding: residual of ``F``
   unchanged and every event function non-negative just after the point).  If so
   it is a *turning point*; otherwise a *jump point*: ACS is warm-started at ``lam + delta`` and a
   restart is counted.  A sign change of ``det J`` (a fold of the path) or a
   solver failure is also a jump point.

Every recorded point is projected back onto ``F = 0`` by a few Newton steps,
so the recorded path is exact to the Newton tolerance, not to the ODE tolerance.

This module holds the tracker and its options; the entry point :func:`~spl_bench.gaga.api.age_path`
(and plain :func:`~spl_bench.gaga.api.acs`), which picks the model's system, is in
:mod:`spl_bench.gaga.api`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import BDF, DOP853, LSODA, RK45, OdeSolver
from scipy.optimize import brentq

from spl_bench.gaga.core.acs_skip import AffineSkip
from spl_bench.gaga.core.continuation import PredictorCorrector
from spl_bench.gaga.core.linalg import AnyFactor
from spl_bench.gaga.core.path import AgePath
from spl_bench.gaga.core.system_base import EVENT, FULL, REACHED, CompiledRun, PathSystem
from spl_bench.models import Model, Params
from spl_bench.sp import SPRegularizer

Array = NDArray[np.float64]


@dataclass
class EngineOptions:
    """Numerical settings of the engine."""

    # scipy OdeSolver: "auto" (RK45; LSODA from a segment's step ``stiff_steps`` on), LSODA, BDF,
    # RK45 or DOP853; or "PC", the predictor-corrector continuation (gaga/core/continuation.py); or
    # "compiled": the lasso's segments by the compiled follower (gaga/glm/segment_nb.py), other
    # systems and the segments it hands back as "auto"
    method: str = "auto"
    stiff_steps: int = 40
    rtol: float = 1e-7
    atol: float = 1e-9
    max_step: float = 0.25
    delta: float = 1e-5  # relative offset of a warm start after a jump point
    newton_tol: float = 1e-12  # relative residual of F
    # points are added inside a solver step until the Hermite interpolant of the recorded points
    # (AgePath.at) matches the solver's dense output to this (relative to 1 + max |values|)
    dense_tol: float = 1e-7
    dense_max_depth: int = 4  # at most 2**depth - 1 added points per step
    event_tol: float = 1e-10  # relative tolerance of an event function
    max_events: int = 200_000
    acs_tol: float = 1e-7
    blas_threads: int | None = 1  # BLAS threads while the path is computed (None: library default)
    acs_max_iter: int = 2000
    # over-relaxed ACS steps while escaping after a jump (GLM models): faster, but the warm
    # start may then settle on another partial optimum than plain ACS (GAGA's definition)
    acs_extrapolate: bool = False
    acs_extrapolate_max: float = 4096.0  # largest over-relaxation factor tried
    # SVM ACS steps by the exact warm-started active-set solver (svm.inner.WeightedSVMDual), libsvm
    # when it gives up; False: libsvm for every step
    svm_active_set: bool = True
    # warm starts: where the ACS map is affine while the sets hold (SVM with the linear or hard
    # SP), creeping iterations are skipped by extrapolating its dominant mode up to just before
    # the first set change (Tracker.acs_skip_ahead); False: every ACS iteration is computed
    acs_skip: bool = True
    # directory of checkpoint files: the path's state is saved there every ``checkpoint_every``
    # seconds (between segments) and a later call with the same inputs resumes from it
    # (:func:`age_path`); None: no checkpoints
    checkpoint_dir: str | None = None
    checkpoint_every: float = 600.0


#: options that do not change the path (left out of the checkpoint key)
_RUN_ONLY_OPTIONS = ("checkpoint_dir", "checkpoint_every", "blas_threads")


@dataclass
class ColumnGroups:
    """Exactly duplicated columns of ``X`` (up to sign), merged for the lasso path.

    With identical columns the lasso solution is not unique (only the sum of the
    group's coefficients is) and every Jacobian containing two of them is
    singular.  The path is followed for the reduced design ``X[:, keep]`` and each
    group's coefficient ``u`` is split equally, ``w_k = s_k u / |group|``: the
    minimum-norm lasso solution, which satisfies the subgradient conditions of the
    original problem exactly (identical columns have identical conditions).
    """

    keep: NDArray[np.intp]  # representative column of each group
    group: NDArray[np.intp]  # group of every original column
    sign: Array  # +1 / -1: original column = sign * representative
    size: NDArray[np.intp]  # number of columns in each group

    @classmethod
    def find(cls, X: Array) -> ColumnGroups:
        d = X.shape[1]
        sign = np.ones(d)
        for j in range(d):  # orient each column by its first non-zero entry
            nz = np.flatnonzero(X[:, j])
            if nz.size and X[nz[0], j] < 0:
                sign[j] = -1.0
        _, keep, group = np.unique((X * sign).T, axis=0, return_index=True, return_inverse=True)
        group = np.asarray(group).ravel()
        order = np.argsort(keep)  # groups in order of their first column
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        keep, group = keep[order], rank[group]
        sign = sign * sign[keep][group]  # relative to the representative
        return cls(keep=keep, group=group, sign=sign, size=np.bincount(group))

    @property
    def trivial(self) -> bool:
        return self.keep.size == self.group.size

    def reduce(self, w: Array) -> Array:
        """Coefficients of the reduced design giving the same ``X w``."""
        return np.bincount(self.group, weights=self.sign * w, minlength=self.keep.size)

    def expand(self, W: Array) -> Array:
        """Split reduced coefficients (rows of ``W``) equally over each group."""
        return W[..., self.group] * (self.sign / self.size[self.group])


#: relative positions inside each solver step where the event functions are also checked
INTERIOR = np.array([0.2, 0.4, 0.6, 0.8])
#: steps retaken shorter per segment when their end cannot be projected onto F = 0
MAX_RETAKES = 4

#: scipy ODE solvers the engine can drive step by step (``EngineOptions.method``)
ODE_SOLVERS: dict[str, type[OdeSolver]] = {"LSODA": LSODA, "BDF": BDF, "RK45": RK45, "DOP853": DOP853}
#: accepted values of ``EngineOptions.method``
ODE_METHODS = ("auto", *ODE_SOLVERS, "PC", "compiled")
#: accepted steps of a compiled segment (:mod:`spl_bench.gaga.glm.segment_nb`) between two returns
#: to the tracker (a longer segment continues in another call)
COMPILED_CAP = 256
#: seconds between two calls of the ``progress`` callback of :func:`age_path` from inside a segment
#: (the call at the end of every segment is always made)
PROGRESS_INTERVAL = 0.25


def illinois(f: Any, a: float, fa: float, b: float, fb: float, ftol: float, xtol: float,
             max_iter: int = 60) -> float:
    """Root of ``f`` in ``[a, b]`` with ``fa >= 0 > fb``, by the Illinois variant of regula falsi.

    Stops at a point with ``|f| <= ftol`` or when the bracket is shorter than ``xtol``
    (then returns its end on the ``f < 0`` side).  Superlinear on smooth ``f``; the
    bracket is kept, so it cannot leave ``[a, b]``.
    """
    side = 0
    for _ in range(max_iter):
        if b - a <= xtol:
            break
        c = b - fb * (b - a) / (fb - fa)
        if not a < c < b:
            c = 0.5 * (a + b)
        fc = f(c)
        if abs(fc) <= ftol:
            return float(c)
        if fc >= 0:
            a, fa = c, fc
            if side == 1:
                fb *= 0.5
            side = 1
        else:
            b, fb = c, fc
            if side == -1:
                fa *= 0.5
            side = -1
    return float(b)


def spl_objective(model: Model, sp: SPRegularizer, params: Params, X: Array, y: Array, lam: float) -> float:
    """The SPL objective with ``v`` minimised out: ``R(w) + sum_i min_v (v ell_i + f(v, lam))``.

    GAGA eq. (2) at ``v = v*(ell, lam)``; ACS decreases it monotonically.
    """
    ell = model.losses(params, X, y)
    return float(model.regularizer(params, len(y)) + sp.sp_objective(sp.v_star(ell, lam), ell, lam).sum())


def acs_step(system: PathSystem, lam: float, params: Params, v: Array) -> tuple[Params, Array]:
    """One ACS iteration (GAGA Algorithm 1): the v-weighted fit, then ``v* = v*(ell, lam)``."""
    params = system.fit_weighted(v, params)
    return params, system.sp.v_star(system.losses(params), lam)


class _Tracker:
    """State of one path computation."""

    def __init__(self, system: PathSystem, model: Model, sp: SPRegularizer, X: Array, y: Array,
                 opts: EngineOptions) -> None:
        self.sys = system
        self.model = model
        self.sp = sp
        self.X = X
        self.y = y
        self.o = opts
        self.lams: list[float] = []
        self.vecs: list[Array] = []
        self.bs: list[float] = []
        self.dvecs: list[Array] = []
        self.dbs: list[float] = []
        self.segs: list[int] = []
        self.kinds: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.seg = 0
        self.n_restarts = 0
        self.n_singular = 0  # right-hand sides with J singular (duplicated samples / columns included)
        self.n_lstsq = 0  # of those, solved by the least-squares fallback (not by merging duplicates)
        self.n_steps = 0
        self.n_rhs = 0
        self.n_failed_warm_starts = 0
        self.n_stiff_switches = 0  # segments handed from RK45 to LSODA (method "auto")
        self.n_compiled_calls = 0  # calls of the compiled follower (method "compiled")
        self.n_compiled_events = 0  # critical points it handled
        self.n_compiled_handbacks = 0  # segments it handed back to the ODE route
        self.n_retaken_steps = 0  # steps retaken shorter: no partial optimum at their end
        self.n_acs_skips = 0  # affine extrapolations in warm starts (acs_skip_ahead)
        self.n_acs_skipped = 0  # ACS iterations they skipped (a jump to a piece's fixed point: not counted)
        self.n_resumes = 0  # times the computation was resumed from a checkpoint (age_path)
        # the segment loop's position (follow): age reached, latest event age, repeats at that age
        self.lam = -np.inf
        self.last_event = -np.inf
        self.repeats = 0
        self.last_factor: AnyFactor | None = None  # factorised J of the latest rhs evaluation
        self.last_sign = 0.0  # its sign of det J
        # ((lam, sets version), theta, rhs) of the latest rhs evaluation
        self._rhs_memo: tuple[tuple[float, int], Array, Array] | None = None
        self._events_memo: list[tuple[tuple[float, int], Array, Array]] = []
        self.progress: Callable[[float, int], None] | None = None  # called with (age, events so far)
        self._progress_next = -np.inf  # time.monotonic() of the next progress call
        self._progress_lam = -np.inf  # the furthest age reported

    # ------------------------------------------------------------- numerics
    def rhs(self, lam: float, ext: Array) -> Array:
        theta = ext[:-1]
        memo = self._rhs_memo
        if memo is not None and memo[0] == (lam, self.sys.version) and np.array_equal(memo[1], theta):
            return memo[2].copy()  # the same point again (recorded, then continued from)
        self.n_rhs += 1
        f, Jl = self.sys.factor(theta, lam)
        self.last_factor, self.last_sign = f, f.sign
        if f.singular:
            self.n_singular += 1
            self.n_lstsq += int(f.least_squares)
        out = np.append(f.solve(-Jl), 0.0)
        self._rhs_memo = ((lam, self.sys.version), theta.copy(), out.copy())
        return out

    def event_values(self, theta: Array, lam: float) -> Array:
        """All event functions at ``(theta, lam)``, memoised for the two latest points (same sets).

        The continuation check of a critical point and the first-step prediction of the
        next segment evaluate the same two points.
        """
        key = (lam, self.sys.version)
        for k, th, h in self._events_memo:
            if k == key and np.array_equal(th, theta):
                return h
        h = self.sys.events(theta, lam)
        self._events_memo = [(key, theta.copy(), h), *self._events_memo[:1]]
        return h

    def newton(self, theta: Array, lam: float, max_iter: int = 8,
               chord: AnyFactor | None = None, stop_singular: bool = False) -> tuple[Array, float]:
        """Project ``theta`` onto ``F(., lam) = 0``; return it and the relative residual.

        With ``chord`` (a factorised Jacobian from a nearby point) the cheap chord
        iteration is tried first and kept while it at least halves the residual;
        full Newton with backtracking finishes.  With ``stop_singular`` a Jacobian that
        needs the least-squares fallback ends the iteration with an infinite residual
        (a trial polish: such sets are not those of a followable partial optimum, and the
        least-squares solves of a large singular system cost more than the rest of the trial).
        """
        scale = self.sys.residual_scale()
        F = self.sys.residual(theta, lam)
        res = float(np.abs(F).max(initial=0.0)) / scale
        if chord is not None and chord.n == theta.shape[0]:
            for _ in range(6):
                if res <= self.o.newton_tol:
                    return theta, res
                theta_new = theta - chord.solve(F)
                F_new = self.sys.residual(theta_new, lam)
                res_new = float(np.abs(F_new).max(initial=0.0)) / scale
                if not res_new <= 0.5 * res:
                    break
                theta, F, res = theta_new, F_new, res_new
        for _ in range(max_iter):
            if res <= self.o.newton_tol:
                break
            fac = self.sys.factor(theta, lam)[0]
            if stop_singular and fac.least_squares:
                return theta, np.inf
            step = fac.solve(F)
            t = 1.0
            for _ in range(12):  # backtracking on the residual
                theta_new = theta - t * step
                F_new = self.sys.residual(theta_new, lam)
                res_new = float(np.abs(F_new).max(initial=0.0)) / scale
                if not np.isfinite(res_new):
                    res_new = np.inf
                if res_new < res:
                    break
                t *= 0.5
            if not res_new < res:
                break
            theta, F, res = theta_new, F_new, res_new
        return theta, res

    def polish(self, lam: float, max_rounds: int = 100, trial: bool = False) -> float:
        """Newton on ``F`` with the current sets, re-assigning violated indices until consistent
        (``trial``: give up on a singular Jacobian, :meth:`newton`'s ``stop_singular``)."""
        for _ in range(max_rounds):
            theta, res = self.newton(self.sys.theta(), lam, max_iter=15, stop_singular=trial)
            self.sys.set_theta(theta)
            bad = self.sys.consistent(lam, tol=self.o.event_tol)
            if bad.size == 0:
                return res
            self.sys.move(bad, lam)
        theta, res = self.newton(self.sys.theta(), lam, max_iter=15, stop_singular=trial)
        self.sys.set_theta(theta)
        return np.inf

    # ------------------------------------------------------------ recording
    def record(self, lam: float, kind: str = "step",
               deriv: tuple[Array, float] | None = None, values: tuple[Array, float] | None = None) -> None:
        vec, b = self.sys.full_vector() if values is None else values
        if deriv is None:
            theta = self.sys.theta()
            d = self.rhs(lam, np.append(theta, 0.0))[:-1]
            dvec, db = self.sys.full_derivative(d)
        else:
            dvec, db = deriv
        self._append(lam, vec, b, dvec, db, kind)

    def _append(self, lam: float, vec: Array, b: float, dvec: Array, db: float, kind: str) -> None:
        """One recorded point of the current segment."""
        if self.lams and lam < self.lams[-1]:  # pragma: no cover - defensive
            raise RuntimeError("age-path went backwards")
        self.lams.append(float(lam))
        self.vecs.append(vec)
        self.bs.append(b)
        self.dvecs.append(dvec)
        self.dbs.append(db)
        self.segs.append(self.seg)
        self.kinds.append(kind)

    # ----------------------------------------------------------------- jumps
    def warm_start(self, lam: float, params: Params, polish_first: bool = True) -> bool:
        """ACS from ``params`` at ``lam`` (GAGA Algorithm 2, line 8), finished by Newton.

        After a jump ACS first escapes slowly from the ghost of the vanished branch
        (the change of ``v`` per iteration grows), then contracts linearly onto the
        new branch.  Once it contracts, the sets are those of the new branch and
        the Newton polish (with set re-assignment) converges quadratically, so the
        polish is tried then (and again at doubling intervals), not after a fixed
        number of iterations.  A polished point is accepted only if it is a
        consistent partial optimum from which the path can be followed, does not
        raise the SPL objective above the ACS iterate it started from (Newton
        must not climb to the unstable twin of a fold) and is a local minimum
        where the system can tell (:meth:`PathSystem.stable`).
        """
        self.n_restarts += 1
        o = self.o
        # cheapest first: the polish alone, from params with the sets re-derived at lam
        if polish_first and self.try_polish(lam, params, rounds=4):
            return True
        p = params
        v = self.sp.v_star(self.sys.losses(p), lam)
        dv_prev, next_try, gap = np.inf, 0, 2
        extrapolate = o.acs_extrapolate and p.dual_coef is None
        skip = AffineSkip()  # latest affine states (acs_skip_ahead)
        for it in range(1, o.acs_max_iter + 1):
            p_prev = p
            p, v_new = acs_step(self.sys, lam, p, v)
            dv = float(np.max(np.abs(v_new - v), initial=0.0))
            if extrapolate and dv > dv_prev:
                p, v_new = self.extrapolate(lam, p_prev, p, v_new)
            v = v_new
            converged = dv <= o.acs_tol
            if converged or (dv < dv_prev and dv < 1e-2 and it >= next_try):
                if self.try_polish(lam, p, rounds=4):
                    return True
                if converged:
                    break
                next_try, gap = it + gap, 2 * gap
            dv_prev = dv
            if o.acs_skip and not converged:
                ahead = self.acs_skip_ahead(lam, p, skip)
                if ahead is not None:
                    p, growth = ahead
                    v = self.sp.v_star(self.sys.losses(p), lam)
                    dv_prev = dv * growth  # the change per iteration ACS would have reached there
        # ACS alone (converged or out of iterations): its point, polished without the safeguards
        self.sys.init_from(p, lam)
        res = self.polish(lam, max_rounds=20)
        return (res <= 1e3 * o.newton_tol and self.sys.consistent(lam, o.event_tol).size == 0
                and self.can_continue(lam))

    def acs_skip_ahead(self, lam: float, p: Params, skip: AffineSkip) -> tuple[Params, float] | None:
        """Skip ACS iterations where the ACS map is affine (:class:`~spl_bench.gaga.core.acs_skip.AffineSkip`,
        on the state of :meth:`PathSystem.acs_affine_state`): ``(iterate j steps on, rho**j)``
        or ``None``."""
        before = (skip.n_skips, skip.n_skipped)
        out = skip.ahead(self.sys.acs_affine_state(p, lam))
        if out is None:
            return None
        self.n_acs_skips += skip.n_skips - before[0]
        self.n_acs_skipped += skip.n_skipped - before[1]
        return self.sys.acs_jump_to(out[0], out[1]), out[2]

    def extrapolate(self, lam: float, p0: Params, p1: Params, v1: Array) -> tuple[Params, Array]:
        """Over-relax one ACS step ``p0 -> p1`` by a doubling line search on the SPL objective.

        Opt-in (``EngineOptions.acs_extrapolate``), GLM models.  While ACS escapes from
        the ghost of a vanished branch it moves slowly along a fixed direction, with
        growing steps.  ``p0 + t (p1 - p0)`` for ``t = 2, 4, 8, ...`` is kept while the SPL
        objective (``v`` minimised out, GAGA eq. (2)) decreases, so every iterate is
        lower than plain ACS's.  The escape is much shorter, since the step doubles while
        the direction holds, but lower iterates can end in the basin of another partial
        optimum than plain ACS's (GAGA's definition of the point after a jump), so it is
        opt-in.
        """
        step, step_b = p1.coef - p0.coef, p1.intercept - p0.intercept
        best, g_best = p1, self.sys.objective(p1, lam)
        t = 2.0
        while t <= self.o.acs_extrapolate_max:
            cand = replace(p1, coef=p0.coef + t * step, intercept=p0.intercept + t * step_b)
            g = self.sys.objective(cand, lam)
            if not g < g_best:
                break
            best, g_best = cand, g
            t *= 2.0
        if best is p1:
            return p1, v1
        return best, self.sp.v_star(self.sys.losses(best), lam)

    def try_polish(self, lam: float, params: Params, rounds: int) -> bool:
        """Polish ``params`` at ``lam``; keep it if it is a followable, stable partial optimum."""
        o = self.o
        self.sys.init_from(params, lam)
        res = self.polish(lam, max_rounds=rounds, trial=True)
        if not (res <= 1e3 * o.newton_tol and self.sys.consistent(lam, o.event_tol).size == 0):
            return False
        g0 = self.sys.objective(params, lam)
        g1 = self.sys.objective(self.sys.params(), lam)
        if g1 > g0 + 1e-10 * max(1.0, abs(g0)):
            return False
        return self.sys.stable(self.sys.theta(), lam) and self.can_continue(lam)

    def can_continue(self, lam: float) -> bool:
        """Every event function stays >= 0 a small step ``eps`` after ``lam``."""
        sysm = self.sys
        theta = sysm.theta()
        eps = 1e-7 * max(1.0, lam)
        d = self.rhs(lam, np.append(theta, 0.0))[:-1]
        h_after = self.event_values(theta + eps * d, lam + eps)
        return bool(np.all(h_after >= -1e-3 * eps * sysm.event_scale(lam + eps)))

    # ----------------------------------------------------------------- main
    def start(self, lam_min: float, init: Params | None) -> None:
        """The first point: ACS's partial optimum at ``lam_min``."""
        if init is None:
            init = self.sys.initial_fit()
        # the start is ACS's own partial optimum (a polish straight from the v = 1 fit can
        # land on another one): ACS first, Newton only once ACS contracts
        self.warm_start(lam_min, init, polish_first=False)
        self.n_restarts = 0
        self.record(lam_min, "start")
        self.lam = lam_min
        self.last_event = -np.inf
        self.repeats = 0

    def follow(self, lam_max: float, after_segment: Callable[[], None] | None = None) -> None:
        """Segment after segment from ``self.lam`` to ``lam_max``; ``after_segment`` is called
        between two segments (the checkpoints of :func:`age_path`)."""
        o = self.o
        while self.lam < lam_max and len(self.events) < o.max_events:
            lam = self.segment(self.lam, lam_max)
            self.report(min(lam, lam_max), force=True)
            if self.events:
                ev = self.events[-1]["lam"]
                self.repeats = self.repeats + 1 if ev - self.last_event <= 1e-12 * max(1.0, ev) else 0
                self.last_event = ev
                if self.repeats > 20:  # chattering between sets: force progress with a warm start
                    before = self.sys.params()
                    lam = min(lam + o.delta * max(1.0, lam), lam_max)
                    self.warm_start(lam, before)
                    self.seg += 1
                    self.record(lam, "after")
                    self.repeats = 0
            self.lam = lam
            if after_segment is not None and self.lam < lam_max:
                after_segment()

    def report(self, lam: float, force: bool = False) -> None:
        """Call ``progress`` with the furthest age reached and the critical points so far.

        At most once per ``PROGRESS_INTERVAL`` seconds unless ``force`` (the end of a segment; a
        long segment without critical points reports from its solver steps); reads the state only.
        """
        if self.progress is None:
            return
        self._progress_lam = max(self._progress_lam, lam)
        now = time.monotonic()
        if force or now >= self._progress_next:
            self._progress_next = now + PROGRESS_INTERVAL
            self.progress(self._progress_lam, len(self.events))

    def segment(self, lam0: float, lam_max: float) -> float:
        """Follow the path from ``lam0`` with fixed sets until an event; return the new age."""
        o = self.o
        if o.method == "compiled":
            run = self.sys.compiled_follow(lam0, lam_max, o, COMPILED_CAP, o.max_events - len(self.events),
                                           self.last_event)
            if run is not None:
                return self.compiled_segment(run, lam_max)
        return self.ode_segment(lam0, lam_max)

    def compiled_segment(self, run: CompiledRun, lam_max: float) -> float:
        """Take over what the compiled follower did (:meth:`PathSystem.compiled_follow`).

        Its records and its turning points go into the path as this tracker's own would; a
        critical point it leaves (a jump: the continuation check fails) goes to :meth:`event`;
        where it gives up (singular ``J``, corrector failure, a fold), the ODE route continues
        the segment from its last accepted step.
        """
        seg0 = self.seg
        self.n_compiled_calls += 1
        self.n_compiled_events += len(run.events)
        self.n_rhs += int(run.counts[0])
        self.n_steps += int(run.counts[2])
        for lam, vec, b, dvec, db, offset, kind in run.records:
            self.seg = seg0 + offset
            self._append(lam, vec, b, dvec, db, kind)
        for ev in run.events:
            self.events.append(ev)
            self.n_restarts += ev["kind"] == "jump"
        self.seg = seg0 + len(run.events)
        if len(run.events) >= 2:  # the tracker's repeat count, as if it had seen each of them
            self.last_event, self.repeats = run.events[-2]["lam"], 0
        self.report(run.t_end)
        if run.status == EVENT:
            return self.event(run.t_end, lam_max, run.crossed)
        if run.status == REACHED:
            return lam_max
        if run.status == FULL:
            return run.t_end
        self.n_compiled_handbacks += 1
        return self.ode_segment(run.t_end, lam_max)

    def ode_segment(self, lam0: float, lam_max: float) -> float:
        """:meth:`segment` on the ODE route (``EngineOptions.method``; ``auto`` for ``compiled``)."""
        o = self.o
        sysm = self.sys
        theta0 = sysm.theta()
        d0 = self.rhs(lam0, np.append(theta0, 0.0))[:-1]
        sign0 = self.last_sign
        auto = o.method in ("auto", "compiled")
        name = "RK45" if auto else o.method
        solver = self.solver(name, lam0, theta0, lam_max, o.max_step, self.first_step(theta0, d0, lam0, lam_max))
        t_prev, theta_prev = lam0, theta0  # the step start and its projected point
        n_seg_steps = retakes = 0
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                msg = solver.step()
            self.n_steps += 1
            if solver.status == "failed":
                return self.jump(t_prev, [], f"solver failed: {msg}")
            t1, y1 = float(solver.t), solver.y
            # crossings are judged on the Newton-projected step end, not on the raw ODE state
            # (whose error can hide or invent a crossing when steps are long)
            # (chord iteration with the solver's latest Jacobian first: it is from inside this step)
            theta1, res1 = self.newton(y1[:-1].copy(), t1, chord=self.last_factor)
            h_step = t1 - t_prev
            if res1 > 1e3 * o.newton_tol and h_step > 1e-9 * max(1.0, t1) and retakes < MAX_RETAKES:
                # no partial optimum at t1 with these sets: the step may have overshot a critical
                # point past which this branch ends, and event functions at a point that is not
                # one cannot be trusted.  Retake the step, shorter (MAX_RETAKES times at most per
                # segment: a branch that ends right at a critical point is then handled from the
                # events seen inside the step, or as a fold)
                retakes += 1
                self.n_retaken_steps += 1
                solver = self.solver(name, t_prev, theta_prev, lam_max, 0.5 * h_step, 0.25 * h_step)
                continue
            h = self.event_values(theta1, t1)
            bad = np.flatnonzero(h < -o.event_tol * sysm.event_scale(t1))
            dense = solver.dense_output()
            t_end = t1
            # an index can cross its boundary and come back inside one long step: look inside too
            s_in = t_prev + (t1 - t_prev) * INTERIOR
            h_in = sysm.events_many(dense(s_in)[:-1].T, s_in)
            for s, hs in zip(s_in, h_in, strict=True):
                if np.any(hs < -o.event_tol * sysm.event_scale(s)):  # confirm on the projected point
                    ths, _ = self.newton(dense(s)[:-1], s)
                    bs = np.flatnonzero(self.event_values(ths, s) < -o.event_tol * sysm.event_scale(s))
                    if bs.size:
                        bad, t_end, theta1 = bs, float(s), ths
                        break
            if bad.size:
                chord = sysm.factor(theta1, t_end)[0]

                # age -> (H, projected point); the step start's projected point is known
                hs0 = sysm.events(theta_prev, t_prev, bad) + o.event_tol * sysm.event_scale(t_prev, bad)
                memo: dict[float, tuple[float, Array]] = {t_prev: (float(np.min(hs0)), theta_prev)}

                def H(s: float, _c: NDArray[np.intp] = bad, _d: Any = dense, _f: AnyFactor = chord,
                      _m: dict[float, tuple[float, Array]] = memo) -> float:
                    """Smallest crossed event function on the Newton-projected path at ``s``."""
                    if s not in _m:
                        th, _ = self.newton(_d(s)[:-1], s, chord=_f)
                        hs = sysm.events(th, s, _c)
                        _m[s] = (float(np.min(hs + o.event_tol * sysm.event_scale(s, _c))), th)
                    return _m[s][0]

                if H(t_prev) < 0:  # already violated at the step start
                    t_star = t_prev
                else:
                    t_star = self.locate(H, bad, dense, t_prev, t_end)
                theta = memo[t_star][1] if t_star in memo else self.newton(dense(t_star)[:-1], t_star, chord=chord)[0]
                sysm.set_theta(theta)
                self.rhs(t_star, np.append(theta, 0.0))
                if sign0 != 0 and self.last_sign != sign0:
                    return self.fold(t_prev, t_star, dense, sign0)
                self.fill(t_star, dense)
                return self.event(t_star, lam_max, bad)
            if res1 > 1e3 * o.newton_tol:  # no partial optimum at t1: the path ends (a fold)
                return self.fold(t_prev, t1, dense, sign0, "the projection fails (fold of the path)")
            # regular step: record the Newton-projected point (and enough points inside for at())
            sysm.set_theta(theta1)
            self.fill(t1, dense)
            self.record(t1)
            self.report(t1)
            if sign0 != 0 and self.last_sign != sign0 and self.last_sign != 0:
                return self.fold(t_prev, t1, dense, sign0)
            if t1 - t_prev < 0.5 * o.max_step:  # a step limited by accuracy, not by max_step
                n_seg_steps += 1
            t_prev, theta_prev = t1, theta1
            if solver.status == "finished":
                return lam_max
            if auto and name == "RK45" and n_seg_steps >= o.stiff_steps:
                # an explicit method taking this many short steps without reaching a critical
                # point: the path ODE may be stiff here; LSODA (stiffness detection, BDF) goes on
                name = "LSODA"
                self.n_stiff_switches += 1
                solver = LSODA(self.rhs, t1, np.append(theta1, 0.0), lam_max, rtol=o.rtol, atol=o.atol,
                               max_step=o.max_step)

    def solver(self, name: str, t0: float, theta0: Array, lam_max: float, max_step: float,
               first_step: float | None) -> OdeSolver:
        """The stepper of a segment: a scipy ODE solver on the path ODE, or (``"PC"``) the
        predictor-corrector continuation of :mod:`spl_bench.gaga.core.continuation`."""
        y0 = np.append(theta0, 0.0)
        if name == "PC":
            return PredictorCorrector(self, t0, y0, lam_max, max_step, first_step)
        o = self.o
        return ODE_SOLVERS[name](self.rhs, t0, y0, lam_max, rtol=o.rtol, atol=o.atol, max_step=max_step,
                                 first_step=first_step)

    def fill(self, t1: float, dense: Any) -> None:
        """Record projected points inside ``(lams[-1], t1)`` where ``AgePath.at`` would be inaccurate.

        ``at`` interpolates recorded points by cubic Hermite polynomials with the exact
        derivatives; a long solver step (RK45 takes few) can leave it less accurate than
        the ODE solution.  The interpolant's error at the middle of the interval is
        estimated against the solver's dense output; above ``dense_tol`` the projected
        middle point is recorded and both halves are checked again (``dense_max_depth``
        levels).  The state at ``t1`` (current sets, the projected point) is restored.
        """
        o = self.o
        if not self.lams or self.segs[-1] != self.seg or not self.lams[-1] < t1:
            return
        sysm = self.sys
        theta1 = sysm.theta()
        d1 = self.rhs(t1, np.append(theta1, 0.0))[:-1]
        end = (t1, theta1, *sysm.full_vector(), *sysm.full_derivative(d1))
        start = (self.lams[-1], None, self.vecs[-1], self.bs[-1], self.dvecs[-1], self.dbs[-1])

        def full(theta: Array) -> tuple[Array, float]:
            sysm.set_theta(theta)
            return sysm.full_vector()

        def check(a: tuple, b: tuple, depth: int) -> None:
            ta, _, va, ba, dva, dba = a
            tb, _, vb, bb, dvb, dbb = b
            tm, h = 0.5 * (ta + tb), tb - ta
            # cubic Hermite at s = 1/2: (va + vb) / 2 + h (dva - dvb) / 8
            herm = 0.5 * (va + vb) + 0.125 * h * (dva - dvb)
            hb = 0.5 * (ba + bb) + 0.125 * h * (dba - dbb)
            raw = dense(tm)[:-1]
            vm, bm = full(raw)
            scale = 1.0 + float(np.abs(vm).max(initial=0.0))
            if max(float(np.abs(herm - vm).max(initial=0.0)), abs(hb - bm)) <= o.dense_tol * scale:
                return
            thm, res = self.newton(raw, tm, chord=self.last_factor)
            if res > 1e3 * o.newton_tol:  # leave it to the caller's checks
                return
            sysm.set_theta(thm)
            dm = self.rhs(tm, np.append(thm, 0.0))[:-1]
            mid = (tm, thm, *sysm.full_vector(), *sysm.full_derivative(dm))
            if depth > 1:
                check(a, mid, depth - 1)
            sysm.set_theta(thm)
            self.record(tm, deriv=(mid[4], mid[5]))
            if depth > 1:
                check(mid, b, depth - 1)

        check(start, end, o.dense_max_depth)
        sysm.set_theta(theta1)

    def first_step(self, theta: Array, d: Array, lam: float, lam_max: float) -> float | None:
        """Initial step of a segment: a little past the first event predicted along ``d``.

        A restarted solver would otherwise begin with a tiny step (LSODA: of first
        order) and need many steps to reach the next critical point; critical points
        are often much closer together than ``max_step``.  Overshooting is harmless: a crossing
        inside the step is located on its dense output.
        """
        eps = 1e-7 * max(1.0, lam)
        h0 = self.event_values(theta, lam)
        h1 = self.event_values(theta + eps * d, lam + eps)
        with np.errstate(all="ignore"):
            slope = (h1 - h0) / eps
            ok = np.isfinite(h0) & np.isfinite(slope) & (slope < 0)
            dt = np.maximum(h0[ok], 0.0) / -slope[ok]
        if dt.size == 0:
            return None
        step = 1.5 * float(dt.min())
        return float(min(max(step, 1e-9 * max(1.0, lam)), self.o.max_step, lam_max - lam))

    def locate(self, H: Any, crossed: NDArray[np.intp], dense: Any, a: float, b: float) -> float:
        """Age of the *first* crossing in ``(a, b)`` where ``H(a) >= 0 > H(b)``.

        Past its first crossing an index follows the continuation of the wrong sets and
        may cross back, so a root finder on the whole step could return a later root.
        The raw dense output is scanned on a grid for the first sign change, and that
        grid cell again on a finer grid (two vectorised evaluations); the root there,
        by linear interpolation, starts secant steps on the Newton-projected ``H``
        until two points bracket the projected root, which regula falsi (Illinois)
        then finds.  Projected ``brentq`` is the fallback.
        """
        sysm, tol = self.sys, self.o.event_tol
        xtol = 1e-14 * max(1.0, b)
        tol_sc = tol * sysm.event_scale(b, crossed)  # the raw scan only seeds the projected search

        def H_raw(s: Array) -> Array:
            return np.min(sysm.events_many(dense(s)[:-1].T, s, crossed) + tol_sc, axis=1)

        lo, hi = a, b
        grid = np.linspace(a, b, 17)
        hg = H_raw(grid)
        neg = np.flatnonzero(hg[1:] < 0)
        if neg.size and hg[neg[0]] >= 0:
            k = int(neg[0])
            lo, hi = float(grid[k]), float(grid[k + 1])
            fine = np.linspace(lo, hi, 17)
            hf = H_raw(fine)
            j = int(np.flatnonzero(hf[1:] < 0)[0]) if np.any(hf[1:] < 0) else 15
            u, w, hu, hw = float(fine[j]), float(fine[j + 1]), float(hf[j]), float(hf[j + 1])
            if hu >= 0 > hw:
                # the projected root is within the ODE error of the raw one: secant steps on the
                # projected H from the raw root (slope of the raw H) until two points bracket it
                ftol = 1e-3 * tol * float(np.min(sysm.event_scale(u, crossed)))
                slope = (hw - hu) / (w - u)
                p = u - hu / slope
                hp = H(p)
                q = p - hp / slope
                for _ in range(6):
                    if abs(hp) <= ftol:
                        return float(p)
                    q = float(min(max(q, lo), hi))
                    if q == p:
                        break
                    hq = H(q)
                    if (hp >= 0) != (hq >= 0):
                        (u, hu), (w, hw) = sorted([(p, hp), (q, hq)])
                        if hu >= 0 > hw:
                            return illinois(H, u, hu, w, hw, ftol=ftol, xtol=xtol)
                        break  # H rises through 0 there: an earlier root, left to the fallback
                    q, p, hp = (q - hq * (q - p) / (hq - hp) if hq != hp else q), q, hq
        if lo > a and H(lo) >= 0 > H(hi):
            return float(brentq(H, lo, hi, xtol=xtol, rtol=1e-15))
        return float(brentq(H, a, b, xtol=xtol, rtol=1e-15))

    def fold(self, a: float, b: float, dense: Any, sign0: float,
             reason: str = "fold of the path (det J changes sign)") -> float:
        """``det J`` changed sign in ``(a, b)``: locate the fold by bisection; it is a jump point."""
        sysm = self.sys
        # drop points recorded past the fold
        while self.lams and self.lams[-1] > a and self.segs[-1] == self.seg:
            for lst in (self.lams, self.vecs, self.bs, self.dvecs, self.dbs, self.segs, self.kinds):
                lst.pop()
        chord: AnyFactor | None = None  # the previous midpoint's factor: chord Newton first
        for _ in range(60):
            m = 0.5 * (a + b)
            th, _ = self.newton(dense(m)[:-1], m, chord=chord)
            chord = sysm.factor(th, m)[0]
            if chord.sign == sign0:  # (the system's factor: merged duplicates too)
                a = m
            else:
                b = m
            if b - a <= 1e-13 * max(1.0, b):
                break
        # Newton converges slowly right at the fold (J is singular there): back off towards
        # the last accepted step until the projected point is a partial optimum again
        lo, fold_at = (self.lams[-1] if self.lams else a), a
        theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
        back = 1e-12 * max(1.0, a)
        while res > self.o.newton_tol and a - back > lo:
            a = fold_at - back
            theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
            back *= 10.0
        if res > 1e3 * self.o.newton_tol and lo < fold_at:  # the fold is at the last recorded point
            a = lo
            theta, res = self.newton(dense(a)[:-1], a, max_iter=20)
        sysm.set_theta(theta)
        if not self.lams or a > self.lams[-1]:
            self.record(a, "before")
        else:
            self.kinds[-1] = "before"
        return self.jump(a, [], reason)

    def event(self, lam: float, lam_max: float, crossed: NDArray[np.intp]) -> float:
        """Handle a critical point at ``lam`` (state already on the old sets' path)."""
        o = self.o
        sysm = self.sys
        theta = sysm.theta()
        h = self.event_values(theta, lam)
        scale = sysm.event_scale(lam)
        # indices that crossed inside the step and sit on their boundary now (several may cross
        # at the same age), plus any that are violated already
        fire = np.union1d(crossed[h[crossed] <= 1e3 * o.event_tol * scale[crossed]],
                          np.flatnonzero(h < -o.event_tol * scale))
        before = sysm.params()
        snap = sysm.snapshot()
        d_old = sysm.full_derivative(self.rhs(lam, np.append(theta, 0.0))[:-1])
        v_old = sysm.full_vector()
        moves = sysm.move(fire, lam)
        # the end of the old segment: with exact zeros where indices left (GLM), or the located
        # point itself (SVM: see PathSystem.record_moved_values)
        self.record(lam, "critical", deriv=d_old, values=None if sysm.record_moved_values else v_old)
        # continuation check: F still holds with the new sets, and the event functions of the
        # moved indices are >= 0 just after lam.  Indices sitting on their boundary at lam that
        # would leave it at once crossed at the same age: move them too.
        moved = set(int(q) for q in fire)
        ok = False
        for _ in range(10):
            theta, res = self.newton(sysm.theta(), lam)
            if res > 1e3 * o.newton_tol:
                break
            sysm.set_theta(theta)
            eps = 1e-7 * max(1.0, lam)
            if lam + eps >= lam_max:
                ok = True
                break
            d = self.rhs(lam, np.append(theta, 0.0))[:-1]
            h0 = self.event_values(theta, lam)
            h_after = self.event_values(theta + eps * d, lam + eps)
            sc = sysm.event_scale(lam + eps)
            fail = np.flatnonzero(h_after < -1e-3 * eps * sc)
            if fail.size == 0:
                ok = True
                break
            at_bound = h0[fail] <= 1e3 * o.event_tol * sc[fail]
            new = [int(q) for q in fail[at_bound] if int(q) not in moved]
            if not np.all(at_bound) or not new:
                break
            moved.update(new)
            moves += sysm.move(np.array(new), lam)
        if ok:
            vec_new, b_new = sysm.full_vector()
            vec_old = before.coef if before.coef is not None else before.dual_coef
            gap = max(float(np.abs(vec_new - vec_old).max(initial=0.0)), abs(b_new - before.intercept))
            if gap > 1e-7 * (1.0 + float(np.abs(vec_old).max(initial=0.0))):
                # the new sets give a partial optimum at the same age, but not continuously
                # (v* jumps, e.g. the hard regularizer): a jump point, warm-started by Newton
                self.events.append({"lam": float(lam), "kind": "jump", "moves": moves,
                                    "reason": "discontinuous: new partial optimum found by Newton"})
                self.n_restarts += 1
                self.seg += 1
                self.record(lam, "after")
                return lam
            self.events.append({"lam": float(lam), "kind": "turning", "moves": moves})
            self.seg += 1
            self.record(lam, "after")
            return lam
        sysm.restore(snap)
        return self.jump(lam, moves, "KKT conditions fail after re-assigning the sets", before)

    def jump(self, lam: float, moves: list, reason: str, before: Params | None = None) -> float:
        o = self.o
        if before is None:
            before = self.sys.params()
        if not self.lams or self.lams[-1] < lam:
            self.record(lam, "before")
        self.events.append({"lam": float(lam), "kind": "jump", "moves": moves, "reason": reason})
        self.seg += 1
        # ACS converges slowly next to a fold of the path: move further away if it fails
        for mult in (1.0, 10.0, 100.0, 1000.0, 1e4):
            new_lam = lam + mult * o.delta * max(1.0, lam)
            if self.warm_start(new_lam, before):
                break
        else:
            self.n_failed_warm_starts += 1
            warnings.warn(f"GAGA: no consistent partial optimum found after the jump at lam={lam:.6g}; "
                          "the path continues from the best ACS point (see meta['n_failed_warm_starts'])",
                          RuntimeWarning, stacklevel=2)
        self.record(new_lam, "after")
        return new_lam

    def to_path(self, meta: dict[str, Any]) -> AgePath:
        vecs = np.array(self.vecs)
        dv = np.array(self.dvecs)
        svm = meta["model"] == "svm"
        ev = []
        for e in self.events:
            ev.append({"lam": e["lam"], "kind": e["kind"], "moves": [list(m) for m in e["moves"]],
                       **({"reason": e["reason"]} if "reason" in e else {})})
        return AgePath(
            lambdas=np.array(self.lams),
            coef=None if svm else vecs,
            dual_coef=vecs if svm else None,
            intercept=np.array(self.bs),
            d_vec=dv,
            d_intercept=np.array(self.dbs),
            segment=np.array(self.segs, dtype=int),
            point_kind=np.array(self.kinds),
            events=ev,
            n_restarts=self.n_restarts,
            meta=meta,
        )
