"""One OpenBLAS kernel family for every run on a CPU that can execute it.

OpenBLAS picks its compute kernels by the CPU it finds (``architecture`` in threadpoolctl), and
kernels of another family round differently: a method that amplifies rounding (MOSPL's
evolutionary search, a path that jumps) then gives other numbers from the same config, seed
and library versions.  The committed rows reproduce with the ``SkylakeX`` kernels (also with
``Cooperlake``, the same double-precision kernels) and not with ``Haswell``, which OpenBLAS
0.3.30 falls back to on an AMD EPYC of family 0x1A (Zen 5): the MOSPL drift cells of Tables 15
and 16 (seed 0: 0.34 and 0.8297 against 0.318 and 0.8103).  So a process that imports ``spl_bench``
before numpy asks OpenBLAS for that family, through ``OPENBLAS_CORETYPE`` (read when the library
loads; numpy's and scipy's OpenBLAS both read it), where the CPU has the AVX-512 subsets it
needs.  Child processes (test workers, joblib and Dask workers) inherit the variable.

``SPL_BENCH_BLAS_KERNEL`` chooses another family (an OpenBLAS core name), or ``auto`` for
OpenBLAS's own choice; an ``OPENBLAS_CORETYPE`` already set is left as it is.  The family a run
used is part of its recorded environment (:mod:`spl_bench.environment`).
"""

from __future__ import annotations

import os
import sys

#: the environment variable choosing the kernel family (``auto``: OpenBLAS's own choice)
KERNEL_ENV = "SPL_BENCH_BLAS_KERNEL"
#: the family of the committed rows
REFERENCE_KERNEL = "SkylakeX"
#: the CPU features (``/proc/cpuinfo`` flags) the reference family executes
REFERENCE_NEEDS = frozenset({"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"})


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def pin_openblas_kernel() -> str | None:
    """Set ``OPENBLAS_CORETYPE`` as the module docstring says; return the family asked for, or
    ``None`` where OpenBLAS chooses (``auto``, a CPU without the reference family's features, or
    numpy loaded already, when the variable would reach only child processes)."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"]
    wanted = os.environ.get(KERNEL_ENV, "").strip() or REFERENCE_KERNEL
    if wanted.lower() == "auto" or "numpy" in sys.modules:
        return None
    if wanted == REFERENCE_KERNEL and not REFERENCE_NEEDS <= cpu_flags():
        return None
    os.environ["OPENBLAS_CORETYPE"] = wanted
    return wanted
