"""Hydra's compositions kept on disk (``runner/compose_cache.py``): a cached composition is Hydra's own,
a changed config file is composed again, a damaged file is replaced, and the cache can be off."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from spl_bench.paths import config_dir
from spl_bench.runner import compose_cache
from spl_bench.runner.cells import Cell, cell_hash, compose_cell, table_cells
from spl_bench.table_registry import PROTOCOL_VARIANTS, TABLES


def _sample_cells() -> list[Cell]:
    """Cells of several kinds: a GAGA cell of a regression and of a classification table, a current-rule
    rerun, an Outlier-Path variant, a baseline with a protocol variant."""
    cells = [table_cells("2", methods=["gaga"])[0], table_cells("6", methods=["gaga"])[0],
             table_cells("11", methods=["gaga"], current_rule=True)[0], table_cells("op2")[-1],
             table_cells("7", methods=["huber_lasso"])[0], table_cells("2", methods=["acs"], variant="authors")[0]]
    return cells


def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", "off")


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.pkl"))


def test_a_cached_composition_is_hydras_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cells = _sample_cells()
    _no_cache(monkeypatch)
    fresh = [compose_cell(c) for c in cells]
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(tmp_path))
    missed = [compose_cell(c) for c in cells]
    assert _files(tmp_path), "nothing was kept"

    def no_hydra(*args: object, **kwargs: object) -> None:
        raise AssertionError("a kept composition was composed again")

    monkeypatch.setattr(compose_cache, "_hydra_compose", no_hydra)
    hit = [compose_cell(c) for c in cells]
    for f, m, h in zip(fresh, missed, hit, strict=True):
        assert f == m == h
        assert cell_hash(f) == cell_hash(m) == cell_hash(h)
        assert OmegaConf.to_yaml(f) == OmegaConf.to_yaml(h)
        assert OmegaConf.is_struct(h) == OmegaConf.is_struct(f)
    # each call gives its own object: changing one leaves the next untouched
    OmegaConf.set_struct(hit[0], False)
    hit[0].method.name = "changed"
    assert compose_cell(cells[0]).method.name == fresh[0].method.name


def test_a_changed_config_file_is_composed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "configs"
    shutil.copytree(config_dir(), conf)
    monkeypatch.setenv("SPL_BENCH_CONFIG_DIR", str(conf))
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(tmp_path / "cache"))
    cell = table_cells("2", methods=["gaga"])[0]
    before = compose_cell(cell)
    gaga = conf / "method" / "gaga.yaml"
    text = gaga.read_text()
    assert "lam_max: 20.0" in text
    gaga.write_text(text.replace("lam_max: 20.0", "lam_max: 7.5"))
    after = compose_cell(cell)
    assert after.method.lam_max == 7.5 and before.method.lam_max == 20.0
    assert cell_hash(after) != cell_hash(before)
    gaga.write_text(text)  # back to the first tree: its composition is read again
    assert compose_cell(cell) == before


def test_a_damaged_cache_file_is_composed_again_and_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(tmp_path))
    cell = table_cells("6", methods=["gaga"])[0]
    good = compose_cell(cell)
    files = _files(tmp_path)
    for f in files:
        f.write_bytes(f.read_bytes()[:40])  # cut short
    assert compose_cell(cell) == good
    for f in files:
        assert pickle.loads(f.read_bytes()) is not None  # replaced by a whole file
    for f in files:
        f.write_bytes(pickle.dumps({"not": "a config"}))  # another object
    assert compose_cell(cell) == good


def test_without_a_cache_or_a_writable_one_the_composition_is_the_same(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cell = table_cells("7", methods=["gaga"])[0]
    _no_cache(monkeypatch)
    off = compose_cell(cell)
    blocked = tmp_path / "a_file"
    blocked.write_text("")  # a cache "folder" that is a file: nothing can be written under it
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(blocked))
    assert compose_cell(cell) == off


def test_hydras_errors_are_raised_and_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(tmp_path))
    bad = Cell("2", "gaga_table2", ("method=no_such_method",))
    for _ in range(2):
        with pytest.raises(ConfigCompositionException):
            compose_cell(bad)
    assert not _files(tmp_path)


@pytest.mark.slow
def test_every_cell_of_every_table_is_hydras_composition(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell the sweeps compose (16 tables, their reruns, Tables 2-3 under every protocol variant), cached
    and read back: Hydra's config (13 min beside two sweeps)."""
    cells = [c for t in TABLES for rule in (False, True) for c in table_cells(t, current_rule=rule)]
    cells += [c for v in PROTOCOL_VARIANTS for t in ("2", "3") for c in table_cells(t, variant=v)]
    _no_cache(monkeypatch)
    fresh = [cell_hash(compose_cell(c)) for c in cells]
    monkeypatch.setenv("SPL_BENCH_CACHE_DIR", str(tmp_path))
    assert [cell_hash(compose_cell(c)) for c in cells] == fresh  # written
    assert [cell_hash(compose_cell(c)) for c in cells] == fresh  # read
