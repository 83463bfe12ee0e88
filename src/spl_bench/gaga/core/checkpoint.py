"""Checkpoints of a path computation, so that a path longer than a session can be resumed.

:func:`~spl_bench.gaga.api.age_path` with ``EngineOptions.checkpoint_dir`` saves the whole
state of its tracker (system, factor caches, recorded points, events, counters) between two
segments, at most every ``checkpoint_every`` seconds, to ``<dir>/agepath-<key>.pkl``.  The key
hashes everything the path depends on: the data, the model and SP-regularizer with their
parameters, the age range, the initial point and the numerical options.  A later call with the
same inputs loads the file and continues the segment loop where it stopped; since the state is
restored whole and the engine has no time-dependent numerics, the resumed path equals the
uninterrupted one bit for bit (``tests/test_gaga_checkpoint.py``).  The file is removed when the
path is complete.

The files are pickles (``cloudpickle``: the factor caches hold closures); load only checkpoints
you wrote yourself.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from spl_bench.gaga.core.path import _jsonable

#: bumped when the tracker's state changes shape: older checkpoints are then ignored (2: the tracker's
#: mixins became collaborators on one ``TrackState``, issue 61)
FORMAT = 2
#: engine options added after checkpoints were written, with the value that computes what the engine
#: computed before them: in the key only at another value, so that those checkpoints resume with it
KEY_ONLY_WHEN_SET = {"acs_warm_extrapolate": False}


def checkpoint_key(X: np.ndarray, y: np.ndarray, inputs: dict[str, Any], options: Any,
                   run_only: tuple[str, ...]) -> str:
    """Hex digest identifying a path: the data, ``inputs`` (model, SP, ages, initial point; JSON
    with arrays as lists) and the options that change the numbers (all but ``run_only``)."""
    h = hashlib.sha256()
    for a in (X, y):
        a = np.ascontiguousarray(a)
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    # options added after checkpoints existed count only away from their earlier behaviour
    opts = {k: v for k, v in asdict(options).items()
            if k not in run_only and not (k in KEY_ONLY_WHEN_SET and v == KEY_ONLY_WHEN_SET[k])}
    h.update(json.dumps({"inputs": inputs, "options": opts, "format": FORMAT}, sort_keys=True,
                        default=_jsonable).encode())
    return h.hexdigest()[:24]


def checkpoint_file(directory: str | os.PathLike[str], key: str) -> Path:
    return Path(directory) / f"agepath-{key}.pkl"


def load(path: Path, key: str) -> dict[str, Any] | None:
    """The saved state at ``path`` if it is a checkpoint of the path ``key``; ``None`` (with a
    warning for an unreadable or foreign file) otherwise."""
    if not path.is_file():
        return None
    try:
        with path.open("rb") as fh:
            state = pickle.load(fh)
    except Exception as exc:  # a truncated or foreign file: start afresh, keep the file's name free
        warnings.warn(f"GAGA: ignoring unreadable checkpoint {path} ({type(exc).__name__}: {exc})",
                      RuntimeWarning, stacklevel=3)
        return None
    if not isinstance(state, dict) or state.get("key") != key or state.get("format") != FORMAT:
        warnings.warn(f"GAGA: ignoring checkpoint {path}: it belongs to another path or format",
                      RuntimeWarning, stacklevel=3)
        return None
    return state


def save(path: Path, key: str, tracker: Any, elapsed: float, cpu: float | None = None) -> None:
    """Write the tracker's state atomically (a temporary file, then a rename), with the wall-clock
    ``elapsed`` and the ``cpu`` seconds (process time) the path has taken so far."""
    import cloudpickle

    path.parent.mkdir(parents=True, exist_ok=True)
    progress, tracker.progress = tracker.progress, None  # the caller's callback is not state
    try:
        blob = cloudpickle.dumps({"format": FORMAT, "key": key, "elapsed": float(elapsed),
                                  "cpu": None if cpu is None else float(cpu),
                                  "tracker": tracker}, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        tracker.progress = progress
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, path)
