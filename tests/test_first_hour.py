"""A newcomer's first hour (issue 64): the documented commands do what the README says, and the
mistakes people make get one clear line.  One test (or two) per numbered point of the issue; every
CLI test runs in a temporary folder on small data (diabetes, one or two runs)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from rich.console import Console

from spl_bench.paths import config_dir
from spl_bench.rowfiles import read_row_file
from spl_bench.runner import app
from spl_bench.runner.cli import main
from spl_bench.runner.run_config import identity

QUIET = ["progress=false", "print_table=false"]
REPO = config_dir().parent


def spl(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``spl-bench <args>``: (exit code, stdout, stderr); Hydra's and argparse's exits are codes too."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    """The single ``error: ...`` line of a refused command (and nothing else on stderr)."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def folders(root: Path) -> list[Path]:
    """Every folder under ``root`` (none when a refused command left nothing behind)."""
    return sorted(p for p in root.rglob("*") if p.is_dir()) if root.exists() else []


def wine_file(where: Path) -> Path:
    """scikit-learn's wine as a local data file whose class labels are text (barolo, grignolino, barbera)."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True, as_frame=True)
    frame = X.assign(target=y.map({0: "barolo", 1: "grignolino", 2: "barbera"}).to_numpy())
    where.mkdir(parents=True, exist_ok=True)
    frame.to_csv(where / "wine2.csv.gz", index=False)
    return where / "wine2.csv.gz"


def wine_run(path: Path, root: Path, *binarize: str) -> list[str]:
    """``spl-bench run`` of Original + SVM on ``path`` through a local data config, one run."""
    return ["run", f"results_root={root}", "data=australian", f"data.file={path}", "data.sha256=null",
            "model=svm", "method=original", "protocol.n_runs=1", *binarize, *QUIET]  # fmt: skip


# 1. DSPL's default backend ---------------------------------------------------------------------


def test_1_dspl_runs_in_process_on_small_data_with_progress(tmp_path, capsys):
    from spl_bench.methods.dspl_backends import AUTO_DASK_ROWS, resolve_backend

    assert resolve_backend("auto", {"address": None, "n_workers": 2}, 442) == "serial"
    assert resolve_backend("auto", {"address": "tcp://h:8786"}, 442) == "dask"
    assert resolve_backend("auto", {"slurm": {"jobs": 2}}, 442) == "dask"
    assert resolve_backend("auto", {}, AUTO_DASK_ROWS) == "dask"
    assert resolve_backend("dask", {}, 10) == "dask" and resolve_backend("serial", {}, 10**9) == "serial"
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        default = compose("config", overrides=["method=dspl"])
        serial = compose("config", overrides=["method=dspl", "method.backend=serial", "method.cluster.n_workers=4"])
    assert default.method.backend == "auto"
    assert identity(default) == identity(serial)  # where it runs is not what it computes
    code, _, err = spl(capsys, "run", f"results_root={tmp_path}", "method=dspl", "data=diabetes",
                       "protocol.n_runs=1", "method.max_outer=4", "print_table=false")  # fmt: skip
    assert code == 0, err
    assert "outer iteration" in err and "[INFO]" not in err and "distributed" not in err
    (results,) = tmp_path.rglob("*__*.csv")
    assert '"backend": "serial"' in read_row_file(results)["info"].iloc[0]


# 2. a table experiment without its row ----------------------------------------------------------


def test_2_a_table_experiment_needs_its_row_and_only_its_rows(tmp_path, capsys):
    code, _, err = spl(capsys, "run", f"results_root={tmp_path}", "experiment=gaga_table2", "method=original", *QUIET)
    line = one_line_error(err)
    assert code == 2 and "+table_row=<row>" in line and "t2_music_n30" in line and "-m" in line
    code, _, err = spl(capsys, "run", f"results_root={tmp_path}", "experiment=gaga_table7", "data=diabetes", *QUIET)
    assert code == 2 and "data=diabetes is not in experiment gaga_table7" in one_line_error(err)
    code, _, err = spl(capsys, "run", f"results_root={tmp_path}", "experiment=gaga_table2",
                       "+table_row=t3_music_n30", *QUIET)  # fmt: skip
    assert code == 2 and "not in experiment gaga_table2" in one_line_error(err)
    assert folders(tmp_path) == []  # nothing was run, nothing was created


# 3. the report's runs per method, and 10: one run ----------------------------------------------


def test_3_the_report_gives_the_runs_of_each_method(tmp_path, capsys):
    root = tmp_path / "runs"
    for method, n in (("original", 2), ("acs", 1)):
        args = ["run", f"results_root={root}", f"method={method}", f"protocol.n_runs={n}", *QUIET]
        assert spl(capsys, *args, *(["method.lam_step=5.0"] if method == "acs" else []))[0] == 0
    code, out, err = spl(capsys, "report", str(root / "default"), "--out", str(tmp_path / "t"), "--no-figure")
    assert code == 0, err
    table = pd.read_csv(tmp_path / "t" / "table.csv")
    assert table["runs"].tolist() == ["acs 1, original 2"]
    assert table["acs"].iloc[0].endswith(" (1 run)") and " ± " in table["original"].iloc[0]  # 10: no "± 0.000"
    assert "± 0.000" not in out


# 4. text class labels ---------------------------------------------------------------------------


def test_4_text_labels_binarise_or_say_what_to_set(tmp_path, capsys):
    path = wine_file(tmp_path)
    ok = wine_run(path, tmp_path / "a", "+data.binarize.kind=one_vs_rest", "+data.binarize.positive=barolo")
    code, _, err = spl(capsys, *ok)
    assert code == 0, err
    rows = read_row_file(next((tmp_path / "a").rglob("*__*.csv")))
    assert rows["value"].between(0.5, 1.0).all()
    code, _, err = spl(capsys, *wine_run(path, tmp_path / "b", "+data.binarize.kind=threshold",
                                         "+data.binarize.value=1"))  # fmt: skip
    assert code == 2 and "needs numeric labels" in one_line_error(err) and "one_vs_rest" in err
    code, _, err = spl(capsys, *wine_run(path, tmp_path / "c", "+data.binarize.kind=one_vs_rest",
                                         "+data.binarize.positive=merlot"))  # fmt: skip
    assert code == 2 and "barolo" in one_line_error(err)  # the labels there are, to choose from
    assert folders(tmp_path / "b") == [] and folders(tmp_path / "c") == []


# 5. absolute paths in overrides -----------------------------------------------------------------


def test_5_a_path_in_an_override_names_one_folder(tmp_path, capsys):
    assert app.job_dirname("+data.file=/some/dir/wine2.csv.gz,method=original").startswith("+data.file=wine2.csv.gz~")
    assert app.job_dirname("data.root=/a/x") != app.job_dirname("data.root=/b/x")  # one folder per path
    assert app.job_dirname("method=original") == "method=original" and app.job_dirname("") == "_default"
    root = tmp_path / "runs"
    path = wine_file(tmp_path / "some" / "dir")
    binarize = ["+data.binarize.kind=one_vs_rest", "+data.binarize.positive=barolo"]
    code, _, err = spl(capsys, *wine_run(path, root, *binarize))
    assert code == 0, err
    (results,) = root.rglob("*__*.csv")
    assert results.parent == root / "default"  # the row file: in the experiment folder, no folder per path part
    (job,) = (root / "default" / "logs").iterdir()  # Hydra's job folder: one level, named by the path's last part
    assert "data.file=wine2.csv.gz~" in job.name and (job / ".hydra").is_dir()
    assert spl(capsys, "run", f"results_root={root}", "method=original", "protocol.n_runs=1", *QUIET)[0] == 0
    assert spl(capsys, "report", str(root / "default"))[0] == 0  # two configurations, two cells
    assert len(list((root / "default").glob("*__*.csv"))) == 2
    code, _, err = spl(capsys, "run", f"results_root={root}", "+data.file=/x/wine2.csv.gz", *QUIET)
    assert code == 2 and "does not read data.file" in one_line_error(err)  # not silently diabetes


def test_5_a_long_path_in_an_override_names_the_row_file_by_its_last_part(tmp_path, capsys):
    root = tmp_path / "runs"
    path = wine_file(tmp_path / "some" / "deeper" / "folder" / "of" / "data" / "files")
    code, _, err = spl(capsys, *wine_run(path, root, "+data.binarize.kind=one_vs_rest",
                                         "+data.binarize.positive=barolo"))  # fmt: skip
    assert code == 0, err
    (results,) = root.rglob("*__*.csv")
    assert results.parent == root / "default" and "data.file=wine2.csv.gz~" in results.name


# 6. the path command speaks run's language ------------------------------------------------------


def test_6_path_takes_run_keys_help_and_writes_beside_runs(tmp_path, capsys, monkeypatch):
    from spl_bench.runner import path_cmd

    assert path_cmd._parse(["sp.params.gamma=0.5", "model.params.alpha=0.01", "noise.rate=0.2",
                            "method.lam_max=3", "protocol.base_seed=7", "lam_min=0.2"]) == {  # fmt: skip
        "sp_gamma": "0.5", "alpha": "0.01", "noise_rate": "0.2", "lam_max": "3", "seed": "7", "lam_min": "0.2"}
    code, out, _ = spl(capsys, "path", "--help")
    assert code == 0 and "usage: spl-bench path" in out and "sp.params.gamma" in out
    monkeypatch.chdir(tmp_path)
    code, _, err = spl(capsys, "path", "data=diabetes", "sp=mixture", "sp.params.gamma=0.5", "method.lam_max=0.6",
                       "progress=false")  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "runs" / "path" / "diabetes_lasso_mixture.npz").is_file()
    assert not (tmp_path / "results").exists()  # never the committed results tree


# 7. the README's override examples ---------------------------------------------------------------


def test_7_overrides_that_do_not_fit_the_config_get_one_line(tmp_path, capsys):
    for override, expected in (("model.params.C=2", "model 'lasso' has no parameter 'C'"),
                               ("data.root=/path/to/datasets", "bundled with scikit-learn"),
                               ("+model.params.alpah=0.01", "did you mean 'alpha'?"),
                               ("noise.rat=0.2", "did you mean 'rate'?")):  # fmt: skip
        code, _, err = spl(capsys, "run", f"results_root={tmp_path}", override, *QUIET)
        assert code == 2 and expected in one_line_error(err), (override, err)
    assert "svm" in spl(capsys, "run", f"results_root={tmp_path}", "model.params.C=2")[2]
    assert folders(tmp_path) == []


# 8. spl-bench datasets checks what it says ---------------------------------------------------------


def test_8_datasets_loads_each_file_before_saying_yes(tmp_path, capsys, monkeypatch):
    import gzip

    monkeypatch.setenv("SPL_BENCH_DATA_DIR", str(tmp_path))
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "target": [-1, 1, -1, 1]})
    frame.to_csv(tmp_path / "australian.csv.gz", index=False)  # readable, but not the expected copy
    (tmp_path / "german_numer.csv.gz").write_bytes(gzip.compress(b"")[:5])  # damaged
    code, out, _ = spl(capsys, "datasets")
    assert code == 0
    status = {ln.split("│")[1].strip(): ln.split("│")[4].strip() for ln in out.splitlines() if ln.count("│") >= 5}
    assert status["australian"] == "NO" and status["german_numer"] == "NO" and status["diabetes"] == "bundled"
    assert re.search(r"australian: .*sha256 does not match", out) and "german_numer: " in out


# 9. one configuration, one row file; nothing beside the experiment folders; no empty folders -----------


def test_9_row_files_and_configurations_line_up(tmp_path, capsys):
    root = tmp_path / "runs"
    assert spl(capsys, "run", f"results_root={root}", "method=original", "protocol.n_runs=1", *QUIET)[0] == 0
    code, _, err = spl(capsys, "run", "-m", f"results_root={root}", "method=original", "data=diabetes",
                       "protocol.n_runs=2", *QUIET)  # fmt: skip
    assert code == 0, err
    assert "same configuration" in err and "resuming: 1 of 2 runs" in err  # run 0 was not computed again
    exp = root / "default"
    assert sorted(tmp_path.iterdir()) == [root] and sorted(root.iterdir()) == [exp]
    (rows,) = exp.glob("*__*.csv")  # one configuration, one row file: no twin under the second command's cell
    assert rows.name.startswith("method=original__") and sorted(read_row_file(rows).seed.unique()) == [0, 1]
    assert sorted(p.name for p in exp.iterdir() if p.name != ".lock") == sorted(
        [".hydra", "logs", "index.csv", rows.name, rows.with_suffix(".json").name])  # no multirun.yaml
    assert (exp / ".hydra" / "multirun.yaml").is_file()
    index = pd.read_csv(exp / "index.csv")
    assert index[["cell", "file"]].values.tolist() == [["method=original", rows.name]]
    assert sorted(p.name for p in (exp / "logs").iterdir()) == ["data=diabetes,method=original", "method=original"]
    failed = tmp_path / "failed"
    assert spl(capsys, "run", f"results_root={failed}", "+model.params.alpah=0.01", *QUIET)[0] == 2
    assert folders(failed) == []


# 10. help, version, datasets --help, the table's title -------------------------------------------


def test_10_help_version_and_a_table_title_that_fits_80_columns(capsys):
    from spl_bench.report.tables import print_tables, summarize

    code, out, _ = spl(capsys, "--help")
    assert code == 0 and "usage: spl-bench" in out and "``" not in out and "::" not in out
    code, out, _ = spl(capsys, "--version")
    assert code == 0 and re.fullmatch(r"spl-bench \d+\.\d+\.\d+\S*\n", out)
    code, out, _ = spl(capsys, "datasets", "--help")
    assert code == 0 and "usage: spl-bench datasets" in out and "│" not in out  # help, not the table
    frame = pd.DataFrame({"experiment": "default", "dataset": "diabetes", "noise": "target_gaussian@0.3",
                          "method": "acs", "model": "lasso", "sp": "linear", "selection": "validation",
                          "metric": "gen_error", "seed": [0, 1], "value": [0.5, 0.7], "time_s": 1.0,
                          "n_restarts": np.nan})  # fmt: skip
    con = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_tables(summarize(frame), console=con)
    text = con.export_text()
    assert "noise: target_gaussian@0.3" in text and "dataset: diabetes" in text  # no key split over lines
    heading = text.split("┏")[0].strip().splitlines()
    assert len(heading) <= 3 and all(len(line) <= 80 for line in heading)


# 11. the README -----------------------------------------------------------------------------------


def test_11_the_readme_is_a_short_page_with_links_to_the_details():
    lines = (REPO / "README.md").read_text().splitlines()
    first_link = next(k for k, line in enumerate(lines) if "](docs/" in line)
    quick = lines[:first_link]
    assert first_link < 120
    assert "## Two commands" in quick and "## Where results go" in quick
    assert sum(line.startswith(".venv/bin/spl-bench ") for line in quick) >= 5  # five example commands
    text = "\n".join(lines)
    for target in re.findall(r"\]\(((?:docs|results)/[^)#]+)", text):
        assert (REPO / target).exists(), target
    start, end = text.index("<!-- reproduction-status:start -->"), text.index("<!-- reproduction-status:end -->")
    assert text.count("<!-- reproduction-status:start -->") == 1 and start > text.index("](docs/") and end > start
