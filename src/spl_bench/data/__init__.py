"""Data layer: loaders (scikit-learn, local files, OpenML), noise injection, preprocessing."""

from spl_bench.data.dataset import Dataset, binarize
from spl_bench.data.loaders import available_datasets, dataset_spec, has_local_copy, load_dataset
from spl_bench.data.noise import inject_noise, n_corrupted
from spl_bench.data.preprocess import scale_split

__all__ = [
    "Dataset",
    "available_datasets",
    "binarize",
    "dataset_spec",
    "has_local_copy",
    "inject_noise",
    "load_dataset",
    "n_corrupted",
    "scale_split",
]
