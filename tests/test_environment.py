"""Every run records its environment; reports name the environments and warn on mixed cells."""

from __future__ import annotations

import json
from importlib import metadata

import pandas as pd

from spl_bench.environment import NOT_RECORDED, describe, environment, environment_json, kernel_family, library_key
from spl_bench.report import environments
from spl_bench.report.drift import compare
from spl_bench.report.tables import CELL_KEYS, read_results, write_report
from spl_bench.rowfiles import read_row_file
from spl_bench.rowstore import CellStore, write_index
from spl_bench.runner.cli import main


def test_environment_names_the_libraries_blas_and_cpu():
    env = environment()
    for dist in ("numpy", "scipy", "scikit-learn", "numba", "pandas", "hydra-core"):
        assert env[dist] == metadata.version(dist)  # an independent look-up of the installed version
    assert env["python"].count(".") == 2 and env["cpu"]
    assert "(numpy)" in env["blas"] and isinstance(env["blas_threads"], int) and env["blas_threads"] >= 1
    # the kernel family OpenBLAS runs (it decides the rounding): spl_bench.runner.drift
    from threadpoolctl import threadpool_info

    arch = {p["architecture"] for p in threadpool_info()
            if p.get("internal_api") == "openblas" and p.get("architecture")}
    assert all(f" {a} (" in env["blas"] for a in arch)
    # the BLAS is recorded, not compared: numpy's and scipy's wheels bundle theirs
    other_blas = json.dumps({**env, "blas": "another"})
    assert library_key(other_blas) == library_key(environment_json())
    assert json.loads(environment_json()) == environment()
    assert f"numpy {env['numpy']}" in library_key(environment_json())
    assert library_key(None) == NOT_RECORDED == describe(float("nan")) == library_key("not json")


def test_a_run_writes_its_environment_in_every_row(tmp_path):
    args = ["run", f"results_root={tmp_path}", "protocol.n_runs=2", "progress=false", "print_table=false",
            "method=original", "data=diabetes"]  # fmt: skip
    assert main(args) == 0
    (results,) = tmp_path.rglob("*__*.csv")
    rows = read_row_file(results)
    assert len(rows) == 4
    envs = {library_key(t) for t in rows["environment"]}
    assert envs == {library_key(environment_json())}
    assert json.loads(rows["environment"].iloc[0])["numpy"] == metadata.version("numpy")


def _rows(envs: list[str | None]) -> pd.DataFrame:
    """One cell, one seed per entry of ``envs``, made under that environment."""
    return pd.DataFrame([{"experiment": "e", "dataset": "d", "noise": "n", "method": "acs", "model": "lasso",
                          "sp": "linear", "selection": "validation", "config_hash": "h", "seed": k,
                          "metric": "gen_error", "value": 0.1 * k, "time_s": 1.0, "n_restarts": None,
                          "environment": e} for k, e in enumerate(envs)])  # fmt: skip


def _env(numpy: str) -> str:
    return json.dumps({**environment(), "numpy": numpy})


def test_a_cell_pooling_two_library_versions_is_listed_and_unrecorded_rows_are_not():
    same = _rows([_env("2.4.6"), _env("2.4.6"), None])  # a row without a record does not mix a cell
    assert environments.mixed_cells(same, CELL_KEYS) == []
    mixed = _rows([_env("2.4.6"), _env("2.4.6"), _env("2.5.0"), None])
    (line,) = environments.mixed_cells(mixed, CELL_KEYS)
    assert "numpy 2.4.6" in line and "(2 runs)" in line and "numpy 2.5.0" in line and "(1 runs)" in line
    table = environments.environment_table(mixed, CELL_KEYS)
    assert table["runs"].tolist() == [2, 1, 1] and table["environment"].iloc[-1] == NOT_RECORDED
    text = environments.footer(mixed, CELL_KEYS)
    assert "## Environments" in text and "**Warning:** 1 cell pool" in text


def _env_kernels(family: str | None) -> str:
    """This environment with numpy's and scipy's OpenBLAS recording ``family`` (None: no family, as
    rows written before the family was recorded)."""
    arch = f" {family}" if family else ""
    return json.dumps({**environment(), "blas": f"openblas 0.3.30{arch} (scipy); openblas 0.3.31{arch} (numpy)"})


def test_kernel_family_is_read_from_numpys_blas_entry():
    assert kernel_family(_env_kernels("Haswell")) == "Haswell"
    assert kernel_family(_env_kernels(None)) is None
    assert kernel_family(json.dumps({"blas": "openblas 0.3.31 SkylakeX (scipy)"})) is None  # not numpy's
    assert kernel_family(None) is None and kernel_family("not json") is None
    # this process's rows record the family it runs (threadpoolctl, independently of the parser)
    from threadpoolctl import threadpool_info

    arch = [p.get("architecture") for p in threadpool_info()
            if p.get("user_api") == "blas" and "numpy" in str(p.get("filepath", ""))]
    assert kernel_family(environment_json()) == (arch[0] if arch and arch[0] else None)


def test_a_cell_pooling_two_kernel_families_is_listed_and_rows_without_one_are_not():
    same = _rows([_env_kernels("SkylakeX"), _env_kernels("SkylakeX"), _env_kernels(None), None])
    assert environments.mixed_cells(same, CELL_KEYS) == []
    mixed = _rows([_env_kernels("SkylakeX"), _env_kernels("Haswell"), _env_kernels("Haswell"), _env_kernels(None)])
    (line,) = environments.mixed_cells(mixed, CELL_KEYS)
    assert "BLAS kernels Haswell (2 runs)" in line and "BLAS kernels SkylakeX (1 runs)" in line
    assert "numpy" not in line  # the libraries are the same: only the families are named
    table = environments.environment_table(mixed, CELL_KEYS)
    assert table["BLAS kernels"].tolist() == ["Haswell, SkylakeX"] and table["runs"].tolist() == [4]
    assert "BLAS kernel families" in environments.footer(mixed, CELL_KEYS)


def test_spl_bench_report_warns_and_writes_the_footer(tmp_path, capsys):
    store = CellStore(tmp_path / "runs", "e", "x", "h")
    for _, part in _rows([_env("2.4.6"), _env("2.5.0")]).groupby("seed"):
        store.add(part.to_dict("records"))
    write_index(store.dir, [store.index_entry("x")])
    assert main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-figure"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "different library versions" in err and "numpy 2.5.0" in err
    md = (tmp_path / "out" / "table.md").read_text()
    assert "## Environments" in md and "numpy 2.4.6" in md and "numpy 2.5.0" in md
    # the same rows written without mixing: no warning
    frame = read_results([tmp_path / "runs"])
    write_report(frame.assign(environment=_env("2.4.6")), tmp_path / "one")
    assert "**Warning:**" not in (tmp_path / "one" / "table.md").read_text()


def test_a_drift_message_names_both_environments():
    ref = _rows([_env("2.4.6")])
    moved = _rows([_env("2.5.0")]).assign(value=0.5, lam=1.0)
    (problem,) = compare(ref.assign(lam=1.0), moved)
    assert "value drifted" in problem
    assert "reference made under: python" in problem and "numpy 2.4.6" in problem and "numpy 2.5.0" in problem
    # a reference written before environments were recorded says so
    (old,) = compare(ref.drop(columns="environment").assign(lam=1.0), moved)
    assert f"reference made under: {NOT_RECORDED}" in old
