"""Where DSPL's per-batch work runs: batch hosts that keep their data and state in place.

A :class:`BatchHost` holds some of the batches ``(X_i, y_i)`` together with everything
DSPL derives from them: the weights ``v_i``, ``G_i = 2 X_i^T V_i X_i``, ``b_i = 2 X_i^T V_i y_i``,
the Cholesky factor of ``G_i + rho I`` (eq. (7)) and the ADMM duals ``alpha_i``.  All of it stays
where it was built, across ADMM iterations and across outer iterations; a host is asked to do one
thing for all of its batches at a time (one message per host, not per batch) and answers with
``O(p)`` numbers per batch.  An ADMM iteration sends a host ``z`` and gets its ``w_i`` back.

* :class:`SerialBackend` keeps one host in this process.
* :class:`DaskBackend` keeps one host per Dask worker as a *Dask actor*: the client calls
  the actor's methods directly on its worker, without a scheduler round trip per call.
  The cluster is a LocalCluster, an existing scheduler (``address``) or a SLURM job array
  (``slurm``, through dask-jobqueue).

Both backends call the same host methods with the same arguments in the same order, so
they give the same numbers.  A Dask host whose worker dies takes its batches' state with
it: the call raises :class:`WorkerLostError` (one line) instead of waiting or going on
without those batches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from spl_bench.errors import ConfigError, SplBenchError
from spl_bench.methods.base import Array
from spl_bench.sp import SPRegularizer


class WorkerLostError(SplBenchError, RuntimeError):
    """A Dask worker holding DSPL batches died (or became unreachable) during a run."""


@dataclass
class Batch:
    """One mini-batch ``(X_i, y_i)``; lives on a host."""

    X: Array
    y: Array


def blas_threads() -> int:
    """The number of threads of the BLAS this process multiplies with (threadpoolctl)."""
    from threadpoolctl import threadpool_info

    return max((int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"), default=1)


def _accumulate_gram(G: Array, b: Array, Xc: Array, yc: Array, vc: Array, buf: Array) -> None:
    """Add one block's ``A_c^T A_c`` to ``G`` and ``A_c^T (sqrt(v_c) y_c)`` to ``b``, ``A_c = diag(sqrt(v_c)) X_c``."""
    s = np.sqrt(vc)
    A = np.multiply(Xc, s[:, None], out=buf[: s.shape[0]])
    G += A.T @ A
    b += A.T @ (s * yc)


def _aligned(a: Array) -> Array:
    """``a`` as a C-contiguous float array aligned to 8 bytes: itself when it is one, else a copy.

    A Dask worker receives a batch as views into the frames of the message, and the first array
    buffer of a message is read into the buffer of the message's header, at whatever byte offset
    the header ends (it was the first batch of every worker, from 10^5 to 2.5·10^6 rows, before
    :class:`DaskBackend` sent the batch numbers ahead of the batches).  NumPy's matmul does not
    hand a misaligned operand to BLAS: in a worker ``X_c @ [w_i, z]`` of a 4096 x 50 block took 0.87 ms instead of
    0.03 ms, and a pass of :meth:`BatchHost.objectives` over 500,000 x 50 rows 0.22 s of CPU instead
    of 0.105 s (0.12 s in the client process).  The copy is made once, when the host is built.
    """
    return np.require(a, dtype=float, requirements=["C_CONTIGUOUS", "ALIGNED"])


