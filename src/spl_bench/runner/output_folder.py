"""The output-folder check of ``spl-bench run`` (``results_root=``), ``report`` (``--out``) and
``path`` (``out=``): a folder that cannot be written is refused in one line before anything runs."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from spl_bench.errors import ConfigError, environment_error

#: bytes the output-folder check writes (and removes): less free space than this is a full disk
PROBE_BYTES = 64 * 1024


def check_output_folder(label: str, root: str) -> None:
    """Refuse an output folder (``results_root``, ``--out``, ``out``) that is a file or cannot be written.

    ``label`` names the option in the message (``results_root=``, ``--out ``, ``out=``).  For
    ``results_root`` this runs before Hydra starts: Hydra creates the run folder and writes its
    config files before the task runs, and a failure there (a full disk) is a traceback.  The
    check creates a folder and writes :data:`PROBE_BYTES` into it (a read-only folder, a missing
    permission and a full disk all fail here, in one line); nothing is left behind.
    """
    path = Path(root).expanduser().absolute()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == path else f"is under the file {existing}"
        raise ConfigError(f"{label}{root} {what}, not a folder; give a folder (it is created if missing)")
    try:
        with tempfile.TemporaryDirectory(dir=existing) as probe:
            with open(Path(probe) / "probe", "wb") as fh:
                fh.write(bytes(PROBE_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
    except OSError as exc:
        unnamed = OSError(exc.errno, exc.strerror)  # the probe's own name means nothing to the user
        problem = environment_error(unnamed, f"{label}{root}: writing in", existing, "nothing was run")
        if problem is not None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise problem from None
        raise ConfigError(
            f"{label}{root}: cannot create folders in {existing} ({exc.strerror or exc}); "
            "choose a writable folder"
        ) from None
