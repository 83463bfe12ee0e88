"""One road from a config to stored rows (issue 61): ``spl-bench run`` and the tables' sweep name a
cell alike, compose it alike, run it by one function and store it in one layout, read by one reader."""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from spl_bench.data import has_local_copy
from spl_bench.paths import config_dir, repo_root, rows_root
from spl_bench.report.tables import read_results
from spl_bench.rowfiles import config_hash, read_row_file, read_row_index, write_row_file
from spl_bench.rowstore import read_folder
from spl_bench.runner.app import apply_table_rules
from spl_bench.runner.cells import Cell, cell_hash, cell_name, compose_cell
from spl_bench.runner.cli import main
from spl_bench.runner.run_config import identity, plain

COMMITTED = sorted(glob.glob(str(rows_root() / "*" / "index.csv")))


@pytest.mark.skipif(not COMMITTED, reason="no committed rows in this checkout")
def test_the_cli_names_every_committed_cell_as_the_sweep_did():
    """Each index entry's overrides, named by ``cell_name`` in any order, give the cell the sweep wrote."""
    n = 0
    for path in COMMITTED:
        experiment = Path(path).parent.name.split("@")[0]
        for entry in read_row_index(path).itertuples():
            overrides = str(entry.overrides).split()
            assert cell_name(overrides, experiment) == entry.cell
            assert cell_name([*reversed(overrides), "progress=false", "results_root=/x"], experiment) == entry.cell
            n += 1
    assert n > 500


def test_cell_names_leave_out_run_only_keys_and_sort_the_rest():
    assert cell_name([]) == "_default"
    assert cell_name(["protocol.n_runs=2", "method.blas_threads=2", "hydra.launcher.n_jobs=2"]) == "_default"
    assert cell_name(["noise.rate=0.2", "method=acs", "data=acs"]) == "data=acs,method=acs,noise.rate=0.2"
    # a path value: its last part and 6 hex digits of the whole (one short name per path)
    a, b = cell_name(["data.file=/a/very/long/x.csv"]), cell_name(["data.file=/b/x.csv"])
    assert a.startswith("data.file=x.csv~") and b.startswith("data.file=x.csv~") and a != b and len(a) == 22
    assert cell_name(["method=gaga", "+table_row=t2_music_n30"], "gaga_table2") == "table_row=t2_music_n30,method=gaga"


def _hydra_cfg(overrides: list[str]):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose("config", overrides=overrides)


def _by_hand_and_swept(table: str, given: list[str]):
    """Table ``table``'s cell ``given`` typed by hand (the CLI's table rules applied) and composed by the
    sweep: both configs (after checking they hash alike) and the rule overrides the CLI applied."""
    experiment = f"gaga_table{table}"
    cfg = _hydra_cfg([f"experiment={experiment}", *given])
    applied = apply_table_rules(cfg, experiment, given)
    sweep = compose_cell(Cell(table, experiment, tuple(given)))
    assert config_hash(identity(cfg)) == cell_hash(sweep)
    return cfg, applied, sweep


@pytest.mark.parametrize("on_step_rule", [None, frozenset({"2"}), frozenset()])
def test_a_gaga_table_cell_run_by_hand_is_the_committed_configuration(monkeypatch, on_step_rule):
    """``spl-bench run experiment=gaga_table2 ... method=gaga`` gets the candidate rule of the committed rows:
    the step rule's overrides while Table 2 is on it, none after (None: the registry as it is)."""
    from spl_bench.runner import cells

    if on_step_rule is not None:
        monkeypatch.setitem(cells.OLD_RULES, "gaga", (on_step_rule, cells.OLD_RULES["gaga"][1]))
    given = ["+table_row=t2_music_n30", "method=gaga"]
    cfg, applied, sweep = _by_hand_and_swept("2", given)
    assert bool(applied) == ("2" in cells.OLD_RULES["gaga"][0])
    assert str(cfg.method.candidates) == str(sweep.method.candidates)
    assert str(cfg.method.candidates) == ("steps" if applied else "critical_grid")
    index = rows_root() / "gaga_table2" / "index.csv"
    if on_step_rule is None and index.is_file():  # the committed rows' hash: an independent record of the sweep's
        committed = read_row_index(index).set_index("cell").loc["table_row=t2_music_n30,method=gaga", "config_hash"]
        assert config_hash(identity(cfg)) == committed
    # a key set on the command line wins over the table's rule
    cfg = _hydra_cfg(["experiment=gaga_table2", *given, "method.candidates=critical_grid"])
    apply_table_rules(cfg, "gaga_table2", [*given, "method.candidates=critical_grid"])
    assert str(cfg.method.candidates) == "critical_grid"


@pytest.mark.parametrize("on_model_fit", [None, frozenset()])
def test_a_mospl_table_cell_run_by_hand_is_the_committed_configuration(monkeypatch, on_model_fit):
    """``spl-bench run experiment=gaga_table11 model.params.C=1.0 method=mospl`` gets the full fit of the
    committed rows (the model's while Table 11 is in MOSPL_OLD_TABLES, the exact one after)."""
    from spl_bench.runner import cells

    if on_model_fit is not None:
        monkeypatch.setitem(cells.OLD_RULES, "mospl", (on_model_fit, cells.OLD_RULES["mospl"][1]))
    cfg, applied, sweep = _by_hand_and_swept("11", ["model.params.C=1.0", "method=mospl"])
    assert str(cfg.method.full_fit) == str(sweep.method.full_fit) == ("model" if applied else "exact")
    index = rows_root() / "gaga_table11" / "index.csv"
    if on_model_fit is None and index.is_file():  # the hash the committed MOSPL rows were made under
        committed = read_row_index(index).set_index("cell").loc["model.params.C=1.0,method=mospl", "config_hash"]
        assert config_hash(identity(cfg)) == committed


