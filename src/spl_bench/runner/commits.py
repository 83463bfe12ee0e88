"""When the code of a committed row was made: the commit times of the checkout's git history.

A row's ``code_version`` (``"0.1.0+1c5fb72"``) names the commit whose code made it; the plan
(:mod:`spl_bench.runner.plan`) reads which seeds were made by code no older than a re-timing's.
"""

from __future__ import annotations

import functools
import subprocess

from spl_bench.paths import repo_root


def _git(*args: str, text: bool = True) -> subprocess.CompletedProcess | None:
    """``git -C <checkout> args...`` (30 s at most); ``None`` where git cannot be run."""
    try:
        return subprocess.run(["git", "-C", str(repo_root()), *args], capture_output=True, text=text, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None


def commit_of(version: object) -> str | None:
    """The git commit of a ``code_version`` (``"0.1.0+1c5fb72"``, ``"0.1.0+6a544e5+flag"``), if any."""
    parts = str(version).split("+")
    return parts[1] if len(parts) > 1 and parts[1] not in ("", "nogit") else None


@functools.lru_cache(maxsize=1)
def commit_times() -> dict[str, int]:
    """Commit time of every commit of the checkout's history, by abbreviated and full hash (empty
    without git)."""
    r = _git("log", "--format=%h %H %ct")
    if r is None or r.returncode != 0:
        return {}
    times: dict[str, int] = {}
    for line in r.stdout.splitlines():
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
    r = _git("merge-base", "--is-ancestor", ancestor, commit)
    return None if r is None else {0: True, 1: False}.get(r.returncode)


def contains(version: object, commit: str) -> bool | None:
    """Whether the code of a ``code_version`` includes ``commit`` (it is that commit or a descendant);
    ``None`` when it cannot be told (no commit in the version, or not in the checkout's history)."""
    own = commit_of(version) if version is not None else None
    return None if own is None else _is_ancestor(commit, own)


def resolve(commit: str) -> str | None:
    """The full hash of ``commit`` in the checkout's history (``None``: unknown)."""
    r = _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    return None if r is None else r.stdout.strip() or None


def show(commit: str, rel: str) -> bytes | None:
    """The bytes of file ``rel`` (a path inside the checkout) as committed at ``commit`` (``None``: not
    there, or no git)."""
    r = _git("show", f"{commit}:{rel}", text=False)
    return None if r is None or r.returncode != 0 else r.stdout


def changed_since(commit: str, under: str) -> list[str] | None:
    """Paths below ``under`` that differ between ``commit`` and the work tree (``git diff --name-only``);
    ``None`` where git cannot tell (no git, unknown commit)."""
    r = _git("diff", "--name-only", commit, "--", under)
    return None if r is None or r.returncode != 0 else r.stdout.split()
