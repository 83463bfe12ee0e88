"""CCCP baseline for the same robust SVM (section 5 of the outlier-path paper).

The loss of eq. (2) with ``s = 0`` or ``theta = 0`` splits into convex minus convex,
``ell(z) = [1 - z]_+ - (1 - theta) [s - z]_+``.  The concave-convex procedure
(Yuille & Rangarajan 2002; Collobert et al. 2006) linearises the concave part at
the current margins ``z^k``: with ``O_k = {i : z^k_i < s}`` the convex subproblem

    min_f ||f||^2 / 2 + C sum_i [1 - z_i]_+ + C (1 - theta) sum_{i in O_k} z_i

has the SVM dual with the shifted box ``-C (1 - theta) <= a_i <= C theta`` on
``O_k`` (``0 <= a_i <= C`` elsewhere) and ``sum_i a_i y_i = 0``.  It is solved by
an SMO with second-order working-set selection (Fan, Chen & Lin 2005) on the
precomputed ``Q = y y^T K``, warm-started from the previous solution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spl_bench.methods.outlier_path.path import Array, rsvm_objective


def project_feasible(alpha: Array, y: Array, lo: Array, hi: Array) -> Array:
    """Euclidean projection of ``alpha`` onto ``{lo <= a <= hi, y^T a = 0}`` (bisection)."""

    def g(lam: float) -> float:
        return float(y @ np.clip(alpha - lam * y, lo, hi))

    a, b = -1.0, 1.0
    while g(a) < 0:
        a *= 2
    while g(b) > 0:
        b *= 2
    for _ in range(200):
        mid = 0.5 * (a + b)
        if g(mid) > 0:
            a = mid
        else:
            b = mid
    out = np.clip(alpha - 0.5 * (a + b) * y, lo, hi)
    # remove the last rounding error on a free coordinate
    free = np.flatnonzero((out > lo + 1e-12) & (out < hi - 1e-12))
    if free.size:
        k = free[0]
        out[k] -= y[k] * float(y @ out)
    return out


def smo_box(
    Q: Array, y: Array, lo: Array, hi: Array, alpha0: Array | None = None,
    tol: float = 1e-8, max_iter: int = 50_000,
) -> tuple[Array, float, int]:
    """Solve ``min a^T Q a / 2 - sum a  s.t.  lo <= a <= hi, y^T a = 0`` by SMO.

    Returns ``(alpha, b, n_iter)``; ``b`` is the intercept of ``f = sum a_j y_j K_j + b``.
    ``n_iter == max_iter`` means the gap ``tol`` was not reached (slow for linear kernels
    with large C: a pure-numpy SMO pays Python overhead per pair update).
    """
    n = len(y)
    alpha = project_feasible(np.zeros(n) if alpha0 is None else alpha0, y, lo, hi)
    G = Q @ alpha - 1.0
    diag = np.diag(Q).copy()
    pos = y > 0
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        up = np.where(pos, alpha < hi - 1e-14, alpha > lo + 1e-14)
        low = np.where(pos, alpha > lo + 1e-14, alpha < hi - 1e-14)
        v = -y * G
        vu = np.where(up, v, -np.inf)
        i = int(np.argmax(vu))
        m_up = vu[i]
        vl = np.where(low, v, np.inf)
        if m_up - vl.min() < tol:
            break
        bij = m_up - v
        cand = low & (bij > 0)
        aij = diag[i] + diag - 2.0 * y[i] * y * Q[i]
        aij = np.where(aij > 1e-12, aij, 1e-12)
        score = np.where(cand, -(bij**2) / aij, np.inf)
        j = int(np.argmin(score))
        d = bij[j] / aij[j]
        d = min(d, hi[i] - alpha[i] if y[i] > 0 else alpha[i] - lo[i])
        d = min(d, alpha[j] - lo[j] if y[j] > 0 else hi[j] - alpha[j])
        alpha[i] += y[i] * d
        alpha[j] -= y[j] * d
        G += d * (y[i] * Q[:, i] - y[j] * Q[:, j])
    v = -y * G
    free = (alpha > lo + 1e-10) & (alpha < hi - 1e-10)
    if np.any(free):
        b = float(v[free].mean())
    else:
        up = np.where(pos, alpha < hi, alpha > lo)
        low = np.where(pos, alpha > lo, alpha < hi)
        b = 0.5 * (float(v[up].max(initial=-1e300)) + float(v[low].min(initial=1e300)))
    return alpha, b, it


@dataclass
class CCCPSolution:
    theta: float
    s: float
    alpha: Array
    b: float
    n_outer: int
    n_inner: int
    objective: float
    n_unconverged: int = 0


def cccp(
    Q: Array, y: Array, C: float, theta: float, s: float, alpha0: Array, b0: float,
    tol: float = 1e-8, max_outer: int = 100,
) -> CCCPSolution:
    """CCCP for eq. (1) at one ``(theta, s)``, started from ``(alpha0, b0)``.

    Stops when the linearisation set ``O_k`` no longer changes (then the iterate is a
    fixed point: each further convex subproblem is the same).
    """
    alpha, b = alpha0.copy(), float(b0)
    out_prev: Array | None = None
    n_inner = 0
    n_unconv = 0
    k = 0
    for k in range(1, max_outer + 1):  # noqa: B007
        m = Q @ alpha + y * b
        out = m < s
        if out_prev is not None and np.array_equal(out, out_prev):
            break
        lo = np.where(out, -C * (1.0 - theta), 0.0)
        hi = np.where(out, C * theta, C)
        alpha, b, it = smo_box(Q, y, lo, hi, alpha, tol=tol)
        n_inner += it
        n_unconv += it >= 50_000
        out_prev = out
    # report alpha in the representation of the path (a_i = C theta on outliers is the
    # same function: the box only fixes which bound is attained)
    obj = rsvm_objective(alpha, b, Q, y, C, theta, s)
    return CCCPSolution(theta, s, alpha, b, k, n_inner, obj, n_unconv)


def cccp_sequence(
    Q: Array, y: Array, C: float, variant: str, values: Array, alpha0: Array, b0: float,
    tol: float = 1e-8,
) -> list[CCCPSolution]:
    """CCCP-theta (``s = 0``) or CCCP-s (``theta = 0``) along ``values``, warm-started."""
    sols: list[CCCPSolution] = []
    a, b = alpha0, b0
    for v in values:
        theta, s = (float(v), 0.0) if variant == "theta" else (0.0, float(v))
        sol = cccp(Q, y, C, theta, s, a, b, tol=tol)
        sols.append(sol)
        a, b = sol.alpha, sol.b
    return sols
