"""The robust-baseline method configs and the GAGA Tables 7-16 experiment configs compose.

Each sweep cell of every table is composed with Hydra and its swept value read back from
the resolved config; row counts are those of the paper's tables.  The method ``gaga`` is
another engineer's config, so cells are composed with the robust methods or ``acs``.
"""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from spl_bench.methods.robust.huber_lasso import HuberLassoMethod
from spl_bench.methods.robust.lssvm import ReLSSVMMethod, RLSSVMMethod
from spl_bench.methods.robust.robust_svm import RobustSVMMethod
from spl_bench.paths import config_dir
from spl_bench.runner.run_config import estimator_factory

#: table -> (swept key, number of rows in the paper's table)
SENSITIVITY = {
    9: ("model.params.alpha", 15),
    10: ("model.params.alpha", 30),
    11: ("model.params.C", 19),
    12: ("model.params.C", 18),
    13: ("noise.rate", 8),
    14: ("noise.rate", 8),
    15: ("noise.rate", 7),
    16: ("noise.rate", 7),
}


def compose_cfg(overrides: list[str], hydra_cfg: bool = False):
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=hydra_cfg)


def sweep_params(table: int) -> dict[str, list[str]]:
    cfg = compose_cfg([f"experiment=gaga_table{table}"], hydra_cfg=True)
    return {k: str(v).split(",") for k, v in cfg.hydra.sweeper.params.items()}


def test_table7_cells_build_the_robust_regressors() -> None:
    sweep = sweep_params(7)
    assert set(sweep["method"]) == {"huber_lasso", "rlssvm", "relssvm", "gaga"}
    assert len(sweep["data"]) * len(sweep["noise.rate"]) == 24
    alphas = {"ailerons": 0.006, "houses": 0.005, "music": 0.006, "delta_elevators": 0.005}
    assert set(sweep["data"]) == set(alphas)
    cls = {"huber_lasso": HuberLassoMethod, "rlssvm": RLSSVMMethod, "relssvm": ReLSSVMMethod}
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        for (data, alpha), method in zip(alphas.items(), ["huber_lasso", "rlssvm", "relssvm", "huber_lasso"],
                                         strict=True):  # fmt: skip
            cfg = compose("config", overrides=["experiment=gaga_table7", f"data={data}", "noise.rate=0.4",
                                               f"method={method}"])  # fmt: skip
            assert cfg.model.name == "lasso" and cfg.sp.name == "linear" and cfg.noise.rate == 0.4
            assert OmegaConf.to_container(cfg.model, resolve=True)["params"]["alpha"] == alpha
            est = estimator_factory(cfg)()
            assert type(est) is cls[method] and est.model_params == {"alpha": alpha}
            assert len(est.grid()) > 1


def test_table7_grids_cover_the_reported_hyperparameters() -> None:
    """Table 7's chosen (e, alpha), (sigma, gamma_1), (theta, gamma_2) lie inside the grids' ranges."""
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        hl, rl, re = (estimator_factory(compose("config", overrides=["experiment=gaga_table7", f"method={m}"]))()
                      for m in ("huber_lasso", "rlssvm", "relssvm"))  # fmt: skip
    for values, lo, hi in [
        (hl.epsilon, 0.1, 0.3),
        (hl.alpha, 0.0001, 0.0019),
        (rl.sigma, 0.5, 1.0),
        (rl.gamma, 1.7, 1.9),
        (re.theta, 0.2, 0.9),
        (re.gamma, 1.7, 1.9),
    ]:
        assert min(values) <= lo and max(values) >= hi


def test_table8_cells_build_robust_svm_with_c_one() -> None:
    sweep = sweep_params(8)
    assert sweep == {"data": ["mfeat_pixel", "pendigits"], "noise.rate": ["0.1", "0.2", "0.3"],
                     "method": ["robust_svm", "gaga"]}  # fmt: skip
    cfg = compose_cfg(["experiment=gaga_table8", "data=pendigits", "noise.rate=0.2", "method=robust_svm"])
    assert cfg.model.name == "svm" and cfg.model.params.C == 1.0 and cfg.model.params.kernel == "linear"
    est = estimator_factory(cfg)()
    assert isinstance(est, RobustSVMMethod)
    grid = est.grid()
    assert {p["C"] for p in grid} == {1.0} and len(grid) == 16
    assert {p["gamma"] for p in grid} >= {0.2, 0.4, 0.6, 0.8}


@pytest.mark.parametrize("table", sorted(SENSITIVITY))
def test_sensitivity_sweeps_have_the_paper_rows(table: int) -> None:
    key, n_rows = SENSITIVITY[table]
    sweep = sweep_params(table)
    assert set(sweep) == {key, "method"}
    assert sweep["method"] == ["acs", "mospl", "gaga"]
    values = [float(v) for v in sweep[key]]
    assert len(values) == n_rows and values == sorted(values)
    for v in sweep[key][-1:]:
        cfg = compose_cfg([f"experiment=gaga_table{table}", f"{key}={v}", "method=acs"])
        assert OmegaConf.select(cfg, key) == pytest.approx(float(v))
        assert cfg.sp.name == "linear"
        if cfg.model.name == "svm":
            assert cfg.model.params.kernel == "linear"  # D.7: SVM with linear kernel
        if key != "noise.rate":
            assert cfg.noise.rate == 0.3
        estimator_factory(cfg)()
