"""Predictor–corrector continuation of a path segment (``EngineOptions.method="PC"``).

Between two critical points the path is the solution of ``F(theta, lam) = 0`` with fixed
sets (GAGA eq. (5), Theorem 3); the ODE ``d theta / d lam = -J_theta^{-1} J_lam`` is one way
to follow it.  Here the equation itself is followed instead, as continuation methods do:

* **predictor**: the tangent step ``theta + h theta'(lam)`` (Euler on the ODE);
* **corrector**: Newton on ``F(., lam + h) = 0`` from the prediction, chord iterations with the
  factor of ``J_theta`` at the step start first (``PathEquation.newton``), so the end point is a
  point of the path to the Newton tolerance, not an ODE approximation of one;
* **one factorisation per step**, at the accepted end: it gives the tangent there (the next
  predictor and the end derivative of the step's interpolant) and the sign of ``det J``
  (folds);
* **dense output**: the cubic Hermite interpolant of both ends with their exact tangents (the
  interpolant ``AgePath.at`` uses between recorded points);
* **step control**: the interpolant is checked at the middle of the step against the middle
  point projected onto ``F = 0``; the step is kept when they agree to ``dense_tol`` relative,
  and the next step is scaled by ``(dense_tol / err)^(1/4)`` (the interpolant's error is
  ``O(h^4)``), within ``[1/2, 2]`` and ``max_step``.

* **one branch**: a step whose corrected end has the other sign of ``det J`` than its start is
  retaken shorter, as a step the corrector or the interpolant check fails: near a fold the
  prediction overshoots and Newton can converge to the other branch of the fold, where ``F = 0``
  holds too.

An explicit Runge–Kutta step costs six factorisations (one per stage); this one costs one,
plus residual evaluations.  Where the corrector fails even on steps of ``1e-12 max(1, |lam|)``
the branch ends there (a fold: it turns back in ``lam``, or an index set's boundary past which
its formulas are not defined), and so it does where its steps stall (``STALL_STEPS`` accepted
steps in a row shorter than ``STALL_STEP max(1, |lam|)``: the corrector's residual floor has
reached its acceptance threshold): the step fails with ``branch_end`` set (``stalled`` too for a
stall), at the last accepted point, and the stepper
(:meth:`~spl_bench.gaga.core.stepping.Stepper.branch_end`) makes it a critical point.  The fold
is so located to that step floor on points of the branch itself (the step ends are its points),
never by bisecting ``det J`` on points projected from an interpolant, which near a fold can reach
the other branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import DenseOutput, OdeSolver

from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.options import EngineOptions

Array = NDArray[np.float64]

#: the shortest step tried, relative to max(1, |lam|): where the corrector fails on it the branch ends
STEP_FLOOR = 1e-12
#: bounds of the factor of the next step size
GROW, SHRINK = 2.0, 0.5
#: a stall: ``STALL_STEPS`` accepted steps in a row, each shorter than ``STALL_STEP * max(1, |lam|)``
#: (together less than 1e-5 of the age), end the branch as the corrector's failure does.  The
#: corrector's residual then sits at the acceptance threshold (its rounding floor; measured: a
#: linear-kernel SVM with d + 1 margin samples, cond(J) 1.1e7, residuals 8.5-9.6e-10 against 1e-9),
#: so a step is accepted or not by rounding and the step size never grows again (docs/gaga.md
#: "Stalled segments")
STALL_STEP, STALL_STEPS = 1e-8, 1000


def short_steps(n_short: int, h: float, t: float) -> int:
    """The count of short accepted steps in a row after one more, of length ``h`` from ``t``: one more
    if ``h < STALL_STEP max(1, |t|)``, else 0 (the stall rule of every route: the predictor-corrector's
    steps here, the compiled follower's in :meth:`~spl_bench.gaga.core.stepping.Stepper.compiled_segment`)."""
    return n_short + 1 if h < STALL_STEP * max(1.0, abs(t)) else 0


class HermiteOutput(DenseOutput):
    """Cubic Hermite interpolant of ``(t0, y0, f0)`` and ``(t1, y1, f1)`` (values, derivatives)."""

    def __init__(self, t0: float, t1: float, y0: Array, y1: Array, f0: Array, f1: Array) -> None:
        super().__init__(t0, t1)
        self.h = t1 - t0
        self.y0, self.y1, self.f0, self.f1 = y0, y1, f0, f1

    def _call_impl(self, t: Any) -> Array:
        s = (np.asarray(t, dtype=float) - self.t_old) / self.h
        h00 = (1 + 2 * s) * (1 - s) ** 2
        h10 = s * (1 - s) ** 2
        h01 = s**2 * (3 - 2 * s)
        h11 = s**2 * (s - 1)
        if s.ndim == 0:
            return h00 * self.y0 + h10 * self.h * self.f0 + h01 * self.y1 + h11 * self.h * self.f1
        return (np.outer(self.y0, h00) + np.outer(self.h * self.f0, h10) + np.outer(self.y1, h01)
                + np.outer(self.h * self.f1, h11))


def hermite_mid(y0: Array, y1: Array, f0: Array, f1: Array, h: float) -> Array:
    """The cubic Hermite interpolant at the middle of the step."""
    return 0.5 * (y0 + y1) + 0.125 * h * (f0 - f1)


class PredictorCorrector(OdeSolver):
    """scipy's :class:`~scipy.integrate.OdeSolver` interface over the tracker's path equation.

    ``equation`` (:class:`~spl_bench.gaga.core.equation.PathEquation`) gives ``rhs(lam, ext)`` (the
    tangent, factorising ``J_theta`` there and keeping the factor as ``last_factor``) and
    ``newton(theta, lam, chord=)`` (the projection onto ``F = 0``: point and relative residual);
    ``opts`` the tolerances (``newton_tol``, ``dense_tol``).  The state ``ext`` is ``theta`` with a
    trailing 0, as the ODE route's.
    """

    def __init__(self, equation: PathEquation, opts: EngineOptions, t0: float, y0: Array, t_bound: float,
                 max_step: float, first_step: float | None = None) -> None:
        super().__init__(equation.rhs, t0, y0, t_bound, vectorized=False)
        self.equation = equation
        self.o = opts
        self.max_step = float(max_step)
        self.f = self.fun(self.t, self.y)  # the tangent at the start (memoised by the path equation)
        self.chord = equation.last_factor
        span = abs(t_bound - t0)
        self.h_next = min(float(first_step) if first_step else 0.01 * span, self.max_step, span)
        self.sign = equation.last_sign  # sign of det J at the step start (0: not known)
        self.y_old: Array | None = None
        self.f_old: Array | None = None
        self.n_rejected = 0
        #: the corrector failed on the shortest step from ``t``: the branch ends there
        self.branch_end = False
        #: accepted steps in a row shorter than ``STALL_STEP * max(1, |t|)``, and whether they reached
        #: ``STALL_STEPS`` (the branch then ends at ``t`` with ``branch_end`` set too)
        self.n_short = 0
        self.stalled = False

    def _project(self, y: Array, t: float) -> tuple[Array, float]:
        theta, res = self.equation.newton(y[:-1].copy(), t, chord=self.chord)
        return np.append(theta, 0.0), res

    def _step_impl(self) -> tuple[bool, str | None]:
        o = self.o
        t, y, f = self.t, self.y, self.f
        h = min(self.h_next, self.max_step)
        ok_res = 1e3 * o.newton_tol
        floor = STEP_FLOOR * max(1.0, abs(t))
        while True:
            t1 = t + h
            if t1 >= self.t_bound or self.t_bound - t1 < 1e-12 * max(1.0, abs(t1)):
                t1, h = self.t_bound, self.t_bound - t
            y1, res = self._project(y + h * f, t1)
            if res <= ok_res:
                f1 = self.fun(t1, y1)  # one factorisation: tangent and sign of det J at the end
                sign1 = self.equation.last_sign
                if self.sign != 0 and sign1 != 0 and sign1 != self.sign:
                    # the end is on the other branch of a fold (or past a sign change of det J):
                    # shorter, until the step stays on this branch or the branch ends
                    h *= SHRINK
                else:
                    ym = hermite_mid(y, y1, f, f1, h)
                    pm, res_m = self._project(ym, t + 0.5 * h)
                    scale = 1.0 + float(np.abs(pm).max(initial=0.0))
                    err = float(np.abs(pm - ym).max(initial=0.0)) / scale
                    if res_m <= ok_res and err <= o.dense_tol:
                        if self._stalls(h, t):
                            break
                        grow = GROW if err == 0.0 else min(GROW, max(SHRINK, 0.9 * (o.dense_tol / err) ** 0.25))
                        self._accept(t1, y1, f1, sign1, min(h * grow, self.max_step))
                        return True, None
                    if res_m <= ok_res and err > 0.0:  # the interpolant is off: shorter by its O(h^4)
                        h *= max(0.2, min(SHRINK, 0.9 * (o.dense_tol / err) ** 0.25))
                    else:
                        h *= SHRINK
            else:
                h *= SHRINK
            self.n_rejected += 1
            if h < floor:
                break
        # the corrector fails even on the shortest step, or its steps stall: the branch ends at t (the
        # stepper decides what kind of critical point that is)
        self.branch_end = True
        if self.stalled:
            return False, f"the branch ends ({STALL_STEPS} steps in a row shorter than {STALL_STEP:g} of the age)"
        return False, "the branch ends (the corrector fails on the shortest step)"

    def _stalls(self, h: float, t: float) -> bool:
        """Count an accepted step of length ``h`` from ``t``; True when it makes ``STALL_STEPS`` short
        steps in a row (the step is then not taken: the branch ends at ``t``)."""
        self.n_short = short_steps(self.n_short, h, t)
        self.stalled = self.n_short >= STALL_STEPS
        return self.stalled

    def _accept(self, t1: float, y1: Array, f1: Array, sign1: float, h_next: float) -> None:
        self.t_old, self.y_old, self.f_old = self.t, self.y, self.f
        self.t, self.y, self.f = t1, y1, f1
        self.chord = self.equation.last_factor
        self.sign = sign1
        self.h_next = h_next

    def _dense_output_impl(self) -> HermiteOutput:
        assert self.y_old is not None and self.f_old is not None
        return HermiteOutput(self.t_old, self.t, self.y_old, self.y, self.f_old, self.f)
