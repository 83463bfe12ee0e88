"""The :class:`AgePath` result: recorded points, events, dense output, save/load."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class AgePath:
    """An exact age-path ``lam -> (w(lam), b(lam))`` or ``(a(lam), b(lam))``.

    Attributes
    ----------
    lambdas : (k,) array
        Ages of the recorded points, non-decreasing.  They include every solver
        step and every critical point: a turning point appears twice at the same
        age (the end of one segment and the start of the next, same values); a
        jump point appears at ``lam`` (old branch) and at ``lam + delta`` (the new
        branch after the warm start).
    coef : (k, d) array or None
        Lasso / logistic coefficients.
    dual_coef : (k, n) array or None
        SVM dual coefficients ``a_j`` of ``f = sum_j a_j y_j K(x_j, .) + b``.
    intercept : (k,) array
        ``b`` (always 0 for lasso).
    d_vec, d_intercept : arrays
        Exact derivatives ``d/dlam`` at each recorded point (Theorem 3), used by
        :meth:`at` for cubic Hermite dense output.
    segment : (k,) int array
        Smooth piece of each point; the path is smooth inside a segment.
    point_kind : (k,) str array
        ``start``, ``step``, ``critical`` (end of a segment at a critical point),
        ``after`` (start of the next one), ``before`` (last point before a jump).
    events : list of dict
        One per critical point: ``lam``, ``kind`` (``turning`` | ``jump``) and
        ``moves``, a list of ``[index, from_set, to_set]``.  SVM paths add the net set
        change the event made, warm starts included (``set_change``, from ``lam_sets``
        on), the moved samples that stay on the margin (``degenerate_face``) and
        ``rank_deficiency`` (:meth:`~spl_bench.gaga.svm.svm_system.SVMSystem.set_change_note`).
    n_restarts : int
        Number of ACS warm starts (jump points).
    meta : dict
        Model, SP-regularizer, parameters, timings.
    """

    lambdas: Array
    coef: Array | None
    dual_coef: Array | None
    intercept: Array
    d_vec: Array
    d_intercept: Array
    segment: NDArray[np.int_]
    point_kind: NDArray[np.str_]
    events: list[dict[str, Any]] = field(default_factory=list)
    n_restarts: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------- summary
    @property
    def values(self) -> Array:
        """``coef`` or ``dual_coef``, whichever this path has."""
        return self.coef if self.coef is not None else self.dual_coef  # type: ignore[return-value]

    def critical_counts(self) -> dict[str, int]:
        """Number of critical points of each kind (``turning``, ``jump``)."""
        c = Counter(e["kind"] for e in self.events)
        return {"turning": c.get("turning", 0), "jump": c.get("jump", 0)}

    def knots(self) -> Array:
        """Distinct recorded ages."""
        return np.unique(self.lambdas)

    def __len__(self) -> int:
        return len(self.lambdas)

    def __repr__(self) -> str:
        cc = self.critical_counts()
        return (f"AgePath({self.meta.get('model')}, sp={self.meta.get('sp')}, points={len(self)}, "
                f"turning={cc['turning']}, jump={cc['jump']}, restarts={self.n_restarts})")

    # -------------------------------------------------------- dense output
    def at(self, lam: float | Array) -> tuple[Array, Array]:
        """Values at ``lam`` (scalar or array): ``(vec, intercept)`` with vec (m, p).

        Cubic Hermite interpolation between consecutive recorded points of the
        same smooth segment, using the exact derivatives (Theorem 3) at both
        ends.  Inside the gap ``(lam_jump, lam_jump + delta)`` of a jump the old
        branch is returned.
        """
        lams = np.atleast_1d(np.asarray(lam, dtype=float))
        L = self.lambdas
        if np.any(lams < L[0] - 1e-12) or np.any(lams > L[-1] + 1e-12):
            raise ValueError(f"ages must lie in [{L[0]}, {L[-1]}]")
        V = self.values
        out = np.empty((lams.size, V.shape[1]))
        outb = np.empty(lams.size)
        for m, t in enumerate(lams):
            k = int(np.searchsorted(L, t, side="right")) - 1
            k = min(max(k, 0), len(L) - 1)
            # move to the last point of the block with age L[k] that is in the segment of k+1
            if k + 1 < len(L) and self.segment[k + 1] == self.segment[k] and L[k + 1] > L[k]:
                h = L[k + 1] - L[k]
                s = (t - L[k]) / h
                h00 = 2 * s**3 - 3 * s**2 + 1
                h10 = s**3 - 2 * s**2 + s
                h01 = -2 * s**3 + 3 * s**2
                h11 = s**3 - s**2
                out[m] = h00 * V[k] + h10 * h * self.d_vec[k] + h01 * V[k + 1] + h11 * h * self.d_vec[k + 1]
                outb[m] = (h00 * self.intercept[k] + h10 * h * self.d_intercept[k]
                           + h01 * self.intercept[k + 1] + h11 * h * self.d_intercept[k + 1])
            else:
                out[m] = V[k] + (t - L[k]) * self.d_vec[k]
                outb[m] = self.intercept[k] + (t - L[k]) * self.d_intercept[k]
        return out, outb

    # --------------------------------------------------------- persistence
    def save(self, path: str | Path) -> Path:
        """Write the path to ``path`` (``.npz``; arrays plus JSON metadata and events)."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {
            "lambdas": self.lambdas,
            "intercept": self.intercept,
            "d_vec": self.d_vec,
            "d_intercept": self.d_intercept,
            "segment": self.segment,
            "point_kind": self.point_kind.astype(str),
        }
        if self.coef is not None:
            arrays["coef"] = self.coef
        if self.dual_coef is not None:
            arrays["dual_coef"] = self.dual_coef
        info = json.dumps({"events": self.events, "n_restarts": self.n_restarts, "meta": self.meta},
                          default=_jsonable)
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(tmp, info=np.array(info), **arrays)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> AgePath:
        """Read a path written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            info = json.loads(str(z["info"]))
            return cls(
                lambdas=z["lambdas"],
                coef=z["coef"] if "coef" in z else None,
                dual_coef=z["dual_coef"] if "dual_coef" in z else None,
                intercept=z["intercept"],
                d_vec=z["d_vec"],
                d_intercept=z["d_intercept"],
                segment=z["segment"],
                point_kind=z["point_kind"],
                events=info["events"],
                n_restarts=int(info["n_restarts"]),
                meta=info["meta"],
            )


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
