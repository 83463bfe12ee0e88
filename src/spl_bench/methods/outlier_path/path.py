"""The outlier-path homotopy for the robust SVM (Suzumura et al., ICML 2014).

Problem (eq. 1-2): ``min_f ||f||_H^2 / 2 + C sum_i ell(y_i f(x_i); theta, s)`` with
``f(x) = sum_j a_j y_j K(x_j, x) + b`` and the ramp-like loss

    ell(z; theta, s) = [1 - z]_+      if z >= s,
                       1 - theta z - s if z < s.

OP-theta fixes ``s = 0`` and moves ``theta`` from 1 to 0; OP-s fixes ``theta = 0``
and moves ``s`` from ``min_i y_i f(x_i)`` up to 0 (Algorithm 1).

Every point carries a *state* (section 4.2 and appendix C, eq. 15):

====  ======================================  =======================
R     inlier, margin ``m_i > 1``                ``a_i = 0``
E     inlier, ``m_i = 1``                       ``0 <= a_i <= C``
L     inlier, ``s < m_i < 1``                   ``a_i = C``
IB    inlier on the boundary ``m_i = s``        ``a_i >= C``      (I')
OB    outlier on the boundary ``m_i = s``       ``a_i <= C theta`` (O')
OO    outlier, ``m_i < s``                      ``a_i = C theta`` (O'')
F     forced during a D-step (the swapped set)  ``a_i`` moved linearly
====  ======================================  =======================

The *active* points (E, IB, OB) solve the linear system (11) / appendix C
together with the intercept ``b`` and the equality ``sum_i a_i y_i = 0``; all
other coefficients are fixed.  Both the C-step (parameter theta) and the D-step
(parameter mu of appendix C, run here as ``tau = 1 - mu``) are one scalar
homotopy in which the fixed coefficients move linearly, so one event-driven
engine (:class:`_Engine`) traces both.

Choices where the paper is silent (see ``docs/outlier_path.md``): the decision
function has an unpenalised intercept ``b`` (as scikit-learn's SVC and Hastie et
al.'s SVM path); Algorithm 1 step 2 is read as ``I = {m_i >= s}``,
``O = {m_i < s}`` (the printed inequalities are swapped); the objective compared
across partitions (Theorem 3) is eq. (1) itself, which is continuous in ``f``
for ``s = 0`` or ``theta = 0``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import lapack
from sklearn.svm import SVC

from spl_bench.gaga.core.gather import take_block, take_columns, transpose_for_columns

Array = NDArray[np.float64]

R, E, L, IB, OB, OO, F = range(7)
STATE_NAMES = ("R", "E", "L", "IB", "OB", "OO", "F")
_ACTIVE = (E, IB, OB)


class DegenerateStepError(RuntimeError):
    """The homotopy met a degenerate configuration it cannot resolve (ties, singular system)."""


class _NoEnteringPoint(DegenerateStepError):
    """A b-move found no point that can become active (a one-class set of movable points)."""


class SingularSystemError(DegenerateStepError):
    """The active system (11) is singular: the active coefficients are not unique."""


#: reciprocal condition number (1-norm estimate) under which the active system counts as
#: singular.  In exact arithmetic its null space only holds coefficient changes that leave f
#: unchanged (exactly dependent active points: duplicated rows, ``d + 2`` points on a linear
#: margin, ...); near-dependent points on a path give ``1 / rcond`` up to about 1e12 here.
RCOND_SINGULAR = 1e-15
#: under this, the right-hand side and the residuals are formed in extended precision and
#: the solution is refined (near-dependent active points of a linear kernel on discrete
#: features: the error of a plain solve, ``eps / rcond``, reaches the KKT tolerance)
RCOND_REFINE = 1e-8
#: Harris ratio test: the largest overshoot of a margin (or, times C, of a coefficient) past
#: its threshold allowed when a degenerate tie is broken towards the largest rate
HARRIS_TOL = 1e-11
#: a swapped point's margin rate of the wrong sign below this fraction of ``|da_j| Q_jj`` (a
#: relative Schur complement) is rounding noise of a pinned f, not a crossing back
SCHUR_NOISE = 1e-6


def kkt_factor(M: Array) -> tuple[Array, Array, float]:
    """LU of the active system ``M`` (eq. 11 with the row ``sum a_i y_i = 0``) and its reciprocal
    condition estimate: ``(lu, piv, rcond)``.  Raises :class:`SingularSystemError` when
    ``rcond < RCOND_SINGULAR``."""
    lu, piv, info = lapack.dgetrf(M)
    if info > 0:
        raise SingularSystemError("singular KKT system (linear system (11))")
    anorm = float(np.abs(M).sum(axis=0).max())
    rcond, _ = lapack.dgecon(lu, anorm, norm="1")
    if not rcond >= RCOND_SINGULAR:
        raise SingularSystemError(f"singular KKT system (linear system (11)), rcond {rcond:.1e}")
    return lu, piv, float(rcond)


def kkt_apply(M: Array, factor: tuple[Array, Array, float], rhs: Array,
              rhs_hi: Callable[[], NDArray[np.longdouble]] | None = None) -> Array:
    """``M^{-1} rhs`` from :func:`kkt_factor`'s factor.  An ill-conditioned system
    (``rcond < RCOND_REFINE``) is refined with residuals in extended precision (``np.longdouble``),
    the right-hand side given by ``rhs_hi()`` when the caller can form it more accurately than ``rhs``."""
    lu, piv, rcond = factor
    x, _ = lapack.dgetrs(lu, piv, rhs)
    if rcond < RCOND_REFINE:
        r_hi = rhs_hi() if rhs_hi is not None else rhs.astype(np.longdouble)
        M_hi = M.astype(np.longdouble)
        for _ in range(4):
            # np.dot: the same ordered long-double sums as ``@`` (which accumulates through memory)
            res = r_hi - np.dot(M_hi, x.astype(np.longdouble))
            dx, _ = lapack.dgetrs(lu, piv, res.astype(float))
            x = x + dx
            if np.abs(dx).max(initial=0.0) <= 1e-15 * max(1.0, float(np.abs(x).max(initial=0.0))):
                break
    if not np.all(np.isfinite(x)):
        raise DegenerateStepError("non-finite solution of the KKT system (linear system (11))")
    return x


def fixed_part_hi(QAF: Array, yF: Array, af: Array) -> tuple[NDArray[np.longdouble], np.longdouble]:
    """The fixed coefficients' part of eq. (11)'s right-hand side in extended precision:
    ``(Q_AF a_F, y_F^T a_F)`` as ``np.longdouble``.

    Only the non-zero ``a_F`` enter (most fixed points sit at ``a_i = 0``, the set R): numpy sums
    long-double products one after the other from +0 (no BLAS for the type), and adding an exact
    zero product leaves such a sum unchanged, so the result is the full product's, bit for bit,
    at a fraction of the gathers and products (:func:`products_hi`).
    """
    nz = np.flatnonzero(af)
    return products_hi(QAF[:, nz], yF[nz], af[nz])


def products_hi(Q: Array, y: Array, a: Array) -> tuple[NDArray[np.longdouble], np.longdouble]:
    """``(Q a, y^T a)`` in extended precision (``np.longdouble``), each an ordered sum from +0.

    ``np.dot`` forms the same ordered sums as ``@`` in a register instead of through memory."""
    al = a.astype(np.longdouble)
    return np.dot(Q.astype(np.longdouble), al), np.dot(y.astype(np.longdouble), al)


def kkt_solve(M: Array, rhs: Array, rhs_hi: Callable[[], NDArray[np.longdouble]] | None = None) -> Array:
    """Solve the active system ``M x = rhs``: :func:`kkt_factor`, then :func:`kkt_apply`."""
    return kkt_apply(M, kkt_factor(M), rhs, rhs_hi)


# --------------------------------------------------------------------------- objective
def ramp_loss(z: Array, theta: float, s: float) -> Array:
    """The loss ``ell(z; theta, s)`` of eq. (2)."""
    z = np.asarray(z, dtype=float)
    return np.where(z >= s, np.maximum(0.0, 1.0 - z), 1.0 - theta * z - s)


def q_product(Q: Array, Z: Array | None, v: Array) -> Array:
    """``Q v``: with a factor ``Z`` of ``Q = Z Z^T`` (n x r, r < n) as ``Z (Z^T v)``, O(n r);
    otherwise the O(n^2) product with ``Q``.  The two round differently."""
    return Q @ v if Z is None else Z @ (Z.T @ v)


def q_factor(y: Array, factor: Array | None) -> Array | None:
    """``Z = diag(y) factor``, so that ``Q = Z Z^T`` when ``K = factor factor^T``; ``None`` without one."""
    return None if factor is None else y[:, None] * factor


def linear_factor(kernel: str, X: Array) -> Array | None:
    """``X`` when ``K = X X^T`` (a linear kernel) and ``X`` has fewer than half as many columns as
    rows, so that products through it pay (2 n d against n^2 operations); otherwise ``None``."""
    return X if kernel == "linear" and 2 * X.shape[1] < X.shape[0] else None


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


# --------------------------------------------------------------------------- SVM start
def svm_dual(K: Array, y: Array, C: float, tol: float = 1e-5) -> tuple[Array, float]:
    """The standard SVM (Algorithm 1 step 1) by scikit-learn's SVC on a precomputed kernel.

    The path polishes this solution exactly (:meth:`_Engine.start`), so a moderate
    ``tol`` suffices (libsvm is slow for large C at very small tolerances).
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
    eng = _Engine(np.outer(y, y) * K, y, C, theta=1.0, s=-np.inf)
    eng.start(alpha, b)
    return eng.alpha.copy(), float(eng.b)


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
    eng = _Engine(np.outer(y, y) * K, y, Cs[order[0]], theta=1.0, s=-np.inf, tol=tol,
                  factor=q_factor(y, factor))
    eng.start(*svm_dual(K, y, Cs[order[0]]))
    out: list[tuple[Array, float] | None] = [None] * len(Cs)
    eng.dC = 1.0

    def adv(t: float) -> None:
        eng.C += t

    def rate() -> Array:
        return np.where(eng.st == L, 1.0, 0.0)

    for k in order:
        C1 = Cs[k]
        if C1 > eng.C:
            eng.last = -1
            eng.trace(rate, C1 - eng.C, adv, lambda kind: False, max_events)
            eng.C = C1
            eng.refresh()
        out[k] = (eng.alpha.copy(), float(eng.b))
    return [o for o in out if o is not None]