def test_two_seeds_by_hand_land_where_the_committed_cell_is(tmp_path):
    """The issue's check: same relative path under results_root as under results/rows, the same values."""
    args = ["experiment=gaga_table2", "+table_row=t2_music_n30", "method=original"]
    if not has_local_copy(plain(_hydra_cfg(args).data)):
        pytest.skip("needs the offline copy of music (../shared/datasets)")
    rel = Path("gaga_table2") / "table_row=t2_music_n30,method=original__8744f759a8fd.csv"
    committed = rows_root() / rel
    if not committed.is_file():
        pytest.skip("the committed row file is not in this checkout")
    assert main(["run", *args, f"results_root={tmp_path}", "protocol.n_runs=2", "progress=false",
                 "print_table=false"]) == 0  # fmt: skip
    mine = read_row_file(tmp_path / rel)
    theirs = read_row_file(committed).query("seed < 2").reset_index(drop=True)
    cols = ["seed", "metric", "lam", "n_train", "n_test", "n_corrupted", "config_hash"]
    pd.testing.assert_frame_equal(mine[cols], theirs[cols])
    # one BLAS thread in the sweep, the library's default here: sums may differ in the last bits
    assert (mine["value"] - theirs["value"]).abs().max() <= 1e-12
    # the one reader reads both folders alike
    assert set(read_folder(tmp_path / "gaga_table2")["cell"]) == {"table_row=t2_music_n30,method=original"}
    mine = read_row_index(tmp_path / "gaga_table2" / "index.csv").iloc[0]
    theirs = read_row_index(rows_root() / "gaga_table2" / "index.csv").set_index("cell").loc[mine["cell"]]
    assert (mine["overrides"], mine["config_hash"], mine["file"]) == (theirs["overrides"], theirs["config_hash"],
                                                                       theirs["file"])


def _old_layout(root: Path) -> pd.DataFrame:
    """A run folder as spl-bench run wrote it before the row store: rows/<hash>/run-NNN.csv."""
    run_dir = root / "e" / "method=acs,noise.rate=0.2"
    frames = []
    for seed in range(3):
        frame = pd.DataFrame([{
            "experiment": "e", "dataset": "d", "noise": "uniform_flip@0.2", "method": "acs", "model": "svm",
            "sp": "linear", "selection": "validation", "params": "{}", "seed": seed, "metric": m,
            "value": 0.1 * seed + (m == "accuracy"), "lam": 1.5, "candidate": '{"lam": 1.5}', "time_s": 2.0,
            "config_hash": "abc123abc123"} for m in ("accuracy", "selection_accuracy")])  # fmt: skip
        write_row_file(frame, run_dir / "rows" / "abc123abc123" / f"run-{seed:03d}.csv")
        frames.append(frame)
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "overrides.yaml").write_text("- noise.rate=0.2\n- method=acs\n")
    return pd.concat(frames, ignore_index=True)


def test_the_migration_moves_old_run_folders_values_unchanged(tmp_path):
    before = _old_layout(tmp_path)
    with pytest.raises(Exception, match="migrate_run_folders"):
        read_results([tmp_path])
    script = repo_root() / "scripts" / "migrate_run_folders.py"
    if not script.is_file():
        pytest.skip("scripts/ is not in this installation")
    run = [sys.executable, str(script), str(tmp_path)]
    assert subprocess.run([*run, "--check"], capture_output=True, text=True, timeout=120).returncode == 0
    assert not (tmp_path / "e" / "index.csv").exists()  # --check writes nothing
    out = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    moved = tmp_path / "e" / "method=acs,noise.rate=0.2__abc123abc123.csv"
    after = read_row_file(moved)
    cols = list(before.columns)
    pd.testing.assert_frame_equal(after[cols], before[cols], check_dtype=False)
    pd.testing.assert_frame_equal(read_results([tmp_path])[cols], before[cols], check_dtype=False)
    again = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert "0 old run folder(s)" in again.stdout  # the old rows/ was renamed: nothing to do twice
    shutil.rmtree(tmp_path / "e")


@pytest.mark.parametrize("on_step_rule", [frozenset({"2"}), frozenset({"2@authors_protocol"})])
def test_a_variants_gaga_cell_run_by_hand_gets_the_variants_rule(monkeypatch, on_step_rule):
    """With the authors' protocol typed on the command line, a GAGA cell of Table 2 follows the rule of
    that variant's cells (``"2@authors_protocol"``), and composes to the sweep's configuration of it."""
    from spl_bench.runner import cells
    from spl_bench.runner.cells import variant_of
    from spl_bench.table_registry import PROTOCOL_VARIANTS

    monkeypatch.setitem(cells.OLD_RULES, "gaga", (on_step_rule, cells.OLD_RULES["gaga"][1]))
    typed = list(PROTOCOL_VARIANTS["authors_protocol"]["regression"])  # music is a regression data set
    assert variant_of(typed, "regression") == "authors_protocol"
    assert variant_of(["noise=gaussian_shift"], "regression") == "authors"
    assert variant_of(["method=gaga"], "regression") == ""
    given = ["+table_row=t2_music_n30", "method=gaga"]
    cfg = _hydra_cfg(["experiment=gaga_table2", *given, *typed])
    applied = apply_table_rules(cfg, "gaga_table2", [*given, *typed])
    assert bool(applied) == ("2@authors_protocol" in on_step_rule)
    sweep = compose_cell(Cell("2", "gaga_table2", tuple(given), "authors_protocol"))
    assert config_hash(identity(cfg)) == cell_hash(sweep)