class ConsensusSteps:
    """The w-step of consensus ADMM, eq. (7), for some batches: their ``G_i``, ``b_i``, the factors of
    ``G_i + rho I``, the duals ``alpha_i`` and the last ``w_i`` (rows in the order of the batches).

    :class:`BatchHost` makes them where its batches live; :class:`DaskBackend` keeps a copy of each
    host's on the client (``admm="client"``) and runs the ADMM iterations there, on the ``G_i``, ``b_i``
    its hosts send once per ``v``: the same arithmetic on the same numbers.
    """

    def __init__(self, k: int, p: int) -> None:
        self.G: list[Array] = []
        self.b: list[Array] = []
        self.cho: list[tuple[Array, bool]] = []
        # the ADMM duals alpha_i and the last w_i; the client keeps the same alpha, updated by the same
        # arithmetic, for (5) and (8)
        self.alpha = np.zeros((k, p))
        self.w = np.zeros((k, p))

    def factor(self, rho: float) -> None:
        """Cholesky of ``G_i + rho I`` once per ``(v_i, rho)``; every ADMM iteration reuses it."""
        self.cho = [cho_factor(G + rho * np.eye(G.shape[0]), lower=True, check_finite=False) for G in self.G]

    def w_step(self, z: Array | bytes, rho: float, dual_rho: float | None = None) -> bytes:
        """Eq. (7) for every batch here, ``w_i = (G_i + rho I)^-1 (b_i - alpha_i + rho z)``, after the dual update.

        The dual update of the previous ADMM iteration, ``alpha_i += dual_rho (w_i - z)`` with that
        iteration's ``w_i`` and its new ``z`` (the one given), is made here first unless ``dual_rho``
        is None (the first iteration after :meth:`__init__`): ``alpha_i`` stays here and only
        ``z`` travels.  ``z`` may come as the bytes of a float64 array; the new ``w_i`` (one row per
        batch) go back as the bytes of the ``(k, p)`` array (see :meth:`_HostBackend.rows`): a numpy
        array costs a Dask message more to (de)serialise.
        """
        z = np.frombuffer(z) if isinstance(z, bytes) else np.asarray(z, dtype=float)
        if dual_rho is not None:
            self.alpha = self.alpha + dual_rho * (self.w - z)  # the client's update, row for row
        self.w = np.array([cho_solve(c, b - a + rho * z, check_finite=False)
                           for c, b, a in zip(self.cho, self.b, self.alpha, strict=True)]).reshape(self.alpha.shape)
        return self.w.tobytes()


