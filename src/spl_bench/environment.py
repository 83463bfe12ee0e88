"""The environment a run was made in: library versions, BLAS and CPU, recorded in every row.

The same config and seed give the same numbers only in the same environment: a release of numpy,
scipy, scikit-learn or numba, or another BLAS, can move the last digits of a path and, after a
jump, which partial optimum it follows.  Every row written by ``spl-bench run`` and by the table
reproduction carries the environment of its process as compact JSON in the ``environment`` column
(:func:`environment_json`); the reports name the environments their rows came from and warn
when one cell pools rows made under different library versions (:func:`library_key`).

Rows written before this column existed have none; the reports count them as "not recorded".
"""

from __future__ import annotations

import json
import platform
import sys
from functools import cache
from importlib import metadata
from typing import Any

#: distributions whose versions are recorded (PyPI names)
LIBRARIES = ("numpy", "scipy", "scikit-learn", "numba", "pandas", "hydra-core")

#: keys of an environment that decide the numbers (CPU and BLAS threads do not, by design of the
#: tests, but can move the last bits: they are recorded, not compared)
LIBRARY_KEYS = ("python", *LIBRARIES, "blas")

NOT_RECORDED = "not recorded"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas() -> tuple[str, int | None]:
    """``"<library> <version>"`` of the BLAS numpy calls, and its thread count now (threadpoolctl)."""
    import numpy  # noqa: F401  (threadpoolctl lists only libraries already loaded: numpy's BLAS)
    from threadpoolctl import threadpool_info

    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            name = pool.get("internal_api") or pool.get("prefix") or "blas"
            return f"{name} {pool.get('version') or '?'}", pool.get("num_threads")
    return "unknown", None


@cache
def _static() -> dict[str, Any]:
    env: dict[str, Any] = {"python": platform.python_version()}
    env.update({lib: _version(lib) for lib in LIBRARIES})
    env["cpu"] = _cpu_model()
    env["platform"] = f"{sys.platform}-{platform.machine()}"
    return env


def environment() -> dict[str, Any]:
    """Python, the libraries of :data:`LIBRARIES`, the BLAS library and its threads, the CPU model.

    The BLAS thread count is read at each call: a sweep limits it per run (``blas_threads``).
    """
    blas, threads = _blas()
    return {**_static(), "blas": blas, "blas_threads": threads}


def environment_json() -> str:
    """:func:`environment` as compact JSON with sorted keys (one column of a row)."""
    return json.dumps(environment(), sort_keys=True, separators=(",", ":"))


def parse(text: Any) -> dict[str, Any] | None:
    """The environment of a row's ``environment`` cell, or None for a row without one."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        env = json.loads(text)
    except json.JSONDecodeError:
        return None
    return env if isinstance(env, dict) else None


def library_key(text: Any) -> str:
    """What must be equal for two rows to be pooled without a warning: Python, libraries, BLAS."""
    env = parse(text)
    if env is None:
        return NOT_RECORDED
    return ", ".join(f"{k} {env.get(k, '?')}" for k in LIBRARY_KEYS)


def describe(text: Any) -> str:
    """One line naming an environment: its library key, then CPU and BLAS threads."""
    env = parse(text)
    if env is None:
        return NOT_RECORDED
    return f"{library_key(text)}; {env.get('blas_threads', '?')} BLAS threads; CPU {env.get('cpu', '?')}"
