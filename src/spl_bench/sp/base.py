"""Interface of a self-paced (SP) regularizer.

An SP-regularizer ``f(v, lam)`` defines, for a per-sample loss ``ell >= 0`` and
an age ``lam > 0``, the optimal weight (GAGA paper, Definition 2)::

    v*(ell, lam) = argmin_{v in [0, 1]}  v * ell + f(v, lam)

and partitions the samples into three sets (GAGA paper, section 3.2, Fig. 3):

* ``E`` (easy):  ``ell <= lo(lam)``, ``v* = 1``;
* ``M`` (mixed): ``lo(lam) < ell < hi(lam)``, ``0 < v* < 1``;
* ``D`` (hard):  ``ell >= hi(lam)``, ``v* = 0``.

Subclasses implement the vectorised formulas.  Everything here is numpy and
broadcasts over ``ell``; ``lam`` is a scalar.

A regularizer may also give its closed forms as compiled scalar kernels
(:class:`CompiledSP`, numba functions of the signatures :data:`MIXED_KERNEL` and
:data:`THRESHOLDS_KERNEL`): a compiled path follower (the lasso's,
:mod:`spl_bench.gaga.glm.segment_nb`) calls them and holds no formula of its own.
A regularizer without them is followed on the engine's reference route.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numba import njit, types
from numpy.typing import ArrayLike, NDArray

from spl_bench.errors import check_positive

#: Partition codes returned by :meth:`SPRegularizer.partition`.
EASY, MIXED, HARD = 0, 1, 2
SET_NAMES = {EASY: "E", MIXED: "M", HARD: "D"}

#: numba signature of a compiled ``v*`` on M: ``(ell, lam, p) -> (v*, dv*/dell, dv*/dlam)``, not
#: clipped to [0, 1]; ``p`` is the regularizer's one hyper-parameter (:attr:`CompiledSP.param`)
MIXED_KERNEL = types.UniTuple(types.float64, 3)(types.float64, types.float64, types.float64)
#: numba signature of compiled thresholds: ``(lam, p) -> (lo, hi)`` (:meth:`SPRegularizer.thresholds`)
THRESHOLDS_KERNEL = types.UniTuple(types.float64, 2)(types.float64, types.float64)


@dataclass(frozen=True)
class CompiledSP:
    """A regularizer's closed forms as compiled scalar kernels.

    ``mixed`` is ``njit(MIXED_KERNEL)``: the formulas of :meth:`SPRegularizer.v_mixed` and
    :meth:`SPRegularizer.dv_mixed` for one loss (clipped as :meth:`SPRegularizer.mixed_loss`
    says); ``thresholds`` is ``njit(THRESHOLDS_KERNEL)``.  ``param`` names the attribute passed
    to both as ``p`` ("" when there is none: ``p = 0``).

    ``exact``: the kernel's ``v*`` is the numpy formula :meth:`SPRegularizer._v_mixed` operation
    for operation, with only correctly rounded operations (``+ - * /`` and ``sqrt``), so the two give
    the same bits; then :meth:`SPRegularizer.v_star_scaled` takes the compiled route.  Not for
    closed forms with ``log`` or ``**``, whose compiled (libm) and numpy (SIMD) versions may
    differ in the last bit.
    """

    mixed: Any
    thresholds: Any
    param: str = ""
    exact: bool = False


class SPRegularizer(ABC):
    """Base class of SP-regularizers (GAGA paper, Definition 2)."""

    name: str = "base"
    #: ``_v_mixed`` needs ``ell > 0`` (the path engine clips at 1e-100); ``False`` where its closed
    #: form extends smoothly below 0, so that a path can be continued just past ``lo = 0``
    #: (an SVM margin ``g`` crossing 0 out of M) and Newton converges quadratically there
    clip_mixed_loss: bool = True
    #: ``v*`` is affine in ``ell`` on each piece (E, M, D) for a fixed age: then ACS on a model
    #: whose losses are affine in its parameters (the SVM's hinge) is an affine map while the
    #: sets hold, which the path engine uses to skip creeping iterations (``EngineOptions.acs_skip``)
    v_affine_in_loss: bool = False
    #: the closed forms as compiled kernels, or ``None`` (no compiled route)
    compiled: ClassVar[CompiledSP | None] = None

    # ------------------------------------------------------------------ params
    def get_params(self) -> dict[str, float]:
        """Hyper-parameters other than the age, as a plain dict."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def check_lam(self, lam: float) -> float:
        """Validate an age value; raise a clear error if it is out of range."""
        return check_positive("the age lambda", lam)

    # -------------------------------------------------------------- formulas
    @abstractmethod
    def penalty(self, v: ArrayLike, lam: float) -> NDArray[np.float64]:
        """The regularizer value ``f(v, lam)`` for each weight."""

    @abstractmethod
    def thresholds(self, lam: float) -> tuple[float, float]:
        """``(lo, hi)``: ``v* = 1`` for ``ell <= lo``, ``v* = 0`` for ``ell >= hi``."""

    @abstractmethod
    def _v_mixed(self, ell: NDArray[np.float64], lam: float) -> NDArray[np.float64]:
        """``v*`` for losses strictly inside ``(lo, hi)``.

        Must broadcast: the path engine passes a column of ages ``lam[:, None]``
        with a matrix of losses (one row per age).
        """

    @abstractmethod
    def _dv_mixed(
        self, ell: NDArray[np.float64], lam: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(dv*/dell, dv*/dlam)`` for losses strictly inside ``(lo, hi)``."""

    def compiled_kernels(self) -> tuple[tuple[Any, Any], float] | None:
        """``((mixed, thresholds), p)`` of :attr:`compiled` for a compiled path follower, or ``None``.

        ``None`` also when a subclass overrides a closed form (``thresholds``, ``_v_mixed`` or
        ``_dv_mixed``) without giving kernels of its own: the inherited kernels would compute
        another regularizer.
        """
        mro = type(self).__mro__
        owner = next((c for c in mro if "compiled" in vars(c)), None)
        if owner is None or self.compiled is None:
            return None
        for name in ("thresholds", "_v_mixed", "_dv_mixed"):
            defined_in = next(c for c in mro if name in vars(c))
            if not issubclass(owner, defined_in):
                return None
        c = self.compiled
        return (c.mixed, c.thresholds), float(getattr(self, c.param)) if c.param else 0.0

    # ---------------------------------------------- the smooth piece M, public
    def mixed_loss(self, ell: NDArray[np.float64]) -> NDArray[np.float64]:
        """Losses as :meth:`_v_mixed` takes them: clipped at 1e-100 unless :attr:`clip_mixed_loss`
        is ``False`` (a closed form smooth across 0)."""
        return np.maximum(ell, 1e-100) if self.clip_mixed_loss else ell

    def v_mixed(self, ell: NDArray[np.float64], lam: float | NDArray[np.float64]) -> NDArray[np.float64]:
        """The closed form of ``v*`` on the piece ``M``, continued beyond it (not clipped to [0, 1]).

        For a path engine that tracks the sets: the weight stays smooth up to (and slightly
        beyond) the boundary of ``M``.  Broadcasts: ``ell`` of shape ``(m, n)`` with ``lam`` a
        column ``(m, 1)`` of ages.  The losses are clipped as :meth:`mixed_loss` says.
        """
        return self._v_mixed(self.mixed_loss(ell), lam)

    def dv_mixed(
        self, ell: NDArray[np.float64], lam: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(dv/dell, dv/dlam)`` of :meth:`v_mixed` (one age)."""
        return self._dv_mixed(self.mixed_loss(ell), lam)

    # ------------------------------------------------------ derived, generic
    def partition(self, ell: ArrayLike, lam: float) -> NDArray[np.int8]:
        """Set code (:data:`EASY`, :data:`MIXED`, :data:`HARD`) of each loss."""
        ell = np.asarray(ell, dtype=float)
        lo, hi = self.thresholds(lam)
        out = np.full(ell.shape, MIXED, dtype=np.int8)
        out[ell <= lo] = EASY
        out[ell >= hi] = HARD
        return out

    def v_star(self, ell: ArrayLike, lam: float) -> NDArray[np.float64]:
        """Closed-form minimiser ``v*(ell, lam)`` of ``v ell + f(v, lam)`` on [0, 1]."""
        ell = np.asarray(ell, dtype=float)
        if np.any(np.isnan(ell)):
            raise FloatingPointError("NaN loss passed to an SP-regularizer")
        lo, hi = self.thresholds(lam)
        # the mixed formula on every entry, kept only on M (outside M it may overflow or be
        # undefined; nothing of it is used there): on MOSPL's (population x n) loss arrays this
        # is half the time of gathering and scattering the entries of M
        with np.errstate(all="ignore"):
            mixed = np.clip(self._v_mixed(ell, lam), 0.0, 1.0)
        return np.where(ell <= lo, 1.0, np.where(ell >= hi, 0.0, mixed))

    def v_star_scaled(self, L: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        """``v*(z_p ell_pi, 1)`` for each row ``p`` of losses ``L`` (``(p, n)``) and scale ``z_p >= 0``.

        MOSPL's induced weights (``spl_bench.methods.mospl``): ``v*(ell, lam)`` of the scaled
        losses ``ell / lam`` at age 1 (``z = 1 / lam``).  Equal to the bit to
        ``v_star(z[:, None] * L, 1.0)``, which it is on every regularizer whose kernels are not
        :attr:`CompiledSP.exact`; on the others one compiled pass over ``L`` instead of about ten
        numpy passes (a third of a MOSPL run on ailerons).
        """
        L = np.ascontiguousarray(L, dtype=float)
        z = np.ascontiguousarray(z, dtype=float)
        kernels = self.compiled_kernels()
        if kernels is None or not type(self).compiled.exact or L.ndim != 2 or z.shape != L.shape[:1]:
            return self.v_star(z[:, None] * L, 1.0)
        lo, hi = self.thresholds(1.0)
        # the kernel clips its loss at 1e-100 where mixed_loss says; v_star does not: the two
        # agree while M lies above 1e-100
        if self.clip_mixed_loss and lo < 1e-100:
            return self.v_star(z[:, None] * L, 1.0)
        (mixed, _), p = kernels
        V, finite = _scaled_rows(mixed)(L, z, float(lo), float(hi), p)
        if not finite:
            raise FloatingPointError("NaN loss passed to an SP-regularizer")
        return V

    def dv_star(
        self, ell: ArrayLike, lam: float
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Partial derivatives ``(dv*/dell, dv*/dlam)``; zero outside ``M``."""
        ell = np.asarray(ell, dtype=float)
        d_ell = np.zeros(ell.shape)
        d_lam = np.zeros(ell.shape)
        mid = self.partition(ell, lam) == MIXED
        if np.any(mid):
            d_ell[mid], d_lam[mid] = self._dv_mixed(ell[mid], lam)
        return d_ell, d_lam

    def sp_objective(self, v: ArrayLike, ell: ArrayLike, lam: float) -> NDArray[np.float64]:
        """Per-sample ``v ell + f(v, lam)`` (the quantity ``v*`` minimises)."""
        v = np.asarray(v, dtype=float)
        return v * np.asarray(ell, dtype=float) + self.penalty(v, lam)


@functools.cache
def _scaled_rows(mixed: Any) -> Any:
    """The compiled pass of :meth:`SPRegularizer.v_star_scaled` for one regularizer's kernel.

    One function per kernel (not the kernel as an argument), so that the kernel is inlined; it is
    compiled once per process (a closure is not cached on disk).
    """

    # the kernel's own source compiled again with numpy's error model: no ZeroDivisionError
    # branch, so the derivatives it also returns are dropped and the loop vectorises
    mixed = njit(MIXED_KERNEL, error_model="numpy")(mixed.py_func)

    @njit(_SCALED_SIG, error_model="numpy")
    def rows(L, z, lo, hi, p):  # pragma: no cover - compiled
        # branch-free (selects), so that the loop vectorises: the closed form is evaluated on every
        # entry and kept on M only, as v_star does; a NaN loss falls through every test to V
        n_rows, n = L.shape
        V = np.empty((n_rows, n))
        n_nan = 0
        for i in range(n_rows):
            zi, Li, Vi = z[i], L[i], V[i]
            for j in range(n):
                ell = zi * Li[j]
                m = mixed(ell, 1.0, p)[0]
                m = 0.0 if m < 0.0 else m  # np.clip(m, 0, 1) on M, where m is finite
                m = 1.0 if m > 1.0 else m
                Vi[j] = 1.0 if ell <= lo else (0.0 if ell >= hi else m)  # E, D, M
                n_nan += ell != ell
        return V, n_nan == 0

    return rows


_SCALED_SIG = types.Tuple((types.float64[:, ::1], types.boolean))(
    types.float64[:, ::1], types.float64[::1], types.float64, types.float64, types.float64
)
