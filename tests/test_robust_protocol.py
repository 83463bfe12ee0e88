"""The robust baselines inside the evaluation protocol (split, noise, grid selection, test metric)."""

from __future__ import annotations

import numpy as np

from spl_bench.data import Dataset
from spl_bench.methods.original import Original
from spl_bench.methods.robust.huber_lasso import HuberLassoMethod
from spl_bench.methods.robust.lssvm import RLSSVMMethod
from spl_bench.methods.robust.robust_svm import RobustSVMMethod
from spl_bench.protocol import NoiseConfig, ProtocolConfig, run_once


def linear_dataset(n: int = 300, d: int = 8) -> Dataset:
    rng = np.random.default_rng(11)
    X = rng.standard_normal((n, d))
    y = X @ np.r_[1.5, -1.0, 0.8, np.zeros(d - 3)] + 0.1 * rng.standard_normal(n)
    return Dataset("toy_linear", X, y, "regression")


def test_huber_lasso_and_rlssvm_beat_the_lasso_in_the_protocol() -> None:
    ds = linear_dataset()
    protocol = ProtocolConfig(n_runs=1)
    noise = NoiseConfig(kind="dspl_uniform", rate=0.3)
    err = {"lasso": [], "huber": [], "rlssvm": []}
    for run in range(1):
        makers = {
            "lasso": lambda: Original(model="lasso", model_params={"alpha": 0.01}),
            "huber": lambda: HuberLassoMethod(model="lasso", alpha=[0.001, 0.01], epsilon=[0.1, 0.3]),
            "rlssvm": lambda: RLSSVMMethod(gamma=[1.0, 10.0], sigma=[2.0], max_train=150),
        }
        for key, make in makers.items():
            out = run_once(ds, make, protocol, noise, run)
            assert np.isfinite(out.value) and out.n_corrupted > 0
            err[key].append(out.value)
            if key == "huber":
                assert out.candidate in make().grid()
    assert np.mean(err["huber"]) < 0.5 * np.mean(err["lasso"])
    assert np.mean(err["rlssvm"]) < np.mean(err["lasso"])


def test_robust_svm_runs_in_the_protocol_with_flipped_labels() -> None:
    rng = np.random.default_rng(12)
    t = rng.choice([-1.0, 1.0], 240)
    X = rng.standard_normal((240, 4)) + t[:, None] * np.array([1.0, 1.0, 0.0, 0.0])
    ds = Dataset("toy_blobs", X, t, "classification")
    out = run_once(ds, lambda: RobustSVMMethod(model="svm", C=1.0, gamma=[0.5, 1.0], mu=[0.1, 0.3],
                                               gamma_units="scale"),
                   ProtocolConfig(n_runs=1), NoiseConfig(kind="uniform_flip", rate=0.3), 0)  # fmt: skip
    assert out.metric == "accuracy" and out.value > 0.8
    assert set(out.candidate) == {"C", "gamma", "mu"}
