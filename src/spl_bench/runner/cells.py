"""The cells of a paper's table and their configs.

A *cell* is one point of a table's Hydra sweep (``configs/experiment/<table>.yaml``,
``hydra.sweeper.params``) and the extra sweeps of :data:`~spl_bench.table_registry.EXTRA_SWEEPS`:
the same config that ``spl-bench run experiment=<table> <overrides>`` composes
(:func:`compose_cell`), under a protocol variant where the cell has one
(:data:`~spl_bench.table_registry.PROTOCOL_VARIANTS`).  Its configuration hash
(:func:`cell_hash`) is the runner's, so a cell's committed rows are exactly what ``spl-bench run``
would resume from.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from spl_bench.errors import ConfigError
from spl_bench.paths import config_dir, rows_root
from spl_bench.rowstore import cell_file
from spl_bench.table_registry import (
    CLEAN_VARIANT,
    EQUAL_CANDIDATE_METHODS,
    EQUAL_CANDIDATE_TABLES,
    EQUAL_VARIANT,
    EXTRA_SWEEPS,
    OLD_RULES,
    PROTOCOL_VARIANTS,
    TABLES,
    step_rule_key,
)


@dataclass(frozen=True)
class Cell:
    """One cell of a table: the overrides of ``spl-bench run`` that compose its config."""

    table: str
    experiment: str
    overrides: tuple[str, ...]
    variant: str = ""  # a key of PROTOCOL_VARIANTS: the same cell under another protocol
    # the method's current rule even where the table's committed rows are on an old one (OLD_RULES:
    # GAGA's step rule, MOSPL's model full fit): the reruns of issue 62, beside those rows under their own hash
    current_rule: bool = False

    @property
    def rows_name(self) -> str:
        """Folder of the cell's rows: ``<experiment>`` or ``<experiment>@<variant>``."""
        return f"{self.experiment}@{self.variant}" if self.variant else self.experiment

    @property
    def cell_id(self) -> str:
        """A file-name-safe label, e.g. ``table_row=t2_music_n30,method=gaga`` (:func:`cell_name`)."""
        return cell_name(self.overrides, self.experiment)

    def rows_file(self, h: str, root: Path | None = None) -> Path:
        """The row file of this cell under configuration hash ``h`` (:mod:`spl_bench.rowstore`), below
        ``root`` (default ``results/rows``)."""
        return cell_file(root or rows_root(), self.rows_name, self.cell_id, h)

    @property
    def label(self) -> str:
        """The cell as the sweep's log and the plan name it: rows folder and cell id (and the rerun's rule)."""
        return f"{self.rows_name} {self.cell_id}" + (" [current rule]" if self.current_rule else "")


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


@cache
def run_only_keys() -> frozenset[str]:
    """Keys of an override that change where or how a run goes, never its rows: not part of a cell's name.

    Hydra's ``override_dirname.exclude_keys`` of ``configs/config.yaml`` (results folder, progress,
    printing, ``protocol.n_runs``...) and the GAGA run-only options (checkpoints, BLAS threads).
    """
    root = OmegaConf.load(config_dir() / "config.yaml")
    keys = OmegaConf.select(root, "hydra.job.config.override_dirname.exclude_keys", default=[]) or []
    return frozenset([*map(str, keys), "method.checkpoint_dir", "method.blas_threads"])


#: a value of an override that holds a path (``data.path=/some/dir/wine2.csv.gz``): up to the next ``,``
_PATH_VALUE = re.compile(r"=([^,=]*/[^,=]*)")


def _path_value(match: re.Match[str]) -> str:
    value = match.group(1)
    last = value.rstrip("/").rsplit("/", 1)[-1] or "root"
    return f"={last}~{hashlib.sha1(value.encode()).hexdigest()[:6]}"


def short_path_values(text: str) -> str:
    """``text`` (overrides joined by ``,``) with each value that is a path named by its last part and 6 hex
    digits of the whole value (``data.file=wine2.csv.gz~1a2b3c``): one short name per path, one folder level."""
    return _PATH_VALUE.sub(_path_value, text)


def cell_overrides(overrides: Iterable[str], experiment: str | None = None) -> list[str]:
    """The overrides that make a cell, in its order: run-only keys (:func:`run_only_keys`) and Hydra's own
    left out, the experiment's swept keys first in the order its ``hydra.sweeper.params`` lists them,
    any other key after them, sorted."""
    skip = run_only_keys()
    kept = [o for o in overrides if _key(o) not in skip and not _key(o).startswith("hydra")]
    order = [_key(k) for k in _sweep_params(experiment)] if experiment else []
    rank = {k: i for i, k in enumerate(order)}
    return sorted(kept, key=lambda o: (rank.get(_key(o), len(rank)), "" if _key(o) in rank else _key(o)))


