"""DSPL synthetic generator, the DSPL corruption and the Airbnb loader."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spl_bench.data.airbnb import load_airbnb
from spl_bench.data.synthetic import corrupted_batch_rates, dspl_corruption, make_dspl_regression
from spl_bench.errors import ConfigError, DataError


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300), rate=st.floats(0.0, 1.0))
def test_dspl_corruption_touches_exactly_the_returned_rows(seed, n, rate):
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(n)
    yc, idx = dspl_corruption(y, rate, rng)
    assert len(idx) == int(round(rate * n)) == len(np.unique(idx))
    untouched = np.setdiff1d(np.arange(n), idx)
    np.testing.assert_array_equal(yc[untouched], y[untouched])
    assert np.all(np.abs(yc[idx] - y[idx]) <= 5 * np.abs(y).max())


def test_dspl_corruption_is_uniform_on_the_paper_interval():
    rng = np.random.default_rng(1)
    y = rng.standard_normal(20_000)
    yc, idx = dspl_corruption(y, 0.5, rng)
    u = (yc - y)[idx] / (5 * np.abs(y).max())  # should be U[-1, 1]
    # Kolmogorov distance to U[-1, 1] computed directly from the sorted sample
    s = np.sort(u)
    cdf = (s + 1) / 2
    k = np.arange(1, len(s) + 1) / len(s)
    assert max(np.abs(k - cdf).max(), np.abs(k - 1 / len(s) - cdf).max()) < 1.63 / np.sqrt(len(s))


def test_dspl_corruption_rejects_bad_rates():
    with pytest.raises(ConfigError):
        dspl_corruption(np.ones(4), 1.5, 0)
    with pytest.raises(DataError):
        dspl_corruption(np.array([1.0, np.nan]), 0.5, 0)


def test_generator_follows_the_paper_model():
    d = make_dspl_regression([400, 300, 500], 8, [0.1, 0.9, 0.5], sigma=0.2, rng=4)
    assert d.X.shape == (1200, 8) and d.n_batches == 3
    assert abs(np.linalg.norm(d.w_star) - 1) < 1e-12
    noise = d.y_clean - d.X @ d.w_star
    assert abs(noise.std() - 0.2) < 0.02  # sigma, about 3 standard errors
    for i, (n_i, r_i) in enumerate([(400, 0.1), (300, 0.9), (500, 0.5)]):
        rows = d.batch == i
        assert rows.sum() == n_i and d.corrupted[rows].sum() == round(r_i * n_i)
        # corruption bound uses the batch's own ||y*||_inf
        bound = 5 * np.abs(d.y_clean[rows]).max()
        assert np.all(np.abs(d.y[rows] - d.y_clean[rows]) <= bound)
    np.testing.assert_array_equal(d.y[~d.corrupted], d.y_clean[~d.corrupted])


def test_table2_rates():
    r = corrupted_batch_rates(10, 7, rng=0)
    assert sorted(r.tolist()) == [0.1] * 3 + [0.9] * 7
    with pytest.raises(ConfigError):
        corrupted_batch_rates(10, 11)


# ----------------------------------------------------------------------------- Airbnb
HEADER = (
    "id,last_scraped,neighbourhood_cleansed,room_type,accommodates,bathrooms,bedrooms,beds,"
    "latitude,longitude,price\n"
)


def _write(path, rows):
    with gzip.open(path, "wt") as f:
        f.write(HEADER)
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")


def test_airbnb_missing_files_explain_where_to_put_them(tmp_path):
    with pytest.raises(DataError, match="insideairbnb"):
        load_airbnb("new-york-city", tmp_path)


def test_airbnb_loader_builds_features_and_date_split(tmp_path):
    folder = tmp_path / "airbnb" / "new-york-city"
    folder.mkdir(parents=True)
    _write(folder / "listings_2015-06-01.csv.gz", [
        (1, "2015-06-01", "Harlem", "Private room", 2, 1, 1, 1, 40.8, -73.9, '"$100.00"'),
        (2, "2015-06-01", "Harlem", "Entire home/apt", 4, "", 2, 2, 40.8, -73.9, '"$300.00"'),
        (3, "2015-06-02", "SoHo", "Entire home/apt", 6, 2, 3, 3, 40.7, -74.0, '"$1,200.00"'),
    ])
    _write(folder / "listings_2016-02-01.csv.gz", [
        (1, "2016-02-01", "Harlem", "Private room", 2, 1, 1, 1, 40.8, -73.9, '"$110.00"'),
        (4, "2016-02-01", "Astoria", "Shared room", 1, 1, 1, 1, 40.76, -73.92, '"$50.00"'),
    ])
    d = load_airbnb("new-york-city", tmp_path)
    names = d.meta["feature_names"]
    np.testing.assert_array_equal(d.y, [100, 300, 1200, 110, 50])
    np.testing.assert_array_equal(d.meta["train"], [True, True, True, False, False])
    bath = d.X[:, names.index("bathrooms")]
    assert bath[1] == 1.5  # missing value: median of the training values 1 and 2
    area = d.X[:, names.index("area_mean_price")]
    np.testing.assert_allclose(area, [200, 200, 1200, 200, np.mean([100, 300, 1200])])
    assert d.X[4, names.index("room_type=Shared room")] == 1.0