class BatchHost(ConsensusSteps):
    """Some batches of DSPL and their state, kept in one process for the whole run.

    Parameters
    ----------
    index : list of int
        The global numbers of the batches held here (the order of the rows of every
        block this host receives or returns).
    *batches : Batch
        The batches themselves.
    """

    def __init__(self, index: Sequence[int], *batches: Batch) -> None:
        self.index = [int(i) for i in index]
        self.batches = [Batch(_aligned(b.X), _aligned(b.y)) for b in batches]  # a copy only if misaligned
        self.v = [np.ones(b.y.shape[0]) for b in self.batches]  # Algorithm 1 line 1: v_i^0 = 1
        super().__init__(len(self.batches), self.batches[0].X.shape[1] if self.batches else 0)
        self._ell: list[Array] = []
        # the v-step of eq. (11) and the Gram matrices of its v, made ahead in the pass of
        # objectives() over X_i and taken over by v_step(); None when there is none
        self._ahead: tuple[float, list[Array], list[Array], list[Array], float] | None = None
        self._gram_current = False  # G_i, b_i belong to the current v_i
        self._spare_v: list[Array] = []  # the v_i before the last v-step: the next one's buffers

    def gram(self, chunk: int = 4096) -> list[float]:
        """``G_i = 2 X_i^T V_i X_i`` and ``b_i = 2 X_i^T V_i y_i`` of eq. (7); returns ``tr(G_i)``.

        Accumulated over blocks ``c`` of ``chunk`` rows as ``G_i = 2 sum_c A_c^T A_c``,
        ``b_i = 2 sum_c A_c^T (sqrt(v_c) y_c)`` with ``A_c = diag(sqrt(v_c)) X_c``: ``A^T A`` of one
        array is a symmetric rank-k update (half the products of a general ``X^T (V X)``), and
        a block of ``A`` stays in cache instead of an ``n_i x p`` copy of ``X_i``.  The block
        buffer is allocated once: Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_``, which turns
        off glibc's adaptive mmap threshold, so a fresh block per step would be a fresh mmap.
        """
        if not self._gram_current:  # else the v-step already made them in its pass over X_i
            self.G, self.b = [], []
            p = self.batches[0].X.shape[1]
            buf = np.empty((chunk, p))
            for batch, v in zip(self.batches, self.v, strict=True):
                G, b = np.zeros((p, p)), np.zeros(p)
                for a in range(0, batch.y.shape[0], chunk):
                    _accumulate_gram(G, b, batch.X[a:a + chunk], batch.y[a:a + chunk], v[a:a + chunk], buf)
                self.G.append(2.0 * G)
                self.b.append(2.0 * b)
            self._gram_current = True
        return [float(np.trace(G)) for G in self.G]

    def gram_blocks(self) -> bytes:
        """The ``G_i`` then the ``b_i`` of the batches here (:meth:`gram`), as the bytes of one float64 array
        (the client's ADMM, :class:`DaskBackend` with ``admm="client"``)."""
        return np.concatenate([np.ravel(self.G), np.ravel(self.b)]).tobytes()

    def objectives(
        self, W: Array, z: Array, lam: float, sp: SPRegularizer, chunk: int = 4096, ahead: bool = False
    ) -> Array:
        """Per batch ``[f_i(w_i, v_i; lam), sum_j v_ij, f_i(z, v_i; lam)]``, the batch terms of (4)-(5).

        ``f_i(w, v; lam) = sum_j v_j (y_j - w^T x_j)^2 + sum_j f_SP(v_j, lam)``.  One pass over
        ``X_i``, in blocks of ``chunk`` rows, gives the losses at ``w_i`` and at ``z``; those at
        ``w_i`` are kept (in a buffer allocated once per batch) for :meth:`v_step`.  Every
        temporary is a block (for the reason given in :meth:`gram`).

        With ``ahead`` the same pass also makes the v-step that would follow, ``v_i' = v*(ell(w_i),
        lam)`` (eq. (11)), and the Gram matrices of ``v_i'`` (eq. (7)) while each block of ``X_i``
        is in cache: the outer iteration then reads ``X_i`` once instead of twice.  They are kept
        aside and become the state only if :meth:`v_step` is called next with the same ``lam``
        (the outer loop goes on); the numbers are those of :meth:`v_step` then :meth:`gram`.
        """
        out = np.empty((len(self.batches), 3))
        if len(self._ell) != len(self.batches):
            self._ell = [np.empty(b.y.shape[0]) for b in self.batches]
        p = self.batches[0].X.shape[1] if self.batches else 0
        buf, wz, gbuf = np.empty((chunk, 2)), np.empty((p, 2)), np.empty((chunk, p))
        new_v: list[Array] = []
        new_G: list[Array] = []
        new_b: list[Array] = []
        changed = 0.0
        for j, (batch, v, ell) in enumerate(zip(self.batches, self.v, self._ell, strict=True)):
            wz[:, 0], wz[:, 1] = W[j], z
            f_w = f_z = pen = 0.0
            if ahead:
                vn = self._spare_v[j] if len(self._spare_v) == len(self.v) else np.empty_like(v)
                G, b = np.zeros((p, p)), np.zeros(p)
            for a in range(0, batch.y.shape[0], chunk):
                Xc, yc = batch.X[a:a + chunk], batch.y[a:a + chunk]
                R = np.matmul(Xc, wz, out=buf[: yc.shape[0]])
                np.subtract(yc[:, None], R, out=R)  # residuals at w_i and at z
                np.multiply(R, R, out=R)
                vc = v[a:a + chunk]
                f_w += float(vc @ R[:, 0])
                f_z += float(vc @ R[:, 1])
                pen += float(np.sum(sp.penalty(vc, lam)))
                ell[a:a + R.shape[0]] = R[:, 0]
                if ahead:
                    vn[a:a + chunk] = sp.v_star(ell[a:a + chunk], lam)
                    changed += float(np.abs(vn[a:a + chunk] - vc).sum())
                    _accumulate_gram(G, b, Xc, yc, vn[a:a + chunk], gbuf)
            out[j] = (f_w + pen, float(v.sum()), f_z + pen)
            if ahead:
                new_v.append(vn)
                new_G.append(2.0 * G)
                new_b.append(2.0 * b)
        self._ahead = (lam, new_v, new_G, new_b, changed) if ahead else None
        return out

    def v_step(self, W: Array | None = None, *, lam: float, sp: SPRegularizer, chunk: int = 4096) -> float:
        """``v_i = v*(ell(w_i), lam)``, eq. (11) (``1[ell < lam]`` for the hard regularizer).

        Without ``W`` the losses kept by the last :meth:`objectives` are used.  ``v_i`` is
        updated in place, block by block.  Returns the number of weights that changed,
        ``sum_ij |v_ij^new - v_ij^old|``.
        """
        if W is None and self._ahead is not None and self._ahead[0] == lam:
            self._spare_v = self.v
            _, self.v, self.G, self.b, changed = self._ahead  # made by objectives(ahead=True)
            self._ahead, self._gram_current = None, True
            return changed
        self._ahead, self._gram_current = None, False
        if W is None:
            ell = self._ell
        else:
            ell = [(b.y - b.X @ w) ** 2 for b, w in zip(self.batches, W, strict=True)]
        changed = 0.0
        for e, v in zip(ell, self.v, strict=True):
            for a in range(0, e.shape[0], chunk):
                new = sp.v_star(e[a:a + chunk], lam)
                changed += float(np.abs(new - v[a:a + chunk]).sum())
                v[a:a + chunk] = new
        return changed

    def free(self) -> None:
        """Drop the batches and everything made from them (the host is not used again).

        A Dask actor's object lives as long as any handle to it in the client, and handles can
        sit in reference cycles until the client's garbage collector runs: without this, the
        next placement's batches could arrive beside the old ones.
        """
        self.batches, self.v, self.G, self.b, self.cho = [], [], [], [], []
        self._ell, self._spare_v, self._ahead, self._gram_current = [], [], None, False

    def get_v(self) -> list[Array]:
        """Copies of the current ``v_i`` of every batch here (the host updates its own in place)."""
        return [v.copy() for v in self.v]

    def blas_threads(self) -> int:
        """BLAS threads of the process the host lives in."""
        return blas_threads()

    def echo(self, x: Any = None) -> Any:
        """``x`` back: one bare round trip to the host (the latency floor of an ADMM iteration)."""
        return x