def cell_name(overrides: Iterable[str], experiment: str | None = None) -> str:
    """The name of the cell that ``overrides`` run: its rows' file is ``<name>__<hash>.csv``.

    The same for ``spl-bench run`` and the table sweep: the cell's overrides (:func:`cell_overrides`)
    joined by ``,`` with ``+`` dropped, a path value named by its last part and a digest
    (:func:`short_path_values`); characters unsafe in a file name become ``_``.  No override
    at all: ``_default``.
    """
    text = short_path_values(",".join(o.lstrip("+") for o in cell_overrides(overrides, experiment)))
    return re.sub(r"[^A-Za-z0-9_.=,~-]", "_", text) or "_default"


def table_of(experiment: str | None) -> str | None:
    """The key of :data:`TABLES` whose experiment config is ``experiment`` (None: not a table's)."""
    return next((t for t, (exp, _, _) in TABLES.items() if exp == experiment), None)


def table_overrides(table: str | None, method: str, task: str, data: str, variant: str = "",
                    current_rule: bool = False) -> list[str]:
    """The overrides a table's cell adds to its own: its variant's protocol, and the candidate rule of
    its committed GAGA rows (:data:`~spl_bench.table_registry.STEP_CANDIDATES`) unless ``current_rule``."""
    more: list[str] = []
    if variant:
        spec = PROTOCOL_VARIANTS[variant]
        more += [*spec[task], *spec.get(f"data={data}", ())]
    return more + rule_overrides(table, method, variant, current_rule)


def rule_overrides(table: str | None, method: str, variant: str = "", current_rule: bool = False) -> list[str]:
    """The overrides of ``method``'s old rule (:data:`~spl_bench.table_registry.OLD_RULES`: GAGA's
    step-point candidates, MOSPL's full fit by the model's solver) for a cell whose table (or whose
    table under ``variant``, :func:`~spl_bench.table_registry.step_rule_key`) is still on it, unless
    ``current_rule``; else nothing."""
    keys, overrides = OLD_RULES.get(method, (frozenset(), ()))
    if step_rule_key(table, variant) in keys and not current_rule:
        return list(overrides)
    return []


def variant_of(overrides: Iterable[str], task: str) -> str:
    """The protocol variant (:data:`~spl_bench.table_registry.PROTOCOL_VARIANTS`) whose overrides for
    ``task`` are all among ``overrides`` (the one with the most, where several are), or ``""``: how a
    cell typed by hand names the variant the sweep would have composed it under."""
    given = {o.lstrip("+") for o in overrides}
    hits = [(len(spec[task]), name) for name, spec in PROTOCOL_VARIANTS.items()
            if task in spec and spec[task] and set(spec[task]) <= given]
    return max(hits)[1] if hits else ""


def companion_cells(cell: Cell) -> list[Cell]:
    """Cells whose rows come from the same fits as ``cell``'s: of a GAGA or ACS cell of a table in
    :data:`~spl_bench.table_registry.EQUAL_CANDIDATE_TABLES`, its equal-candidates cell (the same
    config with ``protocol.candidates=shared_grid``: one fit, a second selection).  The sweep runs the
    fit once and writes both (:func:`spl_bench.runner.cell_run.run_cells` checks that nothing else differs)."""
    if cell.variant or cell.table not in EQUAL_CANDIDATE_TABLES or method_of(cell) not in EQUAL_CANDIDATE_METHODS:
        return []
    twin = replace(cell, variant=EQUAL_VARIANT)
    return [twin] if replace(twin, current_rule=False) in _equal_cells(cell.table) else []


@cache
def _equal_cells(table: str) -> frozenset[Cell]:
    return frozenset(table_cells(table, variant=EQUAL_VARIANT))


def _sweep_params(experiment: str) -> dict[str, list[str]]:
    return {k: list(v) for k, v in _read_sweep_params(experiment).items()}


@cache
def _read_sweep_params(experiment: str) -> dict[str, list[str]]:
    path = config_dir() / "experiment" / f"{experiment}.yaml"
    if not path.is_file():
        raise ConfigError(f"no experiment config {path}")
    conf = OmegaConf.load(path)
    params = OmegaConf.select(conf, "hydra.sweeper.params", default=None)
    if params is None:
        raise ConfigError(f"{path} has no hydra.sweeper.params")
    return {str(k): [v.strip() for v in str(val).split(",")] for k, val in params.items()}


