"""DSPL batch hosts: aligned batches, the duals alpha_i kept on the hosts, the bytes of an ADMM message."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve

from spl_bench.data.synthetic import make_dspl_regression
from spl_bench.methods.dspl import DaskBackend, SerialBackend, dspl_solve
from spl_bench.methods.dspl_backends import Batch, BatchHost


def misaligned(a: np.ndarray, offset: int = 4) -> np.ndarray:
    """A copy of ``a`` whose data start ``offset`` bytes past an 8-byte boundary (as Dask can deliver them)."""
    raw = np.empty(a.nbytes + 16, dtype=np.uint8)
    start = (-raw.ctypes.data) % 8 + offset
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def test_a_misaligned_batch_is_copied_an_aligned_one_is_kept():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    Xm, ym = misaligned(X), misaligned(y, 2)
    assert not Xm.flags.aligned and not ym.flags.aligned
    host = BatchHost([0, 1], Batch(Xm, ym), Batch(X, y))
    (b0, b1) = host.batches
    assert b0.X.flags.aligned and b0.y.flags.aligned and b0.X.flags.c_contiguous
    np.testing.assert_array_equal(b0.X, X)
    np.testing.assert_array_equal(b0.y, y)
    assert b1.X is X and b1.y is y  # no copy of what is aligned already
    # the same Gram matrix either way
    host.gram()
    np.testing.assert_array_equal(host.G[0], host.G[1])


def test_w_step_repeats_the_clients_dual_update_and_takes_z_as_bytes():
    rng = np.random.default_rng(1)
    batches = [Batch(rng.normal(size=(30, 4)), rng.normal(size=30)) for _ in range(2)]
    host = BatchHost([0, 1], *batches)
    host.gram()
    host.factor(rho=3.0)
    z0, z1 = rng.normal(size=4), rng.normal(size=4)
    W0 = np.frombuffer(host.w_step(z0.tobytes(), rho=3.0)).reshape(2, 4)  # first iteration: alpha = 0
    W1 = np.frombuffer(host.w_step(z1, rho=3.0, dual_rho=2.5)).reshape(2, 4)
    # independent: eq. (7) with the client's alpha after its dual update alpha += rho (W - z)
    alpha = np.zeros((2, 4)) + 2.5 * (W0 - z1)
    for i, batch in enumerate(batches):
        G = 2.0 * batch.X.T @ batch.X
        b = 2.0 * batch.X.T @ batch.y
        np.testing.assert_allclose(W0[i], np.linalg.solve(G + 3.0 * np.eye(4), b + 3.0 * z0), rtol=1e-10)
        c = cho_factor(host.G[i] + 3.0 * np.eye(4), lower=True)
        np.testing.assert_array_equal(W1[i], cho_solve(c, host.b[i] - alpha[i] + 3.0 * z1))
    np.testing.assert_array_equal(host.alpha, alpha)


@pytest.mark.parametrize("adaptive", [False, True])
def test_the_hosts_alpha_is_the_clients_alpha_to_the_bit(adaptive):
    d = make_dspl_regression(300, 5, 0.3, n_batches=3, rng=4)
    be = SerialBackend()
    res = dspl_solve(d.batches(), be, max_outer=6, adaptive_rho=adaptive, rho=40.0 if adaptive else "auto")
    host, last = be.hosts[0], res.history[-1]
    np.testing.assert_array_equal(host.w, res.W)
    # the host makes the last dual update at its next w_step; made here, it is the client's alpha (an
    # ADMM solve that converged returns before residual balancing: its last dual update used last.rho)
    assert last.admm_converged
    np.testing.assert_array_equal(host.alpha + last.rho * (host.w - res.z), res.alpha)


def test_echo_is_a_bare_round_trip_to_every_host():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, DaskBackend(address=cluster.scheduler_address) as be:
        be.place([Batch(np.eye(2), np.ones(2)) for _ in range(3)])
        z = np.arange(4.0).tobytes()
        assert be.call("echo", x=z) == [z, z]
        assert be.call("echo") == [None, None]


def test_every_batch_held_by_a_worker_process_is_aligned():
    # a worker process receives its batches as views into message frames (the first one was 1 to 4 bytes
    # off an 8-byte boundary on every worker before BatchHost made an aligned copy)
    pytest.importorskip("dask.distributed")
    d = make_dspl_regression(8 * 2000, 5, 0.3, n_batches=8, rng=2)

    def layout(dask_worker):  # type: ignore[no-untyped-def]
        return [(b.X.flags.aligned and b.X.flags.c_contiguous, b.y.flags.aligned)
                for host in dask_worker.state.actors.values() for b in host.batches]

    with DaskBackend(n_workers=2, threads_per_worker=1, processes=True) as be:
        be.place([Batch(X, y) for X, y in d.batches()])
        held = be.client.run(layout)
        assert sorted(len(v) for v in held.values()) == [4, 4]
        assert all(all(a) for v in held.values() for a in v)


def fit_arrays(batches: list, backend: SerialBackend | DaskBackend) -> dict[str, np.ndarray]:
    """What a DSPL fit gives back, as arrays: the model, every ``w_i``, ``alpha_i``, ``v`` and the history."""
    res = dspl_solve(batches, backend, lam0=0.1, mu=1.3, max_outer=8, store_v=True)
    out = {"z": res.z, "W": res.W, "alpha": res.alpha, "v": np.concatenate(res.v)}
    for name in ("objective", "lagrangian", "rho", "admm_iters", "n_selected"):
        out[name] = np.array([getattr(r, name) for r in res.history])
    return out


def test_worker_processes_give_the_in_process_numbers_to_the_bit_and_a_new_placement_frees_the_old():
    # batches sent to worker processes (serialised, received in message buffers, aligned there) must give
    # what the same hosts give on the arrays themselves (workers in this process), to the bit, on the
    # first placement and on a second one into the same workers, which must not keep the first's data
    distributed = pytest.importorskip("dask.distributed")
    d = make_dspl_regression([3000, 2500, 4001, 3500, 2999], 7, 0.3, rng=6)
    batches = d.batches()

    def held(dask_worker):  # type: ignore[no-untyped-def]
        return sum(len(host.batches) for host in dask_worker.state.actors.values())

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, DaskBackend(address=cluster.scheduler_address) as be:
        ref = fit_arrays(batches, be)
    with DaskBackend(n_workers=2, threads_per_worker=1, processes=True) as be:
        for _ in range(2):
            got = fit_arrays(batches, be)
            assert got.keys() == ref.keys()
            for name in ref:
                np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
            assert sorted(be.client.run(held).values()) == [2, 3]


@pytest.mark.parametrize(("adaptive", "inner_v"), [(False, False), (True, False), (False, True)])
def test_the_admm_on_the_client_is_the_admm_on_the_hosts_to_the_bit(adaptive, inner_v):
    """``admm="client"`` (the w-steps on the client's copies of the hosts' G_i, b_i) against ``admm="hosts"``
    (every w-step a message to the workers): the same iterates, Lagrangians and weights, bit for bit, with
    residual balancing (refactorisations within a solve) and the v-step inside ADMM (new Gram matrices)."""
    distributed = pytest.importorskip("dask.distributed")
    d = make_dspl_regression(240, 4, 0.3, n_batches=5, rng=9)
    kw = {"max_outer": 5, "adaptive_rho": adaptive, "v_in_admm": inner_v, "rho": 30.0 if adaptive else "auto"}
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster:
        res = {}
        for admm in ("client", "hosts"):
            with DaskBackend(address=cluster.scheduler_address, admm=admm) as be:
                res[admm] = dspl_solve(d.batches(), be, **kw)
                assert be.admm_on == admm
    a, b = res["client"], res["hosts"]
    for x, y in ((a.z, b.z), (a.W, b.W), (a.alpha, b.alpha), (a.lagrangians, b.lagrangians)):
        np.testing.assert_array_equal(x, y)
    assert [h.admm_iters for h in a.history] == [h.admm_iters for h in b.history]
    assert [h.rho for h in a.history] == [h.rho for h in b.history]


def test_the_admm_goes_to_the_hosts_when_the_gram_matrices_are_large(monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from spl_bench.errors import ConfigError

    with pytest.raises(ConfigError, match="admm"):
        DaskBackend(admm="workers")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, DaskBackend(address=cluster.scheduler_address) as be:
        be.place([Batch(np.ones((3, 4)), np.ones(3)) for _ in range(3)])  # m p^2 = 48
        assert be.admm_on == "client"
        monkeypatch.setattr(DaskBackend, "CLIENT_ADMM_NUMBERS", 47)
        be.place([Batch(np.ones((3, 4)), np.ones(3)) for _ in range(3)])
        assert be.admm_on == "hosts"
