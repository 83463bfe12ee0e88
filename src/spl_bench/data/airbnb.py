"""Airbnb rental-price data of the DSPL paper (Zhang et al., IJCAI 2018, section 5.1, Table 3).

The paper uses the public Inside Airbnb listings (http://insideairbnb.com/get-the-data.html)
of New York City (train Jan-Dec 2015, test Jan-Oct 2016) and Los Angeles (train May 2015 -
May 2016, test the rest), 21 features after preprocessing ("number of beds and
bathrooms, location, and average price in the area").  Its exact preprocessing is not
published; this loader rebuilds a comparable design from the monthly ``listings.csv(.gz)``
snapshots:

* rows: every listing of every snapshot file, dated by ``last_scraped`` (or the snapshot
  date in the file name, ``..._YYYY-MM-DD...``); target ``price`` in dollars;
* features: :data:`NUMERIC_FEATURES` (median-imputed from the training rows), one-hot
  ``room_type``, and the mean training price of the row's ``neighbourhood_cleansed``
  ("average price in the area"; the overall training mean for unseen areas);
* ``meta["train"]``: rows dated before ``split_date`` (2016-01-01 for NYC, 2016-06-01 for LA).

Files go to ``<data dir>/airbnb/<city>/`` (any ``*listings*.csv`` or ``*.csv.gz`` there).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from spl_bench.data.dataset import Dataset
from spl_bench.errors import ConfigError, DataError
from spl_bench.paths import DATA_DIR_ENV, data_dir

NUMERIC_FEATURES = (
    "accommodates", "bathrooms", "bedrooms", "beds", "latitude", "longitude", "minimum_nights",
    "number_of_reviews", "review_scores_rating", "availability_365", "guests_included",
    "extra_people", "cleaning_fee", "security_deposit", "host_listings_count", "calculated_host_listings_count",
)
ROOM_TYPES = ("Entire home/apt", "Private room", "Shared room")
CITIES = {"new-york-city": "2016-01-01", "los-angeles": "2016-06-01"}
_MONEY = ("price", "cleaning_fee", "security_deposit", "extra_people")


def _money(col: pd.Series) -> pd.Series:
    """``"$1,234.00"`` -> 1234.0; blanks -> NaN."""
    return pd.to_numeric(col.astype(str).str.replace(r"[$,\s]", "", regex=True).replace({"": None, "nan": None}),
                         errors="coerce")


def _snapshot_date(path: Path) -> pd.Timestamp | None:
    m = re.search(r"(\d{4}-\d{2}-\d{2})", path.name)
    return pd.Timestamp(m.group(1)) if m else None


def airbnb_files(city: str, root: str | Path | None = None) -> list[Path]:
    """The listing files of ``city`` under ``<data dir>/airbnb/<city>/``; clear error if none."""
    folder = data_dir(root) / "airbnb" / city
    files = sorted(p for p in folder.glob("*") if p.is_file() and re.search(r"\.csv(\.gz)?$", p.name))
    if not files:
        raise DataError(
            f"Airbnb data for {city!r} not found: no listings CSV in {folder}.\n"
            "Download the monthly 'listings.csv.gz' snapshots of the city from "
            "http://insideairbnb.com/get-the-data.html (archived 2015-2016 snapshots for the DSPL "
            f"paper), put them in that folder, or set `{DATA_DIR_ENV}` / data.root to a directory "
            f"holding airbnb/{city}/."
        )
    return files


def read_listings(files: list[Path]) -> pd.DataFrame:
    """Concatenate listing snapshots, with a ``date`` column and numeric ``price``."""
    frames = []
    for path in files:
        try:
            df = pd.read_csv(path, low_memory=False)
        except (OSError, ValueError, pd.errors.ParserError) as e:
            raise DataError(f"cannot read Airbnb file {path}: {e}") from e
        if "price" not in df.columns:
            raise DataError(f"Airbnb file {path} has no 'price' column (is it a listings file?)")
        if "last_scraped" in df.columns:
            date = pd.to_datetime(df["last_scraped"], errors="coerce")
        else:
            snap = _snapshot_date(path)
            if snap is None:
                raise DataError(f"Airbnb file {path}: no 'last_scraped' column and no date in the file name")
            date = pd.Series(snap, index=df.index)
        df = df.assign(date=date)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True, sort=False)
    for col in _MONEY:
        if col in out.columns:
            out[col] = _money(out[col])
    if "bathrooms" not in out.columns and "bathrooms_text" in out.columns:
        out["bathrooms"] = pd.to_numeric(out["bathrooms_text"].astype(str).str.extract(r"([\d.]+)")[0],
                                         errors="coerce")
    out = out[np.isfinite(out["price"].to_numpy(dtype=float)) & (out["price"] > 0) & out["date"].notna()]
    return out.reset_index(drop=True)


def listings_to_dataset(df: pd.DataFrame, name: str, split_date: str) -> Dataset:
    """Build features, target and the date split from concatenated listings."""
    train = (df["date"] < pd.Timestamp(split_date)).to_numpy()
    if not train.any() or train.all():
        raise DataError(f"{name}: split date {split_date} leaves an empty train or test part")
    cols, names = [], []
    for f in NUMERIC_FEATURES:
        if f not in df.columns:
            continue
        col = pd.to_numeric(df[f], errors="coerce").to_numpy(dtype=float)
        med = np.nanmedian(col[train]) if np.isfinite(col[train]).any() else 0.0
        cols.append(np.where(np.isfinite(col), col, med))
        names.append(f)
    room = df["room_type"].astype(str) if "room_type" in df.columns else pd.Series("", index=df.index)
    for rt in ROOM_TYPES:
        cols.append((room == rt).to_numpy(dtype=float))
        names.append(f"room_type={rt}")
    price = df["price"].to_numpy(dtype=float)
    if "neighbourhood_cleansed" in df.columns:
        area = df["neighbourhood_cleansed"].astype(str)
        area_mean = pd.Series(price[train]).groupby(area[train].to_numpy()).mean()
        cols.append(area.map(area_mean).fillna(price[train].mean()).to_numpy(dtype=float))
        names.append("area_mean_price")
    X = np.column_stack(cols)
    return Dataset(name=name, X=X, y=price, task="regression",
                   meta={"train": train, "feature_names": names, "split_date": split_date,
                         "dates": df["date"].to_numpy()}).validate()


def load_airbnb(city: str = "new-york-city", data_dir_: str | Path | None = None,
                split_date: str | None = None) -> Dataset:
    """Load the Airbnb rental-price data of ``city`` (``new-york-city`` or ``los-angeles``).

    Parameters
    ----------
    city : str
        Folder name under ``<data dir>/airbnb/``.
    data_dir_ : path, optional
        Data directory (default ``$SPL_BENCH_DATA_DIR`` or the user cache).
    split_date : str, optional
        Rows dated before it are training rows (default: the paper's split for the city).
    """
    if split_date is None:
        if city not in CITIES:
            raise ConfigError(f"no default split date for Airbnb city {city!r}; known: {sorted(CITIES)}")
        split_date = CITIES[city]
    return listings_to_dataset(read_listings(airbnb_files(city, data_dir_)), f"airbnb-{city}", split_date)
