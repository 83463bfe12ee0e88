"""Row files: whole or not counted (check trailer), spl-bench verify, one-line environment errors, file modes."""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from spl_bench import atomic
from spl_bench.errors import DamagedRows
from spl_bench.paths import repo_root
from spl_bench.report.ours import load_ours
from spl_bench.rowfiles import (
    check_row_file,
    config_hash,
    encode_rows,
    read_row_file,
    verify_tree,
    write_row_file,
)
from spl_bench.rowstore import CellStore
from spl_bench.runner.cells import Cell
from spl_bench.runner.cli import main
from spl_bench.runner.committed import refresh_index, store_of
from spl_bench.runner.plan import CellState, cell_states

QUICK = ["method=original", "data=diabetes", "progress=false", "print_table=false"]


def run(root: Path, n_runs: int = 3, *extra: str) -> int:
    return main(["run", f"results_root={root}", f"protocol.n_runs={n_runs}", *QUICK, *extra])


def run_dir(root: Path) -> Path:
    """The experiment folder of the row store under ``root`` (the one with an ``index.csv``)."""
    (folder,) = {f.parent for f in root.rglob("index.csv") if "logs" not in f.parts}
    return folder


def cell_file(folder: Path) -> Path:
    """The one row file (``<cell>__<hash>.csv``) of an experiment folder of one cell."""
    (path,) = folder.glob("*__*.csv")
    return path


def keep_seeds(path: Path, seeds: list[int]) -> pd.DataFrame:
    """Rewrite a row file with only ``seeds`` (as after a run stopped before the others); returns the rows kept."""
    rows = read_row_file(path)
    rows = rows[rows["seed"].isin(seeds)].reset_index(drop=True)
    write_row_file(rows, path)
    return rows


def frame() -> pd.DataFrame:
    return pd.DataFrame({"experiment": ["e", "e"], "dataset": ["d", "d"], "noise": ["n", "n"],
                         "method": ["m", "m"], "model": ["lasso", "lasso"], "sp": ["linear", "linear"],
                         "selection": ["validation", "validation"], "seed": [0, 0],
                         "metric": ["gen_error", "selection_gen_error"], "value": [0.5, 0.25],
                         "info": ['{"a": "b, c"}', "{}"], "config_hash": ["0123e4567890", "0123e4567890"]})  # fmt: skip


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    """An experiment folder of one cell of 3 seeds (method=original, diabetes), copied by the tests that change it."""
    root = tmp_path_factory.mktemp("one_run")
    assert run(root) == 0
    return run_dir(root)