def table_cells(
    table: str, methods: Iterable[str] | None = None, data: Iterable[str] | None = None, variant: str = "",
    where: Iterable[str] | None = None, current_rule: bool = False,
) -> list[Cell]:
    """Every cell of ``table`` (a key of :data:`TABLES`), optionally only some methods / datasets.

    ``variant``: a key of :data:`PROTOCOL_VARIANTS` (the cells under that protocol, rows kept apart).
    ``where``: ``key=value`` conditions on the cell's sweep parameters (e.g. ``model.params.C=1.0``);
    a cell is kept when, for every key named, its value is one of those given for that key.
    With ``variant="clean"`` the cells are the clean-label reference: per table row (a noise rate
    swept by the table is not a row of its own here) the plain model, ``method=original``.
    ``current_rule``: the cells of the methods with an old rule (:data:`OLD_RULES`: GAGA's step-point
    candidates, MOSPL's model full fit) under their current rule even where the table's committed rows
    are on the old one (:attr:`Cell.current_rule`; the other methods' cells are left out).
    """
    if variant and variant not in PROTOCOL_VARIANTS:
        raise ConfigError(f"unknown variant {variant!r}; valid: {', '.join(PROTOCOL_VARIANTS)}")
    if table not in TABLES:
        raise ConfigError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
    experiment = TABLES[table][0]
    base = _sweep_params(experiment)
    if variant == CLEAN_VARIANT:
        if not experiment.startswith("gaga_"):
            raise ConfigError(f"variant {CLEAN_VARIANT!r} is defined for the GAGA tables (their plain model is "
                              f"method=original); table {table!r} has none")
        base = {k: v for k, v in base.items() if k not in ("method", "method.variant", "noise.rate")}
        base["method"] = ["original"]
    if variant == EQUAL_VARIANT:
        base = {**base, "method": [m for m in base.get("method", []) if m in EQUAL_CANDIDATE_METHODS]}
    sweeps = [base]
    for extra in EXTRA_SWEEPS.get(table, []) if variant != EQUAL_VARIANT else []:
        sweeps.append({**{k: v for k, v in base.items() if k not in ("method", "method.variant")}, **extra})
    keep_m = set(methods) if methods else None
    keep_d = set(data) if data else None
    conditions: dict[str, set[str]] = {}
    for item in where or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--where takes key=value, got {item!r}")
        conditions.setdefault(key.strip(), set()).add(value.strip())
    out: list[Cell] = []
    for sweep in sweeps:
        keys = list(sweep)
        for values in itertools.product(*(sweep[k] for k in keys)):
            pairs = dict(zip(keys, values, strict=True))
            if keep_m and pairs.get("method") not in keep_m:
                continue
            if keep_d and not _mentions_dataset(pairs, keep_d):
                continue
            if any(pairs.get(k) not in vals for k, vals in conditions.items()):
                continue
            if current_rule and pairs.get("method") not in OLD_RULES:
                continue
            out.append(Cell(table, experiment, tuple(f"{k}={v}" for k, v in pairs.items()), variant, current_rule))
    return out


def _mentions_dataset(pairs: dict[str, str], names: set[str]) -> bool:
    if "data" in pairs:
        return pairs["data"] in names
    row = pairs.get("+table_row", "")
    return any(f"_{n}_" in f"_{row}_" or row.split("_", 1)[-1].startswith(f"{n}_n") for n in names)


def compose_cell(cell: Cell, extra: Iterable[str] = ()) -> DictConfig:
    """The config of ``cell`` (Hydra's compose API: the same config ``spl-bench run`` builds; kept on disk
    by :func:`~spl_bench.runner.compose_cache.compose`), then with its table's overrides (:func:`table_overrides`)."""
    from spl_bench.runner.compose_cache import compose

    base = [f"experiment={cell.experiment}", *cell.overrides]
    cfg = compose([*base, *extra])
    more = table_overrides(cell.table, str(cfg.method.name), str(cfg.data.task), str(cfg.data.name), cell.variant,
                           cell.current_rule)
    if more:
        cfg = compose([*base, *more, *extra])
    return cfg


def cell_hash(cfg: DictConfig) -> str:
    """The configuration hash the runner gives this config (its resumable identity)."""
    from spl_bench.rowfiles import config_hash
    from spl_bench.runner.run_config import identity

    return config_hash(identity(cfg))


def method_of(cell: Cell) -> str:
    """The method a cell runs (its ``method=`` override; ``?`` without one)."""
    for o in cell.overrides:
        if o.startswith("method="):
            return o.split("=", 1)[1]
    return "?"


def old_rule_reruns(cells: Iterable[Cell]) -> list[Cell]:
    """The reruns still owed by ``cells`` (a table's cells as the tables read them): each cell of a method
    whose table key is still on that method's old rule (:data:`OLD_RULES`), as the cell under the current
    rule (:attr:`Cell.current_rule`), where the rule changes its rows (issue 62).

    GAGA's step-point candidates leave every table.  MOSPL's old rule (the model's own full fit, the
    kernel matrix's product) is kept where it changes nothing worth a rerun and leaves the linear-kernel
    SVM cells only (docs/mospl.md, "The full fit and the kernel product"), so only those are owed.
    """
    out = []
    for cell in cells:
        method = method_of(cell)
        if cell.current_rule or method not in OLD_RULES:
            continue
        if step_rule_key(cell.table, cell.variant) not in OLD_RULES[method][0]:
            continue
        if method == "mospl":
            model = compose_cell(cell).model
            if not (model.name == "svm" and model.params.get("kernel") == "linear"):
                continue
        out.append(replace(cell, current_rule=True))
    return out