# --------------------------------------------------------------------------- engine
class _Engine:
    """Event-driven tracer of one-parameter piecewise-linear paths of the RSVM KKT system."""

    #: the active-set gathers by :func:`take_block` / :func:`take_columns` (True), or by numpy's
    #: fancy indexing (False: the route before them, kept for ``scripts/bench_families.py``); both
    #: give the same arrays, so the same path bit for bit
    compiled_gathers = True
    #: the margins ``Q a`` and their rates through the factor ``Z`` of ``Q = Z Z^T`` when the
    #: engine is given one (True), or through ``Q`` (False: the route before it, kept for
    #: ``scripts/bench_families.py``).  The two round differently, so paths can differ at
    #: degenerate ties (Table 2's committed seeds, rerun with it: ``docs/outlier_path.md``)
    factor_products = True

    def __init__(self, Q: Array, y: Array, C: float, theta: float, s: float, tol: float = 1e-9,
                 factor: Array | None = None) -> None:
        self.Q = np.ascontiguousarray(Q, dtype=float)
        #: ``Z`` with ``Q = Z Z^T`` (n x r, r < n: a linear kernel's ``y_i x_i``), or ``None``
        self.Z = (np.ascontiguousarray(factor, dtype=float)
                  if factor is not None and self.factor_products else None)
        #: ``Q.T`` in C order: the columns of Q as rows (:func:`take_columns`)
        self.Qt = transpose_for_columns(self.Q)
        self.y = y
        self.n = len(y)
        self.C = float(C)
        self.theta = float(theta)
        self.s = float(s)
        self.tol = tol
        self.q_diag = np.abs(np.diag(Q))
        self.q_scale = max(1.0, float(self.q_diag.max(initial=1.0)))
        self.alpha = np.zeros(self.n)
        self.b = 0.0
        self.m = np.zeros(self.n)
        self.st = np.full(self.n, R, dtype=np.int8)
        self.inl = np.ones(self.n, dtype=bool)
        # forced coefficients of a D-step: a_i = bef_i + tau (target_i - bef_i)
        self.bef = np.zeros(self.n)
        self.target = np.zeros(self.n)
        self.tau = 0.0
        self.swapped = np.zeros(0, dtype=np.intp)  # the points swapped by the last D-step
        self.n_events = 0
        self.n_bmoves = 0
        self.n_null_moves = 0
        #: rate of the upper bound C per unit step (the C-path of :func:`svm_path`)
        self.dC = 0.0
        #: (active set, KKT matrix, its factor) of the last solve (:meth:`_solve`)
        self._kkt_cache: tuple[bytes, Array, tuple[Array, Array, float]] | None = None
        self.last = -1  # the point of the last event, not allowed to switch back at a zero step

    # ----------------------------------------------------------------- basics
    def _block(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> Array:
        """``Q[np.ix_(rows, cols)]``."""
        return take_block(self.Q, rows, cols) if self.compiled_gathers else self.Q[np.ix_(rows, cols)]

    def _columns(self, cols: NDArray[np.intp]) -> Array:
        """``Q[:, cols]``."""
        return take_columns(self.Qt, cols) if self.compiled_gathers else self.Q[:, cols]

    def q_dot(self, v: Array) -> Array:
        """``Q v`` (:func:`q_product`: through the factor when the engine has one)."""
        return q_product(self.Q, self.Z, v)

    def active(self) -> NDArray[np.intp]:
        return np.flatnonzero(np.isin(self.st, _ACTIVE))

    def targets(self, A: NDArray[np.intp]) -> Array:
        return np.where(self.st[A] == E, 1.0, self.s)

    def set_fixed_alpha(self) -> None:
        st, a = self.st, self.alpha
        a[st == R] = 0.0
        a[st == L] = self.C
        a[st == OO] = self.C * self.theta
        f = st == F
        if np.any(f):
            a[f] = self.bef[f] + self.tau * (self.target[f] - self.bef[f])

    def _kkt_matrix(self, A: NDArray[np.intp]) -> Array:
        k = A.size
        M = np.zeros((k + 1, k + 1))
        M[:k, :k] = self._block(A, A)
        M[:k, k] = self.y[A]
        M[k, :k] = self.y[A]
        return M

    def _solve(self, A: NDArray[np.intp], rhs: Array, rhs_hi: Any = None) -> Array:
        """Solve the active system of ``A`` (eq. 11).  Its matrix depends on ``A`` alone (the kernel
        is fixed), so the factor of the last active set is kept: an event's re-solve
        (:meth:`refresh`) and the next direction (:meth:`direction`) share one factorisation."""
        key = A.tobytes()
        cached = self._kkt_cache
        if cached is not None and cached[0] == key:
            M, factor = cached[1], cached[2]
        else:
            M = self._kkt_matrix(A)
            self._kkt_cache = None
            factor = kkt_factor(M)  # raises SingularSystemError: nothing is cached
            self._kkt_cache = (key, M, factor)
        return kkt_apply(M, factor, rhs, rhs_hi)

    def refresh(self) -> None:
        """Set the fixed coefficients exactly and re-solve the active ones and ``b`` (eq. 11).

        A singular system (the active coefficients are not unique) is first reduced by
        null-space moves (:meth:`drop_dependent`), which leave ``f`` unchanged.
        """
        self.set_fixed_alpha()
        for _ in range(self.n + 1):
            A = self.active()
            if A.size == 0:
                break
            fix = np.ones(self.n, dtype=bool)
            fix[A] = False
            F = np.flatnonzero(fix)
            af = self.alpha[F]
            QAF = self._block(A, F)
            rhs = np.empty(A.size + 1)
            rhs[:-1] = self.targets(A) - QAF @ af
            rhs[-1] = -self.y[F] @ af

            def rhs_hi(A=A, F=F, af=af, QAF=QAF) -> NDArray[np.longdouble]:
                q, y = fixed_part_hi(QAF, self.y[F], af)
                r = np.empty(A.size + 1, dtype=np.longdouble)
                r[:-1] = self.targets(A).astype(np.longdouble) - q
                r[-1] = -y
                return r

            try:
                sol = self._solve(A, rhs, rhs_hi)
            except SingularSystemError:
                self.drop_dependent(A)
                continue
            self.alpha[A] = sol[:-1]
            self.b = float(sol[-1])
            break
        else:
            raise DegenerateStepError("could not reduce a singular active set")
        self.m = self.q_dot(self.alpha) + self.y * self.b

    def bounds(self, A: NDArray[np.intp]) -> tuple[Array, Array]:
        """The box of the active coefficients: E ``[0, C]``, IB ``[C, inf)``, OB ``(-inf, C theta]``."""
        st = self.st[A]
        lo = np.where(st == E, 0.0, np.where(st == IB, self.C, -np.inf))
        hi = np.where(st == E, self.C, np.where(st == IB, np.inf, self.C * self.theta))
        return lo, hi

    def drop_dependent(self, A: NDArray[np.intp]) -> None:
        """Null-space move: with a singular active system, move the active coefficients along
        its null space until one reaches its bound, and fix that point there.

        The null space of ``[[Q_AA, y_A], [y_A^T, 0]]`` holds ``(v, 0)`` with ``Q_AA v = 0``
        and ``y_A^T v = 0`` (``v^T Q_AA v = 0`` and ``Q`` is PSD), i.e. coefficient changes
        that leave ``f`` unchanged everywhere: every margin, the objective and the KKT
        conditions of all other points stay as they are.  The fixed point keeps its margin
        (1 for E, s for IB/OB) with its coefficient at the bound, which (10a)-(10d) allow.
        """
        M = self._kkt_matrix(A)
        _, _, Vt = np.linalg.svd(M)
        v = Vt[-1, :-1]
        v = v / np.abs(v).max()
        a = self.alpha[A]
        lo, hi = self.bounds(A)
        a = np.clip(a, lo, hi)
        best_t, best_j, best_sign = np.inf, -1, 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            for sign in (1.0, -1.0):
                r = sign * v
                t = np.where(r > 1e-12, (hi - a) / r, np.where(r < -1e-12, (lo - a) / r, np.inf))
                t = np.maximum(t, 0.0)
                j = int(np.argmin(t))
                if t[j] < best_t:
                    best_t, best_j, best_sign = float(t[j]), j, sign
        if best_j < 0 or not np.isfinite(best_t):
            raise DegenerateStepError("singular active system without a bounded null direction")
        a = a + best_t * best_sign * v
        i = int(A[best_j])
        at_lo = best_sign * v[best_j] < 0
        self.alpha[A] = a
        old = self.st[i]
        if old == E:
            self.st[i] = R if at_lo else L
        elif old == IB:
            self.st[i] = L
        else:
            self.st[i] = OO
        self.alpha[i] = lo[best_j] if at_lo else hi[best_j]
        self.last = i
        self.n_null_moves += 1

    def objective(self) -> float:
        return rsvm_objective(self.alpha, self.b, None, self.y, self.C, self.theta, self.s,
                              Qa=self.q_dot(self.alpha))

    def boundary(self) -> NDArray[np.intp]:
        return np.flatnonzero((self.st == IB) | (self.st == OB))

    # ------------------------------------------------------------- direction
    def direction(self, q: Array) -> tuple[Array, float] | None:
        """Derivative of ``(alpha, b)`` when the fixed coefficients move by ``q`` per unit step.

        ``None`` when no point is active and ``sum_i q_i y_i != 0``: the intercept must
        first move (a b-move) until a point becomes active.
        """
        A = self.active()
        da = q.copy()
        da[A] = 0.0
        nz = np.flatnonzero(da)
        if A.size == 0:
            r = float(self.y[nz] @ da[nz])
            if abs(r) <= 1e-12 * max(1.0, np.abs(da).max(initial=0.0)):
                return da, 0.0
            return None
        QAn = self._block(A, nz)
        dn = da[nz]
        rhs = np.empty(A.size + 1)
        rhs[:-1] = -(QAn @ dn)
        rhs[-1] = -(self.y[nz] @ dn)

        def rhs_hi() -> NDArray[np.longdouble]:
            q, yq = products_hi(QAn, self.y[nz], dn)  # dn holds the non-zero moves only
            r = np.empty(A.size + 1, dtype=np.longdouble)
            r[:-1] = -q
            r[-1] = -yq
            return r

        sol = self._solve(A, rhs, rhs_hi)
        da[A] = sol[:-1]
        return da, float(sol[-1])

    def margin_rate(self, da: Array, db: float) -> Array:
        """``dm = Q da + y db`` (the columns of the moving coefficients, or through the factor)."""
        nz = np.flatnonzero(da)
        if self.Z is not None:
            return self.Z @ (self.Z[nz].T @ da[nz]) + self.y * db
        return self._columns(nz) @ da[nz] + self.y * db

    # ----------------------------------------------------------------- events
    def next_event(self, da: Array, dm: Array, limit: float, exclude: int) -> tuple[float, int, str]:
        """Step ``t in [0, limit]`` to the next state change, by a Harris ratio test.

        Degenerate ties (with a linear kernel many points can sit exactly on the margin or
        the boundary, e.g. when f collapses to a constant) are broken as in the simplex
        method (Harris 1973): every candidate may overshoot its threshold by at most
        ``HARRIS_TOL`` (margin units; ``C * HARRIS_TOL`` for coefficients), and among the
        candidates reachable within that slack the one with the largest rate enters or
        leaves.  Picking a point whose rate is rounding noise (a tiny pivot) otherwise makes
        the next active system nearly singular and its coefficients inaccurate.
        """
        st, a, m, C = self.st, self.alpha, self.m, self.C
        eps = 1e-13
        # margin rates below rounding level count as zero (a rank-deficient kernel can pin f
        # while the coefficients still move; then every dm is noise)
        eps_m = 1e-11 * max(1.0, float(np.abs(da).max(initial=0.0))) * self.q_scale
        cand_t: list[Array] = []
        cand_slack: list[Array] = []
        cand_rate: list[Array] = []
        cand_idx: list[NDArray[np.intp]] = []
        cand_kind: list[str] = []
        bad_t, bad_j = np.inf, -1

        def consider(mask: NDArray[np.bool_], num: Array, den: Array, kind: str, unit: float) -> None:
            idx = np.flatnonzero(mask)
            if idx.size == 0:
                return
            t = num[idx] / den[idx]
            rate = np.abs(den[idx]) / unit
            if exclude >= 0:
                # the point of the last event may not switch back at (numerically) zero step
                t[(idx == exclude) & (t <= 1e-12)] = np.inf
            cand_t.append(t)
            cand_slack.append(t + HARRIS_TOL / rate)
            cand_rate.append(rate)
            cand_idx.append(idx)
            cand_kind.append(kind)

        with np.errstate(divide="ignore", invalid="ignore"):
            cu = max(C, 1e-300)
            dC = self.dC
            consider((st == E) & (da < -eps), -a, da, "E->R", cu)
            consider((st == E) & (da > dC + eps), C - a, da - dC, "E->L", cu)
            consider((st == IB) & (da < dC - eps), C - a, da - dC, "IB->L", cu)
            consider((st == OB) & (da > eps), C * self.theta - a, da, "OB->OO", cu)
            consider((st == R) & (dm < -eps_m), 1.0 - m, dm, "R->E", 1.0)
            consider((st == L) & (dm > eps_m), 1.0 - m, dm, "L->E", 1.0)
            consider((st == L) & (dm < -eps_m), self.s - m, dm, "L->IB", 1.0)
            consider((st == OO) & (dm > eps_m), self.s - m, dm, "OO->OB", 1.0)
            fin = (st == F) & self.inl
            fout = (st == F) & ~self.inl
            consider(fin & (dm > eps_m), 1.0 - m, dm, "F->E", 1.0)
            # a swapped point moving back over the boundary is a failure.  In exact arithmetic
            # it cannot happen: dm_j / da_j is the Schur complement of the active KKT matrix in
            # the bordered Gram matrix, >= 0 for a PSD kernel.  With f pinned (the swapped row
            # in the span of the active ones: duplicated rows, d + 1 active points of a linear
            # kernel) it is zero and the computed dm_j is the solve's rounding error, which
            # grows with |da_j| and the condition of the system (relative Schur complements of
            # 1e-12 to 1e-10 with the wrong sign on australian); the margins are recomputed by
            # the re-solve at the end of the D-step and checked by Theorem 4 there
            big = 1e-9 * (1.0 + float(np.abs(dm).max(initial=0.0)))
            big = np.maximum(big, SCHUR_NOISE * np.abs(da) * self.q_diag)
            for mask in (fin & (dm < -big), fout & (dm > big)):
                idx = np.flatnonzero(mask)
                if idx.size:
                    t = np.maximum((self.s - m[idx]) / dm[idx], 0.0)
                    k = int(np.argmin(t))
                    if t[k] < bad_t:
                        bad_t, bad_j = float(t[k]), int(idx[k])
        best_t, best_j, best_k = limit, -1, "end"
        if cand_t:
            t_all = np.concatenate(cand_t)
            if t_all.size and float(t_all.min()) < limit:
                t_h = float(np.concatenate(cand_slack).min())
                rate = np.where(t_all <= t_h, np.concatenate(cand_rate), -np.inf)
                k = int(np.argmax(rate))
                sizes = np.cumsum([c.size for c in cand_idx])
                g = int(np.searchsorted(sizes, k, side="right"))
                best_t = max(0.0, min(float(t_all[k]), limit))
                best_j = int(np.concatenate(cand_idx)[k])
                best_k = cand_kind[g]
        if bad_j >= 0 and bad_t < best_t:
            return bad_t, bad_j, "F-bad"
        return best_t, best_j, best_k

    def apply_event(self, j: int, kind: str) -> None:
        new = {
            "E->R": R, "E->L": L, "IB->L": L, "OB->OO": OO, "R->E": E,
            "L->E": E, "L->IB": IB, "OO->OB": OB, "F->E": E,
        }
        if kind == "F-bad":
            raise DegenerateStepError(
                f"D-step: swapped point {j} crossed back over the boundary (simultaneous swaps)"
            )
        if kind == "F->E" and not 0.0 <= self.alpha[j] <= self.C:
            raise DegenerateStepError(f"D-step: swapped point {j} reached margin 1 with a_i outside [0, C]")
        self.st[j] = new[kind]

    def trace(
        self,
        rate: Callable[[], Array],
        limit: float,
        advance: Callable[[float], None],
        on_event: Callable[[str], bool],
        max_events: int,
    ) -> str:
        """Follow the path for ``limit`` units of the step variable.

        ``rate()`` gives the rate of the moving fixed coefficients (OO in a C-step,
        F in a D-step), ``advance(t)`` moves the homotopy parameter by ``t`` and
        ``on_event(kind)`` is called after each event; it returns True to stop.
        Returns ``"end"`` or ``"stop"``.
        """
        done = 0.0
        zero_steps = 0
        while True:
            q = rate()
            try:
                d = self.direction(q)
            except SingularSystemError:
                # states set without a re-solve (boundary points of OP-s) can leave dependent
                # active points: reduce them by null-space moves (f unchanged), then solve
                self.refresh()
                q = rate()
                d = self.direction(q)
            if d is None:
                kind = self.bmove(float(self.y @ q))
                if on_event(kind):
                    return "stop"
                continue
            da, db = d
            dm = self.margin_rate(da, db)
            t, j, kind = self.next_event(da, dm, limit - done, self.last)
            self.alpha += t * da
            self.b += t * db
            self.m += t * dm
            done += t
            advance(t)
            if j < 0:
                self.refresh()
                return "end"
            self.n_events += 1
            if self.n_events > max_events:
                raise DegenerateStepError(f"more than {max_events} events on the path")
            zero_steps = zero_steps + 1 if t <= 1e-14 else 0
            if zero_steps > 2 * self.n + 10:
                raise DegenerateStepError("the path cycles without progress (degenerate ties)")
            self.apply_event(j, kind)
            self.last = j
            if kind in ("L->IB", "OO->OB") and on_event(kind):
                self.m[j] = self.s  # stop for a D-step; the swapped point will be forced, not solved
                return "stop"
            self.refresh()
            if kind in ("R->E", "L->E"):
                done += self.snap_entry(j, rate, advance, limit - done)
            if on_event(kind):
                return "stop"

    def snap_entry(self, j: int, rate: Callable[[], Array], advance: Callable[[float], None], room: float) -> float:
        """Place an entering point's coefficient on its bound by locating the event on the new system.

        In exact arithmetic a point entering E (``R->E`` / ``L->E``) has ``a_j = 0`` / ``C`` at
        the event.  The event is found on the margin ``m_j``; when ``j`` nearly duplicates an
        active point (near-duplicate rows of a linear kernel), ``m_j`` crosses 1 very slowly
        and ``a_j`` moves very fast on the new system, so the rounding error of the margins
        (about 1e-13) shifts the event by ``~1e-10`` and the re-solve leaves ``a_j`` outside
        ``[0, C]`` by far more than the KKT tolerance (1e-6 C at ``theta = 0.49`` on spambase).
        If the new direction moves ``a_j`` back into its box, the path is advanced by the tiny
        step at which it gets there (the event point seen by the new active set), provided no
        other event comes first.  Returns the step taken.
        """
        done = 0.0
        for _ in range(3):  # a few Newton-like steps: the re-solve is not exactly linear in t
            a, C = float(self.alpha[j]), self.C
            dev = a if a < 0.0 else (a - C if a > C else 0.0)
            if abs(dev) <= 1e-10 * C:
                break
            d = self.direction(rate())
            if d is None:
                break
            da, db = d
            r = float(da[j]) - (self.dC if dev > 0.0 else 0.0)
            if r == 0.0 or not 0.0 < -dev / r <= room - done:
                break
            t = -dev / r
            dm = self.margin_rate(da, db)
            if self.next_event(da, dm, t, j)[1] >= 0:
                break
            self.alpha += t * da
            self.b += t * db
            self.m += t * dm
            advance(t)
            done += t
            self.refresh()
        return done

    def bmove(self, r: float) -> str:
        """Move ``b`` with all coefficients fixed until a point becomes active.

        Needed when no point is active and the equality ``sum a_i y_i = 0`` must be
        kept while fixed coefficients move: ``b`` is not unique there, and the end of
        its optimal interval on the side given by ``sign(r)`` is the one at which the
        entering point can absorb the change.
        """
        delta = 1.0 if r > 0 else -1.0
        dm = self.y * delta
        t, j, kind = self.next_event(np.zeros(self.n), dm, np.inf, -1)
        if j < 0 or not np.isfinite(t):
            raise _NoEnteringPoint("no point can become active (b-move)")
        self.b += delta * t
        self.m += t * dm
        self.apply_event(j, kind)
        self.last = j
        self.n_bmoves += 1
        self.refresh()
        return kind

    # ----------------------------------------------------------------- set-up
    def start(self, alpha: Array, b: float) -> None:
        """States from an SVM solution (inliers ``m_i >= s``), then an exact re-solve."""
        C = self.C
        self.alpha = alpha.astype(float).copy()
        self.b = float(b)
        self.m = self.q_dot(self.alpha) + self.y * self.b
        self.inl = self.m >= self.s
        tol_a = 1e-8 * C
        st = np.where(self.alpha <= tol_a, R, np.where(self.alpha >= C - tol_a, L, E)).astype(np.int8)
        st[~self.inl] = OO
        self.st = st
        # active-set polishing: first swap every violator at once, then one at a time
        for it in range(30 + 3 * self.n):
            # a rank-deficient free set (linear kernel, more free SVs than d + 1) is reduced
            # by null-space moves inside refresh()
            self.refresh()
            a, m, st = self.alpha, self.m, self.st
            bad = False
            for mask, new in (
                ((st == E) & (a < -1e-10 * C), R),
                ((st == E) & (a > C * (1 + 1e-10)), L),
                ((st == R) & (m < 1 - 1e-9), E),
                ((st == L) & (m > 1 + 1e-9), E),
            ):
                idx = np.flatnonzero(mask)
                if idx.size:
                    if it < 30:
                        st[idx] = new
                    else:
                        st[idx[np.argmax(np.abs(np.where(new == E, m[idx] - 1, a[idx])))]] = new
                    bad = True
                    if it >= 30:
                        break
            if not bad:
                return
        raise DegenerateStepError("could not polish the initial SVM solution")

    def settleable(self) -> bool:
        """Whether every boundary point already holds the coefficient of the fixed state on its
        side (IB: ``a_i = C``, OB: ``a_i = C theta``), so :meth:`settle_boundary` leaves f as it is.

        After a D-step that did not decrease the objective this holds when f is pinned (the
        swapped coefficient reached its target with f unchanged).  It fails for a tie that the
        D-step has only half resolved: e.g. two duplicated rows reach the boundary together, the
        first is swapped, and the second absorbs the change of the first (f unchanged) and stays
        on the boundary with a coefficient strictly inside its box.  Forcing that coefficient to
        its bound would move f by a finite amount (the wrong-state failures of the spambase
        paths); the tie must instead be resolved by a D-step on the second point.
        """
        B = self.boundary()
        fixed = np.where(self.st[B] == IB, self.C, self.C * self.theta)
        return bool(np.all(np.abs(self.alpha[B] - fixed) <= 1e-9 * self.C))

    def settle_boundary(self) -> None:
        """Turn boundary points into the fixed state their coefficient allows (degenerate ties).

        Only valid when :meth:`settleable`: the coefficients are already at the fixed values,
        so f does not change.
        """
        for i in self.boundary():
            if self.st[i] == OB:
                self.st[i] = OO
                self.alpha[i] = self.C * self.theta
            else:
                self.st[i] = L
                self.alpha[i] = self.C
            self.last = int(i)
        self.refresh()

    def finish_collapsed_dstep(self) -> None:
        """End a D-step whose mu-path cannot keep ``sum a_i y_i = 0`` (no active point can absorb it).

        This happens when the solution collapses towards a constant classifier (all points
        that could move are of one class).  The end point of the D-step is then computed
        directly: the swapped coefficients take their targets, and if ``sum a_i y_i = 0``
        holds there, ``b`` is chosen inside the interval where every fixed state keeps its
        margin condition (the KKT conditions of the convex problem (14), hence optimal).
        """
        A = self.active()
        f = np.flatnonzero(self.st == F)
        alpha = self.alpha.copy()
        alpha[f] = self.target[f]
        if A.size or abs(float(alpha @ self.y)) > 1e-9 * max(1.0, self.C):
            raise DegenerateStepError("no point can become active (b-move) and the D-step end is infeasible")
        g = self.q_dot(alpha)  # margins without b: m = g + y b
        lo, hi = -np.inf, np.inf
        st, y, s = self.st, self.y, self.s
        inl_like = (st == L) | ((st == F) & self.inl)
        out_like = (st == OO) | ((st == F) & ~self.inl)
        for mask, mlo, mhi in ((st == R, 1.0, np.inf), (inl_like, s, 1.0), (out_like, -np.inf, s)):
            for i in np.flatnonzero(mask):
                # mlo <= g_i + y_i b <= mhi
                a1, a2 = (mlo - g[i], mhi - g[i]) if y[i] > 0 else (g[i] - mhi, g[i] - mlo)
                lo, hi = max(lo, a1), min(hi, a2)
        if not lo <= hi:
            raise DegenerateStepError("collapsed D-step: no intercept satisfies the KKT conditions")
        if np.isfinite(lo) and np.isfinite(hi):
            b = 0.5 * (lo + hi)
        elif np.isfinite(lo) or np.isfinite(hi):
            b = lo + 1.0 if np.isfinite(lo) else hi - 1.0
        else:
            b = 0.0
        self.alpha = alpha
        self.b = float(b)
        self.tau = 1.0
        self.m = g + y * self.b

    # ----------------------------------------------------------------- D-step
    def expose_boundary(self) -> None:
        """Give the boundary states to fixed points lying on the boundary ``m_i = s``.

        An L point (``a_i = C``) or OO point (``a_i = C theta``) can end a D-step on the
        boundary, e.g. when a null-space move fixed it there (duplicated rows).  Its
        coefficient is on the edge of the IB / OB box, so the states change and f does not;
        Theorem 4 (10e) then sends it through a D-step of its own.
        """
        near = np.abs(self.m - self.s) <= self.tol
        self.st[near & (self.st == L) & self.inl] = IB
        self.st[near & (self.st == OO) & ~self.inl] = OB

    def dstep(self, max_events: int, candidates: NDArray[np.intp] | None = None) -> int:
        """One D-step (Algorithm 3, appendix C): swap a boundary point, trace mu 1 -> 0.

        ``candidates`` (default: all boundary points) are the points that may be swapped.
        Returns the number of swapped points; they are kept in ``self.swapped``.
        """
        B = self.boundary() if candidates is None else np.asarray(candidates, dtype=np.intp)
        if B.size > 1:
            # ties: swap one point per D-step, the one violating the KKT conditions of
            # the other side most (Theorem 3 holds for any single swap; the joint
            # mu-path of several swaps is not monotone and can fail)
            viol = np.where(self.st[B] == IB, self.alpha[B] - self.C * self.theta, self.C - self.alpha[B])
            B = B[[int(np.argmax(viol))]]
        self.swapped = B
        self.inl[B] = ~self.inl[B]
        self.bef[B] = self.alpha[B]
        self.target[B] = np.where(self.inl[B], self.C, self.C * self.theta)
        self.st[B] = F
        self.tau = 0.0
        q = np.zeros(self.n)
        q[B] = self.target[B] - self.bef[B]

        def adv(t: float) -> None:
            self.tau = min(1.0, self.tau + t)

        def rate() -> Array:
            return np.where(self.st == F, q, 0.0)

        self.last = -1
        try:
            self.trace(rate, 1.0, adv, lambda kind: False, max_events)
        except _NoEnteringPoint:
            self.finish_collapsed_dstep()
        self.tau = 1.0
        f = np.flatnonzero(self.st == F)
        self.alpha[f] = self.target[f]
        for i in f:
            if self.inl[i]:
                self.st[i] = IB if self.m[i] <= self.s + self.tol else (E if self.m[i] >= 1 - self.tol else L)
            else:
                self.st[i] = OB if self.m[i] >= self.s - self.tol else OO
        self.refresh()
        return int(B.size)


# --------------------------------------------------------------------------- drivers
def _snapshot(eng: _Engine, param: float, kind: str) -> Breakpoint:
    """The current solution as a breakpoint, after checking Theorem 4 (10a-10d) on it.

    A violation (seen only after a collapse to a near-constant classifier, where many
    margins tie) truncates the path instead of returning a wrong local solution.
    """
    a, m, C, s = eng.alpha, eng.q_dot(eng.alpha) + eng.y * eng.b, eng.C, eng.s
    tol = 1e-7
    viol = np.where(m > 1 + tol, np.abs(a), 0.0)
    viol = np.maximum(viol, np.where(np.abs(m - 1) <= tol, np.maximum(-a, a - C), 0.0))
    viol = np.maximum(viol, np.where((m > s + tol) & (m < 1 - tol), np.abs(a - C), 0.0))
    viol = np.maximum(viol, np.where(m < s - tol, np.abs(a - C * eng.theta), 0.0))
    worst = max(float(viol.max(initial=0.0)), abs(float(a @ eng.y)))
    if worst > 1e-6 * max(1.0, C):
        raise DegenerateStepError(f"local-optimality check failed at {kind} {param:.6g} (violation {worst:.2e})")
    return Breakpoint(param, a.copy(), float(eng.b), kind, eng.objective(), eng.inl.copy())


def _dstep_chain(eng: _Engine, res: OutlierPathResult, param: float, max_events: int) -> None:
    a0, b0, j0 = eng.alpha.copy(), float(eng.b), eng.objective()
    objs: list[float] = []
    n_sw = 0
    n_d = 0
    prev = j0
    degenerate = False
    #: points swapped by D-steps that did not decrease the objective since the last decrease
    neutral: set[int] = set()
    while True:
        eng.expose_boundary()
        B = eng.boundary()
        if not B.size:
            break
        fresh = B[~np.isin(B, list(neutral))]
        if not fresh.size:
            # every boundary point has been swapped without a decrease (Theorem 3 needs a
            # unique alpha): f is pinned (rank-deficient kernel).  If the boundary points hold
            # the coefficients of fixed states, f is conditionally optimal on both sides:
            # accept it as it is
            if not eng.settleable():
                raise DegenerateStepError("D-steps cannot resolve a tie on the boundary")
            eng.settle_boundary()
            degenerate = True
            break
        n_sw += eng.dstep(max_events, fresh)
        n_d += 1
        objs.append(eng.objective())
        if objs[-1] >= prev - 1e-12 * max(1.0, abs(prev)):
            # no decrease: e.g. two duplicated rows on the boundary, the swapped one's change
            # absorbed by the other (f unchanged); the other is swapped next
            neutral.update(int(i) for i in eng.swapped)
        else:
            neutral.clear()
        prev = objs[-1]
        if n_d > 4 * eng.n + 10:
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
    eng = _Engine(Q, y, C, theta=1.0, s=0.0, tol=tol, factor=q_factor(y, factor))
    res = OutlierPathResult("theta", float(C))

    def adv(t: float) -> None:
        eng.theta = max(0.0, eng.theta - t)

    def rate() -> Array:
        return np.where(eng.st == OO, -eng.C, 0.0)

    try:
        eng.start(alpha, b)
        res.breakpoints.append(_snapshot(eng, 1.0, "start"))
        while eng.theta > 1e-12:
            if eng.trace(rate, eng.theta, adv, lambda kind: True, max_events) == "end":
                eng.theta = 0.0
                eng.refresh()
                break
            if eng.boundary().size:
                _dstep_chain(eng, res, eng.theta, max_events)
            else:
                _record(res, _snapshot(eng, eng.theta, "event"))
    except DegenerateStepError as exc:
        res.failed = str(exc)
    else:
        _record(res, _snapshot(eng, 0.0, "end"))
    res.n_events, res.n_bmoves = eng.n_events, eng.n_bmoves
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
    eng = _Engine(Q, y, C, theta=0.0, s=-np.inf, tol=tol, factor=q_factor(y, factor))
    res = OutlierPathResult("s", float(C))
    try:
        eng.start(alpha, b)  # every point is an inlier
        eng.s = min(float(eng.m.min()), 0.0)  # s_init
        while True:
            if eng.s < 0.0:
                hit = np.flatnonzero(eng.inl & (eng.st == L) & (eng.m <= eng.s + tol))
                eng.st[hit] = IB  # alpha = C: consistent, no re-solve (it could be rank-deficient)
            if eng.boundary().size:
                _dstep_chain(eng, res, eng.s, max_events)
            else:
                _record(res, _snapshot(eng, eng.s, "end" if eng.s >= 0.0 else "event"))
            if eng.s >= 0.0:
                break
            s_next = min(float(eng.m[eng.inl].min()), 0.0)
            if s_next <= eng.s + tol:
                # only after a degenerate (pinned-f) jump left an inlier on the boundary
                raise DegenerateStepError("OP-s cannot move s past a degenerate tie")
            eng.s = s_next
    except DegenerateStepError as exc:
        res.failed = str(exc)
    res.n_events, res.n_bmoves = eng.n_events, eng.n_bmoves
    return res
