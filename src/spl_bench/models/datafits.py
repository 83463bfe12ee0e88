"""Datafits: per-sample losses of a linear predictor ``z = x^T w (+ b)``.

A datafit gives, vectorised over samples (and over a leading axis of several
points, ``z`` of shape ``(m, n)`` with ``y`` of shape ``(n,)``), the loss
``ell(z, y)`` *with its scaling* (logistic's and the hinge's ``C``) and its first
and second derivatives with respect to ``z``:

==============  =======================================  =============================
datafit          ``ell(z, y)``                             ``ell'``, ``ell''``
==============  =======================================  =============================
Quadratic        ``(y - z)^2 / 2``                         ``-(y - z)``, ``1``
Logistic         ``C log(1 + exp(-y z))``                  ``-C y s``, ``C s (1 - s)``,
                                                           ``s = expit(-y z)``
Huber            ``r^2/2`` if ``|r| <= delta``, else       ``-r`` / ``-delta sign(r)``,
                 ``delta |r| - delta^2/2`` (``r = y - z``)  ``1`` / ``0``
Hinge            ``C max(0, 1 - y z)``                     (value only)
==============  =======================================  =============================

A *piecewise* datafit (Huber) is smooth on each of its pieces.  It numbers them
(:meth:`Datafit.pieces`), evaluates the formulas of a given piece beyond its
boundary (``piece=`` of :meth:`Datafit.derivatives`, so that a path engine can
follow one smooth system up to the boundary and a little past it), and gives
the signed distance of each sample to the boundary of its piece
(:meth:`Datafit.piece_distance`, ``>= 0`` inside): a sample changing piece is
then an event like a loss crossing an SP threshold.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

from spl_bench.errors import check_positive
from spl_bench.models.base import Described

Array = NDArray[np.float64]
Pieces = NDArray[np.int8]


class Datafit(Described):
    """A per-sample loss ``ell(z, y)`` of the linear predictor ``z`` (see the module docstring)."""

    name: str = "base"
    #: the loss has continuous first and second derivatives in ``z`` (on each piece if piecewise)
    smooth: bool = True
    #: the loss is smooth only piecewise: :meth:`pieces` and :meth:`piece_distance` are meaningful
    piecewise: bool = False
    #: names of the piece codes (for event records)
    piece_names: dict[int, str] = {0: "all"}

    #: multiplicative scaling of the loss (logistic's and the hinge's ``C``; 1 otherwise)
    scale: float = 1.0

    def derivatives(self, z: Array, y: Array, piece: Pieces | None = None) -> tuple[Array, Array, Array]:
        """``(ell, d ell/dz, d^2 ell/dz^2)`` per sample; ``piece``: the formulas of these pieces."""
        raise NotImplementedError(f"the {self.name} datafit is not differentiable")

    def value(self, z: Array, y: Array) -> Array:
        """Per-sample loss ``ell(z, y)``."""
        return self.derivatives(z, y)[0]

    def d1(self, z: Array, y: Array) -> Array:
        """``d ell / dz`` per sample."""
        return self.derivatives(z, y)[1]

    def d2(self, z: Array, y: Array) -> Array:
        """``d^2 ell / dz^2`` per sample."""
        return self.derivatives(z, y)[2]

    # ---------------------------------------------------------------- pieces
    def pieces(self, z: Array, y: Array) -> Pieces:
        """Piece code of each sample (all 0 for a datafit smooth everywhere)."""
        return np.zeros(np.shape(z), dtype=np.int8)

    def piece_distance(self, z: Array, y: Array, piece: Pieces) -> Array:
        """Signed distance of each sample to the boundary of its piece (``>= 0`` inside)."""
        return np.full(np.shape(z), np.inf)

    def next_piece(self, z: float, y: float, piece: int) -> int:
        """The piece a sample enters when it leaves ``piece`` at ``z`` (it is at the boundary)."""
        return piece

    def boundary_scale(self) -> float:
        """Typical size of :meth:`piece_distance` (for relative tolerances)."""
        return 1.0


@njit(cache=True)
def quadratic_loss_nb(r: float) -> float:
    """``ell = r^2 / 2`` of one residual ``r = z - y`` (:class:`Quadratic`'s loss, for compiled loops)."""
    return 0.5 * r * r


class Quadratic(Datafit):
    """``ell = (y - z)^2 / 2`` (the lasso's loss)."""

    name = "quadratic"
    #: the loss of one residual, compiled (:func:`quadratic_loss_nb`; the lasso's compiled follower)
    compiled_loss = staticmethod(quadratic_loss_nb)

    def derivatives(self, z: Array, y: Array, piece: Pieces | None = None) -> tuple[Array, Array, Array]:
        r = y - z
        return 0.5 * r * r, -r, np.ones_like(r)

    def value(self, z: Array, y: Array) -> Array:
        return 0.5 * (y - z) ** 2


class Logistic(Datafit):
    """``ell = C log(1 + exp(-y z))`` for labels ``y`` in {-1, +1} (numerically stable forms)."""

    name = "logistic"

    def __init__(self, C: float = 1.0) -> None:
        self.scale = check_positive("logistic C", C)

    def get_params(self) -> dict[str, float]:
        return {"C": self.scale}

    @staticmethod
    def _softplus(m: Array) -> tuple[Array, Array]:
        """``(log(1 + exp(-m)), e)`` with ``e = exp(-|m|)``, which never overflows:
        ``log(1 + exp(-m)) = max(-m, 0) + log1p(e)`` (one exp and one log1p per sample)."""
        e = np.exp(-np.abs(m))
        return np.maximum(-m, 0.0) + np.log1p(e), e

    def derivatives(self, z: Array, y: Array, piece: Pieces | None = None) -> tuple[Array, Array, Array]:
        # sigma(-m) = e / (1 + e) for m >= 0 and 1 / (1 + e) otherwise; sigma (1 - sigma) = e / (1 + e)^2
        m = y * z
        C = self.scale
        ell, e = self._softplus(m)
        inv = 1.0 / (1.0 + e)
        sn = np.where(m >= 0.0, e * inv, inv)
        return C * ell, -C * y * sn, C * e * inv * inv

    def value(self, z: Array, y: Array) -> Array:
        return self.scale * self._softplus(y * z)[0]


class Hinge(Datafit):
    """``ell = C max(0, 1 - y z)`` (the SVM's loss; value only, it has a kink at ``y z = 1``)."""

    name = "hinge"
    smooth = False

    def __init__(self, C: float = 1.0) -> None:
        self.scale = check_positive("hinge C", C)

    def get_params(self) -> dict[str, float]:
        return {"C": self.scale}

    def value(self, z: Array, y: Array) -> Array:
        return self.of_margin(1.0 - y * z)

    def of_margin(self, g: Array) -> Array:
        """``C max(0, g)`` of the margins ``g = 1 - y z`` (the form the SVM dual keeps them in)."""
        return self.scale * np.maximum(0.0, g)


#: Huber piece codes: quadratic (``|r| <= delta``), linear with ``r > delta``, with ``r < -delta``
HUBER_QUAD, HUBER_UP, HUBER_DOWN = 0, 1, -1


class Huber(Datafit):
    """``ell = r^2/2`` for ``|r| <= delta``, ``delta |r| - delta^2/2`` beyond, ``r = y - z``.

    Pieces: :data:`HUBER_QUAD` (0), :data:`HUBER_UP` (+1, ``r > delta``) and
    :data:`HUBER_DOWN` (-1, ``r < -delta``); the code of a linear piece is the sign of ``r``.
    The loss is continuously differentiable; ``ell''`` jumps from 1 to 0 at ``|r| = delta``.
    """

    name = "huber"
    smooth = True
    piecewise = True
    piece_names = {HUBER_QUAD: "Q", HUBER_UP: "L+", HUBER_DOWN: "L-"}

    def __init__(self, delta: float = 1.0) -> None:
        self.delta = check_positive("huber delta", delta)

    def get_params(self) -> dict[str, float]:
        return {"delta": self.delta}

    def pieces(self, z: Array, y: Array) -> Pieces:
        r = np.asarray(y - z, dtype=float)
        out = np.zeros(r.shape, dtype=np.int8)
        out[r > self.delta] = HUBER_UP
        out[r < -self.delta] = HUBER_DOWN
        return out

    def derivatives(self, z: Array, y: Array, piece: Pieces | None = None) -> tuple[Array, Array, Array]:
        r = y - z
        if piece is None:
            piece = self.pieces(z, y)
        quad = piece == HUBER_QUAD
        s = piece.astype(float)  # sign of r on the linear pieces
        dl = self.delta
        ell = np.where(quad, 0.5 * r * r, dl * s * r - 0.5 * dl * dl)
        d1 = np.where(quad, -r, -dl * s)
        d2 = np.broadcast_to(quad, np.shape(r)).astype(float)
        return ell, d1, d2

    def piece_distance(self, z: Array, y: Array, piece: Pieces) -> Array:
        r = y - z
        return np.where(piece == HUBER_QUAD, self.delta - np.abs(r), piece * r - self.delta)

    def next_piece(self, z: float, y: float, piece: int) -> int:
        if piece != HUBER_QUAD:
            return HUBER_QUAD
        return HUBER_UP if y - z > 0 else HUBER_DOWN

    def boundary_scale(self) -> float:
        return self.delta

