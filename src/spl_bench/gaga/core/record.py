"""The recorded points of the path: the system's current point with its derivative.

:class:`Recorder` is the tracker's collaborator that adds a point to the state's recorded points
(:meth:`TrackState.append <spl_bench.gaga.core.state.TrackState.append>`), its derivative from the
path equation's tangent (:meth:`PathEquation.rhs <spl_bench.gaga.core.equation.PathEquation.rhs>`)
unless the caller knows it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.equation import PathEquation
from spl_bench.gaga.core.state import TrackState

Array = NDArray[np.float64]


class Recorder:
    """Records the system's current point into the state (calls ``equation.rhs``)."""

    def __init__(self, state: TrackState, equation: PathEquation) -> None:
        self.state = state
        self.equation = equation

    def record(self, lam: float, kind: str = "step",
               deriv: tuple[Array, float] | None = None, values: tuple[Array, float] | None = None) -> None:
        """Record the system's current point at ``lam`` as a point of ``kind`` (``step``, ``start``,
        ``critical``, ``before``, ``after``): its full vector (or ``values``) and its derivative (from
        :meth:`~spl_bench.gaga.core.equation.PathEquation.rhs`, or ``deriv``)."""
        sysm = self.state.sys
        vec, b = sysm.full_vector() if values is None else values
        if deriv is None:
            theta = sysm.theta()
            d = self.equation.rhs(lam, np.append(theta, 0.0))[:-1]
            dvec, db = sysm.full_derivative(d)
        else:
            dvec, db = deriv
        self.state.append(lam, vec, b, dvec, db, kind)
