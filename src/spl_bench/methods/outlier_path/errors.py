"""Errors of the outlier-path homotopy (Suzumura et al., ICML 2014) and of its CCCP baseline."""

from __future__ import annotations


class DegenerateStepError(RuntimeError):
    """The homotopy met a degenerate configuration it cannot resolve (ties, singular system)."""


class NoEnteringPointError(DegenerateStepError):
    """A b-move found no point that can become active (a one-class set of movable points)."""


class SingularSystemError(DegenerateStepError):
    """The active system (11) is singular: the active coefficients are not unique."""
