"""Reference partial optima for the GAGA tests, computed without ``spl_bench.gaga``.

A point is found by ACS (GAGA Algorithm 1: the model's own weighted solver alternated
with ``v = v*(ell, lam)``) and then *polished* by Newton on the fixed-point equations
of a partial optimum, written out here from the model definitions:

* lasso: ``X_A^T (v r) = n alpha sign(w_A)`` on the active set ``A``;
* logistic: the gradient of the v-weighted objective is zero;
* SVM (dual): ``g_Z = 0`` on the margin set, ``a_P = C v*(C g_P, lam)`` where
  ``g > 0``, ``a_N = 0`` where ``g < 0`` and ``y^T a = 0``;

with ``v = v*(ell(theta), lam)`` re-evaluated at every Newton iterate (so the
equations are those of the partial optimum, not of a fixed ``v``).  Index sets are
re-assigned until the point passes the KKT check.  A point is accepted only when its
last Newton correction is tiny (quadratic convergence reached, so the distance to
the exact partial optimum is of that order) and the model's KKT check of the
``v*``-weighted problem holds to ``1e-9``.

Only the models' public methods (``losses``, ``fit_weighted``, ``kkt_violation``,
``gradient``, ``kernel_matrix``) and ``SPRegularizer.v_star`` are used; nothing from
``spl_bench.gaga``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

from spl_bench.models import Params
from spl_bench.models.svm import resolve_gamma


# --------------------------------------------------------------------------- data
def standardise(X: np.ndarray) -> np.ndarray:
    sd = X.std(0)
    keep = sd > 0
    return (X[:, keep] - X[:, keep].mean(0)) / sd[keep]


def _rows(n_total: int, n: int | None, seed: int) -> np.ndarray:
    if n is None or n >= n_total:
        return np.arange(n_total)
    return np.sort(np.random.default_rng(seed).choice(n_total, n, replace=False))


def diabetes(n: int | None = None, d: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Diabetes, centred and standardised (the lasso has no intercept)."""
    X, y = load_diabetes(return_X_y=True)
    i = _rows(len(y), n, seed)
    X = standardise(X[i][:, :d] if d else X[i])
    y = y[i]
    return X, (y - y.mean()) / y.std()


