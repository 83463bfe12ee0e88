"""Runner: the CLI end to end, resume after a kill, determinism, clear errors, report tables."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from spl_bench.report.tables import paper_table, read_results, summarize, write_report
from spl_bench.rowfiles import read_row_file
from spl_bench.runner.cli import main

QUICK = ["protocol.n_runs=3", "progress=false", "print_table=false"]


def cli(tmp_path, *overrides: str) -> int:
    return main(["run", f"results_root={tmp_path}", *QUICK, *overrides])


def cell_files(root) -> list:
    """The row files of the row store under ``root`` (``<exp>/<cell>__<hash>.csv``; not damaged/ or stale/)."""
    return sorted(f for f in root.glob("*/*__*.csv"))


def results_of(tmp_path) -> pd.DataFrame:
    files = cell_files(tmp_path)
    assert len(files) == 1, files
    return read_row_file(files[0])


def test_run_writes_tidy_rows(tmp_path):
    assert cli(tmp_path, "method=acs", "data=diabetes", "method.lam_step=2.0") == 0
    frame = results_of(tmp_path)
    main_rows = frame[frame.metric == "gen_error"]
    assert list(main_rows.seed) == [0, 1, 2]
    assert {"experiment", "dataset", "noise", "method", "params", "lam", "time_s", "code_version"} <= set(frame)
    assert main_rows.value.between(0, 10).all() and main_rows.lam.notna().all()


def test_original_svm_on_breast_cancer(tmp_path):
    assert cli(tmp_path, "method=original", "data=breast_cancer", "model=svm") == 0
    frame = results_of(tmp_path)
    acc = frame[frame.metric == "accuracy"].value
    assert len(acc) == 3 and acc.between(0.5, 1.0).all()


def test_resume_after_kill_and_identical_numbers(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    args = ("method=acs", "data=diabetes", "method.lam_step=3.0")
    assert cli(a, *args) == 0
    first = results_of(a)
    (path,) = cell_files(a)
    # a kill after run 0: the file was last written whole with seed 0 only
    from spl_bench.rowfiles import write_row_file

    write_row_file(first[first.seed == 0], path)
    assert cli(a, *args) == 0
    resumed = results_of(a)
    # seed 0 was not recomputed (its fit time is the one written first), seeds 1-2 were
    assert resumed[resumed.seed == 0].time_s.tolist() == first[first.seed == 0].time_s.tolist()
    assert len(resumed) == len(first)  # no row lost or duplicated
    cols = ["seed", "metric", "value", "lam"]
    pd.testing.assert_frame_equal(resumed[cols], first[cols])
    # same config and seeds in a fresh folder: identical numbers
    assert cli(b, *args) == 0
    pd.testing.assert_frame_equal(results_of(b)[cols], first[cols])


def test_more_runs_extend_the_same_folder(tmp_path):
    assert main(["run", f"results_root={tmp_path}", "protocol.n_runs=1", "progress=false", "print_table=false",
                 "method=original", "data=diabetes"]) == 0  # fmt: skip
    assert cli(tmp_path, "method=original", "data=diabetes") == 0
    assert sorted(results_of(tmp_path).seed.unique()) == [0, 1, 2]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data=breast_cancer"], "model 'lasso' is for regression"),
        (["model.params.alpha=-1"], "alpha"),
        (["model=svm", "data=breast_cancer", "model.params.C=0"], "C must be"),
        (["model=svm", "data=breast_cancer", "model.params.gamma=-2"], "gamma"),
        (["method.lam_min=5", "method.lam_max=1"], "smaller than lam_max"),
        (["protocol.selection=train"], "protocol.selection"),
        (["data=nomao", "model=svm", "data.root=/nonexistent", "data.openml_id=null"], "not found"),
        (["protocol.test_size=1.0"], "test_size"),
    ],
)
def test_bad_input_gives_clear_error_without_traceback(tmp_path, capsys, overrides, message):
    with pytest.raises(SystemExit) as exc:
        cli(tmp_path, *overrides)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_unknown_names_list_valid_options(tmp_path):
    for override, valid in (("method=nope", "acs"), ("data=nope", "music"), ("model=nope", "lasso")):
        proc = subprocess.run(
            [sys.executable, "-m", "spl_bench.runner.cli", "run", f"results_root={tmp_path}", override],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode != 0
        group = override.split("=")[0]
        assert f"unknown {group} 'nope'; valid:" in proc.stderr and valid in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_sweep_with_joblib_launcher_composes(tmp_path):
    from hydra import compose, initialize_config_dir

    from spl_bench.paths import config_dir

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=["hydra/launcher=joblib", "method=original"], return_hydra_config=True)
        assert "joblib" in cfg.hydra.launcher._target_.lower()
        cfg = compose("config", overrides=["hydra/launcher=submitit_slurm"], return_hydra_config=True)
        assert "submitit" in cfg.hydra.launcher._target_.lower()


SWEEP = ["method=original", "data=diabetes", "protocol.n_runs=2", "noise.rate=0.1,0.3",
         "progress=false", "print_table=false"]  # fmt: skip
# everything a row carries except the wall-clock time
VALUE_COLS = ["experiment", "dataset", "noise", "method", "params", "seed", "metric", "value", "lam", "candidate",
              "n_train", "n_test", "n_corrupted", "info", "config_hash"]  # fmt: skip


def sweep_rows(root) -> pd.DataFrame:
    files = cell_files(root)
    assert len(files) == 2, files  # one cell per noise rate
    frames = [read_row_file(f).assign(cell=f.name.split("__")[0]) for f in files]
    return pd.concat(frames).sort_values(["cell", "seed", "metric"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def serial_sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("serial")
    assert main(["run", "-m", f"results_root={root}", *SWEEP]) == 0
    return sweep_rows(root)


@pytest.mark.parametrize("launcher", [["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                                      ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"]],
                         ids=["joblib", "submitit_local"])  # fmt: skip
def test_parallel_launchers_give_the_serial_rows_bit_for_bit(tmp_path, serial_sweep, launcher):
    """The task is pickled to other processes (it used to drag the module's rich console along)."""
    assert main(["run", "-m", f"results_root={tmp_path}", *SWEEP, *launcher]) == 0
    rows = sweep_rows(tmp_path)
    assert len(rows) == len(serial_sweep) == 2 * 2 * 2  # cells x seeds x (metric, selection metric)
    pd.testing.assert_frame_equal(rows[["cell", *VALUE_COLS]], serial_sweep[["cell", *VALUE_COLS]],
                                  check_exact=True)  # fmt: skip


def test_report_tables_match_numpy(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for method in ("acs", "original"):
        for seed in range(5):
            rows.append({"experiment": "e", "dataset": "d", "noise": "n", "method": method, "model": "lasso",
                         "sp": "-" if method == "original" else "linear", "selection": "validation",
                         "config_hash": method, "seed": seed, "metric": "gen_error",
                         "value": rng.normal(), "time_s": 1.0, "n_restarts": None})  # fmt: skip
    frame = pd.DataFrame(rows)
    (tmp_path / "x").mkdir()
    frame.to_csv(tmp_path / "x" / "results.csv", index=False)  # a plain results CSV (no trailer)
    read = read_results([tmp_path / "x" / "results.csv"])
    summ = summarize(read)
    acs = frame[frame.method == "acs"].value
    row = summ[summ.method_label == "acs"].iloc[0]
    assert row["mean"] == pytest.approx(acs.mean()) and row["std"] == pytest.approx(acs.std(ddof=1))
    table = paper_table(summ)
    assert table.loc[0, "acs"] == f"{acs.mean():.3f} ± {acs.std(ddof=1):.3f}"
    written = write_report(read, tmp_path / "out")
    assert all(p.is_file() for p in written)
    assert main(["report", str(tmp_path / "x" / "results.csv"), "--out", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "table_gen_error.png").is_file()


def test_save_paths_writes_the_paths_the_selection_used(tmp_path):
    """``save_paths=true``: each run's fitted path is written, and the selected candidate is on it."""
    import json

    from spl_bench.gaga import AgePath
    from spl_bench.methods.outlier_path import OutlierPathResult

    assert cli(tmp_path / "g", "method=gaga", "data=diabetes", "method.lam_max=3.0", "save_paths=true") == 0
    frame = results_of(tmp_path / "g")
    files = sorted((tmp_path / "g").rglob("age_path.npz"))
    assert [f.parent.name for f in files] == ["run00", "run01", "run02"]
    lams = frame[frame.metric == "gen_error"].sort_values("seed").lam.to_numpy()
    for f, lam in zip(files, lams, strict=True):
        path = AgePath.load(f)
        assert path.lambdas[0] == pytest.approx(0.1) and path.lambdas[-1] == pytest.approx(3.0)
        assert path.lambdas[0] <= lam <= path.lambdas[-1]

    assert cli(tmp_path / "o", "experiment=outlier_path_table3", "data=breast_cancer",
               "method.C_grid=[0.1,1.0]", "save_paths=true") == 0  # fmt: skip
    frame = results_of(tmp_path / "o")
    for _, row in frame[frame.metric == "accuracy"].iterrows():
        cand = json.loads(row.candidate)
        run_dir = next((tmp_path / "o").rglob(f"paths/run{int(row.seed):02d}"))
        assert len(list(run_dir.glob("op_theta_C=*.npz"))) == 2
        res = OutlierPathResult.load(run_dir / f"op_theta_C={cand['C']:g}.npz")
        assert np.min(np.abs(res.params - cand["theta"])) <= 1e-12


# ----------------------------------------------------------------------------- one configuration per folder
def _run_with_configs(config_path, tmp_path, monkeypatch, *overrides: str) -> int:
    """``spl-bench run`` over another copy of ``configs/`` (a config file edited between two runs)."""
    import hydra

    from spl_bench.runner.app import task

    monkeypatch.setattr(sys, "argv", ["spl-bench run", f"results_root={tmp_path}", *QUICK, *overrides])
    try:
        hydra.main(version_base="1.3", config_path=str(config_path), config_name="config")(task)()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_changed_config_default_is_kept_apart_then_replaced(tmp_path, monkeypatch, capsys):
    """A default edited in a config file, the same command rerun: a second file, never pooled.

    The index names the new hash, the note says what differs; ``replace_stale=true`` moves the
    other hash's rows to ``stale/``.
    """
    import shutil

    from spl_bench.paths import config_dir
    from spl_bench.rowfiles import read_row_index

    args = ("method=original",)
    assert cli(tmp_path, *args) == 0
    exp = tmp_path / "default"
    (old_file,) = cell_files(tmp_path)
    old_hash = old_file.stem.split("__")[1]
    first = read_row_file(old_file)
    edited = tmp_path / "configs"
    shutil.copytree(config_dir(), edited)
    lasso = edited / "model" / "lasso.yaml"
    lasso.write_text(lasso.read_text().replace("alpha: 0.005", "alpha: 0.05"))
    capsys.readouterr()

    assert _run_with_configs(edited, tmp_path, monkeypatch, *args) == 0
    flat = " ".join(capsys.readouterr().err.split())
    assert f"also has rows of config hash {old_hash} (3 seeds; differs in model.params.alpha: 0.005 there, " \
           "0.05 now)" in flat
    assert "not pooled" in flat and "replace_stale=true" in flat
    files = cell_files(tmp_path)
    assert len(files) == 2 and old_file in files
    pd.testing.assert_frame_equal(read_row_file(old_file), first)  # untouched
    new_hash = next(f for f in files if f != old_file).stem.split("__")[1]
    index = read_row_index(exp / "index.csv")
    assert index.config_hash.tolist() == [new_hash]
    # the report reads the index's hash only: one configuration, 3 runs, the new alpha
    now = read_results([tmp_path / "default"])
    assert set(now.config_hash) == {new_hash} and sorted(now.seed.unique()) == [0, 1, 2]
    assert list(paper_table(summarize(now))["runs"]) == [3]

    assert _run_with_configs(edited, tmp_path, monkeypatch, *args, "replace_stale=true") == 0
    assert [f.name for f in cell_files(tmp_path)] == [f"method=original__{new_hash}.csv"]
    assert (exp / "stale" / old_file.name).is_file() and (exp / "stale" / f"{old_file.stem}.json").is_file()


def test_replace_stale_must_be_a_boolean(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli(tmp_path, "method=original", "replace_stale=maybe")
    assert exc.value.code == 2
    assert "replace_stale must be true or false" in capsys.readouterr().err


def test_a_damaged_row_file_is_set_aside_and_its_seeds_rerun(tmp_path, capsys):
    """A cut row file never counts: the next run moves it to damaged/ and runs its seeds again."""
    assert cli(tmp_path, "method=original") == 0
    (path,) = cell_files(tmp_path)
    whole = read_row_file(path)
    path.write_bytes(path.read_bytes()[:-40])  # cut short
    capsys.readouterr()
    assert cli(tmp_path, "method=original") == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "damaged:" in err and "its runs are run again" in err
    moved = tmp_path / "default" / "damaged" / path.name
    assert moved.is_file() and "cut short" in moved.with_name(f"{path.name}.reason.txt").read_text()
    cols = ["seed", "metric", "value", "lam"]
    pd.testing.assert_frame_equal(read_row_file(path)[cols], whole[cols])


def test_one_configuration_reached_by_two_commands_has_one_file(tmp_path, capsys):
    """``data=diabetes`` is the default: its rows continue in the file of the no-override run."""
    assert main(["run", f"results_root={tmp_path}", "protocol.n_runs=1", "progress=false", "print_table=false",
                 "method=acs", "method.lam_step=2.0"]) == 0  # fmt: skip
    capsys.readouterr()
    assert cli(tmp_path, "method=acs", "method.lam_step=2.0", "data=diabetes") == 0
    assert "same configuration" in capsys.readouterr().err
    (path,) = cell_files(tmp_path)
    assert path.name.startswith("method=acs,method.lam_step=2.0__")
    assert sorted(read_row_file(path).seed.unique()) == [0, 1, 2]


def test_no_override_run_is_the_default_cell(tmp_path):
    """``<exp>/_default__<hash>.csv`` holds the no-override run; Hydra's folders go under logs/."""
    assert main(["run", f"results_root={tmp_path}", "protocol.n_runs=1", "progress=false", "print_table=false"]) == 0
    assert cli(tmp_path, "method=original") == 0
    exp = tmp_path / "default"
    assert [f.name.split("__")[0] for f in cell_files(tmp_path)] == ["_default", "method=original"]
    assert sorted(p.name for p in (exp / "logs").iterdir()) == ["_default", "method=original"]
    own = read_row_file(next(f for f in cell_files(tmp_path) if f.name.startswith("_default")))
    assert set(own.method) == {"acs"} and sorted(own.seed.unique()) == [0]
    assert set(read_results([exp]).method) == {"acs", "original"}
    assert main(["report", str(tmp_path)]) == 0


def test_path_and_run_prepare_the_same_data(tmp_path, capsys):
    """`spl-bench path` fits the path `spl-bench run method=gaga` fits in run 0 (one protocol preparation)."""
    import json

    from spl_bench.runner.cli import main

    assert main(["run", f"results_root={tmp_path / 'r'}", "method=gaga", "data=diabetes", "protocol.n_runs=1",
                 "method.lam_max=3", "progress=false", "print_table=false"]) == 0  # fmt: skip
    rows = results_of(tmp_path / "r").set_index("metric")
    capsys.readouterr()
    assert main(["path", "data=diabetes", "lam_max=3", f"out={tmp_path / 'p'}", "progress=false"]) == 0
    summary = json.loads((tmp_path / "p" / "diabetes_lasso_linear_summary.json").read_text())
    assert summary["turning"] == rows.loc["gen_error", "n_critical_turning"]
    assert summary["jump"] == rows.loc["gen_error", "n_critical_jump"]
    assert summary["n_restarts"] == rows.loc["gen_error", "n_restarts"]
    # run chooses among more candidates (every critical point + 400 ages) than path's 300-age grid
    best_run = rows.loc["selection_gen_error", "value"]
    assert best_run - 1e-12 <= summary["validation_error"] <= best_run + 1e-3
