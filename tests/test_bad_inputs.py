"""Bad inputs give one clear message, never a traceback; the estimators follow scikit-learn.

``tests/bad_inputs.csv`` is the table of bad inputs tried and what they must say.  Add a row
to extend it:

* ``surface=cli``: ``input`` is the command line after ``spl-bench`` (split like a shell
  does); ``{tmp}`` is a folder holding the broken files made by :func:`bad_files` and
  ``{readonly}`` a folder nobody can write to.  ``run`` rows get ``results_root={tmp}/runs``,
  one run of ``method=original`` and no progress bar first; their own overrides win.
  ``expected_exit`` is the exit status: 2 for spl-bench's own one-line errors (checked to be
  one line, without traceback, with nothing written under ``{tmp}/runs``), 1 for Hydra's
  errors about the command line itself.
* ``surface=python``: ``input`` is a Python expression over ``X`` (20 x 3), ``y`` (a
  regression target), ``yc`` (labels -1/+1), ``np`` and the method classes;
  ``expected_exit`` is the exception class it must raise (a base class name is enough).
"""

from __future__ import annotations

import csv
import gzip
import os
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_estimator

from spl_bench.methods.acs import ACS
from spl_bench.methods.dspl import DSPL
from spl_bench.methods.gaga import GAGA
from spl_bench.methods.mospl import MOSPL
from spl_bench.methods.original import Original
from spl_bench.methods.outlier_path.estimators import CCCP, CSVM, OutlierPath
from spl_bench.methods.robust.robust_svm import RobustSVMMethod
from spl_bench.methods.robust_regression import TORR, SPLKumar
from spl_bench.runner.cli import main

TABLE = Path(__file__).with_name("bad_inputs.csv")
ROWS = list(csv.DictReader(TABLE.open()))
RUN_PREFIX = ["progress=false", "print_table=false", "method=original", "protocol.n_runs=1"]


def test_the_table_is_well_formed():
    assert ROWS and set(ROWS[0]) == {"surface", "input", "expected_exit", "expected_message_substring"}
    assert {r["surface"] for r in ROWS} == {"cli", "python"}
    assert len({(r["surface"], r["input"]) for r in ROWS}) == len(ROWS), "duplicate rows"


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, str]:
    """``{tmp}``: broken dataset / results files; ``{readonly}``: a folder that cannot be written."""
    tmp = tmp_path_factory.mktemp("bad")
    good = "a,b,target\n1,2,3\n4,5,6\n"
    (tmp / "good.csv").write_text(good)
    (tmp / "trunc.csv.gz").write_bytes(gzip.compress(good.encode())[:30])
    (tmp / "plain.csv.gz").write_text(good)
    (tmp / "empty.csv").write_bytes(b"")
    (tmp / "empty_inside.csv.gz").write_bytes(gzip.compress(b""))
    (tmp / "text.csv").write_text("a,b,target\n1,x,3\n4,5,6\n")
    (tmp / "notarget.csv").write_text("a,b,y\n1,2,3\n4,5,6\n")
    (tmp / "header.csv").write_text("a,b,target\n")
    (tmp / "nanlabel.csv").write_text("a,b,target\n1,2,1\n4,5,\n7,8,0\n1,1,1\n")
    (tmp / "binary.csv").write_bytes(b"\x89PNG\x00\x01\xff\xfe")
    cell = "e,d,n,acs,lasso,linear,validation"  # one cell, rows of two configurations: refused, not averaged
    (tmp / "mixed.csv").write_text("experiment,dataset,noise,method,model,sp,selection,config_hash,seed,metric,value\n"
                                   + "".join(f"{cell},{h},{s},gen_error,{s + 1}\n"
                                             for h in ("a1b2c3d4e5f6", "a9b8c7d6e5f4") for s in range(2)))
    (tmp / "afile").write_text("not a folder")
    (tmp / "emptydir").mkdir()
    if os.geteuid() != 0:
        readonly = tmp / "readonly"
        readonly.mkdir(mode=0o555)
    elif Path("/sys").is_dir():  # root writes through permissions; /sys refuses new folders even to root
        readonly = Path("/sys")
    else:  # pragma: no cover
        pytest.skip("no folder that root cannot write to")
    return {"tmp": str(tmp), "readonly": str(readonly)}


def cli_rows():
    return [pytest.param(r, id=r["input"][:60]) for r in ROWS if r["surface"] == "cli"]