def breast_cancer(n: int | None = None, d: int | None = None, seed: int = 0,
                  flip: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Breast cancer, standardised, labels -1/+1; a fraction ``flip`` of the labels flipped."""
    X, y = load_breast_cancer(return_X_y=True)
    i = _rows(len(y), n, seed)
    X = standardise(X[i][:, :d] if d else X[i])
    y = np.where(y[i] > 0, 1.0, -1.0)
    if flip:
        y[np.random.default_rng(seed + 1).random(len(y)) < flip] *= -1
    return X, y


def digits_binary(n: int | None = None, d: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Digits, label +1 for digits >= 5 and -1 below; the ``d`` pixels of largest variance, standardised."""
    X, y = load_digits(return_X_y=True)
    cols = np.argsort(-X.var(0), kind="stable")[: (d or X.shape[1])]
    i = _rows(len(y), n, seed)
    return standardise(X[i][:, np.sort(cols)]), np.where(y[i] >= 5, 1.0, -1.0)


# ---------------------------------------------------------------------- helpers
def _vstar_slope(sp, ell: np.ndarray, lam: float) -> np.ndarray:
    """dv*/dell by central differences of ``v_star`` (only used inside Newton's Jacobian)."""
    h = 1e-7 * np.maximum(1.0, ell)
    lo = np.maximum(ell - h, 0.0)
    return (sp.v_star(ell + h, lam) - sp.v_star(lo, lam)) / (ell + h - lo)


def svm_natural_residual(a: np.ndarray, g: np.ndarray, v: np.ndarray, y: np.ndarray, C: float) -> float:
    """``max(|a/C - clip(a/C + g, 0, v)|, |y^T a| / C)``: zero iff ``a`` solves the v-weighted dual."""
    u = a / C
    return float(max(np.abs(u - np.clip(u + g, 0.0, v)).max(initial=0.0), abs(float(a @ y)) / C))


class ReferenceError_(AssertionError):
    """The reference solver could not certify a partial optimum."""


@dataclass
class RefPoint:
    vec: np.ndarray  # coef (lasso, logistic) or dual_coef (svm)
    b: float
    kkt: float  # model's KKT check of the v*-weighted problem
    newton_step: float  # size of the last Newton correction (relative)
    acs_iters: int
    code: np.ndarray  # E/M/D partition of the samples (sp.partition), plus the set structure


class Reference:
    """ACS + Newton polish at one age, warm-started from a given point."""

    def __init__(self, model, sp, X: np.ndarray, y: np.ndarray, acs_tol: float = 1e-4, acs_max_iter: int = 300,
                 kkt_tol: float = 1e-9, step_tol: float = 1e-9):
        self.model, self.sp, self.X, self.y = model, sp, X, y
        self.acs_tol, self.acs_max_iter = acs_tol, acs_max_iter
        self.kkt_tol, self.step_tol = kkt_tol, step_tol
        self.name = model.name
        if self.name == "svm":
            self.gamma = resolve_gamma(model.gamma, X)
            K = model.kernel_matrix(X, X, self.gamma)
            self.Q = (y[:, None] * y[None, :]) * K

    # ------------------------------------------------------------------ API
    def params(self, vec: np.ndarray, b: float = 0.0) -> Params:
        if self.name == "svm":
            return Params(dual_coef=np.asarray(vec, float).copy(), intercept=float(b), X_fit=self.X, y_fit=self.y,
                          extra={"gamma": self.gamma})
        return Params(coef=np.asarray(vec, float).copy(), intercept=float(b))

    def kkt(self, vec: np.ndarray, b: float, lam: float) -> float:
        """KKT violation of the partial optimum conditions at ``(vec, b)`` (v = v*(ell, lam))."""
        if self.name == "svm":
            C = self.model.C
            g = self.margins(vec, b)
            v = self.sp.v_star(C * np.maximum(g, 0.0), lam)
            return svm_natural_residual(vec, g, v, self.y, C)
        p = self.params(vec, b)
        v = self.sp.v_star(self.model.losses(p, self.X, self.y), lam)
        return self.model.kkt_violation(p, self.X, self.y, v)

    def margins(self, a: np.ndarray, b: float) -> np.ndarray:
        return 1.0 - self.Q @ a - self.y * b

    def solve(self, lam: float, vec: np.ndarray, b: float = 0.0) -> RefPoint:
        """ACS from ``(vec, b)`` at ``lam`` (stopped at ``max |dv| <= acs_tol``), then the polish.

        If the polish does not certify the point, ACS continues (tolerance / 100) and
        the polish is retried; :class:`ReferenceError_` if nothing is certified.
        """
        p = self.params(vec, b)
        model, sp, X, y = self.model, self.sp, self.X, self.y
        v = sp.v_star(model.losses(p, X, y), lam)
        tol, it_total = self.acs_tol, 0
        last = None
        for _ in range(4):
            for _ in range(self.acs_max_iter):
                v_fit = v
                p = model.fit_weighted(X, y, v, warm=p)
                it_total += 1
                v_new = sp.v_star(model.losses(p, X, y), lam)
                dv = float(np.abs(v_new - v).max(initial=0.0))
                v = v_new
                if dv <= tol:
                    break
            pt = self.polish(lam, p, v_fit)
            acs_vec = p.dual_coef if self.name == "svm" else p.coef
            moved = max(float(np.abs(pt.vec - acs_vec).max(initial=0.0)), abs(pt.b - p.intercept))
            # the polish must stay next to the ACS iterate (not slide to another partial optimum)
            near = moved <= 100 * tol * (1.0 + float(np.abs(acs_vec).max(initial=0.0)))
            if near and pt.kkt <= self.kkt_tol and pt.newton_step <= self.step_tol:
                pt.acs_iters = it_total
                return pt
            last = pt
            tol /= 100.0
        raise ReferenceError_(f"reference not certified at lam={lam}: {last and (last.kkt, last.newton_step)}")

    # --------------------------------------------------------------- polish
    def polish(self, lam: float, p: Params, v_fit: np.ndarray) -> RefPoint | None:
        """Newton polish of the ACS point ``p`` (the fit for the weights ``v_fit``)."""
        if self.name == "svm":
            return self._polish_svm(lam, p, v_fit)
        return self._polish_glm(lam, p)

    def _glm_residual(self, theta: np.ndarray, lam: float, A: np.ndarray, s: np.ndarray) -> np.ndarray:
        model, X, y = self.model, self.X, self.y
        if self.name == "lasso":
            w = np.zeros(X.shape[1])
            w[A] = theta
            r = y - X @ w
            v = self.sp.v_star(0.5 * r**2, lam)
            return (X[:, A].T @ (v * r) - model.penalty_level(len(y)) * s) / model.penalty_level(len(y))
        p = Params(coef=theta[:-1], intercept=theta[-1])
        v = self.sp.v_star(model.losses(p, X, y), lam)
        gw, gb = model.gradient(p, X, y, v)
        return np.append(gw, gb)

    def _newton(self, F, theta: np.ndarray, jac) -> tuple[np.ndarray, float, float]:
        """Newton with backtracking; returns (theta, |F|, size of the last full correction)."""
        r = F(theta)
        res = float(np.abs(r).max(initial=0.0))
        last_step = np.inf
        for _ in range(40):
            if theta.size == 0:
                return theta, res, 0.0
            J = jac(theta)
            step = np.linalg.lstsq(J, r, rcond=None)[0]
            last_step = float(np.abs(step).max()) / (1.0 + float(np.abs(theta).max()))
            if last_step <= 1e-15:
                break
            t = 1.0
            for _ in range(30):
                th_new = theta - t * step
                r_new = F(th_new)
                res_new = float(np.abs(r_new).max(initial=0.0))
                if res_new < res or res_new <= 1e-15:
                    break
                t *= 0.5
            else:
                break
            theta, r, res = th_new, r_new, res_new
            if t < 1.0:
                last_step = np.inf  # not converged quadratically yet
            elif last_step <= 1e-13:
                break
        return theta, res, last_step

    def _fd_jac(self, F, theta: np.ndarray) -> np.ndarray:
        cols = []
        for j in range(theta.size):
            e = np.zeros(theta.size)
            h = 1e-7 * max(1.0, abs(theta[j]))
            e[j] = h
            cols.append((F(theta + e) - F(theta - e)) / (2 * h))
        return np.column_stack(cols)

    def _polish_glm(self, lam: float, p: Params) -> RefPoint | None:
        model, X, y = self.model, self.X, self.y
        if self.name == "lasso":
            w = np.asarray(p.coef, float).copy()
            A = np.flatnonzero(w != 0)
            for _ in range(30):
                s = np.sign(w[A])
                F = lambda th, A=A, s=s: self._glm_residual(th, lam, A, s)  # noqa: E731
                theta, res, step = self._newton(F, w[A].copy(), lambda th, F=F: self._fd_jac(F, th))
                w = np.zeros(X.shape[1])
                w[A] = theta
                # re-assign: sign flips leave A, violated inactive coordinates join it
                r = y - X @ w
                v = self.sp.v_star(0.5 * r**2, lam)
                corr = X.T @ (v * r) / model.penalty_level(len(y))
                flipped = A[np.sign(w[A]) != s]
                inactive = np.setdiff1d(np.arange(X.shape[1]), A)
                enter = inactive[np.abs(corr[inactive]) > 1 + 1e-10]
                if flipped.size == 0 and enter.size == 0:
                    break
                w[flipped] = 0.0
                A = np.union1d(np.setdiff1d(A, flipped), enter)
                w[enter] = 1e-12 * np.sign(corr[enter])
            kkt = self.kkt(w, 0.0, lam)
            code = self.sp.partition(model.losses(Params(coef=w), X, y), lam)
            return RefPoint(w, 0.0, kkt, step, 0, np.concatenate([code, (w != 0).astype(np.int8)]))
        theta0 = np.append(p.coef, p.intercept)
        F = lambda th: self._glm_residual(th, lam, None, None)  # noqa: E731
        theta, res, step = self._newton(F, theta0, lambda th: self._fd_jac(F, th))
        kkt = self.kkt(theta[:-1], theta[-1], lam)
        code = self.sp.partition(model.losses(Params(coef=theta[:-1], intercept=theta[-1]), X, y), lam)
        return RefPoint(theta[:-1], float(theta[-1]), kkt, step, 0, code)

    def _polish_svm(self, lam: float, p: Params, v_fit: np.ndarray) -> RefPoint | None:
        C, y, Q, sp = self.model.C, self.y, self.Q, self.sp
        n = len(y)
        a = np.asarray(p.dual_coef, float).copy()
        b = float(p.intercept)
        g = self.margins(a, b)
        # initial sets from the box [0, C v_fit] the last ACS fit was solved in
        tol_a = 1e-6 * C
        N, Z, P = 0, 1, 2
        S = np.full(n, Z)
        S[(a <= tol_a) & (g < 0)] = N
        S[(g > 0) & (a >= C * v_fit - tol_a)] = P
        step = np.inf
        for _ in range(50):
            free = np.flatnonzero(S != N)
            a_fix = np.where(S == N, 0.0, a)

            def unpack(th, free=free, a_fix=a_fix):
                aa = a_fix.copy()
                aa[free] = th[:-1]
                return aa, th[-1]

            def F(th, free=free, unpack=unpack):
                aa, bb = unpack(th)
                gg = 1.0 - Q @ aa - y * bb
                out = np.empty(free.size + 1)
                zf = S[free] == Z
                out[:-1][zf] = gg[free][zf]
                pf = ~zf
                vv = sp.v_star(C * np.maximum(gg[free][pf], 0.0), lam)
                out[:-1][pf] = (aa[free][pf] - C * vv) / C
                out[-1] = float(aa @ y) / C
                return out

            def jac(th, free=free, unpack=unpack):
                aa, bb = unpack(th)
                gg = 1.0 - Q @ aa - y * bb
                m = free.size
                J = np.zeros((m + 1, m + 1))
                zf = S[free] == Z
                Qf = Q[np.ix_(free, free)]
                J[:m, :m][zf] = -Qf[zf]
                J[:m, m][zf] = -y[free][zf]
                pf = ~zf
                vl = _vstar_slope(sp, C * np.maximum(gg[free][pf], 0.0), lam)
                J[:m, :m][pf] = C * vl[:, None] * Qf[pf]
                J[:m, :m][np.flatnonzero(pf), np.flatnonzero(pf)] += 1.0 / C
                J[:m, m][pf] = C * vl * y[free][pf]
                J[m, :m] = y[free] / C
                return J

            theta, res, step = self._newton(F, np.append(a[free], b), jac)
            a, b = unpack(theta)
            g = self.margins(a, b)
            # re-assign indices whose set conditions fail
            eps = 1e-12
            moved = False
            bad = (S == N) & (g > eps)
            S[bad], moved = Z, moved or bad.any()
            lo = (S == Z) & (a < -eps * C)
            a[lo], S[lo], moved = 0.0, N, moved or lo.any()
            hi = (S == Z) & (a > C * (1 + eps))
            S[hi], moved = P, moved or hi.any()
            neg = (S == P) & (g < -eps)
            S[neg], moved = Z, moved or neg.any()
            if not moved:
                break
        kkt = self.kkt(a, b, lam)
        # the set structure: N / Z, and the E / M / D partition inside P
        code = np.where(S == P, 10 + sp.partition(C * np.maximum(g, 0.0), lam), S)
        return RefPoint(a, float(b), kkt, step, 0, code)
