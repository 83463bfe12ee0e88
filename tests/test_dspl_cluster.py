"""DSPL on Dask: batch hosts as actors, a killed worker, SLURM from config."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from spl_bench.data.synthetic import make_dspl_regression
from spl_bench.errors import ConfigError, SplBenchError
from spl_bench.methods.dspl import DaskBackend, SerialBackend, WorkerLostError, dspl_solve, make_backend, slurm_cluster
from spl_bench.methods.dspl_backends import Batch

pytest.importorskip("dask.distributed")


def test_hosts_hold_batches_i_mod_k_and_answer_in_batch_order():
    batches = [Batch(np.full((2, 1), float(i)), np.zeros(2)) for i in range(5)]
    with DaskBackend(n_workers=2, processes=False) as be:
        index = be.place(batches)
        assert index == [[0, 2, 4], [1, 3]] and len(be.hosts) == 2  # one actor per worker
        assert len(set(be._workers)) == 2
        # every host's v_i, joined back into batch order
        assert [len(v) for v in be.join(be.call("get_v"), 5)] == [2] * 5
        traces = be.join(be.call("gram"), 5)
        assert traces == [2.0 * 2 * i * i for i in range(5)]  # tr(2 X_i^T X_i) with X_i = i
        with pytest.raises(ValueError):
            be.join([[1, 2]], 5)  # a host answering for the wrong number of batches


def test_serial_backend_is_one_host_in_process():
    be = SerialBackend()
    index = be.place([Batch(np.eye(2), np.ones(2)) for _ in range(3)])
    assert index == [[0, 1, 2]] and be.call("gram") == [[4.0, 4.0, 4.0]]


def test_a_call_to_an_actor_distributed_reports_lost_is_a_worker_lost_error(monkeypatch):
    """The actor handle of a dead worker raises ``RuntimeError`` at the call itself (distributed's
    ``Actor.__getattr__`` once the actor's task has erred): the backend words it as the lost worker it
    is, and leaves a ``RuntimeError`` of a host whose worker is still there as it came."""
    class Erred:
        def __getattr__(self, name):
            raise RuntimeError("Worker holding Actor was lost.  Status: error")

    batches = [Batch(np.full((2, 1), float(i)), np.zeros(2)) for i in range(4)]
    with DaskBackend(n_workers=2, processes=False) as be:
        be.place(batches)
        be.hosts[1] = Erred()
        monkeypatch.setattr(be, "LOST_GRACE", 0.3)
        with pytest.raises(RuntimeError, match="Worker holding Actor was lost") as alive:
            be.call("get_v")  # the scheduler still has the worker and its actor: not a lost worker
        assert not isinstance(alive.value, WorkerLostError)
        monkeypatch.setattr(be, "_host_alive", lambda j: j != 1)
        with pytest.raises(WorkerLostError, match=r"holding batches \[1, 3\] was lost"):
            be.call("get_v")


def test_a_killed_worker_stops_the_run_with_one_clear_error():
    # worker processes, so that one can be killed; the run is long enough to be killed midway
    d = make_dspl_regression(20_000, 10, 0.3, n_batches=4, rng=1)
    with DaskBackend(n_workers=2, threads_per_worker=1, processes=True) as be:
        pids = be.client.run(os.getpid)
        victim = sorted(pids)[1]
        outcome: dict[str, object] = {}

        def run() -> None:
            try:
                outcome["result"] = dspl_solve(d.batches(), be, max_outer=100_000, eps_L=0.0)
            except Exception as e:  # noqa: BLE001 - the test inspects what came out
                outcome["error"] = e
            outcome["t_end"] = time.perf_counter()

        th = threading.Thread(target=run, daemon=True)
        th.start()
        deadline = time.perf_counter() + 20.0
        while len(be.hosts) < 2 and time.perf_counter() < deadline:  # batches placed: ADMM under way
            time.sleep(0.05)
        time.sleep(0.5)
        assert th.is_alive() and len(be.hosts) == 2, "the run ended before the worker could be killed"
        t_kill = time.perf_counter()
        os.kill(pids[victim], signal.SIGKILL)
        th.join(timeout=20.0)
        assert not th.is_alive(), "the run hung after its worker was killed"
        err = outcome.get("error")
        assert "result" not in outcome and isinstance(err, WorkerLostError), outcome
        assert isinstance(err, SplBenchError)  # the CLI prints it as one line, no traceback
        msg = str(err)
        assert "\n" not in msg and victim in msg and "[1, 3]" in msg
        assert outcome["t_end"] - t_kill < 10.0
        # the nanny restarts the worker; a new fit places the batches again and gets the serial answer
        be.client.wait_for_workers(2, timeout=30)
        small = make_dspl_regression(300, 4, 0.3, n_batches=3, rng=2).batches()
        kw = dict(lam0=0.3, mu=1.5, eps_r=1e-14, eps_s=1e-14)
        z_dask = dspl_solve(small, be, **kw).z
        z_serial = dspl_solve(small, SerialBackend(), **kw).z
        assert np.max(np.abs(z_dask - z_serial)) <= 1e-10


def test_slurm_cluster_from_the_config_group():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from spl_bench.paths import config_dir
    from spl_bench.runner.run_config import estimator_factory

    overrides = ["method=dspl", "+dspl_cluster@method.cluster=slurm", "method.cluster.slurm.queue=short",
                 "method.cluster.slurm.account=proj42", "method.cluster.slurm.cores=4",
                 "method.cluster.slurm.memory=16GB", "method.cluster.slurm.jobs=3",
                 "+method.cluster.slurm.job_extra_directives=[--exclusive]"]
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    cluster = OmegaConf.to_container(cfg.method.cluster, resolve=True)
    assert estimator_factory(cfg)().cluster == cluster  # what DSPL.fit hands to make_backend
    assert cluster["slurm"]["jobs"] == 3 and cluster["n_workers"] == 4
    assert set(cluster) <= {"address", "n_workers", "threads_per_worker", "processes", "slurm", "poll",
                            "wait_timeout", "admm"}
    c = slurm_cluster({**cluster["slurm"], "jobs": 0})  # build it, submit nothing
    try:
        script = c.job_script()
        for line in ("#SBATCH -p short", "#SBATCH -A proj42", "#SBATCH --cpus-per-task=4", "#SBATCH -t 01:00:00",
                     "#SBATCH --exclusive"):
            assert line in script.splitlines(), script
        assert "#SBATCH --mem=15G" in script and "--nthreads 4" in script
        assert c.scheduler_address in script  # the workers will join this cluster's scheduler
        assert len(c.worker_spec) == 0  # no job submitted
    finally:
        c.close()


def test_bad_cluster_options_are_config_errors():
    with pytest.raises(ConfigError, match="n_wrokers"):
        make_backend("dask", {"n_wrokers": 2})
    with pytest.raises(ConfigError, match="slurm"):
        slurm_cluster({"jobs": 0, "cpus": 4})
