"""The environment a run was made in: library versions, BLAS and CPU, recorded in every row.

The same config and seed give the same numbers only in the same environment: a release of numpy,
scipy, scikit-learn or numba, or another BLAS, can move the last digits of a path and, after a
jump, which partial optimum it follows.  Every row written by ``spl-bench run`` and by the table
reproduction carries the environment of its process as compact JSON in the ``environment`` column
(:func:`environment_json`); the reports name the environments their rows came from and warn
when one cell pools rows made under different library versions (:func:`library_key`) or
different BLAS kernel families (:func:`kernel_family`).

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

#: keys of an environment compared between the rows of one cell.  The BLAS library is not among
#: them: the wheels of numpy and scipy bundle their own OpenBLAS, so their versions decide it (and
#: a process lists them in the order it happened to load them); its kernel family is compared on
#: its own (:func:`kernel_family`).  CPU and BLAS threads can move the last bits; they are
#: recorded, not compared.
LIBRARY_KEYS = ("python", *LIBRARIES)

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
    """Every BLAS loaded, ``"<library> <version> <kernel family> (<package>)"`` sorted, and numpy's
    thread count now.

    numpy and scipy are imported first (threadpoolctl lists only libraries already loaded), so
    the answer does not depend on what the process happened to import before.
    """
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    found, threads = [], None
    for pool in threadpool_info():
        if pool.get("user_api") != "blas":
            continue
        path = str(pool.get("filepath", ""))
        owner = next((pkg for pkg in ("numpy", "scipy") if f"{pkg}.libs" in path or f"/{pkg}/" in path), "other")
        name = pool.get("internal_api") or pool.get("prefix") or "blas"
        # the kernel family (OpenBLAS's architecture) decides the rounding: spl_bench.runner.drift
        arch = f" {pool['architecture']}" if pool.get("architecture") else ""
        found.append(f"{name} {pool.get('version') or '?'}{arch} ({owner})")
        if owner == "numpy" or threads is None:
            threads = pool.get("num_threads")
    return ("; ".join(sorted(found)) or "unknown"), threads


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
    """What must be equal for two rows to be pooled without a warning: Python and the libraries."""
    env = parse(text)
    if env is None:
        return NOT_RECORDED
    return ", ".join(f"{k} {env.get(k, '?')}" for k in LIBRARY_KEYS)


def kernel_family(text: Any) -> str | None:
    """The kernel family of numpy's BLAS in a row's environment (``"SkylakeX"``), or None where the
    row does not record one (rows before the family was recorded, or a BLAS that has none).

    OpenBLAS picks its compute kernels by the CPU, or by ``OPENBLAS_CORETYPE``; two families can
    round differently and, after a jump, follow another partial optimum (``spl_bench.runner.drift``).
    """
    env = parse(text)
    if env is None:
        return None
    for entry in str(env.get("blas", "")).split(";"):
        words = entry.split()
        # "<library> <version> <family> (numpy)"; no family: "<library> <version> (numpy)"
        if len(words) == 4 and words[3] == "(numpy)":
            return words[2]
    return None


def describe(text: Any) -> str:
    """One line naming an environment: its library key, then CPU and BLAS threads."""
    env = parse(text)
    if env is None:
        return NOT_RECORDED
    return (f"{library_key(text)}; BLAS {env.get('blas', '?')}, {env.get('blas_threads', '?')} threads; "
            f"CPU {env.get('cpu', '?')}")


@cache
def code_version() -> str:
    """Package version plus the git commit of the checkout, if any (the ``code_version`` column of a row)."""
    import subprocess

    from spl_bench import __version__
    from spl_bench.paths import repo_root

    try:
        sha = subprocess.run(
            ["git", "-C", str(repo_root()), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        sha = "nogit"
    return f"{__version__}+{sha}"
