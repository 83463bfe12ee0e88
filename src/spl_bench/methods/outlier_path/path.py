"""The outlier-path homotopy for the robust SVM (Suzumura et al., ICML 2014).

Problem (eq. 1-2): ``min_f ||f||_H^2 / 2 + C sum_i ell(y_i f(x_i); theta, s)`` with
``f(x) = sum_j a_j y_j K(x_j, x) + b`` and the ramp-like loss

    ell(z; theta, s) = [1 - z]_+      if z >= s,
                       1 - theta z - s if z < s.

OP-theta fixes ``s = 0`` and moves ``theta`` from 1 to 0; OP-s fixes ``theta = 0``
and moves ``s`` from ``min_i y_i f(x_i)`` up to 0 (Algorithm 1).

Every point carries a *state* (section 4.2 and appendix C, eq. 15; the table of states is in
:mod:`.state`).

The *active* points (E, IB, OB) solve the linear system (11) / appendix C
together with the intercept ``b`` and the equality ``sum_i a_i y_i = 0``; all
other coefficients are fixed.  Both the C-step (parameter theta) and the D-step
(parameter mu of appendix C, run here as ``tau = 1 - mu``) are one scalar
homotopy in which the fixed coefficients move linearly, so one event-driven
engine (:class:`~spl_bench.methods.outlier_path.engine.Engine`) traces both.

This module holds the public API: the paths (:func:`outlier_path_theta`, :func:`outlier_path_s`),
the SVM starts (:func:`svm_dual`, :func:`polished_svm`, :func:`svm_path`), the objective and the
results.  The engine is split by what it does: the point states and the path's variables
(:mod:`.state`), the active system and its solves (:mod:`.linalg`), the event search
(:mod:`.events`), the tracer (:mod:`.engine`) and the D-step (:mod:`.dstep`); errors in
:mod:`.errors`.

Choices where the paper is silent (see ``docs/outlier_path.md``): the decision
function has an unpenalised intercept ``b`` (as scikit-learn's SVC and Hastie et
al.'s SVM path); Algorithm 1 step 2 is read as ``I = {m_i >= s}``,
``O = {m_i < s}`` (the printed inequalities are swapped); the objective compared
across partitions (Theorem 3) is eq. (1) itself, which is continuous in ``f``
for ``s = 0`` or ``theta = 0``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.svm import SVC

from spl_bench.methods.outlier_path.dstep import dstep, expose_boundary, settle_boundary, settleable
from spl_bench.methods.outlier_path.engine import Engine
from spl_bench.methods.outlier_path.errors import DegenerateStepError
from spl_bench.methods.outlier_path.linalg import ActiveSystem, q_factor
from spl_bench.methods.outlier_path.state import IB, OO, Array, L, PathState

__all__ = [
    "Breakpoint",
    "DegenerateStepError",
    "Jump",
    "OutlierPathResult",
    "outlier_path_s",
    "outlier_path_theta",
    "polished_svm",
    "ramp_loss",
    "rsvm_objective",
    "svm_dual",
    "svm_path",
]


# --------------------------------------------------------------------------- objective
def ramp_loss(z: Array, theta: float, s: float) -> Array:
    """The loss ``ell(z; theta, s)`` of eq. (2)."""
    z = np.asarray(z, dtype=float)
    return np.where(z >= s, np.maximum(0.0, 1.0 - z), 1.0 - theta * z - s)


def rsvm_objective(alpha: Array, b: float, Q: Array | None, y: Array, C: float, theta: float, s: float,
                   Qa: Array | None = None) -> float:
    """Eq. (1): ``a^T Q a / 2 + C sum_i ell(m_i; theta, s)`` with ``m = Q a + y b`` (``Qa``: ``Q a``
    when the caller has it, then ``Q`` is not used)."""
    if Qa is None:
        Qa = Q @ alpha
    m = Qa + y * b
    return float(0.5 * alpha @ Qa + C * ramp_loss(m, theta, s).sum())


# --------------------------------------------------------------------------- results
@dataclass
class Breakpoint:
    """The local solution at one breakpoint ``theta_BP`` (or ``s_BP``) of the path."""

    param: float
    alpha: Array
    b: float
    kind: str  # "start" | "event" | "jump" | "end"
    objective: float
    inlier: NDArray[np.bool_]


@dataclass
class Jump:
    """A discontinuity: the chain of D-steps run at one ``theta`` (or ``s``)."""

    param: float
    objective_before: float
    objective_after: float
    objectives: list[float]  # the objective after each D-step of the chain
    n_dsteps: int
    n_swapped: int
    alpha_before: Array
    b_before: float
    #: the last D-step did not decrease the objective: f is pinned (alpha not unique, e.g. a
    #: linear kernel with d + 1 active points) and the solution is accepted as it is
    degenerate: bool = False


@dataclass
class OutlierPathResult:
    """The full outlier path for one ``C``: breakpoints, jumps and counters."""

    variant: str
    C: float
    breakpoints: list[Breakpoint] = field(default_factory=list)
    jumps: list[Jump] = field(default_factory=list)
    n_events: int = 0
    n_bmoves: int = 0
    failed: str | None = None

    @property
    def params(self) -> Array:
        """The breakpoints ``theta_BP`` (decreasing) or ``s_BP`` (increasing)."""
        return np.array([bp.param for bp in self.breakpoints])

    @property
    def alphas(self) -> Array:
        return np.vstack([bp.alpha for bp in self.breakpoints])

    @property
    def intercepts(self) -> Array:
        return np.array([bp.b for bp in self.breakpoints])

    # ------------------------------------------------------------ persistence
    def save(self, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
        """Write the path as ``.npz`` (arrays plus JSON jumps/metadata, like GAGA's AgePath)."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        n = len(self.breakpoints[0].alpha) if self.breakpoints else 0
        info = {
            "variant": self.variant, "C": self.C, "n_events": self.n_events, "n_bmoves": self.n_bmoves,
            "failed": self.failed, "meta": meta or {},
            "jumps": [{"param": j.param, "objective_before": j.objective_before,
                       "objective_after": j.objective_after, "objectives": list(j.objectives),
                       "n_dsteps": j.n_dsteps, "n_swapped": j.n_swapped, "degenerate": j.degenerate}
                      for j in self.jumps],
        }
        bps = self.breakpoints
        arrays = {
            "params": self.params,
            "dual_coef": self.alphas if bps else np.zeros((0, n)),
            "intercept": self.intercepts,
            "point_kind": np.array([bp.kind for bp in bps], dtype=str),
            "objective": np.array([bp.objective for bp in bps]),
            "inlier": np.array([bp.inlier for bp in bps], dtype=bool).reshape(len(bps), n),
            "jump_dual_coef_before": np.array([j.alpha_before for j in self.jumps]).reshape(len(self.jumps), n),
            "jump_intercept_before": np.array([j.b_before for j in self.jumps]),
        }
        np.savez_compressed(path, info=np.array(json.dumps(info, default=str)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> OutlierPathResult:
        """Read a path written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            info = json.loads(str(z["info"]))
            res = cls(info["variant"], float(info["C"]), n_events=int(info["n_events"]),
                      n_bmoves=int(info["n_bmoves"]), failed=info["failed"])
            for k in range(len(z["params"])):
                res.breakpoints.append(Breakpoint(float(z["params"][k]), z["dual_coef"][k].copy(),
                                                  float(z["intercept"][k]), str(z["point_kind"][k]),
                                                  float(z["objective"][k]), z["inlier"][k].copy()))
            for k, j in enumerate(info["jumps"]):
                res.jumps.append(Jump(j["param"], j["objective_before"], j["objective_after"], j["objectives"],
                                      j["n_dsteps"], j["n_swapped"], z["jump_dual_coef_before"][k].copy(),
                                      float(z["jump_intercept_before"][k]), bool(j["degenerate"])))
        return res

    def solution_at(self, value: float) -> tuple[Array, float]:
        """The exact path solution ``(alpha, b)`` at ``theta = value`` (or ``s = value``).

        OP-theta: linear interpolation inside the segment that contains ``value``
        (piecewise linearity, section 4.2); the segment ends at the left limit of
        the next breakpoint, i.e. the boundary solution before a jump.  OP-s: the
        solution is constant between breakpoints (section 4.3).
        """
        bps = self.breakpoints
        params = self.params
        if self.variant == "s":
            k = int(np.searchsorted(params, value, side="right")) - 1
            k = max(k, 0)
            return bps[k].alpha.copy(), bps[k].b
        # theta decreasing: last breakpoint with param >= value
        idx = np.flatnonzero(params >= value)
        k = int(idx[-1]) if idx.size else 0
        if k + 1 >= len(bps) or params[k] == value:
            return bps[k].alpha.copy(), bps[k].b
        nxt = bps[k + 1]
        jump = next((j for j in self.jumps if j.param == nxt.param and nxt.kind == "jump"), None)
        a1, b1 = (jump.alpha_before, jump.b_before) if jump is not None else (nxt.alpha, nxt.b)
        w = (params[k] - value) / (params[k] - nxt.param)
        return (1 - w) * bps[k].alpha + w * a1, float((1 - w) * bps[k].b + w * b1)


# --------------------------------------------------------------------------- engine
def _engine(Q: Array, y: Array, C: float, theta: float, s: float, tol: float = 1e-9,
            factor: Array | None = None) -> Engine:
    """An engine on a fresh :class:`PathState` and the active system (11) of ``Q = y y^T K``
    (``factor``: ``Z`` with ``Q = Z Z^T``, see :func:`outlier_path_theta`)."""
    return Engine(PathState(y, C, theta, s, tol), ActiveSystem(Q, y, factor))


def _objective(eng: Engine) -> float:
    """Eq. (1) at the engine's current solution (:func:`rsvm_objective`)."""
    state = eng.state
    return rsvm_objective(state.alpha, state.b, None, state.y, state.C, state.theta, state.s,
                          Qa=eng.system.q_dot(state.alpha))


# --------------------------------------------------------------------------- SVM start
def svm_dual(K: Array, y: Array, C: float, tol: float = 1e-5) -> tuple[Array, float]:
    """The standard SVM (Algorithm 1 step 1) by scikit-learn's SVC on a precomputed kernel.

    The path polishes this solution exactly
    (:meth:`~spl_bench.methods.outlier_path.engine.Engine.start`), so a moderate ``tol``
    suffices (libsvm is slow for large C at very small tolerances).
    """
    est = SVC(C=C, kernel="precomputed", tol=tol, max_iter=-1, cache_size=200)
    est.fit(K, y)
    alpha = np.zeros(len(y))
    alpha[est.support_] = np.abs(np.asarray(est.dual_coef_, dtype=float).ravel())
    return np.clip(alpha, 0.0, C), float(est.intercept_[0])


def polished_svm(K: Array, y: Array, C: float, init: tuple[Array, float] | None = None) -> tuple[Array, float]:
    """The exact standard SVM: SVC (or ``init``) polished by the active-set re-solve."""
    y = np.asarray(y, dtype=float)
    alpha, b = init if init is not None else svm_dual(K, y, C)
    eng = _engine(np.outer(y, y) * K, y, C, theta=1.0, s=-np.inf)
    eng.start(alpha, b)
    return eng.state.alpha.copy(), float(eng.state.b)


def svm_path(
    K: Array, y: Array, Cs: list[float] | Array, *, tol: float = 1e-9, max_events: int | None = None,
    factor: Array | None = None,
) -> list[tuple[Array, float]]:
    """Exact standard SVMs for every ``C`` of ``Cs`` by the regularization path in ``C``.

    SVC (polished exactly) at the smallest ``C``, where libsvm converges fast, then the
    piecewise-linear path of the SVM solution in ``C`` (Hastie et al. 2004) traced by the
    same engine as the outlier path: the coefficients at the upper bound move with ``C``,
    the free ones and ``b`` solve the active system.  For a linear kernel at large ``C``
    this replaces a libsvm run of minutes by a fraction of a second, and it gives the
    exact solution.  Returns ``(alpha, b)`` in the order of ``Cs``.  ``factor``: as in
    :func:`outlier_path_theta`.
    """
    y = np.asarray(y, dtype=float)
    Cs = [float(c) for c in Cs]
    order = np.argsort(Cs, kind="stable")
    n = len(y)
    max_events = max_events or 50 * n + 1000
    eng = _engine(np.outer(y, y) * K, y, Cs[order[0]], theta=1.0, s=-np.inf, tol=tol,
                  factor=q_factor(y, factor))
    state = eng.state
    eng.start(*svm_dual(K, y, Cs[order[0]]))
    out: list[tuple[Array, float] | None] = [None] * len(Cs)
    state.dC = 1.0

    def adv(t: float) -> None:
        state.C += t

    def rate() -> Array:
        return np.where(state.st == L, 1.0, 0.0)

    for k in order:
        C1 = Cs[k]
        if C1 > state.C:
            state.last = -1
            eng.trace(rate, C1 - state.C, adv, lambda kind: False, max_events)
            state.C = C1
            eng.system.refresh(state)
        out[k] = (state.alpha.copy(), float(state.b))
    return [o for o in out if o is not None]


# --------------------------------------------------------------------------- drivers
def _snapshot(eng: Engine, param: float, kind: str) -> Breakpoint:
    """The current solution as a breakpoint, after checking Theorem 4 (10a-10d) on it.

    A violation (seen only after a collapse to a near-constant classifier, where many
    margins tie) truncates the path instead of returning a wrong local solution.
    """
    state = eng.state
    a, m, C, s = state.alpha, eng.system.q_dot(state.alpha) + state.y * state.b, state.C, state.s
    tol = 1e-7
    viol = np.where(m > 1 + tol, np.abs(a), 0.0)
    viol = np.maximum(viol, np.where(np.abs(m - 1) <= tol, np.maximum(-a, a - C), 0.0))
    viol = np.maximum(viol, np.where((m > s + tol) & (m < 1 - tol), np.abs(a - C), 0.0))
    viol = np.maximum(viol, np.where(m < s - tol, np.abs(a - C * state.theta), 0.0))
    worst = max(float(viol.max(initial=0.0)), abs(float(a @ state.y)))
    if worst > 1e-6 * max(1.0, C):
        raise DegenerateStepError(f"local-optimality check failed at {kind} {param:.6g} (violation {worst:.2e})")
    return Breakpoint(param, a.copy(), float(state.b), kind, _objective(eng), state.inl.copy())


def _dstep_chain(eng: Engine, res: OutlierPathResult, param: float, max_events: int) -> None:
    """D-steps (:func:`~spl_bench.methods.outlier_path.dstep.dstep`) until no point is on the
    boundary (Theorem 4, 10e), recorded as a jump: the objective (1) after each D-step (Theorem 3:
    it decreases) and the solution after the chain."""
    state = eng.state
    a0, b0, j0 = state.alpha.copy(), float(state.b), _objective(eng)
    objs: list[float] = []
    n_sw = 0
    n_d = 0
    prev = j0
    degenerate = False
    #: points swapped by D-steps that did not decrease the objective since the last decrease
    neutral: set[int] = set()
    while True:
        expose_boundary(state)
        B = state.boundary()
        if not B.size:
            break
        fresh = B[~np.isin(B, list(neutral))]
        if not fresh.size:
            # every boundary point has been swapped without a decrease (Theorem 3 needs a
            # unique alpha): f is pinned (rank-deficient kernel).  If the boundary points hold
            # the coefficients of fixed states, f is conditionally optimal on both sides:
            # accept it as it is
            if not settleable(state):
                raise DegenerateStepError("D-steps cannot resolve a tie on the boundary")
            settle_boundary(state, eng.system)
            degenerate = True
            break
        n_sw += dstep(eng, max_events, fresh)
        n_d += 1
        objs.append(_objective(eng))
        if objs[-1] >= prev - 1e-12 * max(1.0, abs(prev)):
            # no decrease: e.g. two duplicated rows on the boundary, the swapped one's change
            # absorbed by the other (f unchanged); the other is swapped next
            neutral.update(int(i) for i in state.swapped)
        else:
            neutral.clear()
        prev = objs[-1]
        if n_d > 4 * state.n + 10:
            raise DegenerateStepError("D-steps do not terminate")
    bp = _snapshot(eng, param, "jump")
    res.jumps.append(Jump(param, j0, objs[-1], objs, n_d, n_sw, a0, b0, degenerate))
    _record(res, bp)


def _record(res: OutlierPathResult, bp: Breakpoint) -> None:
    """Append a breakpoint; one at the same parameter as the last one replaces it.

    A zero-length C-step event right after a jump keeps the kind ``jump`` (the jump record
    refers to it); the start point (the SVM) is never replaced.
    """
    last = res.breakpoints[-1] if res.breakpoints else None
    if last is not None and last.param == bp.param and last.kind != "start":
        if last.kind == "jump" and bp.kind == "event":
            bp.kind = "jump"
            res.jumps[-1].objective_after = bp.objective
        res.breakpoints[-1] = bp
    else:
        res.breakpoints.append(bp)


def outlier_path_theta(
    K: Array, y: Array, C: float, *, tol: float = 1e-9, max_events: int | None = None,
    init: tuple[Array, float] | None = None, factor: Array | None = None,
) -> OutlierPathResult:
    """OP-theta (Algorithm 1 with s = 0): the local-solution path for theta from 1 to 0.

    Parameters
    ----------
    K : (n, n) kernel matrix of the training rows.
    y : labels in {-1, +1}.
    C : regularization parameter of eq. (1).
    init : optional ``(alpha, b)`` of the standard SVM (otherwise SVC is run).
    factor : optional ``(n, r)`` matrix ``Z`` with ``K = Z Z^T`` and ``r < n`` (a linear kernel: the
        training rows).  The margins ``m = Q a + y b`` and their rates are then computed in
        O(n r) instead of O(n^2); the active systems still use the entries of ``K``.

    Returns
    -------
    OutlierPathResult
        Every breakpoint ``theta_BP`` with its local solution (after any jump),
        and every jump with the objective before and after each D-step.
    """
    y = np.asarray(y, dtype=float)
    Q = np.outer(y, y) * K
    n = len(y)
    max_events = max_events or 50 * n + 1000
    alpha, b = init if init is not None else svm_dual(K, y, C)
    eng = _engine(Q, y, C, theta=1.0, s=0.0, tol=tol, factor=q_factor(y, factor))
    state = eng.state
    res = OutlierPathResult("theta", float(C))

    def adv(t: float) -> None:
        state.theta = max(0.0, state.theta - t)

    def rate() -> Array:
        return np.where(state.st == OO, -state.C, 0.0)

    try:
        eng.start(alpha, b)
        res.breakpoints.append(_snapshot(eng, 1.0, "start"))
        while state.theta > 1e-12:
            if eng.trace(rate, state.theta, adv, lambda kind: True, max_events) == "end":
                state.theta = 0.0
                eng.system.refresh(state)
                break
            if state.boundary().size:
                _dstep_chain(eng, res, state.theta, max_events)
            else:
                _record(res, _snapshot(eng, state.theta, "event"))
    except DegenerateStepError as exc:
        res.failed = str(exc)
    else:
        _record(res, _snapshot(eng, 0.0, "end"))
    res.n_events, res.n_bmoves = state.n_events, state.n_bmoves
    return res


def outlier_path_s(
    K: Array, y: Array, C: float, *, tol: float = 1e-9, max_events: int | None = None,
    init: tuple[Array, float] | None = None, factor: Array | None = None,
) -> OutlierPathResult:
    """OP-s (Algorithm 1 with theta = 0): the local-solution path for s from ``s_init`` to 0.

    The C-step is trivial (section 4.3): the solution is constant inside a polytope
    and the next breakpoint is ``s = min_{i in I} y_i f(x_i)``.  Every breakpoint
    triggers a chain of D-steps.  Parameters as in :func:`outlier_path_theta`.
    """
    y = np.asarray(y, dtype=float)
    Q = np.outer(y, y) * K
    n = len(y)
    max_events = max_events or 50 * n + 1000
    alpha, b = init if init is not None else svm_dual(K, y, C)
    eng = _engine(Q, y, C, theta=0.0, s=-np.inf, tol=tol, factor=q_factor(y, factor))
    state = eng.state
    res = OutlierPathResult("s", float(C))
    try:
        eng.start(alpha, b)  # every point is an inlier
        state.s = min(float(state.m.min()), 0.0)  # s_init
        while True:
            if state.s < 0.0:
                hit = np.flatnonzero(state.inl & (state.st == L) & (state.m <= state.s + tol))
                state.st[hit] = IB  # alpha = C: consistent, no re-solve (it could be rank-deficient)
            if state.boundary().size:
                _dstep_chain(eng, res, state.s, max_events)
            else:
                _record(res, _snapshot(eng, state.s, "end" if state.s >= 0.0 else "event"))
            if state.s >= 0.0:
                break
            s_next = min(float(state.m[state.inl].min()), 0.0)
            if s_next <= state.s + tol:
                # only after a degenerate (pinned-f) jump left an inlier on the boundary
                raise DegenerateStepError("OP-s cannot move s past a degenerate tie")
            state.s = s_next
    except DegenerateStepError as exc:
        res.failed = str(exc)
    res.n_events, res.n_bmoves = state.n_events, state.n_bmoves
    return res
