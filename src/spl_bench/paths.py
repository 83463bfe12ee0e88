"""Where configs, datasets, caches and the committed rows live."""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the directory of local dataset files.
DATA_DIR_ENV = "SPL_BENCH_DATA_DIR"
#: Environment variable overriding the Hydra config directory.
CONFIG_DIR_ENV = "SPL_BENCH_CONFIG_DIR"
#: Environment variable naming the cache directory (``off``: no cache).
CACHE_DIR_ENV = "SPL_BENCH_CACHE_DIR"


def repo_root() -> Path:
    """The source checkout this package was installed from (editable install)."""
    return Path(__file__).resolve().parents[2]


def config_dir() -> Path:
    """The Hydra config directory (``configs/`` of the checkout, or ``$SPL_BENCH_CONFIG_DIR``)."""
    env = os.environ.get(CONFIG_DIR_ENV)
    path = Path(env) if env else repo_root() / "configs"
    return path.resolve()


def rows_root() -> Path:
    """Where the committed per-seed rows of the tables live (``results/rows`` of the checkout)."""
    return repo_root() / "results" / "rows"


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The local dataset directory: ``explicit``, else ``$SPL_BENCH_DATA_DIR``, else a user cache."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".cache" / "spl-bench" / "datasets").resolve()


def cache_dir() -> Path | None:
    """Where caches of derived files live (:mod:`spl_bench.runner.compose_cache`): ``$SPL_BENCH_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/spl-bench``, else ``~/.cache/spl-bench``; ``None`` when the variable is ``off``."""
    env = os.environ.get(CACHE_DIR_ENV, "")
    if env.lower() == "off":
        return None
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    try:
        return (Path(xdg) if xdg else Path.home() / ".cache").expanduser().resolve() / "spl-bench"
    except RuntimeError:  # no home directory to be found (a bare container): no cache
        return None