# =====================================================================================
# Backends
# =====================================================================================


class _HostBackend:
    """Batches placed on hosts; :meth:`call` runs one host method on every host."""

    name = "base"

    def __init__(self) -> None:
        self.hosts: list[Any] = []
        self.index: list[list[int]] = []

    def place(self, batches: Sequence[Batch]) -> list[list[int]]:
        """Send the batches to their hosts once (dropping any earlier placement).

        Returns the batch numbers held by each host; batch ``i`` goes to host ``i mod k``.
        """
        self.release()
        k = min(self.n_workers(), len(batches))
        self.index = [list(range(s, len(batches), k)) for s in range(k)]
        self.hosts = self._make_hosts([[batches[i] for i in ix] for ix in self.index])
        return self.index

    def call(self, method: str, *per_host: Sequence[Any], **kwargs: Any) -> list[Any]:
        """``host.method(arg[h] for arg in per_host, **kwargs)`` on every host ``h``, all at once."""
        pending = [self._start(h, method, tuple(a[j] for a in per_host), kwargs) for j, h in enumerate(self.hosts)]
        return [self._finish(j, x) for j, x in enumerate(pending)]

    def split(self, A: Array) -> list[Array]:
        """The rows of ``A`` (one per batch) that each host needs, in the host's order."""
        return [A[ix] for ix in self.index]

    def rows(self, blocks: Sequence[bytes], m: int, p: int) -> Array:
        """The ``(m, p)`` array, in batch order, of the per-host rows sent back as bytes (:meth:`BatchHost.w_step`)."""
        out = np.empty((m, p))
        for ix, block in zip(self.index, blocks, strict=True):
            out[ix] = np.frombuffer(block).reshape(len(ix), p)
        return out

    def join(self, blocks: Sequence[Any], m: int) -> list[Any]:
        """Per-host lists back into one list in batch order."""
        out: list[Any] = [None] * m
        for ix, block in zip(self.index, blocks, strict=True):
            for i, value in zip(ix, block, strict=True):
                out[i] = value
        return out

    def release(self) -> None:
        self.hosts, self.index = [], []

    def n_workers(self) -> int:
        return 1

    def close(self) -> None:
        self.release()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # the two halves of a call: start it on host h, then wait for its result
    def _make_hosts(self, parts: list[list[Batch]]) -> list[Any]:
        raise NotImplementedError

    def _start(self, host: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _finish(self, j: int, pending: Any) -> Any:
        raise NotImplementedError


class SerialBackend(_HostBackend):
    """All batches on one :class:`BatchHost` in this process."""

    name = "serial"

    def _make_hosts(self, parts: list[list[Batch]]) -> list[Any]:
        return [BatchHost(self.index[0], *parts[0])]

    def _start(self, host: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return getattr(host, method)(*args, **kwargs)

    def _finish(self, j: int, pending: Any) -> Any:
        return pending


class DaskBackend(_HostBackend):
    """One :class:`BatchHost` per Dask worker, as a Dask actor.

    Parameters
    ----------
    address : str, optional
        Scheduler address (``tcp://host:8786``) of an existing cluster.  Only the client
        is closed at the end, never the cluster.
    n_workers, threads_per_worker, processes :
        LocalCluster options when neither ``address`` nor ``slurm`` is given.
    slurm : dict, optional
        Options of dask-jobqueue's ``SLURMCluster`` plus ``jobs`` (how many jobs to
        submit); see :func:`slurm_cluster`.  The backend waits for ``n_workers`` workers.
    client : distributed.Client, optional
        Use this client (not closed by the backend).
    poll : float
        Seconds between checks that the workers of unfinished calls are still alive.
    wait_timeout : float
        Seconds to wait for ``n_workers`` workers of a SLURM cluster.
    admm : {"auto", "client", "hosts"}
        Where the ADMM iterations of eq. (7) run.  ``client``: each host sends its ``G_i``, ``b_i``
        once per ``v`` (``m (p^2 + p)`` numbers) and the w-steps run here (:class:`ConsensusSteps`,
        the hosts' own code), so an ADMM iteration costs no message; ``hosts``: on the workers, one
        round trip to every host per iteration (at least a bare actor round trip, about 2 ms on a
        local cluster; tens of iterations per outer iteration), and only ``p``-vectors travel.
        ``auto`` (default): ``client`` while the ``G_i`` are at most :data:`CLIENT_ADMM_NUMBERS`
        numbers in all, else ``hosts`` (whose factorisations, ``m p^3 / 3`` flops, then also run
        in parallel).  The same numbers either way: the Gram passes over ``X_i``, the heavy part,
        stay on the hosts.
    """

    name = "dask"
    #: the host methods of the ADMM iterations, run on the client's copies with ``admm="client"``
    CLIENT_ADMM = frozenset({"factor", "w_step"})
    #: ``admm="auto"`` runs the ADMM on the client while ``m p^2`` is at most this (20 MB of G_i: p = 500 at
    #: m = 10, p = 200 at m = 64)
    CLIENT_ADMM_NUMBERS = 2_500_000

    def __init__(
        self,
        address: str | None = None,
        n_workers: int = 2,
        threads_per_worker: int = 1,
        processes: bool = True,
        slurm: dict[str, Any] | None = None,
        client: Any = None,
        poll: float = 0.5,
        wait_timeout: float = 600.0,
        admm: str = "auto",
    ) -> None:
        super().__init__()
        from dask.distributed import Client, LocalCluster

        if admm not in ("auto", "client", "hosts"):
            raise ConfigError(f"DSPL cluster option admm must be 'auto', 'client' or 'hosts', got {admm!r}")
        self.admm = admm
        self.admm_on = "hosts" if admm == "hosts" else "client"  # auto: decided at place()
        self._steps: list[ConsensusSteps] = []  # the client's copy of each host's ADMM state (admm="client")
        self._steps_stale = True  # the hosts' G_i, b_i changed since the copies got theirs
        self.poll = float(poll)
        self._own_client = client is None
        self._cluster: Any = None
        self._actors: list[Any] = []
        self._workers: list[str] = []
        if client is not None:
            self.client = client
        elif address:
            try:
                self.client = Client(address, timeout="20s")
            except OSError as e:
                raise ConfigError(f"cannot connect to the Dask scheduler at {address!r}: {e}") from e
        elif slurm is not None:
            self._cluster = slurm_cluster(slurm)
            self.client = Client(self._cluster)
            self.client.wait_for_workers(int(n_workers), timeout=wait_timeout)
        else:
            self._cluster = LocalCluster(n_workers=int(n_workers), threads_per_worker=int(threads_per_worker),
                                         processes=bool(processes), dashboard_address=None)
            self.client = Client(self._cluster)

    def place(self, batches: Sequence[Batch]) -> list[list[int]]:
        index = super().place(batches)
        p = batches[0].X.shape[1] if batches else 0
        if self.admm == "auto":
            self.admm_on = "client" if len(batches) * p * p <= self.CLIENT_ADMM_NUMBERS else "hosts"
        self._steps = [ConsensusSteps(len(ix), p) for ix in index]  # alpha_i = 0, as on the new hosts
        self._steps_stale = True
        return index

    def call(self, method: str, *per_host: Sequence[Any], **kwargs: Any) -> list[Any]:
        """:meth:`_HostBackend.call`; with the ADMM on the client (``admm``) its ``factor`` and ``w_step`` run on
        the client's copies of the hosts' state, which take the hosts' ``G_i``, ``b_i`` after each ``gram``."""
        if self.admm_on != "client" or method not in self.CLIENT_ADMM:
            out = super().call(method, *per_host, **kwargs)
            if method == "gram":  # G_i, b_i of the current v_i (made now, or ahead by the last pass)
                self._steps_stale = True
            return out
        if self._steps_stale:
            for ix, steps, block in zip(self.index, self._steps, super().call("gram_blocks"), strict=True):
                k, p = len(ix), steps.alpha.shape[1]
                flat = np.frombuffer(block)
                steps.G = list(flat[: k * p * p].reshape(k, p, p))
                steps.b = list(flat[k * p * p:].reshape(k, p))
            self._steps_stale = False
        return [getattr(steps, method)(*(a[j] for a in per_host), **kwargs) for j, steps in enumerate(self._steps)]

    def worker_addresses(self) -> list[str]:
        """The workers the scheduler knows now, sorted."""
        workers = sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        if not workers:
            raise ConfigError("the Dask cluster has no workers")
        return workers

    def n_workers(self) -> int:
        return len(self.worker_addresses())

    def _make_hosts(self, parts: list[list[Batch]]) -> list[Any]:
        self._workers = self.worker_addresses()[: len(parts)]
        hosts = []
        for ix, part, w in zip(self.index, parts, self._workers, strict=True):
            # scatter straight to the worker, then build the actor there from those futures: the actor
            # holds the very arrays the worker received (no second copy).  ``direct``: the client sends
            # the message to the worker itself; through the scheduler, the scheduler's process (the
            # client's own in a LocalCluster) would read the whole message before passing it on.  With
            # protocol-5 pickling the client sends the batches' own buffers, one worker's at a time.
            # The batch numbers go first, as a small array: the first array of a message lands in the
            # buffer of its header, unaligned (see _aligned), and a batch there would be copied.
            try:
                data = self.client.scatter([np.asarray(ix, dtype=np.int64), *part], workers=[w], hash=False,
                                           direct=True)
            except OSError as e:
                raise self._lost(len(hosts), f"{type(e).__name__} while sending its batches") from None
            fut = self.client.submit(BatchHost, *data, actor=True, workers=[w], pure=False)
            self._actors.append(fut)
            hosts.append(self._wait(len(hosts), fut))
            del data  # the actor holds the arrays; the scattered keys can go
        return hosts

    #: host methods of microseconds (two triangular solves per batch) that the worker runs on its event
    #: loop (the actor's ``separate_thread=False``) instead of its actor thread: one hop between threads
    #: less each way, about 20 % of an ADMM round trip to 2 workers (measured beside other work)
    QUICK = frozenset({"w_step", "echo"})

    def _start(self, host: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method in self.QUICK:
            kwargs = {**kwargs, "separate_thread": False}
        try:
            return getattr(host, method)(*args, **kwargs)
        except RuntimeError as e:
            # distributed refuses a call to an actor whose task has erred ("Worker holding Actor was
            # lost", raised by the actor handle itself): its worker died between two calls
            j = next((i for i, h in enumerate(self.hosts) if h is host), None)
            if j is None or not self._gone_within(j, self.LOST_GRACE):
                raise
            raise self._lost(j, f"{type(e).__name__}: {e}") from None

    def _finish(self, j: int, pending: Any) -> Any:
        return self._wait(j, pending)

    def _wait(self, j: int, fut: Any) -> Any:
        """The result of host ``j``'s call; :class:`WorkerLostError` as soon as its worker is gone.

        A call to an actor on a dead worker can wait forever (distributed waits for the actor
        task to be rerun, which its worker restriction forbids), so the wait is cut into
        ``poll``-second slices and the actor's task is checked between them.
        """
        while True:
            try:
                return fut.result(timeout=self.poll)
            except TimeoutError:
                if not self._host_alive(j):
                    raise self._lost(j, "it left the cluster") from None
            except OSError as e:  # the client lost its connection to the actor's worker
                if not self._gone_within(j, self.LOST_GRACE):
                    raise
                raise self._lost(j, f"{type(e).__name__}: {e}") from None

    #: seconds a failed connection to an actor's worker waits for the scheduler to report the worker
    #: gone (the client can fail to reach a killed worker before the scheduler has noticed its death)
    LOST_GRACE = 5.0

    def _gone_within(self, j: int, seconds: float) -> bool:
        """Whether host ``j``'s worker is reported gone within ``seconds`` (polled every 0.1 s)."""
        end = time.monotonic() + seconds
        while self._host_alive(j):
            if time.monotonic() >= end:
                return False
            time.sleep(0.1)
        return True

    def _host_alive(self, j: int) -> bool:
        """Host ``j``'s worker is still in the cluster and its actor still exists there."""
        if self._workers[j] not in self.client.scheduler_info(n_workers=-1)["workers"]:
            return False
        # a built actor's task is "finished"; after its worker's death it goes back to "pending"
        status = self._actors[j].status
        return status == "finished" or (status == "pending" and j >= len(self.hosts))  # built, or being built

    def _lost(self, j: int, why: str) -> WorkerLostError:
        batches = self.index[j] if j < len(self.index) else []
        return WorkerLostError(
            f"DSPL: the Dask worker {self._workers[j] if j < len(self._workers) else '?'} holding batches "
            f"{batches} was lost ({why}); their v, Gram matrices and factors went with it, rerun the fit")

    def release(self) -> None:
        """Free the placed batches on their workers, then cancel the hosts' actors.

        Each host on a worker still in the cluster drops its data (:meth:`BatchHost.free`) and the
        call is waited for, so the memory is free before anything new is sent; a host whose worker
        is gone took its data with it.  Cancelling the actors' tasks forgets them on the scheduler
        and the workers even while handles to them are still alive in this process.
        """
        try:
            self._free_hosts()
        except (OSError, RuntimeError, KeyError):
            # the scheduler or an actor is gone (the cluster closed first, a worker lost; a client cut off
            # from its scheduler reports no "workers"): what is gone holds nothing to free
            pass
        self._actors, self._workers = [], []
        super().release()

    def _free_hosts(self) -> None:
        """:meth:`BatchHost.free` on every host whose worker is alive (waited for), then cancel the actors."""
        if self.client.status != "running":  # lost the scheduler: the cluster is going or gone
            return
        if self.hosts:
            pending = [(j, self._start(h, "free", (), {})) for j, h in enumerate(self.hosts) if self._host_alive(j)]
            for j, fut in pending:
                try:
                    self._wait(j, fut)
                except (WorkerLostError, OSError):
                    pass  # lost since: nothing of it is left to free
        if self._actors:
            self.client.cancel(self._actors)

    def close(self) -> None:
        self.release()
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def slurm_cluster(options: dict[str, Any]) -> Any:
    """A dask-jobqueue ``SLURMCluster`` from config options; ``jobs`` of them are submitted.

    Every key but ``jobs`` is passed to ``SLURMCluster`` (``queue``, ``account``, ``cores``,
    ``processes``, ``memory``, ``walltime``, ``job_extra_directives``, ``interface``, ...).
    With ``jobs: 0`` nothing is submitted (the job script can be inspected with
    ``cluster.job_script()``).
    """
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise ConfigError(f"cluster.slurm needs dask-jobqueue: {e}") from e
    opts = {k: v for k, v in dict(options).items() if v is not None}
    jobs = int(opts.pop("jobs", 1))
    opts.setdefault("scheduler_options", {"dashboard_address": None})
    try:
        cluster = SLURMCluster(**opts)
    except (TypeError, ValueError) as e:  # an option SLURMCluster does not know
        raise ConfigError(f"bad cluster.slurm option: {' '.join(str(e).split())}") from e
    if jobs > 0:
        cluster.scale(jobs=jobs)
    return cluster


CLUSTER_KEYS = ("address", "n_workers", "threads_per_worker", "processes", "slurm", "poll", "wait_timeout", "admm")

#: ``backend=auto`` starts a local Dask cluster from this many rows on: below it the workers' start
#: (seconds) and per-message latency cost more than they save.  Measured (results/bench/dspl_scaling_*,
#: p = 50, 2 workers): Dask slower than serial at 2·10^5 and 10^6 rows, 1.13x faster at 10^7.
AUTO_DASK_ROWS = 10_000_000


def resolve_backend(backend: str, cluster: dict[str, Any] | None, n_rows: int) -> str:
    """The backend ``auto`` stands for: ``dask`` for a given cluster or big data, else ``serial``.

    A cluster is given by ``cluster.address`` (an existing scheduler) or ``cluster.slurm``; without
    one, Dask's LocalCluster is used from :data:`AUTO_DASK_ROWS` training rows on.  Both backends give
    the same numbers, so the choice changes the time only.  ``serial`` and ``dask`` are kept as given.
    """
    if backend != "auto":
        return backend
    cluster = dict(cluster or {})
    if cluster.get("address") or cluster.get("slurm") is not None or n_rows >= AUTO_DASK_ROWS:
        return "dask"
    return "serial"


def quiet_dask_logs() -> None:
    """Dask's INFO lines (scheduler, nanny, worker start) to WARNING: they would drown the run's output."""
    import logging

    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core",
                 "distributed.worker", "distributed.http.proxy"):  # fmt: skip
        logging.getLogger(name).setLevel(logging.WARNING)


def make_backend(
    backend: str = "dask", cluster: dict[str, Any] | None = None, n_rows: int = 0
) -> SerialBackend | DaskBackend:
    """Build the backend named ``backend`` (``serial``, ``dask`` or ``auto``) with ``cluster`` options.

    ``auto`` is resolved by :func:`resolve_backend` from ``cluster`` and ``n_rows`` (the training rows).
    """
    cluster = dict(cluster or {})
    backend = resolve_backend(backend, cluster, n_rows)
    if backend == "serial":
        return SerialBackend()
    if backend == "dask":
        quiet_dask_logs()
        unknown = set(cluster) - set(CLUSTER_KEYS)
        if unknown:
            raise ConfigError(f"unknown DSPL cluster option(s) {sorted(unknown)}; valid: {sorted(CLUSTER_KEYS)}")
        return DaskBackend(**cluster)
    raise ConfigError(f"unknown DSPL backend {backend!r}; valid: auto, dask, serial")

