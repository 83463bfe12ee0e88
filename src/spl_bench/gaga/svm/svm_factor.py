"""The factor of the SVM path's Jacobian ``J_theta`` (GAGA eq. (5)) per point: the routes that
:meth:`~spl_bench.gaga.svm.svm_system.SVMSystem.factor` dispatches to, as a mixin of it.

With a linear kernel the low-rank factor of order ``|E_Z| + 1 + d``
(:class:`~spl_bench.gaga.svm.kkt.LowRankSVMFactor`); else the Schur complement on the M rows
(:class:`~spl_bench.gaga.core.structured.SchurFactor`) of blocks kept per set configuration, or the
latest reduced blocks bordered to a nearby configuration (:class:`~spl_bench.gaga.svm.kkt.KKTUpdate`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from spl_bench.gaga.core.factors import AnyFactor, Factor
from spl_bench.gaga.core.structured import RowScaled, SchurBlocks, SchurFactor, ShiftedTridiagonal, uniform_value
from spl_bench.gaga.core.system_base import Array, sp_weights
from spl_bench.gaga.svm.kkt import (
    KKTBorder,
    KKTUpdate,
    LowRankSVMFactor,
    MarginQR,
    MergedKKT,
    MergedLowRankSVMFactor,
    kkt_factor,
)
from spl_bench.gaga.svm.reps import _MergedOut, _Reps, _RepSolve
from spl_bench.sp import MIXED, SPRegularizer

#: recent set configurations whose Schur blocks (and margin-block factorisations) are kept: a
#: critical point whose new sets fail returns to the old ones, and the polish of a warm start
#: revisits configurations, so a small cache saves many of the margin-block LUs
SCHUR_CACHE = 4


def _remember(lru: OrderedDict, key: Any, value: Any) -> None:
    """Insert into a recent-items cache of :data:`SCHUR_CACHE` entries."""
    lru[key] = value
    while len(lru) > SCHUR_CACHE:
        lru.popitem(last=False)


class _SVMFactorMixin:
    """The factor routes of :class:`~spl_bench.gaga.svm.svm_system.SVMSystem` (its state: the
    attributes declared below; the limits of the Schur updates are passed in by its ``factor``)."""

    C: float
    Q: Array
    y: Array
    sp: SPRegularizer
    G: Array | None
    duplicates: NDArray[np.intp] | None
    _canon: NDArray[np.intp] | None
    iz: NDArray[np.intp]
    im: NDArray[np.intp]
    ifree: NDArray[np.intp]
    _cache: dict[str, Any]
    _blocks_lru: OrderedDict[tuple[bytes, bytes], SchurBlocks]
    _A_lru: OrderedDict[bytes, Factor | KKTUpdate | MergedKKT]
    _A_root: tuple[NDArray[np.intp], Factor] | None
    _schur_base: tuple[_Reps, SchurBlocks] | None
    _margin_qr_memo: MarginQR | None
    n_schur_updates: int

    if TYPE_CHECKING:
        def _Qff(self) -> Array: ...
        def _Gfree(self) -> tuple[Array, Array]: ...
        def _g_free(self, theta: Array) -> Array: ...
        def _merge_hint(self) -> tuple[NDArray[np.intp], Array, NDArray[np.intp]] | None: ...

    def _lowrank_factor(self, theta: Array, lam: float) -> tuple[AnyFactor, Array] | None:
        """The linear kernel's factor: :class:`LowRankSVMFactor` of order ``|E_Z| + 1 + d`` (with
        more than ``d + 1`` margin samples its minimum-norm least squares; with duplicated samples
        on the margin, on one per group: :class:`MergedLowRankSVMFactor`, and with more than
        ``d + 1`` groups there, the minimum-norm least squares of the unmerged system); ``None``
        where those do not apply (rank-deficient ``[G_Z, y_Z]``, a singular small system)."""
        c, Jl = self._mixed_terms(theta, lam)
        # the small system depends on the point only through c (with the linear SP
        # c = -C^2 / lam on every M row: the same at every point of one age, e.g. through
        # the iterations of a Newton polish): its factor is kept while c is unchanged
        memo = self._cache.get("lowrank_factor")
        if memo is not None and np.array_equal(memo[0], c):
            return memo[1], Jl
        Gf, nz = self._Gfree()[0], self.iz.size
        parts = (Gf[:nz], Gf[nz:], self.y[self.iz], self.y[self.im], c)
        hint = self._merge_hint()
        f: LowRankSVMFactor | MergedLowRankSVMFactor | None = None
        if hint is not None:  # duplicated samples on the margin: one per group (as Factor)
            if "zgroups" not in self._cache:  # per set configuration, not per point
                _, first, zgroup, zsize = np.unique(self.duplicates[self.iz], return_index=True,
                                                    return_inverse=True, return_counts=True)
                self._cache["zgroups"] = (first, np.asarray(zgroup).ravel(), zsize.astype(float))
            first, zgroup, zsize = self._cache["zgroups"]
            if first.size <= Gf.shape[1] + 1:
                iz1 = self.iz[first]
                zqr = self._margin_qr(iz1)
                inner = (LowRankSVMFactor.make(Gf[first], Gf[nz:], self.y[iz1], self.y[self.im], c, zqr)
                         if zqr is not None else None)
                if inner is not None:
                    f = MergedLowRankSVMFactor(inner, zgroup, zsize)
            else:  # singular also after merging: the minimum-norm least squares, as Factor's gelsy
                f = LowRankSVMFactor.make_singular(*parts)
        elif nz <= Gf.shape[1] + 1:
            zqr = self._margin_qr(self.iz)
            f = LowRankSVMFactor.make(*parts, zqr) if zqr is not None else None
        else:  # singular: more than d + 1 margin samples
            f = LowRankSVMFactor.make_singular(*parts)
        if f is not None:
            self._cache["lowrank_factor"] = (c.copy(), f)
            return f, Jl
        return None

    def _schur_factor(self, theta: Array, lam: float, max_changes: int, min_m: int
                      ) -> tuple[AnyFactor, Array] | None:
        """``J_theta`` by its Schur complement on the M rows: blocks per set configuration (from
        :meth:`_updated_factor` when ``max_changes`` and ``min_m`` allow it); ``None`` where the
        blocks are not usable (the dense route)."""
        blocks = self._cache.get("schur")
        if blocks is None:
            updated = self._updated_factor(theta, lam, max_changes, min_m)
            if updated is not None:
                return updated
            blocks = self._schur_blocks()
            self._cache["schur"] = blocks
        if not blocks.usable:
            return None
        c, Jl = self._mixed_terms(theta, lam)
        f = SchurFactor(blocks, c)
        if blocks.reduced:
            reps = self._reps()
            if reps is not None:
                self._schur_base = (reps, blocks)
        return f, Jl

    def _margin_qr(self, iz: NDArray[np.intp]) -> tuple[Array, Array] | None:
        """The QR of the margin samples ``iz`` (:meth:`MarginQR.factors`): the latest one's
        :class:`MarginQR` updated where the margin set changed by a few samples (on the
        linear-kernel rows a Newton polish or a warm start moves one or two at a time)."""
        memo = self._margin_qr_memo
        if memo is not None and np.array_equal(memo.idx, iz):
            return memo.factors()
        assert self.G is not None
        memo = (memo.moved_to(iz, self.G, self.y) if memo is not None
                else MarginQR.make(iz, self.G[iz], self.y[iz]))
        if memo is None:
            return None
        self._margin_qr_memo = memo
        return memo.factors()

    def _updated_factor(self, theta: Array, lam: float, max_changes: int, min_m: int
                        ) -> tuple[AnyFactor, Array] | None:
        """``J`` of a new set configuration through the latest reduced Schur blocks, or ``None``.

        With one ``c`` on every M row (the linear SP-regularizer), ``J = diag(d) K`` with
        ``d = (-1 on E_Z, c on M, 1)`` and ``K = [[Q_FF + diag(h), y_F], [y_F^T, 0]]`` symmetric,
        ``h = 1 / c`` on M and 0 on E_Z (``F = E_Z ∪ M``).  The ``K`` of the configuration whose
        blocks were last reduced to tridiagonal form is solved at any ``c`` in ``O(|M|^2)``
        (:class:`SchurFactor`); this configuration's ``K`` differs from it by the indices that
        entered or left ``F`` and those that moved between E_Z and M (a change of ``h``), and is
        solved by bordering (:class:`KKTUpdate`).  A critical point moves one or two indices, while
        new blocks cost a reduction (three to four LUs of order ``|M|``) and their ``W``.
        Duplicated samples in E_Z (equal rows and columns) are merged, one per group
        (:class:`_Reps`), as :class:`Factor` merges them: the minimum-norm solution and the merged
        system's sign.  Not used beyond ``max_changes`` changes (0: never) or below ``min_m``
        samples in M, or when the bordered system's Schur complement has a pivot below ``1e-9``
        of the largest; a new configuration then gets its own blocks (and becomes the base once
        reduced).
        """
        base = self._schur_base
        if base is None or max_changes <= 0 or self.im.size < max(min_m, 3):
            return None
        c, Jl = self._mixed_terms(theta, lam)
        c0 = uniform_value(c)
        if c0 is None or c0 == 0.0:  # K's shift is 1 / c
            return None
        memo = self._cache.get("schur_update")
        if memo is not None and memo[0] == c0:
            return memo[1], Jl
        border = self._schur_border(base, max_changes)
        if border is None:
            return None
        reps_b, blocks = base
        root_j = SchurFactor(blocks, np.full(reps_b.m, c0), refine=False)  # refined on this J
        if root_j.least_squares or not isinstance(root_j.S, ShiftedTridiagonal):
            return None
        b, parts, grow, reps = border
        # the border at shift 1 on M: a Δ column scales with the shift 1 / c0, as does the
        # diagonal of an index added to M
        MiV = reps_b.contract(blocks.uniform_solve(parts, root_j.S, c0))
        MiV[:, b.apos.size + b.rpos.size:] *= 1.0 / c0
        D = b.D.copy()
        D[np.arange(b.apos.size), np.arange(b.apos.size)] += (1.0 / c0 - 1.0) * grow
        d_b = np.concatenate([-np.ones(reps_b.nz_full), np.full(reps_b.m, c0), [1.0]])
        root = _RepSolve(RowScaled(root_j, 1.0 / d_b), reps_b,
                         root_j.sign * (-1.0) ** reps_b.nz * np.sign(c0) ** reps_b.m)
        h = np.concatenate([np.zeros(reps.nz), np.full(reps.m, 1.0 / c0)])
        upd = KKTUpdate.finish(root, b, MiV, D, pivot_tol=1e-9, shift=h)
        if upd is None:
            return None
        d = np.concatenate([-np.ones(reps.nz), c, [1.0]])
        f: Any = RowScaled(upd, d, matvec=self._jvec(c0, reps))
        if not reps.identity:
            f = _MergedOut(f, reps)
        self.n_schur_updates += 1
        self._cache["schur_update"] = (c0, f)
        return f, Jl

    def _reps(self) -> _Reps | None:
        """The free set with duplicated samples in E_Z merged (:class:`_Reps`), per set
        configuration; ``None`` if a duplicate of a margin sample is in M."""
        if "reps" not in self._cache:
            self._cache["reps"] = _Reps.make(self.iz, self.im, self._canon)
        return self._cache["reps"]

    def _schur_border(self, base: tuple[_Reps, SchurBlocks], max_changes: int
                      ) -> tuple[KKTBorder, tuple[Array, Array], Array, _Reps] | None:
        """Per set configuration: the bordering of the base's ``K`` at shift 1 on M
        (:class:`KKTBorder`), the parts of its solves with the base blocks that no ``c`` changes
        (:meth:`SchurBlocks.uniform_rhs`: with ``J = diag(d) K``, ``K^{-1} V = J^{-1} d V``, ``d``
        being ``-1`` on E_Z, ``c`` on M and 1 on the row of b), the added indices in M, and the
        merged free set; ``None`` beyond ``max_changes`` changes."""
        reps_b, blocks = base
        memo = self._cache.get("schur_border")
        if memo is None or memo[0] is not blocks:
            reps = self._reps()
            b = None
            if reps is not None:
                b = KKTBorder.make(reps_b.ids, reps.ids, self.Q, self.y, 1.0, reps_b.pattern, reps.pattern,
                                   max_changes)
            out = None
            if b is not None:
                V = reps_b.expand(b.V)  # the base's unmerged rows
                r1 = V[blocks.i1]
                r1[:-1] *= -1.0  # the E_Z rows (i1: E_Z, then b)
                out = (b, blocks.uniform_rhs(r1, V[blocks.i2]), (b.apos >= reps.nz).astype(float), reps)
            memo = (blocks, out)
            self._cache["schur_border"] = memo
        return memo[1]

    def _jvec(self, c0: float, reps: _Reps) -> Callable[[Array], Array]:
        """``x -> J x`` for the current sets, duplicates in E_Z merged (:class:`_Reps`; kept if
        the sets change) with one ``c = c0`` on every M row (:meth:`jacobians`)."""
        Qff = self._Qff()
        if not reps.identity:  # the merged block, per set configuration
            if "Qff_reps" not in self._cache:
                self._cache["Qff_reps"] = Qff[np.ix_(reps.pos, reps.pos)]
            Qff = self._cache["Qff_reps"]
        k, nz, yf = reps.ids.size, reps.nz, self.y[reps.ids]

        def jvec(x: Array) -> Array:
            u = Qff @ x[:k] + np.multiply.outer(yf, x[k])
            out = np.empty(x.shape)
            out[:nz] = -u[:nz]
            out[nz:k] = c0 * u[nz:] + x[nz:k]
            out[k] = yf @ x[:k]
            return out
        return jvec

    def _mixed_terms(self, theta: Array, lam: float) -> tuple[Array, Array]:
        """``(c, J_lam)``: the M rows' ``c = C^2 dv*/dell`` and ``J_lam`` (non-zero on M only)."""
        Jl = np.zeros(self.ifree.size + 1)
        c = np.zeros(self.im.size)
        if self.im.size:
            g = self._g_free(theta)[self.iz.size:]
            _, dl, dlam = sp_weights(self.sp, self.C * g, np.full(self.im.size, MIXED, np.int8), lam)
            c = (self.C**2) * dl
            Jl[self.iz.size:self.ifree.size] = -self.C * dlam
        return c, Jl

    def _schur_blocks(self) -> SchurBlocks:
        """The blocks of :meth:`factor` for the current sets, from the recent ones if they are there."""
        key_z = self.iz.tobytes()
        key = (key_z, self.im.tobytes())
        hit = self._blocks_lru.get(key)
        if hit is not None:
            self._blocks_lru.move_to_end(key)
            return hit
        k, nz = self.ifree.size, self.iz.size
        Qff = self._Qff()
        i1 = np.append(np.arange(nz), k)
        i2 = np.arange(nz, k)
        A_fac = self._A_lru.get(key_z)
        if A_fac is None:
            # an update of the latest LU (KKTUpdate: a critical point moves one or two indices)
            # or a new LU; duplicated samples on the margin need the merged one
            A_fac, self._A_root = kkt_factor(self.Q, self.y, self.iz, -1.0, self._canon, self._A_root,
                                             Qzz=Qff[:nz, :nz])
            _remember(self._A_lru, key_z, A_fac)
        else:
            self._A_lru.move_to_end(key_z)
        B = np.vstack([-Qff[:nz, nz:], self.y[self.im][None, :]])
        C0 = np.hstack([Qff[nz:, :nz], self.y[self.im][:, None]])
        blocks = SchurBlocks(A_fac, B, C0, Qff[nz:, nz:], i1, i2)
        _remember(self._blocks_lru, key, blocks)
        return blocks
