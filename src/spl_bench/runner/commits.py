"""When the code of a committed row was made: the commit times of the checkout's git history.

A row's ``code_version`` (``"0.1.0+1c5fb72"``) names the commit whose code made it; the plan
(:mod:`spl_bench.runner.plan`) reads which seeds were made by code no older than a re-timing's.
"""

from __future__ import annotations

import functools
import subprocess

from spl_bench.paths import repo_root


def commit_of(version: object) -> str | None:
    """The git commit of a ``code_version`` (``"0.1.0+1c5fb72"``, ``"0.1.0+6a544e5+flag"``), if any."""
    parts = str(version).split("+")
    return parts[1] if len(parts) > 1 and parts[1] not in ("", "nogit") else None


@functools.lru_cache(maxsize=1)
def commit_times() -> dict[str, int]:
    """Commit time of every commit of the checkout's history, by abbreviated and full hash (empty
    without git)."""
    try:
        out = subprocess.run(["git", "-C", str(repo_root()), "log", "--format=%h %H %ct"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    times: dict[str, int] = {}
    for line in out.splitlines():
        short, full, ct = line.split()
        times[short] = times[full] = int(ct)
    return times


def made_at(version: object) -> int | None:
    """Commit time of the code of a ``code_version`` (``None``: no git, no commit, or not in the history)."""
    commit = commit_of(version) if version is not None else None
    return None if commit is None else commit_times().get(commit)


@functools.lru_cache(maxsize=4096)
def _is_ancestor(ancestor: str, commit: str) -> bool | None:
    """``git merge-base --is-ancestor``: ``None`` when git cannot tell (no git, unknown commit)."""
    try:
        r = subprocess.run(["git", "-C", str(repo_root()), "merge-base", "--is-ancestor", ancestor, commit],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(r.returncode)


def contains(version: object, commit: str) -> bool | None:
    """Whether the code of a ``code_version`` includes ``commit`` (it is that commit or a descendant);
    ``None`` when it cannot be told (no commit in the version, or not in the checkout's history)."""
    own = commit_of(version) if version is not None else None
    return None if own is None else _is_ancestor(commit, own)


def resolve(commit: str) -> str | None:
    """The full hash of ``commit`` in the checkout's history (``None``: unknown)."""
    try:
        r = subprocess.run(["git", "-C", str(repo_root()), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None
