"""The one cell runner: a cell's config and a seed in, that seed's tidy rows out.

``spl-bench run`` (:mod:`spl_bench.runner.app`) and the table sweep
(:mod:`spl_bench.runner.reproduce`) both call :func:`prepare_cell` once per cell and
:func:`run_cell` per seed, then add the rows through one :class:`~spl_bench.rowstore.CellStore`,
so a seed run by hand and a committed seed are one computation written to one layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from spl_bench.data import Dataset, load_dataset
from spl_bench.errors import ConfigError
from spl_bench.methods.base import SPLEstimator
from spl_bench.progress import DisplayHook, with_progress
from spl_bench.protocol import NoiseConfig, ProtocolConfig, run_shared, shares_fit
from spl_bench.rowfiles import config_hash
from spl_bench.rowstore import CellStore
from spl_bench.runner import run_config


@dataclass
class PreparedCell:
    """A cell's config with its inputs checked once: data loaded, protocol, noise, estimator, identity."""

    cfg: DictConfig
    ds: Dataset
    protocol: ProtocolConfig
    noise: NoiseConfig
    make: Callable[..., SPLEstimator]
    identity: dict[str, Any]
    config_hash: str

    def store(self, root: Path, folder: str, cell: str) -> CellStore:
        """The row store of this cell under ``root/folder`` (its file is ``<cell>__<hash>.csv``)."""
        return CellStore(root, folder, cell, self.config_hash, self.identity)


def prepare_cell(cfg: DictConfig) -> PreparedCell:
    """Check ``cfg`` and load its data: the one place a run's inputs are validated."""
    protocol = run_config.protocol_config(cfg)
    ds = load_dataset(run_config.plain(cfg.data))
    run_config.check_task(cfg, ds)
    noise = run_config.noise_config(cfg, ds.task)
    make = run_config.estimator_factory(cfg)
    ident = run_config.identity(cfg)
    return PreparedCell(cfg, ds, protocol, noise, make, ident, config_hash(ident))


def run_cell(cell: PreparedCell, seed: int, hook: DisplayHook | None = None,
             after_fit: Callable[[SPLEstimator, int], None] | None = None) -> list[dict[str, Any]]:
    """Run seed ``seed`` of the cell (one protocol run) and return its tidy rows.

    ``hook``: the estimator's progress reports (GAGA's age, ACS's grid, MOSPL's generations);
    ``after_fit``: called with each fitted estimator (saving GAGA's path).  A non-finite metric is
    refused (:class:`FloatingPointError`): it is never written.
    """
    return run_cells([cell], seed, hook, after_fit)[0]


def fit_differences(a: PreparedCell, b: PreparedCell) -> list[str]:
    """What makes ``b``'s fit differ from ``a``'s: the config sections (data, noise, model, SP, method,
    protocol apart from its candidates) in which they differ.  Empty: one fit serves both cells."""
    out = [k for k in ("data", "noise", "model", "sp", "method")
           if run_config.plain(a.cfg[k]) != run_config.plain(b.cfg[k])]
    if not shares_fit(a.protocol, b.protocol):
        out.append("protocol")
    return out


def run_cells(cells: Sequence[PreparedCell], seed: int, hook: DisplayHook | None = None,
              after_fit: Callable[[SPLEstimator, int], None] | None = None) -> list[list[dict[str, Any]]]:
    """Seed ``seed`` of cells that share one fit, fitted once (:func:`~spl_bench.protocol.run_shared`):
    the first cell and companions that differ from it only in the candidates offered to the selection
    (the equal-candidates control beside a method's own).  The rows of each cell, in their order,
    each under its own configuration hash: the rows each cell gives when run alone.
    """
    first = cells[0]
    for other in cells[1:]:
        diff = fit_differences(first, other)
        if diff:
            raise ConfigError(f"cells that share a fit may differ only in the protocol's candidates; "
                              f"{other.config_hash} differs from {first.config_hash} in {', '.join(diff)}")
    outs = run_shared(first.ds, with_progress(first.make, hook), [c.protocol for c in cells], first.noise, seed,
                      after_fit=after_fit)
    rows = []
    for cell, out in zip(cells, outs, strict=True):
        if not math.isfinite(out.value):
            raise FloatingPointError(f"seed {seed} produced a non-finite metric")
        rows.append(run_config.outcome_rows(cell.cfg, cell.ds, cell.noise, out, cell.config_hash))
    return rows