def copy_run(one_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the experiment folder under ``tmp_path`` (results_root, experiment folder)."""
    root = tmp_path / "root"
    folder = root / one_run.name
    shutil.copytree(one_run, folder)
    return root, folder


# ----------------------------------------------------------------------------- the check trailer


def test_a_row_file_reads_back_exactly_and_its_trailer_counts_rows_and_hashes_the_text(tmp_path):
    path = write_row_file(frame(), tmp_path / "x__0123e4567890.csv")
    data = path.read_bytes()
    body, last = data[: data.rfind(b"#spl-bench")], data[data.rfind(b"#spl-bench"):]
    assert body == frame().to_csv(index=False).encode()  # the CSV text as pandas writes it, then one line
    assert last.startswith(b"#spl-bench rows=2 sha256=") and last.endswith(b"\n") and last.count(b"\n") == 1
    got = read_row_file(path)
    pd.testing.assert_frame_equal(got, frame())  # the hash that looks like a number stays text
    assert check_row_file(path) is None


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:100], "cut short"),
        (lambda b: b"", "empty"),
        (lambda b: b[: b.rfind(b"#spl-bench")], "no check trailer"),  # cut exactly at a line end
        (lambda b: b.replace(b"0.5,", b"0.6,", 1), "does not match its checksum"),
        (lambda b: b[: b.rfind(b"#")] + b"#spl-bench rows=2 sha256=zz\n", "malformed"),
    ],
    ids=["first_100_bytes", "empty", "trailer_lost", "value_changed", "bad_trailer"],
)
def test_a_damaged_row_file_is_refused_in_one_line_naming_it(tmp_path, damage, reason):
    path = write_row_file(frame(), tmp_path / "x__0123e4567890.csv")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(DamagedRows) as exc:
        read_row_file(path)
    message = str(exc.value)
    assert reason in message and str(path) in message and "\n" not in message
    assert "restore it" in message  # what to do
    assert reason in check_row_file(path)


def test_row_count_must_match_the_trailer(tmp_path):
    path = tmp_path / "x__0123e4567890.csv"
    body = frame().to_csv(index=False).encode()
    from spl_bench.rowfiles import trailer

    path.write_bytes(body + trailer(body, 3))
    assert "it has 2 rows, its trailer says 3" in check_row_file(path)


# ----------------------------------------------------------------------------- spl-bench run and report


@pytest.mark.parametrize("damage", ["first_100_bytes", "empty"])
def test_run_sets_a_damaged_row_file_aside_and_runs_its_seeds_again(one_run, tmp_path, capsys, damage):
    root, folder = copy_run(one_run, tmp_path)
    victim = cell_file(folder)
    before = read_row_file(victim)
    damaged = victim.read_bytes()[:100] if damage == "first_100_bytes" else b""
    victim.write_bytes(damaged)
    capsys.readouterr()
    assert run(root) == 0
    err = " ".join(capsys.readouterr().err.split())
    aside = folder / "damaged" / victim.name
    assert f"damaged: {victim}" in err and f"moved to {aside}" in err and "its runs are run again" in err
    assert "Traceback" not in err
    assert aside.is_file() and str(victim) in (folder / "damaged" / f"{victim.name}.reason.txt").read_text()
    assert aside.read_bytes() == damaged  # set aside as it was, never counted
    again = read_row_file(victim)  # rerun: whole, every seed, and the same numbers
    cols = ["seed", "metric", "value", "lam"]
    pd.testing.assert_frame_equal(again[cols], before[cols])
    assert sorted(again.seed) == [0, 0, 1, 1, 2, 2]
    assert verify_tree([root])[0].problems == []  # damaged/ is not read as a row file


def test_report_stops_in_one_line_on_an_empty_row_file(one_run, tmp_path, capsys):
    root, folder = copy_run(one_run, tmp_path)
    victim = cell_file(folder)
    victim.write_bytes(b"")
    capsys.readouterr()
    assert main(["report", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    assert f"{victim} is damaged: the file is empty" in " ".join(err.split())
    assert "rerun the command that wrote it" in err and "moves it to damaged/" in err


# ----------------------------------------------------------------------------- reproduce_tables and the tables


def _committed_cell(root: Path) -> CellState:
    cell = Cell("2", "gaga_table2", ("+table_row=t2_music_n30", "method=original"))
    (state,) = cell_states([cell], root)
    for s in (0, 1):
        store_of(state, root).add([{**frame().iloc[0].to_dict(), "seed": s, "config_hash": state.config_hash}])
    refresh_index([state], root)
    return state


def test_reproduce_refuses_a_damaged_committed_file_and_never_counts_its_seeds(tmp_path):
    state = _committed_cell(tmp_path)
    assert cell_states([state.cell], tmp_path)[0].done == {0, 1}
    state.file.write_bytes(state.file.read_bytes()[:-30])
    with pytest.raises(DamagedRows, match="cut short"):
        cell_states([state.cell], tmp_path)


def test_adding_rows_keeps_a_hash_that_looks_like_a_number(tmp_path):
    """Older code read a cell's file back with ``66e484979502`` as a number (inf) and wrote that."""
    store = CellStore(tmp_path, "e", "c", "66e484979502")
    row = {**frame().iloc[0].to_dict(), "config_hash": "66e484979502"}
    store.add([{**row, "seed": 0}])
    store.add([{**row, "seed": 1}])
    assert store.file == tmp_path / "e" / "c__66e484979502.csv"
    assert set(read_row_file(store.file)["config_hash"]) == {"66e484979502"} and store.done() == {0, 1}
    assert verify_tree([tmp_path])[0].problems == []


def test_table_regeneration_refuses_a_damaged_committed_file(tmp_path):
    """The report's loader (``report.ours.load_ours``) reads row files through ``read_row_file``."""

    state = _committed_cell(tmp_path)
    assert len(load_ours("gaga_table2", tmp_path)) == 2
    state.file.write_bytes(b"")
    with pytest.raises(DamagedRows, match="the file is empty"):
        load_ours("gaga_table2", tmp_path)


# ----------------------------------------------------------------------------- spl-bench verify


def test_verify_passes_whole_folders_and_names_each_damaged_file_in_one_line(one_run, tmp_path, capsys):
    root, folder = copy_run(one_run, tmp_path)
    rows = tmp_path / "rows"
    _committed_cell(rows)
    assert main(["verify", str(root), str(rows)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"verified 1 row file and 1 index file under {root}: all whole"
    assert out[1] == f"verified 1 row file and 1 index file under {rows}: all whole"
    first = cell_file(folder)
    first.write_bytes(first.read_bytes()[:100])
    cell = next(rows.rglob("*__*.csv"))
    cell.write_bytes(cell.read_bytes().replace(b"0.5", b"0.7", 1))
    assert main(["verify", str(root), str(rows)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] for line in out if not line.startswith("verified")] == [str(first), str(cell)]
    assert "cut short" in out[0] and "checksum" in out[2]
    assert "1 problem(s) in 1 file(s)" in out[1] and "1 problem(s) in 1 file(s)" in out[3]


def test_verify_skips_the_folders_set_aside_and_the_job_logs(one_run, tmp_path):
    root, folder = copy_run(one_run, tmp_path)
    for aside in ("damaged", "stale", "logs"):
        (folder / aside).mkdir(exist_ok=True)
        (folder / aside / cell_file(folder).name).write_bytes(b"cut")
    (found,) = verify_tree([root])
    assert found.problems == [] and found.files == 1 and found.indexes == 1


def test_verify_checks_schema_seeds_and_config_hash(one_run, tmp_path):
    root, folder = copy_run(one_run, tmp_path)
    path = cell_file(folder)
    cell, h = path.stem.rsplit("__", 1)
    rows = read_row_file(path)
    assert (found := verify_tree([root])[0]).problems == [] and found.files == 1
    write_row_file(rows.assign(config_hash="abc"), path)  # rows of another configuration under this hash
    write_row_file(pd.concat([rows, rows]).assign(seed=0), folder / f"twice__{h}.csv")
    write_row_file(rows.assign(seed=0.5), folder / f"half__{h}.csv")
    path.with_suffix(".json").write_text('{"changed": 1}')  # not the config the rows were hashed from
    index = folder / "index.csv"
    index.write_text(index.read_text() + f"other,,{h},other__0123e4567890.csv\n")
    (found,) = verify_tree([root])
    problems = "\n".join(found.problems)
    assert found.files == 3 and found.indexes == 1
    assert f"{path}: rows of config hash abc in the file of hash {h}" in problems
    assert f"twice__{h}.csv: seed 0 twice" in problems
    assert f"half__{h}.csv: a seed that is not a whole number" in problems
    assert f"{path.with_suffix('.json')}: hashes to {config_hash({'changed': 1})}, not to its row file's hash {h}" \
        in problems
    assert f"{index}: cell other: file other__0123e4567890.csv is not of its config hash {h}" in problems
    index.write_text(index.read_text() + f'"{cell}",,{h},"{path.name}"\n')
    assert f"{index}: cell {cell} listed twice" in verify_tree([root])[0].problems
    write_row_file(rows.drop(columns=["metric"]), path)
    (found,) = verify_tree([path])
    assert [p for p in found.problems if p.startswith(f"{path}:")] == [
        f"{path}: no column metric: not a row file of spl-bench"]


def test_verify_refuses_a_path_without_row_files(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["verify", str(tmp_path)]) == 2
    assert "no row file under" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the migration


def _seal_script():
    spec = importlib.util.spec_from_file_location("seal_row_files", repo_root() / "scripts" / "seal_row_files.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_migration_seals_old_files_without_changing_them_and_can_be_rerun(tmp_path, capsys):
    seal = _seal_script()
    exp = tmp_path / "rows" / "gaga_table2"
    exp.mkdir(parents=True)
    good = exp / "a__0123e4567890.csv"
    good.write_text(frame().to_csv(index=False))
    os.utime(good, ns=(1_000_000_000, 1_000_000_000))
    mangled = exp / "b__66e484979502.csv"  # what older code wrote: the hash read as a number
    mangled.write_text(frame().assign(config_hash=["inf", "66e484979502"]).to_csv(index=False))
    cut = exp / "c__0123e4567890.csv"
    cut.write_text(frame().to_csv(index=False)[:-5])
    (exp / "index.csv").write_text("cell,overrides,config_hash,file\n")
    original = good.read_bytes()
    assert main(["verify", str(tmp_path / "rows")]) == 1
    assert seal.main([str(tmp_path / "rows")]) == 1  # the cut file is refused, not sealed
    out = capsys.readouterr()
    assert "2 row file(s) sealed, 0 already whole, 1 refused" in out.out
    assert f"{cut}: not sealed: the last line is incomplete" in out.err
    assert f"{mangled}: config_hash of 1 row(s) set back" in out.out
    assert good.read_bytes() == original + encode_rows(frame())[len(original):]  # the text kept, a trailer added
    assert good.stat().st_mtime_ns == 1_000_000_000
    assert list(read_row_file(mangled)["config_hash"]) == ["66e484979502"] * 2
    cut.unlink()
    snapshot = {p: p.read_bytes() for p in exp.iterdir()}
    assert seal.main([str(tmp_path / "rows")]) == 0  # rerun: nothing to do, nothing changed
    assert "0 row file(s) sealed, 2 already whole, 0 refused" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in exp.iterdir()} == snapshot
    assert main(["verify", str(tmp_path / "rows")]) == 0


# ----------------------------------------------------------------------------- environment errors


def _mount_tmpfs(where: Path, size: str = "300k") -> bool:
    """Mount a small tmpfs at ``where`` (root in a container that allows it); False where not possible."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, timeout=30)  # fmt: skip
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    """A 300 kB tmpfs (or a plain folder where mounting is not possible) and whether it is one."""
    where = tmp_path / "disk"
    mounted = _mount_tmpfs(where)
    yield where, mounted
    if mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def _fill(where: Path) -> Path:
    """Fill the disk holding ``where`` to the last byte."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, bytes(4096))
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _no_space(monkeypatch, target: Path) -> None:
    """Writes of ``target`` that fail as on a full disk: the temporary file gets some bytes, then ENOSPC.

    Other files (the folder's ``index.csv``, written before the first run) are written as usual.
    """
    real = atomic._create_temp

    def create(path: Path) -> tuple[int, Path]:
        fd, tmp = real(path)
        if Path(path) != target:
            return fd, tmp
        os.write(fd, b"experiment,dataset\nhalf")  # half-written
        full = os.open("/dev/full", os.O_WRONLY) if os.path.exists("/dev/full") else None
        if full is None:
            os.close(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.dup2(full, fd)
        os.close(full)
        return fd, tmp

    monkeypatch.setattr(atomic, "_create_temp", create)


def test_a_full_disk_at_a_row_write_gives_one_line_and_leaves_no_half_written_row(one_run, tmp_path, monkeypatch,
                                                                                   capsys):
    """The write of the cell's row file adding run 1 fails as on a full disk (``/dev/full`` under the temp file)."""
    root, folder = copy_run(one_run, tmp_path)
    target = cell_file(folder)
    kept = keep_seeds(target, [0])  # as after run 0: the next row write adds run 1
    before = target.read_bytes()
    _no_space(monkeypatch, target)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        run(root, 3)
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and err.count("error:") == 1
    assert f"writing the rows of run 1 to {target} failed: the disk is full (No space left on device)" in err
    assert "free space on that disk" in err
    assert target.read_bytes() == before  # the file as it was: whole, run 0 only
    pd.testing.assert_frame_equal(read_row_file(target), kept)
    assert sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != ".lock") == sorted(
        ["index.csv", target.name, target.with_suffix(".json").name])  # no .tmp left
    assert not list(folder.rglob("*.tmp"))
    monkeypatch.undo()
    assert run(root, 3) == 0  # space again: the same command resumes
    assert sorted(read_row_file(target).seed.unique()) == [0, 1, 2]


def test_a_small_disk_filling_up_mid_run_gives_one_line_and_only_whole_rows(small_disk, capsys):
    """A real 300 kB tmpfs (root, where mounting works) with 80 kB free: some runs fit, then the disk is full."""
    where, mounted = small_disk
    if not mounted:
        pytest.skip("no tmpfs here: the full disk is covered by the patched write above")
    filler = _fill(where)
    os.truncate(filler, filler.stat().st_size - 80 * 1024)
    with pytest.raises(SystemExit) as exc:
        run(where, 40)
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and err.count("error:") == 1
    assert "failed: the disk is full (No space left on device)" in err and str(where) in err
    assert not list(where.rglob("*.tmp"))
    (found,) = verify_tree([where])
    assert found.problems == [] and found.files == 1  # the row file left is whole
    assert 0 < len(read_row_file(cell_file(run_dir(where))).seed.unique()) < 40  # some runs fit
    filler.unlink()
    assert run(where, 40) == 0  # space again: the same command resumes
    assert verify_tree([where])[0].problems == []
    assert sorted(read_row_file(cell_file(run_dir(where))).seed.unique()) == list(range(40))


def test_a_full_disk_before_the_first_run_is_one_line_and_writes_nothing(small_disk, capsys):
    where, mounted = small_disk
    if not mounted:
        pytest.skip("no tmpfs here: the full disk is covered by the patched write above")
    _fill(where)
    assert main(["run", f"results_root={where}/new", "protocol.n_runs=1", *QUICK]) == 2
    assert main(["report", str(where), "--out", str(where / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("error:") == 2
    assert f"results_root={where}/new: writing in {where} failed: the disk is full" in " ".join(err.split())
    assert f"--out {where / 'out'}: writing in {where} failed: the disk is full" in " ".join(err.split())
    assert sorted(p.name for p in where.iterdir()) == ["filler"]


def test_a_read_only_folder_is_refused_in_one_line(small_disk, capsys):
    where, mounted = small_disk
    if not mounted:
        pytest.skip("no tmpfs here: the read-only case is covered by the patched permission error below")
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, timeout=30)
    assert run(where, 1) == 2
    assert main(["report", str(where), "--out", str(where / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("Read-only file system") == 2 and "Traceback" not in err
    assert "results_root=" in err and "--out " in err and "choose a writable folder" in err


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
def test_a_refused_row_write_gives_one_line(one_run, tmp_path, monkeypatch, capsys, code):
    """Root ignores mode bits, so the refusal is patched in where the row is written."""
    root, folder = copy_run(one_run, tmp_path)
    target = cell_file(folder)
    keep_seeds(target, [0, 1])  # as after run 1: the next row write adds run 2
    before = target.read_bytes()
    real = atomic._create_temp

    def refuse(path: Path) -> tuple[int, Path]:
        if Path(path) != target:
            return real(path)
        raise OSError(code, os.strerror(code), str(path.with_name(f".{path.name}.123.tmp")))

    monkeypatch.setattr(atomic, "_create_temp", refuse)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        run(root)
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    what = {errno.EACCES: "permission denied", errno.EROFS: "the file system is read-only"}[code]
    assert f"writing the rows of run 2 to {target} failed: {what}" in err and "Traceback" not in err
    assert not list(folder.rglob("*.tmp")) and target.read_bytes() == before


def test_report_on_a_full_disk_names_the_out_folder(one_run, tmp_path, monkeypatch, capsys):
    import spl_bench.report.tables as tables

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tables, "write_report", full)
    root, _ = copy_run(one_run, tmp_path)
    capsys.readouterr()
    assert main(["report", str(root), "--out", str(tmp_path / "out"), "--no-figure"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"writing the report to {tmp_path / 'out'} failed: the disk is full" in err and "Traceback" not in err


def test_a_missing_data_directory_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPL_BENCH_DATA_DIR", str(tmp_path / "no_such_folder"))
    with pytest.raises(SystemExit) as exc:
        main(["run", f"results_root={tmp_path / 'r'}", "protocol.n_runs=1", "progress=false", "print_table=false",
              "data=nomao", "model=svm", "data.openml_id=null"])  # fmt: skip
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"{tmp_path / 'no_such_folder'}/nomao.csv.gz not found" in err and "SPL_BENCH_DATA_DIR" in err
    assert "Traceback" not in err and not list((tmp_path / "r").rglob("*.csv"))


# ----------------------------------------------------------------------------- file modes


@pytest.mark.parametrize("mask", [0o022, 0o002])
def test_written_files_follow_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        assert run(tmp_path / "r", 1) == 0
        assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "out")]) == 0
        atomic.atomic_write_text(tmp_path / "one.txt", "x")
        with atomic.atomic_paths([tmp_path / "a.png", tmp_path / "b.csv"]) as temps:
            for t in temps:
                t.write_text("y")
    finally:
        os.umask(old)
    folder = run_dir(tmp_path / "r")
    written = [*(p for p in folder.iterdir() if p.is_file()), *(tmp_path / "out").iterdir(),
               tmp_path / "one.txt", tmp_path / "a.png", tmp_path / "b.csv"]  # fmt: skip
    assert any(p.suffix == ".png" for p in written) and cell_file(folder) in written
    assert {"index.csv", cell_file(folder).with_suffix(".json").name} <= {p.name for p in written}
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in written}
    assert set(modes.values()) == {oct(0o666 & ~mask)}, modes


def test_atomic_paths_replace_nothing_when_the_block_fails(tmp_path):
    keep = tmp_path / "a.csv"
    keep.write_text("old")
    with pytest.raises(OSError) as exc, atomic.atomic_paths([keep, tmp_path / "b.csv"]) as (a, _):
        a.write_text("new")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert exc.value.filename == str(tmp_path)  # two files meant: named by their folder, not a temporary name
    assert keep.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]
