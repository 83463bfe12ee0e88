"""OpenBLAS's kernel family (spl_bench._blas_kernel): asked for before numpy loads, recorded with each run."""

from __future__ import annotations

import os
import sys

import pytest
from threadpoolctl import threadpool_info

from spl_bench import _blas_kernel as bk
from spl_bench.environment import environment


def _families() -> set[str]:
    return {str(p.get("architecture")) for p in threadpool_info() if p.get("internal_api") == "openblas"}


def test_this_process_runs_the_reference_kernels_where_the_cpu_has_them():
    """The chain as a user meets it: conftest imports spl_bench before numpy, test workers inherit
    the variable, and numpy's and scipy's OpenBLAS both run the family asked for."""
    import scipy.linalg  # noqa: F401  (threadpoolctl lists loaded libraries only)

    asked = os.environ.get("OPENBLAS_CORETYPE")
    user_choice = os.environ.get(bk.KERNEL_ENV, "").strip()
    if bk.REFERENCE_NEEDS <= bk.cpu_flags() and not user_choice:
        assert asked == bk.REFERENCE_KERNEL
    if asked:
        assert {f.lower() for f in _families()} == {asked.lower()}
        assert f" {bk.REFERENCE_KERNEL if asked == bk.REFERENCE_KERNEL else asked}" in environment()["blas"]


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv(bk.KERNEL_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "numpy")  # as in a process that has not loaded it yet
    monkeypatch.setattr(bk, "cpu_flags", lambda: bk.REFERENCE_NEEDS | {"sse2"})
    return monkeypatch


def test_pin_sets_the_reference_family_on_a_cpu_that_runs_it(clean):
    assert bk.pin_openblas_kernel() == bk.REFERENCE_KERNEL
    assert os.environ["OPENBLAS_CORETYPE"] == bk.REFERENCE_KERNEL


def test_pin_leaves_openblas_to_choose_where_it_cannot_or_is_told_not_to(clean):
    clean.setattr(bk, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))  # no avx512bw / vl / dq / cd
    assert bk.pin_openblas_kernel() is None and "OPENBLAS_CORETYPE" not in os.environ
    clean.setattr(bk, "cpu_flags", lambda: bk.REFERENCE_NEEDS)
    clean.setenv(bk.KERNEL_ENV, "auto")
    assert bk.pin_openblas_kernel() is None and "OPENBLAS_CORETYPE" not in os.environ
    clean.setenv(bk.KERNEL_ENV, "Haswell")  # another family, by name
    assert bk.pin_openblas_kernel() == "Haswell" and os.environ["OPENBLAS_CORETYPE"] == "Haswell"
    clean.setenv("OPENBLAS_CORETYPE", "Zen")  # the user's own OpenBLAS setting wins
    assert bk.pin_openblas_kernel() == "Zen"


def test_pin_does_nothing_once_numpy_is_loaded(clean):
    clean.setitem(sys.modules, "numpy", object())
    assert bk.pin_openblas_kernel() is None and "OPENBLAS_CORETYPE" not in os.environ
