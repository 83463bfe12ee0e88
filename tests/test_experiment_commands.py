"""Every experiment config works through ``spl-bench run``, as a user would call it.

The table rows are made by ``scripts/reproduce_tables.py``, which composes the configs its own way;
these tests keep the user's route from drifting away from it:

* each experiment config composes through the ``spl-bench run`` application and passes its
  checks (no data needed: Hydra's compose API and the same key check the task makes);
* the one-cell command each config documents in its header (``# One cell: spl-bench run ...`` or
  ``# One row: ...``) runs through ``spl-bench run`` for one seed on a thinned copy of its data set
  (``+data.max_rows``) and writes its two tidy rows.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from spl_bench.errors import ConfigError
from spl_bench.paths import config_dir
from spl_bench.rowfiles import read_row_file
from spl_bench.runner import app, cli
from spl_bench.runner.run_config import estimator_factory, identity, protocol_config

EXPERIMENTS = sorted(p.stem for p in (config_dir() / "experiment").glob("*.yaml"))
DOC_LINE = re.compile(r"^# One (?:cell|row): spl-bench run (.+)$", re.MULTILINE)
#: rows kept of each data set for the documented commands: enough for every split and class
MAX_ROWS = 300


def documented_command(experiment: str) -> list[str]:
    """The overrides of the one-cell command in the header of ``configs/experiment/<experiment>.yaml``."""
    text = (config_dir() / "experiment" / f"{experiment}.yaml").read_text()
    found = DOC_LINE.findall(text)
    assert len(found) == 1, f"{experiment}.yaml documents {len(found)} one-cell commands, expected 1"
    return shlex.split(found[0])


def test_every_experiment_config_documents_one_cell():
    assert EXPERIMENTS, "no experiment configs found"
    for name in EXPERIMENTS:
        args = documented_command(name)
        assert f"experiment={name}" in args


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_composes_and_passes_the_run_checks(experiment):
    """Compose the documented cell as ``spl-bench run`` does, then the task's own checks."""
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=documented_command(experiment), return_hydra_config=False)
    app.check_root_keys(cfg, experiment)
    protocol_config(cfg)
    estimator_factory(cfg)
    assert cfg.exp_name == experiment
    ident = identity(cfg)  # every number-determining value resolves (Table 7's alpha by data set)
    assert isinstance(ident["model"]["params"], dict)


#: ``spl-bench run <overrides>`` as the README and the docs write it (in code or in a code block)
DOC_COMMAND = re.compile(r"spl-bench run ([^`#\n]+)")


def documented_run_commands() -> list[tuple[str, list[str]]]:
    """(where, arguments) of every complete ``spl-bench run`` command in README.md and docs/*.md.

    Placeholders (``<row>``, ``...``) and commands continued on the next line are left out; ``-m``
    (Hydra multirun) is kept: a sweep is checked job by job.
    """
    root = config_dir().parent
    out = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for k, line in enumerate(path.read_text().splitlines(), 1):
            for m in DOC_COMMAND.finditer(line):
                text = m.group(1).strip()
                if not text or "..." in text or "<" in text or not re.fullmatch(r"[\w.+=,\-/{}:~' ]+", text):
                    continue
                args = shlex.split(text)
                if args and all("=" in a or a == "-m" for a in args):
                    out.append((f"{path.name}:{k}", args))
    return out


def sweep_jobs(args: list[str]) -> list[list[str]]:
    """The overrides of every job of a command (one job without a sweep; the product of its swept values)."""
    import itertools

    parsed = cli._first_of_sweeps([a for a in args if a != "-m"])
    choices = [[f"{key}={v}" for v in values] if values else [line] for line, key, values in parsed]
    return [list(job) for job in itertools.product(*choices)]


def test_every_documented_run_command_composes():
    """The commands the README and docs show pass spl-bench run's checks and compose, every job of a sweep."""
    commands = documented_run_commands()
    assert len(commands) >= 10, commands  # the README alone shows four
    bad = []
    for where, args in commands:
        try:
            cli.check_overrides(args)  # what spl-bench run checks before Hydra starts (a table's row, ...)
            for job in sweep_jobs(args):
                with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
                    cfg = compose("config", overrides=job)
                exp = next((a.split("=", 1)[1] for a in job if a.startswith("experiment=")), None)
                app.check_root_keys(cfg, exp)
                protocol_config(cfg)
                estimator_factory(cfg)
        except Exception as exc:  # every failure listed, not only the first
            bad.append(f"{where}: spl-bench run {' '.join(args)}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    assert not bad, "\n".join(bad)


#: ``spl-bench path <keys>`` as the README and the docs write it
PATH_COMMAND = re.compile(r"spl-bench path ([^`#\n]+)")


def test_every_documented_path_command_uses_keys_path_takes():
    """The ``spl-bench path`` commands of README.md and docs/*.md use keys the command takes (nothing is run)."""
    from spl_bench.runner import path_cmd

    root = config_dir().parent
    found = 0
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for line in path.read_text().splitlines():
            for m in PATH_COMMAND.finditer(line):
                args = [a for a in shlex.split(m.group(1)) if "=" in a and "<" not in a and "..." not in a]
                path_cmd._parse(args)  # a ConfigError names the key and the file's line in the traceback
                found += bool(args)
    assert found >= 1


def test_an_unknown_top_level_key_is_still_refused():
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=gaga_table7", "+protocl={n_runs: 1}"])
    with pytest.raises(ConfigError, match="unknown top-level config key 'protocl'"):
        app.check_root_keys(cfg, "gaga_table7")
    app.check_root_keys(_without(cfg, "protocl"), "gaga_table7")  # the experiment's own key is valid
    with pytest.raises(ConfigError, match="table7_gaga_alpha"):  # another experiment's key is not valid
        app.check_root_keys(cfg, "gaga_table9")


def _without(cfg, key: str):
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(cfg, resolve=False)
    plain.pop(key)
    return OmegaConf.create(plain)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_documented_one_cell_command_runs(experiment, data_dir: Path, tmp_path, monkeypatch, capsys):
    """``spl-bench run <the documented cell>`` for one seed on at most MAX_ROWS rows: exit 0, two finite rows."""
    monkeypatch.chdir(tmp_path)
    extra = ["protocol.n_runs=1", f"+data.max_rows={MAX_ROWS}", f"results_root={tmp_path / 'runs'}",
             "progress=false", "print_table=false"]  # fmt: skip
    try:
        code = cli.main(["run", *documented_command(experiment), *extra])
    except SystemExit as exc:  # the task exits 2 on a refused input, printing one line
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, None), f"spl-bench run failed: {err.strip()[-500:]}"
    files = list((tmp_path / "runs" / experiment).rglob("*__*.csv"))
    assert len(files) == 1, f"expected one row file, found {files}"
    assert files[0].parent == tmp_path / "runs" / experiment
    assert list(pd.read_csv(files[0].parent / "index.csv")["file"]) == [files[0].name]
    rows = read_row_file(files[0])
    assert len(rows) == 2 and set(rows["experiment"]) == {experiment}
    assert all(math.isfinite(v) for v in rows["value"])
