"""The evaluation protocol: splits, noise, preprocessing, λ selection and metrics."""

from spl_bench.protocol.run import NoiseConfig, ProtocolConfig, RunOutcome, run_once, run_shared, shares_fit
from spl_bench.protocol.splits import split_indices, validation_split

__all__ = [
    "NoiseConfig", "ProtocolConfig", "RunOutcome", "run_once", "run_shared", "shares_fit", "split_indices",
    "validation_split",
]
