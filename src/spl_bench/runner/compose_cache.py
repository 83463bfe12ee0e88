"""Hydra's compositions of the table cells, kept on disk: the same configs without Hydra's time.

A table cell's config is composed by Hydra's compose API (:func:`~spl_bench.runner.cells.compose_cell`,
the config ``spl-bench run`` builds), at 0.1-0.4 s a composition on this project's config tree: the
plan over the 16 tables composes about 1,100 of them, and so does every sweep and report before it
starts.  A composition is a function of the config tree (the ``.yaml`` files under
:func:`~spl_bench.paths.config_dir`), the overrides and the versions of Hydra, OmegaConf and Python
(the config is kept pickled, with its flags and node types), so :func:`compose` keeps each under
``<cache dir>/compose/`` (:func:`~spl_bench.paths.cache_dir`: ``~/.cache/spl-bench``,
``$SPL_BENCH_CACHE_DIR``; ``off`` there composes every time) by the SHA-256 of all of these.  Any
change of a config file is another key, so a stale composition is never read; interpolations stay
unresolved, as Hydra returns them.  A file that cannot be read back as a config is composed again
and replaced; a cache that cannot be written is skipped (the composition is returned all the same).
Hydra's errors (an unknown override) are raised as before: they are never cached.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from spl_bench.atomic import atomic_write_bytes
from spl_bench.paths import cache_dir, config_dir

#: bumped when what is kept (or how it is composed) changes, so that older files are not read
FORMAT = 1

_tree_memo: dict[Path, tuple[tuple[tuple[str, int, int], ...], str]] = {}


def tree_digest(root: Path) -> str:
    """SHA-256 of the config tree under ``root``: each ``.yaml`` / ``.yml`` file's relative path and
    bytes.  Read again whenever a file's size or modification time (or the list of files) changed."""
    files = sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    stats = [p.stat() for p in files]
    stamp = tuple((p.relative_to(root).as_posix(), s.st_mtime_ns, s.st_size) for p, s in zip(files, stats, strict=True))
    memo = _tree_memo.get(root)
    if memo is not None and memo[0] == stamp:
        return memo[1]
    h = hashlib.sha256()
    for p, (rel, _, _) in zip(files, stamp, strict=True):
        h.update(rel.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    _tree_memo[root] = (stamp, h.hexdigest())
    return _tree_memo[root][1]


def compose_key(root: Path, overrides: Sequence[str]) -> str:
    """The cache key of the composition of ``config`` under ``root`` with ``overrides``."""
    import hydra
    import omegaconf

    parts = [FORMAT, hydra.__version__, omegaconf.__version__, list(sys.version_info[:3]), tree_digest(root),
             list(overrides)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _hydra_compose(root: Path, overrides: Sequence[str]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(root), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))


def compose(overrides: Sequence[str]) -> DictConfig:
    """The ``config`` of :func:`~spl_bench.paths.config_dir` composed with ``overrides`` (Hydra's
    compose API), from the cache when it holds it (a fresh object each call: callers may change it)."""
    root = config_dir()
    where = cache_dir()
    if where is None:
        return _hydra_compose(root, overrides)
    key = compose_key(root, overrides)
    path = where / "compose" / key[:2] / f"{key}.pkl"
    try:
        cfg = pickle.loads(path.read_bytes())
        if isinstance(cfg, DictConfig):
            return cfg
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged file (cut short, another format): composed again below
        pass
    cfg = _hydra_compose(root, overrides)
    try:
        atomic_write_bytes(path, pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL), fsync=False)
    except OSError:  # a read-only or full cache folder: no cache, the same config
        pass
    return cfg