@pytest.mark.parametrize("row", cli_rows())
def test_cli_bad_input(row, bad_files, capsys):
    argv = [a.format(**bad_files) for a in shlex.split(row["input"])]
    runs = Path(bad_files["tmp"]) / "runs"
    if argv[0] == "run":
        argv = ["run", f"results_root={runs}", *RUN_PREFIX, *argv[1:]]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    flat = " ".join(err.split())
    assert code == int(row["expected_exit"]), err
    assert row["expected_message_substring"].format(**bad_files) in flat, err
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, f"not one line:\n{err}"
        assert err.startswith("error: ")
        leftovers = [p for p in runs.rglob("*")] if runs.exists() else []
        assert not leftovers, f"partial output left behind: {leftovers[:5]}"


def python_rows():
    return [pytest.param(r, id=r["input"][:60]) for r in ROWS if r["surface"] == "python"]


@pytest.mark.parametrize("row", python_rows())
def test_python_bad_input(row):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=20)
    yc = np.where(y > np.median(y), 1.0, -1.0)
    names = {"np": np, "X": X, "y": y, "yc": yc, "Original": Original, "ACS": ACS, "GAGA": GAGA, "CSVM": CSVM}
    with pytest.raises(Exception) as exc:  # noqa: PT011 - the class is checked below
        eval(row["input"], names)  # noqa: S307 - the expressions are the table's own
    mro = [c.__name__ for c in type(exc.value).__mro__]
    assert row["expected_exit"] in mro, f"{type(exc.value).__name__}: {exc.value}"
    assert row["expected_message_substring"] in " ".join(str(exc.value).split())


# ------------------------------------------------------------ check_estimator
# Regressors: every check of scikit-learn's check_estimator must pass (the cheap settings
# only shorten the age range / evolution; the checks fit each estimator ~50 times).
REGRESSORS = [
    Original(model="lasso"),
    ACS(model="lasso", lam_step=3.0),
    GAGA(model="lasso", lam_max=0.12),
    MOSPL(model="lasso", pop_size=8, n_gen=3),
    TORR(model="lasso", corruption=0.3),
    SPLKumar(model="lasso"),
    DSPL(model="lasso", backend="serial", n_batches=2, max_outer=5, max_admm=50),
]
#: checks a regressor may fail, with the reason
EXPECTED_REGRESSOR_FAILURES: dict[str, dict[str, str]] = {}
# Classifiers take labels -1 and +1 only (the SVM / logistic / path formulas are written
# for them); most of check_estimator fits them on labels 0/1 or strings, which they refuse
# with a clear message.  For them the test runs every check and requires: each check that
# fails, fails on that label refusal; all the others (unfitted, n_features, sparse, complex,
# empty, NaN, 1-D input, params, pickling of the unfitted estimator, ...) pass.
CLASSIFIERS = [
    Original(model="svm"), Original(model="logistic"), ACS(model="svm", lam_step=3.0), GAGA(model="svm"),
    GAGA(model="logistic"), OutlierPath(model="svm"), CCCP(model="svm"), CSVM(model="svm"),
    RobustSVMMethod(model="svm"),
]  # fmt: skip
LABEL_REFUSALS = ("labels -1/+1", "labels -1 and +1", "Unknown label type")
#: wraps the estimator's error in its own message: fitted on labels 0/1 with X >= 0
LABEL_WRAPPED = {"check_positive_only_tag_during_fit"}


def _run_checks(estimator: BaseEstimator, expected: dict[str, str] | None = None) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_estimator(estimator, on_fail=None, expected_failed_checks=expected)


def _label(e: BaseEstimator) -> str:
    return f"{type(e).__name__}-{e.model}"


@pytest.mark.parametrize("estimator", REGRESSORS, ids=_label)
def test_check_estimator_regressors(estimator):
    expected = EXPECTED_REGRESSOR_FAILURES.get(type(estimator).__name__, {})
    results = _run_checks(estimator, expected)
    failed = [(r["check_name"], repr(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    skipped = {r["check_name"] for r in results if r["status"] == "skipped"}
    assert not failed
    assert skipped <= {"check_array_api_input", *expected}
    assert len(results) >= 50  # the regressor checks ran, not just the generic ones


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=_label)
def test_check_estimator_classifiers_fail_only_on_label_coding(estimator):
    results = _run_checks(estimator)
    other = [(r["check_name"], repr(r["exception"])[:200]) for r in results if r["status"] == "failed"
             and r["check_name"] not in LABEL_WRAPPED
             and not any(s in str(r["exception"]) for s in LABEL_REFUSALS)]  # fmt: skip
    assert not other
    passed = {r["check_name"] for r in results if r["status"] == "passed"}
    assert {"check_estimators_unfitted", "check_estimators_empty_data_messages", "check_fit2d_1sample",
            "check_complex_data", "check_estimator_sparse_array", "check_classifiers_one_label",
            "check_classifier_not_supporting_multiclass", "check_classifiers_regression_target"} <= passed  # fmt: skip
    assert len(passed) >= 25
