"""Protocol: splits, test rows untouched by noise, selection, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from spl_bench.data import Dataset
from spl_bench.errors import ConfigError, DataError
from spl_bench.methods.acs import ACS
from spl_bench.methods.original import Original
from spl_bench.protocol import NoiseConfig, ProtocolConfig, run_once, split_indices, validation_split
from spl_bench.protocol.metrics import best_candidate, candidate_scores


def test_split3to1_sizes_and_disjoint():
    for run in range(5):
        tr, te = split_indices(400, run, "split3to1", 40)
        assert len(te) == 100 and len(tr) == 300
        assert not set(tr) & set(te)
    a = split_indices(400, 3, "split3to1", 40)
    b = split_indices(400, 3, "split3to1", 40)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(split_indices(400, 4)[1], a[1])


def test_kfold20_partitions_the_rows():
    tests = [split_indices(203, k, "kfold20", 40)[1] for k in range(20)]
    np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(203))
    with pytest.raises(ConfigError, match="20 folds"):
        split_indices(203, 20, "kfold20")


def test_split_errors():
    with pytest.raises(ConfigError, match="splits"):
        split_indices(100, 0, "bootstrap")
    with pytest.raises(DataError, match="too few"):
        split_indices(3, 0)
    with pytest.raises(ConfigError, match="val_size"):
        validation_split(100, 1.5, 0)
    with pytest.raises(ConfigError, match="selection"):
        ProtocolConfig(selection="train")


class Spy(Original):
    """Original that records the rows it was fitted on."""

    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def _fit(self, X, y):
        Spy.seen.append((X.copy(), y.copy()))
        super()._fit(X, y)


def test_noise_only_touches_training_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=200) > 0, 1.0, -1.0)
    ds = Dataset("toy", X, y, "classification")
    proto = ProtocolConfig(selection="test", n_runs=1)
    Spy.seen.clear()
    make = lambda: Spy(model="logistic")  # noqa: E731
    out = run_once(ds, make, proto, NoiseConfig("uniform_flip", 0.3), run=0)
    tr, te = split_indices(200, 0)
    assert out.n_corrupted == 45  # round(0.3 * 150)
    X_fit, y_fit = Spy.seen[-1]
    assert (y_fit != y[tr]).sum() == 45  # flipped training labels (row order preserved)
    # the clean-data run gives the same test accuracy only if the test rows are untouched
    clean = run_once(ds, make, proto, NoiseConfig("none", 0.0), run=0)
    est = make().fit(*Spy.seen[-1])
    mu, sd = X[tr].mean(0), X[tr].std(0)
    assert clean.value == pytest.approx(float((est.predict((X[te] - mu) / sd) == y[te]).mean()))


def test_selection_picks_the_best_candidate(diabetes):
    X, y = diabetes
    ds = Dataset("diab", X, y, "regression")
    proto = ProtocolConfig(selection="validation", n_runs=1)
    make = lambda: ACS(model="lasso", model_params={"alpha": 0.01}, lam_min=0.1, lam_max=3.0, lam_step=0.7)  # noqa: E731
    out = run_once(ds, make, proto, NoiseConfig("target_gaussian", 0.3), run=2)
    assert out.candidate["lam"] == out.lam and out.metric == "gen_error"
    again = run_once(ds, make, proto, NoiseConfig("target_gaussian", 0.3), run=2)
    assert again.value == out.value and again.lam == out.lam  # deterministic


def test_metrics():
    preds = np.array([[1.0, -1.0, 1.0], [1.0, 1.0, 1.0]])
    y = np.array([1.0, 1.0, 1.0])
    np.testing.assert_allclose(candidate_scores("classification", preds, y), [2 / 3, 1.0])
    assert best_candidate("classification", np.array([0.5, 0.9, 0.9])) == 1
    assert best_candidate("regression", np.array([0.5, 0.2, 0.9])) == 1
    with pytest.raises(FloatingPointError):
        best_candidate("regression", np.array([np.nan, 1.0]))


def _toy_classification(n: int = 240) -> Dataset:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Dataset("toy", X, y, "classification")


def test_noise_scope_all_corrupts_test_labels_once_for_every_run():
    from spl_bench.protocol.run import noisy_labels_all_rows

    ds = _toy_classification()
    noise = NoiseConfig("uniform_flip", 0.25)
    y_noisy, idx = noisy_labels_all_rows(ds, noise, 40)
    assert len(idx) == 60 and (y_noisy != ds.y).sum() == 60
    proto = ProtocolConfig(selection="validation", n_runs=2, noise_scope="all")
    make = lambda: Original(model="logistic")  # noqa: E731
    for run in range(2):
        out = run_once(ds, make, proto, noise, run=run)
        tr, te = split_indices(ds.n_samples, run)
        assert out.n_corrupted == int(np.isin(tr, idx).sum())
        # the reported value is measured on the noisy test labels, the clean one is kept in the info
        est = make().fit(*_fit_rows(ds, y_noisy, tr, proto, run))
        mu, sd = ds.X[tr].mean(0), ds.X[tr].std(0)
        pred = est.predict((ds.X[te] - mu) / sd)
        assert out.value == pytest.approx(float((pred == y_noisy[te]).mean()))
        assert out.info["test_value_clean"] == pytest.approx(float((pred == ds.y[te]).mean()))
    with pytest.raises(ConfigError, match="noise_scope"):
        ProtocolConfig(noise_scope="test")
    reg = Dataset("r", ds.X, ds.X[:, 0], "regression")
    with pytest.raises(ConfigError, match="changes features"):
        noisy_labels_all_rows(reg, NoiseConfig("gaussian_shift", 0.3), 40)


def test_all_rows_noise_is_drawn_once_per_data_set_noise_and_seed(monkeypatch):
    import spl_bench.protocol.run as run_mod

    calls = []
    real = run_mod.inject_noise

    def counting(*args, **kwargs):
        calls.append(args[3:5])
        return real(*args, **kwargs)

    monkeypatch.setattr(run_mod, "inject_noise", counting)
    monkeypatch.setattr(run_mod, "_ALL_ROWS_NOISE", {})
    ds = _toy_classification()
    noise = NoiseConfig("near_boundary_flip", 0.2, {"count": "pool"})
    y1, idx1 = run_mod.noisy_labels_all_rows(ds, noise, 40)
    y1[:] = 0.0  # the caller's copy: the memo must not see it
    y2, idx2 = run_mod.noisy_labels_all_rows(ds, noise, 40)
    assert len(calls) == 1
    # the memo gives what a fresh draw gives
    monkeypatch.setattr(run_mod, "_ALL_ROWS_NOISE", {})
    y3, idx3 = run_mod.noisy_labels_all_rows(ds, noise, 40)
    assert len(calls) == 2 and np.array_equal(y2, y3) and np.array_equal(idx2, idx3)
    assert set(np.unique(y2)) == {-1.0, 1.0} and int((y2 != ds.y).sum()) == len(idx2) > 0
    # another seed, rate or data set is another draw
    run_mod.noisy_labels_all_rows(ds, noise, 41)
    run_mod.noisy_labels_all_rows(ds, NoiseConfig("near_boundary_flip", 0.3, {"count": "pool"}), 40)
    other = Dataset("toy", ds.X.copy(), ds.y.copy(), "classification")
    other.X[0, 0] += 1.0
    run_mod.noisy_labels_all_rows(other, noise, 40)
    assert len(calls) == 5
    # least recently used first: with room for two, a key used again outlives one drawn before it
    monkeypatch.setattr(run_mod, "_ALL_ROWS_NOISE", {})
    monkeypatch.setattr(run_mod, "_ALL_ROWS_NOISE_SIZE", 2)
    for seed in (1, 2, 1, 3, 1):  # draws 1, 2, 3; seed 1 stays (used last before 3), 2 goes
        run_mod.noisy_labels_all_rows(ds, noise, seed)
    assert len(calls) == 8
    run_mod.noisy_labels_all_rows(ds, noise, 2)
    assert len(calls) == 9


def _fit_rows(ds: Dataset, y_noisy: np.ndarray, tr: np.ndarray, proto: ProtocolConfig, run: int):
    """The fitting rows ``run_once`` uses under validation selection (standardised on the training rows)."""
    mu, sd = ds.X[tr].mean(0), ds.X[tr].std(0)
    fit, _ = validation_split(len(tr), proto.val_size, proto.base_seed + run)
    return ((ds.X[tr] - mu) / sd)[fit], y_noisy[tr][fit]


def test_near_boundary_pool_count_flips_a_fraction_of_the_pool():
    from spl_bench.data.noise import inject_noise

    ds = _toy_classification(200)
    rows = inject_noise(ds.X, ds.y, "classification", "near_boundary_flip", 0.3, np.random.default_rng(0))
    pool = inject_noise(ds.X, ds.y, "classification", "near_boundary_flip", 0.3, np.random.default_rng(0), count="pool")
    assert len(rows.idx) == 60 and len(pool.idx) == 18  # 0.3 * 200, and 0.3 * (0.3 * 200)
    with pytest.raises(ConfigError, match="count"):
        inject_noise(ds.X, ds.y, "classification", "near_boundary_flip", 0.3, np.random.default_rng(0), count="all")


def test_test_selected_value_is_the_best_test_candidate(diabetes):
    X, y = diabetes
    ds = Dataset("diab", X, y, "regression")
    make = lambda: ACS(model="lasso", model_params={"alpha": 0.01}, lam_min=0.1, lam_max=3.0, lam_step=0.7)  # noqa: E731
    out = run_once(ds, make, ProtocolConfig(selection="validation", n_runs=1), NoiseConfig("target_gaussian", 0.3), 1)
    assert out.info["value_test_selected"] <= out.value  # gen_error: lower is better
    # with test selection the reported value is the test-selected one (fit on all training rows)
    out_t = run_once(ds, make, ProtocolConfig(selection="test", n_runs=1), NoiseConfig("target_gaussian", 0.3), 1)
    assert out_t.info["value_test_selected"] == pytest.approx(out_t.value)


def test_scalings_match_the_authors_loaders_written_out():
    """``authors`` and ``authors_slip`` against the two lines of the authors' loaders, on all rows."""
    from spl_bench.data.preprocess import scale_split

    rng = np.random.default_rng(3)
    X, y = rng.normal(2.0, 3.0, size=(40, 3)), rng.normal(50.0, 10.0, size=40)
    tr, te = np.arange(30), np.arange(30, 40)
    ya = y - np.mean(y)  # their loaders: y = y - np.mean(y), then one of the two lines below
    good = (ya - np.min(ya)) / (np.max(ya) - np.min(ya))
    slip = ya - np.min(ya) / (np.max(ya) - np.min(ya))  # regression_data7 / regression_data12, as written
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    for scaling, target in (("authors", good), ("authors_slip", slip)):
        sc = scale_split(X[tr], y[tr], X[te], y[te], "regression", scaling)
        np.testing.assert_allclose(np.concatenate([sc.y_train, sc.y_test]), target, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.vstack([sc.X_train, sc.X_test]), Xs, rtol=1e-12, atol=1e-12)
    sc = scale_split(X[tr], y[tr], X[te], y[te], "regression", "train")
    assert abs(sc.y_train.mean()) < 1e-12 and sc.y_train.std() == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="authors_slip"):
        scale_split(X[tr], y[tr], X[te], y[te], "regression", "nope")
